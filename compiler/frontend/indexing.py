"""Indexing and functional updates: ``x[...]`` and ``y[...] = v`` as IR.

Static indices (ints, slices with steps and negative bounds, ``...``,
``None``) are normalized at compile time per Python's slice semantics and
become one ``rev``/``slice``/``reshape`` chain; an out-of-range static int is
NumPy's IndexError, raised at compile time. A staged integer scalar becomes
``dynamic_slice``; integer arrays (static or staged) become ``take`` (several
of them are linearized into one flat index, with NumPy's placement rule).
Boolean masks give data-dependent shapes (DynamicShapeError), except in an
assignment of a scalar (``y[y < 0] = 0`` is ``np.where``).

Updates mirror this: ``update_slice``, ``dynamic_update_slice``, ``scatter``
or ``select``, with the value cast to the array's dtype and broadcast to the
indexed shape, as NumPy's ``__setitem__`` does.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from compiler import config
from compiler.primitives import ops
from compiler.errors import CompileError, DynamicShapeError, IndexOutOfBoundsError, \
    ShapeMismatchError, UnsupportedError
from compiler.frontend import arrays as A
from compiler.frontend.arrays import prod, view
from compiler.frontend.values import Reject, Selection, Staged
from compiler.frontend.writes import same_value
from compiler.ir import dims
from compiler.ir.builder import Builder
from compiler.ir.core import Value
from compiler.ir.dims import Dim, DimExpr
from compiler.ir.types import BOOL, I64, is_int
from compiler.primitives.shape import slice_size

INVALID_INDEX = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
                 "integer or boolean arrays are valid indices")


@dataclass
class AxisPlan:
    """How one axis of the array is indexed (static part)."""

    start: Dim = 0
    limit: Dim = 0
    stride: int = 1
    reverse: bool = False
    drop: bool = False                 # an integer index removes the axis
    dynamic: Staged | None = None      # a staged integer index (wrapped), or a window's start
    array: Any = None                  # an index array (np.ndarray or Staged)
    window: int | None = None          # x[i:i + k]: k elements from the run-time start `dynamic`

    def size(self) -> Dim:
        if self.window is not None:
            return self.window
        return slice_size(self.start, self.limit, self.stride)


@dataclass
class IndexPlan:
    axes: list[AxisPlan] = field(default_factory=list)
    new_axes: list[int] = field(default_factory=list)   # positions of None in the result
    mask: Any = None                                     # a boolean mask (staged)


# ---- parsing the index -------------------------------------------------------------------


def _items(index: Any) -> list[Any]:
    items = list(index) if isinstance(index, tuple) else [index]
    out = []
    for it in items:
        if isinstance(it, list):
            it = np.asarray(it)
            if it.dtype == object:
                raise Reject(IndexOutOfBoundsError, INVALID_INDEX)
        out.append(it)
    return out


def _is_array_index(it: Any) -> bool:
    return (isinstance(it, np.ndarray) and it.ndim > 0) or (isinstance(it, Staged) and it.ndim > 0)


def _expand(items: list[Any], ndim: int) -> list[Any]:
    """Replace `...` and static boolean masks; pad with full slices."""
    expanded: list[Any] = []
    for it in items:
        if isinstance(it, np.ndarray) and it.dtype == bool and it.ndim > 0:
            expanded.extend(np.nonzero(it))
        else:
            expanded.append(it)
    consumed = sum(1 for it in expanded if it is not None and it is not Ellipsis)
    if sum(1 for it in expanded if it is Ellipsis) > 1:
        raise Reject(IndexOutOfBoundsError, "an index can only have a single ellipsis ('...')")
    if consumed > ndim:
        raise Reject(IndexOutOfBoundsError, f"too many indices for array: array is {ndim}-dimensional, "
                     f"but {consumed} were indexed")
    out: list[Any] = []
    for it in expanded:
        if it is Ellipsis:
            out.extend([slice(None)] * (ndim - consumed))
        else:
            out.append(it)
    if not any(it is Ellipsis for it in expanded):
        out.extend([slice(None)] * (ndim - consumed))
    return out


def plan(b: Builder, x: Staged, index: Any, for_write: bool = False) -> IndexPlan:
    items = _items(index)
    if for_write and len(items) == 1 and isinstance(items[0], np.ndarray) \
            and items[0].dtype == bool and items[0].ndim > 0:
        items = [A.constant(b, items[0])]
    for it in items:
        if isinstance(it, Staged) and it.dtype == BOOL and it.ndim > 0:
            return _mask_plan(x, it, items)
    items = _expand(items, x.ndim)
    p = IndexPlan()
    axis = 0
    for it in items:
        if it is None:        # its position in the result: after the axes kept so far
            p.new_axes.append(sum(not a.drop for a in p.axes) + len(p.new_axes))
            continue
        p.axes.append(_axis_plan(b, it, x.shape[axis], axis))
        axis += 1
    return p


def _mask_plan(x: Staged, mask: Staged, items: list[Any]) -> IndexPlan:
    if len(items) != 1 or tuple(mask.shape) != tuple(x.shape[:mask.ndim]):
        raise Reject(DynamicShapeError, "boolean mask indexing has a shape that depends on the "
                     "values of the mask", "use np.where(mask, x, fill) to keep the shape")
    return IndexPlan(mask=mask)


def _axis_plan(b: Builder, it: Any, d: Dim, axis: int) -> AxisPlan:
    if isinstance(it, slice):
        return _slice_plan(b, it, d)
    if _is_array_index(it):
        return AxisPlan(0, d, 1, array=_index_array(b, it, d, axis))
    if isinstance(it, Staged):
        if not is_int(it.dtype):
            raise Reject(IndexOutOfBoundsError, INVALID_INDEX)
        return AxisPlan(0, d, 1, drop=True, dynamic=_wrap_index(b, it, d, axis))
    if isinstance(it, DimExpr):
        ok = ops.and_(b, _dim_cmp(b, "ge", it, 0), _dim_cmp(b, "lt", it, d))
        ops.check(b, ok, "IndexError", "index {0} is out of bounds for axis %d with size {1}" % axis,
                  (it, d))
        return AxisPlan(it, dims.add(it, 1), 1, drop=True)
    if isinstance(it, (bool, np.bool_)) or not isinstance(it, (int, np.integer)):
        raise Reject(IndexOutOfBoundsError, INVALID_INDEX)
    i = int(it)
    if isinstance(d, int):
        if not -d <= i < d:
            raise Reject(IndexOutOfBoundsError, f"index {i} is out of bounds for axis {axis} with "
                         f"size {d}")
        i %= d
        return AxisPlan(i, i + 1, 1, drop=True)
    # a static index against a symbolic size: NumPy's IndexError, checked when the kernel runs
    ops.check(b, _dim_cmp(b, "gt", d, i) if i >= 0 else _dim_cmp(b, "ge", d, -i), "IndexError",
              f"index {i} is out of bounds for axis {axis} with size {{0}}", (d,))
    start = i if i >= 0 else dims.add(d, i)
    return AxisPlan(start, dims.add(start, 1), 1, drop=True)


def _slice_plan(b: Builder, s: slice, d: Dim) -> AxisPlan:
    """Python's slice semantics with one set of formulas for static and symbolic sizes:
    a negative step is a positive one on the reversed axis (``x[a:c:-k]`` is
    ``x[::-1][~a:~c:k]``), bounds clamp into ``0..d``, and the length is NumPy's
    ``max(ceil((stop - start) / k), 0)`` written with min/max so that one symbolic
    expression is right for every size (``x[1:]`` on ``f64[n]`` is ``max(0, n - 1)``)."""
    if isinstance(s.start, Staged) or isinstance(s.stop, Staged):
        width = _static_width(s.start, s.stop)
        if width is not None and s.step in (None, 1):
            return _window_plan(b, s.start, width, d)
    for v in (s.start, s.stop, s.step):
        if isinstance(v, Staged):
            raise Reject(DynamicShapeError, "a slice with run-time bounds has a data-dependent "
                         "shape", "use a static slice, x[i] with a run-time index, or a window "
                         "of static width written x[i:i + k]")
    step = 1 if s.step is None else operator.index(s.step)
    if step == 0:
        raise Reject(CompileError, "slice step cannot be zero")
    lo, hi = (_bound(b, v, d) for v in (s.start, s.stop))
    if step < 0:
        if isinstance(lo, DimExpr) or isinstance(hi, DimExpr):
            raise Reject(UnsupportedError, "a negative-step slice with symbolic bounds is not "
                         "supported", "reverse first (x[::-1]) and slice the result")
        lo, hi = (None if v is None else -1 - v for v in (lo, hi))
    stride = abs(step)
    start, diff = _span(lo, hi, d)
    if isinstance(diff, int):           # a tight limit: the last element read, plus one
        count = -(-diff // stride)
        return AxisPlan(start, dims.add(start, (count - 1) * stride + 1) if count else start,
                        stride, reverse=step < 0)
    return AxisPlan(start, dims.add(start, diff), stride, reverse=step < 0)


def _linear(v: Any) -> tuple[dict[Value, int], int] | None:
    """`v` (an int or a staged int scalar) as sum(coef * leaf) + const over IR values, read
    through add, sub, neg, mul by a constant and integer casts; None if it is not linear."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return {}, int(v)
    if isinstance(v, Staged):
        v = v.value
    if not isinstance(v, Value) or v.type.shape != () or not is_int(v.dtype):
        return None
    op = v.op
    name = op.prim.name if op is not None else ""
    if name == "constant":
        return {}, int(np.asarray(op.params["value"]).reshape(()))   # type: ignore[union-attr]
    if name == "convert" and is_int(op.operands[0].dtype):              # type: ignore[union-attr]
        return _linear(op.operands[0])                                  # type: ignore[union-attr]
    if name in ("add", "sub", "mul", "neg"):
        parts = [_linear(o) for o in op.operands]                       # type: ignore[union-attr]
        if all(p is not None for p in parts):
            terms = [p for p in parts if p is not None]
            if name == "neg":
                return {k: -c for k, c in terms[0][0].items()}, -terms[0][1]
            (ta, ca), (tb, cb) = terms
            if name == "mul":
                if ta and tb:
                    return {v: 1}, 0
                k, (t, c) = (ca, (tb, cb)) if not ta else (cb, (ta, ca))
                return {key: k * coef for key, coef in t.items()}, k * c
            sign = 1 if name == "add" else -1
            out = dict(ta)
            for key, coef in tb.items():
                out[key] = out.get(key, 0) + sign * coef
            return out, ca + sign * cb
    return {v: 1}, 0


