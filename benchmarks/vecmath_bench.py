"""ns/element of every vecmath kernel vs NumPy's np.<fn> (1e7 elements, float64 and float32).

Run: ``PYTHONPATH=. python benchmarks/vecmath_bench.py [fn,fn,...]``. Each kernel is the
backend's loop shape (scalar body, noalias pointers) compiled at O3 for the host; the best of
5 runs is reported. Inputs are uniform over a typical range of each function.
"""
from __future__ import annotations

import sys

import numpy as np

from _timing import best  # noqa: E402  (benchmarks/ is the script's directory)
from tests.backend import vecmath_harness as H

N = int(__import__("os").environ.get("VM_N", 10_000_000))
RANGES = {"log": (0.01, 100), "log2": (0.01, 100), "log10": (0.01, 100), "log1p": (-0.9, 100),
          "arcsin": (-1, 1), "arccos": (-1, 1), "exp": (-50, 50), "exp2": (-50, 50),
          "sin": (-100, 100), "cos": (-100, 100), "tan": (-100, 100), "cbrt": (-1e3, 1e3),
          "pow": (0.01, 10), "arccosh": (1, 100), "arctanh": (-1, 1)}
NAMES = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
         "tanh", "sinh", "cosh", "arcsin", "arccos", "arctan", "arctan2", "pow", "hypot",
         "cbrt", "arcsinh", "arccosh", "arctanh"]




def main(names: list[str]) -> None:
    print(f"{'function':9s} {'dtype':8s} {'aotx ns/el':>10s} {'numpy ns/el':>11s} {'speedup':>8s}")
    for name in names:
        for dtype in ("float64", "float32"):
            kernel = H.compile_kernel(name, dtype)
            lo, hi = RANGES.get(name, (-10, 10))
            args = [H.uniform(dtype, N, lo, hi, seed=s) for s in range(kernel.nargs)]
            if name == "pow":
                args[1] = H.uniform(dtype, N, -5, 5, seed=9)
            out = np.empty_like(args[0])
            ref = H._REF[name]
            with np.errstate(all="ignore"):
                t_k = best(lambda: kernel(*args, out=out), 5)
                t_np = best(lambda: ref(*args, out=out), 5)
            print(f"{name:9s} {dtype:8s} {t_k / N * 1e9:10.2f} {t_np / N * 1e9:11.2f} "
                  f"{t_np / t_k:7.1f}x")


if __name__ == "__main__":
    main(sys.argv[1].split(",") if len(sys.argv) > 1 else NAMES)
