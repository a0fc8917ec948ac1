"""Helpers for defining primitives: shape-rule checks and NumPy-reference results.

The Primitive record and the registry are IR concepts (compiler/ir/primitive.py);
each primitive is declared in ops.py and defined in its family module with
:func:`compiler.ir.primitive.define`.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from compiler.ir.types import TensorType

ShapeRule = Callable[..., "tuple[TensorType, ...]"]


class ShapeError(TypeError):
    """A shape rule rejected its operands (the frontend adds the user's location)."""


def check(cond: bool, message: str) -> None:
    if not cond:
        raise ShapeError(message)


def same_shape_rule(result_dtype: Callable[[tuple[np.dtype, ...], dict[str, Any]], np.dtype]) -> ShapeRule:
    """Shape rule of an elementwise op: operands share one shape."""

    def rule(in_types: tuple[TensorType, ...], params: dict[str, Any]) -> tuple[TensorType, ...]:
        shape = in_types[0].shape
        for t in in_types[1:]:
            check(t.shape == shape, f"elementwise operands must have equal shapes, got "
                                    f"{', '.join(str(t) for t in in_types)}")
        return (TensorType(result_dtype(tuple(t.dtype for t in in_types), params), shape),)

    return rule


def emit_while(fn: Any, b: Any, cond: Callable[[], Any], body: Callable[[], None]) -> None:
    """``while cond(): body()`` in LLVM function `fn` at builder `b` (hand-lowered kernels:
    sorting, run-time FFT plans): `cond` emits the test at the loop's head, `body` the
    iteration; the builder ends after the loop."""
    head = fn.append_basic_block("while")
    loop = fn.append_basic_block("while.body")
    done = fn.append_basic_block("while.end")
    b.branch(head)
    b.position_at_end(head)
    b.cbranch(cond(), loop, done)
    b.position_at_end(loop)
    body()
    b.branch(head)
    b.position_at_end(done)
