"""np.linalg.eig and eigvals of stacks of small matrices, compiled against NumPy.

Run: ``PYTHONPATH=. python benchmarks/eig_bench.py`` (float64: 10,000 3x3, 10,000 4x4,
1,000 8x8; best of 7 calls after a warm-up that compiles). Matrices larger than 8x8 are
refused by the compiled code today (docs/linalg.md, "General eigenproblems"): NumPy's time
for one 64x64 matrix is printed for reference.
"""
from __future__ import annotations

import numpy as np

from _timing import best  # noqa: E402  (benchmarks/ is the script's directory)
from compiler import jit


@jit
def eigvals(a):
    return np.linalg.eigvals(a)


@jit
def eig(a):
    return np.linalg.eig(a)


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"{'stack':14s} {'eigvals ms':>10s} {'numpy ms':>9s} {'eig ms':>8s} {'numpy ms':>9s}")
    for count, n in [(10_000, 3), (10_000, 4), (1_000, 8)]:
        a = rng.standard_normal((count, n, n))
        times = [best(lambda f=f: f(a)) * 1e3 for f in (eigvals, np.linalg.eigvals, eig, np.linalg.eig)]
        print(f"{count:6d} x {n}x{n:<4d} " + " ".join(f"{t:{w}.1f}" for t, w in zip(times, (10, 9, 8, 9))))
    big = rng.standard_normal((64, 64))
    print(f"1 x 64x64: NumPy eig {best(lambda: np.linalg.eig(big)) * 1e3:.2f} ms (compiled: not yet, n > 8)")


if __name__ == "__main__":
    main()
