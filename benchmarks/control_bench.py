"""vmap of compiler.while_loop with trip counts that differ per element: Newton's
iteration for sqrt(a) on 1e5 values (spread over 12 decades, and a heavy-tailed set where
1% of the elements need six times the steps of the rest), against the same iteration as a
vectorized masked NumPy loop and, if numba is installed, written per element in numba.

    python benchmarks/control_bench.py [--n 100000] [--repeat 10]

Prints ns/element and the trip counts. The batched loop runs in windows of 32 elements,
each until its slowest element is done (docs/control_flow.md); the masked NumPy loop runs
the whole array until the slowest element of all is done.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import compiler
from compiler import vmap


def newton_sqrt(a):
    def body(c):
        y, k = c
        return 0.5 * (y + a / y), k + 1
    return compiler.while_loop(lambda c: np.abs(c[0] * c[0] - a) > 1e-12 * a, body, (a, 0))


def numpy_masked(a):
    """The same iteration for the whole array: update the elements that are not done."""
    y, k = a.copy(), np.zeros(a.shape, np.int64)
    active = np.abs(y * y - a) > 1e-12 * a
    while active.any():
        y = np.where(active, 0.5 * (y + a / y), y)
        k += active
        active = np.abs(y * y - a) > 1e-12 * a
    return y, k


def numba_peer():
    try:
        import numba
    except ImportError:
        return None

    @numba.njit
    def per_element(a):
        y, k = np.empty_like(a), np.zeros(a.shape, np.int64)
        for i in range(a.shape[0]):
            yi, ki, ai = a[i], 0, a[i]
            while abs(yi * yi - ai) > 1e-12 * ai:
                yi, ki = 0.5 * (yi + ai / yi), ki + 1
            y[i], k[i] = yi, ki
        return y, k
    return per_element


def interleaved(peers: dict, repeat: int) -> dict:
    """Best time of each peer, the peers run in turn (a shared machine's load hits all alike)."""
    for fn in peers.values():
        fn()
    times = {name: float("inf") for name in peers}
    for _ in range(repeat):
        for name, fn in peers.items():
            start = time.perf_counter()
            fn()
            times[name] = min(times[name], time.perf_counter() - start)
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    cases = {
        "a = 10**uniform(-6, 6)": 10.0 ** rng.uniform(-6, 6, args.n),
        "a in [1, 2), 1% at 1e12 (heavy tail)": np.where(rng.uniform(size=args.n) < 0.01, 1e12,
                                                         1.0 + rng.uniform(size=args.n)),
    }
    batched = vmap(newton_sqrt)
    nb = numba_peer()
    if nb is None:
        print("(numba is not installed: no per-element compiled peer)")
    for label, a in cases.items():
        y, k = batched(a)
        y_np, k_np = numpy_masked(a)
        np.testing.assert_array_equal(k, k_np)
        np.testing.assert_allclose(y, np.sqrt(a), rtol=1e-12)
        print(f"Newton sqrt, {args.n} elements, {label}: trip counts {k.min()}..{k.max()} (mean {k.mean():.1f})")
        peers = {"aotx vmap(while_loop)": lambda: batched(a), "NumPy masked loop": lambda: numpy_masked(a)}
        if nb is not None:
            np.testing.assert_array_equal(nb(a)[1], k)
            peers["numba per element"] = lambda: nb(a)
        times = interleaved(peers, args.repeat)
        base = times["aotx vmap(while_loop)"]
        for name, t in times.items():
            print(f"  {name:24s} {1e9 * t / args.n:8.2f} ns/element   ({t / base:.2f}x aotx)")


if __name__ == "__main__":
    main()
