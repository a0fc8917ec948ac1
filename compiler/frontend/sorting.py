"""NumPy's sorting functions, staged with the ``sort`` primitive (docs/sorting.md).

np.sort/argsort/partition/argpartition/lexsort are one ``sort`` op on the axis moved
last (a partition is a full sort, which is a valid partition); median, percentile and
quantile (and their nan- forms) read the sorted rows at computed positions;
searchsorted is a branch-free binary search (a ``for`` loop of log2(n) steps, elementwise
over windows of the needles); np.unique needs JAX's static ``size=``.
"""
from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from compiler.errors import CompileError, DynamicShapeError, UnsupportedError
from compiler.frontend import arrays as A
from compiler.frontend import indexing as I
from compiler.frontend import reductions as R
from compiler.frontend import shapes as S
from compiler.frontend.ufuncs import binary, ufunc
from compiler.frontend.values import Reject, Staged
from compiler.ir import dims
from compiler.ir.builder import Builder
from compiler.ir.core import Block, Value
from compiler.ir.dims import Dim
from compiler.ir.types import BOOL, F16, F32, F64, I64, TensorType, is_complex, is_float, is_inexact, is_int
from compiler.primitives import ops
from compiler.primitives import searching as search
from compiler.primitives.sorting import take_rows

_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")
_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def _kind(kind: Any, stable: Any = None) -> bool:
    """Is the sort asked to be stable (kind='stable'/'mergesort' or stable=True)?"""
    if kind not in _KINDS:
        raise Reject(CompileError, f"sort kind must be one of 'quick', 'heap', or 'stable' "
                     f"(got {kind!r})")
    return kind in ("stable", "mergesort") or bool(stable)


def _no_order(order: Any) -> None:
    if order is not None:
        raise Reject(UnsupportedError, "order= (sorting structured arrays by field) is not "
                     "supported", "sort by a key array with np.argsort or np.lexsort")


def _last(b: Builder, a: Any, axis: Any) -> tuple[Staged, int | None]:
    """`a` as a staged array with the sorted axis last (flattened for axis=None), and the
    axis it came from (None: flattened)."""
    x = A.lift(b, A.normalize_operand(b, a))
    if axis is None:
        return S.ravel(b, x), None
    if x.ndim == 0:
        raise Reject(CompileError, f"axis {axis} is out of bounds for array of dimension 0")
    ax = S.normalize_axis(axis, x.ndim)
    return S.moveaxis(b, x, ax, -1), ax


def _back(b: Builder, y: Value, ax: int | None) -> Staged:
    out = Staged(y)
    return out if ax is None else S.moveaxis(b, out, -1, ax)


def _iota(b: Builder, x: Value) -> Value:
    return ops.iota(b, I64, tuple(x.type.shape), x.type.ndim - 1)


def sort(b: Builder, a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *,
         stable: Any = None) -> Staged:
    """np.sort."""
    _no_order(order)
    x, ax = _last(b, a, axis)
    (y,) = ops.sort(b, [x.value], 1, _kind(kind, stable))
    return _back(b, y, ax)


def argsort(b: Builder, a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *,
            stable: Any = None) -> Staged:
    """np.argsort (always stable: a valid result for every kind)."""
    _no_order(order)
    _kind(kind, stable)
    x, ax = _last(b, a, axis)
    perm = ops.sort(b, [x.value, _iota(b, x.value)], 1, True)[1]
    return _back(b, perm, ax)


def _check_kth(kth: Any, n: Dim) -> None:
    if isinstance(kth, Staged):
        raise Reject(CompileError, "kth must be a compile-time integer (or sequence of them)")
    for k in np.atleast_1d(np.asarray(kth)).ravel():
        if not isinstance(n, int):
            continue
        if not -n <= int(k) < n:
            raise Reject(CompileError, f"kth(={int(k)}) out of bounds ({n})")


