"""The standard library numerical code uses, in staged code: the ``operator`` module,
``functools.reduce``, ``itertools`` over static sequences, NumPy's index iterators
(``np.ndindex``, ``np.ndenumerate``), and the builtins that order or test sequences
(``sorted``, ``min``/``max`` with ``key=``, ``any``, ``all``).

A handler takes the stager first, then the function's own arguments. Operators go
through the stager's own operator code (``operator.add(x, y)`` is ``x + y``: NumPy's
rules on arrays, Python's on static values, symbolic sizes kept symbolic). The
iterators materialize a static list of items (tuples of Python ints, or of staged
elements), so a ``for`` loop over them unrolls; items may be arrays, but the sequence's
length is always known at compile time. A function argument (``key=``, ``reduce``'s
function, ``accumulate``'s ``func``) may be any function staged code can call.
"""
from __future__ import annotations

import ast
import functools
import itertools
import math
import operator
from typing import Any, Callable

import numpy as np

from compiler.errors import CompileError, TruthValueError, UnsupportedError
from compiler.frontend import arrays as A
from compiler.frontend import indexing as I
from compiler.frontend import reductions as R
from compiler.frontend.ufuncs import binary, unary, where
from compiler.frontend.values import Reject, Staged
from compiler.ir import dims
from compiler.ir.dims import DimExpr
from compiler.primitives import ops

MAX_ITEMS = 10_000          # the longest sequence an iterator may produce (loops unroll it)

Handler = Callable[..., Any]


def _callable(st: Any, fn: Any) -> Callable[..., Any]:
    """`fn` as a Python callable whose calls are staged."""
    return lambda *args: st.call(fn, list(args), {})


def _static_key(value: Any, what: str) -> Any:
    if isinstance(value, Staged):
        raise Reject(UnsupportedError, f"{what} would compare array values, whose order is "
                     "only known when the kernel runs", "sort by static values (shapes, names, "
                     "Python numbers), or use array operations (np.argmax, np.where)")
    return value


# ---- operator ------------------------------------------------------------------------------

_BINARY = {operator.add: ast.Add, operator.sub: ast.Sub, operator.mul: ast.Mult,
           operator.truediv: ast.Div, operator.floordiv: ast.FloorDiv, operator.mod: ast.Mod,
           operator.pow: ast.Pow, operator.matmul: ast.MatMult, operator.and_: ast.BitAnd,
           operator.or_: ast.BitOr, operator.xor: ast.BitXor, operator.lshift: ast.LShift,
           operator.rshift: ast.RShift}
_INPLACE = {operator.iadd: ast.Add, operator.isub: ast.Sub, operator.imul: ast.Mult,
            operator.itruediv: ast.Div, operator.ifloordiv: ast.FloorDiv, operator.imod: ast.Mod,
            operator.ipow: ast.Pow, operator.imatmul: ast.MatMult, operator.iand: ast.BitAnd,
            operator.ior: ast.BitOr, operator.ixor: ast.BitXor}
_COMPARE = {operator.lt: ast.Lt, operator.le: ast.LtE, operator.eq: ast.Eq,
            operator.ne: ast.NotEq, operator.gt: ast.Gt, operator.ge: ast.GtE,
            operator.contains: None}
_UNARY = {operator.neg: ast.USub, operator.pos: ast.UAdd, operator.invert: ast.Invert,
          operator.inv: ast.Invert}


def _binary(op: type) -> Handler:
    return lambda st, a, b: st.binop(op(), a, b)


def _inplace(op: type) -> Handler:
    """operator.iadd(a, b) is ``a += b``: in place for a local array, as the statement."""
    return lambda st, a, b: st.augment(a, op(), b)


def _compare(op: type | None) -> Handler:
    if op is None:        # operator.contains(seq, item) is `item in seq`
        return lambda st, a, b: st.compare(ast.In(), b, a)
    return lambda st, a, b: st.compare(op(), a, b)


