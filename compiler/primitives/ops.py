"""The typed ops layer: every primitive's declaration and its constructor.

Rules, decompositions and the frontend build IR by calling these functions
(``ops.add(b, x, y)``, ``ops.broadcast_in_dim(b, x, shape, dims)``,
``ops.full_like(b, 0.0, x)``) instead of naming primitives: a typo is an
AttributeError at import, and a type checker sees every call. Each primitive
is declared here (name and kind, as ``<name>_p``) and defined in its family
module (shape rule, NumPy reference, lowering and transform rules), which
imports this module; this module imports only the IR, so rule code in any
family can build ops of any other family without an import cycle.

    >>> # inside a rule: b is the Builder of the function being built
    >>> # dx = ops.mul(b, ct, ops.cos(b, x))
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from compiler.ir.builder import Builder
from compiler.ir.core import Value
from compiler.ir.dims import Dim
from compiler.ir.primitive import CONTROL, ELEMENTWISE, INDEX, OPAQUE, Primitive, declare
from compiler.ir.types import TensorType

Unary = Callable[[Builder, Value], Value]
Binary = Callable[[Builder, Value, Value], Value]
Shape = Sequence[Dim]


def _unary(name: str) -> tuple[Primitive, Unary]:
    prim = declare(name, ELEMENTWISE)

    def build(b: Builder, x: Value) -> Value:
        return b.emit1(prim, [x])
    build.__name__ = build.__qualname__ = name
    return prim, build


def _binary(name: str) -> tuple[Primitive, Binary]:
    prim = declare(name, ELEMENTWISE)

    def build(b: Builder, x: Value, y: Value) -> Value:
        return b.emit1(prim, [x, y])
    build.__name__ = build.__qualname__ = name
    return prim, build


# ---- elementwise (compiler/primitives/elementwise.py) ---------------------------------

neg_p, neg = _unary("neg")
abs_p, abs_ = _unary("abs")
sign_p, sign = _unary("sign")
exp_p, exp = _unary("exp")
exp2_p, exp2 = _unary("exp2")
expm1_p, expm1 = _unary("expm1")
log_p, log = _unary("log")
log2_p, log2 = _unary("log2")
log10_p, log10 = _unary("log10")
log1p_p, log1p = _unary("log1p")
sqrt_p, sqrt = _unary("sqrt")
cbrt_p, cbrt = _unary("cbrt")
sin_p, sin = _unary("sin")
cos_p, cos = _unary("cos")
tan_p, tan = _unary("tan")
tanh_p, tanh = _unary("tanh")
sinh_p, sinh = _unary("sinh")
cosh_p, cosh = _unary("cosh")
arcsin_p, arcsin = _unary("arcsin")
arccos_p, arccos = _unary("arccos")
arctan_p, arctan = _unary("arctan")
arcsinh_p, arcsinh = _unary("arcsinh")
arccosh_p, arccosh = _unary("arccosh")
arctanh_p, arctanh = _unary("arctanh")
floor_p, floor = _unary("floor")
ceil_p, ceil = _unary("ceil")
round_p, round_ = _unary("round")
isnan_p, isnan = _unary("isnan")
isinf_p, isinf = _unary("isinf")
isfinite_p, isfinite = _unary("isfinite")
not_p, not_ = _unary("not")

add_p, add = _binary("add")
sub_p, sub = _binary("sub")
mul_p, mul = _binary("mul")
div_p, div = _binary("div")
floordiv_p, floordiv = _binary("floordiv")
mod_p, mod = _binary("mod")
pow_p, _pow = _binary("pow")


def pow_(b: Builder, x: Value, y: Value, scalar_exponent: bool = False) -> Value:
    """x ** y. ``scalar_exponent``: NumPy's float loops for an exponent broadcast over the whole
    base (a Python number, a 0-d array), where the exponents -1, 0, 0.5, 1 and 2 give 1/x, 1,
    sqrt(x), x and x*x: sqrt(-inf) is nan and sqrt(-0.0) is -0.0 where pow gives inf and 0."""
    return b.emit1(pow_p, [x, y], {"scalar_exponent": True}) if scalar_exponent else _pow(b, x, y)


maximum_p, maximum = _binary("max")
minimum_p, minimum = _binary("min")
arctan2_p, arctan2 = _binary("arctan2")
hypot_p, hypot = _binary("hypot")
eq_p, eq = _binary("eq")
ne_p, ne = _binary("ne")
lt_p, lt = _binary("lt")
le_p, le = _binary("le")
gt_p, gt = _binary("gt")
ge_p, ge = _binary("ge")
and_p, and_ = _binary("and")
or_p, or_ = _binary("or")
xor_p, xor = _binary("xor")
shl_p, shl = _binary("shl")
shr_p, shr = _binary("shr")


# ---- checks (compiler/primitives/checks.py) --------------------------------------------

check_p = declare("check", OPAQUE)


def check(b: Builder, cond: Value, error: str, message: str, dims: Sequence[Dim] = ()) -> None:
    """Raise `error` (an exception class name: "IndexError", "ValueError", ...) with
    `message` unless every element of the boolean `cond` is true. ``{0}``, ``{1}`` in
    the message are the run-time values of `dims`; the op's location is the user's line."""
    b.emit(check_p, [cond], {"error": error, "message": message, "dims": tuple(dims)})


select_p = declare("select", ELEMENTWISE)
convert_p = declare("convert", ELEMENTWISE)


def select(b: Builder, pred: Value, on_true: Value, on_false: Value, *, unpredictable: bool = False) -> Value:
    """np.where(pred, on_true, on_false) on operands of one shape; `unpredictable` keeps the
    machine code branch-free where LLVM would otherwise turn it into a branch (a search)."""
    params = {"unpredictable": True} if unpredictable else {}
    return b.emit1(select_p, [pred, on_true, on_false], params)


def convert(b: Builder, x: Value, dtype: Any) -> Value:
    """x.astype(dtype) with NumPy's casting semantics."""
    return b.emit1(convert_p, [x], {"dtype": np.dtype(dtype)})


