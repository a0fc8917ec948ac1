"""The documentation site builds with ``mkdocs build --strict`` (mkdocs.yml).

Strict mode turns every warning into a failure: a link to a missing page or a
missing anchor, a page of docs/ left out of the navigation, an API reference entry
(``::: name``) that names nothing. The build runs once, in a subprocess (as a reader
would run it), into a temporary directory; the tests read what it wrote.
"""
from __future__ import annotations

import fcntl
import html
import importlib
import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap
from typing import Any

import pytest

import compiler
import compiler.errors
import runtime

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def mkdocs_build(config: pathlib.Path, site: pathlib.Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config),
                           "-d", str(site)], capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The built site, built once per test session (xdist's workers share the session's
    temporary directory: the first builds under a lock, the others read its result)."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent            # the session's directory, above the workers' own
    out, log = shared / "aotx-site", shared / "aotx-site.log"
    with open(shared / "aotx-site.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not log.exists():
            done = mkdocs_build(ROOT / "mkdocs.yml", out)
            log.write_text(f"{done.returncode}\n{done.stderr}")
    returncode, stderr = log.read_text().split("\n", 1)
    assert returncode == "0", f"mkdocs build --strict failed:\n{stderr[-6000:]}"
    assert "WARNING" not in stderr, stderr
    return out


def _article(page: pathlib.Path) -> str:
    text = page.read_text(encoding="utf-8")
    return text[text.index("<article"):text.index("</article>")]


def test_every_page_is_built_and_in_the_navigation(site: pathlib.Path) -> None:
    index = (site / "index.html").read_text(encoding="utf-8")
    nav = index[index.index('md-nav--primary'):]
    hrefs = re.findall(r'<a href="([^"#]*)"\s+class="md-nav__link', nav)
    linked = {"" if h in (".", "./") else h.removeprefix("./") for h in hrefs}
    for md in sorted(DOCS.rglob("*.md")):
        rel = md.relative_to(DOCS).with_suffix("").as_posix()
        path = "" if rel == "index" else rel.removesuffix("/index") + "/"
        assert (site / path / "index.html").exists(), f"{md.relative_to(ROOT)} was not built"
        assert path in linked, f"{md.relative_to(ROOT)} is not in the navigation"
        # the page's own title is its first heading, rendered as one (not as text)
        first = md.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# "), f"{md.relative_to(ROOT)} does not start with a title"


def _resolve(name: str) -> Any:
    """The object a dotted name of the API reference stands for."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(name)


def test_the_api_reference_documents_every_public_name(site: pathlib.Path) -> None:
    documented: dict[int, str] = {}
    for page in (site / "api").rglob("index.html"):
        for anchor in re.findall(r'<h\d id="((?:compiler|runtime)[\w.]*)" class="doc doc-heading"', page.read_text()):
            documented[id(_resolve(anchor))] = anchor
    public = [(f"compiler.{n}", getattr(compiler, n)) for n in compiler.__all__ if n != "__version__"]
    public += [(f"runtime.{n}", getattr(runtime, n)) for n in runtime.__all__ if n not in ("ABI_VERSION", "__version__")]
    public += [(f"compiler.random.{n}", getattr(compiler.random, n)) for n in compiler.random.__all__]
    public += [(f"compiler.errors.{n}", v) for n, v in vars(compiler.errors).items()
               if isinstance(v, type) and issubclass(v, Exception) and v.__module__ == "compiler.errors"]
    missing = [name for name, obj in public if id(obj) not in documented]
    assert missing == [], f"add these to a page of docs/api/: {missing}"


def test_the_api_reference_shows_signatures_and_docstrings(site: pathlib.Path) -> None:
    page = _article(site / "api" / "transforms" / "index.html")
    grad = page[page.index('id="compiler.grad"'):]
    start = grad.index("doc-signature")
    signature = html.unescape(re.sub(r"<[^>]+>", "", grad[start:grad.index("</code>", start)]))
    assert "argnums" in signature and "has_aux" in signature, signature
    assert "gradient" in grad[:grad.index("</div>", grad.index("doc-contents"))]
    # docstrings are Markdown here: no reStructuredText role may show through as text
    for sub in (site / "api").rglob("index.html"):
        text = html.unescape(re.sub(r"<[^>]+>", "", _article(sub)))
        assert not re.search(r":(class|func|meth|mod|attr):", text), f"{sub}: a reST role in a docstring"


def test_code_blocks_are_highlighted(site: pathlib.Path) -> None:
    guide = _article(site / "guide" / "index.html")
    assert re.search(r'<div class="[^"]*highlight[^"]*"><pre>.*?<span class="kn">import</span>', guide, re.S)


def test_search_index_covers_the_pages(site: pathlib.Path) -> None:
    index = json.loads((site / "search" / "search_index.json").read_text())
    locations = {doc["location"].split("#")[0] for doc in index["docs"]}
    assert {"", "guide/", "vmap/", "api/transforms/"} <= locations
    assert any("vmap" in doc["text"] for doc in index["docs"] if doc["location"].startswith("vmap/"))


def test_strict_build_rejects_a_broken_anchor(tmp_path: pathlib.Path) -> None:
    """The project's configuration, on two pages of which one links to a missing anchor."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the other page](other.md#no-such-section).\n")
    (docs / "other.md").write_text("# Other\n\n## A section\n\nText.\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text(textwrap.dedent(f"""\
        INHERIT: {ROOT / 'mkdocs.yml'}
        docs_dir: {docs}
        nav: [index.md, other.md]
        plugins: [search]
        """))
    done = mkdocs_build(config, tmp_path / "site")
    assert done.returncode != 0
    assert "no-such-section" in done.stderr, done.stderr
