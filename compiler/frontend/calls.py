"""Calls and attribute access: what ``f(...)`` and ``x.attr`` mean in staged code.

A call is dispatched on what the callee *is*, in this order: an ndarray
method bound to a staged array, a NumPy function (a table entry in
:mod:`numpy_api`, evaluated in Python when every argument is static), a
rejected NumPy function (``UNSUPPORTED``), a Python builtin or ``math``
function (table :data:`BUILTINS`), a function defined inside staged code
(a :class:`Closure`), or a plain Python function (inlined: its source is
parsed and staged with the arguments bound). Anything else is an
UnsupportedError suggesting ``compiler.Function``.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import types
from typing import Any, Callable

import numpy as np

from compiler.errors import CompileError, OutParameterError, SideEffectError, UnsupportedError
from compiler.frontend import arrays as A
from compiler.frontend import numpy_api as NP
from compiler.frontend import pylib as PL
from compiler.frontend import masked as M
from compiler.frontend import reductions as R
from compiler.frontend.closures import CAPTURED, closure_signature
from compiler.frontend import ufunc_methods as UM
from compiler.frontend import special as SPC
from compiler.frontend import registry
from compiler.frontend.control import assigned_names
from compiler.frontend.pytrees import flatten_static, unflatten
from compiler.frontend.source import function_source
from compiler.frontend.ufuncs import UFUNCS, binary, divmod_, round_, unary, where
from compiler.frontend.values import Alias, BoundMethod, Closure, Reject, ReturnSignal, Scope, \
    Selection, Staged, Weak, hashable
from compiler.frontend.random import implicit_key
from compiler.primitives import ops
from compiler.primitives import random as PR
from compiler.primitives.batching import inline_block
from compiler.ir.dims import DimExpr
from compiler.ir.types import F64, I64

# external handlers registered by other packages (compiler.cond, compiler.random, ...):
# fn -> handler(stager, *args, **kwargs); registry.py
EXTERNAL = registry.EXTERNAL
register_function = registry.register_function


# ndarray methods that write into the array: staged as the NumPy function registered above
INPLACE_METHODS: dict[str, Any] = {"fill": np.ndarray.fill, "put": np.put,
                                   "sort": np.ndarray.sort}


_LIST_MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse",
                  "update", "setdefault", "popitem", "add", "discard", "difference_update",
                  "intersection_update", "symmetric_difference_update", "__setitem__",
                  "__delitem__"}
_NDARRAY_MUTATORS = {"fill", "sort", "resize", "put", "itemset", "setfield", "partition",
                     "setflags", "byteswap"}
_MATH_UFUNCS = {"sqrt": "sqrt", "exp": "exp", "log2": "log2", "log10": "log10", "log1p": "log1p",
                "expm1": "expm1", "sin": "sin", "cos": "cos", "tan": "tan", "asin": "arcsin",
                "acos": "arccos", "atan": "arctan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh",
                "fabs": "absolute", "atan2": "arctan2", "hypot": "hypot", "pow": "power",
                "degrees": "degrees", "radians": "radians", "isnan": "isnan", "isinf": "isinf",
                "isfinite": "isfinite", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
                "log": "log"}


def _any_dynamic(args: Any, kwargs: dict[str, Any]) -> bool:
    def dyn(x: Any) -> bool:
        if isinstance(x, (Staged, DimExpr)):
            return True
        if isinstance(x, (list, tuple)):
            return any(dyn(e) for e in x)
        if isinstance(x, dict):
            return any(dyn(e) for e in x.values())
        return False
    return dyn(list(args)) or dyn(kwargs)


class CallMixin:
    """The call and attribute half of the :class:`Stager`."""

    b: Any
    scope: Any

    # ---- attributes -------------------------------------------------------------------------

    def get_attribute(self, obj: Any, attr: str) -> Any:
        if isinstance(obj, Selection):                  # x[mask]: reductions only (masked.py)
            if attr in M.METHODS or attr == "astype":
                return BoundMethod(obj, attr)
            raise M.dynamic(f".{attr}")
        if isinstance(obj, Staged):
            if attr in INPLACE_METHODS:                 # x.fill(v), x.put(idx, v): writes
                return BoundMethod(obj, attr)
            if attr in NP.ATTRIBUTES:
                return NP.ATTRIBUTES[attr](self.b, obj)
            if attr in NP.METHODS:
                return BoundMethod(obj, attr)
            raise NP.unsupported_method(attr)
        if obj is np.random or (isinstance(obj, types.ModuleType)
                                and obj.__name__.startswith("numpy.random")):
            raise NP.unsupported_numpy(f"random.{attr}")
        if isinstance(obj, (np.ndarray, np.generic)) and attr in NP.METHODS:
            return BoundMethod(obj, attr)       # a NumPy value known at compile time
        if isinstance(obj, types.ModuleType) and obj.__name__.startswith("numpy") \
                and not hasattr(obj, attr):
            sub = obj.__name__[len("numpy."):]
            raise NP.unsupported_numpy(f"{sub}.{attr}" if sub else attr)
        value = self.static(lambda: getattr(obj, attr))  # type: ignore[attr-defined]
        if isinstance(obj, types.ModuleType) and obj.__name__.startswith("numpy") \
                and callable(value) and not isinstance(value, type) and hashable(value) \
                and value not in NP.NUMPY_FUNCTIONS and value not in NP.STATIC_NUMPY \
                and value not in EXTERNAL:
            sub = obj.__name__[len("numpy."):]
            raise NP.unsupported_numpy(f"{sub}.{attr}" if sub else attr)
        return value

    # ---- calls ----------------------------------------------------------------------------------

    def visit_Call(self, node: ast.Call) -> Any:
        fn = self.visit(node.func)  # type: ignore[attr-defined]
        args: list[Any] = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(self.iterate(self.visit(a.value)))  # type: ignore[attr-defined]
            else:
                args.append(self.visit(a))  # type: ignore[attr-defined]
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                kwargs.update(self.visit(kw.value))  # type: ignore[attr-defined]
            else:
                kwargs[kw.arg] = self.visit(kw.value)  # type: ignore[attr-defined]
        if _ufunc_method(fn) == "at":
            return self._ufunc_at(node, fn.__self__, args, kwargs)
        if kwargs.get("out") is not None:
            raise Reject(OutParameterError, "out= is not supported: compiled functions return "
                         "their results", "return the value instead; the compiler fuses the "
                         "computation anyway")
        return self.call(fn, args, kwargs)

    def call(self, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """Stage ``fn(*args, **kwargs)``."""
        if any(isinstance(a, Selection) for a in args) and NP.numpy_name(fn) is not None:
            return M.call(self.b, fn, args, kwargs, lambda f, xs, kw: self.call(f, xs, kw))
        if hasattr(type(fn), "__aotx_stage_call__"):       # Kernels, vjp_fn / jvp_fn objects
            return fn.__aotx_stage_call__(self, args, kwargs)
        if isinstance(fn, BoundMethod):
            return self._call_method(fn, args, kwargs)
        if hashable(fn) and fn in EXTERNAL:
            return EXTERNAL[fn](self, *args, **kwargs)
        library = PL.handler_for(fn)
        if library is not None:                 # operator, functools, itertools, np.ndindex, sorted
            return library(self, *args, **kwargs)
        if isinstance(fn, types.MethodType) and hashable(fn.__func__) and fn.__func__ in EXTERNAL:
            # a registered function called as a bound (class)method, e.g. MyFunction.apply:
            # the handler gets the bound object first (compiler.Function, custom.py)
            return EXTERNAL[fn.__func__](self, fn.__self__, *args, **kwargs)
        if hashable(fn) and fn in NP.NUMPY_FUNCTIONS:
            return self._call_numpy(fn, args, kwargs)
        special = SPC.scipy_name(fn)
        if special is not None:                 # scipy.special.<name> (frontend/special.py)
            if not _any_dynamic(args, kwargs):
                return self.static(lambda: fn(*args, **kwargs), f"scipy.special.{special}")  # type: ignore[attr-defined]
            return SPC.scipy_call(self.b, special, fn, args, kwargs)
        method = _ufunc_method(fn)
        if method is not None:
            return self._call_ufunc_method(fn, method, args, kwargs)
        name = NP.numpy_name(fn)
        if name is not None:
            if hashable(fn) and fn in NP.STATIC_NUMPY and not _any_dynamic(args, kwargs):
                return self.static(lambda: fn(*args, **kwargs), f"np.{name}")  # type: ignore[attr-defined]
            raise NP.unsupported_numpy(name)
        if hashable(fn) and fn in BUILTINS:
            return BUILTINS[fn](self, *args, **kwargs)
        if isinstance(fn, types.BuiltinFunctionType) and getattr(fn, "__module__", "") == "math":
            return self._call_math(fn, args, kwargs)
        if isinstance(fn, Closure):
            return self.call_closure(fn, args, kwargs)
        return self._call_python(fn, args, kwargs)

    def _call_ufunc_method(self, fn: Any, method: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """np.<ufunc>.reduce / accumulate / outer (ufunc_methods.py); in Python on static values."""
        uf = fn.__self__
        if method == "at":
            raise Reject(UnsupportedError, f"{uf.__name__}.at modifies its first argument, which "
                         "must be an array variable", "write np.add.at(y, idx, v) with y a name")
        handler = UM.METHODS.get(method)
        if handler is None:
            raise Reject(UnsupportedError, f"np.{uf.__name__}.{method} is not supported",
                         "supported ufunc methods: reduce, accumulate, outer, at")
        if not _any_dynamic(args, kwargs):
            result = self.static(lambda: fn(*args, **kwargs), f"np.{uf.__name__}.{method}")  # type: ignore[attr-defined]
            return self.register_local(result) if isinstance(result, np.ndarray) else result  # type: ignore[attr-defined]
        self._bind(handler, f"np.{uf.__name__}.{method}", uf, *args, **kwargs)
        return handler(self.b, uf, *args, **kwargs)

    def _ufunc_at(self, node: ast.Call, uf: np.ufunc, args: list[Any], kwargs: dict[str, Any]) -> None:
        """``np.add.at(y, idx, v)``: y becomes the functional update (an assignment to y)."""
        values = kwargs.pop("b", args[2] if len(args) == 3 else None)
        if kwargs or not 2 <= len(args) <= 3:
            raise Reject(CompileError, f"np.{uf.__name__}.at() takes (a, indices, b=None)")
        obj, indices = args[0], args[1]
        first = node.args[0] if node.args else None
        if isinstance(obj, np.ndarray) and not isinstance(first, ast.Name):
            raise Reject(UnsupportedError, f"{uf.__name__}.at into a constant array this way is "
                         "not supported", "bind it to a name first")
        x = A.lift(self.b, obj) if isinstance(obj, np.ndarray) else obj
        if not isinstance(x, Staged) or x.weak:
            raise Reject(CompileError, f"{uf.__name__}.at: the first argument must be an array")
        new = UM.at(self.b, uf, x, indices, values)
        target = ast.Subscript(value=first or ast.Name("x"), slice=ast.Constant(Ellipsis),
                               ctx=ast.Store())
        self.setitem(obj, Ellipsis, new, target)  # type: ignore[attr-defined]
        return None

    def _call_kernel(self, kernel: Any, args: list[Any], kwargs: dict[str, Any],
                     arrays: bool = False, updates: bool = False) -> Any:
        """Inline a Kernel (``jit``, ``vmap``, ...): stage it for these argument types.
        With `updates` (a plain jit), its writes into its arguments are writes into ours (one
        array passed twice is one argument of it, as in NumPy).

        Python floats are dynamic weak scalars, as in a call from Python (and with
        `arrays`, for a transform's kernel, so are NumPy arrays and scalars: vmap maps over
        them, grad differentiates them). A kernel of a function defined inside compiled
        code gets the values it captures as keyword arguments (frontend/closures.py)."""
        args, kwargs = self._dynamic_arguments((args, kwargs), arrays)
        captured = kernel.__aotx_captures__() if hasattr(type(kernel), "__aotx_captures__") else []
        if captured:
            kwargs = {**kwargs, CAPTURED: tuple(captured)}
        leaves, tree = flatten_static((tuple(args), kwargs), lambda x: isinstance(x, Staged))
        first: dict[int, int] = {}
        abstract: list[Any] = []
        distinct: list[Staged] = []
        for x in leaves:
            if updates and id(x) in first:
                abstract.append(Alias(first[id(x)], x.type))
                continue
            first[id(x)] = len(distinct)
            distinct.append(x)
            abstract.append(Weak(x.type) if x.weak else x.type)
        a_args, a_kwargs = unflatten(tree, abstract)
        try:
            program = kernel.trace(tuple(a_args), a_kwargs, updates=True) if updates \
                else kernel.trace(tuple(a_args), a_kwargs)
        except CompileError:
            raise
        except (TypeError, ValueError) as e:     # a transform's arguments do not fit the function
            raise Reject(CompileError, str(e)) from None
        body, values = program.function.body, [x.value for x in distinct]
        if any(op.prim is ops.rng_key_p for op in body.ops):
            # its key-less draws take the next key of this function's implicit state, so that
            # two calls of one kernel (or of two kernels) draw different numbers
            body, values = PR.key_as_argument(body), values + [implicit_key(self)]
        results = inline_block(self.b, body, values)
        written = getattr(program, "updates", ())
        n = len(results) - len(written)
        for i, new in zip(written, results[n:]):
            target = distinct[i]
            self.check_writable(target, target.name or "an argument")  # type: ignore[attr-defined]
            self.write(target, new)  # type: ignore[attr-defined]
        return unflatten(program.out_tree, [Staged(v) for v in results[:n]])

    def _dynamic_arguments(self, tree: Any, arrays: bool) -> Any:
        """`tree` with Python floats (and with `arrays`, NumPy arrays and scalars of a
        supported dtype) as staged constants."""
        def lift(x: Any) -> Any:
            if type(x) is float or (arrays and isinstance(x, (np.ndarray, np.generic))
                                    and x.dtype.kind in "biuf"):
                return A.lift(self.b, x)
            return x
        leaves, td = flatten_static(tree, lambda x: isinstance(x, (Staged, float, np.ndarray, np.generic)))
        return unflatten(td, [lift(x) for x in leaves])

    def _call_python(self, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if isinstance(fn, types.FunctionType):
            return self.inline(fn, args, kwargs)
        if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType):
            return self.inline(fn.__func__, [fn.__self__, *args], kwargs)
        if isinstance(fn, functools.partial):
            return self.call(fn.func, [*fn.args, *args], {**fn.keywords, **kwargs})
        if isinstance(fn, (types.BuiltinMethodType, types.MethodWrapperType)) and isinstance(
                getattr(fn, "__self__", None), (list, dict, set, tuple, str, range)):
            return self._call_container_method(fn, args, kwargs)
        if isinstance(fn, type) and (hasattr(fn, "_fields") or dataclasses.is_dataclass(fn)):
            return self.static(lambda: fn(*args, **kwargs))  # type: ignore[attr-defined]
        what = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
        raise Reject(UnsupportedError, f"calling {what!s} ({type(fn).__name__}) is not supported "
                     "in compiled code", "use NumPy functions or plain Python functions, or wrap "
                     "it in a compiler.Function (it then runs as a host callback)")

    def _call_container_method(self, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        obj = fn.__self__
        if fn.__name__ in _LIST_MUTATORS and isinstance(obj, (list, dict, set)):
            self.check_mutable(obj, f"{type(obj).__name__}.{fn.__name__}()")  # type: ignore[attr-defined]
        result = self.static(lambda: fn(*args, **kwargs))  # type: ignore[attr-defined]
        return self.register_local(result) if isinstance(result, (list, dict)) else result  # type: ignore[attr-defined]

    def _call_method(self, method: BoundMethod, args: list[Any], kwargs: dict[str, Any]) -> Any:
        obj, name = method.self_value, method.name
        if isinstance(obj, Selection):
            return M.method(self.b, obj, name, args, kwargs)
        if isinstance(obj, Staged) and name in INPLACE_METHODS:
            return EXTERNAL[INPLACE_METHODS[name]](self, obj, *args, **kwargs)
        if isinstance(obj, (np.ndarray, np.generic)) and not _any_dynamic(args, kwargs):
            if name in _NDARRAY_MUTATORS:
                self.check_mutable(obj, f"ndarray.{name}()")  # type: ignore[attr-defined]
            result = self.static(lambda: getattr(obj, name)(*args, **kwargs))  # type: ignore[attr-defined]
            return self.register_local(result)  # type: ignore[attr-defined]
        handler = NP.METHODS[name]
        self._bind(handler, f"ndarray.{name}", obj, *args, **kwargs)
        return handler(self.b, obj, *args, **kwargs)

    def _call_numpy(self, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        handler = NP.NUMPY_FUNCTIONS[fn]
        name = NP.numpy_name(fn) or getattr(fn, "__name__", "?")
        if fn not in NP.CREATION and not _any_dynamic(args, kwargs):
            result = self.static(lambda: fn(*args, **kwargs), f"np.{name}")  # type: ignore[attr-defined]
            if isinstance(result, np.ndarray):
                A.supported_dtype(result.dtype)
                self.register_local(result)  # type: ignore[attr-defined]
            return result
        self._bind(handler, f"np.{name}", *args, **kwargs)
        return handler(self.b, *args, **kwargs)

    def _bind(self, handler: Callable[..., Any], what: str, *args: Any, **kwargs: Any) -> None:
        try:
            inspect.signature(handler).bind(self.b, *args, **kwargs)
        except TypeError as e:
            raise Reject(CompileError, f"{what}(): {e}") from None

    def _call_math(self, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if not _any_dynamic(args, kwargs):
            return self.static(lambda: fn(*args, **kwargs), f"math.{fn.__name__}")  # type: ignore[attr-defined]
        name = fn.__name__
        if name not in _MATH_UFUNCS or kwargs:
            raise Reject(UnsupportedError, f"math.{name} of an array value is not supported",
                         f"use the NumPy function (np.{name}) instead")
        scalars = [self._python_float(a, f"math.{name}()") for a in args]
        if name == "log" and len(scalars) == 2:
            return binary(self.b, "true_divide", unary(self.b, "log", scalars[0]),
                          unary(self.b, "log", scalars[1]))
        out = A.apply(self.b, _ufunc_spec(_MATH_UFUNCS[name]), scalars)
        if name in ("floor", "ceil", "trunc"):
            return A.convert(self.b, out, I64, weak=True)
        return A.convert(self.b, out, out.dtype, weak=True)

    def _python_float(self, x: Any, marker: str) -> Any:
        if isinstance(x, Staged) and not x.weak:
            return A.to_python_scalar(self.b, x, "float", marker)
        if isinstance(x, Staged):
            return A.convert(self.b, x, F64, weak=True)
        return float(x) if not isinstance(x, DimExpr) else A.convert(
            self.b, A.dim_value(self.b, x), F64, weak=True)

    # ---- inlining ------------------------------------------------------------------------------

    def inline(self, fn: types.FunctionType, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """Stage a plain Python function's body with the arguments bound."""
        src = function_source(fn)
        try:
            bound = inspect.signature(fn).bind(*args, **kwargs)
        except TypeError as e:
            raise Reject(CompileError, f"{fn.__qualname__}(): {e}") from None
        bound.apply_defaults()
        closure = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        scope = Scope(dict(bound.arguments), fn.__globals__, src, fn.__qualname__,
                      local_names(src.node), closure)
        return self.run_function(scope)

    def run_function(self, scope: Any) -> Any:
        node = scope.source.node
        with self.enter(scope):  # type: ignore[attr-defined]
            try:
                if isinstance(node, ast.Lambda):
                    return self.visit(node.body)  # type: ignore[attr-defined]
                self.exec_block(node.body)  # type: ignore[attr-defined]
                return None
            except ReturnSignal as r:
                return r.value

    def make_closure(self, node: ast.FunctionDef | ast.Lambda) -> Closure:
        defaults = [self.visit(d) for d in node.args.defaults]  # type: ignore[attr-defined]
        kw_defaults = [None if d is None else self.visit(d)  # type: ignore[attr-defined]
                       for d in node.args.kw_defaults]
        return Closure(node, self.scope, self.scope.source, defaults, kw_defaults)

    def call_closure(self, fn: Closure, args: list[Any], kwargs: dict[str, Any]) -> Any:
        sig = closure_signature(fn)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise Reject(CompileError, f"{fn.__name__}(): {e}") from None
        bound.apply_defaults()
        parent = fn.frame
        scope = Scope(dict(bound.arguments), parent.globals, fn.source, parent.name,
                      local_names(fn.node), parent=parent)
        with self.enter(scope):  # type: ignore[attr-defined]
            try:
                if isinstance(fn.node, ast.Lambda):
                    return self.visit(fn.node.body)  # type: ignore[attr-defined]
                self.exec_block(fn.node.body)  # type: ignore[attr-defined]
                return None
            except ReturnSignal as r:
                return r.value


