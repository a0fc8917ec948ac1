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
from compiler.frontend import linalg as L
from compiler.frontend.values import Reject, Staged
from compiler.ir.builder import Builder
from compiler.ir.core import Value
from compiler.ir.types import F64, TensorType
from compiler.primitives import ops
from compiler.primitives.matrices import mH, matmul
from compiler.primitives.spectral import real_dtype, svd_sizes_known
from compiler.primitives.spectral_lapack import check_converged

EIGH_FAILED = "Eigenvalues did not converge"
SVD_FAILED = "SVD did not converge"

#: NumPy's result namedtuples (w.eigenvalues, res.U, ...), built around staged values
EighResult: Any = type(np.linalg.eigh(np.eye(1)))
SVDResult: Any = type(np.linalg.svd(np.eye(1)))


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


def svd_operand(b: Builder, x: Any, name: str) -> Value:
    """A matrix operand of an SVD: the generated code must know which side is the longer."""
    v = matrix_operand(b, x, name)
    m, n = v.type.shape[-2:]
    if not svd_sizes_known(m, n):
        raise Reject(UnsupportedError, f"np.linalg.{name} of {A.fmt_shape(v.type.shape)} matrices: "
                     "which of the two sizes is the larger must be known at compile time",
                     "give the matrices a static size or equal symbolic sizes in the signature")
    return v


def hermitian_from(b: Builder, a: Value, uplo: str) -> Value:
    """The Hermitian matrix LAPACK reads from one triangle of a (the diagonal's real part)."""
    if uplo not in ("L", "U"):
        raise Reject(UnsupportedError, f"UPLO argument must be 'L' or 'U', got {uplo!r}", None)
    shape, nb = tuple(a.type.shape), a.type.ndim - 2
    i, j = ops.iota(b, np.int64, shape, nb), ops.iota(b, np.int64, shape, nb + 1)
    keep = ops.ge(b, i, j) if uplo == "L" else ops.le(b, i, j)
    return ops.select(b, keep, a, mH(b, a))


def eigh(b: Builder, a: Any, UPLO: str = "L") -> Any:   # noqa: N803 - NumPy's name
    v = matrix_operand(b, a, "eigh", square=True)
    h = hermitian_from(b, v, UPLO)
    w, vec = ops.eigh(b, h)
    check_converged(b, h, w, EIGH_FAILED, svd=False)
    return EighResult(Staged(w), Staged(vec))


def eigvalsh(b: Builder, a: Any, UPLO: str = "L") -> Staged:  # noqa: N803
    v = matrix_operand(b, a, "eigvalsh", square=True)
    h = hermitian_from(b, v, UPLO)
    w, _ = ops.eigh(b, h)
    check_converged(b, h, w, EIGH_FAILED, svd=False)
    return Staged(w)


def svd(b: Builder, a: Any, full_matrices: bool = True, compute_uv: bool = True,
        hermitian: bool = False) -> Any:
    v = svd_operand(b, a, "svd")
    if hermitian:
        return _svd_hermitian(b, v, full_matrices, compute_uv)
    L.check_svd_input(b, v)
    if not compute_uv:
        (s,) = ops.svd(b, v, full_matrices, False)
        check_converged(b, v, s, SVD_FAILED, svd=True)
        return Staged(s)
    s, u, vh = ops.svd(b, v, full_matrices, True)
    check_converged(b, v, s, SVD_FAILED, svd=True)
    return SVDResult(Staged(u), Staged(s), Staged(vh))


def svdvals(b: Builder, x: Any) -> Staged:
    v = svd_operand(b, x, "svdvals")
    L.check_svd_input(b, v)
    (s,) = ops.svd(b, v, False, False)
    check_converged(b, v, s, SVD_FAILED, svd=True)
    return Staged(s)


