"""The user-facing entry points: ``jit`` and ``Kernel`` (kernel.py), ``vmap`` (vmap.py),
and the differentiation transforms (autodiff.py).

Each returns a Kernel; a transform's Kernel traces the inner one and hands its IR
passes to the pipeline (compiler/pipeline.py). The same entry points called
inside compiled code run at compile time, and their kernels are inlined: staged.py
registers them with the frontend before the first staging (``frontend.registry``; the
function they transform may be defined inside the compiled code).

Only kernel.py is imported with the package: vmap.py, autodiff.py and loops.py import the
transforms and the frontend, and load on first use of one of their names (``__getattr__``;
docs/internals.md, "Import time").
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from compiler.api.kernel import Kernel, Lowered, Specialization, jit
from compiler.frontend import registry

if TYPE_CHECKING:
    from compiler.api.autodiff import (LinearizedFn, VjpFn, grad, grad_and_value, hessian, jacfwd, jacrev,
                                       jvp, linearize, vjp)
    from compiler.api.loops import fori_loop, scan

# vmap is compiler.vmap: compiler.api.vmap is its module (vmap.py)
__all__ = ["Kernel", "Lowered", "Specialization", "jit", "grad", "grad_and_value", "jacrev",
           "jacfwd", "hessian", "vjp", "jvp", "linearize", "VjpFn", "LinearizedFn", "fori_loop", "scan"]

#: the names of the modules loaded on first use, by the name they define
_DEFERRED = {**dict.fromkeys(("grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "linearize",
                              "vjp", "LinearizedFn", "VjpFn"), "autodiff"),
             "fori_loop": "loops", "scan": "loops"}


def __getattr__(name: str) -> Any:
    module = _DEFERRED.get(name)
    if module == "autodiff":
        from compiler.api import autodiff           # deferred: DEFERRED_IMPORTS
        return getattr(autodiff, name)
    if module == "loops":
        from compiler.api import loops              # deferred: DEFERRED_IMPORTS
        return getattr(loops, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _register_staged() -> None:
    """jit, vmap, grad, ... called inside compiled code (staged.py)."""
    from compiler.api import staged                 # deferred: DEFERRED_IMPORTS
    staged.register()


registry.before_staging(_register_staged)
