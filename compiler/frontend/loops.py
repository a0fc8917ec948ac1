"""Python ``for`` loops that stay loops: ``range``, rows of an array, ``enumerate``, ``zip``,
``reversed``; and ``compiler.fori_loop`` / ``compiler.scan`` inside compiled code.

A loop over ``range(a, b, s)`` (bounds static, symbolic sizes or run-time integers),
over the rows of an array (``for row in x``), or over ``enumerate``/``zip``/``reversed`` of
those, becomes one ``for`` op: the body is staged once with the index as an IR value, and
every variable it rebinds and every array it updates in place is carried (found by a
trial run, as a data-dependent ``while`` finds its state: compiler/frontend/control.py).
A variable first assigned in the body and read after the loop is carried from a zero of
its type. ``break``, ``continue`` and ``return`` are first rewritten into flags
(``without_exits``).

A loop is unrolled instead (staged once per iteration, the index a Python int) when

* it iterates over a static Python sequence (a list, a tuple, dict keys);
* its trip count is static and at most ``SMALL_TRIP`` (straight-line code is faster);
* it returns from inside with a static trip count of at most ``SMALL_TRIP``, or returns
  something other than arrays, numbers or a tuple of them (the rest of the function follows each
  return, as in any data-dependent ``if``);
* staging the body with a run-time index fails and the trip count is static: the body
  needs a static index (a list element, a shape) or changes a Python value or a
  variable's shape from one iteration to the next.

Otherwise the error of the loop attempt is the user's error.
"""
from __future__ import annotations

import ast
import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from compiler.errors import CompileError, UnsupportedError
from compiler.frontend import arrays as A
from compiler.frontend import indexing as I
from compiler.frontend import pytrees
from compiler.frontend.control import (Carry, in_place_names, _enter, _initial_types, _is_number, _Saved, _state,
                                       _widen, assigned_names, check_while_body, close_over,
                                       drop_unchanged, leaf_labels, materialize,
                                       same_static, state_labels, target_names, trial_iteration)
from compiler.frontend.control import _bind as bind_results
from compiler.frontend.values import Reject, Staged, Undefined
from compiler.ir import dims
from compiler.ir.core import Block, Value
from compiler.ir.dims import Dim, DimExpr
from compiler.ir.types import I64, TensorType
from compiler.primitives import ops
from compiler.primitives.loops import trip_count

SMALL_TRIP = 8
INDEX_TYPE = TensorType(I64, ())

Bound = Any   # int | DimExpr | Staged (an int64 scalar)


@dataclass
class Source:
    """One iterable of a loop: item k of it, for k in range(trip)."""

    trip: Dim | None             # None: a run-time value
    item: Callable[[Any, Any], Any]     # (stager, k: int | Staged) -> the item
    trip_value: Callable[[Any], Staged]  # the trip count as a run-time value


@dataclass
class LoopPlan:
    """A loop that can be a ``for`` op: the index runs over range(start, stop, step)."""

    start: Bound
    stop: Bound
    step: int
    trip: Dim | None
    target: Callable[[Any, Any], Any]    # (stager, index) -> what the loop target is bound to

    def items(self, st: Any) -> list[Any]:
        """The items for unrolling (a static trip count)."""
        assert isinstance(self.trip, int)
        first = self.start
        return [self.target(st, first + k * self.step) for k in range(self.trip)]


@dataclass
class StaticIterable:
    value: Any


def _is_builtin(st: Any, node: ast.expr, fn: Any) -> bool:
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        return False
    try:
        return st.visit(node.func) is fn
    except Reject:
        return False


def _bound(st: Any, value: Any, what: str) -> Bound:
    if isinstance(value, (bool, np.bool_)) or isinstance(value, float):
        raise Reject(CompileError, f"range() {what} must be an integer, got {type(value).__name__}")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, DimExpr):
        return value
    if isinstance(value, Staged):
        if value.ndim != 0 or value.dtype.kind not in "iu":
            raise Reject(CompileError, f"range() {what} must be an integer scalar, got an array "
                         f"of type {value.type}", "use int(...) of a one-element integer array")
        return A.convert(st.b, value, I64)
    raise Reject(CompileError, f"range() {what} must be an integer, got {type(value).__name__}")


def _as_value(st: Any, x: Bound) -> Value:
    if isinstance(x, Staged):
        return x.value
    return A.lift(st.b, x, I64).value


def _dim_of(x: Bound) -> Dim | None:
    return None if isinstance(x, Staged) else x


