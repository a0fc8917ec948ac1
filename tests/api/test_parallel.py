"""jit(parallel=True): calls split over slices of the rows on threads (compiler/backend/parallel.py).

Oracles: NumPy, and the serial kernel (parallel=False), whose results must be bitwise the
same for row-wise code (each element takes the same operations). The thread count is set
with AOTX_NUM_THREADS, which the kernel reads on every call it splits; the sizes are above
and below each kernel's threshold (logged at AOTX_DEBUG=1) and not multiples of the count,
so a slice written twice, not at all or at the wrong offset shows in the results.
"""
from __future__ import annotations

import json
import logging
import shutil

import numpy as np
import pytest

import runtime
from compiler import Function, cli, grad, jit, random, vmap
from compiler.random import seed

RNG = np.random.default_rng(14)
W = RNG.standard_normal((32, 16))
B = RNG.standard_normal(16)


def wave(x):
    return np.exp(-x**2) * np.sin(3 * x) + 0.5 * x * np.tanh(x)


def bias(x, b):
    return np.tanh(x + b)


def rowsum(x):
    return np.tanh(x).sum(axis=1)


def dense(x, w, b):
    return np.tanh(x @ w + b)


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


COLUMNS = np.array([0, 3, 39, 7])


def cumsum_rows(x):                # a scan and a gather along the columns
    return np.cumsum(np.sin(x), axis=1)[:, COLUMNS]


def sum_axis0(x):                  # must not be split: a reduction over the rows
    return np.tanh(x).sum(axis=0)


def cumsum_axis0(x):               # nor a scan along them
    return np.cumsum(np.sin(x), axis=0)


def centered(x):                   # nor a value of all the rows used in every row
    return x - x.mean()


def noisy(x):                      # nor random draws
    return x + random.normal(x.shape)


# (function, the NumPy reference, arguments for n rows, whether a split is expected, a number
# of rows above its threshold, not a multiple of 2 or 3)
CASES = {
    "wave": (wave, wave, lambda n, dt: (np.linspace(-4, 4, n).astype(dt),), True, 110_003),
    "bias": (bias, bias, lambda n, dt: (RNG.standard_normal((n, 16)).astype(dt), B.astype(dt)), True, 24_577),
    "rowsum": (rowsum, rowsum, lambda n, dt: (RNG.standard_normal((n, 64)).astype(dt),), True, 6_151),
    "dense": (dense, dense, lambda n, dt: (RNG.standard_normal((n, 32)).astype(dt), W.astype(dt),
                                           B.astype(dt)), True, 12_289),
    "softmax": (softmax, softmax, lambda n, dt: (RNG.standard_normal((n, 24)).astype(dt),), True, 24_577),
    "cumsum_rows": (cumsum_rows, cumsum_rows, lambda n, dt: (RNG.standard_normal((n, 40)).astype(dt),), True, 12_289),
    "sum_axis0": (sum_axis0, sum_axis0, lambda n, dt: (RNG.standard_normal((n, 8)).astype(dt),), False, 12_289),
    "cumsum_axis0": (cumsum_axis0, cumsum_axis0, lambda n, dt: (RNG.standard_normal((n, 8)).astype(dt),), False, 12_289),
    "centered": (centered, centered, lambda n, dt: (RNG.standard_normal(n).astype(dt),), False, 12_289),
}


def _threshold(caplog, monkeypatch, kernel, args) -> int | None:
    """The rows from which a new parallel kernel splits its calls (None: it runs serially),
    from the AOTX_DEBUG=1 log of its compile on this first call."""
    monkeypatch.setenv("AOTX_DEBUG", "1")
    with caplog.at_level(logging.DEBUG, logger="aotx"):
        kernel(*args)
    notes = [r.getMessage() for r in caplog.records if "parallel=True" in r.getMessage()]
    assert notes
    if any("runs serially" in n for n in notes):
        assert all("runs serially" in n for n in notes), notes
        return None
    assert len(notes) == 1, notes
    return int(notes[0].split(" from ")[1].split(" rows")[0])


@pytest.mark.parametrize("name,dtype", [(name, dtype) for name in CASES for dtype in (np.float64, np.float32)
                                        if dtype == np.float64 or name not in ("sum_axis0", "centered")])
