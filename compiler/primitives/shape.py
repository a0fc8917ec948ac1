"""Creation and shape primitives: constant, iota, broadcast_in_dim, reshape,
transpose, slice, rev, pad, diagonal, concatenate.

All but ``concatenate`` are INDEX primitives: their lowering maps an output
index to an operand index, so they cost nothing once fused.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from compiler.errors import UnsupportedError
from compiler.ir import dims
from compiler.ir.dims import Dim
from compiler.ir.primitive import Primitive, define
from compiler.ir.types import I64, TensorType, canonical_dtype
from compiler.primitives import ad, ops
from compiler.primitives.base import check
from compiler.primitives.batching import batched_at, reemit, shift_axes, to_front_rule

Types = tuple[TensorType, ...]


# ---- constant and iota -----------------------------------------------------------

def _constant_rule(in_types: Types, params: dict[str, Any]) -> Types:
    value = params["value"]
    return (TensorType(canonical_dtype(value.dtype), tuple(value.shape)),)


def _lower_constant(cg: Any, op: Any, idx: list[Any]) -> Any:
    return cg.read_constant(op.params["value"], idx)


constant = define(
    ops.constant_p,
    shape_rule=_constant_rule,
    numpy_ref=lambda value: value.copy(),
    lower=_lower_constant,
    differentiable=False,
    doc="an array known at compile time",
)


def _iota_rule(in_types: Types, params: dict[str, Any]) -> Types:
    check(0 <= params["dimension"] < len(params["shape"]), "iota: dimension out of range")
    return (TensorType(params["dtype"], tuple(params["shape"])),)


def _ref_iota(dtype: np.dtype, shape: tuple[int, ...], dimension: int) -> np.ndarray:
    ramp = np.arange(shape[dimension], dtype=dtype)
    view = ramp.reshape([-1 if i == dimension else 1 for i in range(len(shape))])
    return np.broadcast_to(view, shape).copy()


def _lower_iota(cg: Any, op: Any, idx: list[Any]) -> Any:
    return cg.cast(idx[op.params["dimension"]], I64, op.params["dtype"])


iota = define(
    ops.iota_p,
    shape_rule=_iota_rule,
    numpy_ref=_ref_iota,
    lower=_lower_iota,
    differentiable=False,
    doc="index along `dimension`, broadcast to `shape`",
)

def _size_rule(in_types: Types, params: dict[str, Any]) -> Types:
    return (TensorType(params["dtype"], ()),)


size_of = define(
    ops.size_of_p,
    shape_rule=_size_rule,
    numpy_ref=lambda dim, dtype: np.array(dim, dtype),
    lower=lambda cg, op, idx: cg.cast(cg.dim(op.params["dim"]), np.dtype(np.int64), op.params["dtype"]),
    differentiable=False,
    doc="the value of a (possibly symbolic) dimension, as a scalar",
)

# ---- broadcast, reshape, transpose -------------------------------------------------


def _broadcast_rule(in_types: Types, params: dict[str, Any]) -> Types:
    (x,), shape, bdims = in_types, tuple(params["shape"]), tuple(params["broadcast_dimensions"])
    check(len(bdims) == x.ndim, f"broadcast_in_dim: {x} needs {x.ndim} broadcast dimensions")
    check(list(bdims) == sorted(set(bdims)), "broadcast_in_dim: dimensions must increase")
    for d, od in zip(x.shape, bdims):
        check(0 <= od < len(shape), "broadcast_in_dim: dimension out of range")
        check(d == 1 or d == shape[od], f"broadcast_in_dim: cannot broadcast {x} to {shape}")
    return (x.with_shape(shape),)


def _ref_broadcast(x: np.ndarray, shape: tuple[int, ...], broadcast_dimensions: tuple[int, ...]) -> np.ndarray:
    expanded = [1] * len(shape)
    for d, od in zip(x.shape, broadcast_dimensions):
        expanded[od] = d
    return np.broadcast_to(x.reshape(expanded), shape).copy()


def _lower_broadcast(cg: Any, op: Any, idx: list[Any]) -> Any:
    (x,) = op.operands
    zero = cg.index(0)
    src = [zero if d == 1 and op.params["shape"][od] != 1 else idx[od]
           for d, od in zip(x.shape, op.params["broadcast_dimensions"])]
    return cg.read(x, src)


def _broadcast_expands(op: Any) -> bool:
    shape, bdims = op.params["shape"], op.params["broadcast_dimensions"]
    stretched = any(d == 1 and shape[od] != 1 for d, od in zip(op.operands[0].shape, bdims))
    return stretched or any(shape[i] != 1 for i in range(len(shape)) if i not in bdims)


def _vmap_broadcast(b: Any, op: Any, args: list[Any], bdims: list[Any], size: Any) -> tuple:
    x = batched_at(b, args[0], bdims[0], 0, size)
    shape = (size,) + tuple(op.params["shape"])
    bd = (0,) + tuple(d + 1 for d in op.params["broadcast_dimensions"])
    return reemit(b, op, [x], shape=shape, broadcast_dimensions=bd), [0]


broadcast_in_dim = define(
    ops.broadcast_in_dim_p,
    shape_rule=_broadcast_rule,
    numpy_ref=_ref_broadcast,
    lower=_lower_broadcast,
    expands=_broadcast_expands,
    vmap_rule=_vmap_broadcast,
    doc="operand dim i becomes output dim broadcast_dimensions[i]; size-1 dims stretch",
)


def _reshape_rule(in_types: Types, params: dict[str, Any]) -> Types:
    (x,), new = in_types, tuple(params["new_sizes"])
    check(dims.product(x.shape) == dims.product(new), f"reshape: cannot reshape {x} to {list(map(str, new))}")
    return (x.with_shape(new),)


def _lower_reshape(cg: Any, op: Any, idx: list[Any]) -> Any:
    (x,) = op.operands
    axes = _unit_axes_only(x.shape, op.results[0].shape)
    if axes is not None:          # the row x[i] of a loop body: indices pass straight through
        return cg.read(x, [cg.index(0) if a is None else idx[a] for a in axes])
    groups = _axis_groups(tuple(x.shape), tuple(op.results[0].shape))
    if groups is not None:        # static groups: a split axis needs no division
        src: list[Any] = []
        shape = op.results[0].shape
        for olds, news in groups:
            flat = cg.linearize([idx[a] for a in news], [shape[a] for a in news])
            src.extend([flat] if len(olds) == 1 else cg.delinearize(flat, [x.shape[a] for a in olds]))
        return cg.read(x, src)
    flat = cg.linearize(idx, op.results[0].shape)
    return cg.read(x, cg.delinearize(flat, x.shape))


def _axis_groups(old: tuple, new: tuple) -> list[tuple[list[int], list[int]]] | None:
    """The axes of a static reshape in groups of equal size (old axes, new axes), each
    splitting one old axis or merging into one new axis (reading through a split needs no
    division); None when a group does neither or a size is symbolic."""
    if not all(isinstance(d, int) and d > 0 for d in tuple(old) + tuple(new)):
        return None
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(old) or j < len(new):
        olds: list[int] = []
        news: list[int] = []
        po = pn = 1
        while not (olds and news and po == pn):
            if i < len(old) and (po < pn or not olds):
                olds.append(i)
                po *= old[i]
                i += 1
            elif j < len(new) and (pn < po or not news):
                news.append(j)
                pn *= new[j]
                j += 1
            else:
                return None
        while i < len(old) and old[i] == 1 and (j >= len(new) or new[j] != 1):
            olds.append(i)
            i += 1
        while j < len(new) and new[j] == 1 and (i >= len(old) or old[i] != 1):
            news.append(j)
            j += 1
        if len(olds) > 1 and len(news) > 1:
            return None
        groups.append((olds, news))
    return groups


def _unit_axes_only(old: Any, new: Any) -> list[int | None] | None:
    """When a reshape only inserts or drops axes of size 1 ((1, k) -> (k,) and back): for
    each axis of `old`, the axis of `new` that indexes it (None: a size-1 axis, index 0).
    Reading through it then needs no division by a run-time size, which keeps the
    consumer's loop vectorizable."""
    kept_old = [a for a, d in enumerate(old) if not (isinstance(d, int) and d == 1)]
    kept_new = [a for a, d in enumerate(new) if not (isinstance(d, int) and d == 1)]
    if len(kept_old) != len(kept_new) or any(old[a] != new[b] for a, b in zip(kept_old, kept_new)):
        return None
    where: list[int | None] = [None] * len(old)
    for a, b in zip(kept_old, kept_new):
        where[a] = b
    return where


