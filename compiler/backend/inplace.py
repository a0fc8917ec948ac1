"""Updated arguments written where they live: which new values of arguments (``x += y``,
``a[:] = b + s * c``, ``x[1:-1] = ...``, a loop updating rows of ``x``) the kernel computes
directly in the argument's buffer, instead of into an output that the caller then copies
into its array (docs/guide.md, "In-place updates of arguments").

Under plain ``jit`` the kernel's last results are the new values of the arguments it writes
into (``Program.updates``). Result ``r``, the new value of argument ``x``, may be computed in
``x``'s buffer when no read of ``x``'s old value happens after, or in the same loop as, a
write of another element:

* ``r`` is a chain of updates of ``x`` (slice assignments, scatters, loops carrying ``x``, a
  ``cond`` updating it): the condition of a loop-carried array in place, decided by
  ``carries.plan_block`` for the function body as for a loop body (its docstring states it);
  readers placed before an update are materialized first when that makes it safe;
* ``r`` is the root of a fused elementwise loop (``u + dt * sin(u)``): every reader of ``x``
  is evaluated strictly before that loop (a reduction ``x.sum()``, an operand of a matrix
  product, a value materialized earlier), or reaches ``r`` only through elementwise ops of
  that loop, which read ``x`` at the index they write, before writing it. A shifted,
  reversed or transposed read of ``x`` inside the loop (``np.roll(u, 1)``, ``u[::-1]``,
  ``u.T``) keeps the copy.

A new value that is also returned (``u += 1; return u``) is computed in ``x``'s buffer and
copied into the result's at the end of the call (``Codegen.lower_block``'s `assign`).

Nothing is written in place in a kernel with checks or host calls (``effects``): a failing
check returns an error after some elements were written, where NumPy's statement would not
have written any.

The ABI keeps one output per updated argument: for an argument written in place, the caller
passes the argument's own pointer as that output (``runtime.loader.NativeKernel.in_place``,
the manifest's ``"in_place"``); a caller that passes another buffer (a converted copy, an
older runtime) gets the new value copied there at the end of the call, so every caller is
correct and the aware ones skip the copy.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from compiler.backend.carries import COPY, IN_PLACE, PASS, CarryPlan, plan_block
from compiler.backend.fusion import Evaluation, schedule
from compiler.ir.core import Block, Function, Value
from compiler.ir.primitive import ELEMENTWISE
from compiler.primitives import ops

_UPDATES = (ops.dynamic_update_slice_p, ops.update_slice_p, ops.scatter_p)


@dataclass
class ArgumentPlan:
    """Which results of a kernel are computed in an argument's buffer."""

    pairs: dict[int, int] = field(default_factory=dict)      # result index -> argument index
    assign: dict[Value, int] = field(default_factory=dict)   # value -> argument whose buffer holds it
    force: set[Value] = field(default_factory=set)           # readers materialized before an update


def plan_arguments(fn: Function, updates: Sequence[int]) -> ArgumentPlan:
    """The plan for `fn`, whose last ``len(updates)`` results are the new values of arguments
    ``updates`` (module docstring)."""
    plan = ArgumentPlan()
    body = fn.body
    if not updates or any(op.prim.effects for op in body.walk()):
        return plan
    first = len(body.results) - len(updates)
    pairs: list[tuple[int, int]] = []
    taken: set[Value] = set()             # a value written in place into one argument only
    for k, i in enumerate(updates):
        new = body.results[first + k]
        if body.args[i].type == new.type and new not in taken:
            pairs.append((i, first + k))
            taken.add(new)
    if not pairs:
        return plan
    carried = plan_block(body, pairs)
    plan.force = _values_before_updates(body, pairs, carried) or set(carried.force)
    for (a, r), mode, chain in zip(pairs, carried.modes, carried.chains):
        if mode == PASS:
            plan.pairs[r] = a
        elif mode == IN_PLACE:
            plan.pairs[r] = a
            plan.assign.update((v, a) for v in chain)
    rest = [(a, r) for (a, r), mode in zip(pairs, carried.modes) if mode == COPY]
    if rest:
        evaluation = Evaluation(schedule(body, plan.force))
        for a, r in rest:
            if _elementwise_in_place(body.args[a], body.results[r], evaluation):
                plan.pairs[r] = a
                plan.assign[body.results[r]] = a
    return plan


def _values_before_updates(body: Block, pairs: Sequence[tuple[int, int]], carried: CarryPlan
                           ) -> set[Value] | None:
    """When the chains need readers materialized (``u[1:-1] += c * (u[:-2] - 2 * u[1:-1] +
    u[2:])`` reads shifted windows of ``u``), materializing each update's other operands (the
    new window, the indices) instead costs one temporary of the window, not one per reader:
    that set, if every other read of each link's old value is then evaluated before the
    update; else None (the readers plan_block chose)."""
    if not carried.force:
        return None
    force: set[Value] = set()
    for mode, chain in zip(carried.modes, carried.chains):
        if mode != IN_PLACE:
            continue
        for v in chain:
            if v.op is None or v.op.prim not in _UPDATES:
                return None
            force.update(v.op.operands[1:])
    evaluation = Evaluation(schedule(body, force))
    for (a, _), mode, chain in zip(pairs, carried.modes, carried.chains):
        if mode != IN_PLACE:
            continue
        prev = body.args[a]
        for v in chain:
            update = v.op
            assert update is not None
            at = evaluation.place[update]
            for reader, slot in evaluation.users.get(prev, []):
                if reader is update and slot == 0:
                    continue
                if not all(p < at for p in evaluation.places(reader)):
                    return None
            prev = v
    return force


def _elementwise_in_place(arg: Value, res: Value, evaluation: Evaluation) -> bool:
    """May fused elementwise loop `res` write into `arg`'s buffer (module docstring)?"""
    op = res.op
    sched = evaluation.sched
    if op is None or op.prim.kind != ELEMENTWISE or op.prim.lower is None \
            or op.prim.lower_root is not None or res in sched.block.args:
        return False
    if arg in sched.block.results:               # the old value is a result too: read at the end
        return False
    at = evaluation.place[op]
    stack, seen = [arg], set()
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        for user, _ in evaluation.users.get(v, []):
            if all(p < at for p in evaluation.places(user)):
                continue                          # complete before the loop writes
            if user.prim.kind != ELEMENTWISE or not user.results \
                    or user.results[0].type.shape != res.type.shape:
                return False                      # another index, a reduction, a later op
            u = user.results[0]
            if u is res:
                continue
            if sched.is_materialized(u) or sched.groups.get(u) is not res:
                return False                      # a loop of its own at or after `res`'s
            stack.append(u)
    return True
