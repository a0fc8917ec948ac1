"""IR-to-IR passes: vmap, jvp, vjp, simplify, canonicalize.

Importing the package installs the transform drivers for the rules of
region-carrying primitives (see compiler/primitives/regions.py).
"""
from __future__ import annotations

from compiler.primitives import regions
from compiler.transforms import jvp, vjp, vmap


class _Drivers:
    """The drivers of this package, as compiler.primitives.regions.Drivers."""

    vmap_block = staticmethod(vmap.vmap_block)
    jvp_block = staticmethod(jvp.jvp_block)
    vjp_block = staticmethod(vjp.vjp_block)
    clone_block = staticmethod(vmap.clone_block)

    @staticmethod
    def randomness() -> str:
        return vmap.CURRENT_RANDOMNESS.get()


regions.install(_Drivers())
