"""Special functions (docs/special.md): NumPy's bit-level and special elementwise functions
against NumPy, the decompositions of the transcendental primitives against mpmath, their
jvp/vjp rules against finite differences, and the scipy.special calls against SciPy (those
tests are skipped when SciPy, which is optional, is not installed).

Compile time dominates: each compiled kernel is module-level and shared, the decompositions
are checked on the IR interpreter (no LLVM), and the native code of every primitive is
checked against SciPy by its OpInfo (tests/ops/opinfo.py).
"""
from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest

import compiler
from compiler.transforms.decompose import decompose
from tests import fd
from tests.ops import internal

try:
    import scipy.special as sp
except ImportError:
    sp = None

needs_scipy = pytest.mark.skipif(sp is None, reason="SciPy is not installed (it is optional; "
                                 "the scipy.special tests compare with it)")
DTYPES = pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])


def _same_bits(got: np.ndarray, want: np.ndarray) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "f":
        assert np.array_equal(np.isnan(got), np.isnan(want))
        ok = ~np.isnan(want)
        assert np.array_equal(got[ok], want[ok]), (got, want)
        assert np.array_equal(np.signbit(got[ok]), np.signbit(want[ok])), (got, want)
    else:
        assert np.array_equal(got, want), (got, want)


# ---- NumPy's bit-level functions ----------------------------------------------------------

def _bit_functions(x, y, n):
    m, e = np.frexp(x)
    frac, whole = np.modf(x)
    return (np.signbit(x), np.copysign(x, y), np.heaviside(x, y), np.nextafter(x, y),
            np.spacing(x), m, e, np.ldexp(x, n), frac, whole)


_bits_kernel = compiler.jit(_bit_functions)

_X = [0.0, -0.0, 1.0, -1.0, 0.3, -2.5, 7.25, 1e-310, -1e-310, 5e-324, 1e-40, 3e38, 1.7976931348623157e308,
      -1.7976931348623157e308, np.inf, -np.inf, np.nan, 2.0 ** -1022, 123456.789, -0.75]
_Y = [1.0, -2.0, -0.0, 0.0, np.nan, np.inf, -np.inf, 0.5, 1.0, -1.0, 0.0, 1e300, np.inf, 0.0, 1.0,
      -1.0, 2.0, 0.0, -5.0, -0.75]
_N = [3, -1074, 5, 0, 60, -2000, 1023, 1, 100, -3, 2, -200, 1, -1, 4, 2000, 1, -1, -1100, 7]


@DTYPES
def test_bit_functions_match_numpy_bit_for_bit(dtype):
    with np.errstate(all="ignore"):
        x, y = np.array(_X, dtype), np.array(_Y, dtype)
        n = np.array(_N, np.int64)
        want = _bit_functions(x, y, n)
    got = _bits_kernel(x, y, n)
    for g, w in zip(got, want):
        _same_bits(g, w)


def test_signbit_of_integers_and_float_power():
    f = compiler.jit(lambda i, x: (np.signbit(i), np.float_power(x, 1.5), np.float_power(i, 2)))
    i = np.array([-3, 0, 7], np.int32)
    x = np.array([0.5, 2.0, 3.0], np.float32)
    got = f(i, x)
    want = (np.signbit(i), np.float_power(x, 1.5), np.float_power(i, 2))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-15)


_sinc_i0 = compiler.jit(lambda x: (np.sinc(x), np.i0(x)))


@DTYPES
def test_sinc_and_i0_against_mpmath(dtype):
    """np.sinc within 4 ULP also next to the integers (NumPy's sin(pi x) / (pi x) is not),
    np.i0 within 8 ULP."""
    x = np.array([0.0, -0.0, 0.5, 1.0, -3.0, 1e-8, 2.5, 3.0 + 2 ** -20, -7.999, 100.25, 40.0,
                  -600.5], dtype)
    sinc, i0 = _sinc_i0(x)
    assert sinc.dtype == np.sinc(x).dtype and i0.dtype == np.i0(x).dtype
    with mp.workdps(40):
        want_sinc = [mp.sinpi(mp.mpf(float(v))) / (mp.pi * float(v)) if v else mp.mpf(1) for v in x]
        want_i0 = [mp.besseli(0, mp.mpf(float(v))) for v in x]
    assert _max_ulp(sinc, want_sinc) <= 4
    assert _max_ulp(i0, want_i0) <= 8


