"""``jit(parallel=True)`` against the serial kernel, interleaved (docs/performance.md,
"Multithreading").

    AOTX_DISABLE_CACHE=1 OPENBLAS_NUM_THREADS=1 python benchmarks/parallel_bench.py [--rounds 7]

Per case, three variants take turns in every round: the serial kernel (``jit(fn)``),
``jit(fn, parallel=True)`` with ``AOTX_NUM_THREADS=1`` (its one-thread code: the cost of the
symbolic rows and of the entry), and ``jit(fn, parallel=True)`` with the default thread count
(the CPUs of the affinity mask). Wall time is what a split call saves (CPU time adds up the
threads' time): each variant's median and min of all its calls, and the speed-up of the
default over the serial kernel. CPU time per call (all threads) shows the work the split adds. ``--overhead`` measures what a
split costs at 1e3 to 1e5 elements instead (every call split in two, the threshold forced down).
The load average before and after is printed: on a loaded machine the threads wait for cores
and the speed-up is not the kernel's. Under each case, the default variant's figures from
benchmarks/threadstats.py: the kernel-mode share of its CPU time (page faults of the fresh
output), the time its threads waited for a core (another process had it: not the kernel's
speed), page faults per call, and the machine's huge-page fallbacks and compaction stalls.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.path.dirname(os.path.abspath(__file__))]

import threadstats  # noqa: E402
from compiler import jit  # noqa: E402
from compiler.backend import parallel  # noqa: E402


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
    out.append(("tanh(x @ W + b) 4096x256 @ 256x256", dense,
                (rng.standard_normal((4096, 256)), rng.standard_normal((256, 256)), rng.standard_normal(256))))
    return out


def overhead(rounds: int) -> None:
    """What a split costs: W1 at 1e3 to 1e5 elements, every call split in two (the threshold
    forced down to one unit of work a thread), against the serial kernel, interleaved."""
    parallel.WORK_PER_THREAD = 1
    ser, par = jit(wave), jit(wave, parallel=True)
    os.environ["AOTX_NUM_THREADS"] = "2"
    print(f"{'split overhead, W1 f64':36s} {'serial us (med/min)':>20s} {'split in 2 (med/min)':>20s}"
          f" {'difference med/min':>20s}")
    for n in (10**3, 10**4, 3 * 10**4, 10**5):
        x = np.linspace(-4, 4, n)
        np.testing.assert_allclose(par(x), ser(x), rtol=1e-12, atol=1e-12)
        wall: dict[str, list[float]] = {"serial": [], "split": []}
        for _ in range(rounds):
            for label, kernel in (("serial", ser), ("split", par)):
                kernel(x)
                for _ in range(int(2e6 // n) + 20):
                    t0 = time.perf_counter()
                    kernel(x)
                    wall[label].append(time.perf_counter() - t0)
        s, p = wall["serial"], wall["split"]
        print(f"{f'n={n:.0e}':36s} {statistics.median(s) * 1e6:9.1f}/{min(s) * 1e6:9.1f} "
              f"{statistics.median(p) * 1e6:10.1f}/{min(p) * 1e6:9.1f} "
              f"{(statistics.median(p) - statistics.median(s)) * 1e6:10.1f}/{(min(p) - min(s)) * 1e6:9.1f}", flush=True)
    os.environ.pop("AOTX_NUM_THREADS", None)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--overhead", action="store_true", help="only the cost of a split at small sizes")
    args = p.parse_args()
    print(f"load average {os.getloadavg()}, {len(os.sched_getaffinity(0))} CPUs in the affinity mask")
    if args.overhead:
        overhead(args.rounds)
        print(f"load average {os.getloadavg()}")
        return
    print(f"{'case':36s} {'serial ms (med/min)':>20s} {'par, 1 thread':>20s} {'par, default':>20s}"
          f" {'speed-up med/min':>17s} {'CPU par/serial':>15s}")
    for name, fn, xs in cases():
        ser, par = jit(fn), jit(fn, parallel=True)
        np.testing.assert_allclose(par(*xs), ser(*xs), rtol=1e-12, atol=1e-12)
        size = xs[0].size
        reps = max(3, min(300, int(3e6 // size)))
        wall: dict[str, list[float]] = {"serial": [], "one": [], "default": []}
        cpu: dict[str, list[float]] = {"serial": [], "default": []}
        stats = {label: threadstats.Stats() for label in wall}
        for _ in range(args.rounds):
            for label in wall:
                kernel = ser if label == "serial" else par
                if label == "one":
                    os.environ["AOTX_NUM_THREADS"] = "1"
                else:
                    os.environ.pop("AOTX_NUM_THREADS", None)
                kernel(*xs)
                c0, s0 = time.process_time(), threadstats.snapshot()
                for _ in range(reps):
                    t0 = time.perf_counter()
                    kernel(*xs)
                    wall[label].append(time.perf_counter() - t0)
                stats[label] = stats[label] + (threadstats.snapshot() - s0)
                if label in cpu:
                    cpu[label].append((time.process_time() - c0) / reps)
        os.environ.pop("AOTX_NUM_THREADS", None)

        def fmt(v: list[float]) -> str:
            return f"{statistics.median(v) * 1e3:9.3f}/{min(v) * 1e3:9.3f}"
        s, d = wall["serial"], wall["default"]
        print(f"{name:36s} {fmt(s):>20s} {fmt(wall['one']):>20s} {fmt(d):>20s} "
              f"{statistics.median(s) / statistics.median(d):8.2f}/{min(s) / min(d):.2f}x "
              f"{statistics.median(cpu['default']) / statistics.median(cpu['serial']):14.2f}", flush=True)
        print(f"{'':36s} default: {stats['default'].describe(len(d))}; serial: "
              f"{stats['serial'].describe(len(s))}", flush=True)
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
