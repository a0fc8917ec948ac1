"""np.fft in compiled code vs NumPy's pocketfft, one thread: a batched rfft of 4096 rows of
1024 float64 values, and one complex fft of 2^20 values.

Run: ``AOTX_DISABLE_CACHE=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/fft.py``.
float64 and float32. Each figure is the median and the minimum of 11 runs after a warm-up, in
milliseconds of CPU time, the runs interleaved; the compiled kernels allocate their
outputs (and temporaries) as NumPy does; the error is against NumPy in double precision.
``--symbolic`` adds the kernel compiled once for every length (``signature=`` with a symbolic
transformed axis: the plan made when it runs) and times the three interleaved.
docs/fft.md records the figures.
"""
from __future__ import annotations

import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

from compiler import jit


def rfft_rows(x):
    return np.fft.rfft(x)


def fft_long(z):
    return np.fft.fft(z)


def _times(ours: Callable[[], Any], theirs: Callable[[], Any], repeat: int = 11
           ) -> tuple[tuple[float, float], tuple[float, float]]:
    """(median, min) in ms of each, runs interleaved, CPU time of this process (both run on
    one thread; CPU time is less disturbed than wall time on a shared machine)."""
    ours()
    theirs()
    a: list[float] = []
    b: list[float] = []
    for _ in range(repeat):
        for fn, ts in ((ours, a), (theirs, b)):
            start = time.process_time()
            fn()
            ts.append(time.process_time() - start)
    return ((statistics.median(a) * 1e3, min(a) * 1e3), (statistics.median(b) * 1e3, min(b) * 1e3))


def _times_many(fns: list[Callable[[], Any]], repeat: int = 11) -> list[tuple[float, float]]:
    """(median, min) in ms of each function, the runs interleaved (CPU time)."""
    for fn in fns:
        fn()
    ts: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, t in zip(fns, ts):
            start = time.process_time()
            fn()
            t.append(time.process_time() - start)
    return [(statistics.median(t) * 1e3, min(t) * 1e3) for t in ts]


SIGNATURES = {"rfft 4096 x 1024": "{}[b, n]", "fft 2^20": "{}[n]"}
SHORT = {"float64": "f64", "float32": "f32", "complex128": "c128", "complex64": "c64"}


def symbolic() -> None:
    """The kernel of a symbolic length vs the static one vs NumPy, interleaved."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4096, 1024))
    z = rng.standard_normal(1 << 20) + 1j * rng.standard_normal(1 << 20)
    cases = [("rfft 4096 x 1024", rfft_rows, x, "float64"), ("fft 2^20", fft_long, z, "complex128"),
             ("rfft 4096 x 1024", rfft_rows, x.astype(np.float32), "float32"),
             ("fft 2^20", fft_long, z.astype(np.complex64), "complex64")]
    for name, fn, arg, dtype in cases:
        static, sym = jit(fn), jit(fn, signature=SIGNATURES[name].format(SHORT[dtype]))
        want = fn(arg.astype(np.complex128 if arg.dtype.kind == "c" else np.float64))
        err = np.linalg.norm(sym(arg) - want) / np.linalg.norm(want)
        (s_med, s_min), (t_med, t_min), (n_med, n_min) = _times_many(
            [lambda: sym(arg), lambda: static(arg), lambda: fn(arg)])
        print(f"{name:17s} {dtype:10s} symbolic {s_med:6.1f} ms (min {s_min:6.1f})   static {t_med:6.1f} "
              f"(min {t_min:6.1f})   numpy {n_med:6.1f} (min {n_min:6.1f})   symbolic/static "
              f"{s_med / t_med:4.2f}   symbolic/numpy {s_med / n_med:4.2f}   rel. L2 error {err:.1e}")


def main() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4096, 1024))
    z = rng.standard_normal(1 << 20) + 1j * rng.standard_normal(1 << 20)
    cases = [("rfft 4096 x 1024", rfft_rows, x, "float64"), ("rfft 4096 x 1024", rfft_rows, x.astype(np.float32), "float32"),
             ("fft 2^20", fft_long, z, "complex128"), ("fft 2^20", fft_long, z.astype(np.complex64), "complex64")]
    for name, fn, arg, dtype in cases:
        kernel = jit(fn)
        start = time.perf_counter()
        got = kernel(arg)
        compile_s = time.perf_counter() - start
        want = fn(arg.astype(np.complex128 if arg.dtype.kind == "c" else np.float64))
        err = np.linalg.norm(got - want) / np.linalg.norm(want)
        ours, theirs = _times(lambda: kernel(arg), lambda: fn(arg))
        print(f"{name:17s} {dtype:10s} aotx {ours[0]:6.1f} ms (min {ours[1]:6.1f})   numpy {theirs[0]:6.1f} ms "
              f"(min {theirs[1]:6.1f})   ratio {ours[0] / theirs[0]:4.2f}   rel. L2 error {err:.1e}   "
              f"compile {compile_s:.1f} s")


if __name__ == "__main__":
    symbolic() if "--symbolic" in sys.argv else main()
