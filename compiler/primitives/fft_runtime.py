"""The DFT of rows whose length is known at run time only: ``fft_runtime`` (docs/fft.md).

``fft_runtime(re, im) {sign, keep}`` is the first ``keep`` terms of the unscaled DFT
(``exp(sign 2 pi i jk/n)``) of the complex rows ``re + i im`` [..., n]. fft's decomposition
emits it for a symbolic n (a static n gets code made for that length, compiler/primitives/
fft.py); it exists only after the transforms (fft's own rules batch and differentiate it).

    %y = fft_runtime(%re, %im) {sign=-1, keep=n // 2 + 1} : c128[b, n // 2 + 1]

Its lowering makes the plan when the kernel runs, once per call, and transforms the rows one
after the other; the heavy code is in internal functions, one copy per module and dtype
however many transforms the kernel has (``aotx.fft.plan``, ``.row``, ``.transform``,
``.stockham``, ``.half``, ``aotx.fft.size``):

* the plan: n factored into radices 8, one 4 or 2, then the odd primes 3 to 31; the twiddle
  table ``exp(-2 pi i k/n)`` computed by the kernel (the first TWIDDLE_BLOCK from their
  angles, the others as products of two);
* the passes: Stockham's autosort passes from one buffer to the other, each a switch on the
  radix to a loop nest around the static passes' codelets (``fft._butterfly``) for 8, 4, 2,
  3, 5, a loop over the butterfly's sums for 7 to 31; the loop over the butterflies' stride is
  innermost when it is long enough to vectorize (late passes), the loop over the butterflies
  otherwise (early passes);
* four steps from FOUR_STEP_MIN: the row as a matrix, its columns SLAB at a time through the
  passes, twiddles, its rows, a blocked transpose;
* a length with a prime factor above 31: Bluestein over the whole row, with two transforms of
  the least N = 2^a 3^b 5^c >= 2n - 1; the chirp and the transform of the conjugate chirp are
  computed by the plan, once per call;
* real rows of even length (``real``): the transform of half the length, untangled;
* the other direction as the conjugate of the forward transform of the conjugate.

The kernel's temporaries are one slice of the workspace, sized by the plan at the kernel's
entry (``aotx.fft.size``).
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import numpy as np
from llvmlite import ir as ll

from compiler.ir import dims
from compiler.ir.builder import Builder
from compiler.ir.primitive import define
from compiler.ir.types import F32, F64, TensorType
from compiler.primitives import ops
from compiler.primitives.base import check, emit_while
from compiler.primitives.fft import _butterfly, _complex_of, _Scalars

RADICES = (8, 4, 2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31)   # the plan's radices, in the passes' order
CODELETS = (8, 4, 2, 3, 5)            # radices with a codelet; the others: a loop over the sums
FOUR_STEP_MIN = 1 << 16   # longer rows (radices up to 13) are transformed as a matrix of shorter ones
TWIDDLE_BLOCK = 1024      # twiddles beyond this many are products of two (see _twiddles)
SLAB = 16                 # ... whose columns are transformed this many at a time
INNER_STRIDE = 8          # a pass whose butterflies' stride is at least this loops over it innermost
I64T = ll.IntType(64)
I32T = ll.IntType(32)

Types = tuple[TensorType, ...]


def _rule(in_types: Types, params: dict[str, Any]) -> Types:
    re, im = in_types
    check(re == im and re.dtype in (F32, F64) and re.ndim >= 1,
          "fft_runtime: re, im [..., n] of one real dtype")
    check(params["sign"] in (-1, 1), "fft_runtime: sign is -1 or 1")
    check(not params["real"] or params["sign"] < 0, "fft_runtime: real rows forward only")
    return (TensorType(_complex_of(re.dtype), tuple(re.shape[:-1]) + (params["keep"],)),)


def _ref(re: np.ndarray, im: np.ndarray, sign: int, keep: Any, real: bool = False) -> np.ndarray:
    x = re.astype(np.complex128) + 1j * im
    y = np.fft.fft(x, axis=-1) if sign < 0 else np.fft.ifft(x, axis=-1, norm="forward")
    return y[..., :keep].astype(_complex_of(re.dtype))


def _complex(b: Builder, op: Any, args: list[Any]) -> list[Any]:
    """Real operands, a complex result written by the op's own stores."""
    y = ops.fft_runtime(b, args[0], args[1], op.params["sign"], op.params["keep"], op.params["real"])
    return [(ops.real(b, y), ops.imag(b, y))]


# ---- emission helpers ------------------------------------------------------------------

def _float(dtype: np.dtype) -> ll.Type:
    return ll.DoubleType() if dtype == F64 else ll.FloatType()


class _Mem:
    """Interleaved complex arrays (re at 2k, im at 2k + 1) behind real pointers."""

    def __init__(self, b: ll.IRBuilder) -> None:
        self.b = b

    def at(self, base: Any, k: Any, part: int) -> Any:
        i = self.b.mul(k, ll.Constant(I64T, 2))
        if part:
            i = self.b.add(i, ll.Constant(I64T, 1))
        return self.b.gep(base, [i], inbounds=True)

    def load(self, base: Any, k: Any) -> tuple[Any, Any]:
        return self.b.load(self.at(base, k, 0)), self.b.load(self.at(base, k, 1))

    def store(self, base: Any, k: Any, v: tuple[Any, Any]) -> None:
        self.b.store(v[0], self.at(base, k, 0))
        self.b.store(v[1], self.at(base, k, 1))


