"""A corpus of realistic NumPy kernels: aotx against NumPy and numba, one run.

    python benchmarks/corpus.py [--scale 1.0] [--repeat 7] [name ...]

Each kernel is NumPy code of the kind people write and post (tutorials, Q&A threads,
course notes, scientific packages), re-typed in the idiom of its source, which is noted
above it. None was written for aotx: where a kernel is slow or refused, that is a finding.
For each kernel the script checks aotx's (and numba's) result against NumPy's, then times
all three (median and min of `repeat` calls after a warm-up, one thread) and prints the
first compile time of aotx, the ratios NumPy/aotx and numba/aotx (> 1: aotx is faster),
and the geometric mean. A kernel that does not compile is listed with its error.
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import compiler  # noqa: E402
from harness import Case, Config, module  # noqa: E402  (benchmarks/ is the script's directory)


@dataclass
class Kernel:
    name: str
    source: str                                   # where the idiom comes from
    fn: Callable[..., Any]
    inputs: Callable[[float], tuple]              # scale -> arguments
    rtol: float = 1e-9


CORPUS: list[Kernel] = []


def kernel(source: str, inputs: Callable[[float], tuple], rtol: float = 1e-9) -> Callable:
    def register(fn: Callable) -> Callable:
        CORPUS.append(Kernel(fn.__name__, source, fn, inputs, rtol))
        return fn
    return register


def _rng(seed: int = 7) -> np.random.Generator:
    return np.random.default_rng(seed)


def _n(scale: float, n: int) -> int:
    return max(4, int(n * scale))


# ---- distances and similarity ----------------------------------------------------------------

# CS231n assignment 1 (k-nearest neighbour, "no loops" distances), the expansion
# |x|^2 - 2 x.y + |y|^2 with a matrix product against the transposed training set
@kernel("CS231n kNN assignment: compute_distances_no_loops",
        lambda s: (_rng().random((_n(s, 500), 64)), _rng(8).random((_n(s, 2000), 64))), rtol=1e-9)
def knn_distances(X, Xtrain):
    sq = np.sum(X ** 2, axis=1, keepdims=True)
    sq_train = np.sum(Xtrain ** 2, axis=1)
    return np.sqrt(np.maximum(sq - 2 * X @ Xtrain.T + sq_train, 0.0))


# Stack Overflow 22720864 "Efficiently calculating a Euclidean distance matrix using Numpy":
# broadcasting the difference of every pair
@kernel("Stack Overflow 22720864: pairwise distances by broadcasting",
        lambda s: (_rng().random((_n(s, 600), 3)),))
def pairwise_broadcast(p):
    d = p[:, np.newaxis, :] - p[np.newaxis, :, :]
    return np.sqrt(np.sum(d ** 2, axis=-1))


# scikit-learn style cosine similarity: rows normalised, then a Gram matrix
@kernel("cosine similarity (sklearn.metrics.pairwise idiom)",
        lambda s: (_rng().standard_normal((_n(s, 800), 128)),), rtol=1e-8)
def cosine_similarity(X):
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    Xn = X / norms
    return Xn @ Xn.T


# Gaussian (RBF) kernel matrix, as in kernel ridge regression tutorials
@kernel("RBF kernel matrix (kernel methods tutorials)",
        lambda s: (_rng().standard_normal((_n(s, 700), 8)), 0.5), rtol=1e-8)
def rbf_kernel(X, gamma):
    sq = np.sum(X * X, axis=1)
    d2 = sq[:, None] + sq[None, :] - 2.0 * (X @ X.T)
    return np.exp(-gamma * np.maximum(d2, 0.0))


# the haversine formula vectorised over coordinate arrays (pandas "make it fast" tutorials)
@kernel("haversine distance (vectorised pandas/NumPy tutorials)",
        lambda s: tuple(_rng().uniform(-1.5, 1.5, _n(s, 1_000_000)) for _ in range(4)), rtol=1e-9)
def haversine(lat1, lon1, lat2, lon2):
    dlat = lat2 - lat1
    dlon = lon2 - lon1
    a = np.sin(dlat / 2) ** 2 + np.cos(lat1) * np.cos(lat2) * np.sin(dlon / 2) ** 2
    return 6371.0 * 2 * np.arcsin(np.sqrt(a))


# angle between pairs of vectors, clipped before arccos (a common Q&A answer)
@kernel("angle between vectors with np.clip (Stack Overflow 2827393 idiom)",
        lambda s: (_rng().standard_normal((_n(s, 300_000), 3)), _rng().standard_normal((_n(s, 300_000), 3))))
def vector_angles(u, v):
    cos = np.sum(u * v, axis=1) / (np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1))
    return np.arccos(np.clip(cos, -1.0, 1.0))


# k-means: assign each point to its nearest centroid
@kernel("k-means assignment step (k-means from scratch tutorials)",
        lambda s: (_rng().standard_normal((_n(s, 100_000), 2)), _rng().standard_normal((8, 2))), rtol=0)
def kmeans_assign(X, C):
    d = ((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)
    return np.argmin(d, axis=1)


# ---- machine learning ------------------------------------------------------------------------

# CS231n softmax classifier: the loss with the max subtracted for stability
@kernel("CS231n softmax loss (vectorised)",
        lambda s: (_rng().standard_normal((_n(s, 2000), 128)), _rng().standard_normal((128, 10)),
                   _rng().integers(0, 10, _n(s, 2000))), rtol=1e-8)
def softmax_loss(X, W, y):
    scores = X @ W
    scores = scores - scores.max(axis=1, keepdims=True)
    p = np.exp(scores)
    p = p / p.sum(axis=1, keepdims=True)
    return -np.mean(np.log(p[np.arange(X.shape[0]), y]))


# logistic regression, one step of batch gradient descent (ML course notebooks)
@kernel("logistic regression gradient step (ML course notebooks)",
        lambda s: (_rng().standard_normal((_n(s, 4096), 128)), (_rng().random(_n(s, 4096)) < 0.5) * 1.0,
                   np.zeros(128), 0.1), rtol=1e-8)
def logreg_step(X, y, w, lr):
    z = X @ w
    p = 1.0 / (1.0 + np.exp(-z))
    grad = X.T @ (p - y) / X.shape[0]
    return w - lr * grad


# a two-layer MLP forward pass with ReLU (CS231n two-layer net)
@kernel("CS231n two-layer net forward pass",
        lambda s: (_rng().standard_normal((_n(s, 1024), 128)), _rng().standard_normal((128, 64)) * 0.1,
                   np.zeros(64), _rng().standard_normal((64, 10)) * 0.1, np.zeros(10)), rtol=1e-8)
def mlp_forward(X, W1, b1, W2, b2):
    h = np.maximum(0, X @ W1 + b1)
    return h @ W2 + b2


# batch normalisation forward (CS231n assignment 2)
@kernel("CS231n batchnorm_forward (train mode)",
        lambda s: (_rng().standard_normal((_n(s, 4096), 256)), np.ones(256), np.zeros(256)), rtol=1e-8)
def batchnorm(x, gamma, beta):
    mu = x.mean(axis=0)
    var = x.var(axis=0)
    xhat = (x - mu) / np.sqrt(var + 1e-5)
    return gamma * xhat + beta


# row-wise logsumexp (the standard stable spelling)
@kernel("row-wise logsumexp with the max subtracted",
        lambda s: (_rng().standard_normal((_n(s, 4096), 1024)),))
def logsumexp_rows(x):
    m = x.max(axis=1, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis=1, keepdims=True)))[:, 0]


# z-score standardisation of columns
@kernel("z-score standardisation (data-science tutorials)",
        lambda s: (_rng().standard_normal((_n(s, 100_000), 20)) * 3 + 1,))
def zscore(X):
    return (X - X.mean(axis=0)) / X.std(axis=0)


# min-max scaling to [0, 1]
@kernel("min-max scaling (sklearn MinMaxScaler idiom)",
        lambda s: (_rng().standard_normal((_n(s, 100_000), 20)),))
def minmax(X):
    lo = X.min(axis=0)
    hi = X.max(axis=0)
    return (X - lo) / (hi - lo)


# ordinary least squares by the normal equations
@kernel("linear regression by the normal equations (statistics tutorials)",
        lambda s: (_rng().standard_normal((_n(s, 20_000), 16)), _rng().standard_normal(_n(s, 20_000))),
        rtol=1e-7)
def normal_equations(X, y):
    return np.linalg.solve(X.T @ X, X.T @ y)


# ---- signal processing and time series -------------------------------------------------------

# Stack Overflow 14313510 "How to calculate rolling / moving average using NumPy": the
# cumulative-sum answer
@kernel("Stack Overflow 14313510: moving average by cumsum",
        lambda s: (_rng().standard_normal(_n(s, 1_000_000)),), rtol=1e-7)
def moving_average(a):
    n = 16
    ret = np.cumsum(a)
    ret[n:] = ret[n:] - ret[:-n]
    return ret[n - 1:] / n


# exponential moving average written as the recurrence (a loop over rows: asked about
# constantly because NumPy cannot vectorise it)
@kernel("exponential moving average as a Python loop (Stack Overflow 42869495 question)",
        lambda s: (_rng().standard_normal(_n(s, 200_000)), 0.1), rtol=1e-9)
def ema(x, alpha):
    out = np.empty_like(x)
    out[0] = x[0]
    for i in range(1, x.shape[0]):
        out[i] = alpha * x[i] + (1 - alpha) * out[i - 1]
    return out


# cumulative sum from the right: through a reversed view
@kernel("reverse cumulative sum through [::-1] views (Q&A idiom)",
        lambda s: (_rng().standard_normal((_n(s, 1000), 1000)),), rtol=1e-9)
def reverse_cumsum(x):
    return np.cumsum(x[:, ::-1], axis=1)[:, ::-1]


# discounted returns of reinforcement learning, the loop over time steps
@kernel("discounted returns loop (policy-gradient tutorials)",
        lambda s: (_rng().standard_normal(_n(s, 200_000)), 0.99), rtol=1e-9)
def discounted_returns(r, gamma):
    out = np.zeros_like(r)
    running = 0.0
    for t in range(r.shape[0] - 1, -1, -1):
        running = r[t] + gamma * running
        out[t] = running
    return out


# ---- images and stencils ---------------------------------------------------------------------

# Conway's game of life with a zero border, neighbours counted from eight shifted views
# (N. Rougier, "From Python to NumPy", section 4.3)
@kernel("From Python to NumPy 4.3: game of life",
        lambda s: ((_rng().random((_n(s, 1000), 1000)) < 0.3).astype(np.int64),), rtol=0)
def game_of_life(Z):
    N = (Z[0:-2, 0:-2] + Z[0:-2, 1:-1] + Z[0:-2, 2:] +
         Z[1:-1, 0:-2] + Z[1:-1, 2:] +
         Z[2:, 0:-2] + Z[2:, 1:-1] + Z[2:, 2:])
    birth = (N == 3) & (Z[1:-1, 1:-1] == 0)
    survive = ((N == 2) | (N == 3)) & (Z[1:-1, 1:-1] == 1)
    out = np.zeros_like(Z)
    out[1:-1, 1:-1][birth | survive] = 1
    return out


# 2-d heat equation, explicit step on the interior (L. Barba, "12 steps to Navier-Stokes", step 7)
@kernel("12 steps to Navier-Stokes, step 7: 2-d diffusion",
        lambda s: (_rng().random((_n(s, 1000), 1000)), 0.2), rtol=1e-12)
def diffusion_2d(u, nu):
    un = u.copy()
    u[1:-1, 1:-1] = (un[1:-1, 1:-1] + nu * (un[1:-1, 2:] - 2 * un[1:-1, 1:-1] + un[1:-1, 0:-2])
                     + nu * (un[2:, 1:-1] - 2 * un[1:-1, 1:-1] + un[0:-2, 1:-1]))
    return u


# 1-d linear convection over time steps (12 steps to Navier-Stokes, step 1)
@kernel("12 steps to Navier-Stokes, step 1: 1-d convection over time",
        lambda s: (np.sin(np.linspace(0, 6, _n(s, 20_000))), 200, 0.5), rtol=1e-12)
def convection_1d(u, nt, c):
    for _ in range(nt):
        un = u.copy()
        u[1:] = un[1:] - c * (un[1:] - un[:-1])
    return u


# Sobel edge magnitude from shifted views of the image (image-processing tutorials)
@kernel("Sobel gradient magnitude from slices (image processing tutorials)",
        lambda s: (_rng().random((_n(s, 1000), 1000)),), rtol=1e-12)
def sobel(img):
    gx = (img[:-2, 2:] + 2 * img[1:-1, 2:] + img[2:, 2:]
          - img[:-2, :-2] - 2 * img[1:-1, :-2] - img[2:, :-2])
    gy = (img[2:, :-2] + 2 * img[2:, 1:-1] + img[2:, 2:]
          - img[:-2, :-2] - 2 * img[:-2, 1:-1] - img[:-2, 2:])
    return np.hypot(gx, gy)


# RGB to grayscale with the luma weights (matplotlib image tutorial, Stack Overflow 12201577)
@kernel("RGB to grayscale by a dot with luma weights (Stack Overflow 12201577)",
        lambda s: (_rng().random((_n(s, 1000), 1000, 3)),), rtol=1e-12)
def rgb2gray(rgb):
    return np.dot(rgb[..., :3], np.array([0.299, 0.587, 0.114]))


# building an (N, N, 3) array of coordinates by assigning slices of a zeros array
@kernel("coordinate grid by slice assignment into np.zeros (Q&A idiom)",
        lambda s: (np.linspace(0, 1, _n(s, 1000)),), rtol=0)
def grid_by_slices(x):
    n = x.shape[0]
    z = np.zeros((n, n, 3))
    z[:, :, 0] = x[:, None]
    z[:, :, 1] = x[None, :]
    z[:, :, 2] = x[:, None] * x[None, :]
    return z


# the Mandelbrot set, escape counts with a mask (From Python to NumPy, section 5.3 idiom)
@kernel("From Python to NumPy 5.3: Mandelbrot escape counts",
        lambda s: (np.linspace(-2.25, 0.75, _n(s, 400))[None, :] + 1j * np.linspace(-1.25, 1.25, _n(s, 300))[:, None],
                   40), rtol=0)
def mandelbrot(C, maxiter):
    Z = np.zeros_like(C)
    N = np.zeros(C.shape, dtype=np.int64)
    for n in range(maxiter):
        inside = np.abs(Z) < 2.0
        Z = np.where(inside, Z * Z + C, Z)
        N = N + inside
    return N


# ---- physics and simulation ------------------------------------------------------------------

# N-body accelerations with softening (P. Mocz, "Create your own N-body simulation (with Python)")
@kernel("N-body accelerations (P. Mocz's nbody-python)",
        lambda s: (_rng().standard_normal((_n(s, 800), 3)), np.ones(_n(s, 800)) / 800, 0.1), rtol=1e-9)
def nbody_acc(pos, mass, soft):
    x, y, z = pos[:, 0:1], pos[:, 1:2], pos[:, 2:3]
    dx = x.T - x
    dy = y.T - y
    dz = z.T - z
    inv_r3 = (dx ** 2 + dy ** 2 + dz ** 2 + soft ** 2) ** (-1.5)
    ax = (dx * inv_r3) @ mass
    ay = (dy * inv_r3) @ mass
    az = (dz * inv_r3) @ mass
    return np.stack([ax, ay, az], axis=1)


# Lennard-Jones energy over all pairs (molecular simulation tutorials)
@kernel("Lennard-Jones energy over pairs (molecular simulation tutorials)",
        lambda s: (_rng().random((_n(s, 600), 3)) * 10,), rtol=1e-9)
def lennard_jones(pos):
    d = pos[:, None, :] - pos[None, :, :]
    r2 = np.sum(d * d, axis=-1) + np.eye(pos.shape[0])
    inv6 = 1.0 / r2 ** 3
    e = 4.0 * (inv6 * inv6 - inv6)
    return 0.5 * (np.sum(e) - 4.0 * 0.0 * pos.shape[0]) - 0.5 * np.sum(np.diag(e))


# Lorenz system, RK4 steps for many trajectories at once
@kernel("Lorenz system RK4 over many trajectories (ODE tutorials)",
        lambda s: (_rng().standard_normal((_n(s, 20_000), 3)), 0.01, 20), rtol=1e-9)
def lorenz_rk4(state, dt, steps):
    def f(s):
        x, y, z = s[:, 0], s[:, 1], s[:, 2]
        return np.stack([10.0 * (y - x), x * (28.0 - z) - y, x * y - 8.0 / 3.0 * z], axis=1)
    for _ in range(steps):
        k1 = f(state)
        k2 = f(state + 0.5 * dt * k1)
        k3 = f(state + 0.5 * dt * k2)
        k4 = f(state + dt * k3)
        state = state + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    return state


# Black-Scholes call prices with the polynomial normal CDF of numba's and Intel's examples
@kernel("Black-Scholes with a polynomial CDF (numba examples / Intel benchmarks)",
        lambda s: (_rng().uniform(10, 50, _n(s, 1_000_000)), _rng().uniform(10, 50, _n(s, 1_000_000)),
                   _rng().uniform(0.2, 2, _n(s, 1_000_000)), 0.02, 0.3), rtol=1e-9)
def black_scholes(S, K, T, r, v):
    def cnd(d):
        k = 1.0 / (1.0 + 0.2316419 * np.abs(d))
        poly = k * (0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429))))
        w = 1.0 - 0.3989422804014327 * np.exp(-0.5 * d * d) * poly
        return np.where(d < 0, 1.0 - w, w)
    sqrt_t = np.sqrt(T)
    d1 = (np.log(S / K) + (r + 0.5 * v * v) * T) / (v * sqrt_t)
    d2 = d1 - v * sqrt_t
    return S * cnd(d1) - K * np.exp(-r * T) * cnd(d2)


# Monte-Carlo estimate of pi from given uniform samples
@kernel("Monte-Carlo pi (every NumPy introduction)",
        lambda s: (_rng().random(_n(s, 2_000_000)), _rng().random(_n(s, 2_000_000))), rtol=1e-12)
def mc_pi(x, y):
    return 4.0 * np.mean(x * x + y * y < 1.0)


# the 1-d wave equation, leapfrog time steps (numerical methods course notes)
@kernel("1-d wave equation, leapfrog steps (numerical PDE course notes)",
        lambda s: (np.sin(np.linspace(0, np.pi, _n(s, 10_000))), 100, 0.5), rtol=1e-10)
def wave_leapfrog(u0, steps, c2):
    prev = u0.copy()
    cur = u0.copy()
    for _ in range(steps):
        nxt = np.zeros_like(cur)
        nxt[1:-1] = 2 * cur[1:-1] - prev[1:-1] + c2 * (cur[2:] - 2 * cur[1:-1] + cur[:-2])
        prev = cur
        cur = nxt
    return cur


# batched 3x3 inverses and determinants (geometry/graphics code)
@kernel("batched 3x3 inverse and determinant (geometry code)",
        lambda s: (_rng().standard_normal((_n(s, 100_000), 3, 3)) + 3 * np.eye(3),), rtol=1e-8)
def batched_inv3(A):
    return np.linalg.inv(A) * np.linalg.det(A)[:, None, None]


# polynomial by Horner's rule over an array (numerical analysis notes)
@kernel("Horner's rule over an array (numerical analysis notes)",
        lambda s: (_rng().uniform(-1, 1, _n(s, 1_000_000)), np.array([1.0, -0.5, 0.25, -0.125, 0.0625, 3.0])),
        rtol=1e-12)
def horner(x, coeffs):
    result = np.zeros_like(x)
    for c in coeffs:
        result = result * x + c
    return result


# histogram of values with fixed bins (data-analysis tutorials)
@kernel("histogram with fixed bins (data-analysis tutorials)",
        lambda s: (_rng().standard_normal(_n(s, 1_000_000)),), rtol=0)
def histogram_fixed(x):
    counts, _ = np.histogram(x, bins=50, range=(-4.0, 4.0))
    return counts


# ---- the runner ------------------------------------------------------------------------------

def _time(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    fn()
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts), min(ts)


def _copy(args: tuple) -> tuple:
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def _check(got: Any, want: Any, rtol: float) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"shape {got.shape} != {want.shape}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


def measure(k: Kernel, scale: float, repeat: int, numba: Any) -> dict[str, Any]:
    args = k.inputs(scale)
    row: dict[str, Any] = {"name": k.name, "source": k.source}
    want = k.fn(*_copy(args))
    row["numpy"] = _time(lambda: k.fn(*_copy(args)), repeat)
    try:
        compiled = compiler.jit(k.fn)
        t = time.perf_counter()
        got = compiled(*_copy(args))
        row["compile"] = time.perf_counter() - t
        _check(got, want, k.rtol)
        row["aotx"] = _time(lambda: compiled(*_copy(args)), repeat)
    except Exception as e:          # a refused or wrong kernel is a row of the table, not a crash
        row["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:120]}"
    if numba is not None:
        try:
            nb = numba.njit(k.fn)
            _check(nb(*_copy(args)), want, k.rtol)
            row["numba"] = _time(lambda: nb(*_copy(args)), repeat)
        except Exception as e:
            row["numba_error"] = type(e).__name__
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    try:
        import numba
    except ImportError:
        numba = None
        print("numba is not installed: its column is skipped")
    rows = [measure(k, args.scale, args.repeat, numba) for k in CORPUS
            if not args.names or k.name in args.names]
    print(f"{'kernel':22s} {'compile':>8s} {'aotx ms':>9s} {'numpy ms':>9s} {'numba ms':>9s} "
          f"{'np/aotx':>8s} {'nb/aotx':>8s}")
    ratios = []
    for r in rows:
        if "error" in r:
            print(f"{r['name']:22s} {'refused':>8s}  {r['error']}")
            continue
        a, n = r["aotx"][0], r["numpy"][0]
        nb = r.get("numba", (math.nan,))[0]
        ratios.append(n / a)
        print(f"{r['name']:22s} {r['compile'] * 1e3:7.0f}m {a * 1e3:9.3f} {n * 1e3:9.3f} {nb * 1e3:9.3f} "
              f"{n / a:8.2f} {nb / a:8.2f}")
    if ratios:
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        slower = sum(x < 1 for x in ratios)
        print(f"\n{len(rows)} kernels, {len(ratios)} compiled; geometric mean NumPy/aotx {geo:.2f}; "
              f"{slower} slower than NumPy")


# ---- as a workload of ``python -m benchmarks`` --------------------------------------------------

TINY = ("knn_distances", "reverse_cumsum", "game_of_life", "mc_pi")   # --tiny: a few, small


def cases(cfg: Config) -> Iterator[Case]:
    """Every kernel of the corpus as a `harness.Case`: aotx, NumPy (the reference) and numba."""
    for k in CORPUS:
        if cfg.tiny and k.name not in TINY:
            continue
        args = k.inputs(0.01 if cfg.tiny else 1.0)

        def aotx(k: Kernel = k, args: tuple = args) -> Callable[[], Any]:
            compiled = compiler.jit(k.fn)
            return lambda: compiled(*_copy(args))

        def numba(k: Kernel = k, args: tuple = args) -> Callable[[], Any]:
            nb = module("numba").njit(k.fn)
            return lambda: nb(*_copy(args))

        yield Case(k.name, {"aotx": aotx, "numpy": lambda k=k, args=args: (lambda: k.fn(*_copy(args))),
                            "numba": numba}, rtol=k.rtol, atol=k.rtol, note=k.source)


if __name__ == "__main__":
    main()
