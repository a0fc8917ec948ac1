"""Kernels as native callbacks: Kernel.ctypes/address(signature, prototype) as
scipy.LowLevelCallable (compiler/backend/callbacks.py; docs/interop.md).

Oracles: SciPy run with the uncompiled Python function (the same quadrature rule, the
same filter), and NumPy.
"""
from __future__ import annotations

import gc

import numpy as np
import pytest

from compiler import jit
from compiler.errors import PrototypeError

scipy = pytest.importorskip("scipy")
from scipy import LowLevelCallable, integrate, ndimage  # noqa: E402


def bell(x):
    return np.exp(-x * x) * np.cos(x)


def bell_args(xx):                      # quad's (int n, double *xx): x, then the extra args
    return np.exp(-xx[0] ** 2) * np.cos(xx[1] * xx[0])


def spread(values):
    return np.max(values) - np.min(values)


def pick(values):
    return values[7]


bell_kernel, args_kernel, spread_kernel = jit(bell), jit(bell_args), jit(spread)
pick_kernel = jit(pick, boundscheck=True)


def test_quad_integrates_a_compiled_scalar_function():
    f = LowLevelCallable(bell_kernel.ctypes("f64 -> f64", prototype="double (double)"))
    got, err = integrate.quad(f, -3.0, 3.0)
    want, _ = integrate.quad(bell, -3.0, 3.0)
    assert abs(got - want) <= 1e-14 and err < 1e-8
    g = LowLevelCallable(args_kernel.ctypes("f64[n] -> f64", prototype="double (int, double *)"))
    for a in (0.5, 2.0):
        got, _ = integrate.quad(g, -3.0, 3.0, args=(a,))
        want, _ = integrate.quad(lambda x: bell_args(np.array([x, a])), -3.0, 3.0)
        assert abs(got - want) <= 1e-14


@pytest.mark.parametrize("prototype", ["int (double *, npy_intp, double *, void *)",
                                       "int (double *, intptr_t, double *, void *)"])
def test_generic_filter_calls_a_compiled_kernel(prototype):
    a = np.random.default_rng(0).normal(size=(40, 30))
    fn = LowLevelCallable(spread_kernel.ctypes("f64[n] -> f64", prototype=prototype))
    got = ndimage.generic_filter(a, fn, size=(3, 4))
    want = ndimage.generic_filter(a, spread, size=(3, 4))
    np.testing.assert_array_equal(got, want)


def test_float32_and_address_forms():
    cube = jit(lambda x, y: x * x * x + y)
    entry = cube.ctypes("f32, f32 -> f32", prototype="float (float, float)")
    assert entry(np.float32(1.5), np.float32(0.25)) == np.float32(1.5) ** 3 + np.float32(0.25)
    address = cube.address("f32, f32 -> f32", prototype="float (float, float)")
    assert address == cube.address("f32, f32 -> f32", prototype="float (float, float)")
    entry2 = jit(bell).ctypes("f64 -> f64", prototype="double (double)")
    gc.collect()                           # the Kernel is gone; the entry keeps its code
    assert entry2(0.5) == pytest.approx(bell(0.5), rel=1e-15)


def test_a_failing_kernel_gives_nan_or_a_failure_status():
    entry = pick_kernel.ctypes("f64[n] -> f64", prototype="double (int, double *)")
    x = np.arange(10.0)
    assert entry(10, x.ctypes.data_as(entry.argtypes[1])) == 7.0
    assert np.isnan(entry(3, x.ctypes.data_as(entry.argtypes[1])))      # index 7 out of range
    status = pick_kernel.ctypes("f64[n] -> f64", prototype="int (double *, npy_intp, double *, void *)")
    out = np.zeros(1)
    ptr = status.argtypes[0]
    assert status(x.ctypes.data_as(ptr), 10, out.ctypes.data_as(ptr), None) == 1 and out[0] == 7.0
    assert status(x.ctypes.data_as(ptr), 3, out.ctypes.data_as(ptr), None) == 0


@pytest.mark.parametrize("signature, prototype, message", [
    ("f64 -> f64", "float (float)", "parameter 1 is float but the kernel's input 1 is f64"),
    ("f64 -> f64", "double (double, double)", "more inputs than the kernel's 1"),
    ("f64[n] -> f64", "double (double *)", "pointer parameter 1 has no length"),
    ("f64[n] -> f64", "double (double)", "kernel input 1 is f64[n]"),
    ("f64[3] -> f64", "double (int, double *)", "1-d array of symbolic length"),
    ("f64 -> f64", "double f(double", "expected 'RESULT (TYPE, TYPE *, ...)'"),
    ("f64 -> f64", "double (char)", "'char' is not one of"),
])
def test_a_prototype_that_does_not_fit_is_a_clear_error(signature, prototype, message):
    kernel = bell_kernel if "[" not in signature else pick_kernel if "3" not in signature else args_kernel
    with pytest.raises(PrototypeError) as info:
        kernel.ctypes(signature, prototype=prototype)
    assert message in str(info.value)


def test_a_kernel_with_an_array_result_has_no_callback_form():
    twice = jit(lambda x: 2.0 * x)
    with pytest.raises(PrototypeError, match="returns one scalar; the kernel returns f64\\[n\\]"):
        twice.ctypes("f64[n] -> f64[n]", prototype="double (int, double *)")
