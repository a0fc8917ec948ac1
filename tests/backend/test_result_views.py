"""A result that is a reshape of a value computed in the kernel (codegen._result_views):
the value is written straight into the result's output array, with no temporary copied
out at the end. Results against NumPy."""
import numpy as np
import pytest

from compiler import jit

rng = np.random.default_rng(71)


def one_hot(y):
    out = np.zeros((y.shape[0], 10))
    out[np.arange(y.shape[0]), y] = 1.0
    return out


def flat_then_shaped(x, i):
    z = np.zeros(x.size)
    z[i] = x.ravel()[i]
    return z.reshape(x.shape), (x @ x.T).reshape(-1), z.reshape(x.shape) * 2


one_hot_k = jit(one_hot)
flat_k = jit(flat_then_shaped)


@pytest.mark.parametrize("n", [1, 7, 1000])
def test_one_hot_matches_numpy(n):
    y = rng.integers(-10, 10, n)
    got = one_hot_k(y)
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got, one_hot(y))


def test_one_hot_scatters_into_the_output():
    """No temporary of the result's size: the scatter writes the output array."""
    y = rng.integers(0, 10, 100000)
    text = one_hot_k.lower(y).llvm
    assert "8000064" not in text and "8000000" not in text   # no 8 MB workspace request


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_views_of_values_read_elsewhere(dtype):
    """A viewed value also read by another result, and a product reshaped."""
    x = rng.standard_normal((6, 5)).astype(dtype)
    i = np.array([0, 3, 7, 29])
    for got, want in zip(flat_k(x, i), flat_then_shaped(x, i)):
        np.testing.assert_allclose(got, want, rtol=1e-5)
