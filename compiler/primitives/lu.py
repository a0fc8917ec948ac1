"""LU factorization with partial pivoting and triangular solves: ``lu``, ``triangular_solve``
and ``lu_solve``, the primitives behind np.linalg.solve, inv, det and slogdet.

``lu(a) -> (lu, pivots, perm)`` factors each matrix of a stack ``[..., n, n]`` as LAPACK's
getrf does: ``a[perm] = L @ U`` with L unit lower triangular and U upper triangular, packed
in one matrix (L below the diagonal, U on and above it). Row k is swapped with row
``pivots[k]`` (0-based) at step k, the row of the largest magnitude in the column (``|re| +
|im|`` for complex values, as LAPACK's i?amax; the first one on ties). An exact zero pivot
is not an error: the column is left unscaled (as getrf does, reporting ``info > 0``), U has a
zero on its diagonal, and the frontend checks for it where NumPy raises LinAlgError.

``triangular_solve(a, b) {lower, transpose_a, unit_diagonal}`` solves ``op(A) x = b`` for
each matrix of the stack, with A the lower (or upper) triangle of `a` (the other triangle
is never read: `a` may be a packed LU), ``op`` one of 'N', 'T' (transpose), 'C'
(conjugate transpose), and a diagonal of ones when ``unit_diagonal``. ``b`` is ``[..., n,
k]`` with the same stacked axes.

``lu_solve(a, b) -> (x, ok)`` solves ``a @ x = b`` (LAPACK's gesv: lu, the permutation, the
two triangular solves), ``ok`` ``bool[...]`` false where a pivot is exactly zero (x is NaN
there); the frontend raises LinAlgError("Singular matrix") unless every flag is true. Its
rules are the solve's own (jvp ``solve(a, db - da x)``, vjp ``b_bar = solve(a^H, x_bar)``,
``a_bar = -b_bar x^H``); a small static system eliminates on ``[a | b]`` unrolled.

    %lu, %piv, %perm = lu(%a) : f64[8, 4, 4], i64[8, 4], i64[8, 4]
    %y = triangular_solve(%lu, %pb) {lower=True, transpose_a='N', unit_diagonal=True}

Rules: vmap moves the batch axis to the front (matrices.batch_rule). The jvp of lu is
``L @ tril(Z, -1) + triu(Z) @ U`` with ``Z = L^-1 P da U^-1``; its vjp the adjoint of that
map, ``P^T L^-H (tril(L^H C, -1) + triu(C U^H)) U^-H``. The jvp of a triangular solve is the
solve of ``db - op(dA) x``; its vjp solves with ``op(A)^H`` and gives ``-b_bar x^H`` (its
transpose, its conjugate transpose) on A's triangle. Both rules are written with these two
primitives, so they differentiate again.

Code (``decomposition``): for a small static n, unrolled over the entries (each entry a
batch-shaped value: a batch of matrices becomes elementwise code across the batch, the
pivot choice compare/select chains; a large static stack in chunks of CHUNK matrices, so
that the intermediates stay in cache); otherwise a ``for`` loop over the matrices of the
stack and, inside, over the columns (getf2: pivot search, row swap, the rows below updated
in place by a loop) or the rows of the solve. For large matrices both primitives call
LAPACK's getrf and BLAS's trsm (``library_when`` and ``lower`` from factor_lapack.py), this
code staying the op's region: the fallback of a kernel without a provider.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from compiler.ir import dims
from compiler.ir.builder import Builder, new_block
from compiler.ir.core import Op, Value
from compiler.ir.primitive import define
from compiler.ir.types import BOOL, I64, TensorType, is_inexact
from compiler.primitives import ad, factor_lapack, ops
from compiler.primitives.base import check
from compiler.primitives.matrices import assemble, batch_rule, batch_shape, entries, matmul, mH, mT

Types = tuple[TensorType, ...]

#: the largest static n whose factorization and solves are unrolled over the entries
UNROLL_MAX = 8

_TRANSPOSES = ("N", "T", "C")


# ---- shape rules and NumPy references --------------------------------------------------------

def _lu_rule(in_types: Types, params: dict[str, Any]) -> Types:
    (a,) = in_types
    check(a.ndim >= 2 and a.shape[-1] == a.shape[-2], f"lu: expected a stack of square matrices, got {a}")
    check(is_inexact(a.dtype), f"lu: expected a float or complex matrix, got {a}")
    ints = TensorType(I64, tuple(a.shape[:-1]))
    return (a, ints, ints)


def _magnitude1(x: np.ndarray) -> np.ndarray:
    """|re| + |im| (|x| for real x): the pivot order of LAPACK's i?amax."""
    return np.abs(x.real) + np.abs(x.imag) if np.iscomplexobj(x) else np.abs(x)


