"""Vectorizable math library: exp, log, sin, tanh, pow, ... emitted as LLVM IR.

The backend lowers ``y[i] = f(x[i])`` to a scalar loop and relies on LoopVectorize. This
package supplies ``f`` in a form that does not stop vectorization: an ``internal
alwaysinline`` function whose body is straight-line, branch-free, libm-free arithmetic
(selects, bit casts, ``llvm.fma``/``llvm.fmuladd``/``llvm.rint``...), so after inlining the
loop is widened to the target's natural width.  sin/cos/tan additionally need a rare slow
path (Payne-Hanek reduction of huge arguments); they are emitted as a scalar function with
explicit vector variants (see :mod:`compiler.backend.vecmath._define`).

Interface used by the backend::

    call(builder, "exp", [x], fastmath=False, has_fma=target.has_fma) -> ir.Value

Accuracy (measured, docs/vecmath.md): every function is below 1 ULP in float64 and float32
(float32 exp 1.12 ULP, NumPy allows 3), with and without FMA. ``fastmath=True`` is accepted
and currently selects the same algorithms (same bounds); it is reserved for cheaper variants.
"""
from __future__ import annotations

from typing import Callable

import llvmlite.ir as ir

from compiler.backend.vecmath import exp_log, hyperbolic, inverse_hyperbolic, inverse_trig, power, trig
from compiler.backend.vecmath._define import inline_function

_INLINE: dict[str, Callable] = {
    **exp_log.KERNELS, **hyperbolic.KERNELS, **inverse_trig.KERNELS, **power.KERNELS,
    **inverse_hyperbolic.KERNELS}
_VECTOR: dict[str, Callable] = trig.KERNELS  # name -> define(module, name, ty, fast, fma, bits)
_NARGS = {"arctan2": 2, "pow": 2, "hypot": 2}

SUPPORTED: frozenset[str] = frozenset(_INLINE) | frozenset(_VECTOR)


def symbol(name: str, ty: ir.Type, *, fastmath: bool, has_fma: bool) -> str:
    """The internal symbol of one variant, e.g. ``aotx_vm_exp_f64_fast``."""
    suffix = {"double": "f64", "float": "f32"}[str(ty)]
    return (f"aotx_vm_{name}_{suffix}" + ("_fast" if fastmath else "")
            + ("" if has_fma else "_nofma"))


def call(builder: ir.IRBuilder, name: str, args: list[ir.Value], *,
         fastmath: bool = False, has_fma: bool = True, vector_bits: int = 512) -> ir.Value:
    """Emit ``name(*args)`` at the builder's position; defines the callee once per module.

    `args` are scalar double or float values of one type; the result has that type.
    `vector_bits` (the target's widest vector register) picks the one width whose explicit
    vector variant has a body (sin, cos, tan: see ``_define.vector_mapped_function``).
    """
    if name not in SUPPORTED:
        raise KeyError(f"vecmath has no function {name!r}; supported: {sorted(SUPPORTED)}")
    ty = args[0].type
    if str(ty) not in ("double", "float") or any(a.type != ty for a in args):
        raise TypeError(f"vecmath.{name} needs double or float arguments of one type, "
                        f"got {[str(a.type) for a in args]}")
    if len(args) != _NARGS.get(name, 1):
        raise TypeError(f"vecmath.{name} takes {_NARGS.get(name, 1)} arguments")
    sym = symbol(name, ty, fastmath=fastmath, has_fma=has_fma)
    module = builder.module
    if name in _VECTOR:
        fn, mapping = _VECTOR[name](module, sym, ty, fastmath, has_fma, vector_bits)
        instr = builder.call(fn, list(args))
        set.add(instr.attributes, mapping)  # string attribute: not in llvmlite's whitelist
        return instr
    kernel = _INLINE[name]
    # fastmath currently selects the same algorithms (see docs/vecmath.md, "fastmath")
    fn = inline_function(module, sym, ty, len(args), has_fma, lambda em, *a: kernel(em, *a))
    return builder.call(fn, list(args))
