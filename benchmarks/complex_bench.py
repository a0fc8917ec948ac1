"""ns/element of the complex decompositions (compiler/primitives/complexmath.py) compiled into
one kernel of real arrays (re, im) -> (re, im), against NumPy's complex ufunc.

Run: ``PYTHONPATH=. python benchmarks/complex_bench.py [fn,fn,...] [n]`` (default exp,log at
1e6 elements). The kernel reads two float arrays and writes two; NumPy reads and writes one
interleaved complex array (its time includes no split or join). Best of 7 runs.
"""
from __future__ import annotations

import sys

import numpy as np

from _timing import best  # noqa: E402  (benchmarks/ is the script's directory)
from tests.complexmath import harness as H


def main(names: list[str], n: int) -> None:
    rng = np.random.default_rng(0)
    print(f"{'function':9s} {'dtype':10s} {'aotx ns/el':>10s} {'numpy ns/el':>11s}")
    for name in names:
        for dtype in ("float64", "float32"):
            kernel = H.Compiled([name], dtype)
            ctype = H.complex_dtype(dtype)
            z = (rng.uniform(-5, 5, n) + 1j * rng.uniform(-5, 5, n)).astype(ctype)
            re, im = np.ascontiguousarray(z.real), np.ascontiguousarray(z.imag)
            t_k = best(lambda: kernel.kernel(re, im), 7)
            ref = H.NUMPY_UNARY[name]
            t_n = best(lambda: ref(z), 7)
            print(f"{name:9s} {str(ctype):10s} {t_k / n * 1e9:10.2f} {t_n / n * 1e9:11.2f}")


if __name__ == "__main__":
    main(sys.argv[1].split(",") if len(sys.argv) > 1 else ["exp", "log"],
         int(float(sys.argv[2])) if len(sys.argv) > 2 else 1_000_000)
