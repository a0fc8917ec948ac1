"""np.linalg.eig and eigvals, compiled against NumPy, one thread.

Run: ``AOTX_DISABLE_CACHE=1 python benchmarks/eig_bench.py [--repeat 7]`` (float64). For
each case: the compile time (first call) and the median and min of `repeat` timed calls
(each the best of 5) of the unrolled code (up to 8x8, ``UNROLL_MAX = 8``; the default
unrolls up to 4x4), of the LAPACK path (``UNROLL_MAX = 0``), and NumPy's. Cases: 10,000 3x3, 1,000 and
10,000 4x4, 1,000 8x8, 100 16x16, one 64x64 and one 256x256 (docs/linalg.md, "General
eigenproblems", records a run).
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import compiler.primitives.eig as eig_module  # noqa: E402
from _timing import best  # noqa: E402  (benchmarks/ is the script's directory)
from compiler import jit  # noqa: E402
from runtime import blas  # noqa: E402


def eig(a):
    return np.linalg.eig(a)


def eigvals(a):
    return np.linalg.eigvals(a)


def _times(fn, a, repeat: int) -> tuple[float, float]:
    runs = [best(lambda: fn(a), repeat=5) * 1e3 for _ in range(repeat)]
    return statistics.median(runs), min(runs)


def _compiled(fn, a, unroll: int) -> tuple[object, float]:
    saved = eig_module.UNROLL_MAX
    eig_module.UNROLL_MAX = unroll
    try:
        k = jit(fn)
        start = time.perf_counter()
        k(a)
        return k, time.perf_counter() - start
    finally:
        eig_module.UNROLL_MAX = saved


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(f"provider: {blas.describe()}; OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}")
    print(f"{'function':8s} {'stack':>13s} {'path':>9s} {'compile s':>9s} {'median ms':>10s} "
          f"{'min ms':>8s} {'numpy med':>9s} {'numpy min':>9s} {'ratio':>6s}")
    rng = np.random.default_rng(0)
    cases = [(10_000, 3), (1_000, 4), (10_000, 4), (1_000, 8), (100, 16), (1, 64), (1, 256)]
    for fn, ref in ((eig, np.linalg.eig), (eigvals, np.linalg.eigvals)):
        for count, n in cases:
            a = rng.standard_normal((count, n, n)) if count > 1 else rng.standard_normal((n, n))
            nmed, nmin = _times(ref, a, args.repeat)
            paths = [("unrolled", 8), ("lapack", 0)] if n <= 8 else [("lapack", 0)]
            for path, unroll in paths:
                k, compile_s = _compiled(fn, a, unroll)
                med, low = _times(k, a, args.repeat)
                print(f"{fn.__name__:8s} {count:6d} x {n:>3d}^2 {path:>9s} {compile_s:9.2f} {med:10.3f} "
                      f"{low:8.3f} {nmed:9.3f} {nmin:9.3f} {med / nmed:6.2f}")


if __name__ == "__main__":
    main()
