"""The elementwise table: every NumPy ufunc we support, as data.

Each entry says which NumPy function gives the result dtype (the oracle),
which primitive computes it, and how operands are prepared (``kind``, see
:class:`compiler.frontend.arrays.Elementwise`). A few functions are
compositions (``fmax``, ``trunc``, ``logaddexp``...) written as rules that
build IR from other primitives.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

import compiler.primitives as P
from compiler.primitives import ops
from compiler.errors import UnsupportedError
from compiler.frontend import arrays as A
from compiler.frontend.arrays import Elementwise as E
from compiler.frontend.values import Reject, Staged
from compiler.ir.builder import Builder
from compiler.ir.core import Value
from compiler.ir.types import BOOL, F16, F64, is_complex, is_float, is_inexact, real_dtype


def _identity(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
    return vs[0]


def _square(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
    return ops.mul(b, vs[0], vs[0])


def _reciprocal(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
    if not is_inexact(dtype):
        raise Reject(UnsupportedError, "np.reciprocal of integers (C integer division) is not "
                     "supported", "use 1 / x for a float result")
    return ops.div(b, ops.full_like(b, 1.0, vs[0]), vs[0])


def _trunc(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
    (x,) = vs
    if not is_float(dtype):
        return x
    neg = ops.lt(b, x, ops.full_like(b, 0.0, x))
    return ops.select(b, neg, ops.ceil(b, x), ops.floor(b, x))


def _fminmax(prim: Any) -> Any:
    def rule(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
        x, y = vs
        out = b.emit1(prim, [x, y])
        if is_complex(dtype):       # NumPy: x when y has a NaN part, y when x has one
            nan_x, nan_y = (ops.or_(b, ops.isnan(b, ops.real(b, v)), ops.isnan(b, ops.imag(b, v)))
                            for v in (x, y))
            return ops.select(b, nan_y, x, ops.select(b, nan_x, y, out))
        if not is_float(dtype):
            return out
        out = ops.select(b, ops.isnan(b, y), x, out)
        return ops.select(b, ops.isnan(b, x), y, out)
    return rule


def _logaddexp_rule(exp: Any, scale: float) -> Any:
    """logaddexp (exp, scale 1) and logaddexp2 (exp2, scale 1/log 2), as NumPy computes them:
    ``max + scale * log1p(exp(-|x - y|))``, which is ``x + log 2`` (``x + 1``) at a tie.

    Written with selects on ``x >= y`` rather than ``maximum`` and ``abs`` so that every
    derivative is right, ties included: each branch is a smooth closed form of the function
    (``x + log1p(exp(y - x))``), so at a tie the gradient is (1/2, 1/2) and the Hessian that
    of the function, where ``maximum`` (1/2 each) plus ``abs`` (sign(0) = 0) would give the
    right gradient by accident and a zero Hessian. At a tie of infinities ``x - y`` is nan:
    the gap is 0 there (the value is x, as in NumPy)."""
    def rule(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
        x, y = vs
        x_wins = ops.ge(b, x, y)
        big = ops.select(b, x_wins, x, y)
        gap = ops.select(b, x_wins, ops.sub(b, y, x), ops.sub(b, x, y))        # -|x - y|
        infinite_tie = ops.and_(b, ops.eq(b, x, y), ops.isinf(b, x))
        gap = ops.select(b, infinite_tie, ops.full_like(b, 0.0, gap), gap)
        tail = ops.log1p(b, exp(b, gap))
        if scale != 1.0:
            tail = ops.mul(b, tail, ops.full_like(b, scale, tail))
        return ops.add(b, big, tail)
    return rule


def _scale(factor: float) -> Any:
    def rule(b: Builder, vs: list[Value], dtype: np.dtype) -> Value:
        return ops.mul(b, vs[0], ops.full_like(b, factor, vs[0]))
    return rule


_FLOAT_MATH = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt", "sin",
               "cos", "tan", "tanh", "sinh", "cosh", "arcsin", "arccos", "arctan", "arcsinh",
               "arccosh", "arctanh"]

UFUNCS: dict[str, E] = {
    # arithmetic
    "add": E(np.add, P.add), "subtract": E(np.subtract, P.sub),
    "multiply": E(np.multiply, P.mul), "true_divide": E(np.true_divide, P.div),
    "divide": E(np.divide, P.div), "floor_divide": E(np.floor_divide, P.floordiv),
    "remainder": E(np.remainder, P.mod), "mod": E(np.remainder, P.mod),
    "power": E(np.power, P.pow_), "maximum": E(np.maximum, P.maximum),
    "minimum": E(np.minimum, P.minimum), "fmax": E(np.fmax, None, rule=_fminmax(P.maximum)),
    "fmin": E(np.fmin, None, rule=_fminmax(P.minimum)), "arctan2": E(np.arctan2, P.arctan2),
    "hypot": E(np.hypot, P.hypot), "logaddexp": E(np.logaddexp, None, rule=_logaddexp_rule(ops.exp, 1.0)),
    "logaddexp2": E(np.logaddexp2, None, rule=_logaddexp_rule(ops.exp2, 1.0 / math.log(2.0))),
    "negative": E(np.negative, P.neg), "positive": E(np.positive, None, rule=_identity),
    "absolute": E(np.absolute, P.abs_, "abs"), "fabs": E(np.fabs, P.abs_),
    "sign": E(np.sign, P.sign), "square": E(np.square, None, rule=_square),
    "reciprocal": E(np.reciprocal, None, rule=_reciprocal),
    "deg2rad": E(np.deg2rad, None, rule=_scale(math.pi / 180)),
    "radians": E(np.radians, None, rule=_scale(math.pi / 180)),
    "rad2deg": E(np.rad2deg, None, rule=_scale(180 / math.pi)),
    "degrees": E(np.degrees, None, rule=_scale(180 / math.pi)),
    # rounding
    "floor": E(np.floor, P.floor, "round"), "ceil": E(np.ceil, P.ceil, "round"),
    "rint": E(np.rint, P.round_, "round"), "trunc": E(np.trunc, None, "round", rule=_trunc),
    "fix": E(np.fix, None, "round", rule=_trunc),
    # comparisons and logic
    "equal": E(np.equal, P.eq, "compare"), "not_equal": E(np.not_equal, P.ne, "compare"),
    "less": E(np.less, P.lt, "compare"), "less_equal": E(np.less_equal, P.le, "compare"),
    "greater": E(np.greater, P.gt, "compare"),
    "greater_equal": E(np.greater_equal, P.ge, "compare"),
    "logical_and": E(np.logical_and, P.and_, "logical"),
    "logical_or": E(np.logical_or, P.or_, "logical"),
    "logical_xor": E(np.logical_xor, P.xor, "logical"),
    "logical_not": E(np.logical_not, P.not_, "logical"),
    "bitwise_and": E(np.bitwise_and, P.and_), "bitwise_or": E(np.bitwise_or, P.or_),
    "bitwise_xor": E(np.bitwise_xor, P.xor), "invert": E(np.invert, P.not_),
    "bitwise_not": E(np.invert, P.not_),
    "left_shift": E(np.left_shift, P.shl), "right_shift": E(np.right_shift, P.shr),
    "bitwise_left_shift": E(np.left_shift, P.shl), "bitwise_right_shift": E(np.right_shift, P.shr),
    "isnan": E(np.isnan, P.isnan, "predicate"), "isinf": E(np.isinf, P.isinf, "predicate"),
    "isfinite": E(np.isfinite, P.isfinite, "predicate"),
}
UFUNCS.update({name: E(getattr(np, name), getattr(P, name)) for name in _FLOAT_MATH})


def ufunc(b: Builder, name: str, *args: Any) -> Staged:
    """Apply the ufunc called `name` (a key of :data:`UFUNCS`)."""
    return A.apply(b, UFUNCS[name], args)


def binary(b: Builder, name: str, x: Any, y: Any) -> Staged:
    return A.apply(b, UFUNCS[name], (x, y))


def unary(b: Builder, name: str, x: Any) -> Staged:
    return A.apply(b, UFUNCS[name], (x,))


def power(b: Builder, x: Any, y: Any, operator: bool = True) -> Staged:
    """x ** y (`operator`) or np.power(x, y), as NumPy computes them.

    The dtype is NumPy's for the spelling: the operator squares a bool array for ``** 2``
    (int8, as in NumPy). A scalar exponent (a Python number or a 0-d
    array, or a size-1 array broadcast over a larger base) takes NumPy's scalar loops:
    -1, 0, 0.5, 1 and 2 are 1/x, 1, sqrt(x), x and x*x (``(-inf) ** 0.5`` is nan and
    ``(-0.0) ** 0.5`` is -0.0, where pow gives inf and 0); with a compile-time exponent
    the choice is made while compiling, with a run-time one in the kernel."""
    x, y = A.normalize_operand(b, x), A.normalize_operand(b, y)
    dtype = A.oracle(_power_operator if operator else np.power, [x, y])
    if isinstance(x, Staged) and not x.weak and isinstance(y, (int, float)) \
            and not isinstance(y, bool):
        fast = {2: "square", 1: "positive"}.get(int(y)) if y in (1, 2) else None
        if is_inexact(dtype) and y == 0.5:     # NumPy's fast scalar powers, complex too
            fast = "sqrt"
        elif is_float(dtype) and y == -1:
            fast = "reciprocal"
        if fast is not None:
            return A.convert(b, unary(b, fast, A.convert(b, x, dtype)), dtype)
    if is_complex(dtype) and isinstance(x, Staged) and _small_integer(y):
        return _complex_integer_power(b, A.convert(b, x, dtype), int(y.real))
    shape = A.broadcast_shapes(A.shape_of(x), A.shape_of(y))
    y_shape = A.shape_of(y)
    scalar = all(d == 1 for d in y_shape) and (not y_shape or tuple(y_shape) != tuple(shape))
    if np.dtype(dtype).kind == "i" and isinstance(y, Staged) and np.dtype(y.dtype).kind == "i":
        yv = y.value          # NumPy refuses a negative exponent of an integer power at run time
        ops.check(b, ops.ge(b, yv, ops.full_like(b, 0, yv)), "ValueError",
                  "Integers to negative integer powers are not allowed.")
    if dtype == F16:    # no float16 power loop of NumPy's has the scalar fast paths; ** has them
        scalar = operator and (isinstance(y, (int, float)) or (isinstance(y, Staged) and y.weak))
    if not (is_float(dtype) and scalar):
        return A.convert(b, binary(b, "power", x, y), dtype)
    out = ops.pow_(b, A.operand(b, x, dtype, shape), A.operand(b, y, dtype, shape), scalar_exponent=True)
    return Staged(out, weak=A.all_weak([x, y]))


def _small_integer(y: Any) -> bool:
    """A static exponent that NumPy's complex power computes by multiplications."""
    return isinstance(y, (int, float, complex)) and not isinstance(y, bool) \
        and complex(y).imag == 0 and float(complex(y).real).is_integer() and abs(complex(y).real) < 100


