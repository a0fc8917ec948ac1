"""NumPy's everyday functions (docs/numpy_functions.md) as compositions of the staged
NumPy surface: np.diff, np.interp, np.convolve, the nan-reductions, np.histogram, ...

Each handler takes the :class:`Builder` first and NumPy's own arguments, and builds its
result from the functions of arrays.py, ufuncs.py, reductions.py, shapes.py, indexing.py
and sorting.py, so vmap and AD see ordinary ops. Sizes that NumPy computes from values
(a histogram's bins, a bincount's length, the positions of np.insert) must be static
here; the result shape then is too. Where NumPy raises for a value (np.bincount of a
negative number, np.nanargmax of an all-NaN slice), the kernel raises the same exception
when it runs.

:data:`FUNCTIONS` maps NumPy functions to handlers (merged into numpy_api's table),
:data:`METHODS` the ndarray methods whose handlers here replace numpy_api's, and
:data:`STAGER_FUNCTIONS` the functions that call user functions (np.piecewise): their
handlers take the Stager first.
"""
from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from compiler.errors import CompileError, DynamicShapeError, UnsupportedError
from compiler.frontend import arrays as A
from compiler.frontend import indexing as I
from compiler.frontend import linalg as L
from compiler.frontend import reductions as R
from compiler.frontend import shapes as S
from compiler.frontend import sorting as SO
from compiler.frontend import ufuncs as U
from compiler.frontend.values import Reject, Staged
from compiler.ir.builder import Builder
from compiler.ir import dims
from compiler.ir.dims import DimExpr
from compiler.ir.types import BOOL, F64, I64, is_complex, is_inexact
from compiler.primitives import ops

Handler = Callable[..., Any]
_NO = np._NoValue     # NumPy's "argument not given" marker


# ---- small helpers ---------------------------------------------------------------------------

def _arr(b: Builder, x: Any) -> Staged:
    return A.lift(b, A.normalize_operand(b, x))


def _bin(b: Builder, name: str, x: Any, y: Any) -> Staged:
    return U.binary(b, name, x, y)


def _un(b: Builder, name: str, x: Any) -> Staged:
    return U.unary(b, name, x)


def _sl(b: Builder, x: Staged, axis: int, start: Any, stop: Any) -> Staged:
    return I.getitem(b, x, (slice(None),) * axis + (slice(start, stop),))


def _static_int(v: Any, what: str) -> int:
    if isinstance(v, (Staged, DimExpr)):
        raise Reject(UnsupportedError, f"{what} must be a compile-time integer",
                     "pass a Python int (the result's shape depends on it)")
    try:
        return operator.index(v)
    except TypeError:
        raise Reject(CompileError, f"{what} must be an integer, not {type(v).__name__}") from None


def _static_len(x: Staged, axis: int, what: str) -> int:
    d = x.shape[axis]
    if not isinstance(d, int):
        raise Reject(UnsupportedError, f"{what} needs a static length along axis {axis} "
                     f"(it is {d})", "give that dimension a fixed size in the signature")
    return d


def _float_of(b: Builder, x: Staged) -> Staged:
    """x in its own inexact dtype, or float64 for integers and bools."""
    return x if is_inexact(x.dtype) else A.convert(b, x, F64)


#: a static selection along an axis made of at most this many runs of consecutive positions
#: is a concatenation of slices, not a gather through an index table
MAX_RUNS = 16


def _take_axis(b: Builder, x: Staged, idx: Any, axis: int) -> Staged:
    """x's positions `idx` (static) along `axis`. Runs of consecutive positions (np.insert of
    one value, np.delete of a few) are slices joined: an index table the size of the array
    (8 MB for np.insert(x, 0, 0.0) of 1e6 elements) took a second to compile, and a gather
    runs slower than a copy."""
    pos = np.asarray(idx)
    if pos.ndim == 1 and pos.size and pos.dtype.kind in "iu":
        breaks = np.flatnonzero(np.diff(pos) != 1) + 1
        if len(breaks) < MAX_RUNS:
            pieces = [I.getitem(b, x, (slice(None),) * axis + (slice(int(r[0]), int(r[-1]) + 1),))
                      for r in np.split(pos, breaks)]
            return pieces[0] if len(pieces) == 1 else S.concatenate(b, pieces, axis)
    return I.getitem(b, x, (slice(None),) * axis + (idx,))


# ---- differences, sums, integrals -----------------------------------------------------------

def diff(b: Builder, a: Any, n: Any = 1, axis: Any = -1, prepend: Any = _NO,
         append: Any = _NO) -> Staged:
    """np.diff: the n-th forward difference along `axis`, after prepend/append."""
    n = _static_int(n, "np.diff: n")
    if n < 0:
        raise Reject(CompileError, f"order must be non-negative but got {n}")
    x = _arr(b, a)
    if x.ndim == 0:
        raise Reject(CompileError, "diff requires input that is at least one dimensional")
    ax = S.normalize_axis(axis, x.ndim)
    parts = []
    for extra in (prepend, x, append):
        if extra is _NO:
            continue
        if extra is x:
            parts.append(x)
            continue
        e = A.normalize_operand(b, extra)
        if len(A.shape_of(e)) == 0:
            shape = tuple(1 if i == ax else d for i, d in enumerate(x.shape))
            e = S.broadcast_to(b, e, shape)
        parts.append(e)
    if len(parts) > 1:
        x = S.concatenate(b, parts, ax)
    for _ in range(n):
        hi, lo = _sl(b, x, ax, 1, None), _sl(b, x, ax, None, -1)
        x = _bin(b, "not_equal" if x.dtype == BOOL else "subtract", hi, lo)
    return x


def ediff1d(b: Builder, ary: Any, to_end: Any = None, to_begin: Any = None) -> Staged:
    """np.ediff1d: differences of the flattened array, with to_begin/to_end (cast to its
    dtype, as NumPy does)."""
    x = S.ravel(b, _arr(b, ary))
    d = _bin(b, "subtract", I.getitem(b, x, slice(1, None)), I.getitem(b, x, slice(None, -1)))
    parts = []
    for extra in (to_begin, d, to_end):
        if extra is None:
            continue
        parts.append(d if extra is d else A.astype(b, S.ravel(b, _arr(b, extra)), x.dtype))
    return S.concatenate(b, parts, 0) if len(parts) > 1 else d


def _cumulative(kind: str) -> Handler:
    identity = 0 if kind == "cumsum" else 1

    def handler(b: Builder, x: Any, /, *, axis: Any = None, dtype: Any = None, out: Any = None,
                include_initial: bool = False) -> Staged:
        R._no_out(out)
        v = _arr(b, x)
        if axis is None:
            if v.ndim > 1:
                raise Reject(CompileError, "axis must be specified for multi-dimensional arrays")
            axis = 0
        if v.ndim == 0:
            raise Reject(CompileError, "input array must be at least one dimensional")
        ax = S.normalize_axis(axis, v.ndim)
        res = R.scan(b, kind, v, ax, dtype)
        if include_initial:
            shape = tuple(1 if i == ax else d for i, d in enumerate(v.shape))
            first = S.full(b, shape, identity, res.dtype)
            res = S.concatenate(b, [first, res], ax)
        return res
    return handler


def trapezoid(b: Builder, y: Any, x: Any = None, dx: Any = 1.0, axis: Any = -1) -> Staged:
    """np.trapezoid: ``sum(d * (y[1:] + y[:-1]) / 2.0)`` along `axis`, as NumPy writes it."""
    yv = _arr(b, y)
    ax = S.normalize_axis(axis, yv.ndim)
    if x is None:
        d: Any = dx
    else:
        xv = _arr(b, x)
        d = diff(b, xv, axis=-1 if xv.ndim == 1 else ax)
        if xv.ndim == 1:
            shape = [1] * yv.ndim
            shape[ax] = d.shape[0]
            d = S.reshape(b, d, tuple(shape))
    avg = _bin(b, "true_divide", _bin(b, "add", _sl(b, yv, ax, 1, None), _sl(b, yv, ax, None, -1)),
               2.0)
    return R.reduce(b, "sum", _bin(b, "multiply", d, avg), ax)


def unwrap(b: Builder, p: Any, discont: Any = None, axis: Any = -1, *, period: Any = 2 * np.pi) -> Staged:
    """np.unwrap, as NumPy writes it: each jump along `axis` larger than `discont` (default
    period / 2) is taken modulo `period` into [-period/2, period/2) (a jump of exactly
    -period/2 upwards becomes +period/2), and the corrections are summed along the axis."""
    pv = _arr(b, p)
    if pv.ndim == 0:
        raise Reject(CompileError, "diff requires input that is at least one dimensional")
    ax = S.normalize_axis(axis, pv.ndim)
    dd = diff(b, pv, axis=ax)
    per = _arr(b, period)
    dtype = result_type(b, dd, per)
    if np.issubdtype(dtype, np.integer):
        if isinstance(period, (Staged, DimExpr)):
            raise Reject(UnsupportedError, "np.unwrap of integers needs a static period", None)
        high, rem = divmod(period, 2)
        ambiguous = rem == 0
    else:
        high, ambiguous = _bin(b, "true_divide", per, 2), True
    low = _un(b, "negative", high)
    ddmod = _bin(b, "add", _bin(b, "remainder", _bin(b, "subtract", dd, low), per), low)
    if ambiguous:
        edge = _bin(b, "logical_and", _bin(b, "equal", ddmod, low), _bin(b, "greater", dd, 0))
        ddmod = U.where(b, edge, high, ddmod)
    correct = _bin(b, "subtract", ddmod, dd)
    limit = _bin(b, "true_divide", per, 2) if discont is None else discont
    correct = U.where(b, _bin(b, "less", _un(b, "absolute", dd), limit), 0, correct)
    head = A.astype(b, _sl(b, pv, ax, None, 1), dtype)
    rest = _bin(b, "add", _sl(b, pv, ax, 1, None), R.scan(b, "cumsum", correct, ax, None))
    return S.concatenate(b, [head, A.astype(b, rest, dtype)], ax)


