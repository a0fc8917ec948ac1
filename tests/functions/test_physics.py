"""Physics kernels written in plain NumPy: compiled vs NumPy."""
from __future__ import annotations

import math

import numpy as np

from tests import fd
from tests.functions.helpers import both_floats, check, randn, rng, uniform


def lattice(n, dtype, spacing=1.2, jitter=0.1, seed=0):
    """n points on a jittered cubic lattice (no two points too close)."""
    side = math.ceil(n ** (1 / 3))
    grid = np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), axis=-1).reshape(-1, 3)[:n]
    return (grid * spacing + rng(seed).uniform(-jitter, jitter, (n, 3))).astype(dtype)


def pairwise_distances(a, b):
    d = a[:, None, :] - b[None, :, :]
    return np.sqrt(np.sum(d * d, axis=-1))


def pairwise_distances_trick(a, b):
    aa = np.sum(a * a, axis=1)[:, None]
    bb = np.sum(b * b, axis=1)[None, :]
    return np.sqrt(np.maximum(aa + bb - 2 * a @ b.T, 0.0))


@both_floats
def test_pairwise_distances_broadcasting(dtype):
    r = rng(60)
    check(pairwise_distances, randn(r, 9, 3, dtype=dtype), randn(r, 7, 3, dtype=dtype))


@both_floats
def test_pairwise_distances_dot_trick(dtype):
    r = rng(61)
    a, b = randn(r, 9, 3, dtype=dtype), randn(r, 7, 3, dtype=dtype)
    got = check(pairwise_distances_trick, a, b, rtol=1e-3 if dtype == np.float32 else 1e-9, atol=1e-3)
    np.testing.assert_allclose(got, pairwise_distances(a, b), rtol=1e-3 if dtype == np.float32 else 1e-9, atol=1e-3)


def lj_energy(pos, eps, sigma):
    n = pos.shape[0]
    d = pos[:, None, :] - pos[None, :, :]
    r2 = np.sum(d * d, axis=-1) + np.eye(n)          # keep the diagonal away from 0
    s6 = (sigma * sigma / r2) ** 3
    e = 4 * eps * (s6 * s6 - s6)
    return 0.5 * np.sum(np.where(np.eye(n, dtype=bool), 0.0, e))


def lj_forces(pos, eps, sigma):
    n = pos.shape[0]
    d = pos[:, None, :] - pos[None, :, :]
    r2 = np.sum(d * d, axis=-1) + np.eye(n)
    s6 = (sigma * sigma / r2) ** 3
    coef = 24 * eps * (2 * s6 * s6 - s6) / r2
    coef = coef * (1 - np.eye(n))
    return np.sum(coef[:, :, None] * d, axis=1)


@both_floats
def test_lennard_jones_energy(dtype):
    check(lj_energy, lattice(27, dtype), 1.0, 1.0)


@both_floats
def test_lennard_jones_forces(dtype):
    pos = lattice(20, dtype, seed=1)
    got = check(lj_forces, pos, 1.0, 1.0, rtol=1e-3 if dtype == np.float32 else 1e-10, atol=1e-3)
    np.testing.assert_allclose(got.sum(axis=0), 0.0, atol=1e-2 if dtype == np.float32 else 1e-9)


def test_lennard_jones_forces_are_minus_energy_gradient():
    """The compiled forces agree with differences of the NumPy energy."""
    pos = lattice(8, np.float64, seed=2)
    from compiler import jit
    f = jit(lj_forces)(pos, 1.0, 1.0)
    np.testing.assert_allclose(f, -fd.jacobian(lj_energy, (pos, 1.0, 1.0)), rtol=1e-5, atol=1e-6)


def coulomb_energy(pos, q):
    n = pos.shape[0]
    d = pos[:, None, :] - pos[None, :, :]
    r = np.sqrt(np.sum(d ** 2, axis=-1))
    iu = np.arange(n)[:, None] < np.arange(n)[None, :]
    return np.sum(np.where(iu, q[:, None] * q[None, :] / np.where(iu, r, 1.0), 0.0))


