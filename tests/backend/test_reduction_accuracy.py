"""Float reductions are as accurate as NumPy's pairwise summation, against an exact oracle.

The oracle is ``math.fsum`` (the exactly rounded sum of the float64 values; float32
inputs convert to float64 exactly) and exact rational products. Every reduction is
checked two ways:

* against NumPy on the same data: ``err <= 2 * err_numpy + slack`` (summed over the
  sampled lines of an axis reduction), where the slack is
  eps * (|exact| + sqrt(d * sum x**2)): two ulps of the result plus the scale of the
  rounding noise of a summation of depth d (it matters only when the sum cancels,
  and then NumPy's own error is just as random);
* against the bound documented in docs/guide.md ("Accuracy of reductions"):
  |err| <= d * u * sum|x| (u = eps / 2) with d = log2(n) + 15 for a scalar
  reduction, ROWS + ceil(log2(R / ROWS)) + 1 for R rows accumulated at once (column
  sums), SCAN + 2 ceil(log2(k / SCAN)) + 2 for the k-th prefix of a cumsum.

The data are adversarial for a running sum: all positive, a large mean with small
noise, alternating magnitudes, and normal (cancelling). Kernels are compiled once
with symbolic sizes and shared by all tests.
"""
from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
import pytest

from compiler import jit
from compiler.backend.fusion import schedule

ROWS = 64        # reduced positions per leaf of a column sum (docs/guide.md)
SCAN = 64        # elements per chunk of a cumsum (docs/guide.md)
DTYPES = [np.float32, np.float64]
KINDS = ["positive", "mean1e4", "alternating", "normal"]
N = 1_000_000
SHAPE = (500, 2000)


@functools.cache
def kernels(dtype: type) -> dict[str, object]:
    """Compiled on first use (not at collection), once per dtype, for all sizes."""
    t = "f32" if dtype == np.float32 else "f64"
    sig1, sig2 = f"{t}[n]", f"{t}[m, n]"
    return {
        "sum": jit(lambda x: np.sum(x), signature=sig1),
        "sum_fused": jit(lambda x: np.sum(x * 0.5 + x), signature=sig1),
        "full2": jit(lambda x: np.sum(x), signature=sig2),
        "rows": jit(lambda x: np.sum(x, axis=1), signature=sig2),
        "cols": jit(lambda x: np.sum(x, axis=0), signature=sig2),
        "mean": jit(lambda x: np.mean(x), signature=sig1),
        "var": jit(lambda x: np.var(x), signature=sig1),
        "std": jit(lambda x: np.std(x), signature=sig1),
        "var_rows": jit(lambda x: np.var(x, axis=1), signature=sig2),
        "var_cols": jit(lambda x: np.var(x, axis=0), signature=sig2),
        "cumsum": jit(lambda x: np.cumsum(x), signature=sig1),
        "prod": jit(lambda x: np.prod(x), signature=sig1),
    }




