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

from typing import Any, Callable

import numpy as np
from llvmlite import ir as ll

from compiler.ir.types import BOOL, TensorType, is_float, is_int
from compiler.primitives.base import (ELEMENTWISE, Primitive, check, register,
                                      same_shape_rule)
from compiler.primitives.batching import elementwise_rule

Lower = Callable[..., Any]


def _same(dtypes: tuple[np.dtype, ...], params: dict[str, Any]) -> np.dtype:
    for d in dtypes[1:]:
        check(d == dtypes[0], f"elementwise operands must have one dtype, got {', '.join(map(str, dtypes))}")
    return dtypes[0]


def _float_only(dtypes: tuple[np.dtype, ...], params: dict[str, Any]) -> np.dtype:
    check(is_float(dtypes[0]), f"operand must be floating point, got {dtypes[0]}")
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


def elementwise(name: str, ref: Callable[..., Any], lower: Lower,
                dtype_rule: Callable[..., np.dtype] = _same, **rules: Any) -> Primitive:
    """Declare an elementwise primitive."""
    rules.setdefault("vmap_rule", elementwise_rule)
    return register(Primitive(name, same_shape_rule(dtype_rule), ref, ELEMENTWISE, lower,
                              doc=(ref.__doc__ or "").split("\n")[0], **rules))


def _math(name: str) -> Lower:
    """Lowering through the vector math library (falls back to the LLVM intrinsic)."""
    return lambda cg, op, a: cg.vecmath(name, a)


def _intrinsic(name: str) -> Lower:
    return lambda cg, op, a: cg.intrinsic(name, a)


def _arith(fop: str, iop: str) -> Lower:
    def lower(cg: Any, op: Any, a: list[Any]) -> Any:
        return getattr(cg.b, fop if is_float(op.operands[0].dtype) else iop)(*a)
    return lower


# ---- arithmetic ----------------------------------------------------------------

def _lower_neg(cg: Any, op: Any, a: list[Any]) -> Any:
    return cg.b.fneg(a[0]) if is_float(op.operands[0].dtype) else cg.b.neg(a[0])


def _lower_abs(cg: Any, op: Any, a: list[Any]) -> Any:
    if is_float(op.operands[0].dtype):
        return cg.intrinsic("llvm.fabs", a)
    (x,) = a
    return cg.b.select(cg.b.icmp_signed("<", x, x.type(0)), cg.b.neg(x), x)


def _lower_sign(cg: Any, op: Any, a: list[Any]) -> Any:
    (x,) = a
    b, zero = cg.b, x.type(0)
    if is_float(op.operands[0].dtype):
        pos = b.select(b.fcmp_ordered(">", x, zero), x.type(1.0), x)   # nan and ±0 pass through
        return b.select(b.fcmp_ordered("<", x, zero), x.type(-1.0), pos)
    gt = b.zext(b.icmp_signed(">", x, zero), x.type)
    lt = b.zext(b.icmp_signed("<", x, zero), x.type)
    return b.sub(gt, lt)


def _lower_maxmin(which: str) -> Lower:
    def lower(cg: Any, op: Any, a: list[Any]) -> Any:
        if is_float(op.operands[0].dtype):
            return cg.intrinsic("llvm.maximum" if which == ">" else "llvm.minimum", a)
        x, y = a
        cmp = cg.b.icmp_unsigned if op.operands[0].dtype == BOOL else cg.b.icmp_signed
        return cg.b.select(cmp(which, x, y), x, y)
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


def _lower_divmod(which: int) -> Lower:
    def lower(cg: Any, op: Any, a: list[Any]) -> Any:
        fn = _float_divmod if is_float(op.operands[0].dtype) else _int_divmod
        return fn(cg, *a)[which]
    return lower


def _lower_pow(cg: Any, op: Any, a: list[Any]) -> Any:
    if is_float(op.operands[0].dtype):
        return cg.vecmath("pow", a)
    return cg.int_pow(*a)


