"""``compiler.cond``, ``compiler.switch`` and ``compiler.while_loop``.

Inside compiled code (``jit``, ``vmap``, ``grad``, ...) a call is staged as real
control flow by ``frontend/structured.py``: a ``cond`` or ``while`` op that vmap
batches per element and AD differentiates (docs/control_flow.md). Called outside
compiled code they are the Python they stand for: an ``if`` and a ``while``.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

import numpy as np

from compiler.errors import CompileError
from compiler.frontend.calls import register_function
from compiler.frontend.structured import stage_cond, stage_switch, stage_while_loop
from compiler.frontend.values import Reject

__all__ = ["cond", "switch", "while_loop"]


def _scalar(x: Any, what: str) -> Any:
    arr = np.asarray(x)
    if arr.size != 1:
        raise ValueError(f"{what} must have one element, got shape {arr.shape}")
    return arr.reshape(())


def cond(pred: Any, true_fn: Callable[..., Any], false_fn: Callable[..., Any], *operands: Any) -> Any:
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``.

    Compiled, both branches are staged (they must return the same structure, shapes
    and dtypes) and one runs; under vmap with a batched ``pred`` each element takes its
    own branch; differentiable in both modes."""
    return true_fn(*operands) if bool(_scalar(pred, "compiler.cond: pred")) else false_fn(*operands)


def switch(index: Any, branches: Sequence[Callable[..., Any]], *operands: Any) -> Any:
    """``branches[index](*operands)``, with ``index`` clamped to ``[0, len(branches) - 1]``."""
    i = int(_scalar(index, "compiler.switch: index"))
    return branches[min(max(i, 0), len(branches) - 1)](*operands)


def while_loop(cond_fn: Callable[[Any], Any], body_fn: Callable[[Any], Any], init: Any) -> Any:
    """``val = init; while cond_fn(val): val = body_fn(val); return val``.

    Compiled, the carry keeps ``init``'s structure, shapes and dtypes; under vmap with a
    batched predicate the loop runs until every element is done (finished elements stay
    fixed); differentiable in forward mode."""
    val = init
    while bool(_scalar(cond_fn(val), "compiler.while_loop: cond_fn's result")):
        val = body_fn(val)
    return val


def _staged(public: Callable[..., Any], stage: Callable[..., Any]) -> Callable[..., Any]:
    signature = inspect.signature(public)

    def handler(st: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as e:
            raise Reject(CompileError, f"compiler.{public.__name__}(): {e}") from None
        return stage(st, *bound.args, **bound.kwargs)
    return handler


register_function(cond, _staged(cond, stage_cond))
register_function(switch, _staged(switch, stage_switch))
register_function(while_loop, _staged(while_loop, stage_while_loop))
