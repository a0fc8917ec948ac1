"""Measurement helpers shared by the benchmark scripts (run them as ``python benchmarks/X.py``)."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable


def best(fn: Callable[[], Any], repeat: int = 7) -> float:
    """Best wall time in seconds of `repeat` calls, after one warm-up call."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def run_script(text: str, *argv: str) -> str:
    """Run `text` as a Python file in a fresh process (compiled functions need a source file)
    with the project importable; returns its standard output."""
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "case.py")
        with open(script, "w") as f:
            f.write(text)
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        out = subprocess.run([sys.executable, script, *argv], capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONPATH": root})
        return out.stdout.strip()
