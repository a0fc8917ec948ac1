"""Lowering of the counted loop ``for`` (compiler/primitives/loops.py).

The carried values live in the op's result buffers. Each iteration stores the
index into the body's index argument and runs `carries.lower_carried_body`:
loop invariants pass through, arrays updated a window at a time are updated in
place, the rest is computed into temporaries and copied back.
"""
from __future__ import annotations

import contextlib
from typing import Any

from compiler.ir.core import Block, Op
from compiler.backend.carries import enter_loop, exit_loop, lower_carried_body


def trip_count(cg: Any, lo: Any, hi: Any, step: int) -> Any:
    """len(range(lo, hi, step)) on int64 run-time values."""
    b = cg.b
    span = b.sub(hi, lo) if step > 0 else b.sub(lo, hi)
    k = abs(step)
    if k != 1:
        span = b.sdiv(b.add(span, cg.index(k - 1)), cg.index(k))
    return b.select(b.icmp_signed(">", span, cg.index(0)), span, cg.index(0))


#: a loop body of at least this many ops is emitted with its inner loops rolled (not unrolled by
#: LLVM): a large body is many short loops (the unrolled code of a chunk of a batch of small
#: matrices: one loop per entry and step, compiler/primitives/lu.py), whose unrolled copies
#: doubled the time LLVM takes to optimize and emit it and made no faster code
ROLLED_BODY_OPS = 64


def rolled_if_large(cg: Any, body: Block) -> Any:
    """`cg.rolled_code()` for a body of ROLLED_BODY_OPS ops or more, else nothing."""
    return cg.rolled_code() if len(body.ops) >= ROLLED_BODY_OPS else contextlib.nullcontext()


def lower_for(cg: Any, op: Op) -> None:
    start, stop, *init = op.operands
    (body,) = op.regions
    step = op.params["step"]
    carried = enter_loop(cg, op, init, body, 1)
    lo = cg.load(cg.buffers[start], [])
    hi = cg.load(cg.buffers[stop], [])
    n = trip_count(cg, lo, hi, step)
    index = cg.allocate(body.args[0])
    b = cg.b
    with cg.loop(n, unroll=False) as k, rolled_if_large(cg, body):
        cg.store(index, [], b.add(lo, b.mul(k, cg.index(step))))
        lower_carried_body(cg, body, carried, [index])
    exit_loop(cg, op, carried)
