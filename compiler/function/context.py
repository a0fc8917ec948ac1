"""What the rules of ``compiler.Function`` share with the user's staticmethods: the
``ctx`` object, ``VmapInfo``, ``ShapeDtype``, the argument template, and the small
programs that the frontend stages around the user's setup_context/backward/jvp/vmap
(so those run compiled, and transformable)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from compiler.errors import CompileError
from compiler.frontend.calls import register_function
from compiler.frontend.pytrees import flatten
from compiler.frontend.values import Reject, Staged
from compiler.ir.params import ArraySlot
from compiler.primitives import ops


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
        self._marked: tuple[bool, ...] = ()
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


def fill(template: tuple[Any, ...], arrays: list[Any]) -> tuple[Any, ...]:
    """The argument tuple: template entries, with each ArraySlot replaced by the next array."""
    it = iter(arrays)
    return tuple(next(it) if isinstance(t, ArraySlot) else t for t in template)


# ---- staged programs: run by the frontend, so the user's methods are compiled ------------------

def _vmap_program(vmap_fn, sink, info, in_dims, *args):
    return _take_vmap_result(sink, vmap_fn(info, in_dims, *args))


def _backward_program(setup_context, backward, ctx, inputs, output, grads, zero_mask):
    setup_context(ctx, inputs, output)
    return backward(ctx, *_grads_after_setup(ctx, output, grads, zero_mask))


def _jvp_program(setup_context, jvp, ctx, inputs, output, tangents):
    setup_context(ctx, inputs, output)
    _grads_after_setup(ctx, output, (), ())
    return jvp(ctx, *tangents)


class _Sink:
    """Receives the out_dims of a staged vmap staticmethod."""

    __aotx_attribute_sink__ = True
    out_dims: Any = None


def _take_vmap_result_handler(st: Any, sink: _Sink, result: Any) -> Any:
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise Reject(CompileError, "a vmap staticmethod must return a pair (output, out_dims)")
    sink.out_dims = result[1]
    return result[0]


def _take_vmap_result(sink: Any, result: Any) -> Any:
    return _take_vmap_result_handler(None, sink, result)


def _grads_after_setup_handler(st: Any, ctx: FunctionCtx, output: Any, grads: tuple[Any, ...],
                               zero_mask: tuple[Any, ...]) -> tuple[Any, ...]:
    """Which outputs setup_context marked non-differentiable (their grads become zeros),
    and None for symbolic-zero grads when ctx.set_materialize_grads(False)."""
    leaves = flatten(output, is_leaf=lambda x: isinstance(x, Staged))[0]
    marked_values = {id(m.value) for m in ctx._non_differentiable if isinstance(m, Staged)}
    ctx._marked = tuple(isinstance(leaf, Staged) and id(leaf.value) in marked_values for leaf in leaves)
    out: list[Any] = []
    for g, marked, zero in zip(grads, ctx._marked, zero_mask):
        if (marked or zero) and not ctx.materialize_grads:
            out.append(None)
        elif marked:
            out.append(_zeros(st.b, g))
        else:
            out.append(g)
    return tuple(out)


def _zeros(b: Any, like: Any) -> Any:
    return Staged(ops.zeros_like(b, like.value))


def _grads_after_setup(ctx: Any, output: Any, grads: Any, zero_mask: Any) -> Any:
    raise TypeError("internal: _grads_after_setup runs only in staged code")


for _name in ("save_for_backward", "save_for_forward", "mark_non_differentiable",
              "set_materialize_grads", "mark_dirty"):
    _method = getattr(FunctionCtx, _name)
    register_function(_method, lambda st, ctx, *a, _m=_method: _m(ctx, *a))
register_function(_take_vmap_result, _take_vmap_result_handler)
register_function(_grads_after_setup, _grads_after_setup_handler)
