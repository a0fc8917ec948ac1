"""Accuracy, special values and vectorization of compiler.backend.vecmath.

Every function is compiled (once per session) into the loop kernel the backend emits and
evaluated on >= 1e6 points per dtype: log-spaced magnitudes over the whole domain with both
signs, a dense uniform sweep of the interesting range, and edge values (+-0, +-inf, nan,
subnormals, largest finite, overflow/underflow thresholds, multiples of pi/2). The maximum
ULP error against a high-precision reference (x87 long double for float64, float64 for
float32) must stay within NumPy's own tolerances (docs/vecmath.md); special values (nan,
signed zeros, infinities) must match NumPy exactly or be the correctly rounded result
(mpmath), since NumPy's own answer at the edges depends on the host's SIMD width.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from compiler.backend import target
from tests.backend import vecmath_harness as H

N = 1_000_000
F64, F32 = "float64", "float32"
# NumPy's tolerances (numpy/_core/tests/test_umath_accuracy.py data); float64 pow and hypot
# are allowed 2 ULP by our contract, everything measured is below 1 ULP (docs/vecmath.md).
TOL = {
    "exp": (1, 3), "exp2": (1, 2), "expm1": (1, 3), "log": (1, 4), "log2": (1, 3),
    "log10": (1, 4), "log1p": (1, 2), "sin": (1, 2), "cos": (1, 2), "tan": (1, 4),
    "arcsin": (1, 4), "arccos": (1, 3), "arctan": (1, 3), "arctan2": (1, 3), "sinh": (1, 2),
    "cosh": (1, 3), "tanh": (2, 2), "pow": (2, 2), "hypot": (2, 2), "cbrt": (2, 2),
    "arcsinh": (1, 2), "arccosh": (1, 2), "arctanh": (1, 2),
}
UNARY = sorted(n for n in TOL if n not in H.NARGS)
BINARY = sorted(H.NARGS)
# dense sweep of the range where each function is interesting
RANGE = {
    "exp": (-760, 720), "exp2": (-1100, 1030), "expm1": (-40, 720), "log": (0, 4),
    "log2": (0, 4), "log10": (0, 4), "log1p": (-1, 4), "sin": (-100, 100),
    "cos": (-100, 100), "tan": (-100, 100), "arcsin": (-1, 1), "arccos": (-1, 1),
    "arctan": (-8, 8), "sinh": (-720, 720), "cosh": (-720, 720), "tanh": (-25, 25),
    "cbrt": (-10, 10), "arccosh": (1, 4), "arctanh": (-1, 1),
}
RANGE32 = {"exp": (-110, 95), "exp2": (-155, 130), "expm1": (-20, 95), "sinh": (-95, 95),
           "cosh": (-95, 95), "tanh": (-12, 12)}


def _edges(dtype) -> np.ndarray:
    fi = np.finfo(dtype)
    tiny = np.array([fi.smallest_subnormal, fi.tiny, fi.max, fi.eps, 1.0, 0.5, 2.0,
                     np.pi, np.pi / 2, np.pi / 4, 709.782712893384, 709.7827128933841,
                     710.4758600739439, 710.475860073944, 745.1332191019411,
                     745.1332191019412, 88.72283, 88.72284, 89.41599, 89.416,
                     103.97208, 103.97209, 1022.0, 1023.0, 1024.0, 1074.0, 1075.0,
                     126.0, 127.0, 128.0, 149.0, 150.0, 22.0, 1e22, 1e300, 3.4e38],
                    dtype=np.float64)
    vals = np.concatenate([tiny, -tiny, [0.0, -0.0, np.inf, -np.inf, np.nan]])
    with np.errstate(over="ignore"):
        return vals.astype(dtype)


def _pio2_multiples(dtype, n: int) -> np.ndarray:
    k = np.concatenate([np.arange(1, n // 2), np.unique(np.geomspace(1, 1e15, n // 2).round())])
    return (k.astype(np.longdouble) * np.longdouble(np.pi) / 2).astype(dtype)


def unary_points(name: str, dtype) -> np.ndarray:
    fi = np.finfo(dtype)
    lo_e, hi_e = np.log2(float(fi.smallest_subnormal)), np.log2(float(fi.max))
    lo, hi = (RANGE32 if dtype == F32 else {}).get(name, RANGE.get(name, (-10, 10)))
    parts = [H.log_spaced(dtype, N // 2, lo_e, hi_e - 1e-9),
             H.uniform(dtype, N // 2, lo, hi), _edges(dtype)]
    if name in ("sin", "cos", "tan"):
        parts.append(_pio2_multiples(dtype, 20_000))
    if name in ("arccosh", "arctanh"):
        parts.append(_near_one(dtype, 20_000))
    return np.concatenate(parts)


def _near_one(dtype, n: int) -> np.ndarray:
    """1 + k eps and 1 - k eps/2 (k < n/4, both signs) and 1 +- 2^-j: where arccosh and
    arctanh are ill-conditioned and their arguments must be formed exactly."""
    one, eps = np.ones((), dtype), np.finfo(dtype).eps
    k = np.arange(1, n // 4, dtype=dtype)
    steps = np.exp2(-np.arange(1, np.finfo(dtype).nmant + 1, dtype=dtype))
    near = np.concatenate([one + k * eps, one - k * (eps / 2), one + steps, one - steps])
    return np.concatenate([near, -near]).astype(dtype)


def binary_points(name: str, dtype) -> tuple[np.ndarray, np.ndarray]:
    fi = np.finfo(dtype)
    lo_e, hi_e = np.log2(float(fi.smallest_subnormal)), np.log2(float(fi.max))
    if name == "pow":
        x = np.concatenate([H.log_spaced(dtype, N // 2, lo_e, hi_e - 1e-9, signs=False),
                            H.uniform(dtype, N // 2, 0, 4, seed=3)])
        y = np.concatenate([H.log_spaced(dtype, N // 2, -10, 4, seed=4),
                            H.uniform(dtype, N // 2, -60, 60, seed=5)])
        # negative bases with integer exponents
        xi = H.uniform(dtype, 10_000, -3, 0, seed=6)
        yi = np.round(H.uniform(dtype, 10_000, -40, 40, seed=7))
        return np.concatenate([x, xi]), np.concatenate([y, yi])
    x = np.concatenate([H.log_spaced(dtype, N // 2, lo_e, hi_e - 1e-9),
                        H.uniform(dtype, N // 2, -4, 4, seed=3)])
    y = np.concatenate([H.log_spaced(dtype, N // 2, lo_e, hi_e - 1e-9, seed=8),
                        H.uniform(dtype, N // 2, -4, 4, seed=9)])
    return x, y


def _special_grid(dtype) -> tuple[np.ndarray, np.ndarray]:
    e = _edges(dtype)
    e = np.concatenate([e, np.array([3.0, -3.0, 0.25, -2.0, -0.5, 1.5], dtype=dtype)])
    return np.repeat(e, e.size), np.tile(e, e.size)


def _same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Equal values with equal signs of zero, or both nan."""
    return ((a == b) & (np.signbit(a) == np.signbit(b))) | (np.isnan(a) & np.isnan(b))


