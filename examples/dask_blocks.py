"""Dask: a compiled kernel on the blocks of an array larger than one worker's chunk.

`jit(..., signature=...)` compiles one variant here, for every block length (the last block
is shorter). It is made in `main`, not at import: the workers import this module to find
`smooth_step`, and a kernel with a signature compiles when it is made. The kernel
pickles by value (its object code and manifest: docs/aot.md, "Pickling kernels"), so the
workers of a `dask.distributed.LocalCluster` (separate processes) run that code without
compiling it again: each reports 0 LLVM compilations. Needs `pip install "dask[distributed]"`.

# run: python examples/dask_blocks.py
"""
import time

import numpy as np

import compiler
from compiler import jit


def smooth_step(x):
    return np.exp(-x * x) * np.sin(3.0 * x) + 0.5 * x * np.tanh(x)


def make_kernel():
    """One compiled variant for every length n."""
    return jit(smooth_step, signature="f64[n] -> f64[n]")


def worker_compilations(client):
    """LLVM compilations per worker process, by address."""
    return client.run(lambda: compiler.diagnostics()["llvm_compilations"])


def blocks(kernel, n, chunk):
    """x as a Dask array of `chunk`-sized blocks, and the kernel mapped over its blocks."""
    import dask.array as da
    x = da.linspace(-4.0, 4.0, n, chunks=chunk)
    return x, x.map_blocks(kernel, dtype=np.float64)


def best_time(fn, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main(n=16_500_000, chunk=2_000_000, workers=2):
    from dask.distributed import Client, LocalCluster
    fast = make_kernel()
    x = np.linspace(-4.0, 4.0, n)
    print(f"x: {n:,} float64 ({x.nbytes / 1e6:.0f} MB) in blocks of {chunk:,} "
          f"({-(-n // chunk)} blocks, {workers} worker processes)")
    t_numpy = best_time(lambda: smooth_step(x))
    t_fast = best_time(lambda: fast(x))
    print(f"one process:  NumPy {t_numpy * 1e3:8.1f} ms   compiled {t_fast * 1e3:8.1f} ms "
          f"({t_numpy / t_fast:.1f}x)")
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        xs, ys = blocks(fast, n, chunk)
        got = ys.compute()                 # ships the kernel once per worker
        expected = smooth_step(xs.compute())
        print(f"max |dask - NumPy| = {np.max(np.abs(got - expected)):.2e}")
        t_sum = best_time(lambda: ys.sum().compute())
        t_all = best_time(lambda: ys.compute())
        t_numpy_blocks = best_time(lambda: xs.map_blocks(smooth_step, dtype=np.float64).sum().compute())
        print(f"{workers} workers: compiled blocks, summed on the workers {t_sum * 1e3:8.1f} ms; "
              f"gathered to this process {t_all * 1e3:8.1f} ms; NumPy blocks, summed "
              f"{t_numpy_blocks * 1e3:8.1f} ms")
        print(f"LLVM compilations in the workers: {worker_compilations(client)}")


if __name__ == "__main__":
    main()