def _unary(op: type) -> Handler:
    names: dict[type, str] = {ast.USub: "negative", ast.UAdd: "positive", ast.Invert: "invert"}
    pyops: dict[type, Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos,
                                               ast.Invert: operator.invert}

    def handler(st: Any, a: Any) -> Any:
        if isinstance(a, Staged):
            return unary(st.b, names[op], a)
        if isinstance(a, DimExpr) and op is not ast.Invert:
            return pyops[op](a)
        return st.static(lambda: pyops[op](a))
    return handler


def _not(st: Any, a: Any) -> Any:
    return st.logical_not(a)


def _truth(st: Any, a: Any) -> Any:
    return st.logical_not(st.logical_not(a))


def _getitem(st: Any, a: Any, index: Any) -> Any:
    return st.subscript(a, index)


def _index(st: Any, a: Any) -> Any:
    if isinstance(a, (Staged, DimExpr)):
        return st.call(int, [a], {})
    return st.static(lambda: operator.index(a))


def _abs(st: Any, a: Any) -> Any:
    return st.call(abs, [a], {})


def _getter(st: Any, getter: Any, obj: Any) -> Any:
    """Call an operator.itemgetter / attrgetter object (its items come from __reduce__)."""
    keys = getter.__reduce__()[1]
    if isinstance(getter, operator.itemgetter):
        out = [st.subscript(obj, k) for k in keys]
    else:
        out = []
        for path in keys:
            value = obj
            for attr in path.split("."):
                value = st.get_attribute(value, attr)
            out.append(value)
    return out[0] if len(out) == 1 else tuple(out)


OPERATOR: dict[Any, Handler] = {
    **{fn: _binary(op) for fn, op in _BINARY.items()},
    **{fn: _compare(op) for fn, op in _COMPARE.items()},
    **{fn: _inplace(op) for fn, op in _INPLACE.items()},
    **{fn: _unary(op) for fn, op in _UNARY.items()},
    operator.not_: _not, operator.truth: _truth, operator.getitem: _getitem,
    operator.index: _index, operator.abs: _abs,
    operator.is_: lambda st, a, b: a is b, operator.is_not: lambda st, a, b: a is not b,
    operator.concat: lambda st, a, b: st.static(lambda: operator.concat(a, b)),
    operator.itemgetter: lambda st, *items: _make_getter(st, operator.itemgetter, items),
    operator.attrgetter: lambda st, *items: _make_getter(st, operator.attrgetter, items),
}


def _make_getter(st: Any, cls: Any, items: tuple[Any, ...]) -> Any:
    if any(isinstance(i, Staged) for i in items):
        raise Reject(UnsupportedError, f"operator.{cls.__name__} of an array value",
                     "index with the array directly")
    return st.static(lambda: cls(*items))


# ---- functools and itertools -------------------------------------------------------------


def _reduce(st: Any, function: Any, iterable: Any, *initial: Any) -> Any:
    items = list(st.iterate(iterable))
    if len(initial) > 1:
        raise Reject(CompileError, "reduce() takes at most 3 arguments")
    if not items and not initial:
        raise Reject(CompileError, "reduce() of empty iterable with no initial value")
    acc, rest = (initial[0], items) if initial else (items[0], items[1:])
    for x in rest:
        acc = st.call(function, [acc, x], {})
    return acc


def _count(n: int, what: str) -> None:
    if n > MAX_ITEMS:
        raise Reject(UnsupportedError, f"{what} would produce {n} items, too many to unroll (at "
                     f"most {MAX_ITEMS})", "loop over range(...) or vectorize with array operations")


def _lists(st: Any, iterables: tuple[Any, ...]) -> list[list[Any]]:
    return [list(st.iterate(x)) for x in iterables]


def _product(st: Any, *iterables: Any, repeat: int = 1) -> list[Any]:
    pools = _lists(st, iterables) * repeat
    _count(math.prod(len(p) for p in pools), "itertools.product")
    return st.register_local(list(itertools.product(*pools)))


def _combinatoric(fn: Any, count: Callable[[int, int], int]) -> Handler:
    def handler(st: Any, iterable: Any, r: Any = None) -> list[Any]:
        pool = list(st.iterate(iterable))
        k = len(pool) if r is None else r
        if not isinstance(k, int):
            raise Reject(UnsupportedError, f"itertools.{fn.__name__}: r must be a static int")
        _count(count(len(pool), k) if 0 <= k else 0, f"itertools.{fn.__name__}")
        return st.register_local(list(fn(pool) if r is None else fn(pool, k)))
    return handler