def _static_width(start: Any, stop: Any) -> int | None:
    """stop - start when it is the same for every run-time value (x[i:i + 3], x[2*i:2*i + 2])."""
    a, c = _linear(start), _linear(stop)
    if a is None or c is None:
        return None
    terms = dict(c[0])
    for key, coef in a[0].items():
        terms[key] = terms.get(key, 0) - coef
    if any(coef != 0 for coef in terms.values()):
        return None
    width = c[1] - a[1]
    return width if width >= 0 else None


def _window_plan(b: Builder, start: Any, width: int, d: Dim) -> AxisPlan:
    """x[i:i + k]: k elements from run-time position i (no wrap-around of a negative i). The
    window is clamped into the axis; with boundscheck on, a window that does not fit raises."""
    if isinstance(d, int) and width > d:
        raise Reject(IndexOutOfBoundsError, f"a window of {width} elements does not fit in an "
                     f"axis of size {d}")
    v = A.lift(b, start, I64).value if not isinstance(start, Staged) \
        else A.convert_value(b, start.value, I64)
    if config.boundscheck():
        size = A.dim_value(b, d).value
        ok = ops.and_(b, ops.ge(b, v, A.constant(b, 0, I64).value),
                      ops.le(b, ops.add(b, v, A.constant(b, width, I64).value), size))
        ops.check(b, ok, "IndexError", f"the window of {width} elements at a run-time start does "
                  "not fit in an axis of size {0} (boundscheck)", (d,))
    return AxisPlan(0, d, 1, dynamic=Staged(v), window=width)


