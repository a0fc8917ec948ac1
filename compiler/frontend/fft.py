"""np.fft: every function, staged with the ``fft`` primitive (compiler/primitives/fft.py).

A transform along any axis is the primitive's last-axis transform between two
``moveaxis``; ``n`` crops or zero-pads that axis first; ``norm`` is a scaling of the
unscaled transform. Real transforms go through the complex one: ``rfft`` keeps the
n//2+1 non-negative frequencies of the transform of the real input, ``irfft`` rebuilds
the Hermitian spectrum (NumPy's: the imaginary parts of the zero and Nyquist terms are
ignored) and keeps the real part of its inverse. Derivatives and batching come from the
primitives these are written with. Dtypes are NumPy 2's: float32 (and float16, complex64)
in, complex64 (real transforms: float32) out; everything else in double precision.
"""
from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

from compiler.errors import ArgumentValueError, CompileError, ShapeMismatchError, UnsupportedError
from compiler.frontend import arrays as A
from compiler.frontend import shapes as S
from compiler.frontend.values import Reject, Staged
from compiler.ir import dims
from compiler.ir.builder import Builder
from compiler.ir.core import Value
from compiler.ir.dims import Dim
from compiler.primitives import ops

_NORMS = (None, "backward", "ortho", "forward")
_SWAP = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def _norm(norm: Any) -> None:
    if norm not in _NORMS:
        raise Reject(ArgumentValueError, f'Invalid norm value {norm}; should be "backward", "ortho" or '
                     '"forward".')


def _scale(norm: Any, n: int, inverse: bool) -> float:
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    if (norm == "forward") != inverse:           # forward with "forward", inverse with "backward"
        return 1.0 / n
    return 1.0


def _single(dtype: np.dtype) -> bool:
    return dtype in (np.float32, np.float16, np.complex64)


def _complex_operand(b: Builder, a: Any) -> Staged:
    x = A.lift(b, A.normalize_operand(b, a))
    return A.convert(b, x, np.dtype(np.complex64 if _single(x.dtype) else np.complex128))


def _transform_operand(b: Builder, a: Any) -> Staged:
    """x as the transforms take it: complex, or float32/float64 (a zero imaginary part)."""
    x = A.lift(b, A.normalize_operand(b, a))
    if x.dtype.kind == "c":
        return A.convert(b, x, np.dtype(np.complex64 if _single(x.dtype) else np.complex128))
    return A.convert(b, x, np.dtype(np.float32 if _single(x.dtype) else np.float64))


def _real_operand(b: Builder, a: Any, name: str) -> Staged:
    x = A.lift(b, A.normalize_operand(b, a))
    if x.dtype.kind == "c":
        raise Reject(CompileError, f"np.fft.{name} takes real input, not {x.dtype}",
                     f"use np.fft.fft for complex input, or pass np.real(x) to np.fft.{name}")
    return A.convert(b, x, np.dtype(np.float32 if _single(x.dtype) else np.float64))


def _static_n(n: Any, what: str = "n") -> int:
    if isinstance(n, Staged) or not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise Reject(UnsupportedError, f"np.fft: {what} must be a static integer, not {n!r}",
                     "pass a Python int (or mark the argument static with static_argnums)")
    n = operator.index(n)
    if n < 1:
        raise Reject(ArgumentValueError, f"Invalid number of FFT data points ({n}) specified.")
    return n


def _size_arg(b: Builder, n: Any, message: str = "Invalid number of FFT data points ({0}) specified.") -> Dim:
    """NumPy's n= (or a size of s=): a static int, or a symbolic size from a shape
    (``n=x.shape[-1]``), checked when the kernel runs."""
    if isinstance(n, dims.DimExpr):
        _at_least(b, n, 1, message, n)
        return n
    return _static_n(n)


