"""Elementwise primitives: arithmetic, comparisons, logic, math functions, casts.

Operands of an elementwise op have one shape and (except ``select``'s
predicate) one dtype: the frontend inserts ``broadcast_in_dim`` and
``convert`` as NumPy's broadcasting and NEP 50 promotion say. Each entry is
one line per rule thanks to the family helpers at the top; ``lower`` turns
scalar operands into one scalar with llvmlite (``cg`` is the backend's
codegen context: ``cg.b`` the IRBuilder, ``cg.vecmath``, ``cg.intrinsic``,
``cg.const``).
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from compiler.errors import DataDependentOperationError
from compiler.ir.primitive import Primitive, define
from compiler.ir.types import BOOL, TensorType, is_float, is_inexact, is_int, is_unsigned
from compiler.primitives import ad, ops
from compiler.primitives.base import check, same_shape_rule
from compiler.primitives.batching import elementwise_rule

Lower = Callable[..., Any]


def _same(dtypes: tuple[np.dtype, ...], params: dict[str, Any]) -> np.dtype:
    for d in dtypes[1:]:
        check(d == dtypes[0], f"elementwise operands must have one dtype, got {', '.join(map(str, dtypes))}")
    return dtypes[0]


def _float_only(dtypes: tuple[np.dtype, ...], params: dict[str, Any]) -> np.dtype:
    check(is_float(dtypes[0]), f"operand must be floating point, got {dtypes[0]}")
    return _same(dtypes, params)


def _inexact(dtypes: tuple[np.dtype, ...], params: dict[str, Any]) -> np.dtype:
    """Float or complex operands (the ops with a complex rule: primitives/complex_ops.py)."""
    check(is_inexact(dtypes[0]), f"operand must be floating point or complex, got {dtypes[0]}")
    return _same(dtypes, params)


def _numeric(dtypes: tuple[np.dtype, ...], params: dict[str, Any]) -> np.dtype:
    check(dtypes[0] != BOOL, "operand must be numeric, got bool")
    return _same(dtypes, params)


def _to_bool(dtypes: tuple[np.dtype, ...], params: dict[str, Any]) -> np.dtype:
    _same(dtypes, params)
    return BOOL


def _float_to_bool(dtypes: tuple[np.dtype, ...], params: dict[str, Any]) -> np.dtype:
    _float_only(dtypes, params)
    return BOOL


def _int_or_bool(dtypes: tuple[np.dtype, ...], params: dict[str, Any]) -> np.dtype:
    check(not is_float(dtypes[0]), f"operand must be integer or bool, got {dtypes[0]}")
    return _same(dtypes, params)


def elementwise(prim: Primitive, ref: Callable[..., Any], lower: Lower,
                dtype_rule: Callable[..., np.dtype] = _same, d: Any = None, **rules: Any) -> Primitive:
    """Define an elementwise primitive; `d` gives its partial derivatives (one per operand,
    see ad.from_partials), "zero" for a piecewise-constant op, None if not differentiable."""
    rules.setdefault("vmap_rule", elementwise_rule)
    if d == "zero":
        rules["jvp_rule"], rules["vjp_rule"] = ad.zero_rules()
    elif d is not None:
        rules["jvp_rule"], rules["vjp_rule"] = ad.from_partials(*d)
    else:
        rules.setdefault("differentiable", False)
    return define(prim, shape_rule=same_shape_rule(dtype_rule), numpy_ref=ref, lower=lower,
                  doc=_summary(ref), **rules)


def _summary(ref: Callable[..., Any]) -> str:
    """What the primitive computes, for docs/primitives.md: the NumPy function it matches, or
    the first line of its reference's docstring."""
    name = getattr(ref, "__wrapped__", ref).__name__
    if hasattr(np, name) and isinstance(getattr(np, name), np.ufunc):
        return f"np.{name}, elementwise"
    return (ref.__doc__ or "").strip().split("\n")[0]


def _math(name: str) -> Lower:
    """Lowering through the vector math library (falls back to the LLVM intrinsic)."""
    return lambda cg, op, a: cg.vecmath(name, a)


