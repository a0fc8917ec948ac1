"""Vectorizable math library: exp, log, sin, tanh, pow, ... emitted as LLVM IR.

The backend lowers ``y[i] = f(x[i])`` to a scalar loop and relies on LoopVectorize. This
package supplies ``f`` in a form that does not stop vectorization: an ``internal
alwaysinline`` function whose body is straight-line, branch-free, libm-free arithmetic
(selects, bit casts, ``llvm.fma``/``llvm.fmuladd``/``llvm.rint``...), so after inlining the
loop is widened to the target's natural width.  sin/cos/tan additionally need a rare slow
path (Payne-Hanek reduction of huge arguments); they are emitted as a scalar function with
explicit vector variants (see :mod:`compiler.backend.vecmath._define`). On AVX-512 targets
with FMA, the float64 exponentials (exp, exp2, expm1, tanh, sinh, cosh, pow: ``_TABLED``) have
an explicit 8-wide body reading a table from registers; their calls stay calls until
LoopVectorize has chosen the variants, then passes.optimize links in :func:`late_definition`
and inlines them (``_define.vector_inlined_function``).

Interface used by the backend::

    call(builder, "exp", [x], fastmath=False, has_fma=target.has_fma) -> ir.Value
    link(str(module), module) -> str     # the module's text with the called functions defined

Accuracy (measured, docs/vecmath.md): every function is below 1 ULP in float64 and float32
(float32 exp 1.12 ULP, NumPy allows 3), with and without FMA. ``fastmath=True`` is accepted
and currently selects the same algorithms (same bounds); it is reserved for cheaper variants.
"""
from __future__ import annotations

import functools
import re
import weakref
from dataclasses import dataclass
from typing import Callable

import llvmlite.ir as ir

from compiler.backend.vecmath import exp_log, hyperbolic, inverse_hyperbolic, inverse_trig, power, trig
from compiler.backend.vecmath._define import (INLINED_VARIANT, inline_function, natural_width,
                                              vector_inlined_function)

_INLINE: dict[str, Callable] = {
    **exp_log.KERNELS, **hyperbolic.KERNELS, **inverse_trig.KERNELS, **power.KERNELS,
    **inverse_hyperbolic.KERNELS}
_VECTOR: dict[str, Callable] = trig.KERNELS  # name -> define(module, name, ty, fast, fma, bits)
#: name -> (scalar type, vector width, body): an explicit vector body where the target has the
#: instructions it needs (AVX-512 permutes and vscalefpd), used for that type and width only
_TABLED: dict[str, tuple[str, int, Callable]] = {
    name: ("double", 512, body)
    for name, body in {**exp_log.TABLED, **hyperbolic.TABLED, **power.TABLED}.items()}
_TABLED_SUFFIX = "_tbl"
_NARGS = {"arctan2": 2, "pow": 2, "hypot": 2}

SUPPORTED: frozenset[str] = frozenset(_INLINE) | frozenset(_VECTOR)


def symbol(name: str, ty: ir.Type, *, fastmath: bool, has_fma: bool, tabled: bool = False) -> str:
    """The internal symbol of one variant, e.g. ``aotx_vm_exp_f64_fast`` (``_tbl``: the
    explicit vector body of _TABLED)."""
    suffix = {"double": "f64", "float": "f32"}[str(ty)]
    return (f"aotx_vm_{name}_{suffix}" + ("_fast" if fastmath else "")
            + ("" if has_fma else "_nofma") + (_TABLED_SUFFIX if tabled else ""))


@dataclass(frozen=True)
class _Unit:
    """The LLVM IR text of one function's definition and what it needs, made once per process:
    the function's symbol, the module-level entries (``(name, kind, text)``, kind
    ``declare``, ``define`` or ``global``), the functions to keep in ``@llvm.compiler.used``,
    the call-site attribute mapping the function to its vector variants ("" for inline
    kernels), and for a _TABLED function the module text that defines the scalar function
    after vectorization (:func:`late_definition`)."""

    symbol: str
    entries: tuple[tuple[str, str, str], ...]
    used: tuple[str, ...]
    mapping: str
    late: str = ""


@functools.lru_cache(maxsize=None)
def _unit(name: str, ty_name: str, fastmath: bool, has_fma: bool, vector_bits: int) -> _Unit:
    ty = {"double": ir.DoubleType(), "float": ir.FloatType()}[ty_name]
    module = ir.Module(name="vecmath")
    tabled = _tabled(name, ty_name, has_fma, vector_bits)
    sym = symbol(name, ty, fastmath=fastmath, has_fma=has_fma, tabled=tabled is not None)
    mapping = late = ""
    if name in _VECTOR:
        _, mapping = _VECTOR[name](module, sym, ty, fastmath, has_fma, vector_bits)
    elif tabled is not None:
        late_module = ir.Module(name="vecmath_late")
        _, mapping = vector_inlined_function(module, late_module, sym, ty, has_fma, tabled,
                                             natural_width(ty, vector_bits), _NARGS.get(name, 1))
        late = str(late_module)
    else:
        kernel = _INLINE[name]
        # fastmath currently selects the same algorithms (see docs/vecmath.md, "fastmath")
        inline_function(module, sym, ty, _NARGS.get(name, 1), has_fma, lambda em, *a: kernel(em, *a))
    entries, used = [], []
    for gv in module.globals.values():
        if gv.name == "llvm.compiler.used":
            used = [member.name for member in gv.initializer.constant]
        elif isinstance(gv, ir.Function):
            entries.append((gv.name, "declare" if gv.is_declaration else "define", str(gv)))
        else:
            entries.append((gv.name, "global", str(gv)))
    return _Unit(sym, tuple(entries), tuple(used), mapping, late)


