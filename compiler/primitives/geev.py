"""geev: LAPACK's general eigensolver (dgeev, sgeev, zgeev, cgeev) on a stack of matrices.

``geev(a) {vectors}`` exists only after the ``decompose`` stage: `eig`'s decomposition
emits it for matrices larger than the unrolled code handles, or of a symbolic size
(compiler/primitives/eig.py turns its raw results into `eig`'s). Its results are
LAPACK's, for each matrix of ``a [..., n, n]``:

``(w, [vr,] info)``: the eigenvalues ``w [..., n]`` (complex), with ``vectors`` the right
eigenvectors as the *rows* of ``vr [..., n, n]`` (complex; row ``k``: LAPACK's column ``k``
of VR, of unit norm), and ``info [...]`` (int64, geev's: > 0 where the QR algorithm did not
converge). For real ``a`` (dgeev, sgeev) the lowering assembles LAPACK's ``wr``, ``wi`` and
its real VR (a complex-conjugate pair ``k, k+1`` stores the real and imaginary parts of the
vector of ``w_k`` in columns ``k`` and ``k+1``; ``w_{k+1}``'s is its conjugate).

Lowering: the matrix is copied transposed into a work matrix (buffers are row-major,
LAPACK reads column-major: the copy makes LAPACK see ``a`` itself, so the eigenvalues come
in the order NumPy's, which calls the same routine on the same matrix, gives) and geev is
called with a workspace of the size the blocked code wants (``_lwork``), once per matrix
of the stack. The op keeps a region (``library_when`` is always true), the code a kernel
without the routine runs: eig_loops.py's generated loops, for any n, lowered without
vectorization (``Codegen.scalar_code``: they are large, and rarely run).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from llvmlite import ir as ll

from compiler.ir import dims
from compiler.ir.builder import Builder
from compiler.ir.core import Value
from compiler.ir.primitive import define
from compiler.ir.types import I64, TensorType
from compiler.primitives import ops
from compiler.primitives.base import check
from compiler.primitives.eig_loops import geev_loops

Types = tuple[TensorType, ...]

ROUTINES = {np.dtype(np.float64): "dgeev", np.dtype(np.float32): "sgeev",
            np.dtype(np.complex128): "zgeev", np.dtype(np.complex64): "cgeev"}

def _real(dtype: Any) -> np.dtype:
    return np.dtype(np.finfo(np.dtype(dtype.name if hasattr(dtype, "name") else dtype)).dtype)


def _shape_rule(in_types: Types, params: dict[str, Any]) -> Types:
    (a,) = in_types
    check(a.ndim >= 2 and a.shape[-1] == a.shape[-2], f"geev: needs square matrices, got {a}")
    check(np.dtype(a.dtype.name) in ROUTINES, f"geev: needs float32/64 or complex64/128, got {a}")
    batch, n = tuple(a.shape[:-2]), a.shape[-1]
    cdt = _complex(a.dtype)
    vr = (TensorType(cdt, tuple(a.shape)),) if params["vectors"] else ()
    return (TensorType(cdt, batch + (n,)),) + vr + (TensorType(I64, batch),)


def _complex(dtype: Any) -> np.dtype:
    return np.result_type(np.dtype(dtype.name if hasattr(dtype, "name") else dtype), np.complex64)


def _ref(a: np.ndarray, vectors: bool) -> tuple:
    """NumPy's eig, which calls geev on the same matrix and assembles real results alike."""
    cdt = _complex(a.dtype)
    info = np.zeros(a.shape[:-2], np.int64)
    if not vectors:
        return np.linalg.eigvals(a).astype(cdt), info
    w, v = np.linalg.eig(a)
    return w.astype(cdt), np.swapaxes(v, -1, -2).astype(cdt), info


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
    cdt = _complex(dtype)
    if not cplx:        # LAPACK's real results, assembled into the complex outputs after each call
        wr, wi = cg.scratch_buffer(dtype, [n]), cg.scratch_buffer(dtype, [n])
        vrs = cg.scratch_buffer(dtype, [n, n]) if vectors else None

    def assemble(bi: list) -> None:
        b = cg.b
        one = cg.index(1)
        with cg.loop_nest([n]) as (k,):
            cg.store(outs[0], bi + [k], cg.complex_value(cdt, cg.load(wr, [k]), cg.load(wi, [k])))
        if vrs is None:
            return
        with cg.loop_nest([n, n]) as (k, i):
            part = cg.load(wi, [k])
            first = b.fcmp_ordered(">", part, ll.Constant(part.type, 0.0))
            second = b.fcmp_ordered("<", part, ll.Constant(part.type, 0.0))
            k_re = b.select(second, b.sub(k, one), k)          # the pair's real part: row k-1
            k_im = b.select(first, b.add(k, one), k)           # its imaginary part: row k+1
            im = cg.load(vrs, [k_im, i])
            im = b.select(first, im, b.select(second, b.fneg(im), ll.Constant(im.type, 0.0)))
            cg.store(outs[1], bi + [k, i], cg.complex_value(cdt, cg.load(vrs, [k_re, i]), im))

    def library(invoke: Any) -> None:
        nn = cg.dim(n)
        ld = cg.dim(dims.maximum(n, 1))
        with cg.loop_nest(list(batch)) as bi:
            flat = cg.linearize(bi, list(batch)) if batch else cg.index(0)
            with cg.loop_nest([n, n]) as (i, j):        # LAPACK sees a: the transpose
                cg.store(work_a, [j, i], cg.read(a, list(bi) + [i, j]))
            vec_off = cg.b.mul(flat, cg.dim(dims.mul(n, n)))
            w_off = cg.b.mul(flat, nn)
            if not vectors:
                vr, ldvr = cg.pointer(dummy), cg.index(1)
            elif cplx:
                vr, ldvr = cg.pointer(outs[1], vec_off), ld
            else:
                vr, ldvr = cg.pointer(vrs), ld
            values = [cg.pointer(outs[0], w_off)] if cplx else [cg.pointer(wr), cg.pointer(wi)]
            tail = [cg.pointer(work), cg.dim(lwork)] + ([cg.pointer(rwork)] if rwork is not None else [])
            invoke([cg.char("N"), cg.char("V" if vectors else "N"), nn, cg.pointer(work_a), ld]
                   + values + [cg.pointer(dummy), cg.index(1), vr, ldvr] + tail
                   + [cg.pointer(info, flat)])
            if not cplx:
                assemble(list(bi))
    def fallback() -> None:
        with cg.scalar_code():      # eig_loops.py's loops: compile time over speed
            cg.lower_fallback(op, outs)
    cg.library_call(routine, library, fallback=fallback, strings=2)


def _decompose(b: Builder, op: Any, args: list[Value]) -> list[Value]:
    """The fallback of a kernel without the routine: generated loops (eig_loops.py)."""
    return geev_loops(b, args[0], op.params["vectors"])


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
