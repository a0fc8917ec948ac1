"""The frontend's entry point: a plain NumPy-style Python function -> an IR :class:`Function`.

:func:`stage` is the entry point the api layer calls. Arguments are pytrees
whose leaves are :class:`TensorType` (a dynamic array: a block argument of
the function), :class:`Weak` (a dynamic Python scalar) or any other object
(static: a compile-time constant). The function's source is parsed and run
by the staging interpreter (:mod:`stager`), which evaluates static values
in Python and emits IR for everything else; the result is verified.

>>> from compiler.ir.types import parse_type
>>> def f(x, w):
...     return np.tanh(x @ w).sum(axis=0)
>>> prog = stage(f, (parse_type("f64[n, 3]"), parse_type("f64[3, 2]")), {})  # doctest: +SKIP
"""
from __future__ import annotations

import inspect
import types
from dataclasses import dataclass
from typing import Any

import numpy as np

from compiler.errors import CompileError, DynamicShapeError, InternalCompilerError, UnsupportedError
from compiler.frontend import arrays as A
from compiler.frontend import numpy_api as NP
from compiler.frontend import registry
from compiler.frontend.closures import StagedFunction
from compiler.frontend.pytrees import PyTreeDef, flatten, flatten_static, unflatten
from compiler.frontend.source import FunctionSource, function_source
from compiler.frontend.stager import Stager
from compiler.frontend.static_args import record_arguments
from compiler.frontend.values import ARG, Alias, Reject, Scope, Selection, Staged, Strided, \
    Undefined, Weak, hashable
from compiler.ir.builder import Builder, new_block
from compiler.ir.core import Function, SourceLoc
from compiler.ir.types import I64, TensorType
from compiler.primitives import ops
from compiler.ir.verify import VerifyError, verify

__all__ = ["StagedProgram", "stage", "Weak"]


@dataclass
class StagedProgram:
    """The frontend's result: the IR function plus the pytree structure around it."""

    function: Function          # inputs = flattened dynamic leaves, outputs = result leaves
    in_tree: PyTreeDef          # structure of (args, kwargs), static leaves recorded
    out_tree: PyTreeDef         # structure of the return value
    # inputs the function writes into (plain jit: NumPy's in-place semantics): the new
    # value of input updates[k] is the function's result number (n_results + k)
    updates: tuple[int, ...] = ()
    # updated inputs written through a reshape: NumPy writes into them only when they are
    # C-contiguous (else into a copy); the runtime refuses them otherwise
    contiguous: tuple[int, ...] = ()


def _is_dynamic(x: Any) -> bool:
    return isinstance(x, (TensorType, Weak))


def stage(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], *,
          name: str | None = None, updates: bool = False) -> StagedProgram:
    """Lower `fn(*args, **kwargs)` to IR (see the module docstring for the argument leaves).

    With `updates`, writes into the arguments' elements are compiled (NumPy's in-place
    semantics): the final value of each written argument is an extra result, listed in
    ``StagedProgram.updates``; without, they are a SideEffectError (the transforms)."""
    registry.register_pending()
    args, kwargs = tuple(args), dict(kwargs)
    leaves, in_tree = flatten_static((args, kwargs), _is_dynamic)
    hints = _arg_hints(fn, args, kwargs)
    windows = _windows((args, kwargs))
    leaves += [TensorType(w.type.dtype, (w.size,)) for w in windows]
    hints += [f"window{i}" for i in range(len(windows))]
    block = new_block([leaf.type if isinstance(leaf, Weak) else leaf for leaf in leaves], hints)
    fn_name = name or _function_name(fn)
    builder = Builder(block, SourceLoc(f"<{fn_name}>", 1))
    stager = Stager(builder)
    staged = [Staged(v, weak=isinstance(leaf, Weak), origin=ARG, name=h)
              for v, leaf, h in zip(block.args, leaves, hints)]
    stager.arguments, stager.updates = list(staged), updates
    n_leaves = len(staged) - len(windows)
    with builder.at(SourceLoc(f"<{fn_name}>", 1)):
        call_args, call_kwargs = _resolve_aliases(unflatten(in_tree, staged[:n_leaves]), staged,
                                                  builder, n_leaves)
    record_arguments(stager, list(call_args), _positional(fn, len(call_args)), fn_name)
    try:
        out, loc = _run(stager, fn, list(call_args), call_kwargs)
        results, out_tree = _outputs(stager, out, loc)
        written = tuple(i for i, s in enumerate(staged) if s.value is not block.args[i])
        results += [staged[i].value for i in written]
        block.results = results
        stager.drop_unused_random_state()
    except CompileError as e:
        raise e.with_traceback(None) from e.__cause__
    function = Function(fn_name, block, arg_names=list(hints))
    try:
        verify(function)
    except VerifyError as e:
        raise InternalCompilerError(f"the frontend built invalid IR for {fn_name}: {e}") from None
    contiguous = tuple(i for i in written if id(staged[i]) in stager.contiguous)
    return StagedProgram(function, in_tree, out_tree, written, contiguous)


def _strided_index(x: Strided) -> np.ndarray:
    """The element of its window each element of a Strided argument is."""
    shape = tuple(n for n in x.type.shape if isinstance(n, int))   # lazily compiled: concrete
    assert len(shape) == len(x.type.shape), "a Strided argument has concrete sizes"
    index = np.full(shape, x.offset, dtype=np.int64)
    for axis, (n, stride) in enumerate(zip(shape, x.strides)):
        index += np.arange(n, dtype=np.int64).reshape(
            [-1 if i == axis else 1 for i in range(len(shape))]) * stride
    return index


