"""eigh, eigvalsh, svd, svdvals, pinv, lstsq, matrix_rank: the eigen- and singular vectors by
their invariants (A V = V diag(w), VᴴV = I, U diag(s) Vh = A) and by the documented phase
convention against NumPy's; values against NumPy; complex, batched, symbolic sizes, degenerate
spectra; derivatives of vector-dependent functions invariant to the phase against finite
differences; the hessian of sum(eigvalsh(A)**2) against its closed form.

The kernels are module-level and shared by the parametrized cases."""
from __future__ import annotations

import re

import numpy as np
import pytest

import compiler
from compiler import errors, jit
from compiler.primitives.spectral import ref_phases

RNG = np.random.default_rng(20261126)
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def rand(shape, dtype, rng=RNG):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def tol(dtype):
    return 2e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12


def hermitian_lower(a):
    """The matrix LAPACK's eigh reads (UPLO='L'): the lower triangle and its mirror."""
    h = np.tril(a) + np.conj(np.swapaxes(np.tril(a, -1), -1, -2))
    d = np.real(np.diagonal(a, 0, -2, -1))
    idx = np.arange(a.shape[-1])
    h[..., idx, idx] = d
    return h


def mh(x):
    return np.conj(np.swapaxes(x, -1, -2))


@jit
def eigh_l(a):
    return np.linalg.eigh(a)


@jit
def eigh_u(a):
    return np.linalg.eigh(a, UPLO="U")


@jit
def svd_full(a):
    return np.linalg.svd(a)


@jit
def svd_thin(a):
    return np.linalg.svd(a, full_matrices=False)


# ---- eigh --------------------------------------------------------------------------------------

#: every dtype on 3x3; the other shapes in two dtypes each (compile time)
EIGH_CASES = [(d, (3, 3)) for d in DTYPES] + [(np.float64, (5, 2, 2)), (np.complex64, (5, 2, 2)),
                                             (np.float32, (4, 6, 6)), (np.complex128, (4, 6, 6))]
SVD_CASES = [(d, (3, 3)) for d in DTYPES] + [(np.float64, (4, 2)), (np.complex128, (4, 2)),
                                            (np.float32, (2, 3, 5)), (np.complex64, (2, 3, 5))]


@pytest.mark.parametrize("dtype,shape", EIGH_CASES)
def test_eigh_invariants_and_numpy(dtype, shape):
    a = rand(shape, dtype)
    w, v = eigh_l(a)
    h = hermitian_lower(a)
    scale = np.abs(h).max()
    assert w.dtype == np.linalg.eigvalsh(a).dtype and v.dtype == a.dtype
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), atol=tol(dtype) * scale * 10)
    assert np.all(np.diff(w, axis=-1) >= 0)                                    # ascending
    n = shape[-1]
    assert np.abs(h @ v - v * w[..., None, :]).max() <= tol(dtype) * scale * 20
    assert np.abs(mh(v) @ v - np.eye(n)).max() <= tol(dtype) * 20
    # the documented convention: NumPy's vectors scaled so their largest entry is real positive
    wn, vn = np.linalg.eigh(h.astype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64))
    vn = vn * ref_phases(vn)[..., None, :]
    np.testing.assert_allclose(v, vn, atol=tol(dtype) * 100)


def test_eigh_upper_triangle():
    a = rand((3, 4, 4), np.complex128)
    w, v = eigh_u(a)
    h = mh(hermitian_lower(mh(a)))          # the upper triangle, mirrored
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a, UPLO="U"), atol=1e-12)
    np.testing.assert_allclose(h @ v, v * w[..., None, :], atol=1e-12)


def test_eigh_larger_loop_form():
    """n > 4: LAPACK's dsyevd where the kernel has it, else round-robin Jacobi steps in a for
    loop (both paths: tests/linalg/test_lapack_spectral.py)."""
    a = rand((2, 17, 17), np.float64)
    w, v = eigh_l(a)
    h = hermitian_lower(a)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), atol=1e-12 * 17)
    np.testing.assert_allclose(h @ v, v * w[..., None, :], atol=1e-11)
    np.testing.assert_allclose(mh(v) @ v, np.broadcast_to(np.eye(17), (2, 17, 17)), atol=1e-12)


