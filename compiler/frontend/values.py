"""What the staging interpreter's variables hold: static or staged values.

The frontend's one decision (STYLE.md point 14) is made per value:

* **Static**: any plain Python object known at compile time (ints, floats,
  shapes, dtypes, strings, functions, modules, NumPy arrays captured from
  closures...). Static values are represented *as themselves*: the stager
  computes with them in Python, so no wrapper is needed.
* **Staged**: an array whose value is only known when the kernel runs. A
  :class:`Staged` wraps the IR :class:`Value` that computes it, plus the
  NEP 50 ``weak`` flag (a Python scalar such as ``float(x)`` or a ``Weak``
  argument promotes like a Python number: f32 array * weak f64 -> f32).

Staged objects are mutable boxes, like NumPy arrays: ``y[1:3] = v`` replaces
``y.value`` by a functional update, so every name bound to the same object
sees the change, as in NumPy. ``origin`` and ``base`` record where an array
comes from: a view (``x[1:]``, ``x.T``, ``x.reshape(...)``) keeps the chain of
index-remapping ops (``path``) that reads it from its base, so that a write
through it is written back into the base (and from there into the argument
it may view: compiler/frontend/writes.py), and the other live views of the
base are read again from the updated base.
"""
from __future__ import annotations

import builtins
import weakref
from dataclasses import dataclass, field
from typing import Any

from compiler.errors import CompileError
from compiler.frontend.source import FunctionSource
from compiler.ir.core import Value
from compiler.ir.dims import DimExpr
from compiler.ir.types import BOOL, C128, F64, I64, TensorType

ARG, LOCAL, VIEW = "arg", "local", "view"


class Weak:
    """A dynamic Python scalar argument: a 0-d f64, i64, bool or c128 that promotes weakly."""

    __slots__ = ("type",)

    def __init__(self, type: TensorType) -> None:
        if type.shape != () or type.dtype not in (F64, I64, BOOL, C128):
            raise TypeError(f"Weak needs a 0-d f64, i64 or bool type (a Python float, int "
                            f"or bool), got {type}")
        self.type = type

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Weak) and other.type == self.type

    def __hash__(self) -> int:
        return hash(("Weak", self.type))

    def __repr__(self) -> str:
        return f"Weak({self.type})"


class Alias:
    """An array argument that is the same array as the dynamic argument number `index` (one
    array passed twice, ``f(a, a)``): staged as that argument's own Staged, so that a write
    through one name is seen through the other, as in NumPy."""

    __slots__ = ("index", "type")

    def __init__(self, index: int, type: TensorType) -> None:
        self.index, self.type = index, type

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Alias) and (other.index, other.type) == (self.index, self.type)

    def __hash__(self) -> int:
        return hash(("Alias", self.index, self.type))

    def __repr__(self) -> str:
        return f"Alias({self.index}, {self.type})"

    def __aotx_cache_key__(self) -> tuple:
        return ("alias", self.index, str(self.type))


class Strided:
    """An array argument that overlaps other array arguments without being the same array
    (``f(a[1:], a[:-1])``): staged as the view of a window of the caller's memory (a hidden
    1-d argument, `window`, of `size` elements) at element `offset` with element `strides`,
    so that a write through one argument is seen through the others, as in NumPy."""

    __slots__ = ("window", "size", "offset", "strides", "type")

    def __init__(self, window: int, size: int, offset: int, strides: tuple[int, ...],
                 type: TensorType) -> None:
        self.window, self.size, self.offset, self.strides, self.type = \
            window, size, offset, tuple(strides), type

    def _key(self) -> tuple:
        return (self.window, self.size, self.offset, self.strides, self.type)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Strided) and other._key() == self._key()

    def __hash__(self) -> int:
        return hash(("Strided", self._key()))

    def __repr__(self) -> str:
        return f"Strided({self.window}, {self.size}, {self.offset}, {self.strides}, {self.type})"

    def __aotx_cache_key__(self) -> tuple:
        return ("strided", self.window, self.size, self.offset, list(self.strides), str(self.type))


