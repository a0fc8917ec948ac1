"""The aotx version, in one place: the package, cache keys, and built headers and manifests read it."""

__version__ = "0.1.0"
