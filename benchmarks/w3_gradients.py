"""W3: per-example gradients. An MLP 128-64-1 with tanh, squared error, batch 1024 (the
gradient of W1 alone is a fresh (1024, 128, 64) = 64 MiB output per call), and logistic
regression, D = 128, batch 4096 (ad_bench.py's `example_loss`). Peers: NumPy's hand-written
gradient (the reference), numba loops writing into NumPy-allocated outputs, torch.func,
JAX vmap(grad)."""
from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from ad_bench import example_loss, numpy_per_example
from compiler import grad, vmap
from harness import Case, Config, Skip, jax_module, module, torch_module


def mlp_loss(W1, w2, x, y):
    return (np.tanh(x @ W1) @ w2 - y) ** 2


def mlp_numpy(W1, w2, X, y):
    h = np.tanh(X @ W1)
    r = 2.0 * (h @ w2 - y)
    gh = (r[:, None] * w2) * (1.0 - h * h)
    return X[:, :, None] * gh[:, None, :], r[:, None] * h


def _numba_mlp() -> Any:
    numba = module("numba")

    @numba.njit
    def into(W1, w2, X, y, gW1, gw2):
        B, D = X.shape
        H = W1.shape[1]
        h = np.empty(H)
        for b in range(B):
            for j in range(H):
                h[j] = 0.0
            for d in range(D):
                xd = X[b, d]
                for j in range(H):
                    h[j] += xd * W1[d, j]
            out = 0.0
            for j in range(H):
                h[j] = np.tanh(h[j])
                out += h[j] * w2[j]
            r = 2.0 * (out - y[b])
            for j in range(H):
                gw2[b, j] = r * h[j]
                h[j] = r * w2[j] * (1.0 - h[j] * h[j])
            for d in range(D):
                xd = X[b, d]
                for j in range(H):
                    gW1[b, d, j] = xd * h[j]

    def call(W1, w2, X, y):
        gW1, gw2 = np.empty((X.shape[0], *W1.shape)), np.empty((X.shape[0], W1.shape[1]))
        into(W1, w2, X, y, gW1, gw2)
        return gW1, gw2
    return call


def _numba_logistic() -> Any:
    numba = module("numba")

    @numba.njit
    def into(w, xs, ys, out):
        for b in range(xs.shape[0]):
            z = 0.0
            for d in range(xs.shape[1]):
                z += xs[b, d] * w[d]
            s = -ys[b] / (1.0 + np.exp(ys[b] * z))
            for d in range(xs.shape[1]):
                out[b, d] = s * xs[b, d]

    def call(w, xs, ys):
        out = np.empty(xs.shape)
        into(w, xs, ys, out)
        return out
    return call


def peers(cfg: Config, fn: Any, numpy_fn: Any, numba_fn: Any, torch_loss: Any, jax_loss: Any,
          args: tuple, argnums: Any) -> dict[str, Any]:
    """aotx vmap(grad), NumPy by hand, numba, torch.func and JAX for per-example gradients of
    `fn(*params, x, y)` batched over the last two arguments."""
    in_dims = (None,) * (len(args) - 2) + (0, 0)

    def aotx():
        k = vmap(grad(fn, argnums=argnums), in_dims=in_dims)
        return lambda: k(*args)

    def numba():
        nb = numba_fn()
        return lambda: nb(*args)

    def torch_func(compiled: bool) -> Any:
        def make():
            if compiled and cfg.tiny:
                raise Skip("torch.compile skipped with --tiny (compile time)")
            t = torch_module(cfg)
            f = t.func.vmap(t.func.grad(lambda *a: torch_loss(t, *a), argnums=argnums), in_dims=in_dims)
            if compiled:
                t._dynamo.reset()      # one code object for every case: a fresh cache, or eager after 8
                f = t.compile(f, dynamic=False)
            targs = [t.from_numpy(a) for a in args]
            return lambda: f(*targs)
        return make

    def jax():
        j = jax_module()
        jnp = module("jax.numpy")
        f = j.jit(j.vmap(j.grad(lambda *a: jax_loss(jnp, *a), argnums=argnums), in_axes=in_dims))
        return lambda: j.block_until_ready(f(*args))

    return {"aotx": aotx, "numpy": lambda: (lambda: numpy_fn(*args)), "numba": numba, "jax": jax,
            "torch": torch_func(False), "torch.compile": torch_func(True)}


def cases(cfg: Config) -> Iterator[Case]:
    rng = np.random.default_rng(0)
    batch = cfg.size(1024, 16)
    W1, w2 = rng.standard_normal((128, 64)) / 11, rng.standard_normal(64) / 8
    X, y = rng.standard_normal((batch, 128)), rng.standard_normal(batch)
    yield Case(f"MLP 128-64-1 per-example grads, batch {batch}", peers(
        cfg, mlp_loss, mlp_numpy, _numba_mlp,
        lambda t, W1, w2, x, y: (t.tanh(x @ W1) @ w2 - y) ** 2,
        lambda jnp, W1, w2, x, y: (jnp.tanh(x @ W1) @ w2 - y) ** 2,
        (W1, w2, X, y), (0, 1)), per=batch, rtol=1e-9, atol=1e-12)

    yield from logistic(cfg, cfg.size(4096, 16))


def logistic(cfg: Config, batch: int) -> Iterator[Case]:
    rng = np.random.default_rng(1)
    w = rng.standard_normal(128) / 11
    xs, ys = rng.standard_normal((batch, 128)), np.sign(rng.standard_normal(batch))
    yield Case(f"logistic regression per-example grads, D=128, batch {batch}", peers(
        cfg, example_loss, numpy_per_example, _numba_logistic,
        lambda t, w, x, y: t.log1p(t.exp(-y * (x @ w))),
        lambda jnp, w, x, y: jnp.log1p(jnp.exp(-y * (x @ w))),
        (w, xs, ys), 0), per=batch, rtol=1e-9, atol=1e-12)
