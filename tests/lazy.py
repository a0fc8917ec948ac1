"""Module-level kernels compiled on first use, not when pytest collects the module.

``jit(fn, signature=...)`` compiles at construction. At the top of a test module that runs at
collection, and under ``pytest -n N`` every worker collects every module: each worker compiled
every such kernel before running its first test (about 30 s of CPU per worker for the suite's
module-level kernels), including the kernels of the modules whose tests ran on the other worker.

``lazy_jit`` takes the arguments of ``jit`` (or decorates like it) and makes the Kernel when it
is first called or asked for an attribute; the Kernel, and what the tests check with it, is the
same. Only for kernels that tests call directly: a compiled function calling a module-level
kernel needs the Kernel itself (the frontend recognises Kernels by their class).
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from compiler import Kernel, jit


class LazyKernel:
    """``jit(fn, **options)``, made on first use (once, also when threads race to it)."""

    def __init__(self, fn: Callable[..., Any], options: dict[str, Any]) -> None:
        self.__dict__.update(_fn=fn, _options=options, _kernel=None, _lock=threading.Lock())

    @property
    def kernel(self) -> Any:
        if self._kernel is None:
            with self._lock:
                if self._kernel is None:
                    self.__dict__["_kernel"] = jit(self._fn, **self._options)
        return self._kernel

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.kernel(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        # the Kernel's methods only: collection probes module attributes (pytestmark, fixture
        # markers, __wrapped__ ...), and an answer must not cost a compilation
        if name.startswith("_") or not hasattr(Kernel, name):
            raise AttributeError(name)
        return getattr(self.kernel, name)


def lazy_jit(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """``lazy_jit(f, signature=...)`` or ``@lazy_jit(signature=...)``: a LazyKernel."""
    if fn is None:
        return lambda f: LazyKernel(f, options)
    return LazyKernel(fn, options)