def gradient(b: Builder, f: Any, *varargs: Any, axis: Any = None, edge_order: Any = 1) -> Any:
    """np.gradient: second-order central differences inside, first or second order at the
    edges; spacings are scalars or 1-D coordinate arrays (one per axis)."""
    fv = _arr(b, f)
    axes = tuple(range(fv.ndim)) if axis is None else S.normalize_axes(axis, fv.ndim, sort=False)
    if len(varargs) == 0:
        spacing: list[Any] = [1.0] * len(axes)
    elif len(varargs) == 1 and len(A.shape_of(A.normalize_operand(b, varargs[0]))) == 0:
        spacing = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        spacing = list(varargs)
    else:
        raise Reject(CompileError, "invalid number of arguments")
    edge_order = _static_int(edge_order, "np.gradient: edge_order")
    if edge_order not in (1, 2):
        raise Reject(CompileError, "'edge_order' greater than 2 not supported")
    if fv.dtype.kind in "iu":                         # NumPy: integers in float64; bools fail
        fv = A.convert(b, fv, F64)
    outs = []
    for ax, h in zip(axes, spacing):
        n = fv.shape[ax]
        message = ("Shape of array too small to calculate a numerical gradient, at least "
                   "(edge_order + 1) elements are required.")
        if isinstance(n, int) and n < edge_order + 1:
            raise Reject(CompileError, message)
        if not isinstance(n, int):
            ops.check(b, _bin(b, "greater", A.dim_value(b, n), edge_order).value, "ValueError",
                      message)
        outs.append(_gradient_axis(b, fv, ax, A.normalize_operand(b, h), edge_order))
    return outs[0] if len(outs) == 1 else tuple(outs)


def _gradient_axis(b: Builder, f: Staged, ax: int, h: Any, edge_order: int) -> Staged:
    def at(start: Any, stop: Any) -> Staged:
        return _sl(b, f, ax, start, stop)

    def pt(i: int) -> Staged:                   # entry i along `ax`, kept as an axis of size 1
        return S.expand_dims(b, _take_axis(b, f, i, ax), ax)

    def mul(c: Any, v: Any) -> Staged:
        return _bin(b, "multiply", c, v)

    def add(*vs: Any) -> Staged:
        out = vs[0]
        for v in vs[1:]:
            out = _bin(b, "add", out, v)
        return out

    def div(x: Any, y: Any) -> Staged:
        return _bin(b, "true_divide", x, y)

    def along(v: Any) -> Any:                  # a 1-D coefficient broadcast along `ax`
        if len(A.shape_of(v)) == 0:
            return v
        shape: list[Any] = [1] * f.ndim
        shape[ax] = A.shape_of(v)[0]
        return S.reshape(b, v, tuple(shape))
    if len(A.shape_of(h)) == 0:                     # uniform spacing
        inner = div(_bin(b, "subtract", at(2, None), at(None, -2)), mul(2.0, h))
        if edge_order == 1:
            first = div(_bin(b, "subtract", pt(1), pt(0)), h)
            last = div(_bin(b, "subtract", pt(-1), pt(-2)), h)
        else:
            first = add(mul(div(-1.5, h), pt(0)), mul(div(2.0, h), pt(1)),
                        mul(div(-0.5, h), pt(2)))
            last = add(mul(div(0.5, h), pt(-3)), mul(div(-2.0, h), pt(-2)),
                       mul(div(1.5, h), pt(-1)))
    else:                                            # coordinates: NumPy's non-uniform formulas
        x = _float_of(b, _arr(b, h))
        if x.ndim != 1 or x.shape[0] != f.shape[ax]:
            raise Reject(CompileError, "when 1d, distances must match the length of the "
                         "corresponding dimension")
        dx = diff(b, x)
        dx1, dx2 = I.getitem(b, dx, slice(0, -1)), I.getitem(b, dx, slice(1, None))
        ca = div(_un(b, "negative", dx2), mul(dx1, _bin(b, "add", dx1, dx2)))
        cb = div(_bin(b, "subtract", dx2, dx1), mul(dx1, dx2))
        cc = div(dx1, mul(dx2, _bin(b, "add", dx1, dx2)))
        inner = add(mul(along(ca), at(None, -2)), mul(along(cb), at(1, -1)),
                    mul(along(cc), at(2, None)))
        d0, d1, dn, dn1 = (I.getitem(b, dx, i) for i in (0, 1, -1, -2))
        if edge_order == 1:
            first = div(_bin(b, "subtract", pt(1), pt(0)), d0)
            last = div(_bin(b, "subtract", pt(-1), pt(-2)), dn)
        else:
            s01 = _bin(b, "add", d0, d1)
            first = add(mul(div(_un(b, "negative", _bin(b, "add", mul(2.0, d0), d1)),
                                mul(d0, s01)), pt(0)),
                        mul(div(s01, mul(d0, d1)), pt(1)),
                        mul(div(_un(b, "negative", d0), mul(d1, s01)), pt(2)))
            sn = _bin(b, "add", dn1, dn)
            last = add(mul(div(dn, mul(dn1, sn)), pt(-3)),
                       mul(div(_un(b, "negative", sn), mul(dn1, dn)), pt(-2)),
                       mul(div(_bin(b, "add", mul(2.0, dn), dn1), mul(dn, sn)), pt(-1)))
    return A.convert(b, S.concatenate(b, [first, inner, last], ax), f.dtype)


# ---- comparisons ------------------------------------------------------------------------------

def isclose(b: Builder, a: Any, b_: Any = None, rtol: Any = 1e-05, atol: Any = 1e-08,
            equal_nan: bool = False, **kw: Any) -> Staged:
    """np.isclose, NumPy's formula: ``|x - y| <= atol + rtol * |y|`` for finite y, or x == y."""
    y = kw.pop("b", b_)
    if kw or y is None:
        raise Reject(CompileError, "np.isclose() takes (a, b, rtol=1e-05, atol=1e-08, "
                     "equal_nan=False)")
    x, y = (A.normalize_operand(b, v) for v in (a, y))
    if not isinstance(y, A.PY_SCALARS) or (isinstance(y, Staged) and not y.weak):
        yv = _arr(b, y)
        dt = A.result_dtype([yv, 1.0])
        y = A.convert(b, yv, dt)
    elif isinstance(y, int):
        y = float(y)
    close = _bin(b, "less_equal", _un(b, "absolute", _bin(b, "subtract", x, y)),
                 _bin(b, "add", atol, _bin(b, "multiply", rtol, _un(b, "absolute", y))))
    res = _bin(b, "logical_or", _bin(b, "logical_and", close, _un(b, "isfinite", y)),
               _bin(b, "equal", x, y))
    if equal_nan:
        res = _bin(b, "logical_or", res, _bin(b, "logical_and", _un(b, "isnan", x),
                                              _un(b, "isnan", y)))
    return res


def allclose(b: Builder, a: Any, b_: Any = None, rtol: Any = 1e-05, atol: Any = 1e-08,
             equal_nan: bool = False, **kw: Any) -> Staged:
    """np.allclose: a 0-d bool array (NumPy returns a Python bool)."""
    return R.reduce(b, "all", isclose(b, a, b_, rtol, atol, equal_nan, **kw))


def array_equal(b: Builder, a1: Any, a2: Any, equal_nan: bool = False) -> Any:
    """np.array_equal: False at compile time for shapes that differ, else all(a1 == a2)."""
    x, y = _arr(b, a1), _arr(b, a2)
    if x.ndim != y.ndim or any(isinstance(p, int) and isinstance(q, int) and p != q
                               for p, q in zip(x.shape, y.shape)):
        return False
    if tuple(x.shape) != tuple(y.shape):
        raise Reject(UnsupportedError, f"np.array_equal of shapes {A.fmt_shape(x.shape)} and "
                     f"{A.fmt_shape(y.shape)}: whether they are equal is not known when compiling",
                     "use the same symbol for both dimensions in the signature")
    eq = _bin(b, "equal", x, y)
    if equal_nan and (is_inexact(x.dtype) or is_inexact(y.dtype)):
        eq = _bin(b, "logical_or", eq, _bin(b, "logical_and", _un(b, "isnan", x), _un(b, "isnan", y)))
    return R.reduce(b, "all", eq)


# ---- NaN handling -------------------------------------------------------------------------------

def nan_to_num(b: Builder, x: Any, copy: bool = True, nan: Any = 0.0, posinf: Any = None,
               neginf: Any = None) -> Staged:
    """np.nan_to_num: NaN -> nan, +inf -> posinf (default the largest finite value),
    -inf -> neginf (default the most negative), for each part of a complex value."""
    v = _arr(b, x)
    if not is_inexact(v.dtype):
        return v
    if is_complex(v.dtype):
        return U.make_complex(b, nan_to_num(b, U.real(b, v), copy, nan, posinf, neginf),
                              nan_to_num(b, U.imag(b, v), copy, nan, posinf, neginf))
    info = np.finfo(v.dtype)
    big = info.max if posinf is None else posinf
    small = info.min if neginf is None else neginf

    def fill(value: Any) -> Staged:
        return A.convert(b, _arr(b, value), v.dtype)
    out = U.where(b, _un(b, "isnan", v), fill(nan), v)
    out = U.where(b, _bin(b, "equal", v, np.inf), fill(big), out)
    out = U.where(b, _bin(b, "equal", v, -np.inf), fill(small), out)
    return out


