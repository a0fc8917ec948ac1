"""Jacobians and Hessians: hessian == jacfwd(jacrev) == jacrev(jacrev) == jacfwd(jacfwd),
all equal to finite differences (or analytic Hessians) of the uncompiled function;
``chunk_size=1`` and ``2`` give the default's result for jacrev, jacfwd and hessian.
"""
from __future__ import annotations

import numpy as np
import pytest

from compiler import hessian, jacfwd, jacrev
from tests import fd
from tests.autodiff.helpers import assert_tree_close

rng = np.random.default_rng(2)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_hessian(x):
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n - 1):
        h[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        h[i + 1, i + 1] += 200
        h[i, i + 1] += -400 * x[i]
        h[i + 1, i] += -400 * x[i]
    return h


def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def logsumexp_hessian(x):
    p = np.exp(x - x.max())
    p /= p.sum()
    return np.diag(p) - np.outer(p, p)


def quartic_matrix(a):
    return np.sum((a @ a.T) ** 2)


def mixed(x):
    return np.sum(np.sin(x[:, 0]) * np.exp(x[:, 1])) + np.prod(x[0]) * np.tanh(x[1, 1])


def _numerical_hessian(f, x):
    """Finite differences of finite differences would be too noisy: differentiate the
    analytic-free gradient by the 4-point stencil twice with a larger step."""
    grad_fd = lambda y: fd.jacobian(f, (y,), 0, h=1e-3)  # noqa: E731
    return fd.jacobian(grad_fd, (x,), 0, h=1e-3)


FUNCTIONS = [
    ("rosenbrock", rosenbrock, lambda: rng.uniform(-1, 1, 4), rosenbrock_hessian),
    ("logsumexp", logsumexp, lambda: rng.standard_normal(5), logsumexp_hessian),
    ("quartic_matrix", quartic_matrix, lambda: rng.standard_normal((2, 3)), None),
    ("mixed", mixed, lambda: rng.uniform(-1, 1, (3, 2)), None),
]


@pytest.mark.parametrize("name, f, make, analytic", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_hessian_equals_jacfwd_jacrev_equals_jacrev_jacrev(name, f, make, analytic):
    x = make()
    h = hessian(f)(x)
    assert h.shape == x.shape + x.shape
    want = analytic(x) if analytic else _numerical_hessian(f, x)
    np.testing.assert_allclose(h, want, rtol=1e-6 if analytic is None else 1e-12,
                               atol=1e-5 if analytic is None else 1e-10)
    np.testing.assert_allclose(jacfwd(jacrev(f))(x), h, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(jacrev(jacrev(f))(x), h, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(jacfwd(jacfwd(f))(x), h, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(jacrev(jacfwd(f))(x), h, rtol=1e-12, atol=1e-12)
    hf = h.reshape(x.size, x.size)
    np.testing.assert_allclose(hf, hf.T, rtol=1e-12, atol=1e-12)


def vector_field(x, y):
    return np.stack([x[0] * np.sin(y[1]), np.exp(x[1]) * y[0], x[0] * x[1] * y[1], np.tanh(y[0] - x[2])])


@pytest.mark.parametrize("jac", [jacrev, jacfwd], ids=["jacrev", "jacfwd"])
def test_jacobian_matches_finite_differences_argnums(jac):
    x, y = rng.standard_normal(3), rng.standard_normal(2)
    jx, jy = jac(vector_field, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(jx, fd.jacobian(vector_field, (x, y), 0), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(jy, fd.jacobian(vector_field, (x, y), 1), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(jac(vector_field, argnums=1)(x, y), jy, rtol=1e-13, atol=0)


def test_jacobian_of_pytree_output_and_input():
    def f(p):
        return {"s": np.sin(p["a"]) * p["b"][0], "t": (p["a"] ** 2).sum() * p["b"]}
    p = {"a": rng.standard_normal(3), "b": rng.standard_normal(2)}
    jr, jf = jacrev(f)(p), jacfwd(f)(p)
    assert_tree_close(jr, jf, rtol=1e-13, atol=1e-14, what="jacrev vs jacfwd")
    assert jr["s"]["a"].shape == (3, 3) and jr["t"]["b"].shape == (2, 2) and jr["t"]["a"].shape == (2, 3)
    np.testing.assert_allclose(jr["s"]["a"], np.diag(np.cos(p["a"]) * p["b"][0]), rtol=1e-13)
    np.testing.assert_allclose(jr["t"]["a"], np.outer(p["b"], 2 * p["a"]), rtol=1e-13)


def test_hessian_argnums_tuple_gives_blocks():
    def f(x, y):
        return np.sum(x ** 2 * y) + np.sum(np.sin(y))
    x, y = rng.standard_normal(3), rng.standard_normal(3)
    h = hessian(f, argnums=(0, 1))(x, y)
    assert isinstance(h, tuple) and len(h) == 2 and isinstance(h[0], tuple)
    np.testing.assert_allclose(h[0][0], np.diag(2 * y), rtol=1e-13)
    np.testing.assert_allclose(h[0][1], np.diag(2 * x), rtol=1e-13)
    np.testing.assert_allclose(h[1][0], np.diag(2 * x), rtol=1e-13)
    np.testing.assert_allclose(h[1][1], np.diag(-np.sin(y)), rtol=1e-13, atol=1e-15)


def chunk_target(x):
    return np.tanh(x) * np.sum(x ** 2) + x[::-1] * x[0]


@pytest.mark.parametrize("chunk_size", [1, 2, 3])
@pytest.mark.parametrize("transform", ["jacrev", "jacfwd", "hessian"])
def test_chunk_size_gives_the_default_result(transform, chunk_size):
    x = rng.standard_normal(5)
    if transform == "hessian":
        f, t = (lambda y: np.sum(chunk_target(y) ** 2)), hessian
    else:
        f, t = chunk_target, {"jacrev": jacrev, "jacfwd": jacfwd}[transform]
    default = t(f)(x)
    chunked = t(f, chunk_size=chunk_size)(x)
    assert chunked.shape == default.shape
    np.testing.assert_allclose(chunked, default, rtol=1e-14, atol=1e-14)
    if transform != "hessian":
        np.testing.assert_allclose(default, fd.jacobian(f, (x,)), rtol=1e-7, atol=1e-9)


def test_chunk_size_with_argnums_and_matrix_input():
    def f(a, b):
        return np.sin(a @ b)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
    for jac in (jacrev, jacfwd):
        d = jac(f, argnums=(0, 1))(a, b)
        for c in (1, 2):
            got = jac(f, argnums=(0, 1), chunk_size=c)(a, b)
            for g_, d_ in zip(got, d):
                np.testing.assert_allclose(g_, d_, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(d[0], fd.jacobian(f, (a, b), 0), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("bad", [0, -1, 1.5])
def test_chunk_size_must_be_a_positive_int(bad):
    with pytest.raises((ValueError, TypeError)):
        jacrev(np.sin, chunk_size=bad)(np.ones(3))
