"""Array semantics shared by every NumPy spelling: lifting static values to
constants, NumPy 2 (NEP 50) promotion, broadcasting, elementwise ops, casts
and truth values.

This is the layer between the visitor and the builder (Triton's
``semantic.py``): functions take the :class:`Builder` and frontend values and
return :class:`Staged` values. Result dtypes are not re-derived by hand: we
ask NumPy itself, by running the ufunc on 0-d stand-ins of the operands
(``np.add(np.zeros((), f32), 2.0).dtype``), which also yields NumPy's own
error messages (``numpy boolean subtract ... is not supported``).
"""
from __future__ import annotations

import numbers
import operator
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

import compiler.primitives as P
from compiler.primitives import ops
from compiler.errors import (CompileError, DynamicShapeError, IntegerOverflowError, ShapeMismatchError,
                             TruthValueError, UnsupportedError)
from compiler.ir.builder import Builder
from compiler.ir.core import Value
from compiler.ir import dims
from compiler.ir.dims import Dim, DimExpr
from compiler.ir.types import BOOL, C128, DTYPES, F64, I64, canonical_dtype, is_complex, is_float, is_int
from compiler.frontend.values import LOCAL, VIEW, Reject, Selection, Staged
from compiler.frontend.writes import view_path

PY_SCALARS = (bool, int, float, complex)


# ---- static values -----------------------------------------------------------------

def is_scalar_like(x: Any) -> bool:
    """A static number: Python scalar, NumPy scalar or a symbolic dim."""
    return isinstance(x, (numbers.Number, np.generic, DimExpr))


def is_arraylike(x: Any) -> bool:
    """Something NumPy would turn into an array operand."""
    if isinstance(x, Staged) or is_scalar_like(x) or isinstance(x, np.ndarray):
        return True
    return isinstance(x, (list, tuple)) and all(is_arraylike(e) for e in x)


def supported_dtype(dtype: Any) -> np.dtype:
    """The dtype as one of the supported ones, or a Reject naming it."""
    try:
        return canonical_dtype(dtype)
    except TypeError as e:
        raise Reject(UnsupportedError, str(e), "cast to one of the supported dtypes (docs/guide.md)")


def constant(b: Builder, value: Any, dtype: np.dtype | None = None, weak: bool = False) -> Staged:
    """A staged constant for a static value (kept as its own dtype unless `dtype` is given)."""
    if dtype is None:
        check_int64(value)
    with np.errstate(all="ignore"):
        arr = np.asarray(value) if dtype is None else _cast_static(value, dtype)
    arr = np.array(arr.astype(supported_dtype(arr.dtype), copy=False), order="C")
    ramp = _ramp(b, arr)
    if ramp is not None:
        return Staged(ramp, weak=weak)
    return Staged(b.emit1(P.constant, [], {"value": arr}), weak=weak)


#: an integer ramp at least this long is staged as an index ramp, not stored as a literal
RAMP_MIN = 32


def _ramp(b: Builder, arr: np.ndarray) -> Value | None:
    """``np.arange(n) * step + start`` of a static n (``x[np.arange(len(x)), y]``) as iota
    arithmetic: computed where it is read, never a literal of n elements in the kernel."""
    if arr.ndim != 1 or arr.dtype.kind not in "iu" or arr.size < RAMP_MIN:
        return None
    start, step = int(arr[0]), int(arr[1]) - int(arr[0])
    if not np.array_equal(arr, start + step * np.arange(arr.size, dtype=np.int64)):
        return None
    v = ops.iota(b, arr.dtype, arr.shape, 0)
    if step != 1:
        v = ops.mul(b, v, ops.full(b, step, v.type))
    if start != 0:
        v = ops.add(b, v, ops.full(b, start, v.type))
    return v


