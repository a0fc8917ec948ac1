"""dot_general through BLAS gemm when the product is large, the generated loop nest otherwise.

Per batch element a contraction is one matrix product C[m, n] = A[m, k] B[k, n]: m the
flattened free axes of lhs, n those of rhs, k the contracted axes (in pairing order). The
result buffer is C, row-major. An operand is passed to gemm without a copy when it is a
*strided view of a buffer*: a materialized value, or a transpose, broadcast (of batch axes)
or reshape (of a contiguous buffer) of one, whose two groups of axes each flatten to one
stride and one of them has unit stride (``A.T @ B`` is a transposed operand, a leading
dimension, no copy). Any other operand (a cast, a slice with a step, the real part of a
complex array, ...) is packed into a temporary on the gemm branch: fusion.py computes such a
"cheap" operand inside the product's loop nest, and the packing loop computes it once.

Row-major C = A B is column-major C^T = B^T A^T, so gemm gets (rhs, lhs) in that order.

The choice is made at run time: m, n, k >= GEMM_MIN_DIM and m * n * k >= GEMM_MIN_PRODUCT
(COMPLEX_MIN_DIM and COMPLEX_MIN_PRODUCT for complex products), or for a real product a long
contraction (k >= LONG_K) with m, n >= LONG_K_MIN_DIM and m * n * k >= LONG_K_PRODUCT;
symbolic sizes are tested by the kernel; and the kernel's pointer to the routine set
(backend/library.py: NULL without a provider). A product that is statically small gets no
gemm branch at all.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
from llvmlite import ir as ll

from compiler.ir import dims
from compiler.ir.dims import Dim
from compiler.ir.types import C64, C128, F32, F64
from compiler.primitives import ops

#: a product calls gemm when m, n and k are each at least GEMM_MIN_DIM and m * n * k at least
#: GEMM_MIN_PRODUCT (docs/linalg.md "BLAS and LAPACK": the crossover measured by
#: benchmarks/linalg.py). Below, and for matrix-vector and tall-skinny shapes, the generated
#: loop nest is as fast or faster (it keeps the small operand in cache and vectorizes the
#: long axis; gemm's packing does not pay off).
GEMM_MIN_DIM = 64
GEMM_MIN_PRODUCT = 128 * 128 * 128
#: the same for complex products (zgemm, cgemm): they win from 64x64x64 on
COMPLEX_MIN_DIM = 32
COMPLEX_MIN_PRODUCT = 64 * 64 * 64
#: a real product with a long contraction calls gemm whatever m and n (from LONG_K_MIN_DIM on,
#: not a matrix-vector product): the loop nest streams B once per row of A, gemm blocks it
#: (one thread, AVX-512: 16x4096 @ 4096x1024 19.0 ms looped, 4.9 ms by gemm; X.T @ X of
#: 20000x16 356 us against 222; 512x512 @ 512x32 354 us against 328; benchmarks/linalg.py)
LONG_K, LONG_K_MIN_DIM, LONG_K_PRODUCT = 512, 4, 1 << 20
#: a real product of at most FEW_ROWS rows (m) and at least FEW_ROWS_MIN_N columns (n), its
#: result within FEW_ROWS_BYTES, runs the loop nest whatever k: the k-i-j nest reads B once,
#: the few rows of the result in L1 (linalg.py; vmap of ``X.T @ r`` over 8 vectors r, 8 x 4096
#: @ 4096 x 128: 287 us against dgemm's 410; 4 x 4096 @ 4096 x 1024: 2.3 ms against 3.6)
FEW_ROWS, FEW_ROWS_MIN_N, FEW_ROWS_BYTES = 8, 16, 64 * 1024
ROUTINES = {F64: "dgemm", F32: "sgemm", C128: "zgemm", C64: "cgemm"}
I64T = ll.IntType(64)


def routine(dtype: np.dtype) -> str | None:
    """The gemm routine of a dtype, None for the dtypes BLAS has no product for."""
    return ROUTINES.get(dtype)


def thresholds(dtype: np.dtype) -> tuple[int, int]:
    """(least m, n and k, least m * n * k) of a product of `dtype` that calls gemm."""
    if dtype.kind == "c":
        return COMPLEX_MIN_DIM, COMPLEX_MIN_PRODUCT
    return GEMM_MIN_DIM, GEMM_MIN_PRODUCT


def rules(m: Dim, n: Dim, k: Dim, dtype: np.dtype) -> list[list[tuple[Dim, int]]]:
    """The ways a product of these sizes calls gemm, each a list of (size, least value); the
    product calls gemm when every bound of one rule holds. Rules that fail for every value
    of the symbols are left out."""
    least, product = thresholds(dtype)
    size = dims.mul(dims.mul(m, n), k)
    alternatives = [[(m, least), (n, least), (k, least), (size, product)]]
    if dtype.kind == "f":
        alternatives.append([(k, LONG_K), (m, LONG_K_MIN_DIM), (n, LONG_K_MIN_DIM), (size, LONG_K_PRODUCT)])
    return [rule for rule in alternatives if not any(isinstance(d, int) and d < bound for d, bound in rule)]


def may_call(m: Dim, n: Dim, k: Dim, dtype: np.dtype) -> bool:
    """Can a product of these sizes call gemm (False: it is small for every value of its
    symbols, or has few rows (`few_rows`), and gets the loop nest only)?"""
    return bool(rules(m, n, k, dtype)) and not few_rows(m, n, dtype)


def few_rows(m: Dim, n: Dim, dtype: np.dtype) -> bool:
    """A real product of statically few rows, long enough ones, whose result fits in L1."""
    return dtype.kind == "f" and isinstance(m, int) and isinstance(n, int) and m <= FEW_ROWS \
        and n >= FEW_ROWS_MIN_N and m * n * dtype.itemsize <= FEW_ROWS_BYTES


def _row_major(shape: Sequence[Dim]) -> list[Dim]:
    strides: list[Dim] = []
    acc: Dim = 1
    for d in reversed(shape):
        strides.append(acc)
        acc = dims.mul(acc, d)
    return strides[::-1]


def strided_view(cg: Any, v: Any) -> tuple[Any, list[Dim]] | None:
    """(buffer, stride of each axis of `v` in elements) when `v` reads a buffer through
    transposes, broadcasts and reshapes of a contiguous array only; else None."""
    buf = cg.buffers.get(v)
    if buf is not None:
        return buf, _row_major(buf.shape)
    op = v.op
    if op is None:
        return None
    if op.prim is ops.transpose_p:
        inner = strided_view(cg, op.operands[0])
        if inner is None:
            return None
        return inner[0], [inner[1][p] for p in op.params["permutation"]]
    if op.prim is ops.broadcast_in_dim_p:
        inner = strided_view(cg, op.operands[0])
        if inner is None:
            return None
        src, shape = op.operands[0].type.shape, op.params["shape"]
        strides: list[Dim] = [0] * len(shape)
        for i, j in enumerate(op.params["broadcast_dimensions"]):
            strides[j] = inner[1][i] if src[i] == shape[j] else 0
        return inner[0], strides
    if op.prim is ops.reshape_p:
        inner = strided_view(cg, op.operands[0])
        if inner is None or inner[1] != _row_major(op.operands[0].type.shape):
            return None
        return inner[0], _row_major(op.params["new_sizes"])
    return None


def _group_stride(shape: Sequence[Dim], strides: Sequence[Dim], axes: Sequence[int]) -> Dim | None:
    """The one stride of the flattened `axes` (None: they do not flatten; 0 for a group
    of size-1 axes only, whose stride does not matter)."""
    kept = [a for a in axes if shape[a] != 1]
    if not kept:
        return 0
    for a, b in zip(kept, kept[1:]):
        if strides[a] != dims.mul(strides[b], shape[b]):
            return None
    stride = strides[kept[-1]]
    return None if stride == 0 else stride


class Operand:
    """One gemm operand: a base buffer, the strides of its batch axes, and its matrix
    (rows x cols, row-major sense) as `trans`/`ld` of the column-major call."""

    def __init__(self, buf: Any, batch: list[Dim], trans: str, ld: Dim) -> None:
        self.buf, self.batch, self.trans, self.ld = buf, batch, trans, ld


def _layout(cg: Any, v: Any, batch: Sequence[int], rows: Sequence[int], cols: Sequence[int]
            ) -> Operand | None:
    """`v` as a gemm operand without a copy: the column-major view of the row-major matrix
    (rows x cols) is "N" with ld = the rows' stride when cols have unit stride, "T" with ld =
    the cols' stride when rows have unit stride."""
    view = strided_view(cg, v)
    if view is None:
        return None
    buf, strides = view
    if not np.dtype(buf.dtype) == v.type.dtype:
        return None
    shape = v.type.shape
    r, c = _group_stride(shape, strides, rows), _group_stride(shape, strides, cols)
    if r is None or c is None:
        return None
    nrows, ncols = dims.product([shape[a] for a in rows]), dims.product([shape[a] for a in cols])
    bstrides = [strides[a] for a in batch]
    if c in (0, 1) and r != 0:
        return Operand(buf, bstrides, "N", r)
    if r in (0, 1) and c != 0:
        return Operand(buf, bstrides, "T", c)
    if r == 0 and c in (0, 1):          # a single row or element
        return Operand(buf, bstrides, "N", dims.maximum(ncols, 1))
    if c == 0 and r == 1:               # a single column
        return Operand(buf, bstrides, "T", dims.maximum(nrows, 1))
    return None


