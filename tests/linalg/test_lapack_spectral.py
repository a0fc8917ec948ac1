"""eigh and svd through LAPACK (xsyevd/xheevd, xgesdd) for large matrices and through the
generated Jacobi code without a provider (compiler/primitives/spectral_lapack.py).

Oracles: NumPy's eigvalsh/svd for values, the invariants (A V = V diag(w), VᴴV = I,
U diag(s) Vh = A) and NumPy's vectors scaled by the documented phase convention (written out
here), finite differences for a gradient. A counting provider (ctypes callbacks in front of the
real routines) proves which path ran; a failing one (info = 1) that non-convergence raises
NumPy's LinAlgError. Kernels are module-level, shared by the parametrized cases.
"""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

import compiler
from compiler import jit
from compiler.primitives import spectral_lapack
from runtime import blas

pytestmark = pytest.mark.skipif(blas.provider() is None, reason="NumPy ships no LAPACK here")

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
#: pointer arguments and hidden string lengths of each routine (ILP64 Fortran ABI)
SIGNATURES = {"dsyevd": (11, 2), "ssyevd": (11, 2), "zheevd": (13, 2), "cheevd": (13, 2),
              "dgesdd": (14, 1), "sgesdd": (14, 1), "zgesdd": (15, 1), "cgesdd": (15, 1)}
N = max(spectral_lapack.EIGH_MIN, spectral_lapack.SVD_MIN) + 3     # above both thresholds


class Counting:
    """A provider whose routines count their calls and forward to the real ones; with
    `fail`, they report info = 1 (no convergence) after the real call."""

    def __init__(self, real: blas.Provider, fail: bool = False) -> None:
        self.real, self.fail = real, fail
        self.calls: dict[str, int] = {}
        self._callbacks: dict[str, object] = {}
        self.path, self.pattern = real.path, real.pattern

    def address(self, routine: str) -> int:
        if routine not in SIGNATURES:
            return self.real.address(routine)
        if routine not in self._callbacks:
            ptrs, strings = SIGNATURES[routine]
            proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * ptrs + [ctypes.c_int64] * strings))
            forward = proto(self.real.address(routine))

            def counted(*args: object, routine: str = routine, ptrs: int = ptrs) -> None:
                self.calls[routine] = self.calls.get(routine, 0) + 1
                forward(*args)
                if self.fail:
                    ctypes.c_int64.from_address(args[ptrs - 1]).value = 1     # info
            self._callbacks[routine] = proto(counted)
        return ctypes.cast(self._callbacks[routine], ctypes.c_void_p).value or 0


_PROVIDERS: dict[bool, Counting] = {}     # one each per session: loaded kernels keep the callbacks


def _use(monkeypatch, fail: bool = False) -> Counting:
    if fail not in _PROVIDERS:
        real = blas.provider()
        assert real is not None
        _PROVIDERS[fail] = Counting(real, fail)
    p = _PROVIDERS[fail]
    p.calls.clear()
    monkeypatch.setattr(blas, "_cached", [p])
    return p


@pytest.fixture
def counting(monkeypatch):
    return _use(monkeypatch)


