"""Simplification: dead-code elimination and common-subexpression elimination.

    %0 = exp(%x) ; %1 = exp(%x) ; %2 = add(%0, %1) ; %3 = neg(%x) (unused)
    ->  %0 = exp(%x) ; %2 = add(%0, %0)

Runs to a fixpoint over every block, regions included. It never changes
what a function computes (ops have no side effects).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from compiler.ir.core import Block, Function, Op, Value


def simplify(fn: Function) -> Function:
    _simplify_block(fn.body)
    return fn


def _key_param(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return ("array", v.dtype.str, v.shape, v.tobytes()) if v.size <= 64 else ("array-id", id(v))
    if isinstance(v, (list, tuple)):
        return tuple(_key_param(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _key_param(x)) for k, x in v.items()))
    return v


def _simplify_block(block: Block) -> None:
    replace: dict[Value, Value] = {}
    seen: dict[Any, Op] = {}
    kept: list[Op] = []
    for op in block.ops:
        op.operands = tuple(replace.get(v, v) for v in op.operands)
        for region in op.regions:
            _simplify_block(region)
        if not op.regions:
            key = (op.prim, op.operands, _key_param(op.params))
            try:
                other = seen.get(key)
            except TypeError:      # unhashable param: keep the op as it is
                other, key = None, None
            if other is not None:
                replace.update(zip(op.results, other.results))
                continue
            if key is not None:
                seen[key] = op
        kept.append(op)
    block.results = [replace.get(v, v) for v in block.results]
    block.ops = _dead_code(kept, block.results)


def _dead_code(ops: list[Op], results: list[Value]) -> list[Op]:
    live: set[Value] = set(results)
    out: list[Op] = []
    for op in reversed(ops):
        if any(r in live for r in op.results) or op.prim.effects:
            live.update(op.operands)
            out.append(op)
    return out[::-1]
