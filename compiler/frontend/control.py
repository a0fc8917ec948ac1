"""Control flow: static loops and branches are run in Python; data-dependent
ones become structured ``cond``/``while`` ops with isolated regions.

A data-dependent ``if`` runs each branch into its own region, then merges
every variable the branches (re)bind, and every array they update in place,
into the results of one ``cond`` (SSA with yields). Regions are built with
free references to outer values and then *closed over*: each outer value a
region uses becomes an operand of the op and an argument of the region.

``while`` on a data-dependent test is staged twice: a trial run finds the
loop-carried values (rebound names, updated arrays) and their types after
one iteration; the real run builds the ``cond`` and ``body`` regions over
block arguments for exactly those values. A carried value whose dtype or
shape changes in the body is an error naming the variable (a weak Python
number may widen once, as NEP 50 promotion would make it).

Early ``return`` (and ``break``/``continue`` of an enclosing static loop)
inside a data-dependent ``if`` is handled by running the rest of the
function in both branches (continuations): both regions then end with the
function's return value, which the cond yields.
"""
from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import compiler.primitives as P
from compiler.errors import CompileError, UnsupportedError
from compiler.frontend import arrays as A
from compiler.frontend import writes as W
from compiler.frontend import pytrees
from compiler.frontend.values import Reject, ReturnSignal, Staged, Undefined
from compiler.ir.core import Block, Value
from compiler.ir.dims import DimExpr
from compiler.ir.types import BOOL, TensorType

MAX_UNROLL = 10_000

# ---- closing regions over outer values ---------------------------------------------------


def free_values(block: Block) -> list[Value]:
    """Values used by `block` (operands or yields) but defined outside it, in first-use order."""
    defined = set(block.args)
    out: dict[Value, None] = {}
    for op in block.ops:
        for v in op.operands:
            if v not in defined:
                out.setdefault(v)
        defined.update(op.results)
    for r in block.results:
        if r not in defined:
            out.setdefault(r)
    return list(out)


def close_over(blocks: list[Block]) -> list[Value]:
    """Make `blocks` isolated: the outer values they use become extra arguments
    (the same list for every block, appended). Returns those outer values."""
    captured: dict[Value, None] = {}
    for blk in blocks:
        for v in free_values(blk):
            captured.setdefault(v)
    outer = list(captured)
    for blk in blocks:
        new = [Value(v.type, None, len(blk.args) + i, v.hint) for i, v in enumerate(outer)]
        mapping = dict(zip(outer, new))
        blk.args.extend(new)
        for op in blk.ops:
            op.operands = tuple(mapping.get(v, v) for v in op.operands)
        blk.results = [mapping.get(v, v) for v in blk.results]
    return outer


# ---- merging the values of two regions ------------------------------------------------------


def _is_number(x: Any) -> bool:
    return A.is_scalar_like(x) and not isinstance(x, Staged)


def same_static(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and bool(np.array_equal(a, b)))
    if _is_number(a) and _is_number(b):
        return type(a) is type(b) and a == b
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - objects with odd __eq__ are simply "different"
        return False


@dataclass
class LeafType:
    """The type a merged (or loop-carried) leaf gets."""

    type: TensorType
    weak: bool


def _abstract(x: Any) -> tuple[tuple[Any, ...], np.dtype, bool]:
    if isinstance(x, Staged):
        return tuple(x.shape), x.dtype, x.weak
    if isinstance(x, DimExpr):
        return (), np.dtype(np.int64), True
    if isinstance(x, np.ndarray):
        return x.shape, A.supported_dtype(x.dtype), False
    return (), A.result_dtype([x]), isinstance(x, A.PY_SCALARS)


def join_types(label: str, a: Any, b: Any, where: tuple[str, str]) -> LeafType:
    """The common type of two values of one variable, or an error naming it."""
    (sa, da, wa), (sb, db, wb) = _abstract(a), _abstract(b)
    if sa != sb:
        raise Reject(CompileError, f"{label} has shape {A.fmt_shape(sa)} {where[0]} and "
                     f"{A.fmt_shape(sb)} {where[1]}", "give it the same shape on every path")
    if da == db:
        dtype = da
    elif wa and wb:
        dtype = A.result_dtype([{"f": 0.0, "i": 0, "b": False}[d.kind] for d in (da, db)])
    elif wa or wb:
        strong, weak_dt = (db, da) if wa else (da, db)
        dtype = A.result_dtype([np.zeros((), strong), {"f": 0.0, "i": 0, "b": False}[weak_dt.kind]])
        if dtype != strong:
            _dtype_error(label, da, db, where)
    else:
        _dtype_error(label, da, db, where)
    return LeafType(TensorType(dtype, sa), wa and wb)


