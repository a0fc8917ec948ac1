"""Contractions: dot, matmul/@, inner, outer, tensordot, vdot, trace, einsum
and a vector/Frobenius norm, all through the one ``dot_general`` primitive.

NumPy's rules are kept: ``dot`` contracts the last axis of a with the
second-to-last of b (no batching), ``matmul`` promotes 1-d operands and
broadcasts batch dimensions, ``einsum`` takes diagonals for repeated
subscripts and sums out indices that appear in one operand only.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

import compiler.primitives as P
from compiler.primitives import ops
from compiler.primitives.spectral import svd_sizes_known
from compiler.primitives.spectral_lapack import check_converged
from compiler.errors import CompileError, OutParameterError, ShapeMismatchError, UnsupportedError
from compiler.frontend import arrays as A
from compiler.frontend.reductions import reduce
from compiler.frontend.shapes import diagonal, normalize_axis, prod, ravel, reshape
from compiler.frontend.ufuncs import binary, conj, sqrt_of_squares, unary
from compiler.frontend.values import Reject, Staged
from compiler.ir.builder import Builder
from compiler.ir.types import F16, F64, is_complex, is_float, is_inexact

Axes = tuple[int, ...]


def _promote(b: Builder, *xs: Any) -> list[Staged]:
    xs2 = [A.lift(b, A.normalize_operand(b, x)) for x in xs]
    dtype = A.result_dtype([Staged(x.value) for x in xs2])     # arrays: no weak promotion
    return [A.convert(b, x, dtype) for x in xs2]


def dot_general(b: Builder, x: Staged, y: Staged, contract: tuple[Axes, Axes],
                batch: tuple[Axes, Axes] = ((), ())) -> Staged:
    return Staged(ops.dot_general(b, x.value, y.value, dimension_numbers=(contract, batch)))


def _not_aligned(x: Staged, y: Staged, ax: int, ay: int) -> None:
    if x.shape[ax] != y.shape[ay]:
        raise Reject(ShapeMismatchError, f"shapes {A.fmt_shape(x.shape)} and {A.fmt_shape(y.shape)} "
                     f"not aligned: {x.shape[ax]} (dim {ax}) != {y.shape[ay]} (dim {ay})")


def dot(b: Builder, x: Any, y: Any, out: Any = None) -> Staged:
    if out is not None:
        raise Reject(OutParameterError, "out= is not supported", "return the value instead")
    x, y = _promote(b, x, y)
    if x.ndim > 2 or y.ndim > 2:
        return _dot(b, x, y)
    return _blas_scaled(b, x, y, _dot)


def _dot(b: Builder, x: Staged, y: Staged) -> Staged:
    if x.ndim == 0 or y.ndim == 0:
        return binary(b, "multiply", x, y)
    ay = 0 if y.ndim == 1 else y.ndim - 2
    _not_aligned(x, y, x.ndim - 1, ay)
    return dot_general(b, x, y, ((x.ndim - 1,), (ay,)))


def _one_element(v: Staged) -> bool:
    return all(isinstance(d, int) and d == 1 for d in v.shape)


def _blas_scaled(b: Builder, x: Staged, y: Staged, product: Any, matrices: bool = False) -> Staged:
    """``product(b, x, y)`` (np.dot, np.inner or np.tensordot, which NumPy computes with BLAS
    for floats) when one operand has a single element (0-d, (1,), (1, 1), ...).

    NumPy then scales the other operand with BLAS axpy into zeros, ``0 + a * v``, and axpy
    does nothing for a == 0: the result is +0.0 everywhere then, even where v is inf or nan
    (np.dot(0.0, [-inf, -1.0]) is [0, 0], not [nan, -0]); a one-element result is the plain
    product. The derivative is the product's: v where a == 0 and v is finite."""
    scale = next((v for v in (x, y) if _one_element(v)), None)
    plain = product(b, x, y)
    if x.dtype == F16:          # no BLAS: NumPy's float16 dot sums the products from +0.0
        if not matrices and (x.ndim == 0 or y.ndim == 0):
            return plain        # a 0-d operand: np.dot and np.inner multiply
        return Staged(ops.add(b, plain.value, ops.full_like(b, 0.0, plain.value)))
    size = prod(plain.shape)
    if scale is None or not is_float(x.dtype) or size == 1:
        return plain
    other = y if scale is x else x
    a = A.broadcast_value(b, A.reshape_value(b, scale.value, ()), tuple(other.shape))
    zero = ops.full_like(b, 0.0, other.value)
    skipped = ops.and_(b, ops.eq(b, a, zero), ops.not_(b, ops.isfinite(b, other.value)))
    safe = Staged(ops.select(b, skipped, zero, other.value))
    axpy = product(b, safe, y) if other is x else product(b, x, safe)
    axpy = Staged(ops.add(b, axpy.value, ops.full_like(b, 0.0, axpy.value)))     # 0 + a * v: -0 is +0
    if isinstance(size, int):
        return axpy
    n = A.dim_value(b, size).value                  # a symbolic size: one element at run time?
    one = A.broadcast_value(b, ops.eq(b, n, ops.full_like(b, 1, n)), tuple(plain.shape))
    return Staged(ops.select(b, one, plain.value, axpy.value))


