"""Look at the documentation site as a reader would: build it, serve it, and look at
it with headless Chromium.

    python scripts/site_screenshots.py [--out build/screenshots] [--chromium chromium]

Builds the site with ``mkdocs build --strict`` (into ``OUT/site``), serves it over
HTTP on a free port of 127.0.0.1 (the search runs in a web worker, which needs
http), drives Chromium through the DevTools protocol on a pipe
(``--remote-debugging-pipe``: the standard library is enough), and writes to OUT:

- ``index.png``, ``guide.png``, ``api_jit.png``, ``api_transforms.png``: the pages at 1280x900;
- ``index_narrow.png``: the index at a phone's width with the navigation drawer open;
- ``search.png``: the page opened with ``?q=vmap``, once the search has answered.

It checks, in the pages Chromium rendered, that the navigation links every page of
docs/, that the guide's code blocks are highlighted (Pygments' token spans, styled),
that the API reference rendered its entries with signatures, and that the search for
``vmap`` lists results; it exits non-zero naming each check that failed. Needs the
``docs`` extra (``pip install ".[docs]"``) and Chromium (Debian: ``apt-get install chromium``).
"""
from __future__ import annotations

import argparse
import base64
import functools
import http.server
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = {  # screenshot name -> path under the site
    "index": "",
    "guide": "guide/",
    "api_jit": "api/jit/",
    "api_transforms": "api/transforms/",
}


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def build(site: pathlib.Path) -> float:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                    "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)], check=True, env=env)
    return time.perf_counter() - start


def serve(site: pathlib.Path) -> http.server.ThreadingHTTPServer:
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Browser:
    """Headless Chromium driven over the DevTools protocol on a pipe (fds 3 and 4)."""

    def __init__(self, exe: str) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        self._profile = tempfile.TemporaryDirectory(prefix="aotx-chromium-")
        args = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                "--no-first-run", "--disable-dev-shm-usage", "--remote-debugging-pipe",
                f"--user-data-dir={self._profile.name}", "about:blank"]
        self.proc = subprocess.Popen(
            ["sh", "-c", f'exec "$0" "$@" 3<&{to_chrome_r} 4>&{from_chrome_w}', exe, *args],
            pass_fds=(to_chrome_r, from_chrome_w),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        self.session = ""

    def _read_message(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_chrome, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method: str, session: bool = True, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read_message()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self._events.append(reply)

    def open_tab(self, width: int, height: int) -> None:
        target = self.send("Target.createTarget", session=False, url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", session=False, targetId=target,
                                 flatten=True)["sessionId"]
        self.send("Page.enable")
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=width < 600)

    def goto(self, url: str) -> None:
        self._events.clear()
        self.send("Page.navigate", url=url)
        deadline = time.monotonic() + 30
        while not any(e.get("method") == "Page.loadEventFired" for e in self._events):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url} did not load")
            self._events.append(self._read_message())

    def js(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 20.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = self.js(expression)
            if value or time.monotonic() > deadline:
                return value
            time.sleep(0.2)

    def screenshot(self, png: pathlib.Path) -> None:
        time.sleep(0.3)  # fonts and the last layout
        png.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", format="png")["data"]))

    def close(self) -> None:
        try:
            self.send("Browser.close", session=False)
        except RuntimeError:
            pass
        self.proc.wait(timeout=30)
        os.close(self._to_chrome)
        os.close(self._from_chrome)
        self._profile.cleanup()


def site_paths() -> list[str]:
    """Every Markdown page under docs/, as the path the site serves it at."""
    out = []
    for md in sorted((ROOT / "docs").rglob("*.md")):
        rel = md.relative_to(ROOT / "docs").with_suffix("").as_posix()
        out.append("" if rel == "index" else rel.removesuffix("/index") + "/")
    return out


NAV_LINKS = """[...document.querySelectorAll('nav.md-nav--primary a.md-nav__link[href]')]
  .map(a => new URL(a.href).pathname)"""
HIGHLIGHTED = """(() => {
  const spans = document.querySelectorAll('.highlight code span.kn, .highlight code span.k');
  if (!spans.length) return null;
  return [spans.length, getComputedStyle(spans[0]).color,
          getComputedStyle(document.querySelector('article')).color];
})()"""
API_ENTRIES = """[...document.querySelectorAll('.doc-heading')]
  .filter(h => h.nextElementSibling && h.nextElementSibling.classList.contains('doc-signature'))
  .map(h => h.id)"""
SEARCH_RESULTS = """(() => {
  const items = document.querySelectorAll('.md-search-result__item');
  return items.length ? [document.querySelector('.md-search-result__meta').textContent,
                         [...items].slice(0, 5).map(i => i.querySelector('h1, h2').textContent)] : null;
})()"""


def look(browser: Browser, base: str, out: pathlib.Path) -> list[str]:
    """Screenshots, and the checks a reader relies on; returns the failures."""
    failures = []
    browser.open_tab(1280, 900)
    for name, path in PAGES.items():
        browser.goto(base + path)
        browser.screenshot(out / f"{name}.png")
        if name == "index":
            linked = {p.removeprefix("/") for p in browser.js(NAV_LINKS)}
            missing = [p for p in site_paths() if p not in linked]
            print(f"navigation: {len(linked)} links, every page of docs/ linked: {not missing}")
            if missing:
                failures.append(f"the navigation does not link {missing}")
        if name == "guide":
            hl = browser.js(HIGHLIGHTED)
            print(f"guide: {hl[0] if hl else 0} highlighted keyword spans"
                  + (f", keyword color {hl[1]} vs text {hl[2]}" if hl else ""))
            if not hl or hl[1] == hl[2]:
                failures.append("the guide's code blocks are not highlighted")
        if name == "api_transforms":
            entries = browser.js(API_ENTRIES)
            print(f"API reference (transforms): {len(entries)} entries with signatures")
            for want in ("compiler.grad", "compiler.jacrev", "compiler.hessian"):
                if want not in entries:
                    failures.append(f"the API reference has no entry {want} with a signature")
    browser.goto(base + "?q=vmap")
    found = browser.wait_for(SEARCH_RESULTS)
    browser.screenshot(out / "search.png")
    print(f"search 'vmap': {found[0] if found else 'no results'}; first: {found[1] if found else []}")
    if not found:
        failures.append("the search for 'vmap' shows no results")
    browser.open_tab(420, 900)
    browser.goto(base)
    browser.js("document.getElementById('__drawer').checked = true")
    browser.screenshot(out / "index_narrow.png")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "build" / "screenshots")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    args = parser.parse_args()
    out: pathlib.Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    seconds = build(out / "site")
    print(f"mkdocs build --strict: {seconds:.1f} s")
    server = serve(out / "site")
    browser = Browser(args.chromium)
    try:
        failures = look(browser, f"http://127.0.0.1:{server.server_address[1]}/", out)
    finally:
        browser.close()
        server.shutdown()
    for png in sorted(out.glob("*.png")):
        print(png)
    for failure in failures:
        print("FAILED:", failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
