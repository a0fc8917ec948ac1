"""dot_general: the one contraction primitive behind dot, matmul, @, einsum,
inner, outer, tensordot and trace-free contractions.

``dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))``
as in XLA; the result's axes are the batch axes, then lhs's free axes, then
rhs's free axes.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from compiler.ir.primitive import define
from compiler.ir.types import TensorType
from compiler.primitives import ad, gemm, glm, gram, ops
from compiler.primitives.base import check
from compiler.primitives.batching import move_axis, reemit

Types = tuple[TensorType, ...]


def free_axes(ndim: int, contract: tuple[int, ...], batch: tuple[int, ...]) -> list[int]:
    return [i for i in range(ndim) if i not in contract and i not in batch]


def _dot_rule(in_types: Types, params: dict[str, Any]) -> Types:
    lhs, rhs = in_types
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    check(lhs.dtype == rhs.dtype, f"dot_general: operand dtypes differ ({lhs.dtype}, {rhs.dtype})")
    check(len(lc) == len(rc) and len(lb) == len(rb), "dot_general: dimension numbers mismatch")
    for a, b in list(zip(lc, rc)) + list(zip(lb, rb)):
        check(lhs.shape[a] == rhs.shape[b],
              f"dot_general: size mismatch {lhs.shape[a]} vs {rhs.shape[b]} for {lhs} and {rhs}")
    shape = tuple(lhs.shape[a] for a in lb) + tuple(lhs.shape[a] for a in free_axes(lhs.ndim, lc, lb)) \
        + tuple(rhs.shape[a] for a in free_axes(rhs.ndim, rc, rb))
    return (TensorType(lhs.dtype, shape),)


def _ref_dot(lhs: np.ndarray, rhs: np.ndarray, dimension_numbers: Any) -> np.ndarray:
    (lc, rc), (lb, rb) = dimension_numbers
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    lsub = [next(letters) for _ in range(lhs.ndim)]
    rsub = [next(letters) for _ in range(rhs.ndim)]
    for a, b in list(zip(lc, rc)) + list(zip(lb, rb)):
        rsub[b] = lsub[a]
    out = [lsub[a] for a in lb] + [lsub[a] for a in free_axes(lhs.ndim, lc, lb)] \
        + [rsub[a] for a in free_axes(rhs.ndim, rc, rb)]
    spec = f"{''.join(lsub)},{''.join(rsub)}->{''.join(out)}"
    return np.einsum(spec, lhs, rhs, dtype=lhs.dtype)


def _lower_dot(cg: Any, op: Any, outs: list[Any]) -> None:
    """out[b, i, j] = sum_k lhs[b, i, k] * rhs[b, k, j], with j innermost so that
    the update loop streams through contiguous rows of rhs and out."""
    lhs, rhs = op.operands
    (lc, rc), (lb, rb) = op.params["dimension_numbers"]
    lfree, rfree = free_axes(lhs.ndim, lc, lb), free_axes(rhs.ndim, rc, rb)
    batch_shape = tuple(lhs.shape[a] for a in lb)
    i_shape = tuple(lhs.shape[a] for a in lfree)
    j_shape = tuple(rhs.shape[a] for a in rfree)
    k_shape = tuple(lhs.shape[a] for a in lc)
    dtype = op.results[0].dtype

    def place(ndim: int, groups: list[tuple[list[int], list[Any]]]) -> list[Any]:
        idx: list[Any] = [None] * ndim
        for axes, values in groups:
            for a, v in zip(axes, values):
                idx[a] = v
        return idx

    laxes, raxes = (lb, lfree, lc), (rb, rfree, rc)

    def loops() -> None:
        lhs_across = _contiguous_along(cg, lhs, lfree, lc)
        if all(d == 1 for d in j_shape):
            if lhs_across:
                _lower_dot_axpy(cg, op, outs[0], place, laxes, raxes, batch_shape, i_shape,
                                j_shape, k_shape)
            else:
                _lower_dot_rows(cg, op, outs[0], place, laxes, raxes, batch_shape + i_shape, k_shape)
            return
        rhs_transposed = _contiguous_along(cg, rhs, rc, rfree)
        few = _few(i_shape)
        if few and rhs_transposed and _contiguous_along(cg, lhs, lc, lfree):
            # W @ X.T with few rows of W: a dot product per output, each row of X read once
            _lower_dot_rows(cg, op, outs[0], place, laxes, raxes, batch_shape + i_shape, k_shape,
                            j_shape)
            return
        packed = _packed_rhs(cg, op, raxes) if rhs_transposed else None
        _lower_dot_loops(cg, op, outs[0], place, laxes, raxes, batch_shape, i_shape, j_shape,
                         k_shape, packed, k_outer=few and packed is None)
    # X.T @ X of a narrow X: one blocked vector pass over X (gram.py)
    if gram.lower(cg, op, outs[0]):
        return
    # X @ w and a later X.T @ f(X @ w): one pass over X (glm.py)
    if glm.finish(cg, op, outs[0]) or glm.lower(cg, op, outs[0]):
        return
    # large products through BLAS gemm, with the loop nest as the fallback (gemm.py)
    if not gemm.lower(cg, op, outs[0], (lb, lfree, lc), (rb, rfree, rc), loops):
        loops()


def _few(i_shape: tuple) -> bool:
    """Has lhs at most gemm.FEW_ROWS rows (its free axes, static)? Such a product reads rhs
    once, the few rows of the result in L1 (vmap over a batch of weight vectors: `W @ X.T`,
    `R @ X`)."""
    size = 1
    for d in i_shape:
        if not isinstance(d, int):
            return False
        size *= d
    return size <= gemm.FEW_ROWS


def _contiguous_along(cg: Any, v: Any, along: list[int] | tuple, across: list[int] | tuple) -> bool:
    """Whether `v` reads a buffer whose unit-stride axis is among `along` while none of the
    axes `across` has unit stride (a transposed operand: `X.T` read along X's rows)."""
    view = gemm.strided_view(cg, v)
    if view is None:
        return False
    strides, shape = view[1], v.type.shape
    unit = [a for a in range(len(shape)) if strides[a] == 1 and shape[a] != 1]
    return bool(unit) and all(a in along for a in unit) and not any(a in across for a in unit)


def _packed_rhs(cg: Any, op: Any, raxes: tuple) -> tuple[Any, tuple[int, ...]]:
    """rhs copied into a [batch, contract, free] temporary, so that the i-k-j loop nest reads
    rows of it with unit stride (rhs = `B.T` in `A @ B.T`); (buffer, rhs axis of each of its
    axes)."""
    rhs = op.operands[1]
    rb, rfree, rc = raxes
    order = tuple(rb) + tuple(rc) + tuple(rfree)
    buf = cg.scratch_buffer(rhs.type.dtype, [rhs.type.shape[a] for a in order])
    with cg.loop_nest(buf.shape) as idx:
        at: list[Any] = [None] * rhs.type.ndim
        for a, i in zip(order, idx):
            at[a] = i
        cg.store(buf, list(idx), cg.read(rhs, at))
    return buf, order


def _lower_dot_loops(cg: Any, op: Any, out: Any, place: Any, laxes: tuple, raxes: tuple,
                     batch_shape: tuple, i_shape: tuple, j_shape: tuple, k_shape: tuple,
                     packed: tuple[Any, tuple[int, ...]] | None = None, k_outer: bool = False) -> None:
    """The i-k-j loop nest: out[b, i, :] accumulated from rows of rhs (of its packed copy
    when rhs is transposed). `k_outer` (few rows i): the k-i-j nest, each row of rhs read
    once for all rows of out (the same sums, in the same order)."""
    lhs, rhs = op.operands
    (lb, lfree, lc), (rb, rfree, rc) = laxes, raxes
    dtype = op.results[0].dtype
    outs = [out]

    def rhs_at(bi: list[Any], jj: list[Any], kk: list[Any]) -> Any:
        at = place(rhs.ndim, [(list(rb), bi), (rfree, jj), (list(rc), kk)])
        if packed is None:
            return cg.read(rhs, at)
        buf, order = packed
        return cg.load(buf, [at[a] for a in order])
    if k_outer:
        with cg.loop_nest(batch_shape) as bi:
            with cg.loop_nest(i_shape + j_shape) as ij:
                cg.store(out, bi + ij, cg.const(dtype, 0))
            with cg.loop_nest(k_shape) as kk:
                with cg.loop_nest(i_shape) as ii:
                    a = cg.read(lhs, place(lhs.ndim, [(list(lb), bi), (lfree, ii), (list(lc), kk)]))
                    with cg.loop_nest(j_shape) as jj:
                        prod = cg.mul(dtype, a, rhs_at(bi, jj, kk))
                        cg.store(out, bi + ii + jj, cg.add(dtype, cg.load(out, bi + ii + jj), prod))
        return
    with cg.loop_nest(batch_shape + i_shape) as outer:
        bi, ii = outer[:len(batch_shape)], outer[len(batch_shape):]
        with cg.loop_nest(j_shape) as jj:
            cg.store(outs[0], bi + ii + jj, cg.const(dtype, 0))
        with cg.loop_nest(k_shape) as kk:
            a = cg.read(lhs, place(lhs.ndim, [(list(lb), bi), (lfree, ii), (list(lc), kk)]))
            with cg.loop_nest(j_shape) as jj:
                prod = cg.mul(dtype, a, rhs_at(bi, jj, kk))
                cg.store(outs[0], bi + ii + jj, cg.add(dtype, cg.load(outs[0], bi + ii + jj), prod))


def _lower_dot_axpy(cg: Any, op: Any, out: Any, place: Any, laxes: tuple, raxes: tuple,
                    batch_shape: tuple, i_shape: tuple, j_shape: tuple, k_shape: tuple) -> None:
    """A matrix-vector product with a transposed matrix (`X.T @ r`): for each k, the output
    plus lhs's row k times r[k], so that lhs is read once along its rows (unit stride)
    instead of column by column."""
    lhs, rhs = op.operands
    (lb, lfree, lc), (rb, rfree, rc) = laxes, raxes
    dtype = op.results[0].dtype
    jj = [cg.index(0)] * len(j_shape)
    with cg.loop_nest(batch_shape) as bi:
        with cg.loop_nest(i_shape) as ii:
            cg.store(out, bi + ii + jj, cg.const(dtype, 0))
        with cg.loop_nest(k_shape) as kk:
            r = cg.read(rhs, place(rhs.ndim, [(list(rb), bi), (rfree, jj), (list(rc), kk)]))
            with cg.loop_nest(i_shape) as ii:
                a = cg.read(lhs, place(lhs.ndim, [(list(lb), bi), (lfree, ii), (list(lc), kk)]))
                at = bi + ii + jj
                cg.store(out, at, cg.add(dtype, cg.load(out, at), cg.mul(dtype, a, r)))


def _vmap_dot(b: Any, op: Any, args: list[Any], bdims: list[Any], size: Any) -> tuple:
    """Both batched: a new batch dimension. One batched: its batch axis is a free axis."""
    (lc, rc), (lb, rb) = op.params["dimension_numbers"]
    lhs, rhs = args
    ld, rd = bdims
    shift = lambda axes: tuple(a + 1 for a in axes)  # noqa: E731
    if ld is not None and rd is not None:
        lhs, rhs = move_axis(b, lhs, ld, 0), move_axis(b, rhs, rd, 0)
        dn = ((shift(lc), shift(rc)), ((0,) + shift(lb), (0,) + shift(rb)))
        return reemit(b, op, [lhs, rhs], dimension_numbers=dn), [0]
    if ld is not None:
        lhs = move_axis(b, lhs, ld, 0)
        dn = ((shift(lc), rc), (shift(lb), rb))
        return reemit(b, op, [lhs, rhs], dimension_numbers=dn), [len(lb)]
    rhs = move_axis(b, rhs, rd, 0)
    dn = ((lc, shift(rc)), (lb, shift(rb)))
    n_lhs_free = len(free_axes(lhs.type.ndim, lc, lb))
    return reemit(b, op, [lhs, rhs], dimension_numbers=dn), [len(lb) + n_lhs_free]


def _lower_dot_rows(cg: Any, op: Any, out: Any, place: Any, laxes: tuple, raxes: tuple,
                    outer_shape: tuple, k_shape: tuple, j_shape: tuple = ()) -> None:
    """Matrix-vector products (no free rhs axis): a dot product per output element, the
    contraction innermost so that it runs along contiguous rows and vectorizes. With
    `j_shape` (rhs's free axes, both operands contiguous along the contraction: `W @ X.T`),
    the loops over them are outside those over lhs's rows: each row of rhs is read once, the
    few rows of lhs stay in L1."""
    lhs, rhs = op.operands
    (lb, lfree, lc), (rb, rfree, rc) = laxes, raxes
    dtype, nb = op.results[0].dtype, len(lb)

    def dot(bi: list[Any], ii: list[Any], jj: list[Any]) -> None:
        """out[bi, ii, jj]: the dot product of lhs's row (bi, ii) and rhs's (bi, jj)."""
        def pair(acc: list[Any], kk: list[Any]) -> list[Any]:
            a = cg.read(lhs, place(lhs.ndim, [(list(lb), bi), (lfree, ii), (list(lc), kk)]))
            r = cg.read(rhs, place(rhs.ndim, [(list(rb), bi), (rfree, jj), (list(rc), kk)]))
            total = cg.add(dtype, acc[0], cg.mul(dtype, a, r))
            return [cg.reassoc(total) if dtype.kind == "f" else total]
        (acc,) = cg.reduce(k_shape, tuple(range(len(k_shape))), [], [cg.const(dtype, 0)], pair)
        cg.store(out, list(bi) + list(ii) + list(jj), acc)

    if j_shape:
        with cg.loop_nest(outer_shape[:nb]) as bi:
            with cg.loop_nest(j_shape, vectorize=False) as jj:
                with cg.loop_nest(outer_shape[nb:], vectorize=False) as ii:
                    dot(bi, ii, jj)
        return
    with cg.loop_nest(outer_shape) as outer:
        dot(outer[:nb], outer[nb:], [cg.index(0)] * len(rfree))


dot_general = define(
    ops.dot_general_p,
    shape_rule=_dot_rule,
    numpy_ref=_ref_dot,
    lower=_lower_dot,
    streams_operands=False,
    vmap_rule=_vmap_dot,
    doc="generalized tensor contraction with batch dimensions",
)


# ---- differentiation rules -------------------------------------------------------------


def _jvp_dot(b: Any, op: Any, primals: list[Any], tangents: list[Any]) -> list[Any]:
    (lhs, rhs), (tl, tr) = primals, tangents
    out = None
    if tl is not None:
        out = ad.add_any(b, out, ops.dot_general(b, tl, rhs, op.params["dimension_numbers"]))
    if tr is not None:
        out = ad.add_any(b, out, ops.dot_general(b, lhs, tr, op.params["dimension_numbers"]))
    return [out]


def _ct_operand(b: Any, ct: Any, other: Any, mine_ndim: int, mine: tuple, theirs: tuple,
                other_first: bool) -> Any:
    """Cotangent of one dot_general operand: contract ct with the other operand.

    `mine` = (contract, batch) axes of the operand whose cotangent we want,
    `theirs` = those of the other operand. ct axes are (batch, lhs free, rhs free)."""
    (mc, mb), (tc, tb) = mine, theirs
    nb = len(mb)
    my_free = free_axes(mine_ndim, mc, mb)
    their_free = free_axes(other.type.ndim, tc, tb)
    start = nb + (len(their_free) if other_first else len(my_free))
    ct_their_free = tuple(range(start, start + len(their_free))) if not other_first \
        else tuple(range(nb, nb + len(their_free)))
    dn = ((ct_their_free, tuple(their_free)), (tuple(range(nb)), tuple(tb)))
    result = ops.dot_general(b, ct, ops.conj_if_complex(b, other), dn)   # adjoint: conj (docs/complex.md)
    # result axes: batch, my free (in order), then the other's contracting axes (ascending)
    remaining = sorted(tc)
    pos = []
    for a in range(mine_ndim):
        if a in mb:
            pos.append(list(mb).index(a))
        elif a in my_free:
            pos.append(nb + my_free.index(a))
        else:
            pos.append(nb + len(my_free) + remaining.index(tc[list(mc).index(a)]))
    if pos == list(range(mine_ndim)):
        return result
    return ops.transpose(b, result, pos)


def _vjp_dot(b: Any, op: Any, primals: list[Any], outs: list[Any], cts: list[Any]) -> list[Any]:
    (lhs, rhs), (ct,) = primals, cts
    if ct is None or not ad.differentiable(lhs):
        return [None, None]
    (lc, rc), (lb, rb) = op.params["dimension_numbers"]
    ct_lhs = _ct_operand(b, ct, rhs, lhs.type.ndim, (lc, lb), (rc, rb), other_first=False)
    ct_rhs = _ct_operand(b, ct, lhs, rhs.type.ndim, (rc, rb), (lc, lb), other_first=True)
    return [ct_lhs, ct_rhs]


define(dot_general, jvp_rule=_jvp_dot, vjp_rule=_vjp_dot)
