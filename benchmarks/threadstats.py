"""What a timing of multithreaded calls ran into, from /proc (Linux; zeros elsewhere): the CPU time
of the process in user and in kernel mode, the time its threads spent ready to run but waiting
for a core (another process had it: /proc/self/task/*/schedstat), how many of its threads were
busy (a split call on 2 threads has 2: a third is some other library's thread spinning or
working, which takes a core from the call), its page faults, and the kernel's
transparent-huge-page faults that fell back to 4 KiB pages or stalled on memory compaction
(/proc/vmstat, the whole machine). The kernel splits CPU time into user and kernel mode from
samples at the clock tick (100 to 1000 a second): the kernel-mode share means something over
spans of a second or more, the other figures over any span.

A split call whose threads wait for cores, or whose fresh output is faulted in 4 KiB pages
(80 MB of float64 then costs about 30 ms of kernel time more than with huge pages), runs
slower for reasons that are not the kernel's: parallel_bench.py and W7 print these figures
next to the times (docs/performance.md, "Multithreading").
"""
from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass, field, fields

VMSTAT = ("thp_fault_fallback", "compact_stall")


@dataclass
class Stats:
    """A snapshot, or (after ``-``) what happened between two; ``+`` adds spans up."""
    user: float = 0.0          # s of CPU in user mode (the process)
    system: float = 0.0        # s of CPU in the kernel (page faults, ...)
    runq: float = 0.0          # s the process's threads waited for a core
    minflt: int = 0            # page faults of the process
    thp_fault_fallback: int = 0
    compact_stall: int = 0
    wall: float = 0.0
    busy: int = 0              # a span: threads on a CPU for over a tenth of it (the most of any span)
    threads: dict[int, int] = field(default_factory=dict)    # a snapshot: ns on a CPU, per thread

    def __sub__(self, other: "Stats") -> "Stats":
        wall = self.wall - other.wall
        ran = [ns - other.threads.get(t, 0) for t, ns in self.threads.items()]
        return Stats(*(getattr(self, f.name) - getattr(other, f.name) for f in fields(self)[:7]),
                     busy=sum(1 for ns in ran if ns > 0.1 * wall * 1e9))

    def __add__(self, other: "Stats") -> "Stats":
        return Stats(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)[:7]),
                     busy=max(self.busy, other.busy))

    def describe(self, calls: int) -> str:
        """Per call: kernel-mode share of the CPU time, core wait, page faults; the most busy
        threads of a span; and the huge-page fallbacks and compaction stalls of the whole."""
        cpu = self.user + self.system
        return (f"sys {100 * self.system / cpu if cpu else 0:.0f}% of CPU, "
                f"core wait {1e3 * self.runq / max(calls, 1):.3f} ms/call, "
                f"{self.minflt / max(calls, 1):.0f} faults/call, {self.busy} busy threads, "
                f"THP fallbacks {self.thp_fault_fallback}, compaction stalls {self.compact_stall}")


def _schedstat() -> tuple[float, dict[int, int]]:
    """Seconds the process's threads waited for a core; ns each thread ran."""
    total, ran = 0, {}
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return 0.0, ran
    for t in tasks:
        try:
            with open(f"/proc/self/task/{t}/schedstat") as f:
                fields_ = f.read().split()
            ran[int(t)] = int(fields_[0])
            total += int(fields_[1])
        except (OSError, IndexError, ValueError):        # a thread that just ended
            pass
    return total * 1e-9, ran


def _vmstat() -> dict[str, int]:
    out = dict.fromkeys(VMSTAT, 0)
    try:
        with open("/proc/vmstat") as f:
            for line in f:
                key, _, value = line.partition(" ")
                if key in out:
                    out[key] = int(value)
    except OSError:
        pass
    return out


def snapshot() -> Stats:
    t = os.times()
    runq, ran = _schedstat()
    return Stats(t.user, t.system, runq, resource.getrusage(resource.RUSAGE_SELF).ru_minflt,
                 wall=time.perf_counter(), threads=ran, **_vmstat())
