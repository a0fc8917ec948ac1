"""In-process loading of object code through MCJIT.

Object bytes (from :func:`compiler.backend.passes.emit_object` or the on-disk
cache) are added to an execution engine; the engine is kept alive as long as
the returned :class:`LoadedObject`, which maps symbol names to addresses.
"""
from __future__ import annotations

import ctypes
import functools
import weakref
from typing import Callable, Sequence

import llvmlite.binding as llvm

from compiler.backend import pool
from compiler.backend.target import Target, _initialize
from runtime import blas, workspace

#: float16 conversions LLVM may call rather than inline (double -> half always; float <-> half
#: on CPUs without F16C); a linked library gets them from libgcc, MCJIT from this table
_HALF_HELPERS = ("__truncdfhf2", "__truncsfhf2", "__extendhfsf2", "__extendhfdf2")


@functools.cache
def _register_runtime_helpers() -> None:
    try:
        lib = ctypes.CDLL("libgcc_s.so.1")       # Linux: found without ctypes.util, which runs ldconfig
    except OSError:
        from ctypes import util                  # elsewhere (macOS, ...): ask ctypes where it is
        name = util.find_library("gcc_s")
        if name is None:
            return
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            return
    for symbol in _HALF_HELPERS:
        fn = getattr(lib, symbol, None)
        if fn is not None:
            llvm.add_symbol(symbol, ctypes.cast(fn, ctypes.c_void_p).value)


class LoadedObject:
    """Native code loaded in this process. Keep it alive while calling into it.

    `library`: the BLAS/LAPACK routines kernel `symbol` may call; their pointers
    (backend/library.py) are filled from this process's provider (runtime/blas.py), or left
    NULL (the kernel then runs its generated code). A kernel that keeps a block of temporaries
    between calls (backend/workspace.py) gets ``AOTX_WORKSPACE_LIMIT`` here, and its block is
    freed before the code is unloaded."""

    def __init__(self, obj: bytes, target: Target, symbol: str = "",
                 library: Sequence[str] = ()) -> None:
        # an engine is made with a module, which finalize_object would compile: taken out, the
        # engine only loads the object (0.8 ms less per load: the cache-hit path)
        empty = llvm.parse_assembly("")
        _initialize()
        _register_runtime_helpers()
        if pool.uses_pool(obj):            # parallel=True: the process's thread pool (backend/pool.py)
            pool.ensure_loaded()
        self._engine = llvm.create_mcjit_compiler(
            empty, target.machine(jit=True))
        self._engine.remove_module(empty)
        self._engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        self._engine.finalize_object()
        self.library = tuple(library)      # what the kernel may call (pickled with it: api/pickling.py)
        self.library_filled = blas.fill(
            library, lambda r: self._engine.get_global_value_address(blas.slot_symbol(symbol, r)))
        release = workspace.configure(self._engine.get_function_address, symbol) if symbol else None
        if release is not None:            # the finalizer holds the engine until it has run
            weakref.finalize(self, _release, self._engine, release)

    def address(self, symbol: str) -> int:
        addr = self._engine.get_function_address(symbol)
        if not addr:
            raise KeyError(f"symbol {symbol!r} not found in loaded object")
        return addr


def _release(engine: object, release: Callable[[], None]) -> None:
    """Free a kernel's kept workspace while its code (`engine`) is still loaded."""
    release()
