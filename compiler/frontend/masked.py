"""``x[mask]`` for a boolean mask known only at run time: a :class:`Selection`.

NumPy's ``x[mask]`` has as many elements as the mask has True entries, a
shape that depends on data. The frontend keeps the read as a Selection (the
array and the mask broadcast to its shape) and accepts the uses whose result
shape is static:

* reductions over all selected elements: ``np.sum(x[m])``, ``x[m].mean()``,
  ``.max()``, ``.min()``, ``.prod()``, ``.var()``, ``.std()``, ``.any()``,
  ``.all()``, ``np.count_nonzero(x[m])``: a reduction of ``np.where(m, x, identity)``
  (max/min of no element raise NumPy's ValueError when the kernel runs);
* elementwise arithmetic with scalars and with selections by the same mask
  (``x[m] - L``, ``np.exp(x[m])``): a selection again;
* assignment through the same mask: ``y[m] = x[m] - L`` is ``np.where(m, x - L, y)``.

Any other use is the DynamicShapeError a mask read always was.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from compiler.errors import CompileError, DynamicShapeError
from compiler.frontend import arrays as A
from compiler.frontend import reductions as R
from compiler.frontend.ufuncs import binary
from compiler.frontend.values import Reject, Selection, Staged, hashable
from compiler.frontend.writes import same_value
from compiler.ir.builder import Builder
from compiler.ir.types import BOOL, F64, is_float
from compiler.primitives import ops

MESSAGE = "boolean mask indexing has a shape that depends on the values of the mask"
HINT = ("use np.where(mask, x, fill) to keep the shape; a reduction of x[mask] (np.sum(x[mask]), "
        "x[mask].mean(), .max(), np.count_nonzero(x[mask])) and y[mask] = x[mask] - c compile")


def dynamic(what: str = "") -> Reject:
    return Reject(DynamicShapeError, MESSAGE + (f" ({what})" if what else ""), HINT)


def select(b: Builder, x: Staged, mask: Staged) -> Selection:
    """x[mask] for a staged mask over x's leading axes."""
    m = mask.value if mask.ndim == x.ndim else ops.broadcast_in_dim(b, mask.value, x.shape,
                                                                    range(mask.ndim))
    return Selection(Staged(x.value), Staged(m))


# ---- elementwise ---------------------------------------------------------------------------


def elementwise(b: Builder, fn: Callable[..., Any], args: list[Any]) -> Selection:
    """fn applied to selections (of one mask) and scalars: the selection of fn's result."""
    mask: Staged | None = None
    plain: list[Any] = []
    for a in args:
        if isinstance(a, Selection):
            if mask is not None and not same_value(mask.value, a.mask.value):
                raise dynamic("two selections by different masks")
            mask = a.mask if mask is None else mask
            plain.append(a.values)
        elif isinstance(a, Staged) and a.ndim > 0:
            raise dynamic("combined with an array of another shape")
        elif isinstance(a, np.ndarray) and a.ndim > 0:
            raise dynamic("combined with an array of another shape")
        else:
            plain.append(a)
    assert mask is not None
    out = fn(*plain)
    if not isinstance(out, Staged) or tuple(out.shape) != tuple(mask.shape):
        raise dynamic()
    return Selection(out, mask)


# ---- reductions ----------------------------------------------------------------------------


def _fill(b: Builder, s: Selection, fill: Any) -> Staged:
    v = s.values
    f = A.broadcast_value(b, A.constant(b, fill, v.dtype).value, tuple(v.shape))
    return Staged(ops.select(b, s.mask.value, v.value, f))


def _count(b: Builder, s: Selection) -> Staged:
    return R.reduce(b, "sum", s.mask, None, np.int64)


def _identity(kind: str, dtype: np.dtype) -> Any:
    if dtype == BOOL:
        return kind == "min"
    if is_float(dtype):
        return -np.inf if kind == "max" else np.inf
    info = np.iinfo(dtype)
    return info.min if kind == "max" else info.max


