"""aotx side by side with NumPy, numba, JAX and torch (whichever are installed).

    python benchmarks/run.py [--n 10000000] [--repeat 7]

Each case runs every available peer on the same inputs in one process and
prints ns/element and the ratio to aotx (>1 means the peer is slower).
Single-threaded: numba without parallel=True; JAX and torch are pinned to one
thread where they allow it.
"""
from __future__ import annotations

import argparse
import os
from typing import Any, Callable

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import numpy as np  # noqa: E402

from _timing import best  # noqa: E402  (benchmarks/ is the script's directory)
from compiler import jit  # noqa: E402


def wave(x):
    return np.exp(-x**2) * np.sin(3 * x) + 0.5 * x * np.tanh(x)




def peers(expr: Callable[..., Any]) -> dict[str, Callable[[np.ndarray], Any]]:
    out: dict[str, Callable[[np.ndarray], Any]] = {"aotx": jit(expr), "numpy": expr}
    try:
        import numba
        out["numba"] = numba.njit(expr)
    except ImportError:
        pass
    try:
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
        jf = jax.jit(lambda x: jnp.exp(-x**2) * jnp.sin(3 * x) + 0.5 * x * jnp.tanh(x))
        out["jax"] = lambda x: jf(x).block_until_ready()
    except ImportError:
        pass
    try:
        import torch
        torch.set_num_threads(1)
        tf = torch.compile(lambda x: torch.exp(-x**2) * torch.sin(3 * x) + 0.5 * x * torch.tanh(x))
        out["torch.compile"] = lambda x: tf(torch.from_numpy(x))
    except ImportError:
        pass
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(f"y = exp(-x**2)*sin(3*x) + 0.5*x*tanh(x), n = {args.n:,}, best of {args.repeat}")
    print(f"{'dtype':8} {'peer':14} {'ns/element':>11} {'vs aotx':>8}")
    for dtype in (np.float64, np.float32):
        x = np.linspace(-4, 4, args.n).astype(dtype)
        results = {}
        for name, fn in peers(wave).items():
            results[name] = best(lambda: fn(x), args.repeat) * 1e9 / args.n
        for name, ns in results.items():
            print(f"{np.dtype(dtype).name:8} {name:14} {ns:11.2f} {ns / results['aotx']:7.2f}x")


if __name__ == "__main__":
    main()