def _check_special(name: str, got: np.ndarray, want: np.ndarray, args) -> None:
    """Where NumPy's result or ours is special (nan, an infinity, a zero), ours must be NumPy's
    bit for bit, or the correctly rounded one (mpmath): NumPy's SIMD loops differ between
    hosts at the edges (its AVX-512 float32 exp2 flushes 2**-149.5 to 0, its AVX2 loop gives
    the correctly rounded smallest subnormal), and a correctly rounded answer is never wrong."""
    special = ~np.isfinite(want) | (want == 0) | ~np.isfinite(got) | (got == 0)
    suspects = np.flatnonzero(special & ~_same_bits(got, want))
    bad = []
    for i in suspects:
        point = tuple(a[i] for a in args)
        exact = H.correctly_rounded(name, point, got.dtype)
        if exact is None or not _same_bits(got[i], np.array(exact, got.dtype)):
            bad.append((point, got[i], want[i], exact))
    if bad:
        raise AssertionError(f"{name}: {len(bad)} special values differ from NumPy and from the "
                             f"correctly rounded result (point, got, numpy, exact): {bad[:5]}")


def _max_ulp(name: str, got: np.ndarray, *args) -> tuple[float, tuple]:
    err = H.ulp_error(got, H.reference(name, *args))
    i = int(np.argmax(err))
    return float(err[i]), tuple(a[i] for a in args)


