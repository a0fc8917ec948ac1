"""Complex numbers: the primitives real, imag, conj and complex, and every primitive's
complex rule (docs/complex.md).

Complex values (c64, c128) exist in the IR like any other, so the frontend, vmap and
AD see complex ops as they see real ones. Before the backend, the lowering pass
(compiler/transforms/complex.py) replaces every complex value by a pair of real
values (re, im), op by op, with the primitive's ``complex_rule``:

    complex_rule(b, op, args) -> results

where a complex operand or result is a pair ``(re, im)`` of real Values and a real one
is a Value. Most primitives need no thought: an op that moves or adds elements
(broadcast, slice, concatenate, take, reduce_sum, cumsum, select, ...) is applied to
the real parts and to the imaginary parts (:func:`componentwise`). The arithmetic
and the math functions are decompositions into real ops, ``fn(b, re, im, ...) ->
(re, im)``, looked up in :data:`MATH`: compiler/primitives/complexmath.py's functions,
which follow NumPy's loops and C99 Annex G (docs/vecmath.md#complex-functions).

AD convention (torch.func): a holomorphic op's vjp multiplies the cotangent by the
conjugate derivative (ad.from_partials), real/imag/conj/complex are R-linear maps
whose vjp is their adjoint for the real inner product Re<u, v>.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence, Union

import numpy as np

from compiler.ir.core import Block, Value
from compiler.ir.primitive import Primitive, define
from compiler.ir.types import BOOL, TensorType, complex_dtype, is_complex, is_float, real_dtype
from compiler.primitives import ad, ops
from compiler.primitives import complexmath as cm
from compiler.primitives.base import check, same_shape_rule
from compiler.primitives.batching import elementwise_rule
from compiler.primitives.loops import trip_count

Pair = tuple[Value, Value]
Arg = Union[Value, Pair]
Types = tuple[TensorType, ...]


# ---- the four primitives -------------------------------------------------------------

def _part_rule(dtypes: tuple[np.dtype, ...], params: dict[str, Any]) -> np.dtype:
    check(is_complex(dtypes[0]), f"operand must be complex, got {dtypes[0]}")
    return real_dtype(dtypes[0])


def _conj_rule(dtypes: tuple[np.dtype, ...], params: dict[str, Any]) -> np.dtype:
    check(is_complex(dtypes[0]), f"operand must be complex, got {dtypes[0]}")
    return dtypes[0]


def _complex_rule(dtypes: tuple[np.dtype, ...], params: dict[str, Any]) -> np.dtype:
    check(is_float(dtypes[0]) and dtypes[0] == dtypes[1],
          f"complex: the parts must be one floating-point dtype, got {dtypes[0]} and {dtypes[1]}")
    return complex_dtype(dtypes[0])


def _ref_complex(re: np.ndarray, im: np.ndarray) -> np.ndarray:
    """re + 1j*im, exactly (inf and nan parts kept as they are)."""
    re, im = np.broadcast_arrays(np.asarray(re), np.asarray(im))
    out = np.empty(re.shape, complex_dtype(re.dtype))
    out.real, out.imag = re, im
    return out


def _lower_complex(cg: Any, op: Any, a: list[Any]) -> Any:
    return cg.complex_value(op.results[0].dtype, a[0], a[1])


def _lower_conj(cg: Any, op: Any, a: list[Any]) -> Any:
    # (the lowering pass rewrites conj into real ops; this is for a conj left in place)
    re, im = cg.b.extract_value(a[0], 0), cg.b.extract_value(a[0], 1)
    return cg.complex_value(op.results[0].dtype, re, cg.b.fneg(im))


real = define(
    ops.real_p, shape_rule=same_shape_rule(_part_rule), numpy_ref=np.real,
    lower=lambda cg, op, a: cg.b.extract_value(a[0], 0), vmap_rule=elementwise_rule, cheap=True,
    complex_rule=lambda b, op, args: [args[0][0]], doc="np.real, elementwise (complex operand)",
    **ad.linear(lambda b, op, p, ct: [ops.complex_(b, ct, ops.zeros_like(b, ct))]))
imag = define(
    ops.imag_p, shape_rule=same_shape_rule(_part_rule), numpy_ref=np.imag,
    lower=lambda cg, op, a: cg.b.extract_value(a[0], 1), vmap_rule=elementwise_rule, cheap=True,
    complex_rule=lambda b, op, args: [args[0][1]], doc="np.imag, elementwise (complex operand)",
    **ad.linear(lambda b, op, p, ct: [ops.complex_(b, ops.zeros_like(b, ct), ct)]))
conj = define(
    ops.conj_p, shape_rule=same_shape_rule(_conj_rule), numpy_ref=np.conjugate, lower=_lower_conj,
    vmap_rule=elementwise_rule, complex_rule=lambda b, op, args: [(args[0][0], ops.neg(b, args[0][1]))],
    doc="np.conjugate, elementwise (complex operand)",
    **ad.linear(lambda b, op, p, ct: [ops.conj(b, ct)]))
complex_ = define(
    ops.complex_p, shape_rule=same_shape_rule(_complex_rule), numpy_ref=_ref_complex,
    lower=_lower_complex, vmap_rule=elementwise_rule, cheap=True,
    complex_rule=lambda b, op, args: [(args[0], args[1])], doc="re + 1j*im, elementwise",
    **ad.linear(lambda b, op, p, ct: [ops.real(b, ct), ops.imag(b, ct)]))


# ---- the generic rules ---------------------------------------------------------------

def re(a: Arg) -> Value:
    return a[0] if isinstance(a, tuple) else a


def im(a: Arg) -> Value:
    return a[1] if isinstance(a, tuple) else a


def pair(a: Arg) -> Pair:
    """A complex operand's parts."""
    assert isinstance(a, tuple), a
    return a