def matmul(b: Builder, x: Any, y: Any) -> Staged:
    x, y = _promote(b, x, y)
    for i, v in enumerate((x, y)):
        if v.ndim == 0:
            raise Reject(CompileError, f"matmul: Input operand {i} does not have enough dimensions "
                         "(has 0, gufunc core with signature (n?,k),(k,m?)->(n?,m?) requires 1)")
    x2 = x if x.ndim >= 2 else reshape(b, x, (1, x.shape[0]))
    y2 = y if y.ndim >= 2 else reshape(b, y, (y.shape[0], 1))
    if x2.shape[-1] != y2.shape[-2]:
        raise Reject(ShapeMismatchError, "matmul: Input operand 1 has a mismatch in its core "
                     "dimension 0, with gufunc signature (n?,k),(k,m?)->(n?,m?) (size "
                     f"{y2.shape[-2]} is different from {x2.shape[-1]})")
    batch = A.broadcast_shapes(x2.shape[:-2], y2.shape[:-2])
    xb = A.broadcast_value(b, x2.value, batch + tuple(x2.shape[-2:]))
    yb = A.broadcast_value(b, y2.value, batch + tuple(y2.shape[-2:]))
    nb = len(batch)
    out = dot_general(b, Staged(xb), Staged(yb), ((nb + 1,), (nb,)),
                      (tuple(range(nb)), tuple(range(nb))))
    shape = list(out.shape)
    if y.ndim == 1:
        shape.pop(-1)
    if x.ndim == 1:
        shape.pop(-2 if y.ndim != 1 else -1)
    return Staged(A.reshape_value(b, out.value, tuple(shape)))


def inner(b: Builder, x: Any, y: Any) -> Staged:
    x, y = _promote(b, x, y)
    return _inner(b, x, y) if x.ndim > 2 or y.ndim > 2 else _blas_scaled(b, x, y, _inner)


def _inner(b: Builder, x: Staged, y: Staged) -> Staged:
    if x.ndim == 0 or y.ndim == 0:
        return binary(b, "multiply", x, y)
    _not_aligned(x, y, x.ndim - 1, y.ndim - 1)
    return dot_general(b, x, y, ((x.ndim - 1,), (y.ndim - 1,)))


def outer(b: Builder, x: Any, y: Any) -> Staged:
    x, y = (ravel(b, A.lift(b, A.normalize_operand(b, v))) for v in (x, y))
    col = Staged(A.reshape_value(b, x.value, (x.shape[0], 1)))
    row = Staged(A.reshape_value(b, y.value, (1, y.shape[0])))
    return binary(b, "multiply", col, row)