@pytest.mark.parametrize("dtype", [F64, F32])
@pytest.mark.parametrize("name", UNARY)
def test_unary_accuracy(name: str, dtype: str) -> None:
    x = unary_points(name, dtype)
    assert x.size >= N
    got = H.compile_kernel(name, dtype)(x)
    err, where = _max_ulp(name, got, x)
    tol = TOL[name][dtype == F32]
    assert err <= tol, f"{name}[{dtype}] max error {err:.3f} ULP at x={where}"
    with np.errstate(all="ignore"):
        _check_special(name, got, H._REF[name](x), (x,))


@pytest.mark.parametrize("dtype", [F64, F32])
@pytest.mark.parametrize("name", BINARY)
def test_binary_accuracy(name: str, dtype: str) -> None:
    x, y = binary_points(name, dtype)
    assert x.size >= N
    kernel = H.compile_kernel(name, dtype)
    got = kernel(x, y)
    err, where = _max_ulp(name, got, x, y)
    tol = TOL[name][dtype == F32]
    assert err <= tol, f"{name}[{dtype}] max error {err:.3f} ULP at (x, y)={where}"
    sx, sy = _special_grid(dtype)
    with np.errstate(all="ignore"):
        _check_special(name, kernel(sx, sy), H._REF[name](sx, sy), (sx, sy))


@pytest.mark.parametrize("dtype", [F64, F32])
@pytest.mark.parametrize("name", UNARY + BINARY)
@pytest.mark.parametrize("variant", [
    # fastmath variants keep the default bound (they currently share its algorithms)
    pytest.param({"fastmath": True}, id="fastmath"),
    # the has_fma=False code path (for SSE2-only targets) meets the same bounds
    pytest.param({"has_fma": False}, id="no-fma"),
])
def test_variant_within_bound(name: str, dtype: str, variant: dict) -> None:
    kernel = H.compile_kernel(name, dtype, **variant)
    if name in H.NARGS:
        x, y = (a[::10] for a in binary_points(name, dtype))
        err, where = _max_ulp(name, kernel(x, y), x, y)
    else:
        x = unary_points(name, dtype)[::10]
        err, where = _max_ulp(name, kernel(x), x)
    assert err <= TOL[name][dtype == F32], f"{name}[{dtype}, {variant}] {err:.3f} ULP at {where}"


def test_overflow_thresholds_exact() -> None:
    exp64 = H.compile_kernel("exp", F64)
    assert np.isfinite(exp64(np.array([709.782712893384]))[0])
    assert np.isinf(exp64(np.array([709.7827128933841]))[0])
    assert exp64(np.array([-745.1332191019411]))[0] == np.finfo(F64).smallest_subnormal
    assert exp64(np.array([-745.2]))[0] == 0.0
    sub = exp64(np.array([-740.0]))[0]
    assert 0 < sub < np.finfo(F64).tiny  # gradual underflow
    exp32 = H.compile_kernel("exp", F32)
    assert np.isfinite(exp32(np.array([88.72283], F32))[0])
    assert np.isinf(exp32(np.array([88.72284], F32))[0])


