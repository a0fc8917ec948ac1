"""``Kernel.ctypes(signature, prototype)`` / ``Kernel.address(signature, prototype)``: a
compiled variant behind a C prototype that another library calls, such as
``scipy.LowLevelCallable`` for ``scipy.integrate.quad`` or ``scipy.ndimage.generic_filter``
(compiler/backend/callbacks.py builds the adapter; docs/interop.md)."""
from __future__ import annotations

import ctypes
from typing import Any

from compiler import errors
from compiler.backend import callbacks
from compiler.backend import target as targets
from runtime.abi import DTYPE_NAMES

PrototypeError = errors.PrototypeError


def adapter(name: str, spec: Any, prototype: str) -> callbacks.Adapter:
    """The adapter of `spec` (a compiled Specialization) for `prototype`, made once and kept
    with the specialization (so its address is valid while the Kernel lives)."""
    made: dict[str, callbacks.Adapter] = spec.__dict__.setdefault("_callbacks", {})
    found = made.get(prototype)
    if found is not None:
        return found
    native = spec.native
    if native.random or native.updates:
        why = "draws random numbers (it takes a key per call)" if native.random \
            else "writes into its arguments"
        raise PrototypeError(f"{name}: a kernel that {why} has no C callback form")
    inputs = [(DTYPE_NAMES[s.dtype], list(s.dims)) for s in native.inputs]
    outputs = [(DTYPE_NAMES[s.dtype], list(s.dims)) for s in native.outputs]
    plan = callbacks.plan(prototype, inputs, outputs, native.symbols, name)
    made[prototype] = callbacks.Adapter(prototype, plan, native.address, native.symbols,
                                        len(inputs), targets.host())
    return made[prototype]


def cfunc(name: str, spec: Any, prototype: str) -> Any:
    """The adapter as a ctypes function that keeps the compiled code alive."""
    a = adapter(name, spec, prototype)
    entry = ctypes.cast(a.address, type(a.cfunc))
    setattr(entry, "_aotx_code", (spec, a))
    return entry
