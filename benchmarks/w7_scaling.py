"""W7: threads and size. The W1 expression with aotx ``jit(parallel=True)`` (1e5 to 1e7 float64,
1e7 float32) and W2's row-wise logsumexp, against numba ``njit(parallel=True)``, torch and NumPy:
the suite runs it pinned to one core and with default threading, and the summary gives each
peer's speed-up (time with one thread / time with the default). aotx is timed first in a case,
after a pause of 0.3 s: numba's and torch's OpenMP threads keep spinning for up to 200 ms after
their last call (KMP_BLOCKTIME), which slowed the next timings by 100x on two cores in default
threading.

In default threading each of these cases has a companion, "... 2 threads against 1,
interleaved": the same ``parallel=True`` kernel with the default thread count ("aotx") and with
``AOTX_NUM_THREADS=1`` ("aotx 1 thread"), and the serial kernel on the two halves of the rows in
two Python threads at once ("aotx serial, 2 Python threads": what two cores give the same work
without the pool; but an output of 32 MB or less comes warm from the heap (glibc's mmap
threshold) where a larger one is faulted in during each call, so at 1e7 float32 the halves
skip the page faults of the whole: 4.2 against 6.0 ms), each sample one batch of calls of each variant in turn (the order reversed
every other sample), so that whatever slows the machine for a while slows all three; the
summary gives aotx's speed-up and the machine's (1 thread / 2 Python threads) side by side. Timed one after the other, as they were
before, one run gave W1 float64 1e7 at 1.09x: both threads busy for the whole call (CPU time
twice the wall time), the one-thread variant normal 0.3 s later (docs/performance.md,
"Multithreading"). The companion prints, per variant, the kernel-mode share of the CPU time,
the time the threads waited for a core, the page faults per call and the huge-page fallbacks
(benchmarks/threadstats.py), the figures that tell such a case apart.

Time against the number of elements is W1 (1e3 to 1e8); time against the batch is the logistic
regression per-example gradients of W3 at batch 16 to 65536."""
from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import Any, Callable, Iterator

import numpy as np

from compiler import jit
import threadstats
from harness import Case, Config
from run import wave
from w1_fused import factories
from w2_logsumexp import logsumexp_rows
from w3_gradients import logistic


@contextlib.contextmanager
def threads_env(value: str | None) -> Iterator[None]:
    """AOTX_NUM_THREADS set to `value` (None: unset) for the calls inside (read by the kernel on
    each call it would split)."""
    before = os.environ.get("AOTX_NUM_THREADS")
    if value is None:
        os.environ.pop("AOTX_NUM_THREADS", None)
    else:
        os.environ["AOTX_NUM_THREADS"] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("AOTX_NUM_THREADS", None)
        else:
            os.environ["AOTX_NUM_THREADS"] = before


#: the variants of a companion case: the parallel kernel with the default threads and with one,
#: and the serial kernel on the two halves of the rows in two Python threads
VARIANTS = ("default", "1", "halves")
LABELS = {"default": "aotx", "1": "aotx 1 thread", "halves": "aotx serial, 2 Python threads"}


