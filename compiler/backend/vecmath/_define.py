"""Defining vecmath functions in an llvmlite module, once per module and variant.

Two shapes are used:

* :func:`inline_function` -- an ``internal alwaysinline`` scalar function whose body is
  branch-free. After inlining into the caller's loop, LoopVectorize widens it like any other
  arithmetic (4/8 lanes of double on AVX2/AVX-512, 8/16 lanes of float).
* :func:`vector_mapped_function` -- a ``noinline`` scalar function plus explicit
  ``<N x T>`` variants tied to it by the ``vector-function-abi-variant`` call-site attribute,
  so LoopVectorize calls the variant of its chosen width.  Used when a rare input needs a
  slow, branchy path (huge-argument trig): the variant runs the fast path on all lanes and
  falls back to a scalar function only for the lanes that need it.  Only the variant of the
  target's natural width has that body; the scalar function and the other widths call it.
  The variants are kept alive through ``@llvm.compiler.used`` (otherwise they are deleted
  before vectorization).
"""
from __future__ import annotations

from typing import Callable

import llvmlite.ir as ir

from compiler.backend.vecmath._emit import Em

_FN_ATTRS = ("nounwind", "readnone")
_RAW_ATTRS = ("willreturn", "nosync", "nofree")
VECTOR_WIDTHS = {"double": (2, 4, 8), "float": (4, 8, 16)}
#: the name suffix of the alwaysinline vector variants that passes.optimize inlines after
#: LoopVectorize has called them (:func:`vector_inlined_function`)
INLINED_VARIANT = "_inlined"


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


def natural_width(ty: ir.Type, vector_bits: int) -> int:
    """The lane count of one full vector register of `ty`, among VECTOR_WIDTHS: the width
    LoopVectorize picks for a loop of `ty` arithmetic on a target of `vector_bits`."""
    widths = VECTOR_WIDTHS[str(ty)]
    lanes = vector_bits // (64 if str(ty) == "double" else 32)
    return min(widths, key=lambda n: abs(n - lanes))


def vector_mapped_function(module: ir.Module, name: str, ty: ir.Type, has_fma: bool,
                           fast: Callable, needs_slow: Callable, slow_fn: ir.Function,
                           vector_bits: int = 512) -> tuple[ir.Function, str]:
    """Get or define a one-argument function with explicit vector variants.

    fast(em, x) emits the vectorizable fast path, needs_slow(em, x) the i1 mask of lanes
    whose result must come from slow_fn instead (a scalar function of one lane).
    Returns the scalar function and the call-site attribute mapping it to its variants.

    Only the variant of the target's natural width (:func:`natural_width`) has a body; the
    other widths, which LoopVectorize picks for epilogues and short loops, are a few
    shuffles around a call of it (padded with zeros, or split in natural-width pieces), and
    the scalar function is one lane of it: LLVM's time grows with the instructions of the
    module, and every full copy of the body cost a few milliseconds of it.
    """
    natural = natural_width(ty, vector_bits)
    main_name = f"{name}_v{natural}"
    main = module.globals.get(main_name)
    if main is None:
        main = _define_vector(module, main_name, ir.VectorType(ty, natural), has_fma, fast,
                              needs_slow, slow_fn)
        _keep_alive(module, main)
    fn = module.globals.get(name)
    if fn is None:          # noinline: the loop vectorizer must see the call, not main's
        fn = _define_wrapper(module, name, ty, main)
        fn.attributes.add("noinline")
    variants = []
    for n in VECTOR_WIDTHS[str(ty)]:
        vname = f"{name}_v{n}"
        if module.globals.get(vname) is None:
            _keep_alive(module, _define_wrapper(module, vname, ir.VectorType(ty, n), main))
        variants.append(f"_ZGV_LLVM_N{n}v_{name}({vname})")
    return fn, '"vector-function-abi-variant"="' + ",".join(variants) + '"'


def vector_inlined_function(module: ir.Module, late: ir.Module, name: str, ty: ir.Type,
                            has_fma: bool, body: Callable, lanes: int,
                            nargs: int = 1) -> tuple[ir.Function, str]:
    """Declare a function of `nargs` arguments in `module` whose `lanes`-wide variant has the
    explicit vector body body(em, x, ...) (target instructions that LoopVectorize cannot produce from a
    scalar body, such as a permute from a table in registers), and define its scalar body in
    `late`.

    The calls stay calls until LoopVectorize has replaced those in vector loops by calls of
    the variants, then passes.optimize links `late` in and inlines everything
    (``alwaysinline``): vector loops keep their constants in registers instead of calling a
    function per vector, and a scalar remainder computes one lane of the same vector code.
    Every lane of every width therefore gives the same bits. The scalar function is only
    declared while the pipeline runs because LLVM's inliner would otherwise inline it before
    LoopVectorize sees the call (``noinline`` would keep it out for good).
    """
    main_name = f"{name}_v{lanes}{INLINED_VARIANT}"
    vty = ir.VectorType(ty, lanes)
    main = ir.Function(module, ir.FunctionType(vty, [vty] * nargs), main_name)
    _attrs(main, "alwaysinline")
    builder = ir.IRBuilder(main.append_basic_block("entry"))
    builder.ret(body(Em(builder, vty, has_fma=has_fma), *main.args))
    # external, not in @llvm.compiler.used: the pipeline keeps them for LoopVectorize, and
    # passes._inline_late makes them internal once they are inlined, so that unused widths
    # are not compiled to machine code. `late` only declares the body: linked in, its scalar
    # function calls the module's
    late_main = ir.Function(late, main.function_type, main_name)
    _attrs(late_main, "alwaysinline")
    scalar = _define_wrapper(late, name, ty, late_main)
    scalar.linkage = "linkonce_odr"
    scalar.attributes.add("alwaysinline")
    fn = ir.Function(module, ir.FunctionType(ty, [ty] * nargs), name)
    _attrs(fn)
    set.add(fn.attributes, "speculatable")
    variants = []
    for n in VECTOR_WIDTHS[str(ty)]:
        vname = main_name if n == lanes else f"{name}_v{n}{INLINED_VARIANT}"
        if n != lanes:
            wrapper = _define_wrapper(module, vname, ir.VectorType(ty, n), module.globals[main_name])
            wrapper.attributes.add("alwaysinline")
            wrapper.linkage = ""
        variants.append(f"_ZGV_LLVM_N{n}{'v' * nargs}_{name}({vname})")
    return fn, '"vector-function-abi-variant"="' + ",".join(variants) + '"'


