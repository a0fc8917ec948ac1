"""The aotx version, in one place: the packaging metadata (pyproject.toml reads it),
``runtime.__version__``, ``compiler.__version__``, cache keys, and built headers and
manifests. It lives in the runtime, the layer below the compiler, so that a runtime
shipped without the compiler (docs/aot.md, "Deploying") knows its version too."""

__version__ = "0.1.0"
