"""vmap: per-example work compiled by aotx vs hand-batched NumPy, and the peak
memory of chunked vs unchunked vmap.

    python benchmarks/vmap_bench.py
"""
from __future__ import annotations


import numpy as np

from _timing import best, run_script  # noqa: E402  (benchmarks/ is the script's directory)
from compiler import vmap


def per_example(w, x):
    return np.tanh(x @ w).sum()


def hand_batched(w, xs):
    return np.tanh(xs @ w).sum(axis=1)




def speed() -> None:
    rng = np.random.default_rng(0)
    w, xs = rng.standard_normal((128, 64)), rng.standard_normal((4096, 128))
    batched = vmap(per_example, in_dims=(None, 0))
    np.testing.assert_allclose(batched(w, xs), hand_batched(w, xs), rtol=1e-10)
    t_aotx, t_np = best(lambda: batched(w, xs)), best(lambda: hand_batched(w, xs))
    print("vmap(tanh(x @ w).sum()) over 4096 examples, w 128x64:")
    print(f"  aotx {1e3 * t_aotx:7.3f} ms   NumPy hand-batched {1e3 * t_np:7.3f} ms   ({t_np / t_aotx:.2f}x)")


MEMORY_CASE = """
import resource, sys
import numpy as np
from compiler import vmap
def f(w, x):
    z = w @ x                      # a (2048,) intermediate per example: materialized
    e = np.exp(z - z.max())
    return e / e.sum()
w = np.random.default_rng(0).standard_normal((2048, 256)) / 16
xs = np.random.default_rng(1).standard_normal((4096, 256))
chunk = None if sys.argv[1] == "none" else int(sys.argv[1])
g = vmap(f, in_dims=(None, 0), chunk_size=chunk)
g(w, xs[:8])                       # compile (and touch the code) first
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = g(w, xs)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(after - before)
"""


def memory() -> None:
    print("peak RSS growth of one call, vmap of softmax(w @ x) over 4096 examples, w 2048x256 "
          "(output alone: 64 MiB):")
    for chunk in ("none", "1024", "64"):
        print(f"  chunk_size={chunk:>5}: {int(run_script(MEMORY_CASE, chunk)) / 1024:8.1f} MiB")


if __name__ == "__main__":
    speed()
    memory()
