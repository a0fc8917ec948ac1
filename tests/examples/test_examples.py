"""Every program in examples/ is also a test: its main computation, compiled, equals NumPy.

Each example is imported as a module (its `main()`, which prints timings, is not
run) and its compiled kernels are called on the example's own inputs and
compared with the same functions run uncompiled by NumPy. The header of every
example must carry a `# run:` line (STYLE.md point 20).
"""
from __future__ import annotations

import functools
import importlib.util
import pathlib

import numpy as np
import pytest

from tests.ops.compare import Tol, assert_same

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


@functools.cache
def load(name: str):
    path = EXAMPLES / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"aotx_example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.py")), ids=lambda p: p.name)
def test_example_header_has_run_line(path):
    doc = path.read_text().split('"""')[1]
    assert f"# run: python examples/{path.name}" in doc, f"{path.name}: the docstring needs a '# run:' line"


def test_nbody_trajectory_matches_numpy():
    m = load("nbody")
    pos, vel = m.initial_state()
    got = m.fast_simulate(pos, vel, 0.002)
    want = m.simulate(pos, vel, 0.002)
    assert_same(got, want, Tol((1e-5, 1e-6), (1e-9, 1e-11)))


def test_nbody_forces_match_numpy_on_a_small_cluster():
    m = load("nbody")
    pos, _ = m.initial_state(n_side=2, seed=3)
    from compiler import jit
    assert_same(jit(m.lj_forces)(pos), m.lj_forces(pos), Tol((1e-5, 1e-6), (1e-11, 1e-12)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mlp_inference_matches_numpy(dtype):
    m = load("mlp_inference")
    params, x = m.init_params(dtype=dtype), m.make_batch(batch=32, dtype=dtype)
    got = m.fast_predict(params, x)
    assert_same(got, m.predict(params, x), Tol((1e-4, 1e-6), (1e-11, 1e-13)))
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("n", [1, 7, 1000])
def test_black_scholes_symbolic_signature_matches_numpy(n):
    m = load("black_scholes")
    spot, strike, years = m.make_options(n, seed=n)
    got = m.fast_black_scholes(spot, strike, years, 0.02, 0.3)
    assert_same(got, m.black_scholes(spot, strike, years, 0.02, 0.3), Tol((0, 0), (1e-10, 1e-10), ulps=8))


@pytest.mark.parametrize("n, ecc", [(1, 0.9), (7, 0.0), (100, 0.5), (1000, 0.99)])
def test_newton_kepler_matches_numpy(n, ecc):
    m = load("newton")
    anomalies = m.mean_anomalies(n)
    got = m.fast_kepler(anomalies, ecc)
    want = m.kepler(anomalies, ecc)
    assert_same(got, want, Tol((0, 0), (1e-13, 1e-13), ulps=8))
    e_anom = got[0]
    assert np.max(np.abs(e_anom - ecc * np.sin(e_anom) - anomalies)) < 1e-10


def test_newton_orbit_positions_match_numpy():
    m = load("newton")
    from compiler import jit
    e_anom, _ = m.kepler(m.mean_anomalies(64), 0.7)
    assert_same(jit(m.orbit_positions)(e_anom, 0.7), m.orbit_positions(e_anom, 0.7), Tol((0, 0), (1e-14, 1e-15), ulps=4))


def test_newton_solver_matches_the_numpy_loop_per_start():
    """vmap of a while_loop with jacfwd and np.linalg.solve, against the per-start Python loop
    with the Jacobian written by hand (MATPOWER's complex formulas): the same steps and the same
    solution from every start that converges within 12 steps (beyond, Newton's fractal basin
    boundaries amplify rounding: a long wander may end elsewhere); every converged point
    solves the equations by NumPy's own evaluation; the same set of solutions is found."""
    m = load("newton_solver")
    starts = m.starting_points(256, seed=1)
    x, steps, residual = m.solve_many(starts)
    x_np, steps_np, residual_np = m.solve_many_numpy(starts)
    converged = residual <= m.TOL
    assert converged.mean() > 0.95 and steps.dtype.kind == "i"
    assert np.max(np.abs(m.mismatch_by_hand(x[converged]))) < 1e-9
    short = steps <= 12
    assert short.sum() > 150
    np.testing.assert_array_equal(steps[short], steps_np[short])
    np.testing.assert_allclose(x[short], x_np[short], rtol=0, atol=1e-9)
    np.testing.assert_allclose(residual[short], residual_np[short], rtol=0, atol=1e-12)
    same = (steps == steps_np) & np.isclose(x, x_np, rtol=0, atol=1e-9).all(axis=1)
    assert same.mean() > 0.95
    found, _ = m.distinct_solutions(x, converged)
    found_np, _ = m.distinct_solutions(x_np, residual_np <= m.TOL)
    assert len(found) == 4 and sorted(map(tuple, found)) == sorted(map(tuple, found_np))


def test_pendulum_loss_and_gradient_match_numpy_and_finite_differences():
    m = load("pendulum_fit")
    observed = m.observations()
    params = np.array([5.0, 0.1])
    np.testing.assert_allclose(m.fast_loss(params, observed), m.loss(params, observed), rtol=1e-12)
    g = m.fast_grad(params, observed)
    eps = 1e-6
    fd = [(m.loss(params + eps * e, observed) - m.loss(params - eps * e, observed)) / (2 * eps)
          for e in np.eye(2)]
    np.testing.assert_allclose(g, fd, rtol=1e-6)


def test_pendulum_fit_recovers_the_parameters():
    m = load("pendulum_fit")
    params, value = m.fit(m.observations(), np.array([5.0, 0.1]))
    np.testing.assert_allclose(params, [9.81 / 1.5, 0.35], rtol=0.02)
    assert value < 2e-4            # the observations' noise variance is 1e-4


def test_monte_carlo_estimates_match_the_closed_form():
    """The compiled Monte Carlo price is within 5 standard errors of Black-Scholes' closed
    form; the estimate from a key equals the same computation in NumPy on the same draws
    (the independent reference generator of tests/random); the strip shares its paths."""
    from compiler import random
    from tests.random import reference as R
    m = load("monte_carlo")
    args = (100.0, 105.0, 1.0, 0.03, 0.2)
    exact = m.black_scholes_call(*args)
    est, err = m.price(random.key(0), *args)
    assert abs(est - exact) < 5 * err and 0.005 < err < 0.05
    z = R.normal(R.key(0), (1000,))
    small = load_small_paths(m, 1000)
    spot, strike, years, rate, vol = args
    final = spot * np.exp((rate - 0.5 * vol * vol) * years + vol * np.sqrt(years) * z)
    want = np.mean(np.maximum(final - strike, 0.0)) * np.exp(-rate * years)
    assert abs(small(random.key(0), *args)[0] - want) < 1e-11 * want
    strikes = np.array([90.0, 100.0, 110.0])
    strip = m.price_strip(100.0, strikes, 1.0, 0.03, 0.2)
    exact_strip = np.array([m.black_scholes_call(100.0, k, 1.0, 0.03, 0.2) for k in strikes])
    assert np.all(np.abs(strip - exact_strip) < 0.1)
    assert np.all(np.diff(strip) < 0)        # common paths: monotone in the strike


def load_small_paths(m, paths):
    """The example's estimator with fewer paths (a compiled copy; PATHS is a global)."""
    import types
    from compiler import jit
    fn = types.FunctionType(m.mc_call.__code__, {**m.mc_call.__globals__, "PATHS": paths})
    return jit(fn)


def test_heat_inplace_updates_the_plate_as_numpy():
    m = load("heat_inplace")
    want, got = m.initial_plate(32, 40), m.initial_plate(32, 40)
    peak_want = m.step(want, 0.2, 7)
    peak_got = m.fast_step(got, 0.2, 7)
    np.testing.assert_allclose(got, want, rtol=1e-13)
    assert peak_got == peak_want
    plates, expect = np.stack([m.initial_plate(16, 16)] * 3), np.stack([m.initial_plate(16, 16)] * 3)
    m.fast_step(plates[1], 0.2, 3)
    m.step(expect[1], 0.2, 3)
    np.testing.assert_allclose(plates, expect, rtol=1e-13)
    for g, w in zip(m.fast_hot_fraction(got, 30.0), m.hot_fraction(want, 30.0)):
        np.testing.assert_allclose(g, w, rtol=1e-13)


def test_mandelbrot_image_matches_numpy():
    m = load("mandelbrot")
    c = m.grid(height=60, width=90)
    counts = m.fast_escape_counts(c, 40)
    want = m.escape_counts(c, 40)
    assert counts.dtype == want.dtype == np.uint8
    np.testing.assert_array_equal(counts, want)
    np.testing.assert_array_equal(m.fast_render(counts, 40), m.render(want, 40))


def test_molecular_forces_match_analytic_numpy_and_finite_differences():
    """Energy, -grad and the Hessian's eigenvalues of 9 conformers (one chunk of 8 and a partial
    one) equal NumPy's analytic ones; forces agree with central differences of the NumPy energy,
    the compiled Hessian with central differences of the analytic NumPy forces."""
    m = load("molecular_forces")
    pos, masses = m.conformers(9, seed=4)
    energy, forces, freqs = m.properties(pos, masses)
    e_ref, f_ref, w_ref = m.properties_numpy(pos, masses)
    f_scale = np.abs(f_ref).max()
    np.testing.assert_allclose(energy, e_ref, rtol=1e-12)
    np.testing.assert_allclose(forces, f_ref, rtol=1e-10, atol=1e-12 * f_scale)
    np.testing.assert_allclose(m.forces(pos), f_ref, rtol=1e-10, atol=1e-12 * f_scale)
    np.testing.assert_allclose(forces[3], m.finite_difference_forces(pos[3]), rtol=1e-6, atol=1e-7 * f_scale)
    h = m.hessian_one(pos[3]).reshape(39, 39)
    h_fd = m.finite_difference_hessian(pos[3])
    np.testing.assert_allclose(h, h_fd, rtol=1e-5, atol=1e-7 * np.abs(h_fd).max())
    eig, eig_ref = freqs * np.abs(freqs), w_ref * np.abs(w_ref)
    np.testing.assert_allclose(eig, eig_ref, rtol=1e-9, atol=1e-11 * np.abs(eig_ref).max())
    assert np.sum(np.abs(eig[0]) < 1e-8 * np.abs(eig[0]).max()) == 3    # the translations (rotations only at rest)


def test_per_example_gradients_clip_as_a_numpy_loop():
    """The compiled clipped mean gradient equals a Python loop with the backward pass by hand,
    at a clip norm that clips some examples and not others; a DP-SGD step with the same noise
    draws gives the same parameters."""
    m = load("per_example_gradients")
    params = m.init_params(seed=3)
    x, y = m.make_batch(24, seed=5)
    norms = [np.sqrt(sum(np.sum(g * g) for g in m.example_gradient_numpy(params, xi, yi))) for xi, yi in zip(x, y)]
    clip = float(np.median(norms))
    got = m.fast_clipped_mean_gradient(params, x, y, clip)
    want = m.clipped_mean_gradient_numpy(params, x, y, clip)
    assert [np.shape(g) for g in got] == [np.shape(p) for p in params]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-14)
    stepped = m.dp_sgd_step(params, x, y, np.random.default_rng(7))
    expected = m.dp_sgd_step(params, x, y, np.random.default_rng(7), gradient=m.clipped_mean_gradient_numpy)
    for s, e in zip(stepped, expected):
        np.testing.assert_allclose(s, e, rtol=1e-12, atol=1e-14)


def test_stiff_ode_implicit_euler_matches_numpy_and_radau():
    """The compiled implicit Euler trajectory equals the same scheme in NumPy (hand-written
    Jacobian), also batched over rate constants, conserves mass, and follows the reference
    solution (SciPy's Radau, or NumPy with finer steps) to the first-order scheme's accuracy."""
    m = load("stiff_ode")
    y0, steps = np.array([1.0, 0.0, 0.0]), m.step_sizes(300)
    got = m.fast_integrate(y0, steps, m.RATES)
    np.testing.assert_allclose(got, m.integrate_numpy(y0, steps, m.RATES), rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-13)
    ref, _ = m.reference(y0, steps, m.RATES)
    assert np.all(np.max(np.abs(got - ref), axis=0) < 0.02 * np.max(np.abs(ref), axis=0))
    rates = m.rate_batch(3, seed=2)
    batch = m.fast_integrate_batch(y0, steps, rates)
    np.testing.assert_allclose(batch, m.integrate_numpy_batch(y0, steps, rates), rtol=1e-9, atol=1e-14)
