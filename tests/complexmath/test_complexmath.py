"""The complex decompositions of compiler/primitives/complexmath.py, compiled through the
real backend as kernels of real arrays (re, im), against NumPy's complex ufuncs (special
values, branch cuts, random grids) and mpmath (accuracy bounds). One kernel per dtype and
family, shared by the tests."""
from __future__ import annotations

import functools
import re

import mpmath
import numpy as np
import pytest

from tests.complexmath import harness as H

UNARY = sorted(H.UNARY)
# the float32 kernels: every function whose float64 code differs from its float32 path only
# by the widening (the arithmetic loops stay in float32 and are tested separately)
UNARY_F32 = ["exp", "log", "log10", "log1p", "expm1", "sqrt", "sin", "tanh", "arcsin", "arccos",
             "arccosh", "arctan", "sign", "absolute", "angle", "square", "reciprocal"]


@functools.lru_cache(maxsize=None)
def unary(dtype: str, names: tuple[str, ...]) -> H.Compiled:
    return H.Compiled(names, dtype)


#: functions per kernel: LLVM's time grows faster than one loop body (the 30 float64 functions
#: compiled as one kernel: 19.4 s of CPU; as four kernels of at most 8: 15.2 s)
CHUNK = 8


def unary_of(dtype: str, name: str) -> H.Compiled:
    """The shared kernel (of `dtype`) that computes `name`, with the CHUNK functions around it."""
    names = UNARY if dtype == "float64" else UNARY_F32
    start = names.index(name) // CHUNK * CHUNK
    return unary(dtype, tuple(names[start:start + CHUNK]))


@functools.lru_cache(maxsize=None)
def binary(dtype: str) -> H.Compiled:
    return H.Compiled(sorted(H.BINARY), dtype, binary=True)


