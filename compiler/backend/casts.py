"""Scalar conversions between the dtypes, and integer powers.

Float to integer conversion saturates (``llvm.fptosi.sat``, ``llvm.fptoui.sat``): NaN
gives 0 and out-of-range values clamp, where NumPy's result is platform-defined.
A float16 register holds the float32 of its value (buffers.py): a conversion to
float16 rounds once, from the source value (float64 through ``half`` directly).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir as ll

from compiler.backend.buffers import HALF, scalar_type
from compiler.ir.types import BOOL, F16, F32, F64, is_float, is_unsigned


def round_half(cg: Any, v: ll.Value) -> ll.Value:
    """A float32 register rounded to the nearest float16 (ties to even), as a float32."""
    return cg.b.fpext(cg.b.fptrunc(v, HALF), v.type)


def cast(cg: Any, v: ll.Value, src: np.dtype, dst: np.dtype) -> ll.Value:
    b, to = cg.b, scalar_type(dst)
    if src == dst:
        return v
    if dst == BOOL:
        return b.fcmp_unordered("!=", v, v.type(0.0)) if is_float(src) else b.icmp_unsigned("!=", v, v.type(0))
    if dst == F16:
        if src == F64:
            return b.fpext(b.fptrunc(v, HALF), to)
        return round_half(cg, cast(cg, v, src, F32))
    if src == F16:
        return cast(cg, v, F32, dst)
    if src == BOOL:
        return b.uitofp(v, to) if is_float(dst) else b.zext(v, to)
    if is_float(src) and is_float(dst):
        return b.fpext(v, to) if dst.itemsize > src.itemsize else b.fptrunc(v, to)
    if is_float(dst):
        return b.uitofp(v, to) if is_unsigned(src) else b.sitofp(v, to)
    if is_float(src):
        name = "llvm.fptoui.sat" if is_unsigned(dst) else "llvm.fptosi.sat"
        fn = cg.module.declare_intrinsic(name, [to, v.type], ll.FunctionType(to, [v.type]))
        return b.call(fn, [v])
    if dst.itemsize == src.itemsize:
        return v                                    # int32 <-> uint32: the same bits
    if dst.itemsize < src.itemsize:
        return b.trunc(v, to)
    return b.zext(v, to) if is_unsigned(src) else b.sext(v, to)


def int_pow(cg: Any, x: ll.Value, y: ll.Value, signed: bool = True) -> ll.Value:
    """x ** y for integers by square-and-multiply (wrapping); y < 0 gives 0 unless |x| == 1."""
    b = cg.b
    one, zero = x.type(1), x.type(0)
    result = cg.alloca_builder.alloca(x.type)
    base = cg.alloca_builder.alloca(x.type)
    exp = cg.alloca_builder.alloca(x.type)
    b.store(one, result)
    b.store(x, base)
    b.store(b.select(b.icmp_signed("<", y, zero), zero, y) if signed else y, exp)
    with cg.loop(ll.Constant(ll.IntType(64), x.type.width)):
        e = b.load(exp)
        odd = b.trunc(e, ll.IntType(1))
        r = b.load(result)
        bb = b.load(base)
        b.store(b.select(odd, b.mul(r, bb), r), result)
        b.store(b.mul(bb, bb), base)
        b.store(b.lshr(e, x.type(1)), exp)
    r = b.load(result)
    if not signed:
        return r
    neg = b.icmp_signed("<", y, zero)
    odd_y = b.trunc(y, ll.IntType(1))
    inv = b.select(b.icmp_signed("==", x, one), one,
                   b.select(b.icmp_signed("==", x, x.type(-1)), b.select(odd_y, x.type(-1), one), zero))
    return b.select(neg, inv, r)