def componentwise(b: Any, op: Any, args: Sequence[Arg]) -> list[Arg]:
    """The op applied to the real parts and to the imaginary parts (real operands, such as
    indices or a predicate, are shared): right for every op that moves, selects or adds
    elements. A real result (none of these has one) would be an error."""
    res = b.emit(op.prim, [re(a) for a in args], op.params)
    ims = b.emit(op.prim, [im(a) for a in args], op.params)
    return [(r, i) for r, i in zip(res, ims)]


_COMPONENTWISE = (ops.neg_p, ops.add_p, ops.sub_p, ops.select_p, ops.broadcast_in_dim_p,
                  ops.reshape_p, ops.transpose_p, ops.slice_p, ops.rev_p, ops.pad_p, ops.diagonal_p,
                  ops.concatenate_p, ops.reduce_sum_p, ops.cumsum_p, ops.take_p, ops.dynamic_slice_p,
                  ops.dynamic_update_slice_p, ops.update_slice_p, ops.scatter_p)


def _constant(b: Any, op: Any, args: Sequence[Arg]) -> list[Arg]:
    value = np.asarray(op.params["value"])
    part = real_dtype(value.dtype)
    return [(ops.constant(b, value.real.astype(part)), ops.constant(b, value.imag.astype(part)))]


def _convert(b: Any, op: Any, args: Sequence[Arg]) -> list[Arg]:
    """astype: between complex dtypes part by part; complex to real keeps the real part
    (NumPy's ComplexWarning case), to bool tests both parts; real to complex adds 0j."""
    (x,), dst = args, op.params["dtype"]
    src = op.operands[0].dtype
    marks = {k: v for k, v in op.params.items() if k != "dtype"}
    if is_complex(src) and is_complex(dst):
        part = real_dtype(dst)
        return [(ops.convert(b, re(x), part), ops.convert(b, im(x), part))]
    if is_complex(src):
        if dst == BOOL:
            return [ops.or_(b, ops.convert(b, re(x), BOOL), ops.convert(b, im(x), BOOL))]
        return [b.emit1(ops.convert_p, [re(x)], {"dtype": dst, **marks})]
    assert not isinstance(x, tuple)
    value = ops.convert(b, x, real_dtype(dst))      # real to complex
    return [(value, ops.zeros_like(b, value))]


