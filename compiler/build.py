"""``aotx build``: a Python module's signed kernels -> MODULE.so + .h + .json.

``aotx build physics.py -o build/`` imports the module with compilation
deferred (so ``@jit(signature=...)`` runs the frontend and the transforms
only), then takes every Kernel of the module that carries a signature through
the rest of the pipeline (compiler/pipeline.py): ``optimize_ir`` and
``codegen`` for the chosen target with the exported symbol ``physics_NAME``,
then ``compile_llvm`` (O2 + vectorization + object emission), in parallel worker
processes with ``--jobs``. compiler/backend/aot.py links the objects and writes
the header and the manifest.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import difflib
import importlib.util
import multiprocessing
import os
import re
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from compiler import cache, pipeline, version
from compiler.api import Kernel
from compiler.backend import target as targets
from compiler.backend.aot import (EMIT_KINDS, BuildError, BuildResult, BuiltKernel, Library, c_identifier,
                                  find_cc, required_features, write_library)
from compiler.function.trampoline import check_buildable
from compiler.backend.kernel import error_sites, in_place, library_routines, symbols_of, uses_random
from compiler.backend.workspace import has_workspace
from compiler.errors import CompileError, SourceLoc, source_excerpt
from compiler.ir.printer import format_function
from runtime.abi import parse_spec
from runtime.cache import sha256

__all__ = ["BuildError", "BuildResult", "build"]


@dataclass
class _Job:
    kernel: Kernel
    llvm_ir: str
    built: BuiltKernel
    seconds: float = 0.0            # the IR passes and codegen, in this process


def build(source: str | Path, out_dir: str | Path, *, cpu: str = "host", emit: Sequence[str] = (),
          jobs: int = 1, progress: Callable[[str], None] | None = None) -> BuildResult:
    """Build `source` (a .py file) into out_dir/MODULE.{so,h,json} (+ emitted artifacts).
    Every option is checked before anything is compiled."""
    say = progress or (lambda line: print(line, file=sys.stderr))
    source = Path(source)
    if not source.is_file():
        raise BuildError(f"no such file: {source}")
    bad = [e for e in emit if e not in EMIT_KINDS]
    if bad:
        raise BuildError(f"--emit: unknown artifact {bad[0]!r} (choose from {', '.join(EMIT_KINDS)})")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise BuildError(f"--jobs must be a positive number of worker processes, got {jobs!r}")
    cc = find_cc()
    if cpu not in ("host", "generic"):
        check_cpu(cpu)
    check_output_dir(Path(out_dir))
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
    _run_llvm(job_list, target, want_asm="asm" in emit, jobs=jobs, say=say)
    library = Library(mod_name, source.name, target, features, version.__version__)
    try:
        return write_library(out_dir, library, [j.built for j in job_list], cc, emit)
    except OSError as e:
        raise BuildError(f"cannot write the library into {out_dir}: {e.strerror or e}"
                         + (f" ({e.filename})" if e.filename else "")) from None


def check_output_dir(out: Path) -> None:
    """A -o that cannot become a directory is reported before anything compiles."""
    blocker = next((p for p in (out, *out.parents) if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise BuildError(f"-o {out}: cannot create the output directory: {blocker} is a file; "
                         f"-o names a directory (it is created if missing)")
    existing = next((p for p in (out, *out.parents) if p.exists()), None)
    if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
        raise BuildError(f"-o {out}: cannot create the output directory: {existing} is not writable")


# LLVM lists the CPUs it knows when asked for cpu="help"; then the CPU must also generate
# code for this triple (a 32-bit CPU such as i686 makes LLVM abort the process on x86_64).
_CPU_PROBE = """
import sys
import llvmlite.binding as llvm
llvm.initialize_native_target()
llvm.initialize_native_asmprinter()
target = llvm.Target.from_triple(llvm.get_process_triple())
target.create_target_machine(cpu="help")
sys.stderr.flush()
print("@@probe", file=sys.stderr, flush=True)
if sys.argv[1] != "help":
    tm = target.create_target_machine(cpu=sys.argv[1], opt=0, reloc="pic")
    tm.emit_object(llvm.parse_assembly("define double @f(double %x) {\\n  %y = fadd double %x, 1.0\\n"
                                       "  ret double %y\\n}\\n"))
    print("@@ok", file=sys.stderr, flush=True)
