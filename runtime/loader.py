"""Calling a native kernel from Python: argument checking, output allocation
and the ctypes call. Used for JIT-compiled kernels and for built libraries.

A kernel that writes into some of its arguments (``x += y``, ``x[1:-1] = ...``
under plain ``jit``: docs/guide.md, "In-place updates of arguments") lists
them in ``updates``: its last results are their new values, which
:meth:`NativeKernel.__call__` copies into the caller's arrays after a
successful call (a strided array is updated in place, not a contiguous copy). The
kernel computes those in ``in_place`` in the argument's own buffer (compiler/backend/
inplace.py): the argument is passed as that output too, and only a converted copy of it
(another dtype's byte order, a non-contiguous array) is copied back.
Before anything runs, an updated argument must be a writeable ndarray of the
kernel's dtype that shares no memory with another argument.
"""
from __future__ import annotations

import ctypes
from typing import Any, Callable, Sequence

import numpy as np

from runtime import interop, rng
from runtime.abi import ArgSpec, ErrorSite, evaluate_dim, is_symbol, kernel_error

KERNEL_CFUNC = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p),
                                ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int64))


def check_array_class(name: str, value: Any) -> None:
    """Refuse ndarray subclasses whose operators or reductions mean something else.

    A kernel computes with plain ndarray semantics, so an argument whose class
    redefines them would silently get another answer than the uncompiled
    function: ``np.matrix`` (``*`` is a matrix product, results stay 2-d),
    ``np.ma.MaskedArray`` (masked elements are skipped) and any other subclass.
    Accepted: exact ``np.ndarray``, ``np.memmap`` (storage only, same semantics)
    and NumPy scalars. Anything else is a TypeError naming the argument.
    """
    if not isinstance(value, np.ndarray) or type(value) is np.ndarray or isinstance(value, np.memmap):
        return
    if isinstance(value, np.matrix):
        why = "np.matrix has other semantics (* is a matrix product, results stay 2-d)"
        fix = f"np.asarray({name}) for elementwise semantics"
    elif isinstance(value, np.ma.MaskedArray):
        why = "np.ma.MaskedArray has other semantics (masked elements are skipped)"
        fix = f"{name}.filled(fill_value) (or np.ma.getdata({name}) to use the data under the mask)"
    else:
        cls = type(value)
        why = (f"{cls.__module__}.{cls.__qualname__} is an ndarray subclass, whose operations may "
               f"differ from ndarray's")
        fix = f"np.asarray({name})"
    raise TypeError(f"argument '{name}': {why}; compiled kernels take plain arrays: pass {fix}")


def as_array(name: str, value: Any) -> np.ndarray:
    """`value` as an ndarray (NumPy's implicit conversion), or an error naming `name`."""
    if isinstance(value, np.ndarray):
        check_array_class(name, value)
        return value
    if value is None:
        raise TypeError(f"argument '{name}': expected an array, got None")
    if interop.is_foreign(value):            # torch, JAX, ...: DLPack first (runtime/interop.py)
        return interop.to_numpy(name, value)
    try:
        return np.asarray(value)
    except (ValueError, TypeError, OverflowError) as e:
        raise type(e)(f"argument '{name}': cannot convert {type(value).__name__} to an array: {e}") from None


def convert_argument(name: str, value: Any, spec: ArgSpec) -> np.ndarray:
    """`value` as a contiguous array of spec's dtype, or TypeError/ValueError naming `name`.

    Conversions NumPy would do implicitly ('safe' casting: int32 -> float64,
    float32 -> float64, bool -> any, byte order; Python scalars and lists) are
    done; others are errors (docs/guide.md, "Argument checking and implicit
    conversions"). Non-contiguous arrays are copied. ndarray subclasses other
    than np.memmap are refused (:func:`check_array_class`).
    """
    if value is None:
        raise TypeError(f"argument '{name}': expected an array of type {spec.type_text}, got None")
    arr = as_array(name, value)
    if arr.dtype != spec.dtype:
        if isinstance(value, (int, float, bool)) and not isinstance(value, np.generic) and \
                np.can_cast(type(value), spec.dtype, "same_kind"):
            try:
                arr = np.asarray(value, dtype=spec.dtype)     # Python scalars are weak (NEP 50)
            except OverflowError:
                raise OverflowError(f"argument '{name}': Python integer {value} out of bounds for "
                                    f"{spec.dtype}") from None
        elif np.can_cast(arr.dtype, spec.dtype, "safe"):
            arr = arr.astype(spec.dtype)
        else:
            raise TypeError(f"argument '{name}': expected dtype {spec.type_text.split('[')[0]} "
                            f"({spec.dtype}), got {arr.dtype}; convert with .astype(np.{spec.dtype})")
    if arr.ndim != len(spec.dims):
        raise ValueError(f"argument '{name}': expected {len(spec.dims)}-d array of type "
                         f"{spec.type_text}, got shape {arr.shape}")
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    return arr