def _bound(b: Builder, v: Any, d: Dim) -> int | DimExpr | None:
    """A slice bound as an int, a symbolic size (checked non-negative), or None."""
    if v is None or isinstance(v, DimExpr):
        if isinstance(v, DimExpr) and not dims.nonnegative(v):
            # a negative bound counts from the end: x[:k] differs from x[:max(k, 0)]
            # unless k >= 0 or k <= -d (both give the same clamped slice)
            ok = ops.or_(b, _dim_cmp(b, "ge", v, 0), _dim_cmp(b, "le", dims.add(v, d), 0))
            ops.check(b, ok, "ValueError", "the slice bound {0} is negative at run time and "
                      "counts from the end of an axis of size {1}; aotx computes the shape of a "
                      "slice with a symbolic bound assuming the bound is >= 0", (v, d))
            return dims.clamp0(v)
        return v
    return operator.index(v)


def _span(lo: int | DimExpr | None, hi: int | DimExpr | None, d: Dim) -> tuple[Dim, Dim]:
    """(start, stop - start) of ``[lo:hi]`` (positive step) on an axis of size d, both clamped.

    Static bounds use case formulas whose symbolic forms are canonical, so that
    ``x[1:]`` and ``x[:-1]`` have the same length expression."""
    def norm(v: int | DimExpr) -> Dim:
        if isinstance(v, int) and v < 0:
            return dims.clamp0(dims.add(d, v))
        return dims.minimum(v, d)
    start = 0 if lo is None else norm(lo)
    if not (isinstance(lo, (int, type(None))) and isinstance(hi, (int, type(None)))):
        stop = d if hi is None else norm(hi)
        return start, dims.clamp0(dims.add(stop, dims.mul(start, -1)))
    a = 0 if lo is None else lo
    diff: Dim
    if hi is None:
        diff = dims.clamp0(dims.add(d, -a)) if a >= 0 else dims.minimum(-a, d)
    elif a >= 0 and hi >= 0:
        diff = dims.minimum(dims.clamp0(dims.add(d, -a)), hi - a) if hi > a else 0
    elif a >= 0:
        diff = dims.clamp0(dims.add(d, hi - a))
    elif hi >= 0:      # start counts from the end, stop from the front
        diff = dims.clamp0(dims.minimum(dims.minimum(dims.add(hi - a, dims.mul(d, -1)), d),
                                        min(hi, -a)))
    else:
        diff = dims.minimum(dims.clamp0(dims.add(d, hi)), hi - a) if hi > a else 0
    return start, diff


def _dim_cmp(b: Builder, op: str, x: Dim, y: Dim) -> Value:
    """The run-time truth of ``x <op> y`` for two sizes."""
    fn = {"ge": ops.ge, "le": ops.le, "gt": ops.gt, "lt": ops.lt, "eq": ops.eq}[op]
    return fn(b, ops.size_of(b, x, I64), ops.size_of(b, y, I64))


def _wrap_index(b: Builder, i: Staged, d: Dim, axis: int) -> Staged:
    """A run-time index with NumPy's negative wrap-around (i < 0 -> i + d); out of range it
    is clamped later, or raises IndexError with boundscheck on."""
    if i.ndim != 0:
        raise Reject(IndexOutOfBoundsError, INVALID_INDEX)
    v = A.convert_value(b, i.value, I64)
    size = A.dim_value(b, d).value
    zero = A.constant(b, 0, I64).value
    _check_runtime_index(b, v, size, d, axis, 1)
    neg = ops.lt(b, v, zero)
    return Staged(ops.select(b, neg, ops.add(b, v, size), v))


