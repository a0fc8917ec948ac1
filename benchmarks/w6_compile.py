"""W6: compile time, cached load and import time. Every sample is one compile (a fresh
kernel object; the worker runs with AOTX_DISABLE_CACHE=1) or one fresh process:

* compile W1: the first call of W1's expression on 1000 float64 (trace, compile, call);
* compile W3: the first call of the MLP per-example gradients (batch 16);
* cached load: in a fresh process with a warm on-disk cache, from the end of ``import <tool>``
  to the kernel being ready and called once (load_bench.py's measurement: aotx @jit, aotx
  runtime.load of a built .so, numba cache=True, JAX's persistent cache);
* import: ``import <tool>`` after ``import numpy`` in a fresh process (the llvmlite column is
  ``import llvmlite.binding``, the floor under aotx).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

import load_bench
from compiler import grad, jit, vmap
from harness import Case, Config, Skip, jax_module, module, torch_module
from run import wave
from w3_gradients import _numba_mlp, mlp_loss

MODES = ("1",)


def _not_tiny(cfg: Config) -> None:
    if cfg.tiny:
        raise Skip("skipped with --tiny (time)")


def _first_call(make: Callable[[], Callable[[], Any]]) -> Callable[[], float]:
    def sample() -> float:
        start = time.perf_counter()
        make()()
        return time.perf_counter() - start
    return sample


def compile_cases(cfg: Config) -> Iterator[Case]:
    x = np.linspace(-4, 4, 1000)

    def torch_compile(fn: Any, *args: np.ndarray) -> Callable[[], Callable[[], float]]:
        def make() -> Callable[[], float]:
            if cfg.tiny:
                raise Skip("torch.compile skipped with --tiny (compile time)")
            t = torch_module(cfg)
            targs = [t.from_numpy(a) for a in args]

            def fresh() -> Callable[[], Any]:
                t._dynamo.reset()
                tf = t.compile(fn, dynamic=False)
                return lambda: tf(*targs)
            return _first_call(fresh)
        return make

    def jax_fresh(build: Callable[[Any, Any], Any], *args: np.ndarray) -> Callable[[], Callable[[], float]]:
        def make() -> Callable[[], float]:
            j, jnp = jax_module(), module("jax.numpy")

            def fresh() -> Callable[[], Any]:
                j.clear_caches()
                jf = j.jit(build(j, jnp))
                return lambda: j.block_until_ready(jf(*args))
            return _first_call(fresh)
        return make

    yield Case("compile W1 (wave f64)", {
        "aotx": lambda: _first_call(lambda: (lambda k: lambda: k(x))(jit(wave, cache=False))),
        "numba": lambda: _first_call(lambda: (lambda k: lambda: k(x))(module("numba").njit(wave))),
        "jax": jax_fresh(lambda j, jnp: lambda v: jnp.exp(-v**2) * jnp.sin(3 * v) + 0.5 * v * jnp.tanh(v), x),
        "torch.compile": torch_compile(wave_torch(), x)}, kind="sample", modes=MODES)

    rng = np.random.default_rng(0)
    args = (rng.standard_normal((128, 64)), rng.standard_normal(64), rng.standard_normal((16, 128)),
            rng.standard_normal(16))

    def aotx_w3() -> Callable[[], Any]:
        k = vmap(grad(mlp_loss, argnums=(0, 1)), in_dims=(None, None, 0, 0))
        return lambda: k(*args)

    def numba_w3() -> Callable[[], Any]:
        _not_tiny(cfg)
        nb = _numba_mlp()
        return lambda: nb(*args)

    def torch_w3() -> Any:
        t = module("torch")
        return t.func.vmap(t.func.grad(lambda W1, w2, x, y: (t.tanh(x @ W1) @ w2 - y) ** 2, argnums=(0, 1)),
                           in_dims=(None, None, 0, 0))

    def torch_w3_make() -> Callable[[], float]:
        return torch_compile(torch_w3(), *args)()

    yield Case("compile W3 (MLP per-example grads)", {
        "aotx": lambda: _first_call(aotx_w3), "numba": lambda: _first_call(numba_w3),
        "jax": jax_fresh(lambda j, jnp: j.vmap(j.grad(lambda W1, w2, x, y: (jnp.tanh(x @ W1) @ w2 - y) ** 2,
                                                       argnums=(0, 1)), in_axes=(None, None, 0, 0)), *args),
        "torch.compile": torch_w3_make}, kind="sample", modes=MODES,
        note="numba: the hand-written loops of W3")


def wave_torch() -> Any:
    def fn(v: Any) -> Any:
        t = sys.modules["torch"]
        return t.exp(-v**2) * t.sin(3 * v) + 0.5 * v * t.tanh(v)
    return fn


class _Fresh:
    """A temporary directory with the modules and caches of the fresh-process measurements."""

    def __init__(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="aotx-bench-"))
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.pop("AOTX_DISABLE_CACHE", None)
        env["PYTHONPATH"] = os.pathsep.join([str(load_bench.REPO), str(self.tmp)])
        env["AOTX_CACHE_DIR"] = str(self.tmp / "aotx-cache")
        env["NUMBA_CACHE_DIR"] = str(self.tmp / "numba-cache")
        self.env = env

    def ready(self, code: str) -> Callable[[], float]:
        def sample() -> float:
            out = load_bench.wall(code, self.tmp, self.env)[1]
            return float(out.split("READY")[-1].split()[0]) / 1e3
        return sample

    def close(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def load_cases(cfg: Config, fresh: _Fresh) -> Iterator[Case]:
    tmp = fresh.tmp

    def aotx() -> Callable[[], float]:
        (tmp / "aotx_mod.py").write_text(load_bench.AOTX_MOD)
        return fresh.ready(load_bench.READY.format(tool="compiler", module="aotx_mod"))

    def aotx_so() -> Callable[[], float]:
        if cfg.tiny:
            raise Skip("skipped with --tiny (aotx build)")
        if not shutil.which("cc"):
            raise Skip("no C compiler (cc) to link the .so")
        (tmp / "aotx_mod.py").write_text(load_bench.AOTX_MOD)
        subprocess.run([sys.executable, "-m", "compiler", "build", str(tmp / "aotx_mod.py"), "-o",
                        str(tmp / "build")], env=fresh.env, check=True, capture_output=True)
        return fresh.ready(load_bench.RUNTIME_READY.format(lib=str(tmp / "build" / "aotx_mod")))

    def numba() -> Callable[[], float]:
        _not_tiny(cfg)
        module("numba")
        (tmp / "numba_mod.py").write_text(load_bench.NUMBA_MOD)
        return fresh.ready(load_bench.READY.format(tool="numba", module="numba_mod"))

    def jax() -> Callable[[], float]:
        _not_tiny(cfg)
        module("jax")
        (tmp / "jax_mod.py").write_text(load_bench.JAX_MOD.replace("CACHE", repr(str(tmp / "jax-cache"))))
        return fresh.ready(load_bench.READY.format(tool="jax", module="jax_mod"))

    yield Case("cached kernel ready after import (fresh process)", {
        "aotx": aotx, "aotx runtime.load": aotx_so, "numba": numba, "jax": jax}, kind="sample", modes=MODES,
        note="exp(-x*x)*sin(3x), warm on-disk cache (load_bench.py)")

    def importing(name: str, optional: bool = True) -> Callable[[], Callable[[], float]]:
        def make() -> Callable[[], float]:
            if optional:
                module(name.split(".")[0])
                if name != "llvmlite.binding":
                    _not_tiny(cfg)
            return fresh.ready("import time, numpy\nt0 = time.perf_counter()\n"
                               f"import {name}\nprint(f'READY {{1e3 * (time.perf_counter() - t0)}}')")
        return make

    yield Case("import after numpy (fresh process)", {
        "aotx": importing("compiler", False), "llvmlite": importing("llvmlite.binding"),
        "numba": importing("numba"), "jax": importing("jax"), "torch": importing("torch")},
        kind="sample", modes=MODES, note="aotx: import compiler; llvmlite: import llvmlite.binding")


def cases(cfg: Config) -> Iterator[Case]:
    yield from compile_cases(cfg)
    fresh = _Fresh()
    try:
        yield from load_cases(cfg, fresh)
    finally:
        fresh.close()
