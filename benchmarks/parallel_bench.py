"""``jit(parallel=True)`` against the serial kernel, interleaved (docs/performance.md,
"Multithreading").

    AOTX_DISABLE_CACHE=1 OPENBLAS_NUM_THREADS=1 python benchmarks/parallel_bench.py [--rounds 7]

Per case, three variants take turns in every round: the serial kernel (``jit(fn)``),
``jit(fn, parallel=True)`` with ``AOTX_NUM_THREADS=1`` (its one-thread code: the cost of the
symbolic rows and of the entry), and ``jit(fn, parallel=True)`` with the default thread count
(the CPUs of the affinity mask). Wall time is what a split call saves (CPU time adds up the
threads' time): each variant's median and min of all its calls, and the speed-up of the
default over the serial kernel. CPU time per call (all threads) shows the work the split adds.
The load average before and after is printed: on a loaded machine the threads wait for cores
and the speed-up is not the kernel's.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]

from compiler import jit  # noqa: E402


def wave(x):
    return np.exp(-x**2) * np.sin(3 * x) + 0.5 * x * np.tanh(x)


def logsumexp_rows(x):
    m = np.max(x, axis=1, keepdims=True)
    return np.log(np.sum(np.exp(x - m), axis=1)) + m[:, 0]


def dense(x, w, b):
    return np.tanh(x @ w + b)


def cases() -> list[tuple[str, Callable[..., Any], tuple[np.ndarray, ...]]]:
    rng = np.random.default_rng(0)
    out: list[tuple[str, Callable[..., Any], tuple[np.ndarray, ...]]] = []
    for n in (10**3, 10**4, 10**5, 10**6, 10**7):
        out.append((f"W1 wave f64 n={n:.0e}", wave, (np.linspace(-4, 4, n),)))
    out.append(("W1 wave f32 n=1e+07", wave, (np.linspace(-4, 4, 10**7).astype(np.float32),)))
    out.append(("W2 logsumexp rows 4096x1024", logsumexp_rows, (rng.standard_normal((4096, 1024)) * 4,)))
    out.append(("tanh(x @ W + b) 65536x64 @ 64x64", dense,
                (rng.standard_normal((65536, 64)), rng.standard_normal((64, 64)), rng.standard_normal(64))))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args()
    print(f"load average {os.getloadavg()}, {len(os.sched_getaffinity(0))} CPUs in the affinity mask")
    print(f"{'case':36s} {'serial ms (med/min)':>20s} {'par, 1 thread':>20s} {'par, default':>20s}"
          f" {'speed-up med/min':>17s} {'CPU par/serial':>15s}")
    for name, fn, xs in cases():
        ser, par = jit(fn), jit(fn, parallel=True)
        np.testing.assert_allclose(par(*xs), ser(*xs), rtol=1e-12, atol=1e-12)
        size = xs[0].size
        reps = max(3, min(300, int(3e6 // size)))
        wall: dict[str, list[float]] = {"serial": [], "one": [], "default": []}
        cpu: dict[str, list[float]] = {"serial": [], "default": []}
        for _ in range(args.rounds):
            for label in wall:
                kernel = ser if label == "serial" else par
                if label == "one":
                    os.environ["AOTX_NUM_THREADS"] = "1"
                else:
                    os.environ.pop("AOTX_NUM_THREADS", None)
                kernel(*xs)
                c0 = time.process_time()
                for _ in range(reps):
                    t0 = time.perf_counter()
                    kernel(*xs)
                    wall[label].append(time.perf_counter() - t0)
                if label in cpu:
                    cpu[label].append((time.process_time() - c0) / reps)
        os.environ.pop("AOTX_NUM_THREADS", None)

        def fmt(v: list[float]) -> str:
            return f"{statistics.median(v) * 1e3:9.3f}/{min(v) * 1e3:9.3f}"
        s, d = wall["serial"], wall["default"]
        print(f"{name:36s} {fmt(s):>20s} {fmt(wall['one']):>20s} {fmt(d):>20s} "
              f"{statistics.median(s) / statistics.median(d):8.2f}/{min(s) / min(d):.2f}x "
              f"{statistics.median(cpu['default']) / statistics.median(cpu['serial']):14.2f}", flush=True)
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