def bind_symbols(names: Sequence[str], arrays: Sequence[np.ndarray], specs: Sequence[ArgSpec]) -> dict[str, int]:
    """Sizes of the symbolic dims, checked for agreement across arguments."""
    env: dict[str, int] = {}
    origin: dict[str, str] = {}
    for name, arr, spec in zip(names, arrays, specs):
        for axis, (d, n) in enumerate(zip(spec.dims, arr.shape)):
            if isinstance(d, int):
                if n != d:
                    raise ValueError(f"argument '{name}': dimension {axis} must be {d} "
                                     f"(type {spec.type_text}), got shape {arr.shape}")
            elif is_symbol(d):
                if d in env and env[d] != n:
                    raise ValueError(f"argument '{name}': dimension {axis} is {n} but symbol '{d}' "
                                     f"is {env[d]} from argument '{origin[d]}'")
                env.setdefault(d, n)
                origin.setdefault(d, name)
    for name, arr, spec in zip(names, arrays, specs):
        for axis, (d, n) in enumerate(zip(spec.dims, arr.shape)):
            if isinstance(d, str) and not is_symbol(d) and evaluate_dim(d, env) != n:
                raise ValueError(f"argument '{name}': dimension {axis} must be {d} = "
                                 f"{evaluate_dim(d, env)}, got {n}")
    return env


class NativeKernel:
    """A loaded kernel entry point with its argument and result specs."""

    def __init__(self, name: str, address: int, inputs: Sequence[ArgSpec], outputs: Sequence[ArgSpec],
                 symbols: Sequence[str], keepalive: Any = None, errors: Sequence[ErrorSite] = (),
                 random: bool = False, updates: Sequence[int] = (),
                 contiguous: Sequence[int] = (), in_place: Sequence[int] = ()) -> None:
        self.name = name
        self.address = address
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.symbols = list(symbols)
        self.errors = tuple(errors)      # status ERROR_BASE + i: the exception of errors[i]
        self.random = random             # takes a fresh key per call after the symbols
        # inputs the kernel writes into: input updates[k]'s new value is the output
        # len(outputs) - len(updates) + k, copied into the caller's array after the call
        self.updates = tuple(int(i) for i in updates)
        # of those, the ones written through a reshape: NumPy's reshape is a view (so the
        # write reaches the caller's array) only of a C-contiguous array
        self.contiguous = tuple(int(i) for i in contiguous)
        # of those, the ones the kernel writes where they live: the argument (the caller's
        # array, or its converted copy) is passed as its new value's output too, and needs no
        # copy afterwards unless it was converted (docs/abi.md)
        self.in_place = tuple(int(i) for i in in_place)
        self._fn = KERNEL_CFUNC(address)
        self._keepalive = keepalive

    def __call__(self, *args: Any) -> list[np.ndarray]:
        """The results (without the new values of updated arguments, which are written into
        the caller's arrays)."""
        if len(args) != len(self.inputs):
            raise TypeError(f"{self.name}() takes {len(self.inputs)} array arguments, got {len(args)}")
        names = [s.name for s in self.inputs]
        if self.updates:
            check_updated(self.name, names, args, self.inputs, self.updates, self.contiguous)
        arrays = [convert_argument(n, a, s) for n, a, s in zip(names, args, self.inputs)]
        env = bind_symbols(names, arrays, self.inputs)
        outs = self.call_checked(arrays, env)
        return write_back(outs, args, self.updates)

    def call_checked(self, arrays: Sequence[np.ndarray], env: dict[str, int]) -> list[np.ndarray]:
        """Call with arrays already converted and symbols bound."""
        shapes = [tuple(evaluate_dim(d, env) for d in s.dims) for s in self.outputs]
        # a negative size: the kernel's own checks raise NumPy's error at the user's line
        negative = any(n < 0 for shape in shapes for n in shape)
        outs = [np.empty(tuple(max(n, 0) for n in shape), dtype=s.dtype) for shape, s in zip(shapes, self.outputs)]
        first = len(outs) - len(self.updates)
        for k, i in enumerate(self.updates):
            if i in self.in_place:              # written where the argument lives
                outs[first + k] = arrays[i]
        # fresh pointer arrays per call: a kernel may be called from several threads
        in_ptrs = (ctypes.c_void_p * max(len(arrays), 1))(*[a.ctypes.data for a in arrays])
        out_ptrs = (ctypes.c_void_p * max(len(outs), 1))(*[o.ctypes.data for o in outs])
        words = [env[s] for s in self.symbols]
        if self.random:                  # the call's key, after the symbols (docs/abi.md)
            words.append(rng.next_call_key())
        syms = (ctypes.c_int64 * max(len(words), 1))(*words)
        status = self._fn(in_ptrs, out_ptrs, syms)
        if status:
            raise kernel_error(self.name, status, self.errors, env)
        if negative:
            raise ValueError(f"{self.name}: negative dimensions are not allowed (result shapes "
                             f"{', '.join(str(s) for s in shapes)} for {env})")
        return outs


