"""The staging interpreter: an ``ast.NodeVisitor`` that runs the user's
function with static values computed in Python and array values emitted as IR.

One ``visit_*`` per supported node (a whitelist: anything else is an
UnsupportedError naming the construct). Every visit runs with the node's
source location on the builder, and is wrapped so that an error anywhere
below it carries that location: a :class:`Reject` becomes its CompileError
class, a primitive's ShapeError a ShapeMismatchError, and any other
exception an InternalCompilerError (re-raised as is when
``AOTX_FRONTEND_DEBUG=1``). Calls live in :mod:`calls`, control flow in
:mod:`control`.
"""
from __future__ import annotations

import ast
import contextlib
import functools
import operator
import os
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from compiler.errors import CompileError, InternalCompilerError, ShapeMismatchError, \
    SideEffectError, TruthValueError, UnsupportedError, source_excerpt
from compiler.frontend import arrays as A
from compiler.frontend import control, loops, pytrees, static_args
from compiler.frontend import everyday as EV
from compiler.frontend import masked as M
from compiler.frontend import writes as W
from compiler.frontend import indexing as I
from compiler.frontend import numpy_api as NP
from compiler.frontend import sorting as SO
from compiler.frontend.calls import CallMixin, register_function
from compiler.frontend.ufuncs import binary, unary
from compiler.frontend import ufuncs as U
from compiler.frontend.values import ARG, VIEW, Selection, Scope, BreakSignal, ContinueSignal, Reject, \
    ReturnSignal, Staged, Undefined
from compiler.ir import dims
from compiler.ir.builder import Builder
from compiler.ir.core import Block, SourceLoc, Value
from compiler.ir.dims import DimExpr
from compiler.primitives import ops
from compiler.primitives.base import ShapeError

PY_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
    ast.BitXor: operator.xor, ast.MatMult: operator.matmul, ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}
PY_CMPOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
UNARY: dict[type, Callable[[Any], Any]] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert, ast.Not: operator.not_}


def debug_enabled() -> bool:
    return os.environ.get("AOTX_FRONTEND_DEBUG", "") not in ("", "0")


@dataclass
class Frame:
    """A continuation: what runs after the current block ("block"), the rest of a
    static loop ("loop"), or a boundary a continuation may not cross ("barrier")."""

    kind: str
    run: Callable[[], None]


