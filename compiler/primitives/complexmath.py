"""Complex elementwise math as decompositions over real IR values.

A complex value is a pair of real IR values (re, im) of one float dtype and one
shape. Each function here takes the Builder and such pairs and returns a pair
(or one real or bool value) built only from the typed constructors of
``ops.py``: the lowering of complex values to real pairs calls them, and the
backend fuses and vectorizes the result like any other elementwise chain.

    >>> # re, im = cexp(b, x_re, x_im)        # x_re, x_im: f64[n] values

Semantics are NumPy's (docs/vecmath.md, "Complex functions"):

* ``cmul``, ``cdiv``, ``csquare``, ``creciprocal`` and the integer powers of
  ``cpow`` are NumPy's own loops, operation for operation, in the operands'
  dtype: ``(inf+nanj)*(1+1j)`` is ``nan+nanj`` as in NumPy (not C99 Annex G).
* The transcendental functions follow C99 Annex G (the libm functions NumPy
  calls): special values (inf, nan, signed zeros in either part) and branch
  cuts, where the sign of a zero part picks the side of the cut. They compute
  in float64; complex64 operands are widened and the results rounded once, so
  a complex64 result overflows only where the exact result does.
* Robust formulas: |z| by hypot; log|z| near |z| = 1 as log1p(x^2 + y^2 - 1)
  with the squares in exact double-double arithmetic; exp, sinh and cosh of a
  real part near the overflow threshold as exp(x/2)^2 so that a small factor
  cos(y) keeps the result finite; sqrt with power-of-two scaling; tanh by
  Kahan's formula; asin, acos, asinh, acosh by Kahan's formulas through
  sqrt(1 - z) and sqrt(1 + z) (no cancellation anywhere) with the asymptotic
  log(2z) for large |z|; atanh with the double-double 1 - x^2 - y^2.

``COMPLEX_UNARY`` and ``COMPLEX_BINARY`` map NumPy's ufunc names to the
functions; ``cpow_scalar`` is ``z ** p`` for a Python number ``p``.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from compiler.ir.builder import Builder
from compiler.ir.core import Value
from compiler.primitives import ops

Pair = tuple[Value, Value]

__all__ = [
    "cadd", "csub", "cmul", "cdiv", "cneg", "cconj", "csquare", "creciprocal", "cpow", "cpow_scalar",
    "cexp", "cexp2", "cexpm1", "clog", "clog2", "clog10", "clog1p", "csqrt",
    "csin", "ccos", "ctan", "csinh", "ccosh", "ctanh",
    "carcsin", "carccos", "carctan", "carcsinh", "carccosh", "carctanh",
    "cabs", "cangle", "csign", "cisfinite", "cisnan", "cisinf", "COMPLEX_UNARY", "COMPLEX_BINARY",
]

_LN2 = math.log(2.0)
_LN2_LO = 2.3190468138462996e-17             # log 2 - _LN2
_F64 = np.dtype(np.float64)


class _E:
    """Terse real arithmetic on one builder; constants take the type of `like`."""

    def __init__(self, b: Builder, like: Value) -> None:
        self.b, self.like = b, like

    def c(self, v: float) -> Value:
        return ops.full_like(self.b, v, self.like)

    def add(self, x: Value, y: Value) -> Value:
        return ops.add(self.b, x, y)

    def sub(self, x: Value, y: Value) -> Value:
        return ops.sub(self.b, x, y)

    def mul(self, x: Value, y: Value) -> Value:
        return ops.mul(self.b, x, y)

    def div(self, x: Value, y: Value) -> Value:
        return ops.div(self.b, x, y)

    def neg(self, x: Value) -> Value:
        return ops.neg(self.b, x)

    def abs(self, x: Value) -> Value:
        return ops.abs_(self.b, x)

    def sel(self, p: Value, x: Value, y: Value) -> Value:
        return ops.select(self.b, p, x, y)

    def sel2(self, p: Value, x: Pair, y: Pair) -> Pair:
        return ops.select(self.b, p, x[0], y[0]), ops.select(self.b, p, x[1], y[1])

    def lt(self, x: Value, y: Value) -> Value:
        return ops.lt(self.b, x, y)

    def gt(self, x: Value, y: Value) -> Value:
        return ops.gt(self.b, x, y)

    def ge(self, x: Value, y: Value) -> Value:
        return ops.ge(self.b, x, y)

    def eq(self, x: Value, y: Value) -> Value:
        return ops.eq(self.b, x, y)

    def and_(self, *xs: Value) -> Value:
        out = xs[0]
        for x in xs[1:]:
            out = ops.and_(self.b, out, x)
        return out

    def or_(self, *xs: Value) -> Value:
        out = xs[0]
        for x in xs[1:]:
            out = ops.or_(self.b, out, x)
        return out

    def not_(self, x: Value) -> Value:
        return ops.not_(self.b, x)

    def isnan(self, x: Value) -> Value:
        return ops.isnan(self.b, x)

    def isinf(self, x: Value) -> Value:
        return ops.isinf(self.b, x)

    def isfinite(self, x: Value) -> Value:
        return ops.isfinite(self.b, x)

    def iszero(self, x: Value) -> Value:
        return self.eq(x, self.c(0.0))

    def signbit(self, x: Value) -> Value:
        """True for negative values and -0.0 (1/-0 is -inf); false for nan."""
        return self.or_(self.lt(x, self.c(0.0)),
                        self.and_(self.iszero(x), self.lt(self.div(self.c(1.0), x), self.c(0.0))))

    def copysign(self, mag: Value, sgn: Value) -> Value:
        """|mag| with the sign of sgn, as -mag or mag: its derivative is +-1, never the 0
        of abs at 0 (the decompositions stay differentiable)."""
        flip = ops.ne(self.b, self.signbit(mag), self.signbit(sgn))
        return self.sel(flip, self.neg(mag), mag)

    def copysign_c(self, mag: float, sgn: Value) -> Value:
        """The constant |mag| with the sign of sgn."""
        return self.sel(self.signbit(sgn), self.c(-abs(mag)), self.c(abs(mag)))

    def sabs(self, x: Value) -> Value:
        """|x| as -x or x (derivative +-1 at 0, where abs has 0), for the symmetric reductions
        f(x) = copysign(g(|x|), x)."""
        return self.sel(self.signbit(x), self.neg(x), x)

    def max(self, x: Value, y: Value) -> Value:
        return ops.maximum(self.b, x, y)

    def min(self, x: Value, y: Value) -> Value:
        return ops.minimum(self.b, x, y)

    # error-free transformations (no FMA primitive: Dekker's splitting; |x| < 2^995)
    def two_sum(self, a: Value, b: Value) -> Pair:
        s = self.add(a, b)
        bb = self.sub(s, a)
        return s, self.add(self.sub(a, self.sub(s, bb)), self.sub(b, bb))

    def split(self, a: Value) -> Pair:
        t = self.mul(a, self.c(134217729.0))
        hi = self.sub(t, self.sub(t, a))
        return hi, self.sub(a, hi)

    def square2(self, a: Value) -> Pair:
        """a*a as an exact pair (p, e)."""
        p = self.mul(a, a)
        h, lo = self.split(a)
        e = self.add(self.add(self.sub(self.mul(h, h), p), self.mul(self.c(2.0), self.mul(h, lo))),
                     self.mul(lo, lo))
        return p, e

    def x2y2m1(self, x: Value, y: Value) -> Value:
        """x^2 + y^2 - 1 without cancellation (double-double sum), for |x|, |y| < 2^500."""
        p1, e1 = self.square2(x)
        p2, e2 = self.square2(y)
        s1, t1 = self.two_sum(p1, self.c(-1.0))
        s2, t2 = self.two_sum(s1, p2)
        return self.add(s2, self.add(self.add(t1, t2), self.add(e1, e2)))

    def asinh(self, t: Value) -> Value:
        """Real asinh: log1p(a + a^2/(1 + sqrt(1 + a^2))), log(a) + log 2 for a > 2^28."""
        a = self.sabs(t)
        is_big = self.gt(a, self.c(2.0 ** 28))
        # each branch sees a harmless argument where the other is taken, so that reverse mode
        # (a zero cotangent times the branch's derivative) stays finite
        sa, ba = self.sel(is_big, self.c(1.0), a), self.sel(is_big, a, self.c(1.0))
        a2 = self.mul(sa, sa)
        root = ops.sqrt(self.b, self.add(self.c(1.0), a2))
        small = ops.log1p(self.b, self.add(sa, self.div(a2, self.add(self.c(1.0), root))))
        big = self.add(ops.log(self.b, ba), self.c(_LN2))
        return self.copysign(self.sel(is_big, big, small), t)


def _widened(fn: Callable[..., Pair]) -> Callable[..., Pair]:
    """Run `fn` in float64 on float32 operands, rounding each result once."""

    def wrapper(b: Builder, re: Value, im: Value) -> Pair:
        dtype = re.type.dtype
        if dtype == _F64:
            return fn(b, re, im)
        r, i = fn(b, ops.convert(b, re, _F64), ops.convert(b, im, _F64))
        return ops.convert(b, r, dtype), ops.convert(b, i, dtype)
    wrapper.__name__ = wrapper.__qualname__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


# ---- NumPy's arithmetic loops (in the operands' dtype) ---------------------------------

def cadd(b: Builder, ar: Value, ai: Value, br: Value, bi: Value) -> Pair:
    return ops.add(b, ar, br), ops.add(b, ai, bi)


def csub(b: Builder, ar: Value, ai: Value, br: Value, bi: Value) -> Pair:
    return ops.sub(b, ar, br), ops.sub(b, ai, bi)


def cneg(b: Builder, re: Value, im: Value) -> Pair:
    return ops.neg(b, re), ops.neg(b, im)


def cconj(b: Builder, re: Value, im: Value) -> Pair:
    return re, ops.neg(b, im)


def cmul(b: Builder, ar: Value, ai: Value, br: Value, bi: Value) -> Pair:
    """(ar*br - ai*bi, ar*bi + ai*br): NumPy's multiply (no Annex G recovery of infinities)."""
    e = _E(b, ar)
    return e.sub(e.mul(ar, br), e.mul(ai, bi)), e.add(e.mul(ar, bi), e.mul(ai, br))


