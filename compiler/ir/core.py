"""The IR in one screen: values, ops, blocks (regions) and functions.

SSA: every :class:`Value` is defined once, by an :class:`Op` result or as a
:class:`Block` argument. Structured control flow (``cond``, ``while``) is an op
whose regions are blocks; regions are *isolated*: a region sees only its own
block arguments and what it defines, so transforms never chase free variables.
Every op carries the user's :class:`SourceLoc`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from compiler.errors import UNKNOWN_LOC, SourceLoc
from compiler.ir.primitive import Primitive
from compiler.ir.types import TensorType

__all__ = ["UNKNOWN_LOC", "Block", "Function", "Op", "Primitive", "SourceLoc", "Value"]




class Value:
    """An SSA value: the result of an op, or an argument of a block."""

    __slots__ = ("type", "op", "index", "hint")

    def __init__(self, type: TensorType, op: "Op | None" = None, index: int = 0,
                 hint: str = "") -> None:
        self.type = type
        self.op = op          # the defining op; None for block arguments
        self.index = index    # which result of `op`
        self.hint = hint      # a readable name for the printer (e.g. the user's variable)

    @property
    def shape(self) -> tuple:
        return self.type.shape

    @property
    def dtype(self):
        return self.type.dtype

    @property
    def ndim(self) -> int:
        return self.type.ndim

    def __repr__(self) -> str:
        what = self.op.prim.name if self.op is not None else "arg"
        return f"<Value {self.hint or what}: {self.type}>"


class Op:
    """One primitive applied to operands, with static params and optional regions."""

    __slots__ = ("prim", "operands", "params", "results", "regions", "loc")

    def __init__(self, prim: "Primitive", operands: tuple[Value, ...], params: dict[str, Any],
                 result_types: tuple[TensorType, ...], regions: tuple["Block", ...],
                 loc: SourceLoc) -> None:
        self.prim = prim
        self.operands = tuple(operands)
        self.params = dict(params)
        self.regions = tuple(regions)
        self.loc = loc
        self.results = tuple(Value(t, self, i) for i, t in enumerate(result_types))

    @property
    def result(self) -> Value:
        if len(self.results) != 1:
            raise ValueError(f"{self.prim.name} has {len(self.results)} results")
        return self.results[0]

    def __repr__(self) -> str:
        return f"<Op {self.prim.name} at {self.loc}>"


@dataclass(eq=False)
class Block:
    """A straight-line list of ops with arguments and yielded results."""

    args: list[Value] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    results: list[Value] = field(default_factory=list)

    def walk(self) -> Iterator[Op]:
        """Every op of this block and of nested regions, in program order."""
        for op in self.ops:
            yield op
            for region in op.regions:
                yield from region.walk()


@dataclass(eq=False)
class Function:
    """A compiled unit: a block whose arguments are the inputs and results the outputs."""

    name: str
    body: Block
    arg_names: list[str] = field(default_factory=list)

    @property
    def args(self) -> list[Value]:
        return self.body.args

    @property
    def results(self) -> list[Value]:
        return self.body.results

    @property
    def in_types(self) -> list[TensorType]:
        return [a.type for a in self.body.args]

    @property
    def out_types(self) -> list[TensorType]:
        return [r.type for r in self.body.results]

    def __str__(self) -> str:
        return FORMAT[0](self)


#: the printer (compiler/ir/printer.py, which reads this module) installs itself here so that
#: ``str(fn)`` prints the IR text
FORMAT: list[Any] = [lambda fn: f"<Function {fn.name}>"]
