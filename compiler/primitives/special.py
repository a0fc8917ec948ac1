"""Special functions: the ``bitcast`` primitive behind NumPy's bit-level float functions
(signbit, nextafter, spacing, frexp, ldexp), and the helpers that build them from it.

``bitcast`` reinterprets the bits of a float64 (float32) element as an int64 (int32) and
back, as NumPy's ``x.view(np.int64)``; the functions above are integer arithmetic on the
bit pattern (compiler/frontend/special.py), so they stay elementwise, fuse and vectorize.
A bit pattern has no derivative: a function that must be differentiable multiplies its
operand by a power of two made from bits (ldexp, frexp's mantissa), so the derivative
flows through the product. docs/special.md lists the functions.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir as ll

from compiler.ir.primitive import define
from compiler.ir.types import F32, F64, I32, I64, TensorType
from compiler.primitives import ad, ops
from compiler.primitives.base import check
from compiler.primitives.batching import elementwise_rule

_PARTNER = {F64: I64, I64: F64, F32: I32, I32: F32}
_LLVM = {F64: ll.DoubleType(), F32: ll.FloatType(), I64: ll.IntType(64), I32: ll.IntType(32)}


def _bitcast_rule(in_types: tuple[TensorType, ...], params: dict[str, Any]) -> tuple[TensorType, ...]:
    (x,) = in_types
    dtype = np.dtype(params["dtype"])
    check(x.dtype in _PARTNER and _PARTNER[x.dtype] == dtype,
          f"bitcast: {x.dtype} -> {dtype} is not supported (float64 <-> int64, float32 <-> int32)")
    return (x.with_dtype(dtype),)


def _ref_bitcast(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """x.view(dtype): the same bits, read as another type of the same width"""
    return np.ascontiguousarray(x).view(np.dtype(dtype))


bitcast = define(
    ops.bitcast_p, shape_rule=_bitcast_rule, numpy_ref=_ref_bitcast,
    lower=lambda cg, op, a: cg.b.bitcast(a[0], _LLVM[np.dtype(op.params["dtype"])]),
    vmap_rule=elementwise_rule, jvp_rule=ad.zero_rules()[0], vjp_rule=ad.zero_rules()[1],
    doc="x.view(dtype): float64 <-> int64, float32 <-> int32 bit patterns")
