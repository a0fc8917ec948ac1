"""The verifier: SSA dominance, types against shape rules, region signatures,
and a source location on every op. Runs between pipeline stages.

A failure raises :class:`VerifyError` whose message shows the ops around
the offending one.
"""
from __future__ import annotations

from compiler.ir.core import Block, Function, Op, Value
from compiler.ir.printer import format_function


class VerifyError(AssertionError):
    """The IR is malformed: a compiler bug, never a user error."""


def verify(fn: Function) -> None:
    try:
        _verify_block(fn.body, set())
    except VerifyError as e:
        raise VerifyError(f"{e}\n--- in ---\n{format_function(fn, with_locs=True)}") from None


def _verify_block(block: Block, outer: set[Value]) -> None:
    # regions are isolated: only the block's own arguments and definitions are visible
    defined: set[Value] = set(block.args)
    for op in block.ops:
        _verify_op(op, defined)
        defined.update(op.results)
    for r in block.results:
        if r not in defined:
            raise VerifyError(f"yielded value {r!r} is not defined in its block")


def _verify_op(op: Op, defined: set[Value]) -> None:
    for i, v in enumerate(op.operands):
        if v not in defined:
            raise VerifyError(f"{op.prim.name} at {op.loc}: operand {i} ({v!r}) is used before "
                              f"it is defined or comes from outside the region")
    if op.loc is None or not op.loc.file:
        raise VerifyError(f"{op.prim.name}: op without a source location")
    for region in op.regions:
        _verify_block(region, defined)
    try:
        expected = op.prim.abstract_eval(tuple(v.type for v in op.operands), op.params, op.regions)
    except TypeError as e:
        raise VerifyError(f"{op.prim.name} at {op.loc}: shape rule rejects the operands: {e}") from None
    actual = tuple(r.type for r in op.results)
    if tuple(expected) != actual:
        raise VerifyError(f"{op.prim.name} at {op.loc}: result types {actual} differ from "
                          f"the shape rule's {tuple(expected)}")
