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
from compiler.ir.builder import Builder, new_block
from compiler.ir.primitive import CONTROL, OPAQUE, define
from compiler.ir.types import BOOL, TensorType
from compiler.primitives import ad, ops
from compiler.primitives.base import check
from compiler.primitives.batching import batched_at, inline_block, move_axis
from compiler.primitives.regions import drivers

Types = tuple[TensorType, ...]


def is_single_element(t: TensorType) -> bool:
    return all(d == 1 for d in t.shape)


def _block_sig(block: Any) -> tuple[list[TensorType], list[TensorType]]:
    return [a.type for a in block.args], [r.type for r in block.results]


def _cond_rule(in_types: Types, params: dict[str, Any], regions: tuple[Any, ...]) -> Types:
    pred, *args = in_types
    lanes = params.get("select", 0)
    if lanes:
        _check_lanes(pred, args, regions, lanes)
    else:
        check(is_single_element(pred), f"cond: predicate must have one element, got {pred}")
    check(len(regions) == 2, "cond: needs a true and a false region")
    (t_args, t_res), (f_args, f_res) = (_block_sig(r) for r in regions)
    check(t_args == list(args) == f_args, "cond: region arguments must match the operands")
    check(t_res == f_res, f"cond: branches yield different types: {t_res} vs {f_res}")
    return tuple(t_res)


def _interpret_cond(interp: Any, op: Any, args: list[np.ndarray]) -> list[np.ndarray]:
    pred, *rest = args
    if op.params.get("select", 0):
        return _interpret_lanes(interp, op, args)
    region = op.regions[0] if bool(np.asarray(pred).reshape(())) else op.regions[1]
    return interp.run_block(region, rest)


_KIND_TEXT = {"if": "`if`", "ifexp": "conditional expression (x if c else y)", "and": "`and`",
              "or": "`or`", "while": "`while`", "not": "`not`"}


def _reject_batched_predicate(op: Any) -> None:
    what = _KIND_TEXT.get(op.params.get("kind", ""), "control flow")
    raise DataDependentControlFlowError(
        f"{what} on a batched value: under vmap each batch element may take another branch",
        op.loc, "compute both sides and pick with np.where(cond, a, b), or write the branch as "
                "compiler.cond(pred, true_fn, false_fn, *operands) and the loop as "
                "compiler.while_loop(cond_fn, body_fn, init): those batch per element")


def _vmap_cond(b: Any, op: Any, args: list[Any], bdims: list[Any], size: Any) -> tuple:
    if op.params.get("select", 0) or (bdims[0] is not None and op.params.get("kind") in EXPLICIT):
        return _vmap_cond_lanes(b, op, args, bdims, size)
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
    if pred_bdim is not None and op.params.get("kind") in EXPLICIT:
        return _vmap_while_masked(b, op, args, bdims, size, carried)
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

# ---- the explicit functions under vmap: a per-element cond, a masked while ----------------
#
# compiler.cond / compiler.switch / compiler.while_loop stage `cond` and `while` ops of kind
# "cond", "switch", "while_loop"; only those batch with a batched predicate (a Python `if` or
# `while` on a batched value stays an error: it says nothing about what the other elements do).
#
# A cond whose predicate is batched becomes a *per-element* cond: the same op with param
# ``select=k`` (k > 0), a bool predicate of shape S (k dims), operands and results that all
# lead with S, and regions that compute every element. It means "each element takes its own
# branch": ``canonicalize`` expands it into both regions and a select (``expand_lanes``), after
# every transform. Differentiating the op rather than its expansion is what keeps the untaken
# branch out of derivatives: the jvp and vjp of a per-element cond are per-element conds of the
# branches' jvp and vjp, whose results are *selected*, so a NaN or an infinity that the untaken
# branch computes is never multiplied by a zero. Checks (bounds, empty reductions) inside the
# branches are guarded by the predicate, so the untaken branch raises nothing either.
#
# A while whose predicate is batched runs while any element's predicate holds (in windows of
# WHILE_CHUNK elements); each step computes the body for every element and keeps the old
# carried values of the elements that are done (a select), so finished elements stay fixed.

#: the kinds of cond and while ops that batch per element: the explicit functions, and the
#: while a counted loop (kind "for") becomes when its bounds are batched
EXPLICIT = frozenset({"cond", "switch", "while_loop", "for"})


def _check_lanes(pred: TensorType, args: Sequence[TensorType], regions: tuple[Any, ...], k: int) -> None:
    lanes = tuple(pred.shape)
    check(pred.dtype == BOOL and len(lanes) == k,
          f"cond: a per-element predicate must be bool with {k} dims, got {pred}")
    for t in list(args) + [r.type for r in regions[0].results]:
        check(tuple(t.shape[:k]) == lanes,
              f"cond: per-element operands and results must lead with {lanes}, got {t}")


def _interpret_lanes(interp: Any, op: Any, args: list[np.ndarray]) -> list[np.ndarray]:
    pred, *rest = args
    on_true, on_false = (interp.run_block(r, rest) for r in op.regions)
    mask = np.asarray(pred, dtype=bool)
    return [np.where(mask.reshape(mask.shape + (1,) * (np.ndim(t) - mask.ndim)), t, f)
            for t, f in zip(on_true, on_false)]


