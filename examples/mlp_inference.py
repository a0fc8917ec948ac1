"""MLP inference: a 3-layer GELU network with a softmax head, in float32.

Parameters are a list of (weight, bias) tuples (a pytree); the batch of inputs
is the only other argument. Matrix products go to the compiler's
``dot_general``; bias, activation and the softmax are fused around them.

signature: predict(params: [(f32[i, o], f32[o])...], x: f32[b, 64]) -> f32[b, 10]
# run: python examples/mlp_inference.py
# bench: python examples/mlp_inference.py   (prints microseconds per batch, aotx vs NumPy)
"""
import math
import time

import numpy as np

from compiler import jit

SIZES = [64, 256, 128, 10]


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


def softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def predict(params, x):
    """Class probabilities for a batch `x` of shape (b, 64)."""
    for w, b in params[:-1]:
        x = gelu(x @ w + b)
    w, b = params[-1]
    return softmax(x @ w + b)


fast_predict = jit(predict)


def init_params(seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return [(rng.normal(0.0, 1.0 / math.sqrt(m), (m, n)).astype(dtype), rng.normal(0.0, 0.1, n).astype(dtype))
            for m, n in zip(SIZES[:-1], SIZES[1:])]


def make_batch(batch=128, seed=1, dtype=np.float32):
    return np.random.default_rng(seed).normal(size=(batch, SIZES[0])).astype(dtype)


def best_time(fn, *args, repeat=20):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best


def main():
    params, x = init_params(), make_batch()
    probs = fast_predict(params, x)                      # the first call compiles
    expected = predict(params, x)
    np.testing.assert_allclose(probs, expected, rtol=1e-4, atol=1e-6)
    agree = np.mean(probs.argmax(axis=1) == expected.argmax(axis=1))
    print(f"batch of {x.shape[0]}: predicted classes agree with NumPy on {agree:.0%}; "
          f"mean max probability {probs.max(axis=1).mean():.6f} (NumPy {expected.max(axis=1).mean():.6f})")
    t_aotx, t_numpy = best_time(fast_predict, params, x), best_time(predict, params, x)
    print(f"aotx  {1e6 * t_aotx:9.1f} us per batch")
    print(f"NumPy {1e6 * t_numpy:9.1f} us per batch   ({t_numpy / t_aotx:.1f}x slower)")


if __name__ == "__main__":
    main()
