"""Kernels pickle by value (compiler/api/pickling.py, runtime/pickling.py; docs/aot.md).

Oracles: the same functions run by NumPy. "Without recompiling" is measured by
compiler.diagnostics()["llvm_compilations"] (LLVM runs of this process) and, for a
runtime.load'ed library, by unpickling it in a process where `compiler` cannot be imported.
Process-spawning tests are few: one spawn pool running a script's __main__ kernels, one
compiler-free process, one Dask cluster (skipped without dask).
"""
from __future__ import annotations

import importlib.util
import json
import pickle
import shutil
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

import compiler
import runtime
from compiler import errors, grad, jit, vmap
from compiler.api import pickling
from compiler.build import build
from tests.interop import pickled_kernels
from tests.runtime.subproc import BLOCK_COMPILER, REPO, env_for


@jit
def affine(x, y):
    return np.sin(x) * y + 1.0


@jit(signature="f64[n], f64 -> f64[n]")
def scaled(x, a):
    return x * a + np.cos(x)


def loss(w):
    return np.sum(np.tanh(w) ** 2)


batched = vmap(affine, in_dims=(0, None))
gradient = grad(loss)


def _oracle(x, y):
    return np.sin(x) * y + 1.0


def _llvm_runs() -> int:
    return compiler.diagnostics()["llvm_compilations"]


X = np.linspace(-1.0, 2.0, 37)
Y = np.cos(X)


def test_compiled_variants_travel_as_object_code():
    x32, y32 = X.astype(np.float32), Y.astype(np.float32)
    affine(X, Y), affine(x32, y32), batched(np.stack([X, 2 * X]), Y), gradient(X)
    scaled(X, 3.0)
    kernels = pickle.loads(pickle.dumps([affine, batched, gradient, scaled]))
    assert all(a is not b for a, b in zip(kernels, [affine, batched, gradient, scaled]))
    k_affine, k_batched, k_gradient, k_scaled = kernels
    before = _llvm_runs()
    np.testing.assert_allclose(k_affine(X, Y), _oracle(X, Y), rtol=1e-13)
    got32 = k_affine(x32, y32)
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, _oracle(x32, y32), rtol=1e-6)
    np.testing.assert_allclose(k_batched(np.stack([X, 2 * X]), Y),
                               np.stack([_oracle(X, Y), _oracle(2 * X, Y)]), rtol=1e-13)
    np.testing.assert_allclose(k_gradient(X), 2 * np.tanh(X) / np.cosh(X) ** 2, rtol=1e-12)
    for n in (5, 37):                      # one symbolic variant, any n
        np.testing.assert_allclose(k_scaled(X[:n], 3.0), X[:n] * 3.0 + np.cos(X[:n]), rtol=1e-13)
    assert _llvm_runs() == before, "an unpickled compiled variant was compiled again"


def test_new_signatures_compile_from_the_pickled_function():
    affine(X, Y)
    restored = pickle.loads(pickle.dumps(affine))
    before = _llvm_runs()
    x3 = X.reshape(-1, 1) * np.ones(3)
    np.testing.assert_allclose(restored(x3, x3), _oracle(x3, x3), rtol=1e-13)
    assert _llvm_runs() == before + 1


def test_one_process_loads_a_pickled_kernel_once():
    affine(X, Y)
    data = pickle.dumps(affine)
    assert pickle.loads(data) is pickle.loads(data)


def test_without_its_function_a_kernel_runs_its_compiled_variants(monkeypatch):
    def local(x):                         # a local function: the standard pickler refuses it
        return x * 2.0 - 1.0
    kernel = jit(local)
    kernel(X)
    monkeypatch.setattr(pickling, "cloudpickle", None)      # as where cloudpickle is missing
    restored = pickle.loads(pickle.dumps(kernel))
    np.testing.assert_allclose(restored(X), X * 2.0 - 1.0, rtol=1e-15)
    with pytest.raises(errors.KernelNotCompilable) as info:
        restored(X[:4])
    message = str(info.value)
    assert "local" in message and "f64[37]" in message and "Can't pickle local object" in message
    # a decorated module-level function travels by reference without cloudpickle
    module_kernel = pickle.loads(pickle.dumps(affine))
    np.testing.assert_allclose(module_kernel(X[:4], Y[:4]), _oracle(X[:4], Y[:4]), rtol=1e-13)


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    if shutil.which("cc") is None:     # as tests/cli/test_build.py: linking needs cc
        pytest.skip("no C compiler (cc)")
    out = tmp_path_factory.mktemp("pickled-build")
    build(pickled_kernels.__file__, out, progress=lambda line: None)
    return runtime.load(out / "pickled_kernels")


def test_a_loaded_library_pickles_by_value(library):
    data = pickle.dumps(library.affine)
    restored = pickle.loads(data)
    assert restored is not library.affine and restored.native._keepalive.path != library.path
    np.testing.assert_allclose(restored(X, Y), _oracle(X, Y), rtol=1e-13)
    assert pickle.loads(pickle.dumps(library)) is restored.native._keepalive
    # a process where `compiler` (and llvmlite) cannot be imported
    code = BLOCK_COMPILER + textwrap.dedent("""
        import json, pickle, sys
        import numpy as np
        kernel = pickle.loads(sys.stdin.buffer.read())
        x = np.linspace(0.0, 1.0, 9)
        print(json.dumps(kernel(x, x).tolist()))
    """)
    proc = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True,
                          env=env_for(None), cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    x = np.linspace(0.0, 1.0, 9)
    np.testing.assert_allclose(json.loads(proc.stdout), _oracle(x, x), rtol=1e-13)


