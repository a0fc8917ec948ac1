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
(compiler/primitives/custom.py) stage the user's ``setup_context`` together
with ``backward``/``jvp``/``vmap`` through the frontend with the helpers
below, so the rules are themselves compiled and transformable.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

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


def _apply(cls: type, *args: Any, **kwargs: Any) -> Any:
    """The eager apply. In staged code this name is registered with the frontend
    (:func:`_stage_apply`), whether apply is called or passed to a transform."""
    if kwargs:
        raise TypeError(f"{cls.__name__}.apply() takes positional arguments only")
    return cls.forward(*args)


class FunctionCtx:
    """The ``ctx`` of setup_context/backward/jvp. Arrays are saved with
    ``save_for_backward``/``save_for_forward``; anything else may be set as an
    attribute (the frontend allows attribute assignment on this object only)."""

    __aotx_attribute_sink__ = True

    def __init__(self, mode: str, needs_input_grad: tuple[bool, ...] = ()) -> None:
        self._mode = mode
        self._saved: tuple[Any, ...] = ()
        self._saved_forward: tuple[Any, ...] | None = None
        self._non_differentiable: list[Any] = []
        self.materialize_grads = True
        self.needs_input_grad = needs_input_grad

    def save_for_backward(self, *tensors: Any) -> None:
        self._saved = tuple(tensors)

    def save_for_forward(self, *tensors: Any) -> None:
        self._saved_forward = tuple(tensors)

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        if self._mode == "jvp" and self._saved_forward is not None:
            return self._saved_forward
        return self._saved

    def mark_non_differentiable(self, *outputs: Any) -> None:
        self._non_differentiable.extend(outputs)

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = bool(value)

    def mark_dirty(self, *tensors: Any) -> None:
        raise TypeError("mark_dirty: compiled functions are pure; forward must not modify its inputs")


@dataclass(frozen=True, eq=False)
class VmapInfo:
    """The ``info`` argument of a vmap staticmethod."""

    batch_size: Any
    randomness: str = "error"


@dataclass(frozen=True)
class ShapeDtype:
    """What ``abstract(*args)`` receives for an array argument (and may return)."""

    shape: tuple[Any, ...]
    dtype: np.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)


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


def fill(template: tuple, arrays: list[Any]) -> tuple:
    """The argument tuple: template entries, with each ArraySlot replaced by the next array."""
    it = iter(arrays)
    return tuple(next(it) if isinstance(t, ArraySlot) else t for t in template)


# ---- staged programs: run by the frontend, so the user's methods are compiled ------------------

def _vmap_program(vmap_fn, sink, info, in_dims, *args):  # type: ignore[no-untyped-def]
    return _take_vmap_result(sink, vmap_fn(info, in_dims, *args))


def _backward_program(setup_context, backward, ctx, inputs, output, grads, zero_mask):  # type: ignore[no-untyped-def]
    setup_context(ctx, inputs, output)
    return backward(ctx, *_grads_after_setup(ctx, output, grads, zero_mask))


def _jvp_program(setup_context, jvp, ctx, inputs, output, tangents):  # type: ignore[no-untyped-def]
    setup_context(ctx, inputs, output)
    _grads_after_setup(ctx, output, (), ())
    return jvp(ctx, *tangents)


class _Sink:
    """Receives the out_dims of a staged vmap staticmethod."""

    __aotx_attribute_sink__ = True
    out_dims: Any = None


def _take_vmap_result_handler(st: Any, sink: _Sink, result: Any) -> Any:
    from compiler.errors import CompileError
    from compiler.frontend.values import Reject
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise Reject(CompileError, "a vmap staticmethod must return a pair (output, out_dims)")
    sink.out_dims = result[1]
    return result[0]


def _take_vmap_result(sink: Any, result: Any) -> Any:
    return _take_vmap_result_handler(None, sink, result)


def _grads_after_setup_handler(st: Any, ctx: FunctionCtx, output: Any, grads: tuple,
                               zero_mask: tuple) -> tuple:
    """Which outputs setup_context marked non-differentiable (their grads become zeros),
    and None for symbolic-zero grads when ctx.set_materialize_grads(False)."""
    from compiler.frontend.pytrees import flatten
    from compiler.frontend.values import Staged
    leaves = flatten(output, is_leaf=lambda x: isinstance(x, Staged))[0]
    marked_values = {id(m.value) for m in ctx._non_differentiable if isinstance(m, Staged)}
    ctx._marked = tuple(isinstance(leaf, Staged) and id(leaf.value) in marked_values for leaf in leaves)
    out = []
    for g, marked, zero in zip(grads, ctx._marked, zero_mask):
        if (marked or zero) and not ctx.materialize_grads:
            out.append(None)
        elif marked:
            out.append(_zeros(st.b, g))
        else:
            out.append(g)
    return tuple(out)


def _zeros(b: Any, like: Any) -> Any:
    from compiler.frontend.values import Staged
    from compiler.primitives import ad
    return Staged(ad.zeros_like(b, like.value))


def _grads_after_setup(ctx: Any, output: Any, grads: Any, zero_mask: Any) -> Any:
    raise TypeError("internal: _grads_after_setup runs only in staged code")


# ---- staging Function.apply -------------------------------------------------------------------

def _stage_apply(st: Any, cls: type, *args: Any, **kwargs: Any) -> Any:
    """``cls.apply(*args)`` inside staged code: one custom_function op."""
    from compiler.errors import CompileError, UnsupportedError
    from compiler.frontend import arrays as A
    from compiler.frontend.pytrees import flatten, unflatten
    from compiler.frontend.values import Reject, Staged
    from compiler.primitives.custom import emit_custom_function
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


def _register() -> None:
    from compiler.frontend.calls import register_function
    register_function(Function.apply.__func__, _stage_apply)    # type: ignore[attr-defined]
    register_function(_apply, _stage_apply)
    for name in ("save_for_backward", "save_for_forward", "mark_non_differentiable",
                 "set_materialize_grads", "mark_dirty"):
        method = getattr(FunctionCtx, name)
        register_function(method, lambda st, ctx, *a, _m=method: _m(ctx, *a))
    register_function(_take_vmap_result, _take_vmap_result_handler)
    register_function(_grads_after_setup, _grads_after_setup_handler)


_register()
