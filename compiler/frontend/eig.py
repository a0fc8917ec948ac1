"""np.linalg.eig and np.linalg.eigvals: general (non-symmetric) eigenproblems.

The result dtype is static: always complex (complex64 for float32 and complex64 input,
complex128 otherwise), also where NumPy, whose dtype depends on the values, returns a
real array because every eigenvalue is real. The order of the eigenvalues is the one of
the generated QR iteration (docs/linalg.md, "General eigenproblems").
"""
from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from compiler.errors import ShapeMismatchError, UnsupportedError
from compiler.frontend import arrays as A
from compiler.frontend.values import Reject, Staged
from compiler.ir.builder import Builder
from compiler.primitives import ops
from compiler.primitives.eig import UNROLL_MAX, eig_values, eig_vectors

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
    if not isinstance(n, int) or n > UNROLL_MAX:
        raise Reject(UnsupportedError, f"np.linalg.{name} of {A.fmt_shape(x.shape)} matrices: only "
                     f"matrices of a static size up to {UNROLL_MAX}x{UNROLL_MAX} compile today",
                     "call np.linalg." + name + " outside the compiled function for larger "
                     "or symbolic sizes")
    if x.dtype == np.float16:
        raise Reject(TypeError, "array type float16 is unsupported in linalg",
                     "convert to float32 first")
    single = x.dtype in (np.float32, np.complex64)
    ctype = np.dtype(np.complex64 if single else np.complex128)
    z = A.convert(b, x, ctype)
    finite = ops.and_(b, ops.isfinite(b, ops.real(b, z.value)), ops.isfinite(b, ops.imag(b, z.value)))
    allfinite = ops.reduce(ops.reduce_and_p, b, finite, list(range(z.ndim)))
    ops.check(b, allfinite, "LinAlgError", "Array must not contain infs or NaNs")
    return z


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
