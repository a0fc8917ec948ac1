"""W5: the overhead of one call on tiny arrays, next to NumPy (and numba where installed).

Every case adds or scales 4-element float64 arrays, so the time is the call itself: argument
checks, output allocation, the native call and the result. Cases:

* ``numpy a + b`` and ``np.add(a, b, out=c)``: the reference;
* ``jit f(a, b)``: a lazily compiled kernel (the native fast path, compiler/backend/pyentry.py);
* ``jit f(a, b, 2.0)``: three inputs, one a Python float (a weakly typed scalar);
* ``signature f(a, b)``: ``jit(signature="f64[n], f64[n]")``, symbols bound per call;
* ``jit into out``: a kernel that writes into a given output (``out[...] = a + b``);
* ``vmap`` (a batch of 4 dot products of length 3) and ``grad`` (of ``sum(tanh(w)**2)``);
* ``checked path``: the same kernel through its Python path (what ``runtime.load`` of a built
  library runs without the compiler imported, with the pointer arrays built per call);
* ``runtime.load f(a, b)``: the signature kernel built by ``aotx build`` and loaded (skipped
  when the build fails, e.g. without a C compiler);
* ``numba f(a, b)`` (``@njit``), when numba is installed.

Each case is timed in rounds that interleave the cases (the machine may be shared); the table
gives, in microseconds per call, the median and minimum over the rounds of the CPU time
(``time.process_time``: steadier than wall time on a loaded machine) and the minimum wall time,
and the ratio of the CPU median to NumPy's ``a + b``.

    python -m benchmarks.call_overhead [--rounds 9] [--number 20000] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np


def _add(a, b):
    return a + b


def _axpy(a, b, s):
    return a * s + b


def _into(a, b, out):
    out[...] = a + b


def _dot(x, y):
    return np.dot(x, y)


def _loss(w):
    return np.sum(np.tanh(w) ** 2)


def cases() -> dict[str, Callable[[], Any]]:
    """name -> a call to time (each checked against NumPy first)."""
    from compiler import grad, jit, vmap

    a, b = np.linspace(0.0, 1.0, 4), np.linspace(1.0, 2.0, 4)
    c = np.empty(4)
    xs, ys = np.ones((4, 3)), np.full((4, 3), 0.5)
    f = jit(_add)
    g = jit(_axpy)
    s = jit(_add, signature="f64[n], f64[n]")
    into = jit(_into)
    v = vmap(jit(_dot))
    d = grad(jit(_loss))
    checked = jit(_add)
    checked(a, b)
    native = next(iter(checked._specializations.values())).native
    out: dict[str, Callable[[], Any]] = {
        "numpy a + b": lambda: a + b,
        "numpy np.add(a, b, out=c)": lambda: np.add(a, b, out=c),
        "jit f(a, b)": lambda: f(a, b),
        "jit f(a, b, 2.0)": lambda: g(a, b, 2.0),
        "signature f(a, b)": lambda: s(a, b),
        "jit into out": lambda: into(a, b, c),
        "vmap (4 dots of 3)": lambda: v(xs, ys),
        "grad (4 weights)": lambda: d(a),
        "checked path": lambda: native(a, b),
    }
    expected = {"jit f(a, b)": a + b, "jit f(a, b, 2.0)": a * 2.0 + b, "signature f(a, b)": a + b,
                "vmap (4 dots of 3)": np.sum(xs * ys, axis=1),
                "grad (4 weights)": 2 * np.tanh(a) * (1 - np.tanh(a) ** 2),
                "checked path": [a + b]}
    for name, want in expected.items():
        np.testing.assert_allclose(out[name](), want, rtol=1e-13)
    out["jit into out"]()
    np.testing.assert_allclose(c, a + b, rtol=1e-15)
    lib = _built_library()
    if lib is not None:
        np.testing.assert_allclose(lib.add(a, b), a + b)
        out["runtime.load f(a, b)"] = lambda: lib.add(a, b)
    try:
        import numba
    except ImportError:
        print("numba: not installed, skipped")
    else:
        nf = numba.njit(_add)
        np.testing.assert_allclose(nf(a, b), a + b)
        out["numba f(a, b)"] = lambda: nf(a, b)
    return out


LIBRARY = """
from compiler import jit


@jit(signature="f64[n], f64[n]")
def add(a, b):
    return a + b
"""


def _built_library() -> Any:
    """`aotx build` of a one-kernel module, loaded with runtime.load (None if it cannot build)."""
    import runtime
    tmp = Path(tempfile.mkdtemp(prefix="aotx-call-overhead-"))
    (tmp / "calllib.py").write_text(LIBRARY)
    proc = subprocess.run([sys.executable, "-m", "compiler", "build", str(tmp / "calllib.py"), "-o",
                           str(tmp / "out")], capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"runtime.load: the build failed, skipped ({proc.stderr.strip().splitlines()[-1:]})")
        return None
    return runtime.load(tmp / "out" / "calllib")


def measure(calls: dict[str, Callable[[], Any]], rounds: int,
            number: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Seconds per call of each case, one figure per round, in wall time and in CPU time (on a
    shared machine the CPU time of this single-threaded loop is the steadier one); the cases
    interleave."""
    wall: dict[str, list[float]] = {name: [] for name in calls}
    cpu: dict[str, list[float]] = {name: [] for name in calls}
    for fn in calls.values():            # warm up: every fast path installed
        for _ in range(100):
            fn()
    for _ in range(rounds):
        for name, fn in calls.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            for _ in range(number):
                fn()
            cpu[name].append((time.process_time() - start_cpu) / number)
            wall[name].append((time.perf_counter() - start) / number)
    return wall, cpu


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--number", type=int, default=20000, help="calls per round")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args(argv)
    wall, cpu = measure(cases(), args.rounds, args.number)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    ref = statistics.median(cpu["numpy a + b"])
    print(f"call overhead, 4-element float64 arrays; load average {load:.2f}")
    print(f"{'case':28s} {'CPU median us':>14s} {'CPU min us':>11s} {'wall min us':>12s} "
          f"{'/ numpy a+b':>12s}")
    result = {}
    for name in wall:
        med, low, wlow = statistics.median(cpu[name]), min(cpu[name]), min(wall[name])
        result[name] = {"cpu_median_us": med * 1e6, "cpu_min_us": low * 1e6, "wall_min_us": wlow * 1e6,
                        "ratio": med / ref}
        print(f"{name:28s} {med * 1e6:14.3f} {low * 1e6:11.3f} {wlow * 1e6:12.3f} {med / ref:12.2f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"load": load, "cases": result}, fh, indent=1)
    return result


if __name__ == "__main__":
    main()
