"""A kernel's temporaries live in one block kept between calls (backend/workspace.py): results
stay NumPy's when sizes grow and shrink, when threads call one kernel at once, after error
exits (a failed check, a host callback that raised), with the limit knob, and through a built
library; memory does not grow over many calls and the kept block is freed with the kernel."""
from __future__ import annotations

import ctypes
import gc
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import runtime
from compiler import Function, jit
from compiler.build import build
from runtime import workspace
from tests.lazy import lazy_jit
from tests.runtime.subproc import run_python

rng = np.random.default_rng(14)
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads the process's memory from /proc/self/statm (Linux only)")


def mixed(x):
    """A sort (scratch buffers sized by n) and materialized intermediates."""
    s = np.sort(x)
    return s - np.mean(np.exp(-x * x)), np.cumsum(s[::-1] * 0.5)


def mixed_ref(x):
    s = np.sort(x)
    return s - np.mean(np.exp(-x * x)), np.cumsum(s[::-1] * 0.5)


class Failing(Function):
    """A host callback that raises when an element exceeds 100."""
    host_callback = True

    @staticmethod
    def forward(x):
        if x.max() > 100:
            raise KeyError(f"too big: {x.max()}")
        return x * 2

    @staticmethod
    def abstract(x):
        return x                                   # same shape and dtype


def sort_then_callback(x):
    return Failing.apply(np.sort(x)) + 1.0


def cholesky_sorted(a, x):
    return np.linalg.cholesky(a), np.sort(x)


MIXED = lazy_jit(mixed, signature="f64[n]")
CALLBACK = lazy_jit(sort_then_callback, signature="f64[n]")
CHOLESKY = lazy_jit(cholesky_sorted, signature="f64[b, 4, 4], f64[n]")


def spd(b: int) -> np.ndarray:
    m = rng.standard_normal((b, 4, 4))
    return m @ np.swapaxes(m, -1, -2) + 4 * np.eye(4)


def statm() -> tuple[int, int]:
    """(virtual, resident) bytes of this process."""
    with open("/proc/self/statm") as f:
        size, resident = f.read().split()[:2]
    page = os.sysconf("SC_PAGE_SIZE")
    return int(size) * page, int(resident) * page


def check_mixed(kernel, x: np.ndarray, got=None) -> None:
    """The results of `mixed` against NumPy's (the cumulative sum to the rounding of a sum
    of |x|: the orders of summation differ)."""
    got = kernel(x) if got is None else got
    want = mixed_ref(x)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-14 * (np.abs(x).sum() + 1))


def test_the_kernels_keep_a_workspace():
    """The kernels of this file take their temporaries from the workspace (else the other
    tests would not test it)."""
    for kernel, args in ((MIXED, (np.ones(3),)), (CALLBACK, (np.ones(3),)),
                         (CHOLESKY, (spd(2), np.ones(3)))):
        llvm = kernel.lower(*args).llvm
        assert "__workspace_release" in llvm and "malloc" in llvm


def test_growing_and_shrinking_sizes():
    for n in (1, 7, 1000, 200_000, 3, 50_000, 600_000, 2, 64, 200_000):
        check_mixed(MIXED, rng.standard_normal(n))


def test_threads_calling_one_kernel():
    sizes = [int(n) for n in rng.integers(1, 60_000, 48)]
    inputs = [rng.standard_normal(n) for n in sizes]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(MIXED, inputs))
    for x, got in zip(inputs, results):
        check_mixed(None, x, got)


