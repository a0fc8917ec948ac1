"""Build a module of kernels, ship it without the compiler, and run it from Python and C.

    # run: python examples/aot_deploy/deploy.py [--out DIR] [--cpu CPU] [--python PY]

1. `aotx build vibration.py` (here `python -m compiler build`, the same command) makes
   lib/vibration.so, .h and .json;
2. the deployment directory gets the library, the `runtime` package (NumPy and the
   standard library only, copied as it is), app.py and vibration.py;
3. a fresh virtual environment gets NumPy and nothing else (`--python PY` uses PY instead);
4. app.py runs there: `import compiler` fails, `runtime.load` works, every kernel equals
   NumPy, and its times against NumPy's are printed;
5. host.c is compiled with `cc` against lib/vibration.h and run on the same signal; its
   values are checked against NumPy here (skipped, with a line saying so, without `cc`).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

import numpy as np

import runtime                           # this environment's runtime package: shipped as it is

HERE = Path(__file__).resolve().parent
MODULE = "vibration"
THRESHOLD = 4.0                          # app.py's; the C host gets it on its command line


def build(out: Path, cpu: str = "host") -> Path:
    """`aotx build vibration.py -o OUT --cpu CPU`; the base path of the library."""
    subprocess.run([sys.executable, "-m", "compiler", "build", str(HERE / f"{MODULE}.py"), "-o", str(out),
                    "--cpu", cpu], check=True)
    return out / MODULE


def ship(library: Path, dest: Path) -> Path:
    """The deployment directory: lib/ (the built files), runtime/ (the package, copied), and
    the application. The library lives in lib/, not beside vibration.py, where Python would
    take vibration.so for an extension module."""
    (dest / "lib").mkdir(parents=True, exist_ok=True)
    for suffix in (".so", ".h", ".json"):
        shutil.copy2(library.with_suffix(suffix), dest / "lib" / (MODULE + suffix))
    shutil.copytree(Path(runtime.__file__).parent, dest / "runtime", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("app.py", f"{MODULE}.py", "host.c"):
        shutil.copy2(HERE / name, dest / name)
    return dest


def make_venv(where: Path) -> Path:
    """A virtual environment with NumPy only (no system site-packages); its python."""
    venv.create(where, with_pip=True, system_site_packages=False)
    python = where / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "numpy"], check=True)
    return python


def app_command(python: Path | str, dest: Path, *args: str) -> list[str]:
    """app.py under `python`, ignoring PYTHONPATH and the user's site-packages (-E -s): it sees
    its own directory (the runtime package) and the interpreter's packages."""
    return [str(python), "-E", "-s", str(dest / "app.py"), str(dest / "lib" / MODULE), *args]


def build_host(dest: Path) -> Path:
    """host.c compiled against lib/vibration.h, linked to lib/vibration.so."""
    exe = dest / "host"
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-O2", "-Wall", "-Wextra", "-I", str(dest / "lib"), str(dest / "host.c"),
                    str(dest / "lib" / f"{MODULE}.so"), f"-Wl,-rpath,{dest / 'lib'}", "-o", str(exe)], check=True)
    return exe


def run_host(exe: Path, signal: np.ndarray, mean: np.ndarray, std: np.ndarray, frame: int,
             work: Path) -> subprocess.CompletedProcess:
    """The C host on `signal`, with the baseline (mean, std) written next to it."""
    np.ascontiguousarray(signal, dtype=np.float64).tofile(work / "signal.f64")
    np.concatenate([mean, std]).astype(np.float64).tofile(work / "baseline.f64")
    return subprocess.run([str(exe), str(work / "signal.f64"), str(work / "baseline.f64"), str(frame),
                           repr(THRESHOLD)], capture_output=True, text=True, check=True, timeout=300)


def parse_host(stdout: str) -> dict[str, dict[int, float]]:
    """{name: {index: value}} from the host's "name index value" lines."""
    out: dict[str, dict[int, float]] = {}
    for line in stdout.splitlines():
        name, index, value = line.split()
        out.setdefault(name, {})[int(index)] = float(value)
    return out


def numpy_pipeline(vib, signal: np.ndarray, frame: int) -> dict[str, np.ndarray]:
    """The pipeline of host.c run by NumPy (vibration's functions uncompiled)."""
    plain = {name: getattr(getattr(vib, name), "fn", getattr(vib, name))
             for name in ("smooth", "frame_features", "zero_crossing_rate", "anomaly_score")}
    smoothed = plain["smooth"](signal)
    frames = vib.to_frames(smoothed, frame)
    rms, peak, crest, kurtosis = plain["frame_features"](frames)
    features = vib.feature_matrix(rms, peak, crest, kurtosis)
    mean, std = vib.baseline(features)
    score, alarms = plain["anomaly_score"](features, mean, std, THRESHOLD)
    return {"smooth": smoothed, "rms": rms, "peak": peak, "crest": crest, "kurtosis": kurtosis,
            "zcr": plain["zero_crossing_rate"](frames), "score": score, "mean": mean, "std": std,
            "alarms": np.asarray(alarms), "frames": frames, "features": features}


