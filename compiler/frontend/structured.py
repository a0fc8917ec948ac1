"""``compiler.cond``, ``compiler.switch`` and ``compiler.while_loop`` in staged code.

The explicit forms of data-dependent control flow (JAX's semantics): the branches
and the loop body are functions of pytrees, staged once each into the regions of a
``cond`` or ``while`` op. They build the same ops as a Python ``if``/``while`` on an
array value (``control.py``), with ``kind`` "cond", "switch" or "while_loop": the
kind tells vmap that the user asked for per-element control flow (a batched
predicate becomes a per-element cond, or a masked loop; ``primitives/control.py``),
where a Python ``if`` on a batched value stays an error.

* ``cond(pred, true_fn, false_fn, *operands)``: ``pred`` has one element; both
  branches are staged and must return the same structure, shapes and dtypes (a
  Python number may take the other side's dtype, as NEP 50 promotion would).
* ``switch(index, branches, *operands)``: the index is clamped to the branches; a
  chain of conds (kind "switch").
* ``while_loop(cond_fn, body_fn, init)``: the carry is ``init``'s pytree; the body
  must return the same structure, shapes and dtypes (a weak Python number may widen
  once). Every leaf is carried; a leaf the body passes through unchanged costs
  nothing and keeps reverse mode possible for it.

A static predicate or index (a Python value) runs only the branch Python would.
"""
from __future__ import annotations

from typing import Any

import numpy as np

import compiler.primitives as P
from compiler.errors import CompileError, SideEffectError
from compiler.frontend import arrays as A
from compiler.frontend import pytrees
from compiler.frontend.control import (LeafType, _initial_types, _is_leaf, _name_of, _widen, close_over,
                                       leaf_labels, materialize, merge, run_region)
from compiler.frontend.values import Closure, Reject, Staged
from compiler.ir.core import Block, Value
from compiler.ir.types import BOOL, I64
from compiler.primitives import ops


def _pure(st: Any, fn: Any, args: list[Any], what: str) -> Any:
    """``fn(*args)`` staged, refusing writes into arrays that live outside it (the values
    of a region cannot escape it; the functions are pure, as in JAX)."""
    objs = [o for o in st.reachable_staged() if o is not st.rng]   # draws may advance the state
    before = [o.value for o in objs]
    out = st.call(fn, args, {})
    for o, v in zip(objs, before):
        if o.value is not v:
            name = _name_of(st, o)
            for o2, v2 in zip(objs, before):
                o2.value = v2
            raise Reject(SideEffectError, f"{what} writes into the array '{name}' defined outside it",
                         "return the new value from the function instead: the functions given to "
                         "compiler.cond, switch and while_loop must be pure")
    return out


def _check_callable(fn: Any, what: str) -> None:
    if not (isinstance(fn, Closure) or callable(fn)):
        raise Reject(CompileError, f"{what} must be a function, got {type(fn).__name__}")


def _static_predicate(x: Any, what: str) -> bool:
    arr = np.asarray(x)
    if arr.size != 1:
        raise Reject(CompileError, f"{what} must have one element, got shape {arr.shape}")
    return bool(arr.reshape(()))


def _predicate(st: Any, x: Staged, what: str) -> Value:
    if not (isinstance(x.type.size, int) and x.type.size == 1):
        raise Reject(CompileError, f"{what} must be a scalar (one element), got an array {x.type}",
                     "reduce it first, e.g. with np.all(...) or np.any(...)")
    return A.truth_value(st.b, x)


def _structure_check(a: Any, b: Any, names: tuple[str, str], what: str) -> None:
    (_, ta), (_, tb) = (pytrees.flatten(o, is_leaf=_is_leaf) for o in (a, b))
    if ta != tb:
        raise Reject(CompileError, f"{what}: {names[0]} and {names[1]} return different structures: "
                     f"{ta} and {tb}", "return the same pytree (tuple, list, dict) on every branch")


