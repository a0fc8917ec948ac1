"""The cut of a split call into tasks (compiler/backend/parallel.py, ``emit_entry``): equal
slices for most rows, the rows of the last slice of each thread cut again in levels of half
the rest (docs/internals.md). Kernels compiled with the least work of a thread forced down
(``WORK_PER_THREAD``) cut calls of a few thousand rows into up to ``TAIL_LEVELS`` levels (a
matrix product by weights into fewer: its slices each pack the weights, ``slice_cost``).

Every row is computed exactly once (an in-place increment: a row run twice shows +2, a row
never run +0), and every result is bitwise the serial kernel's, for row and thread counts
whose tails have one level up to the most.
"""
from __future__ import annotations

import numpy as np
import pytest

from compiler import jit
from compiler.backend import parallel

SIZES = (1, 2, 63, 64, 65, 1000, 4097, 65_537, 300_001)
THREADS = ("2", "3", "7", "64")


def bump(x):
    x += 1.0


def schedule_wave(x):
    return np.exp(-x**2) * np.sin(3 * x) + 0.5 * x * np.tanh(x)


def schedule_dense(x, w, b):        # each slice packs w: its tail slices are larger
    return np.tanh(x @ w + b)


@pytest.fixture(scope="module")
def fine():
    """`bump` and `schedule_wave` split from 2 rows (one unit of work a thread): the constant
    stays forced down while this module's kernels compile (a kernel may compile again for a
    new shape), and they are not cached on disk."""
    saved = parallel.WORK_PER_THREAD
    parallel.WORK_PER_THREAD = 1
    try:
        yield (jit(bump, parallel=True, cache=False), jit(schedule_wave, parallel=True, cache=False),
               jit(schedule_dense, parallel=True, cache=False))
    finally:
        parallel.WORK_PER_THREAD = saved


@pytest.mark.parametrize("threads", THREADS)
def test_every_row_runs_once(fine, threads, monkeypatch):
    inc = fine[0]
    monkeypatch.setenv("AOTX_NUM_THREADS", threads)
    for n in SIZES:
        for dtype in (np.float64, np.float32):
            x = np.arange(n, dtype=dtype)
            inc(x)
            np.testing.assert_array_equal(x, np.arange(n, dtype=dtype) + 1, err_msg=f"{n} rows, {dtype}")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_bitwise_the_serial_kernel(fine, dtype, monkeypatch):
    par = fine[1]
    ser = jit(schedule_wave)
    for n in SIZES:
        x = np.linspace(-4, 4, n).astype(dtype)
        want = ser(x)
        np.testing.assert_allclose(want, schedule_wave(x.astype(np.float64)),
                                   rtol=2e-5 if dtype == np.float32 else 1e-12, atol=1e-6)
        for threads in THREADS:
            monkeypatch.setenv("AOTX_NUM_THREADS", threads)
            np.testing.assert_array_equal(par(x), want, err_msg=f"{n} rows, {threads} threads")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_matrix_product_slices(fine, dtype, monkeypatch):
    dense = fine[2]
    rng = np.random.default_rng(5)
    w, b = rng.standard_normal((24, 8)).astype(dtype), rng.standard_normal(8).astype(dtype)
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    for n in (1, 65, 4097, 20_011):
        x = rng.standard_normal((n, 24)).astype(dtype)
        want = np.tanh(x.astype(np.float64) @ w.astype(np.float64) + b.astype(np.float64))
        for threads in THREADS:
            monkeypatch.setenv("AOTX_NUM_THREADS", threads)
            np.testing.assert_allclose(dense(x, w, b), want, **tol, err_msg=f"{n} rows, {threads} threads")
