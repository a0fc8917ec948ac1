"""The user's source: read a function's code, parse it, map AST nodes to the
real file and line.

``inspect.getsource`` gives the (indented) lines of a function; we dedent and
parse them, and remember the first line number and the indentation removed,
so that :meth:`FunctionSource.loc` turns a node into a :class:`SourceLoc`
with the absolute line and column in the user's file. That is what error
messages and every op's location use.
"""
from __future__ import annotations

import ast
import contextvars
import inspect
import linecache
import textwrap
import types
import weakref
from dataclasses import dataclass
from typing import Any

from compiler.errors import UnsupportedError
from compiler.ir.core import SourceLoc


@dataclass
class FunctionSource:
    """A parsed function: its AST node plus where its text sits in its file."""

    node: ast.FunctionDef | ast.Lambda
    file: str
    first_line: int      # line of the file where the parsed text starts (1-based)
    indent: int          # columns removed by dedent

    def loc(self, node: ast.AST) -> SourceLoc:
        """The location of `node` in the user's file."""
        line = getattr(node, "lineno", None)
        if line is None:
            return SourceLoc(self.file, self.first_line, self.indent)
        col = node.col_offset + self.indent  # type: ignore[attr-defined]
        end_line = getattr(node, "end_lineno", None)
        end_col = getattr(node, "end_col_offset", None)
        end = end_col + self.indent if end_line == line and end_col is not None else None
        return SourceLoc(self.file, line + self.first_line - 1, col, end)

    @property
    def def_loc(self) -> SourceLoc:
        return self.loc(self.node)


# Weak: an entry lives as long as its code object, so functions defined again and again
# (a notebook cell run many times, a module reloaded) do not keep their parsed source.
_CACHE: weakref.WeakKeyDictionary[types.CodeType, FunctionSource] = weakref.WeakKeyDictionary()

# The on-disk kernel cache (compiler/cache.py) records every function whose source
# the frontend reads while staging, to check that its key covered all of them.
SOURCE_READS: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar(
    "aotx_source_reads", default=None)


def function_source(fn: types.FunctionType) -> FunctionSource:
    """Parse the source of a Python function (or lambda), cached per code object."""
    reads = SOURCE_READS.get()
    if reads is not None:
        reads.append(fn)
    code = fn.__code__
    cached = _CACHE.get(code)
    if cached is not None:
        return cached
    src = _read(fn)
    _CACHE[code] = src
    return src


def _read(fn: types.FunctionType) -> FunctionSource:
    code = fn.__code__
    file = inspect.getsourcefile(fn) or code.co_filename
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise UnsupportedError(
            f"cannot read the source code of {fn.__qualname__!r} (defined in {code.co_filename})",
            None, "define the function in a .py file so that its source is available") from e
    first = max(first, 1)
    linecache.checkcache(file)
    if code.co_name == "<lambda>":
        return _lambda_source(lines, first, code, fn, file)
    dedented = textwrap.dedent("".join(lines))
    indent = _removed_indent(lines, dedented)
    return FunctionSource(_find_def(dedented, code, fn), file, first, indent)


def _removed_indent(lines: list[str], dedented: str) -> int:
    for original, new in zip(lines, dedented.splitlines()):
        if original.strip():
            return len(original) - len(original.lstrip()) - (len(new) - len(new.lstrip()))
    return 0


def _parse(text: str, fn: types.FunctionType) -> ast.Module:
    try:
        return ast.parse(text)
    except SyntaxError:
        pass
    # a lambda inside a larger expression spanning lines: try growing prefixes
    lines = text.splitlines()
    for end in range(len(lines), 0, -1):
        try:
            return ast.parse("\n".join(lines[:end]))
        except SyntaxError:
            continue
    raise UnsupportedError(f"cannot parse the source code of {fn.__qualname__!r}", None,
                           "define the function with `def` in a .py file")


def _find_def(text: str, code: types.CodeType, fn: types.FunctionType) -> ast.FunctionDef:
    module = _parse(text, fn)
    for node in ast.walk(module):
        if isinstance(node, ast.FunctionDef) and node.name == code.co_name:
            return node
        if isinstance(node, ast.AsyncFunctionDef) and node.name == code.co_name:
            raise UnsupportedError("async functions cannot be compiled", None, None)
    raise UnsupportedError(f"cannot find the definition of {fn.__qualname__!r} in its source",
                           None, "define the function with `def` in a .py file")


def _lambda_source(lines: list[str], first: int, code: types.CodeType, fn: types.FunctionType,
                   file: str) -> FunctionSource:
    """Find the lambda among the source lines: parse from each `lambda` keyword the longest
    expression that is a lambda, and pick the one whose span holds the code's positions."""
    target = min(((ln, col) for ln, _, col, end in code.co_positions()
                  if ln is not None and col is not None and end != col), default=(first, 0))
    # where the body ends: the value the lambda returns is the last thing its code computes
    body_end = max(((ln, col) for _, ln, _, col in code.co_positions()
                    if ln is not None and col is not None), default=None)
    names = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    best: tuple[tuple[int, int], ast.Lambda] | None = None
    for i, line in enumerate(lines):
        start = line.find("lambda")
        while start >= 0:
            pos = (first + i, start)
            node = _parse_lambda_at(lines, i, start, (first + i, start), body_end)
            if node is not None and pos <= target and _arg_names(node) == names \
                    and _contains(node, pos, target) and (best is None or pos > best[0]):
                best = (pos, node)
            start = line.find("lambda", start + 1)
    if best is None:
        raise UnsupportedError(f"cannot find the source of lambda {fn.__qualname__!r}", None,
                               "define the function with `def` in a .py file")
    (line_no, col), node = best
    return FunctionSource(node, file, line_no, col)


def _parse_lambda_at(lines: list[str], i: int, col: int, at: tuple[int, int],
                     body_end: tuple[int, int] | None) -> ast.Lambda | None:
    """The lambda expression starting at column `col` of lines[i] (file position `at`): the
    longest text from there that parses as a lambda, inside parentheses (a lambda continued
    on the next line inside the brackets around it, ``(lambda x: np.sin(x)\n + 1.0)``), whose
    body ends where the code's last position does (`body_end`, when the code has positions):
    the first line alone, ``lambda x: np.sin(x)``, is a lambda too, and it was taken."""
    text = lines[i][col:] + "".join(lines[i + 1:])
    for end in range(len(text), 0, -1):
        if end != len(text) and text[end] not in ",)]};\n":
            continue
        try:
            tree = ast.parse("(\n" + text[:end].rstrip() + "\n)", mode="eval")
        except SyntaxError:
            continue
        node = tree.body
        if not isinstance(node, ast.Lambda):
            continue
        ast.increment_lineno(tree, -1)
        body = node.body
        line = at[0] + (body.end_lineno or 1) - 1
        ends = (line, (body.end_col_offset or 0) + (at[1] if body.end_lineno == 1 else 0))
        if body_end is None or ends == body_end:
            return node
    return None


def _arg_names(node: ast.Lambda) -> list[str]:
    a = node.args
    return [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]


def _contains(node: ast.Lambda, start: tuple[int, int], target: tuple[int, int]) -> bool:
    end_line = start[0] + (node.end_lineno or 1) - 1
    end_col = (node.end_col_offset or 0) + (start[1] if node.end_lineno == 1 else 0)
    return start <= target <= (end_line, end_col)
