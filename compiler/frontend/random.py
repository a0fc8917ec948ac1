"""Staging ``compiler.random``'s draws: keys, counters, and the maps from Philox words to
distributions (docs/random.md has the definitions; runtime/rng.py the NumPy reference
of the generator and of the key derivations).

Element ``j`` (row-major flat index) of a draw of static ``shape`` from key ``k`` reads
the four words of Philox-4x32-10 of key ``k`` and counter ``(j, 0, attempt, 0)``:

* a float64 in [0, 1): 21 bits of word 1 and the 32 bits of word 0, times 2**-53;
  open (0, 1) where a logarithm follows: (m + 0.5) * 2**-53;
* normal: Box-Muller, ``sqrt(-2 log u1) * cos(2 pi u2)`` with u1 from words 0, 1 and u2 from
  words 2, 3 (one normal per counter: every element depends on its own counter only);
* exponential ``-log(u)``; bernoulli ``u < p``; randint ``low + floor(u * (high - low))``;
* gamma: Marsaglia-Tsang, up to 8 attempts (``attempt`` in counter word 2), boosted by
  ``u**(1/a)`` for a < 1;
* categorical: Gumbel-max; permutation: the ranks of n uniforms (ties broken by index).

The i-th draw without a key (counting in program order, loop iterations included) uses
the key ``fold_in(call key, i)`` (:func:`implicit_key`; the call's key is the ``rng_key`` op).
"""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from compiler.errors import CompileError, UnsupportedError
from compiler.frontend import arrays as A
from compiler.frontend.values import Reject, Staged
from compiler.ir import dims
from compiler.ir.core import Value
from compiler.ir.dims import DimExpr
from compiler.ir.types import F32, F64, I32, I64, TensorType
from compiler.primitives import ops
from compiler.primitives import random as R
from runtime import rng

MAX_ELEMENTS = 1 << 62
GAMMA_ATTEMPTS = 8


# ---- arguments ------------------------------------------------------------------------------

def is_key(x: Any) -> bool:
    """Is `x` a key (an int64 scalar: what key/split/fold_in give), rather than a shape?"""
    if isinstance(x, Staged):
        return x.dtype == I64 and x.ndim == 0 and not x.weak
    return isinstance(x, (np.integer, np.ndarray)) and np.asarray(x).dtype == I64 and np.ndim(x) == 0


def static_shape(shape: Any, what: str = "shape", symbolic: bool = True) -> tuple[Any, ...]:
    """A draw's shape: an int or a tuple of ints known at compile time (or symbolic sizes,
    ``x.shape`` of a kernel with a signature, unless `symbolic` is False)."""
    if isinstance(shape, Staged) or (isinstance(shape, (tuple, list))
                                     and any(isinstance(d, Staged) for d in shape)):
        raise Reject(UnsupportedError, f"the {what} of a random draw must be known at compile time, "
                     f"got an array computed at run time", "pass a tuple of Python ints (x.shape "
                     "of an argument is fine)")
    dims_: Any = (shape,) if isinstance(shape, (int, np.integer, DimExpr)) else shape
    if not symbolic and any(isinstance(d, DimExpr) for d in dims_):
        raise Reject(UnsupportedError, f"the {what} of this random draw must be a fixed int, got the "
                     f"symbolic size {shape!r}", "compile for a fixed size (a signature with "
                     "numbers, or no signature)")
    if any(isinstance(d, (bool, np.bool_)) for d in dims_):
        raise Reject(CompileError, f"the {what} of a random draw must be an int or a tuple of ints, "
                     f"got {shape!r}")
    try:
        out: tuple[Any, ...] = tuple(d if isinstance(d, DimExpr) and symbolic else int(d)
                                     for d in dims_)
    except (TypeError, ValueError):
        raise Reject(CompileError, f"the {what} of a random draw must be an int or a tuple of ints, "
                     f"got {shape!r}") from None
    if any(isinstance(d, int) and d < 0 for d in out):
        raise Reject(CompileError, f"the {what} of a random draw has a negative size: {shape!r}")
    if all(isinstance(d, int) for d in out) and math.prod(out) >= MAX_ELEMENTS:
        raise Reject(CompileError, f"a random draw of shape {out} has too many elements")
    return out


def float_dtype(dtype: Any) -> np.dtype:
    dt = A.supported_dtype(dtype)
    if dt not in (F32, F64):
        raise Reject(CompileError, f"this draw gives floating-point numbers: dtype must be float32 "
                     f"or float64, got {dt}")
    return dt


