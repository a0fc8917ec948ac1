"""Small batched products and the loops around them, against NumPy.

vmap of ``A @ x`` over the points is a product read transposed; canonicalize swaps its
operands so that it writes the points' order itself (transforms/canonicalize.py). Elementwise
loop nests over short rows are vectorized along the rows (Codegen.loop_nest), temporaries
are separate objects to LLVM (workspace.py), and an operand of a product is a buffer before its
transpose is read (backend/fusion.py). Oracles: NumPy on the same inputs, and the closed form
of the Jacobian of tanh(A @ x), diag(1 - tanh^2) A.
"""
from __future__ import annotations

import functools
import re

import numpy as np
import pytest

import compiler
from compiler.backend.fusion import schedule
from compiler.ir.parser import parse
from tests.lazy import lazy_jit

DTYPES = [np.float32, np.float64]


def _tol(dtype):
    return dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)


def g(A, x):
    return np.tanh(A @ x)


def matvec(A, x):
    return A @ x


@functools.cache
def _vmapped(in_dims):
    return compiler.vmap(matvec, in_dims=in_dims)


@functools.cache
def _jacobians():
    return compiler.vmap(compiler.jacfwd(g, argnums=1), in_dims=(None, 0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_vmap_of_jacfwd_is_the_closed_form(dtype):
    rng = np.random.default_rng(0)
    A = (rng.standard_normal((16, 16)) / 4).astype(dtype)
    xs = rng.standard_normal((37, 16)).astype(dtype)
    got = _jacobians()(A, xs)
    t = np.tanh(xs.astype(np.float64) @ A.T.astype(np.float64))
    want = (1 - t * t)[:, :, None] * A.astype(np.float64)[None]
    assert got.dtype == dtype and got.shape == (37, 16, 16)
    np.testing.assert_allclose(got, want, **_tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("in_dims", [(None, 0), (None, 1), (1, None), (0, 0), (2, 1)])
def test_vmapped_matrix_vector_products(in_dims, dtype):
    rng = np.random.default_rng(1)
    batch, m, n = 11, 9, 12
    A = rng.standard_normal((m, n))
    x = rng.standard_normal(n)
    a_dim, x_dim = in_dims
    As = A if a_dim is None else np.moveaxis(rng.standard_normal((batch, m, n)), 0, a_dim)
    xs = x if x_dim is None else np.moveaxis(rng.standard_normal((batch, n)), 0, x_dim)
    As, xs = As.astype(dtype), xs.astype(dtype)
    want = np.stack([(As if a_dim is None else np.take(As, i, axis=a_dim)).astype(np.float64)
                     @ (xs if x_dim is None else np.take(xs, i, axis=x_dim)).astype(np.float64)
                     for i in range(batch)])
    got = _vmapped(in_dims)(As, xs)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, want, **_tol(dtype))


def transposed_product(A, X):
    return np.tanh((A @ X.T).T)


def transposed_batched(P, Q):
    return np.swapaxes(P @ Q, 1, 2) * 2.0


def transposed_twice_used(A, X):
    P = A @ X.T
    return P.T + 1.0, P


def transposed_strided(A, X):
    return (A[:, ::2] @ X[::-1, ::2].T).T


K_TRANSPOSED_PRODUCT, K_TRANSPOSED_BATCHED, K_TRANSPOSED_TWICE_USED, K_TRANSPOSED_STRIDED = (
    lazy_jit(f) for f in (transposed_product, transposed_batched, transposed_twice_used, transposed_strided))


@pytest.mark.parametrize("dtype", DTYPES)
def test_transposed_products(dtype):
    rng = np.random.default_rng(2)
    A, X = rng.standard_normal((10, 24)).astype(dtype), rng.standard_normal((19, 24)).astype(dtype)
    P, Q = rng.standard_normal((3, 7, 5)).astype(dtype), rng.standard_normal((3, 5, 9)).astype(dtype)
    A64, X64 = A.astype(np.float64), X.astype(np.float64)
    tol = _tol(dtype)
    np.testing.assert_allclose(K_TRANSPOSED_PRODUCT(A, X), np.tanh(X64 @ A64.T), **tol)
    np.testing.assert_allclose(K_TRANSPOSED_BATCHED(P, Q),
                               2.0 * np.einsum("bik,bkj->bji", P.astype(np.float64), Q.astype(np.float64)),
                               **tol)
    t, p = K_TRANSPOSED_TWICE_USED(A, X)
    np.testing.assert_allclose(p, A64 @ X64.T, **tol)
    np.testing.assert_allclose(t, X64 @ A64.T + 1.0, **tol)
    np.testing.assert_allclose(K_TRANSPOSED_STRIDED(A, X), X64[::-1, ::2] @ A64[:, ::2].T, **tol)


def rows(A, xs, w):
    return A[None, :, :] * xs[:, :, None] + w[:, None, None]


def rows_transposed(x, y):
    return np.exp(x.T) * y


K_ROWS, K_ROWS_TRANSPOSED = lazy_jit(rows), lazy_jit(rows_transposed)


@pytest.mark.parametrize("dtype", DTYPES)
def test_short_rows(dtype):
    """Loop nests over rows of 9 and 16 elements, rows of a transposed operand among them."""
    rng = np.random.default_rng(3)
    for m, n in [(16, 16), (5, 9)]:
        A, xs, w = (rng.standard_normal(s).astype(dtype) for s in [(m, n), (13, m), (13,)])
        want = A.astype(np.float64)[None] * xs.astype(np.float64)[:, :, None] + w.astype(np.float64)[:, None, None]
        np.testing.assert_allclose(K_ROWS(A, xs, w), want, **_tol(dtype))
        x, y = rng.standard_normal((n, 6)).astype(dtype), rng.standard_normal((6, n)).astype(dtype)
        np.testing.assert_allclose(K_ROWS_TRANSPOSED(x, y),
                                   np.exp(x.astype(np.float64).T) * y, **_tol(dtype))


def normalized_gram(X):
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    return Xn @ Xn.T


K_NORMALIZED_GRAM = lazy_jit(normalized_gram)


def test_normalized_rows_are_one_buffer_read_twice():
    """The transpose of a product's computed operand is read from the operand's buffer, not
    copied into a second one (syrk takes the transpose as a leading dimension)."""
    fn = parse('''
func @f(%x: f64[40, 8], %n: f64[40, 8]) -> (f64[40, 40]) {
  %0 = div(%x, %n) : f64[40, 8]
  %1 = transpose(%0) {permutation=(1, 0)} : f64[8, 40]
  %2 = dot_general(%0, %1) {dimension_numbers=(((1,), (0,)), ((), ()))} : f64[40, 40]
  return %2
}''')
    sched = schedule(fn.body)
    div, transpose = fn.body.ops[0].results[0], fn.body.ops[1].results[0]
    assert div in sched.materialized and transpose not in sched.materialized
    assert sched.groups[transpose] == "cheap"


@pytest.mark.parametrize("dtype", DTYPES)
def test_normalized_gram_matches_numpy_and_vectorizes(dtype):
    """Two temporaries (the norms, the normalized rows), separate objects: the division runs
    on vectors (it reloaded each norm and stayed scalar when LLVM could not tell the
    temporaries apart), and the results are NumPy's."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((40, 128)).astype(dtype)
    X64 = X.astype(np.float64)
    Xn = X64 / np.sqrt((X64 * X64).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(K_NORMALIZED_GRAM(X), Xn @ Xn.T, **_tol(dtype))
    llvm = K_NORMALIZED_GRAM.lower(X).llvm_optimized
    ty = "double" if dtype == np.float64 else "float"
    assert "workspace_slice" in llvm
    assert re.search(rf"fdiv [a-z ]*<\d+ x {ty}>", llvm), "the division is scalar"