reshape = define(
    ops.reshape_p,
    shape_rule=_reshape_rule,
    numpy_ref=lambda x, new_sizes: x.reshape(new_sizes),
    lower=_lower_reshape,
    vmap_rule=to_front_rule(
        lambda b, op, a, size: reemit(b, op, a, new_sizes=(size,) + tuple(op.params["new_sizes"]))),
    doc="row-major reshape to new_sizes",
)


def _transpose_rule(in_types: Types, params: dict[str, Any]) -> Types:
    (x,), perm = in_types, tuple(params["permutation"])
    check(sorted(perm) == list(range(x.ndim)), f"transpose: bad permutation {perm} for {x}")
    return (x.with_shape(tuple(x.shape[p] for p in perm)),)


def _lower_transpose(cg: Any, op: Any, idx: list[Any]) -> Any:
    perm = op.params["permutation"]
    src = [None] * len(perm)
    for out_axis, in_axis in enumerate(perm):
        src[in_axis] = idx[out_axis]
    return cg.read(op.operands[0], src)


transpose = define(
    ops.transpose_p,
    shape_rule=_transpose_rule,
    numpy_ref=lambda x, permutation: np.transpose(x, permutation).copy(),
    lower=_lower_transpose,
    vmap_rule=to_front_rule(
        lambda b, op, a, size: reemit(b, op, a, permutation=(0,) + tuple(p + 1 for p in op.params["permutation"]))),
    doc="output axis i is operand axis permutation[i]",
)