class Stager(CallMixin, ast.NodeVisitor):
    """Runs a function's AST, building IR for everything that depends on run-time values."""

    def __init__(self, builder: Builder) -> None:
        self.b = builder
        self.scope: Scope | None = None
        self.scopes: list[Scope] = []          # active activations, callers first
        self.conts: list[Frame] = []
        self.depth = 0                          # nesting of data-dependent regions
        self.local_objects: dict[int, tuple[Any, int]] = {}
        self.return_loc: SourceLoc | None = None   # the last `return` staged (errors about results)
        self.top = builder.block                # the function's block
        self.rng: Staged | None = None          # the implicit random state (see random_state)
        self.rng_key: Value | None = None       # the call's key, from which its draws derive
        self.rng_drawn = False                  # has a draw used it yet (then it carries its line)
        self.scalar_arguments: dict[int, tuple[int, str, str]] = {}   # 0-d arguments: (position, name, function)
        self.arguments: list[Staged] = []       # the function's array arguments (writes.py)
        self.updates = False                    # may it write into them (plain jit only)
        self.contiguous: set[int] = set()       # ids of those written through a reshape

    # ---- dispatch and errors -------------------------------------------------------------

    def loc(self, node: ast.AST) -> SourceLoc:
        assert self.scope is not None
        return self.scope.source.loc(node)

    def visit(self, node: ast.AST) -> Any:
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is None:
            raise UnsupportedError(f"{_describe_node(node)} is not supported in compiled functions",
                                   self.loc(node), _syntax_hint(node))
        try:
            with self.b.at(self.loc(node)):
                return method(node)
        except (CompileError, InternalCompilerError, ReturnSignal, BreakSignal, ContinueSignal):
            raise
        except Reject as r:
            raise r.cls(r.message, self.loc(node), static_args.hint(self, node, r)) from r.__cause__
        except ShapeError as e:
            raise ShapeMismatchError(str(e), self.loc(node)) from None
        except RecursionError:
            raise UnsupportedError("recursion too deep while compiling", self.loc(node),
                                   "recursive functions must stop on static values") from None
        except Exception as e:
            if debug_enabled():
                raise
            loc = self.loc(node)
            raise InternalCompilerError(
                f"{loc}: internal compiler error while compiling this line:\n"
                f"{source_excerpt(loc)}\n{type(e).__name__}: {e}\n"
                "please report it with the function (set AOTX_FRONTEND_DEBUG=1 for the "
                "compiler traceback)") from e

    def static(self, fn: Callable[[], Any], what: str = "") -> Any:
        """Run Python on static values; its exceptions are the user's errors."""
        try:
            return fn()
        except (Reject, CompileError, ReturnSignal):
            raise
        except Exception as e:  # noqa: BLE001 - any user-level failure is reported at the node
            cls = {IndexError: I.IndexOutOfBoundsError, ValueError: TruthValueError if "truth value"
                   in str(e) else CompileError}.get(type(e), CompileError)
            raise Reject(cls, f"{what + ': ' if what else ''}{type(e).__name__}: {e}") from e

    # ---- scopes, regions, local objects ------------------------------------------------------

    @contextlib.contextmanager
    def enter(self, scope: Scope) -> Iterator[None]:
        saved = (self.scope, self.conts)
        self.scope, self.conts = scope, []
        self.scopes.append(scope)
        if len(self.scopes) > 200:
            raise Reject(UnsupportedError, "function calls nest too deeply (recursion?)",
                         "recursive functions must stop on static values")
        try:
            yield
        finally:
            self.scopes.pop()
            self.scope, self.conts = saved

    @contextlib.contextmanager
    def region(self) -> Iterator[None]:
        """Inside a data-dependent region: one level deeper, and continuations stop at its end."""
        saved = self.conts
        self.depth += 1
        self.conts = [Frame("barrier", lambda: None)]
        try:
            yield
        finally:
            self.depth -= 1
            self.conts = saved

    def register_local(self, obj: Any) -> Any:
        """Remember a container/array created by the function itself (it may mutate it)."""
        if isinstance(obj, (list, dict, set, np.ndarray)):
            self.local_objects[id(obj)] = (obj, self.depth)
        return obj

    def check_mutable(self, obj: Any, what: str) -> None:
        entry = self.local_objects.get(id(obj))
        if entry is None or entry[0] is not obj:
            raise Reject(SideEffectError, f"{what} would modify a {type(obj).__name__} that comes "
                         "from outside the function", "build a new value and return it (use "
                         "has_aux=True under transforms)")
        if entry[1] < self.depth:
            raise Reject(UnsupportedError, f"{what} inside a data-dependent if/while modifies a "
                         f"{type(obj).__name__} created outside it",
                         "build the list outside the branch, or use arrays and np.where")

    def random_state(self) -> Staged:
        """The implicit random state of key-less draws (compiler/frontend/random.py): the
        number of key-less draws made so far (int64), draw i using ``fold_in(call key, i)``.
        It and the call's key (an ``rng_key`` op) are made at the top of the function; the
        count is a staged array updated in place, so data-dependent branches and loops carry
        it like any other (a draw in a loop body differs per iteration)."""
        if self.rng is None:
            scratch = Block()
            with self.b.inside(scratch):
                self.rng_key = ops.rng_key(self.b)
                count = ops.scalar(self.b, 0, np.int64)
            self.top.ops[0:0] = scratch.ops
            self.rng = Staged(count, name="<random state>")
        return self.rng

    def note_draw(self) -> None:
        """A key-less draw at the current line: vmap(randomness='error') reports the first."""
        if not self.rng_drawn and self.rng_key is not None and self.rng_key.op is not None:
            self.rng_key.op.loc = self.b.loc
            self.rng_drawn = True

    def drop_unused_random_state(self) -> None:
        """Remove the ops of the random state when nothing drew (no key for the kernel)."""
        if self.rng_key is None:
            return
        used = {v for op in self.top.walk() for v in op.operands} | set(self.top.results)
        self.top.ops[:] = [op for op in self.top.ops[:2] if op.results[0] in used] + self.top.ops[2:]

    def reachable_staged(self) -> list[Staged]:
        """Every staged array a variable of an active scope can reach (through pytrees), and
        the implicit random state."""
        seen: dict[int, Staged] = {}
        state = self.random_state()
        seen[id(state)] = state
        for arg in self.arguments:           # updated through views, or by inlined kernels
            seen.setdefault(id(arg), arg)
        for scope in self.scopes:
            s: Scope | None = scope
            while s is not None:
                for v in s.env.values():
                    for leaf in pytrees.flatten(v, is_leaf=lambda x: isinstance(x, Staged))[0]:
                        if isinstance(leaf, Staged) and not leaf.stale:
                            for node in W.chain(leaf):     # a write through a view updates its bases
                                if not node.stale:
                                    seen.setdefault(id(node), node)
                s = s.parent
        return list(seen.values())

    # ---- blocks and continuations ----------------------------------------------------------

    def exec_block(self, stmts: list[ast.stmt]) -> None:
        for i, stmt in enumerate(stmts):
            self.conts.append(Frame("block", functools.partial(self.exec_block, stmts[i + 1:])))
            try:
                self.visit(stmt)
            finally:
                self.conts.pop()

    def run_continuation(self, body: list[ast.stmt], after: list[Frame]) -> Any:
        """Run `body`, then the continuation frames `after` (the rest of the function);
        the value the function returns."""
        frames = list(after) + [Frame("block", lambda: self.exec_block(body))]
        saved = self.conts
        try:
            while frames:
                frame = frames.pop()
                if frame.kind == "barrier":
                    raise Reject(UnsupportedError, "a data-dependent if with break/continue "
                                 "inside the body of another data-dependent if or while is not "
                                 "supported", "compute a flag with np.where and test it once")
                self.conts = list(frames)
                try:
                    frame.run()
                except (BreakSignal, ContinueSignal) as sig:
                    while frames and frames[-1].kind != "loop":
                        frames.pop()
                    if isinstance(sig, BreakSignal) and frames:
                        frames.pop()
            return None
        except ReturnSignal as r:
            return r.value
        finally:
            self.conts = saved

    def eval_expr(self, node: ast.expr) -> Any:
        return self.visit(node)

    # ---- statements ---------------------------------------------------------------------------

    def visit_Expr(self, node: ast.Expr) -> None:
        self.visit(node.value)

    def visit_Pass(self, node: ast.Pass) -> None:
        return None

    def visit_Return(self, node: ast.Return) -> None:
        self.return_loc = self.loc(node.value if node.value is not None else node)
        raise ReturnSignal(None if node.value is None else self.visit(node.value))

    def visit_Break(self, node: ast.Break) -> None:
        raise BreakSignal()

    def visit_Continue(self, node: ast.Continue) -> None:
        raise ContinueSignal()

    def visit_Assign(self, node: ast.Assign) -> None:
        value = self.visit(node.value)
        for target in node.targets:
            self.assign(target, value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.assign(node.target, self.visit(node.value))

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        value = self.visit(node.value)
        target = node.target
        if isinstance(target, ast.Name):
            self.scope.env[target.id] = self.augment(self.visit(target), node.op, value,  # type: ignore[union-attr]
                                                     target.id)
        elif isinstance(target, ast.Subscript):
            obj, index = self.visit(target.value), self.visit(target.slice)
            current = self.subscript(obj, index)
            if isinstance(obj, (list, dict, tuple)) and isinstance(current, Staged) \
                    and current.ndim > 0:      # d["w"] -= g: the array in place, d unchanged
                self.augment(current, node.op, value)
                return
            self.setitem(obj, index, self.inplace_op(current, node.op, value), target)
        elif isinstance(target, ast.Attribute) and _attribute_sink(self, target.value):
            self.assign(target, self.binop(node.op, self.visit(target), value))   # ctx.attr op= ...
        elif (part := self._part_view(target)) is not None:         # z.imag *= -1: in the view
            self.augment(part, node.op, value, ast.unparse(target))
        else:
            self.assign(target, value)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            if isinstance(target, ast.Name):
                self.scope.env.pop(target.id, None)  # type: ignore[union-attr]
            elif isinstance(target, ast.Subscript):
                obj, index = self.visit(target.value), self.visit(target.slice)
                self.check_mutable(obj, "del")
                self.static(lambda: obj.__delitem__(index))
            else:
                raise Reject(SideEffectError, "deleting an attribute modifies an outside object")

    def visit_If(self, node: ast.If) -> None:
        test = self.visit(node.test)
        if isinstance(test, Staged):
            control.staged_if(self, node, test)
            return
        self.exec_block(node.body if self.truth(test) else node.orelse)

    def visit_With(self, node: ast.With) -> None:
        """``with np.errstate(...):`` runs its body: compiled code keeps no floating-point
        error state (it never warns nor raises on NaN or division by zero), so NumPy's
        context manager has nothing to change. Other context managers are refused."""
        for item in node.items:
            ctx = self.visit(item.context_expr)
            if not isinstance(ctx, np.errstate):
                raise Reject(UnsupportedError, "a `with` statement is not supported in compiled "
                             "functions (except `with np.errstate(...)`, which does nothing "
                             "there)", "move the context manager outside the compiled function")
            if item.optional_vars is not None:
                raise Reject(UnsupportedError, "`with np.errstate(...) as name` is not supported",
                             "drop the `as` clause")
        self.exec_block(node.body)

    def visit_For(self, node: ast.For) -> None:
        how = loops.plan(self, node.iter)
        after: list[ast.stmt] = []
        if isinstance(how, loops.LoopPlan):
            unrolled = loops.stage_loop(self, node, how)
            if unrolled is None:
                return
            node, after = unrolled       # after: a rewritten return's test, run after the loop
            if not isinstance(how.trip, int):
                raise Reject(UnsupportedError, "this loop needs a static trip count",
                             "derive the bounds from static values")
            items = how.items(self)
        else:
            items = self.iterate(how.value)
        if len(items) > control.MAX_UNROLL:
            raise Reject(UnsupportedError, f"a loop of {len(items)} iterations is too long to unroll",
                         "vectorize it with array operations")
        self._for_from(node, items, 0)
        self.exec_block(after)

    def _for_from(self, node: ast.For, items: list[Any], start: int) -> None:
        for j in range(start, len(items)):
            with self.b.at(self.loc(node.target)):
                self.assign(node.target, items[j])
            self.conts.append(Frame("loop", functools.partial(self._for_from, node, items, j + 1)))
            try:
                self.exec_block(node.body)
            except BreakSignal:
                return
            except ContinueSignal:
                continue
            finally:
                self.conts.pop()
        self.exec_block(node.orelse)

    def visit_While(self, node: ast.While, count: int = 0) -> None:
        while True:
            scratch = control.Block()
            with self.b.inside(scratch):
                test = self.visit(node.test)
            if isinstance(test, Staged):
                control.staged_while(self, node)
                return
            if not self.truth(test):
                self.exec_block(node.orelse)
                return
            count += 1
            if count > control.MAX_UNROLL:
                raise Reject(UnsupportedError, "this while loop on static values did not end after "
                             f"{control.MAX_UNROLL} iterations", "check the loop condition")
            if self._while_iteration(node, count):
                return

    def _while_iteration(self, node: ast.While, count: int) -> bool:
        """One static iteration; True when the loop was left (break, or run by a continuation)."""
        self.conts.append(Frame("loop", lambda: self.visit_While(node, count)))
        try:
            self.exec_block(node.body)
        except BreakSignal:
            return True
        except ContinueSignal:
            return False
        finally:
            self.conts.pop()
        return False

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.decorator_list:
            raise Reject(UnsupportedError, "decorators on functions defined inside a compiled "
                         "function are not supported", "define the decorated function outside")
        self.scope.env[node.name] = self.make_closure(node)  # type: ignore[union-attr]

    def visit_Global(self, node: ast.Global) -> None:
        self._check_declared(node, "global")

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self._check_declared(node, "nonlocal")

    def _check_declared(self, node: ast.Global | ast.Nonlocal, kind: str) -> None:
        fn = self.scope.source.node  # type: ignore[union-attr]
        written = control.assigned_names(fn.body) if isinstance(fn, ast.FunctionDef) else set()
        for name in node.names:
            if name in written:
                raise Reject(SideEffectError, f"assigning the {kind} variable '{name}' is a side "
                             "effect that compiled code cannot have", "return the new value "
                             "instead (has_aux=True under transforms)")

    def visit_Assert(self, node: ast.Assert) -> None:
        """``assert test, msg``: a static test is checked now (a CompileError when it fails);
        an array test becomes a run-time ``check`` raising AssertionError with the message at
        this line (per element under vmap; on primal values under AD). Array-valued fields of
        an f-string message keep their source text (``f"got {x}"`` says ``got {x}``)."""
        test = self.visit(node.test)
        if isinstance(test, Staged):
            A.check_single_element(test, "assert")
            sizes: list[DimExpr] = []
            message = self._assert_message(node.msg, sizes)
            ops.check(self.b, A.truth_value(self.b, test), "AssertionError", message, sizes)
            return
        if not self.truth(test):
            msg = "" if node.msg is None else f": {self._assert_message(node.msg, [])}"
            raise Reject(CompileError, f"assertion failed at compile time{msg}")

    def _assert_message(self, node: ast.expr | None, sizes: list[DimExpr]) -> str:
        """The text of an assert's message: static values formatted now, a symbolic size as a
        placeholder filled with its run-time value (appended to `sizes`), an array value as
        its source text in braces."""
        if node is None:
            return ""
        fields = node.values if isinstance(node, ast.JoinedStr) else [node]
        parts: list[str] = []
        for v in fields:
            expr = v.value if isinstance(v, ast.FormattedValue) else v
            value = self.visit(expr)
            if isinstance(value, Staged):
                parts.append("{" + ast.unparse(expr) + "}")
            elif isinstance(value, DimExpr) and (not isinstance(v, ast.FormattedValue)
                                                 or v.format_spec is None):
                parts.append("{%d}" % len(sizes))
                sizes.append(value)
            elif isinstance(v, ast.FormattedValue):
                parts.append(self.visit(v))
            else:
                parts.append(self.static(lambda: str(value)))
        return "".join(parts)

    def visit_Raise(self, node: ast.Raise) -> None:
        if self.depth:
            raise Reject(UnsupportedError, "raise inside a data-dependent if/while is not supported",
                         "check inputs before calling the compiled function")
        exc = None if node.exc is None else self.visit(node.exc)
        raise Reject(CompileError, f"the function raises {exc!r} for these arguments")

    # ---- assignment ---------------------------------------------------------------------------

    def assign(self, target: ast.AST, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.scope.env[target.id] = value  # type: ignore[union-attr]
        elif isinstance(target, (ast.Tuple, ast.List)):
            self._unpack(target, value)
        elif isinstance(target, ast.Subscript):
            self.setitem(self.visit(target.value), self.visit(target.slice), value, target)
        elif isinstance(target, ast.Attribute) and _attribute_sink(self, target.value):
            setattr(self.visit(target.value), target.attr, value)   # ctx.attr = ... (compiler.Function)
        elif isinstance(target, ast.Attribute) and (part := self._part_view(target)) is not None:
            self.setitem(part, Ellipsis, value, ast.Subscript(target, ast.Constant(Ellipsis)))  # z.real = v
        elif isinstance(target, ast.Attribute):
            raise Reject(SideEffectError, f"assigning the attribute .{target.attr} modifies an "
                         "object from outside the compiled function",
                         "return the new value instead (has_aux=True under transforms)")
        else:
            raise Reject(UnsupportedError, f"cannot assign to {_describe_node(target)}")

    def _part_view(self, target: ast.AST) -> Staged | None:
        """`z.real` / `z.imag` as an assignment target: the view of an array's parts."""
        if isinstance(target, ast.Attribute) and target.attr in ("real", "imag"):
            obj = self.visit(target.value)
            if isinstance(obj, Staged) and not obj.weak:
                return U.real(self.b, obj) if target.attr == "real" else U.imag(self.b, obj)
        return None

    def _unpack(self, target: ast.Tuple | ast.List, value: Any) -> None:
        items = self.iterate(value)
        starred = [i for i, e in enumerate(target.elts) if isinstance(e, ast.Starred)]
        n = len(target.elts)
        if not starred and len(items) != n:
            word = "too many" if len(items) > n else "not enough"
            raise Reject(CompileError, f"{word} values to unpack (expected {n}, got {len(items)})")
        if starred:
            k = starred[0]
            tail = n - k - 1
            if len(items) < n - 1:
                raise Reject(CompileError, f"not enough values to unpack (expected at least "
                             f"{n - 1}, got {len(items)})")
            items = items[:k] + [self.register_local(list(items[k:len(items) - tail]))] + \
                items[len(items) - tail:]
        for elt, item in zip(target.elts, items):
            self.assign(elt.value if isinstance(elt, ast.Starred) else elt, item)

    def setitem(self, obj: Any, index: Any, value: Any, target: ast.Subscript) -> None:
        if isinstance(obj, Staged):
            self.check_writable(obj, ast.unparse(target.value))
            self.write(obj, I.setitem(self.b, obj, index, value))
        elif isinstance(obj, np.ndarray):
            self.check_mutable(obj, "this assignment")
            if not isinstance(target.value, ast.Name):
                raise Reject(UnsupportedError, "assigning into a constant array this way is not "
                             "supported", "bind it to a name first")
            staged = A.constant(self.b, obj)
            staged.value = I.setitem(self.b, staged, index, value)
            self.scope.env[target.value.id] = staged  # type: ignore[union-attr]
        elif isinstance(obj, (list, dict)):
            self.check_mutable(obj, "this assignment")
            self.static(lambda: obj.__setitem__(index, value))
        else:
            raise Reject(SideEffectError, f"assigning into a {type(obj).__name__} from outside the "
                         "function is a side effect", "return the new value instead")

    def write(self, obj: Staged, new: Value) -> None:
        """`obj` (checked writable) now holds `new`: written back through the views it is a
        view of, into an argument at the root (returned to the caller: frontend.stage)."""
        if W.through_reshape(obj):            # NumPy's reshape is a view of a contiguous root only
            self.contiguous.add(id(W.chain(obj)[-1]))
        W.commit(self.b, obj, new)

    def check_writable(self, obj: Staged, text: str) -> None:
        """May compiled code write into `obj`? Through a view into its base, up to an
        argument when the kernel may update its arguments (plain jit); NumPy's errors and
        SideEffectError under the transforms otherwise."""
        node = obj
        while node.base is not None:
            if node.readonly:
                raise Reject(UnsupportedError, f"assignment destination '{text}' is read-only "
                             "(NumPy: np.broadcast_to, np.diagonal and .imag of a real array are read-only)",
                             "copy it first: y = np.array(...); y[...] = ...")
            if node.path is None or node.stale:
                raise Reject(UnsupportedError, f"assigning through '{text}', a view whose "
                             "relation to the array it views is not known at compile time "
                             "(a reshape of a non-contiguous view, or a view chosen by a "
                             "data-dependent if), is not supported",
                             "assign into the base array directly, or .copy() the view first")
            node = node.base
        if node.origin == VIEW:                # a view carried through a compiled loop by name
            raise Reject(UnsupportedError, f"assigning through '{text}', a view of another array "
                         "carried through a compiled loop, is not supported",
                         "write into the base array with the same index (x[0] += ... rather than "
                         "row += ...), or .copy() the view first")
        if node.origin != ARG:
            return
        name = node.name or text
        if node.weak:
            raise Reject(CompileError, f"the argument '{name}' is a Python number: it has no "
                         "elements to assign to", f"return the new value instead")
        if not self.updates:
            raise Reject(SideEffectError, f"writing into the argument '{name}' would modify the "
                         "caller's array, which a transformed function (vmap, grad, jvp, vjp, "
                         "jacrev, ...) cannot do", f"copy it first: y = {name}.copy(), then "
                         "update y (and return it)")

    def augment(self, current: Any, op: ast.operator, value: Any, text: str = "the array") -> Any:
        """`name op= value`: in place for arrays, and for a 0-d array argument under plain
        jit (the caller's 0-d ndarray is updated as NumPy does; a NumPy scalar passed there is
        unchanged, its copy is); rebinding otherwise (local scalars, NumPy scalars)."""
        if isinstance(current, Staged) and (current.ndim > 0 or self._zero_d_argument(current)):
            result = self.inplace_op(current, op, value, zero_d=current.ndim == 0)
            self.check_writable(current, text)
            self.write(current, result.value)
            return current
        if isinstance(current, list) and isinstance(op, ast.Add):
            self.check_mutable(current, "+=")
            return self.static(lambda: operator.iadd(current, list(self.iterate(value))))
        return self.binop(op, current, value)

    def _zero_d_argument(self, x: Staged) -> bool:
        """A 0-d argument that is an array (not a Python number) of a kernel that may
        update its arguments?"""
        return self.updates and x.base is None and x.origin == ARG and not x.weak

    def inplace_op(self, current: Any, op: ast.operator, value: Any, zero_d: bool = False) -> Any:
        """NumPy's in-place operator: same_kind casting back to the array's dtype and shape."""
        result = self.binop(op, current, value)
        if not isinstance(current, Staged) or (current.ndim == 0 and not zero_d) \
                or not isinstance(result, Staged):
            return result
        if not np.can_cast(result.dtype, current.dtype, "same_kind"):
            name = _UFUNC_NAMES.get(type(op), "operator")
            raise Reject(CompileError, f"Cannot cast ufunc '{name}' output from "
                         f"dtype('{result.dtype}') to dtype('{current.dtype}') with casting rule "
                         "'same_kind'", f"cast explicitly: x = (x {_OP_TEXT.get(type(op), '?')} "
                         "v).astype(...)")
        if tuple(result.shape) != tuple(current.shape):
            raise Reject(ShapeMismatchError, "non-broadcastable output operand with shape "
                         f"{A.fmt_shape(current.shape)} doesn't match the broadcast shape "
                         f"{A.fmt_shape(result.shape)}")
        return A.convert(self.b, result, current.dtype)

    # ---- expressions ------------------------------------------------------------------------

    def visit_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def visit_Name(self, node: ast.Name) -> Any:
        value = self.scope.lookup(node.id)  # type: ignore[union-attr]
        if isinstance(value, Undefined):
            raise Reject(CompileError, f"variable '{node.id}' may be undefined here: {value.reason}",
                         "assign it before the if/while")
        if isinstance(value, Staged) and value.stale:
            raise Reject(UnsupportedError, f"'{node.id}' is a view of an array that was updated "
                         "after the view was taken (NumPy would show the update through the view)",
                         "take the view after the update, or .copy() it")
        return value

    def visit_Tuple(self, node: ast.Tuple) -> Any:
        return tuple(self._elements(node.elts))

    def visit_List(self, node: ast.List) -> Any:
        return self.register_local(self._elements(node.elts))

    def visit_Set(self, node: ast.Set) -> Any:
        return self.register_local(set(self._elements(node.elts)))

    def _elements(self, elts: list[ast.expr]) -> list[Any]:
        out: list[Any] = []
        for e in elts:
            if isinstance(e, ast.Starred):
                out.extend(self.iterate(self.visit(e.value)))
            else:
                out.append(self.visit(e))
        return out

    def visit_Dict(self, node: ast.Dict) -> Any:
        out: dict[Any, Any] = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                out.update(self.visit(v))
            else:
                key = self.visit(k)
                if isinstance(key, Staged):
                    raise Reject(UnsupportedError, "an array value cannot be a dict key")
                out[key] = self.visit(v)
        return self.register_local(out)

    def visit_Slice(self, node: ast.Slice) -> slice:
        parts = [None if p is None else self.visit(p) for p in (node.lower, node.upper, node.step)]
        return slice(*parts)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> str:
        return "".join(str(self.visit(v)) for v in node.values)

    def visit_FormattedValue(self, node: ast.FormattedValue) -> str:
        value = self.visit(node.value)
        if isinstance(value, Staged):
            raise Reject(UnsupportedError, "formatting an array value as text is not supported",
                         "format only static values (shapes, dtypes, Python numbers)")
        spec = "" if node.format_spec is None else self.visit(node.format_spec)
        conversions: dict[int, Callable[[Any], Any]] = {115: str, 114: repr, 97: ascii}
        conv = conversions.get(node.conversion, lambda x: x)
        return self.static(lambda: format(conv(value), spec))

    def visit_NamedExpr(self, node: ast.NamedExpr) -> Any:
        value = self.visit(node.value)
        self.assign(node.target, value)
        return value

    def visit_Lambda(self, node: ast.Lambda) -> Any:
        return self.make_closure(node)

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        return self.get_attribute(self.visit(node.value), node.attr)

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        return self.subscript(self.visit(node.value), self.visit(node.slice))

    def subscript(self, obj: Any, index: Any) -> Any:
        mask = I.mask_index(obj, index)
        if mask is not None:                   # x[mask]: a Selection (masked.py)
            return M.select(self.b, obj, mask)
        if isinstance(obj, Selection):
            raise M.dynamic("indexing it")
        if isinstance(obj, Staged) or (isinstance(obj, np.ndarray) and _has_dynamic(index)):
            return I.getitem(self.b, obj, index)
        if isinstance(obj, NP.INDEX_OBJECTS) and (_has_dynamic(index) or _has_size(index)):
            # np.r_[...], np.c_[...] with arrays or symbolic slice bounds
            return NP.index_concatenate(self.b, obj, index)
        if _has_dynamic(index):
            raise Reject(UnsupportedError, f"indexing a {type(obj).__name__} with an array value "
                         "is not supported", "make it an array first (np.stack / np.asarray)")
        return self.static(lambda: obj[index])

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        return self.binop(node.op, self.visit(node.left), self.visit(node.right))

    def binop(self, op: ast.operator, left: Any, right: Any) -> Any:
        if isinstance(left, Selection) or isinstance(right, Selection):
            found = NP.BINARY_OPERATORS.get(type(op))
            if found is None or isinstance(op, ast.MatMult):
                raise M.dynamic(f"the operator {_OP_TEXT.get(type(op), '?')}")
            apply: Callable[..., Any] = found
            return M.elementwise(self.b, lambda x, y: apply(self.b, x, y), [left, right])
        if isinstance(left, Staged) or isinstance(right, Staged):
            handler = NP.BINARY_OPERATORS.get(type(op))
            if handler is None:
                raise Reject(UnsupportedError, f"the operator {_OP_TEXT.get(type(op), '?')} is not "
                             "supported on arrays")
            return handler(self.b, left, right)
        if isinstance(left, DimExpr) or isinstance(right, DimExpr):
            return self._dim_binop(op, left, right)
        result = self.static(lambda: PY_BINOPS[type(op)](left, right))
        return self.register_local(result) if isinstance(result, (np.ndarray, list)) else result

    def _dim_binop(self, op: ast.operator, left: Any, right: Any) -> Any:
        """Arithmetic on symbolic sizes stays symbolic where it can (+, -, *, // by an int)."""
        ints = all(isinstance(v, (int, DimExpr)) and not isinstance(v, bool) for v in (left, right))
        if ints and isinstance(op, (ast.Add, ast.Sub, ast.Mult)):
            return PY_BINOPS[type(op)](left, right)
        if ints and isinstance(op, ast.FloorDiv) and isinstance(right, int) and right > 0:
            return dims.floordiv(left, right)
        staged = [A.dim_value(self.b, v) if isinstance(v, DimExpr) else v for v in (left, right)]
        return self.binop(op, *staged)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        value = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            return self.logical_not(value)
        if isinstance(value, Selection):
            name = NP.UNARY_OPERATORS[type(node.op)]
            return M.elementwise(self.b, lambda x: unary(self.b, name, x), [value])
        if isinstance(value, Staged):
            return unary(self.b, NP.UNARY_OPERATORS[type(node.op)], value)
        if isinstance(value, DimExpr) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return UNARY[type(node.op)](value)
        return self.static(lambda: UNARY[type(node.op)](value))

    def logical_not(self, value: Any) -> Any:
        if isinstance(value, Staged):
            A.check_single_element(value, "not")
            return Staged(self.b.emit1(control.P.not_, [A.truth_value(self.b, value)]), weak=True)
        return not self.truth(value)

    def truth(self, value: Any) -> bool:
        """Python truth of a static value (NumPy's rules for arrays; symbols are undecidable)."""
        if isinstance(value, DimExpr):
            raise Reject(UnsupportedError, f"the truth of the symbolic size {value} is not known "
                         "at compile time", "use a concrete size in the signature")
        return self.static(lambda: bool(value))

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        is_and = isinstance(node.op, ast.And)
        value = self.visit(node.values[0])
        for nxt in node.values[1:]:
            if isinstance(value, Staged):
                first = value
                rest = (lambda n=nxt: self.visit(n))
                keep = (lambda f=first: f)
                value = control.cond(self, value, (rest, keep) if is_and else (keep, rest),
                                     "and" if is_and else "or", "the value of the and/or")
            elif self.truth(value) == is_and:
                value = self.visit(nxt)
            else:
                return value
        return value

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        test = self.visit(node.test)
        if isinstance(test, Staged):
            return control.cond(self, test, (lambda: self.visit(node.body),
                                             lambda: self.visit(node.orelse)),
                                "ifexp", "the value of the conditional expression")
        return self.visit(node.body if self.truth(test) else node.orelse)

    def visit_Compare(self, node: ast.Compare) -> Any:
        left = self.visit(node.left)
        result: Any = None
        for i, (op, right_node) in enumerate(zip(node.ops, node.comparators)):
            right = self.visit(right_node)
            value = self.compare(op, left, right)
            if i == len(node.ops) - 1:
                return value if result is None else self._and(result, functools.partial(_same, value))
            result = value if result is None else self._and(result, functools.partial(_same, value))
            if not isinstance(result, Staged) and not self.truth(result):
                return result
            left = right
        return result

    def _and(self, first: Any, second: Callable[[], Any]) -> Any:
        if isinstance(first, Staged):
            return control.cond(self, first, (second, lambda: first), "and",
                                "the value of the chained comparison")
        return second() if self.truth(first) else first

    def compare(self, op: ast.cmpop, left: Any, right: Any) -> Any:
        if isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)):
            if isinstance(op, (ast.In, ast.NotIn)) and (isinstance(left, Staged)
                                                        or _has_dynamic(right)):
                raise Reject(UnsupportedError, "`in` with array values is not supported",
                             "use np.any(x == values)")
            return PY_CMPOPS[type(op)](left, right)
        if isinstance(left, Selection) or isinstance(right, Selection):
            name = NP.COMPARE_OPERATORS[type(op)]
            return M.elementwise(self.b, lambda x, y: binary(self.b, name, x, y), [left, right])
        if isinstance(left, Staged) or isinstance(right, Staged):
            return binary(self.b, NP.COMPARE_OPERATORS[type(op)], left, right)
        if isinstance(left, DimExpr) or isinstance(right, DimExpr):
            return _compare_dims(op, left, right)
        return self.static(lambda: PY_CMPOPS[type(op)](left, right))

    # ---- comprehensions ---------------------------------------------------------------------

    def visit_ListComp(self, node: ast.ListComp) -> Any:
        return self.register_local(self._comprehension(node.generators,
                                                       lambda: [self.visit(node.elt)]))

    def visit_SetComp(self, node: ast.SetComp) -> Any:
        return self.register_local(set(self._comprehension(node.generators,
                                                           lambda: [self.visit(node.elt)])))

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> Any:
        return self.register_local(self._comprehension(node.generators,
                                                       lambda: [self.visit(node.elt)]))

    def visit_DictComp(self, node: ast.DictComp) -> Any:
        pairs = self._comprehension(node.generators,
                                    lambda: [(self.visit(node.key), self.visit(node.value))])
        return self.register_local(dict(pairs))

    def _comprehension(self, gens: list[ast.comprehension], element: Callable[[], list[Any]]) -> list[Any]:
        scope = self.scope
        inner = Scope({}, scope.globals, scope.source, scope.name, frozenset(),  # type: ignore[union-attr]
                      parent=scope)
        out: list[Any] = []
        self.scope = inner
        try:
            self._generate(gens, 0, element, out)
        finally:
            self.scope = scope
        return out

    def _generate(self, gens: list[ast.comprehension], k: int, element: Callable[[], list[Any]],
                  out: list[Any]) -> None:
        if k == len(gens):
            out.extend(element())
            return
        gen = gens[k]
        for item in self.iterate(self.visit(gen.iter)):
            self.assign(gen.target, item)
            conds = [self.visit(c) for c in gen.ifs]
            if any(isinstance(c, Staged) for c in conds):
                raise Reject(UnsupportedError, "a comprehension filter on an array value gives a "
                             "data-dependent length", "use np.where with a fill value")
            if all(self.truth(c) for c in conds):
                self._generate(gens, k + 1, element, out)

    # ---- iteration --------------------------------------------------------------------------

    def iterate(self, value: Any) -> list[Any]:
        """The items of a static iterable, or of an array along its first (static) axis."""
        if isinstance(value, Staged):
            if value.ndim == 0:
                raise Reject(CompileError, "iteration over a 0-d array")
            n = value.shape[0]
            if not isinstance(n, int):
                raise Reject(UnsupportedError, f"cannot iterate over an axis of symbolic size {n}",
                             "loops need a static trip count: vectorize the loop with array "
                             "operations, or use compiler.fori_loop")
            return [I.getitem(self.b, value, i) for i in range(n)]
        if isinstance(value, DimExpr):
            raise Reject(CompileError, "a size is not iterable")
        if isinstance(value, range) and len(value) > control.MAX_UNROLL:
            raise Reject(UnsupportedError, f"a loop of {len(value)} iterations is too long to "
                         "unroll", "vectorize it with array operations")
        return self.static(lambda: list(value))


