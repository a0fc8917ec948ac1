"""Counted loops: the ``for`` primitive that Python loops, ``fori_loop`` and ``scan`` share.

``for(start, stop, *carried) {step, trip, checkpoint?}`` runs its body region
``(i, *carried) -> carried`` for ``i`` in ``range(start, stop, step)``: ``start`` and
``stop`` are int64 scalars (run-time values), ``step`` a static nonzero int. ``trip``
is the number of iterations as a dim when it is known from static values and input
shapes (``None`` when a bound is a run-time value): reverse mode needs it to size the
tape of carried values before the loop starts.

    %r = for(%lo, %hi, %acc, %x) {step=1, trip=n} {
      ^(%i: i64[], %acc: f64[], %x: f64[n]):
        %row = dynamic_slice(%x, %i) {sizes=(1,)} ...
        yield %acc2, %x
    }

Regions are isolated: the body sees only its arguments, so loop invariants are
carried and yielded unchanged (the backend neither copies nor tapes those).

Transform rules:

* vmap: unbatched bounds batch the body (a carried value batched after one step stays
  batched); batched bounds turn the loop into a ``while`` on the index (each batch
  element runs its own trip count) and batch that.
* jvp: the body's jvp, carrying a tangent per float value.
* vjp: a forward loop that writes the carried values each iteration reads into a
  tape of ``trip`` rows (values the body only passes through, or only overwrites in
  part, are not taped: ``update_only``), then a loop running backwards over the tape
  with the body's vjp. ``checkpoint=s`` stores the carries every s iterations and
  recomputes a segment's tape in the backward loop. A loop whose trip count is a
  run-time value keeps a fixed number of checkpoints and segment rows (``_runtime_trip``).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from compiler.ir import dims
from compiler.ir.builder import Builder, new_block
from compiler.ir.core import Block, Value
from compiler.ir.dims import Dim
from compiler.ir.primitive import define
from compiler.ir.types import I64, TensorType
from compiler.primitives import ad, ops
from compiler.primitives.base import check
from compiler.primitives.batching import batched_at, inline_block, rule_by_decomposition
from compiler.primitives.regions import drivers

Types = tuple[TensorType, ...]
INDEX_TYPE = TensorType(I64, ())


def trip_count(start: Dim, stop: Dim, step: int) -> Dim:
    """len(range(start, stop, step)) as a dim."""
    if step > 0:
        return dims.clamp0(dims.floordiv(dims.add(dims.add(stop, dims.mul(start, -1)), step - 1), step))
    return dims.clamp0(dims.floordiv(dims.add(dims.add(start, dims.mul(stop, -1)), -step - 1), -step))


def _rule(in_types: Types, params: dict[str, Any], regions: tuple[Any, ...]) -> Types:
    check(len(regions) == 1, "for: needs one body region")
    check(isinstance(params["step"], int) and params["step"] != 0, "for: step must be a nonzero int")
    segment = params.get("checkpoint")
    check(segment is None or (isinstance(segment, int) and segment >= 1),
          "for: checkpoint must be a positive int (iterations per stored carry)")
    start, stop, *carried = in_types
    check(start == INDEX_TYPE and stop == INDEX_TYPE, f"for: bounds must be i64 scalars, got {start}, {stop}")
    (body,) = regions
    args = [a.type for a in body.args]
    check(args == [INDEX_TYPE, *carried], f"for: body arguments {args} must be (i64[], {carried})")
    res = [r.type for r in body.results]
    check(res == list(carried), f"for: the body must yield the carried types {carried}, got {res}")
    return tuple(carried)


def _interpret(interp: Any, op: Any, args: list[np.ndarray]) -> list[np.ndarray]:
    start, stop, *values = args
    for i in range(int(start), int(stop), op.params["step"]):
        values = interp.run_block(op.regions[0], [np.int64(i), *values])
    return values


def pass_through(body: Block) -> list[bool]:
    """Per carried value: does the body yield its argument unchanged (a loop invariant)?"""
    return [res is arg for arg, res in zip(body.args[1:], body.results)]


_UPDATES = ("dynamic_update_slice", "update_slice", "scatter")


def update_only(body: Block) -> list[bool]:
    """Per carried value: is it only ever overwritten in part (``y[i] = v`` on the carried
    array, a chain of dynamic_update_slice / update_slice / scatter whose end is yielded in
    its place) and read nowhere else? Its value then never reaches the results except
    through the windows that pass through, so its derivative does not depend on it: reverse
    mode needs no tape of it."""
    uses: dict[Value, int] = {}
    for op in body.ops:
        for v in op.operands:
            uses[v] = uses.get(v, 0) + 1
        for r in op.regions:
            for inner in _free_in(r):
                uses[inner] = uses.get(inner, 0) + 1
    for v in body.results:
        uses[v] = uses.get(v, 0) + 1
    out: list[bool] = []
    for arg, res in zip(body.args[1:], body.results):
        v, ok = res, res is not arg
        while ok and v is not arg:
            producer = v.op
            ok = producer is not None
            if producer is None:
                break
            op = producer
            ok = (op.prim.name in _UPDATES and uses.get(op.operands[0], 0) == 1
                  and all(o is not op.operands[0] for o in op.operands[1:])
                  and (op.prim.name != "scatter" or op.params.get("mode") == "set"))
            v = op.operands[0] if ok else v
        out.append(ok and uses.get(res, 0) == 1)
    return out


def _free_in(block: Block) -> list[Value]:
    defined = set(block.args)
    out: list[Value] = []
    for op in block.ops:
        out.extend(v for v in op.operands if v not in defined)
        defined.update(op.results)
    return out


def _vmap(b: Any, op: Any, args: list[Any], bdims: list[Any], size: Any) -> tuple:
    if bdims[0] is not None or bdims[1] is not None:
        return rule_by_decomposition(_as_while)(b, op, args, bdims, size)
    (body,) = op.regions
    carried = [None if d is None else 0 for d in bdims[2:]]
    while True:                                   # a value batched after one step stays batched
        _, after = drivers().vmap_block(body, [None, *carried], size)
        grown = [0 if c is not None or a is not None else None for c, a in zip(carried, after)]
        if grown == carried:
            break
        carried = grown
    region, _ = drivers().vmap_block(body, [None, *carried], size, carried)
    init = [a if c is None else batched_at(b, a, d, 0, size)
            for a, d, c in zip(args[2:], bdims[2:], carried)]
    return list(b.emit(op.prim, [args[0], args[1], *init], op.params, [region])), carried


def _as_while(b: Builder, op: Any, args: Sequence[Value]) -> list[Value]:
    """The loop as a ``while`` over (i, stop, *carried): what batched bounds need."""
    step = op.params["step"]
    types = [INDEX_TYPE, INDEX_TYPE, *[a.type for a in args[2:]]]
    test = new_block(types)
    tb = Builder(test, op.loc)
    less = ops.lt if step > 0 else ops.gt
    test.results = [less(tb, test.args[0], test.args[1])]
    body = new_block(types)
    bb = Builder(body, op.loc)
    carried = inline_block(bb, op.regions[0], [body.args[0], *body.args[2:]])
    body.results = [ops.add(bb, body.args[0], ops.scalar(bb, step, I64)), body.args[1], *carried]
    results = b.emit(ops.while_p, list(args), {"kind": "for"}, [test, body])
    return list(results[2:])


def _float(v: Any) -> bool:
    return v.dtype.kind == "f"


def _jvp(b: Any, op: Any, primals: list[Any], tangents: list[Any]) -> tuple:
    carried = primals[2:]
    active = [_float(v) for v in carried]
    ts = [ad.instantiate(b, t, p) for t, p, on in zip(tangents[2:], carried, active) if on]
    region, _ = drivers().jvp_block(op.regions[0], [False, *active])
    results = b.emit(op.prim, [*primals, *ts], op.params, [region])
    n = len(op.results)
    rest = iter(results[n:])
    return list(results[:n]), [next(rest) if on else None for on in active]


def _vjp(b: Any, op: Any, primals: list[Any], outs: list[Any], cts: list[Any]) -> list[Any]:
    """Tape the carried values the body changes, then run the body's vjp backwards. With
    ``checkpoint=s``, store the carry only every `s` iterations and recompute each segment's
    tape during the backward pass (memory: trip / s + s rows instead of trip)."""
    trip = op.params["trip"]
    (body,) = op.regions
    start, stop, *init = primals
    step = op.params["step"]
    # values the body passes through, or only overwrites in part, need no tape: the backward
    # body reads their final value (an invariant's value; any value of an overwritten one)
    invariant = pass_through(body)
    through = [t or u for t, u in zip(invariant, update_only(body))]
    taped = [j for j, t in enumerate(through) if not t]
    active = [_float(v) for v in init]
    loop = _Loop(body, step, taped, through, active, op.loc,
                 drivers().vjp_block(body, [False, *active], with_primals=False))
    cts0 = [ad.instantiate(b, c, o) for c, o, on in zip(cts, outs, active) if on]
    invariants = [init[j] if invariant[j] else outs[j] for j, t in enumerate(through) if t]
    segment = op.params.get("checkpoint")
    if trip is None:
        new = _runtime_trip(b, loop, start, stop, init, invariants, cts0)
    elif segment is None or (isinstance(trip, int) and trip <= segment):
        tapes = loop.record(b, start, stop, init, trip, trip)
        new = loop.backward(b, start, _trip_value(b, trip), trip, tapes, invariants, cts0)
    else:
        new = _checkpointed(b, loop, start, stop, init, trip, segment, invariants, cts0)
    final = iter(new)
    return [None, None] + [next(final) if on else None for on in active]


class _Loop:
    """What the reverse-mode pieces of one loop share."""

    def __init__(self, body: Block, step: int, taped: list[int], through: list[bool],
                 active: list[bool], loc: Any, grad_body: Block) -> None:
        self.body, self.step, self.taped, self.through = body, step, taped, through
        self.active, self.loc, self.grad_body = active, loc, grad_body

    def record(self, b: Any, start: Value, stop: Value, init: Sequence[Value], rows: Dim,
               trip: Dim | None) -> list[Value]:
        """Run the loop from `init`, writing each taped carry at the top of every iteration
        into row (i - start) / step of a (rows, ...) tape."""
        if not self.taped:
            return []
        tape_types = [init[j].type.with_shape((rows,) + tuple(init[j].type.shape)) for j in self.taped]
        rec = new_block([INDEX_TYPE, *[v.type for v in init], *tape_types, INDEX_TYPE])
        rb = Builder(rec, self.loc)
        i, state = rec.args[0], rec.args[1:1 + len(init)]
        tapes_in, start_in = rec.args[1 + len(init):-1], rec.args[-1]
        row = ops.sub(rb, i, start_in)
        if self.step != 1:
            row = ops.floordiv(rb, row, ops.scalar(rb, self.step, I64))
        new_tapes = [_write_row(rb, tape, state[j], row) for j, tape in zip(self.taped, tapes_in)]
        nxt = inline_block(rb, self.body, [i, *state])
        rec.results = [*nxt, *new_tapes, start_in]
        empty = [ops.full(b, 0, t) for t in tape_types]
        results = b.emit(ops.for_p, [start, stop, *init, *empty, start],
                         {"step": self.step, "trip": trip}, [rec])
        return list(results[len(init):len(init) + len(self.taped)])

    def backward(self, b: Any, start: Value, count: Value, trip: Dim | None, tapes: list[Value],
                 invariants: list[Value], cts: list[Value], rows: int | None = None) -> list[Value]:
        """The cotangents of the carries before `count` iterations from `start`, given those
        after them, running the body's vjp over the tape's rows in reverse. With `rows`, the
        tape holds only the first `rows` iterations: a later one is recomputed from the last
        row (the iterations between run again)."""
        ct_types = [c.type for c in cts]
        n_ct, n_tape, n_inv = len(cts), len(tapes), len(invariants)
        back = new_block([INDEX_TYPE, *ct_types, *[t.type for t in tapes],
                          *[v.type for v in invariants], INDEX_TYPE, INDEX_TYPE])
        bb = Builder(back, self.loc)
        k = back.args[0]
        ct_in = back.args[1:1 + n_ct]
        tape_in = back.args[1 + n_ct:1 + n_ct + n_tape]
        inv_in = back.args[1 + n_ct + n_tape:1 + n_ct + n_tape + n_inv]
        start_in, count_in = back.args[-2], back.args[-1]
        row = ops.sub(bb, ops.sub(bb, count_in, ops.scalar(bb, 1, I64)), k)   # rows in reverse
        i = ops.add(bb, start_in, ops.mul(bb, row, ops.scalar(bb, self.step, I64)))
        base = row if rows is None else ops.minimum(bb, row, ops.scalar(bb, rows - 1, I64))
        tapes_it, inv_it = iter(tape_in), iter(inv_in)
        state = [next(inv_it) if t else _read_row(bb, next(tapes_it), base) for t in self.through]
        if rows is not None and self.taped:       # run the iterations from the tape's last row
            lo = ops.add(bb, start_in, ops.mul(bb, base, ops.scalar(bb, self.step, I64)))
            state = list(bb.emit(ops.for_p, [lo, i, *state], {"step": self.step, "trip": None},
                                 [self.clone()]))
        new_cts = inline_block(bb, self.grad_body, [i, *state, *ct_in])
        back.results = [*new_cts, *tape_in, *inv_in, start_in, count_in]
        zero = ops.scalar(b, 0, I64)
        results = b.emit(ops.for_p, [zero, count, *cts, *tapes, *invariants, start, count],
                         {"step": 1, "trip": trip}, [back])
        return list(results[:n_ct])


    def clone(self) -> Block:
        """A copy of the body, as the region of another loop."""
        inner = new_block([a.type for a in self.body.args])
        inner.results = inline_block(Builder(inner, self.loc), self.body, inner.args)
        return inner


#: reverse mode of a loop whose trip count is a run-time value: at most this many elements in
#: its checkpoints (two levels) and its segment tape together (2**23 float64 values: 64 MiB),
#: unless 8 tape rows need more
RUNTIME_BUDGET = 2 ** 23


def runtime_rows(loop: "_Loop", types: list[TensorType]) -> tuple[int, int]:
    """(checkpoints per level, segment tape rows) for a loop with a run-time trip count: the
    tape rows between 8 and 512 within the budget (a symbolic dim counts as 4096), a quarter
    of them checkpoints."""
    elems = 0
    for j in loop.taped:
        n = 1
        for d in types[j].shape:
            n *= d if isinstance(d, int) else 4096
        elems += n
    rows = max(8, min(512, RUNTIME_BUDGET // max(1, elems) * 2 // 3))   # 2 * rows / 4 + rows
    return max(8, rows // 4), rows


def _runtime_trip(b: Any, loop: _Loop, start: Value, stop: Value, init: list[Value],
                  invariants: list[Value], cts: list[Value], depth: int = 0) -> list[Value]:
    """Reverse mode of a loop whose trip count T is known only when it starts: the forward
    pass stores the carry at the start of each of at most G segments of
    S = ceil(T / G) iterations (G checkpoints); the backward pass, segment by segment from
    the last, tapes the segment's first C iterations from its checkpoint and runs the
    body's vjp over them in reverse (an iteration beyond the tape is recomputed from its
    last row). A segment of the outermost level is itself differentiated this way (one
    more level of checkpoints), so the time stays linear up to G * G * C iterations, for
    three forward passes and 2 * G + C rows of memory (runtime_rows)."""
    types = [v.type for v in init]
    G, C = runtime_rows(loop, types)
    step = loop.step

    def c(bb: Any, v: int) -> Value:
        return ops.scalar(bb, v, I64)
    span = ops.sub(b, stop, start) if step > 0 else ops.sub(b, start, stop)
    if abs(step) != 1:
        span = ops.floordiv(b, ops.add(b, span, c(b, abs(step) - 1)), c(b, abs(step)))
    total = ops.maximum(b, span, c(b, 0))
    seg = ops.maximum(b, c(b, 1), ops.floordiv(b, ops.add(b, total, c(b, G - 1)), c(b, G)))
    groups = ops.floordiv(b, ops.add(b, total, ops.sub(b, seg, c(b, 1))), seg)

    def bounds(bb: Any, g: Value, start_in: Value, total_in: Value, seg_in: Value
               ) -> tuple[Value, Value, Value]:
        first = ops.mul(bb, g, seg_in)
        lo = ops.add(bb, start_in, ops.mul(bb, first, c(bb, step)))
        count = ops.minimum(bb, seg_in, ops.sub(bb, total_in, first))
        return lo, ops.add(bb, lo, ops.mul(bb, count, c(bb, step))), count

    ck_types = [types[j].with_shape((G,) + tuple(types[j].shape)) for j in loop.taped]
    fwd = new_block([INDEX_TYPE, *types, *ck_types, INDEX_TYPE, INDEX_TYPE, INDEX_TYPE])
    fb = Builder(fwd, loop.loc)
    g, state = fwd.args[0], list(fwd.args[1:1 + len(init)])
    ck_in = fwd.args[1 + len(init):1 + len(init) + len(ck_types)]
    start_in, total_in, seg_in = fwd.args[-3:]
    new_ck = [_write_row(fb, ck, state[j], g) for j, ck in zip(loop.taped, ck_in)]
    lo, hi, _ = bounds(fb, g, start_in, total_in, seg_in)
    nxt = fb.emit(ops.for_p, [lo, hi, *state], {"step": step, "trip": None}, [loop.clone()])
    fwd.results = [*nxt, *new_ck, start_in, total_in, seg_in]
    zero = c(b, 0)
    res = b.emit(ops.for_p, [zero, groups, *init, *[ops.full(b, 0, t) for t in ck_types],
                             start, total, seg], {"step": 1, "trip": None}, [fwd])
    checkpoints = list(res[len(init):len(init) + len(ck_types)])
    n_ct, n_ck, n_inv = len(cts), len(checkpoints), len(invariants)
    back = new_block([INDEX_TYPE, *[v.type for v in cts], *ck_types, *[v.type for v in invariants],
                      INDEX_TYPE, INDEX_TYPE, INDEX_TYPE, INDEX_TYPE])
    bb = Builder(back, loop.loc)
    gg = back.args[0]
    ct_in = list(back.args[1:1 + n_ct])
    cks = back.args[1 + n_ct:1 + n_ct + n_ck]
    inv_in = list(back.args[1 + n_ct + n_ck:1 + n_ct + n_ck + n_inv])
    start_b, total_b, seg_b, groups_b = back.args[-4:]
    gr = ops.sub(bb, ops.sub(bb, groups_b, c(bb, 1)), gg)
    lo, _, count = bounds(bb, gr, start_b, total_b, seg_b)
    ck_it, inv_it = iter(cks), iter(inv_in)
    seg_init = [next(inv_it) if t else _read_row(bb, next(ck_it), gr) for t in loop.through]
    if depth == 0:
        hi = ops.add(bb, lo, ops.mul(bb, count, c(bb, step)))
        new_cts = _runtime_trip(bb, loop, lo, hi, seg_init, inv_in, ct_in, depth + 1)
    else:
        filled = ops.minimum(bb, count, c(bb, C))
        tapes = loop.record(bb, lo, ops.add(bb, lo, ops.mul(bb, filled, c(bb, step))), seg_init,
                            C, None)
        new_cts = loop.backward(bb, lo, count, None, tapes, inv_in, ct_in, rows=C)
    back.results = [*new_cts, *cks, *inv_in, start_b, total_b, seg_b, groups_b]
    res = b.emit(ops.for_p, [zero, groups, *cts, *checkpoints, *invariants, start, total, seg, groups],
                 {"step": 1, "trip": None}, [back])
    return list(res[:n_ct])


def _write_row(b: Any, tape: Value, v: Value, row: Value) -> Value:
    zero = ops.scalar(b, 0, I64)
    piece = ops.reshape(b, v, (1,) + tuple(v.type.shape))
    return ops.dynamic_update_slice(b, tape, piece, [row] + [zero] * v.type.ndim)


def _read_row(b: Any, tape: Value, row: Value) -> Value:
    shape = tuple(tape.type.shape[1:])
    zero = ops.scalar(b, 0, I64)
    return ops.reshape(b, ops.dynamic_slice(b, tape, [row] + [zero] * len(shape), (1,) + shape), shape)


def _checkpointed(b: Any, loop: _Loop, start: Value, stop: Value, init: list[Value], trip: Dim,
                  segment: int, invariants: list[Value], cts: list[Value]) -> list[Value]:
    """Reverse mode storing the taped carries every `segment` iterations: a forward loop over
    the segments keeps their first carries; the backward loop over the segments, last first,
    recomputes one segment's tape from its checkpoint and runs the body's vjp over it."""
    groups = dims.floordiv(dims.add(trip, segment - 1), segment)
    types = [v.type for v in init]

    def bounds(bb: Any, g: Value, start_in: Value, trip_in: Value) -> tuple[Value, Value, Value]:
        """(first index, stop, iterations) of segment g."""
        first = ops.mul(bb, g, ops.scalar(bb, segment, I64))
        lo = ops.add(bb, start_in, ops.mul(bb, first, ops.scalar(bb, loop.step, I64)))
        count = ops.minimum(bb, ops.scalar(bb, segment, I64), ops.sub(bb, trip_in, first))
        hi = ops.add(bb, lo, ops.mul(bb, count, ops.scalar(bb, loop.step, I64)))
        return lo, hi, count

    # forward: checkpoint rows
    ck_types = [types[j].with_shape((groups,) + tuple(types[j].shape)) for j in loop.taped]
    fwd = new_block([INDEX_TYPE, *types, *ck_types, INDEX_TYPE, INDEX_TYPE])
    fb = Builder(fwd, loop.loc)
    g, state = fwd.args[0], list(fwd.args[1:1 + len(init)])
    ck_in = fwd.args[1 + len(init):1 + len(init) + len(ck_types)]
    start_in, trip_in = fwd.args[-2], fwd.args[-1]
    new_ck = [_write_row(fb, ck, state[j], g) for j, ck in zip(loop.taped, ck_in)]
    lo, hi, _ = bounds(fb, g, start_in, trip_in)
    inner = new_block([INDEX_TYPE, *types])
    inner.results = inline_block(Builder(inner, loop.loc), loop.body, inner.args)
    nxt = fb.emit(ops.for_p, [lo, hi, *state], {"step": loop.step, "trip": None}, [inner])
    fwd.results = [*nxt, *new_ck, start_in, trip_in]
    trip_v = _trip_value(b, trip)
    zero = ops.scalar(b, 0, I64)
    res = b.emit(ops.for_p, [zero, _trip_value(b, groups), *init,
                             *[ops.full(b, 0, t) for t in ck_types], start, trip_v],
                 {"step": 1, "trip": groups}, [fwd])
    checkpoints = list(res[len(init):len(init) + len(ck_types)])
    # backward over the segments
    n_ct, n_ck, n_inv = len(cts), len(checkpoints), len(invariants)
    back = new_block([INDEX_TYPE, *[c.type for c in cts], *ck_types,
                      *[v.type for v in invariants], INDEX_TYPE, INDEX_TYPE, INDEX_TYPE])
    bb = Builder(back, loop.loc)
    gg = back.args[0]
    ct_in = list(back.args[1:1 + n_ct])
    ck_in = back.args[1 + n_ct:1 + n_ct + n_ck]
    inv_in = list(back.args[1 + n_ct + n_ck:1 + n_ct + n_ck + n_inv])
    start_in, trip_in, groups_in = back.args[-3], back.args[-2], back.args[-1]
    g = ops.sub(bb, ops.sub(bb, groups_in, ops.scalar(bb, 1, I64)), gg)
    lo, hi, count = bounds(bb, g, start_in, trip_in)
    cks, invs = iter(ck_in), iter(inv_in)
    seg_init = [next(invs) if t else _read_row(bb, next(cks), g) for t in loop.through]
    tapes = loop.record(bb, lo, hi, seg_init, segment, None)
    new_cts = loop.backward(bb, lo, count, None, tapes, inv_in, ct_in)
    back.results = [*new_cts, *ck_in, *inv_in, start_in, trip_in, groups_in]
    groups_v = _trip_value(b, groups)
    res = b.emit(ops.for_p, [zero, groups_v, *cts, *checkpoints, *invariants, start, trip_v, groups_v],
                 {"step": 1, "trip": groups}, [back])
    return list(res[:n_ct])


def _trip_value(b: Any, trip: Dim) -> Value:
    return ops.scalar(b, trip, I64) if dims.is_static(trip) else ops.size_of(b, trip, I64)


for_ = define(
    ops.for_p,
    shape_rule=_rule,
    numpy_ref=None,
    interpret=_interpret,
    vmap_rule=_vmap,
    jvp_rule=_jvp,
    vjp_rule=_vjp,
    doc="run the body for i in range(start, stop, step), carrying values",
)
