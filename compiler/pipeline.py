"""THE pipeline, as a list of named stages.

    frontend                               Python source -> IR              stage()
    vmap | vjp | grad | jacrev | jacfwd |  the transforms a Kernel asks     transform()
      grad_and_value | vjp_fn | jvp | jvp_fn   for, in order
    canonicalize -> complex -> simplify    IR -> optimized IR (complex values  optimize_ir()
                                           split into real pairs)
    codegen                                fusion + loop nests -> LLVM IR   codegen()
    parse -> optimize -> emit              O2 + vectorization -> object     compile_llvm()

``compile_ir`` runs everything after the transforms for one function. ``aotx
build`` (compiler/build.py) calls the same functions, the LLVM ones in worker
processes. Every stage is called as ``run(stage, value, name=...)``, the one
place where the hooks live: AOTX_DEBUG timing, AOTX_PRINT_AFTER printing and
AOTX_VERIFY checking. IR stages return new functions and leave their input as
it is, so a Program keeps the frontend's IR next to the transformed one.
"""
from __future__ import annotations

import inspect
import os
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from compiler import config, frontend, progress
from compiler.backend import jit as native, kernel, parallel, passes
from compiler.backend.target import Target
from compiler.errors import (CompileError, InternalCompilerError, TransformArgumentError,
                             internal_error_message)
from compiler.frontend.pytrees import PyTreeDef
from compiler.ir.core import Function
from compiler.ir.printer import format_function
from compiler.ir.verify import verify
from compiler.transforms.canonicalize import canonicalize
from compiler.transforms.complex import lower_complex
from compiler.transforms.decompose import decompose
from compiler.transforms.simplify import simplify
from compiler.transforms.online import fuse_max_sumexp
from compiler.transforms.windows import window_loops
from runtime.abi import ErrorSite

STATS = {"llvm_compilations": 0}   # diagnostics: how often LLVM actually ran in this process
_STATS_LOCK = threading.Lock()     # kernels may compile in several threads at once


@dataclass(frozen=True)
class Program:
    """A staged kernel: the frontend's IR, the IR after the transforms, and the pytree
    structure of the arguments and of the result."""

    frontend_ir: Function
    function: Function
    in_tree: PyTreeDef
    out_tree: PyTreeDef
    # inputs written in place (plain jit): input updates[k]'s new value is the result after
    # the out_tree's leaves, number n_results + k; the runtime writes it into the caller's array
    updates: tuple[int, ...] = ()
    contiguous: tuple[int, ...] = ()     # of those, the ones that must be C-contiguous


@dataclass(frozen=True)
class Pass:
    """A named IR-to-IR stage: ``apply(fn)`` returns a new function."""

    name: str
    apply: Callable[[Function], Function]


def run(stage: Callable[..., Any], value: Any, *args: Any, name: str) -> Any:
    """Run one stage with the debug hooks. An exception that is not a user error (a
    CompileError, or a transform option that does not fit) is a bug in the stage: it
    becomes an InternalCompilerError naming the file where the stage's input is dumped."""
    start = time.perf_counter()
    try:
        result = stage(value, *args)
    except InternalCompilerError as e:
        if e.dump_path is not None or config.frontend_debug():
            raise
        path = dump_stage_input(name, value, e.__cause__ or e)     # e.g. the frontend's own
        where = f"the input of the stage and the compiler traceback were written to {path}" if path \
            else "the input of the stage could not be written to a file"
        raise InternalCompilerError(f"{e}\n{where}", name, path) from e.__cause__
    except (CompileError, TransformArgumentError):
        raise
    except MemoryError:
        raise
    except Exception as e:
        if config.frontend_debug():
            raise
        path = dump_stage_input(name, value, e)
        raise InternalCompilerError(internal_error_message(name, e, path), name, path) from e
    progress.stage_done(name, time.perf_counter() - start)    # logger "aotx" (compiler/progress.py)
    output = result.function if isinstance(result, Program) else result
    if name in config.print_after() or config.debug_level() >= 3:
        print(f"[aotx] after {name}:\n{_as_text(output)}", file=sys.stderr)
    if isinstance(output, Function) and config.verify_enabled():
        verify(output)                      # a VerifyError names the broken invariant itself
    return result