# ---- NumPy functions that write into their first argument ----------------------------------


def _inplace_writer(name: str, update: Callable[..., Value]) -> Callable[..., None]:
    """The stager's handler for np.<name>(a, ...), which updates `a` and returns None."""
    def handler(stager: Stager, a: Any = None, *args: Any, **kwargs: Any) -> None:
        if not isinstance(a, Staged):
            raise Reject(UnsupportedError if isinstance(a, np.ndarray) else CompileError,
                         f"np.{name} writes into its first argument, which must be an array "
                         "value of the function", "build the array with np.array(...) first")
        stager.check_writable(a, f"the first argument of np.{name}")
        try:
            new = update(stager.b, a, *args, **kwargs)
        except TypeError as e:
            raise Reject(CompileError, f"np.{name}(): {e}") from None
        stager.write(a, new)
    return handler


register_function(np.put_along_axis, _inplace_writer("put_along_axis", I.put_along_axis))
register_function(np.putmask, _inplace_writer("putmask", I.putmask))
register_function(np.place, _inplace_writer("place", I.place))
register_function(np.copyto, _inplace_writer("copyto", I.copyto))
register_function(np.put, _inplace_writer("put", I.put))
register_function(np.fill_diagonal, _inplace_writer("fill_diagonal", I.fill_diagonal))
register_function(np.ndarray.sort, _inplace_writer("ndarray.sort", SO.sort_inplace))
for _fn, _handler in EV.STAGER_FUNCTIONS.items():     # np.piecewise (frontend/everyday.py)
    register_function(_fn, _handler)
