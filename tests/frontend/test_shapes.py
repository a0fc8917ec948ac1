"""Shape manipulation and array creation."""
from __future__ import annotations

import numpy as np
import pytest

from tests.frontend.helpers import check, rand


@pytest.mark.parametrize("shape", [(6, 4), (-1,), (2, -1), (4, 3, 2), 24, (-1, 2, 3), (1, 24)])
def test_reshape(shape):
    x = rand(4, 6)
    check(lambda a: a.reshape(shape), x)
    check(lambda a: np.reshape(a, shape), x)


def test_reshape_varargs_and_ravel():
    x = rand(2, 3, 4)
    check(lambda a: a.reshape(6, 4), x)
    check(lambda a: a.reshape(-1, 4), x)
    check(lambda a: a.ravel(), x)
    check(lambda a: np.ravel(a), x)
    check(lambda a: a.flatten(), x)
    check(lambda a: a.reshape(a.shape[0], -1), x)


@pytest.mark.parametrize("axes", [None, (1, 0, 2), (2, 0, 1), (-1, 0, 1)])
def test_transpose(axes):
    x = rand(2, 3, 4)
    check(lambda a: np.transpose(a, axes), x)
    check(lambda a: a.transpose(axes), x)


def test_transpose_variants():
    x = rand(2, 3, 4)
    check(lambda a: a.T, x)
    check(lambda a: a.transpose(2, 0, 1), x)
    check(lambda a: a.mT, x)
    check(lambda a: np.swapaxes(a, 0, 2), x)
    check(lambda a: a.swapaxes(-1, 1), x)
    check(lambda a: np.moveaxis(a, 0, -1), x)
    check(lambda a: np.moveaxis(a, (0, 1), (2, 0)), x)
    check(lambda a: np.permute_dims(a, (1, 2, 0)), x)


def test_expand_squeeze():
    x = rand(3, 1, 4)
    check(lambda a: np.expand_dims(a, 0), x)
    check(lambda a: np.expand_dims(a, -1), x)
    check(lambda a: np.expand_dims(a, (0, 2)), x)
    check(lambda a: a[None], x)
    check(lambda a: a[:, None, :, None], x)
    check(lambda a: np.squeeze(a), x)
    check(lambda a: a.squeeze(1), x)
    check(lambda a: np.squeeze(a[None], axis=0), x)
    check(lambda a: np.atleast_2d(a[0, 0]), x)
    check(lambda a: np.atleast_3d(a[0]), x)
    check(lambda a: np.atleast_1d(a.sum()), x)


def test_broadcast_to():
    check(lambda a: np.broadcast_to(a, (2, 3, 4)), rand(3, 1))
    check(lambda a: np.broadcast_to(a, (5,)), np.float64(2.0))
    check(lambda a, b: np.broadcast_arrays(a, b), rand(3, 1), rand(4))


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_concatenate(axis):
    a, b = rand(2, 3), rand(2, 3)
    check(lambda x, y: np.concatenate([x, y], axis=axis), a, b)
    check(lambda x, y: np.concatenate((x, y, x), axis), a, b)


def test_concatenate_promotes():
    check(lambda x, y: np.concatenate([x, y]), rand(3).astype(np.float32), rand(2, dtype=np.int64))
    check(lambda x: np.concatenate([x, [1.0, 2.0]]), rand(3).astype(np.float32))


@pytest.mark.parametrize("axis", [0, 1, -1, 2])
def test_stack(axis):
    a, b = rand(2, 3), rand(2, 3)
    check(lambda x, y: np.stack([x, y], axis=axis), a, b)


def test_hstack_vstack():
    check(lambda x, y: np.hstack([x, y]), rand(3), rand(2))
    check(lambda x, y: np.hstack((x, y)), rand(2, 3), rand(2, 1))
    check(lambda x, y: np.vstack([x, y]), rand(3), rand(3))
    check(lambda x, y: np.vstack([x, y]), rand(2, 3), rand(1, 3))
    check(lambda x, y: np.dstack([x, y]), rand(2, 3), rand(2, 3))
    check(lambda x, y: np.column_stack([x, y]), rand(3), rand(3))
    check(lambda x: np.array([x, x * 2]), rand(3))
    check(lambda x: np.array([[x[0], x[1]], [x[2], 1.0]]), rand(3))
    check(lambda x: np.append(x, x[:2]), rand(4))


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1), -1])
def test_flip(axis):
    check(lambda a: np.flip(a, axis), rand(3, 4))


def test_flip_spellings():
    x = rand(3, 4)
    check(lambda a: a[::-1], x)
    check(lambda a: a[:, ::-1], x)
    check(lambda a: np.fliplr(a), x)
    check(lambda a: np.flipud(a), x)


