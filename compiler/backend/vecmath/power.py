"""Power-type functions pow (np.power for floats), hypot, cbrt (branch-free, vectorizable).

binary64 kernels carry double-double intermediates; binary32 hypot and cbrt evaluate the
binary64 kernel on widened arguments and round once (see inverse_trig._in_f64). binary32 pow
applies its special cases in float32 and takes the magnitude from a short binary64
2^(y log2|x|) (no double-double: binary64 has 29 bits to spare for a float32 result).

* pow(x, y) = exp(y log|x|): log|x| is computed as a double-double accurate to ~2^-68
  (log reduction of exp_log, then 2 atanh(s) with s = f/(2+f) as a double-double and the
  2s + 2s^3/3 terms in double-double), multiplied by y exactly (2MultFMA/Dekker), and fed
  to the exp kernel as a reduced pair. The sign and every C99/NumPy special case (0, inf,
  nan, negative bases with integer/odd/non-integer exponents) are applied by selects.
* hypot(x, y): both operands scaled by a power of two so the larger is in [1, 4), the sum
  of squares formed exactly (two exact products + 2Sum), a correctly-rounded square root
  plus one Newton correction from the exact residual, then scaled back (overflow to inf
  only when the result overflows). hypot(+-inf, nan) = inf as in C99.
* cbrt: x = m 2^(3q + r); seed polynomial for m^(1/3) on [1, 2), times 2^(r/3), two
  Newton steps and a final correction from the exact residual y^3 - a.

Reference: Muller, "Elementary Functions", 3rd ed., ch. 11 (pow via log/exp in extended
precision) and Handbook of Floating-Point Arithmetic ch. 4 (error-free transformations).
"""
from __future__ import annotations

from typing import Callable

from compiler.backend.vecmath import exp_log
from compiler.backend.vecmath._emit import F64, Em, _h
from compiler.backend.vecmath.inverse_trig import _exponent_scale, _in_f64

LOG5_F64 = (_h("0x1.999999999999ap-2"), _h("0x1.2492492492524p-2"), _h("0x1.c71c71c6e9eb3p-3"),
            _h("0x1.745d177b34dd1p-3"), _h("0x1.3b1395908f93cp-3"), _h("0x1.1118d5ae141eap-3"),
            _h("0x1.df79ecd28c1ccp-4"), _h("0x1.e04c1dd26cc4dp-4"))
TWO_THIRDS = (_h("0x1.5555555555555p-1"), _h("0x1.5555555555555p-55"))
CBRT_SEED = (_h("0x1.0392cce3912edp-1"), _h("0x1.6fb1dff1c4cd1p-1"), _h("-0x1.33d3851b7ad27p-2"),
             _h("0x1.60a1537b3206ep-4"), _h("-0x1.5b77f0735a7a1p-7"))
CBRT_2 = (1.0, _h("0x1.428a2f98d728bp+0"), _h("0x1.965fea53d6e3dp+0"))


def log_dd(em: Em, ax):
    """log(ax) for finite ax > 0 as a normalised pair with ~2^-68 relative error."""
    c = exp_log.C(em)
    kf, f = exp_log.log_reduce(em, ax)
    dh, dl = em.two_sum(em.c(2.0), f)
    sh, sl = em.dd_div(f, em.c(0.0), dh, dl)
    zh, zl = em.two_prod(sh, sh)
    zl = em.mla(em.add(sh, sh), sl, zl)
    s3h, s3l = em.dd_mul(sh, sl, zh, zl)
    t3h, t3l = em.dd_mul(s3h, s3l, em.c(TWO_THIRDS[0]), em.c(TWO_THIRDS[1]))
    t5 = em.mul(em.mul(s3h, zh), em.estrin(zh, LOG5_F64))
    # log(m) = 2s + 2s^3/3 + s^5 Q(s^2); k ln2 = k LN2_HI (exact) + k LN2_LO
    h, e = em.two_sum(em.mul(kf, em.c(c.ln2_hi)), em.add(sh, sh))
    h, e2 = em.two_sum(h, t3h)
    lo = em.add(em.add(e, e2), em.add(em.add(sl, sl), em.add(t3l, t5)))
    return em.fast_two_sum(h, em.mla(kf, em.c(c.ln2_lo), lo))


