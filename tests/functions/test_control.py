"""Control flow, helper functions and closures in plain NumPy code: compiled vs NumPy.

Data-dependent ``while`` and ``if`` (the ``while`` and ``cond`` primitives),
static loops and branches (evaluated at compile time), inlined helpers and
closures over constants.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from compiler import jit
from tests.functions.helpers import both_floats, check, randn, rng, uniform


def newton_sqrt(a):
    x = a
    while abs(x * x - a) > 1e-12 * a:
        x = 0.5 * (x + a / x)
    return x


@pytest.mark.parametrize("a", [2.0, 1e-6, 1e6, 1.0])
def test_newton_sqrt_data_dependent_while(a):
    got = check(newton_sqrt, np.float64(a))
    assert abs(got - math.sqrt(a)) <= 1e-9 * math.sqrt(a)


def test_newton_sqrt_python_float_argument():
    check(newton_sqrt, 3.0)


def kepler(mean_anomaly, e):
    ecc = mean_anomaly
    delta = ecc - e * np.sin(ecc) - mean_anomaly
    while np.abs(delta) > 1e-12:
        ecc = ecc - delta / (1 - e * np.cos(ecc))
        delta = ecc - e * np.sin(ecc) - mean_anomaly
    return ecc


@pytest.mark.parametrize("m, e", [(0.5, 0.1), (2.0, 0.7), (3.0, 0.95)])
def test_kepler_equation_newton_while(m, e):
    got = check(kepler, np.float64(m), np.float64(e))
    assert abs(got - e * math.sin(got) - m) < 1e-10


def bisect_cubic(lo, hi):
    f_lo = lo ** 3 - 2 * lo - 5
    while hi - lo > 1e-10:
        mid = 0.5 * (lo + hi)
        f_mid = mid ** 3 - 2 * mid - 5
        if f_mid * f_lo > 0:
            lo, f_lo = mid, f_mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def test_bisection_data_dependent_while_with_if():
    got = check(bisect_cubic, np.float64(2.0), np.float64(3.0))
    assert abs(got - 2.0945514815423265) < 1e-9


def iterations_to_converge(x):
    n = 0
    while x > 1.0:
        x = x / 2
        n += 1
    return x, n


def test_while_with_integer_counter():
    x, n = check(iterations_to_converge, np.float64(1000.0))
    assert n == 10


def collatz_steps(n):
    steps = np.int64(0)
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


@pytest.mark.parametrize("n", [1, 6, 27])
def test_collatz_integer_while_with_branches(n):
    check(collatz_steps, np.int64(n))


def safe_normalize(v):
    norm = np.sqrt(np.sum(v * v))
    if norm < 1e-12:
        return np.zeros_like(v)
    return v / norm


@both_floats
def test_data_dependent_if_with_early_return(dtype):
    check(safe_normalize, randn(rng(80), 5, dtype=dtype))
    check(safe_normalize, np.zeros(5, dtype))


def branch_on_sum(x):
    if x.sum() > 0:
        y = np.exp(-x)
    else:
        y = np.exp(x) - 1
    return y * 2


@both_floats
def test_data_dependent_if_else_merging_values(dtype):
    check(branch_on_sum, uniform(rng(81), 0, 1, 7, dtype=dtype))
    check(branch_on_sum, uniform(rng(82), -1, 0, 7, dtype=dtype))


def conditional_expression(x, t):
    return x * 2 if x.max() > t else x - 1


@both_floats
def test_conditional_expression_on_array_value(dtype):
    x = randn(rng(83), 6, dtype=dtype)
    check(conditional_expression, x, 0.0)
    check(conditional_expression, x, 100.0)


def static_branch_on_ndim(x):
    if x.ndim == 1:
        return x * 2
    elif x.shape[0] > 2:
        return x.sum(axis=0)
    return x.mean(axis=1)


def test_static_if_on_shape_and_ndim():
    r = rng(84)
    check(static_branch_on_ndim, randn(r, 4))
    check(static_branch_on_ndim, randn(r, 3, 4))
    check(static_branch_on_ndim, randn(r, 2, 4))


def static_flag(x, use_relu):
    if use_relu:
        return np.maximum(x, 0)
    return np.tanh(x)


def test_static_python_bool_argument_specializes():
    x = randn(rng(85), 9)
    check(static_flag, x, True)
    check(static_flag, x, False)


def float_of_array(x):
    s = float(x.sum())
    return x / s, s


def test_float_of_an_array_value():
    check(float_of_array, uniform(rng(86), 1, 2, 5))


def item_in_arithmetic(x):
    m = x.max().item()
    return np.exp(x - m)


def test_item_of_an_array_value():
    check(item_in_arithmetic, randn(rng(87), 5, 2))


def _sq(x):
    return x * x


def _norm(x, axis):
    return np.sqrt(_sq(x).sum(axis=axis))


def calls_helpers(x):
    return _norm(x, 1) / _norm(x, None)


@both_floats
def test_helper_functions_are_inlined(dtype):
    check(calls_helpers, randn(rng(88), 4, 3, dtype=dtype))


WEIGHTS = np.array([0.25, 0.5, 0.25])
SCALE = 3.0


def closure_over_module_constants(x):
    smooth = WEIGHTS[0] * x[:-2] + WEIGHTS[1] * x[1:-1] + WEIGHTS[2] * x[2:]
    return SCALE * smooth


@both_floats
def test_closure_over_module_constant_array_and_float(dtype):
    check(closure_over_module_constants, randn(rng(89), 20, dtype=dtype))


def make_affine(w, b):
    def affine(x):
        return x @ w + b
    return affine


def test_closure_over_captured_arrays():
    r = rng(90)
    f = make_affine(randn(r, 4, 2), randn(r, 2))
    check(f, randn(r, 6, 4))


def make_poly(coeffs):
    def poly(x):
        acc = 0.0
        for c in coeffs:
            acc = acc * x + c
        return acc
    return poly


@both_floats
def test_closure_over_python_list_of_floats(dtype):
    check(make_poly([1.0, 0.0, -2.0, 0.5]), uniform(rng(91), -2, 2, 11, dtype=dtype))


def nested_static_loops(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        for j in range(i + 1):
            out[i] = out[i] + x[j] * (j + 1)
    return out


def test_nested_static_loops_with_index_updates():
    check(nested_static_loops, randn(rng(92), 6))


def loop_with_static_if(x):
    acc = np.zeros_like(x)
    for k in range(6):
        if k % 2 == 0:
            acc = acc + x ** k
        else:
            acc = acc - x ** k / k
    return acc


@both_floats
def test_static_loop_with_static_if(dtype):
    check(loop_with_static_if, uniform(rng(93), -1, 1, 8, dtype=dtype))


def while_on_array_state(x):
    it = 0
    while np.max(np.abs(x)) > 1.0 and it < 50:
        x = x * 0.5
        it = it + 1
    return x, it


def test_while_with_and_condition_on_array_state():
    check(while_on_array_state, randn(rng(94), 5) * 100)


def clamp_loop(v, lo, hi):
    for i in range(v.shape[0]):
        if v[i] < lo:
            v = np.where(np.arange(v.shape[0]) == i, lo, v)
    return np.minimum(v, hi)


def test_data_dependent_if_inside_static_loop():
    check(clamp_loop, randn(rng(95), 8), -0.5, 0.5)


def test_kernel_reuse_across_shapes_and_dtypes():
    """One Kernel, several signatures: each specialization matches NumPy."""
    k = jit(calls_helpers)
    r = rng(96)
    for shape, dtype in [((4, 3), np.float64), ((2, 5), np.float32), ((4, 3), np.float64), ((1, 1), np.float64)]:
        x = randn(r, *shape, dtype=dtype)
        got = k(x)
        want = calls_helpers(x)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12)
