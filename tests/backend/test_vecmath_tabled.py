"""float64 exp on AVX-512: an explicit vector body with a table in registers.

(exp2, expm1, tanh, sinh and cosh, built on the same table: the second half of this file.)

vecmath's exp for float64 on a target with 512-bit vectors and FMA is written as vector code
(compiler/backend/vecmath/exp_log.py: exp_table, a 16-entry table read with vpermi2pd and
vscalefpd for the scaling). Its calls stay calls until LoopVectorize has replaced them by the
vector variants; passes.optimize then links in the scalar function and inlines everything
(vecmath._define.vector_inlined_function). Checked here: every width against the correctly
rounded result (mpmath) on mixed lanes, every width giving the same bits, kernels of every
length (vector loop, epilogue, remainder), reductions over short rows, and that other
targets keep the inline kernel.
"""
from __future__ import annotations

import ctypes
import re

import llvmlite.ir as ir
import numpy as np
import pytest

from compiler.backend import jit as native, passes, target, vecmath
from tests.backend import vecmath_harness as H
from tests.lazy import lazy_jit

needs_avx512 = pytest.mark.skipif(target.host().vector_bits < 512,
                                  reason="the explicit exp body is AVX-512 code")

#: docs/vecmath.md: float64 exp below 0.76 ULP (0.55 for normal results), against the exact
#: value (long double here); against the correctly rounded double that means one of its two
#: neighbours at most: 1 ULP
TOL, TOL_NORMAL, FAITHFUL = 0.76, 0.56, 1.0


def _pool() -> np.ndarray:
    """Ordinary arguments, the ends of the table's reduction, the overflow and underflow
    thresholds, subnormal results, and special values."""
    ln2_32 = np.log(2) / 32
    vals = [0.5, -2.0, 3.0, 1e-300, -1e-20, ln2_32, -ln2_32, 15 * ln2_32, 17 * ln2_32, 700.0,
            -700.0, 709.782712893384, 709.7827128933841, -708.4, -720.5, -744.0,
            -745.1332191019411, -745.1332191019412, -746.0, 710.0, 1e300, -1e300,
            0.0, -0.0, np.inf, -np.inf, np.nan]
    return np.array(vals)


def _exact(x: np.ndarray) -> np.ndarray:
    """The correctly rounded exp (mpmath); beyond |x| = 1000 (inf or 0) and for inf, nan and
    zero, NumPy's."""
    out = []
    for v in x:
        r = H.correctly_rounded("exp", (v,), np.dtype(np.float64)) if abs(v) < 1000 else None
        with np.errstate(over="ignore"):
            out.append(float(np.exp(v)) if r is None else r)
    return np.array(out)


class _Widths:
    """The scalar function and every vector variant of float64 `name` for a target width,
    called directly on arrays (the module is optimized as a kernel's is: late link and
    inlining)."""

    def __init__(self, vector_bits: int, name: str = "exp"):
        ty = ir.DoubleType()
        nargs = H.NARGS.get(name, 1)
        module = ir.Module(name=f"tabled_{name}")
        user = ir.Function(module, ir.FunctionType(ty, [ty] * nargs), "scalar_user")
        b = ir.IRBuilder(user.append_basic_block("entry"))
        call = vecmath.call(b, name, list(user.args), has_fma=True, vector_bits=vector_bits)
        b.ret(call)
        self.symbol = call.callee.name
        variants = dict(re.findall(r"_ZGV_LLVM_N(\d+)v+_[\w.]+\(([\w.]+)\)", str(call)))
        self.widths = (1,) + tuple(sorted(int(n) for n in variants))
        ptr = ir.PointerType()
        for n in self.widths:
            vty = ty if n == 1 else ir.VectorType(ty, n)
            callee = user if n == 1 else ir.Function(module, ir.FunctionType(vty, [vty] * nargs),
                                                     variants[str(n)])
            fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr] * (nargs + 1)), f"apply{n}")
            b = ir.IRBuilder(fn.append_basic_block("entry"))
            loads = [b.load(a, typ=vty, align=8) for a in fn.args[:nargs]]
            b.store(b.call(callee, loads), fn.args[nargs], align=8)
            b.ret_void()
        self.text = vecmath.link(str(module), module)
        tgt = target.host()
        optimized = passes.optimize(passes.parse(self.text, tgt), tgt)
        self.optimized = str(optimized)
        self._obj = native.LoadedObject(passes.emit_object(optimized, tgt), tgt)
        proto = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * (nargs + 1))
        self._fns = {n: proto(self._obj.address(f"apply{n}")) for n in self.widths}

    def __call__(self, n: int, *xs: np.ndarray) -> np.ndarray:
        xs = tuple(np.ascontiguousarray(x, dtype=np.float64) for x in xs)
        out = np.full(n, 7.0)
        self._fns[n](*[x.ctypes.data for x in xs], out.ctypes.data)
        return out


