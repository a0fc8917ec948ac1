"""Derivative kernels of two different functions must not share a cache entry.

Two lambdas written on one source line (as in a table of ops) have the same
`inspect.getsource` text; the on-disk cache key must still tell them apart
(e.g. by their code objects), or the second transform silently returns the
first function's kernel.
"""
from __future__ import annotations

import numpy as np
import pytest

from compiler import jit, jvp

PAIR = (lambda x: np.floor(x) * x, lambda x: np.ceil(x) * x)


def test_jvp_of_two_lambdas_on_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("AOTX_CACHE_DIR", str(tmp_path))
    x, t = np.array([4.3, -1.5, 0.2]), np.ones(3)
    out0, tan0 = jvp(PAIR[0], (x,), (t,))
    out1, tan1 = jvp(PAIR[1], (x,), (t,))
    np.testing.assert_array_equal(out0, np.floor(x) * x)
    np.testing.assert_array_equal(tan0, np.floor(x))
    np.testing.assert_array_equal(out1, np.ceil(x) * x)
    np.testing.assert_array_equal(tan1, np.ceil(x))


def test_jit_of_two_lambdas_on_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("AOTX_CACHE_DIR", str(tmp_path))
    x = np.array([4.3, -1.5, 0.2])
    np.testing.assert_array_equal(jit(PAIR[0])(x), np.floor(x) * x)
    np.testing.assert_array_equal(jit(PAIR[1])(x), np.ceil(x) * x)


def square_norm(x):
    return np.sum(x * x)


def test_every_specialization_of_a_transform_kernel_is_cached(monkeypatch, tmp_path):
    """Tracing a transform must not leave state on its tracer that the key cannot describe."""
    import compiler
    from compiler import grad
    monkeypatch.setenv("AOTX_CACHE_DIR", str(tmp_path))
    g = grad(square_norm)
    for n in (3, 4):
        np.testing.assert_array_equal(g(np.ones(n)), np.full(n, 2.0))
    assert compiler.diagnostics()["cache_writes"] == 2
