"""Across processes: seed makes runs reproducible (also for a kernel loaded from the on-disk
cache in the second process), and a kernel with draws built by ``aotx build`` and loaded by
``runtime.load`` (NumPy only) draws the same numbers as the compiler's kernels."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tests.random import reference as R
from tests.runtime.subproc import BLOCK_COMPILER, env_for, last_json, run_python

MODULE = textwrap.dedent('''
    import numpy as np
    from compiler import jit, random

    @jit(signature="f64[n]")
    def jitter(x):
        return x + random.normal(x.shape)

    @jit(signature="i64[], f64[n]")
    def jitter_key(key, x):
        return x + random.normal(key, x.shape)

    @jit(signature="f64[n]")
    def plain(x):
        return x * 2.0
''')

RUN = textwrap.dedent('''
    import json, sys
    import numpy as np
    import compiler
    from compiler import random
    sys.path.insert(0, ".")
    import kernels
    seeded = len(sys.argv) > 1
    if seeded:
        random.seed(2024)
    out = [kernels.jitter(np.zeros(6)).tolist(), kernels.jitter(np.zeros(6)).tolist()]
    print(json.dumps({"out": out, "hits": compiler.diagnostics()["cache_hits"]}))
''')


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("random_proc")
    (d / "kernels.py").write_text(MODULE)
    (d / "run.py").write_text(RUN)
    return d


def _run(workdir, cache, *argv):
    proc = subprocess.run([sys.executable, "run.py", *argv], cwd=workdir, text=True, capture_output=True,
                          env=env_for(cache), timeout=300)
    assert proc.returncode == 0, proc.stderr
    return last_json(proc.stdout)


def test_seed_reproduces_across_processes_and_cache_hits(workdir, tmp_path):
    cache = tmp_path / "cache"
    first = _run(workdir, cache, "seeded")
    second = _run(workdir, cache, "seeded")
    assert second["hits"] >= 1                      # the second process loaded from the cache
    assert first["out"] == second["out"]
    assert first["out"][0] != first["out"][1]       # successive calls draw new numbers
    for call, got in enumerate(first["out"]):       # and they are the documented ones
        (k,) = R.draw_keys(R.call_key(2024, call), 1)
        np.testing.assert_allclose(got, R.normal(k, (6,)), rtol=1e-13, atol=1e-14)
    unseeded = [_run(workdir, cache)["out"] for _ in range(2)]
    assert unseeded[0] != unseeded[1] and unseeded[0] != first["out"]


def test_aot_build_and_runtime_load(workdir, tmp_path):
    out = tmp_path / "build"
    proc = subprocess.run([sys.executable, "-m", "compiler", "build", str(workdir / "kernels.py"), "-o",
                           str(out)], capture_output=True, text=True, env=env_for(tmp_path / "c"),
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((out / "kernels.json").read_text())
    flags = {k["name"]: k["random"] for k in manifest["kernels"]}
    assert flags == {"jitter": True, "jitter_key": False, "plain": False}
    header = (out / "kernels.h").read_text()
    assert "KERNELS_JITTER_RANDOM_KEY 1" in header and "KERNELS_PLAIN_RANDOM_KEY 0" in header
    report = run_python(BLOCK_COMPILER + textwrap.dedent(f'''
        import json, sys
        import numpy as np
        import runtime
        lib = runtime.load({str(out / "kernels")!r})
        runtime.seed(99)
        a, b = lib.jitter(np.zeros(5)), lib.jitter(np.zeros(5))
        keyed = lib.jitter_key(np.int64(12345), np.ones(3))
        print(json.dumps({{"a": a.tolist(), "b": b.tolist(), "keyed": keyed.tolist(),
                          "plain": lib.plain(np.ones(2)).tolist(),
                          "compiler": "compiler" in sys.modules}}))
    '''), cwd=tmp_path)
    got = last_json(report.stdout)
    assert got["compiler"] is False
    for call, name in enumerate(("a", "b")):
        (k,) = R.draw_keys(R.call_key(99, call), 1)
        np.testing.assert_allclose(got[name], R.normal(k, (5,)), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(got["keyed"], 1 + R.normal(12345, (3,)), rtol=1e-13)
    assert got["plain"] == [2.0, 2.0]