def _derivative_kernel(x, n):
    m, _ = np.frexp(x)
    frac, _ = np.modf(x)
    return np.sum(np.copysign(x, -1.0) + np.ldexp(x, n) + 3.0 * m + frac + np.spacing(x)
                  + np.sinc(x))


def test_bit_function_derivatives_against_finite_differences():
    """copysign (-sign x), ldexp (2^n), frexp's mantissa (2^-e), modf's fraction (1), spacing
    (0: piecewise constant) and sinc, against central differences inside each piece."""
    x = np.array([0.3, -1.7, 2.6, 5.1, -0.2])
    n = np.array([2, -1, 3, 0, 5])
    got = compiler.grad(_derivative_kernel)(x, n)
    want = fd.jacobian(lambda v: _derivative_kernel(v, n), [x], 0, h=1e-6)
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-8)


# ---- the transcendental primitives: decompositions vs mpmath, on the interpreter -------------

def _ulps(got: float, exact, dtype) -> float:
    info = np.finfo(dtype)
    if mp.isnan(exact):
        return 0.0 if math.isnan(got) else math.inf
    rounded = dtype(float(exact)) if abs(exact) < 1e308 else dtype(math.copysign(math.inf, exact))
    if np.isinf(rounded) or math.isinf(got):
        return 0.0 if got == rounded else math.inf
    if math.isnan(got):
        return math.inf
    mag = abs(float(rounded))
    unit = float(info.smallest_subnormal) if mag < info.smallest_normal else float(np.spacing(dtype(mag)))
    if mag >= info.smallest_normal and mag == 2.0 ** math.floor(math.log2(mag)):
        unit /= 2
    return float(abs(mp.mpf(float(got)) - exact)) / unit


def _max_ulp(got, exact, dtype=None) -> float:
    got = np.asarray(got)
    dtype = dtype or got.dtype.type
    return max(_ulps(float(g), e, dtype) for g, e in zip(got, exact))


def _erfcinv(q):
    with mp.workdps(60 + max(0, int(-mp.log10(q)))):
        return mp.erfinv(1 - q)


#: primitive: (mpmath reference, points, max ULP float64, params)
PRIMITIVES = {
    "erf": (mp.erf, [-5.9, -1.0, -0.7, -1e-300, 0.1, 0.74, 0.76, 2.0, 5.5], 2, {}),
    "erfc": (mp.erfc, [-5.0, -0.3, 0.1, 0.49, 0.51, 1.0, 4.0, 10.0, 26.0], 4, {}),
    "erfcx": (lambda x: mp.exp(x * x) * mp.erfc(x), [-20.0, -1.0, 0.0, 0.5, 3.75, 10.0, 50.0, 1e6], 4, {}),
    "erfinv": (mp.erfinv, [-0.999999, -0.5, -1e-10, 0.3, 0.9, 1 - 2.0 ** -40, 1 - 2.0 ** -53], 3, {}),
    "erfcinv": (_erfcinv, [1e-300, 1e-20, 1e-3, 0.4, 0.6, 1.0, 1.7, 2 - 2.0 ** -50], 3, {}),
    "lgamma": (lambda x: mp.log(abs(mp.gamma(x))), [1e-300, 0.2, 0.9, 1.0, 1.1, 2.0, 2.4, 5.5, 30.0,
                                                     1e5, 1e300, -0.5, -2.7], 8, {}),
    "gamma": (mp.gamma, [1e-300, 0.2, 1.0, 3.5, 10.0, 60.5, 170.5, -0.5, -5.3], 24, {}),
    "digamma": (mp.digamma, [1e-300, 0.2, 1.0, 1.46, 1.5, 3.0, 9.0, 1e10, -0.5, -4.3], 24, {}),
    "polygamma": (lambda x: mp.polygamma(2, x), [1e-50, 0.3, 1.0, 4.5, 12.0, 100.0, 1e10, -0.3, -2.5,
                                                  -7.9], 8, {"n": 2}),
    "i0e": (lambda x: mp.besseli(0, x) * mp.exp(-abs(x)), [-40.0, -3.0, 0.0, 1e-5, 7.5, 19.9, 20.1, 500.0],
            8, {}),
    "i1e": (lambda x: mp.besseli(1, x) * mp.exp(-abs(x)), [-40.0, -3.0, 0.0, 1e-5, 7.5, 19.9, 20.1, 500.0],
            8, {}),
}