def partition(b: Builder, a: Any, kth: Any, axis: Any = -1, kind: str = "introselect",
              order: Any = None) -> Staged:
    """np.partition: the full sort (every partition NumPy could return has its kth
    elements in place; the sorted array is one of them)."""
    x, _ = _last(b, a, axis)
    _check_kth(kth, x.shape[-1])
    return sort(b, a, axis, None, order)


def argpartition(b: Builder, a: Any, kth: Any, axis: Any = -1, kind: str = "introselect",
                 order: Any = None) -> Staged:
    """np.argpartition: the full (stable) argsort."""
    x, _ = _last(b, a, axis)
    _check_kth(kth, x.shape[-1])
    return argsort(b, a, axis, None, order)


def lexsort(b: Builder, keys: Any, axis: Any = -1) -> Staged:
    """np.lexsort: the last key is the primary one."""
    if isinstance(keys, Staged):
        if keys.ndim == 0:
            raise Reject(CompileError, "need sequence of keys with len > 0 in lexsort")
        items: list[Any] = [I.getitem(b, keys, i) for i in range(_static(keys.shape[0], "keys"))]
    else:
        items = list(keys)
    if not items:
        raise Reject(CompileError, "need sequence of keys with len > 0 in lexsort")
    lifted = [A.lift(b, A.normalize_operand(b, k)) for k in items]
    shape = A.broadcast_shapes(*[tuple(k.shape) for k in lifted])
    lifted = [Staged(A.broadcast_value(b, k.value, shape)) for k in lifted]
    moved = [_last(b, k, axis) for k in reversed(lifted)]
    ax = moved[0][1]
    vals = [m[0].value for m in moved]
    perm = ops.sort(b, vals + [_iota(b, vals[0])], len(vals), True)[-1]
    return _back(b, perm, ax)


def _static(d: Dim, what: str) -> int:
    if not isinstance(d, int):
        raise Reject(CompileError, f"the number of {what} must be static")
    return d


def take_along_axis(b: Builder, arr: Any, indices: Any, axis: Any = -1) -> Staged:
    """np.take_along_axis: NumPy's fancy index (iota on the other axes)."""
    x = A.lift(b, A.normalize_operand(b, arr))
    ind = A.lift(b, A.normalize_operand(b, indices))
    if not is_int(ind.dtype):
        raise Reject(CompileError, "`indices` must be an integer array")
    if axis is None:
        if ind.ndim != 1:
            raise Reject(CompileError, "when axis=None, `indices` must have a single dimension.")
        return I.getitem(b, S.ravel(b, x), ind)
    if ind.ndim != x.ndim:
        raise Reject(CompileError, "`indices` and `arr` must have the same number of dimensions")
    ax = S.normalize_axis(axis, x.ndim)
    shape = A.broadcast_shapes(tuple(d if i != ax else 1 for i, d in enumerate(x.shape)),
                               tuple(ind.shape))
    items: list[Any] = []
    for i in range(x.ndim):
        if i == ax:
            items.append(Staged(A.broadcast_value(b, A.convert_value(b, ind.value, I64), shape)))
        else:
            items.append(Staged(ops.iota(b, I64, shape, i)))
    return I.getitem(b, x, tuple(items))


# ---- searchsorted --------------------------------------------------------------------

def searchsorted(b: Builder, a: Any, v: Any, side: str = "left", sorter: Any = None) -> Staged:
    """np.searchsorted: a branch-free binary search of every needle, ceil(log2 n) steps plus
    one compare, over windows of SEARCH_CHUNK needles (primitives/searching.py)."""
    return positions(b, a, v, side, sorter)


