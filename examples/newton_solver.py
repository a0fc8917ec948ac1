"""Newton's method on a nonlinear system from many starting points: a 3-bus power flow.

A power grid of three buses joined by three lines: bus 0 is the slack bus (voltage
1 at angle 0), buses 1 and 2 draw a fixed load P + jQ. The power flow equations say
that the power each load bus draws through the network equals its load:

    P_i = V_i sum_k V_k (G_ik cos(t_i - t_k) + B_ik sin(t_i - t_k))
    Q_i = V_i sum_k V_k (G_ik sin(t_i - t_k) - B_ik cos(t_i - t_k))

four equations in the unknowns x = (t_1, t_2, V_1, V_2). A heavily loaded grid has
several solutions: the operating point near V = 1, and low-voltage ones that
Newton's method finds from other starting points. Which solution a start leads to
(its basin of attraction) is what a grid planner maps, from thousands of starts.

The compiled solver is the textbook loop written once, for one start: the
Jacobian is `jacfwd(mismatch)`, the step `np.linalg.solve`, and the loop a
`compiler.while_loop` that runs until the mismatch is below 1e-10 (or 40 steps, or
a non-finite iterate). `vmap` runs it over every starting point in one kernel,
each start taking its own number of steps. (The batched loop runs windows of 32 starts
until the slowest of each is done, docs/control_flow.md: here 2.2 times the steps the
starts need, which the vectorized NumPy version below avoids by dropping finished starts;
the compiled kernel is still about 1.8x faster in CPU time, and 55x faster than the loop.)

The NumPy version is what one writes without aotx: the same Newton loop in Python
for each start, with the Jacobian written by hand (MATPOWER's dS/dV formulas in
complex arithmetic: an independent check of `jacfwd`), and the same iteration
vectorized over the starts (stacked `np.linalg.solve`, starts masked as they
converge). The script checks that the compiled solutions and step counts match
both, and that every converged point solves the equations. Starts that wander for
16 steps or more before they are caught by a solution can end elsewhere in the two
versions (0.3% of them here): Newton's basins have fractal boundaries, where rounding
differences of 1e-16 grow; the two NumPy versions differ on as many of them.
With SciPy installed, `scipy.optimize.root` (MINPACK's hybrid method) from 500 of the
starts must find no solution the compiled solver did not, and is timed too.
(`examples/newton.py` solves one scalar equation, Kepler's, for a whole array.)

Sizes: 20000 starting points (the tests use fewer).

signature: solve_many(starts: f64[n, 4]) -> (f64[n, 4], i64[n], f64[n])
# run: python examples/newton_solver.py
# bench: python examples/newton_solver.py   (prints us per start, aotx vs NumPy)
"""
import time

import numpy as np

from compiler import jacfwd, jit, vmap, while_loop

TOL = 1e-10
MAX_STEPS = 40

# lines (from, to, series impedance r + jx); loads P + jQ drawn at buses 1 and 2 (per unit)
LINES = [(0, 1, 0.02 + 0.20j), (0, 2, 0.03 + 0.25j), (1, 2, 0.04 + 0.30j)]
LOAD = np.array([0.8 + 0.3j, 0.6 + 0.25j])


def admittance_matrix(lines=LINES, n=3):
    """The bus admittance matrix Y = G + jB of the network."""
    y = np.zeros((n, n), complex)
    for i, k, z in lines:
        y[i, i] += 1 / z
        y[k, k] += 1 / z
        y[i, k] -= 1 / z
        y[k, i] -= 1 / z
    return y


Y = admittance_matrix()
G, B = Y.real, Y.imag


def mismatch(x):
    """Power drawn through the network minus the load, at buses 1 and 2: zero at a solution."""
    theta = np.concatenate([np.zeros(1), x[:2]])
    v = np.concatenate([np.ones(1), x[2:]])
    d = theta[:, None] - theta[None, :]
    p = v * ((G * np.cos(d) + B * np.sin(d)) @ v)
    q = v * ((G * np.sin(d) - B * np.cos(d)) @ v)
    return np.concatenate([p[1:] + LOAD.real, q[1:] + LOAD.imag])


