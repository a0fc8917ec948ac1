"""Searching sorted values: np.searchsorted's branch-free binary search and the ``interp``
primitive of np.interp (docs/sorting.md, "searchsorted and interp").

    %y = interp(%x, %xp, %fp, %left, %right) : f64[...]

is np.interp(x, xp, fp, left, right) for real float64 operands (x of any shape, xp and fp
1-D of one length n >= 2, left and right 0-d): the frontend converts, splits complex fp
into its parts, handles period= and n = 1.

Code (the decomposition): the slope of every interval once (NumPy's own formula), then a
``chunked`` op over windows of WINDOW queries. A window finds the positions of its smallest
and largest query (one binary search of two needles), then

* narrow: every query lies in two intervals at most (sorted or clustered queries, more
  queries than samples): one compare with the sample between them picks each query's
  interval, whose ends and slope are scalars: no gather, no loop;
* counted: the queries lie among COUNTED samples at most: a query's position is the number
  of those samples at or below it, a broadcast and a compare per sample (UNROLL at a time),
  no gather; then three gathers (left point, value, slope);
* searched otherwise (random queries): a binary search between the two positions, then the
  same gathers.

A value that comes out NaN (NaN or infinite samples, a NaN query) sends its window to
NumPy's full formula (from the right point where the left one gives NaN). The positions stay
in the L1 cache: they never go through memory. Two things keep the loops fast: a loop-carried
array is updated as one window of itself (``dynamic_update_slice`` at 0), which the backend
updates in place instead of copying it back every step (backend/carries.py), and the binary
search's select is ``unpredictable`` (LLVM's x86 cmov conversion made it a branch, which the
data mispredicts half the time: 7.3 -> 4.5 ns per query).

Rules in terms of the index the search finds: vmap over the queries alone is the same op on
the batched x; other vmaps, jvp and vjp transform ``reference`` (the positions as one search,
an integer without derivative, then gathers and arithmetic) with the transform drivers, so
the derivatives are those of the interval's line in x, xp, fp, left and right, and the
windowed code never needs a reverse mode.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from compiler.ir import dims
from compiler.ir.builder import Builder, new_block
from compiler.ir.core import Block, Op, Value
from compiler.ir.dims import Dim
from compiler.ir.primitive import define
from compiler.ir.types import F64, I64, TensorType, is_float
from compiler.primitives import ad, ops
from compiler.primitives.base import check
from compiler.primitives.batching import inline_block, rule_by_decomposition
from compiler.primitives.control import chunk_counts
from compiler.primitives.loops import trip_count
from compiler.primitives.regions import drivers

Types = tuple[TensorType, ...]

#: needles per window of np.searchsorted (a ``chunked`` op): the window's positions stay in
#: the L1 cache across the log2(n) steps instead of streaming through memory once per step
SEARCH_CHUNK = 256

#: queries per window of np.interp
WINDOW = 256
#: a window whose queries lie among at most COUNTED samples counts them, UNROLL at a time
COUNTED, UNROLL = 64, 8
#: fewer queries than this (a static count) take the plain search and gathers: the windows'
#: three paths cost 1-2 s of compile time per call site and pay off on long query arrays only
SMALL = 2048


# ---- the search -------------------------------------------------------------------------

def before(b: Builder, x: Value, y: Value) -> Value:
    """x < y in NumPy's sort order (NaN last)."""
    lt = ops.lt(b, x, y)
    if not is_float(x.type.dtype):
        return lt
    return ops.or_(b, lt, ops.and_(b, ops.isnan(b, y), ops.not_(b, ops.isnan(b, x))))


def _spread(b: Builder, x: Value, shape: Any) -> Value:
    return ops.broadcast_in_dim(b, x, tuple(shape), ())


def _right_of(b: Builder, at: Value, wv: Value, side: str, nan_last: bool) -> Value:
    """Whether the needle `wv` goes right of the hay value `at`."""
    lt = before if nan_last else (lambda b, x, y: ops.lt(b, x, y))
    return lt(b, at, wv) if side == "left" else ops.not_(b, lt(b, wv, at))


