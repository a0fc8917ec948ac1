"""Every AOTX_* knob in one table (docs/debugging.md mirrors it).

| variable             | meaning                                                         |
|----------------------|-----------------------------------------------------------------|
| AOTX_DEBUG=1..5      | 1 stage timings, 3 IR after every stage                         |
| AOTX_PRINT_AFTER=a,b | print the IR after the named stages (frontend, simplify, ...)   |
| AOTX_VERIFY=1        | run the IR verifier after every stage (on in the test suite)    |
| AOTX_FRONTEND_DEBUG=1| internal errors of any stage raised as they are; compile errors  |
|                      | keep the compiler's frames in their traceback                   |
| AOTX_CACHE_DIR=path  | on-disk kernel cache (default: the user cache dir + /aotx)      |
| AOTX_DISABLE_CACHE=1 | neither read nor write the on-disk kernel cache                 |
"""
from __future__ import annotations

import contextlib
import os
from typing import Any, Iterator

_overrides: dict[str, Any] = {}


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
