"""np.linalg.cholesky and np.linalg.qr (through the ``cholesky`` and ``qr`` primitives of
compiler/primitives/factor.py), and the small functions of np.linalg and NumPy around
them: np.cross, np.kron, np.linalg.cross, np.linalg.outer, np.linalg.trace,
np.linalg.diagonal, np.linalg.vecdot (and np.vecdot), np.linalg.matrix_transpose.

NumPy's rules are kept: integer input is factored in float64, float16 is refused as
NumPy refuses it, stacks ``[..., m, n]`` are factored matrix by matrix, and a matrix
that is not positive definite raises np.linalg.LinAlgError from the compiled code
(every matrix of a stack, and every element of a vmap, is checked).
"""
from __future__ import annotations

import warnings
from collections import namedtuple
from typing import Any

import numpy as np

from compiler.errors import ShapeMismatchError, UnsupportedError
from compiler.frontend import arrays as A
from compiler.frontend import shapes as S
from compiler.frontend.indexing import getitem
from compiler.frontend.linalg import outer as core_outer
from compiler.frontend.linalg import trace as core_trace
from compiler.frontend.reductions import reduce
from compiler.frontend.ufuncs import binary, conj, unary
from compiler.frontend.values import Reject, Staged
from compiler.ir.builder import Builder
from compiler.ir.types import F16, F64
from compiler.primitives import matrices as M
from compiler.primitives import ops

#: NumPy's result type of np.linalg.qr (a namedtuple with fields Q and R)
QRResult: Any = getattr(getattr(np.linalg, "_linalg", None), "QRResult", None) or \
    namedtuple("QRResult", ["Q", "R"])


def _matrices(b: Builder, a: Any) -> Staged:
    """`a` as a stack of matrices of a float or complex dtype, as np.linalg takes it."""
    x = A.lift(b, A.normalize_operand(b, a))
    if x.ndim < 2:
        raise Reject(ShapeMismatchError, f"{x.ndim}-dimensional array given. Array must be at "
                     "least two-dimensional (NumPy raises np.linalg.LinAlgError)")
    if x.dtype == F16:
        raise Reject(UnsupportedError, "array type float16 is unsupported in linalg",
                     "convert to float32 first: x.astype(np.float32)")
    if x.dtype.kind in "biu":
        x = A.convert(b, x, F64)
    return x


def cholesky(b: Builder, a: Any, *, upper: bool = False) -> Staged:
    """np.linalg.cholesky: L with a = L L^H from a's lower triangle (upper=True: U with
    a = U^H U from its upper triangle); np.linalg.LinAlgError unless positive definite."""
    x = _matrices(b, a)
    if x.shape[-1] != x.shape[-2]:
        raise Reject(ShapeMismatchError, "Last 2 dimensions of the array must be square (got "
                     f"{A.fmt_shape(x.shape)}; NumPy raises np.linalg.LinAlgError)")
    v = M.mH(b, x.value) if upper else x.value
    low, ok = ops.cholesky(b, v)
    ops.check(b, ok, "LinAlgError", "Matrix is not positive definite")
    return Staged(M.mH(b, low) if upper else low)


_QR_MODES = ("reduced", "complete", "r")


def qr(b: Builder, a: Any, mode: str = "reduced") -> Any:
    """np.linalg.qr with mode 'reduced' (Q, R), 'complete' (Q, R) or 'r' (R)."""
    if mode == "full":
        warnings.warn("The 'full' option is deprecated in favor of 'reduced'.\nFor backward "
                      "compatibility let mode default.", DeprecationWarning, stacklevel=2)
        mode = "reduced"
    if mode in ("raw", "economic"):
        raise Reject(UnsupportedError, f"np.linalg.qr(mode={mode!r}) is not supported: it returns "
                     "LAPACK's internal Householder representation",
                     "use mode='reduced', 'complete' or 'r'")
    if mode not in _QR_MODES:
        raise Reject(UnsupportedError, f"Unrecognized mode '{mode}'",
                     "np.linalg.qr takes mode='reduced', 'complete' or 'r'")
    x = _matrices(b, a)
    q, r = ops.qr(b, x.value, full=mode == "complete")
    if mode == "r":
        return Staged(r)
    return QRResult(Staged(q), Staged(r))


# ---- the small functions ----------------------------------------------------------------

def _component(b: Builder, x: Staged, i: int) -> Staged:
    return getitem(b, x, (Ellipsis, i))


