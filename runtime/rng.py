"""Philox-4x32-10 in NumPy, the derivations of keys from keys, and the process's random state.

The generator of ``compiler.random`` (docs/random.md) is Philox-4x32-10 (Salmon et
al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011): a keyed bijection of
128-bit counters, so that a draw is a pure function of a key and the index of the
element drawn. Compiled kernels compute it with the ``philox`` primitive; this module is
its NumPy reference (the primitive's ``numpy_ref``) and what the runtime needs to give
each call of a kernel that draws without an explicit key a key of its own, with NumPy
only (kernels loaded by ``runtime.load`` too):

    >>> seed(42)
    >>> k1, k2 = next_call_key(), next_call_key()     # the keys of two successive calls
    >>> seed(42)
    >>> next_call_key() == k1                         # reproducible after seeding again
    True

A key is one 64-bit word (an int64), read as two 32-bit words. The counter's last word separates the uses of a key:
0 for draws (element ``j`` of a draw reads counter ``(j, 0, attempt, 0)``), 1 for
:func:`split`, 2 for :func:`fold_in`. The i-th key-less draw of a kernel call uses the key
``fold_in(call key, i)``.
"""
from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

M0, M1 = 0xD2511F53, 0xCD9E8D57          # the Philox-4x32 multipliers
W0, W1 = 0x9E3779B9, 0xBB67AE85          # the Weyl key increments
ROUNDS = 10
SPLIT, FOLD_IN = 1, 2                    # counter word 3 for each use of a key
_U32 = np.uint32
_MASK = np.uint64(0xFFFFFFFF)


def philox(k0: Any, k1: Any, c0: Any, c1: Any, c2: Any, c3: Any,
           rounds: int = ROUNDS) -> tuple[np.ndarray, ...]:
    """The four output words of Philox-4x32-`rounds` for keys (k0, k1) and counters
    (c0, c1, c2, c3): uint32 arrays (or scalars), broadcast together."""
    arrays = np.broadcast_arrays(*(np.asarray(a).astype(np.int64).astype(np.uint64) & _MASK
                                   for a in (k0, k1, c0, c1, c2, c3)))
    k0_, k1_, x0, x1, x2, x3 = (a.copy() for a in arrays)
    for r in range(rounds):
        if r:
            k0_ = (k0_ + W0) & _MASK
            k1_ = (k1_ + W1) & _MASK
        p0, p1 = x0 * M0, x2 * M1            # < 2**64: exact in uint64
        hi0, lo0 = p0 >> 32, p0 & _MASK
        hi1, lo1 = p1 >> 32, p1 & _MASK
        x0, x1, x2, x3 = hi1 ^ x1 ^ k0_, lo1, hi0 ^ x3 ^ k1_, lo0
    return tuple(x.astype(_U32) for x in (x0, x1, x2, x3))


def key(n: int) -> np.int64:
    """The key of the integer `n`: n modulo 2**64, as the int64 with those bits. A key is
    one 64-bit word; Philox reads its low half as k0 and its high half as k1."""
    n = int(n) % (1 << 64)
    return np.int64(n - (1 << 64) if n >= 1 << 63 else n)


def words(k: Any) -> tuple[np.ndarray, np.ndarray]:
    """The two 32-bit words (k0 low, k1 high) of keys `k` (int64 array or scalar), as uint64."""
    u = np.asarray(k, dtype=np.int64).astype(np.uint64)
    return u & _MASK, u >> np.uint64(32)


def join(w0: Any, w1: Any) -> np.ndarray:
    """Keys from their two words (uint32 arrays): the inverse of :func:`words`."""
    u = (np.asarray(w1, dtype=np.uint64) << np.uint64(32)) | np.asarray(w0, dtype=np.uint64)
    return u.astype(np.int64)


def split(k: Any, num: int = 2) -> np.ndarray:
    """`num` new keys from key `k` (an int64[num] array): key i is words 0, 1 of Philox of
    counter (i, 0, 0, SPLIT)."""
    k0, k1 = words(k)
    i = np.arange(num, dtype=np.uint64)
    w = philox(k0, k1, i & _MASK, i >> np.uint64(32), 0, SPLIT)
    return join(w[0], w[1])


def fold_in(k: Any, data: Any) -> np.ndarray:
    """A new key from key `k` and the integer `data` (modulo 2**64): words 0, 1 of Philox of
    counter (data low, data high, 0, FOLD_IN). Broadcasts over arrays of keys and data."""
    k0, k1 = words(k)
    d = np.asarray(data).astype(np.int64).astype(np.uint64)
    w = philox(k0, k1, d & _MASK, d >> np.uint64(32), 0, FOLD_IN)
    return join(w[0], w[1])


# ---- the process's state: the seed and the number of calls since --------------------------

_lock = threading.Lock()
_state = {"seed": int.from_bytes(os.urandom(8), "little"), "calls": 0}


def seed(n: int) -> None:
    """Make the keys of the following calls a function of `n` alone (and their order)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(n).__name__}")
    with _lock:
        _state["seed"], _state["calls"] = int(n) % (1 << 64), 0


def next_call_key() -> int:
    """The key of the next call of a kernel that draws: fold_in(key(seed), calls so far), as
    the int64 the kernel takes after its symbols (docs/abi.md)."""
    with _lock:
        s, c = _state["seed"], _state["calls"]
        _state["calls"] = c + 1
    return int(fold_in(key(s), c))
