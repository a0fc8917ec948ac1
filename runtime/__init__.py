"""aotx runtime: load and call kernels built by ``aotx build``.

Needs only NumPy and the standard library: it never imports ``compiler`` or
llvmlite, so a built library runs where LLVM is not installed.

>>> import runtime
>>> lib = runtime.load("build/physics")      # doctest: +SKIP
>>> lib.step(x, w)                           # doctest: +SKIP

``runtime.seed(n)`` seeds the kernels that draw random numbers without a key (the
same state as ``compiler.random.seed``).
"""
from runtime.abi import ABI_VERSION
from runtime.library import Library, LibraryKernel, load
from runtime.manifest import CPUFeatureError, LoadError
from runtime.rng import seed
from runtime.version import __version__

__all__ = ["load", "Library", "LibraryKernel", "LoadError", "CPUFeatureError", "ABI_VERSION", "seed", "__version__"]
