"""Indexing primitives: gathers (take, dynamic_slice) and the pure update ops
that functional updates (``y = x.copy(); y[1:3] = v``, ``y[i] += v``) lower to.

Indices computed at run time wrap once if negative and are then clamped into
range (as in JAX): a kernel never reads or writes out of bounds. Indices known
at compile time are checked by the frontend, which raises IndexError as NumPy
would.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from compiler.ir import dims
from compiler.ir.primitive import define
from compiler.ir.types import BOOL, I64, TensorType, is_int
from compiler.primitives import ad, ops
from compiler.primitives.base import check
from compiler.primitives.batching import (batched_at, move_axis, reemit, rule_by_decomposition)
from compiler.primitives.shape import slice_size

Types = tuple[TensorType, ...]


def _wrap_clamp(cg: Any, i: Any, size: Any) -> Any:
    b, zero = cg.b, cg.index(0)
    i = b.select(b.icmp_signed("<", i, zero), b.add(i, size), i)
    i = b.select(b.icmp_signed("<", i, zero), zero, i)
    last = b.sub(size, cg.index(1))
    return b.select(b.icmp_signed(">", i, last), last, i)


def _np_wrap_clamp(i: np.ndarray, size: int) -> np.ndarray:
    i = np.where(i < 0, i + size, i)
    return np.clip(i, 0, max(size - 1, 0))


# ---- take -----------------------------------------------------------------------

def _take_rule(in_types: Types, params: dict[str, Any]) -> Types:
    x, ind = in_types
    axis = params["axis"]
    check(0 <= axis < x.ndim, f"take: axis {axis} out of range for {x}")
    check(is_int(ind.dtype), f"take: indices must be integers, got {ind.dtype}")
    return (x.with_shape(x.shape[:axis] + ind.shape + x.shape[axis + 1:]),)


def _ref_take(x: np.ndarray, ind: np.ndarray, axis: int) -> np.ndarray:
    return np.take(x, _np_wrap_clamp(ind, x.shape[axis]), axis=axis)


def _lower_take(cg: Any, op: Any, idx: list[Any]) -> Any:
    x, ind = op.operands
    axis, k = op.params["axis"], ind.ndim
    i = cg.cast(cg.read(ind, idx[axis:axis + k]), ind.dtype, np.dtype(np.int64))
    i = _wrap_clamp(cg, i, cg.dim(x.shape[axis]))
    return cg.read(x, idx[:axis] + [i] + idx[axis + k:])


def _take_expands(op: Any) -> bool:
    x, ind = op.operands
    n, k = x.shape[op.params["axis"]], ind.type.size
    return not (isinstance(n, int) and isinstance(k, int) and k <= n)


take = define(
    ops.take_p,
    shape_rule=_take_rule,
    numpy_ref=_ref_take,
    lower=_lower_take,
    expands=_take_expands,
    doc="np.take(x, indices, axis) (negative indices wrap, then clamp)",
)

# ---- dynamic_slice ------------------------------------------------------------------


def _dyn_slice_rule(in_types: Types, params: dict[str, Any]) -> Types:
    x, *starts = in_types
    check(len(starts) == x.ndim == len(params["sizes"]), "dynamic_slice: one start per axis")
    check(all(s.shape == () and is_int(s.dtype) for s in starts), "dynamic_slice: starts must be int scalars")
    return (x.with_shape(tuple(params["sizes"])),)


def _clamped_starts(x: np.ndarray, starts: tuple[Any, ...], sizes: tuple[int, ...]) -> list[int]:
    return [int(min(max(int(s), 0), n - k)) for s, n, k in zip(starts, x.shape, sizes)]


def _ref_dyn_slice(x: np.ndarray, *starts: np.ndarray, sizes: tuple[int, ...]) -> np.ndarray:
    lo = _clamped_starts(x, starts, sizes)
    return x[tuple(slice(a, a + k) for a, k in zip(lo, sizes))].copy()


def _start(cg: Any, s: Any, n: Any, k: Any) -> Any:
    b = cg.b
    s = cg.cast(cg.read(s, []), s.dtype, np.dtype(np.int64))
    hi = b.sub(n, k)
    s = b.select(b.icmp_signed(">", s, hi), hi, s)
    return b.select(b.icmp_signed("<", s, cg.index(0)), cg.index(0), s)


def _lower_dyn_slice(cg: Any, op: Any, idx: list[Any]) -> Any:
    x, *starts = op.operands
    src = [cg.b.add(i, _start(cg, s, cg.dim(n), cg.dim(k)))
           for i, s, n, k in zip(idx, starts, x.shape, op.params["sizes"])]
    return cg.read(x, src)


dynamic_slice = define(
    ops.dynamic_slice_p,
    shape_rule=_dyn_slice_rule,
    numpy_ref=_ref_dyn_slice,
    lower=_lower_dyn_slice,
    doc="x[s0:s0+k0, ...] with run-time starts clamped so the window fits",
)

# ---- updates --------------------------------------------------------------------------


def _copy_into(cg: Any, out: Any, x: Any) -> None:
    """The unchanged part of an update: nothing to do when the update is done in place
    (x lives in the output buffer: a loop's carried array, backend/carries.py)."""
    if cg.buffers.get(x) is out:
        return
    with cg.loop_nest(x.shape) as idx:
        cg.store(out, idx, cg.read(x, idx))


def _dyn_update_rule(in_types: Types, params: dict[str, Any]) -> Types:
    x, upd, *starts = in_types
    check(upd.dtype == x.dtype and upd.ndim == x.ndim and len(starts) == x.ndim,
          f"dynamic_update_slice: update {upd} does not fit {x}")
    return (x,)


def _ref_dyn_update(x: np.ndarray, upd: np.ndarray, *starts: np.ndarray) -> np.ndarray:
    out = x.copy()
    lo = _clamped_starts(x, starts, upd.shape)
    out[tuple(slice(a, a + k) for a, k in zip(lo, upd.shape))] = upd
    return out


def _lower_dyn_update(cg: Any, op: Any, outs: list[Any]) -> None:
    x, upd, *starts = op.operands
    _copy_into(cg, outs[0], x)
    lo = [_start(cg, s, cg.dim(n), cg.dim(k)) for s, n, k in zip(starts, x.shape, upd.shape)]
    with cg.loop_nest(upd.shape) as idx:
        cg.store(outs[0], [cg.b.add(i, s) for i, s in zip(idx, lo)], cg.read(upd, idx))


dynamic_update_slice = define(
    ops.dynamic_update_slice_p,
    shape_rule=_dyn_update_rule,
    numpy_ref=_ref_dyn_update,
    lower=_lower_dyn_update,
    doc="a copy of x with a window starting at run-time indices replaced by update",
)


def _update_slice_rule(in_types: Types, params: dict[str, Any]) -> Types:
    x, upd = in_types
    shape = tuple(slice_size(a, b, s) for a, b, s in
                  zip(params["start_indices"], params["limit_indices"], params["strides"]))
    check(upd.dtype == x.dtype and upd.shape == shape,
          f"update_slice: update {upd} does not match the slice shape {list(map(str, shape))} of {x}")
    return (x,)


def _ref_update_slice(x: np.ndarray, upd: np.ndarray, start_indices: Any, limit_indices: Any,
                      strides: Any) -> np.ndarray:
    out = x.copy()
    out[tuple(slice(a, b, s) for a, b, s in zip(start_indices, limit_indices, strides))] = upd
    return out


def _lower_update_slice(cg: Any, op: Any, outs: list[Any]) -> None:
    x, upd = op.operands
    _copy_into(cg, outs[0], x)
    p = op.params
    with cg.loop_nest(upd.shape) as idx:
        dst = [cg.b.add(cg.dim(a), cg.b.mul(i, cg.index(s)))
               for i, a, s in zip(idx, p["start_indices"], p["strides"])]
        cg.store(outs[0], dst, cg.read(upd, idx))


update_slice = define(
    ops.update_slice_p,
    shape_rule=_update_slice_rule,
    numpy_ref=_ref_update_slice,
    lower=_lower_update_slice,
    doc="a copy of x with x[start:limit:stride] replaced by update",
)


def _scatter_rule(in_types: Types, params: dict[str, Any]) -> Types:
    x, ind, upd = in_types
    axis = params["axis"]
    check(params["mode"] in ("set", "add"), "scatter: mode must be 'set' or 'add'")
    check(is_int(ind.dtype), "scatter: indices must be integers")
    expect = x.shape[:axis] + ind.shape + x.shape[axis + 1:]
    check(upd.dtype == x.dtype and upd.shape == expect,
          f"scatter: updates {upd} must have shape {list(map(str, expect))}")
    return (x,)


def _ref_scatter(x: np.ndarray, ind: np.ndarray, upd: np.ndarray, axis: int, mode: str) -> np.ndarray:
    out = x.copy()
    ind = _np_wrap_clamp(ind, x.shape[axis])
    moved_out = np.moveaxis(out, axis, 0)
    # the index dims flattened into one (its size spelled out: -1 is ambiguous for a size-0 update)
    moved_upd = np.moveaxis(upd.reshape(x.shape[:axis] + (ind.size,) + x.shape[axis + 1:]), axis, 0)
    flat = ind.reshape(-1)
    if mode == "add":
        np.add.at(moved_out, flat, moved_upd)
    else:
        for k, i in enumerate(flat):      # in order: the last write wins, as in NumPy
            moved_out[i] = moved_upd[k]
    return out


def _lower_scatter(cg: Any, op: Any, outs: list[Any]) -> None:
    x, ind, upd = op.operands
    axis, k = op.params["axis"], ind.ndim
    _copy_into(cg, outs[0], x)
    with cg.loop_nest(upd.shape) as idx:
        i = cg.cast(cg.read(ind, idx[axis:axis + k]), ind.dtype, np.dtype(np.int64))
        dst = idx[:axis] + [_wrap_clamp(cg, i, cg.dim(x.shape[axis]))] + idx[axis + k:]
        value = cg.read(upd, idx)
        if op.params["mode"] == "add":
            value = cg.add(x.dtype, cg.load(outs[0], dst), value) if x.dtype != BOOL \
                else cg.b.or_(cg.load(outs[0], dst), value)
        cg.store(outs[0], dst, value)


scatter = define(
    ops.scatter_p,
    shape_rule=_scatter_rule,
    numpy_ref=_ref_scatter,
    lower=_lower_scatter,
    doc="a copy of x with x[..., indices, ...] set to (or incremented by) updates",
)


# ---- batching rules ------------------------------------------------------------------

def _ir_wrap_clamp(b: Any, i: Any, n: Any) -> Any:
    """wrap-once-then-clamp of int64 indices `i` into [0, n), as the lowering does."""
    t = i.type
    size = ops.broadcast_in_dim(b, ops.size_of(b, n, I64), t.shape, ())
    zero, one = ops.full(b, 0, t), ops.full(b, 1, t)
    i = ops.select(b, ops.lt(b, i, zero), ops.add(b, i, size), i)
    return ops.minimum(b, ops.maximum(b, i, zero), ops.sub(b, size, one))


def _as_i64(b: Any, v: Any) -> Any:
    return v if v.dtype == I64 else ops.convert(b, v, I64)


def _flatten_batch(b: Any, x: Any, ind: Any, axis: int, size: Any) -> tuple[Any, Any, Any]:
    """For batch-leading x and ind: x with the indexed axis next to the batch (B, N, rest...),
    the same flattened to (B*N, rest...), and ind turned into rows of the flattened x."""
    n = x.type.shape[axis + 1]
    x2 = move_axis(b, x, axis + 1, 1)
    xf = ops.reshape(b, x2, (dims.mul(size, n),) + tuple(x2.type.shape[2:]))
    i = _ir_wrap_clamp(b, _as_i64(b, ind), n)
    row = ops.iota(b, I64, i.type.shape, 0)
    stride = ops.broadcast_in_dim(b, ops.size_of(b, n, I64), i.type.shape, ())
    return x2, xf, ops.add(b, i, ops.mul(b, row, stride))


def _take_both_batched(b: Any, x: Any, ind: Any, axis: int, size: Any) -> Any:
    """out[b, pre, ind, post] = x[b, pre, ind[b, ...], post] with x and ind batch-leading."""
    x2, xf, flat = _flatten_batch(b, x, ind, axis, size)
    rest = x2.type.shape[2:]
    g = ops.take(b, xf, flat, 0)                                # (B, ind..., pre..., post...)
    k, npre = ind.type.ndim - 1, axis
    perm = [0] + [1 + k + j for j in range(npre)] + [1 + j for j in range(k)] \
        + [1 + k + npre + j for j in range(len(rest) - npre)]
    return ops.transpose(b, g, perm)


def batched_take(b: Any, x: Any, xd: Any, ind: Any, idd: Any, axis: int, size: Any) -> tuple[Any, int]:
    """take(x, ind, axis) for batched operands (bdims xd, idd): (result, result bdim)."""
    if idd is None:
        if xd <= axis:
            return ops.take(b, x, ind, axis + 1), xd
        return ops.take(b, x, ind, axis), xd - 1 + ind.type.ndim
    if xd is None:
        ind = move_axis(b, ind, idd, 0)
        return ops.take(b, x, ind, axis), axis
    return _take_both_batched(b, move_axis(b, x, xd, 0), move_axis(b, ind, idd, 0), axis, size), 0


def _vmap_take(b: Any, op: Any, args: list[Any], bdims: list[Any], size: Any) -> tuple:
    out, d = batched_take(b, args[0], bdims[0], args[1], bdims[1], op.params["axis"], size)
    return [out], [d]


def _window_indices(b: Any, start: Any, n: Any, k: Any) -> Any:
    """clamp(start, 0, n - k) + arange(k), as int64."""
    s = _as_i64(b, start)
    hi = ops.size_of(b, dims.add(n, dims.mul(k, -1)), I64)
    s = ops.maximum(b, ops.minimum(b, s, hi), ops.scalar(b, 0, I64))
    return ops.add(b, ops.iota(b, I64, (k,), 0), ops.broadcast_in_dim(b, s, (k,), ()))


def _decompose_dynamic_slice(b: Any, op: Any, args: list[Any]) -> list[Any]:
    x, *starts = args
    for axis, (s, k) in enumerate(zip(starts, op.params["sizes"])):
        x = ops.take(b, x, _window_indices(b, s, x.type.shape[axis], k), axis)
    return [x]


def _vmap_dynamic_slice(b: Any, op: Any, args: list[Any], bdims: list[Any], size: Any) -> tuple:
    if any(d is not None for d in bdims[1:]):
        return rule_by_decomposition(_decompose_dynamic_slice)(b, op, args, bdims, size)
    d = bdims[0]
    x, *starts = args
    starts.insert(d, ops.scalar(b, 0, np.int64))
    sizes = list(op.params["sizes"])
    sizes.insert(d, size)
    return [ops.dynamic_slice(b, x, starts, sizes)], [d]


def _decompose_dynamic_update(b: Any, op: Any, args: list[Any]) -> list[Any]:
    """select(inside window, update gathered at (i - start), x)."""
    x, upd, *starts = args
    shape, mask, gathered = x.type.shape, None, upd
    for axis, (s, k) in enumerate(zip(starts, upd.type.shape)):
        n = shape[axis]
        window = _window_indices(b, s, n, k)                       # positions written, (k,)
        first = ops.slice_(b, window, (0,), (1,))
        pos = ops.iota(b, I64, (n,), 0)
        rel = ops.sub(b, pos, ops.broadcast_in_dim(b, first, (n,), (0,)))
        zero = ops.full(b, 0, rel.type)
        kk = ops.broadcast_in_dim(b, ops.size_of(b, k, I64), (n,), ())
        inside = ops.and_(b, ops.ge(b, rel, zero), ops.lt(b, rel, kk))
        gathered = ops.take(b, gathered, rel, axis)                 # clamps outside: masked below
        inside = ops.broadcast_in_dim(b, inside, shape, (axis,))
        mask = inside if mask is None else ops.and_(b, mask, inside)
    if mask is None:
        return [upd]
    return [ops.select(b, mask, gathered, x)]


def _vmap_dynamic_update(b: Any, op: Any, args: list[Any], bdims: list[Any], size: Any) -> tuple:
    if any(d is not None for d in bdims[2:]):
        return rule_by_decomposition(_decompose_dynamic_update)(b, op, args, bdims, size)
    x, upd, *starts = args
    x, upd = batched_at(b, x, bdims[0], 0, size), batched_at(b, upd, bdims[1], 0, size)
    return [ops.dynamic_update_slice(b, x, upd, [ops.scalar(b, 0, I64), *starts])], [0]


def _vmap_update_slice(b: Any, op: Any, args: list[Any], bdims: list[Any], size: Any) -> tuple:
    x, upd = (batched_at(b, a, d, 0, size) for a, d in zip(args, bdims))
    p = op.params
    return reemit(b, op, [x, upd], start_indices=(0,) + tuple(p["start_indices"]),
                  limit_indices=(size,) + tuple(p["limit_indices"]),
                  strides=(1,) + tuple(p["strides"])), [0]


def _vmap_scatter(b: Any, op: Any, args: list[Any], bdims: list[Any], size: Any) -> tuple:
    x, ind, upd = args
    axis = op.params["axis"]
    x, upd = batched_at(b, x, bdims[0], 0, size), batched_at(b, upd, bdims[2], 0, size)
    if bdims[1] is None:
        return reemit(b, op, [x, ind, upd], axis=axis + 1), [0]
    ind = move_axis(b, ind, bdims[1], 0)
    k = ind.type.ndim - 1
    x2, xf, flat = _flatten_batch(b, x, ind, axis, size)
    # updates (B, pre, ind, post) -> (B, ind, pre, post)
    perm = [0] + [1 + axis + j for j in range(k)] + [1 + j for j in range(axis)] \
        + [1 + axis + k + j for j in range(upd.type.ndim - 1 - axis - k)]
    out = ops.scatter(b, xf, flat, ops.transpose(b, upd, perm), 0, op.params["mode"])
    out = ops.reshape(b, out, x2.type.shape)
    return [move_axis(b, out, 1, axis + 1)], [0]


define(take, vmap_rule=_vmap_take)
define(dynamic_slice, vmap_rule=_vmap_dynamic_slice)
define(dynamic_update_slice, vmap_rule=_vmap_dynamic_update)
define(update_slice, vmap_rule=_vmap_update_slice)
define(scatter, vmap_rule=_vmap_scatter)


# ---- differentiation rules ---------------------------------------------------------------


def _first_only(apply: Any) -> Any:
    """jvp of an op linear in its first (array) operand; the others are indices."""
    def jvp(b: Any, op: Any, primals: list[Any], tangents: list[Any]) -> list[Any]:
        if tangents[0] is None:
            return [None]
        return [apply(b, op, tangents[0], primals)]
    return jvp


def _jvp_updates(b: Any, op: Any, primals: list[Any], tangents: list[Any]) -> list[Any]:
    """x and the update are linear operands of the update ops; indices are not."""
    x_pos, u_pos = 0, (2 if op.prim is scatter else 1)
    tx, tu = tangents[x_pos], tangents[u_pos]
    if tx is None and tu is None:
        return [None]
    args = list(primals)
    args[x_pos] = ad.instantiate(b, tx, primals[x_pos])
    args[u_pos] = ad.instantiate(b, tu, primals[u_pos])
    return [b.emit1(op.prim, args, op.params)]


def _vjp_take(b: Any, op: Any, primals: list[Any], outs: list[Any], cts: list[Any]) -> list[Any]:
    (x, ind), (ct,) = primals, cts
    if ct is None:
        return [None, None]
    return [ops.scatter(b, ops.zeros_like(b, x), ind, ct, op.params["axis"], "add"), None]


def _vjp_dynamic_slice(b: Any, op: Any, primals: list[Any], outs: list[Any], cts: list[Any]) -> list[Any]:
    x, *starts = primals
    (ct,) = cts
    if ct is None:
        return [None] * len(primals)
    return [ops.dynamic_update_slice(b, ops.zeros_like(b, x), ct, starts)] + [None] * len(starts)


def _vjp_dynamic_update(b: Any, op: Any, primals: list[Any], outs: list[Any], cts: list[Any]) -> list[Any]:
    x, upd, *starts = primals
    (ct,) = cts
    if ct is None:
        return [None] * len(primals)
    ct_x = ops.dynamic_update_slice(b, ct, ops.zeros_like(b, upd), starts)
    ct_u = ops.dynamic_slice(b, ct, starts, upd.type.shape)
    return [ct_x, ct_u] + [None] * len(starts)


def _vjp_update_slice(b: Any, op: Any, primals: list[Any], outs: list[Any], cts: list[Any]) -> list[Any]:
    (_, upd), (ct,) = primals, cts
    if ct is None:
        return [None, None]
    p = op.params
    ct_x = ops.update_slice(b, ct, ops.zeros_like(b, upd), p["start_indices"], p["limit_indices"],
                            p["strides"])
    return [ct_x, ops.slice_(b, ct, p["start_indices"], p["limit_indices"], p["strides"])]


def _last_writer(b: Any, ind: Any, n: Any) -> Any:
    """For each index of `ind` (into an axis of size n): does its update win, that is, does no
    later index name the same element? (set mode: the last write wins, as in NumPy)"""
    flat = ops.reshape(b, ind, (ind.type.size,))
    position = ops.iota(b, I64, (ind.type.size,), 0)
    last = ops.scatter(b, ops.full(b, -1, TensorType(I64, (n,))), flat, position, 0, "set")
    wins = ops.eq(b, ops.take(b, last, flat, 0), position)
    return ops.reshape(b, wins, ind.type.shape)


def _vjp_scatter(b: Any, op: Any, primals: list[Any], outs: list[Any], cts: list[Any]) -> list[Any]:
    """mode='add': x gets ct, updates get ct gathered. mode='set': overwritten elements of x
    get no cotangent, and of updates written to one element only the last (the one that
    stays) gets it."""
    (x, ind, upd), (ct,) = primals, cts
    if ct is None:
        return [None, None, None]
    axis = op.params["axis"]
    ct_u = ops.take(b, ct, ind, axis)
    if op.params["mode"] == "add":
        return [ct, None, ct_u]
    ct_x = ops.scatter(b, ct, ind, ops.zeros_like(b, upd), axis, "set")
    wins = _last_writer(b, ind, x.type.shape[axis])
    wins = ops.broadcast_in_dim(b, wins, upd.type.shape, range(axis, axis + ind.type.ndim))
    return [ct_x, None, ops.select(b, wins, ct_u, ops.zeros_like(b, ct_u))]


define(take, jvp_rule=_first_only(lambda b, op, t, p: ops.take(b, t, p[1], op.params["axis"])),
             vjp_rule=_vjp_take)
define(dynamic_slice, jvp_rule=_first_only(
    lambda b, op, t, p: ops.dynamic_slice(b, t, p[1:], op.params["sizes"])), vjp_rule=_vjp_dynamic_slice)
define(dynamic_update_slice, jvp_rule=_jvp_updates, vjp_rule=_vjp_dynamic_update)
define(update_slice, jvp_rule=_jvp_updates, vjp_rule=_vjp_update_slice)
define(scatter, jvp_rule=_jvp_updates, vjp_rule=_vjp_scatter)
