"""Every primitive compiled in isolation equals the reference interpreter."""
from __future__ import annotations

import numpy as np
import pytest

import compiler.primitives as P
from tests.backend.prim_harness import run_both

rng = np.random.default_rng(0)
F = [np.float32, np.float64]


def arr(shape, dtype=np.float64, lo=-3, hi=3):
    if np.dtype(dtype).kind == "f":
        return rng.uniform(lo, hi, shape).astype(dtype)
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) < 0.5
    return rng.integers(lo, hi, shape).astype(dtype)


UNARY_FLOAT = ["neg", "abs", "sign", "exp", "exp2", "expm1", "sin", "cos", "tan", "tanh", "sinh", "cosh",
               "arctan", "floor", "ceil", "round", "isnan", "isinf", "isfinite", "cbrt"]
POSITIVE = ["log", "log2", "log10", "log1p", "sqrt"]
UNIT = ["arcsin", "arccos"]
BINARY = ["add", "sub", "mul", "div", "floordiv", "mod", "pow", "max", "min", "arctan2", "hypot",
          "eq", "ne", "lt", "le", "gt", "ge"]
INT_BINARY = ["add", "sub", "mul", "floordiv", "mod", "pow", "max", "min", "eq", "lt", "and", "or", "xor"]


def check(prim, args, params=None, rtol=None):
    got, expected = run_both(prim, args, params or {})
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        if g.dtype.kind == "f":
            tol = rtol or (2e-6 if g.dtype == np.float32 else 1e-13)
            np.testing.assert_allclose(g, e, rtol=tol, atol=tol)
        else:
            np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("dtype", F)
@pytest.mark.parametrize("name", UNARY_FLOAT + POSITIVE + UNIT)
def test_unary(name, dtype):
    lo, hi = (0.01, 5) if name in POSITIVE else (-0.99, 0.99) if name in UNIT else (-3, 3)
    x = arr((7, 5), dtype, lo, hi)
    x.flat[0] = 0.0
    check(P.REGISTRY[name], [x])


@pytest.mark.parametrize("dtype", F)
@pytest.mark.parametrize("name", BINARY)
def test_binary(name, dtype):
    x, y = arr((4, 9), dtype, 0.1, 3), arr((4, 9), dtype, -2, 3)
    if name == "pow":
        y = np.round(y)
    check(P.REGISTRY[name], [x, y])


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("name", INT_BINARY)
def test_int_binary(name, dtype):
    x, y = arr((33,), dtype, -9, 9), arr((33,), dtype, -4, 4)
    if name == "pow":
        y = np.abs(y)
    check(P.REGISTRY[name], [x, y])


def test_int_division_by_zero_and_min():
    x = np.array([7, -7, 0, np.iinfo(np.int64).min, 5], np.int64)
    y = np.array([0, 2, 0, -1, -2], np.int64)
    check(P.floordiv, [x, y])
    check(P.mod, [x, y])


def test_float_divmod_edges():
    x = np.array([5.0, -5.0, 5.0, -0.0, 1.0, np.inf, 3.0, np.nan])
    y = np.array([-3.0, 3.0, 0.0, 2.0, np.inf, 2.0, -np.inf, 1.0])
    check(P.floordiv, [x, y])
    check(P.mod, [x, y])


@pytest.mark.parametrize("src", [np.float32, np.float64, np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("dst", [np.float32, np.float64, np.int32, np.int64, np.bool_])
def test_convert(src, dst):
    x = arr((10,), src, -50, 50)
    check(P.convert, [x], {"dtype": np.dtype(dst)})


def test_select():
    p = arr((6, 3), np.bool_)
    check(P.select, [p, arr((6, 3)), arr((6, 3))])


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min"])
@pytest.mark.parametrize("axes", [(0,), (1,), (0, 1), (0, 2), ()])
def test_reductions(name, axes):
    x = arr((3, 4, 5), np.float64, 0.5, 1.5)
    check(P.REGISTRY[name], [x], {"axes": axes})


@pytest.mark.parametrize("name", ["reduce_and", "reduce_or"])
def test_bool_reductions(name):
    check(P.REGISTRY[name], [arr((4, 5), np.bool_)], {"axes": (1,)})


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis", [0, 1])
def test_arg_reductions(name, axis):
    x = arr((6, 7))
    x[2, 3] = np.nan
    check(P.REGISTRY[name], [x], {"axis": axis})
    check(P.REGISTRY[name], [arr((6, 7), np.int32, -3, 3)], {"axis": axis})


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("axis", [0, 1])
def test_scans(name, axis):
    check(P.REGISTRY[name], [arr((5, 6), np.float64, 0.5, 1.5)], {"axis": axis})


@pytest.mark.parametrize("dn,shapes", [
    ((((1,), (0,)), ((), ())), ((4, 5), (5, 3))),
    ((((1,), (0,)), ((), ())), ((4, 5), (5,))),
    ((((0,), (0,)), ((), ())), ((5,), (5,))),
    ((((2,), (1,)), ((0,), (0,))), ((2, 4, 5), (2, 5, 3))),
    ((((), ()), ((), ())), ((3,), (4,))),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_dot_general(dn, shapes, dtype):
    check(P.dot_general, [arr(shapes[0], dtype), arr(shapes[1], dtype)], {"dimension_numbers": dn}, rtol=1e-5)


def test_shape_ops():
    x = arr((3, 4))
    check(P.broadcast_in_dim, [arr((3, 1))], {"shape": (2, 3, 4), "broadcast_dimensions": (1, 2)})
    check(P.reshape, [x], {"new_sizes": (2, 6)})
    check(P.transpose, [arr((2, 3, 4))], {"permutation": (2, 0, 1)})
    check(P.slice_, [x], {"start_indices": (1, 0), "limit_indices": (3, 4), "strides": (1, 2)})
    check(P.rev, [x], {"dimensions": (1,)})
    check(P.diagonal, [arr((4, 5))], {"axis1": 0, "axis2": 1})
    check(P.pad, [x, np.array(7.0)], {"low": (1, 0), "high": (0, 2)})
    check(P.concatenate, [x, arr((2, 4)), arr((1, 4))], {"dimension": 0})
    check(P.iota, [], {"dtype": np.dtype(np.int32), "shape": (3, 4), "dimension": 1})
    check(P.constant, [], {"value": np.arange(6.0).reshape(2, 3)})


def test_indexing_ops():
    x = arr((5, 4))
    idx = np.array([0, -1, 2, 9, -9], np.int64)
    check(P.take, [x, idx], {"axis": 0})
    check(P.take, [x, np.array([[1, 2], [3, 0]], np.int32)], {"axis": 1})
    check(P.dynamic_slice, [x, np.array(3, np.int64), np.array(1, np.int64)], {"sizes": (2, 2)})
    check(P.dynamic_update_slice, [x, arr((2, 2)), np.array(4, np.int64), np.array(-1, np.int64)])
    check(P.update_slice, [x, arr((2, 2))], {"start_indices": (1, 0), "limit_indices": (5, 4), "strides": (2, 3)})
    for mode in ("set", "add"):
        check(P.scatter, [x, np.array([1, 3, 1], np.int64), arr((3, 4))], {"axis": 0, "mode": mode})