def _ref_lu(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = np.array(a, copy=True)
    n = a.shape[-1]
    flat = a.reshape(-1, n, n)
    piv = np.zeros((flat.shape[0], n), np.int64)
    perm = np.tile(np.arange(n, dtype=np.int64), (flat.shape[0], 1))
    with np.errstate(all="ignore"):
        for m, pv, pm in zip(flat, piv, perm):
            for k in range(n):
                mag = _magnitude1(m[k:, k])
                p, best = k, mag[0]
                for r in range(1, n - k):
                    if mag[r] > best:
                        p, best = k + r, mag[r]
                pv[k] = p
                m[[k, p]] = m[[p, k]]
                pm[[k, p]] = pm[[p, k]]
                pivot = m[k, k]
                if pivot != 0:
                    m[k + 1:, k] *= m.dtype.type(1) / pivot
                m[k + 1:, k + 1:] -= np.multiply.outer(m[k + 1:, k], m[k, k + 1:])
    return flat.reshape(a.shape), piv.reshape(a.shape[:-1]), perm.reshape(a.shape[:-1])


def _tri_rule(in_types: Types, params: dict[str, Any]) -> Types:
    a, rhs = in_types
    check(a.ndim >= 2 and a.shape[-1] == a.shape[-2],
          f"triangular_solve: expected a stack of square matrices, got {a}")
    check(rhs.ndim == a.ndim and tuple(rhs.shape[:-1]) == tuple(a.shape[:-1]),
          f"triangular_solve: right-hand side {rhs} does not match {a}")
    check(a.dtype == rhs.dtype and is_inexact(a.dtype), f"triangular_solve: dtypes {a.dtype}, {rhs.dtype}")
    check(params["transpose_a"] in _TRANSPOSES, f"triangular_solve: transpose_a {params['transpose_a']!r}")
    return (rhs,)


def _ref_tri(a: np.ndarray, rhs: np.ndarray, lower: bool, transpose_a: str,
             unit_diagonal: bool) -> np.ndarray:
    n = a.shape[-1]
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        t = t.copy()
        t[..., range(n), range(n)] = 1
    if transpose_a != "N":
        t = np.swapaxes(t, -1, -2)
        if transpose_a == "C":
            t = np.conj(t)
    forward = lower == (transpose_a == "N")
    x = np.zeros(rhs.shape, rhs.dtype)
    with np.errstate(all="ignore"):
        for i in (range(n) if forward else range(n - 1, -1, -1)):
            done = slice(0, i) if forward else slice(i + 1, n)
            s = rhs[..., i, :] - np.einsum("...j,...jk->...k", t[..., i, done], x[..., done, :])
            x[..., i, :] = s if unit_diagonal else s / t[..., i, i, None]
    return x


def _lu_solve_rule(in_types: Types, params: dict[str, Any]) -> Types:
    a, rhs = in_types
    check(a.ndim >= 2 and a.shape[-1] == a.shape[-2], f"lu_solve: expected a stack of square matrices, got {a}")
    check(rhs.ndim == a.ndim and tuple(rhs.shape[:-1]) == tuple(a.shape[:-1]),
          f"lu_solve: right-hand side {rhs} does not match {a}")
    check(a.dtype == rhs.dtype and is_inexact(a.dtype), f"lu_solve: dtypes {a.dtype}, {rhs.dtype}")
    return (rhs, TensorType(BOOL, tuple(a.shape[:-2])))


def _ref_lu_solve(a: np.ndarray, rhs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n, k = rhs.shape[-2:]
    flat_a, flat_b = a.reshape(-1, n, n), rhs.reshape(-1, n, k)
    x = np.full(flat_b.shape, np.nan, rhs.dtype)
    ok = np.ones(len(flat_a), bool)
    for t, (m, r) in enumerate(zip(flat_a, flat_b)):
        try:
            x[t] = np.linalg.solve(m, r)
        except np.linalg.LinAlgError:
            ok[t] = False
    return x.reshape(rhs.shape), ok.reshape(a.shape[:-2])


# ---- constructors ----------------------------------------------------------------------------

def lu(b: Builder, a: Value) -> tuple[Value, Value, Value]:
    """(packed LU, pivots, perm) of a stack of square matrices (see the module docstring)."""
    packed, piv, perm = b.emit(ops.lu_p, [a])
    return packed, piv, perm


def triangular_solve(b: Builder, a: Value, rhs: Value, lower: bool, transpose_a: str = "N",
                     unit_diagonal: bool = False) -> Value:
    """x with op(tri(a)) @ x == rhs for stacks a [..., n, n], rhs [..., n, k]."""
    return b.emit1(ops.triangular_solve_p, [a, rhs],
                   {"lower": lower, "transpose_a": transpose_a, "unit_diagonal": unit_diagonal})


def lu_solve(b: Builder, a: Value, rhs: Value) -> tuple[Value, Value]:
    """(x, ok): x with a @ x == rhs for stacks a [..., n, n], rhs [..., n, k] (LU with partial
    pivoting), ok bool[...] false where a pivot is exactly zero (NumPy's "Singular matrix";
    x is NaN there)."""
    x, ok = b.emit(ops.lu_solve_p, [a, rhs])
    return x, ok


# ---- helpers on stacks -----------------------------------------------------------------------

def _bcast(b: Builder, x: Value, shape: tuple, dims: tuple) -> Value:
    return x if tuple(x.type.shape) == tuple(shape) else ops.broadcast_in_dim(b, x, shape, dims)


def triangle(b: Builder, x: Value, lower: bool, strict: bool = False) -> Value:
    """np.tril(x) / np.triu(x) of each matrix (``strict``: without the diagonal)."""
    shape, nb = tuple(x.type.shape), x.type.ndim - 2
    r, c = ops.iota(b, I64, shape, nb), ops.iota(b, I64, shape, nb + 1)
    keep = (ops.gt if strict else ops.ge)(b, r, c) if lower else (ops.lt if strict else ops.le)(b, r, c)
    return ops.select(b, keep, x, ops.zeros_like(b, x))


def unit_lower(b: Builder, packed: Value) -> Value:
    """L of a packed LU: its strict lower triangle plus the identity."""
    shape, nb = tuple(packed.type.shape), packed.type.ndim - 2
    r, c = ops.iota(b, I64, shape, nb), ops.iota(b, I64, shape, nb + 1)
    strict = ops.select(b, ops.gt(b, r, c), packed, ops.zeros_like(b, packed))
    return ops.select(b, ops.eq(b, r, c), ops.full_like(b, 1, packed), strict)


def permute_rows(b: Builder, x: Value, perm: Value, inverse: bool = False) -> Value:
    """``x[..., perm, :]`` per stacked matrix (``inverse``: the rows put back, y[perm] = x),
    for x [..., n, k] and an int64 perm [..., n]: selects, so it differentiates and fuses."""
    *batch, n, k = x.type.shape
    nb = len(batch)
    if n == 0:
        return x
    if isinstance(n, int) and isinstance(k, int) and n <= UNROLL_MAX and k <= 4 * UNROLL_MAX and not inverse:
        xs, ps = entries(b, x), _vector_entries(b, perm)
        n, k = _static(n), _static(k)
        rows = []
        for i in range(n):
            row = []
            for c in range(k):
                acc = xs[0][c]
                for src in range(1, n):
                    acc = ops.select(b, ops.eq(b, ps[i], ops.full_like(b, src, ps[i])), xs[src][c], acc)
                row.append(acc)
            rows.append(row)
        return assemble(b, rows)
    if not inverse:         # a gather of rows: x flattened to [count * n, k], row perm[i] + t * n
        count: Any = 1
        for d in batch:
            count = dims.mul(count, d)
        flat = ops.reshape(b, x, (dims.mul(count, n), k))
        p = ops.reshape(b, perm, (count, n))
        nv = ops.broadcast_in_dim(b, ops.size_of(b, n, I64), (count, n), ())
        at = ops.add(b, p, ops.mul(b, ops.iota(b, I64, (count, n), 0), nv))
        return ops.reshape(b, ops.take(b, flat, at, 0), tuple(batch) + (n, k))
    shape = tuple(batch) + (n, n, k)          # [..., i, j, c]: perm[i] == j picks x[j]
    p = _bcast(b, perm, shape, tuple(range(nb)) + ((nb + 1,) if inverse else (nb,)))
    pos = ops.iota(b, I64, shape, nb if inverse else nb + 1)
    xb = _bcast(b, x, shape, tuple(range(nb)) + (nb + 1, nb + 2))
    picked = ops.select(b, ops.eq(b, p, pos), xb, ops.zeros_like(b, xb))
    return ops.reduce_sum(b, picked, [nb + 1])


def _vector_entries(b: Builder, v: Value) -> list[Value]:
    *batch, last = v.type.shape
    nb, n = len(batch), _static(last)
    return [ops.reshape(b, ops.slice_(b, v, [0] * nb + [i], list(batch) + [i + 1]), tuple(batch))
            for i in range(n)]


def _op_of(b: Builder, t: Value, transpose_a: str) -> Value:
    if transpose_a == "N":
        return t
    return mH(b, t) if transpose_a == "C" else mT(b, t)


# ---- transform rules -------------------------------------------------------------------------

def _lu_jvp(b: Builder, op: Op, primals: list[Value], tangents: list[Value | None]) -> list[Value | None]:
    (da,) = tangents
    if da is None:
        return [None, None, None]
    packed, _, perm = b.emit(op.prim, list(primals), op.params)     # CSE merges it with the primal
    x = permute_rows(b, da, perm)
    y = triangular_solve(b, packed, x, lower=True, unit_diagonal=True)          # L^-1 P da
    z = mT(b, triangular_solve(b, packed, mT(b, y), lower=False, transpose_a="T"))  # ... U^-1
    lower = matmul(b, unit_lower(b, packed), triangle(b, z, lower=True, strict=True))
    upper = matmul(b, triangle(b, z, lower=False), triangle(b, packed, lower=False))
    return [ops.add(b, lower, upper), None, None]


def _lu_vjp(b: Builder, op: Op, primals: list[Value], outs: list[Value],
            cts: list[Value | None]) -> list[Value | None]:
    ct = cts[0]
    if ct is None:
        return [None]
    packed, _, perm = outs
    low, up = unit_lower(b, packed), triangle(b, packed, lower=False)
    xbar = ops.add(b, triangle(b, matmul(b, mH(b, low), ct), lower=True, strict=True),
                   triangle(b, matmul(b, ct, mH(b, up)), lower=False))
    w = triangular_solve(b, packed, xbar, lower=True, transpose_a="C", unit_diagonal=True)  # L^-H X
    v = mH(b, triangular_solve(b, packed, mH(b, w), lower=False))                            # ... U^-H
    return [permute_rows(b, v, perm, inverse=True)]


def _tri_jvp(b: Builder, op: Op, primals: list[Value], tangents: list[Value | None]) -> list[Value | None]:
    a, rhs = primals
    da, db = tangents
    if da is None and db is None:
        return [None]
    p = op.params
    t = db
    if da is not None:
        x = ad.op_output(b, op, primals)
        dtri = triangle(b, da, p["lower"], strict=p["unit_diagonal"])
        t = ad.add_any(b, t, ops.neg(b, matmul(b, _op_of(b, dtri, p["transpose_a"]), x)))
    assert t is not None
    return [triangular_solve(b, a, t, p["lower"], p["transpose_a"], p["unit_diagonal"])]


def _tri_vjp(b: Builder, op: Op, primals: list[Value], outs: list[Value],
             cts: list[Value | None]) -> list[Value | None]:
    (ct,), (x,) = cts, outs
    if ct is None:
        return [None, None]
    a = primals[0]
    p = op.params
    lower, ta, unit = p["lower"], p["transpose_a"], p["unit_diagonal"]
    complex_t = ta == "T" and a.type.dtype.kind == "c"
    if complex_t:      # op(A)^-H = conj(A)^-1
        bbar = ops.conj(b, triangular_solve(b, a, ops.conj(b, ct), lower, "N", unit))
    else:
        bbar = triangular_solve(b, a, ct, lower, {"N": "C", "T": "N", "C": "N"}[ta], unit)
    m = matmul(b, bbar, mH(b, x))
    abar = {"N": m, "T": mT(b, m), "C": mH(b, m)}[ta] if ta != "N" else m
    abar = triangle(b, ops.neg(b, abar), lower, strict=unit)
    return [abar, bbar]


def _lu_solve_jvp(b: Builder, op: Op, primals: list[Value], tangents: list[Value | None]) -> list[Value | None]:
    a, rhs = primals
    da, db = tangents
    if da is None and db is None:
        return [None, None]
    t = db
    if da is not None:
        x, _ = b.emit(op.prim, list(primals), op.params)       # CSE merges it with the primal
        t = ad.add_any(b, t, ops.neg(b, matmul(b, da, x)))
    assert t is not None
    return [lu_solve(b, a, t)[0], None]


def _lu_solve_vjp(b: Builder, op: Op, primals: list[Value], outs: list[Value],
                  cts: list[Value | None]) -> list[Value | None]:
    ct = cts[0]
    if ct is None:
        return [None, None]
    bbar = lu_solve(b, mH(b, primals[0]), ct)[0]
    return [ops.neg(b, matmul(b, bbar, mH(b, outs[0]))), bbar]


# ---- decompositions: generated code ----------------------------------------------------------

def _static(d: Any) -> int:
    """A dim the caller checked to be static."""
    assert isinstance(d, int), d
    return d


def _static_small(n: Any) -> bool:
    return isinstance(n, int) and n <= UNROLL_MAX


def _decompose_lu(b: Builder, op: Op, args: list[Value]) -> list[Value] | None:
    (a,) = args
    n = a.type.shape[-1]
    if n == 0:                  # nothing to factor
        empty = ops.full(b, 0, TensorType(I64, batch_shape(a) + (0,)))
        return [a, empty, empty]
    if not _static_small(n):
        return _lu_loop(b, a)
    vec = TensorType(I64, (n,))
    return _chunked(b, [a], [a.type.with_shape((n, n)), vec, vec], lambda bb, xs: _lu_unrolled(bb, xs[0]))


#: unrolled code runs on chunks of this many matrices of a large static stack, so that its
#: many intermediate values (one per entry and step, each as long as the chunk) stay in cache
CHUNK = 64


def _chunked(b: Builder, inputs: list[Value], core_types: list[TensorType],
             core: Callable[[Builder, list[Value]], list[Value]]) -> list[Value]:
    """``core(b, stacks) -> stacks`` (unrolled code, elementwise across the stack) on the
    whole stack, or, for a static stack of more than CHUNK matrices, in a ``for`` loop over
    chunks of CHUNK. The last chunk's start is clamped to count - CHUNK (dynamic_slice's
    rule), so it overlaps the one before and recomputes a few matrices instead of needing a
    second copy of the unrolled code for the rest: that copy tripled the code LLVM optimizes,
    and its time grows faster than the code (a 1000 x 4x4 solve, inv and det: 19 s to compile)."""
    nb = inputs[0].type.ndim - 2
    batch = tuple(inputs[0].type.shape[:nb])
    count = 1
    for d in batch:
        if not isinstance(d, int):
            return core(b, inputs)
        count *= d
    if count < 2 * CHUNK:
        return core(b, inputs)
    flat = [ops.reshape(b, x, (count,) + tuple(x.type.shape[nb:])) for x in inputs]
    full = -(-count // CHUNK)
    out_types = [TensorType(t.dtype, (count,) + tuple(t.shape)) for t in core_types]
    body = new_block([_scalar_i64()] + [f.type for f in flat] + out_types)
    bb = Builder(body, b.loc)
    i, *xs = body.args
    ins, outs = xs[:len(flat)], xs[len(flat):]
    start = ops.mul(bb, i, _i64(bb, CHUNK))
    zero = _i64(bb, 0)
    pieces = [ops.dynamic_slice(bb, x, [start] + [zero] * (x.type.ndim - 1), (CHUNK,) + tuple(x.type.shape[1:]))
              for x in ins]
    done = core(bb, pieces)
    body.results = list(ins) + [ops.dynamic_update_slice(bb, o, d, [start] + [zero] * (o.type.ndim - 1))
                                for o, d in zip(outs, done)]
    init = [ops.full(b, 0, t) for t in out_types]
    res = list(ops.for_loop(b, _i64(b, 0), _i64(b, full), flat + init, body, 1, full))[len(flat):]
    return [ops.reshape(b, r, batch + tuple(t.shape)) for r, t in zip(res, core_types)]


def _magnitude(b: Builder, x: Value) -> Value:
    if x.type.dtype.kind == "c":
        return ops.add(b, ops.abs_(b, ops.real(b, x)), ops.abs_(b, ops.imag(b, x)))
    return ops.abs_(b, x)


def _lu_unrolled(b: Builder, a: Value) -> list[Value]:
    n = _static(a.type.shape[-1])
    batch = batch_shape(a)
    m = entries(b, a)
    idx = [ops.full(b, i, TensorType(I64, batch)) for i in range(n)]
    perm = list(idx)
    piv = []
    one = ops.full(b, 1, TensorType(a.type.dtype, batch))
    zero = ops.zeros_like(b, one)
    for k in range(n):
        best, p = _magnitude(b, m[k][k]), idx[k]
        picks = []            # (is row r the pivot row?) for r > k
        for r in range(k + 1, n):
            mag = _magnitude(b, m[r][k])
            better = ops.gt(b, mag, best)
            best, p = ops.select(b, better, mag, best), ops.select(b, better, idx[r], p)
        for r in range(k + 1, n):
            picks.append(ops.eq(b, p, idx[r]))
        piv.append(p)
        if picks:
            # the new row k is the pivot row; the pivot row gets the old row k
            new_k = list(m[k])
            for j in range(n):
                for r, is_r in zip(range(k + 1, n), picks):
                    new_k[j] = ops.select(b, is_r, m[r][j], new_k[j])
            for r, is_r in zip(range(k + 1, n), picks):
                m[r] = [ops.select(b, is_r, m[k][j], m[r][j]) for j in range(n)]
            m[k] = new_k
            pk = perm[k]
            for r, is_r in zip(range(k + 1, n), picks):
                pk = ops.select(b, is_r, perm[r], pk)
            perm[k + 1:] = [ops.select(b, is_r, perm[k], perm[r]) for r, is_r in zip(range(k + 1, n), picks)]
            perm[k] = pk
        pivot = m[k][k]
        if k + 1 < n:
            recip = ops.div(b, one, ops.select(b, ops.eq(b, pivot, zero), one, pivot))
            for r in range(k + 1, n):
                m[r][k] = ops.mul(b, m[r][k], recip)
                for j in range(k + 1, n):
                    m[r][j] = ops.sub(b, m[r][j], ops.mul(b, m[r][k], m[k][j]))
    return [assemble(b, m), _stack_vector(b, piv), _stack_vector(b, perm)]


def _lu_solve_unrolled(b: Builder, a: Value, rhs: Value) -> list[Value]:
    """Gaussian elimination with partial pivoting (the pivots of _lu_unrolled) on the
    augmented entries [a | rhs], then back substitution by U's reciprocal pivots."""
    n, k = _static(a.type.shape[-1]), _static(rhs.type.shape[-1])
    batch = batch_shape(a)
    m, r = entries(b, a), entries(b, rhs)
    one = ops.full(b, 1, TensorType(a.type.dtype, batch))
    zero = ops.zeros_like(b, one)
    recips: list[Value] = []
    ok: Value | None = None
    for c in range(n):
        best = _magnitude(b, m[c][c])
        choice = ops.full(b, c, TensorType(I64, batch))
        for i in range(c + 1, n):
            mag = _magnitude(b, m[i][c])
            better = ops.gt(b, mag, best)
            best = ops.select(b, better, mag, best)
            choice = ops.select(b, better, ops.full(b, i, TensorType(I64, batch)), choice)
        if c + 1 < n:          # row c and the pivot row swap their columns c.. of [a | rhs]
            rows = {i: m[i][c:] + r[i] for i in range(c, n)}
            picks = {i: ops.eq(b, choice, ops.full(b, i, TensorType(I64, batch))) for i in range(c + 1, n)}
            new_c = rows[c]
            for i in range(c + 1, n):
                new_c = [ops.select(b, picks[i], v, w) for v, w in zip(rows[i], new_c)]
            for i in range(c + 1, n):
                swapped = [ops.select(b, picks[i], v, w) for v, w in zip(rows[c], rows[i])]
                m[i][c:], r[i] = swapped[:n - c], swapped[n - c:]
            m[c][c:], r[c] = new_c[:n - c], new_c[n - c:]
        pivot = m[c][c]
        good = ops.ne(b, pivot, zero)
        ok = good if ok is None else ops.and_(b, ok, good)
        recip = ops.div(b, one, ops.select(b, good, pivot, one))
        recips.append(recip)
        for i in range(c + 1, n):
            f = ops.mul(b, m[i][c], recip)
            for j in range(c + 1, n):
                m[i][j] = ops.sub(b, m[i][j], ops.mul(b, f, m[c][j]))
            r[i] = [ops.sub(b, v, ops.mul(b, f, w)) for v, w in zip(r[i], r[c])]
    assert ok is not None
    x: list[list[Value]] = [[] for _ in range(n)]
    nan = ops.full_like(b, np.nan, one)
    for i in reversed(range(n)):
        row = []
        for j in range(k):
            s = r[i][j]
            for c in range(i + 1, n):
                s = ops.sub(b, s, ops.mul(b, m[i][c], x[c][j]))
            row.append(ops.mul(b, s, recips[i]))
        x[i] = row
    return [assemble(b, [[ops.select(b, ok, v, nan) for v in row] for row in x]), ok]


def _stack_vector(b: Builder, xs: list[Value]) -> Value:
    batch = tuple(xs[0].type.shape)
    flat = [ops.reshape(b, v, batch + (1,)) for v in xs]
    return flat[0] if len(flat) == 1 else ops.concatenate(b, flat, len(batch))


def _scalar_i64() -> TensorType:
    return TensorType(I64, ())


def _i64(b: Builder, v: int) -> Value:
    return ops.scalar(b, v, I64)


def _per_matrix(b: Builder, inputs: list[Value], outputs: list[Value], core: Callable[..., list[Value]],
                core_ndim: int = 2) -> list[Value]:
    """``core(b, inputs, outputs) -> outputs`` applied to each element of stacks that share
    their leading axes (all but the last `core_ndim` of ``inputs[0]``), in a ``for`` loop over
    the flattened batch that reads the inputs and updates the outputs one element at a time:
    one matrix at a time stays in cache."""
    nb = inputs[0].type.ndim - core_ndim
    if nb == 0:
        return core(b, inputs, outputs)
    batch = tuple(inputs[0].type.shape[:nb])
    count: Any = 1
    for d in batch:
        count = dims.mul(count, d)
    flat = [ops.reshape(b, s, (count,) + tuple(s.type.shape[nb:])) for s in inputs + outputs]
    body = new_block([_scalar_i64()] + [f.type for f in flat])
    bb = Builder(body, b.loc)
    i, *xs = body.args
    zero = _i64(bb, 0)
    items = []
    for x in xs:
        shape = tuple(x.type.shape[1:])
        items.append(ops.reshape(bb, ops.dynamic_slice(bb, x, [i] + [zero] * len(shape), (1,) + shape), shape))
    done = core(bb, items[:len(inputs)], items[len(inputs):])
    outs = xs[len(inputs):]
    body.results = xs[:len(inputs)] + [
        ops.dynamic_update_slice(bb, x, ops.reshape(bb, d, (1,) + tuple(d.type.shape)), [i] + [zero] * d.type.ndim)
        for x, d in zip(outs, done)]
    res = ops.for_loop(b, _i64(b, 0), ops.size_of(b, count, I64), flat, body, 1, count)
    return [ops.reshape(b, r, tuple(s.type.shape)) for r, s in zip(res[len(inputs):], outputs)]


def _lu_loop(b: Builder, a: Value) -> list[Value]:
    n = a.type.shape[-1]
    batch = batch_shape(a)
    vec = TensorType(I64, batch + (n,))
    piv0, perm0 = ops.full(b, 0, vec), ops.iota(b, I64, batch + (n,), len(batch))
    return _per_matrix(b, [a], [a, piv0, perm0], lambda bb, _, outs: _lu_matrix(bb, outs))


def _lu_matrix(b: Builder, args: list[Value]) -> list[Value]:
    """getf2 on one matrix: for k in range(n): the pivot row p (the first largest magnitude
    at rows >= k of column k; a NaN never wins, as in i?amax), rows k and p swapped, then
    each row below scaled and updated in place by a loop over the rows."""
    a, piv, perm = args
    n = a.type.shape[-1]
    body = new_block([_scalar_i64(), a.type, piv.type, perm.type])
    bb = Builder(body, b.loc)
    k, m, pv, pm = body.args
    zero = _i64(bb, 0)
    col = ops.reshape(bb, ops.dynamic_slice(bb, m, [zero, k], (n, 1)), (n,))
    mag = _magnitude(bb, col)
    real = TensorType(mag.type.dtype, (n,))
    rows = ops.iota(bb, I64, (n,), 0)
    kv = ops.broadcast_in_dim(bb, k, (n,), ())
    minus = ops.full(bb, -1, real)
    keyed = ops.select(bb, ops.isnan(bb, mag),
                       ops.select(bb, ops.eq(bb, rows, kv), ops.full(bb, np.inf, real), minus), mag)
    keyed = ops.select(bb, ops.lt(bb, rows, kv), minus, keyed)
    best = ops.broadcast_in_dim(bb, ops.reduce_max(bb, keyed, [0]), (n,), ())   # two reductions
    p = ops.reduce_min(bb, ops.select(bb, ops.eq(bb, keyed, best), rows,                # that vectorize
                                      ops.broadcast_in_dim(bb, ops.size_of(bb, n, I64), (n,), ())), [0])
    row_k = ops.dynamic_slice(bb, m, [k, zero], (1, n))
    row_p = ops.dynamic_slice(bb, m, [p, zero], (1, n))
    m = ops.dynamic_update_slice(bb, m, row_k, [p, zero])
    m = ops.dynamic_update_slice(bb, m, row_p, [k, zero])
    pv = ops.dynamic_update_slice(bb, pv, ops.reshape(bb, p, (1,)), [k])
    perm_k = ops.dynamic_slice(bb, pm, [k], (1,))
    perm_p = ops.dynamic_slice(bb, pm, [p], (1,))
    pm = ops.dynamic_update_slice(bb, pm, perm_k, [p])
    pm = ops.dynamic_update_slice(bb, pm, perm_p, [k])
    pivot = ops.reshape(bb, ops.dynamic_slice(bb, row_p, [zero, k], (1, 1)), ())
    one = ops.full(bb, 1, pivot.type)
    recip = ops.div(bb, one, ops.select(bb, ops.eq(bb, pivot, ops.zeros_like(bb, pivot)), one, pivot))
    (m, *_) = _eliminate(bb, m, row_p, recip, k)
    body.results = [m, pv, pm]
    return list(ops.for_loop(b, _i64(b, 0), ops.size_of(b, n, I64), [a, piv, perm], body, 1, n))


def _eliminate(b: Builder, m: Value, urow: Value, recip: Value, k: Value) -> list[Value]:
    """Rows r > k of m: m[r, k] *= recip, m[r, k+1:] -= m[r, k] * urow[k+1:] (in place)."""
    n = m.type.shape[-1]
    body = new_block([_scalar_i64(), m.type, urow.type, recip.type, k.type])
    bb = Builder(body, b.loc)
    r, x, u, rc, kk = body.args
    zero = _i64(bb, 0)
    row = ops.dynamic_slice(bb, x, [r, zero], (1, n))
    lval = ops.mul(bb, ops.reshape(bb, ops.dynamic_slice(bb, x, [r, kk], (1, 1)), ()), rc)
    lrow = ops.broadcast_in_dim(bb, lval, (1, n), ())
    cols = ops.iota(bb, I64, (1, n), 1)
    kb = ops.broadcast_in_dim(bb, kk, (1, n), ())
    new = ops.select(bb, ops.gt(bb, cols, kb), ops.sub(bb, row, ops.mul(bb, lrow, u)),
                     ops.select(bb, ops.eq(bb, cols, kb), lrow, row))
    body.results = [ops.dynamic_update_slice(bb, x, new, [r, zero]), u, rc, kk]
    start = ops.add(b, k, _i64(b, 1))
    return list(ops.for_loop(b, start, ops.size_of(b, n, I64), [m, urow, recip, k], body, 1, None))


def _decompose_lu_solve(b: Builder, op: Op, args: list[Value]) -> list[Value]:
    """For a small static system, elimination on [a | rhs] unrolled over the entries (neither
    the packed LU nor the permutation is stored); otherwise lu, then the two triangular
    solves. ok where U's diagonal has no zero; x is NaN elsewhere."""
    a, rhs = args
    n, k = a.type.shape[-1], rhs.type.shape[-1]
    if n != 0 and _static_small(n) and isinstance(k, int) and 0 < k <= UNROLL_MAX:
        batch_ok = TensorType(BOOL, ())
        return _chunked(b, [a, rhs], [rhs.type.with_shape((n, k)), batch_ok],
                        lambda bb, xs: _lu_solve_unrolled(bb, xs[0], xs[1]))
    nb = a.type.ndim - 2
    packed, _, perm = lu(b, a)
    diag = ops.diagonal(b, packed, nb, nb + 1)
    ok = ops.reduce(ops.reduce_and_p, b, ops.ne(b, diag, ops.zeros_like(b, diag)), [nb])
    y = triangular_solve(b, packed, permute_rows(b, rhs, perm), lower=True, unit_diagonal=True)
    x = triangular_solve(b, packed, y, lower=False)
    spread = ops.broadcast_in_dim(b, ok, rhs.type.shape, list(range(nb)))
    return [ops.select(b, spread, x, ops.full_like(b, np.nan, x)), ok]


def _decompose_tri(b: Builder, op: Op, args: list[Value]) -> list[Value] | None:
    a, rhs = args
    p = op.params
    n, k = a.type.shape[-1], rhs.type.shape[-1]
    if n == 0:
        return [rhs]
    if _static_small(n) and isinstance(k, int) and k <= 4 * UNROLL_MAX:
        return _chunked(b, [a, rhs], [rhs.type.with_shape((n, k))], lambda bb, xs: [
            _tri_unrolled(bb, xs[0], xs[1], p["lower"], p["transpose_a"], p["unit_diagonal"])])
    if _static_small(n):        # many columns: each column a system of the stack
        nb = rhs.type.ndim - 2
        batch = batch_shape(rhs)
        cols = ops.reshape(b, mT(b, rhs), batch + (k, n, 1))
        wide = ops.broadcast_in_dim(b, a, batch + (k, n, n), tuple(range(nb)) + (nb + 1, nb + 2))
        x = _chunked(b, [wide, cols], [rhs.type.with_shape((n, 1))], lambda bb, xs: [
            _tri_unrolled(bb, xs[0], xs[1], p["lower"], p["transpose_a"], p["unit_diagonal"])])[0]
        return [mT(b, ops.reshape(b, x, batch + (k, n)))]
    return [_tri_loop(b, a, rhs, p["lower"], p["transpose_a"], p["unit_diagonal"])]


def _tri_unrolled(b: Builder, a: Value, rhs: Value, lower: bool, ta: str, unit: bool) -> Value:
    n, k = _static(a.type.shape[-1]), _static(rhs.type.shape[-1])
    am, bm = entries(b, a), entries(b, rhs)

    def at(i: int, j: int) -> Value:          # op(A)[i, j]
        if ta == "N":
            return am[i][j]
        v = am[j][i]
        return ops.conj(b, v) if ta == "C" and v.type.dtype.kind == "c" else v

    forward = lower == (ta == "N")
    order = list(range(n)) if forward else list(range(n - 1, -1, -1))
    x: dict[int, list[Value]] = {}
    done: list[int] = []
    for i in order:
        row = []
        for c in range(k):
            s = bm[i][c]
            for j in done:
                s = ops.sub(b, s, ops.mul(b, at(i, j), x[j][c]))
            row.append(s if unit else ops.div(b, s, at(i, i)))
        x[i] = row
        done.append(i)
    return assemble(b, [x[i] for i in range(n)])


def _tri_loop(b: Builder, a: Value, rhs: Value, lower: bool, ta: str, unit: bool) -> Value:
    def core(bb: Builder, ins: list[Value], outs: list[Value]) -> list[Value]:
        return [_tri_matrix(bb, ins[0], ins[1], outs[0], lower, ta, unit)]
    return _per_matrix(b, [a, rhs], [ops.zeros_like(b, rhs)], core)[0]


def _tri_matrix(b: Builder, a: Value, rhs: Value, x0: Value, lower: bool, ta: str, unit: bool) -> Value:
    """One row of x (zeros at first) per iteration, in place: x[r] = (rhs[r] - op(A)[r, done]
    @ x[done]) / op(A)[r, r], r ascending for a lower op(A), descending for an upper one (the
    row of op(A) is zero outside `done`, where x is still zero)."""
    n, k = rhs.type.shape
    body = new_block([_scalar_i64(), a.type, rhs.type, x0.type])
    bb = Builder(body, b.loc)
    i, am, bm, x = body.args
    z = _i64(bb, 0)
    forward = lower == (ta == "N")
    r = i if forward else ops.sub(bb, ops.sub(bb, ops.size_of(bb, n, I64), _i64(bb, 1)), i)
    if ta == "N":          # row r of op(A) [1, n]
        arow = ops.dynamic_slice(bb, am, [r, z], (1, n))
    else:
        arow = mT(bb, ops.dynamic_slice(bb, am, [z, r], (n, 1)))
        if ta == "C":
            arow = ops.conj_if_complex(bb, arow)
    j = ops.iota(bb, I64, (1, n), 1)
    rb = ops.broadcast_in_dim(bb, r, (1, n), ())
    use = ops.lt(bb, j, rb) if forward else ops.gt(bb, j, rb)
    arow = ops.select(bb, use, arow, ops.zeros_like(bb, arow))
    s = ops.dot_general(bb, arow, x, (((1,), (0,)), ((), ())))                  # [1, k]
    xr = ops.sub(bb, ops.dynamic_slice(bb, bm, [r, z], (1, k)), s)
    if not unit:
        d = ops.dynamic_slice(bb, am, [r, r], (1, 1))
        if ta == "C":
            d = ops.conj_if_complex(bb, d)
        xr = ops.div(bb, xr, _bcast(bb, d, (1, k), (0, 1)))
    body.results = [am, bm, ops.dynamic_update_slice(bb, x, xr, [r, z])]
    return ops.for_loop(b, _i64(b, 0), ops.size_of(b, n, I64), [a, rhs, x0], body, 1, n)[2]


lu_ = define(
    ops.lu_p,
    shape_rule=_lu_rule,
    numpy_ref=_ref_lu,
    vmap_rule=batch_rule,
    jvp_rule=_lu_jvp,
    vjp_rule=_lu_vjp,
    decomposition=_decompose_lu,
    library_when=factor_lapack.lu_when,
    lower=factor_lapack.lower_lu,
    streams_operands=False,
    doc="LU factorization with partial pivoting of a stack of square matrices (LAPACK getrf)",
)

triangular_solve_ = define(
    ops.triangular_solve_p,
    shape_rule=_tri_rule,
    numpy_ref=_ref_tri,
    vmap_rule=batch_rule,
    jvp_rule=_tri_jvp,
    vjp_rule=_tri_vjp,
    decomposition=_decompose_tri,
    library_when=factor_lapack.trsm_when,
    lower=factor_lapack.lower_triangular_solve,
    streams_operands=False,
    doc="op(A) x = b for triangular A (lower/upper, 'N'/'T'/'C', unit diagonal), stacked",
)

lu_solve_ = define(
    ops.lu_solve_p,
    shape_rule=_lu_solve_rule,
    numpy_ref=_ref_lu_solve,
    vmap_rule=batch_rule,
    jvp_rule=_lu_solve_jvp,
    vjp_rule=_lu_solve_vjp,
    decomposition=_decompose_lu_solve,
    library_when=factor_lapack.lu_solve_when,
    lower=factor_lapack.lower_lu_solve,
    streams_operands=False,
    doc="x with a @ x == b (LU, partial pivoting) and ok flags, stacked (LAPACK gesv)",
)

__all__ = ["lu", "lu_solve", "triangular_solve", "permute_rows", "triangle", "unit_lower", "UNROLL_MAX"]