def check_int64(value: Any) -> None:
    """A Python int beyond int64 (NumPy would make an object array of it) is refused."""
    if isinstance(value, int) and not isinstance(value, bool) and not -2**63 <= value < 2**63:
        raise Reject(CompileError, f"Python integer {value} out of bounds for int64 (NumPy would "
                     "keep it as a Python object)", f"use float({value}) for a float value")


def _cast_static(value: Any, dtype: np.dtype) -> np.ndarray:
    if isinstance(value, int) and not isinstance(value, bool) and dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise Reject(IntegerOverflowError, f"Python integer {value} out of bounds for {dtype}",
                         _overflow_hint(value, dtype))
    return np.asarray(value).astype(dtype)


def _overflow_hint(value: Any, dtype: np.dtype) -> str:
    info = np.iinfo(dtype) if dtype.kind in "iu" else None
    bounds = f" ({dtype} holds {info.min} to {info.max})" if info is not None else ""
    return (f"NumPy 2 raises OverflowError here too{bounds}: cast the array to a wider dtype "
            "first, e.g. x.astype(np.int64)")


def dim_value(b: Builder, d: Dim) -> Staged:
    """A (symbolic) dimension as a run-time int64 value, weak like a Python int."""
    if isinstance(d, int):
        return constant(b, d, I64, weak=True)
    return Staged(ops.size_of(b, d, I64), weak=True)


def lift(b: Builder, x: Any, dtype: np.dtype | None = None) -> Staged:
    """Any array-like as a Staged value; `dtype` casts static values directly."""
    if isinstance(x, Staged):
        return x if dtype is None else convert(b, x, dtype)
    if isinstance(x, Selection):
        raise Reject(DynamicShapeError, "boolean mask indexing has a shape that depends on the "
                     "values of the mask", "use np.where(mask, x, fill) to keep the shape; a "
                     "reduction of x[mask] (np.sum(x[mask]), x[mask].mean(), .max()) compiles")
    if isinstance(x, DimExpr):
        s = dim_value(b, x)
        return s if dtype is None else convert(b, s, dtype, weak=True)
    if isinstance(x, (list, tuple)) and any(isinstance(e, Staged) or _has_staged(e) for e in x):
        s = stack_nested(b, x)
        return s if dtype is None else convert(b, s, dtype)
    weak = isinstance(x, PY_SCALARS)
    if dtype is None and isinstance(x, PY_SCALARS):
        check_int64(x)
        dtype = result_dtype([x])
    return constant(b, x, dtype, weak=weak)


def stack_nested(b: Builder, items: Sequence[Any], dtype: Any = None) -> Staged:
    """np.array([...]) of a (nested) list holding staged values."""
    leaves = list(_flat(items))
    if dtype is None:
        dtype = supported_dtype(np.result_type(*[
            np.zeros((), x.dtype) if isinstance(x, Staged) else np.asarray(x).dtype for x in leaves]))
    parts = [stack_nested(b, x, dtype) if isinstance(x, (list, tuple))
             else convert(b, lift(b, x), dtype) if isinstance(x, Staged)
             else constant(b, x, dtype) for x in items]
    if any(x.shape != parts[0].shape for x in parts):
        raise Reject(ShapeMismatchError, "all input arrays must have the same shape")
    rows = [ops.reshape(b, x.value, (1,) + tuple(x.shape)) for x in parts]
    return Staged(ops.concatenate(b, rows, 0))


def _has_staged(x: Any) -> bool:
    return isinstance(x, (list, tuple)) and any(isinstance(e, Staged) or _has_staged(e) for e in x)


# ---- promotion: NumPy as the oracle ------------------------------------------------

