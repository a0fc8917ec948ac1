"""Masked and fancy assignment with static result shapes, and reductions of x[mask]:
compiled == NumPy (results and the caller's arrays), on arguments under jit and on
local copies under vmap (vs a Python loop), jvp and grad (vs finite differences)."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import grad, jit, jvp, vmap
from compiler.errors import DynamicShapeError
from tests.fd import jacobian

RNG = np.random.default_rng(11)


def shrink(x, L):
    m = np.abs(x) > L
    x[m] = x[m] - L * np.sign(x[m])             # the same mask on both sides: a where
    x[~m] = 0.0


def masked_reductions(x):
    pos = x[x > 0]
    return (np.sum(pos), pos.mean(), x[x > 0].max(), x[x < 0.5].min(), np.count_nonzero(x[x > 0.2]),
            x[x > 0].var(), np.std(x[x < 0], ddof=1), x[x > -0.5].prod(), np.any(x[x > 1] > 2),
            x[x > 0].sum(axis=0), (x[x > 0] ** 2 + 1).sum())


def copy_through_mask(x, y):
    x[y > 0] = y[y > 0]
    x[x < -1] = -1


def scatter_rows_cols(x, r, c, v):
    x[r, c] = v                                   # duplicates: the last write wins


def scatter_mixed(x, r, v):
    x[r, 1] = v
    x[0, r[::-1]] += 1.0


def scatter_3d(x, i, k, v):
    x[i, :, k] = v                                # separated index axes: they come first


def put_along(a, idx, v):
    np.put_along_axis(a, idx, v, axis=1)
    np.put_along_axis(a, idx[:, 0], -v, axis=None)


def put_and_place(a, m):
    np.putmask(a, m, np.array([10.0, 20.0, 30.0]))
    np.place(a, ~m, np.array([-1.0, -2.0]))


def diagonals(a, v):
    np.fill_diagonal(a, 5.0)
    np.fill_diagonal(a[1:], v)


def put_fill_copyto(a, b):
    a[0].fill(3.0)
    a.put([1, -1], [7.0, 8.0])
    np.copyto(a, b, where=b > 0.5)


CASES = {
    "shrink": (shrink, lambda: (RNG.normal(size=(3, 5)), 0.4)),
    "copy_through_mask": (copy_through_mask, lambda: (RNG.normal(size=7), RNG.normal(size=7))),
    "scatter_rows_cols": (scatter_rows_cols, lambda: (np.zeros((4, 5)), np.array([0, 1, 1, 3, 1]),
                                                      np.array([2, 0, 0, -1, 0]),
                                                      np.array([1.0, 2.0, 3.0, 4.0, 5.0]))),
    "scatter_broadcast": (scatter_rows_cols, lambda: (np.zeros((4, 5)), np.array([[0], [3]]),
                                                      np.array([1, 2, 4]), 7.0)),
    "scatter_mixed": (scatter_mixed, lambda: (RNG.normal(size=(4, 3)), np.array([2, 0, 2]),
                                              np.array([5.0, 6.0, 7.0]))),
    "scatter_3d": (scatter_3d, lambda: (np.zeros((3, 4, 5)), np.array([0, 2]), np.array([1, 4]),
                                        RNG.normal(size=(2, 4)))),
    "put_along": (put_along, lambda: (RNG.normal(size=(3, 4)), np.array([[0], [3], [1]]), 9.0)),
    "put_and_place": (put_and_place, lambda: (RNG.normal(size=(2, 4)), RNG.normal(size=(2, 4)) > 0)),
    "fill_diagonal": (diagonals, lambda: (RNG.normal(size=(5, 3)), np.array([1.0, 2.0]))),
    "put_fill_copyto": (put_fill_copyto, lambda: (RNG.normal(size=(2, 4)), RNG.random((2, 4)))),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_assignment_equals_numpy_on_arguments(case):
    fn, make = CASES[case]
    args = make()
    want = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    assert fn(*want) is None
    assert jit(fn)(*got) is None
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-14)


def test_masked_reductions_equal_numpy():
    kernel = jit(masked_reductions)
    for x in (RNG.normal(size=(4, 6)), RNG.normal(size=(4, 6)) + 1.0):
        got, want = kernel(x), masked_reductions(x)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert np.asarray(g).dtype == np.asarray(w).dtype
            np.testing.assert_allclose(g, w, rtol=1e-12)


def test_max_of_an_empty_selection_raises_as_numpy():
    kernel = jit(lambda x: x[x > 10].max())
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        kernel(np.zeros(3))
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        np.zeros(3)[np.zeros(3) > 10].max()


def different_masks(x):
    y = x.copy()
    y[x > 0] = x[x < 0]
    return y


@pytest.mark.parametrize("fn", [lambda x: x[x > 0], lambda x: x[x > 0] @ x[x > 0],
                                lambda x: x[x > 0] + x, lambda x: x[x > 0].cumsum(),
                                lambda x: np.concatenate([x[x > 0], x]), lambda x: x[x > 0].shape[0] + x,
                                lambda x: different_masks(x)])
def test_other_uses_of_a_mask_read_stay_dynamic_shape_errors(fn):
    with pytest.raises(DynamicShapeError):
        jit(fn)(np.ones(4))


# ---- on local copies under the transforms -----------------------------------------------------

def soft_threshold(x, w):
    y = x.copy()
    m = np.abs(y) > 0.3
    y[m] = y[m] - 0.3 * np.sign(y[m])
    y[~m] = 0.0
    y[[0, 2], [1, 0]] = y[[0, 2], [1, 0]] * 2.0
    np.put_along_axis(y, np.array([[1], [0], [2]]), 0.5 * y[:, :1], axis=1)
    return (y * w).sum() + np.sum(y[y > 0] ** 2)


def test_vmap_of_masked_and_fancy_assignment_on_copies():
    xs, w = RNG.normal(size=(5, 3, 3)), RNG.normal(size=(3, 3))
    got = vmap(soft_threshold, in_dims=(0, None))(xs, w)
    np.testing.assert_allclose(got, [soft_threshold(x, w) for x in xs], rtol=1e-12)


def test_derivatives_of_masked_and_fancy_assignment_on_copies():
    x, w = RNG.normal(size=(3, 3)), RNG.normal(size=(3, 3))
    x[np.abs(np.abs(x) - 0.3) < 0.05] += 0.2          # away from the threshold's kink
    want = jacobian(soft_threshold, (x, w))
    np.testing.assert_allclose(grad(soft_threshold)(x, w), want, rtol=1e-6, atol=1e-9)
    t = RNG.normal(size=(3, 3))
    _, tangent = jvp(soft_threshold, (x, w), (t, np.zeros_like(w)))
    np.testing.assert_allclose(tangent, np.sum(want * t), rtol=1e-6)