def vdot(b: Builder, x: Any, y: Any) -> Staged:
    x, y = _promote(b, x, y)
    return dot(b, ravel(b, conj(b, x)), ravel(b, y))     # NumPy conjugates the first operand


def tensordot(b: Builder, x: Any, y: Any, axes: Any = 2) -> Staged:
    x, y = _promote(b, x, y)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        ax, ay = tuple(range(x.ndim - n, x.ndim)), tuple(range(n))
    else:
        a0, a1 = axes
        ax = tuple(normalize_axis(a, x.ndim) for a in (a0 if isinstance(a0, (list, tuple)) else [a0]))
        ay = tuple(normalize_axis(a, y.ndim) for a in (a1 if isinstance(a1, (list, tuple)) else [a1]))
    if len(ax) != len(ay) or any(x.shape[i] != y.shape[j] for i, j in zip(ax, ay)):
        raise Reject(ShapeMismatchError, "shape-mismatch for sum")
    # NumPy reshapes both operands to matrices and calls np.dot
    return _blas_scaled(b, x, y, lambda b, x, y: dot_general(b, x, y, (ax, ay)), matrices=True)


def trace(b: Builder, x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
          out: Any = None) -> Staged:
    d = diagonal(b, x, offset, axis1, axis2)
    return reduce(b, "sum", Staged(d.value), -1, dtype, out)


