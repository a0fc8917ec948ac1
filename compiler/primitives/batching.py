"""Helpers for batching rules (vmap), shared by the primitive families.

A batching rule has the signature::

    rule(b: Builder, op: Op, args: list[Value], bdims: list[int | None], size: Dim)
        -> (results: list[Value], result_bdims: list[int | None])

where ``bdims[i]`` is the axis of ``args[i]`` that is the batch axis (None:
not batched) and ``size`` is the batch size. Rules emit IR with the builder,
using the same primitives, so batched code can be transformed again.
"""
from __future__ import annotations

from typing import Any, Sequence

from compiler.ir.builder import Builder, new_block
from compiler.ir.core import Op, Value
from compiler.primitives import ops, regions

BDim = "int | None"


def move_axis(b: Any, v: Value, src: int, dst: int) -> Value:
    """Move axis `src` of `v` to position `dst` (a transpose, or nothing)."""
    perm = [i for i in range(v.type.ndim) if i != src]
    perm.insert(dst, src)
    return ops.transpose(b, v, perm)


def batched_at(b: Any, v: Value, bdim: int | None, dst: int, size: Any) -> Value:
    """`v` with its batch axis at `dst`, broadcasting an unbatched value (a cheap,
    fused index remap: the broadcast copy is never materialized)."""
    if bdim is not None:
        return move_axis(b, v, bdim, dst)
    shape = list(v.type.shape)
    shape.insert(dst, size)
    bd = tuple(i if i < dst else i + 1 for i in range(v.type.ndim))
    return ops.broadcast_in_dim(b, v, shape, bd)


def first_bdim(bdims: Sequence[int | None]) -> int:
    return next(d for d in bdims if d is not None)


def reemit(b: Any, op: Op, args: Sequence[Value], **param_updates: Any) -> list[Value]:
    """Emit `op`'s primitive on new operands with updated params."""
    params = {**op.params, **param_updates}
    return list(b.emit(op.prim, list(args), params, op.regions))


# ---- family rules ------------------------------------------------------------------

def elementwise_rule(b: Any, op: Op, args: list[Value], bdims: list[int | None], size: Any) -> tuple:
    """All operands batched at one axis (the first batched operand's), outputs too."""
    dst = first_bdim(bdims)
    moved = [batched_at(b, a, d, dst, size) for a, d in zip(args, bdims)]
    return reemit(b, op, moved), [dst] * len(op.results)


def to_front_rule(build: Any) -> Any:
    """A rule that moves the batch axis of every operand to 0 and then calls
    ``build(b, op, args, size) -> results`` with batch-leading operands."""

    def rule(b: Any, op: Op, args: list[Value], bdims: list[int | None], size: Any) -> tuple:
        front = [batched_at(b, a, d, 0, size) for a, d in zip(args, bdims)]
        results = build(b, op, front, size)
        return results, [0] * len(results)
    return rule


def shift_axes(axes: Sequence[int], bdim: int) -> tuple[int, ...]:
    """Operand axes of the unbatched op, as axes of the batched operand."""
    return tuple(a if a < bdim else a + 1 for a in axes)


def inline_block(b: Any, block: Any, args: Sequence[Value]) -> list[Value]:
    """Emit a copy of `block`'s ops at the builder, with its arguments bound to `args`."""
    env: dict[Value, Value] = dict(zip(block.args, args))
    for op in block.ops:
        with b.at(op.loc):
            results = b.emit(op.prim, [env[v] for v in op.operands], op.params, op.regions)
        env.update(zip(op.results, results))
    return [env[v] for v in block.results]


def rule_by_decomposition(decompose: Any) -> Any:
    """A batching rule that writes the op with other primitives (unbatched, through
    ``decompose(b, op, args) -> results``) and batches that with the vmap driver."""

    def rule(b: Any, op: Op, args: list[Value], bdims: list[int | None], size: Any) -> tuple:
        inner = new_block([v.type for v in op.operands])
        ib = Builder(inner, op.loc)
        inner.results = list(decompose(ib, op, inner.args))
        batched, out_bdims = regions.drivers().vmap_block(inner, bdims, size)
        return inline_block(b, batched, args), out_bdims
    return rule
