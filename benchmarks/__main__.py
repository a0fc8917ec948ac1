"""aotx against every installed peer (NumPy, numba, JAX, torch, torch.compile), all workloads in one run.

    python -m benchmarks                      # every workload (W0..W7, corpus)
    python -m benchmarks W2 W5                # by name (python -m benchmarks --list)
    python -m benchmarks --tiny               # the smallest sizes: checks that the suite runs
    python -m benchmarks --json out.json --plot ratios.png

Each threading mode runs in a fresh process: "1" pins the process to one core and sets the
thread variables (OMP, OpenBLAS, MKL, numba, XLA) to one thread before any library is imported;
"default" leaves every library its default threading. Every peer's result is checked against
NumPy's before it is timed; a time is the median (and min) of at least 7 samples after a
warm-up. The table gives each time and the ratio aotx / fastest peer (< 1: aotx is ahead); the
JSON file has every sample statistic, the skipped peers with their reasons, and the machine.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMBA_NUM_THREADS")
MODES = ("1", "default")


def _pin_if_worker() -> None:
    """In a worker of mode "1": one core, before NumPy (and its BLAS threads) is imported."""
    argv = sys.argv
    if "--worker" in argv and argv[argv.index("--worker") + 1] == "1" and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


_pin_if_worker()
sys.path[:0] = [HERE, ROOT]                  # the benchmark modules import each other by name

import numpy as np  # noqa: E402,F401  (first: the thread variables are read at import)

import harness  # noqa: E402
from registry import WORKLOADS  # noqa: E402


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n")[0])
    p.add_argument("names", nargs="*", help="workloads to run (default: all): " + " ".join(WORKLOADS))
    p.add_argument("--tiny", action="store_true", default=bool(os.environ.get("AOTX_BENCH_TINY")),
                   help="the smallest sizes (also AOTX_BENCH_TINY=1): checks the suite, measures nothing")
    p.add_argument("--repeat", type=int, default=7, help="samples per measurement (at least 7)")
    p.add_argument("--threads", default="1,default", help="threading modes: 1, default or both (1,default)")
    p.add_argument("--peers", default=",".join(harness.PEERS), help="peers to run (aotx is always run)")
    p.add_argument("--json", default=os.path.join(HERE, "results.json"), metavar="FILE",
                   help="where to write the results (default: benchmarks/results.json)")
    p.add_argument("--plot", metavar="FILE.png", help="draw the ratios with matplotlib (pip install aotx[bench])")
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    p.add_argument("--from-json", metavar="FILE", help="print the table (and --plot) of an earlier run's JSON")
    p.add_argument("--worker", choices=MODES, help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    lower = {k.lower(): k for k in WORKLOADS}
    unknown = [n for n in args.names if n.lower() not in lower]
    if unknown:
        p.error(f"unknown workload {', '.join(unknown)}; the workloads are {', '.join(WORKLOADS)}")
    args.names = [lower[n.lower()] for n in args.names] or list(WORKLOADS)
    args.modes = [m for m in MODES if m in args.threads.split(",")]
    if not args.modes:
        p.error("--threads takes 1, default or 1,default")
    if args.repeat < 7:
        p.error("--repeat must be at least 7")
    return args


def worker(args: argparse.Namespace) -> None:
    """Run the workloads in this process (one threading mode) and write their results to args.out."""
    cfg = harness.Config(tiny=args.tiny, repeat=args.repeat, threads=args.worker,
                         peers=tuple(["aotx", *args.peers.split(",")]), min_sample=0.0 if args.tiny else 2e-3)
    for name in ("numba", "torch", "jax"):                   # import the peers while the variables hold
        if name not in cfg.peers and not (name == "torch" and "torch.compile" in cfg.peers):
            continue
        try:
            __import__(name)
        except ImportError:
            pass
    out: dict[str, Any] = {}
    for name in args.names:
        mod_name, title = WORKLOADS[name]
        entry: dict[str, Any] = {"title": title, "cases": []}
        start = time.perf_counter()
        try:
            for case in __import__(mod_name).cases(cfg):
                if args.worker not in case.modes:
                    continue
                result = harness.run_case(case, cfg)
                entry["cases"].append(result)
                r = result["ratio"]
                print(f"[{args.worker} thread{'s' if args.worker != '1' else ''}] {name} {case.name}: "
                      f"aotx {harness.fmt_time(result['peers'].get('aotx', {}).get('median'))}"
                      + (f", {r:.2f}x {result['best_peer']}" if r is not None else ""), flush=True)
        except Exception as e:                                # a broken workload is reported, not fatal
            entry["error"] = f"{type(e).__name__}: {e}"
            print(f"{name}: {entry['error']}", flush=True)
        entry["seconds"] = time.perf_counter() - start
        out[name] = entry
        with open(args.out + ".tmp", "w") as f:               # after each workload: a stopped run keeps them
            json.dump(out, f)
        os.replace(args.out + ".tmp", args.out)


def run_mode(mode: str, args: argparse.Namespace, argv: list[str], partial: str) -> dict[str, Any]:
    """One threading mode in a worker process; its results so far stay in `partial` (one
    workload per line: mode, name, entry), so that a run stopped early keeps what it measured."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT, *filter(None, [env.get("PYTHONPATH")])])
    if not args.tiny:                  # --tiny measures nothing: its second mode may reuse the first's kernels
        env["AOTX_DISABLE_CACHE"] = "1"
    for var in THREAD_VARS:
        if mode == "1":
            env[var] = "1"
        else:
            env.pop(var, None)
    if mode == "1":
        env["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "results.json")
        proc = subprocess.Popen([sys.executable, "-m", "benchmarks", *argv, "--worker", mode, "--out", out],
                                cwd=ROOT, env=env)
        seen: set[str] = set()
        got: dict[str, Any] = {}
        while True:
            done = proc.poll() is not None
            if os.path.exists(out):
                with open(out) as f:
                    got = json.load(f)
                with open(partial, "a") as f:
                    for name in got.keys() - seen:
                        f.write(json.dumps([mode, name, got[name]]) + "\n")
                seen |= got.keys()
            if done:
                break
            time.sleep(1.0)
        if proc.returncode:
            raise subprocess.CalledProcessError(proc.returncode, proc.args)
        return got


def scaling(modes: dict[str, Any]) -> list[dict[str, Any]]:
    """Each peer's speed-up from one thread to the default, for the W7 cases run in both modes."""
    if "1" not in modes or "default" not in modes or "W7" not in modes["1"]:
        return []
    rows = []
    default = {c["name"]: c for c in modes["default"].get("W7", {}).get("cases", [])}
    for case in modes["1"]["W7"]["cases"]:
        other = default.get(case["name"])
        if other is None:
            continue
        speedup = {p: r["median"] / other["peers"][p]["median"] for p, r in case["peers"].items()
                   if r.get("status") == "ok" and other["peers"].get(p, {}).get("status") == "ok"}
        rows.append({"case": case["name"], "speedup": speedup})
    return rows


def table(results: dict[str, Any]) -> str:
    peers: list[str] = []
    for mode in results["modes"].values():
        for w in mode.values():
            for c in w["cases"]:
                peers += [p for p in c["peers"] if p not in peers]
    peers.sort(key=lambda p: (harness.PEERS.index(p) if p in harness.PEERS else len(harness.PEERS), p))
    marks = {"skipped": "-", "wrong": "WRONG", "error": "error"}
    lines = [f"Machine: {harness.machine_line(results['machine'])}", f"Command: {results['command']}", ""]
    for mode, workloads in results["modes"].items():
        t = harness.Table()
        for name, w in workloads.items():
            if "error" in w:
                t.rows.append([name, f"workload failed: {w['error'][:80]}", *[""] * (len(peers) + 2)])
            for c in w["cases"]:
                r, cpu = c["ratio"], harness.ratio(c, "cpu_median")[0] if mode == "1" else None
                cells = [harness.fmt_time(c["peers"][p]["median"]) if c["peers"].get(p, {}).get("status") == "ok"
                         else marks.get(c["peers"].get(p, {}).get("status", "skipped"), "-") for p in peers]
                t.rows.append([name, c["name"], f"{r:.2f}" if r is not None else "-",
                               *([f"{cpu:.2f}" if cpu is not None else "-"] if mode == "1" else []),
                               c["best_peer"] or "-", *cells])
        title = "one thread, pinned to one core" if mode == "1" else "default threading"
        lines += [f"{title}: median wall time per call; ratio = aotx / fastest peer (< 1: aotx ahead)"
                  + ("; cpu ratio: the same on CPU time (process_time, steadier on a loaded machine)"
                     if mode == "1" else ""), "",
                  t.text(["workload", "case", "ratio", *(["cpu ratio"] if mode == "1" else []), "best peer",
                          *peers]), ""]
    if results["scaling"]:
        lines.append("W7 speed-up, default threading over one thread (time 1 thread / time default):")
        for row in results["scaling"]:
            lines.append(f"  {row['case']}: " + ", ".join(f"{p} {s:.2f}x" for p, s in row["speedup"].items()))
        lines.append("")
    paired = [c for c in results["modes"].get("default", {}).get("W7", {}).get("cases", [])
              if {"aotx", "aotx 1 thread"} <= {p for p, r in c["peers"].items() if r.get("status") == "ok"}
              and c["kind"] == "sample"]
    if paired:
        lines.append("W7 aotx speed-up, 2 threads against 1 interleaved in one process (median, min; and the same "
                     "work in 2 Python threads without the pool):")
        for c in paired:
            one, two = c["peers"]["aotx 1 thread"], c["peers"]["aotx"]
            py = c["peers"].get("aotx serial, 2 Python threads", {})
            lines.append(f"  {c['name']}: {one['median'] / two['median']:.2f}x, {one['min'] / two['min']:.2f}x"
                         + (f" (Python threads {one['median'] / py['median']:.2f}x, {one['min'] / py['min']:.2f}x)"
                            if py.get("status") == "ok" else ""))
        lines.append("")
    skipped = sorted({f"{p}: {r['reason']}" for m in results["modes"].values() for w in m.values()
                      for c in w["cases"] for p, r in c["peers"].items()
                      if r.get("status") in ("skipped", "wrong", "error")})
    if skipped:
        lines += ["Not timed (skipped, wrong or refused):", *[f"  {s}" for s in skipped]]
    return "\n".join(lines)


def plot(results: dict[str, Any], path: str) -> None:
    try:
        import matplotlib                      # optional: the "bench" extra
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("--plot needs matplotlib: pip install 'aotx[bench]' (or pip install matplotlib)")
    modes = results["modes"]
    fig, axes = plt.subplots(1, len(modes), figsize=(7 * len(modes), 0.25 * max(
        sum(len(w["cases"]) for w in m.values()) for m in modes.values()) + 1.5), squeeze=False)
    for ax, (mode, workloads) in zip(axes[0], modes.items()):
        labels, ratios = [], []
        for name, w in workloads.items():
            for c in w["cases"]:
                if c["ratio"] is not None:
                    labels.append(f"{name} {c['name']} ({c['best_peer']})")
                    ratios.append(c["ratio"])
        ax.barh(range(len(ratios)), ratios, color=["tab:green" if r <= 1 else "tab:red" for r in ratios])
        ax.set_yticks(range(len(ratios)), labels, fontsize=6)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_xlabel("aotx time / fastest peer (log; < 1: aotx ahead)")
        ax.set_title("one thread" if mode == "1" else "default threading")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str]) -> None:
    args = parse(argv)
    if args.list:
        for name, (_, title) in WORKLOADS.items():
            print(f"{name:8} {title}")
        return
    if args.worker:
        worker(args)
        return
    if args.from_json:
        report(load(args.from_json), None, args.plot)
        return
    start, host = time.perf_counter(), harness.machine()
    modes: dict[str, Any] = {}
    results = {"command": " ".join(["python -m benchmarks", *argv]), "machine": host,
               "config": {"tiny": args.tiny, "repeat": args.repeat, "peers": args.peers.split(","),
                          "workloads": args.names, "threads": args.modes}, "modes": modes}
    for mode in args.modes:
        modes[mode] = run_mode(mode, args, argv, args.json + ".partial")
    host["load_end"] = list(os.getloadavg())
    results.update(seconds=time.perf_counter() - start, scaling=scaling(modes))
    report(results, args.json, args.plot)
    if os.path.exists(args.json + ".partial"):
        os.remove(args.json + ".partial")


def load(path: str) -> dict[str, Any]:
    """A run's JSON file, or the `.partial` file of a run stopped early (no machine end, no scaling)."""
    if not path.endswith(".partial"):
        with open(path) as f:
            return dict(json.load(f))
    modes: dict[str, Any] = {}
    with open(path) as f:
        for line in f:
            mode, name, entry = json.loads(line)
            modes.setdefault(mode, {})[name] = entry
    return {"command": f"(stopped early: {path})", "machine": harness.machine(), "modes": modes,
            "scaling": scaling(modes)}


def report(results: dict[str, Any], json_path: str | None, plot_path: str | None) -> None:
    print("\n" + table(results))
    if json_path:
        with open(json_path, "w") as f:
            json.dump(results, f, indent=1)
        print(f"\nresults written to {json_path}")
    if plot_path:
        plot(results, plot_path)
        print(f"ratios drawn in {plot_path}")


if __name__ == "__main__":
    main(sys.argv[1:])
