"""Writes through views, and into the arguments: NumPy's in-place semantics, functionalized.

A view of an array (``x[1:-1]``, ``x[0]``, ``x.T``, ``x.reshape(...)``,
``np.flip(x)``) is a :class:`Staged` whose ``path`` is the chain of
index-remapping ops that reads it from its base's value::

    y = x[1:, ::-1].T        path: rev(dims=1) -> slice -> transpose

A write into the view (``y[0] = v``, ``y += 1``) gives the view a new value;
:func:`write_through` inverts the chain to give the base its new value
(``transpose`` by the inverse permutation, ``slice`` as ``update_slice`` of the
base, ``dynamic_slice`` as ``dynamic_update_slice``, ``reshape`` back, ``rev``
again), and so on up to the root array. Every other live view of the root is
then read again from the new value (:func:`replay`), so that a name bound to
a view sees the write as it would in NumPy. A root that is an argument of the
kernel ends with a new value: the frontend returns it as an extra result and
the runtime writes it into the caller's array (docs/guide.md, "In-place
updates of arguments").

    x[1:-1] += 2 * x[:-2]         IR: %w = update_slice(%x, add(slice(%x), ...))
                                  the kernel's extra result %w is copied into x
"""
from __future__ import annotations

from typing import Any

import numpy as np

from compiler.ir.builder import Builder
from compiler.ir.core import Op, Value
from compiler.primitives import ops

#: ops a view may be read through (their first operand is the viewed array)
VIEW_PRIMS = frozenset({"reshape", "transpose", "rev", "slice", "dynamic_slice", "take", "real", "imag"})


def view_path(value: Value, base_value: Value) -> tuple[Op, ...] | None:
    """The ops reading `value` from `base_value`, base first; None when `value` is not an
    index remap of it through VIEW_PRIMS (then a write through the view is refused)."""
    path: list[Op] = []
    v = value
    while v is not base_value:
        op = v.op
        if op is None or op.prim.name not in VIEW_PRIMS or len(op.results) != 1:
            return None
        path.append(op)
        v = op.operands[0]
    return tuple(reversed(path))


def replay(b: Builder, path: tuple[Op, ...], base_value: Value) -> Value:
    """The view read again from a new value of its base."""
    v = base_value
    for op in path:
        v = b.emit1(op.prim, [v, *op.operands[1:]], dict(op.params))
    return v


def write_through(b: Builder, path: tuple[Op, ...], base_value: Value, new: Value) -> Value:
    """The base's value after its view (read through `path`) was given the value `new`."""
    steps = [base_value]
    for op in path[:-1]:
        steps.append(b.emit1(op.prim, [steps[-1], *op.operands[1:]], dict(op.params)))
    for op, operand in reversed(list(zip(path, steps))):
        new = _invert(b, op, operand, new)
    return new


def _invert(b: Builder, op: Op, operand: Value, new: Value) -> Value:
    """`operand` updated so that `op` applied to it gives `new`."""
    name, p = op.prim.name, op.params
    if name == "reshape":
        return ops.reshape(b, new, operand.type.shape)
    if name == "transpose":
        perm = p["permutation"]
        inverse = [0] * len(perm)
        for i, axis in enumerate(perm):
            inverse[axis] = i
        return ops.transpose(b, new, inverse)
    if name == "rev":
        return ops.rev(b, new, dimensions=p["dimensions"])
    if name == "slice":
        return ops.update_slice(b, operand, new, p["start_indices"], p["limit_indices"],
                                p["strides"])
    if name == "dynamic_slice":
        return ops.dynamic_update_slice(b, operand, new, list(op.operands[1:]))
    if name == "real":                   # z.real[...] = v: the imaginary parts stay
        return ops.complex_(b, new, ops.imag(b, operand))
    if name == "imag":
        return ops.complex_(b, ops.real(b, operand), new)
    if name == "take":                   # an argument staged as a window of memory (Strided)
        return ops.scatter(b, operand, op.operands[1], new, axis=p["axis"], mode="set")
    raise AssertionError(f"not a view op: {name}")


def chain(obj: Any) -> list[Any]:
    """`obj`, its base, the base's base, ... up to the root array."""
    out = [obj]
    while out[-1].base is not None:
        out.append(out[-1].base)
    return out