def _svd_hermitian(b: Builder, a: Value, full_matrices: bool, compute_uv: bool) -> Any:
    """NumPy's hermitian=True: eigh, |w| sorted descending, u = v, vh = (v sign(w))ᴴ."""
    h = hermitian_from(b, a, "L")
    w, v = ops.eigh(b, h)
    check_converged(b, h, w, EIGH_FAILED, svd=False)
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


# ---- built on the SVD: pinv, lstsq, matrix_rank, cond --------------------------------------

def _eps(dtype: Any) -> float:
    return float(np.finfo(real_dtype(dtype)).eps)


def _static_or_staged(b: Builder, x: Any, dtype: Any, name: str) -> Value:
    """A tolerance argument (a Python number or an array) as a value of `dtype`."""
    v = A.lift(b, A.normalize_operand(b, x))
    if v.dtype.kind == "c":
        raise Reject(UnsupportedError, f"{name} must be real", None)
    return A.convert(b, v, np.dtype(dtype)).value


def _cutoff(b: Builder, s: Value, rel: Value) -> Value:
    """rel * max(s) over the last axis, broadcast back to s's shape: where s counts as zero."""
    nb = s.type.ndim - 1
    k = s.type.shape[-1]
    smax = ops.reduce_max(b, s, [nb]) if k != 0 else ops.full(b, 0, TensorType(s.type.dtype,
                                                                                tuple(s.type.shape[:-1])))
    batch = tuple(s.type.shape[:-1])
    rel = A.broadcast_value(b, rel, batch) if tuple(rel.type.shape) != batch else rel
    return ops.broadcast_in_dim(b, ops.mul(b, rel, smax), tuple(s.type.shape), tuple(range(nb)))


def _inverse_values(b: Builder, s: Value, cut: Value) -> Value:
    big = ops.gt(b, s, cut)
    safe = ops.select(b, big, s, ops.full_like(b, 1, s))
    return ops.select(b, big, ops.div(b, ops.full_like(b, 1, s), safe), ops.full_like(b, 0, s))


def _scale_cols(b: Builder, x: Value, v: Value) -> Value:
    nb = v.type.ndim - 1
    return ops.mul(b, x, ops.broadcast_in_dim(b, A.convert_value(b, v, x.type.dtype), x.type.shape,
                                              tuple(range(nb)) + (nb + 1,)))


def _thin_svd(b: Builder, a: Value, hermitian: bool) -> tuple[Value, Value, Value]:
    if hermitian:
        r = _svd_hermitian(b, a, False, True)
        return r[1].value, r[0].value, r[2].value
    L.check_svd_input(b, a)
    s, u, vh = ops.svd(b, a, False, True)
    check_converged(b, a, s, SVD_FAILED, svd=True)
    return s, u, vh


_NO = object()


def pinv(b: Builder, a: Any, rcond: Any = None, hermitian: bool = False, *, rtol: Any = _NO) -> Staged:
    """np.linalg.pinv: V diag(1/s) Uᴴ, singular values at or below rcond * max(s) dropped."""
    v = svd_operand(b, a, "pinv")
    rd = real_dtype(v.type.dtype)
    if rtol is not _NO and rcond is not None:
        raise Reject(UnsupportedError, "`rtol` and `rcond` can't be both set.", None)
    rel = rcond if rcond is not None else None if rtol is _NO else rtol
    m, n = v.type.shape[-2:]
    if rel is None:     # NumPy's defaults: rcond 1e-15; rtol=None: max(m, n) * eps
        rel = 1e-15 if rtol is _NO else _max_mn(m, n) * _eps(rd)
    s, u, vh = _thin_svd(b, v, hermitian)
    cut = _cutoff(b, s, _static_or_staged(b, rel, rd, "rcond"))
    sinv = _inverse_values(b, s, cut)
    return Staged(matmul(b, _scale_cols(b, mH(b, vh), sinv), mH(b, u)))


