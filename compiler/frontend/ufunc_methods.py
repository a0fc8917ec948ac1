"""The methods of NumPy's ufuncs: ``reduce``, ``accumulate``, ``outer`` and ``at``, for every
binary ufunc of :data:`ufuncs.UFUNCS` (one mechanism, not one branch per name).

* ``reduce``: the ufuncs NumPy has a reduction for (add, multiply, maximum, minimum,
  logical_and, logical_or) become that reduction (``np.add.reduce`` is ``np.sum`` with
  ``axis=0`` by default); any other associative ufunc (logaddexp, fmax, hypot, bitwise_or,
  ...) folds the axis in halves, ``log2(n)`` elementwise steps; a non-associative one
  (subtract, divide, power, arctan2) folds left to right, one step per element, as NumPy
  does. The empty reduction is the ufunc's identity (``np.logaddexp.identity`` is -inf),
  or NumPy's ValueError when it has none.
* ``accumulate``: add and multiply are cumsum and cumprod, maximum and minimum of real
  numbers cummax and cummin (one pass); another associative ufunc (logaddexp, fmax, ...) is
  a prefix scan of ``log2(n)`` shifted steps (Hillis-Steele), a non-associative one a
  left-to-right scan.
* Over an axis of symbolic size, ``accumulate`` (and ``reduce``, as its last row) is a
  ``for`` op carrying the result: ``out[k] = uf(out[k - 1], out[k])``.
* ``outer(a, b)``: the ufunc of ``a`` reshaped to ``a.shape + (1,) * b.ndim`` and ``b``.
* ``at(x, idx, v)``: the functional update ``x = x with x[idx] op= v`` applied unbuffered
  (a repeated index accumulates, as in NumPy); the caller's stager assigns the result.
  add and subtract are one ``scatter`` add; other ufuncs update one index entry after the
  other (the number of entries must be static).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from compiler.errors import CompileError, UnsupportedError
from compiler.frontend import arrays as A
from compiler.frontend import indexing as I
from compiler.frontend import reductions as R
from compiler.frontend import shapes as S
from compiler.frontend.ufuncs import UFUNCS, binary
from compiler.frontend.values import Reject, Staged
from compiler.ir import dims
from compiler.ir.builder import Builder
from compiler.ir.core import Block, Value
from compiler.ir.types import I64, TensorType
from compiler.primitives import ops
from compiler.primitives.loops import trip_count

_REDUCTIONS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
               "logical_and": "all", "logical_or": "any"}
_SCANS = {"add": "cumsum", "multiply": "cumprod"}
#: accumulate as a running maximum / minimum: one pass (ops.cummax), not log2(n) shifted steps
_RUNNING = {"maximum": ops.cummax, "minimum": ops.cummin}
ASSOCIATIVE = {"add", "multiply", "maximum", "minimum", "fmax", "fmin", "logaddexp",
               "logaddexp2", "logical_and", "logical_or", "logical_xor", "bitwise_and",
               "bitwise_or", "bitwise_xor", "hypot"}
MAX_SEQUENTIAL = 1024      # steps of a left-to-right fold or of an unrolled ufunc.at
_NO_VALUE: Any = np._NoValue


def ufunc_name(uf: np.ufunc) -> str:
    name = uf.__name__
    if name not in UFUNCS:
        raise Reject(UnsupportedError, f"np.{name} is not supported", None)
    if uf.nin != 2 or uf.nout != 1:
        raise Reject(CompileError, f"{name}.reduce/accumulate/outer/at: only binary ufuncs have "
                     "these methods" if uf.nin != 2 else f"np.{name} has {uf.nout} outputs")
    return name


def _fold(b: Builder, name: str, x: Staged, axis: int) -> Staged:
    """Reduce axis `axis` of x (static size >= 1) with the binary ufunc `name`."""
    n = S._static_dim(x.shape[axis])
    if name in ASSOCIATIVE:
        while n > 1:
            half = n // 2
            lo = Staged(I.static_slice(b, x, axis, 0, half))
            hi = Staged(I.static_slice(b, x, axis, half, 2 * half))
            y = binary(b, name, lo, hi)
            if n % 2:
                rest = A.convert(b, Staged(I.static_slice(b, x, axis, 2 * half, n)), y.dtype)
                y = S.concatenate(b, [y, rest], axis)
            x, n = y, (n + 1) // 2
        return S.squeeze(b, x, axis)
    _sequential(name, n)
    acc = S.squeeze(b, Staged(I.static_slice(b, x, axis, 0, 1)), axis)
    for k in range(1, n):
        acc = binary(b, name, acc, S.squeeze(b, Staged(I.static_slice(b, x, axis, k, k + 1)), axis))
    return acc


def loop_scan(b: Builder, name: str, x: Staged, axis: int) -> Staged:
    """accumulate over an axis of any size (a symbolic one): a ``for`` op whose carry starts
    as x (moved to the front) and becomes the result, out[k] = uf(out[k - 1], out[k])."""
    xm = S.moveaxis(b, x, axis, 0)
    t = xm.value.type
    n, rest = t.shape[0], tuple(t.shape[1:])
    body = Block()
    i = Value(TensorType(I64, ()), None, 0, "k")
    out = Value(t, None, 1, "")
    body.args.extend([i, out])
    with b.inside(body):
        zeros = [ops.scalar(b, 0, I64) for _ in rest]
        before = ops.sub(b, i, ops.scalar(b, 1, I64))
        prev = ops.dynamic_slice(b, out, [before, *zeros], (1, *rest))
        cur = ops.dynamic_slice(b, out, [i, *zeros], (1, *rest))
        new = A.convert(b, binary(b, name, Staged(prev), Staged(cur)), t.dtype)
        body.results = [ops.dynamic_update_slice(b, out, new.value, [i, *zeros])]
    start, stop = ops.scalar(b, 1, I64), A.dim_value(b, n).value
    (res,) = ops.for_loop(b, start, stop, [xm.value], body, 1, trip_count(1, n, 1))
    return S.moveaxis(b, Staged(res), 0, axis)


def _loop_reduce(b: Builder, uf: np.ufunc, name: str, x: Staged, axis: int, initial: Any) -> Staged:
    """reduce over a symbolic axis: the last row of the loop scan. The fold starts from
    `initial`, else from the ufunc's identity (so an empty axis gives it, as in NumPy), else
    from the first element (an empty axis is NumPy's ValueError, when the kernel runs)."""
    first = initial if initial is not _NO_VALUE else uf.identity
    if first is not None:
        head = S.broadcast_to(b, A.convert(b, A.lift(b, A.normalize_operand(b, first)), x.dtype),
                              tuple(1 if k == axis else d for k, d in enumerate(x.shape)))
        x = S.concatenate(b, [head, x], axis)
    else:
        R._check_nonempty(b, x, (axis,), f"zero-size array to reduction operation {name} which "
                          "has no identity")
    n = x.shape[axis]
    scanned = loop_scan(b, name, x, axis)
    last = Staged(I.static_slice(b, scanned, axis, dims.add(n, -1), n))
    return S.squeeze(b, last, axis)


def _sequential(name: str, n: int) -> None:
    if n > MAX_SEQUENTIAL:
        raise Reject(UnsupportedError, f"np.{name} is not associative: its reduce/accumulate over "
                     f"{n} elements would be {n} sequential steps (at most {MAX_SEQUENTIAL})",
                     "write the loop with compiler.fori_loop or compiler.scan")


def reduce(b: Builder, uf: np.ufunc, array: Any, axis: Any = 0, dtype: Any = None, out: Any = None,
           keepdims: bool = False, initial: Any = _NO_VALUE, where: Any = True) -> Staged:
    """``uf.reduce``: NumPy's semantics (axis 0 by default, None for all axes)."""
    R._no_out(out)
    name = ufunc_name(uf)
    if where is not True:
        raise Reject(UnsupportedError, f"{name}.reduce(where=...) is not supported",
                     "mask the operand with np.where(mask, x, identity) first")
    x = A.lift(b, A.normalize_operand(b, array))
    if axis is None:
        axes = tuple(range(x.ndim))
    else:
        axes = S.normalize_axes(axis, x.ndim)
    if len(axes) > 1 and name not in ASSOCIATIVE:
        raise Reject(CompileError, f"reduction operation '{name}' is not reorderable, so at most "
                     "one axis may be specified")
    if initial is _NO_VALUE and name in _REDUCTIONS:
        return R.reduce(b, _REDUCTIONS[name], x, axes, dtype, None, keepdims)
    if dtype is not None:
        x = A.astype(b, x, dtype)
    # fold one axis at a time, the last first, so the positions of the others stay put
    out_x = x
    one = len(axes) == 1
    for ax in sorted(axes, reverse=True):
        out_x = _reduce_axis(b, uf, name, out_x, ax, initial if one else _NO_VALUE)
    if not one and initial is not _NO_VALUE:       # several axes: an associative ufunc
        out_x = A.convert(b, binary(b, name, A.normalize_operand(b, initial), out_x), out_x.dtype)
    if keepdims:
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        out_x = Staged(A.reshape_value(b, out_x.value, shape))
    return out_x


def _reduce_axis(b: Builder, uf: np.ufunc, name: str, x: Staged, axis: int, initial: Any) -> Staged:
    if not isinstance(x.shape[axis], int):
        return _loop_reduce(b, uf, name, x, axis, initial)
    n = x.shape[axis]
    if initial is not _NO_VALUE:
        first = S.broadcast_to(b, A.convert(b, A.lift(b, A.normalize_operand(b, initial)), x.dtype),
                               tuple(1 if i == axis else d for i, d in enumerate(x.shape)))
        x = S.concatenate(b, [first, x], axis)
        n += 1
    if n == 0:
        if uf.identity is None:
            raise Reject(CompileError, f"zero-size array to reduction operation {name} which has "
                         "no identity")
        shape = tuple(d for i, d in enumerate(x.shape) if i != axis)
        dtype = A.oracle(uf, [x, x])
        return S.full(b, shape, uf.identity, dtype)
    return _fold(b, name, x, axis)


def accumulate(b: Builder, uf: np.ufunc, array: Any, axis: int = 0, dtype: Any = None,
               out: Any = None) -> Staged:
    """``uf.accumulate``: out[k] = uf(out[k-1], x[k]) along `axis`."""
    R._no_out(out)
    name = ufunc_name(uf)
    x = A.lift(b, A.normalize_operand(b, array))
    if x.ndim == 0:
        raise Reject(CompileError, "accumulate: cannot accumulate on a scalar")
    ax = S.normalize_axis(axis, x.ndim)
    if name in _SCANS:
        return R.scan(b, _SCANS[name], x, ax, dtype)
    if dtype is not None:
        x = A.astype(b, x, dtype)
    dt = A.oracle(uf, [x, x])
    x = A.convert(b, x, dt)
    if name in _RUNNING and np.dtype(dt).kind in "iuf":      # a one-pass scan primitive
        return Staged(_RUNNING[name](b, x.value, ax))
    if not isinstance(x.shape[ax], int):
        return loop_scan(b, name, x, ax)
    n = x.shape[ax]
    if n <= 1:
        return x
    if name in ASSOCIATIVE:
        shift = 1
        while shift < n:
            head = Staged(I.static_slice(b, x, ax, 0, shift))
            step = binary(b, name, Staged(I.static_slice(b, x, ax, 0, n - shift)),
                          Staged(I.static_slice(b, x, ax, shift, n)))
            x = S.concatenate(b, [head, A.convert(b, step, dt)], ax)
            shift *= 2
        return x
    _sequential(name, n)
    parts = [Staged(I.static_slice(b, x, ax, 0, 1))]
    for k in range(1, n):
        parts.append(A.convert(b, binary(b, name, parts[-1],
                                         Staged(I.static_slice(b, x, ax, k, k + 1))), dt))
    return S.concatenate(b, parts, ax)


def outer(b: Builder, uf: np.ufunc, A_: Any, B_: Any, **kwargs: Any) -> Staged:
    """``uf.outer(a, b)``: uf(a[..., None, ...], b) with a new axis per dimension of b."""
    name = ufunc_name(uf)
    if kwargs:
        raise Reject(UnsupportedError, f"{name}.outer: the keyword argument(s) "
                     f"{', '.join(kwargs)} are not supported")
    x = A.lift(b, A.normalize_operand(b, A_))
    y = A.normalize_operand(b, B_)
    yshape = A.shape_of(y)
    xs = Staged(A.reshape_value(b, x.value, tuple(x.shape) + (1,) * len(yshape)))
    return binary(b, name, xs, y)


def at(b: Builder, uf: np.ufunc, x: Staged, indices: Any, values: Any = None) -> Staged:
    """The new value of `x` after ``uf.at(x, indices, values)`` (unbuffered: every entry of
    `indices` applies, repeated ones included)."""
    name = ufunc_name(uf)
    if values is None:
        raise Reject(CompileError, f"{name}.at: a binary ufunc needs the values argument")
    idx = indices if isinstance(indices, tuple) else (indices,)
    idx = tuple(np.asarray(i) if isinstance(i, list) else i for i in idx)
    for i in idx:
        if isinstance(i, slice) or i is Ellipsis or i is None:
            raise Reject(UnsupportedError, f"{name}.at with slices in the index is not supported",
                         "index with integer arrays (one per leading axis)")
        kind = (i.dtype.kind if isinstance(i, (np.ndarray, np.generic, Staged))
                else ("i" if isinstance(i, (int, np.integer)) and not isinstance(i, bool) else "?"))
        if kind not in "iu":
            raise Reject(UnsupportedError, f"{name}.at needs integer indices",
                         "use np.where(mask, uf(x, v), x) for a boolean mask")
    if len(idx) > x.ndim:
        raise Reject(I.IndexOutOfBoundsError, f"too many indices for array: array is "
                     f"{x.ndim}-dimensional, but {len(idx)} were indexed")
    bshape = A.broadcast_shapes(*[A.shape_of(i) for i in idx])
    rest = tuple(x.shape[len(idx):])
    target = bshape + rest
    v = A.normalize_operand(b, values)
    try:
        A.broadcast_shapes(A.shape_of(v), target)
    except Reject:
        raise Reject(CompileError, f"{name}.at: values of shape {A.fmt_shape(A.shape_of(v))} do "
                     f"not broadcast to the indexed shape {A.fmt_shape(target)}") from None
    if name in ("add", "subtract") and bshape:
        return _scatter_add(b, uf, name, x, idx, v, bshape, target)
    total = A.prod(bshape)
    if not isinstance(total, int):
        raise Reject(UnsupportedError, f"{name}.at with index arrays of symbolic size "
                     f"{total}", "use np.add.at or np.subtract.at, or a compiler.fori_loop")
    _sequential(name, total)
    vb = A.lift(b, v)
    if tuple(vb.shape) != tuple(target):
        vb = Staged(A.broadcast_value(b, vb.value, target), weak=vb.weak)
    out = x
    for flat in range(total):
        pos = tuple(int(p) for p in np.unravel_index(flat, [S._static_dim(d) for d in bshape])) \
            if bshape else ()
        key = tuple(_entry(b, i, pos) for i in idx)
        current = I.getitem(b, out, key)
        new = binary(b, name, current, I.getitem(b, vb, pos) if pos else vb)
        dt = A.oracle(uf, [current, new])
        if not np.can_cast(dt, x.dtype, "same_kind"):
            raise Reject(CompileError, f"Cannot cast ufunc '{name}' output from {dt!r} to "
                         f"{x.dtype!r} with casting rule 'same_kind'")
        out = Staged(I.setitem(b, out, key, A.convert(b, new, x.dtype)))
    return out


def _scatter_add(b: Builder, uf: np.ufunc, name: str, x: Staged, idx: tuple[Any, ...], v: Any,
                 bshape: tuple[Any, ...], target: tuple[Any, ...]) -> Staged:
    """add.at / subtract.at as one scatter-add over the flattened leading axes."""
    upd = v if name == "add" else binary(b, "subtract", 0, v)
    dt = A.oracle(uf, [x, upd])
    if not np.can_cast(dt, x.dtype, "same_kind"):
        raise Reject(CompileError, f"Cannot cast ufunc '{name}' output from {dt!r} to "
                     f"{x.dtype!r} with casting rule 'same_kind'")
    lead, rest = tuple(x.shape[:len(idx)]), tuple(x.shape[len(idx):])
    flat: Any = None
    stride: Any = 1
    for i, d in reversed(list(zip(idx, lead))):
        term = A.broadcast_value(b, _wrapped(b, i, d).value, bshape)
        if stride != 1:
            s = A.lift(b, stride, I64) if isinstance(stride, int) else A.dim_value(b, stride)
            term = ops.mul(b, term, A.broadcast_value(b, s.value, bshape))
        flat = term if flat is None else ops.add(b, flat, term)
        stride = A.prod((stride, d))
    count = A.prod(bshape)
    flat = A.reshape_value(b, flat, (count,))
    xs = A.reshape_value(b, x.value, (A.prod(lead),) + rest)
    updv = A.reshape_value(b, A.operand(b, upd, x.dtype, target), (count,) + rest)
    out = ops.scatter(b, xs, flat, updv, axis=0, mode="add")
    return Staged(A.reshape_value(b, out, tuple(x.shape)))


def _entry(b: Builder, i: Any, pos: tuple[int, ...]) -> Any:
    """Entry `pos` of a broadcast index (a static int, or a staged int64 scalar)."""
    shape = A.shape_of(i)
    local = tuple(p if d != 1 else 0 for p, d in zip(pos[len(pos) - len(shape):], shape))
    if isinstance(i, Staged):
        return I.getitem(b, i, local) if local else i
    return int(np.asarray(i)[local])


def _wrapped(b: Builder, i: Any, n: Any) -> Staged:
    """An index array with negative entries counted from the end; static entries checked."""
    if isinstance(i, Staged):
        iv = A.convert(b, i, I64)
        size = A.lift(b, n, I64) if isinstance(n, int) else A.dim_value(b, n)
        neg = ops.lt(b, iv.value, ops.full_like(b, 0, iv.value))
        shifted = ops.add(b, iv.value, A.broadcast_value(b, size.value, tuple(iv.shape)))
        return Staged(ops.select(b, neg, shifted, iv.value))
    arr = np.asarray(i, dtype=np.int64)
    if isinstance(n, int):
        bad = arr[(arr >= n) | (arr < -n)]
        if bad.size:
            raise Reject(I.IndexOutOfBoundsError, f"index {int(bad.flat[0])} is out of bounds for "
                         f"axis 0 with size {n}")
        return A.constant(b, np.where(arr < 0, arr + n, arr), I64)
    return _wrapped(b, A.constant(b, arr, I64), n)


METHODS: dict[str, Callable[..., Any]] = {"reduce": reduce, "accumulate": accumulate, "outer": outer}