@pytest.mark.parametrize("reps", [2, (2, 1), (1, 3), (2, 2, 2), (3,)])
def test_tile(reps):
    check(lambda a: np.tile(a, reps), rand(2, 3))
    check(lambda a: np.tile(a, reps), rand(3))


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_repeat(axis):
    check(lambda a: np.repeat(a, 3, axis=axis), rand(2, 3))
    check(lambda a: a.repeat(2, axis), rand(2, 3))


def test_repeat_counts_array():
    check(lambda a: np.repeat(a, [1, 0, 2], axis=0), rand(3, 2))


def test_roll_pad_split():
    x = rand(4, 5)
    check(lambda a: np.roll(a, 2), x)
    check(lambda a: np.roll(a, -1, axis=1), x)
    check(lambda a: np.roll(a, (1, 2), axis=(0, 1)), x)
    check(lambda a: np.pad(a, 1), x)
    check(lambda a: np.pad(a, ((1, 0), (0, 2)), constant_values=3.0), x)
    check(lambda a: np.split(a, 2), x)
    check(lambda a: np.split(a, [1, 3], axis=1), x)


def test_diagonal_family():
    m = rand(4, 4)
    check(lambda a: np.diagonal(a), m)
    check(lambda a: a.diagonal(1), m)
    check(lambda a: np.diagonal(a, -1), m)
    check(lambda a: np.diag(a), m)
    check(lambda a: np.diag(a, 1), m)
    check(lambda a: np.diag(a[0]), m)
    check(lambda a: np.diag(a[0], -1), m)
    check(lambda a: np.diag(a[0], 2), m)
    check(lambda a: np.tril(a), m)
    check(lambda a: np.triu(a, 1), m)
    check(lambda a: np.tril(a, -1), rand(3, 4))


@pytest.mark.parametrize("dtype", [None, np.float32, np.int32, np.bool_])
def test_creation(dtype):
    x = rand(2, 3)
    kw = {} if dtype is None else {"dtype": dtype}
    check(lambda a: a + np.zeros((2, 3), **kw), x)
    check(lambda a: np.ones(3, **kw) * 2, x)
    check(lambda a: np.full((2, 2), 7, **kw), x)
    check(lambda a: np.empty(4, **kw) * 0, x)
    check(lambda a: np.zeros_like(a, **kw), x)
    check(lambda a: np.ones_like(a, **kw), x)
    check(lambda a: np.full_like(a, 3, **kw), x)
    check(lambda a: np.empty_like(a, **kw) * 0, x)
    check(lambda a: np.eye(3, **kw), x)
    check(lambda a: np.identity(2, **kw), x)


def test_creation_variants():
    x = rand(3)
    check(lambda a: np.full((2, 3), a), x)
    check(lambda a: np.full(3, a[0]), x)
    check(lambda a: np.eye(3, 4, k=1), x)
    check(lambda a: np.eye(4, 3, k=-2), x)
    check(lambda a: np.arange(5) * a[0], x)
    check(lambda a: np.arange(1, 10, 3) + a[0], x)
    check(lambda a: np.arange(0.0, 1.0, 0.25) + a[0], x)
    check(lambda a: np.arange(3, dtype=np.float32) + a, x)
    check(lambda a: np.linspace(0, 1, 5) + a[0], x)
    check(lambda a: np.linspace(0, 1, 4, endpoint=False), x)
    check(lambda a: np.array([1, 2, 3]) * a, x)
    check(lambda a: np.asarray([1.0, 2.0, 3.0], dtype=np.float32) * a, x)
    check(lambda a: np.copy(a) + 1, x)


def test_static_args_and_attributes():
    x = rand(2, 3)
    check(lambda a: np.zeros(a.shape) + a.ndim + a.size + len(a), x)
    check(lambda a: np.ones(a.shape[::-1]).T * a, x)
    check(lambda a: a.astype(a.dtype) * np.float64(a.shape[1]), x)
    check(lambda a: np.zeros((a.shape[0], 2 * a.shape[1]), dtype=a.dtype), x)
    check(lambda a: a.reshape(np.shape(a)[::-1]) + np.ndim(a) + np.size(a), x)


def test_linspace_with_array_bounds():
    check(lambda a, b: np.linspace(a, b, 5), np.float64(0.5), np.float64(2.0))
    check(lambda a: np.linspace(a, 1.0, 4), rand(3).astype(np.float32), rtol=1e-6)
    check(lambda a: np.linspace(0.0, a, 3, endpoint=False), rand(2))