def _length(b: Builder, x: Staged, axis: int, name: str) -> Dim:
    """The length of the transformed axis: static, or symbolic (a plan made at run time; an
    empty axis is NumPy's ValueError when the kernel runs)."""
    d = x.shape[axis]
    if not isinstance(d, int):
        _at_least(b, d, 1, "Invalid number of FFT data points ({0}) specified.", d)
    return d


def _at_least(b: Builder, d: Dim, low: int, message: str, shown: Dim) -> None:
    size = ops.size_of(b, d, np.int64)
    ops.check(b, ops.ge(b, size, ops.full_like(b, low, size)), "ValueError", message, (shown,))


def _resize(b: Builder, v: Value, axis: int, n: Dim) -> Value:
    """Crop or zero-pad axis `axis` of `v` to length n (NumPy's n=)."""
    shape = list(v.type.shape)
    have = shape[axis]
    if have == n:
        return v
    nd = v.type.ndim
    if not isinstance(n, int):
        raise Reject(UnsupportedError, f"np.fft: a length n={n} of an axis of length {have}: "
                     "cropping or padding to a symbolic length is not supported",
                     "pass n= the axis's own length, or a Python int")
    if not isinstance(have, int):       # a symbolic length to a static n: pad by n, keep n
        assert isinstance(n, int)
        high = [0] * nd
        high[axis] = n
        wide = ops.pad(b, v, ops.scalar(b, 0, v.type.dtype), (0,) * nd, high)
        return ops.slice_(b, wide, (0,) * nd, shape[:axis] + [n] + shape[axis + 1:])
    assert isinstance(n, int)
    if have > n:
        limit = shape[:axis] + [n] + shape[axis + 1:]
        return ops.slice_(b, v, (0,) * nd, limit)
    high = [0] * nd
    high[axis] = n - have
    return ops.pad(b, v, ops.scalar(b, 0, v.type.dtype), (0,) * nd, high)


def _times(b: Builder, v: Value, c: float) -> Value:
    return v if c == 1.0 else ops.mul(b, v, ops.full_like(b, c, v))


def _scaled(b: Builder, v: Value, norm: Any, n: Dim, inverse: bool) -> Value:
    """v scaled per `norm` for a transform of length n (symbolic: the factor computed by
    the kernel, in float64)."""
    if isinstance(n, int):
        return _times(b, v, _scale(norm, n, inverse))
    if norm != "ortho" and (norm == "forward") == inverse:
        return v
    size = ops.convert(b, ops.size_of(b, n, np.int64), np.float64)
    den = ops.sqrt(b, size) if norm == "ortho" else size
    c = ops.convert(b, ops.div(b, ops.full_like(b, 1.0, den), den), v.type.dtype)
    return ops.mul(b, v, ops.broadcast_in_dim(b, c, v.type.shape, ()))


def _c2c(b: Builder, x: Staged, n: Any, axis: Any, norm: Any, inverse: bool, name: str,
         half: bool = False) -> Staged:
    """The complex transform of x (complex, or float32/float64 as the real part) along
    `axis`, length n, scaled per `norm`."""
    _norm(norm)
    if x.ndim == 0:
        raise Reject(ShapeMismatchError, f"np.fft.{name}: a 0-d array has no axis to transform")
    ax = S.normalize_axis(axis, x.ndim)
    n = _length(b, x, ax, name) if n is None else _size_arg(b, n)
    v = _resize(b, x.value, ax, n)
    last = x.ndim - 1
    v = _move(b, v, ax, last)
    v = ops.fft(b, v, inverse, dims.add(dims.floordiv(n, 2), 1) if half else None)
    v = _move(b, v, last, ax)
    return Staged(_scaled(b, v, norm, n, inverse))


def _move(b: Builder, v: Value, src: int, dst: int) -> Value:
    perm = [i for i in range(v.type.ndim) if i != src]
    perm.insert(dst, src)
    return ops.transpose(b, v, perm)


# ---- one-dimensional -------------------------------------------------------------------

