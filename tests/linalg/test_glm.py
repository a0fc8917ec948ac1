"""``X.T @ f(X @ w)`` (the gradient of a generalised linear model) in one pass over X
(primitives/glm.py): written by hand as ``X.T @ r`` or ``r @ X``, made by grad, with z also
returned, against NumPy in float64 and float32 (computed in float64), and against long-double
sums; rows not a whole number of chunks, a single row, a run-time number of rows, vmap over
a batch of weight vectors. Products that must stay apart (r depends on a reduction of z; X
updated between them) give NumPy's results."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import compiler
from compiler.primitives import glm


def logistic(X, y, w):
    return X.T @ (1.0 / (1.0 + np.exp(-(X @ w))) - y) / X.shape[0]


def linear(X, y, w):
    return X.T @ (X @ w - y)


def poisson(X, y, w):
    return (np.exp(X @ w) - y) @ X


def with_z(X, y, w):
    z = X @ w
    return z, X.T @ np.tanh(z - y)


def centered(X, y, w):
    z = X @ w
    return X.T @ (z - z.mean())


def updated(X, y, w):
    z = X @ w
    X = X * 2.0
    return X.T @ (z - y)


def loss(w, X, y):
    return np.sum(np.logaddexp(0.0, -y * (X @ w)))


FUSED = [logistic, linear, poisson, with_z]
APART = [centered, updated]
N = 13                                  # not a whole number of vectors


@functools.cache
def _kernel(fn, dtype):
    t = "f32" if dtype == np.float32 else "f64"
    return compiler.jit(fn, signature=f"{t}[k, {N}], {t}[k], {t}[{N}]")


@functools.cache
def _grad(dtype):
    return compiler.grad(loss)


def _data(rows, dtype, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, N)).astype(dtype)
    y = rng.standard_normal(rows).astype(dtype)
    w = (rng.standard_normal(N) * 0.3).astype(dtype)
    return X, y, w


def _close(got, want, dtype, scale):
    assert got.dtype == dtype
    tol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fn", FUSED + APART, ids=lambda f: f.__name__)
def test_against_numpy(fn, dtype):
    kernel = _kernel(fn, dtype)
    for rows in (1, 5, 300, 1500):        # chunks of 157 rows (float64) and 315 (float32)
        X, y, w = _data(rows, dtype, rows)
        got = kernel(X, y, w)
        want = fn(*(a.astype(np.float64) for a in (X, y, w)))
        scale = float(np.abs(X).sum() + 1.0)
        for g, v in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            _close(g, v, dtype, scale)


def test_sums_as_accurate_as_blocked_summation():
    """linear's g_j = sum_i X_ij (X_i . w - y_i) against the same sums in long double: the
    error within the bound of chunked summation, and no larger than NumPy's (BLAS's) plus a
    few ulps of the largest term."""
    X, y, w = _data(2000, np.float64, 7)
    got = _kernel(linear, np.float64)(X, y, w)
    Xl = X.astype(np.longdouble)
    r = Xl @ w.astype(np.longdouble) - y
    exact = (Xl * r[:, None]).sum(axis=0)
    terms = (np.abs(Xl) * np.abs(r)[:, None]).sum(axis=0).astype(np.float64)
    eps = np.finfo(np.float64).eps
    chunk = glm.CHUNK_BYTES // (N * 8)
    err = np.abs(got - exact).astype(np.float64)
    assert np.all(err <= (chunk + 2000 // chunk + 2 * N + 4) * eps * terms)
    blas = np.abs(linear(X, y, w) - exact).astype(np.float64)
    assert err.max() <= 2 * blas.max() + 8 * eps * np.abs(exact).max()


def test_the_fused_pass_is_the_one_compiled(monkeypatch):
    """The forms above compile to one pass; those that must not, to two."""
    calls: list[object] = []
    emit = glm._emit
    monkeypatch.setattr(glm, "_emit", lambda *a: calls.append(a) or emit(*a))
    X, y, w = _data(300, np.float64)
    for fn in FUSED + APART:
        calls.clear()
        compiler.jit(fn).lower(X, y, w)
        assert len(calls) == (fn in FUSED), fn.__name__
    calls.clear()
    compiler.grad(loss).lower(w, X, np.sign(y))
    assert len(calls) == 1
    for batch in (8, glm.MAX_WEIGHTS + 1, 33):      # more than MAX_WEIGHTS: groups of them
        calls.clear()
        compiler.vmap(logistic, in_dims=(None, None, 0)).lower(X, y, np.ones((batch, N)))
        assert len(calls) == 1


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gradient_of_the_logistic_loss(dtype):
    X, y, w = _data(700, dtype, 3)
    labels = np.sign(y)
    got = _grad(dtype)(w, X, labels)
    X64, l64 = X.astype(np.float64), labels.astype(np.float64)
    want = X64.T @ (-l64 / (1.0 + np.exp(l64 * (X64 @ w.astype(np.float64)))))
    _close(got, want, dtype, float(np.abs(X64).sum()))


@functools.cache
def _over_weights(fn):
    return compiler.vmap(fn, in_dims=(None, None, 0))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fn", [logistic, poisson], ids=lambda f: f.__name__)
def test_vmap_over_a_batch_of_weights(fn, dtype):
    for rows, batch in ((400, 3), (1200, 8)):
        X, y, _ = _data(rows, dtype, 5)
        ws = (np.random.default_rng(6).standard_normal((batch, N)) * 0.3).astype(dtype)
        got = _over_weights(fn)(X, y, ws)
        want = np.stack([fn(X.astype(np.float64), y.astype(np.float64), w.astype(np.float64)) for w in ws])
        _close(got, want, dtype, float(np.abs(X.astype(np.float64)).sum()))
