"""Circular functions sin, cos, tan with correct reduction of arguments up to 1.8e308.

Reduction: x = n*(pi/2) + r, |r| <= pi/4, r carried as a double-double (rh, rl).

* Fast path (|x| < 2^40 with FMA, < 2^20 without): Cody-Waite with pi/2 split in three
  doubles. With FMA, x - n*C1 is exact for every n (both sides are multiples of 2^-52 and
  the difference is < 1) and n*C2 is formed exactly by 2MultFMA; without FMA, pi/2 is split
  into 32-bit chunks so every n*Ci is exact (Cody & Waite 1980; Muller, "Elementary
  Functions", 3rd ed., sec. 11.2). The worst case |r| for binary64 is ~2^-61 (Muller, table
  11.1), so 159 bits of pi/2 keep r accurate to ~2^-110 relative.
* Slow path (scalar, only for lanes that need it): Payne-Hanek with integer arithmetic. The
  192-bit window of 2/pi that matters for x's exponent is taken from a table of 64-bit words,
  multiplied by x's 53-bit integer mantissa (three 64x64->128 products, summed in three
  64-bit words), the two quadrant bits are read off, and the remaining 190-bit fraction is
  normalised and converted to a double-double (M. Payne & R. Hanek, "Radian reduction for
  trigonometric functions", SIGNUM 1983; K. C. Ng, "Argument reduction for huge arguments:
  good to the last bit", Sun 1992).

Evaluation: minimax polynomials sin(r) = r + r^3 S(r^2), cos(r) = 1 - r^2/2 + r^4 C(r^2) on
[-pi/4, pi/4] (fdlibm's structure, our coefficients), with the rl correction terms, quadrant
selected by n mod 4. tan = sin/cos or -cos/sin with a double-double division.

float32: with FMA the same algorithm natively in binary32 for |x| < 2^16 (pi/2 in three
floats); larger |x| (and targets without FMA) use the binary64 algorithm with shorter
polynomials, rounded once at the end.

sin and cos skip the rounding-error terms of rh^2 and rh^3 that only tan needs (0.05 ULP).
Measured max error (>= 1e6 points incl. |x| up to 1.8e308, docs/vecmath.md): sin 0.84 /
0.76 ULP, cos 0.83 / 0.78 ULP, tan 0.90 / 0.81 ULP (float64 / float32), with or without FMA.
Special values: sin/tan(+-0) = +-0, subnormals exact, cos(+-0) = 1, +-inf and nan -> nan.

The functions are emitted as a scalar function with explicit vector variants (see
:mod:`compiler.backend.vecmath._define`), one of which, at the target's natural width, has
a body: it evaluates the fast path on all lanes and calls the scalar slow path (the
Payne-Hanek function ``aotx_vm_pio2_huge``, one per module, shared by sin, cos and tan, then
the binary64 evaluation) only for lanes with |x| above the threshold.
"""
from __future__ import annotations

import llvmlite.ir as ir

from compiler.backend.vecmath._define import vector_mapped_function
from compiler.backend.vecmath._emit import F64, Em, _h

SIN_F64 = (_h("-0x1.5555555555555p-3"), _h("0x1.1111111110ba4p-7"), _h("-0x1.a01a019e80c3cp-13"),
           _h("0x1.71de37933a670p-19"), _h("-0x1.ae6007ed37fb2p-26"), _h("0x1.5e0a18910c179p-33"))
COS_F64 = (_h("0x1.5555555555555p-5"), _h("-0x1.6c16c16c16962p-10"), _h("0x1.a01a019f4db95p-16"),
           _h("-0x1.27e4fa16bf9cdp-22"), _h("0x1.1eeb67e1462b1p-29"), _h("-0x1.907cf6b4ae3cap-37"))
# accurate to ~2^-32 relative: enough for float32 results computed in binary64
SIN_LOWP = (_h("-0x1.555555545a9dbp-3"), _h("0x1.11110de8e8d6cp-7"), _h("-0x1.a013a0c312a02p-13"),
            _h("0x1.6dbc2dd2e7350p-19"))
COS_LOWP = (_h("0x1.5555555502129p-5"), _h("-0x1.6c16bf523083ep-10"), _h("0x1.a015c187065b6p-16"),
            _h("-0x1.25237ef649cacp-22"))

