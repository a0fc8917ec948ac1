"""The derivative conventions at non-differentiable points (docs/autodiff.md, the JAX
conventions), checked with the analytic values the documentation states, in both modes
(grad and jvp)."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import grad, jacfwd, jacrev


def both_modes(f, x):
    """(jacrev, jacfwd) of f at x."""
    return jacrev(f)(x), jacfwd(f)(x)


def test_abs_at_zero_is_zero():
    for j in both_modes(lambda x: np.abs(x), np.array([0.0, -2.0, 3.0])):
        np.testing.assert_array_equal(np.diag(j), [0.0, -1.0, 1.0])


def test_maximum_and_minimum_ties_split_equally():
    x = np.array([1.0, 2.0, 3.0])
    y = np.array([1.0, 5.0, 0.0])
    gx, gy = grad(lambda a, b: np.sum(np.maximum(a, b)), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, [0.5, 0.0, 1.0])
    np.testing.assert_array_equal(gy, [0.5, 1.0, 0.0])
    gx, gy = grad(lambda a, b: np.sum(np.minimum(a, b)), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, [0.5, 1.0, 0.0])
    np.testing.assert_array_equal(gy, [0.5, 0.0, 1.0])


@pytest.mark.parametrize("reduce", ["max", "min"])
def test_max_min_reduction_ties_split_among_tied_elements(reduce):
    x = np.array([3.0, 1.0, 3.0, 3.0]) if reduce == "max" else np.array([1.0, 4.0, 1.0, 2.0])
    fn = (lambda v: np.max(v)) if reduce == "max" else (lambda v: np.min(v))
    want = [1 / 3, 0.0, 1 / 3, 1 / 3] if reduce == "max" else [0.5, 0.0, 0.5, 0.0]
    np.testing.assert_allclose(grad(fn)(x), want, rtol=1e-15)
    np.testing.assert_allclose(jacfwd(fn)(x), want, rtol=1e-15)


def test_clip_at_a_bound_is_one_half():
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.0])
    for j in both_modes(lambda v: np.clip(v, -1.0, 1.0), x):
        np.testing.assert_allclose(np.diag(j), [0.5, 1.0, 1.0, 0.5, 0.0], rtol=1e-15)


def test_sqrt_at_zero_is_inf():
    g = grad(lambda v: np.sum(np.sqrt(v)))(np.array([0.0, 4.0]))
    assert np.isposinf(g[0]) and g[1] == 0.25


def test_where_sends_the_derivative_to_the_selected_branch():
    c = np.array([True, False, True])
    ga, gb = grad(lambda a, b: np.sum(np.where(c, a ** 2, b ** 3)), argnums=(0, 1))(np.ones(3) * 2, np.ones(3) * 3)
    np.testing.assert_array_equal(ga, [4.0, 0.0, 4.0])
    np.testing.assert_array_equal(gb, [0.0, 27.0, 0.0])


@pytest.mark.parametrize("name", ["floor", "ceil", "round", "sign"])
def test_piecewise_constant_functions_have_zero_derivative(name):
    f = getattr(np, name)
    x = np.array([0.5, 1.0, -2.3, 0.0])
    for j in both_modes(lambda v: f(v) * 1.0, x):
        np.testing.assert_array_equal(j, np.zeros((4, 4)))


def test_floordiv_has_zero_derivative():
    gx, gy = grad(lambda a, b: np.sum(a // b), argnums=(0, 1))(np.array([5.0, -3.5]), np.array([2.0, 1.5]))
    np.testing.assert_array_equal(gx, [0.0, 0.0])
    np.testing.assert_array_equal(gy, [0.0, 0.0])


def test_pow_conventions():
    # d/dx x**y is 0 where y == 0 (even at x == 0); d/dy is 0 where x == 0
    gx, gy = grad(lambda a, b: np.sum(a ** b), argnums=(0, 1))(np.array([0.0, 0.0, 2.0]), np.array([0.0, 2.0, 3.0]))
    np.testing.assert_array_equal(gx, [0.0, 0.0, 12.0])
    np.testing.assert_allclose(gy, [0.0, 0.0, 8 * np.log(2.0)], rtol=1e-15)


def test_hypot_at_origin_is_zero():
    gx, gy = grad(lambda a, b: np.sum(np.hypot(a, b)), argnums=(0, 1))(np.array([0.0, 3.0]), np.array([0.0, 4.0]))
    np.testing.assert_allclose(gx, [0.0, 0.6], rtol=1e-15)
    np.testing.assert_allclose(gy, [0.0, 0.8], rtol=1e-15)


def test_prod_with_zeros_is_exact():
    x = np.array([2.0, 0.0, 3.0, 4.0])
    np.testing.assert_array_equal(grad(lambda v: np.prod(v))(x), [0.0, 24.0, 0.0, 0.0])
    x2 = np.array([0.0, 0.0, 3.0])
    np.testing.assert_array_equal(grad(lambda v: np.prod(v))(x2), [0.0, 0.0, 0.0])


def test_scatter_with_duplicate_indices_only_the_last_write_has_a_derivative():
    def f(x, v):
        y = x.copy()
        y[np.array([1, 1, 3])] = v          # y[1] = v[1]: NumPy keeps the last write
        return np.sum(y * np.array([1.0, 2.0, 3.0, 4.0]))
    x, v = np.zeros(4), np.array([1.0, 2.0, 3.0])
    gx, gv = grad(f, argnums=(0, 1))(x, v)
    np.testing.assert_array_equal(gx, [1.0, 0.0, 3.0, 0.0])
    np.testing.assert_array_equal(gv, [0.0, 2.0, 4.0])
    np.testing.assert_array_equal(jacfwd(f, argnums=1)(x, v), gv)


def test_argnums_order_gives_the_order_of_the_results():
    def f(x, y):
        return np.sum(x * 2.0) + np.sum(y * y * y)
    x, y = np.ones(2), np.full(3, 2.0)
    for transform in (grad, jacrev, jacfwd):
        gy, gx = transform(f, argnums=(1, 0))(x, y)
        np.testing.assert_array_equal(gy, [12.0, 12.0, 12.0])
        np.testing.assert_array_equal(gx, [2.0, 2.0])
    g0, g1 = grad(f, argnums=(0, 0))(x, y)
    np.testing.assert_array_equal(g0, g1)