def cmul_c99(b: Builder, a: Value, bb: Value, c: Value, d: Value) -> Pair:
    """C99 Annex G multiplication (the C compiler's complex multiply): the plain products,
    recomputed with the infinite parts turned to +-1 and nan parts to +-0 where both results
    are nan, so that an infinite operand gives an infinite product."""
    e = _E(b, a)
    ac, bd, ad, bc = e.mul(a, c), e.mul(bb, d), e.mul(a, d), e.mul(bb, c)
    x, y = e.sub(ac, bd), e.add(ad, bc)
    one, zero = e.c(1.0), e.c(0.0)

    def box(v: Value) -> Value:                     # copysign(isinf(v) ? 1 : 0, v)
        return e.sel(e.isinf(v), e.copysign_c(1.0, v), e.copysign_c(0.0, v))

    def unnan(v: Value) -> Value:                   # nan -> copysign(0, v)
        return e.sel(e.isnan(v), e.copysign_c(0.0, v), v)

    z_inf = e.or_(e.isinf(a), e.isinf(bb))
    w_inf = e.or_(e.isinf(c), e.isinf(d))
    a1 = e.sel(z_inf, box(a), a)
    b1 = e.sel(z_inf, box(bb), bb)
    c1 = e.sel(z_inf, unnan(c), c)
    d1 = e.sel(z_inf, unnan(d), d)
    c2 = e.sel(w_inf, box(c1), c1)
    d2 = e.sel(w_inf, box(d1), d1)
    a2 = e.sel(w_inf, unnan(a1), a1)
    b2 = e.sel(w_inf, unnan(b1), b1)
    overflow = e.and_(e.not_(e.or_(z_inf, w_inf)),
                      e.or_(e.isinf(ac), e.isinf(bd), e.isinf(ad), e.isinf(bc)))
    a3, b3, c3, d3 = (e.sel(overflow, unnan(v), v) for v in (a2, b2, c2, d2))
    def times_inf(t: Value) -> Value:                # inf * t without a product (reverse mode)
        return e.sel(e.or_(e.isnan(t), e.iszero(t)), e.c(math.nan), e.copysign_c(math.inf, t))

    rx = times_inf(e.sub(e.mul(a3, c3), e.mul(b3, d3)))
    ry = times_inf(e.add(e.mul(a3, d3), e.mul(b3, c3)))
    recalc = e.and_(e.isnan(x), e.isnan(y), e.or_(z_inf, w_inf, overflow))
    return e.sel2(recalc, (rx, ry), (x, y))


