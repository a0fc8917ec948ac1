"""argmax / argmin (primitives/reduce.py: the max, then the first index holding it) against
NumPy on what decides an index: ties, nans, signed zeros, infinities, integer extremes,
fused operands, every axis."""
import re
import warnings

import numpy as np
import pytest

from compiler import jit

rng = np.random.default_rng(83)


def args(x):
    return (np.argmax(x, axis=0), np.argmin(x, axis=0), np.argmax(x, axis=-1),
            np.argmin(x, axis=-1), np.abs(x).argmax(axis=-1))


args_k = jit(args)


def _rows(dtype, n):
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        x = rng.integers(-3, 3, (9, n)).astype(dtype)
        x[1, :] = info.min
        x[2, n // 2:] = info.max
        return x
    x = rng.integers(-3, 3, (9, n)).astype(dtype)        # ties everywhere
    x[1, n // 2] = np.nan
    x[2, :] = np.nan
    x[3, :] = -np.inf
    x[4, :] = np.inf
    x[5, 0], x[5, -1] = -0.0, 0.0
    x[6, :] = 0.0
    x[6, n // 3] = -0.0
    x[7, -1] = np.nan
    x[8, 0] = np.nan
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.uint8])
@pytest.mark.parametrize("n", [1, 2, 7, 33, 1000])
def test_arg_reductions_match_numpy(dtype, n):
    x = _rows(dtype, n)
    with np.errstate(invalid="ignore"):
        want = args(x)
    for got, w in zip(args_k(x), want):
        np.testing.assert_array_equal(got, w)


def masked_extremes(x, m):
    return (np.where(m, x, -np.inf).max(axis=1), np.where(m, x, np.inf).min(axis=-1),
            np.nanmax(x, axis=1), np.nanmin(x, axis=0))


masked_k = jit(masked_extremes)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_masked_max_and_nanmax_match_numpy(dtype):
    """A max whose operand selects -inf (np.where masks, nanmax) stays a vectorized
    reduction (Codegen.opaque_infinity); its values are NumPy's, rows of all -inf included."""
    x = rng.standard_normal((40, 300)).astype(dtype)
    m = rng.random((40, 300)) < 0.7
    m[3] = False
    x[5, 7] = np.nan
    x[6] = np.nan
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = masked_extremes(x, m)
        got = masked_k(x, m)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    text = masked_k.lower(x, m).llvm_optimized
    assert re.search(r"vector\.reduce\.fmax|@llvm\.maximum\.v\d+f", text), "the masked max is scalar"