def _while(cg: Any, cond: Callable[[], Any], body: Callable[[], None]) -> None:
    emit_while(cg.fn, cg.b, cond, body)


@contextlib.contextmanager
def _inside(cg: Any, fn: ll.Function) -> Iterator[None]:
    """Emit into the internal function `fn` with the kernel's Codegen (its loops and math)."""
    saved = (cg.fn, cg.b, cg.alloca_builder, cg._loop_depth, cg._nest_heights)
    entry = fn.append_basic_block("entry")
    body = fn.append_basic_block("body")
    cg.fn = fn
    cg.b = ll.IRBuilder(body)
    cg.alloca_builder = ll.IRBuilder(entry)      # a block of its own, as the kernel's
    cg._loop_depth, cg._nest_heights = 0, [0]
    try:
        yield
        cg.alloca_builder.branch(body)
    finally:
        cg.fn, cg.b, cg.alloca_builder, cg._loop_depth, cg._nest_heights = saved


# ---- the passes: an internal function per dtype ---------------------------------------

def _stockham(cg: Any, dtype: np.dtype) -> ll.Function:
    """``T* aotx.fft.stockham.<dtype>(T* x, T* y, T* tw, i64 n, i64* radices, i64 count, i64 s0,
    i64 ts)``: the forward DFTs of length n of the s0 interleaved rows of x (element j of row t
    at t + s0 j, complex values interleaved), with ``tw[k] = exp(-2 pi i k/(n s0))`` and ts = s0;
    the passes alternate between x and y; returns the one holding the result (the same layout)."""
    name = f"aotx.fft.stockham.{dtype.name}"
    existing = cg.module.globals.get(name)
    if existing is not None:
        return existing
    ft = _float(dtype)
    p = ft.as_pointer()
    fn = ll.Function(cg.module, ll.FunctionType(p, [p, p, p, I64T, I64T.as_pointer(), I64T, I64T, I64T]), name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    for a in fn.args[:3]:
        a.add_attribute("noalias")
    x0, y0, tw, n, radices, count, s0, ts = fn.args
    with _inside(cg, fn):
        b = cg.b
        slots = [b.alloca(p), b.alloca(p), b.alloca(I64T), b.alloca(I64T)]
        for slot, v in zip(slots, (x0, y0, s0, n)):
            b.store(v, slot)
        with cg.loop(count, vectorize=False, unroll=False) as i:
            radix = b.load(b.gep(radices, [i], inbounds=True))
            x, y, s, length = (b.load(slot) for slot in slots)
            m = b.udiv(length, radix)
            join = fn.append_basic_block("pass.end")
            cases = [(r, fn.append_basic_block(f"radix{r}")) for r in CODELETS]
            generic = fn.append_basic_block("radix.odd")
            switch = b.switch(radix, generic)
            b.position_at_end(generic)
            _odd_pass(cg, dtype, radix, x, y, tw, s, m, b.udiv(b.mul(n, ts), radix))
            cg.b.branch(join)
            for r, block in cases:
                switch.add_case(ll.Constant(I64T, r), block)
                b.position_at_end(block)
                _pass(cg, dtype, r, x, y, tw, s, m)
                cg.b.branch(join)
            b.position_at_end(join)
            b.store(y, slots[0])
            b.store(x, slots[1])
            b.store(b.mul(s, radix), slots[2])
            b.store(m, slots[3])
        b.ret(b.load(slots[0]))
    return fn


def _pass(cg: Any, dtype: np.dtype, r: int, x: Any, y: Any, tw: Any, s: Any, m: Any) -> None:
    """One Stockham pass of radix r: y[t + s (r q + k)] = w^(qk) sum_j x[t + s (q + m j)]
    W_r^(jk), t < s, q < m, w = exp(-2 pi i/(r m)) = tw[s] (the table of the length times the
    first stride: the twiddles' index products are the data's, which LLVM shares; a separate
    twiddle stride made rows of 1024 25% slower)."""
    b = cg.b
    mem = _Mem(b)
    z = _Scalars(cg, dtype)

    def body(q: Any, t: Any) -> None:
        xs = [mem.load(x, b.add(t, b.mul(s, b.add(q, b.mul(m, ll.Constant(I64T, j)))))) for j in range(r)]
        ys = _butterfly(z, xs, -1)
        base = b.mul(s, b.mul(q, ll.Constant(I64T, r)))
        for k, v in enumerate(ys):
            if k:
                v = z.mul(v, mem.load(tw, b.mul(b.mul(q, ll.Constant(I64T, k)), s)))
            mem.store(y, b.add(t, b.add(base, b.mul(s, ll.Constant(I64T, k)))), v)

    inner = b.icmp_unsigned(">=", s, ll.Constant(I64T, INNER_STRIDE))
    strided = cg.fn.append_basic_block(f"radix{r}.strided")
    flat = cg.fn.append_basic_block(f"radix{r}.flat")
    done = cg.fn.append_basic_block(f"radix{r}.done")
    b.cbranch(inner, strided, flat)
    b.position_at_end(strided)                  # late passes: the stride innermost
    with cg.loop(m, vectorize=False, unroll=False) as q:
        with cg.loop(s, unroll=False) as t:
            body(q, t)
    b.branch(done)
    b.position_at_end(flat)                     # early passes: the butterflies innermost, scalar
    with cg.loop(s, vectorize=False, unroll=False) as t:          # (vectorized: their strided
        with cg.loop(m, unroll=False, vectorize=False) as q:      # stores gained nothing, and
            body(q, t)                                            # cost 0.6 s of LLVM per kernel)
    b.branch(done)
    b.position_at_end(done)


def _odd_pass(cg: Any, dtype: np.dtype, r: Any, x: Any, y: Any, tw: Any, s: Any, m: Any, root: Any) -> None:
    """A pass of a radix r known at run time (7 to 31): the butterfly as loops over its
    sums, the roots of unity of order r read from the twiddles (tw[root] = exp(-2 pi i/r))."""
    b = cg.b
    mem = _Mem(b)
    z = _Scalars(cg, dtype)
    ft = _float(dtype)
    acc = [cg.alloca_builder.alloca(ft), cg.alloca_builder.alloca(ft)]
    e = cg.alloca_builder.alloca(I64T)                # j k mod r, kept by additions
    with cg.loop(m, vectorize=False, unroll=False) as q:
        with cg.loop(s, vectorize=False, unroll=False) as t:
            with cg.loop(r, vectorize=False, unroll=False) as k:
                for slot in acc:
                    b.store(ll.Constant(ft, 0.0), slot)
                b.store(ll.Constant(I64T, 0), e)
                with cg.loop(r, vectorize=False, unroll=False) as j:
                    v = mem.load(x, b.add(t, b.mul(s, b.add(q, b.mul(m, j)))))
                    w = mem.load(tw, b.mul(b.load(e), root))
                    nxt = b.add(b.load(e), k)
                    b.store(b.select(b.icmp_signed(">=", nxt, r), b.sub(nxt, r), nxt), e)
                    p = z.mul(v, w)
                    for slot, part in zip(acc, p):
                        b.store(b.fadd(b.load(slot), part), slot)
                total = (b.load(acc[0]), b.load(acc[1]))
                total = z.mul(total, mem.load(tw, b.mul(b.mul(q, k), s)))
                mem.store(y, b.add(t, b.mul(s, b.add(b.mul(r, q), k))), total)


# ---- the kernel's part: plan, tables, rows ---------------------------------------------

def _plan(cg: Any, n: Any, radices: Any) -> tuple[Any, Any]:
    """n's radices into `radices`: (their count, the factor left: 1 when n is planned)."""
    b = cg.b
    count = cg.alloca_scalar(np.dtype(np.int64), ll.Constant(I64T, 0))
    rest = cg.alloca_scalar(np.dtype(np.int64), n)
    for r in RADICES:
        rc = ll.Constant(I64T, r)

        def divisible(rc: Any = rc) -> Any:
            v = b.load(rest)
            return b.and_(b.icmp_signed(">", v, ll.Constant(I64T, 1)),
                          b.icmp_signed("==", b.srem(v, rc), ll.Constant(I64T, 0)))

        def take(rc: Any = rc) -> None:
            c = b.load(count)
            b.store(rc, b.gep(radices, [c], inbounds=True))
            b.store(b.add(c, ll.Constant(I64T, 1)), count)
            b.store(b.sdiv(b.load(rest), rc), rest)

        _while(cg, divisible, take)
    return b.load(count), b.load(rest)


def _to(cg: Any, v: Any, dtype: np.dtype) -> Any:
    return v if dtype == F64 else cg.b.fptrunc(v, ll.FloatType())


def _expi(cg: Any, angle: Any, dtype: np.dtype) -> tuple[Any, Any]:
    """(cos, sin) of a float64 angle, rounded to `dtype`."""
    return _to(cg, cg.vecmath("cos", [angle]), dtype), _to(cg, cg.vecmath("sin", [angle]), dtype)


def _twiddles(cg: Any, tw: Any, length: Any, dtype: np.dtype) -> None:
    """tw[k] = exp(-2 pi i k/length), k < length: the first TWIDDLE_BLOCK from their angles,
    the others as products tw[B h + l] = exp(-2 pi i B h/length) tw[l] (2 sqrt(n) cos and sin
    instead of n: the tables of a long row cost a fraction of a transform)."""
    b = cg.b
    mem = _Mem(b)
    dt = ll.DoubleType()
    block = ll.Constant(I64T, TWIDDLE_BLOCK)
    step = b.fdiv(ll.Constant(dt, -2 * np.pi), b.sitofp(length, dt))
    head = b.select(b.icmp_signed("<", length, block), length, block)
    with cg.loop(head) as k:
        mem.store(tw, k, _expi(cg, b.fmul(b.sitofp(k, dt), step), dtype))
    z = _Scalars(cg, dtype)
    blocks = b.sdiv(b.add(length, b.sub(block, ll.Constant(I64T, 1))), block)
    with cg.loop(blocks, vectorize=False, unroll=False) as h:
        first = b.mul(h, block)
        w = _expi(cg, b.fmul(b.sitofp(first, dt), step), dtype)
        left = b.sub(length, first)
        count = b.select(b.icmp_signed("<", left, block), left, block)
        with cg.loop(b.select(b.icmp_signed("==", h, ll.Constant(I64T, 0)), ll.Constant(I64T, 0), count),
                     unroll=False) as k:
            mem.store(tw, b.add(first, k), z.mul(w, mem.load(tw, k)))


def _function(cg: Any, kind: str, dtype: np.dtype, ret: ll.Type) -> tuple[ll.Function, bool]:
    """The internal function ``aotx.fft.<kind>.<dtype>(T* work, i64 n, i64* plan)`` and
    whether it still needs a body."""
    name = f"aotx.fft.{kind}.{dtype.name}"
    existing = cg.module.globals.get(name)
    if existing is not None:
        return existing, False
    p = _float(dtype).as_pointer()
    fn = ll.Function(cg.module, ll.FunctionType(ret, [p, I64T, I64T.as_pointer()]), name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")           # one copy, called by every op of the module
    return fn, True


def _areas(b: ll.IRBuilder, work: Any, n: Any, big: Any) -> list[Any]:
    """The work area's parts, u = N (Bluestein) or n: two buffers of u complex values, the
    twiddles of u, Bluestein's kernel (u) or the four steps' slabs, Bluestein's chirp (n):
    real offsets 0, 2u, 4u, 6u, 8u (the sizes: _size_function)."""
    u = b.select(b.icmp_signed("==", big, ll.Constant(I64T, 0)), n, big)
    return [b.gep(work, [b.mul(u, ll.Constant(I64T, 2 * i))], inbounds=True) for i in range(5)]


def _split(cg: Any, n: Any, plan: Any, count: Any) -> tuple[Any, Any, Any, Any, Any]:
    """The four steps' matrix [n1, n2] of a planned n: (n1, n2, the radices of n2, whether
    the four steps apply, the slabs' width in complex values)."""
    b = cg.b
    one = ll.Constant(I64T, 1)
    slab = ll.Constant(I64T, SLAB)
    half = b.sdiv(b.add(count, one), ll.Constant(I64T, 2))
    n2_slot = cg.alloca_scalar(np.dtype(np.int64), one)      # the rows: the first radices (8s)
    with cg.loop(half, vectorize=False, unroll=False) as i:
        b.store(b.mul(b.load(n2_slot), b.load(b.gep(plan, [i], inbounds=True))), n2_slot)
    n2 = b.load(n2_slot)
    n1 = b.sdiv(n, n2)
    large = b.and_(b.icmp_signed(">=", n, ll.Constant(I64T, FOUR_STEP_MIN)),
                   b.icmp_signed("==", b.srem(n2, slab), ll.Constant(I64T, 0)))
    width = b.select(b.icmp_signed(">", b.mul(n1, slab), n2), b.mul(n1, slab), n2)
    return n1, n2, half, large, width


def _size_function(cg: Any) -> ll.Function:
    """``i64 aotx.fft.size(i64 n, i64* plan)``: the real values of the work area for rows of
    length n: 6n + the four steps' scratch (_slab_values) when the radices plan n, 8N + 2n +
    the four steps' scratch of N for Bluestein."""
    name = "aotx.fft.size"
    existing = cg.module.globals.get(name)
    if existing is not None:
        return existing
    fn = ll.Function(cg.module, ll.FunctionType(I64T, [I64T, I64T.as_pointer()]), name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    n, plan = fn.args
    with _inside(cg, fn):
        b = cg.b
        count, rest = _plan(cg, n, plan)
        direct = fn.append_basic_block("direct")
        blue = fn.append_basic_block("bluestein")
        b.cbranch(b.icmp_signed("<=", rest, ll.Constant(I64T, 1)), direct, blue)
        b.position_at_end(direct)
        n1, n2, _, large, width = _split(cg, n, plan, count)
        slabs = b.select(large, _slab_values(cg, n1, n2, width), ll.Constant(I64T, 0))
        b.ret(b.add(b.add(b.mul(n, ll.Constant(I64T, 6)), slabs), ll.Constant(I64T, 16)))
        b.position_at_end(blue)
        big = _bluestein_length(cg, n)
        big_count, _ = _plan(cg, big, plan)
        n1, n2, _, large, width = _split(cg, big, plan, big_count)
        slabs = b.select(large, _slab_values(cg, n1, n2, width), ll.Constant(I64T, 0))
        b.ret(b.add(b.add(b.add(b.mul(big, ll.Constant(I64T, 8)), b.mul(n, ll.Constant(I64T, 2))), slabs),
                    ll.Constant(I64T, 16)))
    return fn


def _slab_values(cg: Any, n1: Any, n2: Any, width: Any) -> Any:
    """The four steps' scratch, in real values: two slabs of `width` complex values, the
    tables of the columns' (16 n1) and the rows' (n2) transforms."""
    b = cg.b
    return b.add(b.mul(width, ll.Constant(I64T, 4)),
                 b.add(b.mul(n1, ll.Constant(I64T, 2 * SLAB)), b.mul(n2, ll.Constant(I64T, 2))))


def _bluestein_length(cg: Any, n: Any) -> Any:
    """N: the least 2^a 3^b 5^c >= 2n - 1 (fft.good_length, searched when the kernel runs)."""
    b = cg.b
    i64 = np.dtype(np.int64)

    def c(v: int) -> ll.Constant:
        return ll.Constant(I64T, v)

    ctlz = cg.module.declare_intrinsic("llvm.ctlz", [I64T], ll.FunctionType(I64T, [I64T, ll.IntType(1)]))
    target = b.sub(b.mul(n, c(2)), c(1))
    span = b.sub(target, c(1))
    best = cg.alloca_scalar(i64, b.shl(c(1), b.sub(c(64), b.call(ctlz, [span, ll.Constant(ll.IntType(1), 0)]))))
    f5 = cg.alloca_scalar(i64, c(1))
    f35 = cg.alloca_scalar(i64, c(1))
    p = cg.alloca_scalar(i64, c(1))

    def fives() -> None:
        b.store(b.load(f5), f35)

        def threes() -> None:
            b.store(b.load(f35), p)
            _while(cg, lambda: b.icmp_signed("<", b.load(p), target), lambda: b.store(b.mul(b.load(p), c(2)), p))
            v, old = b.load(p), b.load(best)
            b.store(b.select(b.icmp_signed("<", v, old), v, old), best)
            b.store(b.mul(b.load(f35), c(3)), f35)

        _while(cg, lambda: b.icmp_signed("<", b.load(f35), b.load(best)), threes)
        b.store(b.mul(b.load(f5), c(5)), f5)

    _while(cg, lambda: b.icmp_signed("<", b.load(f5), b.load(best)), fives)
    return b.load(best)


def _plan_function(cg: Any, dtype: np.dtype) -> ll.Function:
    """``void aotx.fft.plan.<dtype>(T* work, i64 n, i64* plan)``: plan[0:count] the radices
    of n (or of Bluestein's N), plan[64] their count, plan[65] N (0: no Bluestein); the
    twiddles, and for Bluestein the chirp exp(-i pi k^2/n) and the scaled transform of its
    conjugate, in the work area."""
    fn, new = _function(cg, "plan", dtype, ll.VoidType())
    if not new:
        return fn
    work, n, plan = fn.args
    ft = _float(dtype)
    with _inside(cg, fn):
        b = cg.b
        mem = _Mem(b)
        count_at = b.gep(plan, [ll.Constant(I64T, 64)], inbounds=True)
        big_at = b.gep(plan, [ll.Constant(I64T, 65)], inbounds=True)
        count, rest = _plan(cg, n, plan)
        b.store(count, count_at)
        b.store(ll.Constant(I64T, 0), big_at)
        planned = b.icmp_signed("<=", rest, ll.Constant(I64T, 1))
        replan = fn.append_basic_block("bluestein.plan")
        tables = fn.append_basic_block("twiddles")
        b.cbranch(planned, tables, replan)
        b.position_at_end(replan)
        big = _bluestein_length(cg, n)
        big_count, _ = _plan(cg, big, plan)                 # N >= 2n - 1, a power of two
        b.store(big_count, count_at)
        b.store(big, big_at)
        b.branch(tables)
        b.position_at_end(tables)
        big = b.load(big_at)
        a_buf, b_buf, tw, kern, chirp = _areas(b, work, n, big)
        _twiddles(cg, tw, b.select(planned, n, big), dtype)
        blue = fn.append_basic_block("bluestein")
        done = fn.append_basic_block("done")
        b.cbranch(planned, done, blue)
        b.position_at_end(done)
        b.ret_void()
        b.position_at_end(blue)
        big_count = b.load(count_at)
        two_n = b.mul(n, ll.Constant(I64T, 2))
        unit = b.fdiv(ll.Constant(ll.DoubleType(), -np.pi), b.sitofp(n, ll.DoubleType()))
        with cg.loop(n) as k:                                # k^2 mod 2n exactly
            k2 = b.urem(b.mul(k, k), two_n)
            mem.store(chirp, k, _expi(cg, b.fmul(b.sitofp(k2, ll.DoubleType()), unit), dtype))
        zero = ll.Constant(ft, 0.0)
        with cg.loop(big) as k:                              # conj(w[|k|]) for |k| < n, else 0
            kk = b.select(b.icmp_signed("<", k, b.sub(big, k)), k, b.sub(big, k))
            inside = b.icmp_signed("<", kk, n)
            c = mem.load(chirp, b.select(inside, kk, ll.Constant(I64T, 0)))
            mem.store(a_buf, k, (b.select(inside, c[0], zero), b.select(inside, b.fneg(c[1]), zero)))
        slabs = b.gep(chirp, [b.mul(n, ll.Constant(I64T, 2))], inbounds=True)
        spec = b.call(_transform_function(cg, dtype), [a_buf, b_buf, tw, slabs, big, plan, big_count])
        scale = b.fdiv(ll.Constant(ft, 1.0), b.uitofp(big, ft))
        with cg.loop(big) as k:
            v = mem.load(spec, k)
            mem.store(kern, k, (b.fmul(v[0], scale), b.fmul(v[1], scale)))
        b.ret_void()
    return fn


def _transform_function(cg: Any, dtype: np.dtype) -> ll.Function:
    """``T* aotx.fft.transform.<dtype>(T* x, T* y, T* tw, T* free, i64 n, i64* plan, i64 count)``:
    the forward DFT of x (planned n, tw of n, `free` the four steps' slabs, _split), x and y
    its buffers; returns the one holding the result."""
    name = f"aotx.fft.transform.{dtype.name}"
    existing = cg.module.globals.get(name)
    if existing is not None:
        return existing
    p = _float(dtype).as_pointer()
    fn = ll.Function(cg.module, ll.FunctionType(p, [p, p, p, p, I64T, I64T.as_pointer(), I64T]), name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    for a in fn.args[:4]:
        a.add_attribute("noalias")
    x, y, tw, free, n, plan, count = fn.args
    stockham = _stockham(cg, dtype)
    with _inside(cg, fn):
        _direct(cg, dtype, stockham, x, y, tw, free, n, plan, count)
    return fn


def _row_function(cg: Any, dtype: np.dtype) -> ll.Function:
    """``T* aotx.fft.row.<dtype>(T* work, i64 n, i64* plan)``: the forward DFT of the row in
    the work area's first buffer (n complex values), by the plan of _plan_function; returns
    where the result is. Bluestein: X[k] = w[k] sum_j x[j] w[j] conj(w[k - j]), the
    convolution through two transforms of N (the inverse as the conjugate of a forward)."""
    p = _float(dtype).as_pointer()
    fn, new = _function(cg, "row", dtype, p)
    if not new:
        return fn
    work, n, plan = fn.args
    ft = _float(dtype)
    transform = _transform_function(cg, dtype)
    with _inside(cg, fn):
        b = cg.b
        mem = _Mem(b)
        z = _Scalars(cg, dtype)
        count = b.load(b.gep(plan, [ll.Constant(I64T, 64)], inbounds=True))
        big = b.load(b.gep(plan, [ll.Constant(I64T, 65)], inbounds=True))
        a_buf, b_buf, tw, kern, chirp = _areas(b, work, n, big)
        direct = fn.append_basic_block("direct")
        blue = fn.append_basic_block("bluestein")
        b.cbranch(b.icmp_signed("==", big, ll.Constant(I64T, 0)), direct, blue)
        b.position_at_end(direct)
        b.ret(b.call(transform, [a_buf, b_buf, tw, kern, n, plan, count]))

        b.position_at_end(blue)
        zero = ll.Constant(ft, 0.0)
        with cg.loop(n) as j:
            mem.store(a_buf, j, z.mul(mem.load(a_buf, j), mem.load(chirp, j)))
        with cg.loop(b.sub(big, n)) as j:
            mem.store(a_buf, b.add(n, j), (zero, zero))
        slabs = b.gep(chirp, [b.mul(n, ll.Constant(I64T, 2))], inbounds=True)     # after the chirp
        first = b.call(transform, [a_buf, b_buf, tw, slabs, big, plan, count])
        with cg.loop(big) as j:
            v = z.mul(mem.load(first, j), mem.load(kern, j))
            mem.store(first, j, (v[0], b.fneg(v[1])))
        other = b.select(b.icmp_unsigned("==", first, a_buf), b_buf, a_buf)
        conv = b.call(transform, [first, other, tw, slabs, big, plan, count])
        with cg.loop(n) as k:
            v = mem.load(conv, k)
            mem.store(conv, k, z.mul((v[0], b.fneg(v[1])), mem.load(chirp, k)))
        b.ret(conv)
    return fn


def _half_function(cg: Any, dtype: np.dtype) -> ll.Function:
    """``void aotx.fft.half.<dtype>(T* work, i64 h, i64* plan)``: exp(-2 pi i k/2h), k <= h,
    at real offset plan[66] of the work area (real rows of length 2h, see _lower)."""
    fn, new = _function(cg, "half", dtype, ll.VoidType())
    if not new:
        return fn
    work, h, plan = fn.args
    with _inside(cg, fn):
        b = cg.b
        table = b.gep(work, [b.load(b.gep(plan, [ll.Constant(I64T, 66)], inbounds=True))], inbounds=True)
        step = b.fdiv(ll.Constant(ll.DoubleType(), -np.pi), b.sitofp(h, ll.DoubleType()))
        with cg.loop(b.add(h, ll.Constant(I64T, 1))) as k:
            _Mem(b).store(table, k, _expi(cg, b.fmul(b.sitofp(k, ll.DoubleType()), step), dtype))
        b.ret_void()
    return fn


def _direct(cg: Any, dtype: np.dtype, stockham: Any, a_buf: Any, b_buf: Any, tw: Any, free: Any, n: Any,
            plan: Any, count: Any) -> None:
    """Return the transform of a_buf by the passes; from FOUR_STEP_MIN on, as the four steps:
    x[n2 j1 + j2] as a matrix [n1, n2] (n2 the product of the first half of the radices), its
    columns transformed SLAB at a time in a small buffer (the passes' stride is the slab's
    width), times the twiddles w^(j2 k1), into b_buf; then each row, its result k2 written to
    X[k1 + n1 k2] in a_buf. `free`: the scratch of _slab_values (slabs, and the twiddles of
    the columns' and the rows' transforms: the passes read a table of their own length)."""
    b = cg.b
    mem = _Mem(b)
    z = _Scalars(cg, dtype)
    one = ll.Constant(I64T, 1)
    slab = ll.Constant(I64T, SLAB)
    n1, n2, half, large, width = _split(cg, n, plan, count)
    steps = cg.fn.append_basic_block("four.steps")
    plain = cg.fn.append_basic_block("passes")
    b.cbranch(large, steps, plain)
    b.position_at_end(plain)
    b.ret(b.call(stockham, [a_buf, b_buf, tw, n, plan, count, one, one]))

    b.position_at_end(steps)
    s_a = free
    s_b = b.gep(free, [b.mul(width, ll.Constant(I64T, 2))], inbounds=True)
    t1 = b.gep(free, [b.mul(width, ll.Constant(I64T, 4))], inbounds=True)     # the columns' table (16 n1)
    t2 = b.gep(t1, [b.mul(b.mul(n1, slab), ll.Constant(I64T, 2))], inbounds=True)   # the rows' (n2)
    _twiddles(cg, t1, b.mul(n1, slab), dtype)
    _twiddles(cg, t2, n2, dtype)
    with cg.loop(b.sdiv(n2, slab), vectorize=False, unroll=False) as c0:
        first = b.mul(c0, slab)
        with cg.loop(n1, vectorize=False, unroll=False) as j1:
            row = b.add(b.mul(j1, n2), first)
            with cg.loop(slab, unroll=False) as w:
                mem.store(s_a, b.add(w, b.mul(slab, j1)), mem.load(a_buf, b.add(row, w)))
        res = b.call(stockham, [s_a, s_b, t1, n1, b.gep(plan, [half], inbounds=True), b.sub(count, half), slab, slab])
        with cg.loop(n1, vectorize=False, unroll=False) as k1:
            row = b.add(b.mul(k1, n2), first)
            with cg.loop(slab, unroll=False) as w:
                j2 = b.add(first, w)
                v = z.mul(mem.load(res, b.add(w, b.mul(slab, k1))), mem.load(tw, b.mul(j2, k1)))
                mem.store(b_buf, b.add(row, w), v)
    with cg.loop(n1, vectorize=False, unroll=False) as k1:
        row_at = b.gep(b_buf, [b.mul(b.mul(k1, n2), ll.Constant(I64T, 2))], inbounds=True)
        res = b.call(stockham, [row_at, s_a, t2, n2, plan, half, one, one])
        moved = cg.fn.append_basic_block("row.moved")
        back = cg.fn.append_basic_block("row.back")
        b.cbranch(b.icmp_unsigned("==", res, row_at), moved, back)
        b.position_at_end(back)
        with cg.loop(n2, unroll=False) as k2:
            mem.store(row_at, k2, mem.load(res, k2))
        b.branch(moved)
        b.position_at_end(moved)
    # X[k1 + n1 k2] = b_buf[n2 k1 + k2]: a transpose in column blocks of SLAB (no 4 KB strides)
    with cg.loop(b.sdiv(n2, slab), vectorize=False, unroll=False) as kb:
        first = b.mul(kb, slab)
        with cg.loop(n1, vectorize=False, unroll=False) as k1:
            with cg.loop(slab, unroll=False) as w:
                k2 = b.add(first, w)
                mem.store(a_buf, b.add(k1, b.mul(n1, k2)), mem.load(b_buf, b.add(b.mul(k1, n2), k2)))
    b.ret(a_buf)


def _lower(cg: Any, op: Any, outs: list[Any]) -> None:
    """Per call: the plan and its tables (once); per row: the row into the work area
    (conjugated for the inverse direction), the forward transform, the first keep terms out."""
    n = op.operands[0].type.shape[-1]
    dtype = np.dtype(op.operands[0].type.dtype)
    b = cg.b
    nv = cg.dim(n)
    entry = cg.alloca_builder                 # the count in the entry block; a negative n
    at_entry = cg.entry_dim(n)                # (an empty axis fails a check later) counts as 0
    at_entry = entry.select(entry.icmp_signed("<", at_entry, ll.Constant(I64T, 0)), ll.Constant(I64T, 0), at_entry)
    plan = entry.alloca(I64T, size=ll.Constant(I32T, 67))
    size = _size_function(cg)
    need = entry.call(size, [at_entry, plan])
    if op.params["real"]:                     # the half table after the work of length h
        h = entry.sdiv(at_entry, ll.Constant(I64T, 2))
        at = entry.call(size, [h, plan])
        entry.store(at, entry.gep(plan, [ll.Constant(I64T, 66)], inbounds=True))
        total = entry.add(at, entry.add(entry.mul(h, ll.Constant(I64T, 2)), ll.Constant(I64T, 2)))
        need = entry.select(entry.icmp_signed(">", total, need), total, need)
    work = cg.scratch(dtype, need)
    skip = cg.fn.append_basic_block("fft.empty")
    run = cg.fn.append_basic_block("fft.run")
    b.cbranch(b.icmp_signed(">", nv, ll.Constant(I64T, 0)), run, skip)
    b.position_at_end(run)
    row_fn = _row_function(cg, dtype)
    if op.params["real"]:
        _real_rows(cg, op, outs, work, plan, row_fn)
    else:
        _complex_rows(cg, op, outs, work, plan, row_fn)
    b.branch(skip)
    b.position_at_end(skip)


def _complex_rows(cg: Any, op: Any, outs: list[Any], work: Any, plan: Any, row_fn: Any) -> None:
    re, im = op.operands
    *batch, n = re.type.shape
    keep, sign = op.params["keep"], op.params["sign"]
    dtype = np.dtype(re.type.dtype)
    out = outs[0]
    b = cg.b
    mem = _Mem(b)
    rows_d: Any = 1
    for d in batch:
        rows_d = dims.mul(rows_d, d)
    nv, keepv, rows = cg.dim(n), cg.dim(keep), cg.dim(rows_d)
    inverse = sign > 0

    def conj(v: tuple[Any, Any]) -> tuple[Any, Any]:
        return (v[0], b.fneg(v[1])) if inverse else v

    b.call(_plan_function(cg, dtype), [work, nv, plan])
    with cg.loop(rows, vectorize=False, unroll=False) as row:
        idx = cg.delinearize(row, batch) if batch else []
        with cg.loop(nv, vectorize=False, unroll=False) as j:     # scalar: small code, and
            mem.store(work, j, conj((cg.read(re, idx + [j]), cg.read(im, idx + [j]))))
        res = b.call(row_fn, [work, nv, plan])
        with cg.loop(keepv, vectorize=False, unroll=False) as k:  # n log n work in between
            cg.store(out, idx + [k], cg.complex_value(out.dtype, *conj(mem.load(res, k))))


def _real_rows(cg: Any, op: Any, outs: list[Any], work: Any, plan: Any, row_fn: Any) -> None:
    """Real rows of even length n = 2h: the transform Z of length h of z = x[0::2] + i x[1::2],
    then X[k] = (Z[k] + conj(Z[h-k]))/2 - i/2 exp(-2 pi i k/n) (Z[k] - conj(Z[h-k])) for
    k <= h, and X[n - k] = conj(X[k]) beyond; an odd n as complex rows."""
    re = op.operands[0]
    *batch, n = re.type.shape
    dtype = np.dtype(re.type.dtype)
    out = outs[0]
    b = cg.b
    mem = _Mem(b)
    z = _Scalars(cg, dtype)
    ft = _float(dtype)
    rows_d: Any = 1
    for d in batch:
        rows_d = dims.mul(rows_d, d)
    nv, keepv, rows = cg.dim(n), cg.dim(op.params["keep"]), cg.dim(rows_d)
    half = cg.fn.append_basic_block("fft.half")
    odd = cg.fn.append_basic_block("fft.odd")
    done = cg.fn.append_basic_block("fft.real.done")
    b.cbranch(b.icmp_signed("==", b.srem(nv, ll.Constant(I64T, 2)), ll.Constant(I64T, 0)), half, odd)
    b.position_at_end(odd)
    _complex_rows(cg, op, outs, work, plan, row_fn)
    b.branch(done)
    b.position_at_end(half)
    h = b.sdiv(nv, ll.Constant(I64T, 2))
    b.call(_plan_function(cg, dtype), [work, h, plan])
    b.call(_half_function(cg, dtype), [work, h, plan])
    table = b.gep(work, [b.load(b.gep(plan, [ll.Constant(I64T, 66)], inbounds=True))], inbounds=True)
    c_half = ll.Constant(ft, 0.5)
    with cg.loop(rows, vectorize=False, unroll=False) as row:
        idx = cg.delinearize(row, batch) if batch else []
        with cg.loop(h, vectorize=False, unroll=False) as j:
            at = b.mul(j, ll.Constant(I64T, 2))
            mem.store(work, j, (cg.read(re, idx + [at]), cg.read(re, idx + [b.add(at, ll.Constant(I64T, 1))])))
        zs = b.call(row_fn, [work, h, plan])
        with cg.loop(keepv, vectorize=False, unroll=False) as k:
            beyond = b.icmp_signed(">", k, h)
            kk = b.select(beyond, b.sub(nv, k), k)                      # k <= h
            at = b.select(b.icmp_signed("==", kk, h), ll.Constant(I64T, 0), kk)
            back = b.select(b.icmp_signed("==", kk, ll.Constant(I64T, 0)), ll.Constant(I64T, 0), b.sub(h, kk))
            zk = mem.load(zs, at)
            zm = mem.load(zs, back)
            zm = (zm[0], b.fneg(zm[1]))                                   # conj(Z[h - k])
            total, diff = z.add(zk, zm), z.sub(zk, zm)
            w = mem.load(table, kk)
            t = z.mul((b.fmul(c_half, w[1]), b.fneg(b.fmul(c_half, w[0]))), diff)   # -i/2 w (Z - conj)
            x = z.add((b.fmul(c_half, total[0]), b.fmul(c_half, total[1])), t)
            x = (x[0], b.select(beyond, b.fneg(x[1]), x[1]))
            cg.store(out, idx + [k], cg.complex_value(out.dtype, *x))
    b.branch(done)
    b.position_at_end(done)


fft_runtime = define(
    ops.fft_runtime_p,
    shape_rule=_rule,
    numpy_ref=_ref,
    lower=_lower,
    complex_rule=_complex,
    streams_operands=False,
    doc="the DFT of rows of a length known at run time (made by fft's decomposition of a symbolic length)",
)
