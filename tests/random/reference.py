"""An independent reference of compiler.random, in plain Python integers and NumPy floats,
written from the definitions (Random123's Philox-4x32-10; docs/random.md for the maps from
words to numbers and for the key derivations). It shares no code with runtime/rng.py or
the compiler: the generator is checked against the published known-answer vectors
(test_generator.py), the compiler against this."""
from __future__ import annotations

import math

import numpy as np

MASK = (1 << 32) - 1


def philox4x32_10(counter: tuple[int, int, int, int], key: tuple[int, int]) -> tuple[int, int, int, int]:
    """Philox-4x32 with 10 rounds, one counter, as Salmon et al. (SC 2011) define it."""
    x0, x1, x2, x3 = counter
    k0, k1 = key
    for r in range(10):
        if r > 0:
            k0, k1 = (k0 + 0x9E3779B9) & MASK, (k1 + 0xBB67AE85) & MASK
        prod0, prod1 = 0xD2511F53 * x0, 0xCD9E8D57 * x2
        x0, x1, x2, x3 = ((prod1 >> 32) ^ x1 ^ k0, prod1 & MASK, (prod0 >> 32) ^ x3 ^ k1, prod0 & MASK)
    return x0, x1, x2, x3


def key_int(k: int) -> tuple[int, int]:
    u = int(k) % (1 << 64)
    return u & MASK, u >> 32


def int_key(w0: int, w1: int) -> int:
    u = (w1 << 32) | w0
    return u - (1 << 64) if u >= 1 << 63 else u


def key(n: int) -> int:
    return int_key(*key_int(n))


def fold_in(k: int, data: int) -> int:
    d = int(data) % (1 << 64)
    w = philox4x32_10((d & MASK, d >> 32, 0, 2), key_int(k))
    return int_key(w[0], w[1])


def split(k: int, num: int) -> list[int]:
    return [int_key(*philox4x32_10((i, 0, 0, 1), key_int(k))[:2]) for i in range(num)]


def call_key(seed: int, call: int) -> int:
    """The key of the call-th call of a kernel that draws, after seed(seed)."""
    return fold_in(key(seed), call)


def draw_keys(call: int, n: int) -> list[int]:
    """The keys of the first `n` key-less draws of a kernel called with key `call`."""
    return [fold_in(call, i) for i in range(n)]


def element_words(k: int, shape: tuple[int, ...], attempt: int = 0) -> list[tuple[int, int, int, int]]:
    return [philox4x32_10((j, 0, attempt, 0), key_int(k)) for j in range(math.prod(shape))]


def _bits_as_docs(lo: int, hi: int) -> int:
    """The 53-bit integer of two words as docs/random.md defines it: the words are taken as
    unsigned integers after flipping their top bit (a bijection: float64(int32) + 2**31)."""
    return (((hi ^ 0x80000000) >> 11) << 32) | (lo ^ 0x80000000)


def uniform_bits(lo: int, hi: int, open_: bool = False) -> float:
    m = _bits_as_docs(lo, hi)
    return ((m + 0.5) if open_ else m) / 2.0 ** 53


def uniform(k: int, shape: tuple[int, ...], low: float = 0.0, high: float = 1.0) -> np.ndarray:
    u = np.array([uniform_bits(w[0], w[1]) for w in element_words(k, shape)]).reshape(shape)
    return low + u * (np.asarray(high) - np.asarray(low))


def normal(k: int, shape: tuple[int, ...]) -> np.ndarray:
    out = []
    for w in element_words(k, shape):
        u1, u2 = uniform_bits(w[0], w[1], open_=True), uniform_bits(w[2], w[3])
        out.append(math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2))
    return np.array(out).reshape(shape)


def exponential(k: int, shape: tuple[int, ...]) -> np.ndarray:
    return np.array([-math.log(uniform_bits(w[0], w[1], open_=True))
                     for w in element_words(k, shape)]).reshape(shape)


def permutation(k: int, n: int) -> np.ndarray:
    u = [uniform_bits(w[0], w[1]) for w in element_words(k, (n,))]
    order = sorted(range(n), key=lambda i: (u[i], i))
    rank = np.empty(n, np.int64)
    for r, i in enumerate(order):
        rank[i] = r
    return rank