def _range_plan(st: Any, node: ast.expr) -> LoopPlan:
    """The loop plan of a call ``range(...)`` (its arguments staged here)."""
    assert isinstance(node, ast.Call)
    if node.keywords or not 1 <= len(node.args) <= 3 or any(isinstance(a, ast.Starred) for a in node.args):
        raise Reject(CompileError, "range() takes 1 to 3 positional arguments")
    values = [st.visit(a) for a in node.args]
    if len(values) == 1:
        values = [0, values[0]]
    start, stop = (_bound(st, v, w) for v, w in zip(values[:2], ("start", "stop")))
    step = values[2] if len(values) == 3 else 1
    if not isinstance(step, (int, np.integer)) or isinstance(step, bool):
        raise Reject(UnsupportedError, "range() with a step that is not a static integer",
                     "use a static step (a Python int), or loop over a computed count")
    step = int(step)
    if step == 0:
        raise Reject(CompileError, "range() arg 3 must not be zero")
    d0, d1 = _dim_of(start), _dim_of(stop)
    trip = trip_count(d0, d1, step) if d0 is not None and d1 is not None else None

    def target(st: Any, i: Any) -> Any:
        return i
    return LoopPlan(start, stop, step, trip, target)


def _plan_of(plan: LoopPlan) -> Source:
    """A range as a counted source: item k is start + k * step."""
    def item(st: Any, k: Any) -> Any:
        if isinstance(k, Staged) or isinstance(plan.start, Staged):
            start = A.lift(st.b, plan.start, I64) if not isinstance(plan.start, Staged) else plan.start
            kk = k if isinstance(k, Staged) else A.lift(st.b, k, I64)
            return Staged(ops.add(st.b, start.value, ops.mul(st.b, kk.value, ops.scalar(st.b, plan.step, I64))),
                          weak=True)
        return plan.start + k * plan.step

    def trip_value(st: Any) -> Staged:
        if plan.trip is not None:
            return A.lift(st.b, plan.trip, I64)
        lo, hi = _as_value(st, plan.start), _as_value(st, plan.stop)
        span = ops.sub(st.b, hi, lo) if plan.step > 0 else ops.sub(st.b, lo, hi)
        k = abs(plan.step)
        if k != 1:
            span = ops.floordiv(st.b, ops.add(st.b, span, ops.scalar(st.b, k - 1, I64)),
                                ops.scalar(st.b, k, I64))
        return Staged(ops.maximum(st.b, span, ops.scalar(st.b, 0, I64)), weak=True)
    return Source(plan.trip, item, trip_value)


def _array_source(st: Any, x: Staged) -> Source:
    if x.ndim == 0:
        raise Reject(CompileError, "iteration over a 0-d array")
    n = x.shape[0]

    def item(st: Any, k: Any) -> Any:
        return I.getitem(st.b, x, k)

    def trip_value(st: Any) -> Staged:
        return A.lift(st.b, n, I64)
    return Source(n, item, trip_value)


def _reversed(src: Source) -> Source:
    """Item k of `src` read from the end: item trip - 1 - k."""
    def item(st: Any, k: Any) -> Any:
        if isinstance(k, Staged) or src.trip is None or not isinstance(src.trip, int):
            last = ops.sub(st.b, src.trip_value(st).value, ops.scalar(st.b, 1, I64))
            kk = k.value if isinstance(k, Staged) else ops.scalar(st.b, k, I64)
            return src.item(st, Staged(ops.sub(st.b, last, kk), weak=True))
        return src.item(st, src.trip - 1 - k)
    return Source(src.trip, item, src.trip_value)


def _source(st: Any, node: ast.expr) -> Source | None:
    """A counted source for an argument of enumerate/zip; None: a static iterable."""
    if _is_builtin(st, node, range):
        return _plan_of(_range_plan(st, node))
    if _is_builtin(st, node, reversed) and isinstance(node, ast.Call) and len(node.args) == 1:
        inner = _source(st, node.args[0])
        return None if inner is None else _reversed(inner)
    value = st.visit(node)
    if isinstance(value, Staged):
        return _array_source(st, value)
    if isinstance(value, range):
        return _plan_of(LoopPlan(value.start, value.stop, value.step, len(value), lambda st, i: i))
    return None


def _counted(sources: list[Source], build: Callable[[Any, list[Any]], Any]) -> LoopPlan:
    """A loop over k in range(min of the trips), the target built from each source's item k."""
    trips = [s.trip for s in sources]
    trip: Dim | None = None
    if all(t is not None for t in trips):
        trip = trips[0]
        for t in trips[1:]:
            trip = dims.minimum(trip, t)   # type: ignore[arg-type]

    def stop_of(st: Any) -> Staged:
        if trip is not None:
            return A.lift(st.b, trip, I64)
        values = [s.trip_value(st) for s in sources]
        out = values[0].value
        for v in values[1:]:
            out = ops.minimum(st.b, out, v.value)
        return Staged(out, weak=True)

    def target(st: Any, k: Any) -> Any:
        return build(st, [s.item(st, k) for s in sources] + [k])
    plan = LoopPlan(0, None, 1, trip, target)
    plan.stop = _LazyStop(stop_of)
    return plan


