"""The max and the sum of shifted exponentials of the same rows in one pass
(transforms/online.py, primitives/online.py, backend/online.py): logsumexp, softmax,
log_softmax and cross-entropy against math.fsum and NumPy, special values as NumPy gives
them, several row lengths and dtypes, symbolic shapes, other axes, vmap, grad and
parallel=True."""
import logging
import math

import numpy as np
import pytest

from compiler import grad, jit, vmap
from tests.fd import derivative

rng = np.random.default_rng(1404)


def lse_parts(x):
    m = np.max(x, axis=1, keepdims=True)
    s = np.sum(np.exp(x - m), axis=1)
    return m[:, 0], s, np.log(s) + m[:, 0]


def softmax_family(x, y):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    p = e / e.sum(axis=-1, keepdims=True)
    logp = x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))
    loss = -np.mean(logp[np.arange(x.shape[0]), y])
    return p, logp, loss


def other_axes(x3):
    col = np.log(np.sum(np.exp(x3[0] - np.max(x3[0], axis=0)), axis=0)) + np.max(x3[0], axis=0)
    m2 = np.max(x3, axis=(1, 2), keepdims=True)
    two = np.log(np.sum(np.exp(x3 - m2), axis=(1, 2))) + m2[:, 0, 0]
    everything = np.log(np.sum(np.exp(x3 - np.max(x3)))) + np.max(x3)
    return col, two, everything


def lse_row(v):
    m = np.max(v)
    return np.log(np.sum(np.exp(v - m))) + m


LSE_PARTS = jit(lse_parts)
SOFTMAX = jit(softmax_family)
OTHER = jit(other_axes)
SYMBOLIC = {dt: jit(lse_parts, signature=f"{dt}[n, k]") for dt in ("f32", "f64")}


def fsum_lse(row: np.ndarray) -> tuple[float, float]:
    """(max, sum of exp(x - max)) of one row in float64 with an exactly rounded sum."""
    r = row.astype(np.float64)
    m = float(np.max(r))
    return m, math.fsum(np.exp(r - m))


