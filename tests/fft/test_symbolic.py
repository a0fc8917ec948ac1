"""np.fft over axes of symbolic length (a plan made when the kernel runs): one kernel per
signature, called with many lengths (powers of two, primes through Bluestein, 1e5+3, mixed
composites), against NumPy's pocketfft; vmap against a loop over columns; jvp and vjp against
finite differences of NumPy's transforms."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from compiler import jit, jvp, vjp, vmap
from tests.fd import directional_derivative, jacobian

# 2^k, small primes (17: a pass of its own), primes above 31 (Bluestein), 1e5+3, mixed composites
# (2 * 65537: Bluestein),
# 3^7, a long row (2^17: four steps)
LENGTHS = [2, 3, 4, 5, 8, 12, 17, 30, 37, 64, 97, 1000, 1024, 1155, 2187, 100_003, 131_072, 131_074]


def _rel(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300))


def _one_function(c, r):
    return (np.fft.fft(c), np.fft.ifft(c, norm="ortho"), np.fft.rfft(r), np.fft.irfft(c, norm="forward"),
            np.fft.hfft(c), np.fft.ihfft(r, norm="ortho"), np.fft.rfft(r, n=7), np.fft.irfft(c, n=9),
            np.fft.irfft(np.fft.rfft(r) * (1 + 1j), n=r.shape[0]))      # n=: the symbolic length itself


def _single_function(c, r):
    return np.fft.fft(c), np.fft.rfft(r), np.fft.irfft(c, norm="ortho"), np.fft.ifft(r)


def _nd_function(x, c):
    return (np.fft.ifft2(c, norm="ortho"), np.fft.rfft2(x), np.fft.irfftn(c, axes=(0,)), np.fft.fftshift(x),
            np.fft.ifftshift(c, axes=1), vmap(lambda r: np.fft.ifft(r, norm="ortho"), in_dims=1, out_dims=1)(x),
            np.fft.fftfreq(x.shape[0]), np.fft.rfftfreq(x.shape[1], 0.5))


def _nd_want(x, c):
    columns = np.stack([np.fft.ifft(x[:, k], norm="ortho") for k in range(x.shape[1])], axis=1)   # a loop
    return (np.fft.ifft2(c, norm="ortho"), np.fft.rfft2(x), np.fft.irfftn(c, axes=(0,)), np.fft.fftshift(x),
            np.fft.ifftshift(c, axes=1), columns, np.fft.fftfreq(x.shape[0]), np.fft.rfftfreq(x.shape[1], 0.5))


@functools.cache
def _kernel(name: str):
    return {
        "one": lambda: jit(_one_function, signature="c128[n], f64[n]"),
        "single": lambda: jit(_single_function, signature="c64[n], f32[n]"),
        "nd": lambda: jit(_nd_function, signature="f64[a, b], c128[a, b]"),
        "ad": lambda: jit(_ad_function, signature="f64[n], f64[n], c128[n]"),
    }[name]()


def _check(got, want, tol: float) -> None:
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape and g.dtype == w.dtype, (i, g.shape, w.shape, g.dtype, w.dtype)
        assert _rel(g, w) <= tol, (i, _rel(g, w))


def test_one_kernel_every_length_float64() -> None:
    kernel = _kernel("one")
    rng = np.random.default_rng(0)
    for n in LENGTHS:
        c = rng.standard_normal(n) + 1j * rng.standard_normal(n)
        r = rng.standard_normal(n)
        _check(kernel(c, r), _one_function(c, r), 1e-14)


def test_one_kernel_every_length_float32() -> None:
    kernel = _kernel("single")
    rng = np.random.default_rng(1)
    for n in [7, 16, 17, 1000, 1155, 65537]:
        c = rng.standard_normal(n) + 1j * rng.standard_normal(n)
        r = rng.standard_normal(n)
        got = kernel(c.astype(np.complex64), r.astype(np.float32))
        for g, w in zip(got, _single_function(c, r)):      # NumPy 2's dtypes, the float64 result
            assert g.dtype == (np.complex64 if w.dtype == np.complex128 else np.float32)
            assert g.shape == w.shape and _rel(g, w) <= 1e-6, (n, _rel(g, w))


def test_several_axes_and_vmap() -> None:
    kernel = _kernel("nd")
    rng = np.random.default_rng(2)
    for shape in [(2, 3), (5, 8), (17, 12), (64, 97)]:
        x = rng.standard_normal(shape)
        c = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        _check(kernel(x, c), _nd_want(x, c), 1e-14)


def _ad_function(x, t, c):
    _, tangent = jvp(lambda v: np.fft.irfft(np.fft.rfft(np.sin(v)) * (1 + 2j)), (x,), (t,))
    y, back = vjp(lambda v: np.fft.irfft(np.fft.fft(v * c), norm="ortho"), x)
    (pulled,) = back(np.cos(y))
    return tangent, pulled


@pytest.mark.parametrize("n", [6, 37])          # radices, and Bluestein
def test_transforms(n: int) -> None:
    kernel = _kernel("ad")
    rng = np.random.default_rng(n)
    x, t = rng.standard_normal(n), rng.standard_normal(n)
    c = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    tangent, back = kernel(x, t, c)

    # vjp: the finite-difference Jacobian of NumPy's functions
    f = lambda v: np.fft.irfft(np.fft.fft(v * c), norm="ortho")
    ct = np.cos(f(x))
    np.testing.assert_allclose(back, jacobian(f, [x]).T @ ct, rtol=1e-6, atol=1e-6)
    # jvp: a directional derivative
    h = lambda v: np.fft.irfft(np.fft.rfft(np.sin(v)) * (1 + 2j))
    (want,) = directional_derivative(h, [x], [t])
    np.testing.assert_allclose(tangent, want, rtol=1e-6, atol=1e-6)


def test_empty_axis_is_numpys_error() -> None:
    kernel = _kernel("one")
    with pytest.raises(ValueError, match=r"Invalid number of FFT data points \(0\)"):
        kernel(np.zeros(0, np.complex128), np.zeros(0))
    with pytest.raises(ValueError, match=r"Invalid number of data points \(0\)"):   # irfft of 1 term
        kernel(np.zeros(1, np.complex128), np.zeros(1))
    with pytest.raises(ValueError):                                                  # NumPy agrees
        np.fft.irfft(np.zeros(1, np.complex128))
