"""Derivatives at the points where a rule or a decomposition once went wrong although the
function is smooth (or constant) there, against finite differences of the uncompiled NumPy
function (tests/fd.py), in forward and reverse mode and to second order:

* ``logaddexp``/``logaddexp2`` at ties (softplus at 0): the derivative is 1/2 to each side,
  the Hessian that of the function, not what ``maximum`` + ``abs`` conventions give;
* ``x ** 0.0`` at x = 0 and ``0.0 ** y`` (y > 0) are constant: every derivative is 0, not
  the nan of a discarded branch's 0 * inf;
* ``np.std`` of one element is constant: its derivative is 0, not sqrt's inf times 0;
* ``argnums`` in any order gives the derivatives in that order, for every transform.

The conventions at points that are not differentiable are in test_conventions.py.
"""
from __future__ import annotations

import numpy as np
import pytest

from compiler import grad, grad_and_value, hessian, jacfwd, jacrev, jit, jvp
from tests import fd


def fd_grad(f, *args):
    """The gradient of a scalar function by finite differences, one entry per argument."""
    return tuple(fd.jacobian(f, args, k) for k in range(len(args)))


def fd_hessian(f, *args):
    """The Hessian of a scalar function of scalars: H[i][j] = d2 f / dx_i dx_j."""
    n = len(args)
    return tuple(tuple(fd.jacobian(lambda *a: fd_grad(f, *a)[i], args, j, h=1e-3) for j in range(n))
                 for i in range(n))