def _dtype_error(label: str, da: np.dtype, db: np.dtype, where: tuple[str, str]) -> None:
    raise Reject(CompileError, f"{label} has dtype {da} {where[0]} and {db} {where[1]}",
                 f"cast it explicitly, e.g. .astype(np.{np.result_type(da, db)}), so that every "
                 "path gives the same dtype")


def materialize(st: Any, x: Any, lt: LeafType) -> Value:
    """`x` as a Value of exactly the leaf type (built at the current insertion point)."""
    s = A.lift(st.b, x, lt.type.dtype) if not isinstance(x, Staged) else x
    return A.convert_value(st.b, s.value, lt.type.dtype)


def leaf_labels(tree: Any, prefix: str = "") -> list[str]:
    """A readable name per leaf: 'y', 'state[0]', "params['w']"."""
    kids = pytrees._children(tree) if not isinstance(tree, (Staged, Undefined)) else None
    if kids is None:
        return [prefix]
    kind, aux, children = kids
    if kind == pytrees.DICT:
        keys = [f"[{k!r}]" for k in aux]
        if not prefix:
            keys = [f"variable '{k}'" if isinstance(k, str) else repr(k) for k in aux]
    else:
        keys = [f"[{i}]" for i in range(len(children))]
    out: list[str] = []
    for key, child in zip(keys, children):
        out.extend(leaf_labels(child, prefix + key if prefix else key))
    return out


def run_region(st: Any, fn: Callable[[], Any]) -> tuple[Block, Any]:
    """Run `fn` with ops going into a fresh block (one region deeper)."""
    block = Block()
    with st.b.inside(block), st.region():
        out = fn()
    return block, out


def _predicate_loc(pred: Value) -> Any:
    """The source span of the expression that computed a predicate (None: keep the current)."""
    return pred.op.loc if pred.op is not None else None


def merge(st: Any, pred: Value, blocks: list[Block], outs: list[Any], kind: str,
          labels: list[str] | None = None,
          where: tuple[str, str] = ("in one branch", "in the other")) -> Any:
    """Yield the two branch results from their regions and build the cond."""
    (lt, tdt), (lf, tdf) = (pytrees.flatten(o, is_leaf=_is_leaf) for o in outs)
    if tdt != tdf:
        raise Reject(CompileError, f"the branches of a data-dependent {kind} give different "
                     f"structures: {tdt} and {tdf}", "return the same kind of value on every path")
    labels = labels or leaf_labels(outs[0])
    merged: list[Any] = []
    yielded: list[tuple[int, LeafType]] = []
    for i, (a, b_) in enumerate(zip(lt, lf)):
        if isinstance(a, Undefined) or isinstance(b_, Undefined):
            merged.append(Undefined(labels[i].replace("variable ", ""), "it is assigned in only "
                                    f"one branch of the data-dependent {kind}",
                                    b_ if isinstance(a, Undefined) else a))
        elif not isinstance(a, Staged) and not isinstance(b_, Staged) and same_static(a, b_):
            merged.append(a)
        else:
            _check_mergeable(labels[i], a, b_, kind)
            yielded.append((i, join_types(labels[i], a, b_, where)))
            merged.append(None)
    for block, leaves in zip(blocks, (lt, lf)):
        with st.b.inside(block):
            block.results = [materialize(st, leaves[i], t) for i, t in yielded]
    operands = close_over(blocks)
    with st.b.at(_predicate_loc(pred)):    # errors about the branch point at its condition
        results = st.b.emit(P.cond, [pred, *operands], {"kind": kind}, blocks)
    for (i, t), r in zip(yielded, results):
        merged[i] = Staged(r, weak=t.weak)
    return pytrees.unflatten(tdt, merged)


def _is_leaf(x: Any) -> bool:
    return isinstance(x, (Staged, Undefined))


