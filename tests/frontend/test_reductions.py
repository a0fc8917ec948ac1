"""Reductions and scans: axis None/int/tuple/negative, keepdims, NumPy's accumulation dtypes."""
from __future__ import annotations

import numpy as np
import pytest

from tests.frontend.helpers import check, rand

AXES = [None, 0, 1, -1, (0, 1), (0, 2), -2]
DTYPES = [np.float64, np.float32, np.int32, np.int64, np.bool_]


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "amax", "amin", "mean", "all",
                                  "any", "var", "std"])
@pytest.mark.parametrize("axis", AXES)
def test_reduction_functions(name, axis):
    x = rand(2, 3, 4)
    fn = getattr(np, name)
    check(lambda a: fn(a, axis=axis), x)
    check(lambda a: fn(a, axis=axis, keepdims=True), x)


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "all", "any", "var", "std"])
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 1)])
def test_reduction_methods(name, axis):
    x = rand(3, 2, 2)
    check(lambda a: getattr(a, name)(axis=axis), x)
    check(lambda a: getattr(a, name)(axis, keepdims=True), x)


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "max", "min", "var", "std", "cumsum",
                                  "cumprod", "all", "any"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_reduction_dtypes(name, dtype):
    """sum/prod of bool and int32 -> int64; mean/var/std of ints -> float64, as NumPy."""
    if name in ("var", "std", "mean", "cumprod", "prod") and dtype == np.bool_:
        x = rand(3, 4, dtype=dtype)
    else:
        x = rand(3, 4, dtype=dtype)
    check(lambda a: getattr(np, name)(a), x, rtol=1e-10)
    check(lambda a: getattr(np, name)(a, axis=0), x, rtol=1e-10)


@pytest.mark.parametrize("ddof", [0, 1, 2])
def test_var_std_ddof(ddof):
    x = rand(5, 3)
    check(lambda a: np.var(a, ddof=ddof), x)
    check(lambda a: a.std(axis=0, ddof=ddof), x)
    check(lambda a: np.std(a, axis=1, ddof=ddof, keepdims=True), x)


def test_reduction_dtype_argument():
    x = rand(3, 4, dtype=np.int32)
    check(lambda a: np.sum(a, dtype=np.int32), x)
    check(lambda a: np.sum(a, dtype=np.float32), x)
    check(lambda a: a.mean(dtype=np.float32), x)
    check(lambda a: np.prod(a, axis=1, dtype=np.float64), x)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_arg_reductions(name, axis):
    x = rand(4, 5)
    check(lambda a: getattr(np, name)(a, axis=axis), x)
    check(lambda a: getattr(a, name)(axis=axis), x)
    check(lambda a: getattr(np, name)(a, axis=axis, keepdims=True), x)
    check(lambda a: getattr(np, name)(a, axis=axis), rand(4, 5, dtype=np.int32))


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_scans(name, axis):
    x = rand(3, 4, low=0.5, high=1.5)
    check(lambda a: getattr(np, name)(a, axis=axis), x)
    check(lambda a: getattr(a, name)(axis=axis), x)


def test_scan_dtypes():
    check(lambda a: np.cumsum(a), rand(5, dtype=np.bool_))
    check(lambda a: np.cumsum(a, dtype=np.float32), rand(5, dtype=np.int32))
    check(lambda a: np.cumprod(a, axis=0), rand(3, 2, dtype=np.int32))


def test_reduction_of_scalar_and_empty_axis():
    check(lambda a: np.sum(a), np.float64(3.0))
    check(lambda a: a.sum(axis=()), rand(3, 2))
    check(lambda a: np.sum(a, axis=0), rand(0, 3))
    check(lambda a: np.mean(a * 2), rand(1))


def test_misc_reductions():
    x = rand(4, 3)
    check(lambda a: np.ptp(a, axis=0), x)
    check(lambda a: np.count_nonzero(a > 0), x)
    check(lambda a: np.count_nonzero(a > 0, axis=1), x)
    check(lambda a: np.average(a, axis=0), x)
    check(lambda a: np.linalg.norm(a), x)
    check(lambda a: np.linalg.norm(a, axis=1), x)
    check(lambda a: np.linalg.norm(a[0], ord=1), x)
    check(lambda a: np.linalg.norm(a[0], ord=np.inf), x)
    check(lambda a: np.linalg.norm(a, axis=0, keepdims=True), x)
