"""Newton's method with a data-dependent while loop: Kepler's equation for a whole orbit.

Solves E - e sin(E) = M for the eccentric anomaly E at many mean anomalies M at
once, iterating until the largest Newton update is below a tolerance. The
number of iterations depends on the data, so the loop compiles to a real
`while` whose body (sin, cos, the update and the max-reduction of the
convergence test) is one fused loop over the array.

signature: kepler(mean_anomaly: f64[n], ecc: float) -> (f64[n], i64[])
# run: python examples/newton.py
# bench: python examples/newton.py   (prints ns per solve, aotx vs NumPy)
"""
import time

import numpy as np

from compiler import jit


def kepler(mean_anomaly, ecc):
    """Eccentric anomalies E with E - ecc*sin(E) = mean_anomaly, and the number of Newton steps."""
    e_anom = np.where(ecc > 0.8, np.pi, mean_anomaly)      # a starting point that always converges
    step = (e_anom - ecc * np.sin(e_anom) - mean_anomaly) / (1.0 - ecc * np.cos(e_anom))
    iterations = 0
    while np.max(np.abs(step)) > 1e-13 and iterations < 50:
        e_anom = e_anom - step
        step = (e_anom - ecc * np.sin(e_anom) - mean_anomaly) / (1.0 - ecc * np.cos(e_anom))
        iterations += 1
    return e_anom - step, iterations


fast_kepler = jit(kepler)


def orbit_positions(e_anom, ecc):
    """Positions (x, y) on the orbit (semi-major axis 1, focus at the origin)."""
    return np.stack([np.cos(e_anom) - ecc, np.sqrt(1.0 - ecc * ecc) * np.sin(e_anom)], axis=-1)


def mean_anomalies(n=1_000_000):
    return np.linspace(0.0, 2.0 * np.pi, n, endpoint=False)


def best_time(fn, *args, repeat=5):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best


def main():
    ecc = 0.9
    m = mean_anomalies()
    e_anom, steps = fast_kepler(m, ecc)                    # the first call compiles
    e_ref, steps_ref = kepler(m, ecc)
    np.testing.assert_allclose(e_anom, e_ref, rtol=1e-12, atol=1e-12)
    residual = np.max(np.abs(e_anom - ecc * np.sin(e_anom) - m))
    xy = orbit_positions(e_anom, ecc)
    print(f"{m.size:,} mean anomalies, e={ecc}: {int(steps)} Newton steps (NumPy {steps_ref}), "
          f"max residual {residual:.1e}, mean distance from the focus {np.hypot(*xy.T).mean():.12f}")
    t_aotx, t_numpy = best_time(fast_kepler, m, ecc), best_time(kepler, m, ecc)
    print(f"aotx  {1e9 * t_aotx / m.size:7.2f} ns per solve")
    print(f"NumPy {1e9 * t_numpy / m.size:7.2f} ns per solve   ({t_numpy / t_aotx:.1f}x slower)")


if __name__ == "__main__":
    main()