def check_host(got: dict[str, dict[int, float]], want: dict[str, np.ndarray]) -> None:
    """The C host's values against NumPy's: float64 stages to 1e-12, float32 features to 2e-5;
    an alarm count that differs only by frames within 1e-4 of the threshold."""
    for name, values in got.items():
        if name == "alarms":
            continue
        rtol = 2e-5 if name in ("rms", "peak", "crest", "kurtosis", "score") else 1e-12
        for i, v in values.items():
            ref = want[name][i]
            assert abs(v - ref) <= rtol * abs(ref) + 1e-12, f"{name}[{i}]: C {v!r}, NumPy {ref!r}"
    score = want["score"]
    near = int(np.sum(np.abs(score - THRESHOLD) < 1e-4 * THRESHOLD))
    assert abs(got["alarms"][0] - int(want["alarms"])) <= near, (got["alarms"], int(want["alarms"]))


def numpy_times(want: dict[str, np.ndarray], vib) -> dict[str, float]:
    """CPU ms of each stage in NumPy (median of 7), for the C host's table."""
    plain = {name: getattr(getattr(vib, name), "fn", getattr(vib, name))
             for name in ("smooth", "frame_features", "zero_crossing_rate", "anomaly_score")}
    args = {"smooth": (np.ascontiguousarray(want["smooth"]),), "frame_features": (want["frames"],),
            "zero_crossing_rate": (want["frames"],),
            "anomaly_score": (want["features"], want["mean"], want["std"], THRESHOLD)}
    out = {}
    for name, fn in plain.items():
        runs = []
        for _ in range(7):
            start = time.process_time()
            fn(*args[name])
            runs.append(time.process_time() - start)
        out[name] = 1e3 * statistics.median(runs)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="working directory (default: a new temporary one)")
    parser.add_argument("--cpu", default="host", help="aotx build --cpu (x86-64-v3 to ship to other machines)")
    parser.add_argument("--python", help="run app.py with this interpreter instead of a new NumPy-only venv")
    parser.add_argument("--samples", type=int, default=1 << 20)
    parser.add_argument("--frame", type=int, default=1024)
    args = parser.parse_args()
    out = (args.out or Path(tempfile.mkdtemp(prefix="aotx-deploy-"))).resolve()
    dest = out / "deploy"

    t0 = time.perf_counter()
    library = build(out / "build", args.cpu)
    print(f"1. built {library}.so/.h/.json in {time.perf_counter() - t0:.1f} s")
    ship(library, dest)
    print(f"2. shipped to {dest}: lib/, runtime/, app.py, vibration.py, host.c")
    if args.python:
        python = Path(args.python)
        print(f"3. using {python}")
    else:
        t0 = time.perf_counter()
        python = make_venv(out / "venv")
        print(f"3. made a venv with NumPy only in {time.perf_counter() - t0:.1f} s: {python}")
    print(f"4. {' '.join(app_command(python, dest))}")
    subprocess.run(app_command(python, dest, "--samples", str(args.samples), "--frame", str(args.frame)),
                   check=True, cwd=out)

    if shutil.which(os.environ.get("CC", "cc")) is None:
        print("5. no C compiler (cc): the C host is skipped")
        return
    sys.path.insert(0, str(HERE))
    import vibration as vib              # here with the compiler: its functions are Kernels
    exe = build_host(dest)
    signal = vib.make_signal(args.samples)
    want = numpy_pipeline(vib, signal, args.frame)
    proc = run_host(exe, signal, want["mean"], want["std"], args.frame, out)
    check_host(parse_host(proc.stdout), want)
    print(f"5. {exe} {out / 'signal.f64'} {out / 'baseline.f64'} {args.frame} {THRESHOLD}: "
          f"every printed value equals NumPy; {int(want['alarms'])} frames above |z| = {THRESHOLD}")
    c_ms = dict(zip(("smooth", "frame_features", "zero_crossing_rate", "anomaly_score"),
                    map(float, proc.stderr.split()[-7::2])))
    np_ms = numpy_times(want, vib)
    print(f"{'kernel':20s} {'C host ms':>10s} {'NumPy ms':>10s} {'speed-up':>9s}   (CPU time; C: best of 5, NumPy: median of 7)")
    for name, c in c_ms.items():
        print(f"{name:20s} {c:10.3f} {np_ms[name]:10.3f} {np_ms[name] / c if c else float('inf'):8.1f}x")


if __name__ == "__main__":
    main()