def key_value(st: Any, key: Any) -> Value:
    """An explicit key as an int64 0-d IR value (a key, or a Python int taken as key(n))."""
    if isinstance(key, Staged):
        if key.dtype != I64 or key.ndim != 0:
            raise Reject(CompileError, f"a key is an int64 scalar (compiler.random.key(n)), got an "
                         f"array {key.type}", "index an array of keys: keys[i]")
        return key.value
    return A.constant(st.b, rng.key(int(key)), I64).value


def as_key(st: Any, n: Staged) -> Staged:
    """``key(n)`` of a run-time integer: n as int64 (its bits are the key)."""
    if n.dtype.kind not in "iu" or n.ndim != 0:
        raise Reject(CompileError, f"key(n) takes an integer scalar, got an array {n.type}")
    return A.astype(st.b, n, I64) if n.dtype != I64 else n


def implicit_key(st: Any) -> Value:
    """The key of the next key-less draw: ``fold_in(call key, i)`` for the i-th (the state
    counts the draws, carried through branches and loops like an array updated in place)."""
    state = st.random_state()
    st.note_draw()
    b = st.b
    count = state.value
    state.value = ops.add(b, count, ops.scalar(b, 1, I64))
    return R.fold_in(b, st.rng_key, count)


def draw_key(st: Any, key: Any) -> Value:
    return implicit_key(st) if key is None else key_value(st, key)


# ---- words and unit floats -------------------------------------------------------------------

def words(st: Any, key: Value, shape: tuple[int, ...], attempt: int = 0) -> list[Value]:
    """The four Philox words (int32) of each element of a draw of `shape`."""
    b = st.b
    n: Any = functools.reduce(dims.mul, shape, 1)  # type: ignore[arg-type]
    if isinstance(n, int) and n < 1 << 31:
        c0 = ops.reshape(b, ops.iota(b, I32, (n,), 0), shape)
        c1 = ops.full(b, 0, TensorType(I32, shape))
    else:
        c0, c1 = R.key_words(b, ops.reshape(b, ops.iota(b, I64, (n,), 0), shape))
    c2 = ops.full(b, attempt, TensorType(I32, shape))
    c3 = ops.full(b, 0, TensorType(I32, shape))
    return R.philox_words(b, key, c0, c1, c2, c3)


def _f64(b: Any, x: Value, value: float) -> Value:
    return ops.full(b, value, TensorType(F64, x.type.shape))


def _unsigned(b: Any, w: Value) -> Value:
    """A 32-bit word as the float64 of an integer in [0, 2**32) (a bijection of its bits)."""
    f = ops.convert(b, w, F64)
    return ops.add(b, f, _f64(b, f, 2.0 ** 31))


def unit(b: Any, lo: Value, hi: Value, open_: bool = False) -> Value:
    """A float64 in [0, 1) from two words (53 bits); in (0, 1) with `open_`."""
    f0 = _unsigned(b, lo)
    f1 = ops.floor(b, ops.mul(b, _unsigned(b, hi), _f64(b, f0, 2.0 ** -11)))
    m = ops.add(b, ops.mul(b, f1, _f64(b, f0, 2.0 ** 32)), f0)
    if open_:
        m = ops.add(b, m, _f64(b, m, 0.5))
    return ops.mul(b, m, _f64(b, m, 2.0 ** -53))


def unit32(b: Any, w: Value, open_: bool = False) -> Value:
    """A float64 in [0, 1) from one word (32 bits); in (0, 1) with `open_`."""
    m = _unsigned(b, w)
    if open_:
        m = ops.add(b, m, _f64(b, m, 0.5))
    return ops.mul(b, m, _f64(b, m, 2.0 ** -32))


def standard_normal(b: Any, w: list[Value]) -> Value:
    """Box-Muller's cosine half: float64 N(0, 1) from the four words of one counter."""
    u1, u2 = unit(b, w[0], w[1], open_=True), unit(b, w[2], w[3])
    r = ops.sqrt(b, ops.mul(b, _f64(b, u1, -2.0), ops.log(b, u1)))
    return ops.mul(b, r, ops.cos(b, ops.mul(b, _f64(b, u2, 2 * math.pi), u2)))


def staged(v: Value) -> Staged:
    return Staged(v)


def cast(b: Any, v: Value, dtype: np.dtype) -> Staged:
    return Staged(v if v.type.dtype == dtype else ops.convert(b, v, dtype))


# ---- the distributions (each returns a Staged array) -----------------------------------------

def uniform(st: Any, key: Any, shape: Any, dtype: Any, low: Any, high: Any) -> Any:
    dt, shp = float_dtype(dtype), static_shape(shape)
    b = st.b
    w = words(st, draw_key(st, key), shp)
    u = cast(b, unit(b, w[0], w[1]), dt)
    numbers = isinstance(low, (int, float)) and isinstance(high, (int, float))
    if numbers and (low, high) == (0, 1):
        return u
    # Python numbers stay weak (the draw's dtype wins, as NumPy's promotion of scalars)
    span = high - low if numbers else st.call(np.subtract, [high, low], {})
    return st.call(np.add, [low, st.call(np.multiply, [u, span], {})], {})