def _complex_integer_power(b: Builder, x: Staged, n: int) -> Staged:
    """x ** n for a complex x and an integer |n| < 100, as NumPy's npy_cpow: binary powering,
    and 1 / x**|n| for a negative n."""
    result: Staged | None = None
    base, k = x, abs(n)
    while k:
        if k & 1:
            result = base if result is None else binary(b, "multiply", result, base)
        k >>= 1
        if k:
            base = binary(b, "multiply", base, base)
    if result is None:
        return A.convert(b, Staged(ops.full_like(b, 1.0, x.value)), x.dtype)
    return binary(b, "true_divide", A.constant(b, 1.0, x.dtype), result) if n < 0 else result


def _power_operator(x: Any, y: Any) -> Any:
    return x ** y


_power_operator.__name__ = "the ** operator"          # for the oracle's messages


def where(b: Builder, cond: Any, x: Any, y: Any) -> Staged:
    """np.where(cond, x, y): cond's truth value per element, NEP 50 promotion of x and y."""
    cond, x, y = (A.normalize_operand(b, v) for v in (cond, x, y))
    dtype = A.result_dtype([x, y])
    shape = A.broadcast_shapes(*[A.shape_of(v) for v in (cond, x, y)])
    c = A.lift(b, cond)
    cv = c.value if c.dtype == BOOL else ops.ne(b, c.value, ops.full_like(b, 0, c.value))
    vals = [A.broadcast_value(b, cv, shape), A.operand(b, x, dtype, shape),
            A.operand(b, y, dtype, shape)]
    return Staged(ops.select(b, *vals))


