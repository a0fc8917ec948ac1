"""The NumPy surface as data: np.* functions, ndarray methods and attributes,
and Python operators, each mapped to the builder-level function that stages
it; plus :data:`UNSUPPORTED`, the functions we reject with a specific
message (and the closest supported alternative).

Handlers take the :class:`Builder` first, then NumPy's own arguments (same
names and defaults as NumPy), so binding errors read like NumPy's.
"""
from __future__ import annotations

import ast
import difflib
import warnings
from typing import Any, Callable

import numpy as np

from compiler.errors import CompileError, DynamicShapeError, OutParameterError, \
    UnsupportedError
from compiler.frontend import arrays as A
from compiler.frontend import factor as F
from compiler.frontend import fft as FFT
from compiler.frontend import indexing as I
from compiler.frontend import linalg as L
from compiler.frontend import eig as E
from compiler.frontend import everyday as EV
from compiler.frontend import solve as LU
from compiler.frontend import spectral as SP
from compiler.frontend import reductions as R
from compiler.frontend import shapes as S
from compiler.frontend import sorting as SO
from compiler.frontend import special as SPC
from compiler.frontend import ufuncs as U
from compiler.frontend.values import Reject, Staged
from compiler.ir.builder import Builder
from compiler.ir.dims import DimExpr

Handler = Callable[..., Any]


def _ufunc_handler(name: str) -> Handler:
    def handler(b: Builder, *args: Any, out: Any = None, dtype: Any = None) -> Staged:
        if out is not None:
            raise Reject(OutParameterError, "out= is not supported: compiled functions return "
                         "their results", "return the value instead; the compiler fuses anyway")
        res = U.ufunc(b, name, *args)
        return res if dtype is None else A.astype(b, res, dtype)
    handler.__name__ = name
    return handler


def _power(b: Builder, x1: Any, x2: Any, out: Any = None, dtype: Any = None) -> Staged:
    if out is not None:
        raise Reject(OutParameterError, "out= is not supported: compiled functions return "
                     "their results", "return the value instead; the compiler fuses anyway")
    res = U.power(b, x1, x2, operator=False)
    return res if dtype is None else A.astype(b, res, dtype)


def _cast_handler(dtype: Any) -> Handler:
    def handler(b: Builder, x: Any = 0) -> Staged:
        return A.astype(b, A.normalize_operand(b, x), dtype)
    return handler


def _reduction(kind: str) -> Handler:
    def handler(b: Builder, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
                keepdims: bool = False, **kw: Any) -> Staged:
        _no_extra(kind, kw)
        return R.reduce(b, kind, a, axis, dtype, out, keepdims)
    return handler


def _minmax(kind: str) -> Handler:
    def handler(b: Builder, a: Any, axis: Any = None, out: Any = None, keepdims: bool = False,
                **kw: Any) -> Staged:
        _no_extra(kind, kw)
        return R.reduce(b, kind, a, axis, None, out, keepdims)
    return handler


def _no_extra(name: str, kw: dict[str, Any]) -> None:
    if kw:
        raise Reject(UnsupportedError, f"{name}: the keyword argument(s) {', '.join(kw)} are not "
                     "supported")


def _arg(which: str) -> Handler:
    return lambda b, a, axis=None, out=None, *, keepdims=False: R.arg_reduce(
        b, which, a, axis, out, keepdims)


def _scan(kind: str) -> Handler:
    return lambda b, a, axis=None, dtype=None, out=None: R.scan(b, kind, a, axis, dtype, out)


def _where(b: Builder, condition: Any, x: Any = None, y: Any = None) -> Staged:
    if x is None and y is None:
        raise Reject(DynamicShapeError, "np.where(cond) with one argument is np.nonzero: its "
                     "output shape depends on the values", "use np.where(cond, x, fill)")
    return U.where(b, condition, x, y)


def _reshape_fn(b: Builder, a: Any, shape: Any = None, order: str = "C", *,
                newshape: Any = None) -> Staged:
    _order(order)
    return S.reshape(b, a, shape if shape is not None else newshape)


def _order(order: str) -> bool:
    """Reject orders other than C; True otherwise (the check comes first in an expression)."""
    if order not in ("C", "A", "K"):
        raise Reject(UnsupportedError, f"order={order!r} is not supported", "use C order")
    return True


