"""Lowering of the counted loop ``for`` (compiler/primitives/loops.py).

The carried values live in the op's result buffers. Each iteration stores the
index into the body's index argument, computes the body into temporaries and
copies them back; a value the body yields unchanged (a loop invariant) is
neither computed nor copied: its result buffer is its body argument.
"""
from __future__ import annotations

from typing import Any

from compiler.ir.core import Op
from compiler.primitives.loops import pass_through


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
    carried = [cg.buffers[r] for r in op.results]
    through = pass_through(body)
    for v, buf in zip(init, carried):
        cg.copy(cg.buffers[v], buf)
    lo = cg.load(cg.buffers[start], [])
    hi = cg.load(cg.buffers[stop], [])
    n = trip_count(cg, lo, hi, step)
    index = cg.allocate(body.args[0])
    temps = [buf if t else cg.allocate(r) for r, buf, t in zip(op.results, carried, through)]
    b = cg.b
    with cg.loop(n, unroll=False) as k:
        cg.store(index, [], b.add(lo, b.mul(k, cg.index(step))))
        cg.lower_block(body, [index, *carried], temps)
        for tmp, buf, t in zip(temps, carried, through):
            if not t:
                cg.copy(tmp, buf)
