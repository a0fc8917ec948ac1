"""Host callbacks: compiled kernels calling back into Python (``host_call`` ops).

One process-wide trampoline, a ctypes ``CFUNCTYPE``::

    int32_t aotx_host_callback(int64_t call_id, void **buffers, const int64_t *dims)

is registered with LLVM under that symbol name (``llvmlite.binding.add_symbol``),
so generated code refers to it by name and no address is baked into the object.
``call_id`` indexes :data:`_ENTRIES` (the Function, its argument template, output
structure and the dtypes/ranks of its buffers); ``buffers`` holds the input then
output buffer pointers and ``dims`` their sizes, concatenated. The code that
compiles a kernel collects the ids of its call sites (:func:`recording_sites`)
and :func:`release` drops them when the kernel's native code is freed.

The trampoline wraps the buffers in NumPy views (inputs read-only), calls
``fn.forward``, checks the output structure, shapes and dtypes, and copies the
results into the output buffers. ctypes releases the GIL around the kernel call
and the callback takes it again, so kernels with callbacks may run in several
threads. Any exception is stored (per thread) and the trampoline returns 1; the
generated code then leaves through the Codegen's error exit (temporaries freed,
status 2) and ``Specialization.call`` re-raises the stored exception with
:func:`raise_pending`.

Kernels with host callbacks depend on this process (the Function class lives
here): :func:`uses_host_callbacks` tells the cache not to store them and
:func:`check_buildable` lets an ahead-of-time build reject them.
"""
from __future__ import annotations

import contextlib
import contextvars
import ctypes
import itertools
import threading
import traceback
from typing import Any, Iterator, Sequence

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir as ll

from compiler.backend.codegen import I64T, PTR, _declare
from compiler.errors import UnsupportedError
from compiler.frontend.pytrees import LEAF, TUPLE, flatten
from compiler.function.context import ArraySlot, fill

SYMBOL = "aotx_host_callback"
HOST_EFFECT = "host"

CALLBACK_CFUNC = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p),
                                  ctypes.POINTER(ctypes.c_int64))


class _Entry:
    """What the trampoline needs to know about one host_call site."""

    __slots__ = ("fn", "forward", "template", "out_tree", "ins", "outs", "plain", "single", "flat")

    def __init__(self, fn: Any, template: tuple, out_tree: Any, ins: tuple, outs: tuple) -> None:
        self.fn, self.forward, self.template, self.out_tree = fn, fn.forward, template, out_tree
        self.ins = tuple((np.dtype(d), r) for d, r in ins)
        self.outs = tuple((np.dtype(d), r) for d, r in outs)
        self.plain = all(isinstance(t, ArraySlot) for t in template)     # no static arguments
        self.single = out_tree.kind == LEAF                               # forward returns one array
        self.flat = out_tree.kind == TUPLE and all(c.kind == LEAF for c in out_tree.children)


_ENTRIES: dict[int, _Entry] = {}
_IDS = itertools.count()
_LOCK = threading.Lock()
_SITES: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("aotx_host_sites", default=None)
_STATE = threading.local()


def _view(ptr: int | None, dtype: np.dtype, shape: tuple, readonly: bool) -> np.ndarray:
    """A NumPy array over `ptr` (no copy)."""
    n = 1
    for d in shape:
        n *= d
    if not ptr or n == 0:
        return np.zeros(shape, dtype)
    memory: Any = (ctypes.c_char * (n * dtype.itemsize)).from_address(ptr)
    arr = np.frombuffer(memory, dtype)
    if len(shape) != 1:
        arr = arr.reshape(shape)
    if readonly:
        arr.flags.writeable = False
    return arr


def _fill(template: tuple, arrays: Sequence[Any]) -> tuple:
    return fill(template, list(arrays))


def call_forward(fn: Any, template: tuple, out_tree: Any, arrays: Sequence[np.ndarray],
                 expected: Sequence[tuple]) -> list:
    """Run ``fn.forward`` on `arrays` (template order) and check its outputs against
    `expected` ((dtype, shape or None) per output): the reference interpreter's host_call."""
    result = fn.forward(*_fill(template, arrays))
    leaves, tree = flatten(result)
    _check_tree(fn, tree, out_tree)
    return [_check(fn, i, leaf, dtype, shape) for i, (leaf, (dtype, shape)) in enumerate(zip(leaves, expected))]


def _check_tree(fn: Any, tree: Any, out_tree: Any) -> None:
    if tree != out_tree:
        raise ValueError(f"{fn.__name__}.forward (a host callback) returned output of structure {tree}, "
                         f"but the kernel was compiled for {out_tree}")


def _check(fn: Any, i: int, leaf: Any, dtype: np.dtype, shape: tuple | None) -> np.ndarray:
    a = leaf if type(leaf) is np.ndarray else np.asarray(leaf)
    if a.dtype != dtype or (shape is not None and a.shape != shape):
        name = fn.__name__
        want = f"shape {shape if shape is not None else '?'} and dtype {np.dtype(dtype)}"
        raise ValueError(f"{name}.forward (a host callback) returned output {i} with shape {a.shape} and "
                         f"dtype {a.dtype}, but the kernel expects {want} (from {name}.abstract or "
                         "from running forward on zeros at compile time)")
    return a


