"""aotx: compile pure NumPy-style Python functions to fused, vectorized CPU kernels.

The public API (see docs/): ``jit`` and ``Kernel``; the error classes live in
``compiler.errors``.

``import compiler`` loads what a kernel needs to be loaded from the on-disk cache and called
(``jit``, ``Kernel``, the cache, MCJIT); the transforms, ``compiler.random``, the control
flow and ``Function`` load on first use of their names, and the frontend, the IR passes and
the code generator with the first compile (docs/internals.md, "Import time").
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from compiler import api, errors
from compiler.api.kernel import Kernel, jit
from compiler.cache import diagnostics
from compiler.version import __version__

if TYPE_CHECKING:
    from compiler import random
    from compiler.api import (fori_loop, grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, scan,
                              vjp)
    from compiler.api.vmap import vmap
    from compiler.api.control import cond, switch, while_loop
    from compiler.function import Function

__all__ = ["Kernel", "jit", "vmap", "grad", "grad_and_value", "jacrev", "jacfwd", "hessian",
           "vjp", "jvp", "linearize", "Function", "fori_loop", "scan", "cond", "switch",
           "while_loop", "errors", "random", "diagnostics", "__version__"]

_API = frozenset({"grad", "grad_and_value", "jacrev", "jacfwd", "hessian", "vjp", "jvp", "linearize",
                  "fori_loop", "scan"})


def __getattr__(name: str) -> Any:
    """The names whose modules load on first use (their import costs what a cache hit does not
    need: the transforms, the frontend's handlers)."""
    if name == "vmap":     # the function (once imported, compiler.api.vmap is its module)
        from compiler.api.vmap import vmap          # deferred: DEFERRED_IMPORTS
        return vmap
    if name in _API:
        return getattr(api, name)                   # compiler.api loads them (api/__init__.py)
    if name in ("cond", "switch", "while_loop"):
        from compiler.api import control            # deferred: DEFERRED_IMPORTS
        return getattr(control, name)
    if name == "Function":
        from compiler.function import Function      # deferred: DEFERRED_IMPORTS
        return Function
    if name == "random":
        import compiler.random                      # deferred: DEFERRED_IMPORTS
        return compiler.random
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