def fft(b: Builder, a: Any, n: Any = None, axis: Any = -1, norm: Any = None, out: Any = None) -> Staged:
    _no_out(out)
    return _c2c(b, _transform_operand(b, a), n, axis, norm, False, "fft")


def ifft(b: Builder, a: Any, n: Any = None, axis: Any = -1, norm: Any = None, out: Any = None) -> Staged:
    _no_out(out)
    return _c2c(b, _transform_operand(b, a), n, axis, norm, True, "ifft")


def rfft(b: Builder, a: Any, n: Any = None, axis: Any = -1, norm: Any = None, out: Any = None) -> Staged:
    _no_out(out)
    x = _real_operand(b, a, "rfft")
    return _c2c(b, x, n, axis, norm, False, "rfft", half=True)   # real rows, n//2 + 1 terms


def irfft(b: Builder, a: Any, n: Any = None, axis: Any = -1, norm: Any = None, out: Any = None) -> Staged:
    _no_out(out)
    _norm(norm)
    x = _complex_operand(b, a)
    if x.ndim == 0:
        raise Reject(ShapeMismatchError, "np.fft.irfft: a 0-d array has no axis to transform")
    ax = S.normalize_axis(axis, x.ndim)
    m: Dim = x.shape[ax]
    given = None
    if n is None:
        n = dims.mul(2, dims.add(m, -1))
        if not isinstance(m, int):
            _at_least(b, m, 2, "Invalid number of data points ({0}) specified", n)
    else:
        given = n
        n = _size_arg(b, n, "Invalid number of data points ({0}) specified")
    if isinstance(n, int) and n < 1:
        raise Reject(ArgumentValueError, f"Invalid number of data points ({n}) specified")
    v = _resize(b, x.value, ax, dims.add(dims.floordiv(n, 2), 1))
    shape = list(v.type.shape)
    if not isinstance(n, int) and given is not None:   # n=x.shape[-1]: the spectrum by a gather
        return Staged(_scaled(b, _inverse_real(b, v, ax, n), norm, n, True))
    # conj(X[k]) at n-k for 1 <= k < (n+1)//2 (a symbolic n is 2 (m - 1): m - 2 terms)
    tail = (n + 1) // 2 - 1 if isinstance(n, int) else dims.add(m, -2)
    parts = [v]
    if not isinstance(tail, int) or tail > 0:
        start = [0] * v.type.ndim
        start[ax] = 1
        limit = shape[:ax] + [1 + tail] + shape[ax + 1:]
        mirror = ops.rev(b, ops.conj(b, ops.slice_(b, v, start, limit)), [ax])
        parts.append(mirror)
    full = parts[0] if len(parts) == 1 else ops.concatenate(b, parts, ax)
    last = v.type.ndim - 1
    y = ops.real(b, _move(b, ops.fft(b, _move(b, full, ax, last), True), last, ax))
    return Staged(_scaled(b, y, norm, n, True))


def _inverse_real(b: Builder, v: Value, ax: int, n: Dim) -> Value:
    """The real inverse transform of length n (symbolic) of the half spectrum v (n//2 + 1
    terms along `ax`): the Hermitian spectrum X[k] = v[k] for k <= n//2, conj(v[n - k])
    beyond, gathered (its length is n itself, whatever n's parity)."""
    k = ops.iota(b, np.int64, (n,), 0)
    size = ops.size_of(b, n, np.int64)
    low = ops.le(b, k, ops.broadcast_in_dim(b, ops.size_of(b, dims.floordiv(n, 2), np.int64), (n,), ()))
    at = ops.select(b, low, k, ops.sub(b, ops.broadcast_in_dim(b, size, (n,), ()), k))
    full = ops.take(b, v, at, ax)
    mask = ops.broadcast_in_dim(b, low, full.type.shape, (ax,))
    full = ops.select(b, mask, full, ops.conj(b, full))
    last = full.type.ndim - 1
    return ops.real(b, _move(b, ops.fft(b, _move(b, full, ax, last), True), last, ax))


