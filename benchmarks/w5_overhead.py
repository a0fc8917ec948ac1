"""W5: call overhead, adding two 4-element float64 arrays: into a new output, and into a given
output. aotx has no ``out=`` argument on a call (API.md); its "given output" case is a kernel
that writes the sum into an argument (``out[:] = a + b``), which aotx compiles with NumPy's
in-place semantics, as numba does. JAX arrays are immutable: JAX has no such case."""
from __future__ import annotations

from typing import Iterator

import numpy as np

from compiler import jit
from harness import Case, Config, Skip, jax_module, module, torch_module


def add(a, b):
    return a + b


def add_into(a, b, out):
    out[:] = a + b


def cases(cfg: Config) -> Iterator[Case]:
    a, b = np.arange(4.0), np.arange(4.0) + 0.5

    def aotx():
        k = jit(add)
        return lambda: k(a, b)

    def numba():
        nb = module("numba").njit(add)
        return lambda: nb(a, b)

    def jax():
        jf = jax_module().jit(add)
        return lambda: jf(a, b).block_until_ready()

    def torch():
        t = torch_module(cfg)
        ta, tb = t.from_numpy(a), t.from_numpy(b)
        return lambda: ta + tb

    yield Case("add 4 elements, new output", {"aotx": aotx, "numpy": lambda: (lambda: a + b), "numba": numba,
                                              "jax": jax, "torch": torch}, rtol=0)

    out = np.empty(4)

    def aotx_into():
        k = jit(add_into)
        return lambda: (k(a, b, out), out)[1]

    def numba_into():
        nb = module("numba").njit(add_into)
        return lambda: (nb(a, b, out), out)[1]

    def torch_into():
        t = torch_module(cfg)
        ta, tb, to = t.from_numpy(a), t.from_numpy(b), t.empty(4, dtype=t.float64)
        return lambda: t.add(ta, tb, out=to)

    def jax_into():
        raise Skip("JAX arrays are immutable: no output to write into")

    yield Case("add 4 elements, into a given output", {
        "aotx": aotx_into, "numpy": lambda: (lambda: np.add(a, b, out=out)), "numba": numba_into,
        "jax": jax_into, "torch": torch_into}, rtol=0,
        note="aotx: a kernel writing into its argument (no out= on a call)")