def _two_branches(st: Any, pred: Value, thunks: tuple[Any, Any], names: tuple[str, str],
                  kind: str) -> Any:
    state = st.random_state()            # key-less draws in a branch advance it: merge it too
    before = state.value

    def branch(thunk: Any) -> Any:
        def run() -> tuple[Any, Value]:
            try:
                out = thunk()
                return out, state.value
            finally:
                state.value = before
        return run
    (bt, (ot, at)), (bf, (of, af)) = run_region(st, branch(thunks[0])), run_region(st, branch(thunks[1]))
    _structure_check(ot, of, names, f"compiler.{kind}")
    where = (f"in {names[0]}", f"in {names[1]}")
    labels = leaf_labels(ot, "the result")
    if at is before and af is before:
        return merge(st, pred, [bt, bf], [ot, of], kind, labels, where)
    out, new_state = merge(st, pred, [bt, bf], [(ot, Staged(at)), (of, Staged(af))], kind,
                           labels + ["the random state"], where)
    state.value = new_state.value
    return out


def stage_cond(st: Any, pred: Any, true_fn: Any, false_fn: Any, *operands: Any) -> Any:
    _check_callable(true_fn, "compiler.cond: true_fn")
    _check_callable(false_fn, "compiler.cond: false_fn")
    args = list(operands)
    if not isinstance(pred, Staged):
        chosen = true_fn if _static_predicate(pred, "compiler.cond: pred") else false_fn
        return st.call(chosen, args, {})
    pv = _predicate(st, pred, "compiler.cond: pred")
    return _two_branches(st, pv, (lambda: _pure(st, true_fn, args, "compiler.cond: true_fn"),
                                  lambda: _pure(st, false_fn, args, "compiler.cond: false_fn")),
                         ("true_fn", "false_fn"), "cond")


def stage_switch(st: Any, index: Any, branches: Any, *operands: Any) -> Any:
    if not isinstance(branches, (list, tuple)) or not branches:
        raise Reject(CompileError, "compiler.switch: branches must be a non-empty list or tuple of "
                     f"functions, got {type(branches).__name__}")
    for i, fn in enumerate(branches):
        _check_callable(fn, f"compiler.switch: branches[{i}]")
    args, n = list(operands), len(branches)
    if not isinstance(index, Staged):
        arr = np.asarray(index)
        if arr.size != 1 or arr.dtype.kind not in "biu":
            raise Reject(CompileError, f"compiler.switch: the index must be an integer scalar, got {index!r}")
        return st.call(branches[int(np.clip(int(arr.reshape(())), 0, n - 1))], args, {})
    if index.dtype.kind not in "biu":
        raise Reject(CompileError, f"compiler.switch: the index must be an integer scalar, got an array "
                     f"{index.type}", "convert it with .astype(np.int64)")
    _predicate(st, index, "compiler.switch: the index")
    idx = ops.convert(st.b, A.reshape_value(st.b, index.value, ()), I64)
    idx = ops.minimum(st.b, ops.maximum(st.b, idx, ops.scalar(st.b, 0, I64)), ops.scalar(st.b, n - 1, I64))
    return _switch_from(st, idx, list(branches), 0, args)


def _switch_from(st: Any, idx: Value, branches: list[Any], i: int, args: list[Any]) -> Any:
    if i == len(branches) - 1:
        return _pure(st, branches[i], args, f"compiler.switch: branches[{i}]")
    pred = ops.eq(st.b, idx, ops.scalar(st.b, i, I64))
    rest = f"branches[{i + 1}]" if i + 2 == len(branches) else f"branches[{i + 1}:]"
    return _two_branches(st, pred, (lambda: _pure(st, branches[i], args, f"compiler.switch: branches[{i}]"),
                                     lambda: _switch_from(st, idx, branches, i + 1, args)),
                         (f"branches[{i}]", rest), "switch")


