"""np.linalg.eig and np.linalg.eigvals: general (non-symmetric) eigenproblems.

The result dtype is static: always complex (complex64 for float32 and complex64 input,
complex128 otherwise), also where NumPy, whose dtype depends on the values, returns a
real array because every eigenvalue is real. The order of the eigenvalues is the one of
the generated QR iteration for small static matrices and LAPACK's (NumPy's) otherwise
(docs/linalg.md, "General eigenproblems").
"""
from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from compiler.errors import ShapeMismatchError
from compiler.frontend import arrays as A
from compiler.frontend.values import Reject, Staged
from compiler.ir.builder import Builder
from compiler.primitives import ops
from compiler.primitives.eig import eig_values, eig_vectors

#: NumPy 2's result type of np.linalg.eig (a namedtuple), or one of the same shape
EigResult: Any = getattr(getattr(np.linalg, "_linalg", None), "EigResult", None) \
    or namedtuple("EigResult", ["eigenvalues", "eigenvectors"])


def _operand(b: Builder, a: Any, name: str) -> Staged:
    x = A.lift(b, A.normalize_operand(b, a))
    if x.ndim < 2:
        raise Reject(ShapeMismatchError, f"np.linalg.{name}: {x.ndim}-dimensional array given. "
                     "Array must be at least two-dimensional")
    n = x.shape[-1]
    if x.shape[-2] != n:
        raise Reject(ShapeMismatchError, f"np.linalg.{name}: last 2 dimensions of the array must "
                     f"be square, got {A.fmt_shape(x.shape)}")
    if x.dtype == np.float16:
        raise Reject(TypeError, "array type float16 is unsupported in linalg",
                     "convert to float32 first")
    if x.dtype not in (np.float32, np.float64, np.complex64, np.complex128):
        x = A.convert(b, x, np.dtype(np.complex128 if x.dtype.kind == "c" else np.float64))
    if x.dtype.kind == "c":
        finite = ops.and_(b, ops.isfinite(b, ops.real(b, x.value)), ops.isfinite(b, ops.imag(b, x.value)))
    else:
        finite = ops.isfinite(b, x.value)
    allfinite = ops.reduce(ops.reduce_and_p, b, finite, list(range(x.ndim)))
    ops.check(b, allfinite, "LinAlgError", "Array must not contain infs or NaNs")
    return x


def _converged(b: Builder, ok: Any) -> None:
    every = ops.reduce(ops.reduce_and_p, b, ok, list(range(ok.type.ndim))) if ok.type.ndim else ok
    ops.check(b, every, "LinAlgError", "Eigenvalues did not converge")


def eigvals(b: Builder, a: Any) -> Staged:
    z = _operand(b, a, "eigvals")
    w, ok = eig_values(b, z.value)
    _converged(b, ok)
    return Staged(w)


def eig(b: Builder, a: Any) -> Any:
    z = _operand(b, a, "eig")
    w, v, _, ok = eig_vectors(b, z.value)
    _converged(b, ok)
    return EigResult(Staged(w), Staged(v))
