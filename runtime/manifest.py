"""The manifest of a built library (``MODULE.json``) and its checks.

Written by ``aotx build`` next to ``MODULE.so`` and ``MODULE.h``::

    {
      "format": "aotx-library",
      "abi_version": 3,                       # runtime.abi.ABI_VERSION of the builder
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
                   "random": false,                  # true: the call's key follows the symbols
                   "updates": [0],                   # inputs written in place: the last
                                                     # outputs are their new values, which the
                                                     # caller copies into them (x += y)
                   "contiguous": [],                 # of those, the ones that must be
                                                     # C-contiguous (written through a reshape)
                   "in_place": [0],                  # of those, the ones the kernel writes
                                                     # where they live: pass the input's
                                                     # pointer as its new value's output too
                   "errors": [{"error": "IndexError", "message": "...", "dims": ["n"],
                               "where": "physics.py:12"}],   # status 16 + i (runtime/abi.py)
                   "result": ...,                    # structure (runtime/trees.py)
                   "signature": "f64[n, 3], f64[3] -> f64[n]",
                   "source_sha256": "...", "object_sha256": "..."}],
      "hashes": {"physics.so": "<sha256>", "physics.h": "<sha256>"}
    }

:func:`read` parses and checks it (format, ABI version, architecture, CPU
features: a list of names this runtime knows); :func:`check_hash` checks a
file against it. The manifest is the library's description (its output types
size the buffers the kernels write), so it cannot be edited on its own: the
SHA-256 of its canonical content without "hashes" (:func:`manifest_sha256`:
the kernel table, the target, whatever the builder records) is linked into
the library as data, ``aotx-manifest-sha256:<hex>``, and :func:`check_library`
finds it in the library's bytes, before anything of the library runs, and
compares. Needs only the standard library.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from runtime import cpu
from runtime.abi import ABI_VERSION, COMPATIBLE_ABI_VERSIONS

FORMAT = "aotx-library"
EMBED_PREFIX = b"aotx-manifest-sha256:"
_EMBEDDED = re.compile(re.escape(EMBED_PREFIX) + rb"([0-9a-f]{64})")


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


def manifest_sha256(manifest: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the manifest without its "hashes" entry."""
    body = {k: v for k, v in manifest.items() if k != "hashes"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


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
    if abi not in COMPATIBLE_ABI_VERSIONS:
        raise LoadError(f"{path}: built for kernel ABI version {abi}, but this runtime speaks "
                        f"version {ABI_VERSION}; rebuild it with this aotx (`aotx build`)")
    for field, kind in (("library", str), ("kernels", list), ("target", dict), ("hashes", dict)):
        if not isinstance(manifest.get(field), kind):
            raise LoadError(f"{path}: manifest has no valid {field!r} entry")
    check_target(manifest["target"], path)
    return manifest


def check_target(target: dict[str, Any], where: Any) -> None:
    """Architecture and CPU features of a library's target against this machine."""
    features = target.get("features", [])
    if not isinstance(features, list) or not all(isinstance(f, str) for f in features):
        raise LoadError(f"{where}: the manifest's CPU features are not a list of names: {features!r:.80}")
    unknown = sorted(set(features) - cpu.DETECTABLE)
    if unknown:
        raise LoadError(f"{where}: the manifest names CPU features this runtime does not know: "
                        f"{', '.join(map(repr, unknown[:5]))}; a library built by aotx lists only "
                        f"features such as 'avx2' or 'sse4.2' (rebuild it with `aotx build`)")
    if not isinstance(target.get("triple", ""), str) or not isinstance(target.get("cpu", ""), str):
        raise LoadError(f"{where}: the manifest's target is malformed")
    arch = cpu.triple_arch(str(target.get("triple", "")))
    here = cpu.machine()
    if arch and arch != here:
        raise LoadError(f"{where}: built for {arch} ({target.get('triple')}), "
                        f"but this machine is {here}")
    missing = cpu.missing_features(features)
    if missing:
        name = target.get("cpu", "?")
        raise CPUFeatureError(
            f"{where}: built for CPU {name!r} with features this CPU lacks: {', '.join(missing)}; "
            f"rebuild with `aotx build --cpu host` (or an older --cpu such as x86-64-v2 or generic)",
            missing)


def check_hash(manifest: dict[str, Any], file: Path, where: Any) -> bytes:
    """The content of `file`, checked against its hash in the manifest."""
    expected = manifest["hashes"].get(file.name)
    if expected is None:
        raise LoadError(f"{where}: manifest has no hash for {file.name}")
    try:
        data = file.read_bytes()
    except OSError as e:
        raise LoadError(f"cannot read {file}: {e.strerror}") from None
    if hashlib.sha256(data).hexdigest() != expected:
        raise LoadError(f"{file}: content hash does not match the manifest {where} "
                        f"(the file was modified or belongs to another build); rebuild it")
    return data


def check_library(manifest: dict[str, Any], library: bytes, file: Path, where: Any) -> None:
    """The manifest's hash linked into the library (see the module docstring) against the
    manifest's content: an edited kernel table or target is refused."""
    found = set(_EMBEDDED.findall(library))
    if len(found) != 1:
        raise LoadError(f"{file}: no manifest hash in the library (built by an older aotx, or not by "
                        f"aotx); rebuild it with `aotx build`")
    if found.pop().decode() != manifest_sha256(manifest):
        raise LoadError(f"{where}: the manifest does not match {file.name} (its kernel table or target "
                        f"was edited, or it belongs to another build); rebuild with `aotx build` "
                        f"rather than editing the manifest")
