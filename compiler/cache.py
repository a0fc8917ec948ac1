"""The on-disk kernel cache: keys, and saving/restoring a Specialization.

Storage (directories, atomic writes, checksums) is :mod:`runtime.cache`; this
module decides *what* a compiled kernel depends on. The key is a SHA-256 over

* every function involved: the kernel's function, and transitively every plain
  Python function, class (custom Functions included), Kernel and module
  attribute it references through its globals, closure cells and defaults,
  each by source text, with closure and global constants by value (arrays by
  their bytes);
* the abstract signature (dtypes, dims, symbolic names, static argument values,
  pytree structure), the kernel's name, ``fastmath`` and ``static_argnums``;
* the transform stack and its options: a Kernel and a transform's tracer say
  what they depend on with ``__aotx_cache_key__()`` (vmap's in_dims/out_dims/
  chunk_size, grad's argnums/has_aux, ...; the api layer imports this module,
  not the reverse);
* a schema version, the aotx version plus a fingerprint of the installed
  compiler sources, the Python, llvmlite and LLVM versions, and
  ``Target.magic()`` (triple, CPU name, CPU features).

The key is computed *before* staging, so a hit costs no frontend and no LLVM.
As a safety net, staging records every function whose source the frontend
reads (``compiler.frontend.source.SOURCE_READS``); one the key did not cover is
stored in the entry by module + qualname + fingerprint and checked on every
hit, and if it cannot be named that way the kernel is simply not cached.
Anything the key cannot describe by value (an object with a default repr and
no attributes, an unreadable source) also means "not cached", never a wrong hit.

Knobs: ``AOTX_CACHE_DIR``, ``AOTX_DISABLE_CACHE=1``; ``jit(cache=False)``.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import importlib
import linecache
import json
import os
import re
import struct
import sys
import threading
import time
import types
from dataclasses import dataclass
from typing import Any, Iterator

import llvmlite
import llvmlite.binding as llvm
import numpy as np

import runtime
from compiler import config, version
from compiler.backend import jit as native_jit
from compiler.frontend import pytrees
from compiler.frontend.source import SOURCE_READS
from compiler.frontend.values import Weak
from compiler.ir.types import TensorType
from runtime import cache as storage
from runtime import cpu as runtime_cpu
from runtime import trees
from runtime.abi import ArgSpec, ErrorSite
from runtime.loader import NativeKernel

SCHEMA_VERSION = 2


class Uncacheable(Exception):
    """The key cannot describe something the kernel depends on: do not cache it."""


# ---- the cache directory ---------------------------------------------------------------------

_caches: dict[str, storage.DiskCache] = {}


def disk() -> storage.DiskCache:
    """The DiskCache for the current ``AOTX_CACHE_DIR`` (one per directory per process)."""
    root = storage.default_dir()
    cache = _caches.get(str(root))
    if cache is None:
        cache = _caches[str(root)] = storage.DiskCache(root)
    return cache


def enabled() -> bool:
    return not config.cache_disabled()


def diagnostics() -> dict[str, Any]:
    """Counters for this process: how often LLVM ran, and cache hits/misses/writes."""
    stats = disk().stats
    # LLVM has run in this process only if the pipeline was imported (a cache hit does not)
    pipeline = sys.modules.get("compiler.pipeline")
    llvm_runs = pipeline.STATS["llvm_compilations"] if pipeline is not None else 0
    return {"llvm_compilations": llvm_runs,
            "cache_hits": stats.hits, "cache_misses": stats.misses, "cache_writes": stats.writes,
            "cache_rejected": stats.rejected, "cache_write_errors": stats.write_errors,
            "cache_dir": str(disk().root), "cache_enabled": enabled() and disk().writable}


def _log(message: str) -> None:
    if config.debug_level() >= 1:
        print(f"[aotx] cache: {message}", file=sys.stderr)


# ---- environment part of the key -------------------------------------------------------------

@functools.cache
def compiler_fingerprint() -> str:
    """aotx version + (path, size, mtime) of every installed compiler/runtime source file:
    a development checkout that changes the compiler invalidates the cache."""
    lines: list[str] = []
    _fingerprint_dir(lines, os.path.dirname(os.path.abspath(__file__)), "compiler")
    _fingerprint_dir(lines, os.path.dirname(os.path.abspath(runtime.__file__)), "runtime")
    lines.sort()                          # one sort of the lines (it runs on every cache hit)
    return hashlib.sha256("".join([version.__version__, "\n", *lines]).encode()).hexdigest()


def _fingerprint_dir(lines: list[str], path: str, rel: str) -> None:
    with os.scandir(path) as it:
        for e in it:
            if e.name.endswith(".py"):
                st = e.stat()
                lines.append(f"{rel}/{e.name}:{st.st_size}:{st.st_mtime_ns}\n")
            elif e.name != "__pycache__" and e.is_dir():
                _fingerprint_dir(lines, e.path, f"{rel}/{e.name}")


@functools.cache
def _llvm_versions() -> tuple[str, str]:
    return llvmlite.__version__, ".".join(map(str, llvm.llvm_version_info))


def environment_key(target: Any) -> list[Any]:
    llvmlite_version, llvm_version = _llvm_versions()
    return ["aotx-cache", SCHEMA_VERSION, version.__version__, compiler_fingerprint(),
            sys.implementation.name, list(sys.version_info[:2]), llvmlite_version, llvm_version,
            list(target.magic())]


# ---- describing values by content ------------------------------------------------------------

_LIBRARY_PACKAGES = frozenset({"numpy", "compiler", "runtime", "math", "cmath", "builtins",
                               "functools", "itertools", "operator", "typing", "collections",
                               "llvmlite", "scipy", "dataclasses", "enum", "abc"})


@functools.cache
def _stdlib_dir() -> str:
    return os.path.realpath(os.path.dirname(os.__file__)) + os.sep


@functools.cache
def _is_library_file(file: str) -> bool:
    """Installed packages and the standard library (their code is not the user's)."""
    real = os.path.realpath(file)
    parts = real.split(os.sep)
    return "site-packages" in parts or "dist-packages" in parts or real.startswith(_stdlib_dir())


def _is_library_module(name: str | None) -> bool:
    if not name:
        return True
    top = name.split(".", 1)[0]
    if top in _LIBRARY_PACKAGES or top in sys.builtin_module_names:
        return True
    mod = sys.modules.get(name) or sys.modules.get(top)
    file = getattr(mod, "__file__", None)
    if not file:
        return mod is not None and not hasattr(mod, "__path__") and name != "__main__"
    return _is_library_file(file)


class Describer:
    """Turns values into JSON-able descriptions; functions by source, recursively."""

    MAX_DEPTH = 40

    def __init__(self) -> None:
        self.functions: dict[int, Any] = {}      # id(code) -> fn, for the functions covered
        self._memo: dict[int, Any] = {}
        self._active: set[int] = set()
        self._keep: list[Any] = []               # keep described objects alive (ids stay unique)

    def __call__(self, value: Any, depth: int = 0) -> Any:
        if depth > self.MAX_DEPTH:
            raise Uncacheable("value nested too deeply")
        d = depth + 1
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, (int, float, complex, bytes)):
            return [type(value).__name__, repr(value)]
        if isinstance(value, np.ndarray):
            if value.dtype.hasobject:
                raise Uncacheable("object array")
            data = np.ascontiguousarray(value).tobytes()
            return ["ndarray", value.dtype.str, list(value.shape), hashlib.sha256(data).hexdigest()]
        if isinstance(value, np.generic):
            return ["npscalar", value.dtype.str, value.tobytes().hex()]
        if isinstance(value, np.dtype):
            return ["dtype", value.str]
        if isinstance(value, tuple) and hasattr(type(value), "_fields"):
            return ["namedtuple", self(type(value), d), [self(v, d) for v in value]]
        if isinstance(value, (tuple, list)):
            return [type(value).__name__, [self(v, d) for v in value]]
        if isinstance(value, dict):
            return ["dict", sorted([repr(k), self(v, d)] for k, v in value.items())]
        if isinstance(value, (set, frozenset)):
            return [type(value).__name__, sorted(json.dumps(self(v, d), sort_keys=True) for v in value)]
        return self._object(value, d)

    def _object(self, value: Any, d: int) -> Any:
        if isinstance(value, TensorType):
            return ["tensor", str(value)]
        if isinstance(value, Weak):
            return ["weak", str(value.type)]
        if isinstance(value, pytrees.StaticLeaf):
            return ["static", self(value.value, d)]
        if isinstance(value, pytrees.PyTreeDef):
            return ["treedef", value.kind, self(value.aux, d), [self(c, d) for c in value.children]]
        if hasattr(type(value), "__aotx_cache_key__"):      # a Kernel, a transform's tracer
            return self._memoized(value, lambda: ["aotx", type(value).__qualname__,
                                                  self(value.__aotx_cache_key__(), d)])
        if isinstance(value, types.FunctionType):
            return self._memoized(value, lambda: self.function(value, d))
        if isinstance(value, types.MethodType):
            return ["method", self(value.__self__, d), self(value.__func__, d)]
        if isinstance(value, (staticmethod, classmethod)):
            return [type(value).__name__, self(value.__func__, d)]
        if isinstance(value, property):
            return ["property", self(value.fget, d), self(value.fset, d)]
        if isinstance(value, functools.partial):
            return ["partial", self(value.func, d), self(value.args, d), self(value.keywords, d)]
        if isinstance(value, types.ModuleType):
            return ["module", value.__name__]
        if isinstance(value, type):
            return self._memoized(value, lambda: self.cls(value, d))
        if isinstance(value, (types.BuiltinFunctionType, np.ufunc)) or callable(value) and \
                _is_library_module(getattr(value, "__module__", None)) and hasattr(value, "__qualname__"):
            return ["builtin", getattr(value, "__module__", None),
                    getattr(value, "__qualname__", getattr(value, "__name__", repr(value)))]
        if _is_library_module(type(value).__module__):
            text = repr(value)
            if " at 0x" in text:
                raise Uncacheable(f"cannot describe {type(value).__qualname__} by value")
            return ["repr", type(value).__module__, type(value).__qualname__, text]
        if hasattr(value, "__dict__") or hasattr(type(value), "__slots__"):
            state = dict(getattr(value, "__dict__", {}))
            for slot in getattr(type(value), "__slots__", ()):
                if hasattr(value, slot):
                    state[slot] = getattr(value, slot)
            return self._memoized(value, lambda: ["object", self(type(value), d), self(state, d)])
        raise Uncacheable(f"cannot describe {type(value).__qualname__} by value")

    def _memoized(self, value: Any, describe: Any) -> Any:
        k = id(value)
        if k in self._memo:
            return self._memo[k]
        if k in self._active:                 # recursion (a function calling itself)
            return ["recursive", getattr(value, "__qualname__", type(value).__qualname__)]
        self._active.add(k)
        self._keep.append(value)
        try:
            out = describe()
        finally:
            self._active.discard(k)
        self._memo[k] = out
        return out

    def function(self, fn: types.FunctionType, d: int, force: bool = False) -> Any:
        module = getattr(fn, "__module__", None)
        if not force and _is_library_module(module) and module != "__main__":
            return ["libfunc", module, fn.__qualname__]
        self.functions[id(fn.__code__)] = fn
        code = fn.__code__
        source = function_text(code)
        if source is None:
            raise Uncacheable(f"no source for {fn.__qualname__}")
        names = _all_names(code)
        g = fn.__globals__
        builtins = g.get("__builtins__", {})
        builtins = builtins if isinstance(builtins, dict) else vars(builtins)
        refs = []
        for name in sorted(names):
            if name in g:
                value = g[name]
                refs.append([name, self(value, d)])
                if isinstance(value, types.ModuleType) and not _is_library_module(value.__name__):
                    for attr in sorted(names):                # helpers.f(x): describe helpers.f
                        if attr in vars(value) and not attr.startswith("__"):
                            refs.append([f"{name}.{attr}", self(vars(value)[attr], d)])
            elif name in builtins:
                refs.append([name, "builtin"])
        closure = [[n, self(c.cell_contents, d) if _cell_full(c) else "empty"]
                   for n, c in zip(code.co_freevars, fn.__closure__ or ())]
        return ["function", module, fn.__qualname__, source, _code_identity(code), self(fn.__defaults__, d),
                self(fn.__kwdefaults__, d), closure, refs]

    def cls(self, c: type, d: int) -> Any:
        if _is_library_module(c.__module__) and c.__module__ != "__main__":
            return ["type", c.__module__, c.__qualname__]
        members = sorted([k, self(v, d)] for k, v in vars(c).items()
                         if not (k.startswith("__") and k.endswith("__")) or k == "__call__")
        bases = [self(b, d) for b in c.__bases__ if b is not object]
        return ["class", c.__module__, c.__qualname__, bases, members]