def test_huge_trig_arguments() -> None:
    x = np.array([1e22, 1e300, -1e300, 1.7976931348623157e308, 6381956970095103 * 2.0 ** 797])
    for name in ("sin", "cos", "tan"):
        err, where = _max_ulp(name, H.compile_kernel(name, F64)(x), x)
        assert err <= 1, f"{name} huge argument {where}: {err} ULP"
    x32 = np.array([3.4e38, -3.4e38, 1e30, 16367173 * 2.0 ** 72], dtype=F32)
    for name in ("sin", "cos", "tan"):
        err, where = _max_ulp(name, H.compile_kernel(name, F32)(x32), x32)
        assert err <= 1, f"{name} float32 huge argument {where}: {err} ULP"


def _function(asm: str, symbol: str) -> str:
    """The assembly of one function (from its label to its .Lfunc_end marker)."""
    start = asm.index(f"\n{symbol}:")
    return asm[start:asm.find(".Lfunc_end", start)]


def _calls(code: str) -> list[str]:
    """The functions `code` calls: named directly (``call f``) or, in the large code model the
    objects are compiled in, through a register holding an address loaded by name
    (``movabsq $f@GOTOFF, %rbx`` ... ``call *%rbx``): then every function whose address the
    code loads counts as called."""
    direct = [c for c in re.findall(r"call\w*\s+(\S+)", code) if not c.startswith("*")]
    if not re.search(r"call\w*\s+\*", code):
        return direct
    loaded = re.findall(r"movabsq\s+\$([A-Za-z_][\w.]*)(?:@\w+)?,", code)
    return direct + [f for f in loaded if not f.startswith("_GLOBAL_OFFSET_TABLE_")]


@pytest.mark.parametrize("name", ["exp", "sin", "arcsinh"])
def test_float64_kernels_vectorize(name: str) -> None:
    """exp and arcsinh are inlined into the loop; sin's loop calls its explicit vector variant. Either
    way the arithmetic is packed double on the host's widest registers, without libm."""
    reg = {512: "zmm", 256: "ymm", 128: "xmm"}[target.host().vector_bits]
    asm = H.compile_kernel(name, F64).asm
    loop = _function(asm, "kernel")
    calls = _calls(loop)
    libm = [c for c in calls if not c.startswith("aotx_vm_")]
    assert not libm, f"calls outside vecmath in the loop: {libm}"
    if name != "sin":
        assert not calls, f"{name} must be fully inlined, found calls {calls}"
        arithmetic = loop
    else:
        variants = sorted({c for c in calls if re.search(r"_v\d+$", c)})
        assert variants, "sin loop does not call a vector variant"
        arithmetic = "".join(_function(asm, v) for v in variants)
    assert re.search(rf"vfmadd\w*pd\s.*%{reg}", arithmetic), f"no packed-double {reg} FMA"


def test_special_value_check_accepts_numpy_or_the_correctly_rounded_result_only() -> None:
    """The check above, on hand-made results: 2**-149.5 rounds to the smallest float32
    subnormal; NumPy's AVX-512 loop flushes it to 0, its AVX2 loop does not."""
    x = np.array([-149.5, -150.0], F32)
    tiny = np.finfo(F32).smallest_subnormal
    correct = np.array([tiny, 0.0], F32)
    flushed = np.array([0.0, 0.0], F32)
    _check_special("exp2", correct, flushed, (x,))          # correctly rounded, NumPy flushed
    _check_special("exp2", flushed, flushed, (x,))          # NumPy's own answer
    with pytest.raises(AssertionError, match="special values differ"):
        _check_special("exp2", flushed, correct, (x,))      # neither NumPy's nor correct
    with pytest.raises(AssertionError, match="special values differ"):
        _check_special("exp2", np.array([tiny, tiny], F32), flushed, (x,))   # 2**-150 ties to 0
    with pytest.raises(AssertionError, match="special values differ"):
        _check_special("exp2", np.array([tiny, -0.0], F32), flushed, (x,))   # sign of zero
