"""`aotx build`, `runtime.load` without LLVM, the C ABI from C, and the other commands."""
from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import runtime
from compiler import cli
from runtime import cpu
from tests.runtime.subproc import BLOCK_COMPILER, REPO, env_for, last_json, run_python

EXAMPLE = REPO / "examples" / "c_host"
HAVE_CC = shutil.which("cc") is not None
needs_cc = pytest.mark.skipif(not HAVE_CC, reason="no C compiler (cc)")


def oracle(x: np.ndarray) -> dict:
    """The example's kernels run by NumPy (examples/c_host/kernels.py, uncompiled)."""
    pts = np.stack([x, 2 * x, 1 - x], axis=1)
    return {"wave": np.exp(-x * x) * np.sin(3.0 * x), "means": pts.mean(axis=0),
            "maxnorm": np.sqrt((pts * pts).sum(axis=1)).max(), "diffs": x[1:] - x[:-1]}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One real `aotx build` (console entry point, --emit, --jobs) shared by the tests."""
    if not HAVE_CC:
        pytest.skip("no C compiler (cc)")
    out = tmp_path_factory.mktemp("build")
    cache = tmp_path_factory.mktemp("cache")
    proc = subprocess.run([sys.executable, "-m", "compiler", "build", str(EXAMPLE / "kernels.py"), "-o",
                           str(out), "--emit", "ll,asm", "--emit", "ir", "--jobs", "2"],
                          capture_output=True, text=True, env=env_for(cache), timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out, proc.stderr


def test_build_writes_library_header_manifest_and_progress(built):
    out, log = built
    for name in ("kernels.so", "kernels.h", "kernels.json"):
        assert (out / name).is_file()
    for k in ("wave", "stats", "diffs"):             # one progress line per kernel, with its phases
        assert len(re.findall(rf"^\[\d/3\] {k}: .* -> .*  \(\d+ ms: staging \d+ ms, IR passes and codegen "
                              rf"\d+ ms, LLVM \d+ ms\)$", log, re.MULTILINE)) == 1, log
    assert log.count("[") >= 3 and "[3/3]" in log
    m = json.loads((out / "kernels.json").read_text())
    assert m["abi_version"] == runtime.ABI_VERSION and m["format"] == "aotx-library"
    assert [k["name"] for k in m["kernels"]] == ["wave", "stats", "diffs"]
    diffs = m["kernels"][2]
    assert diffs["inputs"] == [{"name": "x", "type": "f64[n]"}]
    assert diffs["outputs"][0]["type"] == "f64[max(0, n - 1)]" and diffs["symbols"] == ["n"]
    assert m["target"]["cpu"] and set(m["target"]["features"]) <= cpu.DETECTABLE
    assert set(m["hashes"]) == {"kernels.so", "kernels.h"}
    assert all(len(k["object_sha256"]) == 64 and len(k["source_sha256"]) == 64 for k in m["kernels"])


def test_emitted_artifacts(built):
    out, _ = built
    for k in ("wave", "stats", "diffs"):
        ll = (out / f"kernels.{k}.ll").read_text()
        assert f"define" in ll and f"@kernels_{k}(" in ll
        asm = (out / f"kernels.{k}.s").read_text()
        assert f"kernels_{k}:" in asm
        ir = (out / f"kernels.{k}.ir").read_text()
        assert "return" in ir or "%" in ir


def test_header_is_clean_c(built):
    out, _ = built
    for lang in ("c", "c++"):
        if lang == "c++" and shutil.which("c++") is None:
            continue
        compiler_cmd = "cc" if lang == "c" else "c++"
        proc = subprocess.run([compiler_cmd, "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-x", lang,
                               str(out / "kernels.h")], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr


LOAD = BLOCK_COMPILER + '''
import json, sys
import numpy as np
import runtime
lib = runtime.load(sys.argv[1])
out = {}
for n in (5, 1000):                          # one built kernel, two sizes of the symbolic dim
    x = np.linspace(-1.0, 1.0, n)
    pts = np.stack([x, 2 * x, 1 - x], axis=1)
    means, maxnorm = lib.stats(pts)
    out[n] = {"wave": lib.wave(x).tolist(), "means": means.tolist(), "maxnorm": float(maxnorm),
              "diffs": lib.diffs(x=x).tolist()}
errors = []
for bad in (lambda: lib.wave(np.zeros((2, 2))), lambda: lib.wave(np.zeros(3, np.complex128)),
            lambda: lib.wave(), lambda: lib.stats(np.zeros((4, 2)))):
    try:
        bad()
        errors.append("no error")
    except (TypeError, ValueError) as e:
        errors.append(type(e).__name__ + ": " + str(e))
out["errors"] = errors
out["strided"] = lib.wave(np.linspace(-1.0, 1.0, 20)[::2]).tolist()
out["modules"] = sorted(m for m in sys.modules if m.split(".")[0] in ("compiler", "llvmlite"))
print(json.dumps(out))
'''


def test_runtime_load_without_compiler_or_llvmlite(built, tmp_path):
    out, _ = built
    proc = run_python(LOAD.replace("sys.argv[1]", repr(str(out / "kernels"))), tmp_path, None)
    got = last_json(proc.stdout)
    assert got["modules"] == []
    for n in (5, 1000):
        want = oracle(np.linspace(-1.0, 1.0, n))
        for k in ("wave", "means", "maxnorm", "diffs"):
            np.testing.assert_allclose(got[str(n)][k], want[k], rtol=1e-12, atol=1e-14)
    assert len(got["1000"]["diffs"]) == 999
    shape_err, dtype_err, arity_err, dim_err = got["errors"]
    assert shape_err.startswith("ValueError") and "'x'" in shape_err
    assert dtype_err.startswith("TypeError") and "complex128" in dtype_err
    assert arity_err.startswith("TypeError")
    assert dim_err.startswith("ValueError") and "'points'" in dim_err and "3" in dim_err
    np.testing.assert_allclose(got["strided"], oracle(np.linspace(-1.0, 1.0, 20)[::2])["wave"], rtol=1e-12)


def test_c_host_example(built, tmp_path):
    out, _ = built
    exe = tmp_path / "main"
    proc = subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-I", str(out), str(EXAMPLE / "main.c"),
                           str(out / "kernels.so"), f"-Wl,-rpath,{out}", "-o", str(exe)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    for n in (2, 777):
        run = subprocess.run([str(exe), str(n)], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        want = oracle(np.linspace(-1.0, 1.0, n))
        lines = [line.split() for line in run.stdout.splitlines()]
        assert {name for name, _, _ in lines} == {"wave", "means", "maxnorm", "diffs"}
        for name, index, value in lines:
            ref = np.atleast_1d(want[name])[int(index)]
            assert float(value) == pytest.approx(ref, rel=1e-12, abs=1e-14), (name, index)


def copy_build(out: Path, dest: Path) -> Path:
    for name in ("kernels.so", "kernels.h", "kernels.json"):
        shutil.copy(out / name, dest / name)
    return dest / "kernels"


def edit_manifest(base: Path, change) -> None:
    path = base.with_suffix(".json")
    m = json.loads(path.read_text())
    change(m)
    path.write_text(json.dumps(m))


def test_foreign_cpu_features_are_a_clear_error(built, tmp_path):
    have = cpu.host_features()
    if have is None:
        pytest.skip("this platform's CPU features cannot be read")
    lacking = sorted(cpu.DETECTABLE - have)
    if not lacking:
        pytest.skip("this CPU has every detectable feature")
    base = copy_build(built[0], tmp_path)
    edit_manifest(base, lambda m: m["target"]["features"].extend(lacking[:2]))
    with pytest.raises(runtime.CPUFeatureError) as info:
        runtime.load(base)
    assert info.value.missing == lacking[:2]
    for feature in lacking[:2]:
        assert feature in str(info.value)


def test_hash_abi_and_missing_files_are_errors(built, tmp_path):
    base = copy_build(built[0], tmp_path)
    lib = runtime.load(str(base) + ".so")               # with a suffix works too
    assert sorted(lib.kernels) == ["diffs", "stats", "wave"]
    edit_manifest(base, lambda m: m.update(abi_version=999))
    with pytest.raises(runtime.LoadError, match="ABI version 999"):
        runtime.load(base)
    edit_manifest(base, lambda m: m.update(abi_version=runtime.ABI_VERSION))
    with open(base.with_suffix(".so"), "ab") as f:
        f.write(b"\0")
    with pytest.raises(runtime.LoadError, match="hash"):
        runtime.load(base)
    with pytest.raises(runtime.LoadError, match="no manifest"):
        runtime.load(tmp_path / "nothing")


# ---- command-line behaviour in-process ------------------------------------------------------------

def test_missing_c_compiler_is_one_clear_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "m.py").write_text("from compiler import jit\n")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CC", raising=False)
    assert cli.main(["build", str(tmp_path / "m.py"), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no C compiler found" in err and "'cc'" in err


def test_compile_errors_point_at_the_user_line(tmp_path, capsys):
    (tmp_path / "bad.py").write_text(
        "import numpy as np\nfrom compiler import jit\n\n\n@jit(signature=\"f64[n]\")\ndef f(x):\n"
        "    y = x * 2.0\n    return np.not_a_numpy_function(y)\n")
    assert cli.main(["build", str(tmp_path / "bad.py"), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / 'bad.py'}:8:" in err and "^" in err
    assert not (tmp_path / "out" / "bad.so").exists()


@needs_cc
def test_generic_cpu_build_and_no_signed_functions(tmp_path, capsys):
    (tmp_path / "small.py").write_text(
        "import numpy as np\nfrom compiler import jit\n\n@jit(signature=\"f32[n], f32\")\n"
        "def scale(x, a):\n    return x * a\n\n\ndef plain(x):\n    return x\n")
    assert cli.main(["build", str(tmp_path / "small.py"), "-o", str(tmp_path / "o"), "--cpu", "generic"]) == 0
    m = json.loads((tmp_path / "o" / "small.json").read_text())
    assert m["target"]["cpu"] == "x86-64" and "avx" not in m["target"]["features"]
    assert [k["name"] for k in m["kernels"]] == ["scale"]
    lib = runtime.load(tmp_path / "o" / "small")
    x = np.arange(6, dtype=np.float32)
    got = lib.scale(x, 2.5)
    assert got.dtype == np.float32 and np.array_equal(got, x * np.float32(2.5))
    (tmp_path / "none.py").write_text("def f(x):\n    return x\n")
    assert cli.main(["build", str(tmp_path / "none.py"), "-o", str(tmp_path / "o")]) == 1
    assert "no function carries a signature" in capsys.readouterr().err


@pytest.mark.parametrize("stage,expect", [("ir", "# "), ("ir_optimized", "return"), ("llvm", "define"),
                                          ("asm", "aotx_wave:")])
def test_show_stages(stage, expect, capsys):
    assert cli.main(["show", f"{REPO / 'examples' / 'quickstart.py'}:wave", "--signature", "f64[n]",
                     "--stage", stage]) == 0
    assert expect in capsys.readouterr().out


def test_cache_info_list_clear(tmp_path, monkeypatch, capsys):
    from compiler import jit
    monkeypatch.setenv("AOTX_CACHE_DIR", str(tmp_path / "c"))
    jit(lambda x: x + 1.0)(np.zeros(3))
    assert cli.main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert str(tmp_path / "c") in out and "entries:   1" in out
    assert cli.main(["cache", "list"]) == 0
    out = capsys.readouterr().out
    assert "f64[3]" in out and "<lambda>" in out
    assert cli.main(["cache", "clear"]) == 0
    assert "removed 1" in capsys.readouterr().out
    assert not list((tmp_path / "c").glob("kernels/*/*"))


# ---- the manifest cannot be edited apart from its library -------------------------------------

def _wave_output_to_one(m):
    m["kernels"][0]["outputs"][0]["type"] = "f64[1]"         # the kernel writes n values into 1


MANIFEST_EDITS = {
    "output type": _wave_output_to_one,
    "input type": lambda m: m["kernels"][0]["inputs"][0].update(type="f32[n]"),
    "symbols": lambda m: m["kernels"][2].update(symbols=[]),
    "result structure": lambda m: m["kernels"][1].update(result={"tuple": ["leaf"]}),
    "symbol swapped": lambda m: m["kernels"][0].update(symbol=m["kernels"][2]["symbol"]),
    "kernel dropped": lambda m: m["kernels"].pop(1),
    "features dropped": lambda m: m["target"].update(features=[]),
    "cpu renamed": lambda m: m["target"].update(cpu="generic"),
    "extra field": lambda m: m["kernels"][0].update(errors=[["f.py", 3]]),
}

LOAD_EDITED = BLOCK_COMPILER + '''
import json, sys
import numpy as np
import runtime
out = {}
for base in sys.argv[1:]:
    try:
        lib = runtime.load(base)
    except runtime.LoadError as e:
        out[base] = "LoadError: " + str(e)
        continue
    lib.wave(np.linspace(-1.0, 1.0, 100_000))
    out[base] = "loaded and called"
print(json.dumps(out))
'''


def test_edited_manifest_is_refused_before_the_library_runs(built, tmp_path):
    bases = {}
    for name, edit in MANIFEST_EDITS.items():
        d = tmp_path / name.replace(" ", "_")
        d.mkdir()
        bases[name] = copy_build(built[0], d)
        edit_manifest(bases[name], edit)
    (tmp_path / "load.py").write_text(LOAD_EDITED)
    proc = subprocess.run([sys.executable, "load.py", *map(str, bases.values())], cwd=tmp_path,
                          capture_output=True, text=True, env=env_for(None), timeout=300)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-3000:])
    got = last_json(proc.stdout)
    for name, base in bases.items():
        assert got[str(base)].startswith("LoadError: ") and "does not match kernels.so" in got[str(base)] \
            and "rebuild" in got[str(base)], (name, got[str(base)])
    unedited = copy_build(built[0], tmp_path)
    assert sorted(runtime.load(unedited).kernels) == ["diffs", "stats", "wave"]


@pytest.mark.parametrize("features,expect", [
    (["avx2", "notafeature"], "does not know: 'notafeature'"),
    ("avx2,fma", "not a list of names"),
    ([1, 2], "not a list of names"),
    (None, "not a list of names"),
    ({"avx2": True}, "not a list of names"),
])
def test_unknown_or_malformed_cpu_features_are_a_load_error(built, tmp_path, features, expect):
    base = copy_build(built[0], tmp_path)
    edit_manifest(base, lambda m: m["target"].update(features=features))
    with pytest.raises(runtime.LoadError, match=expect):
        runtime.load(base)


@pytest.mark.parametrize("table", [None, "x", {"wave": 1}])
def test_malformed_kernel_table_is_a_load_error(built, tmp_path, table):
    base = copy_build(built[0], tmp_path)
    edit_manifest(base, lambda m: m.update(kernels=table))
    with pytest.raises(runtime.LoadError, match="'kernels'"):
        runtime.load(base)


def test_library_without_the_manifest_hash_is_refused(built, tmp_path):
    base = copy_build(built[0], tmp_path)
    so = base.with_suffix(".so")
    data = so.read_bytes()
    assert data.count(b"aotx-manifest-sha256:") == 1
    so.write_bytes(data.replace(b"aotx-manifest-sha256:", b"something-else-entire"))
    edit_manifest(base, lambda m: m["hashes"].update({"kernels.so": hashlib.sha256(so.read_bytes()).hexdigest()}))
    with pytest.raises(runtime.LoadError, match="no manifest hash in the library"):
        runtime.load(base)


# ---- bad options and modules are one clear message, checked before compiling ---------------------

GOOD = "import numpy as np\nfrom compiler import jit\n\n\n@jit(signature=\"f64[n]\")\ndef f(x):\n    return x * 2.0\n"


def run_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """The console command in a subprocess (LLVM may abort the process on a bad CPU)."""
    return subprocess.run([sys.executable, "-m", "compiler", *args], cwd=tmp_path, capture_output=True,
                          text=True, env=env_for(tmp_path / "cache"), timeout=300)


def assert_one_message(proc: subprocess.CompletedProcess, *needles: str) -> str:
    err = proc.stderr
    assert proc.returncode in (1, 2), (proc.returncode, err)
    assert "Traceback" not in err and "LLVM ERROR" not in err.split("(LLVM ERROR")[0], err
    for needle in needles:
        assert needle in err, (needle, err)
    return err


@pytest.mark.parametrize("cpu,needles", [
    ("notacpu", ["--cpu 'notacpu' is not a CPU LLVM knows", "x86-64-v3"]),
    ("haswel", ["is not a CPU LLVM knows", "haswell"]),
    ("i686", ["--cpu 'i686' cannot generate code", "64-bit"]),
])
def test_unknown_or_unusable_cpu_is_refused_before_compiling(tmp_path, cpu, needles):
    if cpu != "notacpu" and cpu_mod_arch() != "x86_64":
        pytest.skip("x86 CPU names")
    (tmp_path / "m.py").write_text(GOOD)
    err = assert_one_message(run_cli(tmp_path, "build", "m.py", "-o", "out", "--cpu", cpu), *needles)
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def cpu_mod_arch() -> str:
    return cpu.machine()


def test_cpu_help_lists_llvm_names(tmp_path):
    proc = run_cli(tmp_path, "build", "--cpu", "help")
    names = proc.stdout.split()
    assert proc.returncode == 0 and names[:2] == ["host", "generic"] and len(names) > 10
    if cpu.machine() == "x86_64":
        assert {"x86-64-v3", "haswell", "znver4"} <= set(names)


@pytest.mark.parametrize("jobs", ["0", "-3", "two"])
def test_jobs_must_be_positive(tmp_path, jobs):
    (tmp_path / "m.py").write_text(GOOD)
    assert_one_message(run_cli(tmp_path, "build", "m.py", "-o", "out", "--jobs", jobs),
                       "--jobs", "positive", repr(jobs))
    from compiler import build as aot_build
    with pytest.raises(aot_build.BuildError, match="--jobs must be a positive"):
        aot_build.build(tmp_path / "m.py", tmp_path / "out", jobs=int(jobs) if jobs != "two" else 0)


@pytest.mark.parametrize("out", ["afile", "afile/sub"])
def test_output_under_a_regular_file(tmp_path, out):
    (tmp_path / "m.py").write_text(GOOD)
    (tmp_path / "afile").write_text("keep me")
    err = assert_one_message(run_cli(tmp_path, "build", "m.py", "-o", out), f"-o {out}",
                             "afile is a file")
    assert len(err.strip().splitlines()) == 1 and (tmp_path / "afile").read_text() == "keep me"


BROKEN = {
    "syntax": ("import numpy as np\n\ndef f(x):\n    return x * = 2\n", 4, "SyntaxError: invalid syntax",
               "return x * = 2", "           ^"),
    "raises": ("import numpy as np\n\nTABLE = {'a': 1}\nSCALE = TABLE['b']\n", 4, "KeyError: 'b'",
               "SCALE = TABLE['b']", "        ^~~~~~~~~~"),
    "raises in numpy": ("import numpy as np\n\nW = np.ones((2, 3)) @ np.ones((2, 3))\n", 3, "ValueError: matmul",
                        "W = np.ones((2, 3)) @ np.ones((2, 3))", "    ^~~~~"),
}


@pytest.mark.parametrize("case", list(BROKEN))
@pytest.mark.parametrize("command", ["build", "show"])
def test_module_that_does_not_import_points_at_its_line(tmp_path, case, command):
    text, line, what, source, caret = BROKEN[case]
    (tmp_path / "m.py").write_text(text)
    args = ["build", "m.py", "-o", "out"] if command == "build" else ["show", "m.py:f", "--signature", "f64[n]"]
    err = assert_one_message(run_cli(tmp_path, *args), f"m.py:{line}:", what, source, caret, "hint: ")
    assert "compiler/" not in err and not (tmp_path / "out").exists()


def test_static_argnums_out_of_range_or_not_ints():
    from compiler import jit

    def f(x, n):
        return x * n

    for bad in (2, -3, (0, 5)):
        with pytest.raises(ValueError, match=r"jit\(f\): static_argnums=-?\d is out of range: f takes 2 "
                                             r"positional parameters \(x, n\)"):
            jit(f, static_argnums=bad)
    for bad in ("n", 1.0, True, (None,)):
        with pytest.raises(TypeError, match="static_argnums must be ints"):
            jit(f, static_argnums=bad)
    k = jit(f, static_argnums=-1)                      # counts from the end, as an index does
    assert k.static_argnums == (1,)
    assert np.array_equal(k(np.arange(3.0), 2.0), np.arange(3.0) * 2.0)

    def g(*xs):
        return xs[0]

    assert jit(g, static_argnums=3).static_argnums == (3,)
    with pytest.raises(ValueError, match="negative position is ambiguous"):
        jit(g, static_argnums=-1)


def test_complex_kernel_builds_and_loads(tmp_path):
    """complex128 arguments and results through `aotx build` and `runtime.load` (the header
    names `double _Complex`, the interleaved layout of C99 and NumPy)."""
    (tmp_path / "cplx.py").write_text(
        "import numpy as np\nfrom compiler import jit\n\n@jit(signature=\"f64[n], c128[n]\")\n"
        "def rotate(x, y):\n    return np.exp(1j * x) * y, np.abs(y)\n")
    assert cli.main(["build", str(tmp_path / "cplx.py"), "-o", str(tmp_path / "o")]) == 0
    m = json.loads((tmp_path / "o" / "cplx.json").read_text())
    assert [o["type"] for o in m["kernels"][0]["outputs"]] == ["c128[n]", "f64[n]"]
    assert "double _Complex" in (tmp_path / "o" / "cplx.h").read_text()
    lib = runtime.load(tmp_path / "o" / "cplx")
    x, y = np.linspace(0.0, 3.0, 7), np.arange(7) - 2.5j
    z, mag = lib.rotate(x, y)
    assert z.dtype == np.complex128 and mag.dtype == np.float64
    np.testing.assert_allclose(z, np.exp(1j * x) * y, rtol=1e-15)
    np.testing.assert_allclose(mag, np.abs(y), rtol=1e-15)