def _define_wrapper(module: ir.Module, name: str, ty: ir.Type, main: ir.Function) -> ir.Function:
    """``ty name(ty x, ...)`` computed by `main` (a function of N-lane vectors, of as many
    arguments): a scalar or narrower x padded with zeros (a lane of zeros takes the fast
    path), a wider one in N-lane pieces."""
    vty = main.function_type.return_type
    big = vty.count
    fn = ir.Function(module, ir.FunctionType(ty, [ty] * len(main.args)), name)
    fn.linkage = "internal"
    _attrs(fn)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    xs = fn.args
    i32 = ir.IntType(32)

    def mask(idx) -> ir.Constant:
        return ir.Constant(ir.VectorType(i32, len(idx)), [ir.Constant(i32, i) for i in idx])
    if not isinstance(ty, ir.VectorType):
        wide = [b.insert_element(ir.Constant(vty, None), x, ir.Constant(i32, 0)) for x in xs]
        b.ret(b.extract_element(b.call(main, wide), ir.Constant(i32, 0)))
        return fn
    n = ty.count
    if n < big:      # lanes n.. from the zero vector (index n of the pair)
        wide = [b.shuffle_vector(x, ir.Constant(ty, None), mask([*range(n), *[n] * (big - n)]))
                for x in xs]
        b.ret(b.shuffle_vector(b.call(main, wide), ir.Constant(vty, None), mask(range(n))))
        return fn
    parts = [b.call(main, [b.shuffle_vector(x, x, mask(range(k, k + big))) for x in xs])
             for k in range(0, n, big)]
    while len(parts) > 1:
        w = parts[0].type.count
        parts = [b.shuffle_vector(parts[i], parts[i + 1], mask(range(2 * w)))
                 for i in range(0, len(parts), 2)]
    b.ret(parts[0])
    return fn


def _define_vector(module, name, vty, has_fma, fast, needs_slow, slow_fn) -> ir.Function:
    """The fast path on every lane; if some lanes need the slow path, a tail call of
    NAME_lanes_vN, which replaces their results. The call of the slow function is kept out of
    this function: around a call, every live vector would be spilled to a stack frame
    aligned for it, which this function would then set up on every call (measured: 7%
    slower loops of float64 sin)."""
    fn = ir.Function(module, ir.FunctionType(vty, [vty]), name)
    fn.linkage = "internal"
    _attrs(fn, "noinline")     # one copy: not inlined into the wrappers of the other widths
    entry, slow, done = (fn.append_basic_block(n) for n in ("entry", "slow", "done"))
    b = ir.IRBuilder(entry)
    em = Em(b, vty, has_fma=has_fma)
    x = fn.args[0]
    res = fast(em, x)
    i64 = ir.IntType(64)
    bits = b.zext(b.bitcast(needs_slow(em, x), ir.IntType(vty.count)), i64)
    b.cbranch(b.icmp_unsigned("!=", bits, ir.Constant(i64, 0)), slow, done)
    b.position_at_end(slow)
    base, width = name.rsplit("_v", 1)
    lanes_fn = _define_lanes(module, f"{base}_lanes_v{width}", vty, slow_fn)
    fixed = b.call(lanes_fn, [x, res, bits], tail=True)
    b.ret(fixed)
    b.position_at_end(done)
    b.ret(res)
    return fn


def _define_lanes(module, name, vty, slow_fn) -> ir.Function:
    """``vty name(vty x, vty res, i64 bits)``: res with lane i replaced by slow_fn(x[i]) for
    every set bit i, one lane per trip of a loop (one copy of the call whatever the width)."""
    i64 = ir.IntType(64)
    fn = ir.Function(module, ir.FunctionType(vty, [vty, vty, i64]), name)
    fn.linkage = "internal"
    _attrs(fn, "noinline")
    entry, loop, done = (fn.append_basic_block(n) for n in ("entry", "lane", "done"))
    b = ir.IRBuilder(entry)
    x, res, bits = fn.args
    b.branch(loop)
    b.position_at_end(loop)
    vec, left = b.phi(vty), b.phi(i64)
    cttz = module.globals.get("llvm.cttz.i64") or ir.Function(
        module, ir.FunctionType(i64, [i64, ir.IntType(1)]), "llvm.cttz.i64")
    lane = b.call(cttz, [left, ir.Constant(ir.IntType(1), 1)])
    fixed = b.insert_element(vec, b.call(slow_fn, [b.extract_element(x, lane)]), lane)
    rest = b.and_(left, b.sub(left, ir.Constant(i64, 1)))
    vec.add_incoming(res, entry)
    vec.add_incoming(fixed, loop)
    left.add_incoming(bits, entry)
    left.add_incoming(rest, loop)
    b.cbranch(b.icmp_unsigned("!=", rest, ir.Constant(i64, 0)), loop, done)
    b.position_at_end(done)
    b.ret(fixed)
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

