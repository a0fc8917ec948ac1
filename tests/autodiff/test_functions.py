"""Whole-function gradients of realistic NumPy code.

Each test differentiates a plain NumPy function with aotx (``grad``,
``grad_and_value``, ``vjp``, ``jvp``, ``linearize``...) and compares with central
finite differences of the same function run uncompiled by NumPy
(tests/fd.py), and with analytic gradients where they are short.
"""
from __future__ import annotations

import numpy as np
import pytest

from compiler import grad, grad_and_value, jit, jvp, linearize, vjp
from tests import fd
from tests.autodiff.helpers import assert_tree_close

RTOL, ATOL = 1e-6, 1e-8


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def check_grad(f, args, argnums=0, rtol=RTOL, atol=ATOL):
    """grad(f, argnums)(*args) against finite differences; returns the compiled gradient."""
    got = grad(f, argnums=argnums)(*args)
    if isinstance(argnums, int):
        want = fd.jacobian(f, args, argnums)
    else:
        want = tuple(fd.jacobian(f, args, k) for k in argnums)
    assert_tree_close(got, want, rtol, atol, what=f"grad({f.__name__}, argnums={argnums})")
    return got


# ---- losses ------------------------------------------------------------------------------------------

def logistic_loss(w, x, y):
    z = x @ w
    return np.mean(np.log1p(np.exp(-y * z))) + 1e-3 * np.sum(w * w)


def _logistic_data(n=20, d=6, seed=1):
    r = rng(seed)
    return r.standard_normal(d), r.standard_normal((n, d)), np.sign(r.standard_normal(n))


def test_logistic_loss_grad_matches_fd_and_analytic():
    w, x, y = _logistic_data()
    g = check_grad(logistic_loss, (w, x, y))
    z = x @ w
    analytic = x.T @ (-y / (1 + np.exp(y * z))) / len(y) + 2e-3 * w
    np.testing.assert_allclose(g, analytic, rtol=1e-12, atol=1e-14)


def test_logistic_loss_grad_argnums_tuple():
    w, x, y = _logistic_data(seed=2)
    gw, gx = check_grad(logistic_loss, (w, x, y), argnums=(0, 1))
    assert gw.shape == w.shape and gx.shape == x.shape


def mlp_loss(params, x, target):
    h = np.tanh(x @ params["w1"] + params["b1"])
    out = h @ params["w2"] + params["b2"]
    return np.mean((out - target) ** 2)


def _mlp_params(r, d_in=4, d_h=5, d_out=2):
    return {"w1": r.standard_normal((d_in, d_h)) * 0.5, "b1": r.standard_normal(d_h) * 0.1,
            "w2": r.standard_normal((d_h, d_out)) * 0.5, "b2": r.standard_normal(d_out) * 0.1}


def test_mlp_loss_dict_params_give_dict_gradient():
    r = rng(3)
    params, x, t = _mlp_params(r), r.standard_normal((8, 4)), r.standard_normal((8, 2))
    g = check_grad(mlp_loss, (params, x, t))
    assert isinstance(g, dict) and sorted(g) == ["b1", "b2", "w1", "w2"]


def softmax_cross_entropy(logits, labels_onehot):
    z = logits - np.max(logits, axis=-1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))
    return -np.sum(labels_onehot * logp) / logits.shape[0]


def test_softmax_cross_entropy_grad_is_softmax_minus_labels():
    r = rng(4)
    logits = r.standard_normal((6, 5)) * 2
    labels = np.eye(5)[r.integers(0, 5, 6)]
    g = check_grad(softmax_cross_entropy, (logits, labels))
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(g, (p - labels) / 6, rtol=1e-10, atol=1e-13)


def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def test_logsumexp_grad_is_softmax():
    x = rng(5).standard_normal(9) * 3
    g = check_grad(logsumexp, (x,))
    np.testing.assert_allclose(g, np.exp(x) / np.exp(x).sum(), rtol=1e-12)


def layer_norm_objective(x, gamma, beta, weights):
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + 1e-5) * gamma + beta
    return np.sum(y * weights)


