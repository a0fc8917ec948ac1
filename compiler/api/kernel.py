"""jit and Kernel: argument normalisation, specialization, then the pipeline.

A :class:`Kernel` compiles its function lazily, once per abstract signature
of its arguments (tree structure, dtypes and shapes of arrays, values of
static arguments), or once up front for ``signature=``, whose symbolic dims
let one native kernel serve every size.

Argument kinds when compiling lazily: arrays (and NumPy scalars) are dynamic
inputs of their exact dtype and shape; Python floats are dynamic weakly typed
scalars (NEP 50: ``x32 * s`` stays float32); Python ints, bools and any other
objects are static: their value is baked in and a new value compiles a new
specialization, as do the arguments listed in ``static_argnums``.

A Kernel made by a transform (``vmap``, ``grad``, ...; compiler/api/vmap.py and
autodiff.py) has a *tracer*: it traces the inner Kernel and hands the transform
passes to the pipeline (``pipeline.transform``).
"""
from __future__ import annotations

import copy
import ctypes
import functools
import inspect
import os
import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence, overload

import numpy as np

from compiler import cache, config, progress
from compiler.api import display
from compiler.backend import pyentry
from compiler.backend import target as targets
from compiler.errors import CompileError, InternalCompilerError, user_facing
from compiler.frontend import pytrees
from compiler.frontend.values import Alias, Closure, Reject, Strided, Weak
from compiler.ir.printer import format_function
from compiler.ir import dims, types
from compiler.ir.types import TensorType, canonical_dtype
from compiler.signature import parse_signature
from runtime import interop
from runtime.abi import ERROR_BASE, is_symbol, kernel_error, parse_spec
from runtime.loader import KERNEL_CFUNC, NativeKernel, bind_symbols, check_array_class, write_back

if TYPE_CHECKING:
    from compiler import pipeline

# The compile machinery (compiler.pipeline: the frontend, the transforms, the code generator;
# function/trampoline.py, backend/parallel.py) and what only some kernels use (api/callbacks.py,
# api/pickling.py) are imported where they are first needed, not with this module: a kernel
# loaded from the on-disk cache runs none of them (DEFERRED_IMPORTS; docs/internals.md,
# "Import time").


def _raise_pending() -> None:
    """Status 2: re-raise the exception a host callback raised (the kernel has host callbacks,
    so its compile imported the trampoline)."""
    from compiler.function.trampoline import raise_pending      # deferred: DEFERRED_IMPORTS
    raise_pending()


@dataclass
class Lowered:
    """The stages of one compiled specialization, as text: ``ir`` is the frontend's IR,
    ``ir_optimized`` the IR after the transforms and simplification. Each is a ``str``
    shown with syntax highlighting in a notebook; the repr is a summary (compiler/api/display.py)."""

    ir: str
    ir_optimized: str
    llvm: str
    llvm_optimized: str
    asm: str
    name: str = ""               # the kernel's transforms and arguments: vmap(f)(x: f64[8, 3])
    signature: str = ""          # its result types

    def __str__(self) -> str:
        return self.ir_optimized

    def __repr__(self) -> str:
        return display.lowered_repr(self)

    def _repr_html_(self) -> str:
        return display.lowered_html(self)