_WIDTHS: dict[tuple[int, str], _Widths] = {}


def _widths(bits: int, name: str = "exp") -> _Widths:
    if (bits, name) not in _WIDTHS:
        _WIDTHS[bits, name] = _Widths(bits, name)
    return _WIDTHS[bits, name]


@needs_avx512
def test_every_width_on_mixed_lanes_is_accurate_and_gives_the_same_bits() -> None:
    v = _widths(512)
    assert v.symbol.endswith("_tbl") and v.widths == (1, 2, 4, 8)
    pool = _pool()
    _check_every_width(v, pool, _exact(pool), np.random.default_rng(5), 40)


def _check_every_width(v, pool: np.ndarray, exact: np.ndarray, rng, draws: int) -> None:
    """Every width on rows of pool values (each value in every lane position, and `draws`
    random rows): faithful to `exact`, nan where it is nan, and the same bits for a value
    whatever its width and lane."""
    one: dict[int, set[bytes]] = {}
    for n in v.widths:
        rows = [np.roll(np.arange(len(pool)), -k)[:n] for k in range(len(pool))] \
            + [rng.integers(0, len(pool), n) for _ in range(draws)]
        for row in rows:
            got = v(n, pool[row])
            assert np.array_equal(np.isnan(got), np.isnan(exact[row])), (n, pool[row], got)
            err = H.ulp_error(got, exact[row])
            assert err.max() <= FAITHFUL, f"width {n}: {err.max():.3f} ULP at {pool[row][np.argmax(err)]!r}"
            for i, g in zip(row, got):
                one.setdefault(int(i), set()).add(g.tobytes())
    assert all(len(bits) == 1 for bits in one.values()), "the widths differ in some lane"


@needs_avx512
def test_random_arguments_against_long_double() -> None:
    """Uniform over the normal range and over the subnormal results, and small magnitudes,
    through the 8-wide variant and the scalar function, against exp in long double (64-bit
    mantissa: the reference's own error is below 2^-60 of a double's ULP)."""
    v = _widths(512)
    rng = np.random.default_rng(11)
    for lo, hi, tol in ((-708.0, 709.7, TOL_NORMAL), (-745.0, -708.5, TOL), (-0.05, 0.05, TOL_NORMAL)):
        x = rng.uniform(lo, hi, 40000)
        exact = np.exp(x.astype(np.longdouble))
        for n in (8, 1):
            got = np.concatenate([v(n, x[i:i + n]) for i in range(0, len(x), n)])
            err = H.ulp_error(got, exact)
            assert err.max() <= tol, f"[{lo}, {hi}] width {n}: {err.max():.3f} ULP"


_exp = lazy_jit(lambda x: np.exp(x), signature="f64[n]")


def test_kernel_every_length_matches_the_long_loop_bit_for_bit() -> None:
    """Lengths 1 to 40 run the vector loop, its epilogue and the scalar remainder in every
    mix; each element has the bits it has inside a long array, within the bound of NumPy's
    reference in long double."""
    x = np.random.default_rng(2).uniform(-30, 30, 1000)
    long = _exp(x)
    for n in range(1, 41):
        assert _exp(x[:n]).tobytes() == long[:n].tobytes(), n
    ref = np.exp(x.astype(np.longdouble))
    assert H.ulp_error(long, ref).max() <= TOL_NORMAL


_lse = lazy_jit(lambda x: np.log(np.sum(np.exp(x - x.max(axis=1, keepdims=True)), axis=1))
                + x.max(axis=1))
_row_sums = lazy_jit(lambda x: np.exp(x).sum(axis=1))


@pytest.mark.parametrize("cols", [1, 3, 7, 8, 9, 20, 31, 64, 67])
def test_reductions_over_short_rows(cols: int) -> None:
    """Reduction loops of a static length keep their exp vectorized (they are not unrolled
    whole: codegen's loop hint), and their results are NumPy's."""
    x = np.random.default_rng(cols).standard_normal((50, cols)) * 3
    want = np.log(np.sum(np.exp(x - x.max(axis=1, keepdims=True)), axis=1)) + x.max(axis=1)
    np.testing.assert_allclose(_lse(x), want, rtol=4e-16 * cols + 1e-15, atol=1e-15)
    np.testing.assert_allclose(_row_sums(x), np.exp(x).sum(axis=1), rtol=2e-16 * cols + 1e-15)


