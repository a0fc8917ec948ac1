"""Blocked pairwise summation: float sums and running sums whose rounding error grows
with log2(n), not n. (Products gain nothing from it: a product's relative error is
the sum of its n - 1 multiplications' errors in any order.)

A plain loop ``acc += x[i]`` loses up to n/2 ulps on n like-signed terms, even
vectorized (LLVM then keeps A = lanes x interleave accumulators, which only
divides n by A). NumPy's ``pairwise_sum`` adds blocks of 128 elements with 8
accumulators (16 terms each) and combines the blocks pairwise. Here the same
idea is laid out as loops that fuse with the producer of the reduced elements:

* a **chunk** is at most C = chunk_size() consecutive elements of the innermost
  reduced axis (TERMS = 16 per accumulator of a full-width vector loop: C = 512
  float32 and 256 float64 with AVX2, twice that with AVX-512), folded by one
  reassociable loop that LLVM vectorizes;
* chunks are added to the current **leaf** until it holds at least C elements (so
  a short inner axis does not make tiny leaves);
* a finished leaf enters a binary counter of partial results (:class:`_Stack`:
  level l holds the combination of 2**l leaves): leaf k is combined with levels
  0..t-1, t the number of trailing one bits of k, smallest first, and stored at
  level t. That is the pairwise tree over the leaves, built left to right with at
  most log2(#leaves) + 1 live partials; the last partial leaf and the levels are
  combined at the end. For float32 the leaves and the tree are float64 and the
  result is rounded once: only the chunk loops round in float32.

**Error bound.** Each element passes through a chain of at most d roundings, so
|computed - exact| <= d u / (1 - d u) * sum|x_i| (u = eps / 2). With an innermost
reduced axis of at least C elements, d <= TERMS + log2(A) + ceil(log2(n / C)) + 3
<= log2(n) + 15 (C = TERMS x A, A = 4 x lanes: the chunk loop asks for interleave 4;
a leaf is at most two chunks). A chunk loop calling vector math interleaves 2, so
its accumulators take 2 x TERMS terms: d <= log2(n) + 30 (or 4 x TERMS terms if LLVM
does not interleave at all). For
float32 the float64 tree leaves d <= TERMS + log2(A) + 2 float32 roundings (about
24) plus float64 ones, so large float32 sums come out within about an ulp. A short
innermost axis adds up to C / m leaf additions (m its length); a reduction known to
be at most one chunk is a plain vectorized loop (d <= n / A + log2(A) + 1).

:func:`reduce` computes one output element (the reduction is read inside its
consumer's loop: full reductions, row sums). :func:`accumulate` writes whole
output rows when the last axis is kept (column sums): the leaf is the output row
itself, leaves are ROWS reduced positions, the stack is a scratch buffer of rows
(freed at exit), and every loop over a row is unit-stride: d <= ROWS +
ceil(log2(R / ROWS)) + 1 for R reduced positions (NumPy adds the rows one by one:
d = R). :func:`scan` (cumsum) runs the fold inside chunks of SCAN_BLOCK
elements and adds the carry, the pairwise combination of the previous chunks'
totals: d <= SCAN_BLOCK + 2 ceil(log2(k / SCAN_BLOCK)) + 2 for the k-th prefix (NumPy: k).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from llvmlite import ir as ll

from compiler.backend.buffers import I64T, Buffer
from compiler.ir import dims

TERMS = 16      # elements per vector accumulator in one chunk (NumPy's pairwise_sum: 16)
INTERLEAVE = 4  # vector accumulators LLVM keeps in a reassociated loop (its interleave count)
ROWS = 64       # reduced positions per leaf when whole output rows are accumulated
LEVELS = 64     # binary-counter levels of a scalar reduction: enough for 2**64 leaves
SCAN_BLOCK = 64  # elements per chunk of a running sum

Combine = Callable[[Any, Any], Any]
Element = Callable[[list[Any]], Any]


def chunk_size(cg: Any, t: ll.Type) -> int:
    """Elements per chunk (and leaf) of a scalar reduction of LLVM type `t`: TERMS for
    each accumulator of a full-width vector loop (256 float64 and 512 float32 with
    AVX2, 512 and 1024 with AVX-512)."""
    lanes = cg.vector_bits // (64 if isinstance(t, ll.DoubleType) else 32)
    return TERMS * INTERLEAVE * max(lanes, 1)


def needed(shape: Sequence[dims.Dim], axes: Sequence[int], leaf: int) -> bool:
    """False when the reduction is statically at most one leaf: a plain loop is as exact."""
    total: dims.Dim = 1
    for a in axes:
        total = dims.mul(total, shape[a])
    return not (isinstance(total, int) and total <= leaf)


def reduce(cg: Any, shape: Sequence[dims.Dim], axes: Sequence[int], out_idx: Sequence[Any],
           init: Any, combine: Combine, element: Element) -> Any:
    """The reduction of element(full index) over `axes` of `shape`, the other axes fixed
    by out_idx: chunks and leaves of chunk_size elements, leaves combined pairwise."""
    b = cg.b
    block = chunk_size(cg, init.type)
    # float32 chunk totals are combined in float64: the tree then adds no float32
    # rounding, and the result is rounded once at the end
    widen = isinstance(init.type, ll.FloatType)
    wide_init = ll.Constant(ll.DoubleType(), init.constant) if widen else init
    stack = _Stack(cg, wide_init, combine)
    leaf, filled, acc = _slot(cg, wide_init), _slot(cg, cg.index(0)), _slot(cg, init)

    def chunk(full: Callable[[Any], list[Any]], m: Any) -> None:
        b.store(init, acc)
        with cg.loop(m, interleave4=True) as t:     # A = 4 x lanes accumulators
            b.store(cg.reassoc(combine(b.load(acc), element(full(t)))), acc)
        total = b.fpext(b.load(acc), ll.DoubleType()) if widen else b.load(acc)
        into_leaf(cg, stack, leaf, filled, combine(b.load(leaf), total), m, block, wide_init)

    over_axes(cg, shape, axes, out_idx, block, chunk)
    result = stack.total(b.load(leaf))
    return b.fptrunc(result, init.type) if widen else result


def into_leaf(cg: Any, stack: "_Stack", leaf: Any, filled: Any, value: Any, n: Any, block: int,
              empty: Any) -> None:
    """The leaf becomes `value` (its sum with a chunk of n elements); a leaf of `block`
    elements goes onto the stack and starts again from `empty`."""
    b = cg.b
    b.store(value, leaf)
    count = b.add(b.load(filled), n)
    b.store(count, filled)
    with b.if_then(b.icmp_signed(">=", count, cg.index(block))):
        stack.push(b.load(leaf))
        b.store(empty, leaf)
        b.store(cg.index(0), filled)


def over_axes(cg: Any, shape: Sequence[dims.Dim], axes: Sequence[int], out_idx: Sequence[Any],
              block: int, chunk: Callable[[Callable[[Any], list[Any]], Any], None]) -> None:
    """chunk(full, n) over the reduced `axes` of `shape` in chunks of at most `block`
    elements, the other axes fixed by out_idx; full(t) is the whole index of element t."""
    def place(red: list[Any]) -> list[Any]:
        rest, it = iter(out_idx), iter(red)
        return [next(it) if a in axes else next(rest) for a in range(len(shape))]

    _chunks(cg, [shape[a] for a in axes], block, place, chunk)


def scan(cg: Any, n: Any, init: Any, combine: Combine, element: Callable[[Any], Any],
         emit: Callable[[Any, Any], None]) -> None:
    """emit(k, element(0) op ... op element(k)) for k < n: a running fold inside chunks of
    SCAN_BLOCK elements, each result combined with the carry, the pairwise combination
    of the previous chunks' totals (one extra op per element, O(1) amortized per chunk:
    _Stack.push_total)."""
    b = cg.b
    stack = _Stack(cg, init, combine, totals=True)
    carry, run = _slot(cg, init), _slot(cg, init)

    count = b.udiv(b.add(n, cg.index(SCAN_BLOCK - 1)), cg.index(SCAN_BLOCK))
    with cg.loop(count, unroll=False) as c:     # one copy of the element loop (see _chunks)
        start = b.mul(c, cg.index(SCAN_BLOCK))
        left = b.sub(n, start)
        m = b.select(b.icmp_signed("<", left, cg.index(SCAN_BLOCK)), left, cg.index(SCAN_BLOCK))
        b.store(init, run)
        with cg.loop(m) as t:
            k = b.add(start, t, flags=("nsw", "nuw"))
            b.store(combine(b.load(run), element(k)), run)
            emit(k, combine(b.load(carry), b.load(run)))
        b.store(stack.push_total(b.load(run)), carry)


def accumulate(cg: Any, shape: Sequence[dims.Dim], axes: Sequence[int], out: Buffer,
               init: Any, combine: Combine, element: Element) -> None:
    """out = the reduction of element(full index) over `axes`, the last axis kept: for
    each index of the axes before the first reduced one, the output row (the kept axes
    after it) is the leaf; leaves of ROWS reduced positions are combined pairwise
    through a scratch stack of rows."""
    b = cg.b
    first = axes[0]
    batch_axes = list(range(first))
    row_axes = [a for a in range(first, len(shape)) if a not in axes]
    row_shape = tuple(shape[a] for a in row_axes)
    row_size: dims.Dim = 1
    for d in row_shape:
        row_size = dims.mul(row_size, d)
    total: dims.Dim = 1
    for a in axes:
        total = dims.mul(total, shape[a])
    stack = _scratch(cg, out.dtype, row_size, total)
    row_len = cg.dim(row_size)

    def level(lvl: Any) -> Buffer:
        return Buffer(b.gep(stack, [b.mul(lvl, row_len)], inbounds=True), out.dtype, row_shape)

    with cg.loop_nest([shape[a] for a in batch_axes]) as bidx:
        row = list(bidx)

        def each(fn: Callable[[list[Any]], None]) -> None:
            with cg.loop_nest(row_shape) as ridx:
                fn(list(ridx))

        each(lambda r: cg.store(out, row + r, init))
        filled, count = _slot(cg, cg.index(0)), _slot(cg, cg.index(0))

        def push() -> None:
            k, lvl = _slot(cg, b.load(count)), _slot(cg, cg.index(0))
            with _while(cg, lambda: _odd(cg, b.load(k))):
                s = level(b.load(lvl))
                each(lambda r: cg.store(out, row + r, combine(cg.load(s, r), cg.load(out, row + r))))
                _shift(cg, k, lvl)
            top = level(b.load(lvl))

            def move(r: list[Any]) -> None:
                cg.store(top, r, cg.load(out, row + r))
                cg.store(out, row + r, init)
            each(move)
            b.store(b.add(b.load(count), cg.index(1)), count)

        # the walk over reduced positions is not vectorized: its rows are (LLVM would
        # gather across rows once a short static row is unrolled: 20 columns, 30x slower)
        across = not all(isinstance(d, int) and d > 1 for d in row_shape[-1:])

        def chunk(full: Callable[[Any], list[Any]], m: Any) -> None:
            with cg.loop(m, vectorize=across) as t:
                red = full(t)

                def fold(r: list[Any]) -> None:
                    idx = _merge(len(shape), batch_axes, bidx, axes, red, row_axes, r)
                    cg.store(out, row + r, combine(cg.load(out, row + r), element(idx)))
                each(fold)
            n = b.add(b.load(filled), m)
            b.store(n, filled)
            with b.if_then(b.icmp_signed(">=", n, cg.index(ROWS))):
                push()
                b.store(cg.index(0), filled)

        _chunks(cg, [shape[a] for a in axes], ROWS, lambda red: red, chunk)
        k, lvl = _slot(cg, b.load(count)), _slot(cg, cg.index(0))
        with _while(cg, lambda: b.icmp_unsigned("!=", b.load(k), cg.index(0))):
            with b.if_then(_odd(cg, b.load(k))):
                s = level(b.load(lvl))
                each(lambda r: cg.store(out, row + r, combine(cg.load(s, r), cg.load(out, row + r))))
            _shift(cg, k, lvl)


# ---- helpers ---------------------------------------------------------------------------

class _Stack:
    """The binary counter of a scalar reduction: level l holds the combination of 2**l
    leaves once bit l of the leaf count is set."""

    def __init__(self, cg: Any, init: Any, combine: Combine, *, totals: bool = False) -> None:
        self.cg, self.combine, self.init = cg, combine, init
        self.levels = cg.alloca_builder.alloca(init.type, LEVELS)
        self.suffix = cg.alloca_builder.alloca(init.type, LEVELS + 1) if totals else None
        self.count = _slot(cg, cg.index(0))

    def push(self, value: Any) -> tuple[Any, Any, Any]:
        """Combine the leaf with the levels of the trailing one bits (smallest first),
        store the result at the first zero bit; returns (that level, its new value, the
        count shifted right past it)."""
        cg, b = self.cg, self.cg.b
        k, s, lvl = _slot(cg, b.load(self.count)), _slot(cg, value), _slot(cg, cg.index(0))
        with _while(cg, lambda: _odd(cg, b.load(k))):
            b.store(self.combine(b.load(b.gep(self.levels, [b.load(lvl)])), b.load(s)), s)
            _shift(cg, k, lvl)
        b.store(b.load(s), b.gep(self.levels, [b.load(lvl)]))
        b.store(b.add(b.load(self.count), cg.index(1)), self.count)
        return b.load(lvl), b.load(s), b.lshr(b.load(k), cg.index(1))

    def push_total(self, value: Any) -> Any:
        """push, then the combination of every live level (the running total of a scan) in
        O(1) amortized: suffix[l] holds the combination of the live levels >= l; a push at
        level t leaves the suffixes above t alone, and suffix[0..t] = level[t] op suffix[t+1]
        (init when no level above t is live)."""
        cg, b = self.cg, self.cg.b
        assert self.suffix is not None, "a _Stack(totals=True) keeps the suffixes"
        t, s, above = self.push(value)
        up = b.add(t, cg.index(1))
        older = b.select(b.icmp_unsigned("!=", above, cg.index(0)),
                         b.load(b.gep(self.suffix, [up])), self.init)
        total = self.combine(s, older)
        with cg.loop(up) as l:
            b.store(total, b.gep(self.suffix, [l]))
        return total

    def total(self, first: Any) -> Any:
        """`first` combined with every live level, from the smallest partial up."""
        cg, b = self.cg, self.cg.b
        k, result, lvl = _slot(cg, b.load(self.count)), _slot(cg, first), _slot(cg, cg.index(0))
        with _while(cg, lambda: b.icmp_unsigned("!=", b.load(k), cg.index(0))):
            with b.if_then(_odd(cg, b.load(k))):
                at = b.gep(self.levels, [b.load(lvl)])
                b.store(self.combine(b.load(at), b.load(result)), result)
            _shift(cg, k, lvl)
        return b.load(result)


def _chunks(cg: Any, extents: Sequence[dims.Dim], size: int,
            place: Callable[[list[Any]], list[Any]],
            chunk: Callable[[Callable[[Any], list[Any]], Any], None]) -> None:
    """Walk the index space `extents` in row-major order as chunks of at most `size`
    positions of its last axis; chunk(full, m) emits the loop over one chunk of m
    positions, full(t) being the index of its t-th position (through `place`)."""
    b = cg.b
    n = cg.dim(extents[-1])
    count = b.udiv(b.add(n, cg.index(size - 1)), cg.index(size))
    with cg.loop_nest(extents[:-1]) as outer:
        with cg.loop(count, unroll=False) as c:    # one copy of the chunk loop: its loads
            start = b.mul(c, cg.index(size))       # walk one contiguous stream
            left = b.sub(n, start)
            m = b.select(b.icmp_signed("<", left, cg.index(size)), left, cg.index(size))
            chunk(lambda t: place(list(outer) + [b.add(start, t, flags=("nsw", "nuw"))]), m)


def _merge(ndim: int, batch_axes: list[int], bidx: Sequence[Any], axes: Sequence[int],
           red: Sequence[Any], row_axes: list[int], ridx: Sequence[Any]) -> list[Any]:
    full: list[Any] = [None] * ndim
    for group, idx in ((batch_axes, bidx), (list(axes), red), (row_axes, ridx)):
        for a, i in zip(group, idx):
            full[a] = i
    return full


def _slot(cg: Any, value: Any) -> Any:
    slot = cg.alloca_builder.alloca(value.type)
    cg.b.store(value, slot)
    return slot


def _odd(cg: Any, k: Any) -> Any:
    return cg.b.icmp_unsigned("!=", cg.b.and_(k, cg.index(1)), cg.index(0))


def _shift(cg: Any, k: Any, lvl: Any) -> None:
    b = cg.b
    b.store(b.lshr(b.load(k), cg.index(1)), k)
    b.store(b.add(b.load(lvl), cg.index(1)), lvl)


class _while:
    """``with _while(cg, cond): body`` emits while (cond()) { body }."""

    def __init__(self, cg: Any, cond: Callable[[], Any]) -> None:
        self.cg, self.cond = cg, cond

    def __enter__(self) -> None:
        cg = self.cg
        self.header = cg.fn.append_basic_block("while")
        body = cg.fn.append_basic_block("while.body")
        self.exit = cg.fn.append_basic_block("while.exit")
        cg.b.branch(self.header)
        cg.b.position_at_end(self.header)
        cg.b.cbranch(self.cond(), body, self.exit)
        cg.b.position_at_end(body)

    def __exit__(self, *exc: Any) -> None:
        self.cg.b.branch(self.header)
        self.cg.b.position_at_end(self.exit)


def _scratch(cg: Any, dtype: Any, row_size: dims.Dim, total: dims.Dim) -> Any:
    """A buffer of bitlen(total // ROWS) rows of `row_size` elements (the levels a
    stack of leaves can reach), allocated at entry and freed at exit."""
    rows = cg.entry_dim(row_size)
    leaves = cg.alloca_builder.udiv(cg.entry_dim(total), ll.Constant(I64T, ROWS))
    ctlz = cg.module.declare_intrinsic("llvm.ctlz", [I64T],
                                       ll.FunctionType(I64T, [I64T, ll.IntType(1)]))
    zeros = cg.alloca_builder.call(ctlz, [leaves, ll.Constant(ll.IntType(1), 0)])
    levels = cg.alloca_builder.sub(ll.Constant(I64T, 64), zeros)
    return cg.scratch(dtype, cg.alloca_builder.mul(levels, rows))