class Staged:
    """An array value computed at run time: an IR value plus Python-side facts."""

    __slots__ = ("value", "weak", "origin", "base", "views", "stale", "name", "path",
                 "readonly", "__weakref__")

    def __init__(self, value: Value, weak: bool = False, origin: str = LOCAL,
                 base: "Staged | None" = None, name: str = "", path: Any = None,
                 readonly: bool = False) -> None:
        self.value = value
        self.weak = weak and value.type.shape == ()
        self.origin = origin
        self.base = base              # the array this one is a view of
        # live views taken of this array (weak: a temporary x[i] is forgotten when dropped)
        self.views: list[weakref.ref[Staged]] = []
        self.stale = False            # a view whose base was written and that cannot be re-read
        self.name = name              # the argument name, for messages
        self.path = path              # the ops reading this view from base.value (None: unknown)
        self.readonly = readonly      # NumPy's view is read-only (np.broadcast_to, np.diagonal)
        if base is not None:
            base.views.append(weakref.ref(self))

    @property
    def type(self) -> TensorType:
        return self.value.type

    @property
    def shape(self) -> tuple[Any, ...]:
        return self.value.type.shape

    @property
    def dtype(self) -> Any:
        return self.value.type.dtype

    @property
    def ndim(self) -> int:
        return len(self.value.type.shape)

    def root(self) -> "Staged":
        """The array this one is (a view of a view of ...) a view of."""
        node = self
        while node.base is not None:
            node = node.base
        return node

    def live_views(self) -> "list[Staged]":
        """The views of this array still referenced somewhere (dead references dropped)."""
        out = [v for v in (r() for r in self.views) if v is not None]
        self.views = [weakref.ref(v) for v in out]
        return out

    def mark_written(self, keep: "set[int] | frozenset[int]" = frozenset()) -> None:
        """This array's value was replaced (by a data-dependent if or a loop): its views,
        except those in `keep` (ids of objects given their own new value alongside), no
        longer match NumPy."""
        for v in self.live_views():
            if id(v) not in keep:
                v.stale = True
            v.mark_written(keep)

    def __bool__(self) -> bool:
        raise TypeError("internal: truth value of a staged array requested in Python")

    def __repr__(self) -> str:
        return f"<staged {self.type}{' weak' if self.weak else ''}>"


class Selection:
    """``x[mask]`` for a run-time boolean mask: the array (``values``, a snapshot of x) and
    the mask broadcast to its shape. Its shape depends on data, so it is accepted only where
    the result's shape does not (reductions, arithmetic with scalars, assignment through the
    same mask: compiler/frontend/masked.py); anywhere else it is a DynamicShapeError."""

    __slots__ = ("values", "mask")

    def __init__(self, values: Staged, mask: Staged) -> None:
        self.values, self.mask = values, mask

    def __repr__(self) -> str:
        return f"<selection of {self.values.type}>"


def is_staged(x: Any) -> bool:
    return isinstance(x, Staged)


def is_dim(x: Any) -> bool:
    """A symbolic dimension used as a Python int (from ``x.shape`` of a symbolic type)."""
    return isinstance(x, DimExpr)


@dataclass
class Undefined:
    """A name that has no value on every path (defined in one branch only, or in a loop)."""

    name: str
    reason: str
    sample: Any = None      # the value on a path that defines it (its type, for loop carries)


@dataclass
class BoundMethod:
    """``x.sum`` before it is called: an ndarray method bound to a staged array."""

    self_value: Any
    name: str


@dataclass
class Closure:
    """A function defined inside staged code (``def`` or ``lambda``), with its scope."""

    node: Any                  # ast.FunctionDef | ast.Lambda
    frame: Any                 # the defining Frame (free names are looked up there, late)
    source: Any                # FunctionSource the node belongs to
    defaults: list[Any] = field(default_factory=list)
    kw_defaults: list[Any] = field(default_factory=list)

    @property
    def __name__(self) -> str:  # noqa: D401 - reads like the function attribute
        return getattr(self.node, "name", "<lambda>")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"{self.__name__} is staged code: it can only be called from staged code")


class Reject(Exception):
    """A user error found below the visitor; the stager adds the location of its node."""

    def __init__(self, cls: type, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.cls = cls
        self.message = message
        self.hint = hint


class ReturnSignal(Exception):
    """``return`` unwinding to the function being inlined."""

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value


class BreakSignal(Exception):
    """``break`` unwinding to the innermost static loop."""


class ContinueSignal(Exception):
    """``continue`` unwinding to the innermost static loop."""


@dataclass
class Scope:
    """One function activation: its variables and where free names come from."""

    env: dict[str, Any]
    globals: dict[str, Any]
    source: FunctionSource
    name: str
    locals: frozenset[str] = frozenset()
    closure: dict[str, Any] = field(default_factory=dict)   # free name -> cell
    parent: "Scope | None" = None                            # enclosing staged scope

    def lookup(self, name: str) -> Any:
        if name in self.env:
            return self.env[name]
        if name in self.locals:
            raise Reject(CompileError, f"local variable '{name}' referenced before assignment")
        if self.parent is not None:
            return self.parent.lookup(name)
        if name in self.closure:
            try:
                return self.closure[name].cell_contents
            except ValueError:
                raise Reject(CompileError, f"free variable '{name}' referenced before assignment "
                             "in enclosing scope") from None
        if name in self.globals:
            return self.globals[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise Reject(CompileError, f"name '{name}' is not defined")


def hashable(x: Any) -> bool:
    """Whether `x` can be looked up in a dict or set (a function table) at all."""
    try:
        hash(x)
    except TypeError:
        return False
    return True
