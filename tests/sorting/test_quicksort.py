"""The vectorized quicksorts (compiler/primitives/quicksort.py, on AVX-512 hosts; elsewhere the
same kernels take the radix sort) against NumPy: np.sort's default kind and the stable argsort
of (key, position) pairs; lengths around the network sizes and the partition's register
blocks, NaN/±0/inf, runs of equal keys (argsort: in their original order), sorted and
reversed input, every 32/64-bit dtype (argsort: every real dtype), rows and vmap; the
heap-sort fallback by calling the generated functions alone with a small depth limit."""
from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import numpy as np
import pytest
from llvmlite import ir as ll

from compiler import jit, vmap
from compiler.backend.target import host
from compiler.primitives import quicksort
from tests.lazy import lazy_jit

rng = np.random.default_rng(12)

#: around 1, 2, 4, 8 and 16 registers of 8 or 16 keys and the 4-register partition blocks
LENGTHS = [0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 127, 128, 129, 130, 191, 255,
           256, 257, 258, 511, 1000, 4099, 30_001]
DTYPES = [np.float64, np.float32, np.int64, np.int32, np.uint64, np.uint32]


def _sort(x):
    return np.sort(x)


def _sort_rows(x):
    return np.sort(x, axis=-1)


KERNELS = {np.dtype(d): lazy_jit(_sort, signature=f"{np.dtype(d).name}[n]".replace("float", "f")
                            .replace("uint", "u").replace("int", "i")) for d in DTYPES}
rows_k = lazy_jit(_sort_rows, signature="f32[m, n]")
vmap_k = jit(vmap(_sort))


def _argsort(x):
    return np.argsort(x)


def _argsort_rows(x):
    return np.argsort(x, axis=-1), np.sort(x, axis=-1, kind="stable")


ARGSORTS = {np.dtype(d): lazy_jit(_argsort, signature=f"{t}[n]") for d, t in
            [(np.float64, "f64"), (np.float32, "f32"), (np.int64, "i64"), (np.uint64, "u64"),
             (np.int16, "i16"), (np.float16, "f16"), (np.bool_, "bool")]}
arg_rows_k = lazy_jit(_argsort_rows, signature="f64[m, n]")
arg_vmap_k = jit(vmap(_argsort))


def _values(dtype, n, kind):
    dtype = np.dtype(dtype)
    if kind == "random":
        if dtype.kind == "f":
            x = rng.normal(size=n).astype(dtype)
            special = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf], dtype)
            where = rng.random(n) < 0.15
            x[where] = rng.choice(special, int(where.sum()))
            return x
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        x[rng.random(n) < 0.1] = info.max
        x[rng.random(n) < 0.1] = info.min
        return x
    if kind == "few":                       # long runs of equal keys
        return rng.integers(0, 3, n).astype(dtype)
    if kind == "sorted":
        return np.sort(rng.integers(-50, 50, n).astype(dtype) if dtype.kind != "u"
                       else rng.integers(0, 100, n).astype(dtype))
    if kind == "reversed":
        return _values(dtype, n, "sorted")[::-1].copy()
    raise ValueError(kind)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_sort_is_numpys(dtype):
    kernel = KERNELS[np.dtype(dtype)]
    for kind in ("random", "few", "sorted", "reversed"):
        for n in LENGTHS:
            x = _values(dtype, n, kind)
            got = kernel(x)
            assert got.dtype == x.dtype
            np.testing.assert_array_equal(got, np.sort(x), err_msg=f"{kind} n={n}")


def test_nan_and_zeros_of_a_long_row():
    x = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0, -np.nan] * 300)
    rng.shuffle(x)
    got = KERNELS[np.dtype(np.float64)](x)
    np.testing.assert_array_equal(got, np.sort(x))           # NaN last, -0.0 == 0.0
    assert np.isnan(got[-600:]).all() and not np.isnan(got[:-600]).any()


def test_rows_and_vmap():
    for shape in [(3, 0), (4, 1), (5, 200), (3, 1025)]:
        x = rng.normal(size=shape).astype(np.float32)
        x[:, ::7] = np.nan
        np.testing.assert_array_equal(rows_k(x), np.sort(x, axis=-1))
    x = rng.normal(size=(6, 300))
    np.testing.assert_array_equal(vmap_k(x), np.sort(x, axis=-1))


