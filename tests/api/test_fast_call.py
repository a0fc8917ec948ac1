"""The native fast call path (compiler/backend/pyentry.py, docs/performance.md "Call overhead").

Once a kernel has been called twice with the same argument types, calls go through a native
entry that checks the arguments and allocates the outputs itself, and falls back to the
checked Python path for anything else. These tests check that what users see does not depend
on it: results against NumPy, and every error against the one a kernel without the entry
raises (a fresh kernel of the same function, called once). Nothing here measures time.
"""
from __future__ import annotations

import gc
import subprocess
import sys
import threading
import traceback
import weakref

import numpy as np
import pytest

import runtime
from compiler import grad, jit, vmap
from compiler.backend import pyentry
from runtime import loader
from tests.runtime.subproc import env_for


def _add(a, b):
    return a + b


def _axpy(a, b, s):
    return a * s + b


def _stats(x):
    return {"sum": np.sum(x), "scaled": (x * 2.0, x - 1.0)}


def _pick(x, i):
    return x[i]


def _loss(w):
    return np.sum(np.tanh(w) ** 2)


add = jit(_add, cache=False)
axpy = jit(_axpy, cache=False)
stats = jit(_stats, cache=False)
pick = jit(_pick, cache=False, boundscheck=True)
batched = vmap(jit(lambda x, y: np.dot(x, y), cache=False))
dloss = grad(jit(_loss, cache=False))

R = np.random.default_rng(7)
A64, B64 = R.standard_normal(4), R.standard_normal(4)
A32, B32 = A64.astype(np.float32), B64.astype(np.float32)


def _warm(kernel, *args):
    """Call twice: from the second call on, the kernel has its native entry (when it can)."""
    kernel(*args)
    kernel(*args)


def _error(fn, *args, **kwargs) -> tuple[type, str]:
    with pytest.raises(Exception) as info:
        fn(*args, **kwargs)
    return info.type, str(info.value)


def test_the_entry_is_installed_and_gives_numpys_results():
    _warm(add, A64, B64)
    assert add._entry is not None, "a static two-array kernel has a native entry"
    for _ in range(3):
        out = add(A64, B64)
        assert type(out) is np.ndarray and out.dtype == np.float64 and out.flags.c_contiguous
        np.testing.assert_array_equal(out, A64 + B64)
    assert add(A64, B64) is not add(A64, B64), "every call returns a new array"


def test_types_and_shapes_changing_between_calls():
    """Alternating specializations: the entry of the last one is replaced, never misused."""
    c64, c32 = R.standard_normal((2, 3)), R.standard_normal((2, 3)).astype(np.float32)
    cases = [(A64, B64), (A32, B32), (c64, c64[::-1].copy()), (A32, B64), (c32, c32),
             (np.arange(4), np.arange(4, dtype=np.int32)), (A64, B64)]
    for _ in range(2):
        for a, b in cases:
            for _ in range(2):
                out = add(a, b)
                expected = a + b
                assert out.dtype == expected.dtype and out.shape == expected.shape
                np.testing.assert_array_equal(out, expected)


def test_arguments_the_entry_does_not_take_go_through_the_checked_path(tmp_path):
    _warm(add, A64, B64)
    strided = np.arange(8.0)[::2]                       # copied: not contiguous
    swapped = A64.astype(">f8")                         # another byte order
    readonly = A64.copy()
    readonly.flags.writeable = False
    mm = np.memmap(tmp_path / "m.dat", dtype=np.float64, mode="w+", shape=(4,))   # accepted
    mm[:] = A64
    for a, b in [(strided, B64), (swapped, B64), (readonly, B64), (mm, B64), (A64, 1.5),
                 (A64, np.float64(2.0)), ([1.0, 2.0, 3.0, 4.0], B64)]:
        np.testing.assert_array_equal(add(a, b), np.asarray(a) + b)
    np.testing.assert_array_equal(add(a=A64, b=B64), A64 + B64)       # keywords
    np.testing.assert_array_equal(add(A64, b=B64), A64 + B64)


