"""Pickling a library loaded by ``runtime.load`` by value (docs/aot.md, "Pickling kernels").

``pickle.dumps(lib)`` (or of one of its kernels) carries the library's bytes and its
manifest, not its path: the receiving process writes them to a private temporary
directory, loads them with the same checks as ``runtime.load`` (ABI, CPU features,
hashes), and removes the directory when the library is no longer used. A process loads
the same library once however many times it is unpickled (a Dask task graph).
Only NumPy and the standard library are needed on the other side.
"""
from __future__ import annotations

import importlib
import json
import pickle
import shutil
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Any, Callable

from runtime import manifest as mf

#: the compiler's half of unpickling a Kernel (compiler/api/pickling.py), imported when a
#: pickled Kernel arrives: this package never imports the compiler itself
COMPILER_SIDE = "compiler.api.pickling"

#: libraries unpickled in this process, by the SHA-256 of their bytes
_LOADED: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
_LOCK = threading.Lock()


def reduce_library(path: Path, manifest: dict[str, Any], load: Callable[[Path], Any]) -> tuple[Any, ...]:
    """``Library.__reduce__``: the bytes of the library file (checked against the manifest,
    so a file changed since it was loaded is an error here, not a surprise there)."""
    json_path = path.with_name(path.stem + ".json")
    data = mf.check_hash(manifest, path, json_path)
    return restore_library, (load, manifest, data, path.stem)


def restore_library(load: Callable[[Path], Any], manifest: dict[str, Any], data: bytes,
                    stem: str) -> Any:
    digest = manifest["hashes"].get(manifest["library"], "")
    with _LOCK:
        library = _LOADED.get(digest)
        if library is not None:
            return library
        directory = Path(tempfile.mkdtemp(prefix="aotx-pickled-"))
        try:
            (directory / manifest["library"]).write_bytes(data)
            (directory / f"{stem}.json").write_text(json.dumps(manifest))
            library = load(directory / stem)
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        weakref.finalize(library, shutil.rmtree, directory, True)
        if digest:
            _LOADED[digest] = library
        return library


def restore_kernel(blob: bytes) -> Any:
    """Unpickle a compiled Kernel (``Kernel.__reduce__``): its state travels as one nested
    pickle, read only once the compiler is known to be importable here, so that a process
    without it gets this message rather than pickle's ModuleNotFoundError."""
    try:
        side = importlib.import_module(COMPILER_SIDE)
    except ImportError as e:
        raise pickle.UnpicklingError(
            "this pickled aotx Kernel needs the aotx compiler (and llvmlite) to load its compiled "
            f"code, and it cannot be imported here ({e}). Install aotx in this environment, or "
            "ship the kernel as a library: build it with `aotx build`, load it with "
            "runtime.load, and pickle that (it unpickles with NumPy alone; docs/aot.md)") from None
    return side.restore_state(blob)
