"""The deployed side: runs where only NumPy is installed, next to the built library.

    python app.py vibration [--samples N] [--frame K] [--save results.npz]

loads the library with `runtime.load` (the `runtime` package shipped beside this
file), runs the monitoring pipeline on a synthetic accelerometer signal, checks each
kernel against the same function run by NumPy (vibration.py, uncompiled here) and
prints each kernel's time against NumPy's. `--save` writes inputs and outputs.
"""
import argparse
import importlib.util
import json
import statistics
import sys
import time

import numpy as np

import runtime
import vibration                         # no compiler here: its functions are plain NumPy

THRESHOLD = 4.0                          # |z-score| above which a frame raises an alarm


def cpu_time(fn, *args, repeat=7):
    """(median, min) CPU seconds of fn(*args) over `repeat` timed runs after one warm-up."""
    fn(*args)
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn(*args)
        times.append(time.process_time() - start)
    return statistics.median(times), min(times)


def run(library, samples, frame, save=None):
    """The pipeline, compiled and in NumPy; returns the report printed by main()."""
    lib = runtime.load(library)
    signal = vibration.make_signal(samples)
    smoothed = lib.smooth(signal)
    frames = vibration.to_frames(smoothed, frame)
    rms, peak, crest, kurtosis = lib.frame_features(frames)
    zcr = lib.zero_crossing_rate(frames)
    features = vibration.feature_matrix(rms, peak, crest, kurtosis)
    mean, std = vibration.baseline(features)
    score, alarms = lib.anomaly_score(features, mean, std, THRESHOLD)

    # the same stages run by NumPy, on the same inputs (`.fn`: the plain function, should
    # vibration's functions be Kernels because aotx is importable after all)
    plain = {name: getattr(getattr(vibration, name), "fn", getattr(vibration, name))
             for name in ("smooth", "frame_features", "zero_crossing_rate", "anomaly_score")}
    want = {"smooth": plain["smooth"](signal),
            "frame_features": plain["frame_features"](frames),
            "zero_crossing_rate": plain["zero_crossing_rate"](frames),
            "anomaly_score": plain["anomaly_score"](features, mean, std, THRESHOLD)}
    np.testing.assert_allclose(smoothed, want["smooth"], rtol=1e-12, atol=1e-12)
    for got, ref in zip((rms, peak, crest, kurtosis), want["frame_features"]):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, ref, rtol=2e-5)
    np.testing.assert_array_equal(zcr, want["zero_crossing_rate"])
    np.testing.assert_allclose(score, want["anomaly_score"][0], rtol=1e-12)
    assert int(alarms) == int(want["anomaly_score"][1])

    calls = {"smooth": (lib.smooth, plain["smooth"], (signal,)),
             "frame_features": (lib.frame_features, plain["frame_features"], (frames,)),
             "zero_crossing_rate": (lib.zero_crossing_rate, plain["zero_crossing_rate"], (frames,)),
             "anomaly_score": (lib.anomaly_score, plain["anomaly_score"], (features, mean, std, THRESHOLD))}
    times = {name: {"aotx": cpu_time(k, *args), "numpy": cpu_time(ref, *args)}
             for name, (k, ref, args) in calls.items()}
    if save:
        np.savez(save, signal=signal, smoothed=smoothed, frames=frames, rms=rms, peak=peak, crest=crest,
                 kurtosis=kurtosis, zcr=zcr, features=features, mean=mean, std=std, score=score,
                 alarms=alarms)
    return {"frames": len(frames), "alarms": int(alarms), "times": times,
            "compiler_importable": importlib.util.find_spec("compiler") is not None,
            "llvmlite_importable": importlib.util.find_spec("llvmlite") is not None,
            "runtime": runtime.__file__, "numpy": np.__version__,
            "loaded": sorted(m for m in sys.modules if m.split(".")[0] in ("compiler", "llvmlite"))}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("library", help="the built library's base path (build/vibration)")
    parser.add_argument("--samples", type=int, default=1 << 20)
    parser.add_argument("--frame", type=int, default=1024)
    parser.add_argument("--save", help="write inputs and outputs to this .npz file")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON line")
    args = parser.parse_args()
    report = run(args.library, args.samples, args.frame, args.save)
    if args.json:
        print(json.dumps(report))
        return
    print(f"runtime {report['runtime']}, NumPy {report['numpy']}; "
          f"compiler importable: {report['compiler_importable']}, "
          f"llvmlite importable: {report['llvmlite_importable']}")
    print(f"{args.samples} samples, {report['frames']} frames of {args.frame}: "
          f"{report['alarms']} frames above |z| = {THRESHOLD}; every kernel equals NumPy")
    print(f"{'kernel':20s} {'aotx ms':>10s} {'NumPy ms':>10s} {'speed-up':>9s}   (CPU time, median of 7)")
    for name, t in report["times"].items():
        a, n = t["aotx"][0], t["numpy"][0]
        print(f"{name:20s} {a * 1e3:10.3f} {n * 1e3:10.3f} {n / a if a else float('inf'):8.1f}x")


if __name__ == "__main__":
    main()
