"""Inverse hyperbolic functions arcsinh, arccosh, arctanh, built on the log kernel of exp_log.

Each is the logarithm of an argument formed as an unevaluated pair (head + tail), and the tail
enters the log kernel as a relative correction next to its own low-order terms, so the only
rounding that reaches the result is log's:

* arcsinh |x| = log(a + sqrt(1 + a^2)): 1 + a^2 is an exact pair (2MultFMA or Dekker, 2Sum),
  the square root gets one Newton correction from its exact residual, a + sqrt(.) is a
  Fast2Sum; log(2a) above 2^28 (f64) / 2^13 (f32) by raising log's exponent by one (2a never
  overflows), x below 2^-28 / 2^-13.
* arccosh x = log(x + sqrt((x - 1)(x + 1))): x - 1 exact, x + 1 and the product as pairs,
  then as arcsinh; log(2x) above 2^28 / 2^13.
* arctanh |x| = log((1 + a)/(1 - a))/2: 1 + a and 1 - a exact pairs, the quotient rounded
  once and its exact remainder divided by 1 + a as the correction; x below 2^-28 / 2^-13.

Both formats run the same code (float32 natively, 16 lanes per zmm). Measured max error
(docs/vecmath.md): f64 0.75 / 0.75 / 0.78 ULP, f32 0.75 / 0.74 / 0.77 ULP (NumPy allows
1 / 2). Reference: fdlibm s_asinh.c, e_acosh.c, e_atanh.c for the choice of formulas (our
code, no tables).
"""
from __future__ import annotations

from compiler.backend.vecmath import exp_log
from compiler.backend.vecmath._emit import Em


def _thresholds(em: Em) -> tuple[float, float]:
    """(tiny, big): below tiny arcsinh x = arctanh x = x (relative error x^2/3 < 2^-p-2);
    above big arcsinh a = arccosh a = log(2a) (the dropped 1/(4a^2) is below 2^-p-4 relative)."""
    return (2.0 ** -28, 2.0 ** 28) if em.fmt.name == "f64" else (2.0 ** -13, 2.0 ** 13)


def log_corrected(em: Em, c: exp_log.C, x, corr, kadd):
    """log(x) + corr + kadd*ln2 for finite x > 0, |corr| <= 2^-p+1, kadd a small integer as
    a float: the log kernel with the exponent raised by kadd and corr folded into its tail."""
    kf, f = exp_log.log_reduce(em, x)
    kf = em.add(kf, kadd)
    hfsq, tail = exp_log.log1p_parts(em, c, f)
    if em.has_fma:  # hfsq's rounding error (as in exp_log.log)
        tail = em.sub(tail, em.fma(em.mul(em.c(0.5), f), f, em.neg(hfsq)))
    lo = em.sub(hfsq, em.add(em.mla(kf, em.c(c.ln2_lo), tail), corr))
    return em.mla(kf, em.c(c.ln2_hi), em.neg(em.sub(lo, f)))


def _log_sqrt_sum(em: Em, c: exp_log.C, a, wh, wl, big, root_larger: bool):
    """log(a + sqrt(wh + wl)) for a >= 0, wh + wl > 0 a pair (root_larger: sqrt(w) >= a, else
    sqrt(w) <= a), or log(2a)
    where `big`. The square root gets one Newton correction from the exact residual and the
    sum a + sqrt(w) is a pair; both tails become one relative correction (one division):
    log(th + tl) = log(th) + tl/th, tl = tl0 + (w - v^2)/(2v)."""
    v = em.sqrt(wh)
    resid = em.add(em.exact_fms(v, v, wh), wl)        # w - v^2, exact head
    th, tl0 = em.fast_two_sum(v, a) if root_larger else em.fast_two_sum(a, v)
    two_v = em.add(v, v)
    corr = em.div(em.mla(two_v, tl0, resid), em.mul(two_v, th))
    zero = em.c(0.0)
    return log_corrected(em, c, em.sel(big, a, th), em.sel(big, zero, corr),
                         em.sel(big, em.c(1.0), zero))