def test_matches_serial_and_numpy(name, dtype, monkeypatch, caplog):
    fn, ref, make, splits, large = CASES[name]
    ser = jit(fn)
    # compiled on its first call, which logs whether and from how many rows it splits
    par = jit(fn, parallel=True)
    rows = _threshold(caplog, monkeypatch, par, make(65, dtype))    # more rows than columns
    assert (rows is not None) == splits
    assert rows is None or 2 <= rows <= large          # the large size below is split
    monkeypatch.delenv("AOTX_DEBUG")
    for n in (1, large):
        args = make(n, dtype)
        scale = np.sqrt(n) if name == "cumsum_axis0" else 1.0     # float32 partial sums of n rows
        tol = dict(rtol=2e-5, atol=2e-5 * scale) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
        expect = ref(*[a.astype(np.float64) for a in args])
        want = ser(*args) if n > 1 else None    # the serial kernel, where a split can differ
        for threads in ("1", "2", "3"):
            monkeypatch.setenv("AOTX_NUM_THREADS", threads)
            for _ in range(2):               # the checked path, then the native entry
                got = par(*args)
                assert got.dtype == np.dtype(dtype) and got.shape == expect.shape
                np.testing.assert_allclose(got, expect, **tol)
                if want is None:
                    continue
                if name == "dense":          # BLAS may block a product by the rows it is given
                    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-13,
                                               atol=1e-5 if dtype == np.float32 else 1e-13)
                else:                        # the same operations per element
                    np.testing.assert_array_equal(got, want)


def test_large_1d_split_across_odd_thread_counts(monkeypatch):
    """A 1-d kernel over many slices, each slice boundary at a multiple of the alignment but
    the last one short."""
    par, ser = jit(wave, parallel=True), jit(wave)
    x = np.linspace(-4, 4, 400_003)
    want = ser(x)
    for threads in ("2", "5", "64", "1000"):
        monkeypatch.setenv("AOTX_NUM_THREADS", threads)
        np.testing.assert_array_equal(par(x), want)
    monkeypatch.setenv("AOTX_NUM_THREADS", "not a number")     # ignored: the affinity mask
    np.testing.assert_array_equal(par(x), want)


def test_random_draws_run_serially_and_match(monkeypatch, caplog):
    kp, ks = jit(noisy, parallel=True), jit(noisy)
    assert _threshold(caplog, monkeypatch, kp, (np.ones(5000),)) is None
    monkeypatch.delenv("AOTX_DEBUG")
    x = np.zeros(300_000)
    seed(3)
    a = kp(x)
    seed(3)
    b = ks(x)
    np.testing.assert_array_equal(a, b)
    assert 0.9 < a.std() < 1.1


def _per_example(v, w):
    return np.sum(np.tanh(v @ w) ** 2)


PER_EXAMPLE = jit(vmap(grad(_per_example), in_dims=(0, None)), parallel=True)
GRAD_SIN = jit(grad(lambda x: np.sum(np.sin(x) * x)), parallel=True)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_transformed_kernels(dtype, monkeypatch):
    monkeypatch.setenv("AOTX_NUM_THREADS", "3")
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    w = W.astype(dtype)
    for n in (5, 12_001):
        x = RNG.standard_normal((n, 32)).astype(dtype)
        h = np.tanh(x.astype(np.float64) @ W)
        # d/dv sum(tanh(v @ W)**2) = W @ (2 tanh (1 - tanh^2)), per row
        np.testing.assert_allclose(PER_EXAMPLE(x, w), (2 * h * (1 - h**2)) @ W.T, **tol)
        v = RNG.standard_normal(n * 20).astype(dtype)     # 240_020 rows: above its threshold
        vd = v.astype(np.float64)
        np.testing.assert_allclose(GRAD_SIN(v), np.cos(vd) * vd + np.sin(vd), **tol)


def test_in_place_update(monkeypatch):
    monkeypatch.setenv("AOTX_NUM_THREADS", "2")

    def scale(x):
        x *= np.tanh(x)

    k = jit(scale, parallel=True)
    x = RNG.standard_normal((12_001, 64))
    want = x * np.tanh(x)
    k(x)
    np.testing.assert_allclose(x, want, rtol=1e-14)


def test_signature_kernel_splits_every_size(monkeypatch):
    monkeypatch.setenv("AOTX_NUM_THREADS", "2")
    k = jit(dense, parallel=True, signature="f64[n, 32], f64[32, 16], f64[16]")
    for n in (0, 3, 12_289):
        x = RNG.standard_normal((n, 32))
        np.testing.assert_allclose(k(x, W, B), dense(x, W, B), rtol=1e-12, atol=1e-12)


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc)")
def test_built_library_splits_its_calls(tmp_path, monkeypatch):
    """`aotx build` of a parallel=True kernel: the library's entry splits the calls itself
    (runtime.load has nothing to do), and the manifest says so."""
    (tmp_path / "pk.py").write_text(
        "import numpy as np\nfrom compiler import jit\n\n"
        "@jit(signature=\"f32[n, 16], f32[16]\", parallel=True)\n"
        "def biased(x, b):\n    return np.tanh(x + b) * np.exp(-x)\n")
    assert cli.main(["build", str(tmp_path / "pk.py"), "-o", str(tmp_path / "o")]) == 0
    entry = json.loads((tmp_path / "o" / "pk.json").read_text())["kernels"][0]
    assert "split over the rows 'n'" in entry["parallel"]
    lib = runtime.load(tmp_path / "o" / "pk")
    x = RNG.standard_normal((40_099, 16)).astype(np.float32)
    b = np.linspace(0, 1, 16, dtype=np.float32)
    want = lib.biased(x, b)
    np.testing.assert_allclose(want, np.tanh(x + b) * np.exp(-x), rtol=2e-6, atol=2e-6)
    for threads in ("2", "3"):
        monkeypatch.setenv("AOTX_NUM_THREADS", threads)
        for _ in range(2):               # the checked path, then the native entry
            np.testing.assert_array_equal(lib.biased(x, b), want)


