"""Reductions and scans with NumPy's axis, dtype and keepdims semantics.

sum/prod of bool and int32 accumulate in int64, mean/var/std of integers in
float64 (NumPy's own formulas: ``var = sum((x - mean)**2) / max(n - ddof, 0)``),
``axis`` may be None, an int, a tuple or negative, ``keepdims`` is a reshape.
Result dtypes come from NumPy itself (see :func:`arrays.oracle`).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

import compiler.primitives as P
from compiler.primitives import ops
from compiler.errors import CompileError, OutParameterError, UnsupportedError
from compiler.frontend import arrays as A
from compiler.frontend.shapes import normalize_axes, normalize_axis, prod, ravel
from compiler.frontend import ufuncs as U
from compiler.frontend.ufuncs import binary, sqrt_of_squares, unary
from compiler.frontend.values import Reject, Staged
from compiler.ir.builder import Builder
from compiler.ir import dims
from compiler.ir.dims import Dim
from compiler.ir.types import BOOL, F16, F32, F64, I64, is_complex, is_float, is_inexact, real_dtype

_PRIMS = {"sum": P.reduce_sum, "prod": P.reduce_prod, "max": P.reduce_max, "min": P.reduce_min,
          "all": P.reduce_and, "any": P.reduce_or}
_NUMPY: dict[str, Callable[..., Any]] = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "all": np.all,
          "any": np.any}
_UFUNC_NAMES = {"max": "maximum", "min": "minimum"}


def _keep(b: Builder, out: Staged, x: Staged, axes: tuple[int, ...], keepdims: bool) -> Staged:
    if not keepdims:
        return out
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    return Staged(A.reshape_value(b, out.value, shape))


def _no_out(out: Any) -> bool:
    """Reject out=; True otherwise (so that the check can come first in an expression)."""
    if out is not None:
        raise Reject(OutParameterError, "out= is not supported: compiled functions return results",
                     "return the value instead; the compiler fuses the computation anyway")
    return True


def reduce(b: Builder, kind: str, x: Any, axis: Any = None, dtype: Any = None, out: Any = None,
           keepdims: bool = False) -> Staged:
    """sum, prod, max, min, all, any along `axis`."""
    _no_out(out)
    x = A.lift(b, A.normalize_operand(b, x))
    axes = normalize_axes(axis, x.ndim)
    kw = {} if dtype is None or kind in ("max", "min", "all", "any") else {"dtype": dtype}
    out_dtype = A.oracle(_NUMPY[kind], [x], **kw)
    if kind in ("max", "min"):
        _check_nonempty(b, x, axes, f"zero-size array to reduction operation {_UFUNC_NAMES[kind]} "
                        "which has no identity")
    if kind in ("max", "min") and is_complex(x.dtype):
        return _keep(b, Staged(_complex_extremum(b, x.value, axes, kind)), x, axes, keepdims)
    if kind in ("all", "any"):
        src = x.value if x.dtype == BOOL else ops.ne(b, x.value, A.broadcast_value(
            b, A.constant(b, 0, x.dtype).value, x.shape))
    else:
        src = A.convert_value(b, x.value, out_dtype)
    red = Staged(b.emit1(_PRIMS[kind], [src], {"axes": axes}))
    return _keep(b, red, x, axes, keepdims)


def _complex_hits(b: Builder, z: Any, axes: tuple[int, ...], kind: str) -> tuple[Any, Any, Any, Any]:
    """Where the lexicographic max (min) of z along `axes` sits, as NumPy orders complex
    numbers (real part first, then imaginary; an element with a NaN part wins): (the bool
    positions of the winners, or of the NaN elements when a slice has one; the extremum's real
    part; its imaginary part; whether the slice has a NaN), reduced over `axes` (the parts are
    meaningless where the slice has a NaN)."""
    re, im = ops.real(b, z), ops.imag(b, z)
    shape = tuple(re.type.shape)
    kept = [i for i in range(len(shape)) if i not in axes]
    reduce_ = ops.reduce_max if kind == "max" else ops.reduce_min
    worst = ops.full_like(b, -np.inf if kind == "max" else np.inf, re)

    def back(v: Any) -> Any:
        return ops.broadcast_in_dim(b, v, shape, kept)

    nan = ops.or_(b, ops.isnan(b, re), ops.isnan(b, im))
    clean = ops.not_(b, nan)
    best_re = reduce_(b, ops.select(b, nan, worst, re), axes)
    tie = ops.and_(b, clean, ops.eq(b, re, back(best_re)))
    best_im = reduce_(b, ops.select(b, tie, im, worst), axes)
    winner = ops.and_(b, tie, ops.eq(b, im, back(best_im)))
    any_nan = ops.reduce(ops.reduce_or_p, b, nan, axes)
    return ops.select(b, back(any_nan), nan, winner), best_re, best_im, any_nan


def _complex_extremum(b: Builder, z: Any, axes: tuple[int, ...], kind: str) -> Any:
    """np.max / np.min of complex values: the lexicographic extremum, or the first element
    with a NaN part (in C order over `axes`) where a slice has one, as NumPy."""
    hits, best_re, best_im, any_nan = _complex_hits(b, z, axes, kind)
    re, im = ops.real(b, z), ops.imag(b, z)
    shape = tuple(re.type.shape)
    kept = [i for i in range(len(shape)) if i not in axes]
    position: Any = None                     # C-order position over the reduced axes
    for a in axes:
        term = ops.iota(b, I64, shape, a)
        position = term if position is None else ops.add(
            b, ops.mul(b, position, A.broadcast_value(b, A.dim_value(b, shape[a]).value, shape)), term)
    big = ops.full_like(b, np.iinfo(np.int64).max, position)
    first = ops.reduce_min(b, ops.select(b, hits, position, big), axes)
    only = ops.eq(b, position, ops.broadcast_in_dim(b, first, shape, kept))
    zero = ops.zeros_like(b, re)
    nan_re = ops.reduce_sum(b, ops.select(b, only, re, zero), axes)
    nan_im = ops.reduce_sum(b, ops.select(b, only, im, zero), axes)
    return ops.complex_(b, ops.select(b, any_nan, nan_re, best_re),
                        ops.select(b, any_nan, nan_im, best_im))


def _check_nonempty(b: Builder, x: Staged, axes: tuple[int, ...], message: str) -> None:
    """NumPy's ValueError for a reduction without identity over no elements: at compile
    time for static sizes, when the kernel runs for symbolic ones."""
    if any(isinstance(x.shape[a], int) and x.shape[a] == 0 for a in axes):
        raise Reject(CompileError, message)
    n = prod([x.shape[a] for a in axes])
    if not isinstance(n, int) and not dims.nonnegative(dims.add(n, -1)):
        ops.check(b, ops.gt(b, ops.size_of(b, n, I64), ops.size_of(b, 0, I64)), "ValueError", message)


def count(b: Builder, x: Staged, axes: tuple[int, ...]) -> Any:
    """How many elements each reduction sees: a Python int, or a staged int for symbols."""
    n: Dim = prod([x.shape[a] for a in axes])
    return n if isinstance(n, int) else A.dim_value(b, n)


def mean(b: Builder, x: Any, axis: Any = None, dtype: Any = None, out: Any = None,
         keepdims: bool = False) -> Staged:
    _no_out(out)
    x = A.lift(b, A.normalize_operand(b, x))
    axes = normalize_axes(axis, x.ndim)
    half = dtype is None and x.dtype == F16     # NumPy sums float16 in float32, rounds the mean
    if dtype is None and not is_inexact(x.dtype):
        dtype = F64
    total = reduce(b, "sum", x, axes, F32 if half else dtype)
    res = A.convert(b, binary(b, "true_divide", total, count(b, x, axes)), F16 if half else total.dtype)
    return _keep(b, res, x, axes, keepdims)


def var(b: Builder, x: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0,
        keepdims: bool = False) -> Staged:
    _no_out(out)
    x = A.lift(b, A.normalize_operand(b, x))
    axes = normalize_axes(axis, x.ndim)
    if dtype is None and not is_inexact(x.dtype):
        dtype = F64
    n = count(b, x, axes)
    total = reduce(b, "sum", x, axes, dtype, keepdims=True)
    centered = binary(b, "subtract", x, A.convert(b, binary(b, "true_divide", total, n),
                                                   total.dtype))
    if is_complex(centered.dtype):      # NumPy: the mean of |x - mean|**2, a real result
        parts = [U.real(b, centered), U.imag(b, centered)]
        squares = binary(b, "add", *[binary(b, "multiply", p, p) for p in parts])
        sq = reduce(b, "sum", squares, axes, None if dtype is None else real_dtype(A.supported_dtype(dtype)))
    else:
        sq = reduce(b, "sum", binary(b, "multiply", centered, centered), axes, dtype)
    dof = binary(b, "maximum", binary(b, "subtract", n, ddof), 0) if isinstance(n, Staged) \
        else max(n - ddof, 0)
    res = A.convert(b, binary(b, "true_divide", sq, dof), sq.dtype)
    return _keep(b, res, x, axes, keepdims)


def std(b: Builder, x: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0,
        keepdims: bool = False) -> Staged:
    return sqrt_of_squares(b, var(b, x, axis, dtype, out, ddof, keepdims))


def ptp(b: Builder, x: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Staged:
    hi = reduce(b, "max", x, axis, out=out, keepdims=keepdims)
    lo = reduce(b, "min", x, axis, keepdims=keepdims)
    return binary(b, "subtract", hi, lo)


def count_nonzero(b: Builder, x: Any, axis: Any = None, keepdims: bool = False) -> Staged:
    x = A.lift(b, A.normalize_operand(b, x))
    nz = binary(b, "not_equal", x, 0)
    return reduce(b, "sum", nz, axis, np.int64, keepdims=keepdims)


def arg_reduce(b: Builder, which: str, x: Any, axis: Any = None, out: Any = None,
               keepdims: bool = False) -> Staged:
    """argmax / argmin; axis=None looks at the flattened array."""
    _no_out(out)
    x = A.lift(b, A.normalize_operand(b, x))
    src = ravel(b, x) if axis is None else x
    ax = 0 if axis is None else normalize_axis(axis, x.ndim)
    if src.ndim == 0:
        src = Staged(A.reshape_value(b, src.value, (1,)))
    _check_nonempty(b, src, (ax,), f"attempt to get {which} of an empty sequence")
    if is_complex(src.dtype):       # the first position of the lexicographic extremum (or NaN)
        hits = _complex_hits(b, src.value, (ax,), which[3:])[0]
        res = Staged(ops.argmax(b, ops.convert(b, hits, np.int8), ax))
    else:
        res = Staged((ops.argmax if which == "argmax" else ops.argmin)(b, src.value, ax))
    if keepdims:
        shape = (1,) * x.ndim if axis is None else tuple(
            1 if i == ax else d for i, d in enumerate(x.shape))
        res = Staged(A.reshape_value(b, res.value, shape))
    return res


def scan(b: Builder, kind: str, x: Any, axis: Any = None, dtype: Any = None,
         out: Any = None) -> Staged:
    """cumsum / cumprod; axis=None scans the flattened array."""
    _no_out(out)
    x = A.lift(b, A.normalize_operand(b, x))
    fn = np.cumsum if kind == "cumsum" else np.cumprod
    out_dtype = A.oracle(fn, [x], **({} if dtype is None else {"dtype": dtype}))
    src = ravel(b, x) if axis is None or x.ndim == 0 else x
    ax = 0 if axis is None else normalize_axis(axis, src.ndim)
    prim = P.cumsum if kind == "cumsum" else P.cumprod
    return Staged(b.emit1(prim, [A.convert_value(b, src.value, out_dtype)], {"axis": ax}))