def _intrinsic(name: str) -> Lower:
    return lambda cg, op, a: cg.intrinsic(name, a)


_BOOL_ARITH = {"add": "or_", "mul": "and_"}   # NumPy: True + True is True, not False


def _arith(fop: str, iop: str) -> Lower:
    def lower(cg: Any, op: Any, a: list[Any]) -> Any:
        dtype = op.operands[0].dtype
        if dtype == BOOL:
            return getattr(cg.b, _BOOL_ARITH[iop])(*a)
        return getattr(cg.b, fop if is_float(dtype) else iop)(*a)
    return lower


# ---- derivative building blocks (IR through the builder) ----------------------------


_c = ops.full_like      # _c(b, 1.0, x): a constant of x's type, in the derivative table below


def _one(b: Any, x: Any, *rest: Any) -> Any:
    return _c(b, 1.0, x)


def _minus_one(b: Any, x: Any, *rest: Any) -> Any:
    return _c(b, -1.0, x)


def _tie_share(which: str) -> Callable[..., Any]:
    """d max(x, y)/dx: 1 where x wins, 1/2 at ties, 0 where y wins (as JAX and torch)."""

    def d(b: Any, x: Any, y: Any, out: Any) -> Any:
        wins = (ops.gt if which == "x>" else ops.lt)(b, x, y)
        tie = ops.eq(b, x, y)
        return ops.select(b, wins, _c(b, 1.0, x), ops.select(b, tie, _c(b, 0.5, x), _c(b, 0.0, x)))
    return d


def _swap(d: Callable[..., Any]) -> Callable[..., Any]:
    return lambda b, x, y, out: d(b, y, x, out)


def _pow_dx(b: Any, x: Any, y: Any, out: Any) -> Any:
    """y * x**(y-1), and 0 where y == 0 (so d/dx 0**0 is 0 rather than nan). The discarded
    branch is evaluated at y = 1 there (x**0): its own derivatives stay finite, so the zero
    cotangent a second derivative sends it does not turn into 0 * inf = nan."""
    y_is_0 = ops.eq(b, y, _c(b, 0.0, y))
    safe_y = ops.select(b, y_is_0, _c(b, 1.0, y), y)
    dx = ops.mul(b, safe_y, ops.pow_(b, x, ops.sub(b, safe_y, _c(b, 1.0, y))))
    return ops.select(b, y_is_0, _c(b, 0.0, x), dx)


def _pow_dy(b: Any, x: Any, y: Any, out: Any) -> Any:
    """log(x) * x**y, and 0 where x == 0 (the limit from the right). The discarded branch is
    evaluated at x = 1 there (log 1 = 0), for the same reason as in _pow_dx."""
    x_is_0 = ops.eq(b, x, _c(b, 0.0, x))
    safe_x = ops.select(b, x_is_0, _c(b, 1.0, x), x)
    dy = ops.mul(b, ops.log(b, safe_x), out)
    return ops.select(b, x_is_0, _c(b, 0.0, x), dy)


def _hypot_d(b: Any, x: Any, y: Any, out: Any) -> Any:
    zero = ops.eq(b, out, _c(b, 0.0, out))
    return ops.select(b, zero, _c(b, 0.0, x), ops.div(b, x, out))


def _arctan2_dy(b: Any, y: Any, x: Any, out: Any) -> Any:
    return ops.div(b, x, ops.add(b, ops.mul(b, x, x), ops.mul(b, y, y)))


def _arctan2_dx(b: Any, y: Any, x: Any, out: Any) -> Any:
    return ops.neg(b, ops.div(b, y, ops.add(b, ops.mul(b, x, x), ops.mul(b, y, y))))


def _mod_dy(b: Any, x: Any, y: Any, out: Any) -> Any:
    return ops.neg(b, ops.floor(b, ops.div(b, x, y)))


def _scaled(k: float, d: Callable[..., Any]) -> Callable[..., Any]:
    return lambda b, x, out: ops.mul(b, d(b, x, out), _c(b, k, x))


