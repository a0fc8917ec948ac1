"""Hyperbolic functions tanh, sinh, cosh, built on the exp/expm1 kernels of exp_log.

All three are branch-free: both the small-argument and the exponential formula are
evaluated and a select picks one, so LoopVectorize widens them.

* tanh: |x| + |x|^3 P(x^2) below 1/8 (f64) / 0.3 (f32); above, 1 - 2/(E + 1) with
  E = e^(2|x|) from the exp kernel, E + 1 as an exact pair, one division plus an FMA
  residual correction and a Fast2Sum for 1 - q; |x| > 22 (f64) / 10 (f32) rounds to +-1.
* sinh: x + x^3 P(x^2) (minimax) for |x| < 1; otherwise e^|x|/2 - 1/(4 (e^|x|/2)) where
  e^|x| = (hi + lo) 2^k comes from the exp kernel and the halving is folded into 2^(k-1),
  so the result only overflows where sinh itself does (|x| > 710.4758600739439).
* cosh: 1 + x^2/2 + x^4 Q(x^2) for |x| < 0.5, e^|x|/2 + 1/(4 (e^|x|/2)) above.

Reference: Muller, "Elementary Functions", 3rd ed., sec. 11.5; fdlibm s_tanh.c/e_sinh.c
for the choice of formulas (our code and coefficients).
"""
from __future__ import annotations

from typing import Callable

from compiler.backend.vecmath import exp_log
from compiler.backend.vecmath._emit import Em, _h

SINH_F64 = (_h("0x1.5555555555555p-3"), _h("0x1.11111111110fep-7"), _h("0x1.a01a01a01ed75p-13"),
            _h("0x1.71de3a4e25c15p-19"), _h("0x1.ae6460eaa963fp-26"), _h("0x1.611cba6947578p-33"),
            _h("0x1.b40fca0448401p-41"))
SINH_F32 = (_h("0x1.555556p-3"), _h("0x1.11111ep-7"), _h("0x1.a0091cp-13"), _h("0x1.78a24cp-19"))
COSH_F64 = (_h("0x1.5555555555555p-5"), _h("0x1.6c16c16c16c1ep-10"), _h("0x1.a01a01a0147c4p-16"),
            _h("0x1.27e4fb8f1b752p-22"), _h("0x1.1eed3411c0b40p-29"), _h("0x1.94da8ec2cca00p-37"))
TANH_F64 = (_h("-0x1.5555555555555p-2"), _h("0x1.1111111110a7cp-3"), _h("-0x1.ba1ba1b54e417p-5"),
            _h("0x1.664f3e4196971p-6"), _h("-0x1.22644d6208800p-7"), _h("0x1.cdfcecb60fe55p-9"))
TANH_F32 = (_h("-0x1.555556p-2"), _h("0x1.111048p-3"), _h("-0x1.b96b3cp-5"), _h("0x1.4d6da4p-6"))
COSH_F32 = (_h("0x1.555556p-5"), _h("0x1.6c161ap-10"), _h("0x1.a1d68ep-16"))


