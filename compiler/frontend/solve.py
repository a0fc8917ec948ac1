"""np.linalg.solve, inv, det, slogdet, matrix_power, multi_dot, tensorinv and tensorsolve,
through the ``lu_solve`` and ``lu`` primitives (compiler/primitives/lu.py).

NumPy's rules are kept: stacks ``[..., n, n]`` broadcast their leading axes, solve's ``b``
is a vector only when it is 1-d (NumPy 2), integer and bool operands compute in float64,
float16 is refused (NumPy's TypeError). Where NumPy raises LinAlgError("Singular matrix")
(solve, inv, a negative matrix_power) the compiled code checks every pivot of the
factorization (an exact zero, as LAPACK's info > 0) and raises np.linalg.LinAlgError with
the user's line; det and slogdet of a singular matrix give 0 and (0, -inf) as NumPy does.

    x = np.linalg.solve(a, b)   ->   x, ok = lu_solve(a, b); check(ok)
    x = np.linalg.inv(a)        ->   x, ok = lu_solve(a, eye); check(ok)

``lu_solve`` is LAPACK's gesv for large matrices and, as generated code, an ``lu`` followed
by two ``triangular_solve``s (ok: no zero on U's diagonal); det and slogdet use ``lu``.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from compiler.errors import CompileError, ShapeMismatchError, UnsupportedError
from compiler.frontend import arrays as A
from compiler.frontend.linalg import dot, matmul
from compiler.frontend.values import Reject, Staged
from compiler.ir.builder import Builder
from compiler.ir.core import Value
from compiler.ir.types import F32, F64, I64, TensorType
from compiler.primitives import ops
from compiler.primitives.lu import lu, lu_solve
from compiler.primitives.matrices import eye

_SLOGDET = getattr(getattr(np.linalg, "_linalg", None), "SlogdetResult", None)


# ---- operands --------------------------------------------------------------------------------

def _common_dtype(name: str, xs: Sequence[Staged]) -> np.dtype:
    """NumPy's linalg common type: float32/float64 (integers and bools as float64), complex
    when any operand is complex; float16 is unsupported."""
    real: np.dtype = F32
    cplx = False
    for x in xs:
        dt = x.dtype
        if dt.kind in "fc":
            r = np.dtype(dt.char.lower())           # complex64 -> float32, complex128 -> float64
            if r not in (F32, F64):
                raise Reject(UnsupportedError, f"np.linalg.{name}: array type {dt} is unsupported in linalg",
                             "convert to float32 or float64 first (x.astype(np.float32))")
            cplx = cplx or dt.kind == "c"
        else:
            r = F64
        real = F64 if F64 in (real, r) else F32
    return np.dtype(np.complex128 if real == F64 else np.complex64) if cplx else real


def _operands(b: Builder, name: str, *xs: Any) -> list[Staged]:
    staged = [A.lift(b, A.normalize_operand(b, x)) for x in xs]
    dtype = _common_dtype(name, staged)
    return [A.convert(b, Staged(x.value), dtype) for x in staged]


def _square(name: str, a: Staged) -> None:
    if a.ndim < 2:
        raise Reject(ShapeMismatchError, f"np.linalg.{name}: {a.ndim}-dimensional array given. "
                     "Array must be at least two-dimensional")
    if a.shape[-1] != a.shape[-2]:
        hint = None if all(isinstance(d, int) for d in a.shape[-2:]) else \
            "the two sizes are not known to be equal when compiling: use one symbol for both"
        raise Reject(ShapeMismatchError, f"np.linalg.{name}: Last 2 dimensions of the array must be "
                     f"square (shape {A.fmt_shape(a.shape)})", hint)


def _stack(b: Builder, v: Value, batch: tuple) -> Value:
    return A.broadcast_value(b, v, tuple(batch) + tuple(v.type.shape[-2:]))


def _lu_solve(b: Builder, a: Value, rhs: Value) -> Value:
    """x with a @ x == rhs for stacks with the same leading axes, checking for singularity."""
    x, ok = lu_solve(b, a, rhs)
    ops.check(b, ok, "LinAlgError", "Singular matrix")
    return x


# ---- the functions ---------------------------------------------------------------------------

def solve(b: Builder, a: Any, rhs: Any) -> Staged:
    a, rhs = _operands(b, "solve", a, rhs)
    _square("solve", a)
    n = a.shape[-1]
    vector = rhs.ndim == 1
    if rhs.ndim == 0 or rhs.shape[-1 if vector else -2] != n:
        raise Reject(ShapeMismatchError, f"np.linalg.solve: b of shape {A.fmt_shape(rhs.shape)} does not "
                     f"match a of shape {A.fmt_shape(a.shape)} (b must be ({n},) or (..., {n}, K))")
    if vector:
        batch = tuple(a.shape[:-2])
        r = A.broadcast_value(b, A.reshape_value(b, rhs.value, (n, 1)), batch + (n, 1))
    else:
        batch = A.broadcast_shapes(a.shape[:-2], rhs.shape[:-2])
        if a.ndim == 2 and rhs.ndim > 2:
            return _one_matrix(b, a.value, rhs.value)
        r = _stack(b, rhs.value, batch)
    x = _lu_solve(b, _stack(b, a.value, batch), r)
    return Staged(A.reshape_value(b, x, batch + (n,)) if vector else x)


def _one_matrix(b: Builder, a: Value, rhs: Value) -> Staged:
    """One matrix [n, n] and a stack of right-hand sides [..., n, k]: one factorization, the
    stack's columns side by side ([n, (...) * k])."""
    nb = rhs.type.ndim - 2
    *batch, n, k = rhs.type.shape
    cols = ops.transpose(b, rhs, [nb] + list(range(nb)) + [nb + 1])          # [n, ..., k]
    flat = A.reshape_value(b, cols, (n, A.prod(list(batch) + [k])))
    x = _lu_solve(b, a, flat)
    back = A.reshape_value(b, x, (n, *batch, k))
    return Staged(ops.transpose(b, back, list(range(1, nb + 1)) + [0, nb + 1]))


