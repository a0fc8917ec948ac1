"""The Primitive record and the registry: what an op of the IR applies.

A primitive is declared once (its name and kind, in compiler/primitives/ops.py, next
to its typed constructor) and defined once (its shape rule, NumPy reference,
lowering and transform rules, in its family module under compiler/primitives/). The
IR needs only the record: the builder runs ``abstract_eval``, the interpreter runs
``numpy_ref``, the printer and parser use ``name``.

A primitive declares:

* ``shape_rule(in_types, params) -> result types`` (abstract evaluation; for
  control ops ``shape_rule(in_types, params, regions)``),
* ``numpy_ref(*arrays, **params)``: its meaning, run by the reference
  interpreter (the oracle of every test),
* ``kind`` and ``lower``: how the backend generates code for it (see below),
* ``vmap_rule``, ``jvp_rule``, ``vjp_rule``: the transform rules, which
  emit IR through a Builder so that they are themselves transformable
  (see compiler/primitives/batching.py and ad.py for their signatures),
* ``complex_rule``: the op on complex values written with real ops on (re, im)
  pairs (compiler/primitives/complex.py; run by compiler/transforms/complex.py),
* ``decomposition(b, op, args) -> results``: the op written with other primitives,
  substituted after every transform (compiler/transforms/decompose.py, stage
  ``decompose``). A primitive with a decomposition needs no ``lower``: vmap and AD
  see one op with matrix-level rules (a factorization, a sort), the backend sees
  the generated code. A decomposition may leave the op in place (return None) when
  the backend lowers it better itself (a library call for a large matrix).
* ``library_when(op) -> bool``: with a decomposition, True keeps the op with the
  decomposed code as its one region; its OPAQUE ``lower`` calls a BLAS/LAPACK routine
  through ``cg.library_call`` and lowers the region as the fallback
  (``cg.lower_fallback``: docs/linalg.md, "BLAS and LAPACK").

Kinds, as the backend sees them:

``ELEMENTWISE``  ``lower(cg, op, scalars) -> scalar``: operands have equal shapes.
``INDEX``        ``lower(cg, op, index) -> scalar``: reads operands at computed
                 indices through ``cg.read`` (broadcast, transpose, slice, gather,
                 reductions, ...); fuses into its consumer's loop nest.
``OPAQUE``       ``lower(cg, op, outputs)``: writes whole output buffers itself
                 (dot_general, cumsum, concatenate, updates).
``CONTROL``      regions (cond, while): ``lower_control(cg, op)`` drives them.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Callable

from compiler.ir.types import TensorType

ELEMENTWISE, INDEX, OPAQUE, CONTROL = "elementwise", "index", "opaque", "control"

ShapeRule = Callable[..., "tuple[TensorType, ...]"]


@dataclass(frozen=True, eq=False)
class Primitive:
    """Everything about one primitive, in one place."""

    name: str
    kind: str
    shape_rule: ShapeRule | None = None
    numpy_ref: Callable[..., Any] | None = None
    lower: Callable[..., Any] | None = None
    interpret: Callable[..., Any] | None = None   # control ops: (interp, op, args) -> results
    vmap_rule: Callable[..., Any] | None = None
    jvp_rule: Callable[..., Any] | None = None
    vjp_rule: Callable[..., Any] | None = None
    differentiable: bool = True
    streams_operands: bool = True   # OPAQUE ops: reads each operand element about once
    expands: Callable[..., bool] | None = None   # INDEX ops: (op) -> reads an element many times?
    lower_root: Callable[..., bool] | None = None  # INDEX ops with a buffer: (cg, op, out) -> handled?
    own_loop: Callable[..., bool] | None = None   # INDEX ops: (op) -> faster into a buffer (lower_root)
                                                  # than read inside a consumer's loop?
    loops: bool = False             # INDEX ops whose lowering runs a loop per element (reductions)
    cheap: bool = False             # ELEMENTWISE ops worth recomputing rather than storing (casts)
    batch_always: bool = False      # vmap runs the rule without batched operands (rng_key)
    complex_rule: Callable[..., Any] | None = None  # (b, op, args) -> results, complex values as
                                                    # (re, im) pairs (transforms/complex.py)
    decomposition: Callable[..., Any] | None = None  # (b, op, args) -> results or None (keep the
                                                     # op): other primitives (transforms/decompose.py)
    library_when: Callable[..., bool] | None = None  # (op) -> keep the op, its decomposition as its
                                                     # region: lower calls a library routine, the
                                                     # region is the fallback (backend/library.py)
    effects: frozenset[str] = field(default_factory=frozenset)
    doc: str = ""

    def abstract_eval(self, in_types: tuple[TensorType, ...], params: dict[str, Any],
                      regions: tuple[Any, ...] = ()) -> tuple[TensorType, ...]:
        if self.shape_rule is None:
            raise AssertionError(f"primitive {self.name!r} is declared but not defined")
        if self.kind == CONTROL:
            return tuple(self.shape_rule(in_types, params, regions))
        return tuple(self.shape_rule(in_types, params))

    def __repr__(self) -> str:
        return f"<Primitive {self.name}>"


REGISTRY: dict[str, Primitive] = {}
_SLOTS = {f.name for f in fields(Primitive)} - {"name", "kind"}
_BLANK = Primitive("", "")     # every slot at its default


def declare(name: str, kind: str) -> Primitive:
    """A new primitive, registered under `name`; its family module defines it."""
    if name in REGISTRY:
        raise ValueError(f"primitive {name!r} declared twice")
    prim = Primitive(name, kind)
    REGISTRY[name] = prim
    return prim


def define(prim: Primitive, **slots: Any) -> Primitive:
    """Fill in a declared primitive's rules (each slot once)."""
    for slot, value in slots.items():
        if slot not in _SLOTS:
            raise AttributeError(f"Primitive has no slot {slot!r}")
        current = getattr(prim, slot)
        if current != getattr(_BLANK, slot) and current is not value:
            raise ValueError(f"{prim.name}.{slot} defined twice")
        object.__setattr__(prim, slot, value)
    return prim


def undefined() -> list[str]:
    """Declared primitives that no family module has defined (a packaging bug)."""
    return [name for name, p in REGISTRY.items() if p.shape_rule is None]