def stand_in(x: Any) -> Any:
    """A cheap value that NumPy promotes exactly as it would promote `x`."""
    if isinstance(x, Staged):
        if x.weak:
            return {"f": 0.0, "i": 0, "b": False, "c": 0j}[x.dtype.kind]
        return np.zeros((), x.dtype)
    if isinstance(x, DimExpr):
        return 1
    if isinstance(x, PY_SCALARS) or isinstance(x, np.generic):
        return x
    if isinstance(x, np.ndarray):
        return np.zeros((), x.dtype)
    if isinstance(x, (list, tuple)):
        if any(isinstance(e, Staged) for e in x) or _has_staged(x):
            return np.zeros((), result_dtype(list(_flat(x))) if x else F64)
        return np.zeros((), np.asarray(x).dtype)
    raise Reject(UnsupportedError, f"a {type(x).__name__} cannot be used as an array operand")


def _flat(x: Any) -> Any:
    for e in x:
        if isinstance(e, (list, tuple)):
            yield from _flat(e)
        else:
            yield e


def _key(x: Any) -> Any:
    return (type(x), x) if isinstance(x, PY_SCALARS) else (type(x), np.asarray(x).dtype.str)


def oracle(ufunc: Callable[..., Any], operands: Sequence[Any], **kw: Any) -> np.dtype:
    """The dtype NumPy gives `ufunc(*operands)`, or NumPy's error as a Reject."""
    ins = [stand_in(x) for x in operands]
    cache_key = (ufunc, tuple(_key(x) for x in ins), tuple(sorted(kw.items())))
    hit = _ORACLE_CACHE.get(cache_key)
    if hit is not None:
        return hit
    try:
        with np.errstate(all="ignore"):
            out = ufunc(*ins, **kw)
    except OverflowError as e:
        big = [x for x in ins if isinstance(x, int) and not -2**63 <= x < 2**63]
        if big:
            raise Reject(IntegerOverflowError, f"Python integer {big[0]} out of bounds for int64",
                         f"use float({big[0]}) for a float value") from None
        arrays = [x for x in ins if not isinstance(x, PY_SCALARS)]
        hint = _overflow_hint(None, arrays[0].dtype) if arrays else None
        raise Reject(IntegerOverflowError, str(e), hint) from None
    except (TypeError, ValueError) as e:
        raise Reject(CompileError, str(e)) from None
    dtype = np.asarray(out[0] if isinstance(out, tuple) else out).dtype
    if dtype not in DTYPES:
        raise Reject(UnsupportedError, f"{getattr(ufunc, '__name__', ufunc)} would give dtype "
                     f"{dtype}, which is not supported",
                     "cast the bool operands to int32 first (x.astype(np.int32))" if dtype.kind in "iu"
                     else "cast the operands to float32 or float64 first")
    if len(_ORACLE_CACHE) >= _ORACLE_CACHE_SIZE:
        _ORACLE_CACHE.clear()
    _ORACLE_CACHE[cache_key] = dtype
    return dtype


# Keyed on the values of Python scalar operands (they can change the result under NEP 50),
# so a process compiling kernels with ever new constants would grow it without bound.
_ORACLE_CACHE: dict[Any, np.dtype] = {}
_ORACLE_CACHE_SIZE = 4096


def result_dtype(operands: Sequence[Any]) -> np.dtype:
    """np.result_type under NEP 50 (Python scalars weak)."""
    try:
        return supported_dtype(np.result_type(*[stand_in(x) for x in operands]))
    except TypeError as e:
        raise Reject(CompileError, str(e)) from None


def all_weak(operands: Sequence[Any]) -> bool:
    return all((isinstance(x, Staged) and x.weak) or isinstance(x, (*PY_SCALARS, DimExpr))
               for x in operands)


# ---- shapes --------------------------------------------------------------------------

