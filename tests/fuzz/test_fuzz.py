"""Differential fuzzing in the suite: a few hundred random programs with fixed seeds.

Each seed draws a program and a transform stack (see tests/fuzz/generator.py)
and checks every level of the stack against its oracle (tests/fuzz/oracles.py).
The programs run in worker subprocesses, one per batch of seeds (a crash kills only
its worker and is reported as a failure with its program); a failing program is minimized and
printed with its arguments, so that it can be rerun as it is. The long-running
form is ``python -m tests.fuzz --minutes N --seed S --out FILE``.
"""
from __future__ import annotations

import collections
import os
import tempfile

import pytest

from tests.fuzz.runner import report_block, run_batch

#: fixed seeds: 200 programs and their transform stacks (about 600 kernels)
SEEDS = list(range(200))
#: the seeds in four interleaved batches, one test and one worker process each, so that the test
#: workers share them out (as one test of about 90 s of CPU it ran on one worker while the other
#: idled at the end of the suite); every batch is judged as the whole once was
BATCHES = [SEEDS[i::4] for i in range(4)]
#: the fuzz programs' kernels are kept between sessions (the cache key includes a fingerprint
#: of the compiler's sources, so a changed compiler never reuses them): a rerun takes seconds
CACHE = os.path.join(tempfile.gettempdir(), f"aotx-fuzz-cache-{os.getuid()}")


def test_batches_cover_the_seeds():
    assert sorted(s for batch in BATCHES for s in batch) == SEEDS


@pytest.mark.parametrize("seeds", BATCHES, ids=[f"batch{i}" for i in range(len(BATCHES))])
def test_fuzzed_programs_agree_with_their_oracles(seeds):
    recs = run_batch(seeds, budget=40, timeout=1200, cache_dir=CACHE)
    results = {r["seed"]: r for r in recs if r["status"] != "minimized"}
    minimized = {r["seed"]: r for r in recs if r["status"] == "minimized"}
    assert sorted(results) == seeds, "the worker lost programs without reporting a crash"
    counts = collections.Counter(r["status"] for r in results.values())
    # the generator must mostly produce programs that aotx accepts, else the test tests little
    assert counts["ok"] >= 0.8 * len(seeds), f"too few programs compiled and judged: {dict(counts)}"
    failures = [report_block(r, minimized.get(s)) for s, r in sorted(results.items()) if r["status"] == "fail"]
    assert not failures, f"{len(failures)} fuzzed programs disagree with their oracles:\n\n" + "\n".join(failures)


def test_a_crashing_program_is_isolated_and_reported(monkeypatch):
    """A segfault kills only the worker: the programs before and after it are still judged and
    the crashing one is reported with its program (the worker crashes on purpose here)."""
    monkeypatch.setenv("AOTX_FUZZ_CRASH_SEED", "3")
    recs = run_batch([2, 3, 4], budget=0, timeout=600, cache_dir=CACHE)
    by_seed = {r["seed"]: r for r in recs if r["status"] != "minimized"}
    assert sorted(by_seed) == [2, 3, 4]
    assert by_seed[2]["status"] != "fail" and by_seed[4]["status"] != "fail"
    crash = by_seed[3]
    assert crash["status"] == "fail" and crash["failure"]["kind"] == "crash"
    assert "running this program alone" in crash["failure"]["message"]
    assert "def f(" in crash["program"]["source"]