def clip(b: Builder, x: Any, a_min: Any = None, a_max: Any = None) -> Staged:
    """np.clip: minimum(maximum(x, a_min), a_max) in the promoted dtype. NumPy makes an
    array of `x` first, so a Python number there is not weak: np.clip(0, -2, int32) is int64."""
    x = A.normalize_operand(b, x)
    if isinstance(x, A.PY_SCALARS):
        x = np.asarray(x)
    elif isinstance(x, Staged) and x.weak:          # a Python float argument
        x = Staged(x.value)
    operands: Sequence[Any] = [v for v in (x, a_min, a_max) if v is not None]
    dtype = A.result_dtype(operands)
    out = A.convert(b, A.lift(b, A.normalize_operand(b, x)), dtype)
    if a_min is not None:
        out = A.convert(b, binary(b, "maximum", out, _as(b, a_min, dtype)), dtype)
    if a_max is not None:
        out = A.convert(b, binary(b, "minimum", out, _as(b, a_max, dtype)), dtype)
    return out


def _as(b: Builder, v: Any, dtype: np.dtype) -> Staged:
    v = A.normalize_operand(b, v)
    return A.convert(b, A.lift(b, v), dtype) if isinstance(v, Staged) else A.constant(b, v, dtype)


def round_(b: Builder, x: Any, decimals: int = 0) -> Staged:
    """np.round: half to even; decimals != 0 scales by 10**decimals as NumPy does."""
    x = A.lift(b, A.normalize_operand(b, x))
    if is_complex(x.dtype):             # NumPy rounds both parts
        parts = [round_(b, part(b, x), decimals) for part in (real, imag)]
        return Staged(ops.complex_(b, parts[0].value, parts[1].value), weak=x.weak)
    if not is_float(x.dtype):
        return Staged(x.value) if decimals >= 0 else _round_scaled(b, x, decimals)
    if decimals == 0:
        return unary(b, "rint", x)
    return _round_scaled(b, x, decimals)


