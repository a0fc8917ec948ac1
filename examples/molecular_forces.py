"""Forces, Hessians and vibrational frequencies of Lennard-Jones clusters, batched over conformers.

The energy of one conformer is written once, as NumPy code over its atom
positions (all pairs at once, the diagonal masked so that no 1/0 appears).
Everything else is derived from it: the forces are `-grad(energy)`, the Hessian
is `hessian(energy)`, and the vibrational frequencies are the square roots of
the eigenvalues of the mass-weighted Hessian (`np.linalg.eigvalsh`, compiled
too). `vmap` batches the whole per-conformer computation over many conformers,
into one kernel.

The NumPy version is what one writes by hand: the analytic forces and the
analytic pair Hessian (2 u'(s) I + 4 u''(s) d d^T per pair, s = |d|^2),
vectorized over conformers, then `np.linalg.eigvalsh`. The script checks the
compiled forces against the analytic ones and central finite differences of
the energy, the compiled Hessian against finite differences of the analytic
forces, and the frequencies against NumPy's.

Sizes: 13 atoms (39 coordinates), 512 conformers (the tests use fewer).

signature: properties(pos: f64[b, n, 3], masses: f64[n]) -> (f64[b], f64[b, n, 3], f64[b, 3n])
# run: python examples/molecular_forces.py
# bench: python examples/molecular_forces.py   (prints ms per batch of conformers, aotx vs NumPy)
"""
import time

import numpy as np

from compiler import grad, hessian, jit, vmap


def lj_energy(pos):
    """Lennard-Jones energy (epsilon = sigma = 1) of one conformer, pos of shape (n, 3)."""
    n = pos.shape[0]
    eye = np.eye(n)
    d = pos[:, None, :] - pos[None, :, :]
    r2 = np.sum(d * d, axis=-1) + eye                # 1 on the diagonal: no division by zero
    inv6 = (1.0 / r2) ** 3
    return 2.0 * np.sum((1.0 - eye) * (inv6 * inv6 - inv6))   # each pair counted twice


def conformer_properties(pos, masses):
    """Energy, forces and vibrational frequencies (sqrt of the mass-weighted Hessian's eigenvalues)."""
    n = pos.shape[0]
    energy = lj_energy(pos)
    forces = -grad(lj_energy)(pos)
    h = hessian(lj_energy)(pos).reshape(3 * n, 3 * n)
    w = 1.0 / np.sqrt(np.repeat(masses, 3))
    eig = np.linalg.eigvalsh(h * w[:, None] * w[None, :])
    freqs = np.sign(eig) * np.sqrt(np.abs(eig))      # imaginary modes as negative numbers
    return energy, forces, freqs


# chunk_size=8: 8 conformers at a time. The Hessian's intermediates are 39 tangents x 13 x 13
# pairs x 3 doubles per conformer; for the whole batch at once (80 MB for 512 conformers) they
# stream through memory, and the kernel was 3.5x slower than in chunks of 8 (docs/vmap.md).
properties = jit(vmap(conformer_properties, in_dims=(0, None), chunk_size=8))


def conformer_forces(pos):
    return -grad(lj_energy)(pos)


forces = jit(vmap(conformer_forces))                 # the forces alone, as a dynamics step needs them


# --- the NumPy version, derived by hand -------------------------------------------------------


def pair_terms(pos):
    """Pair differences d (b, n, n, 3), s = |d|^2 with 1 on the diagonal, and the off-diagonal mask."""
    n = pos.shape[-2]
    d = pos[..., :, None, :] - pos[..., None, :, :]
    eye = np.eye(n)
    s = np.sum(d * d, axis=-1) + eye
    return d, s, 1.0 - eye


def energy_numpy(pos):
    d, s, off = pair_terms(pos)
    inv6 = s ** -3
    return 2.0 * np.sum(off * (inv6 * inv6 - inv6), axis=(-2, -1))


def forces_numpy(pos):
    """F_i = sum_j 24 (2 s^-6 - s^-3) / s * d_ij."""
    d, s, off = pair_terms(pos)
    inv6 = s ** -3
    coef = off * 24.0 * (2.0 * inv6 * inv6 - inv6) / s
    return np.sum(coef[..., None] * d, axis=-2)


def hessian_numpy(pos):
    """The analytic Hessian (b, 3n, 3n): u(s) = 4 (s^-6 - s^-3) per pair, s = |x_i - x_j|^2."""
    d, s, off = pair_terms(pos)
    n = pos.shape[-2]
    du = off * 4.0 * (-6.0 * s ** -7 + 3.0 * s ** -4)
    d2u = off * 4.0 * (42.0 * s ** -8 - 12.0 * s ** -5)
    block = 2.0 * du[..., None, None] * np.eye(3) + 4.0 * d2u[..., None, None] * d[..., :, None] * d[..., None, :]
    h = -block                                               # (b, n, n, 3, 3): d^2E / dx_i dx_j
    idx = np.arange(n)
    h[..., idx, idx, :, :] = np.sum(block, axis=-3)
    return np.swapaxes(h, -3, -2).reshape(*pos.shape[:-2], 3 * n, 3 * n)


def properties_numpy(pos, masses):
    w = 1.0 / np.sqrt(np.repeat(masses, 3))
    eig = np.linalg.eigvalsh(hessian_numpy(pos) * w[:, None] * w[None, :])
    return energy_numpy(pos), forces_numpy(pos), np.sign(eig) * np.sqrt(np.abs(eig))


