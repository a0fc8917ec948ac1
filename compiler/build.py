"""``aotx build``: a Python module's signed kernels -> MODULE.so + .h + .json.

``aotx build physics.py -o build/`` imports the module with compilation
deferred (so ``@jit(signature=...)`` runs the frontend and the transforms
only), then takes every Kernel of the module that carries a signature through
the rest of the pipeline (compiler/pipeline.py): ``optimize_ir`` and
``codegen`` for the chosen target with the exported symbol ``physics_NAME``,
then ``compile_llvm`` (O3 + vectorization + object emission), in parallel worker
processes with ``--jobs``. compiler/backend/aot.py links the objects and writes
the header and the manifest.
"""
from __future__ import annotations

import concurrent.futures
import importlib.util
import multiprocessing
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from compiler import cache, pipeline, version
from compiler.api import Kernel
from compiler.backend import target as targets
from compiler.backend.aot import (EMIT_KINDS, BuildError, BuildResult, BuiltKernel, Library, c_identifier,
                                  find_cc, required_features, write_library)
from compiler.function.trampoline import check_buildable
from compiler.backend.kernel import error_sites, symbols_of
from compiler.ir.printer import format_function
from runtime.abi import parse_spec
from runtime.cache import sha256

__all__ = ["BuildError", "BuildResult", "build"]


@dataclass
class _Job:
    kernel: Kernel
    llvm_ir: str
    built: BuiltKernel


def build(source: str | Path, out_dir: str | Path, *, cpu: str = "host", emit: Sequence[str] = (),
          jobs: int = 1, progress: Callable[[str], None] | None = None) -> BuildResult:
    """Build `source` (a .py file) into out_dir/MODULE.{so,h,json} (+ emitted artifacts)."""
    say = progress or (lambda line: print(line, file=sys.stderr))
    source = Path(source)
    if not source.is_file():
        raise BuildError(f"no such file: {source}")
    bad = [e for e in emit if e not in EMIT_KINDS]
    if bad:
        raise BuildError(f"--emit: unknown artifact {bad[0]!r} (choose from {', '.join(EMIT_KINDS)})")
    cc = find_cc()
    target = targets.named(cpu)
    features = required_features(target)
    if features is None:
        say(f"aotx: warning: the CPU features of {cpu!r} are not known to aotx; "
            f"runtime.load will not check them")
    module = import_module(source)
    mod_name = c_identifier(source.stem)
    found = signed_kernels(module)
    if not found:
        raise BuildError(f"{source}: no function carries a signature "
                         f"(decorate functions with @jit(signature=\"...\"))")
    job_list = [_prepare(name, f"{mod_name}_{c_identifier(name)}", k, target, want_ir="ir" in emit)
                for name, k in found]
    _run_llvm(job_list, target, want_asm="asm" in emit, jobs=max(1, jobs), say=say)
    library = Library(mod_name, source.name, target, features, version.__version__)
    return write_library(out_dir, library, [j.built for j in job_list], cc, emit)


def import_module(path: Path) -> Any:
    """Execute the module file with kernel compilation deferred (signatures are staged only)."""
    name = path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise BuildError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    with cache.deferred():
        spec.loader.exec_module(module)
    return module


def signed_kernels(module: Any) -> list[tuple[str, Kernel]]:
    """(attribute name, Kernel) for each Kernel the module defines with a signature."""
    seen: set[int] = set()
    out = []
    for attr, value in vars(module).items():
        if isinstance(value, Kernel) and value.signature is not None and value._fixed is not None \
                and value.__module__ == module.__name__ and id(value) not in seen:
            seen.add(id(value))
            out.append((attr, value))
    return out


def _prepare(name: str, symbol: str, kernel: Kernel, target: targets.Target, want_ir: bool) -> _Job:
    """The staged kernel through optimize_ir and codegen (in this process), and its manifest entry."""
    assert kernel._fixed is not None, f"{name} has no signature"
    program = kernel._fixed.program
    assert isinstance(program, pipeline.Program), f"{name} was not staged"
    fn = program.function
    check_buildable(fn, name)
    optimized = pipeline.optimize_ir(fn)
    llvm_ir = pipeline.codegen(optimized, symbol, target, fastmath=kernel.fastmath)
    names = fn.arg_names or [f"arg{i}" for i in range(len(fn.in_types))]
    ins = [parse_spec(n, str(t)).to_json() for n, t in zip(names, fn.in_types)]
    outs = [parse_spec(f"result{i}", str(t)).to_json() for i, t in enumerate(optimized.out_types)]
    info = {"name": name, "symbol": symbol, "inputs": ins, "outputs": outs,
            "symbols": symbols_of(optimized), "result": _result_tree(name, program),
            "errors": [e.to_json() for e in error_sites(optimized)],
            "signature": ", ".join(a["type"] for a in ins) + " -> " + ", ".join(a["type"] for a in outs),
            "source_sha256": _source_hash(kernel)}
    built = BuiltKernel(name, symbol, info, ir_text=format_function(optimized) if want_ir else "")
    return _Job(kernel, llvm_ir, built)


def _result_tree(name: str, program: pipeline.Program) -> Any:
    try:
        return cache.tree_to_json(program.out_tree, allow_namedtuple=True)
    except cache.Uncacheable as e:
        raise BuildError(f"{name}: the result cannot be described for the manifest ({e})") from None


def _source_hash(kernel: Kernel) -> str | None:
    try:
        return cache.digest([cache.Describer()(kernel), kernel.signature])
    except cache.Uncacheable:
        return None


def llvm_job(llvm_ir: str, triple: str, cpu: str, features: str,
             want_asm: bool) -> tuple[pipeline.NativeCode, float]:
    """The pipeline's LLVM stages for one module; runs in a worker process."""
    start = time.perf_counter()
    code = pipeline.compile_llvm(llvm_ir, targets.Target(triple, cpu, features), want_asm=want_asm)
    return code, time.perf_counter() - start


def _run_llvm(job_list: list[_Job], target: targets.Target, *, want_asm: bool, jobs: int,
              say: Callable[[str], None]) -> None:
    total = len(job_list)
    done = 0

    def finish(job: _Job, result: tuple[pipeline.NativeCode, float]) -> None:
        nonlocal done
        code, seconds = result
        built = job.built
        built.object, built.llvm_optimized, built.asm = code.object, code.llvm_optimized, code.asm
        built.info["object_sha256"] = sha256(code.object)
        pipeline.STATS["llvm_compilations"] += 1
        done += 1
        say(f"[{done}/{total}] {built.name}: {built.info['signature']}  ({1e3 * seconds:.0f} ms)")

    args = [(j.llvm_ir, target.triple, target.cpu, target.features, want_asm) for j in job_list]
    if jobs == 1 or total == 1:
        for job, a in zip(job_list, args):
            finish(job, llvm_job(*a))
        return
    method = "fork" if sys.platform.startswith("linux") else "spawn"
    ctx = multiprocessing.get_context(method)
    with concurrent.futures.ProcessPoolExecutor(max_workers=min(jobs, total), mp_context=ctx) as pool:
        futures = {pool.submit(llvm_job, *a): job for job, a in zip(job_list, args)}
        for fut in concurrent.futures.as_completed(futures):
            finish(futures[fut], fut.result())
