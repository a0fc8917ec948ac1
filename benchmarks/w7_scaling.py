"""W7: threads and size. The W1 expression with aotx ``jit(parallel=True)`` (1e5 to 1e7 float64,
1e7 float32) and W2's row-wise logsumexp, against numba ``njit(parallel=True)``, torch and NumPy:
the suite runs it pinned to one core and with default threading, and the summary gives each
peer's speed-up (time with one thread / time with the default). In the same process, "aotx 1
thread" is the same kind of kernel called with ``AOTX_NUM_THREADS=1`` (set around each of its
calls): the speed-up of ``parallel=True`` without a second process. Both aotx variants are timed
first in a case, each after a pause of 0.3 s: numba's and torch's OpenMP threads keep spinning
for up to 200 ms after their last call (KMP_BLOCKTIME), which slowed the next timings by 100x
on two cores in default threading. Time against the number of
elements is W1 (1e3 to 1e8); time against the batch is the logistic regression per-example
gradients of W3 at batch 16 to 65536."""
from __future__ import annotations

import os
import time
from typing import Any, Callable, Iterator

import numpy as np

from compiler import jit
from harness import Case, Config
from run import wave
from w1_fused import factories
from w2_logsumexp import logsumexp_rows
from w3_gradients import logistic


def one_thread(fn: Callable[..., Any], *args: np.ndarray) -> Callable[[], Callable[[], Any]]:
    """A factory of ``jit(fn, parallel=True)`` called with AOTX_NUM_THREADS=1 (read by the
    kernel on each call it would split)."""
    def factory() -> Callable[[], Any]:
        k = jit(fn, parallel=True)

        def call() -> Any:
            before = os.environ.get("AOTX_NUM_THREADS")
            os.environ["AOTX_NUM_THREADS"] = "1"
            try:
                return k(*args)
            finally:
                if before is None:
                    del os.environ["AOTX_NUM_THREADS"]
                else:
                    os.environ["AOTX_NUM_THREADS"] = before
        return call
    return factory


def settled(cfg: Config, factory: Callable[[], Callable[[], Any]]) -> Callable[[], Callable[[], Any]]:
    """`factory`, called after the other peers' spinning threads have gone to sleep (not with
    --tiny, which measures nothing)."""
    def make() -> Callable[[], Any]:
        if not cfg.tiny:
            time.sleep(0.3)
        return factory()
    return make


def ordered(cfg: Config, impls: dict[str, Callable[[], Callable[[], Any]]]) -> dict[str, Any]:
    """The aotx variants first (after a pause each), then the peers."""
    mine = {k: settled(cfg, v) for k, v in impls.items() if k.startswith("aotx")}
    return {**mine, **{k: v for k, v in impls.items() if not k.startswith("aotx")}}


def cases(cfg: Config) -> Iterator[Case]:
    for dtype, n in cfg.size([(np.float64, 10**5), (np.float64, 10**6), (np.float64, 10**7),
                              (np.float32, 10**7)], [(np.float64, 4096)]):
        x = np.linspace(-4, 4, n).astype(dtype)
        impls = factories(cfg, x, parallel=True)
        impls["aotx 1 thread"] = one_thread(wave, x)
        rtol = 1e-12 if dtype == np.float64 else 2e-5
        yield Case(f"wave {np.dtype(dtype).name} parallel=True n={n:.0e}", ordered(cfg, impls), per=n, rtol=rtol,
                   atol=rtol)
    rows, cols = cfg.size((4096, 1024), (64, 32))
    x = np.random.default_rng(0).standard_normal((rows, cols)) * 4

    def aotx() -> Callable[[], Any]:
        k = jit(logsumexp_rows, parallel=True)
        return lambda: k(x)
    yield Case(f"logsumexp rows parallel=True {rows}x{cols}",
               ordered(cfg, {"aotx": aotx, "aotx 1 thread": one_thread(logsumexp_rows, x),
                        "numpy": lambda: (lambda: logsumexp_rows(x))}), per=x.size, rtol=1e-12, atol=1e-12)
    for batch in cfg.size((16, 256, 4096, 65536), (16, 64)):
        yield from logistic(cfg, batch)