def rand(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def mh(x):
    return np.conj(np.swapaxes(x, -1, -2))


def phases(v):
    """The documented convention: each column scaled so that its entry of largest magnitude
    (the first of equal ones) is real and positive."""
    i = np.argmax(np.abs(v), axis=-2)[..., None, :]
    top = np.take_along_axis(v, i, axis=-2)[..., 0, :]
    return v * (np.conj(top) / np.abs(top))[..., None, :]


def tol(dtype):
    return 5e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12


def _eig(a):
    return np.linalg.eigh(a)


def _svds(a):
    u, s, vh = np.linalg.svd(a)
    return u, s, vh, np.linalg.svdvals(a)


def _svd_thin(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return u, s, vh


def check_eigh(a, w, v, dtype):
    wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
    h = np.tril(a) + mh(np.tril(a, -1))                  # what UPLO='L' reads
    h = (h + mh(h)) / 2
    scale = np.abs(h).max() * a.shape[-1]
    wn, vn = np.linalg.eigh(h.astype(wide))
    np.testing.assert_allclose(w, wn, atol=tol(dtype) * scale)
    assert np.abs(h @ v - v * w[..., None, :]).max() <= tol(dtype) * scale
    assert np.abs(mh(v) @ v - np.eye(a.shape[-1])).max() <= tol(dtype) * a.shape[-1]
    np.testing.assert_allclose(v, phases(vn), atol=tol(dtype) * 1e3)   # distinct eigenvalues


def check_svd(a, got, dtype):
    """got: (u, s, vh) of the thin SVD, or of the full one and svdvals."""
    u, s, vh, sv = got if len(got) == 4 else (*got, got[1])
    m, n = a.shape[-2:]
    k = min(m, n)
    ut, vht = u[..., :k], vh[..., :k, :]
    wide = a.astype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64)
    un, sn, vhn = np.linalg.svd(wide, full_matrices=False)
    scale = sn.max()
    for x in (s, sv):
        np.testing.assert_allclose(x, sn, atol=tol(dtype) * scale * k)
    assert u.shape[-2:] == (m, m if len(got) == 4 else k) and vh.shape[-2:] == (n if len(got) == 4 else k, n)
    for uu, vv in ((u, vh), (ut, vht)):
        np.testing.assert_allclose((uu[..., :k] * s[..., None, :]) @ vv[..., :k, :], a, atol=tol(dtype) * scale * k)
        assert np.abs(mh(uu) @ uu - np.eye(uu.shape[-1])).max() <= tol(dtype) * k * 10
        assert np.abs(vv @ mh(vv) - np.eye(vv.shape[-2])).max() <= tol(dtype) * k * 10
    vn = phases(mh(vhn))            # the convention on V, U alongside
    np.testing.assert_allclose(mh(vht), vn, atol=tol(dtype) * 1e3)
    np.testing.assert_allclose(ut, wide @ vn / sn[..., None, :], atol=tol(dtype) * 1e3)


eig = jit(_eig)
svds = jit(_svds)
svd_thin = jit(_svd_thin)
#: (kernel, its source function, shape, dtype, routine, calls per matrix): each dtype once per
#: routine family (compile time); tall, wide, batched
CASES = [(eig, _eig, (3, N, N), np.float32, "ssyevd", 1), (eig, _eig, (3, N, N), np.float64, "dsyevd", 1),
         (eig, _eig, (N, N), np.complex128, "zheevd", 1),
         (svds, _svds, (2, N + 4, N), np.float64, "dgesdd", 2),
         (svd_thin, _svd_thin, (N, N + 2), np.complex64, "cgesdd", 1),
         (svd_thin, _svd_thin, (N + 3, N), np.complex128, "zgesdd", 1)]    # tall: column-major copy


def _compare(fn, a, got, dtype):
    if fn is _eig:
        check_eigh(a, *got, dtype)
    else:
        check_svd(a, got, dtype)


@pytest.mark.parametrize("kernel, fn, shape, dtype, routine, per_matrix", CASES)
def test_library_path_and_generated_path(kernel, fn, shape, dtype, routine, per_matrix, monkeypatch):
    """The kernel calls LAPACK once per matrix; the same kernel loaded without a provider
    (from the disk cache: no compile) runs the Jacobi code, with the same conventions."""
    counting = _use(monkeypatch)
    a = rand(np.random.default_rng(1), shape, dtype)
    if fn is _eig:
        a = a + mh(a)        # Hermitian: NumPy's vectors are those of the same matrix
    _compare(fn, a, kernel(a), dtype)
    assert counting.calls == {routine: per_matrix * int(np.prod(shape[:-2]))}
    monkeypatch.setattr(blas, "_cached", [None])
    _compare(fn, a, jit(fn)(a), dtype)
    assert counting.calls == {routine: per_matrix * int(np.prod(shape[:-2]))}


def _eig_symbolic(a):
    return np.linalg.eigh(a)


def _svd_symbolic(a):
    return np.linalg.svd(a, full_matrices=False)


def test_symbolic_sizes_on_both_sides_of_the_threshold(counting):
    """The kernel tests the size at run time (compiled here: loaded with this provider)."""
    eig_n = jit(_eig_symbolic, signature="f64[b, n, n]")
    svd_n = jit(_svd_symbolic, signature="f64[n, n]")
    rng = np.random.default_rng(4)
    for n in (spectral_lapack.EIGH_MIN - 1, spectral_lapack.EIGH_MIN, N):
        counting.calls.clear()
        a = rand(rng, (2, n, n), np.float64)
        w, v = eig_n(a)
        check_eigh(a, w, v, np.float64)
        assert counting.calls == ({"dsyevd": 2} if n >= spectral_lapack.EIGH_MIN else {})
    for n in (spectral_lapack.SVD_MIN - 1, spectral_lapack.SVD_MIN):
        counting.calls.clear()
        a = rand(rng, (n, n), np.float64)
        u, s, vh = svd_n(a)
        np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), atol=1e-12 * n)
        np.testing.assert_allclose((u * s) @ vh, a, atol=1e-12 * n)
        assert counting.calls == ({"dgesdd": 1} if n >= spectral_lapack.SVD_MIN else {})


