"""The thread pool of jit(parallel=True) kernels (compiler/backend/pool.py) and their
temporaries kept per thread (compiler/backend/workspace.py), against NumPy.

Several Python threads call split kernels at the same time (the GIL is released while a
kernel runs): one call has the pool, the others find it busy and run their slices
themselves; every result must still be NumPy's. A forked child gets a pool of its own. The
sizes are above the kernels' thresholds and not multiples of the thread counts.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

import runtime
from compiler import cli, jit

RNG = np.random.default_rng(41)
W = RNG.standard_normal((48, 40))
B = RNG.standard_normal(40)
ROOT = Path(__file__).resolve().parents[2]


def wave(x):
    return np.exp(-x**2) * np.sin(3 * x) + 0.5 * x * np.tanh(x)


def dense(x, w, b):                 # a temporary per slice: the product
    return np.tanh(x @ w + b)


def softmax(x):                     # temporaries of a row count: max and sum per row
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


WAVE, DENSE, SOFTMAX = jit(wave, parallel=True), jit(dense, parallel=True), jit(softmax, parallel=True)


def _inputs(k: int) -> list[tuple[object, tuple[np.ndarray, ...], np.ndarray]]:
    """(kernel, arguments, NumPy's result) of the k-th call of a thread: sizes vary by call."""
    rng = np.random.default_rng(k)
    x1 = rng.uniform(-4, 4, 150_001 + 97 * k)
    x2 = rng.standard_normal((6_151 + 13 * k, 48))
    x3 = rng.standard_normal((12_289 + 7 * k, 24))
    return [(WAVE, (x1,), wave(x1)), (DENSE, (x2, W, B), dense(x2, W, B)), (SOFTMAX, (x3,), softmax(x3))]


@pytest.mark.parametrize("threads", ["1", "2", "3"])
def test_concurrent_callers_get_numpys_results(threads, monkeypatch):
    monkeypatch.setenv("AOTX_NUM_THREADS", threads)
    work = [_inputs(k) for k in range(3)]
    for cases in work:                   # compiled (and the native entry installed) up front
        for kernel, args, want in cases:
            np.testing.assert_allclose(kernel(*args), want, rtol=1e-12, atol=1e-12)
    failures: list[str] = []
    start = threading.Barrier(4)

    def caller(t: int) -> None:
        start.wait()
        for r in range(6):
            for kernel, args, want in work[(t + r) % len(work)]:
                got = kernel(*args)
                if got.shape != want.shape or not np.allclose(got, want, rtol=1e-12, atol=1e-12):
                    failures.append(f"thread {t}, round {r}, {kernel}")
    pool = [threading.Thread(target=caller, args=(t,)) for t in range(4)]
    for p in pool:
        p.start()
    for p in pool:
        p.join(timeout=120)
    assert not any(p.is_alive() for p in pool), "a caller never returned"
    assert failures == []


def test_repeated_calls_alternate_kernels_and_thread_counts(monkeypatch):
    """Many calls in a row reuse the parked workers; the count changes between calls."""
    cases = _inputs(5)
    for r in range(12):
        monkeypatch.setenv("AOTX_NUM_THREADS", "2" if r % 3 else "3")
        for kernel, args, want in cases:
            np.testing.assert_allclose(kernel(*args), want, rtol=1e-12, atol=1e-12)


_FORK = textwrap.dedent("""
    import os, sys, threading
    import numpy as np
    sys.path.insert(0, {root!r})
    from compiler import jit
    from forked_wave import wave

    k = jit(wave, parallel=True)
    x = np.linspace(-4, 4, 200_003)
    want = np.exp(-x**2) * np.sin(3 * x) + 0.5 * x * np.tanh(x)
    for _ in range(3):                   # the parent's pool exists, the native entry is installed
        assert np.allclose(k(x), want, rtol=1e-12, atol=1e-12)
    stop = False

    def busy():                          # a thread inside the pool while the process forks
        while not stop:
            assert np.allclose(k(x), want, rtol=1e-12, atol=1e-12)
    t = threading.Thread(target=busy)
    t.start()
    children = []
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            ok = all(np.allclose(k(x), want, rtol=1e-12, atol=1e-12) for _ in range(20))
            os._exit(0 if ok else 3)
        children.append(pid)
    codes = [os.waitpid(pid, 0)[1] for pid in children]
    stop = True
    t.join()
    assert np.allclose(k(x), want, rtol=1e-12, atol=1e-12)
    print("codes", codes)
    sys.exit(0 if all(c == 0 for c in codes) else 1)
""")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_forked_children_get_their_own_pool(tmp_path):
    (tmp_path / "forked_wave.py").write_text(
        "import numpy as np\n\n\ndef wave(x):\n"
        "    return np.exp(-x**2) * np.sin(3 * x) + 0.5 * x * np.tanh(x)\n")
    (tmp_path / "forking.py").write_text(_FORK.format(root=str(ROOT)))
    env = dict(os.environ, AOTX_NUM_THREADS="2")
    proc = subprocess.run([sys.executable, "-W", "ignore", str(tmp_path / "forking.py")],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "codes [0, 0, 0]" in proc.stdout


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc)")
def test_built_library_has_its_own_hidden_pool(tmp_path, monkeypatch):
    """An `aotx build` library links the pool in, without exporting it, and its kernel is
    correct when several threads call it at once."""
    (tmp_path / "pool_lib.py").write_text(
        "import numpy as np\nfrom compiler import jit\n\n"
        "@jit(signature=\"f64[n, 24]\", parallel=True)\n"
        "def softmax(x):\n"
        "    e = np.exp(x - x.max(axis=1, keepdims=True))\n"
        "    return e / e.sum(axis=1, keepdims=True)\n")
    assert cli.main(["build", str(tmp_path / "pool_lib.py"), "-o", str(tmp_path / "o")]) == 0
    so = next((tmp_path / "o").glob("pool_lib*.so"))
    assert not hasattr(ctypes.CDLL(str(so)), "aotx_pool_run")
    lib = runtime.load(tmp_path / "o" / "pool_lib")
    monkeypatch.setenv("AOTX_NUM_THREADS", "2")
    xs = [RNG.standard_normal((20_011 + 5 * k, 24)) for k in range(3)]
    failures: list[int] = []

    def caller(t: int) -> None:
        for r in range(5):
            x = xs[(t + r) % 3]
            if not np.allclose(lib.softmax(x), softmax(x), rtol=1e-12, atol=1e-15):
                failures.append(t)
    pool = [threading.Thread(target=caller, args=(t,)) for t in range(3)]
    for p in pool:
        p.start()
    for p in pool:
        p.join(timeout=120)
    assert not any(p.is_alive() for p in pool) and failures == []
