"""Loops that stay loops: compile time against the trip count, and loop kernels against the
same Python loop run by NumPy (and numba where installed).

    python benchmarks/loops_bench.py
"""
from __future__ import annotations

import os
import time

import numpy as np

from _timing import best, run_script  # noqa: E402  (benchmarks/ is the script's directory)
from compiler import grad, jit, scan

COMPILE_CASE = """
import os, sys, time
os.environ["AOTX_DISABLE_CACHE"] = "1"
import numpy as np
from compiler import jit
def f(x):
    acc = x
    for i in range(TRIP):
        acc = np.sin(acc) * 0.5 + x[i % 8]
    return acc
jit(lambda x: x + 1.0)(np.ones(8))          # LLVM's own start-up is not the loop's
k = jit(f)
x = np.random.default_rng(0).random(8)
start = time.perf_counter()
k.lower(x).asm                              # stage, transform and compile: no run
print(time.perf_counter() - start)
"""


def compile_times() -> None:
    print("compile time of a loop kernel (stage + passes + LLVM, no run):")
    for trip in (10, 1_000, 1_000_000):
        seconds = float(run_script(COMPILE_CASE.replace("TRIP", str(trip))))
        print(f"  {trip:>9,} iterations: {1e3 * seconds:7.1f} ms")


def recurrence(x):
    out = np.zeros_like(x)
    out[0] = x[0]
    for i in range(1, x.shape[0]):
        out[i] = 0.5 * out[i - 1] + x[i]
    return out


def pairwise(a):
    n = a.shape[0]
    d = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            d[i, j] = np.sum((a[i] - a[j]) ** 2)
    return d


def rnn(w, xs):
    def step(h, x):
        h = np.tanh(w @ h + x)
        return h, h.sum()
    h, ys = scan(step, np.zeros(w.shape[0]), xs)
    return ys.sum()


def peers(fn):
    out = {"aotx": jit(fn), "numpy": fn}
    try:
        import numba
        out["numba"] = numba.njit(fn)
    except ImportError:
        pass
    return out


def runtimes() -> None:
    rng = np.random.default_rng(0)
    cases = [("row recurrence, n=100,000", recurrence, (rng.random(100_000),)),
             ("pairwise double loop, 200x3", pairwise, (rng.random((200, 3)),))]
    for name, fn, args in cases:
        times = {}
        for peer, f in peers(fn).items():
            np.testing.assert_allclose(f(*args), fn(*args), rtol=1e-10)
            times[peer] = best(lambda: f(*args), repeat=3)
        line = "   ".join(f"{p} {1e3 * t:9.3f} ms ({t / times['aotx']:.1f}x)" for p, t in times.items())
        print(f"{name}: {line}")
    w, xs = rng.standard_normal((16, 16)) * 0.3, rng.standard_normal((2_000, 16))
    f, g = jit(rnn), jit(grad(rnn))
    t = best(lambda: g(w, xs), repeat=5)
    t_f = best(lambda: f(w, xs), repeat=5)
    print(f"scan RNN (16 units, 2,000 steps): value {1e3 * t_f:.3f} ms, grad {1e3 * t:.3f} ms "
          f"(grad/value {t / t_f:.1f})")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    start = time.perf_counter()
    compile_times()
    runtimes()
