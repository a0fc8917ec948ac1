"""How Kernels and their lowered stages look in a REPL and a notebook (docs/debugging.md).

``repr(kernel)`` names the function, where it is defined, the transforms applied and
every compiled variant with its types and where its code came from::

    <aotx.Kernel vmap(newton) from examples/newton_solver.py:78, 1 variant:
      newton(start: f64[256, 4]) -> (f64[256, 4], i64[256], f64[256])  compiled in 4.32 s>

``repr(kernel.lower(...))`` is one summary line (op and line counts) and how to see the
text; each stage is a ``str`` (``print(low.asm)``) whose ``_repr_html_`` shows it with
syntax highlighting in a notebook, as does the Lowered's, stage by stage. The HTML is
self-contained (an inline style) and every piece of text in it is escaped.
"""
from __future__ import annotations

import functools
import inspect
import os
import re
from typing import Any

from compiler.frontend.values import Weak
from compiler.ir.types import TensorType

#: at most this many lines of a stage in HTML (the rest: print the stage)
HTML_LINES = 2000


# ---- text of a Kernel ---------------------------------------------------------------------------

def transforms_text(kernel: Any) -> str:
    """``vmap(grad(f))``: the transforms of a Kernel around its function's name."""
    names: list[str] = []
    seen = 0
    while kernel._tracer is not None and seen < 64:
        seen += 1
        tracer = kernel._tracer
        inner = getattr(tracer, "inner", None) or getattr(tracer, "kernel", None)
        name = getattr(tracer, "who", None)
        if name is None and type(tracer).__name__.endswith("Tracer"):
            name = type(tracer).__name__[:-len("Tracer")].lower()
        if name:
            names.append(str(name))
        if inner is None or inner is kernel:
            break
        kernel = inner
    base = getattr(kernel.fn, "__name__", None) or kernel.__name__
    return "".join(f"{n}(" for n in names) + str(base) + ")" * len(names)


def source_location(fn: Any) -> str | None:
    """``path:line`` of a function's definition (relative to the working directory when
    inside it), or None for one without Python source."""
    fn = inspect.unwrap(fn) if callable(fn) else fn
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    path = code.co_filename
    if os.path.isabs(path):
        try:
            rel = os.path.relpath(path)
            if not rel.startswith(".."):
                path = rel
        except ValueError:                   # another drive (Windows)
            pass
    return f"{path}:{code.co_firstlineno}"