# ---- shape (compiler/primitives/shape.py) --------------------------------------------

constant_p = declare("constant", INDEX)
iota_p = declare("iota", INDEX)
size_of_p = declare("size_of", INDEX)
broadcast_in_dim_p = declare("broadcast_in_dim", INDEX)
reshape_p = declare("reshape", INDEX)
transpose_p = declare("transpose", INDEX)
slice_p = declare("slice", INDEX)
rev_p = declare("rev", INDEX)
pad_p = declare("pad", INDEX)
diagonal_p = declare("diagonal", INDEX)
concatenate_p = declare("concatenate", OPAQUE)


def constant(b: Builder, value: Any, dtype: Any = None) -> Value:
    """A compile-time array (or scalar) of `dtype` (default: the value's own)."""
    return b.emit1(constant_p, [], {"value": np.array(value, dtype)})


def iota(b: Builder, dtype: Any, shape: Shape, dimension: int) -> Value:
    """An array whose elements are their index along `dimension`."""
    return b.emit1(iota_p, [], {"dtype": np.dtype(dtype), "shape": tuple(shape), "dimension": dimension})


def size_of(b: Builder, dim: Dim, dtype: Any) -> Value:
    """The run-time value of a (symbolic) size, as a scalar of `dtype`."""
    return b.emit1(size_of_p, [], {"dim": dim, "dtype": np.dtype(dtype)})


def broadcast_in_dim(b: Builder, x: Value, shape: Shape, broadcast_dimensions: Sequence[int]) -> Value:
    """`x` broadcast to `shape`; axis i of x becomes axis broadcast_dimensions[i]."""
    return b.emit1(broadcast_in_dim_p, [x], {"shape": tuple(shape),
                                             "broadcast_dimensions": tuple(broadcast_dimensions)})


def reshape(b: Builder, x: Value, new_sizes: Shape) -> Value:
    """Row-major reshape (nothing when the shape is already `new_sizes`)."""
    if tuple(x.type.shape) == tuple(new_sizes):
        return x
    return b.emit1(reshape_p, [x], {"new_sizes": tuple(new_sizes)})


def transpose(b: Builder, x: Value, permutation: Sequence[int]) -> Value:
    """Axes permuted: result axis i is axis permutation[i] of x (nothing for the identity)."""
    if tuple(permutation) == tuple(range(x.type.ndim)):
        return x
    return b.emit1(transpose_p, [x], {"permutation": tuple(permutation)})


def slice_(b: Builder, x: Value, start_indices: Shape, limit_indices: Shape,
           strides: Sequence[int] | None = None) -> Value:
    """A static strided slice."""
    strides = tuple(strides) if strides is not None else (1,) * x.type.ndim
    return b.emit1(slice_p, [x], {"start_indices": tuple(start_indices),
                                  "limit_indices": tuple(limit_indices), "strides": strides})


