"""The measuring core of ``python -m benchmarks``: a workload yields `Case`s, this module runs them.

A `Case` names one measurement and, for each peer ("aotx", "numpy", "numba", "jax", "torch",
"torch.compile"), a *factory*: a function that builds the peer's callable (compiling it if it
must) and returns a thunk of no arguments. A factory raises `Skip` (or ImportError) when the
peer cannot run the case (not installed, no such feature); the reason goes into the results.

`run_case` builds every peer, checks its result against NumPy's (the case's reference) before
timing it, then times it: warm-up calls, then `repeat` samples, each sample a loop of enough
calls to last about `min_sample` seconds; it keeps the median and the minimum per call (wall
clock) and the median of the process CPU time. A peer whose result differs from NumPy's is
reported as wrong and never timed. A case of kind "sample" times itself: its thunk returns one
sample in seconds (a compile, a fresh process), and there is nothing to compare.
"""
from __future__ import annotations

import importlib
import math
import os
import platform
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

PEERS = ("aotx", "numpy", "numba", "jax", "torch", "torch.compile")


class Skip(Exception):
    """A peer that cannot run a case; the message says why."""


@dataclass
class Config:
    tiny: bool = False           # the smallest sizes: the suite's own test
    repeat: int = 7              # samples per measurement (at least 7)
    threads: str = "1"           # "1" (pinned to one core, one thread) or "default"
    peers: tuple[str, ...] = PEERS
    min_sample: float = 2e-3     # seconds a sample should last (short calls are looped)

    @property
    def samples(self) -> int:
        """At least 7 samples; 2 with --tiny (1 of a compile or a process), which checks the suite
        and measures nothing."""
        return 2 if self.tiny else max(7, self.repeat)

    def size(self, full: Any, tiny: Any) -> Any:
        return tiny if self.tiny else full


@dataclass
class Case:
    name: str
    impls: dict[str, Callable[[], Callable[[], Any]]]
    reference: str = "numpy"     # the peer whose result every other peer must match
    rtol: float = 1e-9
    atol: float = 0.0
    per: int = 1                 # elements per call: the table also gives time per element
    kind: str = "call"           # "call": time the thunk; "sample": the thunk returns seconds
    note: str = ""
    modes: tuple[str, ...] = ("1", "default")


def module(name: str) -> Any:
    """Import an optional peer, or raise Skip naming it as not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise Skip(f"{name.split('.')[0]} is not installed") from None


def torch_module(cfg: Config) -> Any:
    torch = module("torch")
    if cfg.threads == "1":
        torch.set_num_threads(1)
    return torch


def jax_module() -> Any:
    jax = module("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


def to_numpy(value: Any) -> Any:
    """A peer's result as NumPy arrays (tuples and lists stay sequences)."""
    if isinstance(value, (tuple, list)):
        return [to_numpy(v) for v in value]
    if hasattr(value, "detach"):                      # a torch tensor
        return value.detach().cpu().numpy()
    return np.asarray(value)


def check(got: Any, want: Any, rtol: float, atol: float) -> None:
    got, want = to_numpy(got), to_numpy(want)
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            raise AssertionError(f"{len(want)} results expected")
        for g, w in zip(got, want):
            check(g, w, rtol, atol)
        return
    if isinstance(got, list):
        raise AssertionError("one result expected")
    if got.shape != want.shape:
        raise AssertionError(f"shape {got.shape} != {want.shape}")
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def _samples(thunk: Callable[[], Any], cfg: Config) -> tuple[list[float], list[float]]:
    thunk()
    start = time.perf_counter()
    thunk()
    once = time.perf_counter() - start
    loops = max(1, min(100_000, int(cfg.min_sample / max(once, 1e-9))))
    wall, cpu = [], []
    for _ in range(cfg.samples):
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(loops):
            thunk()
        wall.append((time.perf_counter() - w0) / loops)
        cpu.append((time.process_time() - c0) / loops)
    return wall, cpu


