"""Fusion: decide which values get a buffer; everything else is recomputed
inside the loop nest of the value that consumes it.

A value is *materialized* (gets a buffer and its own loop nest) when

* it is a block result, a block argument, or the result of an OPAQUE or
  CONTROL op (those write whole buffers), or an operand of a CONTROL op;
* a consumer would read it more than once per element: a broadcast of it,
  an operand of dot_general, ... (recomputing a reduction for every element of
  a broadcast would turn O(n) into O(n^2));
* its consumers sit in different loop nests (compute once, read twice), except where
  those loop nests can be one (below);
* its primitive computes it faster as a whole (``own_loop``) and its consumers read
  all of it: a reduction that keeps the last axis accumulates contiguous rows into
  its buffer, where reading it inside the consumer's loop would walk the reduced
  axes with a stride (a slice of it still reads just the elements it keeps).

Cheap values (constants, iota, and pure index remaps of materialized or cheap
values, with casts) are never materialized: re-reading them costs a load. An operand of
dot_general counts as materialized from its own op on, so that ``Xn @ Xn.T`` of a computed
``Xn`` reads one buffer twice (gemm or syrk takes the transpose as a leading dimension)
instead of copying it into a transposed second buffer.

Materialized elementwise values of one shape share one loop nest (a *nest*, `_Nests`)
when what they compute overlaps: a value read at their own index by the groups of several
such roots joins them into one nest and is computed once per element, in registers; and a
root that must be materialized anyway (read by a loop elsewhere too) is written by the
nest of a reader that reads it at the nest's index, which then uses the register, not the
buffer. The gradient and the Hessian-vector product of ``jvp(grad(f))`` (two results built
from the same ``sqrt(1 - x**2)``, ``1 / ...``) are one loop, not one per shared value. A
nest is emitted at the place of its last root, so nothing outside it may read one of its
roots before that place (``y = e * x; z = e * sum(y)``: ``y``'s loop ends before ``z``'s
starts), and it holds at most ``MAX_GROUP_OPS`` ops like a group. Roots forced into a
buffer (`force`: in-place loop carries) stay in loops of their own, and complex
roots do not share a nest with real ones.

Two limits keep a fusion group a size the compiler handles in linear time:

* at most ``MAX_GROUP_OPS`` ops per group (per nest): a longer chain (a thousand statements
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
    # roots that share one loop nest with other roots: root -> the nest's anchor (its last
    # root in program order, where the nest is emitted); anchor -> its roots in program order
    anchor: dict[Value, Value] = field(default_factory=dict)
    nests: dict[Value, list[Value]] = field(default_factory=dict)

    def is_materialized(self, v: Value) -> bool:
        return v in self._set

    def emitted_with(self, root: Value) -> Value:
        """The root whose place a root's loop nest is emitted at: its nest's anchor, or itself."""
        return self.anchor.get(root, root)

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
    # reuses the value), every index op makes a new access pattern. The roots of one nest
    # share its loop index: ("root",) is the same pattern in all of them.
    access: dict[Value, frozenset] = {}
    nesting: dict[Value, int] = {}      # index ops between a value and its group's root
    nests = _Nests(block, users, force)
    size = nests.size                   # ops in each nest so far (by its leader)
    for op in reversed(block.ops):
        for r in op.results:
            if r in mat:
                group[r] = r
                access[r] = _ROOT
                nesting[r] = 0
                nests.add_root(r, group)
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
                    consumers.add(nests.find(group.get(user.results[0])))
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
            if not (expanding or repeated or whole or too_big) and len(consumers) > 1 \
                    and nests.merge(consumers):
                consumers = {nests.find(next(iter(consumers)))}
            if expanding or repeated or whole or too_big or len(consumers) != 1 or None in consumers \
                    or "cheap" in consumers:
                mat.add(r)
                group[r] = r
                access[r] = _ROOT
                nesting[r] = 0
                nests.add_root(r, group)
                if not (expanding or repeated or whole) and depth <= MAX_NESTING \
                        and patterns <= _ROOT:
                    nests.join(r)
            else:
                group[r] = root = consumers.pop()
                access[r] = frozenset(patterns)
                nesting[r] = depth
                if r is op.results[0]:
                    size[root] = size.get(root, 0) + 1
    sched.anchor, sched.nests = nests.result()
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
        if op.prim.kind in (OPAQUE, CONTROL) or not op.results:
            at = frozenset({self.place[op]})
        elif self.sched.is_materialized(op.results[0]):
            at = frozenset({self.written(op.results[0])})
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
                at = frozenset({self.written(root)})
            else:                                 # fused into an opaque op's lowering
                assert isinstance(root, Op)
                at = frozenset({self.place[root]})
        self._memo[op] = at
        return at

    def written(self, v: Value) -> int:
        """The place whose loop writes materialized value `v` (its nest's, for a root that
        shares a loop nest with others: Schedule.anchor); -1 for a block argument."""
        op = self.sched.emitted_with(v).op
        return self.place[op] if op is not None else -1

    def last_read(self, v: Value) -> int:
        """The last place that reads `v` (the end of the block for a result; at least the
        place that writes it)."""
        last = self.written(v)
        if v in self._results:
            return self.end
        for user, _ in self.users.get(v, []):
            last = max(last, max(self.places(user), default=last))
        return last


_ROOT: frozenset = frozenset({("root",)})


class _Nests:
    """The loop nests of a block's elementwise roots, built during `schedule`'s backward walk
    (a union-find over roots). A nest is one loop nest writing several roots of one shape,
    emitted at the place of its last root (its *anchor*); every value fused into one of its
    roots is computed there once per element, and a root read inside the nest at the nest's
    own index is read from the register that holds it, not from its buffer.

    * `merge`: a value read by the groups of several nests, each at its own index, joins
      them into one nest instead of being materialized to be read back by each;
    * `join`: a value that needs a buffer anyway (a reader in a nest that is full, or in
      another nest that cannot merge) is written by the nest of one of its readers that
      reads it at the nest's index, instead of by a loop of its own.

    Both keep the order of the block: a nest is emitted before any reader outside it of one
    of its roots (so no nest reads another's root and is merged with it), and a nest stays
    within ``MAX_GROUP_OPS`` ops. Complex roots (stored as interleaved {re, im} pairs) and
    real ones do not share a nest: the Mandelbrot iteration of the benchmark corpus (a
    complex ``Z`` and an integer count updated from one mask) ran 6% slower as one loop."""

    def __init__(self, block: Block, users: dict[Value, list[Op]], force: Collection[Value]) -> None:
        self.place = {op: n for n, op in enumerate(block.ops)}
        self.users, self.force, self.args = users, set(force), set(block.args)
        self.parent: dict[Value, Value] = {}
        self.size: dict[object, int] = {}
        self.members: dict[Value, list[Value]] = {}
        self.emit: dict[Value, int] = {}          # leader -> place of the nest's loop
        self.first_read: dict[Value, float] = {}  # leader -> earliest read of a root outside it
        # root -> where it is read: (the reader's nest leader, or None, and the reader's place)
        self.readers: dict[Value, list[tuple[object, float]]] = {}
        self.nestable: set[Value] = set()         # leaders of nests that may grow

    def find(self, g: object) -> object:
        if not isinstance(g, Value):
            return g
        while True:
            p = self.parent.get(g, g)
            if p is g:
                return g
            self.parent[g] = self.parent.get(p, p)
            g = p

    def add_root(self, r: Value, group: dict[Value, object]) -> None:
        """A new root, its own nest; where it is read (every reader comes later: decided)."""
        op = r.op
        self.size[r] = 1
        self.members[r] = [r]
        self.emit[r] = self.place[op] if op is not None else -1
        readers: list[tuple[object, float]] = []
        for user in self.users.get(r, []):
            at: float = self.place[user]
            g: object = None
            if user.results and user.prim.kind not in (OPAQUE, CONTROL):
                g = self.find(group.get(user.results[0]))
                if g is None:
                    continue                   # dead
                if isinstance(g, Value):
                    at = self.emit.get(g, at)  # computed inside that root's nest
                else:
                    g = None
            readers.append((g, at))
        self.readers[r] = readers
        self.first_read[r] = min((at for _, at in readers), default=float("inf"))
        if op is not None and op.prim.kind == ELEMENTWISE and op.prim.lower is not None \
                and r not in self.force and r not in self.args:
            self.nestable.add(r)

    def _can_grow(self, g: object, shape: tuple, cplx: bool) -> bool:
        return isinstance(g, Value) and g in self.nestable and g.type.shape == shape \
            and all((m.dtype.kind == "c") == cplx for m in self.members[g])

    def merge(self, leaders: set[object]) -> bool:
        """Make the nests of `leaders` one, for a value that they all read, when that is
        possible (class docstring)."""
        roots = [g for g in leaders if isinstance(g, Value)]
        if len(roots) != len(leaders) or not all(self._can_grow(g, roots[0].type.shape, roots[0].dtype.kind == "c")
                                                 for g in roots):
            return False
        if sum(self.size[g] for g in roots) >= MAX_GROUP_OPS:
            return False
        if max(self.emit[g] for g in roots) >= min(self.first_read[g] for g in roots):
            return False
        leader = max(roots, key=lambda g: self.emit[g])
        for g in roots:
            if g is not leader:
                self._absorb(leader, g)
        return True

    def join(self, r: Value) -> None:
        """Root `r`, read at their own index by the nests that read it inside a loop, written
        by the earliest of them with room that is emitted before every other reader of `r`."""
        if r not in self.nestable or self.members[r] != [r]:
            return
        shape = r.type.shape
        readers = [(self.find(g), at) for g, at in self.readers[r]]
        nests = {g for g, _ in readers if isinstance(g, Value)}
        for n in sorted((g for g in nests if self._can_grow(g, shape, r.dtype.kind == "c") and self.size[g] < MAX_GROUP_OPS),
                        key=lambda g: self.emit[g]):
            outside = min((at for g, at in readers if g is not n), default=float("inf"))
            if self.emit[n] < outside:
                self.first_read[r] = outside
                self._absorb(n, r)
                return

    def _absorb(self, leader: Value, g: Value) -> None:
        self.parent[g] = leader
        self.members[leader] += self.members.pop(g)
        self.size[leader] += self.size.pop(g)
        self.first_read[leader] = min(self.first_read[leader], self.first_read.pop(g))
        self.nestable.discard(g)

    def result(self) -> tuple[dict[Value, Value], dict[Value, list[Value]]]:
        anchor: dict[Value, Value] = {}
        nests: dict[Value, list[Value]] = {}
        for leader, roots in self.members.items():
            if len(roots) > 1:
                roots.sort(key=lambda r: self.place[r.op] if r.op is not None else -1)
                nests[leader] = roots
                anchor.update((r, leader) for r in roots)
        return anchor, nests


def _complex_buffer(v: Value, block: Block) -> bool:
    """A complex argument of the block: its parts (real, imag: two loads at stride 2) are
    read where they are used, never copied into buffers of their own."""
    return v in block.args and v.dtype.kind == "c"
