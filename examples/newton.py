"""Newton's method with a data-dependent while loop: Kepler's equation.

Solves E - e sin(E) = M for the eccentric anomaly E of an orbit, one scalar
solve per call, iterating until the update is below a tolerance: the number of
iterations depends on the data, so the loop compiles to a real `while`. The
compiled solver is then used in a plain Python loop over an orbit, the way a
user calls a small numeric kernel many times.

signature: kepler(mean_anomaly: f64[], ecc: f64[]) -> (f64[], i64[])
# run: python examples/newton.py
# bench: python examples/newton.py   (prints microseconds per solve, aotx vs NumPy)
"""
import time

import numpy as np

from compiler import jit


def kepler(mean_anomaly, ecc):
    """Eccentric anomaly E with E - ecc*sin(E) = mean_anomaly, and the number of Newton steps."""
    e_anom = np.where(ecc > 0.8, np.pi, mean_anomaly)       # a starting point that always converges
    step = (e_anom - ecc * np.sin(e_anom) - mean_anomaly) / (1.0 - ecc * np.cos(e_anom))
    iterations = 0
    while np.abs(step) > 1e-13 and iterations < 50:
        e_anom = e_anom - step
        step = (e_anom - ecc * np.sin(e_anom) - mean_anomaly) / (1.0 - ecc * np.cos(e_anom))
        iterations += 1
    return e_anom - step, iterations


fast_kepler = jit(kepler)


def orbit(solver, ecc, n=200):
    """Positions (x, y) on an orbit of eccentricity `ecc` at n equally spaced mean anomalies."""
    out = np.empty((n, 2))
    steps = 0
    for i, m in enumerate(np.linspace(0.0, 2 * np.pi, n, endpoint=False)):
        e_anom, k = solver(np.float64(m), np.float64(ecc))
        out[i] = np.cos(e_anom) - ecc, np.sqrt(1 - ecc * ecc) * np.sin(e_anom)
        steps += int(k)
    return out, steps


def best_time(fn, *args, repeat=5):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best


def main():
    ecc = 0.9
    xy, steps = orbit(fast_kepler, ecc)
    xy_ref, steps_ref = orbit(kepler, ecc)
    np.testing.assert_allclose(xy, xy_ref, rtol=1e-12, atol=1e-12)
    e_anom, k = fast_kepler(np.float64(1.0), np.float64(ecc))
    print(f"Kepler M=1.0 e={ecc}: E = {float(e_anom):.15f} after {int(k)} Newton steps "
          f"(NumPy: {float(kepler(np.float64(1.0), np.float64(ecc))[0]):.15f}); "
          f"orbit of {len(xy)} points, {steps} steps in total (NumPy {steps_ref})")
    n = len(xy)
    t_aotx, t_numpy = best_time(orbit, fast_kepler, ecc), best_time(orbit, kepler, ecc)
    print(f"aotx  {1e6 * t_aotx / n:8.2f} us per solve (including the call overhead)")
    print(f"NumPy {1e6 * t_numpy / n:8.2f} us per solve   ({t_numpy / t_aotx:.1f}x slower)")


if __name__ == "__main__":
    main()
