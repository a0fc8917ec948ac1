"""``compiler.Function``, in one package: the user API (api.py), what its rules share
with the user's staticmethods (context.py), its primitives ``custom_function`` and
``host_call`` with all their rules (primitive.py, registered into the primitive
registry from above), and the host-callback trampoline (trampoline.py)."""
from compiler.function.api import Function
from compiler.function.context import FunctionCtx, ShapeDtype, VmapInfo

__all__ = ["Function", "FunctionCtx", "ShapeDtype", "VmapInfo"]
