"""The cache runs only object code the user wrote, never hangs or crashes on what it finds,
removes only what it wrote, and stays consistent when a compile is interrupted (docs/aot.md).

Cases that could hang or crash the process (a FIFO, /dev/zero, object code LLVM cannot
parse) run in a subprocess with a timeout.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from compiler import jit, pipeline
from runtime import cache as storage
from tests.runtime.subproc import env_for, last_json, run_python

X = np.linspace(-2.0, 2.0, 33)
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
OTHER_UID = 65534                                          # "nobody"


def wave(x):
    return np.exp(-x * x) * np.sin(3.0 * x) + 0.25


def ramp(x):
    return x * 0.5 - 1.0


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("AOTX_CACHE_DIR", str(d))
    return d


def compile_and_call(fn=wave):
    """(how many times LLVM ran, result) for a brand-new Kernel (no in-memory state)."""
    before = pipeline.STATS["llvm_compilations"]
    y = jit(fn)(X)
    return pipeline.STATS["llvm_compilations"] - before, y


def entry_of(cache_dir: Path, fn=wave) -> Path:
    """The entry `fn` is stored under (compiled once if it is not there yet)."""
    before = set(entries(cache_dir))
    compile_and_call(fn)
    new = set(entries(cache_dir)) - before
    if new:
        (entry,) = new
        return entry
    n, _ = compile_and_call(fn)
    assert n == 0
    raise AssertionError("the entry exists but was not found")


def entries(cache_dir: Path) -> list[Path]:
    return [p for p in (cache_dir / "kernels").glob("*/*") if p.is_dir()]


def resign(entry: Path, meta: dict, key: str | None = None) -> None:
    """Write `meta` with the checksum the entry's own cache gives it (as if aotx wrote it)."""
    key = key or entry.name
    meta = dict(meta, key=key)
    meta["checksum"] = storage.DiskCache(entry.parents[2]).sign(key, meta)
    (entry / "meta.json").write_text(json.dumps(meta))


def meta_of(entry: Path) -> dict:
    return json.loads((entry / "meta.json").read_text())


# ---- aotx cache clear removes only what aotx wrote ------------------------------------------

def test_clear_removes_only_aotx_entries(cache_dir):
    keep = entry_of(cache_dir, ramp)
    gone = entry_of(cache_dir, wave)
    mine = {cache_dir / "tmp" / "notes.txt": "user file in tmp/",
            cache_dir / "kernels" / "README": "user file in kernels/",
            cache_dir / "kernels" / "zz" / "photo.jpg": "not a shard",
            cache_dir / "kernels" / gone.parent.name / ("f" * 64): "a file with a key's name",
            keep / "notes.txt": "a file aotx does not write, inside an entry"}
    for path, text in mine.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (cache_dir / "tmp" / f"{'a' * 64}.999999.0badc0de").mkdir()      # an interrupted write
    (cache_dir / ".aotx-cache.json.999999.0badc0de").write_text("{")  # an interrupted marker
    assert storage.DiskCache(cache_dir).clear() == 1                 # `gone`; `keep` holds a user file
    for path, text in mine.items():
        assert path.read_text() == text
    assert not gone.exists() and not (keep / "meta.json").exists() and not (keep / "object.o").exists()
    assert sorted(p.name for p in (cache_dir / "tmp").iterdir()) == ["notes.txt"]
    assert sorted(p.name for p in cache_dir.iterdir()) == ["aotx-cache.json", "kernels", "tmp"]


def test_clear_and_use_of_a_directory_that_is_not_a_cache(tmp_path, monkeypatch):
    home = tmp_path / "home"
    for rel in ("tmp/draft.txt", "kernels/notes.txt", ".bashrc"):
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(rel)
    before = sorted(str(p.relative_to(home)) for p in home.rglob("*"))
    monkeypatch.setenv("AOTX_CACHE_DIR", str(home))
    proc = subprocess.run([sys.executable, "-m", "compiler", "cache", "clear"], capture_output=True,
                          text=True, env=env_for(home), timeout=120)
    assert proc.returncode == 0 and "not usable" in proc.stderr and "removed 0" in proc.stdout
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        n1, y = compile_and_call()
        n2, _ = compile_and_call()
    assert n1 == n2 == 1 and np.allclose(y, wave(X))                  # works, not cached
    assert [str(w.message) for w in caught if issubclass(w.category, storage.CacheWarning)] == [
        f"aotx: the kernel cache directory {home} is not usable (it holds files aotx did not write "
        f"(.bashrc) and no aotx-cache.json; point AOTX_CACHE_DIR at a new or empty directory); compiled "
        f"kernels will not be cached in this process (set AOTX_CACHE_DIR to a directory of your own, "
        f"or AOTX_DISABLE_CACHE=1)"]
    assert sorted(str(p.relative_to(home)) for p in home.rglob("*")) == before