def positions(b: Builder, a: Any, v: Any, side: str = "left", sorter: Any = None,
              nan_last: bool = True) -> Staged:
    """searchsorted's search; nan_last=False compares with plain < (np.interp's search, whose
    NaN needles are replaced afterwards): a NaN needle then lands at the end."""
    if side not in ("left", "right"):
        raise Reject(CompileError, f"side must be 'left' or 'right' (got {side!r})")
    hay = A.lift(b, A.normalize_operand(b, a))
    if hay.ndim != 1:
        raise Reject(CompileError, "object too deep for desired array: `a` must be 1-D")
    if sorter is not None:
        hay = I.getitem(b, hay, A.lift(b, A.normalize_operand(b, sorter)))
    needles = A.lift(b, A.normalize_operand(b, v))
    if is_complex(hay.dtype) or is_complex(needles.dtype):
        raise Reject(UnsupportedError, "np.searchsorted of complex values is not supported",
                     "search the real parts, or sort with np.lexsort")
    dtype = A.result_dtype([hay, needles])
    h = A.convert_value(b, hay.value, dtype)
    w = A.convert_value(b, needles.value, dtype)
    return Staged(search.positions(b, h, w, side, nan_last))


# ---- median and quantiles ------------------------------------------------------------

def _sorted_rows(b: Builder, a: Any, axis: Any) -> tuple[Staged, Staged, tuple[int, ...]]:
    """The array with the reduced axes flattened last and sorted, the input, and the axes."""
    x = A.lift(b, A.normalize_operand(b, a))
    if is_complex(x.dtype):
        raise Reject(CompileError, "a must be an array of real numbers")
    axes = S.normalize_axes(axis, x.ndim) if axis is not None else tuple(range(x.ndim))
    rest = [i for i in range(x.ndim) if i not in axes]
    moved = S.transpose(b, x, rest + list(axes)) if x.ndim else x
    lead = tuple(x.shape[i] for i in rest)
    flat = Staged(A.reshape_value(b, moved.value, lead + (A.prod([x.shape[i] for i in axes]),)))
    (s,) = ops.sort(b, [flat.value], 1, False)
    return Staged(s), x, axes


def _keep(b: Builder, res: Staged, x: Staged, axes: tuple[int, ...], keepdims: bool,
          qdims: int = 0) -> Staged:
    if not keepdims:
        return res
    shape = tuple(res.shape[:qdims]) + tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    return Staged(A.reshape_value(b, res.value, shape))


def _at(b: Builder, s: Staged, pos: Staged) -> Staged:
    """s[..., pos] for positions of s's leading shape (or scalars), as NumPy values."""
    lead = tuple(s.shape[:-1])
    p = A.broadcast_value(b, A.convert_value(b, pos.value, I64), lead)
    p = A.reshape_value(b, p, lead + (1,))
    out = take_rows(b, s.value, p)
    return Staged(A.reshape_value(b, out, lead))


def _count(b: Builder, s: Staged, nan: bool) -> Staged:
    """How many values each sorted row holds (the non-NaN ones for the nan- functions)."""
    n = s.shape[-1]
    total = A.dim_value(b, n) if not isinstance(n, int) else Staged(ops.scalar(b, n, I64))
    if not nan or not is_float(s.dtype):
        return total
    nans = R.reduce(b, "sum", Staged(ops.isnan(b, s.value)), -1, I64)
    return binary(b, "subtract", total, nans)


def _last_is_nan(b: Builder, s: Staged) -> Staged | None:
    if not is_float(s.dtype):
        return None
    n = s.shape[-1]
    if n == 0:
        return None
    last = Staged(ops.sub(b, A.dim_value(b, n).value, ops.scalar(b, 1, I64))) \
        if not isinstance(n, int) else Staged(ops.scalar(b, n - 1, I64))
    return Staged(ops.isnan(b, _at(b, s, last).value))


def _nan_like(b: Builder, res: Staged) -> Staged:
    return Staged(ops.full_like(b, np.nan, res.value))