SIN_F32 = (_h("-0x1.555556p-3"), _h("0x1.11110ep-7"), _h("-0x1.a013a0p-13"), _h("0x1.6dbc2ep-19"))
COS_F32 = (_h("0x1.555556p-5"), _h("-0x1.6c16c0p-10"), _h("0x1.a015c2p-16"), _h("-0x1.25237ep-22"))

TWO_OVER_PI = _h("0x1.45f306dc9c883p-1")
PIO2_F32 = (_h("0x1.921fb6p+0"), _h("-0x1.777a5cp-25"), _h("-0x1.ee59dap-50"))
PIO2_FMA = (_h("0x1.921fb54442d18p+0"), _h("0x1.1a62633145c07p-54"), _h("-0x1.f1976b7ed8fbcp-110"))
PIO2_CHUNKS = (_h("0x1.921fb54400000p+0"), _h("0x1.0b4611a600000p-34"),
               _h("0x1.3198a2e000000p-69"), _h("0x1.b839a252049c1p-104"))
PIO2_DD = (_h("0x1.921fb54442d18p+0"), _h("0x1.1a62633145c07p-54"))

# 2/pi in 64-bit words, bits 1..1216 after the binary point, preceded by one zero word so
# that windows starting up to 63 bits before the point need no special case.
TWO_OVER_PI_WORDS = (
    0x0000000000000000, 0xA2F9836E4E441529, 0xFC2757D1F534DDC0, 0xDB6295993C439041,
    0xFE5163ABDEBBC561, 0xB7246E3A424DD2E0, 0x06492EEA09D1921C, 0xFE1DEB1CB129A73E,
    0xE88235F52EBB4484, 0xE99C7026B45F7E41, 0x3991D639835339F4, 0x9C845F8BBDF9283B,
    0x1FF897FFDE05980F, 0xEF2F118B5A0A6D1F, 0x6D367ECF27CB09B7, 0x4F463F669E5FEA2D,
    0x7527BAC7EBE5F17B, 0x3D0739F78A5292EA, 0x6BFB5FB11F8D5D08, 0x56033046FC7B6BAB,
)


def fast_threshold(em: Em) -> float:
    """Largest |x| the vector fast path handles (beyond it: the scalar slow path)."""
    if em.fmt.name == "f32":
        return 2.0 ** 16 if em.has_fma else 2.0 ** 20
    return 2.0 ** 40 if em.has_fma else 2.0 ** 20


# -- reduction ----------------------------------------------------------------------------------
def reduce_fast(em: Em, x):
    """(n as int, rh, rl) with x = n*pi/2 + rh + rl, for |x| < fast_threshold.

    binary64 (with or without FMA) or binary32 with FMA (pi/2 in three floats; the
    worst |r| for float |x| < 2^17 is 2^-27.8, measured over all n).
    """
    f32 = em.fmt.name == "f32"
    n, k = em.round_mul_to_int(x, TWO_OVER_PI)
    if em.has_fma:
        c1, c2, c3 = PIO2_F32 if f32 else PIO2_FMA
        t1 = em.fma(em.neg(n), em.c(c1), x)  # exact, see module docstring
        p, pe = em.two_prod(n, em.c(c2))
        rh, e = em.two_sum(t1, em.neg(p))
        rl = em.sub(em.sub(e, pe), em.mul(n, em.c(c3)))
        return k, rh, rl
    t1 = em.sub(x, em.mul(n, em.c(PIO2_CHUNKS[0])))  # product exact, difference Sterbenz
    s1, e1 = em.two_sum(t1, em.neg(em.mul(n, em.c(PIO2_CHUNKS[1]))))
    rh, e2 = em.two_sum(s1, em.neg(em.mul(n, em.c(PIO2_CHUNKS[2]))))
    rl = em.sub(em.add(e1, e2), em.mul(n, em.c(PIO2_CHUNKS[3])))
    return k, rh, rl


