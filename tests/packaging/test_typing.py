"""The public API is typed: `mypy --strict` reports nothing in runtime/, in compiler/__init__.py
and in a user's fully annotated program that calls every public name (typed_client.py), and
every public function and method carries complete annotations."""
from __future__ import annotations

import inspect
import subprocess
import sys
import types
from typing import Any

import compiler
import compiler.errors
import compiler.function
import compiler.random
import runtime
from tests.architecture.imports import ROOT


#: checked with --strict: the runtime, the package's re-exports, the modules that define them
#: (compiler/api/ and the others), and a typed client
STRICT = ["runtime", "compiler/__init__.py", "compiler/api", "compiler/errors.py", "compiler/version.py", "compiler/random.py",
          "compiler/cache.py", "compiler/function/__init__.py", "compiler/function/api.py",
          "tests/packaging/typed_client.py"]


def test_mypy_strict_on_the_public_api_and_a_typed_client():
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", *STRICT],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def unannotated(fn: Any, where: str) -> list[str]:
    sig = inspect.signature(fn)
    out = [f"{where}: parameter {p.name}" for p in sig.parameters.values()
           if p.name not in ("self", "cls") and p.annotation is inspect.Parameter.empty]
    if sig.return_annotation is inspect.Signature.empty:
        out.append(f"{where}: return")
    return out


def public_callables(module: types.ModuleType, names: list[str]) -> list[tuple[str, Any]]:
    """The module's public functions, and the public methods (with __init__ and __call__) of
    its public classes."""
    found = []
    for name in names:
        obj = getattr(module, name)
        where = f"{module.__name__}.{name}"
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if attr.startswith("_") and attr not in ("__init__", "__call__"):
                    continue
                fn = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
                if inspect.isfunction(fn):
                    found.append((f"{where}.{attr}", fn))
        elif inspect.isfunction(obj):
            found.append((where, obj))
    return found


def test_every_public_function_and_method_is_annotated():
    error_classes = [n for n, c in vars(compiler.errors).items()
                     if inspect.isclass(c) and c.__module__ == "compiler.errors" and not n.startswith("_")]
    surface = (public_callables(compiler, compiler.__all__) + public_callables(runtime, runtime.__all__)
               + public_callables(compiler.random, compiler.random.__all__)
               + public_callables(compiler.function, compiler.function.__all__)
               + public_callables(compiler.errors, error_classes))
    names = {where for where, _ in surface}
    assert {"compiler.jit", "compiler.Kernel.lower", "runtime.load", "compiler.random.normal",
            "compiler.Function.apply"} <= names
    missing = [m for where, fn in surface for m in unannotated(fn, where)]
    assert missing == []


def test_one_version():
    from runtime.version import __version__
    assert compiler.__version__ == runtime.__version__ == __version__
    text = (ROOT / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in text and 'attr = "runtime.version.__version__"' in text
    assert f"## [{__version__}]" in (ROOT / "CHANGELOG.md").read_text()