def _ref_int_safe(fn: Callable[..., Any]) -> Callable[..., Any]:
    def ref(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return fn(x, y)
    ref.__doc__ = fn.__doc__
    return ref


def _ref_pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x ** y (integer powers with negative exponents give 0 unless |x| == 1)."""
    if is_int(np.asarray(x).dtype):
        y = np.asarray(y)
        neg = y < 0
        safe = np.power(x, np.where(neg, 0, y))
        inv = np.where(np.abs(x) == 1, np.power(x, np.abs(y) % 2), 0)
        return np.where(neg, inv, safe)
    with np.errstate(all="ignore"):
        return np.power(x, y)


neg = elementwise("neg", np.negative, _lower_neg, _numeric)
abs_ = elementwise("abs", np.abs, _lower_abs, _numeric)
sign = elementwise("sign", np.sign, _lower_sign, _numeric)
add = elementwise("add", np.add, _arith("fadd", "add"))
sub = elementwise("sub", np.subtract, _arith("fsub", "sub"), _numeric)
mul = elementwise("mul", np.multiply, _arith("fmul", "mul"))
div = elementwise("div", _ref_int_safe(np.true_divide), _arith("fdiv", "sdiv"), _float_only)
floordiv = elementwise("floordiv", _ref_int_safe(np.floor_divide), _lower_divmod(0), _numeric)
mod = elementwise("mod", _ref_int_safe(np.remainder), _lower_divmod(1), _numeric)
pow_ = elementwise("pow", _ref_pow, _lower_pow, _numeric)
maximum = elementwise("max", np.maximum, _lower_maxmin(">"))
minimum = elementwise("min", np.minimum, _lower_maxmin("<"))
arctan2 = elementwise("arctan2", np.arctan2, _math("arctan2"), _float_only)
hypot = elementwise("hypot", np.hypot, _math("hypot"), _float_only)

# ---- transcendental and rounding (float operands; the frontend casts ints as NumPy does)

def _float_unary(name: str, ref: Callable[..., Any], lower: Lower) -> Primitive:
    def checked(x: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return ref(x)
    checked.__doc__ = ref.__doc__
    return elementwise(name, checked, lower, _float_only)


exp = _float_unary("exp", np.exp, _math("exp"))
exp2 = _float_unary("exp2", np.exp2, _math("exp2"))
expm1 = _float_unary("expm1", np.expm1, _math("expm1"))
log = _float_unary("log", np.log, _math("log"))
log2 = _float_unary("log2", np.log2, _math("log2"))
log10 = _float_unary("log10", np.log10, _math("log10"))
log1p = _float_unary("log1p", np.log1p, _math("log1p"))
sqrt = _float_unary("sqrt", np.sqrt, _intrinsic("llvm.sqrt"))
cbrt = _float_unary("cbrt", np.cbrt, _math("cbrt"))
sin = _float_unary("sin", np.sin, _math("sin"))
cos = _float_unary("cos", np.cos, _math("cos"))
tan = _float_unary("tan", np.tan, _math("tan"))
tanh = _float_unary("tanh", np.tanh, _math("tanh"))
sinh = _float_unary("sinh", np.sinh, _math("sinh"))
cosh = _float_unary("cosh", np.cosh, _math("cosh"))
arcsin = _float_unary("arcsin", np.arcsin, _math("arcsin"))
arccos = _float_unary("arccos", np.arccos, _math("arccos"))
arctan = _float_unary("arctan", np.arctan, _math("arctan"))
floor = _float_unary("floor", np.floor, _intrinsic("llvm.floor"))
ceil = _float_unary("ceil", np.ceil, _intrinsic("llvm.ceil"))
round_ = _float_unary("round", np.rint, _intrinsic("llvm.rint"))   # half to even, as np.round

# ---- predicates, comparisons and logic -------------------------------------------

def _lower_isnan(cg: Any, op: Any, a: list[Any]) -> Any:
    return cg.b.fcmp_unordered("uno", a[0], a[0])


def _lower_isinf(cg: Any, op: Any, a: list[Any]) -> Any:
    return cg.b.fcmp_ordered("==", cg.intrinsic("llvm.fabs", a), a[0].type(float("inf")))


def _lower_isfinite(cg: Any, op: Any, a: list[Any]) -> Any:
    return cg.b.fcmp_ordered("<", cg.intrinsic("llvm.fabs", a), a[0].type(float("inf")))


isnan = elementwise("isnan", np.isnan, _lower_isnan, _float_to_bool)
isinf = elementwise("isinf", np.isinf, _lower_isinf, _float_to_bool)
isfinite = elementwise("isfinite", np.isfinite, _lower_isfinite, _float_to_bool)


def _compare(pred: str) -> Lower:
    def lower(cg: Any, op: Any, a: list[Any]) -> Any:
        dtype = op.operands[0].dtype
        if is_float(dtype):
            # != is true when either side is nan; every other comparison is false then
            return (cg.b.fcmp_unordered if pred == "!=" else cg.b.fcmp_ordered)(pred, *a)
        return (cg.b.icmp_unsigned if dtype == BOOL else cg.b.icmp_signed)(pred, *a)
    return lower


eq = elementwise("eq", np.equal, _compare("=="), _to_bool)
ne = elementwise("ne", np.not_equal, _compare("!="), _to_bool)
lt = elementwise("lt", np.less, _compare("<"), _to_bool)
le = elementwise("le", np.less_equal, _compare("<="), _to_bool)
gt = elementwise("gt", np.greater, _compare(">"), _to_bool)
ge = elementwise("ge", np.greater_equal, _compare(">="), _to_bool)

and_ = elementwise("and", np.bitwise_and, lambda cg, op, a: cg.b.and_(*a), _int_or_bool)
or_ = elementwise("or", np.bitwise_or, lambda cg, op, a: cg.b.or_(*a), _int_or_bool)
xor = elementwise("xor", np.bitwise_xor, lambda cg, op, a: cg.b.xor(*a), _int_or_bool)
not_ = elementwise("not", np.invert, lambda cg, op, a: cg.b.not_(a[0]), _int_or_bool)


def _select_rule(in_types: tuple[TensorType, ...], params: dict[str, Any]) -> tuple[TensorType, ...]:
    pred, a, b = in_types
    check(pred.dtype == BOOL, f"select: predicate must be bool, got {pred.dtype}")
    check(pred.shape == a.shape == b.shape, f"select: operands must have one shape, got {pred}, {a}, {b}")
    check(a.dtype == b.dtype, f"select: branches must have one dtype, got {a.dtype} and {b.dtype}")
    return (a,)


select = register(Primitive(
    "select", _select_rule, lambda p, a, b: np.where(p, a, b), ELEMENTWISE,
    lambda cg, op, a: cg.b.select(*a), vmap_rule=elementwise_rule, doc="where(pred, a, b)"))

# ---- casts ---------------------------------------------------------------------


def _convert_rule(in_types: tuple[TensorType, ...], params: dict[str, Any]) -> tuple[TensorType, ...]:
    return (in_types[0].with_dtype(params["dtype"]),)


def _ref_convert(x: np.ndarray, dtype: np.dtype, **annotations: Any) -> np.ndarray:
    # annotations: params that only mark the op (data_dependent=".item()" from the frontend)
    with np.errstate(all="ignore"):
        return np.asarray(x).astype(dtype)


def _lower_convert(cg: Any, op: Any, a: list[Any]) -> Any:
    return cg.cast(a[0], op.operands[0].dtype, op.params["dtype"])


def _vmap_convert(b: Any, op: Any, args: list[Any], bdims: list[Any], size: Any) -> tuple:
    marker = op.params.get("data_dependent")
    if marker:
        from compiler.errors import DataDependentOperationError
        raise DataDependentOperationError(
            f"{marker} of a batched value: under vmap each batch element has its own value",
            op.loc, "keep the value as an array (e.g. x[0] or x.reshape(())) and use np.where "
                    "instead of Python control flow on it")
    return elementwise_rule(b, op, args, bdims, size)


convert = register(Primitive("convert", _convert_rule, _ref_convert, ELEMENTWISE, _lower_convert,
                             vmap_rule=_vmap_convert,
                             doc="x.astype(dtype); float to int truncates toward zero"))
