"""Reductions (sum, prod, max, min, all, any, argmax, argmin) and scans
(cumsum, cumprod).

Reductions are INDEX primitives: reading one output element runs a loop over
the reduced axes of the operand, so a reduction fuses with the elementwise
chain that feeds it. ``axes`` are removed from the shape; ``keepdims`` is a
reshape done by the frontend. Scans write whole buffers (OPAQUE).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from compiler.ir import dims
from compiler.ir.primitive import Primitive, define
from compiler.ir.types import BOOL, F16, I64, TensorType, is_float
from compiler.primitives import ad, ops
from compiler.primitives.base import check
from compiler.primitives.batching import reemit, shift_axes
from compiler.primitives.sorting import scatter_rows, take_rows

Types = tuple[TensorType, ...]


def _reduce_rule(in_types: Types, params: dict[str, Any]) -> Types:
    (x,), axes = in_types, tuple(params["axes"])
    check(all(0 <= a < x.ndim for a in axes) and len(set(axes)) == len(axes) and list(axes) == sorted(axes),
          f"reduction axes {axes} invalid for {x}")
    return (x.with_shape(tuple(d for i, d in enumerate(x.shape) if i not in axes)),)


def _init_value(cg: Any, dtype: np.dtype, kind: str) -> Any:
    info = np.finfo(dtype) if is_float(dtype) else None
    if kind == "sum":
        return cg.const(dtype, 0)
    if kind == "prod":
        return cg.const(dtype, 1)
    if dtype == BOOL:
        return cg.const(dtype, kind in ("min", "and"))
    if kind == "max":
        return cg.const(dtype, -np.inf if info is not None else np.iinfo(dtype).min)
    return cg.const(dtype, np.inf if info is not None else np.iinfo(dtype).max)


def _combine(kind: str) -> Callable[..., Any]:
    def combine(cg: Any, dtype: np.dtype, acc: Any, v: Any) -> Any:
        b = cg.b
        if kind in ("sum", "prod"):
            if is_float(dtype):
                value = b.fadd(acc, v) if kind == "sum" else b.fmul(acc, v)
                # float16 rounds every step (no reordering): see _lower_accumulate and scans
                return value if dtype == F16 else cg.reassoc(value)
            if dtype == BOOL:
                return b.or_(acc, v) if kind == "sum" else b.and_(acc, v)
            return b.add(acc, v) if kind == "sum" else b.mul(acc, v)
        if kind in ("and", "or"):
            return b.and_(acc, v) if kind == "and" else b.or_(acc, v)
        if is_float(dtype):
            return cg.intrinsic("llvm.maximum" if kind == "max" else "llvm.minimum", [acc, v])
        return b.select(cg.icmp(dtype, ">" if kind == "max" else "<", v, acc), v, acc)
    return combine


def _pairwise(kind: str, dtype: np.dtype) -> Callable[..., Any] | None:
    """For a float sum, the plain (not reassociable) add, which the backend folds with
    blocked pairwise summation; None otherwise: integer and boolean sums are exact, max
    and min are order-free, and a product's rounding error is the sum of its n - 1
    multiplications' relative errors in any order."""
    if kind != "sum" or not is_float(dtype):
        return None
    return lambda cg: (lambda a, v: cg.b.fadd(a, v))


def _blocked(kind: str, dtype: np.dtype) -> Callable[..., Any] | None:
    """For max and min into whole output rows, the same blocked walk as a float sum: the
    result does not depend on the order (NaN wins, -0 < +0: llvm.maximum/minimum), and the
    walk's run-time chunk keeps LLVM from vectorizing across rows with gathers, which it
    does for a plain loop over a short static row (X.min(axis=0) of 100000x20: 16.9 ->
    0.4 ms)."""
    if kind not in ("max", "min") or dtype == BOOL:
        return None
    return lambda cg: (lambda a, v: _combine(kind)(cg, dtype, a, v))


def _lower_reduce(kind: str) -> Callable[..., Any]:
    def lower(cg: Any, op: Any, idx: list[Any]) -> Any:
        x, axes = op.operands[0], op.params["axes"]
        dtype = x.dtype
        pairwise = _pairwise(kind, dtype)
        if pairwise is not None:
            return cg.reduce_pairwise(x.shape, axes, idx, _init_value(cg, dtype, kind),
                                      pairwise(cg), lambda full: cg.read(x, full))

        def body(acc: list[Any], full_idx: list[Any]) -> list[Any]:
            return [_combine(kind)(cg, dtype, acc[0], cg.read(x, full_idx))]
        return cg.reduce(x.shape, axes, idx, [_init_value(cg, dtype, kind)], body)[0]
    return lower


