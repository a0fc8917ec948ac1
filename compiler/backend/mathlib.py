"""Dispatch of transcendental functions: the vector math library when it has
the function, else the LLVM intrinsic or libm call (correct but scalarized).
"""
from __future__ import annotations

from typing import Any

from llvmlite import ir as ll

from compiler.backend import vecmath
from compiler.backend.vecmath import power
from compiler.backend.vecmath._emit import Em

_INTRINSICS = {"exp": "llvm.exp", "exp2": "llvm.exp2", "log": "llvm.log", "log2": "llvm.log2",
               "log10": "llvm.log10", "sin": "llvm.sin", "cos": "llvm.cos", "tan": "llvm.tan",
               "sinh": "llvm.sinh", "cosh": "llvm.cosh", "tanh": "llvm.tanh", "arcsin": "llvm.asin",
               "arccos": "llvm.acos", "arctan": "llvm.atan", "pow": "llvm.pow", "arctan2": "llvm.atan2"}
_LIBM = {"expm1": "expm1", "log1p": "log1p", "cbrt": "cbrt", "hypot": "hypot"}


def _vecmath_supported() -> frozenset[str]:
    return frozenset(getattr(vecmath, "SUPPORTED", frozenset()))


def call(cg: Any, name: str, args: list[ll.Value]) -> ll.Value:
    if name in _vecmath_supported():
        return vecmath.call(cg.b, name, args, fastmath=cg.fastmath, has_fma=cg.has_fma,
                           vector_bits=cg.vector_bits)
    if name in _INTRINSICS:
        return cg.intrinsic(_INTRINSICS[name], args)
    t = args[0].type
    suffix = "f" if isinstance(t, ll.FloatType) else ""
    sym = _LIBM[name] + suffix
    fn = cg.module.globals.get(sym) or ll.Function(cg.module, ll.FunctionType(t, [t] * len(args)), sym)
    return cg.b.call(fn, args)


def is_late(result: ll.Value) -> bool:
    """Whether `result` is a call that stays a call until after vectorization (a vecmath
    function with an explicit vector body: vecmath.late_definition)."""
    callee = getattr(result, "callee", None)
    return isinstance(callee, ll.Function) and vecmath.is_late(callee.name)


def constant_power(cg: Any, x: ll.Value, y: ll.Value) -> ll.Value | None:
    """x ** y by products and a square root (vecmath.power.constant_power) when y is a
    constant of power.CONSTANT_POWERS and x a float; else None. float32 is computed in
    float64 and rounded once."""
    if not isinstance(y, ll.Constant) or not isinstance(x.type, (ll.DoubleType, ll.FloatType)):
        return None
    try:
        v = float(y.constant)
    except (TypeError, ValueError):
        return None
    if v not in power.CONSTANT_POWERS:
        return None
    wide = ll.DoubleType()
    x64 = x if isinstance(x.type, ll.DoubleType) else cg.b.fpext(x, wide)
    r = power.constant_power(Em(cg.b, wide, has_fma=cg.has_fma), x64, v)
    return r if isinstance(x.type, ll.DoubleType) else cg.b.fptrunc(r, x.type)
