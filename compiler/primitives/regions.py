"""The transform drivers, as the rules of region-carrying primitives see them.

A ``cond``'s batching rule batches its branches with the very driver that is
batching the ``cond``; the same holds for jvp and vjp of control flow, for
``compiler.Function``'s rules and for batching rules written as a decomposition.
The drivers are IR-to-IR passes in compiler/transforms/, one layer up: they
install themselves here when their package is imported, and a rule only ever
runs inside one of them, so the drivers are always installed by then. This is
the one dependency that runs against the layers, and it runs through this typed
interface rather than an import.
"""
from __future__ import annotations

from typing import Protocol, Sequence

from compiler.ir.core import Block
from compiler.ir.dims import Dim


class Drivers(Protocol):
    """What compiler/transforms provides to rules (see the functions of the same names there)."""

    def vmap_block(self, block: Block, in_bdims: Sequence[int | None], size: Dim,
                   out_bdims: Sequence[int | None] | None = None) -> tuple[Block, list[int | None]]: ...

    def jvp_block(self, block: Block, active: Sequence[bool]) -> tuple[Block, list[bool]]: ...

    def vjp_block(self, block: Block, active: Sequence[bool], with_primals: bool = True) -> Block: ...

    def clone_block(self, block: Block) -> Block: ...

    def randomness(self) -> str: ...


_installed: list[Drivers] = []


def install(drivers: Drivers) -> None:
    """Called once by compiler/transforms/__init__.py."""
    _installed[:] = [drivers]


def drivers() -> Drivers:
    if not _installed:
        raise AssertionError("the transform drivers are not installed: import compiler.transforms")
    return _installed[0]