def _pow_magnitude(em: Em, ax, y):
    """|x|^y for finite ax > 0, finite y (overflow -> inf, underflow -> 0)."""
    c = exp_log.C(em)
    lh, ll = log_dd(em, ax)
    ph, pl = em.two_prod(y, lh)
    pl = em.mla(y, ll, pl)  # |pl| <= 2^-43 |ph|: exp_core takes it as the reduced tail
    phc = exp_log.clamp(em, ph, -1100.0, 1100.0)  # |k| <= 1587: scale's halves stay normal
    pl = em.sel(em.cmp("==", phc, ph), pl, em.c(0.0))  # clamped (or inf/nan product): drop
    n, k = em.round_to_int(em.mul(phc, em.c(c.log2e)))
    rh = em.mla(n, em.c(-c.ln2_hi), phc)
    rl = em.mla(n, em.c(-c.ln2_lo), pl)
    hi, lo = exp_log.exp_core(em, c, rh, rl)
    return em.scale(em.add(hi, lo), k)


#: the constant exponents :func:`constant_power` computes by products and a square root
CONSTANT_POWERS = (3.0, 4.0, -2.0, -3.0, 1.5, -0.5, -1.5)


def constant_power(em: Em, x, v: float):
    """x**v for a constant v of CONSTANT_POWERS (float64 em), with C99/NumPy pow's results,
    by products and a square root whose rounding errors are carried along: x^|n| as a pair
    (2MultFMA), x^(1/2) as sqrt(x) plus its exact residual's correction, the reciprocal by one
    division and a correction from its exact residual. |x| outside [2^-200, 2^200] is scaled
    into it first and the result scaled back by 2^(-+200 v) (exact unless the result is
    subnormal), so that no error term underflows. Within 0.51 ULP for normal results, 1 ULP
    for subnormal ones (tests/backend/test_constant_powers.py), in a few operations instead
    of pow's double-double logarithm and exponential: x ** 3 was 1.6x slower than NumPy.
    Special values: those of pow for these exponents (signed zeros and infinities of odd
    powers, pow(+-0, v < 0) = inf, pow(x < 0, 1.5) = nan, pow(-inf, 1.5) = inf, nan -> nan).
    """
    one, zero, inf = em.c(1.0), em.c(0.0), em.c(float("inf"))
    ax = em.fabs(x)
    small, big = em.cmp("<", ax, em.c(2.0 ** -200)), em.cmp(">", ax, em.c(2.0 ** 200))
    xs = em.mul(x, em.sel(small, em.c(2.0 ** 200), em.sel(big, em.c(2.0 ** -200), one)))
    back = em.sel(small, em.c(2.0 ** (-200 * v)), em.sel(big, em.c(2.0 ** (200 * v)), one))
    if float(v).is_integer():
        hi, lo = em.two_prod(xs, xs)
        if abs(v) == 3:
            hi, l3 = em.two_prod(hi, xs)
            lo = em.mla(lo, xs, l3)
        elif abs(v) == 4:
            cross = em.mul(em.add(hi, hi), lo)             # (hi + lo)^2 = hi^2 + 2 hi lo + ...
            hi, l4 = em.two_prod(hi, hi)
            lo = em.add(cross, l4)
        # the pair is exact unless hi is 0, inf or nan (then hi alone is pow's answer, sign too)
        exact = em.and_(em.cmp("<", em.fabs(hi), inf), em.cmp("!=", hi, zero))
        res = em.sel(exact, em.add(hi, lo), hi) if v > 0 else _reciprocal(em, hi, lo, exact)
        return em.mul(res, back)
    ok = em.and_(em.cmp(">", x, zero), em.cmp("<", x, inf))
    xs = em.sel(ok, xs, one)
    s = em.sqrt(xs)
    c = em.div(em.exact_fms(s, s, xs), em.add(s, s))        # sqrt(x) = s + c to ~2^-104
    if v == 1.5:
        res = em.mla(xs, s, em.mul(xs, c))
    elif v == -0.5:
        res = _reciprocal(em, s, c, ok)
    else:
        hi, lo = em.two_prod(xs, s)
        res = _reciprocal(em, hi, em.mla(xs, c, lo), em.cmp("<", hi, inf))
    # x = 0, +-inf, < 0 or nan: 0^v and inf^v are 0 or inf; a negative base is nan
    edge = em.sel(em.cmp("==", x, zero), zero if v > 0 else inf,
                  em.sel(em.cmp("==", ax, inf), inf if v > 0 else zero, em.c(float("nan"))))
    return em.sel(ok, em.mul(res, back), edge)


