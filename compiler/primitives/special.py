"""Special functions: the ``bitcast`` primitive behind NumPy's bit-level float functions
(signbit, nextafter, spacing, frexp, ldexp), and the transcendental special functions
(erf, erfc, erfcx, erfinv, erfcinv, lgamma, gamma, digamma, polygamma, i0e, i1e).

The transcendental ones are primitives with a ``decomposition`` into elementwise
primitives (polynomials, exp, log, selects), so vmap and AD see one op with its derivative
(erf' = 2/sqrt(pi) exp(-x^2), lgamma' = digamma, digamma' = polygamma(1), ...) and the
backend fuses and vectorizes the decomposed code like any elementwise chain. Every branch
is computed and selected (no control flow); float32 is computed in float64 and rounded
once. The algorithms (docs/special.md has the measured errors):

* erfcx(x), x >= 0: (1 + 2x) erfcx(x) is a Chebyshev series in t = (x - K)/(x + K), K = 3.75
  (Shepherd and Laframboise's change of variable, our own coefficients), summed by Clenshaw's
  recurrence; erfc = exp(-x^2) erfcx with x^2 split exactly; erf is its Taylor series for
  |x| < 0.75 and 1 - erfc beyond; negative arguments by the reflections.
* erfinv, erfcinv: a fitted start (w = -log((1 - p)(1 + p))), then two Halley steps on
  erf(y) - p, written as q - erfc(y) where 1 - p is small so that the tails keep their digits.
* lgamma, x > 0: the Taylor series of lgamma(2 + t) for |t| <= 1/2, reached by the exact
  recurrence over products (x in [1.5, 8): downward; x < 1.5: upward, with log1p); Stirling's
  series beyond 8. Negative x by the reflection with sin(pi x) on the reduced argument.
* gamma: below 10, exp of lgamma(2 + t)'s Taylor series times the exact recurrence's terms;
  from 10, Stirling's formula as (x^((x-1/2)/2) e^(-x/2))^2 (no overflow before the result
  does); reflection below 0, with 1 - x carried exactly.
* digamma: below 8 the Taylor series at its positive root on [1, 2], reached by the
  recurrence in the direction where its terms do not cancel; the asymptotic series with
  Bernoulli numbers from 8; the reflection below 0. polygamma(n): the upward recurrence to
  z >= 8 + 2n (its terms have one sign), then the asymptotic series; below 0 the n-th
  derivative of the reflection formula (a polynomial in cot(pi x)).
* i0e, i1e: the power series (all terms positive) for |x| <= 20 times exp(-|x|), the
  asymptotic expansion beyond.

``bitcast`` reinterprets the bits of a float64 (float32) element as an int64 (int32) and
back, as NumPy's ``x.view(np.int64)``; the functions above are integer arithmetic on the
bit pattern (compiler/frontend/special.py), so they stay elementwise, fuse and vectorize.
A bit pattern has no derivative: a function that must be differentiable multiplies its
operand by a power of two made from bits (ldexp, frexp's mantissa), so the derivative
flows through the product. docs/special.md lists the functions.
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Callable, Sequence

import numpy as np
from llvmlite import ir as ll

from compiler.ir.builder import Builder
from compiler.ir.core import Op, Value
from compiler.ir.primitive import Primitive, define
from compiler.ir.types import F32, F64, I32, I64, TensorType, is_float
from compiler.primitives import ad, ops
from compiler.primitives.base import check, same_shape_rule
from compiler.primitives.batching import elementwise_rule

_PARTNER = {F64: I64, I64: F64, F32: I32, I32: F32}
_LLVM = {F64: ll.DoubleType(), F32: ll.FloatType(), I64: ll.IntType(64), I32: ll.IntType(32)}


def _bitcast_rule(in_types: tuple[TensorType, ...], params: dict[str, Any]) -> tuple[TensorType, ...]:
    (x,) = in_types
    dtype = np.dtype(params["dtype"])
    check(x.dtype in _PARTNER and _PARTNER[x.dtype] == dtype,
          f"bitcast: {x.dtype} -> {dtype} is not supported (float64 <-> int64, float32 <-> int32)")
    return (x.with_dtype(dtype),)


def _ref_bitcast(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """x.view(dtype): the same bits, read as another type of the same width"""
    return np.ascontiguousarray(x).view(np.dtype(dtype))


bitcast = define(
    ops.bitcast_p, shape_rule=_bitcast_rule, numpy_ref=_ref_bitcast,
    lower=lambda cg, op, a: cg.b.bitcast(a[0], _LLVM[np.dtype(op.params["dtype"])]),
    vmap_rule=elementwise_rule, jvp_rule=ad.zero_rules()[0], vjp_rule=ad.zero_rules()[1],
    doc="x.view(dtype): float64 <-> int64, float32 <-> int32 bit patterns")


# ---- coefficients (python -m compiler.primitives._special_fit prints them) ----------------

ERFCX_CHEB = (
    1.1775789345674017, -0.004590054580646478, -0.08424913336651792,
    0.05920993999819189, -0.026658668435305753, 0.009074997670705265,
    -0.002413163540417608, 0.0004907758365258086, -6.916973302501207e-05,
    4.13902798607301e-06, 7.74038306619849e-07, -2.1886401049234397e-07,
    1.076499946567091e-08, 4.521959811218287e-09, -7.754400208831351e-10,
    -6.318088340886684e-11, 2.86879501093067e-11, 1.9455868545777347e-13,
    -9.65469674843344e-13, 3.25254814814874e-14, 3.3478119482868056e-14,
    -1.864562880419312e-15, -1.2507950530689464e-15, 7.41823525660353e-17,
    5.068148904898018e-17, -2.2370566535219128e-18, -2.187342950854826e-18,
    2.6766203490053038e-20, 9.736549875496075e-20, 3.323660533039581e-21,
    -4.284156561284225e-21, -4.463988866045898e-22,
)

ERFINV_SMALL = (
    1.5014093540918014, 0.24664026873554645, -0.0041773531714251995,
    -0.0012526946111235447, 0.00021831186944030098, -4.996307806259392e-06,
    -3.4528869795915436e-06, 4.7442221982717546e-07, 2.232623785699658e-08,
    -9.465170854893345e-09,
)

ERFINV_LARGE = (
    2.83440685985825, 0.999264412168061, 0.0077058325258008405,
    -0.002483330398769233, 0.0004223079504041326, -4.3109757048092526e-05,
    2.7103466492769106e-06, -1.0264647155538637e-07, 2.146533578444143e-09,
    -1.9033315670183634e-11,
)

LGAMMA2_TAYLOR = (
    0.0, 0.42278433509846713, 0.3224670334241132,
    -0.0673523010531981, 0.020580808427784546, -0.007385551028673986,
    0.0028905103307415234, -0.001192753911703261, 0.0005096695247430425,
    -0.00022315475845357939, 9.945751278180853e-05, -4.492623673813314e-05,
    2.050721277567069e-05, -9.439488275268397e-06, 4.374866789907488e-06,
    -2.039215753801366e-06, 9.55141213040742e-07, -4.492469198764566e-07,
    2.1207184805554665e-07, -1.0043224823968099e-07, 4.7698101693639804e-08,
    -2.2711094608943164e-08, 1.0838659214896955e-08, -5.183475041970047e-09,
    2.4836745438024785e-09, -1.1921401405860912e-09, 5.731367241678862e-10,
    -2.7595228851242334e-10, 1.330476437424449e-10, -6.4229645638381e-11,
    3.1044247747322276e-11,
)

DIGAMMA_ROOT = (1.4616321449683622, 9.549995429965697e-17)
DIGAMMA_ROOT_TAYLOR = (
    0.0, 0.9676722454476212, -0.4427631689835921,
    0.258499760955651, -0.16394270544240652, 0.10782405069126237,
    -0.07219956125645471, 0.04880428816414311, -0.03316112647484736,
    0.022597648232218104, -0.01542476590494896, 0.010538791616612175,
    -0.007204534386356869, 0.004926781395729853, -0.003369801655439328,
    0.002305126326734928, -0.0015769367714301972, 0.0010788252019162967,
    -0.0007380709389960052, 0.000504953265834602, -0.0003454680251063077,
    0.00023635601564027053, -0.00016170622091974803, 0.0001106337276874741,
    -7.569179582195066e-05, 5.178575795222081e-05, -3.5430070947659604e-05,
    2.424006611860132e-05, -1.6584242271854135e-05, 1.134638458466385e-05,
    -7.762817668462094e-06, 5.3110609208898636e-06, -3.6336507898010456e-06,
    2.486022733129538e-06, -1.7008538854332607e-06, 1.1636675363548843e-06,
    -7.96142543124197e-07, 5.446941930669446e-07, -3.7266161283438227e-07,
    2.549626552021554e-07, -1.7443695117727745e-07, 1.1934394829830244e-07,
)


def _bernoulli(n: int) -> list[Fraction]:
    """B_0 .. B_n (B_1 = +1/2), exactly (the Akiyama-Tanigawa algorithm)."""
    out, a = [], [Fraction(0)] * (n + 1)
    for m in range(n + 1):
        a[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
        out.append(a[0])
    return out


_B2K = [float(v) for v in _bernoulli(30)[2::2]]          # B_2, B_4, ..., B_30

# ---- building blocks ------------------------------------------------------------------------

_c = ops.full_like
_SQRT_PI = math.sqrt(math.pi)


def _horner(b: Builder, x: Value, coeffs: Sequence[float]) -> Value:
    """sum(coeffs[k] x^k)."""
    acc = _c(b, coeffs[-1], x)
    for c in reversed(coeffs[:-1]):
        acc = ops.add(b, ops.mul(b, acc, x), _c(b, c, x))
    return acc


def _clenshaw(b: Builder, t: Value, coeffs: Sequence[float]) -> Value:
    """sum(coeffs[k] T_k(t)) by Clenshaw's recurrence."""
    two_t = ops.add(b, t, t)
    b1, b2 = _c(b, 0.0, t), _c(b, 0.0, t)
    for c in reversed(coeffs[1:]):
        b1, b2 = ops.add(b, ops.sub(b, ops.mul(b, two_t, b1), b2), _c(b, c, t)), b1
    return ops.add(b, ops.sub(b, ops.mul(b, t, b1), b2), _c(b, coeffs[0], t))


