"""np.linalg.eig and eigvals of matrices beyond the unrolled code (n > 8, or a symbolic n):
LAPACK's geev, and the error of a kernel loaded without it (docs/linalg.md, "General
eigenproblems").

Oracles: NumPy's eig (which calls the same geev on the same matrix, so the order of the
eigenvalues is NumPy's), the invariants A V = V diag(w) and unit columns, NumPy's vectors
brought to the compiled normalization (largest component real and positive), a Python loop
for vmap, central finite differences of NumPy for the gradient. The kernels are
module-level and shared by the parametrized cases.
"""
from __future__ import annotations

import numpy as np
import pytest

import compiler.primitives.eig_loops as eig_loops
from compiler import grad, jit, vmap
from runtime import blas


@jit
def eigvals(a):
    return np.linalg.eigvals(a)


def _both(a):
    w, v = np.linalg.eig(a)
    return w, v


CODES = {np.float64: "f64", np.float32: "f32", np.complex128: "c128", np.complex64: "c64"}
_KERNELS: dict = {}


def _kernel(dtype):
    """eig of a stack of a symbolic size: one kernel per dtype for the module."""
    if dtype not in _KERNELS:
        _KERNELS[dtype] = jit(_both, signature=f"{CODES[dtype]}[b, n, n]")
    return _KERNELS[dtype]


DTYPES = [np.float64, np.float32, np.complex128, np.complex64]


def _tol(dtype) -> float:
    return 1e-11 if np.dtype(dtype) in (np.float64, np.complex128) else 2e-4


def _matrix(n: int, dtype, seed: int, batch: tuple = ()) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(batch + (n, n))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(batch + (n, n))
    return a.astype(dtype)


def _normalized(v: np.ndarray) -> np.ndarray:
    """NumPy's columns with their first component of largest modulus real and positive."""
    v = v / np.linalg.norm(v, axis=-2, keepdims=True)
    top = np.take_along_axis(v, np.argmax(np.abs(v), axis=-2)[..., None, :], axis=-2)
    return v * np.conj(top) / np.abs(top)