def _round_scaled(b: Builder, x: Staged, decimals: int) -> Staged:
    if not is_float(x.dtype):
        raise Reject(UnsupportedError, "np.round of integers with negative decimals is not "
                     "supported", "convert to float first")
    scale = A.constant(b, 10.0 ** abs(decimals), x.dtype)
    if decimals > 0:
        return binary(b, "true_divide", unary(b, "rint", binary(b, "multiply", x, scale)), scale)
    return binary(b, "multiply", unary(b, "rint", binary(b, "true_divide", x, scale)), scale)


def divmod_(b: Builder, x: Any, y: Any) -> tuple[Staged, Staged]:
    return binary(b, "floor_divide", x, y), binary(b, "remainder", x, y)


def sqrt_of_squares(b: Builder, v: Staged) -> Staged:
    """sqrt(v) for a sum of squares v (std, the 2-norm), with derivative 0 where v == 0.

    There the function (std of equal values, the norm of 0) is at its minimum and not
    differentiable; 0 is its smallest subgradient, and the derivative of a single-element
    std, which is constant, is exactly 0 (torch's convention; sqrt alone would give
    inf * 0 = nan). The sqrt runs on 1 where v == 0, so no derivative order sees inf."""
    if not is_float(v.dtype):
        return A.convert(b, unary(b, "sqrt", v), v.dtype)
    x = v.value
    at_zero = ops.eq(b, x, ops.full_like(b, 0.0, x))
    safe = ops.select(b, at_zero, ops.full_like(b, 1.0, x), x)
    return Staged(ops.select(b, at_zero, ops.full_like(b, 0.0, x), ops.sqrt(b, safe)), weak=v.weak)


