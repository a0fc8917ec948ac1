"""Sorting in compiled code against NumPy: NaN, -0.0, ±inf, ties and stability, every dtype,
both code paths (the network of static rows up to 32, the radix sort of longer or symbolic
rows), axis variants, long rows, vmap, and derivatives against finite differences."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import grad, jacfwd, jacrev, jit, vmap
from compiler.errors import CompileError, DynamicShapeError, UnsupportedError
from tests import fd
from tests.lazy import lazy_jit

rng = np.random.default_rng(11)

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
          np.uint64, np.float16, np.float32, np.float64]
LENGTHS = [7, 100]                      # up to 32: the network; 100: the radix sort


def _sort(x):
    return np.sort(x)


def _sort_stable(x):
    return np.sort(x, kind="stable")


def _argsort(x):
    return np.argsort(x)


def _sort_axis(x, axis):
    return np.sort(x, axis=axis)


sort_k, stable_k, argsort_k = jit(_sort), jit(_sort_stable), jit(_argsort)
axis_k = jit(_sort_axis, static_argnums=1)
sym_sort = lazy_jit(_sort_stable, signature="f64[m, n]")
sym_argsort = lazy_jit(_argsort, signature="f32[n]")


def _values(dtype, n):
    """Values of `dtype` with many ties, and for floats NaN, -0.0/0.0 and ±inf."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(n) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        pool = np.array([info.min, info.max, 0, 1, 2, info.max - 1, info.min + 1], dtype)
        x = rng.integers(0, 4, n).astype(dtype)
        x[::3] = rng.choice(pool, len(x[::3]))
        return x
    pool = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1.5, -1.5, 2.0], dtype)
    return rng.choice(pool, n).astype(dtype)


def _bits(x):
    """The stored bits (so -0.0 != 0.0); NaNs as one pattern (payloads are not ordered)."""
    x = np.asarray(x)
    if x.dtype.kind == "f":
        x = np.where(np.isnan(x), np.array(np.nan, x.dtype), x)
        return x.view(f"u{x.dtype.itemsize}")
    return x


def _orders(x):
    return np.argsort(x), np.sort(x, kind="stable"), np.sort(x)


orders_k = jit(_orders)


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_stable_sort_and_argsort_are_numpys(dtype, n):
    x = _values(dtype, n)
    ref = np.argsort(x, kind="stable")
    perm, stable, plain = orders_k(x)
    np.testing.assert_array_equal(perm, ref)
    np.testing.assert_array_equal(_bits(stable), _bits(x[ref]))   # -0.0 and 0.0 in order
    assert plain.dtype == x.dtype                  # the default kind: equal values, any order
    np.testing.assert_array_equal(plain, np.sort(x))


@pytest.mark.parametrize("dtype, n", [(np.float64, 1), (np.float64, 2), (np.float64, 32),
                                      (np.float64, 33), (np.int8, 32), (np.float16, 32)])
def test_short_and_odd_lengths(dtype, n):
    test_stable_sort_and_argsort_are_numpys(dtype, n)


@pytest.mark.parametrize("n", [3, 8, 50])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_order_is_numpys(dtype, n):
    parts = np.array([np.nan, 0.0, -0.0, 1.0, -1.0, np.inf])
    x = np.empty(n, dtype)
    x.real, x.imag = rng.choice(parts, n), rng.choice(parts, n)
    ref = np.argsort(x, kind="stable")
    perm, stable, _ = orders_k(x)
    np.testing.assert_array_equal(perm, ref)
    np.testing.assert_array_equal(stable, x[ref])


def test_every_axis_of_a_stack():
    x = rng.normal(size=(3, 40, 5))
    for axis in (0, 1, 2, -1, None):
        np.testing.assert_array_equal(axis_k(x, axis), np.sort(x, axis=axis))


@pytest.mark.parametrize("n", [10_000, 10_001])
def test_long_rows(n):
    x = rng.normal(size=n)
    x[::97] = np.nan
    x[::89] = -0.0
    np.testing.assert_array_equal(_bits(stable_k(x)), _bits(x[np.argsort(x, kind="stable")]))
    np.testing.assert_array_equal(argsort_k(x), np.argsort(x, kind="stable"))
    i = rng.integers(-1000, 1000, n)
    np.testing.assert_array_equal(sort_k(i), np.sort(i))


