"""``compiler.Function``: custom functions with their own transform rules (the
aotx counterpart of ``torch.autograd.Function`` with torch.func, see
docs/custom_functions.md).

A subclass defines staticmethods::

    forward(*args)                       -> output (no ctx; intermediates are outputs)
    setup_context(ctx, inputs, output)   -> None   (save arrays, mark outputs, set attributes)
    backward(ctx, *grad_outputs)         -> one gradient per input (None for non-arrays)
    jvp(ctx, *tangents)                  -> one tangent per output
    vmap(info, in_dims, *args)           -> (output, out_dims)
    abstract(*args)                      -> output shapes/dtypes (host callbacks only; optional)

and calls it with ``MyFunction.apply(*args)``. Outside compiled code ``apply``
runs ``forward`` with NumPy (the first law). Inside compiled code the call is
staged by :func:`_stage_apply`: a forward written in the supported subset
becomes the region of a ``custom_function`` op; any other forward becomes a
``host_call`` op inside that region, which calls back into Python when the
kernel runs. The transform rules of ``custom_function``
(compiler/function/primitive.py) stage the user's ``setup_context`` together
with ``backward``/``jvp``/``vmap`` through the frontend with the helpers
below, so the rules are themselves compiled and transformable.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from compiler.errors import CompileError, UnsupportedError
from compiler.frontend import arrays as A
from compiler.frontend.calls import register_function
from compiler.frontend.pytrees import flatten, unflatten
from compiler.frontend.values import Reject, Staged
from compiler.function.context import FunctionCtx, ShapeDtype, VmapInfo
from compiler.function.primitive import emit_custom_function
from compiler.ir.params import ArraySlot

__all__ = ["Function", "FunctionCtx", "VmapInfo", "ShapeDtype"]


class Function:
    """Base class of custom functions (``torch.autograd.Function`` with torch.func semantics).

    Class attributes: ``generate_vmap_rule`` (False: vmap needs a ``vmap``
    staticmethod; True: vmap batches the compiled forward, backward and jvp) and
    ``host_callback`` (None: compile ``forward`` when it is in the supported subset,
    else run it as a host callback; True: always a host callback; False: it must
    compile).
    """

    generate_vmap_rule: bool = False
    host_callback: bool | None = None

    @staticmethod
    def forward(*args: Any) -> Any:
        raise NotImplementedError("a compiler.Function subclass must define a forward staticmethod")

    @staticmethod
    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        return None

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run the function. Outside compiled code: ``forward`` on NumPy values."""
        return _apply(cls, *args, **kwargs)


def _apply(cls: Any, *args: Any, **kwargs: Any) -> Any:
    """The eager apply. In staged code this name is registered with the frontend
    (:func:`_stage_apply`), whether apply is called or passed to a transform."""
    if kwargs:
        raise TypeError(f"{cls.__name__}.apply() takes positional arguments only")
    return cls.forward(*args)


# ---- staging Function.apply -------------------------------------------------------------------

def _stage_apply(st: Any, cls: Any, *args: Any, **kwargs: Any) -> Any:
    """``cls.apply(*args)`` inside staged code: one custom_function op."""
    if not (isinstance(cls, type) and issubclass(cls, Function)):
        raise Reject(CompileError, f"apply() needs a compiler.Function subclass, got {cls!r}")
    if kwargs:
        raise Reject(CompileError, f"{cls.__name__}.apply() takes positional arguments only "
                     "(as torch.autograd.Function.apply)", "bind keyword arguments in a wrapper "
                     "function that calls apply positionally")
    template: list[Any] = []
    arrays: list[Staged] = []
    for a in args:
        if isinstance(a, np.ndarray):
            a = A.constant(st.b, a)
        if isinstance(a, Staged):
            template.append(ArraySlot(a.weak))
            arrays.append(a)
            continue
        leaves = flatten(a, is_leaf=lambda x: isinstance(x, Staged))[0]
        if any(isinstance(x, Staged) for x in leaves):
            raise Reject(UnsupportedError, f"{cls.__name__}.apply(): arrays inside a "
                         f"{type(a).__name__} are not tracked (as with torch.autograd.Function)",
                         "pass each array as its own argument")
        template.append(a)
    results, out_tree = emit_custom_function(st.b, cls, tuple(template), [s.value for s in arrays])
    return unflatten(out_tree, [Staged(v) for v in results])


register_function(Function.apply.__func__, _stage_apply)    # type: ignore[attr-defined]
register_function(_apply, _stage_apply)
