"""Elementwise ops of a transposed array are computed in the array's own layout and the
transpose moves to their consumer (canonicalize._sink_transpose); transposes of transposes
compose. Values against NumPy."""
import numpy as np
import pytest

from compiler import jit

rng = np.random.default_rng(101)


def stats(X):
    return np.cov(X.T), np.corrcoef(X, rowvar=False), (X.T - X.mean(axis=0)[:, None]).T * 2.0


def mixed(a, b):
    t = np.exp(a.T) + b[:, None]          # a broadcast along the other axis
    return t, (a.T * 3.0).T, np.where(a.T > 0, a.T, 0.5).sum(axis=0)


stats_k = jit(stats)
mixed_k = jit(mixed)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_covariance_and_correlation(dtype):
    X = rng.standard_normal((300, 7)).astype(dtype)
    rtol = 2e-5 if dtype == np.float32 else 1e-12
    for got, want in zip(stats_k(X), stats(X)):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
    ir = stats_k.lower(X).ir_optimized
    assert "= sub(%X, " in ir            # the centred data in X's own layout


def test_broadcasts_and_double_transposes():
    a, b = rng.standard_normal((5, 9)), rng.standard_normal(9)
    for got, want in zip(mixed_k(a, b), mixed(a, b)):
        np.testing.assert_allclose(got, want, rtol=1e-13)
    twice = jit(lambda a: (a.T * 3.0).T)
    np.testing.assert_array_equal(twice(a), a * 3.0)
    assert "transpose" not in twice.lower(a).ir_optimized
