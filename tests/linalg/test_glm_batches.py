"""The fused ``X.T @ f(X @ w)`` pass (primitives/glm.py) over batches of weight vectors around
and above MAX_WEIGHTS, in groups: under vmap (z laid out [B, k]), written batched by hand in
both layouts (``X @ W.T`` with ``(P - y[:, None]).T @ X``, z [k, B]; ``W @ X.T`` with ``P @
X``), under vmap of grad and of jacrev and grad of a vmapped sum, and with a weight batch of
two axes; float64 and float32 against NumPy in float64 (a Python loop over the weight
vectors), with a row count that is not a whole number of chunks and a column count that is not
a whole number of vectors."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import compiler
from compiler.primitives import glm

N = 21                                  # columns: 2 vectors of float64 and a part of one
K = 700                                 # rows: chunks of 97 (float64), 195 (float32)
BATCHES = (8, 9, 16, 33)


def grad_logreg(w, X, y):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return X.T @ (p - y) / X.shape[0]


def rows_first(W, X, y):
    P = 1.0 / (1.0 + np.exp(-(X @ W.T)))
    return (P - y[:, None]).T @ X / X.shape[0]


def weights_first(W, X, y):
    P = 1.0 / (1.0 + np.exp(-(W @ X.T)))
    return (P - y) @ X / X.shape[0]


def logistic_loss(w, X, y):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z)


def squared_loss(w, X, y):
    r = X @ w - y
    return 0.5 * np.mean(r * r)


def summed(W, X, y):
    return np.sum(compiler.vmap(logistic_loss, in_dims=(0, None, None))(W, X, y))


def _reference(W, X, y, which):
    """Per weight vector in float64, a Python loop: the logistic gradient, or the squared
    loss's."""
    W, X, y = (a.astype(np.float64) for a in (W, X, y))
    out = []
    for w in W:
        z = X @ w
        r = 1.0 / (1.0 + np.exp(-z)) - y if which == "logistic" else z - y
        out.append(X.T @ r / X.shape[0])
    return np.stack(out)


#: name: (the kernel, its gradient, the batch sizes); each kernel is compiled once per dtype and
#: batch size (the forms by hand and vmap around the thresholds, the others above them)
KERNELS = {
    "vmap": (lambda: compiler.vmap(grad_logreg, in_dims=(0, None, None)), "logistic", BATCHES),
    "rows_first": (lambda: compiler.jit(rows_first), "logistic", BATCHES),
    "weights_first": (lambda: compiler.jit(weights_first), "logistic", (9, 33)),
    "vmap_grad": (lambda: compiler.vmap(compiler.grad(logistic_loss), in_dims=(0, None, None)), "logistic",
                  (8, 16)),
    "vmap_jacrev": (lambda: compiler.vmap(compiler.jacrev(logistic_loss), in_dims=(0, None, None)),
                    "logistic", (9, 33)),
    "grad_of_vmap_sum": (lambda: compiler.grad(summed), "logistic", (9, 33)),
    "vmap_grad_squared": (lambda: compiler.vmap(compiler.grad(squared_loss), in_dims=(0, None, None)),
                          "squared", (9, 33)),
}


@functools.cache
def _kernel(name):
    return KERNELS[name][0]()


def _data(batch, dtype, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((K, N)).astype(dtype)
    y = (rng.random(K) < 0.5).astype(dtype)
    W = (rng.standard_normal((batch, N)) * 0.3).astype(dtype)
    return W, X, y


def _close(got, want, dtype):
    assert got.dtype == dtype and got.shape == want.shape
    tol = 1e-12 if dtype == np.float64 else 2e-6
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", list(KERNELS))
def test_batches_against_numpy(name, dtype, monkeypatch):
    """Right numbers, and from the fused pass: each call compiles the kernel for a new batch
    size, and that compile emits one fused pass (a regression to two products would still
    give the right numbers)."""
    calls: list[object] = []
    emit = glm._emit
    monkeypatch.setattr(glm, "_emit", lambda *a: calls.append(a) or emit(*a))
    _, which, batches = KERNELS[name]
    for batch in batches:
        W, X, y = _data(batch, dtype, batch)
        calls.clear()
        got = _kernel(name)(W, X, y)
        assert len(calls) == 1, (name, batch)
        _close(got, _reference(W, X, y, which), dtype)


def test_groups_cover_every_weight_vector_once():
    for weights in range(1, 70):
        groups = glm.groups(weights)
        assert sum(count * size for count, size in groups) == weights
        assert all(1 <= size <= glm.MAX_WEIGHTS for _, size in groups)
        sizes = [size for _, size in groups]
        assert max(sizes) - min(sizes) <= 1


@functools.cache
def _two_axes():
    return compiler.vmap(compiler.vmap(grad_logreg, in_dims=(0, None, None)), in_dims=(0, None, None))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_batch_of_two_axes(dtype):
    """vmap of vmap: 3 x 5 weight vectors, two groups, the weight index split over two axes."""
    W, X, y = _data(15, dtype, 4)
    got = _two_axes()(W.reshape(3, 5, N), X, y)
    _close(got, _reference(W, X, y, "logistic").reshape(3, 5, N), dtype)


@functools.cache
def _symbolic():
    return compiler.jit(rows_first, signature="f64[16, n], f64[k, n], f64[k]")


def test_run_time_rows_and_columns():
    """A run-time number of rows and columns: the generic update of the sums (no vector
    blocks for a symbolic row)."""
    for rows, cols in ((5, 3), (300, 21)):
        rng = np.random.default_rng(rows)
        X, y = rng.standard_normal((rows, cols)), (rng.random(rows) < 0.5) * 1.0
        W = rng.standard_normal((16, cols)) * 0.3
        _close(_symbolic()(W, X, y), _reference(W, X, y, "logistic"), np.float64)