@pytest.mark.parametrize("n", [3, 6])
def test_eigh_degenerate_spectrum(n):
    """Repeated eigenvalues (identity, a rotated diag(1, 1, 2, ...)): values exact to rounding,
    the vectors still an orthonormal eigenbasis."""
    q, _ = np.linalg.qr(RNG.standard_normal((n, n)))
    d = np.ones(n)
    d[-1] = 2.0
    cases = np.stack([np.eye(n), (q * d) @ q.T, np.zeros((n, n))])
    w, v = eigh_l(cases)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(cases), atol=1e-13)
    np.testing.assert_allclose(cases @ v, v * w[..., None, :], atol=1e-13)
    np.testing.assert_allclose(mh(v) @ v, np.broadcast_to(np.eye(n), (3, n, n)), atol=1e-13)


def test_eigvalsh_symbolic_sizes():
    k = jit(lambda a: np.linalg.eigvalsh(a), signature="f64[b,n,n]")
    for n in (1, 3, 7):
        a = rand((2, n, n), np.float64)
        np.testing.assert_allclose(k(a), np.linalg.eigvalsh(a), atol=1e-12 * n)


def test_svdvals_symbolic_square():
    k = jit(lambda a: np.linalg.svdvals(a), signature="f64[n,n]")
    for n in (2, 5):
        a = rand((n, n), np.float64)
        np.testing.assert_allclose(k(a), np.linalg.svdvals(a), atol=1e-12 * n)


def test_eigh_vmap():
    a = rand((6, 3, 3), np.float64)
    w, v = compiler.vmap(lambda x: np.linalg.eigh(x))(a)
    for i in range(6):
        wi, vi = eigh_l(a[i])
        np.testing.assert_allclose(w[i], wi, atol=1e-14)
        np.testing.assert_allclose(v[i], vi, atol=1e-13)


# ---- svd ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,shape", SVD_CASES)
def test_svd_invariants_and_numpy(dtype, shape):
    a = rand(shape, dtype)
    m, n = shape[-2:]
    k = min(m, n)
    for kernel, full in ((svd_full, True), (svd_thin, False)):
        u, s, vh = kernel(a)
        un, sn, vhn = np.linalg.svd(a, full_matrices=full)
        assert u.shape == un.shape and s.shape == sn.shape and vh.shape == vhn.shape
        assert s.dtype == sn.dtype and u.dtype == a.dtype
        np.testing.assert_allclose(s, sn, atol=tol(dtype) * 10)
        np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, atol=tol(dtype) * 20)
        np.testing.assert_allclose(mh(u) @ u, np.eye(u.shape[-1]) + 0 * u[..., :1, :1], atol=tol(dtype) * 20)
        np.testing.assert_allclose(vh @ mh(vh), np.eye(vh.shape[-2]) + 0 * vh[..., :1, :1],
                                   atol=tol(dtype) * 20)
        ph = ref_phases(mh(vhn[..., :k, :]))
        np.testing.assert_allclose(vh[..., :k, :], vhn[..., :k, :] * np.conj(ph)[..., :, None],
                                   atol=tol(dtype) * 100)
        np.testing.assert_allclose(u[..., :k], un[..., :k] * ph[..., None, :], atol=tol(dtype) * 100)


def test_svd_rank_deficient_completes_u():
    """Zero singular values: U is still unitary (completed by Gram-Schmidt), A reconstructed."""
    x, y = RNG.standard_normal(5), RNG.standard_normal(3)
    cases = np.stack([np.outer(x, y), np.zeros((5, 3)), np.eye(5, 3)])
    u, s, vh = svd_full(cases)
    np.testing.assert_allclose(s, np.linalg.svd(cases, compute_uv=False), atol=1e-14)
    np.testing.assert_allclose(mh(u) @ u, np.broadcast_to(np.eye(5), (3, 5, 5)), atol=1e-13)
    np.testing.assert_allclose(vh @ mh(vh), np.broadcast_to(np.eye(3), (3, 3, 3)), atol=1e-13)
    np.testing.assert_allclose((u[..., :3] * s[..., None, :]) @ vh, cases, atol=1e-13)


def test_svd_hermitian_flag():
    a = rand((3, 3), np.float64)
    a = a + a.T
    u, s, vh = jit(lambda a: np.linalg.svd(a, hermitian=True))(a)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), atol=1e-13)
    np.testing.assert_allclose((u * s) @ vh, a, atol=1e-13)