def _median_of(b: Builder, s: Staged, c: Staged) -> Staged:
    one = Staged(ops.scalar(b, 1, I64))
    two = Staged(ops.scalar(b, 2, I64))
    lo = binary(b, "floor_divide", binary(b, "subtract", c, one), two)
    hi = binary(b, "floor_divide", c, two)
    clo = binary(b, "maximum", lo, 0)
    x0, x1 = _at(b, s, clo), _at(b, s, hi)
    if is_inexact(x0.dtype):
        pair = [x0, x1]
    else:
        pair = [A.convert(b, x0, F64), A.convert(b, x1, F64)]
    dtype = F32 if pair[0].dtype == F16 else None
    total = binary(b, "add", *(A.convert(b, p, dtype) if dtype else p for p in pair))
    mean = A.convert(b, binary(b, "true_divide", total, 2), pair[0].dtype)
    odd = binary(b, "not_equal", binary(b, "remainder", c, two), 0)
    return Staged(ops.select(b, A.broadcast_value(b, odd.value, tuple(mean.shape)), A.convert(
        b, Staged(A.broadcast_value(b, pair[1].value, tuple(mean.shape))), mean.dtype).value,
        mean.value))


def median(b: Builder, a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
           keepdims: bool = False) -> Staged:
    """np.median: the mean of the middle two sorted values (NaN if the slice has one)."""
    R._no_out(out)
    s, x, axes = _sorted_rows(b, a, axis)
    res = _median_of(b, s, _count(b, s, False))
    nan = _last_is_nan(b, s)
    if nan is not None:
        res = Staged(ops.select(b, nan.value, _nan_like(b, res).value, res.value))
    return _keep(b, res, x, axes, keepdims)


def nanmedian(b: Builder, a: Any, axis: Any = None, out: Any = None,
              overwrite_input: bool = False, keepdims: bool = False) -> Staged:
    """np.nanmedian: the median of the non-NaN values (NaN for an all-NaN slice)."""
    R._no_out(out)
    s, x, axes = _sorted_rows(b, a, axis)
    c = _count(b, s, True)
    res = _median_of(b, s, c)
    if is_float(res.dtype):
        empty = Staged(A.broadcast_value(b, ops.eq(b, c.value, ops.full_like(b, 0, c.value)),
                                         tuple(res.shape)))
        res = Staged(ops.select(b, empty.value, _nan_like(b, res).value, res.value))
    return _keep(b, res, x, axes, keepdims)


def _quantile_q(b: Builder, q: Any, x: Staged) -> Staged:
    """q as NumPy converts it: a Python number takes a float array's dtype."""
    if isinstance(q, (int, float)) and not isinstance(q, bool) and is_float(x.dtype):
        return A.lift(b, np.asarray(q, dtype=x.dtype))
    qs = A.lift(b, A.normalize_operand(b, q))
    if isinstance(q, Staged) and q.weak and is_float(x.dtype):      # a Python float argument
        return A.convert(b, qs, x.dtype)
    if not isinstance(q, Staged):
        arr = np.asarray(q)
        if arr.size and not ((arr >= 0) & (arr <= 1)).all():
            raise Reject(CompileError, "Quantiles must be in the range [0, 1]")
    return qs