def dump_stage_input(name: str, value: Any, error: BaseException) -> str | None:
    """Write what stage `name` was given (IR with source locations, or LLVM IR) and the
    compiler traceback of `error` to a new file in the temp dir; its path, or None."""
    try:
        if isinstance(value, Function):
            text = format_function(value, with_locs=True)
        elif callable(value):                 # the frontend's input: the user's function
            text = inspect.getsource(value)
        else:
            text = _as_text(value)
    except Exception as e:  # noqa: BLE001 - a dump must not hide the error it reports
        text = f"<the input could not be printed: {type(e).__name__}: {e}>"
    trace = "".join(traceback.format_exception(error))
    try:
        fd, path = tempfile.mkstemp(prefix=f"aotx-ice-{name}-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(f"# aotx internal compiler error in stage '{name}'\n# input of the stage:\n"
                    f"{text}\n\n# compiler traceback:\n{trace}")
    except OSError:
        return None
    return path


def _as_text(output: Any) -> str:
    if isinstance(output, bytes):
        return f"<{len(output)} bytes of object code>"
    return str(output)


# ---- frontend and transforms: what a Kernel traces ----------------------------------------------

def stage(fn: Callable[..., Any], args: tuple, kwargs: dict, *, name: str,
          updates: bool = False) -> Program:
    """The frontend stage: `fn` staged for abstract arguments (compiler/frontend); with
    `updates`, writes into the arguments are compiled (plain jit), else refused."""
    return run(_frontend, fn, args, kwargs, name, updates, name="frontend")


def _frontend(fn: Callable[..., Any], args: tuple, kwargs: dict, name: str,
              updates: bool) -> Program:
    staged = frontend.stage(fn, args, kwargs, name=name, updates=updates)
    return Program(staged.function, staged.function, staged.in_tree, staged.out_tree,
                   staged.updates, staged.contiguous)


def transform(program: Program, stages: Sequence[Pass], out_tree: PyTreeDef | None = None) -> Program:
    """Run transform passes on `program`'s IR, in order; `out_tree` is the result structure
    of the transformed function when it differs from the program's."""
    fn = program.function
    for p in stages:
        fn = run(p.apply, fn, name=p.name)
    return replace(program, function=fn, out_tree=program.out_tree if out_tree is None else out_tree)


# ---- from transformed IR to object code ----------------------------------------------------------

@dataclass
class Artifacts:
    """Every stage's output for one compiled function."""

    name: str
    ir: Function                 # as handed to compile_ir (after the transforms)
    ir_optimized: Function
    llvm: str
    _llvm_optimized: str | None   # None until asked for: printing a module costs ~1 ms a compile
    object: bytes
    target: Target
    symbols: list[str]
    errors: list[ErrorSite] = field(default_factory=list)   # status ERROR_BASE + i raises errors[i]
    random: bool = False         # takes the call's key after the symbols (docs/abi.md)
    library: list[str] = field(default_factory=list)   # BLAS/LAPACK routines it may call
    parallel: str = ""           # parallel=True: how calls are split over threads, or why not
    # updated arguments written where they live: their pointer is also their output's
    in_place: list[int] = field(default_factory=list)
    _asm: str | None = field(default=None, repr=False)

    @property
    def llvm_optimized(self) -> str:
        if self._llvm_optimized is None:
            module = passes.parse(self.llvm, self.target)
            passes.optimize(module, self.target)
            self._llvm_optimized = str(module)
        return self._llvm_optimized

    @property
    def asm(self) -> str:
        if self._asm is None:
            module = passes.parse(self.llvm_optimized, self.target)
            self._asm = passes.emit_assembly(module, self.target)
        return self._asm