def rev(b: Builder, x: Value, dimensions: Sequence[int]) -> Value:
    """The order of elements reversed along `dimensions`."""
    return b.emit1(rev_p, [x], {"dimensions": tuple(dimensions)})


def pad(b: Builder, x: Value, value: Value, low: Shape, high: Shape) -> Value:
    """`x` padded with the scalar `value`: low[i] before and high[i] after axis i."""
    return b.emit1(pad_p, [x, value], {"low": tuple(low), "high": tuple(high)})


def diagonal(b: Builder, x: Value, axis1: int, axis2: int) -> Value:
    """np.diagonal(x, 0, axis1, axis2)."""
    return b.emit1(diagonal_p, [x], {"axis1": axis1, "axis2": axis2})


def concatenate(b: Builder, xs: Sequence[Value], dimension: int) -> Value:
    """np.concatenate(xs, axis=dimension)."""
    return b.emit1(concatenate_p, list(xs), {"dimension": dimension})


# ---- reductions and scans (compiler/primitives/reduce.py) -----------------------------

reduce_sum_p = declare("reduce_sum", INDEX)
reduce_prod_p = declare("reduce_prod", INDEX)
reduce_max_p = declare("reduce_max", INDEX)
reduce_min_p = declare("reduce_min", INDEX)
reduce_and_p = declare("reduce_and", INDEX)
reduce_or_p = declare("reduce_or", INDEX)
argmax_p = declare("argmax", INDEX)
argmin_p = declare("argmin", INDEX)
cumsum_p = declare("cumsum", OPAQUE)
cumprod_p = declare("cumprod", OPAQUE)
cummax_p = declare("cummax", OPAQUE)
cummin_p = declare("cummin", OPAQUE)


def reduce(prim: Primitive, b: Builder, x: Value, axes: Sequence[int]) -> Value:
    """`prim` (one of the reduce_* primitives) over `axes`."""
    return b.emit1(prim, [x], {"axes": tuple(axes)})


def reduce_sum(b: Builder, x: Value, axes: Sequence[int]) -> Value:
    """Sum over `axes` (nothing when there are none)."""
    return x if not axes else reduce(reduce_sum_p, b, x, axes)


def reduce_max(b: Builder, x: Value, axes: Sequence[int]) -> Value:
    return reduce(reduce_max_p, b, x, axes)


def reduce_prod(b: Builder, x: Value, axes: Sequence[int]) -> Value:
    return reduce(reduce_prod_p, b, x, axes)


def reduce_min(b: Builder, x: Value, axes: Sequence[int]) -> Value:
    return reduce(reduce_min_p, b, x, axes)


def argmax(b: Builder, x: Value, axis: int) -> Value:
    return b.emit1(argmax_p, [x], {"axis": axis})


def argmin(b: Builder, x: Value, axis: int) -> Value:
    return b.emit1(argmin_p, [x], {"axis": axis})


def cumsum(b: Builder, x: Value, axis: int) -> Value:
    return b.emit1(cumsum_p, [x], {"axis": axis})


def cumprod(b: Builder, x: Value, axis: int) -> Value:
    return b.emit1(cumprod_p, [x], {"axis": axis})


def cummax(b: Builder, x: Value, axis: int) -> Value:
    """np.maximum.accumulate along `axis` (a nan stays from where it appears)."""
    return b.emit1(cummax_p, [x], {"axis": axis})


def cummin(b: Builder, x: Value, axis: int) -> Value:
    """np.minimum.accumulate along `axis`."""
    return b.emit1(cummin_p, [x], {"axis": axis})


# ---- linear algebra and indexing (linalg.py, indexing.py) ----------------------------

dot_general_p = declare("dot_general", OPAQUE)
take_p = declare("take", INDEX)
dynamic_slice_p = declare("dynamic_slice", INDEX)
dynamic_update_slice_p = declare("dynamic_update_slice", OPAQUE)
update_slice_p = declare("update_slice", OPAQUE)
scatter_p = declare("scatter", OPAQUE)


def dot_general(b: Builder, x: Value, y: Value, dimension_numbers: Any) -> Value:
    """Contraction ``((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))``."""
    return b.emit1(dot_general_p, [x, y], {"dimension_numbers": dimension_numbers})


def take(b: Builder, x: Value, indices: Value, axis: int) -> Value:
    """np.take(x, indices, axis) with in-range indices."""
    return b.emit1(take_p, [x, indices], {"axis": axis})