def _packed(cg: Any, v: Any, batch: Sequence[int], rows: Sequence[int], cols: Sequence[int]
            ) -> Callable[[], Operand]:
    """`v` copied into a temporary laid out [batch, rows, cols] (row-major): a function that
    emits the copy where it is called (on the gemm branch) and returns the operand."""
    order = list(batch) + list(rows) + list(cols)
    shape = [v.type.shape[a] for a in order]
    buf = cg.scratch_buffer(v.type.dtype, shape)

    def emit() -> Operand:
        with cg.loop_nest(shape) as idx:
            at: list[Any] = [None] * v.type.ndim
            for a, i in zip(order, idx):
                at[a] = i
            cg.store(buf, idx, cg.read(v, at))
        ncols = dims.product(shape[len(batch) + len(rows):])
        return Operand(buf, _row_major(shape)[:len(batch)], "N", dims.maximum(ncols, 1))
    return emit


def lower(cg: Any, op: Any, out: Any, laxes: tuple, raxes: tuple,
          fallback: Callable[[], None]) -> bool:
    """Emit the product through gemm with `fallback()` (the loop nest) on the other branch;
    False (nothing emitted) when gemm cannot or should not do it."""
    lhs, rhs = op.operands
    (lb, lfree, lc), (rb, rfree, rc) = laxes, raxes
    dtype = op.results[0].dtype
    name = routine(dtype)
    if name is None:
        return False
    m = dims.product([lhs.type.shape[a] for a in lfree])
    n = dims.product([rhs.type.shape[a] for a in rfree])
    k = dims.product([lhs.type.shape[a] for a in lc])
    if not may_call(m, n, k, dtype):
        return False
    a, b = _layout(cg, lhs, lb, lfree, lc), _layout(cg, rhs, rb, rc, rfree)
    gram = _transposed_pair(lhs, rhs, laxes, raxes) and (a is None) == (b is None)
    get_a = (lambda: a) if a is not None else _packed(cg, lhs, lb, lfree, lc)
    get_b = (lambda: b) if b is not None else (get_a if gram else _packed(cg, rhs, rb, rc, rfree))
    bshape = [lhs.type.shape[x] for x in lb]
    when = any_rule(cg, rules(m, n, k, dtype))

    def library(invoke: Callable[[Sequence[Any]], None]) -> None:
        """Row-major C = A B as column-major C^T = B^T A^T: gemm(B, A), one call per batch
        element."""
        A, B = get_a(), get_b()
        one, zero = cg.const(dtype, 1.0), cg.const(dtype, 0.0)
        with cg.loop_nest(bshape) as bi:
            pa = cg.pointer(A.buf, _offset(cg, A.batch, bi))
            pb = cg.pointer(B.buf, _offset(cg, B.batch, bi))
            pc = cg.pointer(out, cg.b.mul(cg.linearize(bi, bshape), cg.dim(dims.mul(m, n)))
                            if bshape else None)
            invoke([cg.char(B.trans), cg.char(A.trans), cg.dim(n), cg.dim(m), cg.dim(k), one,
                    pb, cg.dim(B.ld), pa, cg.dim(A.ld), zero, pc, cg.dim(dims.maximum(n, 1))])
    if (gram or a is not None and b is not None and _same_matrix_transposed(a, b)) \
            and dtype.kind == "f" and len(lfree) == 1 and len(rfree) == 1:
        def gemm_call() -> None:
            cg.library_call(name, library, fallback, when=when, strings=2)
        cg.library_call(SYRK[dtype], lambda invoke: _syrk(cg, invoke, get_a(), out, bshape, m, k, dtype),
                        gemm_call, when=when, strings=2)
        return True
    cg.library_call(name, library, fallback, when=when, strings=2)
    return True