def _ufunc_method(fn: Any) -> str | None:
    """'reduce' for np.add.reduce (a method of a NumPy ufunc), else None."""
    if isinstance(fn, types.BuiltinMethodType) and isinstance(getattr(fn, "__self__", None), np.ufunc):
        return fn.__name__
    return None


def _ufunc_spec(name: str) -> Any:
    return UFUNCS[name]


def local_names(node: ast.FunctionDef | ast.Lambda) -> frozenset[str]:
    """Names local to a function: its parameters and the names it binds (minus global/nonlocal)."""
    a = node.args
    params = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    params += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    if isinstance(node, ast.Lambda):
        return frozenset(params)
    declared = {n for sub in ast.walk(node) if isinstance(sub, (ast.Global, ast.Nonlocal))
                for n in sub.names}
    return frozenset((set(params) | assigned_names(node.body)) - declared)


# ---- Python builtins -----------------------------------------------------------------------------


def _len(st: Any, x: Any) -> Any:
    if isinstance(x, Staged):
        if x.ndim == 0:
            raise Reject(CompileError, "len() of unsized object")
        return x.shape[0]
    return st.static(lambda: len(x))


def _range(st: Any, *args: Any) -> range:
    for a in args:
        if isinstance(a, DimExpr):
            raise Reject(UnsupportedError, f"range() over the symbolic size {a}: the trip count is "
                         "not known at compile time", "vectorize the loop with array operations, "
                         "use a concrete size in the signature, or use compiler.fori_loop")
        if isinstance(a, Staged):
            raise Reject(UnsupportedError, "range() over an array value: the trip count would "
                         "depend on data", "use a while loop on the value, or compiler.fori_loop")
    return st.static(lambda: range(*args))


