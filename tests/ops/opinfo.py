"""The OpInfo registry: every user-level operation, listed once, with its sample inputs.

One :class:`OpInfo` per operation as a user spells it in NumPy (``np.arctan2``,
``x.sum(axis=1, keepdims=True)``, ``x[1:-1:2]``, ``y = x.copy(); y[1:3] = v``).
Test generators read the registry (PyTorch's OpInfo, functorch's exhaustive
vmap tests and JAX's ``check_grads`` are the models):

* ``tests/ops/test_forward.py``: compiled == NumPy, interpreter == NumPy, and
  every primitive the compiler defines is reached by some sample;
* ``tests/ops/test_vmap.py`` (every in_dims combination against a Python loop)
  and ``tests/ops/test_grad.py`` (jvp and vjp against finite differences, second
  derivatives) use ``supports_vmap``, ``supports_jvp``, ``supports_vjp`` and
  ``supports_grad2`` (default: True for differentiable ops on float dtypes);
* the error tests use ``error_inputs`` (arguments, exception class, message regex);
* ``tests/ops/test_primitives.py`` uses ``prim_samples``: :class:`PrimSample` records
  that apply a primitive the op lowers to directly, as IR (native backend ==
  interpreter, vmap of every in_dims combination, jvp/vjp at the IR level), for
  each dtype of ``prim_dtypes``; every primitive must have one.

A sample is a :class:`SampleInput` (positional ``args``, ``kwargs``, a short
description). Arrays (including NumPy scalars) are dynamic kernel inputs,
Python floats are dynamic weak scalars (NEP 50), Python ints, bools, strings,
tuples of ints and dtypes are static (compile-time) arguments.
``sample_inputs(dtype, rng)`` covers 0-d arrays, size-1 dims, size-0 dims where
NumPy allows them, broadcasting between operands of different ranks, Python
scalar operands, mixed-dtype promotion, and, for float dtypes, the op's
``edge_values`` (±0, ±inf, nan, huge, tiny; all pairs for binary ops).
"""
from __future__ import annotations

import inspect
import itertools
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

import numpy as np

import compiler
from compiler import Function, errors
from compiler import random as crandom
from tests.ops.compare import EXACT, IEEE, REDUCTION, TRANSCENDENTAL, Tol
from tests.random import reference as rref

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
I32, I64 = np.dtype(np.int32), np.dtype(np.int64)
BOOL = np.dtype(np.bool_)
FLOATS = (F32, F64)
INTS = (I32, I64)
NUMERIC = FLOATS + INTS
ALL_DTYPES = NUMERIC + (BOOL,)

#: the narrow integer, unsigned and float16 dtypes (tests/ops/test_dtypes.py: a few samples each)
I8, I16 = np.dtype(np.int8), np.dtype(np.int16)
U8, U16, U32, U64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
F16 = np.dtype(np.float16)
SMALL_INTS = (I8, I16, U8, U16, U32, U64)

#: for the spellings of shape and indexing operations, whose lowering does not depend on the
#: dtype (their primitives are sampled in every dtype by the functions they share)
STRUCTURAL = (F64, I32)

INF, NAN = float("inf"), float("nan")
#: special values for float edge samples (cast to the dtype: huge ones overflow to inf in float32)
FLOAT_EDGES = (0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-30, -1e-30, 1e30, -1e30,
               1e-310, 1e300, -1e300, 1e-45, 100.0, -100.0, 700.0, -700.0, 1e10)
#: special values for the integer arithmetic samples (extremes wrap as in NumPy)
INT_EDGES = "int-edges"


# ---- the record ------------------------------------------------------------------------------------

@dataclass
class SampleInput:
    """One call of an op: ``fn(*args, **kwargs)``."""

    args: tuple
    kwargs: dict = field(default_factory=dict)
    desc: str = ""

    def __repr__(self) -> str:
        return f"SampleInput({self.desc or describe(self.args)})"


@dataclass
class ErrorInput:
    """A call that is a user error: it must raise `exc` with a message matching `match`."""

    sample: SampleInput
    exc: type[BaseException]
    match: str
    #: the function to compile when it is not the op's own `fn` (e.g. one that writes its argument)
    fn: Callable[..., Any] | None = None


@dataclass
class PrimSample:
    """One primitive applied once, below the NumPy surface: the IR ``prim(*args, **params)``.

    For semantics NumPy cannot spell (out-of-bounds indices, which the indexing primitives
    clamp; any ``dot_general`` dimension numbers; every ``convert`` dtype pair), and to test
    the backend and the IR-level transforms of one primitive in isolation. Their oracle is
    the reference interpreter, which runs the primitive's NumPy reference."""

    prim: str
    args: tuple
    params: dict = field(default_factory=dict)
    desc: str = ""
    #: the jvp/vjp tests use the sample; False where the point is not differentiable (a zero
    #: of sqrt's domain, a jump of mod) or where the documented vjp convention is not the
    #: transpose of the jvp (colliding scatter-set indices each receive the cotangent)
    grad: bool = True

    def __repr__(self) -> str:
        return f"PrimSample({self.desc})"


SampleFn = Callable[[np.dtype, np.random.Generator], Iterable[SampleInput]]
PrimSampleFn = Callable[[np.dtype, np.random.Generator], Iterable[PrimSample]]


@dataclass
class OpInfo:
    """Everything the generated tests need to know about one user-level operation."""

    name: str
    fn: Callable[..., Any]
    sample_inputs: SampleFn
    dtypes: tuple[np.dtype, ...] = FLOATS
    tol: Tol = EXACT
    #: special values; an edge sample is added for float dtypes (arity 1: a vector of them,
    #: arity 2: all pairs via broadcasting)
    edge_values: tuple[float, ...] = ()
    edge_arity: int = 1
    #: integer extremes for arithmetic ops (wrap-around and division by zero as in NumPy)
    int_edges: bool = False
    differentiable: bool = True
    supports_vmap: bool = True
    supports_jvp: bool | None = None
    supports_vjp: bool | None = None
    supports_grad2: bool | None = None
    error_inputs: Callable[[], Iterable[ErrorInput]] | None = None
    #: the NumPy oracle; `fn` itself unless NumPy needs another spelling
    ref: Callable[..., Any] | None = None
    #: compile with ``jit(fn, signature=...)`` (symbolic dims: one kernel for every sample)
    signature: str | None = None
    #: keep every `thin`-th random sample (edge samples are always kept): for alternative
    #: spellings of an op that another OpInfo already samples in full
    thin: int = 1
    #: another spelling of the OpInfo named here (``np.add`` of ``add``, ``x.sum()`` of ``sum``):
    #: its samples must stage to exactly the IR of that op on the same arguments, and then the
    #: native, vmap and derivative tests of that op cover it; they are not repeated for the alias
    alias_of: str | None = None
    #: primitive-level samples (tests/ops/test_primitives.py): a primitive this op lowers to,
    #: applied directly, for each dtype of `prim_dtypes`
    prim_samples: PrimSampleFn | None = None
    prim_dtypes: tuple[np.dtype, ...] = FLOATS
    notes: str = ""
    #: the dtypes of tests/ops/test_dtypes.py (a few samples each); None: float16 where the op
    #: has a float dtype, the six narrow and unsigned integers where it has int32 or int64
    #: (only uint8 and float16 for the structural ops, whose lowering ignores the dtype)
    more_dtypes: tuple[np.dtype, ...] | None = None

    def __post_init__(self) -> None:
        self.dtypes = tuple(np.dtype(d) for d in self.dtypes)
        self.prim_dtypes = tuple(np.dtype(d) for d in self.prim_dtypes)
        for flag in ("supports_jvp", "supports_vjp", "supports_grad2"):
            if getattr(self, flag) is None:
                setattr(self, flag, self.differentiable)
        if self.ref is None:
            self.ref = self.fn
        if self.more_dtypes is None and self.signature is not None:
            self.more_dtypes = ()                   # the signature names the dtype
        if self.more_dtypes is None:
            floats = (F16,) if any(d.kind == "f" for d in self.dtypes) else ()
            ints = SMALL_INTS if I32 in self.dtypes or I64 in self.dtypes else ()
            if self.dtypes == STRUCTURAL:
                floats, ints = (F16,), (U8,)
            self.more_dtypes = floats + ints
        self.more_dtypes = tuple(np.dtype(d) for d in self.more_dtypes)

    def __repr__(self) -> str:
        return f"OpInfo({self.name})"

    @property
    def grad_dtypes(self) -> tuple[np.dtype, ...]:
        """The dtypes AD tests should use (float ones, if differentiable)."""
        return tuple(d for d in self.dtypes if d.kind == "f") if self.differentiable else ()

    def samples(self, dtype: Any) -> list[SampleInput]:
        """All samples for `dtype`, deterministic (seeded by op name and dtype)."""
        dtype = np.dtype(dtype)
        rng = np.random.default_rng(zlib.crc32(f"{self.name}/{dtype.name}".encode()))
        # int64 takes every other random sample (int32 runs the same code paths in full; the
        # int64 extremes of `int_edges` are always kept)
        out = list(self.sample_inputs(dtype, rng))[::self.thin * (2 if dtype == I64 else 1)]
        if self.edge_values and dtype.kind == "f":
            with np.errstate(all="ignore"):
                e = np.array(self.edge_values, dtype=dtype)
            if self.edge_arity == 1:
                out.append(SampleInput((e,), desc="edges"))
            else:
                out.append(SampleInput((e[:, None], e[None, :].copy()), desc="edges x edges"))
        if self.int_edges and dtype.kind in "iu":
            info = np.iinfo(dtype)
            values = [0, 1, -1, 2, -2, 7, -7, 13, info.max, info.min, info.max - 1, info.min + 1]
            if dtype.kind == "u":
                values = [0, 1, 2, 7, 13, info.max, info.max - 1, info.max // 2, info.max // 2 + 1, 3, 5, 255]
            e = np.array(values, dtype=dtype)
            if self.edge_arity == 1:
                out.append(SampleInput((e,), desc="int edges"))
            else:
                out.append(SampleInput((e[:, None], e[None, :].copy()), desc="int edges x int edges"))
        for i, s in enumerate(out):
            if not s.desc:
                s.desc = f"{i}:{describe(s.args)}"
        return out

    def errors(self) -> list[ErrorInput]:
        return list(self.error_inputs()) if self.error_inputs else []

    def prims(self, dtype: Any) -> list[PrimSample]:
        """The primitive-level samples for `dtype`, deterministic (seeded by op name and dtype)."""
        if self.prim_samples is None:
            return []
        dtype = np.dtype(dtype)
        rng = np.random.default_rng(zlib.crc32(f"prim/{self.name}/{dtype.name}".encode()))
        out = list(self.prim_samples(dtype, rng))
        for i, s in enumerate(out):
            params = ",".join(f"{k}={describe([v])}" for k, v in s.params.items())
            s.desc = f"{i}:{s.prim}({describe(s.args)}{';' + params if params else ''}){' ' + s.desc if s.desc else ''}"
        return out


def describe(args: Iterable[Any]) -> str:
    """A short test id for arguments: f64[3,4], 2.5, axis=1, ..."""
    parts = []
    for a in args:
        if isinstance(a, (np.ndarray, np.generic)):
            parts.append(f"{np.dtype(a.dtype).name}{list(np.shape(a))}".replace(" ", ""))
        elif isinstance(a, (tuple, list)) and any(isinstance(x, np.ndarray) for x in a):
            parts.append("(" + ",".join(describe([x]) for x in a) + ")")
        elif isinstance(a, type):
            parts.append(a.__name__)
        else:
            parts.append(repr(a).replace(" ", ""))
    return ",".join(parts)


# ---- making arrays ------------------------------------------------------------------------------

def make(shape: tuple[int, ...], dtype: Any, rng: np.random.Generator, low: float = -3.0,
         high: float = 3.0) -> np.ndarray:
    """A random array (0-d for shape ()): uniform floats, integers in [low, high], or bools."""
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        a = rng.random(shape) < 0.5
    elif dtype.kind == "i":
        a = rng.integers(int(np.floor(low)), int(np.ceil(high)) + 1, size=shape)
    elif dtype.kind == "u":                 # the non-negative part of the range
        lo = max(int(np.floor(low)), 0)
        a = rng.integers(lo, max(int(np.ceil(high)), lo) + 1, size=shape)
    else:
        a = rng.uniform(low, high, size=shape)
    return np.asarray(a, dtype=dtype)


UNARY_SHAPES = [(), (1,), (7,), (3, 4), (2, 1, 5), (0,), (2, 33), (1, 1)]
#: pairs of shapes that broadcast (different ranks, size-1 dims, 0-d, size 0)
BINARY_SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((4,), (3, 4)), ((3, 1), (1, 4)),
                 ((2, 3, 4), (3, 1)), ((), (3, 4)), ((5,), ()), ((), ()), ((1,), (5,)),
                 ((2, 1, 3), (4, 1)), ((0, 3), (3,)), ((2, 33), (2, 33))]
#: operand dtypes that promote with the sample dtype (NumPy 2 rules decide the result)
PARTNERS = {F32: (F64, I32), F64: (F32, I64, BOOL), I32: (I64, F32), I64: (I32, BOOL, F64),
            BOOL: (I32, F32)}
PARTNERS.update({I8: (U8, F16), I16: (U16,), U8: (I8, F32), U16: (I16,), U32: (I32,), U64: (I64, F64),
                 F16: (I8, F32)})