def commit(b: Builder, obj: Any, new: Value) -> None:
    """Give `obj` (a Staged, checked writable) the value `new`, write it back through the
    views it is a view of, and read every other live view of the root again."""
    written = chain(obj)
    obj.value = new
    for node in written[:-1]:
        node.base.value = write_through(b, node.path, node.base.value, node.value)
    on_path = {id(n) for n in written}
    _refresh(b, written[-1], on_path)


def through_reshape(obj: Any) -> bool:
    """Does a write into `obj` reach its root through a reshape that changes the layout (a
    view of the root only when the root is C-contiguous, as NumPy decides at run time)?"""
    for node in chain(obj)[:-1]:
        for op in node.path or ():
            if op.prim.name == "reshape":
                before = [d for d in op.operands[0].type.shape if d != 1]
                after = [d for d in op.results[0].type.shape if d != 1]
                if before != after:
                    return True
    return False


def refresh_roots(b: Builder, changed: list[Any]) -> None:
    """After a data-dependent if or a compiled loop gave the arrays `changed` new values:
    every live view of their roots is read again from its (new) base. (A write through a view
    inside the body reached its base there, so the base's value is the one to trust.)"""
    roots: dict[int, Any] = {}
    for obj in changed:
        root = chain(obj)[-1]
        roots[id(root)] = root
    for root in roots.values():
        _refresh(b, root, set())


def _refresh(b: Builder, node: Any, skip: set[int]) -> None:
    for v in node.live_views():
        if id(v) not in skip:
            if v.path is None or v.stale:
                v.stale = True
                v.mark_written()
                continue
            v.value = replay(b, v.path, node.value)
        _refresh(b, v, skip)


def same_value(a: Value, b: Value, depth: int = 12) -> bool:
    """Do two IR values compute the same thing (the same ops on the same operands)? The two
    ``x > 0`` of ``y[x > 0] = x[x > 0] - 1`` do."""
    if a is b:
        return True
    if depth == 0 or a.op is None or b.op is None or a.op.prim is not b.op.prim \
            or a.type != b.type or len(a.op.operands) != len(b.op.operands) \
            or a.op.results.index(a) != b.op.results.index(b) or a.op.regions or b.op.regions:
        return False
    if not _same_params(a.op.params, b.op.params):
        return False
    return all(same_value(x, y, depth - 1) for x, y in zip(a.op.operands, b.op.operands))


def _same_params(p: dict[str, Any], q: dict[str, Any]) -> bool:
    if p.keys() != q.keys():
        return False
    for k in p:
        x, y = p[k], q[k]
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.dtype == y.dtype
                    and x.shape == y.shape and np.array_equal(x, y)):
                return False
        elif type(x) is not type(y):
            return False
        else:
            try:
                if not bool(x == y):
                    return False
            except (TypeError, ValueError):
                return False
    return True


def contiguous(obj: Any) -> bool:
    """Is `obj` C-contiguous in NumPy, assuming its root array is (a reshape of it is then a
    view, else NumPy copies)?"""
    for node in chain(obj)[:-1]:
        if node.path is None:
            return False
        for op in node.path:
            if not _keeps_contiguous(op):
                return False
    return True


def _keeps_contiguous(op: Op) -> bool:
    name, x = op.prim.name, op.operands[0]
    shape = x.type.shape
    if name == "reshape":
        return True
    if name in ("take", "real", "imag"):    # the parts of complex values: stride 2
        return False
    if name == "transpose":
        moved = [a for a in op.params["permutation"] if shape[a] != 1]
        return moved == sorted(moved)
    if name == "rev":
        return all(shape[a] == 1 for a in op.params["dimensions"])
    if name == "slice":
        p = op.params
        if any(s != 1 for s in p["strides"]):
            return False
        sizes = [ops_size(lo, hi) for lo, hi in zip(p["start_indices"], p["limit_indices"])]
    else:                                   # dynamic_slice
        sizes = list(op.params["sizes"])
    # contiguous: axes of extent 1, then one axis of any extent, then whole axes
    started = False
    for n, d in zip(sizes, shape):
        if started and n != d:
            return False
        if n != 1:
            started = True
    return True


def ops_size(lo: Any, hi: Any) -> Any:
    return hi - lo if isinstance(lo, int) and isinstance(hi, int) else None
