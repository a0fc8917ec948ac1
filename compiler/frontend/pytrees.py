"""Pytrees: nested tuples, lists, dicts, namedtuples and None around leaves.

Arguments and results of compiled functions are pytrees, as in JAX and
torch.func. :func:`flatten` turns a tree into its leaves and a hashable
:class:`PyTreeDef`; :func:`unflatten` rebuilds it. Dict keys are sorted (as
in JAX); ``None`` is an empty node, not a leaf.

A treedef may also hold *static* leaves (compile-time constants such as the
arguments named by ``static_argnums``): :func:`flatten_static` keeps them in
the treedef, so two calls that differ only in a static value get different
treedefs (the jit cache keys on them) and :func:`unflatten` puts them back.

>>> leaves, tree = flatten(((1, 2), {"b": 3, "a": None}))
>>> leaves
[1, 2, 3]
>>> unflatten(tree, [4, 5, 6])
((4, 5), {'a': None, 'b': 6})
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

import numpy as np

LEAF, NONE, TUPLE, LIST, DICT, NAMEDTUPLE, STATIC = (
    "leaf", "none", "tuple", "list", "dict", "namedtuple", "static")


class StaticLeaf:
    """A compile-time constant kept inside a treedef; hashable and comparable by value."""

    __slots__ = ("value", "_key")

    def __init__(self, value: Any) -> None:
        self.value = value
        self._key = _static_key(value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StaticLeaf) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"static({self.value!r})"


def _static_key(value: Any) -> Any:
    """A hashable stand-in that compares static values by value where possible."""
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, np.generic):
        return ("npscalar", value.dtype.str, value.tobytes())
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_static_key(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((repr(k), _static_key(v)) for k, v in value.items())))
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    # 1 == 1.0 == True in Python, but they stage differently: keep the type
    return (type(value), value)


@dataclass(frozen=True)
class PyTreeDef:
    """The structure of a pytree: a node kind, auxiliary data and children."""

    kind: str
    aux: Any = None
    children: tuple["PyTreeDef", ...] = ()

    @property
    def num_leaves(self) -> int:
        """How many (dynamic) leaves :func:`unflatten` consumes."""
        if self.kind == LEAF:
            return 1
        return sum(c.num_leaves for c in self.children)

    def __str__(self) -> str:
        if self.kind == LEAF:
            return "*"
        if self.kind == NONE:
            return "None"
        if self.kind == STATIC:
            return repr(self.aux)
        inner = ", ".join(str(c) for c in self.children)
        if self.kind == TUPLE:
            return f"({inner}{',' if len(self.children) == 1 else ''})"
        if self.kind == LIST:
            return f"[{inner}]"
        if self.kind == DICT:
            return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(self.aux, self.children)) + "}"
        return f"{self.aux.__name__}({inner})"


LEAF_DEF = PyTreeDef(LEAF)


def is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _sorted_keys(d: dict[Any, Any]) -> list[Any]:
    try:
        return sorted(d)
    except TypeError:
        return sorted(d, key=lambda k: (type(k).__name__, repr(k)))


def _children(x: Any) -> tuple[str, Any, list[Any]] | None:
    """(kind, aux, children) for a container node, None for a leaf."""
    if x is None:
        return NONE, None, []
    if is_namedtuple(x):
        return NAMEDTUPLE, type(x), list(x)
    if type(x) is tuple:
        return TUPLE, None, list(x)
    if type(x) is list:
        return LIST, None, list(x)
    if type(x) is dict:
        keys = _sorted_keys(x)
        return DICT, tuple(keys), [x[k] for k in keys]
    return None


def flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[Any], PyTreeDef]:
    """Leaves in depth-first order and the tree's structure."""
    leaves: list[Any] = []
    return leaves, _flatten(tree, leaves, is_leaf, None)


def flatten_static(tree: Any, is_dynamic: Callable[[Any], bool]) -> tuple[list[Any], PyTreeDef]:
    """Like :func:`flatten`, but leaves that are not dynamic stay in the treedef."""
    leaves: list[Any] = []
    return leaves, _flatten(tree, leaves, None, is_dynamic)


def _flatten(x: Any, leaves: list[Any], is_leaf: Callable[[Any], bool] | None,
             is_dynamic: Callable[[Any], bool] | None) -> PyTreeDef:
    node = None if is_leaf is not None and is_leaf(x) else _children(x)
    if node is None:
        if is_dynamic is not None and not is_dynamic(x):
            return PyTreeDef(STATIC, StaticLeaf(x))
        leaves.append(x)
        return LEAF_DEF
    kind, aux, kids = node
    return PyTreeDef(kind, aux, tuple(_flatten(k, leaves, is_leaf, is_dynamic) for k in kids))


def unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """Rebuild a tree of `treedef`'s structure from `leaves` (static leaves come back)."""
    it = iter(leaves)
    out = _unflatten(treedef, it)
    if next(it, _END) is not _END:
        raise ValueError(f"too many leaves for treedef {treedef}")
    return out


_END = object()


def _unflatten(td: PyTreeDef, it: Any) -> Any:
    if td.kind == LEAF:
        leaf = next(it, _END)
        if leaf is _END:
            raise ValueError("too few leaves for the treedef")
        return leaf
    if td.kind == STATIC:
        return td.aux.value
    if td.kind == NONE:
        return None
    kids = [_unflatten(c, it) for c in td.children]
    if td.kind == TUPLE:
        return tuple(kids)
    if td.kind == LIST:
        return kids
    if td.kind == DICT:
        return dict(zip(td.aux, kids))
    return td.aux(*kids)


def tree_leaves(tree: Any) -> list[Any]:
    return flatten(tree)[0]


def tree_structure(tree: Any) -> PyTreeDef:
    return flatten(tree)[1]


def tree_map(fn: Callable[..., Any], tree: Any, *rest: Any) -> Any:
    """Apply `fn` leafwise to `tree` and trees of the same structure."""
    leaves, td = flatten(tree)
    others = [flatten(r)[0] for r in rest]
    return unflatten(td, [fn(*xs) for xs in zip(leaves, *others)])