def _enter(block: Block, treedef: Any, leaves: list[Any], types: list[LeafType | None]) -> Any:
    """The carry as staged values bound to fresh arguments of `block`."""
    bound: list[Any] = []
    for x, t in zip(leaves, types):
        if t is None:
            bound.append(x)
            continue
        v = Value(t.type, None, len(block.args), "")
        block.args.append(v)
        bound.append(Staged(v, weak=t.weak))
    return pytrees.unflatten(treedef, bound)


def _body_leaves(st: Any, body_fn: Any, carry: Any, treedef: Any) -> list[Any]:
    out = _pure(st, body_fn, [carry], "compiler.while_loop: body_fn")
    leaves, out_td = pytrees.flatten(out, is_leaf=_is_leaf)
    if out_td != treedef:
        raise Reject(CompileError, "compiler.while_loop: body_fn must return a value of the structure "
                     f"of init, {treedef}, but returns {out_td}", "return the whole carry, e.g. a tuple "
                     "of the same length as init")
    return leaves


def stage_while_loop(st: Any, cond_fn: Any, body_fn: Any, init: Any) -> Any:
    _check_callable(cond_fn, "compiler.while_loop: cond_fn")
    _check_callable(body_fn, "compiler.while_loop: body_fn")
    leaves, treedef = pytrees.flatten(init, is_leaf=_is_leaf)
    labels = leaf_labels(init, "init")
    types = _initial_types(leaves)
    state = st.random_state()            # key-less draws in the body: carry the state
    outside = state.value
    drew = False
    for _ in range(4):            # a weak Python number may widen once (0 -> a float carry)
        block = Block()
        try:
            with st.b.inside(block), st.region():
                outs = _body_leaves(st, body_fn, _enter(block, treedef, leaves, types), treedef)
                drew = drew or state.value is not outside
        finally:
            state.value = outside
        widened = _widen(types, outs, leaves, labels)
        if widened == types:
            break
        types = widened
    else:
        raise Reject(CompileError, "compiler.while_loop: the types of the carried values do not settle")
    cond_block, body_block = Block(), Block()
    n_user = sum(t is not None for t in types)
    try:
        with st.b.inside(cond_block), st.region():
            carry = _enter(cond_block, treedef, leaves, types)
            if drew:                         # the state is the last carried value
                state.value = _state_arg(cond_block, outside)
            test = _pure(st, cond_fn, [carry], "compiler.while_loop: cond_fn")
            if isinstance(test, Staged):
                cond_block.results = [_predicate(st, test, "compiler.while_loop: cond_fn's result")]
            else:
                value = _static_predicate(test, "compiler.while_loop: cond_fn's result")
                cond_block.results = [A.constant(st.b, value, BOOL).value]
        state.value = outside
        with st.b.inside(body_block), st.region():
            carry = _enter(body_block, treedef, leaves, types)
            if drew:
                state.value = _state_arg(body_block, outside)
            outs = _body_leaves(st, body_fn, carry, treedef)
            body_block.results = [materialize(st, o, t) for o, t in zip(outs, types) if t is not None]
            if drew:
                body_block.results.append(state.value)
    finally:
        state.value = outside
    init_values = [materialize(st, x, t) for x, t in zip(leaves, types) if t is not None]
    if drew:
        init_values.append(outside)
    n = len(init_values)
    outer = close_over([cond_block, body_block])
    body_block.results.extend(body_block.args[n:])
    emitted = st.b.emit(P.while_, [*init_values, *outer], {"kind": "while_loop"},
                        [cond_block, body_block])
    if drew:
        state.value = emitted[n_user]
    results = iter(emitted[:n_user])
    final = [x if t is None else Staged(next(results), weak=t.weak) for x, t in zip(leaves, types)]
    return pytrees.unflatten(treedef, final)


def _state_arg(block: Block, like: Value) -> Value:
    """A fresh block argument for the random state (after the carry's)."""
    v = Value(like.type, None, len(block.args), "rng")
    block.args.append(v)
    return v
