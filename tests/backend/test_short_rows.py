"""Reductions over a short contiguous last axis (backend/codegen.py, SHORT_ROW) vectorize
within each row, not across rows with gathers; a contraction without free axes (a batch of
inner products) is a product and a sum (transforms/canonicalize.py). Results against NumPy."""
import numpy as np
import pytest

from compiler import jit
from compiler.backend import target

rng = np.random.default_rng(61)


def row_stats(a, b):
    return (a * b).sum(axis=1), np.abs(a).max(axis=-1), np.argmax(a, axis=1), np.sqrt((a * a).sum(axis=1))


def inner_products(a, b, c, d):
    return np.einsum("ij,ij->i", a, b), np.einsum("bij,bij->b", c, d), np.einsum("ij,ij->j", a, b)


row_stats_k = jit(row_stats)
inner_k = jit(inner_products)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cols", [1, 5, 16, 64, 65])
def test_short_row_reductions_match_numpy(dtype, cols):
    a, b = (rng.standard_normal((300, cols)).astype(dtype) for _ in range(2))
    rtol = 1e-5 if dtype == np.float32 else 1e-13
    for got, want in zip(row_stats_k(a, b), row_stats(a, b)):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


def test_no_gathers_across_rows():
    a, b = rng.standard_normal((1000, 16)), rng.standard_normal((1000, 16))
    assert "masked.gather" not in row_stats_k.lower(a, b).llvm_optimized


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_inner_products_match_numpy(dtype):
    a, b = (rng.integers(-5, 5, (200, 16)).astype(dtype) for _ in range(2))
    c, d = (rng.integers(-5, 5, (3, 7, 9)).astype(dtype) for _ in range(2))
    for got, want in zip(inner_k(a, b, c, d), inner_products(a, b, c, d)):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert "dot_general" not in inner_k.lower(a, b, c, d).ir_optimized


def scale_rows(a, s):
    return a * s[:, None] + 1.0


scale_rows_k = jit(scale_rows)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cols", [3, 10, 16, 37])
def test_short_rows_of_an_elementwise_result(dtype, cols):
    a = rng.standard_normal((500, cols)).astype(dtype)
    s = rng.standard_normal(500).astype(dtype)
    np.testing.assert_allclose(scale_rows_k(a, s), scale_rows(a, s), rtol=1e-6)
    if cols == 10:      # each row vectorized, not the loop over rows with gathers and scatters
        text = scale_rows_k.lower(a, s).llvm_optimized
        assert "masked.gather" not in text and "masked.scatter" not in text


def softmax(x):
    p = np.exp(x - x.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True)


softmax_k = jit(softmax)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_over_ten_classes(dtype):
    """keepdims reductions over rows of 10: no loop of their nests goes across rows."""
    x = rng.standard_normal((400, 10)).astype(dtype)
    np.testing.assert_allclose(softmax_k(x), softmax(x), rtol=1e-5 if dtype == np.float32 else 1e-13)
    text = softmax_k.lower(x).llvm_optimized
    assert "masked.gather" not in text and "masked.scatter" not in text


def layer(a, w, b):
    return np.tanh(a * w + b), a / a.sum(axis=1, keepdims=True)


layer_k = jit(layer)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cols", [9, 10, 15, 17, 20, 31, 33, 63])
def test_short_rows_with_vector_math(dtype, cols):
    """Rows that are not a whole number of vectors, with and without vector math in the
    row (a scalar or a masked remainder, codegen.Codegen.loop's row): every element of
    every row, compared with NumPy."""
    a = (rng.random((101, cols)) + 0.5).astype(dtype)
    w, b = (rng.standard_normal(cols).astype(dtype) for _ in range(2))
    rtol = 1e-5 if dtype == np.float32 else 1e-13
    for got, want in zip(layer_k(a, w, b), layer(a, w, b)):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


def test_short_row_remainder_is_not_masked():
    """A row of 10 float64 without vector math: a whole vector and a two-element remainder,
    not masked vector loads and stores over 16 lanes (2.9x slower)."""
    a, s = rng.standard_normal((500, 10)), rng.standard_normal(500)
    text = scale_rows_k.lower(a, s).llvm_optimized
    assert "masked.store" not in text and "masked.load" not in text


_affine_k = jit(lambda a, w, b: np.tanh(a * w + b))


@pytest.mark.parametrize("dtype, cols", [(np.float64, 12), (np.float64, 20), (np.float64, 31),
                                         (np.float32, 20), (np.float32, 47)])
def test_a_short_row_of_vector_math_is_one_masked_trip(dtype, cols):
    """A row of vector math shorter than 4 vectors is one trip of a masked loop of 2 or 4
    interleaved vectors (codegen.Codegen.loop_nest): their dependency chains overlap, where
    a scalar remainder of up to 15 elements or several masked trips were up to 5x slower."""
    a = (rng.random((64, cols)) + 0.5).astype(dtype)
    w, b = (rng.standard_normal(cols).astype(dtype) for _ in range(2))
    rtol = 1e-5 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(_affine_k(a, w, b), np.tanh(a * w + b), rtol=rtol, atol=rtol)
    text = _affine_k.lower(a, w, b).llvm
    lanes = target.host().vector_bits // (8 * a.itemsize)
    if cols <= 8 or cols % 8 == 0 or cols >= 4 * lanes:        # not a short row of 4 vectors
        assert '"llvm.loop.vectorize.predicate.enable", i1 true' not in text
        return
    assert '"llvm.loop.vectorize.predicate.enable", i1 true' in text
    assert f'"llvm.loop.interleave.count", i32 {2 if cols <= 2 * lanes else 4}' in text