def _keeps_last_axis(op: Any) -> bool:
    axes = op.params["axes"]
    return bool(axes) and op.operands[0].type.ndim - 1 not in axes


def _lower_accumulate(kind: str) -> Callable[..., bool]:
    """Into a buffer, when the last axis is kept: walk the operand in memory order and
    fold each row into the output row, so the inner loop is contiguous and vectorizes
    (fusion gives such a reduction its buffer: ``own_loop``)."""

    def lower_root(cg: Any, op: Any, out: Any) -> bool:
        x, axes = op.operands[0], op.params["axes"]
        if not _keeps_last_axis(op):
            return False
        dtype = x.dtype
        # float16 rows fold into the float16 output row, rounding at every step, as NumPy's
        # reduction over an outer axis does (a whole-row sum accumulates in float32)
        pairwise = None if dtype == F16 else _pairwise(kind, dtype) or _blocked(kind, dtype)
        if pairwise is not None and cg.accumulate_pairwise(
                x.shape, axes, out, _init_value(cg, dtype, kind), pairwise(cg), lambda full: cg.read(x, full)):
            return True
        with cg.loop_nest(op.results[0].shape) as idx:
            cg.store(out, idx, _init_value(cg, dtype, kind))
        with cg.loop_nest(x.shape) as full:
            dst = [i for a, i in enumerate(full) if a not in axes]
            cg.store(out, dst, _combine(kind)(cg, dtype, cg.load(out, dst), cg.read(x, full)))
        return True
    return lower_root


def _vmap_reduce(b: Any, op: Any, args: list[Any], bdims: list[Any], size: Any) -> tuple:
    d = bdims[0]
    axes = shift_axes(op.params["axes"], d)
    return reemit(b, op, args, axes=axes), [d - sum(1 for a in axes if a < d)]


def _vmap_arg(b: Any, op: Any, args: list[Any], bdims: list[Any], size: Any) -> tuple:
    d = bdims[0]
    axis = op.params["axis"] + (op.params["axis"] >= d)
    return reemit(b, op, args, axis=axis), [d - (axis < d)]


def _vmap_scan(b: Any, op: Any, args: list[Any], bdims: list[Any], size: Any) -> tuple:
    d = bdims[0]
    return reemit(b, op, args, axis=op.params["axis"] + (op.params["axis"] >= d)), [d]