def _decomposed(name: str, x: np.ndarray, params: dict):
    fn = internal.one_op_function(name, [x], params)
    return fn, decompose(fn)


@pytest.mark.parametrize("name", sorted(PRIMITIVES))
def test_decomposition_against_mpmath(name):
    """The primitive's decomposition, run by the interpreter, within its ULP bound (float64) and
    within 1 ULP (float32: computed in float64, rounded once)."""
    ref, points, bound, params = PRIMITIVES[name]
    with mp.workdps(50):
        exact = [ref(mp.mpf(v)) for v in points]
    for dtype, limit in ((np.float64, bound), (np.float32, 1.0)):
        with np.errstate(over="ignore"):
            x = np.array(points, dtype)
        keep = np.isfinite(x) & ((x != 0) | (np.array(points) == 0))
        fn, low = _decomposed(name, x[keep], params)
        assert internal.primitives_in(low).isdisjoint(PRIMITIVES), internal.primitives_in(low)
        with np.errstate(all="ignore"):
            (got,) = internal.interpret(low, x[keep])
        assert got.dtype == dtype
        sub = [e for e, k in zip(exact, keep) if k]
        if dtype == np.float32:
            sub = [mp.mpf(float(np.float32(float(v)))) for v in x[keep]]
            with mp.workdps(50):
                sub = [ref(v) for v in sub]
        assert _max_ulp(got, sub, dtype) <= limit, (name, dtype, got)


#: primitive: (points for the derivative tests, the function for the finite differences)
_SMOOTH = {
    "erf": [-1.3, 0.2, 0.9], "erfc": [-1.0, 0.4, 2.5], "erfcx": [-0.8, 0.5, 4.0],
    "erfinv": [-0.7, 0.1, 0.95], "erfcinv": [0.05, 0.8, 1.6], "lgamma": [0.4, 2.3, 7.7, -0.5],
    "gamma": [0.4, 2.3, 5.5, -1.5], "digamma": [0.4, 2.3, 7.7], "polygamma": [0.4, 2.3, 7.7, -1.3],
    "i0e": [-3.0, 0.7, 25.0], "i1e": [-3.0, 0.7, 25.0],
}



@pytest.mark.parametrize("name", sorted(_SMOOTH))
def test_jvp_and_vjp_rules_against_finite_differences(name):
    """jvp and vjp of the primitive on the interpreter (the rules: erf' = 2/sqrt(pi) exp(-x^2),
    lgamma' = digamma, digamma' = polygamma(1), ...) against central differences of mpmath."""
    ref, _, _, params = PRIMITIVES[name]
    x = np.array(_SMOOTH[name])
    t = np.array([1.0, -0.5, 0.25, 2.0][: len(x)])
    fn = internal.one_op_function(name, [x], params)

    def f(v):
        with mp.workdps(40):
            return np.array([float(ref(mp.mpf(float(e)))) for e in v])
    want = fd.directional_derivative(f, [x], [t], h=1e-4)[0]
    _, tangent = internal.interpret(internal.jvp_function(fn, [True]), x, t)
    np.testing.assert_allclose(tangent, want, rtol=1e-9)
    _, cot = internal.interpret(internal.vjp_function(fn, [True]), x, t)
    np.testing.assert_allclose(cot, want, rtol=1e-9)


# ---- scipy.special ----------------------------------------------------------------------------

def _compositions(x, p, y):
    return (sp.expit(x), sp.log_expit(x), sp.logit(p), sp.xlogy(x, y), sp.xlog1py(x, p),
            sp.entr(x), sp.rel_entr(x, y), sp.kl_div(x, y), sp.sinc(x))


_compositions_kernel = compiler.jit(_compositions)


