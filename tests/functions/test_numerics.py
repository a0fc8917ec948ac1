"""Statistics and numerical methods written in plain NumPy: compiled vs NumPy."""
from __future__ import annotations

import math

import numpy as np
import pytest

import compiler
from compiler.errors import UnsupportedError
from tests.functions.helpers import both_floats, check, randn, rng, uniform


def gram(x):
    return x @ x.T


@both_floats
def test_gram_matrix(dtype):
    check(gram, randn(rng(30), 7, 5, dtype=dtype))


def covariance(x):
    xc = x - x.mean(axis=0)
    return xc.T @ xc / (x.shape[0] - 1)


@both_floats
def test_covariance_matrix_matches_np_cov(dtype):
    x = randn(rng(31), 40, 4, dtype=dtype)
    got = check(covariance, x)
    np.testing.assert_allclose(got, np.cov(x, rowvar=False), rtol=1e-4 if dtype == np.float32 else 1e-12)


def correlation(x):
    xc = x - x.mean(axis=0, keepdims=True)
    cov = xc.T @ xc
    d = np.sqrt(np.diagonal(cov))
    return cov / np.outer(d, d)


@both_floats
def test_correlation_matrix(dtype):
    check(correlation, randn(rng(32), 30, 5, dtype=dtype))


def standardize(x):
    return (x - x.mean(axis=0)) / x.std(axis=0)


@both_floats
def test_standardization(dtype):
    check(standardize, randn(rng(33), 25, 6, dtype=dtype, scale=3.0) + 10)


def minmax_scale(x):
    lo = x.min(axis=0, keepdims=True)
    hi = x.max(axis=0, keepdims=True)
    return (x - lo) / (hi - lo)


@both_floats
def test_min_max_scaling(dtype):
    check(minmax_scale, uniform(rng(34), -5, 5, 20, 3, dtype=dtype))


def moving_average(x, w):
    c = np.cumsum(x)
    c = np.concatenate([np.zeros(1, dtype=c.dtype), c])
    return (c[w:] - c[:-w]) / w


@both_floats
def test_moving_average_via_cumsum(dtype):
    check(moving_average, uniform(rng(35), 0, 1, 50, dtype=dtype), 5)


def histogram_counts(x):
    edges = np.linspace(0.0, 1.0, 11)
    inside = (x[:, None] >= edges[None, :-1]) & (x[:, None] < edges[None, 1:])
    return inside.sum(axis=0)


@both_floats
def test_static_histogram_via_comparisons(dtype):
    x = uniform(rng(36), 0, 1, 200, dtype=dtype)
    got = check(histogram_counts, x)
    assert got.sum() == 200


def gaussian_kde(points, grid, bandwidth):
    d = (grid[:, None] - points[None, :]) / bandwidth
    k = np.exp(-0.5 * d * d) / math.sqrt(2 * math.pi)
    return k.sum(axis=1) / (points.shape[0] * bandwidth)


@both_floats
def test_gaussian_kernel_density_estimate(dtype):
    r = rng(37)
    check(gaussian_kde, randn(r, 60, dtype=dtype), np.linspace(-3, 3, 41).astype(dtype), 0.4)


def weighted_stats(x, w):
    w = w / w.sum()
    mean = np.sum(w * x)
    var = np.sum(w * (x - mean) ** 2)
    return mean, var


@both_floats
def test_weighted_mean_and_variance(dtype):
    r = rng(38)
    check(weighted_stats, randn(r, 30, dtype=dtype), uniform(r, 0.1, 1, 30, dtype=dtype))


def ema(x, alpha):
    out = np.zeros_like(x)
    s = x[0]
    for i in range(x.shape[0]):
        s = alpha * x[i] + (1 - alpha) * s
        out[i] = s
    return out


@both_floats
def test_exponential_moving_average_static_loop_with_updates(dtype):
    check(ema, randn(rng(39), 16, dtype=dtype), 0.3)


def pearson(x, y):
    xm, ym = x - x.mean(), y - y.mean()
    return np.dot(xm, ym) / np.sqrt(np.dot(xm, xm) * np.dot(ym, ym))


@both_floats
def test_pearson_correlation(dtype):
    r = rng(40)
    x = randn(r, 50, dtype=dtype)
    check(pearson, x, 0.5 * x + randn(r, 50, dtype=dtype))


def horner(coeffs, x):
    acc = np.zeros_like(x)
    for c in coeffs:
        acc = acc * x + c
    return acc


