"""Kernels for the C host example: `aotx build examples/c_host/kernels.py -o build/`.

Each function carries a signature, so `aotx build` compiles it; `n` is a
symbolic dim: one compiled kernel serves every size.
"""
import numpy as np

from compiler import jit


@jit(signature="f64[n]")
def wave(x):
    """exp(-x^2) sin(3x), elementwise."""
    return np.exp(-x * x) * np.sin(3.0 * x)


@jit(signature="f64[n, 3]")
def stats(points):
    """Column means of an (n, 3) array, and the largest row norm."""
    return points.mean(axis=0), np.sqrt((points * points).sum(axis=1)).max()


@jit(signature="f64[n]")
def diffs(x):
    """x[1:] - x[:-1]: the output has n - 1 elements."""
    return x[1:] - x[:-1]