def dynamic_slice(b: Builder, x: Value, starts: Sequence[Value], sizes: Shape) -> Value:
    """A window of static `sizes` at run-time `starts` (clamped into range)."""
    return b.emit1(dynamic_slice_p, [x, *starts], {"sizes": tuple(sizes)})


def dynamic_update_slice(b: Builder, x: Value, update: Value, starts: Sequence[Value]) -> Value:
    """`x` with `update` written at run-time `starts`."""
    return b.emit1(dynamic_update_slice_p, [x, update, *starts])


def update_slice(b: Builder, x: Value, update: Value, start_indices: Shape, limit_indices: Shape,
                 strides: Sequence[int]) -> Value:
    """`x` with `update` written into a static strided slice."""
    return b.emit1(update_slice_p, [x, update], {"start_indices": tuple(start_indices),
                                                 "limit_indices": tuple(limit_indices),
                                                 "strides": tuple(strides)})


def scatter(b: Builder, x: Value, indices: Value, updates: Value, axis: int, mode: str) -> Value:
    """`x` with `updates` set (mode="set") or added (mode="add") at `indices` along `axis`."""
    return b.emit1(scatter_p, [x, indices, updates], {"axis": axis, "mode": mode})


# ---- control flow (compiler/primitives/control.py) ----------------------------------

cond_p = declare("cond", CONTROL)
while_p = declare("while", CONTROL)
chunked_p = declare("chunked", CONTROL)
for_p = declare("for", CONTROL)          # compiler/primitives/loops.py


def for_loop(b: Builder, start: Value, stop: Value, carried: Sequence[Value], body: Any,
             step: int = 1, trip: Dim | None = None, checkpoint: int | None = None
             ) -> tuple[Value, ...]:
    """`body` (a Block: (i, *carried) -> carried) run for i in range(start, stop, step);
    `trip` is the iteration count as a dim when it is known before the loop runs;
    `checkpoint=s` makes reverse mode store the carry every s iterations only."""
    params: dict[str, Any] = {"step": step, "trip": trip}
    if checkpoint is not None:
        params["checkpoint"] = checkpoint
    return b.emit(for_p, [start, stop, *carried], params, [body])


# ---- LU and triangular solves (compiler/primitives/lu.py; constructors lu.lu, lu.triangular_solve)

lu_p = declare("lu", OPAQUE)
triangular_solve_p = declare("triangular_solve", OPAQUE)
lu_solve_p = declare("lu_solve", OPAQUE)


# ---- constants of a given type: the one place that builds them ---------------------

def scalar(b: Builder, value: Any, dtype: Any) -> Value:
    """A 0-d constant of `dtype`."""
    return constant(b, value, dtype)


def full(b: Builder, value: Any, type: TensorType) -> Value:
    """An array of `type` filled with `value` (a broadcast scalar: never materialized)."""
    c = scalar(b, value, type.dtype)
    if type.ndim == 0:
        return c
    return broadcast_in_dim(b, c, type.shape, ())


def full_like(b: Builder, value: Any, like: Value) -> Value:
    """An array of `like`'s type filled with `value`."""
    return full(b, value, like.type)


def zeros_like(b: Builder, like: Value) -> Value:
    return full(b, 0, like.type)


# ---- random numbers (compiler/primitives/random.py; docs/random.md) -----------------

philox_p = declare("philox", ELEMENTWISE)
rng_key_p = declare("rng_key", INDEX)


def philox(b: Builder, words: Sequence[Value], lane: int) -> Value:
    """Word `lane` (0-3) of Philox-4x32-10 of key (k0, k1) and counter (c0, c1, c2, c3):
    ``words`` are those six uint32 operands of one shape."""
    return b.emit1(philox_p, list(words), {"lane": lane})


def rng_key(b: Builder) -> Value:
    """The key of the current call (uint32[2]): the kernel's implicit random state, which
    its caller passes in (a fresh one per call, see runtime/rng.py)."""
    return b.emit1(rng_key_p, [])


# ---- complex numbers (compiler/primitives/complex.py; docs/complex.md) ---------------

real_p, real = _unary("real")
imag_p, imag = _unary("imag")
conj_p, conj = _unary("conj")
complex_p, complex_ = _binary("complex")


def conj_if_complex(b: Builder, x: Value) -> Value:
    """conj(x) for a complex x, x itself for a real one (the adjoint of multiplication by x)."""
    return conj(b, x) if x.type.dtype.kind == "c" else x


