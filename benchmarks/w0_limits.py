"""W0, the machine's limits: STREAM triad ``a = b + s*c`` on 2e7 float64 (memory-bound; the
note gives GB/s counting 24 bytes per element) and an FMA-bound loop (32 dependent multiply-adds
per element on 64 Ki float64 that stay in cache; the note gives GFLOP/s)."""
from __future__ import annotations

from typing import Iterator

import numpy as np

from compiler import jit
from harness import Case, Config, Skip, jax_module, module, torch_module

STEPS = 32


def triad(b, c, s):
    return b + s * c


def triad_into(a, b, c, s):
    a[:] = b + s * c


def fma_chain(x):
    y = x
    for _ in range(STEPS):
        y = y * x + 0.5
    return y


def _numba_fma() -> object:
    numba = module("numba")

    @numba.njit(fastmath=False)
    def fma_loop(x):
        out = np.empty_like(x)
        for i in range(x.size):
            v, y = x[i], x[i]
            for _ in range(STEPS):
                y = y * v + 0.5
            out[i] = y
        return out
    return fma_loop


def cases(cfg: Config) -> Iterator[Case]:
    n = cfg.size(20_000_000, 1000)
    rng = np.random.default_rng(0)
    b, c, s = rng.standard_normal(n), rng.standard_normal(n), 3.0

    def aotx_into():
        k, a = jit(triad_into), np.empty(n)
        return lambda: (k(a, b, c, s), a)[1]

    def numpy_into():
        a = np.empty(n)
        return lambda: (np.multiply(c, s, out=a), np.add(a, b, out=a))[1]

    def numba_into():
        nb = module("numba").njit(triad_into)
        a = np.empty(n)
        return lambda: (nb(a, b, c, s), a)[1]

    def torch_into():
        torch = torch_module(cfg)
        tb, tc, ta = torch.from_numpy(b), torch.from_numpy(c), torch.empty(n, dtype=torch.float64)
        return lambda: torch.add(tb, tc, alpha=s, out=ta)

    note = "GB/s = 24 bytes x n / time"
    yield Case(f"triad into a, n={n:.0e}", {"aotx": aotx_into, "numpy": numpy_into, "numba": numba_into,
                                            "torch": torch_into}, per=n, rtol=1e-12, atol=1e-12, note=note)

    def aotx_new():
        k = jit(triad)
        return lambda: k(b, c, s)

    def numba_new():
        nb = module("numba").njit(triad)
        return lambda: nb(b, c, s)

    def torch_new():
        torch = torch_module(cfg)
        tb, tc = torch.from_numpy(b), torch.from_numpy(c)
        return lambda: torch.add(tb, tc, alpha=s)

    yield Case(f"triad new output, n={n:.0e}", {"aotx": aotx_new, "numpy": lambda: (lambda: triad(b, c, s)),
                                                "numba": numba_new, "torch": torch_new}, per=n, rtol=1e-12, atol=1e-12,
               note=note)

    m = cfg.size(65536, 256)
    x = rng.uniform(-0.9, 0.9, m)

    def aotx_fma():
        k = jit(fma_chain)
        return lambda: k(x)

    def numba_fma():
        nb = _numba_fma()
        return lambda: nb(x)

    def torch_compile_fma():
        if cfg.tiny:
            raise Skip("torch.compile skipped with --tiny (compile time)")
        torch = torch_module(cfg)
        torch._dynamo.reset()                     # a fresh cache: no fallback at the recompile limit
        tf, tx = torch.compile(fma_chain), torch.from_numpy(x)
        return lambda: tf(tx)

    def jax_fma():
        jax = jax_module()
        jf = jax.jit(fma_chain)
        return lambda: jf(x).block_until_ready()

    yield Case(f"FMA chain ({STEPS} per element), n={m}", {
        "aotx": aotx_fma, "numpy": lambda: (lambda: fma_chain(x)), "numba": numba_fma,
        "jax": jax_fma, "torch.compile": torch_compile_fma}, per=m, rtol=1e-12,
        note=f"GFLOP/s = {2 * STEPS} x n / time")