def _reciprocal(em: Em, hi, lo, exact):
    """1 / (hi + lo) for the pair hi + lo (|lo| <= ulp(hi)): one division, then the exact
    residual of q hi and the lo term as a correction; 1 / hi where `exact` is false (hi 0, inf
    or nan) or q over/underflows."""
    q = em.div(em.c(1.0), hi)
    e = em.sub(em.exact_fms(q, hi, em.c(1.0)), em.mul(q, lo))     # 1 - q (hi + lo)
    refined = em.mla(q, e, q)
    good = em.and_(exact, em.cmp("<", em.fabs(refined), em.c(float("inf"))))
    return em.sel(good, refined, q)


def _pow_magnitude_table(em: Em, ax, y):
    """:func:`_pow_magnitude` for 8 float64 on AVX-512: e^(ph + pl) from the table of
    exp_log.exp_table_pair (n = round(16 ph / ln2), r = ph - n ln2/16 + pl rounded once,
    vscalefpd for 2^m, gradual underflow included) instead of the degree-11 exp kernel."""
    c = exp_log.C(em)
    lh, ll = log_dd(em, ax)
    ph, pl = em.two_prod(y, lh)
    pl = em.mla(y, ll, pl)
    phc = exp_log.clamp(em, ph, -1100.0, 1100.0)  # |n| < 2^15: n (ln2/16)_hi stays exact
    pl = em.sel(em.cmp("==", phc, ph), pl, em.c(0.0))  # clamped (or inf/nan product): drop
    t, n = exp_log.table_round(em, phc, 16.0 * c.log2e)
    rh = em.mla(n, em.c(-exp_log.LN2_16[0]), phc)           # exact
    r = em.add(rh, em.mla(n, em.c(-exp_log.LN2_16[1]), pl))
    hi, lo = exp_log._table_pair(em, t, r)
    return exp_log.scalef(em, em.add(hi, lo), exp_log.table_scale(em, n))


def pow_table(em: Em, x, y):
    """x**y for 8 float64 on AVX-512: :func:`pow_` (the same special cases and log) with the
    exponential from the table (:func:`_pow_magnitude_table`)."""
    return pow_(em, x, y, magnitude=_pow_magnitude_table)


def _pow_magnitude_lowp(em: Em, ax, y):
    """|x|^y = 2^(y log2|x|) for float32 arguments evaluated in binary64 (em).

    Finite ax > 0, finite y. log2|x| = k + log(1+f)/ln2 with the short log polynomial and
    2^t = 2^n e^((t-n) ln2) with the short exp polynomial (both ~2^-30 relative or better
    on the terms they approximate), so t = y log2|x| is off by < |t| 2^-36 and the binary64
    result by < 2^-28 relative wherever the float32 result is finite and nonzero; rounded
    once to float32 it is within 0.51 ULP. Powers of two with integer y are exact (t is an
    integer, e^0 = 1), so float32 underflow ties round like NumPy's.
    """
    c = exp_log.C(em, fast=True)
    kf, f = exp_log.log_reduce(em, ax)
    hfsq, tail = exp_log.log1p_parts(em, c, f)
    l1p = em.add(em.sub(f, hfsq), tail)
    t = exp_log.clamp(em, em.mul(y, em.mla(l1p, em.c(c.log2e), kf)), -200.0, 200.0)
    n, k = em.round_to_int(t)
    r = em.mul(em.sub(t, n), em.c(c.ln2_a))
    e = em.add(em.c(1.0), em.mla(em.mul(r, r), em.estrin(r, c.exp_poly), r))
    return em.mul(e, em.pow2(k))


