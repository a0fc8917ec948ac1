"""Differentially private SGD for a small MLP: per-example gradients, clipped, averaged, noised.

DP-SGD needs the gradient of the loss of each example separately, so that each
one can be clipped to norm at most C before they are averaged; Gaussian noise
of standard deviation sigma C / batch is then added to the mean. With aotx the
per-example gradients are `vmap(grad(loss), in_dims=(None, 0, 0))` of the loss
of one example, and the clipping and averaging are NumPy code around it: the
whole `clipped_mean_gradient` is one compiled kernel. The noise is drawn with
NumPy's generator outside the kernel.

The NumPy version is the reference a practitioner checks against: a Python
loop over the examples with the backward pass of the MLP written by hand. The
script also times that backward pass vectorized over the batch by hand, which
needs the identity |outer(x, dz)|^2 = |x|^2 |dz|^2 for the norms.

The model: 32 inputs, 64 tanh units, one output, squared error; a batch of
256 examples (the tests use fewer).

signature: clipped_mean_gradient(params: (f64[32, 64], f64[64], f64[64], f64[]), x: f64[b, 32], y: f64[b], clip: float) -> (the params' shapes)
# run: python examples/per_example_gradients.py
# bench: python examples/per_example_gradients.py   (prints ms per DP-SGD gradient, aotx vs a NumPy loop)
"""
import time

import numpy as np

from compiler import grad, jit, vmap

SIZES = (32, 64)
CLIP = 1.0
NOISE_MULTIPLIER = 1.1
LEARNING_RATE = 0.05


def predict(params, x):
    """The MLP on one example x of shape (32,): a scalar."""
    w1, b1, w2, b2 = params
    return np.tanh(x @ w1 + b1) @ w2 + b2


def loss(params, x, y):
    """Squared error of one example."""
    return 0.5 * (predict(params, x) - y) ** 2


def clipped_mean_gradient(params, x, y, clip):
    """The DP-SGD gradient before noise: each example's gradient scaled to norm <= clip, averaged."""
    grads = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)      # each of shape (batch, *p.shape)
    batch = x.shape[0]
    sq_norm = sum(np.sum(g.reshape(batch, -1) ** 2, axis=1) for g in grads)
    scale = np.minimum(1.0, clip / np.maximum(np.sqrt(sq_norm), 1e-12))
    return tuple(np.tensordot(scale, g, axes=1) / batch for g in grads)


fast_clipped_mean_gradient = jit(clipped_mean_gradient)


def dp_sgd_step(params, x, y, rng, gradient=fast_clipped_mean_gradient):
    """One DP-SGD step: the clipped mean gradient plus Gaussian noise (sigma * C / batch)."""
    mean = gradient(params, x, y, CLIP)
    std = NOISE_MULTIPLIER * CLIP / x.shape[0]
    return tuple(p - LEARNING_RATE * (g + rng.normal(0.0, std, np.shape(g))) for p, g in zip(params, mean))


# --- the NumPy version: a loop over examples, the backward pass by hand -------------------------


def example_gradient_numpy(params, x, y):
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    r = h @ w2 + b2 - y                       # d loss / d prediction
    dz = r * w2 * (1.0 - h * h)               # back through tanh
    return np.outer(x, dz), dz, r * h, r


def clipped_mean_gradient_numpy(params, x, y, clip):
    total = [np.zeros(np.shape(p)) for p in params]
    for xi, yi in zip(x, y):
        g = example_gradient_numpy(params, xi, yi)
        norm = np.sqrt(sum(np.sum(gi * gi) for gi in g))
        scale = min(1.0, clip / max(norm, 1e-12))
        for t, gi in zip(total, g):
            t += scale * gi
    return tuple(t / x.shape[0] for t in total)


def clipped_mean_gradient_numpy_vectorized(params, x, y, clip):
    """The same, vectorized over the batch by hand (the fastest NumPy version, for the timing)."""
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)                                  # (batch, hidden)
    r = h @ w2 + b2 - y                                       # (batch,)
    dz = r[:, None] * w2 * (1.0 - h * h)
    # |outer(x, dz)|^2 = |x|^2 |dz|^2
    sq_norm = np.sum(x * x, axis=1) * np.sum(dz * dz, axis=1) + np.sum(dz * dz, axis=1) + r * r * np.sum(h * h, axis=1) + r * r
    scale = np.minimum(1.0, clip / np.maximum(np.sqrt(sq_norm), 1e-12)) / x.shape[0]
    sdz = scale[:, None] * dz
    return x.T @ sdz, sdz.sum(axis=0), (scale * r) @ h, np.sum(scale * r)


def init_params(seed=0):
    rng = np.random.default_rng(seed)
    n_in, n_hidden = SIZES
    return (rng.normal(0.0, 1.0 / np.sqrt(n_in), (n_in, n_hidden)), np.zeros(n_hidden),
            rng.normal(0.0, 1.0 / np.sqrt(n_hidden), n_hidden), np.array(0.0))


def make_batch(batch=256, seed=1):
    """Inputs and noisy targets of a fixed random 'teacher' function."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, SIZES[0]))
    y = np.sin(x[:, 0]) + 0.5 * x[:, 1] * x[:, 2] + 0.1 * rng.standard_normal(batch)
    return x, y


def best_time(fn, *args, repeat=7):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best


def main():
    params = init_params()
    x, y = make_batch()
    start = time.perf_counter()
    got = fast_clipped_mean_gradient(params, x, y, CLIP)              # the first call compiles
    compile_s = time.perf_counter() - start
    want = clipped_mean_gradient_numpy(params, x, y, CLIP)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-13)
    diff = max(np.max(np.abs(g - w)) for g, w in zip(got, want))
    norms = np.array([np.sqrt(sum(np.sum(g * g) for g in example_gradient_numpy(params, xi, yi)))
                      for xi, yi in zip(x, y)])
    print(f"DP-SGD gradient, MLP {SIZES[0]}-{SIZES[1]}-1 (tanh), batch {x.shape[0]}, clip {CLIP}: "
          f"agrees with the NumPy loop (max abs difference {diff:.1e}); {np.mean(norms > CLIP):.0%} of the examples clipped")
    rng = np.random.default_rng(2)
    before = np.mean(loss(params, x, y))        # the one-example loss also takes a batch
    for _ in range(50):
        params = dp_sgd_step(params, x, y, rng)
    print(f"50 noisy DP-SGD steps: mean training loss {before:.4f} -> {np.mean(loss(params, x, y)):.4f}")
    t_aotx = best_time(fast_clipped_mean_gradient, params, x, y, CLIP)
    t_numpy = best_time(clipped_mean_gradient_numpy, params, x, y, CLIP)
    print(f"aotx  vmap(grad(loss)) + clipping: {1e3 * t_aotx:8.3f} ms   (first call incl. compile {compile_s:.1f} s)")
    print(f"NumPy loop, hand-written backward: {1e3 * t_numpy:8.3f} ms   ({t_numpy / t_aotx:.1f}x slower)")
    for g, w in zip(clipped_mean_gradient_numpy_vectorized(params, x, y, CLIP), clipped_mean_gradient_numpy(params, x, y, CLIP)):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-13)
    t_vec = best_time(clipped_mean_gradient_numpy_vectorized, params, x, y, CLIP)
    print(f"NumPy vectorized by hand:          {1e3 * t_vec:8.3f} ms   (NumPy/aotx {t_vec / t_aotx:.2f}: "
          f"it never forms the per-example gradients)")


if __name__ == "__main__":
    main()
