"""Calls from generated code into a BLAS/LAPACK library, through a pointer the loader fills.

A kernel that may call routine R exports a pointer-sized global ``<kernel symbol>__R``,
initially NULL (external linkage, so LLVM cannot assume it stays NULL). The loader points it
at the provider's routine (runtime/blas.py): ``backend/jit.py`` after MCJIT maps the object
(fresh or from the on-disk cache), ``runtime.load`` for a built library; a C program sets it
itself (the header says how). At each call site the kernel tests the pointer: NULL (no
provider, or a C caller that did not set it) runs the generated fallback instead, so a
kernel never needs the library to be correct.

Routines are called with the Fortran ABI of ILP64 BLAS/LAPACK: every argument by reference,
integers int64, and after them one hidden int64 length per character argument (gfortran's
convention; C implementations ignore them)::

    def gemm(invoke):               # emitted only on the branch where the pointer is set
        invoke([cg.char("N"), cg.char("N"), m, n, k, one, a, lda, b, ldb, zero, c, ldc])
    cg.library_call("dgemm", gemm, fallback=lambda: loops(), when=big_enough, strings=2)

``kernel.library_routines(llvm_ir, symbol)`` lists the routines of a module (its slots), for
the cache entry and the build manifest.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Sequence

from llvmlite import ir as ll

from compiler.backend.buffers import I8T, I64T, PTR
from runtime.blas import slot_symbol

Invoke = Callable[[Sequence[ll.Value]], None]


def slot(cg: Any, routine: str) -> ll.GlobalVariable:
    """The kernel's pointer to `routine` (declared on first use)."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", routine):
        raise ValueError(f"bad routine name {routine!r}")
    gv = cg.library_slots.get(routine)
    if gv is None:
        gv = ll.GlobalVariable(cg.module, PTR, name=slot_symbol(cg.name, routine))
        gv.initializer = ll.Constant(PTR, None)
        gv.align = 8
        cg.library_slots[routine] = gv
    return gv


def by_reference(cg: Any, value: ll.Value) -> ll.Value:
    """`value` as a Fortran argument: a pointer as it is, a scalar stored in a stack slot of
    the entry block (written where the call is)."""
    if isinstance(value.type, ll.PointerType):
        return cg.b.bitcast(value, PTR)
    slot_ = cg.alloca_builder.alloca(value.type)
    cg.b.store(value, slot_)
    return cg.b.bitcast(slot_, PTR)


def call(cg: Any, routine: str, emit: Sequence[ll.Value] | Callable[[Invoke], None],
         fallback: Callable[[], None], *, when: ll.Value | None = None, strings: int = 0) -> None:
    """Where the kernel's pointer to `routine` is set and `when` (an i1) holds, run
    `emit(invoke)`: it emits whatever the library branch needs (packing operands, a loop
    over a batch) and ``invoke(args)`` for each call (Fortran ABI, see the module
    docstring); a list of args is one call. Elsewhere run `fallback()`, which emits the
    generated code. `strings`: the routine's number of character arguments (each gets its
    hidden length 1)."""
    b = cg.b
    fn = b.load(slot(cg, routine))
    ok = b.icmp_unsigned("!=", fn, ll.Constant(PTR, None))
    if when is not None:
        ok = b.and_(ok, when)

    def invoke(args: Sequence[ll.Value]) -> None:
        refs = [by_reference(cg, v) for v in args]
        fnty = ll.FunctionType(ll.VoidType(), [PTR] * len(refs) + [I64T] * strings)
        cg.b.call(cg.b.bitcast(fn, fnty.as_pointer()), refs + [ll.Constant(I64T, 1)] * strings)

    with b.if_else(ok) as (library, generated):
        with library:
            cg._cache.append({})
            try:
                if callable(emit):
                    emit(invoke)
                else:
                    invoke(emit)
            finally:
                cg._cache.pop()
        with generated:
            cg._cache.append({})
            try:
                fallback()
            finally:
                cg._cache.pop()


def char(value: str) -> ll.Constant:
    """A Fortran CHARACTER*1 argument (``"N"``, ``"T"``, ``"U"``, ...)."""
    return ll.Constant(I8T, ord(value))


def routines(llvm_ir: str, symbol: str) -> list[str]:
    """The routines whose pointers the module of kernel `symbol` declares, in order."""
    if slot_symbol(symbol, "") not in llvm_ir:      # most kernels: no scan of the whole text
        return []
    prefix = re.escape(slot_symbol(symbol, ""))
    found = re.findall(rf'^@"?{prefix}([a-z][a-z0-9_]*)"? = (?:\w+ )*global', llvm_ir, flags=re.M)
    return list(dict.fromkeys(found))
