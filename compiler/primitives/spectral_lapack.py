"""eigh and svd through LAPACK for large matrices (xsyevd/xheevd, xgesdd), the generated
Jacobi code of compiler/primitives/spectral.py as the fallback (docs/linalg.md, "BLAS and
LAPACK" and "Symmetric eigenproblems and the SVD").

Both primitives set ``library_when`` (a static size of at least EIGH_MIN / SVD_MIN, or a
symbolic one: then the kernel tests the size at run time) and an OPAQUE ``lower`` that calls
the routine once per matrix of the stack where the kernel's pointer is set, and lowers the
op's region (the Jacobi decomposition) elsewhere.

Row-major buffers are the transposes LAPACK sees:

* eigh: the Hermitian part H = (A + Aᴴ)/2 is written transposed into a work matrix, so that
  LAPACK sees H itself (uplo "L"); its eigenvectors come back as the rows of the row-major
  work matrix and are written, transposed, into the columns of V.
* svd: LAPACK sees Aᵀ (n x m) = U' S V'ᴴ, so A = conj(V') S U'ᵀ: LAPACK's U' (ldu = n) *is*
  the row-major Vh, and its V'ᴴ (ldvt = the columns of U) the row-major U. No transposes.

Conventions are those of the generated code: eigenvalues ascending and singular values
descending (LAPACK's), each eigenvector (column of V, with the matching column of U) scaled
so that its entry of largest magnitude (the first of equal ones) is real and positive.
Where the routine fails (info != 0: no convergence), that matrix's results are NaN, and the
frontend's check after the op raises NumPy's LinAlgError (frontend/spectral.py).

Workspaces are the documented minimum sizes plus room for the blocked reductions
(``BLOCK * (m + n)`` elements), allocated once per kernel call and shared by the matrices of a
stack: no workspace query.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
from llvmlite import ir as ll

from compiler.ir import dims
from compiler.ir.builder import Builder
from compiler.ir.core import Op, Value
from compiler.ir.dims import Dim
from compiler.ir.types import C64, C128, F32, F64, I64
from compiler.primitives import gemm, ops

#: eigh calls LAPACK from this n up (static n, or tested at run time for a symbolic one):
#: the crossover measured with benchmarks/linalg.py (docs/linalg.md)
EIGH_MIN = 5
#: the SVD calls LAPACK when min(m, n) is at least this
SVD_MIN = 4
#: extra workspace per row and column for the blocked reductions (xsytrd, xgebrd, xgeqrf)
BLOCK = 128

EIGH_ROUTINES = {F64: "dsyevd", F32: "ssyevd", C128: "zheevd", C64: "cheevd"}
SVD_ROUTINES = {F64: "dgesdd", F32: "sgesdd", C128: "zgesdd", C64: "cgesdd"}

I64T = ll.IntType(64)


def _large(sizes: Sequence[Dim], least: int) -> bool:
    return not any(isinstance(d, int) and d < least for d in sizes)


def eigh_library_when(op: Op) -> bool:
    """Keep eigh for LAPACK (its Jacobi code as the region): n >= EIGH_MIN or symbolic."""
    return op.operands[0].type.dtype in EIGH_ROUTINES and _large(op.operands[0].type.shape[-1:], EIGH_MIN)


def svd_library_when(op: Op) -> bool:
    """Keep svd for LAPACK: m and n each >= SVD_MIN, or symbolic."""
    return op.operands[0].type.dtype in SVD_ROUTINES and _large(op.operands[0].type.shape[-2:], SVD_MIN)


def check_converged(b: Builder, a: Value, values: Value, message: str, *, svd: bool) -> None:
    """NumPy's LinAlgError where LAPACK does not converge: the library branch leaves NaN
    values for a matrix whose call failed, so a NaN among `values` [..., k] of a finite
    matrix of `a` [..., m, n] raises `message` when the kernel runs (a NaN or an infinity in
    the matrix gives NaN values without an error, as NumPy's). Emitted only where the op
    may call LAPACK for these sizes."""
    least, sizes = (SVD_MIN, a.type.shape[-2:]) if svd else (EIGH_MIN, a.type.shape[-1:])
    if not _large(sizes, least) or a.type.dtype not in (EIGH_ROUTINES if not svd else SVD_ROUTINES):
        return
    nb = values.type.ndim - 1
    nan = ops.reduce(ops.reduce_or_p, b, ops.isnan(b, values), [nb])
    parts = [ops.real(b, a), ops.imag(b, a)] if a.type.dtype.kind == "c" else [a]
    for x in parts:
        bad = ops.reduce(ops.reduce_or_p, b, ops.not_(b, ops.isfinite(b, x)), [nb, nb + 1])
        nan = ops.and_(b, nan, ops.not_(b, bad))
    ops.check(b, ops.not_(b, nan), "LinAlgError", message)


# ---- small LLVM helpers -----------------------------------------------------------------------

def _when(cg: Any, sizes: Sequence[Any], least: int) -> Any:
    """The run-time test that every symbolic size is at least `least` (gemm.at_least)."""
    return gemm.at_least(cg, [(d, least) for d in sizes])


def _real(dtype: np.dtype) -> np.dtype:
    return np.finfo(dtype).dtype


def _conj(cg: Any, dtype: np.dtype, x: ll.Value) -> ll.Value:
    if dtype.kind != "c":
        return x
    return cg.complex_value(dtype, cg.b.extract_value(x, 0), cg.b.fneg(cg.b.extract_value(x, 1)))


def _sqr_abs(cg: Any, dtype: np.dtype, x: ll.Value) -> ll.Value:
    if dtype.kind != "c":
        return cg.b.fmul(x, x)
    re, im = cg.b.extract_value(x, 0), cg.b.extract_value(x, 1)
    return cg.b.fadd(cg.b.fmul(re, re), cg.b.fmul(im, im))


def _unit_phase(cg: Any, dtype: np.dtype, top: ll.Value) -> ll.Value:
    """top / |top| (1 for 0)."""
    rd = _real(dtype)
    b = cg.b
    mag2 = _sqr_abs(cg, dtype, top)
    zero = b.fcmp_ordered("==", mag2, cg.const(rd, 0.0))
    mag = cg.intrinsic("llvm.sqrt", [b.select(zero, cg.const(rd, 1.0), mag2)])
    if dtype.kind != "c":
        return b.select(zero, cg.const(rd, 1.0), b.fdiv(top, mag))
    re = b.select(zero, cg.const(rd, 1.0), b.fdiv(b.extract_value(top, 0), mag))
    im = b.select(zero, cg.const(rd, 0.0), b.fdiv(b.extract_value(top, 1), mag))
    return cg.complex_value(dtype, re, im)


def _argmax_row(cg: Any, dtype: np.dtype, buf: Any, row: ll.Value, count: ll.Value) -> ll.Value:
    """The element of largest magnitude of buf[row, :count] (the first of equal ones)."""
    rd = _real(dtype)
    best = cg.alloca_scalar(rd, cg.const(rd, -1.0))
    top = cg.alloca_scalar(dtype, cg.const(dtype, 0.0))
    with cg.loop(count) as i:
        x = cg.load(buf, [row, i])
        mag = _sqr_abs(cg, dtype, x)
        more = cg.b.fcmp_ordered(">", mag, cg.b.load(best))
        cg.b.store(cg.b.select(more, mag, cg.b.load(best)), best)
        cg.b.store(cg.b.select(more, x, cg.b.load(top)), top)
    return cg.b.load(top)


def _nan(cg: Any, dtype: np.dtype) -> ll.Value:
    return cg.const(dtype, complex(np.nan, np.nan) if dtype.kind == "c" else np.nan)


def _fill(cg: Any, buf: Any, base: ll.Value, count: ll.Value, value: ll.Value) -> None:
    """buf's flat elements base ... base + count - 1 = value."""
    with cg.loop(count) as i:
        cg.b.store(value, cg.pointer(buf, cg.b.add(base, i)))


def _flat(cg: Any, idx: Sequence[ll.Value], shape: Sequence[Dim]) -> ll.Value:
    return cg.linearize(idx, shape) if shape else ll.Constant(I64T, 0)


def _poly(*terms: tuple[int, Sequence[Dim]]) -> Dim:
    """sum of coef * product(factors)."""
    total: Dim = 0
    for coef, factors in terms:
        t: Dim = coef
        for f in factors:
            t = dims.mul(t, f)
        total = dims.add(total, t)
    return total


# ---- eigh: xsyevd / xheevd --------------------------------------------------------------------

def lower_eigh(cg: Any, op: Op, outs: Sequence[Any]) -> None:
    """eigh's OPAQUE lowering: xsyevd/xheevd per matrix where the kernel has the routine and
    n >= EIGH_MIN, the op's region (the Jacobi code) elsewhere."""
    (a,) = op.operands
    w_out, v_out = outs
    dtype = np.dtype(a.type.dtype)
    cplx = dtype.kind == "c"
    *batch, n, _ = a.type.shape
    vectors = cg.sched is None or op.results[1] in cg.sched.used
    if vectors:
        lwork = _poly((1, [n, n]), (2, [n])) if cplx else _poly((1, []), (6, [n]), (2, [n, n]))
        lrwork = _poly((1, []), (5, [n]), (2, [n, n]))
        liwork = _poly((3, []), (5, [n]))
    else:
        lwork = _poly((1, []), (1, [n])) if cplx else _poly((1, []), (2, [n]))
        lrwork, liwork = dims.maximum(n, 1), 1
    lwork = dims.add(lwork, dims.mul(BLOCK, n))
    rd = _real(dtype)

    def library(invoke: Callable[[Sequence[ll.Value]], None]) -> None:
        b = cg.b
        z = cg.scratch_buffer(dtype, (n, n))
        work = cg.scratch_buffer(dtype, (lwork,))
        rwork = cg.scratch_buffer(rd, (lrwork,)) if cplx else None
        iwork = cg.scratch_buffer(I64, (liwork,))
        info = cg.alloca_scalar(I64)
        nn = cg.dim(n)
        half = cg.const(dtype, 0.5)
        with cg.loop_nest(batch) as bi:
            # z[i, j] = H[j, i]: column-major, LAPACK reads H itself
            with cg.loop(nn) as i:
                with cg.loop(nn) as j:
                    x = cg.add(dtype, cg.read(a, [*bi, j, i]), _conj(cg, dtype, cg.read(a, [*bi, i, j])))
                    cg.store(z, [i, j], cg.mul(dtype, x, half))
            at = _flat(cg, bi, batch)
            w_ptr = cg.pointer(w_out, b.mul(at, nn))
            args = [cg.char("V" if vectors else "N"), cg.char("L"), nn, z.ptr, nn, w_ptr,
                    work.ptr, cg.dim(lwork)]
            if rwork is not None:
                args += [rwork.ptr, cg.dim(lrwork)]
            invoke(args + [iwork.ptr, cg.dim(liwork), info])
            failed = b.icmp_signed("!=", b.load(info), ll.Constant(I64T, 0))
            with b.if_else(failed) as (bad, good):
                with bad:
                    _fill(cg, w_out, b.mul(at, nn), nn, _nan(cg, rd))
                    if vectors:
                        _fill(cg, v_out, b.mul(at, b.mul(nn, nn)), b.mul(nn, nn), _nan(cg, dtype))
                with good:
                    if vectors:
                        # eigenvector j is row j of z: V[:, j] = z[j, :] times its phase
                        with cg.loop(nn) as j:
                            ph = _conj(cg, dtype, _unit_phase(cg, dtype, _argmax_row(cg, dtype, z, j, nn)))
                            with cg.loop(nn) as i:
                                cg.store(v_out, [*bi, i, j], cg.mul(dtype, cg.load(z, [j, i]), ph))

    cg.library_call(EIGH_ROUTINES[dtype], library, lambda: cg.lower_fallback(op, outs),
                    when=_when(cg, [n], EIGH_MIN), strings=2)


# ---- svd: xgesdd ------------------------------------------------------------------------------

def lower_svd(cg: Any, op: Op, outs: Sequence[Any]) -> None:
    """svd's OPAQUE lowering: xgesdd per matrix where the kernel has the routine and m, n >=
    SVD_MIN, the op's region (the Jacobi code) elsewhere."""
    (a,) = op.operands
    dtype = np.dtype(a.type.dtype)
    cplx = dtype.kind == "c"
    rd = _real(dtype)
    full, uv = op.params["full_matrices"], op.params["compute_uv"]
    *batch, m, n = a.type.shape
    k, mx = dims.minimum(m, n), dims.maximum(m, n)
    jobz = "N" if not uv else "A" if full else "S"
    if cplx:
        lwork = _poly((2, [k]), (1, [mx])) if not uv else _poly((1, [k, k]), (2, [k]), (1, [mx]))
        lrwork = _poly((7, [k])) if not uv else dims.maximum(
            _poly((5, [k, k]), (7, [k])), _poly((2, [mx, k]), (2, [k, k]), (1, [k])))
    elif uv:
        lwork = _poly((4, [k, k]), (7, [k]), (1, [mx]))
    else:
        lwork = dims.add(_poly((3, [k])), dims.maximum(mx, _poly((7, [k]))))
    lrwork = lrwork if cplx else 1
    lwork = dims.add(lwork, dims.mul(BLOCK, dims.add(m, n)))
    s_out = outs[0]
    ucols = m if full else k         # U: m x ucols; Vh: vrows x n
    vrows = n if full else k
    # LAPACK's column-major view of a row-major matrix is its transpose, so a tall matrix
    # reaches xgesdd wide, and the wide path is the slower one (10000 x 4 float64: 0.53 ms,
    # against 0.18 ms for the tall one). A statically tall matrix is copied in column-major
    # order instead, and U and Vᴴ are copied back out of column-major scratch.
    tall = isinstance(m, int) and isinstance(n, int) and m > n

    def library(invoke: Callable[[Sequence[ll.Value]], None]) -> None:
        b = cg.b
        work_a = cg.scratch_buffer(dtype, (n, m) if tall else (m, n))
        work = cg.scratch_buffer(dtype, (lwork,))
        rwork = cg.scratch_buffer(rd, (lrwork,)) if cplx else None
        iwork = cg.scratch_buffer(I64, (dims.mul(8, k),))
        u_cm = cg.scratch_buffer(dtype, (ucols, m)) if tall and uv else None   # column-major U
        vh_cm = cg.scratch_buffer(dtype, (n, vrows)) if tall and uv else None  # and Vᴴ
        info = cg.alloca_scalar(I64)
        mm, nn, kk = cg.dim(m), cg.dim(n), cg.dim(k)
        with cg.loop_nest(batch) as bi:
            if tall:
                with cg.loop(nn) as j:
                    with cg.loop(mm) as i:
                        cg.store(work_a, [j, i], cg.read(a, [*bi, i, j]))
            else:
                with cg.loop(mm) as i:
                    with cg.loop(nn) as j:
                        cg.store(work_a, [i, j], cg.read(a, [*bi, i, j]))
            at = _flat(cg, bi, batch)
            s_ptr = cg.pointer(s_out, b.mul(at, kk))
            if uv:
                u_size, vh_size = cg.dim(dims.mul(m, ucols)), cg.dim(dims.mul(vrows, n))
                u_ptr, vh_ptr = cg.pointer(outs[1], b.mul(at, u_size)), cg.pointer(outs[2], b.mul(at, vh_size))
                ldu, ldvt = nn, cg.dim(ucols)
            else:
                u_ptr = vh_ptr = work.ptr
                ldu = ldvt = ll.Constant(I64T, 1)
            if tall:
                args = [cg.char(jobz), mm, nn, work_a.ptr, mm, s_ptr,
                        u_cm.ptr if u_cm is not None else work.ptr, mm if uv else ldu,
                        vh_cm.ptr if vh_cm is not None else work.ptr, cg.dim(vrows) if uv else ldvt,
                        work.ptr, cg.dim(lwork)]
            else:
                args = [cg.char(jobz), nn, mm, work_a.ptr, nn, s_ptr, vh_ptr, ldu, u_ptr, ldvt,
                        work.ptr, cg.dim(lwork)]
            if rwork is not None:
                args.append(rwork.ptr)
            invoke(args + [iwork.ptr, info])
            failed = b.icmp_signed("!=", b.load(info), ll.Constant(I64T, 0))
            with b.if_else(failed) as (bad, good):
                with bad:
                    _fill(cg, s_out, b.mul(at, kk), kk, _nan(cg, rd))
                    if uv:
                        _fill(cg, outs[1], b.mul(at, u_size), u_size, _nan(cg, dtype))
                        _fill(cg, outs[2], b.mul(at, vh_size), vh_size, _nan(cg, dtype))
                with good:
                    if u_cm is not None and vh_cm is not None:
                        with cg.loop(cg.dim(ucols)) as j:
                            with cg.loop(mm) as i:
                                cg.store(outs[1], [*bi, i, j], cg.load(u_cm, [j, i]))
                        with cg.loop(nn) as i:
                            with cg.loop(cg.dim(vrows)) as j:
                                cg.store(outs[2], [*bi, j, i], cg.load(vh_cm, [i, j]))
                    if uv:
                        # V[:, j] = conj(Vh[j, :]); its phase is Vh[j, top] / |Vh[j, top]|
                        u, vh = outs[1], outs[2]
                        with cg.loop(kk) as j:
                            top = _argmax_row(cg, dtype, _matrix(cg, vh, at, vrows, n), j, nn)
                            ph = _unit_phase(cg, dtype, top)
                            phc = _conj(cg, dtype, ph)
                            with cg.loop(nn) as i:
                                cg.store(vh, [*bi, j, i], cg.mul(dtype, cg.load(vh, [*bi, j, i]), phc))
                            with cg.loop(mm) as i:
                                cg.store(u, [*bi, i, j], cg.mul(dtype, cg.load(u, [*bi, i, j]), ph))

    cg.library_call(SVD_ROUTINES[dtype], library, lambda: cg.lower_fallback(op, outs),
                    when=_when(cg, [m, n], SVD_MIN), strings=1)


def _matrix(cg: Any, buf: Any, at: ll.Value, rows: Dim, cols: Dim) -> Any:
    """Matrix `at` of the stack `buf`, as a buffer of its own."""
    ptr = cg.pointer(buf, cg.b.mul(at, cg.dim(dims.mul(rows, cols))))
    return type(buf)(ptr, buf.dtype, (rows, cols))
