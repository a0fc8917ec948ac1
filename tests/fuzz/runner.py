"""Batches of programs in a subprocess, and the long-running command.

A batch of seeds runs in one worker process (``python -m tests.fuzz --worker``),
which writes one JSON line per program as soon as it is judged, and, for a
failure, a second line with the minimized program. A worker that dies (a
segfault, an abort in LLVM) has lost only its batch: the first seed without a
result is rerun alone; if it crashes alone it is a crash failure, otherwise the
crash needs state left by the earlier programs of the batch, and the batch
prefix is bisected to the shortest crashing run.

``python -m tests.fuzz --minutes N --seed S --out FILE`` runs batches of
consecutive seeds from S until the time is up and writes every failing
program, minimized, with its seed and failure, to FILE (and FILE + ".jsonl").
"""
from __future__ import annotations

import argparse
import collections
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

from tests.fuzz.generator import generate
from tests.fuzz.minimize import minimize
from tests.fuzz.oracles import check, level_args

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def format_args(args: list[np.ndarray]) -> str:
    lines = []
    for i, a in enumerate(args):
        a = np.asarray(a)
        lines.append(f"x{i} = np.array({a.tolist()!r}, dtype=np.{a.dtype.name})")
    return "\n".join(lines)


def program_record(prog: Any) -> dict:
    args = level_args(prog)[-1]
    call = f"k{len(prog.layers)}({', '.join(f'x{i}' for i in range(prog.nargs))})"
    return {"describe": prog.describe(), "source": prog.source(), "args": format_args(args), "call": call,
            "args_env_b": format_args(prog.data_b), "top": prog.top}


# ---- the worker --------------------------------------------------------------------------------------

def _alarm(signum: int, frame: Any) -> None:
    raise TimeoutError("the generator took more than 60 s")


def worker(seeds: list[int], results: str, minimize_failures: bool, budget: int) -> None:
    signal.signal(signal.SIGALRM, _alarm)

    with open(results, "a") as out:
        def emit(rec: dict) -> None:
            out.write(json.dumps(rec) + "\n")
            out.flush()

        for seed in seeds:
            t0 = time.time()
            try:
                signal.alarm(60)             # a generator that loops is a bug of the generator
                prog = generate(seed)
            except Exception as e:           # a bug of the generator, not of aotx: count it, go on
                emit({"seed": seed, "status": "generator-error", "detail": f"{type(e).__name__}: {e}"})
                continue
            finally:
                signal.alarm(0)
            if os.environ.get("AOTX_FUZZ_CRASH_SEED") == str(seed):   # tests the crash isolation
                ctypes.string_at(0)
            outcome = check(prog)
            rec: dict = {"seed": seed, "status": outcome.status, "detail": outcome.detail[:2000],
                         "seconds": round(time.time() - t0, 3)}
            if outcome.failure is not None:
                rec["failure"] = outcome.failure.to_json()
                rec["program"] = program_record(prog)
            emit(rec)
            if outcome.failure is not None and minimize_failures:
                small = minimize(prog, outcome.failure, budget=budget)
                again = check(small)
                emit({"seed": seed, "status": "minimized", "program": program_record(small),
                      "failure": again.failure.to_json() if again.failure else rec["failure"]})


def run_batch(seeds: list[int], *, minimize_failures: bool = True, budget: int = 80,
              timeout: float = 3600, cache_dir: str | None = None) -> list[dict]:
    """Run `seeds` in a worker subprocess; returns the records, with crash records for
    programs that killed the worker. `cache_dir`: the worker's AOTX_CACHE_DIR."""
    env = dict(os.environ)
    if cache_dir is not None:
        env["AOTX_CACHE_DIR"] = cache_dir
    fd, path = tempfile.mkstemp(prefix="aotx-fuzz-", suffix=".jsonl")
    os.close(fd)
    try:
        cmd = [sys.executable, "-m", "tests.fuzz", "--worker", ",".join(map(str, seeds)), "--results", path,
               "--budget", str(budget)] + ([] if minimize_failures else ["--no-minimize"])
        try:
            proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)
            rc, err = proc.returncode, proc.stderr
        except subprocess.TimeoutExpired:
            rc, err = "timeout", ""
        with open(path) as fh:
            recs = [json.loads(line) for line in fh if line.strip()]
    finally:
        os.unlink(path)
    if rc == 0:
        return recs
    done = [r["seed"] for r in recs if r["status"] != "minimized"]
    minimized = {r["seed"] for r in recs if r["status"] == "minimized"}
    pending = [s for s in seeds if s not in set(done)]
    again = (lambda rest: run_batch(rest, minimize_failures=minimize_failures, budget=budget,
                                    cache_dir=cache_dir) if rest else [])
    last = next((r for r in reversed(recs) if r["status"] != "minimized"), None)
    if last is not None and last["status"] == "fail" and last["seed"] not in minimized:
        # the worker died minimizing this failure (a candidate crashed it): keep it unminimized
        last["failure"]["message"] += f"\n(the worker died ({rc}) while minimizing this program)"
        return recs + again(pending)
    if not pending:
        return recs
    suspect = pending[0]
    alone = run_alone(suspect)
    tail = err.strip().splitlines()[-3:] if isinstance(err, str) else []
    if alone is not None:
        message = f"the worker process died ({alone}) running this program alone: " + " | ".join(tail)
    else:
        prefix = seeds[:seeds.index(suspect) + 1]
        message = (f"the worker died ({rc}) at this program after seeds {bisect_prefix(prefix)} "
                   f"(it does not crash alone): " + " | ".join(tail))
    recs.append({"seed": suspect, "status": "fail", "program": crash_record(suspect), "failure": {
        "kind": "crash", "oracle": "process", "level": -1, "exc_type": str(alone or rc), "message": message}})
    return recs + again(pending[1:])


