"""Lennard-Jones molecular dynamics: velocity Verlet with a static time loop.

A cluster of argon-like atoms (reduced units) integrated for a fixed number of
steps. The whole trajectory is one compiled kernel: the force evaluation
(pairwise differences, masked diagonal, broadcasting reductions) is fused and
the time loop is unrolled at compile time.

signature: simulate(pos: f64[n, 3], vel: f64[n, 3], dt: float) -> (f64[n, 3], f64[n, 3], f64[])
# run: python examples/nbody.py
# bench: python examples/nbody.py   (prints ms per trajectory, aotx vs NumPy)
"""
import time

import numpy as np

from compiler import jit

STEPS = 40


def lj_forces(pos):
    """Lennard-Jones forces (epsilon = sigma = 1) on every atom, and the potential energy."""
    n = pos.shape[0]
    d = pos[:, None, :] - pos[None, :, :]
    off_diagonal = 1.0 - np.eye(n)
    r2 = np.sum(d * d, axis=-1) + np.eye(n)          # 1 on the diagonal: no division by zero
    inv6 = (1.0 / r2) ** 3
    energy = 2.0 * np.sum(off_diagonal * (inv6 * inv6 - inv6))
    coef = off_diagonal * 24.0 * (2.0 * inv6 * inv6 - inv6) / r2
    forces = np.sum(coef[:, :, None] * d, axis=1)
    return forces, energy


def simulate(pos, vel, dt):
    """STEPS velocity-Verlet steps; returns final positions, velocities and total energy."""
    f, _ = lj_forces(pos)
    for _ in range(STEPS):
        vel = vel + 0.5 * dt * f
        pos = pos + dt * vel
        f, potential = lj_forces(pos)
        vel = vel + 0.5 * dt * f
    kinetic = 0.5 * np.sum(vel * vel)
    return pos, vel, kinetic + potential


fast_simulate = jit(simulate)


def initial_state(n_side=4, spacing=1.15, seed=0):
    """Atoms on a jittered cubic lattice with small random velocities (zero total momentum)."""
    rng = np.random.default_rng(seed)
    grid = np.stack(np.meshgrid(*[np.arange(n_side)] * 3, indexing="ij"), axis=-1).reshape(-1, 3)
    pos = grid * spacing + rng.uniform(-0.05, 0.05, grid.shape)
    vel = rng.normal(0.0, 0.2, grid.shape)
    vel -= vel.mean(axis=0)
    return pos, vel


def best_time(fn, *args, repeat=5):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best


def main():
    pos, vel = initial_state()
    dt = 0.002
    p, v, e = fast_simulate(pos, vel, dt)              # the first call compiles
    p_ref, v_ref, e_ref = simulate(pos, vel, dt)
    np.testing.assert_allclose(p, p_ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(e, e_ref, rtol=1e-9)
    _, _, e0 = simulate(pos, vel, 0.0)
    print(f"{pos.shape[0]} atoms, {STEPS} steps: total energy {float(e):.9f} (NumPy {float(e_ref):.9f}), "
          f"drift {float(e - e0):+.2e}")
    t_aotx, t_numpy = best_time(fast_simulate, pos, vel, dt), best_time(simulate, pos, vel, dt)
    print(f"aotx  {1e3 * t_aotx:8.3f} ms per trajectory")
    print(f"NumPy {1e3 * t_numpy:8.3f} ms per trajectory   ({t_numpy / t_aotx:.1f}x slower)")


if __name__ == "__main__":
    main()