def search(b: Builder, h: Value, nv: Value, w: Value, side: str, n: Dim, nan_last: bool,
           within: tuple[Value, Value] | None = None) -> Value:
    """Positions of the needles `w` (1-D) in the sorted 1-D `h` of length `n` (value `nv`,
    n >= 1 when static), all known to lie in [lo, hi] when `within` = (lo, hi) is given:
    base += half while the length `len` (the same for every needle) is above 1, then one
    compare (Khuong and Morin's branch-free lower bound). nan_last=False compares with
    plain < (np.interp's search): a NaN needle then lands at the end."""
    it = TensorType(I64, tuple(w.type.shape))
    one = ops.scalar(b, 1, I64)

    def log2_steps(length: Value, extra: int) -> Value:
        """floor(log2 max(length, 1)) + extra (log2 is exact at powers of two)."""
        lf = ops.convert(b, ops.maximum(b, length, one), F64)
        return ops.add(b, ops.convert(b, ops.floor(b, ops.log2(b, lf)), I64), ops.scalar(b, extra, I64))

    body = Block()
    i = Value(TensorType(I64, ()), None, 0, "k")
    base = Value(it, None, 1, "base")
    ln = Value(TensorType(I64, ()), None, 2, "len")
    hv, wv = Value(h.type, None, 3, "a"), Value(w.type, None, 4, "v")
    body.args.extend([i, base, ln, hv, wv])
    with b.inside(body):
        half = ops.floordiv(b, ln, ops.scalar(b, 2, I64))
        # base updated as one window of itself, which the loop updates in place
        # (backend/carries.py) instead of computing a new array and copying it back
        origin = ops.scalar(b, 0, I64)
        cur = ops.dynamic_slice(b, base, [origin], tuple(it.shape))
        probe = ops.add(b, cur, _spread(b, half, it.shape))
        # unpredictable: LLVM's cmov conversion would make this a branch, which the data
        # mispredicts half the time
        moved = ops.select(b, _right_of(b, ops.take(b, hv, probe, 0), wv, side, nan_last), probe, cur,
                           unpredictable=True)
        body.results = [ops.dynamic_update_slice(b, base, moved, [origin]), ops.sub(b, ln, half), hv, wv]
    # once len is 1 a step changes nothing, so a bound above ceil(log2 len) is enough
    trip: Dim | None = None
    if within is not None:
        lo, hi = within
        base0, len0 = _spread(b, lo, it.shape), ops.sub(b, hi, lo)
        stop = log2_steps(len0, 1)
    elif isinstance(n, int):
        steps = (n - 1).bit_length()                 # ceil(log2 n)
        base0, len0 = ops.full(b, 0, it), nv
        stop, trip = ops.scalar(b, steps, I64), trip_count(0, steps, 1)
    else:
        base0, len0 = ops.full(b, 0, it), nv
        stop = log2_steps(nv, 2)
    base, _, _, _ = ops.for_loop(b, ops.scalar(b, 0, I64), stop, [base0, len0, h, w], body, 1, trip)
    read = base
    if within is not None or not isinstance(n, int):   # len 0, or an empty hay: stay in bounds
        read = ops.minimum(b, base, _spread(b, _last_index(b, nv), it.shape))
    pos = ops.add(b, base, ops.convert(b, _right_of(b, ops.take(b, h, read, 0), w, side, nan_last), I64))
    if within is not None:
        pos = ops.minimum(b, pos, _spread(b, within[1], it.shape))
    elif not isinstance(n, int):
        pos = ops.minimum(b, pos, _spread(b, nv, it.shape))
    return pos


def _last_index(b: Builder, nv: Value) -> Value:
    """max(n - 1, 0)."""
    return ops.maximum(b, ops.sub(b, nv, ops.scalar(b, 1, I64)), ops.scalar(b, 0, I64))


