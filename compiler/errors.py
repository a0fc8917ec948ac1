"""User-facing errors: one hierarchy, one format.

Every user mistake is a ``CompileError`` (a ``TypeError``) carrying the
file, line and column of the user's code and a hint. Its message reads:

    /home/me/model.py:12:9: DataDependentControlFlowError: `if` on a batched value
        if x.sum() > 0:
           ^~~~~~~~~~~
    hint: use np.where(cond, a, b) or compiler.cond
    see docs/errors.md#datadependentcontrolflowerror

Internal invariant failures are ``InternalCompilerError``: every stage of
the pipeline runs through one hook (``compiler.pipeline.run``) that turns an
unexpected exception into one, with the stage's input written to a file.
"""
from __future__ import annotations

import linecache
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SourceLoc:
    """Where in the user's code an op comes from (1-based line, 0-based column)."""

    file: str
    line: int
    col: int = 0
    end_col: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"


UNKNOWN_LOC = SourceLoc("<unknown>", 0)


class CompileError(TypeError):
    """A user's function cannot be compiled; points at the user's code."""

    def __init__(self, message: str, loc: SourceLoc | None = None, hint: str | None = None) -> None:
        self.message = message
        self.loc = loc
        self.hint = hint
        self.filename = loc.file if loc else None
        self.lineno = loc.line if loc else None
        self.col_offset = loc.col if loc else None
        super().__init__(self._format())

    def _format(self) -> str:
        name = type(self).__name__
        head = f"{self.loc}: {name}: {self.message}" if self.loc else f"{name}: {self.message}"
        lines = [head]
        excerpt = source_excerpt(self.loc) if self.loc else ""
        if excerpt:
            lines.append(excerpt)
        if self.hint:
            lines.append(f"hint: {self.hint}")
        lines.append(f"see docs/errors.md#{name.lower()}")
        return "\n".join(lines)


def source_excerpt(loc: SourceLoc) -> str:
    """The source line of `loc` with a caret (and tildes) under the expression."""
    line = linecache.getline(loc.file, loc.line)
    if not line:
        return ""
    text = line.rstrip("\n")
    stripped = text.lstrip()
    indent = len(text) - len(stripped)
    col = max(loc.col - indent, 0)
    end = loc.end_col - indent if loc.end_col is not None and loc.end_col > loc.col else col + 1
    marker = " " * col + "^" + "~" * max(end - col - 1, 0)
    return f"    {stripped}\n    {marker}"


class UnsupportedError(CompileError):
    """A construct or call outside the compilable subset."""


class DynamicShapeError(CompileError):
    """An operation whose output shape depends on the values of its input."""


class OutParameterError(CompileError):
    """An ``out=`` argument: compiled functions return their results."""


class SideEffectError(CompileError):
    """A write that escapes the function (globals, outer objects, arguments)."""


class DataDependentControlFlowError(CompileError):
    """Control flow on a value a transform cannot branch on (batched, or reverse-mode while)."""


class DataDependentOperationError(CompileError):
    """``.item()``/``float()``/``int()``/``bool()`` where a transform cannot allow it."""


class RandomnessError(CompileError):
    """A random operation under vmap(randomness='error')."""


class ShapeMismatchError(CompileError):
    """Operands whose shapes or dtypes do not fit the operation (as NumPy would reject)."""


class TruthValueError(CompileError, ValueError):
    """NumPy's "truth value of an array ... is ambiguous", found at compile time."""


class IndexOutOfBoundsError(CompileError, IndexError):
    """A static index out of range (NumPy's IndexError), found at compile time."""


class AxisError(CompileError, ValueError, IndexError):
    """An axis out of range for the array (NumPy's AxisError), found at compile time."""


class ArgumentValueError(CompileError, ValueError):
    """A static argument whose value NumPy rejects with a ValueError (np.fft's n=0 or an
    unknown norm), found at compile time."""


class IntegerOverflowError(CompileError, OverflowError):
    """A Python int that does not fit the array's dtype (NumPy 2's OverflowError, NEP 50),
    found at compile time."""


class TransformArgumentError(ValueError):
    """A transform's option that does not fit the function (an ``out_dims`` out of range),
    found while the transform runs: torch.func raises ValueError for the same call."""


class PrototypeError(ValueError):
    """``Kernel.ctypes(prototype=...)`` / ``address(prototype=...)``: a C prototype that does not
    fit the kernel (an unknown type, a count of parameters the kernel does not take, a result
    that is not one scalar; docs/interop.md)."""


class KernelNotCompilable(RuntimeError):
    """An unpickled Kernel was called with arguments none of its compiled variants takes,
    and its Python function did not travel with it (docs/aot.md, "Pickling kernels")."""


class InternalCompilerError(RuntimeError):
    """A bug in aotx, not in the user's code: please report it with the function.

    ``.stage`` names the pipeline stage that failed and ``.dump_path`` the file
    holding what that stage was given (IR or LLVM IR) and the compiler's
    traceback (None when the error was raised before any stage ran)."""

    def __init__(self, message: str, stage: str | None = None, dump_path: str | None = None) -> None:
        self.stage = stage
        self.dump_path = dump_path
        super().__init__(message)


def internal_error_message(stage: str, exc: BaseException, dump_path: str | None) -> str:
    """The text of an InternalCompilerError raised for an unexpected exception in `stage`."""
    where = (f"the input of the stage and the compiler traceback were written to {dump_path}"
             if dump_path else "the input of the stage could not be written to a file")
    return (f"internal compiler error in stage '{stage}': {type(exc).__name__}: {exc}\n"
            f"This is a bug in aotx, not in your code; {where}.\n"
            "Please report it with that file and the function being compiled "
            "(AOTX_FRONTEND_DEBUG=1 re-raises the original exception).")


def user_facing(error: CompileError | InternalCompilerError) -> CompileError | InternalCompilerError:
    """`error` without the compiler's frames: a CompileError's message points at the user's
    line, an InternalCompilerError's at the file holding the compiler traceback."""
    error.__cause__ = None
    error.__suppress_context__ = True
    return error.with_traceback(None)
