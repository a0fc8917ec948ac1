"""Lowering of structured control flow: cond becomes a branch, while a loop.

Region arguments and results live in buffers: a cond writes each branch's
results into the op's result buffers; a loop keeps the carried values in the
op's result buffers, and `carries.lower_carried_body` (shared by every loop)
emits one iteration of the body: loop invariants pass through, arrays the body
updates a window at a time are updated in place, other values are computed into
temporaries and copied back.
"""
from __future__ import annotations

from typing import Any

from compiler.backend.buffers import Buffer
from compiler.backend.loops import lower_for
from compiler.backend.carries import (COPY, cond_in_place, enter_loop, exit_loop, lower_carried_body,
                                      plan_block)
from compiler.ir import dims
from compiler.ir.core import Op
from compiler.ir.types import BOOL
from compiler.primitives import ops
from compiler.primitives.control import chunk_counts


def _truth(cg: Any, v: Any) -> Any:
    x = cg.read(v, [cg.index(0)] * v.type.ndim)
    return cg.cast(x, v.dtype, BOOL)


def lower(cg: Any, op: Op) -> None:
    if op.prim not in LOWERINGS:
        raise AssertionError(f"no control lowering for {op.prim.name}")
    LOWERINGS[op.prim](cg, op)


def _window(cg: Any, buf: Any, start: Any, n: Any) -> Any:
    """Rows [start, start + n) of a buffer whose axis 0 is the batch: no copy."""
    row = cg.dim(dims.product(buf.shape[1:]))
    ptr = cg.b.gep(buf.ptr, [cg.b.mul(start, row)], inbounds=True)
    return Buffer(ptr, buf.dtype, (n,) + tuple(buf.shape[1:]))


def _lower_chunked(cg: Any, op: Op) -> None:
    """Full chunks in a loop, then the tail: region buffers are windows into the
    operands and results, so only the region's own temporaries scale with the chunk."""
    chunk, batched = op.params["chunk"], op.params["batched"]
    n_full, tail = chunk_counts(op.params["size"], chunk)
    ins = [cg.buffers[v] for v in op.operands]
    outs = [cg.buffers[r] for r in op.results]

    def run(region: Any, start: Any, n: Any) -> None:
        args = [_window(cg, buf, start, n) if bt else buf for buf, bt in zip(ins, batched)]
        cg._cache.append({})
        cg.lower_block(region, args, [_window(cg, buf, start, n) for buf in outs])
        cg._cache.pop()

    if n_full != 0:                      # a region that never runs is not generated
        with cg.loop(cg.dim(n_full)) as c:
            run(op.regions[0], cg.b.mul(c, cg.index(chunk)), chunk)
    if tail != 0:
        run(op.regions[1], cg.b.mul(cg.dim(n_full), cg.index(chunk)), tail)


def _lower_cond(cg: Any, op: Op) -> None:
    pred, *operands = op.operands
    args = [cg.buffers[v] for v in operands]
    outs = [cg.buffers[r] for r in op.results]
    b = cg.b
    then_bb = cg.fn.append_basic_block("cond.then")
    else_bb = cg.fn.append_basic_block("cond.else")
    join_bb = cg.fn.append_basic_block("cond.join")
    b.cbranch(_truth(cg, pred), then_bb, else_bb)
    pairs = cond_in_place(cg, op)        # a link of a loop's in-place chain
    for region, bb in zip(op.regions, (then_bb, else_bb)):
        b.position_at_end(bb)
        cg._cache.append({})
        if pairs:
            plan = plan_block(region, pairs)
            assert COPY not in plan.modes, "the enclosing loop's plan checked every branch"
            assign = {v: outs[s] for (_, s), chain in zip(pairs, plan.chains) for v in chain}
            cg.lower_block(region, args, outs, assign=assign, force=plan.force)
        else:
            cg.lower_block(region, args, outs)
        cg._cache.pop()
        b.branch(join_bb)
    b.position_at_end(join_bb)


def _lower_while(cg: Any, op: Op) -> None:
    cond_block, body = op.regions
    carried = enter_loop(cg, op, op.operands, body)
    b = cg.b
    flag = cg.allocate(cond_block.results[0])
    header = cg.fn.append_basic_block("while.cond")
    body_bb = cg.fn.append_basic_block("while.body")
    exit_bb = cg.fn.append_basic_block("while.exit")
    b.branch(header)
    b.position_at_end(header)
    cg._cache.append({})
    cg.lower_block(cond_block, carried, [flag])
    cg._cache.pop()
    t = cond_block.results[0].type
    value = cg.load(flag, [cg.index(0)] * t.ndim)
    b.cbranch(cg.cast(value, t.dtype, BOOL), body_bb, exit_bb)
    b.position_at_end(body_bb)
    lower_carried_body(cg, body, carried)
    b.branch(header)
    b.position_at_end(exit_bb)
    exit_loop(cg, op, carried)


LOWERINGS = {ops.cond_p: _lower_cond, ops.while_p: _lower_while, ops.chunked_p: _lower_chunked,
             ops.for_p: lower_for}
