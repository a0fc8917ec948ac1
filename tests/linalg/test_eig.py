"""np.linalg.eig and eigvals in compiled code (docs/linalg.md, "General eigenproblems").

Oracles: NumPy's eigenvalues (matched up to order: the compiled order is the QR
iteration's), the invariants A V = V diag(w), unit columns with their largest component
real and positive, NumPy's vectors brought to that normalization, central finite
differences of the uncompiled NumPy computation (real and imaginary directions), and a
Python loop for vmap. The kernels are module-level and shared by the parametrized cases.
"""
from __future__ import annotations

import numpy as np
import pytest

import compiler.primitives.eig as eig_module
from compiler import grad, hessian, jit, jvp, vjp, vmap
from compiler.errors import ShapeMismatchError


@jit
def eigvals(a):
    return np.linalg.eigvals(a)


@jit
def eig(a):
    return np.linalg.eig(a)


def _matched(w: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """`ref` reordered, stack by stack, to the order of `w` (greedy nearest match)."""
    out = np.empty_like(ref)
    flat_w, flat_r, flat_o = (x.reshape(-1, x.shape[-1]) for x in (w, ref, out))
    for wi, ri, oi in zip(flat_w, flat_r, flat_o):
        left = list(ri)
        for k, e in enumerate(wi):
            j = int(np.argmin([abs(e - q) for q in left]))
            oi[k] = left.pop(j)
    return out


def _normalized(v: np.ndarray) -> np.ndarray:
    """Unit columns with the first component of largest modulus real and positive."""
    v = v / np.linalg.norm(v, axis=-2, keepdims=True)
    out = np.empty_like(v)
    for idx in np.ndindex(v.shape[:-2] + v.shape[-1:]):
        col = v[idx[:-1] + (slice(None), idx[-1])]
        top = col[np.argmax(np.abs(col))]
        out[idx[:-1] + (slice(None), idx[-1])] = col * np.conj(top) / abs(top)
    return out


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _conjugate_pairs(n: int) -> np.ndarray:
    """A real matrix with complex-conjugate eigenvalue pairs (rotation blocks)."""
    rng = _rng(n)
    d = np.zeros((n, n))
    for k in range(0, n - 1, 2):
        d[k:k + 2, k:k + 2] = [[0.5 * k, -1.0 - k], [1.0 + k, 0.5 * k]]
    if n % 2:
        d[-1, -1] = 3.0
    q = rng.standard_normal((n, n)) + n * np.eye(n)
    return q @ d @ np.linalg.inv(q)


def _repeated() -> np.ndarray:
    """Diagonalizable, eigenvalues (2, 2, -1)."""
    q = _rng(7).standard_normal((3, 3)) + 3 * np.eye(3)
    return q @ np.diag([2.0, 2.0, -1.0]) @ np.linalg.inv(q)


CASES = {
    "random3": _rng(1).standard_normal((3, 3)),
    "random5": _rng(2).standard_normal((5, 5)),
    "random8": _rng(3).standard_normal((8, 8)),
    "pairs3": _conjugate_pairs(3),
    "pairs4": _conjugate_pairs(4),
    "pairs5": _conjugate_pairs(5),
    "rotation2": np.array([[0.0, -1.0], [1.0, 0.0]]),
    "upper": np.triu(_rng(4).standard_normal((4, 4))),
    "lower": np.tril(_rng(5).standard_normal((4, 4))),
    "repeated": _repeated(),
    "jordan-free-zero": np.zeros((3, 3)),
    "identity": np.eye(3),
    "permutation": np.eye(3)[[1, 2, 0]],
    "scalar": np.array([[2.5]]),
    "complex3": _rng(6).standard_normal((3, 3)) + 1j * _rng(8).standard_normal((3, 3)),
    "hermitian": (lambda x: x + x.conj().T)(_rng(9).standard_normal((4, 4)) + 1j * _rng(10).standard_normal((4, 4))),
    "batched": _rng(11).standard_normal((2, 3, 3, 3)),
    "scaled": 1e150 * _rng(12).standard_normal((3, 3)),
    "tiny": 1e-150 * _rng(13).standard_normal((3, 3)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_eigvals_match_numpy(name: str) -> None:
    a = CASES[name]
    w = eigvals(a)
    ref = np.linalg.eigvals(a)
    assert w.dtype == np.complex128 and w.shape == ref.shape
    scale = np.max(np.abs(a)) if a.size else 1.0
    tol = 1e-7 if name == "repeated" else 1e-12          # a double eigenvalue: sqrt(eps)
    np.testing.assert_allclose(w, _matched(w, ref), rtol=0, atol=tol * max(scale, 1e-300) * a.shape[-1])


@pytest.mark.parametrize("name", [c for c in CASES if c != "random8"])   # compile time
def test_eig_invariants(name: str) -> None:
    a = CASES[name]
    w, v = eig(a)
    np.testing.assert_allclose(w, eigvals(a), rtol=1e-13, atol=1e-13 * np.max(np.abs(a)))
    scale = max(np.max(np.abs(a)), 1e-300)
    np.testing.assert_allclose(a @ v, v * w[..., None, :], rtol=0, atol=1e-12 * scale * a.shape[-1])
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1.0, rtol=1e-13)
    top = np.take_along_axis(v, np.argmax(np.abs(v), axis=-2)[..., None, :], axis=-2)
    assert np.all(np.abs(top.imag) <= 1e-15) and np.all(top.real > 0)


@pytest.mark.parametrize("name", ["complex3", "random3", "pairs4", "random5"])
def test_eigenvectors_match_numpy(name: str) -> None:
    """Distinct eigenvalues: NumPy's vectors in our normalization are ours (a real input's
    vectors for a real eigenvalue differ from NumPy's by at most their sign)."""
    a = CASES[name]
    w, v = eig(a)
    rw, rv = np.linalg.eig(a)
    order = [int(np.argmin(np.abs(rw - e))) for e in w]
    assert sorted(order) == list(range(a.shape[-1]))
    np.testing.assert_allclose(v, _normalized(rv.astype(complex))[:, order], atol=1e-11)


def test_dtypes_are_static() -> None:
    """Always complex, also where NumPy's (value-dependent) result is real."""
    a = np.array([[2.0, 1.0], [0.0, 3.0]])
    assert np.linalg.eigvals(a).dtype == np.float64                   # NumPy: real here
    assert eigvals(a).dtype == np.complex128
    np.testing.assert_allclose(np.sort(eigvals(a).real), [2.0, 3.0], rtol=1e-15)
    assert eigvals(a.astype(np.float32)).dtype == np.complex64
    assert eigvals(a.astype(np.complex64)).dtype == np.complex64
    assert eigvals(np.array([[1, 2], [3, 4]])).dtype == np.complex128
    w, v = eig(a.astype(np.float32))
    assert w.dtype == v.dtype == np.complex64


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_single_precision(dtype: type) -> None:
    a = CASES["complex3"] if dtype is np.complex64 else CASES["pairs4"]
    a = a.astype(dtype)
    w, v = eig(a)
    ref = np.linalg.eigvals(a.astype(np.complex128))
    np.testing.assert_allclose(w, _matched(w, ref), rtol=0, atol=2e-5 * np.max(np.abs(a)))
    np.testing.assert_allclose(a @ v, v * w[..., None, :], atol=1e-5 * np.max(np.abs(a)))


def test_symbolic_batch() -> None:
    k = jit(lambda a: np.linalg.eigvals(a), signature="f64[b, 3, 3]")
    for b in (1, 4):
        a = _rng(20 + b).standard_normal((b, 3, 3))
        w = k(a)
        np.testing.assert_allclose(w, _matched(w, np.linalg.eigvals(a)), atol=1e-12)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nonfinite_raises_linalgerror(bad: float) -> None:
    a = np.eye(3)
    a[1, 2] = bad
    with pytest.raises(np.linalg.LinAlgError, match="infs or NaNs"):
        np.linalg.eig(a)
    with pytest.raises(np.linalg.LinAlgError, match="infs or NaNs"):
        eigvals(a)
    with pytest.raises(np.linalg.LinAlgError, match="infs or NaNs"):
        eig(a + 0j)


def test_nonfinite_under_vmap_raises() -> None:
    a = np.stack([np.eye(3), np.eye(3)])
    a[1, 0, 0] = np.nan
    with pytest.raises(np.linalg.LinAlgError):
        vmap(eigvals)(a)


def test_no_convergence_raises_linalgerror(monkeypatch: pytest.MonkeyPatch) -> None:
    """The iteration's own verdict reaches the user as NumPy's error: with no QR sweep
    allowed, a matrix that is not triangular has not converged."""
    monkeypatch.setattr(eig_module, "MAX_SWEEPS", 0)
    k = jit(lambda a: np.linalg.eig(a)[0] * 1.0)        # a kernel of its own: compiled here
    with pytest.raises(np.linalg.LinAlgError, match="did not converge"):
        k(CASES["random3"])
    np.testing.assert_allclose(k(CASES["upper"]), np.diag(CASES["upper"]))     # nothing to do


def test_user_errors() -> None:
    with pytest.raises(ShapeMismatchError, match="at least two-dimensional"):
        eigvals(np.ones(3))
    with pytest.raises(ShapeMismatchError, match="square"):
        eigvals(np.ones((2, 3)))


# ---- vmap ------------------------------------------------------------------------------

def test_vmap_matches_loop() -> None:
    a = _rng(30).standard_normal((4, 3, 3))
    w, v = vmap(eig)(a)
    for i in range(4):
        wi, vi = eig(a[i])
        np.testing.assert_allclose(w[i], wi, atol=1e-13)
        np.testing.assert_allclose(v[i], vi, atol=1e-12)
    wt = vmap(eigvals, 2)(np.moveaxis(a, 0, 2))
    for i in range(4):
        np.testing.assert_allclose(wt[i], eigvals(a[i]), atol=1e-13)


# ---- derivatives -----------------------------------------------------------------------

def _abs2(a):
    return np.sum(np.abs(np.linalg.eigvals(a)) ** 2)


def _re_prod(a):
    return np.real(np.prod(np.linalg.eigvals(a)))


def _vec_loss(a):
    w, v = np.linalg.eig(a)
    return np.sum(np.abs(v[0]) ** 2 * np.arange(v.shape[-1])) + np.sum(np.real(v) * np.imag(v)) \
        + np.sum(np.imag(w) * np.real(v[1]))


def _fd_grad(f, a, h=1e-6):
    """dL/dRe + 1j dL/dIm (the gradient convention of docs/complex.md) by central differences."""
    g = np.zeros(a.shape, a.dtype)
    for idx in np.ndindex(a.shape):
        e = np.zeros(a.shape, a.dtype)
        e[idx] = h
        g[idx] = (f(a + e) - f(a - e)) / (2 * h)
        if np.iscomplexobj(a):
            g[idx] += 1j * (f(a + 1j * e) - f(a - 1j * e)) / (2 * h)
    return g


_GRADS = {f: grad(f) for f in (_abs2, _re_prod)}
_VEC_GRAD = grad(_vec_loss)
_VEC_LOSS = jit(_vec_loss)


def _numpy_vec_loss(a):
    """_vec_loss with NumPy's eig, its vectors in our normalization and order."""
    w, v = np.linalg.eig(a)
    ours = eig(a)[0]
    order = [int(np.argmin(np.abs(w - e))) for e in ours]
    w, v = w[order].astype(complex), _normalized(v[:, order].astype(complex))
    return np.sum(np.abs(v[0]) ** 2 * np.arange(v.shape[-1])) + np.sum(np.real(v) * np.imag(v)) \
        + np.sum(np.imag(w) * np.real(v[1]))


@pytest.mark.parametrize("name", ["random3", "pairs3", "complex3", "upper"])
@pytest.mark.parametrize("f", [_abs2, _re_prod], ids=["abs2", "re_prod"])
def test_grad_eigvals_vs_fd(name: str, f) -> None:
    a = CASES[name]
    np.testing.assert_allclose(_GRADS[f](a), _fd_grad(f, a), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["random3", "pairs3", "complex3"])
def test_grad_eigenvectors_vs_fd(name: str) -> None:
    a = CASES[name]
    np.testing.assert_allclose(_VEC_GRAD(a), _fd_grad(_numpy_vec_loss, a), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(_VEC_LOSS(a), _numpy_vec_loss(a), rtol=1e-12)


def test_jvp_vjp_dot_product() -> None:
    """<u, J t> == <J^T u, t> (real inner product) for eig's two outputs, complex input."""
    rng = _rng(40)
    a = CASES["complex3"]
    t = rng.standard_normal(a.shape) + 1j * rng.standard_normal(a.shape)
    (w, v), (tw, tv) = jvp(eig, (a,), (t,))
    uw = rng.standard_normal(w.shape) + 1j * rng.standard_normal(w.shape)
    uv = rng.standard_normal(v.shape) + 1j * rng.standard_normal(v.shape)
    _, back = vjp(eig, a)
    (ga,) = back((uw, uv))
    lhs = np.sum(np.real(np.conj(uw) * tw)) + np.sum(np.real(np.conj(uv) * tv))
    rhs = np.sum(np.real(np.conj(ga) * t))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10)
    h = 1e-6
    fd_w = (eig(a + h * t)[0] - eig(a - h * t)[0]) / (2 * h)
    np.testing.assert_allclose(tw, fd_w, atol=1e-6)


def test_vmap_of_grad_matches_loop() -> None:
    a = _rng(41).standard_normal((3, 3, 3))
    g = vmap(_GRADS[_abs2])(a)
    for i in range(3):
        np.testing.assert_allclose(g[i], _GRADS[_abs2](a[i]), rtol=1e-12, atol=1e-12)


def test_hessian_vs_fd_of_grad() -> None:
    def loss(a):
        w = np.linalg.eigvals(a)
        return np.sum(np.abs(w) ** 2) + np.real(np.prod(w))
    a = CASES["random3"]
    hess = hessian(loss)(a)
    g, h = grad(loss), 1e-5
    for idx in [(0, 1), (2, 0)]:
        e = np.zeros_like(a)
        e[idx] = h
        np.testing.assert_allclose(hess[..., idx[0], idx[1]], (g(a + e) - g(a - e)) / (2 * h), atol=1e-7)