# ---- only the user's own object code runs ----------------------------------------------------

PLANT = '''
import json, numpy as np
from compiler import jit
from runtime import cache as storage

def wave(x):
    return np.exp(-x * x) * np.sin(3.0 * x) + 0.25

def evil(x):
    return x * 0.0 + 666.0

jit(wave)(np.linspace(-2.0, 2.0, 33))
'''


def plant(cache_dir: Path) -> Path:
    """The attack: compile `evil`, then store its object under `wave`'s key with a checksum
    the attacker computes (here with the cache's own secret: an attacker who can write the
    directory can also replace the marker)."""
    victim = entry_of(cache_dir, wave)
    evil_entry = entry_of(cache_dir, lambda x: x * 0.0 + 666.0)
    meta = meta_of(evil_entry)
    shutil.copy(evil_entry / "object.o", victim / "object.o")
    resign(victim, meta)
    shutil.rmtree(evil_entry)
    n, y = compile_and_call()                        # the planted entry is accepted as the owner's
    assert n == 0 and np.all(y == 666.0)
    return victim


def chown_tree(path: Path, uid: int) -> None:
    for p in [path, *path.rglob("*")]:
        os.lchown(p, uid, -1)


def call_warnings() -> tuple[int, np.ndarray, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        n, y = compile_and_call()
        compile_and_call()
    return n, y, [str(w.message) for w in caught if issubclass(w.category, storage.CacheWarning)]


@pytest.mark.skipif(not AS_ROOT, reason="needs root to give files to another user")
@pytest.mark.parametrize("owned", ["root", "entry", "object", "marker"])
def test_planted_entry_of_another_user_never_runs(cache_dir, monkeypatch, owned):
    victim = plant(cache_dir)
    target = {"root": cache_dir, "entry": victim, "object": victim / "object.o",
              "marker": cache_dir / "aotx-cache.json"}[owned]
    chown_tree(target, OTHER_UID) if target.is_dir() else os.lchown(target, OTHER_UID, -1)
    from compiler import cache as kcache
    monkeypatch.setattr(kcache, "_caches", {})       # a new process's view of the directory
    n, y, caught = call_warnings()
    assert n == 1 and np.allclose(y, wave(X))        # compiled, the planted code did not run
    assert len(caught) == 1 and "uid 65534" in caught[0], caught


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757])
def test_writable_root_is_tightened_and_its_entries_verified(cache_dir, monkeypatch, mode):
    victim = entry_of(cache_dir, wave)
    os.chmod(cache_dir, mode)
    other = storage.DiskCache(cache_dir.parent / "elsewhere")        # the attacker's own cache
    other.ready(create=True)
    meta = meta_of(victim)
    meta["checksum"] = other.sign(victim.name, meta)                  # signed with another secret
    (victim / "meta.json").write_text(json.dumps(meta))
    from compiler import cache as kcache
    monkeypatch.setattr(kcache, "_caches", {})
    n, y, caught = call_warnings()
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700 and caught == []
    assert n == 1 and np.allclose(y, wave(X))
    assert compile_and_call()[0] == 0                                  # replaced by a good entry


def test_writable_entry_or_file_is_refused_with_one_warning(cache_dir, monkeypatch):
    victim = entry_of(cache_dir, wave)
    second = entry_of(cache_dir, ramp)
    os.chmod(victim, 0o777)
    os.chmod(second / "object.o", 0o666)
    from compiler import cache as kcache
    monkeypatch.setattr(kcache, "_caches", {})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert compile_and_call(wave)[0] == 1 and compile_and_call(ramp)[0] == 1
        assert compile_and_call(wave)[0] == 0 and compile_and_call(ramp)[0] == 0   # replaced
    messages = [str(w.message) for w in caught if issubclass(w.category, storage.CacheWarning)]
    assert len(messages) == 1 and "writable by group or others" in messages[0], messages