@dataclass
class _LazyStop:
    """The stop of a counted loop, emitted when the loop op is built."""

    make: Callable[[Any], Staged]


def plan(st: Any, node: ast.expr) -> LoopPlan | StaticIterable:
    """How a ``for`` loop over `node` can run."""
    if _is_builtin(st, node, range):
        return _range_plan(st, node)
    grid = _grid_plan(st, node)
    if grid is not None:
        return grid
    if _is_builtin(st, node, enumerate) and isinstance(node, ast.Call):
        if not node.args or len(node.args) > 2 or any(k.arg != "start" for k in node.keywords):
            return StaticIterable(st.visit(node))
        src = _source(st, node.args[0])
        start_node = node.args[1] if len(node.args) == 2 else \
            next((k.value for k in node.keywords), None)
        first = st.visit(start_node) if start_node is not None else 0
        if src is None or not isinstance(first, int):
            return StaticIterable(st.visit(node))
        return _counted([src], lambda st, items: (_offset(st, items[-1], first), items[0]))
    if _is_builtin(st, node, zip) and isinstance(node, ast.Call):
        if node.keywords or not node.args:
            return StaticIterable(st.visit(node))
        srcs = [_source(st, a) for a in node.args]
        if any(s is None for s in srcs):
            return StaticIterable(st.visit(node))
        return _counted([s for s in srcs if s is not None], lambda st, items: tuple(items[:-1]))
    if _is_builtin(st, node, reversed) and isinstance(node, ast.Call) and len(node.args) == 1 \
            and not node.keywords:
        src = _source(st, node.args[0])
        if src is not None:
            return _counted([_reversed(src)], lambda st, items: items[0])
        return StaticIterable(st.visit(node))
    value = st.visit(node)
    if isinstance(value, Staged):
        return _counted([_array_source(st, value)], lambda st, items: items[0])
    if isinstance(value, range):
        return LoopPlan(value.start, value.stop, value.step, len(value), lambda st, i: i)
    return StaticIterable(value)


