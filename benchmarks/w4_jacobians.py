"""W4: Jacobians and Hessians of ``g(x) = tanh(A @ x)`` and ``f(x) = sum(tanh(A @ x)**2)`` at
n = 16, 64, 256, and vmap(jacfwd(g)) over 256 points of n = 16. The NumPy peer is the closed
form (diag(1 - t^2) A; A^T diag(2 (1 - t^2)(1 - 3 t^2)) A), which is also the reference;
numba has no automatic differentiation."""
from __future__ import annotations

from typing import Any, Iterator

import numpy as np

import compiler
from harness import Case, Config, Skip, jax_module, module, torch_module


def g(A, x):
    return np.tanh(A @ x)


def f(A, x):
    return np.sum(np.tanh(A @ x) ** 2)


def jac_closed(A, x):
    t = np.tanh(A @ x)
    return (1.0 - t * t)[:, None] * A


def hess_closed(A, x):
    t = np.tanh(A @ x)
    d = 2.0 * (1.0 - t * t) * (1.0 - 3.0 * t * t)
    return A.T @ (d[:, None] * A)


def vmap_jac_closed(A, xs):
    t = np.tanh(xs @ A.T)
    return (1.0 - t * t)[:, :, None] * A[None, :, :]


def _peers(cfg: Config, kind: str, A: np.ndarray, x: np.ndarray, closed: Any) -> dict[str, Any]:
    def aotx():
        if kind == "hessian":
            k = compiler.hessian(f, argnums=1)
        elif kind == "vmap(jacfwd)":
            k = compiler.vmap(compiler.jacfwd(g, argnums=1), in_dims=(None, 0))
        else:
            k = getattr(compiler, kind)(g, argnums=1)
        return lambda: k(A, x)

    def no_ad():
        raise Skip("numba has no automatic differentiation")

    def torch():
        t = torch_module(cfg)
        tg = lambda A, x: t.tanh(A @ x)                     # noqa: E731
        tf = lambda A, x: t.sum(t.tanh(A @ x) ** 2)        # noqa: E731
        if kind == "hessian":
            fn = t.func.hessian(tf, argnums=1)
        elif kind == "vmap(jacfwd)":
            fn = t.func.vmap(t.func.jacfwd(tg, argnums=1), in_dims=(None, 0))
        else:
            fn = getattr(t.func, kind)(tg, argnums=1)
        tA, tx = t.from_numpy(A), t.from_numpy(x)
        return lambda: fn(tA, tx)

    def jax():
        j, jnp = jax_module(), module("jax.numpy")
        jg = lambda A, x: jnp.tanh(A @ x)                   # noqa: E731
        jf = lambda A, x: jnp.sum(jnp.tanh(A @ x) ** 2)    # noqa: E731
        if kind == "hessian":
            fn = j.hessian(jf, argnums=1)
        elif kind == "vmap(jacfwd)":
            fn = j.vmap(j.jacfwd(jg, argnums=1), in_axes=(None, 0))
        else:
            fn = getattr(j, kind)(jg, argnums=1)
        fn = j.jit(fn)
        return lambda: fn(A, x).block_until_ready()

    return {"aotx": aotx, "numpy": lambda: (lambda: closed(A, x)), "numba": no_ad, "jax": jax, "torch": torch}


def cases(cfg: Config) -> Iterator[Case]:
    rng = np.random.default_rng(0)
    for n in cfg.size((16, 64, 256), (8,)):
        A, x = rng.standard_normal((n, n)) / np.sqrt(n), rng.standard_normal(n)
        for kind, closed in (("jacfwd", jac_closed), ("jacrev", jac_closed), ("hessian", hess_closed)):
            yield Case(f"{kind} n={n}", _peers(cfg, kind, A, x, closed), rtol=1e-9, atol=1e-12,
                       note="numpy: the closed form")
    points = cfg.size(256, 8)
    A, xs = rng.standard_normal((16, 16)) / 4, rng.standard_normal((points, 16))
    yield Case(f"vmap(jacfwd) {points} points n=16", _peers(cfg, "vmap(jacfwd)", A, xs, vmap_jac_closed),
               rtol=1e-9, atol=1e-12, note="numpy: the closed form")