def _trampoline(call_id: int, buffers: Any, dims: Any) -> int:
    try:
        entry = _ENTRIES[call_id]
        arrays: list[np.ndarray] = []
        outs: list[np.ndarray] = []
        k, s = 0, 0
        for specs, views, readonly in ((entry.ins, arrays, True), (entry.outs, outs, False)):
            for dtype, rank in specs:
                shape = tuple(dims[s:s + rank]) if rank else ()
                s += rank
                views.append(_view(buffers[k], dtype, shape, readonly))
                k += 1
        result = entry.forward(*(arrays if entry.plain else _fill(entry.template, arrays)))
        if entry.single:
            leaves = (result,)
            if isinstance(result, (tuple, list, dict)) or result is None:
                _check_tree(entry.fn, _structure(result), entry.out_tree)
        elif entry.flat and type(result) is tuple and len(result) == len(outs):
            leaves = result
        else:
            leaves, tree = _flatten(result)
            _check_tree(entry.fn, tree, entry.out_tree)
        for i, (leaf, out) in enumerate(zip(leaves, outs)):
            out[...] = _check(entry.fn, i, leaf, out.dtype, out.shape)
        return 0
    except BaseException as e:  # noqa: BLE001 - every failure goes back to the caller
        _STATE.error = e
        return 1


def _flatten(tree: Any) -> tuple:
    return flatten(tree)


def _structure(tree: Any) -> Any:
    return _flatten(tree)[1]


_C_TRAMPOLINE = CALLBACK_CFUNC(_trampoline)     # kept alive for the life of the process
_registered = False


def _ensure_symbol() -> None:
    global _registered
    if not _registered:
        llvm.add_symbol(SYMBOL, ctypes.cast(_C_TRAMPOLINE, ctypes.c_void_p).value)
        _registered = True


@contextlib.contextmanager
def recording_sites() -> Iterator[list[int]]:
    """The ids of the host_call sites lowered inside the block (for :func:`release`)."""
    sites: list[int] = []
    token = _SITES.set(sites)
    try:
        yield sites
    finally:
        _SITES.reset(token)


def release(sites: Sequence[int]) -> None:
    """Forget call sites whose native code is gone (their Function is no longer kept)."""
    with _LOCK:
        for call_id in sites:
            _ENTRIES.pop(call_id, None)


def raise_pending(failure: BaseException | None = None) -> None:
    """Re-raise the exception a host callback of this thread raised (if any).

    The frames of its traceback are cleared first: their locals are views of
    kernel buffers that no longer exist."""
    e = getattr(_STATE, "error", None)
    if e is None:
        return
    _STATE.error = None
    traceback.clear_frames(e.__traceback__)
    e.__suppress_context__ = True
    raise e


def uses_host_callbacks(fn: Any) -> bool:
    """Does the IR function (regions included) call back into Python? Such kernels
    must not be cached on disk nor built ahead of time."""
    return any(HOST_EFFECT in op.prim.effects for op in fn.body.walk())


def check_buildable(fn: Any, what: str = "") -> None:
    """Raise UnsupportedError if `fn` contains host callbacks (for ``aotx build``)."""
    for op in fn.body.walk():
        if HOST_EFFECT in op.prim.effects:
            name = op.params["fn"].__name__
            raise UnsupportedError(f"{what + ': ' if what else ''}{name}.forward runs as a host callback "
                                   "(Python code), which a built library cannot call", op.loc,
                                   "compile it with jit in the process that uses it, or write the "
                                   "forward in the supported subset")


# ---- lowering ---------------------------------------------------------------------------------

def lower_host_call(cg: Any, op: Any, outs: list[Any]) -> None:
    """Store the buffer pointers and sizes, call the trampoline, leave through the
    error exit (status 2) when it fails."""

    _ensure_symbol()
    ins = []
    for v in op.operands:
        buf = cg.buffers.get(v)
        if buf is None:
            buf = cg.buffers[v] = cg.allocate(v)
            cg.compute_into(v, buf)
        ins.append(buf)
    entry = _Entry(op.params["fn"], op.params["template"], op.params["out_tree"],
                   tuple((b.dtype, len(b.shape)) for b in ins), tuple((b.dtype, len(b.shape)) for b in outs))
    with _LOCK:
        call_id = next(_IDS)
        _ENTRIES[call_id] = entry
    sites = _SITES.get()
    if sites is not None:
        sites.append(call_id)
    bufs = ins + list(outs)
    ab, b = cg.alloca_builder, cg.b
    ptrs = ab.alloca(PTR, max(len(bufs), 1))
    for i, buf in enumerate(bufs):
        b.store(b.bitcast(buf.ptr, PTR), b.gep(ptrs, [cg.index(i)]))
    sizes = [d for buf in bufs for d in buf.shape]
    dims = ab.alloca(I64T, max(len(sizes), 1))
    for i, d in enumerate(sizes):
        b.store(cg.dim(d), b.gep(dims, [cg.index(i)]))
    i32 = ll.IntType(32)
    fn = _declare(cg.module, SYMBOL, ll.FunctionType(i32, [I64T, ll.PointerType(PTR), ll.PointerType(I64T)]))
    status = b.call(fn, [ll.Constant(I64T, call_id), ptrs, dims])
    ok = cg.fn.append_basic_block("host.ok")
    b.cbranch(b.icmp_signed("!=", status, ll.Constant(i32, 0)), cg.error_exit(2), ok)
    b.position_at_end(ok)
