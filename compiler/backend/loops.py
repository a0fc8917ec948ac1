"""Lowering of the counted loop ``for`` (compiler/primitives/loops.py).

The carried values live in the op's result buffers. Each iteration stores the
index into the body's index argument and runs `carries.lower_carried_body`:
loop invariants pass through, arrays updated a window at a time are updated in
place, the rest is computed into temporaries and copied back.
"""
from __future__ import annotations

from typing import Any

from compiler.ir.core import Op
from compiler.backend.carries import enter_loop, exit_loop, lower_carried_body


def trip_count(cg: Any, lo: Any, hi: Any, step: int) -> Any:
    """len(range(lo, hi, step)) on int64 run-time values."""
    b = cg.b
    span = b.sub(hi, lo) if step > 0 else b.sub(lo, hi)
    k = abs(step)
    if k != 1:
        span = b.sdiv(b.add(span, cg.index(k - 1)), cg.index(k))
    return b.select(b.icmp_signed(">", span, cg.index(0)), span, cg.index(0))


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
    with cg.loop(n, unroll=False) as k:
        cg.store(index, [], b.add(lo, b.mul(k, cg.index(step))))
        lower_carried_body(cg, body, carried, [index])
    exit_loop(cg, op, carried)
