"""LAPACK (and BLAS trsm) for the factorizations of large matrices: ``lu`` (xgetrf),
``lu_solve`` (xgesv), ``triangular_solve`` (xtrsm), ``cholesky`` (xpotrf) and ``qr`` (xgeqrf,
then xorgqr/xungqr).

Each primitive keeps its decomposition (generated code, compiler/primitives/lu.py and
factor.py) as the op's region: ``library_when(op)`` says whether the op is kept for a library
call at all (a static size below the threshold is not: the generated code is inlined as
before), ``lower_*(cg, op, outs)`` calls the routine where the kernel's pointer to it is set
and the size is at least the threshold (tested at run time for a symbolic size), and lowers
the region elsewhere (docs/linalg.md, "BLAS and LAPACK"). Results mean the same on both paths:

* lu: LAPACK factors a column-major matrix and a row-major buffer is its transpose, so each
  matrix is transposed into a work buffer, factored (P A = L U), and transposed back into
  the packed row-major LU; getrf's 1-based ``ipiv`` become the 0-based pivots and the
  permutation is the row interchanges applied in order to 0 .. n-1. A zero pivot is not an
  error here either (info > 0: getrf leaves the column unscaled, as the generated code does);
  the frontend's check of U's diagonal raises LinAlgError("Singular matrix") on both paths.
* lu_solve: A and B transposed into column-major work buffers, gesv (getrf, then getrs),
  X transposed back: NumPy's own call. info > 0 (an exact zero pivot) gives NaN and ok false,
  as the generated code.
* triangular_solve ``op(A) X = B``: row-major B [n, k] is column-major B^T [k, n], so trsm
  solves ``X^T op(A)^T = B^T`` from the right (side 'R') with the column-major view A^T of A:
  the triangle flips (uplo), the transposition flag stays. B is copied into the result, which
  trsm overwrites; no transposes.
* cholesky: potrf with uplo 'U' on the column-major view A^T reads A's lower triangle and
  leaves the row-major lower factor; the strict upper triangle is cleared, and where info > 0
  (not positive definite) the factor is NaN and ``ok`` false, as the generated code does.
* qr: the matrix transposed into a column-major work buffer of m rows and max(n, q's columns)
  columns, geqrf, R read off its upper triangle, then orgqr (ungqr) builds q's columns in
  place; LAPACK's reflections are the ones the generated code imitates (same signs).

Thresholds (``LU_MIN``, ``GESV_MIN``, ``TRSM_MIN``, ``CHOLESKY_MIN``, ``QR_MIN``) come from the
crossover of benchmarks/linalg.py (docs/linalg.md, "BLAS and LAPACK").
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
from llvmlite import ir as ll

from compiler.ir import dims
from compiler.ir.core import Op
from compiler.ir.types import C64, C128, F32, F64, I64
from compiler.primitives import gemm

#: n at which lu calls getrf (n x n matrices)
LU_MIN = 128
#: n at which lu_solve calls gesv
GESV_MIN = 128
#: n at which triangular_solve calls trsm (n x n triangle), with at least TRSM_MIN_RHS
#: right-hand sides: for a few columns trsm's packing costs more than the generated row loop
TRSM_MIN = 32
TRSM_MIN_RHS = 8
#: n at which cholesky calls potrf
CHOLESKY_MIN = 16
#: min(m, n) at which qr calls geqrf and orgqr/ungqr
QR_MIN = 12

PREFIX = {F32: "s", F64: "d", C64: "c", C128: "z"}
I64T = ll.IntType(64)
#: workspace of geqrf and orgqr: this many elements per column (the routines' block size
#: is at most 64 in OpenBLAS and reference LAPACK; less would run their unblocked code)
WORK_PER_COLUMN = 64


def _routine(dtype: np.dtype, name: str) -> str | None:
    p = PREFIX.get(np.dtype(dtype))
    if p is None:
        return None
    if name == "orgqr" and p in "cz":
        name = "ungqr"
    return p + name


def _big(sizes: Sequence[Any], least: int) -> bool:
    """Kept for a library call: every size at least `least`, or not known when compiling."""
    return all(not isinstance(d, int) or d >= least for d in sizes)


def _when(cg: Any, sizes: Sequence[Any], least: int) -> Any:
    """The run-time test that every symbolic size is at least `least` (gemm.at_least)."""
    return gemm.at_least(cg, [(d, least) for d in sizes])


def _and(cg: Any, x: Any, y: Any) -> Any:
    return y if x is None else x if y is None else cg.b.and_(x, y)


def _buffer(cg: Any, v: Any) -> Any:
    """The buffer of operand `v`, computed into a temporary when fusion left it unmaterialized."""
    buf = cg.buffers.get(v)
    if buf is None:
        buf = cg.scratch_buffer(v.type.dtype, v.type.shape)
        cg.compute_into(v, buf)
    return buf


def _i64(v: int) -> ll.Constant:
    return ll.Constant(I64T, v)


#: the tile of a transposing copy (both sides then stay within a few cache lines)
TILE = 16


def _transpose_copy(cg: Any, rows: Any, cols: Any, move: Callable[[Any, Any], None]) -> None:
    """``move(i, j)`` for every i < rows, j < cols, in TILE x TILE tiles: a copy that
    transposes (``dst[j, i] = src[i, j]``) touches TILE rows of each side per tile instead of
    one cache line per element."""
    b = cg.b
    tile = _i64(TILE)

    def tiles(extent: Any) -> Any:
        return b.sdiv(b.add(extent, _i64(TILE - 1)), tile)

    def part(extent: Any, start: Any) -> Any:
        rest = b.sub(extent, start)
        return b.select(b.icmp_signed("<", rest, tile), rest, tile)
    r, c = cg.dim(rows), cg.dim(cols)
    with cg.loop(tiles(r), unroll=False) as ti:
        with cg.loop(tiles(c), unroll=False) as tj:
            i0, j0 = b.mul(ti, tile), b.mul(tj, tile)
            with cg.loop(part(r, i0)) as ii:
                with cg.loop(part(c, j0)) as jj:
                    move(b.add(i0, ii), b.add(j0, jj))


def _batch(cg: Any, shape: Sequence[Any], core: int, body: Callable[[list[Any], Any], None]) -> None:
    """``body(batch_index, flat_batch_index)`` for each matrix of a stack."""
    batch = list(shape[:-core])
    with cg.loop_nest(batch) as bi:
        body(list(bi), cg.linearize(bi, batch) if batch else _i64(0))


# ---- lu: getrf -------------------------------------------------------------------------------

def lu_when(op: Op) -> bool:
    a = op.operands[0].type
    return _routine(a.dtype, "getrf") is not None and _big([a.shape[-1]], LU_MIN)


def lower_lu(cg: Any, op: Op, outs: Sequence[Any]) -> None:
    (a,) = op.operands
    lu, piv, perm = outs
    dtype, shape = a.type.dtype, tuple(a.type.shape)
    n = shape[-1]
    routine = _routine(dtype, "getrf")
    assert routine is not None

    def lapack(invoke: Callable[[Sequence[Any]], None]) -> None:
        work = cg.scratch_buffer(dtype, (n, n))
        ipiv = cg.scratch_buffer(I64, (n,))
        info = cg.alloca_scalar(I64)
        size = cg.dim(n)
        b = cg.b

        def one(bi: list[Any], _: Any) -> None:
            _transpose_copy(cg, n, n, lambda i, j: cg.store(work, [j, i], cg.read(a, bi + [i, j])))
            invoke([size, size, cg.pointer(work), size, cg.pointer(ipiv), info])
            _transpose_copy(cg, n, n, lambda i, j: cg.store(lu, bi + [j, i], cg.load(work, [i, j])))
            with cg.loop_nest([n]) as (k,):
                cg.store(piv, bi + [k], b.sub(cg.load(ipiv, [k]), _i64(1)))
                cg.store(perm, bi + [k], k)
            with cg.loop(size, unroll=False) as k:        # the interchanges, in order
                p = cg.load(piv, bi + [k])
                rk, rp = cg.load(perm, bi + [k]), cg.load(perm, bi + [p])
                cg.store(perm, bi + [k], rp)
                cg.store(perm, bi + [p], rk)
        _batch(cg, shape, 2, one)

    cg.library_call(routine, lapack, fallback=lambda: cg.lower_fallback(op, outs),
                    when=_when(cg, [n], LU_MIN))


# ---- lu_solve: gesv -------------------------------------------------------------------------

def lu_solve_when(op: Op) -> bool:
    a = op.operands[0].type
    return _routine(a.dtype, "gesv") is not None and _big([a.shape[-1]], GESV_MIN)


def lower_lu_solve(cg: Any, op: Op, outs: Sequence[Any]) -> None:
    """A and B transposed into column-major work buffers (as NumPy's own call does), gesv,
    X transposed back; NaN and ok false where info > 0 (an exact zero pivot)."""
    a, rhs = op.operands
    x, ok = outs
    dtype, shape = a.type.dtype, tuple(rhs.type.shape)
    n, k = shape[-2], shape[-1]
    routine = _routine(dtype, "gesv")
    assert routine is not None

    def lapack(invoke: Callable[[Sequence[Any]], None]) -> None:
        work = cg.scratch_buffer(dtype, (n, n))
        xw = cg.scratch_buffer(dtype, (k, n))               # column-major n x k, ld n
        ipiv = cg.scratch_buffer(I64, (n,))
        info = cg.alloca_scalar(I64)
        size, cols = cg.dim(n), cg.dim(k)
        b = cg.b
        nan = cg.const(dtype, np.nan)

        def one(bi: list[Any], _: Any) -> None:
            _transpose_copy(cg, n, n, lambda i, j: cg.store(work, [j, i], cg.read(a, bi + [i, j])))
            _transpose_copy(cg, n, k, lambda i, j: cg.store(xw, [j, i], cg.read(rhs, bi + [i, j])))
            invoke([size, cols, cg.pointer(work), size, cg.pointer(ipiv), cg.pointer(xw), size, info])
            good = b.icmp_signed("==", b.load(info), _i64(0))
            cg.store(ok, bi, good)
            _transpose_copy(cg, k, n, lambda j, i: cg.store(x, bi + [i, j], b.select(good, cg.load(xw, [j, i]), nan)))
        _batch(cg, shape, 2, one)

    cg.library_call(routine, lapack, fallback=lambda: cg.lower_fallback(op, outs),
                    when=_when(cg, [n], GESV_MIN))


# ---- triangular_solve: trsm ------------------------------------------------------------------

def trsm_when(op: Op) -> bool:
    a = op.operands[0].type
    k = op.operands[1].type.shape[-1]
    return _routine(a.dtype, "trsm") is not None and _big([a.shape[-1]], TRSM_MIN) and _big([k], TRSM_MIN_RHS)


def lower_triangular_solve(cg: Any, op: Op, outs: Sequence[Any]) -> None:
    a, rhs = op.operands
    (x,) = outs
    p = op.params
    dtype, shape = a.type.dtype, tuple(rhs.type.shape)
    n, k = shape[-2], shape[-1]
    routine = _routine(dtype, "trsm")
    assert routine is not None
    uplo = "U" if p["lower"] else "L"            # A's lower triangle is A^T's upper one
    diag = "U" if p["unit_diagonal"] else "N"

    def blas(invoke: Callable[[Sequence[Any]], None]) -> None:
        abuf = _buffer(cg, a)
        with cg.loop_nest(shape) as idx:
            cg.store(x, idx, cg.read(rhs, idx))
        size, cols = cg.dim(n), cg.dim(k)
        ldb = cg.b.select(cg.b.icmp_signed(">", cols, _i64(1)), cols, _i64(1))
        alpha = cg.const(dtype, 1.0)
        nn, nk = cg.b.mul(size, size), cg.b.mul(size, cols)

        def one(_: list[Any], at: Any) -> None:
            invoke([cg.char("R"), cg.char(uplo), cg.char(p["transpose_a"]), cg.char(diag), cols, size,
                    alpha, cg.pointer(abuf, cg.b.mul(at, nn)), size, cg.pointer(x, cg.b.mul(at, nk)), ldb])
        _batch(cg, shape, 2, one)

    cg.library_call(routine, blas, fallback=lambda: cg.lower_fallback(op, outs),
                    when=_and(cg, _when(cg, [n], TRSM_MIN), _when(cg, [k], TRSM_MIN_RHS)), strings=4)


# ---- cholesky: potrf -------------------------------------------------------------------------

def cholesky_when(op: Op) -> bool:
    a = op.operands[0].type
    return _routine(a.dtype, "potrf") is not None and _big([a.shape[-1]], CHOLESKY_MIN)


def lower_cholesky(cg: Any, op: Op, outs: Sequence[Any]) -> None:
    (a,) = op.operands
    low, ok = outs
    dtype, shape = a.type.dtype, tuple(a.type.shape)
    n = shape[-1]
    routine = _routine(dtype, "potrf")
    assert routine is not None

    def lapack(invoke: Callable[[Sequence[Any]], None]) -> None:
        info = cg.alloca_scalar(I64)
        size = cg.dim(n)
        b = cg.b
        with cg.loop_nest(shape) as idx:
            cg.store(low, idx, cg.read(a, idx))
        nn = b.mul(size, size)
        zero, nan = cg.const(dtype, 0.0), cg.const(dtype, np.nan)

        def one(bi: list[Any], at: Any) -> None:
            invoke([cg.char("U"), size, cg.pointer(low, b.mul(at, nn)), size, info])
            good = b.icmp_signed("==", b.load(info), _i64(0))
            cg.store(ok, bi, good)
            with cg.loop_nest([n, n]) as (i, j):
                v = b.select(b.icmp_signed(">", j, i), zero, cg.load(low, bi + [i, j]))
                cg.store(low, bi + [i, j], b.select(good, v, nan))
        _batch(cg, shape, 2, one)

    cg.library_call(routine, lapack, fallback=lambda: cg.lower_fallback(op, outs),
                    when=_when(cg, [n], CHOLESKY_MIN), strings=1)


# ---- qr: geqrf, orgqr/ungqr ------------------------------------------------------------------

def qr_when(op: Op) -> bool:
    a = op.operands[0].type
    return _routine(a.dtype, "geqrf") is not None and _big([dims.minimum(*a.shape[-2:])], QR_MIN)


def lower_qr(cg: Any, op: Op, outs: Sequence[Any]) -> None:
    (a,) = op.operands
    q, r = outs
    dtype, shape = a.type.dtype, tuple(a.type.shape)
    m, n = shape[-2:]
    k = dims.minimum(m, n)
    qc, rr = q.shape[-1], r.shape[-2]            # q's columns, r's rows (k, or m when full)
    wc = dims.maximum(n, qc)
    geqrf, orgqr = _routine(dtype, "geqrf"), _routine(dtype, "orgqr")
    assert geqrf is not None and orgqr is not None

    def both(geqrf_call: Callable[[Sequence[Any]], None], orgqr_call: Callable[[Sequence[Any]], None]) -> None:
        b = cg.b
        work = cg.scratch_buffer(dtype, (wc, m))             # column-major m x wc, ld m
        tau = cg.scratch_buffer(dtype, (k,))
        lwork = dims.mul(wc, WORK_PER_COLUMN)
        scratch = cg.scratch_buffer(dtype, (lwork,))
        info = cg.alloca_scalar(I64)
        mm, nn, kk, qq = cg.dim(m), cg.dim(n), cg.dim(k), cg.dim(qc)
        lw = cg.dim(lwork)
        zero = cg.const(dtype, 0.0)

        def one(bi: list[Any], _: Any) -> None:
            _transpose_copy(cg, m, n, lambda i, j: cg.store(work, [j, i], cg.read(a, bi + [i, j])))
            geqrf_call([mm, nn, cg.pointer(work), mm, cg.pointer(tau), cg.pointer(scratch), lw, info])
            with cg.loop_nest([rr, n]) as (i, j):
                upper = b.icmp_signed("<=", i, j)
                cg.store(r, bi + [i, j], b.select(upper, cg.load(work, [j, i]), zero))
            orgqr_call([mm, qq, kk, cg.pointer(work), mm, cg.pointer(tau), cg.pointer(scratch), lw, info])
            _transpose_copy(cg, qc, m, lambda j, i: cg.store(q, bi + [i, j], cg.load(work, [j, i])))
        _batch(cg, shape, 2, one)

    # two routines, one branch (the generated code is emitted once): orgqr's call is captured
    # from a library_call with nothing on either side, and its pointer joins geqrf's test
    calls: list[Callable[[Sequence[Any]], None]] = []
    cg.library_call(orgqr, calls.append, fallback=lambda: None)
    has_orgqr = cg.b.icmp_unsigned("!=", cg.b.load(cg.library_slots[orgqr]), ll.Constant(ll.IntType(8).as_pointer(), None))
    when = _when(cg, [k], QR_MIN)
    when = has_orgqr if when is None else cg.b.and_(when, has_orgqr)
    cg.library_call(geqrf, lambda geqrf_call: both(geqrf_call, calls[0]),
                    fallback=lambda: cg.lower_fallback(op, outs), when=when)


__all__ = ["LU_MIN", "GESV_MIN", "TRSM_MIN", "TRSM_MIN_RHS", "CHOLESKY_MIN", "QR_MIN", "lu_when", "lower_lu",
           "lu_solve_when", "lower_lu_solve", "trsm_when", "lower_triangular_solve", "cholesky_when",
           "lower_cholesky", "qr_when", "lower_qr"]