def _inv(b: Builder, a: Staged) -> Staged:
    return Staged(_lu_solve(b, a.value, eye(b, a.value)))


def inv(b: Builder, a: Any) -> Staged:
    (a,) = _operands(b, "inv", a)
    _square("inv", a)
    return _inv(b, a)


def _factor_det(b: Builder, a: Staged) -> tuple[Value, Value]:
    """The diagonal of U ([..., n]) and the permutation's sign (+-1, [...], a's real dtype)."""
    packed, piv, _ = lu(b, a.value)
    nb = a.ndim - 2
    diag = ops.diagonal(b, packed, nb, nb + 1)
    swaps = ops.ne(b, piv, ops.iota(b, I64, tuple(piv.type.shape), nb))
    count = ops.reduce_sum(b, ops.convert(b, swaps, I64), [nb])
    odd = ops.eq(b, ops.mod(b, count, ops.full_like(b, 2, count)), ops.full_like(b, 1, count))
    real = np.dtype(np.finfo(a.dtype).dtype)
    one = ops.full(b, 1, TensorType(real, tuple(count.type.shape)))
    return diag, ops.select(b, odd, ops.neg(b, one), one)


def det(b: Builder, a: Any) -> Staged:
    (a,) = _operands(b, "det", a)
    _square("det", a)
    diag, sign = _factor_det(b, a)
    total = ops.reduce_prod(b, diag, [a.ndim - 2])
    return Staged(_plus_zero(b, ops.mul(b, total, ops.convert(b, sign, a.dtype))))


def _plus_zero(b: Builder, x: Value) -> Value:
    """x with -0 as +0 (NumPy's det and slogdet sign of a singular matrix: sign * exp(-inf))."""
    zero = ops.zeros_like(b, x)
    return ops.select(b, ops.eq(b, x, zero), zero, x)


