"""``runtime.load``: a library built by ``aotx build``, callable from Python
with NumPy and the standard library only (no compiler, no LLVM).

>>> lib = runtime.load("build/physics")          # doctest: +SKIP
>>> lib.step(x, w)                                # same checks as Kernel
"""
from __future__ import annotations

import ctypes
import functools
import inspect
import weakref
from pathlib import Path
from typing import Any, Callable

import numpy as np

from runtime import blas, loader, pickling, workspace
from runtime import manifest as mf
from runtime import trees
from runtime.abi import ArgSpec, ErrorSite, is_symbol, kernel_error
from runtime.loader import NativeKernel, bind_symbols


class _Checked:
    """The Python path of a library kernel (it holds the kernel weakly; the kernel holds it):
    from the second call on it installs the kernel's native entry, when there is one."""

    __slots__ = ("kernel",)

    def __init__(self, kernel: "LibraryKernel") -> None:
        self.kernel = weakref.ref(kernel)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        k = self.kernel()
        if k is None:
            raise ReferenceError("the kernel of this call is gone")
        k._calls += 1
        if k._calls == 2:                         # called again: the native entry from now on
            k._entry = _native_entry(k)
            if k._entry is not None:
                k.__call__ = k._entry
        return k._checked(*args, **kwargs)