# ---- complex numbers (docs/complex.md) ---------------------------------------------------

def real(b: Builder, x: Any) -> Staged:
    """np.real / x.real: the real part, a view of an array (writes reach it, as in NumPy);
    of a real array, the array itself."""
    s = A.lift(b, A.normalize_operand(b, x))
    if s.weak or not isinstance(x, Staged):
        return Staged(ops.real(b, s.value), weak=s.weak) if is_complex(s.dtype) else s
    return A.view(ops.real(b, s.value), x) if is_complex(s.dtype) else A.view(s.value, x)


def imag(b: Builder, x: Any) -> Staged:
    """np.imag / x.imag: the imaginary part, a view of an array; of a real array, zeros of
    its dtype that are read-only, as NumPy's."""
    s = A.lift(b, A.normalize_operand(b, x))
    part = ops.imag(b, s.value) if is_complex(s.dtype) else ops.zeros_like(b, s.value)
    if s.weak or not isinstance(x, Staged):
        return Staged(part, weak=s.weak)
    return A.view(part, x, readonly=not is_complex(s.dtype))


def conj(b: Builder, x: Any, out: Any = None) -> Staged:
    """np.conj / np.conjugate / x.conj(): of a real array, the array itself."""
    if out is not None:
        raise Reject(UnsupportedError, "out= is not supported: compiled functions return their "
                     "results", "return the value instead")
    s = A.lift(b, A.normalize_operand(b, x))
    return Staged(ops.conj(b, s.value), weak=s.weak) if is_complex(s.dtype) else s


def angle(b: Builder, z: Any, deg: bool = False) -> Staged:
    """np.angle: arctan2(imag, real), in degrees with deg=True (float64 for integer input)."""
    s = A.lift(b, A.normalize_operand(b, z))
    if not is_inexact(s.dtype):
        s = A.convert(b, s, F64)
    if is_complex(s.dtype):
        out = ops.arctan2(b, ops.imag(b, s.value), ops.real(b, s.value))
    else:
        out = ops.arctan2(b, ops.zeros_like(b, s.value), s.value)
    if deg:
        out = ops.mul(b, out, ops.full_like(b, 180.0 / math.pi, out))
    return Staged(out)


def iscomplex(b: Builder, x: Any) -> Staged:
    """np.iscomplex: imag != 0 per element (all False for a real array)."""
    return _imag_test(b, x, ops.ne, False)


def isreal(b: Builder, x: Any) -> Staged:
    """np.isreal: imag == 0 per element."""
    return _imag_test(b, x, ops.eq, True)


def _imag_test(b: Builder, x: Any, compare: Any, real_answer: bool) -> Staged:
    """compare(imag(x), 0) per element; `real_answer` everywhere for a real array."""
    s = A.lift(b, A.normalize_operand(b, x))
    if not is_complex(s.dtype):
        return Staged(ops.full(b, real_answer, s.type.with_dtype(BOOL)))
    im = ops.imag(b, s.value)
    return Staged(compare(b, im, ops.zeros_like(b, im)))


def real_if_close(b: Builder, a: Any, tol: float = 100) -> Staged:
    """np.real_if_close with a static result dtype: a complex array stays complex (NumPy
    returns the real part only when every imaginary part is small, a decision on values)."""
    return A.lift(b, A.normalize_operand(b, a))


def make_complex(b: Builder, re: Any, im: Any) -> Staged:
    """re + 1j*im for two real (float) operands, broadcast and promoted as NumPy adds them."""
    dtype = real_dtype(A.result_dtype([re, im, 1j]))
    shape = A.broadcast_shapes(A.shape_of(re), A.shape_of(im))
    return Staged(ops.complex_(b, A.operand(b, re, dtype, shape), A.operand(b, im, dtype, shape)),
                  weak=A.all_weak([re, im]))