def _scalar_cast(kind: str) -> Callable[..., Any]:
    pytype = {"float": float, "int": int, "bool": bool}[kind]

    def handler(st: Any, x: Any = 0, *rest: Any) -> Any:
        if isinstance(x, Staged):
            return A.to_python_scalar(st.b, x, kind, f"{kind}()")
        if isinstance(x, DimExpr):
            if kind == "int":
                return x
            if kind == "bool":
                return st.truth(x)
            return A.convert(st.b, A.dim_value(st.b, x), F64, weak=True)
        return st.static(lambda: pytype(x, *rest))
    return handler


def _complex(st: Any, real: Any = 0, imag: Any = 0) -> Any:
    """complex(re, im): a Python complex of static numbers; of staged single-element arrays, a
    weak complex scalar (each part taken as float() takes it)."""
    if not isinstance(real, Staged) and not isinstance(imag, Staged):
        return st.static(lambda: complex(real, imag))
    if any(isinstance(x, Staged) and x.dtype.kind == "c" for x in (real, imag)):
        raise Reject(UnsupportedError, "complex() of a complex array value is not supported",
                     "use x + 1j * y")
    parts = [A.to_python_scalar(st.b, x, "float", "complex()") if isinstance(x, Staged)
             else A.constant(st.b, float(x), F64, weak=True) for x in (real, imag)]
    return Staged(ops.complex_(st.b, parts[0].value, parts[1].value), weak=True)


