"""Fusion: decide which values get a buffer; everything else is recomputed
inside the loop nest of the value that consumes it.

A value is *materialized* (gets a buffer and its own loop nest) when

* it is a block result, a block argument, or the result of an OPAQUE or
  CONTROL op (those write whole buffers), or an operand of a CONTROL op;
* a consumer would read it more than once per element: a broadcast of it,
  an operand of dot_general, ... (recomputing a reduction for every element of
  a broadcast would turn O(n) into O(n^2));
* its consumers sit in different loop nests (compute once, read twice);
* its primitive computes it faster as a whole (``own_loop``) and its consumers read
  all of it: a reduction that keeps the last axis accumulates contiguous rows into
  its buffer, where reading it inside the consumer's loop would walk the reduced
  axes with a stride (a slice of it still reads just the elements it keeps).

Cheap values (constants, iota, and pure index remaps of materialized or cheap
values, with casts) are never materialized: re-reading them costs a load. An operand of
dot_general counts as materialized from its own op on, so that ``Xn @ Xn.T`` of a computed
``Xn`` reads one buffer twice (gemm or syrk takes the transpose as a leading dimension)
instead of copying it into a transposed second buffer.

Two limits keep a fusion group a size the compiler handles in linear time:

* at most ``MAX_GROUP_OPS`` ops per group: a longer chain (a thousand statements
  ``x = x * a + b``) is cut into loops of that many ops, each writing a buffer the
  next reads. LLVM's loop vectorizer takes time quadratic in the length of a loop
  body (about 3 s for a body of 4,000 dependent flops), one extra store and load per
  element every ``MAX_GROUP_OPS`` ops costs nothing measurable;
* at most ``MAX_NESTING`` index ops (and cheap values) nested below one value: the code
  generator computes an elementwise operand from an explicit stack, but an index op
  reads its operand through its primitive's ``lower``, a Python call per level, so a
  deeper chain (``x = x[::-1] * 2`` a thousand times) is materialized at this depth.

>>> # exp(x) * 2 fuses into one loop; sum(x) feeding a broadcast is materialized
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Collection

from compiler.ir.core import Block, Op, Value
from compiler.ir.primitive import CONTROL, ELEMENTWISE, INDEX, OPAQUE

MAX_GROUP_OPS = 128
MAX_NESTING = 24


@dataclass
class Schedule:
    """The materialized values of one block, in program order of their definition."""

    block: Block
    materialized: list[Value] = field(default_factory=list)
    groups: dict[Value, object] = field(default_factory=dict)

    def is_materialized(self, v: Value) -> bool:
        return v in self._set

    def __post_init__(self) -> None:
        self._set: set[Value] = set()
        self.used: set[Value] = set()     # operands of the block's ops and its results


def _has_loop(op: Op) -> bool:
    return op.prim.loops


def _reads_whole(op: Op) -> bool:
    """An OPAQUE op that needs its operands in buffers (dot_general)."""
    return op.prim.kind == OPAQUE and not op.prim.streams_operands


def _expanding(op: Op, operand: Value) -> bool:
    """Does `op` read elements of `operand` more than once per evaluation of its result?"""
    kind = op.prim.kind
    if kind == OPAQUE:
        return not op.prim.streams_operands
    if kind == CONTROL:
        return True
    if kind == ELEMENTWISE or op.prim.expands is None:
        return False
    return op.prim.expands(op)


def _reads_all(user: Op, v: Value) -> bool:
    """Does `user` read (at least) every element of `v`? Elementwise ops and reductions
    do; an index op does when its result is no smaller (reshape, transpose), not a
    slice, which reads just the elements it keeps."""
    if user.prim.kind == ELEMENTWISE or user.prim.loops or not user.results:
        return True            # a check (no results) reads its whole condition
    got, have = user.results[0].type.size, v.type.size
    if isinstance(got, int) and isinstance(have, int):
        return got >= have
    return bool(got == have)


def schedule(block: Block, force: Collection[Value] = ()) -> Schedule:
    """Choose the buffers of `block` (not of nested regions: they get their own). `force`:
    values materialized whatever the rules say (a loop body's reads of a carried array
    that is then updated in place must happen before the update: backend/carries.py)."""
    sched = Schedule(block)
    mat = sched._set
    mat.update(force)
    users: dict[Value, list[Op]] = {}
    for op in block.ops:
        for v in op.operands:
            users.setdefault(v, []).append(op)
    mat.update(block.args)
    mat.update(block.results)
    sched.used.update(users)
    sched.used.update(block.results)
    cheap: set[Value] = set()
    # how many cheap ops nest below a cheap value (each is a Python call when it is read)
    cheap_depth: dict[Value, int] = {}

    for op in block.ops:      # forward: which values are cheap to recompute anywhere
        depth = 1 + max((cheap_depth.get(v, 0) for v in op.operands), default=0)
        if depth > MAX_NESTING or any(r in mat for r in op.results):
            pass
        elif op.prim.kind == INDEX and not _has_loop(op) and all(v in cheap or v in mat for v in op.operands):
            cheap.update(op.results)
        elif op.prim.cheap and all(v in cheap or _complex_buffer(v, block) for v in op.operands):
            cheap.update(op.results)        # (the real or imaginary part of a complex argument)
        if op.results and op.results[0] in cheap:
            cheap_depth.update((r, depth) for r in op.results)
        else:       # an operand of dot_general gets its buffer now: a transpose of it is cheap
            mat.update(r for r in op.results if any(_reads_whole(u) for u in users.get(r, ())))
        if op.prim.kind in (OPAQUE, CONTROL):
            mat.update(op.results)
            if op.prim.kind == CONTROL:
                mat.update(op.operands)

    group: dict[Value, object] = {}
    # how each value is indexed relative to its group's loop nest: one entry per distinct path
    # of index remaps from the root; elementwise users read at the same index (and `read`
    # reuses the value), every index op makes a new access pattern
    access: dict[Value, frozenset] = {}
    nesting: dict[Value, int] = {}      # index ops between a value and its group's root
    size: dict[object, int] = {}        # ops in each group so far
    for op in reversed(block.ops):
        for r in op.results:
            if r in mat:
                group[r] = r
                access[r] = frozenset({("root", id(r))})
                nesting[r], size[r] = 0, 1
                continue
            if r not in users:          # dead, unless a block result (handled above)
                group[r] = None
                continue
            if r in cheap:
                group[r] = "cheap"
                continue
            consumers: set[object] = set()
            expanding = False
            patterns: set = set()
            depth = 0
            for user in users[r]:
                if user.prim.kind in (OPAQUE, CONTROL):
                    consumers.add(user)
                    patterns.add(("opaque", id(user)))
                else:
                    consumers.add(group.get(user.results[0]))
                    seen = access.get(user.results[0], frozenset())
                    patterns |= seen if user.prim.kind == ELEMENTWISE else {(id(user), p) for p in seen}
                    depth = max(depth, nesting.get(user.results[0], 0) + (user.prim.kind != ELEMENTWISE))
                expanding = expanding or _expanding(user, r)
            # a group at its size limit, or an index chain at its depth limit, starts a new group
            too_big = (len(consumers) == 1 and size.get(next(iter(consumers)), 0) >= MAX_GROUP_OPS) \
                or depth > MAX_NESTING
            # read at several different indices per element: computing it inline would repeat
            # its whole expression per access (exponential in chains such as repeated stencils)
            repeated = len(patterns) > 1
            whole = (op.prim.own_loop is not None and op.prim.own_loop(op)
                     and all(_reads_all(user, r) for user in users[r]))
            if expanding or repeated or whole or too_big or len(consumers) != 1 or None in consumers \
                    or "cheap" in consumers:
                mat.add(r)
                group[r] = r
                access[r] = frozenset({("root", id(r))})
                nesting[r], size[r] = 0, 1
            else:
                group[r] = root = consumers.pop()
                access[r] = frozenset(patterns)
                nesting[r] = depth
                if r is op.results[0]:
                    size[root] = size.get(root, 0) + 1
    # operands of non-streaming opaque ops must be materialized unless cheap
    for op in block.ops:
        if _reads_whole(op):
            for v in op.operands:
                if v not in cheap:
                    mat.add(v)
    sched.groups = group
    sched.materialized = [v for v in block.args] + [r for op in block.ops for r in op.results if r in mat]
    for r in block.results:
        if r not in sched.materialized:
            sched.materialized.append(r)
    return sched


class Evaluation:
    """Where the code generator evaluates each op of a scheduled block, as places (op
    positions in the block): a materialized value, an opaque or control op at its own
    place; a fused value inside its group's root, at the root's place; a cheap value
    wherever each of its consumers is evaluated. A value's buffer is read at the places
    of its readers (`last_read`)."""

    def __init__(self, sched: Schedule) -> None:
        block = sched.block
        self.sched = sched
        self.place: dict[Op, int] = {op: n for n, op in enumerate(block.ops)}
        self.end = len(block.ops)
        self.users: dict[Value, list[tuple[Op, int]]] = {}
        for op in block.ops:
            for slot, v in enumerate(op.operands):
                self.users.setdefault(v, []).append((op, slot))
        self._results = set(block.results)
        self._memo: dict[Op, frozenset[int]] = {}

    def places(self, op: Op) -> frozenset[int]:
        if op in self._memo:
            return self._memo[op]
        at: frozenset[int]
        if op.prim.kind in (OPAQUE, CONTROL) or not op.results or self.sched.is_materialized(op.results[0]):
            at = frozenset({self.place[op]})
        else:
            r = op.results[0]
            root = self.sched.groups.get(r)
            if root is None:                      # dead
                at = frozenset()
            elif root == "cheap":                 # evaluated wherever it is consumed
                found: set[int] = set()
                for user, _ in self.users.get(r, []):
                    found |= self.places(user)
                at = frozenset(found)
            elif isinstance(root, Value):
                assert root.op is not None
                at = frozenset({self.place[root.op]})
            else:                                 # fused into an opaque op's lowering
                assert isinstance(root, Op)
                at = frozenset({self.place[root]})
        self._memo[op] = at
        return at

    def last_read(self, v: Value) -> int:
        """The last place that reads `v` (the end of the block for a result; at least the
        place that writes it)."""
        last = self.place[v.op] if v.op is not None else -1
        if v in self._results:
            return self.end
        for user, _ in self.users.get(v, []):
            last = max(last, max(self.places(user), default=last))
        return last


def _complex_buffer(v: Value, block: Block) -> bool:
    """A complex argument of the block: its parts (real, imag: two loads at stride 2) are
    read where they are used, never copied into buffers of their own."""
    return v in block.args and v.dtype.kind == "c"