def _exp_sq(b: Builder, a: Value, sign: float) -> Value:
    """exp(sign * a^2) for a >= 0, with a^2 = h^2 + (a - h)(a + h) and h = a rounded to a
    multiple of 1/16 (h^2 is exact), so the square's rounding error does not grow with a."""
    h = ops.div(b, ops.round_(b, ops.mul(b, a, _c(b, 16.0, a))), _c(b, 16.0, a))
    d = ops.mul(b, ops.sub(b, a, h), ops.add(b, a, h))
    k = _c(b, sign, a)
    return ops.mul(b, ops.exp(b, ops.mul(b, k, ops.mul(b, h, h))), ops.exp(b, ops.mul(b, k, d)))


def _erfcx_pos(b: Builder, a: Value) -> Value:
    """erfcx(a) for a >= 0 (0 at inf)."""
    k = _c(b, 3.75, a)
    inf = ops.isinf(b, a)
    safe = ops.select(b, inf, _c(b, 1.0, a), a)
    t = ops.div(b, ops.sub(b, safe, k), ops.add(b, safe, k))
    g = _clenshaw(b, t, ERFCX_CHEB)
    out = ops.div(b, g, ops.add(b, _c(b, 1.0, a), ops.add(b, safe, safe)))
    return ops.select(b, inf, _c(b, 0.0, a), out)


def _erfc_pos(b: Builder, a: Value) -> Value:
    """erfc(a) for a >= 0."""
    return _erfc_exp_pos(b, a)[0]


