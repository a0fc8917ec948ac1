"""The structure of a kernel's result, as JSON (manifests and cache entries).

A kernel returns a flat list of arrays; its Python result may be a tuple,
list, dict, namedtuple or None around them, with constant leaves. The
structure travels as JSON so that it can be rebuilt without the compiler:

    "*"                                  an array (a result of the kernel)
    null                                 None
    {"tuple": [...]} / {"list": [...]}   sequences
    {"dict": [[key, sub], ...]}          dict in key order (str/int/float/bool keys)
    {"namedtuple": NAME, "fields": [...], "items": [...]}
    {"const": value}                     a constant leaf (int/float/bool/str)

:func:`unflatten` rebuilds the Python value from the structure and the arrays.
"""
from __future__ import annotations

import collections
import functools
from typing import Any, Iterator, Sequence

LEAF = "*"


def unflatten(tree: Any, leaves: Sequence[Any]) -> Any:
    """The value of structure `tree` with its array leaves taken from `leaves`, in order."""
    it = iter(leaves)
    out = _build(tree, it)
    if next(it, _END) is not _END:
        raise ValueError("too many results for the result structure")
    return out


_END = object()


def _build(tree: Any, it: Iterator[Any]) -> Any:
    if tree == LEAF:
        leaf = next(it, _END)
        if leaf is _END:
            raise ValueError("too few results for the result structure")
        return leaf
    if tree is None:
        return None
    if not isinstance(tree, dict) or len(tree) not in (1, 3):
        raise ValueError(f"invalid result structure {tree!r}")
    if "const" in tree:
        return tree["const"]
    if "tuple" in tree:
        return tuple(_build(t, it) for t in tree["tuple"])
    if "list" in tree:
        return [_build(t, it) for t in tree["list"]]
    if "dict" in tree:
        return {_key(k): _build(t, it) for k, t in tree["dict"]}
    if "namedtuple" in tree:
        cls = _namedtuple(tree["namedtuple"], tuple(tree["fields"]))
        return cls(*[_build(t, it) for t in tree["items"]])
    raise ValueError(f"invalid result structure {tree!r}")


def _key(k: Any) -> Any:
    return tuple(k) if isinstance(k, list) else k


@functools.cache
def _namedtuple(name: str, fields: tuple[str, ...]) -> Any:
    return collections.namedtuple(name, fields)


def num_leaves(tree: Any) -> int:
    if tree == LEAF:
        return 1
    if tree is None or not isinstance(tree, dict) or "const" in tree:
        return 0
    for kind in ("tuple", "list", "items"):
        if kind in tree:
            return sum(num_leaves(t) for t in tree[kind])
    if "dict" in tree:
        return sum(num_leaves(t) for _, t in tree["dict"])
    return 0