def run_case(case: Case, cfg: Config) -> dict[str, Any]:
    """Every peer of `case`: built, checked against the reference, timed."""
    out: dict[str, Any] = {"name": case.name, "per": case.per, "kind": case.kind, "note": case.note,
                           "reference": case.reference, "peers": {}}
    want: Any = None
    if case.kind == "call":
        want = case.impls[case.reference]()()
    for peer, factory in case.impls.items():
        if peer in PEERS and peer not in cfg.peers:
            out["peers"][peer] = {"status": "skipped", "reason": "not selected (--peers)"}
            continue
        try:
            thunk = factory()
            got = thunk() if case.kind == "call" else None
        except Skip as e:
            out["peers"][peer] = {"status": "skipped", "reason": str(e)}
            continue
        except Exception as e:                        # a refused case is a result, not a crash
            out["peers"][peer] = {"status": "error", "reason": f"{type(e).__name__}: {_first_line(e)}"}
            continue
        if case.kind == "call":
            try:
                check(got, want, case.rtol, case.atol)
            except AssertionError as e:
                out["peers"][peer] = {"status": "wrong", "reason": _first_line(e) or "differs from NumPy"}
                continue
        if case.kind == "call":
            wall, cpu = _samples(thunk, cfg)
        else:
            if not cfg.tiny:
                thunk()                               # warm-up (.pyc files, disk caches)
            wall = [thunk() for _ in range(1 if cfg.tiny else cfg.samples)]
            cpu = []
        out["peers"][peer] = {"status": "ok", "validated": case.kind == "call" and peer != case.reference,
                              "median": statistics.median(wall), "min": min(wall),
                              "cpu_median": statistics.median(cpu) if cpu else None, "samples": len(wall)}
    out["ratio"], out["best_peer"] = ratio(out)
    return out


def _first_line(e: BaseException) -> str:
    lines = [line for line in str(e).strip().splitlines() if line.strip()]
    return lines[0][:200] if lines else ""


def ratio(result: dict[str, Any], key: str = "median") -> tuple[float | None, str | None]:
    """aotx's median (or `key`: "cpu_median") over the fastest other peer's (< 1: aotx is ahead)."""
    peers = result["peers"]
    mine = peers.get("aotx", {})
    others = {p: r[key] for p, r in peers.items()
              if not p.startswith("aotx") and r.get("status") == "ok" and r.get(key)}
    if mine.get("status") != "ok" or not mine.get(key) or not others:
        return None, None
    best = min(others, key=lambda p: others[p])
    return mine[key] / others[best], best


def machine() -> dict[str, Any]:
    model, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model in ("", platform.machine()):
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    features = [f for f in ("avx2", "fma", "avx512f", "avx512vl", "avx512dq") if f in flags]
    load = os.getloadavg() if hasattr(os, "getloadavg") else (math.nan,) * 3
    versions = {}
    for name in ("numpy", "llvmlite", "numba", "jax", "torch"):
        try:
            versions[name] = importlib.import_module(name).__version__
        except ImportError:
            versions[name] = None
    return {"cpu": model, "features": features, "cores": os.cpu_count(), "load": list(load),
            "python": platform.python_version(), "versions": versions}


def machine_line(m: dict[str, Any]) -> str:
    vers = ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v)
    return (f"{m['cpu']}, {m['cores']} cores, features {' '.join(m['features']) or 'none of avx2/avx512'}; "
            f"load average {' '.join(f'{x:.2f}' for x in m['load'])} at the start"
            + (f", {' '.join(f'{x:.2f}' for x in m['load_end'])} at the end" if m.get("load_end") else "")
            + f"; Python {m['python']}, {vers}")


def fmt_time(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


@dataclass
class Table:
    rows: list[list[str]] = field(default_factory=list)

    def text(self, head: list[str]) -> str:
        widths = [max(len(r[i]) for r in [head, *self.rows]) for i in range(len(head))]
        lines = ["  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
                 for r in [head, *self.rows]]
        return "\n".join([lines[0], "-" * len(lines[0]), *lines[1:]])