def hfft(b: Builder, a: Any, n: Any = None, axis: Any = -1, norm: Any = None, out: Any = None) -> Staged:
    _no_out(out)
    _norm(norm)
    x = _complex_operand(b, a)
    return irfft(b, Staged(ops.conj(b, x.value)), n, axis, _SWAP[norm])


def ihfft(b: Builder, a: Any, n: Any = None, axis: Any = -1, norm: Any = None, out: Any = None) -> Staged:
    _no_out(out)
    _norm(norm)
    y = rfft(b, a, n, axis, _SWAP[norm])
    return Staged(ops.conj(b, y.value))


# ---- several axes ---------------------------------------------------------------------

def _shape_axes(x: Staged, s: Any, axes: Any, name: str) -> tuple[list[Any], list[int]]:
    if axes is None:
        ax = list(range(x.ndim)) if s is None else list(range(x.ndim - len(s), x.ndim))
    else:
        ax = [S.normalize_axis(a, x.ndim) for a in (axes if isinstance(axes, (tuple, list)) else [axes])]
    if s is None:
        sizes: list[Any] = [None] * len(ax)
    else:
        sizes = list(s) if isinstance(s, (tuple, list)) else [s]
        if len(sizes) != len(ax):
            raise Reject(ArgumentValueError, "Shape and axes have different lengths.")
    return sizes, ax


def _cnd(inverse: bool, name: str, default_axes: Any = None) -> Any:
    def handler(b: Builder, a: Any, s: Any = None, axes: Any = default_axes, norm: Any = None,
                out: Any = None) -> Staged:
        _no_out(out)
        x = _transform_operand(b, a)
        sizes, ax = _shape_axes(x, s, axes, name)
        for k in reversed(range(len(ax))):
            x = _c2c(b, x, sizes[k], ax[k], norm, inverse, name)
        return x
    handler.__name__ = name
    return handler


def _rnd(name: str, default_axes: Any = None) -> Any:
    def handler(b: Builder, a: Any, s: Any = None, axes: Any = default_axes, norm: Any = None,
                out: Any = None) -> Staged:
        _no_out(out)
        x = _real_operand(b, a, name)
        sizes, ax = _shape_axes(x, s, axes, name)
        y = rfft(b, x, sizes[-1], ax[-1], norm)
        for k in reversed(range(len(ax) - 1)):
            y = _c2c(b, y, sizes[k], ax[k], norm, False, name)
        return y
    handler.__name__ = name
    return handler


def _irnd(name: str, default_axes: Any = None) -> Any:
    def handler(b: Builder, a: Any, s: Any = None, axes: Any = default_axes, norm: Any = None,
                out: Any = None) -> Staged:
        _no_out(out)
        x = _complex_operand(b, a)
        sizes, ax = _shape_axes(x, s, axes, name)
        for k in range(len(ax) - 1):
            x = _c2c(b, x, sizes[k], ax[k], norm, True, name)
        return irfft(b, x, sizes[-1], ax[-1], norm)
    handler.__name__ = name
    return handler


def _no_out(out: Any) -> None:
    if out is not None:
        raise Reject(UnsupportedError, "out= is not supported: compiled functions return their "
                     "results", "return the value instead")


# ---- frequencies and shifts ------------------------------------------------------------

def fftfreq(b: Builder, n: Any, d: Any = 1.0, device: Any = None) -> Any:
    if isinstance(n, dims.DimExpr):            # a symbolic length (n=x.shape[0])
        k = ops.iota(b, np.int64, (n,), 0)
        size = ops.broadcast_in_dim(b, ops.size_of(b, n, np.int64), (n,), ())
        half = ops.broadcast_in_dim(b, ops.size_of(b, dims.floordiv(dims.add(n, 1), 2), np.int64), (n,), ())
        ks = ops.select(b, ops.lt(b, k, half), k, ops.sub(b, k, size))
        return _freq(b, ops.convert(b, ks, np.float64), n, d)
    n = _static_n(n)
    return _freq(b, np.fft.fftfreq(n, 1.0) * n, n, d)     # exact integers


