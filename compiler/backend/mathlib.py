"""Dispatch of transcendental functions: the vector math library when it has
the function, else the LLVM intrinsic or libm call (correct but scalarized).
"""
from __future__ import annotations

from typing import Any

from llvmlite import ir as ll

from compiler.backend import vecmath

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