def test_entry_moved_or_copied_does_not_verify(cache_dir, tmp_path, monkeypatch):
    a, b = entry_of(cache_dir, wave), entry_of(cache_dir, ramp)
    shutil.rmtree(b)
    shutil.copytree(a, b)                             # wave's entry moved under ramp's key
    n, y = compile_and_call(ramp)
    assert n == 1 and np.allclose(y, ramp(X))
    assert compile_and_call(ramp)[0] == 0
    other = tmp_path / "other"                        # a whole cache copied from elsewhere
    monkeypatch.setenv("AOTX_CACHE_DIR", str(other))
    assert compile_and_call(wave)[0] == 1
    shutil.rmtree(other / "kernels")
    shutil.copytree(cache_dir / "kernels", other / "kernels")
    assert compile_and_call(wave)[0] == 1


# ---- what the cache finds can neither hang nor crash the process ------------------------------

DAMAGE = '''
import json, os, pathlib, shutil, sys
import numpy as np
from compiler import jit, pipeline
from runtime import cache as storage

X = np.linspace(-2.0, 2.0, 33)

def wave(x):
    return np.exp(-x * x) * np.sin(3.0 * x) + 0.25

def ramp(x):
    return x * 0.5 - 1.0

def run(fn=wave):
    before = pipeline.STATS["llvm_compilations"]
    y = jit(fn)(X)
    return pipeline.STATS["llvm_compilations"] - before, bool(np.allclose(y, fn(X)))

def entry():
    (e,) = [p for p in (ROOT / "kernels").glob("*/*") if p.is_dir()]
    return e

def resign(e, meta):
    meta["checksum"] = storage.DiskCache(ROOT).sign(e.name, meta)
    (e / "meta.json").write_text(json.dumps(meta))

def elf_field(e, offset, fmt, value):
    import struct
    data = bytearray((e / "object.o").read_bytes())
    struct.pack_into(fmt, data, offset, value)
    set_object(e, bytes(data))

def set_object(e, data):
    import hashlib
    (e / "object.o").unlink()
    (e / "object.o").write_bytes(data)
    meta = json.loads((e / "meta.json").read_text())
    meta["object"] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    resign(e, meta)

def edit_meta(e, **changes):
    meta = json.loads((e / "meta.json").read_text())
    meta.update(changes)
    resign(e, meta)

def section_offset(e):
    import struct
    data = (e / "object.o").read_bytes()
    shoff, = struct.unpack_from("<Q", data, 40)
    return shoff + 64 + 24                       # sh_offset of section 1

def other_object(e):
    data = jit(ramp).specialize(X).object        # a valid object without wave's symbol
    set_object(e, data)

CASES = {
    "meta fifo": lambda e: ((e / "meta.json").unlink(), os.mkfifo(e / "meta.json")),
    "object fifo": lambda e: ((e / "object.o").unlink(), os.mkfifo(e / "object.o")),
    "object -> /dev/zero": lambda e: ((e / "object.o").unlink(), os.symlink("/dev/zero", e / "object.o")),
    "meta -> /dev/zero": lambda e: ((e / "meta.json").unlink(), os.symlink("/dev/zero", e / "meta.json")),
    "object is a directory": lambda e: ((e / "object.o").unlink(), (e / "object.o").mkdir()),
    "object larger than recorded": lambda e: os.truncate(e / "object.o", 1 << 34),
    "meta huge": lambda e: os.truncate(e / "meta.json", 1 << 34),
    "entry -> elsewhere": lambda e: (shutil.copytree(e, ROOT.parent / "copy"), shutil.rmtree(e),
                                     os.symlink(ROOT.parent / "copy", e)),
    "object random bytes": lambda e: set_object(e, os.urandom(5000)),
    "object empty": lambda e: set_object(e, b""),
    "object ELF header only": lambda e: set_object(e, (e / "object.o").read_bytes()[:64]),
    "object truncated": lambda e: set_object(e, (e / "object.o").read_bytes()[:700]),
    "object section outside": lambda e: elf_field(e, section_offset(e), "<Q", 1 << 40),
    "object other machine": lambda e: elf_field(e, 18, "<H", 40),
    "object without the symbol": other_object,
    "meta symbol": lambda e: edit_meta(e, symbol=7),
    "meta inputs": lambda e: edit_meta(e, inputs=[{"name": "x", "type": "q99[3"}]),
    "meta outputs": lambda e: edit_meta(e, outputs="f64[33]"),
    "meta symbols": lambda e: edit_meta(e, symbols=["nope"]),
    "meta out_tree": lambda e: edit_meta(e, out_tree={"set": 1}),
    "meta missing field": lambda e: edit_meta(e, out_types=None),
    "meta is a list": lambda e: (e / "meta.json").write_text("[1, 2]"),
}
results = {}
for name in sys.argv[1:]:
    ROOT = pathlib.Path(os.environ["AOTX_CACHE_DIR"]) / name.replace(" ", "_").replace("/", "_")
    os.environ["AOTX_CACHE_DIR"] = str(ROOT)
    first = run()
    CASES[name](entry())
    print("damaged:", name, flush=True)
    results[name] = [first, run(), run()]
    os.environ["AOTX_CACHE_DIR"] = str(ROOT.parent)
print(json.dumps(results))
'''

