"""dot_general of a narrow matrix with its own transpose (``X.T @ X``, X tall with a few
columns): one pass over X in register-blocked vector code, one triangle computed.

For X of k rows and n columns (n at most MAX_VECTORS vector registers wide), the Gram matrix
G = X^T X is the sum over rows of the outer products x_i x_i^T. Rows of X are taken a chunk
at a time (CHUNK_BYTES, so that a chunk stays in L1); for each block of rows of G (`blocks`),
the vectors of each of its rows a from the vector column of the diagonal on (G[a, (a // V) *
V:], the upper triangle and a little of the lower) are accumulators held in registers while
the chunk's rows stream by: per row of X, one vector load per column vector and one broadcast
per row of the block, then a fused multiply-add per accumulator. After a chunk, the accumulators are added to G; at the end the lower triangle
is copied from the upper one.

The sums are blocked: a chunk's products are summed in order in the accumulators, and the
chunks' partial sums are added into G, so the rounding error grows with the chunk length plus
the number of chunks, not with k, as in OpenBLAS's syrk. X.T @ X of 20000 x 16 float64, one
thread, Zen 4: dsyrk 203 us, this code 95 (docs/linalg.md).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir as ll

from compiler.ir import dims
from compiler.ir.types import F32, F64
from compiler.primitives import gemm

#: X's columns span at most this many vectors (float64: 48 columns; beyond, OpenBLAS syrk is
#: about as fast: 80 columns 591 us against 649, one thread, Zen 4)
MAX_VECTORS = 12
#: accumulator registers of a block of G's rows (of 32 vector registers with AVX-512, 16 else)
ACCUMULATORS = {512: 24, 256: 12}
#: the width of the vectors: 256 bits also on AVX-512, whose 32 registers then hold more
#: accumulators, and whose narrower vectors waste fewer products on the lower triangle of the
#: diagonal blocks (16 x 16 float64: 40 ymm products a row, 24 zmm; AMD Zen 4 runs two ymm
#: FMAs or one zmm FMA a cycle)
LANE_BITS = 256
#: the rows of X summed in registers before their sums are added to G: a chunk fits in L1
CHUNK_BYTES = 32 * 1024
I64T = ll.IntType(64)
SCALAR = {F32: ll.FloatType(), F64: ll.DoubleType()}


def _operand(cg: Any, op: Any) -> tuple[Any, list[dims.Dim], dims.Dim] | None:
    """(X's buffer, X's batch strides, X's row stride) when `op` is ``X^T X`` of one strided
    matrix X (``transpose(X) @ X``, batched or not, ``X.T @ X`` of a broadcast or reshape of a
    buffer too), its columns unit-stride; else None."""
    lhs, rhs = op.operands
    (lc, rc), (lb, rb) = op.params["dimension_numbers"]
    nb = len(lb)
    if tuple(lb) != tuple(range(nb)) or tuple(rb) != tuple(range(nb)) or lhs.type.ndim != nb + 2 \
            or rhs.type.ndim != nb + 2 or tuple(lc) != (nb + 1,) or tuple(rc) != (nb,):
        return None
    lv, rv = gemm.strided_view(cg, lhs), gemm.strided_view(cg, rhs)
    if lv is None or rv is None or lv[0] is not rv[0] or np.dtype(lv[0].dtype) != lhs.type.dtype:
        return None
    (ls, rs) = lv[1], rv[1]
    # lhs is [*batch, n, k] with strides [*b, 1, ld], rhs [*batch, k, n] with [*b, ld, 1]
    if ls[:nb] != rs[:nb] or ls[nb] != 1 or rs[nb + 1] != 1 or ls[nb + 1] != rs[nb]:
        return None
    return lv[0], list(ls[:nb]), rs[nb]


def applies(cg: Any, op: Any) -> bool:
    """Whether `op` is ``X^T X`` of a real X whose static width n is 2 to MAX_VECTORS vectors."""
    dtype = op.results[0].dtype
    if dtype not in SCALAR or cg.vector_bits not in ACCUMULATORS or _operand(cg, op) is None:
        return False
    n = op.operands[0].type.shape[-2]
    lanes = LANE_BITS // (8 * dtype.itemsize)
    return isinstance(n, int) and 2 <= n <= MAX_VECTORS * lanes


def blocks(n: int, lanes: int, accumulators: int) -> list[tuple[int, int]]:
    """The blocks of G's rows, (first row, rows): row a holds the vectors of G[a, c0 * lanes:]
    from the vector column c0 = a // lanes of its diagonal on (the upper triangle), and a
    block's rows hold at most `accumulators` vectors together (one row at least)."""
    vectors = -(-n // lanes)
    out: list[tuple[int, int]] = []
    a0 = 0
    while a0 < n:
        rows, used = 0, 0
        while a0 + rows < n and (rows == 0 or used + vectors - (a0 + rows) // lanes <= accumulators):
            used += vectors - (a0 + rows) // lanes
            rows += 1
        out.append((a0, rows))
        a0 += rows
    return out


def lower(cg: Any, op: Any, out: Any) -> bool:
    """Emit ``X^T X`` as one blocked pass over X into `out` ([*batch, n, n]); False (nothing
    emitted) when the product is not of that form."""
    if not applies(cg, op):
        return False
    found = _operand(cg, op)
    assert found is not None
    buf, bstrides, ld = found
    dtype = op.results[0].dtype
    lhs = op.operands[0]
    nb = len(bstrides)
    bshape = list(lhs.type.shape[:nb])
    n, k = lhs.type.shape[nb], lhs.type.shape[nb + 1]
    assert isinstance(n, int)
    lanes = LANE_BITS // (8 * dtype.itemsize)
    vectors = -(-n // lanes)
    plan = blocks(n, lanes, ACCUMULATORS[cg.vector_bits])
    vc = VectorCode(cg, dtype, lanes)
    b = cg.b
    slots = [cg.alloca_builder.alloca(vc.vt) for _ in range(ACCUMULATORS[cg.vector_bits])]
    chunk = max(8, CHUNK_BYTES // (n * dtype.itemsize))
    kk, ldv = cg.dim(k), cg.dim(ld)

    def row_vector(row: Any, c: int) -> Any:
        """Columns c*lanes ... of one row of X as a vector (zeros past column n)."""
        return vc.load(row, c * lanes, min(lanes, n - c * lanes))

    with cg.loop_nest(bshape) as bi:
        base = buf.ptr
        for s, i in zip(bstrides, bi):
            if s != 0:
                base = b.gep(base, [b.mul(i, cg.dim(s))], inbounds=True)
        g = cg.pointer(out, b.mul(cg.linearize(bi, bshape), cg.index(n * n))) if bshape else out.ptr
        with cg.loop(cg.index(n * n), vectorize=False, unroll=False) as t:
            b.store(ll.Constant(SCALAR[dtype], 0.0), b.gep(g, [t], inbounds=True))
        count = b.udiv(b.add(kk, cg.index(chunk - 1)), cg.index(chunk))
        with cg.loop(count, vectorize=False, unroll=False) as ch:
            start = b.mul(ch, cg.index(chunk))
            rest = b.sub(kk, start)
            rows = b.select(b.icmp_signed("<", rest, cg.index(chunk)), rest, cg.index(chunk))
            for a0, nrows in plan:
                c0 = a0 // lanes             # the block's first vector column
                accs, used = [], 0
                for r in range(nrows):
                    first = (a0 + r) // lanes
                    accs.append((first, slots[used:used + vectors - first]))
                    used += vectors - first
                for _, line in accs:
                    for slot in line:
                        b.store(vc.zero, slot)
                with cg.loop(rows, vectorize=False) as t:
                    row = b.gep(base, [b.mul(b.add(start, t), ldv)], inbounds=True)
                    xs = [row_vector(row, c) for c in range(c0, vectors)]
                    for r, (first, line) in enumerate(accs):
                        bc = vc.splat(b.load(b.gep(row, [cg.index(a0 + r)], inbounds=True)))
                        for x, slot in zip(xs[first - c0:], line):
                            b.store(vc.fma(bc, x, b.load(slot)), slot)
                for r, (first, line) in enumerate(accs):
                    for c, slot in zip(range(first, vectors), line):
                        vc.add_into(g, (a0 + r) * n + c * lanes, min(lanes, n - c * lanes), b.load(slot))
        # the lower triangle from the upper one: G[a, c] = G[c, a] for c < a
        with cg.loop(cg.index(n), vectorize=False, unroll=False) as a:
            with cg.loop(a, vectorize=False, unroll=False) as c:
                src = b.gep(g, [b.add(b.mul(c, cg.index(n)), a)], inbounds=True)
                b.store(b.load(src), b.gep(g, [b.add(b.mul(a, cg.index(n)), c)], inbounds=True))
    return True


class VectorCode:
    """The vocabulary of register-blocked vector code for one dtype and vector width (this
    module's lower and glm.Update): the vector type, its zero, a broadcast, a fused multiply-add
    (a multiply and an add without FMA), a few elements of memory as a vector and a vector's
    first lanes added into memory."""

    def __init__(self, cg: Any, dtype: np.dtype, lanes: int) -> None:
        self.cg, self.dtype, self.lanes = cg, dtype, lanes
        et = SCALAR[dtype]
        self.vt = ll.VectorType(et, lanes)
        self.zero = ll.Constant(self.vt, [ll.Constant(et, 0.0)] * lanes)
        name = f"llvm.fma.v{lanes}f{dtype.itemsize * 8}"
        self.fma_fn = cg.module.globals.get(name) or ll.Function(
            cg.module, ll.FunctionType(self.vt, [self.vt] * 3), name)

    def fma(self, x: Any, y: Any, acc: Any) -> Any:
        b = self.cg.b
        return b.call(self.fma_fn, [x, y, acc]) if self.cg.has_fma else b.fadd(b.fmul(x, y), acc)

    def splat(self, s: Any) -> Any:
        """The scalar s in every lane."""
        b, i32 = self.cg.b, ll.IntType(32)
        undef = ll.Constant(self.vt, ll.Undefined)
        mask = ll.Constant(ll.VectorType(i32, self.lanes), [ll.Constant(i32, 0)] * self.lanes)
        return b.shuffle_vector(b.insert_element(undef, s, ll.Constant(i32, 0)), undef, mask)

    def load(self, row: Any, offset: int, count: int) -> Any:
        """row[offset : offset + count] as a vector (zeros past them)."""
        cg, b = self.cg, self.cg.b
        if count == self.lanes:
            ptr = b.bitcast(b.gep(row, [cg.index(offset)], inbounds=True), self.vt.as_pointer())
            return b.load(ptr, align=self.dtype.itemsize)
        v = self.zero
        for lane in range(count):
            s = b.load(b.gep(row, [cg.index(offset + lane)], inbounds=True))
            v = b.insert_element(v, s, ll.Constant(ll.IntType(32), lane))
        return v

    def add_into(self, g: Any, offset: int, count: int, acc: Any) -> None:
        """g[offset : offset + count] += the first `count` lanes of `acc`."""
        cg, b, item = self.cg, self.cg.b, self.dtype.itemsize
        if count == self.lanes:
            ptr = b.bitcast(b.gep(g, [cg.index(offset)], inbounds=True), self.vt.as_pointer())
            b.store(b.fadd(b.load(ptr, align=item), acc), ptr, align=item)
            return
        for lane in range(count):
            ptr = b.gep(g, [cg.index(offset + lane)], inbounds=True)
            b.store(b.fadd(b.load(ptr), b.extract_element(acc, ll.Constant(ll.IntType(32), lane))), ptr)