@needs_scipy
@DTYPES
def test_compositions_against_scipy(dtype):
    r = np.random.default_rng(0)
    x = np.concatenate([r.normal(size=12) * 5, [0.0, -0.0, 40.0, -40.0, 800.0, -800.0, np.inf, -np.inf,
                                                 np.nan]]).astype(dtype)
    p = np.concatenate([r.uniform(size=12), [0.0, 1.0, 0.5, 0.25, 0.75, 1e-30, 0.999, np.nan, -0.5]]).astype(dtype)
    y = np.abs(x[::-1]) + np.array([0.0] * 20 + [np.nan], dtype)
    with np.errstate(all="ignore"):
        want = _compositions(x, p, y)
    got = _compositions_kernel(x, p, y)
    rtol = 1e-13 if dtype == np.float64 else 2e-6
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype
        # sinc at the integers 40 and 800: exactly 0 here, NumPy's sin(pi x) rounding there
        atol = (1e-15 if dtype == np.float64 else 1e-7) if i == len(want) - 1 else 0
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def _reductions(x, w):
    return (sp.logsumexp(x), sp.logsumexp(x, axis=1), sp.logsumexp(x, axis=0, keepdims=True),
            sp.logsumexp(x, axis=-1, b=w, return_sign=True), sp.logsumexp(x, axis=(0, 1), b=np.abs(w)),
            sp.softmax(x, axis=1), sp.softmax(x), sp.log_softmax(x, axis=0))


_reductions_kernel = compiler.jit(_reductions)


@needs_scipy
@DTYPES
def test_logsumexp_softmax_against_scipy(dtype):
    """Every logsumexp form (axis, keepdims, b, return_sign), softmax and log_softmax; an
    all -inf row gives -inf as in SciPy. float32 against SciPy in float64 (SciPy's float32
    log_softmax is itself off by 1e-4 near 0)."""
    r = np.random.default_rng(1)
    x = (r.normal(size=(3, 4)) * 10).astype(dtype)
    x[1, 2] = -np.inf
    w = (x[0] - 1).astype(dtype)
    with np.errstate(all="ignore"):
        want = _reductions(x.astype(np.float64), w.astype(np.float64))
    got = _reductions_kernel(x, w)
    rtol = 1e-13 if dtype == np.float64 else 1e-5
    for g, wt in zip(compiler_leaves(got), compiler_leaves(want)):
        assert g.dtype == dtype and g.shape == wt.shape
        np.testing.assert_allclose(g, wt, rtol=rtol, atol=1e-300 if dtype == np.float64 else 1e-30)
    inf_row = np.full((2, 3), -np.inf, dtype)
    assert np.all(_reductions_kernel(inf_row, w[:3])[1] == -np.inf)


def compiler_leaves(tree):
    return [np.asarray(v) for v in fd.leaves(tree)]


def _transcendental(x, p, q):
    return sp.erf(x), sp.gammaln(q), sp.i0e(x), sp.erfinv(p)


def _compositions_of_primitives(x, q):
    return sp.ndtr(x), sp.log_ndtr(x), sp.ndtri(q / 10), sp.loggamma(x)


_transcendental_kernel = compiler.jit(_transcendental)
_compositions_of_primitives_kernel = compiler.jit(_compositions_of_primitives)

_TX = np.concatenate([np.random.default_rng(2).normal(size=16) * 4,
                      [0.0, -0.0, -30.0, 30.0, np.inf, -np.inf, np.nan, -1.0]])
_TP = np.concatenate([np.random.default_rng(3).uniform(-1, 1, 16), [0.0, -0.0, 1.0, -1.0, 0.5, 1 - 1e-7,
                                                                   np.nan, 2.0]])
_TQ = np.concatenate([np.random.default_rng(4).uniform(0, 9, 16), [0.0, 1.0, 2.0, 1e-30, np.inf, 9.99,
                                                                  np.nan, 0.5]])


def _assert_close(got, want, rtol):
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype, i
        np.testing.assert_allclose(g, w, rtol=rtol, atol=0, err_msg=f"output {i}")


