"""``X.T @ X`` of a narrow X (a few vector registers wide) is one blocked vector pass over X
with one triangle computed (primitives/gram.py). Oracles: float32 products are exact in
float64, so math.fsum of them is the exact sum rounded once; float64 against einsum in long
double; both against NumPy (BLAS) with its tolerance; the per-element error within the
blocked-summation bound. Shapes: widths that are and are not whole vectors, a single row, a
run-time number of rows, under vmap and grad."""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import compiler
from compiler.primitives import gram as gram_lowering


def gram(x):
    return x.T @ x


def quadratic(w, x):
    return w @ (x.T @ x) @ w


@functools.cache
def _rows_at_run_time(dtype: str, n: int):
    return compiler.jit(gram, signature=f"{dtype}[k, {n}] -> {dtype}[{n}, {n}]")


@functools.cache
def _batched():
    return compiler.vmap(gram)


@functools.cache
def _grad():
    return compiler.grad(quadratic)


def _exact(x):
    """Every entry of x.T @ x as the exact sum rounded once (float32: exact products in
    float64 and fsum), or to long double (float64)."""
    n = x.shape[1]
    if x.dtype == np.float32:
        w = x.astype(np.float64)
        return np.array([[math.fsum(w[:, a] * w[:, b]) for b in range(n)] for a in range(n)])
    w = x.astype(np.longdouble)
    return np.einsum("ki,kj->ij", w, w, optimize=False)


def _check(got, x):
    dtype = x.dtype
    assert got.dtype == dtype and got.shape == (x.shape[1], x.shape[1])
    np.testing.assert_array_equal(got, got.T)                      # one triangle, mirrored
    exact = _exact(x)
    w = np.abs(x.astype(np.float64))
    scale = w.T @ w                                               # sum of |x_a x_b|
    eps = np.finfo(dtype).eps
    chunk = max(8, gram_lowering.CHUNK_BYTES // (x.shape[1] * dtype.itemsize))
    steps = min(x.shape[0], chunk) + -(-x.shape[0] // chunk) + 1  # additions in one sum's path
    err = np.abs(got.astype(np.longdouble) - exact).astype(np.float64)
    assert np.all(err <= steps * eps * scale + np.finfo(dtype).tiny)
    tol = dict(rtol=2e-5, atol=2e-5 * scale.max()) if dtype == np.float32 \
        else dict(rtol=1e-12, atol=1e-13 * scale.max())
    np.testing.assert_allclose(got, x.T @ x, **tol)               # as close as BLAS's sums


@pytest.mark.parametrize("dtype,n", [("f64", 16), ("f64", 13), ("f64", 2), ("f32", 16), ("f32", 29)])
def test_gram_of_narrow_matrices(dtype, n):
    kernel = _rows_at_run_time(dtype, n)
    rng = np.random.default_rng(n)
    for rows in (1, 7, 300, 2100):
        x = rng.standard_normal((rows, n)).astype(np.float32 if dtype == "f32" else np.float64)
        _check(kernel(x), x)


def test_the_blocked_lowering_is_the_one_compiled():
    """A product of this form compiles to the vector pass, not to a library call."""
    text = compiler.jit(gram).lower(np.zeros((5000, 16))).llvm
    assert "syrk" not in text and "gemm" not in text and "llvm.fma.v" in text


def test_blocks_cover_the_upper_triangle_within_the_registers():
    for n in range(2, 33):
        for lanes, accumulators in ((4, 12), (4, 24), (8, 24)):
            if -(-n // lanes) > accumulators:
                continue
            plan = gram_lowering.blocks(n, lanes, accumulators)
            rows = [a for a0, r in plan for a in range(a0, a0 + r)]
            assert rows == list(range(n))
            for a0, r in plan:
                used = sum(-(-n // lanes) - a // lanes for a in range(a0, a0 + r))
                assert used <= accumulators or r == 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gram_under_vmap(dtype):
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((5, 70, 12)).astype(dtype)
    got = _batched()(xs)
    assert got.shape == (5, 12, 12)
    for b in range(5):
        _check(got[b], xs[b])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gradient_through_a_gram_matrix(dtype):
    """d/dw of w^T (X^T X) w is 2 X^T X w."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((90, 10)).astype(dtype)
    w = rng.standard_normal(10).astype(dtype)
    got = _grad()(w, x)
    x64 = x.astype(np.float64)
    want = 2 * (x64.T @ x64) @ w.astype(np.float64)
    tol = dict(rtol=2e-5, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-11)
    np.testing.assert_allclose(got, want, **tol)