def _check(a: np.ndarray, w: np.ndarray, v: np.ndarray | None = None) -> None:
    """Against NumPy (same routine, same matrix: the same order) and the invariants."""
    dtype = a.dtype
    cdt = np.result_type(dtype, np.complex64)
    assert w.dtype == cdt and w.shape == a.shape[:-1]
    scale = max(1.0, float(np.max(np.abs(a))))
    ref_w = np.linalg.eigvals(a.astype(np.complex128)).reshape(-1, w.shape[-1])
    tol = _tol(dtype) * scale * a.shape[-1]
    for got, want in zip(w.reshape(-1, w.shape[-1]), ref_w):     # a nearest match, one by one
        left = list(want)
        for e in got:
            j = int(np.argmin(np.abs(np.array(left) - e)))
            assert abs(left.pop(j) - e) <= tol, (e, want)
    if v is None:
        return
    assert v.dtype == cdt and v.shape == a.shape
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1.0, atol=_tol(dtype) * 10)
    np.testing.assert_allclose(a @ v, v * w[..., None, :], atol=tol)
    top = np.take_along_axis(v, np.argmax(np.abs(v), axis=-2)[..., None, :], axis=-2)
    np.testing.assert_allclose(top.imag, 0.0, atol=_tol(dtype))
    assert np.all(top.real > 0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eig_matches_numpy(dtype) -> None:
    """n = 9, 16, 40 and stacks, with one kernel of a symbolic size per dtype."""
    k = _kernel(dtype)
    for batch, n in [(1, 9), (1, 16), (1, 40), (3, 11), (3, 0)]:
        a = _matrix(n, dtype, seed=n + batch, batch=(batch,))
        w, v = k(a)
        if n:
            _check(a, w, v)
        else:
            assert w.shape == (3, 0) and v.shape == (3, 0, 0)


def test_same_order_and_vectors_as_numpy() -> None:
    """Real input, distinct eigenvalues, complex pairs: NumPy's order, and NumPy's vectors
    up to the normalization of each column's phase."""
    a = _matrix(12, np.float64, seed=3)
    w, v = _kernel(np.float64)(a[None])
    ref_w, ref_v = np.linalg.eig(a)
    assert np.any(ref_w.imag != 0)
    np.testing.assert_allclose(w[0], ref_w, atol=1e-12)
    np.testing.assert_allclose(v[0], _normalized(ref_v.astype(complex)), atol=1e-11)


def test_static_size_stacks_and_vmap() -> None:
    a = _matrix(10, np.float64, seed=5, batch=(2, 3))
    w = vmap(vmap(eigvals))(a)
    _check(a, w)
    wl, _ = _kernel(np.float64)(a.reshape(6, 10, 10))
    np.testing.assert_allclose(w.reshape(6, 10), wl, atol=1e-13)


JORDAN = 2.0 * np.eye(9) + np.diag(np.ones(8), 1)     # defective: one eigenvector


def _pairs() -> np.ndarray:
    """A real 10x10 matrix with the five complex-conjugate pairs 0.5k +- (1+k)i, k = 0, 2, ..."""
    rng = np.random.default_rng(8)
    q = rng.standard_normal((10, 10)) + 10 * np.eye(10)
    d = np.zeros((10, 10))
    for k in range(0, 10, 2):
        d[k:k + 2, k:k + 2] = [[0.5 * k, -1.0 - k], [1.0 + k, 0.5 * k]]
    return q @ d @ np.linalg.inv(q)


def test_complex_spectrum_and_defective() -> None:
    a = _pairs()
    w, v = _kernel(np.float64)(a[None])
    w, v = w[0], v[0]
    _check(a, w, v)
    np.testing.assert_allclose(np.sort_complex(w), np.sort_complex(np.concatenate(
        [[0.5 * k + 1j * (1 + k), 0.5 * k - 1j * (1 + k)] for k in range(0, 10, 2)])), atol=1e-11)
    jordan = JORDAN
    w, v = _kernel(np.float64)(jordan[None])
    w, v = w[0], v[0]
    ref = np.linalg.eig(jordan)
    np.testing.assert_allclose(w, ref.eigenvalues, atol=1e-12)
    np.testing.assert_allclose(jordan @ v, v * w, atol=1e-12)
    np.testing.assert_allclose(v, _normalized(ref.eigenvectors.astype(complex)), atol=1e-12)


def test_nonfinite_raises_linalgerror() -> None:
    a = np.eye(10)
    a[3, 4] = np.nan
    with pytest.raises(np.linalg.LinAlgError, match="infs or NaNs"):
        np.linalg.eig(a)
    with pytest.raises(np.linalg.LinAlgError, match="infs or NaNs"):
        _kernel(np.float64)(a[None])


def test_generated_fallback_without_a_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel loaded without LAPACK runs the generated loops (eig_loops.py): every dtype,
    n = 1, 9, 16, 40 of a symbolic size, a stack, complex pairs and a defective matrix."""
    monkeypatch.setattr(blas, "_cached", [None])
    for dtype in DTYPES[::-1]:
        k = jit(_both, signature=f"{CODES[dtype]}[b, n, n]")     # loaded now: NULL pointers
        for batch, n in [(2, 1), (3, 9), (1, 16), (1, 40)]:
            a = _matrix(n, dtype, seed=n + batch, batch=(batch,))
            w, v = k(a)
            _check(a, w, v)
    pairs = _pairs()                                   # k: the float64 kernel, last of DTYPES
    w, v = k(pairs[None])
    _check(pairs, w[0], v[0])
    w, v = k(JORDAN[None])
    np.testing.assert_allclose(w[0], 2.0, atol=1e-12)
    np.testing.assert_allclose(np.abs(v[0][0]), 1.0, atol=1e-12)  # the one eigenvector, e_1


# ---- derivatives at n > 8 (the same matrix-level rules as the unrolled code) ---------------

def _loss(a):
    w, v = np.linalg.eig(a)
    return np.sum(np.abs(w) ** 2) + np.sum(np.abs(v[0]) ** 2 * np.arange(v.shape[-1]))


def _numpy_loss(a):
    w, v = np.linalg.eig(a)
    v = _normalized(v.astype(complex))
    return np.sum(np.abs(w) ** 2) + np.sum(np.abs(v[0]) ** 2 * np.arange(v.shape[-1]))


def test_grad_vs_finite_differences() -> None:
    a = _matrix(9, np.float64, seed=11)
    g = grad(_loss)(a)
    h, fd = 1e-6, np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[idx] = h
        fd[idx] = (_numpy_loss(a + e) - _numpy_loss(a - e)) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)


def test_fallback_no_convergence_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    """The generated loops' verdict reaches the user as NumPy's error (LAPACK's info > 0):
    with no QR sweep allowed, a matrix that is not triangular has not converged."""
    monkeypatch.setattr(blas, "_cached", [None])
    monkeypatch.setattr(eig_loops, "MAX_SWEEPS", 0)
    k = jit(lambda a: np.linalg.eigvals(a) * 1.0)        # a kernel of its own: compiled here
    with pytest.raises(np.linalg.LinAlgError, match="did not converge"):
        k(_matrix(9, np.float64, seed=1))
    upper = np.triu(_matrix(9, np.float64, seed=2))
    np.testing.assert_allclose(k(upper), np.diag(upper))     # nothing to do: converged
