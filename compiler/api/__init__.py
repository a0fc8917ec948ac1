"""The user-facing entry points: ``jit`` and ``Kernel`` (kernel.py), ``vmap`` (vmap.py),
and the differentiation transforms (autodiff.py).

Each returns a Kernel; a transform's Kernel traces the inner one and hands its IR
passes to the pipeline (compiler/pipeline.py). The same entry points called
inside compiled code run at compile time, and their kernels are inlined: the
table at the end registers them with the frontend (staged.py; the function they
transform may be defined inside the compiled code).
"""
from compiler.api.autodiff import (LinearizedFn, VjpFn, grad, grad_and_value, hessian, jacfwd, jacrev,
                                   jvp, linearize, vjp)
from compiler.api.loops import fori_loop, scan
from compiler.api.kernel import Kernel, Lowered, Specialization, jit
from compiler.api.staged import staged_constructor, staged_jvp, staged_linearize, staged_vjp
from compiler.api.vmap import vmap
from compiler.frontend.calls import register_function

__all__ = ["Kernel", "Lowered", "Specialization", "jit", "vmap", "grad", "grad_and_value", "jacrev",
           "jacfwd", "hessian", "vjp", "jvp", "linearize", "VjpFn", "LinearizedFn", "fori_loop", "scan"]

for _transform in (jit, vmap, grad, grad_and_value, jacrev, jacfwd, hessian):
    register_function(_transform, staged_constructor(_transform))
register_function(vjp, staged_vjp)
register_function(jvp, staged_jvp)
register_function(linearize, staged_linearize)