def _code_identity(code: types.CodeType) -> list[Any]:
    """What tells apart functions whose source lines are the same (two lambdas on one line):
    their bytecode, names, constants and the column where each starts."""
    consts = [_code_identity(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts]
    start = next(iter(code.co_positions()), None) if hasattr(code, "co_positions") else None
    return [code.co_code.hex(), list(code.co_names), list(code.co_varnames), consts, list(start or ())]


def function_text(code: types.CodeType) -> str | None:
    """The source lines of a function: from its first line (decorators included) to the
    last line any of its (nested) code covers. Read through linecache, without tokenizing."""
    linecache.checkcache(code.co_filename)       # the file may have been edited since
    lines = linecache.getlines(code.co_filename)
    if not lines:
        return None
    last = _last_line(code)
    first = code.co_firstlineno
    if not 1 <= first <= last <= len(lines):
        return None
    return "".join(lines[first - 1:last])


def _last_line(code: types.CodeType) -> int:
    if hasattr(code, "co_positions"):            # Python >= 3.11: end lines of expressions
        ends = [end for _, end, _, _ in code.co_positions() if end is not None]
    else:
        ends = [line for _, _, line in code.co_lines() if line is not None]
    last = max(ends, default=code.co_firstlineno)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            last = max(last, _last_line(const))
    return last


def _cell_full(cell: Any) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _all_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _all_names(const)
    return names


def digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


# ---- the result structure as JSON -------------------------------------------------------------

def tree_to_json(td: Any, *, allow_namedtuple: bool = False) -> Any:
    """A frontend PyTreeDef as runtime/trees.py JSON (Uncacheable if it has no JSON form)."""
    if td.kind == pytrees.LEAF:
        return trees.LEAF
    if td.kind == pytrees.NONE:
        return None
    if td.kind == pytrees.STATIC:
        v = td.aux.value
        if isinstance(v, (bool, int, str)) or (isinstance(v, float) and np.isfinite(v)):
            return {"const": v}
        raise Uncacheable(f"constant result {v!r:.40} has no JSON form")
    kids = [tree_to_json(c, allow_namedtuple=allow_namedtuple) for c in td.children]
    if td.kind == pytrees.TUPLE:
        return {"tuple": kids}
    if td.kind == pytrees.LIST:
        return {"list": kids}
    if td.kind == pytrees.DICT:
        for k in td.aux:
            if not isinstance(k, (str, int, float, bool)):
                raise Uncacheable(f"dict key {k!r:.40} has no JSON form")
        return {"dict": [[k, c] for k, c in zip(td.aux, kids)]}
    if td.kind == pytrees.NAMEDTUPLE and allow_namedtuple:
        return {"namedtuple": td.aux.__name__, "fields": list(td.aux._fields), "items": kids}
    raise Uncacheable(f"result structure {td.kind} has no JSON form")


def tree_from_json(obj: Any) -> Any:
    if obj == trees.LEAF:
        return pytrees.LEAF_DEF
    if obj is None:
        return pytrees.PyTreeDef(pytrees.NONE)
    if "const" in obj:
        return pytrees.PyTreeDef(pytrees.STATIC, pytrees.StaticLeaf(obj["const"]))
    for kind, pk in (("tuple", pytrees.TUPLE), ("list", pytrees.LIST)):
        if kind in obj:
            return pytrees.PyTreeDef(pk, None, tuple(tree_from_json(c) for c in obj[kind]))
    if "dict" in obj:
        return pytrees.PyTreeDef(pytrees.DICT, tuple(k for k, _ in obj["dict"]),
                                 tuple(tree_from_json(c) for _, c in obj["dict"]))
    raise ValueError(f"invalid result structure {obj!r}")


# ---- Specialization glue -----------------------------------------------------------------------

_DEFER: contextvars.ContextVar[bool] = contextvars.ContextVar("aotx_defer_native", default=False)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Inside: Specializations are staged but not compiled until first used
    (``aotx build`` imports a module this way, then compiles for its own target)."""
    token = _DEFER.set(True)
    try:
        yield
    finally:
        _DEFER.reset(token)


def is_deferred() -> bool:
    return _DEFER.get()


@dataclass
class Restored:
    """What a cache hit gives back to a Specialization: the object loaded and ready to call."""

    meta: dict[str, Any]
    object: bytes
    out_tree: Any
    out_types: list[str]
    native: NativeKernel


class BadEntry(Exception):
    """A cache entry whose checksums hold but whose content cannot be used."""


def restore(meta: dict[str, Any], obj: bytes, target: Any, name: str) -> Restored:
    """The kernel of a verified entry, loaded with MCJIT. Everything is checked before it
    reaches LLVM, which would crash the process on malformed object code: the meta's fields
    have the expected form and the object is a well-formed relocatable object for this
    machine; BadEntry otherwise (also if LLVM refuses the object or lacks the symbol)."""
    try:
        symbol = meta["symbol"]
        if not isinstance(symbol, str) or not _is_symbol(symbol):
            raise ValueError(f"symbol {symbol!r}")
        inputs = [ArgSpec.from_json(a) for a in meta["inputs"]]
        outputs = [ArgSpec.from_json(a) for a in meta["outputs"]]
        symbols, out_types = list(meta["symbols"]), list(meta["out_types"])
        words = {w for spec in inputs for d in spec.dims for w in _names(d)}
        if not all(isinstance(t, str) for t in out_types) or not all(isinstance(t, str) for t in symbols) \
                or not set(symbols) <= words:
            raise ValueError("inconsistent signature")
        out_tree = tree_from_json(meta["out_tree"])
        errors = [ErrorSite.from_json(e) for e in meta.get("errors", [])]
        random = meta.get("random", False)
        if not isinstance(random, bool):
            raise ValueError(f"random {random!r}")
        updates = meta.get("updates", [])      # inputs written back (runtime/loader.py)
        if not isinstance(updates, list) or not all(type(i) is int and 0 <= i < len(inputs)
                                                    for i in updates) \
                or len(out_types) + len(updates) != len(outputs):
            raise ValueError(f"updates {updates!r} (or an inconsistent signature)")
        library = meta.get("routines", [])      # BLAS/LAPACK routines (backend/library.py)
        if not isinstance(library, list) or not all(isinstance(r, str) and re.fullmatch(r"[a-z][a-z0-9_]*", r)
                                                    for r in library):
            raise ValueError(f"library {library!r}")
        contiguous = meta.get("contiguous", [])
        if not isinstance(contiguous, list) or not all(type(i) is int for i in contiguous) \
                or not set(contiguous) <= set(updates):
            raise ValueError(f"contiguous {contiguous!r}")
        in_place = meta.get("in_place", [])     # written where they live (backend/inplace.py)
        if not isinstance(in_place, list) or not all(type(i) is int for i in in_place) \
                or not set(in_place) <= set(updates):
            raise ValueError(f"in_place {in_place!r}")
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as e:
        raise BadEntry(f"meta.json does not describe a kernel ({type(e).__name__}: {e})") from None
    problem = object_problem(obj, target.triple)
    if problem:
        raise BadEntry(f"object.o {problem}")
    try:
        loaded = native_jit.LoadedObject(obj, target, symbol, library)
        address = loaded.address(symbol)
    except (RuntimeError, KeyError, ValueError, OSError) as e:
        raise BadEntry(f"object.o does not load ({e})") from None
    native = NativeKernel(name, address, inputs, outputs, symbols, keepalive=loaded, errors=errors,
                          random=random, updates=updates, contiguous=contiguous,
                          in_place=in_place)
    return Restored(meta, obj, out_tree, out_types, native)


def _is_symbol(symbol: str) -> bool:
    """``re.fullmatch(r"aotx_\\w+", symbol)``, without compiling a pattern on the cache-hit path
    (``\\w``: what ``str.isalnum`` accepts, and ``_``)."""
    return symbol.startswith("aotx_") and symbol[5:].replace("_", "a").isalnum()


def _names(dim: Any) -> list[str]:
    """The names in a dim (``re.findall(r"[A-Za-z_]\\w*", str(dim))``; a plain name without a
    pattern)."""
    text = str(dim)
    if text.isascii() and text.isidentifier():
        return [text]
    return re.findall(r"[A-Za-z_]\w*", text)


_ELF_MACHINES = {"x86_64": 62, "aarch64": 183, "ppc64le": 21, "riscv64": 243}
_MACHO_CPUS = {"x86_64": 0x01000007, "aarch64": 0x0100000C}


def object_problem(obj: bytes, triple: str) -> str | None:
    """Why `obj` is not a well-formed relocatable object for `triple` (None if it is). ELF is
    checked in depth (header, section table, symbol and relocation tables in bounds), Mach-O
    and COFF by their header."""
    arch = runtime_cpu.triple_arch(triple)
    if obj[:4] == b"\x7fELF":
        return _elf_problem(obj, _ELF_MACHINES.get(arch))
    if obj[:4] == b"\xcf\xfa\xed\xfe":
        if len(obj) < 32 or struct.unpack_from("<I", obj, 4)[0] != _MACHO_CPUS.get(arch):
            return "is a Mach-O object for another machine"
        return None
    if os.name == "nt" and len(obj) >= 20 and obj[:2] in (b"\x64\x86", b"\x64\xaa"):
        return None
    return "is not an object file"


def _elf_problem(obj: bytes, machine: int | None) -> str | None:
    n = len(obj)
    if n < 64 or obj[4] != 2 or obj[5] != (1 if sys.byteorder == "little" else 2):
        return "is not a 64-bit ELF object of this byte order"
    e = "<" if obj[5] == 1 else ">"
    e_type, e_machine = struct.unpack_from(e + "HH", obj, 16)
    shoff, = struct.unpack_from(e + "Q", obj, 40)
    shentsize, shnum, shstrndx = struct.unpack_from(e + "HHH", obj, 58)
    if e_type != 1 or (machine is not None and e_machine != machine):
        return "is not a relocatable object for this machine"
    if shentsize != 64 or not 0 < shnum or shoff + 64 * shnum > n or shstrndx >= shnum:
        return "has a malformed section table"
    sections = [struct.unpack_from(e + "IIQQQQIIQQ", obj, shoff + 64 * i) for i in range(shnum)]
    for _, sh_type, _, _, off, size, link, _, _, entsize in sections:
        if sh_type != 8 and off + size > n:                      # SHT_NOBITS occupies no bytes
            return "has a section outside the file"
        if sh_type in (2, 4) and (entsize != 24 or size % 24 or link >= shnum):   # SYMTAB, RELA
            return "has a malformed symbol or relocation table"
    for _, sh_type, _, _, off, size, link, info, _, _ in sections:
        if sh_type == 2 and size:
            syms = np.frombuffer(obj, _ELF_SYM, size // 24, off)
            shndx = syms["shndx"]
            if syms["name"].max() >= max(sections[link][5], 1) or np.any((shndx >= shnum) & (shndx < 0xff00)):
                return "has a malformed symbol"
        elif sh_type == 4 and size:
            relocs = np.frombuffer(obj, _ELF_RELA, size // 24, off)
            nsyms = sections[link][5] // 24 if sections[link][1] == 2 else 0
            target_size = sections[info][5] if info < shnum else 0
            if int((relocs["info"] >> 32).max()) >= nsyms or int(relocs["offset"].max()) >= target_size:
                return "has a malformed relocation"
    return None


_ELF_SYM = np.dtype([("name", "u4"), ("info", "u1"), ("other", "u1"), ("shndx", "u2"), ("value", "u8"),
                     ("size", "u8")])
_ELF_RELA = np.dtype([("offset", "u8"), ("info", "u8"), ("addend", "i8")])   # native order: checked above


@dataclass
class RestoredProgram:
    """Stands in for the StagedProgram of a Specialization loaded from the cache."""

    out_tree: Any
    function: Any = None
    in_tree: Any = None
    updates: tuple[int, ...] = ()
    contiguous: tuple[int, ...] = ()


class DeferredNative:
    """A Specialization's native kernel, compiled on first use (see :func:`deferred`)."""

    def __init__(self, compile_now: Any) -> None:
        self._compile_now = compile_now
        self._native: Any = None
        self._lock = threading.Lock()        # concurrent first uses compile once

    def _get(self) -> Any:
        if self._native is None:
            with self._lock:
                if self._native is None:
                    self._native = self._compile_now()
        return self._native

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_compile_now", "_native", "_lock"):
            raise AttributeError(name)
        return getattr(self._get(), name)

    def __call__(self, *args: Any) -> Any:
        return self._get()(*args)


class Probe:
    """The cache lookup and store for one Specialization."""

    def __init__(self, kernel: Any, abstract_args: tuple[Any, ...], abstract_kwargs: dict[str, Any],
                 target: Any) -> None:
        self.kernel, self.target = kernel, target
        self.key: str | None = None
        self.describer = Describer()
        self.reads: list[Any] = []
        self.why_not: str | None = None
        if not enabled() or not getattr(kernel, "cache", True):
            self.why_not = "disabled"
            return
        try:
            parts = [environment_key(target), self.describer(kernel),
                     self.describer((tuple(abstract_args), dict(abstract_kwargs))),
                     ["boundscheck", config.boundscheck()]]
            self.key = digest(parts)
        except Uncacheable as e:
            self.why_not = str(e)
            _log(f"not caching {kernel.__name__}: {e}")
        except RecursionError:
            self.why_not = "recursion"

    def load(self) -> Restored | None:
        if self.key is None:
            return None
        cache = disk()
        start = time.perf_counter()
        found = cache.get(self.key)
        if found is None:
            if cache.last_problem:
                _log(f"ignoring the entry for {self.kernel.__name__} ({cache.last_problem}); rebuilding")
            return None
        meta, obj = found
        problem = self._check(meta)
        restored = None
        if problem is None:
            try:
                restored = restore(meta, obj, self.target, self.kernel.__name__)
            except BadEntry as e:
                problem = str(e)
        if restored is None:                 # unusable here: removed, so the compile replaces it
            cache.stats.hits -= 1
            cache.stats.misses += 1
            cache.stats.rejected += 1
            cache.discard(self.key)
            _log(f"ignoring the entry for {self.kernel.__name__} ({problem}); rebuilding")
            return None
        _log(f"hit {self.kernel.__name__} {self.key[:12]} ({1e3 * (time.perf_counter() - start):.2f} ms)")
        return restored

    def _check(self, meta: dict[str, Any]) -> str | None:
        if meta.get("schema") != SCHEMA_VERSION:
            return "schema version"
        if meta.get("aotx_version") != version.__version__:
            return f"built by aotx {meta.get('aotx_version')}"
        if meta.get("llvm") != list(_llvm_versions()):
            return f"built with llvmlite/LLVM {meta.get('llvm')}"
        if meta.get("target") != list(self.target.magic()):
            return "built for another CPU"
        for module, qualname, want in meta.get("deps", []):
            fn = _resolve(module, qualname)
            if fn is None:
                return f"dependency {module}.{qualname} not found"
            try:
                if _dep_digest(fn) != want:
                    return f"dependency {module}.{qualname} changed"
            except Uncacheable:
                return f"dependency {module}.{qualname} not describable"
        return None

    @contextlib.contextmanager
    def recording(self) -> Iterator[None]:
        """Record the functions the frontend reads while staging (see module docstring)."""
        token = SOURCE_READS.set(self.reads)
        try:
            yield
        finally:
            SOURCE_READS.reset(token)

    def store(self, spec: Any) -> None:
        if self.key is None or not disk().writable:
            return
        from compiler.function.trampoline import uses_host_callbacks   # deferred: DEFERRED_IMPORTS
        if uses_host_callbacks(spec.program.function):
            _log(f"not caching {self.kernel.__name__}: it calls back into Python")
            return
        try:
            deps = self._extra_deps()
            meta = {"schema": SCHEMA_VERSION, "aotx_version": version.__version__,
                    "llvm": list(_llvm_versions()), "target": list(self.target.magic()),
                    "name": self.kernel.__name__, "symbol": spec.symbol,
                    "inputs": [a.to_json() for a in spec.native.inputs],
                    "outputs": [a.to_json() for a in spec.native.outputs],
                    "symbols": list(spec.native.symbols), "out_types": list(spec.out_types),
                    "errors": [e.to_json() for e in spec.native.errors],
                    "random": spec.native.random, "updates": list(spec.native.updates),
                    "contiguous": list(spec.native.contiguous),
                    "in_place": list(spec.native.in_place),
                    "routines": list(spec.artifacts.library) if spec.artifacts is not None else [],
                    "out_tree": tree_to_json(spec.program.out_tree), "deps": deps,
                    "signature": ", ".join(a.type_text for a in spec.native.inputs),
                    "function": f"{getattr(self.kernel.fn, '__module__', '?')}."
                                f"{getattr(self.kernel.fn, '__qualname__', self.kernel.__name__)}",
                    "created": time.time()}
        except Uncacheable as e:
            _log(f"not caching {self.kernel.__name__}: {e}")
            return
        if disk().put(self.key, meta, spec.object):
            _log(f"stored {self.kernel.__name__} {self.key[:12]}")

    def _extra_deps(self) -> list[list[str]]:
        deps, seen = [], set()
        for fn in self.reads:
            code = getattr(fn, "__code__", None)
            if code is None or id(code) in self.describer.functions or id(code) in seen:
                continue
            seen.add(id(code))
            module, qualname = getattr(fn, "__module__", None), fn.__qualname__
            if module and module.split(".", 1)[0] in ("compiler", "runtime"):
                continue                     # covered by compiler_fingerprint()
            if not module or "<" in qualname or _resolve(module, qualname) is not fn:
                raise Uncacheable(f"{qualname} is used but cannot be found by name for the cache key")
            deps.append([module, qualname, _dep_digest(fn)])
        return deps


def _dep_digest(fn: Any) -> str:
    if not isinstance(fn, types.FunctionType):
        raise Uncacheable(f"{fn!r:.40} is not a function")
    return digest(Describer().function(fn, 0, force=True))


def _resolve(module: str, qualname: str) -> Any:
    mod = sys.modules.get(module)
    if mod is None:
        try:
            mod = importlib.import_module(module)
        except Exception:
            return None
    obj: Any = mod
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    if hasattr(obj, "__wrapped__") and not isinstance(obj, types.FunctionType):
        obj = getattr(obj, "fn", obj)
    return obj
