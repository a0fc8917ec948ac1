"""NumPy's shape manipulation and array creation, as IR.

reshape (with -1 and symbolic sizes), transpose and friends, expand_dims,
squeeze, broadcast_to, concatenate/stack/hstack/vstack, flip, tile, repeat,
pad, diagonal/diag/tril/triu, roll, and the creation functions (zeros,
ones, full, eye, arange, linspace, array/asarray). Functions that return a
view in NumPy return a ``VIEW`` :class:`Staged` whose ``base`` is the
array viewed, so that writes through views can be rejected.
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

import compiler.primitives as P
from compiler.primitives import ops
from compiler.errors import AxisError, CompileError, DynamicShapeError, ShapeMismatchError, \
    UnsupportedError
from compiler.frontend import arrays as A
from compiler.frontend.arrays import prod, view
from compiler.frontend.indexing import getitem, setitem, static_slice
from compiler.frontend.ufuncs import binary
from compiler.frontend.values import LOCAL, Reject, Staged
from compiler.frontend.writes import contiguous
from compiler.ir import dims
from compiler.ir.builder import Builder
from compiler.ir.core import Value
from compiler.ir.dims import Dim, DimExpr
from compiler.ir.types import I64

# ---- axes and shape arguments ---------------------------------------------------------


def normalize_axis(axis: Any, ndim: int) -> int:
    """An axis argument in range(ndim) (negative counts from the end), as NumPy checks it."""
    if isinstance(axis, Staged):
        raise Reject(DynamicShapeError, "an axis must be known at compile time, not an array value")
    try:
        a = operator.index(axis)
    except TypeError:
        raise Reject(CompileError, f"'{type(axis).__name__}' object cannot be interpreted as an "
                     "integer axis") from None
    if not -ndim <= a < ndim:
        raise Reject(AxisError, f"axis {a} is out of bounds for array of dimension {ndim}")
    return a % ndim if ndim else 0


def normalize_axes(axis: Any, ndim: int, *, sort: bool = True) -> tuple[int, ...]:
    """axis=None (all), an int or a tuple of ints, without repeats."""
    if axis is None:
        return tuple(range(ndim))
    items = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = tuple(normalize_axis(a, ndim) for a in items)
    if len(set(out)) != len(out):
        raise Reject(CompileError, "repeated axis")
    return tuple(sorted(out)) if sort else out


def shape_arg(shape: Any, b: Builder | None = None) -> tuple[Dim, ...]:
    """A shape argument (int, DimExpr or sequence of them) as a tuple of dims. With a builder,
    a symbolic dim that may be negative (``x.shape[0] - 3``) is checked when the kernel runs
    (NumPy's ValueError), where it would otherwise become an empty axis."""
    if isinstance(shape, Staged):
        raise Reject(DynamicShapeError, "a shape must be known at compile time, not an array value",
                     "use x.shape, len(x) or Python ints to build shapes")
    items = shape if isinstance(shape, (tuple, list)) else (shape,)
    out: list[Dim] = []
    for d in items:
        if isinstance(d, Staged):
            raise Reject(DynamicShapeError, "a shape must be known at compile time, not an array "
                         "value", "use x.shape, len(x) or Python ints to build shapes")
        out.append(d if isinstance(d, DimExpr) else operator.index(d))
        if b is not None and isinstance(d, DimExpr) and not dims.nonnegative(d):
            ops.check(b, ops.ge(b, ops.size_of(b, d, I64), ops.size_of(b, 0, I64)), "ValueError",
                      "negative dimensions are not allowed")
    return tuple(out)


# ---- reshape --------------------------------------------------------------------------


def reshape(b: Builder, x: Any, shape: Any) -> Staged:
    x = A.lift(b, x)
    asked = shape_arg(shape)
    new = _infer_shape(x.type.size, asked)
    total, size = x.type.size, prod(new)
    if size != total:
        # -1 against a symbolic size that may not divide evenly ((n // 3) for n elements):
        # checked when the kernel runs, as NumPy's ValueError; the reshape then takes all
        # size == total elements
        ops.check(b, ops.eq(b, ops.size_of(b, size, I64), ops.size_of(b, total, I64)), "ValueError",
                  f"cannot reshape array of size {{0}} into shape {A.fmt_shape(asked)}", (total,))
        flat = A.reshape_value(b, x.value, (total,))
        return _reshaped(A.reshape_value(b, ops.slice_(b, flat, (0,), (size,)), new), x)
    return _reshaped(A.reshape_value(b, x.value, new), x)


def _reshaped(value: Value, x: Staged) -> Staged:
    """A reshape of x: a view when x is contiguous or only unit axes change; otherwise NumPy
    may copy or not depending on the strides, and the result is a view that cannot be
    written through (a write is an error rather than a guess)."""
    out = view(value, x)
    same = [d for d in value.type.shape if d != 1] == [d for d in x.shape if d != 1]
    if not same and not contiguous(x):
        out.path = None
    return out


def _infer_shape(total: Dim, shape: tuple[Dim, ...]) -> tuple[Dim, ...]:
    unknown = [i for i, d in enumerate(shape) if isinstance(d, int) and d == -1]
    if len(unknown) > 1:
        raise Reject(CompileError, "can only specify one unknown dimension")
    if any(isinstance(d, int) and d < -1 for d in shape):
        raise Reject(CompileError, "negative dimensions not allowed")
    known = prod([d for d in shape if not (isinstance(d, int) and d == -1)])
    if unknown:
        fill = _divide(total, known, shape)
        shape = shape[:unknown[0]] + (fill,) + shape[unknown[0] + 1:]
    elif total != known:
        _reshape_error(total, shape)
    return shape


def _divide(total: Dim, known: Dim, shape: tuple[Dim, ...]) -> Dim:
    if isinstance(total, int) and isinstance(known, int):
        if known == 0 or total % known:
            _reshape_error(total, shape)
        return total // known
    if total == known:
        return 1
    if isinstance(known, int) and known > 0:
        return dims.floordiv(total, known)
    if isinstance(known, DimExpr) and len(known.terms) == 1 and isinstance(total, DimExpr):
        (mono, coef), = known.terms
        terms: dict[tuple[str, ...], int] = {}
        for m, c in total.terms:
            rest = list(m)
            for factor in mono:
                if factor not in rest or c % coef:
                    _reshape_error(total, shape)
                rest.remove(factor)
            terms[tuple(rest)] = c // coef
        return DimExpr.make(terms)
    _reshape_error(total, shape)
    raise AssertionError


def _reshape_error(total: Dim, shape: tuple[Dim, ...]) -> None:
    hint = None if isinstance(total, int) else "the sizes involve symbols that do not divide evenly"
    raise Reject(ShapeMismatchError, f"cannot reshape array of size {total} into shape "
                 f"{A.fmt_shape(shape)}", hint)


def ravel(b: Builder, x: Any) -> Staged:
    x = A.lift(b, x)
    return _reshaped(A.reshape_value(b, x.value, (x.type.size,)), x)


def flatten(b: Builder, x: Any) -> Staged:
    s = ravel(b, x)
    return Staged(s.value)


# ---- axis permutations -------------------------------------------------------------------


def transpose(b: Builder, x: Any, axes: Any = None) -> Staged:
    x = A.lift(b, x)
    if axes is None:
        perm = tuple(reversed(range(x.ndim)))
    else:
        perm = normalize_axes(axes, x.ndim, sort=False)
        if len(perm) != x.ndim:
            raise Reject(CompileError, "axes don't match array")
    if perm == tuple(range(x.ndim)):
        return view(x.value, x)
    return view(b.emit1(P.transpose, [x.value], {"permutation": perm}), x)


def swapaxes(b: Builder, x: Any, axis1: Any, axis2: Any) -> Staged:
    x = A.lift(b, x)
    a1, a2 = normalize_axis(axis1, x.ndim), normalize_axis(axis2, x.ndim)
    perm = list(range(x.ndim))
    perm[a1], perm[a2] = perm[a2], perm[a1]
    return transpose(b, x, tuple(perm))


def moveaxis(b: Builder, x: Any, source: Any, destination: Any) -> Staged:
    x = A.lift(b, x)
    src = normalize_axes(source, x.ndim, sort=False)
    dst = normalize_axes(destination, x.ndim, sort=False)
    if len(src) != len(dst):
        raise Reject(CompileError, "`source` and `destination` arguments must have the same "
                     "number of elements")
    order = [n for n in range(x.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(b, x, tuple(order))


def matrix_transpose(b: Builder, x: Any) -> Staged:
    x = A.lift(b, x)
    if x.ndim < 2:
        raise Reject(CompileError, "matrix transpose with ndim < 2 is undefined")
    return swapaxes(b, x, -1, -2)


# ---- adding and removing unit axes ----------------------------------------------------


def expand_dims(b: Builder, x: Any, axis: Any) -> Staged:
    x = A.lift(b, x)
    count = len(axis) if isinstance(axis, (tuple, list)) else 1
    axes = normalize_axes(axis, x.ndim + count)
    rest = iter(x.shape)
    shape = tuple(1 if i in axes else next(rest) for i in range(x.ndim + count))
    return view(A.reshape_value(b, x.value, shape), x)


def squeeze(b: Builder, x: Any, axis: Any = None) -> Staged:
    """np.squeeze. The result's rank must not depend on a symbol's value: without axis=,
    a symbolic dim that may be 1 is refused; with axis=, a symbolic dim is checked to be 1
    when the kernel runs (NumPy's ValueError otherwise)."""
    x = A.lift(b, x)
    message = "cannot select an axis to squeeze out which has size not equal to one"
    if axis is None:
        unsure = [i for i, d in enumerate(x.shape) if not isinstance(d, int) and not dims.nonnegative(dims.add(d, -2))]
        if unsure:
            raise Reject(DynamicShapeError, f"np.squeeze without axis= on an array of shape "
                         f"{A.fmt_shape(x.shape)}: whether axis {unsure[0]} (of symbolic size "
                         f"{x.shape[unsure[0]]}) is removed depends on its size at run time",
                         "pass axis= with the axes to remove (checked to be 1 when the kernel runs), "
                         "or give that dim a concrete size in the signature")
        drop = {i for i, d in enumerate(x.shape) if d == 1}
    else:
        drop = set(normalize_axes(axis, x.ndim))
        if any(isinstance(x.shape[i], int) and x.shape[i] != 1 for i in drop):
            raise Reject(CompileError, message)
    v = x
    for i in sorted(drop):
        if not isinstance(x.shape[i], int):
            ops.check(b, ops.eq(b, ops.size_of(b, x.shape[i], I64), ops.size_of(b, 1, I64)),
                      "ValueError", message)
            v = Staged(static_slice(b, v, i, 0, 1))
    shape = tuple(d for i, d in enumerate(x.shape) if i not in drop)
    return view(A.reshape_value(b, v.value, shape), x)


def atleast_nd(b: Builder, x: Any, n: int) -> Staged:
    x = A.lift(b, x)
    if x.ndim >= n:
        return view(x.value, x)
    if x.ndim == 0:
        shape: tuple[Dim, ...] = (1,) * n
    elif n == 2:
        shape = (1, *x.shape)
    elif x.ndim == 1:
        shape = (1, *x.shape, 1)
    else:
        shape = (*x.shape, 1)
    return view(A.reshape_value(b, x.value, shape), x)


def broadcast_to(b: Builder, x: Any, shape: Any) -> Staged:
    x = A.lift(b, x)
    target = shape_arg(shape)
    ok = len(target) >= x.ndim and all(
        d == 1 or d == t for d, t in zip(x.shape, target[len(target) - x.ndim:]))
    if not ok:
        raise Reject(ShapeMismatchError, "operands could not be broadcast together with remapped "
                     f"shapes [original->remapped]: {A.fmt_shape(x.shape)} and requested shape "
                     f"{A.fmt_shape(target)}")
    return view(A.broadcast_value(b, x.value, target), x, readonly=True)


def broadcast_arrays(b: Builder, *xs: Any) -> tuple[Staged, ...]:
    shape = A.broadcast_shapes(*[A.shape_of(A.normalize_operand(b, x)) for x in xs])
    return tuple(broadcast_to(b, x, shape) for x in xs)


# ---- joining ---------------------------------------------------------------------------


def _lift_all(b: Builder, arrays: Any, dtype: Any = None) -> list[Staged]:
    if isinstance(arrays, Staged):
        arrays = [reshape_index(b, arrays, i) for i in range(_static_len(arrays))]
    items = list(arrays)
    if not items:
        raise Reject(CompileError, "need at least one array to concatenate")
    items = [A.normalize_operand(b, x) for x in items]
    target = A.supported_dtype(dtype) if dtype is not None else A.result_dtype(
        [x if isinstance(x, Staged) else np.asarray(x) for x in items])
    return [A.convert(b, A.lift(b, x), target) if isinstance(x, Staged)
            else A.constant(b, x, target) for x in items]


def _static_len(x: Staged) -> int:
    if x.ndim == 0 or not isinstance(x.shape[0], int):
        raise Reject(UnsupportedError, f"cannot iterate over an array of shape {A.fmt_shape(x.shape)}")
    return x.shape[0]


def reshape_index(b: Builder, x: Staged, i: int) -> Staged:
    """x[i] for a static i along the first axis (used to iterate over arrays)."""
    return getitem(b, x, i)


def concatenate(b: Builder, arrays: Any, axis: Any = 0, dtype: Any = None) -> Staged:
    xs = _lift_all(b, arrays, dtype)
    if axis is None:
        xs = [ravel(b, x) for x in xs]
        axis = 0
    first = xs[0]
    if first.ndim == 0:
        raise Reject(CompileError, "zero-dimensional arrays cannot be concatenated")
    ax = normalize_axis(axis, first.ndim)
    for i, x in enumerate(xs[1:], 1):
        _check_concat(first, x, i, ax)
    if len(xs) == 1:
        return Staged(first.value)
    return Staged(ops.concatenate(b, [x.value for x in xs], dimension=ax))


def _check_concat(first: Staged, x: Staged, i: int, axis: int) -> None:
    if x.ndim != first.ndim:
        raise Reject(ShapeMismatchError, "all the input arrays must have same number of "
                     f"dimensions, but the array at index 0 has {first.ndim} dimension(s) and the "
                     f"array at index {i} has {x.ndim} dimension(s)")
    for d, (p, q) in enumerate(zip(first.shape, x.shape)):
        if d != axis and p != q:
            raise Reject(ShapeMismatchError, "all the input array dimensions except for the "
                         f"concatenation axis must match exactly, but along dimension {d}, the "
                         f"array at index 0 has size {p} and the array at index {i} has size {q}")


def stack(b: Builder, arrays: Any, axis: Any = 0, dtype: Any = None) -> Staged:
    xs = _lift_all(b, arrays, dtype)
    if any(x.shape != xs[0].shape for x in xs):
        raise Reject(ShapeMismatchError, "all input arrays must have the same shape")
    ax = normalize_axis(axis, xs[0].ndim + 1)
    return concatenate(b, [expand_dims(b, x, ax) for x in xs], ax)


def hstack(b: Builder, arrays: Any, dtype: Any = None) -> Staged:
    xs = [atleast_nd(b, x, 1) for x in _lift_all(b, arrays, dtype)]
    return concatenate(b, xs, 0 if xs[0].ndim == 1 else 1)


def vstack(b: Builder, arrays: Any, dtype: Any = None) -> Staged:
    return concatenate(b, [atleast_nd(b, x, 2) for x in _lift_all(b, arrays, dtype)], 0)


def dstack(b: Builder, arrays: Any) -> Staged:
    return concatenate(b, [atleast_nd(b, x, 3) for x in _lift_all(b, arrays)], 2)


def column_stack(b: Builder, arrays: Any) -> Staged:
    xs = _lift_all(b, arrays)
    cols = [reshape(b, x, (x.shape[0], 1)) if x.ndim == 1 else atleast_nd(b, x, 2) for x in xs]
    return concatenate(b, cols, 1)


# ---- reordering and repeating ----------------------------------------------------------


def flip(b: Builder, x: Any, axis: Any = None) -> Staged:
    x = A.lift(b, x)
    axes = normalize_axes(axis, x.ndim)
    if not axes:
        return view(x.value, x)
    return view(ops.rev(b, x.value, dimensions=axes), x)


def tile(b: Builder, x: Any, reps: Any) -> Staged:
    x = A.lift(b, x)
    reps_t = shape_arg(reps)
    n = max(len(reps_t), x.ndim)
    reps_t = (1,) * (n - len(reps_t)) + reps_t
    base = (1,) * (n - x.ndim) + tuple(x.shape)
    v = A.reshape_value(b, x.value, base)
    wide = tuple(d for r, s in zip(reps_t, base) for d in (r, s))
    v = ops.broadcast_in_dim(b, v, shape=wide, broadcast_dimensions=tuple(range(1, 2 * n, 2)))
    return Staged(A.reshape_value(b, v, tuple(dims.mul(r, s) for r, s in zip(reps_t, base))))


def repeat(b: Builder, x: Any, repeats: Any, axis: Any = None) -> Staged:
    x = A.lift(b, x)
    if axis is None or x.ndim == 0:         # NumPy repeats a 0-d array as a 1-d one
        x, axis = ravel(b, x), 0 if axis is None else axis
    ax = normalize_axis(axis, x.ndim)
    if isinstance(repeats, Staged):
        raise Reject(DynamicShapeError, "np.repeat with repeat counts that are array values has a "
                     "data-dependent shape", "pass the repeat counts as Python ints")
    if isinstance(repeats, (list, tuple, np.ndarray)) and np.ndim(repeats) > 0:
        idx = np.repeat(np.arange(_static_dim(x.shape[ax])), np.asarray(repeats))
        return Staged(ops.take(b, x.value, A.constant(b, idx, I64).value, axis=ax))
    r = operator.index(repeats)
    shape = x.shape[:ax + 1] + (r,) + x.shape[ax + 1:]
    bd = tuple(i if i <= ax else i + 1 for i in range(x.ndim))
    v = ops.broadcast_in_dim(b, x.value, shape=shape, broadcast_dimensions=bd)
    out = x.shape[:ax] + (dims.mul(x.shape[ax], r),) + x.shape[ax + 1:]
    return Staged(A.reshape_value(b, v, out))


def _static_dim(d: Dim) -> int:
    if not isinstance(d, int):
        raise Reject(UnsupportedError, f"this operation needs a static size, got {d}",
                     "use a concrete size in the signature")
    return d


def roll(b: Builder, x: Any, shift: Any, axis: Any = None) -> Staged:
    x = A.lift(b, x)
    if axis is None:
        flat = roll(b, ravel(b, x), shift, 0)
        return Staged(A.reshape_value(b, flat.value, x.shape))
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,) * len(shifts)
    out = x
    for s, a in zip(shifts, axes):
        out = _roll1(b, out, operator.index(s), normalize_axis(a, x.ndim))
    return out


def _roll1(b: Builder, x: Staged, shift: int, ax: int) -> Staged:
    n = _static_dim(x.shape[ax])
    if n == 0 or shift % n == 0:
        return Staged(x.value)
    k = shift % n
    head = static_slice(b, x, ax, n - k, n)
    tail = static_slice(b, x, ax, 0, n - k)
    return Staged(ops.concatenate(b, [head, tail], dimension=ax))


#: np.pad modes that copy elements of the array: each is an index map along each axis
_INDEX_MODES = ("edge", "reflect", "symmetric", "wrap")


def pad(b: Builder, x: Any, pad_width: Any, mode: str = "constant", constant_values: Any = 0,
        reflect_type: str = "even") -> Staged:
    x = A.lift(b, x)
    if mode == "empty":              # NumPy leaves the pad uninitialized: zeros are one choice
        mode = "constant"
    if mode not in ("constant",) + _INDEX_MODES:
        raise Reject(UnsupportedError, f"np.pad mode={mode!r} is not supported",
                     "supported modes: 'constant', 'edge', 'reflect', 'symmetric', 'wrap', 'empty'")
    if reflect_type != "even":
        raise Reject(UnsupportedError, "np.pad reflect_type='odd' is not supported",
                     "reflect_type='even' (the default)")
    if _holds_staged(pad_width):
        raise Reject(UnsupportedError, "np.pad widths must be static integers",
                     "the result's shape would depend on run-time values")
    widths = np.broadcast_to(np.asarray(pad_width, dtype=object), (x.ndim, 2))
    for w in widths.flat:
        if isinstance(w, DimExpr):
            raise Reject(UnsupportedError, f"np.pad by the symbolic size {w} is not supported",
                         "pad by a static amount, or np.concatenate with np.zeros of that size")
        if not isinstance(w, (int, np.integer)):
            raise Reject(CompileError, "`pad_width` must be of integral type.")
        if w < 0:
            raise Reject(CompileError, "index can't contain negative values")
    low, high = ([int(w) for w in widths[:, side]] for side in (0, 1))
    if mode in _INDEX_MODES:
        v = x.value
        for ax, (lo, hi) in enumerate(zip(low, high)):
            v = _pad_axis(b, v, ax, lo, hi, mode)
        return Staged(v)
    value = A.convert(b, A.lift(b, constant_values), x.dtype)
    v = A.reshape_value(b, value.value, ())
    return Staged(ops.pad(b, x.value, v, low, high))


def _pad_axis(b: Builder, v: Value, ax: int, lo: int, hi: int, mode: str) -> Value:
    """`v` padded along `ax` in an index mode: the new elements gathered from `v` at the
    positions NumPy's own padding of ``arange(n)`` gives (axis by axis, as NumPy pads)."""
    if lo == hi == 0:
        return v
    n = v.type.shape[ax]
    if not isinstance(n, int):
        raise Reject(UnsupportedError, f"np.pad mode={mode!r} along an axis of symbolic size {n} is not supported",
                     "give that axis a static size in the signature")
    if n == 0:
        raise Reject(CompileError, f"can't extend empty axis {ax} using modes other than 'constant' or 'empty'")
    where = np.pad(np.arange(n), (lo, hi), mode=mode)  # type: ignore[call-overload]  # mode: a str
    pieces = []
    for idx in (where[:lo], None, where[lo + n:]):
        if idx is None:
            pieces.append(v)
        elif len(idx):
            pieces.append(ops.take(b, v, ops.constant(b, idx.astype(np.int64)), ax))
    return ops.concatenate(b, pieces, dimension=ax)


def _holds_staged(value: Any) -> bool:
    if isinstance(value, Staged):
        return True
    return isinstance(value, (tuple, list)) and any(_holds_staged(v) for v in value)


# ---- diagonals and triangles -------------------------------------------------------------


def diagonal(b: Builder, x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Staged:
    x = A.lift(b, x)
    if x.ndim < 2:
        raise Reject(CompileError, "diag requires an array of at least two dimensions")
    a1, a2 = normalize_axis(axis1, x.ndim), normalize_axis(axis2, x.ndim)
    if a1 == a2:
        raise Reject(CompileError, "axis1 and axis2 cannot be the same")
    v = x.value
    if offset > 0:
        v = static_slice(b, Staged(v), a2, offset, dims.maximum(x.shape[a2], offset))
    elif offset < 0:
        v = static_slice(b, Staged(v), a1, -offset, dims.maximum(x.shape[a1], -offset))
    return view(ops.diagonal(b, v, axis1=a1, axis2=a2), x, readonly=True)


def _index_grid(b: Builder, n: Dim, m: Dim) -> tuple[Value, Value]:
    rows = ops.iota(b, dtype=I64, shape=(n, m), dimension=0)
    cols = ops.iota(b, dtype=I64, shape=(n, m), dimension=1)
    return rows, cols


def _band_mask(b: Builder, n: Dim, m: Dim, k: int, cmp: Any) -> Value:
    rows, cols = _index_grid(b, n, m)
    shifted = ops.add(b, rows, A.broadcast_value(b, A.constant(b, k, I64).value, (n, m)))
    return b.emit1(cmp, [cols, shifted])


def eye(b: Builder, N: Any, M: Any = None, k: int = 0, dtype: Any = float) -> Staged:
    n = shape_arg(N, b)[0]
    m = n if M is None else shape_arg(M, b)[0]
    mask = _band_mask(b, n, m, operator.index(k), P.eq)
    return Staged(A.convert_value(b, mask, A.supported_dtype(dtype)))


def tri_mask(b: Builder, x: Any, k: int, lower: bool) -> Staged:
    x = A.lift(b, x)
    if x.ndim < 2:
        raise Reject(UnsupportedError, "tril/triu of a 1-d array is not supported",
                     "reshape it to 2-d first")
    n, m = x.shape[-2:]
    mask = _band_mask(b, n, m, operator.index(k), P.le if lower else P.ge)
    mask = A.broadcast_value(b, mask, x.shape)
    zero = A.broadcast_value(b, A.constant(b, 0, x.dtype).value, x.shape)
    return Staged(ops.select(b, mask, x.value, zero))


def diag(b: Builder, v: Any, k: int = 0) -> Staged:
    v = A.lift(b, v)
    if v.ndim == 2:
        return Staged(diagonal(b, v, k).value)
    if v.ndim != 1:
        raise Reject(CompileError, "Input must be 1- or 2-d.")
    n = dims.add(v.shape[0], abs(k))
    mask = _band_mask(b, n, n, k, P.eq)
    padded = pad(b, v, [(0, abs(k))]) if k else v
    along = (0,) if k >= 0 else (1,)        # out[i, i + k] = v[min(i, i + k)]
    vals = ops.broadcast_in_dim(b, padded.value, shape=(n, n), broadcast_dimensions=along)
    zero = A.broadcast_value(b, A.constant(b, 0, v.dtype).value, (n, n))
    return Staged(ops.select(b, mask, vals, zero))


# ---- creation ---------------------------------------------------------------------------


def full(b: Builder, shape: Any, fill_value: Any, dtype: Any = None) -> Staged:
    target = shape_arg(shape, b)
    if dtype is None:
        dtype = fill_value.dtype if isinstance(fill_value, Staged) else np.asarray(fill_value).dtype
    fill = A.lift(b, A.normalize_operand(b, fill_value), A.supported_dtype(dtype))
    fill = A.convert(b, fill, A.supported_dtype(dtype))
    shape_all = A.broadcast_shapes(fill.shape, target)
    if shape_all != target:
        pairs = [(f, t) for f, t in zip(fill.shape[::-1], target[::-1]) if f != t and f != 1]
        size, wanted = pairs[0] if pairs else (fill.ndim, len(target))
        A._broadcast_error([fill.shape, target], size, wanted)
    return Staged(A.broadcast_value(b, fill.value, target))


def zeros(b: Builder, shape: Any, dtype: Any = float) -> Staged:
    return full(b, shape, 0, dtype)


def ones(b: Builder, shape: Any, dtype: Any = float) -> Staged:
    return full(b, shape, 1, dtype)


def full_like(b: Builder, a: Any, fill_value: Any, dtype: Any = None, shape: Any = None) -> Staged:
    a = A.normalize_operand(b, a)
    dt = dtype if dtype is not None else (a.dtype if isinstance(a, Staged)
                                          else np.asarray(a).dtype)
    return full(b, A.shape_of(a) if shape is None else shape, fill_value, dt)


def zeros_like(b: Builder, a: Any, dtype: Any = None, shape: Any = None) -> Staged:
    return full_like(b, a, 0, dtype, shape)


def ones_like(b: Builder, a: Any, dtype: Any = None, shape: Any = None) -> Staged:
    return full_like(b, a, 1, dtype, shape)


def arange(b: Builder, start: Any, stop: Any = None, step: Any = None, dtype: Any = None) -> Staged:
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    args = (start, stop, step)
    if any(isinstance(a, Staged) for a in args):
        raise Reject(DynamicShapeError, "np.arange with array-valued bounds has a data-dependent "
                     "length", "use Python numbers or x.shape for the bounds")
    if any(isinstance(a, DimExpr) for a in args):
        return _symbolic_arange(b, start, stop, step, dtype)
    return A.constant(b, np.arange(start, stop, step, dtype=dtype))


def _symbolic_arange(b: Builder, start: Any, stop: Any, step: Any, dtype: Any) -> Staged:
    if not (isinstance(step, int) and step > 0 and isinstance(start, (int, DimExpr))):
        raise Reject(UnsupportedError, "np.arange with a symbolic bound needs integer start and "
                     "a positive integer step")
    n = dims.floordiv(dims.add(dims.clamp0(dims.add(stop, dims.mul(start, -1))), step - 1), step)
    out_dtype = A.supported_dtype(dtype or np.int64)
    ramp = Staged(ops.iota(b, dtype=I64, shape=(n,), dimension=0))
    val = binary(b, "add", binary(b, "multiply", ramp, step), start)
    return A.convert(b, val, out_dtype)


def linspace(b: Builder, start: Any, stop: Any, num: Any = 50, endpoint: bool = True,
             retstep: bool = False, dtype: Any = None, axis: int = 0) -> Any:
    if isinstance(num, (Staged, DimExpr)):
        raise Reject(UnsupportedError, "np.linspace needs a static number of points",
                     "pass num as a Python int")
    if not (isinstance(start, Staged) or isinstance(stop, Staged)):
        if retstep:
            values, step = np.linspace(start, stop, num, endpoint=endpoint, retstep=True, dtype=dtype,
                                       axis=axis)
            return A.constant(b, values), step
        return A.constant(b, np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype, axis=axis))
    if retstep or axis != 0:
        raise Reject(UnsupportedError, "np.linspace with array-valued bounds supports axis=0 "
                     "and retstep=False only")
    return _staged_linspace(b, start, stop, int(num), endpoint, dtype)


def _staged_linspace(b: Builder, start: Any, stop: Any, num: int, endpoint: bool,
                     dtype: Any) -> Staged:
    """NumPy's algorithm: start + arange(num) * ((stop - start) / div), last = stop."""
    ft = A.result_dtype([A.normalize_operand(b, start), A.normalize_operand(b, stop), float(num)])
    start_s = A.convert(b, A.lift(b, A.normalize_operand(b, start)), ft)
    stop_s = A.convert(b, A.lift(b, A.normalize_operand(b, stop)), ft)
    delta = binary(b, "subtract", stop_s, start_s)
    div = (num - 1) if endpoint else num
    shape = (num,) + tuple(delta.shape)
    ramp = ops.iota(b, dtype=ft, shape=shape, dimension=0)
    step = binary(b, "true_divide", delta, div) if div > 0 else delta
    y = binary(b, "add", binary(b, "multiply", Staged(ramp), step), start_s)
    if endpoint and num > 1:
        y = Staged(setitem(b, y, -1, stop_s))
    return A.convert(b, y, A.supported_dtype(dtype) if dtype is not None else ft)


def array(b: Builder, obj: Any, dtype: Any = None, copy: bool = True, ndmin: int = 0) -> Staged:
    """np.array / np.asarray: staged values are copied (or returned, for asarray) as is."""
    target = None if dtype is None else A.supported_dtype(dtype)
    if isinstance(obj, Staged):
        out = obj if target is None else A.convert(b, obj, target)
        if copy and out is obj:
            out = Staged(obj.value)
    elif isinstance(obj, (list, tuple)) and A._has_staged(obj):
        out = A.stack_nested(b, obj, target)
    else:
        with np.errstate(all="ignore"):
            out = A.constant(b, np.array(obj, dtype=target))
    while out.ndim < ndmin:
        out = Staged(A.reshape_value(b, out.value, (1,) + tuple(out.shape)))
    return out


def copy(b: Builder, x: Any) -> Staged:
    x = A.lift(b, x)
    return Staged(x.value, origin=LOCAL)



# ---- more axis permutations and splits ---------------------------------------------------


def rollaxis(b: Builder, x: Any, axis: Any, start: Any = 0) -> Staged:
    """np.rollaxis: `axis` moved to before position `start` (NumPy's own algorithm)."""
    x = A.lift(b, x)
    n = x.ndim
    ax = normalize_axis(axis, n)
    st = operator.index(start)
    if st < 0:
        st += n
    if not 0 <= st < n + 1:
        raise Reject(CompileError, f"'start' arg requires {-n} <= start < {n + 1}, but {start} "
                     "was passed in")
    if ax < st:
        st -= 1
    axes = [i for i in range(n) if i != ax]
    axes.insert(st, ax)
    return transpose(b, x, tuple(axes))


def rot90(b: Builder, m: Any, k: Any = 1, axes: Any = (0, 1)) -> Staged:
    """np.rot90: k quarter turns in the plane of `axes`, from the first towards the second."""
    x = A.lift(b, m)
    axes = tuple(axes)
    if len(axes) != 2:
        raise Reject(CompileError, "len(axes) must be 2.")
    a0, a1 = (operator.index(a) for a in axes)
    if a0 == a1 or abs(a0 - a1) == x.ndim:
        raise Reject(CompileError, "Axes must be different.")
    if not (-x.ndim <= a0 < x.ndim and -x.ndim <= a1 < x.ndim):
        raise Reject(CompileError, f"Axes={axes} out of range for array of ndim={x.ndim}.")
    turns = operator.index(k) % 4
    if turns == 0:
        return view(x.value, x)
    if turns == 2:
        return flip(b, flip(b, x, a0), a1)
    perm = list(range(x.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if turns == 1:
        return transpose(b, flip(b, x, a1), tuple(perm))
    return flip(b, transpose(b, x, tuple(perm)), a1)


def split_bounds(n: int, indices_or_sections: Any, equal: bool) -> list[int]:
    """The boundaries of np.split (`equal`) / np.array_split along an axis of size n."""
    if isinstance(indices_or_sections, (int, np.integer)) and not isinstance(indices_or_sections, bool):
        k = int(indices_or_sections)
        if k <= 0:
            raise Reject(CompileError, "number sections must be larger than 0.")
        if equal and n % k:
            raise Reject(CompileError, "array split does not result in an equal division")
        each, extra = divmod(n, k)
        sizes = [0] + [each + 1] * extra + [each] * (k - extra)
        return [int(s) for s in np.cumsum(sizes)]
    if isinstance(indices_or_sections, Staged) or any(
            isinstance(i, (Staged, DimExpr)) for i in indices_or_sections):
        raise Reject(UnsupportedError, "split points must be static integers",
                     "the pieces' shapes would depend on run-time values")
    return [0] + [int(i) for i in indices_or_sections] + [n]


def split(b: Builder, ary: Any, indices_or_sections: Any, axis: int = 0,
          equal: bool = True) -> list[Staged]:
    """np.split / np.array_split: views of consecutive pieces (indices clamp as in NumPy)."""
    x = A.lift(b, ary)
    ax = normalize_axis(axis, x.ndim)
    n = _static_dim(x.shape[ax])
    bounds = split_bounds(n, indices_or_sections, equal)
    out = []
    for lo, hi in zip(bounds, bounds[1:]):
        lo_c = min(max(lo if lo >= 0 else lo + n, 0), n)
        hi_c = min(max(hi if hi >= 0 else hi + n, 0), n)
        out.append(view(static_slice(b, x, ax, lo_c, max(lo_c, hi_c)), x))
    return out


def split_along(which: str) -> Any:
    """np.hsplit / np.vsplit / np.dsplit."""
    def handler(b: Builder, ary: Any, indices_or_sections: Any) -> list[Staged]:
        x = A.lift(b, ary)
        least = {"hsplit": 1, "vsplit": 2, "dsplit": 3}[which]
        if x.ndim < least:
            raise Reject(CompileError, f"{which} only works on arrays of {least} or more "
                         "dimensions")
        axis = {"hsplit": 1 if x.ndim > 1 else 0, "vsplit": 0, "dsplit": 2}[which]
        return split(b, x, indices_or_sections, axis)
    return handler


# ---- windows and powers built from slices ------------------------------------------------

#: at most this many elements in one window of sliding_window_view (one slice each)
MAX_WINDOW_ELEMENTS = 256


def sliding_window_view(b: Builder, x: Any, window_shape: Any, axis: Any = None,
                        subok: bool = False, writeable: bool = False) -> Staged:
    """``numpy.lib.stride_tricks.sliding_window_view``: NumPy's view as a stack of the
    window's shifted slices (fused into what reads it: ``.mean(axis=-1)`` of the windows is
    one loop, no window is stored)."""
    x = A.lift(b, x)
    if writeable:
        raise Reject(UnsupportedError, "sliding_window_view(writeable=True) is not supported",
                     "compiled code does not write through views of an argument's windows")
    shape = tuple(window_shape) if isinstance(window_shape, (tuple, list)) else (window_shape,)
    if axis is None:
        axes = tuple(range(x.ndim - len(shape), x.ndim)) if len(shape) <= x.ndim else ()
        if len(shape) != x.ndim:
            raise Reject(CompileError, f"Since axis is `None`, must provide window_shape for all "
                                       f"dimensions of `x`; got {len(shape)} window_shape elements "
                                       f"and `x.ndim` is {x.ndim}.")
    else:
        axes = tuple(normalize_axis(a, x.ndim) for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
        if len(axes) != len(shape):
            raise Reject(CompileError, "Must provide matching length window_shape and axis; "
                                       f"got {len(shape)} window_shape elements and {len(axes)} axes elements.")
    if any(not isinstance(w, (int, np.integer)) or isinstance(w, bool) for w in shape):
        raise Reject(UnsupportedError, "sliding_window_view needs static window sizes",
                     "the result's shape would depend on run-time values")
    if any(w < 0 for w in shape):
        raise Reject(CompileError, "`window_shape` cannot contain negative values")
    if any(w == 0 for w in shape):
        raise Reject(UnsupportedError, "sliding_window_view with an empty window is not supported",
                     "every window has no elements: build the empty result with np.zeros")
    if int(np.prod(shape)) > MAX_WINDOW_ELEMENTS:
        raise Reject(UnsupportedError, f"sliding_window_view with windows of more than "
                                       f"{MAX_WINDOW_ELEMENTS} elements is not supported",
                     "for a moving sum or mean, take differences of np.cumsum")
    v = x
    for ax, w in zip(axes, shape):
        n = v.shape[ax]
        if isinstance(n, int) and n < w:
            raise Reject(CompileError, "window shape cannot be larger than input array shape")
        count = dims.add(n, 1 - int(w))
        pieces = [expand_dims(b, Staged(static_slice(b, v, ax, j, dims.add(count, j))), v.ndim)
                  for j in range(int(w))]
        v = concatenate(b, pieces, v.ndim)
    return v


def vander(b: Builder, x: Any, N: Any = None, increasing: bool = False) -> Staged:
    """np.vander: the powers of `x` by repeated products, as NumPy computes them."""
    x = A.lift(b, x)
    if x.ndim != 1:
        raise Reject(CompileError, "x must be a one-dimensional array or sequence.")
    n = x.shape[0] if N is None else N
    if not isinstance(n, (int, np.integer)):
        raise Reject(UnsupportedError, f"np.vander with {n} columns: the number of columns must be static",
                     "pass N= as a Python int")
    x = A.convert(b, x, np.promote_types(x.dtype, np.int64))     # NumPy's result type
    cols: list[Staged] = []
    power = None
    for k in range(int(n)):
        if k == 0:
            power = A.convert(b, Staged(ops.full(b, 1, x.value.type)), x.dtype)
        elif k == 1:
            power = x
        else:
            power = binary(b, "multiply", power, x)
        cols.append(power)
    if not increasing:
        cols.reverse()
    if not cols:
        return Staged(ops.full(b, 0, x.value.type.with_shape((x.shape[0], 0))))
    return stack(b, cols, 1)