def cdiv(b: Builder, ar: Value, ai: Value, br: Value, bi: Value) -> Pair:
    """NumPy's divide: Smith's algorithm on the larger part of the divisor; a zero divisor
    divides each part by +0 (inf or nan)."""
    e = _E(b, ar)
    abr, abi = e.abs(br), e.abs(bi)
    one = e.c(1.0)
    first = e.ge(abr, abi)
    zero = e.and_(e.iszero(abr), e.iszero(abi))
    # each branch divides by 1 where it is not taken (finite reverse-mode derivatives)
    br1 = e.sel(e.and_(first, e.not_(zero)), br, one)
    bi2 = e.sel(first, one, bi)
    abr0 = e.sel(zero, abr, one)
    # |br| >= |bi|
    rat1 = e.div(bi, br1)
    scl1 = e.div(one, e.add(br1, e.mul(bi, rat1)))
    r1 = e.mul(e.add(ar, e.mul(ai, rat1)), scl1), e.mul(e.sub(ai, e.mul(ar, rat1)), scl1)
    # |br| < |bi|
    rat2 = e.div(br, bi2)
    scl2 = e.div(one, e.add(bi2, e.mul(br, rat2)))
    r2 = e.mul(e.add(e.mul(ar, rat2), ai), scl2), e.mul(e.sub(e.mul(ai, rat2), ar), scl2)
    r0 = e.div(ar, abr0), e.div(ai, abr0)
    return e.sel2(first, e.sel2(zero, r0, r1), r2)


def csquare(b: Builder, re: Value, im: Value) -> Pair:
    """NumPy's square: (re*re - im*im, re*im + im*re)."""
    e = _E(b, re)
    return e.sub(e.mul(re, re), e.mul(im, im)), e.add(e.mul(re, im), e.mul(im, re))


def creciprocal(b: Builder, re: Value, im: Value) -> Pair:
    """NumPy's reciprocal: Smith's algorithm for 1/z."""
    e = _E(b, re)
    one = e.c(1.0)
    first = ops.le(b, e.abs(im), e.abs(re))
    re1, im2 = e.sel(first, re, one), e.sel(first, one, im)    # 1 where the branch is not taken
    r1 = e.div(im, re1)
    d1 = e.add(re1, e.mul(im, r1))
    out1 = e.div(one, d1), e.div(e.neg(r1), d1)
    r2 = e.div(re, im2)
    d2 = e.add(e.mul(re, r2), im2)
    out2 = e.div(r2, d2), e.div(e.neg(one), d2)
    return e.sel2(first, out1, out2)


def _cpow_int(b: Builder, ar: Value, ai: Value, n: Value) -> Pair:
    """NumPy's binary powering for an integer exponent 0 < |n| < 100 (n a float value):
    the same products in the same order, a product taken only where its bit is set."""
    e = _E(b, ar)
    m = e.abs(n)
    acc: Pair = (e.c(1.0), e.c(0.0))
    p: Pair = (ar, ai)
    for k in range(7):
        bit = e.ge(ops.mod(b, m, e.c(float(2 ** (k + 1)))), e.c(float(2 ** k)))
        acc = e.sel2(bit, cmul(b, *acc, *p), acc)
        if k < 6:
            more = e.ge(m, e.c(float(2 ** (k + 1))))
            p = e.sel2(more, cmul(b, *p, *p), p)
    return acc


def cpow(b: Builder, ar: Value, ai: Value, br: Value, bi: Value) -> Pair:
    """a ** b as NumPy: 1 for b == 0; 0 for a == 0 and Re b > 0, nan for other b;
    for a real integer exponent |n| < 100 repeated multiplication (1/a**|n| for n < 0);
    otherwise exp(b * log(a)) (the C library's cpow)."""
    e = _E(b, ar)
    one, zero = e.c(1.0), e.c(0.0)
    n_int = e.and_(e.iszero(bi), e.eq(ops.floor(b, br), br), e.lt(e.abs(br), e.c(100.0)))
    safe_n = e.sel(n_int, br, one)
    powered = _cpow_int(b, ar, ai, safe_n)
    inv = cdiv(b, one, zero, *powered)
    integer = e.sel2(e.lt(safe_n, zero), inv, powered)
    integer = e.sel2(e.eq(safe_n, one), (ar, ai), integer)
    square = cmul(b, ar, ai, ar, ai)
    integer = e.sel2(e.eq(safe_n, e.c(2.0)), square, integer)
    integer = e.sel2(e.eq(safe_n, e.c(3.0)), cmul(b, ar, ai, *square), integer)
    lr, li = clog(b, ar, ai)
    general = cexp(b, *cmul_c99(b, br, bi, lr, li))
    out = e.sel2(n_int, integer, general)
    base0 = e.and_(e.iszero(ar), e.iszero(ai))
    nan = e.c(math.nan)
    out = e.sel2(base0, e.sel2(e.gt(br, zero), (zero, zero), (nan, nan)), out)
    return e.sel2(e.and_(e.iszero(br), e.iszero(bi)), (one, zero), out)


