"""The factorizations through LAPACK (getrf, gesv, trsm, potrf, geqrf + orgqr/ungqr) and through
their generated fallback: results against NumPy on both sides of the thresholds, with a
provider and without one, and LinAlgError on both paths.

One kernel per dtype with symbolic sizes covers everything: n below the thresholds runs the
generated code (the op's region), n above calls the library where the kernel's pointers are
set (a counting provider checks that it does), and a kernel loaded without a provider runs
the region at every size.
"""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from compiler import jit
from compiler.primitives import factor_lapack
from runtime import blas

pytestmark = pytest.mark.skipif(blas.provider() is None, reason="NumPy ships no BLAS here")

SMALL, MID, LARGE = 5, 40, 130
assert LARGE - 2 >= max(factor_lapack.LU_MIN, factor_lapack.GESV_MIN, factor_lapack.TRSM_MIN,
                        factor_lapack.CHOLESKY_MIN, factor_lapack.QR_MIN) > SMALL
#: between trsm's threshold and gesv's, solve and inv run the generated LU, then trsm
assert factor_lapack.TRSM_MIN <= MID < factor_lapack.GESV_MIN
assert MID >= max(factor_lapack.CHOLESKY_MIN, factor_lapack.QR_MIN)

#: (pointer arguments, hidden string lengths) of each routine's Fortran signature
_SIGNATURES = {"getrf": (6, 0), "gesv": (8, 0), "trsm": (11, 4), "potrf": (5, 1), "geqrf": (8, 0), "orgqr": (9, 0),
               "ungqr": (9, 0)}


class Counting:
    """A provider whose routines count their calls and forward to the real ones."""

    def __init__(self, real: blas.Provider) -> None:
        self.real, self.path, self.pattern = real, real.path, real.pattern
        self.calls: dict[str, int] = {}
        self._callbacks: dict[str, object] = {}

    def address(self, routine: str) -> int:
        if routine not in self._callbacks:
            pointers, strings = _SIGNATURES[routine[1:]]
            proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * pointers + [ctypes.c_int64] * strings))
            forward = proto(self.real.address(routine))

            def counted(*args: object, routine: str = routine) -> None:
                self.calls[routine] = self.calls.get(routine, 0) + 1
                forward(*args)
            self._callbacks[routine] = proto(counted)
        return ctypes.cast(self._callbacks[routine], ctypes.c_void_p).value or 0


def family(a, b):
    """The LU family and Cholesky: gesv (or lu and trsm, both triangles, 3 and n right-hand
    sides), getrf (det), potrf."""
    return np.linalg.solve(a, b), np.linalg.inv(a), np.linalg.det(a), np.linalg.cholesky(a)


def qrs(a):
    """qr of a tall matrix, reduced, and of a wide one, complete."""
    q1, r1 = np.linalg.qr(a[..., :, 2:])
    q2, r2 = np.linalg.qr(a[..., 2:, :], mode="complete")
    return q1, r1, q2, r2


def reference(a, b):
    return [np.linalg.solve(a, b), np.linalg.inv(a), np.linalg.det(a), np.linalg.cholesky(a),
            *np.linalg.qr(a[..., :, 2:]), *np.linalg.qr(a[..., 2:, :], mode="complete")]


_NAMES = {np.float32: "f32", np.float64: "f64", np.complex64: "c64", np.complex128: "c128"}
_KERNELS: dict[tuple, tuple] = {}


def kernels(dtype, provider: bool):
    """The symbolic kernels of `family` and `qrs` for dtype (qrs for float64 only: the
    generated complex qr of symbolic sizes takes long to compile), loaded with a counting provider or with none. Shared between the
    tests; the kernels without a provider come from the on-disk cache entries of the others."""
    key = (dtype, provider)
    if key not in _KERNELS:
        counting = Counting(blas.provider()) if provider else None
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(blas, "_cached", [counting])
            name = _NAMES[dtype]
            f = jit(family, signature=f"{name}[t, n, n], {name}[t, n, r]")
            q = jit(qrs, signature=f"{name}[t, n, n]") if dtype == np.float64 else None
        _KERNELS[key] = (f, q, counting)
    return _KERNELS[key]