def _eq(b: Any, op: Any, args: Sequence[Arg]) -> list[Arg]:
    x, y = args
    return [ops.and_(b, ops.eq(b, re(x), re(y)), ops.eq(b, im(x), im(y)))]


def _ne(b: Any, op: Any, args: Sequence[Arg]) -> list[Arg]:
    x, y = args
    return [ops.or_(b, ops.ne(b, re(x), re(y)), ops.ne(b, im(x), im(y)))]


def _ordered(strict: Callable[..., Value], weak: Callable[..., Value]) -> Callable[..., list[Arg]]:
    """NumPy's order of complex numbers: lexicographic, real part first."""
    def rule(b: Any, op: Any, args: Sequence[Arg]) -> list[Arg]:
        x, y = args
        first = strict(b, re(x), re(y))
        tie = ops.and_(b, ops.eq(b, re(x), re(y)), weak(b, im(x), im(y)))
        return [ops.or_(b, first, tie)]
    return rule



def _extremum(strict: Callable[..., Value], weak: Callable[..., Value]) -> Callable[..., list[Arg]]:
    """np.maximum / np.minimum of complex numbers as NumPy's loops compute them: the first
    operand when it has a NaN part or wins the lexicographic order (a NaN part of the second
    operand only loses a comparison of real parts), else the second."""
    def rule(b: Any, op: Any, args: Sequence[Arg]) -> list[Arg]:
        x, y = args
        no_nan_im = ops.and_(b, ops.not_(b, ops.isnan(b, im(x))), ops.not_(b, ops.isnan(b, im(y))))
        wins = ops.or_(b, ops.and_(b, strict(b, re(x), re(y)), no_nan_im),
                       ops.and_(b, ops.eq(b, re(x), re(y)), weak(b, im(x), im(y))))
        first = ops.or_(b, ops.or_(b, ops.isnan(b, re(x)), ops.isnan(b, im(x))), wins)
        return [(ops.select(b, first, re(x), re(y)), ops.select(b, first, im(x), im(y)))]
    return rule

# ---- arithmetic and math: (re, im) decompositions ------------------------------------

#: the complex decompositions of the elementwise primitives, by primitive:
#: ``fn(b, *parts) -> (re, im)`` with the parts of each operand in order (unary: ``fn(b, re,
#: im)``, binary: ``fn(b, a_re, a_im, b_re, b_im)``). An entry is all a function needs: the
#: shape rules of the math functions accept complex operands once their primitive has a
#: complex rule, the frontend then stages them, and their derivative (``d=`` in
#: elementwise.py, conjugated in reverse mode) is the complex one.
MATH: dict[Primitive, Callable[..., Pair]] = {
    ops.mul_p: cm.cmul, ops.div_p: cm.cdiv, ops.pow_p: cm.cpow,
    ops.exp_p: cm.cexp, ops.exp2_p: cm.cexp2, ops.expm1_p: cm.cexpm1,
    ops.log_p: cm.clog, ops.log2_p: cm.clog2, ops.log10_p: cm.clog10, ops.log1p_p: cm.clog1p,
    ops.sqrt_p: cm.csqrt,
    ops.sin_p: cm.csin, ops.cos_p: cm.ccos, ops.tan_p: cm.ctan,
    ops.sinh_p: cm.csinh, ops.cosh_p: cm.ccosh, ops.tanh_p: cm.ctanh,
    ops.arcsin_p: cm.carcsin, ops.arccos_p: cm.carccos, ops.arctan_p: cm.carctan,
    ops.arcsinh_p: cm.carcsinh, ops.arccosh_p: cm.carccosh, ops.arctanh_p: cm.carctanh,
}


def _math(b: Any, op: Any, args: Sequence[Arg]) -> list[Arg]:
    parts: list[Value] = []
    for a in args:
        parts += [re(a), im(a)] if isinstance(a, tuple) else [a, ops.zeros_like(b, a)]
    return [MATH[op.prim](b, *parts)]


# ---- products of arrays: reduce_prod, cumprod, dot_general ---------------------------