def tanh(em: Em, x, fast: bool = False, exp_2x=None):
    """Hyperbolic tangent, branch-free, one division.

    Algorithm: for |x| >= T (1/8 in f64, 0.3 in f32) tanh|x| = 1 - 2/(E + 1) with
    E = e^(2|x|) = (hi + lo) 2^k from the exp kernel. E + 1 is formed exactly as a pair
    (Fast2Sum), q = 2/(E + 1) is one rounded division plus a correction from the exact
    FMA residual (so q is good to ~2^-100 relative), and 1 - q is summed by Fast2Sum;
    the remaining error is the exp kernel's ~2^-58 absolute, i.e. < 2^-55 relative for
    |x| >= T. Below T, an odd minimax polynomial |x| + |x|^3 P(x^2) (relative error
    2^-54.9 / 2^-26.2). |x| is clamped to 22 (f64) / 10 (f32), where tanh rounds to 1.
    Measured max error: f64 0.79 ULP, f32 0.71 ULP (NumPy allows 2).
    Special values: tanh(+-0) = +-0, subnormal x gives x, tanh(+-inf) = +-1, nan -> nan.
    `exp_2x(em, a)` gives E = e^(2a) as a pair (H, L), |L| < 0.1 H, for 0 <= a <= 22 (or nan),
    L as a function emitting it where it is used: by default the exp kernel (:func:`_exp_2x`);
    :func:`tanh_table` passes the AVX-512 table's.
    """
    d = em.fmt.name == "f64"
    one = em.c(1.0)
    ax = em.fabs(x)
    z = em.mul(ax, ax)
    small = em.mla(em.mul(ax, z), em.estrin(z, TANH_F64 if d else TANH_F32), ax)
    axc = exp_log.clamp(em, ax, 0.0, 22.0 if d else 10.0)
    big_e, small_e = (exp_2x or _exp_2x)(em, axc)
    # E + 1 = H + 1 + L (|L| < 0.06 H: it holds the polynomial) as a pair
    a, ea = em.fast_two_sum(big_e, one)  # E >= 1
    dh, eb = em.fast_two_sum(a, small_e())
    dl = em.add(ea, eb)
    q0 = em.div(em.c(2.0), dh)
    resid = em.sub(em.exact_fms(q0, dh, em.c(2.0)), em.mul(q0, dl))  # 2 - q0 (dh + dl)
    s, e = em.fast_two_sum(one, em.neg(q0))  # q0 <= 1
    # 1 - q = s + e - resid q0/2
    big = em.sub(s, em.mla(resid, em.mul(q0, em.c(0.5)), em.neg(e)))
    res = em.sel(em.cmp("<", ax, em.c(0.125 if d else 0.3)), small, big)
    return em.copysign(res, x)


def _exp_2x(em: Em, a):
    """e^(2a) = (hi + lo) 2^k from the exp kernel, as the pair (hi 2^k, lo 2^k) (the second
    emitted when called: the instruction order of the kernel as it was before the table)."""
    c = exp_log.C(em)
    # 2a = n ln2 + rh + rl; n is rounded from a (2 log2(e) is exact) to save latency
    n, k = em.round_mul_to_int(a, 2.0 * c.log2e)
    rh = em.mla(n, em.c(-c.ln2_hi), em.add(a, a))
    hi, lo = exp_log.exp_core(em, c, rh, em.mul(n, em.c(-c.ln2_lo)))
    scale = em.pow2(k)
    return em.mul(hi, scale), lambda: em.mul(lo, scale)


def _exp_2x_table(em: Em, a):
    """e^(2a) from the AVX-512 table (exp_log.exp_table_pair), scaled exactly (2a <= 44)."""
    hi, lo, m = exp_log.exp_table_pair(em, a, times=2.0)
    return exp_log.scalef(em, hi, m), lambda: exp_log.scalef(em, lo, m)


def tanh_table(em: Em, x):
    """tanh of 8 float64 on AVX-512: :func:`tanh` with E = e^(2|x|) from the table of
    exp_log.exp_table_pair instead of the degree-11 exp kernel (same special values;
    measured max error in docs/vecmath.md)."""
    return tanh(em, x, exp_2x=_exp_2x_table)


def _half_exp(em: Em, ax):
    """e^ax / 2 as an unevaluated pair (h, l), |l| < 0.1 h, for 0 <= ax <= 711 (or nan),
    and the rounded sum (h + l) for large ax (where h alone may round up to overflow)."""
    c = exp_log.C(em)
    k, rh, rl = exp_log.exp_reduce(em, c, ax)
    hi, lo = exp_log.exp_core(em, c, rh, rl)
    km1 = em.b.sub(k, em.ci(1))
    return em.scale(hi, km1), em.scale(lo, km1), em.scale(em.add(hi, lo), km1)


def _half_exp_table(em: Em, ax):
    """:func:`_half_exp` from the AVX-512 table (exp_log.exp_table_pair): (hi + lo) 2^(m-1)."""
    hi, lo, m = exp_log.exp_table_pair(em, ax)
    m1 = em.sub(m, em.c(1.0))
    return (exp_log.scalef(em, hi, m1), exp_log.scalef(em, lo, m1),
            exp_log.scalef(em, em.add(hi, lo), m1))


