"""The LLVM optimization pipeline: O3 with loop and SLP vectorization.

A fresh ModulePassManager per module: reusing one aborts the process
(llvm/llvm-project#58939). PassBuilder.getFunctionPassManager() does not run
the vectorizers, so the whole per-module default pipeline is used.

The pass manager is freed explicitly after its run: llvmlite's pass manager
classes inherit a no-op ``_dispose`` (``ffi.ObjectRef`` comes first in their
bases), so garbage collection never deletes them, and every compilation kept
about 65 KiB of LLVM pass objects for the life of the process.
"""
from __future__ import annotations

import llvmlite.binding as llvm
from llvmlite.binding import newpassmanagers

from compiler.backend.target import Target, _initialize


def optimize(module: llvm.ModuleRef, target: Target) -> llvm.ModuleRef:
    """Run O3 (inlining, loop + SLP vectorization, unrolling) on `module` in place."""
    tm = target.machine()
    module.triple = tm.triple
    module.data_layout = str(tm.target_data)
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True  # off by default in llvmlite
    pto.loop_interleaving = True
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    try:
        mpm.run(module, pb)
    finally:
        _free(mpm)
    return module


def _free(manager: llvm.ModulePassManager) -> None:
    """Delete a pass manager now (its garbage collection does not: module docstring)."""
    if not manager.closed:
        newpassmanagers.NewPassManager._dispose(manager)
        manager.detach()


def parse(llvm_ir: str, target: Target) -> llvm.ModuleRef:
    """Parse textual LLVM IR, stamp the target on it, and verify it.

    Each module gets an LLVM context of its own, freed with it: in the global context the
    constants, types and metadata of every kernel ever compiled would stay for good."""
    _initialize()
    module = llvm.parse_assembly(llvm_ir, context=llvm.create_context())
    tm = target.machine()
    module.triple = tm.triple
    module.data_layout = str(tm.target_data)
    module.verify()
    return module


def emit_object(module: llvm.ModuleRef, target: Target) -> bytes:
    return target.machine().emit_object(module)


def emit_assembly(module: llvm.ModuleRef, target: Target) -> str:
    return target.machine().emit_assembly(module)
