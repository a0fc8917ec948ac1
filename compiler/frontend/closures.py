"""Functions defined inside compiled code, handed to a transform or to ``jit``.

``grad(lambda y: x * y)(2.0)`` inside a compiled function transforms a
:class:`Closure`, whose body reads ``x``, a value of the function being staged.
The api layer wraps the Closure in a :class:`StagedFunction`, which a Kernel
stages like any Python function, in a fresh stager. The staged values the body
reads from the enclosing scopes (its *captures*: ``x``, also through lists,
dicts, bound methods and other closures) become extra arguments of its IR
function, passed under the keyword :data:`CAPTURED`::

    func @lambda(%y: f64[], %_aotx_captured: f64[]) -> (f64[]) {
      %0 = mul(%_aotx_captured, %y) : f64[]
      return %0
    }

The transforms treat keyword arguments as constants (grad, jacrev, jacfwd, jvp
and vjp do not differentiate them, vmap does not batch them), so the inner
transform sees a closed-over value as a constant. Where the transformed
function is inlined (``CallMixin._call_kernel``) the captured values are its
operands, so a transform of the *enclosing* function differentiates or batches
through them: ``grad(lambda x: x * grad(lambda y: x * y)(2.0))(1.5)`` is
``d/dx (x * x) = 3.0``, without perturbation confusion, as in JAX and torch.func.

Free names are looked up when the transformed function is called (late binding,
as in Python). The captures are found by walking the values of the names the
body reads (:func:`captures`); :class:`CapturedScope` is the defining scope as
the fresh stager sees it, every staged value replaced by its argument.
"""
from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass, field
from typing import Any

from compiler.errors import InternalCompilerError, UnsupportedError
from compiler.frontend.values import BoundMethod, Closure, Reject, Scope, Staged

#: the keyword argument under which a StagedFunction's captured values are passed
CAPTURED = "_aotx_captured"