def _round(b: Builder, a: Any, decimals: int = 0, out: Any = None) -> Staged:
    R._no_out(out)
    return U.round_(b, a, decimals)


def _append(b: Builder, arr: Any, values: Any, axis: Any = None) -> Staged:
    if axis is None:
        return S.concatenate(b, [S.ravel(b, arr), S.ravel(b, A.normalize_operand(b, values))], 0)
    return S.concatenate(b, [arr, values], axis)


def _split(equal: bool) -> Handler:
    def handler(b: Builder, ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Staged]:
        return S.split(b, ary, indices_or_sections, axis, equal)
    return handler


def _row_stack(b: Builder, tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Staged:
    """np.row_stack: NumPy 2 deprecates the alias of np.vstack; it warns the same way (once,
    when the function compiles)."""
    warnings.warn("`row_stack` alias is deprecated. Use `np.vstack` directly.", DeprecationWarning,
                  stacklevel=2)
    return S.vstack(b, tup, dtype)


def _einsum(b: Builder, *operands: Any, out: Any = None, dtype: Any = None, order: str = "K",
            casting: str = "safe", optimize: Any = False) -> Staged:
    """np.einsum with a subscripts string, or in sublist form:
    ``np.einsum(a, [0, 1], b, [1, 2], [0, 2])`` (integers name the axes, ``...`` allowed)."""
    R._no_out(out)
    if operands and isinstance(operands[0], str):
        return L.einsum(b, operands[0], *operands[1:], dtype=dtype)
    args = list(operands)
    arrays, terms = args[0::2], args[1::2]
    output = None
    if len(args) % 2 == 1:
        arrays, output = arrays[:-1], args[-1]
    spec = ",".join(_sublist(t) for t in terms)
    if output is not None:
        spec += "->" + _sublist(output)
    return L.einsum(b, spec, *arrays, dtype=dtype)


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _sublist(labels: Any) -> str:
    if isinstance(labels, Staged) or not isinstance(labels, (list, tuple)):
        raise Reject(CompileError, "einsum sublist form: each operand must be followed by a list "
                     "of axis labels (integers, or ...)")
    out = []
    for lab in labels:
        if lab is Ellipsis:
            out.append("...")
        elif isinstance(lab, (int, np.integer)) and not isinstance(lab, bool) and 0 <= lab < 52:
            out.append(_LETTERS[int(lab)])
        else:
            raise Reject(CompileError, f"einsum sublist label {lab!r}: labels are integers in "
                         "[0, 52) or Ellipsis")
    return "".join(out)


def index_concatenate(b: Builder, obj: Any, key: Any) -> Any:
    """np.r_[...] / np.c_[...] with array items: NumPy's AxisConcatenator (slices with static
    bounds become np.arange / np.linspace, scalars weak one-element arrays, ``ndmin`` and
    ``trans1d`` as in NumPy; a leading string 'axis', 'axis,ndmin' or 'axis,ndmin,trans1d')."""
    items = list(key) if isinstance(key, tuple) else [key]
    axis, ndmin, trans1d = (-1, 2, 0) if isinstance(obj, type(np.c_)) else (0, 1, -1)
    if items and isinstance(items[0], str):
        directive = items.pop(0)
        try:
            parts = [int(p) for p in directive.split(",")]
        except ValueError:
            raise Reject(UnsupportedError, f"np.r_ directive {directive!r} is not supported",
                         "use an 'axis', 'axis,ndmin' or 'axis,ndmin,trans1d' string") from None
        axis = parts[0]
        if len(parts) > 1:
            ndmin = parts[1]
        if len(parts) > 2:
            trans1d = parts[2]
    pieces: list[Any] = []
    for item in items:
        if isinstance(item, slice):
            bounds = [item.start, item.stop, item.step]
            if any(isinstance(v, Staged) for v in bounds):
                raise Reject(UnsupportedError, "np.r_ slices need static bounds: the length "
                             "would depend on run-time values", "use np.arange with static bounds")
            if any(isinstance(v, DimExpr) for v in bounds) and not isinstance(item.step, complex):
                piece: Any = S.arange(b, 0 if item.start is None else item.start, item.stop,
                                      item.step)
            else:
                piece = np.r_[item]
            scalar = False
        else:
            item = A.normalize_operand(b, item)
            scalar = isinstance(item, A.PY_SCALARS) or (isinstance(item, Staged) and item.weak)
            piece = item
        pieces.append((piece, scalar))
    if not pieces:
        return np.r_[()]
    dtype = A.result_dtype([p for p, _ in pieces])
    arrays = []
    for piece, _ in pieces:
        x = A.convert(b, A.lift(b, piece, dtype if not isinstance(piece, Staged) else None), dtype)
        nd = x.ndim
        if nd < ndmin:
            x = Staged(A.reshape_value(b, x.value, (1,) * (ndmin - nd) + tuple(x.shape)))
            if trans1d != -1:
                k2, k1 = ndmin - nd, trans1d
                if k1 < 0:
                    k1 += k2 + 1
                perm = list(range(ndmin))
                perm = perm[:k1] + perm[k2:] + perm[k1:k2]
                x = S.transpose(b, x, tuple(perm))
        arrays.append(x)
    return S.concatenate(b, arrays, axis)


INDEX_OBJECTS = (type(np.r_), type(np.c_))


def _take(b: Builder, a: Any, indices: Any, axis: Any = None) -> Staged:
    x = A.lift(b, a)
    if axis is None:
        return I.getitem(b, S.ravel(b, x), indices if not isinstance(indices, list)
                         else np.asarray(indices))
    ax = S.normalize_axis(axis, x.ndim)
    idx = np.asarray(indices) if isinstance(indices, list) else indices
    return I.getitem(b, x, (slice(None),) * ax + (idx,))


def _shape(b: Builder, a: Any) -> tuple[Any, ...]:
    return tuple(A.shape_of(A.normalize_operand(b, a)))


_FUNCTIONS_BY_NAME: dict[str, Handler] = {
    # creation
    "zeros": S.zeros, "ones": S.ones, "empty": S.zeros, "full": S.full,
    "zeros_like": S.zeros_like, "ones_like": S.ones_like, "empty_like": S.zeros_like,
    "full_like": S.full_like, "eye": S.eye, "identity": lambda b, n, dtype=float: S.eye(b, n, dtype=dtype),
    "arange": S.arange, "linspace": S.linspace, "array": S.array,
    "asarray": lambda b, a, dtype=None, order=None: S.array(b, a, dtype, copy=False),
    "asanyarray": lambda b, a, dtype=None, order=None: S.array(b, a, dtype, copy=False),
    "ascontiguousarray": lambda b, a, dtype=None: S.array(b, a, dtype, copy=False),
    "copy": lambda b, a, order="K": S.copy(b, a),
    "tril": lambda b, m, k=0: S.tri_mask(b, m, k, True),
    "triu": lambda b, m, k=0: S.tri_mask(b, m, k, False),
    "diag": S.diag, "diagonal": S.diagonal,
    # elementwise specials
    "where": _where, "clip": lambda b, a, a_min=None, a_max=None, out=None: (
        R._no_out(out), U.clip(b, a, a_min, a_max))[1],
    "round": _round, "around": _round, "divmod": lambda b, x1, x2: U.divmod_(b, x1, x2),
    "power": _power,
    # reductions and scans
    "sum": _reduction("sum"), "prod": _reduction("prod"), "max": _minmax("max"),
    "amax": _minmax("max"), "min": _minmax("min"), "amin": _minmax("min"),
    "all": _minmax("all"), "any": _minmax("any"),
    "mean": R.mean, "average": lambda b, a, axis=None: R.mean(b, a, axis),
    "var": R.var, "std": R.std, "ptp": R.ptp, "count_nonzero": R.count_nonzero,
    "argmax": _arg("argmax"), "argmin": _arg("argmin"),
    "cumsum": _scan("cumsum"), "cumprod": _scan("cumprod"),
    # contractions
    "dot": L.dot, "matmul": L.matmul, "inner": L.inner, "outer": L.outer, "vdot": L.vdot,
    "tensordot": L.tensordot, "einsum": _einsum, "trace": L.trace,
    # shapes
    "reshape": _reshape_fn, "ravel": lambda b, a, order="C": (_order(order), S.ravel(b, a))[1],
    "transpose": lambda b, a, axes=None: S.transpose(b, a, axes),
    "permute_dims": lambda b, a, axes=None: S.transpose(b, a, axes),
    "swapaxes": S.swapaxes, "moveaxis": S.moveaxis, "expand_dims": S.expand_dims,
    "squeeze": S.squeeze, "broadcast_to": S.broadcast_to, "broadcast_arrays": S.broadcast_arrays,
    "concatenate": S.concatenate, "concat": S.concatenate, "stack": S.stack, "hstack": S.hstack,
    "vstack": S.vstack, "dstack": S.dstack, "column_stack": S.column_stack,
    "flip": S.flip, "fliplr": lambda b, m: S.flip(b, m, 1), "flipud": lambda b, m: S.flip(b, m, 0),
    "tile": S.tile, "repeat": S.repeat, "roll": S.roll, "pad": S.pad, "append": _append,
    "atleast_1d": lambda b, a: S.atleast_nd(b, a, 1), "atleast_2d": lambda b, a: S.atleast_nd(b, a, 2),
    "atleast_3d": lambda b, a: S.atleast_nd(b, a, 3), "split": _split(True),
    "array_split": _split(False), "hsplit": S.split_along("hsplit"),
    "vsplit": S.split_along("vsplit"), "dsplit": S.split_along("dsplit"), "row_stack": _row_stack,
    "rollaxis": S.rollaxis, "rot90": S.rot90,
    "take": _take, "shape": _shape, "ndim": lambda b, a: len(_shape(b, a)),
    "size": lambda b, a: S.prod(_shape(b, a)),
    # casts
    "float32": _cast_handler(np.float32), "float64": _cast_handler(np.float64),
    "int32": _cast_handler(np.int32), "int64": _cast_handler(np.int64),
    "bool_": _cast_handler(np.bool_), "double": _cast_handler(np.float64),
    "single": _cast_handler(np.float32), "intp": _cast_handler(np.int64),
    "int8": _cast_handler(np.int8), "int16": _cast_handler(np.int16),
    "uint8": _cast_handler(np.uint8), "uint16": _cast_handler(np.uint16),
    "uint32": _cast_handler(np.uint32), "uint64": _cast_handler(np.uint64),
    "float16": _cast_handler(np.float16), "half": _cast_handler(np.float16),
    "uintp": _cast_handler(np.uint64),
    # complex numbers (docs/complex.md)
    "complex64": _cast_handler(np.complex64), "complex128": _cast_handler(np.complex128),
    "cdouble": _cast_handler(np.complex128), "csingle": _cast_handler(np.complex64),
    "real": U.real, "imag": U.imag, "conj": U.conj, "conjugate": U.conj, "angle": U.angle,
    "iscomplexobj": lambda b, x: A.result_dtype([A.normalize_operand(b, x)]).kind == "c",
    "isrealobj": lambda b, x: A.result_dtype([A.normalize_operand(b, x)]).kind != "c",
    "iscomplex": U.iscomplex, "isreal": U.isreal, "real_if_close": U.real_if_close,
}
# sorting (frontend/sorting.py, docs/sorting.md)
_FUNCTIONS_BY_NAME.update({
    "sort": SO.sort, "argsort": SO.argsort, "partition": SO.partition,
    "argpartition": SO.argpartition, "lexsort": SO.lexsort, "take_along_axis": SO.take_along_axis,
    "searchsorted": SO.searchsorted, "median": SO.median, "nanmedian": SO.nanmedian,
    "quantile": SO.quantile, "percentile": SO.percentile, "nanquantile": SO.nanquantile,
    "nanpercentile": SO.nanpercentile, "unique": SO.unique,
})
_FUNCTIONS_BY_NAME.update({name: _ufunc_handler(name) for name in U.UFUNCS
                           if hasattr(np, name) and name not in _FUNCTIONS_BY_NAME})
_FUNCTIONS_BY_NAME["abs"] = _ufunc_handler("absolute")

NUMPY_FUNCTIONS: dict[Any, Handler] = {getattr(np, n): h for n, h in _FUNCTIONS_BY_NAME.items()
                                       if hasattr(np, n)}
NUMPY_FUNCTIONS[np.linalg.norm] = L.norm
NUMPY_FUNCTIONS[np.lib.stride_tricks.sliding_window_view] = S.sliding_window_view
NUMPY_FUNCTIONS[np.vander] = S.vander
NUMPY_FUNCTIONS[np.linalg.matmul] = L.matmul
NUMPY_FUNCTIONS.update(LU.FUNCTIONS)      # solve, inv, det, slogdet, matrix_power, multi_dot, tensor*

# factorizations and the small np.linalg functions (compiler/frontend/factor.py; docs/linalg.md)
NUMPY_FUNCTIONS.update({
    np.linalg.cholesky: F.cholesky, np.linalg.qr: F.qr, np.cross: F.cross, np.kron: F.kron,
    np.linalg.cross: F.linalg_cross, np.linalg.outer: F.linalg_outer,
    np.linalg.trace: F.linalg_trace, np.linalg.diagonal: F.linalg_diagonal,
    np.linalg.vecdot: F.vecdot, np.linalg.matrix_transpose: F.linalg_matrix_transpose,
    np.linalg.tensordot: L.tensordot})
for _name, _handler in (("vecdot", F.vecdot), ("matrix_transpose", F.linalg_matrix_transpose)):
    if hasattr(np, _name):
        NUMPY_FUNCTIONS[getattr(np, _name)] = _handler

# general eigenproblems (frontend/eig.py)
NUMPY_FUNCTIONS[np.linalg.eig] = E.eig
NUMPY_FUNCTIONS[np.linalg.eigvals] = E.eigvals

# symmetric eigenproblems and the SVD (frontend/spectral.py; docs/linalg.md)
NUMPY_FUNCTIONS.update({np.linalg.eigh: SP.eigh, np.linalg.eigvalsh: SP.eigvalsh, np.linalg.svd: SP.svd,
                        np.linalg.svdvals: SP.svdvals, np.linalg.pinv: SP.pinv,
                        np.linalg.lstsq: SP.lstsq, np.linalg.matrix_rank: SP.matrix_rank,
                        np.linalg.cond: SP.cond, np.linalg.vector_norm: L.vector_norm,
                        np.linalg.matrix_norm: L.matrix_norm})

# NumPy's everyday functions (frontend/everyday.py; docs/numpy_functions.md), and the
# reductions with where= and initial= (they replace the handlers above)
NUMPY_FUNCTIONS.update(EV.FUNCTIONS)
_FUNCTIONS_BY_NAME.update({fn.__name__: h for fn, h in EV.FUNCTIONS.items()})

# special functions: signbit, copysign, heaviside, sinc, nextafter, spacing, frexp, ldexp, modf,
# float_power (frontend/special.py; docs/special.md)
NUMPY_FUNCTIONS.update(SPC.NUMPY_FUNCTIONS)

# np.fft (frontend/fft.py; docs/fft.md)
NUMPY_FUNCTIONS.update(FFT.FUNCTIONS)

# np.* functions that always stage, even on static arguments: their results are
# local arrays the function may update (y = np.zeros(3); y[i] = ...).
# (np.array, np.arange and np.linspace of static values stay static: they are small constants,
# and static index arrays give compile-time bounds checks; an update makes them staged.)
CREATION = {getattr(np, n) for n in ("zeros", "ones", "empty", "full", "zeros_like", "ones_like",
                                     "empty_like", "full_like", "eye", "identity", "copy", "diag",
                                     "tril", "triu")}

# NumPy helpers about dtypes and shapes, evaluated in Python on static arguments
STATIC_NUMPY = {np.result_type, np.promote_types, np.can_cast, np.isscalar, np.broadcast_shapes,
                np.iscomplexobj, np.isrealobj, np.issubdtype, np.iinfo, np.finfo}

STATIC_NUMPY.add(np.errstate)   # `with np.errstate(...)`: a no-op in compiled code (stager.py)

DTYPE_CALLABLES = {np.float32, np.float64, np.int32, np.int64, np.bool_, np.double, np.single,
                   np.intp, np.int8, np.int16, np.uint8, np.uint16, np.uint32, np.uint64, np.float16,
                   np.half, np.uintp, np.complex64, np.complex128}


# ---- ndarray methods and attributes -----------------------------------------------------


def _varargs_shape(args: tuple[Any, ...]) -> Any:
    return args[0] if len(args) == 1 else args


def _astype(b: Builder, x: Any, dtype: Any, order: str = "K", casting: str = "unsafe",
            subok: bool = True, copy: bool = True) -> Staged:
    return A.astype(b, x, dtype)


def _item(b: Builder, x: Any, *args: Any) -> Staged:
    if args:
        return A.to_python_scalar(b, I.getitem(b, x, args if len(args) > 1 else args[0]), "item",
                                  ".item()")
    return A.to_python_scalar(b, A.lift(b, x), "item", ".item()")


METHODS: dict[str, Handler] = {
    "sum": _reduction("sum"), "prod": _reduction("prod"), "max": _minmax("max"),
    "min": _minmax("min"), "all": _minmax("all"), "any": _minmax("any"), "mean": R.mean,
    "var": R.var, "std": R.std, "argmax": _arg("argmax"), "argmin": _arg("argmin"),
    "cumsum": _scan("cumsum"), "cumprod": _scan("cumprod"), "astype": _astype,
    "reshape": lambda b, x, *shape, order="C": (_order(order), S.reshape(
        b, x, _varargs_shape(shape)))[1],
    "transpose": lambda b, x, *axes: S.transpose(b, x, _varargs_shape(axes) if axes else None),
    "swapaxes": S.swapaxes, "squeeze": S.squeeze, "ravel": lambda b, x, order="C": S.ravel(b, x),
    "flatten": lambda b, x, order="C": S.flatten(b, x), "copy": lambda b, x, order="C": S.copy(b, x),
    "clip": lambda b, x, min=None, max=None, out=None: (R._no_out(out), U.clip(b, x, min, max))[1],
    "round": _round, "dot": L.dot, "item": _item, "take": _take, "diagonal": S.diagonal,
    "trace": L.trace, "repeat": S.repeat, "conj": U.conj, "conjugate": U.conj,
    "__array__": lambda b, x: x,
    "argsort": SO.argsort,
}

METHODS.update(EV.METHODS)    # where= and initial= (frontend/everyday.py)

METHOD_ALTERNATIVES = {
    "tolist": "return the array itself", "fill": "use y[...] = value or np.full",
    "nonzero": "use np.where(cond, x, fill)",
    "resize": "use np.reshape or np.pad", "put": "use y[idx] = v", "tofile": None,
    "view": "use .astype for a conversion",
}

ATTRIBUTES: dict[str, Callable[[Builder, Staged], Any]] = {
    "shape": lambda b, x: tuple(x.shape), "ndim": lambda b, x: x.ndim,
    "size": lambda b, x: x.type.size, "dtype": lambda b, x: x.dtype,
    "itemsize": lambda b, x: x.dtype.itemsize,
    "nbytes": lambda b, x: S.prod((x.type.size, x.dtype.itemsize)),
    "T": lambda b, x: S.transpose(b, x), "mT": S.matrix_transpose,
    "real": U.real, "imag": U.imag,
}


# ---- operators ------------------------------------------------------------------------------

BINARY_OPERATORS: dict[type, Handler] = {
    ast.Add: lambda b, x, y: U.binary(b, "add", x, y),
    ast.Sub: lambda b, x, y: U.binary(b, "subtract", x, y),
    ast.Mult: lambda b, x, y: U.binary(b, "multiply", x, y),
    ast.Div: lambda b, x, y: U.binary(b, "true_divide", x, y),
    ast.FloorDiv: lambda b, x, y: U.binary(b, "floor_divide", x, y),
    ast.Mod: lambda b, x, y: U.binary(b, "remainder", x, y),
    ast.Pow: U.power,
    ast.BitAnd: lambda b, x, y: U.binary(b, "bitwise_and", x, y),
    ast.BitOr: lambda b, x, y: U.binary(b, "bitwise_or", x, y),
    ast.BitXor: lambda b, x, y: U.binary(b, "bitwise_xor", x, y),
    ast.LShift: lambda b, x, y: U.binary(b, "left_shift", x, y),
    ast.RShift: lambda b, x, y: U.binary(b, "right_shift", x, y),
    ast.MatMult: L.matmul,
}

COMPARE_OPERATORS: dict[type, str] = {
    ast.Eq: "equal", ast.NotEq: "not_equal", ast.Lt: "less", ast.LtE: "less_equal",
    ast.Gt: "greater", ast.GtE: "greater_equal",
}

UNARY_OPERATORS: dict[type, str] = {ast.USub: "negative", ast.UAdd: "positive",
                                    ast.Invert: "invert"}


# ---- rejections --------------------------------------------------------------------------------

_DYNAMIC = "use np.where(cond, x, fill) to keep a static shape"
_IO = "do I/O outside the compiled function and pass the arrays in"
_CUSTOM = "wrap it in a compiler.Function (it then runs as a host callback)"

UNSUPPORTED: dict[str, tuple[type, str, str | None]] = {
    "nonzero": (DynamicShapeError, "np.nonzero returns arrays whose length depends on the values",
                _DYNAMIC),
    "argwhere": (DynamicShapeError, "np.argwhere returns an array whose length depends on the "
                 "values", _DYNAMIC),
    "flatnonzero": (DynamicShapeError, "np.flatnonzero returns an array whose length depends on "
                    "the values", _DYNAMIC),
    "extract": (DynamicShapeError, "np.extract returns an array whose length depends on the "
                "values", _DYNAMIC),
    "trim_zeros": (DynamicShapeError, "np.trim_zeros's length depends on the values", _DYNAMIC),
    "fmod": (UnsupportedError, "np.fmod (C remainder) is not supported",
             "np.remainder / % (Python-style modulo) is supported"),
    "vectorize": (UnsupportedError, "np.vectorize runs Python per element",
                  "write the body with array operations, or use compiler.vmap"),
    "frompyfunc": (UnsupportedError, "np.frompyfunc runs Python per element",
                   "write the body with array operations, or use compiler.vmap"),
    "apply_along_axis": (UnsupportedError, "np.apply_along_axis runs Python per slice",
                         "use compiler.vmap"),
    "random": (UnsupportedError, "np.random is not supported inside compiled functions",
               "use compiler.random (e.g. compiler.random.normal(shape)), or pass random "
               "arrays in as arguments"),
    "linalg": (UnsupportedError, "this np.linalg function is not supported", _CUSTOM),
    "fft": (UnsupportedError, "np.fft is not supported", _CUSTOM),
}
# the Array API's unique_* functions: np.unique's static size= is the way out
for _name, _ret in (("values", ""), ("counts", ", return_counts=True"),
                    ("inverse", ", return_inverse=True"),
                    ("all", ", return_index=True, return_inverse=True, return_counts=True")):
    UNSUPPORTED[f"unique_{_name}"] = (
        DynamicShapeError, f"np.unique_{_name} returns arrays whose length depends on the values",
        f"use np.unique(x{_ret}, size=k): the first k unique values, padded (fill_value=)")
for _io in ("save", "savez", "savez_compressed", "load", "loadtxt", "savetxt", "genfromtxt",
            "fromfile", "memmap", "fromregex"):
    UNSUPPORTED[_io] = (UnsupportedError, f"np.{_io} does I/O, which compiled code cannot do", _IO)


def unsupported_numpy(name: str) -> Reject:
    """The rejection for np.<name> (a specific message, or the closest supported names)."""
    root = name.split(".")[0]
    if name in UNSUPPORTED or root in UNSUPPORTED:
        cls, message, hint = UNSUPPORTED.get(name, UNSUPPORTED[root])
        if root in ("linalg", "random", "fft") and name != root:
            message = f"np.{name} is not supported inside compiled functions" if root != "linalg" \
                else f"np.{name} is not supported"
        return Reject(cls, message, hint)
    close = difflib.get_close_matches(name.split(".")[-1], list(_FUNCTIONS_BY_NAME), n=3, cutoff=0.6)
    hint = f"supported alternatives: {', '.join('np.' + c for c in close)}" if close else _CUSTOM
    return Reject(UnsupportedError, f"np.{name} is not supported", hint)


def unsupported_method(name: str) -> Reject:
    if name in METHOD_ALTERNATIVES:
        return Reject(UnsupportedError, f"ndarray.{name} is not supported",
                      METHOD_ALTERNATIVES[name] or _CUSTOM)
    close = difflib.get_close_matches(name, list(METHODS) + list(ATTRIBUTES), n=3, cutoff=0.6)
    hint = f"did you mean: {', '.join('.' + c for c in close)}?" if close else None
    return Reject(UnsupportedError, f"ndarray has no supported attribute or method {name!r}", hint)


def numpy_name(fn: Any) -> str | None:
    """'linalg.inv' for np.linalg.inv, 'nonzero' for np.nonzero; None if fn is not NumPy's."""
    module = getattr(fn, "__module__", None) or ""
    name = getattr(fn, "__name__", None)
    if isinstance(fn, np.ufunc):
        return fn.__name__
    if name is None or not (module == "numpy" or module.startswith("numpy.")):
        return None
    for sub in ("linalg", "fft", "random"):
        if f".{sub}" in module or module.endswith(sub):
            return f"{sub}.{name}"
    return name