def _nan_replaced(b: Builder, a: Any, value: Any) -> tuple[Staged, Staged | None]:
    """(a with NaN replaced by `value`, the NaN mask or None for an exact dtype)."""
    v = _arr(b, a)
    if not is_inexact(v.dtype):
        return v, None
    mask = _un(b, "isnan", v)
    return U.where(b, mask, A.convert(b, _arr(b, value), v.dtype) if not is_complex(v.dtype)
                   else value, v), mask


def _nan_reduction(kind: str) -> Handler:
    fill = 0 if kind == "sum" else 1

    def handler(b: Builder, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
                keepdims: bool = False, initial: Any = _NO, where: Any = _NO) -> Staged:
        v, _ = _nan_replaced(b, a, fill)
        return _reduce(b, kind, v, axis, dtype, out, keepdims, initial, where)
    return handler


def _nan_scan(kind: str) -> Handler:
    fill = 0 if kind == "cumsum" else 1

    def handler(b: Builder, a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Staged:
        v, _ = _nan_replaced(b, a, fill)
        return R.scan(b, kind, v, axis, dtype, out)
    return handler


def _nan_extremum(kind: str) -> Handler:
    def handler(b: Builder, a: Any, axis: Any = None, out: Any = None, keepdims: bool = False,
                initial: Any = _NO, where: Any = _NO) -> Staged:
        R._no_out(out)
        v = _arr(b, a)
        if not is_inexact(v.dtype) or is_complex(v.dtype):
            return _reduce(b, kind, v, axis, None, None, keepdims, initial, where)
        mask = _un(b, "isnan", v)
        clean = U.where(b, mask, -np.inf if kind == "max" else np.inf, v)
        res = _reduce(b, kind, clean, axis, None, None, keepdims, initial, where)
        every = R.reduce(b, "all", mask, axis, keepdims=keepdims)
        return A.convert(b, U.where(b, every, np.nan, res), v.dtype)
    return handler


def _nan_arg(which: str) -> Handler:
    def handler(b: Builder, a: Any, axis: Any = None, out: Any = None, *,
                keepdims: bool = False) -> Staged:
        v, mask = _nan_replaced(b, a, -np.inf if which == "argmax" else np.inf)
        if mask is not None:
            every = R.reduce(b, "all", mask, axis)
            ops.check(b, _un(b, "logical_not", R.reduce(b, "any", every)).value, "ValueError",
                      "All-NaN slice encountered")
        return R.arg_reduce(b, which, v, axis, out, keepdims)
    return handler


def _nan_count(b: Builder, v: Staged, mask: Staged | None, axis: Any, keepdims: bool) -> Any:
    if mask is None:
        return R.count(b, v, S.normalize_axes(axis, v.ndim)) if not keepdims else \
            S.full(b, tuple(1 if i in S.normalize_axes(axis, v.ndim) else d
                            for i, d in enumerate(v.shape)), R.count(b, v, S.normalize_axes(
                                axis, v.ndim)), np.int64)
    return R.reduce(b, "sum", _un(b, "logical_not", mask), axis, np.int64, keepdims=keepdims)


def nanmean(b: Builder, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
            keepdims: bool = False, *, where: Any = _NO) -> Staged:
    """np.nanmean: the sum of the non-NaN values over their count (NaN where there is none)."""
    R._no_out(out)
    if where is not _NO:
        a = U.where(b, where, a, np.nan)
    v, mask = _nan_replaced(b, a, 0)
    if mask is None:
        return R.mean(b, v, axis, dtype, None, keepdims)
    total = R.reduce(b, "sum", v, axis, dtype, keepdims=keepdims)
    cnt = R.reduce(b, "sum", _un(b, "logical_not", mask), axis, np.int64, keepdims=keepdims)
    return A.convert(b, _bin(b, "true_divide", total, cnt), total.dtype)


def nanvar(b: Builder, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
           ddof: Any = 0, keepdims: bool = False, *, where: Any = _NO, mean: Any = _NO,
           correction: Any = _NO) -> Staged:
    """np.nanvar: ``sum(|x - mean|**2) / max(count - ddof, 0)`` over the non-NaN values."""
    R._no_out(out)
    if mean is not _NO:
        raise Reject(UnsupportedError, "np.nanvar: mean= is not supported")
    if correction is not _NO:
        ddof = correction
    if where is not _NO:
        a = U.where(b, where, a, np.nan)
    v, mask = _nan_replaced(b, a, 0)
    if mask is None:
        return R.var(b, v, axis, dtype, None, ddof, keepdims)
    cnt = R.reduce(b, "sum", _un(b, "logical_not", mask), axis, np.int64, keepdims=True)
    total = R.reduce(b, "sum", v, axis, dtype, keepdims=True)
    avg = A.convert(b, _bin(b, "true_divide", total, cnt), total.dtype)
    centered = U.where(b, mask, 0, _bin(b, "subtract", v, avg))
    if is_complex(centered.dtype):
        sq = _bin(b, "add", _bin(b, "multiply", U.real(b, centered), U.real(b, centered)),
                  _bin(b, "multiply", U.imag(b, centered), U.imag(b, centered)))
    else:
        sq = _bin(b, "multiply", centered, centered)
    ssum = R.reduce(b, "sum", sq, axis, None if dtype is None or is_complex(centered.dtype)
                    else dtype, keepdims=keepdims)
    n = cnt if keepdims else S.squeeze(b, cnt, S.normalize_axes(axis, v.ndim))
    dof = _bin(b, "maximum", _bin(b, "subtract", n, ddof), 0)
    return A.convert(b, _bin(b, "true_divide", ssum, dof), ssum.dtype)


def nanstd(b: Builder, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
           ddof: Any = 0, keepdims: bool = False, *, where: Any = _NO, mean: Any = _NO,
           correction: Any = _NO) -> Staged:
    return U.sqrt_of_squares(b, nanvar(b, a, axis, dtype, out, ddof, keepdims, where=where,
                                       mean=mean, correction=correction))


# ---- reductions with where= and initial= ------------------------------------------------------

_REDUCE_UFUNC = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum",
                 "all": "logical_and", "any": "logical_or"}


def reduction(kind: str) -> Handler:
    """np.sum / prod / max / min / all / any with NumPy's where= and initial=: masked-out
    elements count as the identity (or `initial`), and `initial` joins every slice. The
    handler has NumPy's signature (max, min, all and any take no dtype)."""
    if kind in ("max", "min", "all", "any"):
        def extremum(b: Builder, a: Any, axis: Any = None, out: Any = None, keepdims: bool = False,
                     initial: Any = _NO, where: Any = _NO) -> Staged:
            return _reduce(b, kind, a, axis, None, out, keepdims, initial, where)
        return extremum

    def handler(b: Builder, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
                keepdims: bool = False, initial: Any = _NO, where: Any = _NO) -> Staged:
        return _reduce(b, kind, a, axis, dtype, out, keepdims, initial, where)
    return handler


def _reduce(b: Builder, kind: str, a: Any, axis: Any, dtype: Any, out: Any, keepdims: bool,
            initial: Any, where: Any) -> Staged:
    R._no_out(out)
    x = _arr(b, a)
    if kind in ("max", "min", "all", "any"):
        dtype = None
    if kind in ("max", "min") and where is not _NO and initial is _NO:
        raise Reject(CompileError, f"reduction operation {_REDUCE_UFUNC[kind]} does not have "
                     "an identity, so to use a where mask one has to specify 'initial'")
    if where is not _NO and where is not True:
        fill: Any = {"sum": 0, "prod": 1, "all": True, "any": False}.get(kind, initial)
        w = A.normalize_operand(b, where)
        if tuple(A.broadcast_shapes(A.shape_of(w), x.shape)) != tuple(x.shape):
            x = S.broadcast_to(b, x, A.broadcast_shapes(A.shape_of(w), x.shape))
        x = A.convert(b, U.where(b, w, x, A.convert(b, _arr(b, fill), x.dtype)
                                 if kind not in ("all", "any") else fill), x.dtype)
    if initial is _NO:
        return R.reduce(b, kind, x, axis, dtype, None, keepdims)
    if kind in ("max", "min"):
        # `initial` as one more element of every slice: no slice is empty
        axes = S.normalize_axes(axis, x.ndim)
        kept = [i for i in range(x.ndim) if i not in axes]
        moved = S.transpose(b, x, tuple(kept + list(axes)))
        rows = S.reshape(b, moved, tuple(x.shape[i] for i in kept) + (-1,))
        extra = S.full(b, tuple(x.shape[i] for i in kept) + (1,), initial, x.dtype)
        res = R.reduce(b, kind, S.concatenate(b, [rows, extra], -1), -1)
        if keepdims:
            res = S.reshape(b, res, tuple(1 if i in axes else d for i, d in enumerate(x.shape)))
        return res
    res = R.reduce(b, kind, x, axis, dtype, None, keepdims)
    return A.convert(b, _bin(b, _REDUCE_UFUNC[kind], res, initial), res.dtype)


def mean(b: Builder, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
         keepdims: bool = False, *, where: Any = _NO) -> Staged:
    """np.mean with where=: the sum of the selected elements over their count."""
    if where is _NO or where is True:
        return R.mean(b, a, axis, dtype, out, keepdims)
    R._no_out(out)
    x = _arr(b, a)
    w = A.normalize_operand(b, where)
    shape = A.broadcast_shapes(A.shape_of(w), x.shape)
    x = S.broadcast_to(b, x, shape)
    if dtype is None and not is_inexact(x.dtype):
        dtype = F64
    total = R.reduce(b, "sum", U.where(b, w, x, 0), axis, dtype, keepdims=keepdims)
    cnt = R.reduce(b, "sum", S.broadcast_to(b, w, shape), axis, np.int64, keepdims=keepdims)
    return A.convert(b, _bin(b, "true_divide", total, cnt), total.dtype)


# ---- choosing -------------------------------------------------------------------------------------

