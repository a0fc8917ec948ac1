"""The manifest of a built library (``MODULE.json``) and its checks.

Written by ``aotx build`` next to ``MODULE.so`` and ``MODULE.h``::

    {
      "format": "aotx-library",
      "abi_version": 2,                       # runtime.abi.ABI_VERSION of the builder
      "aotx_version": "0.1.0",
      "module": "physics",  "source": "physics.py",
      "library": "physics.so", "header": "physics.h",
      "target": {"triple": "x86_64-unknown-linux-gnu", "cpu": "x86-64-v3",
                 "features": ["avx", "avx2", "fma", ...],      # required, LLVM names
                 "feature_string": "+avx,+avx2,..."},          # as given to LLVM
      "kernels": [{"name": "step", "symbol": "physics_step",
                   "inputs":  [{"name": "x", "type": "f64[n, 3]"}, ...],
                   "outputs": [{"name": "result0", "type": "f64[n]"}],
                   "symbols": ["n"],                 # the symbols array, in order
                   "errors": [{"error": "IndexError", "message": "...", "dims": ["n"],
                               "where": "physics.py:12"}],   # status 16 + i (runtime/abi.py)
                   "result": ...,                    # structure (runtime/trees.py)
                   "signature": "f64[n, 3], f64[3] -> f64[n]",
                   "source_sha256": "...", "object_sha256": "..."}],
      "hashes": {"physics.so": "<sha256>", "physics.h": "<sha256>"}
    }

:func:`read` parses and checks it (format, ABI version, architecture, CPU
features); :func:`check_hash` checks a file against it. Needs only the
standard library.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from runtime import cpu
from runtime.abi import ABI_VERSION

FORMAT = "aotx-library"


class LoadError(RuntimeError):
    """A built library cannot be used here (missing or bad files, wrong ABI)."""


class CPUFeatureError(LoadError):
    """The library was built for CPU features this machine does not have."""

    def __init__(self, message: str, missing: list[str]) -> None:
        super().__init__(message)
        self.missing = missing


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read(path: Path) -> dict[str, Any]:
    """The manifest at `path`, checked for this runtime and this CPU."""
    try:
        manifest = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise LoadError(f"no manifest {path} (build the library with `aotx build`)") from None
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise LoadError(f"cannot read manifest {path}: {e}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise LoadError(f"{path} is not an aotx library manifest")
    abi = manifest.get("abi_version")
    if abi != ABI_VERSION:
        raise LoadError(f"{path}: built for kernel ABI version {abi}, but this runtime speaks "
                        f"version {ABI_VERSION}; rebuild it with this aotx (`aotx build`)")
    for field in ("library", "kernels", "target", "hashes"):
        if field not in manifest:
            raise LoadError(f"{path}: manifest has no {field!r} entry")
    check_target(manifest["target"], path)
    return manifest


def check_target(target: dict[str, Any], where: Any) -> None:
    """Architecture and CPU features of a library's target against this machine."""
    arch = cpu.triple_arch(str(target.get("triple", "")))
    here = cpu.machine()
    if arch and arch != here:
        raise LoadError(f"{where}: built for {arch} ({target.get('triple')}), "
                        f"but this machine is {here}")
    missing = cpu.missing_features(list(target.get("features", [])))
    if missing:
        name = target.get("cpu", "?")
        raise CPUFeatureError(
            f"{where}: built for CPU {name!r} with features this CPU lacks: {', '.join(missing)}; "
            f"rebuild with `aotx build --cpu host` (or an older --cpu such as x86-64-v2 or generic)",
            missing)


def check_hash(manifest: dict[str, Any], file: Path, where: Any) -> None:
    expected = manifest["hashes"].get(file.name)
    if expected is None:
        raise LoadError(f"{where}: manifest has no hash for {file.name}")
    try:
        actual = file_sha256(file)
    except OSError as e:
        raise LoadError(f"cannot read {file}: {e.strerror}") from None
    if actual != expected:
        raise LoadError(f"{file}: content hash does not match the manifest {where} "
                        f"(the file was modified or belongs to another build); rebuild it")