def check_updated(kernel: str, names: Sequence[str], args: Sequence[Any], specs: Sequence[ArgSpec],
                  updates: Sequence[int], contiguous: Sequence[int] = ()) -> None:
    """Can the kernel's writes go into the caller's arrays as NumPy's would? Each updated
    argument must be an ndarray (TypeError), writeable (ValueError, as NumPy's
    "assignment destination is read-only"), of the kernel's dtype (TypeError: the kernel
    computed in another dtype than NumPy would), and share no memory with another argument
    (ValueError: the kernel read the other argument before the write). A 0-d argument may
    also be a number or a NumPy scalar, which NumPy's ``x += 1`` rebinds: nothing to update."""
    for i in updates:
        name, value, spec = names[i], args[i], specs[i]
        if not spec.dims and not isinstance(value, np.ndarray):
            continue
        if not isinstance(value, np.ndarray):
            raise TypeError(f"{kernel}: argument '{name}' is updated in place by the kernel, so it "
                            f"must be a NumPy array, got {type(value).__name__}")
        if not value.flags.writeable:
            raise ValueError(f"{kernel}: argument '{name}' is read-only, but the kernel writes into "
                             "it (assignment destination is read-only); pass a writeable array, "
                             f"e.g. {name}.copy()")
        if value.dtype.newbyteorder("=") != spec.dtype:
            raise TypeError(f"{kernel}: argument '{name}' is updated in place by the kernel as "
                            f"{spec.dtype}, but it is an array of {value.dtype}; NumPy would compute "
                            f"the update in {value.dtype}: pass an array of dtype {spec.dtype}")
        if i in contiguous and not value.flags.c_contiguous:
            raise ValueError(f"{kernel}: the kernel writes into argument '{name}' through a "
                             "reshape, which NumPy makes a view (so the write reaches the array) "
                             f"only of a C-contiguous array, and '{name}' is not; pass "
                             f"np.ascontiguousarray({name}), or reshape a copy in the function")
        for j, other in enumerate(args):
            if j != i and isinstance(other, np.ndarray) and _overlap(value, other):
                raise ValueError(f"{kernel}: arguments '{name}' and '{names[j]}' share memory and "
                                 f"the kernel writes into '{name}'; pass a copy of one of them"
                                 " (a kernel compiled lazily by jit, without signature=, handles "
                                 "arrays that overlap as NumPy does)")


def _overlap(a: np.ndarray, b: np.ndarray) -> bool:
    if not np.may_share_memory(a, b):
        return False
    try:
        work: Any = 10_000               # bounded effort (the stubs list only -1 and 0)
        return bool(np.shares_memory(a, b, max_work=work))
    except np.exceptions.TooHardError:
        return True


def write_back(outs: list[np.ndarray], args: Sequence[Any], updates: Sequence[int]) -> list[np.ndarray]:
    """Copy the new values of updated arguments (the last outputs) into the caller's arrays;
    the other outputs."""
    if not updates:
        return outs
    n = len(outs) - len(updates)
    for k, i in enumerate(updates):
        if not isinstance(args[i], np.ndarray) or outs[n + k] is args[i]:
            continue               # a 0-d scalar (NumPy rebinds it), or written where it lives
        np.copyto(args[i], outs[n + k].reshape(args[i].shape), casting="no"
                  if args[i].dtype == outs[n + k].dtype else "equiv")
    return outs[:n]


#: a maker of native entries (``compiler.backend.pyentry.make_entry``, installed here when the
#: compiler is imported: this package never imports it): with it, a kernel of ``runtime.load``
#: called twice with the same argument types is called through a native entry as a jit kernel
#: is (docs/performance.md, "Call overhead"); without it, through its Python path
entry_maker: Callable[..., Any] | None = None
