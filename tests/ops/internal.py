"""The compiler internals the generated op tests use, in one place.

The op tests (tests/ops/test_*.py) call the public API (``compiler.jit``,
``vmap``, ``jvp``, ``vjp``, ``grad``) for everything a user can do; below that
API they need a few internal hooks, all listed here so that a renamed module or
function is updated once:

* the primitive table (``primitive_names``, ``differentiable``, ``elementwise``);
* staging without native compilation (``stage``, ``stage_batched``) and the
  reference interpreter (``interpret``) with the IR verifier (``verify``);
* one-op IR functions (``one_op_function``), compiled natively without the
  API layer (``compile_function``), and the IR-level transforms
  (``vmap_function``, ``jvp_function``, ``vjp_function``);
* ``primitives_in``: the primitive names occurring in an IR function, and
  ``ir_text``: its printed form without locations.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

import numpy as np

import compiler.frontend as _frontend
import compiler.primitives as _prims
from compiler import pipeline as _pipeline
from compiler.api.kernel import _abstract_leafwise
from compiler.backend import target as _target
from compiler.frontend.pytrees import unflatten as _unflatten
from compiler.ir.builder import Builder as _Builder, new_block as _new_block
from compiler.ir.core import Function, SourceLoc as _SourceLoc
from compiler.ir.interpret import interpret as _interpret
from compiler.ir.printer import format_function as _format_function
from compiler.ir.types import TensorType as _TensorType, canonical_dtype as _canonical_dtype
from compiler.ir.verify import verify as _verify
from compiler.signature import parse_signature as _parse_signature
from compiler.transforms.jvp import jvp_function as _jvp_function
from compiler.transforms.vjp import vjp_function as _vjp_function
from compiler.transforms.vmap import vmap_function as _vmap_function
from runtime.abi import parse_spec as _parse_spec
from runtime.loader import NativeKernel as _NativeKernel

__all__ = ["Function", "primitive_names", "differentiable", "elementwise", "stage", "stage_batched", "interpret",
           "verify", "ir_text", "primitives_in", "one_op_function", "compile_function", "vmap_function",
           "jvp_function", "vjp_function"]


# ---- the primitive table -----------------------------------------------------------------------------

def primitive_names() -> set[str]:
    """The name of every primitive the compiler defines."""
    return set(_prims.REGISTRY)


def differentiable(name: str) -> bool:
    """Whether the primitive has derivative rules (False: integer/bool-valued ops)."""
    return bool(_prims.REGISTRY[name].differentiable)


def elementwise(name: str) -> bool:
    """Whether the primitive is elementwise (one scalar operation per element)."""
    return _prims.REGISTRY[name].kind == "elementwise"


# ---- staging, the interpreter, the verifier ----------------------------------------------------------

def stage(fn: Callable[..., Any], args: tuple, kwargs: dict, signature: str | None = None) -> Function:
    """The IR function the frontend produces for ``fn(*args, **kwargs)`` (no native compilation).

    Arrays become dynamic inputs, Python floats weak scalars, everything else is static,
    exactly as ``jit`` binds them; `signature` (``"f64[n, 3]"``) gives symbolic types instead."""
    if signature is not None:
        return _frontend.stage(fn, tuple(_parse_signature(signature)[0]), {}, name="staged").function
    bound = inspect.signature(fn).bind(*args, **kwargs)
    scratch: list[Any] = []
    a_args = tuple(_abstract_leafwise(f"arg{i}", v, scratch) for i, v in enumerate(bound.args))
    a_kwargs = {k: _abstract_leafwise(k, v, scratch) for k, v in bound.kwargs.items()}
    return _frontend.stage(fn, a_args, a_kwargs, name="staged").function


def stage_batched(kernel: Any, args: tuple) -> Any:
    """Stage `kernel` (a transform's Kernel, e.g. ``vmap(f)``) for `args`, verify its IR and
    run it with the reference interpreter: the result, with the kernel's output structure."""
    _, a_args, a_kwargs, dynamic = kernel._abstract(args, {})
    program = kernel.trace(a_args, a_kwargs)
    _verify(program.function)
    outs = _interpret(program.function, *dynamic)
    return _unflatten(program.out_tree, [o[()] if o.ndim == 0 else o for o in outs])


def interpret(fn: Function, *args: Any) -> list[np.ndarray]:
    """Run an IR function with the reference interpreter (each primitive's NumPy reference)."""
    return _interpret(fn, *args)


def verify(fn: Function) -> None:
    _verify(fn)


def ir_text(fn: Function) -> str:
    """The printed IR of `fn`, without source locations (equal for equal programs)."""
    return _format_function(fn)


def primitives_in(fn: Function) -> set[str]:
    """The names of the primitives occurring in `fn` (regions included)."""
    return {op.prim.name for op in fn.body.walk()}


# ---- one primitive, below the NumPy surface -------------------------------------------------------------

def one_op_function(name: str, args: Sequence[np.ndarray], params: dict[str, Any]) -> Function:
    """An IR function of the arrays `args` that applies the primitive `name` once."""
    prim = _prims.REGISTRY[name]
    types = [_TensorType(_canonical_dtype(np.asarray(a).dtype), tuple(np.shape(a))) for a in args]
    block = _new_block(types)
    b = _Builder(block, _SourceLoc(__file__, 1))
    block.results = list(b.emit(prim, block.args, params))
    return Function(f"t_{name}", block)


def compile_function(fn: Function) -> Callable[..., list[np.ndarray]]:
    """`fn` compiled to native code (no cache), callable on NumPy arrays."""
    art = _pipeline.compile_ir(fn, fn.name, _target.host())
    obj = _pipeline.load(art)
    ins = [_parse_spec(f"a{i}", str(t)) for i, t in enumerate(fn.in_types)]
    outs = [_parse_spec(f"r{i}", str(t)) for i, t in enumerate(art.ir_optimized.out_types)]
    return _NativeKernel(fn.name, obj.address(fn.name), ins, outs, art.symbols, obj)


def vmap_function(fn: Function, in_dims: Sequence[int | None], size: int) -> Function:
    """The batched `fn` (one in_dim per argument; every result batched along axis 0)."""
    return _vmap_function(fn, list(in_dims), [0] * len(fn.results), size)


def jvp_function(fn: Function, active: Sequence[bool]) -> Function:
    """`fn` followed by tangent inputs of the active arguments; returns results, then tangents."""
    return _jvp_function(fn, active)


def vjp_function(fn: Function, active: Sequence[bool]) -> Function:
    """`fn` followed by cotangent inputs of its float results; returns results, then the
    cotangents of the active arguments."""
    return _vjp_function(fn, active)