@pytest.mark.parametrize("args, kwargs", [
    ((A64,), {}),
    ((A64, B64, B64), {}),
    ((A64, None), {}),
    ((A64, np.matrix(B64)), {}),
    ((A64, np.ma.masked_array(B64)), {}),
    ((A64, np.array(["a", "b", "c", "d"])), {}),
    ((A64, np.ones(4, dtype=object)), {}),
    ((A64,), {"c": B64}),
], ids=["too few", "too many", "None", "matrix", "masked", "strings", "objects", "keyword"])
def test_errors_are_those_of_the_checked_path(args, kwargs):
    fresh = jit(_add, cache=False)
    expected = _error(fresh, *args, **kwargs)
    _warm(add, A64, B64)
    assert add._entry is not None
    assert _error(add, *args, **kwargs) == expected


def test_a_failed_check_in_the_kernel_raises_its_error():
    x, i, bad = np.arange(5.0), np.array([1, 3]), np.array([1, 7])
    fresh = jit(_pick, cache=False, boundscheck=True)
    expected = _error(fresh, x, bad)
    assert expected[0] is IndexError
    _warm(pick, x, i)
    assert pick._entry is not None
    np.testing.assert_array_equal(pick(x, i), x[i])
    assert _error(pick, x, bad) == expected
    np.testing.assert_array_equal(pick(x, i), x[i])      # and the entry still works


def test_python_float_arguments():
    _warm(axpy, A64, B64, 2.0)
    assert axpy._entry is not None
    for s in (2.0, -0.5, float("inf"), 1e300):
        np.testing.assert_array_equal(axpy(A64, B64, s), A64 * s + B64)
    # float32 arrays with a weak Python float stay float32 (NEP 50), as in NumPy
    for _ in range(3):
        out = axpy(A32, B32, 0.25)
        assert out.dtype == np.float32
        np.testing.assert_array_equal(out, A32 * np.float32(0.25) + B32)
    # a NumPy scalar, an int (static) and a bool are other specializations
    for s in (np.float64(3.0), 3, True, np.float32(2.0)):
        for _ in range(2):
            out = axpy(A64, B64, s)
            expected = A64 * s + B64
            assert out.dtype == expected.dtype
            np.testing.assert_array_equal(out, expected)


def test_scalar_and_pytree_results():
    x = R.standard_normal(6)
    for _ in range(3):
        out = stats(x)
        assert set(out) == {"sum", "scaled"} and isinstance(out["scaled"], tuple)
        assert type(out["sum"]) is np.float64
        assert out["sum"] == pytest.approx(np.sum(x), rel=1e-14)
        np.testing.assert_array_equal(out["scaled"][0], x * 2.0)
        np.testing.assert_array_equal(out["scaled"][1], x - 1.0)
    total = jit(lambda v: np.sum(v * v), cache=False)
    for _ in range(3):
        s = total(x)
        assert type(s) is np.float64 and s == pytest.approx(np.dot(x, x), rel=1e-14)


def test_vmap_and_grad_kernels():
    xs, ys = R.standard_normal((5, 3)), R.standard_normal((5, 3))
    w = R.standard_normal(4)
    for _ in range(3):
        np.testing.assert_allclose(batched(xs, ys), np.einsum("ij,ij->i", xs, ys), rtol=1e-14)
        np.testing.assert_allclose(dloss(w), 2 * np.tanh(w) * (1 - np.tanh(w) ** 2), rtol=1e-13)
    assert batched._entry is not None and dloss._entry is not None


def test_large_arrays_release_the_gil_and_threads_agree():
    n = pyentry.RELEASE_GIL_BYTES // 8 + 1
    big = [R.standard_normal(n) for _ in range(2)]
    results: dict[int, bool] = {}

    def work(k: int) -> None:
        ok = True
        for _ in range(20):
            a, b = (A64, B64) if k % 2 else big
            ok &= bool(np.array_equal(add(a, b), a + b))
        results[k] = ok
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {k: True for k in range(4)}


def test_the_entry_does_not_keep_a_dead_kernel_alive():
    kernel = jit(lambda a, b: a * b - a, cache=False)
    _warm(kernel, A64, B64)
    assert kernel._entry is not None
    code = weakref.ref(next(iter(kernel._specializations.values())).native._keepalive)
    ref = weakref.ref(kernel)
    del kernel
    gc.collect()
    assert ref() is None and code() is None


def _bump(x, y):
    x += y
    return x.sum()


def _into(a, b, out):
    out[...] = a + b


def _inc_then_read(x, y):
    x += 1.0
    return y.sum()


bump = jit(_bump, cache=False)
inc_then_read = jit(_inc_then_read, cache=False)
into = jit(_into, cache=False)