def test_failed_check_then_good_call():
    good = spd(300)
    bad = good.copy()
    bad[17] = -np.eye(4)
    x = rng.standard_normal(5000)
    for _ in range(3):
        with pytest.raises(np.linalg.LinAlgError):
            CHOLESKY(bad, x)
        L, s = CHOLESKY(good, x)
        np.testing.assert_allclose(L, np.linalg.cholesky(good), rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(s, np.sort(x))


def test_raising_host_callback_then_good_call():
    x = rng.standard_normal(10_000)
    for _ in range(3):
        with pytest.raises(KeyError, match="too big"):
            CALLBACK(np.append(x, 1e3))
        np.testing.assert_allclose(CALLBACK(x), np.sort(x) * 2 + 1.0, rtol=1e-15)


@linux_only
def test_memory_stays_flat_over_many_calls():
    """10^4 calls, one in four an error exit: a block leaked or freed twice per call would
    show (each block is about 100 KiB)."""
    x = rng.standard_normal(4096)
    bad_x = np.append(x, 1e3)
    good, bad = spd(64), spd(64)
    bad[3] = -np.eye(4)
    want = np.sort(x) * 2 + 1.0

    def rounds(count: int) -> None:
        for i in range(count):
            if i % 4 == 3:
                with pytest.raises((np.linalg.LinAlgError, KeyError)):
                    CALLBACK(bad_x) if i % 8 == 3 else CHOLESKY(bad, x)
            elif i % 2:
                CHOLESKY(good, x)
            else:
                CALLBACK(x)
    rounds(200)                      # warm up: blocks kept, allocator settled
    size0, rss0 = statm()
    rounds(10_000)
    size1, rss1 = statm()
    np.testing.assert_allclose(CALLBACK(x), want, rtol=1e-15)
    assert rss1 - rss0 < 32 << 20, (rss0, rss1)
    assert size1 - size0 < 64 << 20, (size0, size1)


#: three temporaries of n float64 (48 MB at n = 2e6: kept, under the 64 MiB limit), whatever
#: the CPU (a sort's scratch differs between the AVX-512 quicksort and the radix sort)
CUMSUMS = """import numpy as np


def mixed(x):
    a = np.cumsum(np.exp(-x * x))
    b = np.cumsum(a[::-1] * 0.5)
    c = np.cumsum(b * a)
    return c[-3:] + b[:3]
"""

KEPT_AND_FREED = """
import gc, os, sys
import numpy as np
from compiler import jit
from workspace_case import mixed

def virtual():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")

kernel = jit(mixed, signature="f64[n]")
x = np.random.default_rng(14).standard_normal(2_000_000)
kernel(np.ones(4))                     # compiled and loaded, a small block kept
gc.collect()
before = virtual()
out = kernel(x)
del out
gc.collect()
kept = virtual()
del kernel
gc.collect()
print(before, kept, virtual())
"""


@linux_only
def test_kept_block_freed_with_the_kernel(tmp_path):
    """A kernel keeps its block between calls, and frees it when it is unloaded (its block of
    48 MB, over 32 MiB: above glibc's largest mmap threshold, so freeing it returns it to the
    system). In a fresh process: the sizes of a test process's mappings depend on what the
    tests before it allocated and freed."""
    (tmp_path / "workspace_case.py").write_text(CUMSUMS)
    before, kept, after = map(int, run_python(KEPT_AND_FREED, tmp_path).stdout.split()[-3:])
    assert kept - before > 24 << 20, (before, kept)          # outputs are freed, the block kept
    assert kept - after > 24 << 20, (kept, after)


def test_limit_knob(monkeypatch):
    """AOTX_WORKSPACE_LIMIT applies when a kernel is loaded: 0 keeps nothing, 64K keeps small
    blocks only (larger calls allocate their own and leave the kept block alone)."""
    assert workspace.limit() is None or os.environ.get("AOTX_WORKSPACE_LIMIT")
    for text, want in (("0", 0), ("4096", 4096), ("64K", 64 << 10), ("3M", 3 << 20), ("1GiB", 1 << 30)):
        monkeypatch.setenv("AOTX_WORKSPACE_LIMIT", text)
        assert workspace.limit() == want
    monkeypatch.setenv("AOTX_WORKSPACE_LIMIT", "lots")
    with pytest.raises(ValueError, match="AOTX_WORKSPACE_LIMIT='lots'"):
        workspace.limit()
    for text in ("0", "64K"):
        monkeypatch.setenv("AOTX_WORKSPACE_LIMIT", text)
        kernel = jit(mixed, signature="f64[n]")
        for n in (10, 100_000, 20, 5000, 300_000, 1):
            check_mixed(kernel, rng.standard_normal(n))


BUILT = '''
import numpy as np
from compiler import jit

@jit(signature="f64[n]")
def mixed(x):
    s = np.sort(x)
    return s - np.mean(np.exp(-x * x)), np.cumsum(s[::-1] * 0.5)

@jit(signature="f64[n]")
def scale(x):
    return x * 2.0
'''


def test_built_library(tmp_path, monkeypatch):
    (tmp_path / "wslib.py").write_text(BUILT)
    build(tmp_path / "wslib.py", tmp_path / "build", progress=lambda line: None)
    header = (tmp_path / "build" / "wslib.h").read_text()
    assert "#define WSLIB_MIXED_WORKSPACE 1" in header and "#define WSLIB_SCALE_WORKSPACE 0" in header
    assert "void wslib_mixed__workspace_release(void);" in header
    assert "void wslib_mixed__workspace_limit(int64_t bytes);" in header
    so = ctypes.CDLL(str(tmp_path / "build" / "wslib.so"))
    assert so.wslib_mixed__workspace_release and so.wslib_mixed__workspace_limit
    assert not hasattr(so, "wslib_scale__workspace_release")
    monkeypatch.setenv("AOTX_WORKSPACE_LIMIT", "1M")
    lib = runtime.load(tmp_path / "build" / "wslib")
    for n in (5, 100_000, 17, 300_000, 2):
        check_mixed(lib.mixed, rng.standard_normal(n))
    inputs = [rng.standard_normal(int(n)) for n in rng.integers(1, 200_000, 16)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lib.mixed, inputs))
    for x, got in zip(inputs, results):
        check_mixed(None, x, got)
    x = rng.standard_normal(9)
    np.testing.assert_array_equal(lib.scale(x), x * 2.0)

    if shutil.which("cc") is None:
        return                                           # the C half needs a C compiler
    exe = tmp_path / "main"
    (tmp_path / "main.c").write_text(MAIN_C)
    build_dir = tmp_path / "build"
    subprocess.run(["cc", "-O2", "-Wall", "-Werror", "-I", str(build_dir), str(tmp_path / "main.c"),
                    str(build_dir / "wslib.so"), f"-Wl,-rpath,{build_dir}", "-o", str(exe)], check=True)
    lines = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split("\n")
    for n, line in zip((1000, 100_000, 10, 50_000), lines):
        x = (np.arange(n) * 7919 % 1000) / 100.0 - 5.0     # the inputs main.c fills
        s0, s1 = (float(v) for v in line.split())
        want = mixed_ref(x)
        np.testing.assert_allclose([s0, s1], [want[0].sum(), want[1].sum()], rtol=1e-9)


