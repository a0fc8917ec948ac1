"""Special functions: NumPy's bit-level and special elementwise functions, and the calls to
``scipy.special`` that compile (docs/special.md).

NumPy's ``signbit``, ``copysign``, ``heaviside``, ``sinc``, ``nextafter``, ``spacing``,
``frexp``, ``ldexp``, ``modf`` and ``float_power`` are compositions of elementwise
primitives; the bit-level ones are integer arithmetic on the bit pattern through the
``bitcast`` primitive (compiler/primitives/special.py). Each rule keeps the derivative
where the function has one: copysign is a select between ``-|x|`` and ``|x|``, ldexp and
frexp's mantissa multiply their operand by powers of two built from bits.

``scipy.special`` is recognised by the identity of the function object (a ufunc or a
Python function of the module in ``sys.modules``), never by inlining SciPy's source, and
SciPy stays optional: nothing here imports it. A function of ``scipy.special`` that is not
in :data:`SCIPY` is refused with one message naming it (:func:`scipy_call`).
"""
from __future__ import annotations

import inspect
import math
import sys
from decimal import Decimal
from typing import Any, Callable

import numpy as np

from compiler.errors import CompileError, UnsupportedError
from compiler.frontend import arrays as A
from compiler.frontend import reductions as R
from compiler.frontend import ufuncs as U
from compiler.frontend.arrays import Elementwise as E
from compiler.frontend.values import Reject, Staged
from compiler.ir.builder import Builder
from compiler.ir.core import Value
from compiler.ir.types import BOOL, F16, F32, F64, I32, I64, is_float, is_int, is_unsigned
from compiler.primitives import ops

_c = ops.full_like

# ---- bit patterns ------------------------------------------------------------------------

#: float dtype -> (int dtype of its bits, mantissa bits, exponent bias, min normal exponent)
_BITS: dict[np.dtype, tuple[np.dtype, int, int, int]] = {F64: (I64, 52, 1023, -1022),
                                                     F32: (I32, 23, 127, -126)}


def _layout(dtype: np.dtype, what: str) -> tuple[np.dtype, int, int, int]:
    if dtype not in _BITS:
        raise Reject(UnsupportedError, f"{what} of {dtype} values is not supported",
                     "convert to float32 or float64 first")
    return _BITS[dtype]


def _bits(b: Builder, x: Value) -> Value:
    return ops.bitcast(b, x, _BITS[x.dtype][0])


def _pow2(b: Builder, k: Value, dtype: np.dtype) -> Value:
    """2**k as a float of `dtype`, for integer k (of the bits' dtype) in the normal range."""
    _, mant, bias, _ = _BITS[dtype]
    field = ops.shl(b, ops.add(b, k, _c(b, bias, k)), _c(b, mant, k))
    return ops.bitcast(b, field, dtype)


def _signbit_value(b: Builder, x: Value) -> Value:
    if x.dtype == BOOL or is_unsigned(x.dtype):
        return ops.full(b, False, x.type.with_dtype(BOOL))
    if is_int(x.dtype):
        return ops.lt(b, x, _c(b, 0, x))
    if x.dtype == F16:
        x = ops.convert(b, x, F32)          # exact, the sign (of a nan too) kept
    bits = _bits(b, x)
    return ops.lt(b, bits, _c(b, 0, bits))