class Specialization:
    """One compiled variant of a Kernel: staged program + native code."""

    # ---- compile/load path with the on-disk cache (compiler/cache.py; docs/aot.md) ----------
    def __init__(self, kernel: "Kernel", abstract_args: tuple[Any, ...], abstract_kwargs: dict[str, Any]) -> None:
        self.kernel, self.abstract = kernel, (abstract_args, abstract_kwargs)
        self.symbol = _symbol_name(kernel.__name__)
        self.artifacts: pipeline.Artifacts | None = None
        self.program: pipeline.Program | cache.RestoredProgram
        self.native: NativeKernel | cache.DeferredNative
        target = targets.host()
        # boundscheck: the kernel's own, else AOTX_BOUNDSCHECK; part of the cache key (Probe)
        self.boundscheck = config.boundscheck() if kernel.boundscheck is None else kernel.boundscheck
        with config.boundscheck_scope(self.boundscheck):
            self._probe = cache.Probe(kernel, abstract_args, abstract_kwargs, target)
        # how it came to be, for repr(kernel) (compiler/api/display.py) and the "aotx" logger
        self.state, self.seconds = "compiled", None
        what = display.call_text(kernel, abstract_args, abstract_kwargs)
        hit = None if cache.is_deferred() else self._probe.load()
        if hit is not None:                  # no staging, no LLVM: load the cached object
            self.program = cache.RestoredProgram(hit.out_tree, updates=hit.native.updates,
                                                 contiguous=hit.native.contiguous)
            self.out_types, self.object, self.native = hit.out_types, hit.object, hit.native
            self.state = "loaded from the disk cache"
            progress.note(f"{what}: loaded from the disk cache")
            return
        with progress.compiling(what) as record:
            with self._probe.recording(), config.boundscheck_scope(self.boundscheck):
                self.program = _trace_rows(kernel, abstract_args, abstract_kwargs) if kernel.parallel \
                    else kernel.trace(abstract_args, abstract_kwargs, updates=True)
            # the results (the new values of updated arguments come after them)
            out_types = self.program.function.out_types
            self.out_types = [str(t) for t in out_types[:len(out_types) - len(self.program.updates)]]
            if cache.is_deferred():              # `aotx build`: compiled for its own target, or on first use
                self.native = cache.DeferredNative(self._compile_later)
                self.state = "staged (compiled by aotx build, or on first call)"
                record.done = "staged"
            else:
                self.native = self._compile()
        self.seconds = record.seconds

    def _compile(self) -> NativeKernel:
        from compiler import pipeline                               # deferred: DEFERRED_IMPORTS
        from compiler.function import trampoline                    # deferred: DEFERRED_IMPORTS
        fn = self.program.function
        with trampoline.recording_sites() as host_sites:
            self.artifacts = pipeline.compile_ir(fn, self.symbol, targets.host(),
                                                 fastmath=self.kernel.fastmath,
                                                 parallel=self.kernel.parallel,
                                                 updates=self.program.updates)
        self.object = self.artifacts.object
        loaded = pipeline.load(self.artifacts)
        if host_sites:                       # the host callbacks' entries live as long as the code
            weakref.finalize(loaded, trampoline.release, host_sites)
        names = fn.arg_names or [f"arg{i}" for i in range(len(fn.in_types))]
        ins = [parse_spec(n, str(t)) for n, t in zip(names, fn.in_types)]
        outs = [parse_spec(f"result{i}", str(t)) for i, t in enumerate(self.artifacts.ir_optimized.out_types)]
        self.native = NativeKernel(self.kernel.__name__, loaded.address(self.artifacts.name), ins, outs,
                                   self.artifacts.symbols, keepalive=loaded, errors=self.artifacts.errors,
                                   random=self.artifacts.random, updates=self.program.updates,
                                   contiguous=self.program.contiguous,
                                   in_place=self.artifacts.in_place)
        self._probe.store(self)
        if self.state.startswith("staged"):   # a deferred one, compiled on its first call
            self.state, self.seconds = "compiled", None
        return self.native

    def _compile_later(self) -> NativeKernel:
        """The compile of a staged specialization (under `aotx build`), on its first call."""
        with progress.compiling(display.call_text(self.kernel, *self.abstract)):
            return self._compile()

    def _ensure_artifacts(self) -> pipeline.Artifacts:
        """A cache hit has no stages in memory: stage and compile again for lower()."""
        from compiler import pipeline                               # deferred: DEFERRED_IMPORTS
        if self.artifacts is None:
            if self.program.function is None:
                with config.boundscheck_scope(self.boundscheck):
                    self.program = _trace_rows(self.kernel, *self.abstract) if self.kernel.parallel \
                        else self.kernel.trace(*self.abstract, updates=True)
            self.artifacts = pipeline.compile_ir(self.program.function, self.symbol, targets.host(),
                                                 fastmath=self.kernel.fastmath,
                                                 parallel=self.kernel.parallel,
                                                 updates=self.program.updates)
        return self.artifacts
    # ---- end of the compile/load path ------------------------------------------------------

    def call(self, dynamic: Sequence[Any]) -> Any:
        try:
            outs = self.native(*dynamic)
        except RuntimeError:            # status 2: re-raise the host callback's own exception
            _raise_pending()
            raise
        return pytrees.unflatten(self.program.out_tree, [_scalarize(o) for o in outs])

    def call_fast(self, arrays: Sequence[np.ndarray]) -> Any:
        """The call for contiguous arrays of exactly the specialized types: no conversions,
        no symbol binding (the lazy path's common case)."""
        plan = self.__dict__.get("_plan")
        if plan is None:
            plan = self._plan = _FastPlan(self)
        return plan(arrays) if plan.ok else self.call(arrays)

    def entry(self) -> Callable[..., Any] | None:
        """The native entry of this specialization (compiler/backend/pyentry.py), made on
        first use; None when it has none (symbolic dims, updates, a random key, pytrees)."""
        entry: Callable[..., Any] | None | bool = self.__dict__.get("_entry", False)
        if entry is False:
            entry = self._entry = _native_entry(self)
        return entry if callable(entry) else None

    def lowered(self) -> Lowered:
        from compiler import pipeline                               # deferred: DEFERRED_IMPORTS
        a = self._ensure_artifacts()
        assert isinstance(self.program, pipeline.Program)
        outs = self.out_types[0] if len(self.out_types) == 1 else "(" + ", ".join(self.out_types) + ")"
        return Lowered(*display.stage_texts(format_function(self.program.frontend_ir, with_locs=True),
                                            format_function(a.ir_optimized), a.llvm, a.llvm_optimized, a.asm),
                       name=display.call_text(self.kernel, *self.abstract), signature=outs)