# ---- slice, rev, pad, diagonal -----------------------------------------------------


def slice_size(start: Dim, limit: Dim, stride: int) -> Dim:
    return dims.floordiv(dims.add(dims.add(limit, dims.mul(start, -1)), stride - 1), stride)


def _slice_rule(in_types: Types, params: dict[str, Any]) -> Types:
    (x,) = in_types
    starts, limits, strides = params["start_indices"], params["limit_indices"], params["strides"]
    check(len(starts) == len(limits) == len(strides) == x.ndim, f"slice: rank mismatch for {x}")
    check(all(isinstance(s, int) and s > 0 for s in strides), "slice: strides must be positive")
    return (x.with_shape(tuple(slice_size(a, b, s) for a, b, s in zip(starts, limits, strides))),)


def _ref_slice(x: np.ndarray, start_indices: tuple[int, ...], limit_indices: tuple[int, ...],
               strides: tuple[int, ...]) -> np.ndarray:
    return x[tuple(slice(a, b, s) for a, b, s in zip(start_indices, limit_indices, strides))].copy()


def _lower_slice(cg: Any, op: Any, idx: list[Any]) -> Any:
    p = op.params
    src = [cg.b.add(cg.dim(a), cg.b.mul(i, cg.index(s)))
           for i, a, s in zip(idx, p["start_indices"], p["strides"])]
    return cg.read(op.operands[0], src)


def _vmap_slice(b: Any, op: Any, args: list[Any], bdims: list[Any], size: Any) -> tuple:
    d, p = bdims[0], op.params

    def insert(values: tuple, v: Any) -> tuple:
        return tuple(values[:d]) + (v,) + tuple(values[d:])
    return reemit(b, op, args, start_indices=insert(p["start_indices"], 0),
                  limit_indices=insert(p["limit_indices"], size), strides=insert(p["strides"], 1)), [d]