@dataclass
class NativeCode:
    """What LLVM makes of one module: the optimized IR text, the object, the assembly."""

    llvm_optimized: str
    object: bytes
    asm: str = ""


def optimize_ir(fn: Function) -> Function:
    """Target-independent simplification of the IR."""
    fn = run(canonicalize, fn, name="canonicalize")
    fn = run(decompose, fn, name="decompose")
    fn = run(lower_complex, fn, name="complex")
    fn = run(simplify, fn, name="simplify")
    fn = run(fuse_max_sumexp, fn, name="max_sumexp")
    return run(window_loops, fn, name="windows")


def codegen(fn: Function, name: str, target: Target, *, fastmath: bool = False,
            split: parallel.Plan | None = None, updates: Sequence[int] = ()) -> str:
    """Optimized IR -> LLVM IR text exporting the C-ABI entry point `name` (with `split`, an
    entry running slices of the rows on threads: backend/parallel.py; `updates`: the
    arguments whose new values are the last results, backend/inplace.py)."""
    return run(lambda f: kernel.build_module(f, name, target, fastmath=fastmath, split=split,
                                             updates=updates), fn, name="codegen")


def parallel_plan(optimized: Function, name: str) -> tuple[parallel.Plan | None, str]:
    """``parallel=True``: the split of the calls of the optimized function over its rows, or
    None and why it runs serially (logged at AOTX_DEBUG=1)."""
    symbols = kernel.symbols_of(optimized)
    plan = parallel.analyze(optimized, symbols)
    if isinstance(plan, parallel.Plan):
        why = parallel.refuse_layout(optimized, symbols)
        if why is None:
            text = (f"parallel=True: calls split over the rows '{plan.symbol}' from "
                    f"{2 * plan.min_rows} rows (at least {plan.min_rows} a thread)")
            progress.note(f"{name}: {text}")
            return plan, text
        plan = why
    text = f"parallel=True: runs serially: {plan}"
    progress.note(f"{name}: {text}")
    return None, text


def compile_llvm(llvm_ir: str, target: Target, *, want_asm: bool = False, want_text: bool = True) -> NativeCode:
    """LLVM IR text -> O2 + vectorization -> object code (and assembly if asked)."""
    module = run(lambda text: passes.parse(text, target), llvm_ir, name="parse")
    run(lambda m: passes.optimize(m, target), module, name="optimize")
    obj = run(lambda m: passes.emit_object(m, target), module, name="emit")
    asm = passes.emit_assembly(module, target) if want_asm else ""
    return NativeCode(str(module) if want_text else "", obj, asm)


def compile_ir(fn: Function, name: str, target: Target, *, fastmath: bool = False,
               parallel: bool = False, updates: Sequence[int] = ()) -> Artifacts:
    """IR after the transforms -> optimized native object code (`parallel`: split calls
    over the rows when the IR allows: backend/parallel.py; `updates`: the arguments whose new
    values are the last results)."""
    optimized = optimize_ir(fn)
    split, how = parallel_plan(optimized, name) if parallel else (None, "")
    llvm_ir = codegen(optimized, name, target, fastmath=fastmath, split=split, updates=updates)
    code = compile_llvm(llvm_ir, target, want_text=False)
    with _STATS_LOCK:
        STATS["llvm_compilations"] += 1
    return Artifacts(name, fn, optimized, llvm_ir, None, code.object, target,
                     kernel.symbols_of(optimized), kernel.error_sites(optimized),
                     kernel.uses_random(optimized), kernel.library_routines(llvm_ir, name),
                     parallel=how, in_place=kernel.in_place(optimized, updates))


def load(artifacts: Artifacts) -> native.LoadedObject:
    return native.LoadedObject(artifacts.object, artifacts.target, artifacts.name, artifacts.library)