def _max_mn(m: Any, n: Any) -> int:
    if not (isinstance(m, int) and isinstance(n, int)):
        raise Reject(UnsupportedError, "the default tolerance needs static matrix sizes",
                     "pass rtol= (or rcond=, tol=) explicitly")
    return max(m, n)


def lstsq(b: Builder, a: Any, y: Any, rcond: Any = None) -> tuple:
    """np.linalg.lstsq: (x, residuals, rank, s) through the SVD. residuals has NumPy's
    full-rank shape ((K,) or (1,) for m > n, (0,) otherwise): where a is rank-deficient and
    m > n, NumPy returns an empty array (a shape that depends on the data); the compiled
    code returns the residual sums there too (docs/linalg.md)."""
    av = svd_operand(b, a, "lstsq")
    yv = A.lift(b, A.normalize_operand(b, y))
    if av.type.ndim != 2:
        raise Reject(ShapeMismatchError, f"{av.type.ndim}-dimensional array given. Array must be "
                     "two-dimensional", "np.linalg.lstsq takes one matrix (use compiler.vmap for a stack)")
    if yv.ndim not in (1, 2):
        raise Reject(ShapeMismatchError, f"{yv.ndim}-dimensional array given. Array must be one or "
                     "two-dimensional", None)
    dtype = A.result_dtype([Staged(av), yv])
    if dtype.kind not in "fc":
        dtype = np.dtype(F64)
    av = A.convert_value(b, av, dtype)
    yv2 = A.convert(b, yv, dtype).value
    m, n = av.type.shape
    if yv2.type.shape[0] != m:
        raise Reject(ShapeMismatchError, f"Incompatible dimensions: a has {m} rows, b has "
                     f"{yv2.type.shape[0]}", None)
    vec = yv2.type.ndim == 1
    if vec:
        yv2 = ops.reshape(b, yv2, (m, 1))
    rd = real_dtype(dtype)
    rel = _max_mn(m, n) * _eps(rd) if rcond is None else rcond
    L.check_svd_input(b, av, "SVD did not converge in Linear Least Squares", finite=True)
    L.check_svd_input(b, yv2, "SVD did not converge in Linear Least Squares", finite=True)
    s, u, vh = ops.svd(b, av, False, True)
    check_converged(b, av, s, "SVD did not converge in Linear Least Squares", svd=True)
    cut = _cutoff(b, s, _static_or_staged(b, rel, rd, "rcond"))
    sinv = _inverse_values(b, s, cut)
    x = matmul(b, _scale_cols(b, mH(b, vh), sinv), matmul(b, mH(b, u), yv2))
    rank = ops.reduce_sum(b, ops.convert(b, ops.gt(b, s, cut), np.int32), [0])
    k = yv2.type.shape[1]
    if isinstance(m, int) and isinstance(n, int) and m > n:
        r = ops.sub(b, matmul(b, av, x), yv2)
        re = ops.real(b, r) if dtype.kind == "c" else r
        im = ops.imag(b, r) if dtype.kind == "c" else None
        sq = ops.mul(b, re, re) if im is None else ops.add(b, ops.mul(b, re, re), ops.mul(b, im, im))
        res = ops.reduce_sum(b, sq, [0])
        res = ops.reshape(b, res, (1,) if vec else (k,))
    elif isinstance(m, int) and isinstance(n, int):
        res = ops.full(b, 0, TensorType(rd, (0,)))
    else:
        raise Reject(UnsupportedError, "np.linalg.lstsq needs static matrix sizes (the residuals' "
                     "shape depends on them)", "x = np.linalg.pinv(a) @ b works for any size")
    if vec:
        x = ops.reshape(b, x, (n,))
    return (Staged(x), Staged(res), Staged(rank), Staged(s))