def _inv_sqrt_1mx2(b: Any, x: Any, out: Any) -> Any:
    return ops.div(b, _c(b, 1.0, x), ops.sqrt(b, ops.sub(b, _c(b, 1.0, x), ops.mul(b, x, x))))


# ---- arithmetic ----------------------------------------------------------------

def _lower_neg(cg: Any, op: Any, a: list[Any]) -> Any:
    return cg.b.fneg(a[0]) if is_float(op.operands[0].dtype) else cg.b.neg(a[0])


def _lower_abs(cg: Any, op: Any, a: list[Any]) -> Any:
    if is_float(op.operands[0].dtype):
        return cg.intrinsic("llvm.fabs", a)
    (x,) = a
    if is_unsigned(op.operands[0].dtype):
        return x
    return cg.b.select(cg.b.icmp_signed("<", x, x.type(0)), cg.b.neg(x), x)


def _lower_sign(cg: Any, op: Any, a: list[Any]) -> Any:
    (x,) = a
    b, zero = cg.b, x.type(0)
    if is_float(op.operands[0].dtype):
        nan_or_zero = b.select(b.fcmp_ordered("==", x, zero), zero, x)   # sign(-0.0) is +0.0
        pos = b.select(b.fcmp_ordered(">", x, zero), x.type(1.0), nan_or_zero)
        return b.select(b.fcmp_ordered("<", x, zero), x.type(-1.0), pos)
    if is_unsigned(op.operands[0].dtype):
        return b.zext(b.icmp_unsigned("!=", x, zero), x.type)
    gt = b.zext(b.icmp_signed(">", x, zero), x.type)
    lt = b.zext(b.icmp_signed("<", x, zero), x.type)
    return b.sub(gt, lt)


def _lower_maxmin(which: str) -> Lower:
    def lower(cg: Any, op: Any, a: list[Any]) -> Any:
        if is_float(op.operands[0].dtype):
            return cg.intrinsic("llvm.maximum" if which == ">" else "llvm.minimum", a)
        x, y = a
        return cg.b.select(cg.icmp(op.operands[0].dtype, which, x, y), x, y)
    return lower


def _float_divmod(cg: Any, x: Any, y: Any) -> tuple[Any, Any]:
    """NumPy's npy_divmod for floats: (floor quotient, modulo with the sign of y)."""
    b = cg.b
    zero = x.type(0.0)
    mod = b.frem(x, y)
    div = b.fdiv(b.fsub(x, mod), y)
    adjust = b.and_(b.fcmp_unordered("!=", mod, zero),
                    b.icmp_unsigned("!=", b.fcmp_ordered("<", y, zero), b.fcmp_ordered("<", mod, zero)))
    mod_adj = b.select(adjust, b.fadd(mod, y), mod)
    div = b.select(adjust, b.fsub(div, x.type(1.0)), div)
    mod_out = b.select(b.fcmp_ordered("==", mod_adj, zero), cg.intrinsic("llvm.copysign", [zero, y]), mod_adj)
    # floor the quotient, rounding to the nearest integer when it is within 0.5
    floordiv = cg.intrinsic("llvm.floor", [div])
    floordiv = b.select(b.fcmp_ordered(">", b.fsub(div, floordiv), x.type(0.5)),
                        b.fadd(floordiv, x.type(1.0)), floordiv)
    quotient = b.fdiv(x, y)
    is_zero_div = b.fcmp_ordered("==", div, zero)
    floordiv = b.select(is_zero_div, cg.intrinsic("llvm.copysign", [zero, quotient]), floordiv)
    y_zero = b.fcmp_ordered("==", y, zero)
    return b.select(y_zero, quotient, floordiv), b.select(y_zero, mod, mod_out)