def _grid_plan(st: Any, node: ast.expr) -> LoopPlan | None:
    """``np.ndindex(shape)``, ``np.ndenumerate(x)`` and ``itertools.product`` of ranges with
    static sizes: one counted loop over the flat position k, the target unravelled from k
    (a tuple of Python ints when unrolled, of int64 values in a loop op)."""
    if not isinstance(node, ast.Call) or node.keywords:
        return None
    try:
        fn = st.visit(node.func)
    except Reject:
        return None
    if fn is not np.ndindex and fn is not np.ndenumerate and fn is not itertools.product:
        return None
    args: list[Any] = []
    for a in node.args:
        if isinstance(a, ast.Starred):
            args.extend(st.iterate(st.visit(a.value)))
        else:
            args.append(st.visit(a))
    array = None
    if fn is np.ndenumerate:
        if len(args) != 1 or not isinstance(args[0], Staged):
            return None
        array = args[0]
        args = [tuple(array.shape)]
    if fn is not itertools.product and len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = list(args[0])
    if fn is itertools.product:
        if not args or not all(isinstance(r, range) for r in args):
            return None
        ranges = list(args)
    elif all(isinstance(d, int) and not isinstance(d, bool) for d in args):
        ranges = [range(d) for d in args]
    else:
        return None
    shape = [len(r) for r in ranges]
    trip = math.prod(shape)
    strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]

    def target(st: Any, k: Any) -> Any:
        if not isinstance(k, Staged):
            index = tuple(r[(k // s) % n] for r, s, n in zip(ranges, strides, shape))
        else:
            parts = []
            for r, s, n in zip(ranges, strides, shape):
                pos = ops.floordiv(st.b, k.value, ops.scalar(st.b, s, I64)) if s != 1 else k.value
                pos = ops.mod(st.b, pos, ops.scalar(st.b, n, I64))
                if r.step != 1:
                    pos = ops.mul(st.b, pos, ops.scalar(st.b, r.step, I64))
                if r.start != 0:
                    pos = ops.add(st.b, pos, ops.scalar(st.b, r.start, I64))
                parts.append(Staged(pos, weak=True))
            index = tuple(parts)
        return index if array is None else (index, I.getitem(st.b, array, index))
    return LoopPlan(0, trip, 1, trip, target)


def _offset(st: Any, k: Any, first: int) -> Any:
    if first == 0 or not isinstance(k, Staged):
        return k + first if not isinstance(k, Staged) else k
    return Staged(ops.add(st.b, k.value, ops.scalar(st.b, first, I64)), weak=True)


class _Unroll(Exception):
    """The body needs a static index: stage the loop unrolled."""


def stage_loop(st: Any, node: ast.For, lp: LoopPlan) -> tuple[ast.For, list[ast.stmt]] | None:
    """Stage `node` as a ``for`` op (None), or return the loop to unroll instead and the
    statements to run after it: `node`, or `node` with its break/continue/return rewritten
    into flags (see without_exits)."""
    static = isinstance(lp.trip, int)
    original = node
    after: list[ast.stmt] = []
    extra: list[str] = []
    exit_ = check_while_body(node)   # the same rule: return/break/continue leaving the body
    if exit_ is not None:
        if _has_return(node) and static and lp.trip <= SMALL_TRIP:   # type: ignore[operator]
            return node, []          # unrolled: the rest of the function follows each return
        rewritten = without_exits(node)
        if rewritten is None:
            if static:
                return node, []
            raise Reject(UnsupportedError, "`break`/`continue`/`return` inside a `with` or `try` "
                         "block of a compiled loop", "move it out of the block")
        tag = id(node)
        prelude, node, after = rewritten
        extra = [f"__aotx_value_{tag}"] if after else []
        for stmt in prelude:              # the flags the rewritten loop starts from
            st.visit(stmt)
    if static and lp.trip <= SMALL_TRIP:   # type: ignore[operator]
        return node, after
    env = st.scope.env
    before = dict(env)
    in_place = in_place_names(node.body, env)      # row += v: the array is carried, not the name
    names = sorted(n for n in assigned_names(node.body) if n in env
                   and not isinstance(env[n], Undefined) and n not in in_place)
    held = {id(env[n]) for n in names}
    objs = [o for o in st.reachable_staged() if id(o) not in held]
    try:
        try:
            escaping = _escaping(st, node, extra)
            if escaping:
                # read after the loop but first assigned in it: carried from a zero of the
                # type one iteration gives it (Python's value after at least one iteration)
                for n, v in _probe(st, node, lp, names, objs, escaping).items():
                    env[n] = Staged(ops.full(st.b, 0, v.type), weak=v.weak) \
                        if isinstance(v, Staged) else type(v)(0)
                    names = sorted(set(names) | {n})
            carry = _discover(st, node, lp, names, objs, static)
            results = _build(st, node, lp, carry)
        except _Unroll:
            if static:
                raise
            raise Reject(UnsupportedError, "the body of this loop changes a Python value or "
                         "the structure of a variable from one iteration to the next, which "
                         "needs a static trip count", "keep loop-carried values arrays of one "
                         "shape") from None
    except (_Unroll, Reject, CompileError):
        env.clear()
        env.update(before)
        if static and lp.trip <= MAX_TRIP_UNROLL:   # type: ignore[operator]
            # unrolled as written: a return then compiles the rest of the function into
            # each branch (it may return any structure)
            return (original, []) if after else (node, after)
        if after:
            raise Reject(UnsupportedError, "`return` inside a loop whose trip count is a run-time "
                         "value works for arrays and numbers, or a tuple of them; this loop returns "
                         "another kind of value, or returns from a block it cannot be rewritten "
                         "out of",
                         "assign the values to variables, break, and return after the loop") \
                from None
        raise
    bind_results(st, carry, results)
    fresh = [n for n in carry.names if (n not in before or isinstance(before[n], Undefined))
             and not any(n == e or n.startswith(e + "_") for e in extra)]   # read only if returned
    if fresh and not (static and lp.trip >= 1):   # type: ignore[operator]
        with st.b.at(st.loc(node)):
            count = _trip_of(st, lp)
            ok = ops.ge(st.b, count, ops.scalar(st.b, 1, I64))
            ops.check(st.b, ok, "UnboundLocalError", f"cannot access local variable '{fresh[0]}' "
                      "where it is not associated with a value (the loop ran no iteration)")
    for n in assigned_names(node.body) | set(target_names(node.target)):
        if n in carry.names:
            continue
        if n not in before or n in target_names(node.target):
            env[n] = Undefined(n, "it is assigned inside a compiled loop (a loop op, not unrolled) "
                               "and not before it; initialize it before the loop")
    st.exec_block(node.orelse)
    st.exec_block(after)
    return None


MAX_TRIP_UNROLL = 10_000


def _trip_of(st: Any, lp: LoopPlan) -> Value:
    if isinstance(lp.stop, _LazyStop):
        return lp.stop.make(st).value
    return _plan_of(lp).trip_value(st).value


def _escaping(st: Any, node: ast.For, extra: list[str]) -> list[str]:
    """Names the loop binds that are not defined before it and are read outside it (and the
    names in `extra`: the value a rewritten `return` leaves for after the loop)."""
    env = st.scope.env
    bound = assigned_names(node.body) | set(target_names(node.target))
    new = {n for n in bound if n not in env or isinstance(env[n], Undefined)}
    if not new:
        return []
    inside = {id(sub) for sub in ast.walk(node)}
    # a read inside another loop that binds the name itself reads that loop's value
    rebound: dict[str, set[int]] = {}
    for other in ast.walk(st.scope.source.node):
        if isinstance(other, (ast.For, ast.comprehension)) and other is not node:
            for name in set(target_names(other.target)) & new:
                rebound.setdefault(name, set()).update(id(sub) for sub in ast.walk(other))
    read = {sub.id for sub in ast.walk(st.scope.source.node)
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id in new
            and id(sub) not in inside and id(sub) not in rebound.get(sub.id, set())}
    return sorted(read | {n for n in new if any(n == e or n.startswith(e + "_") for e in extra)})


def _enter_for(st: Any, node: ast.For, lp: LoopPlan, carry: Carry) -> Callable[[Block], list[Any]]:
    """Bind the index (argument 0), the carried leaves, then the loop target."""
    def enter(block: Block) -> list[Any]:
        block.args.append(Value(INDEX_TYPE, None, 0, "i"))
        bound = _enter(st, block, carry)
        _bind_target(st, node, lp, block.args[0])
        return bound
    return enter


def _start_carry(st: Any, names: list[str], objs: list[Staged]) -> Carry:
    """The carry before any trial. Python numbers start static: one the body changes to
    another static value needs the index to be static (unroll); one it changes into an
    array value becomes carried."""
    inits, td = _state(st, names, objs)
    types = [None if _is_number(x) else t for x, t in zip(inits, _initial_types(inits))]
    return Carry(names, objs, td, inits, types, len(inits) - len(objs))


def _probe(st: Any, node: ast.For, lp: LoopPlan, names: list[str], objs: list[Staged],
           escaping: list[str]) -> dict[str, Any]:
    """One trial iteration: the values (arrays or numbers) `escaping` names end with."""
    carry = _start_carry(st, names, objs)
    values: list[Any] = []

    def body() -> None:
        st.exec_block(node.body)
        values.extend(st.scope.env.get(n) for n in escaping)
    trial_iteration(st, carry, _enter_for(st, node, lp, carry), body)
    values = [v.sample if isinstance(v, Undefined) else v for v in values]
    return {n: v for n, v in zip(escaping, values)
            if isinstance(v, Staged) or (_is_number(v) and not isinstance(v, bool))}


def _has_return(node: ast.For) -> bool:
    return any(isinstance(sub, ast.Return) for stmt in node.body for sub in _same_loop(stmt))


def _same_loop(node: ast.AST) -> Any:
    """The nodes of `node` that belong to the current loop (not nested loops or functions)."""
    yield node
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.For, ast.While, ast.FunctionDef, ast.Lambda, ast.AsyncFunctionDef,
                              ast.ClassDef)):
            continue
        yield from _same_loop(child)


def without_exits(node: ast.For) -> tuple[list[ast.stmt], ast.For, list[ast.stmt]] | None:
    """``for t in it: body else: tail`` with break, continue and return rewritten away:

        brk = False; ret = False    # the prelude (when the body breaks or returns)
        for t in it:
            if not brk:
                body'               # continue: the rest of the iteration is skipped;
        else:                       # break: brk = True, and the rest is skipped;
            if not brk:             # return v: value = v; ret = brk = True, and the rest
                tail                #   is skipped
        if ret:                     # after the loop (when the body returns)
            return value

    None when an exit sits inside a block the rewrite does not handle (with, try)."""
    tag = id(node)
    flag, ret, value = f"__aotx_break_{tag}", f"__aotx_return_{tag}", f"__aotx_value_{tag}"
    exits = [sub for stmt in node.body for sub in _same_loop(stmt)
             if isinstance(sub, (ast.Break, ast.Return))]
    returns = [sub for sub in exits if isinstance(sub, ast.Return)]
    # `return a, b` everywhere: one variable per element, so that each is an array or number
    tuples = [r.value for r in returns if isinstance(r.value, ast.Tuple)
              and not any(isinstance(e, ast.Starred) for e in r.value.elts)]
    sizes = {len(t.elts) for t in tuples if isinstance(t, ast.Tuple)}
    arity = sizes.pop() if len(tuples) == len(returns) and len(sizes) == 1 else None
    body = _rewrite(node.body, flag, (ret, value, arity))
    if body is None:
        return None
    if exits:
        body = [ast.If(test=_not(flag), body=body or [ast.Pass()], orelse=[])]
    orelse = node.orelse
    if exits and orelse:
        orelse = [ast.If(test=_not(flag), body=orelse, orelse=[])]
    loop = ast.For(target=node.target, iter=node.iter, body=body or [ast.Pass()], orelse=orelse,
                   type_comment=None)
    prelude: list[ast.stmt] = [_set(name, False) for name in ([flag] if exits else [])
                               + ([ret] if returns else [])]
    after: list[ast.stmt] = []
    if returns:
        result: ast.expr = ast.Name(value, ast.Load()) if any(r.value is not None for r in returns) \
            else ast.Constant(None)
        if arity is not None:
            result = ast.Tuple(elts=[ast.Name(f"{value}_{j}", ast.Load()) for j in range(arity)],
                               ctx=ast.Load())
        after.append(ast.If(test=ast.Name(ret, ast.Load()), body=[ast.Return(value=result)],
                            orelse=[]))
    for stmt in [*prelude, loop, *after]:
        for new in ast.walk(stmt):
            if isinstance(new, (ast.expr, ast.stmt)) and getattr(new, "lineno", None) is None:
                ast.copy_location(new, node)
    return prelude, loop, after


def _set(name: str, value: Any, where: ast.AST | None = None) -> ast.stmt:
    stmt = ast.Assign(targets=[ast.Name(name, ast.Store())],
                      value=value if isinstance(value, ast.expr) else ast.Constant(value))
    if where is not None:
        for new in ast.walk(stmt):
            ast.copy_location(new, where)
    return stmt


def _not(flag: str) -> ast.expr:
    return ast.UnaryOp(op=ast.Not(), operand=ast.Name(flag, ast.Load()))


def _rewrite(stmts: list[ast.stmt], flag: str, ret: tuple[str, str, int | None]
             ) -> list[ast.stmt] | None:
    """`stmts` without break/continue/return of the current loop: what follows an exit runs
    only on the paths that do not take it."""
    out: list[ast.stmt] = []
    for j, stmt in enumerate(stmts):
        rest = stmts[j + 1:]
        if isinstance(stmt, ast.Continue):
            return out
        if isinstance(stmt, ast.Break):
            out.append(_set(flag, True, stmt))
            return out
        if isinstance(stmt, ast.Return):
            if ret[2] is not None and isinstance(stmt.value, ast.Tuple):
                out.extend(_set(f"{ret[1]}_{j}", e, stmt) for j, e in enumerate(stmt.value.elts))
            elif stmt.value is not None:
                out.append(_set(ret[1], stmt.value, stmt))
            out.extend([_set(ret[0], True, stmt), _set(flag, True, stmt)])
            return out
        exits = [sub for sub in _same_loop(stmt)
                 if isinstance(sub, (ast.Break, ast.Continue, ast.Return))]
        if not exits:
            out.append(stmt)
            continue
        if not isinstance(stmt, ast.If):
            return None
        then = _rewrite(stmt.body + rest, flag, ret)
        other = _rewrite(stmt.orelse + rest, flag, ret)
        if then is None or other is None:
            return None
        out.append(ast.copy_location(ast.If(test=stmt.test, body=then or [ast.Pass()], orelse=other),
                                     stmt))
        return out
    return out


def _bind_target(st: Any, node: ast.For, lp: LoopPlan, index: Value) -> None:
    with st.b.at(st.loc(node.target)):
        st.assign(node.target, lp.target(st, Staged(index, weak=True)))


def _discover(st: Any, node: ast.For, lp: LoopPlan, names: list[str], objs: list[Staged],
              static: bool) -> Carry:
    """Trial runs of the body: which leaves change, and a fixed point of their types."""
    carry = _start_carry(st, names, objs)
    inits, td = carry.inits, carry.treedef
    labels = state_labels(st, {n: st.scope.env[n] for n in names}, objs)
    enter = _enter_for(st, node, lp, carry)
    for _ in range(6):
        trial = trial_iteration(st, carry, enter, lambda: st.exec_block(node.body))
        if trial.treedef != td:
            raise _Unroll()
        numbers = list(carry.types)
        for j, (init, out, t) in enumerate(zip(inits, trial.outs, carry.types)):
            if t is None and _is_number(init) and not isinstance(out, Undefined) \
                    and not same_static(init, out):
                if static and not isinstance(out, Staged):
                    raise _Unroll()     # a Python value the body changes: needs a static index
                numbers[j] = _initial_types([init])[0]
        if numbers != carry.types:
            carry.types = numbers
            continue
        widened = _widen(carry.types, trial.outs, inits, labels)
        if widened == carry.types:
            return drop_unchanged(carry, trial)
        carry.types = widened
    raise Reject(CompileError, "the types of the loop-carried values do not settle")


def _build(st: Any, node: ast.For, lp: LoopPlan, carry: Carry) -> list[Value]:
    body = Block()
    saved = _Saved(st, carry)
    try:
        with st.b.inside(body), st.region():
            body.args.append(Value(INDEX_TYPE, None, 0, "i"))
            bound = _enter(st, body, carry)
            _bind_target(st, node, lp, body.args[0])
            st.exec_block(node.body)
            outs, _ = _state(st, carry.names, carry.objs)
            carry.mutated = [isinstance(o, Staged) and o is b for o, b in zip(outs, bound)]
            body.results = [materialize(st, o, t) for o, t in zip(outs, carry.types)
                            if t is not None]
    finally:
        saved.restore()
    init_values = [materialize(st, x, t) for x, t in zip(carry.inits, carry.types) if t is not None]
    n = len(init_values)
    outer = close_over([body])
    body.results.extend(body.args[1 + n:])
    with st.b.at(st.loc(node)):
        start = _as_value(st, lp.start)
        stop = lp.stop.make(st).value if isinstance(lp.stop, _LazyStop) else _as_value(st, lp.stop)
        results = ops.for_loop(st.b, start, stop, [*init_values, *outer], body, lp.step, lp.trip)
    return list(results[:n])


# ---- compiler.fori_loop and compiler.scan inside compiled code --------------------------------


def _leaves(tree: Any) -> tuple[list[Any], Any]:
    return pytrees.flatten(tree, is_leaf=lambda x: isinstance(x, Staged))


def _carry_in(st: Any, what: str, tree: Any) -> tuple[list[Staged], Any]:
    leaves, td = _leaves(tree)
    out = []
    for label, x in zip(leaf_labels(tree) or [""] * len(leaves), leaves):
        if x is None:
            raise Reject(CompileError, f"{what}: the carry{label and ' ' + label} is None")
        try:
            out.append(A.lift(st.b, x))
        except Reject:
            raise Reject(CompileError, f"{what}: the carry{label and ' ' + label} is a "
                         f"{type(x).__name__}, not an array or a number") from None
    return out, td


def _carry_out(st: Any, what: str, fn_name: str, out: Any, inits: list[Staged], td: Any
               ) -> list[Value]:
    """The body's returned carry as values of exactly the carry's types (weak numbers cast)."""
    leaves, out_td = _leaves(out)
    if out_td != td:
        raise Reject(CompileError, f"{what}: {fn_name} must return a carry of the same structure "
                     f"as the initial value: {td} became {out_td}")
    labels = leaf_labels(pytrees.unflatten(td, inits)) or [""] * len(inits)
    values = []
    for label, x, init in zip(labels, leaves, inits):
        s = A.lift(st.b, x)
        name = f"carry{label and ' ' + label}"
        if s.shape != init.shape:
            raise Reject(CompileError, f"{what}: {name} has shape {A.fmt_shape(init.shape)} "
                         f"before the loop and {A.fmt_shape(s.shape)} after {fn_name}",
                         "keep the shape of every carried value")
        if s.dtype != init.dtype and not s.weak:
            raise Reject(CompileError, f"{what}: {name} has dtype {init.dtype} before the loop and "
                         f"{s.dtype} after {fn_name}", f"start from a value of dtype {s.dtype} "
                         f"(e.g. np.{s.dtype}(0) or x.astype(np.{s.dtype}))")
        values.append(A.convert_value(st.b, s.value, init.dtype))
    return values


def _drop_arg(block: Block, pos: int) -> None:
    """Remove the unused argument `pos` of `block` (the later ones move down)."""
    del block.args[pos]
    for a in block.args[pos:]:
        a.index -= 1


def _block_with(types: list[TensorType]) -> Block:
    block = Block()
    for t in types:
        block.args.append(Value(t, None, len(block.args), ""))
    return block


def _segment(what: str, checkpoint: Any, trip: Dim | None) -> int | None:
    """The checkpoint= option as iterations per stored carry: True is about sqrt(trip)."""
    if checkpoint is None or checkpoint is False:
        return None
    if checkpoint is True:
        return max(1, math.isqrt(trip - 1) + 1) if isinstance(trip, int) and trip > 0 else 32
    if isinstance(checkpoint, int) and checkpoint >= 1:
        return checkpoint
    raise Reject(CompileError, f"{what}: checkpoint must be True, False, None or a positive int "
                 f"(iterations per stored carry), got {checkpoint!r}")


def fori_loop(st: Any, lower: Any, upper: Any, body_fn: Any, init: Any,
              checkpoint: Any = None) -> Any:
    """compiler.fori_loop(lower, upper, body_fn, init) staged as a for op."""
    start, stop = _bound(st, lower, "lower"), _bound(st, upper, "upper")
    d0, d1 = _dim_of(start), _dim_of(stop)
    trip = trip_count(d0, d1, 1) if d0 is not None and d1 is not None else None
    segment = _segment("fori_loop", checkpoint, trip)
    inits, td = _carry_in(st, "fori_loop", init)
    n_user = len(inits)
    state = st.random_state()               # key-less draws in the body: carry the state
    outside = state.value
    body = _block_with([INDEX_TYPE] + [x.type for x in inits] + [state.type])
    try:
        with st.b.inside(body), st.region():
            state.value = body.args[-1]
            carry = pytrees.unflatten(td, [Staged(a, weak=x.weak)
                                           for a, x in zip(body.args[1:], inits)])
            out = st.call(body_fn, [Staged(body.args[0], weak=True), carry], {})
            body.results = _carry_out(st, "fori_loop", "body_fn", out, inits, td) + [state.value]
    finally:
        drew = bool(body.results) and body.results[-1] is not body.args[-1]
        state.value = outside
    if drew:
        inits = inits + [state]
    else:                                    # no draw: no state, no key for the kernel
        body.args.pop()
        body.results.pop()
    n = len(inits)
    outer = close_over([body])
    body.results.extend(body.args[1 + n:])
    results = ops.for_loop(st.b, _as_value(st, start), _as_value(st, stop),
                           [*[x.value for x in inits], *outer], body, 1, trip, segment)
    if drew:
        state.value = results[n - 1]
    return pytrees.unflatten(td, [Staged(r, weak=x.weak) for r, x in zip(results[:n_user], inits)])


def scan(st: Any, fn: Any, init: Any, xs: Any = None, length: Any = None,
         reverse: bool = False, checkpoint: Any = None) -> Any:
    """compiler.scan(fn, init, xs, length, reverse) staged as a for op: xs are read and ys
    written a row per iteration (the rows of ys are the op's carried buffers)."""
    if not isinstance(reverse, bool):
        raise Reject(CompileError, "scan: reverse must be a static bool")
    x_leaves, x_td = _leaves(xs)
    x_vals = [A.lift(st.b, x) for x in x_leaves]
    if any(x.ndim == 0 for x in x_vals):
        raise Reject(CompileError, "scan: every leaf of xs needs a leading axis to scan over")
    sizes = {x.shape[0] for x in x_vals}
    if length is not None:
        if not isinstance(length, int):
            raise Reject(CompileError, "scan: length must be a static int")
        sizes.add(length)
    if len(sizes) != 1:
        raise Reject(CompileError, f"scan: the leading axes of xs (and length) differ: "
                     f"{sorted(map(str, sizes))}" if sizes else "scan: needs xs or length")
    (trip,) = sizes
    segment = _segment("scan", checkpoint, trip)
    inits, td = _carry_in(st, "scan", init)
    n_user = len(inits)
    state = st.random_state()               # key-less draws in fn: carry the state
    outside = state.value
    inits = inits + [state]
    n, m = len(inits), len(x_vals)
    body = _block_with([INDEX_TYPE] + [x.type for x in inits] + [x.type for x in x_vals])
    with st.b.inside(body), st.region():
        state.value = body.args[n]
        k = body.args[0]
        row = k
        if reverse:
            last = ops.sub(st.b, A.lift(st.b, trip, I64).value, ops.scalar(st.b, 1, I64))
            row = ops.sub(st.b, last, k)
        carry = pytrees.unflatten(td, [Staged(a, weak=x.weak)
                                       for a, x in zip(body.args[1:], inits[:n_user])])
        x_rows = [I.getitem(st.b, Staged(a), Staged(row, weak=True))
                  for a in body.args[1 + n:1 + n + m]]
        out = st.call(fn, [carry, pytrees.unflatten(x_td, x_rows) if x_leaves or xs is not None
                          else None], {})
        if not isinstance(out, tuple) or len(out) != 2:
            raise Reject(CompileError, "scan: fn must return a pair (new carry, y)")
        new_carry, y = out
        results = _carry_out(st, "scan", "fn", new_carry, inits[:n_user], td) + [state.value]
        y_leaves, y_td = _leaves(y)
        ys = [A.lift(st.b, v) for v in y_leaves]
        zero = ops.scalar(st.b, 0, I64)
        for v in ys:
            arg = Value(v.type.with_shape((trip,) + tuple(v.shape)), None, len(body.args), "ys")
            body.args.append(arg)
            piece = ops.reshape(st.b, v.value, (1,) + tuple(v.shape))
            results.append(ops.dynamic_update_slice(st.b, arg, piece, [row] + [zero] * v.ndim))
        body.results = results[:n] + list(body.args[1 + n:1 + n + m]) + results[n:]
    drew = body.results[n - 1] is not body.args[n]
    state.value = outside
    if not drew:                             # no draw: no state, no key for the kernel
        _drop_arg(body, n)
        del body.results[n - 1]
        inits, n = inits[:n_user], n - 1
    n_ys = len(ys)
    outer = close_over([body])
    body.results.extend(body.args[1 + n + m + n_ys:])
    empty = [ops.full(st.b, 0, a.type) for a in body.args[1 + n + m:1 + n + m + n_ys]]
    res = ops.for_loop(st.b, A.lift(st.b, 0, I64).value, A.lift(st.b, trip, I64).value,
                       [*[x.value for x in inits], *[x.value for x in x_vals], *empty, *outer],
                       body, 1, trip, segment)
    if drew:
        state.value = res[n - 1]
    final = pytrees.unflatten(td, [Staged(r, weak=x.weak) for r, x in zip(res[:n_user], inits)])
    stacked = pytrees.unflatten(y_td, [Staged(r) for r in res[n + m:n + m + n_ys]])
    return final, stacked
