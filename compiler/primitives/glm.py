"""Two matrix-vector products with one matrix and an elementwise function between them, in
one pass over the matrix: ``z = X @ w; r = f(z, ...); g = X.T @ r`` (or ``r @ X``).

That is the gradient of every generalised linear model (linear, logistic, Poisson
regression: ``X.T @ (sigmoid(X @ w) - y)``), written by hand or made by grad. Lowered one
product at a time, X is read twice from memory (4096 x 128 float64 is 4 MB: past L2). Here
the first product's lowering also computes the second: X is taken CHUNK_BYTES of rows at a
time (the chunk stays in L1), and for each chunk

1. z of its rows, a dot product per row (written to z's buffer, which other readers of z
   use as before);
2. r of its rows, the elementwise expression of z evaluated on the spot (vectorized across
   the chunk's rows: exp, log, ... at full width);
3. g plus r_i times row i of X, for each of its rows, read again from L1.

g lives in a temporary until the second product's turn comes, where it is copied to its
result (`Codegen.fused_products`). The dot products are summed as `linalg._lower_dot_rows`
sums them; g is summed per chunk, and the chunks' sums added to it (blocked summation: the
rounding error grows with the chunk's rows plus the number of chunks, where row after row it
grows with k; 4096 x 128 float64: 0.4x the error of the separate products, 0.9x BLAS's).

It applies when r depends on z only through elementwise ops and reshapes that keep the row
index (``r[i]`` reads ``z[i]`` only), and on nothing else than the function's arguments and
values computed on the spot from them (constants, broadcasts of scalars): those can be read
before their turn. Anything else (a reduction of z, a value written later) keeps the two
products apart.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from compiler.ir import dims
from compiler.ir.primitive import ELEMENTWISE, INDEX
from compiler.ir.types import F32, F64
from compiler.primitives import gemm, ops

#: the rows of X handled together: z, r and the updates of g of a chunk read it from L1
#: (4096 x 128 float64, one thread, Zen 4: 59 us; 8 KiB 69 us, 64 KiB 67 us; taking 2 or 4
#: rows at a time in steps 1 and 3, sharing the loads of w and of g's sums, was slower)
CHUNK_BYTES = 16 * 1024


def _base(v: Any) -> Any:
    """The value whose buffer `v` reads through transposes, reshapes and broadcasts (two
    values of an update chain share a buffer: the buffer alone does not name the matrix)."""
    while v.op is not None and v.op.prim in (ops.transpose_p, ops.reshape_p, ops.broadcast_in_dim_p):
        v = v.op.operands[0]
    return v


def _matrix(cg: Any, v: Any) -> tuple[Any, Any, int] | None:
    """(buffer, row stride, axis of v that runs along X's rows) when the 2-d `v` reads a
    row-major matrix X (rows unit-stride) directly or transposed."""
    if v.type.ndim != 2:
        return None
    view = gemm.strided_view(cg, v)
    if view is None or np.dtype(view[0].dtype) != v.type.dtype:
        return None
    s0, s1 = view[1]
    if s1 == 1 and s0 != 1 and s0 != 0:
        return view[0], s0, 0
    if s0 == 1 and s1 != 1 and s1 != 0:
        return view[0], s1, 1
    return None


def _vector_axis(v: Any) -> int | None:
    """The one axis of `v` longer than 1 that a vector operand runs along (its others have
    size 1), or None."""
    axes = [a for a, d in enumerate(v.type.shape) if d != 1]
    return axes[0] if len(axes) == 1 else (0 if v.type.ndim == 1 else None)


def _rows_product(cg: Any, op: Any) -> tuple[Any, Any, Any] | None:
    """(X's buffer, its row stride, w) when `op` is ``X @ w``: X row-major read along its
    rows, contracted with a vector."""
    if op.prim is not ops.dot_general_p or op.results[0].dtype not in (F32, F64):
        return None
    (lc, rc), (lb, rb) = op.params["dimension_numbers"]
    lhs, rhs = op.operands
    if lb or rb or tuple(lc) != (1,) or len(rc) != 1 or _vector_axis(rhs) != rc[0]:
        return None
    x = _matrix(cg, lhs)
    if x is None or x[2] != 0:
        return None
    return x[0], x[1], rhs


def _transposed_product(cg: Any, op: Any, buf: Any, ld: Any, base: Any) -> tuple[Any, int] | None:
    """(r, r's axis) when `op` is ``X.T @ r`` or ``r @ X`` with X = the matrix at `buf` (row
    stride `ld`) contracted over its rows with the vector r."""
    if op.prim is not ops.dot_general_p:
        return None
    (lc, rc), (lb, rb) = op.params["dimension_numbers"]
    if lb or rb or len(lc) != 1:
        return None
    for x_side in (0, 1):
        xv, r = op.operands[x_side], op.operands[1 - x_side]
        x_axis, r_axis = (lc[0], rc[0]) if x_side == 0 else (rc[0], lc[0])
        m = _matrix(cg, xv)
        if m is None or m[0] is not buf or m[1] != ld or m[2] != x_axis or _base(xv) is not base:
            continue
        if _vector_axis(r) == r_axis:
            return r, r_axis
    return None


def _chain(cg: Any, r: Any, z: Any, rows: dims.Dim) -> list[Any] | None:
    """The values between z and r that `read(r)` computes (all of them, on the spot), or
    None when r is not a row-by-row function of z and of the arguments."""
    depends: dict[Any, bool] = {}
    order: list[Any] = []
    stack: list[tuple[Any, bool]] = [(r, False)]
    while stack:
        v, done = stack.pop()
        if v in depends:
            continue
        op = v.op
        if v is z:
            depends[v] = True
            continue
        if op is None:                          # an argument of the block
            if v not in cg.buffers:
                return None
            depends[v] = False
            continue
        if not done:
            if v in cg.buffers and op.prim.kind not in (ELEMENTWISE, INDEX):
                return None
            if op.prim.kind not in (ELEMENTWISE, INDEX) or op.prim.lower is None or op.regions:
                return None
            stack.append((v, True))
            stack.extend((a, False) for a in op.operands if a not in depends)
            continue
        dep = any(depends[a] for a in op.operands)
        depends[v] = dep
        if dep:
            long_axes = [d for d in v.type.shape if d != 1]
            if long_axes != [rows]:
                return None
            if op.prim.kind == INDEX and op.prim is not ops.reshape_p:
                return None
            if op.prim.kind == INDEX and [d for d in op.operands[0].type.shape if d != 1] != [rows]:
                return None
        elif v in cg.buffers:
            return None                         # a value written elsewhere: maybe not yet
        order.append(v)
    return order if depends.get(r) else None


def lower(cg: Any, op: Any, out: Any) -> bool:
    """At ``z = X @ w``: when a later product of the block is ``X.T @ f(z)``, emit both in
    one pass (the second's result kept in `cg.fused_products`); False: nothing emitted."""
    first = _rows_product(cg, op)
    sched = cg.sched
    if first is None or sched is None:
        return False
    buf, ld, w = first
    z = op.results[0]
    ops_after = sched.block.ops[sched.block.ops.index(op) + 1:]
    k, n = op.operands[0].type.shape
    for later in ops_after:
        found = _transposed_product(cg, later, buf, ld, _base(op.operands[0]))
        if found is None:
            continue
        r, r_axis = found
        chain = _chain(cg, r, z, k)
        if chain is None:
            continue
        cg.fused_products[later] = _emit(cg, op, out, buf, ld, w, r, r_axis, chain, k, n)
        return True
    return False


def _emit(cg: Any, op: Any, z_out: Any, buf: Any, ld: Any, w: Any, r: Any, r_axis: int,
          chain: list[Any], k: dims.Dim, n: dims.Dim) -> Any:
    dtype = op.results[0].dtype
    b = cg.b
    (_, rc), _ = op.params["dimension_numbers"]
    w_axis = rc[0]
    g = cg.scratch_buffer(dtype, [n])
    width = n if isinstance(n, int) else 64
    chunk = max(4, CHUNK_BYTES // (max(width, 1) * dtype.itemsize))
    own = _own_buffer(cg, r)
    if own is not None:                           # r written here, not again in its own loop
        cg.written_ahead.add(r)
    rs = own if own is not None else cg.scratch_buffer(dtype, [chunk])

    def r_ptr(start: Any) -> Any:
        """Where the chunk's r goes: r's own buffer at the chunk's rows, or the temporary."""
        return b.gep(rs.ptr, [start], inbounds=True) if own is not None else rs.ptr
    part = cg.scratch_buffer(dtype, [n])          # g's sums over one chunk
    zero = cg.const(dtype, 0.0)
    kk, nn, ldv = cg.dim(k), cg.dim(n), cg.dim(ld)

    def x_at(i: Any, j: Any) -> Any:
        return b.load(b.gep(buf.ptr, [b.add(b.mul(i, ldv), j)], inbounds=True))

    def at(v: Any, axis: int, i: Any) -> list[Any]:
        return [i if a == axis else cg.index(0) for a in range(v.type.ndim)]

    with cg.loop(nn) as j:
        b.store(zero, b.gep(g.ptr, [j], inbounds=True))
    count = b.udiv(b.add(kk, cg.index(chunk - 1)), cg.index(chunk))
    with cg.loop(count, vectorize=False, unroll=False) as ch:
        start = b.mul(ch, cg.index(chunk))
        rest = b.sub(kk, start)
        rows = b.select(b.icmp_signed("<", rest, cg.index(chunk)), rest, cg.index(chunk))
        with cg.loop(rows, vectorize=False, unroll=False) as t:      # 1. z = X @ w
            i = b.add(start, t)

            def body(acc: list[Any], jj: list[Any]) -> list[Any]:
                wj = cg.read(w, at(w, w_axis, jj[0]))
                return [cg.reassoc(cg.add(dtype, acc[0], cg.mul(dtype, x_at(i, jj[0]), wj)))]
            (dot,) = cg.reduce([n], (0,), [], [zero], body)
            b.store(dot, b.gep(z_out.ptr, [i], inbounds=True))
        with cg.computing(chain):                                      # 2. r = f(z, ...)
            with cg.loop(rows) as t:
                b.store(cg.read(r, at(r, r_axis, b.add(start, t))), b.gep(r_ptr(start), [t], inbounds=True))
        with cg.loop(nn) as j:                                          # 3. g += X_chunk^T r
            b.store(zero, b.gep(part.ptr, [j], inbounds=True))

        with cg.loop(rows, vectorize=False, unroll=False) as t:
            i = b.add(start, t)
            ri = b.load(b.gep(r_ptr(start), [t], inbounds=True))
            with cg.loop(nn) as j:
                ptr = b.gep(part.ptr, [j], inbounds=True)
                b.store(cg.add(dtype, b.load(ptr), cg.mul(dtype, x_at(i, j), ri)), ptr)
        with cg.loop(nn) as j:
            ptr = b.gep(g.ptr, [j], inbounds=True)
            b.store(cg.add(dtype, b.load(ptr), b.load(b.gep(part.ptr, [j], inbounds=True))), ptr)
    return g


def _own_buffer(cg: Any, r: Any) -> Any:
    """r's buffer when r is materialized in a loop nest of its own, in a buffer no other value
    uses (the temporaries of values that live at other times share buffers: writing r
    ahead of its turn must not overwrite one of them); else None."""
    buf = cg.buffers.get(r)
    sched = cg.sched
    if buf is None or r.op is None or not sched.is_materialized(r) or sched.anchor.get(r) is not None:
        return None
    if any(other is buf and v is not r for v, other in cg.buffers.items()):
        return None
    return buf


def finish(cg: Any, op: Any, out: Any) -> bool:
    """At the second product of a fused pair: copy its result computed by the first."""
    g = cg.fused_products.pop(op, None)       # (a block lowered twice fuses twice)
    if g is None:
        return False
    for v in op.operands:
        cg.written_ahead.discard(v)
    with cg.loop(cg.dim(g.shape[0])) as j:
        b = cg.b
        b.store(b.load(b.gep(g.ptr, [j], inbounds=True)), b.gep(out.ptr, [j], inbounds=True))
    return True
