"""How fast a fresh process gets a *cached* kernel ready, next to its peers.

For each tool, in fresh processes with a warm on-disk cache:

* "import only": ``import <tool>`` and exit;
* "import + ready": import, then make the cached kernel callable (and call it once).

The table shows the median wall time of both, their difference (what the cache
costs on top of the import), and the time measured inside the process from the
end of the import to the kernel being ready. Tools: aotx ``@jit(signature=...)``
(on-disk cache), aotx ``runtime.load`` of a built library (no compiler, no LLVM),
numba ``@njit(signature, cache=True)``, and JAX's persistent compilation cache
(each where installed). Same function everywhere: ``exp(-x*x) * sin(3x)``.

    python benchmarks/load_bench.py [--runs 9]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

AOTX_MOD = '''
import numpy as np
from compiler import jit

@jit(signature="f64[n]")
def f(x):
    return np.exp(-x * x) * np.sin(3.0 * x)
'''

NUMBA_MOD = '''
import numpy as np
from numba import njit

@njit("float64[:](float64[:])", cache=True)
def f(x):
    return np.exp(-x * x) * np.sin(3.0 * x)
'''

JAX_MOD = '''
import jax, jax.numpy as jnp, numpy as np
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_compilation_cache_dir", CACHE)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)

def _f(x):
    return jnp.exp(-x * x) * jnp.sin(3.0 * x)

f = jax.jit(_f).lower(np.zeros(1000)).compile()
'''

READY = '''
import time, sys
import numpy as np
import {tool}
t0 = time.perf_counter()
import {module} as m
t1 = time.perf_counter()
m.f(np.linspace(-1.0, 1.0, 1000))
print(f"READY {{1e3 * (t1 - t0):.3f}}")
'''

RUNTIME_READY = '''
import time
import numpy as np
import runtime
t0 = time.perf_counter()
lib = runtime.load({lib!r})
t1 = time.perf_counter()
lib.f(np.linspace(-1.0, 1.0, 1000))
print(f"READY {{1e3 * (t1 - t0):.3f}}")
'''


def wall(code: str, cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    return elapsed * 1e3, proc.stdout


def measure(name: str, import_code: str, ready_code: str, cwd: Path, env: dict[str, str],
            runs: int) -> tuple[str, float, float, float]:
    wall(ready_code, cwd, env)                       # populate caches (and .pyc files)
    wall(ready_code, cwd, env)
    base, full, inner = [], [], []
    for _ in range(runs):
        base.append(wall(import_code, cwd, env)[0])
        t, out = wall(ready_code, cwd, env)
        full.append(t)
        inner.append(float(out.split("READY")[-1].split()[0]))
    b, f = statistics.median(base), statistics.median(full)
    return name, b, f, statistics.median(inner), min(inner)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="aotx-load-bench-"))
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)         # measure what users see: .pyc files exist
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(tmp)])
    env["AOTX_CACHE_DIR"] = str(tmp / "aotx-cache")
    env["NUMBA_CACHE_DIR"] = str(tmp / "numba-cache")
    rows = []
    try:
        (tmp / "aotx_mod.py").write_text(AOTX_MOD)
        rows.append(measure("aotx @jit cache", "import numpy, compiler", READY.format(tool="compiler", module="aotx_mod"),
                            tmp, env, args.runs))
        if shutil.which("cc"):
            subprocess.run([sys.executable, "-m", "compiler", "build", str(tmp / "aotx_mod.py"), "-o",
                            str(tmp / "build")], env=env, check=True, capture_output=True)
            code = RUNTIME_READY.format(lib=str(tmp / "build" / "aotx_mod"))
            rows.append(measure("aotx runtime.load (.so)", "import numpy, runtime", code, tmp, env, args.runs))
        if importlib.util.find_spec("numba"):
            (tmp / "numba_mod.py").write_text(NUMBA_MOD)
            rows.append(measure("numba cache=True", "import numpy, numba", READY.format(tool="numba", module="numba_mod"),
                                tmp, env, args.runs))
        else:
            print("numba not installed: skipped")
        if importlib.util.find_spec("jax"):
            (tmp / "jax_mod.py").write_text(JAX_MOD.replace("CACHE", repr(str(tmp / "jax-cache"))))
            rows.append(measure("jax persistent cache", "import numpy, jax", READY.format(tool="jax", module="jax_mod"),
                                tmp, env, args.runs))
        else:
            print("jax not installed: skipped")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nfresh process, warm cache, median of {args.runs} runs (ms)\n")
    head = ("tool", "import only", "import + ready", "difference", "ready after import: median", "min")
    print(f"{head[0]:<26}{head[1]:>13}{head[2]:>16}{head[3]:>12}{head[4]:>28}{head[5]:>8}")
    for name, b, f, inner, best in rows:
        print(f"{name:<26}{b:>13.1f}{f:>16.1f}{f - b:>12.1f}{inner:>28.2f}{best:>8.2f}")
    print("\n'ready after import' runs from the end of `import <tool>` to the cached kernel being "
          "callable\n(the module with the kernel imported, for JAX the jit lowered and compiled "
          "from its cache).")


if __name__ == "__main__":
    main()