class LibraryKernel:
    """One kernel of a built library: validates arguments exactly as ``Kernel`` does
    (dtype by safe casting, rank, sizes, symbolic dims agreeing, contiguity by copying),
    allocates the outputs and returns them in the function's result structure."""

    # calling it calls the `__call__` instance slot (no Python frame): `_Checked`, then the
    # native entry when the compiler has installed ``loader.entry_maker`` (it falls back to
    # `_checked` for arguments it does not take)
    __slots__ = ("__call__", "__dict__", "__weakref__")
    __call__: Callable[..., Any]

    def __init__(self, info: dict[str, Any], address: int, library: "Library") -> None:
        ins = [ArgSpec.from_json(a) for a in info["inputs"]]
        outs = [ArgSpec.from_json(a) for a in info["outputs"]]
        self.__name__ = info["name"]
        self.signature = info.get("signature")
        self.symbol = info["symbol"]
        self.native = NativeKernel(info["name"], address, ins, outs, info.get("symbols", []),
                                   keepalive=library,
                                   errors=[ErrorSite.from_json(e) for e in info.get("errors", [])],
                                   random=info.get("random", False) is True,
                                   updates=_updates(info.get("updates", []), len(ins), len(outs)),
                                   contiguous=_contiguous(info.get("contiguous", []), info.get("updates", [])),
                                   in_place=_in_place(info.get("in_place", []), info.get("updates", [])))
        self.library_filled = 0      # how many of its BLAS/LAPACK pointers were set at load
        self._result = info.get("result", {"tuple": [trees.LEAF] * (len(outs) - len(self.native.updates))})
        self.__signature__ = inspect.Signature(
            [inspect.Parameter(a.name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for a in ins])
        self.__doc__ = f"{self.__name__}({self.signature}) from {library.path.name}"
        self._entry: Any = None          # the native entry (_native_entry), from the second call
        self._calls = 0
        self._dispatch = _Checked(self)
        self.__call__ = self._dispatch

    @property
    def address(self) -> int:
        """Address of the C entry point (see docs/abi.md)."""
        return self.native.address

    def _checked(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            try:
                args = tuple(self.__signature__.bind(*args, **kwargs).args)
            except TypeError as e:
                raise TypeError(f"{self.__name__}(): {e}") from None
        outs = self.native(*args)
        return trees.unflatten(self._result, [o[()] if o.ndim == 0 else o for o in outs])

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled by value with its library (runtime/pickling.py)."""
        return getattr, (self.native._keepalive, self.__name__)

    def __repr__(self) -> str:
        return f"<aotx kernel {self.__name__}({self.signature})>"


def _native_entry(kernel: LibraryKernel) -> Any:
    """The native entry of a library kernel (``loader.entry_maker``), or None: every argument
    an array, dims sizes or symbols, no random key."""
    native, make = kernel.native, loader.entry_maker
    if make is None or native.random or not all(
            isinstance(d, int) and d >= 0 or is_symbol(d)
            for s in native.inputs + native.outputs for d in s.dims):
        return None
    result, n_results = kernel._result, len(native.outputs) - len(native.updates)
    names, specs = [s.name for s in native.inputs], list(native.inputs)
    ref = weakref.ref(kernel)

    def fallback(*args: Any, **kwargs: Any) -> Any:
        k = ref()
        if k is None:
            raise ReferenceError(f"{native.name}: the kernel of this entry is gone")
        return k._checked(*args, **kwargs)

    def on_error(status: int, *args: Any) -> Any:
        env = bind_symbols(names, [np.asarray(a) for a in args], specs) if native.symbols else {}
        raise kernel_error(native.name, status, native.errors, env)

    def wrap(*outs: np.ndarray) -> Any:
        return trees.unflatten(result, [o[()] if o.ndim == 0 else o for o in outs])
    return make(native.address, [(0, s.dtype, tuple(s.dims)) for s in native.inputs],
                [(s.dtype, tuple(s.dims)) for s in native.outputs], fallback=fallback,
                on_error=on_error, wrap=None if result == trees.LEAF and n_results == 1
                or result is None and n_results == 0 else wrap,
                keepalive=native._keepalive, symbols=native.symbols, updates=native.updates,
                in_place=native.in_place)


def _routines(value: Any) -> list[str]:
    """The manifest's "routines" (BLAS/LAPACK routines the kernel may call), checked."""
    if not isinstance(value, list) or not all(isinstance(r, str) and r.isidentifier() for r in value):
        raise ValueError(f"bad \"routines\" {value!r}")
    return value


def _slot(handle: ctypes.CDLL, symbol: str, routine: str) -> int:
    """The address of kernel `symbol`'s pointer to `routine` (0 if the library lacks it)."""
    try:
        return ctypes.addressof(ctypes.c_void_p.in_dll(handle, blas.slot_symbol(symbol, routine)))
    except ValueError:
        return 0


def _function(handle: ctypes.CDLL, name: str) -> int:
    """The address of the library's exported function `name` (0 if it has none)."""
    try:
        return ctypes.cast(getattr(handle, name), ctypes.c_void_p).value or 0
    except AttributeError:
        return 0


def _updates(value: Any, n_inputs: int, n_outputs: int) -> list[int]:
    """The manifest's "updates" (inputs written in place), checked."""
    if not isinstance(value, list) or len(value) > n_outputs or len(set(value)) != len(value) \
            or not all(type(i) is int and 0 <= i < n_inputs for i in value):
        raise ValueError(f"bad \"updates\" {value!r}")
    return value


def _contiguous(value: Any, updates: list[int]) -> list[int]:
    """The manifest's "contiguous" (updated inputs written through a reshape), checked."""
    if not isinstance(value, list) or not set(value) <= set(updates):
        raise ValueError(f"bad \"contiguous\" {value!r}")
    return value


def _in_place(value: Any, updates: list[int]) -> list[int]:
    """The manifest's "in_place" (updated inputs the kernel writes where they live: passed as
    their new value's output too), checked."""
    if not isinstance(value, list) or not all(type(i) is int for i in value) \
            or not set(value) <= set(updates):
        raise ValueError(f"bad \"in_place\" {value!r}")
    return value


class Library:
    """A loaded library: its kernels are attributes (and ``lib.kernels`` by name)."""

    def __init__(self, path: Path, manifest: dict[str, Any], handle: ctypes.CDLL) -> None:
        self.path = path
        self.manifest = manifest
        self._handle = handle
        self.kernels: dict[str, LibraryKernel] = {}
        for info in manifest["kernels"]:
            try:
                fn = getattr(handle, info["symbol"])
            except AttributeError:
                raise mf.LoadError(f"{path}: symbol {info['symbol']!r} listed in the manifest "
                                   f"is not in the library") from None
            kernel = LibraryKernel(info, ctypes.cast(fn, ctypes.c_void_p).value or 0, self)
            kernel.library_filled = blas.fill(_routines(info.get("routines", [])),
                                              functools.partial(_slot, handle, info["symbol"]))
            workspace.configure(functools.partial(_function, handle), info["symbol"])
            self.kernels[info["name"]] = kernel
            setattr(self, info["name"], kernel)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self.kernels))

    def __getattr__(self, name: str) -> LibraryKernel:
        """Called only for a name that is not a kernel: one message listing the kernels
        (it also types ``lib.NAME`` as a ``LibraryKernel`` for a type checker)."""
        kernels = self.__dict__.get("kernels")
        if kernels is None or name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"library {self.path.name} has no kernel {name!r}; "
                             f"its kernels: {', '.join(kernels) or '(none)'}")

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled by value: its bytes and manifest, not its path (runtime/pickling.py)."""
        return pickling.reduce_library(self.path, self.manifest, load)

    def __repr__(self) -> str:
        return f"<aotx library {self.path} kernels: {', '.join(self.kernels)}>"


def _paths(path: str | Path) -> tuple[Path, Path]:
    p = Path(path)
    if p.suffix in (".so", ".json", ".h", ".dylib", ".dll"):
        p = p.with_suffix("")
    if p.is_dir():                        # a build directory with one library in it
        found = sorted(p.glob("*.json"))
        if len(found) != 1:
            raise mf.LoadError(f"{p} is a directory; name the library (e.g. {p}/MODULE)")
        p = found[0].with_suffix("")
    return p.with_name(p.name + ".json"), p


def load(path: str | Path) -> Library:
    """Load ``PATH.so`` after checking ``PATH.json`` (ABI version, CPU features, hashes, and
    the manifest's own hash linked into the library).

    `path` is the library's path without suffix (``build/physics``), or with
    ``.so``/``.json``. Raises ``runtime.LoadError`` (``runtime.CPUFeatureError``
    when this CPU lacks features the code was built for) instead of crashing.
    """
    manifest_path, base = _paths(path)
    manifest = mf.read(manifest_path)
    lib_path = base.parent / manifest["library"]
    data = mf.check_hash(manifest, lib_path, manifest_path)
    mf.check_library(manifest, data, lib_path, manifest_path)    # before any of its code runs
    try:
        handle = ctypes.CDLL(str(lib_path.resolve()))
    except OSError as e:
        raise mf.LoadError(f"cannot load {lib_path}: {e}") from None
    try:
        return Library(lib_path, manifest, handle)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise mf.LoadError(f"{manifest_path}: malformed kernel table ({type(e).__name__}: {e})") from None


