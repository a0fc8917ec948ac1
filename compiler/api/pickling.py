"""Pickling a Kernel by value (docs/aot.md, "Pickling kernels: process pools and Dask").

``pickle.dumps(kernel)`` carries two things:

* every compiled variant (specialization) as its object code plus the manifest that
  describes it (argument and result types, symbolic dims, error sites, BLAS routines,
  result structure), the same content as an on-disk cache entry. The receiving process
  loads the object code with MCJIT (``cache.restore``: checked before LLVM sees it) and
  calls it without staging or running LLVM, if it is the same aotx, LLVM and CPU target;
  otherwise the variant is dropped and compiled again on first use.
* what compiles new variants: the Python function and the transform stack (tracer),
  pickled by value with cloudpickle when it is installed (a function of ``__main__``, a
  notebook cell or a lambda travels as its code, with the source text of its file so
  that the frontend can read it where the file does not exist), else with the standard
  pickler by reference (a function of an importable module). When the function cannot
  be pickled or unpickled, the kernel still runs its compiled variants, and a call that
  needs a new one raises :class:`KernelNotCompilable`, naming the compiled signatures.

A variant that calls back into Python (``compiler.Function`` host callbacks) holds
addresses of this process and is not pickled: it is compiled again where needed.

This module does not import kernel.py: ``Kernel.__reduce__`` passes its own classes. The
pickle names ``runtime.pickling.restore_kernel`` with the rest as one nested pickle, so that
a process without the compiler gets a clear UnpicklingError instead of pickle's
ModuleNotFoundError for ``compiler``.
"""
from __future__ import annotations

import inspect
import io
import linecache
import pickle
import sys
import threading
import types
import uuid
import weakref
from typing import Any, Callable

import llvmlite

from compiler import cache, version
from compiler.errors import KernelNotCompilable
from compiler.backend import target as targets
from compiler.function.trampoline import uses_host_callbacks
from runtime import pickling as runtime_pickling
from runtime import trees

try:                                       # optional: functions of __main__ by value
    import cloudpickle  # type: ignore[import-untyped]
except ImportError:                        # pragma: no cover - cloudpickle ships with dask
    cloudpickle = None

FORMAT = 1

#: kernels unpickled in this process, by token: the same kernel pickled many times (a Dask
#: task graph) loads its object code once per process
_RESTORED: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
_LOCK = threading.RLock()           # reentrant: a transform's tracer unpickles its inner kernel


def reduce_kernel(kernel: Any, kernel_class: type, spec_class: type) -> tuple[Any, ...]:
    """``Kernel.__reduce__``: (restore_kernel, (classes, state))."""
    token = kernel.__dict__.get("_pickle_token")
    if token is None:
        token = kernel._pickle_token = uuid.uuid4().hex
    variants = []
    for key, spec in list(kernel._specializations.items()) + [(None, kernel._fixed)]:
        if spec is not None:
            v = _variant(key, spec)
            if v is not None:
                variants.append(v)
    state = {"format": FORMAT, "token": token, "name": kernel.__name__,
             "qualname": kernel.__qualname__, "module": kernel.__module__,
             "doc": kernel.__doc__, "signature": kernel.signature,
             "parameters": _parameters(kernel._signature),
             "options": dict(static_argnums=tuple(kernel.static_argnums), fastmath=kernel.fastmath,
                             parallel=kernel.parallel, cache=kernel.cache,
                             boundscheck=kernel.boundscheck),
             "environment": _environment(), "variants": variants,
             "function": _dump_function(kernel.fn, kernel._tracer)}
    return runtime_pickling.restore_kernel, (pickle.dumps((kernel_class, spec_class, state)),)


def restore_state(blob: bytes) -> Any:
    """The second half of runtime.pickling.restore_kernel, once the compiler is importable."""
    kernel_class, spec_class, state = pickle.loads(blob)
    return restore_kernel(kernel_class, spec_class, state)


def _environment() -> list[Any]:
    return [version.__version__, llvmlite.__version__, list(targets.host().magic())]


def _variant(key: Any, spec: Any) -> dict[str, Any] | None:
    """One compiled specialization as plain data, or None if it cannot travel."""
    native = spec.native
    if isinstance(native, cache.DeferredNative) or getattr(spec, "object", None) is None:
        return None                                  # not compiled yet
    function = getattr(spec.program, "function", None)
    if function is not None and uses_host_callbacks(function):
        return None                                  # addresses of this process
    try:
        pickle.dumps((key, spec.abstract, spec.program.out_tree))
    except (pickle.PicklingError, TypeError, AttributeError):
        return None                                  # a static argument that does not pickle
    meta = {"symbol": spec.symbol,
            "inputs": [a.to_json() for a in native.inputs],
            "outputs": [a.to_json() for a in native.outputs],
            "symbols": list(native.symbols), "out_types": list(spec.out_types),
            "errors": [e.to_json() for e in native.errors], "random": native.random,
            "updates": list(native.updates), "contiguous": list(native.contiguous),
            "in_place": list(native.in_place),
            "routines": list(getattr(native._keepalive, "library", ())),
            "out_tree": trees.LEAF}    # checked by cache.restore; the real tree is `out_tree`
    return {"key": key, "fixed": key is None, "abstract": spec.abstract, "meta": meta,
            "object": bytes(spec.object), "out_tree": spec.program.out_tree,
            "boundscheck": spec.boundscheck}


