"""np.searchsorted and np.interp over many needles: the windowed, branch-free binary search
(compiler/primitives/searching.py) against NumPy, with sorted, clustered and unsorted needles, NaNs
in the needles and the hay, ties, both sides, symbolic lengths, vmap and derivatives.

More than SEARCH_CHUNK needles, so the full windows and the tail window both run; each window
searches only between the positions of its smallest and largest needle, which sorted needles
make short and a NaN makes the whole hay."""
from __future__ import annotations

import numpy as np
import pytest

import compiler
from compiler.primitives.searching import SEARCH_CHUNK
from tests.lazy import lazy_jit

R = np.random.default_rng(12)


def _both(a, v):
    return np.searchsorted(a, v), np.searchsorted(a, v, side="right")


SEARCH = lazy_jit(_both, signature="f64[n], f64[m]")
SEARCH_2D = compiler.jit(_both)                                    # static lengths, 2-D needles
INTERP = lazy_jit(lambda x, xp, fp: np.interp(x, xp, fp), signature="f64[m], f64[n], f64[n]")
INTERP_LR = compiler.jit(lambda x, xp, fp: (np.interp(x, xp, fp, left=-7.0, right=9.0),
                                            np.interp(x, xp, fp + 1j * fp[::-1]),
                                            np.interp(x, xp, fp, period=0.75)))