def select(b: Builder, condlist: Any, choicelist: Any, default: Any = 0) -> Staged:
    """np.select: the first true condition's choice, else `default` (NumPy's dtype: the
    choices and the default as arrays)."""
    conds, choices = list(condlist), list(choicelist)
    if len(conds) != len(choices):
        raise Reject(CompileError, "list of cases must be same length as list of conditions")
    if not choices:
        raise Reject(CompileError, "select with an empty condition list is not possible")
    choices = [A.normalize_operand(b, c) for c in choices]      # Python scalars stay weak
    dflt = A.normalize_operand(b, default)
    dtype = A.result_dtype([*choices, dflt])
    out = A.convert(b, _arr(b, dflt), dtype)
    for i in range(len(conds) - 1, -1, -1):
        c = A.normalize_operand(b, conds[i])
        kind = c.dtype.kind if isinstance(c, (Staged, np.ndarray, np.generic)) else \
            "b" if isinstance(c, bool) else "?"
        if kind != "b":
            raise Reject(CompileError, f"invalid entry {i} in condlist: should be boolean ndarray")
        out = A.convert(b, U.where(b, c, A.convert(b, _arr(b, choices[i]), dtype), out), dtype)
    return out


def piecewise(st: Any, x: Any, condlist: Any, funclist: Any, *args: Any, **kw: Any) -> Staged:
    """np.piecewise with a static list of functions: each is applied to the whole array and
    its values kept where its condition holds (a later condition wins, as in NumPy)."""
    b = st.b
    xv = _arr(b, x)
    if isinstance(condlist, Staged) and condlist.ndim >= 2:     # NumPy: a list of its rows
        conds: list[Any] = [I.getitem(b, condlist, i) for i in range(_static_len(
            condlist, 0, "np.piecewise: condlist"))]
    elif isinstance(condlist, Staged) or not isinstance(condlist, (list, tuple)):
        conds = [condlist]
    else:
        conds = list(condlist)
    if isinstance(funclist, Staged) or not isinstance(funclist, (list, tuple)):
        raise Reject(CompileError, "np.piecewise: funclist must be a list of functions or "
                     "scalars")
    funcs = list(funclist)
    if len(funcs) == len(conds) + 1:
        anyc = conds[0]
        for c in conds[1:]:
            anyc = _bin(b, "logical_or", anyc, c)
        conds.append(_un(b, "logical_not", anyc))
    elif len(funcs) != len(conds):
        raise Reject(CompileError, f"with {len(conds)} condition(s), either {len(conds)} or "
                     f"{len(conds) + 1} functions are expected")
    out = S.zeros_like(b, xv)
    for c, fn in zip(conds, funcs):
        val = st.call(fn, [xv, *args], kw) if callable(fn) else fn
        val = A.astype(b, S.broadcast_to(b, A.normalize_operand(b, val), xv.shape), xv.dtype)
        out = U.where(b, c, val, out)
    return out


def digitize(b: Builder, x: Any, bins: Any, right: bool = False) -> Staged:
    """np.digitize: np.searchsorted on increasing bins (or on reversed decreasing ones)."""
    side = "left" if right else "right"
    bv = A.normalize_operand(b, bins)
    if not isinstance(bv, Staged):
        bn = np.asarray(bv)
        if bn.ndim != 1:
            raise Reject(CompileError, "bins must be 1-dimensional")
        d = np.diff(bn)
        if np.all(d >= 0):
            return SO.searchsorted(b, bn, x, side=side)
        if np.all(d <= 0):
            return _bin(b, "subtract", len(bn), SO.searchsorted(b, bn[::-1], x, side=side))
        raise Reject(CompileError, "bins must be monotonically increasing or decreasing")
    n = _static_len(bv, 0, "np.digitize: bins")
    inc = SO.searchsorted(b, bv, x, side=side)
    if n < 2:
        return inc
    dif = diff(b, bv)
    up = R.reduce(b, "all", _bin(b, "greater_equal", dif, 0))
    down = R.reduce(b, "all", _bin(b, "less_equal", dif, 0))
    ops.check(b, _bin(b, "logical_or", up, down).value, "ValueError",
              "bins must be monotonically increasing or decreasing")
    dec = _bin(b, "subtract", n, SO.searchsorted(b, S.flip(b, bv, 0), x, side=side))
    return U.where(b, up, inc, dec)


def interp(b: Builder, x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
           period: Any = None) -> Staged:
    """np.interp: piecewise-linear interpolation through (xp, fp), as NumPy computes it
    (the slope from the left point, from the right one where that gives NaN)."""
    xv, xpv, fpv = _arr(b, x), _arr(b, xp), _arr(b, fp)
    out_dtype = np.dtype(np.complex128) if is_complex(fpv.dtype) else np.dtype(np.float64)
    xv, xpv = A.convert(b, xv, F64), A.convert(b, xpv, F64)
    fpv = A.convert(b, fpv, out_dtype)
    if xpv.ndim != 1 or fpv.ndim != 1:
        raise Reject(CompileError, "xp and fp must be 1-D sequences")
    if isinstance(xpv.shape[0], int) and isinstance(fpv.shape[0], int) and xpv.shape[0] != fpv.shape[0]:
        raise Reject(CompileError, "fp and xp are not of the same length.")
    if isinstance(xpv.shape[0], int) and xpv.shape[0] == 0:
        raise Reject(CompileError, "array of sample points is empty")
    if period is not None:
        if not isinstance(period, Staged) and period == 0:
            raise Reject(CompileError, "period must be a non-zero value")
        per = _un(b, "absolute", _arr(b, period))
        left = right = None
        xv = _bin(b, "remainder", xv, per)
        xpv = _bin(b, "remainder", xpv, per)
        order = SO.argsort(b, xpv)
        xpv, fpv = I.getitem(b, xpv, order), I.getitem(b, fpv, order)
        xpv = S.concatenate(b, [_bin(b, "subtract", I.getitem(b, xpv, slice(-1, None)), per), xpv,
                                _bin(b, "add", I.getitem(b, xpv, slice(0, 1)), per)], 0)
        fpv = S.concatenate(b, [I.getitem(b, fpv, slice(-1, None)), fpv,
                                I.getitem(b, fpv, slice(0, 1))], 0)
    n = xpv.shape[0]
    first, last = I.getitem(b, fpv, 0), I.getitem(b, fpv, -1)
    lo_val = first if left is None else A.convert(b, _arr(b, left), out_dtype)
    hi_val = last if right is None else A.convert(b, _arr(b, right), out_dtype)
    if n == 1:
        res = U.where(b, _bin(b, "less", xv, I.getitem(b, xpv, 0)), lo_val,
                      U.where(b, _bin(b, "greater", xv, I.getitem(b, xpv, 0)), hi_val, first))
        return A.convert(b, res, out_dtype)         # NumPy: a NaN x gets fp[0] here
    # the ``interp`` primitive: windows of queries that keep their positions in registers, AD
    # rules in terms of the positions (primitives/searching.py); complex fp: the two parts apart
    xval = xv.value

    def line(f: Staged, lo: Staged, hi: Staged) -> Staged:
        lv, hv = (A.convert_value(b, A.lift(b, v).value, F64) for v in (lo, hi))
        if lv.type.ndim or hv.type.ndim:
            raise Reject(CompileError, "left and right must be scalars")
        return Staged(ops.interp(b, xval, xpv.value, f.value, lv, hv))

    if is_complex(out_dtype):                    # NumPy: the real and imaginary parts apart
        parts = [line(*(part(b, v) for v in (fpv, lo_val, hi_val))) for part in (U.real, U.imag)]
        return A.convert(b, U.make_complex(b, *parts), out_dtype)
    return A.convert(b, line(fpv, lo_val, hi_val), out_dtype)


# ---- convolutions ----------------------------------------------------------------------------------

_SHORT_KERNEL = 512     # np.convolve: the longest kernel summed as shifted slices (compile
#                         time grows with it: 0.3 s for 64 taps, 2.5 s for 500)


def _convolve_full(b: Builder, a: Staged, v: Staged) -> Staged:
    """The full discrete convolution of 1-D a (length n) and v (length m): for a short
    static v, a sum of shifted slices of the zero-padded a; otherwise the windows of the
    padded a gathered into an (n + m - 1, m) matrix, times v reversed."""
    n, m = a.shape[0], v.shape[0]
    dtype = A.result_dtype([a, v])
    a, v = A.convert(b, a, dtype), A.convert(b, v, dtype)
    pad = S.zeros(b, (dims.add(m, -1),), dtype)
    padded = S.concatenate(b, [pad, a, pad], 0)
    if isinstance(m, int) and m <= _SHORT_KERNEL:
        # a short kernel: a sum of m shifted slices, one fused loop over the output
        total = dims.add(dims.add(n, m), -1)
        out: Any = None
        for t in range(m):
            term = _bin(b, "multiply", I.getitem(b, padded, slice(t, dims.add(total, t))),
                        I.getitem(b, v, m - 1 - t))
            out = term if out is None else _bin(b, "add", out, term)
        return A.convert(b, out, dtype)
    k = S.arange(b, dims.add(dims.add(n, m), -1))
    j = S.arange(b, m)
    idx = _bin(b, "add", S.reshape(b, k, (-1, 1)), S.reshape(b, j, (1, -1)))
    windows = I.getitem(b, padded, idx)
    return L.matmul(b, windows, S.flip(b, v, 0))


def _vectors(b: Builder, a: Any, v: Any, name: str) -> tuple[Staged, Staged, Any, Any]:
    """The two 1-D operands of np.convolve/np.correlate (a 0-d one as a vector of one) and
    their lengths."""
    av, vv = _arr(b, a), _arr(b, v)
    if av.ndim == 0:
        av = S.reshape(b, av, (1,))
    if vv.ndim == 0:
        vv = S.reshape(b, vv, (1,))
    if av.ndim != 1 or vv.ndim != 1:
        raise Reject(CompileError, f"object too deep for desired array: {name} takes 1-D arrays")
    return av, vv, av.shape[0], vv.shape[0]


