"""geev: LAPACK's general eigensolver (dgeev, sgeev, zgeev, cgeev) on a stack of matrices.

``geev(a) {vectors}`` exists only after the ``decompose`` stage: `eig`'s decomposition
emits it for matrices larger than the unrolled code handles, or of a symbolic size
(compiler/primitives/eig.py turns its raw results into `eig`'s). Its results are
LAPACK's, for each matrix of ``a [..., n, n]``:

* real ``a``: ``(wr, wi, [vr,] info)``: the real and imaginary parts of the eigenvalues
  ``[..., n]`` (a complex-conjugate pair is consecutive, the positive imaginary part first)
  and, with ``vectors``, the right eigenvectors as *rows* of ``vr [..., n, n]``: row ``k``
  is LAPACK's column ``k`` of VR (a real vector, or for a pair ``k, k+1`` the real and
  imaginary parts of the vector of ``w_k``, that of ``w_{k+1}`` being its conjugate);
* complex ``a``: ``(w, [vr,] info)``;
* ``info [...]`` (int64): geev's ``info`` (> 0: the QR algorithm did not converge).

Lowering: the matrix is copied transposed into a work matrix (buffers are row-major,
LAPACK reads column-major: the copy makes LAPACK see ``a`` itself, so the eigenvalues come
in the order NumPy's, which calls the same routine on the same matrix, gives) and geev is
called with a workspace of the size the blocked code wants (``_lwork``), once per matrix
of the stack. The op keeps a region (``library_when`` is always true), the code a kernel
without the routine runs: it raises ``np.linalg.LinAlgError`` saying that the eigenvalues
of matrices of this size need the LAPACK provider (docs/linalg.md, "General
eigenproblems"); there is no generated eigensolver for them.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from compiler.ir import dims
from compiler.ir.builder import Builder
from compiler.ir.core import Value
from compiler.ir.primitive import define
from compiler.ir.types import I64, TensorType
from compiler.primitives import ops
from compiler.primitives.base import check

Types = tuple[TensorType, ...]

ROUTINES = {np.dtype(np.float64): "dgeev", np.dtype(np.float32): "sgeev",
            np.dtype(np.complex128): "zgeev", np.dtype(np.complex64): "cgeev"}

#: the message of a kernel that has no LAPACK provider ({0}: n)
NO_PROVIDER = ("eigenvalues of {0}x{0} matrices need LAPACK's geev, and this kernel has no "
               "LAPACK provider (AOTX_BLAS=none, NumPy without its OpenBLAS, or a C program "
               "that did not set the kernel's geev pointer); see docs/linalg.md, \"BLAS and "
               "LAPACK\". Matrices up to 8x8 of a static size compile to generated code")


def _real(dtype: Any) -> np.dtype:
    return np.dtype(np.finfo(np.dtype(dtype.name if hasattr(dtype, "name") else dtype)).dtype)


def _shape_rule(in_types: Types, params: dict[str, Any]) -> Types:
    (a,) = in_types
    check(a.ndim >= 2 and a.shape[-1] == a.shape[-2], f"geev: needs square matrices, got {a}")
    check(np.dtype(a.dtype.name) in ROUTINES, f"geev: needs float32/64 or complex64/128, got {a}")
    batch, n = tuple(a.shape[:-2]), a.shape[-1]
    info = TensorType(I64, batch)
    vr = (a,) if params["vectors"] else ()
    if a.dtype.kind == "c":
        return (TensorType(a.dtype, batch + (n,)),) + vr + (info,)
    w = TensorType(a.dtype, batch + (n,))
    return (w, w) + vr + (info,)


def _ref(a: np.ndarray, vectors: bool) -> tuple:
    """LAPACK's results rebuilt from NumPy's (which calls geev and assembles them)."""
    batch, n = a.shape[:-2], a.shape[-1]
    w, v = np.linalg.eig(a) if vectors else (np.linalg.eigvals(a), None)
    info = np.zeros(batch, np.int64)
    w = w.astype(np.result_type(a.dtype, np.complex64))
    rows = None if v is None else np.swapaxes(v, -1, -2)
    if a.dtype.kind == "c":
        return (w,) + (() if rows is None else (rows.astype(a.dtype),)) + (info,)
    if rows is not None:
        rows = rows.astype(w.dtype)
        vr = rows.real.copy()
        second = np.concatenate([np.zeros(batch + (1,), bool), w.imag[..., :-1] > 0], axis=-1)
        prev = np.concatenate([np.zeros(batch + (1, n)), rows.imag[..., :-1, :]], axis=-2)
        vr = np.where(second[..., None], prev, vr)      # row k+1 of a pair: Im of vector k
        vr = vr.astype(a.dtype)
    parts = (w.real.astype(a.dtype), w.imag.astype(a.dtype))
    return parts + (() if rows is None else (vr,)) + (info,)


def _lwork(n: dims.Dim) -> dims.Dim:
    """A workspace large enough for geev's blocked code (gehrd, orghr/unghr with blocks of
    up to 64, trevc3 with blocks of up to 128): 4n + 2 * 128 n + 256 elements."""
    return dims.add(dims.mul(260, n), 256)


def _lower(cg: Any, op: Any, outs: Sequence[Any]) -> None:
    (a,) = op.operands
    dtype = np.dtype(a.type.dtype.name)
    routine = ROUTINES[dtype]
    vectors = op.params["vectors"]
    cplx = dtype.kind == "c"
    *batch, n, _ = a.type.shape
    work_a = cg.scratch_buffer(dtype, [n, n])
    lwork = _lwork(n)
    work = cg.scratch_buffer(dtype, [lwork])
    rwork = cg.scratch_buffer(_real(dtype), [dims.mul(2, n)]) if cplx else None
    dummy = cg.scratch_buffer(dtype, [1])
    info = outs[-1]

    def library(invoke: Any) -> None:
        nn = cg.dim(n)
        ld = cg.dim(dims.maximum(n, 1))
        with cg.loop_nest(list(batch)) as bi:
            flat = cg.linearize(bi, list(batch)) if batch else cg.index(0)
            with cg.loop_nest([n, n]) as (i, j):        # LAPACK sees a: the transpose
                cg.store(work_a, [j, i], cg.read(a, list(bi) + [i, j]))
            vec_off = cg.b.mul(flat, cg.dim(dims.mul(n, n)))
            w_off = cg.b.mul(flat, nn)
            if vectors:
                vr, ldvr = cg.pointer(outs[-2], vec_off), ld
            else:
                vr, ldvr = cg.pointer(dummy), cg.index(1)
            values = [cg.pointer(outs[0], w_off)] if cplx else \
                [cg.pointer(outs[0], w_off), cg.pointer(outs[1], w_off)]
            tail = [cg.pointer(work), cg.dim(lwork)] + ([cg.pointer(rwork)] if rwork is not None else [])
            invoke([cg.char("N"), cg.char("V" if vectors else "N"), nn, cg.pointer(work_a), ld]
                   + values + [cg.pointer(dummy), cg.index(1), vr, ldvr] + tail
                   + [cg.pointer(info, flat)])
    cg.library_call(routine, library, fallback=lambda: cg.lower_fallback(op, outs), strings=2)


def _decompose(b: Builder, op: Any, args: list[Value]) -> list[Value]:
    """The fallback of a kernel without the routine: a LinAlgError (NO_PROVIDER), except for
    empty matrices (n = 0), which have nothing to compute."""
    (a,) = args
    n = a.type.shape[-1]
    empty = ops.eq(b, ops.size_of(b, n, I64), ops.scalar(b, 0, I64))
    ops.check(b, empty, "LinAlgError", NO_PROVIDER, (n,))
    return [ops.full(b, 0 if t.dtype == I64 else np.nan, t)
            for t in op.prim.abstract_eval((a.type,), op.params)]


geev = define(
    ops.geev_p,
    shape_rule=_shape_rule,
    numpy_ref=_ref,
    lower=_lower,
    streams_operands=False,
    differentiable=False,
    decomposition=_decompose,
    library_when=lambda op: True,
    doc="LAPACK's geev on each matrix of a stack (raw results; eig.py assembles them)",
)
