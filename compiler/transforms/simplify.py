"""Simplification: dead-code elimination and common-subexpression elimination.

    %0 = exp(%x) ; %1 = exp(%x) ; %2 = add(%0, %1) ; %3 = neg(%x) (unused)
    ->  %0 = exp(%x) ; %2 = add(%0, %0)

One pass over every block, regions included. It never changes what a
function computes (ops have no side effects), and it returns a new function:
the input is left as it is (ops that do not change are shared between the
two, ops whose operands change are rebuilt).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from compiler.ir.builder import Builder
from compiler.ir.core import Block, Function, Op, Value


def simplify(fn: Function) -> Function:
    """`fn` with repeated ops merged and unused ops removed, as a new function."""
    return Function(fn.name, _simplify_block(fn.body), list(fn.arg_names))


def _simplify_block(block: Block) -> Block:
    ops: list[Op] = []
    env: dict[Value, Value] = {}
    seen: dict[Any, Op] = {}
    for op in block.ops:
        operands = tuple(env.get(v, v) for v in op.operands)
        regions = tuple(_simplify_block(r) for r in op.regions)
        key = None if regions else _cse_key(op, operands)
        if key is not None and key in seen:
            env.update(zip(op.results, seen[key].results))
            continue
        new = rebuilt(op, operands, regions)
        ops.append(new)
        env.update(zip(op.results, new.results))
        if key is not None:
            seen[key] = new
    results = [env.get(v, v) for v in block.results]
    return Block(list(block.args), _dead_code(ops, results), results)


def rebuilt(op: Op, operands: Sequence[Value], regions: Sequence[Block]) -> Op:
    """`op` itself when its operands and regions are unchanged (ops are shared between
    functions, never mutated), else a new op with the new ones, not yet in any block."""
    if tuple(operands) == op.operands and tuple(regions) == op.regions:
        return op
    b = Builder(Block(), op.loc)
    b.emit(op.prim, operands, op.params, regions)
    return b.block.ops[0]


def _cse_key(op: Op, operands: tuple[Value, ...]) -> Any:
    key = (op.prim, operands, _key_param(op.params))
    try:
        hash(key)
    except TypeError:      # an unhashable param: the op is never merged
        return None
    return key


def _key_param(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return ("array", v.dtype.str, v.shape, v.tobytes()) if v.size <= 64 else ("array-id", id(v))
    if isinstance(v, (list, tuple)):
        return tuple(_key_param(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _key_param(x)) for k, x in v.items()))
    return v


def _dead_code(ops: list[Op], results: list[Value]) -> list[Op]:
    live: set[Value] = set(results)
    out: list[Op] = []
    for op in reversed(ops):
        if any(r in live for r in op.results) or op.prim.effects:
            live.update(op.operands)
            out.append(op)
    return out[::-1]