# --- inputs and checks ------------------------------------------------------------------------


def icosahedron():
    """The 13-atom Lennard-Jones minimum: a centred icosahedron at the pair distance 2^(1/6)."""
    phi = (1.0 + np.sqrt(5.0)) / 2.0
    v = np.array([[0, s1, s2 * phi] for s1 in (-1, 1) for s2 in (-1, 1)], dtype=float)
    shell = np.concatenate([v, np.roll(v, 1, axis=1), np.roll(v, 2, axis=1)])
    shell *= 1.0 / np.linalg.norm(shell[0])
    return np.concatenate([np.zeros((1, 3)), shell * 2.0 ** (1.0 / 6.0) * 0.951])


def conformers(count=512, jitter=0.03, seed=0):
    """`count` perturbed copies of the icosahedron, and argon-like masses (one heavier atom)."""
    rng = np.random.default_rng(seed)
    base = icosahedron()
    masses = np.ones(base.shape[0])
    masses[0] = 2.0
    return base + rng.normal(0.0, jitter, (count, *base.shape)), masses


def finite_difference_forces(pos, eps=1e-6):
    """-dE/dx by central differences of the NumPy energy, for one conformer."""
    out = np.zeros(pos.size)
    for k in range(pos.size):
        e = np.zeros(pos.size)
        e[k] = eps
        out[k] = -(energy_numpy(pos + e.reshape(pos.shape)) - energy_numpy(pos - e.reshape(pos.shape))) / (2 * eps)
    return out.reshape(pos.shape)


def finite_difference_hessian(pos, eps=1e-6):
    """-dF/dx by central differences of the analytic NumPy forces, for one conformer: (3n, 3n)."""
    cols = []
    for k in range(pos.size):
        e = np.zeros(pos.size)
        e[k] = eps
        diff = forces_numpy(pos + e.reshape(pos.shape)) - forces_numpy(pos - e.reshape(pos.shape))
        cols.append(-diff.ravel() / (2 * eps))
    h = np.stack(cols, axis=1)
    return 0.5 * (h + h.T)


hessian_one = jit(hessian(lj_energy))


def check(pos, masses):
    """Compares the compiled results with NumPy; returns the largest relative differences."""
    energy, f, freqs = properties(pos, masses)
    e_ref, f_ref, w_ref = properties_numpy(pos, masses)
    np.testing.assert_allclose(energy, e_ref, rtol=1e-12)
    np.testing.assert_allclose(forces(pos), f_ref, rtol=1e-10, atol=1e-10 * np.abs(f_ref).max())
    np.testing.assert_allclose(f, f_ref, rtol=1e-10, atol=1e-10 * np.abs(f_ref).max())
    np.testing.assert_allclose(f[0], finite_difference_forces(pos[0]), rtol=1e-6, atol=1e-6 * np.abs(f_ref).max())
    h = hessian_one(pos[0]).reshape(pos[0].size, pos[0].size)
    h_fd = finite_difference_hessian(pos[0])
    np.testing.assert_allclose(h, h_fd, rtol=1e-5, atol=1e-6 * np.abs(h_fd).max())
    eig, eig_ref = freqs * np.abs(freqs), w_ref * np.abs(w_ref)        # the eigenvalues (zero modes ~1e-13)
    np.testing.assert_allclose(eig, eig_ref, rtol=1e-9, atol=1e-10 * np.abs(eig_ref).max())
    return {
        "forces": np.max(np.abs(f - f_ref)) / np.abs(f_ref).max(),
        "hessian vs finite differences": np.max(np.abs(h - h_fd)) / np.abs(h_fd).max(),
        "Hessian eigenvalues": np.max(np.abs(eig - eig_ref)) / np.abs(eig_ref).max(),
    }


def best_time(fn, *args, repeat=5):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best


def main():
    pos, masses = conformers()
    start = time.perf_counter()
    properties(pos, masses)                                  # the first call compiles
    compile_s = time.perf_counter() - start
    errors = check(pos, masses)
    energy, _, freqs = properties(pos, masses)
    b, n = pos.shape[:2]
    print(f"{b} conformers of {n} Lennard-Jones atoms: mean energy {energy.mean():.9f}, "
          f"highest frequency {freqs.max():.6f} (reduced units)")
    print("agree with NumPy: " + ", ".join(f"{k} {v:.1e}" for k, v in errors.items()))
    t_aotx, t_numpy = best_time(properties, pos, masses), best_time(properties_numpy, pos, masses)
    rows = [("aotx  vmap(energy, -grad, hessian, eigvalsh)", t_aotx, f"first call incl. compile {compile_s:.1f} s"),
            ("NumPy analytic energy, forces, Hessian, eigvalsh", t_numpy, f"NumPy/aotx {t_numpy / t_aotx:.2f}")]
    t_aotx, t_numpy = best_time(forces, pos), best_time(forces_numpy, pos)
    rows += [("aotx  vmap(-grad(energy)) alone", t_aotx, ""),
             ("NumPy analytic forces alone", t_numpy, f"NumPy/aotx {t_numpy / t_aotx:.2f}")]
    for label, t, note in rows:
        print(f"{label:50s} {1e3 * t:8.2f} ms" + (f"   ({note})" if note else ""))

if __name__ == "__main__":
    main()