def test_other_targets_keep_the_inline_kernel() -> None:
    """Without 512-bit vectors (or FMA) exp is the inline scalar kernel: no AVX-512
    instruction, no late link; it runs on this host too and stays accurate."""
    v = _widths(256)
    assert not v.symbol.endswith("_tbl")
    assert "avx512" not in v.text and "avx512" not in v.optimized
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-745, 709.7, 400), _pool()])
    exact = _exact(x)
    for n in v.widths:
        got = np.concatenate([v(n, np.resize(x[i:i + n], n))[:len(x[i:i + n])]
                              for i in range(0, len(x), n)])
        assert np.array_equal(np.isnan(got), np.isnan(exact))
        assert H.ulp_error(got, exact).max() <= FAITHFUL
    ty = ir.DoubleType()
    module = ir.Module(name="no_fma")
    fn = ir.Function(module, ir.FunctionType(ty, [ty]), "f")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    assert not vecmath.call(b, "exp", [fn.args[0]], has_fma=False, vector_bits=512).callee.name.endswith("_tbl")


@needs_avx512
def test_the_vector_loop_uses_the_table_and_calls_nothing() -> None:
    asm = H.compile_kernel("exp", "float64").asm
    start = asm.index("\nkernel:")
    loop = asm[start:asm.find(".Lfunc_end", start)]
    assert re.search(r"vperm[ti]2pd\s.*%zmm", loop) and re.search(r"vscalefpd\s.*%zmm", loop)
    assert not re.search(r"\bcall", loop)


# -- exp2, expm1, tanh, sinh, cosh: the same table (exp_log.exp_table_pair, _table_pair) ------------
ON_TABLE = ("exp2", "expm1", "tanh", "sinh", "cosh")
#: (lo, hi, bound) per range, measured on 1e6 uniform points per range against long double
#: (docs/vecmath.md): exp2 0.55 for normal results, 0.75 subnormal (the scaling rounds twice);
#: expm1 0.54 (the inline kernel 0.71);
#: tanh 0.59 (|x| >= 1/8; the inline kernel 0.87), sinh 0.69 for |x| >= 1, cosh 0.80 for
#: |x| >= 1/2 (its sum h + (l + 1/(4h)) near 1/2, as the inline kernel's); the bounds leave a
#: little margin. tanh, sinh, cosh: the ranges of the exponential branch, both signs (the
#: polynomial branches are the inline kernel's code)
RANGES_ON_TABLE = {"exp2": ((-1022.0, 1023.99, 0.56), (-1074.0, -1022.0, 0.76), (-0.1, 0.1, 0.56)),
                   "expm1": ((-0.07, 0.07, 0.56), (-1.0, 1.0, 0.56), (-60.0, 0.0, 0.56), (0.0, 709.7, 0.56)),
              "tanh": ((0.125, 0.6, 0.65), (0.6, 3.0, 0.65), (3.0, 23.0, 0.65)),
              "sinh": ((1.0, 3.0, 0.75), (3.0, 45.0, 0.75), (45.0, 710.47, 0.75)),
              "cosh": ((0.5, 3.0, 0.85), (3.0, 45.0, 0.85), (45.0, 710.47, 0.85))}
_LN2_64 = np.log(2) / 64       # the ends of the table's reduction of 2|x| for tanh


