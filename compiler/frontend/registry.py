"""The calls the frontend stages with handlers from above, without importing the frontend.

A layer above the frontend (``compiler.cond``, ``compiler.random``, the api's ``jit`` and
``grad`` called inside compiled code) lets the frontend stage calls to its own functions with
:func:`register_function`. A module that is imported only when it is first needed (``import
compiler`` leaves the compile machinery unloaded until the first compile: docs/internals.md)
names, with :func:`before_staging`, a function that registers its handlers; :func:`stage` runs
those functions once, before it stages anything.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

# external handlers registered by other packages (compiler.cond, compiler.random, ...):
# fn -> handler(stager, *args, **kwargs)
EXTERNAL: dict[Any, Callable[..., Any]] = {}

_PENDING: list[Callable[[], None]] = []
_LOCK = threading.RLock()


def register_function(fn: Any, handler: Callable[..., Any]) -> None:
    """Let another part of the compiler stage calls to `fn` itself."""
    EXTERNAL[fn] = handler


def before_staging(register: Callable[[], None]) -> None:
    """Run `register` (which calls :func:`register_function`) before the next staging."""
    with _LOCK:
        _PENDING.append(register)


def register_pending() -> None:
    """Run the registrations named with :func:`before_staging` (the frontend's ``stage``)."""
    if not _PENDING:
        return
    with _LOCK:
        while _PENDING:
            _PENDING[0]()          # popped once done: another thread waits on the lock meanwhile
            _PENDING.pop(0)
