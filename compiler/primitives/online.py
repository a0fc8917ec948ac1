"""reduce_max_sumexp: the max of x over trailing axes and the sum of exp(x - max), in one pass.

``m = max(x, axes); s = sum(exp(x - m), axes)`` is the core of logsumexp, softmax,
log_softmax and cross-entropy. Written out it is two passes over x: every row's max, then
every row's sum of exponentials, and the first pass is a walk over memory with nothing to
hide its latency behind. transforms/online.py replaces the pair, after vmap and AD, with this
primitive, whose lowering (backend/online.py) walks each row once: one loop per chunk takes
the chunk's max and the sum of exp(x - shift) for a shift near the max, so that the chunk's
loads overlap its exponentials.

NaN and infinities give what the two passes give in NumPy: a row holding a NaN gives
(nan, nan); a row holding +inf gives (inf, nan) (inf - inf); a row of -inf gives
(-inf, nan). It exists only after the transforms, so it has no vmap or AD rule; the IR
interpreter runs ``numpy_ref``, the two passes.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir as ll

from compiler.ir.primitive import define
from compiler.ir.types import F32, F64, TensorType
from compiler.primitives import ops
from compiler.primitives.base import check

Types = tuple[TensorType, ...]


def _shape_rule(in_types: Types, params: dict[str, Any]) -> Types:
    (x,), axes = in_types, tuple(params["axes"])
    check(x.dtype in (F32, F64), f"reduce_max_sumexp of {x}: float32 or float64 only")
    check(bool(axes) and axes == tuple(range(x.ndim - len(axes), x.ndim)),
          f"reduce_max_sumexp axes {axes} are not the trailing axes of {x}")
    out = x.with_shape(tuple(x.shape[:x.ndim - len(axes)]))
    return out, out


def _numpy_ref(x: np.ndarray, axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    axes = tuple(axes)
    with np.errstate(invalid="ignore", over="ignore"):
        m = np.max(x, axis=axes, keepdims=True)
        s = np.sum(np.exp(x - m), axis=axes)
    return np.max(x, axis=axes), s


def _lower(cg: Any, op: Any, outs: list[Any]) -> None:
    x, axes = op.operands[0], tuple(op.params["axes"])
    shape = op.results[0].type.shape
    b, wide = cg.b, x.dtype != F64
    # the sums relative to each output's shift and the shifts' distance to the max (float64),
    # rescaled by exp(gap) in a vectorized loop afterwards, not one scalar exp per output
    gaps = cg.scratch_buffer(F64, shape)
    totals = cg.scratch_buffer(F64, shape) if wide else outs[1]
    # the loop over the outputs stays scalar: each output walks its own contiguous rows
    with cg.loop_nest(shape, vectorize=False) as idx:
        m, total, gap = cg.max_sumexp(x.type.shape, axes, idx, x.dtype, lambda full: cg.read(x, full))
        cg.store(outs[0], idx, m)
        cg.store(totals, idx, total)
        cg.store(gaps, idx, gap)
    with cg.loop_nest(shape) as idx:
        s = cg.max_sumexp_finish(cg.load(totals, idx), cg.load(gaps, idx))
        cg.store(outs[1], idx, b.fptrunc(s, ll.FloatType()) if wide else s)


reduce_max_sumexp = define(
    ops.reduce_max_sumexp_p,
    shape_rule=_shape_rule,
    numpy_ref=_numpy_ref,
    lower=_lower,
    differentiable=False,
    doc="(max(x, axes), sum(exp(x - max), axes)) in one pass over x",
)
