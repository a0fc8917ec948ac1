"""THE pipeline, as a list of named stages.

    frontend -> verify -> [transforms] -> simplify -> fuse+lower (LLVM IR)
             -> optimize (O3, vectorize) -> emit object -> load

``run(stage, value, name=...)`` is the one place where stage hooks live:
AOTX_DEBUG timing, AOTX_PRINT_AFTER printing and AOTX_VERIFY checking.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from compiler import config
from compiler.backend import jit as native, kernel, passes
from compiler.backend.target import Target
from compiler.ir.core import Function
from compiler.ir.verify import verify

STATS = {"llvm_compilations": 0}   # diagnostics: how often LLVM actually ran in this process


def run(stage: Callable[..., Any], value: Any, *args: Any, name: str) -> Any:
    """Run one stage with the debug hooks."""
    start = time.perf_counter()
    result = stage(value, *args)
    if config.debug_level() >= 1:
        print(f"[aotx] {name}: {1e3 * (time.perf_counter() - start):.2f} ms", file=sys.stderr)
    if name in config.print_after() or config.debug_level() >= 3:
        print(f"[aotx] after {name}:\n{result}", file=sys.stderr)
    if isinstance(result, Function) and config.verify_enabled():
        verify(result)
    return result


@dataclass
class Artifacts:
    """Every stage's output for one compiled function."""

    name: str
    ir: Function
    ir_optimized: Function
    llvm: str
    llvm_optimized: str
    object: bytes
    target: Target
    symbols: list[str]
    _asm: str | None = field(default=None, repr=False)

    @property
    def asm(self) -> str:
        if self._asm is None:
            module = passes.parse(self.llvm_optimized, self.target)
            self._asm = passes.emit_assembly(module, self.target)
        return self._asm


def optimize_ir(fn: Function) -> Function:
    """Target-independent simplification of the IR."""
    from compiler.transforms.canonicalize import canonicalize
    from compiler.transforms.simplify import simplify
    fn = run(canonicalize, fn, name="canonicalize")
    return run(simplify, fn, name="simplify")


def compile_ir(fn: Function, name: str, target: Target, *, fastmath: bool = False) -> Artifacts:
    """IR function -> optimized native object code."""
    run(lambda f: f, fn, name="frontend")
    optimized = optimize_ir(fn)
    llvm_ir = run(lambda f: kernel.build_module(f, name, target, fastmath=fastmath), optimized, name="codegen")
    module = run(lambda text: passes.parse(text, target), llvm_ir, name="parse")
    run(lambda m: passes.optimize(m, target), module, name="optimize")
    obj = run(lambda m: passes.emit_object(m, target), module, name="emit")
    STATS["llvm_compilations"] += 1
    return Artifacts(name, fn, optimized, llvm_ir, str(module), obj, target, kernel.symbols_of(optimized))


def load(artifacts: Artifacts) -> native.LoadedObject:
    return native.LoadedObject(artifacts.object, artifacts.target)