def has_checks(block: Any) -> bool:
    return any(op.prim is ops.check_p or any(has_checks(r) for r in op.regions) for op in block.ops)


def guard_checks(block: Any, ok_when: bool, lanes: tuple[Any, ...] = ()) -> Any:
    """`block` with one more argument, a bool `taken` (of shape `lanes`, all elements equal):
    every check inside passes when ``taken == ok_when`` (the element does not run this
    region). Nested region ops pass the flag on: as an operand of a cond (spread over the
    lanes of a per-element cond), an unbatched operand of a chunked op, a value a while
    carries unchanged."""
    new = new_block([a.type for a in block.args] + [TensorType(BOOL, lanes)])
    b = Builder(new)
    env: dict[Any, Any] = dict(zip(block.args, new.args))
    with b.at(block.ops[0].loc if block.ops else None):
        flag = new.args[-1]
        if lanes:
            flag = ops.reduce(ops.reduce_or_p, b, flag, tuple(range(len(lanes))))
        ok = flag if ok_when else ops.not_(b, flag)
    for op in block.ops:
        operands = [env[v] for v in op.operands]
        with b.at(op.loc):
            if op.prim is ops.check_p:
                (c,) = operands
                passed = ops.or_(b, c, ops.broadcast_in_dim(b, ok, c.type.shape, ()))
                b.emit(op.prim, [passed], op.params)
                continue
            nested = op.prim in (ops.cond_p, ops.while_p, ops.chunked_p)
            if nested and any(has_checks(r) for r in op.regions):
                params, passed_on, inner = dict(op.params), ok, ()
                if op.params.get("select", 0):
                    inner = tuple(op.operands[0].type.shape)
                    passed_on = ops.broadcast_in_dim(b, ok, inner, ())
                if op.prim is ops.chunked_p:
                    params["batched"] = (*op.params["batched"], False)
                regions = [guard_checks(r, True, inner) for r in op.regions]
                if op.prim is ops.while_p:
                    regions[1].results = [*regions[1].results, regions[1].args[-1]]
                results = b.emit(op.prim, [*operands, passed_on], params, regions)[:len(op.results)]
            else:
                results = b.emit(op.prim, operands, op.params, op.regions)
        env.update(zip(op.results, results))
    new.results = [env[v] for v in block.results]
    return new


def _lane_mask(b: Any, p: Any, bdim: int | None, size: Any) -> Any:
    """A batched single-element predicate as a bool vector over the batch."""
    v = ops.reshape(b, batched_at(b, p, bdim, 0, size), (size,))
    return v if v.type.dtype == BOOL else ops.ne(b, v, ops.full_like(b, 0, v))


def _vmap_cond_lanes(b: Any, op: Any, args: list[Any], bdims: list[Any], size: Any) -> tuple:
    """A per-element cond (see above); an outer vmap of one adds a leading lane axis."""
    k = op.params.get("select", 0)
    regions = list(op.regions)
    pred, *rest = args
    rest = [batched_at(b, a, d, 0, size) for a, d in zip(rest, bdims[1:])]
    if k:
        mask = batched_at(b, pred, bdims[0], 0, size)
    else:
        mask = _lane_mask(b, pred, bdims[0], size)
        if any(has_checks(r) for r in regions):
            regions = [guard_checks(r, ok_when) for r, ok_when in zip(regions, (False, True))]
            rest.append(mask)
    n_out = len(op.results)
    new_regions = [drivers().vmap_block(r, [0] * len(rest), size, [0] * n_out)[0] for r in regions]
    results = b.emit(op.prim, [mask, *rest], {**op.params, "select": k + 1}, new_regions)
    return list(results), [0] * n_out


def _costly(block: Any) -> bool:
    """Worth skipping when no element takes it: nested control flow, or a non-fused op."""
    return any(op.regions or op.prim.kind in (OPAQUE, CONTROL) for op in block.ops)


def expand_lanes(b: Any, op: Any) -> list[Any] | None:
    """A per-element cond as both regions and a select (None: an ordinary cond).

    A region with nested control flow or an opaque op (a matrix product, a host callback)
    is run only when some element takes it: inside an ordinary cond on `any(mask)`, whose
    other side yields zeros (discarded by the select). Elementwise branches run
    unconditionally: the fused loop computes both and selects, which costs less than a
    branch per element and vectorizes."""
    k = op.params.get("select", 0)
    if not k:
        return None
    pred, *args = op.operands
    branches = []
    for region, mask in zip(op.regions, (pred, None)):
        if not _costly(region):
            branches.append(inline_block(b, region, args))
            continue
        taken = mask if mask is not None else ops.not_(b, pred)
        some = ops.reduce(ops.reduce_or_p, b, taken, tuple(range(k)))
        skip = new_block([a.type for a in args])
        with b.inside(skip):
            skip.results = [ops.full(b, 0, r.type) for r in region.results]
        params = {key: v for key, v in op.params.items() if key != "select"}
        branches.append(list(b.emit(op.prim, [some, *args], params, [region, skip])))
    return [ops.select(b, _spread(b, pred, t.type.shape), t, f) for t, f in zip(*branches)]