def unary_samples(low: float = -3.0, high: float = 3.0, *, int_low: float = -5, int_high: float = 5,
                  shapes: list[tuple[int, ...]] = UNARY_SHAPES) -> SampleFn:
    def gen(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
        lo, hi = (low, high) if dtype.kind == "f" else (int_low, int_high)
        for s in shapes:
            yield SampleInput((make(s, dtype, rng, lo, hi),))
        if shapes is UNARY_SHAPES:
            yield SampleInput((make((), dtype, rng, lo, hi)[()],), desc="numpy scalar")
        multi = [s for s in shapes if len(s) >= 2]
        if multi:
            t = make(multi[0][::-1], dtype, rng, lo, hi).T
            yield SampleInput((t,), desc=f"transposed {list(t.shape)} (non-contiguous)")
    return gen


def binary_samples(low: float = -3.0, high: float = 3.0, *, rlow: float | None = None,
                   rhigh: float | None = None, int_low: float = -9, int_high: float = 9,
                   int_rlow: float | None = None, int_rhigh: float | None = None,
                   scalars: tuple[Any, ...] = (2.5, 3), partners: bool = True,
                   dtypes: tuple[np.dtype, ...] = ALL_DTYPES, strong_scalar: bool = True) -> SampleFn:
    """Broadcasting pairs, Python scalar operands on either side, and mixed dtypes."""
    def gen(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
        if dtype.kind == "f":
            lo, hi = low, high
            rlo, rhi = (low if rlow is None else rlow), (high if rhigh is None else rhigh)
        else:
            lo, hi = int_low, int_high
            rlo = int_low if int_rlow is None else int_rlow
            rhi = int_high if int_rhigh is None else int_rhigh
        for sa, sb in BINARY_SHAPES:
            yield SampleInput((make(sa, dtype, rng, lo, hi), make(sb, dtype, rng, rlo, rhi)))
        x = make((3, 4), dtype, rng, lo, hi)
        for s in scalars:
            yield SampleInput((x, s), desc=f"rhs python {type(s).__name__} {s!r}")
            yield SampleInput((s, make((2, 3), dtype, rng, rlo, rhi)), desc=f"lhs python {type(s).__name__} {s!r}")
        if strong_scalar:
            yield SampleInput((make((4,), dtype, rng, lo, hi), np.float64(2.0)), desc="numpy float64 scalar (strong)")
        yield SampleInput((make((3, 8), dtype, rng, lo, hi)[:, ::2], np.asfortranarray(make((3, 4), dtype, rng, rlo, rhi))),
                          desc="strided view with Fortran-ordered")
        yield SampleInput((make((4, 3), dtype, rng, lo, hi)[::-1], make((5, 3), dtype, rng, rlo, rhi)[1:2]),
                          desc="negative-stride view with a row slice")
        if partners:
            for other in PARTNERS[dtype]:
                if other in dtypes or dtype in SMALL_INTS + (F16,):
                    yield SampleInput((make((3, 4), dtype, rng, lo, hi), make((4,), other, rng, rlo, rhi)),
                                      desc=f"{dtype.name} with {other.name}")
    return gen


def error(fn_args: tuple, exc: type[BaseException], match: str, **kwargs: Any) -> ErrorInput:
    return ErrorInput(SampleInput(fn_args, kwargs), exc, match)


def _f(shape: tuple[int, ...], dtype: Any = F64) -> np.ndarray:
    return np.ones(shape, dtype=dtype)


def shape_mismatch_errors() -> Iterator[ErrorInput]:
    yield error((_f((3,)), _f((4,))), errors.CompileError, r"(?i)broadcast|shape")
    yield error((_f((2, 3)), _f((3, 2))), errors.CompileError, r"(?i)broadcast|shape")
    yield ErrorInput(SampleInput((_f((3,)), _f((3,)))), errors.OutParameterError, r"(?i)out",
                     fn=lambda x, y: np.add(x, y, out=x))


# ---- registry ----------------------------------------------------------------------------------------

OPS: list[OpInfo] = []


def op(name: str, fn: Callable[..., Any], sample_inputs: SampleFn, **kw: Any) -> OpInfo:
    info = OpInfo(name, fn, sample_inputs, **kw)
    if any(o.name == name for o in OPS):
        raise ValueError(f"OpInfo {name!r} declared twice")
    OPS.append(info)
    return info


def by_name(name: str) -> OpInfo:
    for o in OPS:
        if o.name == name:
            return o
    raise KeyError(name)


def alias(name: str, fn: Callable[..., Any], of: str, n: int = 2, **kw: Any) -> OpInfo:
    """Another spelling of the OpInfo `of` (see `OpInfo.alias_of`): its first `n` samples, and
    its dtypes, tolerance and flags unless given."""
    base = by_name(of)

    def gen(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
        return itertools.islice(base.sample_inputs(dtype, rng), n)
    kw = {"dtypes": base.dtypes, "tol": base.tol, "differentiable": base.differentiable,
          "supports_vmap": base.supports_vmap, **kw}
    return op(name, fn, gen, alias_of=of, **kw)


# ---- arithmetic operators ---------------------------------------------------------------------------

op("add", lambda x, y: x + y, binary_samples(), dtypes=ALL_DTYPES, tol=IEEE,
   edge_values=FLOAT_EDGES, edge_arity=2, int_edges=True, error_inputs=shape_mismatch_errors)
op("sub", lambda x, y: x - y, binary_samples(dtypes=NUMERIC), dtypes=NUMERIC, tol=IEEE,
   edge_values=FLOAT_EDGES, edge_arity=2, int_edges=True, error_inputs=shape_mismatch_errors)
op("mul", lambda x, y: x * y, binary_samples(), dtypes=ALL_DTYPES, tol=IEEE,
   edge_values=FLOAT_EDGES, edge_arity=2, int_edges=True)
op("truediv", lambda x, y: x / y, binary_samples(rlow=0.5, rhigh=4.0, int_rlow=1, int_rhigh=9),
   dtypes=ALL_DTYPES, tol=IEEE, edge_values=FLOAT_EDGES, edge_arity=2)
op("floordiv", lambda x, y: x // y, binary_samples(-20, 20, rlow=-4, rhigh=4, int_low=-20, int_high=20,
                                                   int_rlow=-4, int_rhigh=4, scalars=(2.5, 3, -2),
                                                   dtypes=NUMERIC),
   dtypes=NUMERIC, tol=IEEE, edge_values=FLOAT_EDGES, edge_arity=2, int_edges=True, differentiable=False)
op("mod", lambda x, y: x % y, binary_samples(-20, 20, rlow=-4, rhigh=4, int_low=-20, int_high=20,
                                             int_rlow=-4, int_rhigh=4, scalars=(2.5, 3, -2), dtypes=NUMERIC),
   dtypes=NUMERIC, tol=IEEE, edge_values=FLOAT_EDGES, edge_arity=2, int_edges=True)


def _pow_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    if dtype.kind == "f":
        yield from binary_samples(0.1, 3.0, rlow=-3, rhigh=3, scalars=(2.5, 2, 3, 0.5, -1), partners=False)(dtype, rng)
        yield SampleInput((make((9,), dtype, rng, -3, 3), 2), desc="negative base, integer power")
        yield SampleInput((np.array([-2.0, -0.5, 0.0, 2.0], dtype), np.array([3.0, -2.0, 2.0, -1.0], dtype)),
                          desc="negative bases with integral exponents")
        yield SampleInput((2.0, make((5,), dtype, rng, -4, 4)), desc="2.0 ** x")
    else:
        yield from binary_samples(int_low=-4, int_high=4, int_rlow=0, int_rhigh=5, scalars=(2, 3, 0),
                                  partners=False)(dtype, rng)
        yield SampleInput((make((6,), dtype, rng, -3, 3), 0.5), desc="int ** float -> float")


op("pow", lambda x, y: x ** y, _pow_samples, dtypes=NUMERIC, tol=TRANSCENDENTAL,
   edge_values=FLOAT_EDGES, edge_arity=2)

#: the exponents NumPy's float loops compute without pow when the exponent is a scalar
_FAST_EXPONENTS = (0.5, 2.0, -1.0, 1.0, 0.0)


def _scalar_exponent_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for p in _FAST_EXPONENTS:
        yield SampleInput((make((3, 4), dtype, rng, 0.1, 3.0), p), desc=f"run-time python float {p}")
    edges = np.array([-INF, -0.0, 0.0, INF, NAN, -4.0, 4.0, 1e-30, -1e-30, 1e30, 2.5], dtype)
    for p in _FAST_EXPONENTS:
        yield SampleInput((edges, p), desc=f"edges ** {p}")
        yield SampleInput((edges, np.array(p, dtype)), desc=f"edges ** 0-d {p}")
    yield SampleInput((np.stack([edges, -edges]), np.array([0.5], dtype)), desc="size-1 exponent broadcast")
    yield SampleInput((np.array([-INF], dtype), np.array([0.5], dtype)), desc="(1,) ** (1,): pow, not sqrt")
    yield SampleInput((edges, 0.5), {"np": True}, desc="np.power(edges, 0.5)")


op("pow.scalar_exponent", lambda x, y, np_=False: np.power(x, y) if np_ else x ** y,
   lambda dt, rng: (SampleInput(s.args, {"np_": True} if s.kwargs else {}, s.desc)
                    for s in _scalar_exponent_samples(dt, rng)),
   dtypes=FLOATS, tol=Tol(ulps=2, signed_zeros=True),
   notes="NumPy's scalar-exponent loops: x ** 0.5 is sqrt(x) (nan at -inf, -0.0 at -0.0), "
         "** 2, ** -1, ** 1, ** 0 are x*x, 1/x, x, 1 (bit for bit: tests/frontend/test_numpy_"
         "divergences.py); vmap batches other exponents, which pow computes within 2 ULP")
op("neg", lambda x: -x, unary_samples(), dtypes=NUMERIC, tol=IEEE, edge_values=FLOAT_EDGES,
   int_edges=True)
op("np.negative", lambda x: np.negative(x), unary_samples(), dtypes=NUMERIC, tol=IEEE, thin=3, alias_of="neg")
op("pos", lambda x: +x, unary_samples(), dtypes=NUMERIC, tol=IEEE)
op("abs", lambda x: abs(x), unary_samples(), dtypes=NUMERIC + (BOOL,), tol=IEEE,
   edge_values=FLOAT_EDGES, int_edges=True)
op("np.abs", lambda x: np.abs(x), unary_samples(), dtypes=NUMERIC, tol=IEEE, edge_values=FLOAT_EDGES, thin=3,
   alias_of="abs")
op("sign", lambda x: np.sign(x), unary_samples(), dtypes=NUMERIC, tol=IEEE, edge_values=FLOAT_EDGES,
   int_edges=True, differentiable=False)
op("square", lambda x: np.square(x), unary_samples(), dtypes=NUMERIC, tol=IEEE, edge_values=FLOAT_EDGES)
op("reciprocal", lambda x: np.reciprocal(x), unary_samples(0.25, 4.0), tol=IEEE,
   edge_values=FLOAT_EDGES)

# the ufunc spellings of the operators
alias("np.add", lambda x, y: np.add(x, y), "add", dtypes=NUMERIC)
alias("np.subtract", lambda x, y: np.subtract(x, y), "sub")
alias("np.multiply", lambda x, y: np.multiply(x, y), "mul", dtypes=NUMERIC)
alias("np.divide", lambda x, y: np.divide(x, y), "truediv", dtypes=NUMERIC)
alias("np.true_divide", lambda x, y: np.true_divide(x, y), "truediv", dtypes=NUMERIC)
alias("np.floor_divide", lambda x, y: np.floor_divide(x, y), "floordiv")
alias("np.mod", lambda x, y: np.mod(x, y), "mod")
alias("np.remainder", lambda x, y: np.remainder(x, y), "mod")
alias("np.power", lambda x, y: np.power(x, y), "pow")
alias("np.absolute", lambda x: np.absolute(x), "abs", dtypes=NUMERIC)
alias("np.positive", lambda x: np.positive(x), "pos")
alias("np.fabs", lambda x: np.fabs(x), "abs", dtypes=FLOATS)


def _divmod_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    lo, hi = (-20, 20)
    yield SampleInput((make((5,), dtype, rng, lo, hi), make((5,), dtype, rng, 3, 5)))
    yield SampleInput((make((2, 3), dtype, rng, lo, hi), make((3,), dtype, rng, -5, -3)), desc="negative divisors")


op("divmod", lambda x, y: divmod(x, y), _divmod_samples, dtypes=NUMERIC, tol=IEEE)
op("np.divmod", lambda x, y: np.divmod(x, y), _divmod_samples, dtypes=NUMERIC, tol=IEEE, alias_of="divmod")
op("deg2rad", lambda x: np.deg2rad(x), unary_samples(-360, 360, shapes=[(3, 4), ()]), tol=Tol(ulps=2),
   notes="a product with a constant; NumPy's float32 loop rounds the constant as a float32 "
         "quotient (up to 2 ULP apart)")
op("rad2deg", lambda x: np.rad2deg(x), unary_samples(shapes=[(3, 4), ()]), tol=Tol(ulps=2))
alias("radians", lambda x: np.radians(x), "deg2rad")
alias("degrees", lambda x: np.degrees(x), "rad2deg")


# ---- comparisons and logic ---------------------------------------------------------------------------

_COMPARISONS = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
                "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y}
for _name, _fn in _COMPARISONS.items():
    op(_name, _fn, binary_samples(-2, 2, int_low=-2, int_high=2, scalars=(0.5, 1)), dtypes=ALL_DTYPES,
       edge_values=FLOAT_EDGES, edge_arity=2, differentiable=False, thin=1 if _name in ("eq", "lt") else 3)


def _logic_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    yield from binary_samples(-1, 1, int_low=-1, int_high=1, scalars=(True, 0), partners=False,
                              dtypes=ALL_DTYPES)(dtype, rng)
    if dtype.kind == "f":
        yield SampleInput((np.array([0.0, -0.0, NAN, INF, 1e-300], dtype), np.array([1.0, 1.0, 1.0, 0.0, 1.0], dtype)),
                          desc="truthiness of 0, -0, nan, inf, tiny")
        yield SampleInput((make((5,), dtype, rng, -1, 1), make((5,), I32, rng, -1, 1)), desc=f"{dtype.name} with int32")


for _name, _np in (("logical_and", np.logical_and), ("logical_or", np.logical_or),
                   ("logical_xor", np.logical_xor)):
    op(_name, (lambda f: lambda x, y: f(x, y))(_np), _logic_samples, dtypes=ALL_DTYPES, differentiable=False,
       thin=1 if _name == "logical_and" else 3)
op("logical_not", lambda x: np.logical_not(x), unary_samples(-1, 1, int_low=-1, int_high=1),
   dtypes=ALL_DTYPES, edge_values=FLOAT_EDGES, differentiable=False)

_BITWISE = (BOOL,) + INTS
op("and_op", lambda x, y: x & y, binary_samples(scalars=(True, 6), dtypes=_BITWISE, strong_scalar=False),
   dtypes=_BITWISE, int_edges=True, edge_arity=2, differentiable=False)
op("or_op", lambda x, y: x | y, binary_samples(scalars=(False, 6), dtypes=_BITWISE, strong_scalar=False), dtypes=_BITWISE,
   int_edges=True, edge_arity=2, differentiable=False)
op("xor_op", lambda x, y: x ^ y, binary_samples(scalars=(True, 6), dtypes=_BITWISE, strong_scalar=False), dtypes=_BITWISE,
   int_edges=True, edge_arity=2, differentiable=False)
op("invert", lambda x: ~x, unary_samples(), dtypes=_BITWISE, int_edges=True, differentiable=False)
# shifts by the width or more, or by a negative amount, give 0 (-1 for a negative value shifted
# right), as NumPy's npy_lshift/npy_rshift: the int edges x int edges sample has both
for _name, _fn in (("left_shift", lambda x, y: x << y), ("right_shift", lambda x, y: x >> y)):
    op(_name, _fn, binary_samples(int_low=-20, int_high=20, int_rlow=0, int_rhigh=70, scalars=(3, 1),
                                  partners=False, strong_scalar=False, dtypes=INTS),
       dtypes=INTS, int_edges=True, edge_arity=2, differentiable=False)
alias("np.left_shift", lambda x, y: np.left_shift(x, y), "left_shift")
alias("np.right_shift", lambda x, y: np.right_shift(x, y), "right_shift")
alias("np.invert", lambda x: np.invert(x), "invert")
op("isnan", lambda x: np.isnan(x), unary_samples(), dtypes=NUMERIC, edge_values=FLOAT_EDGES,
   differentiable=False)
op("isinf", lambda x: np.isinf(x), unary_samples(), dtypes=NUMERIC, edge_values=FLOAT_EDGES,
   differentiable=False)
op("isfinite", lambda x: np.isfinite(x), unary_samples(), dtypes=NUMERIC, edge_values=FLOAT_EDGES,
   differentiable=False)


# ---- maximum, minimum, clip, where -----------------------------------------------------------------------

op("maximum", lambda x, y: np.maximum(x, y), binary_samples(scalars=(0.5, 1)), dtypes=ALL_DTYPES,
   edge_values=FLOAT_EDGES, edge_arity=2, int_edges=True)
op("minimum", lambda x, y: np.minimum(x, y), binary_samples(scalars=(0.5, 1)), dtypes=ALL_DTYPES,
   edge_values=FLOAT_EDGES, edge_arity=2, int_edges=True)
def few_binary_samples(low: float = -3.0, high: float = 3.0) -> SampleFn:
    """Broadcasting with a 0-d operand and a Python scalar: for ops whose broadcasting and promotion
    go through the same frontend path as an op sampled in full (its edge values add the rest)."""
    def gen(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
        yield SampleInput((make((3, 4), dtype, rng, low, high), make((4,), dtype, rng, low, high)))
        yield SampleInput((make((), dtype, rng, low, high), make((2, 3), dtype, rng, low, high)))
        yield SampleInput((make((5,), dtype, rng, low, high), 0.5), desc="rhs python float 0.5")
    return gen


op("fmax", lambda x, y: np.fmax(x, y), few_binary_samples(), dtypes=NUMERIC, edge_values=FLOAT_EDGES, edge_arity=2,
   notes="nan only where both operands are nan")
op("fmin", lambda x, y: np.fmin(x, y), few_binary_samples(), dtypes=NUMERIC, edge_values=FLOAT_EDGES, edge_arity=2)


def _clip_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    lo, hi = (-1.0, 1.0) if dtype.kind == "f" else (-2, 2)
    x = make((3, 4), dtype, rng, -3, 3)
    yield SampleInput((x, lo, hi), desc="python scalar bounds")
    yield SampleInput((x, make((4,), dtype, rng, -3, 0), make((3, 1), dtype, rng, 0, 3)), desc="broadcast bounds")
    yield SampleInput((make((), dtype, rng, -3, 3), lo, hi), desc="0-d")
    yield SampleInput((make((7,), dtype, rng, -3, 3), None, hi), desc="no lower bound")
    yield SampleInput((make((7,), dtype, rng, -3, 3), lo, None), desc="no upper bound")
    yield SampleInput((make((2, 33), dtype, rng, -3, 3), make((), dtype, rng, -1, 0), hi), desc="0-d bound")
    if dtype.kind == "f":
        yield SampleInput((np.array([NAN, INF, -INF, -0.0, 0.0, 5.0], dtype), -0.0, 1.0), desc="edges")
        yield SampleInput((make((5,), dtype, rng, -3, 3), 0, 1), desc="int bounds on floats")
    else:
        yield SampleInput((make((5,), dtype, rng, -3, 3), 0.5, 2.5), desc="float bounds on ints")


def _clip_function_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    yield from _clip_samples(dtype, rng)
    # NumPy makes an array of a Python number `a`: it is not weak (np.clip(0, -2, int32) is int64)
    yield SampleInput((0, -2, make((4,), dtype, rng, -3, 3)), desc="python int a, array bound")
    yield SampleInput((0.5, make((4,), dtype, rng, -3, 0), 2), desc="python float a, array bound")
    yield SampleInput((True, 0, make((4,), dtype, rng, -3, 3)), desc="python bool a, array bound")


op("clip", lambda x, lo, hi: np.clip(x, lo, hi), _clip_function_samples, dtypes=NUMERIC)
op("clip.method", lambda x, lo, hi: x.clip(lo, hi), _clip_samples, dtypes=NUMERIC, thin=3, alias_of="clip")


def _where_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for sc, sx, sy in [((3, 4), (3, 4), (3, 4)), ((3, 1), (4,), ()), ((), (3,), (3,)), ((4,), (3, 4), (3, 1)),
                       ((), (), ()), ((2, 33), (2, 33), (33,)), ((0,), (0,), (1,))]:
        yield SampleInput((make(sc, BOOL, rng), make(sx, dtype, rng), make(sy, dtype, rng)))
    c = make((5,), BOOL, rng)
    yield SampleInput((c, make((5,), dtype, rng), 0.0), desc="python float branch")
    yield SampleInput((c, 1, make((5,), dtype, rng)), desc="python int branch")
    yield SampleInput((make((5,), dtype, rng, -1, 1), 1, 2.5), desc="python scalar branches")
    yield SampleInput((make((5,), dtype, rng, -1, 1), make((5,), dtype, rng), make((5,), dtype, rng)),
                      desc="non-bool condition (truthiness)")
    other = F64 if dtype != F64 else I32
    yield SampleInput((c, make((5,), dtype, rng), make((5,), other, rng)), desc=f"branches {dtype.name}/{other.name}")


op("where", lambda c, x, y: np.where(c, x, y), _where_samples, dtypes=ALL_DTYPES,
   error_inputs=lambda: [error((_f((3,), bool), _f((4,)), _f((5,))), errors.CompileError, r"(?i)broadcast|shape")])


# ---- float math ----------------------------------------------------------------------------------------

#: (name, numpy function, float domain, integer domain or None when ints are not sampled)
_UNARY_MATH = [
    ("exp", np.exp, (-5, 5), (-5, 5)), ("exp2", np.exp2, (-5, 5), None), ("expm1", np.expm1, (-2, 2), None),
    ("log", np.log, (0.01, 10), (1, 20)), ("log2", np.log2, (0.01, 10), None),
    ("log10", np.log10, (0.01, 10), None), ("log1p", np.log1p, (-0.9, 5), None),
    ("sqrt", np.sqrt, (0, 10), (0, 20)), ("cbrt", np.cbrt, (-10, 10), None),
    ("sin", np.sin, (-7, 7), (-5, 5)), ("cos", np.cos, (-7, 7), None), ("tan", np.tan, (-1.5, 1.5), None),
    ("tanh", np.tanh, (-5, 5), (-5, 5)), ("sinh", np.sinh, (-5, 5), None), ("cosh", np.cosh, (-5, 5), None),
    ("arcsin", np.arcsin, (-1, 1), None), ("arccos", np.arccos, (-1, 1), None),
    ("arctan", np.arctan, (-10, 10), (-5, 5)),
    ("arcsinh", np.arcsinh, (-10, 10), (-5, 5)), ("arccosh", np.arccosh, (1.01, 10), (1, 20)),
    ("arctanh", np.arctanh, (-0.99, 0.99), None),
]
for _name, _np, (_lo, _hi), _ints in _UNARY_MATH:
    op(_name, (lambda f: lambda x: f(x))(_np), unary_samples(_lo, _hi, int_low=(_ints or (0, 0))[0],
                                                           int_high=(_ints or (0, 0))[1]),
       dtypes=FLOATS + (INTS if _ints else ()), tol=Tol(TRANSCENDENTAL.f32, TRANSCENDENTAL.f64, 4,
                                                       signed_zeros=True),
       edge_values=FLOAT_EDGES + (np.pi / 2, -np.pi / 2, np.pi, 1e6, 88.0, -88.0))


def _atan2_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    yield from binary_samples(-3, 3, scalars=(1.5, 1), partners=False)(dtype, rng)
    if dtype.kind == "i":
        return
    other = I32 if dtype == F64 else F64
    yield SampleInput((make((4,), dtype, rng), make((4,), other, rng)), desc=f"with {other.name}")


op("arctan2", lambda y, x: np.arctan2(y, x), _atan2_samples, dtypes=FLOATS + (I32,),
   tol=Tol(TRANSCENDENTAL.f32, TRANSCENDENTAL.f64, 4, signed_zeros=True), edge_values=FLOAT_EDGES, edge_arity=2)
op("hypot", lambda x, y: np.hypot(x, y), binary_samples(-1e3, 1e3, scalars=(3.0, 4), partners=False),
   dtypes=FLOATS, tol=TRANSCENDENTAL, edge_values=FLOAT_EDGES, edge_arity=2)
def _logaddexp_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    yield from few_binary_samples(-5, 5)(dtype, rng)
    x = make((6,), dtype, rng, -5, 5)
    yield SampleInput((x, x.copy()), desc="ties (x == y: smooth, derivative 1/2 each)")
    yield SampleInput((np.zeros(3, dtype), make((3,), dtype, rng, -1, 1)), desc="softplus: logaddexp(0, x)")


op("logaddexp", lambda x, y: np.logaddexp(x, y), _logaddexp_samples, dtypes=FLOATS, tol=TRANSCENDENTAL,
   edge_values=FLOAT_EDGES, edge_arity=2)
op("logaddexp2", lambda x, y: np.logaddexp2(x, y), _logaddexp_samples, dtypes=FLOATS, tol=TRANSCENDENTAL,
   edge_values=FLOAT_EDGES, edge_arity=2)

_ROUNDING_EDGES = FLOAT_EDGES + (0.5, 1.5, 2.5, -0.5, -1.5, 0.49999999999999994, 4503599627370497.0, -2.5000001)
for _name, _fn in (("floor", lambda x: np.floor(x)), ("ceil", lambda x: np.ceil(x)),
                   ("round", lambda x: np.round(x)), ("rint", lambda x: np.rint(x)),
                   ("trunc", lambda x: np.trunc(x))):
    op(_name, _fn, unary_samples(-10, 10), dtypes=NUMERIC, tol=IEEE, edge_values=_ROUNDING_EDGES,
       differentiable=False)
op("round.decimals", lambda x, d: np.round(x, d),
   lambda dt, rng: [SampleInput((make((3, 5), dt, rng, -10, 10), 2)), SampleInput((make((7,), dt, rng, -100, 100), -1)),
                    SampleInput((make((), dt, rng, -10, 10), 0)), SampleInput((make((6,), dt, rng, -100, 100), 1))],
   dtypes=FLOATS, tol=Tol((1e-6, 0), (1e-15, 0), ulps=1), differentiable=False,
   notes="NumPy rounds x*10**d to even and divides back")
alias("round.method", lambda x, d: x.round(d), "round.decimals", n=4)
alias("around", lambda x, d: np.around(x, d), "round.decimals", n=4)


# ---- casts ---------------------------------------------------------------------------------------------


def _cast_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for target in (np.float32, np.float64, np.int32, np.int64, np.bool_, float, int, bool):
        yield SampleInput((make((3, 4), dtype, rng, -100, 100), target), desc=f"{dtype.name}->{target.__name__}")
    yield SampleInput((make((), dtype, rng, -100, 100), np.int32), desc="0-d")
    yield SampleInput((make((5,), dtype, rng), "float32"), desc="dtype given as string")
    if dtype.kind == "f":
        yield SampleInput((np.array([0.0, -0.0, 0.5, -0.5, 1.9999, -1.9999, 1e9, -1e9], dtype), np.int32),
                          desc="truncation toward zero")
        yield SampleInput((np.array([0.0, -0.0, NAN, INF, 1e-300], dtype), np.bool_), desc="truthiness")
        with np.errstate(over="ignore"):
            big = np.array([1e300, -1e300, 1e-300, NAN, INF, 3.4e38, 1 + 2 ** -30], dtype)
        yield SampleInput((big, np.float32), desc="float64->float32 overflow, underflow, rounding")
    if dtype == I64:
        yield SampleInput((np.array([2 ** 40 + 7, -2 ** 40 - 1, 2 ** 53 + 1, -1], dtype), np.int32),
                          desc="int64->int32 wraps")
        yield SampleInput((np.array([2 ** 53 + 1, 2 ** 62 + 1], dtype), np.float64), desc="int64->float64 rounding")


op("astype", lambda x, t: x.astype(t), _cast_samples, dtypes=ALL_DTYPES, tol=EXACT)


def _scalar_type_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for target in (np.float32, np.float64, np.int32, np.int64, np.bool_):
        yield SampleInput((make((3, 4), dtype, rng, -100, 100), target), desc=f"{target.__name__}(x)")
        yield SampleInput((make((), dtype, rng, -100, 100), target), desc=f"{target.__name__}(0-d)")


op("np.float32(x)", lambda x, t: t(x), _scalar_type_samples, dtypes=NUMERIC, tol=EXACT,
   notes="calling a NumPy scalar type on an array casts it")
op("asarray.dtype", lambda x: np.asarray(x, dtype=np.float32), unary_samples(-100, 100), dtypes=ALL_DTYPES)


def _to_dtype_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for target in (np.float64, np.int32, np.int64, np.bool_):
        yield SampleInput((make((5,), dtype, rng, -100, 100), target), desc=f"to {target.__name__}")


op("asarray.dtypes", lambda x, t: np.asarray(x, dtype=t), _to_dtype_samples, dtypes=NUMERIC)
op("array.dtypes", lambda x, t: np.array(x, dtype=t), _to_dtype_samples, dtypes=NUMERIC, alias_of="asarray.dtypes")


# ---- reductions -------------------------------------------------------------------------------------

#: (shape, axis, keepdims)
REDUCE_CASES = [((), None, False), ((7,), None, False), ((7,), 0, True), ((3, 4), None, True),
                ((3, 4), 0, False), ((3, 4), 1, True), ((2, 3, 4), (0, 2), False),
                ((2, 3, 4), -2, True), ((2, 3, 4), (-1, -2), True), ((1, 4), 0, False), ((3, 1), -1, False),
                ((2, 33), 1, False), ((67,), 0, False), ((17, 33), 0, False)]
EMPTY_CASES = [((3, 0), 1, False), ((0,), None, False), ((0, 3), 0, True)]


def reduce_samples(low: float = -3, high: float = 3, *, tuple_axes: bool = True, empty: bool = False,
                   keepdims: bool = True, nan_edge: bool = True, extra: dict | None = None,
                   first: list | None = None, ddofs: tuple[int, ...] = ()) -> SampleFn:
    """REDUCE_CASES (after the `first` cases; with EMPTY_CASES if `empty`); `extra` keywords are
    added to every sample, and `ddofs` cycle through the samples' ``ddof``."""
    def gen(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
        for i, (shape, axis, kd) in enumerate((first or []) + REDUCE_CASES + (EMPTY_CASES if empty else [])):
            if isinstance(axis, tuple) and not tuple_axes:
                continue
            kwargs = {"axis": axis, "keepdims": kd} if keepdims else {"axis": axis}
            kwargs.update(extra or {})
            if ddofs:
                kwargs["ddof"] = ddofs[i % len(ddofs)]
            yield SampleInput((make(shape, dtype, rng, low, high),), kwargs,
                              desc=f"{describe([make(shape, dtype, rng)])},axis={axis},keepdims={kd}")
        if dtype.kind == "f" and nan_edge:
            yield SampleInput((np.array([[1.0, NAN, -2.0], [INF, -INF, 0.5], [-0.0, 0.0, 3.0]], dtype),),
                              {"axis": 1, **({"keepdims": False} if keepdims else {}), **(extra or {})},
                              desc="nan and inf rows")
        if dtype.kind != "f":
            yield SampleInput((make((4, 6), dtype, rng, -1, 1),), {"axis": 0, **({"keepdims": False} if keepdims else {}),
                                                                  **(extra or {})}, desc="ties")
    return gen


def _reduction(name: str, fn: Callable[..., Any], samples: SampleFn, **kw: Any) -> OpInfo:
    params = inspect.signature(fn).parameters
    extra = {k: v for k, v in (("keepdims", False), ("ddof", 1)) if k in params}

    def errors_() -> Iterator[ErrorInput]:
        yield error((_f((3, 4)),), errors.CompileError, r"(?i)axis", axis=2, **extra)
        yield error((_f((3, 4)),), errors.CompileError, r"(?i)axis", axis=-3, **extra)
    return op(name, fn, samples, error_inputs=errors_, **kw)


_reduction("sum", lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims),
           reduce_samples(empty=True, first=[((3, 2), (), False)]), dtypes=ALL_DTYPES, tol=REDUCTION)
_reduction("sum.method", lambda x, axis, keepdims: x.sum(axis=axis, keepdims=keepdims),
           reduce_samples(first=[((3, 2), (), False)]), dtypes=ALL_DTYPES, tol=REDUCTION, thin=3, alias_of="sum")
_reduction("mean", lambda x, axis, keepdims: np.mean(x, axis=axis, keepdims=keepdims), reduce_samples(),
           dtypes=ALL_DTYPES, tol=REDUCTION)
_reduction("mean.method", lambda x, axis, keepdims: x.mean(axis=axis, keepdims=keepdims), reduce_samples(),
           dtypes=NUMERIC, tol=REDUCTION, thin=3, alias_of="mean")
_reduction("prod", lambda x, axis, keepdims: np.prod(x, axis=axis, keepdims=keepdims),
           reduce_samples(0.5, 1.5, empty=True), dtypes=ALL_DTYPES, tol=REDUCTION)
_reduction("prod.method", lambda x, axis, keepdims: x.prod(axis, keepdims=keepdims), reduce_samples(0.5, 1.5),
           dtypes=NUMERIC, tol=REDUCTION, thin=3, alias_of="prod", notes="axis passed positionally")
_reduction("max", lambda x, axis, keepdims: np.max(x, axis=axis, keepdims=keepdims), reduce_samples(),
           dtypes=ALL_DTYPES)
_reduction("max.method", lambda x, axis, keepdims: x.max(axis=axis, keepdims=keepdims), reduce_samples(),
           dtypes=NUMERIC, thin=3, alias_of="max")
_reduction("amax", lambda x, axis, keepdims: np.amax(x, axis=axis, keepdims=keepdims), reduce_samples(),
           dtypes=FLOATS, thin=3, alias_of="max")
_reduction("amin", lambda x, axis, keepdims: np.amin(x, axis=axis, keepdims=keepdims), reduce_samples(),
           dtypes=FLOATS, thin=3, alias_of="min")
_reduction("min", lambda x, axis, keepdims: np.min(x, axis=axis, keepdims=keepdims), reduce_samples(),
           dtypes=ALL_DTYPES)
_reduction("min.method", lambda x, axis, keepdims: x.min(axis=axis, keepdims=keepdims), reduce_samples(),
           dtypes=NUMERIC, thin=3, alias_of="min")
_reduction("argmax", lambda x, axis, keepdims: np.argmax(x, axis=axis, keepdims=keepdims),
           reduce_samples(tuple_axes=False), dtypes=ALL_DTYPES, differentiable=False)
_reduction("argmin", lambda x, axis, keepdims: np.argmin(x, axis=axis, keepdims=keepdims),
           reduce_samples(tuple_axes=False), dtypes=ALL_DTYPES, differentiable=False)
_reduction("argmax.method", lambda x, axis: x.argmax(axis=axis),
           reduce_samples(tuple_axes=False, keepdims=False), dtypes=NUMERIC, differentiable=False, thin=3)
_reduction("argmin.method", lambda x, axis: x.argmin(axis=axis),
           reduce_samples(tuple_axes=False, keepdims=False), dtypes=NUMERIC, differentiable=False, thin=3)
_reduction("var", lambda x, axis, keepdims: np.var(x, axis=axis, keepdims=keepdims), reduce_samples(),
           dtypes=ALL_DTYPES, tol=REDUCTION.widen(10))
_reduction("var.ddof", lambda x, axis, keepdims, ddof: np.var(x, axis=axis, keepdims=keepdims, ddof=ddof),
           reduce_samples(extra={"ddof": 1}, ddofs=(1, 2, 0), nan_edge=False), dtypes=FLOATS,
           tol=REDUCTION.widen(10))
_reduction("var.method", lambda x, axis, keepdims: x.var(axis, keepdims=keepdims), reduce_samples(),
           dtypes=NUMERIC, tol=REDUCTION.widen(10), thin=3, alias_of="var", notes="axis passed positionally")
_reduction("std", lambda x, axis, keepdims: np.std(x, axis=axis, keepdims=keepdims), reduce_samples(),
           dtypes=ALL_DTYPES, tol=REDUCTION.widen(10))
_reduction("std.method", lambda x, axis, keepdims, ddof: x.std(axis=axis, keepdims=keepdims, ddof=ddof),
           reduce_samples(extra={"ddof": 1}, ddofs=(1, 2, 0, 1), nan_edge=False), dtypes=FLOATS,
           tol=REDUCTION.widen(10), thin=3)     # every third sample kept: ddof 1, 1, 0, 2, ...
_reduction("all", lambda x, axis, keepdims: np.all(x, axis=axis, keepdims=keepdims),
           reduce_samples(-1, 1, empty=True), dtypes=ALL_DTYPES, differentiable=False)
_reduction("any", lambda x, axis, keepdims: np.any(x, axis=axis, keepdims=keepdims),
           reduce_samples(-1, 1, empty=True), dtypes=ALL_DTYPES, differentiable=False)
_reduction("all.method", lambda x, axis, keepdims: x.all(axis=axis, keepdims=keepdims),
           reduce_samples(-1, 1), dtypes=(BOOL,), differentiable=False)
_reduction("any.method", lambda x, axis, keepdims: x.any(axis=axis, keepdims=keepdims),
           reduce_samples(-1, 1), dtypes=(BOOL,), differentiable=False)
_reduction("ptp", lambda x, axis, keepdims: np.ptp(x, axis=axis, keepdims=keepdims), reduce_samples(),
           dtypes=NUMERIC, thin=3, tol=IEEE)
_reduction("count_nonzero", lambda x, axis, keepdims: np.count_nonzero(x, axis=axis, keepdims=keepdims),
           reduce_samples(-1, 1), dtypes=ALL_DTYPES, differentiable=False, thin=3)
_reduction("average", lambda x, axis: np.average(x, axis=axis), reduce_samples(keepdims=False), dtypes=NUMERIC,
           tol=REDUCTION, thin=3)


def _dtype_argument_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for target in (np.int32, np.float32, np.float64):
        yield SampleInput((make((3, 4), dtype, rng, -5, 5), target), desc=f"dtype={target.__name__}")


op("sum.dtype", lambda x, t: np.sum(x, dtype=t), _dtype_argument_samples, dtypes=(I32, F64), tol=REDUCTION)
op("mean.dtype", lambda x, t: x.mean(dtype=t), _dtype_argument_samples, dtypes=(I32, F64), tol=REDUCTION)
op("prod.dtype", lambda x, t: np.prod(x, axis=1, dtype=t), _dtype_argument_samples, dtypes=(I32, F64),
   tol=REDUCTION)


def _norm_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    m, v, t = make((4, 3), dtype, rng), make((5,), dtype, rng), make((2, 3, 4), dtype, rng)
    for x, ord_, axis, keepdims in [(m, None, None, False), (m, None, 1, False), (m, None, 0, True),
                                    (v, None, None, False), (v, 1, None, False), (v, "inf", None, False),
                                    (m, "fro", None, False), (m, 2, 1, False),
                                    # every vector ord NumPy accepts, and the matrix ords (the SVD
                                    # ones through svd, docs/linalg.md)
                                    (v, 3, None, False), (v, "0.5", None, False), (v, -1, None, False),
                                    (v, "-inf", None, False), (m, -2, 0, True),
                                    (m, 1, None, False), (m, -1, None, False), (m, "inf", None, False),
                                    (m, "-inf", None, False), (m, 2, None, False), (m, -2, None, False),
                                    (m, "nuc", None, False), (t, 2, (2, 0), True),
                                    (t, "nuc", (1, 2), False), (t, 1, (-1, -2), True)]:
        yield SampleInput((x, ord_, axis, keepdims), desc=f"{describe([x])},ord={ord_},axis={axis},keepdims={keepdims}")


def _norm_ord(o: Any) -> Any:
    return float(o) if isinstance(o, str) and o not in ("fro", "nuc") else o


op("linalg.norm", lambda x, ord_, axis, keepdims: np.linalg.norm(x, ord=_norm_ord(ord_), axis=axis,
                                                                  keepdims=keepdims),
   _norm_samples, tol=Tol((1e-4, 1e-5), (1e-11, 1e-12), ulps=4), more_dtypes=(),
   notes="float16: NumPy's linalg refuses it (the SVD ords); ord is static: np.inf is spelled 'inf' (a Python float would be dynamic)")


def _scan_samples(low: float = -3, high: float = 3) -> SampleFn:
    def gen(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
        for shape, axis in [((7,), None), ((7,), 0), ((3, 4), None), ((3, 4), 0), ((3, 4), 1), ((3, 4), -1),
                            ((2, 3, 4), 1), ((), None), ((1, 5), 0), ((2, 33), 1), ((0, 3), 1)]:
            yield SampleInput((make(shape, dtype, rng, low, high),), {"axis": axis})
        if dtype.kind == "f":
            yield SampleInput((np.array([1.0, NAN, 2.0, INF, -INF], dtype),), {"axis": 0}, desc="nan and inf")
    return gen


def _running_samples() -> SampleFn:
    """ufunc.accumulate of maximum / minimum: explicit axes, ties, nans, signed zeros."""
    def gen(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
        for shape, axis in [((7,), 0), ((3, 4), 0), ((3, 4), 1), ((3, 4), -1), ((2, 3, 4), 1),
                            ((1, 5), 0), ((2, 33), 1), ((0, 3), 1)]:
            yield SampleInput((make(shape, dtype, rng, -3, 3),), {"axis": axis})
        yield SampleInput((rng.integers(-2, 2, (4, 9)).astype(dtype),), {"axis": 1}, desc="ties")
        if dtype.kind == "f":
            yield SampleInput((np.array([1.0, NAN, 2.0, INF, -INF], dtype),), {"axis": 0}, desc="nan and inf")
            yield SampleInput((np.array([-0.0, 0.0, -0.0, -1.0, 0.0], dtype),), {"axis": 0}, desc="signed zeros")
    return gen


op("maximum.accumulate", lambda x, axis: np.maximum.accumulate(x, axis=axis), _running_samples(),
   dtypes=NUMERIC)
op("minimum.accumulate", lambda x, axis: np.minimum.accumulate(x, axis=axis), _running_samples(),
   dtypes=NUMERIC)
op("cumsum", lambda x, axis: np.cumsum(x, axis=axis), _scan_samples(), dtypes=ALL_DTYPES, tol=REDUCTION)
op("cumsum.method", lambda x, axis: x.cumsum(axis=axis), _scan_samples(), dtypes=NUMERIC, tol=REDUCTION, thin=3,
   alias_of="cumsum")
op("cumprod", lambda x, axis: np.cumprod(x, axis=axis), _scan_samples(0.5, 1.5), dtypes=ALL_DTYPES,
   tol=REDUCTION)
op("cumprod.method", lambda x, axis: x.cumprod(axis=axis), _scan_samples(0.5, 1.5), dtypes=NUMERIC, tol=REDUCTION,
   thin=3, alias_of="cumprod")
op("cumsum.dtype", lambda x, t: np.cumsum(x, dtype=t), lambda dt, rng: [
    SampleInput((make((5,), dt, rng), np.float32)), SampleInput((make((2, 3), dt, rng), np.int64))],
   dtypes=(I32, BOOL, F64), tol=REDUCTION)


# ---- linear algebra ---------------------------------------------------------------------------------------


def _pairs(shapes: list[tuple[tuple[int, ...], tuple[int, ...]]], low: float = -2, high: float = 2) -> SampleFn:
    def gen(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
        for sa, sb in shapes:
            yield SampleInput((make(sa, dtype, rng, low, high), make(sb, dtype, rng, low, high)))
        other = {F32: F64, F64: I32, I32: F64}.get(dtype)
        if other is not None:
            sa, sb = shapes[0]
            yield SampleInput((make(sa, dtype, rng), make(sb, other, rng)), desc=f"{dtype.name} with {other.name}")
    return gen


_MATMUL_SHAPES = [((2, 3), (3, 4)), ((5, 2, 3), (3, 4)), ((5, 2, 3), (5, 3, 4)), ((1, 2, 3), (4, 3, 2)),
                  ((3,), (3, 4)), ((2, 3), (3,)), ((3,), (3,)), ((1, 1), (1, 1)), ((2, 0), (0, 3)),
                  ((17, 9), (9, 13)), ((2, 1, 3, 4), (3, 4, 2)), ((2, 3), (5, 3, 4)), ((3,), (5, 3, 2)),
                  ((5, 2, 3), (3,))]


def _matmul_errors() -> Iterator[ErrorInput]:
    yield error((_f((2, 3)), _f((2, 3))), errors.CompileError, r"(?i)shape|dimension|mismatch|match")
    yield error((_f((3,)), _f((4,))), errors.CompileError, r"(?i)shape|dimension|mismatch|match")


op("matmul", lambda a, b: np.matmul(a, b), _pairs(_MATMUL_SHAPES), dtypes=NUMERIC + (BOOL,), tol=REDUCTION,
   error_inputs=_matmul_errors)
op("matmul.operator", lambda a, b: a @ b, _pairs(_MATMUL_SHAPES), dtypes=NUMERIC, tol=REDUCTION,
   error_inputs=_matmul_errors, thin=3, alias_of="matmul")
op("dot", lambda a, b: np.dot(a, b),
   _pairs([((3,), (3,)), ((2, 3), (3,)), ((2, 3), (3, 4)), ((3,), (3, 4)), ((), (3,)), ((2, 3), ()),
           ((2, 3, 4), (4, 5)), ((2, 3, 4), (5, 4, 6)), ((1,), (1,)), ((2, 2, 3), (3,))]), dtypes=NUMERIC,
   tol=REDUCTION)


def _dot_one_element_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    """np.dot with a one-element operand (0-d, (1,), (1, 1)): NumPy's BLAS path is axpy into
    zeros, which skips a zero scale: np.dot(0.0, [-inf, -1.0]) is [0, 0], not [nan, -0]."""
    v = make((3,), dtype, rng)
    yield SampleInput((np.array(0.0, dtype), v), desc="0.0 * finite vector")
    yield SampleInput((make((1,), dtype, rng), make((1, 4), dtype, rng)), desc="(1,) . (1, 4)")
    yield SampleInput((make((3, 1), dtype, rng), make((1,), dtype, rng)), desc="(3, 1) . (1,)")
    yield SampleInput((make((2, 3), dtype, rng), np.array(0.0, dtype)), desc="matrix . 0.0")
    if dtype.kind != "f":
        yield SampleInput((np.array(False), make((2,), dtype, rng)), desc="0-d False . ints")
        return
    e = np.array([-INF, -1.0, -0.0, 0.0, NAN, INF, 2.5], dtype)
    for a in (np.array(False), np.array(0.0, dtype), np.array(-0.0, dtype), np.array(2.0, dtype),
              np.array(NAN, dtype)):
        yield SampleInput((a, e), desc=f"{describe([a])}={a.ravel()[0]} . edges")
        yield SampleInput((e, a), desc=f"edges . {describe([a])}={a.ravel()[0]}")
    yield SampleInput((np.array([0.0], dtype), e[None, :]), desc="(1,) . (1, n) edges")
    yield SampleInput((e[:, None], np.array([[0.0]], dtype)), desc="(n, 1) . (1, 1) edges")
    yield SampleInput((np.array([[0.0]], dtype), np.stack([e, e[::-1]])[:1]), desc="(1, 1) . (1, n) edges")
    yield SampleInput((np.array([0.0], dtype), np.array([-INF], dtype)), desc="one element: the product")
    yield SampleInput((np.array(0.0, dtype), np.full((2, 2, 2), -INF, dtype)), desc="3-d: the product")


op("dot.one_element", lambda a, b: np.dot(a, b), _dot_one_element_samples, dtypes=NUMERIC, tol=IEEE,
   notes="NumPy's axpy: a zero scale gives +0.0 even where the other operand is inf or nan")


def _blas_one_element_samples(kind: str) -> SampleFn:
    """np.inner and np.tensordot with a one-element operand: NumPy computes them with np.dot's
    BLAS path (tensordot reshapes to matrices), so a zero scale gives +0.0 there too."""
    def gen(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
        yield SampleInput((np.array(0.0, dtype), make((3,), dtype, rng)) + ((0,) if kind == "tensordot" else ()),
                          desc="0.0 * finite vector")
        if dtype.kind != "f":
            return
        e = np.array([-INF, -1.0, -0.0, 0.0, NAN, INF, 2.5], dtype)
        extra = (0,) if kind == "tensordot" else ()
        for a in (np.array(False), np.array(0.0, dtype), np.array(-0.0, dtype), np.array(2.0, dtype)):
            yield SampleInput((a, e) + extra, desc=f"{a.ravel()[0]} . edges")
            yield SampleInput((e, a) + extra, desc=f"edges . {a.ravel()[0]}")
        if kind == "inner":
            yield SampleInput((np.array([0.0], dtype), e[:, None]), desc="(1,) . (n, 1) edges")
            yield SampleInput((np.array([[0.0]], dtype), np.stack([e, e])[:, :1]), desc="(1, 1) . (2, 1)")
        else:
            yield SampleInput((np.array([0.0], dtype), e[None, :], 1), desc="axes=1, (1,) . (1, n) edges")
            yield SampleInput((np.array([[0.0]], dtype), e[None, None, :], 2), desc="axes=2, one element")
    return gen


op("inner.one_element", lambda a, b: np.inner(a, b), _blas_one_element_samples("inner"), dtypes=NUMERIC,
   tol=IEEE, notes="as dot.one_element: NumPy computes inner with dot's BLAS path")
op("tensordot.one_element", lambda a, b, axes: np.tensordot(a, b, axes=axes), _blas_one_element_samples("tensordot"),
   dtypes=NUMERIC, tol=IEEE, notes="as dot.one_element: NumPy's tensordot calls np.dot on matrices")
op("dot.method", lambda a, b: a.dot(b), _pairs([((2, 3), (3, 4)), ((3,), (3,))]), dtypes=FLOATS, tol=REDUCTION)
op("outer", lambda a, b: np.outer(a, b), _pairs([((3,), (4,)), ((2, 3), (4,)), ((1,), (5,)), ((), (3,))]),
   dtypes=NUMERIC, tol=IEEE)
op("inner", lambda a, b: np.inner(a, b), _pairs([((3,), (3,)), ((2, 3), (4, 3)), ((2, 3), (3,)), ((), (2, 2)),
                                                  ((2, 2, 3), (3,))]),
   dtypes=NUMERIC, tol=REDUCTION)
op("vdot", lambda a, b: np.vdot(a, b), _pairs([((2, 3), (6,)), ((4,), (4,))]), dtypes=NUMERIC, tol=REDUCTION)


def _tensordot_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    yield SampleInput((make((2, 3, 4), dtype, rng), make((3, 4, 5), dtype, rng), 2), desc="axes=2")
    yield SampleInput((make((2, 3), dtype, rng), make((3, 4), dtype, rng), 1), desc="axes=1")
    yield SampleInput((make((2, 3), dtype, rng), make((4, 5), dtype, rng), 0), desc="axes=0 (outer)")
    yield SampleInput((make((3, 2, 4), dtype, rng), make((4, 3), dtype, rng), ((0, 2), (1, 0))), desc="axes pairs")
    yield SampleInput((make((2, 3), dtype, rng), make((3, 2), dtype, rng), ([1, 0], [0, 1])), desc="axes lists")


op("tensordot", lambda a, b, axes: np.tensordot(a, b, axes=axes), _tensordot_samples, dtypes=NUMERIC, tol=REDUCTION)


def _einsum_samples(arity: int) -> SampleFn:
    unary = [("ii->i", [(3, 3)]), ("ij->", [(3, 4)]), ("ij->ji", [(3, 4)]), ("ii", [(4, 4)]), ("ijk->kj", [(2, 3, 4)]),
             ("ij->j", [(3, 4)]), ("...i->...", [(2, 3, 4)]), ("ijk->kji", [(2, 3, 4)]), ("iij->j", [(3, 3, 2)])]
    binary = [("ij,jk->ik", [(2, 3), (3, 4)]), ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]), ("i,j->ij", [(3,), (4,)]),
              ("ij,ij->i", [(3, 4), (3, 4)]), ("i,i->", [(5,), (5,)]), ("ij,j->i", [(3, 4), (4,)]),
              ("ij,kj->ik", [(2, 3), (4, 3)]), ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
              ("ij,jk", [(2, 3), (3, 4)]), ("i,i", [(4,), (4,)]), ("ij,ij->ij", [(2, 3), (2, 3)]),
              ("ba,ab->", [(2, 3), (3, 2)]), ("ijk,ikl->ijl", [(2, 3, 2), (2, 2, 3)]),
              ("...ij,...jk->...ik", [(2, 2, 3), (3, 4)]), ("i...,i...", [(3, 2), (3, 1)]),
              ("...i,...i", [(2, 3), (3,)]),
              # NumPy broadcasts a label's size-1 dim against the other operands
              ("...i,...i->...", [(3, 1), (3, 4)]), ("ij,ij->i", [(3, 1), (3, 4)]), ("i,i->i", [(1,), (4,)]),
              ("ij,jk", [(2, 1), (3, 2)])]
    ternary = [("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("i,ij,j->", [(2,), (2, 3), (3,)])]

    def gen(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
        for subscripts, shapes in {1: unary, 2: binary, 3: ternary}[arity]:
            yield SampleInput((subscripts, *[make(s, dtype, rng, -2, 2) for s in shapes]), desc=subscripts)
        if arity == 2 and dtype == F32:
            yield SampleInput(("i,i->", make((3,), F32, rng), make((3,), F64, rng)), desc="float32 with float64")
    return gen


op("einsum.unary", lambda s, a: np.einsum(s, a), _einsum_samples(1), dtypes=NUMERIC, tol=REDUCTION)
op("einsum.binary", lambda s, a, b: np.einsum(s, a, b), _einsum_samples(2), dtypes=NUMERIC, tol=REDUCTION)
op("einsum.ternary", lambda s, a, b, c: np.einsum(s, a, b, c), _einsum_samples(3), dtypes=NUMERIC, tol=REDUCTION)


def _trace_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    yield SampleInput((make((3, 3), dtype, rng),), {"offset": 0, "axis1": 0, "axis2": 1})
    yield SampleInput((make((3, 4), dtype, rng),), {"offset": 1, "axis1": 0, "axis2": 1})
    yield SampleInput((make((4, 3), dtype, rng),), {"offset": -2, "axis1": 0, "axis2": 1})
    yield SampleInput((make((2, 3, 3), dtype, rng),), {"offset": 0, "axis1": 1, "axis2": 2})
    yield SampleInput((make((3, 2, 3), dtype, rng),), {"offset": 0, "axis1": 0, "axis2": -1})


op("trace", lambda x, offset, axis1, axis2: np.trace(x, offset=offset, axis1=axis1, axis2=axis2), _trace_samples,
   dtypes=ALL_DTYPES, tol=REDUCTION)
op("diagonal", lambda x, offset, axis1, axis2: np.diagonal(x, offset=offset, axis1=axis1, axis2=axis2),
   _trace_samples, dtypes=ALL_DTYPES)
op("trace.method", lambda x: x.trace(), unary_samples(shapes=[(4, 4), (2, 3)]), dtypes=NUMERIC, tol=REDUCTION)
op("diagonal.method", lambda x: x.diagonal(), unary_samples(shapes=[(3, 3), (2, 5), (4, 1), (2, 3, 4)]),
   dtypes=NUMERIC)


# ---- shape manipulation --------------------------------------------------------------------------------


def _reshape_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for shape, new in [((12,), (3, 4)), ((2, 6), (-1,)), ((3, 4), (4, -1)), ((), (1, 1)), ((2, 3, 4), (6, 4)),
                       ((2, 3, 4), (2, -1, 2)), ((1,), ()), ((4, 3), (3, 4)), ((0, 3), (3, 0)), ((6,), (1, 6, 1)),
                       ((4, 6), 24), ((4, 6), (-1, 2, 3))]:
        yield SampleInput((make(shape, dtype, rng), new), desc=f"{shape}->{new}")
    yield SampleInput((make((4, 3), dtype, rng).T, (12,)), desc="non-contiguous input")


op("reshape", lambda x, shape: np.reshape(x, shape), _reshape_samples, dtypes=ALL_DTYPES,
   error_inputs=lambda: [error((_f((3, 4)), (5, -1)), errors.CompileError, r"(?i)reshape|size|shape"),
                         error((_f((3, 4)), (-1, -1)), errors.CompileError, r"(?i)reshape|-1|unknown|shape")])
op("reshape.method", lambda x, shape: x.reshape(shape), _reshape_samples, dtypes=NUMERIC, thin=3, alias_of="reshape")
op("reshape.varargs", lambda x: x.reshape(2, -1), unary_samples(shapes=[(2, 3), (4, 3), (2, 2, 2)]), dtypes=NUMERIC)
op("ravel", lambda x: np.ravel(x), unary_samples(), dtypes=ALL_DTYPES)
alias("ravel.method", lambda x: x.ravel(), "ravel", n=3, dtypes=NUMERIC)
op("flatten", lambda x: x.flatten(), unary_samples(), dtypes=NUMERIC)


def _transpose_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for shape, axes in [((3, 4), None), ((3, 4), (1, 0)), ((2, 3, 4), (1, 0, 2)), ((2, 3, 4), None),
                        ((2, 3, 4), (2, 0, 1)), ((5,), None), ((), None), ((2, 3, 4), (-1, 0, 1)), ((1, 33), None)]:
        yield SampleInput((make(shape, dtype, rng), axes), desc=f"{shape},axes={axes}")


op("transpose", lambda x, axes: np.transpose(x, axes), _transpose_samples, dtypes=ALL_DTYPES,
   error_inputs=lambda: [error((_f((2, 3)), (0, 0)), errors.CompileError, r"(?i)axes|axis|repeated|permutation")])
op("transpose.method", lambda x, axes: x.transpose(axes) if axes is not None else x.transpose(),
   _transpose_samples, dtypes=NUMERIC, thin=3, alias_of="transpose")
op(".T", lambda x: x.T, unary_samples(shapes=[(3, 4), (2, 3, 4), (5,), ()]), dtypes=ALL_DTYPES)
op(".mT", lambda x: x.mT, unary_samples(shapes=[(3, 4), (2, 3, 4)]), dtypes=STRUCTURAL)
op("transpose.varargs", lambda x: x.transpose(2, 0, 1), unary_samples(shapes=[(2, 3, 4), (1, 5, 2)]), dtypes=STRUCTURAL)
op("permute_dims", lambda x: np.permute_dims(x, (1, 2, 0)), unary_samples(shapes=[(2, 3, 4)]), dtypes=STRUCTURAL)
op("swapaxes.method", lambda x: x.swapaxes(-1, 1), unary_samples(shapes=[(2, 3, 4), (3, 2)]), dtypes=STRUCTURAL)
op("swapaxes", lambda x, a, b: np.swapaxes(x, a, b),
   lambda dt, rng: [SampleInput((make((2, 3, 4), dt, rng), 0, 2)), SampleInput((make((3, 4), dt, rng), -1, 0)),
                    SampleInput((make((2, 3, 4), dt, rng), 1, 1))], dtypes=NUMERIC)
op("moveaxis", lambda x, a, b: np.moveaxis(x, a, b),
   lambda dt, rng: [SampleInput((make((2, 3, 4), dt, rng), 0, -1)), SampleInput((make((2, 3, 4), dt, rng), -1, 0)),
                    SampleInput((make((2, 3, 4, 5), dt, rng), (0, 1), (-1, -2)))], dtypes=NUMERIC)


def _expand_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for shape, axis in [((3,), 0), ((3,), 1), ((3,), -1), ((), 0), ((2, 3), 1), ((2, 3), (0, 3))]:
        yield SampleInput((make(shape, dtype, rng), axis), desc=f"{shape},axis={axis}")


op("expand_dims", lambda x, axis: np.expand_dims(x, axis), _expand_samples, dtypes=ALL_DTYPES)
op("newaxis.leading", lambda x: x[None], unary_samples(shapes=[(), (3,), (2, 3)]), dtypes=ALL_DTYPES)
op("newaxis.middle", lambda x: x[:, None], unary_samples(shapes=[(3,), (2, 3)]), dtypes=NUMERIC)
op("newaxis.ellipsis", lambda x: x[..., None, :], unary_samples(shapes=[(3,), (2, 3), (2, 3, 4)]), dtypes=NUMERIC)
op("newaxis.np", lambda x: x[np.newaxis, :, np.newaxis], unary_samples(shapes=[(3,), (4,)]), dtypes=NUMERIC)


def _squeeze_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for shape, axis in [((1, 3, 1), None), ((1, 3, 1), 0), ((1, 3, 1), -1), ((1,), None), ((3,), None),
                        ((1, 1), (0, 1)), ((2, 1, 3), 1)]:
        yield SampleInput((make(shape, dtype, rng), axis), desc=f"{shape},axis={axis}")


op("squeeze", lambda x, axis: np.squeeze(x, axis), _squeeze_samples, dtypes=ALL_DTYPES,
   error_inputs=lambda: [error((_f((2, 3)), 0), errors.CompileError, r"(?i)squeeze|size|one|1")])
op("squeeze.method", lambda x: x.squeeze(), unary_samples(shapes=[(1, 3, 1), (1,), (2, 1)]), dtypes=NUMERIC)
op("squeeze.method_axis", lambda x: x.squeeze(1), unary_samples(shapes=[(3, 1, 4), (2, 1)]), dtypes=STRUCTURAL)
op("atleast_1d", lambda x: np.atleast_1d(x), unary_samples(shapes=[(), (3,), (2, 3)]), dtypes=STRUCTURAL)
op("atleast_2d", lambda x: np.atleast_2d(x), unary_samples(shapes=[(), (3,), (2, 3)]), dtypes=STRUCTURAL)
op("atleast_3d", lambda x: np.atleast_3d(x), unary_samples(shapes=[(), (3,), (2, 3), (2, 3, 4)]), dtypes=STRUCTURAL)


def _broadcast_to_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for shape, new in [((3,), (2, 3)), ((), (4,)), ((3, 1), (3, 4)), ((1, 1), (2, 3)), ((3,), (3,)),
                       ((2, 1, 3), (4, 2, 5, 3)), ((1,), (0,))]:
        yield SampleInput((make(shape, dtype, rng), new), desc=f"{shape}->{new}")


op("broadcast_to", lambda x, shape: np.broadcast_to(x, shape), _broadcast_to_samples, dtypes=ALL_DTYPES,
   error_inputs=lambda: [error((_f((3,)), (4,)), errors.CompileError, r"(?i)broadcast|shape")])
op("broadcast_to.plus", lambda x, shape: np.broadcast_to(x, shape) + 1, _broadcast_to_samples, dtypes=NUMERIC,
   notes="the broadcast view used in arithmetic")
op("broadcast_arrays", lambda a, b: np.broadcast_arrays(a, b), lambda dt, rng: [
    SampleInput((make((3, 1), dt, rng), make((4,), dt, rng))), SampleInput((make((), dt, rng), make((2, 3), dt, rng)))],
   dtypes=STRUCTURAL)


def _concat_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    m = lambda s: make(s, dtype, rng)  # noqa: E731
    yield SampleInput(((m((2, 3)), m((4, 3))), 0), desc="axis 0")
    yield SampleInput(((m((2, 3)), m((2, 1)), m((2, 5))), 1), desc="three, axis 1")
    yield SampleInput(((m((2, 3)), m((2, 2))), -1), desc="axis -1")
    yield SampleInput(([m((3,)), m((1,)), m((0,))], 0), desc="list with empty")
    yield SampleInput(((m((2, 3)), m((3,))), None), desc="axis None flattens")
    yield SampleInput(((m((1,)),), 0), desc="one array")
    other = F64 if dtype != F64 else F32
    yield SampleInput(((m((2,)), make((3,), other, rng)), 0), desc=f"{dtype.name} with {other.name}")


op("concatenate", lambda xs, axis: np.concatenate(xs, axis=axis), _concat_samples, dtypes=ALL_DTYPES,
   error_inputs=lambda: [error(((_f((2, 3)), _f((2, 4))), 0), errors.CompileError, r"(?i)shape|dimension|size|match"),
                         error(((_f((2, 3)), _f((3,))), 0), errors.CompileError, r"(?i)dimension|rank|ndim|shape")])


def _stack_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    m = lambda s: make(s, dtype, rng)  # noqa: E731
    yield SampleInput(((m((3,)), m((3,))), 0))
    yield SampleInput(((m((2, 3)), m((2, 3)), m((2, 3))), 1))
    yield SampleInput(((m((2, 3)), m((2, 3))), -1))
    yield SampleInput(([m(()), m(()), m(())], 0), desc="0-d arrays")


op("stack", lambda xs, axis: np.stack(xs, axis=axis), _stack_samples, dtypes=ALL_DTYPES,
   error_inputs=lambda: [error(((_f((3,)), _f((4,))), 0), errors.CompileError, r"(?i)shape")])


def _hvstack_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    m = lambda s: make(s, dtype, rng)  # noqa: E731
    yield SampleInput(((m((3,)), m((2,))),), desc="1-d")
    yield SampleInput(((m((2, 3)), m((2, 1))),), desc="2-d")
    yield SampleInput(((m(()), m((2,))),), desc="0-d and 1-d")


def _vstack_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    m = lambda s: make(s, dtype, rng)  # noqa: E731
    yield SampleInput(((m((3,)), m((3,))),), desc="1-d rows")
    yield SampleInput(((m((2, 3)), m((1, 3)), m((3,))),), desc="2-d and 1-d")


op("hstack", lambda xs: np.hstack(xs), _hvstack_samples, dtypes=NUMERIC)
op("vstack", lambda xs: np.vstack(xs), _vstack_samples, dtypes=NUMERIC)
op("dstack", lambda a, b: np.dstack([a, b]), lambda dt, rng: [
    SampleInput((make((2, 3), dt, rng), make((2, 3), dt, rng))),
    SampleInput((make((3,), dt, rng), make((3,), dt, rng)))],
   dtypes=STRUCTURAL)
op("column_stack", lambda a, b: np.column_stack([a, b]), lambda dt, rng: [
    SampleInput((make((3,), dt, rng), make((3,), dt, rng))), SampleInput((make((3, 2), dt, rng), make((3,), dt, rng)))],
   dtypes=STRUCTURAL)
op("append", lambda a, b: np.append(a, b), lambda dt, rng: [
    SampleInput((make((4,), dt, rng), make((2,), dt, rng))), SampleInput((make((2, 2), dt, rng), make((3,), dt, rng)))],
   dtypes=STRUCTURAL)
op("array.of_arrays", lambda x: np.array([x, x * 2]), unary_samples(shapes=[(3,), (2, 2), ()]), dtypes=STRUCTURAL)
op("array.of_elements", lambda x: np.array([[x[0], x[1]], [x[2], 1.0]]), unary_samples(shapes=[(3,), (4,)]),
   dtypes=FLOATS)
op("concatenate.list_literal", lambda x: np.concatenate([x, [1.0, 2.0]]), unary_samples(shapes=[(3,), (0,)]),
   dtypes=STRUCTURAL)


def _flip_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for shape, axis in [((5,), None), ((3, 4), None), ((3, 4), 0), ((3, 4), -1), ((2, 3, 4), (0, 2)), ((), None)]:
        yield SampleInput((make(shape, dtype, rng), axis), desc=f"{shape},axis={axis}")


op("flip", lambda x, axis: np.flip(x, axis), _flip_samples, dtypes=ALL_DTYPES)
op("fliplr", lambda x: np.fliplr(x), unary_samples(shapes=[(3, 4), (2, 1)]), dtypes=NUMERIC)
op("flipud", lambda x: np.flipud(x), unary_samples(shapes=[(3, 4), (5,)]), dtypes=NUMERIC)


def _tile_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for shape, reps in [((3,), 2), ((3,), (2, 1)), ((2, 3), (2, 3)), ((2, 3), 2), ((), 3), ((2, 1), (1, 4)),
                        ((2,), (2, 2, 2)), ((3,), 1)]:
        yield SampleInput((make(shape, dtype, rng), reps), desc=f"{shape},reps={reps}")


op("tile", lambda x, reps: np.tile(x, reps), _tile_samples, dtypes=ALL_DTYPES)


def _repeat_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for shape, reps, axis in [((3,), 2, None), ((2, 3), 2, None), ((2, 3), 2, 0), ((2, 3), 3, 1), ((2, 3), 2, -1),
                              ((3,), (1, 0, 2), 0), ((2, 3), [2, 1], 0), ((), 3, None), ((), 3, 0),
                              ((), 2, -1), ((), [2], 0)]:
        yield SampleInput((make(shape, dtype, rng), reps, axis), desc=f"{shape},repeats={reps},axis={axis}")


op("repeat", lambda x, repeats, axis: np.repeat(x, repeats, axis=axis), _repeat_samples, dtypes=ALL_DTYPES)
op("repeat.method", lambda x: x.repeat(2, axis=0), unary_samples(shapes=[(3,), (2, 3)]), dtypes=NUMERIC)


def _pad_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for shape, width in [((3,), 1), ((3,), (2, 0)), ((2, 3), ((1, 2), (0, 1))), ((2, 3), 1), ((2, 3), ((0, 0), (3, 3)))]:
        yield SampleInput((make(shape, dtype, rng), width), desc=f"{shape},pad={width}")


op("pad", lambda x, width: np.pad(x, width), _pad_samples, dtypes=ALL_DTYPES)
op("pad.constant_values", lambda x: np.pad(x, ((1, 1), (2, 0)), constant_values=7),
   unary_samples(shapes=[(2, 3), (1, 1)]), dtypes=NUMERIC)


def _roll_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for shape, shift, axis in [((4, 5), 2, None), ((4, 5), -1, 1), ((4, 5), (1, 2), (0, 1)), ((6,), 8, 0),
                               ((3,), 0, None)]:
        yield SampleInput((make(shape, dtype, rng), shift, axis), desc=f"{shape},shift={shift},axis={axis}")


op("roll", lambda x, shift, axis: np.roll(x, shift, axis=axis), _roll_samples, dtypes=STRUCTURAL)


def _split_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for shape, sections, axis in [((4, 5), 2, 0), ((4, 5), (1, 3), 1), ((6,), 3, 0), ((4, 5), (2,), -1)]:
        yield SampleInput((make(shape, dtype, rng), sections, axis), desc=f"{shape},{sections},axis={axis}")


op("split", lambda x, sections, axis: np.split(x, sections, axis=axis), _split_samples, dtypes=STRUCTURAL)


def _diag_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for shape, k in [((4, 4), 0), ((4, 4), 1), ((3, 4), -1), ((4,), 0), ((3,), -1), ((3,), 2)]:
        yield SampleInput((make(shape, dtype, rng), k), desc=f"{shape},k={k}")


op("diag", lambda x, k: np.diag(x, k), _diag_samples, dtypes=STRUCTURAL)
op("tril", lambda x, k: np.tril(x, k), lambda dt, rng: [SampleInput((make((4, 4), dt, rng), 0)),
                                                        SampleInput((make((3, 4), dt, rng), -1))], dtypes=STRUCTURAL)
op("triu", lambda x, k: np.triu(x, k), lambda dt, rng: [SampleInput((make((4, 4), dt, rng), 1)),
                                                        SampleInput((make((2, 3, 4), dt, rng), 0))], dtypes=STRUCTURAL)


# ---- indexing -----------------------------------------------------------------------------------------


def _index_op(name: str, fn: Callable[..., Any], shapes: list[tuple[int, ...]], dtypes: tuple = ALL_DTYPES,
              **kw: Any) -> OpInfo:
    return op(name, fn, unary_samples(shapes=shapes), dtypes=dtypes, **kw)


_index_op("slice.step", lambda x: x[1:-1:2], [(7,), (8, 2), (3,), (2,)])
_index_op("slice.reverse", lambda x: x[::-1], [(7,), (3, 4), (1,), (0,)])
_index_op("slice.negative_bounds", lambda x: x[-3:], [(7,), (2,), (4, 3)])
_index_op("slice.negative_step_bounds", lambda x: x[-2:0:-2], [(9,), (4, 3)])
_index_op("slice.2d", lambda x: x[:, 1:3], [(3, 4), (2, 5, 2)])
_index_op("slice.2d_steps", lambda x: x[::2, ::-2], [(5, 6), (4, 3, 2)], dtypes=NUMERIC)
_index_op("slice.empty", lambda x: x[2:1], [(5,), (5, 2)], dtypes=NUMERIC)
_index_op("slice.clamped", lambda x: x[2:100], [(5,), (3, 3)], dtypes=NUMERIC)
_index_op("slice.ellipsis", lambda x: x[..., 1:], [(3, 4), (2, 3, 4)], dtypes=NUMERIC)
_index_op("index.int", lambda x: x[0], [(5,), (3, 4), (2, 3, 4)])
_index_op("index.negative", lambda x: x[-1], [(5,), (3, 4)])
_index_op("index.2d", lambda x: x[1, 2], [(3, 4), (2, 3, 4)])
_index_op("index.column", lambda x: x[:, -1], [(3, 4), (2, 3, 4)])
_index_op("index.ellipsis", lambda x: x[0, ..., 1], [(3, 4), (2, 3, 4)], dtypes=NUMERIC)
_index_op("index.mixed", lambda x: x[1, ::-1], [(3, 4), (2, 3, 4)], dtypes=NUMERIC)

_index_op("index.array_const", lambda x: x[[0, 2]], [(4,), (3, 4), (3, 2, 2)])
_index_op("index.array_negative", lambda x: x[[-1, 0, -1]], [(4,), (3, 4)], dtypes=NUMERIC)
_index_op("index.array_np_const", lambda x: x[np.array([2, 0, 1])], [(4,), (3, 4)], dtypes=NUMERIC)
_index_op("index.array_axis1", lambda x: x[:, [1, 0, 1]], [(3, 4), (2, 3, 4)], dtypes=NUMERIC)
_index_op("index.array_2d", lambda x: x[np.array([[0, 1], [1, 0]])], [(3,), (3, 2)], dtypes=NUMERIC)
_index_op("index.take", lambda x: np.take(x, [2, 0], axis=-1), [(3,), (2, 3)], dtypes=NUMERIC)
_index_op("index.take_axis1", lambda x: np.take(x, [0, 2], axis=1), [(3, 4, 5), (2, 3)], dtypes=STRUCTURAL)
_index_op("index.take.method", lambda x: x.take([1, 0]), [(3, 4, 5), (2,)], dtypes=STRUCTURAL)
_index_op("index.bool_list", lambda x: x[[True, False, True, False, True]], [(5,), (5, 4)], dtypes=STRUCTURAL)


def as_index(spec: tuple) -> tuple:
    """A static index from its hashable spelling (slices are not hashable before Python 3.12):
    ``("s", start, stop, step)`` is a slice, ``"..."`` an Ellipsis, ``("list", items)`` a list and
    ``("array", rows)`` a NumPy array; None and ints stand for themselves."""
    out = []
    for part in spec:
        if isinstance(part, tuple) and part[0] == "s":
            out.append(slice(part[1], part[2], part[3]))
        elif isinstance(part, tuple) and part[0] == "list":
            out.append(list(part[1]))
        elif isinstance(part, tuple) and part[0] == "array":
            out.append(np.array(part[1]))
        elif part == "...":
            out.append(Ellipsis)
        else:
            out.append(part)
    return tuple(out)


def _s(start: int | None = None, stop: int | None = None, step: int | None = None) -> tuple:
    return ("s", start, stop, step)


#: x[index] for a (5, 4) array: every kind of basic index (ints, slices, None, Ellipsis)
STATIC_INDICES = [
    (0,), (-1,), (4,), (1, 2), (-1, -2), (_s(1, 3),), (_s(None, None, 2),), (_s(None, None, -1),), (_s(-2),),
    (_s(None, -2),), (_s(4, 1, -1),), (_s(None, None, -2),), (_s(3, 3),), (_s(10, 20),), (_s(-10, 2),),
    (_s(), 1), ("...", 0), (0, "..."), (_s(1, 4, 2), _s(None, None, -3)), (None, 0), (_s(), None), ("...", None),
    (1, _s(), None), (_s(4, None, -2), 2), (), (_s(1, 3), _s(None, None, 2)), ("...", _s(1)), (_s(), -1),
    (0, None, _s(1)), (-1, None), (_s(1, 3), 2, None)]
#: advanced indices of a (5, 4) and a (3, 4, 5) array (NumPy's placement of the advanced dims)
ADVANCED_INDICES = [
    ((5, 4), (("list", (0, 2)),)), ((5, 4), (("list", (4, -1, 0)),)), ((5, 4), (("array", (1, 1, 3)),)),
    ((5, 4), (("array", ((0, 1), (2, 3))),)), ((5, 4), (_s(), ("list", (0, -1)))),
    ((5, 4), (("list", (0, 1, 2)), ("list", (3, 2, 1)))), ((5, 4), (("list", (0, 4)), 1)),
    ((5, 4), (("array", ((0,), (1,))), ("array", (1, 2)))), ((5, 4), (_s(1, 3), ("list", (0, 2)))),
    ((3, 4, 5), (0, _s(), ("list", (1, 2)))), ((3, 4, 5), (_s(), ("list", (0, 1)), ("list", (1, 2))))]


op("index.static", lambda x, spec: x[as_index(spec)],
   lambda dt, rng: [SampleInput((make((5, 4), dt, rng), spec), desc=repr(spec).replace(" ", ""))
                    for spec in STATIC_INDICES],
   dtypes=(F64, I64), notes="the index is a static argument, spelled for as_index")
op("index.static_advanced", lambda x, spec: x[as_index(spec)],
   lambda dt, rng: [SampleInput((make(shape, dt, rng), spec), desc=repr(spec).replace(" ", ""))
                    for shape, spec in ADVANCED_INDICES], dtypes=(F64, I64))


def _dyn_index_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for shape, i in [((5,), 2), ((5,), 0), ((5,), -1), ((3, 4), 2), ((3, 4), -3), ((2, 3, 4), 1)]:
        yield SampleInput((make(shape, dtype, rng), np.int64(i)), desc=f"{shape}[int64 {i}]")
    yield SampleInput((make((4, 2), dtype, rng), np.array(3, np.int32)), desc="int32 0-d index")


op("index.dynamic_scalar", lambda x, i: x[i], _dyn_index_samples, dtypes=ALL_DTYPES,
   notes="an integer index that is a runtime value")


def _dyn_array_index_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    yield SampleInput((make((5,), dtype, rng), np.array([4, 0, 2, 2], np.int64)))
    yield SampleInput((make((4, 3), dtype, rng), np.array([-1, 1], np.int32)))
    yield SampleInput((make((4, 3), dtype, rng), np.array([[0, 3], [1, 1]], np.int64)))


op("index.dynamic_array", lambda x, idx: x[idx], _dyn_array_index_samples, dtypes=NUMERIC,
   notes="gather with a runtime index array (in bounds)")
op("index.dynamic_slice", lambda x, i: x[i, 1:3], lambda dt, rng: [
    SampleInput((make((4, 5), dt, rng), np.int64(1))), SampleInput((make((4, 5), dt, rng), np.int64(-1)))],
   dtypes=NUMERIC)
op("index.dynamic_column", lambda x, i: x[1:, i], lambda dt, rng: [
    SampleInput((make((5, 4), dt, rng), np.int64(3))), SampleInput((make((5, 4), dt, rng), np.int32(-2)))],
   dtypes=STRUCTURAL)
op("index.dynamic_row_step", lambda x, i: x[i, ::2], lambda dt, rng: [
    SampleInput((make((5, 4), dt, rng), np.int32(0))), SampleInput((make((5, 4), dt, rng), np.int64(-1)))],
   dtypes=STRUCTURAL)
op("index.data_dependent", lambda x, i: x[x[0].argmax()] + x[i], lambda dt, rng: [
    SampleInput((make((5, 4), dt, rng), np.int64(1)))], dtypes=STRUCTURAL,
   notes="an index computed by the kernel itself")
op("index.dynamic_array_axis1", lambda x, idx: x[:, idx], lambda dt, rng: [
    SampleInput((make((5, 4), dt, rng), np.array([[1], [2]]))),
    SampleInput((make((3, 4), dt, rng), np.array([3, -1])))],
   dtypes=STRUCTURAL)
op("index.dynamic_pair", lambda x, i, j: x[i, j], lambda dt, rng: [
    SampleInput((make((5, 4), dt, rng), np.array([0, 1]), np.array([3, 2]))),
    SampleInput((make((5, 4), dt, rng), np.array([[4], [0]]), np.array([-1, 1], np.int32)))], dtypes=STRUCTURAL)


# ---- functional updates -----------------------------------------------------------------------------


_OUTSIDE = np.zeros(3)


def _writes_argument(x):
    _OUTSIDE[0] = 1.0    # an in-place write into an array from outside the function: SideEffectError
    return x


def _set_slice(x, v):
    y = x.copy()
    y[1:3] = v
    return y


def _add_at_index(x, v):
    y = x.copy()
    y[1] += v
    return y


def _set_fancy(x, v):
    y = x.copy()
    y[[0, 2]] = v
    return y


def _add_fancy(x, v):
    y = x.copy()
    y[[2, 0]] += v
    return y


def _set_step(x, v):
    y = x.copy()
    y[::2] = v
    return y


def _set_block(x, v):
    y = x.copy()
    y[1:-1, 1:] = v
    return y


def _zero_column(x):
    y = np.copy(x)
    y[:, 0] = 0
    return y


def _scale_last(x):
    y = x.copy()
    y[..., -1] *= 2
    return y


def _set_dynamic(x, i, v):
    y = x.copy()
    y[i] = v
    return y


def _add_dynamic(x, i, v):
    y = x.copy()
    y[i] += v
    return y


def _update_samples(cases: list[tuple[tuple[int, ...], Any]]) -> SampleFn:
    """(x shape, v) pairs; v is a shape (a random array of x's dtype) or a Python scalar."""
    def gen(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
        for xs, vs in cases:
            if isinstance(vs, tuple):
                v = make(vs, dtype, rng)
            else:
                v = vs if dtype.kind == "f" or not isinstance(vs, float) else int(vs)
            yield SampleInput((make(xs, dtype, rng), v), desc=f"x{list(xs)} v={describe([v])}")
    return gen


op("update.slice_set", _set_slice, _update_samples([((5,), (2,)), ((5,), ()), ((5,), 1.5), ((4, 3), (2, 3)), ((4, 3), (3,)), ((4, 3), 1.5)]), dtypes=NUMERIC,
   error_inputs=lambda: [ErrorInput(SampleInput((_f((3,)),)), errors.SideEffectError, r".", fn=_writes_argument)])
op("update.index_add", _add_at_index, _update_samples([((5,), ()), ((5,), 2.5), ((4, 3), (3,)), ((4, 3), 2.5)]), dtypes=NUMERIC)
op("update.fancy_set", _set_fancy, _update_samples([((4,), ()), ((4,), (2,)), ((4, 3), (3,)), ((4, 3), (2, 3)), ((4, 3), 1.5)]), dtypes=NUMERIC)
op("update.fancy_add", _add_fancy, _update_samples([((4,), (2,)), ((4,), 1.5), ((4, 3), (2, 1)), ((4, 3), 1.5)]), dtypes=NUMERIC)
op("update.step_set", _set_step, _update_samples([((5,), ()), ((5,), (3,)), ((6, 2), (2,)), ((6, 2), 0.5)]), dtypes=NUMERIC)
op("update.block_set", _set_block, _update_samples([((4, 3), ()), ((4, 3), (2, 2)), ((3, 5), (4,)), ((3, 5), 0.5)]), dtypes=NUMERIC)
op("update.zero_column", _zero_column, unary_samples(shapes=[(3, 4), (2, 3, 2)]), dtypes=ALL_DTYPES)
op("update.scale_last", _scale_last, unary_samples(shapes=[(3, 4), (5,)]), dtypes=NUMERIC)


def _dyn_update_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for shape, i, vs in [((5,), 2, ()), ((5,), -1, ()), ((4, 3), 1, (3,)), ((4, 3), 3, ()), ((4, 3), -4, (1,))]:
        yield SampleInput((make(shape, dtype, rng), np.int64(i), make(vs, dtype, rng)), desc=f"{shape}[{i}]={vs}")


op("update.dynamic_set", _set_dynamic, _dyn_update_samples, dtypes=NUMERIC)
op("update.dynamic_add", _add_dynamic, _dyn_update_samples, dtypes=NUMERIC)


def _set_static(x, spec, v):
    y = x.copy()
    y[as_index(spec)] = v
    return y


#: y[index] = v for a (5, 4) array
SETITEM_INDICES = [(0,), (-1,), (1, 2), (_s(1, 4),), (_s(None, None, 2),), (_s(None, None, -1),), (_s(), 0),
                   ("...", -1), (_s(4, 0, -2), _s(1, 3)), (2, None, _s(1, 3))]


def _set_static_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for spec in SETITEM_INDICES:
        for v in (7.0, np.float32(3.5)):
            yield SampleInput((make((5, 4), dtype, rng), spec, v), desc=f"{spec}={describe([v])}".replace(" ", ""))


op("update.static_set", _set_static, _set_static_samples, dtypes=(F64, I64),
   notes="a Python float or a float32 scalar stored into every kind of basic index")


def _set_cast_into_int(x, v):
    y = np.zeros((3, 4), dtype=np.int32)
    y[1] = v                      # float values truncated into the int32 array
    y[:, 0] = 9.7
    return y


def _set_from_row(x):
    y = x.copy()
    y[:2] = x[3]                  # a row broadcast over two rows
    return y


def _augmented_updates(x, i):
    y = x.copy()
    y[0] += 1
    y[1:3] *= 2.0
    y[i] -= x[0]
    y[:, -1] /= 4
    return y


def _dynamic_row_then_slice(x, i, v):
    y = np.zeros_like(x)
    y[i] = v
    y[i, 1:3] = 5.0
    return y


def _fancy_mixed(x, idx):
    y = x.copy()
    y[idx] = -1.0
    y[[0, 1]] = x[3:5]
    y[:, [0, 3]] = 2.0
    return y


def _fancy_add_repeated(x):
    y = x.copy()
    y[[1, 1, 2]] += 1.0           # NumPy: buffered, a repeated index adds once
    return y


def _mask_set(x):
    y = x.copy()
    y[y < 0] = 0.0
    y[np.array([True, False, True, False, True])] = 1.0
    return y


op("update.cast_into_int", _set_cast_into_int, lambda dt, rng: [
    SampleInput((make((5, 4), dt, rng), make((4,), dt, rng, -9, 9)))], dtypes=(F64,))
op("update.from_row", _set_from_row, unary_samples(shapes=[(5, 4), (4, 2, 3)]), dtypes=STRUCTURAL)
op("update.augmented", _augmented_updates, lambda dt, rng: [
    SampleInput((make((5, 4), dt, rng), np.int64(4))), SampleInput((make((5, 4), dt, rng), np.int64(-1)))],
   dtypes=FLOATS)
op("update.dynamic_row_then_slice", _dynamic_row_then_slice, lambda dt, rng: [
    SampleInput((make((5, 4), dt, rng), np.int64(2), make((4,), dt, rng))),
    SampleInput((make((5, 4), dt, rng), np.int64(-2), make((4,), dt, rng)))], dtypes=STRUCTURAL)
op("update.fancy_mixed", _fancy_mixed, lambda dt, rng: [SampleInput((make((5, 4), dt, rng), np.array([2, 4])))],
   dtypes=FLOATS)
op("update.fancy_add_repeated", _fancy_add_repeated, unary_samples(shapes=[(5, 4), (3,)]), dtypes=FLOATS,
   notes="y[idx] += v with a repeated index: only the last write stays, in value and derivative")
op("update.mask_set", _mask_set, unary_samples(shapes=[(5, 4), (5,)]), dtypes=FLOATS,
   notes="masks with a scalar value: no data-dependent shape")



# ---- creation --------------------------------------------------------------------------------------------


def _creation_samples(shapes: list[Any], with_value: bool = False) -> SampleFn:
    def gen(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
        for s in shapes:
            yield SampleInput((s, dtype.type), desc=f"shape={s}")
    return gen


op("zeros", lambda shape, dtype: np.zeros(shape, dtype=dtype), _creation_samples([(3, 4), 5, (), (2, 0)]),
   dtypes=ALL_DTYPES, differentiable=False)
op("ones", lambda shape, dtype: np.ones(shape, dtype=dtype), _creation_samples([(3, 4), 5, ()]),
   dtypes=ALL_DTYPES, differentiable=False)
op("empty", lambda shape, dtype: np.empty(shape, dtype=dtype), _creation_samples([(3, 4), 4]),
   ref=lambda shape, dtype: np.zeros(shape, dtype=dtype), dtypes=ALL_DTYPES, differentiable=False,
   notes="NumPy leaves the contents unspecified; aotx fills zeros (the oracle)")
op("zeros.default_dtype", lambda n: np.zeros((n, 2)), lambda dt, rng: [SampleInput((3,))], dtypes=(F64,),
   differentiable=False)
op("full", lambda shape, value: np.full(shape, value),
   lambda dt, rng: [SampleInput(((2, 3), 1.5)), SampleInput(((2, 3), 7)), SampleInput((4, True)),
                    SampleInput(((), -2.5)), SampleInput(((3,), make((), dt, rng))), SampleInput(((2, 2), make((2,), dt, rng)))],
   dtypes=NUMERIC, differentiable=False, notes="a Python float fill value is a dynamic weak scalar")
op("full.dtype", lambda shape, value, dtype: np.full(shape, value, dtype=dtype),
   lambda dt, rng: [SampleInput(((2, 3), 3, dt.type)), SampleInput((5, 0.5, dt.type))], dtypes=NUMERIC,
   differentiable=False)
op("eye", lambda n, m, k, dtype: np.eye(n, m, k=k, dtype=dtype),
   lambda dt, rng: [SampleInput((3, None, 0, dt.type)), SampleInput((3, 4, 1, dt.type)), SampleInput((4, 2, -1, dt.type)),
                    SampleInput((1, None, 0, dt.type))], dtypes=ALL_DTYPES, differentiable=False)
op("identity", lambda n: np.identity(n), lambda dt, rng: [SampleInput((3,))], dtypes=(F64,), differentiable=False)
op("identity.dtype", lambda n, dtype: np.identity(n, dtype=dtype), lambda dt, rng: [SampleInput((2, dt.type))],
   dtypes=ALL_DTYPES, differentiable=False)
op("array.literal", lambda x: np.array([1, 2, 3]) * x, unary_samples(shapes=[(3,), (2, 3)]), dtypes=NUMERIC)
op("asarray.literal", lambda x: np.asarray([1.0, 2.0, 3.0], dtype=np.float32) * x, unary_samples(shapes=[(3,), (2, 3)]),
   dtypes=NUMERIC)
op("arange", lambda args, dtype: np.arange(*args, dtype=dtype),
   lambda dt, rng: [SampleInput(((5,), dt.type)), SampleInput(((1, 10, 2), dt.type)), SampleInput(((10, 1, -3), dt.type)),
                    SampleInput(((0,), dt.type)), SampleInput(((2, 2), dt.type))], dtypes=NUMERIC,
   differentiable=False)
op("arange.default_dtype", lambda args: np.arange(*args),
   lambda dt, rng: [SampleInput(((5,),)), SampleInput(((1, 10, 2),)), SampleInput(((-3, 4),))],
   dtypes=(I64,), differentiable=False)
op("arange.float", lambda n: np.arange(0.0, n * 0.1, 0.1) + np.arange(-1.5, n * 0.5 - 1.5, 0.5),
   lambda dt, rng: [SampleInput((10,)), SampleInput((7,)), SampleInput((1,))],
   dtypes=(F64,), differentiable=False, tol=Tol((0, 0), (0, 0), ulps=1),
   notes="float bounds computed at compile time (a Python float argument would be dynamic)")
op("linspace", lambda start, stop, num, endpoint, dtype: np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype),
   lambda dt, rng: [SampleInput((0, 1, 5, True, dt.type)), SampleInput((-1, 1, 7, True, dt.type)),
                    SampleInput((0, 10, 4, False, dt.type)), SampleInput((2, 3, 1, True, dt.type)),
                    SampleInput((0, 1, 0, True, dt.type)), SampleInput((-3, 7, 11, True, dt.type))],
   dtypes=NUMERIC, tol=Tol((1e-6, 1e-7), (1e-15, 1e-15), ulps=2), differentiable=False)
op("linspace.dynamic_bounds", lambda start, stop: np.linspace(start, stop, 6),
   lambda dt, rng: [SampleInput((0.5, 2.0)), SampleInput((make((), dt, rng), make((), dt, rng))),
                    SampleInput((make((3,), dt, rng), 1.0))],
   dtypes=FLOATS, tol=Tol((1e-6, 1e-7), (1e-15, 1e-15), ulps=2))
op("linspace.dynamic_endpoint", lambda stop: np.linspace(0.0, stop, 3, endpoint=False),
   lambda dt, rng: [SampleInput((make((2,), dt, rng),)), SampleInput((make((), dt, rng),))],
   dtypes=FLOATS, tol=Tol((1e-6, 1e-7), (1e-15, 1e-15), ulps=2))


def _like_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for s in [(3, 4), (), (5,), (0, 2)]:
        yield SampleInput((make(s, dtype, rng),))


op("zeros_like", lambda x: np.zeros_like(x), _like_samples, dtypes=ALL_DTYPES, differentiable=False)
op("ones_like", lambda x: np.ones_like(x), _like_samples, dtypes=ALL_DTYPES, differentiable=False)
op("full_like", lambda x: np.full_like(x, 2.5), _like_samples, dtypes=ALL_DTYPES, differentiable=False,
   notes="the fill value is cast to x's dtype (2.5 -> 2 for ints)")
op("zeros_like.dtype", lambda x: np.zeros_like(x, dtype=np.int32), _like_samples, dtypes=FLOATS, differentiable=False)
op("ones_like.plus", lambda x: x + np.ones_like(x), _like_samples, dtypes=NUMERIC)
op("copy", lambda x: x.copy(), _like_samples, dtypes=ALL_DTYPES)
alias("np.copy", lambda x: np.copy(x), "copy")
op("empty_like", lambda x: np.empty_like(x), _like_samples, ref=lambda x: np.zeros_like(x), dtypes=ALL_DTYPES,
   differentiable=False, notes="NumPy leaves the contents unspecified; aotx fills zeros (the oracle)")
op("like.dtype", lambda x, t: (np.ones_like(x, dtype=t), np.full_like(x, 3, dtype=t), np.zeros_like(x, dtype=t)),
   lambda dt, rng: [SampleInput((make((2, 3), dt, rng), t)) for t in (np.float32, np.int32, np.bool_)],
   dtypes=(F64,), differentiable=False)


# ---- custom functions (compiler.Function) --------------------------------------------------------------


class _Cube(Function):
    """A compilable forward (a ``custom_function`` region) returning an intermediate too."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x ** 3, 3 * x ** 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,), (_, dx) = inputs, output
        ctx.save_for_backward(x, dx)

    @staticmethod
    def backward(ctx, grad_out, grad_dx):
        x, dx = ctx.saved_tensors
        return grad_out * dx + grad_dx * 6 * x

    @staticmethod
    def jvp(ctx, t):
        x, dx = ctx.saved_tensors
        return dx * t, 6 * x * t


class _MedianHost(Function):
    """The forward runs as a host callback (host_callback = True), in NumPy."""

    host_callback = True

    @staticmethod
    def forward(x):
        return np.median(x, axis=-1)


op("Function.compiled_forward", lambda x: _Cube.apply(x)[0] + 1.0, unary_samples(shapes=[(), (5,), (3, 4)]),
   tol=TRANSCENDENTAL, notes="custom_function with the user's forward as its region (x ** 3 is pow)")
op("Function.host_callback", lambda x: _MedianHost.apply(x) * 2.0,
   unary_samples(shapes=[(5,), (3, 4), (2, 3, 1)]), differentiable=False, supports_vmap=False,
   notes="custom_function around a host_call into NumPy")


# ---- loops that stay loops: one `for` op (compiler/primitives/loops.py) --------------------------------

def _loop_rows(x):
    """A Python loop over the rows of x, with a carried accumulator and a row-dependent update."""
    acc = np.zeros(x.shape[1:])
    for i in range(x.shape[0]):
        acc = np.sin(acc) * 0.5 + x[i] * (i + 1)
    return acc


def _loop_write_rows(x):
    """Rows of an output written one by one from the previous row (a recurrence)."""
    out = np.zeros_like(x)
    out[0] = x[0]
    for i in range(1, x.shape[0]):
        out[i] = np.tanh(out[i - 1]) + x[i]
    return out


def _scan_cumulative(x):
    def step(c, row):
        c = c * 0.9 + np.cos(row)
        return c, c * row
    return compiler.scan(step, np.zeros(x.shape[1:], x.dtype), x)


def _fori_power(x):
    return compiler.fori_loop(0, 12, lambda i, c: c * np.tanh(x) + 0.1 * i, np.ones_like(x))


_LOOP_SHAPES = [(9, 3), (12,), (10, 2, 2)]
op("loop.for_rows", _loop_rows, unary_samples(shapes=_LOOP_SHAPES), tol=TRANSCENDENTAL,
   notes="for i in range(n) over the rows: a for op with the index as a run-time value")
op("loop.write_rows", _loop_write_rows, unary_samples(shapes=_LOOP_SHAPES), tol=TRANSCENDENTAL,
   notes="out[i] = f(out[i - 1]) + x[i]: dynamic_slice and dynamic_update_slice on a carried array")
op("loop.scan", _scan_cumulative, unary_samples(shapes=_LOOP_SHAPES), tol=TRANSCENDENTAL,
   notes="compiler.scan: xs read and ys written a row per iteration")
op("loop.fori_loop", _fori_power, unary_samples(shapes=[(), (5,), (3, 4)]), tol=TRANSCENDENTAL,
   notes="compiler.fori_loop with a static trip count larger than the unrolling limit")


# ---- symbolic shapes: one kernel for every size --------------------------------------------------------

op("symbolic.mean_by_shape", lambda x: x.sum(axis=0) / x.shape[0],
   lambda dt, rng: [SampleInput((make((n, 3), dt, rng),), desc=f"n={n}") for n in (1, 4, 33)],
   dtypes=(F64,), signature="f64[n, 3]", tol=REDUCTION, notes="x.shape[0] is a runtime value")
op("symbolic.scale_by_size", lambda x: x * x.shape[0] + x.size,
   lambda dt, rng: [SampleInput((make((n,), dt, rng),), desc=f"n={n}") for n in (0, 1, 7)],
   dtypes=(F32,), signature="f32[n]", tol=IEEE)
op("symbolic.checked", lambda x: x[2] * np.max(x, axis=0) + x[-1],
   lambda dt, rng: [SampleInput((make((n, 2), dt, rng),), desc=f"n={n}") for n in (3, 8)],
   dtypes=(F64,), signature="f64[n, 2]", tol=EXACT,
   notes="x[2], x[-1] and a max over n are checked when the kernel runs (IndexError, ValueError "
         "for small n: tests/shapes/test_checks.py)")


# ---- error inputs of the indexing ops ------------------------------------------------------------------

by_name("index.int").error_inputs = lambda: [error((_f((0,)),), errors.CompileError, r"(?i)index|bounds|range")]
by_name("index.array_const").error_inputs = lambda: [
    ErrorInput(SampleInput((_f((4,)),)), errors.DynamicShapeError, r".", fn=lambda x: x[x > 0]),
    ErrorInput(SampleInput((_f((4,)),)), errors.DynamicShapeError, r".", fn=lambda x: np.nonzero(x)),
    ErrorInput(SampleInput((_f((4,)),)), errors.DynamicShapeError, r".", fn=lambda x: np.unique(x))]
by_name("index.2d").error_inputs = lambda: [error((_f((3, 2)),), errors.CompileError, r"(?i)index|bounds|range")]


# ---- primitive-level samples (tests/ops/test_primitives.py) --------------------------------------------
#
# Each is attached to an OpInfo whose samples lower to that primitive (a test checks it). The
# arrays are small; every sample runs natively and interpreted, under vmap with every in_dims
# combination, and (where `grad`) under jvp and vjp. Elementwise primitives, convert and
# dot_general are sampled in float32 and float64; the shape, indexing and reduction primitives,
# whose lowering does not depend on the float type, in float64 (their float32 kernels are
# compiled by the NumPy-level tests).


def prims(op_name: str, fn: PrimSampleFn, dtypes: tuple = FLOATS) -> None:
    info = by_name(op_name)
    if info.prim_samples is not None:
        raise ValueError(f"primitive samples of {op_name!r} declared twice")
    info.prim_samples, info.prim_dtypes = fn, tuple(np.dtype(d) for d in dtypes)


def _i64(v: Any) -> np.ndarray:
    return np.array(v, np.int64)


def _prim_unary(prim: str, low: float, high: float, *, zero_is_smooth: bool = True) -> PrimSampleFn:
    """A (7, 5) array inside the domain with an exact zero (the backend's 0 case); where the
    derivative is not defined at 0, a second array without it for the jvp/vjp tests."""
    def gen(dtype: np.dtype, rng: np.random.Generator) -> Iterator[PrimSample]:
        x = make((7, 5), dtype, rng, low, high)
        x.flat[0] = 0
        yield PrimSample(prim, (x,), desc="with a zero", grad=zero_is_smooth)
        if not zero_is_smooth:
            yield PrimSample(prim, (make((6,), dtype, rng, low, high),))
    return gen


# (floor, ceil, round and sign are not differentiable ops: their zero needs no second sample)
for _name, _lo, _hi, _smooth0 in [
        ("neg", -3, 3, True), ("abs", -3, 3, False), ("sign", -3, 3, True), ("exp", -3, 3, True),
        ("exp2", -3, 3, True), ("expm1", -3, 3, True), ("sin", -3, 3, True), ("cos", -3, 3, True),
        ("tan", -1.2, 1.2, True), ("tanh", -3, 3, True), ("sinh", -3, 3, True), ("cosh", -3, 3, True),
        ("arctan", -3, 3, True), ("floor", -3, 3, True), ("ceil", -3, 3, True), ("round", -3, 3, True),
        ("isnan", -3, 3, True), ("isinf", -3, 3, True), ("isfinite", -3, 3, True), ("cbrt", -3, 3, False),
        ("log", 0.01, 5, False), ("log2", 0.01, 5, False), ("log10", 0.01, 5, False),
        ("log1p", 0.01, 5, True), ("sqrt", 0.01, 5, False), ("arcsin", -0.9, 0.9, True),
        ("arccos", -0.9, 0.9, True), ("arcsinh", -3, 3, True), ("arccosh", 1.1, 5, False),
        ("arctanh", -0.9, 0.9, True)]:
    prims(_name, _prim_unary(_name, _lo, _hi, zero_is_smooth=_smooth0))
prims("invert", lambda dt, rng: [PrimSample("not", (make((7, 5), dt, rng, -9, 9),))], dtypes=(BOOL,) + INTS)


def _prim_binary(prim: str, *, y_low: float = -2, y_high: float = 3, round_y: bool = False,
                 nonzero_y: bool = False, grad: bool = True, int_y: tuple[int, int] = (-4, 4)) -> PrimSampleFn:
    """Floats: x in (0.1, 3), y in (y_low, y_high) of shape (4, 9); integers: (33,) vectors."""
    def gen(dtype: np.dtype, rng: np.random.Generator) -> Iterator[PrimSample]:
        if dtype.kind == "f":
            x, y = make((4, 9), dtype, rng, 0.1, 3), make((4, 9), dtype, rng, y_low, y_high)
            if round_y:
                y = np.round(y)
            if nonzero_y:       # |y| >= 0.3: a divisor away from 0
                y = np.where(y < 0, np.minimum(y, -0.3), np.maximum(y, 0.3)).astype(dtype)
            yield PrimSample(prim, (x, y), grad=grad)
        else:
            x, y = make((33,), dtype, rng, -9, 9), make((33,), dtype, rng, *int_y)
            yield PrimSample(prim, (x, y))
    return gen


_INT_AND_FLOAT = FLOATS + INTS
for _op_name, _prim in [("add", "add"), ("sub", "sub"), ("mul", "mul"), ("maximum", "max"),
                        ("minimum", "min"), ("eq", "eq"), ("lt", "lt"), ("ne", "ne"), ("le", "le"),
                        ("gt", "gt"), ("ge", "ge")]:
    prims(_op_name, _prim_binary(_prim), dtypes=_INT_AND_FLOAT)
prims("truediv", _prim_binary("div", nonzero_y=True))
prims("arctan2", _prim_binary("arctan2"))
prims("hypot", _prim_binary("hypot"))
prims("pow", _prim_binary("pow", round_y=True, int_y=(0, 4)), dtypes=_INT_AND_FLOAT)
for _bitwise in ("and", "or", "xor"):
    prims(f"{_bitwise}_op", _prim_binary(_bitwise, int_y=(-9, 9)), dtypes=(BOOL,) + INTS)
prims("left_shift", _prim_binary("shl", int_y=(-2, 70)), dtypes=INTS)
prims("right_shift", _prim_binary("shr", int_y=(-2, 70)), dtypes=INTS)


def _prim_divmod(prim: str) -> PrimSampleFn:
    """Random operands (mod jumps: not a differentiable point), a pair of operands where mod is
    smooth, and the division edges: by zero, int64 min // -1, signed zeros, infinities, nan."""
    def gen(dtype: np.dtype, rng: np.random.Generator) -> Iterator[PrimSample]:
        yield from _prim_binary(prim, grad=False)(dtype, rng)
        if dtype.kind == "f":
            yield PrimSample(prim, (make((4,), dtype, rng, 0.3, 2.0), make((4,), dtype, rng, 2.5, 3.0)),
                             desc="no wrap-around")
        if dtype == F64:
            yield PrimSample(prim, (np.array([5.0, -5.0, 5.0, -0.0, 1.0, INF, 3.0, NAN]),
                                    np.array([-3.0, 3.0, 0.0, 2.0, INF, 2.0, -INF, 1.0])), desc="edges", grad=False)
        if dtype == I64:
            yield PrimSample(prim, (np.array([7, -7, 0, np.iinfo(np.int64).min, 5], np.int64),
                                    np.array([0, 2, 0, -1, -2], np.int64)), desc="division by zero, min // -1")
    return gen


prims("floordiv", _prim_divmod("floordiv"), dtypes=_INT_AND_FLOAT)
prims("mod", _prim_divmod("mod"), dtypes=_INT_AND_FLOAT)


def _prim_convert(dtype: np.dtype, rng: np.random.Generator) -> Iterator[PrimSample]:
    for target in ALL_DTYPES:
        yield PrimSample("convert", (make((10,), dtype, rng, -50, 50),), {"dtype": target})


prims("astype", _prim_convert, dtypes=ALL_DTYPES)
prims("where", lambda dt, rng: [
    PrimSample("select", (make((6, 3), BOOL, rng), make((6, 3), dt, rng), make((6, 3), dt, rng))),
    PrimSample("select", (make((4,), BOOL, rng), make((4,), dt, rng), make((4,), dt, rng)))])


# ---- reductions and scans

_REDUCE_AXES = [(0,), (1,), (0, 1), (0, 2), ()]


def _prim_reduce(prim: str) -> PrimSampleFn:
    def gen(dtype: np.dtype, rng: np.random.Generator) -> Iterator[PrimSample]:
        for axes in _REDUCE_AXES:
            yield PrimSample(prim, (make((3, 4, 5), dtype, rng, 0.5, 1.5),), {"axes": axes})
    return gen


for _op_name, _prim in [("sum", "reduce_sum"), ("prod", "reduce_prod"), ("max", "reduce_max"),
                        ("min", "reduce_min")]:
    prims(_op_name, _prim_reduce(_prim), dtypes=(F64,))
prims("all", lambda dt, rng: [PrimSample("reduce_and", (make((4, 5), BOOL, rng),), {"axes": (1,)})], dtypes=(BOOL,))
prims("any", lambda dt, rng: [PrimSample("reduce_or", (make((4, 5), BOOL, rng),), {"axes": (1,)})], dtypes=(BOOL,))


def _prim_arg_reduce(prim: str) -> PrimSampleFn:
    def gen(dtype: np.dtype, rng: np.random.Generator) -> Iterator[PrimSample]:
        for axis in (0, 1):
            x = make((6, 7), dtype, rng, -3, 3)
            if dtype.kind == "f":
                x[2, 3] = NAN
            yield PrimSample(prim, (x,), {"axis": axis}, desc="with a nan" if dtype.kind == "f" else "")
    return gen


prims("argmax", _prim_arg_reduce("argmax"), dtypes=(F64, I32))
prims("argmin", _prim_arg_reduce("argmin"), dtypes=(F64, I32))


def _prim_scan(prim: str) -> PrimSampleFn:
    def gen(dtype: np.dtype, rng: np.random.Generator) -> Iterator[PrimSample]:
        for axis in (0, 1):
            yield PrimSample(prim, (make((5, 6), dtype, rng, 0.5, 1.5),), {"axis": axis})
    return gen


prims("cumsum", _prim_scan("cumsum"), dtypes=(F64,))
prims("cumprod", _prim_scan("cumprod"), dtypes=(F64,))
prims("maximum.accumulate", _prim_scan("cummax"), dtypes=(F64,))
prims("minimum.accumulate", _prim_scan("cummin"), dtypes=(F64,))


# ---- dot_general: any dimension numbers

_DOT_CASES = [((((1,), (0,)), ((), ())), ((4, 5), (5, 3))), ((((1,), (0,)), ((), ())), ((4, 5), (5,))),
              ((((0,), (0,)), ((), ())), ((5,), (5,))), ((((2,), (1,)), ((0,), (0,))), ((2, 4, 5), (2, 5, 3))),
              ((((2,), (1,)), ((0,), (0,))), ((2, 3, 4), (2, 4))), ((((), ()), ((), ())), ((3,), (4,))),
              ((((0,), (1,)), ((), ())), ((4, 3), (2, 4)))]

prims("matmul", lambda dt, rng: [
    PrimSample("dot_general", (make(sa, dt, rng, -2, 2), make(sb, dt, rng, -2, 2)), {"dimension_numbers": dn})
    for dn, (sa, sb) in _DOT_CASES], dtypes=FLOATS + (I64,))


# ---- shape primitives

prims("broadcast_to", lambda dt, rng: [
    PrimSample("broadcast_in_dim", (make((3, 1), dt, rng),), {"shape": (2, 3, 4), "broadcast_dimensions": (1, 2)})],
   dtypes=(F64,))
prims("reshape", lambda dt, rng: [PrimSample("reshape", (make((3, 4), dt, rng),), {"new_sizes": (2, 6)})],
   dtypes=(F64,))
prims("transpose", lambda dt, rng: [
    PrimSample("transpose", (make((2, 3, 4), dt, rng),), {"permutation": (2, 0, 1)})], dtypes=(F64,))
prims("slice.step", lambda dt, rng: [
    PrimSample("slice", (make((3, 4), dt, rng),),
               {"start_indices": (1, 0), "limit_indices": (3, 4), "strides": (1, 2)}),
    PrimSample("slice", (make((5, 4), dt, rng),),
               {"start_indices": (1, 0), "limit_indices": (5, 4), "strides": (2, 3)})],
   dtypes=(F64,))
prims("flip", lambda dt, rng: [PrimSample("rev", (make((3, 4), dt, rng),), {"dimensions": (1,)})], dtypes=(F64,))
prims("diagonal", lambda dt, rng: [
    PrimSample("diagonal", (make((4, 5), dt, rng),), {"axis1": 0, "axis2": 1}),
    PrimSample("diagonal", (make((3, 3), dt, rng),), {"axis1": 0, "axis2": 1}),
    PrimSample("diagonal", (make((2, 3, 4), dt, rng),), {"axis1": 2, "axis2": 0})], dtypes=(F64,))
prims("pad", lambda dt, rng: [
    PrimSample("pad", (make((3, 4), dt, rng), np.array(7, dt)), {"low": (1, 0), "high": (0, 2)}),
    PrimSample("pad", (make((2, 3), dt, rng), make((), dt, rng)), {"low": (1, 0), "high": (0, 2)})], dtypes=(F64,))
prims("concatenate", lambda dt, rng: [
    PrimSample("concatenate", (make((3, 4), dt, rng), make((2, 4), dt, rng), make((1, 4), dt, rng)), {"dimension": 0}),
    PrimSample("concatenate", (make((2, 3), dt, rng), make((2, 1), dt, rng)), {"dimension": 1})], dtypes=(F64,))
prims("eye", lambda dt, rng: [
    PrimSample("iota", (), {"dtype": dt, "shape": (3, 4), "dimension": 1})], dtypes=(I32, F64))
prims("full", lambda dt, rng: [
    PrimSample("constant", (), {"value": np.arange(6, dtype=dt).reshape(2, 3)})], dtypes=(F64, I64))


# ---- indexing primitives (indices are clamped: out-of-bounds ones included)

prims("index.take", lambda dt, rng: [
    PrimSample("take", (make((5, 3), dt, rng), _i64([0, -1, 2, 9, -9])), {"axis": 0}, desc="out of bounds"),
    PrimSample("take", (make((5, 4), dt, rng), np.array([[1, 2], [3, 0]], np.int32)), {"axis": 1}),
    PrimSample("take", (make((2, 5, 3), dt, rng), _i64([[1, 4], [0, -2]])), {"axis": 1}),
    PrimSample("take", (make((5, 3), dt, rng), _i64([0, -1, 2, 2])), {"axis": 0}),
    # the vmap rule of take with batched indices reads a dimension's size with size_of
    PrimSample("size_of", (), {"dim": 7, "dtype": I64 if dt == F64 else I32})], dtypes=(F64,))
prims("index.dynamic_slice", lambda dt, rng: [
    PrimSample("dynamic_slice", (make((5, 4), dt, rng), _i64(3), _i64(1)), {"sizes": (2, 2)}),
    PrimSample("dynamic_slice", (make((5, 4), dt, rng), _i64(2), _i64(-1)), {"sizes": (2, 3)}, desc="clamped"),
    PrimSample("dynamic_slice", (make((5, 4), dt, rng), _i64(2), _i64(1)), {"sizes": (2, 3)})], dtypes=(F64,))
prims("update.dynamic_set", lambda dt, rng: [
    PrimSample("dynamic_update_slice", (make((5, 4), dt, rng), make((2, 2), dt, rng), _i64(4), _i64(-1)),
               desc="clamped"),
    PrimSample("dynamic_update_slice", (make((5, 4), dt, rng), make((2, 3), dt, rng), _i64(1), _i64(0)))],
   dtypes=(F64,))
prims("update.step_set", lambda dt, rng: [
    PrimSample("update_slice", (make((5, 4), dt, rng), make((2, 2), dt, rng)),
               {"start_indices": (1, 0), "limit_indices": (5, 4), "strides": (2, 3)}),
    PrimSample("update_slice", (make((5, 4), dt, rng), make((2, 2), dt, rng)),
               {"start_indices": (0, 1), "limit_indices": (4, 4), "strides": (2, 2)})], dtypes=(F64,))
prims("update.fancy_set", lambda dt, rng: [
    PrimSample("scatter", (make((5, 4), dt, rng), _i64([1, 3, 1]), make((3, 4), dt, rng)), {"axis": 0, "mode": "set"},
               desc="colliding indices", grad=False),
    PrimSample("scatter", (make((5, 3), dt, rng), _i64([1, 3]), make((2, 3), dt, rng)), {"axis": 0, "mode": "set"}),
    PrimSample("scatter", (make((4, 5), dt, rng), _i64([0, 4]), make((4, 2), dt, rng)), {"axis": 1, "mode": "set"})],
   dtypes=(F64,))


# ---- check (a passing condition: failing ones are in tests/shapes/test_checks.py)

prims("symbolic.checked", lambda dt, rng: [
    PrimSample("check", (np.ones((3, 2), bool),),
               {"error": "ValueError", "message": "never raised {0}", "dims": (3,)}, desc="passes"),
    PrimSample("check", (np.array(True),), {"error": "IndexError", "message": "never raised"})],
   dtypes=(F64,))

prims("update.fancy_add", lambda dt, rng: [
    PrimSample("scatter", (make((5, 4), dt, rng), _i64([1, 3, 1]), make((3, 4), dt, rng)), {"axis": 0, "mode": "add"},
               desc="colliding indices"),
    PrimSample("scatter", (make((5, 3), dt, rng), _i64([1, 3, 1]), make((3, 3), dt, rng)), {"axis": 0, "mode": "add"}),
    PrimSample("scatter", (make((4, 0), dt, rng), _i64([3, 0, 2]), make((3, 0), dt, rng)), {"axis": 0, "mode": "add"},
               desc="size-0 rows (the vjp of a gather from an empty slice)")],
   dtypes=(F64,))


# ---- compiler.random (docs/random.md) ---------------------------------------------------------------
#
# Draws from an explicit key are a pure function of the key: compiled, interpreted and vmapped
# (over batches of keys) they must equal the independent reference of tests/random/reference.py,
# which implements Philox-4x32-10 and the maps from words to numbers from their definitions.
# Key-less draws take a fresh key per call (tests/random covers them).

def _key_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for k in (0, 1, -7, 2**62 + 3):
        yield SampleInput((np.int64(k),), desc=f"key {k}")


def _random_normal(key: Any) -> Any:
    return crandom.normal(key, (4, 3))


def _random_normal_ref(key: Any) -> Any:
    return rref.normal(int(key), (4, 3))


def _uniform_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for k in (3, -11):
        yield SampleInput((np.int64(k), make((5,), dtype, rng, -2, 0), make((5,), dtype, rng, 1, 3)))


def _random_uniform(key: Any, low: Any, high: Any) -> Any:
    return crandom.uniform(key, (5,), dtype=low.dtype, low=low, high=high)


def _random_uniform_ref(key: Any, low: Any, high: Any) -> Any:
    u = rref.uniform(int(key), (5,)).astype(low.dtype)
    return low + u * (high - low)


op("random.normal", _random_normal, _key_samples, dtypes=(I64,), ref=_random_normal_ref,
   tol=Tol((1e-6, 1e-6), (1e-13, 1e-14), ulps=4), differentiable=False, more_dtypes=())
op("random.uniform", _random_uniform, _uniform_samples, ref=_random_uniform_ref, tol=IEEE,
   more_dtypes=(), notes="draws are float32 or float64 (docs/random.md)")


def _philox_words(shape: tuple[int, ...], rng: np.random.Generator) -> tuple:
    return tuple(rng.integers(-2**31, 2**31, size=shape, dtype=np.int64).astype(np.int32)
                 for _ in range(6))


prims("random.normal", lambda dt, rng: [
    PrimSample("philox", _philox_words((), rng), {"lane": lane}, desc=f"lane {lane}") for lane in range(4)]
    + [PrimSample("philox", _philox_words((3,), rng), {"lane": 2}, desc="vector")],
    dtypes=(I32,))


# ---- complex numbers (docs/complex.md) ----------------------------------------------------------------
# complex128 first: the vmap tests take an op's first dtype; the derivative tests of complex
# ops are tests/ops/test_complex_grad.py (jvp and vjp against finite differences in the real
# and imaginary directions, and the dot-product test with Re<u, v>).

C64, C128 = np.dtype(np.complex64), np.dtype(np.complex128)
COMPLEX = (C128, C64)


def cmake(shape: tuple[int, ...], dtype: Any, rng: np.random.Generator, low: float = -2.0,
          high: float = 2.0) -> np.ndarray:
    """A random complex array: real and imaginary parts uniform in [low, high]."""
    return (rng.uniform(low, high, shape) + 1j * rng.uniform(low, high, shape)).astype(dtype)


def _real_of(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype == C64 else F64


def complex_unary(low: float = -2.0, high: float = 2.0,
                  shapes: tuple[tuple[int, ...], ...] = ((7,), (3, 4), (), (2, 0))) -> SampleFn:
    def gen(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
        for s in shapes:
            yield SampleInput((cmake(s, dtype, rng, low, high),))
    return gen


def complex_binary(low: float = -2.0, high: float = 2.0, rlow: float | None = None,
                   rhigh: float | None = None) -> SampleFn:
    """Broadcasting complex pairs and a real partner (NEP 50: complex64 + float64 is complex128)."""
    def gen(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
        rlo, rhi = (low if rlow is None else rlow), (high if rhigh is None else rhigh)
        for sa, sb in (((3, 4), (3, 4)), ((3, 1), (4,)), ((), (5,))):
            yield SampleInput((cmake(sa, dtype, rng, low, high), cmake(sb, dtype, rng, rlo, rhi)))
        yield SampleInput((cmake((3, 4), dtype, rng, low, high), make((4,), F64, rng, rlo, rhi)),
                          desc=f"{dtype.name} with float64")
        yield SampleInput((make((2, 3), np.float32, rng, low, high), cmake((2, 3), dtype, rng, rlo, rhi)),
                          desc=f"float32 with {dtype.name}")
    return gen


_C_TRANSCENDENTAL = Tol((2e-5, 1e-6), (1e-12, 1e-13), ulps=8)
_C_REDUCTION = Tol((2e-5, 2e-5), (1e-12, 1e-12), ulps=8)

op("complex.add", lambda x, y: x + y, complex_binary(), dtypes=COMPLEX, tol=IEEE)
op("complex.sub", lambda x, y: x - y, complex_binary(), dtypes=COMPLEX, tol=IEEE)
op("complex.mul", lambda x, y: x * y, complex_binary(), dtypes=COMPLEX, tol=REDUCTION)
op("complex.truediv", lambda x, y: x / y, complex_binary(rlow=0.5, rhigh=2.0), dtypes=COMPLEX,
   tol=_C_REDUCTION)
op("complex.pow", lambda x, y: x ** y, complex_binary(0.2, 2.0, -1.5, 1.5), dtypes=COMPLEX,
   tol=_C_TRANSCENDENTAL)
op("complex.pow.integer", lambda x: (x ** 2, x ** 1, np.square(x), np.reciprocal(x), x ** -1, x ** 5,
                                     x ** -3, x ** 0, np.power(x, 3.0)),
   complex_unary(0.5, 2.0), dtypes=COMPLEX, tol=_C_REDUCTION)
op("complex.round", lambda x: (np.round(x), np.round(x * 10, 1), np.around(x, -1)),
   complex_unary(-30.0, 30.0), dtypes=COMPLEX, tol=IEEE, differentiable=False)
op("complex.norm", lambda x: (np.linalg.norm(x), np.linalg.norm(x, 1), np.linalg.norm(x, np.inf)),
   complex_unary(shapes=((7,), (4,))), dtypes=COMPLEX, tol=_C_REDUCTION)
op("complex.neg", lambda x: (-x, +x), complex_unary(), dtypes=COMPLEX, tol=IEEE)
op("complex.literals", lambda x: x * 1j + (2 - 0.5j) - complex(1.0, 3.0) / 2, complex_unary(),
   dtypes=COMPLEX, tol=REDUCTION)
op("complex.from_parts", lambda x, y: x + 1j * y, lambda dt, rng: [
   SampleInput((make((5,), _real_of(dt), rng), make((5,), _real_of(dt), rng))),
   SampleInput((make((2, 3), _real_of(dt), rng), make((3,), _real_of(dt), rng)))],
   dtypes=COMPLEX, tol=IEEE)
op("complex.exp", lambda x: np.exp(x), complex_unary(), dtypes=COMPLEX, tol=_C_TRANSCENDENTAL)
op("complex.log", lambda x: np.log(x), complex_unary(), dtypes=COMPLEX, tol=_C_TRANSCENDENTAL)
op("complex.sqrt", lambda x: np.sqrt(x), complex_unary(), dtypes=COMPLEX, tol=_C_TRANSCENDENTAL)
for _name in ("exp2", "expm1", "log2", "log10", "log1p", "sin", "cos", "tan", "sinh", "cosh", "tanh",
              "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh"):
    op(f"complex.{_name}", getattr(np, _name), complex_unary(-1.5, 1.5), dtypes=COMPLEX, tol=_C_TRANSCENDENTAL)
op("complex.sign", lambda x: np.sign(x), complex_unary(), dtypes=COMPLEX, tol=_C_TRANSCENDENTAL)
op("complex.maximum", lambda x, y: (np.maximum(x, y), np.minimum(x, y), np.fmax(x, y), np.fmin(x, y)),
   complex_binary(), dtypes=COMPLEX, tol=IEEE, differentiable=False)
op("complex.abs", lambda x: (np.abs(x), abs(x)), complex_unary(), dtypes=COMPLEX, tol=TRANSCENDENTAL)
op("complex.parts", lambda x: (np.real(x), np.imag(x), x.real, x.imag), complex_unary(), dtypes=COMPLEX,
   tol=IEEE)
op("complex.conj", lambda x: (np.conj(x), np.conjugate(x), x.conj()), complex_unary(), dtypes=COMPLEX,
   tol=IEEE)
op("complex.angle", lambda x: (np.angle(x), np.angle(x, deg=True)), complex_unary(), dtypes=COMPLEX,
   tol=_C_TRANSCENDENTAL)


def _complex_edges(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    parts = np.array([0.0, -0.0, 1.5, -2.0, INF, -INF, NAN])
    z = np.empty((parts.size, parts.size), dtype)
    z.real, z.imag = parts[:, None], parts[None, :]
    yield SampleInput((z,), desc="edges x edges")


op("complex.predicates", lambda x: (np.isfinite(x), np.isnan(x), np.isinf(x), np.iscomplex(x),
                                    np.isreal(x), x == x, x != x),
   lambda dt, rng: [*complex_unary()(dt, rng), *_complex_edges(dt, rng)], dtypes=COMPLEX,
   differentiable=False)
op("complex.compare", lambda x, y: (x == y, x != y, x < y, x <= y, x > y, x >= y),
   lambda dt, rng: [SampleInput((np.array([1 + 2j, 1 + 2j, 1 + 3j, 2 + 0j, 0j], dt),
                                 np.array([1 + 2j, 1 + 1j, 1 + 2j, 1 + 5j, -0j], dt)), desc="ties"),
                    *complex_binary()(dt, rng)],
   dtypes=COMPLEX, differentiable=False)
op("complex.real_if_close", lambda x: np.real_if_close(x), complex_unary(), dtypes=COMPLEX, tol=IEEE,
   ref=lambda x: np.asarray(np.real_if_close(x), x.dtype),
   notes="static result dtype: a complex array stays complex (NumPy decides on the values)")
op("complex.where", lambda c, x, y: np.where(c, x, y), lambda dt, rng: [
   SampleInput((make((3, 4), BOOL, rng), cmake((3, 4), dt, rng), cmake((4,), dt, rng))),
   SampleInput((make((5,), BOOL, rng), cmake((5,), dt, rng), make((5,), F64, rng)), desc="with float64")],
   dtypes=COMPLEX, tol=IEEE)
op("complex.structural", lambda x, y: (np.concatenate([x, y], 0), np.stack([x, y], 1), x.reshape(-1),
                                       x.T, x[1:, ::2], x[::-1, 0], np.transpose(y)),
   lambda dt, rng: [SampleInput((cmake((2, 3), dt, rng), cmake((2, 3), dt, rng))),
                    SampleInput((cmake((4, 5), dt, rng), cmake((4, 5), dt, rng)))],
   dtypes=COMPLEX, tol=IEEE)
op("complex.take", lambda x, i: (x[i], np.take(x, i), x[:, None] * 2), lambda dt, rng: [
   SampleInput((cmake((6,), dt, rng), np.array([0, 5, 2, 2], np.int64)))], dtypes=COMPLEX, tol=IEEE)
op("complex.reductions", lambda x: (np.sum(x), x.sum(axis=0), np.mean(x), x.mean(axis=1)),
   complex_unary(shapes=((3, 4), (2, 33), (1, 5))), dtypes=COMPLEX, tol=_C_REDUCTION)
op("complex.var", lambda x: (np.var(x), np.std(x, axis=0), x.var(axis=1, ddof=1)),
   complex_unary(shapes=((3, 4), (2, 7))), dtypes=COMPLEX, tol=_C_REDUCTION)
op("complex.prod", lambda x: (np.prod(x), np.prod(x, axis=1), x.prod(axis=0)),
   complex_unary(0.5, 1.2, shapes=((3, 5), (2, 7), (2, 0))), dtypes=COMPLEX, tol=_C_REDUCTION)
op("complex.cumsum", lambda x: (np.cumsum(x), np.cumsum(x, axis=0)), complex_unary(shapes=((3, 4), (5, 2))),
   dtypes=COMPLEX, tol=_C_REDUCTION)
op("complex.cumprod", lambda x: (np.cumprod(x), np.cumprod(x, axis=1)),
   complex_unary(0.5, 1.2, shapes=((3, 9), (2, 5), (1, 1))), dtypes=COMPLEX, tol=_C_REDUCTION)


def _complex_pairs(shapes: list[tuple[tuple[int, ...], tuple[int, ...]]]) -> SampleFn:
    def gen(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
        for sa, sb in shapes:
            yield SampleInput((cmake(sa, dtype, rng), cmake(sb, dtype, rng)))
        sa, sb = shapes[0]
        yield SampleInput((cmake(sa, dtype, rng), make(sb, F64, rng)), desc=f"{dtype.name} with float64")
        yield SampleInput((make(sa, np.float32, rng), cmake(sb, dtype, rng)), desc=f"float32 with {dtype.name}")
    return gen


op("complex.matmul", lambda a, b: a @ b, _complex_pairs([((2, 3), (3, 4)), ((5, 2, 3), (3, 4)), ((3,), (3,))]),
   dtypes=COMPLEX, tol=_C_REDUCTION)
op("complex.contractions", lambda a, b: (np.dot(a, b.T), np.inner(a, b), np.outer(a, b), np.vdot(a, b[:2]),
                                         np.einsum("ij,kj->ik", a, b)),
   _complex_pairs([((2, 3), (4, 3))]), dtypes=COMPLEX, tol=_C_REDUCTION)
op("complex.astype", lambda x: (x.astype(np.complex64), x.astype(np.complex128), x.astype(np.float64),
                                x.astype(np.float32), x.astype(np.int64), x.astype(bool),
                                np.complex128(x)),
   lambda dt, rng: [*complex_unary(-20.0, 20.0)(dt, rng), *_complex_edges(dt, rng)][:3], dtypes=COMPLEX,
   tol=IEEE, notes="complex to real keeps the real part (NumPy's ComplexWarning case)")
op("complex.from_real", lambda x: (x.astype(np.complex64), x.astype(complex), np.complex128(x)),
   lambda dt, rng: [SampleInput((make((5,), _real_of(dt), rng),)),
                    SampleInput((make((3,), I32, rng),), desc="int32")],
   dtypes=COMPLEX, tol=IEEE)
op("complex.creation", lambda x: (np.zeros(3, dtype=complex), np.ones_like(x), np.full((2,), 1 + 2j),
                                  np.zeros_like(x, dtype=np.complex64), np.full_like(x, 2 - 1j)),
   complex_unary(shapes=((3,), (2, 2))), dtypes=COMPLEX, tol=IEEE, differentiable=False)


op("complex.builtin", lambda x: complex(x.real.ravel()[0], x.imag.ravel()[-1]) * x,
   complex_unary(shapes=((7,), (3, 4))), dtypes=COMPLEX, tol=REDUCTION, supports_vmap=False,
   differentiable=False, notes="complex(a, b) of array elements is a conversion to a Python "
   "scalar, as float(a) is: refused under vmap and AD")
prims("complex.parts", lambda dt, rng: [PrimSample("real", (cmake((3, 4), dt, rng),)),
                                        PrimSample("imag", (cmake((3, 4), dt, rng),))], dtypes=COMPLEX)
prims("complex.conj", lambda dt, rng: [PrimSample("conj", (cmake((3, 4), dt, rng),))], dtypes=COMPLEX)
prims("complex.builtin", lambda dt, rng: [
    PrimSample("complex", (make((3, 4), _real_of(dt), rng), make((3, 4), _real_of(dt), rng)))],
    dtypes=COMPLEX)


# ---- np.linalg: LU factorization, solves, inverses and determinants (compiler/primitives/lu.py)

def _well_conditioned(shape: tuple[int, ...], dtype: Any, rng: np.random.Generator) -> np.ndarray:
    """A random stack of matrices plus n times the identity (condition number about 3)."""
    n = shape[-1]
    a = cmake(shape, dtype, rng, -1.0, 1.0) if np.dtype(dtype).kind == "c" else make(shape, dtype, rng, -1.0, 1.0)
    return (a + n * np.eye(n)).astype(dtype)


def _rand(shape: tuple[int, ...], dtype: Any, rng: np.random.Generator) -> np.ndarray:
    return cmake(shape, dtype, rng) if np.dtype(dtype).kind == "c" else make(shape, dtype, rng, -2.0, 2.0)


_LU_TOL = Tol((1e-4, 1e-4), (1e-11, 1e-11))


def _solve_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for sa, sb in [((3, 3), (3,)), ((2, 3, 3), (2, 3, 2)), ((2, 2), (3, 2, 1)), ((2, 1, 2, 2), (3, 2, 2)),
                   ((9, 9), (9,)), ((1, 1), (1, 2))]:
        yield SampleInput((_well_conditioned(sa, dtype, rng), _rand(sb, dtype, rng)))


def _square_samples(shapes: list[tuple[int, ...]]) -> SampleFn:
    def gen(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
        for s in shapes:
            yield SampleInput((_well_conditioned(s, dtype, rng),))
    return gen


def _lu_errors() -> Iterator[ErrorInput]:
    yield error((np.ones((2, 3)), np.ones(2)), errors.ShapeMismatchError, "must be square")
    yield error((np.eye(3), np.ones((2, 3))), errors.ShapeMismatchError, "does not match")
    yield error((np.eye(3), np.ones(4)), errors.ShapeMismatchError, "does not match")
    yield error((np.eye(2, dtype=np.float16), np.ones(2, np.float16)), errors.UnsupportedError,
                "float16 is unsupported")


op("linalg.solve", lambda a, b: np.linalg.solve(a, b), _solve_samples, tol=_LU_TOL,
   error_inputs=_lu_errors, more_dtypes=())
op("linalg.inv", lambda a: np.linalg.inv(a), _square_samples([(3, 3), (2, 2, 2), (1, 1), (9, 9)]),
   tol=_LU_TOL, more_dtypes=())
op("linalg.det", lambda a: np.linalg.det(a), _square_samples([(3, 3), (2, 3, 3), (1, 1), (9, 9)]),
   tol=_LU_TOL, more_dtypes=())
op("linalg.slogdet", lambda a: tuple(np.linalg.slogdet(a)),
   lambda dt, rng: [SampleInput((_well_conditioned((2, 3, 3), dt, rng) * np.array([1, -1, 1], dt),)),
                    SampleInput((_well_conditioned((9, 9), dt, rng),))],
   tol=_LU_TOL, more_dtypes=())
op("linalg.matrix_power", lambda a, n: np.linalg.matrix_power(a, n),
   lambda dt, rng: [SampleInput((_well_conditioned((3, 3), dt, rng) / 3, k)) for k in (0, 1, 3, 5, -2)]
   + [SampleInput((_well_conditioned((2, 2, 2), dt, rng) / 2, 6))],
   tol=_LU_TOL, more_dtypes=())
op("linalg.multi_dot", lambda a, b, c, d: np.linalg.multi_dot([a, b, c, d]),
   lambda dt, rng: [SampleInput(tuple(make(s, dt, rng) for s in shapes)) for shapes in
                    [((5,), (5, 2), (2, 6), (6, 3)), ((2, 7), (7, 3), (3, 4), (4,)),
                     ((3, 2), (2, 8), (8, 1), (1, 4))]],
   dtypes=FLOATS, tol=REDUCTION, more_dtypes=())
op("linalg.multi_dot.three", lambda a, b, c: np.linalg.multi_dot([a, b, c]),
   lambda dt, rng: [SampleInput(tuple(make(s, dt, rng) for s in shapes)) for shapes in
                    [((6, 2), (2, 5), (5, 1)), ((1, 5), (5, 2), (2, 6))]],
   dtypes=FLOATS, tol=REDUCTION, more_dtypes=())
op("linalg.tensorinv", lambda a: np.linalg.tensorinv(a, ind=1),
   lambda dt, rng: [SampleInput((_well_conditioned((4, 4), dt, rng).reshape(4, 2, 2),))],
   tol=_LU_TOL, more_dtypes=())
op("linalg.tensorsolve", lambda a, b: np.linalg.tensorsolve(a, b),
   lambda dt, rng: [SampleInput((_well_conditioned((4, 4), dt, rng).reshape(2, 2, 2, 2), make((2, 2), dt, rng)))],
   tol=_LU_TOL, more_dtypes=())
op("complex.linalg.solve", lambda a, b: np.linalg.solve(a, b),
   lambda dt, rng: [SampleInput((_well_conditioned((2, 3, 3), dt, rng), _rand((3,), dt, rng)))],
   dtypes=COMPLEX, tol=_LU_TOL, more_dtypes=(),
   notes="inv, det and the loop code (n > 8) of complex values: tests/linalg/test_lu.py and the lu samples")
op("complex.linalg.slogdet", lambda a: tuple(np.linalg.slogdet(a)),
   lambda dt, rng: [SampleInput((_well_conditioned((2, 2, 2), dt, rng),))],
   dtypes=COMPLEX, tol=_LU_TOL, more_dtypes=())


def _lu_prims(dtype: np.dtype, rng: np.random.Generator) -> Iterator[PrimSample]:
    """lu: det and slogdet factor with it (solve and inv with lu_solve)."""
    yield PrimSample("lu", (_rand((3, 3), dtype, rng),))
    yield PrimSample("lu", (_rand((2, 4, 4), dtype, rng),))
    yield PrimSample("lu", (_rand((10, 10), dtype, rng),), desc="loop")


def _solve_prims(dtype: np.dtype, rng: np.random.Generator) -> Iterator[PrimSample]:
    """lu_solve, and triangular_solve, which lu_solve's generated code (and eig's, and the
    rules of lu and cholesky) is made of."""
    for lower, ta, unit in [(True, "N", False), (False, "N", False), (True, "T", True), (False, "C", False),
                            (True, "C", True), (False, "T", False)]:
        for n, k in [(3, 2), (9, 1)]:
            yield PrimSample("triangular_solve", (_well_conditioned((2, n, n), dtype, rng), _rand((2, n, k), dtype, rng)),
                             {"lower": lower, "transpose_a": ta, "unit_diagonal": unit})
    yield PrimSample("lu_solve", (_well_conditioned((2, 3, 3), dtype, rng), _rand((2, 3, 2), dtype, rng)),
                     desc="unrolled")
    yield PrimSample("lu_solve", (_well_conditioned((9, 9), dtype, rng), _rand((9, 3), dtype, rng)), desc="loop")
    singular = _well_conditioned((3, 4, 4), dtype, rng)
    singular[1, :, 2] = 0                        # an exact zero pivot: x NaN, ok false there
    yield PrimSample("lu_solve", (singular, _rand((3, 4, 1), dtype, rng)), desc="singular", grad=False)


prims("linalg.det", _lu_prims)
prims("complex.linalg.slogdet", _lu_prims, dtypes=COMPLEX)
prims("linalg.solve", _solve_prims)
prims("complex.linalg.solve", _solve_prims, dtypes=COMPLEX)


# ---- factorizations and the small np.linalg functions (docs/linalg.md "Cholesky and QR") ---------
#
# Small matrices (the unrolled code); the loops for larger and symbolic sizes, LinAlgError and
# NaN inputs are tests/linalg/test_factor.py. Samples are well conditioned: SPD matrices
# X X^H + n I for cholesky, I + X / 4 (full rank, a dominant diagonal) for qr.

LINALG = Tol((1e-4, 1e-4), (1e-10, 1e-10), ulps=4)


def _spd(shape: tuple[int, ...], dtype: Any, rng: np.random.Generator) -> np.ndarray:
    *batch, n = shape[:-1]
    x = cmake(shape, dtype, rng) if np.dtype(dtype).kind == "c" else make(shape, dtype, rng, -1, 1)
    return (x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)).astype(dtype)


def _well(shape: tuple[int, ...], dtype: Any, rng: np.random.Generator) -> np.ndarray:
    m, n = shape[-2:]
    x = cmake(shape, dtype, rng, -1, 1) if np.dtype(dtype).kind == "c" else make(shape, dtype, rng, -1, 1)
    return (np.eye(m, n) + x / 4).astype(dtype)


def _chol_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for shape in [(1, 1), (3, 3), (2, 4, 4)]:
        x = cmake(shape, dtype, rng, -1, 1) if dtype.kind == "c" else make(shape, dtype, rng, -1, 1)
        yield SampleInput((x,), desc=f"{list(shape)}")


def _spd_of(x: Any) -> Any:
    """x x^H + n I (positive definite for any x; the vmap tests permute the entries of x) plus
    triu(x, 1), which cholesky does not read (NumPy's lower factor reads the lower triangle)."""
    n = x.shape[-1]
    return x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n, dtype=x.dtype) + np.triu(x, 1)


def _qr_samples(shapes: list[tuple[int, ...]]) -> SampleFn:
    def gen(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
        for shape in shapes:
            yield SampleInput((_well(shape, dtype, rng),), desc=f"{list(shape)}")
    return gen


_QR_SHAPES = [(3, 3), (4, 2), (2, 4), (2, 3, 3)]

op("linalg.cholesky", lambda x: np.linalg.cholesky(_spd_of(x)), _chol_samples, tol=LINALG,
   prim_samples=lambda dt, rng: [PrimSample("cholesky", (_spd((2, 3, 3), dt, rng),))],
   more_dtypes=(), error_inputs=lambda: [
       ErrorInput(SampleInput((x,)), exc, match, fn=lambda a: np.linalg.cholesky(a))
       for x, exc, match in [(np.ones(3), errors.ShapeMismatchError, "at least two-dimensional"),
                             (np.ones((2, 3)), errors.ShapeMismatchError, "must be square"),
                             (np.ones((2, 2), np.float16), errors.UnsupportedError, "float16")]])
op("linalg.cholesky.upper", lambda x: np.linalg.cholesky(np.swapaxes(_spd_of(x), -1, -2), upper=True),
   _chol_samples, tol=LINALG, more_dtypes=())
op("linalg.qr", lambda a: tuple(np.linalg.qr(a)), _qr_samples(_QR_SHAPES), tol=LINALG,
   prim_samples=lambda dt, rng: [PrimSample("qr", (_well((2, 4, 3), dt, rng),), {"full": False}),
                                 PrimSample("qr", (_well((3, 4), dt, rng),), {"full": True})],
   more_dtypes=(), notes="R's diagonal has LAPACK's signs, so Q and R match NumPy's",
   error_inputs=lambda: [
    ErrorInput(SampleInput((_f((3, 3)),)), errors.UnsupportedError, "raw",
               fn=lambda a: np.linalg.qr(a, mode="raw")),
    ErrorInput(SampleInput((_f((3, 3)),)), errors.UnsupportedError, "Unrecognized mode",
               fn=lambda a: np.linalg.qr(a, mode="bogus")),
    ErrorInput(SampleInput((_f((3,)),)), errors.ShapeMismatchError, "at least two-dimensional")])
op("linalg.qr.r", lambda a: np.linalg.qr(a, mode="r"), _qr_samples(_QR_SHAPES + [(5, 2)]), tol=LINALG,
   more_dtypes=())
op("linalg.qr.complete", lambda a: tuple(np.linalg.qr(a, mode="complete")),
   _qr_samples([(3, 3), (2, 4), (2, 2, 3)]), tol=LINALG, more_dtypes=(),
   notes="with more rows than columns Q's last columns have no derivative: "
         "tests/linalg/test_factor.py")
op("complex.linalg.cholesky", lambda x: np.linalg.cholesky(_spd_of(x)),
   lambda dt, rng: [SampleInput((cmake(s, dt, rng, -1, 1),)) for s in [(3, 3), (2, 2, 2)]],
   dtypes=COMPLEX, tol=LINALG)
op("complex.linalg.qr", lambda a: tuple(np.linalg.qr(a)),
   lambda dt, rng: [SampleInput((_well(s, dt, rng),)) for s in [(3, 3), (4, 2), (2, 3)]],
   dtypes=COMPLEX, tol=LINALG)


def _cross_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    yield SampleInput((make((3,), dtype, rng), make((3,), dtype, rng)), {})
    yield SampleInput((make((4, 3), dtype, rng), make((3,), dtype, rng)), {}, desc="broadcast")
    yield SampleInput((make((3, 2), dtype, rng), make((2, 3), dtype, rng)), {"axisa": 0, "axisb": 1, "axisc": 0},
                      desc="axisa=0, axisc=0")
    yield SampleInput((make((2, 3, 4), dtype, rng), make((1, 3, 4), dtype, rng)), {"axis": 1}, desc="axis=1")


op("cross", lambda a, b, **kw: np.cross(a, b, **kw), _cross_samples, dtypes=FLOATS + INTS, tol=REDUCTION,
   error_inputs=lambda: [error((_f((4,)), _f((3,))), errors.ShapeMismatchError, "dimension must be 2 or 3")])
op("linalg.cross", lambda a, b: np.linalg.cross(a, b),
   lambda dt, rng: [SampleInput((make((2, 3), dt, rng), make((3,), dt, rng)))], tol=REDUCTION,
   error_inputs=lambda: [error((_f((2,)), _f((2,))), errors.ShapeMismatchError, "3-dimensional vectors")])
op("kron", lambda a, b: np.kron(a, b), lambda dt, rng: [
    SampleInput((make((2, 3), dt, rng), make((3, 2), dt, rng))),
    SampleInput((make((3,), dt, rng), make((2,), dt, rng))),
    SampleInput((make((2,), dt, rng), make((2, 2, 3), dt, rng)), desc="mixed ranks"),
    SampleInput((make((), dt, rng), make((2, 2), dt, rng)), desc="0-d")], dtypes=NUMERIC)
op("linalg.trace", lambda x, **kw: np.linalg.trace(x, **kw), lambda dt, rng: [
    SampleInput((make((3, 3), dt, rng),)), SampleInput((make((2, 3, 4), dt, rng),), {"offset": 1}),
    SampleInput((make((2, 4, 3), dt, rng),), {"offset": -1})], dtypes=NUMERIC, tol=REDUCTION)
op("linalg.diagonal", lambda x, **kw: np.linalg.diagonal(x, **kw), lambda dt, rng: [
    SampleInput((make((3, 3), dt, rng),)), SampleInput((make((2, 3, 4), dt, rng),), {"offset": 1})],
   dtypes=NUMERIC)
op("linalg.outer", lambda a, b: np.linalg.outer(a, b),
   lambda dt, rng: [SampleInput((make((3,), dt, rng), make((4,), dt, rng)))], dtypes=NUMERIC,
   error_inputs=lambda: [error((_f((2, 2)), _f((2,))), errors.ShapeMismatchError, "one-dimensional")])
op("linalg.vecdot", lambda a, b, **kw: np.linalg.vecdot(a, b, **kw), lambda dt, rng: [
    SampleInput((make((3,), dt, rng), make((3,), dt, rng))),
    SampleInput((make((2, 4), dt, rng), make((4,), dt, rng)), desc="broadcast"),
    SampleInput((make((3, 2), dt, rng), make((3, 2), dt, rng)), {"axis": 0})], dtypes=NUMERIC, tol=REDUCTION)
op("vecdot", lambda a, b: np.vecdot(a, b), lambda dt, rng: [SampleInput((make((2, 3), dt, rng), make((3,), dt, rng)))],
   dtypes=NUMERIC, tol=REDUCTION)
op("linalg.matrix_transpose", lambda x: np.linalg.matrix_transpose(x),
   lambda dt, rng: [SampleInput((make((2, 3, 4), dt, rng),))], dtypes=STRUCTURAL)
op("complex.linalg.small", lambda a, b: (np.linalg.vecdot(a, b), np.cross(a, b), np.kron(a, b),
                                        np.linalg.outer(a, b)),
   lambda dt, rng: [SampleInput((cmake((3,), dt, rng), cmake((3,), dt, rng)))], dtypes=COMPLEX, tol=_C_REDUCTION)


# ---- general eigenproblems (compiler/primitives/eig.py; tests/linalg/test_eig.py) -------------
# The eigenvalues come in an order of their own (docs/linalg.md): the OpInfo compares symmetric
# functions of them, which are independent of the order and smooth where they are distinct.

def _eigvals_sym(a: Any) -> Any:
    w = np.linalg.eigvals(a)
    return np.real(np.sum(w * w, axis=-1)), np.real(np.prod(w, axis=-1)), np.sum(np.abs(w) ** 2, axis=-1)


def _eigvals_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for shape in [(3, 3), (2, 2), (2, 4, 4), (1, 1)]:
        a = rng.standard_normal(shape).astype(dtype)
        yield SampleInput((a,), desc=describe([a]))


def _eig_prims(dtype: np.dtype, rng: np.random.Generator) -> Iterator[PrimSample]:
    # triangular stacks: the eigenvalues are the diagonal in order, as in NumPy's reference
    a = np.triu(rng.standard_normal((2, 3, 3)) + 1j * rng.standard_normal((2, 3, 3))).astype(dtype)
    for vectors in (False, True):
        yield PrimSample("eig", (a,), {"vectors": vectors}, grad=False)


op("linalg.eigvals", _eigvals_sym, _eigvals_samples, tol=Tol((2e-4, 2e-4), (1e-11, 1e-11), ulps=8),
   more_dtypes=(), notes="symmetric functions of the eigenvalues: their order is the QR iteration's")
prims("linalg.eigvals", _eig_prims, dtypes=COMPLEX)


def _geev_prims(dtype: np.dtype, rng: np.random.Generator) -> Iterator[PrimSample]:
    # LAPACK's raw results (real: wr, wi, VR rows; complex: w, VR rows) of triangular stacks,
    # whose eigenvalues are the diagonal in order and whose vectors LAPACK normalizes
    a = np.triu(rng.standard_normal((2, 5, 5)) + 3 * np.eye(5))
    if dtype.kind == "c":
        a = a + 1j * np.triu(rng.standard_normal((2, 5, 5)))
    for vectors in (False, True):
        yield PrimSample("geev", (a.astype(dtype),), {"vectors": vectors}, grad=False)


# geev is made by eig's decomposition only (n > 4 or symbolic), after the transforms: no vmap or
# AD of its own; tests/linalg/test_eig_lapack.py covers both of its code paths through eig
op("linalg.eigvals.geev", _eigvals_sym,
   lambda dt, rng: [SampleInput((rng.standard_normal((5, 5)).astype(dt),), desc="5x5")],
   dtypes=(F64,), tol=Tol((2e-4, 2e-4), (1e-11, 1e-11), ulps=8), supports_vmap=False,
   supports_jvp=False, supports_vjp=False, more_dtypes=(),
   notes="n > 4: LAPACK's geev through eig's decomposition")
prims("linalg.eigvals.geev", _geev_prims, dtypes=(F64, np.dtype(np.complex128)))


# ---- sorting (compiler/frontend/sorting.py, docs/sorting.md) -----------------------------------------
# random floats are distinct, so the derivative (a permutation) is unique; NaN, -0.0, ties and
# stability: tests/sorting/


def _sort_samples(axes: tuple = (-1, 0, None), shapes: tuple = ((7,), (3, 5), (2, 3, 40))) -> SampleFn:
    def gen(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
        for shape in shapes:
            for axis in axes:
                if axis == 0 and len(shape) == 1 and axis != -1:
                    continue
                yield SampleInput((make(shape, dtype, rng, -50, 50),), {"axis": axis},
                                  desc=f"{shape} axis={axis}")
    return gen


def _quantile_samples(qs: tuple) -> SampleFn:
    def gen(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
        for shape, axis in (((9,), None), ((4, 6), 1), ((4, 5), 0), ((2, 3, 4), (0, 2)), ((3, 41), -1)):
            for q in qs:
                yield SampleInput((make(shape, dtype, rng, -50, 50),), {"axis": axis, "q": q},
                                  desc=f"{shape} axis={axis} q={q}")
    return gen


def _nan_rows(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    x = make((4, 7), dtype, rng, -50, 50)
    x[1, 2] = x[2, 0] = x[2, 5] = np.nan
    x[3, :] = np.nan
    yield SampleInput((x,), {"axis": 1}, desc="rows with NaN")
    yield SampleInput((make((3, 6), dtype, rng, -50, 50),), {"axis": 0}, desc="no NaN")


op("sort", lambda x, axis: np.sort(x, axis=axis), _sort_samples(), dtypes=ALL_DTYPES)
op("sort.stable", lambda x, axis: np.sort(x, axis=axis, kind="stable"), _sort_samples(),
   dtypes=NUMERIC, thin=2)
op("argsort", lambda x, axis: np.argsort(x, axis=axis, kind="stable"), _sort_samples(),
   dtypes=ALL_DTYPES, differentiable=False)
op("argsort.method", lambda x, axis: x.argsort(axis=axis, kind="stable"), _sort_samples((-1, 0)),
   dtypes=NUMERIC, differentiable=False, thin=3, alias_of="argsort")
op("partition", lambda x, axis: np.partition(x, 1, axis=axis), _sort_samples((-1, 0)),
   dtypes=NUMERIC, ref=lambda x, axis: np.sort(x, axis=axis), thin=2,
   notes="a full sort is a valid partition")
op("argpartition", lambda x, axis: np.argpartition(x, 1, axis=axis), _sort_samples((-1, 0)),
   dtypes=NUMERIC, differentiable=False, ref=lambda x, axis: np.argsort(x, axis=axis, kind="stable"),
   thin=2, notes="the full stable argsort is a valid argpartition")
op("take_along_axis.argsort", lambda x, axis: np.take_along_axis(x, np.argsort(x, axis=axis), axis=axis),
   _sort_samples((-1, 0)), dtypes=NUMERIC, thin=2)
op("lexsort", lambda a, b: np.lexsort((a, b)), lambda dt, rng: [
    SampleInput((make((9,), dt, rng, 0, 3), make((9,), dt, rng, 0, 2))),
    SampleInput((make((3, 40), dt, rng, 0, 3), make((3, 40), dt, rng, 0, 2)), desc="long rows")],
   dtypes=NUMERIC, differentiable=False)
op("searchsorted", lambda a, v, side: np.searchsorted(np.sort(a), v, side=side), lambda dt, rng: [
    SampleInput((make((9,), dt, rng, -5, 5), make((3, 4), dt, rng, -6, 6), side)) for side in
    ("left", "right")] + [SampleInput((make((40,), dt, rng, -5, 5), make((7,), dt, rng, -6, 6), "left"),
                                      desc="long")],
   dtypes=NUMERIC, differentiable=False)
op("searchsorted.sorter", lambda a, v: np.searchsorted(a, v, sorter=np.argsort(a)), lambda dt, rng: [
    SampleInput((make((9,), dt, rng, -5, 5), make((4,), dt, rng, -6, 6)))],
   dtypes=NUMERIC, differentiable=False)
# np.interp: the `interp` primitive (windows of queries; AD through the positions it finds)
op("interp", lambda x, xp, fp: np.interp(x, np.sort(xp), fp), lambda dt, rng: [
    SampleInput((make((3, 4), dt, rng, -6, 6), make((9,), dt, rng, -5, 5), make((9,), dt, rng)))],
   dtypes=FLOATS, tol=Tol((1e-5, 1e-6), (1e-12, 1e-13)), more_dtypes=(),
   notes="float64 results, as NumPy's; queries away from the knots (derivatives exist)")


def _prim_interp(dtype: np.dtype, rng: np.random.Generator) -> Iterator[PrimSample]:
    # a few queries (one short window); tests/functions/test_search.py runs the full windows
    xp, fp = np.sort(make((6,), dtype, rng, -5, 5)), make((6,), dtype, rng)
    yield PrimSample("interp", (make((5,), dtype, rng, -6, 6), xp, fp, np.array(-7.0, dtype),
                                np.array(9.0, dtype)))


prims("interp", _prim_interp, dtypes=(F64,))
op("median", lambda x, axis: np.median(x, axis=axis), _sort_samples((-1, 0, None)),
   dtypes=NUMERIC, tol=REDUCTION)
op("median.keepdims", lambda x: np.median(x, axis=(0, 2), keepdims=True), lambda dt, rng: [
    SampleInput((make((2, 3, 4), dt, rng, -50, 50),))], dtypes=NUMERIC, tol=REDUCTION)
op("quantile", lambda x, axis, q: np.quantile(x, q, axis=axis), _quantile_samples((0.3, 0.0, 1.0)),
   dtypes=NUMERIC, tol=REDUCTION)
op("quantile.array_q", lambda x, axis, q: np.quantile(x, np.array(q), axis=axis),
   _quantile_samples(((0.1, 0.5, 0.95),)), dtypes=FLOATS, tol=REDUCTION, thin=2)
op("percentile", lambda x, axis, q: np.percentile(x, q, axis=axis), _quantile_samples((25.0, (10, 90))),
   dtypes=NUMERIC, tol=REDUCTION)
for _m in ("lower", "higher", "nearest", "midpoint"):
    op(f"quantile.{_m}", lambda x, axis, q, _m=_m: np.quantile(x, q, axis=axis, method=_m),
       _quantile_samples((0.3, (0.25, 0.5, 0.75))), dtypes=NUMERIC, tol=REDUCTION, thin=2,
       differentiable=_m == "midpoint")
op("nanmedian", lambda x, axis: np.nanmedian(x, axis=axis), _nan_rows, dtypes=FLOATS, tol=REDUCTION,
   differentiable=False, more_dtypes=())
op("nanquantile", lambda x, axis: np.nanquantile(x, [0.2, 0.5], axis=axis), _nan_rows, dtypes=FLOATS,
   tol=REDUCTION, differentiable=False, more_dtypes=())
op("nanpercentile", lambda x, axis: np.nanpercentile(x, 40, axis=axis), _nan_rows, dtypes=FLOATS,
   tol=REDUCTION, differentiable=False, more_dtypes=())
op("unique.size", lambda x: np.unique(x, size=6, fill_value=-1, return_index=True, return_inverse=True,
                                      return_counts=True),
   lambda dt, rng: [SampleInput((make((12,), dt, rng, 0, 4),)), SampleInput((make((3, 4), dt, rng, 0, 9),))],
   dtypes=NUMERIC, differentiable=False, supports_vmap=True,
   ref=lambda x: _unique_padded(x, 6, -1))
op("complex.sort", lambda x: (np.sort(x), np.argsort(x, kind="stable")), complex_unary(shapes=((7,), (3, 40))),
   dtypes=COMPLEX, differentiable=False)


def _unique_padded(x: np.ndarray, size: int, fill: Any) -> tuple:
    """np.unique padded as aotx's size= (JAX's convention): fill_value, index 0, count 0."""
    v, i, inv, c = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    pad = max(size - len(v), 0)
    return (np.concatenate([v, np.full(pad, fill, v.dtype)])[:size],
            np.concatenate([i, np.zeros(pad, i.dtype)])[:size], inv.reshape(x.shape),
            np.concatenate([c, np.zeros(pad, c.dtype)])[:size])


def _prim_sort(dtype: np.dtype, rng: np.random.Generator) -> Iterator[PrimSample]:
    for shape in ((6,), (3, 8), (2, 45)):
        x = make(shape, dtype, rng, -50, 50)
        pos = np.broadcast_to(np.arange(shape[-1]), shape).copy()
        yield PrimSample("sort", (x,), {"num_keys": 1, "stable": True}, desc=f"{shape}")
        yield PrimSample("sort", (x, pos), {"num_keys": 1, "stable": True}, desc=f"{shape} argsort")
        yield PrimSample("sort", (make(shape, dtype, rng, 0, 2), x), {"num_keys": 2, "stable": False},
                         desc=f"{shape} two keys")


prims("sort", _prim_sort, dtypes=(F64, F32, I32))


# ---- symmetric eigenproblems and the SVD (docs/linalg.md) --------------------------------------------
# Only outputs that are unique are compared here (eigenvalues, singular values, pinv, ...); the
# eigen- and singular vectors are tested by their invariants in tests/linalg/test_spectral.py.
# Random matrices have distinct eigenvalues and singular values, where the derivatives exist.
_SPECTRAL_TOL = Tol((2e-5, 2e-5), (1e-12, 1e-12), ulps=4)


def _spectral_square(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for shape in [(3, 3), (2, 5, 5), (1, 1)]:
        yield SampleInput((make(shape, dtype, rng, -2, 2),))


def _spectral_rect(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for shape in [(3, 3), (4, 2), (2, 3, 5)]:
        yield SampleInput((make(shape, dtype, rng, -2, 2),))


def _full_rank_lstsq(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for m, n, k in [(4, 2, None), (3, 3, 2), (2, 4, None)]:
        a = make((m, n), dtype, rng, -2, 2) + np.eye(m, n, dtype=dtype) * 3
        yield SampleInput((a, make((m,) if k is None else (m, k), dtype, rng, -2, 2)))


def _cond_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    for p in [None, 1]:                     # nuc: the norm samples (its second derivative is slow)
        a = make((2, 3, 3), dtype, rng, -1, 1) + np.eye(3, dtype=dtype) * 2
        yield SampleInput((a, p), desc=f"{describe([a])},p={p}")


op("linalg.eigvalsh", lambda a: (np.linalg.eigvalsh(a), np.linalg.eigvalsh(a, UPLO="U")), _spectral_square,
   tol=_SPECTRAL_TOL, more_dtypes=())
op("linalg.svdvals", lambda a: (np.linalg.svdvals(a), np.linalg.svd(a, compute_uv=False)), _spectral_rect,
   tol=_SPECTRAL_TOL, more_dtypes=())
op("linalg.pinv", lambda a: np.linalg.pinv(a), _spectral_rect, tol=_SPECTRAL_TOL, more_dtypes=(), thin=2)
op("linalg.pinv.hermitian",
   lambda a: np.linalg.pinv(a + np.swapaxes(a, -1, -2) + 4 * np.eye(a.shape[-1]), hermitian=True),
   _spectral_square, tol=_SPECTRAL_TOL, more_dtypes=())
op("linalg.lstsq", lambda a, y: np.linalg.lstsq(a, y)[0], _full_rank_lstsq, tol=_SPECTRAL_TOL,
   more_dtypes=(), notes="the solution of a full-rank system; residuals, rank and s: tests/linalg/test_spectral.py")
op("linalg.cond", lambda a, p: np.linalg.cond(a, _norm_ord(p)), _cond_samples, tol=_SPECTRAL_TOL, more_dtypes=())
op("linalg.matrix_rank", lambda a: (np.linalg.matrix_rank(a), np.linalg.matrix_rank(a, tol=0.5),
                                    np.linalg.matrix_rank(a, hermitian=True)),
   lambda dt, rng: [SampleInput((np.stack([make((4, 4), dt, rng, -2, 2),
                                           np.outer(make((4,), dt, rng, 1, 2), make((4,), dt, rng, 1, 2))]),))],
   differentiable=False, more_dtypes=())


def _prim_eigh(dtype: np.dtype, rng: np.random.Generator) -> Iterator[PrimSample]:
    for shape in [(3, 3), (2, 6, 6)]:
        yield PrimSample("eigh", (make(shape, dtype, rng, -2, 2),))


def _prim_svd(dtype: np.dtype, rng: np.random.Generator) -> Iterator[PrimSample]:
    for shape, full, uv in [((3, 3), False, True), ((2, 4, 3), False, True), ((3, 5), False, True),
                            ((4, 2), True, False), ((3, 3), True, True)]:
        yield PrimSample("svd", (make(shape, dtype, rng, -2, 2),), {"full_matrices": full, "compute_uv": uv})


prims("linalg.eigvalsh", _prim_eigh)
prims("linalg.svdvals", _prim_svd)
op("complex.eigvalsh", lambda a: np.linalg.eigvalsh(a), complex_unary(shapes=((3, 3), (2, 2, 2))),
   dtypes=COMPLEX, tol=_C_REDUCTION)
op("complex.svdvals", lambda a: np.linalg.svdvals(a), complex_unary(shapes=((3, 2),)), dtypes=COMPLEX,
   tol=_C_REDUCTION)


# ---- special functions (compiler/frontend/special.py, compiler/primitives/special.py;
# docs/special.md): NumPy's bit-level functions, np.sinc and np.i0, and scipy.special's
# transcendental functions (only where SciPy is installed: it is optional) ----------------------

try:
    import scipy.special as _sp
except ImportError:
    _sp = None

#: primitives only scipy.special reaches: their OpInfos exist only where SciPy is installed
SCIPY_ONLY_PRIMITIVES = {"erf", "erfc", "erfcx", "erfinv", "erfcinv", "lgamma", "gamma", "digamma",
                         "polygamma", "i1e"}
_ONE_SHAPE = [(7,)]


def _ints_for(dtype: np.dtype) -> np.dtype:
    return I64 if dtype == F64 else I32


def _prim_bitcast(dtype: np.dtype, rng: np.random.Generator) -> Iterator[PrimSample]:
    x = np.array([0.0, -0.0, 1.5, -3.0, np.inf, np.nan, 1e-310 if dtype == F64 else 1e-40], dtype)
    yield PrimSample("bitcast", (x,), {"dtype": _ints_for(dtype)}, desc="float bits", grad=False)
    yield PrimSample("bitcast", (x.view(_ints_for(dtype)),), {"dtype": dtype}, desc="int bits",
                     grad=False)


op("copysign", lambda x, y: np.copysign(x, y), few_binary_samples(-3, 3), tol=IEEE,
   edge_values=FLOAT_EDGES, edge_arity=2, more_dtypes=())
op("nextafter", lambda x, y: np.nextafter(x, y), few_binary_samples(-3, 3), tol=IEEE,
   edge_values=FLOAT_EDGES, edge_arity=2, differentiable=False, more_dtypes=())
prims("nextafter", _prim_bitcast)
op("ldexp", lambda x, n: np.ldexp(x, n),
   lambda dt, rng: [SampleInput((make((3, 4), dt, rng), np.arange(-6, 6, dtype=np.int32).reshape(3, 4)))],
   tol=IEEE, more_dtypes=())
op("sinc", lambda x: np.sinc(x), unary_samples(-4, 4, shapes=_ONE_SHAPE), dtypes=(F64,),
   tol=TRANSCENDENTAL, more_dtypes=(), supports_grad2=False)
op("i0", lambda x: np.i0(x), unary_samples(-8, 8, shapes=_ONE_SHAPE), dtypes=(F64,),
   tol=TRANSCENDENTAL, more_dtypes=(), supports_vmap=False, supports_jvp=False, supports_vjp=False,
   supports_grad2=False)
prims("i0", lambda dt, rng: [PrimSample("i0e", (make((7,), dt, rng, -30, 30),))])

if _sp is not None:
    #: (name, prim, function, domain, params)
    _SCIPY_UNARY = [
        ("erf", "erf", lambda x: _sp.erf(x), (-3, 3), {}),
        ("erfc", "erfc", lambda x: _sp.erfc(x), (-3, 6), {}),
        ("erfcx", "erfcx", lambda x: _sp.erfcx(x), (-2, 10), {}),
        ("erfinv", "erfinv", lambda x: _sp.erfinv(x), (-0.9, 0.9), {}),
        ("erfcinv", "erfcinv", lambda x: _sp.erfcinv(x), (0.1, 1.9), {}),
        ("gammaln", "lgamma", lambda x: _sp.gammaln(x), (0.2, 8), {}),
        ("gamma", "gamma", lambda x: _sp.gamma(x), (0.2, 6), {}),
        ("digamma", "digamma", lambda x: _sp.digamma(x), (0.2, 8), {}),
        ("polygamma", "polygamma", lambda x: _sp.polygamma(1, x), (0.2, 8), {"n": 1}),
        ("i1e", "i1e", lambda x: _sp.i1e(x), (-30, 30), {}),
    ]
    for _name, _prim, _fn, (_lo, _hi), _params in _SCIPY_UNARY:
        # forward and native only: their vmap rule is the elementwise one, and
        # tests/functions/test_special.py checks their jvp/vjp rules against finite differences
        # on the interpreter (a compile per derivative here would cost a second each)
        op(f"scipy.special.{_name}", _fn, unary_samples(_lo, _hi, shapes=_ONE_SHAPE), dtypes=(F64,),
           tol=TRANSCENDENTAL, more_dtypes=(), supports_vmap=False, supports_jvp=False,
           supports_vjp=False, supports_grad2=False)
        prims(f"scipy.special.{_name}", (lambda p, lo, hi, params: lambda dt, rng: [
            PrimSample(p, (make((7,), dt, rng, lo, hi),), dict(params), grad=False)])(
                _prim, _lo, _hi, _params), dtypes=(F64,))


# ---- np.fft (compiler/frontend/fft.py, compiler/primitives/fft.py; docs/fft.md) -------------------
# Several transforms per sample (one kernel each); lengths, radices and Bluestein: tests/fft/.

def _fft_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    x = cmake((3, 4), dtype, rng) if np.dtype(dtype).kind == "c" else make((3, 4), dtype, rng)
    yield SampleInput((x,), desc=describe([x]))


op("fft.complex", lambda x: (np.fft.fft(x), np.fft.ifft(x, n=5, axis=0, norm="ortho"), np.fft.irfft(x, n=5)),
   _fft_samples, dtypes=COMPLEX, tol=_C_REDUCTION)
op("fft.real", lambda x: (np.fft.rfft(x).real, np.fft.rfft(x).imag, np.fft.irfft(x, axis=0, norm="forward")),
   _fft_samples, tol=Tol((2e-5, 2e-5), (1e-12, 1e-12), ulps=8), more_dtypes=(),
   notes="real outputs: the derivative tests take real functions of real inputs")


def _prim_fft(dtype: np.dtype, rng: np.random.Generator) -> Iterator[PrimSample]:
    for shape, inverse in [((2, 6), False), ((5,), True)]:
        yield PrimSample("fft", (cmake(shape, dtype, rng),), {"inverse": inverse, "keep": shape[-1]})
    real = np.float32 if np.dtype(dtype) == np.complex64 else np.float64
    yield PrimSample("fft", (make((3, 4), real, rng),), {"inverse": False, "keep": 3}, desc="real rows, 3 terms")


prims("fft.complex", _prim_fft, dtypes=COMPLEX)


# fft_pass and fft_unpack are made by fft's decomposition only (a window of at least 8 rows
# of a length with factors up to 13, and the four steps' slabs), after the transforms: no
# vmap or AD of their own; the surface sample goes through them, tests/fft/ covers the rest
def _fft_rows_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    yield SampleInput((cmake((9, 24), dtype, rng),), desc="9 rows of 24")


def _prim_fft_passes(dtype: np.dtype, rng: np.random.Generator) -> Iterator[PrimSample]:
    for radix, n, sign in [(8, 16, -1), (4, 4, 1), (3, 6, -1), (2, 2, 1)]:
        m = n // radix
        args = [make((2, n, 3), dtype, rng), make((2, n, 3), dtype, rng)]
        if m > 1:
            ang = sign * 2 * np.pi * np.outer(np.arange(radix), np.arange(m)) / n
            args += [np.cos(ang).astype(dtype), np.sin(ang).astype(dtype)]
        yield PrimSample("fft_pass", tuple(args), {"radix": radix, "sign": sign}, desc=f"radix {radix} of {n}",
                         grad=False)
    for radices, keep, real, columns in [((4, 2), 8, False, False), ((2, 3), 7, True, False),
                                         ((4,), 3, False, True)]:
        n = int(np.prod(radices))
        args = (make((n, 3), dtype, rng), make((n, 3), dtype, rng))
        yield PrimSample("fft_unpack", args, {"radices": radices, "sign": -1, "keep": keep, "real": real,
                                             "columns": columns}, desc=f"{radices} keep {keep}", grad=False)
    # fft_runtime (a symbolic length's plan made at run time, here for a static one; a kernel
    # each: one sample, tests/fft/test_symbolic.py covers the lengths and directions)
    if dtype == np.float64:
        shape = (2, 10)
        yield PrimSample("fft_runtime", (make(shape, dtype, rng), np.zeros(shape, dtype)),
                         {"sign": -1, "keep": 6, "real": True}, desc="real rows of 10", grad=False)


op("fft.rows", lambda x: np.fft.fft(x), _fft_rows_samples, dtypes=(np.dtype(np.complex128),),
   tol=_C_REDUCTION, supports_vmap=False, supports_jvp=False, supports_vjp=False, more_dtypes=(),
   notes="a window of rows: batch-innermost passes (fft_pass, fft_unpack)")
prims("fft.rows", _prim_fft_passes, dtypes=(F64, F32))


# reduce_max_sumexp is made after the transforms (transforms/online.py) from the max and the sum
# of shifted exponentials that logsumexp and softmax spell: no vmap or AD rule of its own (the
# surface function is transformed before it exists); tests/backend/test_max_sumexp.py covers
# row lengths, special values, vmap and grad
def _logsumexp_rows_samples(dtype: np.dtype, rng: np.random.Generator) -> Iterator[SampleInput]:
    yield SampleInput((make((5, 40), dtype, rng, -20.0, 20.0),), desc="5 rows of 40")


def _prim_max_sumexp(dtype: np.dtype, rng: np.random.Generator) -> Iterator[PrimSample]:
    yield PrimSample("reduce_max_sumexp", (make((4, 9), dtype, rng, -20.0, 20.0),), {"axes": (1,)},
                     desc="rows of 9", grad=False)
    yield PrimSample("reduce_max_sumexp", (make((2, 3, 700), dtype, rng, -20.0, 20.0),), {"axes": (1, 2)},
                     desc="two trailing axes", grad=False)


def _logsumexp_rows(x: Any) -> Any:
    m = np.max(x, axis=1, keepdims=True)
    return np.log(np.sum(np.exp(x - m), axis=1)) + m[:, 0]


op("logsumexp.rows", _logsumexp_rows, _logsumexp_rows_samples, tol=_C_REDUCTION, supports_vmap=False,
   supports_jvp=False, supports_vjp=False, more_dtypes=(), notes="one pass: reduce_max_sumexp after the transforms")
prims("logsumexp.rows", _prim_max_sumexp, dtypes=(F64, F32))