# ---- built on the SVD --------------------------------------------------------------------------

@jit
def _lstsq(a, y):
    return np.linalg.lstsq(a, y)


def test_lstsq_all_outputs():
    a, y = rand((6, 3), np.float64), rand((6, 2), np.float64)
    got, ref = _lstsq(a, y), np.linalg.lstsq(a, y)
    for g, r in zip(got, ref):
        assert np.shape(g) == np.shape(r)
        np.testing.assert_allclose(g, r, atol=1e-12)


def test_lstsq_rank_deficient_minimum_norm():
    """Rank-deficient: the minimum-norm solution and the rank as NumPy; the residuals, which NumPy
    leaves empty there (a data-dependent shape), are the residual sums (docs/linalg.md)."""
    x = RNG.standard_normal(6)
    a = np.stack([x, 2 * x, RNG.standard_normal(6)], axis=1)
    y = RNG.standard_normal(6)
    sol, res, rank, s = _lstsq(a, y[:, None])
    ref = np.linalg.lstsq(a, y[:, None])
    np.testing.assert_allclose(sol, ref[0], atol=1e-12)
    assert rank == ref[2] == 2 and ref[1].shape == (0,)
    np.testing.assert_allclose(res, [np.sum((a @ sol - y[:, None]) ** 2)], rtol=1e-12)


def test_errors_name_the_line():
    with pytest.raises(errors.ShapeMismatchError, match="square"):
        jit(lambda a: np.linalg.eigh(a))(np.ones((2, 3)))
    with pytest.raises(errors.ShapeMismatchError, match="two-dimensional"):
        jit(lambda a: np.linalg.svd(a))(np.ones(3))
    with pytest.raises(errors.UnsupportedError, match="float16"):
        jit(lambda a: np.linalg.eigvalsh(a))(np.ones((2, 2), np.float16))
    with pytest.raises(errors.UnsupportedError, match="UPLO"):
        jit(lambda a: np.linalg.eigh(a, UPLO="X"))(np.ones((2, 2)))


# ---- derivatives ---------------------------------------------------------------------------------

def central(f, x, eps=1e-6):
    """d f / d Re x + i d f / d Im x by central differences (the convention of docs/complex.md)."""
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = eps
        g[idx] = (f(x + e) - f(x - e)) / (2 * eps)
        if np.iscomplexobj(x):
            g[idx] += 1j * (f(x + 1j * e) - f(x - 1j * e)) / (2 * eps)
    return g


def eig_weighted(a):
    """Depends on the eigenvectors only through |v|^2: invariant to their phases."""
    w, v = np.linalg.eigh(a)
    n = a.shape[-1]
    return np.sum(np.abs(v) ** 2 * np.sin(w)[None, :] * np.arange(1, n + 1)[:, None])


def projector(a):
    """V diag(f(w)) Vᴴ, a matrix function: invariant to the phases."""
    w, v = np.linalg.eigh(a)
    p = (v * np.tanh(w)[None, :]) @ np.conj(v.T)
    return np.sum(np.real(p) * np.arange(a.size).reshape(a.shape))


