"""Oracles: central finite differences."""
from __future__ import annotations

import numpy as np


def fd_jacobian(f, x, eps=1e-6):
    """d f(x) / d x by central differences: shape (*f(x).shape, *x.shape)."""
    x = np.asarray(x, dtype=np.float64)
    y0 = np.asarray(f(x))
    jac = np.zeros(y0.shape + x.shape)
    for idx in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[idx] = eps
        jac[(...,) + idx] = (np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * eps)
    return jac