DAMAGE_CASES = ["meta fifo", "object fifo", "object -> /dev/zero", "meta -> /dev/zero",
                "object is a directory", "object larger than recorded", "meta huge",
                "entry -> elsewhere", "object random bytes", "object empty", "object ELF header only",
                "object truncated", "object section outside", "object other machine",
                "object without the symbol", "meta symbol", "meta inputs", "meta outputs",
                "meta symbols", "meta out_tree", "meta missing field", "meta is a list"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="FIFOs, /dev/zero and ELF objects")
def test_damaged_entries_neither_hang_nor_crash_and_are_replaced(tmp_path):
    """Each damage, checksums recomputed where the damage is to content: the next compile
    rebuilds (LLVM runs once, the result is right) and replaces the entry (then a hit)."""
    (tmp_path / "damage.py").write_text(DAMAGE)
    proc = subprocess.run([sys.executable, "damage.py", *DAMAGE_CASES], cwd=tmp_path, capture_output=True,
                          text=True, env=env_for(tmp_path), timeout=600)
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-3000:])
    got = last_json(proc.stdout)
    for name in DAMAGE_CASES:
        first, rebuilt, after = got[name]
        assert first == [1, True], name
        if name == "entry -> elsewhere":               # not a directory of the cache's own: not replaced
            assert rebuilt == [1, True], name
            continue
        assert rebuilt == [1, True] and after == [0, True], (name, rebuilt, after)


def cube(x):
    return x * x * x


def test_file_at_an_entry_path_disables_only_that_entry(cache_dir):
    entry = entry_of(cache_dir, wave)
    entry_of(cache_dir, ramp)
    shutil.rmtree(entry)
    entry.write_text("not an entry")
    for _ in range(2):
        n, y = compile_and_call(wave)
        assert n == 1 and np.allclose(y, wave(X))      # compiled, not cached
    assert entry.read_text() == "not an entry"         # and left alone
    assert compile_and_call(ramp)[0] == 0              # the rest of the cache works
    assert storage.DiskCache(cache_dir).writable


def test_file_at_a_shard_path_disables_only_its_entries(cache_dir):
    entry = entry_of(cache_dir, wave)
    others = {f: entry_of(cache_dir, f) for f in (ramp, cube)}
    fn = next(f for f, e in others.items() if e.parent != entry.parent)     # in another shard
    shutil.rmtree(entry.parent)           # its shard (with any other entry that hashed there)
    entry.parent.write_text("a file where a shard should be")
    assert compile_and_call(wave)[0] == 1 and compile_and_call(wave)[0] == 1
    assert compile_and_call(fn)[0] == 0                # the rest of the cache works
    assert entry.parent.read_text() == "a file where a shard should be"


# ---- interrupted compiles leave the cache consistent ----------------------------------------

def tmp_leftovers(cache_dir: Path) -> list[str]:
    return sorted(p.name for p in (cache_dir / "tmp").iterdir()) if (cache_dir / "tmp").exists() else []


