"""Operators and elementwise NumPy functions: values, broadcasting, NEP 50 promotion."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tests.frontend.helpers import check, rand

DTYPES = [np.float64, np.float32, np.int64, np.int32]

BINARY_OPS = {
    "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
    "truediv": lambda x, y: x / y, "floordiv": lambda x, y: x // y, "mod": lambda x, y: x % y,
    "max": np.maximum, "min": np.minimum, "np.add": np.add, "np.subtract": np.subtract,
    "np.multiply": np.multiply, "np.divide": np.divide, "np.true_divide": np.true_divide,
    "np.floor_divide": np.floor_divide, "np.mod": np.mod, "np.remainder": np.remainder,
    "eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
    "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y,
    "fmax": np.fmax, "fmin": np.fmin,
}


@pytest.mark.parametrize("op", sorted(BINARY_OPS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_binary_ops(op, dtype):
    fn = BINARY_OPS[op]
    x = rand(3, 4, dtype=dtype)
    y = rand(4, dtype=dtype)
    if op in ("floordiv", "mod", "np.floor_divide", "np.mod", "np.remainder", "truediv",
              "np.divide", "np.true_divide"):
        y = np.where(y == 0, 3, y).astype(dtype)
    check(fn, x, y)


@pytest.mark.parametrize("dtype", DTYPES)
def test_power(dtype):
    x = np.abs(rand(5, dtype=dtype)) + 1
    check(lambda a: a ** 2, x)
    check(lambda a: a ** 3, x)
    check(lambda a, b: np.power(a, b), x, np.array([1, 2, 0, 3, 2], dtype=dtype))
    if np.dtype(dtype).kind == "f":
        check(lambda a: a ** 0.5, x)
        check(lambda a: a ** -1, x)
        check(lambda a: a ** 1.5, x)


@pytest.mark.parametrize("op", ["and", "or", "xor"])
@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.int64])
def test_bitwise(op, dtype):
    fn = {"and": lambda x, y: x & y, "or": lambda x, y: x | y, "xor": lambda x, y: x ^ y}[op]
    check(fn, rand(6, dtype=dtype), rand(6, dtype=dtype))


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.int64])
def test_invert(dtype):
    check(lambda x: ~x, rand(6, dtype=dtype))
    check(np.invert, rand(6, dtype=dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_unary_operators(dtype):
    x = rand(2, 3, dtype=dtype)
    check(lambda a: -a, x)
    check(lambda a: +a, x)
    check(lambda a: abs(a), x)
    check(np.abs, x)
    check(np.absolute, x)
    check(np.negative, x)
    check(np.positive, x)
    check(np.sign, x)
    check(np.square, x)


FLOAT_FUNCS = ["exp", "log", "log1p", "expm1", "exp2", "log2", "log10", "sqrt", "cbrt", "sin",
               "cos", "tan", "tanh", "sinh", "cosh", "arcsin", "arccos", "arctan", "floor", "ceil",
               "rint", "trunc", "round", "around", "reciprocal", "isnan", "isinf", "isfinite",
               "deg2rad", "rad2deg", "degrees", "radians", "fabs"]


@pytest.mark.parametrize("name", FLOAT_FUNCS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_float_functions(name, dtype):
    fn = getattr(np, name)
    positive = name in ("log", "log2", "log10", "sqrt")
    unit = name in ("arcsin", "arccos")
    x = rand(3, 4, dtype=dtype, low=0.1 if positive else (-0.9 if unit else -3),
             high=0.9 if unit else 3)
    check(fn, x, rtol=1e-6 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sin", "tanh", "floor", "ceil", "rint",
                                  "trunc", "isnan", "isfinite", "arctan"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_float_functions_of_ints(name, dtype):
    """NumPy casts ints to float64 for exp/sqrt/...; floor/ceil/trunc keep the int dtype."""
    x = np.abs(rand(5, dtype=dtype)) + 1
    check(getattr(np, name), x)


def test_special_values():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0])
    check(np.isnan, x)
    check(np.isinf, x)
    check(np.isfinite, x)
    check(lambda a: np.maximum(a, 0.5), x)
    check(lambda a: np.fmax(a, 0.5), x)
    check(lambda a: np.sign(a), x)


@pytest.mark.parametrize("fn", [np.arctan2, np.hypot, np.logaddexp])
def test_binary_float(fn):
    check(fn, rand(3, 4), rand(3, 1))
    check(fn, rand(4).astype(np.float32), rand(4).astype(np.float32), rtol=1e-6)


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
def test_logical(name):
    fn = getattr(np, name)
    check(fn, rand(5, dtype=np.bool_), rand(5, dtype=np.bool_))
    check(fn, rand(5), rand(5, dtype=np.int32))
    check(np.logical_not, rand(5))


# ---- NEP 50 promotion --------------------------------------------------------------------

PROMOTION_CASES = [
    (np.float32, 2.0), (np.float32, 2), (np.int32, 2), (np.int32, 2.5), (np.int64, True),
    (np.bool_, 1), (np.bool_, 1.5), (np.float64, 3), (np.int32, np.float32(2)),
    (np.float32, np.float64(2)), (np.int32, np.int64(3)),
]


@pytest.mark.parametrize("dtype, scalar", PROMOTION_CASES, ids=lambda v: repr(v))
def test_python_scalar_promotion(dtype, scalar):
    x = rand(4, dtype=dtype)
    check(lambda a: a * scalar, x)
    check(lambda a: scalar + a, x)
    check(lambda a: a / (scalar if scalar else 1), x)


@pytest.mark.parametrize("a, b", [(np.float32, np.float64), (np.int32, np.float32),
                                  (np.int32, np.int64), (np.bool_, np.int32),
                                  (np.int64, np.float32), (np.bool_, np.float32)])
def test_array_promotion(a, b):
    check(lambda x, y: x + y, rand(3, dtype=a), rand(3, dtype=b))
    check(lambda x, y: x * y, rand(2, 3, dtype=a), rand(3, dtype=b))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_weak_scalar_argument(dtype):
    check(lambda x, s: x * s, rand(4, dtype=dtype), 2.5)
    check(lambda x, s: x + s, rand(4, dtype=dtype), 3)


def test_true_division_of_ints_is_float64():
    check(lambda x, y: x / y, np.array([1, 2, 3], np.int32), np.array([2, 2, 2], np.int32))
    check(lambda x: x / 2, np.array([1, 2, 3], np.int32))


@pytest.mark.parametrize("shapes", [((3,), ()), ((2, 3), (3,)), ((2, 1), (1, 4)),
                                    ((4, 1, 3), (5, 1)), ((), ()), ((1,), (3,)),
                                    ((2, 0), (1,))])
def test_broadcasting(shapes):
    a, b = (rand(*s) for s in shapes)
    check(lambda x, y: x * y + x, a, b)
    check(lambda x, y: np.maximum(x, y), a, b)


def test_where_and_clip():
    x, y = rand(3, 4), rand(4)
    check(lambda a, b: np.where(a > 0, a, b), x, y)
    check(lambda a: np.where(a > 0, a, 0), x)
    check(lambda a: np.where(a, 1, 2.5), rand(3, dtype=np.int32))
    check(lambda a: np.where(a > 0, 1, 0), rand(3).astype(np.float32))
    check(lambda a: np.clip(a, -0.5, 0.5), x)
    check(lambda a: a.clip(-0.5, 0.5), x)
    check(lambda a: np.clip(a, None, 0.5), x)
    check(lambda a: np.clip(a, 0, 2), rand(5, dtype=np.int32))
    check(lambda a, lo: np.clip(a, lo, 1.0), x, y)


@pytest.mark.parametrize("decimals", [0, 1, 2, -1])
def test_round_decimals(decimals):
    x = rand(6) * 100
    check(lambda a: np.round(a, decimals), x)
    check(lambda a: a.round(decimals), x)
    check(lambda a: np.around(a, decimals), x)


def test_round_ints_keeps_dtype():
    check(np.round, np.array([1, 2, 3], np.int32))


@pytest.mark.parametrize("dtype", DTYPES)
def test_casts(dtype):
    x = rand(5) * 3
    check(lambda a: a.astype(dtype), x)
    check(lambda a: a.astype(np.float32), rand(5, dtype=dtype))
    check(lambda a: np.asarray(a, dtype=dtype), x)
    check(lambda a: np.array(a, dtype=np.float64), rand(3, dtype=dtype))
    check(lambda a: a.astype(float), rand(3, dtype=dtype))
    check(lambda a: a.astype("int32"), x)
    check(lambda a: a.astype(bool), rand(4, dtype=dtype))


@pytest.mark.parametrize("cast", [np.float32, np.float64, np.int32, np.int64, np.bool_])
def test_scalar_type_casts(cast):
    check(lambda a: cast(a), rand(4) * 3)
    check(lambda a: cast(a.sum()) * 2, rand(4) * 3)


def test_divmod():
    check(lambda a, b: divmod(a, b), rand(5), rand(5) + 3)
    check(lambda a, b: np.divmod(a, b), rand(5, dtype=np.int64), np.array([2, 3, -2, 5, 7]))


def test_math_constants_and_functions():
    check(lambda x: x * np.pi + np.e + math.sqrt(2.0) * math.pi, rand(3))
    check(lambda x: np.where(x > 0, x, np.inf) + np.nan * 0 + math.cos(0.5), rand(3))


def test_chained_ops_float32_stay_float32():
    check(lambda x: (x * 2.0 + 1) / 3 - np.float32(0.5), rand(5).astype(np.float32))