def _check_runtime_index(b: Builder, v: Value, size: Value, d: Dim, axis: int, count: Dim) -> None:
    """IndexError for run-time indices `v` (`count` of them) into an axis of size d: every
    index with boundscheck on; otherwise only an empty axis, which has nothing to clamp to."""
    message = f"index is out of bounds for axis {axis} with size {{0}}"
    if config.boundscheck():
        ok = ops.and_(b, ops.ge(b, v, ops.neg(b, size)), ops.lt(b, v, size))
        ops.check(b, ok, "IndexError", message + " (boundscheck)", (d,))
        return
    if dims.nonnegative(dims.add(d, -1)) or count == 0:
        return
    if d == 0 and isinstance(count, int):
        raise Reject(IndexOutOfBoundsError, f"index is out of bounds for axis {axis} with size 0")
    ok = _dim_cmp(b, "gt", d, 0)
    if not isinstance(count, int):
        ok = ops.or_(b, ok, _dim_cmp(b, "eq", count, 0))
    ops.check(b, ok, "IndexError", message, (d,))


def _first_failures(it: np.ndarray, limit: int = 8) -> list[tuple[int, int]]:
    """(index, size it needs) for the indices that can be the first out of bounds, in order.

    An index i needs a size of at least i + 1 (or -i if negative); for a given size the
    first failing index (the one NumPy reports) is one whose need exceeds every earlier
    need, so checking those in order reports the same index. At most `limit` checks: the
    last one covers the largest need."""
    out: list[tuple[int, int]] = []
    best = 0
    for i in (int(v) for v in it.reshape(-1)):
        need = i + 1 if i >= 0 else -i
        if need > best:
            best = need
            out.append((i, need))
    return out if len(out) <= limit else out[:limit - 1] + [max(out, key=lambda t: t[1])]


def _index_array(b: Builder, it: Any, d: Dim, axis: int) -> Any:
    if isinstance(it, np.ndarray):
        if it.dtype.kind not in "iu":
            raise Reject(IndexOutOfBoundsError, INVALID_INDEX)
        if isinstance(d, int):
            if it.size and (it.max() >= d or it.min() < -d):
                bad = int(it.max()) if it.max() >= d else int(it.min())
                raise Reject(IndexOutOfBoundsError, f"index {bad} is out of bounds for axis {axis} "
                             f"with size {d}")
            return np.where(it < 0, it + d, it).astype(np.int64)
        # static indices, symbolic size: NumPy's bounds checked when the kernel runs
        for bad, need in _first_failures(it):
            ops.check(b, _dim_cmp(b, "ge", d, need), "IndexError", f"index {bad} is out of bounds "
                      f"for axis {axis} with size {{0}}", (d,))
        if not (it < 0).any():
            return it.astype(np.int64)
        v = A.constant(b, it.astype(np.int64), I64).value
        size = A.broadcast_value(b, A.dim_value(b, d).value, it.shape)
        zero = A.broadcast_value(b, A.constant(b, 0, I64).value, it.shape)
        return Staged(ops.select(b, ops.lt(b, v, zero), ops.add(b, v, size), v))
    if not is_int(it.dtype):
        raise Reject(IndexOutOfBoundsError, INVALID_INDEX)
    v = A.convert_value(b, it.value, I64)
    size = A.broadcast_value(b, A.dim_value(b, d).value, it.shape)
    zero = A.broadcast_value(b, A.constant(b, 0, I64).value, it.shape)
    _check_runtime_index(b, v, size, d, axis, prod(it.shape))
    neg = ops.lt(b, v, zero)
    return Staged(ops.select(b, neg, ops.add(b, v, size), v))


# ---- reading --------------------------------------------------------------------------------


def static_slice(b: Builder, x: Staged, axis: int, start: Dim, stop: Dim) -> Value:
    starts = tuple(start if i == axis else 0 for i in range(x.ndim))
    limits = tuple(stop if i == axis else d for i, d in enumerate(x.shape))
    return ops.slice_(b, x.value, start_indices=starts, limit_indices=limits, strides=(1,) * x.ndim)


def _apply_static(b: Builder, v: Value, axes: list[AxisPlan]) -> Value:
    rev = tuple(i for i, a in enumerate(axes) if a.reverse)
    if rev:
        v = ops.rev(b, v, dimensions=rev)
    full = all(a.start == 0 and a.limit == d and a.stride == 1
               for a, d in zip(axes, v.type.shape))
    if full:
        return v
    return ops.slice_(b, v, [a.start for a in axes], [a.limit for a in axes], [a.stride for a in axes])


def getitem(b: Builder, x: Any, index: Any) -> Staged:
    """x[index] with NumPy's basic and advanced indexing rules."""
    x = A.lift(b, x)
    p = plan(b, x, index)
    if p.mask is not None:
        raise Reject(DynamicShapeError, "boolean mask indexing has a shape that depends on the "
                     "values of the mask", "use np.where(mask, x, fill) to keep the shape")
    if any(a.array is not None for a in p.axes):
        return _advanced(b, x, p)
    v = _apply_static(b, x.value, p.axes)
    dyn = [a for a in p.axes if a.dynamic is not None]
    if dyn:
        starts = [a.dynamic.value if a.dynamic is not None else A.constant(b, 0, I64).value
                  for a in p.axes]
        sizes = tuple(a.window if a.window is not None else 1 if a.dynamic is not None else d
                      for a, d in zip(p.axes, v.type.shape))
        v = ops.dynamic_slice(b, v, starts, sizes=sizes)
    shape = [d for a, d in zip(p.axes, v.type.shape) if not a.drop]
    for pos in p.new_axes:
        shape.insert(pos, 1)
    v = A.reshape_value(b, v, tuple(shape))
    if not shape and all(a.drop for a in p.axes):
        return Staged(v)          # a NumPy scalar, not a view
    return view(v, x)