MAIN_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include "wslib.h"

/* growing and shrinking sizes, the limit set to 0 then back, the kept block released */
int main(void) {
    const int64_t sizes[4] = {1000, 100000, 10, 50000};
    for (int k = 0; k < 4; k++) {
        int64_t n = sizes[k];
        double *x = malloc(n * sizeof(double)), *a = malloc(n * sizeof(double)),
               *b = malloc(n * sizeof(double));
        for (int64_t i = 0; i < n; i++) x[i] = (double)(i * 7919 % 1000) / 100.0 - 5.0;
        void *ins[1] = {x}, *outs[2] = {a, b};
        if (k == 2) wslib_mixed__workspace_limit(0);
        if (k == 3) wslib_mixed__workspace_limit(1 << 20);
        if (wslib_mixed(ins, outs, &n) != AOTX_OK) return 1;
        double s0 = 0, s1 = 0;
        for (int64_t i = 0; i < n; i++) { s0 += a[i]; s1 += b[i]; }
        printf("%.17g %.17g\n", s0, s1);
        free(x); free(a); free(b);
    }
    wslib_mixed__workspace_release();
    return 0;
}
"""


def softmax(x):
    """Row minima in one temporary, exp(x - min) in another: one loop writes the second
    while it reads the first. (With the max, softmax's max and sum are one op of their own:
    backend/online.py.)"""
    p = np.exp(x - x.min(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True)


softmax_k = jit(softmax)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_loop_between_two_temporaries_is_vectorized(dtype):
    x = rng.standard_normal((256, 128)).astype(dtype)        # temporaries in the workspace
    np.testing.assert_allclose(softmax_k(x), softmax(x), rtol=1e-5 if dtype == np.float32 else 1e-13)
    text = softmax_k.lower(x).llvm_optimized
    scalar = "fsub float" if dtype == np.float32 else "fsub double"
    assert "workspace_slice" in text          # each temporary is an object of its own to LLVM
    assert "fsub <" in text and scalar not in text    # x - max: vector code only (128 columns)


def _normalize_rows(a):
    return a / a.sum(axis=1, keepdims=True)


def test_a_single_temporary_stays_apart_from_the_output():
    """A kernel with one temporary (at offset 0 of the workspace) keeps it a separate object
    to LLVM: the division by the row sums is vectorized."""
    a = np.random.default_rng(5).random((1000, 12)) + 0.5
    k = jit(_normalize_rows)
    np.testing.assert_allclose(k(a), _normalize_rows(a), rtol=1e-14)
    text = k.lower(a).llvm_optimized
    assert re.search(r"fdiv <\d+ x double>", text), "the division loop was left scalar"
