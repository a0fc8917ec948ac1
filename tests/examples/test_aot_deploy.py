"""examples/aot_deploy/: a built library runs where only NumPy and the shipped `runtime`
package are importable, and from C through the generated header; both equal NumPy.

The example itself makes a real virtual environment with NumPy only (`pip install numpy`,
~11 s here). The test reaches the same situation faster: an interpreter started with `-S`
(no site-packages: neither aotx, nor llvmlite, nor anything installed) whose path holds only
NumPy (a link to it) and the deployment directory, and checks that `import compiler` fails
there. Building needs a C compiler (`aotx build` links with `cc`), so does the whole test.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import runtime

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "aot_deploy"
HAVE_CC = shutil.which("cc") is not None
SAMPLES, FRAME = 20_000, 250             # 80 frames, the last 20 of them alarming


def load_example(name: str):
    spec = importlib.util.spec_from_file_location(f"aotx_deploy_{name}", EXAMPLE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """One `aotx build` of vibration.py and its deployment directory, shared by the tests."""
    if not HAVE_CC:
        pytest.skip("no C compiler (cc): aotx build links with it")
    deploy = load_example("deploy")
    out = tmp_path_factory.mktemp("deploy")
    library = deploy.build(out / "build")
    return deploy, deploy.ship(library, out / "deploy"), load_example("vibration")


def numpy_only_site(where: Path) -> Path:
    """A directory holding only NumPy (links to the installed package and its libraries)."""
    site = where / "site"
    site.mkdir()
    origin = Path(np.__file__).resolve().parent.parent
    for name in ("numpy", "numpy.libs"):
        if (origin / name).exists():
            os.symlink(origin / name, site / name)
    return site


def test_runtime_load_without_the_compiler_equals_numpy(shipped, tmp_path):
    deploy, dest, vib = shipped
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "AOTX_"))}
    env["PYTHONPATH"] = str(numpy_only_site(tmp_path))
    cmd = [sys.executable, "-S", "-s", str(dest / "app.py"), str(dest / "lib" / "vibration"),
           "--samples", str(SAMPLES), "--frame", str(FRAME), "--save", str(tmp_path / "out.npz"), "--json"]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(proc.stdout.splitlines()[-1])
    assert report["compiler_importable"] is False and report["llvmlite_importable"] is False
    assert report["loaded"] == [] and report["runtime"] == str(dest / "runtime" / "__init__.py")
    assert set(report["times"]) == {"smooth", "frame_features", "zero_crossing_rate", "anomaly_score"}

    got = np.load(tmp_path / "out.npz")                # each stage against NumPy on its inputs
    plain = {k: getattr(vib, k).fn for k in ("smooth", "frame_features", "zero_crossing_rate", "anomaly_score")}
    np.testing.assert_array_equal(got["signal"], vib.make_signal(SAMPLES))
    np.testing.assert_allclose(got["smoothed"], plain["smooth"](got["signal"]), rtol=1e-12, atol=1e-12)
    for name, want in zip(("rms", "peak", "crest", "kurtosis"), plain["frame_features"](got["frames"])):
        assert got[name].dtype == np.float32 and got[name].shape == (SAMPLES // FRAME,)
        np.testing.assert_allclose(got[name], want, rtol=2e-5, err_msg=name)
    np.testing.assert_array_equal(got["zcr"], plain["zero_crossing_rate"](got["frames"]))
    score, alarms = plain["anomaly_score"](got["features"], got["mean"], got["std"], 4.0)
    np.testing.assert_allclose(got["score"], score, rtol=1e-12)
    assert int(got["alarms"]) == int(alarms) == report["alarms"] > 0


@pytest.mark.parametrize("samples, frame", [(SAMPLES, FRAME), (4_001, 1_000)])
def test_c_host_through_the_header_equals_numpy(shipped, tmp_path, samples, frame):
    deploy, dest, vib = shipped
    exe = dest / "host"
    if not exe.exists():
        deploy.build_host(dest)
    signal = vib.make_signal(samples, seed=samples)
    want = deploy.numpy_pipeline(vib, signal, frame)
    proc = deploy.run_host(exe, signal, want["mean"], want["std"], frame, tmp_path)
    got = deploy.parse_host(proc.stdout)
    assert set(got) == {"smooth", "rms", "peak", "crest", "kurtosis", "zcr", "score", "alarms"}
    assert max(got["smooth"]) == samples - 1 and max(got["rms"]) == samples // frame - 1
    for name in ("smooth", "zcr"):                     # float64 stages
        for i, v in got[name].items():
            assert v == pytest.approx(want[name][i], rel=1e-12, abs=1e-12), (name, i)
    for name in ("rms", "peak", "crest", "kurtosis", "score"):     # from float32 features
        for i, v in got[name].items():
            assert v == pytest.approx(want[name][i], rel=2e-5), (name, i)
    assert got["alarms"][0] == int(want["alarms"])
    assert "C host CPU ms:" in proc.stderr


def test_a_missing_kernel_names_the_library_and_its_kernels(shipped):
    _, dest, _ = shipped
    lib = runtime.load(dest / "lib" / "vibration")
    with pytest.raises(AttributeError, match=r"vibration\.so has no kernel 'smoth'; its kernels: smooth, "
                                             r"frame_features, zero_crossing_rate, anomaly_score"):
        lib.smoth
    assert lib.smooth.__name__ == "smooth" and not hasattr(lib, "__wrapped__")