def _accumulate(st: Any, iterable: Any, func: Any = None, *, initial: Any = None) -> list[Any]:
    items = list(st.iterate(iterable))
    f = _callable(st, func) if func is not None else (lambda a, b: st.binop(ast.Add(), a, b))
    return st.register_local(list(itertools.accumulate(items, f, initial=initial)))


def _starmap(st: Any, function: Any, iterable: Any) -> list[Any]:
    return st.register_local([st.call(function, list(st.iterate(args)), {})
                              for args in st.iterate(iterable)])


def _static_iter(fn: Any) -> Handler:
    """An itertools function over materialized sequences (chain, islice, pairwise, ...)."""
    def handler(st: Any, *args: Any, **kwargs: Any) -> list[Any]:
        seqs = [list(st.iterate(a)) if not isinstance(a, (int, type(None))) else a for a in args]
        result = st.static(lambda: list(itertools.islice(fn(*seqs, **kwargs), MAX_ITEMS + 1)),
                           f"itertools.{fn.__name__}")
        _count(len(result), f"itertools.{fn.__name__}")
        return st.register_local(result)
    return handler


def _chain_from_iterable(st: Any, iterable: Any) -> list[Any]:
    out: list[Any] = []
    for it in st.iterate(iterable):
        out.extend(st.iterate(it))
    return st.register_local(out)


def _repeat(st: Any, obj: Any, times: Any = None) -> list[Any]:
    if times is None:
        raise Reject(UnsupportedError, "itertools.repeat without a count is infinite",
                     "give the count: itertools.repeat(x, n)")
    _count(times, "itertools.repeat")
    return st.register_local([obj] * times)


# ---- NumPy's index iterators ---------------------------------------------------------------


def _static_shape(shape: tuple[Any, ...], what: str) -> tuple[int, ...]:
    for d in shape:
        if isinstance(d, DimExpr):
            raise Reject(UnsupportedError, f"{what} over the symbolic size {d}: the number of "
                         "iterations is not known at compile time", "vectorize the loop with "
                         "array operations, or use a concrete size in the signature")
        if isinstance(d, Staged):
            raise Reject(UnsupportedError, f"{what} of an array value: the shape must be static")
    return tuple(int(operator.index(d)) for d in shape)


def _ndindex(st: Any, *shape: Any) -> list[tuple[int, ...]]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    dims = _static_shape(shape, "np.ndindex")
    _count(math.prod(dims), "np.ndindex")
    return st.register_local(list(np.ndindex(*dims)))


def _ndenumerate(st: Any, arr: Any) -> list[tuple[Any, Any]]:
    if not isinstance(arr, Staged):
        return st.register_local(list(st.static(lambda: list(np.ndenumerate(arr)))))
    dims = _static_shape(tuple(arr.shape), "np.ndenumerate")
    _count(math.prod(dims), "np.ndenumerate")
    return st.register_local([(i, I.getitem(st.b, arr, i)) for i in np.ndindex(*dims)])


# ---- builtins that order or test ---------------------------------------------------------


def _sorted(st: Any, iterable: Any, *, key: Any = None, reverse: bool = False) -> list[Any]:
    items = list(st.iterate(iterable))
    keys = [_static_key(st.call(key, [x], {}) if key is not None else x, "sorted()")
            for x in items]
    order = st.static(lambda: sorted(range(len(items)), key=lambda i: keys[i], reverse=reverse),
                      "sorted()")
    return st.register_local([items[i] for i in order])


