"""The on-disk kernel cache (API.md section 6, STYLE.md point 18).

Hits are proved by ``compiler.diagnostics()["llvm_compilations"]`` (how often LLVM
ran in the process), never by timing; cross-process behaviour runs real processes.
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import compiler
from compiler import cache as kcache
from compiler import jit, pipeline
from runtime import cache as storage
from tests.runtime.subproc import env_for, last_json, run_python

MODULE = '''
import numpy as np
from compiler import grad, jit, vmap

SCALE = np.array([1.0, 2.0, 3.0])


def helper(x):
    return np.sin(x) * SCALE


@jit(signature="f64[n, 3]")
def f(x):
    return helper(x) + 1.0


def row_total(r):
    return helper(r).sum()


def loss(w, x):
    return np.sum((x @ w) ** 2)


per_row = vmap(row_total)
g = grad(loss)
'''

CHECK = '''
import json
import numpy as np
import compiler
import mod
x = np.linspace(0.0, 1.0, 12).reshape(4, 3)
w = np.array([0.5, -1.0, 2.0])
ok = np.allclose(mod.f(x), mod.helper(x) + 1.0)
ok = ok and np.allclose(mod.per_row(x), [mod.row_total(r) for r in x])
ok = ok and np.allclose(mod.g(w, x), 2 * x.T @ (x @ w))
print(json.dumps({"ok": bool(ok), **compiler.diagnostics()}))
'''


def run_check(tmp: Path, cache_dir: Path) -> dict:
    return last_json(run_python(CHECK, tmp, cache_dir).stdout)


def test_hit_across_processes_and_source_changes_rebuild(tmp_path):
    cache_dir = tmp_path / "cache"
    (tmp_path / "mod.py").write_text(MODULE)
    first = run_check(tmp_path, cache_dir)
    assert first["ok"] and first["llvm_compilations"] == 3 and first["cache_writes"] == 3
    second = run_check(tmp_path, cache_dir)                   # nothing changed: no LLVM at all
    assert second["ok"] and second["llvm_compilations"] == 0 and second["cache_hits"] == 3

    # a helper's source changes: the two kernels that inline it are rebuilt, grad(loss) is not
    (tmp_path / "mod.py").write_text(MODULE.replace("np.sin(x) * SCALE", "np.cos(x) * SCALE"))
    third = run_check(tmp_path, cache_dir)
    assert third["ok"] and third["llvm_compilations"] == 2 and third["cache_hits"] == 1

    # a global constant's value changes
    (tmp_path / "mod.py").write_text(MODULE.replace("np.sin(x) * SCALE", "np.cos(x) * SCALE")
                                     .replace("[1.0, 2.0, 3.0]", "[1.0, 2.0, 4.0]"))
    fourth = run_check(tmp_path, cache_dir)
    assert fourth["ok"] and fourth["llvm_compilations"] == 2

    # the kernel's own source changes
    (tmp_path / "mod.py").write_text(MODULE.replace("helper(x) + 1.0", "helper(x) + 2.0"))
    fifth = last_json(run_python(CHECK.replace("+ 1.0)", "+ 2.0)"), tmp_path, cache_dir).stdout)
    assert fifth["ok"] and fifth["llvm_compilations"] >= 1


# ---- every component of the key --------------------------------------------------------------

def load_module(path: Path, name: str, text: str):
    import importlib.util
    path.write_text(textwrap.dedent(text))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


BASE = '''
import numpy as np
from compiler import jit, vmap, grad
C = np.array([1.0, 2.0])

class Rule:
    @staticmethod
    def apply(x):
        return x * 2.0

def helper(x):
    return np.tanh(x) + C.sum()

def make(c):
    def closed(x):
        return x * c
    return closed

closed = make(2.0)

def f(x, y):
    return helper(x) * y + Rule.apply(x) + closed(x)
'''


def key_of(kernel, sig="f64[n], f64[n]", target=None):
    from compiler.backend import target as targets
    from compiler.signature import parse_signature
    probe = kcache.Probe(kernel, tuple(parse_signature(sig)[0]), {}, target or targets.host())
    assert probe.key is not None, probe.why_not
    return probe.key


@pytest.fixture
def base(tmp_path):
    def variant(old: str = "", new: str = ""):
        text = BASE.replace(old, new) if old else BASE
        assert not old or text != BASE
        return load_module(tmp_path / "keymod.py", "keymod", text)
    return variant


@pytest.mark.parametrize("old,new", [
    ("helper(x) * y", "helper(x) - y"),                  # the function's source
    ("np.tanh(x) + C.sum()", "np.tanh(x) + C.max()"),    # a helper's source
    ("[1.0, 2.0]", "[1.0, 2.5]"),                        # a global array's value
    ("closed = make(2.0)", "closed = make(3.0)"),        # a closure constant
    ("return x * 2.0", "return x * 3.0"),                # a custom rule class's method
], ids=["source", "helper", "global", "closure", "class"])
def test_source_and_constants_change_the_key(base, old, new):
    a = key_of(jit(base().f))
    assert key_of(jit(base().f)) == a                 # same text, reloaded: same key
    assert key_of(jit(base(old, new).f)) != a


def test_signature_options_and_transforms_change_the_key(base):
    from compiler import grad, vmap
    f = base().f
    keys = {
        "plain": key_of(jit(f)),
        "f32": key_of(jit(f), "f32[n], f32[n]"),
        "static size": key_of(jit(f), "f64[5], f64[5]"),
        "other symbol": key_of(jit(f), "f64[m], f64[n]"),
        "fastmath": key_of(jit(f, fastmath=True)),
        "name": key_of(jit(f, name="g")),
        "vmap": key_of(vmap(f), "f64[b, n], f64[b, n]"),
        "vmap in_dims": key_of(vmap(f, in_dims=(0, None)), "f64[b, n], f64[b, n]"),
        "vmap out_dims": key_of(vmap(f, out_dims=1), "f64[b, n], f64[b, n]"),
        "vmap chunk": key_of(vmap(f, chunk_size=2), "f64[b, n], f64[b, n]"),
        "grad": key_of(grad(lambda x, y: f(x, y).sum()), "f64[n], f64[n]"),
        "grad argnums": key_of(grad(lambda x, y: f(x, y).sum(), argnums=1), "f64[n], f64[n]"),
    }
    assert len(set(keys.values())) == len(keys), keys


def test_versions_and_target_change_the_key(base, monkeypatch):
    from compiler.backend import target as targets
    k = jit(base().f)
    host = targets.host()
    a = key_of(k)
    other_cpu = targets.Target(host.triple, "x86-64-v2" if host.cpu != "x86-64-v2" else "haswell", host.features)
    other_features = targets.Target(host.triple, host.cpu, host.features.replace("+avx2", "-avx2")
                                    if "+avx2" in host.features else host.features + ",+avx2")
    assert key_of(k, target=other_cpu) != a
    assert key_of(k, target=other_features) != a
    monkeypatch.setattr(kcache, "_llvm_versions", lambda: ("0.49.0", "21.1.0"))
    assert key_of(k) != a
    monkeypatch.undo()
    assert key_of(k) == a
    monkeypatch.setattr(compiler.version, "__version__", "9.9.9")
    kcache.compiler_fingerprint.cache_clear()
    try:
        assert key_of(k) != a
    finally:
        monkeypatch.undo()
        kcache.compiler_fingerprint.cache_clear()
    monkeypatch.setattr(kcache, "compiler_fingerprint", lambda: "edited compiler sources")
    assert key_of(k) != a


# ---- corrupt, truncated and foreign entries ----------------------------------------------------

def wave(x):
    return np.exp(-x * x) * np.sin(3.0 * x) + 0.25


X = np.linspace(-2.0, 2.0, 33)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("AOTX_CACHE_DIR", str(d))
    return d


def compile_and_call(fn=wave, **options):
    """(how many times LLVM ran, result) for a brand-new Kernel (no in-memory state)."""
    before = pipeline.STATS["llvm_compilations"]
    y = jit(fn, **options)(X)
    return pipeline.STATS["llvm_compilations"] - before, y


def only_entry(cache_dir: Path) -> Path:
    entries = [p for p in (cache_dir / "kernels").glob("*/*") if p.is_dir()]
    assert len(entries) == 1, entries
    return entries[0]


def rewrite_meta(entry: Path, **changes):
    meta = json.loads((entry / "meta.json").read_text())
    meta.update(changes)
    meta["checksum"] = sign(entry, meta)               # a well-formed entry, just foreign
    (entry / "meta.json").write_text(json.dumps(meta))


def sign(entry: Path, meta: dict) -> str:
    """The checksum the cache that holds `entry` gives `meta` (as if aotx had written it)."""
    return storage.DiskCache(entry.parents[2]).sign(entry.name, meta)


def truncate(p: Path):
    p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2])


def flip(p: Path):
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0xFF
    p.write_bytes(bytes(data))


CORRUPTIONS = {
    "meta truncated": lambda e: truncate(e / "meta.json"),
    "meta garbage": lambda e: (e / "meta.json").write_bytes(b"\x00\xff garbage {"),
    "meta empty": lambda e: (e / "meta.json").write_bytes(b""),
    "meta edited": lambda e: (e / "meta.json").write_text(
        (e / "meta.json").read_text().replace('"symbol": "aotx_wave"', '"symbol": "aotx_other"')),
    "meta deleted": lambda e: (e / "meta.json").unlink(),
    "object truncated": lambda e: truncate(e / "object.o"),
    "object flipped": lambda e: flip(e / "object.o"),
    "object empty": lambda e: (e / "object.o").write_bytes(b""),
    "object deleted": lambda e: (e / "object.o").unlink(),
    "foreign aotx version": lambda e: rewrite_meta(e, aotx_version="0.0.1"),
    "foreign llvm": lambda e: rewrite_meta(e, llvm=["0.1.0", "3.0"]),
    "foreign schema": lambda e: rewrite_meta(e, schema=999),
    "foreign cpu": lambda e: rewrite_meta(e, target=["x86_64-unknown-linux-gnu", "bonnell", "+sse2", "0"]),
}


@pytest.mark.parametrize("damage", list(CORRUPTIONS), ids=list(CORRUPTIONS))
def test_damaged_entry_is_ignored_rebuilt_and_repaired(cache_dir, damage):
    n, y = compile_and_call()
    assert n == 1 and np.allclose(y, wave(X))
    assert compile_and_call()[0] == 0                   # a hit
    entry = only_entry(cache_dir)
    if "meta" in damage:
        assert "aotx_wave" in (entry / "meta.json").read_text()
    CORRUPTIONS[damage](entry)
    n, y = compile_and_call()
    assert n == 1 and np.allclose(y, wave(X))           # ignored and rebuilt, no crash
    n, y = compile_and_call()
    assert n == 0 and np.allclose(y, wave(X))           # and the entry was replaced by a good one
    only_entry(cache_dir)


def test_cache_dir_is_private_and_entries_are_json_plus_object(tmp_path, monkeypatch):
    d = tmp_path / "deep" / "aotx"
    monkeypatch.setenv("AOTX_CACHE_DIR", str(d))
    compile_and_call()
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    entry = only_entry(d)
    assert sorted(p.name for p in entry.iterdir()) == ["meta.json", "object.o"]
    meta = json.loads((entry / "meta.json").read_text())
    assert meta["checksum"] == sign(entry, meta)
    assert meta["inputs"] == [{"name": "x", "type": "f64[33]"}]
    assert not list((d / "tmp").iterdir())              # no leftovers of the atomic write


def test_disabled_cache_writes_nothing(cache_dir, monkeypatch):
    assert compile_and_call(cache=False)[0] == 1
    assert compile_and_call(cache=False)[0] == 1
    assert not (cache_dir / "kernels").exists()
    monkeypatch.setenv("AOTX_DISABLE_CACHE", "1")
    assert compile_and_call()[0] == 1
    assert compile_and_call()[0] == 1
    assert not (cache_dir / "kernels").exists()


def test_restored_kernel_keeps_result_structure_and_lower(cache_dir):
    def pair(x):
        return {"a": x * 2.0, "b": (x.sum(), 3)}
    first = jit(pair)(X)
    before = pipeline.STATS["llvm_compilations"]
    k = jit(pair)
    second = k(X)
    assert pipeline.STATS["llvm_compilations"] == before
    assert set(second) == {"a", "b"} and second["b"][1] == 3 and isinstance(second["b"], tuple)
    np.testing.assert_allclose(second["a"], first["a"])
    assert "define" in k.lower(X).llvm                   # lower() still works after a hit


# ---- concurrency and unwritable directories -----------------------------------------------------

CONCURRENT = '''
import json, os, sys, time
import numpy as np
import compiler
i, tmp = int(sys.argv[1]), sys.argv[2]
open(os.path.join(tmp, f"ready{i}"), "w").close()
while not os.path.exists(os.path.join(tmp, "go")):
    time.sleep(0.005)
from compiler import jit
import mod
x = np.linspace(0.0, 1.0, 12).reshape(4, 3)
ok = bool(np.allclose(mod.f(x), mod.helper(x) + 1.0))
print(json.dumps({"ok": ok, **compiler.diagnostics()}))
'''


def test_concurrent_writers_leave_one_valid_entry(tmp_path):
    cache_dir = tmp_path / "cache"
    (tmp_path / "mod.py").write_text(MODULE.split("def row_total")[0])
    procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT, str(i), str(tmp_path)], cwd=tmp_path,
                              env=env_for(cache_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for i in range(8)]
    deadline = time.time() + 120
    while sum(1 for i in range(8) if (tmp_path / f"ready{i}").exists()) < 8 and time.time() < deadline:
        time.sleep(0.01)
    (tmp_path / "go").touch()
    reports = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        reports.append(last_json(out))
    assert all(r["ok"] for r in reports)
    assert sum(r["llvm_compilations"] for r in reports) >= 1
    entries = list(storage.DiskCache(cache_dir).entries())
    assert len(entries) == 1 and entries[0].meta is not None      # one whole, valid entry
    assert not list((cache_dir / "tmp").iterdir())
    after = run_check_f_only(tmp_path, cache_dir)
    assert after["ok"] and after["llvm_compilations"] == 0


def run_check_f_only(tmp: Path, cache_dir: Path) -> dict:
    code = CONCURRENT.split("open(os.path")[0] + '''
import mod
x = np.linspace(0.0, 1.0, 12).reshape(4, 3)
print(json.dumps({"ok": bool(np.allclose(mod.f(x), mod.helper(x) + 1.0)), **compiler.diagnostics()}))
'''
    proc = subprocess.run([sys.executable, "-c", code, "0", str(tmp)], cwd=tmp, env=env_for(cache_dir),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return last_json(proc.stdout)


def read_only_dir(tmp_path: Path) -> Path:
    if os.geteuid() != 0:
        d = tmp_path / "ro"
        d.mkdir()
        d.chmod(0o500)
        return d
    if sys.platform.startswith("linux") and os.path.isdir("/sys"):
        return Path("/sys")          # not writable even by root
    pytest.skip("no read-only directory available as root")


def test_read_only_cache_dir_warns_once_and_works(tmp_path):
    (tmp_path / "mod.py").write_text(MODULE)
    proc = run_python(CHECK, tmp_path, read_only_dir(tmp_path))
    report = last_json(proc.stdout)
    assert report["ok"] and report["llvm_compilations"] == 3 and report["cache_writes"] == 0
    assert proc.stderr.count("CacheWarning") == 1, proc.stderr
    assert "not usable" in proc.stderr