def convolve(b: Builder, a: Any, v: Any, mode: str = "full") -> Staged:
    """np.convolve of 1-D arrays, modes full, same and valid (the longer array slides)."""
    av, vv, n, m = _vectors(b, a, v, "np.convolve")
    if isinstance(n, int) and n == 0 or isinstance(m, int) and m == 0:
        raise Reject(CompileError, "a cannot be empty" if n == 0 else "v cannot be empty")
    if mode not in ("full", "same", "valid"):
        raise Reject(CompileError, f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")
    if mode != "full" and not (isinstance(n, int) and isinstance(m, int)) and n != m:
        # symbolic lengths: the first array must be the longer one (NumPy would swap them)
        ops.check(b, _bin(b, "greater_equal", A.dim_value(b, n), A.dim_value(b, m)).value,
                  "ValueError", f"np.convolve(mode={mode!r}) of arrays of symbolic lengths "
                  "needs the first to be at least as long as the second")
    if isinstance(n, int) and isinstance(m, int) and m > n:
        av, vv, n, m = vv, av, m, n
    full = _convolve_full(b, av, vv)
    if mode == "full":
        return full
    if mode == "same":
        start = (m - 1) // 2 if isinstance(m, int) else dims.floordiv(dims.add(m, -1), 2)
        return I.getitem(b, full, slice(start, dims.add(start, n)))
    return I.getitem(b, full, slice(dims.add(m, -1), n))


def correlate(b: Builder, a: Any, v: Any, mode: str = "valid") -> Staged:
    """np.correlate: ``c[k] = sum(a[n + k] * conj(v[n]))``, modes valid, same and full."""
    av, vv, n, m = _vectors(b, a, v, "np.correlate")
    if mode not in ("full", "same", "valid"):
        raise Reject(CompileError, f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")
    if not (isinstance(n, int) and isinstance(m, int)) and n != m:
        # symbolic lengths: the first array must be the longer one (NumPy would swap them)
        ops.check(b, _bin(b, "greater_equal", A.dim_value(b, n), A.dim_value(b, m)).value,
                  "ValueError", "np.correlate of arrays of symbolic lengths needs the first to "
                  "be at least as long as the second")
    if is_complex(vv.dtype):
        vv = U.conj(b, vv)
    swapped = isinstance(n, int) and isinstance(m, int) and m > n
    if swapped:       # NumPy: correlate(v, a) reversed and conjugated
        av, vv, n, m = (U.conj(b, vv) if is_complex(vv.dtype) else vv), \
            (U.conj(b, av) if is_complex(av.dtype) else av), m, n
    full = _convolve_full(b, av, S.flip(b, vv, 0))
    if mode == "same":
        start = (m - 1) // 2 if isinstance(m, int) else dims.floordiv(dims.add(m, -1), 2)
        full = I.getitem(b, full, slice(start, dims.add(start, n)))
    elif mode == "valid":
        full = I.getitem(b, full, slice(dims.add(m, -1), n))
    if swapped:
        full = S.flip(b, full, 0)
        if is_complex(full.dtype):
            full = U.conj(b, full)
    return full


# ---- grids --------------------------------------------------------------------------------------

def meshgrid(b: Builder, *xi: Any, copy: bool = True, sparse: bool = False,
             indexing: str = "xy") -> tuple[Staged, ...]:
    """np.meshgrid: coordinate arrays from 1-D vectors ('xy': the first two axes swapped)."""
    if indexing not in ("xy", "ij"):
        raise Reject(CompileError, "Valid values for `indexing` are 'xy' and 'ij'.")
    xs = [S.ravel(b, _arr(b, x)) for x in xi]
    nd = len(xs)
    outs = []
    for i, x in enumerate(xs):
        shape = [1] * nd
        shape[i] = -1
        if indexing == "xy" and nd > 1 and i < 2:
            shape[0], shape[1] = shape[1], shape[0]
        outs.append(S.reshape(b, x, tuple(shape)))
    if not sparse:
        full = A.broadcast_shapes(*[o.shape for o in outs])
        outs = [S.broadcast_to(b, o, full) for o in outs]
    return tuple(outs)


def indices(b: Builder, dimensions: Any, dtype: Any = int, sparse: bool = False) -> Any:
    """np.indices of symbolic dimensions (static ones are computed by NumPy)."""
    dims_ = tuple(dimensions)
    nd = len(dims_)
    outs = []
    for i, d in enumerate(dims_):
        shape = [1] * nd
        shape[i] = -1
        outs.append(S.reshape(b, A.astype(b, S.arange(b, d), dtype), tuple(shape)))
    if sparse:
        return tuple(outs)
    return S.stack(b, [S.broadcast_to(b, o, dims_) for o in outs], 0)


# ---- statistics -------------------------------------------------------------------------------------

def average(b: Builder, a: Any, axis: Any = None, weights: Any = None, returned: bool = False, *,
            keepdims: bool = False) -> Any:
    """np.average: ``sum(a * w) / sum(w)`` in NumPy's dtype (a ZeroDivisionError when the
    weights sum to zero)."""
    x = _arr(b, a)
    if weights is None:
        avg = R.mean(b, x, axis, None, None, keepdims)
        if not returned:
            return avg
        scl = S.full(b, avg.shape, R.count(b, x, S.normalize_axes(axis, x.ndim)), avg.dtype)
        return avg, scl
    w = _arr(b, weights)
    if tuple(w.shape) != tuple(x.shape):
        if axis is None:
            raise Reject(CompileError, "Axis must be specified when shapes of a and weights "
                         "differ.")
        axes = S.normalize_axes(axis, x.ndim, sort=False)
        if tuple(w.shape) != tuple(x.shape[ax] for ax in axes):
            raise Reject(CompileError, "Shape of weights must be consistent with shape of a "
                         "along specified axis.")
        w = S.moveaxis(b, S.broadcast_to(b, w, tuple(x.shape[i] for i in range(x.ndim)
                                                      if i not in axes) + tuple(w.shape)),
                       tuple(range(x.ndim - len(axes), x.ndim)), axes)
    if x.dtype.kind in "biu":
        dtype = A.result_dtype([x, w, np.zeros((), np.float64)])
    else:
        dtype = A.result_dtype([x, w])
    scl = R.reduce(b, "sum", w, axis, dtype, keepdims=keepdims)
    ops.check(b, _un(b, "logical_not", R.reduce(b, "any", _bin(b, "equal", scl, 0))).value,
              "ZeroDivisionError", "Weights sum to zero, can't be normalized")
    num = R.reduce(b, "sum", A.convert(b, _bin(b, "multiply", x, w), dtype), axis, dtype,
                   keepdims=keepdims)
    avg = A.convert(b, _bin(b, "true_divide", num, scl), dtype)
    if returned:
        return avg, S.broadcast_to(b, scl, avg.shape)
    return avg


def cov(b: Builder, m: Any, y: Any = None, rowvar: bool = True, bias: bool = False,
        ddof: Any = None, fweights: Any = None, aweights: Any = None, *, dtype: Any = None) -> Staged:
    """np.cov without fweights/aweights: ``X X^H / (N - ddof)`` of the centered rows."""
    if fweights is not None or aweights is not None:
        raise Reject(UnsupportedError, "np.cov: fweights= and aweights= are not supported",
                     "weight the centered observations yourself")
    mv = _arr(b, m)
    if mv.ndim > 2:
        raise Reject(CompileError, "m has more than 2 dimensions")
    operands: list[Any] = [mv, np.zeros((), np.float64)]
    yv = None
    if y is not None:
        yv = _arr(b, y)
        if yv.ndim > 2:
            raise Reject(CompileError, "y has more than 2 dimensions")
        operands.append(yv)
    dt = A.supported_dtype(dtype) if dtype is not None else A.result_dtype(operands)
    X = A.convert(b, S.atleast_nd(b, mv, 2), dt)
    if not rowvar and X.shape[0] != 1:
        X = S.transpose(b, X)
    if yv is not None:
        Y = A.convert(b, S.atleast_nd(b, yv, 2), dt)
        if not rowvar and Y.shape[0] != 1:
            Y = S.transpose(b, Y)
        X = S.concatenate(b, [X, Y], 0)
    if ddof is None:
        ddof = 0 if bias else 1
    n = X.shape[1]
    avg = R.mean(b, X, 1, keepdims=True)
    Xc = A.convert(b, _bin(b, "subtract", X, avg), dt)
    prod_ = L.matmul(b, Xc, U.conj(b, S.transpose(b, Xc)) if is_complex(dt) else S.transpose(b, Xc))
    fact = _bin(b, "maximum", _bin(b, "subtract", A.dim_value(b, n) if not isinstance(n, int) else n,
                                   ddof), 0)
    c = A.convert(b, _bin(b, "true_divide", prod_, fact), dt)
    ones = tuple(i for i, d in enumerate(c.shape) if isinstance(d, int) and d == 1)
    return S.squeeze(b, c, ones) if ones else c    # NumPy's squeeze, of static sizes


def corrcoef(b: Builder, x: Any, y: Any = None, rowvar: bool = True, *, dtype: Any = None) -> Staged:
    """np.corrcoef: the covariance over the outer product of the standard deviations,
    clipped to [-1, 1] (each part, for complex values)."""
    c = cov(b, x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return _bin(b, "true_divide", c, c)
    d = S.diagonal(b, c)
    sd = _un(b, "sqrt", U.real(b, d) if is_complex(d.dtype) else d)
    c = _bin(b, "true_divide", c, S.reshape(b, sd, (-1, 1)))
    c = _bin(b, "true_divide", c, S.reshape(b, sd, (1, -1)))
    if is_complex(c.dtype):
        return U.make_complex(b, U.clip(b, U.real(b, c), -1, 1), U.clip(b, U.imag(b, c), -1, 1))
    return U.clip(b, c, -1, 1)


# ---- polynomials -----------------------------------------------------------------------------------

def polyval(b: Builder, p: Any, x: Any) -> Staged:
    """np.polyval by Horner's rule over the (static number of) coefficients."""
    pv = _arr(b, p)
    xv = _arr(b, x)
    n = _static_len(pv, 0, "np.polyval: p") if pv.ndim else 0
    y = S.zeros_like(b, xv)
    for i in range(n):
        y = _bin(b, "add", _bin(b, "multiply", y, xv), I.getitem(b, pv, i))
    return y


def polyder(b: Builder, p: Any, m: Any = 1) -> Staged:
    """np.polyder: the m-th derivative's coefficients (a static number of them)."""
    m = _static_int(m, "np.polyder: m")
    if m < 0:
        raise Reject(CompileError, "Order of derivative must be positive (see polyint)")
    y = _arr(b, p)
    for _ in range(m):
        n = _static_len(y, 0, "np.polyder: p") - 1
        y = _bin(b, "multiply", I.getitem(b, y, slice(None, -1)), np.arange(n, 0, -1))
    return y


def polyint(b: Builder, p: Any, m: Any = 1, k: Any = None) -> Staged:
    """np.polyint: the m-th antiderivative's coefficients, integration constants `k`."""
    m = _static_int(m, "np.polyint: m")
    if m < 0:
        raise Reject(CompileError, "Order of integral must be positive (see polyder)")
    ks: list[Any]
    if k is None:
        ks = [0.0] * m
    elif isinstance(k, (list, tuple)) or (isinstance(k, np.ndarray) and k.ndim == 1):
        ks = list(k)
        if len(ks) < m:
            raise Reject(CompileError, "k must be a scalar or a rank-1 array of length 1 or >m.")
        if len(ks) == 1:
            ks = ks * m
    else:
        ks = [k] * m
    y = _arr(b, p)
    for i in range(m):
        n = _static_len(y, 0, "np.polyint: p")
        term = _bin(b, "true_divide", y, np.arange(n, 0, -1))
        const = S.reshape(b, A.lift(b, np.asarray([ks[i]]) if not isinstance(ks[i], Staged)
                                    else ks[i]), (1,))
        y = S.concatenate(b, [term, const], 0)
    return y


# ---- counting ----------------------------------------------------------------------------------------

def _scatter_count(b: Builder, idx: Staged, weights: Staged, length: int) -> Staged:
    """zeros(length) with weights[i] added at idx[i] (every idx in range)."""
    total = S.zeros(b, (length,), weights.dtype)
    flat_idx = S.ravel(b, A.convert(b, idx, I64))
    flat_w = S.ravel(b, weights)
    return Staged(ops.scatter(b, total.value, flat_idx.value, flat_w.value, axis=0, mode="add"))


def bincount(b: Builder, x: Any, weights: Any = None, minlength: Any = 0) -> Staged:
    """np.bincount with a static length `minlength`: a value outside [0, minlength) raises
    when the kernel runs (NumPy would grow the result, whose length would then depend on
    the values)."""
    xv = _arr(b, x)
    if xv.ndim != 1:
        raise Reject(CompileError, "object too deep for desired array: np.bincount takes a 1-D "
                     "array")
    if xv.dtype.kind not in "iub":
        raise Reject(CompileError, "Cannot cast array data from dtype('float64') to "
                     "dtype('int64') according to the rule 'safe'")
    if isinstance(minlength, (Staged, DimExpr)) or minlength is None or minlength == 0:
        raise Reject(DynamicShapeError, "np.bincount's length depends on the largest value",
                     "pass a static minlength=k larger than every value: the result then has "
                     "length k")
    length = _static_int(minlength, "np.bincount: minlength")
    if length < 0:
        raise Reject(CompileError, "'minlength' must not be negative")
    ops.check(b, _bin(b, "greater_equal", xv, 0).value, "ValueError",
              "'list' argument must have no negative elements")
    ops.check(b, _bin(b, "less", xv, length).value, "ValueError",
              f"np.bincount: a value is >= minlength={length}; the compiled bincount has a "
              "static length (pass a larger minlength)")
    if weights is None:
        w = S.ones(b, xv.shape, np.int64)
    else:
        w = A.convert(b, _arr(b, weights), F64)
        if tuple(w.shape) != tuple(xv.shape):
            raise Reject(CompileError, "The weights and list don't have the same length.")
    return _scatter_count(b, xv, w, length)


def _edges(b: Builder, a: Staged, bins: Any, range_: Any, what: str,
           dtype: Any = None) -> tuple[Any, Any, Any, int]:
    """(first edge, last edge, the edges, the number of bins) as np.histogram finds them:
    Python floats and a static array when `range_` is static, staged values otherwise (the
    extremes of `a` without a range). `dtype`: the edges' dtype (NumPy's bin type)."""
    if isinstance(bins, (list, tuple, np.ndarray)):
        edges = np.asarray(bins)
        if edges.ndim != 1:
            raise Reject(CompileError, "`bins` must be 1d, when an array")
        if np.any(edges[:-1] > edges[1:]):
            raise Reject(CompileError, "`bins` must increase monotonically, when an array")
        return edges[0], edges[-1], edges, len(edges) - 1
    if isinstance(bins, str):
        raise Reject(UnsupportedError, f"{what}: bins={bins!r} (an estimator) is not supported: "
                     "the number of bins would depend on the values", "pass a static integer")
    nbins = _static_int(bins, f"{what}: bins")
    if nbins < 1:
        raise Reject(CompileError, "`bins` must be positive, when an integer")
    if range_ is not None:
        lo, hi = range_
        if not any(isinstance(v, Staged) for v in (lo, hi)):
            if lo > hi:
                raise Reject(CompileError, "max must be larger than min in range parameter.")
            if not (np.isfinite(lo) and np.isfinite(hi)):
                raise Reject(CompileError, f"supplied range of [{lo}, {hi}] is not finite")
            if lo == hi:
                lo, hi = lo - 0.5, hi + 0.5
            dt = dtype if dtype is not None else np.float64
            return lo, hi, np.linspace(lo, hi, nbins + 1, dtype=dt), nbins
        lo, hi = _arr(b, lo), _arr(b, hi)
    else:
        lo, hi = R.reduce(b, "min", a), R.reduce(b, "max", a)
        ops.check(b, _bin(b, "logical_and", _un(b, "isfinite", lo), _un(b, "isfinite", hi)).value,
                  "ValueError", "autodetected range of the values is not finite")
    dt = dtype if dtype is not None else A.result_dtype([lo, hi, 1.0])
    same = _bin(b, "equal", lo, hi)
    lo = A.convert(b, U.where(b, same, _bin(b, "subtract", lo, 0.5), lo), dt)
    hi = A.convert(b, U.where(b, same, _bin(b, "add", hi, 0.5), hi), dt)
    return lo, hi, A.convert(b, S.linspace(b, lo, hi, nbins + 1), dt), nbins


def histogram(b: Builder, a: Any, bins: Any = 10, range: Any = None, density: Any = None,
              weights: Any = None) -> tuple[Staged, Any]:
    """np.histogram with a static number of bins (or static edges): NumPy's bin index
    computation in its bin dtype, values outside the range dropped."""
    av = S.ravel(b, _arr(b, a))
    bin_type = A.result_dtype([av, 1.0]) if av.dtype.kind in "biu" else av.dtype
    if range is not None and not isinstance(bins, (list, tuple, np.ndarray)):
        bin_type = A.result_dtype([*(A.normalize_operand(b, v) for v in range), av])
        bin_type = A.result_dtype([np.zeros((), bin_type), 1.0]) if bin_type.kind in "biu" \
            else bin_type
    lo, hi, edges, nbins = _edges(b, av, bins, range, "np.histogram", bin_type)
    keep = _bin(b, "logical_and", _bin(b, "greater_equal", av, lo), _bin(b, "less_equal", av, hi))
    if not isinstance(bins, (list, tuple, np.ndarray)):
        # uniform bins: NumPy's formula and its one-ULP corrections
        x = A.convert(b, av, bin_type)
        denom = hi - lo if not isinstance(lo, Staged) else _bin(b, "subtract", hi, lo)
        f = _bin(b, "multiply", _bin(b, "true_divide", _bin(b, "subtract", x, lo), denom), nbins)
        idx = A.astype(b, U.where(b, keep, f, 0), np.int64)
        idx = U.where(b, _bin(b, "equal", idx, nbins), nbins - 1, idx)
        e = edges if isinstance(edges, Staged) else A.lift(b, edges)
        idx = U.clip(b, idx, 0, nbins - 1)
        idx = U.where(b, _bin(b, "less", x, I.getitem(b, e, idx)), _bin(b, "subtract", idx, 1), idx)
        idx = U.clip(b, idx, 0, nbins - 1)
        up = _bin(b, "logical_and", _bin(b, "greater_equal", x,
                                         I.getitem(b, e, _bin(b, "add", idx, 1))),
                  _bin(b, "not_equal", idx, nbins - 1))
        idx = U.where(b, up, _bin(b, "add", idx, 1), idx)
    else:
        e = A.lift(b, edges)
        idx = _bin(b, "subtract", SO.searchsorted(b, e, av, side="right"), 1)
        idx = U.where(b, _bin(b, "equal", av, I.getitem(b, e, -1)), nbins - 1, idx)
    idx = U.clip(b, U.where(b, keep, idx, 0), 0, nbins - 1)
    if weights is None:
        w: Staged = A.astype(b, keep, np.int64)
    else:
        wv = S.ravel(b, _arr(b, weights))
        w = A.convert(b, U.where(b, keep, wv, 0), wv.dtype)
    hist = _scatter_count(b, idx, w, nbins)
    e_out = edges if isinstance(edges, Staged) else A.lift(b, edges)
    if density:
        widths = A.convert(b, diff(b, e_out), F64)
        hist = _bin(b, "true_divide", _bin(b, "true_divide", hist, widths),
                    R.reduce(b, "sum", hist))
    return hist, e_out


def histogram2d(b: Builder, x: Any, y: Any, bins: Any = 10, range: Any = None,
                density: Any = None, weights: Any = None) -> tuple[Staged, Any, Any]:
    """np.histogram2d with static bin counts (or edges): np.histogramdd's searchsorted
    binning, the last edge closed; a float64 result."""
    xs = [S.ravel(b, _arr(b, x)), S.ravel(b, _arr(b, y))]
    if xs[0].shape != xs[1].shape:
        raise Reject(CompileError, "x and y must have the same length")
    sample_type = A.result_dtype(xs)
    xs = [A.convert(b, v, sample_type) for v in xs]
    if isinstance(bins, (list, tuple)) and len(bins) == 2:
        binspec = list(bins)
    else:
        binspec = [bins, bins]
    ranges = [None, None] if range is None else list(range)
    flat: Any = None
    keep: Any = None
    counts, edge_list = [], []
    for v, bs, rg in zip(xs, binspec, ranges):
        dt = None if rg is not None else A.result_dtype([v, 1.0]) if v.dtype.kind in "biu" \
            else v.dtype
        lo, hi, edges, nb = _edges(b, v, bs, rg, "np.histogram2d", dt)
        e = edges if isinstance(edges, Staged) else A.lift(b, edges)
        i = _bin(b, "subtract", SO.searchsorted(b, e, v, side="right"), 1)
        i = U.where(b, _bin(b, "equal", v, I.getitem(b, e, -1)), nb - 1, i)
        k = _bin(b, "logical_and", _bin(b, "greater_equal", i, 0), _bin(b, "less", i, nb))
        keep = k if keep is None else _bin(b, "logical_and", keep, k)
        i = U.clip(b, i, 0, nb - 1)
        flat = i if flat is None else _bin(b, "add", _bin(b, "multiply", flat, nb), i)
        counts.append(nb)
        edge_list.append(e)
    if weights is None:
        w: Staged = A.astype(b, keep, np.float64)
    else:
        w = A.convert(b, U.where(b, keep, S.ravel(b, _arr(b, weights)), 0), F64)
    hist = S.reshape(b, _scatter_count(b, U.where(b, keep, flat, 0), w, counts[0] * counts[1]),
                     tuple(counts))
    if density:               # NumPy's order: by each axis's widths, then by the total
        total = R.reduce(b, "sum", hist)
        hist = _bin(b, "true_divide", hist, S.reshape(b, diff(b, edge_list[0]), (-1, 1)))
        hist = _bin(b, "true_divide", hist, S.reshape(b, diff(b, edge_list[1]), (1, -1)))
        hist = _bin(b, "true_divide", hist, total)
    return hist, edge_list[0], edge_list[1]


# ---- index helpers, insertion and deletion ---------------------------------------------------------

def _square_side(arr: Staged, what: str) -> tuple[int, int]:
    if arr.ndim != 2:
        raise Reject(CompileError, "input array must be 2-d")
    n, m = arr.shape
    if not (isinstance(n, int) and isinstance(m, int)):
        raise Reject(DynamicShapeError, f"{what} of a matrix of symbolic size {A.fmt_shape(arr.shape)}"
                     ": the number of indices depends on it", "give the matrix a static shape")
    return n, m


def _tri_indices_from(lower: bool) -> Handler:
    def handler(b: Builder, arr: Any, k: Any = 0) -> tuple[np.ndarray, np.ndarray]:
        n, m = _square_side(_arr(b, arr), "np.tril_indices_from" if lower else "np.triu_indices_from")
        return (np.tril_indices if lower else np.triu_indices)(n, k=_static_int(k, "k"), m=m)
    return handler


def _needs_static(name: str) -> Handler:
    def handler(b: Builder, *args: Any, **kwargs: Any) -> Any:
        raise Reject(DynamicShapeError, f"np.{name} needs static sizes: the number of indices "
                     "would depend on run-time values", "pass Python ints (x.shape of a static "
                     "shape works)")
    return handler


def diag_indices_from(b: Builder, arr: Any) -> tuple[np.ndarray, ...]:
    x = _arr(b, arr)
    if x.ndim < 2:
        raise Reject(CompileError, "input array must be at least 2-d")
    if len(set(x.shape)) != 1 or not isinstance(x.shape[0], int):
        raise Reject(CompileError, "All dimensions of input must be of equal (static) length")
    return np.diag_indices(x.shape[0], x.ndim)


def resize(b: Builder, a: Any, new_shape: Any) -> Staged:
    """np.resize: the flattened array repeated (or cut) to fill `new_shape`."""
    x = S.ravel(b, _arr(b, a))
    shape = S.shape_arg(new_shape, b)
    total = A.prod(shape)
    n = x.shape[0]
    if not (isinstance(total, int) and isinstance(n, int)):
        raise Reject(UnsupportedError, "np.resize needs static sizes", "use np.tile and a slice")
    if any(isinstance(d, int) and d < 0 for d in shape):
        raise Reject(CompileError, "all elements of `new_shape` must be non-negative")
    if n == 0 or total == 0:
        return S.zeros(b, shape, x.dtype)
    reps = -(-total // n)
    flat = S.concatenate(b, [x] * reps, 0) if reps > 1 else x
    return S.reshape(b, I.getitem(b, flat, slice(0, total)), shape)


def _static_positions(obj: Any, n: int, what: str) -> Any:
    if isinstance(obj, (Staged, DimExpr)) or (isinstance(obj, (list, tuple)) and
                                              any(isinstance(o, (Staged, DimExpr)) for o in obj)):
        raise Reject(UnsupportedError, f"np.{what} needs static positions (the result's shape "
                     "depends on them)", "pass Python ints, a slice or a list of ints")
    if isinstance(obj, slice):
        return np.arange(*obj.indices(n))
    pos = np.asarray(obj)
    if pos.dtype == bool:
        if pos.shape != (n,):
            raise Reject(CompileError, f"boolean array argument obj to {what} must be one "
                         f"dimensional and match the axis length of {n}")
        return np.flatnonzero(pos)
    if pos.size and pos.dtype.kind not in "iu":
        raise Reject(CompileError, "index array argument obj to insert must be one dimensional "
                     "or scalar" if what == "insert" else "arrays used as indices must be of "
                     "integer (or boolean) type")
    return pos.astype(np.int64)


def delete(b: Builder, arr: Any, obj: Any, axis: Any = None) -> Staged:
    """np.delete with static positions: the kept positions, gathered."""
    x = _arr(b, arr)
    if axis is None:
        x, ax = S.ravel(b, x), 0
    else:
        ax = S.normalize_axis(axis, x.ndim)
    n = _static_len(x, ax, "np.delete")
    pos = _static_positions(obj, n, "delete")
    if np.any((pos < -n) | (pos >= n)):
        bad = int(pos[(pos < -n) | (pos >= n)][0])
        raise Reject(I.IndexOutOfBoundsError, f"index {bad} is out of bounds for axis {ax} with "
                     f"size {n}")
    keep = np.ones(n, bool)
    keep[pos % n if n else pos] = False
    return _take_axis(b, x, np.flatnonzero(keep), ax)


def insert(b: Builder, arr: Any, obj: Any, values: Any, axis: Any = None) -> Staged:
    """np.insert with static positions: the array and the values concatenated along the
    axis, then permuted into place by a static gather (NumPy's placement rules)."""
    x = _arr(b, arr)
    if axis is None:
        x, ax = S.ravel(b, x), 0
    else:
        ax = S.normalize_axis(axis, x.ndim)
    n = _static_len(x, ax, "np.insert")
    scalar = not isinstance(obj, (slice, list, tuple, np.ndarray))
    pos = _static_positions(obj, n, "insert")
    if np.any((pos < -n) | (pos > n)):
        bad = int(pos[(pos < -n) | (pos > n)][0])
        raise Reject(I.IndexOutOfBoundsError, f"index {bad} is out of bounds for axis {ax} with "
                     f"size {n}")
    pos = np.where(pos < 0, pos + n, pos)
    v = A.astype(b, _arr(b, values), x.dtype)
    if scalar or pos.ndim == 0:
        # NumPy: values as an array of at least x.ndim dims, axis 0 moved to `axis`
        if v.ndim < x.ndim:
            v = S.reshape(b, v, (1,) * (x.ndim - v.ndim) + tuple(v.shape))
        if scalar:
            v = S.moveaxis(b, v, 0, ax)
        k = _static_len(v, ax, "np.insert: values") if v.ndim else 1
        shape = tuple(k if i == ax else d for i, d in enumerate(x.shape))
        v = S.broadcast_to(b, v, shape)
        where = np.full(k, int(pos))
    else:
        k = pos.size
        shape = tuple(k if i == ax else d for i, d in enumerate(x.shape))
        v = S.broadcast_to(b, v, shape)
        where = pos.ravel()
    # the new positions: NumPy sorts the insertion points stably and shifts each by its rank
    order = np.argsort(where, kind="stable")
    new_pos = np.empty(k, np.int64)
    new_pos[order] = where[order] + np.arange(k)
    total = n + k
    source = np.empty(total, np.int64)
    is_new = np.zeros(total, bool)
    is_new[new_pos] = True
    source[new_pos] = n + np.arange(k)
    source[~is_new] = np.arange(n)
    return _take_axis(b, S.concatenate(b, [x, v], ax), source, ax)


def compress(b: Builder, condition: Any, a: Any, axis: Any = None, out: Any = None) -> Staged:
    """np.compress with a static condition: a static gather of the selected positions."""
    R._no_out(out)
    cond = A.normalize_operand(b, condition)
    if isinstance(cond, Staged):
        raise Reject(DynamicShapeError, "np.compress returns an array whose length depends on the "
                     "values of a run-time condition", "pass a static condition (a list or "
                     "NumPy array of bools), or use np.where(cond, x, fill)")
    c = np.asarray(cond)
    if c.ndim != 1:
        raise Reject(CompileError, "condition must be a 1-d array")
    x = _arr(b, a)
    if axis is None:
        x, ax = S.ravel(b, x), 0
    else:
        ax = S.normalize_axis(axis, x.ndim)
    n = _static_len(x, ax, "np.compress")
    picked = np.flatnonzero(c)
    if picked.size and picked[-1] >= n:
        raise Reject(I.IndexOutOfBoundsError, f"index {int(picked[-1])} is out of bounds for "
                     f"axis {ax} with size {n}")
    return _take_axis(b, x, picked, ax)


def block(b: Builder, arrays: Any) -> Staged:
    """np.block: nested lists concatenated innermost along the last axis, each level one
    axis further out (arrays padded with leading 1s to the result's rank)."""
    def depth(x: Any) -> int:
        if isinstance(x, tuple):
            raise Reject(CompileError, "np.block: tuples are not allowed, use lists")
        if isinstance(x, list):
            if not x:
                raise Reject(CompileError, "np.block: lists cannot be empty")
            ds = {depth(e) for e in x}
            if len(ds) != 1:
                raise Reject(CompileError, "np.block: list depths are mismatched")
            return ds.pop() + 1
        return 0

    def leaves(x: Any) -> list[Any]:
        return [y for e in x for y in leaves(e)] if isinstance(x, list) else [x]
    d = depth(arrays)
    items = [A.normalize_operand(b, e) for e in leaves(arrays)]
    nd = max([d] + [len(A.shape_of(e)) for e in items])
    dtype = A.result_dtype(items)

    def build(x: Any, level: int) -> Staged:
        if not isinstance(x, list):
            v = A.convert(b, _arr(b, A.normalize_operand(b, x)), dtype)
            return S.reshape(b, v, (1,) * (nd - v.ndim) + tuple(v.shape)) if v.ndim < nd else v
        parts = [build(e, level + 1) for e in x]
        return S.concatenate(b, parts, -(d - level)) if len(parts) > 1 else parts[0]
    return build(arrays, 0)


def unstack(b: Builder, x: Any, /, *, axis: Any = 0) -> tuple[Staged, ...]:
    v = _arr(b, x)
    if v.ndim == 0:
        raise Reject(CompileError, "Input array must be at least 1-d.")
    ax = S.normalize_axis(axis, v.ndim)
    n = _static_len(v, ax, "np.unstack")
    return tuple(_take_axis(b, v, i, ax) for i in range(n))


def ravel_multi_index(b: Builder, multi_index: Any, dims_: Any, mode: Any = "raise",
                      order: str = "C") -> Staged:
    """np.ravel_multi_index: ``sum(i_k * stride_k)`` with C or F strides; mode 'raise' checks
    the indices when the kernel runs, 'wrap' and 'clip' as NumPy."""
    shape = S.shape_arg(dims_, b)
    idx = [A.convert(b, _arr(b, i), I64) if not isinstance(i, Staged) or i.dtype.kind in "iu"
           else None for i in multi_index]
    if any(i is None for i in idx):
        raise Reject(CompileError, "only int indices permitted")
    if len(idx) != len(shape):
        raise Reject(CompileError, f"parameter multi_index must be a sequence of length "
                     f"{len(shape)}")
    modes = list(mode) if isinstance(mode, (list, tuple)) else [mode] * len(shape)
    if order not in ("C", "F"):
        raise Reject(CompileError, "only 'C' or 'F' order is permitted")
    acc: Any = 1
    axes = range(len(shape) - 1, -1, -1) if order == "C" else range(len(shape))
    stride_of: dict[int, Any] = {}
    for k in axes:
        stride_of[k] = acc
        acc = A.prod((acc, shape[k]))
    total: Any = None
    for k, (i, d, md) in enumerate(zip(idx, shape, modes)):
        dv: Any = d if isinstance(d, int) else A.dim_value(b, d)
        assert i is not None
        if md == "raise":
            ok = _bin(b, "logical_and", _bin(b, "greater_equal", i, 0), _bin(b, "less", i, dv))
            ops.check(b, ok.value, "ValueError", "invalid entry in coordinates array")
        elif md == "wrap":
            i = _bin(b, "remainder", i, dv)
        elif md == "clip":
            i = U.clip(b, i, 0, _bin(b, "subtract", dv, 1))
        else:
            raise Reject(CompileError, f"clipmode must be one of 'clip', 'raise', or 'wrap' "
                         f"(got {md!r})")
        sv = stride_of[k]
        term = _bin(b, "multiply", i, sv if isinstance(sv, int) else A.dim_value(b, sv))
        total = term if total is None else _bin(b, "add", total, term)
    return A.convert(b, total, I64)


def unravel_index(b: Builder, indices: Any, shape: Any, order: str = "C") -> tuple[Staged, ...]:
    """np.unravel_index: ``(i // stride_k) % dim_k``; an index outside the array raises
    when the kernel runs."""
    dims_ = S.shape_arg(shape, b)
    i = _arr(b, indices)
    if i.dtype.kind not in "iu":
        raise Reject(CompileError, "only int indices permitted")
    i = A.convert(b, i, I64)
    total = A.prod(dims_)
    tv: Any = total if isinstance(total, int) else A.dim_value(b, total)
    ok = _bin(b, "logical_and", _bin(b, "greater_equal", i, 0), _bin(b, "less", i, tv))
    ops.check(b, ok.value, "ValueError", f"index is out of bounds for array with size {total}")
    if order not in ("C", "F"):
        raise Reject(CompileError, "only 'C' or 'F' order is permitted")
    out: list[Staged] = [i] * len(dims_)
    rest = i
    axes = range(len(dims_) - 1, -1, -1) if order == "C" else range(len(dims_))
    for k in axes:
        d = dims_[k]
        dv: Any = d if isinstance(d, int) else A.dim_value(b, d)
        out[k] = _bin(b, "remainder", rest, dv)
        rest = _bin(b, "floor_divide", rest, dv)
    return tuple(out)


def astype(b: Builder, x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Staged:
    return A.astype(b, _arr(b, x), dtype)


def result_type(b: Builder, *arrays_and_dtypes: Any) -> np.dtype:
    """np.result_type of staged arrays: NumPy's answer for their dtypes (a static dtype)."""
    try:
        return np.result_type(*[A.stand_in(a) if isinstance(a, (Staged, DimExpr)) else a
                                for a in arrays_and_dtypes])
    except TypeError as e:
        raise Reject(CompileError, str(e)) from None


# ---- the functions table -------------------------------------------------------------------------

FUNCTIONS: dict[Any, Handler] = {
    np.diff: diff, np.ediff1d: ediff1d, np.trapezoid: trapezoid, np.gradient: gradient,
    np.unwrap: unwrap,
    np.isclose: isclose, np.allclose: allclose, np.array_equal: array_equal,
    np.nan_to_num: nan_to_num,
    np.nansum: _nan_reduction("sum"), np.nanprod: _nan_reduction("prod"),
    np.nancumsum: _nan_scan("cumsum"), np.nancumprod: _nan_scan("cumprod"),
    np.nanmax: _nan_extremum("max"), np.nanmin: _nan_extremum("min"),
    np.nanargmax: _nan_arg("argmax"), np.nanargmin: _nan_arg("argmin"),
    np.nanmean: nanmean, np.nanvar: nanvar, np.nanstd: nanstd,
    np.select: select, np.digitize: digitize, np.interp: interp,
    np.convolve: convolve, np.correlate: correlate,
    np.meshgrid: meshgrid, np.indices: indices,
    np.average: average, np.cov: cov, np.corrcoef: corrcoef,
    np.polyval: polyval, np.polyder: polyder, np.polyint: polyint,
    np.bincount: bincount, np.histogram: histogram, np.histogram2d: histogram2d,
    np.sum: reduction("sum"), np.prod: reduction("prod"), np.max: reduction("max"),
    np.amax: reduction("max"), np.min: reduction("min"), np.amin: reduction("min"),
    np.all: reduction("all"), np.any: reduction("any"), np.mean: mean,
    np.tril_indices: _needs_static("tril_indices"), np.triu_indices: _needs_static("triu_indices"),
    np.diag_indices: _needs_static("diag_indices"),
    np.tril_indices_from: _tri_indices_from(True), np.triu_indices_from: _tri_indices_from(False),
    np.diag_indices_from: diag_indices_from, np.resize: resize, np.insert: insert,
    np.delete: delete, np.compress: compress, np.block: block,
    np.ravel_multi_index: ravel_multi_index, np.unravel_index: unravel_index,
    np.astype: astype, np.result_type: result_type,
}
if hasattr(np, "unstack"):
    FUNCTIONS[np.unstack] = unstack
if hasattr(np, "cumulative_sum"):
    FUNCTIONS[np.cumulative_sum] = _cumulative("cumsum")
    FUNCTIONS[np.cumulative_prod] = _cumulative("cumprod")

METHODS: dict[str, Handler] = {
    "sum": reduction("sum"), "prod": reduction("prod"), "max": reduction("max"),
    "min": reduction("min"), "all": reduction("all"), "any": reduction("any"), "mean": mean,
}

STAGER_FUNCTIONS: dict[Any, Handler] = {np.piecewise: piecewise}