def _pool_on_table(name: str) -> np.ndarray:
    """Both branches and their boundary, the ends of the table's reduction, the clamps,
    the overflow threshold, tiny and subnormal arguments, and special values."""
    common = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1e-300, -1e-20, 1e-8,
              0.3, -2.5, 7.0, 1e300, -1e300, np.inf, -np.inf, np.nan]
    own = {"exp2": [1.0 / 32, -1.0 / 32, 0.0625, 17.0 / 32, -1022.0, -1022.5, -1074.0, -1074.5,
                    -1075.0, -1080.0, 1023.0, 1023.9999999999999, 1024.0, 1025.0, -3000.0],
           "expm1": [1e-17, -1e-17, 2.0 ** -54, 2.0 ** -53, 0.0216, -0.0216, 0.0217, -0.0217,
                     0.0433, 0.25, -0.4, 1.0, -1.0, 36.9, 37.02, 45.0, -37.0, -59.9, -60.0, -61.0,
                     -745.0, 709.782712893384, 709.7827128933841, 710.0, 1e4],
           "tanh": [0.125, 0.12499999999999999, -0.125, 0.12500000000000003, 17 * _LN2_64,
                    -31 * _LN2_64, 33 * _LN2_64, 19.06, 21.9, 22.0, 22.5, -30.0],
           "sinh": [1.0, 0.9999999999999999, -1.0, 1.0000000000000002, 17 * _LN2_64 * 2,
                    39.9, 40.0, 40.1, -300.0, 709.78, 710.4758600739439, 710.475860073944,
                    -710.475860073944, 711.0, 720.0],
           "cosh": [0.5, 0.49999999999999994, -0.5, 0.5000000000000001, 33 * _LN2_64 * 2,
                    39.9, 40.0, 40.1, -300.0, 709.78, 710.4758600739439, 710.475860073944,
                    -710.475860073944, 711.0, 720.0]}[name]
    return np.array(common + own)


def _exact_on_table(name: str, x: np.ndarray) -> np.ndarray:
    """The correctly rounded value (mpmath, overflow to inf included); NumPy's for inf, nan,
    zero and arguments beyond 1000 (where the result is +-1 or +-inf)."""
    out = []
    for v in x:
        r = H.correctly_rounded(name, (v,), np.dtype(np.float64)) if abs(v) < 1000 else None
        with np.errstate(over="ignore"):
            out.append(float(getattr(np, name)(v)) if r is None else r)
    return np.array(out)


@needs_avx512
@pytest.mark.parametrize("name", ON_TABLE)
def test_on_table_every_width_on_mixed_lanes(name: str) -> None:
    """Each width, each lane position: within 1 ULP of the correctly rounded value (so on the
    right side of the overflow threshold), NumPy's special values, and the same bits in
    every width."""
    v = _widths(512, name)
    assert v.symbol.endswith("_tbl") and v.widths == (1, 2, 4, 8)
    pool = _pool_on_table(name)
    exact = _exact_on_table(name, pool)
    _check_every_width(v, pool, exact, np.random.default_rng(len(name)), 20)
    special = ~np.isfinite(pool) | (pool == 0) | (np.abs(pool) < 1e-200) | (np.abs(pool) > 1e3)
    with np.errstate(over="ignore"):
        want = getattr(np, name)(pool[special])
    got = np.array([v(1, np.array([a]))[0] for a in pool[special]])
    assert got.tobytes() == want.tobytes(), (pool[special], want, got)   # zero signs, nan, inf


@needs_avx512
@pytest.mark.parametrize("name", ON_TABLE)
def test_on_table_random_arguments_against_long_double(name: str) -> None:
    """Uniform over the ranges (tanh, sinh, cosh: of the exponential branch, both signs),
    through the 8-wide variant and the scalar function, against long double."""
    v = _widths(512, name)
    rng = np.random.default_rng(13)
    for lo, hi, tol in RANGES_ON_TABLE[name]:
        x = rng.uniform(lo, hi, 12000) * (1.0 if name.startswith("exp") else rng.choice([-1.0, 1.0], 12000))
        exact = H.reference(name, x)
        for n in (8, 1):
            got = np.concatenate([v(n, x[i:i + n]) for i in range(0, len(x), n)])
            err = H.ulp_error(got, exact)
            assert err.max() <= tol, f"[{lo}, {hi}] width {n}: {err.max():.3f} ULP"


_ON_TABLE_KERNELS = {"exp2": lazy_jit(lambda x: np.exp2(x), signature="f64[n]"),
                     "expm1": lazy_jit(lambda x: np.expm1(x), signature="f64[n]"),
                     "tanh": lazy_jit(lambda x: np.tanh(x), signature="f64[n]"),
                     "sinh": lazy_jit(lambda x: np.sinh(x), signature="f64[n]"),
                     "cosh": lazy_jit(lambda x: np.cosh(x), signature="f64[n]")}


@pytest.mark.parametrize("name", ON_TABLE)
def test_on_table_kernel_every_length_matches_the_long_loop(name: str) -> None:
    x = np.random.default_rng(4).uniform(-25, 25, 600)
    kernel = _ON_TABLE_KERNELS[name]
    long = kernel(x)
    for n in range(1, 41):
        assert kernel(x[:n]).tobytes() == long[:n].tobytes(), n
    assert H.ulp_error(long, H.reference(name, x)).max() <= 1.0


