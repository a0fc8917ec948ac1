"""`break`, `continue` and `return` under a data-dependent `if` compile, in loops that unroll
and in loops that stay loops (they are rewritten into flags: compiler/frontend/loops.py), and
match the same Python run by NumPy."""
from __future__ import annotations

import numpy as np
import pytest

import compiler
from compiler import grad, jit
from compiler.errors import UnsupportedError


def skip_large(x):
    s = 0.0
    for v in x:
        if v > 5:
            continue
        s = s + v
    return s


def first_above(x, thr):
    idx = -1
    for i in range(x.shape[0]):
        if x[i] > thr:
            idx = i
            break
    return idx


def nested_exits(x):
    s = 0.0
    for row in x:
        if row[0] > 0:
            if row[1] > 0:
                continue
            if row[1] < -1.5:
                break
            s = s + row[1]
        else:
            s = s - 1.0
        s = s * 1.1
    return s


def break_else(x, n):
    s = 0.0
    for i in range(n):
        s = s + x[i % 7]
        if s > 3.0:
            break
    else:
        s = -s
    return s


@pytest.mark.parametrize("n", [4, 10, 40])      # unrolled (4) and a loop op (10, 40)
def test_continue_under_data_dependent_if(n):
    x = np.linspace(0.0, 9.0, n)
    assert jit(skip_large)(x) == pytest.approx(skip_large(x), rel=1e-12)


@pytest.mark.parametrize("n", [5, 30])
@pytest.mark.parametrize("thr", [0.5, 100.0])
def test_break_under_data_dependent_if(n, thr):
    x = np.random.default_rng(n).random(n)
    assert jit(first_above)(x, thr) == first_above(x, thr)


@pytest.mark.parametrize("n", [3, 8, 25])
def test_nested_exits(n):
    x = np.random.default_rng(n).standard_normal((n, 2))
    assert jit(nested_exits)(x) == pytest.approx(nested_exits(x), rel=1e-12)


@pytest.mark.parametrize("n", [0, 2, 5, 60])
def test_break_and_else_with_a_runtime_trip_count(n):
    x = np.array([0.3, 0.9, -0.2, 0.7, 1.1, 0.4, 0.8])
    assert jit(break_else)(x, np.int64(n)) == pytest.approx(break_else(x, n), rel=1e-12)


def test_gradient_through_continue():
    x = np.random.default_rng(3).standard_normal(20) * 4
    np.testing.assert_allclose(jit(grad(skip_large))(x), (x <= 5).astype(float))


def first_negative(x, n):
    for i in range(n):
        if x[i] < 0:
            return i
    return -1


def first_negative_pair(x):
    for i in range(x.shape[0]):
        if x[i] < 0:
            return x[i] * 2.0, i          # a tuple: the loop unrolls (static trip count)
    return x[0], -1


def grow_until(x):
    acc = x * 0.0
    for i in range(30):
        acc = acc + x
        if acc.sum() > 10:
            return acc
    return -acc


@pytest.mark.parametrize("n", [0, 2, 3, 20])
def test_return_in_a_loop_with_a_runtime_trip_count(n):
    x = np.array([0.5, 0.2, -1.0, 3.0, -2.0] * 4)
    assert jit(first_negative)(x, np.int64(n)) == first_negative(x, n)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_return_in_loops_that_stay_loops_and_that_unroll(sign):
    x = sign * np.array([0.5, 0.2, -1.0, 3.0, -2.0] * 4)
    got, expected = jit(first_negative_pair)(x), first_negative_pair(x)
    assert got[0] == expected[0] and got[1] == expected[1]
    y = sign * np.array([0.3, 0.4])
    np.testing.assert_array_equal(jit(grow_until)(y), grow_until(y))


def first_negative_with_value(x, n):
    for i in range(n):
        if x[i] < 0:
            return x[i] * 2.0, i
    return x[0], -1


@pytest.mark.parametrize("n", [0, 2, 3, 20])
def test_return_of_a_tuple_in_a_loop_with_a_runtime_trip_count(n):
    x = np.array([0.5, 0.2, -1.0, 3.0, -2.0] * 4)
    got, expected = jit(first_negative_with_value)(x, np.int64(n)), first_negative_with_value(x, n)
    assert got[0] == expected[0] and got[1] == expected[1]


def test_return_of_another_structure_in_a_loop_with_a_runtime_trip_count_is_refused():
    def f(x, n):
        for i in range(n):
            if x[i] < 0:
                return {"value": x[i], "index": i}
        return {"value": x[0], "index": -1}
    with pytest.raises(compiler.errors.UnsupportedError, match="or a tuple of them") as info:
        jit(f)(np.ones(3), np.int64(2))
    assert "for i in range(n)" in str(info.value) and "break" in info.value.hint
