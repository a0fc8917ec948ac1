"""Running Python snippets in fresh processes (the cache is about *other* processes)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

# A snippet that makes `import compiler` and `import llvmlite` fail in the process.
BLOCK_COMPILER = textwrap.dedent("""
    import sys
    class _Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("compiler", "llvmlite"):
                raise ImportError(f"blocked import of {name}")
    sys.meta_path.insert(0, _Block())
""")


def env_for(cache_dir: Path | None, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    if cache_dir is not None:
        env["AOTX_CACHE_DIR"] = str(cache_dir)
    env.pop("AOTX_DISABLE_CACHE", None)
    env.update(extra)
    return env


def run_python(code: str, cwd: Path, cache_dir: Path | None = None, *, check: bool = True,
               user: int | None = None, **env: str) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter (as `user` if given: needs root)."""
    kwargs: dict[str, Any] = {}
    if user is not None:
        kwargs["user"] = user
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, text=True,
                          capture_output=True, env=env_for(cache_dir, **env), timeout=300, **kwargs)
    if check and proc.returncode != 0:
        raise AssertionError(f"subprocess failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def last_json(stdout: str) -> Any:
    """The last line of stdout, parsed as JSON (snippets print their report last)."""
    return json.loads(stdout.strip().splitlines()[-1])
