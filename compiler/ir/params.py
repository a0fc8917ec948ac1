"""Structured values that ops carry in their params, beyond numbers, dims and dtypes.

The structure of a pytree (:class:`PyTreeDef`, with :class:`StaticLeaf` constants),
the array slots of a call template (:class:`ArraySlot`) and the vmap layers of a
``compiler.Function`` (:class:`BatchLayer`). They are IR data, so the printer and
the parser read and write them; the frontend (pytrees.py) and compiler.Function
build and use them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


class ArraySlot:
    """Marks an array argument in the argument template of a custom op."""

    __slots__ = ("weak",)

    def __init__(self, weak: bool = False) -> None:
        self.weak = weak

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ArraySlot) and other.weak == self.weak

    def __hash__(self) -> int:
        return hash(("ArraySlot", self.weak))

    def __repr__(self) -> str:
        return "*weak" if self.weak else "*"


@dataclass(frozen=True)
class BatchLayer:
    """One vmap applied by generate_vmap_rule: operand batch axes, result batch axes."""

    size: Any
    in_bdims: tuple
    out_bdims: tuple

    def __str__(self) -> str:
        return f"vmap(size={self.size}, in={self.in_bdims}, out={self.out_bdims})"
