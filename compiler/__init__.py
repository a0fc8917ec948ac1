"""aotx: compile pure NumPy-style Python functions to fused, vectorized CPU kernels.

The public API (see docs/): ``jit`` and ``Kernel``; the error classes live in
``compiler.errors``.
"""
from compiler import errors
from compiler.cache import diagnostics
from compiler.api import (Kernel, grad, grad_and_value, hessian, jacfwd, jacrev, jit, jvp, linearize,
                          vjp, vmap)
from compiler.function import Function

__version__ = "0.1.0"
__all__ = ["Kernel", "jit", "vmap", "grad", "grad_and_value", "jacrev", "jacfwd", "hessian",
           "vjp", "jvp", "linearize", "Function",
           "errors", "diagnostics", "__version__"]
