"""Complex lowering: every complex value becomes a pair of real values (re, im).

Runs in ``optimize_ir``, after every transform, so that vmap and AD see complex ops
as they see real ones and the backend sees (almost) only real ones. Each op with a
complex operand or result is rewritten by its primitive's ``complex_rule``
(compiler/primitives/complex_ops.py); the fused real code is then vectorized as any
other. Complex values remain only where memory holds them: a block's arguments are
read with ``real``/``imag`` (two loads at stride 2 from the interleaved buffer), its
complex results are written with ``complex`` (two stores), and a control op (cond,
while, for, chunked) with complex operands keeps them, its regions lowered the same
way inside.

    func @f(%x: c128[n], %y: c128[n]) -> (c128[n]) {
      %0 = mul(%x, %y) : c128[n]
      return %0
    }
    ->
    func @f(%x: c128[n], %y: c128[n]) -> (c128[n]) {
      %0 = real(%x) : f64[n]           %1 = imag(%x) : f64[n]
      %2 = real(%y) : f64[n]           %3 = imag(%y) : f64[n]
      %4 = sub(mul(%0, %2), mul(%1, %3)) : f64[n]
      %5 = add(mul(%0, %3), mul(%1, %2)) : f64[n]
      %6 = complex(%4, %5) : c128[n]
      return %6
    }
"""
from __future__ import annotations

from typing import Any, Union

from compiler.ir.builder import Builder
from compiler.ir.core import Block, Function, Op, Value
from compiler.ir.primitive import CONTROL
from compiler.ir.types import is_complex
from compiler.primitives import ops

Pair = tuple[Value, Value]
Lowered = Union[Value, Pair]


def lower_complex(fn: Function) -> Function:
    """`fn` with no complex arithmetic left (a new function; `fn` is unchanged)."""
    if not _has_complex(fn.body):
        return fn
    return Function(fn.name, _lower_block(fn.body), list(fn.arg_names))


def _has_complex(block: Block) -> bool:
    values = list(block.args) + [r for op in block.walk() for r in op.results]
    values += [a for op in block.walk() for region in op.regions for a in region.args]
    return any(is_complex(v.dtype) for v in values)


def _lower_block(block: Block) -> Block:
    out = Block(args=list(block.args))
    b = Builder(out)
    env: dict[Value, Lowered] = {}
    whole: dict[Pair, Value] = {}        # pairs read from a complex value: pack to that value
    for a in block.args:
        env[a] = _split(b, a, whole) if is_complex(a.dtype) else a
    for op in block.ops:
        with b.at(op.loc):
            results = _lower_op(b, op, [env[v] for v in op.operands], whole)
        env.update(zip(op.results, results))
    with b.at(None):
        out.results = [_pack(b, env[v], whole) for v in block.results]
    return out


def _split(b: Builder, v: Value, whole: dict[Pair, Value]) -> Pair:
    pair = (ops.real(b, v), ops.imag(b, v))
    whole[pair] = v
    return pair


def _pack(b: Builder, x: Lowered, whole: dict[Pair, Value]) -> Value:
    if not isinstance(x, tuple):
        return x
    if x in whole:
        return whole[x]
    re, im = x        # the parts of one complex value (a complex dot_general's result): that value
    if re.op is not None and im.op is not None and re.op.prim is ops.real_p and im.op.prim is ops.imag_p \
            and re.op.operands[0] is im.op.operands[0]:
        return re.op.operands[0]
    return ops.complex_(b, re, im)


def _lower_op(b: Builder, op: Op, args: list[Lowered], whole: dict[Pair, Value]) -> list[Lowered]:
    touches = any(isinstance(a, tuple) for a in args) or any(is_complex(r.dtype) for r in op.results)
    if op.prim.kind == CONTROL or op.regions:
        regions = [_lower_block(r) if _has_complex(r) else r for r in op.regions]
        operands = [_pack(b, a, whole) for a in args]
        results = b.emit(op.prim, operands, op.params, regions)
        return [_split(b, r, whole) if is_complex(r.dtype) else r for r in results]
    if not touches:
        if all(a is v for a, v in zip(args, op.operands)):
            b.block.ops.append(op)
            return list(op.results)
        return list(b.emit(op.prim, [a for a in args if not isinstance(a, tuple)], op.params))
    rule: Any = op.prim.complex_rule
    if rule is None:
        raise AssertionError(f"{op.prim.name} has no complex rule (primitives/complex_ops.py); "
                             f"the frontend should have refused it")
    return list(rule(b, op, args))
