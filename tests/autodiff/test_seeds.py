"""The jacrev examples of seeds/001 (torch.func.jacrev's documentation), translated to NumPy.

Oracles are the analytic Jacobians the seed asserts (diag(cos x), diag(2y), ...),
checked also against finite differences of the uncompiled function where the seed
has no closed form.
"""
from __future__ import annotations

import numpy as np

from compiler import jacrev, vmap
from tests import fd

rng = np.random.default_rng(1)


def test_jacrev_of_sin_is_diag_cos():
    x = rng.standard_normal(5)
    jacobian = jacrev(np.sin)(x)
    assert jacobian.shape == (5, 5)
    np.testing.assert_allclose(jacobian, np.diag(np.cos(x)), rtol=1e-13, atol=0)


def f(x):
    return np.sin(x)


def g(x):
    result = f(x)
    return result, result


def test_jacrev_has_aux_returns_the_output_as_aux():
    x = rng.standard_normal(5)
    jacobian_f, f_x = jacrev(g, has_aux=True)(x)
    np.testing.assert_allclose(f_x, f(x), rtol=1e-14)
    np.testing.assert_allclose(jacobian_f, np.diag(np.cos(x)), rtol=1e-13, atol=0)


def test_vmap_of_jacrev_gives_batched_jacobians():
    x = rng.standard_normal((64, 5))
    jacobian = vmap(jacrev(np.sin))(x)
    assert jacobian.shape == (64, 5, 5)
    want = np.zeros((64, 5, 5))
    want[:, np.arange(5), np.arange(5)] = np.cos(x)
    np.testing.assert_allclose(jacobian, want, rtol=1e-13, atol=0)


def sin_sum(x):
    return np.sin(x).sum()


def test_jacrev_of_jacrev_is_the_hessian_diag_minus_sin():
    x = rng.standard_normal(5)
    hessian = jacrev(jacrev(sin_sum))(x)
    np.testing.assert_allclose(hessian, np.diag(-np.sin(x)), rtol=1e-13, atol=1e-15)


def x_plus_y_squared(x, y):
    return x + y ** 2


def test_jacrev_argnums_1():
    x, y = rng.standard_normal(5), rng.standard_normal(5)
    jacobian = jacrev(x_plus_y_squared, argnums=1)(x, y)
    np.testing.assert_allclose(jacobian, np.diag(2 * y), rtol=1e-14, atol=0)


def test_jacrev_argnums_tuple():
    x, y = rng.standard_normal(5), rng.standard_normal(5)
    jacobian = jacrev(x_plus_y_squared, argnums=(0, 1))(x, y)
    assert isinstance(jacobian, tuple) and len(jacobian) == 2
    np.testing.assert_allclose(jacobian[0], np.diag(np.ones_like(x)), rtol=0, atol=0)
    np.testing.assert_allclose(jacobian[1], np.diag(2 * y), rtol=1e-14, atol=0)


def test_jacrev_layout_is_out_then_in_for_matrices():
    """A Jacobian of f: [2, 3] -> [3] has shape (3, 2, 3), as in torch.func."""
    x = rng.standard_normal((2, 3))
    fn = lambda a: np.sin(a).sum(axis=0) * a[0]   # noqa: E731
    jac = jacrev(fn)(x)
    assert jac.shape == (3, 2, 3)
    np.testing.assert_allclose(jac, fd.jacobian(fn, (x,)), rtol=1e-7, atol=1e-9)
