"""The BLAS/LAPACK provider: the addresses of library routines that generated code calls.

A kernel that may call a library routine (``dgemm`` for a large product, a LAPACK
factorization) holds one pointer per routine, an exported global
``<kernel symbol>__<routine>`` that is NULL until the loader fills it; while it is NULL the
kernel runs its generated code instead (correct, slower). This module finds the routines
with NumPy and the standard library only, so that ``runtime.load`` of a built library and
the JIT fill the same pointers the same way (docs/linalg.md, "BLAS and LAPACK").

Where the routines come from (``provider()``, once per process):

* ``AOTX_BLAS`` unset or ``auto``: the OpenBLAS that NumPy's wheel bundles
  (``numpy.libs/libscipy_openblas64_*.so`` on Linux, ``numpy/.dylibs`` on macOS,
  ``numpy.libs/*.dll`` on Windows), whose routines are named ``scipy_dgemm_64_``;
* ``AOTX_BLAS=none`` (or ``off``, ``0``): no provider, every kernel runs generated code;
* ``AOTX_BLAS=/path/to/libblas.so``: that library; ``AOTX_BLAS_SYMBOLS`` gives its naming
  pattern (``{}_64_`` for ``dgemm_64_``), else the usual ILP64 patterns are tried.

Only ILP64 libraries (64-bit integer arguments) are supported: generated code passes every
integer as int64. A library exporting none of the patterns is no provider.
"""
from __future__ import annotations

import ctypes
import os
import re
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

#: how ILP64 builds name the Fortran routines (tried in order when AOTX_BLAS_SYMBOLS is unset)
PATTERNS = ("scipy_{}_64_", "{}_64_", "{}_64", "{}64_")
_OFF = ("none", "off", "0", "false", "no")
_NAME = re.compile(r"[a-z][a-z0-9_]*")


@dataclass
class Provider:
    """A loaded library and how its routines are named."""

    path: str
    pattern: str
    _lib: ctypes.CDLL = field(repr=False)
    _addresses: dict[str, int] = field(default_factory=dict, repr=False)

    def address(self, routine: str) -> int:
        """The address of `routine` (``"dgemm"``), 0 when the library lacks it."""
        if routine not in self._addresses:
            fn = getattr(self._lib, self.pattern.format(routine), None) if _NAME.fullmatch(routine) else None
            self._addresses[routine] = (ctypes.cast(fn, ctypes.c_void_p).value or 0) if fn is not None else 0
        return self._addresses[routine]


_lock = threading.Lock()
_cached: list[Provider | None] = []        # [] until resolved; [None]: no provider


def provider() -> Provider | None:
    """This process's provider (resolved once; ``reset()`` forgets it)."""
    with _lock:
        if not _cached:
            _cached.append(_resolve())
        return _cached[0]


def reset() -> None:
    """Resolve the provider again on next use (after changing AOTX_BLAS). Kernels loaded
    before keep the pointers they were given."""
    with _lock:
        _cached.clear()


def describe() -> str:
    """One line: where the routines come from (for benchmarks and bug reports)."""
    p = provider()
    return "none (generated code only)" if p is None else f"{p.path} ({p.pattern.format('dgemm')})"


def _resolve() -> Provider | None:
    choice = os.environ.get("AOTX_BLAS", "").strip()
    if choice.lower() in _OFF:
        return None
    if choice and choice.lower() != "auto":
        candidates = [Path(choice)]
    else:
        candidates = numpy_libraries()
    patterns = [os.environ["AOTX_BLAS_SYMBOLS"]] if os.environ.get("AOTX_BLAS_SYMBOLS") else PATTERNS
    for path in candidates:
        try:
            lib = ctypes.CDLL(str(path))
        except OSError:
            continue
        for pattern in patterns:
            if "{}" in pattern and getattr(lib, pattern.format("dgemm"), None) is not None:
                return Provider(str(path), pattern, lib)
    return None


def numpy_libraries() -> list[Path]:
    """The BLAS libraries NumPy's wheel ships next to itself (OpenBLAS first)."""
    root = Path(np.__file__).resolve().parent
    dirs = [root.parent / "numpy.libs", root / ".dylibs", root.parent / "numpy" / ".libs"]
    suffix = ".dll" if sys.platform == "win32" else ".dylib" if sys.platform == "darwin" else ".so"
    found: list[Path] = []
    for d in dirs:
        if d.is_dir():
            found += sorted(p for p in d.iterdir() if "openblas" in p.name.lower()
                            and (p.name.endswith(suffix) or f"{suffix}." in p.name))
    return found


def fill(routines: Sequence[str], slot_address: Callable[[str], int]) -> int:
    """Point each routine's slot at the provider's routine (NULL when there is none, or the
    library lacks it); `slot_address(routine)` is where the slot lives (0: the kernel has
    none). Returns how many slots were filled."""
    if not routines:                       # most kernels: no provider looked up
        return 0
    p = provider()
    filled = 0
    for routine in routines:
        where = slot_address(routine)
        if not where:
            continue
        addr = p.address(routine) if p is not None else 0
        ctypes.c_void_p.from_address(where).value = addr or None
        filled += bool(addr)
    return filled


def slot_symbol(kernel_symbol: str, routine: str) -> str:
    """The exported name of a kernel's pointer to `routine` (also in the C header)."""
    return f"{kernel_symbol}__{routine}"

