"""The frontend: a plain NumPy-style Python function -> an IR :class:`Function`.

:func:`stage` (staging.py) is the entry point the api layer calls. Arguments are pytrees
whose leaves are :class:`TensorType` (a dynamic array: a block argument of
the function), :class:`Weak` (a dynamic Python scalar) or any other object
(static: a compile-time constant). The function's source is parsed and run
by the staging interpreter (:mod:`stager`), which evaluates static values
in Python and emits IR for everything else; the result is verified.

The package itself imports nothing: the staging interpreter and the NumPy API tables (and
with them every primitive) load with :mod:`staging`, on the first use of ``stage``, so that
the modules a cache hit needs (pytrees.py, values.py, source.py) import without them.

>>> from compiler.ir.types import parse_type
>>> def f(x, w):
...     return np.tanh(x @ w).sum(axis=0)
>>> prog = stage(f, (parse_type("f64[n, 3]"), parse_type("f64[3, 2]")), {})  # doctest: +SKIP
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from compiler.frontend.values import Weak

if TYPE_CHECKING:
    from compiler.frontend.staging import StagedProgram, stage

__all__ = ["StagedProgram", "stage", "Weak"]


def __getattr__(name: str) -> Any:
    if name in ("stage", "StagedProgram"):
        from compiler.frontend import staging       # deferred: DEFERRED_IMPORTS
        return getattr(staging, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