def _windows(tree: Any) -> list[Strided]:
    """One Strided of each window the arguments are views of, by window number."""
    leaves, _ = flatten(tree, is_leaf=lambda x: isinstance(x, (TensorType, Weak, Alias, Strided)))
    found = {x.window: x for x in leaves if isinstance(x, Strided)}
    return [found[i] for i in sorted(found)]


def _resolve_aliases(tree: Any, staged: list[Staged], b: Builder, n_leaves: int) -> Any:
    """Arguments with each Alias leaf replaced by the Staged of the argument it repeats, and
    each Strided leaf by a view of its window (the staged arguments after n_leaves)."""
    leaves, td = flatten(tree, is_leaf=lambda x: isinstance(x, (Staged, Alias, Strided)))
    if not any(isinstance(x, (Alias, Strided)) for x in leaves):
        return tree
    out: list[Any] = []
    for x in leaves:
        if isinstance(x, Alias):
            out.append(staged[x.index])
        elif isinstance(x, Strided):
            window = staged[n_leaves + x.window]
            index = _strided_index(x)
            out.append(A.view(ops.take(b, window.value, A.constant(b, index, I64).value, axis=0),
                              window))
        else:
            out.append(x)
    return unflatten(td, out)


def _function_name(fn: Any) -> str:
    name = getattr(fn, "__name__", None) or type(fn).__name__
    return name if name.isidentifier() else "lambda"


def _positional(fn: Any, n: int) -> list[str]:
    """The names of `fn`'s first `n` positional parameters (``arg{i}`` past them)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return [names[i] if i < len(names) else f"arg{i}" for i in range(n)]


def _arg_hints(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[str]:
    hints: list[str] = []
    for a, name in zip(args, _positional(fn, len(args))):
        hints += _leaf_names(name, a)
    for k in sorted(kwargs):
        hints += _leaf_names(k, kwargs[k])
    return hints


def _leaf_names(base: str, tree: Any) -> list[str]:
    n = len(flatten_static(tree, _is_dynamic)[0])
    return [base] if n == 1 else [f"{base}_{i}" for i in range(n)]


def _run(stager: Stager, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> tuple[Any, SourceLoc]:
    """Call `fn` in the stager: a Python function is inlined, a NumPy function applied."""
    if NP.numpy_name(fn) is not None or (hashable(fn) and fn in NP.NUMPY_FUNCTIONS):
        loc = SourceLoc(f"<np.{getattr(fn, '__name__', 'function')}>", 1)
        with stager.b.at(loc):
            return _numpy_entry(stager, fn, args, kwargs, loc), loc
    if isinstance(fn, StagedFunction):      # a function defined inside compiled code
        with stager.b.at(fn.loc):
            try:
                return fn.stage(stager, args, kwargs), fn.loc
            except Reject as r:
                raise r.cls(r.message, fn.loc, r.hint) from r.__cause__
    target = fn.__func__ if isinstance(fn, types.MethodType) else fn
    if isinstance(fn, types.MethodType):
        args = [fn.__self__, *args]
    if not isinstance(target, types.FunctionType):
        raise UnsupportedError(f"cannot compile {fn!r}: not a Python function", None,
                               "pass a plain Python function (def or lambda)")
    src: FunctionSource = function_source(target)
    stager.scope = Scope({}, target.__globals__, src, target.__qualname__)
    with stager.b.at(src.def_loc):
        try:
            out = stager.inline(target, args, kwargs)
        except Reject as r:
            raise r.cls(r.message, src.def_loc, r.hint) from r.__cause__
    return out, src.def_loc


def _numpy_entry(stager: Stager, fn: Any, args: list[Any], kwargs: dict[str, Any],
                 loc: SourceLoc) -> Any:
    try:
        return stager.call(fn, args, kwargs)
    except Reject as r:
        raise r.cls(r.message, loc, r.hint) from r.__cause__


def _outputs(stager: Stager, out: Any, loc: SourceLoc) -> tuple[list[Any], PyTreeDef]:
    """The result pytree's leaves as IR values (static numbers and arrays become constants)."""
    leaves, out_tree = flatten(out, is_leaf=lambda x: isinstance(x, (Staged, Undefined)))
    values = []
    with stager.b.at(loc):
        for leaf in leaves:
            if isinstance(leaf, Staged):
                values.append(leaf.value)
            elif isinstance(leaf, Selection):
                raise DynamicShapeError("the function returns x[mask]: boolean mask indexing has a "
                                        "shape that depends on the values of the mask",
                                        stager.return_loc or loc,
                                        "return np.where(mask, x, fill), or a reduction of x[mask]")
            elif A.is_scalar_like(leaf) or isinstance(leaf, np.ndarray):
                try:
                    values.append(A.lift(stager.b, leaf).value)
                except Reject as r:
                    raise r.cls(r.message, stager.return_loc or loc, r.hint) from None
            else:
                raise CompileError(f"the function returns {type(leaf).__name__} {leaf!r:.60}, which "
                                   "is not an array or a number", stager.return_loc or loc,
                                   "return arrays, numbers, or tuples/lists/dicts of them")
    return values, out_tree