_tanh_affine = lazy_jit(lambda a, w, b: np.tanh(a * w + b))
_tanh_row_sums = lazy_jit(lambda x: np.tanh(x).sum(axis=1))


@pytest.mark.parametrize("cols", [3, 20, 31])
def test_tanh_over_short_rows(cols: int) -> None:
    """tanh(a * w + b) over rows (the flat loop) and summed over short rows (a reduction loop
    of a static length), against NumPy."""
    rng = np.random.default_rng(cols)
    a, w, b = rng.standard_normal((40, cols)), rng.standard_normal(cols), rng.standard_normal(cols)
    want = np.tanh(a * w + b)
    np.testing.assert_allclose(_tanh_affine(a, w, b), want, rtol=4e-16, atol=0)
    np.testing.assert_allclose(_tanh_row_sums(a * 3), np.tanh(a * 3).sum(axis=1),
                               rtol=2e-16 * cols + 1e-15, atol=1e-15)


@pytest.mark.parametrize("name", ON_TABLE)
def test_on_table_other_targets_and_float32_keep_the_inline_kernel(name: str) -> None:
    v = _widths(256, name)
    assert not v.symbol.endswith("_tbl")
    assert "avx512" not in v.text and "avx512" not in v.optimized
    pool = _pool_on_table(name)
    exact = _exact_on_table(name, pool)
    for n in v.widths:
        got = np.concatenate([v(n, np.resize(pool[i:i + n], n))[:len(pool[i:i + n])]
                              for i in range(0, len(pool), n)])
        assert np.array_equal(np.isnan(got), np.isnan(exact))
        assert H.ulp_error(got, exact).max() <= FAITHFUL
    for ty, fma in ((ir.FloatType(), True), (ir.DoubleType(), False)):
        module = ir.Module(name="inline")
        fn = ir.Function(module, ir.FunctionType(ty, [ty]), "f")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        call = vecmath.call(b, name, [fn.args[0]], has_fma=fma, vector_bits=512)
        assert not call.callee.name.endswith("_tbl")


@needs_avx512
@pytest.mark.parametrize("name", ON_TABLE)
def test_on_table_vector_loop_uses_the_table_and_calls_nothing(name: str) -> None:
    asm = H.compile_kernel(name, "float64").asm
    start = asm.index("\nkernel:")
    loop = asm[start:asm.find(".Lfunc_end", start)]
    assert re.search(r"vperm[ti]2pd\s.*%zmm", loop) and re.search(r"vscalefpd\s.*%zmm", loop)
    assert not re.search(r"\bcall", loop)


_static_exp = lazy_jit(lambda x: np.exp(x), signature="f64[4096]")
_static_tanh = lazy_jit(lambda x: np.tanh(x), signature="f64[64,32]")


@needs_avx512
def test_static_trip_counts_covered_by_the_vector_body_inline_the_variants() -> None:
    """A loop of a static trip count that the vector body covers whole leaves no scalar call:
    the variants it calls are inlined all the same (they were left as calls through a
    register, 10% slower), and the results are the dynamic-length kernel's bits."""
    x = np.random.default_rng(6).uniform(-20, 20, 4096)
    for kernel, dynamic, arg in ((_static_exp, _exp, x),
                                 (_static_tanh, _ON_TABLE_KERNELS["tanh"], x[:2048].reshape(64, 32))):
        text = kernel.lower(arg).llvm_optimized
        assert not re.search(r"call [^\n]*@\"?aotx_vm_\w*_tbl", text), "a call of the vector variant is left"
        # and no variant is left to compile (they were kept whole, every width)
        assert not re.search(r"^define [^\n]*@\"?aotx_vm_\w*_tbl", text, flags=re.M), "a variant is left"
        assert kernel(arg).tobytes() == dynamic(arg.ravel()).tobytes()


# -- pow: two arguments, its exponential on the table (power.pow_table) ------------------------
#: measured on 1e6 points per set against long double (docs/vecmath.md): 0.55 for normal
#: results (the inline kernel 0.64), 0.71 for subnormal ones (both: the scaling rounds twice)
TOL_POW, TOL_POW_SUBNORMAL = 0.56, 0.72


