"""ns per query of np.interp and np.searchsorted, compiled, against NumPy (docs/sorting.md).

Run: ``AOTX_DISABLE_CACHE=1 PYTHONPATH=. python benchmarks/search_bench.py [queries]``
(default 1e6 queries). Sample points: 1e3 and 1e5 sorted uniform values; queries uniform over
a slightly wider range, sorted or not. Each case alternates the compiled call and NumPy's, 9
times, timing the process's CPU time (the machine is shared); prints median / min.
"""
from __future__ import annotations

import sys
import time

import numpy as np

import compiler


def _interp(x, xp, fp):
    return np.interp(x, xp, fp)


def _search(a, v):
    return np.searchsorted(a, v, side="right")


def main(n: int) -> None:
    rng = np.random.default_rng(0)
    cases = [("interp", compiler.jit(_interp), lambda x, xp, fp: np.interp(x, xp, fp)),
             ("searchsorted", compiler.jit(_search), lambda x, xp, fp: np.searchsorted(xp, x, side="right"))]
    print("| function | samples | queries | aotx ns/query (median / min) | NumPy | NumPy / aotx |")
    print("|---|---|---|---|---|---|")
    for name, kernel, ref in cases:
        for m in (1_000, 100_000):
            xp = np.sort(rng.uniform(0, 1, m))
            fp = rng.standard_normal(m)
            for order in ("sorted", "unsorted"):
                x = rng.uniform(-0.05, 1.05, n)
                if order == "sorted":
                    x.sort()
                run = (lambda: kernel(x, xp, fp)) if name == "interp" else (lambda: kernel(xp, x))
                run()
                ours, theirs = [], []
                for _ in range(9):
                    t0 = time.process_time()
                    run()
                    ours.append(time.process_time() - t0)
                    t0 = time.process_time()
                    ref(x, xp, fp)
                    theirs.append(time.process_time() - t0)
                a, b = np.array(ours) / n * 1e9, np.array(theirs) / n * 1e9
                print(f"| {name} | {m:.0e} | {order} | {np.median(a):.2f} / {a.min():.2f} | "
                      f"{np.median(b):.2f} / {b.min():.2f} | {np.median(b) / np.median(a):.2f}x |",
                      flush=True)


if __name__ == "__main__":
    main(int(float(sys.argv[1])) if len(sys.argv) > 1 else 1_000_000)
