"""np.linalg.cholesky and np.linalg.qr compiled (docs/linalg.md "Cholesky and QR"): against
NumPy (LAPACK) for every dtype, stacked and symbolic shapes, both code paths (unrolled for
static n <= 8, loops beyond), np.linalg.LinAlgError where NumPy raises it (also under vmap),
NaN inputs, and derivatives against finite differences, up to the gradient and Hessian of a
Gaussian log-likelihood. The generic forward/vmap/jvp/vjp tests are the OpInfo entries
``linalg.*`` of tests/ops/opinfo.py.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import compiler
from compiler import errors, grad, hessian, jacfwd, jacrev, jit, vmap

DTYPES = [np.float64, np.float32, np.complex128, np.complex64]
#: entries of the factors: a few units of roundoff of the dtype, times the matrix size
TOL = {np.float64: 1e-12, np.complex128: 1e-12, np.float32: 2e-5, np.complex64: 2e-5}


def _rand(rng: np.random.Generator, shape: tuple[int, ...], dtype) -> np.ndarray:
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _spd(rng: np.random.Generator, shape: tuple[int, ...], dtype) -> np.ndarray:
    x = _rand(rng, shape, dtype)
    n = shape[-1]
    return (x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)).astype(dtype)


def _close(got: np.ndarray, want: np.ndarray, dtype) -> None:
    assert got.dtype == want.dtype
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=0, atol=TOL[dtype] * scale * max(want.shape[-1:] or [1]))


@jit
def chol(a):
    return np.linalg.cholesky(a)


@jit
def chol_upper(a):
    return np.linalg.cholesky(a, upper=True)


@jit
def qr_reduced(a):
    return np.linalg.qr(a)


@jit
def qr_complete(a):
    return np.linalg.qr(a, mode="complete")


@jit
def qr_r(a):
    return np.linalg.qr(a, mode="r")


# ---- cholesky -----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 4, 4), (3, 11, 11), (0, 0)])
def test_cholesky_matches_numpy(dtype, shape):
    """Unrolled (n <= 8) and looped (n = 11) code, stacks, an empty matrix; upper=True; the
    triangle NumPy does not read (upper for the lower factor) is ignored here too."""
    rng = np.random.default_rng(1)
    a = _spd(rng, shape, dtype) if shape[-1] else np.zeros(shape, dtype)
    noisy = a + np.triu(_rand(rng, shape, dtype), 1)       # NumPy reads the lower triangle
    _close(chol(noisy), np.linalg.cholesky(noisy), dtype)
    noisy_up = a + np.tril(_rand(rng, shape, dtype), -1)
    _close(chol_upper(noisy_up), np.linalg.cholesky(noisy_up, upper=True), dtype)


def test_cholesky_integer_input_is_float64():
    a = np.array([[4, 2], [2, 3]])
    got = chol(a)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, np.linalg.cholesky(a), rtol=1e-15)


@pytest.mark.parametrize("n", [3, 10])
def test_cholesky_symbolic_sizes(n):
    """One kernel for every size (signature=): the loop code with run-time trip counts."""
    f = jit(lambda a: np.linalg.cholesky(a), signature="f64[b, n, n]")
    a = _spd(np.random.default_rng(n), (2, n, n), np.float64)
    _close(f(a), np.linalg.cholesky(a), np.float64)


def _numpy_raises(a: np.ndarray) -> bool:
    try:
        np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        return True
    return False


NOT_PD = {
    "negative definite": -np.eye(3),
    "indefinite": np.array([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]]),
    "singular": np.ones((3, 3)),
    "inf below the diagonal": np.array([[4.0, 0, 0], [np.inf, 4, 0], [0, 1, 4]]),
}


@pytest.mark.parametrize("name", list(NOT_PD))
@pytest.mark.parametrize("f", [chol, jit(lambda a: np.linalg.cholesky(a[None].repeat(2, 0)))],
                         ids=["one", "stacked"])
def test_not_positive_definite_raises_linalgerror(name, f):
    a = NOT_PD[name]
    assert _numpy_raises(a)
    with pytest.raises(np.linalg.LinAlgError, match="Matrix is not positive definite"):
        f(a)


def test_not_positive_definite_in_loop_code_and_stack():
    """One bad matrix in a stack of 11x11 ones (the loop code): the whole call raises, as in NumPy."""
    a = _spd(np.random.default_rng(3), (3, 11, 11), np.float64)
    a[1, 5, 5] = -100.0
    assert _numpy_raises(a)
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        chol(a)


NUMPY_ACCEPTS = {         # (NumPy's potrf, OpenBLAS's, stops at a pivot <= 0, not at a NaN)
    "nan above the diagonal": np.array([[4.0, np.nan], [1.0, 4.0]]),
    "nan on the diagonal": np.diag([1.0, np.nan, 1.0]),
    "nan below the diagonal": np.array([[4.0, 0, 0], [1, 4, 0], [np.nan, 1, 4]]),
    "nan first": np.diag([np.nan, 1.0]),
    "inf on the diagonal": np.diag([np.inf, 1.0]),
}


@pytest.mark.parametrize("name", list(NUMPY_ACCEPTS))
def test_values_numpy_accepts(name):
    """Where NumPy does not raise, neither do we, with NumPy's values (nan where it has nan),
    in the unrolled and in the loop code (the same matrix in the corner of a 10x10 one)."""
    a = NUMPY_ACCEPTS[name]
    with np.errstate(all="ignore"):
        want = np.linalg.cholesky(a)
    np.testing.assert_allclose(chol(a), want, rtol=1e-15)
    big = 4 * np.eye(10)
    big[:len(a), :len(a)] = a
    with np.errstate(all="ignore"):
        want = np.linalg.cholesky(big)
    np.testing.assert_allclose(chol(big), want, rtol=1e-15)


def test_linalgerror_under_vmap_checks_every_element():
    batch = _spd(np.random.default_rng(4), (4, 3, 3), np.float64)
    f = vmap(lambda a: np.linalg.cholesky(a))
    _close(f(batch), np.linalg.cholesky(batch), np.float64)
    batch[2] = NOT_PD["indefinite"]
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        f(batch)


def test_linalgerror_names_the_users_line():
    with pytest.raises(np.linalg.LinAlgError) as info:
        chol(-np.eye(2))
    assert "test_factor.py" in str(info.value)


def test_user_errors_at_compile_time():
    with pytest.raises(errors.ShapeMismatchError, match="square"):
        chol(np.ones((2, 3)))
    with pytest.raises(errors.ShapeMismatchError, match="two-dimensional"):
        chol(np.ones(3))


# ---- qr ---------------------------------------------------------------------------------------

QR_CASES = [(dt, shape) for dt in (np.float64, np.float32)
            for shape in [(3, 3), (5, 3), (3, 5), (2, 4, 4), (1, 4), (4, 1), (12, 10), (10, 12)]] + \
           [(dt, shape) for dt in (np.complex128, np.complex64) for shape in [(3, 3), (4, 2), (2, 3), (10, 9)]]


@pytest.mark.parametrize("dtype, shape", QR_CASES)
def test_qr_matches_numpy_in_every_mode(dtype, shape):
    """Q and R equal NumPy's (LAPACK's signs: r's diagonal is real for complex input), and the
    invariants hold: A = Q R, Q^H Q = I, R upper triangular."""
    a = _rand(np.random.default_rng(5), shape, dtype)
    q, r = qr_reduced(a)
    qn, rn = np.linalg.qr(a)
    _close(q, qn, dtype)
    _close(r, rn, dtype)
    qc, rc = qr_complete(a)
    qcn, rcn = np.linalg.qr(a, mode="complete")
    _close(qc, qcn, dtype)
    _close(rc, rcn, dtype)
    _close(qr_r(a), np.linalg.qr(a, mode="r"), dtype)
    _close(q @ r, a, dtype)
    k = min(shape[-2:])
    _close(np.conj(np.swapaxes(qc, -1, -2)) @ qc, np.broadcast_to(np.eye(shape[-2], dtype=dtype), qc.shape), dtype)
    assert np.all(np.tril(r, -1) == 0)
    if np.dtype(dtype).kind == "c":
        assert np.all(np.diagonal(r, axis1=-2, axis2=-1).imag == 0)
    assert q.shape == shape[:-1] + (k,) and r.shape == shape[:-2] + (k, shape[-1])


def test_qr_rank_deficient_matches_numpy():
    """A zero column and a repeated column: no reflection where the column is already
    reduced (LAPACK's tau = 0), so R keeps NumPy's zeros and signs."""
    a = np.array([[1.0, 0.0, 1.0], [2.0, 0.0, 2.0], [3.0, 0.0, 3.0], [4.0, 0.0, 4.0]])
    for got, want in zip(qr_complete(a), np.linalg.qr(a, mode="complete")):
        np.testing.assert_allclose(got, want, atol=1e-14)


def test_qr_symbolic_sizes():
    """One kernel for tall and wide matrices: k = min(m, n) at run time."""
    f = jit(lambda a: np.linalg.qr(a), signature="f64[m, n]")
    for shape in [(5, 3), (3, 5), (4, 4)]:
        a = _rand(np.random.default_rng(6), shape, np.float64)
        for got, want in zip(f(a), np.linalg.qr(a)):
            _close(got, want, np.float64)


def test_qr_result_is_numpys_namedtuple():
    res = jit(lambda a: np.linalg.qr(a))(np.eye(2))
    assert type(res).__name__ == "QRResult" and res.Q.shape == (2, 2) and res.R.shape == (2, 2)


def test_qr_modes_refused_or_deprecated():
    with pytest.raises(errors.UnsupportedError, match="raw"):
        jit(lambda a: np.linalg.qr(a, mode="raw"))(np.eye(2))
    with pytest.warns(DeprecationWarning, match="'full' option is deprecated"):
        got = jit(lambda a: np.linalg.qr(a, mode="full"))(np.eye(3) * 2)
    np.testing.assert_allclose(got[1], np.linalg.qr(np.eye(3) * 2)[1])


def test_qr_vmap_matches_loop():
    a = _rand(np.random.default_rng(7), (3, 5, 2), np.float64)
    q, r = vmap(lambda x: np.linalg.qr(x))(a)
    for i in range(3):
        qn, rn = np.linalg.qr(a[i])
        _close(q[i], qn, np.float64)
        _close(r[i], rn, np.float64)


# ---- derivatives ----------------------------------------------------------------------------

def _fd_jacobian(f, x: np.ndarray) -> np.ndarray:
    """Central differences of the uncompiled NumPy function, column by column."""
    eps = 1e-6
    y0 = np.asarray(f(x))
    jac = np.zeros(y0.shape + x.shape)
    for idx in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        jac[(...,) + idx] = (np.asarray(f(xp)) - np.asarray(f(xm))) / (2 * eps)
    return jac


def chol_of(a):
    return np.linalg.cholesky(a)


def q_of(a):
    return np.linalg.qr(a)[0]


def r_of(a):
    return np.linalg.qr(a)[1]


def r_mode(a):
    return np.linalg.qr(a, mode="r")


def r_complete(a):
    return np.linalg.qr(a, mode="complete")[1]


def q_complete(a):
    return np.linalg.qr(a, mode="complete")[0]


@pytest.mark.parametrize("n", [3, 10])
def test_cholesky_jacobians_vs_finite_differences(n):
    """Both modes, unrolled (3) and loop (10) code; the upper triangle has zero derivative."""
    rng = np.random.default_rng(8)
    a = _spd(rng, (n, n), np.float64) + np.triu(rng.standard_normal((n, n)), 1)
    want = _fd_jacobian(chol_of, a)
    np.testing.assert_allclose(jacrev(chol_of)(a), want, atol=1e-7)
    np.testing.assert_allclose(jacfwd(chol_of)(a), want, atol=1e-7)


@pytest.mark.parametrize("f, shape", [(q_of, (4, 3)), (q_of, (3, 5)), (q_of, (10, 9)), (r_of, (4, 3)),
                                      (r_of, (3, 3)), (r_of, (3, 5)), (r_mode, (4, 3)), (r_complete, (4, 2))],
                         ids=["Q tall", "Q wide", "Q loop", "R tall", "R square", "R wide", "mode r",
                              "complete R"])
def test_qr_jacobians_vs_finite_differences(f, shape):
    """Reverse and forward mode (forward mode refuses complete R of a tall matrix: its Q has
    no derivative, and forward mode computes both)."""
    a = np.eye(*shape) + 0.3 * np.random.default_rng(9).standard_normal(shape)
    want = _fd_jacobian(f, a)
    np.testing.assert_allclose(jacrev(f)(a), want, atol=1e-7)
    if f is not r_complete:
        np.testing.assert_allclose(jacfwd(f)(a), want, atol=1e-7)


def test_complete_q_of_a_tall_matrix_has_no_derivative():
    a = np.eye(4, 2) + 0.1
    with pytest.raises(errors.UnsupportedError, match="not unique"):
        jacrev(q_complete)(a)
    with pytest.raises(errors.UnsupportedError, match="not unique"):
        jacfwd(r_complete)(a)


def _complex_fd_grad(f, z: np.ndarray) -> np.ndarray:
    eps, g = 1e-6, np.zeros(z.shape, complex)
    for idx in np.ndindex(z.shape):
        for unit in (1.0, 1j):
            zp, zm = z.copy(), z.copy()
            zp[idx] += eps * unit
            zm[idx] -= eps * unit
            g[idx] += unit * (f(zp) - f(zm)) / (2 * eps)
    return g


_W = _rand(np.random.default_rng(10), (3, 3), np.complex128)
_WQ = _rand(np.random.default_rng(11), (3, 2), np.complex128)
_WR = _rand(np.random.default_rng(12), (2, 4), np.complex128)


def complex_chol_loss(a):
    return np.sum(np.real(_W * np.linalg.cholesky(a)))


def complex_qr_loss(a):
    q, r = np.linalg.qr(a)
    return np.sum(np.real(_WQ[:q.shape[0], :q.shape[1]] * q)) + np.sum(np.real(_WR[:r.shape[0], :r.shape[1]] * r))


@pytest.mark.parametrize("f, shape", [(complex_chol_loss, (3, 3)), (complex_qr_loss, (3, 2)),
                                      (complex_qr_loss, (2, 4))], ids=["cholesky", "qr tall", "qr wide"])
def test_complex_gradients(f, shape):
    """grad of a real loss of complex input is dL/dx + 1j dL/dy (docs/complex.md)."""
    rng = np.random.default_rng(13)
    z = _spd(rng, shape, np.complex128) if f is complex_chol_loss else _rand(rng, shape, np.complex128)
    if f is complex_chol_loss:
        z = z + np.triu(_rand(rng, shape, np.complex128), 1) + 0.5j * np.eye(3)   # unread parts
    np.testing.assert_allclose(grad(f)(z), _complex_fd_grad(f, z), atol=1e-7)


# ---- the statistics use case: a Gaussian log-likelihood through cholesky ---------------------

N = 3


def loglik(theta, x):
    """log N(x; 0, Sigma(theta)), Sigma = B B^T + diag(exp(d)), with L^-1 x by forward substitution."""
    b = theta[:N * N].reshape(N, N)
    sigma = b @ b.T + np.diag(np.exp(theta[N * N:]))
    low = np.linalg.cholesky(sigma)
    z = []
    for i in range(N):
        acc = x[i]
        for k in range(i):
            acc = acc - low[i, k] * z[k]
        z.append(acc / low[i, i])
    zz = np.stack(z)
    return -0.5 * np.sum(zz * zz) - np.sum(np.log(np.diagonal(low))) - 0.5 * N * np.log(2 * np.pi)


def _loglik_numpy(theta, x):
    b = theta[:N * N].reshape(N, N)
    sigma = b @ b.T + np.diag(np.exp(theta[N * N:]))
    sign, logdet = np.linalg.slogdet(sigma)
    return -0.5 * x @ np.linalg.solve(sigma, x) - 0.5 * logdet - 0.5 * N * np.log(2 * np.pi)


def _fd_hessian(f, x: np.ndarray, h: float = 1e-4) -> np.ndarray:
    n, out = x.size, np.zeros((x.size, x.size))
    for i in range(n):
        for j in range(n):
            e_i, e_j = np.eye(n)[i] * h, np.eye(n)[j] * h
            out[i, j] = (f(x + e_i + e_j) - f(x + e_i - e_j) - f(x - e_i + e_j) + f(x - e_i - e_j)) / (4 * h * h)
    return out


def test_gaussian_loglikelihood_gradient_hessian_and_per_sample_gradients():
    """grad, hessian and vmap(grad) over samples of a log-likelihood written with cholesky,
    against finite differences of the same likelihood written with NumPy's slogdet and solve."""
    rng = np.random.default_rng(14)
    theta = np.concatenate([rng.standard_normal(N * N), rng.standard_normal(N) * 0.3])
    xs = rng.standard_normal((5, N))
    assert np.isclose(jit(loglik)(theta, xs[0]), _loglik_numpy(theta, xs[0]), rtol=1e-12)
    np.testing.assert_allclose(grad(loglik)(theta, xs[0]),
                               _fd_jacobian(lambda t: _loglik_numpy(t, xs[0]), theta), atol=1e-6)
    np.testing.assert_allclose(hessian(loglik)(theta, xs[0]),
                               _fd_hessian(lambda t: _loglik_numpy(t, xs[0]), theta), atol=1e-5)
    per_sample = vmap(grad(loglik), in_dims=(None, 0))(theta, xs)
    for i in range(len(xs)):
        np.testing.assert_allclose(per_sample[i], _fd_jacobian(lambda t: _loglik_numpy(t, xs[i]), theta),
                                   atol=1e-6)