def _bounds(b: Builder, h: Value, nv: Value, w: Value, side: str, n: Dim,
            nan_last: bool) -> tuple[Value, Value]:
    """The positions of the smallest and the largest needle of the window `w` (0 and n when
    a needle is NaN): every needle's position lies between them."""
    ends = ops.concatenate(b, [ops.reshape(b, ops.reduce_min(b, w, (0,)), (1,)),
                               ops.reshape(b, ops.reduce_max(b, w, (0,)), (1,))], 0)
    bounds = search(b, h, nv, ends, side, n, nan_last)
    lo = ops.reshape(b, ops.slice_(b, bounds, (0,), (1,)), ())
    hi = ops.reshape(b, ops.slice_(b, bounds, (1,), (2,)), ())
    if is_float(w.type.dtype):
        nan = ops.reduce(ops.reduce_or_p, b, ops.isnan(b, w), (0,))
        lo = ops.select(b, nan, ops.scalar(b, 0, I64), lo)
        hi = ops.select(b, nan, nv, hi)
    return lo, hi


def _window_search(b: Builder, h: Value, nv: Value, w: Value, side: str, n: Dim,
                   nan_last: bool) -> Value:
    """search of one window of needles, restricted to the positions between those of the
    window's smallest and largest needle (the whole hay when a needle is NaN): sorted or
    clustered needles then take a few steps instead of log2(n), others as many as before."""
    return search(b, h, nv, w, side, n, nan_last, _bounds(b, h, nv, w, side, n, nan_last))


def _windows(b: Builder, operands: list[Value], flat: Value, chunk: int,
             fill: Any, fill_tail: Any = None) -> Value:
    """A ``chunked`` op over windows of `chunk` elements of the 1-D `flat` (its last
    operand), the others whole; `fill(b, *region_args)` builds a window's result
    (`fill_tail` the last, shorter window's, when given)."""
    size = flat.type.shape[0]
    _, tail = chunk_counts(size, chunk)
    regions = []
    for count, make in ((chunk, fill), (tail, fill_tail or fill)):
        block = new_block([v.type for v in operands] + [flat.type.with_shape((count,))])
        with b.inside(block):
            block.results = [make(b, *block.args)]
        regions.append(block)
    (res,) = b.emit(ops.chunked_p, [*operands, flat],
                    {"size": size, "chunk": chunk, "batched": (False,) * len(operands) + (True,)},
                    regions)
    return res


def positions(b: Builder, h: Value, w: Value, side: str, nan_last: bool) -> Value:
    """np.searchsorted(h, w, side) of the needles `w` (any shape) in the sorted 1-D `h` of the
    same dtype: a branch-free binary search of every needle, over windows of SEARCH_CHUNK
    needles that each search only between their smallest and largest needle's positions."""
    n = h.type.shape[0]
    shape = tuple(w.type.shape)
    if isinstance(n, int) and n == 0:
        return ops.full(b, 0, TensorType(I64, shape))
    nv = _length(b, h)
    flat = ops.reshape(b, w, (dims.product(shape),))
    if isinstance(flat.type.shape[0], int) and flat.type.shape[0] <= SEARCH_CHUNK:
        return ops.reshape(b, search(b, h, nv, flat, side, n, nan_last), shape)
    pos = _windows(b, [h, nv], flat, SEARCH_CHUNK,
                   lambda b, hb, nb, wb: _window_search(b, hb, nb, wb, side, n, nan_last))
    return ops.reshape(b, pos, shape)


def _length(b: Builder, h: Value) -> Value:
    n = h.type.shape[0]
    return ops.scalar(b, n, I64) if isinstance(n, int) else ops.size_of(b, n, I64)


# ---- interp -------------------------------------------------------------------------------

def _at(b: Builder, a: Value, i: Value) -> Value:
    """a[i] of a 1-D a and a 0-d or 1-D index (in range)."""
    return ops.take(b, a, i, 0)