@needs_scipy
def test_transcendental_float32_against_scipy():
    """float32 (computed in float64 and rounded once) within 2 ULP of SciPy's float32; the
    float64 native code of every primitive is compared with SciPy by its OpInfo."""
    args = [a.astype(np.float32) for a in (_TX, _TP, _TQ)]
    with np.errstate(all="ignore"):
        want = _transcendental(*args)
        got = _transcendental_kernel(*args)
    _assert_close(got, want, 2.5e-7)


@needs_scipy
def test_compositions_of_primitives_against_scipy():
    """ndtr, log_ndtr, ndtri, loggamma in float64 within 1e-12 of SciPy (whose ndtr and
    log_ndtr err by up to 1500 ULP where x / sqrt 2 rounds: ours is corrected)."""
    with np.errstate(all="ignore"):
        want = _compositions_of_primitives(_TX, _TQ)
        got = _compositions_of_primitives_kernel(_TX, _TQ)
    _assert_close(got, want, 1e-12)


@needs_scipy
def test_vmap_and_grad_compiled():
    """vmap of an elementwise special function (a loop over rows) and grad through the native
    code of lgamma (digamma), erf and i1 against SciPy's derivative formulas."""
    x = np.random.default_rng(3).uniform(0.5, 4.0, (3, 5))
    row = compiler.vmap(lambda v: sp.gammaln(v) + sp.erf(v))(x)
    np.testing.assert_allclose(row, [sp.gammaln(v) + sp.erf(v) for v in x], rtol=1e-13)
    g = compiler.grad(lambda v: np.sum(sp.gammaln(v) + sp.erf(v) + sp.i1(v)))(x)
    want = sp.digamma(x) + 2 / np.sqrt(np.pi) * np.exp(-x * x) + (sp.i0(x) - sp.i1(x) / x)
    np.testing.assert_allclose(g, want, rtol=1e-12)


@needs_scipy
def test_unrecognised_scipy_function_names_itself():
    with pytest.raises(compiler.errors.UnsupportedError) as e:
        compiler.jit(lambda v: sp.jv(1.0, v))(np.ones(3))
    msg = str(e.value)
    assert "scipy.special.jv is not supported" in msg and "test_special.py" in msg
    assert "scipy.special.erf" in msg          # the hint lists what compiles
    with pytest.raises(compiler.errors.UnsupportedError, match="scipy.special.polygamma: the order"):
        compiler.jit(lambda n, v: sp.polygamma(n, v))(np.int64(1), np.ones(3))


@needs_scipy
def test_static_arguments_are_computed_by_scipy():
    f = compiler.jit(lambda v: v + sp.gammaln(3.0) + sp.jv(1, 2.0))
    np.testing.assert_allclose(f(np.zeros(2)), np.log(2.0) + sp.jv(1, 2.0), rtol=1e-15)


def test_compiling_does_not_import_scipy(tmp_path):
    """The frontend looks scipy.special up in sys.modules; it never imports it."""
    script = tmp_path / "no_scipy.py"
    script.write_text("import sys, numpy as np, compiler\n"
                      "f = compiler.jit(lambda x: np.sinc(x) + np.i0(x) + np.copysign(x, -1.0))\n"
                      "f(np.ones(2))\n"
                      "assert 'scipy' not in sys.modules, 'scipy was imported'\n")
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, str(script)], check=True, cwd=root, timeout=120,
                   env={**os.environ, "PYTHONPATH": str(root)})


def _rel_entr(x, y):
    return sp.rel_entr(x, y)


_rel_entr_k = compiler.jit(_rel_entr)


@pytest.mark.skipif(sp is None, reason="scipy is not installed")
def test_rel_entr_keeps_its_digits_near_x_equal_y():
    """x log(x / y) with x close to y: log1p((x - y) / y), within 4 ULP of mpmath."""
    y = np.geomspace(1e-3, 1e3, 64)
    x = y * (1 + np.concatenate([np.geomspace(1e-12, 0.4, 32), -np.geomspace(1e-12, 0.4, 32)]))
    got = _rel_entr_k(x, y)
    mp.mp.dps = 40
    want = np.array([float(mp.mpf(a) * mp.log(mp.mpf(a) / mp.mpf(c))) for a, c in zip(x, y)])
    ulp = np.abs(got - want) / np.spacing(np.abs(want))
    assert ulp.max() <= 4, ulp.max()
