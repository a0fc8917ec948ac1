"""Implicit Euler on a stiff ODE: Robertson's chemical kinetics, Newton steps with jacrev.

Robertson's three-species reaction (A -> B at rate 0.04, B + B -> C + B at 3e7,
B + C -> A + C at 1e4) has time scales from 1e-8 to 1e5: an explicit method
needs steps below the fastest scale for the whole run. Implicit Euler solves
z = y + h f(z) at each step instead, by Newton's method on the residual
G(z) = z - y - h f(z): its Jacobian is `jacrev(residual)`, the update is
`np.linalg.solve`, and steps grow geometrically from 1e-6 to cover [0, 40].
The whole integration (time loop, Newton `while_loop`, Jacobian, solve) is one
compiled kernel, and `vmap` of it integrates a batch of rate constants at once
(NumPy's counterpart: stacked Jacobians and one batched `np.linalg.solve` per Newton step).

Checks: the compiled trajectory against the same scheme in NumPy (the
Jacobian written by hand), and against `scipy.integrate.solve_ivp(method="Radau")`
when SciPy is installed (implicit Euler is first order: they agree to about a
percent), else against NumPy's implicit Euler with ten times finer steps.
Conservation of y0 + y1 + y2 = 1 holds to rounding in both.

Sizes: 2000 steps (the tests use fewer); the batch is 64 sets of rate constants.

signature: integrate(y0: f64[3], steps: f64[s], rates: f64[3]) -> f64[s, 3]
# run: python examples/stiff_ode.py
# bench: python examples/stiff_ode.py   (prints ms per trajectory, aotx vs NumPy)
"""
import time

import numpy as np

from compiler import jacrev, jit, vmap, while_loop

RATES = np.array([0.04, 3e7, 1e4])
T_END = 40.0


def robertson(y, rates):
    """dy/dt of Robertson's kinetics."""
    k1, k2, k3 = rates[0], rates[1], rates[2]
    a, b, c = y[0], y[1], y[2]
    return np.stack([-k1 * a + k3 * b * c, k1 * a - k3 * b * c - k2 * b * b, k2 * b * b])


def residual(z, y, h, rates):
    """Implicit Euler's equation for the next state z: zero at the solution."""
    return z - y - h * robertson(z, rates)


def implicit_euler_step(y, h, rates):
    """The next state z = y + h f(z), by Newton's method from z = y until the update is below 1e-12."""
    def not_converged(state):
        z, delta, iterations = state
        return (np.max(np.abs(delta)) > 1e-12) & (iterations < 20)

    def newton(state):
        z, _, iterations = state
        delta = np.linalg.solve(jacrev(residual)(z, y, h, rates), residual(z, y, h, rates))
        return z - delta, delta, iterations + 1

    # A Python `while` here compiles under jit, but vmap refuses a loop whose condition
    # differs between batch elements; while_loop runs each element's own number of steps.
    z, _, _ = while_loop(not_converged, newton, (y, np.ones(3), 0))
    return z


def integrate(y0, steps, rates):
    """Implicit Euler with the step sizes `steps`; returns the state after each step."""
    out = np.zeros((steps.shape[0], 3))
    y = y0
    for i in range(steps.shape[0]):
        y = implicit_euler_step(y, steps[i], rates)
        out[i] = y
    return out


fast_integrate = jit(integrate)
fast_integrate_batch = jit(vmap(integrate, in_dims=(None, None, 0)))


# --- the NumPy version: the same scheme, the Jacobian by hand -----------------------------------


def robertson_jacobian(y, rates):
    k1, k2, k3 = rates
    a, b, c = y
    return np.array([[-k1, k3 * c, k3 * b],
                     [k1, -k3 * c - 2 * k2 * b, -k3 * b],
                     [0.0 * a, 2 * k2 * b, 0.0 * a]])


def integrate_numpy(y0, steps, rates):
    out = np.zeros((steps.shape[0], 3))
    y = y0
    for i, h in enumerate(steps):
        z = y
        delta = np.ones(3)
        iterations = 0
        while np.max(np.abs(delta)) > 1e-12 and iterations < 20:
            jac = np.eye(3) - h * robertson_jacobian(z, rates)
            delta = np.linalg.solve(jac, residual(z, y, h, rates))
            z = z - delta
            iterations += 1
        y = z
        out[i] = y
    return out


def integrate_numpy_batch(y0, steps, rates):
    return np.stack([integrate_numpy(y0, steps, r) for r in rates])


