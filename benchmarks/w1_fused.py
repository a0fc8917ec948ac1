"""W1: the fused transcendental expression ``exp(-x**2)*sin(3x) + 0.5*x*tanh(x)`` (run.py's
`wave`), float64 and float32, 1e3 to 1e8 elements."""
from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from compiler import jit
from harness import Case, Config, Skip, jax_module, module, torch_module
from run import wave


def factories(cfg: Config, x: np.ndarray, parallel: bool = False) -> dict[str, Any]:
    def aotx():
        k = jit(wave, parallel=parallel)
        return lambda: k(x)

    def numba():
        nb = module("numba").njit(wave, parallel=parallel)
        return lambda: nb(x)

    def jax():
        jf, jnp = jax_module().jit, module("jax.numpy")
        jf = jf(lambda v: jnp.exp(-v**2) * jnp.sin(3 * v) + 0.5 * v * jnp.tanh(v))
        return lambda: jf(x).block_until_ready()

    def torch():
        t = torch_module(cfg)
        tx = t.from_numpy(x)
        return lambda: t.exp(-tx**2) * t.sin(3 * tx) + 0.5 * tx * t.tanh(tx)

    def torch_compile():
        if cfg.tiny:
            raise Skip("torch.compile skipped with --tiny (compile time)")
        t = torch_module(cfg)
        t._dynamo.reset()              # one code object for every size: a fresh cache, or eager after 8
        tf = t.compile(lambda v: t.exp(-v**2) * t.sin(3 * v) + 0.5 * v * t.tanh(v), dynamic=False)
        tx = t.from_numpy(x)
        return lambda: tf(tx)

    return {"aotx": aotx, "numpy": lambda: (lambda: wave(x)), "numba": numba, "jax": jax, "torch": torch,
            "torch.compile": torch_compile}


def cases(cfg: Config) -> Iterator[Case]:
    sizes = cfg.size([10**3, 10**4, 10**5, 10**6, 10**7, 10**8], [1000, 4096])
    for dtype in (np.float64, np.float32):
        for n in sizes:
            x = np.linspace(-4, 4, n).astype(dtype)
            rtol = 1e-12 if dtype == np.float64 else 2e-5
            yield Case(f"wave {np.dtype(dtype).name} n={n:.0e}", factories(cfg, x), per=n, rtol=rtol, atol=rtol)
