"""Test-suite configuration shared by every test directory.

* ``AOTX_VERIFY=1``: the IR verifier runs after every stage in every test (STYLE.md point 8).
* ``AOTX_CACHE_DIR``: a fresh directory per test session, so tests never read kernels a
  previous run (or the user) left in the real cache, and never write there.

Both are defaults: a variable already set in the environment wins.
"""
from __future__ import annotations

import os
import tempfile

os.environ.setdefault("AOTX_VERIFY", "1")
if "AOTX_CACHE_DIR" not in os.environ:
    os.environ["AOTX_CACHE_DIR"] = tempfile.mkdtemp(prefix="aotx-test-cache-")