def test_kernels_that_write_into_their_arguments():
    x = np.zeros(4)
    for k in range(1, 4):
        assert bump(x, B64) == pytest.approx(np.sum(B64) * k, rel=1e-14)
        np.testing.assert_allclose(x, B64 * k, rtol=1e-14)
    assert bump._entry is not None
    c = np.zeros(4)
    for _ in range(3):
        assert into(A64, B64, c) is None
        np.testing.assert_array_equal(c, A64 + B64)
    assert into._entry is not None


def test_writes_into_arguments_the_entry_does_not_take():
    """Shared memory, read-only, another dtype, strided: as NumPy, or the checked path's error."""
    _warm(inc_then_read, np.zeros(4), B64)
    assert inc_then_read._entry is not None
    x = A64.copy()
    assert inc_then_read(x, x) == pytest.approx(np.sum(A64 + 1.0), rel=1e-14)   # y is x
    w = np.arange(6.0)
    assert inc_then_read(w[:4], w[2:]) == pytest.approx(2 + 3 + 1 + 4 + 1 + 5, rel=1e-14)
    _warm(into, A64, B64, np.zeros(4))
    c = A64.copy()
    into(c, B64, c)                                     # the same array read and written
    np.testing.assert_array_equal(c, A64 + B64)
    z = np.arange(8.0)
    expected = z.copy()
    expected[2:6] = z[:4] + B64
    into(z[:4], B64, z[2:6])                            # overlapping views of one array
    np.testing.assert_array_equal(z, expected)
    s = np.zeros(8)
    into(A64, B64, s[::2])                              # a strided output is written in place
    np.testing.assert_array_equal(s[::2], A64 + B64)
    assert not s[1::2].any()
    readonly = np.zeros(4)
    readonly.flags.writeable = False
    fresh = jit(_into, cache=False)
    assert _error(into, A64, B64, readonly) == _error(fresh, A64, B64, readonly)
    assert not readonly.any()
    c32, expected32 = np.zeros(4, np.float32), np.zeros(4, np.float32)
    expected32[...] = A64 + B64                         # NumPy casts on assignment
    into(A64, B64, c32)
    np.testing.assert_array_equal(c32, expected32)


def test_signature_kernels_keep_working():
    sig = jit(_add, signature="f64[n], f64[n]", cache=False)
    for _ in range(3):
        np.testing.assert_array_equal(sig(A64, B64), A64 + B64)


def _first(x):
    return x[0] * 2.0


def _tail(x):
    return x[5]


first = jit(_first, cache=False)
sig_add = jit(_add, signature="f64[n], f64[n]", cache=False)
sig_tail = jit(_tail, signature="f64[n]", cache=False)


def _compiler_frames(error: BaseException) -> list[str]:
    return [f.filename for f in traceback.extract_tb(error.__traceback__) if "/compiler/" in f.filename]


def test_a_compile_error_after_the_entry_is_installed():
    """New argument types that do not compile: the same error, with one frame of the compiler."""
    _warm(first, A64)
    assert first._entry is not None
    np.testing.assert_array_equal(first(A64), A64[0] * 2.0)
    fresh = jit(_first, cache=False)
    with pytest.raises(Exception) as expected:
        fresh(np.float64(1.0).reshape(()))
    with pytest.raises(Exception) as got:
        first(np.float64(1.0).reshape(()))
    assert (got.type, str(got.value)) == (expected.type, str(expected.value))
    assert len(_compiler_frames(got.value)) <= 1
    np.testing.assert_array_equal(first(A64), A64[0] * 2.0)


def test_keywords_after_the_entry_is_installed():
    _warm(add, A64, B64)
    for _ in range(2):
        np.testing.assert_array_equal(add(A64, b=B64), A64 + B64)
        np.testing.assert_array_equal(add(b=A64, a=B64), B64 + A64)
    fresh = jit(_add, cache=False)
    assert _error(add, A64, B64, b=B64) == _error(fresh, A64, B64, b=B64)


def test_signature_kernels_bind_symbols_in_the_entry():
    _warm(sig_add, A64, B64)
    assert sig_add._entry is not None
    for n in (0, 1, 4, 1000, 5000):
        a, b = R.standard_normal(n), R.standard_normal(n)
        for _ in range(2):
            np.testing.assert_array_equal(sig_add(a, b), a + b)
    # conversions and errors: as the checked path of a kernel without the entry
    fresh = jit(_add, signature="f64[n], f64[n]", cache=False)
    for args in [(A64, B64[:3]), (A64, np.ones((4, 1))), (A64, A32), (np.arange(4), B64),
                 (A64[::-1], B64), (A64, 1.5), (A64,), (A64, B64.astype(complex))]:
        try:
            expected = fresh(*args)
        except Exception as e:
            assert _error(sig_add, *args) == (type(e), str(e))
        else:
            out = sig_add(*args)
            assert out.dtype == expected.dtype
            np.testing.assert_array_equal(out, expected)