@both_floats
def test_coulomb_energy(dtype):
    r = rng(62)
    check(coulomb_energy, lattice(15, dtype, seed=3), uniform(r, -1, 1, 15, dtype=dtype))


def gravity_accel(pos, mass, soft):
    d = pos[None, :, :] - pos[:, None, :]
    inv = (np.sum(d * d, axis=-1) + soft * soft) ** -1.5
    return np.einsum("ij,ijk->ik", inv * mass[None, :], d)


@both_floats
def test_gravity_accelerations_einsum(dtype):
    r = rng(63)
    check(gravity_accel, randn(r, 12, 3, dtype=dtype), uniform(r, 0.5, 2, 12, dtype=dtype), 0.1,
          rtol=1e-3 if dtype == np.float32 else 1e-10, atol=1e-4)


def leapfrog(x, v, dt, k):
    for _ in range(k):
        v = v - 0.5 * dt * x          # harmonic force -x
        x = x + dt * v
        v = v - 0.5 * dt * x
    return x, v


@both_floats
def test_leapfrog_static_loop_conserves_energy(dtype):
    r = rng(64)
    x, v = randn(r, 10, dtype=dtype), randn(r, 10, dtype=dtype)
    x1, v1 = check(leapfrog, x, v, 0.05, 100, rtol=1e-3 if dtype == np.float32 else 1e-10, atol=1e-4)
    e0, e1 = 0.5 * (x * x + v * v), 0.5 * (x1 * x1 + v1 * v1)
    np.testing.assert_allclose(e1, e0, rtol=1e-2)


def verlet_lj(pos, vel, dt):
    f = lj_forces(pos, 1.0, 1.0)
    for _ in range(5):
        vel = vel + 0.5 * dt * f
        pos = pos + dt * vel
        f = lj_forces(pos, 1.0, 1.0)
        vel = vel + 0.5 * dt * f
    return pos, vel


def test_velocity_verlet_with_lennard_jones_forces():
    pos = lattice(8, np.float64, seed=4)
    check(verlet_lj, pos, np.zeros_like(pos), 1e-3)


def lorenz(s, sigma=10.0, rho=28.0, beta=8.0 / 3.0):
    x, y, z = s[0], s[1], s[2]
    return np.stack([sigma * (y - x), x * (rho - z) - y, x * y - beta * z])


def rk4_step(s, dt):
    k1 = lorenz(s)
    k2 = lorenz(s + 0.5 * dt * k1)
    k3 = lorenz(s + 0.5 * dt * k2)
    k4 = lorenz(s + dt * k3)
    return s + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


@both_floats
def test_rk4_step_lorenz(dtype):
    check(rk4_step, np.array([1.0, 1.0, 1.0], dtype), 0.01)


def rk4_trajectory(s, dt):
    out = []
    for _ in range(25):
        s = rk4_step(s, dt)
        out.append(s)
    return np.stack(out)


def test_rk4_trajectory_lorenz_float64():
    check(rk4_trajectory, np.array([1.0, 1.0, 1.0]), 0.01, rtol=1e-9, atol=1e-9)


def oscillator_energy(state, params):
    x, v = state["x"], state["v"]
    kinetic = 0.5 * params["m"] * np.sum(v * v, axis=-1)
    potential = 0.5 * params["k"] * np.sum(x * x, axis=-1)
    return {"kinetic": kinetic, "potential": potential, "total": kinetic + potential}, (x.mean(), v.mean())


@both_floats
def test_physics_energy_with_dict_and_tuple_pytrees(dtype):
    r = rng(65)
    state = {"x": randn(r, 5, 3, dtype=dtype), "v": randn(r, 5, 3, dtype=dtype)}
    check(oscillator_energy, state, {"m": 2.0, "k": np.array(0.5, dtype)})


