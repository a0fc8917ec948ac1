"""The head of a sorted row (canonicalize._head_of_sort: k rounds of selection instead of a
sort) against NumPy's stable sort: ties, NaNs, signed zeros, infinities, integers, batches."""
import numpy as np
import pytest

from compiler import jit, vmap

rng = np.random.default_rng(97)


def heads(x):
    return (np.argsort(x, axis=-1)[..., :1], np.argsort(x, axis=-1)[..., :3],
            np.sort(x, axis=-1)[..., :5], np.argsort(-x, axis=-1)[..., :8])


heads_k = jit(heads)


def _keys(dtype, shape):
    x = rng.integers(-4, 4, shape).astype(dtype)          # ties everywhere
    if np.dtype(dtype).kind == "f":
        flat = x.reshape(-1, shape[-1])
        flat[0, ::7] = np.nan
        flat[1 % len(flat), :] = np.nan
        flat[2 % len(flat), ::3] = -0.0
        flat[3 % len(flat), 1::5] = np.inf
        flat[4 % len(flat), 2::5] = -np.inf
    return x


def _stable(x):
    with np.errstate(invalid="ignore"):
        return (np.argsort(x, axis=-1, kind="stable")[..., :1], np.argsort(x, axis=-1, kind="stable")[..., :3],
                np.sort(x, axis=-1, kind="stable")[..., :5], np.argsort(-x, axis=-1, kind="stable")[..., :8])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint32])
@pytest.mark.parametrize("shape", [(32,), (6, 40), (2, 3, 33)])
def test_heads_match_the_stable_sort(dtype, shape):
    x = _keys(dtype, shape)
    for got, want in zip(heads_k(x), _stable(x)):
        np.testing.assert_array_equal(got, want)


def test_selected_not_sorted_and_long_heads_sorted():
    x = rng.standard_normal((4, 64))
    assert "sort(" not in heads_k.lower(x).ir_optimized
    long_head = jit(lambda x: np.argsort(x, axis=1)[:, :20])     # 20 > 64 / 4: a sort
    assert "sort(" in long_head.lower(x).ir_optimized
    np.testing.assert_array_equal(long_head(x), np.argsort(x, axis=1, kind="stable")[:, :20])


def test_under_vmap():
    x = _keys(np.float64, (5, 36))
    f = vmap(lambda r: np.argsort(r)[:4])
    np.testing.assert_array_equal(f(x), np.argsort(x, axis=-1, kind="stable")[:, :4])