def _spread(b: Any, mask: Any, shape: Any) -> Any:
    """A mask over the leading axes broadcast to `shape`."""
    if tuple(mask.type.shape) == tuple(shape):
        return mask
    return ops.broadcast_in_dim(b, mask, shape, tuple(range(mask.type.ndim)))


#: batch elements per window of a masked while (see _vmap_while_masked)
WHILE_CHUNK = 32


def _vmap_while_masked(b: Any, op: Any, args: list[Any], bdims: list[Any], size: Any,
                       carried: list[Any]) -> tuple:
    """Run while any element's predicate holds; finished elements keep their values.

    A batch larger than WHILE_CHUNK runs in windows of WHILE_CHUNK elements (a ``chunked``
    op), each window looping until its own elements are done: the lockstep then wastes only
    the steps between a window's slowest element and the others, and a window's carried
    values stay in the L1 cache across its steps (Newton's sqrt on 1e5 elements with 2 to
    14 steps: 3.5x faster than one loop over the whole batch, 5x with a heavy tail of slow
    elements; benchmarks/control_bench.py)."""
    through = [res is arg for arg, res in zip(op.regions[1].args, op.regions[1].results)]
    carried = [c if t else 0 for c, t in zip(carried, through)]
    init = [a if c is None else batched_at(b, a, d, 0, size) for a, d, c in zip(args, bdims, carried)]
    changed = [i for i, t in enumerate(through) if not t]
    if (isinstance(size, int) and size <= WHILE_CHUNK) or not changed:
        outs = inline_block(b, _masked_while(op, carried, through, size), init)
    else:
        _, tail = chunk_counts(size, WHILE_CHUNK)
        regions = [_masked_while(op, carried, through, n) for n in (WHILE_CHUNK, tail)]
        params = {"size": size, "chunk": WHILE_CHUNK, "batched": tuple(c is not None for c in carried),
                  "kind": op.params.get("kind", "")}
        outs = list(b.emit(ops.chunked_p, init, params, regions))
    results = list(init)             # a value the body passes through is its initial value
    for i, out in zip(changed, outs):
        results[i] = out
    return results, carried


def _masked_while(op: Any, carried: list[Any], through: list[bool], size: Any) -> Any:
    """A block (operands batched at 0 where `carried` says) running the masked loop on
    `size` elements; it yields the carried values the body changes."""
    cond_block, body = op.regions
    vcond, (pred_bdim,) = drivers().vmap_block(cond_block, carried, size)
    vbody, _ = drivers().vmap_block(body, carried, size, carried)
    types = [a.type for a in vbody.args]
    new_cond, new_body, outer = new_block(types), new_block(types), new_block(types)
    cb = Builder(new_cond, op.loc)
    (p,) = inline_block(cb, vcond, new_cond.args)
    new_cond.results = [ops.reduce(ops.reduce_or_p, cb, _lane_mask(cb, p, pred_bdim, size), (0,))]
    bb = Builder(new_body, op.loc)
    (p,) = inline_block(bb, vcond, new_body.args)
    running = _lane_mask(bb, p, pred_bdim, size)
    stepped = inline_block(bb, vbody, new_body.args)
    new_body.results = [
        old if t else ops.select(bb, _spread(bb, running, new.type.shape), new, old)
        for old, new, t in zip(new_body.args, stepped, through)]
    results = Builder(outer, op.loc).emit(op.prim, outer.args, op.params, [new_cond, new_body])
    outer.results = [r for r, t in zip(results, through) if not t]
    return outer


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
        _reject_reverse_while(op)
    return [c if t else None for c, t in zip(cts, through)]


def _reject_reverse_while(op: Any) -> None:
    kind = op.params.get("kind", "")
    loop = {"while_loop": "compiler.while_loop", "for": "loop"}.get(kind, "`while` loop")
    raise DataDependentControlFlowError(
        f"reverse-mode differentiation through a {loop} whose trip count depends on data",
        op.loc, "run a number of steps known before the loop starts with compiler.fori_loop or "
                "compiler.scan (or a static loop, for i in range(n)), or use forward mode "
                "(jvp, jacfwd)")


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
    if "kind" in op.params:                 # the windows of a masked while (vmap)
        _reject_reverse_while(op)
    raise UnsupportedError("reverse-mode differentiation of vmap(..., chunk_size=...) is not supported",
                           op.loc, "differentiate the function and vmap the result with chunk_size "
                                   "(e.g. jacrev(f, chunk_size=...)), or drop chunk_size")


define(cond, jvp_rule=_jvp_cond, vjp_rule=_vjp_cond)
define(while_, jvp_rule=_jvp_while, vjp_rule=_vjp_while)
define(chunked, jvp_rule=_jvp_chunked, vjp_rule=_vjp_chunked)

_ = BOOL