register_function(np.ndarray.fill, _inplace_writer(   # x.fill(v): casts as assignment does
    "ndarray.fill", lambda b, a, value: I.copyto(b, a, value, casting="unsafe")))


# ---- helpers ---------------------------------------------------------------------------------

_OP_TEXT = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
            ast.Mod: "%", ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
            ast.MatMult: "@", ast.LShift: "<<", ast.RShift: ">>"}
_UFUNC_NAMES = {ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "divide",
                ast.FloorDiv: "floor_divide", ast.Mod: "remainder", ast.Pow: "power",
                ast.BitAnd: "bitwise_and", ast.BitOr: "bitwise_or", ast.BitXor: "bitwise_xor",
                ast.MatMult: "matmul", ast.LShift: "left_shift", ast.RShift: "right_shift"}


def _attribute_sink(stager: Stager, node: ast.expr) -> bool:
    """Is `node` a name bound to an object that accepts attribute assignment in staged code
    (one whose class sets ``__aotx_attribute_sink__``: the ctx of a compiler.Function)?"""
    if not isinstance(node, ast.Name):
        return False
    try:
        obj = stager.scope.lookup(node.id)  # type: ignore[union-attr]
    except Reject:
        return False
    return getattr(type(obj), "__aotx_attribute_sink__", False) is True


