"""np.sort and np.argsort in compiled code vs NumPy (and numba, JAX, torch when installed):
1e6 float64 values, and 10,000 rows of 32 (axis -1), one thread.

Run: ``PYTHONPATH=. python benchmarks/sorting_bench.py``. Each figure is the best of 7 runs
after a warm-up, in milliseconds; the compiled kernels allocate their outputs as NumPy does.
Rows of up to 32 static entries sort with a sorting network vectorized across rows; longer
rows with a radix sort per row (docs/sorting.md).
"""
from __future__ import annotations

import importlib.util

import numpy as np

from _timing import best  # noqa: E402  (benchmarks/ is the script's directory)
from compiler import jit


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
            out["torch"] = lambda x: torch.sort(torch.from_numpy(x), stable=True).values
        else:
            out["torch"] = lambda x: torch.argsort(torch.from_numpy(x), stable=True)
    return out


def main() -> None:
    rng = np.random.default_rng(0)
    big = rng.normal(size=1_000_000)
    rows = rng.normal(size=(10_000, 32))
    cases = [
        ("sort 1e6", jit(sort_last), lambda x: np.sort(x), "sort", big),
        ("sort stable 1e6", jit(sort_stable), lambda x: np.sort(x, kind="stable"), "sort", big),
        ("argsort 1e6", jit(argsort_last), lambda x: np.argsort(x), "argsort", big),
        ("sort 10000x32", jit(sort_last), lambda x: np.sort(x, axis=-1), "sort", rows),
        ("sort stable 10000x32", jit(sort_stable), lambda x: np.sort(x, axis=-1, kind="stable"),
         "sort", rows),
        ("argsort 10000x32", jit(argsort_last), lambda x: np.argsort(x, axis=-1), "argsort", rows),
    ]
    print(f"{'case':22s} {'aotx ms':>9s} {'numpy ms':>9s} {'speedup':>8s}   others (ms)")
    for name, kernel, ref, kind, x in cases:
        t_k = best(lambda: kernel(x))
        t_np = best(lambda: ref(x))
        extra = []
        for lib, fn in _others(kind).items():
            if lib == "numba" and x.ndim > 1:
                continue
            extra.append(f"{lib} {best(lambda: fn(x)) * 1e3:.2f}")
        print(f"{name:22s} {t_k * 1e3:9.2f} {t_np * 1e3:9.2f} {t_np / t_k:7.2f}x   {', '.join(extra)}")


if __name__ == "__main__":
    main()