def cpow_scalar(b: Builder, re: Value, im: Value, p: complex | float | int) -> Pair:
    """``z ** p`` for a Python number ``p``, as NumPy's array operator: the exponents -1, 0,
    0.5, 1 and 2 are np.reciprocal, np.ones_like, np.sqrt, a copy and np.square (NumPy's
    fast path of ``ndarray.__pow__``; ``np.power(z, p)`` takes ``cpow`` instead); any other
    integer |p| < 100 unrolls NumPy's repeated multiplication for that exponent; other
    exponents are exp(p log z)."""
    e = _E(b, re)
    pc = complex(p)
    fast = {-1.0: lambda: creciprocal(b, re, im), 0.0: lambda: (e.c(1.0), e.c(0.0)),
            0.5: lambda: csqrt(b, re, im), 1.0: lambda: (re, im), 2.0: lambda: csquare(b, re, im)}
    if pc.imag == 0 and pc.real in fast:
        return fast[pc.real]()
    base0 = e.and_(e.iszero(re), e.iszero(im))
    zero, nan = e.c(0.0), e.c(math.nan)
    at0: Pair = (zero, zero) if pc.real > 0 else (nan, nan)
    if pc.imag == 0 and pc.real == int(pc.real) and abs(pc.real) < 100:
        n = int(pc.real)
        if n == 3:
            out: Pair = cmul(b, re, im, *cmul(b, re, im, re, im))
        else:
            m, acc, pw = abs(n), (e.c(1.0), zero), (re, im)
            while True:
                if m & 1:
                    acc = cmul(b, *acc, *pw)
                m >>= 1
                if not m:
                    break
                pw = cmul(b, *pw, *pw)
            out = cdiv(b, e.c(1.0), zero, *acc) if n < 0 else acc
        return e.sel2(base0, at0, out)
    lr, li = clog(b, re, im)
    out = cexp(b, *cmul_c99(b, e.c(pc.real), e.c(pc.imag), lr, li))
    return e.sel2(base0, at0, out)


# ---- exponential and logarithms --------------------------------------------------------

def _exp_scaled(e: _E, x: Value) -> Pair:
    """(f, m) with exp(x) = f * m and f, m finite wherever exp(x/2) is: exp(x) below 700,
    exp(x/2) twice above (so that exp(x) * c stays finite for a small c)."""
    big = e.gt(x, e.c(700.0))
    f = ops.exp(e.b, e.sel(big, e.mul(x, e.c(0.5)), x))
    return f, e.sel(big, f, e.c(1.0))


@_widened
def cexp(b: Builder, x: Value, y: Value) -> Pair:
    """exp(x + iy) = exp(x) (cos y + i sin y), C99 G.6.3.1."""
    e = _E(b, x)
    f, m = _exp_scaled(e, x)
    re = e.mul(e.mul(f, ops.cos(b, y)), m)
    im = e.mul(e.mul(f, ops.sin(b, y)), m)
    yfin = e.isfinite(y)
    # x = -inf, y inf/nan: +0 +- i0 (the sign of y); x = +inf, y inf/nan: inf + i nan
    out = e.sel2(e.and_(e.isinf(x), e.not_(yfin)),
                 e.sel2(e.lt(x, e.c(0.0)), (e.c(0.0), e.copysign_c(0.0, y)), (x, e.c(math.nan))), (re, im))
    # y = 0 gives im = y; for finite x below 1400 the product above is that zero already
    return out[0], e.sel(e.and_(e.iszero(y), e.not_(e.lt(x, e.c(1400.0)))), y, out[1])


@_widened
def cexp2(b: Builder, x: Value, y: Value) -> Pair:
    """2 ** z = 2^x (cos(y log 2) + i sin(y log 2)), the phase y log 2 = p + d carried as a
    double-double (cos(p + d) = cos p - d sin p): NumPy's exp(z log 2) rounds the phase."""
    e = _E(b, x)
    p = e.mul(y, e.c(_LN2))
    yh, yl = e.split(y)
    lh, ll = e.split(e.c(_LN2))
    err = e.add(e.add(e.add(e.sub(e.mul(yh, lh), p), e.mul(yh, ll)), e.mul(yl, lh)), e.mul(yl, ll))
    d = e.add(err, e.mul(y, e.c(_LN2_LO)))
    d = e.sel(e.lt(e.abs(y), e.c(2.0 ** 50)), d, e.c(0.0))       # a first-order correction
    cp, sp = ops.cos(b, p), ops.sin(b, p)
    c, s = e.sub(cp, e.mul(d, sp)), e.sel(e.iszero(y), sp, e.add(sp, e.mul(d, cp)))   # sin(-0) = -0
    big = e.gt(x, e.c(1000.0))
    f = ops.exp2(b, e.sel(big, e.mul(x, e.c(0.5)), x))
    m = e.sel(big, f, e.c(1.0))
    re, im = e.mul(e.mul(f, c), m), e.mul(e.mul(f, s), m)
    yfin = e.isfinite(y)
    out = e.sel2(e.and_(e.isinf(x), e.not_(yfin)),
                 e.sel2(e.lt(x, e.c(0.0)), (e.c(0.0), e.copysign_c(0.0, y)), (x, e.c(math.nan))), (re, im))
    # y = 0 gives im = y; for finite x below 1400 the product above is that zero already
    return out[0], e.sel(e.and_(e.iszero(y), e.not_(e.lt(x, e.c(1400.0)))), y, out[1])


@_widened
def cexpm1(b: Builder, x: Value, y: Value) -> Pair:
    """exp(z) - 1 = (expm1(x) cos y - 2 sin^2(y/2)) + i exp(x) sin y, NumPy's formula."""
    e = _E(b, x)
    a = ops.sin(b, e.mul(y, e.c(0.5)))
    re = e.sub(e.mul(ops.expm1(b, x), ops.cos(b, y)), e.mul(e.mul(e.c(2.0), a), a))
    return re, e.mul(ops.exp(b, x), ops.sin(b, y))


def _log_abs(e: _E, x: Value, y: Value) -> Value:
    """log|x + iy|: log(hypot) away from |z| = 1, log1p(x^2 + y^2 - 1)/2 near it."""
    m = e.max(e.abs(x), e.abs(y))
    big, tiny = e.gt(m, e.c(2.0 ** 1000)), e.lt(m, e.c(2.0 ** -900))
    s = e.sel(big, e.c(2.0 ** -8), e.sel(tiny, e.c(2.0 ** 600), e.c(1.0)))
    back = e.sel(big, e.c(8 * _LN2), e.sel(tiny, e.c(-600 * _LN2), e.c(0.0)))
    h = ops.hypot(e.b, e.mul(x, s), e.mul(y, s))
    near = e.and_(e.gt(h, e.c(0.5)), e.lt(h, e.c(2.0)), e.not_(e.or_(big, tiny)))
    sx = e.sel(near, x, e.c(0.0))
    sy = e.sel(near, y, e.c(0.0))
    close = e.mul(e.c(0.5), ops.log1p(e.b, e.x2y2m1(sx, sy)))
    return e.sel(near, close, e.add(ops.log(e.b, h), back))


