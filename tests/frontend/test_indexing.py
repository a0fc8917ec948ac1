"""Static and dynamic indexing, and functional updates of every kind."""
from __future__ import annotations

import numpy as np
import pytest

from tests.frontend.helpers import check, rand

X = rand(5, 4)

STATIC_INDICES = [
    0, -1, 4, (1, 2), (-1, -2), slice(1, 3), slice(None, None, 2), slice(None, None, -1),
    slice(-2, None), slice(None, -2), slice(4, 1, -1), slice(None, None, -2), slice(3, 3),
    slice(10, 20), slice(-10, 2), (slice(None), 1), (Ellipsis, 0), (0, Ellipsis),
    (slice(1, 4, 2), slice(None, None, -3)), (None, 0), (slice(None), None), (Ellipsis, None),
    (1, slice(None), None), (slice(4, None, -2), 2), (),
]


@pytest.mark.parametrize("index", STATIC_INDICES, ids=repr)
def test_static_indexing(index):
    check(lambda a: a[index], X)


def test_index_spellings():
    check(lambda a: a[1:3, ::2], X)
    check(lambda a: a[..., 1:], X)
    check(lambda a: a[:, -1], X)
    check(lambda a: a[2][1], X)
    check(lambda a: a[-1, -1] * 2, X)


@pytest.mark.parametrize("index", [[0, 2], [4, -1, 0], np.array([1, 1, 3]),
                                   np.array([[0, 1], [2, 3]]), [True, False, True, False, True]],
                         ids=repr)
def test_constant_array_indexing(index):
    check(lambda a: a[index], X)
    check(lambda a: a[:, [0, -1]], X)


def test_multiple_array_indices():
    check(lambda a: a[[0, 1, 2], [3, 2, 1]], X)
    check(lambda a: a[[0, 4], 1], X)
    check(lambda a: a[np.array([[0], [1]]), np.array([1, 2])], X)
    check(lambda a: a[1:3, [0, 2]], X)
    x3 = rand(3, 4, 5)
    check(lambda a: a[0, :, [1, 2]], x3)          # NumPy's placement rule: advanced dims first
    check(lambda a: a[:, [0, 1], [1, 2]], x3)
    check(lambda a: np.take(a, [0, 2], axis=1), x3)
    check(lambda a: a.take([1, 0]), x3)


def test_staged_integer_index():
    check(lambda a, i: a[i], X, np.int64(2))
    check(lambda a, i: a[i], X, np.int64(-1))
    check(lambda a, i: a[1:, i], X, np.int64(3))
    check(lambda a, i: a[i, ::2], X, np.int32(0))
    check(lambda a, i: a[a[0].argmax()] + a[i], X, np.int64(1))


def test_staged_integer_array_index():
    check(lambda a, idx: a[idx], X, np.array([0, 3, -1]))
    check(lambda a, idx: a[:, idx], X, np.array([[1], [2]]))
    check(lambda a, i, j: a[i, j], X, np.array([0, 1]), np.array([3, 2]))


def test_iterate_rows():
    def f(a):
        total = 0.0
        for row in a:
            total = total + row.sum()
        return total
    check(f, X)

    def g(a):
        p, q = a[:2]
        return p - q
    check(g, X)


# ---- functional updates -------------------------------------------------------------------

def test_copy_then_set():
    def f(x):
        y = x.copy()
        y[1:3] = 0.0
        return y
    check(f, X)


@pytest.mark.parametrize("index", [0, -1, (1, 2), slice(1, 4), slice(None, None, 2),
                                   slice(None, None, -1), (slice(None), 0), (Ellipsis, -1),
                                   (slice(4, 0, -2), slice(1, 3))], ids=repr)
def test_setitem_static(index):
    def f(x, v):
        y = x.copy()
        y[index] = v
        return y
    check(f, X, 7.0)
    check(f, X, np.float32(3.5))


def test_setitem_broadcasts_and_casts():
    def f(x, v):
        y = np.zeros((3, 4), dtype=np.int32)
        y[1] = v
        y[:, 0] = 9.7
        return y
    check(f, X, rand(4))

    def g(x):
        y = x.copy()
        y[:2] = x[3]
        return y
    check(g, X)


def test_augmented_setitem():
    def f(x, i):
        y = x.copy()
        y[0] += 1
        y[1:3] *= 2.0
        y[i] -= x[0]
        y[:, -1] /= 4
        return y
    check(f, X, np.int64(4))


def test_dynamic_update():
    def f(x, i, v):
        y = np.zeros_like(x)
        y[i] = v
        y[i, 1:3] = 5.0
        return y
    check(f, X, np.int64(2), rand(4))
    check(f, X, np.int64(-2), rand(4))


def test_scatter_update():
    def f(x, idx):
        y = x.copy()
        y[idx] = -1.0
        y[[0, 1]] = x[3:5]
        y[:, [0, 3]] = 2.0
        return y
    check(f, X, np.array([2, 4]))

    def g(x):
        y = x.copy()
        y[[1, 1, 2]] += 1.0          # NumPy: buffered, a repeated index adds once
        return y
    check(g, X)


def test_mask_update():
    def f(x):
        y = x.copy()
        y[y < 0] = 0.0
        y[np.array([True, False, True, False, True])] = 1.0
        return y
    check(f, X)


def test_local_array_updates():
    def f(x):
        out = np.zeros(4)
        for i in range(4):
            out[i] = x[i].sum()
        return out
    check(f, X)

    def g(x):
        acc = np.array([0.0, 0.0])
        acc[0] = x.sum()
        acc[1] = x.max()
        return acc
    check(g, X)


def test_inplace_operators_on_local_arrays():
    def f(x):
        y = x * 1
        y += 1
        y *= 2
        z = y
        z -= 1                         # aliases see in-place updates
        return y, z
    check(f, X)

    def g(x):
        x += 1                         # rebinding an argument: the caller's array is untouched
        return x
    check(g, X.copy())
