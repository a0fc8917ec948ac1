"""np.sort and np.argsort in compiled code vs NumPy (and numba, JAX, torch when installed),
one thread: one row of 1e6 float64 and float32 values, 1000 rows of 1000 and 10,000 rows of 32
(axis -1).

Run: ``AOTX_DISABLE_CACHE=1 OPENBLAS_NUM_THREADS=1 python benchmarks/sorting.py [--cpu]``. Each
figure is the median and the minimum of 9 runs after a warm-up, in milliseconds of wall time
(``--cpu``: of the process's CPU time); the compiled kernels
allocate their outputs as NumPy does. Rows of up to 32 static entries sort with a sorting network
vectorized across rows; longer rows with a vectorized quicksort (the default kind of np.sort, on
AVX-512) or a radix sort per row (docs/sorting.md).
"""
from __future__ import annotations

import importlib.util
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

from compiler import jit

REPEAT = 9
#: ``--cpu``: the process's CPU time instead of wall time (robust to other processes taking
#: turns on a loaded machine; it does not see page faults' waits or a slower shared cache)
CLOCK = time.process_time if "--cpu" in sys.argv else time.perf_counter


def timings(fn: Callable[[], Any], repeat: int = REPEAT) -> tuple[float, float]:
    """(median, min) wall time in milliseconds of `repeat` calls after a warm-up call."""
    fn()
    times = []
    for _ in range(repeat):
        start = CLOCK()
        fn()
        times.append(CLOCK() - start)
    return statistics.median(times) * 1e3, min(times) * 1e3


def sort_last(x):
    return np.sort(x, axis=-1)


def sort_stable(x):
    return np.sort(x, axis=-1, kind="stable")


def argsort_last(x):
    return np.argsort(x, axis=-1)


def _others(fn_name: str) -> dict:
    """The same operation in the other libraries that are installed."""
    out = {}
    if importlib.util.find_spec("numba"):
        import numba
        if fn_name == "sort":
            out["numba"] = numba.njit(lambda x: np.sort(x))
        else:
            out["numba"] = numba.njit(lambda x: np.argsort(x, kind="mergesort"))
    if importlib.util.find_spec("jax"):
        import jax
        import jax.numpy as jnp
        f = jax.jit(jnp.sort if fn_name == "sort" else jnp.argsort)
        out["jax"] = lambda x: f(x).block_until_ready()
    if importlib.util.find_spec("torch"):
        import torch
        torch.set_num_threads(1)
        if fn_name == "sort":
            out["torch"] = lambda x: torch.sort(torch.from_numpy(x)).values
        else:
            out["torch"] = lambda x: torch.argsort(torch.from_numpy(x), stable=True)
    return out


def main() -> None:
    rng = np.random.default_rng(0)
    big = rng.normal(size=1_000_000)
    big32 = big.astype(np.float32)
    square = rng.normal(size=(1000, 1000))
    rows = rng.normal(size=(10_000, 32))
    sort, stable, arg = jit(sort_last), jit(sort_stable), jit(argsort_last)
    np_sort = lambda x: np.sort(x, axis=-1)                      # noqa: E731
    np_stable = lambda x: np.sort(x, axis=-1, kind="stable")     # noqa: E731
    np_arg = lambda x: np.argsort(x, axis=-1)                    # noqa: E731
    cases = [
        ("sort 1e6 f64", sort, np_sort, "sort", big),
        ("sort 1e6 f32", sort, np_sort, "sort", big32),
        ("sort stable 1e6 f64", stable, np_stable, "sort", big),
        ("argsort 1e6 f64", arg, np_arg, "argsort", big),
        ("argsort 1e6 f32", arg, np_arg, "argsort", big32),
        ("sort 1000x1000", sort, np_sort, "sort", square),
        ("argsort 1000x1000", arg, np_arg, "argsort", square),
        ("sort 10000x32", sort, np_sort, "sort", rows),
        ("sort stable 10000x32", stable, np_stable, "sort", rows),
        ("argsort 10000x32", arg, np_arg, "argsort", rows),
    ]
    print(f"{'case (ms, median/min)':22s} {'aotx':>13s} {'numpy':>13s} {'speedup':>8s}   others")
    for name, kernel, ref, kind, x in cases:
        assert np.array_equal(kernel(x), ref(x)) or kind == "argsort"
        med_k, min_k = timings(lambda: kernel(x))
        med_np, min_np = timings(lambda: ref(x))
        extra = []
        for lib, fn in _others(kind).items():
            if lib == "numba" and x.ndim > 1:
                continue
            extra.append(f"{lib} {timings(lambda: fn(x))[0]:.2f}")
        print(f"{name:22s} {med_k:6.2f}/{min_k:6.2f} {med_np:6.2f}/{min_np:6.2f} "
              f"{med_np / med_k:7.2f}x   {', '.join(extra)}", flush=True)


if __name__ == "__main__":
    main()