def fmt_shape(shape: Sequence[Dim]) -> str:
    inner = ",".join(str(d) for d in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


def broadcast_shapes(*shapes: Sequence[Dim]) -> tuple[Dim, ...]:
    """NumPy's broadcast of shapes whose dims may be symbolic."""
    ndim = max((len(s) for s in shapes), default=0)
    out: list[Dim] = []
    for axis in range(ndim):
        size: Dim = 1
        for s in shapes:
            d = s[axis - ndim + len(s)] if axis - ndim + len(s) >= 0 else 1
            if d == 1 or d == size:
                continue
            if size != 1:
                _broadcast_error(shapes, size, d)
            size = d
        out.append(size)
    return tuple(out)


def _broadcast_error(shapes: Sequence[Sequence[Dim]], a: Dim, b: Dim) -> None:
    text = " ".join(fmt_shape(s) for s in shapes)
    hint = None
    if not (isinstance(a, int) and isinstance(b, int)):
        hint = (f"the sizes {a} and {b} are not known to be equal when compiling; use the same "
                "symbol in the signature, or a size of 1 to broadcast")
    raise Reject(ShapeMismatchError, f"operands could not be broadcast together with shapes {text} ",
                 hint)


def broadcast_value(b: Builder, v: Value, shape: tuple[Dim, ...]) -> Value:
    """`v` broadcast to `shape` (trailing-aligned) with broadcast_in_dim."""
    if tuple(v.type.shape) == tuple(shape):
        return v
    offset = len(shape) - v.type.ndim
    return ops.broadcast_in_dim(b, v, shape, range(offset, len(shape)))


def reshape_value(b: Builder, v: Value, shape: Sequence[Dim]) -> Value:
    shape = tuple(shape)
    if tuple(v.type.shape) == shape:
        return v
    return b.emit1(P.reshape, [v], {"new_sizes": shape})


def convert_value(b: Builder, v: Value, dtype: np.dtype, **params: Any) -> Value:
    if v.type.dtype == dtype and not params:
        return v
    return b.emit1(P.convert, [v], {"dtype": dtype, **params})


def convert(b: Builder, x: Staged, dtype: np.dtype, weak: bool = False) -> Staged:
    if x.dtype == dtype and x.weak == weak:
        return x
    return Staged(convert_value(b, x.value, dtype), weak=weak)


def operand(b: Builder, x: Any, dtype: np.dtype, shape: tuple[Dim, ...]) -> Value:
    """`x` as a Value of `dtype` broadcast to `shape`."""
    s = x if isinstance(x, Staged) else lift(b, x, dtype)
    return broadcast_value(b, convert_value(b, s.value, dtype), shape)


# ---- elementwise --------------------------------------------------------------------

@dataclass(frozen=True)
class Elementwise:
    """How one NumPy elementwise function becomes IR."""

    ufunc: Callable[..., Any]        # the NumPy function: dtype oracle and name
    prim: Any                        # the primitive (None: `rule` builds it)
    kind: str = "arith"              # arith | compare | logical | round | abs | predicate
    rule: Callable[..., Value] | None = None   # (b, values, dtype) -> Value for specials


def normalize_operand(b: Builder, x: Any) -> Any:
    """Lists and tuples become arrays (stacked when they hold staged values)."""
    if isinstance(x, Selection):
        return lift(b, x)                # x[mask] where its shape matters: DynamicShapeError
    if isinstance(x, (list, tuple)):
        if _has_staged(x):
            return lift(b, x)
        return np.asarray(x)
    return x


def shape_of(x: Any) -> tuple[Dim, ...]:
    return tuple(x.shape) if isinstance(x, Staged) else () if isinstance(x, DimExpr) else np.shape(x)


def apply(b: Builder, spec: Elementwise, args: Sequence[Any]) -> Staged:
    """Apply an elementwise op with NumPy's broadcasting and promotion."""
    args = [normalize_operand(b, a) for a in args]
    out_dtype = oracle(spec.ufunc, args)
    shape = broadcast_shapes(*[shape_of(a) for a in args])
    compute = _compute_dtype(spec, args, out_dtype)
    if spec.kind == "compare":
        known = _compare_out_of_range(spec, args, compute)
        if known is not None:
            return Staged(broadcast_value(b, constant(b, known, BOOL).value, shape), weak=all_weak(args))
    values = [operand(b, a, compute, shape) for a in args]
    if is_complex(compute) and spec.rule is None and spec.kind != "logical":
        out = _complex_elementwise(b, spec, values)
    elif spec.rule is not None:
        out = spec.rule(b, values, out_dtype)
    elif spec.kind == "round" and not is_float(compute):
        out = values[0]                       # floor(int) is the identity
    elif spec.kind == "abs" and compute == BOOL:
        out = values[0]                       # abs(bool) is the identity
    elif spec.kind == "predicate" and not is_float(compute):
        fill = constant(b, spec.ufunc(np.zeros((), compute)), BOOL).value
        out = broadcast_value(b, fill, shape)
    else:
        out = b.emit1(spec.prim, values)
    out = convert_value(b, out, out_dtype)
    return Staged(out, weak=all_weak(args))


_PY_COMPARE = {np.equal: operator.eq, np.not_equal: operator.ne, np.less: operator.lt,
               np.less_equal: operator.le, np.greater: operator.gt, np.greater_equal: operator.ge}


def _compare_out_of_range(spec: Elementwise, args: Sequence[Any], compute: np.dtype) -> bool | None:
    """NumPy 2 compares an integer array with a Python int outside its dtype's range (uint8 < 300)
    by value: the same answer for every element, which this returns (None: in range)."""
    if not is_int(compute) or spec.ufunc not in _PY_COMPARE:
        return None
    info = np.iinfo(compute)
    for i, a in enumerate(args):
        if type(a) is int and not info.min <= a <= info.max:
            inside = info.max if a > info.max else info.min
            return bool(_PY_COMPARE[spec.ufunc](*[a if j == i else inside for j in range(len(args))]))
    return None
def _complex_elementwise(b: Builder, spec: Elementwise, values: list[Value]) -> Value:
    """An elementwise function of complex operands: abs and the predicates are real
    functions of the parts; everything else is its primitive, if it has a complex rule."""
    name = getattr(spec.ufunc, "__name__", "this function")
    if spec.kind == "abs":
        return ops.hypot(b, ops.real(b, values[0]), ops.imag(b, values[0]))
    if spec.kind == "predicate":
        re, im = ops.real(b, values[0]), ops.imag(b, values[0])
        both = ops.and_ if name == "isfinite" else ops.or_
        return both(b, b.emit1(spec.prim, [re]), b.emit1(spec.prim, [im]))
    if name == "sign":
        return _complex_sign(b, values[0])
    if spec.prim is None or spec.prim.complex_rule is None:
        raise Reject(UnsupportedError, f"np.{name} of complex values is not supported yet",
                     "see docs/complex.md for the complex functions that compile")
    return b.emit1(spec.prim, values)


def _complex_sign(b: Builder, z: Value) -> Value:
    """NumPy 2's sign of a complex number, z / |z| (0 at 0), built from differentiable real ops
    (sign is not holomorphic: its derivative comes from the composition; complexmath.csign,
    the same values, divides by |z| also where z = 0, so its derivative there is NaN, while
    this divides by 1 there). An infinite part
    counts as +-1 and the other part as 0 (np.sign(inf + 1j) is 1 + 0j; two infinite parts
    give nan + nanj), as NumPy does."""
    re, im = ops.real(b, z), ops.imag(b, z)
    zero = ops.zeros_like(b, re)
    inf_re, inf_im = ops.isinf(b, re), ops.isinf(b, im)
    any_inf = ops.or_(b, inf_re, inf_im)
    re = ops.select(b, any_inf, ops.select(b, inf_re, ops.sign(b, re), zero), re)
    im = ops.select(b, any_inf, ops.select(b, inf_im, ops.sign(b, im), zero), im)
    size = ops.hypot(b, re, im)
    at_zero = ops.eq(b, size, zero)
    safe = ops.select(b, at_zero, ops.full_like(b, 1.0, size), size)
    both_inf = ops.and_(b, inf_re, inf_im)                  # NumPy: nan + nanj
    nan = ops.full_like(b, float("nan"), size)
    parts = [ops.select(b, both_inf, nan, ops.select(b, at_zero, zero, ops.div(b, v, safe)))
             for v in (re, im)]
    return ops.complex_(b, *parts)


def _compute_dtype(spec: Elementwise, args: Sequence[Any], out_dtype: np.dtype) -> np.dtype:
    if spec.kind == "abs" and is_complex(result_dtype(args)):
        return result_dtype(args)
    if spec.kind == "compare":
        return result_dtype(args)
    if spec.kind == "logical":
        return BOOL
    if spec.kind == "predicate":
        return result_dtype(args)
    return out_dtype


# ---- casts and truth values -------------------------------------------------------------

def astype(b: Builder, x: Any, dtype: Any) -> Staged:
    """x.astype(dtype): a fresh array of `dtype`."""
    target = supported_dtype(dtype)
    s = lift(b, x)
    return Staged(convert_value(b, s.value, target), origin=LOCAL)


def to_python_scalar(b: Builder, x: Staged, kind: str, marker: str) -> Staged:
    """float(x), int(x), bool(x), x.item(): a weak 0-d value marked data-dependent."""
    size = x.type.size
    if not isinstance(size, int):
        raise Reject(TruthValueError, f"{marker} needs an array with one element; the size "
                     f"{size} is symbolic")
    if marker != ".item()" and x.ndim > 0:
        raise Reject(CompileError, "only 0-dimensional arrays can be converted to Python scalars",
                     "index the element first, e.g. x[0], or use x.item()")
    if size != 1:
        raise Reject(CompileError, "can only convert an array of size 1 to a Python scalar")
    v = reshape_value(b, x.value, ())
    if kind == "bool":
        v = truth_value(b, Staged(v))
        kind_dtype = BOOL
    else:
        kind_dtype = {"float": F64, "int": I64, "item": _item_dtype(x.dtype)}[kind]
    return Staged(b.emit1(P.convert, [v], {"dtype": kind_dtype, "data_dependent": marker}),
                  weak=True)


def _item_dtype(dtype: np.dtype) -> np.dtype:
    return {"f": F64, "i": I64, "u": I64, "b": BOOL, "c": C128}[dtype.kind]


def check_single_element(x: Staged, what: str = "") -> None:
    size = x.type.size
    if isinstance(size, int) and size == 1:
        return
    if isinstance(size, int) and size == 0:
        msg = ("The truth value of an empty array is ambiguous. Use `array.size > 0` to check "
               "that an array is not empty.")
    elif isinstance(size, int):
        msg = ("The truth value of an array with more than one element is ambiguous. "
               "Use a.any() or a.all()")
    else:
        msg = (f"The truth value of an array of symbolic size {size} is ambiguous "
               "(it must have exactly one element)")
    hint = "use np.where(cond, a, b) for an elementwise choice, or reduce with .any()/.all()"
    raise Reject(TruthValueError, msg + (f" (in {what})" if what else ""), hint)


def truth_value(b: Builder, x: Staged) -> Value:
    """A bool scalar Value: NumPy's truth value of a single-element array."""
    check_single_element(x)
    v = reshape_value(b, x.value, ())
    if x.dtype == BOOL:
        return v
    zero = constant(b, 0, x.dtype).value
    return ops.ne(b, v, zero)


prod = dims.product          # the number of elements of a shape


def view(value: Value, base: Any, readonly: bool = False) -> Staged:
    """A NumPy view of `base` (a Staged) computed by `value`: writes into it are written
    back into `base` when `value` is an index remap of base's value (writes.py), and are
    NumPy's ValueError when `readonly` (np.broadcast_to, np.diagonal)."""
    if isinstance(base, Staged):
        return Staged(value, origin=VIEW, base=base, path=view_path(value, base.value),
                      readonly=readonly)
    return Staged(value)