def _check_mergeable(label: str, a: Any, b: Any, kind: str) -> None:
    for v in (a, b):
        if not isinstance(v, Staged) and not _is_number(v) and not isinstance(v, np.ndarray):
            raise Reject(CompileError, f"{label} is {_describe(a)} in one branch and {_describe(b)} "
                         f"in the other branch of a data-dependent {kind}; only arrays and numbers "
                         "can differ between branches")


def _describe(x: Any) -> str:
    if isinstance(x, Staged):
        return f"an array {x.type}"
    text = repr(x)
    return text if len(text) < 40 else f"a {type(x).__name__}"


def cond(st: Any, pred: Staged, branches: tuple[Callable[[], Any], Callable[[], Any]],
         kind: str, label: str) -> Any:
    """Run two thunks as the regions of one cond on `pred`; merge their results."""
    pv = A.truth_value(st.b, pred)
    (bt, ot), (bf, of) = run_region(st, branches[0]), run_region(st, branches[1])
    return merge(st, pv, [bt, bf], [ot, of], kind, leaf_labels(ot, label))


# ---- data-dependent if ------------------------------------------------------------------------


def has_escape(stmts: list[ast.stmt], loops: bool = True) -> bool:
    """Does a return (or a break/continue of an enclosing loop) occur in `stmts`?"""
    for node in stmts:
        walk = _walk_returns_only(node) if isinstance(node, (ast.For, ast.While)) \
            else _walk_same_function(node, loops)
        for sub in walk:
            if isinstance(sub, ast.Return) or (loops and isinstance(sub, (ast.Break, ast.Continue))):
                return True
    return False


def _walk_same_function(node: ast.AST, loops: bool) -> Any:
    yield node
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if loops and isinstance(child, (ast.For, ast.While)):
            yield from _walk_returns_only(child)
            continue
        yield from _walk_same_function(child, loops)


def _walk_returns_only(node: ast.AST) -> Any:
    for sub in _walk_same_function(node, loops=False):
        if isinstance(sub, ast.Return):
            yield sub


def _has_continue(stmts: list[ast.stmt]) -> bool:
    """A `continue` of an enclosing loop (not of a loop nested in `stmts`)."""
    for node in stmts:
        if isinstance(node, (ast.For, ast.While)):
            continue
        if any(isinstance(sub, ast.Continue) for sub in _walk_same_function(node, loops=True)):
            return True
    return False


def staged_if(st: Any, node: ast.If, pred: Staged) -> None:
    """`if` on an array value: merge mode, or continuation mode with early exits."""
    if _has_continue(node.body) or _has_continue(node.orelse):
        raise Reject(UnsupportedError, "`continue` under an `if` on an array value is not supported",
                     "invert the test and nest the rest of the loop body: `if not cond: ...` "
                     "(`break` and `return` there are supported)")
    if has_escape(node.body) or has_escape(node.orelse):
        after = list(st.conts)
        value = cond(st, pred, (lambda: st.run_continuation(node.body, after),
                                lambda: st.run_continuation(node.orelse, after)), "if",
                     "the return value")
        raise ReturnSignal(value)
    _merge_if(st, node, pred)


def _merge_if(st: Any, node: ast.If, pred: Staged) -> None:
    pv = A.truth_value(st.b, pred)
    env = st.scope.env
    before = dict(env)
    objs = st.reachable_staged()
    saved_vals = [o.value for o in objs]
    results = []
    for body in (node.body, node.orelse):
        block, _ = run_region(st, functools.partial(st.exec_block, body))
        results.append((block, dict(env), [o.value for o in objs]))
        env.clear()
        env.update(before)
        for o, v in zip(objs, saved_vals):
            o.value = v
    (bt, et, vt), (bf, ef, vf) = results
    missing = Undefined("", "")
    names = sorted(n for n in set(et) | set(ef)
                   if et.get(n, missing) is not before.get(n, missing)
                   or ef.get(n, missing) is not before.get(n, missing))
    changed = [i for i, o in enumerate(objs) if vt[i] is not saved_vals[i] or vf[i] is not saved_vals[i]]
    trees = [({n: e.get(n, Undefined(n, "")) for n in names},
              [Staged(vals[i], weak=objs[i].weak) for i in changed]) for e, vals in ((et, vt), (ef, vf))]
    labels = state_labels(st, trees[0][0], [objs[i] for i in changed])
    new_env, new_vals = merge(st, pv, [bt, bf], trees, "if", labels)
    for n, v in new_env.items():
        env[n] = v
    for i, v in zip(changed, new_vals):
        objs[i].value = v.value
    W.refresh_roots(st.b, [objs[i] for i in changed])    # views read again from their bases


