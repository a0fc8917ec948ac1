"""Heat diffusion on a plate, written as NumPy code updates its arrays: in place.

`step` advances the temperature field `u` by explicit finite-difference steps,
`u[1:-1, 1:-1] += ...`, and clamps hot spots with a masked assignment. Under
`jit` the caller's array is updated exactly as NumPy updates it (the kernel
returns the new field and the call copies it into `u`), so the same function
runs compiled or not, and a view (one plate of a stack, `plates[k]`) is
updated where it lives. `hot_fraction` is a masked reduction.

signature: step(u: f64[n, m], alpha: float, steps: int) -> f64[]   (updates u)
# run: python examples/heat_inplace.py
"""
import time

import numpy as np

from compiler import jit


def step(u, alpha, steps):
    """`steps` explicit diffusion steps of the plate `u`, in place; the final peak temperature."""
    for _ in range(steps):
        lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
        u[1:-1, 1:-1] += alpha * lap
        u[u > 80.0] = 80.0                       # a thermostat: clamp hot spots
    return u.max()


def hot_fraction(u, threshold):
    """The mean temperature of the cells above `threshold`, and how many there are."""
    return u[u > threshold].mean(), np.count_nonzero(u > threshold)


fast_step = jit(step, static_argnums=2)
fast_hot_fraction = jit(hot_fraction)


def initial_plate(n=256, m=256):
    u = np.zeros((n, m))
    u[n // 4: n // 2, m // 4: m // 2] = 100.0
    u[0, :] = 20.0                               # a warm edge, kept fixed (never written)
    return u


def main():
    u_numpy, u_aotx = initial_plate(), initial_plate()
    start = time.perf_counter()
    step(u_numpy, 0.2, 50)
    t_numpy = time.perf_counter() - start
    fast_step(u_aotx, 0.2, 50)                   # compile
    u_aotx = initial_plate()
    start = time.perf_counter()
    peak = fast_step(u_aotx, 0.2, 50)
    t_aotx = time.perf_counter() - start
    print(f"max |aotx - numpy| = {np.abs(u_aotx - u_numpy).max():.2e}, peak {peak:.3f}")
    print(f"50 steps on 256x256: numpy {1e3 * t_numpy:.1f} ms, aotx {1e3 * t_aotx:.1f} ms")
    plates = np.stack([initial_plate(64, 64)] * 3)
    fast_step(plates[1], 0.2, 10)                # a view: only plate 1 changes
    print("plates changed:", [bool((p != initial_plate(64, 64)).any()) for p in plates])
    print("hot cells (mean, count):", fast_hot_fraction(u_aotx, 50.0))


if __name__ == "__main__":
    main()
