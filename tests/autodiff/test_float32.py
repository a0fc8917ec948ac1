"""float32 gradients: computed in float32 (dtype kept), equal to the float64 gradient
of the same function at the same (float32-representable) point within float32
tolerance. The float64 gradient itself is checked against finite differences of the
uncompiled NumPy function, so the oracle chain never uses the code under test alone.
"""
from __future__ import annotations

import numpy as np
import pytest

from compiler import grad, hessian, jacfwd, jacrev, jvp, vmap
from tests import fd


def logistic(w, x, y):
    return np.mean(np.log1p(np.exp(-y * (x @ w)))) + 1e-3 * np.sum(w * w)


def mlp(w1, w2, x):
    return np.sum(np.tanh(x @ w1) @ w2 ** 2)


def softmax_ce(z, labels):
    z = z - z.max(axis=-1, keepdims=True)
    return -np.sum(labels * (z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))))


def _data(seed=0):
    r = np.random.default_rng(seed)
    return {
        "logistic": (logistic, (r.standard_normal(5), r.standard_normal((16, 5)), np.sign(r.standard_normal(16))), 0),
        "mlp": (mlp, (r.standard_normal((4, 6)) * 0.5, r.standard_normal((6, 2)), r.standard_normal((3, 4))), (0, 1)),
        "softmax_ce": (softmax_ce, (r.standard_normal((4, 5)) * 2, np.eye(5)[r.integers(0, 5, 4)]), 0),
    }


@pytest.mark.parametrize("name", ["logistic", "mlp", "softmax_ce"])
def test_float32_gradient_within_float32_tolerance(name):
    f, args64, argnums = _data()[name]
    args32 = tuple(a.astype(np.float32) for a in args64)
    args64 = tuple(a.astype(np.float64) for a in args32)        # the same point
    g32 = grad(f, argnums=argnums)(*args32)
    g64 = grad(f, argnums=argnums)(*args64)
    nums = (argnums,) if isinstance(argnums, int) else argnums
    g32t = (g32,) if isinstance(argnums, int) else g32
    g64t = (g64,) if isinstance(argnums, int) else g64
    for k, a, b in zip(nums, g32t, g64t):
        assert a.dtype == np.float32, f"the gradient of a float32 input must be float32, got {a.dtype}"
        np.testing.assert_allclose(b, fd.jacobian(f, args64, k), rtol=1e-6, atol=1e-8)
        scale = float(np.max(np.abs(b)))
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * scale)


def test_float32_jacobians_and_hessian():
    x = np.random.default_rng(1).standard_normal(4).astype(np.float32)
    f = lambda v: np.sin(v) * np.sum(v ** 2)  # noqa: E731
    jr, jf = jacrev(f)(x), jacfwd(f)(x)
    j64 = jacrev(f)(x.astype(np.float64))
    assert jr.dtype == np.float32 and jf.dtype == np.float32
    np.testing.assert_allclose(j64, fd.jacobian(f, (x.astype(np.float64),)), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(jr, j64, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(jf, j64, rtol=1e-5, atol=1e-5)
    h = hessian(lambda v: np.sum(np.exp(v) * v))(x)
    assert h.dtype == np.float32
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(h, np.diag(np.exp(x64) * (x64 + 2)), rtol=1e-5, atol=1e-6)


def test_float32_jvp_and_vmap_grad():
    r = np.random.default_rng(2)
    w, xs, ys = (r.standard_normal(3).astype(np.float32), r.standard_normal((8, 3)).astype(np.float32),
                 np.sign(r.standard_normal(8)).astype(np.float32))
    per = vmap(grad(lambda w_, x, y: np.log1p(np.exp(-y * (x @ w_)))), in_dims=(None, 0, 0))(w, xs, ys)
    assert per.dtype == np.float32 and per.shape == (8, 3)
    w64, xs64, ys64 = w.astype(np.float64), xs.astype(np.float64), ys.astype(np.float64)
    want = (-ys64 / (1 + np.exp(ys64 * (xs64 @ w64))))[:, None] * xs64
    np.testing.assert_allclose(per, want, rtol=1e-5, atol=1e-6)
    t = r.standard_normal(3).astype(np.float32)
    out, tan = jvp(lambda v: np.tanh(v) * v, (w,), (t,))
    assert tan.dtype == np.float32
    np.testing.assert_allclose(tan, ((1 - np.tanh(w64) ** 2) * w64 + np.tanh(w64)) * t, rtol=1e-5, atol=1e-6)


def test_weak_python_float_keeps_float32():
    x = np.float32(0.5) * np.ones(3, np.float32)
    g = grad(lambda v, s: np.sum(np.sin(v) * s), argnums=0)(x, 2.0)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2 * np.cos(0.5), rtol=1e-6)