@pytest.mark.parametrize("step", ["marker", "object", "meta", "mkdir shard", "rename"])
def test_interrupted_write_leaves_no_partial_entry(cache_dir, monkeypatch, step):
    """KeyboardInterrupt at each step of storing an entry: no entry, nothing in tmp/,
    and the next process compiles and stores it."""
    from compiler import cache as kcache
    real_write, real_mkdir = storage.write_new, storage._mkdir_private

    def interrupt(*args):
        raise KeyboardInterrupt

    def write_new(path, data):
        if path.name.startswith({"marker": ".aotx-cache", "object": "object", "meta": "meta"}.get(step, "-")):
            interrupt()
        real_write(path, data)

    monkeypatch.setattr(storage, "write_new", write_new)
    if step == "mkdir shard":
        monkeypatch.setattr(storage, "_mkdir_private", lambda p: interrupt() if p.parent.name == "kernels"
                            else real_mkdir(p))
    if step == "rename":
        monkeypatch.setattr(storage.os, "rename", interrupt)
    with pytest.raises(KeyboardInterrupt):
        compile_and_call()
    monkeypatch.undo()
    monkeypatch.setenv("AOTX_CACHE_DIR", str(cache_dir))
    assert entries(cache_dir) == [] and tmp_leftovers(cache_dir) == []
    monkeypatch.setattr(kcache, "_caches", {})           # a new process
    assert compile_and_call()[0] == 1 and compile_and_call()[0] == 0


LONG = '''
import json, sys
import numpy as np
import compiler
from compiler import jit

def make(k):
    def long_kernel(x):
        y = x
        for i in range(15):
            y = np.sin(y) * 1.01 + np.exp(-y * y) + np.log1p(y * y) * k
        return y
    return long_kernel

def oracle(k, x):
    y = x
    for i in range(15):
        y = np.sin(y) * 1.01 + np.exp(-y * y) + np.log1p(y * y) * k
    return y

x = np.linspace(-1.0, 1.0, 17)
print("ready", flush=True)
ok = True
for k in (0.5, 0.25, 0.125):
    ok = ok and bool(np.allclose(jit(make(k))(x), oracle(k, x), rtol=1e-12))
print(json.dumps({"ok": ok, **compiler.diagnostics()}))
'''


def start_long(tmp_path: Path, cache_dir: Path) -> subprocess.Popen:
    (tmp_path / "long.py").write_text(LONG)
    proc = subprocess.Popen([sys.executable, "long.py"], cwd=tmp_path, env=env_for(cache_dir),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def assert_consistent(cache_dir: Path, why: str) -> None:
    cache = storage.DiskCache(cache_dir)
    found = list(cache.entries())
    assert all(e.meta is not None for e in found), (why, [e.problem for e in found])
    names = [p.name for p in (cache_dir / "kernels").glob("*/*")]
    assert all(storage.KEY_RE.fullmatch(n) for n in names), (why, names)   # no half-written entry


@pytest.mark.skipif(os.name == "nt", reason="SIGINT to a child process")
def test_sigint_at_a_random_point_leaves_the_cache_consistent(tmp_path):
    seed = int.from_bytes(os.urandom(4), "little")
    rng = random.Random(seed)
    cache_dir = tmp_path / "cache"
    start = time.monotonic()
    proc = start_long(tmp_path, tmp_path / "measure")       # how long the three compiles take here
    out, err = proc.communicate(timeout=300)
    duration = time.monotonic() - start
    assert proc.returncode == 0 and last_json(out)["ok"], err
    for attempt in range(3):
        why = f"seed {seed}, attempt {attempt}"
        proc = start_long(tmp_path, cache_dir)
        time.sleep(rng.uniform(0.0, duration))
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode in (0, -signal.SIGINT), (why, proc.returncode, err[-2000:])
        finished = out.rstrip().endswith("}")           # the report printed: the work was done
        assert proc.returncode != 0 or last_json(out)["ok"], (why, out)   # finished before the signal
        assert not finished or last_json(out)["ok"], (why, out)
        # interrupted mid-work: a KeyboardInterrupt; a signal during interpreter shutdown (after
        # the report, once Python has restored SIGINT's default action) kills without a traceback
        assert proc.returncode == 0 or "KeyboardInterrupt" in err or finished, (why, out[-500:], err[-2000:])
        assert_consistent(cache_dir, why)
    proc = start_long(tmp_path, cache_dir)                  # loads what is there, compiles the rest
    out, err = proc.communicate(timeout=300)
    first = last_json(out)
    assert proc.returncode == 0 and first["ok"] and first["cache_rejected"] == 0, (seed, err)
    proc = start_long(tmp_path, cache_dir)
    out, err = proc.communicate(timeout=300)
    again = last_json(out)
    assert again["ok"] and again["llvm_compilations"] == 0 and again["cache_hits"] == 3, (seed, again)
    assert_consistent(cache_dir, f"seed {seed}, after")
    assert all(storage.TMP_RE.fullmatch(n) for n in tmp_leftovers(cache_dir)), seed   # `clear` removes them
