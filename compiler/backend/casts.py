"""Scalar conversions between the five dtypes, and integer powers.

Float to integer conversion saturates (``llvm.fptosi.sat``): NaN gives 0 and
out-of-range values clamp, where NumPy's result is platform-defined.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir as ll

from compiler.backend.buffers import scalar_type
from compiler.ir.types import BOOL, is_float


def cast(cg: Any, v: ll.Value, src: np.dtype, dst: np.dtype) -> ll.Value:
    b, to = cg.b, scalar_type(dst)
    if src == dst:
        return v
    if dst == BOOL:
        return b.fcmp_unordered("!=", v, v.type(0.0)) if is_float(src) else b.icmp_unsigned("!=", v, v.type(0))
    if src == BOOL:
        return b.uitofp(v, to) if is_float(dst) else b.zext(v, to)
    if is_float(src) and is_float(dst):
        return b.fpext(v, to) if dst.itemsize > src.itemsize else b.fptrunc(v, to)
    if is_float(dst):
        return b.sitofp(v, to)
    if is_float(src):
        fn = cg.module.declare_intrinsic("llvm.fptosi.sat", [to, v.type], ll.FunctionType(to, [v.type]))
        return b.call(fn, [v])
    return b.sext(v, to) if dst.itemsize > src.itemsize else b.trunc(v, to)


def int_pow(cg: Any, x: ll.Value, y: ll.Value) -> ll.Value:
    """x ** y for integers by square-and-multiply; y < 0 gives 0 unless |x| == 1."""
    b = cg.b
    one, zero = x.type(1), x.type(0)
    result = cg.alloca_builder.alloca(x.type)
    base = cg.alloca_builder.alloca(x.type)
    exp = cg.alloca_builder.alloca(x.type)
    b.store(one, result)
    b.store(x, base)
    b.store(b.select(b.icmp_signed("<", y, zero), zero, y), exp)
    with cg.loop(ll.Constant(ll.IntType(64), x.type.width)):
        e = b.load(exp)
        odd = b.trunc(e, ll.IntType(1))
        r = b.load(result)
        bb = b.load(base)
        b.store(b.select(odd, b.mul(r, bb), r), result)
        b.store(b.mul(bb, bb), base)
        b.store(b.lshr(e, x.type(1)), exp)
    r = b.load(result)
    neg = b.icmp_signed("<", y, zero)
    odd_y = b.trunc(y, ll.IntType(1))
    inv = b.select(b.icmp_signed("==", x, one), one,
                   b.select(b.icmp_signed("==", x, x.type(-1)), b.select(odd_y, x.type(-1), one), zero))
    return b.select(neg, inv, r)