def _signbit(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
    return _signbit_value(b, vs[0])


def _copysign(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
    """|x| with the sign of y: a select between -|x| and |x| (derivative ±sign(x))."""
    x, y = vs
    mag = ops.abs_(b, x)
    return ops.select(b, _signbit_value(b, y), ops.neg(b, mag), mag)


def _heaviside(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
    """0 for x1 < 0, x2 at x1 == 0, 1 for x1 > 0, nan for nan."""
    x1, x2 = vs
    out = ops.select(b, ops.eq(b, x1, _c(b, 0.0, x1)), x2, _c(b, 1.0, x1))
    out = ops.select(b, ops.lt(b, x1, _c(b, 0.0, x1)), _c(b, 0.0, x1), out)
    return ops.select(b, ops.isnan(b, x1), x1, out)


def _sinc(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
    """sin(pi x) / (pi x), 1 at 0, with sin(pi x) = (-1)^n sin(pi r) on the exactly reduced
    r = x - n (n = round(x)): within a few ULP also near the integers, where NumPy's
    sin(pi * x) loses the digits of the zero. The quotient runs on 1 at 0, so that every
    derivative there is finite (sinc'(0) = 0)."""
    (x,) = vs
    zero = ops.eq(b, x, _c(b, 0.0, x))
    xs = ops.select(b, zero, _c(b, 1.0, x), x)
    n = ops.round_(b, xs)
    s = ops.sin(b, ops.mul(b, ops.sub(b, xs, n), _c(b, math.pi, x)))
    odd = ops.ne(b, ops.mod(b, n, _c(b, 2.0, x)), _c(b, 0.0, x))
    s = ops.select(b, odd, ops.neg(b, s), s)
    out = ops.div(b, s, ops.mul(b, xs, _c(b, math.pi, x)))
    return ops.select(b, zero, _c(b, 1.0, x), out)


def _nextafter(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
    """The next float after x towards y: the bit pattern plus or minus one."""
    x, y = vs
    _layout(dtype, "np.nextafter")
    bits = _bits(b, x)
    one = _c(b, 1, bits)
    up = ops.eq(b, ops.lt(b, x, y), ops.gt(b, x, _c(b, 0.0, x)))
    step = ops.select(b, up, ops.add(b, bits, one), ops.sub(b, bits, one))
    ybits = _bits(b, y)
    tiny = ops.or_(b, ops.and_(b, ybits, _c(b, np.iinfo(ybits.dtype).min, ybits)), one)
    zero = ops.eq(b, x, _c(b, 0.0, x))
    out = ops.bitcast(b, ops.select(b, zero, tiny, step), dtype)
    out = ops.select(b, ops.eq(b, x, y), y, out)
    return ops.select(b, ops.or_(b, ops.isnan(b, x), ops.isnan(b, y)), ops.add(b, x, y), out)


def _spacing(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
    """nextafter(x, copysign(inf, x)) - x (towards +inf at -0.0); nan for inf and nan."""
    (x,) = vs
    _layout(dtype, "np.spacing")
    x = ops.bitcast(b, _bits(b, x), dtype)      # no tangent: the spacing is piecewise constant
    inf = _copysign(b, [_c(b, np.inf, x), x], dtype)
    inf = ops.select(b, ops.eq(b, x, _c(b, 0.0, x)), _c(b, np.inf, x), inf)     # -0.0: up
    out = ops.sub(b, _nextafter(b, [x, inf], dtype), x)
    return ops.select(b, ops.isinf(b, x), _c(b, np.nan, x), out)


def scalbn(b: Builder, x: Value, n: Value) -> Value:
    """x * 2**n, rounded once (also into the subnormal range), for an integer n of the bits'
    dtype: at most two scalings by the extreme powers first, as C's scalbn."""
    dtype = x.dtype
    _, mant, bias, emin = _BITS[dtype]
    big, small = bias, emin + mant + 1            # 2**1023, 2**-1022 * 2**53
    lim = 2 * (bias - emin + mant + 2)
    n = ops.minimum(b, ops.maximum(b, n, _c(b, -lim, n)), _c(b, lim, n))
    for _ in range(2):
        over = ops.gt(b, n, _c(b, bias, n))
        x = ops.select(b, over, ops.mul(b, x, _c(b, 2.0 ** big, x)), x)
        n = ops.select(b, over, ops.sub(b, n, _c(b, big, n)), n)
        under = ops.lt(b, n, _c(b, emin, n))
        x = ops.select(b, under, ops.mul(b, x, _c(b, 2.0 ** small, x)), x)
        n = ops.select(b, under, ops.sub(b, n, _c(b, small, n)), n)
    n = ops.minimum(b, ops.maximum(b, n, _c(b, emin, n)), _c(b, bias, n))
    return ops.mul(b, x, _pow2(b, n, dtype))


def frexp_values(b: Builder, x: Value) -> tuple[Value, Value]:
    """(m, e) with x = m * 2**e, 0.5 <= |m| < 1; (x, 0) for 0, inf and nan. e is of the bits'
    dtype; m is x times exact powers of two, so dm/dx = 2**-e."""
    idt, mant, bias, emin = _BITS[x.dtype]
    sub = ops.lt(b, ops.abs_(b, x), _c(b, 2.0 ** emin, x))
    scaled = ops.select(b, sub, ops.mul(b, x, _c(b, 2.0 ** (mant + 2), x)), x)
    bits = _bits(b, scaled)
    field = ops.and_(b, ops.shr(b, bits, _c(b, mant, bits)), _c(b, 2 * bias + 1, bits))
    e = ops.sub(b, field, _c(b, bias - 1, bits))
    e = ops.select(b, sub, ops.sub(b, e, _c(b, mant + 2, e)), e)
    special = ops.or_(b, ops.eq(b, x, _c(b, 0.0, x)), ops.not_(b, ops.isfinite(b, x)))
    e = ops.select(b, special, _c(b, 0, e), e)
    neg = ops.neg(b, e)
    half = ops.shr(b, neg, _c(b, 1, neg))
    m = ops.mul(b, ops.mul(b, x, _pow2(b, half, x.dtype)), _pow2(b, ops.sub(b, neg, half), x.dtype))
    return m, e


def _float_operand(b: Builder, x: Any, what: str) -> Staged:
    x = A.normalize_operand(b, x)
    dtype = A.oracle(np.frexp if what == "np.frexp" else np.modf, [x])
    s = A.lift(b, x)
    return A.convert(b, s, dtype) if s.dtype != dtype else s


def frexp(b: Builder, x: Any, out: Any = None) -> tuple[Staged, Staged]:
    """np.frexp: (mantissa, exponent) with the exponent as int32."""
    R._no_out(out)
    s = _float_operand(b, x, "np.frexp")
    v = s.value
    wide = v.dtype == F16
    if wide:
        v = ops.convert(b, v, F32)
    _layout(v.dtype, "np.frexp")
    m, e = frexp_values(b, v)
    if wide:
        m = ops.convert(b, m, F16)
    return Staged(m), Staged(A.convert_value(b, e, np.dtype(np.int32)))


def ldexp(b: Builder, x1: Any, x2: Any, out: Any = None) -> Staged:
    """np.ldexp: x1 * 2**x2 for an integer x2, rounded once."""
    R._no_out(out)
    x1, x2 = A.normalize_operand(b, x1), A.normalize_operand(b, x2)
    dtype = A.oracle(np.ldexp, [x1, x2])
    e = A.lift(b, x2)
    if not (is_int(e.dtype) or e.dtype == BOOL):
        raise Reject(CompileError, "np.ldexp: the exponent must be an integer array",
                     "convert it with .astype(np.int64)")
    shape = A.broadcast_shapes(A.shape_of(x1), A.shape_of(x2))
    compute = F32 if dtype == F16 else dtype
    _layout(compute, "np.ldexp")
    x = A.operand(b, x1, compute, shape)
    n = A.operand(b, x2, I64, shape)
    if compute == F32:
        n = ops.convert(b, ops.minimum(b, ops.maximum(b, n, _c(b, -1000, n)), _c(b, 1000, n)), I32)
    return Staged(A.convert_value(b, scalbn(b, x, n), dtype), weak=A.all_weak([x1]))


def modf(b: Builder, x: Any, out: Any = None) -> tuple[Staged, Staged]:
    """np.modf: (fractional part, integral part), both with the sign of x; (±0, ±inf) at ±inf."""
    R._no_out(out)
    s = _float_operand(b, x, "np.modf")
    v = s.value
    whole = U.unary(b, "trunc", Staged(v)).value
    frac = ops.sub(b, v, whole)
    frac = ops.select(b, ops.isinf(b, v), _c(b, 0.0, v), frac)
    frac = _copysign(b, [frac, v], v.dtype)
    return Staged(frac), Staged(whole)


# ---- Bessel functions of order 0 and 1 --------------------------------------------------


NUMPY_UFUNC_RULES: dict[str, E] = {
    "signbit": E(np.signbit, None, "predicate", rule=_signbit),
    "copysign": E(np.copysign, None, rule=_copysign),
    "heaviside": E(np.heaviside, None, rule=_heaviside),
    "nextafter": E(np.nextafter, None, rule=_nextafter),
    "spacing": E(np.spacing, None, rule=_spacing),
    "float_power": E(np.float_power, ops.pow_p),
}


def _elementwise_handler(spec: E) -> Callable[..., Staged]:
    def handler(b: Builder, *args: Any, out: Any = None, dtype: Any = None) -> Staged:
        R._no_out(out)
        res = A.apply(b, spec, args)
        return res if dtype is None else A.astype(b, res, dtype)
    return handler


def _sinc_handler(b: Builder, x: Any) -> Staged:
    return A.apply(b, E(np.sinc, None, rule=_sinc), (x,))


#: np.<function> -> handler (merged into numpy_api.NUMPY_FUNCTIONS)
NUMPY_FUNCTIONS: dict[Any, Callable[..., Any]] = {
    **{getattr(np, name): _elementwise_handler(spec) for name, spec in NUMPY_UFUNC_RULES.items()},
    np.sinc: _sinc_handler, np.frexp: frexp, np.ldexp: ldexp, np.modf: modf,
    np.i0: lambda b, x: A.apply(b, E(np.i0, None, rule=_wide(_unscaled_bessel(ops.i0e))), (x,)),
}


# ---- scipy.special: compositions ---------------------------------------------------------

def _exp_neg_abs(b: Builder, x: Value) -> tuple[Value, Value]:
    """(x >= 0, exp(-|x|)), with -|x| written as a select so both branches differentiate."""
    pos = ops.ge(b, x, _c(b, 0.0, x))
    return pos, ops.exp(b, ops.select(b, pos, ops.neg(b, x), x))


def _expit(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
    """1 / (1 + exp(-x)) for x >= 0, exp(x) / (1 + exp(x)) below: no overflow."""
    (x,) = vs
    pos, t = _exp_neg_abs(b, x)
    one = _c(b, 1.0, x)
    den = ops.add(b, one, t)
    return ops.select(b, pos, ops.div(b, one, den), ops.div(b, t, den))


def _log_expit(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
    """-log1p(exp(-x)) for x >= 0, x - log1p(exp(x)) below."""
    (x,) = vs
    pos, t = _exp_neg_abs(b, x)
    tail = ops.log1p(b, t)
    return ops.select(b, pos, ops.neg(b, tail), ops.sub(b, x, tail))


def _logit(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
    """log(p / (1 - p)): log1p((2p - 1) / (1 - p)) near 1/2 (no cancellation around 0),
    log(p) - log1p(-p) elsewhere."""
    (p,) = vs
    one = _c(b, 1.0, p)
    mid = ops.lt(b, ops.abs_(b, ops.sub(b, p, _c(b, 0.5, p))), _c(b, 0.25, p))
    q = ops.sub(b, one, p)
    near = ops.log1p(b, ops.div(b, ops.sub(b, ops.add(b, p, p), one), q))
    safe = ops.select(b, mid, _c(b, 0.1, p), p)          # the branch not taken sees 0.1
    far = ops.sub(b, ops.log(b, safe), ops.log1p(b, ops.neg(b, safe)))
    return ops.select(b, mid, near, far)


def _xlogy(log: Callable[[Builder, Value], Value]) -> Callable[..., Value]:
    """x * log(y) (x * log1p(y)), 0 where x == 0 and y is not nan."""
    def rule(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
        x, y = vs
        zero = ops.and_(b, ops.eq(b, x, _c(b, 0.0, x)), ops.not_(b, ops.isnan(b, y)))
        safe_y = ops.select(b, zero, _c(b, 1.0, y), y)
        return ops.select(b, zero, _c(b, 0.0, x), ops.mul(b, x, log(b, safe_y)))
    return rule


def _entr(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
    """-x log x for x > 0, 0 at 0, -inf below 0."""
    (x,) = vs
    zero = _c(b, 0.0, x)
    pos = ops.gt(b, x, zero)
    safe = ops.select(b, pos, x, _c(b, 1.0, x))
    out = ops.select(b, pos, ops.neg(b, ops.mul(b, safe, ops.log(b, safe))),
                     ops.select(b, ops.eq(b, x, zero), zero, _c(b, -np.inf, x)))
    return ops.select(b, ops.isnan(b, x), x, out)


def _rel_entr(kl: bool) -> Callable[..., Value]:
    """x log(x / y) (- x + y for kl_div) for x, y > 0; 0 (y for kl_div) at x = 0, y >= 0;
    inf otherwise; nan for nan."""
    def rule(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
        x, y = vs
        zero = _c(b, 0.0, x)
        both = ops.and_(b, ops.gt(b, x, zero), ops.gt(b, y, zero))
        sx = ops.select(b, both, x, _c(b, 1.0, x))
        sy = ops.select(b, both, y, _c(b, 1.0, y))
        # near x = y, log(x / y) loses the digits of x / y - 1: log1p((x - y) / y) keeps
        # them (x - y is exact for y / 2 <= x <= 2 y, Sterbenz)
        near = ops.and_(b, ops.ge(b, ops.add(b, sx, sx), sy), ops.le(b, sx, ops.add(b, sy, sy)))
        log_ratio = ops.select(b, near, ops.log1p(b, ops.div(b, ops.sub(b, sx, sy), sy)),
                               ops.log(b, ops.div(b, sx, sy)))
        val = ops.mul(b, sx, log_ratio)
        if kl:
            val = ops.add(b, ops.sub(b, val, sx), sy)
        at0 = ops.and_(b, ops.eq(b, x, zero), ops.ge(b, y, zero))
        out = ops.select(b, both, val, ops.select(b, at0, y if kl else zero, _c(b, np.inf, x)))
        nan = ops.or_(b, ops.isnan(b, x), ops.isnan(b, y))
        return ops.select(b, nan, ops.add(b, x, y), out)
    return rule


def _unary_prim(build: Callable[[Builder, Value], Value]) -> Callable[..., Value]:
    return lambda b, vs, dtype: build(b, vs[0])


_INV_SQRT2 = 1 / math.sqrt(2.0)


_INV_SQRT2_LO = float(Decimal(2).sqrt() / 2 - Decimal(_INV_SQRT2))


def _wide(rule: Callable[..., Value]) -> Callable[..., Value]:
    """`rule` computed in float64 for float32 and float16 operands, rounded once."""
    def wide(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
        if all(v.dtype == F64 for v in vs):
            return rule(b, vs, dtype)
        out = rule(b, [ops.convert(b, v, F64) for v in vs], F64)
        return ops.convert(b, out, vs[0].dtype)
    return wide


def _split(b: Builder, a: Value) -> tuple[Value, Value]:
    """Veltkamp's split: a = hi + lo exactly, each with 26 significant bits."""
    t = ops.mul(b, a, _c(b, 134217729.0, a))
    hi = ops.sub(b, t, ops.sub(b, t, a))
    return hi, ops.sub(b, a, hi)


def _scaled_by_inv_sqrt2(b: Builder, x: Value) -> tuple[Value, Value]:
    """x / sqrt(2) as an unevaluated sum hi + lo (Dekker's exact product with the two-part
    constant), for |x| <= 40."""
    c_hi, c_lo = _c(b, _INV_SQRT2, x), _c(b, _INV_SQRT2_LO, x)
    p = ops.mul(b, x, c_hi)
    xh, xl = _split(b, x)
    ch, cl = _split(b, c_hi)
    e = ops.add(b, ops.add(b, ops.add(b, ops.sub(b, ops.mul(b, xh, ch), p), ops.mul(b, xh, cl)),
                           ops.mul(b, xl, ch)), ops.mul(b, xl, cl))
    return p, ops.add(b, e, ops.mul(b, x, c_lo))


def _ndtr64(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
    """erfc(-x / sqrt 2) / 2, with the rounding error of the argument z = hi + lo corrected to
    first order: erfc(hi + lo) = erfc(hi) - lo 2/sqrt(pi) exp(-hi^2)."""
    (x,) = vs
    xs = ops.minimum(b, ops.maximum(b, x, _c(b, -40.0, x)), _c(b, 40.0, x))
    hi, lo = _scaled_by_inv_sqrt2(b, ops.neg(b, xs))
    slope = ops.mul(b, _c(b, 2 / math.sqrt(math.pi), x), ops.exp(b, ops.neg(b, ops.mul(b, hi, hi))))
    out = ops.mul(b, _c(b, 0.5, x), ops.sub(b, ops.erfc(b, hi), ops.mul(b, lo, slope)))
    return ops.select(b, ops.isnan(b, x), x, out)


_ndtr = _wide(_ndtr64)


def _log_ndtr64(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
    """log1p(-ndtr(-x)) for x >= -1; log(erfcx(-x / sqrt 2) / 2) - x^2 / 2 below, which
    neither underflows nor cancels."""
    (x,) = vs
    low = ops.lt(b, x, _c(b, -1.0, x))
    xl = ops.select(b, low, x, _c(b, -2.0, x))
    xh = ops.select(b, low, _c(b, 0.0, x), x)
    tail = ops.sub(b, ops.log(b, ops.mul(b, _c(b, 0.5, x), ops.erfcx(b, ops.mul(b, xl, _c(b, -_INV_SQRT2, x))))),
                   ops.mul(b, ops.mul(b, xl, xl), _c(b, 0.5, x)))
    head = ops.log1p(b, ops.neg(b, _ndtr64(b, [ops.neg(b, xh)], dtype)))
    return ops.select(b, low, tail, head)


_log_ndtr = _wide(_log_ndtr64)


def _ndtri(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
    """-sqrt(2) erfcinv(2p)."""
    (p,) = vs
    return ops.mul(b, _c(b, -math.sqrt(2.0), p), ops.erfcinv(b, ops.add(b, p, p)))


def _unscaled_bessel(build: Callable[[Builder, Value], Value]) -> Callable[..., Value]:
    """i0 = i0e(x) exp(|x|), i1 = i1e(x) exp(|x|); i0(+-inf) = inf, i1(+-inf) = +-inf."""
    def rule(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
        (x,) = vs
        out = ops.mul(b, build(b, x), ops.exp(b, ops.abs_(b, x)))
        at_inf = x if build is ops.i1e else ops.abs_(b, x)
        return ops.select(b, ops.isinf(b, x), at_inf, out)
    return rule


def _loggamma(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
    """lgamma for x >= 0, nan below (the real loggamma)."""
    (x,) = vs
    return ops.select(b, ops.lt(b, x, _c(b, 0.0, x)), _c(b, np.nan, x), ops.lgamma(b, x))


def _betaln(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
    """lgamma(a) + lgamma(b) - lgamma(a + b)."""
    x, y = vs
    return ops.sub(b, ops.add(b, ops.lgamma(b, x), ops.lgamma(b, y)), ops.lgamma(b, ops.add(b, x, y)))


def _beta(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
    """gamma(a) gamma(b) / gamma(a + b) while they are finite, exp(betaln) beyond."""
    x, y = vs
    limit = _c(b, 170.0, x)
    s = ops.add(b, x, y)
    small = ops.and_(b, ops.lt(b, s, limit), ops.lt(b, ops.maximum(b, x, y), limit))
    sx = ops.select(b, small, x, _c(b, 1.0, x))
    sy = ops.select(b, small, y, _c(b, 1.0, y))
    direct = ops.div(b, ops.mul(b, ops.gamma(b, sx), ops.gamma(b, sy)), ops.gamma(b, ops.add(b, sx, sy)))
    bx = ops.select(b, small, _c(b, 1.0, x), x)
    by = ops.select(b, small, _c(b, 1.0, y), y)
    return ops.select(b, small, direct, ops.exp(b, _betaln(b, [bx, by], dtype)))


_SCIPY_UFUNC_RULES: dict[str, Callable[..., Value]] = {
    "expit": _expit, "log_expit": _log_expit, "logit": _logit,
    "xlogy": _xlogy(ops.log), "xlog1py": _xlogy(ops.log1p), "entr": _entr,
    "rel_entr": _rel_entr(False), "kl_div": _rel_entr(True),
    "erf": _unary_prim(ops.erf), "erfc": _unary_prim(ops.erfc), "erfcx": _unary_prim(ops.erfcx),
    "erfinv": _unary_prim(ops.erfinv), "erfcinv": _unary_prim(ops.erfcinv),
    "ndtr": _ndtr, "log_ndtr": _log_ndtr, "ndtri": _wide(_ndtri),
    "gammaln": _unary_prim(ops.lgamma), "gamma": _unary_prim(ops.gamma), "loggamma": _loggamma,
    "digamma": _unary_prim(ops.digamma), "psi": _unary_prim(ops.digamma),
    "beta": _wide(_beta), "betaln": _wide(_betaln),
    "i0e": _unary_prim(ops.i0e), "i1e": _unary_prim(ops.i1e),
    "i0": _wide(_unscaled_bessel(ops.i0e)), "i1": _wide(_unscaled_bessel(ops.i1e)),
}


def _float_array(b: Builder, a: Any) -> Staged:
    s = A.lift(b, A.normalize_operand(b, a))
    return s if is_float(s.dtype) else A.convert(b, s, F64)


def _max_shift(b: Builder, a: Staged, axis: Any) -> Staged:
    """The maximum along `axis` (kept), 0 where it is not finite (all -inf, inf or nan)."""
    m = R.reduce(b, "max", a, axis, None, None, True)
    finite = Staged(ops.isfinite(b, m.value))
    return U.where(b, finite, m, 0.0)


def _log_sum_exp_shifted(b: Builder, t: Staged, axis: Any) -> Staged:
    """log(sum(exp(t))) along `axis` (kept) for t = x - max: log1p(others + k - 1), where the
    k maxima (t == 0) count exactly, so a result near 0 keeps its digits. At the maxima the
    sum takes t itself (0, with exp's derivative there, 1)."""
    at_max = Staged(ops.eq(b, t.value, _c(b, 0.0, t.value)))
    others = R.reduce(b, "sum", U.where(b, at_max, t, U.unary(b, "exp", t)), axis, None, None, True)
    k = R.reduce(b, "sum", A.convert(b, at_max, t.dtype), axis, None, None, True)
    return U.unary(b, "log1p", U.binary(b, "add", others, U.binary(b, "subtract", k, 1.0)))


def logsumexp(b: Builder, a: Any, axis: Any = None, b_: Any = None, keepdims: bool = False,
              return_sign: bool = False) -> Any:
    """log(sum(b * exp(a))) along `axis`, shifted by the maximum; with return_sign, the
    log of the absolute value and the sign (SciPy's result for a negative sum without it:
    nan)."""
    x = _float_array(b, a)
    m = _max_shift(b, x, axis)
    if b_ is None and not return_sign:
        out = U.binary(b, "add", _log_sum_exp_shifted(b, U.binary(b, "subtract", x, m), axis), m)
        return out if keepdims else _squeeze_axes(b, out, axis)
    t = U.unary(b, "exp", U.binary(b, "subtract", x, m))
    if b_ is not None:
        t = U.binary(b, "multiply", t, b_)
    s = R.reduce(b, "sum", t, axis, None, None, True)
    if return_sign:
        sign = U.unary(b, "sign", s)
        out = U.binary(b, "add", U.unary(b, "log", U.unary(b, "absolute", s)), m)
    else:
        out = U.binary(b, "add", U.unary(b, "log", s), m)
    if not keepdims:
        out = _squeeze_axes(b, out, axis)
        if return_sign:
            sign = _squeeze_axes(b, sign, axis)
    return (out, sign) if return_sign else out


def _squeeze_axes(b: Builder, x: Staged, axis: Any) -> Staged:
    from_shapes = A.reshape_value
    if axis is None:
        return Staged(from_shapes(b, x.value, ()))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    nd = x.ndim
    drop = {int(a) % nd for a in axes}
    return Staged(from_shapes(b, x.value, [d for i, d in enumerate(x.shape) if i not in drop]))


def softmax(b: Builder, x: Any, axis: Any = None) -> Staged:
    """exp(x - max) / sum(exp(x - max)) along `axis` (all axes for None)."""
    s = _float_array(b, x)
    e = U.unary(b, "exp", U.binary(b, "subtract", s, _max_shift(b, s, axis)))
    return U.binary(b, "true_divide", e, R.reduce(b, "sum", e, axis, None, None, True))


def log_softmax(b: Builder, x: Any, axis: Any = None) -> Staged:
    """x - max - log(sum(exp(x - max))) along `axis`."""
    s = _float_array(b, x)
    shifted = U.binary(b, "subtract", s, _max_shift(b, s, axis))
    return U.binary(b, "subtract", shifted, _log_sum_exp_shifted(b, shifted, axis))


def _scipy_ufunc_handler(name: str) -> Callable[..., Staged]:
    rule = _SCIPY_UFUNC_RULES[name]

    def handler(b: Builder, fn: Any, *args: Any, out: Any = None) -> Staged:
        R._no_out(out)
        return A.apply(b, E(fn, None, rule=rule), args)
    return handler


def _logsumexp(builder: Builder, fn: Any, a: Any, axis: Any = None, b: Any = None,
               keepdims: bool = False, return_sign: bool = False) -> Any:
    return logsumexp(builder, a, axis, b, keepdims, return_sign)


def _polygamma(builder: Builder, fn: Any, n: Any, x: Any) -> Staged:
    """polygamma(n, x) for a static integer n >= 0 (digamma for 0)."""
    if isinstance(n, Staged) or not (isinstance(n, (int, np.integer)) or (
            isinstance(n, np.ndarray) and n.ndim == 0 and n.dtype.kind in "iu")):
        raise Reject(UnsupportedError, "scipy.special.polygamma: the order n must be a "
                     "compile-time integer", "pass a Python int (or mark it static_argnums)")
    order = int(n)
    if order < 0:
        raise Reject(CompileError, "scipy.special.polygamma: the order n must be >= 0")
    rule: Callable[..., Value] = (_unary_prim(ops.digamma) if order == 0 else
                                  lambda b, vs, dtype: ops.polygamma(b, vs[0], order))
    s = A.lift(builder, A.normalize_operand(builder, x))
    return A.apply(builder, E(np.exp, None, rule=rule), (A.convert(builder, s, F64),))   # float64, as SciPy


#: scipy.special.<name> -> handler(builder, the function object, *args, **kwargs)
SCIPY: dict[str, Callable[..., Any]] = {
    **{name: _scipy_ufunc_handler(name) for name in _SCIPY_UFUNC_RULES},
    "logsumexp": _logsumexp,
    "softmax": lambda b, fn, x, axis=None: softmax(b, x, axis),
    "log_softmax": lambda b, fn, x, axis=None: log_softmax(b, x, axis),
    "polygamma": _polygamma,
}

_NAMES: dict[int, tuple[Any, dict[int, str]]] = {}


def scipy_name(fn: Any) -> str | None:
    """'erf' for scipy.special.erf (by identity, SciPy already imported by the caller's
    module), else None. SciPy itself is never imported here."""
    module = sys.modules.get("scipy.special")
    if module is None:
        return None
    cached = _NAMES.get(id(module))
    if cached is None or cached[0] is not module:
        names: dict[int, str] = {}
        for name in getattr(module, "__all__", None) or dir(module):
            value = getattr(module, name, None)
            if callable(value) and not isinstance(value, type) and not name.startswith("_"):
                names.setdefault(id(value), name)
        cached = (module, names)
        _NAMES[id(module)] = cached
    name = cached[1].get(id(fn))
    if name is not None and getattr(module, name, None) is fn:
        own = getattr(fn, "__name__", None)          # jv, not its alias jn
        return own if isinstance(own, str) and getattr(module, own, None) is fn else name
    owner = getattr(fn, "__module__", None) or ""
    if owner.startswith("scipy.special"):
        return getattr(fn, "__name__", "?")
    return None


def scipy_call(b: Builder, name: str, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Stage scipy.special.<name>(*args, **kwargs), or refuse it with one clear message."""
    handler = SCIPY.get(name)
    if handler is None:
        raise Reject(UnsupportedError, f"scipy.special.{name} is not supported",
                     "supported: " + ", ".join(f"scipy.special.{n}" for n in sorted(SCIPY))
                     + "; or wrap it in a compiler.Function (it then runs as a host callback)")
    try:
        inspect.signature(handler).bind(b, fn, *args, **kwargs)
    except TypeError as e:
        raise Reject(CompileError, f"scipy.special.{name}(): {e}") from None
    return handler(b, fn, *args, **kwargs)