def newton(start):
    """Newton's method from one start: (solution, steps taken, final mismatch norm)."""
    def going(state):
        x, f, steps = state
        return (np.max(np.abs(f)) > TOL) & (steps < MAX_STEPS) & np.all(np.isfinite(x))

    def step(state):
        x, f, steps = state
        x = x - np.linalg.solve(jacfwd(mismatch)(x), f)
        return x, mismatch(x), steps + 1

    x, f, steps = while_loop(going, step, (start, mismatch(start), 0))
    return x, steps, np.max(np.abs(f))


solve_many = jit(vmap(newton))


# --- the NumPy version: the Jacobian by hand (MATPOWER's dSbus_dV), a Python loop ----------------


def voltages(x):
    """Complex bus voltages for unknowns x[..., 4] (slack bus 1 at angle 0), and their
    derivatives with respect to the magnitudes (the magnitude is signed here)."""
    unit = np.exp(1j * np.concatenate([np.zeros(x.shape[:-1] + (1,)), x[..., :2]], axis=-1))
    return np.concatenate([np.ones(x.shape[:-1] + (1,)), x[..., 2:]], axis=-1) * unit, unit


def mismatch_by_hand(x):
    """The mismatch of x[..., 4] from the complex power S = V conj(Y V)."""
    v, _ = voltages(x)
    s = v * np.conj(v @ Y.T)
    return np.concatenate([s.real[..., 1:] + LOAD.real, s.imag[..., 1:] + LOAD.imag], axis=-1)


def jacobian_by_hand(x):
    """d(mismatch)/dx for x[..., 4], from MATPOWER's dSbus_dV:
    dS/dangle = j diag(V) conj(diag(I) - Y diag(V)), dS/d|V| = diag(V) conj(Y diag(u)) + conj(diag(I)) diag(u)."""
    v, unit = voltages(x)
    current = v @ Y.T
    eye = np.eye(3)
    ds_dangle = 1j * v[..., :, None] * np.conj(current[..., :, None] * eye - Y * v[..., None, :])
    ds_dmag = v[..., :, None] * np.conj(Y * unit[..., None, :]) + np.conj(current)[..., :, None] * (unit[..., None, :] * eye)
    ds = np.concatenate([ds_dangle[..., 1:, 1:], ds_dmag[..., 1:, 1:]], axis=-1)
    return np.concatenate([ds.real, ds.imag], axis=-2)


def newton_numpy(start):
    x, steps = start.copy(), 0
    f = mismatch_by_hand(x)
    while np.max(np.abs(f)) > TOL and steps < MAX_STEPS and np.all(np.isfinite(x)):
        try:
            x = x - np.linalg.solve(jacobian_by_hand(x), f)
        except np.linalg.LinAlgError:            # a singular Jacobian: this start fails
            x = np.full_like(x, np.nan)
        f = mismatch_by_hand(x)
        steps += 1
    return x, steps, np.max(np.abs(f))


def solve_many_numpy(starts):
    """The per-start Python loop, as one writes it first."""
    results = [newton_numpy(s) for s in starts]
    return (np.array([r[0] for r in results]), np.array([r[1] for r in results]),
            np.array([r[2] for r in results]))


def solve_many_vectorized(starts):
    """All starts at once: stacked Jacobians and np.linalg.solve, the finished starts left out."""
    x = starts.copy()
    steps = np.zeros(len(x), np.int64)
    f = mismatch_by_hand(x)
    for _ in range(MAX_STEPS):
        active = (np.max(np.abs(f), axis=1) > TOL) & np.all(np.isfinite(x), axis=1)
        if not active.any():
            break
        xa = x[active] - np.linalg.solve(jacobian_by_hand(x[active]), f[active][..., None])[..., 0]
        x[active], f[active] = xa, mismatch_by_hand(xa)
        steps[active] += 1
    return x, steps, np.max(np.abs(f), axis=1)


