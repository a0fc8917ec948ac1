"""Counted loops whose body works element by element run in windows of the elements
(compiler/transforms/windows.py): the results are NumPy's (to the rounding of the vector
math), on static and symbolic sizes, with and without a tail window; loops that do not
qualify are left alone; short ones (a static trip count, few ops) are unrolled into one
elementwise expression."""
import numpy as np
import pytest

import compiler
from compiler import jit


def mandelbrot(C, maxiter):
    Z = np.zeros_like(C)
    N = np.zeros(C.shape, dtype=np.int64)
    for n in range(maxiter):
        inside = np.abs(Z) < 2.0
        Z = np.where(inside, Z * Z + C, Z)
        N = N + inside
    return N, Z


def relax(x, a, steps):
    """The loop index and a 0-d invariant in an elementwise body; a run-time trip count."""
    for i in range(steps):
        x = np.sin(x) * a + 0.001 * i
    return x


def centred(x, steps):
    """A reduction in the body: element k depends on every element (not windowed)."""
    for _ in range(steps):
        x = np.tanh(x - x.mean())
    return x


def clock(x, steps):
    """A 0-d value the loop updates (not windowed: it would be computed once per window)."""
    t = 0.0
    for _ in range(steps):
        t = t + 0.5
        x = x * 0.9 + t
    return x, t


mandelbrot_k = jit(mandelbrot, static_argnums=(1,))
relax_sym = jit(relax, signature="f64[n], f64, i64")
relax_k = jit(relax)
centred_k = jit(centred)
clock_k = jit(clock)


def _grid(rows, cols):
    return np.linspace(-2.25, 0.75, cols)[None, :] + 1j * np.linspace(-1.25, 1.25, rows)[:, None]


@pytest.mark.parametrize("rows, cols", [(30, 41), (32, 64), (3, 5)])
def test_mandelbrot_counts_match_numpy_exactly(rows, cols):
    C = _grid(rows, cols)
    got_n, got_z = mandelbrot_k(C, 40)
    want_n, want_z = mandelbrot(C, 40)
    np.testing.assert_array_equal(got_n, want_n)
    # complex products round differently (fused); 40 steps of z*z + c amplify that
    np.testing.assert_allclose(got_z, want_z, rtol=1e-6)


def test_the_loop_runs_in_windows_when_there_are_enough_elements():
    assert "chunked" in mandelbrot_k.lower(_grid(30, 41), 40).ir_optimized
    assert "chunked" not in mandelbrot_k.lower(_grid(3, 5), 40).ir_optimized     # one window's worth


@pytest.mark.parametrize("n", [1, 7, 1000, 4099])
@pytest.mark.parametrize("steps", [0, 1, 13])
def test_symbolic_size_and_run_time_trip_count(n, steps):
    x = np.random.default_rng(n).standard_normal(n)
    np.testing.assert_allclose(relax_sym(x, 0.7, steps), relax(x, 0.7, steps), rtol=1e-13, atol=1e-15)


def test_float32_carries():
    x = np.random.default_rng(3).standard_normal(5000).astype(np.float32)
    got = relax_k(x, np.float32(0.7), 9)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, relax(x, np.float32(0.7), 9), rtol=2e-6, atol=1e-6)


def test_a_reduction_in_the_body_keeps_the_loop_whole():
    x = np.random.default_rng(4).standard_normal(3000)
    np.testing.assert_allclose(centred_k(x, 5), centred(x, 5), rtol=1e-12, atol=1e-15)
    assert "chunked" not in centred_k.lower(x, 5).ir_optimized


def test_an_updated_scalar_keeps_the_loop_whole():
    x = np.random.default_rng(5).standard_normal(3000)
    got_x, got_t = clock_k(x, 6)
    want_x, want_t = clock(x, 6)
    np.testing.assert_allclose(got_x, want_x, rtol=1e-14)
    assert got_t == want_t
    assert "chunked" not in clock_k.lower(x, 6).ir_optimized


def test_vmap_and_jvp_of_an_elementwise_loop():
    rng = np.random.default_rng(6)
    xs = rng.standard_normal((8, 700))
    batched = compiler.vmap(lambda x: relax(x, 0.7, 61))        # 61 steps: too long to unroll
    np.testing.assert_allclose(batched(xs), np.stack([relax(x, 0.7, 61) for x in xs]), rtol=1e-13)
    x, t = xs[0], rng.standard_normal(700)
    _, tangent = compiler.jvp(lambda x: relax(x, 0.7, 61), (x,), (t,))
    eps = 1e-6
    fd = (relax(x + eps * t, 0.7, 61) - relax(x - eps * t, 0.7, 61)) / (2 * eps)
    np.testing.assert_allclose(tangent, fd, rtol=1e-6, atol=1e-8)


def fma_chain(x):
    """benchmarks/w0_limits.py: 32 dependent multiply-adds per element."""
    y = x
    for _ in range(32):
        y = y * x + 0.5
    return y


def indexed(x):
    """The loop index in a short elementwise body."""
    for i in range(1, 13, 3):
        x = np.cos(x) + 0.25 * i
    return x


fma_k = jit(fma_chain)
indexed_k = jit(indexed)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_short_loop_is_unrolled_into_one_expression(dtype):
    x = (np.random.default_rng(7).standard_normal(5000) * 0.5).astype(dtype)
    got = fma_k(x)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, fma_chain(x))             # the same operations, in order
    text = fma_k.lower(x).ir_optimized
    assert " for(" not in text and "chunked" not in text
    np.testing.assert_allclose(indexed_k(x), indexed(x), rtol=1e-6 if dtype == np.float32 else 1e-14)
    assert " for(" not in indexed_k.lower(x).ir_optimized


def test_unrolling_does_not_depend_on_the_number_of_elements():
    x = np.random.default_rng(8).standard_normal(3)
    np.testing.assert_array_equal(fma_k(x), fma_chain(x))
    assert " for(" not in fma_k.lower(x).ir_optimized