def reduce_huge(em: Em, x):
    """Payne-Hanek: (n as i64, rh, rl) for finite scalar binary64 |x| >= 2^-10.

    The 192-bit product is kept in three 64-bit words (w2 the top one) with explicit carries:
    LLVM takes several times longer to optimize and select 192-bit integer arithmetic."""
    b, i64, i128 = em.b, ir.IntType(64), ir.IntType(128)
    ix = b.and_(em.bits(x), em.ci(0x7FFFFFFFFFFFFFFF))
    mant = b.or_(b.and_(ix, em.ci((1 << 52) - 1)), em.ci(1 << 52))
    pos = b.sub(b.lshr(ix, em.ci(52)), em.ci(1075 + 1 - 63))  # window start bit, padded
    words = _words_table(b.module)
    idx = b.lshr(pos, em.ci(6))
    shift = b.and_(pos, em.ci(63))
    w = [b.load(b.gep(words, [ir.Constant(i64, 0), b.add(idx, em.ci(j))], source_etype=words.value_type), typ=i64)
         for j in range(4)]
    fshl = _intrinsic(b.module, "llvm.fshl.i64", i64, [i64, i64, i64])
    v0, v1, v2 = (b.call(fshl, [w[j], w[j + 1], shift]) for j in range(3))

    def wide_mul(v):            # mant * v as (high word, low word)
        p = b.mul(b.zext(mant, i128), b.zext(v, i128))
        return b.trunc(b.lshr(p, ir.Constant(i128, 64)), i64), b.trunc(p, i64)
    hi1, lo1 = wide_mul(v1)
    hi2, lo2 = wide_mul(v2)
    # R = mant*v0 * 2^128 + mant*v1 * 2^64 + mant*v2 (mod 2^192), + 2^189 to round n
    w1 = b.add(hi2, lo1)
    carry = b.zext(b.icmp_unsigned("<", w1, lo1), i64)
    w2 = b.add(b.add(b.add(b.mul(mant, v0), hi1), carry), em.ci(1 << 61))
    # x*2/pi mod 4 = R * 2^-190: n the top two bits, the rest a signed fraction F
    n = b.lshr(w2, em.ci(62))
    f2 = b.sub(b.and_(w2, em.ci((1 << 62) - 1)), em.ci(1 << 61))
    f_hi, f_lo = _words_to_dd(em, f2, w1, lo2)
    rh, rl = em.dd_mul(f_hi, f_lo, em.c(PIO2_DD[0]), em.c(PIO2_DD[1]))
    rh, rl = em.fast_two_sum(rh, rl)
    neg = b.icmp_signed("<", em.bits(x), em.ci(0))
    n = b.select(neg, b.sub(em.ci(0), n), n)
    return n, em.sel(neg, em.neg(rh), rh), em.sel(neg, em.neg(rl), rl)


def _words_to_dd(em: Em, f2, f1, f0):
    """The signed 192-bit integer F = f2*2^128 + f1*2^64 + f0 (f2 signed, |F| < 2^189,
    F != 0) as a double-double F * 2^-190."""
    b, i64 = em.b, ir.IntType(64)
    zero = em.ci(0)
    neg = b.icmp_signed("<", f2, zero)
    # |F|: the two's complement negation of the three words when F < 0
    n0 = b.sub(zero, f0)
    borrow0 = b.zext(b.icmp_unsigned("!=", f0, zero), i64)
    n1 = b.sub(b.sub(zero, f1), borrow0)
    borrow1 = b.zext(b.or_(b.icmp_unsigned("!=", f1, zero), b.icmp_unsigned("!=", f0, zero)), i64)
    n2 = b.sub(b.sub(zero, f2), borrow1)
    m2, m1, m0 = (b.select(neg, nv, fv) for nv, fv in ((n2, f2), (n1, f1), (n0, f0)))
    # normalize: whole-word shifts while the top word is zero, then a funnel shift
    lz_base = zero
    for _ in range(2):
        empty = b.icmp_unsigned("==", m2, zero)
        m2, m1, m0 = b.select(empty, m1, m2), b.select(empty, m0, m1), b.select(empty, zero, m0)
        lz_base = b.add(lz_base, b.select(empty, em.ci(64), zero))
    ctlz = _intrinsic(b.module, "llvm.ctlz.i64", i64, [i64, ir.IntType(1)])
    c = b.call(ctlz, [m2, ir.Constant(ir.IntType(1), 0)])
    fshl = _intrinsic(b.module, "llvm.fshl.i64", i64, [i64, i64, i64])
    top = b.call(fshl, [m2, m1, c])
    second = b.call(fshl, [m1, m0, c])
    lz = b.add(lz_base, c)
    hi = b.uitofp(b.and_(top, em.ci(~0x7FF)), F64)  # top 53 bits: exact
    lo = em.mla(b.uitofp(second, F64), em.c(2.0 ** -64), b.uitofp(b.and_(top, em.ci(0x7FF)), F64))
    scale = em.pow2(b.sub(em.ci(-62), lz))
    hi, lo = em.fast_two_sum(em.mul(hi, scale), em.mul(lo, scale))
    return em.sel(neg, em.neg(hi), hi), em.sel(neg, em.neg(lo), lo)


