"""Cost of reverse mode: time(grad(f)) / time(f) for five realistic scalar functions,
and per-example gradients of logistic regression vs a hand-written NumPy gradient.

    python benchmarks/ad_bench.py
"""
from __future__ import annotations

import numpy as np

from _timing import best, run_script  # noqa: E402  (benchmarks/ is the script's directory)
from compiler import grad, jit, vmap

rng = np.random.default_rng(0)


def logistic_loss(w, x, y):
    z = x @ w
    return np.mean(np.log1p(np.exp(-y * z))) + 1e-3 * np.sum(w * w)


def mlp_loss(w1, w2, x, y):
    h = np.tanh(x @ w1)
    out = h @ w2
    return np.mean((out - y) ** 2)


def lennard_jones(pos):
    d = pos[:, None, :] - pos[None, :, :]
    r2 = np.sum(d * d, axis=-1) + np.eye(pos.shape[0])
    inv6 = 1.0 / r2**3
    e = 4.0 * (inv6 * inv6 - inv6)
    return 0.5 * np.sum(e * (1.0 - np.eye(pos.shape[0])))


def softmax_xent(w, x, labels_onehot):
    logits = x @ w
    m = np.max(logits, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(logits - m), axis=1, keepdims=True)) + m
    return -np.mean(np.sum(labels_onehot * (logits - lse), axis=1))


def polynomial(x, c):
    acc = np.zeros_like(x)
    for k in range(8):
        acc = acc * x + c[k]
    return np.sum(acc)




def example_loss(w, x, y):
    """Logistic loss of one example (per-example gradients: vmap(grad(example_loss)))."""
    return np.log1p(np.exp(-y * (x @ w)))


def numpy_per_example(w, xs, ys):
    """The per-example gradients of `example_loss`, written by hand in NumPy."""
    z = xs @ w
    s = -ys / (1.0 + np.exp(ys * z))
    return s[:, None] * xs


def cases():
    x, y = rng.standard_normal((2048, 128)), np.sign(rng.standard_normal(2048))
    yield "logistic loss", logistic_loss, (rng.standard_normal(128), x, y)
    yield "MLP loss", mlp_loss, (rng.standard_normal((64, 128)) * 0.1, rng.standard_normal((128, 8)) * 0.1,
                                 rng.standard_normal((512, 64)), rng.standard_normal((512, 8)))
    grid = np.stack(np.meshgrid(*[np.arange(5.0)] * 3), -1).reshape(-1, 3) * 1.1
    yield "Lennard-Jones", lennard_jones, (grid + 0.01 * rng.standard_normal(grid.shape),)
    labels = np.eye(10)[rng.integers(0, 10, 1024)]
    yield "softmax xent", softmax_xent, (rng.standard_normal((256, 10)) * 0.1, rng.standard_normal((1024, 256)),
                                         labels)
    yield "polynomial", polynomial, (rng.standard_normal(1_000_000), rng.standard_normal(8))


def main() -> None:
    print(f"{'function':16} {'f (ms)':>9} {'grad f (ms)':>12} {'ratio':>6}")
    for name, f, args in cases():
        fk, gk = jit(f), grad(f)
        np.testing.assert_allclose(fk(*args), f(*args), rtol=1e-9)
        tf, tg = best(lambda: fk(*args)), best(lambda: gk(*args))
        print(f"{name:16} {1e3 * tf:9.3f} {1e3 * tg:12.3f} {tg / tf:6.2f}")

    w = rng.standard_normal(128)
    xs, ys = rng.standard_normal((4096, 128)), np.sign(rng.standard_normal(4096))

    per_example = vmap(grad(example_loss), in_dims=(None, 0, 0))

    np.testing.assert_allclose(per_example(w, xs, ys), numpy_per_example(w, xs, ys), rtol=1e-9, atol=1e-12)
    ta, tn = best(lambda: per_example(w, xs, ys)), best(lambda: numpy_per_example(w, xs, ys))
    print("\nper-example gradients, logistic regression (w: 128, batch 4096):")
    print(f"  aotx vmap(grad) {1e3 * ta:.3f} ms   hand-written NumPy {1e3 * tn:.3f} ms   ({tn / ta:.2f}x)")


MEMORY_CASE = """
import resource, sys
import numpy as np
from compiler import jacrev
def f(x):
    h = np.tanh(np.outer(x, x[:256]) @ np.ones(256))   # a (n, 256) intermediate per basis vector
    return h * x
x = np.random.default_rng(0).standard_normal(1500) / 8
chunk = None if sys.argv[1] == "none" else int(sys.argv[1])
jac = jacrev(f, chunk_size=chunk)
jac(x[:300])                                           # warm up the runtime
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = jac(x)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(after - before)
"""


def memory() -> None:
    print("\npeak RSS growth of one call, jacrev of f: R^1500 -> R^1500 with a (1500, 256) intermediate "
          "(the Jacobian alone: 17 MiB):")
    for chunk in ("none", "256", "16"):
        print(f"  chunk_size={chunk:>5}: {int(run_script(MEMORY_CASE, chunk)) / 1024:8.1f} MiB")


if __name__ == "__main__":
    main()
    memory()