def _quantile(b: Builder, a: Any, q: Staged, axis: Any, method: str, keepdims: bool,
              nan: bool, interpolation: Any = None) -> Staged:
    if interpolation is not None:
        method = interpolation
    if method not in _METHODS:
        raise Reject(UnsupportedError, f"method={method!r} is not supported",
                     f"supported: {', '.join(repr(m) for m in _METHODS)}")
    s, x, axes = _sorted_rows(b, a, axis)
    c = _count(b, s, nan)
    lead = tuple(s.shape[:-1])
    qshape = tuple(q.shape)
    # every result has shape q.shape + lead: rows broadcast against the quantiles
    sb = Staged(A.broadcast_value(b, s.value, qshape + tuple(s.shape)))
    qf = q if is_float(q.dtype) else A.convert(b, q, F64)
    qb = Staged(A.broadcast_value(b, A.reshape_value(b, qf.value, qshape + (1,) * len(lead)),
                                  qshape + lead))
    cb = Staged(A.broadcast_value(b, c.value, qshape + lead))
    last = binary(b, "subtract", cb, 1)
    # (n - 1) * q with n as NumPy has it, a Python int: q's dtype
    virtual = binary(b, "multiply", A.convert(b, last, qf.dtype), qb)
    if method in ("lower", "higher", "nearest"):
        fn = {"lower": "floor", "higher": "ceil", "nearest": "rint"}[method]
        from_ufunc = _round(b, fn, virtual)
        idx = binary(b, "minimum", binary(b, "maximum", from_ufunc, 0), binary(b, "maximum", last, 0))
        res = _at(b, sb, idx)
    else:
        if method == "midpoint":
            virtual = binary(b, "multiply", binary(b, "add", _round(b, "floor", virtual),
                                                    _round(b, "ceil", virtual)), 0.5)
        prev = _round(b, "floor", virtual)
        gamma = binary(b, "subtract", virtual, prev)
        if method == "midpoint":
            gamma = Staged(ops.select(b, ops.eq(b, virtual.value, _round(b, "floor", virtual).value),
                                      ops.full_like(b, 0, gamma.value),
                                      ops.full_like(b, 0.5, gamma.value)))
        above = binary(b, "greater_equal", virtual, last)
        below = binary(b, "less", virtual, 0)
        pi = A.convert(b, prev, I64)
        top = binary(b, "maximum", last, 0)
        pi = Staged(ops.select(b, above.value, top.value, pi.value))
        ni = Staged(ops.select(b, above.value, top.value, binary(b, "add", pi, 1).value))
        zero = ops.full_like(b, 0, pi.value)
        pi = Staged(ops.select(b, below.value, zero, pi.value))
        ni = Staged(ops.select(b, below.value, zero, ni.value))
        lo_v, hi_v = _at(b, sb, pi), _at(b, sb, ni)
        res = _lerp(b, lo_v, hi_v, A.convert(b, gamma, virtual.dtype))
    if nan:
        if is_float(res.dtype):
            empty = binary(b, "equal", cb, 0)
            res = Staged(ops.select(b, A.broadcast_value(b, empty.value, tuple(res.shape)),
                                    _nan_like(b, res).value, res.value))
    else:
        flag = _last_is_nan(b, s)
        if flag is not None and is_float(res.dtype):
            f = A.broadcast_value(b, flag.value, qshape + lead)
            res = Staged(ops.select(b, f, _nan_like(b, res).value, res.value))
    return _keep(b, res, x, axes, keepdims, len(qshape))


def _round(b: Builder, fn: str, x: Staged) -> Staged:
    return ufunc(b, fn, x)


def _lerp(b: Builder, a: Staged, c: Staged, t: Staged) -> Staged:
    """NumPy's _lerp: a + (c - a) t, or c - (c - a)(1 - t) where t >= 0.5."""
    diff = binary(b, "subtract", c, a)
    low = binary(b, "add", a, binary(b, "multiply", diff, t))
    high = binary(b, "subtract", c, binary(b, "multiply", diff, binary(b, "subtract", 1, t)))
    dtype = low.dtype
    pick = binary(b, "greater_equal", t, 0.5)
    return Staged(ops.select(b, A.broadcast_value(b, pick.value, tuple(low.shape)),
                             A.convert(b, high, dtype).value, low.value))


def quantile(b: Builder, a: Any, q: Any, axis: Any = None, out: Any = None,
             overwrite_input: bool = False, method: str = "linear", keepdims: bool = False, *,
             weights: Any = None, interpolation: Any = None) -> Staged:
    R._no_out(out)
    _no_weights(weights)
    x = A.lift(b, A.normalize_operand(b, a))
    return _quantile(b, x, _quantile_q(b, q, x), axis, method, keepdims, False, interpolation)


