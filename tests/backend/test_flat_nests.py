"""Elementwise nests whose every read is at the written position run as one flat loop.

codegen._flat_nest: when each leaf of the expressions is a buffer of the result's own shape
(no broadcast, transpose, slice or index-dependent op in between), element k of every buffer
is the k-th in memory, so the nest of short rows (a loop and a remainder per row) becomes one
loop over all elements. Checked against NumPy, with the loop count from the kernel's LLVM IR,
and on the cases that must keep their nest.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from tests.lazy import lazy_jit


def _close(got, terms, eps) -> None:
    """got within a few roundings of the sum of `terms` (relative to their magnitudes)."""
    want = sum(terms)
    bound = 4 * eps * sum(np.abs(t) for t in terms)
    assert np.all(np.abs(got - want) <= bound), np.max(np.abs(got - want) / bound)


def _loops(kernel, *args) -> int:
    """The loops of the kernel's entry function (labels loop, loop.1, ...)."""
    return len(re.findall(r"^loop(?:\.\d+)?:$", kernel.lower(*args).llvm, flags=re.M))


_exp_affine = lazy_jit(lambda x, y: np.exp(x) * 2.0 + y * x)
_two_results = lazy_jit(lambda x, y: (np.sqrt(x * x + y * y), x - y))
_broadcast = lazy_jit(lambda a, w: np.tanh(a * w + 1.0))
_transposed = lazy_jit(lambda a, b: a.T * 2.0 + b)
_index = lazy_jit(lambda a: a * np.arange(a.shape[1]))
_sliced = lazy_jit(lambda a: a[:, 1:] - a[:, :-1])


@pytest.mark.parametrize("shape", [(1000, 31), (300, 20), (7, 3, 9), (64, 64), (5, 1, 13)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_same_shape_leaves_run_flat(shape, dtype) -> None:
    rng = np.random.default_rng(len(shape))
    x, y = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
    got = _exp_affine(x, y)
    _close(got, [np.exp(x) * 2.0, y * x], np.finfo(dtype).eps)
    assert got.dtype == dtype and got.shape == shape
    assert _loops(_exp_affine, x, y) == 1
    h, d = _two_results(x, y)
    np.testing.assert_allclose(h, np.hypot(x, y), rtol=1e-6 if dtype == np.float32 else 1e-15)
    np.testing.assert_array_equal(d, x - y)
    assert _loops(_two_results, x, y) <= 2          # a flat loop per nest (one or two nests)


def test_dynamic_shapes_run_flat() -> None:
    k = lazy_jit(lambda x, y: np.exp(x) * 2.0 + y * x, signature="f64[n,m], f64[n,m]")
    rng = np.random.default_rng(0)
    for shape in [(3, 5), (100, 31), (1, 1), (0, 4)]:
        x, y = rng.standard_normal(shape), rng.standard_normal(shape)
        _close(k(x, y), [np.exp(x) * 2.0, y * x], np.finfo(np.float64).eps)
    assert _loops(k, x, y) == 1


def test_nests_that_read_elsewhere_keep_their_loops() -> None:
    rng = np.random.default_rng(1)
    a, w = rng.standard_normal((300, 31)), rng.standard_normal(31)
    np.testing.assert_allclose(_broadcast(a, w), np.tanh(a * w + 1.0), rtol=1e-14)
    assert _loops(_broadcast, a, w) == 2
    b = rng.standard_normal((31, 300))
    np.testing.assert_allclose(_transposed(a, b), a.T * 2.0 + b, rtol=1e-15)
    assert _loops(_transposed, a, b) == 2
    np.testing.assert_allclose(_index(a), a * np.arange(31), rtol=1e-15)
    assert _loops(_index, a) == 2
    np.testing.assert_array_equal(_sliced(a), a[:, 1:] - a[:, :-1])
    assert _loops(_sliced, a) == 2