def data(kind: str, n: int, dtype: type, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "positive":
        x = rng.random(n)
    elif kind == "mean1e4":
        x = 1e4 + rng.standard_normal(n)
    elif kind == "alternating":
        x = rng.random(n)
        x[0::2] *= 1e4
        x[1::2] *= 1e-2
    else:
        x = rng.standard_normal(n)
    return x.astype(dtype)


def _stats(x: np.ndarray) -> tuple[float, float, float]:
    """(exact sum, sum |x|, sum x**2) of the values, from math.fsum."""
    x64 = x.astype(np.float64)
    return math.fsum(x64), math.fsum(np.abs(x64)), math.fsum(x64 * x64)


def errors(got: float, ref: float, x: np.ndarray, depth: float,
           stats: tuple[float, float, float] | None = None) -> tuple[float, float, float]:
    """(aotx's error, NumPy's error, slack) against the exact sum of x, after checking the
    documented bound for a chain of `depth` roundings. The slack is two ulps of the
    result plus the scale of the rounding noise of a sum of that depth."""
    eps = float(np.finfo(x.dtype).eps)
    exact, total_abs, squares = stats or _stats(x)
    err, err_np = abs(float(got) - exact), abs(float(ref) - exact)
    u = eps / 2
    assert err <= depth * u / (1 - depth * u) * total_abs, (err, depth * u * total_abs)
    return err, err_np, eps * (abs(exact) + math.sqrt(depth * squares))


def check_sum(got: float, ref: float, x: np.ndarray, depth: float,
              stats: tuple[float, float, float] | None = None) -> None:
    """`got` (aotx) within the documented bound and within 2x NumPy's error (`ref`) plus
    the slack."""
    err, err_np, slack = errors(got, ref, x, depth, stats)
    assert err <= 2 * err_np + slack, (err, err_np, slack)


def check_lines(got: np.ndarray, ref: np.ndarray, lines: list[np.ndarray], depth: float) -> None:
    """Per line the documented bound; over the lines, the total error within 2x NumPy's
    plus the slack (one lucky NumPy line is no evidence)."""
    errs = [errors(g, r, line, depth) for g, r, line in zip(got, ref, lines)]
    total, total_np, slack = (sum(e[i] for e in errs) for i in range(3))
    assert total <= 2 * total_np + slack, (total, total_np, slack)


def scalar_depth(n: int) -> float:
    return math.log2(max(n, 2)) + 15


@pytest.fixture(scope="module", params=[(d, k) for d in DTYPES for k in KINDS],
                ids=[f"{d.__name__}-{k}" for d in DTYPES for k in KINDS])
def case(request: pytest.FixtureRequest) -> tuple[type, np.ndarray, tuple[float, float, float]]:
    dtype, kind = request.param
    x = data(kind, N, dtype)
    return dtype, x, _stats(x)


Case = tuple[type, np.ndarray, tuple[float, float, float]]


def test_full_sum(case: Case) -> None:
    dtype, x, stats = case
    check_sum(kernels(dtype)["sum"](x), np.sum(x), x, scalar_depth(x.size), stats)


def test_full_sum_of_a_fused_expression(case: Case) -> None:
    dtype, x, _ = case
    y = x * dtype(0.5) + x              # what the kernel sums, rounded as the kernel rounds it
    check_sum(kernels(dtype)["sum_fused"](x), np.sum(y), y, scalar_depth(y.size))


def test_full_sum_of_a_matrix(case: Case) -> None:
    dtype, x, stats = case
    a = x.reshape(SHAPE)
    check_sum(kernels(dtype)["full2"](a), np.sum(a), x, scalar_depth(x.size), stats)


def test_sums_over_the_inner_axis(case: Case) -> None:
    dtype, x, _ = case
    a = x.reshape(SHAPE)
    rows = range(0, SHAPE[0], 19)
    got, ref = kernels(dtype)["rows"](a), np.sum(a, axis=1)
    check_lines(got[rows], ref[rows], [a[i] for i in rows], scalar_depth(SHAPE[1]))


def test_sums_over_an_outer_axis(case: Case) -> None:
    """Column sums: NumPy adds the rows one by one (error ~ n); aotx combines blocks of
    ROWS rows pairwise."""
    dtype, x, _ = case
    a = x.reshape(SHAPE)
    cols = range(0, SHAPE[1], 53)
    got, ref = kernels(dtype)["cols"](a), np.sum(a, axis=0)
    depth = ROWS + math.ceil(math.log2(SHAPE[0] / ROWS)) + 1
    check_lines(got[cols], ref[cols], [a[:, j] for j in cols], depth)


def _exact_var(x: np.ndarray) -> float:
    x64 = x.astype(np.float64)
    mean = math.fsum(x64) / x.size
    d = x64 - mean
    return math.fsum(d * d) / x.size


def _check_close(got: float, ref: float, exact: float, eps: float) -> None:
    assert abs(got - exact) <= 2 * abs(ref - exact) + 8 * eps * abs(exact), (got, ref, exact)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_mean_var_std_of_a_large_mean(dtype: type) -> None:
    """float32 var of data with mean 1e4 and unit variance was 111 with a running sum."""
    x = data("mean1e4", N, dtype)
    k, eps = kernels(dtype), float(np.finfo(dtype).eps)
    check_sum(k["mean"](x) * x.size, np.mean(x) * x.size, x, scalar_depth(x.size) + 1)
    exact = _exact_var(x)
    _check_close(float(k["var"](x)), float(np.var(x)), exact, eps)
    _check_close(float(k["std"](x)), float(np.std(x)), math.sqrt(exact), eps)
    assert abs(float(k["var"](x)) - exact) <= 1e-4 * exact


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("axis", [0, 1])
def test_var_along_an_axis(dtype: type, axis: int) -> None:
    a = data("mean1e4", N, dtype, seed=1).reshape(SHAPE)
    got = kernels(dtype)["var_cols" if axis == 0 else "var_rows"](a)
    ref = np.var(a, axis=axis)
    eps = float(np.finfo(dtype).eps)
    for i in range(0, a.shape[1 - axis], 97):
        line = a[:, i] if axis == 0 else a[i]
        _check_close(float(got[i]), float(ref[i]), _exact_var(line), eps)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_cumsum_prefixes(dtype: type) -> None:
    """Each prefix within the documented bound; NumPy's cumsum is a running sum."""
    x = data("mean1e4", 1_000_000, dtype, seed=2)
    got, ref = kernels(dtype)["cumsum"](x), np.cumsum(x)
    for k in (0, 1, SCAN - 1, SCAN, SCAN + 1, 1000, 65_535, 400_001, x.size - 1):
        depth = SCAN + 2 * math.ceil(math.log2(max(k + 1, SCAN) / SCAN)) + 2
        check_sum(got[k], ref[k], x[:k + 1], depth)


def _exact_product(x: np.ndarray) -> Fraction:
    """The exact product of the values: integer numerators and power-of-two denominators
    multiplied as a balanced tree."""
    nums, dens = zip(*(float(v).as_integer_ratio() for v in x))

    def tree(v: list[int]) -> int:
        while len(v) > 1:
            v = [v[i] * v[i + 1] if i + 1 < len(v) else v[i] for i in range(0, len(v), 2)]
        return v[0]
    return Fraction(tree(list(nums)), tree(list(dens)))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_product(dtype: type) -> None:
    """Relative error of a product of n factors near 1 against the exact rational product.
    Every multiplication adds its relative error whatever the order, so the bound is
    (n - 1) u (typically sqrt(n) u), for aotx's vectorized loop and NumPy's alike."""
    rng = np.random.default_rng(3)
    x = (1 + 1e-3 * rng.standard_normal(5_000)).astype(dtype)
    exact = float(_exact_product(x))
    eps = float(np.finfo(dtype).eps)
    err, err_np = abs(float(kernels(dtype)["prod"](x)) / exact - 1), abs(float(np.prod(x)) / exact - 1)
    assert err <= 2 * err_np + 2 * eps
    assert err <= (x.size - 1) * eps / 2


# ---- every element counted once: exact integer-valued data, all chunk boundaries -----------

SIZES = [0, 1, 7, 255, 256, 257, 511, 512, 513, 1023, 1024, 1025, 2049, 4097]


@pytest.fixture(scope="module")
def exact_kernels() -> dict[str, object]:
    return {
        "sum1": jit(lambda x: np.sum(x), signature="f64[n]"),
        "sum1_f32": jit(lambda x: np.sum(x * 2.0), signature="f32[n]"),
        "prod1": jit(lambda x: np.prod(x), signature="f64[n]"),
        "cumsum": jit(lambda x: np.cumsum(x), signature="f32[n]"),
        "cumprod": jit(lambda x: np.cumprod(x), signature="f64[n]"),
        "ax0": jit(lambda x: np.sum(x, axis=0), signature="f64[m, n]"),
        "ax1": jit(lambda x: np.sum(x, axis=1), signature="f64[m, n]"),
        "all2": jit(lambda x: np.sum(x), signature="f32[m, n]"),
        "ax02": jit(lambda x: np.sum(x, axis=(0, 2)), signature="f64[a, b, c]"),
        "ax01": jit(lambda x: np.sum(x, axis=(0, 1)), signature="f64[a, b, c]"),
        "ax1_3": jit(lambda x: np.sum(x, axis=1), signature="f64[a, b, c]"),
        "ax12": jit(lambda x: np.prod(x, axis=(1, 2)), signature="f64[a, b, c]"),
        "mean0": jit(lambda x: np.mean(x, axis=0) * 4.0, signature="f64[m, n]"),
    }


def _ints(shape: tuple[int, ...], seed: int, dtype: type = np.float64) -> np.ndarray:
    return np.random.default_rng(seed).integers(-8, 9, size=shape).astype(dtype)


def _signs(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Factors whose products are exact: mostly +-1, a few 2 and 0.5."""
    rng = np.random.default_rng(seed)
    return rng.choice(np.array([1.0, -1.0, 1.0, -1.0, 2.0, 0.5]), size=shape)


@pytest.mark.parametrize("n", SIZES)
def test_every_element_once_1d(exact_kernels: dict, n: int) -> None:
    k = exact_kernels
    x = _ints((n,), n)
    assert k["sum1"](x) == np.sum(x)
    x32 = x.astype(np.float32)
    assert k["sum1_f32"](x32) == np.sum(x32 * np.float32(2))
    np.testing.assert_array_equal(k["cumsum"](x32), np.cumsum(x32))
    s = _signs((n,), n)
    assert k["prod1"](s) == np.prod(s)
    np.testing.assert_array_equal(k["cumprod"](s), np.cumprod(s))


@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (3, 1000), (1000, 3), (70, 5), (129, 130),
                                   (1, 4097), (4097, 1), (300, 513)])
def test_every_element_once_2d(exact_kernels: dict, shape: tuple[int, int]) -> None:
    k = exact_kernels
    x = _ints(shape, sum(shape))
    np.testing.assert_array_equal(k["ax0"](x), np.sum(x, axis=0))
    np.testing.assert_array_equal(k["ax1"](x), np.sum(x, axis=1))
    np.testing.assert_array_equal(k["mean0"](x), np.sum(x, axis=0) / x.shape[0] * 4.0
                                  if x.shape[0] else np.full(x.shape[1], np.nan))
    x32 = x.astype(np.float32)
    assert k["all2"](x32) == np.sum(x32)


@pytest.mark.parametrize("shape", [(2, 3, 4), (130, 3, 5), (3, 700, 2), (2, 2, 1500), (0, 3, 2),
                                   (65, 65, 3)])
def test_every_element_once_3d(exact_kernels: dict, shape: tuple[int, int, int]) -> None:
    k = exact_kernels
    x = _ints(shape, sum(shape))
    np.testing.assert_array_equal(k["ax02"](x), np.sum(x, axis=(0, 2)))
    np.testing.assert_array_equal(k["ax01"](x), np.sum(x, axis=(0, 1)))
    np.testing.assert_array_equal(k["ax1_3"](x), np.sum(x, axis=1))
    s = _signs(shape, 1)
    np.testing.assert_array_equal(k["ax12"](s), np.prod(s, axis=(1, 2)))


def test_fused_reductions_stay_vectorized() -> None:
    """The chunk loops of a fused reduction and the row loops of a column sum are vector
    code (the pairwise tree around them is scalar)."""
    f = jit(lambda x: np.sum(np.exp(x), axis=1))
    g = jit(lambda x: np.sum(x * x, axis=0))
    a = np.ones((8, 4096), np.float32)
    for kernel in (f, g):
        text = kernel.lower(a).llvm_optimized
        assert "x float>" in text and ("fadd reassoc <" in text or "fadd <" in text), text[:2000]


def test_cumsum_keeps_the_sign_of_zero(exact_kernels: dict) -> None:
    """A running sum starts at its first element: cumsum([-0.0, -0.0]) is [-0.0, -0.0]."""
    x = np.array([-0.0] * 70, np.float32)
    got, ref = exact_kernels["cumsum"](x), np.cumsum(x)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(ref))


def _materialized_reductions(kernel: object, x: np.ndarray) -> tuple[int, int]:
    """(reduce_sum values with a buffer, reduce_sum values) in the kernel's schedule."""
    fn = kernel.specialize(x).artifacts.ir_optimized
    sched = schedule(fn.body)
    sums = [op.results[0] for op in fn.body.ops if op.prim.name == "reduce_sum"]
    return sum(sched.is_materialized(v) for v in sums), len(sums)


def test_column_reductions_read_whole_get_their_own_loop() -> None:
    """mean/var over axis 0 accumulate rows into a buffer (own_loop) instead of walking
    each column inside the division's loop; a slice of column sums stays fused, reading
    only the columns it keeps."""
    x = data("mean1e4", 3000, np.float64).reshape(60, 50)
    mean0 = jit(lambda a: np.mean(a, axis=0))
    var0 = jit(lambda a: np.var(a, axis=0))
    part = jit(lambda a: np.sum(a, axis=0)[:2] * 2.0)
    assert _materialized_reductions(mean0, x) == (1, 1)
    assert _materialized_reductions(var0, x) == (2, 2)
    assert _materialized_reductions(part, x) == (0, 1)
    np.testing.assert_allclose(mean0(x), np.mean(x, axis=0), rtol=1e-14)
    np.testing.assert_allclose(var0(x), np.var(x, axis=0), rtol=1e-10)
    np.testing.assert_allclose(part(x), np.sum(x, axis=0)[:2] * 2.0, rtol=1e-14)