def _has_dynamic(x: Any) -> bool:
    if isinstance(x, Staged):
        return True
    if isinstance(x, (tuple, list)):
        return any(_has_dynamic(e) for e in x)
    return False


def _has_size(x: Any) -> bool:
    """Does an index hold a symbolic size (in a slice bound too)?"""
    if isinstance(x, DimExpr):
        return True
    if isinstance(x, slice):
        return any(isinstance(v, DimExpr) for v in (x.start, x.stop, x.step))
    if isinstance(x, tuple):
        return any(_has_size(e) for e in x)
    return False


def _compare_dims(op: ast.cmpop, left: Any, right: Any) -> bool:
    diff = dims.add(left, dims.mul(right, -1)) if all(
        isinstance(v, (int, DimExpr)) for v in (left, right)) else None
    if isinstance(diff, int):
        return bool(PY_CMPOPS[type(op)](diff, 0))
    if isinstance(op, (ast.Eq, ast.NotEq)) and diff is None:
        return isinstance(op, ast.NotEq)
    raise Reject(UnsupportedError, f"cannot decide {left} {_CMP_TEXT[type(op)]} {right} at compile "
                 "time: it depends on a symbolic size", "use a concrete size in the signature, or "
                 "compute with array operations")


_CMP_TEXT = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


def _describe_node(node: ast.AST) -> str:
    names = {ast.With: "a `with` statement", ast.Try: "a `try` statement",
             ast.ClassDef: "a class definition", ast.Import: "an import",
             ast.ImportFrom: "an import", ast.Yield: "`yield`", ast.YieldFrom: "`yield from`",
             ast.Await: "`await`", ast.AsyncFor: "`async for`", ast.AsyncWith: "`async with`",
             ast.Match: "a `match` statement"}
    return names.get(type(node), f"the syntax `{type(node).__name__}`")


def _syntax_hint(node: ast.AST) -> str | None:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return "import at module level"
    if isinstance(node, (ast.Try, ast.With)):
        return "compiled functions cannot catch exceptions or manage resources; do it outside"
    if isinstance(node, (ast.Yield, ast.YieldFrom)):
        return "return a list or an array instead of yielding"
    return None


def _same(value: Any) -> Any:
    return value
