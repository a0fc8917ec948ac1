"""Products whose lhs has a few rows read rhs once (primitives/linalg.py): ``W @ X.T`` as a
dot product per output with the rows of X outside (vmap of ``X @ w`` over a batch of weight
vectors), and ``R @ X`` as the k-i-j nest (vmap of ``X.T @ r``), which also takes over from
gemm for such products with a long contraction (gemm.few_rows). Oracles: NumPy in float64;
shapes with odd sizes, one row, a run-time number of rows of X."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import compiler
from compiler.primitives import gemm


def matvec(X, w):
    return X @ w


def tmatvec(X, r):
    return X.T @ r


def few_by_long(R, X):
    return R @ X


@functools.cache
def _vmapped(fn):
    return compiler.vmap(fn, in_dims=(None, 0))


def _check(got, want, dtype, scale):
    assert got.dtype == dtype and got.shape == want.shape
    tol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_vmap_over_weight_vectors(dtype):
    rng = np.random.default_rng(0)
    for rows, n, batch in ((700, 37, 3), (1, 5, 8), (300, 128, 1), (2000, 16, 8)):
        X = rng.standard_normal((rows, n)).astype(dtype)
        W = rng.standard_normal((batch, n)).astype(dtype)
        R = rng.standard_normal((batch, rows)).astype(dtype)
        X64 = X.astype(np.float64)
        _check(_vmapped(matvec)(X, W), W.astype(np.float64) @ X64.T, dtype, np.abs(X64).sum())
        _check(_vmapped(tmatvec)(X, R), R.astype(np.float64) @ X64, dtype, np.abs(X64).sum())


def test_few_rows_with_a_long_contraction_and_run_time_rows():
    """4 x 3000 @ 3000 x 100 runs the loop nest (static), and with a symbolic k."""
    rng = np.random.default_rng(1)
    assert gemm.few_rows(4, 100, np.dtype(np.float64))
    R, X = rng.standard_normal((4, 3000)), rng.standard_normal((3000, 100))
    _check(compiler.jit(few_by_long)(R, X), R @ X, np.float64, np.abs(X).sum())
    symbolic = compiler.jit(few_by_long, signature="f64[4, k], f64[k, 100] -> f64[4, 100]")
    for k in (1, 9, 3000):
        _check(symbolic(R[:, :k].copy(), X[:k]), R[:, :k] @ X[:k], np.float64, np.abs(X[:k]).sum())