# ---- data-dependent while -------------------------------------------------------------------


def assigned_names(stmts: list[ast.stmt], augmented: bool = True) -> set[str]:
    """Names (re)bound by assignments, loops, defs and walruses in `stmts` (same function),
    and by augmented assignments unless `augmented` is False.

    ``y[i] = v`` does not bind ``y`` (it updates the array ``y`` names)."""
    out: set[str] = set()
    for node in stmts:
        for sub in _walk_same_function(node, loops=False):
            targets: list[ast.AST] = []
            if isinstance(sub, ast.Assign):
                targets = list(sub.targets)
            elif isinstance(sub, (ast.AnnAssign, ast.For, ast.NamedExpr)) or \
                    (augmented and isinstance(sub, ast.AugAssign)):
                targets = [sub.target]
            elif isinstance(sub, ast.FunctionDef):
                out.add(sub.name)
            for t in targets:
                out.update(target_names(t))
    return out


def in_place_names(stmts: list[ast.stmt], env: dict[str, Any]) -> set[str]:
    """Names the statements bind only by augmented assignment (``row += v``) and that hold an
    array: ``+=`` updates that array in place, so a loop carries the array itself (views
    keep writing through to their base) rather than the name."""
    aug: set[str] = set()
    for node in stmts:
        for sub in _walk_same_function(node, loops=False):
            if isinstance(sub, ast.AugAssign) and isinstance(sub.target, ast.Name):
                aug.add(sub.target.id)
    rebound = assigned_names(stmts, augmented=False)
    return {n for n in aug - rebound if isinstance(env.get(n), Staged) and env[n].ndim > 0}