# ---- factorizations (compiler/primitives/factor.py; docs/linalg.md) -------------------

cholesky_p = declare("cholesky", OPAQUE)
qr_p = declare("qr", OPAQUE)


def cholesky(b: Builder, a: Value) -> tuple[Value, Value]:
    """(l, ok): the lower Cholesky factor of each matrix of the stack `a` [..., n, n] (its
    lower triangle read), and bool[...] flags false where a pivot is not positive."""
    l, ok = b.emit(cholesky_p, [a])
    return l, ok


def qr(b: Builder, a: Value, full: bool = False) -> tuple[Value, Value]:
    """(q, r) of each matrix of the stack `a` [..., m, n] (Householder, LAPACK's signs);
    `full`: q is [..., m, m] (NumPy's mode='complete'), else [..., m, min(m, n)]."""
    q, r = b.emit(qr_p, [a], {"full": bool(full)})
    return q, r


# ---- general eigenproblems (compiler/primitives/eig.py; docs/linalg.md) -----------------

eig_p = declare("eig", OPAQUE)


def eig(b: Builder, a: Value, vectors: bool) -> tuple[Value, ...]:
    """Eigen-decomposition of complex stacks [..., n, n]: (w, ok), or with `vectors`
    (w, v, vinv, ok): eigenvalues [..., n], normalized right eigenvectors as columns and
    their inverse [..., n, n], and a bool [...] that is false where the QR iteration did
    not converge."""
    return b.emit(eig_p, [a], {"vectors": vectors})


geev_p = declare("geev", OPAQUE)


def geev(b: Builder, a: Value, vectors: bool) -> tuple[Value, ...]:
    """LAPACK's geev on each matrix of a stack [..., n, n] (compiler/primitives/geev.py):
    real input gives (wr, wi, [vr,] info), complex input (w, [vr,] info); ``vr`` holds
    LAPACK's right eigenvectors as rows (row k: column k of VR), ``info`` [...] is geev's."""
    return b.emit(geev_p, [a], {"vectors": vectors})


# ---- sorting (compiler/primitives/sorting.py; docs/sorting.md) ---------------------

sort_p = declare("sort", OPAQUE)


def sort(b: Builder, operands: Sequence[Value], num_keys: int = 1, stable: bool = True
         ) -> list[Value]:
    """The rows (last axis) of every operand permuted into the order that sorts the first
    `num_keys` operands lexicographically (NumPy's order: NaN last, -0.0 == 0.0, complex by
    (real, imag)); all operands share one shape. ``stable=False`` lets equal keys come out
    in any order (visible only for -0.0/0.0 and NaNs of a sort without carried operands)."""
    return list(b.emit(sort_p, list(operands), {"num_keys": num_keys, "stable": stable}))


# ---- symmetric eigenproblems and the SVD (compiler/primitives/spectral.py; docs/linalg.md) ---

eigh_p = declare("eigh", OPAQUE)
svd_p = declare("svd", OPAQUE)


def eigh(b: Builder, a: Value) -> tuple[Value, Value]:
    """(w, v): eigenvalues ascending and orthonormal eigenvectors of the Hermitian part
    (a + aᴴ)/2 of each matrix of the stack a [..., n, n]."""
    w, v = b.emit(eigh_p, [a])
    return w, v


def svd(b: Builder, a: Value, full_matrices: bool = False, compute_uv: bool = True) -> tuple[Value, ...]:
    """(s, u, vh), or (s,) without compute_uv: singular values descending of each matrix of
    the stack a [..., m, n]."""
    return tuple(b.emit(svd_p, [a], {"full_matrices": bool(full_matrices),
                                     "compute_uv": bool(compute_uv)}))


# ---- special functions (compiler/primitives/special.py; docs/special.md) ----------------

bitcast_p = declare("bitcast", ELEMENTWISE)


def bitcast(b: Builder, x: Value, dtype: Any) -> Value:
    """The bits of each element reinterpreted as `dtype` (of the same width): float64 <-> int64,
    float32 <-> int32 (NumPy's ``x.view(dtype)``)."""
    return b.emit1(bitcast_p, [x], {"dtype": np.dtype(dtype)})