def _advanced(b: Builder, x: Staged, p: IndexPlan) -> Staged:
    if p.new_axes:
        raise Reject(UnsupportedError, "combining None (np.newaxis) with array indices is not "
                     "supported", "index first, then use np.expand_dims")
    adv = [i for i, a in enumerate(p.axes) if a.array is not None or a.drop]
    pre = [AxisPlan(0, d, 1) if i in adv else a for i, (a, d) in enumerate(zip(p.axes, x.shape))]
    v = _apply_static(b, x.value, pre)
    idx = [_axis_index(b, p.axes[i]) for i in adv]
    bshape = A.broadcast_shapes(*[A.shape_of(i) for i in idx])
    if len(adv) == 1:
        ind = A.lift(b, idx[0], I64)
        return Staged(ops.take(b, v, ind.value, axis=adv[0]))
    return _multi_take(b, v, adv, idx, bshape)


def _axis_index(b: Builder, a: AxisPlan) -> Any:
    if a.array is not None:
        return a.array
    if a.dynamic is not None:
        return a.dynamic
    return np.asarray(a.start, dtype=np.int64) if isinstance(a.start, int) else A.dim_value(b, a.start)



def _flat_index(b: Builder, idx: list[Any], sizes: list[Dim], bshape: tuple[Dim, ...]) -> Value:
    """The row-major position, among axes of `sizes`, of the index arrays `idx` (one per
    axis, broadcast to `bshape`): sum of idx[k] times the product of the later sizes."""
    flat: Value | None = None
    stride: Dim = 1
    for k in reversed(range(len(sizes))):
        term = A.operand(b, idx[k], I64, bshape)
        if stride != 1:
            term = ops.mul(b, term, A.operand(b, A.dim_value(b, stride), I64, bshape))
        flat = term if flat is None else ops.add(b, flat, term)
        stride = dims.mul(stride, sizes[k])
    assert flat is not None, "advanced indexing without index arrays"
    return flat

def _multi_take(b: Builder, v: Value, adv: list[int], idx: list[Any], bshape: tuple[Dim, ...]) -> Staged:
    ndim, shape = v.type.ndim, v.type.shape
    rest = [i for i in range(ndim) if i not in adv]
    moved = ops.transpose(b, v, adv + rest)
    sizes = [shape[i] for i in adv]
    total = prod(sizes)
    flat_v = A.reshape_value(b, moved, (total,) + tuple(shape[i] for i in rest))
    flat = _flat_index(b, idx, sizes, bshape)
    out = ops.take(b, flat_v, flat, axis=0)
    adjacent = adv == list(range(adv[0], adv[0] + len(adv)))
    if adjacent and adv[0] > 0:
        nb = len(bshape)
        perm = list(range(nb, nb + adv[0])) + list(range(nb)) + list(range(nb + adv[0], out.type.ndim))
        out = ops.transpose(b, out, perm)
    return Staged(out)


# ---- writing ---------------------------------------------------------------------------------


def setitem(b: Builder, x: Staged, index: Any, value: Any) -> Value:
    """The new value of x after ``x[index] = value`` (a pure update)."""
    p = plan(b, x, index, for_write=True)
    if p.mask is not None:
        return _masked_set(b, x, p.mask, value)
    if any(a.array is not None for a in p.axes):
        return _scatter_set(b, x, p, value)
    indexed = [a.size() for a in p.axes if not a.drop]
    for pos in p.new_axes:
        indexed.insert(pos, 1)
    upd = _cast_broadcast(b, value, x.dtype, tuple(indexed))
    window = tuple(1 if a.drop else a.size() for a in p.axes)
    upd = A.reshape_value(b, upd, window)
    if any(a.dynamic is not None for a in p.axes):
        return _dynamic_set(b, x, p, upd)
    rev = tuple(i for i, a in enumerate(p.axes) if a.reverse)
    if any(a.reverse and a.stride != 1 and not isinstance(d, int) for a, d in zip(p.axes, x.shape)):
        # the last position written is not a closed formula of a symbolic size: write into
        # the reversed array, in the plan's own (reversed) coordinates, and reverse back
        flipped = ops.rev(b, x.value, dimensions=rev)
        out = ops.update_slice(b, flipped, upd, [a.start for a in p.axes], [a.limit for a in p.axes],
                               [a.stride for a in p.axes])
        return ops.rev(b, out, dimensions=rev)
    if rev:
        upd = ops.rev(b, upd, dimensions=rev)
    starts = tuple(_low(a, d) for a, d in zip(p.axes, x.shape))
    limits = tuple(a.limit if not a.reverse else dims.add(s, dims.add(a.limit, dims.mul(a.start, -1)))
                   for a, s in zip(p.axes, starts))
    return ops.update_slice(b, x.value, upd, starts, limits, [a.stride for a in p.axes])


def _low(a: AxisPlan, d: Dim) -> Dim:
    """The smallest position written on this axis, in the array's own coordinates."""
    if not a.reverse:
        return a.start
    # positions in reversed coordinates start..limit map to d-1-limit+1 .. d-1-start
    return dims.add(dims.add(d, -1), dims.mul(dims.add(a.limit, -1), -1))