def _parameters(signature: inspect.Signature) -> list[tuple[str, int, bool]]:
    """The parameters' names and kinds (whether they have a default), for binding calls
    when the function itself does not travel."""
    return [(p.name, int(p.kind), p.default is not p.empty) for p in signature.parameters.values()]


# ---- the function and the transform stack -------------------------------------------------

def _dump_function(fn: Any, tracer: Any) -> dict[str, Any]:
    try:
        if cloudpickle is not None:
            data = cloudpickle.dumps((fn, tracer))
        else:
            buffer = io.BytesIO()
            _ReferencePickler(buffer).dump((fn, tracer))
            data = buffer.getvalue()
    except Exception as e:                  # noqa: BLE001 - any pickling failure: compiled variants only
        return {"error": f"{type(e).__name__}: {e}"}
    return {"data": data, "sources": _sources(fn)}


class _ReferencePickler(pickle.Pickler):
    """The standard pickler, where a function decorated with @jit in an importable module
    (whose module attribute is the Kernel, not the function) is found through its Kernel."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, types.FunctionType):
            module_name, qualname = str(obj.__module__), str(obj.__qualname__)
            owner: Any = sys.modules.get(module_name)
            for part in qualname.split("."):
                owner = getattr(owner, part, None)
            if owner is not obj and getattr(owner, "__wrapped__", None) is obj \
                    and module_name != "__main__":
                return _wrapped_function, (module_name, qualname)
        return NotImplemented


def _wrapped_function(module: str, qualname: str) -> Any:
    owner: Any = sys.modules.get(module) or __import__(module, fromlist=["_"])
    for part in qualname.split("."):
        owner = getattr(owner, part)
    return owner.__wrapped__


def _sources(fn: Any) -> dict[str, Any]:
    """Where the functions that may travel by value come from: cloudpickle ships a code
    object without its file name ("<dynamic-code>"), and the frontend reads a function's
    source through it. Kept: the file and the text of the function and of the functions
    of its module that it may call, restored on the other side (`_relocate`)."""
    code = getattr(fn, "__code__", None)
    if cloudpickle is None or code is None:
        return {}
    module = getattr(fn, "__module__", None)
    functions = [fn] + [g for g in getattr(fn, "__globals__", {}).values()
                        if isinstance(g, types.FunctionType) and g.__module__ == module]
    places = {f"{f.__code__.co_name}:{f.__code__.co_firstlineno}": f.__code__.co_filename
              for f in functions}
    files = {}
    for file in set(places.values()):
        lines = linecache.getlines(file, getattr(fn, "__globals__", None))
        if lines:
            files[file] = lines
    return {"places": places, "files": files}


def _relocate(fn: Any, sources: dict[str, Any]) -> None:
    """Give the functions unpickled by value their file back, its text in linecache when
    this machine has not the same file."""
    for file, lines in sources.get("files", {}).items():
        if linecache.getlines(file) != lines:       # not on this machine, or another version
            linecache.cache[file] = (sum(map(len, lines)), None, list(lines), file)
    places = sources.get("places", {})
    functions = [g for g in [fn, *getattr(fn, "__globals__", {}).values()]
                 if isinstance(g, types.FunctionType)]
    for f in functions:
        code = f.__code__
        file = places.get(f"{code.co_name}:{code.co_firstlineno}")
        if file is not None and code.co_filename != file:
            f.__code__ = _with_filename(code, file)


def _with_filename(code: types.CodeType, file: str) -> types.CodeType:
    consts = tuple(_with_filename(c, file) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    return code.replace(co_filename=file, co_consts=consts)


def _load_function(entry: dict[str, Any]) -> tuple[Any, Any, str | None]:
    """(fn, tracer, None), or (None, None, why not)."""
    if "error" in entry:
        return None, None, f"it could not be pickled ({entry['error']})"
    try:
        fn, tracer = pickle.loads(entry["data"])
    except Exception as e:                  # noqa: BLE001 - e.g. its module is not installed here
        return None, None, f"it could not be unpickled here ({type(e).__name__}: {e})"
    _relocate(fn, entry.get("sources", {}))
    return fn, tracer, None


# ---- restoring ------------------------------------------------------------------------------

def restore_kernel(kernel_class: type, spec_class: Any, state: dict[str, Any]) -> Any:
    """The pickled Kernel, its compiled variants loaded (once per process and token)."""
    if state.get("format") != FORMAT:
        raise pickle.UnpicklingError(f"kernel {state.get('name')!r} was pickled by another aotx "
                                     f"(format {state.get('format')}, this one reads {FORMAT})")
    with _LOCK:
        kernel = _RESTORED.get(state["token"])
        if kernel is None:
            kernel = _new_kernel(kernel_class, state)
            _RESTORED[state["token"]] = kernel
    _add_variants(kernel, spec_class, state)
    if kernel.signature is not None and kernel._fixed is None \
            and not isinstance(kernel._tracer, _NotCompilable):
        kernel._fixed = kernel._compile_signature(kernel.signature)     # as jit(signature=) does
    return kernel


def _new_kernel(kernel_class: type, state: dict[str, Any]) -> Any:
    fn, tracer, why = _load_function(state["function"])
    name = state["name"]
    if fn is None:
        fn = _placeholder(name, state["qualname"], state["parameters"])
        tracer = _NotCompilable(name, why or "", [])
    options = dict(state["options"])
    if isinstance(tracer, _NotCompilable):
        options["cache"] = False           # the placeholder is no key for the on-disk cache
    kernel = kernel_class(fn, name=name, tracer=tracer, **options)
    kernel.__doc__, kernel.__module__ = state["doc"], state["module"]
    kernel.__qualname__ = state["qualname"]
    kernel.signature = state["signature"]
    kernel._pickle_token = state["token"]
    return kernel


def _add_variants(kernel: Any, spec_class: Any, state: dict[str, Any]) -> None:
    same_place = state["environment"] == _environment()
    target = targets.host()
    for v in state["variants"]:
        if (kernel._fixed if v["fixed"] else kernel._specializations.get(v["key"])) is not None:
            continue
        spec = None
        if same_place:
            try:
                restored = cache.restore(v["meta"], v["object"], target, kernel.__name__)
            except cache.BadEntry:
                restored = None
            if restored is not None:
                spec = spec_class.__new__(spec_class)
                spec.kernel, spec.abstract, spec.symbol = kernel, v["abstract"], v["meta"]["symbol"]
                spec.artifacts, spec.boundscheck = None, v["boundscheck"]
                spec.program = cache.RestoredProgram(v["out_tree"], updates=restored.native.updates,
                                                     contiguous=restored.native.contiguous)
                spec.out_types, spec.object, spec.native = restored.out_types, v["object"], restored.native
                spec.state, spec.seconds = "unpickled", None      # for repr(kernel)
        if spec is None:
            if isinstance(kernel._tracer, _NotCompilable):
                kernel._tracer.note_dropped(state["environment"])
            continue                         # compiled again on first use (if it can be)
        if v["fixed"]:
            kernel._fixed = spec
        else:
            kernel._specializations[v["key"]] = spec
        if isinstance(kernel._tracer, _NotCompilable):
            kernel._tracer.signatures.append(", ".join(a.type_text for a in spec.native.inputs))


def _placeholder(name: str, qualname: str, parameters: list[tuple[str, int, bool]]) -> Callable[..., Any]:
    """A function with the kernel's parameters (for binding calls), which never runs."""
    def missing(*args: Any, **kwargs: Any) -> Any:
        raise KernelNotCompilable(f"{name}: the Python function of this unpickled kernel is not available")
    params = [inspect.Parameter(n, inspect._ParameterKind(k),
                                default=None if has_default else inspect.Parameter.empty)
              for n, k, has_default in parameters]
    setattr(missing, "__signature__", inspect.Signature(params))
    missing.__name__, missing.__qualname__ = name, qualname
    return missing