def _words_table(module: ir.Module) -> ir.GlobalVariable:
    gv = module.globals.get("aotx_vm_two_over_pi")
    if gv is None:
        aty = ir.ArrayType(ir.IntType(64), len(TWO_OVER_PI_WORDS))
        gv = ir.GlobalVariable(module, aty, "aotx_vm_two_over_pi")
        gv.linkage = "internal"
        gv.global_constant = True
        gv.initializer = ir.Constant(aty, list(TWO_OVER_PI_WORDS))
    return gv


def _intrinsic(module: ir.Module, name: str, ret, args) -> ir.Function:
    fn = module.globals.get(name)
    return fn if fn is not None else ir.Function(module, ir.FunctionType(ret, args), name)


# -- evaluation ---------------------------------------------------------------------------------
def sin_cos_dd(em: Em, rh, rl, lowp: bool, corr: bool):
    """((sin_hi, sin_lo), (cos_hi, cos_lo)) of rh + rl, |rh| <= pi/4 (+tiny).

    lowp: polynomials for float32 results computed in binary64; corr: include the
    rounding errors of z = rh^2 and rh*z (0.2 ULP, needed by tan only)."""
    z, zl = em.two_prod(rh, rh) if corr else (em.mul(rh, rh), None)
    f32 = em.fmt.name == "f32"
    s_poly = em.estrin(z, SIN_F32 if f32 else SIN_LOWP if lowp else SIN_F64)
    c_poly = em.estrin(z, COS_F32 if f32 else COS_LOWP if lowp else COS_F64)
    half = em.c(0.5)
    one_m_hz = em.sub(em.c(1.0), em.mul(half, z))
    rz = em.mul(rh, z)
    # sin(rh + rl) = rh + rh^3 S + rl (1 - z/2)
    s_lo = em.mul(rl, one_m_hz)
    if corr:  # rounding errors of z and rh*z
        s_lo = em.mla(em.mla(rh, zl, em.two_prod(rh, z)[1]), s_poly, s_lo)
    s_lo = em.mla(rz, s_poly, s_lo)
    # cos(rh + rl) = (1 - z/2) + z^2 C - rl rh, with 1 - z/2 split exactly
    hz = em.mul(half, z)
    w = em.sub(em.c(1.0), hz)
    c_lo = em.add(em.sub(em.sub(em.c(1.0), w), hz), em.mla(em.mul(z, z), c_poly,
                                                           em.neg(em.mul(rl, rh))))
    if corr:
        c_lo = em.sub(c_lo, em.mul(half, zl))
    return (rh, s_lo), (w, c_lo)


def _quadrant_select(em: Em, q, sin_v, cos_v):
    """sin(r + q*pi/2): sin, cos, -sin, -cos for q mod 4 = 0, 1, 2, 3."""
    b = em.b
    odd = b.icmp_unsigned("!=", em.iand(q, 1), em.ci(0))
    res = em.sel(odd, cos_v, sin_v)
    sign = b.shl(em.iand(q, 2), em.ci(em.fmt.bits - 2))
    return em.from_bits(b.xor(em.bits(res), sign))


def eval_trig(em: Em, kind: str, k, rh, rl, lowp: bool):
    """sin/cos/tan of n*pi/2 + rh + rl for reduced arguments (em is binary64)."""
    (sh, sl), (ch, cl) = sin_cos_dd(em, rh, rl, lowp, kind == "tan" and not lowp)
    if kind == "tan":
        (sh, sl), (ch, cl) = em.fast_two_sum(sh, sl), em.fast_two_sum(ch, cl)
        odd = em.b.icmp_unsigned("!=", em.iand(k, 1), em.ci(0))
        nh, nl = em.sel(odd, em.neg(ch), sh), em.sel(odd, em.neg(cl), sl)
        dh, dl = em.sel(odd, sh, ch), em.sel(odd, sl, cl)
        qh, ql = em.dd_div(nh, nl, dh, dl)
        return em.add(qh, ql)
    if kind == "cos":
        k = em.b.add(k, em.ci(1))
    return _quadrant_select(em, k, em.add(sh, sl), em.add(ch, cl))


