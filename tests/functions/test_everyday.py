"""NumPy's everyday functions (compiler/frontend/everyday.py): compiled == NumPy in dtype and
values (NaN included), vmap == a Python loop, derivatives == finite differences.

Each test compiles one kernel that calls many variants of its functions, so that the file
stays fast; tests/coverage.py runs one plain call of each under jit, vmap, grad and jvp.
"""
from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest

import compiler
from compiler.errors import CompileError, DynamicShapeError, UnsupportedError
from tests import fd

R = np.random.default_rng(1212)
X = R.standard_normal((4, 5))
XN = X.copy()
XN[0, 1] = np.nan
XN[2, :] = np.nan
XN[3, 3] = np.inf
XN[1, 0] = -np.inf
XI = R.integers(-5, 5, (4, 5))
BIG = R.standard_normal(300)


def _numpy(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def same(got, want, rtol=1e-12):
    """Leaf by leaf: the same dtype and shape, values equal up to rounding, NaN where NumPy."""
    g, w = fd.leaves(got), fd.leaves(want)
    assert len(g) == len(w)
    for i, (a, b) in enumerate(zip(g, w)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype, (i, a.dtype, b.dtype)
        assert a.shape == b.shape, (i, a.shape, b.shape)
        tol = rtol if a.dtype not in (np.float32, np.complex64) else 2e-6
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol, equal_nan=True, err_msg=f"leaf {i}")


def check(fn, *args, rtol=1e-12):
    same(compiler.jit(fn)(*args), _numpy(fn, *args), rtol)


# ---- differences, scans, integrals ------------------------------------------------------------

def differences(x, c):
    return (np.diff(x), np.diff(x, n=2, axis=0), np.diff(x, n=0), np.diff(x, n=7),
            np.diff(x, prepend=0.5, append=x[:, :1]), np.diff(x > 0, axis=0),
            np.ediff1d(x, to_begin=[1, 2], to_end=9),
            np.cumulative_sum(x, axis=0, include_initial=True),
            np.cumulative_prod(x[0], include_initial=True), np.cumulative_sum(x > 0, axis=1),
            np.trapezoid(x), np.trapezoid(x, dx=0.5, axis=0), np.trapezoid(x, c, axis=0),
            np.gradient(x), np.gradient(x, 0.5, edge_order=2, axis=1),
            np.gradient(x, c, axis=0), np.gradient(x, c, axis=0, edge_order=2))


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_differences(dtype):
    check(differences, (X * 3).astype(dtype), np.cumsum(np.abs(X[:, 0])) + 0.1)


# ---- comparisons and NaN handling --------------------------------------------------------------

def nans(x, y):
    return (np.isclose(x, y, rtol=0.1, atol=0.2), np.isclose(x, y, equal_nan=True),
            np.isclose(x, 0.1), np.isclose(x, np.inf), np.allclose(x, x + 1e-9),
            np.allclose(x, y), np.array_equal(x, x), np.array_equal(x, x, equal_nan=True),
            np.array_equal(x, x[:2]), np.nan_to_num(x), np.nan_to_num(x, nan=1, posinf=2, neginf=-3),
            np.nansum(x), np.nansum(x, axis=1, keepdims=True), np.nanprod(x, axis=0),
            np.nanmean(x, axis=1), np.nanmean(x), np.nanvar(x, axis=1, ddof=1), np.nanstd(x, axis=0),
            np.nanmax(x, axis=1), np.nanmin(x, axis=0, keepdims=True), np.nanmax(x),
            np.nancumsum(x, axis=1), np.nancumprod(x), np.nanargmax(x[:2], axis=0),
            np.nanargmin(x), np.nansum(x, axis=1, where=x > 0), np.nanmean(x, axis=1, where=x > 0))


def test_comparisons_and_nans():
    check(nans, XN, XN + 0.15)


def test_nans_of_integers_and_complex():
    check(lambda x: (np.nansum(x, axis=0), np.nanmax(x), np.nanmean(x), np.nanvar(x),
                     np.nan_to_num(x), np.isclose(x, 2)), XI)
    z = np.array([complex(np.nan, np.inf), 1 + 2j, complex(-np.inf, 1)])
    check(lambda z: (np.nan_to_num(z), np.nansum(z), np.isclose(z, z)), z)


def test_value_errors_when_the_kernel_runs():
    f = compiler.jit(lambda x: np.nanargmax(x, axis=1))
    assert f(XN[:2]).tolist() == np.nanargmax(XN[:2], axis=1).tolist()
    with pytest.raises(ValueError, match="All-NaN slice encountered"):
        f(XN)
    avg = compiler.jit(lambda x, w: np.average(x, axis=0, weights=w))
    with pytest.raises(ZeroDivisionError, match="Weights sum to zero"):
        avg(X, np.zeros(4))
    count = compiler.jit(lambda x: np.bincount(x, minlength=4))
    assert count(np.array([0, 3, 3])).tolist() == [1, 0, 0, 2]
    with pytest.raises(ValueError, match="minlength=4"):
        count(np.array([0, 4]))
    with pytest.raises(ValueError, match="no negative elements"):
        count(np.array([0, -1]))
    ravel = compiler.jit(lambda i, j: np.ravel_multi_index((i, j), (3, 4)))
    with pytest.raises(ValueError, match="invalid entry in coordinates array"):
        ravel(np.array([0, 3]), np.array([0, 1]))
    with pytest.raises(ValueError, match="out of bounds"):
        compiler.jit(lambda i: np.unravel_index(i, (3, 4)))(np.array([12]))


# ---- choosing and interpolating ----------------------------------------------------------------

XP = np.array([-1.0, 0.0, 0.0, 2.0, 3.0])
FP = np.array([0.0, 1.0, 2.0, 5.0, -1.0])
XS = np.array([-2, -1, -0.5, 0, 0.5, 2, 2.5, 3, 4, np.nan, np.inf, -np.inf])


def choosing(x, xp, fp):
    return (np.select([x > 0, x < -1], [x, x ** 2]), np.select([x > 0], [x], default=-1),
            np.piecewise(x, [x > 0, x < -1], [1.5, lambda t: t * 3, 7]),
            np.piecewise(x, x > 0, [lambda t: t * 2]),
            np.digitize(x, [-1, 0, 0, 1], right=True), np.digitize(x, [1, 0, -1]),
            np.digitize(x, xp), np.interp(x, XP, FP), np.interp(x, XP, FP, left=-9, right=9),
            np.interp(x, xp, fp), np.interp(x, XP, FP + 1j * FP[::-1]), np.interp(x, [1.0], [3.0]),
            np.interp(x * 100, np.array([0., 90, 180, 270]), fp[:4], period=360))


def test_choosing_and_interpolating():
    check(choosing, XS, XP, FP)


def convolutions(a, v, w):
    out = []
    for mode in ("full", "same", "valid"):
        for p, q in ((a, v), (v, a), (a, w), (w, a), (v, v)):
            out += [np.convolve(p, q, mode), np.correlate(p, q, mode)]
    return tuple(out)


def test_convolutions():
    check(convolutions, *(R.standard_normal(n) for n in (8, 3, 4)))
    z = [R.standard_normal(n) + 1j * R.standard_normal(n) for n in (7, 4)]
    check(lambda a, v: (np.correlate(a, v, "same"), np.correlate(v, a, "full"),
                        np.convolve(a, v, "valid")), *z)
    check(lambda a, v: np.convolve(a, v, "same"), XI[0], XI[1, :3])


# ---- grids and statistics ------------------------------------------------------------------------

def statistics(x, w):
    return (np.meshgrid(x[0], x[1, :3], x[2, :2]), np.meshgrid(x[0], x[1, :3], sparse=True,
                                                              indexing="ij"),
            np.average(x, axis=0, weights=w, returned=True), np.average(x, weights=x * x),
            np.average(x, axis=1, returned=True), np.cov(x), np.cov(x, rowvar=False, ddof=0),
            np.cov(x[0], x[1]), np.cov(x, bias=True), np.corrcoef(x), np.corrcoef(x[0], x[1]),
            np.corrcoef(x[0]), np.polyval(x[0], x), np.polyval([1.0, 2.0], x),
            np.polyder(x[0], 3), np.polyint(x[0], 2, k=[1.0, 2.0]), np.polyint(x[0]))


def test_statistics():
    check(statistics, X, X[:, 0] ** 2)


def single_precision(x, xn, c):
    return (np.diff(x, prepend=0.5), np.cumulative_sum(x, axis=1, include_initial=True),
            np.trapezoid(x, c, axis=0), np.gradient(x, c, axis=0), np.isclose(xn, 0.1),
            np.nan_to_num(xn), np.nanmean(xn, axis=1), np.nanvar(xn, axis=0), np.nanmax(xn, axis=1),
            np.nancumsum(xn), np.select([x > 0], [x]), np.interp(x, XP, FP),
            np.convolve(x[0], x[1], "same"), np.average(x, axis=0, weights=c), np.cov(x),
            np.corrcoef(x), np.polyval(x[0], x), np.sum(x, where=x > 0, initial=1),
            np.histogram(x, bins=4), np.digitize(x, [0.0, 0.5]))


def test_single_precision():
    check(single_precision, X.astype(np.float32), XN.astype(np.float32),
          (np.cumsum(np.abs(X[:, 0])) + 0.1).astype(np.float32))


def test_statistics_of_integers_and_complex():
    check(lambda x: (np.average(x, weights=np.ones((4, 5))), np.cov(x), np.polyval(x[0], x),
                     np.polyder(x[0])), XI)
    check(lambda z: (np.cov(z), np.corrcoef(z)), X + 1j * X[::-1])


def histograms(a, b, w, k):
    f = a.astype(np.float32)
    return (np.histogram(a, bins=7, range=(-2, 2.5)), np.histogram(a, bins=7),
            np.histogram(a, bins=[-2, -1, 0, 0.5, 3]),
            np.histogram(a, bins=5, range=(-1, 1), weights=w, density=True),
            np.histogram(f, bins=5, range=(-1, 1), weights=k), np.histogram(f, bins=4),
            np.histogram2d(a, b, bins=(3, 4), range=[[-1, 1], [-2, 2]]),
            np.histogram2d(f, b.astype(np.float32), bins=3, density=True),
            np.histogram2d(a, b, bins=[[-1, 0, 2], [0, 1, 2, 3]], weights=w),
            np.bincount(k, minlength=2), np.bincount(k, weights=w, minlength=3),
            np.histogram(k, bins=3), np.histogram(k, bins=[0, 1, 3]))


def test_histograms():
    check(histograms, BIG, BIG[::-1] * 2, np.abs(BIG), (BIG > 0).astype(np.int64))


# ---- reductions with where= and initial= --------------------------------------------------------

def reductions(x):
    return (np.sum(x, axis=0, where=x > 0, initial=2), np.max(x, axis=1, where=x > 0, initial=-1,
                                                             keepdims=True),
            np.min(x, initial=0), np.prod(x, where=[True, False, True, True, False]),
            np.all(x > 0, axis=0, where=x < 1), np.any(x > 1, where=x < 2),
            np.mean(x, axis=1, where=x > 0), np.mean(x, where=x > 0), x.sum(axis=1, where=x > 0),
            x.max(initial=10), x.min(axis=0, initial=-1))


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_reductions_with_where_and_initial(dtype):
    check(reductions, (X * 3).astype(dtype))


# ---- shapes from static positions --------------------------------------------------------------

def positions(x, v):
    return (x[np.tril_indices(4, k=-1, m=5)], x[np.triu_indices_from(x[:, :4], 1)],
            x[np.diag_indices_from(x[:, :4])], x[np.diag_indices(3)], np.resize(x, (3, 9)),
            np.resize(x, 7), np.delete(x, [0, -1], axis=1), np.delete(x, slice(1, None, 2)),
            np.delete(x, [True, False, False, True], axis=0), np.insert(x, 2, 7, axis=1),
            np.insert(x, 1, v[0], axis=0), np.insert(x, [1, 1, 5, 0], v[:, :4], axis=1),
            np.insert(x, [3, 0, 3], [9, 8, 7]), np.insert(x, slice(0, 4, 2), -1, axis=0),
            np.insert(x, -1, 5, axis=1), np.compress([False, True, True], x, axis=1),
            np.compress(np.array([1, 0, 1, 1], bool), x), np.block([[x, v], [v, x]]),
            np.block([x[0], v[0], 1]), np.block([[x[:2, :2], v[:2]], [np.zeros((2, 7), x.dtype)]]),
            np.unstack(x, axis=1), np.astype(x, np.int32), np.append(x, v, axis=0))


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_static_positions(dtype):
    check(positions, (X * 3).astype(dtype), (X[::-1] * 5).astype(dtype))


def test_index_conversions():
    u = R.integers(0, 20, (4, 5))
    check(lambda i, j: (np.ravel_multi_index((i, j), (20, 25)),
                        np.ravel_multi_index((i, j - 30), (7, 6), mode="wrap", order="F"),
                        np.ravel_multi_index((i, j - 10), (7, 6), mode=("clip", "wrap")),
                        np.unravel_index(i, (4, 5)), np.unravel_index(i, (3, 7), order="F"),
                        np.zeros(3, np.result_type(i, np.int8, 1.0)), np.indices((2, 3))),
          u, u + 1)


# ---- vmap and derivatives ----------------------------------------------------------------------

def batched(x, xp):
    return (np.interp(x, xp, x[::-1] * 2), np.convolve(x, xp, "same"), np.nanmean(x),
            np.histogram(x, bins=3, range=(-1, 1))[0], np.gradient(x), np.diff(x, 2),
            np.select([x > 0], [x]), np.bincount((x > 0).astype(np.int64), minlength=2))


def test_vmap_matches_a_loop():
    xs = R.standard_normal((3, 6))
    xs[1, 2] = np.nan
    xp = np.sort(R.standard_normal(6))
    got = compiler.vmap(batched, in_dims=(0, None))(xs, xp)
    want = [_numpy(batched, x, xp) for x in xs]
    for i, g in enumerate(got):
        same(g, np.stack([w[i] for w in want]))


def smooth(x):
    return (np.interp(x[0] * 0.8, np.array([-2.0, -0.5, 0.7, 2.0]), x[1, :4]),
            np.convolve(x[0], x[1, :3], "same"), np.correlate(x[2], x[3, :2], "valid"),
            np.gradient(x, axis=1), np.nanmean(np.where(x > 1.5, np.nan, x), axis=0),
            np.cov(x), np.corrcoef(x), np.polyval(x[0], x[1]), np.trapezoid(x, axis=0),
            np.select([x > 0.5], [x * x], x), np.piecewise(x, [x < 0], [lambda t: t * t, np.sin]),
            np.average(x, axis=1, weights=np.arange(1.0, 6.0)), np.diff(x, prepend=x[:, :1] * 2))


def test_jvp_and_vjp_against_finite_differences():
    t = R.standard_normal(X.shape)
    _, tangent = compiler.jvp(smooth, (X,), (t,))
    want = fd.directional_derivative(smooth, [X], [t])
    for g, w in zip(fd.leaves(tangent), want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)

    def loss(x):
        return (np.sum(np.interp(x[0], np.array([-2.0, 0.5, 2.0]), x[1, :3]) ** 2)
                + np.sum(np.convolve(x[0], x[1], "same") * x[2]) + np.nanstd(x)
                + np.sum(np.piecewise(x, [x < 0], [np.sin, np.cos])))
    g = compiler.grad(loss)(X)
    np.testing.assert_allclose(np.sum(g * t), fd.directional_derivative(loss, [X], [t])[0],
                               rtol=1e-6)


# ---- with np.errstate, and the messages --------------------------------------------------------

def test_errstate_is_a_no_op():
    def f(x):
        with np.errstate(divide="ignore", invalid="ignore"):
            y = np.log(x)
        return y / x
    x = np.array([0.0, 1.0, 2.0, -1.0])
    same(compiler.jit(f)(x), _numpy(f, x))


CONTEXT = contextlib.nullcontext()


def with_open(x):
    with CONTEXT:
        return x


def histogram_auto(x):
    return np.histogram(x, bins="auto")


def bincount_plain(x):
    return np.bincount(x)


def compress_staged(x):
    return np.compress(x > 0, x)


def unique_counts(x):
    return np.unique_counts(x)


@pytest.mark.parametrize("fn, arg, error, text", [
    (with_open, X, UnsupportedError, "except `with np.errstate"),
    (histogram_auto, X, UnsupportedError, "an estimator"),
    (bincount_plain, XI[0] + 5, DynamicShapeError, "minlength"),
    (compress_staged, X, DynamicShapeError, "static condition"),
    (unique_counts, XI, DynamicShapeError, "size=k"),
])
def test_refusals_name_the_way_out(fn, arg, error, text):
    with pytest.raises(error) as e:
        compiler.jit(fn)(arg)
    assert text in str(e.value)
    assert "test_everyday.py" in str(e.value)
    assert isinstance(e.value, CompileError)


# ---- symbolic sizes ---------------------------------------------------------------------------

def symbolic(x, v, m):
    return (np.diff(x, 2, prepend=0), np.cumulative_sum(x, include_initial=True), np.trapezoid(x),
            np.gradient(x), np.gradient(x, edge_order=2), np.interp(x, np.sort(v), v),
            np.convolve(x, v), np.convolve(x, v, "same"), np.correlate(x, v, "valid"),
            np.nanmean(m, axis=1), np.nanvar(m), np.cov(m), np.corrcoef(m),
            np.histogram(x, bins=4), np.max(x, initial=0.5), np.max(x[:0], initial=0.5))


def test_symbolic_sizes():
    kernel = compiler.jit(symbolic, signature="f64[n], f64[k], f64[r, c]")
    for n, k, r in ((9, 3, 3), (5, 4, 2)):
        m = R.standard_normal((r, 6))
        m[0, 1] = np.nan
        args = (R.standard_normal(n), R.standard_normal(k), m)
        same(kernel(*args), _numpy(symbolic, *args))
    with pytest.raises(ValueError, match="at least as long"):
        kernel(R.standard_normal(3), R.standard_normal(4), m)


def _insert_delete_big(x):
    return np.insert(x, 0, 0.0), np.delete(x, [5, 6, 900]), np.insert(x, [3, 3, 70], -1.0)


def test_runs_of_positions_are_slices():
    """np.insert / np.delete at a few positions of a long array: joined slices, no index table
    the size of the array (everyday._take_axis); values as NumPy's."""
    x = np.random.default_rng(3).standard_normal(5000)
    k = compiler.jit(_insert_delete_big)
    for got, want in zip(k(x), _insert_delete_big(x)):
        np.testing.assert_array_equal(got, want)
    ir = k.lower(x).ir_optimized
    assert "take(" not in ir and "gather" not in ir


def _unwraps(p, i):
    return (np.unwrap(p), np.unwrap(p, axis=0), np.unwrap(p, discont=4.0, axis=1),
            np.unwrap(p, period=4.0), np.unwrap(i, period=10))


def test_unwrap_matches_numpy():
    """np.unwrap, the boundary case (a jump of exactly -period/2 upwards) included."""
    r = np.random.default_rng(11)
    p = r.uniform(-10, 10, (30, 40))
    p[0, :5] = [0.0, np.pi, 0.0, -np.pi, 0.0]
    i = (r.integers(0, 30, 40).cumsum() % 17).astype(np.int64)
    got = compiler.jit(_unwraps)(p, i)
    for g, w in zip(got, _unwraps(p, i)):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