slice_ = define(
    ops.slice_p,
    shape_rule=_slice_rule,
    numpy_ref=_ref_slice,
    lower=_lower_slice,
    vmap_rule=_vmap_slice,
    doc="x[start:limit:stride] per axis; 0 <= start <= limit <= size, stride > 0",
)


def _rev_rule(in_types: Types, params: dict[str, Any]) -> Types:
    check(all(0 <= d < in_types[0].ndim for d in params["dimensions"]), "rev: axis out of range")
    return (in_types[0],)


def _lower_rev(cg: Any, op: Any, idx: list[Any]) -> Any:
    x = op.operands[0]
    src = [cg.b.sub(cg.b.sub(cg.dim(x.shape[a]), i), cg.index(1)) if a in op.params["dimensions"] else i
           for a, i in enumerate(idx)]
    return cg.read(x, src)


rev = define(
    ops.rev_p,
    shape_rule=_rev_rule,
    numpy_ref=lambda x, dimensions: np.flip(x, dimensions).copy(),
    lower=_lower_rev,
    vmap_rule=lambda b, op, a, d, size: (
        reemit(b, op, a, dimensions=shift_axes(op.params["dimensions"], d[0])), d),
    doc="reverse the order of elements along `dimensions`",
)


def _pad_rule(in_types: Types, params: dict[str, Any]) -> Types:
    x, value = in_types
    check(value.shape == () and value.dtype == x.dtype, "pad: padding value must be a scalar of x's dtype")
    lo, hi = params["low"], params["high"]
    check(len(lo) == len(hi) == x.ndim, "pad: rank mismatch")
    check(all(isinstance(v, int) and v >= 0 for v in (*lo, *hi)), "pad: amounts must be non-negative ints")
    return (x.with_shape(tuple(dims.add(dims.add(d, a), b) for d, a, b in zip(x.shape, lo, hi))),)


def _ref_pad(x: np.ndarray, value: np.ndarray, low: tuple[int, ...], high: tuple[int, ...]) -> np.ndarray:
    return np.pad(x, list(zip(low, high)), constant_values=value)


def _lower_pad(cg: Any, op: Any, idx: list[Any]) -> Any:
    x, value = op.operands
    b = cg.b
    inside, src = None, []
    for i, lo, d in zip(idx, op.params["low"], x.shape):
        j = b.sub(i, cg.index(lo))
        ok = b.and_(b.icmp_signed(">=", j, cg.index(0)), b.icmp_signed("<", j, cg.dim(d)))
        inside = ok if inside is None else b.and_(inside, ok)
        src.append(b.select(ok, j, cg.index(0)))    # never read out of bounds
    if inside is None:
        return cg.read(x, [])
    return b.select(inside, cg.read(x, src), cg.read(value, []))


def _vmap_pad(b: Any, op: Any, args: list[Any], bdims: list[Any], size: Any) -> tuple:
    x, value = args
    low, high = (0,) + tuple(op.params["low"]), (0,) + tuple(op.params["high"])
    x = batched_at(b, x, bdims[0], 0, size)
    if bdims[1] is None:
        return reemit(b, op, [x, value], low=low, high=high), [0]
    # a batched padding value: pad with anything, then select the border from the value
    padded = reemit(b, op, [x, ops.scalar(b, 0, value.dtype)], low=low, high=high)[0]
    true = ops.full(b, True, x.type.with_dtype(np.dtype(bool)))
    inside = ops.pad(b, true, ops.scalar(b, False, bool), low, high)
    border = ops.broadcast_in_dim(b, value, padded.type.shape, (0,))
    return [ops.select(b, inside, padded, border)], [0]


pad = define(
    ops.pad_p,
    shape_rule=_pad_rule,
    numpy_ref=_ref_pad,
    lower=_lower_pad,
    vmap_rule=_vmap_pad,
    doc="surround x with low/high elements equal to the scalar operand",
)