def solve_many_scipy(starts):
    """scipy.optimize.root per start (MINPACK's hybrid Powell method, the Jacobian by hand):
    the library call one would reach for; None without SciPy."""
    try:
        from scipy.optimize import root
    except ImportError:
        return None
    found = [root(mismatch_by_hand, s, jac=jacobian_by_hand, method="hybr", tol=1e-12) for s in starts]
    x = np.array([r.x for r in found])
    return x, np.array([r.success for r in found]) & (np.max(np.abs(mismatch_by_hand(x)), axis=1) <= 1e-9)


def starting_points(n=20000, seed=0):
    """Angles in [-1.2, 0.4] rad, voltages in [0.15, 1.3] per unit."""
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.uniform(-1.2, 0.4, (n, 2)), rng.uniform(0.15, 1.3, (n, 2))], axis=1)


def distinct_solutions(x, converged, decimals=6):
    """The distinct solutions found, most often found first, with their counts (a voltage
    -V at angle t is the voltage V at t + pi; angles are taken into (-pi, pi])."""
    x = x[converged].copy()
    flip = x[:, 2:] < 0
    x[:, 2:] = np.abs(x[:, 2:])
    x[:, :2] = np.angle(np.exp(1j * (x[:, :2] + np.pi * flip)))
    found, counts = np.unique(np.round(x, decimals), axis=0, return_counts=True)
    order = np.argsort(-counts)
    return found[order], counts[order]


def best_time(fn, *args, repeat=5):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best


def main():
    starts = starting_points()
    start = time.perf_counter()
    x, steps, residual = solve_many(starts)                 # the first call compiles
    compile_s = time.perf_counter() - start
    converged = residual <= TOL
    xv, steps_v, residual_v = solve_many_vectorized(starts)
    same = np.isclose(x, xv, rtol=0, atol=1e-8).all(axis=1) & (steps == steps_v) | ~converged & ~(residual_v <= TOL)
    print(f"{len(starts):,} starts: {converged.sum():,} converged "
          f"(steps {steps[converged].min()} to {steps[converged].max()}, mean {steps[converged].mean():.1f}); "
          f"{same.mean():.2%} match the NumPy iteration step for step")
    check = np.array([mismatch_by_hand(p) for p in x[converged]])
    print(f"largest mismatch at a converged point, recomputed by NumPy: {np.max(np.abs(check)):.1e}")
    solutions, counts = distinct_solutions(x, converged)
    for sol, count in zip(solutions, counts):
        print(f"  {count:6,} starts -> V = ({sol[2]:.4f}, {sol[3]:.4f}), angles = ({sol[0]:+.4f}, {sol[1]:+.4f}) rad")
    subset = starts[:2000]
    start = time.perf_counter()
    scipy_result = solve_many_scipy(subset[:500])
    t_scipy = (time.perf_counter() - start) * len(starts) / 500
    if scipy_result is not None:                 # its basins differ (another method), its roots may not
        found, _ = distinct_solutions(*scipy_result)
        assert {tuple(r) for r in found} <= {tuple(r) for r in solutions}, found
        print(f"scipy.optimize.root (hybr) from 500 of the starts: the same {len(found)} solutions")
    t_aotx = best_time(solve_many, starts)
    t_loop = best_time(solve_many_numpy, subset, repeat=1) * len(starts) / len(subset)
    t_vec = best_time(solve_many_vectorized, starts, repeat=3)
    print(f"aotx  jacfwd + while_loop, vmap:  {1e6 * t_aotx / len(starts):8.3f} us per start   "
          f"(first call incl. compile {compile_s:.1f} s)")
    print(f"NumPy Python loop per start:      {1e6 * t_loop / len(starts):8.3f} us per start   "
          f"({t_loop / t_aotx:.0f}x slower)")
    print(f"NumPy vectorized over starts:     {1e6 * t_vec / len(starts):8.3f} us per start   "
          f"({t_vec / t_aotx:.1f}x slower)")
    if scipy_result is not None:
        print(f"scipy.optimize.root per start:    {1e6 * t_scipy / len(starts):8.3f} us per start   "
              f"({t_scipy / t_aotx:.0f}x slower)")


if __name__ == "__main__":
    main()
