"""Every AOTX_* knob in one table (docs/debugging.md mirrors it).

| variable             | meaning                                                         |
|----------------------|-----------------------------------------------------------------|
| AOTX_DEBUG=1..5      | 1 stage timings (logger aotx), 3 IR after every stage           |
| AOTX_PRINT_AFTER=a,b | print the IR after the named stages (frontend, simplify, ...)   |
| AOTX_VERIFY=1        | run the IR verifier after every stage (on in the test suite)    |
| AOTX_FRONTEND_DEBUG=1| internal errors of any stage raised as they are; compile errors  |
|                      | keep the compiler's frames in their traceback                   |
| AOTX_CACHE_DIR=path  | on-disk kernel cache (default: the user cache dir + /aotx)      |
| AOTX_DISABLE_CACHE=1 | neither read nor write the on-disk kernel cache                 |
| AOTX_BOUNDSCHECK=1   | run-time indices out of range raise IndexError (default: clamp) |
| AOTX_BLAS=none|path  | BLAS/LAPACK provider (read by runtime/blas.py; default: NumPy's) |
| AOTX_BLAS_SYMBOLS=p  | its routine names, e.g. {}_64_ (runtime/blas.py)                 |
| AOTX_WORKSPACE_LIMIT | bytes of temporaries a kernel keeps between calls (default 64M,  |
|                      | 0: none; read by runtime/workspace.py when a kernel loads)       |
| AOTX_NUM_THREADS=n   | threads of a parallel=True kernel's split calls (default: the    |
|                      | CPU affinity mask; read by the kernel's entry on each split call) |
"""
from __future__ import annotations

import contextlib
import contextvars
import os
from typing import Any, Iterator

_overrides: dict[str, Any] = {}
_boundscheck: contextvars.ContextVar[bool | None] = contextvars.ContextVar("aotx_boundscheck", default=None)


def _get(name: str, default: str = "") -> str:
    if name in _overrides:
        return str(_overrides[name])
    return os.environ.get(name, default)


def debug_level() -> int:
    value = _get("AOTX_DEBUG", "0")
    return int(value) if value.isdigit() else 0


def print_after() -> frozenset[str]:
    return frozenset(s.strip() for s in _get("AOTX_PRINT_AFTER").split(",") if s.strip())


def verify_enabled() -> bool:
    return _get("AOTX_VERIFY", "0") not in ("", "0")


def frontend_debug() -> bool:
    return _get("AOTX_FRONTEND_DEBUG", "0") not in ("", "0")


def cache_disabled() -> bool:
    return _get("AOTX_DISABLE_CACHE", "0") not in ("", "0")


def boundscheck() -> bool:
    """Do run-time indices raise IndexError when out of range (instead of clamping)? The
    ``boundscheck=`` of the kernel being staged, else AOTX_BOUNDSCHECK."""
    on = _boundscheck.get()
    if on is not None:
        return on
    return _get("AOTX_BOUNDSCHECK", "0") not in ("", "0")


@contextlib.contextmanager
def boundscheck_scope(on: bool | None) -> Iterator[None]:
    """Stage with bounds checks on or off (None: keep the enclosing setting)."""
    if on is None:
        yield
        return
    token = _boundscheck.set(bool(on))
    try:
        yield
    finally:
        _boundscheck.reset(token)


@contextlib.contextmanager
def options(**kwargs: Any) -> Iterator[None]:
    """Temporarily set knobs: ``with options(AOTX_PRINT_AFTER="simplify"): ...``."""
    saved = dict(_overrides)
    _overrides.update(kwargs)
    try:
        yield
    finally:
        _overrides.clear()
        _overrides.update(saved)
