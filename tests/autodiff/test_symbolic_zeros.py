"""Integer and bool values have symbolic zero tangents; they cannot be differentiated."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import grad, jacfwd, jacrev, jvp, vjp
from tests import fd


def powered(x, n):
    return np.sum(x ** n) * n


def masked(x, mask):
    return np.sum(np.where(mask, x ** 2, -x))


def gathered(x, idx):
    return np.sum(x[idx] ** 3)


def test_float_and_int_arguments_differentiate_the_float_only():
    x, n = np.array([0.5, 1.5, 2.0]), np.array(3, np.int64)
    g = grad(powered)(x, n)
    np.testing.assert_allclose(g, 9 * x ** 2, rtol=1e-14)
    out, t = jvp(powered, (x, n), (np.ones(3), np.zeros((), np.int64)))
    np.testing.assert_allclose(t, np.sum(9 * x ** 2), rtol=1e-14)


def test_int_tangent_is_ignored_even_if_nonzero():
    """A tangent for an int primal has no effect: its tangent is a symbolic zero."""
    x, n = np.array([0.5, 1.5]), np.array(2, np.int64)
    _, t = jvp(powered, (x, n), (np.ones(2), np.array(5, np.int64)))
    np.testing.assert_allclose(t, np.sum(2 * 2 * x), rtol=1e-14)


@pytest.mark.parametrize("transform", ["grad", "jacrev", "jacfwd"])
def test_differentiating_an_int_argument_raises_type_error(transform):
    t = {"grad": grad, "jacrev": jacrev, "jacfwd": jacfwd}[transform]
    with pytest.raises(TypeError, match="(?i)float|dtype|int"):
        t(powered, argnums=1)(np.array([0.5, 1.5]), np.array(2, np.int64))


def test_differentiating_a_bool_argument_raises_type_error():
    with pytest.raises(TypeError):
        grad(masked, argnums=1)(np.array([1.0, 2.0]), np.array([True, False]))


def test_bool_mask_argument_is_not_differentiated():
    x, mask = np.array([1.0, -2.0, 3.0]), np.array([True, False, True])
    np.testing.assert_allclose(grad(masked)(x, mask), np.where(mask, 2 * x, -1.0), rtol=1e-15)
    out, vjp_fn = vjp(masked, x, mask)
    gx, gmask = vjp_fn(np.float64(1.0))
    np.testing.assert_allclose(gx, np.where(mask, 2 * x, -1.0), rtol=1e-15)
    assert gmask is None or np.all(np.asarray(gmask) == 0)


def test_int_index_argument_vjp_cotangent_is_zero():
    x, idx = np.array([1.0, 2.0, 3.0]), np.array([2, 0, 2], np.int64)
    _, vjp_fn = vjp(gathered, x, idx)
    gx, gidx = vjp_fn(np.float64(1.0))
    np.testing.assert_allclose(gx, fd.jacobian(gathered, (x, idx)), rtol=1e-8)
    assert gidx is None or np.all(np.asarray(gidx) == 0)


def int_output(x):
    return np.floor(x).astype(np.int64), np.sum(x ** 2)


def test_int_outputs_have_zero_tangents():
    x = np.array([1.5, -0.5])
    (o_int, o_f), (t_int, t_f) = jvp(int_output, (x,), (np.ones(2),))
    np.testing.assert_array_equal(o_int, [1, -1])
    assert np.all(np.asarray(t_int) == 0)
    np.testing.assert_allclose(t_f, np.sum(2 * x), rtol=1e-15)


def int_intermediate(x):
    k = (x > 0).astype(np.int32) + 2        # an int intermediate computed from x: no derivative
    return np.sum(x * k)


def test_int_intermediates_cut_the_derivative():
    x = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(grad(int_intermediate)(x), np.where(x > 0, 3.0, 2.0), rtol=1e-15)
    np.testing.assert_allclose(jacfwd(int_intermediate)(x), np.where(x > 0, 3.0, 2.0), rtol=1e-15)


def test_grad_of_non_scalar_output_raises_type_error():
    with pytest.raises(TypeError, match="(?i)scalar"):
        grad(np.sin)(np.ones(3))


def test_grad_of_int_output_raises_type_error():
    with pytest.raises(TypeError):
        grad(lambda x: np.sum(x > 0))(np.ones(3))
