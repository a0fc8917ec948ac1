"""Object lifetime and load: what a dead kernel gives back, what many calls and many compiles
cost, and kernels called from several threads.

Memory is measured in fresh processes (RSS after a warm-up, so one-time allocations do not
count); compile counts come from ``compiler.diagnostics()["llvm_compilations"]``, never from
timing. Results are compared with NumPy.
"""
from __future__ import annotations

import ctypes
import gc
import subprocess
import sys
import threading
import time
import weakref

import numpy as np
import pytest

import compiler
from compiler import Function, cache, grad, jit, vmap
from compiler.errors import CompileError
from tests.runtime.subproc import env_for, last_json


def _scaled_sum(c: float):
    def f(x):
        return np.sum(np.sin(x) * c)
    return f


def _times(f):
    def g(x, k):
        return f(x) * k
    return g


def _native_code(kernel) -> list:
    """Weak references to the loaded native code of every specialization of `kernel`."""
    specs = list(kernel._specializations.values()) + ([kernel._fixed] if kernel._fixed else [])
    assert specs
    return [weakref.ref(s.native._keepalive) for s in specs]


X = np.linspace(0.1, 1.0, 4)


@pytest.mark.parametrize("make, arg", [
    (lambda f: jit(f, cache=False), X),
    (lambda f: jit(f, signature="f64[n]", cache=False), X),
    (lambda f: jit(_times(f), static_argnums=1, cache=False), (X, 3)),
    (vmap, X.reshape(2, 2)),
    (grad, X),
], ids=["jit", "signature", "static", "vmap", "grad"])
def test_a_dead_kernel_frees_its_native_code_and_function(make, arg):
    fn = _scaled_sum(2.0)
    kernel = make(fn)
    kernel(*arg) if isinstance(arg, tuple) else kernel(arg)
    code, function = _native_code(kernel), weakref.ref(fn)
    del kernel, fn
    gc.collect()
    assert [r() for r in code] == [None] * len(code)
    assert function() is None, "a compiler-internal table keeps the dead kernel's function"


def test_ctypes_entry_keeps_the_native_code_alive():
    kernel = jit(_scaled_sum(3.0), signature="f64[n]", cache=False)
    entry = kernel.ctypes()
    code = _native_code(kernel)
    del kernel
    gc.collect()
    assert code[0]() is not None         # checked before calling: a dangling entry would crash
    x = np.linspace(0.0, 2.0, 5)
    out = np.empty(())
    ins = (ctypes.c_void_p * 1)(x.ctypes.data)
    outs = (ctypes.c_void_p * 1)(out.ctypes.data)
    assert entry(ins, outs, (ctypes.c_int64 * 1)(5)) == 0
    assert out[()] == pytest.approx(float(np.sum(np.sin(x) * 3.0)), rel=1e-14)
    del entry
    gc.collect()
    assert code[0]() is None


# ---- memory in a long-lived process ---------------------------------------------------------

def _run_script(code: str, tmp_path) -> dict:
    """Run `code` as a file (kernels need their source) in a fresh interpreter; its JSON report."""
    script = tmp_path / "script.py"
    script.write_text(code)
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env_for(tmp_path / "cache"),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return last_json(proc.stdout)


MEASURE = """
import gc, os, ctypes, json
def rss_mib():
    libc = ctypes.CDLL(None)
    if hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)                 # what the allocator keeps but does not use
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
"""


def test_200_compiles_in_one_process_keep_memory_bounded(tmp_path):
    """Each distinct kernel is compiled by LLVM and dropped. Before the pass managers were
    freed, 200 of these kept about 33 MiB (170 KiB each); now about 1 MiB."""
    report = _run_script(MEASURE + """
import numpy as np, compiler
x = np.linspace(0.1, 1.0, 64).reshape(8, 8)
def make(c):
    def k(x):
        return x * c + c
    return k
def compile_and_drop(c):
    f = compiler.jit(make(c), cache=False)
    assert np.array_equal(f(x), x * c + c)
for i in range(20):
    compile_and_drop(1000.0 + i)
gc.collect()
before, runs = rss_mib(), compiler.diagnostics()["llvm_compilations"]
for i in range(200):
    compile_and_drop(float(i))
gc.collect()
print(json.dumps({"growth": rss_mib() - before,
                  "compiled": compiler.diagnostics()["llvm_compilations"] - runs}))
""", tmp_path)
    assert report["compiled"] == 200
    assert report["growth"] < 10.0, report


def test_many_calls_keep_rss_flat(tmp_path):
    """1.5e5 calls on the fast path and 2e4 on the general path (pytree result, weak scalar)."""
    report = _run_script(MEASURE + """
import numpy as np, compiler
x = np.arange(8.0)
fast = compiler.jit(lambda x: x * 2.0 + 1.0, cache=False)
general = compiler.jit(lambda x, s: (x * s, np.sum(x)), cache=False)
for _ in range(5000):
    fast(x); general(x, 2.0)
gc.collect()
before = rss_mib()
for _ in range(150_000):
    y = fast(x)
for _ in range(20_000):
    z, t = general(x, 2.0)
gc.collect()
ok = bool(np.array_equal(y, x * 2.0 + 1.0) and np.array_equal(z, x * 2.0) and t == 28.0)
print(json.dumps({"growth": rss_mib() - before, "ok": ok}))
""", tmp_path)
    assert report["ok"]
    assert report["growth"] < 2.0, report


# ---- threads ------------------------------------------------------------------------------

def _in_threads(n: int, work) -> list:
    """Run work(i) in n threads released together; the results, or the first exception."""
    barrier = threading.Barrier(n)
    results: list = [None] * n
    errors: list = []

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = work(i)
        except BaseException as e:  # noqa: BLE001 - re-raised in the main thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def _shifted_sin(x, y):
    return np.sin(x) * y + 1.0