def test_layer_norm_grad_three_argnums():
    r = rng(6)
    x, gamma, beta, wts = r.standard_normal((3, 7)), r.standard_normal(7), r.standard_normal(7), r.standard_normal((3, 7))
    gx, gg, gb = check_grad(layer_norm_objective, (x, gamma, beta, wts), argnums=(0, 1, 2))
    np.testing.assert_allclose(gb, wts.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(gx.sum(axis=-1), 0.0, atol=1e-10)   # invariant to a shift of a row


def huber(pred, target, delta=1.0):
    r = pred - target
    a = np.abs(r)
    return np.sum(np.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta)))


def test_huber_loss_grad():
    r = rng(7)
    pred, target = r.standard_normal(12) * 2, r.standard_normal(12)
    g = check_grad(huber, (pred, target))
    res = pred - target
    np.testing.assert_allclose(g, np.clip(res, -1.0, 1.0), rtol=1e-12)


def gaussian_nll(mu, log_sigma, x):
    sigma = np.exp(log_sigma)
    return np.sum(0.5 * ((x - mu) / sigma) ** 2 + log_sigma + 0.5 * np.log(2 * np.pi))


def test_gaussian_log_likelihood_grad_mu_and_log_sigma():
    r = rng(8)
    x = r.standard_normal(10) * 1.5 + 0.3
    mu, ls = np.array(0.1), np.array(0.2)
    gmu, gls = check_grad(gaussian_nll, (mu, ls, x), argnums=(0, 1))
    s2 = np.exp(2 * ls)
    np.testing.assert_allclose(gmu, -np.sum(x - mu) / s2, rtol=1e-12)
    np.testing.assert_allclose(gls, len(x) - np.sum((x - mu) ** 2) / s2, rtol=1e-12)


def poisson_nll(log_rate, counts):
    return np.sum(np.exp(log_rate) - counts * log_rate)


def test_poisson_regression_grad():
    r = rng(9)
    lr, counts = r.standard_normal(8) * 0.5, r.integers(0, 6, 8).astype(np.float64)
    g = check_grad(poisson_nll, (lr, counts))
    np.testing.assert_allclose(g, np.exp(lr) - counts, rtol=1e-12)


# ---- classic test functions ------------------------------------------------------------------------------

def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def test_rosenbrock_grad_matches_analytic():
    x = rng(10).uniform(-1.5, 1.5, 6)
    g = check_grad(rosenbrock, (x,), rtol=1e-7, atol=1e-6)
    want = np.zeros_like(x)
    want[:-1] += -400 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    want[1:] += 200 * (x[1:] - x[:-1] ** 2)
    np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-10)


def test_rosenbrock_minimum_has_zero_gradient():
    np.testing.assert_allclose(grad(rosenbrock)(np.ones(5)), np.zeros(5), atol=0)


def polynomial(coeffs, x):
    acc = np.zeros_like(x)
    for i in range(coeffs.shape[0]):      # Horner, a static loop
        acc = acc * x + coeffs[i]
    return np.sum(acc)


def test_polynomial_horner_grad_wrt_x_and_coefficients():
    r = rng(11)
    c, x = r.standard_normal(5), r.uniform(-1, 1, 4)
    gc, gx = check_grad(polynomial, (c, x), argnums=(0, 1))
    np.testing.assert_allclose(gx, np.polyval(np.polyder(c), x), rtol=1e-12)
    np.testing.assert_allclose(gc, [np.sum(x ** (4 - i)) for i in range(5)], rtol=1e-12)


def lennard_jones_energy(pos):
    n = pos.shape[0]
    diff = pos[:, None, :] - pos[None, :, :]
    r2 = np.sum(diff * diff, axis=-1) + np.eye(n)        # eye: no self-interaction, no 0/0
    inv6 = (1.0 / r2) ** 3
    e = 4.0 * (inv6 * inv6 - inv6)
    return 0.5 * np.sum(np.where(np.eye(n) > 0, 0.0, e))


def lj_forces_analytic(pos):
    f = np.zeros_like(pos)
    for i in range(len(pos)):
        for j in range(len(pos)):
            if i != j:
                d = pos[i] - pos[j]
                r2 = d @ d
                f[i] += 24 * (2 / r2 ** 6 - 1 / r2 ** 3) / r2 * d
    return f