def _int_divmod(cg: Any, x: Any, y: Any) -> tuple[Any, Any]:
    """Python floor division and modulo; division by zero gives 0 as in NumPy."""
    b = cg.b
    zero, one, minus_one = x.type(0), x.type(1), x.type(-1)
    y_zero = b.icmp_signed("==", y, zero)
    y_neg1 = b.icmp_signed("==", y, minus_one)
    safe_y = b.select(b.or_(y_zero, y_neg1), one, y)      # sdiv by 0 or MIN/-1 is UB
    q = b.sdiv(x, safe_y)
    r = b.srem(x, safe_y)
    fix = b.and_(b.icmp_signed("!=", r, zero), b.icmp_signed("!=", b.icmp_signed("<", r, zero),
                                                             b.icmp_signed("<", safe_y, zero)))
    q = b.select(fix, b.sub(q, one), q)
    r = b.select(fix, b.add(r, safe_y), r)
    q = b.select(y_neg1, b.neg(x), q)
    r = b.select(y_neg1, zero, r)
    return b.select(y_zero, zero, q), b.select(y_zero, zero, r)


def _uint_divmod(cg: Any, x: Any, y: Any) -> tuple[Any, Any]:
    """Unsigned division and modulo; division by zero gives 0 as in NumPy."""
    b = cg.b
    zero = x.type(0)
    y_zero = b.icmp_unsigned("==", y, zero)
    safe_y = b.select(y_zero, x.type(1), y)
    return b.select(y_zero, zero, b.udiv(x, safe_y)), b.select(y_zero, zero, b.urem(x, safe_y))


def _lower_divmod(which: int) -> Lower:
    def lower(cg: Any, op: Any, a: list[Any]) -> Any:
        dtype = op.operands[0].dtype
        fn = _float_divmod if is_float(dtype) else _uint_divmod if is_unsigned(dtype) else _int_divmod
        return fn(cg, *a)[which]
    return lower


def _lower_pow(cg: Any, op: Any, a: list[Any]) -> Any:
    if not is_float(op.operands[0].dtype):
        return cg.int_pow(*a, signed=not is_unsigned(op.operands[0].dtype))
    const = cg.constant_power(*a)          # x ** 3, x ** -0.5, ...: products and a sqrt
    if const is not None:
        return const
    out = cg.vecmath("pow", a)
    if op.params.get("scalar_exponent"):
        x, y = a
        fast = [(2.0, cg.b.fmul(x, x)), (0.5, cg.intrinsic("llvm.sqrt", [x])),
                (-1.0, cg.b.fdiv(x.type(1.0), x)), (1.0, x), (0.0, x.type(1.0))]
        for value, result in fast:
            out = cg.b.select(cg.b.fcmp_ordered("==", y, y.type(value)), result, out)
    return out