def _trace_rows(kernel: "Kernel", abstract_args: tuple[Any, ...], abstract_kwargs: dict[str, Any]) -> pipeline.Program:
    """``parallel=True``: the kernel staged with its rows symbolic, so that one compiled code
    serves every slice of them (compiler/backend/parallel.py): the largest leading dim of the
    array arguments (the first of equal ones: a batch, not the weights of ``predict(w, x)``),
    in every array argument that leads with that size, becomes the symbol ``rows``. When
    there is no such dim (or it is symbolic already), or the function does not stage with it,
    the kernel is staged as given."""
    from compiler.backend import parallel                           # deferred: DEFERRED_IMPORTS
    leaves, tree = pytrees.flatten((abstract_args, abstract_kwargs),
                                   is_leaf=lambda x: isinstance(x, (TensorType, Weak, Alias)))
    arrays = [x for x in leaves if isinstance(x, TensorType) and x.shape]
    sizes = [x.shape[0] for x in arrays if isinstance(x.shape[0], int)]
    size = max(sizes) if sizes and len(sizes) == len(arrays) else None
    shared = any(isinstance(x, (Alias, Strided)) for x in leaves)    # arrays passed twice, overlapping
    if isinstance(size, int) and size > 1 and not shared:
        rows = dims.Sym(parallel.ROWS)
        swapped = [TensorType(x.dtype, (rows, *x.shape[1:]))
                   if isinstance(x, TensorType) and x.shape and x.shape[0] == size else x for x in leaves]
        args, kwargs = pytrees.unflatten(tree, swapped)
        try:
            return kernel.trace(tuple(args), kwargs, updates=True)
        except (CompileError, InternalCompilerError) as e:
            progress.note(f"{kernel.__name__}: parallel=True: runs serially: the function does not "
                          f"compile for any number of rows ({str(e).splitlines()[0]})")
    return kernel.trace(abstract_args, abstract_kwargs, updates=True)


def _scalarize(a: np.ndarray) -> Any:
    return a[()] if a.ndim == 0 else a


class _FastPlan:
    """Precomputed shapes and dtypes of a fully static specialization."""

    def __init__(self, spec: Specialization) -> None:
        native = spec.native
        self.ok = not native.symbols and not native.random and all(isinstance(d, int) for s in native.inputs + native.outputs
                                             for d in s.dims)
        self.updates = native.updates       # written back after the call (runtime/loader.py)
        first = len(native.outputs) - len(native.updates)
        self.in_place = [(first + k, i) for k, i in enumerate(native.updates) if i in native.in_place]
        self.spec = spec
        if not self.ok:
            return
        self.fn = native._fn
        self.name = native.name
        self.errors = native.errors
        self.ins = [(s.dtype, tuple(s.dims)) for s in native.inputs]
        self.outs = [(s.dtype, tuple(s.dims)) for s in native.outputs]
        self.n_in, self.n_out = max(len(self.ins), 1), max(len(self.outs), 1)
        self.syms = (ctypes.c_int64 * 1)()
        self.n_results = len(self.outs) - len(self.updates)
        _, tree = pytrees.flatten(pytrees.unflatten(spec.program.out_tree, list(range(self.n_results))))
        self.single = tree == pytrees.flatten(0)[1] and self.n_results == 1

    def __call__(self, arrays: Sequence[np.ndarray]) -> Any:
        for a, (dtype, shape) in zip(arrays, self.ins):
            if a.dtype != dtype or a.shape != shape or not a.flags.c_contiguous:
                return self.spec.call(arrays)
        if self.updates and not all(arrays[i].flags.writeable for i in self.updates):
            return self.spec.call(arrays)            # the checked path raises the error
        outs = [np.empty(shape, dtype) for dtype, shape in self.outs]
        for k, i in self.in_place:           # written where the argument lives
            outs[k] = arrays[i]
        in_ptrs = (ctypes.c_void_p * self.n_in)(*[a.ctypes.data for a in arrays])
        out_ptrs = (ctypes.c_void_p * self.n_out)(*[o.ctypes.data for o in outs])
        status = self.fn(in_ptrs, out_ptrs, self.syms)
        if status:
            if status == 2:                      # a host callback raised: its exception, no re-run
                _raise_pending()
            if status >= ERROR_BASE:             # a check failed: its exception (no symbols here)
                raise kernel_error(self.name, status, self.errors, {})
            return self.spec.call(arrays)        # the checked path raises the proper error
        if self.updates:
            outs = write_back(outs, arrays, self.updates)
        if self.single:
            return _scalarize(outs[0])
        return pytrees.unflatten(self.spec.program.out_tree, [_scalarize(o) for o in outs])


def _native_entry(spec: Specialization) -> Callable[..., Any] | None:
    """The fast call path of a specialization whose arguments are each one array or one Python
    float, and whose dims are sizes or symbols (not expressions): a native entry that checks the
    arguments, binds the symbols, allocates the outputs with NumPy and calls the kernel, and
    calls the kernel's checked path (``Kernel._call``) for anything else. The entry holds the
    kernel only weakly, the loaded code strongly."""
    native = spec.native
    if not isinstance(native, NativeKernel) or native.random:
        return None
    a_args, a_kwargs = spec.abstract
    dims_ok = all(isinstance(d, int) and d >= 0 or is_symbol(d)
                  for s in native.inputs + native.outputs for d in s.dims)
    if a_kwargs or len(a_args) != len(native.inputs) or not dims_ok:
        return None
    inputs: list[pyentry.Input] = []
    for arg, s in zip(a_args, native.inputs):
        if isinstance(arg, Weak) and arg.type.dtype == np.float64 and s.dtype == np.float64 \
                and not s.dims:
            inputs.append((pyentry.KIND_FLOAT, s.dtype, ()))
        elif isinstance(arg, TensorType) and len(arg.shape) == len(s.dims):
            inputs.append((pyentry.KIND_ARRAY, s.dtype, tuple(s.dims)))
        else:
            return None
    outputs = [(s.dtype, tuple(s.dims)) for s in native.outputs]
    tree = spec.program.out_tree
    n_results = len(outputs) - len(native.updates)
    single = tree == pytrees.flatten(0)[1] and n_results == 1 or \
        n_results == 0 and pytrees.unflatten(tree, []) is None
    name, errors = native.name, native.errors
    names, specs = [s.name for s in native.inputs], list(native.inputs)

    def on_error(status: int, *args: Any) -> Any:
        if status == 2:                      # a host callback raised: its exception
            _raise_pending()
        env = bind_symbols(names, [np.asarray(a) for a in args], specs) if native.symbols else {}
        raise kernel_error(name, status, errors, env)

    def wrap(*outs: np.ndarray) -> Any:
        return pytrees.unflatten(tree, [_scalarize(o) for o in outs])
    return pyentry.make_entry(native.address, inputs, outputs, fallback=spec.kernel._dispatch,
                              on_error=on_error,
                              wrap=None if single else wrap, keepalive=native._keepalive,
                              symbols=native.symbols, updates=native.updates,
                              in_place=native.in_place)