def test_a_kernel_unpickled_without_the_compiler_says_what_to_do():
    power(X, 2)
    code = BLOCK_COMPILER + textwrap.dedent("""
        import pickle, sys
        try:
            pickle.loads(sys.stdin.buffer.read())
        except pickle.UnpicklingError as e:
            print(e)
    """)
    proc = subprocess.run([sys.executable, "-c", code], input=pickle.dumps(power), capture_output=True,
                          env=env_for(None), cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    assert "needs the aotx compiler" in proc.stdout.decode() and "runtime.load" in proc.stdout.decode()


SCRIPT = '''
import concurrent.futures, json, multiprocessing, pickle, sys
import numpy as np
import compiler
from compiler import jit, vmap

@jit
def wave(x, y):
    return np.exp(-x * x) * y

def run(kernel, *args):
    return kernel(*args).tolist(), compiler.diagnostics()["llvm_compilations"]

if __name__ == "__main__":
    x = np.linspace(-2.0, 2.0, 11)
    wave(x, x)
    per_row = vmap(wave, in_dims=(0, None))
    per_row(np.stack([x, x + 1]), x)
    lib = pickle.loads(sys.stdin.buffer.read())
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx) as pool:
        jobs = [pool.submit(run, wave, x, x), pool.submit(run, per_row, np.stack([x, x + 1]), x),
                pool.submit(run, lib.affine, x, x), pool.submit(run, wave, x[:3], x[:3])]
        print(json.dumps([j.result() for j in jobs]))
'''


def test_spawned_workers_run_kernels_of_main_without_recompiling(library, tmp_path):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    proc = subprocess.run([sys.executable, str(script)], input=pickle.dumps(library),
                          capture_output=True, env=env_for(tmp_path / "cache", AOTX_DISABLE_CACHE="1"),
                          cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    (w, n_w), (b, n_b), (a, n_a), (w3, n_w3) = json.loads(proc.stdout)
    x = np.linspace(-2.0, 2.0, 11)
    np.testing.assert_allclose(w, np.exp(-x * x) * x, rtol=1e-13)
    np.testing.assert_allclose(b, [np.exp(-x * x) * x, np.exp(-(x + 1) ** 2) * x], rtol=1e-13)
    np.testing.assert_allclose(a, _oracle(x, x), rtol=1e-13)
    assert (n_w, n_b, n_a) == (0, 0, 0), "the worker compiled a variant it was sent"
    np.testing.assert_allclose(w3, np.exp(-x[:3] ** 2) * x[:3], rtol=1e-13)   # a new variant:
    assert n_w3 == 1                       # compiled in the worker from the function of __main__


def test_dask_workers_run_the_compiled_blocks_without_recompiling():
    pytest.importorskip("dask.array")
    distributed = pytest.importorskip("dask.distributed")
    example = _example("dask_blocks")
    kernel = example.make_kernel()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        xs, ys = example.blocks(kernel, 10_500, 2_000)       # 6 blocks, the last one shorter
        got, x = ys.compute(), xs.compute()
        compilations = example.worker_compilations(client)
    np.testing.assert_allclose(got, example.smooth_step(x), rtol=1e-13, atol=1e-15)
    assert len(compilations) == 2 and set(compilations.values()) == {0}


def _example(name: str):
    spec = importlib.util.spec_from_file_location(f"aotx_example_{name}", REPO / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@jit(static_argnums=1)
def power(x, k):
    return x ** k


def test_static_arguments_and_another_place(monkeypatch):
    power(X, 3)
    data, data_scaled = pickle.dumps(power), pickle.dumps(scaled)
    restored = pickle.loads(data)
    before = _llvm_runs()
    np.testing.assert_allclose(restored(X, 3), X ** 3, rtol=1e-15)
    assert _llvm_runs() == before
    # code compiled for another aotx, LLVM or CPU is not loaded: compiled again here
    monkeypatch.setattr(pickling, "_environment", lambda: ["0.0", "0.0", ["other-cpu"]])
    monkeypatch.setattr(pickling, "_RESTORED", weakref.WeakValueDictionary())   # another process
    monkeypatch.setenv("AOTX_DISABLE_CACHE", "1")     # whose on-disk cache does not hold it
    elsewhere = pickle.loads(data)
    assert elsewhere is not restored and not elsewhere._specializations
    np.testing.assert_allclose(elsewhere(X, 3), X ** 3, rtol=1e-15)
    assert _llvm_runs() == before + 1
    moved = pickle.loads(data_scaled)             # a signature= kernel: compiled again at once
    assert moved._fixed is not None and _llvm_runs() == before + 2
    np.testing.assert_allclose(moved(X[:3], 2.0), X[:3] * 2.0 + np.cos(X[:3]), rtol=1e-15)
    assert _llvm_runs() == before + 2


def test_a_restored_kernel_pickles_again_and_numpy_functions_travel(monkeypatch):
    sine = jit(np.sin)
    sine(X)
    first = pickle.loads(pickle.dumps(sine))
    monkeypatch.setattr(pickling, "_RESTORED", weakref.WeakValueDictionary())   # another process
    monkeypatch.setenv("AOTX_DISABLE_CACHE", "1")     # whose on-disk cache does not hold it
    second = pickle.loads(pickle.dumps(first))
    before = _llvm_runs()
    np.testing.assert_allclose(second(X), np.sin(X), rtol=1e-15)
    assert second is not first and _llvm_runs() == before