def target_names(target: ast.AST) -> list[str]:
    """The plain names an assignment target binds (through tuple unpacking)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for elt in target.elts for n in target_names(elt)]
    if isinstance(target, ast.Starred):
        return target_names(target.value)
    return []


def check_while_body(node: ast.While | ast.For) -> ast.AST | None:
    """The first return/break/continue that would leave a data-dependent while."""
    for stmt in node.body:
        walk = _walk_returns_only(stmt) if isinstance(stmt, (ast.For, ast.While)) \
            else _walk_same_function(stmt, loops=True)
        for sub in walk:
            if isinstance(sub, (ast.Return, ast.Break, ast.Continue)):
                return sub
    return None


@dataclass
class Carry:
    """The loop-carried state: rebound names (a dict pytree) and arrays updated in place."""

    names: list[str]
    objs: list[Staged]                  # arrays updated in place that no carried name holds
    treedef: Any
    inits: list[Any]                    # the leaves before the loop
    types: list[LeafType | None]        # None: not carried (static, or never changed)
    n_env: int                          # leaves [0, n_env) come from names, the rest from objs
    mutated: list[bool] = field(default_factory=list)   # a name's array updated in place


def staged_while(st: Any, node: ast.While) -> None:
    bad = check_while_body(node)
    if bad is not None:
        what = type(bad).__name__.lower()
        raise Reject(UnsupportedError, f"`{what}` inside a data-dependent while loop is not "
                     "supported", "fold the exit into the loop condition (while cond and not "
                     "done:), or use a static for loop with a data-dependent if")
    env = st.scope.env
    before = dict(env)
    in_place = in_place_names(node.body, env)
    names = sorted(n for n in assigned_names(node.body) if n in env
                   and not isinstance(env[n], Undefined) and n not in in_place)
    held = {id(env[n]) for n in names}
    objs = [o for o in st.reachable_staged() if id(o) not in held]
    carry = _discover(st, node, names, objs)
    results = _build_while(st, node, carry)
    _bind(st, carry, results)
    for n in assigned_names(node.body):
        if n not in before:
            env[n] = Undefined(n, "it is first assigned inside a data-dependent while loop; "
                               "initialize it before the loop")
    st.exec_block(node.orelse)


def _state(st: Any, names: list[str], objs: list[Staged]) -> tuple[list[Any], Any]:
    tree = ({n: st.scope.env.get(n, Undefined(n, "")) for n in names}, list(objs))
    return pytrees.flatten(tree, is_leaf=_is_leaf)


def _initial_types(leaves: list[Any]) -> list[LeafType | None]:
    out: list[LeafType | None] = []
    for x in leaves:
        if isinstance(x, Staged) or _is_number(x):
            shape, dtype, weak = _abstract(x)
            out.append(LeafType(TensorType(dtype, shape), weak))
        else:
            out.append(None)
    return out


class _Saved:
    """Everything a trial or region build changes, to put back afterwards."""

    def __init__(self, st: Any, carry: Carry) -> None:
        self.st, self.env = st, dict(st.scope.env)
        self.values = [(o, o.value) for o in carry.objs]

    def restore(self) -> None:
        self.st.scope.env.clear()
        self.st.scope.env.update(self.env)
        for o, v in self.values:
            o.value = v


def _enter(st: Any, block: Block, carry: Carry) -> list[Any]:
    """Bind the carried state to fresh arguments of `block`; returns what each leaf is bound to."""
    bound: list[Any] = []
    for i, (x, t) in enumerate(zip(carry.inits, carry.types)):
        if t is None:
            bound.append(x)
            continue
        v = Value(t.type, None, len(block.args), "")
        block.args.append(v)
        if i >= carry.n_env:
            x.value = v                      # an array updated in place keeps its identity
            bound.append(x)
        else:
            origin = x.origin if isinstance(x, Staged) else "local"
            bound.append(Staged(v, weak=t.weak, origin=origin))
    env_part, _ = pytrees.unflatten(carry.treedef, bound)
    st.scope.env.update(env_part)
    return [b if t is not None else None for b, t in zip(bound, carry.types)]


def _out_value(x: Any) -> Any:
    return x.value if isinstance(x, Staged) else x


def _widen(types: list[LeafType | None], outs: list[Any], inits: list[Any],
           labels: list[str]) -> list[LeafType | None]:
    where = ("before the loop", "after an iteration of the loop body")
    new: list[LeafType | None] = []
    for t, out, init, label in zip(types, outs, inits, labels):
        if t is None:
            if not same_static(init, out):
                raise Reject(CompileError, f"{label} changes in a data-dependent while loop but is "
                             f"{_describe(init)}, which cannot be a run-time value")
            new.append(None)
            continue
        if isinstance(out, Undefined):
            new.append(t)
            continue
        so, do, wo = _abstract(out)
        if so != t.type.shape:
            raise Reject(CompileError, f"{label} has shape {A.fmt_shape(t.type.shape)} {where[0]} "
                         f"and {A.fmt_shape(so)} {where[1]}", "keep its shape the same in the loop")
        if do == t.type.dtype:
            new.append(LeafType(t.type, t.weak and wo))
        elif not t.weak:
            _dtype_error(label, t.type.dtype, do, where)
        else:   # a weak Python number widens as NEP 50 promotion would make it
            new.append(join_types(label, {"f": 0.0, "i": 0, "b": False}[t.type.dtype.kind], out,
                                  where))
    return new


def _name_of(st: Any, obj: Staged) -> str:
    for name, value in st.scope.env.items():
        if value is obj:
            return name
    return "?"


def state_labels(st: Any, env_part: dict[str, Any], objs: list[Staged]) -> list[str]:
    """Labels for the leaves of ({name: value}, [updated arrays])."""
    labels = leaf_labels(env_part) if env_part else []
    return labels + [f"array '{_name_of(st, o)}' (updated in place)" for o in objs]


@dataclass
class Trial:
    """What one trial iteration of a loop body left: the values the carried leaves were
    bound to at entry, the leaves after the body, their IR values, and their structure."""

    bound_values: list[Any]
    outs: list[Any]
    out_values: list[Any]
    treedef: Any


def trial_iteration(st: Any, carry: Carry, enter: Callable[[Block], list[Any]],
                    body: Callable[[], None]) -> Trial:
    """Stage one iteration into a scratch region and put the state back afterwards. `enter`
    binds the carried leaves to arguments of a fresh block (``_enter``, plus a loop's own
    header: a while's test, a for loop's index); `body` stages the loop body."""
    saved = _Saved(st, carry)
    try:
        def trial() -> Trial:
            bound_values = [_out_value(x) for x in enter(Block())]
            body()
            outs, out_td = _state(st, carry.names, carry.objs)
            # read now: restoring the state puts the old values back into the arrays
            # updated in place (the leaves that are `objs`)
            return Trial(bound_values, outs, [_out_value(o) for o in outs], out_td)
        return run_region(st, trial)[1]
    finally:
        saved.restore()


def drop_unchanged(carry: Carry, trial: Trial) -> Carry:
    """Leaves the body never changes need not be carried: the body reads them as captures."""
    carry.types = [None if t is not None and ov is bv else t
                   for t, ov, bv in zip(carry.types, trial.out_values, trial.bound_values)]
    return carry


def _discover(st: Any, node: ast.While, names: list[str], objs: list[Staged]) -> Carry:
    """Trial runs: which leaves change, and a fixed point of their types."""
    inits, td = _state(st, names, objs)
    carry = Carry(names, objs, td, inits, _initial_types(inits), len(inits) - len(objs))
    labels = state_labels(st, {n: st.scope.env[n] for n in names}, objs)

    def enter(block: Block) -> list[Any]:
        bound = _enter(st, block, carry)
        _loop_test(st, node)
        return bound
    for _ in range(4):
        trial = trial_iteration(st, carry, enter, lambda: st.exec_block(node.body))
        if trial.treedef != td:
            raise Reject(CompileError, "a loop-carried value changes structure in the body of a "
                         f"data-dependent while loop: {td} becomes {trial.treedef}")
        widened = _widen(carry.types, trial.outs, inits, labels)
        if widened == carry.types:
            return drop_unchanged(carry, trial)
        carry.types = widened
    raise Reject(CompileError, "the types of the loop-carried values do not settle")


def _loop_test(st: Any, node: ast.While) -> Value:
    test = st.eval_expr(node.test)
    if not isinstance(test, Staged):
        return A.constant(st.b, bool(test), BOOL).value
    return A.truth_value(st.b, test)


def _build_while(st: Any, node: ast.While, carry: Carry) -> list[Value]:
    cond_block, body_block = Block(), Block()
    saved = _Saved(st, carry)
    with st.b.inside(cond_block), st.region():
        _enter(st, cond_block, carry)
        cond_block.results = [_loop_test(st, node)]
    saved.restore()
    with st.b.inside(body_block), st.region():
        bound = _enter(st, body_block, carry)
        st.exec_block(node.body)
        outs, _ = _state(st, carry.names, carry.objs)
        carry.mutated = [isinstance(o, Staged) and o is b for o, b in zip(outs, bound)]
        body_block.results = [materialize(st, o, t) for o, t in zip(outs, carry.types)
                              if t is not None]
    saved.restore()
    init_values = [materialize(st, x, t) for x, t in zip(carry.inits, carry.types) if t is not None]
    n = len(init_values)
    outer = close_over([cond_block, body_block])
    body_block.results.extend(body_block.args[n:])
    with st.b.at(_predicate_loc(cond_block.results[0])):
        results = st.b.emit(P.while_, [*init_values, *outer], {"kind": "while"},
                            [cond_block, body_block])
    return list(results[:n])


def _bind(st: Any, carry: Carry, results: list[Value]) -> None:
    """Rebind names to the loop results; arrays updated in place get their new value."""
    it = iter(results)
    leaves: list[Any] = []
    mutated = carry.mutated or [False] * len(carry.inits)
    updated = []
    for i, (x, t) in enumerate(zip(carry.inits, carry.types)):
        if t is None:
            leaves.append(x)
        elif i >= carry.n_env or (mutated[i] and isinstance(x, Staged)):
            x.value = next(it)
            updated.append(x)
            leaves.append(x)
        else:
            leaves.append(Staged(next(it), weak=t.weak))
    env_part, _ = pytrees.unflatten(carry.treedef, leaves)
    st.scope.env.update(env_part)
    W.refresh_roots(st.b, updated)                  # views read again from their bases