def percentile(b: Builder, a: Any, q: Any, axis: Any = None, out: Any = None,
               overwrite_input: bool = False, method: str = "linear", keepdims: bool = False, *,
               weights: Any = None, interpolation: Any = None) -> Staged:
    R._no_out(out)
    _no_weights(weights)
    x = A.lift(b, A.normalize_operand(b, a))
    return _quantile(b, x, _percent(b, q, x), axis, method, keepdims, False, interpolation)


def nanquantile(b: Builder, a: Any, q: Any, axis: Any = None, out: Any = None,
                overwrite_input: bool = False, method: str = "linear", keepdims: bool = False,
                *, weights: Any = None, interpolation: Any = None) -> Staged:
    R._no_out(out)
    _no_weights(weights)
    x = A.lift(b, A.normalize_operand(b, a))
    return _quantile(b, x, _quantile_q(b, q, x), axis, method, keepdims, True, interpolation)


def nanpercentile(b: Builder, a: Any, q: Any, axis: Any = None, out: Any = None,
                  overwrite_input: bool = False, method: str = "linear", keepdims: bool = False,
                  *, weights: Any = None, interpolation: Any = None) -> Staged:
    R._no_out(out)
    _no_weights(weights)
    x = A.lift(b, A.normalize_operand(b, a))
    return _quantile(b, x, _percent(b, q, x), axis, method, keepdims, True, interpolation)


def _percent(b: Builder, q: Any, x: Staged) -> Staged:
    if not isinstance(q, Staged):
        arr = np.asarray(q)
        if arr.size and not ((arr >= 0) & (arr <= 100)).all():
            raise Reject(CompileError, "Percentiles must be in the range [0, 100]")
        if isinstance(q, (int, float)) and not isinstance(q, bool) and is_float(x.dtype):
            return binary(b, "true_divide", A.lift(b, np.asarray(q, dtype=x.dtype)), 100)
        return binary(b, "true_divide", A.lift(b, arr), 100)
    if q.weak and is_float(x.dtype):
        q = A.convert(b, q, x.dtype)
    return binary(b, "true_divide", q, 100)


def _no_weights(weights: Any) -> None:
    if weights is not None:
        raise Reject(UnsupportedError, "weights= is not supported", None)


# ---- unique ----------------------------------------------------------------------------

