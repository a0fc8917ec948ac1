"""The Builder: the one way ops are created.

It appends to an insertion block, stamps the current source location (set
with ``with builder.at(loc):``) and computes result types with the
primitive's shape rule, so an op with inconsistent types cannot be built.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator, Sequence

from compiler.ir.core import UNKNOWN_LOC, Block, Op, SourceLoc, Value
from compiler.ir.types import TensorType


class Builder:
    """Creates ops at an insertion point with a current source location."""

    def __init__(self, block: Block | None = None, loc: SourceLoc = UNKNOWN_LOC) -> None:
        self.block = block if block is not None else Block()
        self.loc = loc

    @contextlib.contextmanager
    def at(self, loc: SourceLoc | None) -> Iterator["Builder"]:
        """Ops built inside carry `loc` (None keeps the current one)."""
        saved = self.loc
        self.loc = loc if loc is not None else saved
        try:
            yield self
        finally:
            self.loc = saved

    @contextlib.contextmanager
    def inside(self, block: Block) -> Iterator[Block]:
        """Ops built inside are appended to `block` (a region being built)."""
        saved = self.block
        self.block = block
        try:
            yield block
        finally:
            self.block = saved

    def emit(self, prim: Any, operands: Sequence[Value], params: dict[str, Any] | None = None,
             regions: Sequence[Block] = ()) -> tuple[Value, ...]:
        """Append `prim(operands; params)` and return its results."""
        params = params or {}
        for v in operands:
            if not isinstance(v, Value):
                raise TypeError(f"{prim.name}: operand {v!r} is not an IR Value")
        types = prim.abstract_eval(tuple(v.type for v in operands), params, tuple(regions))
        op = Op(prim, tuple(operands), params, tuple(types), tuple(regions), self.loc)
        self.block.ops.append(op)
        return op.results

    def emit1(self, prim: Any, operands: Sequence[Value], params: dict[str, Any] | None = None,
              regions: Sequence[Block] = ()) -> Value:
        """Like :meth:`emit` for a single-result primitive."""
        (result,) = self.emit(prim, operands, params, regions)
        return result


def new_block(types: Sequence[TensorType], hints: Sequence[str] = ()) -> Block:
    """A block with fresh arguments of the given types."""
    hints = list(hints) + [""] * (len(types) - len(hints))
    return Block(args=[Value(t, None, i, h) for i, (t, h) in enumerate(zip(types, hints))])