class _HostSin(Function):
    host_callback = True                 # forward runs as NumPy, in Python

    @staticmethod
    def forward(x):
        return np.sin(x)


def _with_callback(x):
    return np.tanh(_HostSin.apply(x) * 2.0)


def test_host_callback_runs_serially(caplog, monkeypatch):
    """A callback into Python is called once per call, with the GIL: never from the slices."""
    k = jit(_with_callback, parallel=True)
    assert _threshold(caplog, monkeypatch, k, (np.ones(10),)) is None
    assert any("host callback" in r.getMessage() for r in caplog.records)
    monkeypatch.delenv("AOTX_DEBUG")
    x = np.linspace(-3, 3, 300_001)
    for _ in range(2):
        np.testing.assert_allclose(k(x), np.tanh(np.sin(x) * 2.0), rtol=1e-14, atol=1e-15)


def _row_count_in_a_loop(x):
    s = 0.0
    for i in range(20):                  # a loop op whose body counts the rows: not split
        s = s + np.sum(np.arange(x.shape[0]) * 1.0) * i
    return x * s


def test_the_number_of_rows_inside_a_loop_is_not_split(caplog, monkeypatch):
    k = jit(_row_count_in_a_loop, parallel=True)
    assert _threshold(caplog, monkeypatch, k, (np.ones(4),)) is None
    monkeypatch.delenv("AOTX_DEBUG")
    monkeypatch.setenv("AOTX_NUM_THREADS", "2")
    x = np.linspace(0, 1, 300_001)
    n = x.size
    np.testing.assert_allclose(k(x), x * (n * (n - 1) / 2 * 190), rtol=1e-12)


def _predict(w, b, x):
    return np.tanh(x @ w + b)


def test_the_rows_are_the_batch_not_the_weights(caplog, monkeypatch):
    """predict(w, b, x): the largest leading dim (x's) is the rows."""
    k = jit(_predict, parallel=True)
    x = RNG.standard_normal((12_289, 32))
    assert _threshold(caplog, monkeypatch, k, (W, B, x[:40])) is not None
    monkeypatch.delenv("AOTX_DEBUG")
    monkeypatch.setenv("AOTX_NUM_THREADS", "3")
    np.testing.assert_allclose(k(W, B, x), np.tanh(x @ W + B), rtol=1e-13, atol=1e-13)


TABLE = np.linspace(0, 1, 50)


def _lookup(codes, x):             # a gather from a table by row-mapped indices
    return TABLE[codes] * np.exp(x)


def test_table_lookup_by_rows(monkeypatch):
    monkeypatch.setenv("AOTX_NUM_THREADS", "3")
    codes = RNG.integers(0, 50, 300_001)
    x = np.linspace(0, 1, codes.size)
    par, ser = jit(_lookup, parallel=True), jit(_lookup)
    want = ser(codes, x)
    np.testing.assert_allclose(want, TABLE[codes] * np.exp(x), rtol=1e-15)
    for _ in range(2):
        np.testing.assert_array_equal(par(codes, x), want)


def _columns(x, idx):
    return np.sin(x[:, idx])


def test_checked_gather_raises_from_a_slice(monkeypatch):
    """boundscheck=True: each slice checks its rows; a failure in any raises NumPy's error."""
    monkeypatch.setenv("AOTX_NUM_THREADS", "3")
    par, ser = jit(_columns, parallel=True, boundscheck=True), jit(_columns, boundscheck=True)
    x = RNG.standard_normal((300_001, 8))
    idx = np.array([0, 7, 3])
    np.testing.assert_array_equal(par(x, idx), ser(x, idx))
    np.testing.assert_allclose(par(x, idx), np.sin(x[:, idx]), rtol=1e-14, atol=1e-15)
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 8"):
        par(x, np.array([0, 8, 1]))
