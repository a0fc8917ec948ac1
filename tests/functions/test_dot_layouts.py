"""Products whose operands are transposed views choose their loop order by layout
(compiler/primitives/linalg.py): `X.T @ r` runs along X's rows (an axpy per row), and
`A @ B.T` below the gemm threshold packs B.T once. Every case against NumPy, in both
dtypes, with batch axes, symbolic sizes and under vmap."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import jit, vmap


def xt_r(X, r):
    return X.T @ r


def a_bt(A, B):
    return A @ B.T


def stacked_a_bt(A, B):
    return A @ np.swapaxes(B, -1, -2)


def stacked_xt_r(X, r):
    return np.einsum("bki,bk->bi", X, r)


def gram(X):
    return X.T @ X


K_XT_R, K_A_BT, K_GRAM = jit(xt_r), jit(a_bt), jit(gram)
K_STACKED_A_BT, K_STACKED_XT_R = jit(stacked_a_bt), jit(stacked_xt_r)


def _tol(dtype):
    return 1e-5 if dtype == np.float32 else 1e-12


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 1), (7, 3), (300, 17), (64, 129)])
def test_transposed_matrix_vector(dtype, shape):
    rng = np.random.default_rng(0)
    X, r = rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape[0]).astype(dtype)
    np.testing.assert_allclose(K_XT_R(X, r), X.T @ r, rtol=_tol(dtype), atol=_tol(dtype))
    np.testing.assert_allclose(K_GRAM(X), X.T @ X, rtol=_tol(dtype), atol=_tol(dtype) * shape[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (5, 9, 3), (100, 70, 40), (33, 200, 2)])
def test_product_with_a_transposed_rhs(dtype, m, n, k):
    rng = np.random.default_rng(1)
    A, B = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((n, k)).astype(dtype)
    np.testing.assert_allclose(K_A_BT(A, B), A @ B.T, rtol=_tol(dtype), atol=_tol(dtype) * k)


def test_batched_transposed_operands():
    rng = np.random.default_rng(2)
    A, B = rng.standard_normal((4, 6, 5)), rng.standard_normal((4, 7, 5))
    np.testing.assert_allclose(K_STACKED_A_BT(A, B), A @ np.swapaxes(B, -1, -2), rtol=1e-12)
    X, r = rng.standard_normal((3, 50, 8)), rng.standard_normal((3, 50))
    np.testing.assert_allclose(K_STACKED_XT_R(X, r), np.einsum("bki,bk->bi", X, r), rtol=1e-12)


def test_symbolic_sizes():
    k = jit(xt_r, signature="f64[n, m], f64[n] -> f64[m]")
    p = jit(a_bt, signature="f64[m, k], f64[n, k] -> f64[m, n]")
    rng = np.random.default_rng(3)
    for n, m in [(1, 1), (9, 4), (130, 33)]:
        X, r = rng.standard_normal((n, m)), rng.standard_normal(n)
        np.testing.assert_allclose(k(X, r), X.T @ r, rtol=1e-12, atol=1e-12)
        B = rng.standard_normal((5, m))
        np.testing.assert_allclose(p(X, B), X @ B.T, rtol=1e-12, atol=1e-12)


def test_under_vmap():
    rng = np.random.default_rng(4)
    X, r = rng.standard_normal((5, 40, 6)), rng.standard_normal((5, 40))
    got = vmap(xt_r)(X, r)
    np.testing.assert_allclose(got, np.stack([x.T @ v for x, v in zip(X, r)]), rtol=1e-12)
    A, B = rng.standard_normal((5, 8, 3)), rng.standard_normal((9, 3))
    got = vmap(a_bt, in_dims=(0, None))(A, B)
    np.testing.assert_allclose(got, np.stack([a @ B.T for a in A]), rtol=1e-12)