@_widened
def clog(b: Builder, x: Value, y: Value) -> Pair:
    """log z = log|z| + i atan2(y, x), C99 G.6.3.2 (the cut along the negative real axis:
    log(-1 - 0j) = -pi j)."""
    e = _E(b, x)
    return _log_abs(e, x, y), ops.arctan2(b, y, x)


def _scaled_log(b: Builder, x: Value, y: Value, k: tuple[float, float]) -> Pair:
    """log z times the constant k = k[0] + k[1] (a double-double: one rounding per part)."""
    dtype = x.type.dtype
    if dtype != _F64:
        x, y = ops.convert(b, x, _F64), ops.convert(b, y, _F64)
    e = _E(b, x)
    lr, li = clog(b, x, y)
    khi, klo = e.c(k[0]), e.c(k[1])
    r = e.add(e.mul(lr, khi), e.mul(lr, klo))
    i = e.add(e.mul(li, khi), e.mul(li, klo))
    if dtype != _F64:
        return ops.convert(b, r, dtype), ops.convert(b, i, dtype)
    return r, i


_INV_LN2 = (1.4426950408889634, 2.0355273740931033e-17)
_INV_LN10 = (0.4342944819032518, 1.098319650216765e-17)


def clog2(b: Builder, x: Value, y: Value) -> Pair:
    """log2 z = log z / log 2 (both parts scaled, as NumPy)."""
    return _scaled_log(b, x, y, _INV_LN2)


def clog10(b: Builder, x: Value, y: Value) -> Pair:
    """log10 z = log z / log 10 (both parts scaled, as NumPy)."""
    return _scaled_log(b, x, y, _INV_LN10)


@_widened
def clog1p(b: Builder, x: Value, y: Value) -> Pair:
    """log(1 + z): log1p(2x + x^2 + y^2)/2 in double-double near |1 + z| = 1 (accurate for
    small z, where NumPy's log(hypot(1 + x, y)) gives 0), log|1 + z| elsewhere;
    the imaginary part is atan2(y, 1 + x) as NumPy."""
    e = _E(b, x)
    u = e.add(x, e.c(1.0))
    h = ops.hypot(b, u, y)
    near = e.and_(e.gt(h, e.c(0.5)), e.lt(h, e.c(2.0)), e.lt(e.abs(x), e.c(4.0)))
    sx = e.sel(near, x, e.c(0.0))
    sy = e.sel(near, y, e.c(0.0))
    p1, e1 = e.square2(sx)
    p2, e2 = e.square2(sy)
    s1, t1 = e.two_sum(e.mul(e.c(2.0), sx), p1)
    s2, t2 = e.two_sum(s1, p2)
    d = e.add(s2, e.add(e.add(t1, t2), e.add(e1, e2)))
    close = e.mul(e.c(0.5), ops.log1p(b, d))
    return e.sel(near, close, ops.log(b, h)), ops.arctan2(b, y, u)


@_widened
def csqrt(b: Builder, x: Value, y: Value) -> Pair:
    """Principal square root with power-of-two scaling, C99 G.6.4.2 (csqrt(-4 - 0j) = -2j)."""
    e = _E(b, x)
    ax, ay = e.abs(x), e.abs(y)
    m = e.max(ax, ay)
    big = e.ge(m, e.c(2.0 ** 1020))
    tiny = e.lt(m, e.c(2.0 ** -1020))
    s = e.sel(big, e.c(0.25), e.sel(tiny, e.c(2.0 ** 54), e.c(1.0)))
    post = e.sel(big, e.c(2.0), e.sel(tiny, e.c(2.0 ** -27), e.c(1.0)))
    a, bb = e.mul(x, s), e.mul(y, s)
    h = ops.hypot(b, a, bb)
    half = e.c(0.5)
    t = ops.sqrt(b, e.mul(e.add(e.sabs(a), h), half))
    two_t = e.mul(e.c(2.0), t)
    pos = t, e.div(bb, two_t)
    negv = e.div(e.abs(bb), two_t), e.copysign(t, bb)
    re, im = e.sel2(e.signbit(a), negv, pos)
    re, im = e.mul(re, post), e.mul(im, post)
    inf, nan = e.c(math.inf), e.c(math.nan)
    # the special cases, lowest priority first
    xinf = e.isinf(x)
    yy = e.sub(y, y)                       # 0 for finite y, nan otherwise
    out = e.sel2(xinf, e.sel2(e.signbit(x), (e.abs(yy), e.copysign_c(math.inf, y)), (x, e.copysign(yy, y))), (re, im))
    out = e.sel2(e.isnan(x), (nan, nan), out)
    out = e.sel2(e.isinf(y), (inf, y), out)
    return e.sel2(e.and_(e.iszero(x), e.iszero(y)), (e.c(0.0), y), out)


# ---- hyperbolic and trigonometric --------------------------------------------------------

def _sinh_cosh_scaled(e: _E, x: Value) -> tuple[Value, Value, Value]:
    """(s, c, m) with sinh x = s * m and cosh x = c * m; m = 1 below |x| = 700, otherwise
    s = ±c = exp(|x|/2)/2 and m = exp(|x|/2)."""
    ax = e.abs(x)
    big = e.gt(ax, e.c(700.0))
    h = ops.exp(e.b, e.mul(e.sel(big, ax, e.c(0.0)), e.c(0.5)))
    hh = e.mul(h, e.c(0.5))
    s = e.sel(big, e.copysign(hh, x), ops.sinh(e.b, x))
    c = e.sel(big, hh, ops.cosh(e.b, x))
    return s, c, e.sel(big, h, e.c(1.0))