class Interleaved:
    """One ``jit(fn, parallel=True)`` kernel timed with the default thread count and with one
    thread in turn: each `sample` is a batch of calls of each (about `min_sample` seconds
    each, the first variant alternating); it returns the batch's time per call of the variant
    asked for and keeps the other's for its own samples, so both series come from the same
    pairs. `stats` adds up threadstats per variant."""

    def __init__(self, cfg: Config, fn: Callable[..., Any], args: tuple[np.ndarray, ...]) -> None:
        self.cfg, self.args = cfg, args
        self.kernel = jit(fn, parallel=True)
        self.serial = jit(fn)
        rows = args[0].shape[0] // 2
        self.halves = [tuple(a[:rows] for a in args), tuple(a[rows:] for a in args)]
        self.pending: dict[str, list[float]] = {v: [] for v in VARIANTS}
        self.stats = {v: threadstats.Stats() for v in VARIANTS}
        self.calls = dict.fromkeys(VARIANTS, 0)
        self.loops = 0
        self.turn = 0

    def _halves(self) -> float:
        """The serial kernel on each half of the rows in two Python threads at once (the GIL
        released): what two cores give the same work without the pool."""
        start = threading.Barrier(3)

        def loop(args: tuple[np.ndarray, ...]) -> None:
            start.wait()
            for _ in range(self.loops):
                self.serial(*args)
        pair = [threading.Thread(target=loop, args=(h,)) for h in self.halves]
        for t in pair:
            t.start()
        for h in self.halves:
            self.serial(*h)                                           # warm
        s0 = threadstats.snapshot()
        start.wait()
        t0 = time.perf_counter()
        for t in pair:
            t.join()
        t = (time.perf_counter() - t0) / self.loops
        self.stats["halves"] = self.stats["halves"] + (threadstats.snapshot() - s0)
        self.calls["halves"] += self.loops
        return t

    def _batch(self, variant: str) -> float:
        if variant == "halves":
            return self._halves()
        with threads_env(None if variant == "default" else "1"):
            self.kernel(*self.args)                                   # warm (and the pool's threads)
            s0, t0 = threadstats.snapshot(), time.perf_counter()
            for _ in range(self.loops):
                self.kernel(*self.args)
            t = (time.perf_counter() - t0) / self.loops
            self.stats[variant] = self.stats[variant] + (threadstats.snapshot() - s0)
            self.calls[variant] += self.loops
        return t

    def sample(self, variant: str) -> float:
        if not self.pending[variant]:
            if not self.loops:
                with threads_env("1"):
                    self.kernel(*self.args)                           # compiled here
                    t0 = time.perf_counter()
                    self.kernel(*self.args)
                self.loops = max(1, min(10_000, int(self.cfg.min_sample / max(time.perf_counter() - t0, 1e-9))))
            order = VARIANTS if self.turn % 2 == 0 else VARIANTS[::-1]
            self.turn += 1
            for v in order:
                self.pending[v].append(self._batch(v))
        return self.pending[variant].pop(0)

    def factory(self, variant: str) -> Callable[[], Callable[[], Any]]:
        def make() -> Callable[[], Any]:
            return lambda: self.sample(variant)
        return make

    def report(self, name: str) -> None:
        if self.cfg.tiny:
            return
        for v in VARIANTS:
            print(f"    {name}, {LABELS[v]}: {self.stats[v].describe(self.calls[v])}", flush=True)


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


def interleaved(cfg: Config, name: str, fn: Callable[..., Any], *args: np.ndarray) -> Case:
    """The companion of case `name`: 2 threads against 1, interleaved (module doc)."""
    pair: list[Interleaved] = []

    def get() -> Interleaved:
        if not pair:
            pair.append(Interleaved(cfg, fn, args))
        return pair[0]

    def variant(v: str) -> Callable[[], Callable[[], Any]]:
        def make() -> Callable[[], Any]:
            if not cfg.tiny and v == "default":
                time.sleep(0.3)                  # the peers' spinning threads go to sleep
            inter = get()
            thunk = inter.factory(v)()
            if v == VARIANTS[-1]:                # the last variant: the batches are all made
                return _reporting(thunk, inter, name, cfg)
            return thunk
        return make
    return Case(f"{name}: 2 threads against 1, interleaved",
                {LABELS[v]: variant(v) for v in VARIANTS}, kind="sample", per=args[0].size, modes=("default",))


def _reporting(thunk: Callable[[], float], inter: Interleaved, name: str, cfg: Config) -> Callable[[], float]:
    """`thunk`, printing `inter`'s statistics after its last sample."""
    left = [1 if cfg.tiny else cfg.samples + 1]           # harness.run_case: warm-up and samples

    def call() -> float:
        t = thunk()
        left[0] -= 1
        if left[0] == 0:
            inter.report(name)
        return t
    return call


def cases(cfg: Config) -> Iterator[Case]:
    for dtype, n in cfg.size([(np.float64, 10**5), (np.float64, 10**6), (np.float64, 10**7),
                              (np.float32, 10**7)], [(np.float64, 4096)]):
        x = np.linspace(-4, 4, n).astype(dtype)
        impls = factories(cfg, x, parallel=True)
        rtol = 1e-12 if dtype == np.float64 else 2e-5
        name = f"wave {np.dtype(dtype).name} parallel=True n={n:.0e}"
        yield Case(name, ordered(cfg, impls), per=n, rtol=rtol, atol=rtol)
        if cfg.threads == "default":
            yield interleaved(cfg, name, wave, x)
    rows, cols = cfg.size((4096, 1024), (64, 32))
    x = np.random.default_rng(0).standard_normal((rows, cols)) * 4

    def aotx() -> Callable[[], Any]:
        k = jit(logsumexp_rows, parallel=True)
        return lambda: k(x)
    name = f"logsumexp rows parallel=True {rows}x{cols}"
    yield Case(name, ordered(cfg, {"aotx": aotx, "numpy": lambda: (lambda: logsumexp_rows(x))}), per=x.size,
               rtol=1e-12, atol=1e-12)
    if cfg.threads == "default":
        yield interleaved(cfg, name, logsumexp_rows, x)
    for batch in cfg.size((16, 256, 4096, 65536), (16, 64)):
        yield from logistic(cfg, batch)