def _lattice(seed):
    g = np.stack(np.meshgrid(np.arange(2.0), np.arange(2.0), np.arange(2.0)), -1).reshape(-1, 3) * 1.2
    return g + rng(seed).uniform(-0.1, 0.1, g.shape)


def test_lennard_jones_forces_are_minus_the_energy_gradient():
    pos = _lattice(12)
    forces = -grad(lennard_jones_energy)(pos)
    np.testing.assert_allclose(forces, lj_forces_analytic(pos), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(forces.sum(axis=0), 0.0, atol=1e-9)      # Newton's third law
    assert_tree_close(-forces, fd.jacobian(lennard_jones_energy, (pos,)), rtol=1e-6, atol=1e-6)


def spring_chain_energy(x, k, rest):
    d = x[1:] - x[:-1]
    length = np.sqrt(np.sum(d * d, axis=1))
    return 0.5 * np.sum(k * (length - rest) ** 2)


def test_spring_chain_grad_positions_and_stiffness():
    r = rng(13)
    x = np.cumsum(r.uniform(0.5, 1.5, (6, 2)), axis=0)
    k, rest = r.uniform(1, 2, 5), np.ones(5)
    gx, gk = check_grad(spring_chain_energy, (x, k, rest), argnums=(0, 1))
    np.testing.assert_allclose(gx.sum(axis=0), 0.0, atol=1e-10)   # translation invariance


# ---- linear algebra, attention, kernels ------------------------------------------------------------------

def attention_objective(q, k, v, wout):
    s = q @ k.T / np.sqrt(q.shape[-1])
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p = p / p.sum(axis=-1, keepdims=True)
    return np.sum((p @ v) * wout)


def test_attention_grad_q_k_v():
    r = rng(14)
    q, k, v, w = (r.standard_normal(s) for s in [(3, 4), (5, 4), (5, 2), (3, 2)])
    check_grad(attention_objective, (q, k, v, w), argnums=(0, 1, 2))


def trace_quadratic(a, b):
    return np.trace(a @ a.T @ b)


def test_matrix_trace_grad_is_analytic():
    r = rng(15)
    a, b = r.standard_normal((3, 4)), r.standard_normal((3, 3))
    g = check_grad(trace_quadratic, (a, b))
    np.testing.assert_allclose(g, (b + b.T) @ a, rtol=1e-12)


def rbf_kernel_sum(x, ell):
    d2 = np.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1)
    return np.sum(np.exp(-0.5 * d2 / ell ** 2))


def test_rbf_kernel_grad_wrt_points_and_lengthscale():
    x = rng(16).standard_normal((5, 2))
    check_grad(rbf_kernel_sum, (x, np.array(0.8)), argnums=(0, 1))


def cosine_similarity(a, b):
    return np.sum(a * b) / np.sqrt(np.sum(a * a) * np.sum(b * b))


def test_cosine_similarity_grad_is_orthogonal_to_a():
    r = rng(17)
    a, b = r.standard_normal(6), r.standard_normal(6)
    g = check_grad(cosine_similarity, (a, b))
    np.testing.assert_allclose(g @ a, 0.0, atol=1e-12)     # scale invariance


def zscore_objective(x, w):
    z = (x - x.mean(axis=0)) / x.std(axis=0)
    return np.sum(np.tanh(z) * w)


def test_standardization_grad():
    r = rng(18)
    check_grad(zscore_objective, (r.standard_normal((6, 3)), r.standard_normal((6, 3))))


def cumulative_objective(x):
    return np.sum(np.cumsum(x) ** 2) + np.sum(np.cumprod(1.0 + 0.1 * x))


def test_cumsum_cumprod_grad():
    check_grad(cumulative_objective, (rng(19).uniform(-1, 1, 7),))


# ---- indexing and functional updates ------------------------------------------------------------------

def scatter_objective(x, v):
    y = x.copy()
    y[1:3] = v * 2.0
    y[0] += np.sin(v[0])
    return np.sum(y ** 3)


def test_functional_update_grad_x_and_v():
    r = rng(20)
    gx, gv = check_grad(scatter_objective, (r.standard_normal(5), r.standard_normal(2)), argnums=(0, 1))
    assert gx[1] == 0.0 and gx[2] == 0.0        # overwritten entries do not reach the output