class _NotCompilable:
    """The tracer of a kernel unpickled without its function: a new variant is an error."""

    def __init__(self, name: str, why: str, signatures: list[str]) -> None:
        self.name, self.why, self.signatures = name, why, signatures
        self.dropped: list[Any] = []

    def note_dropped(self, environment: list[Any]) -> None:
        self.dropped.append(environment)

    def __call__(self, abstract_args: tuple[Any, ...], abstract_kwargs: dict[str, Any]) -> Any:
        compiled = "; ".join(f"({s})" for s in self.signatures) or "none"
        dropped = ""
        if self.dropped:
            aotx, llvm_version, _ = self.dropped[0]
            dropped = (f" ({len(self.dropped)} compiled variant(s) were built for another aotx, "
                       f"LLVM or CPU: aotx {aotx}, llvmlite {llvm_version})")
        raise KernelNotCompilable(
            f"{self.name}: this kernel was unpickled without its Python function ({self.why}), so "
            f"it runs only the variants compiled before pickling, and these arguments need a new "
            f"one. Compiled signatures: {compiled}{dropped}. Call it with arguments of a compiled "
            f"signature, compile the signatures you need before pickling (or use "
            f"jit(signature=...)), or define the function in a module importable on both sides "
            f"(with cloudpickle installed, a function of __main__ travels by value)")
