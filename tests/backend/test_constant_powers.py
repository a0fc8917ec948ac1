"""x ** v for the constant exponents 3, 4, -2, -3, 1.5, -0.5 and -1.5 (vecmath.power.constant_power).

They are computed by products and a square root with their rounding errors carried, not by
pow's logarithm and exponential. Checked: float64 against long double over the whole range
of finite results (0.52 ULP), against mpmath at the overflow and underflow boundaries
(faithful: one of the two neighbours of the exact value), every special value against
NumPy's pow, float32 against float64, the forms a user writes (``x ** 3``, ``np.power``,
a 0-d exponent), and the derivative.
"""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")

import compiler
from tests.backend import vecmath_harness as H
from tests.lazy import lazy_jit

POWERS = (3.0, 4.0, -2.0, -3.0, 1.5, -0.5, -1.5)


def _power(v: float):
    return lambda x: x ** v         # v: a constant of the closure


_KERNELS = {v: lazy_jit(_power(v)) for v in POWERS}


def _arguments(v: float, n: int, seed: int) -> np.ndarray:
    """Log-uniform magnitudes whose powers span the finite range, subnormals included, both
    signs for the integer exponents."""
    rng = np.random.default_rng(seed)
    lo, hi = max(-1074.0, -1074 / abs(v)) - 2, min(1023.0, 1024 / abs(v)) + 2
    if v < 0:
        lo, hi = max(-1074.0, -1024 / abs(v)) - 2, min(1023.0, 1074 / abs(v)) + 2
    x = np.ldexp(rng.uniform(1, 2, n), rng.integers(int(lo), int(hi), n))
    return x * np.where(rng.random(n) < 0.5, -1, 1) if v.is_integer() else x


@pytest.mark.parametrize("v", POWERS)
def test_float64_against_long_double(v: float) -> None:
    x = _arguments(v, 100_000, int(v * 10) + 100)
    got = _KERNELS[v](x)
    with np.errstate(all="ignore"):
        exact = np.power(x.astype(np.longdouble), np.longdouble(v))
    finite = np.isfinite(exact.astype(np.float64))
    normal = finite & (np.abs(exact) >= np.finfo(np.float64).tiny)
    err = H.ulp_error(got, exact)
    assert err[normal].max() <= 0.52, (v, x[normal][np.argmax(err[normal])])
    assert err[finite].max() <= 1.0, (v, x[finite][np.argmax(err[finite])])
    assert np.array_equal(got[~finite], exact[~finite].astype(np.float64))     # inf, 0


@pytest.mark.parametrize("v", POWERS)
def test_boundaries_against_mpmath(v: float) -> None:
    """Around the exponents where the result overflows, becomes subnormal, or where an
    intermediate (x^2, x^3, sqrt's residual) does."""
    edges = [1024 / v, -1022 / v, -1074 / v, 512.0, -511.5, 341.3, -341.7, -900.0, -1000.0, -1070.0]
    x = np.unique(np.array([2.0 ** (e + d) for e in edges for d in np.linspace(-0.02, 0.02, 9)]))
    x = x[np.isfinite(x) & (x > 0)]
    got = _KERNELS[v](x)
    for xi, g in zip(x, got):
        want = H.correctly_rounded("pow", (xi, v), np.dtype(np.float64))
        if want is None or not np.isfinite(want) or want == 0:
            with np.errstate(all="ignore"):
                assert g == np.power(xi, v), (v, xi, g)
            continue
        assert H.ulp_error(np.array([g]), np.array([want]))[0] <= 1.0, (v, xi, g, want)


@pytest.mark.parametrize("v", POWERS)
def test_special_values_are_numpys(v: float) -> None:
    tiny = np.finfo(np.float64).smallest_subnormal
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, -2.5, 2.5, tiny, -tiny,
                  np.finfo(np.float64).max, -np.finfo(np.float64).max, 1e-300, 1e300])
    got = _KERNELS[v](x)
    with np.errstate(all="ignore"):
        want = np.power(x, v)
    assert np.array_equal(got, want, equal_nan=True), (v, got, want)
    number = ~np.isnan(want)                     # (the sign of a nan is not NumPy's contract)
    assert np.array_equal(np.signbit(got[number]), np.signbit(want[number])), (v, got, want)


@pytest.mark.parametrize("v", POWERS)
def test_float32_is_rounded_from_float64(v: float) -> None:
    with np.errstate(over="ignore"):
        x = np.abs(_arguments(v, 20_000, 7)).astype(np.float32)
    x = x[np.isfinite(x) & (x > 0)]
    got = _KERNELS[v](x)
    assert got.dtype == np.float32
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), v)
    assert H.ulp_error(got, want).max() <= 0.51


def _forms(x):
    return np.power(x, 3.0), x ** np.float64(-0.5), np.power(x, np.array(1.5)), 1.0 / x ** 2


_forms_k = lazy_jit(_forms)


def test_the_forms_users_write() -> None:
    x = np.random.default_rng(3).uniform(0.1, 10, 1000)
    for got, want in zip(_forms_k(x), _forms(x)):
        np.testing.assert_allclose(got, want, rtol=2.3e-16)


def test_derivatives() -> None:
    x = np.random.default_rng(4).uniform(0.5, 3, 50)
    g = compiler.jit(compiler.grad(lambda t: np.sum(t ** 3 + t ** -1.5)))
    np.testing.assert_allclose(g(x), 3 * x ** 2 - 1.5 * x ** -2.5, rtol=1e-14)
