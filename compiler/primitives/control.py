"""Structured control flow: ``cond`` and ``while`` with isolated regions.

``cond(pred, *operands)`` has two regions (true, false) whose arguments are
the operands and whose yields are the results. ``while(*init)`` has a cond
region (carried values -> one bool) and a body region (carried -> carried).
The predicate is any single-element value (NumPy truthiness).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from compiler.errors import DataDependentControlFlowError, UnsupportedError
from compiler.ir import dims
from compiler.ir.primitive import define
from compiler.ir.types import BOOL, TensorType
from compiler.primitives import ad, ops
from compiler.primitives.base import check
from compiler.primitives.batching import batched_at, move_axis
from compiler.primitives.regions import drivers

Types = tuple[TensorType, ...]


def is_single_element(t: TensorType) -> bool:
    return all(d == 1 for d in t.shape)


def _block_sig(block: Any) -> tuple[list[TensorType], list[TensorType]]:
    return [a.type for a in block.args], [r.type for r in block.results]


def _cond_rule(in_types: Types, params: dict[str, Any], regions: tuple[Any, ...]) -> Types:
    pred, *args = in_types
    check(is_single_element(pred), f"cond: predicate must have one element, got {pred}")
    check(len(regions) == 2, "cond: needs a true and a false region")
    (t_args, t_res), (f_args, f_res) = (_block_sig(r) for r in regions)
    check(t_args == list(args) == f_args, "cond: region arguments must match the operands")
    check(t_res == f_res, f"cond: branches yield different types: {t_res} vs {f_res}")
    return tuple(t_res)


def _interpret_cond(interp: Any, op: Any, args: list[np.ndarray]) -> list[np.ndarray]:
    pred, *rest = args
    region = op.regions[0] if bool(np.asarray(pred).reshape(())) else op.regions[1]
    return interp.run_block(region, rest)


_KIND_TEXT = {"if": "`if`", "ifexp": "conditional expression (x if c else y)", "and": "`and`",
              "or": "`or`", "while": "`while`", "not": "`not`"}


def _reject_batched_predicate(op: Any) -> None:
    what = _KIND_TEXT.get(op.params.get("kind", ""), "control flow")
    raise DataDependentControlFlowError(
        f"{what} on a batched value: under vmap each batch element may take another branch",
        op.loc, "compute both sides and pick with np.where(cond, a, b)"
                + ("" if op.prim is ops.cond_p else ", or run a fixed number of steps with a static loop"))


def _vmap_cond(b: Any, op: Any, args: list[Any], bdims: list[Any], size: Any) -> tuple:
    if bdims[0] is not None:
        _reject_batched_predicate(op)
    _, out_t = drivers().vmap_block(op.regions[0], bdims[1:], size)
    _, out_f = drivers().vmap_block(op.regions[1], bdims[1:], size)
    out = [None if t is None and f is None else 0 for t, f in zip(out_t, out_f)]
    regions = [drivers().vmap_block(r, bdims[1:], size, out)[0] for r in op.regions]
    return list(b.emit(op.prim, args, op.params, regions)), out


def _vmap_while(b: Any, op: Any, args: list[Any], bdims: list[Any], size: Any) -> tuple:
    cond_block, body = op.regions
    carried = [None if d is None else 0 for d in bdims]
    while True:                                   # a value batched after one step stays batched
        _, after = drivers().vmap_block(body, carried, size)
        grown = [0 if c is not None or a is not None else None for c, a in zip(carried, after)]
        if grown == carried:
            break
        carried = grown
    _, (pred_bdim,) = drivers().vmap_block(cond_block, carried, size)
    if pred_bdim is not None:
        _reject_batched_predicate(op)
    regions = [drivers().vmap_block(cond_block, carried, size)[0],
               drivers().vmap_block(body, carried, size, carried)[0]]
    init = [a if c is None else batched_at(b, a, d, 0, size) for a, d, c in zip(args, bdims, carried)]
    return list(b.emit(op.prim, init, op.params, regions)), carried


cond = define(
    ops.cond_p,
    shape_rule=_cond_rule,
    numpy_ref=None,
    interpret=_interpret_cond,
    vmap_rule=_vmap_cond,
    doc="run the true or the false region on the operands",
)


def _while_rule(in_types: Types, params: dict[str, Any], regions: tuple[Any, ...]) -> Types:
    check(len(regions) == 2, "while: needs a cond and a body region")
    (c_args, c_res), (b_args, b_res) = (_block_sig(r) for r in regions)
    check(c_args == list(in_types) == b_args, "while: region arguments must match the carried values")
    check(len(c_res) == 1 and is_single_element(c_res[0]),
          f"while: the condition must yield one single-element value, got {c_res}")
    check(b_res == list(in_types), f"while: the body must yield the carried types {list(in_types)}, got {b_res}")
    return tuple(in_types)


def _interpret_while(interp: Any, op: Any, args: list[np.ndarray]) -> list[np.ndarray]:
    cond_block, body = op.regions
    values = list(args)
    while bool(np.asarray(interp.run_block(cond_block, values)[0]).reshape(())):
        values = interp.run_block(body, values)
    return values


while_ = define(
    ops.while_p,
    shape_rule=_while_rule,
    numpy_ref=None,
    interpret=_interpret_while,
    vmap_rule=_vmap_while,
    doc="repeat body while cond holds, carrying values",
)

# ---- chunked map: vmap(..., chunk_size=k) -------------------------------------------------


def chunk_counts(size: Any, chunk: int) -> tuple[Any, Any]:
    """(number of full chunks, size of the tail chunk) for a batch of `size`."""
    full = dims.floordiv(size, chunk)
    return full, dims.add(size, dims.mul(full, -chunk))


def _chunked_rule(in_types: Types, params: dict[str, Any], regions: tuple[Any, ...]) -> Types:
    size, chunk, batched = params["size"], params["chunk"], params["batched"]
    check(len(regions) == 2 and len(batched) == len(in_types), "chunked: needs a full and a tail region")
    _, tail = chunk_counts(size, chunk)
    for region, n in zip(regions, (chunk, tail)):
        args, _ = _block_sig(region)
        want = [t.with_shape((n,) + t.shape[1:]) if bt else t for t, bt in zip(in_types, batched)]
        check(args == want, f"chunked: region arguments {args} do not match {want}")
    for t, bt in zip(in_types, batched):
        check(not bt or (t.ndim >= 1 and t.shape[0] == size), f"chunked: batched operand {t} needs axis 0 = {size}")
    full_res = _block_sig(regions[0])[1]
    for r in full_res:
        check(r.ndim >= 1 and r.shape[0] == chunk, f"chunked: region results must lead with the chunk axis, got {r}")
    return tuple(r.with_shape((size,) + r.shape[1:]) for r in full_res)


def _interpret_chunked(interp: Any, op: Any, args: list[np.ndarray]) -> list[np.ndarray]:
    chunk, batched = op.params["chunk"], op.params["batched"]
    size = next(a.shape[0] for a, bt in zip(args, batched) if bt)
    pieces: list[list[np.ndarray]] = []
    for start in range(0, size, chunk):
        stop = min(start + chunk, size)
        region = op.regions[0] if stop - start == chunk else op.regions[1]
        pieces.append(interp.run_block(region, [a[start:stop] if bt else a for a, bt in zip(args, batched)]))
    if not pieces:
        return [np.asarray(interp.run_block(op.regions[1], [a[:0] if bt else a for a, bt in zip(args, batched)])[i])
                for i in range(len(op.results))]
    return [np.concatenate(parts) for parts in zip(*pieces)]


def _vmap_chunked(b: Any, op: Any, args: list[Any], bdims: list[Any], size: Any) -> tuple:
    """An outer batch axis goes to position 1 (the chunk axis stays first)."""
    new_args: list[Any] = []
    region_bdims: list[int | None] = []
    for a, d, bt in zip(args, bdims, op.params["batched"]):
        if d is None:
            new_args.append(a)
            region_bdims.append(None)
        else:
            new_args.append(move_axis(b, a, d, 1) if bt else batched_at(b, a, d, 0, size))
            region_bdims.append(1 if bt else 0)
    out = [1] * len(op.results)
    regions = [drivers().vmap_block(r, region_bdims, size, out)[0] for r in op.regions]
    return list(b.emit(op.prim, new_args, op.params, regions)), out


chunked = define(
    ops.chunked_p,
    shape_rule=_chunked_rule,
    numpy_ref=None,
    interpret=_interpret_chunked,
    vmap_rule=_vmap_chunked,
    doc="map the full region over chunks of axis 0 of the batched operands, then the tail region",
)

# ---- differentiation rules --------------------------------------------------------------


def _float(v: Any) -> bool:
    return v.dtype.kind == "f"


def _split_tangents(op: Any, results: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """(primal results, tangent per result: None for non-float results)."""
    n = len(op.results)
    prim, rest = list(results[:n]), iter(results[n:])
    return prim, [next(rest) if _float(r) else None for r in op.results]


def _jvp_cond(b: Any, op: Any, primals: list[Any], tangents: list[Any]) -> tuple:
    pred, *args = primals
    targs = tangents[1:]
    active = [t is not None for t in targs]
    regions = [drivers().jvp_block(r, active)[0] for r in op.regions]
    results = b.emit(cond, [pred, *args, *[t for t in targs if t is not None]], op.params, regions)
    _ = ad
    return _split_tangents(op, results)


def _jvp_while(b: Any, op: Any, primals: list[Any], tangents: list[Any]) -> tuple:
    active = [_float(v) for v in primals]          # every float carried value gets a tangent
    ts = [ad.instantiate(b, t, p) for t, p, on in zip(tangents, primals, active) if on]
    regions = [drivers().jvp_block(op.regions[0], active)[0],
               drivers().jvp_block(op.regions[1], active)[0]]
    results = b.emit(while_, [*primals, *ts], op.params, regions)
    return _split_tangents(op, results)


def _vjp_while(b: Any, op: Any, primals: list[Any], outs: list[Any], cts: list[Any]) -> list[Any]:
    """Regions are isolated, so a loop carries every value it uses, loop invariants included:
    a carried value the body passes through unchanged is the identity whatever the trip count,
    and its cotangent goes straight through. A cotangent for a value the loop changes would have
    to run backwards through a data-dependent number of iterations: refused."""
    body = op.regions[1]
    through = [res is arg for arg, res in zip(body.args, body.results)]
    if any(c is not None and not t for c, t in zip(cts, through)):
        raise DataDependentControlFlowError(
            "reverse-mode differentiation through a `while` loop whose trip count depends on data",
            op.loc, "use a static loop (for i in range(n)) or forward mode (jvp, jacfwd)")
    return [c if t else None for c, t in zip(cts, through)]


def _vjp_cond(b: Any, op: Any, primals: list[Any], outs: list[Any], cts: list[Any]) -> list[Any]:
    """The backward pass runs the taken branch again and differentiates it."""
    pred, *args = primals
    active = [_float(a) for a in args]
    regions = [drivers().vjp_block(r, active, with_primals=False) for r in op.regions]
    out_cts = [ad.instantiate(b, c, o) for c, o in zip(cts, outs) if _float(o)]
    results = iter(b.emit(cond, [pred, *args, *out_cts], op.params, regions))
    return [None] + [next(results) if on else None for on in active]


def _jvp_chunked(b: Any, op: Any, primals: list[Any], tangents: list[Any]) -> tuple:
    active = [t is not None for t in tangents]
    regions = [drivers().jvp_block(r, active)[0] for r in op.regions]
    batched = tuple(op.params["batched"])
    params = {**op.params, "batched": batched + tuple(bt for bt, on in zip(batched, active) if on)}
    results = b.emit(chunked, [*primals, *[t for t in tangents if t is not None]], params, regions)
    return _split_tangents(op, results)


def _vjp_chunked(b: Any, op: Any, primals: list[Any], outs: list[Any], cts: list[Any]) -> list[Any]:
    raise UnsupportedError("reverse-mode differentiation of vmap(..., chunk_size=...) is not supported",
                           op.loc, "differentiate the function and vmap the result with chunk_size "
                                   "(e.g. jacrev(f, chunk_size=...)), or drop chunk_size")


define(cond, jvp_rule=_jvp_cond, vjp_rule=_vjp_cond)
define(while_, jvp_rule=_jvp_while, vjp_rule=_vjp_while)
define(chunked, jvp_rule=_jvp_chunked, vjp_rule=_vjp_chunked)

_ = BOOL
