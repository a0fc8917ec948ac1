"""In-process loading of object code through MCJIT.

Object bytes (from :func:`compiler.backend.passes.emit_object` or the on-disk
cache) are added to an execution engine; the engine is kept alive as long as
the returned :class:`LoadedObject`, which maps symbol names to addresses.
"""
from __future__ import annotations

import llvmlite.binding as llvm

from compiler.backend.target import Target, _initialize


class LoadedObject:
    """Native code loaded in this process. Keep it alive while calling into it."""

    def __init__(self, obj: bytes, target: Target) -> None:
        _initialize()
        self._engine = llvm.create_mcjit_compiler(
            llvm.parse_assembly(""), target.machine(jit=True))
        self._engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        self._engine.finalize_object()

    def address(self, symbol: str) -> int:
        addr = self._engine.get_function_address(symbol)
        if not addr:
            raise KeyError(f"symbol {symbol!r} not found in loaded object")
        return addr