def norm(b: Builder, x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Staged:
    """np.linalg.norm: vector norms (any p, ±inf, 0) over one axis, matrix norms ('fro',
    'nuc', ±1, ±2, ±inf) over two, as NumPy chooses them from ord and axis."""
    x = A.lift(b, A.normalize_operand(b, x))
    if not is_inexact(x.dtype):
        x = A.convert(b, x, F64)
    if isinstance(ord, Staged) or isinstance(axis, Staged):
        raise Reject(UnsupportedError, "np.linalg.norm: ord and axis must be known at compile time",
                     "pass them as constants")
    if axis is None:
        if ord is None:
            flat = ravel(b, x)
            out = _vector_norm(b, flat, 2, 0)
            return reshape(b, out, (1,) * x.ndim) if keepdims else out
        if x.ndim == 1:
            axis = (0,)
        elif x.ndim == 2:
            axis = (0, 1)
        else:
            raise Reject(UnsupportedError, "Improper number of dimensions to norm.",
                         "pass axis= (one axis for a vector norm, two for a matrix norm)")
    axes = axis if isinstance(axis, tuple) else (axis,)
    if len(axes) == 1:
        ax = normalize_axis(axes[0], x.ndim)
        if isinstance(ord, str):
            raise Reject(UnsupportedError, f"Invalid norm order '{ord}' for vectors", None)
        return _vector_norm(b, x, 2 if ord is None else ord, ax, keepdims)
    if len(axes) == 2:
        r, c = normalize_axis(axes[0], x.ndim), normalize_axis(axes[1], x.ndim)
        if r == c:
            raise Reject(UnsupportedError, "Duplicate axes given.", None)
        return matrix_norm_axes(b, x, "fro" if ord is None else ord, r, c, keepdims)
    raise Reject(UnsupportedError, "Improper number of dimensions to norm.", None)


def _vector_norm(b: Builder, x: Staged, ord: Any, axis: Any, keepdims: bool = False) -> Staged:
    """sum(|x|**ord)**(1/ord) over axis (an int, or None: all), with NumPy's special cases."""
    if not isinstance(ord, (int, float, np.integer, np.floating)) or isinstance(ord, bool):
        raise Reject(UnsupportedError, f"Invalid norm order {ord!r} for vectors", None)
    mag = unary(b, "absolute", x)
    if ord == 2:
        sq = x if not is_complex(x.dtype) else mag       # |z|**2 for complex z
        return sqrt_of_squares(b, reduce(b, "sum", binary(b, "multiply", sq, sq), axis,
                                         keepdims=keepdims))
    if ord == 1:
        return reduce(b, "sum", mag, axis, keepdims=keepdims)
    if ord == 0:
        return A.convert(b, reduce(b, "sum", binary(b, "not_equal", x, 0), axis, mag.dtype,
                                   keepdims=keepdims), mag.dtype)
    if ord in (np.inf, -np.inf):
        return reduce(b, "max" if ord > 0 else "min", mag, axis, keepdims=keepdims)
    p = float(ord)
    total = reduce(b, "sum", binary(b, "power", mag, p), axis, keepdims=keepdims)
    return binary(b, "power", total, 1.0 / p)


def matrix_norm_axes(b: Builder, x: Staged, ord: Any, r: int, c: int, keepdims: bool = False) -> Staged:
    """A matrix norm over axes (r, c) of x: 'fro', 'nuc', 1, -1, 2, -2, inf, -inf."""
    if ord == "fro":
        out = _vector_norm(b, x, 2, (r, c), keepdims)
        return out
    if ord in (1, -1, np.inf, -np.inf):
        mag = unary(b, "absolute", x)
        inner, outer = (r, c) if ord in (1, -1) else (c, r)   # 1: max column sum; inf: max row sum
        sums = reduce(b, "sum", mag, inner, keepdims=True)
        out = reduce(b, "max" if ord > 0 else "min", sums, outer, keepdims=True)
        return out if keepdims else _squeeze(b, out, (r, c))
    if ord in (2, -2, "nuc"):
        rest = [i for i in range(x.ndim) if i not in (r, c)]
        if not svd_sizes_known(x.shape[r], x.shape[c]):
            raise Reject(UnsupportedError, f"np.linalg.norm(ord={ord!r}) of {A.fmt_shape(x.shape)}: "
                         "which of the two matrix sizes is the larger must be known at compile time",
                         "give the matrices a static size or equal symbolic sizes in the signature")
        check_svd_input(b, x.value)
        xt = ops.transpose(b, x.value, rest + [r, c])
        (s,) = ops.svd(b, xt, False, False)
        check_converged(b, xt, s, "SVD did not converge", svd=True)
        sv = Staged(s)
        if ord == "nuc":
            out = reduce(b, "sum", sv, -1)
        else:
            out = reduce(b, "max" if ord == 2 else "min", sv, -1)
        if keepdims:
            out = reshape(b, out, tuple(1 if i in (r, c) else x.shape[i] for i in range(x.ndim)))
        return out
    raise Reject(UnsupportedError, f"Invalid norm order {ord!r} for matrices", None)


def check_svd_input(b: Builder, a: Any, message: str = "SVD did not converge",
                    finite: bool = False) -> None:
    """NumPy's LinAlgError of its SVD-based functions: LAPACK's SVD does not converge on a NaN
    (on an infinity too, in lstsq's `finite` case); checked when the kernel runs."""
    parts = [ops.real(b, a), ops.imag(b, a)] if is_complex(a.type.dtype) else [a]
    bad = None
    for x in parts:
        e = ops.not_(b, ops.isfinite(b, x)) if finite else ops.isnan(b, x)
        bad = e if bad is None else ops.or_(b, bad, e)
    assert bad is not None
    ops.check(b, ops.not_(b, bad), "LinAlgError", message)


def _squeeze(b: Builder, x: Staged, axes: tuple[int, int]) -> Staged:
    return reshape(b, x, tuple(d for i, d in enumerate(x.shape) if i not in axes))


def vector_norm(b: Builder, x: Any, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Staged:
    """np.linalg.vector_norm: the vector norm over axis (None: all elements; a tuple: those)."""
    x = A.lift(b, A.normalize_operand(b, x))
    if not is_inexact(x.dtype):
        x = A.convert(b, x, F64)
    if axis is None:
        out = _vector_norm(b, ravel(b, x), ord, 0)
        return reshape(b, out, (1,) * x.ndim) if keepdims else out
    axes = axis if isinstance(axis, tuple) else (axis,)
    return _vector_norm(b, x, ord, tuple(normalize_axis(a, x.ndim) for a in axes), keepdims)


def matrix_norm(b: Builder, x: Any, *, keepdims: bool = False, ord: Any = "fro") -> Staged:
    """np.linalg.matrix_norm: the matrix norm of each matrix of a stack (the last two axes)."""
    x = A.lift(b, A.normalize_operand(b, x))
    if not is_inexact(x.dtype):
        x = A.convert(b, x, F64)
    if x.ndim < 2:
        raise Reject(UnsupportedError, f"{x.ndim}-dimensional array given. Array must be at least "
                     "two-dimensional", None)
    return matrix_norm_axes(b, x, ord, x.ndim - 2, x.ndim - 1, keepdims)


# ---- einsum ---------------------------------------------------------------------------


def _expand_ellipsis(spec: str, xs: list[Staged]) -> str:
    """Replace '...' by letters for the broadcast dimensions (right-aligned, as NumPy does)."""
    ins, arrow, out = spec.partition("->")
    terms = ins.split(",")
    free = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in spec]
    counts = [x.ndim - (len(t) - 3) if "..." in t else 0 for t, x in zip(terms, xs)]
    n_ell = max(counts, default=0)
    letters = "".join(free[:n_ell])
    terms = [t.replace("...", letters[n_ell - k:]) for t, k in zip(terms, counts)]
    joined = "".join(terms)
    if arrow:
        out = out.replace("...", letters)
    else:
        out = letters + "".join(sorted(c for c in set(joined) if joined.count(c) == 1
                                       and c not in letters))
    return ",".join(terms) + "->" + out


def _parse_einsum(subscripts: str, n: int) -> tuple[list[str], str]:
    spec = subscripts.replace(" ", "")
    ins, arrow, out = spec.partition("->")
    terms = ins.split(",")
    if len(terms) != n:
        raise Reject(CompileError, "more operands provided to einstein sum function than "
                     "specified in the subscripts string" if n > len(terms) else
                     "fewer operands provided to einstein sum function than specified in the "
                     "subscripts string")
    if not arrow:
        letters = "".join(terms)
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    return terms, out


def einsum(b: Builder, subscripts: str, *operands: Any, dtype: Any = None, optimize: Any = False,
           out: Any = None) -> Staged:
    if not isinstance(subscripts, str):
        raise Reject(UnsupportedError, "einsum needs a subscripts string as first argument")
    xs = _promote(b, *operands)
    if "..." in subscripts:
        subscripts = _expand_ellipsis(subscripts.replace(" ", ""), xs)
    terms, out_spec = _parse_einsum(subscripts, len(operands))
    xs = _broadcast_labels(b, terms, xs)
    _check_einsum_sizes(terms, xs, out_spec)
    ops = [_take_diagonals(b, x, list(t)) for x, t in zip(xs, terms)]
    ops = [_sum_private(b, x, letters, ops, i, out_spec) for i, (x, letters) in enumerate(ops)]
    acc, letters = ops[0]
    for i, (x, lx) in enumerate(ops[1:], 1):
        later = set(out_spec).union(*[set(l) for _, l in ops[i + 1:]])
        acc, letters = _contract_pair(b, acc, letters, x, lx, later)
    extra = tuple(i for i, c in enumerate(letters) if c not in out_spec)
    if extra:
        acc = Staged(b.emit1(P.reduce_sum, [acc.value], {"axes": extra}))
        letters = [c for c in letters if c in out_spec]
    perm = tuple(letters.index(c) for c in out_spec)
    if perm != tuple(range(len(perm))):
        acc = Staged(b.emit1(P.transpose, [acc.value], {"permutation": perm}))
    return acc if dtype is None else A.convert(b, acc, A.supported_dtype(dtype))


def _broadcast_labels(b: Builder, terms: list[str], xs: list[Staged]) -> list[Staged]:
    """Size-1 dims of a label stretch to the label's size in other operands, as NumPy
    broadcasts them (``np.einsum('ij,ij->i', ones((3, 1)), ones((3, 4)))``); a label repeated
    within one operand must have one size there."""
    sizes: dict[str, Any] = {}
    for i, (t, x) in enumerate(zip(terms, xs)):
        own: dict[str, Any] = {}
        for c, d in zip(t, x.shape):
            if c in own and own[c] != d:
                raise Reject(ShapeMismatchError, f"dimensions in operand {i} for collapsing index "
                             f"'{c}' don't match ({own[c]} != {d})")
            own[c] = d
            if d != 1 or c not in sizes:
                sizes[c] = d
    out = []
    for t, x in zip(terms, xs):
        target = tuple(sizes[c] if d == 1 and c in sizes else d for c, d in zip(t, x.shape))
        out.append(Staged(A.broadcast_value(b, x.value, target)) if target != tuple(x.shape) else x)
    return out


def _check_einsum_sizes(terms: list[str], xs: list[Staged], out_spec: str) -> None:
    sizes: dict[str, Any] = {}
    for i, (t, x) in enumerate(zip(terms, xs)):
        if len(t) != x.ndim:
            raise Reject(CompileError, "einstein sum subscripts string contains too many "
                         f"subscripts for operand {i}" if len(t) > x.ndim else
                         "operand has more dimensions than subscripts given in einstein sum, but "
                         "no '...' ellipsis provided to broadcast the extra dimensions.")
        for c, d in zip(t, x.shape):
            if c in sizes and sizes[c] != d:
                raise Reject(ShapeMismatchError, f"size of label '{c}' for operand {i} ({d}) does "
                             f"not match previous terms ({sizes[c]}).")
            sizes[c] = d
    for c in out_spec:
        if c not in sizes:
            raise Reject(CompileError, "einstein sum subscripts string included output subscript "
                         f"'{c}' which never appeared in an input")


def _take_diagonals(b: Builder, x: Staged, letters: list[str]) -> tuple[Staged, list[str]]:
    while True:
        repeated = next((c for c in letters if letters.count(c) > 1), None)
        if repeated is None:
            return x, letters
        p = letters.index(repeated)
        q = letters.index(repeated, p + 1)
        x = Staged(ops.diagonal(b, x.value, axis1=p, axis2=q))
        letters = [c for i, c in enumerate(letters) if i not in (p, q)] + [repeated]


def _sum_private(b: Builder, x: Staged, letters: list[str], ops: Sequence[Any], i: int,
                 out_spec: str) -> tuple[Staged, list[str]]:
    others = set().union(*[set(l) for j, (_, l) in enumerate(ops) if j != i]) | set(out_spec)
    axes = tuple(k for k, c in enumerate(letters) if c not in others)
    if not axes:
        return x, letters
    x = Staged(b.emit1(P.reduce_sum, [x.value], {"axes": axes}))
    return x, [c for k, c in enumerate(letters) if k not in axes]


def _contract_pair(b: Builder, x: Staged, lx: list[str], y: Staged, ly: list[str],
                   later: set[str]) -> tuple[Staged, list[str]]:
    shared = [c for c in lx if c in ly]
    batch = [c for c in shared if c in later]
    contract = [c for c in shared if c not in later]
    out = dot_general(b, x, y, (tuple(lx.index(c) for c in contract),
                                tuple(ly.index(c) for c in contract)),
                      (tuple(lx.index(c) for c in batch), tuple(ly.index(c) for c in batch)))
    letters = batch + [c for c in lx if c not in shared] + [c for c in ly if c not in shared]
    return out, letters

