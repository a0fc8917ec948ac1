"""W2: row-wise logsumexp of a 4096x1024 float64 matrix."""
from __future__ import annotations

from typing import Iterator

import numpy as np

from compiler import jit
from harness import Case, Config, Skip, jax_module, module, torch_module


def logsumexp_rows(x):
    m = np.max(x, axis=1, keepdims=True)
    return np.log(np.sum(np.exp(x - m), axis=1)) + m[:, 0]


def _numba_lse() -> object:
    numba = module("numba")

    @numba.njit
    def lse(x):
        out = np.empty(x.shape[0])
        for i in range(x.shape[0]):
            m = x[i, 0]
            for j in range(x.shape[1]):
                m = max(m, x[i, j])
            s = 0.0
            for j in range(x.shape[1]):
                s += np.exp(x[i, j] - m)
            out[i] = np.log(s) + m
        return out
    return lse


def cases(cfg: Config) -> Iterator[Case]:
    rows, cols = cfg.size((4096, 1024), (64, 32))
    x = np.random.default_rng(0).standard_normal((rows, cols)) * 4

    def aotx():
        k = jit(logsumexp_rows)
        return lambda: k(x)

    def numba():
        nb = _numba_lse()
        return lambda: nb(x)

    def jax():
        jf = jax_module().jit(module("jax.scipy.special").logsumexp, static_argnames="axis")
        return lambda: jf(x, axis=1).block_until_ready()

    def torch():
        t = torch_module(cfg)
        tx = t.from_numpy(x)
        return lambda: t.logsumexp(tx, 1)

    def torch_compile():
        if cfg.tiny:
            raise Skip("torch.compile skipped with --tiny (compile time)")
        t = torch_module(cfg)
        t._dynamo.reset()
        tf, tx = t.compile(lambda v: t.logsumexp(v, 1), dynamic=False), t.from_numpy(x)
        return lambda: tf(tx)

    yield Case(f"logsumexp rows {rows}x{cols}", {
        "aotx": aotx, "numpy": lambda: (lambda: logsumexp_rows(x)), "numba": numba, "jax": jax,
        "torch": torch, "torch.compile": torch_compile}, per=rows * cols, rtol=1e-12)