@both_floats
def test_polynomial_horner_static_loop(dtype):
    check(horner, (1.0, -2.0, 0.5, 3.0, -1.5), uniform(rng(41), -2, 2, 33, dtype=dtype))


def horner_array_coeffs(c, x):
    acc = np.zeros_like(x)
    for i in range(c.shape[0]):
        acc = acc * x + c[i]
    return acc


@both_floats
def test_polynomial_horner_array_coefficients(dtype):
    r = rng(42)
    c = randn(r, 6, dtype=dtype)
    x = uniform(r, -1, 1, 20, dtype=dtype)
    got = check(horner_array_coeffs, c, x)
    np.testing.assert_allclose(got, np.polyval(c, x), rtol=1e-4 if dtype == np.float32 else 1e-12, atol=1e-5)


def chebyshev(x, n):
    t0, t1 = np.ones_like(x), x
    for _ in range(n - 1):
        t0, t1 = t1, 2 * x * t1 - t0
    return t1


@both_floats
def test_chebyshev_recurrence_matches_cos(dtype):
    x = uniform(rng(43), -1, 1, 25, dtype=dtype)
    got = check(chebyshev, x, 7)
    np.testing.assert_allclose(got, np.cos(7 * np.arccos(x)), atol=1e-4 if dtype == np.float32 else 1e-12)


def trapezoid(y, x):
    return np.sum((x[1:] - x[:-1]) * (y[1:] + y[:-1])) / 2


@both_floats
def test_trapezoid_integration(dtype):
    x = np.linspace(0, np.pi, 101).astype(dtype)
    got = check(trapezoid, np.sin(x), x)
    assert abs(got - 2.0) < 1e-3


def central_gradient(f, h):
    inner = (f[2:] - f[:-2]) / (2 * h)
    first = (f[1:2] - f[0:1]) / h
    last = (f[-1:] - f[-2:-1]) / h
    return np.concatenate([first, inner, last])


@both_floats
def test_finite_difference_gradient_matches_np_gradient(dtype):
    f = np.sin(np.linspace(0, 3, 30)).astype(dtype)
    got = check(central_gradient, f, 3 / 29)
    np.testing.assert_allclose(got, np.gradient(f, 3 / 29), rtol=1e-4 if dtype == np.float32 else 1e-12)


def laplacian(u, h):
    return (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]) / (h * h)


@both_floats
def test_finite_difference_laplacian_via_slicing(dtype):
    check(laplacian, randn(rng(44), 12, 9, dtype=dtype), 0.1)


def heat_steps(u, alpha):
    for _ in range(20):
        lap = np.zeros_like(u)
        lap[1:-1] = u[:-2] - 2 * u[1:-1] + u[2:]
        u = u + alpha * lap
    return u


@both_floats
def test_heat_equation_explicit_steps(dtype):
    u = np.zeros(32, dtype)
    u[12:20] = 1.0
    check(heat_steps, u, 0.25)


def jacobi_poisson(f, iters):
    u = np.zeros_like(f)
    for _ in range(iters):
        u = np.pad(0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - f[1:-1, 1:-1]), 1)
    return u


@both_floats
def test_jacobi_iterations_with_pad(dtype):
    # 15 sweeps: each sweep is its own loop nest (the code grows linearly, see the next test)
    check(jacobi_poisson, randn(rng(45), 10, 10, dtype=dtype), 15)


def blur(u, iters):
    for _ in range(iters):
        u = (u[:-2] + u[1:-1] + u[2:]) / 3
    return u


def test_repeated_stencil_sweeps_generate_linear_code():
    """k sweeps of a 3-point stencil are k loops: the LLVM module grows linearly with k.

    Each sweep reads the previous one three times; recomputing it inside the next sweep's loop
    instead of materializing it makes the code (and the compile time) grow as 3**k.
    """
    from compiler import jit
    u = np.zeros(64)
    sizes = {k: len(jit(blur).lower(u, k).llvm) for k in (2, 4)}
    assert sizes[4] <= 2.5 * sizes[2], f"LLVM module size for 2 and 4 sweeps: {sizes}"
    check(blur, randn(rng(145), 64), 4)


def power_iteration(a):
    v = np.ones(a.shape[0], dtype=a.dtype)
    for _ in range(30):
        v = a @ v
        v = v / np.sqrt(np.sum(v * v))
    return v @ a @ v, v