def _abs(st: Any, x: Any) -> Any:
    if isinstance(x, Staged):
        return unary(st.b, "absolute", x)
    return st.static(lambda: abs(x))


def _sum(st: Any, iterable: Any, start: Any = 0) -> Any:
    if isinstance(iterable, Staged):
        total = R.reduce(st.b, "sum", iterable, 0, iterable.dtype)
        return binary(st.b, "add", start, total) if not (isinstance(start, int) and start == 0) \
            else total
    total = start
    for x in st.iterate(iterable):
        total = st.binop(ast.Add(), total, x)
    return total


def _isinstance(st: Any, obj: Any, classinfo: Any) -> bool:
    if isinstance(obj, Staged):
        kinds = {"f": float, "i": int, "b": bool}
        proto: Any = kinds[obj.dtype.kind](0) if obj.weak else np.zeros((1,) * obj.ndim, obj.dtype)
        return isinstance(proto, classinfo)
    return isinstance(obj, classinfo)


def _type(st: Any, obj: Any) -> Any:
    if isinstance(obj, Staged):
        return {"f": float, "i": int, "b": bool}[obj.dtype.kind] if obj.weak else np.ndarray
    return type(obj)


def _container(kind: type) -> Callable[..., Any]:
    def handler(st: Any, iterable: Any = (), **kwargs: Any) -> Any:
        if kind is dict:
            return st.register_local(st.static(lambda: dict(iterable, **kwargs)))
        return st.register_local(kind(st.iterate(iterable)))
    return handler