def _finish(em: Em, kind: str, x, res):
    """sin(x) = tan(x) = x for tiny x (keeps -0 and subnormals exact); cos = 1 there."""
    tiny = em.cmp("<", em.fabs(x), em.c(2.0 ** -27 if em.fmt.name == "f64" else 2.0 ** -12))
    return res if kind == "cos" else em.sel(tiny, x, res)


# -- kernels ----------------------------------------------------------------------------------
def _fast(kind: str):
    def emit(em: Em, x):
        if em.fmt.name == "f32" and em.has_fma:  # native binary32: 8/16 lanes
            k, rh, rl = reduce_fast(em, x)
            return _finish(em, kind, x, eval_trig(em, kind, k, rh, rl, False))
        em64 = em.like(F64)
        lowp = em.fmt.name == "f32"
        xd = em.fpext(x, em64) if lowp else x
        k, rh, rl = reduce_fast(em64, xd)
        res = _finish(em64, kind, xd, eval_trig(em64, kind, k, rh, rl, lowp))
        return em64.fptrunc(res, em) if lowp else res
    return emit


def _slow(kind: str):
    def emit(em: Em, x):
        em64 = em.like(F64)
        lowp = em.fmt.name == "f32"
        xd = em.fpext(x, em64) if lowp else x
        got = em.b.call(_huge_reduction(em.b.module, em.has_fma), [xd])
        k, rh, rl = (em.b.extract_value(got, i) for i in range(3))
        res = eval_trig(em64, kind, k, rh, rl, lowp)
        return em64.fptrunc(res, em) if lowp else res
    return emit


def _needs_slow(em: Em, x):
    ax = em.fabs(x)
    big = em.cmp(">=", ax, em.c(fast_threshold(em)))
    return em.and_(big, em.cmp("<", ax, em.c(float("inf"))))


def _huge_reduction(module: ir.Module, has_fma: bool) -> ir.Function:
    """``{i64, double, double} aotx_vm_pio2_huge(double x)``: Payne-Hanek's (n, rh, rl), one
    scalar function per module that the slow paths of sin, cos and tan call."""
    name = "aotx_vm_pio2_huge" + ("" if has_fma else "_nofma")
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    i64 = ir.IntType(64)
    sty = ir.LiteralStructType([i64, F64, F64])
    fn = ir.Function(module, ir.FunctionType(sty, [F64]), name)
    fn.linkage = "internal"
    for a in _SLOW_ATTRS:
        fn.attributes.add(a)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    out = ir.Constant(sty, None)
    for i, v in enumerate(reduce_huge(Em(b, F64, has_fma=has_fma), fn.args[0])):
        out = b.insert_value(out, v, i)
    b.ret(out)
    return fn


#: The slow path is compiled ``optnone``: LLVM's O3 and instruction selection spent 6-8 ms on
#: it in every kernel calling sin, a fifth of the compile of a small one, for code that runs
#: only for huge arguments (an array of nothing else: up to 1.5x slower; the same bits:
#: tests/backend/test_vecmath_variants.py checks them against mpmath).
_SLOW_ATTRS = ("nounwind", "readnone", "noinline", "optnone")


def _definer(kind: str):
    def define(module: ir.Module, sym: str, ty: ir.Type, fastmath: bool, has_fma: bool,
               vector_bits: int):
        slow_fn = module.globals.get(sym + "_slow")
        if slow_fn is None:
            slow_fn = ir.Function(module, ir.FunctionType(ty, [ty]), sym + "_slow")
            slow_fn.linkage = "internal"
            for a in _SLOW_ATTRS:
                slow_fn.attributes.add(a)
            b = ir.IRBuilder(slow_fn.append_basic_block("entry"))
            b.ret(_slow(kind)(Em(b, ty, has_fma=has_fma), slow_fn.args[0]))
        return vector_mapped_function(module, sym, ty, has_fma, _fast(kind), _needs_slow,
                                      slow_fn, vector_bits)
    return define


KERNELS = {kind: _definer(kind) for kind in ("sin", "cos", "tan")}