def _formula(b: Builder, x: Value, x0: Value, x1: Value, y0: Value, y1: Value, slope: Value,
             ends: list[Value]) -> Value:
    """np.interp's value at x in the interval (x0, y0)-(x1, y1) (all of x's shape; `ends` 0-d:
    xp[0], xp[-1], fp[-1], left, right), as NumPy computes it: y0 at x = x0 (a query exactly
    at a knot, whatever the slope: a repeated knot or an infinite value makes it infinite);
    else from the left point, from the right one where that gives NaN, y0 where that too is
    NaN and y0 == y1."""
    shape = tuple(x.type.shape)
    xl, xr, last, lo, hi = (_spread(b, e, shape) for e in ends)
    val = ops.add(b, ops.mul(b, slope, ops.sub(b, x, x0)), y0)
    other = ops.add(b, ops.mul(b, slope, ops.sub(b, x, x1)), y1)
    other = ops.select(b, ops.and_(b, ops.isnan(b, other), ops.eq(b, y0, y1)), y0, other)
    val = ops.select(b, ops.isnan(b, val), other, val)
    val = ops.select(b, ops.eq(b, x, x0), y0, val)
    val = ops.select(b, ops.eq(b, x, xr), last, val)
    val = ops.select(b, ops.lt(b, x, xl), lo, val)
    val = ops.select(b, ops.gt(b, x, xr), hi, val)
    return ops.select(b, ops.isnan(b, x), ops.full_like(b, np.nan, x), val)


def _interval(b: Builder, pos: Value, nv: Value) -> tuple[Value, Value]:
    """(j, j + 1): the interval of a query at position `pos` (searchsorted 'right'), clamped
    to the first and the last interval."""
    like = pos
    top = ops.maximum(b, ops.sub(b, nv, ops.scalar(b, 2, I64)), ops.scalar(b, 0, I64))
    shape = tuple(like.type.shape)
    j = ops.minimum(b, ops.maximum(b, ops.sub(b, pos, _spread(b, ops.scalar(b, 1, I64), shape)),
                                   ops.full_like(b, 0, like)), _spread(b, top, shape))
    j1 = ops.minimum(b, ops.add(b, j, ops.full_like(b, 1, like)), _spread(b, _last_index(b, nv), shape))
    return j, j1


def _ends(b: Builder, xp: Value, fp: Value, nv: Value, left: Value, right: Value) -> list[Value]:
    zero, last = ops.scalar(b, 0, I64), _last_index(b, nv)
    return [_at(b, xp, zero), _at(b, xp, last), _at(b, fp, last), left, right]


def _gathered(b: Builder, x: Value, xp: Value, fp: Value, pos: Value, nv: Value,
              ends: list[Value]) -> Value:
    """The values at x of queries at positions `pos`, their intervals gathered."""
    j, j1 = _interval(b, pos, nv)
    x0, x1, y0, y1 = _at(b, xp, j), _at(b, xp, j1), _at(b, fp, j), _at(b, fp, j1)
    slope = ops.div(b, ops.sub(b, y1, y0), ops.sub(b, x1, x0))
    return _formula(b, x, x0, x1, y0, y1, slope, ends)


def reference(b: Builder, x: Value, xp: Value, fp: Value, left: Value, right: Value) -> Value:
    """np.interp as a composition: the positions (one search of every query), then the
    gathered intervals. The transforms differentiate and batch this."""
    nv = _length(b, xp)
    pos = positions(b, xp, x, "right", False)
    return _gathered(b, x, xp, fp, pos, nv, _ends(b, xp, fp, nv, left, right))


def _branch(b: Builder, pred: Value, operands: list[Value], on_true: Any, on_false: Any) -> Value:
    """cond(pred, on_true(b, *operands), on_false(b, *operands)) of one result."""
    regions = []
    for fill in (on_true, on_false):
        block = new_block([v.type for v in operands])
        with b.inside(block):
            block.results = [fill(b, *block.args)]
        regions.append(block)
    (y,) = b.emit(ops.cond_p, [pred, *operands], {}, regions)
    return y