def _ref_int_safe(fn: Callable[..., Any]) -> Callable[..., Any]:
    def ref(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return fn(x, y)
    ref.__doc__ = fn.__doc__
    ref.__wrapped__ = fn    # type: ignore[attr-defined]
    return ref


def _ref_pow(x: np.ndarray, y: np.ndarray, scalar_exponent: bool = False) -> np.ndarray:
    """x ** y (integer powers with negative exponents give 0 unless |x| == 1).

    With ``scalar_exponent``, NumPy's loops for a broadcast exponent: x ** 0.5 is sqrt(x)."""
    if is_int(np.asarray(x).dtype):
        y = np.asarray(y)
        neg = y < 0
        safe = np.power(x, np.where(neg, 0, y))
        inv = np.where(np.abs(x) == 1, np.power(x, np.abs(y) % 2), 0)
        return np.where(neg, inv, safe)
    with np.errstate(all="ignore"):
        if not scalar_exponent:
            return np.power(x, y)
        # one exponent value at a time: each takes NumPy's loop for that scalar exponent
        out = np.empty(np.broadcast_shapes(np.shape(x), np.shape(y)), np.result_type(x, y))
        x, y = np.broadcast_arrays(x, y)
        half = out.dtype == np.float16     # ** of float16: the fast paths, in float32, rounded
        for v in np.unique(y):
            at = (y == v) | (np.isnan(y) & np.isnan(v))
            out[at] = np.power(x[at].astype(np.float32), np.float32(v)) if half else np.power(x[at], v)
        return out


neg = elementwise(ops.neg_p, np.negative, _lower_neg, _numeric, d=(_minus_one,))
abs_ = elementwise(ops.abs_p, np.abs, _lower_abs, _numeric, d=(lambda b, x, out: ops.sign(b, x),))
sign = elementwise(ops.sign_p, np.sign, _lower_sign, _numeric, d="zero")
add = elementwise(ops.add_p, np.add, _arith("fadd", "add"), d=(_one, _one))
sub = elementwise(ops.sub_p, np.subtract, _arith("fsub", "sub"), _numeric, d=(_one, _minus_one))
mul = elementwise(ops.mul_p, np.multiply, _arith("fmul", "mul"),
                  d=(lambda b, x, y, out: y, lambda b, x, y, out: x))
div = elementwise(ops.div_p, _ref_int_safe(np.true_divide), _arith("fdiv", "sdiv"), _inexact,
                  d=(lambda b, x, y, out: ops.div(b, _c(b, 1.0, y), y), lambda b, x, y, out: ops.neg(b, ops.div(b, out, y))))
floordiv = elementwise(ops.floordiv_p, _ref_int_safe(np.floor_divide), _lower_divmod(0), _numeric, d="zero")
mod = elementwise(ops.mod_p, _ref_int_safe(np.remainder), _lower_divmod(1), _numeric, d=(_one, _mod_dy))
pow_ = elementwise(ops.pow_p, _ref_pow, _lower_pow, _numeric, d=(_pow_dx, _pow_dy))
maximum = elementwise(ops.maximum_p, np.maximum, _lower_maxmin(">"), d=(_tie_share("x>"), _swap(_tie_share("x>"))))
minimum = elementwise(ops.minimum_p, np.minimum, _lower_maxmin("<"), d=(_tie_share("x<"), _swap(_tie_share("x<"))))
arctan2 = elementwise(ops.arctan2_p, np.arctan2, _math("arctan2"), _float_only, d=(_arctan2_dy, _arctan2_dx))
hypot = elementwise(ops.hypot_p, np.hypot, _math("hypot"), _float_only,
                    d=(_hypot_d, lambda b, x, y, out: _hypot_d(b, y, x, out)))

# ---- transcendental and rounding (float operands; the frontend casts ints as NumPy does)

def _float_or_ruled_complex(prim: Primitive) -> Callable[..., np.dtype]:
    """Float operands, or complex ones once the primitive has a complex rule (the entries of
    primitives/complex_ops.py's MATH table): registering the rule is all it takes."""
    def rule(dtypes: tuple[np.dtype, ...], params: dict[str, Any]) -> np.dtype:
        if dtypes[0].kind == "c" and prim.complex_rule is not None:
            return _same(dtypes, params)
        return _float_only(dtypes, params)
    return rule


def _float_unary(prim: Primitive, ref: Callable[..., Any], lower: Lower, d: Any) -> Primitive:
    def checked(x: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return ref(x)
    checked.__doc__ = ref.__doc__
    checked.__wrapped__ = ref    # type: ignore[attr-defined]
    return elementwise(prim, checked, lower, _float_or_ruled_complex(prim), d=d if d == "zero" else (d,))


exp = _float_unary(ops.exp_p, np.exp, _math("exp"), lambda b, x, y: y)
exp2 = _float_unary(ops.exp2_p, np.exp2, _math("exp2"), _scaled(np.log(2.0), lambda b, x, y: y))
expm1 = _float_unary(ops.expm1_p, np.expm1, _math("expm1"), lambda b, x, y: ops.exp(b, x))   # not y + 1: it cancels for x << 0
log = _float_unary(ops.log_p, np.log, _math("log"), lambda b, x, y: ops.div(b, _c(b, 1.0, x), x))
log2 = _float_unary(ops.log2_p, np.log2, _math("log2"), lambda b, x, y: ops.div(b, _c(b, 1.0 / np.log(2.0), x), x))
log10 = _float_unary(ops.log10_p, np.log10, _math("log10"), lambda b, x, y: ops.div(b, _c(b, 1.0 / np.log(10.0), x), x))
log1p = _float_unary(ops.log1p_p, np.log1p, _math("log1p"), lambda b, x, y: ops.div(b, _c(b, 1.0, x), ops.add(b, x, _c(b, 1.0, x))))
sqrt = _float_unary(ops.sqrt_p, np.sqrt, _intrinsic("llvm.sqrt"), lambda b, x, y: ops.div(b, _c(b, 0.5, y), y))
cbrt = _float_unary(ops.cbrt_p, np.cbrt, _math("cbrt"), lambda b, x, y: ops.div(b, _c(b, 1.0 / 3.0, y), ops.mul(b, y, y)))
sin = _float_unary(ops.sin_p, np.sin, _math("sin"), lambda b, x, y: ops.cos(b, x))
cos = _float_unary(ops.cos_p, np.cos, _math("cos"), lambda b, x, y: ops.neg(b, ops.sin(b, x)))
tan = _float_unary(ops.tan_p, np.tan, _math("tan"), lambda b, x, y: ops.add(b, _c(b, 1.0, y), ops.mul(b, y, y)))
tanh = _float_unary(ops.tanh_p, np.tanh, _math("tanh"), lambda b, x, y: ops.sub(b, _c(b, 1.0, y), ops.mul(b, y, y)))
sinh = _float_unary(ops.sinh_p, np.sinh, _math("sinh"), lambda b, x, y: ops.cosh(b, x))
cosh = _float_unary(ops.cosh_p, np.cosh, _math("cosh"), lambda b, x, y: ops.sinh(b, x))
arcsin = _float_unary(ops.arcsin_p, np.arcsin, _math("arcsin"), _inv_sqrt_1mx2)
arccos = _float_unary(ops.arccos_p, np.arccos, _math("arccos"), _scaled(-1.0, _inv_sqrt_1mx2))
arctan = _float_unary(ops.arctan_p, np.arctan, _math("arctan"), lambda b, x, y: ops.div(b, _c(b, 1.0, x), ops.add(b, _c(b, 1.0, x), ops.mul(b, x, x))))
# d asinh = 1/sqrt(1 + x^2); d acosh = 1/(sqrt(x - 1) sqrt(x + 1)) (not 1/sqrt(x^2 - 1): that
# product is the derivative of the principal complex branch too); d atanh = 1/(1 - x^2)
arcsinh = _float_unary(ops.arcsinh_p, np.arcsinh, _math("arcsinh"), lambda b, x, y: ops.div(
    b, _c(b, 1.0, x), ops.sqrt(b, ops.add(b, _c(b, 1.0, x), ops.mul(b, x, x)))))
arccosh = _float_unary(ops.arccosh_p, np.arccosh, _math("arccosh"), lambda b, x, y: ops.div(
    b, _c(b, 1.0, x), ops.mul(b, ops.sqrt(b, ops.sub(b, x, _c(b, 1.0, x))),
                              ops.sqrt(b, ops.add(b, x, _c(b, 1.0, x))))))
arctanh = _float_unary(ops.arctanh_p, np.arctanh, _math("arctanh"), lambda b, x, y: ops.div(
    b, _c(b, 1.0, x), ops.sub(b, _c(b, 1.0, x), ops.mul(b, x, x))))
floor = _float_unary(ops.floor_p, np.floor, _intrinsic("llvm.floor"), "zero")
ceil = _float_unary(ops.ceil_p, np.ceil, _intrinsic("llvm.ceil"), "zero")
round_ = _float_unary(ops.round_p, np.rint, _intrinsic("llvm.rint"), "zero")   # half to even, as np.round

# ---- predicates, comparisons and logic -------------------------------------------

def _lower_isnan(cg: Any, op: Any, a: list[Any]) -> Any:
    return cg.b.fcmp_unordered("uno", a[0], a[0])


def _lower_isinf(cg: Any, op: Any, a: list[Any]) -> Any:
    return cg.b.fcmp_ordered("==", cg.intrinsic("llvm.fabs", a), a[0].type(float("inf")))


def _lower_isfinite(cg: Any, op: Any, a: list[Any]) -> Any:
    return cg.b.fcmp_ordered("<", cg.intrinsic("llvm.fabs", a), a[0].type(float("inf")))


isnan = elementwise(ops.isnan_p, np.isnan, _lower_isnan, _float_to_bool)
isinf = elementwise(ops.isinf_p, np.isinf, _lower_isinf, _float_to_bool)
isfinite = elementwise(ops.isfinite_p, np.isfinite, _lower_isfinite, _float_to_bool)


def _compare(pred: str) -> Lower:
    def lower(cg: Any, op: Any, a: list[Any]) -> Any:
        dtype = op.operands[0].dtype
        if is_float(dtype):
            # != is true when either side is nan; every other comparison is false then
            return (cg.b.fcmp_unordered if pred == "!=" else cg.b.fcmp_ordered)(pred, *a)
        return cg.icmp(dtype, pred, *a)
    return lower


eq = elementwise(ops.eq_p, np.equal, _compare("=="), _to_bool)
ne = elementwise(ops.ne_p, np.not_equal, _compare("!="), _to_bool)
lt = elementwise(ops.lt_p, np.less, _compare("<"), _to_bool)
le = elementwise(ops.le_p, np.less_equal, _compare("<="), _to_bool)
gt = elementwise(ops.gt_p, np.greater, _compare(">"), _to_bool)
ge = elementwise(ops.ge_p, np.greater_equal, _compare(">="), _to_bool)

and_ = elementwise(ops.and_p, np.bitwise_and, lambda cg, op, a: cg.b.and_(*a), _int_or_bool)
or_ = elementwise(ops.or_p, np.bitwise_or, lambda cg, op, a: cg.b.or_(*a), _int_or_bool)
xor = elementwise(ops.xor_p, np.bitwise_xor, lambda cg, op, a: cg.b.xor(*a), _int_or_bool)
not_ = elementwise(ops.not_p, np.invert, lambda cg, op, a: cg.b.not_(a[0]), _int_or_bool)


def _int_only(dtypes: tuple[np.dtype, ...], params: dict[str, Any]) -> np.dtype:
    check(is_int(dtypes[0]), f"operand must be an integer, got {dtypes[0]}")
    return _same(dtypes, params)


def _lower_shift(left: bool) -> Lower:
    """NumPy's npy_lshift / npy_rshift: a shift by the width or more (or by a negative amount,
    as an unsigned count) gives 0, or -1 for a negative signed value shifted right."""
    def lower(cg: Any, op: Any, a: list[Any]) -> Any:
        x, y = a
        b, width = cg.b, x.type(x.type.width)
        inside = b.icmp_unsigned("<", y, width)
        amount = b.select(inside, y, x.type(0))
        if left:
            return b.select(inside, b.shl(x, amount), x.type(0))
        if is_unsigned(op.operands[0].dtype):
            return b.select(inside, b.lshr(x, amount), x.type(0))
        return b.ashr(x, b.select(inside, y, x.type(x.type.width - 1)))
    return lower


shl = elementwise(ops.shl_p, _ref_int_safe(np.left_shift), _lower_shift(True), _int_only)
shr = elementwise(ops.shr_p, _ref_int_safe(np.right_shift), _lower_shift(False), _int_only)


def _select_rule(in_types: tuple[TensorType, ...], params: dict[str, Any]) -> tuple[TensorType, ...]:
    pred, a, b = in_types
    check(pred.dtype == BOOL, f"select: predicate must be bool, got {pred.dtype}")
    check(pred.shape == a.shape == b.shape, f"select: operands must have one shape, got {pred}, {a}, {b}")
    check(a.dtype == b.dtype, f"select: branches must have one dtype, got {a.dtype} and {b.dtype}")
    return (a,)


def _jvp_select(b: Any, op: Any, primals: list[Any], tangents: list[Any]) -> list[Any]:
    p, x, y = primals
    _, tx, ty = tangents
    if tx is None and ty is None:
        return [None]
    return [ops.select(b, p, ad.instantiate(b, tx, x), ad.instantiate(b, ty, y))]


def _vjp_select(b: Any, op: Any, primals: list[Any], outs: list[Any], cts: list[Any]) -> list[Any]:
    p, x, y = primals
    (ct,) = cts
    if ct is None or not ad.differentiable(x):
        return [None, None, None]
    zero = ops.zeros_like(b, ct)
    return [None, ops.select(b, p, ct, zero), ops.select(b, p, zero, ct)]


def _lower_select(cg: Any, op: Any, a: Any) -> Any:
    # an infinite branch is the identity of a max or min reduction reading the select
    # (np.where(mask, x, -np.inf).max(axis=1), nanmax): opaque, so that LLVM keeps the
    # reduction vectorizable (Codegen.opaque)
    a = [a[0], *(cg.opaque_infinity(v) for v in a[1:])]
    v = cg.b.select(*a)
    if op.params.get("unpredictable"):      # keeps X86's cmov conversion from making a branch
        v.set_metadata("unpredictable", cg.b.module.add_metadata([]))
    return v


select = define(
    ops.select_p, shape_rule=_select_rule, numpy_ref=lambda p, a, b, **_: np.where(p, a, b),
    lower=_lower_select, vmap_rule=elementwise_rule, jvp_rule=_jvp_select,
    vjp_rule=_vjp_select, doc="where(pred, a, b)")

# ---- casts ---------------------------------------------------------------------


def _convert_rule(in_types: tuple[TensorType, ...], params: dict[str, Any]) -> tuple[TensorType, ...]:
    return (in_types[0].with_dtype(params["dtype"]),)


def _ref_convert(x: np.ndarray, dtype: np.dtype, **annotations: Any) -> np.ndarray:
    # annotations: params that only mark the op (data_dependent=".item()" from the frontend)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)   # complex -> real: .real
        return np.asarray(x).astype(dtype)


def _lower_convert(cg: Any, op: Any, a: list[Any]) -> Any:
    return cg.cast(a[0], op.operands[0].dtype, op.params["dtype"])


def _vmap_convert(b: Any, op: Any, args: list[Any], bdims: list[Any], size: Any) -> tuple:
    marker = op.params.get("data_dependent")
    if marker:
        raise DataDependentOperationError(
            f"{marker} of a batched value: under vmap each batch element has its own value",
            op.loc, "keep the value as an array (e.g. x[0] or x.reshape(())) and use np.where "
                    "instead of Python control flow on it")
    return elementwise_rule(b, op, args, bdims, size)


def _reject_cut(op: Any) -> None:
    raise DataDependentOperationError(
        f"{op.params['data_dependent']} of a value that depends on a differentiated input: "
        f"the derivative would silently stop here", op.loc,
        "keep it an array (x.reshape(()) or x[0]); use np.where for choices")


def _jvp_convert(b: Any, op: Any, primals: list[Any], tangents: list[Any]) -> list[Any]:
    (t,) = tangents
    if t is not None and op.params.get("data_dependent"):
        _reject_cut(op)
    if t is None or not is_inexact(op.params["dtype"]):
        return [None]
    return [ops.convert(b, t, op.params["dtype"])]


def _vjp_convert(b: Any, op: Any, primals: list[Any], outs: list[Any], cts: list[Any]) -> list[Any]:
    (ct,) = cts
    if ct is None or not is_inexact(primals[0].dtype) or not is_inexact(op.params["dtype"]):
        return [None]
    return [ops.convert(b, ct, primals[0].dtype)]


convert = define(ops.convert_p, shape_rule=_convert_rule, numpy_ref=_ref_convert, lower=_lower_convert,
                 vmap_rule=_vmap_convert, jvp_rule=_jvp_convert, vjp_rule=_vjp_convert, cheap=True,
                 doc="x.astype(dtype); float to int truncates toward zero")