def _tabled(name: str, ty_name: str, has_fma: bool, vector_bits: int) -> Callable | None:
    """The explicit vector body of `name` for this type and target, if _TABLED has one."""
    entry = _TABLED.get(name)
    return entry[2] if entry is not None and entry[:2] == (ty_name, vector_bits) and has_fma else None


def is_late(sym: str) -> bool:
    """Whether calls of `sym` stay calls until after vectorization (:func:`late_definition`)."""
    return sym.startswith("aotx_vm_") and sym.endswith(_TABLED_SUFFIX)


def is_late_variant(sym: str) -> bool:
    """Whether `sym` is a vector variant of such a function (``alwaysinline``, but called only
    once LoopVectorize has run: passes.optimize inlines it afterwards)."""
    base, _, width = sym.removesuffix(INLINED_VARIANT).rpartition("_v")
    return sym.endswith(INLINED_VARIANT) and width.isdigit() and is_late(base)


def late_definition(sym: str) -> str | None:
    """The module text defining the scalar function `sym` after vectorization
    (_define.vector_inlined_function), or None when `sym` is not such a function."""
    if not is_late(sym):
        return None
    for name, (ty_name, bits, _) in _TABLED.items():
        for fastmath in (False, True):
            ty = {"double": ir.DoubleType(), "float": ir.FloatType()}[ty_name]
            if symbol(name, ty, fastmath=fastmath, has_fma=True, tabled=True) == sym:
                return _unit(name, ty_name, fastmath, True, bits).late
    return None


#: the units each module's calls need, spliced into its text by link()
_LINKS: weakref.WeakKeyDictionary[ir.Module, list[_Unit]] = weakref.WeakKeyDictionary()


def call(builder: ir.IRBuilder, name: str, args: list[ir.Value], *,
         fastmath: bool = False, has_fma: bool = True, vector_bits: int = 512) -> ir.Value:
    """Emit ``name(*args)`` at the builder's position.

    `args` are scalar double or float values of one type; the result has that type.
    `vector_bits` (the target's widest vector register) picks the one width whose explicit
    vector variant has a body (sin, cos, tan: see ``_define.vector_mapped_function``).

    The callee is only declared in the builder's module: its definition, built once per
    process as text, is added to the module's text by :func:`link`, which whoever prints
    the module must call (building and printing the bodies with llvmlite for every kernel
    took 4 of the 5 ms of a small kernel's codegen).
    """
    if name not in SUPPORTED:
        raise KeyError(f"vecmath has no function {name!r}; supported: {sorted(SUPPORTED)}")
    ty = args[0].type
    if str(ty) not in ("double", "float") or any(a.type != ty for a in args):
        raise TypeError(f"vecmath.{name} needs double or float arguments of one type, "
                        f"got {[str(a.type) for a in args]}")
    if len(args) != _NARGS.get(name, 1):
        raise TypeError(f"vecmath.{name} takes {_NARGS.get(name, 1)} arguments")
    module = builder.module
    unit = _unit(name, str(ty), fastmath, has_fma, vector_bits)
    sym = unit.symbol
    fn = module.globals.get(sym)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ty, [ty] * len(args)), sym)
        _LINKS.setdefault(module, []).append(unit)
    instr = builder.call(fn, list(args))
    if unit.mapping:
        set.add(instr.attributes, unit.mapping)  # string attribute: not in llvmlite's whitelist
    return instr


def link(text: str, module: ir.Module) -> str:
    """`text` (``str(module)``) with the definitions of the vecmath functions `module` calls,
    each where the module declares it (LLVM's results depend on the order of functions, which
    stays that of the definitions llvmlite would have printed), each helper and constant once,
    the intrinsics they use declared unless the module declares them, their vector variants in
    one ``@llvm.compiler.used``."""
    units = _LINKS.get(module)
    if not units:
        return text
    own = module.globals
    if "llvm.compiler.used" in own:
        raise ValueError("vecmath.link: the module has its own @llvm.compiler.used")
    seen: set[str] = set()
    used: list[str] = []
    for unit in units:
        parts: list[str] = []
        for name, kind, body in unit.entries:
            if name in seen:
                continue
            seen.add(name)
            if name in own and kind == "declare" and name != unit.symbol:
                continue
            if name in own and name != unit.symbol:      # declared by the caller: defined here
                text = _without_declaration(text, name)
            parts.append(body)
        text = text.replace(_declaration(text, unit.symbol), "\n\n".join(parts) + "\n", 1)
        used += [u for u in unit.used if u not in used]
    if used:
        members = ", ".join(f'ptr @"{u}"' for u in used)
        text += (f'\n@"llvm.compiler.used" = appending global [{len(used)} x ptr] [{members}], '
                 'section "llvm.metadata"\n')
    return text


def _declaration(text: str, name: str) -> str:
    m = re.search(rf'^declare [^\n]*@"{re.escape(name)}"\([^\n]*\n', text, flags=re.M)
    if m is None:
        raise ValueError(f"vecmath.link: the module does not declare {name}")
    return m.group(0)


def _without_declaration(text: str, name: str) -> str:
    return text.replace(_declaration(text, name), "", 1)