def _cast_broadcast(b: Builder, value: Any, dtype: np.dtype, shape: tuple[Dim, ...]) -> Value:
    v = A.lift(b, A.normalize_operand(b, value), dtype if not isinstance(value, Staged) else None)
    v = A.convert(b, v, dtype)
    try:
        out_shape = A.broadcast_shapes(v.shape, shape)
    except Reject:
        out_shape = None
    if out_shape != tuple(shape):
        raise Reject(ShapeMismatchError, f"could not broadcast input array from shape "
                     f"{A.fmt_shape(v.shape)} into shape {A.fmt_shape(shape)}")
    return A.broadcast_value(b, v.value, tuple(shape))


def _dynamic_set(b: Builder, x: Staged, p: IndexPlan, upd: Value) -> Value:
    if any(a.reverse or a.stride != 1 for a in p.axes):
        raise Reject(UnsupportedError, "an assignment mixing a run-time index with a strided or "
                     "reversed slice is not supported", "assign in two steps")
    starts = []
    for a in p.axes:
        if a.dynamic is not None:
            starts.append(a.dynamic.value)
        elif isinstance(a.start, int):
            starts.append(A.constant(b, a.start, I64).value)
        else:
            starts.append(A.dim_value(b, a.start).value)
    return ops.dynamic_update_slice(b, x.value, upd, starts)


def _scatter_set(b: Builder, x: Staged, p: IndexPlan, value: Any) -> Value:
    arrays = [i for i, a in enumerate(p.axes) if a.array is not None]
    if p.new_axes:
        raise Reject(UnsupportedError, "assignment combining None (np.newaxis) with index arrays "
                     "is not supported", "drop the None: it does not change what is assigned")
    full = [a.array is None and not a.drop and a.dynamic is None and a.start == 0
            and a.limit == d and a.stride == 1 and not a.reverse for a, d in zip(p.axes, x.shape)]
    if not all(full[i] or p.axes[i].array is not None or p.axes[i].drop for i in range(x.ndim)):
        raise Reject(UnsupportedError, "assignment with index arrays is supported with full "
                     "slices (`:`) on the other axes", "assign into a slice first: "
                     "s = y[a:b]; s[idx] = v")
    if len(arrays) == 1 and all(full[i] or i == arrays[0] for i in range(x.ndim)):
        axis = arrays[0]
        ind = A.lift(b, p.axes[axis].array, I64)
        shape = tuple(x.shape[:axis]) + tuple(ind.shape) + tuple(x.shape[axis + 1:])
        upd = _cast_broadcast(b, value, x.dtype, shape)
        return ops.scatter(b, x.value, ind.value, upd, axis=axis, mode="set")
    return _multi_scatter(b, x, p, value)


def _multi_scatter(b: Builder, x: Staged, p: IndexPlan, value: Any) -> Value:
    """y[rows, cols] = v (index arrays, or ints, on several axes): one scatter into the array
    with those axes flattened into one, at the linearized index; the last write of an
    element wins, as in NumPy."""
    adv = [i for i, a in enumerate(p.axes) if a.array is not None or a.drop]
    rest = [i for i in range(x.ndim) if i not in adv]
    idx = [_axis_index(b, p.axes[i]) for i in adv]
    bshape = A.broadcast_shapes(*[A.shape_of(i) for i in idx])
    nb = len(bshape)
    adjacent = adv == list(range(adv[0], adv[0] + len(adv)))
    if adjacent:
        indexed = tuple(x.shape[:adv[0]]) + tuple(bshape) + tuple(x.shape[adv[-1] + 1:])
    else:
        indexed = tuple(bshape) + tuple(x.shape[i] for i in rest)
    upd = _cast_broadcast(b, value, x.dtype, indexed)
    if adjacent and adv[0] > 0:            # the index dims first, as in the flattened array
        upd = ops.transpose(b, upd, list(range(adv[0], adv[0] + nb)) + list(range(adv[0]))
                            + list(range(adv[0] + nb, len(indexed))))
    sizes = [x.shape[i] for i in adv]
    total = prod(sizes)
    rest_shape = tuple(x.shape[i] for i in rest)
    count = prod(bshape)
    upd = A.reshape_value(b, upd, (count,) + rest_shape)
    flat = _flat_index(b, idx, sizes, bshape)
    flat = A.reshape_value(b, flat, (count,))
    perm = adv + rest
    moved = A.reshape_value(b, ops.transpose(b, x.value, perm), (total,) + rest_shape)
    out = ops.scatter(b, moved, flat, upd, axis=0, mode="set")
    out = A.reshape_value(b, out, tuple(sizes) + rest_shape)
    inverse = [0] * x.ndim
    for pos, axis in enumerate(perm):
        inverse[axis] = pos
    return ops.transpose(b, out, inverse)