def test_a_failed_check_names_the_symbol_values():
    fresh = jit(_tail, signature="f64[n]", cache=False)
    expected = _error(fresh, np.ones(3))
    assert expected[0] is IndexError and "size 3" in expected[1]
    _warm(sig_tail, np.arange(8.0))
    assert sig_tail._entry is not None
    assert sig_tail(np.arange(8.0)) == 5.0
    assert _error(sig_tail, np.ones(3)) == expected


LIBRARY_SOURCE = '''
import numpy as np
from compiler import jit


@jit(signature="f64[n], f64[n]")
def axpy(x, w):
    return x * w + 1.0


@jit(signature="f64[n, 3]")
def parts(a):
    return a.sum(axis=1), a[:, 0] * 2.0
'''


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A two-kernel library built by `aotx build`."""
    tmp = tmp_path_factory.mktemp("fastcall-build")
    (tmp / "fastlib.py").write_text(LIBRARY_SOURCE)
    proc = subprocess.run([sys.executable, "-m", "compiler", "build", str(tmp / "fastlib.py"), "-o",
                           str(tmp / "out")], capture_output=True, text=True,
                          env=env_for(tmp / "cache"), timeout=600)
    assert proc.returncode == 0, proc.stderr
    return tmp / "out" / "fastlib"


def test_runtime_load_kernels_get_the_entry(built, monkeypatch):
    fresh, lib = runtime.load(built), runtime.load(built)
    x, w = R.standard_normal(6), R.standard_normal(6)
    a = R.standard_normal((5, 3))
    for _ in range(3):
        np.testing.assert_allclose(lib.axpy(x, w), x * w + 1.0, rtol=1e-15)
        s, first = lib.parts(a)
        np.testing.assert_allclose(s, a.sum(axis=1), rtol=1e-14)
        np.testing.assert_array_equal(first, a[:, 0] * 2.0)
    assert lib.axpy._entry is not None and lib.parts._entry is not None
    for args in [(x, w[:3]), (x, A32[:1]), (x.reshape(2, 3), w), (x[::2], w[:3]), (x,),
                 (np.arange(6), w), (x, 1.5), (x, None)]:
        try:
            expected = fresh.axpy(*args)
        except Exception as e:
            assert _error(lib.axpy, *args) == (type(e), str(e))
        else:
            np.testing.assert_array_equal(lib.axpy(*args), expected)
    np.testing.assert_allclose(lib.axpy(x=x, w=w), x * w + 1.0, rtol=1e-15)
    # without the compiler's entry maker: the Python path, same results
    monkeypatch.setattr(loader, "entry_maker", None)
    plain = runtime.load(built)
    for _ in range(3):
        np.testing.assert_allclose(plain.axpy(x, w), x * w + 1.0, rtol=1e-15)
    assert plain.axpy._entry is None


FIRST_ENTRIES_IN_THREADS = '''
import threading
import numpy as np
from compiler import jit


def add(a, b):
    return a + b


kernels = [jit(add, cache=False) for _ in range(4)]
x = np.arange(4.0)
for k in kernels:                        # compiled, not yet called twice: no entry made
    k(x, x)
barrier = threading.Barrier(len(kernels))
bad = []


def work(k):
    barrier.wait()                       # every thread makes the process's entry at once
    for _ in range(2000):
        if not np.array_equal(k(x, x), x + x):
            bad.append(1)


threads = [threading.Thread(target=work, args=(k,)) for k in kernels]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("ok" if not bad and all(k._entry is not None for k in kernels) else "bad")
'''


def test_threads_making_the_first_entry_at_once(tmp_path):
    """In a fresh process: the entry is made once, and every thread's kernel uses it (a second
    one made and dropped left its function objects pointing into freed code: a crash)."""
    script = tmp_path / "first_entries.py"
    script.write_text(FIRST_ENTRIES_IN_THREADS)
    for _ in range(3):
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              env=env_for(None, AOTX_DISABLE_CACHE="1"), timeout=300)
        assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr[-2000:]