def test_power_iteration_float64():
    b = randn(rng(46), 5, 5)
    check(power_iteration, b @ b.T + 5 * np.eye(5))


def tuple_summary(x):
    return x.min(), x.max(), x.mean(), np.argmax(x), x.shape[0]


@both_floats
def test_multiple_outputs_including_static_int(dtype):
    check(tuple_summary, randn(rng(47), 17, dtype=dtype))


def cosine_similarity(a, b):
    an = a / np.sqrt((a * a).sum(axis=1, keepdims=True))
    bn = b / np.sqrt((b * b).sum(axis=1, keepdims=True))
    return an @ bn.T


@both_floats
def test_cosine_similarity_matrix(dtype):
    r = rng(48)
    check(cosine_similarity, randn(r, 6, 10, dtype=dtype), randn(r, 8, 10, dtype=dtype))


def black_scholes(s, k, t, r, sigma):
    def norm_cdf(x):
        # Abramowitz & Stegun 26.2.17 (|error| < 7.5e-8)
        a = np.abs(x)
        z = 1.0 / (1.0 + 0.2316419 * a)
        poly = z * (0.319381530 + z * (-0.356563782 + z * (1.781477937 + z * (-1.821255978 + z * 1.330274429))))
        p = 1.0 - np.exp(-0.5 * a * a) / math.sqrt(2 * math.pi) * poly
        return np.where(x >= 0, p, 1.0 - p)

    sqrt_t = np.sqrt(t)
    d1 = (np.log(s / k) + (r + 0.5 * sigma * sigma) * t) / (sigma * sqrt_t)
    d2 = d1 - sigma * sqrt_t
    call = s * norm_cdf(d1) - k * np.exp(-r * t) * norm_cdf(d2)
    put = k * np.exp(-r * t) * norm_cdf(-d2) - s * norm_cdf(-d1)
    return call, put


@both_floats
def test_black_scholes_price(dtype):
    g = rng(49)
    n = 100
    check(black_scholes, uniform(g, 10, 100, n, dtype=dtype), uniform(g, 10, 100, n, dtype=dtype),
          uniform(g, 0.1, 2, n, dtype=dtype), 0.02, 0.3, rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-4)


def haversine(lat1, lon1, lat2, lon2):
    lat1, lon1, lat2, lon2 = lat1 * (np.pi / 180), lon1 * (np.pi / 180), lat2 * (np.pi / 180), lon2 * (np.pi / 180)
    a = np.sin((lat2 - lat1) / 2) ** 2 + np.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2) ** 2
    return 2 * 6371.0 * np.arcsin(np.sqrt(a))


@both_floats
def test_haversine_distance(dtype):
    g = rng(50)
    check(haversine, uniform(g, -90, 90, 40, dtype=dtype), uniform(g, -180, 180, 40, dtype=dtype),
          uniform(g, -90, 90, 40, dtype=dtype), uniform(g, -180, 180, 40, dtype=dtype))


def haversine_deg(lat1, lon1, lat2, lon2):
    to_rad = math.pi / 180
    dlat, dlon = (lat2 - lat1) * to_rad, (lon2 - lon1) * to_rad
    a = np.sin(dlat / 2) ** 2 + np.cos(lat1 * to_rad) * np.cos(lat2 * to_rad) * np.sin(dlon / 2) ** 2
    return 2 * 6371.0 * np.arctan2(np.sqrt(a), np.sqrt(1 - a))


@both_floats
def test_haversine_distance_atan2_form(dtype):
    g = rng(51)
    check(haversine_deg, uniform(g, -90, 90, 40, dtype=dtype), uniform(g, -180, 180, 40, dtype=dtype),
          uniform(g, -90, 90, 1, dtype=dtype), uniform(g, -180, 180, 1, dtype=dtype))


PAD_MODES = ("edge", "reflect", "symmetric", "wrap")


def pad_all_modes(x):
    """np.pad in every index mode, widths larger than the axis included (reflect then
    folds more than once, as NumPy does)."""
    return tuple(np.pad(x, ((1, 6), (2, 0)), mode=m) for m in PAD_MODES) + (
        np.pad(x, 2, mode="edge"), np.pad(x, (3,), mode="wrap"))


@both_floats
def test_pad_index_modes(dtype):
    got = check(pad_all_modes, randn(rng(46), 4, 3, dtype=dtype))
    x = randn(rng(46), 4, 3, dtype=dtype)
    for g, m in zip(got, PAD_MODES):         # exactly NumPy's elements (copies, no arithmetic)
        np.testing.assert_array_equal(g, np.pad(x, ((1, 6), (2, 0)), mode=m))