def normal(st: Any, key: Any, shape: Any, dtype: Any) -> Any:
    dt, shp = float_dtype(dtype), static_shape(shape)
    w = words(st, draw_key(st, key), shp)
    return cast(st.b, standard_normal(st.b, w), dt)


def exponential(st: Any, key: Any, shape: Any, dtype: Any) -> Any:
    dt, shp = float_dtype(dtype), static_shape(shape)
    b = st.b
    w = words(st, draw_key(st, key), shp)
    return cast(b, ops.neg(b, ops.log(b, unit(b, w[0], w[1], open_=True))), dt)


def _shape_of(x: Any) -> tuple[Any, ...]:
    return tuple(x.shape) if isinstance(x, Staged) else tuple(np.shape(x))


def bernoulli(st: Any, key: Any, p: Any, shape: Any) -> Any:
    shp = static_shape(_shape_of(p) if shape is None else shape)
    b = st.b
    w = words(st, draw_key(st, key), shp)
    u = Staged(unit(b, w[0], w[1]))
    return st.call(np.less, [u, p], {})


def randint(st: Any, key: Any, shape: Any, low: Any, high: Any, dtype: Any) -> Any:
    dt = A.supported_dtype(dtype)
    if dt not in (I32, I64):
        raise Reject(CompileError, f"randint gives integers: dtype must be int32 or int64, got {dt}")
    shp = static_shape(shape)
    b = st.b
    w = words(st, draw_key(st, key), shp)
    u = Staged(unit(b, w[0], w[1]))
    numbers = isinstance(low, int) and isinstance(high, int)
    span = high - low if numbers else st.call(np.subtract, [high, low], {})
    offset = st.call(np.floor, [st.call(np.multiply, [u, span], {})], {})
    value = st.call(np.add, [low, offset], {})
    return A.astype(b, value, dt) if isinstance(value, Staged) else value


def gamma(st: Any, key: Any, a: Any, shape: Any, dtype: Any) -> Any:
    """Marsaglia-Tsang with up to GAMMA_ATTEMPTS candidates per element (the first accepted
    one; the last one if none is, probability < 4e-11 per element for any a)."""
    dt = float_dtype(dtype)
    shp = static_shape(_shape_of(a) if shape is None else shape)
    b = st.b
    k = draw_key(st, key)
    a_ = st.call(np.broadcast_to, [A.astype(b, a, F64) if isinstance(a, Staged)
                                   else np.asarray(a, F64), shp], {})
    av = a_.value if isinstance(a_, Staged) else A.constant(b, a_, F64).value
    small = ops.lt(b, av, _f64(b, av, 1.0))
    a1 = ops.select(b, small, ops.add(b, av, _f64(b, av, 1.0)), av)
    d = ops.sub(b, a1, _f64(b, a1, 1.0 / 3.0))
    c = ops.div(b, _f64(b, d, 1.0), ops.sqrt(b, ops.mul(b, _f64(b, d, 9.0), d)))
    result: Value | None = None
    accepted: list[tuple[Value, Value]] = []
    boost_u: Value | None = None
    for attempt in range(GAMMA_ATTEMPTS):
        w = words(st, k, shp, attempt)
        u1, u2 = unit32(b, w[0], open_=True), unit32(b, w[1])
        x = ops.mul(b, ops.sqrt(b, ops.mul(b, _f64(b, u1, -2.0), ops.log(b, u1))),
                    ops.cos(b, ops.mul(b, _f64(b, u2, 2 * math.pi), u2)))
        u = unit32(b, w[2], open_=True)
        if attempt == 0:
            boost_u = unit32(b, w[3], open_=True)
        t = ops.add(b, _f64(b, x, 1.0), ops.mul(b, c, x))
        v = ops.mul(b, ops.mul(b, t, t), t)
        positive = ops.gt(b, v, _f64(b, v, 0.0))
        safe_v = ops.select(b, positive, v, _f64(b, v, 1.0))
        bound = ops.add(b, ops.mul(b, _f64(b, x, 0.5), ops.mul(b, x, x)),
                        ops.mul(b, d, ops.add(b, ops.sub(b, _f64(b, v, 1.0), safe_v), ops.log(b, safe_v))))
        ok = ops.and_(b, positive, ops.lt(b, ops.log(b, u), bound))
        accepted.append((ok, ops.mul(b, d, safe_v)))
    for ok, cand in reversed(accepted):
        result = cand if result is None else ops.select(b, ok, cand, result)
    assert result is not None and boost_u is not None
    boost = ops.pow_(b, boost_u, ops.div(b, _f64(b, av, 1.0), av))
    result = ops.select(b, small, ops.mul(b, result, boost), result)
    return cast(b, result, dt)