def _csinh(b: Builder, x: Value, y: Value) -> Pair:
    e = _E(b, x)
    s, c, m = _sinh_cosh_scaled(e, x)
    re = e.mul(e.mul(s, ops.cos(b, y)), m)
    im = e.mul(e.mul(c, ops.sin(b, y)), m)
    nan = e.c(math.nan)
    xfin, yfin = e.isfinite(x), e.isfinite(y)
    yy = e.sub(y, y)
    # x = +-inf: (x cos y, inf sin y) for finite y, (x, nan) otherwise
    xinf = e.sel2(yfin, (e.mul(x, ops.cos(b, y)), e.copysign_c(math.inf, ops.sin(b, y))), (e.abs(x), yy))
    out = e.sel2(e.isinf(x), xinf, (re, im))
    out = e.sel2(e.and_(xfin, e.not_(yfin)), (nan, nan), out)
    # y = 0: (sinh x, y) (the products above give it for finite x below 1400)
    y0 = e.and_(e.iszero(y), e.not_(e.lt(e.abs(x), e.c(1400.0))))
    out = e.sel2(y0, (e.sel(xfin, out[0], x), y), out)
    # x = 0 and y inf/nan: (x, nan)
    return e.sel2(e.and_(e.iszero(x), e.not_(yfin)), (x, nan), out)


def _ccosh(b: Builder, x: Value, y: Value) -> Pair:
    e = _E(b, x)
    s, c, m = _sinh_cosh_scaled(e, x)
    re = e.mul(e.mul(c, ops.cos(b, y)), m)
    im = e.mul(e.mul(s, ops.sin(b, y)), m)
    nan = e.c(math.nan)
    xfin, yfin = e.isfinite(x), e.isfinite(y)
    yy = e.sub(y, y)
    xinf = e.sel2(yfin, (e.copysign_c(math.inf, ops.cos(b, y)), e.mul(x, ops.sin(b, y))),
                  (e.c(math.inf), e.mul(x, yy)))
    out = e.sel2(e.isinf(x), xinf, (re, im))
    out = e.sel2(e.and_(xfin, e.not_(yfin)), (nan, nan), out)
    # y = 0: (cosh x, x*y)-signed zero; x nan or inf: (x*x, copysign(0, x) * y)
    y0 = e.sel2(xfin, (out[0], e.mul(e.copysign_c(0.0, x), y)),
                (e.mul(x, x), e.mul(e.copysign_c(0.0, x), y)))
    out = e.sel2(e.and_(e.iszero(y), e.not_(e.lt(e.abs(x), e.c(1400.0)))), y0, out)
    # x = 0 and y inf/nan: (nan, +0)
    return e.sel2(e.and_(e.iszero(x), e.not_(yfin)), (nan, e.c(0.0)), out)


def _ctanh(b: Builder, x: Value, y: Value) -> Pair:
    e = _E(b, x)
    one = e.c(1.0)
    far_x = e.ge(e.abs(x), e.c(22.0))
    t = ops.tan(b, y)
    beta = e.add(one, e.mul(t, t))
    s = ops.sinh(b, e.sel(far_x, e.c(0.0), x))
    rho = ops.sqrt(b, e.add(one, e.mul(s, s)))
    denom = e.add(one, e.mul(e.mul(beta, s), s))
    re = e.div(e.mul(e.mul(beta, rho), s), denom)
    im = e.div(t, denom)
    # |x| >= 22: tanh x = +-1, im = 4 sin y cos y exp(-2|x|)
    em = ops.exp(b, e.neg(e.abs(x)))
    sc = e.mul(ops.sin(b, y), ops.cos(b, y))
    far = e.copysign_c(1.0, x), e.mul(e.mul(e.mul(e.c(4.0), sc), em), em)
    out = e.sel2(far_x, far, (re, im))
    nan = e.c(math.nan)
    out = e.sel2(e.not_(e.isfinite(y)), (nan, nan), out)
    xinf = e.copysign_c(1.0, x), e.copysign_c(0.0, e.sel(e.isinf(y), y, sc))
    out = e.sel2(e.isinf(x), xinf, out)
    out = e.sel2(e.isnan(x), (x, e.sel(e.iszero(y), y, nan)), out)
    return e.sel2(e.and_(e.iszero(x), e.not_(e.isfinite(y))), (x, nan), out)


csinh = _widened(_csinh)
ccosh = _widened(_ccosh)
ctanh = _widened(_ctanh)
csinh.__doc__ = "sinh z, C99 G.6.2.5; exp(|x|/2)^2 scaling near the overflow threshold."
ccosh.__doc__ = "cosh z, C99 G.6.2.4; exp(|x|/2)^2 scaling near the overflow threshold."
ctanh.__doc__ = "tanh z by Kahan's formula, C99 G.6.2.6."


@_widened
def csin(b: Builder, x: Value, y: Value) -> Pair:
    """sin z = -i sinh(iz)."""
    e = _E(b, x)
    u, v = _csinh(b, ops.neg(b, y), x)
    return e.sel2(e.and_(e.isinf(y), e.not_(e.isfinite(x))), (e.c(math.nan), e.c(math.inf)), (v, ops.neg(b, u)))


@_widened
def ccos(b: Builder, x: Value, y: Value) -> Pair:
    """cos z = cosh(iz)."""
    return _ccosh(b, ops.neg(b, y), x)


@_widened
def ctan(b: Builder, x: Value, y: Value) -> Pair:
    """tan z = -i tanh(iz)."""
    u, v = _ctanh(b, ops.neg(b, y), x)
    return v, ops.neg(b, u)


# ---- inverse functions ---------------------------------------------------------------------

