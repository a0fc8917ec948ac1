"""Loop-carried values: one iteration of a loop body, shared by every loop lowering.

A loop (``while`` in control.py, a counted loop alike) keeps its carried values in
the op's result buffers; `lower_carried_body` emits one iteration of the body so
that afterwards they hold the body's results. Each carried value is one of three
cases:

* **pass-through**: the body yields its own argument unchanged (a loop invariant:
  regions are isolated, so a loop carries every array it reads). Nothing is
  computed, copied or allocated for it.
* **in place**: the body yields a chain of updates of its own argument,
  ``x1 = dynamic_update_slice(x, row, i)``, ``x2 = scatter(x1, ...)``, ...
  (``update_slice`` too: ``D[i, j] = ...``, ``x[i] = row``), and nothing reads a
  value of the chain once the next update has overwritten it. Every value of the
  chain then lives in the carried buffer and each update writes only its window:
  the cost per iteration is the window, not the array.
* **copied**: anything else is computed into a temporary and copied back after the
  body (the carried buffers keep the old values while the body runs, so a body
  may read every old value in any order, and two results may swap).

The in-place condition, precisely. Write the chain ``x0 = x`` (the block
argument), ``x_j = U_j(x_{j-1}, ...)`` for ``j = 1..m``, ``x_m`` the yielded value.
The backend evaluates an op where fusion puts it: a materialized value (and an
opaque or control op) at the op's place in the block; a fused value inside the
loop nest of its group's root, i.e. at the root's place; a cheap value (a
slice or index remap of a buffer) wherever each of its consumers is evaluated.
Update ``U_j`` may write into ``x_{j-1}``'s buffer when every read of
``x_{j-1}`` other than ``U_j``'s own operand 0 is evaluated strictly before
``U_j``:

* a reader fused into ``U_j`` itself (the update value ``x[i - 1] + 1`` of
  ``x[i] = x[i - 1] + 1``, a start index ``argmax(x)``) or into a later op reads
  the buffer too late; when the reader op comes before ``U_j`` in the block it is
  materialized instead (it then runs at its own place, into a temporary of its
  own size: a row, an element), otherwise the value is copied;
* except a read of exactly the window ``U_j`` writes (the same start values and
  sizes) that reaches ``U_j`` only as its update operand through fused
  elementwise ops and reshapes, as in ``x[i] = x[i] * 0.5 + 1``: the update's
  store loop reads each element right before writing it, so it needs no
  temporary;
* ``x_{j-1}`` must not be yielded itself (the same old array in another carried
  slot, or ``x`` passed through next to its update), nor read by an op after
  ``U_j`` (``old = x[i]; x[i] = v; ... old ...`` with ``old`` used only after the
  update is materialized before it; a read placed after the update is not);
* the chain's last value may be yielded several times: one slot is updated in
  place, the others are copies of it.

A ``cond`` in the chain (``if a[i, 0] > 0: a[i] = ...``) is a link when every
branch yields, in that result, one region argument (the same in both) updated
by a chain of its own or passed through, and each branch passes the same
condition inside its region (`plan_block`): the cond's result then gets its
operand's buffer and the branches update it where it lives (`cond_in_place`).
A nested loop carrying the array is a link the same way (`LOOPS`).

The cond region of a ``while`` reads the carried buffers before the body starts,
so it never sees a partial update.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from compiler.backend.buffers import Buffer
from compiler.backend.fusion import Evaluation, Schedule, schedule
from compiler.ir.core import Block, Op, Value
from compiler.ir.primitive import CONTROL, ELEMENTWISE, OPAQUE
from compiler.primitives import ops

PASS, IN_PLACE, COPY = "pass", "in place", "copy"
_UPDATES = (ops.dynamic_update_slice_p, ops.update_slice_p, ops.scatter_p)
# loop ops, by the position of their first carried operand: a nested loop that carries an
# array from its initial value is an update of it (its lowering writes the array where it
# already lives, see enter_loop)
LOOPS: dict[Any, int] = {ops.while_p: 0, ops.for_p: 2}


@dataclass
class CarryPlan:
    """How each carried value of a loop body is handled (module docstring)."""

    modes: list[str]
    chains: list[list[Value]]           # per carried value: x_1 .. x_m when updated in place
    force: set[Value] = field(default_factory=set)   # readers materialized before an update


def enter_loop(cg: Any, op: Op, init: Sequence[Value], body: Block, n_extra: int = 0) -> list[Buffer]:
    """Before a loop op: the buffers its carried values live in. A value the body passes
    through stays in its initial value's buffer (nothing writes it while the loop runs);
    the others start as copies of their initial values in the op's result buffers (no
    copy when the initial value already lives there: an inner loop updating an outer
    loop's array in place)."""
    carried: list[Buffer] = []
    for k, (v, r) in enumerate(zip(init, op.results)):
        if body.results[k] is body.args[n_extra + k]:
            carried.append(cg.buffers[v])
            continue
        buf = cg.buffers[r]
        if cg.buffers[v] is not buf:
            cg.copy(cg.buffers[v], buf)
        carried.append(buf)
    return carried