def unique(b: Builder, ar: Any, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: Any = None, *, equal_nan: bool = True,
           size: Any = None, fill_value: Any = None, sorted: bool = True) -> Any:
    """np.unique with JAX's static `size=`: the first `size` unique values (sorted),
    padded with `fill_value` (default: the smallest value)."""
    if size is None:
        raise Reject(DynamicShapeError, "np.unique returns an array whose length depends on "
                     "the values", "pass a static size=k (and optionally fill_value=): the "
                     "first k unique values, padded (as jax.numpy.unique)")
    if axis is not None:
        raise Reject(UnsupportedError, "np.unique with axis= is not supported", None)
    k = operator.index(size)
    x = S.ravel(b, A.lift(b, A.normalize_operand(b, ar)))
    n = x.shape[0]
    v = x.value
    idx = _iota(b, v)
    s, perm = ops.sort(b, [v, idx], 1, True)
    first = _group_starts(b, s, equal_nan)
    gid = ops.sub(b, ops.cumsum(b, ops.convert(b, first, I64), 0), ops.full_like(b, 1, idx))
    # the first element of each group goes to slot gid (groups past k to a dump slot k)
    # (slot k keeps the start of group k, which ends group k - 1; k + 1 is a dump)
    slot = ops.select(b, ops.and_(b, first, ops.le(b, gid, ops.full_like(b, k, gid))), gid,
                      ops.full_like(b, k + 1, gid))
    dump = TensorType(I64, (k + 2,))
    starts = ops.scatter(b, ops.full(b, -1, dump), slot, idx, 0, "set")
    pos = ops.slice_(b, starts, (0,), (k,))
    valid = ops.ge(b, pos, ops.full_like(b, 0, pos))
    safe = ops.maximum(b, pos, ops.full_like(b, 0, pos))
    values = ops.take(b, s, safe, 0) if k else ops.full(b, 0, TensorType(v.type.dtype, (0,)))
    if fill_value is None:
        fill = ops.broadcast_in_dim(b, ops.reshape(b, ops.slice_(b, s, (0,), (1,)), ()), (k,), ()) \
            if n != 0 else ops.full(b, 0, TensorType(v.type.dtype, (k,)))
    else:
        fv = A.convert(b, fill_value, v.type.dtype) if isinstance(fill_value, Staged) \
            else A.constant(b, fill_value, v.type.dtype)
        fill = A.broadcast_value(b, fv.value, (k,))
    out: list[Staged] = [Staged(ops.select(b, valid, values, fill))]
    if return_index:
        first_at = ops.take(b, perm, safe, 0)
        out.append(Staged(ops.select(b, valid, first_at, ops.full_like(b, 0, first_at))))
    if return_inverse:
        inv = ops.scatter(b, ops.full_like(b, 0, idx), perm, gid, 0, "set")
        xin = A.lift(b, A.normalize_operand(b, ar))
        out.append(Staged(A.reshape_value(b, inv, tuple(xin.shape))) if xin.ndim else Staged(inv))
    if return_counts:
        total = ops.broadcast_in_dim(b, A.dim_value(b, n).value if not isinstance(n, int)
                                     else ops.scalar(b, n, I64), (1,), ())
        ends = ops.slice_(b, starts, (1,), (k + 1,))
        nxt = ops.select(b, ops.ge(b, ends, ops.full_like(b, 0, ends)), ends,
                         ops.broadcast_in_dim(b, ops.reshape(b, total, ()), (k,), ()))
        cnt = ops.sub(b, nxt, pos)
        out.append(Staged(ops.select(b, valid, cnt, ops.full_like(b, 0, cnt))))
    return out[0] if len(out) == 1 else tuple(out)


def _group_starts(b: Builder, s: Value, equal_nan: bool) -> Value:
    """Does a sorted element differ from the one before it (True for the first)?"""
    n = s.type.shape[0]
    if n == 0:
        return ops.full(b, True, TensorType(BOOL, (0,)))
    prev = ops.concatenate(b, [ops.slice_(b, s, (0,), (1,)), ops.slice_(b, s, (0,), (_minus1(n),))], 0)
    differ = ops.ne(b, s, prev)
    if is_float(s.type.dtype) or is_complex(s.type.dtype):
        both = ops.and_(b, _isnan(b, s), _isnan(b, prev))
        if equal_nan:
            differ = ops.and_(b, differ, ops.not_(b, both))
    head = ops.eq(b, ops.iota(b, I64, (n,), 0), ops.full(b, 0, TensorType(I64, (n,))))
    return ops.or_(b, differ, head)


def _isnan(b: Builder, x: Value) -> Value:
    if is_complex(x.type.dtype):
        return ops.or_(b, ops.isnan(b, ops.real(b, x)), ops.isnan(b, ops.imag(b, x)))
    return ops.isnan(b, x)


def _minus1(n: Dim) -> Dim:
    return dims.add(n, -1)


def sort_inplace(b: Builder, a: Staged, axis: Any = -1, kind: Any = None, order: Any = None) -> Value:
    """The new value of `a` after a.sort(axis, kind)."""
    return sort(b, a, axis, kind, order).value


__all__: Sequence[str] = ("sort", "argsort", "partition", "argpartition", "lexsort",
                          "take_along_axis", "searchsorted", "median", "nanmedian", "quantile",
                          "percentile", "nanquantile", "nanpercentile", "unique", "sort_inplace")