def gather_objective(table, idx):
    return np.sum(np.tanh(table[idx]) * np.arange(idx.shape[0])[:, None])


def test_gather_with_runtime_index_grad_accumulates_duplicates():
    table = rng(21).standard_normal((5, 3))
    idx = np.array([4, 0, 4, 2], np.int64)
    g = check_grad(gather_objective, (table, idx))
    want = np.zeros_like(table)
    for k, i in enumerate(idx):
        want[i] += k * (1 - np.tanh(table[i]) ** 2)
    np.testing.assert_allclose(g, want, rtol=1e-12)


# ---- control flow --------------------------------------------------------------------------------------

def clipped(x):
    if x.sum() > 0:          # a data-dependent if: a real branch
        return (x ** 2).sum()
    return -np.sin(x).sum()


@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["true-branch", "false-branch"])
def test_data_dependent_if_both_branches(sign):
    x = sign * rng(22).uniform(0.1, 1.0, 4)
    g = check_grad(clipped, (x,))
    np.testing.assert_allclose(g, 2 * x if sign > 0 else -np.cos(x), rtol=1e-12)


def euler_ode(x0, a):
    x = x0
    for _ in range(10):      # a static loop, unrolled at compile time
        x = x + 0.1 * (a * x - x ** 3)
    return np.sum(x)


def test_static_loop_euler_integrator_grad():
    x0, a = rng(23).uniform(-1, 1, 3), np.array(0.7)
    check_grad(euler_ode, (x0, a), argnums=(0, 1))


# ---- pytrees, argnums, aux ------------------------------------------------------------------------------

def tuple_loss(pair, scale):
    a, b = pair
    return scale * np.sum(a * np.exp(b))


def test_tuple_argument_gives_tuple_gradient():
    r = rng(24)
    pair = (r.standard_normal(3), r.standard_normal(3))
    g = check_grad(tuple_loss, (pair, 2.0))
    assert isinstance(g, tuple) and len(g) == 2
    np.testing.assert_allclose(g[0], 2.0 * np.exp(pair[1]), rtol=1e-12)


def nested_loss(params):
    return np.sum(params["layer"][0] ** 2) * np.sum(params["layer"][1]) + np.sum(np.sin(params["bias"]))


def test_nested_dict_of_tuples_gradient_structure():
    r = rng(25)
    params = {"layer": (r.standard_normal(3), r.standard_normal(2)), "bias": r.standard_normal(4)}
    g = check_grad(nested_loss, (params,))
    assert isinstance(g["layer"], tuple)


def test_negative_argnums():
    w, x, y = _logistic_data(seed=26)
    got = grad(lambda y_, x_, w_: logistic_loss(w_, x_, y_), argnums=-1)(y, x, w)
    np.testing.assert_allclose(got, fd.jacobian(logistic_loss, (w, x, y), 0), rtol=RTOL, atol=ATOL)


def loss_with_aux(w, x):
    pred = np.tanh(x @ w)
    return np.sum(pred ** 2), {"pred": pred, "n": x.shape[0]}


def test_has_aux_returns_aux_untouched():
    r = rng(27)
    w, x = r.standard_normal(3), r.standard_normal((4, 3))
    g, aux = grad(loss_with_aux, has_aux=True)(w, x)
    np.testing.assert_allclose(g, fd.jacobian(lambda w_, x_: loss_with_aux(w_, x_)[0], (w, x)), rtol=RTOL,
                               atol=ATOL)
    np.testing.assert_allclose(aux["pred"], np.tanh(x @ w), rtol=1e-13)
    assert int(aux["n"]) == 4


def test_grad_and_value():
    w, x, y = _logistic_data(seed=28)
    g, v = grad_and_value(logistic_loss)(w, x, y)
    np.testing.assert_allclose(v, logistic_loss(w, x, y), rtol=1e-13)
    np.testing.assert_allclose(g, fd.jacobian(logistic_loss, (w, x, y)), rtol=RTOL, atol=ATOL)