def rotate_points(points, theta):
    c, s = np.cos(theta), np.sin(theta)
    rz = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    return points @ rz.T


def rotate_points_stack(points, theta):
    c, s = np.cos(theta), np.sin(theta)
    zero, one = np.zeros_like(c), np.ones_like(c)
    rz = np.stack([np.stack([c, -s, zero]), np.stack([s, c, zero]), np.stack([zero, zero, one])])
    return points @ rz.T


@both_floats
def test_rotation_matrix_built_with_stack(dtype):
    r = rng(66)
    check(rotate_points_stack, randn(r, 10, 3, dtype=dtype), np.array(0.7, dtype))


@both_floats
def test_rotation_matrix_built_with_np_array_of_values(dtype):
    r = rng(67)
    check(rotate_points, randn(r, 10, 3, dtype=dtype), np.array(0.7, dtype))


def rotation_2d_batch(angles, points):
    c, s = np.cos(angles), np.sin(angles)
    x, y = points[..., 0], points[..., 1]
    return np.stack([c * x - s * y, s * x + c * y], axis=-1)


@both_floats
def test_batched_2d_rotations(dtype):
    r = rng(68)
    check(rotation_2d_batch, uniform(r, -3, 3, 6, 1, dtype=dtype), randn(r, 6, 4, 2, dtype=dtype))


def quat_mul(q, r):
    w1, x1, y1, z1 = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    w2, x2, y2, z2 = r[..., 0], r[..., 1], r[..., 2], r[..., 3]
    return np.stack([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
                     w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                     w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2], axis=-1)


@both_floats
def test_quaternion_multiply(dtype):
    r = rng(69)
    check(quat_mul, randn(r, 8, 4, dtype=dtype), randn(r, 8, 4, dtype=dtype))


def quat_rotate(q, v):
    q = q / np.sqrt(np.sum(q * q, axis=-1, keepdims=True))
    qv = np.concatenate([np.zeros_like(v[..., :1]), v], axis=-1)
    conj = q * np.array([1.0, -1.0, -1.0, -1.0])
    return quat_mul(quat_mul(q, qv), conj)[..., 1:]


@both_floats
def test_quaternion_rotation_preserves_norm(dtype):
    r = rng(70)
    v = randn(r, 5, 3, dtype=dtype)
    got = check(quat_rotate, randn(r, 5, 4, dtype=dtype), v)
    np.testing.assert_allclose(np.linalg.norm(got, axis=-1), np.linalg.norm(v, axis=-1),
                               rtol=1e-4 if dtype == np.float32 else 1e-12)


def spring_chain_forces(x, k):
    stretch = x[1:] - x[:-1] - 1.0
    f = np.zeros_like(x)
    f[:-1] += k * stretch
    f[1:] -= k * stretch
    return f


@both_floats
def test_spring_chain_forces_with_updates(dtype):
    x = (np.arange(10) * 1.1 + rng(71).uniform(-0.05, 0.05, 10)).astype(dtype)
    check(spring_chain_forces, x, 3.0)


def projectile(v0, angle, g):
    t = np.linspace(0.0, 2.0, 21)
    x = v0 * np.cos(angle) * t
    y = v0 * np.sin(angle) * t - 0.5 * g * t ** 2
    return np.stack([x, np.maximum(y, 0.0)])


def test_projectile_trajectory_linspace_grid():
    check(projectile, np.float64(12.0), np.float64(0.8), 9.81)


def kinetic_temperature(vel, mass):
    ke = 0.5 * np.sum(mass[:, None] * vel ** 2)
    dof = 3 * vel.shape[0] - 3
    return ke, 2 * ke / dof


@both_floats
def test_kinetic_energy_and_temperature(dtype):
    r = rng(72)
    check(kinetic_temperature, randn(r, 20, 3, dtype=dtype), uniform(r, 1, 2, 20, dtype=dtype))