def exit_loop(cg: Any, op: Op, carried: Sequence[Buffer]) -> None:
    """After a loop op: a passed-through value that is used after the loop is copied into
    its result buffer, once."""
    used = cg.sched.used if cg.sched is not None else None
    for r, buf in zip(op.results, carried):
        out = cg.buffers[r]
        if buf is not out and (used is None or r in used):
            cg.copy(buf, out)


def lower_carried_body(cg: Any, body: Block, carried: Sequence[Buffer],
                       extra_args: Sequence[Buffer] = ()) -> CarryPlan:
    """One iteration of a loop body ``(*extra, *carried) -> carried`` whose carried values
    live in `carried` (from `enter_loop`): afterwards they hold the body's results.
    `extra_args` are buffers of the leading non-carried block arguments (a counted loop's
    index). Returns the plan it followed.

    A loop lowering is: ``carried = enter_loop(cg, op, init, body, n_extra)``, then per
    iteration ``lower_carried_body(cg, body, carried, extra)``, then
    ``exit_loop(cg, op, carried)``."""
    plan = plan_carries(body, len(extra_args))
    outs: list[Buffer] = []
    assign: dict[Value, Buffer] = {}
    for k, (buf, mode) in enumerate(zip(carried, plan.modes)):
        if mode == COPY:
            outs.append(cg.allocate(body.results[k]))
        else:
            outs.append(buf)
            assign.update((v, buf) for v in plan.chains[k])
    cg._cache.append({})
    cg.lower_block(body, [*extra_args, *carried], outs, assign=assign, force=plan.force)
    cg._cache.pop()
    for out, buf, mode in zip(outs, carried, plan.modes):
        if mode == COPY:
            cg.copy(out, buf)
    return plan


def plan_carries(body: Block, n_extra: int = 0) -> CarryPlan:
    """Decide pass-through / in place / copy for each carried value of `body` (whose first
    `n_extra` arguments are not carried), and which readers to materialize so that the
    in-place updates are safe."""
    return plan_block(body, [(n_extra + k, k) for k in range(len(body.results))])


def plan_block(block: Block, pairs: Sequence[tuple[int, int]]) -> CarryPlan:
    """`plan_carries` for the given (argument, result) pairs of any block: may result r be
    computed in argument a's buffer? (A loop body: each carried value; a cond region: the
    operand a cond updates in place, module docstring.)"""
    modes: list[str] = []
    chains: list[list[Value]] = []
    for a, r in pairs:
        arg, res = block.args[a], block.results[r]
        chain = _update_chain(arg, res)
        modes.append(PASS if res is arg else IN_PLACE if chain else COPY)
        chains.append(chain or [])
    plan = CarryPlan(modes, chains)
    if IN_PLACE not in modes:
        return plan
    yielded: dict[Value, int] = {}
    for y in block.results:
        yielded[y] = yielded.get(y, 0) + 1
    for _ in range(4):      # forcing a reader changes the schedule: check again
        evaluated = Evaluation(schedule(block, plan.force))
        users, place = evaluated.users, evaluated.place
        added = False
        for k, mode in enumerate(plan.modes):
            if mode != IN_PLACE:
                continue
            fix = _unsafe_reads(block.args[pairs[k][0]], plan.chains[k], users, place, yielded,
                                evaluated)
            if fix is None:
                plan.modes[k] = COPY
            elif fix:
                plan.force |= fix
                added = True
        if not added:
            return plan
    for k, mode in enumerate(plan.modes):     # still moving after a few rounds: give up
        if mode == IN_PLACE:
            plan.modes[k] = COPY
    return plan