def blur_edge(img, k):
    """A separable blur with edge padding (image-processing tutorials)."""
    p = len(k) // 2
    t = np.pad(img, ((0, 0), (p, p)), mode="edge")
    out = sum(k[i] * t[:, i:i + img.shape[1]] for i in range(len(k)))
    t = np.pad(out, ((p, p), (0, 0)), mode="reflect")
    return sum(k[i] * t[i:i + img.shape[0], :] for i in range(len(k)))


def test_pad_modes_under_grad_and_vmap():
    k = np.array([1.0, 4.0, 6.0, 4.0, 1.0]) / 16
    img = randn(rng(47), 9, 8, dtype=np.float64)
    w = randn(rng(48), 9, 8, dtype=np.float64)
    np.testing.assert_allclose(compiler.jit(blur_edge)(img, k), blur_edge(img, k), rtol=1e-13)
    g = compiler.grad(lambda a: np.sum(blur_edge(a, k) * w))(img)
    eps, fd = 1e-6, np.zeros_like(img)
    for i in np.ndindex(img.shape):
        e = np.zeros_like(img)
        e[i] = eps
        fd[i] = (np.sum(blur_edge(img + e, k) * w) - np.sum(blur_edge(img - e, k) * w)) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    imgs = randn(rng(49), 3, 9, 8, dtype=np.float64)
    np.testing.assert_allclose(compiler.vmap(lambda a: blur_edge(a, k))(imgs),
                               np.stack([blur_edge(a, k) for a in imgs]), rtol=1e-13)


def test_pad_modes_refused_clearly():
    with pytest.raises(UnsupportedError, match="mode='maximum' is not supported"):
        compiler.jit(lambda a: np.pad(a, 1, mode="maximum"))(np.ones(3))


def rolling_stats(x):
    """Moving mean, max and std over windows of 5 (the usual NumPy answer to "rolling
    window"), and a 2-D window sum."""
    w = np.lib.stride_tricks.sliding_window_view(x, 5)
    return w.mean(axis=-1), w.max(axis=-1), w.std(axis=-1)


def window_sums_2d(img):
    return np.lib.stride_tricks.sliding_window_view(img, (2, 3)).sum(axis=(-2, -1))


@both_floats
def test_sliding_window_view(dtype):
    x = randn(rng(50), 40, dtype=dtype)
    check(rolling_stats, x)
    check(window_sums_2d, randn(rng(51), 6, 7, dtype=dtype))
    windows = compiler.jit(lambda a: np.lib.stride_tricks.sliding_window_view(a, 3, axis=0))(x[:12].reshape(6, 2))
    np.testing.assert_array_equal(windows, np.lib.stride_tricks.sliding_window_view(x[:12].reshape(6, 2), 3, axis=0))


def test_a_reduction_over_the_windows_stores_no_window():
    """The mean over a window axis adds the shifted slices (canonicalize: reduce of a join)."""
    x = randn(rng(52), 1000, dtype=np.float64)
    k = compiler.jit(lambda a: np.lib.stride_tricks.sliding_window_view(a, 7).mean(axis=-1))
    np.testing.assert_allclose(k(x), np.lib.stride_tricks.sliding_window_view(x, 7).mean(axis=-1), rtol=1e-13)
    text = k.lower(x).ir_optimized
    assert "concatenate" not in text and "reduce_sum" not in text


def test_sliding_window_view_refusals():
    with pytest.raises(UnsupportedError, match="more than 256 elements"):
        compiler.jit(lambda a: np.lib.stride_tricks.sliding_window_view(a, 300))(np.ones(400))
    with pytest.raises(compiler.errors.CompileError, match="window shape cannot be larger"):
        compiler.jit(lambda a: np.lib.stride_tricks.sliding_window_view(a, 5))(np.ones(4))


def vanders(x):
    return np.vander(x), np.vander(x, 3, increasing=True), np.vander(x, 1)


@both_floats
def test_vander_is_numpys_products(dtype):
    x = randn(rng(53), 6, dtype=dtype)
    for got, want in zip(compiler.jit(vanders)(x), vanders(x)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)         # the same products in the same order
    ints = np.arange(-3, 4, dtype=np.int32)
    np.testing.assert_array_equal(compiler.jit(np.vander)(ints), np.vander(ints))