def _erfc_exp_pos(b: Builder, a: Value) -> tuple[Value, Value]:
    """(erfc(a), exp(-a^2)) for a >= 0; the second is exp(-27^2) beyond 27.3."""
    big = ops.gt(b, a, _c(b, 27.3, a))                  # erfc underflows; keep exp finite
    safe = ops.select(b, big, _c(b, 27.0, a), a)
    e = _exp_sq(b, safe, -1.0)
    out = ops.mul(b, e, _erfcx_pos(b, safe))
    return ops.select(b, big, _c(b, 0.0, a), out), e


_ERF_TAYLOR = [2 / _SQRT_PI * (-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(22)]


def _erf_erfc_pos(b: Builder, a: Value) -> tuple[Value, Value]:
    """(erf(a), erfc(a)) for a >= 0, sharing their pieces: the Taylor series T of erf below
    3/4 and E = erfc(a); erf = T there and 1 - E beyond, erfc = 1 - T below 1/2 and E beyond."""
    erf, erfc, _ = _erf_erfc_exp_pos(b, a)
    return erf, erfc


def _erf_erfc_exp_pos(b: Builder, a: Value) -> tuple[Value, Value, Value]:
    """_erf_erfc_pos and exp(-a^2) (for a <= 27.3), the derivative's factor."""
    small = ops.lt(b, a, _c(b, 0.75, a))
    xs = ops.select(b, small, a, _c(b, 0.0, a))
    series = ops.mul(b, xs, _horner(b, ops.mul(b, xs, xs), _ERF_TAYLOR))
    tail, e = _erfc_exp_pos(b, a)
    one = _c(b, 1.0, a)
    erf = ops.select(b, small, series, ops.sub(b, one, tail))
    erfc = ops.select(b, ops.lt(b, a, _c(b, 0.5, a)), ops.sub(b, one, series), tail)
    return erf, erfc, e


def _erf64(b: Builder, x: Value) -> Value:
    erf, _ = _erf_erfc_pos(b, ops.abs_(b, x))
    neg = ops.lt(b, x, _c(b, 0.0, x))
    return ops.select(b, neg, ops.neg(b, erf), ops.select(b, ops.eq(b, x, _c(b, 0.0, x)), x, erf))


def _erfc64(b: Builder, x: Value) -> Value:
    erf, erfc = _erf_erfc_pos(b, ops.abs_(b, x))
    return ops.select(b, ops.lt(b, x, _c(b, 0.0, x)), ops.add(b, _c(b, 1.0, x), erf), erfc)


def _erfcx64(b: Builder, x: Value) -> Value:
    a = ops.abs_(b, x)
    pos = _erfcx_pos(b, a)
    neg = ops.lt(b, x, _c(b, 0.0, x))
    big = ops.gt(b, a, _c(b, 26.7, a))                  # 2 exp(x^2) overflows
    grow = ops.mul(b, _c(b, 2.0, x), _exp_sq(b, ops.select(b, big, _c(b, 1.0, a), a), 1.0))
    grow = ops.select(b, big, _c(b, np.inf, x), ops.sub(b, grow, pos))
    return ops.select(b, neg, grow, pos)


def _inverse_erf(b: Builder, p: Value, q: Value) -> Value:
    """y >= 0 with erf(y) = p, erfc(y) = q, given p in [0, 1] and q = 1 - p (each exact where
    it is the small one): a fitted start and two Halley steps."""
    w = ops.neg(b, ops.log(b, ops.mul(b, q, ops.add(b, _c(b, 1.0, p), p))))
    small = ops.lt(b, w, _c(b, 5.0, w))
    ws = ops.select(b, small, w, _c(b, 2.5, w))
    wl = ops.select(b, small, _c(b, 9.0, w), w)
    start = ops.select(b, small, _horner(b, ops.sub(b, ws, _c(b, 2.5, w)), ERFINV_SMALL),
                       _horner(b, ops.sub(b, ops.sqrt(b, wl), _c(b, 3.0, w)), ERFINV_LARGE))
    y = ops.mul(b, start, p)
    use_p = ops.lt(b, p, _c(b, 0.5, p))
    for _ in range(2):
        # exp(-y^2) is shared by erfc and the derivative (it was computed twice: twice the
        # code of the four exps per step, and erfcinv/ndtri's compile time with it)
        erf, erfc, e = _erf_erfc_exp_pos(b, ops.abs_(b, y))
        r = ops.select(b, use_p, ops.sub(b, erf, p), ops.sub(b, q, erfc))
        deriv = ops.mul(b, _c(b, 2.0 / _SQRT_PI, y), e)
        step = ops.div(b, r, deriv)
        y = ops.sub(b, y, ops.div(b, step, ops.add(b, _c(b, 1.0, y), ops.mul(b, y, step))))
    return y


def _erfinv64(b: Builder, x: Value) -> Value:
    a = ops.abs_(b, x)
    one = _c(b, 1.0, x)
    inside = ops.lt(b, a, one)
    sa = ops.select(b, inside, a, _c(b, 0.5, x))
    y = _inverse_erf(b, sa, ops.sub(b, one, sa))
    y = ops.select(b, ops.lt(b, x, _c(b, 0.0, x)), ops.neg(b, y), y)
    y = ops.select(b, ops.eq(b, x, _c(b, 0.0, x)), x, y)
    edge = ops.select(b, ops.eq(b, a, one), ops.mul(b, x, _c(b, np.inf, x)), _c(b, np.nan, x))
    return ops.select(b, inside, y, edge)


def _erfcinv64(b: Builder, x: Value) -> Value:
    one = _c(b, 1.0, x)
    upper = ops.gt(b, x, one)
    q = ops.select(b, upper, ops.sub(b, _c(b, 2.0, x), x), x)       # in (0, 1]
    inside = ops.and_(b, ops.gt(b, x, _c(b, 0.0, x)), ops.lt(b, x, _c(b, 2.0, x)))
    qs = ops.select(b, inside, q, _c(b, 0.5, x))
    y = _inverse_erf(b, ops.sub(b, one, qs), qs)
    y = ops.select(b, upper, ops.neg(b, y), y)
    y = ops.select(b, ops.eq(b, x, one), _c(b, 0.0, x), y)
    edge = ops.select(b, ops.eq(b, x, _c(b, 0.0, x)), _c(b, np.inf, x),
                      ops.select(b, ops.eq(b, x, _c(b, 2.0, x)), _c(b, -np.inf, x), _c(b, np.nan, x)))
    return ops.select(b, inside, y, edge)


# ---- the gamma family -----------------------------------------------------------------

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_STIRLING = [_B2K[k] / ((2 * k + 2) * (2 * k + 1)) for k in range(10)]    # B_2k / (2k (2k-1))


def _shift_up(b: Builder, x: Value, steps: int, bound: float) -> tuple[Value, list[Value]]:
    """z = x + m >= bound (for x > bound - steps) and the terms x, x + 1, ... (1 where unused)."""
    z, terms = x, []
    for _ in range(steps):
        low = ops.lt(b, z, _c(b, bound, z))
        terms.append(ops.select(b, low, z, _c(b, 1.0, z)))
        z = ops.select(b, low, ops.add(b, z, _c(b, 1.0, z)), z)
    return z, terms


def _product(b: Builder, terms: list[Value]) -> Value:
    acc = terms[0]
    for t in terms[1:]:
        acc = ops.mul(b, acc, t)
    return acc


def _stirling_lgamma(b: Builder, z: Value) -> Value:
    """lgamma(z) for z >= 8: (z - 1/2) log z - z + log(2 pi)/2 + sum B_2k / (2k(2k-1) z^(2k-1))."""
    r = ops.div(b, _c(b, 1.0, z), z)
    series = ops.mul(b, r, _horner(b, ops.mul(b, r, r), _STIRLING))
    main = ops.sub(b, ops.mul(b, ops.sub(b, z, _c(b, 0.5, z)), ops.log(b, z)), z)
    return ops.add(b, main, ops.add(b, _c(b, _HALF_LOG_2PI, z), series))


def _reduced(b: Builder, x: Value, limit: float, steps: int
             ) -> tuple[Value, list[Value], Value, Value, Value, Value]:
    """The argument reduction shared by lgamma and gamma for x > 0: `mid` (x < limit), the
    factors of the exact downward recurrence from x to z in [1.5, 2.5) (`steps` of them, 1
    where a step is not taken), `low` (x < 1.5), `below` (x < 0.5), xl (x where low, else 1)
    and the argument u of the Taylor series of lgamma(2 + u): x (below 0.5), x - 1 (below
    1.5) or z - 2."""
    one = _c(b, 1.0, x)
    mid = ops.lt(b, x, _c(b, limit, x))
    z = ops.select(b, mid, x, _c(b, 2.0, x))
    terms = []
    for _ in range(steps):
        high = ops.ge(b, z, _c(b, 2.5, z))
        z = ops.select(b, high, ops.sub(b, z, one), z)
        terms.append(ops.select(b, high, z, one))
    low = ops.lt(b, x, _c(b, 1.5, x))
    below = ops.lt(b, x, _c(b, 0.5, x))
    xl = ops.select(b, low, x, one)
    u = ops.select(b, low, ops.select(b, below, xl, ops.sub(b, xl, one)), ops.sub(b, z, _c(b, 2.0, z)))
    return mid, terms, low, below, xl, u


def _lgamma_pos(b: Builder, x: Value) -> Value:
    """lgamma(x) for x > 0."""
    one = _c(b, 1.0, x)
    # x in [1.5, 8): down to [1.5, 2.5) exactly, lgamma = S2(u) + log(prod)
    # x in (0, 1.5): lgamma(x) = S2(x - 1) - log(x) (x >= 0.5), S2(x) - log(x) - log1p(x) below
    mid, terms, low, below, xl, u = _reduced(b, x, 8.0, 6)
    s2 = _horner(b, u, LGAMMA2_TAYLOR)
    up = ops.sub(b, s2, ops.add(b, ops.log(b, xl), ops.select(b, below, ops.log1p(b, xl), _c(b, 0.0, x))))
    down = ops.add(b, s2, ops.log(b, _product(b, terms)))
    big = ops.select(b, mid, _c(b, 8.0, x), x)
    out = ops.select(b, low, up, ops.select(b, mid, down, _stirling_lgamma(b, big)))
    return ops.select(b, ops.isinf(b, x), x, out)


def _sinpi_abs(b: Builder, x: Value) -> Value:
    """|sin(pi x)| with the argument reduced exactly to [0, 1/2]."""
    r = ops.abs_(b, ops.sub(b, x, ops.round_(b, x)))
    return ops.sin(b, ops.mul(b, r, _c(b, math.pi, x)))


def _lgamma64(b: Builder, x: Value) -> Value:
    pos = ops.gt(b, x, _c(b, 0.0, x))
    y = ops.select(b, pos, x, ops.sub(b, _c(b, 1.0, x), x))
    core = _lgamma_pos(b, y)
    s = _sinpi_abs(b, ops.select(b, pos, _c(b, 0.5, x), x))
    refl = ops.sub(b, ops.log(b, ops.div(b, _c(b, math.pi, x), s)), core)
    refl = ops.select(b, ops.isinf(b, x), _c(b, -np.inf, x), refl)
    return ops.select(b, pos, core, refl)


def _gamma_pos(b: Builder, x: Value) -> tuple[Value, Value]:
    """gamma(x) = root * root * rest for x > 0 (the split keeps gamma(1 - x) of the reflection
    from overflowing). Below 10: root = 1 and rest = exp(lgamma(2 + t)) (its Taylor series,
    |t| <= 1/2) times the exact downward recurrence's terms, or divided by x (x + 1) upward
    (as lgamma). From 10: Stirling's formula, root = x^((x-1/2)/2) e^(-x/2) and rest =
    sqrt(2 pi) exp(S(x))."""
    one = _c(b, 1.0, x)
    mid, terms, low, below, xl, t = _reduced(b, x, 10.0, 8)
    divisor = ops.select(b, low, ops.mul(b, xl, ops.select(b, below, ops.add(b, xl, one), one)), one)
    small = ops.div(b, ops.mul(b, ops.exp(b, _horner(b, t, LGAMMA2_TAYLOR)), _product(b, terms)), divisor)
    big = ops.select(b, mid, _c(b, 10.0, x), x)
    r = ops.div(b, one, big)
    series = ops.exp(b, ops.mul(b, r, _horner(b, ops.mul(b, r, r), _STIRLING)))
    half = ops.mul(b, ops.sub(b, big, _c(b, 0.5, big)), _c(b, 0.5, big))
    root = ops.mul(b, ops.pow_(b, big, half), ops.exp(b, ops.mul(b, big, _c(b, -0.5, big))))
    rest = ops.mul(b, series, _c(b, math.sqrt(2 * math.pi), x))
    return ops.select(b, mid, one, root), ops.select(b, mid, small, rest)


def _gamma64(b: Builder, x: Value) -> Value:
    zero = _c(b, 0.0, x)
    pos = ops.gt(b, x, zero)
    y = ops.select(b, pos, x, ops.sub(b, _c(b, 1.0, x), x))
    y = ops.select(b, ops.gt(b, y, _c(b, 400.0, y)), _c(b, 400.0, y), y)   # inf or 0 beyond
    root, rest = _gamma_pos(b, y)
    core = ops.mul(b, ops.mul(b, root, root), rest)
    core = ops.select(b, ops.gt(b, x, _c(b, 171.7, x)), _c(b, np.inf, x), core)
    r = ops.sub(b, x, ops.round_(b, x))                 # sin(pi x) = (-1)^n sin(pi r)
    n_odd = ops.ne(b, ops.mod(b, ops.round_(b, x), _c(b, 2.0, x)), zero)
    s = ops.sin(b, ops.mul(b, r, _c(b, math.pi, x)))
    s = ops.select(b, n_odd, ops.neg(b, s), s)
    # pi / (s gamma(1 - x)), divided in steps: gamma(1 - x) may overflow where the result
    # is still a (subnormal) number
    # 1 - x = y + lo exactly (2Sum): gamma(y + lo) = gamma(y) (1 + lo psi(y)), psi ~ log y - 1/2y
    one = _c(b, 1.0, x)
    bb = ops.sub(b, y, one)
    lo = ops.add(b, ops.sub(b, one, ops.sub(b, y, bb)), ops.sub(b, ops.neg(b, x), bb))
    lo = ops.select(b, pos, zero, lo)
    psi = ops.sub(b, ops.log(b, y), ops.div(b, _c(b, 0.5, y), y))
    rest = ops.mul(b, rest, ops.add(b, one, ops.mul(b, lo, psi)))
    refl = ops.div(b, ops.div(b, ops.div(b, _c(b, math.pi, x), s), root), ops.mul(b, root, rest))
    integer = ops.eq(b, r, zero)
    refl = ops.select(b, integer, _c(b, np.nan, x), refl)
    at0 = ops.eq(b, x, zero)          # gamma(+-0) = +-inf
    refl = ops.select(b, at0, ops.div(b, _c(b, 1.0, x), x), refl)
    refl = ops.select(b, ops.isinf(b, x), _c(b, np.nan, x), refl)
    return ops.select(b, pos, core, refl)


def _psi_series(b: Builder, z: Value, n: int) -> Value:
    """The asymptotic series of polygamma(n, z) (n >= 1), or of digamma (n = 0), for large z."""
    r = ops.div(b, _c(b, 1.0, z), z)
    r2 = ops.mul(b, r, r)
    if n == 0:
        coeffs = [-_B2K[k] / (2 * k + 2) for k in range(12)]
        tail = ops.mul(b, r2, _horner(b, r2, coeffs))
        return ops.add(b, ops.sub(b, ops.log(b, z), ops.mul(b, r, _c(b, 0.5, z))), tail)
    sign = 1.0 if n % 2 == 1 else -1.0
    lead = math.factorial(n - 1) + 0.0
    coeffs = [_B2K[k] * math.factorial(2 * k + 2 + n - 1) / math.factorial(2 * k + 2)
              for k in range(12)]
    rn = ops.pow_(b, r, _c(b, float(n), z))
    body = ops.add(b, _c(b, lead, z), ops.mul(b, r, _c(b, math.factorial(n) / 2.0, z)))
    body = ops.add(b, body, ops.mul(b, r2, _horner(b, r2, coeffs)))
    return ops.mul(b, _c(b, sign, z), ops.mul(b, rn, body))


def _polygamma_pos(b: Builder, x: Value, n: int) -> Value:
    """polygamma(n, x) (digamma for n = 0) for x > 0: the recurrence up to z >= 8 + 2n."""
    bound = 8.0 + 2 * n
    steps = int(bound)
    z, terms = _shift_up(b, x, steps, bound)
    one = _c(b, 1.0, x)
    used = [ops.ne(b, t, one) for t in terms[1:]]
    # the first term is x itself (x may be 1); later terms are 1 only where unused
    parts = [terms[0]] + terms[1:]
    if n == 0:
        acc = ops.div(b, one, parts[0])
        for t, u in zip(parts[1:], used):
            acc = ops.add(b, acc, ops.select(b, u, ops.div(b, one, t), _c(b, 0.0, x)))
        acc = ops.select(b, ops.lt(b, x, _c(b, bound, x)), acc, _c(b, 0.0, x))
        return ops.sub(b, _psi_series(b, z, 0), acc)
    power = _c(b, float(n + 1), x)
    acc = ops.pow_(b, ops.div(b, one, parts[0]), power)
    for t, u in zip(parts[1:], used):
        acc = ops.add(b, acc, ops.select(b, u, ops.pow_(b, ops.div(b, one, t), power), _c(b, 0.0, x)))
    acc = ops.select(b, ops.lt(b, x, _c(b, bound, x)), acc, _c(b, 0.0, x))
    k = (1.0 if n % 2 == 1 else -1.0) * math.factorial(n)
    return ops.add(b, _psi_series(b, z, n), ops.mul(b, _c(b, k, x), acc))


def _digamma_pos(b: Builder, x: Value) -> Value:
    """digamma(x) for x > 0: below 8, the Taylor series at the positive root x0 on u in [1, 2],
    reached by psi(x) = psi(x + 1) - 1/x (x < 1: both terms negative) or downward by
    psi(x) = psi(x - 1) + 1/(x - 1) (x - k exact; the terms positive); the asymptotic series
    from 8 on."""
    one = _c(b, 1.0, x)
    mid = ops.lt(b, x, _c(b, 8.0, x))
    xm = ops.select(b, mid, x, _c(b, 1.5, x))
    below = ops.lt(b, xm, one)
    xb = ops.select(b, below, xm, one)
    u = ops.select(b, below, ops.add(b, xm, one), xm)
    terms = []
    for _ in range(6):
        high = ops.ge(b, u, _c(b, 2.0, u))
        u = ops.select(b, high, ops.sub(b, u, one), u)
        terms.append(ops.select(b, high, ops.div(b, one, u), _c(b, 0.0, u)))
    acc = terms[-1]
    for t in reversed(terms[:-1]):
        acc = ops.add(b, acc, t)
    acc = ops.select(b, below, ops.neg(b, ops.div(b, one, xb)), acc)
    t = ops.sub(b, ops.sub(b, u, _c(b, DIGAMMA_ROOT[0], u)), _c(b, DIGAMMA_ROOT[1], u))
    small = ops.add(b, _horner(b, t, DIGAMMA_ROOT_TAYLOR), acc)
    big = _psi_series(b, ops.select(b, mid, _c(b, 8.0, x), x), 0)
    return ops.select(b, mid, small, big)


def _digamma64(b: Builder, x: Value) -> Value:
    zero = _c(b, 0.0, x)
    pos = ops.gt(b, x, zero)
    y = ops.select(b, pos, x, ops.sub(b, _c(b, 1.0, x), x))
    y = ops.select(b, ops.isinf(b, y), _c(b, 1e300, x), y)
    core = _digamma_pos(b, y)
    r = ops.sub(b, x, ops.round_(b, x))
    # pi cot(pi r), with cos(pi r) = sin(pi (1/2 - |r|)): exactly 0 at r = +-1/2
    cos = ops.sin(b, ops.mul(b, ops.sub(b, _c(b, 0.5, x), ops.abs_(b, r)), _c(b, math.pi, x)))
    sin = ops.sin(b, ops.mul(b, r, _c(b, math.pi, x)))
    refl = ops.sub(b, core, ops.div(b, ops.mul(b, _c(b, math.pi, x), cos), sin))
    refl = ops.select(b, ops.eq(b, r, zero), _c(b, np.nan, x), refl)
    refl = ops.select(b, ops.eq(b, x, zero), ops.div(b, _c(b, -1.0, x), x), refl)   # -+inf at +-0
    out = ops.select(b, pos, core, refl)
    out = ops.select(b, ops.eq(b, x, _c(b, np.inf, x)), x, out)
    return ops.select(b, ops.eq(b, x, _c(b, -np.inf, x)), _c(b, np.nan, x), out)


def _cot_derivative(n: int) -> list[int]:
    """Coefficients (low to high) of P_n with d^n/dy^n cot(y) = P_n(cot y): P_0 = c,
    P_(k+1) = -(1 + c^2) P_k'."""
    p = [0, 1]
    for _ in range(n):
        dp = [k * p[k] for k in range(1, len(p))] or [0]
        out = [0] * (len(dp) + 2)
        for k, v in enumerate(dp):
            out[k] -= v
            out[k + 2] -= v
        p = out
    return p


def _polygamma64(n: int) -> Callable[[Builder, Value], Value]:
    """polygamma(n, x): the recurrence and series for x > 0; below 0 the n-th derivative of
    the reflection psi(1 - x) - psi(x) = pi cot(pi x):
    psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi^(n+1) P_n(cot(pi x)); at 0, -1, ... +-inf."""
    poly = [float(c) for c in _cot_derivative(n)]

    def f(b: Builder, x: Value) -> Value:
        zero = _c(b, 0.0, x)
        pos = ops.gt(b, x, zero)
        y = ops.select(b, pos, x, ops.sub(b, _c(b, 1.0, x), x))
        y = ops.select(b, ops.isinf(b, y), _c(b, 1e300, x), y)
        core = _polygamma_pos(b, y, n)
        r = ops.sub(b, x, ops.round_(b, x))
        cos = ops.sin(b, ops.mul(b, ops.sub(b, _c(b, 0.5, x), ops.abs_(b, r)), _c(b, math.pi, x)))
        sin = ops.sin(b, ops.mul(b, r, _c(b, math.pi, x)))
        integer = ops.eq(b, r, zero)
        cot = ops.div(b, cos, ops.select(b, integer, _c(b, 1.0, x), sin))
        refl = ops.sub(b, ops.mul(b, _c(b, (-1.0) ** n, x), core),
                       ops.mul(b, _c(b, math.pi ** (n + 1), x), _horner(b, cot, poly)))
        refl = ops.select(b, integer, _c(b, np.inf if n % 2 else -np.inf, x), refl)
        out = ops.select(b, pos, core, refl)
        out = ops.select(b, ops.eq(b, x, _c(b, np.inf, x)), zero, out)
        return ops.select(b, ops.eq(b, x, _c(b, -np.inf, x)), _c(b, np.inf if n % 2 else -np.inf, x), out)
    return f


# ---- Bessel functions ----------------------------------------------------------------------

_I0_SERIES = [1.0 / math.factorial(k) ** 2 for k in range(42)]
_I1_SERIES = [1.0 / (math.factorial(k) * math.factorial(k + 1)) for k in range(42)]


def _asymptotic(nu: int, terms: int = 30) -> list[float]:
    """I_nu(x) ~ e^x / sqrt(2 pi x) sum (-1)^k a_k(nu) / x^k."""
    out, a = [1.0], Fraction(1)
    for k in range(1, terms):
        a = a * (4 * nu * nu - (2 * k - 1) ** 2) / (k * 8)
        out.append(float((-1) ** k * a))
    return out


_I0_ASYM, _I1_ASYM = _asymptotic(0), _asymptotic(1)


def _bessel_e(nu: int) -> Callable[[Builder, Value], Value]:
    """i0e (nu = 0) or i1e (nu = 1)."""
    def f(b: Builder, x: Value) -> Value:
        a = ops.abs_(b, x)
        small = ops.le(b, a, _c(b, 20.0, a))
        s = ops.select(b, small, a, _c(b, 1.0, a))
        u = ops.mul(b, ops.mul(b, s, s), _c(b, 0.25, a))
        series = _horner(b, u, _I0_SERIES if nu == 0 else _I1_SERIES)
        if nu == 1:
            series = ops.mul(b, series, ops.mul(b, s, _c(b, 0.5, a)))
        series = ops.mul(b, series, ops.exp(b, ops.neg(b, s)))
        big = ops.select(b, small, _c(b, 30.0, a), a)
        big = ops.select(b, ops.isinf(b, big), _c(b, 1e300, a), big)
        r = ops.div(b, _c(b, 1.0, a), big)
        asym = ops.div(b, _horner(b, r, _I0_ASYM if nu == 0 else _I1_ASYM),
                       ops.sqrt(b, ops.mul(b, big, _c(b, 2 * math.pi, a))))
        asym = ops.select(b, ops.isinf(b, a), _c(b, 0.0, a), asym)
        out = ops.select(b, small, series, asym)
        if nu == 1:
            out = ops.select(b, ops.lt(b, x, _c(b, 0.0, x)), ops.neg(b, out), out)
        return ops.select(b, ops.isnan(b, x), x, out)
    return f


# ---- the primitives ----------------------------------------------------------------------


def _in_float64(fn: Callable[[Builder, Value], Value]) -> Callable[..., list[Value]]:
    """A decomposition computing in float64 (float32 and float16 widened, rounded once)."""
    def decomposition(b: Builder, op: Op, args: list[Value]) -> list[Value]:
        (x,) = args
        if x.dtype == F64:
            return [fn(b, x)]
        return [ops.convert(b, fn(b, ops.convert(b, x, F64)), x.dtype)]
    return decomposition


def _float_only(dtypes: tuple[np.dtype, ...], params: dict[str, Any]) -> np.dtype:
    check(is_float(dtypes[0]), f"operand must be floating point, got {dtypes[0]}")
    return dtypes[0]


_SAME_FLOAT = same_shape_rule(_float_only)


def _float_shape_rule(in_types: tuple[TensorType, ...], params: dict[str, Any]) -> tuple[TensorType, ...]:
    """One float operand, a result of its type."""
    return _SAME_FLOAT(in_types, params)


def _vectorized(fn: Callable[[float], float], doc: str) -> Callable[..., np.ndarray]:
    def ref(x: np.ndarray, **params: Any) -> np.ndarray:
        x = np.asarray(x)
        flat = [fn(float(v), **params) for v in x.ravel()]
        return np.array(flat, np.float64).reshape(x.shape).astype(x.dtype)
    ref.__doc__ = doc
    return ref


def _special(prim: Primitive, fn: Callable[[Builder, Value], Value], ref: Callable[[float], float],
             doc: str, d: Callable[..., Value]) -> Primitive:
    jvp, vjp = ad.from_partials(d)
    return define(prim, shape_rule=_float_shape_rule, numpy_ref=_vectorized(ref, doc),
                  decomposition=_in_float64(fn), vmap_rule=elementwise_rule, jvp_rule=jvp,
                  vjp_rule=vjp, doc=doc)


# -- scalar references (the interpreter's: the math module, series summed with math.fsum) --

def _ref_guard(fn: Callable[[float], float]) -> Callable[[float], float]:
    def ref(x: float) -> float:
        try:
            return fn(x)
        except (OverflowError, ValueError):
            return math.nan
    return ref


def _ref_erfcx(x: float) -> float:
    if math.isnan(x):
        return x
    if x < 25:
        return math.exp(x * x) * math.erfc(x) if x > -26.7 else math.inf
    r = 1 / (2 * x * x)
    return (1 - r * (1 - 3 * r * (1 - 5 * r * (1 - 7 * r)))) / (x * _SQRT_PI)


def _ref_inverse(x: float, complement: bool) -> float:
    """erfinv(x) (erfcinv(x)) by bisection on math.erf (math.erfc) in the tails."""
    target = x
    lo_edge, hi_edge = (0.0, 2.0) if complement else (-1.0, 1.0)
    if math.isnan(x) or not lo_edge <= x <= hi_edge:
        return math.nan
    if x in (lo_edge, hi_edge):
        return (math.inf if x == lo_edge else -math.inf) if complement else math.copysign(math.inf, x)
    lo, hi = -30.0, 30.0
    for _ in range(200):
        mid = (lo + hi) / 2
        value = math.erfc(mid) if complement else math.erf(mid)
        if (value > target) != complement:
            hi = mid
        else:
            lo = mid
    return (lo + hi) / 2


def _ref_gamma(x: float) -> float:
    if x == 0:
        return math.copysign(math.inf, x)
    if x < 0 and x == math.floor(x) or x == -math.inf:
        return math.nan
    try:
        return math.gamma(x)
    except OverflowError:
        return math.inf if x > 0 else 0.0


def _ref_lgamma(x: float) -> float:
    if x == -math.inf:
        return -math.inf
    try:
        return math.lgamma(x)
    except (OverflowError, ValueError):
        return math.inf


def _ref_polygamma(x: float, n: int = 0) -> float:
    """Shift to x + 40, the asymptotic series there, the recurrence terms summed with fsum."""
    if math.isnan(x) or (x == -math.inf and n == 0):
        return math.nan
    if x == -math.inf:
        return math.inf if n % 2 else -math.inf
    if x == math.inf:
        return math.inf if n == 0 else 0.0
    if x <= 0 and x == math.floor(x):
        return (-1 / x if x == 0 else math.nan) if n == 0 else (math.inf if n % 2 else -math.inf)
    if n == 0 and x < 0:
        return _ref_polygamma(1 - x) - math.pi / math.tan(math.pi * x)
    if x < 0:       # the upward recurrence from x: its terms alternate in sign
        m = math.ceil(-x) + 1
        sign = 1 if n % 2 == 1 else -1
        return _ref_polygamma(x + m, n) + sign * math.fsum(
            math.factorial(n) / (x + k) ** (n + 1) for k in range(m))
    z = x + 40
    if n == 0:
        terms = [math.log(z), -1 / (2 * z)] + [-_B2K[k] / ((2 * k + 2) * z ** (2 * k + 2)) for k in range(8)]
        return math.fsum(terms + [-1 / (x + k) for k in range(40)])
    sign = 1 if n % 2 == 1 else -1
    terms = [math.factorial(n - 1) / z ** n, math.factorial(n) / (2 * z ** (n + 1))]
    terms += [_B2K[k] * math.factorial(2 * k + 2 + n - 1) / math.factorial(2 * k + 2) / z ** (2 * k + 2 + n)
              for k in range(8)]
    recur = [math.factorial(n) / (x + k) ** (n + 1) for k in range(40)]
    return sign * math.fsum(terms + recur)


def _ref_bessel_e(nu: int) -> Callable[[float], float]:
    def ref(x: float) -> float:
        if math.isnan(x):
            return x
        a = abs(x)
        if a > 700:
            r = 1 / a
            out = math.fsum(c * r ** k for k, c in enumerate(_I0_ASYM if nu == 0 else _I1_ASYM)) \
                / math.sqrt(2 * math.pi * a)
        else:
            u = a * a / 4
            terms, t = [], (1.0 if nu == 0 else a / 2)
            for k in range(400):
                terms.append(t)
                t *= u / ((k + 1) * (k + 1 + nu))
            out = math.fsum(terms) * math.exp(-a)
        return -out if nu == 1 and x < 0 else out
    return ref


def _d_erf(b: Builder, x: Value, y: Value) -> Value:
    return ops.mul(b, _c(b, 2.0 / _SQRT_PI, x), ops.exp(b, ops.neg(b, ops.mul(b, x, x))))


def _d_erfcx(b: Builder, x: Value, y: Value) -> Value:
    return ops.sub(b, ops.mul(b, ops.add(b, x, x), y), _c(b, 2.0 / _SQRT_PI, x))


def _d_erfinv(sign: float) -> Callable[..., Value]:
    return lambda b, x, y: ops.mul(b, _c(b, sign * _SQRT_PI / 2, y), ops.exp(b, ops.mul(b, y, y)))


def _d_i0e(b: Builder, x: Value, y: Value) -> Value:
    return ops.sub(b, ops.i1e(b, x), ops.mul(b, ops.sign(b, x), y))


def _d_i1e(b: Builder, x: Value, y: Value) -> Value:
    """i0e - i1e/x - sign(x) i1e, and 1/2 at 0."""
    zero = ops.eq(b, x, _c(b, 0.0, x))
    safe = ops.select(b, zero, _c(b, 1.0, x), x)
    d = ops.sub(b, ops.sub(b, ops.i0e(b, x), ops.div(b, y, safe)), ops.mul(b, ops.sign(b, x), y))
    return ops.select(b, zero, _c(b, 0.5, x), d)


erf = _special(ops.erf_p, _erf64, _ref_guard(math.erf), "erf(x), the error function", _d_erf)
erfc = _special(ops.erfc_p, _erfc64, _ref_guard(math.erfc), "erfc(x) = 1 - erf(x)",
                lambda b, x, y: ops.neg(b, _d_erf(b, x, y)))
erfcx = _special(ops.erfcx_p, _erfcx64, _ref_erfcx, "erfcx(x) = exp(x^2) erfc(x)", _d_erfcx)
erfinv = _special(ops.erfinv_p, _erfinv64, lambda x: _ref_inverse(x, False),
                  "erfinv(x): erf(erfinv(x)) = x on (-1, 1)", _d_erfinv(1.0))
erfcinv = _special(ops.erfcinv_p, _erfcinv64, lambda x: _ref_inverse(x, True),
                   "erfcinv(x): erfc(erfcinv(x)) = x on (0, 2)", _d_erfinv(-1.0))
lgamma = _special(ops.lgamma_p, _lgamma64, _ref_lgamma, "lgamma(x) = log|gamma(x)|",
                  lambda b, x, y: ops.digamma(b, x))
gamma = _special(ops.gamma_p, _gamma64, _ref_gamma, "gamma(x)",
                 lambda b, x, y: ops.mul(b, y, ops.digamma(b, x)))
digamma = _special(ops.digamma_p, _digamma64, _ref_polygamma, "digamma(x) = gamma'(x)/gamma(x)",
                   lambda b, x, y: ops.polygamma(b, x, 1))
i0e = _special(ops.i0e_p, _bessel_e(0), _ref_bessel_e(0), "i0e(x) = exp(-|x|) I0(x)", _d_i0e)
i1e = _special(ops.i1e_p, _bessel_e(1), _ref_bessel_e(1), "i1e(x) = exp(-|x|) I1(x)", _d_i1e)


def _polygamma_decomposition(b: Builder, op: Op, args: list[Value]) -> list[Value]:
    return _in_float64(_polygamma64(op.params["n"]))(b, op, args)


def _polygamma_jvp(b: Builder, op: Op, primals: list[Value], tangents: list[Any]) -> list[Any]:
    (t,) = tangents
    if t is None:
        return [None]
    return [ops.mul(b, t, ops.polygamma(b, primals[0], op.params["n"] + 1))]


def _polygamma_vjp(b: Builder, op: Op, primals: list[Value], outs: list[Value], cts: list[Any]) -> list[Any]:
    (ct,) = cts
    if ct is None or not ad.differentiable(primals[0]):
        return [None]
    return [ops.mul(b, ct, ops.polygamma(b, primals[0], op.params["n"] + 1))]


polygamma = define(
    ops.polygamma_p, shape_rule=_float_shape_rule,
    numpy_ref=_vectorized(_ref_polygamma, "polygamma(n, x): the n-th derivative of digamma"),
    decomposition=_polygamma_decomposition, vmap_rule=elementwise_rule, jvp_rule=_polygamma_jvp,
    vjp_rule=_polygamma_vjp, doc="polygamma(n, x): the n-th derivative of digamma")
