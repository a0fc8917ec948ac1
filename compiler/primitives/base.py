"""The Primitive record and registry: every primitive is declared once, here or
in a family module, with everything the pipeline needs to know about it.

A primitive declares:

* ``shape_rule(in_types, params) -> result types`` (abstract evaluation; for
  control ops ``shape_rule(in_types, params, regions)``),
* ``numpy_ref(*arrays, **params)``: its meaning, run by the reference
  interpreter (the oracle of every test),
* ``kind`` and ``lower``: how the backend generates code for it (see below),
* ``vmap_rule``, ``jvp_rule``, ``vjp_rule``: the transform rules, which
  emit IR through a Builder so that they are themselves transformable
  (see batching.py and ad.py for their signatures).

Kinds, as the backend sees them:

``ELEMENTWISE``  ``lower(cg, op, scalars) -> scalar``: operands have equal shapes.
``INDEX``        ``lower(cg, op, index) -> scalar``: reads operands at computed
                 indices through ``cg.read`` (broadcast, transpose, slice, gather,
                 reductions, ...); fuses into its consumer's loop nest.
``OPAQUE``       ``lower(cg, op, outputs)``: writes whole output buffers itself
                 (dot_general, cumsum, concatenate, updates).
``CONTROL``      regions (cond, while): the backend drives them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from compiler.ir.types import TensorType

ELEMENTWISE, INDEX, OPAQUE, CONTROL = "elementwise", "index", "opaque", "control"

ShapeRule = Callable[..., "tuple[TensorType, ...]"]


@dataclass(frozen=True, eq=False)
class Primitive:
    """Everything about one primitive, in one place."""

    name: str
    shape_rule: ShapeRule
    numpy_ref: Callable[..., Any] | None
    kind: str
    lower: Callable[..., Any] | None = None
    interpret: Callable[..., Any] | None = None   # control ops: (interp, op, args) -> results
    vmap_rule: Callable[..., Any] | None = None
    jvp_rule: Callable[..., Any] | None = None
    vjp_rule: Callable[..., Any] | None = None
    linear: bool = False
    differentiable: bool = True
    streams_operands: bool = True   # OPAQUE ops: reads each operand element about once
    expands: Callable[..., bool] | None = None   # INDEX ops: (op) -> reads an element many times?
    lower_root: Callable[..., bool] | None = None  # INDEX ops with a buffer: (cg, op, out) -> handled?
    effects: frozenset[str] = field(default_factory=frozenset)
    doc: str = ""

    def abstract_eval(self, in_types: tuple[TensorType, ...], params: dict[str, Any],
                      regions: tuple[Any, ...] = ()) -> tuple[TensorType, ...]:
        if self.kind == CONTROL:
            return tuple(self.shape_rule(in_types, params, regions))
        return tuple(self.shape_rule(in_types, params))

    def __repr__(self) -> str:
        return f"<Primitive {self.name}>"


REGISTRY: dict[str, Primitive] = {}


def register(prim: Primitive) -> Primitive:
    if prim.name in REGISTRY:
        raise ValueError(f"primitive {prim.name!r} declared twice")
    REGISTRY[prim.name] = prim
    return prim


def attach_rules(prim: Primitive, **rules: Any) -> None:
    """Give a declared entry its transform rules. Rules that build IR out of the
    family's own entries are written after those entries and attached here, in the
    same module, so an entry's rules still live next to it."""
    for field_name, rule in rules.items():
        if not hasattr(prim, field_name):
            raise AttributeError(f"Primitive has no rule slot {field_name!r}")
        object.__setattr__(prim, field_name, rule)


def get(name: str) -> Primitive:
    import compiler.primitives  # noqa: F401  (make sure every family is registered)
    return REGISTRY[name]


class ShapeError(TypeError):
    """A shape rule rejected its operands (the frontend adds the user's location)."""


def check(cond: bool, message: str) -> None:
    if not cond:
        raise ShapeError(message)


def same_shape_rule(result_dtype: Callable[[tuple[np.dtype, ...], dict[str, Any]], np.dtype]) -> ShapeRule:
    """Shape rule of an elementwise op: operands share one shape."""

    def rule(in_types: tuple[TensorType, ...], params: dict[str, Any]) -> tuple[TensorType, ...]:
        shape = in_types[0].shape
        for t in in_types[1:]:
            check(t.shape == shape, f"elementwise operands must have equal shapes, got "
                                    f"{', '.join(str(t) for t in in_types)}")
        return (TensorType(result_dtype(tuple(t.dtype for t in in_types), params), shape),)

    return rule


def normalize_ref(result: Any, types: tuple[TensorType, ...]) -> tuple[np.ndarray, ...]:
    """Turn a NumPy reference's output into arrays of exactly the declared dtypes."""
    outs = result if isinstance(result, (tuple, list)) else (result,)
    return tuple(np.asarray(o).astype(t.dtype, copy=False) for o, t in zip(outs, types))
