"""Quickstart: compile a NumPy expression with @jit and compare with NumPy.

# run: python examples/quickstart.py
"""
import time

import numpy as np

from compiler import jit


def wave(x):
    return np.exp(-x**2) * np.sin(3 * x) + 0.5 * x * np.tanh(x)


fast_wave = jit(wave)


def best_time(fn, *args, repeat=5):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best


def main():
    x = np.linspace(-4.0, 4.0, 10_000_000)
    y = fast_wave(x)                      # the first call compiles
    expected = wave(x)
    np.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-15)
    print(f"wave(x) for {x.size:,} float64 elements: sum = {y.sum():.12f} (NumPy: {expected.sum():.12f})")
    t_aotx, t_numpy = best_time(fast_wave, x), best_time(wave, x)
    print(f"aotx  {1e9 * t_aotx / x.size:6.2f} ns/element")
    print(f"NumPy {1e9 * t_numpy / x.size:6.2f} ns/element   ({t_numpy / t_aotx:.1f}x slower)")


if __name__ == "__main__":
    main()
