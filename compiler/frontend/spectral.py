"""np.linalg.eigh, eigvalsh, svd, svdvals and what is built on them: pinv, lstsq,
matrix_rank and cond (docs/linalg.md, "Symmetric eigenproblems and the SVD").

Each works on stacks ``[..., m, n]`` as NumPy does, in float32, float64, complex64 and
complex128 (integer and bool inputs compute in float64, as NumPy's linalg does; float16 is
refused, as NumPy refuses it). The two primitives are ``eigh`` and ``svd``
(compiler/primitives/spectral.py); the rest is written with them here.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from compiler.errors import ShapeMismatchError, UnsupportedError
from compiler.frontend import arrays as A
from compiler.frontend.values import Reject, Staged
from compiler.ir.builder import Builder
from compiler.ir.core import Value
from compiler.ir.types import F64
from compiler.primitives import ops
from compiler.primitives.matrices import mH, matmul
from compiler.primitives.spectral import real_dtype

EighResult = type(np.linalg.eigh(np.eye(1)))
SVDResult = type(np.linalg.svd(np.eye(1)))
LstsqResult = tuple


def matrix_operand(b: Builder, x: Any, name: str, square: bool = False) -> Value:
    """x as a stack of matrices of an inexact dtype NumPy's linalg accepts."""
    x = A.lift(b, A.normalize_operand(b, x))
    if x.dtype.kind not in "fc":
        x = A.convert(b, x, F64)
    if x.dtype == np.float16 or x.dtype.kind == "f" and x.dtype.itemsize > 8:
        raise Reject(UnsupportedError, f"np.linalg.{name}: array type {x.dtype} is unsupported in linalg",
                     "convert to float32 or float64 first (NumPy refuses it too)")
    if x.ndim < 2:
        raise Reject(ShapeMismatchError,
                     f"np.linalg.{name}: {x.ndim}-dimensional array given. Array must be at least "
                     "two-dimensional", "pass a matrix or a stack of matrices [..., m, n]")
    if square and x.value.type.shape[-1] != x.value.type.shape[-2]:
        raise Reject(ShapeMismatchError, f"np.linalg.{name}: last 2 dimensions of the array must be square "
                     f"(got {A.fmt_shape(x.value.type.shape)})", "pass square matrices [..., n, n]")
    return x.value


def hermitian_from(b: Builder, a: Value, uplo: str) -> Value:
    """The Hermitian matrix LAPACK reads from one triangle of a (the diagonal's real part)."""
    if uplo not in ("L", "U"):
        raise Reject(ValueError, f"UPLO argument must be 'L' or 'U', got {uplo!r}", None)
    shape, nb = tuple(a.type.shape), a.type.ndim - 2
    i, j = ops.iota(b, np.int64, shape, nb), ops.iota(b, np.int64, shape, nb + 1)
    keep = ops.ge(b, i, j) if uplo == "L" else ops.le(b, i, j)
    return ops.select(b, keep, a, mH(b, a))


def eigh(b: Builder, a: Any, UPLO: str = "L") -> Any:   # noqa: N803 - NumPy's name
    v = matrix_operand(b, a, "eigh", square=True)
    w, vec = ops.eigh(b, hermitian_from(b, v, UPLO))
    return EighResult(Staged(w), Staged(vec))


def eigvalsh(b: Builder, a: Any, UPLO: str = "L") -> Staged:  # noqa: N803
    v = matrix_operand(b, a, "eigvalsh", square=True)
    w, _ = ops.eigh(b, hermitian_from(b, v, UPLO))
    return Staged(w)


def svd(b: Builder, a: Any, full_matrices: bool = True, compute_uv: bool = True,
        hermitian: bool = False) -> Any:
    v = matrix_operand(b, a, "svd")
    if hermitian:
        return _svd_hermitian(b, v, full_matrices, compute_uv)
    if not compute_uv:
        (s,) = ops.svd(b, v, full_matrices, False)
        return Staged(s)
    s, u, vh = ops.svd(b, v, full_matrices, True)
    return SVDResult(Staged(u), Staged(s), Staged(vh))


def svdvals(b: Builder, x: Any) -> Staged:
    v = matrix_operand(b, x, "svdvals")
    (s,) = ops.svd(b, v, False, False)
    return Staged(s)


def _svd_hermitian(b: Builder, a: Value, full_matrices: bool, compute_uv: bool) -> Any:
    """NumPy's hermitian=True: eigh, |w| sorted descending, u = v, vh = (v sign(w))ᴴ."""
    w, v = ops.eigh(b, hermitian_from(b, a, "L"))
    nb = w.type.ndim - 1
    mag = ops.abs_(b, w)
    s, (v, sg) = _sort_desc(b, mag, v, ops.sign(b, w))
    if not compute_uv:
        return Staged(s)
    vs = ops.mul(b, v, ops.broadcast_in_dim(b, A.convert_value(b, sg, a.type.dtype), v.type.shape,
                                            tuple(range(nb)) + (nb + 1,)))
    return SVDResult(Staged(v), Staged(s), Staged(mH(b, vs)))


def _sort_desc(b: Builder, key: Value, mat: Value, vec: Value) -> tuple[Value, tuple[Value, Value]]:
    """key [..., n] sorted descending (stable), the columns of mat and the entries of vec along."""
    nb = key.type.ndim - 1
    n = key.type.shape[-1]
    sq = tuple(key.type.shape) + (n,)
    rows = tuple(range(nb)) + (nb,)
    cols = tuple(range(nb)) + (nb + 1,)
    ki, kj = ops.broadcast_in_dim(b, key, sq, rows), ops.broadcast_in_dim(b, key, sq, cols)
    ii, jj = ops.iota(b, np.int64, sq, nb), ops.iota(b, np.int64, sq, nb + 1)
    before = ops.or_(b, ops.gt(b, kj, ki), ops.and_(b, ops.eq(b, kj, ki), ops.lt(b, jj, ii)))
    rank = ops.reduce_sum(b, ops.convert(b, before, np.int64), [nb + 1])
    perm = ops.eq(b, ops.broadcast_in_dim(b, rank, sq, rows), jj)
    pk = ops.convert(b, perm, key.type.dtype)
    sk = ops.reduce_sum(b, ops.mul(b, ki, pk), [nb])
    pv = ops.convert(b, perm, vec.type.dtype)
    sv = ops.reduce_sum(b, ops.mul(b, ops.broadcast_in_dim(b, vec, sq, rows), pv), [nb])
    return sk, (matmul(b, mat, ops.convert(b, perm, mat.type.dtype)), sv)


__all__ = ["eigh", "eigvalsh", "svd", "svdvals", "real_dtype"]
