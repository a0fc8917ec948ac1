"""The vectorized quicksort of np.sort's default kind (compiler/primitives/quicksort.py, on
AVX-512 hosts; elsewhere the same kernels take the radix sort) against NumPy: lengths around
the network sizes and the partition's register blocks, NaN/±0/inf, runs of equal keys, sorted
and reversed input, every 32/64-bit dtype, rows and vmap; the heap-sort fallback by calling
the generated function alone with a small depth limit."""
from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import numpy as np
import pytest
from llvmlite import ir as ll

from compiler import jit, vmap
from compiler.backend.target import host
from compiler.primitives import quicksort

rng = np.random.default_rng(12)

#: around 1, 2, 4, 8 and 16 registers of 8 or 16 keys and the 4-register partition blocks
LENGTHS = [0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 127, 128, 129, 130, 191, 255,
           256, 257, 258, 511, 1000, 4099, 30_001]
DTYPES = [np.float64, np.float32, np.int64, np.int32, np.uint64, np.uint32]


def _sort(x):
    return np.sort(x)


def _sort_rows(x):
    return np.sort(x, axis=-1)


KERNELS = {np.dtype(d): jit(_sort, signature=f"{np.dtype(d).name}[n]".replace("float", "f")
                            .replace("uint", "u").replace("int", "i")) for d in DTYPES}
rows_k = jit(_sort_rows, signature="f32[m, n]")
vmap_k = jit(vmap(_sort))


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


def _standalone(dtype):
    """The generated function alone, callable as f(pointer, n, depth)."""
    module = ll.Module()
    module.triple = llvm.get_process_triple()
    quicksort.function(module, np.dtype(dtype)).linkage = "external"
    target = host()
    mod = llvm.parse_assembly(str(module))
    machine = target.machine(jit=True)
    engine = llvm.create_mcjit_compiler(mod, machine)
    engine.finalize_object()
    address = engine.get_function_address(f"aotx.quicksort.{np.dtype(dtype).name}")
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)(address)
    return fn, engine


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
