"""Sorting: the ``sort`` primitive (docs/sorting.md).

``sort(x0, ..., xk) {num_keys, stable}`` permutes the rows (the last axis) of operands of
one shape ``[..., n]`` into the order that sorts the first ``num_keys`` of them
lexicographically; the others are carried along. One primitive gives ``np.sort`` (one
key), ``np.argsort`` (a key and an iota), ``np.lexsort`` (several keys) and everything
built on them (median, quantiles, unique, searchsorted with a sorter). The order is
NumPy's: NaN last, -0.0 equal to 0.0, complex values by (real, imag) with NumPy's NaN
placement. The sort is stable (equal keys keep their order) unless ``stable=False``,
which a sort without carried operands uses: equal keys are then indistinguishable but
for -0.0/0.0 and NaN payloads, and the code is faster.

    %s, %p = sort(%x, %iota) {num_keys=1, stable=True} : f64[b, n], i64[b, n]

Transform rules are row-level: vmap moves the batch axis to the front (the sorted axis
is always the last); the derivative is the permutation: jvp gathers the tangents with
it, vjp scatters the cotangents back (keys of an integer dtype have none).

Code (an OPAQUE lowering, after the complex lowering splits complex operands):

* a short static row (n <= NETWORK_MAX): Batcher's odd-even merge network on registers,
  one row per iteration of a loop over the rows that LLVM vectorizes across rows;
  keys compared as unsigned integers (floats mapped to their order-preserving bit
  pattern), with the position as the last key when the sort must be stable;
* on AVX-512, per row, a vectorized quicksort (quicksort.py): of the keys alone, in the
  output row, for the unstable sort of one 32/64-bit operand; of (key, position) pairs,
  ties by position, for an argsort or the stable sort of one operand whose key has 32 or
  64 bits (the values are then gathered by the positions);
* otherwise, per row: a least-significant-digit radix sort (bytes) of the mapped keys
  carrying the positions, a pass per digit (skipped when every element shares the
  digit), the last key first; then every operand is gathered by the permutation.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from llvmlite import ir as ll

from compiler.ir import dims
from compiler.ir.builder import Builder
from compiler.ir.core import Op, Value
from compiler.ir.primitive import define
from compiler.ir.types import BOOL, F16, F32, F64, I64, U64, TensorType, is_complex, is_float, is_signed
from compiler.primitives import ops, quicksort
from compiler.primitives.base import check
from compiler.primitives.matrices import batch_rule

Types = tuple[TensorType, ...]

NETWORK_MAX = 32          # static rows up to this length sort with a network


# ---- shape rule and NumPy reference ------------------------------------------------

def _rule(in_types: Types, params: dict[str, Any]) -> Types:
    k = params["num_keys"]
    check(len(in_types) >= 1 and 1 <= k <= len(in_types), f"sort: {k} keys of {len(in_types)} operands")
    first = in_types[0]
    check(first.ndim >= 1, "sort: operands must have at least one axis")
    for t in in_types[1:]:
        check(tuple(t.shape) == tuple(first.shape), f"sort: operands of different shapes {first}, {t}")
    return tuple(in_types)


def numpy_keys(x: np.ndarray) -> list[np.ndarray]:
    """The real keys, most significant first, that order `x` as np.sort does: a complex
    value by (isnan(re), isnan(im), re, im) (NumPy's [R + Rj, R + nanj, nan + Rj, nan + nanj])."""
    if np.iscomplexobj(x):
        return [np.isnan(x.real), np.isnan(x.imag), x.real, x.imag]
    return [x]


def _ref(*xs: np.ndarray, num_keys: int, stable: bool) -> tuple[np.ndarray, ...]:
    keys = [k for x in xs[:num_keys] for k in numpy_keys(x)]
    perm = np.lexsort(keys[::-1], axis=-1) if keys[0].ndim else np.zeros((), np.intp)
    return tuple(np.take_along_axis(x, perm, axis=-1) for x in xs)


# ---- transform rules ---------------------------------------------------------------

def take_rows(b: Builder, x: Value, perm: Value) -> Value:
    """``np.take_along_axis(x, perm, -1)`` for stacks of one leading shape: a gather of the
    flattened stack (fuses into its consumer)."""
    shape = tuple(x.type.shape)
    lead = shape[:-1]
    flat = ops.convert(b, perm, I64)
    if lead:
        flat = ops.add(b, _row_starts(b, lead, shape[-1], tuple(perm.type.shape)), flat)
    return ops.take(b, ops.reshape(b, x, (x.type.size,)), flat, 0)


def _row_starts(b: Builder, lead: tuple, n: Any, shape: tuple) -> Value:
    """The flat position of element 0 of each row of a [*lead, n] stack, broadcast to
    `shape` ([*lead, m])."""
    start = ops.full(b, 0, TensorType(I64, shape))
    stride: Any = n
    for axis in range(len(lead) - 1, -1, -1):
        size = ops.constant(b, stride, I64) if isinstance(stride, int) else ops.size_of(b, stride, I64)
        term = ops.mul(b, ops.iota(b, I64, shape, axis), ops.broadcast_in_dim(b, size, shape, ()))
        start = ops.add(b, start, term)
        stride = dims.mul(stride, lead[axis])
    return start


def scatter_rows(b: Builder, ct: Value, perm: Value) -> Value:
    """The inverse of take_rows for a permutation: out[..., perm[..., i]] = ct[..., i]."""
    shape = tuple(ct.type.shape)
    lead = shape[:-1]
    flat = ops.convert(b, perm, I64)
    if lead:
        flat = ops.add(b, _row_starts(b, lead, shape[-1], shape), flat)
    size = ct.type.size
    zeros = ops.full(b, 0, TensorType(ct.type.dtype, (size,)))
    out = ops.scatter(b, zeros, ops.reshape(b, flat, (size,)), ops.reshape(b, ct, (size,)), 0, "add")
    return ops.reshape(b, out, shape)


def permutation(b: Builder, op: Op, args: Sequence[Value]) -> Value:
    """The permutation `op` applies to each row (an argsort by its keys)."""
    keys = list(args[:op.params["num_keys"]])
    x = keys[0]
    iota = ops.iota(b, np.int64, tuple(x.type.shape), x.type.ndim - 1)
    return ops.sort(b, keys + [iota], len(keys), True)[-1]


def _jvp(b: Builder, op: Op, primals: list[Value], tangents: list[Any]) -> list[Any]:
    if all(t is None for t in tangents):
        return [None] * len(tangents)
    perm = permutation(b, op, primals)
    return [None if t is None else take_rows(b, t, perm) for t in tangents]


def _vjp(b: Builder, op: Op, primals: list[Value], outs: list[Value], cts: list[Any]) -> list[Any]:
    if all(c is None for c in cts):
        return [None] * len(primals)
    perm = permutation(b, op, primals)
    return [None if c is None else scatter_rows(b, c, perm) for c in cts]


def _vmap(b: Builder, op: Op, args: list[Value], bdims: list[int | None], size: Any) -> tuple:
    return batch_rule(b, op, args, bdims, size)


# ---- complex operands ----------------------------------------------------------------

def _complex(b: Builder, op: Op, args: Sequence[Any]) -> list[Any]:
    """A complex key is four real keys (isnan(re), isnan(im), re, im), a complex carried
    operand two carried parts."""
    k = op.params["num_keys"]
    keys: list[Value] = []
    for a in args[:k]:
        if isinstance(a, tuple):
            keys += [ops.isnan(b, a[0]), ops.isnan(b, a[1]), a[0], a[1]]
        else:
            keys.append(a)
    flat: list[Value] = list(keys)
    for a in args:
        flat += list(a) if isinstance(a, tuple) else [a]
    out = ops.sort(b, flat, len(keys), op.params["stable"])[len(keys):]
    results: list[Any] = []
    it = iter(out)
    for a in args:
        results.append((next(it), next(it)) if isinstance(a, tuple) else next(it))
    return results


# ---- code --------------------------------------------------------------------------

def network(n: int) -> list[tuple[int, int]]:
    """Batcher's odd-even merge sorting network for n inputs: comparators (i, j), i < j."""
    pairs = []
    p = 1
    while p < n:
        k = p
        while k >= 1:
            for j in range(k % p, n - k, 2 * k):
                for i in range(min(k, n - j - k)):
                    if (i + j) // (2 * p) == (i + j + k) // (2 * p):
                        pairs.append((i + j, i + j + k))
            k //= 2
        p *= 2
    return pairs


def _key_bits(dtype: np.dtype) -> int:
    if dtype == BOOL:
        return 8
    if dtype == F16:
        return 32
    return dtype.itemsize * 8


def _ordered(cg: Any, dtype: np.dtype, v: Any, canonical: bool = True) -> Any:
    """The key of a scalar as an unsigned integer of _key_bits(dtype) bits whose order is
    NumPy's sort order. `canonical`: -0.0 maps as 0.0 and every NaN to the largest key."""
    b = cg.b
    bits = _key_bits(dtype)
    it = ll.IntType(bits)
    if dtype == BOOL:
        return b.zext(v, it)
    if not is_float(dtype):
        return b.xor(v, ll.Constant(it, 1 << (bits - 1))) if is_signed(dtype) else v
    ft = ll.FloatType() if bits == 32 else ll.DoubleType()
    if canonical:
        zero = b.fcmp_ordered("==", v, ll.Constant(ft, 0.0))
        v = b.select(zero, ll.Constant(ft, 0.0), v)
    raw = b.bitcast(v, it)
    sign = b.or_(b.ashr(raw, ll.Constant(it, bits - 1)), ll.Constant(it, 1 << (bits - 1)))
    key = b.xor(raw, sign)
    nan = b.fcmp_unordered("uno", v, v)
    return b.select(nan, ll.Constant(it, (1 << bits) - 1), key)


def _unordered(cg: Any, dtype: np.dtype, key: Any) -> Any:
    """The scalar of a non-canonical key (NaN comes back as the default quiet NaN)."""
    b = cg.b
    bits = _key_bits(dtype)
    it = ll.IntType(bits)
    if not is_float(dtype):
        return b.xor(key, ll.Constant(it, 1 << (bits - 1))) if is_signed(dtype) else key
    ft = ll.FloatType() if bits == 32 else ll.DoubleType()
    top = ll.Constant(it, 1 << (bits - 1))
    neg = b.icmp_unsigned("<", key, top)
    raw = b.select(neg, b.not_(key), b.xor(key, top))
    value = b.bitcast(raw, ft)
    nan = b.icmp_unsigned("==", key, ll.Constant(it, (1 << bits) - 1))
    return b.select(nan, ll.Constant(ft, float("nan")), value)


def _is_position(x: Value) -> bool:
    """Is `x` the position along the last axis (the iota of an argsort)?"""
    return x.op is not None and x.op.prim is ops.iota_p and \
        x.op.params["dimension"] == x.type.ndim - 1 and x.type.dtype.kind in "iu"


def _bare(op: Op) -> bool:
    """Are the keys the values (no carried operand), with no -0.0/NaN order to keep?"""
    xs = op.operands
    return op.params["num_keys"] == len(xs) and (
        not op.params["stable"] or all(not is_float(x.type.dtype) for x in xs))


def _network_fits(op: Op, n: int) -> bool:
    """A network for rows of n: the values a compare-exchange moves (keys, position,
    carried operands) times its length bounds the code, and LLVM's time to vectorize it."""
    xs = op.operands
    k = op.params["num_keys"]
    lanes = k if _bare(op) else k + 1 + sum(not _is_position(x) for x in xs[k:]) + \
        sum(is_float(x.type.dtype) for x in xs[:k])
    return n <= NETWORK_MAX and (lanes <= 3 or (lanes <= 5 and n <= 16) or n <= 8)


def _lower(cg: Any, op: Op, outs: list[Any]) -> None:
    n = op.operands[0].type.shape[-1]
    if isinstance(n, int) and _network_fits(op, n):
        _lower_network(cg, op, outs, n)
    elif _quick(op, cg.vector_bits):
        _lower_quicksort(cg, op, outs, n)
    elif _quick_argsort(op, cg.vector_bits):
        _lower_quick_argsort(cg, op, outs, n)
    else:
        _lower_radix(cg, op, outs, n)


def _lexless(cg: Any, a: list[Any], c: list[Any]) -> Any:
    """Is the key tuple `a` lexicographically smaller than `c` (unsigned compares)?"""
    b = cg.b
    less = b.icmp_unsigned("<", a[-1], c[-1])
    for x, y in zip(reversed(a[:-1]), reversed(c[:-1])):
        less = b.or_(b.icmp_unsigned("<", x, y), b.and_(b.icmp_unsigned("==", x, y), less))
    return less


def _lower_network(cg: Any, op: Op, outs: list[Any], n: int) -> None:
    b = cg.b
    xs = list(op.operands)
    k = op.params["num_keys"]
    dtypes = [x.type.dtype for x in xs]
    # without carried operands and stability, the keys are the values (bijective mapping);
    # otherwise the position is the last key, and an iota operand (argsort) is the position
    bare = _bare(op)
    # keys that are the values (integers) are not carried twice
    moved = [j for j in range(len(xs)) if not (j >= k and _is_position(xs[j]))
             and not (j < k and not is_float(dtypes[j]))]
    with cg.loop_nest(xs[0].type.shape[:-1]) as lead:
        vals = [[cg.read(x, lead + [cg.index(i)]) if j in moved or j < k else None
                 for i in range(n)] for j, x in enumerate(xs)]
        keys = [[_ordered(cg, dtypes[j], v, canonical=not bare) for v in vals[j]] for j in range(k)]
        it = ll.IntType(64 if max(_key_bits(d) for d in dtypes[:k]) > 32 else 32)
        if bare:
            cols = [[keys[j][i] for j in range(k)] for i in range(n)]
            width = k
        else:
            cols = [[keys[j][i] for j in range(k)] + [ll.Constant(it, i)]
                    + [vals[j][i] for j in moved] for i in range(n)]
            width = k + 1
        for i, j in network(n):
            a, c = cols[i], cols[j]
            swap = _lexless(cg, c[:width], a[:width])
            cols[i] = [b.select(swap, y, x) for x, y in zip(a, c)]
            cols[j] = [b.select(swap, x, y) for x, y in zip(a, c)]
        for i in range(n):
            at = lead + [cg.index(i)]
            for j, buf in enumerate(outs):
                if j in moved and not bare:
                    v = cols[i][width + moved.index(j)]
                elif j < k:                         # a key that maps back to its value
                    v = _unordered(cg, dtypes[j], cols[i][j])
                    if dtypes[j] == BOOL:
                        v = b.trunc(v, ll.IntType(1))
                else:                               # the position
                    v = _int_cast(b, cols[i][k], _key_bits(dtypes[j]))
                cg.store(buf, at, v)


def _int_cast(b: Any, v: Any, bits: int) -> Any:
    width = v.type.width
    if width == bits:
        return v
    return b.trunc(v, ll.IntType(bits)) if width > bits else b.sext(v, ll.IntType(bits))


def _quick(op: Op, vector_bits: int) -> bool:
    """Does the vectorized quicksort apply: one operand, no order of equal keys to keep, a key
    of the element's width and AVX-512 (quicksort.py)?"""
    xs = op.operands
    dtype = xs[0].type.dtype
    return len(xs) == 1 and (not op.params["stable"] or not is_float(dtype)) and \
        quicksort.applies(dtype, vector_bits)


def _lower_quicksort(cg: Any, op: Op, outs: list[Any], n: Any) -> None:
    """Per row: the keys into the output row, then the quicksort function sorts them into
    values (quicksort.py)."""
    b = cg.b
    x = op.operands[0]
    dtype = x.type.dtype
    it = ll.IntType(dtype.itemsize * 8)
    fn = quicksort.function(cg.module, dtype)
    nn = cg.dim(n)
    with cg.loop_nest(x.type.shape[:-1]) as lead:
        row = b.gep(outs[0].ptr, [cg.linearize(lead + [cg.index(0)], outs[0].shape)], inbounds=True)
        keys = b.bitcast(row, it.as_pointer())
        with cg.loop(nn) as i:
            key = _ordered(cg, dtype, cg.read(x, lead + [i]), canonical=False)
            b.store(key, b.gep(keys, [i], inbounds=True))
        b.call(fn, [row, nn, quicksort.depth_limit(b, nn)])


def _quick_argsort(op: Op, vector_bits: int) -> bool:
    """One key, sorted stably, with its positions (an argsort) or alone (a stable sort of
    floats): the pair quicksort (quicksort.py)?"""
    xs = op.operands
    dtype = xs[0].type.dtype
    argsort = len(xs) == 2 and _is_position(xs[1]) and xs[1].type.dtype == I64
    # keys of 8 or 16 bits: the radix sort's one or two passes are faster
    return (argsort or len(xs) == 1) and op.params["num_keys"] == 1 and \
        _key_bits(dtype) >= 32 and quicksort.applies(U64, vector_bits)


def _lower_quick_argsort(cg: Any, op: Op, outs: list[Any], n: Any) -> None:
    """Per row: the (canonical) keys, widened to 64 bits, into a scratch row and the
    positions into the output (or a scratch row), sorted as pairs (ties by position:
    stable), then the values gathered by the positions."""
    b = cg.b
    x = op.operands[0]
    dtype = x.type.dtype
    fn = quicksort.function(cg.module, U64, pairs=True)
    i64 = ll.IntType(64)
    keys = b.bitcast(cg.scratch(I64, cg.entry_dim(n)), i64.as_pointer())
    positions = None if len(outs) == 2 else b.bitcast(cg.scratch(I64, cg.entry_dim(n)), i64.as_pointer())
    nn = cg.dim(n)
    with cg.loop_nest(x.type.shape[:-1]) as lead:
        row = positions if positions is not None else \
            b.gep(outs[1].ptr, [cg.linearize(lead + [cg.index(0)], outs[1].shape)], inbounds=True)
        with cg.loop(nn) as i:
            key = _ordered(cg, dtype, cg.read(x, lead + [i]))
            key = b.zext(key, i64) if _key_bits(dtype) < 64 else key
            b.store(key, b.gep(keys, [i], inbounds=True))
            b.store(i, b.gep(row, [i], inbounds=True))
        b.call(fn, [row, keys, nn, quicksort.depth_limit(b, nn)])
        with cg.loop(nn) as i:
            cg.store(outs[0], lead + [i], cg.read(x, lead + [b.load(b.gep(row, [i], inbounds=True))]))


DIGIT = 8                 # radix sort digits (bytes): 11 bits measured no faster (histograms out of L1)
RADIX = 1 << DIGIT


def _digits(bits: int) -> int:
    return -(-bits // DIGIT)


def _lower_radix(cg: Any, op: Op, outs: list[Any], n: Any) -> None:
    """Per row: LSD radix sort by DIGIT-bit digits of the mapped keys, last key first. A sort whose
    keys are the values (`bare`) moves the keys alone and maps them back; otherwise the
    positions move with them and every operand is gathered by them at the end."""
    b = cg.b
    xs = list(op.operands)
    k = op.params["num_keys"]
    dtypes = [x.type.dtype for x in xs]
    bare = k == 1 and len(xs) == 1 and (not op.params["stable"] or not is_float(dtypes[0]))
    i64 = ll.IntType(64)
    length = cg.entry_dim(n)
    # (key, position) arrays per row, twice (ping-pong), and the byte histograms; a bare sort
    # of 64-bit keys uses its output row as one of its two key arrays
    in_place = bare and _key_bits(dtypes[0]) == 64
    scratch = [cg.scratch(I64, length) for _ in range(1 if in_place else 2 if bare else 4)]
    counts = cg.scratch(I64, cg.index(RADIX * _digits(64)))
    slots = [cg.alloca_builder.alloca(scratch[0].type) for _ in range(2 if bare else 4)]
    nn = cg.dim(n)
    one = cg.index(1)

    def at(ptr: Any, i: Any) -> Any:
        return b.gep(ptr, [i], inbounds=True)

    def widen(u: Any, dtype: np.dtype) -> Any:
        return b.zext(u, i64) if _key_bits(dtype) < 64 else u

    with cg.loop_nest(xs[0].type.shape[:-1]) as lead:
        rows = scratch
        if in_place:
            row = b.gep(outs[0].ptr, [cg.linearize(lead + [cg.index(0)], outs[0].shape)],
                        inbounds=True)
            rows = [b.bitcast(row, scratch[0].type)] + scratch
        for s, p in zip(slots, rows):
            b.store(p, s)
        if not bare:
            with cg.loop(nn) as i:
                b.store(i, at(b.load(slots[1]), i))
        for j in reversed(range(k)):
            dtype = dtypes[j]
            nbytes = _digits(_key_bits(dtype))
            ukeys = b.load(slots[0])
            perm = None if bare else b.load(slots[1])
            with cg.loop(cg.index(RADIX * nbytes)) as c:
                b.store(cg.index(0), at(counts, c))
            with cg.loop(nn, unroll=False) as i:
                pos = i if perm is None else b.load(at(perm, i))
                u = widen(_ordered(cg, dtype, cg.read(xs[j], lead + [pos]), canonical=not bare),
                          dtype)
                b.store(u, at(ukeys, i))
                for d in range(nbytes):
                    digit = b.and_(b.lshr(u, cg.index(DIGIT * d)), cg.index(RADIX - 1))
                    slot = at(counts, b.add(digit, cg.index(RADIX * d)))
                    b.store(b.add(b.load(slot), one), slot)
            for d in range(nbytes):
                hist = b.gep(counts, [cg.index(RADIX * d)], inbounds=True)
                first = b.and_(b.lshr(b.load(ukeys), cg.index(DIGIT * d)), cg.index(RADIX - 1))
                trivial = b.icmp_signed("==", b.load(at(hist, first)), nn)
                with b.if_then(b.not_(trivial)):
                    total = cg.alloca_scalar(I64, cg.index(0))
                    with cg.loop(cg.index(RADIX), unroll=False) as c:
                        slot = at(hist, c)
                        cnt = b.load(slot)
                        b.store(b.load(total), slot)
                        b.store(b.add(b.load(total), cnt), total)
                    half = len(slots) // 2
                    src = [b.load(s) for s in slots[:half]]
                    dst = [b.load(s) for s in slots[half:]]
                    with cg.loop(nn, unroll=False) as i:
                        u = b.load(at(src[0], i))
                        digit = b.and_(b.lshr(u, cg.index(DIGIT * d)), cg.index(RADIX - 1))
                        slot = at(hist, digit)
                        pos = b.load(slot)
                        b.store(b.add(pos, one), slot)
                        b.store(u, at(dst[0], pos))
                        if not bare:
                            b.store(b.load(at(src[1], i)), at(dst[1], pos))
                    for s, v in zip(slots, dst + src):
                        b.store(v, s)
        if bare:
            ukeys = b.load(slots[0])
            dtype = dtypes[0]
            with cg.loop(nn) as i:
                u = b.load(at(ukeys, i))
                u = b.trunc(u, ll.IntType(_key_bits(dtype))) if _key_bits(dtype) < 64 else u
                v = _unordered(cg, dtype, u)
                cg.store(outs[0], lead + [i], b.trunc(v, ll.IntType(1)) if dtype == BOOL else v)
            return
        perm = b.load(slots[1])
        with cg.loop(nn) as i:
            src_at = lead + [b.load(at(perm, i))]
            for x, outb in zip(xs, outs):
                cg.store(outb, lead + [i], cg.read(x, src_at))


sort = define(
    ops.sort_p,
    shape_rule=_rule,
    numpy_ref=_ref,
    lower=_lower,
    vmap_rule=_vmap,
    jvp_rule=_jvp,
    vjp_rule=_vjp,
    complex_rule=_complex,
    streams_operands=False,
    doc="rows sorted along the last axis by the first num_keys operands (stable)",
)