def test_symbolic_lengths_sort_at_run_time():
    for shape in [(2, 0), (1, 1), (3, 5), (2, 70)]:
        x = rng.normal(size=shape)
        x.flat[::4] = 0.0
        x.flat[1::4] = -0.0
        np.testing.assert_array_equal(_bits(sym_sort(x)), _bits(np.sort(x, kind="stable")))
    y = rng.normal(size=9).astype(np.float32)
    np.testing.assert_array_equal(sym_argsort(y), np.argsort(y, kind="stable"))


def test_empty_rows():
    assert sort_k(np.zeros(0)).shape == (0,)
    assert axis_k(np.zeros((3, 0)), -1).shape == (3, 0)


def test_vmap_sorts_each_example():
    x = rng.normal(size=(6, 5, 4))
    for in_axis in (0, 1, 2):
        got = vmap(_argsort, in_dims=in_axis)(x)
        want = np.stack([np.argsort(np.take(x, i, axis=in_axis), kind="stable")
                         for i in range(x.shape[in_axis])])
        np.testing.assert_array_equal(got, want)
    got = vmap(lambda r: np.sort(r, axis=0), in_dims=2)(x)
    np.testing.assert_array_equal(got, np.stack([np.sort(x[:, :, i], axis=0) for i in range(4)]))


def test_vmap_of_median_and_searchsorted():
    x = rng.normal(size=(7, 9))
    np.testing.assert_allclose(vmap(np.median)(x), np.median(x, axis=1))
    a = np.sort(rng.normal(size=(7, 12)), axis=1)
    got = vmap(lambda h, v: np.searchsorted(h, v, side="right"))(a, x)
    np.testing.assert_array_equal(got, np.stack([np.searchsorted(a[i], x[i], side="right")
                                                 for i in range(7)]))


# ---- derivatives (distinct values: the permutation is unique there) -----------------------

W = rng.normal(size=(4, 9))


def _weighted_sort(x):
    return np.sum(np.sort(x, axis=1) * W)


def _stats(x):
    return (np.median(x) + np.quantile(x, 0.3) + np.percentile(x, [10.0, 80.0]).sum()
            + np.quantile(x, 0.6, method="midpoint") + np.median(x, axis=0).sum())


@pytest.mark.parametrize("f", [_weighted_sort, _stats])
def test_grad_matches_finite_differences(f):
    x = rng.normal(size=(4, 9))
    np.testing.assert_allclose(jit(grad(f))(x), fd.jacobian(f, (x,)).reshape(x.shape), atol=1e-6)


def test_jacobians_are_the_permutation():
    x = rng.normal(size=12)
    perm = np.eye(12)[np.argsort(x)]
    np.testing.assert_array_equal(jit(jacfwd(np.sort))(x), perm)
    np.testing.assert_array_equal(jit(jacrev(np.sort))(x), perm)
    long = rng.normal(size=50)                   # the radix sort path
    np.testing.assert_array_equal(jit(jacrev(np.sort))(long), np.eye(50)[np.argsort(long)])


def test_carried_operand_derivative_and_take_along_axis():
    keys = rng.normal(size=(3, 8))

    def f(v):
        order = np.argsort(keys, axis=1)
        return np.take_along_axis(v, order, axis=1) * np.arange(8.0)

    v = rng.normal(size=(3, 8))
    np.testing.assert_allclose(jit(jacrev(f))(v), fd.jacobian(f, (v,)), atol=1e-6)


def test_grad_under_vmap():
    x = rng.normal(size=(5, 9))
    got = vmap(grad(lambda r: np.sum(np.sort(r) * W[0])))(x)
    want = np.stack([fd.jacobian(lambda r: np.sum(np.sort(r) * W[0]), (r,)) for r in x])
    np.testing.assert_allclose(got, want, atol=1e-6)


# ---- the other functions ------------------------------------------------------------------

def test_lexsort_three_keys_and_stability():
    keys = tuple(rng.integers(0, 3, 40) for _ in range(3))
    f = jit(lambda a, b, c: np.lexsort((a, b, c)))
    np.testing.assert_array_equal(f(*keys), np.lexsort(keys))
    k2 = jit(lambda k: np.lexsort(k))
    stacked = np.stack(keys).astype(np.float64)
    np.testing.assert_array_equal(k2(stacked), np.lexsort(stacked))


