"""Every ```python block of the documentation runs (docs/**/*.md and README.md).

The blocks of one page run in order in one namespace, as a reader would type
them: a later block may use what an earlier one defined. Each block is one
test, named ``<page>#<n>`` (n counts the page's python blocks from 1); a
failure names the page, the block number and its first line in the page.

A block whose first line is ``# doctest: skip`` is not run: use it only for
blocks that are fragments on purpose (a signature to read, not to run).

Blocks are compiled under a file name of their own, registered in
``linecache`` with the block's text at the block's own line numbers, so that
``inspect.getsource`` (which ``@jit`` needs) finds the functions a block
defines, and tracebacks and compile errors point at the page's lines.
"""
from __future__ import annotations

import dataclasses
import linecache
import pathlib
import re
import textwrap
import traceback
from typing import Any

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]   # docs/api/ too
SKIP_MARK = "# doctest: skip"

_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*)$")


@dataclasses.dataclass(frozen=True)
class Block:
    page: pathlib.Path
    number: int          # 1-based among the page's python blocks
    line: int            # 1-based line in the page of the block's first code line
    code: str            # dedented code

    @property
    def rel(self) -> str:
        return self.page.relative_to(ROOT).as_posix()

    @property
    def skipped(self) -> bool:
        first = self.code.lstrip("\n").split("\n", 1)[0].strip()
        return first == SKIP_MARK

    @property
    def label(self) -> str:
        return f"{self.rel}#{self.number}"


def python_blocks(page: pathlib.Path) -> list[Block]:
    """The ```python fenced blocks of a Markdown page, in order."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        fence, indent = m.group("fence"), m.group("indent")
        info = m.group("info").strip().split()
        close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            j += 1
        if info and info[0].lower() in ("python", "py", "python3"):
            body = [ln[len(indent):] if ln.startswith(indent) else ln.lstrip() for ln in lines[i + 1:j]]
            blocks.append(Block(page, len(blocks) + 1, i + 2, textwrap.dedent("\n".join(body)) + "\n"))
        i = j + 1
    return blocks


ALL_BLOCKS = [b for page in PAGES if page.exists() for b in python_blocks(page)]


def _compile(block: Block) -> Any:
    """The block's code object under a file name of its own, known to linecache."""
    filename = f"{block.page}[python block {block.number}]"
    padded = "\n" * (block.line - 1) + block.code
    linecache.cache[filename] = (len(padded), None, padded.splitlines(keepends=True), filename)
    return compile(padded, filename, "exec")


class _PageRun:
    """The namespace of one page and how far its blocks have run (in this process)."""

    def __init__(self, page: pathlib.Path) -> None:
        self.namespace: dict[str, Any] = {"__name__": f"aotx_docs_{page.stem}"}
        self.done = 0                      # blocks 1..done have run
        self.failed: Block | None = None   # the first block that failed


_RUNS: dict[pathlib.Path, _PageRun] = {}


def _run_block(run: _PageRun, block: Block) -> None:
    run.done = block.number
    if block.skipped:
        return
    try:
        exec(_compile(block), run.namespace)
    except Exception:
        run.failed = run.failed or block
        raise


def _failure_text(block: Block) -> str:
    return (f"{block.rel}, python block {block.number} (line {block.line}) failed:\n"
            f"{textwrap.indent(block.code, '    ')}\n{traceback.format_exc()}")


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=[b.label for b in ALL_BLOCKS])
def test_doc_block_runs(block: Block) -> None:
    if block.skipped:
        pytest.skip(f"{block.label}: marked '{SKIP_MARK}'")
    run = _RUNS.setdefault(block.page, _PageRun(block.page))
    if run.done >= block.number:          # re-run of the page in this process: start afresh
        run = _RUNS[block.page] = _PageRun(block.page)
    for earlier in python_blocks(block.page)[run.done:block.number - 1]:
        try:
            _run_block(run, earlier)      # blocks this process has not run yet (e.g. under xdist)
        except Exception:
            pytest.fail(f"an earlier block failed:\n{_failure_text(earlier)}", pytrace=False)
    if run.failed is not None:
        pytest.skip(f"{block.label}: an earlier block of the page failed ({run.failed.label})")
    try:
        _run_block(run, block)
    except Exception:
        pytest.fail(_failure_text(block), pytrace=False)


def test_blocks_are_found() -> None:
    """The extractor sees the pages' blocks (a broken fence regex would silently test nothing)."""
    pages = {b.rel for b in ALL_BLOCKS}
    assert "README.md" in pages
    assert any(p.startswith("docs/") for p in pages)


def test_extractor_handles_fences_and_skip_marks(tmp_path: pathlib.Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(textwrap.dedent("""\
        Text.

        ```python
        a = 1
        ```

        ```sh
        echo not python
        ```

        1. A list item:

           ```python
           # doctest: skip
           b = undefined_name
           ```

        ````python
        c = "```"
        ````
        """))
    blocks = python_blocks(page)
    assert [b.number for b in blocks] == [1, 2, 3]
    assert [b.line for b in blocks] == [4, 14, 19]
    assert blocks[0].code == "a = 1\n" and not blocks[0].skipped
    assert blocks[1].skipped and blocks[1].code.startswith("# doctest: skip\nb = ")
    assert blocks[2].code == 'c = "```"\n'
