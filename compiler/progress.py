"""Compile progress through Python's ``logging``: the logger named ``aotx``.

What a compile logs (docs/debugging.md, "Compile progress and logging"):

* with ``AOTX_DEBUG=1`` (or higher): a DEBUG record when a compile starts, one per stage
  as it finishes (``frontend: 58.04 ms``, then ``vmap``, ``canonicalize``, ...,
  ``optimize``, ``emit``), and an INFO record summing the compile up by phase. These
  records are emitted whatever the levels of the loggers (AOTX_DEBUG asked for them),
  and shown on stderr as ``[aotx] ...`` lines unless a handler of the root logger
  already writes to stderr (``logging.basicConfig()``): then they appear once, in the
  application's format. Other handlers (a file, a notebook's) get them too.
* without it: only a compile that takes longer than :data:`SLOW_SECONDS` logs, one INFO
  record with the same summary, through the logger's ordinary level checks, so it shows
  wherever the application shows INFO records (``logging.basicConfig(level=logging.INFO)``)
  and nowhere by default.

``pipeline.run`` reports every stage with :func:`stage_done`; a compile is the block of
:func:`compiling` around the stages it runs (``Specialization`` in compiler/api/kernel.py).
Stages run outside such a block (``aotx build``'s own stages) are logged alone.

``logging`` itself is imported with the first record (most processes log none: it would
cost ~1.5 ms of every ``import compiler``; docs/internals.md, "Import time").
"""
from __future__ import annotations

import contextlib
import functools
import sys
import threading
import time
from typing import TYPE_CHECKING, Iterator

from compiler import config

if TYPE_CHECKING:
    import logging

DEBUG, INFO = 10, 20                 # logging.DEBUG, logging.INFO

#: a compile longer than this (seconds) logs its summary at INFO without AOTX_DEBUG
SLOW_SECONDS = 1.0


class Compile:
    """One compile in progress or done: what it compiles, its stages' times, its total."""

    __slots__ = ("what", "start", "stages", "seconds", "done")

    def __init__(self, what: str, stages: list[tuple[str, float]] | None = None,
                 seconds: float = 0.0) -> None:
        self.what, self.start = what, time.perf_counter()
        self.stages: list[tuple[str, float]] = stages if stages is not None else []
        self.seconds = seconds
        self.done = "compiled"           # what the summary says happened ("staged" for aotx build)

    def summary(self) -> str:
        """``compiled f(f64[8]) in 1.52 s: frontend 0.06 s, ..., optimize 1.2 s`` (stages of the
        same name added up, in the order they first ran)."""
        totals: dict[str, list[float]] = {}
        for name, seconds in self.stages:
            entry = totals.setdefault(name, [0.0, 0])
            entry[0] += seconds
            entry[1] += 1
        parts = [f"{name} {_duration(t)}" + (f" ({int(n)}x)" if n > 1 else "")
                 for name, (t, n) in totals.items()]
        return f"{self.done} {self.what} in {_duration(self.seconds)}" + (": " + ", ".join(parts) if parts else "")


@functools.cache
def _logger() -> logging.Logger:
    """The logger ``aotx`` (logging imported now: the first record of the process)."""
    import logging
    return logging.getLogger("aotx")


@functools.cache
def _fallback() -> logging.Handler:
    import logging
    logger = _logger()

    class _StderrFallback(logging.StreamHandler):
        """AOTX_DEBUG's records on the current ``sys.stderr`` (looked up per record), unless a
        handler of the root logger or of ``aotx`` writes to stderr already (no line twice)."""

        def __init__(self) -> None:
            super().__init__(sys.stderr)
            self.setFormatter(logging.Formatter("[aotx] %(message)s"))

        def emit(self, record: logging.LogRecord) -> None:
            if config.debug_level() < 1:       # the INFO line of a slow compile: the application's handlers
                return
            streams = (sys.stderr, sys.__stderr__)
            others = [h for h in logging.getLogger().handlers + logger.handlers if h is not self]
            if any(isinstance(h, logging.StreamHandler) and h.stream in streams for h in others):
                return
            self.stream = sys.stderr
            super().emit(record)

    return _StderrFallback()


_local = threading.local()


def _active() -> list[Compile]:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def _emit(level: int, message: str) -> None:
    logger = _logger()
    if config.debug_level() >= 1:
        fallback = _fallback()
        if fallback not in logger.handlers:
            logger.addHandler(fallback)
        record = logger.makeRecord(logger.name, level, __file__, 0, message, (), None)
        logger.handle(record)          # asked for with AOTX_DEBUG: the loggers' levels do not filter
    elif logger.isEnabledFor(level):
        logger.log(level, message)


def stage_done(name: str, seconds: float) -> None:
    """A stage of the pipeline finished (called by ``pipeline.run`` for every stage)."""
    stack = _active()
    if stack:
        stack[-1].stages.append((name, seconds))
    if config.debug_level() >= 1:
        _emit(DEBUG, f"{name}: {1e3 * seconds:.2f} ms")


def note(message: str) -> None:
    """A DEBUG record at AOTX_DEBUG=1 (a cache hit, a build step)."""
    if config.debug_level() >= 1:
        _emit(DEBUG, message)


@contextlib.contextmanager
def compiling(what: str) -> Iterator[Compile]:
    """The block of one compile of `what` (``name(types)``): its stages are collected, and
    at the end its summary is logged (at INFO: with AOTX_DEBUG, or when it took longer than
    SLOW_SECONDS). The yielded record holds the total time afterwards."""
    record = Compile(what)
    note(f"compiling {what}")
    stack = _active()
    stack.append(record)
    try:
        yield record
    finally:
        stack.pop()
        record.seconds = time.perf_counter() - record.start
        if stack:                          # a compile inside a compile: part of the outer one's time
            stack[-1].stages.extend(record.stages)
    if config.debug_level() >= 1 or record.seconds > SLOW_SECONDS:
        _emit(INFO, record.summary())


def _duration(seconds: float) -> str:
    return f"{1e3 * seconds:.0f} ms" if seconds < 1.0 else f"{seconds:.2f} s"