def _casinh(b: Builder, x: Value, y: Value) -> Pair:
    """asinh z by Kahan's asin(w) = atan(u/Re(sqrt(1-w) sqrt(1+w))) + i asinh(Im(conj(sqrt(1-w))
    sqrt(1+w))) at w = iz; log(2|z|) + i arg for |z| > 2^28, C99 G.6.2.2."""
    e = _E(b, x)
    u, v = ops.neg(b, y), x                                   # w = iz
    one = e.c(1.0)
    ar, ai = csqrt(b, e.sub(one, u), ops.neg(b, v))          # sqrt(1 - w)
    br, bi = csqrt(b, e.add(one, u), v)                      # sqrt(1 + w)
    asin_re = ops.arctan2(b, u, e.sub(e.mul(ar, br), e.mul(ai, bi)))
    asin_im = e.asinh(e.sub(e.mul(ar, bi), e.mul(ai, br)))
    re, im = asin_im, ops.neg(b, asin_re)                     # asinh z = -i asin(iz)
    ax, ay = e.abs(x), e.abs(y)
    big = e.or_(e.gt(ax, e.c(2.0 ** 28)), e.gt(ay, e.c(2.0 ** 28)))
    fx, fy = e.sel(big, x, one), e.sel(big, y, e.c(0.0))     # (1, 0) where not taken
    far_re = e.copysign(e.add(_log_abs(e, fx, fy), e.c(_LN2)), x)
    far_im = ops.arctan2(b, fy, e.abs(fx))
    out = e.sel2(big, (far_re, far_im), (re, im))
    out = e.sel2(e.lt(e.max(ax, ay), e.c(2.0 ** -30)), (x, y), out)    # asinh z = z + O(z^3)
    # nan: (nan, y) for y = 0; (+-inf, nan) for y = inf; (nan, nan) otherwise
    nan = e.c(math.nan)
    xnan = e.sel2(e.iszero(y), (nan, y), e.sel2(e.isinf(y), (e.c(math.inf), nan), (nan, nan)))
    out = e.sel2(e.isnan(x), xnan, out)
    out = e.sel2(e.and_(e.isnan(y), e.not_(e.isinf(x))), (nan, nan), out)
    return out


def _casin(b: Builder, x: Value, y: Value) -> Pair:
    e = _E(b, x)
    u, v = _casinh(b, ops.neg(b, y), x)                      # asin z = -i asinh(iz)
    return e.sel2(e.and_(e.isinf(x), e.isnan(y)), (e.c(math.nan), e.c(math.inf)), (v, ops.neg(b, u)))


casinh = _widened(_casinh)
carcsinh = casinh
carcsin = _widened(_casin)
carcsinh.__doc__ = "asinh z: Kahan's formula, log(2|z|) + i arg z for large |z|, C99 G.6.2.2."
carcsin.__doc__ = "asin z = -i asinh(iz)."


@_widened
def carccos(b: Builder, x: Value, y: Value) -> Pair:
    """acos z by Kahan: 2 atan2(Re sqrt(1-z), Re sqrt(1+z)) + i asinh(Im(conj(sqrt(1+z))
    sqrt(1-z))); atan2(|y|, x) - i log(2|z|) for large |z|, C99 G.6.1.1."""
    e = _E(b, x)
    one = e.c(1.0)
    ar, ai = csqrt(b, e.sub(one, x), ops.neg(b, y))
    br, bi = csqrt(b, e.add(one, x), y)
    re = e.mul(e.c(2.0), ops.arctan2(b, ar, br))
    im = e.asinh(e.sub(e.mul(br, ai), e.mul(bi, ar)))
    ax, ay = e.abs(x), e.abs(y)
    big = e.or_(e.gt(ax, e.c(2.0 ** 28)), e.gt(ay, e.c(2.0 ** 28)))
    fx, fy = e.sel(big, x, one), e.sel(big, y, e.c(0.0))
    far = ops.arctan2(b, e.abs(fy), fx), e.neg(e.copysign(e.add(_log_abs(e, fx, fy), e.c(_LN2)), y))
    out = e.sel2(big, far, (re, im))
    out = e.sel2(e.lt(e.max(ax, ay), e.c(2.0 ** -30)), (e.sub(e.c(math.pi / 2), x), e.neg(y)), out)
    nan = e.c(math.nan)
    xnan = e.sel2(e.isinf(y), (nan, e.neg(y)), (nan, nan))
    out = e.sel2(e.isnan(x), xnan, out)
    ynan = e.sel2(e.isinf(x), (nan, e.c(-math.inf)), e.sel2(e.iszero(x), (e.c(math.pi / 2), nan), (nan, nan)))
    return e.sel2(e.isnan(y), ynan, out)


@_widened
def carccosh(b: Builder, x: Value, y: Value) -> Pair:
    """acosh z by Kahan: asinh(Re(conj(sqrt(z-1)) sqrt(z+1))) + 2i atan2(Im sqrt(z-1),
    Re sqrt(z+1)); log(2|z|) + i arg for large |z|, C99 G.6.2.1."""
    e = _E(b, x)
    one = e.c(1.0)
    ar, ai = csqrt(b, e.sub(x, one), y)
    br, bi = csqrt(b, e.add(x, one), y)
    re = e.asinh(e.add(e.mul(ar, br), e.mul(ai, bi)))
    im = e.mul(e.c(2.0), ops.arctan2(b, ai, br))
    ax, ay = e.abs(x), e.abs(y)
    big = e.or_(e.gt(ax, e.c(2.0 ** 28)), e.gt(ay, e.c(2.0 ** 28)))
    fx, fy = e.sel(big, x, one), e.sel(big, y, e.c(0.0))
    far = e.add(_log_abs(e, fx, fy), e.c(_LN2)), e.copysign(ops.arctan2(b, e.abs(fy), fx), y)
    out = e.sel2(big, far, (re, im))
    tiny = e.lt(e.max(ax, ay), e.c(2.0 ** -30))          # i acos z = i (pi/2 - z) + O(z^3)
    out = e.sel2(tiny, (ay, e.copysign(e.sub(e.c(math.pi / 2), x), y)), out)
    nan, inf = e.c(math.nan), e.c(math.inf)
    out = e.sel2(e.isnan(x), e.sel2(e.isinf(y), (inf, nan), (nan, nan)), out)
    ynan = e.sel2(e.isinf(x), (inf, nan), e.sel2(e.iszero(x), (nan, e.c(math.pi / 2)), (nan, nan)))
    return e.sel2(e.isnan(y), ynan, out)


