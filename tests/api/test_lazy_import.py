"""`import compiler` loads what a kernel loaded from the on-disk cache needs, and the compile
machinery (frontend, primitives, transforms, code generator) only with the first compile or the
first use of a name that needs it (docs/internals.md, "Import time"). Checked structurally, in
fresh processes: which modules are in ``sys.modules``, never how long anything took."""
from __future__ import annotations

from tests.runtime.subproc import last_json, run_python

#: modules of the compile machinery: none is imported by `import compiler` or by a cache hit
HEAVY = ["compiler.pipeline", "compiler.frontend.staging", "compiler.frontend.stager",
         "compiler.frontend.numpy_api", "compiler.primitives", "compiler.primitives.ops",
         "compiler.transforms", "compiler.backend.codegen", "compiler.backend.passes",
         "compiler.api.autodiff", "compiler.api.vmap", "compiler.function", "compiler.random"]

MODULE = '''
import numpy as np
from compiler import jit

@jit(signature="f64[n]")
def f(x):
    return np.exp(-x * x) * np.sin(3.0 * x)
'''

REPORT = f'''
import json, sys
HEAVY = {HEAVY!r}
def loaded():
    return sorted(m for m in HEAVY if m in sys.modules)
'''


def _run(tmp_path, name: str, code: str, **env: str):
    """`code` as module `name` of a file (kernels need their source) in a fresh process."""
    (tmp_path / f"{name}.py").write_text(REPORT + code)
    return run_python(f"import {name}", tmp_path, tmp_path / "cache", **env)


def test_import_then_cache_hit_load_no_compile_machinery(tmp_path):
    (tmp_path / "lazy_mod.py").write_text(MODULE)
    run_python("import lazy_mod", tmp_path, tmp_path / "cache")      # compiles, fills the cache
    out = _run(tmp_path, "hit", '''
import numpy as np
import compiler
after_import = loaded()
import lazy_mod                                   # a cache hit: loaded, not compiled
x = np.linspace(-1.0, 1.0, 1001)
y = lazy_mod.f(x)
y2 = lazy_mod.f(x)                                # the native entry (second call)
ok = bool(np.allclose(y, np.exp(-x * x) * np.sin(3.0 * x), rtol=1e-12, atol=1e-15)
          and np.array_equal(y, y2))
after_hit = loaded()
hits = compiler.diagnostics()
# then a compile: `jit` inside compiled code, no transform name looked up in this process
@compiler.jit
def h(x):
    return compiler.jit(lambda t: t + 1.0)(x) * 2.0
staged_ok = bool(np.array_equal(h(x), (x + 1.0) * 2.0))
print(json.dumps([after_import, after_hit, ok, hits["cache_hits"], hits["llvm_compilations"], staged_ok,
                  "compiler.pipeline" in sys.modules]))
''')
    after_import, after_hit, ok, hits, llvm_runs, staged_ok, compiled = last_json(out.stdout)
    assert after_import == []
    assert after_hit == []
    assert ok
    assert hits == 1 and llvm_runs == 0
    assert staged_ok and compiled


def test_first_compile_and_names_load_the_machinery(tmp_path):
    out = _run(tmp_path, "first", '''
import numpy as np
import compiler
import compiler.api
before = loaded()
api_names = sorted(compiler.api.__all__)
from compiler import *
names = {n: type(globals()[n]).__name__ for n in compiler.__all__}
after_star = loaded()
x = np.linspace(0.0, 1.0, 5)
# jit, vmap and grad inside compiled code (registered before the first staging)
@jit
def g(x):
    return vmap(lambda t: t * 2.0)(x) + grad(lambda t: np.sum(np.sin(t)))(x) + jit(np.cos)(x)
ok = bool(np.allclose(g(x), 2.0 * x + np.cos(x) + np.cos(x)))
print(json.dumps([before, after_star, loaded(), ok, names, api_names,
                  [getattr(compiler.api, n) is not None for n in compiler.api.__all__]]))
''', AOTX_DISABLE_CACHE="1")
    before, after_star, after_compile, ok, names, api_names, api_ok = last_json(out.stdout)
    assert before == []
    assert "compiler.api.vmap" in after_star and "compiler.random" in after_star
    assert after_compile == sorted(HEAVY)
    assert ok
    assert names["vmap"] == names["grad"] == names["jit"] == "function"
    assert names["random"] == names["errors"] == "module"
    assert names["Function"] == names["Kernel"] == "type"
    assert all(api_ok) and "grad" in api_names