erf_p, erf = _unary("erf")
erfc_p, erfc = _unary("erfc")
erfcx_p, erfcx = _unary("erfcx")
erfinv_p, erfinv = _unary("erfinv")
erfcinv_p, erfcinv = _unary("erfcinv")
lgamma_p, lgamma = _unary("lgamma")
gamma_p, gamma = _unary("gamma")
digamma_p, digamma = _unary("digamma")
i0e_p, i0e = _unary("i0e")
i1e_p, i1e = _unary("i1e")
polygamma_p = declare("polygamma", ELEMENTWISE)


def polygamma(b: Builder, x: Value, n: int) -> Value:
    """The n-th derivative of digamma (n >= 1, static) at each element of x."""
    return b.emit1(polygamma_p, [x], {"n": int(n)})


# ---- the discrete Fourier transform (compiler/primitives/fft.py; docs/fft.md) ---------

fft_p = declare("fft", OPAQUE)


def fft(b: Builder, x: Value, inverse: bool = False, keep: Dim | None = None) -> Value:
    """The unscaled DFT of complex (or real) `x` along its last axis: exp(-2 pi i jk/n), or
    with `inverse` exp(+2 pi i jk/n) (NumPy's ifft times n); only the first `keep` terms
    (default: all n; rfft keeps n//2 + 1)."""
    n = x.type.shape[-1]
    return b.emit1(fft_p, [x], {"inverse": bool(inverse), "keep": n if keep is None else keep})


fft_pass_p = declare("fft_pass", OPAQUE)


def fft_pass(b: Builder, re: Value, im: Value, radix: int, sign: int,
             twiddles: tuple[Value, Value] | None = None) -> Value:
    """One radix-`radix` pass of the fft's decomposition on batch-innermost rows: `re`, `im`
    [p, n, w] (n = radix m) -> [p, radix, 2, m, w], output k1 of the butterflies across the
    radix rows [p, j, m, w] (exp(sign 2 pi i j k1/radix)), times `twiddles` [radix, m]."""
    return b.emit1(fft_pass_p, [re, im, *(twiddles or ())], {"radix": int(radix), "sign": int(sign)})


fft_unpack_p = declare("fft_unpack", OPAQUE)


def fft_unpack(b: Builder, re: Value, im: Value, radices: Sequence[int], sign: int, keep: int,
               real: bool, columns: bool = False) -> Value:
    """The passes' result `re`, `im` [n, w] (digit-reversed rows, radices in pass order) as
    complex rows [w, keep] (with `columns`: a slab [1, keep, w]): the transform's first `keep` terms,
    or with `real` the n + 1 first terms of the transform of the real rows of length 2n
    packed as re + i im."""
    return b.emit1(fft_unpack_p, [re, im], {"radices": tuple(int(r) for r in radices), "sign": int(sign),
                                           "keep": int(keep), "real": bool(real),
                                           "columns": bool(columns)})


# ---- np.interp (compiler/primitives/searching.py) ------------------------------------------

interp_p = declare("interp", OPAQUE)


def interp(b: Builder, x: Value, xp: Value, fp: Value, left: Value, right: Value) -> Value:
    """np.interp(x, xp, fp, left, right) of float64 values (xp, fp 1-D of length >= 2,
    left and right 0-d)."""
    return b.emit1(interp_p, [x, xp, fp, left, right], {})


fft_runtime_p = declare("fft_runtime", OPAQUE)


def fft_runtime(b: Builder, re: Value, im: Value, sign: int, keep: Dim, real: bool = False) -> Value:
    """The first `keep` terms of the unscaled DFT (exp(sign 2 pi i jk/n)) of the complex rows
    `re` + i `im` [..., n] with a plan made at run time: n may be symbolic (fft's
    decomposition of a symbolic length; compiler/primitives/fft_runtime.py). `real`: `im`
    is zero (real rows: the transform of half the length when n is even)."""
    return b.emit1(fft_runtime_p, [re, im], {"sign": int(sign), "keep": keep, "real": bool(real)})


# ---- online max and sum of exponentials (compiler/primitives/online.py) ---------------------

reduce_max_sumexp_p = declare("reduce_max_sumexp", OPAQUE)


def reduce_max_sumexp(b: Builder, x: Value, axes: Sequence[int]) -> tuple[Value, Value]:
    """(m, s): m = max(x, axes) and s = sum(exp(x - m), axes) in one pass over x (float32 or
    float64 x, `axes` its trailing axes): made by transforms/online.py from
    reduce_max, sub, exp and reduce_sum, after the transforms."""
    m, s = b.emit(reduce_max_sumexp_p, [x], {"axes": tuple(axes)})
    return m, s