def _type_text(value: Any) -> str:
    if isinstance(value, TensorType):
        return str(value)
    if isinstance(value, Weak):
        return {"f": "float", "i": "int", "b": "bool", "c": "complex"}.get(value.type.dtype.kind, str(value.type))
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        inner = ", ".join(_type_text(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(_type_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_type_text(v)}" for k, v in value.items()) + "}"
    t = getattr(value, "type", None)
    if isinstance(t, TensorType):             # the same array again, or overlapping views of one
        return f"{t} ({'same array as an earlier argument' if hasattr(value, 'index') else 'overlapping view'})"
    text = repr(value)                        # a static argument: its value
    return text if len(text) <= 40 else text[:37] + "..."


def _dynamic(value: Any) -> bool:
    """Does an abstract argument hold a run-time value (else it is static, a value)?"""
    if isinstance(value, (TensorType, Weak)) or isinstance(getattr(value, "type", None), TensorType):
        return True
    if isinstance(value, (tuple, list)):
        return any(_dynamic(v) for v in value)
    if isinstance(value, dict):
        return any(_dynamic(v) for v in value.values())
    return False


def _arg_text(name: str, value: Any) -> str:
    return f"{name}: {_type_text(value)}" if _dynamic(value) else f"{name}={_type_text(value)}"


def call_text(kernel: Any, abstract_args: tuple[Any, ...], abstract_kwargs: dict[str, Any]) -> str:
    """``f(x: f64[3], n=4)``: the Kernel's transforms and its arguments' types (static
    arguments by value). Never raises (a static argument's own repr might)."""
    try:
        args = [_arg_text(kernel.arg_name(i), a) for i, a in enumerate(abstract_args)]
        args += [_arg_text(k, v) for k, v in abstract_kwargs.items()]
        return f"{transforms_text(kernel)}({', '.join(args)})"
    except Exception:  # noqa: BLE001 - only a description: the compile goes on
        return f"{getattr(kernel, '__name__', 'kernel')}(...)"


def variant_text(kernel: Any, spec: Any) -> str:
    """One compiled variant: its call types, result types and where its code came from."""
    outs = list(getattr(spec, "out_types", []))
    results = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
    state = getattr(spec, "state", "compiled")
    seconds = getattr(spec, "seconds", None)
    if state == "compiled" and seconds is not None:
        state = f"compiled in {_seconds(seconds)}"
    return f"{call_text(kernel, *spec.abstract)} -> {results}  {state}"


def kernel_repr(kernel: Any) -> str:
    try:
        return _kernel_repr(kernel)
    except Exception:  # noqa: BLE001 - a repr must not raise (a debugger, a log line)
        return f"<aotx.Kernel {getattr(kernel, '__name__', '?')}>"


def _kernel_repr(kernel: Any) -> str:
    where = source_location(kernel.fn)
    head = f"<aotx.Kernel {transforms_text(kernel)}"
    if where:
        head += f" from {where}"
    if kernel.signature:
        head += f", signature={kernel.signature!r}"
    variants = list(kernel._specializations.values())
    if kernel._fixed is not None and all(v is not kernel._fixed for v in variants):
        variants.insert(0, kernel._fixed)
    if not variants:
        return head + ", not compiled yet>"
    lines = [f"  {variant_text(kernel, v)}" for v in variants]
    noun = "variant" if len(variants) == 1 else "variants"
    return f"{head}, {len(variants)} {noun}:\n" + "\n".join(lines) + ">"


def _seconds(seconds: float) -> str:
    return f"{1e3 * seconds:.0f} ms" if seconds < 1.0 else f"{seconds:.2f} s"


# ---- the lowered stages -------------------------------------------------------------------------

class StageText(str):
    """The text of one stage: a ``str`` (print it, search it), shown highlighted in a notebook."""

    kind = "ir"

    def _repr_html_(self) -> str:
        return highlight_html(str(self), self.kind)


class IRText(StageText):
    kind = "ir"


class LLVMText(StageText):
    kind = "llvm"


class AsmText(StageText):
    kind = "asm"


def _ops(text: str) -> int:
    return sum(1 for line in text.splitlines() if re.match(r"\s*%\S+(, %\S+)* = ", line))


def _lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _title(low: Any) -> str:
    name = f" {low.name}" if getattr(low, "name", "") else ""
    return f"aotx.Lowered{name}" + (f" -> {low.signature}" if getattr(low, "signature", "") else "")


def lowered_repr(low: Any) -> str:
    return (f"<{_title(low)}: IR {_ops(low.ir)} ops ({_ops(low.ir_optimized)} after the passes), "
            f"LLVM IR {_lines(low.llvm)} lines ({_lines(low.llvm_optimized)} optimized), "
            f"asm {_lines(low.asm)} lines; print(low.ir), .ir_optimized, .llvm, .llvm_optimized "
            f"or .asm for the text>")


def lowered_html(low: Any) -> str:
    stages = [("ir", "IR after the frontend", low.ir), ("ir_optimized", "IR after the passes", low.ir_optimized),
              ("llvm", "LLVM IR", low.llvm), ("llvm_optimized", "LLVM IR, optimized", low.llvm_optimized),
              ("asm", "assembly", low.asm)]
    kinds = {"ir": "ir", "ir_optimized": "ir", "llvm": "llvm", "llvm_optimized": "llvm", "asm": "asm"}
    title = _escape(_title(low))
    parts = [f"<div class='aotx-lowered'><b>{title}</b>"]
    for attr, label, text in stages:
        opened = " open" if attr == "ir_optimized" else ""
        parts.append(f"<details{opened}><summary><code>.{attr}</code>: {_escape(label)}, "
                     f"{_lines(text)} lines</summary>{highlight_html(text, kinds[attr])}</details>")
    return "".join(parts) + "</div>"


# ---- syntax highlighting ------------------------------------------------------------------------

_STYLE = ("<style>.aotx-hl{font-family:monospace;font-size:12px;line-height:1.35;white-space:pre;"
          "overflow-x:auto;padding:6px;background:#fafafa;color:#222}"
          ".aotx-hl .c{color:#888;font-style:italic}.aotx-hl .k{color:#8250df;font-weight:bold}"
          ".aotx-hl .v{color:#0550ae}.aotx-hl .g{color:#953800}.aotx-hl .t{color:#116329}"
          ".aotx-hl .n{color:#cf222e}.aotx-hl .o{color:#6639ba}.aotx-hl .l{color:#953800;font-weight:bold}</style>")

# (class, pattern) per kind, tried in order at each position; text between matches is plain
_RULES: dict[str, list[tuple[str, str]]] = {
    "ir": [("c", r"#[^\n]*|//[^\n]*"), ("k", r"\b(?:func|return)\b"), ("v", r"%[\w.]+"),
           ("g", r"@[^\s(]+"), ("t", r"\b(?:bool|[iuf](?:8|16|32|64)|c64|c128)\[[^\]\n]*\]"),
           ("o", r"\b[a-z_][a-z0-9_]*(?=\()"), ("n", r"-?\b\d+(?:\.\d+)?(?:e[-+]?\d+)?\b")],
    "llvm": [("c", r";[^\n]*"), ("v", r'%"[^"\n]*"|%[\w.$\-]+'), ("g", r'@"[^"\n]*"|@[\w.$\-]+'), ("o", r"(?<== )[a-z][a-z.]*"),
             ("k", r"\b(?:define|declare|ret|br|call|tail|label|phi|select|icmp|fcmp|load|store|"
                   r"getelementptr|alloca|switch|internal|private|global|constant|attributes|entry|"
                   r"to|x|unreachable)\b"),
             ("t", r"\b(?:void|ptr|half|float|double|i\d+)\b"), ("n", r"-?\b\d+(?:\.\d+)?(?:e[-+]?\d+)?\b")],
    "asm": [("c", r"#[^\n]*"), ("l", r"^[\w.$@]+:"), ("k", r"(?<=^\t)[a-z][a-z0-9.]*|(?<=^ {4})[a-z][a-z0-9.]*"),
            ("o", r"^\s*\.[a-z_0-9]+"), ("v", r"%[a-z0-9]+"), ("n", r"(?<![\w.])\$-?[\w.]+|-?\b(?:0x[0-9a-f]+|\d+)\b")],
}


@functools.cache
def _pattern(kind: str) -> re.Pattern[str]:
    """One regular expression per kind, a named group per rule (compiled on first use: not
    at import)."""
    rules = _RULES.get(kind, _RULES["ir"])
    return re.compile("|".join(f"(?P<{cls}{i}>{pat})" for i, (cls, pat) in enumerate(rules)), re.MULTILINE)


def _escape(text: str) -> str:
    """``html.escape`` (without importing its entity tables at startup)."""
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&#x27;"))


def highlight_html(text: str, kind: str) -> str:
    """`text` (IR, LLVM IR or assembly: `kind` ``ir``, ``llvm`` or ``asm``) as a
    self-contained HTML block with spans per token class; everything escaped."""
    lines = text.splitlines(keepends=True)
    more = ""
    if len(lines) > HTML_LINES:
        more = (f"\n... {len(lines) - HTML_LINES} more lines: print the stage for all of it")
        text = "".join(lines[:HTML_LINES])
    pattern = _pattern(kind)
    out: list[str] = []
    pos = 0
    for m in pattern.finditer(text):
        out.append(_escape(text[pos:m.start()]))
        cls = (m.lastgroup or "x").rstrip("0123456789")
        out.append(f"<span class='{cls}'>{_escape(m.group())}</span>")
        pos = m.end()
    out.append(_escape(text[pos:] + more))
    return f"{_STYLE}<div class='aotx-hl'>{''.join(out)}</div>"


def stage_texts(ir: str, ir_optimized: str, llvm: str, llvm_optimized: str,
                asm: str) -> tuple[StageText, StageText, StageText, StageText, StageText]:
    return (IRText(ir), IRText(ir_optimized), LLVMText(llvm), LLVMText(llvm_optimized), AsmText(asm))