def _enumerate(st: Any, iterable: Any, start: int = 0) -> list[Any]:
    return st.register_local(list(enumerate(st.iterate(iterable), start)))


def _zip(st: Any, *iterables: Any, strict: bool = False) -> list[Any]:
    return st.register_local(list(zip(*[st.iterate(x) for x in iterables], strict=strict)))


def _reversed(st: Any, seq: Any) -> list[Any]:
    return st.register_local(list(reversed(st.iterate(seq))))


def _map(st: Any, fn: Any, *iterables: Any) -> list[Any]:
    return st.register_local([st.call(fn, list(items), {})
                              for items in zip(*[st.iterate(x) for x in iterables])])


def _print(st: Any, *args: Any, **kwargs: Any) -> None:
    raise Reject(SideEffectError, "print() is a side effect that compiled code cannot have",
                 "remove the print, or return the value (has_aux=True under transforms) and "
                 "print it outside")


def _round(st: Any, number: Any, ndigits: Any = None) -> Any:
    if isinstance(number, Staged):
        out = round_(st.b, number, ndigits or 0)
        return A.convert(st.b, out, I64, weak=True) if ndigits is None else out
    return st.static(lambda: round(number, ndigits))


def _divmod(st: Any, a: Any, b: Any) -> Any:
    if isinstance(a, Staged) or isinstance(b, Staged):
        return divmod_(st.b, a, b)
    return st.static(lambda: divmod(a, b))


