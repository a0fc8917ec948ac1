"""Condition monitoring of a rotating machine from an accelerometer signal: the kernels.

`aotx build vibration.py -o build/` compiles every function below that carries a
signature into build/vibration.so (+ .h, .json); `runtime.load("build/vibration")`
calls them with NumPy alone, and a C program through build/vibration.h.

Where aotx is not installed (the deployment), `import vibration` still works: the
functions are then plain NumPy, the reference the compiled kernels are checked against.
"""
import numpy as np

try:
    from compiler import jit
except ImportError:                      # NumPy and the runtime only: plain functions
    def jit(**options):
        return lambda fn: fn

#: a 9-tap Hann window, normalized: the low-pass filter of `smooth`
HANN = np.hanning(11)[1:-1] / np.hanning(11)[1:-1].sum()


@jit(signature="f64[n]")
def smooth(signal):
    """The signal low-pass filtered by a 9-tap Hann window (same length)."""
    return np.convolve(signal, HANN, mode="same")


@jit(signature="f32[m, k]")
def frame_features(frames):
    """Per frame of k samples: RMS, peak, crest factor (peak / RMS) and kurtosis."""
    centered = frames - frames.mean(axis=1, keepdims=True)
    power = (centered * centered).mean(axis=1)
    rms = np.sqrt(power)
    peak = np.abs(centered).max(axis=1)
    kurtosis = (centered ** 4).mean(axis=1) / (power * power)
    return rms, peak, peak / rms, kurtosis


@jit(signature="f32[m, k]")
def zero_crossing_rate(frames):
    """Per frame: the fraction of neighbouring samples whose signs differ."""
    signs = np.signbit(frames)
    return (signs[:, 1:] != signs[:, :-1]).mean(axis=1)


@jit(signature="f64[m, f], f64[f], f64[f], f64")
def anomaly_score(features, mean, std, threshold):
    """The largest |z-score| of each frame's features against a healthy baseline, and
    how many frames exceed `threshold`."""
    score = np.abs((features - mean) / std).max(axis=1)
    return score, (score > threshold).sum()


# Plain NumPy helpers of the pipeline (no signature: not compiled, not built).

def make_signal(n, rate=25_600.0, seed=0):
    """n samples of an accelerometer at `rate` Hz: shaft harmonics, noise, and, in the second
    half, the growing impacts of a bearing fault (every 1/107 s, ringing at 3.2 kHz)."""
    t = np.arange(n) / rate
    rng = np.random.default_rng(seed)
    x = np.sin(2 * np.pi * 30.0 * t) + 0.4 * np.sin(2 * np.pi * 60.0 * t + 0.3)
    x += 0.2 * rng.standard_normal(n)
    since = (t % (1.0 / 107.0))                               # time since the last impact
    growth = np.clip((t - t[n // 2]) / (t[-1] - t[n // 2] + 1e-12), 0.0, 1.0) if n > 1 else 0.0
    x += 3.0 * growth * np.exp(-since * 900.0) * np.sin(2 * np.pi * 3200.0 * since)
    return x


def to_frames(signal, frame):
    """The signal cut into whole frames of `frame` samples, as float32 (the sensor's dtype)."""
    m = len(signal) // frame
    return np.ascontiguousarray(signal[: m * frame].reshape(m, frame), dtype=np.float32)


def feature_matrix(rms, peak, crest, kurtosis):
    """The (m, 4) float64 matrix `anomaly_score` takes."""
    return np.stack([rms, peak, crest, kurtosis], axis=1).astype(np.float64)


def baseline(features, healthy=0.25):
    """Mean and standard deviation of each feature over the first `healthy` part of the frames
    (the machine is known to be healthy then)."""
    first = features[: max(2, int(len(features) * healthy))]
    return first.mean(axis=0), first.std(axis=0) + 1e-12