def _reduction(prim: Primitive, kind: str, ref: Callable[..., Any], **kw: Any) -> Primitive:
    def checked(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return ref(x, axis=tuple(axes))
    return define(prim, shape_rule=_reduce_rule, numpy_ref=checked, lower=_lower_reduce(kind),
                  lower_root=_lower_accumulate(kind), own_loop=_keeps_last_axis,
                  vmap_rule=_vmap_reduce, loops=True,
                  doc=f"{ref.__name__} over `axes`", **kw)


reduce_sum = _reduction(ops.reduce_sum_p, "sum", np.sum)
reduce_prod = _reduction(ops.reduce_prod_p, "prod", np.prod)
reduce_max = _reduction(ops.reduce_max_p, "max", np.max)
reduce_min = _reduction(ops.reduce_min_p, "min", np.min)
reduce_and = _reduction(ops.reduce_and_p, "and", np.all, differentiable=False)
reduce_or = _reduction(ops.reduce_or_p, "or", np.any, differentiable=False)


def _arg_rule(in_types: Types, params: dict[str, Any]) -> Types:
    (x,), axis = in_types, params["axis"]
    check(0 <= axis < x.ndim, f"argmax/argmin axis {axis} invalid for {x}")
    return (TensorType(I64, tuple(d for i, d in enumerate(x.shape) if i != axis)),)


def _lower_arg(which: str) -> Callable[..., Any]:
    """First index of the max (min); a nan wins at its first occurrence, as in NumPy.

    Two vectorizable passes over the reduced axis rather than one carrying a (value, index)
    pair, which LLVM leaves scalar: the max (min), nan-propagating for floats, then the
    least index holding it, or holding a nan (there is one exactly when the max is nan).
    A row of 1000 float64: 4.7 us -> 0.2 us."""
    kind = "max" if which == ">" else "min"

    def lower(cg: Any, op: Any, idx: list[Any]) -> Any:
        x, axis = op.operands[0], op.params["axis"]
        b, dtype = cg.b, x.dtype
        combine = _combine(kind)
        best = cg.reduce(x.shape, (axis,), idx, [_init_value(cg, dtype, kind)],
                         lambda acc, full: [combine(cg, dtype, acc[0], cg.read(x, full))])[0]
        n = cg.dim(x.shape[axis])

        def first(acc: list[Any], full: list[Any]) -> list[Any]:
            v = cg.read(x, full)
            if is_float(dtype):
                hit = b.or_(b.fcmp_ordered("==", v, best), b.fcmp_unordered("uno", v, v))
            else:
                hit = b.icmp_unsigned("==", v, best)
            return [cg.intrinsic("llvm.smin", [acc[0], b.select(hit, full[axis], n)])]
        at = cg.reduce(x.shape, (axis,), idx, [n], first)[0]
        return b.select(b.icmp_signed("==", at, n), cg.index(-1), at)     # an empty axis
    return lower


argmax = define(
    ops.argmax_p,
    shape_rule=_arg_rule,
    numpy_ref=lambda x, axis: np.argmax(x, axis),
    lower=_lower_arg(">"),
    loops=True,
    differentiable=False,
    vmap_rule=_vmap_arg,
    doc="np.argmax along `axis`",
)
argmin = define(
    ops.argmin_p,
    shape_rule=_arg_rule,
    numpy_ref=lambda x, axis: np.argmin(x, axis),
    lower=_lower_arg("<"),
    loops=True,
    differentiable=False,
    vmap_rule=_vmap_arg,
    doc="np.argmin along `axis`",
)

# ---- scans ------------------------------------------------------------------------


def _scan_rule(in_types: Types, params: dict[str, Any]) -> Types:
    check(0 <= params["axis"] < in_types[0].ndim, "cumulative axis out of range")
    return (in_types[0],)


def _lower_scan(kind: str) -> Callable[..., Any]:
    def lower(cg: Any, op: Any, outs: list[Any]) -> None:
        x, axis = op.operands[0], op.params["axis"]
        outer = tuple(d if i != axis else 1 for i, d in enumerate(x.shape))
        half = x.dtype == F16       # NumPy's float16 accumulate rounds every partial result
        pairwise = None if half else _pairwise(kind, x.dtype)
        if pairwise is not None:
            with cg.loop_nest(outer) as idx:
                def at(k: Any) -> list[Any]:
                    return [k if a == axis else i for a, i in enumerate(idx)]
                # -0.0, the exact identity of +: a running sum starts at its first element,
                # so cumsum([-0.0]) is -0.0 as in NumPy (no empty prefix to make +0.0)
                cg.scan_pairwise(cg.dim(x.shape[axis]), cg.const(x.dtype, -0.0), pairwise(cg),
                                 lambda k: cg.read(x, at(k)), lambda k, v: cg.store(outs[0], at(k), v))
            return
        running = kind in ("max", "min") and is_float(x.dtype) and not half
        with cg.loop_nest(outer) as idx:
            acc = cg.alloca_scalar(x.dtype, _init_value(cg, x.dtype, kind))
            nan = cg.alloca_scalar(BOOL, cg.const(BOOL, False)) if running else None
            with cg.loop(cg.dim(x.shape[axis])) as k:
                full = list(idx)
                full[axis] = k
                if nan is not None:
                    # NumPy's maximum keeps the running value unless the new one is greater
                    # (so -0.0 stays before 0.0) and a nan for good: one compare and select
                    # on the loop-carried path (llvm.maximum is a longer chain), the nan aside
                    b, v = cg.b, cg.read(x, full)
                    run = b.load(acc)
                    new = b.select(b.fcmp_ordered(">" if kind == "max" else "<", v, run), v, run)
                    seen = b.or_(b.load(nan), b.fcmp_unordered("uno", v, v))
                    b.store(seen, nan)
                    b.store(new, acc)
                    cg.store(outs[0], full, b.select(seen, cg.const(x.dtype, np.nan), new))
                else:
                    new = _combine(kind)(cg, x.dtype, cg.b.load(acc), cg.read(x, full))
                    new = cg.round_half(new) if half else new
                    cg.b.store(new, acc)
                    cg.store(outs[0], full, new)
    return lower


def _ref_scan(fn: Callable[..., Any]) -> Callable[..., Any]:
    return lambda x, axis: fn(x, axis=axis, dtype=x.dtype)


def _scan(prim: Primitive, kind: str, ref: Callable[..., Any], doc: str) -> Primitive:
    return define(prim, shape_rule=_scan_rule, numpy_ref=ref, lower=_lower_scan(kind),
                  vmap_rule=_vmap_scan, doc=doc)


def _ref_extremum_scan(uf: np.ufunc) -> Callable[..., Any]:
    return lambda x, axis: uf.accumulate(x, axis=axis)


cumsum = _scan(ops.cumsum_p, "sum", _ref_scan(np.cumsum), "running sum along `axis`")
cumprod = _scan(ops.cumprod_p, "prod", _ref_scan(np.cumprod), "running product along `axis`")
cummax = _scan(ops.cummax_p, "max", _ref_extremum_scan(np.maximum),
               "running maximum along `axis` (np.maximum.accumulate)")
cummin = _scan(ops.cummin_p, "min", _ref_extremum_scan(np.minimum),
               "running minimum along `axis` (np.minimum.accumulate)")


# ---- differentiation rules ---------------------------------------------------------------


def _spread(b: Any, v: Any, x: Any, axes: tuple[int, ...]) -> Any:
    """A reduced value broadcast back over the reduced axes of x."""
    kept = tuple(i for i in range(x.type.ndim) if i not in axes)
    return ops.broadcast_in_dim(b, v, x.type.shape, kept)


def _rev_cumsum(b: Any, v: Any, axis: int) -> Any:
    return ops.rev(b, ops.cumsum(b, ops.rev(b, v, (axis,)), axis), (axis,))


def _extremum_mask(b: Any, x: Any, out: Any, axes: tuple[int, ...]) -> tuple[Any, Any]:
    """(mask of the elements equal to the extremum, their count): ties share the derivative."""
    mask = ops.convert(b, ops.eq(b, x, _spread(b, out, x, axes)), x.dtype)
    return mask, ops.reduce_sum(b, mask, axes)


def _jvp_extremum(b: Any, op: Any, primals: list[Any], tangents: list[Any]) -> list[Any]:
    (x,), (t,) = primals, tangents
    if t is None:
        return [None]
    axes = op.params["axes"]
    mask, count = _extremum_mask(b, x, ad.op_output(b, op, primals), axes)
    return [ops.div(b, ops.reduce_sum(b, ops.mul(b, t, mask), axes), count)]


def _vjp_extremum(b: Any, op: Any, primals: list[Any], outs: list[Any], cts: list[Any]) -> list[Any]:
    (x,), (ct,) = primals, cts
    if ct is None:
        return [None]
    axes = op.params["axes"]
    mask, count = _extremum_mask(b, x, outs[0], axes)
    return [ops.mul(b, mask, _spread(b, ops.div(b, ct, count), x, axes))]


def _exclusive_cumprod(b: Any, flat: Any, axis: int) -> Any:
    """Along the last axis `axis`: the product of the elements before each one."""
    limits = flat.type.shape
    shifted = ops.pad(b, flat, ops.scalar(b, 1, flat.dtype), (0,) * axis + (1,), (0,) * (axis + 1))
    return ops.cumprod(b, ops.slice_(b, shifted, (0,) * (axis + 1), limits), axis)


def _prod_of_others(b: Any, x: Any, axes: tuple[int, ...]) -> Any:
    """For each element, the product of the other elements of its reduction group
    (exclusive prefix times suffix products: no division, so zeros are fine)."""
    rest = [i for i in range(x.type.ndim) if i not in axes]
    perm = tuple(rest) + tuple(axes)
    moved = ops.transpose(b, x, perm)
    k: Any = 1
    for a in axes:
        k = dims.mul(k, x.type.shape[a])
    lead = tuple(x.type.shape[i] for i in rest)
    flat = ops.reshape(b, moved, lead + (k,))
    axis = len(lead)
    left = _exclusive_cumprod(b, flat, axis)
    right = ops.rev(b, _exclusive_cumprod(b, ops.rev(b, flat, (axis,)), axis), (axis,))
    others = ops.reshape(b, ops.mul(b, left, right), moved.type.shape)
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return ops.transpose(b, others, inv)


def _jvp_prod(b: Any, op: Any, primals: list[Any], tangents: list[Any]) -> list[Any]:
    (x,), (t,) = primals, tangents
    if t is None:
        return [None]
    others = _prod_of_others(b, x, op.params["axes"])
    return [ops.reduce_sum(b, ops.mul(b, t, others), op.params["axes"])]


def _vjp_prod(b: Any, op: Any, primals: list[Any], outs: list[Any], cts: list[Any]) -> list[Any]:
    (x,), (ct,) = primals, cts
    if ct is None:
        return [None]
    axes = op.params["axes"]
    return [ops.mul(b, _spread(b, ct, x, axes), ops.conj_if_complex(b, _prod_of_others(b, x, axes)))]


def _jvp_cumprod(b: Any, op: Any, primals: list[Any], tangents: list[Any]) -> list[Any]:
    """y * cumsum(t / x) (undefined where x has zeros, as documented)."""
    (x,), (t,) = primals, tangents
    if t is None:
        return [None]
    y = ad.op_output(b, op, primals)
    return [ops.mul(b, y, ops.cumsum(b, ops.div(b, t, x), op.params["axis"]))]


def _vjp_cumprod(b: Any, op: Any, primals: list[Any], outs: list[Any], cts: list[Any]) -> list[Any]:
    (x,), (ct,) = primals, cts
    if ct is None:
        return [None]
    back = _rev_cumsum(b, ops.mul(b, ct, ops.conj_if_complex(b, outs[0])), op.params["axis"])
    return [ops.div(b, back, ops.conj_if_complex(b, x))]


define(reduce_sum, **ad.linear(lambda b, op, p, ct: [_spread(b, ct, p[0], op.params["axes"])]))
define(cumsum, **ad.linear(lambda b, op, p, ct: [_rev_cumsum(b, ct, op.params["axis"])]))
for _prim in (reduce_max, reduce_min):
    define(_prim, jvp_rule=_jvp_extremum, vjp_rule=_vjp_extremum)
define(reduce_prod, jvp_rule=_jvp_prod, vjp_rule=_vjp_prod)
define(cumprod, jvp_rule=_jvp_cumprod, vjp_rule=_vjp_cumprod)


def _running_positions(b: Any, x: Any, y: Any, axis: int) -> tuple[Any, list[int]]:
    """For y = cummax(x) (cummin), with `axis` moved last (`order`): the position along it of
    the element each y[k] is, the last j <= k where x[j] == y[j] (a running maximum of those
    positions). y[k]'s derivative is x's there."""
    order = [a for a in range(x.type.ndim) if a != axis] + [axis]
    xm, ym = ops.transpose(b, x, order), ops.transpose(b, y, order)
    at = ops.iota(b, np.dtype(np.int64), tuple(xm.type.shape), xm.type.ndim - 1)
    hit = ops.select(b, ops.eq(b, xm, ym), at, ops.full(b, 0, at.type))
    return ops.cummax(b, hit, xm.type.ndim - 1), order


def _back(b: Any, v: Any, order: list[int]) -> Any:
    return ops.transpose(b, v, [order.index(a) for a in range(len(order))])


def _jvp_running(b: Any, op: Any, primals: list[Any], tangents: list[Any]) -> list[Any]:
    (x,), (t,) = primals, tangents
    if t is None:
        return [None]
    y = ad.op_output(b, op, primals)
    last, order = _running_positions(b, x, y, op.params["axis"])
    return [_back(b, take_rows(b, ops.transpose(b, t, order), last), order)]


def _vjp_running(b: Any, op: Any, primals: list[Any], outs: list[Any], cts: list[Any]) -> list[Any]:
    (x,), (ct,) = primals, cts
    if ct is None:
        return [None]
    last, order = _running_positions(b, x, outs[0], op.params["axis"])
    return [_back(b, scatter_rows(b, ops.transpose(b, ct, order), last), order)]


define(cummax, jvp_rule=_jvp_running, vjp_rule=_vjp_running)
define(cummin, jvp_rule=_jvp_running, vjp_rule=_vjp_running)