def arcsinh(em: Em, x, fast: bool = False):
    """Inverse hyperbolic sine.

    Algorithm: arcsinh |x| = log(a + sqrt(1 + a^2)) with 1 + a^2 an exact pair, a Newton
    correction of the square root and the tails folded into the log kernel (one division and
    one square root besides log's); log(2a) above 2^28 (f64) / 2^13 (f32), x below 2^-28 /
    2^-13. Measured max error: f64 0.75 ULP, f32 0.75 ULP.
    Special values: arcsinh(+-0) = +-0, subnormal x gives x, arcsinh(+-inf) = +-inf, nan -> nan.
    """
    c = exp_log.C(em)
    tiny, big = _thresholds(em)
    a = em.fabs(x)
    is_big = em.cmp(">", a, em.c(big))
    s2h, s2l = em.two_prod(a, a)
    wh, wl = em.two_sum(em.c(1.0), s2h)
    res = _log_sqrt_sum(em, c, a, wh, em.add(wl, s2l), is_big, True)
    res = em.sel(em.cmp("<", a, em.c(tiny)), a, res)
    res = em.sel(em.cmp("==", a, em.c(float("inf"))), a, res)
    return em.sel(em.isnan(x), x, em.copysign(res, x))


def arccosh(em: Em, x, fast: bool = False):
    """Inverse hyperbolic cosine.

    Algorithm: arccosh x = log(x + sqrt((x - 1)(x + 1))) with x - 1 exact, x + 1 and the
    product as pairs, the square root and the sum corrected as for arcsinh; log(2x) above
    2^28 (f64) / 2^13 (f32). Measured max error: f64 0.75 ULP, f32 0.74 ULP.
    Special values: arccosh(1) = +0, arccosh(inf) = inf, x < 1 (and -inf) or nan -> nan.
    """
    c = exp_log.C(em)
    _, big = _thresholds(em)
    one = em.c(1.0)
    t = em.sub(x, one)                                # exact for 1 <= x <= 2^p
    sh, sl = em.fast_two_sum(x, one)
    ph, pl = em.dd_mul_d(sh, sl, t)
    res = _log_sqrt_sum(em, c, x, ph, pl, em.cmp(">", x, em.c(big)), False)
    res = em.sel(em.cmp("==", x, one), em.c(0.0), res)
    res = em.sel(em.cmp("==", x, em.c(float("inf"))), x, res)
    return em.sel(em.cmpu("<", x, one), em.c(float("nan")), res)


def arctanh(em: Em, x, fast: bool = False):
    """Inverse hyperbolic tangent.

    Algorithm: arctanh |x| = log((1 + a)/(1 - a))/2 with 1 + a and 1 - a exact pairs, the
    quotient q rounded once and its exact remainder folded into the log kernel as a relative
    correction (two divisions besides log's). x below 2^-28 (f64) / 2^-13 (f32).
    Measured max error: f64 0.78 ULP, f32 0.77 ULP.
    Special values: arctanh(+-0) = +-0, subnormal x gives x, arctanh(+-1) = +-inf,
    |x| > 1 or nan -> nan.
    """
    c = exp_log.C(em)
    tiny, _ = _thresholds(em)
    one = em.c(1.0)
    a = em.fabs(x)
    nh, nl = em.fast_two_sum(one, a)                  # 1 + a, exact for a <= 1
    dh, dl = em.fast_two_sum(one, em.neg(a))          # 1 - a
    q = em.div(nh, dh)
    # (1 + a)/(1 - a) = q + rem/(1 - a): log of it = log q + rem/(q (1 - a)) ~ log q + rem/nh
    rem = em.add(em.exact_fms(q, dh, nh), em.sub(nl, em.mul(q, dl)))
    corr = em.div(rem, nh)
    res = em.mul(em.c(0.5), log_corrected(em, c, q, corr, em.c(0.0)))
    res = em.sel(em.cmp("<", a, em.c(tiny)), a, res)
    res = em.sel(em.cmp("==", a, one), em.c(float("inf")), res)
    res = em.sel(em.cmpu(">", a, one), em.c(float("nan")), res)
    return em.copysign(res, x)


KERNELS = {"arcsinh": arcsinh, "arccosh": arccosh, "arctanh": arctanh}