def reduce(b: Builder, kind: str, s: Any, axis: Any = None, dtype: Any = None, out: Any = None,
           keepdims: bool = False, ddof: int = 0) -> Staged:
    """`kind` (sum, prod, max, min, mean, var, std, any, all, count_nonzero) of the selected
    elements (x[mask] is 1-d: axis may be None, 0 or -1)."""
    R._no_out(out)
    if axis not in (None, 0, -1, (0,), (-1,)):
        raise Reject(CompileError, f"axis {axis} is out of bounds for array of dimension 1 "
                     "(x[mask] is one-dimensional)")
    if kind in ("sum", "prod"):
        res = R.reduce(b, kind, _fill(b, s, 0 if kind == "sum" else 1), None, dtype)
    elif kind in ("max", "min"):
        nonempty = R.reduce(b, "any", s.mask, None).value
        ufunc = "maximum" if kind == "max" else "minimum"
        ops.check(b, nonempty, "ValueError",
                  f"zero-size array to reduction operation {ufunc} which has no identity")
        res = R.reduce(b, kind, _fill(b, s, _identity(kind, s.values.dtype)), None)
    elif kind in ("any", "all"):
        nz = binary(b, "not_equal", s.values, 0) if s.values.dtype != BOOL else s.values
        res = R.reduce(b, kind, _fill(b, Selection(nz, s.mask), kind == "all"), None)
    elif kind == "count_nonzero":
        nz = binary(b, "not_equal", s.values, 0) if s.values.dtype != BOOL else s.values
        res = R.reduce(b, "sum", _fill(b, Selection(nz, s.mask), False), None, np.int64)
    elif kind in ("mean", "var", "std"):
        res = _moments(b, kind, s, dtype, ddof)
    else:
        raise dynamic(f".{kind}()")
    if keepdims:
        res = Staged(A.reshape_value(b, res.value, (1,)))
    return res


def _moments(b: Builder, kind: str, s: Selection, dtype: Any, ddof: int) -> Staged:
    if dtype is None and not is_float(s.values.dtype):
        dtype = F64
    n = _count(b, s)
    total = R.reduce(b, "sum", _fill(b, s, 0), None, dtype)
    mean = A.convert(b, binary(b, "true_divide", total, n), total.dtype)
    if kind == "mean":
        return mean
    centered = binary(b, "subtract", A.convert(b, s.values, total.dtype), mean)
    sq = R.reduce(b, "sum", _fill(b, Selection(binary(b, "multiply", centered, centered), s.mask),
                                  0), None, dtype)
    dof = binary(b, "maximum", binary(b, "subtract", n, ddof), 0)
    var = A.convert(b, binary(b, "true_divide", sq, dof), sq.dtype)
    return var if kind == "var" else Staged(ops.sqrt(b, var.value))


REDUCTIONS = {np.sum: "sum", np.prod: "prod", np.max: "max", np.amax: "max", np.min: "min",
              np.amin: "min", np.mean: "mean", np.var: "var", np.std: "std", np.any: "any",
              np.all: "all", np.count_nonzero: "count_nonzero", np.nansum: "sum"}
METHODS = {"sum", "prod", "max", "min", "mean", "var", "std", "any", "all"}


def call(b: Builder, fn: Any, args: list[Any], kwargs: dict[str, Any],
         apply: Callable[[Any, list[Any], dict[str, Any]], Any]) -> Any:
    """A NumPy function called with a Selection among its arguments; `apply` calls a
    function on plain values (elementwise ufuncs)."""
    kind = REDUCTIONS.get(fn) if hashable(fn) else None
    if kind is not None and args and isinstance(args[0], Selection) and \
            not any(isinstance(a, Selection) for a in args[1:]):
        return reduce(b, kind, args[0], *args[1:], **kwargs)
    if isinstance(fn, np.ufunc) and fn.nout == 1 and not any(
            isinstance(v, Selection) for v in kwargs.values()):
        return elementwise(b, lambda *xs: apply(fn, list(xs), kwargs), args)
    name = getattr(fn, "__name__", "this function")
    raise dynamic(f"np.{name} of it")


def method(b: Builder, s: Selection, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    if name in METHODS:
        return reduce(b, name, s, *args, **kwargs)
    if name == "astype":
        return Selection(A.convert(b, s.values, np.dtype(args[0] if args else kwargs["dtype"])),
                         s.mask)
    raise dynamic(f".{name}()")