def _magnitude_f32(em: Em, ax, y):
    em64 = em.like(F64)
    return em64.fptrunc(_pow_magnitude_lowp(em64, em.fpext(ax, em64), em.fpext(y, em64)), em)


def pow_(em: Em, x, y, magnitude=_pow_magnitude):
    """x**y (max error f64 0.67 ULP, f32 0.51 ULP) with NumPy (C99 pow) semantics: pow(x, +-0) = 1 and pow(1, y) = 1 even for nan;
    pow(x<0, non-integer y) = nan; odd integer y keeps the sign of x (incl. -0 and -inf);
    pow(+-0, y<0) = inf (+-inf for odd y); pow(-1, +-inf) = 1; |x|<1 vs |x|>1 with
    y = +-inf gives 0 or inf; other nan -> nan."""
    one, zero, inf = em.c(1.0), em.c(0.0), em.c(float("inf"))
    ax, ay = em.fabs(x), em.fabs(y)
    y_int = em.cmp("==", em.rint(y), y)
    half = em.mul(y, em.c(0.5))
    y_odd = em.and_(y_int, em.cmp("!=", em.rint(half), half))
    finite = em.and_(em.cmp("<", ax, inf), em.cmp("<", ay, inf))
    safe_ax = em.sel(em.and_(finite, em.cmp(">", ax, zero)), ax, one)
    mag = magnitude(em, safe_ax, em.sel(finite, y, zero))
    # |x| = 0 or inf: 0^y is 0 (y > 0) or inf (y < 0); inf^y the reverse
    mag = em.sel(em.cmp("==", ax, zero), em.sel(em.cmp(">", y, zero), zero, inf), mag)
    mag = em.sel(em.cmp("==", ax, inf), em.sel(em.cmp(">", y, zero), inf, zero), mag)
    # y = +-inf: compare |x| with 1
    gt1 = em.cmp(">", ax, one)
    yinf = em.sel(em.cmp(">", y, zero), em.sel(gt1, inf, zero), em.sel(gt1, zero, inf))
    mag = em.sel(em.cmp("==", ay, inf), em.sel(em.cmp("==", ax, one), one, yinf), mag)
    x_neg = em.b.icmp_signed("<", em.bits(x), em.ci(0))
    res = em.sel(em.and_(x_neg, y_odd), em.neg(mag), mag)
    bad = em.and_(em.and_(em.cmp("<", x, zero), em.not_(y_int)), em.cmp("<", ax, inf))
    res = em.sel(em.or_(bad, em.isnan(x)), em.c(float("nan")), res)
    res = em.sel(em.isnan(y), em.c(float("nan")), res)
    res = em.sel(em.cmp("==", x, one), one, res)
    return em.sel(em.cmp("==", y, zero), one, res)


