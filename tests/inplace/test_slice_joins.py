"""Slices along one axis written into a fill become one join (canonicalize.py), and a join
along a short last axis is one loop nest of consecutive stores (primitives/shape.py):
results equal NumPy's, whatever the order, overlap and coverage of the slices."""
import numpy as np
import pytest

import compiler
from compiler import jit


def grid_by_slices(x):
    n = x.shape[0]
    z = np.zeros((n, n, 3))
    z[:, :, 0] = x[:, None]
    z[:, :, 1] = x[None, :]
    z[:, :, 2] = x[:, None] * x[None, :]
    return z


def gaps(x, y):
    z = np.ones((x.shape[0], 6), dtype=x.dtype)
    z[:, 3:5] = y
    z[:, 1] = x
    return z


def overlapping(a, b):
    z = np.zeros((a.shape[0], 4))
    z[:, 0:2] = a
    z[:, 1:3] = b
    return z


def rows(x, y):
    z = np.zeros((5, x.shape[0]))
    z[1] = x
    z[3] = y * 2
    return z


def into_argument(z, x):
    z = z.copy()
    z[:, 0] = x
    return z


def stack_last(x, y):
    return np.stack([x, y, x * y], axis=-1)


def stack_wide(x):
    return np.stack([x * k for k in range(17)], axis=-1)


grid_k, gaps_k, overlapping_k, rows_k = jit(grid_by_slices), jit(gaps), jit(overlapping), jit(rows)
into_k, stack_k, wide_k = jit(into_argument), jit(stack_last), jit(stack_wide)
rng = np.random.default_rng(0)


def test_coordinate_grid_is_one_join():
    x = np.linspace(0, 1, 37)
    np.testing.assert_array_equal(grid_k(x), grid_by_slices(x))
    ir = grid_k.lower(x).ir_optimized
    assert "concatenate" in ir and "update_slice" not in ir


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_uncovered_columns_keep_the_fill(dtype):
    x = rng.integers(-9, 9, 11).astype(dtype)
    y = rng.integers(-9, 9, (11, 2)).astype(dtype)
    got = gaps_k(x, y)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, gaps(x, y))


def test_a_later_slice_overwrites_an_earlier_one():
    a, b = rng.standard_normal((9, 2)), rng.standard_normal((9, 2))
    np.testing.assert_array_equal(overlapping_k(a, b), overlapping(a, b))


def test_rows_of_a_fill():
    x, y = rng.standard_normal(13), rng.standard_normal(13)
    np.testing.assert_array_equal(rows_k(x, y), rows(x, y))


def test_a_slice_of_an_argument_is_still_written_in_place():
    z, x = rng.standard_normal((6, 3)), rng.standard_normal(6)
    np.testing.assert_array_equal(into_k(z, x), into_argument(z, x))
    assert "update_slice" in into_k.lower(z, x).ir_optimized


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.complex128])
def test_stack_along_a_short_last_axis(dtype):
    x = (rng.standard_normal((5, 33)) * 10).astype(dtype)
    y = (rng.standard_normal((5, 33)) * 10).astype(dtype)
    if np.iscomplexobj(x):
        x, y = x + 1j * y[::-1], y - 2j * x
    np.testing.assert_allclose(stack_k(x, y), stack_last(x, y), rtol=1e-15 if np.iscomplexobj(x) else 0)


def test_a_wide_stack_takes_the_loop_per_operand():
    x = rng.standard_normal(29)
    np.testing.assert_array_equal(wide_k(x), stack_wide(x))


def test_vmap_and_grad_through_slice_writes():
    xs = rng.standard_normal((4, 7))
    got = compiler.vmap(grid_by_slices)(xs)
    np.testing.assert_array_equal(got, np.stack([grid_by_slices(x) for x in xs]))
    x = xs[0]
    g = compiler.grad(lambda x: np.sum(grid_by_slices(x) ** 2))(x)
    eps, fd = 1e-6, np.empty_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = eps
        fd[i] = (np.sum(grid_by_slices(x + e) ** 2) - np.sum(grid_by_slices(x - e) ** 2)) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
