"""A vectorized quicksort of 32- and 64-bit keys on AVX-512, for the unstable sort of one operand.

No primitive: `sorting.py` lowers ``sort(x) {num_keys=1, stable=False}`` of a long row of
float32, float64, int32, int64, uint32 or uint64 values here when the target has AVX-512
(docs/sorting.md). Per row:

1. the values are mapped to their order-preserving unsigned keys (a vectorized loop of the
   kernel) and written into the output row, whose element has the key's width;
2. ``aotx.quicksort.<dtype>(out, n, depth)``, one internal function per dtype, sorts them in place
   into values: an explicit stack of ranges, the pivot of a range the median of L evenly
   spaced samples (L = lanes of a 512-bit register: 8 keys of 64 bits, 16 of 32). A
   partition holds its first and last UNROLL registers aside and then reads UNROLL registers
   at a time from the end with less free room; a register's keys below the pivot go to the
   left end and the others to the right end, each a ``vpcompress`` into a register (the
   memory form is slow on some cores) and a whole-register store (a ``vpexpand`` places the
   right part in the top lanes); the last registers use masked stores. No scratch memory.
   A range of at most BASE_REGS registers is sorted by a bitonic network on 1, 2, 4, 8 or 16
   registers (padded with the largest key) and stored as values; a range whose pivot is
   its minimum is split into the run of keys equal to it (done) and the rest, so runs of
   equal keys end the recursion; past a depth of 2 log2(n) + 4 a range is heap-sorted, so
   the worst case stays n log n.

Measured (benchmarks/sorting.py, znver4): 1e6 float64 values as fast as NumPy 2's AVX-512
sort (x86-simd-sort); the sizes BASE_REGS = 16 (8 and 32 slower), PAIR_BASE_REGS = 8 (16
slower: the network's 32 registers spill) and UNROLL = 4 (2 slower, 8 the same) were chosen
by it.

The keys of floats are not canonical (``_ordered(..., canonical=False)``): -0.0 sorts before
0.0 and every NaN after +inf (returned as the default quiet NaN), which is a valid unstable
order of NumPy's.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
from llvmlite import ir as ll

from compiler.ir.types import F32, F64, I32, I64, U32, U64, is_float, is_signed
from compiler.primitives.base import emit_while

#: the dtypes whose key has the element's width (the output row holds the keys)
DTYPES = (F32, F64, I32, I64, U32, U64)
#: a range of at most BASE_REGS registers of keys is sorted by a network
BASE_REGS = 16
#: the same for (key, position) pairs (two registers each)
PAIR_BASE_REGS = 8
#: registers read per step of a partition
UNROLL = 4

I1 = ll.IntType(1)
I32T = ll.IntType(32)
I64T = ll.IntType(64)


def applies(dtype: np.dtype, vector_bits: int) -> bool:
    return vector_bits == 512 and dtype in DTYPES


def _vec(t: ll.Type, lanes: int) -> ll.VectorType:
    return ll.VectorType(t, lanes)


def _splat(t: ll.IntType, lanes: int, value: int) -> ll.Constant:
    return ll.Constant(_vec(t, lanes), [ll.Constant(t, value)] * lanes)


def _declare(module: ll.Module, name: str, fnty: ll.FunctionType) -> ll.Function:
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    return ll.Function(module, fnty, name)


class _Emitter:
    """The builder of one quicksort function and its vector helpers."""

    def __init__(self, module: ll.Module, fn: ll.Function, dtype: np.dtype, pairs: bool) -> None:
        self.module, self.fn, self.dtype = module, fn, dtype
        self.pairs = pairs            # (key, position) registers: a stable argsort
        self.base_regs = PAIR_BASE_REGS if pairs else BASE_REGS
        # a partitioned range holds 2 UNROLL registers aside: it must be longer
        assert self.base_regs >= 2 * UNROLL
        self.bits = dtype.itemsize * 8
        self.it = ll.IntType(self.bits)
        self.lanes = 512 // self.bits
        self.vt = _vec(self.it, self.lanes)
        self.mt = _vec(I1, self.lanes)
        self.max = (1 << self.bits) - 1
        self.b = ll.IRBuilder(fn.append_basic_block("entry"))
        self.entry = self.b

    # ---- small helpers ------------------------------------------------------------------
    def const(self, value: int) -> ll.Constant:
        return ll.Constant(I64T, value)

    def alloca(self, t: ll.Type, init: Any = None, count: int | None = None) -> Any:
        with self.b.goto_entry_block():
            slot = self.b.alloca(t, size=None if count is None else ll.Constant(I32T, count))
        if init is not None:
            self.b.store(init, slot)
        return slot

    def vptr(self, base: Any, i: Any) -> Any:
        return self.b.bitcast(self.b.gep(base, [i], inbounds=True), self.vt.as_pointer())

    def prefix(self, count: Any) -> Any:
        """The mask of the first `count` lanes (0 <= count <= lanes)."""
        b = self.b
        bits = b.sub(b.shl(self.const(1), count), self.const(1))
        return b.bitcast(b.trunc(bits, ll.IntType(self.lanes)), self.mt)

    def popcount(self, mask: Any) -> Any:
        t = ll.IntType(self.lanes)
        ctpop = self.module.declare_intrinsic("llvm.ctpop", [t], ll.FunctionType(t, [t]))
        return self.b.zext(self.b.call(ctpop, [self.b.bitcast(mask, t)]), I64T)

    def masked_load(self, ptr: Any, mask: Any, fill: Any) -> Any:
        name = f"llvm.masked.load.v{self.lanes}i{self.bits}.p0"
        fn = _declare(self.module, name, ll.FunctionType(self.vt, [self.vt.as_pointer(), I32T, self.mt, self.vt]))
        return self.b.call(fn, [ptr, ll.Constant(I32T, self.bits // 8), mask, fill])

    def masked_store(self, value: Any, ptr: Any, mask: Any) -> None:
        vt = value.type
        lanes, elt = vt.count, vt.element
        if isinstance(elt, ll.DoubleType):
            suffix, size = f"v{lanes}f64", 8
        elif isinstance(elt, ll.FloatType):
            suffix, size = f"v{lanes}f32", 4
        else:
            suffix, size = f"v{lanes}i{elt.width}", elt.width // 8
        name = f"llvm.masked.store.{suffix}.p0"
        fn = _declare(self.module, name, ll.FunctionType(ll.VoidType(), [vt, vt.as_pointer(), I32T, self.mt]))
        self.b.call(fn, [value, ptr, ll.Constant(I32T, size), mask])

    def compress(self, value: Any, mask: Any) -> Any:
        """The lanes of `value` under `mask`, moved to the first lanes (a register vpcompress)."""
        name = f"llvm.x86.avx512.mask.compress.v{self.lanes}i{self.bits}"
        fn = _declare(self.module, name, ll.FunctionType(self.vt, [self.vt, self.vt, self.mt]))
        return self.b.call(fn, [value, value, mask])

    def expand(self, value: Any, mask: Any) -> Any:
        """The first lanes of `value` spread to the lanes under `mask` (a register vpexpand)."""
        name = f"llvm.x86.avx512.mask.expand.v{self.lanes}i{self.bits}"
        fn = _declare(self.module, name, ll.FunctionType(self.vt, [self.vt, self.vt, self.mt]))
        return self.b.call(fn, [value, value, mask])

    def less(self, x: list[Any], y: list[Any]) -> Any:
        """x < y lexicographically (registers: [key] or [key, position])."""
        b = self.b
        less = b.icmp_unsigned("<", x[0], y[0])
        if len(x) == 2:
            tie = b.and_(b.icmp_unsigned("==", x[0], y[0]), b.icmp_unsigned("<", x[1], y[1]))
            less = b.or_(less, tie)
        return less

    def minmax(self, x: list[Any], y: list[Any]) -> tuple[list[Any], list[Any]]:
        less = self.less(x, y)
        return ([self.b.select(less, u, v) for u, v in zip(x, y)],
                [self.b.select(less, v, u) for u, v in zip(x, y)])

    def while_(self, cond: Callable[[], Any], body: Callable[[], None]) -> None:
        emit_while(self.fn, self.b, cond, body)

    # ---- the network --------------------------------------------------------------------
    def network(self, regs: list[Any]) -> list[Any]:
        """Bitonic sort of the registers `regs` (each a list of components, compared by
        `less`), ascending through the registers."""
        b, lanes = self.b, self.lanes
        regs = list(regs)
        total = len(regs) * lanes
        k = 2
        while k <= total:
            j = k // 2
            while j >= 1:
                if j >= lanes:
                    jr = j // lanes
                    for r in range(len(regs)):
                        p = r ^ jr
                        if p > r:
                            lo, hi = self.minmax(regs[r], regs[p])
                            up = (r * lanes) & k == 0
                            regs[r], regs[p] = (lo, hi) if up else (hi, lo)
                else:
                    perm = ll.Constant(_vec(I32T, lanes), [ll.Constant(I32T, i ^ j) for i in range(lanes)])
                    for r in range(len(regs)):
                        v = regs[r]
                        lo, hi = self.minmax(v, [b.shuffle_vector(c, ll.Constant(self.vt, None), perm)
                                                 for c in v])
                        take_min = [(i < (i ^ j)) == ((r * lanes + i) & k == 0) for i in range(lanes)]
                        mask = ll.Constant(self.mt, [ll.Constant(I1, int(t)) for t in take_min])
                        regs[r] = [b.select(mask, x, y) for x, y in zip(lo, hi)]
                j //= 2
            k *= 2
        return regs

    # ---- keys back to values ------------------------------------------------------------
    def values(self, key: Any) -> Any:
        """The values of (a vector of) non-canonical keys (NaN: the default quiet NaN)."""
        b = self.b
        t = key.type
        lanes = t.count if isinstance(t, ll.VectorType) else 0

        def c(v: int) -> Any:
            return _splat(self.it, lanes, v) if lanes else ll.Constant(self.it, v)
        top = 1 << (self.bits - 1)
        if not is_float(self.dtype):
            return b.xor(key, c(top)) if is_signed(self.dtype) else key
        ft = ll.DoubleType() if self.bits == 64 else ll.FloatType()
        fvt = _vec(ft, lanes) if lanes else ft
        neg = b.icmp_unsigned("<", key, c(top))
        raw = b.select(neg, b.xor(key, c(self.max)), b.xor(key, c(top)))
        nan = b.icmp_unsigned("==", key, c(self.max))
        nan_bits = int(np.array(np.nan, self.dtype).view(np.uint64 if self.bits == 64 else np.uint32))
        return b.bitcast(b.select(nan, c(nan_bits), raw), fvt)

    def value_type(self) -> ll.Type:
        if self.dtype == F64:
            return ll.DoubleType()
        if self.dtype == F32:
            return ll.FloatType()
        return self.it


def depth_limit(b: ll.IRBuilder, n: Any) -> Any:
    """2 floor(log2 n) + 4: the partitions a range may go through before it is heap-sorted."""
    ctlz = b.module.declare_intrinsic("llvm.ctlz", [I64T], ll.FunctionType(I64T, [I64T, I1]))
    one = ll.Constant(I64T, 1)
    log2n = b.sub(ll.Constant(I64T, 63), b.call(ctlz, [b.or_(n, one), ll.Constant(I1, 0)]))
    return b.add(b.mul(log2n, ll.Constant(I64T, 2)), ll.Constant(I64T, 4))


def function(module: ll.Module, dtype: np.dtype, pairs: bool = False) -> ll.Function:
    """``void aotx.quicksort.<dtype>(T* out, i64 n, i64 depth)``: sorts the n keys held by
    `out` (seen as unsigned integers of the element's width) in place, leaving their values;
    a range `depth` partitions deep is heap-sorted (depth_limit(n) keeps n log n).

    `pairs` (64-bit keys): ``void aotx.argsort.<dtype>(i64* positions, u64* keys, i64 n, i64
    depth)`` sorts the (key, position) pairs of the two arrays, ties by position: a stable
    argsort, whose result is `positions`."""
    if pairs:
        name = f"aotx.argsort.{np.dtype(dtype).name}"
        existing = module.globals.get(name)
        if existing is not None:
            return existing
        ptr = I64T.as_pointer()
        fn = ll.Function(module, ll.FunctionType(ll.VoidType(), [ptr, ptr, I64T, I64T]), name)
        fn.linkage = "internal"
        _body(_Emitter(module, fn, np.dtype(dtype), True))
        return fn
    name = f"aotx.quicksort.{np.dtype(dtype).name}"
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    bits = np.dtype(dtype).itemsize * 8
    it = ll.IntType(bits)
    value = {F64: ll.DoubleType(), F32: ll.FloatType()}.get(np.dtype(dtype), it)
    fn = ll.Function(module, ll.FunctionType(ll.VoidType(), [value.as_pointer(), I64T, I64T]), name)
    fn.linkage = "internal"
    _body(_Emitter(module, fn, np.dtype(dtype), False))
    return fn


def _body(e: _Emitter) -> None:
    b, lanes = e.b, e.lanes
    if e.pairs:
        out, keys, n, depth_cap = e.fn.args
        arrays = [keys, out]
    else:
        out, n, depth_cap = e.fn.args
        keys = b.bitcast(out, e.it.as_pointer())
        arrays = [keys]
    stack_size = 2 * 64 + 16          # > the depth limit + 2: the larger part waits, one per level
    st_lo = e.alloca(I64T, count=stack_size)
    st_hi = e.alloca(I64T, count=stack_size)
    st_depth = e.alloca(I64T, count=stack_size)
    sp = e.alloca(I64T, e.const(0))

    def push(lo: Any, hi: Any, depth: Any) -> None:
        top = b.load(sp)
        for arr, v in ((st_lo, lo), (st_hi, hi), (st_depth, depth)):
            b.store(v, b.gep(arr, [top], inbounds=True))
        b.store(b.add(top, e.const(1)), sp)

    push(e.const(0), n, depth_cap)

    loop = e.fn.append_basic_block("range")
    done = e.fn.append_basic_block("done")
    b.branch(loop)
    b.position_at_end(loop)
    top = b.load(sp)
    work = e.fn.append_basic_block("range.pop")
    b.cbranch(b.icmp_signed("==", top, e.const(0)), done, work)
    b.position_at_end(work)
    top = b.sub(top, e.const(1))
    b.store(top, sp)
    lo = b.load(b.gep(st_lo, [top], inbounds=True))
    hi = b.load(b.gep(st_hi, [top], inbounds=True))
    depth = b.load(b.gep(st_depth, [top], inbounds=True))
    m = b.sub(hi, lo)

    # a short range: a network, stored as values
    small = b.icmp_signed("<=", m, e.const(e.base_regs * lanes))
    base_bb = e.fn.append_basic_block("base")
    big_bb = e.fn.append_basic_block("big")
    b.cbranch(small, base_bb, big_bb)
    b.position_at_end(base_bb)
    _base_case(e, arrays, out, lo, m)
    b.branch(loop)

    b.position_at_end(big_bb)
    deep = b.icmp_signed("==", depth, e.const(0))
    heap_bb = e.fn.append_basic_block("heap")
    part_bb = e.fn.append_basic_block("partition")
    b.cbranch(deep, heap_bb, part_bb)
    b.position_at_end(heap_bb)
    _heapsort(e, [b.gep(a, [lo], inbounds=True) for a in arrays], m)
    if not e.pairs:
        _emit_values(e, keys, out, lo, hi)
    b.branch(loop)

    b.position_at_end(part_bb)
    pivot = _pivot(e, arrays, lo, m)
    split = _partition(e, arrays, lo, hi, pivot)
    next_depth = b.sub(depth, e.const(1))
    minimum = b.icmp_signed("==", split, lo)
    two_bb = e.fn.append_basic_block("two")
    min_bb = e.fn.append_basic_block("minimum")
    b.cbranch(minimum, min_bb, two_bb)

    b.position_at_end(two_bb)                  # the smaller part next: the stack stays short
    left_larger = b.icmp_signed(">", b.sub(split, lo), b.sub(hi, split))
    with b.if_else(left_larger) as (then, otherwise):
        with then:
            push(lo, split, next_depth)
            push(split, hi, next_depth)
        with otherwise:
            push(split, hi, next_depth)
            push(lo, split, next_depth)
    b.branch(loop)

    # the pivot is the range's minimum: the keys equal to it are done, the rest is a range
    b.position_at_end(min_bb)
    if e.pairs:                 # pairs are distinct: split off the pivot alone
        split = _partition(e, arrays, lo, hi, [pivot[0], b.add(pivot[1], e.const(1))])
        push(split, hi, next_depth)
        push(lo, split, next_depth)
        b.branch(loop)
        b.position_at_end(done)
        b.ret_void()
        return
    pivot = pivot[0]
    all_max = b.icmp_unsigned("==", pivot, ll.Constant(e.it, e.max))
    rest_bb = e.fn.append_basic_block("rest")
    fill_all = e.fn.append_basic_block("fill.all")
    b.cbranch(all_max, fill_all, rest_bb)
    b.position_at_end(fill_all)
    _fill(e, out, lo, hi, pivot)
    b.branch(loop)
    b.position_at_end(rest_bb)
    split = _partition(e, arrays, lo, hi, [b.add(pivot, ll.Constant(e.it, 1))])
    _fill(e, out, lo, split, pivot)
    with b.if_then(b.icmp_signed("<", split, hi)):
        push(split, hi, next_depth)
    b.branch(loop)

    b.position_at_end(done)
    b.ret_void()


def _base_case(e: _Emitter, arrays: list[Any], out: Any, lo: Any, m: Any) -> None:
    """Sort the m <= BASE_REGS * lanes keys at arrays[...][lo:] with a network of 1, 2, 4,
    8 or 16 registers and store their values (or positions) at out[lo:]."""
    b, lanes = e.b, e.lanes
    after = e.fn.append_basic_block("base.end")
    fill = _splat(e.it, lanes, e.max)
    regs_options = [1 << i for i in range(e.base_regs.bit_length())]
    blocks = [e.fn.append_basic_block(f"base.{r}") for r in regs_options]
    for count, block in zip(regs_options[:-1], blocks[:-1]):
        test = e.fn.append_basic_block("base.test")
        b.cbranch(b.icmp_signed("<=", m, e.const(count * lanes)), block, test)
        b.position_at_end(test)
    b.branch(blocks[-1])
    vt_val = I64T if e.pairs else e.value_type()
    for count, block in zip(regs_options, blocks):
        b.position_at_end(block)
        masks, regs = [], []
        for r in range(count):
            left = b.sub(m, e.const(r * lanes))
            left = b.select(b.icmp_signed("<", left, e.const(0)), e.const(0), left)
            left = b.select(b.icmp_signed(">", left, e.const(lanes)), e.const(lanes), left)
            mask = e.prefix(left)
            masks.append(mask)
            regs.append([e.masked_load(e.vptr(a, b.add(lo, e.const(r * lanes))), mask, fill)
                         for a in arrays])
        regs = e.network(regs)
        for r in range(count):
            ptr = b.bitcast(b.gep(out, [b.add(lo, e.const(r * lanes))], inbounds=True),
                            _vec(vt_val, lanes).as_pointer())
            value = regs[r][1] if e.pairs else e.values(regs[r][0])
            whole = b.icmp_signed("<=", e.const((r + 1) * lanes), m)
            with b.if_else(whole) as (then, otherwise):
                with then:                  # a masked store is slower
                    b.store(value, ptr, align=e.bits // 8)
                with otherwise:
                    e.masked_store(value, ptr, masks[r])
        b.branch(after)
    b.position_at_end(after)


def _pivot(e: _Emitter, arrays: list[Any], lo: Any, m: Any) -> list[Any]:
    """The median of `lanes` entries at evenly spaced positions of [lo, lo + m)."""
    b, lanes = e.b, e.lanes
    v = [ll.Constant(e.vt, None) for _ in arrays]
    for i in range(lanes):
        at = b.add(lo, b.udiv(b.mul(m, e.const(2 * i + 1)), e.const(2 * lanes)))
        v = [b.insert_element(c, b.load(b.gep(a, [at], inbounds=True)), ll.Constant(I32T, i))
             for c, a in zip(v, arrays)]
    v = e.network([v])[0]
    return [b.extract_element(c, ll.Constant(I32T, lanes // 2)) for c in v]


def _partition(e: _Emitter, arrays: list[Any], lo: Any, hi: Any, pivot: list[Any]) -> Any:
    """In place: the entries of [lo, hi) (hi - lo >= 2 UNROLL registers) below `pivot` to
    [lo, split), the others to [split, hi); returns split. The first and the last UNROLL
    registers are held aside, which leaves 2 UNROLL registers of room between the written
    ends and the unread middle; each step reads UNROLL registers from the side with less
    room, so both sides keep room for whole-register stores (masked stores are slower), and
    the branch is taken once per UNROLL registers."""
    b, lanes = e.b, e.lanes
    align = e.bits // 8
    block = UNROLL * lanes
    zeros = ll.Constant(_vec(I32T, lanes), [ll.Constant(I32T, 0)] * lanes)
    p = [b.shuffle_vector(b.insert_element(ll.Constant(e.vt, None), c, ll.Constant(I32T, 0)),
                          ll.Constant(e.vt, None), zeros) for c in pivot]
    ones = ll.Constant(e.mt, [ll.Constant(I1, 1)] * lanes)

    def load(at: Any) -> list[Any]:
        return [b.load(e.vptr(a, at), align=align) for a in arrays]
    aside = [load(b.add(lo, e.const(k * lanes))) for k in range(UNROLL)]
    aside += [load(b.sub(hi, e.const((k + 1) * lanes))) for k in range(UNROLL)]
    write_l = e.alloca(I64T, lo)                      # [lo, write_l): below the pivot
    write_r = e.alloca(I64T, hi)                      # [write_r, hi): the others
    read_l = e.alloca(I64T, b.add(lo, e.const(block)))
    read_r = e.alloca(I64T, b.sub(hi, e.const(block)))  # [read_l, read_r): not read yet

    def split(v: list[Any], valid: Any, whole: bool) -> None:
        below = e.less(v, p)
        above = b.and_(b.xor(below, ones), valid)
        below = b.and_(below, valid)
        nb = e.popcount(below)
        na = e.popcount(above)
        wl = b.load(write_l)
        wr = b.load(write_r)
        high = b.xor(e.prefix(nb), ones) if whole else None
        for a, c in zip(arrays, v):
            if whole:
                b.store(e.compress(c, below), e.vptr(a, wl), align=align)
                top = e.expand(e.compress(c, above), high)
                b.store(top, e.vptr(a, b.sub(wr, e.const(lanes))), align=align)
            else:
                e.masked_store(e.compress(c, below), e.vptr(a, wl), e.prefix(nb))
                e.masked_store(e.compress(c, above), e.vptr(a, b.sub(wr, na)), e.prefix(na))
        b.store(b.add(wl, nb), write_l)
        b.store(b.sub(wr, na), write_r)

    def take(count: int) -> Any:
        """Reads `count` entries from the side with less room: their position."""
        rl, rr = b.load(read_l), b.load(read_r)
        room_l = b.sub(rl, b.load(write_l))
        room_r = b.sub(b.load(write_r), rr)
        at = e.alloca(I64T)
        with b.if_else(b.icmp_signed("<=", room_l, room_r)) as (then, otherwise):
            with then:
                b.store(rl, at)
                b.store(b.add(rl, e.const(count)), read_l)
            with otherwise:
                b.store(b.sub(rr, e.const(count)), at)
                b.store(b.sub(rr, e.const(count)), read_r)
        return b.load(at)

    def body() -> None:
        start = take(block)
        vs = [load(b.add(start, e.const(k * lanes))) for k in range(UNROLL)]
        for v in vs:
            split(v, ones, True)
    e.while_(lambda: b.icmp_signed(">=", b.sub(b.load(read_r), b.load(read_l)), e.const(block)), body)
    e.while_(lambda: b.icmp_signed(">=", b.sub(b.load(read_r), b.load(read_l)), e.const(lanes)),
             lambda: split(load(take(lanes)), ones, False))
    rest = b.sub(b.load(read_r), b.load(read_l))
    valid = e.prefix(rest)
    fill = _splat(e.it, lanes, e.max)
    split([e.masked_load(e.vptr(a, b.load(read_l)), valid, fill) for a in arrays], valid, False)
    for v in aside:
        split(v, ones, False)
    return b.load(write_l)


def _fill(e: _Emitter, out: Any, lo: Any, hi: Any, key: Any) -> None:
    b = e.b
    value = e.values(key)
    i = e.alloca(I64T, lo)

    def body() -> None:
        at = b.load(i)
        b.store(value, b.gep(out, [at], inbounds=True))
        b.store(b.add(at, e.const(1)), i)
    e.while_(lambda: b.icmp_signed("<", b.load(i), hi), body)


def _emit_values(e: _Emitter, src: Any, out: Any, lo: Any, hi: Any) -> None:
    b = e.b
    i = e.alloca(I64T, lo)

    def body() -> None:
        at = b.load(i)
        b.store(e.values(b.load(b.gep(src, [at], inbounds=True))), b.gep(out, [at], inbounds=True))
        b.store(b.add(at, e.const(1)), i)
    e.while_(lambda: b.icmp_signed("<", b.load(i), hi), body)


def _heapsort(e: _Emitter, arrays: list[Any], m: Any) -> None:
    """Heap sort of the m entries at arrays[...] (the fallback past the depth limit)."""
    b = e.b
    root = e.alloca(I64T)
    end = e.alloca(I64T)
    going = e.alloca(I1)

    def get(k: Any) -> list[Any]:
        return [b.load(b.gep(a, [k], inbounds=True)) for a in arrays]

    def put(k: Any, v: list[Any]) -> None:
        for a, c in zip(arrays, v):
            b.store(c, b.gep(a, [k], inbounds=True))

    def sift() -> None:                       # from `root` within [0, end)
        b.store(ll.Constant(I1, 1), going)

        def body() -> None:
            r = b.load(root)
            child = b.add(b.mul(r, e.const(2)), e.const(1))
            stop = b.icmp_signed(">=", child, b.load(end))
            with b.if_else(stop) as (then, otherwise):
                with then:
                    b.store(ll.Constant(I1, 0), going)
                with otherwise:
                    right = b.add(child, e.const(1))
                    has_right = b.icmp_signed("<", right, b.load(end))
                    right_at = b.select(has_right, right, child)
                    use_right = b.and_(has_right, e.less(get(child), get(right_at)))
                    c = b.select(use_right, right, child)
                    rv, cv = get(r), get(c)
                    with b.if_else(e.less(rv, cv)) as (then2, otherwise2):
                        with then2:
                            put(r, cv)
                            put(c, rv)
                            b.store(c, root)
                        with otherwise2:
                            b.store(ll.Constant(I1, 0), going)
        e.while_(lambda: b.load(going), body)

    start = e.alloca(I64T, b.sdiv(m, e.const(2)))
    b.store(m, end)

    def build() -> None:
        s = b.sub(b.load(start), e.const(1))
        b.store(s, start)
        b.store(s, root)
        sift()
    e.while_(lambda: b.icmp_signed(">", b.load(start), e.const(0)), build)

    def extract() -> None:
        last = b.sub(b.load(end), e.const(1))
        first, lv = get(e.const(0)), get(last)
        put(e.const(0), lv)
        put(last, first)
        b.store(last, end)
        b.store(e.const(0), root)
        sift()
    e.while_(lambda: b.icmp_signed(">", b.load(end), e.const(1)), extract)