def _ones_like(b: Any, x: Value, shape: Sequence[Any]) -> Value:
    return ops.full(b, 1.0, x.type.with_shape(tuple(shape)))


def _reduce_prod(b: Any, op: Any, args: Sequence[Arg]) -> list[Arg]:
    """The product over `axes`: the reduced axes moved last and flattened, then the two
    halves multiplied (a 1 appended to an odd length) until one is left; over a symbolic
    size, the last row of a running product that starts from 1 (`_running_product`)."""
    xr, xi = pair(args[0])
    axes = op.params["axes"]
    keep = [a for a in range(xr.type.ndim) if a not in axes]
    lead = tuple(xr.type.shape[a] for a in keep)
    n: Any = 1
    for a in axes:
        n = n * xr.type.shape[a]
    parts = [ops.reshape(b, ops.transpose(b, v, keep + list(axes)), lead + (n,)) for v in (xr, xi)]
    k = len(lead)
    if not isinstance(n, int):
        one, zero = _ones_like(b, xr, lead + (1,)), ops.full(b, 0.0, xr.type.with_shape(lead + (1,)))
        scan = _running_product(b, [ops.concatenate(b, [one, parts[0]], k),
                                    ops.concatenate(b, [zero, parts[1]], k)], k)
        last = [ops.slice_(b, v, (0,) * k + (n,), lead + (n + 1,)) for v in scan]
        return [tuple(ops.reshape(b, v, lead) for v in last)]    # type: ignore[list-item]
    if n == 0:
        one = _ones_like(b, xr, lead)
        return [(one, ops.zeros_like(b, one))]
    while n > 1:
        if n % 2:
            parts = [ops.concatenate(b, [parts[0], _ones_like(b, xr, lead + (1,))], k),
                     ops.concatenate(b, [parts[1], ops.full(b, 0.0, xr.type.with_shape(lead + (1,)))], k)]
            n += 1
        h = n // 2
        lo = [ops.slice_(b, v, (0,) * (k + 1), lead + (h,)) for v in parts]
        hi = [ops.slice_(b, v, (0,) * k + (h,), lead + (n,)) for v in parts]
        parts = list(cm.cmul(b, lo[0], lo[1], hi[0], hi[1]))
        n = h
    return [tuple(ops.reshape(b, v, lead) for v in parts)]    # type: ignore[list-item]


MAX_DOUBLING = 64      # cumprod lengths computed by doubling; longer ones run a loop


def _cumprod(b: Any, op: Any, args: Sequence[Arg]) -> list[Arg]:
    """The running product by doubling (Hillis-Steele): at step s every element is
    multiplied by the one s places before it (1 before the start); along a symbolic or a
    long axis, a loop (`_running_product`: doubling costs log2(n) passes over the array)."""
    xr, xi = pair(args[0])
    axis = op.params["axis"]
    n = xr.type.shape[axis]
    if not isinstance(n, int) or n > MAX_DOUBLING:
        return [tuple(_running_product(b, [xr, xi], axis))]    # type: ignore[list-item]
    shape = xr.type.shape
    s = 1
    while s < n:
        head = tuple(s if i == axis else d for i, d in enumerate(shape))
        limit = tuple(n - s if i == axis else d for i, d in enumerate(shape))
        shifted = [ops.concatenate(b, [fill, ops.slice_(b, v, (0,) * len(shape), limit)], axis)
                   for v, fill in ((xr, _ones_like(b, xr, head)),
                                   (xi, ops.full(b, 0.0, xr.type.with_shape(head))))]
        xr, xi = cm.cmul(b, xr, xi, shifted[0], shifted[1])
        s *= 2
    return [(xr, xi)]