def spd(rng: np.random.Generator, t: int, n: int, dtype) -> np.ndarray:
    m = rng.standard_normal((t, n, n))
    if np.dtype(dtype).kind == "c":
        m = m + 1j * rng.standard_normal((t, n, n))
    # eigenvalues in [0.5, 1.5]: well conditioned, and det stays within float32's range
    return (m @ np.conj(np.swapaxes(m, -1, -2)) / (4 * n) + 0.5 * np.eye(n)).astype(dtype)


def rhs(rng: np.random.Generator, t: int, n: int, dtype) -> np.ndarray:
    x = rng.standard_normal((t, n, 3))
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal((t, n, 3))
    return x.astype(dtype)


def check_family(f, q, a, b, dtype) -> None:
    got = list(f(a, b)) + (list(q(a)) if q is not None else [])
    wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
    want = reference(a.astype(wide), b.astype(wide))
    tol = 2e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10
    names = ["solve", "inv", "det", "cholesky", "qr q", "qr r", "complete q", "complete r"]
    for name, g, w in zip(names, got, want):
        assert g.dtype == dtype, name
        scale = max(1.0, float(np.abs(w).max()))
        np.testing.assert_allclose(g, w, rtol=0, atol=tol * scale, err_msg=name)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_factorizations_both_sides_of_the_thresholds(dtype):
    f, q, counting = kernels(dtype, True)
    rng = np.random.default_rng(11)
    p = "sdcz"[[np.float32, np.float64, np.complex64, np.complex128].index(dtype)]
    for n in (SMALL, MID, LARGE):
        a, b = spd(rng, 2, n, dtype), rhs(rng, 2, n, dtype)
        counting.calls.clear()
        check_family(f, q, a, b, dtype)
        if n == SMALL:
            assert counting.calls == {}            # generated code below the thresholds
            continue
        if n == MID:
            # one call per matrix: potrf; inv's two solves by trsm (solve's 3 columns are
            # below TRSM_MIN_RHS); the LU and det's are generated
            want = {f"{p}trsm": 2 * 2, f"{p}potrf": 2}
        else:
            # one call per matrix: gesv for solve and inv, getrf for det
            want = {f"{p}gesv": 2 * 2, f"{p}getrf": 2, f"{p}potrf": 2}
        if q is not None:
            want.update({f"{p}geqrf": 2 * 2, f"{p}{'ung' if p in 'cz' else 'org'}qr": 2 * 2})
        assert counting.calls == want


@pytest.mark.parametrize("dtype", [np.float64])
def test_factorizations_without_a_provider(dtype):
    kernels(dtype, True)                    # compiled (and cached) with the provider
    f, q, _ = kernels(dtype, False)
    rng = np.random.default_rng(12)
    for n in (SMALL, LARGE):
        a, b = spd(rng, 3, n, dtype), rhs(rng, 3, n, dtype)
        check_family(f, q, a, b, dtype)


@pytest.mark.parametrize("provider", [True, False])
def test_linalg_errors_on_both_paths(provider):
    f, _, counting = kernels(np.float64, provider)
    rng = np.random.default_rng(13)
    for n in (SMALL, LARGE):
        a, b = spd(rng, 2, n, np.float64), rhs(rng, 2, n, np.float64)
        singular = a.copy()
        singular[1, :, 3] = 0.0                          # a zero column: an exact zero pivot
        with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
            f(singular, b)
        indefinite = a.copy()
        indefinite[0] -= 2 * np.eye(n) * np.abs(np.linalg.eigvalsh(a[0])).max()
        with pytest.raises(np.linalg.LinAlgError, match="Matrix is not positive definite"):
            f(indefinite, b)
    if counting is not None:
        assert counting.calls["dgesv"] > 0 and counting.calls["dpotrf"] > 0