def _pow(st: Any, base: Any, exp: Any) -> Any:
    return st.binop(ast.Pow(), base, exp)


def _reject_io(name: str) -> Callable[..., Any]:
    def handler(st: Any, *args: Any, **kwargs: Any) -> Any:
        raise Reject(UnsupportedError, f"{name}() is not supported in compiled code",
                     "do it outside the compiled function")
    return handler


def _static_only(fn: Any) -> Callable[..., Any]:
    def handler(st: Any, *args: Any, **kwargs: Any) -> Any:
        if _any_dynamic(args, kwargs):
            raise Reject(UnsupportedError, f"{fn.__name__}() of an array value is not supported",
                         _STATIC_HINTS.get(fn.__name__))
        result = st.static(lambda: fn(*args, **kwargs))
        return st.register_local(result) if isinstance(result, (list, dict)) else result
    return handler


_STATIC_HINTS = {"hash": None, "id": None, "str": None, "repr": None}

BUILTINS: dict[Any, Callable[..., Any]] = {
    len: _len, range: _range, float: _scalar_cast("float"), int: _scalar_cast("int"),
    bool: _scalar_cast("bool"), complex: _complex, abs: _abs, sum: _sum,
    isinstance: _isinstance, type: _type, tuple: _container(tuple), list: _container(list),
    dict: _container(dict), set: _container(set), enumerate: _enumerate, zip: _zip,
    reversed: _reversed, map: _map, print: _print, round: _round, divmod: _divmod, pow: _pow,
    open: _reject_io("open"), input: _reject_io("input"), exec: _reject_io("exec"),
    eval: _reject_io("eval"),
}
for _fn in (str, repr, getattr, hasattr, callable, slice, issubclass, chr, ord,
            hash, format, iter, next, frozenset, filter, id):
    BUILTINS.setdefault(_fn, _static_only(_fn))
BUILTINS[functools.partial] = lambda st, fn, *args, **kwargs: functools.partial(fn, *args, **kwargs)
BUILTINS[getattr] = lambda st, obj, name, *default: st.get_attribute(obj, name) if not default \
    else (st.get_attribute(obj, name) if hasattr(obj, name) or isinstance(obj, Staged)
          else default[0])

