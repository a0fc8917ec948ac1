"""The aotx version: defined once, in runtime/version.py (the layer below), and read
here by the package, cache keys, and built headers and manifests."""
from runtime.version import __version__

__all__ = ["__version__"]
