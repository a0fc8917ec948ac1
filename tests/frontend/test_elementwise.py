"""NEP 50 promotion, broadcasting in expressions, constants: the frontend's arithmetic rules.

Each operator and elementwise function, in every dtype, is an OpInfo of tests/ops/opinfo.py."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tests.frontend.helpers import check, rand


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


def test_math_constants_and_functions():
    check(lambda x: x * np.pi + np.e + math.sqrt(2.0) * math.pi, rand(3))
    check(lambda x: np.where(x > 0, x, np.inf) + np.nan * 0 + math.cos(0.5), rand(3))


def test_chained_ops_float32_stay_float32():
    check(lambda x: (x * 2.0 + 1) / 3 - np.float32(0.5), rand(5).astype(np.float32))
