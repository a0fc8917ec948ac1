"""Corners where compiled code once silently differed from NumPy, checked against NumPy itself.

* Promotion: every binary operator between a bool array (1-d and 0-d) and a Python int,
  float or bool, on either side, as a compile-time literal and as an argument: the same
  dtype and values as NumPy (``b ** 2`` is int8: NumPy's ``**`` squares), or a compile
  error where NumPy raises. Never a silently different dtype.
* Scalar exponents: NumPy's loops compute ``x ** 0.5`` as ``sqrt(x)`` (nan at -inf, -0.0 at
  -0.0) and ``** 2``, ``** -1``, ``** 1``, ``** 0`` as ``x*x``, ``1/x``, ``x``, ``1``; compiled
  code gives the same bits, with the exponent known at compile time or only at run time.
* Integers to negative integer powers: a compile-time exponent is NumPy's ValueError at
  compile time, at the user's line; a run-time one raises it from the kernel.
"""
from __future__ import annotations

import importlib.util
import operator
import sys
import warnings

import numpy as np
import pytest

from compiler import errors, jit, vmap
from compiler.ir.types import DTYPES

OPERATORS = ["+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<<", ">>",
             "==", "!=", "<", "<=", ">", ">="]
UNSUPPORTED_OPERATORS: set[str] = set()
SUPPORTED_DTYPES = set(DTYPES)
BOOLS = {"bool[3]": np.array([True, False, True]), "bool[]": np.array(True)}
SCALARS = [2, 0, -1, 2.0, 0.5, True, False]


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """For each operator: ``x OP s`` and ``s OP x`` with s an argument, and the same with the
    float literals 2.0 and 0.5 written in the source (a module file, so the source exists)."""
    lines = []
    for i, op in enumerate(OPERATORS):
        lines += [f"def arg_l{i}(x, s):\n    return x {op} s\n",
                  f"def arg_r{i}(x, s):\n    return s {op} x\n"]
        for k, lit in enumerate(("2.0", "0.5")):
            lines += [f"def lit_l{i}_{k}(x):\n    return x {op} {lit}\n",
                      f"def lit_r{i}_{k}(x):\n    return {lit} {op} x\n"]
    path = tmp_path_factory.mktemp("promotion") / "promotion_kernels.py"
    path.write_text("\n\n".join(lines))
    spec = importlib.util.spec_from_file_location("promotion_kernels", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["promotion_kernels"] = module
    spec.loader.exec_module(module)
    return module


def _numpy(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return np.asarray(fn(*args)), None
        except (TypeError, ValueError, OverflowError) as e:
            return None, e


def _check(op, fn, args, what):
    want, numpy_error = _numpy(fn, *args)
    try:
        got = jit(fn)(*args)
    except errors.CompileError as e:
        if numpy_error is not None:
            return
        assert op in UNSUPPORTED_OPERATORS or want.dtype not in SUPPORTED_DTYPES, \
            f"{what}: refused ({e}) where NumPy gives {want.dtype}"
        assert isinstance(e, errors.UnsupportedError), f"{what}: {type(e).__name__}: {e}"
        return
    assert numpy_error is None, f"{what}: compiled to {got!r} where NumPy raises {numpy_error!r}"
    got = np.asarray(got)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, NumPy {want.dtype}"
    np.testing.assert_array_equal(got, want, err_msg=what, strict=True)


@pytest.mark.parametrize("op", OPERATORS)
def test_bool_array_with_python_scalar_promotes_as_numpy(kernels, op):
    i = OPERATORS.index(op)
    for name, x in BOOLS.items():
        for s in SCALARS:
            _check(op, getattr(kernels, f"arg_l{i}"), (x, s), f"{name} {op} {s!r}")
            _check(op, getattr(kernels, f"arg_r{i}"), (x, s), f"{s!r} {op} {name}")
        for k, lit in enumerate(("2.0", "0.5")):
            _check(op, getattr(kernels, f"lit_l{i}_{k}"), (x,), f"{name} {op} {lit} (literal)")
            _check(op, getattr(kernels, f"lit_r{i}_{k}"), (x,), f"{lit} (literal) {op} {name}")


def test_bool_square_is_int8_as_numpy():
    b = np.array([True, False])
    got = jit(lambda b: b ** 2)(b)
    np.testing.assert_array_equal(got, b ** 2, strict=True)   # int8: NumPy's ** squares
    assert jit(lambda b: np.power(b, 2))(np.array([True, False])).dtype == np.power(
        np.array([True]), 2).dtype                               # the ufunc: int64 in NumPy too


# ---- scalar exponents ---------------------------------------------------------------------------

EXPONENTS = (0.5, 2.0, -1.0, 1.0, 0.0)


def _points(dtype):
    rng = np.random.default_rng(7)
    lo, hi = (-700, 700) if dtype == np.float64 else (-80, 80)
    x = np.concatenate([rng.uniform(0, 10, 4000), np.exp(rng.uniform(lo, hi, 4000)),
                        [-np.inf, -0.0, 0.0, np.inf, np.nan, 1e-310, -1e-310, 3.0]])
    with np.errstate(over="ignore"):
        return np.concatenate([x, -x]).astype(dtype)


def _bits_equal(got, want, what):
    same = (got == want) & (np.signbit(got) == np.signbit(want)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), f"{what}: differs at {np.flatnonzero(~same)[:5]}: {got[~same][:5]} vs {want[~same][:5]}"


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_scalar_exponents_take_numpy_loops_bit_for_bit(dtype):
    x = _points(dtype)
    run_time = jit(lambda x, p: x ** p)
    run_time_ufunc = jit(lambda x, p: np.power(x, p))
    with np.errstate(all="ignore"):
        for p in EXPONENTS:
            want = np.power(x, dtype(p))
            _bits_equal(run_time(x, p), want, f"x ** p, p = {p} (python float)")
            _bits_equal(run_time(x, np.array(p, dtype)), want, f"x ** p, p = 0-d {p}")
            _bits_equal(run_time_ufunc(x, np.array(p, dtype)), want, f"np.power(x, p), p = 0-d {p}")
        _bits_equal(jit(lambda x: x ** 0.5)(x), x ** 0.5, "x ** 0.5 (literal)")
        _bits_equal(jit(lambda x: np.power(x, 0.5))(x), np.power(x, 0.5), "np.power(x, 0.5) (literal)")
        # an array of exponents is not a scalar one: pow itself, as in NumPy
        p = np.full(x.shape, 0.5, dtype)
        got, want = run_time(x[:8], p[:8]), np.power(x[:8], p[:8])
        assert np.array_equal(np.isinf(got), np.isinf(want)) and np.array_equal(np.isnan(got), np.isnan(want))


# ---- integers to negative integer powers -------------------------------------------------------

def test_integer_negative_power_with_a_compile_time_exponent_is_numpys_error():
    x = np.array([1, 2, 3], np.int32)
    with pytest.raises(ValueError, match="negative integer powers"):
        x ** -2
    for fn in (lambda a: a ** -2, lambda a: np.power(a, -1)):
        with pytest.raises(errors.CompileError, match="Integers to negative integer powers are not allowed") as info:
            jit(fn)(x)
        assert info.value.lineno == fn.__code__.co_firstlineno


def test_integer_negative_power_at_run_time_is_numpys_error():
    """A run-time negative exponent raises NumPy's ValueError from the kernel (also under
    vmap, for any element); non-negative exponents agree with NumPy."""
    x = np.array([-3, -2, -1, 0, 1, 2, 3, 7], np.int64)
    f = jit(lambda a, e: a ** e)
    for y in (0, 1, 2, 5):
        e = np.full(x.shape, y, np.int64)
        np.testing.assert_array_equal(f(x, e), x ** e)
    for y in (-1, -2):
        e = np.full(x.shape, 2, np.int64)
        e[3] = y
        with pytest.raises(ValueError, match="negative integer powers"):
            x ** e
        with pytest.raises(ValueError, match="Integers to negative integer powers are not allowed"):
            f(x, e)
    g = vmap(lambda a, e: np.power(a, e))
    xs = np.tile(x, (3, 1))
    es = np.full(xs.shape, 3, np.int64)
    np.testing.assert_array_equal(g(xs, es), np.power(xs, es))
    es[2, 5] = -1
    with pytest.raises(ValueError, match="Integers to negative integer powers are not allowed"):
        g(xs, es)


def test_sign_of_negative_zero_and_clip_of_a_python_number():
    x = np.array([-0.0, 0.0, -2.0, np.nan])
    _bits_equal(jit(lambda v: np.sign(v))(x), np.sign(x), "np.sign")
    i32 = np.array([1, -5, 3], np.int32)
    got, want = jit(lambda a: np.clip(0, -2, a))(i32), np.clip(0, -2, i32)
    assert got.dtype == want.dtype == np.int64
    np.testing.assert_array_equal(got, want)


def test_operator_module_agrees_with_the_ast_spelling():
    """The table above spells operators in source; the operator module maps them the same
    way in NumPy (a guard that the oracle in this file is NumPy's operator, not a ufunc)."""
    b = np.array([True])
    assert operator.pow(b, 2).dtype == (b ** 2).dtype != np.power(b, 2).dtype


def test_dot_by_a_zero_scale_with_a_symbolic_size():
    """NumPy's axpy for more than one element, the plain product for one: decided at run
    time when the size is a symbol."""
    f = jit(lambda a, v: np.dot(a, v), signature="f64[], f64[n]")
    for n in range(4):
        v = np.array([-np.inf, np.nan, -1.0][:n] + [2.0] * max(0, n - 3))
        with np.errstate(invalid="ignore"):
            want = np.dot(np.array(0.0), v)
        _bits_equal(f(np.array(0.0), v), want, f"n = {n}")