def _mismatch(got: np.ndarray, ref: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """Per element: nan where NumPy has no nan (or the reverse), a different infinity or
    signed zero, or a finite value farther than rtol*|ref| + atol."""
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    gn, rn = np.isnan(got), np.isnan(ref)
    with np.errstate(all="ignore"):
        exact = (got == ref) & (np.signbit(got) == np.signbit(ref))
        close = np.isfinite(ref) & (ref != 0) & (np.abs(got - ref) <= rtol * np.abs(ref) + atol)
        tiny_zero = (ref == 0) & (np.abs(got) <= atol) & (np.signbit(got) == np.signbit(ref))
    return (gn != rn) | (~gn & ~rn & ~(exact | close | tiny_zero))


def _assert_parts(z: np.ndarray, got: np.ndarray, ref: np.ndarray, rtol: float, atol: float,
                  what: str) -> None:
    if np.iscomplexobj(ref):
        bad = _mismatch(got.real, ref.real, rtol, atol) | _mismatch(got.imag, ref.imag, rtol, atol)
    else:
        bad = _mismatch(got, ref, rtol, atol)
    if bad.any():
        rows = "\n".join(f"  z={z[i]!r}: got {got[i]!r}, NumPy {ref[i]!r}" for i in np.flatnonzero(bad)[:10])
        pytest.fail(f"{what}: {int(bad.sum())} of {bad.size} differ\n{rows}")


def _numpy(name: str, z: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return H.NUMPY_UNARY[name](z)


# ---- special values and branch cuts, float64 ------------------------------------------

@pytest.mark.parametrize("name", UNARY)
def test_special_values_float64(name):
    z = H.special_values(np.float64)
    got = unary_of("float64", name)(z)[name]
    ref = _numpy(name, z)
    if name == "square":
        # NumPy's SIMD loop fuses a multiply-add (an overflowing x*x - y*y can be -inf where
        # the rounded formula is nan): the oracle is the formula in NumPy's real arithmetic
        with np.errstate(all="ignore"):
            ref = (z.real * z.real - z.imag * z.imag) + 1j * (z.real * z.imag + z.imag * z.real)
            ref.real, ref.imag = z.real * z.real - z.imag * z.imag, z.real * z.imag + z.imag * z.real
    if name == "log1p":
        # NumPy's log(hypot(1 + x, y)) is 0 for tiny z; log1p(z) = z + O(z^2) is the oracle there
        small = np.abs(z) < 1e-20
        np.testing.assert_array_equal(got[small], z[small])
        z, got, ref = z[~small], got[~small], ref[~small]
    # atol: results in the subnormal range may differ in their last subnormal bit
    _assert_parts(z, got, ref, rtol=_rtol(name, z), atol=4 * 5e-324, what=f"np.{name}")


def _rtol(name: str, z: np.ndarray):
    """NumPy's exp2 rounds its phase y log 2 (an error of |y| 2^-53 radians); ours does not."""
    if name == "exp2":
        return 1e-13 + np.abs(np.nan_to_num(z.imag)) * 2.0 ** -51
    return 1e-13


def _cut_points() -> np.ndarray:
    """Both sides of every branch cut (the sign of the zero picks the side), and points a
    hair off the cut."""
    r = np.array([-1e10, -3.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 3.0, 1e10, 1 + 1e-12, 1 - 1e-12])
    zs = []
    for v in r:
        for eps in (0.0, -0.0, 1e-300, -1e-300, 1e-9, -1e-9):
            zs += [complex(v, eps), complex(eps, v)]
    return np.array(zs)


@pytest.mark.parametrize("name", ["sqrt", "log", "log2", "log10", "log1p", "arcsin", "arccos", "arctan",
                                  "arcsinh", "arccosh", "arctanh", "angle"])
def test_branch_cuts_float64(name):
    z = _cut_points()
    if name == "log1p":
        z = z[np.abs(z) > 1e-8]                  # NumPy cancels there (mpmath tests those)
    got = unary_of("float64", name)(z)[name]
    _assert_parts(z, got, _numpy(name, z), rtol=1e-12, atol=1e-300, what=f"np.{name} on its cuts")


# ---- random grids, float64 --------------------------------------------------------------

def _random_points(n: int, seed: int) -> np.ndarray:
    """Uniform in [-10, 10]^2, log-uniform magnitudes 1e-300..1e300 at uniform angles, and
    points near |z| = 1, near +-1 and +-i, and near the real and imaginary axes."""
    rng = np.random.default_rng(seed)
    box = rng.uniform(-10, 10, n) + 1j * rng.uniform(-10, 10, n)
    mag = 10.0 ** rng.uniform(-300, 300, n) * np.exp(1j * rng.uniform(-np.pi, np.pi, n))
    circle = (1 + rng.normal(0, 1e-6, n)) * np.exp(1j * rng.uniform(-np.pi, np.pi, n))
    corners = rng.choice([1, -1, 1j, -1j], n) + rng.normal(0, 1e-5, n) + 1j * rng.normal(0, 1e-5, n)
    axes = rng.uniform(-5, 5, n) + 1j * (10.0 ** rng.uniform(-300, -5, n)) * rng.choice([-1, 1], n)
    return np.concatenate([box, mag, circle, corners, axes, axes.imag + 1j * axes.real])


# NumPy's own formulas for these lose accuracy where they cancel, so their oracle is mpmath
# (test_accuracy_bounds and test_log1p_expm1_small_arguments_are_accurate below).
_NUMPY_CANCELS = {"log1p", "expm1"}


@pytest.mark.parametrize("name", [n for n in UNARY if n not in _NUMPY_CANCELS])
def test_random_float64(name):
    z = _random_points(4000, seed=1)
    got = unary_of("float64", name)(z)[name]
    ref = _numpy(name, z)
    if ref.dtype == bool:
        np.testing.assert_array_equal(got, ref)
        return
    fin = np.isfinite(ref) & np.isfinite(got)
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(ref))
    err = np.abs(got[fin] - ref[fin]) / np.maximum(np.abs(ref[fin]), 1e-300)
    if name == "exp2":
        err = err / (1 + np.abs(z[fin].imag) * 2.0 ** -51 / 1e-14)
    worst = int(np.argmax(err))
    assert err.max() <= 1e-14, f"np.{name}: relative error {err.max():.3g} at z={z[fin][worst]!r}"


# ---- accuracy against mpmath --------------------------------------------------------------

_MP = {
    "exp": mpmath.exp, "expm1": mpmath.expm1, "log": mpmath.log, "log1p": mpmath.log1p,
    "log2": lambda z: mpmath.log(z, 2), "log10": mpmath.log10, "sqrt": mpmath.sqrt,
    "sin": mpmath.sin, "cos": mpmath.cos, "tan": mpmath.tan, "sinh": mpmath.sinh,
    "cosh": mpmath.cosh, "tanh": mpmath.tanh, "arcsin": mpmath.asin, "arccos": mpmath.acos,
    "arctan": mpmath.atan, "arcsinh": mpmath.asinh, "arccosh": mpmath.acosh,
    "arctanh": mpmath.atanh, "exp2": lambda z: mpmath.power(2, z),
}


def mp_reference(name: str, z: np.ndarray) -> np.ndarray:
    """`name` of each point in 100-bit arithmetic, rounded to complex128 (points off the
    branch cuts, where mpmath's and C99's sides agree)."""
    out = np.empty(z.shape, np.complex128)
    for i, v in enumerate(z):
        parts = [abs(p) for p in (v.real, v.imag) if p != 0 and np.isfinite(p)] or [1.0]
        # enough bits for the smaller part relative to the larger one (mpmath's precision is absolute)
        prec = 120 + int(max(abs(np.log2(p)) for p in parts)) * 2
        with mpmath.workprec(min(prec, 5000)):
            w = _MP[name](mpmath.mpc(float(v.real), float(v.imag)))
            out[i] = complex(float(w.real), float(w.imag))
    return out


def normwise_ulp(got: np.ndarray, exact: np.ndarray, dtype) -> np.ndarray:
    """|got - exact| in units of the last place of |exact| in `dtype`."""
    mag = np.abs(exact).astype(np.float64)
    ulp = np.spacing(mag.astype(dtype)).astype(np.float64)
    return np.abs(got.astype(np.complex128) - exact) / ulp


# bound per function in normwise ULP (measured maxima are in docs/vecmath.md)
_BOUND = {"expm1": 4.0, "tan": 4.0, "tanh": 4.0, "arccos": 4.0}


@pytest.mark.parametrize("name", sorted(_MP))
def test_accuracy_bounds(name):
    rng = np.random.default_rng(7)
    z = np.concatenate([_random_points(40, seed=3),
                        rng.uniform(-1e-8, 1e-8, 20) + 1j * rng.uniform(-1e-8, 1e-8, 20)])
    z = z[np.abs(z) < 1e300]
    if name in ("exp", "exp2", "expm1", "sin", "cos", "sinh", "cosh", "tan", "tanh"):
        z = z[np.abs(z) < 700]
    got = unary_of("float64", name)(z)[name]
    exact = mp_reference(name, z)
    fin = np.isfinite(exact) & (np.abs(exact) > 1e-290) & (np.abs(exact) < 1e300)
    err = normwise_ulp(got[fin], exact[fin], np.float64)
    worst = int(np.argmax(err))
    assert err.max() <= _BOUND.get(name, 3.0), f"{name}: {err.max():.2f} ulp at z={z[fin][worst]!r}"


def test_log1p_expm1_small_arguments_are_accurate():
    """Where NumPy's log1p/expm1 formulas cancel (|z| << 1), the decompositions stay accurate."""
    rng = np.random.default_rng(5)
    z = 10.0 ** rng.uniform(-30, -1, 200) * np.exp(1j * rng.uniform(-np.pi, np.pi, 200))
    for name in ("log1p", "expm1"):
        err = normwise_ulp(unary_of("float64", name)(z)[name], mp_reference(name, z), np.float64)
        assert err.max() <= 4.0, (name, err.max())


# ---- complex64: float32 in and out, no overflow where the exact result is finite --------

@pytest.mark.parametrize("name", UNARY_F32)
def test_float32(name):
    z = np.concatenate([H.special_values(np.float32), _random_points(500, seed=2).astype(np.complex64),
                        np.array([88.7 + 1.5j, 89 + 1.56j, -89 + 3j, 3e38 + 3e38j, -3e38 + 1e38j,
                                  1e-38 + 1e-38j, 1 + 1e-7j], np.complex64)])
    got = unary_of("float32", name)(z)[name]
    assert got.dtype in (np.complex64, np.float32, np.bool_)
    if name == "square":
        # NumPy's SIMD loop fuses a multiply-add: the oracle is the formula in float32 arithmetic
        with np.errstate(all="ignore"):
            ref = np.empty_like(z)
            ref.real, ref.imag = z.real * z.real - z.imag * z.imag, z.real * z.imag + z.imag * z.real
    elif name == "reciprocal":
        ref = _numpy(name, z)                                # NumPy's complex64 loop
    else:
        ref = _numpy(name, z.astype(np.complex128))          # the exact result, rounded once
        ref = ref.astype(got.dtype) if ref.dtype != bool else ref
    if name == "log1p":
        keep = np.abs(z) > 1e-6                             # NumPy cancels there (see above)
        z, got, ref = z[keep], got[keep], ref[keep]
    fin = np.isfinite(z)
    _assert_parts(z[fin], got[fin], ref[fin], rtol=3e-7, atol=4 * 1.4e-45, what=f"np.{name} complex64")
    _assert_parts(z[~fin], got[~fin], ref[~fin], rtol=3e-7, atol=4 * 1.4e-45, what=f"np.{name} complex64")


# ---- arithmetic and power --------------------------------------------------------------

def _pairs(dtype) -> tuple[np.ndarray, np.ndarray]:
    z = H.special_values(dtype)
    a, b = np.meshgrid(z, z)
    rng = np.random.default_rng(4)
    ra = (rng.normal(size=2000) + 1j * rng.normal(size=2000)) * 10.0 ** rng.uniform(-5, 5, 2000)
    rb = (rng.normal(size=2000) + 1j * rng.normal(size=2000)) * 10.0 ** rng.uniform(-5, 5, 2000)
    return np.concatenate([a.ravel(), ra.astype(a.dtype)]), np.concatenate([b.ravel(), rb.astype(a.dtype)])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_multiply_is_numpys_formula(dtype):
    """(ar*br - ai*bi, ar*bi + ai*br) in the operands' dtype, as NumPy's loop (whose SIMD
    version fuses one multiply-add on FMA machines: compared normwise below)."""
    a, b = _pairs(dtype)
    got = binary(dtype)(a, b)["multiply"]
    with np.errstate(all="ignore"):
        re = a.real * b.real - a.imag * b.imag
        im = a.real * b.imag + a.imag * b.real
        np.testing.assert_array_equal(got.real, re)
        np.testing.assert_array_equal(got.imag, im)
        ref = a * b
    ok = np.isfinite(ref) & (np.abs(ref) > 1e-30) & (np.abs(ref) < 1e30)
    tol = 1e-15 if dtype == "float64" else 1e-6
    scale = np.abs(a[ok]) * np.abs(b[ok])
    assert np.all(np.abs(got[ok] - ref[ok]) <= tol * scale)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", ["divide", "add", "subtract"])
def test_divide_add_subtract_are_numpys(dtype, name):
    a, b = _pairs(dtype)
    got = binary(dtype)(a, b)[name]
    with np.errstate(all="ignore"):
        ref = H.NUMPY_BINARY[name](a, b)
    _assert_parts(a, got, ref, rtol=0, atol=0, what=f"np.{name}")


def test_power_float64():
    z = H.special_values(np.float64)
    exps = np.array([0, -0.0, 1, 2, 3, 4, 5, -1, -2, -3, 7, 99, -99, 100, 0.5, -0.5, 2.5, 1j, 1 + 1j,
                     0.5 - 2j, np.inf, np.nan, complex(0, np.nan), 1e-20 + 0j, 1e300])
    a, b = np.meshgrid(z, exps)
    a, b = a.ravel(), b.ravel()
    got = binary("float64")(a, b)["power"]
    with np.errstate(all="ignore"):
        ref = a ** b
    # exp(b log a) amplifies the rounding of b*log a: allow |b log a| * 2^-50, and let results
    # within 1e-10 of the overflow threshold overflow or not
    with np.errstate(all="ignore"):
        amp = np.abs(b * np.log(np.where(a == 0, 1, a)))
    amp = np.where(np.isfinite(amp), amp, 0)
    keep = ~(np.abs(ref) > 1e300)
    bad = (_mismatch(got.real, ref.real, 1e-13, 1e-300) | _mismatch(got.imag, ref.imag, 1e-13, 1e-300))
    rel = np.abs(got - ref) / np.maximum(np.abs(ref), 1e-300)
    bad &= ~(np.isfinite(ref) & np.isfinite(got) & (rel <= 1e-14 + amp * 2.0 ** -48))
    bad &= keep
    assert not bad.any(), [(a[i], b[i], got[i], ref[i]) for i in np.flatnonzero(bad)[:8]]


@functools.lru_cache(maxsize=None)
def scalar_powers() -> tuple[list, H.Compiled]:
    powers = [2, 3, 4, -1, -2, 5, -7, 0.5, 2.5, 1 + 1j, 0, 1]
    names = [f"p{i}" for i in range(len(powers))]
    return powers, H.Compiled(names, "float64", powers=powers)


def test_power_by_a_constant():
    """z ** p for a Python number p: NumPy's loop for that exponent; ** 0.5 is sqrt."""
    powers, k = scalar_powers()
    z = np.concatenate([H.special_values(np.float64), _random_points(300, seed=6)])
    out = k(z)
    for i, p in enumerate(powers):
        got = out[f"p{i}"]
        with np.errstate(all="ignore"):
            ref = np.sqrt(z) if p == 0.5 else z ** p
            amp = np.abs(p * np.log(np.where(z == 0, 1, z)))
        rel = np.abs(got - ref) / np.maximum(np.abs(ref), 1e-300)
        bad = _mismatch(got.real, ref.real, 1e-13, 1e-300) | _mismatch(got.imag, ref.imag, 1e-13, 1e-300)
        bad &= ~(np.isfinite(ref) & np.isfinite(got) & (rel <= 1e-14 + np.nan_to_num(amp) * 2.0 ** -48))
        bad &= ~(np.abs(ref) > 1e300)
        assert not bad.any(), (p, [(z[j], got[j], ref[j]) for j in np.flatnonzero(bad)[:6]])


# ---- the loops are vectorized ------------------------------------------------------------

@pytest.mark.parametrize("name", ["exp", "log"])
def test_kernels_vectorize(name):
    art = unary("float64", (name,)).art
    llvm = art.llvm_optimized
    assert re.search(r"<(4|8) x double>", llvm), "no vector code"
    calls = set(re.findall(r"call [^@]*@([\w.]+)\(<", llvm))       # calls taking vector operands
    scalar_math = {c for c in calls if c.startswith("aotx_vm_") and not re.search(r"_v(2|4|8)$", c)}
    assert not scalar_math, scalar_math
    if name == "exp":
        assert any(re.search(r"aotx_vm_(sin|cos)_f64_v(4|8)$", c) for c in calls), calls


# ---- derivatives through the decompositions --------------------------------------------

_DERIVATIVE = {       # f'(z) in NumPy, the oracle for jvp and vjp of the real-pair decompositions
    "exp": np.exp, "exp2": lambda z: np.log(2) * np.exp2(z), "expm1": np.exp,
    "log": lambda z: 1 / z, "log2": lambda z: 1 / (z * np.log(2)), "log10": lambda z: 1 / (z * np.log(10)),
    "log1p": lambda z: 1 / (1 + z), "sqrt": lambda z: 0.5 / np.sqrt(z),
    "sin": np.cos, "cos": lambda z: -np.sin(z), "tan": lambda z: 1 / np.cos(z) ** 2,
    "sinh": np.cosh, "cosh": np.sinh, "tanh": lambda z: 1 / np.cosh(z) ** 2,
    "arcsin": lambda z: 1 / np.sqrt(1 - z * z), "arccos": lambda z: -1 / np.sqrt(1 - z * z),
    "arctan": lambda z: 1 / (1 + z * z), "arcsinh": lambda z: 1 / np.sqrt(1 + z * z),
    "arccosh": lambda z: 1 / (np.sqrt(z - 1) * np.sqrt(z + 1)), "arctanh": lambda z: 1 / (1 - z * z),
    "square": lambda z: 2 * z, "reciprocal": lambda z: -1 / (z * z),
}


#: one function of each kind of code path (the others share them): plain formulas, scaled
#: exp, Smith's division, the log near |z| = 1, Kahan's tanh, asin through sqrt(1 +- z),
#: atanh with its symmetric reduction, the double-double log1p
_AD_NAMES = ("exp", "log", "sqrt", "tanh", "arcsin", "arctan", "log1p", "reciprocal")


@functools.lru_cache(maxsize=None)
def _derivative_kernels(name: str):
    """jvp and vjp kernels of the decomposition of `name`, a function of (re, im). One kernel
    per function: one kernel of all of them took 1.6 times as long to compile as these together
    (30.7 against 19.5 s of CPU; its loop body, every function's derivative with the vector math
    inlined, is one long block), and the cases now share the work out between test workers."""
    from compiler.ir.builder import Builder, new_block
    from compiler.ir.core import Function, SourceLoc
    from compiler.ir.types import parse_type
    from tests.ops import internal as I
    block = new_block([parse_type("f64[n]")] * 2)
    b = Builder(block, SourceLoc(__file__, 1))
    block.results = list(H.UNARY[name](b, block.args[0], block.args[1]))
    fn = Function(f"d_{name}", block)
    active = [True, True]
    return (I.compile_function(I.jvp_function(fn, active)),
            I.compile_function(I.vjp_function(fn, active)))


def _ad_points(name: str) -> np.ndarray:
    rng = np.random.default_rng(11)
    z = np.concatenate([rng.uniform(-3, 3, 40) + 1j * rng.uniform(-3, 3, 40),
                        rng.uniform(-0.9, 0.9, 6) + 0j, 1j * rng.uniform(-0.9, 0.9, 6),
                        [6 + 0.5j, -5 + 2j, 3e5 - 4e5j, 1e-3 + 2e-3j, 0j]])
    if name in ("log", "reciprocal"):
        z[-1] = 1 + 1j                                   # a pole or singularity at 0
    if name in ("sqrt", "log", "arccosh"):
        z = np.where(z.imag == 0, z + 0.25j, z)           # their cuts lie on the real axis
    if name in ("exp", "sin", "tanh"):
        z = np.where(np.abs(z) > 100, 1 - 2j, z)
    return z


@pytest.mark.parametrize("name", _AD_NAMES)
def test_derivatives_through_the_decomposition(name):
    """jvp and vjp of the (re, im) decomposition give the complex derivative f'(z) (the
    Cauchy-Riemann form: d/dx = f', d/dy = i f', grad of Re f = conj f'), off the branch cuts,
    including points on the axes, at 0 and where the special-case branches are not taken.
    (Where a decomposition replaces f by a constant, e.g. tanh = +-1 for |x| >= 22, its
    derivative is 0 instead of the tiny f', and close to there f' loses relative accuracy.)"""
    jvp, vjp = _derivative_kernels(name)
    z = _ad_points(name)
    parts = (z.real.copy(), z.imag.copy())
    ones, zeros = np.ones(z.size), np.zeros(z.size)
    with np.errstate(all="ignore"):
        want = _DERIVATIVE[name](z)
    tx = jvp(*parts, ones, zeros)
    ty = jvp(*parts, zeros, ones)
    g = vjp(*parts, ones, zeros)                          # gradient of Re f
    dx = tx[2] + 1j * tx[3]
    dy = (ty[2] + 1j * ty[3]) / 1j
    gr = g[2] - 1j * g[3]
    scale = np.maximum(np.abs(want), 1e-30)
    for what, got in (("d/dx", dx), ("d/dy / i", dy), ("conj grad Re f", gr)):
        err = np.abs(got - want) / scale
        worst = int(np.argmax(np.nan_to_num(err, nan=np.inf)))
        assert np.all(err < 1e-9), f"{name} {what} at z={z[worst]!r}: {got[worst]!r} vs {want[worst]!r}"