def cond_in_place(cg: Any, op: Op) -> list[tuple[int, int]]:
    """The (region argument, result) pairs of a cond whose result was given its operand's
    buffer by an enclosing loop's plan (the cond is a link of an in-place chain)."""
    pairs: list[tuple[int, int]] = []
    for s, r in enumerate(op.results):
        o = _cond_link(op, s)
        if o is not None and cg.buffers[r] is cg.buffers[op.operands[1 + o]]:
            pairs.append((o, s))
    return pairs


def _cond_link(op: Op, s: int) -> int | None:
    """The region argument that every branch of cond `op` updates (or passes through) into
    its result `s`, or None."""
    found: int | None = None
    for region in op.regions:
        v = region.results[s]
        while v not in region.args:
            slot = _chained_operand(v)
            if slot is None:
                return None
            assert v.op is not None
            v = v.op.operands[slot]
        o = region.args.index(v)
        if found is not None and o != found:
            return None
        found = o
    return found


def _chained_operand(v: Value) -> int | None:
    """Which operand of its op `v` updates: 0 for the update ops, the carried value's
    initial value for a loop op; None for any other op."""
    op = v.op
    if op is None:
        return None
    if op.prim in _UPDATES:
        return 0
    if op.prim in LOOPS:
        return LOOPS[op.prim] + op.results.index(v)
    if op.prim is ops.cond_p:
        o = _cond_link(op, op.results.index(v))
        return None if o is None else 1 + o
    return None


def _update_chain(arg: Value, res: Value) -> list[Value] | None:
    """x_1 .. x_m when `res` is a chain of update ops applied to `arg` (module docstring)."""
    chain: list[Value] = []
    v = res
    while v is not arg:
        slot = _chained_operand(v)
        if slot is None:
            return None
        assert v.op is not None
        chain.append(v)
        v = v.op.operands[slot]
    return chain[::-1] or None


def _unsafe_reads(arg: Value, chain: list[Value], users: dict[Value, list[tuple[Op, int]]],
                  place: dict[Op, int], yielded: dict[Value, int], evaluated: Evaluation
                  ) -> set[Value] | None:
    """None when the chain cannot be updated in place; else the values to materialize so that
    it can (empty: safe as scheduled)."""
    fix: set[Value] = set()
    prev = arg
    for v in chain:
        update = v.op
        assert update is not None
        at = place[update]
        if prev in yielded:                       # the old value is a result too
            return None
        if update.prim is ops.cond_p:             # every branch must update it safely too
            s = update.results.index(v)
            o = _chained_operand(v)
            assert o is not None
            for region in update.regions:
                if plan_block(region, [(o - 1, s)]).modes == [COPY]:
                    return None
        for reader, slot in users.get(prev, []):
            if reader is update and slot == _chained_operand(v):
                continue
            if all(p < at for p in evaluated.places(reader)):
                continue
            if _own_window(reader, update, users, evaluated.sched, place):
                continue
            if reader is update or place[reader] > at or reader.prim.kind in (OPAQUE, CONTROL) \
                    or not reader.results:
                return None                       # reads the old value at or after the update
            fix.update(reader.results)
        prev = v
    return fix


def _own_window(reader: Op, update: Op, users: dict[Value, list[tuple[Op, int]]],
                sched: Schedule, place: dict[Op, int]) -> bool:
    """Does `reader` read exactly the window `update` writes, and reach the update only as
    its update operand through fused elementwise ops and reshapes (``x[i] = x[i] * 2``)?
    Then the update's store loop reads each element just before writing it, at the same
    place: in place is safe without a temporary for the window."""
    if update.prim is ops.dynamic_update_slice_p:
        same = (reader.prim is ops.dynamic_slice_p and reader.operands[1:] == update.operands[2:]
                and tuple(reader.params["sizes"]) == tuple(update.operands[1].type.shape))
    elif update.prim is ops.update_slice_p:
        same = reader.prim is ops.slice_p and all(
            tuple(reader.params[k]) == tuple(update.params[k])
            for k in ("start_indices", "limit_indices", "strides"))
    else:
        same = False
    if not same:
        return False
    at = place[update]
    stack, seen = [reader.results[0]], set()
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        for user, slot in users.get(v, []):
            if user is update:
                if slot != 1:
                    return False
            elif user.prim.kind in (OPAQUE, CONTROL) or not user.results \
                    or sched.is_materialized(user.results[0]):
                if place[user] > at:              # evaluated at its own place, after the update
                    return False
            elif user.prim.kind == ELEMENTWISE or user.prim is ops.reshape_p:
                stack.extend(user.results)
            else:
                return False
    return True
