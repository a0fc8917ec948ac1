"""Random numbers: the Philox-4x32-10 generator and the key of the current call.

Two primitives carry all of ``compiler.random`` (docs/random.md); the draws
(normal, uniform, gamma, ...) are built from them with ordinary primitives
(compiler/frontend/random.py), so every transform of a draw is the transform of
those:

``philox``
    ELEMENTWISE on six uint32 operands (key k0, k1; counter c0..c3), word
    ``lane`` of Philox-4x32-10. Ten rounds of 32x32->64 multiplies, xors and key
    bumps on scalars, inside the consumer's fused loop: LLVM vectorizes it (the
    multiplies become ``vpmuludq`` on x86) and merges the four lanes of one
    counter, which are the same computation, into one.
``rng_key``
    INDEX, no operands, uint32[2]: the key of this call of the kernel, which the
    caller passes as one int64 after the symbols (docs/abi.md). Its batching rule
    runs even though it has no batched operand: under ``vmap(randomness=
    "different")`` batch element ``i`` gets ``fold_in(key, i)``; under ``"same"`` the
    key stays unbatched; under ``"error"`` it is the user's error, at the line of the
    first draw that used the implicit state (the op's location).

    func @f() -> (f64[3]) {
      %0 = rng_key() : u32[2]
      ...philox(%k0, %k1, %c0, %c1, %c2, %c3) {lane=0} : u32[3] ...
    }

Both have zero derivatives: their results are integers, which carry no
tangent or cotangent, so a draw never blocks differentiation of what it is
combined with.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir as ll

from compiler.errors import RandomnessError
from compiler.ir.builder import Builder, new_block
from compiler.ir.core import Block, Value
from compiler.ir.primitive import define
from compiler.ir.types import I32, I64, TensorType
from compiler.primitives import ops, regions
from compiler.primitives.base import check, same_shape_rule
from compiler.primitives.batching import elementwise_rule
from runtime import rng

#: the name under which the backend passes the call's key (one int64) to lowerings
RNG_SYMBOL = "$rng"


def _words_only(dtypes: tuple[np.dtype, ...], params: dict[str, Any]) -> np.dtype:
    check(len(dtypes) == 6, f"philox takes 6 operands (key k0, k1; counter c0..c3), got {len(dtypes)}")
    for d in dtypes:
        check(d == I32, f"philox operands must be int32 (32-bit words), got {', '.join(map(str, dtypes))}")
    check(params.get("lane") in (0, 1, 2, 3), f"philox lane must be 0..3, got {params.get('lane')!r}")
    return I32


def _philox_ref(*words: np.ndarray, lane: int) -> np.ndarray:
    """Word `lane` of Philox-4x32-10 (Random123) of key (k0, k1) and counter (c0..c3)."""
    k0, k1, c0, c1, c2, c3 = words
    return np.asarray(rng.philox(k0, k1, c0, c1, c2, c3)[lane]).view(np.int32)


def _lower_philox(cg: Any, op: Any, a: list[Any]) -> Any:
    """The rounds on 64-bit lanes holding 32-bit words (upper halves zero, kept so by masks):
    each 32x32->64 product is then one unsigned multiply of the low halves (``vpmuludq``
    on x86), whatever LLVM knows about the operands; the result is truncated at the end."""
    b = cg.b
    i32, i64 = ll.IntType(32), ll.IntType(64)
    k0, k1, x0, x1, x2, x3 = (b.zext(v, i64) for v in a)      # the words are unsigned
    m0, m1 = ll.Constant(i64, rng.M0), ll.Constant(i64, rng.M1)
    w0, w1 = ll.Constant(i64, rng.W0), ll.Constant(i64, rng.W1)
    shift, mask = ll.Constant(i64, 32), ll.Constant(i64, 0xFFFFFFFF)
    for r in range(rng.ROUNDS):
        if r:
            k0, k1 = b.and_(b.add(k0, w0), mask), b.and_(b.add(k1, w1), mask)
        p0, p1 = b.mul(x0, m0), b.mul(x2, m1)
        hi0, lo0 = b.lshr(p0, shift), b.and_(p0, mask)
        hi1, lo1 = b.lshr(p1, shift), b.and_(p1, mask)
        x0, x1, x2, x3 = b.xor(b.xor(hi1, x1), k0), lo1, b.xor(b.xor(hi0, x3), k1), lo0
    return b.trunc((x0, x1, x2, x3)[op.params["lane"]], i32)


philox = define(ops.philox_p, shape_rule=same_shape_rule(_words_only), numpy_ref=_philox_ref,
                lower=_lower_philox, vmap_rule=elementwise_rule, differentiable=False,
                doc="word `lane` of Philox-4x32-10 of key (k0, k1) and counter (c0..c3)")


# ---- rng_key: the key of the current call ---------------------------------------------------

def _rng_key_shape(in_types: tuple[TensorType, ...], params: dict[str, Any]) -> tuple[TensorType, ...]:
    check(not in_types, "rng_key takes no operands")
    return (TensorType(I64, ()),)


def _rng_key_ref() -> np.ndarray:
    """The key of this call: the next one of the process's random state (runtime/rng.py)."""
    return np.array(rng.next_call_key(), dtype=I64)