def hypot(em: Em, x, y):
    """sqrt(x^2 + y^2) without spurious overflow/underflow (max error f64 0.66 ULP, f32 0.50). hypot(+-inf, y) = inf even for
    y = nan; otherwise nan -> nan; hypot(0, 0) = 0."""
    ax, ay = em.fabs(x), em.fabs(y)
    swap = em.cmp(">", ay, ax)
    a, b = em.sel(swap, ay, ax), em.sel(swap, ax, ay)
    s = _exponent_scale(em, a)
    a_s, b_s = em.mul(a, s), em.mul(b, s)
    p, pe = em.two_prod(a_s, a_s)
    q, qe = em.two_prod(b_s, b_s)
    sh, se = em.two_sum(p, q)
    sl = em.add(se, em.add(pe, qe))
    r = em.sqrt(sh)
    # one Newton step from the exact residual (sh + sl) - r^2
    corr = em.div(em.add(em.exact_fms(r, r, sh), sl), em.add(r, r))
    res = em.div(em.add(r, corr), s)
    res = em.sel(em.cmp("==", b, em.c(0.0)), a, res)
    inf = em.c(float("inf"))
    return em.sel(em.or_(em.cmp("==", ax, inf), em.cmp("==", ay, inf)), inf, res)


def cbrt(em: Em, x):
    """Cube root (max error 0.50 ULP f64 and f32). cbrt(+-0) = +-0, cbrt(+-inf) = +-inf, nan -> nan, subnormals exact range."""
    ax = em.fabs(x)
    sub = em.cmp("<", ax, em.c(2.0 ** -1022))
    axs = em.sel(sub, em.mul(ax, em.c(2.0 ** 54)), ax)
    ix = em.bits(axs)
    e = em.b.sub(em.b.lshr(ix, em.ci(52)), em.ci(1023))
    e = em.b.sub(e, em.b.select(sub, em.ci(54), em.ci(0)))
    ef = exp_log.small_int_to_float(em, e)
    qf = em.floor(em.mul(em.add(ef, em.c(0.5)), em.c(1 / 3)))
    rf = em.sub(ef, em.mul(qf, em.c(3.0)))  # 0, 1 or 2
    m = em.from_bits(em.b.or_(em.iand(ix, (1 << 52) - 1), em.ci(1023 << 52)))
    a = em.mul(m, em.sel(em.cmp("==", rf, em.c(0.0)), em.c(1.0),
                         em.sel(em.cmp("==", rf, em.c(1.0)), em.c(2.0), em.c(4.0))))
    c_r = em.sel(em.cmp("==", rf, em.c(0.0)), em.c(CBRT_2[0]),
                 em.sel(em.cmp("==", rf, em.c(1.0)), em.c(CBRT_2[1]), em.c(CBRT_2[2])))
    y = em.mul(em.estrin(m, CBRT_SEED), c_r)
    third = em.c(1 / 3)
    for _ in range(2):  # Newton: y -= (y - a/y^2)/3
        y = em.sub(y, em.mul(em.sub(y, em.div(a, em.mul(y, y))), third))
    # final correction from the exact residual a - y^3
    y2h, y2l = em.two_prod(y, y)
    y3h, y3l = em.dd_mul(y2h, y2l, y, em.c(0.0))
    resid = em.sub(em.sub(a, y3h), y3l)
    y = em.add(y, em.div(resid, em.mul(em.c(3.0), y2h)))
    k = _float_to_small_int(em, qf)
    res = em.copysign(em.mul(y, em.pow2(k)), x)
    special = em.or_(em.cmp("==", ax, em.c(0.0)), em.cmpu("==", ax, em.c(float("inf"))))
    return em.sel(special, em.add(x, x), res)


def _float_to_small_int(em: Em, v):
    magic = em.c(1.5 * 2.0 ** em.fmt.mant)
    return em.b.sub(em.bits(em.add(v, magic)), em.bits(magic))


def pow_any(em: Em, x, y, fast: bool = False):
    """x**y: the double-double kernel for float64; for float32 the special cases in
    float32 and the magnitude by the short binary64 kernel (_pow_magnitude_lowp)."""
    if em.fmt.name == "f64":
        return pow_(em, x, y)
    return pow_(em, x, y, magnitude=_magnitude_f32)


KERNELS = {"pow": pow_any, "hypot": _in_f64(hypot), "cbrt": _in_f64(cbrt)}
#: the explicit AVX-512 float64 bodies (vecmath._TABLED)
TABLED: dict[str, Callable] = {"pow": pow_table}
