"""``check``: raise a Python exception from compiled code.

``check(cond) {error='IndexError', message='index 5 is out of bounds for axis 0
with size {0}', dims=(n,)}`` has no results. When an element of ``cond`` is false
the kernel frees its temporaries and returns a status that names this op (see
runtime/abi.py: ``ERROR_BASE + i`` for the i-th check of the kernel, in program
order); the caller raises ``error(message)`` with the run-time values of ``dims``
and the user's line. The table of checks travels with the kernel: in memory, in
the on-disk cache entry and in a built library's manifest, so a ``runtime.load``ed
kernel raises the same exception.

Under vmap the condition gains the batch axis and every element is checked; under
AD a check is copied into the forward computation and has no derivative.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from compiler.ir.primitive import define
from compiler.ir.types import BOOL, TensorType
from compiler.primitives import ops
from compiler.primitives.base import check as shape_check
from compiler.primitives.batching import reemit
from runtime.abi import EXCEPTIONS, ErrorSite, fill_message

Types = tuple[TensorType, ...]


def _rule(in_types: Types, params: dict[str, Any]) -> Types:
    (cond,) = in_types
    shape_check(cond.dtype == BOOL, f"check: condition must be bool, got {cond}")
    shape_check(params["error"] in EXCEPTIONS, f"check: unknown exception class {params['error']!r}")
    return ()


def _ref(cond: np.ndarray, error: str, message: str, dims: tuple[int, ...] = ()) -> tuple:
    if not np.all(cond):
        raise EXCEPTIONS[error](fill_message(message, dims))
    return ()


def error_site(op: Any) -> ErrorSite:
    """The runtime's record of one check op."""
    p = op.params
    where = f"{op.loc.file}:{op.loc.line}" if op.loc.line else ""
    return ErrorSite(p["error"], p["message"], tuple(str(d) for d in p.get("dims", ())), where)


def _lower(cg: Any, op: Any, outs: list[Any]) -> None:
    cond = op.operands[0]
    fail = cg.error_exit(cg.check_status(op))
    with cg.loop_nest(cond.type.shape) as idx:
        ok = cg.fn.append_basic_block("check.ok")
        cg.b.cbranch(cg.read(cond, idx), ok, fail)
        cg.b.position_at_end(ok)


def _vmap(b: Any, op: Any, args: list[Any], bdims: list[Any], size: Any) -> tuple:
    reemit(b, op, args)           # the batched condition: every element is checked
    return [], []


check_ = define(
    ops.check_p,
    shape_rule=_rule,
    numpy_ref=_ref,
    lower=_lower,
    vmap_rule=_vmap,
    differentiable=False,          # AD drivers copy it into the forward computation
    effects=frozenset({"raise"}),
    doc="raise params['error'] unless every element of the bool operand is true",
)
