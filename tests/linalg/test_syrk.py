"""A real product of a matrix with its own transpose (`X @ X.T`, `X.T @ X`, a stack with
its swapped axes, `Xn @ Xn.T` of a computed Xn) calls syrk for one triangle and mirrors it
(primitives/gemm.py). Oracles: einsum in its own loops in long double. A counting provider
proves syrk ran; a provider without syrk falls back to gemm, and no provider to the loop nest,
with the same results."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from compiler import jit
from runtime import blas

pytestmark = pytest.mark.skipif(blas.provider() is None, reason="NumPy ships no BLAS here")

_SYRK = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 10), ctypes.c_int64, ctypes.c_int64)


class Provider:
    """The real provider, with syrk counted (or hidden: `syrk=False`)."""

    def __init__(self, real: blas.Provider, syrk: bool) -> None:
        self.real, self.syrk, self.calls = real, syrk, 0
        self.path, self.pattern = real.path, real.pattern
        self._keep: dict[str, object] = {}

    def address(self, routine: str) -> int:
        if not routine.endswith("syrk"):
            return self.real.address(routine)
        if not self.syrk:
            return 0
        if routine not in self._keep:
            forward = _SYRK(self.real.address(routine))

            def counted(*args: object) -> None:
                self.calls += 1
                forward(*args)
            self._keep[routine] = _SYRK(counted)
        return ctypes.cast(self._keep[routine], ctypes.c_void_p).value or 0


def gram_rows(x):
    return x @ x.T


def gram_cols(x):
    return x.T @ x


def stacked(x):
    return x @ np.swapaxes(x, -1, -2)


def normalized(x):
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    return xn @ xn.T


def symbolic(x):
    return x @ x.T


CASES = [(gram_rows, (200, 80)), (gram_cols, (150, 140)), (stacked, (3, 130, 130)), (normalized, (260, 64))]


def _oracle(f, x):
    w = x.astype(np.longdouble)
    if f is gram_cols:
        return np.einsum("ki,kj->ij", w, w, optimize=False)
    if f is normalized:
        w = w / np.sqrt(np.einsum("ij,ij->i", w, w, optimize=False))[:, None]
    if f is stacked:
        return np.einsum("bik,bjk->bij", w, w, optimize=False)
    return np.einsum("ik,jk->ij", w, w, optimize=False)


def _check(got, want, dtype):
    tol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want.astype(np.float64), rtol=tol, atol=tol * 10)
    assert got.dtype == dtype


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", ["syrk", "gemm", "loops"])
def test_products_with_their_transpose(dtype, mode, monkeypatch):
    real = blas.provider()
    fake = Provider(real, syrk=mode == "syrk")
    monkeypatch.setattr(blas, "_cached", [fake] if mode != "loops" else [None])
    rng = np.random.default_rng(0)
    for f, shape in CASES:
        x = rng.standard_normal(shape).astype(dtype)
        got = jit(f)(x)
        if mode == "syrk":                # one triangle, mirrored: exactly symmetric
            np.testing.assert_array_equal(got, np.swapaxes(got, -1, -2))
        _check(got, _oracle(f, x), dtype)
    if mode == "syrk":
        assert fake.calls == 3 + 3        # one per matrix: 3 cases and a stack of 3


def test_symbolic_sizes_test_the_threshold_at_run_time(monkeypatch):
    fake = Provider(blas.provider(), syrk=True)
    monkeypatch.setattr(blas, "_cached", [fake])
    k = jit(symbolic, signature="f64[m, k] -> f64[m, m]")
    rng = np.random.default_rng(1)
    for shape in [(5, 3), (200, 100)]:
        x = rng.standard_normal(shape)
        _check(k(x), _oracle(symbolic, x), np.float64)
    assert fake.calls == 1                # the small one runs the loop nest
