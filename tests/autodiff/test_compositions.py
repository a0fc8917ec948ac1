"""Every composition of the brief works and is compiled to ONE native kernel.

Each composed transform is called once with the on-disk cache disabled, counting
the native compilations (``pipeline.compile_ir``): exactly one. The result is
compared with an oracle that does not use the composition: finite differences of
the uncompiled function, analytic derivatives, or a Python loop over examples.
"""
from __future__ import annotations

import numpy as np
import pytest

from compiler import grad, jacfwd, jacrev, jvp, vmap
from tests import fd
from tests.autodiff.helpers import count_compilations

rng = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch):
    monkeypatch.setenv("AOTX_DISABLE_CACHE", "1")


def one_kernel(call):
    with count_compilations() as names:
        out = call()
    assert len(names) == 1, f"expected one native kernel, compiled {len(names)}: {names}"
    return out


def per_example_loss(w, x, y):
    return np.log1p(np.exp(-y * (x @ w))) + 0.01 * np.sum(w * w)


def test_vmap_of_grad():
    w, x, y = rng.standard_normal(4), rng.standard_normal((6, 4)), np.sign(rng.standard_normal(6))
    got = one_kernel(lambda: vmap(grad(per_example_loss), in_dims=(None, 0, 0))(w, x, y))
    want = np.stack([fd.jacobian(per_example_loss, (w, x[i], y[i])) for i in range(6)])
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)


def cube_sin(t):
    return np.sin(t) * t ** 3


def test_grad_of_grad():
    t = 0.7
    got = one_kernel(lambda: grad(grad(cube_sin))(t))
    want = -np.sin(t) * t ** 3 + 6 * np.cos(t) * t ** 2 + 6 * t * np.sin(t)
    np.testing.assert_allclose(got, want, rtol=1e-13)


def energy(x):
    return np.sum(np.exp(x[:-1]) * x[1:] ** 2) + np.prod(np.cos(x))


def _hess_fd(x):
    return fd.jacobian(lambda y: fd.jacobian(energy, (y,), 0, h=1e-3), (x,), 0, h=1e-3)


def test_jacfwd_of_jacrev():
    x = rng.uniform(-1, 1, 4)
    got = one_kernel(lambda: jacfwd(jacrev(energy))(x))
    np.testing.assert_allclose(got, _hess_fd(x), rtol=1e-6, atol=1e-6)


def test_jacrev_of_jacrev():
    x = rng.uniform(-1, 1, 4)
    got = one_kernel(lambda: jacrev(jacrev(energy))(x))
    np.testing.assert_allclose(got, _hess_fd(x), rtol=1e-6, atol=1e-6)


def row_fn(r):
    return np.tanh(r) * np.sum(r ** 2)


def test_jacrev_of_vmap():
    xs = rng.standard_normal((3, 2))
    got = one_kernel(lambda: jacrev(vmap(row_fn))(xs))
    assert got.shape == (3, 2, 3, 2)
    loop = lambda a: np.stack([row_fn(a[i]) for i in range(a.shape[0])])  # noqa: E731
    np.testing.assert_allclose(got, fd.jacobian(loop, (xs,)), rtol=1e-7, atol=1e-9)


def test_vmap_of_jacrev():
    xs = rng.standard_normal((4, 3))
    got = one_kernel(lambda: vmap(jacrev(row_fn))(xs))
    assert got.shape == (4, 3, 3)
    want = np.stack([fd.jacobian(row_fn, (xs[i],)) for i in range(4)])
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)


def test_jvp_of_vmap():
    xs, ts = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    out, tan = one_kernel(lambda: jvp(vmap(row_fn), (xs,), (ts,)))
    np.testing.assert_allclose(out, np.stack([row_fn(r) for r in xs]), rtol=1e-13)
    want = np.stack([fd.jacobian(row_fn, (xs[i],)) @ ts[i] for i in range(4)])
    np.testing.assert_allclose(tan, want, rtol=1e-7, atol=1e-9)


def jvp_of_row(x, t):
    return jvp(row_fn, (x,), (t,))


def test_vmap_of_jvp():
    """The torch.func spelling: vmap over a function that calls jvp."""
    xs, ts = rng.standard_normal((5, 3)), rng.standard_normal((5, 3))
    got_out, got_tan = one_kernel(lambda: vmap(jvp_of_row)(xs, ts))
    want = np.stack([fd.jacobian(row_fn, (xs[i],)) @ ts[i] for i in range(5)])
    np.testing.assert_allclose(got_out, np.stack([row_fn(r) for r in xs]), rtol=1e-13)
    np.testing.assert_allclose(got_tan, want, rtol=1e-7, atol=1e-9)


def test_vmap_of_the_jvp_kernel():
    """vmap applied to the kernel behind compiler.jvp (primals, tangents) -> (out, tangent)."""
    xs, ts = rng.standard_normal((5, 3)), rng.standard_normal((5, 3))
    from compiler.api.autodiff import ad_kernel, kernel_for
    jvp_kernel = ad_kernel("jvp", kernel_for(row_fn), False)
    got_out, got_tan = one_kernel(lambda: vmap(jvp_kernel)((xs,), (ts,)))
    want = np.stack([fd.jacobian(row_fn, (xs[i],)) @ ts[i] for i in range(5)])
    np.testing.assert_allclose(got_out, np.stack([row_fn(r) for r in xs]), rtol=1e-13)
    np.testing.assert_allclose(got_tan, want, rtol=1e-7, atol=1e-9)


def row_norm(r):
    return np.sqrt(np.sum(r * r))


def total(xs):
    return vmap(row_norm)(xs).sum()


def test_grad_of_a_function_that_calls_vmap():
    xs = rng.standard_normal((5, 3))
    got = one_kernel(lambda: grad(total)(xs))
    np.testing.assert_allclose(got, xs / np.sqrt((xs * xs).sum(axis=1, keepdims=True)), rtol=1e-13)
    np.testing.assert_allclose(got, fd.jacobian(total, (xs,)), rtol=1e-7, atol=1e-9)


def test_vmap_of_grad_of_grad():
    ts = rng.uniform(-2, 2, 6)
    got = one_kernel(lambda: vmap(grad(grad(cube_sin)))(ts))
    want = -np.sin(ts) * ts ** 3 + 6 * np.cos(ts) * ts ** 2 + 6 * ts * np.sin(ts)
    np.testing.assert_allclose(got, want, rtol=1e-12)
