"""The transforms called inside compiled code: they run at compile time, and the
kernels they make are staged and inlined where they are called.

``vmap(f)``, ``grad(f)``, ``jit(f)``, ... inside a compiled function give a Kernel,
whose call the frontend inlines (``Kernel.__aotx_stage_call__``); ``vjp``, ``jvp``
and ``linearize`` stage their kernels at once. `f` may be a function defined inside
the compiled code (a lambda or a nested ``def``): it is wrapped in a
:class:`~compiler.frontend.closures.StagedFunction`, whose closed-over staged values
reach the transformed function as constants (extra arguments the inner transform
neither differentiates nor batches), so that a transform of the enclosing function
sees through them.
"""
from __future__ import annotations

from typing import Any, Callable

from compiler.api.autodiff import (LinearizedFn, VjpFn, ad_kernel, grad, grad_and_value, hessian, jacfwd,
                                   jacrev, jvp, kernel_for, linearize, vjp)
from compiler.api.kernel import Kernel, jit
from compiler.api.vmap import vmap
from compiler.frontend.registry import register_function
from compiler.frontend.closures import StagedFunction
from compiler.frontend.values import Closure


def function(func: Any) -> Any:
    """`func`, a function defined inside compiled code wrapped so that a Kernel can stage it."""
    return StagedFunction(func) if isinstance(func, Closure) else func


def staged_constructor(transform: Callable[..., Any]) -> Callable[..., Any]:
    """``vmap(f)`` / ``jit(f)`` / ``grad(f)`` inside compiled code: the Kernel, made now."""

    def handler(stager: Any, func: Any = None, *args: Any, **kwargs: Any) -> Any:
        return transform(function(func), *args, **kwargs)
    return handler


def _kernels(func: Any, kind: str, has_aux: bool) -> tuple[Kernel, Kernel]:
    """`func`'s kernel and its AD kernel; a function defined inside compiled code gets fresh
    ones (they hold its scope: the caches of kernel_for and ad_kernel must not keep it)."""
    if isinstance(func, Closure):
        k = Kernel(StagedFunction(func))
        return k, ad_kernel.__wrapped__(kind, k, has_aux)
    k = kernel_for(func)
    return k, ad_kernel(kind, k, has_aux)


def staged_vjp(stager: Any, func: Any, *primals: Any, has_aux: bool = False) -> Any:
    k, vjp_k = _kernels(func, "vjp", has_aux)
    out = stager._call_kernel(k, list(primals), {}, arrays=True)
    fn = VjpFn(vjp_k, primals)
    return (out[0], fn, out[1]) if has_aux else (out, fn)


def staged_jvp(stager: Any, func: Any, primals: Any, tangents: Any, *, has_aux: bool = False) -> Any:
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primals and tangents must be tuples (one entry per argument)")
    _, jvp_k = _kernels(func, "jvp", has_aux)
    return stager._call_kernel(jvp_k, [tuple(primals), tuple(tangents)], {}, arrays=True)


def staged_linearize(stager: Any, func: Any, *primals: Any) -> Any:
    k, jvp_k = _kernels(func, "jvp", False)
    out = stager._call_kernel(k, list(primals), {}, arrays=True)
    return out, LinearizedFn(jvp_k, primals)


def register() -> None:
    """Let the frontend stage calls to the api's entry points (frontend/registry.py; run before
    the first staging, api/__init__.py)."""
    for transform in (jit, vmap, grad, grad_and_value, jacrev, jacfwd, hessian):
        register_function(transform, staged_constructor(transform))
    register_function(vjp, staged_vjp)
    register_function(jvp, staged_jvp)
    register_function(linearize, staged_linearize)