def _diagonal_rule(in_types: Types, params: dict[str, Any]) -> Types:
    (x,), a1, a2 = in_types, params["axis1"], params["axis2"]
    check(a1 != a2 and 0 <= a1 < x.ndim and 0 <= a2 < x.ndim, "diagonal: bad axes")
    rest = tuple(d for i, d in enumerate(x.shape) if i not in (a1, a2))
    return (x.with_shape(rest + (dims.minimum(x.shape[a1], x.shape[a2]),)),)


def _lower_diagonal(cg: Any, op: Any, idx: list[Any]) -> Any:
    x, a1, a2 = op.operands[0], op.params["axis1"], op.params["axis2"]
    rest = iter(idx[:-1])
    src = [idx[-1] if i in (a1, a2) else next(rest) for i in range(x.ndim)]
    return cg.read(x, src)


diagonal = define(
    ops.diagonal_p,
    shape_rule=_diagonal_rule,
    numpy_ref=lambda x, axis1, axis2: np.diagonal(x, 0, axis1, axis2).copy(),
    lower=_lower_diagonal,
    vmap_rule=to_front_rule(
        lambda b, op, a, size: reemit(b, op, a, axis1=op.params["axis1"] + 1, axis2=op.params["axis2"] + 1)),
    doc="np.diagonal(x, 0, axis1, axis2): diagonal axis last",
)

# ---- concatenate -------------------------------------------------------------------


def _concat_rule(in_types: Types, params: dict[str, Any]) -> Types:
    axis, first = params["dimension"], in_types[0]
    check(0 <= axis < first.ndim, "concatenate: axis out of range")
    total: Dim = 0
    for t in in_types:
        check(t.dtype == first.dtype, "concatenate: operands must have one dtype")
        check(t.ndim == first.ndim and all(a == b for i, (a, b) in enumerate(zip(t.shape, first.shape))
                                           if i != axis),
              f"concatenate: shapes {', '.join(map(str, in_types))} differ off axis {axis}")
        total = dims.add(total, t.shape[axis])
    return (first.with_shape(first.shape[:axis] + (total,) + first.shape[axis + 1:]),)


#: at most this many elements along a last axis are joined by one loop nest (below)
INTERLEAVE_MAX = 16


def _lower_concat(cg: Any, op: Any, outs: list[Any]) -> None:
    """A loop nest per operand; along a short static last axis (``np.stack([x, y, z], -1)``,
    coordinates), one loop nest over the other axes storing each output row's elements in
    order: consecutive addresses, which LLVM vectorizes as interleaved stores (per operand,
    every store would be strided: scatters or scalar code)."""
    axis, offset = op.params["dimension"], cg.index(0)
    widths = [x.type.shape[axis] for x in op.operands]
    if axis == op.results[0].type.ndim - 1 and all(isinstance(w, int) for w in widths) \
            and sum(widths) <= INTERLEAVE_MAX:
        with cg.loop_nest(op.results[0].type.shape[:axis]) as idx:
            k = 0
            for x, w in zip(op.operands, widths):
                for j in range(w):
                    cg.store(outs[0], [*idx, cg.index(k)], cg.read(x, [*idx, cg.index(j)]))
                    k += 1
        return
    for x in op.operands:
        with cg.loop_nest(x.shape) as idx:
            dst = list(idx)
            dst[axis] = cg.b.add(idx[axis], offset)
            cg.store(outs[0], dst, cg.read(x, idx))
        offset = cg.b.add(offset, cg.dim(x.shape[axis]))


concatenate = define(
    ops.concatenate_p,
    shape_rule=_concat_rule,
    numpy_ref=lambda *xs, dimension: np.concatenate(xs, dimension),
    lower=_lower_concat,
    vmap_rule=to_front_rule(
        lambda b, op, a, size: reemit(b, op, a, dimension=op.params["dimension"] + 1)),
    doc="join operands along `dimension`",
)