def slogdet(b: Builder, a: Any) -> Any:
    (a,) = _operands(b, "slogdet", a)
    _square("slogdet", a)
    diag, sign = _factor_det(b, a)
    nb = a.ndim - 2
    mag = ops.hypot(b, ops.real(b, diag), ops.imag(b, diag)) if a.dtype.kind == "c" else ops.abs_(b, diag)
    logabs = ops.reduce_sum(b, ops.log(b, mag), [nb])
    if a.dtype.kind == "c":
        zero = ops.zeros_like(b, diag)
        unit = ops.div(b, diag, ops.convert(b, ops.select(b, ops.eq(b, mag, ops.zeros_like(b, mag)),
                                                          ops.full_like(b, 1, mag), mag), a.dtype))
        unit = ops.select(b, ops.eq(b, diag, zero), zero, unit)
    else:
        unit = ops.sign(b, diag)
    phase = _plus_zero(b, ops.mul(b, ops.reduce_prod(b, unit, [nb]), ops.convert(b, sign, a.dtype)))
    out = (Staged(phase), Staged(logabs))
    return _SLOGDET(*out) if _SLOGDET is not None else out


def matrix_power(b: Builder, a: Any, n: Any) -> Staged:
    if isinstance(n, Staged) or not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise Reject(CompileError if not isinstance(n, Staged) else UnsupportedError,
                     "np.linalg.matrix_power: exponent must be an integer known when compiling",
                     "pass the exponent as a Python int (static_argnums makes an argument static)")
    n = int(n)
    a = A.lift(b, A.normalize_operand(b, a))
    if a.dtype.kind not in "fc" and n < 0:
        a = A.convert(b, a, F64)
    _square("matrix_power", a)
    if n == 0:
        return Staged(ops.convert(b, eye(b, a.value), a.dtype))
    if n < 0:
        (a,) = _operands(b, "matrix_power", a)
        a, n = _inv(b, a), -n
    if n == 1:
        return a
    if n == 2:
        return matmul(b, a, a)
    if n == 3:
        return matmul(b, matmul(b, a, a), a)
    z: Staged | None = None            # NumPy's order: powers of two from the lowest bit
    result: Staged | None = None
    while n > 0:
        z = a if z is None else matmul(b, z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else matmul(b, result, z)
    assert result is not None
    return result


def multi_dot(b: Builder, arrays: Any, out: Any = None) -> Staged:
    if out is not None:
        raise Reject(UnsupportedError, "np.linalg.multi_dot: out= is not supported", "return the value instead")
    if not isinstance(arrays, (list, tuple)):
        raise Reject(UnsupportedError, "np.linalg.multi_dot expects a list or tuple of arrays")
    xs = [A.lift(b, A.normalize_operand(b, x)) for x in arrays]
    if len(xs) < 2:
        raise Reject(CompileError, "np.linalg.multi_dot: Expecting at least two arrays.")
    if len(xs) == 2:
        return dot(b, xs[0], xs[1])
    first, last = xs[0].ndim == 1, xs[-1].ndim == 1
    if first:
        xs[0] = Staged(A.reshape_value(b, xs[0].value, (1, xs[0].shape[0])))
    if last:
        xs[-1] = Staged(A.reshape_value(b, xs[-1].value, (xs[-1].shape[0], 1)))
    for i, x in enumerate(xs):
        if x.ndim != 2:
            raise Reject(ShapeMismatchError, f"np.linalg.multi_dot: {x.ndim}-dimensional array given. "
                         "Array must be two-dimensional", f"argument {i}")
    shapes = [x.shape for x in xs]
    if all(isinstance(d, int) for s in shapes for d in s):
        order = _chain_order([s[0] for s in shapes] + [shapes[-1][1]])
        result = _chain(b, xs, order, 0, len(xs) - 1)
    else:                               # symbolic sizes: no cost model, left to right
        result = xs[0]
        for x in xs[1:]:
            result = dot(b, result, x)
    if first and last:
        return Staged(A.reshape_value(b, result.value, ()))
    if first or last:
        return Staged(A.reshape_value(b, result.value, (result.shape[1] if first else result.shape[0],)))
    return result


def _chain_order(p: list[int]) -> Any:
    """NumPy's split table for the cheapest parenthesization (three matrices: its two-way
    comparison, else the O(n^3) dynamic program of Cormen et al.)."""
    n = len(p) - 1
    if n == 3:
        a0, a1b0, b1c0, c1 = p
        cost1 = a0 * b1c0 * (a1b0 + c1)        # (AB)C
        cost2 = a1b0 * c1 * (a0 + b1c0)        # A(BC)
        return "left" if cost1 < cost2 else "right"
    m = np.zeros((n, n), dtype=np.float64)
    s = np.empty((n, n), dtype=np.intp)
    for ll in range(1, n):
        for i in range(n - ll):
            j = i + ll
            m[i, j] = np.inf
            for k in range(i, j):
                q = m[i, k] + m[k + 1, j] + p[i] * p[k + 1] * p[j + 1]
                if q < m[i, j]:
                    m[i, j] = q
                    s[i, j] = k
    return s


def _chain(b: Builder, xs: list[Staged], order: Any, i: int, j: int) -> Staged:
    if isinstance(order, str):
        a, bb, c = xs
        return dot(b, dot(b, a, bb), c) if order == "left" else dot(b, a, dot(b, bb, c))
    if i == j:
        return xs[i]
    k = int(order[i, j])
    return dot(b, _chain(b, xs, order, i, k), _chain(b, xs, order, k + 1, j))


def _size(shape: Sequence[Any]) -> Any:
    return A.prod(shape)


def tensorinv(b: Builder, a: Any, ind: Any = 2) -> Staged:
    if not isinstance(ind, (int, np.integer)) or ind <= 0:
        raise Reject(CompileError, "np.linalg.tensorinv: Invalid ind argument.", "ind must be a positive int")
    (a,) = _operands(b, "tensorinv", a)
    old = tuple(a.shape)
    inv_shape = old[ind:] + old[:ind]
    rows = _size(old[ind:])
    cols = _size(old[:ind])
    if rows != cols:
        raise Reject(ShapeMismatchError, "np.linalg.tensorinv: Last 2 dimensions of the array must be "
                     f"square (prod(a.shape[:ind]) = {cols}, prod(a.shape[ind:]) = {rows})")
    m = Staged(A.reshape_value(b, a.value, (cols, rows)))
    return Staged(A.reshape_value(b, _inv(b, m).value, inv_shape))


def tensorsolve(b: Builder, a: Any, rhs: Any, axes: Any = None) -> Staged:
    a, rhs = _operands(b, "tensorsolve", a, rhs)
    an = a.ndim
    if axes is not None:
        order = list(range(an))
        for k in axes:
            order.remove(k)
            order.insert(an, k)
        a = Staged(ops.transpose(b, a.value, order))
    old = tuple(a.shape[-(an - rhs.ndim):])
    size = _size(old)
    if _size(a.shape) != size * size:
        raise Reject(ShapeMismatchError, "np.linalg.tensorsolve: Input arrays must satisfy the requirement "
                     "prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])")
    m = Staged(A.reshape_value(b, a.value, (size, size)))
    v = Staged(A.reshape_value(b, rhs.value, (_size(rhs.shape),)))
    return Staged(A.reshape_value(b, solve(b, m, v).value, old))


FUNCTIONS: dict[Any, Callable[..., Any]] = {
    np.linalg.solve: solve, np.linalg.inv: inv, np.linalg.det: det, np.linalg.slogdet: slogdet,
    np.linalg.matrix_power: matrix_power, np.linalg.multi_dot: multi_dot,
    np.linalg.tensorinv: tensorinv, np.linalg.tensorsolve: tensorsolve}