def _spectral_loss(a):
    w, v = np.linalg.eigh(a)
    return np.sum((v * np.tanh(w)) @ v.T) + np.sum(np.linalg.svd(a, compute_uv=False) ** 1.5)


def test_gradient_through_lapack_against_finite_differences(counting):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((N, N))
    g = compiler.grad(_spectral_loss)(a)
    assert counting.calls.get("dsyevd", 0) >= 1 and counting.calls.get("dgesdd", 0) >= 1
    h = 1e-6
    for i, j in ((3, 1), (0, 0), (N - 1, 2), (2, N - 1)):
        e = np.zeros_like(a)
        e[i, j] = h
        fd = (_spectral_loss(a + e) - _spectral_loss(a - e)) / (2 * h)
        np.testing.assert_allclose(g[i, j], fd, rtol=1e-6, atol=1e-7)


def test_no_convergence_raises_linalgerror(monkeypatch):
    """A routine reporting info > 0 raises NumPy's LinAlgError (kernels from the disk cache,
    loaded with a failing provider); NaN and infinite inputs give NumPy's results."""
    rng = np.random.default_rng(6)
    a, b = rand(rng, (3, N, N), np.float64), rand(rng, (2, N + 4, N), np.float64)
    # kernels of this test only: a module-level kernel loaded here, with the real provider,
    # would stay bound to it, and test_library_path_and_generated_path, run later in the
    # same xdist worker, would count no calls
    eig_k, svds_k = jit(_eig), jit(_svds)
    eig_k(a), svds_k(b)                               # compiled (and stored) first
    _use(monkeypatch, fail=True)
    with pytest.raises(np.linalg.LinAlgError, match="^Eigenvalues did not converge"):
        jit(_eig)(a)
    with pytest.raises(np.linalg.LinAlgError, match="^SVD did not converge"):
        jit(_svds)(b)
    _use(monkeypatch)
    a[1, 2, 1] = np.inf          # NumPy: NaN results, no error
    w, v = eig_k(a)
    assert np.isfinite(w[1]).all() == np.isfinite(np.linalg.eigvalsh(a[1])).all()
    assert np.isfinite(w[[0, 2]]).all()
    b[1, 3, 1] = np.nan          # NumPy: LinAlgError
    with pytest.raises(np.linalg.LinAlgError, match="^SVD did not converge"):
        svds_k(b)