# ---- differentiation rules (attached to the entries above through _attach_ad) -------------


def _sum_to_operand(b: Any, op: Any, x: Any, ct: Any) -> Any:
    """Transpose of broadcast_in_dim: sum the stretched and new axes back."""
    bdims = op.params["broadcast_dimensions"]
    shape = op.params["shape"]
    new_axes = tuple(i for i in range(len(shape)) if i not in bdims)
    stretched = tuple(od for d, od in zip(x.shape, bdims) if d == 1 and shape[od] != 1)
    axes = tuple(sorted(new_axes + stretched))
    return ops.reshape(b, ops.reduce_sum(b, ct, axes), x.shape)


def _slice_transpose(b: Any, op: Any, primals: list[Any], ct: Any) -> list[Any]:
    (x,) = primals
    p = op.params
    return [ops.update_slice(b, ops.zeros_like(b, x), ct, p["start_indices"], p["limit_indices"],
                             p["strides"])]


def _pad_transpose(b: Any, op: Any, primals: list[Any], ct: Any) -> list[Any]:
    x, _ = primals
    lo = op.params["low"]
    limits = tuple(dims.add(lo_, d) for lo_, d in zip(lo, x.shape))
    ct_x = ops.slice_(b, ct, lo, limits)
    total = ops.reduce_sum(b, ct, tuple(range(ct.type.ndim)))
    inner = ops.reduce_sum(b, ct_x, tuple(range(x.type.ndim)))
    return [ct_x, ops.sub(b, total, inner)]


def _diagonal_transpose(b: Any, op: Any, primals: list[Any], ct: Any) -> list[Any]:
    (x,) = primals
    a1, a2 = op.params["axis1"], op.params["axis2"]
    k = ct.type.shape[-1]
    axis = a1 if x.shape[a1] == k else a2 if x.shape[a2] == k else None
    if axis is None:
        raise UnsupportedError("the derivative of the diagonal of a non-square matrix with symbolic "
                               "sizes is not supported", op.loc, "give the matrix static sizes")
    target = [i for i in range(x.type.ndim) if i not in (a1, a2)] + [axis]
    order = sorted(range(len(target)), key=lambda i: target[i])   # broadcast dims must increase
    ct = ops.transpose(b, ct, order)
    spread = ops.broadcast_in_dim(b, ct, x.shape, sorted(target))
    on_diag = ops.eq(b, ops.iota(b, I64, x.shape, a1), ops.iota(b, I64, x.shape, a2))
    return [ops.select(b, on_diag, spread, ops.zeros_like(b, spread))]


def _concat_transpose(b: Any, op: Any, primals: list[Any], ct: Any) -> list[Any]:
    axis, out = op.params["dimension"], []
    start: Dim = 0
    for x in primals:
        stop = dims.add(start, x.shape[axis])
        starts = tuple(start if i == axis else 0 for i in range(x.type.ndim))
        limits = tuple(stop if i == axis else d for i, d in enumerate(x.shape))
        out.append(ops.slice_(b, ct, starts, limits))
        start = stop
    return out


def _inverse_perm(perm: tuple[int, ...]) -> tuple[int, ...]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


_TRANSPOSES: list[tuple[Primitive, Any]] = [
    (broadcast_in_dim, lambda b, op, p, ct: [_sum_to_operand(b, op, p[0], ct)]),
    (reshape, lambda b, op, p, ct: [ops.reshape(b, ct, p[0].shape)]),
    (transpose, lambda b, op, p, ct: [ops.transpose(b, ct, _inverse_perm(op.params["permutation"]))]),
    (slice_, _slice_transpose),
    (rev, lambda b, op, p, ct: [ad.same_op(b, op, [ct])]),
    (pad, _pad_transpose),
    (diagonal, _diagonal_transpose),
    (concatenate, _concat_transpose),
]
for _prim, _transpose in _TRANSPOSES:
    define(_prim, **ad.linear(_transpose))
