"""Helpers for the matrix primitives (factorizations, solves, eigensolvers, sorts).

A matrix primitive takes stacks ``[..., m, n]``: the leading axes are a batch that every
operand shares (the frontend broadcasts them first, as NumPy does), so that its vmap
rule only moves the batch axis to the front (`batch_rule`) and its decomposition
works on the whole stack at once. Rules and decompositions build IR with these:

    l = entries(b, a)                 # l[i][j] is a[..., i, j], a batch-shaped value
    rows[i][j] = ops.div(b, ..., l[j][j])
    out = assemble(b, rows)           # back to [..., m, n]

Unrolled over a small static matrix, the entries are batch-shaped values, so the
generated code is elementwise across the batch: it fuses and vectorizes as any
elementwise expression.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from compiler.ir.builder import Builder
from compiler.ir.core import Op, Value
from compiler.primitives import ops
from compiler.primitives.batching import batched_at, reemit


def batch_rule(b: Builder, op: Op, args: list[Value], bdims: list[int | None], size: Any) -> tuple:
    """vmap of a primitive over stacks: the batch axis becomes the first stacked axis of
    every operand (an unbatched operand is broadcast, which fuses), results too."""
    front = [batched_at(b, a, d, 0, size) for a, d in zip(args, bdims)]
    return reemit(b, op, front), [0] * len(op.results)


def batch_shape(x: Value, core: int = 2) -> tuple:
    """The stacked axes of `x` (all but the last `core`)."""
    return tuple(x.type.shape[:x.type.ndim - core])


def mT(b: Builder, x: Value) -> Value:
    """The last two axes swapped."""
    n = x.type.ndim
    return ops.transpose(b, x, list(range(n - 2)) + [n - 1, n - 2])


def mH(b: Builder, x: Value) -> Value:
    """The conjugate transpose of each matrix."""
    return ops.conj_if_complex(b, mT(b, x))


def matmul(b: Builder, x: Value, y: Value) -> Value:
    """x @ y for stacks with the same batch shape ([..., m, k] @ [..., k, n])."""
    nb = x.type.ndim - 2
    batch = tuple(range(nb))
    return ops.dot_general(b, x, y, (((nb + 1,), (nb,)), (batch, batch)))


def entries(b: Builder, x: Value) -> list[list[Value]]:
    """``x[..., i, j]`` for every i, j of a static [..., m, n] stack, each batch-shaped."""
    *batch, m, n = x.type.shape
    if not (isinstance(m, int) and isinstance(n, int)):
        raise ValueError(f"entries: {x.type} is not a stack of static matrices")
    nb = len(batch)
    out = []
    for i in range(m):
        row = []
        for j in range(n):
            s = ops.slice_(b, x, [0] * nb + [i, j], list(batch) + [i + 1, j + 1])
            row.append(ops.reshape(b, s, tuple(batch)))
        out.append(row)
    return out


def assemble(b: Builder, rows: Sequence[Sequence[Value]]) -> Value:
    """The [..., m, n] stack whose entry i, j is ``rows[i][j]`` (batch-shaped values)."""
    batch = tuple(rows[0][0].type.shape)
    m, n = len(rows), len(rows[0])
    flat = [ops.reshape(b, v, batch + (1,)) for row in rows for v in row]
    whole = flat[0] if len(flat) == 1 else ops.concatenate(b, flat, len(batch))
    return ops.reshape(b, whole, batch + (m, n))


def eye(b: Builder, like: Value) -> Value:
    """Identity matrices of `like`'s type ([..., n, n], broadcast over the batch)."""
    shape, nb = tuple(like.type.shape), like.type.ndim - 2
    same = ops.eq(b, ops.iota(b, np.int64, shape, nb), ops.iota(b, np.int64, shape, nb + 1))
    return ops.convert(b, same, like.type.dtype)