def matrix_rank(b: Builder, a: Any, tol: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Staged:
    """np.linalg.matrix_rank: the number of singular values above the tolerance (default
    max(s) * max(m, n) * eps; tol absolute; rtol relative to max(s))."""
    x = A.lift(b, A.normalize_operand(b, a))
    if x.ndim < 2:
        nz = ops.reduce(ops.reduce_or_p, b, ops.ne(b, x.value, ops.full_like(b, 0, x.value)),
                        list(range(x.ndim))) if x.ndim else ops.ne(b, x.value, ops.full_like(b, 0, x.value))
        return Staged(ops.convert(b, nz, np.int64))
    if tol is not None and rtol is not None:
        raise Reject(UnsupportedError, "`tol` and `rtol` can't be both set.", None)
    v = svd_operand(b, x, "matrix_rank")
    rd = real_dtype(v.type.dtype)
    if hermitian:
        h = hermitian_from(b, v, "L")
        w, _ = ops.eigh(b, h)
        check_converged(b, h, w, EIGH_FAILED, svd=False)
        s = ops.abs_(b, w)
    else:
        L.check_svd_input(b, v)
        (s,) = ops.svd(b, v, False, False)
        check_converged(b, v, s, SVD_FAILED, svd=True)
    nb = s.type.ndim - 1
    if tol is None:
        m, n = v.type.shape[-2:]
        rel = _max_mn(m, n) * _eps(rd) if rtol is None else rtol
        cut = _cutoff(b, s, _static_or_staged(b, rel, rd, "rtol"))
    else:
        t = _static_or_staged(b, tol, rd, "tol")
        batch = tuple(s.type.shape[:-1])
        t = A.broadcast_value(b, t, batch) if tuple(t.type.shape) != batch else t
        cut = ops.broadcast_in_dim(b, t, tuple(s.type.shape), tuple(range(nb)))
    return Staged(ops.reduce_sum(b, ops.convert(b, ops.gt(b, s, cut), np.int64), [nb]))


def cond(b: Builder, x: Any, p: Any = None) -> Staged:
    """np.linalg.cond: s_max / s_min for p None, 2 (and its inverse for -2); otherwise
    norm(x, p) * norm(inv(x), p), the inverse through the SVD (inf for a singular matrix)."""
    v = svd_operand(b, x, "cond")
    nb = v.type.ndim - 2
    if p in (None, 2, -2):
        L.check_svd_input(b, v)
        (s,) = ops.svd(b, v, False, False)
        check_converged(b, v, s, SVD_FAILED, svd=True)
        k = s.type.shape[-1]
        first = ops.reshape(b, ops.slice_(b, s, [0] * nb + [0], list(s.type.shape[:-1]) + [1]),
                            tuple(s.type.shape[:-1]))
        last = ops.reshape(b, ops.slice_(b, s, [0] * nb + [k - 1], list(s.type.shape[:-1]) + [k]),
                           tuple(s.type.shape[:-1]))
        return Staged(ops.div(b, first, last) if p != -2 else ops.div(b, last, first))
    if p not in ("fro", "nuc", 1, -1, np.inf, -np.inf):
        raise Reject(UnsupportedError, f"Invalid norm order {p!r} for matrices", None)
    if v.type.shape[-1] != v.type.shape[-2]:
        raise Reject(ShapeMismatchError, "Last 2 dimensions of the array must be square", None)
    s, u, vh = ops.svd(b, v, False, True)
    zero = ops.eq(b, s, ops.full_like(b, 0, s))
    sinv = ops.div(b, ops.full_like(b, 1, s), s)
    inv = matmul(b, _scale_cols(b, mH(b, vh), sinv), mH(b, u))
    axes = (nb, nb + 1)
    r = ops.mul(b, L.norm(b, Staged(v), p, axes).value, L.norm(b, Staged(inv), p, axes).value)
    singular = ops.reduce(ops.reduce_or_p, b, zero, [nb])
    return Staged(ops.select(b, singular, ops.full_like(b, float("inf"), r), r))


__all__ = ["eigh", "eigvalsh", "svd", "svdvals", "pinv", "lstsq", "matrix_rank", "cond"]