def _entry_key(args: tuple[Any, ...]) -> Any:
    """The key of the fast paths: (dtype, shape) per array argument, float per Python float;
    None unless every argument is one of those."""
    key: list[Any] = []
    for a in args:
        t = type(a)
        if t is np.ndarray:
            key.append((a.dtype, a.shape))
        elif t is float:
            key.append(float)
        else:
            return None
    return tuple(key)


def _windowed(a_args: tuple[Any, ...], a_kwargs: dict[str, Any], dynamic: list[Any]) -> Any:
    """The arguments with arrays that overlap (without being the same array) replaced by
    Strided views of one window of memory per group, the windows appended to the dynamic
    arrays: (key, args, kwargs, dynamic), or None when they cannot be (other dtypes, strides
    that are not whole elements, a read-only array)."""
    arrays = [k for k, a in enumerate(dynamic) if isinstance(a, np.ndarray) and a.size]
    group = {k: k for k in arrays}

    def find(k: int) -> int:
        while group[k] != k:
            k = group[k]
        return k
    for i, a in enumerate(arrays):
        for b in arrays[:i]:
            if np.may_share_memory(dynamic[a], dynamic[b]):
                group[find(a)] = find(b)
    groups: dict[int, list[int]] = {}
    for k in arrays:
        groups.setdefault(find(k), []).append(k)
    members = [g for g in groups.values() if len(g) > 1]
    if not members:
        return None
    replaced: dict[int, Strided] = {}
    windows: list[np.ndarray] = []
    for g in members:
        arrs = [dynamic[k] for k in g]
        dtype = arrs[0].dtype
        size = dtype.itemsize
        if any(a.dtype != dtype or not a.flags.writeable or any(st % size for st in a.strides)
               for a in arrs):
            return None
        lows = [a.__array_interface__["data"][0] + sum(min(0, st * (n - 1))
                                                       for st, n in zip(a.strides, a.shape))
                for a in arrs]
        highs = [a.__array_interface__["data"][0] + sum(max(0, st * (n - 1))
                                                        for st, n in zip(a.strides, a.shape)) + size
                 for a in arrs]
        lo, hi = min(lows), max(highs)
        if any((a.__array_interface__["data"][0] - lo) % size for a in arrs):
            return None
        buffer = (ctypes.c_char * (hi - lo)).from_address(lo)
        window = np.frombuffer(buffer, dtype=dtype)
        for k, a in zip(g, arrs):
            replaced[k] = Strided(len(windows), window.size,
                                  (a.__array_interface__["data"][0] - lo) // size,
                                  tuple(st // size for st in a.strides),
                                  TensorType(canonical_dtype(dtype), tuple(a.shape)))
        windows.append(window)
    leaves, tree = pytrees.flatten((a_args, a_kwargs),
                                   is_leaf=lambda x: isinstance(x, (TensorType, Weak, Alias)))
    out, k = [], 0
    for leaf in leaves:
        if isinstance(leaf, (TensorType, Weak)):
            out.append(replaced.get(k, leaf))
            k += 1
        else:
            out.append(leaf)
    new_args, new_kwargs = pytrees.unflatten(tree, out)
    new_dynamic = [a for k, a in enumerate(dynamic) if k not in replaced] + windows
    key = _hashable_key(pytrees.flatten((tuple(new_args), new_kwargs)))
    return key, tuple(new_args), new_kwargs, new_dynamic


def _shared(arrays: Sequence[Any]) -> bool:
    """May two of the arrays share memory (then a kernel that writes into one is not called
    through the fast path: the same array twice has its own specialization)?"""
    nd = [a for a in arrays if isinstance(a, np.ndarray)]
    return any(np.may_share_memory(a, b) for i, a in enumerate(nd) for b in nd[:i])


def _symbol_name(name: str) -> str:
    clean = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return f"aotx_{clean}"


class _Dispatch:
    """The checked call of a Kernel: the specialization for the arguments (compiled on first
    use), called through its Python path. It holds the Kernel weakly (the Kernel holds it)."""

    __slots__ = ("kernel",)

    def __init__(self, kernel: "Kernel") -> None:
        self.kernel = weakref.ref(kernel)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        kernel = self.kernel()
        if kernel is None:
            raise ReferenceError("the kernel of this call is gone")
        try:
            return kernel._call(args, kwargs)
        except (CompileError, InternalCompilerError) as e:
            raise _boundary(e)   # the message points at your code; see below



#: every live Kernel, for the fork hook below
_KERNELS: "weakref.WeakSet[Kernel]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """A forked child has only the thread that forked: a specialization another thread of the
    parent was compiling would hold its lock for good, and the child's first call of it would
    wait forever. The child compiles it again itself."""
    for kernel in list(_KERNELS):
        kernel._lock = threading.Lock()
        kernel._compiling = {}


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

class Kernel:
    """A compiled function: call it with NumPy arrays, get NumPy arrays."""

    # Calling a Kernel calls its `__call__` *instance slot* (a C-level member, no Python frame):
    # the native entry of the specialization it last called twice (compiler/backend/pyentry.py),
    # which calls the `_Dispatch` for any other arguments, or that `_Dispatch` itself.
    __slots__ = ("__call__", "__dict__", "__weakref__")
    __call__: Callable[..., Any]

    def __init__(self, fn: Callable[..., Any], *, signature: str | None = None,
                 static_argnums: int | Sequence[int] = (), fastmath: bool = False,
                 parallel: bool = False, cache: bool = True, name: str | None = None,
                 boundscheck: bool | None = None,
                 tracer: Callable[[tuple[Any, ...], dict[str, Any]], pipeline.Program] | None = None) -> None:
        if isinstance(fn, Kernel):            # jit(vmap(f)), jit(jit(f)): keep what it stages
            inner: Kernel = fn
            tracer = tracer or inner._tracer
            name = name or inner.__name__
            fn = inner.fn
        if not callable(fn):
            raise TypeError(f"jit expects a function, got {type(fn).__name__}")
        self.fn: Callable[..., Any] = fn
        self._tracer: Callable[[tuple[Any, ...], dict[str, Any]], pipeline.Program] | None = tracer
        self.fastmath = fastmath
        self.parallel = parallel
        self.cache = cache
        # run-time indices out of range: IndexError (True), clamp (False), or None: as the
        # enclosing kernel being staged, else AOTX_BOUNDSCHECK
        self.boundscheck = None if boundscheck is None else bool(boundscheck)
        self.__name__: str = name or str(getattr(fn, "__name__", "kernel"))
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__wrapped__ = fn
        self.__qualname__ = getattr(fn, "__qualname__", self.__name__)
        self.__module__ = getattr(fn, "__module__", __name__)
        self._signature = _signature_of(fn)
        self.static_argnums = _static_argnums(self._signature, static_argnums, self.__name__)
        self._specializations: dict[Any, Specialization] = {}
        self._fast: dict[Any, Specialization] = {}   # (dtype, shape) per array argument -> spec
        # the native entry of the specialization called last through the fast path (when it
        # has one): __call__ goes straight to it, and it falls back to _call
        self._entry: Callable[..., Any] | None = None
        self._dispatch = _Dispatch(self)
        self.__call__ = self._dispatch
        self._fixed_called = False
        self._lock = threading.Lock()                  # guards _compiling
        self._compiling: dict[Any, threading.RLock] = {}   # key -> held while it compiles
        _KERNELS.add(self)
        self.signature = signature
        self._fixed: Specialization | None = None
        if signature is not None:
            try:
                self._fixed = self._compile_signature(signature)
            except (CompileError, InternalCompilerError) as e:
                raise _boundary(e)

    # ---- specialization ------------------------------------------------------------------
    def trace(self, abstract_args: tuple[Any, ...], abstract_kwargs: dict[str, Any], *,
              updates: bool = False) -> pipeline.Program:
        """Stage this kernel's computation for abstract arguments: the frontend, then the
        transform passes of its tracer (IR + pytree structure). With `updates` (a plain
        jit's own specializations), writes into the arguments are compiled; a transform's
        tracer traces its inner kernel without, so they are a SideEffectError there."""
        from compiler import pipeline                               # deferred: DEFERRED_IMPORTS
        with config.boundscheck_scope(self.boundscheck):
            if self._tracer is not None:
                return self._tracer(abstract_args, abstract_kwargs)
            return pipeline.stage(self.fn, abstract_args, abstract_kwargs, name=self.__name__,
                                  updates=updates)

    def arg_name(self, i: int) -> str:
        params = [p.name for p in self._signature.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        return params[i] if i < len(params) else f"arg{i}"

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> inspect.BoundArguments:
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.__name__}(): {e}") from None
        return bound

    def _compile_signature(self, signature: str) -> Specialization:
        types, results = parse_signature(signature)
        params = [p for p in self._signature.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if len(types) != len(params):
            raise TypeError(f"{self.__name__}: signature {signature!r} has {len(types)} argument types "
                            f"but the function takes {len(params)} positional arguments")
        spec = Specialization(self, tuple(types), {})
        if results is not None and spec.out_types != [str(t) for t in results]:
            got = ", ".join(spec.out_types)
            raise TypeError(f"{self.__name__}: signature declares results {', '.join(map(str, results))} "
                            f"but the function returns {got}")
        return spec

    def _abstract(self, args: tuple[Any, ...], kwargs: dict[str, Any],
                  aliases: bool = False) -> tuple[Any, tuple[Any, ...], dict[str, Any], list[Any]]:
        """Arguments as passed (positional stay positional: vmap's in_dims apply to them;
        keywords stay keywords), arrays replaced by their types, in flattening order. With
        `aliases`, an array passed twice is one argument (an Alias for its repeats)."""
        self._bind(args, kwargs)                 # a clear TypeError for a wrong call
        abstract_args: list[Any] = []
        dynamic: list[Any] = []
        seen: dict[Any, int] | None = {} if aliases else None
        for i, value in enumerate(args):
            abstract_args.append(value if i in self.static_argnums
                                 else _abstract_leafwise(self.arg_name(i), value, dynamic, seen))
        abstract_kwargs = {k: _abstract_leafwise(k, kwargs[k], dynamic, seen) for k in sorted(kwargs)}
        key = pytrees.flatten((tuple(abstract_args), abstract_kwargs))
        return _hashable_key(key), tuple(abstract_args), abstract_kwargs, dynamic

    def _specialization(self, key: Any, make: Callable[[], Specialization]) -> Specialization:
        """The specialization for `key`, made once: when several threads ask for a new one
        together, one compiles it and the others wait for it."""
        spec = self._specializations.get(key)
        if spec is not None:
            return spec
        with self._lock:
            gate = self._compiling.setdefault(key, threading.RLock())
        try:
            with gate:
                spec = self._specializations.get(key)
                if spec is None:
                    spec = self._specializations[key] = make()
        finally:
            with self._lock:
                if self._compiling.get(key) is gate:
                    del self._compiling[key]
        return spec

    def specialize(self, *args: Any, **kwargs: Any) -> Specialization:
        if self._fixed is not None:
            return self._fixed
        key, a_args, a_kwargs, _ = self._abstract(args, kwargs)
        try:
            return self._specialization(key, lambda: Specialization(self, a_args, a_kwargs))
        except (CompileError, InternalCompilerError) as e:
            raise _boundary(e)

    def _install(self, entry: Callable[..., Any] | None) -> None:
        """Calls go to this native entry from now on (to the checked path for None)."""
        self._entry = entry
        self.__call__ = self._dispatch if entry is None else entry

    def _call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The call without the fast path's entry: the specialization for these arguments
        (compiled on first use), called through its checked path."""
        if self._fixed is not None:
            if kwargs:
                args = tuple(self._bind(args, kwargs).args)
            elif self._fixed_called:                 # called again: the native entry from now on
                self._install(self._fixed.entry())
            self._fixed_called = True
            return self._fixed.call(args)
        fast_key = None
        if not kwargs and not self.static_argnums:
            fast_key = _entry_key(args)
        if fast_key is not None:
            spec = self._fast.get(fast_key)
            if spec is not None and not (spec.program.updates and _shared(args)):
                # called again with these types: the native entry from now on
                self._install(spec.entry())
                if float in fast_key:
                    return spec.call(args)
                return spec.call_fast(args)
        key, a_args, a_kwargs, dynamic = self._abstract(args, kwargs)
        spec = self._specializations.get(key)
        if spec is None:
            spec = self._specialization(key, lambda: Specialization(self, a_args, a_kwargs))
        if spec.program.updates and self._tracer is None and _shared(dynamic):
            # it writes into its arguments, and one array is passed twice: the two names
            # are one array, as in NumPy (a specialization of its own)
            key, a_args, a_kwargs, dynamic = self._abstract(args, kwargs, aliases=True)
            windowed = _windowed(a_args, a_kwargs, dynamic) if _shared(dynamic) else None
            if windowed is not None:         # overlapping views: of one window of memory
                key, a_args, a_kwargs, dynamic = windowed
            spec = self._specializations.get(key) or self._specialization(
                key, lambda: Specialization(self, a_args, a_kwargs))
            return spec.call(dynamic)
        if fast_key is not None and len(dynamic) == len(args):
            self._fast[fast_key] = spec
        return spec.call(dynamic)

    # ---- inspection ---------------------------------------------------------------------
    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        """The IR, optimized IR, LLVM IR and assembly for these arguments (or a signature string)."""
        try:
            if len(args) == 1 and isinstance(args[0], str) and not kwargs:
                return Specialization(self, tuple(parse_signature(args[0])[0]), {}).lowered()
            return self.specialize(*args, **kwargs).lowered()
        except (CompileError, InternalCompilerError) as e:
            raise _boundary(e)

    def _for_signature(self, signature: str | None) -> Specialization:
        if signature is None:
            if self._fixed is None:
                raise TypeError(f"{self.__name__}: pass a signature (the kernel has none)")
            return self._fixed
        if signature == self.signature and self._fixed is not None:
            return self._fixed
        try:
            return self._specialization(("signature", signature), lambda: self._compile_signature(signature))
        except (CompileError, InternalCompilerError) as e:
            raise _boundary(e)

    def address(self, signature: str | None = None, prototype: str | None = None) -> int:
        """Address of the C entry point ``int32_t f(void**, void**, const int64_t*)``, or with
        `prototype` (``"double (double)"``) of a function of that C prototype calling it
        (compiler/api/callbacks.py; docs/interop.md)."""
        from compiler.api import callbacks                          # deferred: DEFERRED_IMPORTS
        spec = self._for_signature(signature)
        if prototype is not None:
            return int(callbacks.adapter(self.__name__, spec, prototype).address)
        return int(spec.native.address)

    def ctypes(self, signature: str | None = None, prototype: str | None = None) -> Any:
        """The C entry point as a ctypes function (see docs/abi.md), or with `prototype` a
        function of that C prototype (a ``scipy.LowLevelCallable``; docs/interop.md). It keeps
        the native code alive: it stays callable after the Kernel is gone."""
        from compiler.api import callbacks                          # deferred: DEFERRED_IMPORTS
        spec = self._for_signature(signature)
        if prototype is not None:
            return callbacks.cfunc(self.__name__, spec, prototype)
        entry = KERNEL_CFUNC(spec.native.address)
        setattr(entry, "_aotx_code", spec)      # a ctypes function object takes attributes
        return entry

    # ---- protocols of the layers below (they do not import this module) -----------------
    def __aotx_stage_call__(self, stager: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """Called inside compiled code: stage this kernel for the arguments and inline it
        (a transform's kernel takes NumPy arrays as dynamic arguments, as from Python)."""
        return stager._call_kernel(self, args, kwargs, arrays=self._tracer is not None,
                                   updates=self._tracer is None)

    def __aotx_captures__(self) -> list[Any]:
        """The values its function, defined inside compiled code, reads from the function
        being staged (frontend/closures.py); none for a Python function."""
        inner = getattr(self._tracer, "inner", None)
        if isinstance(inner, Kernel):
            return inner.__aotx_captures__()
        captures = getattr(self.fn, "__aotx_captures__", None)
        return list(captures()) if captures is not None else []

    def __aotx_translate__(self, translate: Callable[[Any], Any]) -> "Kernel":
        """This kernel of a function defined inside compiled code, as seen from another
        function defined there (`translate` maps the values it captures)."""
        inner = getattr(self._tracer, "inner", None)
        if isinstance(inner, Kernel):
            tracer = copy.copy(self._tracer)
            tracer.inner = inner.__aotx_translate__(translate)      # type: ignore[union-attr]
            fn = tracer.inner.fn if self.fn is inner.fn else self.fn  # type: ignore[union-attr]
        else:
            tracer, fn = self._tracer, translate(self.fn)
        return Kernel(fn, tracer=tracer, name=self.__name__, static_argnums=self.static_argnums,
                      fastmath=self.fastmath, boundscheck=self.boundscheck)

    def __aotx_cache_key__(self) -> tuple[Any, ...]:
        """What the on-disk cache key covers of this kernel (compiler/cache.py)."""
        return (self.__name__, bool(self.fastmath), bool(self.parallel), list(self.static_argnums),
                self.boundscheck, self.fn, self._tracer)

    # ---- pickling by value (compiler/api/pickling.py) -------------------------------------
    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled by value: the compiled variants' object code and manifests, and the function
        with its transforms to compile new variants (docs/aot.md)."""
        from compiler.api import pickling                           # deferred: DEFERRED_IMPORTS
        return pickling.reduce_kernel(self, Kernel, Specialization)

    def __copy__(self) -> "Kernel":
        return self                      # a compiled function, as copy.copy(function)

    def __deepcopy__(self, memo: dict[str, Any]) -> "Kernel":
        return self

    def __repr__(self) -> str:
        """The function, where it is defined, its transforms and compiled variants (display.py)."""
        return display.kernel_repr(self)


def _static_argnums(signature: inspect.Signature, nums: Any, name: str) -> tuple[int, ...]:
    """`static_argnums` as non-negative positions, each naming a positional parameter
    (a negative one counts from the end, as in a Python index)."""
    listed = (nums,) if not isinstance(nums, (tuple, list, range)) else tuple(nums)
    params = [p.name for p in signature.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    var = any(p.kind == p.VAR_POSITIONAL for p in signature.parameters.values())
    out = []
    for i in listed:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"jit({name}): static_argnums must be ints (or a tuple of ints), got {i!r}")
        j = int(i) + (len(params) if i < 0 and not var else 0)
        if j < 0 and var:
            raise ValueError(f"jit({name}): static_argnums={i}: a negative position is ambiguous for a "
                             f"function that takes *args; count from 0")
        if j < 0 or (j >= len(params) and not var):
            takes = f"{len(params)} positional parameter{'s' if len(params) != 1 else ''}"
            names = f" ({', '.join(params)})" if params else ""
            raise ValueError(f"jit({name}): static_argnums={i} is out of range: {name} takes {takes}{names}; "
                             f"static_argnums are their positions, 0 to {len(params) - 1}"
                             if params else f"jit({name}): static_argnums={i} is out of range: "
                             f"{name} takes no positional parameters")
        out.append(j)
    return tuple(out)


def _boundary(error: CompileError | InternalCompilerError) -> BaseException:
    """What a public entry point re-raises for a compile error: the error without the
    compiler's frames and causes (its message points at the user's code, or at the dump of
    an internal error), or all of it with AOTX_FRONTEND_DEBUG=1."""
    return error if config.frontend_debug() else user_facing(error)


def _signature_of(fn: Callable[..., Any]) -> inspect.Signature:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):      # NumPy ufuncs and C functions: accept anything
        return inspect.Signature([inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL),
                                  inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)])


def _abstract_leafwise(name: str, value: Any, dynamic: list[Any],
                       seen: dict[Any, int] | None = None) -> Any:
    """Replace array leaves by their types (collecting the arrays in `dynamic`); `name` is
    the argument's, for errors. With `seen`, an ndarray that is the same array as an earlier
    one (same memory, shape, strides and dtype) becomes an Alias of it."""
    leaves, tree = pytrees.flatten(value)
    out: list[Any] = []
    for i, leaf in enumerate(leaves):
        if interop.is_foreign(leaf):     # torch, JAX, ...: an ndarray over its memory
            leaf = interop.to_numpy(_leaf_path(name, value, i), leaf)
        kind = _leaf_kind(leaf, lambda: _leaf_path(name, value, i))
        if kind == "array":
            arr = _native_order(np.asarray(leaf))
            t = TensorType(canonical_dtype(arr.dtype), tuple(arr.shape))
            if seen is not None and isinstance(leaf, np.ndarray) and leaf.size:
                ident = (leaf.__array_interface__["data"][0], leaf.shape, leaf.strides, leaf.dtype.str)
                if ident in seen:
                    out.append(Alias(seen[ident], t))
                    continue
                seen[ident] = len(dynamic)
            out.append(t)
            dynamic.append(leaf if isinstance(leaf, np.ndarray) else arr)   # updates go into leaf
        elif kind == "weak":
            out.append(Weak(TensorType(np.dtype(np.float64), ())))
            dynamic.append(np.float64(leaf))
        elif kind == "weak complex":
            out.append(Weak(TensorType(np.dtype(np.complex128), ())))
            dynamic.append(np.complex128(leaf))
        else:
            out.append(leaf)
    return pytrees.unflatten(tree, out)


SUPPORTED_DTYPES = types.SUPPORTED


def _leaf_kind(leaf: Any, name: Callable[[], str]) -> str:
    """'array' (a dynamic input), 'weak' (a Python float) or 'static' (a compile-time value);
    an argument a kernel cannot take is a TypeError naming it."""
    if isinstance(leaf, (np.ndarray, np.generic)):
        check_array_class(name(), leaf)
        dtype = leaf.dtype.newbyteorder("=") if leaf.dtype.byteorder not in "=|" else leaf.dtype
        if dtype not in types.DTYPES or dtype.names:
            raise TypeError(f"argument '{name()}': arrays of dtype {leaf.dtype} are not supported "
                            f"(supported: {SUPPORTED_DTYPES}){_dtype_hint(leaf.dtype, name())}")
        return "array"
    if isinstance(leaf, float):
        return "weak"
    if isinstance(leaf, complex):
        return "weak complex"
    return "static"


def _dtype_hint(dtype: np.dtype, name: str) -> str:
    target = {"f": "float32" if dtype.itemsize <= 4 else "float64", "u": "uint64", "i": "int64",
              "b": "bool", "c": "complex128"}.get(dtype.kind)
    return f"; convert with {name}.astype(np.{target})" if target else ""


def _native_order(arr: np.ndarray) -> np.ndarray:
    """A big-endian array in native byte order (same values: NumPy converts implicitly)."""
    if arr.dtype.byteorder in "=|":
        return arr
    return arr.astype(arr.dtype.newbyteorder("="))


def _leaf_path(name: str, tree: Any, index: int) -> str:
    """How a user spells leaf `index` of argument `name` (``x``, ``x[1]``, ``x['w']``)."""
    return _paths(pytrees.flatten(tree)[1], name)[index]


def _paths(td: pytrees.PyTreeDef, prefix: str) -> list[str]:
    if td.kind == pytrees.LEAF:
        return [prefix]
    if td.kind == pytrees.DICT:
        keys = [f"[{k!r}]" for k in td.aux]
    elif td.kind == pytrees.NAMEDTUPLE:
        keys = [f".{f}" for f in td.aux._fields]
    else:
        keys = [f"[{i}]" for i in range(len(td.children))]
    return [p for key, child in zip(keys, td.children) for p in _paths(child, prefix + key)]


def _hashable_key(key: Any) -> Any:
    leaves, tree = key
    return (tree, tuple(_hash_leaf(x) for x in leaves))


def _hash_leaf(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return ("ndarray", x.dtype.str, x.shape, x.tobytes())
    try:
        hash(x)
    except TypeError:
        raise TypeError(f"static argument {x!r} is not hashable; pass arrays as NumPy arrays") from None
    return (type(x), x)


@overload
def jit(fn: Callable[..., Any], *, signature: str | None = None,
        static_argnums: int | Sequence[int] = (), fastmath: bool = False, parallel: bool = False,
        cache: bool = True, name: str | None = None, boundscheck: bool | None = None) -> Kernel: ...


@overload
def jit(fn: None = None, *, signature: str | None = None,
        static_argnums: int | Sequence[int] = (), fastmath: bool = False, parallel: bool = False,
        cache: bool = True, name: str | None = None,
        boundscheck: bool | None = None) -> Callable[[Callable[..., Any]], Kernel]: ...


def jit(fn: Callable[..., Any] | None = None, *, signature: str | None = None,
        static_argnums: int | Sequence[int] = (), fastmath: bool = False, parallel: bool = False,
        cache: bool = True, name: str | None = None,
        boundscheck: bool | None = None) -> Kernel | Callable[[Callable[..., Any]], Kernel]:
    """Compile `fn` to a native kernel (lazily per signature, or now with `signature=`).

    ``boundscheck=True`` makes run-time indices that are out of range raise IndexError
    (default: AOTX_BOUNDSCHECK, else they are clamped). ``parallel=True`` splits a large call
    of a kernel that computes its results row by row over threads (AOTX_NUM_THREADS, else the
    CPUs of the affinity mask); any other kernel runs serially, and AOTX_DEBUG=1 says why
    (docs/guide.md, "Multithreading")."""
    options: dict[str, Any] = dict(signature=signature, static_argnums=static_argnums,
                                   fastmath=fastmath, parallel=parallel, cache=cache, name=name,
                                   boundscheck=boundscheck)
    if fn is None:
        return functools.partial(jit, **options)
    return Kernel(fn, **options)


def as_kernel(func: Any) -> Kernel:
    """`func` if it is a Kernel, else a new Kernel of it."""
    return func if isinstance(func, Kernel) else Kernel(func)
