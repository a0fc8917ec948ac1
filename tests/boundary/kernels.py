"""Signed kernels for the boundary tests: compiled in process by importing this module,
and built into a library by ``aotx build`` (tests/boundary/test_arguments.py)."""
import numpy as np

from compiler import jit


@jit(signature="f64[n], f64[n]")
def axpy(x, w):
    return x * w + 1.0


@jit(signature="f64[n, 3]")
def rowsum(a):
    return a.sum(axis=1)


@jit(signature="i64, i64[n]")
def shift(s, k):
    return k + s


@jit(signature="f32[n]")
def half(x):
    return x * np.float32(0.5)


@jit(signature="u8[n], f16[n]")
def small(c, h):
    return c // 3 + c, h * h + 1.0, (c > 100) | (h < 0), c * h

@jit(signature="f64[n]")
def quartic(x):
    n = x.shape[0]
    return np.ones((n, n, n, n)).sum() + x.sum()
