"""vmap as an IR-to-IR pass: every op is re-emitted through its primitive's
batching rule (see primitives/batching.py for the rule signature).

    func @f(%x: f64[3]) -> (f64[]) { %0 = reduce_sum(%x) {axes=(0,)} ... }
    vmap_function(f, in_dims=[0], out_dims=[0], size=Sym("b"))
    func @f(%x: f64[b, 3]) -> (f64[b]) { %0 = reduce_sum(%x) {axes=(1,)} ... }

Unbatched values stay unbatched (ops on them are copied unchanged); batch
axes move only when a rule needs them somewhere else.
"""
from __future__ import annotations

import contextvars
from typing import Any, Sequence

from compiler.errors import TransformArgumentError, UnsupportedError
from compiler.ir.builder import Builder, new_block
from compiler.ir.core import Block, Function, Value
from compiler.ir.dims import Dim
from compiler.ir.types import TensorType
from compiler.primitives.batching import batched_at, move_axis

BDim = "int | None"

#: the randomness flag of the vmap being applied (rules that call user code see it, e.g. the
#: ``info.randomness`` of a compiler.Function's vmap staticmethod)
CURRENT_RANDOMNESS: contextvars.ContextVar[str] = contextvars.ContextVar("aotx_vmap_randomness", default="error")


def batched_type(t: TensorType, bdim: int | None, size: Dim) -> TensorType:
    if bdim is None:
        return t
    shape = list(t.shape)
    shape.insert(bdim, size)
    return t.with_shape(tuple(shape))


def clone_block(block: Block) -> Block:
    """A deep copy of `block` (regions are never shared between functions)."""
    new = new_block([a.type for a in block.args], [a.hint for a in block.args])
    env: dict[Value, Value] = dict(zip(block.args, new.args))
    b = Builder(new)
    for op in block.ops:
        with b.at(op.loc):
            results = b.emit(op.prim, [env[v] for v in op.operands], op.params,
                             [clone_block(r) for r in op.regions])
        env.update(zip(op.results, results))
    new.results = [env[v] for v in block.results]
    return new


def vmap_block(block: Block, in_bdims: Sequence[int | None], size: Dim,
               out_bdims: Sequence[int | None] | None = None) -> tuple[Block, list[int | None]]:
    """Batch `block`; with `out_bdims`, results are moved (or broadcast) there."""
    new = new_block([batched_type(a.type, d, size) for a, d in zip(block.args, in_bdims)],
                    [a.hint for a in block.args])
    env: dict[Value, tuple[Value, int | None]] = {
        a: (n, d) for a, n, d in zip(block.args, new.args, in_bdims)}
    b = Builder(new)
    for op in block.ops:
        args = [env[v][0] for v in op.operands]
        bdims = [env[v][1] for v in op.operands]
        with b.at(op.loc):
            if op.prim.batch_always and op.prim.vmap_rule is not None:   # the rule decides even
                results, rdims = op.prim.vmap_rule(b, op, args, bdims, size)  # when nothing is batched
            elif all(d is None for d in bdims) and not op.regions:
                results, rdims = list(b.emit(op.prim, args, op.params)), [None] * len(op.results)
            elif all(d is None for d in bdims) and not _regions_batch(op):
                regions = [clone_block(r) for r in op.regions]
                results, rdims = list(b.emit(op.prim, args, op.params, regions)), [None] * len(op.results)
            else:
                if op.prim.vmap_rule is None:
                    raise UnsupportedError(f"vmap has no batching rule for {op.prim.name}", op.loc)
                results, rdims = op.prim.vmap_rule(b, op, args, bdims, size)
        env.update(zip(op.results, zip(results, rdims)))
    outs = [env[v] for v in block.results]
    if out_bdims is None:
        new.results = [v for v, _ in outs]
        return new, [d for _, d in outs]
    for w, r in zip(out_bdims, block.results):
        if w is not None and not -(r.type.ndim + 1) <= w <= r.type.ndim:
            raise TransformArgumentError(f"vmap: out_dim={w} is out of range for an output with {r.type.ndim} dims "
                             f"(batched: {r.type.ndim + 1}); expected {-(r.type.ndim + 1)} <= out_dim "
                             f"<= {r.type.ndim}")
    wants = [None if w is None else w % (r.type.ndim + 1) for w, r in zip(out_bdims, block.results)]
    with b.at(block.ops[-1].loc if block.ops else None):
        new.results = [v if want is None else batched_at(b, v, d, want, size)
                       for (v, d), want in zip(outs, wants)]
    return new, wants


def _regions_batch(op: Any) -> bool:
    return False     # regions only see their operands: unbatched operands stay unbatched


def vmap_function(fn: Function, in_dims: Sequence[int | None], out_dims: Sequence[int | None],
                  size: Dim, name: str | None = None) -> Function:
    """The batched version of `fn` (in_dims/out_dims are per flat argument/result)."""
    body, _ = vmap_block(fn.body, in_dims, size, out_dims)
    return Function(name or f"vmap_{fn.name}", body, list(fn.arg_names))


_ = move_axis