def test_concurrent_first_calls_compile_a_specialization_once():
    kernel = jit(_shifted_sin, cache=False)
    x, y = np.linspace(0.0, 3.0, 1000), np.arange(1000.0)
    before = compiler.diagnostics()["llvm_compilations"]
    results = _in_threads(8, lambda i: kernel(x, y))
    assert compiler.diagnostics()["llvm_compilations"] - before == 1
    for r in results:
        np.testing.assert_allclose(r, np.sin(x) * y + 1.0, rtol=1e-14)


def test_concurrent_first_calls_of_different_signatures_compile_each_once():
    kernel = jit(_shifted_sin, cache=False)
    args = [(np.linspace(0.0, 1.0, n).astype(dt), np.float64(2.0))
            for n in (3, 5) for dt in (np.float32, np.float64)]
    before = compiler.diagnostics()["llvm_compilations"]
    results = _in_threads(8, lambda i: kernel(*args[i % 4]))
    assert compiler.diagnostics()["llvm_compilations"] - before == 4
    for i, r in enumerate(results):
        x, y = args[i % 4]
        np.testing.assert_allclose(r, np.sin(x) * y + 1.0, rtol=1e-6 if x.dtype == np.float32 else 1e-14)
        assert r.dtype == (np.sin(x) * y + 1.0).dtype


def _not_compilable(x):
    return np.busday_count(x, x)        # outside the supported subset


def test_concurrent_first_calls_of_a_kernel_that_fails_to_compile_all_raise():
    kernel = jit(_not_compilable, cache=False)
    x = np.arange(3.0)

    def work(i: int):
        try:
            kernel(x)
        except CompileError as e:
            return e
        return None

    errors = _in_threads(4, work)
    assert all(isinstance(e, CompileError) and "busday_count" in str(e) for e in errors), errors
    assert kernel._compiling == {}      # no gate left behind: a later call tries again
    with pytest.raises(CompileError, match="busday_count"):
        kernel(x)


def test_eight_threads_calling_one_kernel_get_their_own_results():
    lazy = jit(_shifted_sin, cache=False)
    signed = jit(_shifted_sin, signature="f64[n], f64[n]", cache=False)
    inputs = [tuple(np.random.default_rng(i).standard_normal((2, 300))) for i in range(8)]
    for kernel in (lazy, signed):
        def work(i: int, kernel=kernel) -> list:
            x, y = inputs[i]
            return [kernel(x, y) for _ in range(200)]
        for i, outs in enumerate(_in_threads(8, work)):
            x, y = inputs[i]
            want = np.sin(x) * y + 1.0
            for out in outs:
                np.testing.assert_allclose(out, want, rtol=1e-14)


def _host_median_kernel():
    class Median(Function):            # np.median is outside the subset: a host callback
        @staticmethod
        def forward(x):
            return np.median(x, axis=-1)
    return jit(lambda x: Median.apply(x) * 2.0, cache=False), weakref.ref(Median)


def test_a_dead_kernel_releases_its_host_callbacks():
    kernel, function = _host_median_kernel()
    x = np.random.default_rng(1).standard_normal((3, 5))
    np.testing.assert_allclose(kernel(x), np.median(x, axis=-1) * 2.0, rtol=1e-14)
    assert function() is not None
    del kernel
    gc.collect()                   # frees the kernel's code, whose finalizer releases the entry
    gc.collect()                   # then the Function class (a cycle, like every class)
    assert function() is None, "the host-callback table keeps the dead kernel's Function"


def _gauss_plus_max(c: float):
    def f(x):
        return np.sum(np.exp(-x * x) * c) + np.max(np.tanh(x))
    return f


def test_different_kernels_compile_correctly_in_several_threads_at_once():
    """Staging, the passes and LLVM run concurrently for different kernels (llvmlite serializes
    its own calls); every result is checked against NumPy."""
    def work(t: int) -> int:
        x = np.random.default_rng(t).standard_normal(36)
        c = float(t + 2)
        np.testing.assert_allclose(jit(_gauss_plus_max(c), cache=False)(x),
                                   np.sum(np.exp(-x * x) * c) + np.max(np.tanh(x)), rtol=1e-12)
        want = -2 * x * np.exp(-x * x) * c
        k = np.argmax(x)
        want[k] += 1 - np.tanh(x[k]) ** 2
        np.testing.assert_allclose(grad(_gauss_plus_max(c))(x), want, rtol=1e-10, atol=1e-14)
        rows = x.reshape(6, 6)
        np.testing.assert_allclose(vmap(_gauss_plus_max(c))(rows),
                                   [np.sum(np.exp(-r * r) * c) + np.max(np.tanh(r)) for r in rows],
                                   rtol=1e-12)
        return t

    before = compiler.diagnostics()["llvm_compilations"]
    assert _in_threads(4, work) == [0, 1, 2, 3]
    assert compiler.diagnostics()["llvm_compilations"] - before == 12


def test_deferred_native_compiles_once_under_concurrent_first_uses():
    """`aotx build`'s deferred kernels (compiled on first use) compile once when several
    threads use one together; every thread gets the same native kernel."""
    calls = []

    def compile_now():
        calls.append(threading.get_ident())
        time.sleep(0.05)                     # widen the window in which others arrive
        return lambda *args: sum(args)

    deferred = cache.DeferredNative(compile_now)
    barrier = threading.Barrier(8)
    results = []

    def use():
        barrier.wait()
        results.append(deferred(1, 2))

    threads = [threading.Thread(target=use) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert results == [3] * 8
