"""Structured control flow: ``cond`` and ``while`` with isolated regions.

``cond(pred, *operands)`` has two regions (true, false) whose arguments are
the operands and whose yields are the results. ``while(*init)`` has a cond
region (carried values -> one bool) and a body region (carried -> carried).
The predicate is any single-element value (NumPy truthiness).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from compiler.ir.types import BOOL, TensorType
from compiler.primitives.base import CONTROL, Primitive, check, register

Types = tuple[TensorType, ...]


def is_single_element(t: TensorType) -> bool:
    return all(d == 1 for d in t.shape)


def _block_sig(block: Any) -> tuple[list[TensorType], list[TensorType]]:
    return [a.type for a in block.args], [r.type for r in block.results]


def _cond_rule(in_types: Types, params: dict[str, Any], regions: tuple[Any, ...]) -> Types:
    pred, *args = in_types
    check(is_single_element(pred), f"cond: predicate must have one element, got {pred}")
    check(len(regions) == 2, "cond: needs a true and a false region")
    (t_args, t_res), (f_args, f_res) = (_block_sig(r) for r in regions)
    check(t_args == list(args) == f_args, "cond: region arguments must match the operands")
    check(t_res == f_res, f"cond: branches yield different types: {t_res} vs {f_res}")
    return tuple(t_res)


def _interpret_cond(interp: Any, op: Any, args: list[np.ndarray]) -> list[np.ndarray]:
    pred, *rest = args
    region = op.regions[0] if bool(np.asarray(pred).reshape(())) else op.regions[1]
    return interp.run_block(region, rest)


cond = register(Primitive("cond", _cond_rule, None, CONTROL, interpret=_interpret_cond,
                          doc="run the true or the false region on the operands"))


def _while_rule(in_types: Types, params: dict[str, Any], regions: tuple[Any, ...]) -> Types:
    check(len(regions) == 2, "while: needs a cond and a body region")
    (c_args, c_res), (b_args, b_res) = (_block_sig(r) for r in regions)
    check(c_args == list(in_types) == b_args, "while: region arguments must match the carried values")
    check(len(c_res) == 1 and is_single_element(c_res[0]),
          f"while: the condition must yield one single-element value, got {c_res}")
    check(b_res == list(in_types), f"while: the body must yield the carried types {list(in_types)}, got {b_res}")
    return tuple(in_types)


def _interpret_while(interp: Any, op: Any, args: list[np.ndarray]) -> list[np.ndarray]:
    cond_block, body = op.regions
    values = list(args)
    while bool(np.asarray(interp.run_block(cond_block, values)[0]).reshape(())):
        values = interp.run_block(body, values)
    return values


while_ = register(Primitive("while", _while_rule, None, CONTROL, interpret=_interpret_while,
                            doc="repeat body while cond holds, carrying values"))

_ = BOOL