def categorical(st: Any, key: Any, logits: Any, axis: int) -> Any:
    if not isinstance(logits, Staged):
        logits = A.constant(st.b, np.asarray(logits, F64), F64)
    if logits.dtype not in (F32, F64):
        logits = A.astype(st.b, logits, F64)
    shp = static_shape(tuple(logits.shape), "shape of the logits")
    b = st.b
    w = words(st, draw_key(st, key), shp)
    u = unit(b, w[0], w[1], open_=True)
    gumbel = ops.neg(b, ops.log(b, ops.neg(b, ops.log(b, u))))
    noisy = st.call(np.add, [logits, cast(b, gumbel, logits.dtype)], {})
    return st.call(np.argmax, [noisy], {"axis": axis})


def permutation_indices(st: Any, key: Value, n: int) -> Staged:
    """A uniformly random permutation of 0..n-1 (int64): the ranks of n uniforms."""
    b = st.b
    w = words(st, key, (n,))
    u = unit(b, w[0], w[1])
    ui = ops.broadcast_in_dim(b, u, (n, n), (0,))
    uj = ops.broadcast_in_dim(b, u, (n, n), (1,))
    ii = ops.iota(b, I64, (n, n), 0)
    jj = ops.iota(b, I64, (n, n), 1)
    before = ops.or_(b, ops.lt(b, uj, ui), ops.and_(b, ops.eq(b, uj, ui), ops.lt(b, jj, ii)))
    return Staged(ops.reduce_sum(b, ops.convert(b, before, I64), (1,)))


def permutation(st: Any, key: Any, x: Any) -> Any:
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        (n,) = static_shape((x,), "length", symbolic=False)
        return permutation_indices(st, draw_key(st, key), n)
    if not isinstance(x, Staged):
        x = A.constant(st.b, np.asarray(x))
    if x.ndim == 0:
        raise Reject(CompileError, "permutation of a 0-d array: pass an int n or an array")
    (n,) = static_shape((x.shape[0],), "length", symbolic=False)
    perm = permutation_indices(st, draw_key(st, key), n)
    return st.call(np.take, [x, perm], {"axis": 0})


def choice(st: Any, key: Any, a: Any, shape: Any, replace: bool, p: Any) -> Any:
    if p is not None:
        raise Reject(UnsupportedError, "compiler.random.choice with p= is not supported",
                     "use compiler.random.categorical(np.log(p), shape...) for weighted draws")
    shp = static_shape(shape, symbolic=False)
    if isinstance(a, (int, np.integer)) and not isinstance(a, bool):
        n, pool = int(a), None
    else:
        pool = a if isinstance(a, Staged) else A.constant(st.b, np.asarray(a))
        if pool.ndim == 0:
            raise Reject(CompileError, "choice from a 0-d array: pass an int n or an array")
        (n,) = static_shape((pool.shape[0],), "length", symbolic=False)
    size = math.prod(shp)
    b = st.b
    k = draw_key(st, key)
    if replace:
        w = words(st, k, shp)
        u = unit(b, w[0], w[1])
        idx = Staged(ops.convert(b, ops.floor(b, ops.mul(b, u, _f64(b, u, float(n)))), I64))
    else:
        if size > n:
            raise Reject(CompileError, f"cannot take a sample of {size} without replacement from "
                         f"{n} elements", "use replace=True, or a smaller shape")
        perm = permutation_indices(st, k, n)
        idx = Staged(ops.reshape(b, ops.slice_(b, perm.value, (0,), (size,)), shp))
    if pool is None:
        return idx
    return st.call(np.take, [pool, idx], {"axis": 0})


# ---- explicit keys inside compiled code ---------------------------------------------------

def split(st: Any, key: Any, num: int) -> Staged:
    (n,) = static_shape((num,), "num", symbolic=False)
    b = st.b
    k = key_value(st, key)
    i = ops.iota(b, I64, (n,), 0)
    c0, c1 = R.key_words(b, i)
    z = ops.full(b, 0, TensorType(I32, (n,)))
    t = ops.full(b, rng.SPLIT, TensorType(I32, (n,)))
    w = R.philox_words(b, k, c0, c1, z, t)
    return Staged(R.join_words(b, w[0], w[1]))


def fold_in(st: Any, key: Any, data: Any) -> Staged:
    b = st.b
    k = key_value(st, key)
    d = data if isinstance(data, Staged) else A.constant(b, rng.key(int(data)), I64)
    dv = A.astype(b, d, I64).value if d.dtype != I64 else d.value
    return Staged(R.fold_in(b, k, dv))