# A window's operands, in this order: xp, fp, sl (the slope of interval min(i, n - 2) at i), n,
# ends (xp[0], xp[-1], fp[-1], left, right), then the window's own values.
_SAMPLES = 4            # xp, fp, sl, n
_ENDS = 5


def _window(b: Builder, *args: Value) -> Value:
    """One window of queries `w`: without gathers when they lie in two intervals at most;
    counted against the samples between when those are few (COUNTED at most); searched
    otherwise."""
    xp, _, _, nv = args[:_SAMPLES]
    w = args[-1]
    lo, hi = _bounds(b, xp, nv, w, "right", xp.type.shape[0], False)
    span = ops.sub(b, hi, lo)
    narrow = ops.le(b, span, ops.scalar(b, 1, I64))
    few = ops.le(b, span, ops.scalar(b, COUNTED, I64))

    def rest(b: Builder, *args: Value) -> Value:
        return _branch(b, args[-1], list(args[:-1]), _counted_window, _searched_window)

    return _branch(b, narrow, [*args[:-1], lo, hi, w, few],
                   lambda b, *args: _narrow_window(b, *args[:-1]), rest)


def _narrow_window(b: Builder, *args: Value) -> Value:
    """Queries at positions lo or lo + 1 (hi <= lo + 1): one compare with xp[lo] decides,
    and the two intervals' ends and slopes are scalars, broadcast."""
    xp, fp, sl, nv = args[:_SAMPLES]
    ends = list(args[_SAMPLES:_SAMPLES + _ENDS])
    lo, hi, w = args[-3:]
    shape = tuple(w.type.shape)
    at = _at(b, xp, ops.minimum(b, lo, _last_index(b, nv)))
    up = ops.and_(b, ops.not_(b, ops.lt(b, w, _spread(b, at, shape))), _spread(b, ops.gt(b, hi, lo), shape))
    picked = []
    for pos in (lo, ops.add(b, lo, ops.scalar(b, 1, I64))):
        j, j1 = _interval(b, pos, nv)
        picked.append((_at(b, xp, j), _at(b, xp, j1), _at(b, fp, j), _at(b, fp, j1), _at(b, sl, j)))
    x0, x1, y0, y1, slope = (ops.select(b, up, _spread(b, u, shape), _spread(b, d, shape))
                             for d, u in zip(*picked))
    return _formula(b, w, x0, x1, y0, y1, slope, ends)


def _count(b: Builder, xp: Value, nv: Value, w: Value, lo: Value, hi: Value) -> Value:
    """The positions of the queries `w` (1-D), all at positions lo .. hi: lo plus the number
    of samples xp[lo:hi] at or below the query, counted UNROLL samples at a time (a sample is
    one scalar broadcast and one compare per query: no gather)."""
    count = w.type.shape[0]
    it = TensorType(I64, (count,))
    body = new_block([TensorType(I64, ()), it, xp.type, nv.type, lo.type, hi.type, w.type])
    k, whole, xpb, nb, lob, hib, wb = body.args
    with b.inside(body):
        first = ops.add(b, lob, ops.mul(b, k, ops.scalar(b, UNROLL, I64)))
        top, inf = _last_index(b, nb), ops.scalar(b, np.inf, F64)
        # the count updated as one window of itself, which the loop then updates in place
        # (backend/carries.py) instead of computing a new array and copying it back
        origin = ops.scalar(b, 0, I64)
        acc = ops.dynamic_slice(b, whole, [origin], (count,))
        for u in range(UNROLL):
            at = ops.add(b, first, ops.scalar(b, u, I64))
            # a sample past hi counts as +inf: it moves no query but an infinite one, which the
            # clamp below puts back
            v = ops.select(b, ops.lt(b, at, hib), _at(b, xpb, ops.minimum(b, at, top)), inf)
            acc = ops.add(b, acc, ops.convert(b, ops.not_(b, ops.lt(b, wb, _spread(b, v, (count,)))), I64))
        body.results = [ops.dynamic_update_slice(b, whole, acc, [origin]), xpb, nb, lob, hib, wb]
    span = ops.sub(b, hi, lo)
    blocks = ops.floordiv(b, ops.add(b, span, ops.scalar(b, UNROLL - 1, I64)), ops.scalar(b, UNROLL, I64))
    pos, *_ = ops.for_loop(b, ops.scalar(b, 0, I64), blocks, [_spread(b, lo, it.shape), xp, nv, lo, hi, w], body)
    return ops.minimum(b, pos, _spread(b, hi, it.shape))