def _running_product(b: Any, parts: list[Value], axis: int) -> list[Value]:
    """The complex running product of (re, im) along `axis` as a ``for`` op over its
    (symbolic) length: the carry starts as the values, moved to the front, and row k
    becomes row k - 1 times row k (in place, a row at a time). Sequential, as NumPy's
    cumprod is, so the rounding is NumPy's."""
    moved = [ops.transpose(b, v, [axis] + [a for a in range(v.type.ndim) if a != axis]) for v in parts]
    t = moved[0].type
    n, rest = t.shape[0], tuple(t.shape[1:])
    i64 = np.dtype(np.int64)
    body = Block()
    body.args.extend([Value(TensorType(i64, ()), None, 0, "k"), Value(t, None, 1, ""), Value(t, None, 2, "")])
    i, out_r, out_i = body.args
    with b.inside(body):
        zeros = [ops.scalar(b, 0, i64) for _ in rest]
        before = ops.sub(b, i, ops.scalar(b, 1, i64))
        prev = [ops.dynamic_slice(b, v, [before, *zeros], (1, *rest)) for v in (out_r, out_i)]
        cur = [ops.dynamic_slice(b, v, [i, *zeros], (1, *rest)) for v in (out_r, out_i)]
        new = cm.cmul(b, prev[0], prev[1], cur[0], cur[1])
        body.results = [ops.dynamic_update_slice(b, v, w, [i, *zeros]) for v, w in zip((out_r, out_i), new)]
    start, stop = ops.scalar(b, 1, i64), ops.size_of(b, n, i64)
    scanned = ops.for_loop(b, start, stop, moved, body, 1, trip_count(1, n, 1))
    back = list(range(1, axis + 1)) + [0] + list(range(axis + 1, t.ndim))
    return [ops.transpose(b, v, back) for v in scanned]


def _dot_general(b: Any, op: Any, args: Sequence[Arg]) -> list[Arg]:
    """A product of two complex operands stays one complex product: the backend's loop nest
    does complex arithmetic (it reads each operand once: 1.0-2.3x faster than four real
    products, benchmarks/linalg.py), or zgemm/cgemm for large ones (primitives/gemm.py).
    With one real operand: two real products."""
    x, y = args
    dn = op.params["dimension_numbers"]
    if isinstance(x, tuple) and isinstance(y, tuple):
        r = ops.dot_general(b, _whole(b, x), _whole(b, y), dn)
        return [(ops.real(b, r), ops.imag(b, r))]

    def dot(u: Value, v: Value) -> Value:
        return ops.dot_general(b, u, v, dn)
    if not isinstance(x, tuple):
        return [(dot(x, pair(y)[0]), dot(x, pair(y)[1]))]
    if not isinstance(y, tuple):
        return [(dot(x[0], y), dot(x[1], y))]
    return [(ops.sub(b, dot(x[0], y[0]), dot(x[1], y[1])), ops.add(b, dot(x[0], y[1]), dot(x[1], y[0])))]


def _whole(b: Any, x: tuple[Value, Value]) -> Value:
    """The complex value of a pair: the value it was read from, else the two assembled."""
    re, im = x
    if re.op is not None and im.op is not None and re.op.prim is ops.real_p and im.op.prim is ops.imag_p \
            and re.op.operands[0] is im.op.operands[0]:
        return re.op.operands[0]
    return ops.complex_(b, re, im)


for _prim in _COMPONENTWISE:
    define(_prim, complex_rule=componentwise)
for _prim in MATH:
    define(_prim, complex_rule=_math)
define(ops.constant_p, complex_rule=_constant)
define(ops.convert_p, complex_rule=_convert)
define(ops.eq_p, complex_rule=_eq)
define(ops.ne_p, complex_rule=_ne)
define(ops.lt_p, complex_rule=_ordered(ops.lt, ops.lt))
define(ops.le_p, complex_rule=_ordered(ops.lt, ops.le))
define(ops.gt_p, complex_rule=_ordered(ops.gt, ops.gt))
define(ops.ge_p, complex_rule=_ordered(ops.gt, ops.ge))
define(ops.maximum_p, complex_rule=_extremum(ops.gt, ops.ge))
define(ops.minimum_p, complex_rule=_extremum(ops.lt, ops.le))
define(ops.reduce_prod_p, complex_rule=_reduce_prod)
define(ops.cumprod_p, complex_rule=_cumprod)
define(ops.dot_general_p, complex_rule=_dot_general)