#: a real product of a matrix with its own transpose (X @ X.T, X.T @ X) computes one triangle
SYRK = {F64: "dsyrk", F32: "ssyrk"}


def _transposed_pair(lhs: Any, rhs: Any, laxes: tuple, raxes: tuple) -> bool:
    """Whether rhs is ``transpose(lhs)`` contracted so that the product is lhs @ lhs.T of a
    2-d lhs (a fused value, packed once for both operands)."""
    (lb, lfree, lc), (rb, rfree, rc) = laxes, raxes
    op = rhs.op
    return (op is not None and op.prim is ops.transpose_p and op.operands[0] is lhs
            and lhs.type.ndim == 2 and tuple(op.params["permutation"]) == (1, 0)
            and tuple(lc) == (1,) and tuple(rc) == (0,) and not lb and not rb)


def _same_matrix_transposed(a: "Operand", b: "Operand") -> bool:
    """Whether gemm operand b is a's matrix transposed: one buffer, one leading dimension,
    the opposite `trans`, the same batch strides (strided views start at the buffer)."""
    return a.buf is b.buf and a.trans != b.trans and a.ld == b.ld and a.batch == b.batch


def _syrk(cg: Any, invoke: Callable[[Sequence[Any]], None], A: "Operand", out: Any,
          bshape: list[Dim], m: Dim, k: Dim, dtype: np.dtype) -> None:
    """C = A A^T (m x m; `out` is [*batch, m, m]) with one triangle computed (half gemm's
    work), then mirrored.

    In column-major terms A's buffer holds A^T (trans "N") or A (trans "T"), so C is
    syrk(trans "T") or syrk(trans "N") of it; uplo "U" of column-major C is the lower
    triangle of the row-major result, copied into the upper one after the call."""
    one, zero = cg.const(dtype, 1.0), cg.const(dtype, 0.0)
    trans = "T" if A.trans == "N" else "N"
    n = cg.dim(m)
    with cg.loop_nest(bshape) as bi:
        pa = cg.pointer(A.buf, _offset(cg, A.batch, bi))
        base = cg.b.mul(cg.linearize(bi, bshape), cg.dim(dims.mul(m, m))) if bshape else cg.index(0)
        invoke([cg.char("U"), cg.char(trans), n, cg.dim(k), one, pa, cg.dim(A.ld), zero,
                cg.pointer(out, base if bshape else None), cg.dim(dims.maximum(m, 1))])
        with cg.loop(n) as r:                         # row r: C[r, c] = C[c, r] for c > r
            with cg.loop(cg.b.sub(cg.b.sub(n, r), cg.index(1))) as t:
                c = cg.b.add(cg.b.add(r, t), cg.index(1))
                cg.store(out, list(bi) + [r, c], cg.load(out, list(bi) + [c, r]))


def any_rule(cg: Any, alternatives: Sequence[Sequence[tuple[Dim, int]]]) -> Any:
    """The run-time test that one of the rules holds (None: one holds for every value)."""
    when = None
    for rule in alternatives:
        test = at_least(cg, rule)
        if test is None:
            return None
        when = test if when is None else cg.b.or_(when, test)
    return when


def at_least(cg: Any, bounds: Sequence[tuple[Dim, int]]) -> Any:
    """The run-time test that each symbolic size is at least its bound, for the `when` of a
    library call (None when every size is static: the choice was made when compiling)."""
    when = None
    for d, bound in bounds:
        if not isinstance(d, int):
            big = cg.b.icmp_signed(">=", cg.dim(d), ll.Constant(I64T, bound))
            when = big if when is None else cg.b.and_(when, big)
    return when


def _offset(cg: Any, strides: Sequence[Dim], idx: Sequence[Any]) -> Any:
    if not strides:
        return None
    total = ll.Constant(I64T, 0)
    for s, i in zip(strides, idx):
        if s != 0:
            total = cg.b.add(total, cg.b.mul(i, cg.dim(s)))
    return total
