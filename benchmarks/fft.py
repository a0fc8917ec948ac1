"""np.fft in compiled code vs NumPy's pocketfft, one thread: a batched rfft of 4096 rows of
1024 float64 values, and one complex fft of 2^20 values.

Run: ``AOTX_DISABLE_CACHE=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/fft.py``.
Each figure is the median and the minimum of 7 runs after a warm-up, in milliseconds; the
compiled kernels allocate their outputs (and temporaries) as NumPy does. docs/fft.md
records the figures.
"""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable

import numpy as np

from compiler import jit


def rfft_rows(x):
    return np.fft.rfft(x)


def fft_long(z):
    return np.fft.fft(z)


def _times(fn: Callable[[], Any], repeat: int = 7) -> tuple[float, float]:
    fn()
    ts = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - start)
    return statistics.median(ts) * 1e3, min(ts) * 1e3


def main() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4096, 1024))
    z = rng.standard_normal(1 << 20) + 1j * rng.standard_normal(1 << 20)
    for name, fn, arg in [("rfft 4096 x 1024", rfft_rows, x), ("fft 2^20", fft_long, z)]:
        kernel = jit(fn)
        start = time.perf_counter()
        got = kernel(arg)
        compile_s = time.perf_counter() - start
        want = fn(arg)
        err = np.linalg.norm(got - want) / np.linalg.norm(want)
        ours = _times(lambda: kernel(arg))
        theirs = _times(lambda: fn(arg))
        print(f"{name:18s} aotx {ours[0]:8.1f} ms (min {ours[1]:8.1f})   numpy {theirs[0]:8.1f} ms "
              f"(min {theirs[1]:8.1f})   ratio {ours[0] / theirs[0]:5.1f}   rel. L2 error {err:.1e}   "
              f"compile {compile_s:.1f} s")


if __name__ == "__main__":
    main()