def _masked_set(b: Builder, x: Staged, mask: Staged, value: Any) -> Value:
    m = mask.value if mask.ndim == x.ndim else ops.broadcast_in_dim(b, mask.value, x.shape,
                                                                     range(mask.ndim))
    if isinstance(value, Selection):       # y[m] = x[m] - c: the same mask on both sides
        if not same_value(value.mask.value, m) or tuple(value.values.shape) != tuple(x.shape):
            raise Reject(DynamicShapeError, "assigning x[mask] through another mask (or into an "
                         "array of another shape) depends on how many elements each mask "
                         "selects", "use the same mask on both sides, or y = np.where(mask, "
                         "values, y)")
        return ops.select(b, m, A.convert(b, value.values, x.dtype).value, x.value)
    v = A.normalize_operand(b, value)
    if A.shape_of(v) not in ((), (1,)):
        raise Reject(DynamicShapeError, "assigning an array through a boolean mask depends on how "
                     "many elements the mask selects", "use y = np.where(mask, values, y), or "
                     "the same mask on both sides: y[mask] = x[mask] - c")
    if isinstance(v, Staged):
        v = Staged(A.reshape_value(b, v.value, ()), weak=v.weak)
    elif np.ndim(v):
        v = np.asarray(v).reshape(())
    fill = _cast_broadcast(b, v, x.dtype, tuple(x.shape))
    return ops.select(b, m, fill, x.value)


def mask_index(x: Any, index: Any) -> Staged | None:
    """The staged boolean mask of ``x[mask]`` (over x's leading axes), or None."""
    items = index if isinstance(index, tuple) else (index,)
    if len(items) != 1 or not isinstance(x, Staged):
        return None
    m = items[0]
    if isinstance(m, Staged) and m.dtype == BOOL and m.ndim > 0 \
            and tuple(m.shape) == tuple(x.shape[:m.ndim]):
        return m
    return None


# ---- NumPy's in-place writers: np.put_along_axis, np.putmask, np.place ------------------------


def put_along_axis(b: Builder, arr: Staged, indices: Any, values: Any, axis: Any) -> Value:
    """The new value of arr after np.put_along_axis(arr, indices, values, axis)."""
    if axis is None:
        if np.ndim(indices) != 1 and A.shape_of(indices) and len(A.shape_of(indices)) != 1:
            raise Reject(CompileError, "when axis=None, `indices` must have a single dimension.")
        flat = Staged(A.reshape_value(b, arr.value, (arr.type.size,)))
        new = put_along_axis(b, flat, indices, values, 0)
        return A.reshape_value(b, new, tuple(arr.shape))
    ind = A.lift(b, A.normalize_operand(b, indices))
    if not is_int(ind.dtype):
        raise Reject(IndexOutOfBoundsError, "`indices` must be an integer array")
    if ind.ndim != arr.ndim:
        raise Reject(CompileError, "`indices` and `arr` must have the same number of dimensions")
    ax = operator.index(axis)
    if not -arr.ndim <= ax < arr.ndim:
        raise Reject(CompileError, f"axis {ax} is out of bounds for array of dimension {arr.ndim}")
    ax %= arr.ndim
    # the index arrays of NumPy's fancy index: iota on the other axes, `indices` on `axis`
    shape = A.broadcast_shapes(tuple(d if i != ax else 1 for i, d in enumerate(arr.shape)),
                               tuple(ind.shape))
    items: list[Any] = []
    for i in range(arr.ndim):
        if i == ax:
            items.append(Staged(A.broadcast_value(b, A.convert_value(b, ind.value, I64), shape)))
        else:
            items.append(Staged(ops.iota(b, I64, shape, i)))
    return setitem(b, arr, tuple(items), values)


def copyto(b: Builder, dst: Staged, src: Any, casting: Any = "same_kind", where: Any = True) -> Value:
    """The new value of dst after np.copyto(dst, src, casting, where)."""
    s = A.normalize_operand(b, src)
    src_dtype = s.dtype if isinstance(s, Staged) and not s.weak else None
    if src_dtype is not None and not np.can_cast(src_dtype, dst.dtype, casting):
        raise Reject(CompileError, f"Cannot cast array data from dtype('{src_dtype}') to "
                     f"dtype('{dst.dtype}') according to the rule '{casting}'")
    new = _cast_broadcast(b, s, dst.dtype, tuple(dst.shape))
    if where is True:
        return new
    w = A.lift(b, A.normalize_operand(b, where))
    wv = w.value if w.dtype == BOOL else ops.ne(b, w.value, ops.full_like(b, 0, w.value))
    shape = A.broadcast_shapes(tuple(w.shape), tuple(dst.shape))
    if shape != tuple(dst.shape):
        raise Reject(ShapeMismatchError, f"could not broadcast where mask from shape "
                     f"{A.fmt_shape(w.shape)} into shape {A.fmt_shape(dst.shape)}")
    return ops.select(b, A.broadcast_value(b, wv, shape), new, dst.value)


def put(b: Builder, a: Staged, ind: Any, v: Any, mode: str = "raise") -> Value:
    """The new value of a after np.put(a, ind, v): a.flat[ind] = v (v repeated as needed)."""
    if mode != "raise":
        raise Reject(UnsupportedError, f"np.put with mode={mode!r} is not supported",
                     "use mode='raise' (the default)")
    idx = A.normalize_operand(b, ind)
    if not isinstance(idx, (Staged, np.ndarray)):
        idx = np.asarray(idx)
    shape = tuple(idx.shape) if isinstance(idx, Staged) else idx.shape
    vals = A.convert(b, A.lift(b, A.normalize_operand(b, v), a.dtype
                               if not isinstance(v, Staged) else None), a.dtype)
    flat = Staged(A.reshape_value(b, a.value, (a.type.size,)))
    if not shape:
        idx = Staged(A.reshape_value(b, A.lift(b, idx).value, (1,))) if isinstance(idx, Staged) \
            else np.asarray(idx).reshape(1)
        shape = (1,)
    new = setitem(b, flat, idx, Staged(_cyclic(b, vals, prod(shape), tuple(shape), "put")))
    return A.reshape_value(b, new, tuple(a.shape))


