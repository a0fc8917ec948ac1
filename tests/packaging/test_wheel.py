"""`python -m build` makes a wheel and an sdist; the wheel installs into a fresh virtual
environment (no system site-packages: NumPy and llvmlite come from the package index) and a
typed user program runs there: jit, grad, vmap, `aotx build` and `runtime.load`; `mypy
--strict` checks the program against the installed packages, which needs their `py.typed`.

One test, slow (~30-60 s: two builds, a venv, an install): deselect with `-m "not slow"`.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

from runtime.version import __version__
from tests.architecture.imports import ROOT

HERE = Path(__file__).resolve().parent
HAVE_CC = shutil.which("cc") is not None
JUNK = shutil.ignore_patterns(".git", "__pycache__", ".mypy_cache", ".pytest_cache", ".hypothesis",
                              "build", "dist", "*.egg-info", "*.so", "*.o", ".venv")
WHERE = ("import json, compiler, runtime, importlib.metadata as m; "
         "print(json.dumps([compiler.__file__, runtime.__file__, m.version('aotx'), compiler.__version__]))")


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{cmd}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout


@pytest.mark.slow
def test_wheel_and_sdist_build_install_and_run_in_a_fresh_venv(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "AOTX_DISABLE_CACHE")}
    env["AOTX_CACHE_DIR"] = str(tmp_path / "cache")
    src = tmp_path / "src"                       # build from a copy: the checkout stays clean
    shutil.copytree(ROOT, src, ignore=JUNK)
    run([sys.executable, "-m", "build", "--outdir", str(tmp_path / "dist"), str(src)], tmp_path, env)
    wheel = tmp_path / "dist" / f"aotx-{__version__}-py3-none-any.whl"
    sdist = tmp_path / "dist" / f"aotx-{__version__}.tar.gz"

    with tarfile.open(sdist) as tar:           # a source distribution: the whole source tree
        members = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    assert {"pyproject.toml", "README.md", "CHANGELOG.md", "MANIFEST.in", "compiler/py.typed",
            "runtime/py.typed", "runtime/version.py", "docs/aot.md", "tests/conftest.py",
            "tests/packaging/typed_client.py", "examples/quickstart.py",
            "examples/aot_deploy/deploy.py", "examples/c_host/main.c", "benchmarks/run.py"} <= members
    assert not [m for m in members if "__pycache__" in m or m.endswith((".pyc", ".so", ".o"))]
    with zipfile.ZipFile(wheel) as whl:         # the wheel: the two packages and their markers
        names = set(whl.namelist())
        metadata = whl.read(f"aotx-{__version__}.dist-info/METADATA").decode()
    assert {"compiler/py.typed", "runtime/py.typed", "compiler/__init__.py", "runtime/__init__.py"} <= names
    assert {n.split("/")[0] for n in names} == {"compiler", "runtime", f"aotx-{__version__}.dist-info"}
    assert f"\nVersion: {__version__}\n" in metadata

    venv.create(tmp_path / "venv", with_pip=True, system_site_packages=False)
    python, bindir = tmp_path / "venv" / "bin" / "python", tmp_path / "venv" / "bin"
    run([str(python), "-m", "pip", "install", "-q", str(wheel)], tmp_path, env)

    work = tmp_path / "work"                    # nothing of the checkout on sys.path
    work.mkdir()
    shutil.copy(HERE / "typed_client.py", work / "client.py")
    where = json.loads(run([str(python), "-I", "-c", WHERE], work, env).splitlines()[-1])
    site = tmp_path / "venv" / "lib"
    assert all(Path(p).is_relative_to(site) for p in where[:2]), where
    assert where[2:] == [__version__, __version__]

    args = [str(python), "client.py"]
    if HAVE_CC:                                  # the console script builds a library to load
        sys.path.insert(0, str(HERE))
        try:
            import typed_client
        finally:
            sys.path.remove(str(HERE))
        (work / "lib.py").write_text(typed_client.LIBRARY_SOURCE)
        out = run([str(bindir / "aotx"), "build", "lib.py", "-o", "out"], work, env)
        assert (work / "out" / "lib.so").is_file(), out
        args.append("out/lib")
    assert run(args, work, env).split() == ["ok", __version__]

    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                           "--python-executable", str(python), "client.py"],
                          cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
