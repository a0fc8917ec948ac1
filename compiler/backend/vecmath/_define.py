"""Defining vecmath functions in an llvmlite module, once per module and variant.

Two shapes are used:

* :func:`inline_function` -- an ``internal alwaysinline`` scalar function whose body is
  branch-free. After inlining into the caller's loop, LoopVectorize widens it like any other
  arithmetic (4/8 lanes of double on AVX2/AVX-512, 8/16 lanes of float).
* :func:`vector_mapped_function` -- a ``noinline`` scalar function plus explicit
  ``<N x T>`` variants tied to it by the ``vector-function-abi-variant`` call-site attribute,
  so LoopVectorize calls the variant of its chosen width.  Used when a rare input needs a slow,
  branchy path (huge-argument trig): the variant runs the fast path on all lanes and falls
  back to the scalar function only for the lanes that need it.  The variants are kept alive
  through ``@llvm.compiler.used`` (otherwise they are deleted before vectorization).
"""
from __future__ import annotations

from typing import Callable

import llvmlite.ir as ir

from compiler.backend.vecmath._emit import Em

_FN_ATTRS = ("nounwind", "readnone")
_RAW_ATTRS = ("willreturn", "nosync", "nofree")
VECTOR_WIDTHS = {"double": (2, 4, 8), "float": (4, 8, 16)}


def _attrs(fn: ir.Function, *extra: str) -> None:
    for a in _FN_ATTRS + extra:
        fn.attributes.add(a)
    for a in _RAW_ATTRS:
        set.add(fn.attributes, a)  # llvmlite's attribute whitelist predates these


def inline_function(module: ir.Module, name: str, ty: ir.Type, nargs: int, has_fma: bool,
                    body: Callable[..., ir.Value]) -> ir.Function:
    """Get or define ``internal alwaysinline ty name(ty, ...)`` whose body is body(em, *args)."""
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(ty, [ty] * nargs), name)
    fn.linkage = "internal"
    _attrs(fn, "alwaysinline")
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    builder.ret(body(Em(builder, ty, has_fma=has_fma), *fn.args))
    return fn


def vector_mapped_function(module: ir.Module, name: str, ty: ir.Type, has_fma: bool,
                           fast: Callable, needs_slow: Callable,
                           slow: Callable) -> tuple[ir.Function, str]:
    """Get or define a one-argument function with explicit vector variants.

    fast(em, x) emits the vectorizable fast path, needs_slow(em, x) the i1 mask of lanes
    whose result must come from slow(em, x) instead (emitted in a scalar function).
    Returns the scalar function and the call-site attribute mapping it to its variants.
    """
    slow_fn = inline_function(module, name + "_slow", ty, 1, has_fma, slow)
    slow_fn.attributes.discard("alwaysinline")
    slow_fn.attributes.add("noinline")
    fn = module.globals.get(name)
    if fn is None:
        fn = _define_scalar(module, name, ty, has_fma, fast, needs_slow, slow_fn)
    variants = []
    for n in VECTOR_WIDTHS[str(ty)]:
        vname = f"{name}_v{n}"
        if module.globals.get(vname) is None:
            vfn = _define_vector(module, vname, ir.VectorType(ty, n), has_fma, fast,
                                 needs_slow, slow_fn)
            _keep_alive(module, vfn)
        variants.append(f"_ZGV_LLVM_N{n}v_{name}({vname})")
    return fn, '"vector-function-abi-variant"="' + ",".join(variants) + '"'


def _define_scalar(module, name, ty, has_fma, fast, needs_slow, slow_fn) -> ir.Function:
    fn = ir.Function(module, ir.FunctionType(ty, [ty]), name)
    fn.linkage = "internal"
    _attrs(fn, "noinline")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    em = Em(b, ty, has_fma=has_fma)
    x = fn.args[0]
    res = fast(em, x)
    entry = b.block
    with b.if_then(needs_slow(em, x), likely=False):
        slow_res = b.call(slow_fn, [x])
        slow_end = b.block
    phi = b.phi(ty)
    phi.add_incoming(res, entry)
    phi.add_incoming(slow_res, slow_end)
    b.ret(phi)
    return fn


def _define_vector(module, name, vty, has_fma, fast, needs_slow, slow_fn) -> ir.Function:
    fn = ir.Function(module, ir.FunctionType(vty, [vty]), name)
    fn.linkage = "internal"
    _attrs(fn)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    em = Em(b, vty, has_fma=has_fma)
    x = fn.args[0]
    res = fast(em, x)
    mask = needs_slow(em, x)
    any_slow = b.call(_reduce_or(module, mask.type), [mask])
    entry = b.block
    with b.if_then(any_slow, likely=False):
        fixed = res
        for i in range(vty.count):
            fixed = _fix_lane(b, fixed, x, mask, i, slow_fn)
        slow_end = b.block
    phi = b.phi(vty)
    phi.add_incoming(res, entry)
    phi.add_incoming(fixed, slow_end)
    b.ret(phi)
    return fn


def _fix_lane(b: ir.IRBuilder, vec, x, mask, i: int, slow_fn):
    """vec with lane i replaced by slow_fn(x[i]) when mask[i] is set."""
    idx = ir.Constant(ir.IntType(32), i)
    before = b.block
    with b.if_then(b.extract_element(mask, idx), likely=False):
        lane = b.call(slow_fn, [b.extract_element(x, idx)])
        updated = b.insert_element(vec, lane, idx)
        inner = b.block
    phi = b.phi(vec.type)
    phi.add_incoming(vec, before)
    phi.add_incoming(updated, inner)
    return phi


def _reduce_or(module: ir.Module, mty: ir.VectorType) -> ir.Function:
    name = f"llvm.vector.reduce.or.v{mty.count}i1"
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ir.IntType(1), [mty]), name)
    return fn


def _keep_alive(module: ir.Module, fn: ir.Function) -> None:
    """Append fn to @llvm.compiler.used (rebuilt in place: llvmlite cannot delete globals)."""
    ptr = ir.PointerType()
    gv = module.globals.get("llvm.compiler.used")
    members = [] if gv is None else list(gv.initializer.constant)
    members.append(fn)
    aty = ir.ArrayType(ptr, len(members))
    if gv is None:
        gv = ir.GlobalVariable(module, aty, "llvm.compiler.used")
        gv.linkage = "appending"
        gv.section = "llvm.metadata"
    gv.value_type = aty
    gv.initializer = ir.Constant(aty, members)