def rfftfreq(b: Builder, n: Any, d: Any = 1.0, device: Any = None) -> Any:
    if isinstance(n, dims.DimExpr):
        m = dims.add(dims.floordiv(n, 2), 1)
        return _freq(b, ops.convert(b, ops.iota(b, np.int64, (m,), 0), np.float64), n, d)
    n = _static_n(n)
    return _freq(b, np.arange(n // 2 + 1, dtype=np.float64), n, d)


def _freq(b: Builder, ks: np.ndarray | Value, n: Dim, d: Any) -> Any:
    """ks / (n d): static ks, n and d computed now; else in the kernel (float64)."""
    if not isinstance(d, Staged) and isinstance(ks, np.ndarray) and isinstance(n, int):
        return ks / (n * d)
    dd = A.convert(b, A.lift(b, d), np.dtype(np.float64))
    if dd.ndim:
        raise Reject(ShapeMismatchError, "np.fft.fftfreq: d must be a scalar")
    size = ops.convert(b, ops.size_of(b, n, np.int64), np.float64) if not isinstance(n, int) else \
        ops.full_like(b, float(n), dd.value)
    den = ops.mul(b, dd.value, size)
    k = ops.constant(b, ks) if isinstance(ks, np.ndarray) else ks
    return Staged(ops.div(b, k, ops.broadcast_in_dim(b, den, k.type.shape, ())))


def _shift(sign: int, name: str) -> Any:
    def handler(b: Builder, x: Any, axes: Any = None) -> Staged:
        x = A.lift(b, A.normalize_operand(b, x))
        ax: Sequence[int] = list(range(x.ndim)) if axes is None else \
            [S.normalize_axis(a, x.ndim) for a in (axes if isinstance(axes, (tuple, list)) else [axes])]
        if not ax:
            return x
        v = x.value
        for a in ax:                     # a roll by n//2 (-(n//2)): the two halves swapped
            d = x.shape[a]
            cut = dims.floordiv(d, 2) if sign < 0 else dims.add(d, dims.mul(-1, dims.floordiv(d, 2)))
            v = ops.concatenate(b, [_part(b, v, a, cut, d), _part(b, v, a, 0, cut)], a)
        return Staged(v)
    handler.__name__ = name
    return handler


def _part(b: Builder, v: Value, axis: int, start: Dim, stop: Dim) -> Value:
    shape = list(v.type.shape)
    begin: list[Dim] = [0] * len(shape)
    begin[axis] = start
    shape[axis] = stop
    return ops.slice_(b, v, begin, shape)


FUNCTIONS: dict[Any, Any] = {
    np.fft.fft: fft, np.fft.ifft: ifft, np.fft.rfft: rfft, np.fft.irfft: irfft,
    np.fft.hfft: hfft, np.fft.ihfft: ihfft,
    np.fft.fft2: _cnd(False, "fft2", (-2, -1)), np.fft.ifft2: _cnd(True, "ifft2", (-2, -1)),
    np.fft.fftn: _cnd(False, "fftn"), np.fft.ifftn: _cnd(True, "ifftn"),
    np.fft.rfft2: _rnd("rfft2", (-2, -1)), np.fft.irfft2: _irnd("irfft2", (-2, -1)),
    np.fft.rfftn: _rnd("rfftn"), np.fft.irfftn: _irnd("irfftn"),
    np.fft.fftfreq: fftfreq, np.fft.rfftfreq: rfftfreq,
    np.fft.fftshift: _shift(1, "fftshift"), np.fft.ifftshift: _shift(-1, "ifftshift"),
}
