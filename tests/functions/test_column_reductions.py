"""max and min over leading axes with the last axis kept (`X.min(axis=0)`) walk the rows in
blocks like a float sum (primitives/reduce.py `_blocked`): NumPy's results, NaN first-class
and -0 below +0, for short and long rows, many rows, and every dtype."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import jit


def col_min(x):
    return x.min(axis=0)


def col_max(x):
    return np.max(x, axis=(0, 1))


K_MIN, K_MAX = jit(col_min), jit(col_max)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("rows, cols", [(1, 3), (65, 20), (1000, 7), (300, 64)])
def test_column_min_max(dtype, rows, cols):
    rng = np.random.default_rng(rows * cols)
    x = (rng.standard_normal((rows, cols)) * 100).astype(dtype)
    if np.dtype(dtype).kind == "f":
        x[rows // 2, 0] = np.nan                      # NaN wins, wherever it is
        x[:, 1 % cols] = 0.0
        x[rows - 1, 1 % cols] = -0.0                  # -0 is the min of a column of zeros
    np.testing.assert_array_equal(K_MIN(x), col_min(x))
    assert np.array_equal(np.signbit(K_MIN(x)), np.signbit(col_min(x)))
    x3 = x.reshape(1, rows, cols)
    np.testing.assert_array_equal(K_MAX(x3), col_max(x3))