def fill_diagonal(b: Builder, a: Staged, val: Any, wrap: bool = False) -> Value:
    """The new value of a after np.fill_diagonal(a, val): a[i, i, ...] = val (repeated)."""
    if a.ndim < 2:
        raise Reject(CompileError, "array must be at least 2-d")
    if a.ndim > 2 and len(set(map(str, a.shape))) != 1:
        raise Reject(CompileError, "All dimensions of input must be of equal length")
    if wrap and a.ndim == 2 and a.shape[0] != a.shape[1]:
        raise Reject(UnsupportedError, "np.fill_diagonal(..., wrap=True) of a tall matrix is "
                     "not supported", "fill each square block separately")
    shape = tuple(a.shape)
    on = ops.eq(b, ops.iota(b, I64, shape, 0), ops.iota(b, I64, shape, 1))
    for axis in range(2, a.ndim):
        on = ops.and_(b, on, ops.eq(b, ops.iota(b, I64, shape, 0), ops.iota(b, I64, shape, axis)))
    v = A.convert(b, A.lift(b, A.normalize_operand(b, val), a.dtype
                            if not isinstance(val, Staged) else None), a.dtype)
    n = v.type.size
    if n == 1:
        fill = A.broadcast_value(b, A.reshape_value(b, v.value, ()), shape)
    else:                                   # the k-th diagonal element gets val.flat[k % n]
        nv = A.constant(b, n, I64).value if isinstance(n, int) else A.dim_value(b, n).value
        k = ops.mod(b, ops.iota(b, I64, shape, 0), A.broadcast_value(b, nv, shape))
        fill = ops.take(b, A.reshape_value(b, v.value, (n,)), k, axis=0)
    return ops.select(b, on, fill, a.value)


def putmask(b: Builder, a: Staged, mask: Any, values: Any) -> Value:
    """np.putmask(a, mask, values): a.flat[n] = values.flat[n % len(values)] where mask.flat[n]."""
    m = A.lift(b, A.normalize_operand(b, mask))
    if tuple(m.shape) != tuple(a.shape):
        raise Reject(ShapeMismatchError, "putmask: mask and data must be the same size")
    m_bool = m.value if m.dtype == BOOL else ops.ne(b, m.value, ops.full_like(b, 0, m.value))
    v = A.convert(b, A.lift(b, A.normalize_operand(b, values), a.dtype
                            if not isinstance(values, Staged) else None), a.dtype)
    fill = _cyclic(b, v, a.type.size, tuple(a.shape), "putmask")
    return ops.select(b, m_bool, fill, a.value)


def place(b: Builder, arr: Staged, mask: Any, vals: Any) -> Value:
    """np.place(arr, mask, vals): the k-th True position of mask gets vals[k % len(vals)]."""
    m = A.lift(b, A.normalize_operand(b, mask))
    if m.type.size != arr.type.size:
        raise Reject(ShapeMismatchError, "place: mask and data must be the same size")
    size = arr.type.size
    m_flat = A.reshape_value(b, m.value if m.dtype == BOOL else
                             ops.ne(b, m.value, ops.full_like(b, 0, m.value)), (size,))
    v = A.convert(b, A.lift(b, A.normalize_operand(b, vals), arr.dtype
                            if not isinstance(vals, Staged) else None), arr.dtype)
    n = v.type.size
    if n == 0:
        raise Reject(CompileError, "Cannot insert from an empty array!")
    rank = ops.cumsum(b, ops.convert(b, m_flat, I64), 0)          # 1 + rank of each True
    one = A.broadcast_value(b, A.constant(b, 1, I64).value, (size,))
    k = ops.sub(b, rank, one)
    if n != 1:
        nv = A.constant(b, n, I64).value if isinstance(n, int) else A.dim_value(b, n).value
        k = ops.mod(b, k, A.broadcast_value(b, nv, (size,)))
    zero = A.broadcast_value(b, A.constant(b, 0, I64).value, (size,))
    k = ops.select(b, m_flat, k, zero)
    picked = ops.take(b, A.reshape_value(b, v.value, (n,)), k, axis=0)
    out = ops.select(b, m_flat, picked, A.reshape_value(b, arr.value, (size,)))
    return A.reshape_value(b, out, tuple(arr.shape))


def _cyclic(b: Builder, v: Staged, size: Dim, shape: tuple[Dim, ...], what: str) -> Value:
    """v's elements repeated to `size` elements, in `shape` (np.putmask's values)."""
    n = v.type.size
    if n == 0:
        raise Reject(CompileError, f"{what}: values must not be empty")
    flat = A.reshape_value(b, v.value, (n,))
    if n == 1:
        return A.broadcast_value(b, A.reshape_value(b, flat, ()), shape)
    if n == size:
        return A.reshape_value(b, flat, shape)
    pos = ops.iota(b, I64, (size,), 0)
    nv = A.constant(b, n, I64).value if isinstance(n, int) else A.dim_value(b, n).value
    k = ops.mod(b, pos, A.broadcast_value(b, nv, (size,)))
    return A.reshape_value(b, ops.take(b, flat, k, axis=0), shape)