"""

PORTABLE_CPUS = ("x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4")


def known_cpus(probe: str = "help") -> tuple[list[str], str]:
    """(LLVM's CPU names for this machine's triple, the probe's log after the list). In a
    subprocess: LLVM prints the list on stderr, and aborts on a CPU that cannot generate code."""
    proc = subprocess.run([sys.executable, "-c", _CPU_PROBE, probe],
                          capture_output=True, text=True, timeout=120)
    text, _, after = proc.stderr.partition("@@probe")
    names = []
    listing = text.split("Available CPUs for this target:", 1)[-1].split("Available features", 1)[0]
    for line in listing.splitlines():
        m = re.match(r"\s+(\S+)\s+- ", line)
        if m:
            names.append(m.group(1))
    return names, after


def check_cpu(cpu: str) -> None:
    """A --cpu name LLVM knows and can generate code for on this machine, else BuildError
    (LLVM itself would only print a warning, then abort while generating code)."""
    names, log = known_cpus(cpu)
    if not names:
        return                                   # LLVM printed no list: let it decide
    if cpu not in names:
        close = difflib.get_close_matches(cpu, names, n=4, cutoff=0.6)
        suggest = [*close, *(c for c in PORTABLE_CPUS if c in names and c not in close)]
        raise BuildError(f"--cpu {cpu!r} is not a CPU LLVM knows for {targets.host().triple}; "
                         f"hint: use host, generic, or one of {', '.join(suggest)} (all {len(names)} "
                         f"names: aotx build --cpu help)")
    if "@@ok" not in log:
        error = next((line.strip() for line in log.splitlines() if "ERROR" in line), "LLVM aborted")
        raise BuildError(f"--cpu {cpu!r} cannot generate code for {targets.host().triple} ({error}); "
                         f"hint: choose a 64-bit CPU such as {', '.join(PORTABLE_CPUS)}")


def import_module(path: Path, *, defer: bool = True) -> Any:
    """Execute the module file, with kernel compilation deferred (signatures are staged
    only). A module that does not import is a BuildError at its line, with a caret."""
    name = path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise BuildError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        with cache.deferred() if defer else contextlib.nullcontext():
            spec.loader.exec_module(module)
    except CompileError:
        sys.modules.pop(name, None)
        raise                                    # already at the user's line
    except SyntaxError as e:
        sys.modules.pop(name, None)
        loc = SourceLoc(e.filename or str(path), e.lineno or 0, max((e.offset or 1) - 1, 0),
                        (e.end_offset - 1) if e.end_offset and e.end_lineno == e.lineno else None)
        raise BuildError(_located(loc, f"{type(e).__name__}: {e.msg}", e.text,
                                  f"{path.name} must be valid Python (run `python {path}`)")) from None
    except Exception as e:
        sys.modules.pop(name, None)
        raise BuildError(_import_failure(e, path)) from None
    return module


def _import_failure(e: BaseException, path: Path) -> str:
    """`e`, raised while importing `path`, at the deepest line of `path` it passed through."""
    frames = [f for f in traceback.extract_tb(e.__traceback__)
              if os.path.abspath(f.filename) == os.path.abspath(path)]
    what = f"{type(e).__name__}: {e}"
    hint = f"importing {path.name} raised; aotx runs the module as `import` does (try `python {path}`)"
    if not frames:
        return f"{path}: {what}\nhint: {hint}"
    f = frames[-1]
    col = getattr(f, "colno", None)
    end = getattr(f, "end_colno", None) if getattr(f, "end_lineno", None) == f.lineno else None
    return _located(SourceLoc(f.filename, f.lineno or 0, col or 0, end), what, None, hint)


def _located(loc: SourceLoc, what: str, text: str | None, hint: str) -> str:
    excerpt = source_excerpt(loc)
    if not excerpt and text:
        excerpt = f"    {text.strip()}"
    return "\n".join([f"{loc}: {what}", *([excerpt] if excerpt else []), f"hint: {hint}"])


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
    start = time.perf_counter()
    program = kernel._fixed.program
    assert isinstance(program, pipeline.Program), f"{name} was not staged"
    fn = program.function
    check_buildable(fn, name)
    optimized = pipeline.optimize_ir(fn)
    split, how = pipeline.parallel_plan(optimized, name) if kernel.parallel else (None, "")
    llvm_ir = pipeline.codegen(optimized, symbol, target, fastmath=kernel.fastmath, split=split,
                               updates=program.updates)
    names = fn.arg_names or [f"arg{i}" for i in range(len(fn.in_types))]
    ins = [parse_spec(n, str(t)).to_json() for n, t in zip(names, fn.in_types)]
    n_results = len(optimized.out_types) - len(program.updates)
    out_names = [f"result{i}" for i in range(n_results)] + [f"{names[i]}_updated" for i in program.updates]
    outs = [parse_spec(n, str(t)).to_json() for n, t in zip(out_names, optimized.out_types)]
    info = {"name": name, "symbol": symbol, "inputs": ins, "outputs": outs,
            "updates": list(program.updates), "contiguous": list(program.contiguous),
            "in_place": in_place(optimized, program.updates),
            "symbols": symbols_of(optimized), "result": _result_tree(name, program),
            "errors": [e.to_json() for e in error_sites(optimized)],
            "random": uses_random(optimized),
            "routines": library_routines(llvm_ir, symbol),
            "workspace": has_workspace(llvm_ir, symbol),
            "signature": ", ".join(a["type"] for a in ins) + " -> " + ", ".join(a["type"] for a in outs),
            "source_sha256": _source_hash(kernel)}
    if how:                  # parallel=True: informative, the entry itself splits its calls
        info["parallel"] = how
    built = BuiltKernel(name, symbol, info, ir_text=format_function(optimized) if want_ir else "")
    return _Job(kernel, llvm_ir, built, time.perf_counter() - start)


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


def _ms(seconds: float) -> str:
    return f"{1e3 * seconds:.0f} ms"


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
        staging = getattr(job.kernel._fixed, "seconds", None) or 0.0
        say(f"[{done}/{total}] {built.name}: {built.info['signature']}  "
            f"({_ms(staging + job.seconds + seconds)}: staging {_ms(staging)}, IR passes and codegen "
            f"{_ms(job.seconds)}, LLVM {_ms(seconds)})")

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