def _pow_pool() -> tuple[np.ndarray, np.ndarray]:
    """Pairs of ordinary, huge, tiny, negative and special bases and exponents (NumPy's
    special cases: tests/backend/test_vecmath.py checks them on every target)."""
    xs = [2.0, 0.5, 10.0, 1e-300, 1e300, 0.7, -2.0, -0.5, 1.0, 0.0, -0.0, np.inf, -np.inf, np.nan]
    ys = [3.0, -2.5, 0.5, 2036.77, -1074.0, 1023.9, 0.0, -0.0, 7.0, np.inf, -np.inf, np.nan]
    x, y = np.meshgrid(np.array(xs), np.array(ys))
    return x.ravel(), y.ravel()


@needs_avx512
def test_pow_every_width_on_mixed_lanes() -> None:
    v = _widths(512, "pow")
    assert v.symbol.endswith("_tbl") and v.widths == (1, 2, 4, 8)
    x, y = _pow_pool()
    with np.errstate(all="ignore"):
        want = np.power(x, y)
        exact = H.reference("pow", x, y)
    rng = np.random.default_rng(8)
    one: dict[int, set[bytes]] = {}
    for n in v.widths:
        for _ in range(60):
            row = rng.integers(0, len(x), n)
            got = v(n, x[row], y[row])
            assert np.array_equal(np.isnan(got), np.isnan(want[row])), (n, x[row], y[row], got)
            assert H.ulp_error(got, exact[row]).max() <= FAITHFUL, (n, x[row], y[row], got)
            for i, g in zip(row, got):
                one.setdefault(int(i), set()).add(g.tobytes())
    assert all(len(bits) == 1 for bits in one.values()), "the widths differ in some lane"
    got = np.array([v(1, x[i:i + 1], y[i:i + 1])[0] for i in range(len(x))])
    special = (~np.isfinite(want) | (want == 0) | ~np.isfinite(x) | ~np.isfinite(y) | (x == 0)) \
        & ~np.isnan(want)
    assert got[special].tobytes() == want[special].tobytes()    # infinities and zero signs


@needs_avx512
def test_pow_random_arguments_against_long_double() -> None:
    v = _widths(512, "pow")
    rng = np.random.default_rng(12)
    m = 16000
    base = rng.uniform(0.5, 0.99, m)
    sets = [(rng.uniform(0.01, 10, m), rng.uniform(-5, 5, m), TOL_POW),
            (10 ** rng.uniform(-300, 300, m), rng.uniform(-1, 1, m), TOL_POW),
            (1 + rng.uniform(-1e-3, 1e-3, m), rng.uniform(-1e5, 1e5, m), TOL_POW),
            (base, np.log(10 ** rng.uniform(-323, -308, m)) / np.log(base), TOL_POW_SUBNORMAL)]
    for x, y, tol in sets:
        exact = H.reference("pow", x, y)
        for n in (8, 1):
            got = np.concatenate([v(n, x[i:i + n], y[i:i + n]) for i in range(0, m, n)])
            assert H.ulp_error(got, exact).max() <= tol, (n, tol)


_pow_kernel = lazy_jit(lambda x, y: np.power(x, y), signature="f64[n], f64[n]")


def test_pow_kernel_every_length_matches_the_long_loop() -> None:
    rng = np.random.default_rng(10)
    x, y = rng.uniform(0.01, 10, 300), rng.uniform(-20, 20, 300)
    long = _pow_kernel(x, y)
    for n in range(1, 41):
        assert _pow_kernel(x[:n], y[:n]).tobytes() == long[:n].tobytes(), n
    assert H.ulp_error(long, H.reference("pow", x, y)).max() <= 1.0


def test_pow_other_targets_and_float32_keep_the_inline_kernel() -> None:
    v = _widths(256, "pow")
    assert not v.symbol.endswith("_tbl") and "avx512" not in v.optimized
    x, y = _pow_pool()
    with np.errstate(all="ignore"):
        want = np.power(x, y)
    got = np.array([v(1, x[i:i + 1], y[i:i + 1])[0] for i in range(len(x))])
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert H.ulp_error(got, H.reference("pow", x, y)).max() <= FAITHFUL
    for ty, fma in ((ir.FloatType(), True), (ir.DoubleType(), False)):
        module = ir.Module(name="inline_pow")
        fn = ir.Function(module, ir.FunctionType(ty, [ty, ty]), "f")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        call = vecmath.call(b, "pow", list(fn.args), has_fma=fma, vector_bits=512)
        assert not call.callee.name.endswith("_tbl")