class StagedFunction:
    """A Closure as a function a Kernel can stage: its captures are extra arguments."""

    def __init__(self, closure: Closure) -> None:
        self.closure = closure
        self.__name__ = closure.__name__ if closure.__name__.isidentifier() else "lambda"
        self.__qualname__ = f"{closure.frame.name}.<locals>.{closure.__name__}"
        self.__module__ = str(closure.frame.globals.get("__name__", "__main__"))
        self.__signature__ = closure_signature(closure)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"{self.__name__} is defined inside compiled code: it can only be "
                        f"called from compiled code")

    def __aotx_captures__(self) -> list[Staged]:
        """The staged values of the enclosing function that the body reads, now."""
        return captures(self.closure)

    @property
    def loc(self) -> Any:
        return self.closure.source.loc(self.closure.node)

    def stage(self, stager: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """Stage the body in `stager` (a fresh one), `kwargs[CAPTURED]` standing for the captures."""
        captured = list(kwargs.pop(CAPTURED, ()))
        outer = captures(self.closure)
        if len(outer) != len(captured):
            raise InternalCompilerError(f"{self.__name__}: {len(captured)} captured values "
                                        f"passed for {len(outer)} captures")
        frame = CapturedScope.around(self.closure.frame, {id(o): c for o, c in zip(outer, captured)})
        for o, c in zip(outer, captured):
            c.name = o.name or c.name
        stager.scope = frame
        return stager.call_closure(frame.translate(self.closure), args, kwargs)


# ---- finding the captures --------------------------------------------------------------------

def captures(closure: Closure) -> list[Staged]:
    """The staged values `closure` can read from the scopes around it, in a fixed order."""
    found: dict[int, Staged] = {}
    _walk(closure, found, set())
    return list(found.values())


def _walk(value: Any, found: dict[int, Staged], seen: set[int]) -> None:
    if isinstance(value, Staged):
        found.setdefault(id(value), value)
        return
    if id(value) in seen:
        return
    if isinstance(value, (list, tuple, dict, Closure, BoundMethod)):
        seen.add(id(value))
    if isinstance(value, (list, tuple)):
        for v in value:
            _walk(v, found, seen)
    elif isinstance(value, dict):
        for v in value.values():
            _walk(v, found, seen)
    elif isinstance(value, BoundMethod):
        _walk(value.self_value, found, seen)
    elif isinstance(value, Closure):
        for v in (*value.defaults, *value.kw_defaults):
            _walk(v, found, seen)
        for name in free_names(value.node):
            try:
                v, staged = resolve(value.frame, name)
            except Reject:
                continue                     # a name of its own, unbound around it
            if staged:
                _walk(v, found, seen)
    elif isinstance(value, StagedFunction):
        _walk(value.closure, found, seen)
    elif hasattr(type(value), "__aotx_captures__"):    # a Kernel of a function defined here
        for v in value.__aotx_captures__():
            found.setdefault(id(v), v)


def free_names(node: ast.FunctionDef | ast.Lambda) -> list[str]:
    """Every name the function's body (nested functions included) reads, in order."""
    body = node.body if isinstance(node.body, list) else [node.body]
    names: dict[str, None] = {}
    for stmt in body:
        for sub in ast.walk(stmt):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                names.setdefault(sub.id)
            elif isinstance(sub, (ast.FunctionDef, ast.Lambda)):
                for d in [*sub.args.defaults, *[k for k in sub.args.kw_defaults if k is not None]]:
                    for n in ast.walk(d):
                        if isinstance(n, ast.Name):
                            names.setdefault(n.id)
    return list(names)


def resolve(scope: Scope, name: str) -> tuple[Any, bool]:
    """``scope.lookup(name)``, and whether the value comes from a staged scope (it may hold
    staged values) rather than from globals, closure cells of Python functions or builtins."""
    s: Scope = scope
    while True:
        if isinstance(s, CapturedScope) or name in s.env or name in s.locals:
            return s.lookup(name), True
        if s.parent is None:
            return s.lookup(name), False
        s = s.parent


# ---- the defining scope, seen from the fresh stager -------------------------------------------

@dataclass
class CapturedScope(Scope):
    """A scope of the enclosing function seen from the stager of a function defined in it:
    every staged value it holds is replaced by the argument that stands for it."""

    outer: Scope | None = None
    mapping: dict[int, Staged] = field(default_factory=dict)
    memo: dict[int, Any] = field(default_factory=dict)

    @classmethod
    def around(cls, outer: Scope, mapping: dict[int, Staged], memo: dict[int, Any] | None = None
               ) -> "CapturedScope":
        return cls({}, outer.globals, outer.source, outer.name, outer=outer, mapping=mapping,
                   memo={} if memo is None else memo)

    def lookup(self, name: str) -> Any:
        assert self.outer is not None
        value, staged = resolve(self.outer, name)
        return self.translate(value) if staged else value

    def translate(self, value: Any) -> Any:
        """`value` with every staged value of the enclosing function replaced (containers and
        closures are copied once, so that one object stays one object)."""
        if isinstance(value, Staged):
            if id(value) not in self.mapping:
                raise Reject(UnsupportedError, "a function defined inside compiled code reads an "
                             "array of the enclosing function in a way the transform cannot see",
                             "pass the array to the function as an argument")
            return self.mapping[id(value)]
        if id(value) in self.memo:
            return self.memo[id(value)]
        out = self._copy(value)
        if out is not value:
            self.memo[id(value)] = out
        return out

    def _copy(self, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            items = [self.translate(v) for v in value]
            if all(a is b for a, b in zip(items, value)):
                return value
            if isinstance(value, list):
                return items
            return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
        if isinstance(value, dict):
            new = {k: self.translate(v) for k, v in value.items()}
            return value if all(new[k] is value[k] for k in value) else new
        if isinstance(value, BoundMethod):
            inner = self.translate(value.self_value)
            return value if inner is value.self_value else BoundMethod(inner, value.name)
        if isinstance(value, Closure):
            frame = CapturedScope.around(value.frame, self.mapping, self.memo)
            return Closure(value.node, frame, value.source, [self.translate(d) for d in value.defaults],
                           [self.translate(d) for d in value.kw_defaults])
        if isinstance(value, StagedFunction):
            return StagedFunction(self.translate(value.closure))
        if hasattr(type(value), "__aotx_translate__") and value.__aotx_captures__():
            return value.__aotx_translate__(self.translate)   # a Kernel of a function defined here
        return value


def closure_signature(fn: Closure) -> inspect.Signature:
    """The Python signature of a function defined inside staged code."""
    a = fn.node.args
    P = inspect.Parameter
    params: list[inspect.Parameter] = []
    positional = a.posonlyargs + a.args
    defaults = [P.empty] * (len(positional) - len(fn.defaults)) + list(fn.defaults)
    for i, (arg, d) in enumerate(zip(positional, defaults)):
        kind = P.POSITIONAL_ONLY if i < len(a.posonlyargs) else P.POSITIONAL_OR_KEYWORD
        params.append(P(arg.arg, kind, default=d))
    if a.vararg is not None:
        params.append(P(a.vararg.arg, P.VAR_POSITIONAL))
    for arg, d in zip(a.kwonlyargs, fn.kw_defaults):
        params.append(P(arg.arg, P.KEYWORD_ONLY, default=P.empty if d is None else d))
    if a.kwarg is not None:
        params.append(P(a.kwarg.arg, P.VAR_KEYWORD))
    return inspect.Signature(params)
