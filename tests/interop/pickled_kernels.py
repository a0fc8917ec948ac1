"""Kernels built by `aotx build` for tests/interop/test_pickling.py (runtime.load'ed, then pickled)."""
import numpy as np

from compiler import jit


@jit(signature="f64[n], f64[n] -> f64[n]")
def affine(x, y):
    return np.sin(x) * y + 1.0
