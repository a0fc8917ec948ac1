"""vmap of compiler.while_loop with trip counts that differ per element: Newton's
iteration for sqrt(a) on 1e5 values of a spread over 12 decades (each element needs
its own number of steps), against the same loop as a vectorized masked NumPy loop and,
if numba is installed, written per element in numba.

    python benchmarks/control_bench.py [--n 100000] [--repeat 7]

Prints ns/element and the trip counts: the batched loop runs until the slowest element
is done, so its work is (max trip count) x n, against (mean trip count) x n per element.
"""
from __future__ import annotations

import argparse

import numpy as np

from _timing import best  # noqa: E402  (benchmarks/ is the script's directory)
import compiler  # noqa: E402
from compiler import vmap  # noqa: E402


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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    a = 10.0 ** np.random.default_rng(0).uniform(-6, 6, args.n)
    batched = vmap(newton_sqrt)
    y, k = batched(a)
    y_np, k_np = numpy_masked(a)
    np.testing.assert_array_equal(k, k_np)
    np.testing.assert_allclose(y, np.sqrt(a), rtol=1e-12)
    print(f"Newton sqrt, {args.n} elements, trip counts {k.min()}..{k.max()} (mean {k.mean():.1f})")
    peers = {"aotx vmap(while_loop)": lambda: batched(a), "NumPy masked loop": lambda: numpy_masked(a)}
    nb = numba_peer()
    if nb is not None:
        np.testing.assert_array_equal(nb(a)[1], k)
        peers["numba per element"] = lambda: nb(a)
    else:
        print("  (numba is not installed: no per-element compiled peer)")
    base = None
    for name, fn in peers.items():
        t = best(fn, args.repeat)
        base = base or t
        print(f"  {name:24s} {1e9 * t / args.n:8.2f} ns/element   ({t / base:.2f}x aotx)")


if __name__ == "__main__":
    main()