def _argsort_values(dtype, n, kind):
    if np.dtype(dtype) == np.bool_:
        return rng.random(n) < 0.5
    if np.dtype(dtype) == np.float16:
        return _values(np.float32, n, kind).astype(np.float16)
    if np.dtype(dtype) == np.int16:
        return rng.integers(-5, 5, n).astype(np.int16)
    return _values(dtype, n, kind)


@pytest.mark.parametrize("dtype", list(ARGSORTS), ids=lambda d: d.name)
def test_argsort_is_numpys_stable_order(dtype):
    kernel = ARGSORTS[dtype]
    for kind in ("random", "few", "sorted", "reversed"):
        for n in LENGTHS:
            x = _argsort_values(dtype, n, kind)
            np.testing.assert_array_equal(kernel(x), np.argsort(x, kind="stable"),
                                          err_msg=f"{kind} n={n}")


def test_argsort_of_rows_and_vmap_with_zeros_and_nan():
    for shape in [(2, 0), (3, 1), (4, 100), (2, 2049)]:
        x = rng.choice(np.array([np.nan, -0.0, 0.0, 1.0, -np.inf, -np.nan]), shape)
        ref = np.argsort(x, axis=-1, kind="stable")
        perm, values = arg_rows_k(x)
        np.testing.assert_array_equal(perm, ref)
        expected = np.take_along_axis(x, ref, -1)           # -0.0 and 0.0 as they came
        np.testing.assert_array_equal(np.signbit(values), np.signbit(expected))
        np.testing.assert_array_equal(values, expected)
    x = rng.integers(0, 4, (5, 300)).astype(np.float32)
    np.testing.assert_array_equal(arg_vmap_k(x), np.argsort(x, axis=-1, kind="stable"))


def _standalone(dtype, pairs=False):
    """The generated function alone, callable as f(pointer, n, depth) (pairs: f(positions,
    keys, n, depth))."""
    module = ll.Module()
    module.triple = llvm.get_process_triple()
    fn = quicksort.function(module, np.dtype(dtype), pairs=pairs)
    fn.linkage = "external"
    mod = llvm.parse_assembly(str(module))
    engine = llvm.create_mcjit_compiler(mod, host().machine(jit=True))
    engine.finalize_object()
    address = engine.get_function_address(fn.name)
    args = [ctypes.c_void_p] * (2 if pairs else 1) + [ctypes.c_int64, ctypes.c_int64]
    return ctypes.CFUNCTYPE(None, *args)(address), engine


@pytest.mark.skipif(host().vector_bits != 512, reason="the quicksort needs AVX-512")
@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_heap_sort_past_the_depth_limit(dtype):
    fn, _engine = _standalone(dtype)
    bits = np.dtype(dtype).itemsize * 8
    for depth in (0, 1, 3):
        for n in (129, 300, 2000):
            x = _values(dtype, n, "random")
            if np.dtype(dtype).kind == "f":
                x = x[~np.isnan(x)]
            # the keys the kernel's first loop writes (non-canonical order-preserving bits)
            u = x.view(f"u{bits // 8}").copy()
            if np.dtype(dtype).kind == "f":
                top = np.array(1 << (bits - 1), u.dtype)
                u = np.where(u >= top, ~u, u | top)
            else:
                u = u ^ np.array(1 << (bits - 1), u.dtype)
            buf = np.ascontiguousarray(u)
            fn(buf.ctypes.data, len(buf), depth)
            np.testing.assert_array_equal(buf.view(dtype), np.sort(x), err_msg=f"depth={depth} n={n}")


@pytest.mark.skipif(host().vector_bits != 512, reason="the quicksort needs AVX-512")
def test_pair_heap_sort_past_the_depth_limit():
    fn, _engine = _standalone(np.uint64, pairs=True)
    for depth in (0, 1, 3):
        for n in (65, 300, 2000):
            keys = rng.integers(0, 5, n).astype(np.uint64)
            keys[::9] = np.iinfo(np.uint64).max
            positions = np.arange(n, dtype=np.int64)
            work = keys.copy()
            fn(positions.ctypes.data, work.ctypes.data, n, depth)
            np.testing.assert_array_equal(positions, np.argsort(keys, kind="stable"),
                                          err_msg=f"depth={depth} n={n}")