def _catanh(b: Builder, x: Value, y: Value) -> Pair:
    e = _E(b, x)
    one = e.c(1.0)
    ax, ay = e.sabs(x), e.sabs(y)
    big = e.or_(e.gt(ax, e.c(2.0 ** 500)), e.gt(ay, e.c(2.0 ** 500)))
    sx, sy = e.sel(big, e.c(0.0), ax), e.sel(big, e.c(0.0), ay)
    omx = e.sub(one, sx)
    h1 = ops.hypot(b, omx, sy)                              # |1 - z|, no under/overflow
    re = e.mul(e.c(0.25), ops.log1p(b, e.div(e.div(e.mul(e.c(4.0), sx), h1), h1)))
    # |1 - z| < 2^-500 (z near 1): log1p(4x/|1-z|^2) = log(4x) - 2 log|1 - z| to 2^-1000
    is1 = e.lt(h1, e.c(2.0 ** -500))
    s1, hh1 = e.sel(is1, sx, one), e.sel(is1, h1, one)
    near1 = e.mul(e.c(0.25), e.sub(ops.log(b, e.mul(e.c(4.0), s1)), e.mul(e.c(2.0), ops.log(b, hh1))))
    re = e.sel(is1, near1, re)
    im = e.mul(e.c(0.5), ops.arctan2(b, e.mul(e.c(2.0), sy), e.sub(e.c(0.0), e.x2y2m1(sx, sy))))
    xs = e.mul(e.sel(big, ax, one), e.c(2.0 ** -8))           # (1, 0) where not taken
    ys = e.mul(e.sel(big, ay, e.c(0.0)), e.c(2.0 ** -8))
    hs = ops.hypot(b, xs, ys)
    nan = e.c(math.nan)
    far = e.mul(e.div(e.div(xs, hs), hs), e.c(2.0 ** -8)), e.sel(e.or_(e.isnan(x), e.isnan(y)), nan, e.c(math.pi / 2))
    re, im = e.sel2(big, far, (re, im))
    re, im = e.sel2(e.lt(e.max(ax, ay), e.c(2.0 ** -30)), (ax, ay), (re, im))
    re, im = e.sel2(e.or_(e.isinf(x), e.isinf(y)), (e.c(0.0), e.sel(e.isnan(y), nan, e.c(math.pi / 2))), (re, im))
    re, im = e.sel2(e.and_(e.iszero(x), e.isnan(y)), (e.c(0.0), nan), (re, im))
    return e.copysign(re, x), e.copysign(im, y)


def _catan(b: Builder, x: Value, y: Value) -> Pair:
    e = _E(b, x)
    u, v = _catanh(b, ops.neg(b, y), x)                      # atan z = -i atanh(iz)
    # atan(+-inf + i nan) = +-pi/2 + i0 (the C library's sign of the zero)
    return v, e.sel(e.and_(e.isinf(x), e.isnan(y)), e.c(0.0), ops.neg(b, u))


carctanh = _widened(_catanh)
carctan = _widened(_catan)
carctanh.__doc__ = ("atanh z = log1p(4x/((1-x)^2 + y^2))/4 + i atan2(2y, 1 - x^2 - y^2)/2 with the "
                    "double-double 1 - x^2 - y^2; x/|z|^2 + i pi/2 for large |z|, C99 G.6.2.3.")
carctan.__doc__ = "atan z = -i atanh(iz)."


# ---- real-valued and bool results -------------------------------------------------------

def cabs(b: Builder, re: Value, im: Value) -> Value:
    """|z| = hypot(re, im) (inf if either part is inf, even with a nan)."""
    return ops.hypot(b, re, im)


def cangle(b: Builder, re: Value, im: Value) -> Value:
    """np.angle: atan2(im, re)."""
    return ops.arctan2(b, im, re)


@_widened
def csign(b: Builder, re: Value, im: Value) -> Pair:
    """NumPy 2's sign: z/|z|, 0 at 0; nan for a nan part; for an infinite z the unit
    vector along the infinite part (nan if both are infinite)."""
    e = _E(b, re)
    h = ops.hypot(b, re, im)
    zero, one, nan = e.c(0.0), e.c(1.0), e.c(math.nan)
    out = e.div(re, h), e.div(im, h)
    rinf, iinf = e.isinf(re), e.isinf(im)
    sgn = lambda v: e.sel(e.gt(v, zero), one, e.neg(one))   # noqa: E731
    inf = e.sel2(rinf, e.sel2(iinf, (nan, nan), (sgn(re), zero)), (zero, sgn(im)))
    out = e.sel2(e.isinf(h), inf, out)
    out = e.sel2(e.iszero(h), (zero, zero), out)
    return e.sel2(e.isnan(h), (nan, nan), out)


def cisfinite(b: Builder, re: Value, im: Value) -> Value:
    return ops.and_(b, ops.isfinite(b, re), ops.isfinite(b, im))


def cisnan(b: Builder, re: Value, im: Value) -> Value:
    return ops.or_(b, ops.isnan(b, re), ops.isnan(b, im))


def cisinf(b: Builder, re: Value, im: Value) -> Value:
    return ops.or_(b, ops.isinf(b, re), ops.isinf(b, im))


#: NumPy ufunc name -> (b, re, im) -> (re, im)
COMPLEX_UNARY: dict[str, Callable[[Builder, Value, Value], Pair]] = {
    "negative": cneg, "conjugate": cconj, "square": csquare, "reciprocal": creciprocal,
    "exp": cexp, "exp2": cexp2, "expm1": cexpm1, "log": clog, "log2": clog2, "log10": clog10,
    "log1p": clog1p, "sqrt": csqrt, "sin": csin, "cos": ccos, "tan": ctan, "sinh": csinh,
    "cosh": ccosh, "tanh": ctanh, "arcsin": carcsin, "arccos": carccos, "arctan": carctan,
    "arcsinh": carcsinh, "arccosh": carccosh, "arctanh": carctanh, "sign": csign,
}

#: NumPy ufunc name -> (b, ar, ai, br, bi) -> (re, im)
COMPLEX_BINARY: dict[str, Callable[[Builder, Value, Value, Value, Value], Pair]] = {
    "add": cadd, "subtract": csub, "multiply": cmul, "divide": cdiv, "power": cpow,
}

#: NumPy ufunc name -> (b, re, im) -> one real (abs, angle) or bool value
COMPLEX_TO_REAL: dict[str, Callable[[Builder, Value, Value], Value]] = {
    "absolute": cabs, "angle": cangle, "isfinite": cisfinite, "isnan": cisnan, "isinf": cisinf,
}