def _needles(n: int, kind: str) -> np.ndarray:
    if kind == "sorted":
        return np.sort(R.uniform(-0.2, 1.2, n))
    if kind == "clustered":                        # sorted runs, each window a narrow range
        return np.concatenate([np.sort(R.uniform(c, c + 0.01, 100)) for c in R.uniform(0, 1, n // 100)])
    return R.uniform(-0.2, 1.2, n)


HAYS = {
    "one": np.array([0.5]),
    "two": np.array([0.25, 0.75]),
    "ties": np.sort(np.round(R.uniform(0, 1, 37), 1)),            # repeated values
    "long": np.sort(R.uniform(0, 1, 1000)),
    "nan": np.concatenate([np.sort(R.uniform(0, 1, 20)), [np.nan, np.nan]]),   # NaN last
}


@pytest.mark.parametrize("hay", list(HAYS))
@pytest.mark.parametrize("kind", ["sorted", "clustered", "unsorted"])
def test_searchsorted_matches_numpy(hay: str, kind: str) -> None:
    a = HAYS[hay]
    v = _needles(3 * SEARCH_CHUNK + 100 if kind != "clustered" else 900, kind)
    v[::97] = np.round(v[::97], 1)                 # needles equal to hay values
    if kind == "unsorted":
        v[5::301] = np.nan                          # NaN needles in some windows only
    for got, want in zip(SEARCH(a, v), _both(a, v)):
        np.testing.assert_array_equal(got, want)


def test_searchsorted_static_2d_needles_and_integers() -> None:
    a = HAYS["ties"]
    v = R.uniform(-0.1, 1.1, (30, 41))              # 1230 needles: 4 full windows and a tail
    v[3] = np.sort(v[3])
    v[7, 5] = -0.0
    for got, want in zip(SEARCH_2D(a, v), _both(a, v)):
        np.testing.assert_array_equal(got, want)
    ai, vi = np.arange(0, 100, 3), R.integers(-5, 105, 700)
    for got, want in zip(SEARCH_2D(ai, vi), _both(ai, vi)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kind", ["sorted", "clustered", "unsorted"])
@pytest.mark.parametrize("m", [2, 3, 50, 1000, "special"])
def test_interp_matches_numpy(kind: str, m: int | str) -> None:
    """Every path of the windows: two intervals or fewer (m = 2, 3; sorted queries), the samples
    counted (m = 50), searched (m = 1000, unsorted); NaN and infinite queries, and (special)
    repeated knots and infinite values, whose NaN slopes send a window to NumPy's full rule."""
    if m == "special":
        xp = np.sort(np.round(R.uniform(0, 1, 40), 1))          # repeated knots: infinite slopes
        fp = R.standard_normal(40)
        fp[[3, 17]] = np.inf, -np.inf
    else:
        xp = np.sort(R.uniform(0, 1, m))
        fp = R.standard_normal(m)
    x = _needles(1200, kind)
    x[7::250] = xp[R.integers(0, len(xp), x[7::250].size)]        # queries exactly at the knots
    x[11::400] = [np.nan, np.inf, -np.inf][: x[11::400].size]
    with np.errstate(invalid="ignore"):
        want = np.interp(x, xp, fp)
    np.testing.assert_allclose(INTERP(x, xp, fp), want, rtol=1e-14, atol=1e-15)


def test_interp_left_right_complex_period_and_infinite_values() -> None:
    xp = np.array([0.0, 0.1, 0.1, 0.3, 0.5, 0.9])           # a repeated knot
    fp = np.array([1.0, -2.0, 3.0, np.inf, 0.5, 4.0])       # an infinite value
    x = np.concatenate([_needles(700, "sorted"), _needles(700, "unsorted")])
    x[::131] = np.nan
    got = INTERP_LR(x, xp, fp)
    with np.errstate(invalid="ignore"):
        want = (np.interp(x, xp, fp, left=-7.0, right=9.0), np.interp(x, xp, fp + 1j * fp[::-1]),
                np.interp(x, xp, fp, period=0.75))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-14, atol=1e-15)


def test_interp_vmap_and_derivatives() -> None:
    xp = np.sort(R.uniform(0, 1, 50))
    fp = R.standard_normal(50)
    xs = R.uniform(-0.1, 1.1, (3, 600))
    xs[1] = np.sort(xs[1])
    got = compiler.vmap(lambda x, xp, fp: np.interp(x, xp, fp), in_dims=(0, None, None))(xs, xp, fp)
    np.testing.assert_allclose(got, [np.interp(x, xp, fp) for x in xs], rtol=1e-14, atol=1e-15)

    w = R.standard_normal(600)
    x = xs[0]
    gx, gfp = compiler.grad(lambda x, fp: np.sum(w * np.interp(x, xp, fp)), argnums=(0, 1))(x, fp)
    # the values are linear in fp: d/dfp_k = interp of the k-th unit vector
    np.testing.assert_allclose(gfp, [np.sum(w * np.interp(x, xp, e)) for e in np.eye(50)],
                               rtol=1e-12, atol=1e-12)
    # d/dx is the slope of the interval (0 outside [xp[0], xp[-1]]): central differences
    h = 1e-7
    fd = w * (np.interp(x + h, xp, fp) - np.interp(x - h, xp, fp)) / (2 * h)
    np.testing.assert_allclose(gx, fd, rtol=1e-5, atol=1e-5)


def test_vmap_over_the_sorted_array_and_the_needles() -> None:
    a = np.sort(R.uniform(0, 1, (3, 40)), axis=1)
    v = R.uniform(-0.1, 1.1, (3, 700))
    v[1] = np.sort(v[1])
    v[2, ::50] = np.nan

    def right(a, v):
        return np.searchsorted(a, v, side="right")

    got = compiler.vmap(right, in_dims=(0, None))(a, v[0])        # the array batched
    np.testing.assert_array_equal(got, [right(row, v[0]) for row in a])
    got = compiler.vmap(lambda x, xp, fp: np.interp(x, xp, fp))(v, a, a ** 2)
    np.testing.assert_allclose(got, [np.interp(*t) for t in zip(v, a, a ** 2)], rtol=1e-14)


def test_interp_at_a_repeated_knot_next_to_an_infinite_value() -> None:
    """A query exactly at a knot takes that knot's value, as NumPy's interp does, even where
    the interval's slope is infinite or NaN (repeated knots, infinite samples)."""
    xp = np.array([0.0, 0.3, 0.3, 0.3, 0.4, 0.4, 0.5, 0.7, 1.0])
    fp = np.array([1.0, 2.0, -1.0, 0.5, 3.0, np.inf, -np.inf, 2.0, 4.0])
    for x in (np.repeat(xp, 300), np.tile(xp, 300), np.full(2000, 0.4), np.array([0.3, 0.4, 0.5])):
        with np.errstate(invalid="ignore"):
            want = np.interp(x, xp, fp)
        np.testing.assert_allclose(INTERP(x, xp, fp), want, rtol=1e-14, atol=1e-15)
