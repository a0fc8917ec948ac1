"""aotx: compile pure NumPy-style Python functions to fused, vectorized CPU kernels.

The public API (see docs/): ``jit`` and ``Kernel``; the error classes live in
``compiler.errors``.
"""
from compiler import errors, random
from compiler.api import (Kernel, fori_loop, grad, grad_and_value, hessian, jacfwd, jacrev, jit, jvp,
                          linearize, scan, vjp, vmap)
from compiler.api.control import cond, switch, while_loop
from compiler.cache import diagnostics
from compiler.function import Function
from compiler.version import __version__

__all__ = ["Kernel", "jit", "vmap", "grad", "grad_and_value", "jacrev", "jacfwd", "hessian",
           "vjp", "jvp", "linearize", "Function", "fori_loop", "scan", "cond", "switch",
           "while_loop", "errors", "random", "diagnostics", "__version__"]