def rows(dtype, cols: int) -> np.ndarray:
    """Rows of several scales: each row's offset differs from the last by far more than the
    shift may lead (so the first shift of a row is often redone), a row whose max sits in a
    late chunk high above the first chunk's, and a row whose max comes first."""
    big = 1e4 if dtype == np.float64 else 300.0
    x = rng.standard_normal((7, cols)) * 3
    x += (np.arange(7) % 3 - 1)[:, None] * big * np.arange(7)[:, None]
    x[3, -1] = x[3, 0] + (800.0 if dtype == np.float64 else 70.0)   # the max late, far above
    x[4, 0] = x[4].max() + 5.0                                        # the max first
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cols", [1, 7, 8, 63, 1024, 1025])
def test_logsumexp_matches_fsum(dtype, cols):
    x = rows(dtype, cols)
    m, s, lse = LSE_PARTS(x)
    want = [fsum_lse(r) for r in x]
    rtol = 2e-6 if dtype == np.float32 else 4e-15
    np.testing.assert_array_equal(m, np.max(x, axis=1))
    np.testing.assert_allclose(s, [w[1] for w in want], rtol=rtol)
    np.testing.assert_allclose(lse, [w[0] + math.log(w[1]) for w in want], rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sums_stay_accurate_when_rows_change_scale(dtype):
    """Rows whose maxima jump within and beyond the lead a shift may have (backend/online.py,
    LEAD), and rows alternating between two scales far apart (a shift guessed from the other
    scale, kept if it were within the lead, would round every x - shift): every sum within 4
    eps of math.fsum's (NumPy's: about 1.5)."""
    r = np.random.default_rng(5)
    x = r.standard_normal((64, 300)) + r.uniform(-16, 16, (64, 1)) * r.integers(0, 2, (64, 1)) \
        + r.uniform(-30, 30, (64, 1))
    big, mid = (600.3, 150.37) if dtype == np.float64 else (60.3, 15.37)
    y = r.standard_normal((40, 300)) + np.where(np.arange(40) % 2 == 0, big, mid)[:, None]
    for a in (x.astype(dtype), y.astype(dtype)):
        _, s, _ = LSE_PARTS(a)
        want = np.array([fsum_lse(row)[1] for row in a])
        assert np.max(np.abs(s - want) / want) <= 4 * np.finfo(dtype).eps


def test_a_row_gives_the_same_bits_in_any_batch():
    """A row's results depend on that row alone (every row starts from the same shift), as in
    NumPy: the rows of a batch, alone, reversed and after rows of other scales."""
    x = rows(np.float64, 1025)
    whole = LSE_PARTS(x)
    for k in range(len(x)):
        for got, want in zip(LSE_PARTS(x[k:k + 1]), whole):
            np.testing.assert_array_equal(got, want[k:k + 1])
    for got, want in zip(LSE_PARTS(x[::-1].copy()), whole):
        np.testing.assert_array_equal(got, want[::-1])


def test_the_pair_is_one_op():
    ir = LSE_PARTS.lower(np.zeros((3, 5))).ir_optimized
    assert "reduce_max_sumexp" in ir and "reduce_sum" not in ir and "reduce_max(" not in ir


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_special_values_as_numpy(dtype):
    inf, nan = np.inf, np.nan
    x = np.array([
        [-inf] * 6,                               # nan sum (-inf - -inf)
        [1.0, inf, 2.0, 0.0, -inf, 3.0],          # max inf, nan sum
        [1.0, nan, 2.0, 0.0, 4.0, 3.0],           # nan max and sum
        [-inf, -inf, 2.0, -inf, 1.0, -inf],       # -inf terms are 0
        [inf, nan, -inf, 1.0, 2.0, 3.0],          # nan wins over inf
        [-0.0, 0.0, -0.0, -1.0, -2.0, -0.0],
        [1e30, 1e30, -1e30, 0.0, 1e29, 5.0],
        [-1e30, -1e30, -1e30, -1e30, -1e30, -1e30],
        [1.0, 2.0, 5.0, 3.0, 4.0, 0.0],           # a nan with its sign bit set, below
    ], dtype=dtype)
    x[-1, 3] = -np.array(np.nan, dtype)
    assert np.signbit(x[-1, 3])
    with np.errstate(invalid="ignore", over="ignore"):
        want = lse_parts(x)
    for got, ref in zip(LSE_PARTS(x), want):
        np.testing.assert_allclose(got, ref, rtol=1e-6 if dtype == np.float32 else 1e-15)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("cols", [1, 9, 1025])
def test_symbolic_lengths(dtype, cols):
    x = rows(np.dtype(np.float32 if dtype == "f32" else np.float64), cols)
    rtol = 2e-6 if dtype == "f32" else 4e-15
    for got, want in zip(SYMBOLIC[dtype](x), lse_parts(x)):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_log_softmax_cross_entropy(dtype):
    x = (rng.standard_normal((50, 40)) * 5).astype(dtype)
    y = rng.integers(0, 40, 50)
    rtol = 1e-5 if dtype == np.float32 else 1e-13
    for got, want in zip(SOFTMAX(x, y), softmax_family(x, y)):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


def test_other_axes_and_full_reductions():
    x3 = rng.standard_normal((4, 6, 70)) * 10
    for got, want in zip(OTHER(x3), other_axes(x3)):
        np.testing.assert_allclose(got, want, rtol=1e-14)
    assert OTHER.lower(x3).ir_optimized.count("reduce_max_sumexp") == 2   # axis 0 is not trailing


def test_vmap_and_grad():
    x = rng.standard_normal((6, 40)) * 4
    got = vmap(jit(lse_row))(x)
    np.testing.assert_allclose(got, [lse_row(r) for r in x], rtol=1e-14)
    g = grad(lse_row)(x[0])
    for _ in range(3):
        t = rng.standard_normal(40)
        (fd,) = derivative(lambda e: lse_row(x[0] + e * t), 1e-3)
        np.testing.assert_allclose(np.dot(g, t), fd, rtol=1e-8)


def test_parallel_rows(monkeypatch, caplog):
    """parallel=True splits the rows of the one-pass op (backend/parallel.py) and each slice
    gives the serial results."""
    monkeypatch.setenv("AOTX_NUM_THREADS", "2")
    monkeypatch.setenv("AOTX_DEBUG", "1")
    x = np.concatenate([rows(np.float64, 1025)] * 40)
    k = jit(lse_parts, parallel=True)
    with caplog.at_level(logging.DEBUG, logger="aotx"):
        got = k(x)
    notes = [r.getMessage() for r in caplog.records if "parallel=True" in r.getMessage()]
    assert notes and all("split over the rows" in n for n in notes), notes
    for g, want in zip(got, lse_parts(x)):
        np.testing.assert_allclose(g, want, rtol=4e-15, atol=4e-15)
