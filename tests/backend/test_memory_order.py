"""Loads of a temporary buffer stay after the stores that fill it.

LLVM 22's SLP vectorizer moved the last stores of a small stack temporary below a
masked gather that reads it (two gathers `(x[::2] + 1)[i]` from fully unrolled
loops): the kernel returned stack garbage. When the function body reads with
run-time indices, Codegen puts a compiler-only fence (no instruction) after every
loop nest of it that fills a buffer, so no pass moves memory accesses from one
loop nest into another.
"""
from __future__ import annotations

import numpy as np
import pytest

from compiler import jit


def two_gathers(x, i):
    return (x[::2] + 1)[i], (x[1::2] + 1)[i], (x[::2] + 1) * 2 - (x[1::2] + 1) * 3


def gather_of_sum(x, i):
    return np.take(np.cumsum(x) * 2.0, i) + (x[: i.shape[0]] + 1.0)[i % 3]


@pytest.mark.parametrize("n", [6, 12, 24, 40])
def test_gathers_from_small_temporaries(n):
    x = np.arange(2.0 * n)
    i = np.array([0, n - 1, 2, 2, n // 2, 1])
    for got, want in zip(jit(two_gathers)(x, i), two_gathers(x, i)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [5, 9, 17])
def test_gather_of_a_scan(n):
    x = np.linspace(-1.0, 2.0, n)
    i = np.array([n - 1, 0, 3, 3])
    np.testing.assert_allclose(jit(gather_of_sum)(x, i), gather_of_sum(x, i), rtol=1e-13)