def test_grad_and_value_with_aux_and_argnums():
    r = rng(29)
    w, x = r.standard_normal(3), r.standard_normal((4, 3))
    (gw, gx), (v, aux) = grad_and_value(loss_with_aux, argnums=(0, 1), has_aux=True)(w, x)
    f = lambda w_, x_: loss_with_aux(w_, x_)[0]  # noqa: E731
    np.testing.assert_allclose(v, f(w, x), rtol=1e-13)
    np.testing.assert_allclose(gw, fd.jacobian(f, (w, x), 0), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(gx, fd.jacobian(f, (w, x), 1), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(aux["pred"], np.tanh(x @ w), rtol=1e-13)


def test_python_float_argument_and_scalar_output():
    got = grad(lambda t: np.sin(t) * t ** 2)(0.7)
    np.testing.assert_allclose(got, np.cos(0.7) * 0.49 + 2 * 0.7 * np.sin(0.7), rtol=1e-13)


SCALE = np.array([1.0, -2.0, 0.5])


def closure_loss(x):
    return np.sum(SCALE * np.exp(x))        # a global array: a constant of the kernel


def test_closure_over_array_constant():
    x = rng(30).standard_normal(3)
    np.testing.assert_allclose(check_grad(closure_loss, (x,)), SCALE * np.exp(x), rtol=1e-12)


helper_kernel = jit(lambda z: np.tanh(z) * z)


def calls_a_kernel(x):
    return np.sum(helper_kernel(x) ** 2)


def test_grad_through_a_call_to_another_kernel():
    check_grad(calls_a_kernel, (rng(31).standard_normal(5),))


def keyword_loss(x, *, power=2):
    return np.sum(np.abs(x) ** power)


def test_keyword_argument_is_passed_through():
    x = rng(32).uniform(0.5, 1.5, 4)
    np.testing.assert_allclose(grad(keyword_loss)(x, power=3), 3 * x ** 2, rtol=1e-12)


# ---- vjp, jvp, linearize -----------------------------------------------------------------------------------

def vector_fn(x, y):
    return np.stack([np.sin(x[0]) * y, x[1] * np.exp(y), x[0] * x[1] + y])


def test_vjp_matches_transposed_numerical_jacobian():
    x, y = np.array([0.3, -1.1]), np.array(0.4)
    out, vjp_fn = vjp(vector_fn, x, y)
    np.testing.assert_allclose(out, vector_fn(x, y), rtol=1e-13)
    u = np.array([1.0, -2.0, 0.5])
    gx, gy = vjp_fn(u)
    np.testing.assert_allclose(gx, u @ fd.jacobian(vector_fn, (x, y), 0), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(gy, u @ fd.jacobian(vector_fn, (x, y), 1), rtol=RTOL, atol=ATOL)


def test_vjp_with_aux():
    r = rng(33)
    w, x = r.standard_normal(3), r.standard_normal((4, 3))
    out, vjp_fn, aux = vjp(loss_with_aux, w, x, has_aux=True)
    gw, gx = vjp_fn(np.float64(2.0))
    f = lambda w_, x_: loss_with_aux(w_, x_)[0]  # noqa: E731
    np.testing.assert_allclose(gw, 2 * fd.jacobian(f, (w, x), 0), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(aux["pred"], np.tanh(x @ w), rtol=1e-13)


def test_jvp_matches_numerical_jacobian_product():
    x, y = np.array([0.3, -1.1]), np.array(0.4)
    tx, ty = np.array([0.5, 2.0]), np.array(-1.0)
    out, t = jvp(vector_fn, (x, y), (tx, ty))
    want = fd.jacobian(vector_fn, (x, y), 0) @ tx + fd.jacobian(vector_fn, (x, y), 1) * ty
    np.testing.assert_allclose(out, vector_fn(x, y), rtol=1e-13)
    np.testing.assert_allclose(t, want, rtol=RTOL, atol=ATOL)


def test_linearize_many_tangents():
    r = rng(34)
    params, x, t = _mlp_params(r), r.standard_normal((3, 4)), r.standard_normal((3, 2))
    f = lambda xx: mlp_loss(params, xx, t)  # noqa: E731
    out, jvp_fn = linearize(f, x)
    np.testing.assert_allclose(out, f(x), rtol=1e-13)
    g = fd.jacobian(f, (x,))
    for k in range(3):
        v = r.standard_normal(x.shape)
        np.testing.assert_allclose(jvp_fn(v), np.sum(g * v), rtol=RTOL, atol=ATOL)
