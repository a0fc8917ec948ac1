"""The LLVM optimization pipeline: O2 with loop and SLP vectorization, interleaving and unrolling.

O2 rather than O3: the one difference that shows in aotx's code is O3's full-unroll
threshold (300 against 150). Loops with static trip counts of a few hundred (the batched
products of a vmap of grad, column reductions over 20 columns) were unrolled whole, then
SLP-vectorized: the per-example MLP gradients of the W3 benchmark took 445 ms to compile at
O3 and 93 ms at O2, and the column reductions of `(X - X.mean(0)) / X.std(0)` ran 3.7x
slower unrolled (5.3 against 1.4 ms on 100000 x 20). Every benchmark workload and corpus
kernel ran within noise of O3 otherwise (benchmarks/, interleaved runs).

A fresh ModulePassManager per module: reusing one aborts the process
(llvm/llvm-project#58939). PassBuilder.getFunctionPassManager() does not run
the vectorizers, so the whole per-module default pipeline is used.

The pass manager is freed explicitly after its run: llvmlite's pass manager
classes inherit a no-op ``_dispose`` (``ffi.ObjectRef`` comes first in their
bases), so garbage collection never deletes them, and every compilation kept
about 65 KiB of LLVM pass objects for the life of the process.

After the pipeline, the vecmath functions with an explicit vector body (float64 exp, tanh,
... on AVX-512: vecmath._define.vector_inlined_function) are linked in and inlined by a second,
small pass manager (an always-inliner and global dead-code elimination): their calls had to
stay calls until LoopVectorize chose the vector variants (docs/vecmath.md).
"""
from __future__ import annotations

import llvmlite.binding as llvm
from llvmlite.binding import newpassmanagers

from compiler.backend import vecmath
from compiler.backend.target import Target, _initialize


def optimize(module: llvm.ModuleRef, target: Target) -> llvm.ModuleRef:
    """Run O2 (inlining, loop + SLP vectorization, unrolling) on `module` in place."""
    tm = target.machine()
    module.triple = tm.triple
    module.data_layout = str(tm.target_data)
    pto = llvm.create_pipeline_tuning_options(speed_level=2)
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
    late = [text for fn in module.functions if fn.is_declaration
            for text in [vecmath.late_definition(fn.name)] if text]
    # a loop of a static trip count that the vector body covers whole calls only the variants:
    # the scalar function is gone, the variants still need inlining
    if late or any(vecmath.is_late_variant(fn.name) for fn in module.functions):
        _inline_late(module, late, pb)
    return module


def _inline_late(module: llvm.ModuleRef, texts: list[str], pb: object) -> None:
    """Link in the scalar functions that had to stay calls until LoopVectorize had replaced
    them by calls of their vector variants (vecmath._define.vector_inlined_function), inline
    those variants and functions (``alwaysinline``), and drop what is left unused."""
    for text in texts:     # parsed in the module's context (ModuleRef keeps it as _context)
        module.link_in(llvm.parse_assembly(text, context=module._context))
    for fn in module.functions:    # external until now (_define): dropped below where unused
        if vecmath.is_late_variant(fn.name) and not fn.is_declaration:
            fn.linkage = "internal"
    late = llvm.create_new_module_pass_manager()
    late.add_always_inliner_pass()
    late.add_global_dead_code_eliminate_pass()
    try:
        late.run(module, pb)
    finally:
        _free(late)


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
