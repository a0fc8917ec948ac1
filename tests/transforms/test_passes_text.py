"""Pass tests as IR text in, IR text out (the FileCheck style of MLIR and xDSL).

Each file in tests/transforms/passes/ holds cases separated by a line ``// -----``.
A case is IR text (read by compiler/ir/parser.py) plus ``//`` lines:

    // RUN: vmap {in_dims=(0,), out_dims=(0,), size=b} | simplify
    // CHECK: text         a later line of the output contains text
    // CHECK-NEXT: text    the line right after the previous match contains text
    // CHECK-NOT: text     no line between the previous match and the next one (or the
                           end of the output) contains text
    // CHECK-ERROR: text   the passes raise an error whose message contains text

``text`` is literal except for ``{{regex}}``; a run of spaces matches any run of
spaces. RUN names passes from ``PASSES`` below, each with its params written as an
op's params; a case without a RUN line uses the first RUN line of its file. Other
``//`` lines are comments. The output is the printed function after the last pass;
the IR is verified after every pass, and the output must read back (round trip).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest

from compiler.ir.core import Function
from compiler.ir.parser import first_difference, parse, parse_params
from compiler.ir.printer import format_function
from compiler.ir.verify import verify
from compiler.transforms.canonicalize import canonicalize
from compiler.transforms.complex import lower_complex
from compiler.transforms.jvp import jvp_function
from compiler.transforms.online import fuse_max_sumexp
from compiler.transforms.simplify import simplify
from compiler.transforms.vjp import vjp_function
from compiler.transforms.vmap import vmap_function

#: the passes a RUN line can name: IR function (and params) -> IR function
PASSES: dict[str, Callable[..., Function]] = {
    "canonicalize": lambda fn: canonicalize(fn),
    "simplify": lambda fn: simplify(fn),
    "vmap": lambda fn, in_dims, out_dims, size: vmap_function(fn, in_dims, out_dims, size),
    "jvp": lambda fn, active: jvp_function(fn, active),
    "vjp": lambda fn, active: vjp_function(fn, active),
    "complex": lambda fn: lower_complex(fn),
    "max_sumexp": lambda fn: fuse_max_sumexp(fn),
}

CASES_DIR = Path(__file__).parent / "passes"


@dataclass
class Case:
    """One IR text with its passes and checks."""

    file: str
    line: int                 # where the case starts in its file
    ir: str
    run: str
    checks: list[tuple[str, str]] = field(default_factory=list)    # (directive, pattern)


_DIRECTIVE = re.compile(r"//\s*(RUN|CHECK|CHECK-NEXT|CHECK-NOT|CHECK-ERROR):(.*)$")


def load_cases(path: Path) -> list[Case]:
    cases: list[Case] = []
    default_run = ""
    chunk: list[tuple[int, str]] = []
    lines = list(enumerate(path.read_text().splitlines(), 1))
    for number, line in lines + [(len(lines) + 1, "// -----")]:
        if line.strip() != "// -----":
            chunk.append((number, line))
            continue
        case = _case(path.name, chunk, default_run)
        default_run = default_run or case.run
        cases.append(case)
        chunk = []
    return cases


def _case(name: str, chunk: list[tuple[int, str]], default_run: str) -> Case:
    ir_lines, run, checks = [], "", []
    for _, line in chunk:
        m = _DIRECTIVE.match(line.strip())
        if m is None:
            # other comment lines become blank lines, so parse errors keep the file's line numbers
            ir_lines.append("" if line.strip().startswith("//") else line)
        elif m.group(1) == "RUN":
            run = m.group(2).strip()
        else:
            checks.append((m.group(1), m.group(2).strip()))
    run = run or default_run
    if not run:
        raise ValueError(f"{name}:{chunk[0][0]}: a case needs a RUN line (or one earlier in its file)")
    return Case(name, chunk[0][0], "\n" * (chunk[0][0] - 1) + "\n".join(ir_lines), run, checks)


def run_passes(fn: Function, run: str) -> Function:
    for step in run.split("|"):
        name, _, params = step.strip().partition(" ")
        if name not in PASSES:
            raise ValueError(f"RUN: unknown pass {name!r} (known: {', '.join(PASSES)})")
        fn = PASSES[name](fn, **(parse_params(params) if params.strip() else {}))
        verify(fn)
    return fn


# ---- the matcher -----------------------------------------------------------------------------

def _pattern(text: str) -> re.Pattern[str]:
    """Literal text with {{regex}} parts; runs of whitespace match any whitespace."""
    parts = re.split(r"\{\{(.*?)\}\}", text)
    regex = "".join(p if i % 2 else r"\s+".join(re.escape(w) for w in re.split(r"\s+", p))
                    for i, p in enumerate(parts))
    return re.compile(regex)


def check_output(output: str, checks: list[tuple[str, str]]) -> None:
    """Raise AssertionError at the first check the output does not satisfy."""
    lines = output.splitlines()
    pos, last = 0, -1              # next line to search; line of the previous match
    forbidden: list[str] = []

    def fail(message: str) -> None:
        numbered = "\n".join(f"{i + 1:3d}{'>' if i == pos else ' '} {ln}" for i, ln in enumerate(lines))
        raise AssertionError(f"{message}\noutput (> marks where the search started):\n{numbered}")

    def check_forbidden(end: int) -> None:
        for pattern in forbidden:
            for i in range(pos, end):
                if _pattern(pattern).search(lines[i]):
                    fail(f"CHECK-NOT: {pattern!r} found on output line {i + 1}")
        forbidden.clear()

    for directive, pattern in checks:
        if directive == "CHECK-NOT":
            forbidden.append(pattern)
            continue
        if directive == "CHECK-NEXT":
            if last < 0:
                fail(f"CHECK-NEXT: {pattern!r} has no previous match to follow")
            found = last + 1 if last + 1 < len(lines) and _pattern(pattern).search(lines[last + 1]) else None
            if found is None:
                fail(f"CHECK-NEXT: {pattern!r} is not on the line after the previous match ({last + 1})")
        else:
            found = next((i for i in range(pos, len(lines)) if _pattern(pattern).search(lines[i])), None)
            if found is None:
                fail(f"CHECK: {pattern!r} not found")
        assert found is not None
        check_forbidden(found)
        last, pos = found, found + 1
    check_forbidden(len(lines))


# ---- the tests -------------------------------------------------------------------------------

def _all_cases() -> list[Any]:
    out = []
    for path in sorted(CASES_DIR.glob("*.ir")):
        for case in load_cases(path):
            name = re.search(r"func @(\w+)", case.ir)
            out.append(pytest.param(case, id=f"{path.stem}:{name.group(1) if name else case.line}"))
    return out


CASES = _all_cases()


@pytest.mark.parametrize("case", CASES)
def test_pass(case: Case) -> None:
    fn = parse(case.ir, filename=case.file)
    error_checks = [p for d, p in case.checks if d == "CHECK-ERROR"]
    if error_checks:
        with pytest.raises(Exception) as info:
            run_passes(fn, case.run)
        for pattern in error_checks:
            assert _pattern(pattern).search(str(info.value)), f"{pattern!r} not in the error: {info.value}"
        return
    assert case.checks, f"{case.file}:{case.line}: a case without CHECK lines tests nothing"
    out = run_passes(fn, case.run)
    text = format_function(out)
    check_output(text, case.checks)
    assert first_difference(out, parse(text)) is None


def test_every_pass_has_cases() -> None:
    """At least three cases exercise each pass."""
    counts = {name: 0 for name in PASSES}
    for param in CASES:
        for step in param.values[0].run.split("|"):
            counts[step.strip().split(" ")[0]] += 1
    assert all(n >= 3 for n in counts.values()), counts


# ---- the matcher can fail ---------------------------------------------------------------------

OUTPUT = """\
func @f(%x: f64[3]) -> (f64[3]) {
  %0 = exp(%x) : f64[3]
  %1 = add(%0, %0) : f64[3]
  return %1
}"""


@pytest.mark.parametrize("checks", [
    [("CHECK", "exp(%x)"), ("CHECK-NEXT", "add(%0, %0)"), ("CHECK-NOT", "mul"), ("CHECK", "return %1")],
    [("CHECK", "%{{[0-9]+}} = add"), ("CHECK-NEXT", "return")],
    [("CHECK-NOT", "sin"), ("CHECK", "exp(%x)   :   f64[3]")],
])
def test_matcher_accepts(checks: list[tuple[str, str]]) -> None:
    check_output(OUTPUT, checks)


@pytest.mark.parametrize("checks, message", [
    ([("CHECK", "mul(")], "not found"),
    ([("CHECK", "exp"), ("CHECK-NEXT", "return")], "not on the line after"),
    ([("CHECK", "func"), ("CHECK-NOT", "add"), ("CHECK", "return")],
     "CHECK-NOT: 'add' found on output line 3"),
    ([("CHECK", "add"), ("CHECK", "exp")], "'exp' not found"),           # order matters
    ([("CHECK-NEXT", "func")], "no previous match"),
    ([("CHECK", "return"), ("CHECK-NOT", "}")], "CHECK-NOT: '}' found"),  # to the end of the output
    ([("CHECK", "{{%[a-z]}} = exp")], "not found"),
])
def test_matcher_rejects(checks: list[tuple[str, str]], message: str) -> None:
    with pytest.raises(AssertionError, match=re.escape(message)):
        check_output(OUTPUT, checks)