def run_alone(seed: int) -> Any:
    """The return code when running `seed` alone kills the worker, else None."""
    cmd = [sys.executable, "-m", "tests.fuzz", "--worker", str(seed), "--results", os.devnull, "--no-minimize"]
    try:
        rc = subprocess.run(cmd, cwd=ROOT, capture_output=True, timeout=300).returncode
    except subprocess.TimeoutExpired:
        return "timeout"
    return None if rc == 0 else rc


def bisect_prefix(prefix: list[int]) -> list[int]:
    """The shortest suffix of `prefix` (ending at its crashing last seed) that still crashes."""
    lo = 0
    hi = len(prefix) - 1           # prefix[hi:] alone does not crash (checked by the caller)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        cmd = [sys.executable, "-m", "tests.fuzz", "--worker", ",".join(map(str, prefix[mid:])),
               "--results", os.devnull, "--no-minimize"]
        try:
            crashed = subprocess.run(cmd, cwd=ROOT, capture_output=True, timeout=1200).returncode != 0
        except subprocess.TimeoutExpired:
            crashed = True
        if crashed:
            lo = mid
        else:
            hi = mid
    return prefix[lo:-1]


def crash_record(seed: int) -> dict:
    try:
        return program_record(generate(seed))
    except Exception as e:
        return {"describe": f"seed {seed}", "source": f"(generator error: {e})", "args": "", "call": "",
                "args_env_b": "", "top": []}


# ---- the report ----------------------------------------------------------------------------------------

def report_block(rec: dict, minimized: dict | None) -> str:
    f = (minimized or rec)["failure"]
    prog = (minimized or rec)["program"]
    lines = [f"==== seed {rec['seed']}: [{f['kind']}] {f['oracle']} at level {f['level']}"
             + ("" if minimized else " (not minimized)"),
             f"stack: {prog['describe']}", "failure:", *("    " + x for x in f["message"].splitlines()),
             "--- program" + (" (minimized)" if minimized else "") + ":", prog["source"].rstrip(),
             "--- arguments of " + prog["call"] + ":", prog["args"],
             "--- arguments of k0 in environment B:", prog["args_env_b"], ""]
    if minimized:
        lines += ["--- original program:", rec["program"]["source"].rstrip(), ""]
    return "\n".join(lines) + "\n"


def main_loop(minutes: float, seed: int, out: str, batch: int) -> None:
    deadline = time.time() + minutes * 60
    counts: collections.Counter = collections.Counter()
    refusals: collections.Counter = collections.Counter()
    signatures: collections.Counter = collections.Counter()
    start = time.time()
    with open(out, "w") as fh, open(out + ".jsonl", "w") as jf:
        fh.write(f"# aotx differential fuzzing from seed {seed}\n\n")
        next_seed = seed
        while time.time() < deadline:
            seeds = list(range(next_seed, next_seed + batch))
            next_seed += batch
            try:
                recs = run_batch(seeds, timeout=120 + 10 * len(seeds))
            except Exception as e:           # the harness must outlive any batch
                print(f"batch {seeds[0]}..{seeds[-1]} lost: {type(e).__name__}: {e}", flush=True)
                continue
            mins = {r["seed"]: r for r in recs if r["status"] == "minimized"}
            for r in recs:
                jf.write(json.dumps(r) + "\n")
                if r["status"] == "minimized":
                    continue
                counts[r["status"]] += 1
                if r["status"] == "refused":
                    refusals[r["detail"].split(":")[0] + ": " + r["detail"].split(": ", 1)[-1][:70]] += 1
                if r["status"] == "fail":
                    f = r["failure"]
                    signatures[(f["kind"], f["oracle"], f["exc_type"])] += 1
                    fh.write(report_block(r, mins.get(r["seed"])))
            fh.flush()
            jf.flush()
            elapsed = (time.time() - start) / 60
            print(f"{elapsed:6.1f} min, seeds {seed}..{next_seed - 1}: {dict(counts)}", flush=True)
        summary = [f"# summary: {sum(counts.values())} programs in {(time.time() - start) / 60:.1f} min "
                   f"(seeds {seed}..{next_seed - 1}): {dict(counts)}",
                   "# failures by signature:"] + [f"#   {n:5d}  {s}" for s, n in signatures.most_common()] + \
                  ["# refusals:"] + [f"#   {n:5d}  {s}" for s, n in refusals.most_common(40)]
        fh.write("\n".join(summary) + "\n")
    print("\n".join(summary))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="fuzz-findings.txt")
    p.add_argument("--batch", type=int, default=50)
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--results", help=argparse.SUPPRESS)
    p.add_argument("--no-minimize", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--budget", type=int, default=80, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker:
        worker([int(s) for s in a.worker.split(",")], a.results, not a.no_minimize, a.budget)
        return
    main_loop(a.minutes, a.seed, a.out, a.batch)