def _counted_window(b: Builder, *args: Value) -> Value:
    """Queries at positions lo .. hi, hi - lo small: counted, then looked up."""
    xp, _, _, nv = args[:_SAMPLES]
    lo, hi, w = args[-3:]
    return _looked_up(b, _count(b, xp, nv, w, lo, hi), *args)


def _searched_window(b: Builder, *args: Value) -> Value:
    """Queries searched between positions lo and hi, then looked up (each window's copy of
    the look-up keeps its positions in the window's loop: 10% faster than one copy after
    the branch)."""
    return _looked_up(b, _searched(b, *args), *args)


def _searched(b: Builder, *args: Value) -> Value:
    """The positions of queries at positions lo .. hi, searched between them."""
    xp, _, _, nv = args[:_SAMPLES]
    lo, hi, w = args[-3:]
    return search(b, xp, nv, w, "right", xp.type.shape[0], False, (lo, hi))


def _looked_up(b: Builder, pos: Value, *args: Value) -> Value:
    """The values of a window's queries at positions `pos`: three gathers (the left point and
    the slope of each query's interval)."""
    xp, fp, sl, nv = args[:_SAMPLES]
    j, _ = _interval(b, pos, nv)
    x0, y0, slope = _at(b, xp, j), _at(b, fp, j), _at(b, sl, j)
    return _finished(b, pos, ops.add(b, ops.mul(b, slope, ops.sub(b, args[-1], x0)), y0), *args)


def _finished(b: Builder, pos: Value, val: Value, *args: Value) -> Value:
    """The window's values from `val`, the line from each query's left point, unless one comes
    out NaN (NaN or infinite samples, a NaN query): then the whole window as NumPy computes
    it, from both points of the intervals at positions `pos`."""
    xp, fp, _, nv = args[:_SAMPLES]
    ends = list(args[_SAMPLES:_SAMPLES + _ENDS])
    w = args[-1]
    nan = ops.reduce(ops.reduce_or_p, b, ops.isnan(b, val), (0,))

    def full(b: Builder, xp: Value, fp: Value, nv: Value, pos: Value, w: Value, val: Value,
             *ends: Value) -> Value:
        return _gathered(b, w, xp, fp, pos, nv, list(ends))

    def plain(b: Builder, xp: Value, fp: Value, nv: Value, pos: Value, w: Value, val: Value,
              *ends: Value) -> Value:
        return _ends_applied(b, w, val, list(ends))

    return _branch(b, nan, [xp, fp, nv, pos, w, val, *ends], full, plain)


def _ends_applied(b: Builder, x: Value, val: Value, ends: list[Value]) -> Value:
    """np.interp's values at the ends and beyond, and NaN at a NaN x, over `val`."""
    shape = tuple(x.type.shape)
    xl, xr, last, lo, hi = (_spread(b, e, shape) for e in ends)
    val = ops.select(b, ops.eq(b, x, xr), last, val)
    val = ops.select(b, ops.lt(b, x, xl), lo, val)
    val = ops.select(b, ops.gt(b, x, xr), hi, val)
    return ops.select(b, ops.isnan(b, x), ops.full_like(b, np.nan, x), val)


