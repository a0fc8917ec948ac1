"""Draws per second of compiler.random (Philox-4x32-10 in compiled code) vs NumPy's
default_rng (PCG64), 1e7 float64 draws, normal and uniform, one thread.

Run: ``PYTHONPATH=. python benchmarks/random_bench.py [n]``. Each row is the best of 7 runs
after a warm-up; the compiled kernels allocate their output like NumPy's calls do.
"""
from __future__ import annotations

import sys

import numpy as np

from _timing import best  # noqa: E402  (benchmarks/ is the script's directory)
from compiler import jit, random


def normal_keyless(n):
    return random.normal((n,))


def uniform_keyless(n):
    return random.uniform((n,))


def normal_keyed(key, n):
    return random.normal(key, (n,))


def uniform_keyed(key, n):
    return random.uniform(key, (n,))


def exponential_keyless(n):
    return random.exponential((n,))


def main(n: int) -> None:
    gen = np.random.default_rng(0)
    key = random.key(0)
    cases = [
        ("normal", jit(normal_keyless, static_argnums=0), lambda: gen.standard_normal(n)),
        ("uniform", jit(uniform_keyless, static_argnums=0), lambda: gen.random(n)),
        ("exponential", jit(exponential_keyless, static_argnums=0), lambda: gen.standard_exponential(n)),
    ]
    print(f"{'draw':12s} {'aotx Mdraws/s':>14s} {'numpy Mdraws/s':>15s} {'speedup':>8s}")
    for name, kernel, ref in cases:
        t_k = best(lambda: kernel(n))
        t_np = best(ref)
        print(f"{name:12s} {n / t_k / 1e6:14.1f} {n / t_np / 1e6:15.1f} {t_np / t_k:7.2f}x")
    for name, fn in (("normal(key)", normal_keyed), ("uniform(key)", uniform_keyed)):
        kernel = jit(fn, static_argnums=1)
        t_k = best(lambda: kernel(key, n))
        print(f"{name:12s} {n / t_k / 1e6:14.1f}")


if __name__ == "__main__":
    main(int(float(sys.argv[1])) if len(sys.argv) > 1 else 10_000_000)
