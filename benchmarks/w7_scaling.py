"""W7: threads and size. The W1 expression on 1e7 float64 with aotx ``jit(parallel=True)``,
numba ``njit(parallel=True)``, torch and NumPy: the suite runs it pinned to one core and with
default threading, and the summary gives each peer's speed-up (time with one thread / time with
the default). Time against the number of elements is W1 (1e3 to 1e8); time against the batch is
the logistic regression per-example gradients of W3 at batch 16 to 65536."""
from __future__ import annotations

from typing import Iterator

import numpy as np

from harness import Case, Config
from w1_fused import factories
from w3_gradients import logistic


def cases(cfg: Config) -> Iterator[Case]:
    n = cfg.size(10**7, 4096)
    x = np.linspace(-4, 4, n)
    yield Case(f"wave f64 parallel=True n={n:.0e}", factories(cfg, x, parallel=True), per=n, rtol=1e-12, atol=1e-12,
               note="aotx parallel=True: accepted, single-threaded today")
    for batch in cfg.size((16, 256, 4096, 65536), (16, 64)):
        yield from logistic(cfg, batch)
