"""Shared helpers of the whole-function tests: compile, run both ways, compare.

Every test here is a plain NumPy function. ``check(fn, *args)`` runs it
uncompiled (NumPy is the oracle) and compiled with ``jit``, and requires the
same result structure, dtypes, shapes and values (within a tolerance that
depends on the dtype: these functions mix transcendentals and reductions, so
their results differ from NumPy's in the last bits).
"""
from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from compiler import jit
from tests.ops.compare import Tol, assert_same, flatten, assert_array_same

#: default tolerance of a whole function (float32, float64)
FUNC_TOL = Tol((2e-4, 2e-5), (1e-10, 1e-12), ulps=8)

both_floats = pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def randn(r: np.random.Generator, *shape: int, dtype: Any = np.float64, scale: float = 1.0) -> np.ndarray:
    return np.asarray(r.standard_normal(shape) * scale, dtype=dtype)


def uniform(r: np.random.Generator, low: float, high: float, *shape: int, dtype: Any = np.float64) -> np.ndarray:
    return np.asarray(r.uniform(low, high, shape), dtype=dtype)


def check(fn: Any, *args: Any, tol: Tol = FUNC_TOL, rtol: float | None = None, atol: float | None = None,
          static_argnums: tuple[int, ...] = (), **kwargs: Any) -> Any:
    """Compile `fn`, run it on `args`, and compare with `fn` run by NumPy."""
    if rtol is not None or atol is not None:
        r, a = rtol or 0.0, atol or 0.0
        tol = Tol((r, a), (r, a), ulps=tol.ulps)
    with np.errstate(all="ignore"):
        expected = fn(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    before = copy.deepcopy((args, kwargs))
    got = jit(fn, static_argnums=static_argnums)(*args, **kwargs)
    assert_same(got, expected, tol, what=f"{fn.__name__}: ")
    for (path, a), (_, b) in zip(flatten(before), flatten((args, kwargs))):
        if isinstance(a, np.ndarray):
            assert_array_same(b, a, what=f"{fn.__name__}: input {path} was modified: ")
    return got