def cross(b: Builder, a: Any, b_: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: Any = None) -> Staged:
    """np.cross of 3-vectors (and NumPy's deprecated 2-vectors) along the given axes."""
    if axis is not None:
        axisa = axisb = axisc = axis
    x, y = (A.lift(b, A.normalize_operand(b, v)) for v in (a, b_))
    if x.ndim < 1 or y.ndim < 1:
        raise Reject(ShapeMismatchError, "At least one array has zero dimension")
    x, y = S.moveaxis(b, x, axisa, -1), S.moveaxis(b, y, axisb, -1)
    if x.shape[-1] not in (2, 3) or y.shape[-1] not in (2, 3):
        raise Reject(ShapeMismatchError, "incompatible dimensions for cross product\n"
                     "(dimension must be 2 or 3)")
    na, nb = x.shape[-1], y.shape[-1]
    if na == 2 or nb == 2:
        warnings.warn("Arrays of 2-dimensional vectors are deprecated. Use arrays of "
                      "3-dimensional vectors instead. (deprecated in NumPy 2.0)",
                      DeprecationWarning, stacklevel=2)
    xs = [_component(b, x, i) for i in range(na)]
    ys = [_component(b, y, i) for i in range(nb)]
    mul = lambda p, q: binary(b, "multiply", p, q)        # noqa: E731
    sub = lambda p, q: binary(b, "subtract", p, q)        # noqa: E731
    z = sub(mul(xs[0], ys[1]), mul(xs[1], ys[0]))
    if na == 2 and nb == 2:
        return z
    if na == 3 and nb == 3:
        parts = [sub(mul(xs[1], ys[2]), mul(xs[2], ys[1])),
                 sub(mul(xs[2], ys[0]), mul(xs[0], ys[2])), z]
    elif na == 2:
        parts = [mul(xs[1], ys[2]), unary(b, "negative", mul(xs[0], ys[2])), z]
    else:
        parts = [unary(b, "negative", mul(xs[2], ys[1])), mul(xs[2], ys[0]), z]
    shape = A.broadcast_shapes(*(p.shape for p in parts))
    dtype = A.result_dtype(parts)
    parts = [A.convert(b, Staged(A.broadcast_value(b, p.value, shape)), dtype) for p in parts]
    out = S.stack(b, parts, -1)
    return S.moveaxis(b, out, -1, axisc)


def linalg_cross(b: Builder, x1: Any, x2: Any, *, axis: int = -1) -> Staged:
    """np.linalg.cross: 3-vectors only."""
    x, y = (A.lift(b, A.normalize_operand(b, v)) for v in (x1, x2))
    dx = x.shape[axis] if x.ndim else None
    dy = y.shape[axis] if y.ndim else None
    if dx != 3 or dy != 3:
        raise Reject(ShapeMismatchError, "Both input arrays must be (arrays of) 3-dimensional "
                     f"vectors, but they are {dx} and {dy} dimensional instead.")
    return cross(b, x, y, axis=axis)


def kron(b: Builder, a: Any, b_: Any) -> Staged:
    """np.kron: every product a[i] * b[j] at index i * b.shape + j (axes interleaved)."""
    x, y = (A.lift(b, A.normalize_operand(b, v)) for v in (a, b_))
    if x.ndim == 0 or y.ndim == 0:
        return binary(b, "multiply", x, y)
    nd = max(x.ndim, y.ndim)
    xs = (1,) * (nd - x.ndim) + tuple(x.shape)
    ys = (1,) * (nd - y.ndim) + tuple(y.shape)
    xi = Staged(A.reshape_value(b, x.value, tuple(d for s in xs for d in (s, 1))))
    yi = Staged(A.reshape_value(b, y.value, tuple(d for s in ys for d in (1, s))))
    out = binary(b, "multiply", xi, yi)
    return S.reshape(b, out, tuple(S.prod((p, q)) for p, q in zip(xs, ys)))


def _stacked(x: Staged, name: str) -> None:
    if x.ndim < 2:
        raise Reject(ShapeMismatchError, f"{x.ndim}-dimensional array given. Array must be at "
                     f"least two-dimensional ({name}; NumPy raises np.linalg.LinAlgError)")


def linalg_trace(b: Builder, x: Any, *, offset: int = 0, dtype: Any = None) -> Staged:
    """np.linalg.trace: the trace of each matrix of a stack (the last two axes)."""
    v = A.lift(b, A.normalize_operand(b, x))
    _stacked(v, "np.linalg.trace")
    return core_trace(b, v, offset, -2, -1, dtype)


def linalg_diagonal(b: Builder, x: Any, *, offset: int = 0) -> Staged:
    v = A.lift(b, A.normalize_operand(b, x))
    _stacked(v, "np.linalg.diagonal")
    return S.diagonal(b, v, offset, -2, -1)


def linalg_outer(b: Builder, x1: Any, x2: Any) -> Staged:
    x, y = (A.lift(b, A.normalize_operand(b, v)) for v in (x1, x2))
    if x.ndim != 1 or y.ndim != 1:
        raise Reject(ShapeMismatchError, "Input arrays must be one-dimensional, but they are "
                     f"x1.ndim={x.ndim} and x2.ndim={y.ndim}.")
    return core_outer(b, x, y)


def vecdot(b: Builder, x1: Any, x2: Any, *, axis: int = -1) -> Staged:
    """np.linalg.vecdot / np.vecdot: sum(conj(x1) * x2) along `axis`, broadcasting."""
    x, y = (A.lift(b, A.normalize_operand(b, v)) for v in (x1, x2))
    if x.ndim == 0 or y.ndim == 0:
        raise Reject(ShapeMismatchError, "vecdot: Input operand does not have enough dimensions "
                     "(has 0, gufunc core with signature (n),(n)->() requires 1)")
    x, y = S.moveaxis(b, x, axis, -1), S.moveaxis(b, y, axis, -1)
    if x.shape[-1] != y.shape[-1]:
        raise Reject(ShapeMismatchError, "vecdot: Input operand 1 has a mismatch in its core "
                     "dimension 0, with gufunc signature (n),(n)->() (size "
                     f"{y.shape[-1]} is different from {x.shape[-1]})")
    dtype = A.result_dtype([Staged(x.value), Staged(y.value)])
    prod = binary(b, "multiply", conj(b, x) if dtype.kind == "c" else x, y)
    return A.convert(b, reduce(b, "sum", prod, -1, dtype), dtype)


def linalg_matrix_transpose(b: Builder, x: Any) -> Staged:
    v = A.lift(b, A.normalize_operand(b, x))
    _stacked(v, "np.linalg.matrix_transpose")
    return S.matrix_transpose(b, v)