def minmax(which: str) -> Handler:
    """min() / max(): Python's on static values; on arrays, the first smallest (largest) by
    elementwise comparison of single-element arrays (np.where, so per element under vmap)."""
    pyfn = min if which == "min" else max

    def handler(st: Any, *args: Any, key: Any = None, **kwargs: Any) -> Any:
        if not args:
            raise Reject(CompileError, f"{which} expected at least 1 argument, got 0")
        items = list(st.iterate(args[0])) if len(args) == 1 else list(args)
        if key is not None:
            keys = [_static_key(st.call(key, [x], {}), f"{which}(key=...)") for x in items]
            if not items:
                if "default" in kwargs:
                    return kwargs["default"]
                raise Reject(CompileError, f"{which}() arg is an empty sequence")
            best = st.static(lambda: pyfn(range(len(items)), key=lambda i: keys[i]), f"{which}()")
            return items[best]
        if any(isinstance(x, DimExpr) for x in items) and all(
                isinstance(x, (int, DimExpr)) and not isinstance(x, bool) for x in items):
            best = items[0]                 # symbolic sizes: max(n - 2, 0) stays symbolic
            for x in items[1:]:
                best = dims.minimum(best, x) if which == "min" else dims.maximum(best, x)
            return best
        if not any(isinstance(x, Staged) for x in items):
            return st.static(lambda: pyfn(items, **kwargs) if len(args) == 1
                             else pyfn(*args, **kwargs), f"{which}()")
        if not items:
            raise Reject(CompileError, f"{which}() arg is an empty sequence")
        best = items[0]
        for x in items[1:]:
            better = binary(st.b, "less" if which == "min" else "greater", x, best)
            A.check_single_element(better, f"{which}()")
            best = where(st.b, better, x, best)
        return best
    return handler


def _any_all(which: str) -> Handler:
    """any() / all(): static truth on static items; on arrays, the OR (AND) of the items'
    truth values (a 1-d array's items are its elements: np.any / np.all)."""
    pyfn = any if which == "any" else all

    def handler(st: Any, iterable: Any) -> Any:
        if isinstance(iterable, Staged):
            if iterable.ndim == 0:
                raise Reject(CompileError, "iteration over a 0-d array")
            row = A.prod(iterable.shape[1:])
            if row != 1:
                raise Reject(TruthValueError, f"{which}() of a {iterable.ndim}-d array tests the "
                             "truth of each row, which is ambiguous", f"use np.{which}(x)")
            return Staged(R.reduce(st.b, which, iterable, None).value, weak=True)
        items = list(st.iterate(iterable))
        if not any(isinstance(x, Staged) for x in items):
            return st.static(lambda: pyfn(st.truth(x) for x in items), f"{which}()")
        acc: Any = None
        for x in items:
            if not isinstance(x, Staged):
                if st.truth(x) == (which == "any"):
                    return which == "any"
                continue
            t = A.truth_value(st.b, x)
            acc = t if acc is None else (ops.or_(st.b, acc, t) if which == "any"
                                         else ops.and_(st.b, acc, t))
        return which == "all" if acc is None else Staged(acc, weak=True)
    return handler


FUNCTIONS: dict[Any, Handler] = {
    **OPERATOR,
    functools.reduce: _reduce,
    itertools.product: _product,
    itertools.combinations: _combinatoric(itertools.combinations, lambda n, k: math.comb(n, k)),
    itertools.permutations: _combinatoric(itertools.permutations, lambda n, k: math.perm(n, k)),
    itertools.combinations_with_replacement: _combinatoric(
        itertools.combinations_with_replacement, lambda n, k: math.comb(n + k - 1, k)),
    itertools.accumulate: _accumulate, itertools.starmap: _starmap,
    itertools.chain: _static_iter(itertools.chain), itertools.islice: _static_iter(itertools.islice),
    itertools.zip_longest: _static_iter(itertools.zip_longest),
    itertools.pairwise: _static_iter(itertools.pairwise),
    itertools.chain.from_iterable: _chain_from_iterable, itertools.repeat: _repeat,
    np.ndindex: _ndindex, np.ndenumerate: _ndenumerate,
    sorted: _sorted, min: minmax("min"), max: minmax("max"), any: _any_all("any"),
    all: _any_all("all"),
}


def _lookup(fn: Any) -> Handler | None:
    try:
        return FUNCTIONS.get(fn)
    except TypeError:          # unhashable
        return None


def handler_for(fn: Any) -> Handler | None:
    """The handler of a standard-library function, or None."""
    if isinstance(fn, (operator.itemgetter, operator.attrgetter)):
        return lambda st, obj: _getter(st, fn, obj)
    return _lookup(fn)
