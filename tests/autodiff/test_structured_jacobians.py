"""Jacobians through a matrix product do not multiply by the one-hot basis: a contraction
with an identity matrix (jacfwd's basis) or a diagonal one (jacrev's basis times the
elementwise derivative) is a transpose, scaled (canonicalize.py). The values are checked
against the closed forms computed by NumPy; the IR must keep the model's own product only."""
import numpy as np
import pytest

import compiler
from compiler import jit


def layer(x, A):
    return np.tanh(A @ x)


def energy(x, A):
    return np.sum(np.tanh(A @ x) ** 2)


def right(x, B):
    return np.sin(x @ B)


def with_eye(A):
    return A @ np.eye(A.shape[1]) + (np.eye(A.shape[1]) @ A.T).T


jac_fwd, jac_rev = compiler.jacfwd(layer), compiler.jacrev(layer)
hess = compiler.hessian(energy)
right_fwd, right_rev = compiler.jacfwd(right), compiler.jacrev(right)
batched = jit(compiler.vmap(compiler.jacrev(layer), in_dims=(0, None)))
eye_k = jit(with_eye)
rng = np.random.default_rng(0)


def _closed_layer(x, A):
    t = np.tanh(A @ x)
    return (1 - t * t)[:, None] * A


@pytest.mark.parametrize("n", [3, 40])
@pytest.mark.parametrize("kernel", [jac_fwd, jac_rev], ids=["jacfwd", "jacrev"])
def test_jacobian_of_a_layer_is_the_closed_form(kernel, n):
    x, A = rng.standard_normal(n), rng.standard_normal((n + 1, n)) / np.sqrt(n)
    np.testing.assert_allclose(kernel(x, A), _closed_layer(x, A), rtol=1e-12, atol=1e-14)
    ir = kernel.lower(x, A).ir_optimized
    assert ir.count("dot_general") == 1, ir          # A @ x; no product with the basis


def test_hessian_of_an_energy_is_the_closed_form():
    n = 30
    x, A = rng.standard_normal(n), rng.standard_normal((n, n)) / np.sqrt(n)
    t = np.tanh(A @ x)
    d = 2 * (1 - t * t) * (1 - 3 * t * t)            # d2/du2 of tanh(u)^2
    np.testing.assert_allclose(hess(x, A), A.T @ (d[:, None] * A), rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("kernel", [right_fwd, right_rev], ids=["jacfwd", "jacrev"])
def test_the_basis_on_the_other_side_of_the_product(kernel):
    x, B = rng.standard_normal(7), rng.standard_normal((7, 5))
    want = np.cos(x @ B)[:, None] * B.T
    np.testing.assert_allclose(kernel(x, B), want, rtol=1e-12, atol=1e-14)


def test_vmap_of_jacrev():
    xs, A = rng.standard_normal((9, 6)), rng.standard_normal((4, 6))
    np.testing.assert_allclose(batched(xs, A), np.stack([_closed_layer(x, A) for x in xs]),
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_product_with_np_eye_written_by_hand(dtype):
    A = rng.standard_normal((5, 3)).astype(dtype)
    got, want = eye_k(A), with_eye(A)
    assert got.dtype == want.dtype                    # float64: np.eye is float64, as in NumPy
    np.testing.assert_allclose(got, want, rtol=1e-15)
