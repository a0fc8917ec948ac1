"""Kernels with large temporaries, called again and again: what the per-kernel workspace
(docs/performance.md, "Temporaries") saves over a fresh allocation per call.

    AOTX_DISABLE_CACHE=1 OPENBLAS_NUM_THREADS=1 python benchmarks/workspace_bench.py [--repeat 15]

Each case is timed (median and min of `repeat` calls after a warm-up), then checked against
NumPy and NumPy's own time taken. Run one case per process (``--case NAME``) for figures that
do not depend on what ran before: glibc raises its mmap threshold when a large block is freed.
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Callable

import numpy as np

try:
    import resource                    # POSIX: page faults per call
except ImportError:                    # pragma: no cover (Windows)
    resource = None  # type: ignore[assignment]

from compiler import grad, jit, vmap

rng = np.random.default_rng(0)


def sort(x):
    return np.sort(x)


def cholesky(a):
    return np.linalg.cholesky(a)


def halves(a):
    return np.concatenate([a[:5000], a[5000:]])


def double(a):
    return a * 2


def wave(x):
    return np.exp(-x**2) * np.sin(3 * x) + 0.5 * x * np.tanh(x)


def add(a, b):
    return a + b


def mlp_example_loss(w1, w2, x, y):
    h = np.tanh(w1 @ x)
    return (w2 @ h - y) ** 2


def numpy_mlp_per_example(w1, w2, xs, ys):
    h = np.tanh(xs @ w1.T)                          # (B, 64)
    r = h @ w2 - ys                                  # (B,)
    g2 = 2 * r[:, None] * h                          # (B, 64)
    dh = 2 * r[:, None] * w2[None, :] * (1 - h * h)  # (B, 64)
    g1 = dh[:, :, None] * xs[:, None, :]             # (B, 64, 128)
    return g1, g2


def minor_faults() -> int:
    """Minor page faults of this process so far (0 where getrusage is missing)."""
    return 0 if resource is None else resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float, float, float]:
    """Median and min wall time of `repeat` calls after a warm-up, the median CPU time (steadier
    than wall time on a loaded machine) and page faults per call."""
    fn()
    times, cpu = [], []
    faults = minor_faults()
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(times), min(times), statistics.median(cpu), (minor_faults() - faults) / repeat


def cases():
    x = rng.standard_normal(1_000_000)
    yield "np.sort 1e6 f64", jit(sort), sort, (x,)
    m = rng.standard_normal((10000, 4, 4))
    spd = m @ np.swapaxes(m, -1, -2) + 4 * np.eye(4)
    yield "cholesky 10000x4x4", jit(cholesky), cholesky, (spd,)
    yield "concatenate halves", jit(halves), halves, (m,)
    yield "a * 2 (10000,4,4)", jit(double), double, (m,)
    big = rng.standard_normal(10_000_000)
    yield "fused expr 1e7", jit(wave), wave, (big,)
    a4, b4 = rng.standard_normal(4), rng.standard_normal(4)
    yield "add 4 elements", jit(add), add, (a4, b4)
    w1, w2 = rng.standard_normal((64, 128)) * 0.1, rng.standard_normal(64) * 0.1
    xs, ys = rng.standard_normal((1024, 128)), rng.standard_normal(1024)
    per_example = vmap(grad(mlp_example_loss, argnums=(0, 1)), in_dims=(None, None, 0, 0))
    yield "MLP per-example grads", per_example, numpy_mlp_per_example, (w1, w2, xs, ys)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--case", default="", help="run only the cases whose name contains this")
    args = parser.parse_args()
    print(f"{'case':24} {'aotx median':>12} {'min':>8} {'cpu':>8} {'faults':>7} {'numpy median':>13} "
          f"{'min':>8} {'cpu':>8} {'faults':>7}   (ms; minor page faults per call)")
    for name, kernel, ref, operands in cases():
        if args.case not in name:
            continue
        # aotx first: freeing NumPy's large blocks would raise glibc's mmap threshold
        med, low, cpu, faults = timed(lambda: kernel(*operands), args.repeat)
        got, want = kernel(*operands), ref(*operands)
        for g, w in zip(*(t if isinstance(t, tuple) else (t,) for t in (got, want))):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)
        nmed, nlow, ncpu, nfaults = timed(lambda: ref(*operands), args.repeat)
        print(f"{name:24} {1e3 * med:12.4f} {1e3 * low:8.4f} {1e3 * cpu:8.4f} {faults:7.0f} {1e3 * nmed:13.4f} "
              f"{1e3 * nlow:8.4f} {1e3 * ncpu:8.4f} {nfaults:7.0f}")


if __name__ == "__main__":
    main()