def _lower_rng_key(cg: Any, op: Any, index: list[Any]) -> Any:
    return cg.symbols[RNG_SYMBOL]


def _vmap_rng_key(b: Any, op: Any, args: list[Any], bdims: list[int | None], size: Any) -> tuple:
    randomness = regions.drivers().randomness()
    key = ops.rng_key(b)
    if randomness == "error":
        raise RandomnessError(
            "a random draw without an explicit key under vmap(randomness='error'): should the "
            "batch elements get the same numbers or different ones?", op.loc,
            "pass randomness='different' (each batch element its own draws) or "
            "randomness='same' (one draw shared by the batch) to vmap, or draw from an explicit "
            "key (compiler.random.normal(key, shape))")
    if randomness == "same":
        return [key], [None]
    return [fold_in(b, key, ops.iota(b, I64, (size,), 0))], [0]


rng_key = define(ops.rng_key_p, shape_rule=_rng_key_shape, numpy_ref=_rng_key_ref,
                 lower=_lower_rng_key, vmap_rule=_vmap_rng_key, batch_always=True,
                 differentiable=False, doc="the key of the current call (int64), passed by the caller")


def key_as_argument(body: Block) -> Block:
    """`body` with its top-level ``rng_key`` ops replaced by one more (last) argument, its
    regions shared: the key of an inlined kernel, or of each chunk of a chunked vmap."""
    new = new_block([a.type for a in body.args] + [TensorType(I64, ())],
                    [a.hint for a in body.args] + ["key"])
    env: dict[Value, Value] = dict(zip(body.args, new.args))
    b = Builder(new)
    for op in body.ops:
        if op.prim is ops.rng_key_p:
            env[op.results[0]] = new.args[-1]
            continue
        with b.at(op.loc):
            results = b.emit(op.prim, [env[v] for v in op.operands], op.params, op.regions)
        env.update(zip(op.results, results))
    new.results = [env[v] for v in body.results]
    return new


# ---- keys as IR (shared with compiler/frontend/random.py; runtime/rng.py is the reference) ----

_TWO32 = 1 << 32


def key_words(b: Any, key: Any) -> tuple[Any, Any]:
    """The two 32-bit words (low, high) of int64 keys, as int32 values of the keys' shape."""
    lo = ops.convert(b, key, I32)                      # wraps: the low 32 bits
    hi = ops.convert(b, ops.floordiv(b, key, ops.full_like(b, _TWO32, key)), I32)
    return lo, hi


def join_words(b: Any, w0: Any, w1: Any) -> Any:
    """int64 keys from two int32 words (low, high): the inverse of :func:`key_words`."""
    lo = ops.and_(b, ops.convert(b, w0, I64), ops.full(b, 0xFFFFFFFF, TensorType(I64, w0.type.shape)))
    hi = ops.mul(b, ops.convert(b, w1, I64), ops.full_like(b, _TWO32, lo))
    return ops.add(b, hi, lo)


def broadcast_to(b: Any, x: Any, shape: tuple[Any, ...]) -> Any:
    """`x` broadcast (trailing axes aligned) to `shape`."""
    if tuple(x.type.shape) == tuple(shape):
        return x
    n = len(shape)
    return ops.broadcast_in_dim(b, x, shape, tuple(range(n - x.type.ndim, n)))


def philox_words(b: Any, key: Any, c0: Any, c1: Any, c2: Any, c3: Any) -> list[Any]:
    """The four Philox words of int64 keys and int32 counter words, broadcast to c0's shape."""
    shape = tuple(c0.type.shape)
    k0, k1 = (broadcast_to(b, k, shape) for k in key_words(b, key))
    words = [k0, k1, c0, c1, c2, c3]
    return [ops.philox(b, words, lane) for lane in range(4)]


def derive(b: Any, key: Any, data: Any, tag: int) -> tuple[Any, Any]:
    """Keys from `key` and int64 `data` for the use `tag` (runtime/rng.py): the keys of words
    (0, 1) and (2, 3) of Philox of counter (data low, data high, 0, tag)."""
    shape = tuple(data.type.shape)
    c0, c1 = key_words(b, data)
    z = ops.full(b, 0, TensorType(I32, shape))
    t = ops.full(b, tag, TensorType(I32, shape))
    w = philox_words(b, key, c0, c1, z, t)
    return join_words(b, w[0], w[1]), join_words(b, w[2], w[3])


def fold_in(b: Any, key: Any, data: Any) -> Any:
    """``fold_in(key, data)`` (runtime/rng.py) of int64 keys and data, broadcast together."""
    if key.type.ndim > data.type.ndim:
        data = broadcast_to(b, data, tuple(key.type.shape))
    return derive(b, key, data, rng.FOLD_IN)[0]
