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

from typing import Any, Callable, Iterable

from compiler.ir.params import (DICT, LEAF, LEAF_DEF, LIST, NAMEDTUPLE, NONE, STATIC, TUPLE, PyTreeDef,
                                StaticLeaf)

__all__ = ["DICT", "LEAF", "LEAF_DEF", "LIST", "NAMEDTUPLE", "NONE", "STATIC", "TUPLE", "PyTreeDef",
           "StaticLeaf", "flatten", "flatten_static", "unflatten", "tree_leaves", "tree_structure",
           "tree_map"]

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
