"""Two matrix-vector products with one matrix and an elementwise function between them, in
one pass over the matrix: ``z = X @ w; r = f(z, ...); g = X.T @ r`` (or ``r @ X``), also for
a batch of weight vectors at once (vmap over them: ``z = W @ X.T``, ``g = R @ X``; or written
batched: ``Z = X @ W.T``, ``G = (f(Z) - y[:, None]).T @ X``).

That is the gradient of every generalised linear model (linear, logistic, Poisson
regression: ``X.T @ (sigmoid(X @ w) - y)``), written by hand or made by grad. Lowered one
product at a time, X is read twice from memory (4096 x 128 float64 is 4 MB: past L2). Here
the first product's lowering also computes the second: X is taken CHUNK_BYTES of rows at a
time (the chunk stays in L1), and for each chunk

1. z of its rows, a dot product per row and weight vector (written to z's buffer, which
   other readers of z use as before);
2. r of its rows, the elementwise expression of z evaluated on the spot (vectorized across
   the chunk's rows: exp, log, ... at full width);
3. g plus r_i times row i of X, for each of its rows, read again from L1: register-blocked
   vector code (`Update`: the sums of a few column vectors of g for every weight vector of
   the group held in registers while the chunk's rows stream by) when n is static, else a
   loop that loads and stores the chunk's sums per product.

The weight vectors are taken in groups of at most MAX_WEIGHTS (`groups`: 33 is 5 groups, 3
of 7 and 2 of 6), packed once into unit-stride rows. When z is [B, k] (vmap) and X is not
large, each group makes its own pass over X (z's and r's rows of one group are written one
after the other; X is read again from L2 or L3); otherwise the groups are taken inside the
chunk loop (when z is [k, B], X the lhs of the first product, step 2 runs along z's rows),
if the weight vectors and g fit in L2; else the products stay apart (`order`). The logistic
gradient, X 4096 x 128 float64, one thread, Zen 5: 8 weight vectors 0.18 ms, 32 0.74, 256
6.6 (NumPy's two dgemm and its elementwise pass 0.71, 1.65, 13.7 ms).

g lives in a temporary until the second product's turn comes, where it is copied to its
result (`Codegen.fused_products`). The dot products are summed as `linalg._lower_dot_rows`
sums them; g is summed per chunk, and the chunks' sums added to it (blocked summation: the
rounding error grows with the chunk's rows plus the number of chunks, not with k; the
gradient of linear regression, 4096 x 128 float64, against long double: a third of the error
of NumPy's gemv).

It applies when r depends on z only through elementwise ops and reshapes (which keep the
flat order: r[v, i] is computed from z[v, i] only), or is a transpose of such a value, and on
nothing else than the function's arguments and values computed on the spot from them
(constants, broadcasts, grad's ``1 / n``: such a value is computed again here even where it
has a buffer, which may be written after the first product). Anything else (a reduction of
z, an X updated between the two products) keeps the two products apart.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from llvmlite import ir as ll

from compiler.ir import dims
from compiler.ir.primitive import ELEMENTWISE, INDEX
from compiler.ir.types import F32, F64
from compiler.primitives import gemm, gram, ops

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


#: the weight vectors of a group (vmap over a batch of them): each row of X is multiplied by
#: every one while it is in L1, and step 3 keeps MAX_WEIGHTS x 3 vectors of sums in registers
#: (AVX-512); more weight vectors take several groups
MAX_WEIGHTS = 8


def _static(shape: Any) -> int | None:
    size = 1
    for d in shape:
        if not isinstance(d, int):
            return None
        size *= d
    return size


@dataclass
class First:
    """``z = X @ W`` read as rows of X times weight vectors: X's buffer, row stride and base
    value; W and its contracted axis; B, the number of weight vectors (W's other axes, static);
    and whether z is [k, B] (X the lhs) or [B, k]."""
    buf: Any
    ld: Any
    base: Any
    w: Any
    w_axis: int
    weights: int
    rows_first: bool
    rows: dims.Dim                # k
    cols: dims.Dim                # n


def _rows_products(cg: Any, op: Any) -> list[First]:
    """The readings of `op` as ``z = X @ W`` (either operand may be X: ``W @ X.T`` too)."""
    if op.prim is not ops.dot_general_p or op.results[0].dtype not in (F32, F64):
        return []
    (lc, rc), (lb, rb) = op.params["dimension_numbers"]
    if lb or rb or len(lc) != 1:
        return []
    found = []
    for x_side in (0, 1):
        xv, wv = op.operands[x_side], op.operands[1 - x_side]
        x_axis, w_axis = (lc[0], rc[0]) if x_side == 0 else (rc[0], lc[0])
        m = _matrix(cg, xv)
        weights = _static([d for a, d in enumerate(wv.type.shape) if a != w_axis])
        if m is None or m[2] != 1 - x_axis or weights is None or not 1 <= weights:
            continue
        found.append(First(m[0], m[1], _base(xv), wv, w_axis, weights, x_side == 0,
                           xv.type.shape[m[2]], xv.type.shape[1 - m[2]]))
    return found


def _transposed_product(cg: Any, op: Any, first: First) -> tuple[Any, int, bool] | None:
    """(r, r's contracted axis, whether g is [B, n]) when `op` is ``X.T @ r`` or ``r @ X``
    with the first product's X contracted over its rows with r, whose elements lie in z's
    order (r[b, i] at z[b, i]'s flat place), or with a transpose of such an r (then r is the
    value transposed)."""
    if op.prim is not ops.dot_general_p:
        return None
    (lc, rc), (lb, rb) = op.params["dimension_numbers"]
    if lb or rb or len(lc) != 1:
        return None
    for x_side in (0, 1):
        xv, r = op.operands[x_side], op.operands[1 - x_side]
        x_axis, r_axis = (lc[0], rc[0]) if x_side == 0 else (rc[0], lc[0])
        m = _matrix(cg, xv)
        if m is None or m[0] is not first.buf or m[1] != first.ld or m[2] != x_axis \
                or _base(xv) is not first.base:
            continue
        if r.op is not None and r.op.prim is ops.transpose_p:      # (P - y[:, None]).T @ X
            r_axis = r.op.params["permutation"][r_axis]
            r = r.op.operands[0]
        before, after = _static(r.type.shape[:r_axis]), _static(r.type.shape[r_axis + 1:])
        if (before, after) == ((1, first.weights) if first.rows_first else (first.weights, 1)):
            return r, r_axis, x_side == 1
    return None


def _chain(cg: Any, r: Any, z: Any) -> list[Any] | None:
    """The values between z and r that `read(r)` computes (all of them, on the spot), or
    None when r is not an element-by-element function of z (elementwise ops and reshapes,
    which keep the flat order) and of the arguments."""
    size = dims.product(list(z.type.shape))
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
            if op.prim.kind not in (ELEMENTWISE, INDEX) or op.prim.lower is None or op.regions:
                return None
            stack.append((v, True))
            stack.extend((a, False) for a in op.operands if a not in depends)
            continue
        dep = any(depends[a] for a in op.operands)
        depends[v] = dep
        if dep:
            if dims.product(list(v.type.shape)) != size:
                return None
            if op.prim.kind == INDEX and op.prim is not ops.reshape_p and not _adds_unit_axes(op):
                return None
        # a value of the arguments alone that has a buffer is computed again here too: it may
        # be written after the first product (grad's 1 / n and its broadcasts)
        order.append(v)
    return order if depends.get(r) else None


def _adds_unit_axes(op: Any) -> bool:
    """A broadcast that only inserts axes of size 1 (jacrev's one-row Jacobian under vmap):
    a reshape, the flat order kept."""
    if op.prim is not ops.broadcast_in_dim_p:
        return False
    dims_ = list(op.params["broadcast_dimensions"])
    src = op.operands[0].type.shape
    return dims_ == sorted(dims_) and all(op.params["shape"][d] == s for d, s in zip(dims_, src)) \
        and all(d == 1 for a, d in enumerate(op.params["shape"]) if a not in dims_)


def lower(cg: Any, op: Any, out: Any) -> bool:
    """At ``z = X @ W``: when a later product of the block is ``X.T @ f(z)``, emit both in
    one pass (the second's result kept in `cg.fused_products`); False: nothing emitted."""
    sched = cg.sched
    if sched is None:
        return False
    z = op.results[0]
    for first in _rows_products(cg, op):
        if order(first, op.results[0].dtype) is None:
            continue
        for later in sched.block.ops[sched.block.ops.index(op) + 1:]:
            found = _transposed_product(cg, later, first)
            if found is None:
                continue
            chain = _chain(cg, found[0], z)
            if chain is None:
                continue
            cg.fused_products[later] = _emit(cg, op, out, first, found, chain)
            dropped = _dropped_transpose(cg, later, found[0])
            if dropped is not None:     # read by the second product only, which reads r here
                cg.written_ahead.add(dropped)
            return True
    return False


#: more than MAX_WEIGHTS weight vectors: a pass over X per group when X takes at most
#: OUTER_X_BYTES (it is read again from L2 or L3), else the groups inside the loop over X's
#: chunks when the weight vectors and the sums take at most INNER_BYTES (they are read again
#: per chunk), else two products (BLAS). One thread, Zen 5, ``X.T @ (1 - tanh(X @ W)**2)``:
#: 4096 x 512 by 64 weight vectors 18.0 ms a pass per group, 9.6 groups inside, 11.6 apart;
#: 4096 x 128 by 256: 7.0, 8.2, 10.6; 1024 x 512 by 512: 18.4 a pass per group, 22.1 inside,
#: 17.9 apart. When z is [k, B] (X the lhs), a pass per group reads z's rows in pieces: the
#: groups are inside (4096 x 128 by 256: 7.0 against 8.0) or the products apart.
OUTER_X_BYTES = 4 << 20
INNER_BYTES = 2 << 20


def order(first: First, dtype: np.dtype) -> str | None:
    """How the groups of weight vectors meet the chunks of X: "inner" (the groups inside the
    loop over the chunks), "outer" (a pass over X per group) or None (do not fuse)."""
    if first.weights <= MAX_WEIGHTS:
        return "inner"                          # one group: the two orders are one
    x_bytes = _static([first.rows, first.cols])
    working = _static([2, first.weights, first.cols])
    if not first.rows_first and x_bytes is not None and x_bytes * dtype.itemsize <= OUTER_X_BYTES:
        return "outer"
    if working is not None and working * dtype.itemsize <= INNER_BYTES:
        return "inner"
    return None


def groups(weights: int) -> list[tuple[int, int]]:
    """The passes over X for `weights` weight vectors: (number of groups, weight vectors per
    group), at most MAX_WEIGHTS each and as even as they come (9: one of 5 and one of 4)."""
    count = -(-weights // MAX_WEIGHTS)
    size, extra = divmod(weights, count)
    return [(c, s) for c, s in ((extra, size + 1), (count - extra, size)) if c]


def _dropped_transpose(cg: Any, later: Any, r: Any) -> Any:
    """The operand of `later` that transposes r when nothing else reads it and it has a loop
    of its own (computing it there would be wasted: the fused pass reads r), else None."""
    sched = cg.sched
    for t in later.operands:
        if t.op is None or t.op.prim is not ops.transpose_p or t.op.operands[0] is not r:
            continue
        if t not in cg.buffers or not sched.is_materialized(t) or sched.anchor.get(t) is not None \
                or t in sched.block.results:
            return None
        if any(t in other.operands for other in sched.block.ops if other is not later):
            return None
        return t
    return None


def _emit(cg: Any, op: Any, z_out: Any, first: First, second: tuple[Any, int, bool],
          chain: list[Any]) -> Any:
    dtype = op.results[0].dtype
    b = cg.b
    r, r_axis, g_by_weight = second
    nw = first.weights
    k, n = first.rows, first.cols
    w = first.w
    w_free = [a for a in range(w.type.ndim) if a != first.w_axis]
    w_shape = [w.type.shape[a] for a in w_free]
    r_free = [a for a in range(r.type.ndim) if a != r_axis]
    r_shape = [r.type.shape[a] for a in r_free]
    passes = groups(nw)
    gw = max(size for _, size in passes)          # weight vectors of the largest group
    g = cg.scratch_buffer(dtype, [nw, n])
    width = n if isinstance(n, int) else 64
    chunk = max(4, CHUNK_BYTES // (max(width, 1) * dtype.itemsize))
    wp = cg.scratch_buffer(dtype, [nw, n])        # the weight vectors, unit-stride rows
    own = _own_buffer(cg, r)
    if own is not None:                           # r written here, not again in its own loop
        cg.written_ahead.add(r)
    rs = own if own is not None else cg.scratch_buffer(dtype, [nw, chunk])
    vec = Update.make(cg, dtype, n, gw)
    part = cg.scratch_buffer(dtype, [gw, n]) if vec is None else None   # a group's sums of g over a chunk
    zero = cg.const(dtype, 0.0)
    kk, nn, ldv = cg.dim(k), cg.dim(n), cg.dim(first.ld)

    def x_at(i: Any, j: Any) -> Any:
        return b.load(b.gep(first.buf.ptr, [b.add(b.mul(i, ldv), j)], inbounds=True))

    def flat_z(v: Any, i: Any) -> Any:
        """The flat place of z[v, i] (and of r[v, i])."""
        if first.rows_first:
            return b.add(b.mul(i, cg.index(nw)), v)
        return b.add(b.mul(v, kk), i)

    def r_slot(v: Any, start: Any, t: Any) -> Any:
        """Where r[v, start + t] goes: r's own buffer, or the chunk's temporary."""
        if own is not None:
            return b.gep(own.ptr, [flat_z(v, b.add(start, t))], inbounds=True)
        if first.rows_first:
            return b.gep(rs.ptr, [b.add(b.mul(t, cg.index(nw)), v)], inbounds=True)
        return b.gep(rs.ptr, [b.add(b.mul(v, cg.index(chunk)), t)], inbounds=True)

    def index(v: Any, axis: int, free: list[int], shape: list[Any], which: Any, i: Any) -> list[Any]:
        """v's index with `i` on `axis` and weight vector `which` (an int or a run-time
        index) on the others."""
        at = [cg.index(0)] * v.type.ndim
        at[axis] = i
        rest = which
        axes = [(a, d) for a, d in zip(free, shape) if d != 1]
        for pos, (a, d) in reversed(list(enumerate(axes))):
            if isinstance(rest, int):
                at[a] = cg.index(rest % d)
                rest //= d
            elif pos == 0:                  # which < nw: the outermost axis takes the rest
                at[a] = rest
            else:
                at[a] = b.urem(rest, cg.index(d))
                rest = b.udiv(rest, cg.index(d))
        return at

    def weights(body: Any) -> None:
        """body(v) for each weight vector: unrolled for one group, else a loop."""
        if nw <= MAX_WEIGHTS:
            for v in range(nw):
                body(cg.index(v), v)
        else:
            with cg.loop(cg.index(nw)) as v:
                body(v, v)

    def pack(v: Any, which: Any) -> None:
        with cg.loop(nn) as j:
            b.store(cg.read(w, index(w, first.w_axis, w_free, w_shape, which, j)),
                    b.gep(wp.ptr, [b.add(b.mul(v, nn), j)], inbounds=True))
    with cg.loop(b.mul(cg.index(nw), nn)) as j:
        b.store(zero, b.gep(g.ptr, [j], inbounds=True))
    weights(pack)

    def groups_of(body: Any) -> None:
        """body(base, size) for each group of weight vectors (`base` a run-time index)."""
        done = 0
        for count, size in passes:
            if count == 1:
                body(cg.index(done), size)
            else:
                with cg.loop(cg.index(count), vectorize=False, unroll=False) as p:
                    body(b.add(cg.index(done), b.mul(p, cg.index(size))), size)
            done += count * size

    def chunks(body: Any) -> None:
        """body(start, rows) for each chunk of X's rows."""
        count = b.udiv(b.add(kk, cg.index(chunk - 1)), cg.index(chunk))
        with cg.loop(count, vectorize=False, unroll=False) as ch:
            start = b.mul(ch, cg.index(chunk))
            rest = b.sub(kk, start)
            body(start, b.select(b.icmp_signed("<", rest, cg.index(chunk)), rest, cg.index(chunk)))

    def dots(start: Any, rows: Any, base: Any, size: int) -> None:         # 1. z = X @ W
        with cg.loop(rows, vectorize=False, unroll=False) as t:
            i = b.add(start, t)
            wrow = [b.gep(wp.ptr, [b.mul(b.add(base, cg.index(v)), nn)], inbounds=True)
                    for v in range(size)]

            def body(acc: list[Any], jj: list[Any]) -> list[Any]:
                x = x_at(i, jj[0])
                return [cg.reassoc(cg.add(dtype, acc[v], cg.mul(
                    dtype, x, b.load(b.gep(wrow[v], [jj[0]], inbounds=True)))))
                    for v in range(size)]
            sums = cg.reduce([n], (0,), [], [zero] * size, body)
            for v, dot in enumerate(sums):
                b.store(dot, b.gep(z_out.ptr, [flat_z(b.add(base, cg.index(v)), i)], inbounds=True))

    def residuals(start: Any, rows: Any, base: Any, size: int | None) -> None:  # 2. r = f(z, ...)
        """r of the chunk's rows, for weight vectors base .. base + size - 1 (None: all)."""
        def each(body: Any) -> None:
            if size is None:
                weights(body)
            else:
                for v in range(size):
                    which = b.add(base, cg.index(v))
                    body(which, which)
        with cg.computing(chain):
            if first.rows_first:        # z[i, :] together
                with cg.loop(rows) as t:
                    each(lambda v, which: b.store(
                        cg.read(r, index(r, r_axis, r_free, r_shape, which, b.add(start, t))),
                        r_slot(v, start, t)))
            else:
                def along(v: Any, which: Any) -> None:
                    with cg.loop(rows) as t:
                        b.store(cg.read(r, index(r, r_axis, r_free, r_shape, which, b.add(start, t))),
                                r_slot(v, start, t))
                each(along)

    def update(start: Any, rows: Any, base: Any, size: int) -> None:      # 3. g += X_chunk^T r
        gbase = b.mul(base, nn)
        rv = [b.add(base, cg.index(v)) for v in range(size)]
        if vec is not None:
            vec.update(cg, first, g, gbase, start, rows,
                       [lambda t, v=v: b.load(r_slot(v, start, t)) for v in rv])
            return
        assert part is not None
        with cg.loop(b.mul(cg.index(size), nn)) as j:
            b.store(zero, b.gep(part.ptr, [j], inbounds=True))
        with cg.loop(rows, vectorize=False, unroll=False) as t:
            i = b.add(start, t)
            rr = [b.load(r_slot(v, start, t)) for v in rv]
            with cg.loop(nn) as j:
                x = x_at(i, j)
                for v, rval in enumerate(rr):
                    ptr = b.gep(part.ptr, [b.add(b.mul(cg.index(v), nn), j)], inbounds=True)
                    b.store(cg.add(dtype, b.load(ptr), cg.mul(dtype, x, rval)), ptr)
        with cg.loop(b.mul(cg.index(size), nn)) as j:
            ptr = b.gep(g.ptr, [b.add(gbase, j)], inbounds=True)
            b.store(cg.add(dtype, b.load(ptr), b.load(b.gep(part.ptr, [j], inbounds=True))), ptr)

    if order(first, dtype) == "inner":
        # z[i, :] holds every weight vector's value: r of a chunk's rows in one loop over them
        def inner(start: Any, rows: Any) -> None:
            groups_of(lambda base, size: dots(start, rows, base, size))
            residuals(start, rows, cg.index(0), None)
            groups_of(lambda base, size: update(start, rows, base, size))
        chunks(inner)
    else:
        # z[v, :] of a group together: a pass over X per group (X streams from L2 or L3; the
        # group's z, r and sums are written and read one after the other)
        def outer(base: Any, size: int) -> None:
            def body(start: Any, rows: Any) -> None:
                dots(start, rows, base, size)
                residuals(start, rows, base, size)
                update(start, rows, base, size)
            chunks(body)
        groups_of(outer)
    return g, g_by_weight, nw, r


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
    """At the second product of a fused pair: copy its result computed by the first (kept
    [weight vector, column]) into its layout."""
    fused = cg.fused_products.pop(op, None)       # (a block lowered twice fuses twice)
    if fused is None:
        return False
    g, by_weight, nw, r = fused
    for v in (*op.operands, r):
        cg.written_ahead.discard(v)
    b = cg.b
    n = cg.dim(g.shape[1])
    with cg.loop(cg.index(nw), vectorize=False) as v:
        with cg.loop(n) as j:
            src = b.gep(g.ptr, [b.add(b.mul(v, n), j)], inbounds=True)
            at = b.add(b.mul(v, n), j) if by_weight else b.add(b.mul(j, cg.index(nw)), v)
            b.store(b.load(src), b.gep(out.ptr, [at], inbounds=True))
    return True


#: accumulator registers of step 3 (of 32 vector registers with AVX-512, 16 else)
ACCUMULATORS = gram.ACCUMULATORS
SCALAR = gram.SCALAR


class Update:
    """Step 3 as register-blocked vector code: ``g[group] += r_chunk^T X_chunk`` with the
    sums of a block of g (the group's weight vectors times a few vectors of columns) held in
    registers while the chunk's rows stream by: per row, one load per column vector and one
    broadcast of r per weight vector, then a fused multiply-add per accumulator. (Summed
    through a buffer, each product costs a load and a store of the sum: store-bound.) The
    blocks of `per` whole vectors are one loop; the rest (fewer whole vectors and the part of
    a vector past the last whole one) a block of its own."""

    def __init__(self, cg: Any, dtype: np.dtype, n: int, lanes: int, per: int) -> None:
        self.dtype, self.n, self.lanes, self.per = dtype, n, lanes, per
        self.vc = gram.VectorCode(cg, dtype, lanes)
        self.slots = [cg.alloca_builder.alloca(self.vc.vt) for _ in range(ACCUMULATORS[cg.vector_bits])]

    @staticmethod
    def make(cg: Any, dtype: np.dtype, n: Any, weights: int) -> "Update | None":
        """The blocked update for groups of at most `weights` weight vectors, None when it
        does not apply (a symbolic or short row, an unknown vector width)."""
        if dtype not in SCALAR or cg.vector_bits not in ACCUMULATORS or not isinstance(n, int):
            return None
        lanes = cg.vector_bits // (8 * dtype.itemsize)
        if n < lanes:
            return None
        per = max(1, ACCUMULATORS[cg.vector_bits] // weights)    # column vectors of a block
        return Update(cg, dtype, n, lanes, per)

    def update(self, cg: Any, first: First, g: Any, gbase: Any, start: Any, rows: Any,
               rs: list[Any]) -> None:
        """g[gbase / n + v, :] += sum over the chunk's rows t of rs[v](t) * X[start + t, :]."""
        b, lanes, per = cg.b, self.lanes, self.per
        whole = self.n // lanes
        loops = whole // per
        if loops:
            with cg.loop(cg.index(loops), vectorize=False, unroll=False) as blk:
                self._block(cg, first, g, gbase, start, rows, rs, b.mul(blk, cg.index(per * lanes)),
                            per * lanes)
        done = loops * per * lanes
        if done < self.n:
            self._block(cg, first, g, gbase, start, rows, rs, cg.index(done), self.n - done)

    def _block(self, cg: Any, first: First, g: Any, gbase: Any, start: Any, rows: Any,
               rs: list[Any], col: Any, cols: int) -> None:
        """The sums of columns col .. col + cols - 1 (whole vectors, and part of one past them
        only when this is the last block)."""
        b, vc, lanes, n = cg.b, self.vc, self.lanes, self.n
        width = -(-cols // lanes)
        ldv = cg.dim(first.ld)
        slots = [self.slots[v * width:(v + 1) * width] for v in range(len(rs))]
        for line in slots:
            for slot in line:
                b.store(vc.zero, slot)
        with cg.loop(rows, vectorize=False, unroll=False) as t:
            row = b.gep(first.buf.ptr, [b.add(b.mul(b.add(start, t), ldv), col)], inbounds=True)
            xs = [vc.load(row, c * lanes, min(lanes, cols - c * lanes)) for c in range(width)]
            for r, line in zip(rs, slots):
                bc = vc.splat(r(t))
                for x, slot in zip(xs, line):
                    b.store(vc.fma(bc, x, b.load(slot)), slot)
        for v, line in enumerate(slots):
            gv = b.gep(g.ptr, [b.add(b.add(gbase, cg.index(v * n)), col)], inbounds=True)
            for c, slot in enumerate(line):
                vc.add_into(gv, c * lanes, min(lanes, cols - c * lanes), b.load(slot))
