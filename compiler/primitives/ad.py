"""Helpers for differentiation rules, shared by the primitive families.

Two rules per differentiable primitive, both emitting IR with the builder
(so derivatives can be differentiated and batched again):

    jvp_rule(b, op, primals, tangents) -> out_tangents
    vjp_rule(b, op, primals, outs, cotangents) -> operand_cotangents

``primals``/``outs`` are the op's operand and result values in the function
being built; a tangent or cotangent of ``None`` is a symbolic zero (integer
and bool values only ever have symbolic zeros). Most elementwise primitives
declare just their partial derivatives and get both rules from
:func:`from_partials`.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence


from compiler.ir.core import Value
from compiler.ir.types import is_inexact
from compiler.primitives import ops

Partial = Callable[..., Value]     # (b, *primals, out) -> d out / d primal_i


def add_any(b: Any, x: Value | None, y: Value | None) -> Value | None:
    """Sum of two (possibly symbolic-zero) tangents or cotangents."""
    if x is None:
        return y
    if y is None:
        return x
    return ops.add(b, x, y)


def instantiate(b: Any, t: Value | None, like: Value) -> Value:
    """A symbolic zero made into real zeros of `like`'s type."""
    return ops.zeros_like(b, like) if t is None else t


def differentiable(v: Value) -> bool:
    return is_inexact(v.dtype)


def from_partials(*partials: Partial | None) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """(jvp_rule, vjp_rule) of an elementwise op from d out / d operand_i.

    For a complex (holomorphic) op the vjp multiplies by the conjugate partial: the
    cotangent convention of torch.func (docs/complex.md).

    ``partials[i](b, *primals, out)`` gives the partial derivative with respect to
    operand i (None: the op does not depend smoothly on that operand)."""

    def jvp(b: Any, op: Any, primals: list[Value], tangents: list[Value | None]) -> list[Value | None]:
        out = op_output(b, op, primals)
        total: Value | None = None
        for i, (t, d) in enumerate(zip(tangents, partials)):
            if t is None or d is None:
                continue
            total = add_any(b, total, ops.mul(b, t, d(b, *primals, out)))
        return [total]

    def vjp(b: Any, op: Any, primals: list[Value], outs: list[Value],
            cts: list[Value | None]) -> list[Value | None]:
        (ct,) = cts
        if ct is None:
            return [None] * len(primals)
        return [None if d is None or not differentiable(x)
                else ops.mul(b, ct, ops.conj_if_complex(b, d(b, *primals, outs[0])))
                for x, d in zip(primals, partials)]
    return jvp, vjp


def op_output(b: Any, op: Any, primals: Sequence[Value]) -> Value:
    """The op's result in the function being built (re-emitted on the new primals;
    CSE merges it with the primal computation)."""
    return b.emit1(op.prim, list(primals), op.params)


def linear(transpose: Callable[..., list[Value | None]]) -> dict[str, Any]:
    """The ``jvp_rule`` and ``vjp_rule`` of an op linear in all its operands, as slots for
    ``define``: the jvp applies the op itself to the (instantiated) tangents;
    ``transpose(b, op, primals, ct)`` gives the operand cotangents."""

    def jvp(b: Any, op: Any, primals: list[Value], tangents: list[Value | None]) -> list[Value | None]:
        if all(t is None for t in tangents):
            return [None]
        return [same_op(b, op, [instantiate(b, t, p) for t, p in zip(tangents, primals)])]

    def vjp(b: Any, op: Any, primals: list[Value], outs: list[Value], cts: list[Value | None]) -> list:
        if cts[0] is None:
            return [None] * len(primals)
        return transpose(b, op, primals, cts[0])
    return {"jvp_rule": jvp, "vjp_rule": vjp}


def same_op(b: Any, op: Any, args: list[Value], **params: Any) -> Value:
    return b.emit1(op.prim, args, {**op.params, **params})


def zero_rules() -> tuple[Any, Any]:
    """Rules of a piecewise-constant op (floor, sign, comparisons...): zero derivative."""
    return (lambda b, op, primals, tangents: [None] * len(op.results),
            lambda b, op, primals, outs, cts: [None] * len(primals))
