"""Test-suite configuration shared by every test directory.

* ``AOTX_VERIFY=1``: the IR verifier runs after every stage in every test (STYLE.md point 8).
* ``AOTX_CACHE_DIR``: a fresh directory per test session, so tests never read kernels a
  previous run (or the user) left in the real cache, and never write there (the xdist
  workers inherit it: they share one cache).
* ``-n N`` without ``--dist``: xdist's ``worksteal`` scheduling instead of ``load``. It gives each
  worker a contiguous run of the collection (stealing the tail of the other's when it runs out),
  where ``load`` deals consecutive tests out to both: the tests of one module, one OpInfo or one
  doc page share kernels (module-level ``signature=`` kernels, per-OpInfo kernels, a page's
  earlier blocks), which under ``load`` both workers compiled, usually at the same moment, so
  that neither found the other's in the on-disk cache.

* The modules of the longest single tests (subprocesses: the wheel, the fuzz batches, the
  benchmark suite, mypy, the site) run first (``FIRST``): under ``worksteal`` a worker that runs
  out of tests takes the tail of the other's, which must then hold short tests only, or one
  worker waits for the other's last long test at the end of the run.

The variables are defaults: a variable already set in the environment wins, as does an explicit
``--dist``.
"""
from __future__ import annotations

import os
import tempfile

import pytest

os.environ.setdefault("AOTX_VERIFY", "1")
if "AOTX_CACHE_DIR" not in os.environ:
    os.environ["AOTX_CACHE_DIR"] = tempfile.mkdtemp(prefix="aotx-test-cache-")


def _explicit_dist(config: pytest.Config) -> bool:
    args = list(config.invocation_params.args) + os.environ.get("PYTEST_ADDOPTS", "").split()
    return any(a == "--dist" or a.startswith("--dist=") or a == "-d" for a in args)


def pytest_configure(config: pytest.Config) -> None:
    # xdist turns `-n N` into `--dist load` before this runs, and makes its scheduler after
    if getattr(config.option, "dist", "no") == "load" and not _explicit_dist(config):
        config.option.dist = "worksteal"


#: modules whose tests take tens of seconds each (subprocesses), longest first; each moved whole
#: (its module-scoped fixtures stay set up once), the rest of the collection keeps its order
FIRST = ("tests/packaging/test_wheel.py", "tests/fuzz/test_fuzz.py", "tests/benchmarks/test_suite.py",
         "tests/architecture/test_types.py", "tests/packaging/test_typing.py", "tests/docs/test_site.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::")[0]
        return FIRST.index(path) if path in FIRST else len(FIRST)
    items[:] = sorted(items, key=rank)      # stable: the order within a module and of the rest kept
