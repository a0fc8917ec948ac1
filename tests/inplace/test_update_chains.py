"""Slice assignments into a local array (`z = np.zeros(...); z[:, 0] = a; z[:, 1] = b`)
write where the array lives: each update of the chain takes its predecessor's buffer when
nothing else reads the predecessor (backend/codegen.py `_update_chains`). Every case against
NumPy, including the ones where the old value is still read and a copy is required."""
from __future__ import annotations

import numpy as np

from compiler import jit, vmap


def columns(x):
    n = x.shape[0]
    z = np.zeros((n, n, 3))
    z[:, :, 0] = x[:, None]
    z[:, :, 1] = x[None, :]
    z[:, :, 2] = x[:, None] * x[None, :]
    return z


def chain_then_reduce(x):
    z = np.ones((x.shape[0], 4))
    z[:, 0] = x
    z[:, 2] = x * x
    z[1:, 3] = x[:-1]
    return z.sum(axis=1)


def reads_previous(x):
    z = np.zeros(x.shape[0] + 1)
    z[1:] = x
    z[1:] = z[:-1] + z[1:]          # reads the old value: a copy is needed
    return z


def old_value_kept(x):
    z = np.zeros((3, x.shape[0]))
    z[0] = x
    old = z.copy()
    z[1] = old[0] * 2
    return z, old


def runtime_index_and_scatter(x, i, idx):
    z = np.zeros((4, x.shape[0]))
    z[i] = x
    z[:, idx] = -1.0
    z[2, ::2] = 7.0
    return z


def in_a_loop(x):
    out = np.zeros((x.shape[0], 2))
    for k in range(3):
        z = np.zeros((x.shape[0], 2))
        z[:, 0] = x * k
        z[:, 1] = x + k
        out = out + z
    return out


K = {f.__name__: jit(f) for f in (columns, chain_then_reduce, reads_previous, old_value_kept,
                                  runtime_index_and_scatter, in_a_loop)}


def _same(got, want):
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    else:
        np.testing.assert_array_equal(got, want)


def test_chains_against_numpy():
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 64):
        x = rng.standard_normal(n)
        for f in (columns, chain_then_reduce, reads_previous, old_value_kept, in_a_loop):
            _same(K[f.__name__](x), f(x))
        idx = np.array([0, n - 1])
        for i in (0, 3, -1):
            _same(K["runtime_index_and_scatter"](x, np.int64(i), idx),
                  runtime_index_and_scatter(x, np.int64(i), idx))


def test_chain_under_vmap():
    x = np.random.default_rng(1).standard_normal((5, 6))
    got = vmap(chain_then_reduce)(x)
    np.testing.assert_allclose(got, np.stack([chain_then_reduce(r) for r in x]), rtol=1e-15)


def test_a_chain_needs_one_buffer():
    """The three updates of a chain whose end is a temporary share one buffer: one
    allocation instead of one per update."""
    x = np.ones(100)
    llvm = K["chain_then_reduce"].lower(x).llvm
    assert llvm.count('call i8* @"malloc"') == 1