def integrate_numpy_vectorized(y0, steps, rates):
    """The batch at once: stacked Jacobians and np.linalg.solve, Newton until every set converged."""
    out = np.zeros((rates.shape[0], steps.shape[0], 3))
    y = np.broadcast_to(y0, (rates.shape[0], 3))
    for i, h in enumerate(steps):
        z = y
        delta = np.ones_like(y)
        iterations = 0
        while np.max(np.abs(delta)) > 1e-12 and iterations < 20:
            jac = np.eye(3) - h * np.moveaxis(robertson_jacobian(z.T, rates.T), -1, 0)
            delta = np.linalg.solve(jac, (z - y - h * robertson(z.T, rates.T).T)[..., None])[..., 0]
            z = z - delta
            iterations += 1
        y = z
        out[:, i] = y
    return out


def step_sizes(count=2000, first=1e-6, t_end=T_END):
    """`count` geometrically growing steps from `first` that add up to t_end."""
    ratio = 1.01
    for _ in range(200):                       # solve first * (ratio**count - 1) / (ratio - 1) = t_end
        ratio = (t_end * (ratio - 1) / first + 1) ** (1.0 / count)
    steps = first * ratio ** np.arange(count)
    return steps * (t_end / steps.sum())


def rate_batch(count=64, seed=0):
    """Rate constants within a factor of two of Robertson's."""
    return RATES * np.exp(np.random.default_rng(seed).uniform(-0.7, 0.7, (count, 3)))


def reference(y0, steps, rates):
    """SciPy's Radau at the step times, or NumPy's implicit Euler with 10x finer steps."""
    times = np.cumsum(steps)
    try:
        from scipy.integrate import solve_ivp
    except ImportError:
        fine = integrate_numpy(y0, np.repeat(steps / 10, 10), rates)
        return fine[9::10], "NumPy implicit Euler, 10x finer steps"
    sol = solve_ivp(lambda t, y: robertson(y, rates), (0.0, times[-1]), y0, method="Radau",
                    t_eval=times, rtol=1e-8, atol=1e-12, jac=lambda t, y: robertson_jacobian(y, rates))
    return sol.y.T, "scipy.integrate.solve_ivp(method='Radau')"


def best_time(fn, *args, repeat=5):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best


def main():
    y0 = np.array([1.0, 0.0, 0.0])
    steps = step_sizes()
    start = time.perf_counter()
    got = fast_integrate(y0, steps, RATES)                   # the first call compiles
    compile_s = time.perf_counter() - start
    want = integrate_numpy(y0, steps, RATES)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-14)
    ref, ref_name = reference(y0, steps, RATES)
    scale = np.max(np.abs(ref), axis=0)                      # per species: y1 peaks at 3.6e-5
    rel = np.max(np.abs(got - ref) / scale, axis=0)
    assert np.all(rel < 0.05), rel
    print(f"Robertson's kinetics to t={T_END:g} in {steps.size} implicit Euler steps "
          f"(h from {steps[0]:.0e} to {steps[-1]:.1e}): y({T_END:g}) = {np.array2string(got[-1], precision=6)}")
    print(f"agrees with the NumPy scheme to {np.max(np.abs(got - want) / scale):.1e}; with {ref_name} to "
          f"{', '.join(f'{r:.1e}' for r in rel)} (per species, relative to its peak); "
          f"mass conservation error {np.max(np.abs(got.sum(axis=1) - 1.0)):.1e}")
    rates = rate_batch()
    start = time.perf_counter()
    batch = fast_integrate_batch(y0, steps, rates)
    compile_batch_s = time.perf_counter() - start
    np.testing.assert_allclose(batch[:4], integrate_numpy_batch(y0, steps, rates[:4]), rtol=1e-9, atol=1e-14)
    t_aotx, t_numpy = best_time(fast_integrate, y0, steps, RATES), best_time(integrate_numpy, y0, steps, RATES, repeat=3)
    print(f"aotx  one trajectory:          {1e3 * t_aotx:9.3f} ms   (first call incl. compile {compile_s:.1f} s)")
    print(f"NumPy one trajectory:          {1e3 * t_numpy:9.3f} ms   ({t_numpy / t_aotx:.1f}x slower)")
    vectorized = integrate_numpy_vectorized(y0, steps, rates)
    np.testing.assert_allclose(batch, vectorized, rtol=1e-9, atol=1e-14)
    t_batch = best_time(fast_integrate_batch, y0, steps, rates)
    t_vec = best_time(integrate_numpy_vectorized, y0, steps, rates, repeat=3)
    print(f"aotx  vmap over {rates.shape[0]} rate sets:    {1e3 * t_batch:9.3f} ms   (first call incl. compile {compile_batch_s:.1f} s)")
    print(f"NumPy, the batch at once:      {1e3 * t_vec:9.3f} ms   ({t_vec / t_batch:.1f}x slower)")


if __name__ == "__main__":
    main()