def svd_weighted(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(np.abs(u) ** 2 * s[None, :]) + np.sum(np.abs(vh) ** 2 * np.cos(s)[:, None])


_GRADS = {f.__name__: compiler.grad(f) for f in (eig_weighted, projector, svd_weighted)}


@pytest.mark.parametrize("fn,shape", [(eig_weighted, (3, 3)), (projector, (3, 3)), (projector, (6, 6)),
                                      (svd_weighted, (4, 3)), (svd_weighted, (2, 3))])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_vector_dependent_gradients(fn, shape, dtype):
    a = rand(shape, dtype)
    np.testing.assert_allclose(_GRADS[fn.__name__](a), central(fn, a), atol=1e-7)


def test_hessian_of_sum_of_squared_eigenvalues():
    """sum(eigvalsh(A)**2) = ||H||_F^2 with H built from the lower triangle: the hessian is
    2 on the diagonal entries, 4 on the strictly lower ones, 0 on the upper ones."""
    n = 3
    hess = compiler.hessian(lambda a: np.sum(np.linalg.eigvalsh(a) ** 2))(rand((n, n), np.float64))
    weight = np.where(np.eye(n) == 1, 2.0, np.where(np.tri(n, k=-1) == 1, 4.0, 0.0))
    expect = np.diag(weight.ravel()).reshape(n, n, n, n)
    np.testing.assert_allclose(hess, expect, atol=1e-9)


def test_eigvalsh_gradient_at_a_degenerate_spectrum_is_finite():
    """The identity: eigvalsh's derivative (dw = diag(Vᴴ dA V)) exists, and the 1/(w_j - w_i)
    factor of the vector term is 0 where values are equal (docs/linalg.md), not inf * 0."""
    g = compiler.grad(lambda a: np.sum(np.linalg.eigvalsh(a) * np.array([1.0, 1.0, 1.0])))(np.eye(3))
    np.testing.assert_allclose(g, np.eye(3), atol=1e-14)


def test_full_matrices_derivative_is_refused_at_the_line():
    def f(a):
        u, s, vh = np.linalg.svd(a)
        return np.sum(u)
    with pytest.raises(errors.UnsupportedError, match="full_matrices=False") as info:
        compiler.grad(f)(np.ones((3, 2)))
    assert "test_spectral.py" in str(info.value)


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_eigh_four_by_four(dtype):
    """n = 4: the unrolled sweep with the stacked matrices carried (docs/linalg.md)."""
    a = rand((7, 4, 4), dtype)
    w, v = eigh_l(a)
    h = hermitian_lower(a)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), atol=tol(dtype) * 40)
    np.testing.assert_allclose(h @ v, v * w[..., None, :], atol=tol(dtype) * 80)
    np.testing.assert_allclose(mh(v) @ v, np.broadcast_to(np.eye(4), (7, 4, 4)), atol=tol(dtype) * 20)


def test_svd_of_unordered_symbolic_sizes_is_refused():
    with pytest.raises(errors.UnsupportedError, match="larger must be known"):
        jit(lambda a: np.linalg.svdvals(a), signature="f64[m,n]")
    with pytest.raises(errors.UnsupportedError, match="larger must be known"):
        jit(lambda a: np.linalg.norm(a, 2), signature="f64[m,n]")


def test_linalg_error_where_numpy_raises():
    """NumPy's SVD-based functions raise LinAlgError on a NaN (lstsq on an infinity too); eigh
    does not (NaN results)."""
    bad = np.array([[np.nan, 0.0], [0.0, 1.0]])
    calls = [lambda a: np.linalg.svdvals(a), lambda a: np.linalg.svd(a)[1], lambda a: np.linalg.pinv(a),
             lambda a: np.linalg.matrix_rank(a), lambda a: np.linalg.cond(a), lambda a: np.linalg.norm(a, 2)]
    for fn in calls:
        with pytest.raises(np.linalg.LinAlgError, match="SVD did not converge"):
            fn(bad)
        k = jit(fn)
        with pytest.raises(np.linalg.LinAlgError, match="SVD did not converge"):
            k(bad)
        k(np.eye(2))                                   # the same kernel runs on good input
    inf = np.array([[np.inf, 0.0], [0.0, 1.0]])
    with pytest.raises(np.linalg.LinAlgError, match="Linear Least Squares"):
        _lstsq(inf, np.ones(2))
    assert np.isnan(eigh_l(bad)[0]).any() and np.isnan(np.linalg.eigh(bad)[0]).any()


def test_thin_svd_of_a_tall_matrix_needs_no_square_temporary():
    """Completing U (rank-deficient columns) works on m x k values, not an m x m projector:
    the kernel's temporaries for a 2000 x 3 matrix stay far below 2000 x 2000 doubles."""
    a = RNG.standard_normal((2000, 3))
    a[:, 2] = a[:, 0]                       # rank 2: one column of U is completed
    k = jit(lambda a: np.linalg.svd(a, full_matrices=False))
    u, s, vh = k(a)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), atol=1e-12)
    np.testing.assert_allclose(mh(u) @ u, np.eye(3), atol=1e-13)
    np.testing.assert_allclose((u * s) @ vh, a, atol=1e-12)
    sizes = [int(n) for n in re.findall(r"@malloc\(i64 (\d+)\)", k.lower(a).llvm_optimized)]
    assert sizes and max(sizes) < 2000 * 2000 * 8 // 10