@pytest.mark.parametrize("fn", [np.logaddexp, np.logaddexp2], ids=["logaddexp", "logaddexp2"])
@pytest.mark.parametrize("point", [(0.4, 0.4), (0.0, 0.0), (-3.0, -3.0), (1.0, 2.5), (2.5, -1.0)])
def test_logaddexp_derivatives_at_and_off_ties(fn, point):
    f = lambda x, y: fn(x, y)                         # noqa: E731
    want_g, want_h = fd_grad(f, *point), fd_hessian(f, *point)
    np.testing.assert_allclose(grad(f, argnums=(0, 1))(*point), want_g, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(jacfwd(f, argnums=(0, 1))(*point), want_g, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(hessian(f, argnums=(0, 1))(*point), want_h, rtol=1e-6, atol=1e-7)


def test_softplus_written_with_logaddexp_at_zero():
    softplus = lambda x: np.logaddexp(0.0, x)         # noqa: E731
    for x in (0.0, np.float32(0.0)):
        assert grad(softplus)(x) == 0.5
    np.testing.assert_allclose(jacfwd(grad(softplus))(0.0), fd_hessian(softplus, 0.0)[0][0], rtol=1e-6)
    xs = np.array([-2.0, 0.0, 0.0, 3.0])
    np.testing.assert_allclose(grad(lambda v: np.sum(softplus(v)))(xs), 1 / (1 + np.exp(-xs)), rtol=1e-15)


@pytest.mark.parametrize("f, x", [
    (lambda x: np.power(x, 0.0), 0.0),                # constant 1 (0 ** 0 == 1 in NumPy)
    (lambda x: x ** np.float64(0.0), 0.0),
    (lambda x: np.power(x, 0.0), 2.0),
    (lambda y: np.power(0.0, y), 0.5),                # constant 0 for y > 0
    (lambda y: np.power(0.0, y), 3.0),
    (lambda x: np.power(x, 1.0), 0.0),
    (lambda x: np.power(x, 3.0), 0.0),
], ids=["x**0@0", "x**f64(0)@0", "x**0@2", "0**y@0.5", "0**y@3", "x**1@0", "x**3@0"])
def test_power_higher_derivatives_where_a_branch_is_discarded(f, x):
    second = fd_hessian(f, x)[0][0]
    third = fd.jacobian(lambda v: fd_hessian(f, v)[0][0], (x,), 0, h=1e-2) if x != 0.0 else None
    for d2 in (grad(grad(f)), jacfwd(grad(f)), jacfwd(jacfwd(f)), jacrev(jacrev(f))):
        got = d2(x)
        assert np.isfinite(got)
        np.testing.assert_allclose(got, second, atol=1e-6)
    if third is not None:
        np.testing.assert_allclose(grad(grad(grad(f)))(x), third, rtol=1e-3, atol=1e-4)
    else:
        assert np.isfinite(grad(grad(grad(f)))(x))


def test_power_zero_exponent_is_constant_in_x_at_every_order():
    f = lambda x: np.power(x, 0.0)                    # noqa: E731
    assert grad(grad(grad(f)))(0.0) == 0.0            # a constant: every derivative is 0
    g = grad(lambda x, y: np.power(x, y), argnums=(0, 1))
    hx, hy = jacfwd(lambda x, y: g(x, y)[0], argnums=(0, 1))(0.0, 0.0)
    assert hx == 0.0 and np.isfinite(hy)


@pytest.mark.parametrize("x, kw", [
    (3.5, {}), (np.array([3.5]), {}), (np.array([[1.0], [4.0]]), {"axis": 1}),
    (np.float32(2.0), {}), (np.array([[1.0, 2.0], [3.0, 5.0]]), {"axis": 0, "keepdims": True}),
])
def test_std_of_one_element_is_constant(x, kw):
    f = lambda v: np.sum(np.std(v, **kw))             # noqa: E731
    want = fd.jacobian(f, (np.asarray(x, np.float64),), 0)
    got = grad(f)(x)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(jacfwd(f)(x), want, rtol=1e-7, atol=1e-9)


def test_std_and_norm_at_zero_take_the_smallest_subgradient():
    """Not differentiable there (a kink like abs at 0): the documented convention is 0."""
    np.testing.assert_array_equal(grad(np.std)(np.array([2.0, 2.0, 2.0])), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(jacfwd(np.std)(np.array([2.0, 2.0])), [0.0, 0.0])
    np.testing.assert_array_equal(grad(np.linalg.norm)(np.zeros(3)), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(hessian(np.std)(np.array([2.0, 2.0])), np.zeros((2, 2)))
    x = np.array([[1.0, 2.0], [3.0, 3.0]])
    np.testing.assert_allclose(jacrev(lambda v: np.std(v, axis=1))(x)[0],
                               fd.jacobian(lambda v: np.std(v, axis=1), (x,))[0], rtol=1e-8)
    np.testing.assert_array_equal(jacrev(lambda v: np.std(v, axis=1))(x)[1], np.zeros((2, 2)))
    # the values are still NumPy's
    v = np.array([[1.0, 2.0], [3.0, 3.0], [0.0, np.nan]])
    np.testing.assert_array_equal(jit(lambda v: np.std(v, axis=1))(v), np.std(v, axis=1))
    np.testing.assert_array_equal(jit(lambda v: np.linalg.norm(v))(np.zeros(3)), 0.0)


# ---- argnums order ----------------------------------------------------------------------------

def _three(a, b, c):
    return np.sum(np.sin(a) * 2.0) + np.sum(b * b) * np.sum(c) + np.sum(c ** 3)


ARGS = (np.array([0.3, -1.2]), np.array([0.5, 1.5, 2.0]), np.array([0.7, -0.4, 1.1, 2.0]))


@pytest.mark.parametrize("argnums", [(2, 0), (1, 2, 0), (-1, 1), (0, 2), (2, 2)])
def test_argnums_order_is_the_order_of_the_results(argnums):
    want = [fd.jacobian(_three, ARGS, k % 3) for k in argnums]
    for transform in (grad, jacrev, jacfwd):
        got = transform(_three, argnums=argnums)(*ARGS)
        assert isinstance(got, tuple) and len(got) == len(argnums)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-8, atol=1e-10)
    got, value = grad_and_value(_three, argnums=argnums)(*ARGS)
    np.testing.assert_allclose(value, _three(*ARGS), rtol=1e-15)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-8, atol=1e-10)


def test_argnums_order_with_aux_inside_jit_and_for_hessian():
    def f(a, b, c):
        return _three(a, b, c), np.sum(a)
    want = [fd.jacobian(_three, ARGS, k) for k in (2, 0)]
    (gc, ga), aux = grad(f, argnums=(2, 0), has_aux=True)(*ARGS)
    (gc2, ga2), (value, aux2) = grad_and_value(f, argnums=(2, 0), has_aux=True)(*ARGS)
    staged = jit(lambda a, b, c: grad(_three, argnums=(2, 0))(a, b, c))(*ARGS)
    for got in ((gc, ga), (gc2, ga2), staged):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-8, atol=1e-10)
    assert aux == aux2 == np.sum(ARGS[0])

    def s(x, y):
        return x * x * y + np.sin(y)
    (hyy, hyx), (hxy, hxx) = hessian(s, argnums=(1, 0))(0.7, 1.3)
    (wxx, wxy), (wyx, wyy) = fd_hessian(s, 0.7, 1.3)
    np.testing.assert_allclose([hyy, hyx, hxy, hxx], [wyy, wyx, wxy, wxx], rtol=1e-6)


def expm1_sum(x):
    return np.sum(np.expm1(x))


def test_expm1_derivative_far_below_zero():
    """d/dx expm1(x) = exp(x): written as expm1(x) + 1 it cancels to 0 for x << 0."""
    x = np.array([-1e-8, -3.0, -30.0, -40.0, -700.0])
    np.testing.assert_allclose(grad(expm1_sum)(x), np.exp(x), rtol=1e-14, atol=0)
    t = np.ones_like(x)
    np.testing.assert_allclose(jvp(expm1_sum, (x,), (t,))[1], np.sum(np.exp(x)), rtol=1e-14)
