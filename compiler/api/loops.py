"""``compiler.fori_loop`` and ``compiler.scan`` (JAX semantics).

Inside compiled code they are staged as one ``for`` op (compiler/frontend/loops.py): the
body is compiled once, whatever the trip count, and the loop is batched by ``vmap`` and
differentiated in both modes. Called outside compiled code, they run as the Python loops
they stand for, on NumPy values.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from compiler.frontend import loops as staged
from compiler.frontend import pytrees
from compiler.frontend.calls import register_function


def fori_loop(lower: int, upper: int, body_fn: Callable[[Any, Any], Any], init: Any,
              checkpoint: bool | int | None = None) -> Any:
    """``val = init; for i in range(lower, upper): val = body_fn(i, val)``; returns val.

    ``checkpoint`` (inside compiled code, for reverse mode): store the carry every
    `checkpoint` iterations only (True: about sqrt(trip count)) and recompute the rest."""
    val = init
    for i in range(int(lower), int(upper)):
        val = body_fn(i, val)
    return val


def scan(fn: Callable[[Any, Any], tuple[Any, Any]], init: Any, xs: Any = None,
         length: int | None = None, reverse: bool = False,
         checkpoint: bool | int | None = None) -> tuple[Any, Any]:
    """Loop `fn` over the leading axis of `xs`, carrying a value: ``carry, y = fn(carry, x)``
    for each row ``x`` of ``xs``; returns the final carry and the ``y``s stacked.
    ``checkpoint`` as for fori_loop."""
    leaves, td = pytrees.flatten(xs)
    arrays = [np.asarray(x) for x in leaves]
    n = length if length is not None else (arrays[0].shape[0] if arrays else None)
    if n is None:
        raise ValueError("scan: needs xs or length")
    if any(a.shape[0] != n for a in arrays):
        raise ValueError("scan: the leading axes of xs (and length) differ")
    carry, ys = init, []
    order = range(n - 1, -1, -1) if reverse else range(n)
    for k in order:
        x = pytrees.unflatten(td, [a[k] for a in arrays]) if xs is not None else None
        carry, y = fn(carry, x)
        ys.append(y)
    if reverse:
        ys.reverse()
    if not ys:
        return carry, None
    y_leaves = [pytrees.flatten(y)[0] for y in ys]
    _, y_td = pytrees.flatten(ys[0])
    return carry, pytrees.unflatten(y_td, [np.stack(col) for col in zip(*y_leaves)])


register_function(fori_loop, staged.fori_loop)
register_function(scan, staged.scan)