def _tail(b: Builder, *args: Value) -> Value:
    """The last window (fewer than WINDOW queries): searched, with less code."""
    xp, fp, _, nv = args[:_SAMPLES]
    w = args[-1]
    pos = search(b, xp, nv, w, "right", xp.type.shape[0], False)
    return _gathered(b, w, xp, fp, pos, nv, list(args[_SAMPLES:_SAMPLES + _ENDS]))


def _slopes(b: Builder, xp: Value, fp: Value, nv: Value) -> Value:
    """The slope of interval min(i, n - 2) at every i < n, as NumPy computes it."""
    shape = tuple(xp.type.shape)
    j, j1 = _interval(b, ops.add(b, ops.iota(b, I64, shape, 0), ops.full(b, 1, TensorType(I64, shape))), nv)
    return ops.div(b, ops.sub(b, _at(b, fp, j1), _at(b, fp, j)), ops.sub(b, _at(b, xp, j1), _at(b, xp, j)))


def _decompose(b: Builder, op: Op, args: list[Value]) -> list[Value]:
    x, xp, fp, left, right = args
    shape = tuple(x.type.shape)
    size = dims.product(shape)
    if isinstance(size, int) and size < SMALL:
        return [reference(b, *args)]
    nv = _length(b, xp)
    flat = ops.reshape(b, x, (dims.product(shape),))
    samples = [xp, fp, _slopes(b, xp, fp, nv), nv]
    y = _windows(b, samples + _ends(b, xp, fp, nv, left, right), flat, WINDOW, _window, _tail)
    return [ops.reshape(b, y, shape)]


# ---- rules --------------------------------------------------------------------------------

def _rule(in_types: Types, params: dict[str, Any]) -> Types:
    x, xp, fp, left, right = in_types
    check(all(t.dtype == F64 for t in in_types), f"interp: float64 operands, got {in_types}")
    check(xp.ndim == 1 and fp.ndim == 1 and xp.shape == fp.shape,
          f"interp: xp and fp must be 1-D of one length, got {xp} and {fp}")
    check(left.ndim == 0 and right.ndim == 0, f"interp: left and right must be 0-d, got {left}, {right}")
    return (x,)


def _ref(x: np.ndarray, xp: np.ndarray, fp: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    return np.asarray(np.interp(x, xp, fp, left=float(left), right=float(right)), dtype=np.float64)


def _reference_block(op: Op) -> Block:
    inner = new_block([v.type for v in op.operands])
    inner.results = [reference(Builder(inner, op.loc), *inner.args)]
    return inner


def _vmap(b: Builder, op: Op, args: list[Value], bdims: list[int | None], size: Any) -> tuple:
    """Batched queries alone: the same op (it is elementwise in x); otherwise the composition."""
    if all(d is None for d in bdims[1:]):
        return [ops.interp(b, *args)], [bdims[0]]
    return rule_by_decomposition(lambda b, op, a: [reference(b, *a)])(b, op, args, bdims, size)


def _jvp(b: Builder, op: Op, primals: list[Value], tangents: list[Value | None]) -> list[Value | None]:
    block, _ = drivers().jvp_block(_reference_block(op), [t is not None for t in tangents])
    outs = inline_block(b, block, [*primals, *[t for t in tangents if t is not None]])
    return [outs[1]]


def _vjp(b: Builder, op: Op, primals: list[Value], outs: list[Value],
         cts: list[Value | None]) -> list[Value | None]:
    active = [ad.differentiable(p) for p in primals]
    block = drivers().vjp_block(_reference_block(op), active, with_primals=False)
    res = iter(inline_block(b, block, [*primals, ad.instantiate(b, cts[0], outs[0])]))
    return [next(res) if on else None for on in active]


interp = define(
    ops.interp_p,
    shape_rule=_rule,
    numpy_ref=_ref,
    decomposition=_decompose,
    vmap_rule=_vmap,
    jvp_rule=_jvp,
    vjp_rule=_vjp,
    doc="np.interp(x, xp, fp, left, right) of float64 values: windows of queries, each searched "
        "between its smallest and largest query's positions",
)

