"""docs/primitives.md lists every primitive of the registry with its kind, its family
module and the one-line description it declares (``Primitive.doc``)."""
from pathlib import Path

import compiler.function  # noqa: F401  (compiler.Function's primitive)
import compiler.primitives  # noqa: F401  (every other primitive; import compiler defers them)
from compiler.ir.primitive import REGISTRY

DOC = Path(__file__).resolve().parents[2] / "docs" / "primitives.md"
BEGIN, END = "<!-- primitives:begin -->", "<!-- primitives:end -->"


def _module(prim) -> str:
    """The family module: where the lowering (or, without one, the shape rule) is written."""
    rule = prim.lower or prim.shape_rule
    return rule.__module__.removeprefix("compiler.").replace(".", "/") + ".py"


def table() -> str:
    rows = ["| primitive | kind | defined in | what it computes |", "|---|---|---|---|"]
    for name in sorted(REGISTRY):
        p = REGISTRY[name]
        doc = p.doc.replace("|", "\\|")
        rows.append(f"| `{name}` | {p.kind} | `{_module(p)}` | {doc} |")
    return "\n".join(rows)


def test_the_table_lists_every_primitive():
    text = DOC.read_text()
    current = text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip()
    assert current == table(), f"regenerate the table of docs/primitives.md:\n{table()}"


def test_every_primitive_says_what_it_computes():
    assert [n for n, p in REGISTRY.items() if not p.doc.strip()] == []