def _near_overflow(em: Em, ax):
    """Past this |x| the 1/(4h) term is below half an ULP: use the single-rounded h."""
    return em.cmp(">", ax, em.c(40.0 if em.fmt.name == "f64" else 20.0))


def _big_bound(em: Em) -> float:
    return 711.0 if em.fmt.name == "f64" else 90.0


def sinh(em: Em, x, fast: bool = False, half_exp=_half_exp):
    """Hyperbolic sine.

    Algorithm: odd minimax polynomial of degree 15 (f64) / 9 (f32) for |x| < 1, otherwise
    h - 1/(4h) with h = e^|x|/2 as a pair. Measured max error: f64 0.67 ULP, f32 0.91 ULP.
    Special values: sinh(+-0) = +-0, subnormals
    exact, sinh(+-inf) = +-inf, overflow exactly past 710.47586 (f64) / 89.41599 (f32),
    nan -> nan.
    """
    d = em.fmt.name == "f64"
    ax = em.fabs(x)
    z = em.mul(x, x)
    poly = em.mla(em.mul(x, z), em.estrin(z, SINH_F64 if d else SINH_F32), x)
    h, l, hs = half_exp(em, exp_log.clamp(em, ax, 0.0, _big_bound(em)))
    big = em.add(h, em.sub(l, em.div(em.c(0.25), em.add(h, l))))
    big = em.sel(_near_overflow(em, ax), hs, big)
    return em.sel(em.cmp("<", ax, em.c(1.0)), poly, em.copysign(big, x))


def cosh(em: Em, x, fast: bool = False, half_exp=_half_exp):
    """Hyperbolic cosine.

    Algorithm: 1 + x^2/2 + x^4 Q(x^2) for |x| < 0.5 (1 + x^2/2 split exactly), otherwise
    h + 1/(4h) with h = e^|x|/2. Measured max error: f64 0.76 ULP, f32 0.91 ULP.
    Special values: cosh(+-0) = 1, cosh(+-inf) = inf,
    overflow past 710.47586 (f64) / 89.41599 (f32), nan -> nan.
    """
    d = em.fmt.name == "f64"
    ax = em.fabs(x)
    z = em.mul(x, x)
    hz = em.mul(em.c(0.5), z)
    s, e = em.fast_two_sum(em.c(1.0), hz)
    tail = em.mla(em.mul(z, z), em.estrin(z, COSH_F64 if d else COSH_F32), e)
    if em.has_fma:
        tail = em.add(tail, em.mul(em.c(0.5), em.fma(x, x, em.neg(z))))
    poly = em.add(s, tail)
    h, l, hs = half_exp(em, exp_log.clamp(em, ax, 0.0, _big_bound(em)))
    big = em.add(h, em.add(l, em.div(em.c(0.25), em.add(h, l))))
    big = em.sel(_near_overflow(em, ax), hs, big)
    return em.sel(em.cmp("<", ax, em.c(0.5)), poly, big)


def sinh_table(em: Em, x):
    """sinh of 8 float64 on AVX-512: :func:`sinh` with h = e^|x|/2 from the table of
    exp_log.exp_table_pair (same special values; measured max error in docs/vecmath.md)."""
    return sinh(em, x, half_exp=_half_exp_table)


def cosh_table(em: Em, x):
    """cosh of 8 float64 on AVX-512: :func:`cosh` with h = e^|x|/2 from the table of
    exp_log.exp_table_pair (same special values; measured max error in docs/vecmath.md)."""
    return cosh(em, x, half_exp=_half_exp_table)


KERNELS = {"tanh": tanh, "sinh": sinh, "cosh": cosh}
#: the explicit AVX-512 float64 bodies (vecmath._TABLED)
TABLED: dict[str, Callable] = {"tanh": tanh_table, "sinh": sinh_table, "cosh": cosh_table}