def test_searchsorted_with_nan_inf_and_ties():
    a = np.array([-np.inf, -1.0, 0.0, 0.0, 2.0, np.inf, np.nan, np.nan])
    v = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 5.0, -3.0, 2.0])
    for side in ("left", "right"):
        f = jit(lambda h, w, side=side: np.searchsorted(h, w, side=side))
        np.testing.assert_array_equal(f(a, v), np.searchsorted(a, v, side=side))
    sym = jit(lambda h, w: np.searchsorted(h, w), signature="f64[n], f64[m]")
    for n in (0, 1, 5, 300):
        h = np.sort(rng.normal(size=n))
        w = rng.normal(size=7)
        np.testing.assert_array_equal(sym(h, w), np.searchsorted(h, w))


def test_median_and_quantiles_with_nan():
    x = rng.normal(size=(5, 8))
    x[1, 3] = np.nan
    x[4] = np.nan
    f = jit(lambda v: (np.median(v, axis=1), np.nanmedian(v, axis=1),
                       np.quantile(v, [0.25, 0.5], axis=1), np.nanpercentile(v, 75, axis=1)))
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        want = (np.median(x, axis=1), np.nanmedian(x, axis=1), np.quantile(x, [0.25, 0.5], axis=1),
                np.nanpercentile(x, 75, axis=1))
    for got, ref in zip(f(x), want):
        np.testing.assert_allclose(got, ref, rtol=1e-14)


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint"])
def test_quantile_methods_on_integers_and_array_q(method):
    x = rng.integers(-20, 20, (3, 11))
    q = np.array([0.0, 0.05, 0.5, 0.51, 0.99, 1.0])
    f = jit(lambda v, p: np.quantile(v, p, axis=1, method=method, keepdims=True))
    got, want = f(x, q), np.quantile(x, q, axis=1, method=method, keepdims=True)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-14)


def test_unique_with_static_size():
    x = np.array([3.0, 1.0, np.nan, 3.0, 2.0, np.nan, 1.0, 1.0])
    f = jit(lambda v: np.unique(v, size=5, return_index=True, return_inverse=True,
                                return_counts=True))
    vals, idx, inv, cnt = f(x)
    rv, ri, rinv, rc = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(vals[:4], rv)
    assert vals[4] == rv[0]                         # padded with the smallest value
    np.testing.assert_array_equal(idx[:4], ri)
    np.testing.assert_array_equal(inv, rinv)
    np.testing.assert_array_equal(cnt, list(rc) + [0])
    g = jit(lambda v: np.unique(v, size=2, fill_value=-7))
    np.testing.assert_array_equal(g(np.array([5, 5, 4, 9])), [4, 5])
    np.testing.assert_array_equal(g(np.array([5, 5, 5])), [5, -7])


def test_sort_in_place_on_a_local_and_an_argument():
    def local(v):
        w = v * 2.0
        w.sort(axis=0)
        return w

    def argument(v):
        v.sort()

    x = rng.normal(size=(4, 6))
    np.testing.assert_array_equal(jit(local)(x), np.sort(2.0 * x, axis=0))
    y = x.copy()
    jit(argument)(y)
    np.testing.assert_array_equal(y, np.sort(x))


def test_partition_is_a_sort():
    x = rng.normal(size=(3, 10))
    got = jit(lambda v: np.partition(v, (2, 7), axis=1))(x)
    want = np.partition(x, (2, 7), axis=1)
    np.testing.assert_array_equal(got[:, [2, 7]], want[:, [2, 7]])
    np.testing.assert_array_equal(got, np.sort(x, axis=1))


def _unique_plain(x):
    return np.unique(x)


def _sort_order(x):
    return np.sort(x, order="f")


def _median_complex(x):
    return np.median(x)


@pytest.mark.parametrize("fn, exc, words, arg", [
    (_unique_plain, DynamicShapeError, "size=", np.ones(3)),
    (_sort_order, UnsupportedError, "order=", np.ones(3)),
    (_median_complex, CompileError, "real numbers", np.ones(3, complex)),
])
def test_errors_point_at_the_line(fn, exc, words, arg):
    with pytest.raises(exc) as info:
        jit(fn)(arg)
    text = str(info.value)
    assert words in text and "test_sort.py" in text
