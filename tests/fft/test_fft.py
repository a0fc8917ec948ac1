"""np.fft compiled against NumPy's pocketfft: every length family (radix 4, 2, odd radices,
Bluestein), the accuracy bound at a large prime length, every function and keyword, and the
errors. Derivatives and vmap: the fft OpInfos (tests/ops/opinfo.py); symbolic lengths:
test_symbolic.py."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import jit, vmap

LENGTHS = [1, 2, 3, 5, 7, 8, 12, 16, 17, 30, 64, 97, 100, 128, 1000]


@jit
def _fft(x):
    return np.fft.fft(x)


def _rel(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300))


@pytest.mark.parametrize("n", LENGTHS)
def test_lengths_complex128(n: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.standard_normal((2, n)) + 1j * rng.standard_normal((2, n))
    y = _fft(x)
    assert y.dtype == np.complex128 and y.shape == (2, n)
    assert _rel(y, np.fft.fft(x)) <= 1e-14


@pytest.mark.parametrize("n", [7, 16])
def test_lengths_complex64(n: int) -> None:
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((2, n)) + 1j * rng.standard_normal((2, n))).astype(np.complex64)
    y = _fft(x)
    assert y.dtype == np.complex64
    assert _rel(y, np.fft.fft(x.astype(np.complex128))) <= 1e-6


def test_large_prime_accuracy() -> None:
    n = 100_003                                   # prime: Bluestein through 2^18-point transforms
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    assert _rel(_fft(x), np.fft.fft(x)) <= 1e-14


def _every_function(x, r, c):
    """x: real (3, 8); r: real (8,); c: complex (3, 5)."""
    return (
        np.fft.fft(x), np.fft.ifft(c, norm="ortho"), np.fft.fft(x, n=6, axis=0, norm="forward"),
        np.fft.rfft(x), np.fft.rfft(r, n=5, norm="ortho"), np.fft.irfft(c), np.fft.irfft(c, n=4, axis=0),
        np.fft.hfft(c, norm="forward"), np.fft.ihfft(r),
        np.fft.fft2(x), np.fft.ifft2(c, s=(4, 6)), np.fft.fftn(x, axes=(0,)), np.fft.ifftn(c, norm="ortho"),
        np.fft.rfft2(x), np.fft.irfft2(c), np.fft.rfftn(x, s=(2, 6), axes=(0, 1)), np.fft.irfftn(c, axes=(0, 1)),
        np.fft.fftfreq(8), np.fft.fftfreq(7, d=0.5), np.fft.rfftfreq(9, 0.25),
        np.fft.fftshift(x), np.fft.ifftshift(x, axes=1), np.fft.fftshift(c, axes=(0,)),
    )


def _dtypes_function(x, c):
    return np.fft.fft(x), np.fft.rfft(x), np.fft.irfft(c), np.fft.ifft(c), np.fft.hfft(c)


_every = jit(_every_function)
_dtypes = jit(_dtypes_function)


def _check(got, want, tol):
    for i, (g, w) in enumerate(zip(got, want)):
        g = np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype, (i, g.shape, w.shape, g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * max(1.0, float(np.abs(w).max())),
                                   err_msg=f"output {i}")


def test_every_function() -> None:
    rng = np.random.default_rng(1)
    x, r = rng.standard_normal((3, 8)), rng.standard_normal(8)
    c = rng.standard_normal((3, 5)) + 1j * rng.standard_normal((3, 5))
    _check(_every(x, r, c), _every_function(x, r, c), 1e-13)


def test_single_precision_dtypes() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 6)).astype(np.float32)
    c = (rng.standard_normal((2, 4)) + 1j * rng.standard_normal((2, 4))).astype(np.complex64)
    _check(_dtypes(x, c), _dtypes_function(x, c), 2e-6)        # complex64 / float32 as NumPy 2


def test_vmap_is_rows() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 4, 12))
    got = vmap(lambda a: np.fft.rfft(a, axis=0), in_dims=2)(x)
    want = np.stack([np.fft.rfft(x[:, :, k], axis=0) for k in range(12)])
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


def test_symbolic_batch() -> None:
    k = jit(lambda x: np.fft.ifft(x, norm="ortho"), signature="c128[b, 6]")
    x = np.arange(18.0).reshape(3, 6) * (1 + 0.5j)
    np.testing.assert_allclose(k(x), np.fft.ifft(x, norm="ortho"), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("fn, exc, match", [
    (lambda x: np.fft.fft(x, n=0), ValueError, "Invalid number of FFT data points"),
    (lambda x: np.fft.fft(x, norm="twice"), ValueError, "Invalid norm value"),
    (lambda x: np.fft.rfft(x * 1j), TypeError, "real input"),
])
def test_errors(fn, exc, match) -> None:
    with pytest.raises(exc, match=match):
        jit(fn)(np.ones(4))
    with pytest.raises(exc):                      # NumPy agrees
        fn(np.ones(4))


def test_windows_of_rows() -> None:
    # 300 rows of 128: windows of 128 rows and a tail of 44 (a chunked op), real and complex
    rng = np.random.default_rng(4)
    x = rng.standard_normal((300, 128))
    z = x + 1j * rng.standard_normal((300, 128))
    got_r, got_c = jit(lambda a, b: (np.fft.rfft(a), np.fft.ifft(b)))(x, z)
    assert _rel(got_r, np.fft.rfft(x)) <= 1e-14
    assert _rel(got_c, np.fft.ifft(z)) <= 1e-14




def _rows_and_long_function(rows, rows_c, long_c):
    return np.fft.rfft(rows), np.fft.fft(rows_c), np.fft.ifft(rows_c, n=48), np.fft.ifft(long_c), \
        np.fft.fft(long_c[:, :1024]), np.fft.rfft(long_c.real)


def _rows_and_short_function(rows, rows_c, long_c):
    return np.fft.rfft(rows), np.fft.ifft(rows_c, n=48), np.fft.fft(long_c[:, :1024])


_rows_and_long = jit(_rows_and_long_function)
_rows_and_short = jit(_rows_and_short_function)


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-14), (np.float32, 1e-6)])
def test_batch_innermost_passes(dtype, tol) -> None:
    # 24 rows (a window of rows: passes vectorized across rows) of odd radices (rfft of 90 through
    # 45 = 3 * 3 * 5, fft of 45, ifft of 48 = 8 * 3 * 2), two rows of 2^14 (the four steps in
    # slabs of 32 columns; rfft: of the half-length complex transform) and two of 1024 (fewer
    # than 8 rows: four steps too), against NumPy in float64; float32: a few of them
    rng = np.random.default_rng(5)
    rows = rng.standard_normal((24, 90))
    rows_c = rng.standard_normal((24, 45)) + 1j * rng.standard_normal((24, 45))
    long_c = rng.standard_normal((2, 1 << 14)) + 1j * rng.standard_normal((2, 1 << 14))
    cdt = np.complex128 if dtype == np.float64 else np.complex64
    kernel, fn = (_rows_and_long, _rows_and_long_function) if dtype == np.float64 else \
        (_rows_and_short, _rows_and_short_function)
    got = kernel(rows.astype(dtype), rows_c.astype(cdt), long_c.astype(cdt))
    for i, (g, w) in enumerate(zip(got, fn(rows, rows_c, long_c))):
        assert g.dtype == cdt and g.shape == w.shape, i
        assert _rel(g, w) <= tol, (i, _rel(g, w))
