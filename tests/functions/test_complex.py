"""Complex numbers as a user writes them (docs/complex.md): whole programs compiled and
transformed, against NumPy, Python loops and finite differences.

The per-operation tests are the ``complex.*`` OpInfos (tests/ops/opinfo.py: forward and
vmap) and tests/ops/test_complex_grad.py (jvp and vjp); the lowering pass has its IR
cases in tests/transforms/passes/complex.ir.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from compiler import errors, grad, hessian, jacfwd, jacrev, jit, jvp, vjp, vmap
from compiler.backend import target
from tests.lazy import lazy_jit

RNG = np.random.default_rng(20261126)


def crandn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


# ---- the gradient convention --------------------------------------------------------------------

def loss(z, w):
    return np.sum(np.abs(z * w + 1j) ** 2) + np.sum(np.real(np.exp(z) * np.conj(w))) \
        + np.sum(np.angle(z + 3.0))


_GRAD = grad(loss)


def test_grad_is_dL_dx_plus_i_dL_dy():
    """torch.func's convention: the gradient of a real loss of z = x + iy is dL/dx + 1j dL/dy,
    here element by element with central differences in the real and imaginary directions."""
    z, w = crandn(5), crandn(5)
    got = _GRAD(z, w)
    assert got.dtype == np.complex128 and got.shape == z.shape
    h = 1e-6
    want = np.empty(5, complex)
    for k in range(5):
        e = np.zeros(5)
        e[k] = h
        d_re = (loss(z + e, w) - loss(z - e, w)) / (2 * h)
        d_im = (loss(z + 1j * e, w) - loss(z - 1j * e, w)) / (2 * h)
        want[k] = d_re + 1j * d_im
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_grad_of_a_complex64_input_is_complex64():
    z, w = crandn(4).astype(np.complex64), crandn(4).astype(np.complex64)
    got = _GRAD(z, w)
    want = _GRAD(z.astype(np.complex128), w.astype(np.complex128))
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)


def test_holomorphic_vjp_is_the_conjugate_derivative():
    """For a holomorphic f, vjp(f)(z)(1) = conj(f'(z)) (torch.func); JAX's vjp gives f'(z).
    f'(z) is the complex difference quotient along a real step (the same along any step)."""
    def f(z):
        return np.exp(z) * z + z ** 3 / (1.0 + z * z)
    z = crandn(6) * 0.5
    _, back = vjp(f, z)
    (ct,) = back(np.ones(6, complex))
    h = 1e-6
    deriv = (f(z + h) - f(z - h)) / (2 * h)
    deriv_imag_step = (f(z + 1j * h) - f(z - 1j * h)) / (2j * h)
    np.testing.assert_allclose(deriv, deriv_imag_step, rtol=1e-6)      # f is holomorphic
    np.testing.assert_allclose(ct, np.conj(deriv), rtol=1e-6, atol=1e-8)
    _, t = jvp(f, (z,), (np.ones(6, complex),))
    np.testing.assert_allclose(t, deriv, rtol=1e-6, atol=1e-8)


def test_grad_of_a_complex_output_is_an_error():
    with pytest.raises(TypeError, match="requires real-valued outputs"):
        grad(lambda z: np.sum(z * z))(crandn(3))


def _real_of_complex(z):
    """C^3 -> R^3, not holomorphic anywhere."""
    return np.abs(z * z + 1j * z[::-1]) ** 2 + z.real * z.imag


def _complex_of_real(x):
    """R^3 -> C^3."""
    return np.exp(1j * x) * np.array([1.0, 2.0 - 1j, 3.0]) + x[::-1] ** 2


def _fd_complex_columns(f, z, h=1e-6):
    """Column k: dF/dRe z_k + 1j dF/dIm z_k (the gradient convention, per output)."""
    cols = []
    for e in np.eye(z.size):
        d_re = (f(z + h * e) - f(z - h * e)) / (2 * h)
        d_im = (f(z + 1j * h * e) - f(z - 1j * h * e)) / (2 * h)
        cols.append(d_re + 1j * d_im)
    return np.stack(cols, axis=1)


def test_jacrev_of_a_real_function_of_complex_inputs_stacks_gradients():
    """As JAX: jacrev pulls back the real basis of the outputs, so row o is grad of output o."""
    z = crandn(3)
    got = jacrev(_real_of_complex)(z)
    assert got.dtype == np.complex128 and got.shape == (3, 3)
    np.testing.assert_allclose(got, _fd_complex_columns(_real_of_complex, z), rtol=1e-6, atol=1e-7)
    rows = np.stack([grad(lambda z, k=k: _real_of_complex(z)[k])(z) for k in range(3)])
    np.testing.assert_allclose(got, rows, rtol=1e-13, atol=1e-13)


def test_jacfwd_of_complex_outputs_of_real_inputs():
    """As JAX: jacfwd pushes the real basis of the inputs forward: dF/dx_k, complex."""
    x = RNG.standard_normal(3)
    got = jacfwd(_complex_of_real)(x)
    h = 1e-6
    want = np.stack([(_complex_of_real(x + h * e) - _complex_of_real(x - h * e)) / (2 * h)
                     for e in np.eye(3)], axis=1)
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("make, arg, match", [
    (lambda: jacfwd(_real_of_complex), "z", "jacfwd .*inputs are complex"),
    (lambda: hessian(lambda z: np.sum(_real_of_complex(z))), "z", "hessian.*inputs are complex"),
    (lambda: jacrev(_complex_of_real), "x", "outputs are complex; use jacfwd"),
    (lambda: jacrev(lambda z: z * z), "z", "outputs and the inputs are complex"),
])
def test_jacobians_without_a_real_basis_are_refused(make, arg, match):
    """Where a complex-to-complex map needs two real matrices, the error says what to use."""
    value = crandn(3) if arg == "z" else RNG.standard_normal(3)
    with pytest.raises(TypeError, match=match):
        make()(value)


def test_grad_under_vmap():
    """vmap(grad(L)) equals a Python loop of grad(L)."""
    zs, ws = crandn(4, 3), crandn(4, 3)
    got = vmap(grad(loss))(zs, ws)
    want = np.stack([_GRAD(z, w) for z, w in zip(zs, ws)])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# ---- programs -------------------------------------------------------------------------------------

def fourier(x, y):
    return np.exp(1j * x) * y


def test_phase_rotation_matches_numpy():
    x, y = RNG.standard_normal(1000), crandn(1000)
    np.testing.assert_allclose(jit(fourier)(x, y), fourier(x, y), rtol=1e-14, atol=1e-15)


def dft(x):
    n = x.shape[0]
    k = np.arange(n)
    w = np.exp(-2j * np.pi * np.outer(k, k) / n)
    return w @ x


def test_dft_matches_fft():
    x = crandn(16)
    np.testing.assert_allclose(jit(dft)(x), np.fft.fft(x), rtol=1e-12, atol=1e-12)
    xs = crandn(3, 16)
    np.testing.assert_allclose(vmap(dft)(xs), np.fft.fft(xs, axis=1), rtol=1e-12, atol=1e-12)


def test_complex_in_loops_and_conditions():
    def f(z, n):
        acc = np.zeros_like(z)
        for _ in range(n):
            acc = acc * z + 1j
        if np.sum(np.abs(acc)) > 1.0:
            acc = np.conj(acc)
        return acc
    z = crandn(5) * 0.5
    np.testing.assert_allclose(jit(f, static_argnums=1)(z, 4), f(z, 4), rtol=1e-13)


def test_python_complex_argument_is_weak():
    """A Python complex argument is dynamic and weak (NEP 50): complex64 stays complex64."""
    k = jit(lambda x, c: x * c)
    x = crandn(3).astype(np.complex64)
    out = k(x, 2.0 - 1.5j)
    assert out.dtype == np.complex64
    np.testing.assert_allclose(out, x * np.complex64(2.0 - 1.5j), rtol=1e-6)
    np.testing.assert_allclose(k(x, 0.5j), x * np.complex64(0.5j), rtol=1e-6)


def test_signature_kernel_and_non_contiguous_input():
    k = jit(lambda z, x: z * x + np.conj(z), signature="c128[n, m], f64[m] -> c128[n, m]")
    z, x = crandn(5, 4).T, RNG.standard_normal(5)
    np.testing.assert_allclose(k(z, x), z * x + np.conj(z), rtol=1e-15)


def extrema(z):
    return (np.max(z), np.min(z), z.max(axis=0), z.min(axis=1), np.max(z, axis=(0, 1)),
            z.max(axis=1, keepdims=True), np.argmax(z), np.argmin(z), z.argmax(axis=0),
            z.argmin(axis=1), np.amax(z, axis=-1))


def _with_ties_and_nans(dtype):
    """Small integer parts (ties on the real part decided by the imaginary part), and NaN in
    either part of some elements (NumPy returns the first of them, and its index)."""
    z = (RNG.integers(-2, 3, (5, 7)) + 1j * RNG.integers(-2, 3, (5, 7))).astype(dtype)
    zn = z.copy()
    zn[1, 3], zn[1, 5], zn[3, 0], zn[3, 4] = complex(np.nan, 2), complex(1, np.nan), complex(0, np.nan), np.nan
    return z, zn


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_max_min_argmax_argmin_in_numpys_lexicographic_order(dtype):
    for z in _with_ties_and_nans(dtype):
        for got, want in zip(jit(extrema)(z), extrema(z)):
            got, want = np.asarray(got), np.asarray(want)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
            if want.dtype.kind == "c":      # which part is NaN, too
                np.testing.assert_array_equal(np.isnan(got.real), np.isnan(want.real))
                np.testing.assert_array_equal(np.isnan(got.imag), np.isnan(want.imag))


def test_lexicographic_extrema_under_vmap():
    _, zn = _with_ties_and_nans(np.complex128)
    got = vmap(lambda r: (np.max(r), np.argmin(r)))(zn)
    for k, want in enumerate(zip(*[(np.max(r), np.argmin(r)) for r in zn])):
        np.testing.assert_array_equal(got[k], np.array(want))


def _products(z, w):
    return np.prod(z), np.cumprod(z), np.prod(w, axis=1), np.cumprod(w, axis=0), np.prod(w)


_PRODUCTS = {dt: lazy_jit(_products, signature=f"{dt}[n], {dt}[n, m]") for dt in ("c64", "c128")}


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 33])
def test_complex_products_over_symbolic_sizes(dtype, n):
    """prod and cumprod along an axis of symbolic size run a loop of complex products (the
    static sizes use a tree): NumPy's values for empty, short and odd lengths."""
    kernel = _PRODUCTS["c64" if dtype == np.complex64 else "c128"]
    z, w = (crandn(n) * 0.9).astype(dtype), (crandn(n, 3) * 0.9).astype(dtype)
    tol = 2e-5 if dtype == np.complex64 else 1e-13
    for got, want in zip(kernel(z, w), _products(z, w)):
        assert np.asarray(got).dtype == want.dtype and np.shape(got) == want.shape
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_grad_through_a_symbolic_complex_product():
    """The vjp of prod uses exclusive running products: a loop too, against differences."""
    def f(z):
        return np.abs(np.prod(z)) ** 2 + np.real(np.sum(np.cumprod(z)))
    kernel = jit(grad(f), signature="c128[n]")
    for n in (1, 5):
        z = crandn(n)
        np.testing.assert_allclose(kernel(z), _fd_complex_columns(lambda v: np.array([f(v)]), z)[0],
                                   rtol=1e-6, atol=1e-7)


def test_phase_rotation_kernel_is_vectorized():
    """The interleaved loads and stores and the fused real arithmetic run on the host's
    widest vector registers (packed double instructions)."""
    x, y = np.zeros(64), np.zeros(64, complex)
    asm = jit(fourier).lower(x, y).asm
    reg = {512: "zmm", 256: "ymm", 128: "xmm"}[target.host().vector_bits]
    packed = re.findall(rf"\bv\w+pd\s[^\n]*%{reg}\d+", asm)
    assert len(packed) >= 16, f"no packed double ops on %{reg}:\n{asm[:2000]}"


_PARTNERS = [np.float32, np.float64, np.int32, np.int64, np.bool_, np.complex64, np.complex128]


@pytest.mark.parametrize("cdtype", [np.complex64, np.complex128])
def test_promotion_with_every_dtype_and_python_scalar(cdtype):
    """NEP 50: the result dtype of complex with each array dtype and each Python scalar kind,
    against NumPy (one kernel, every pair)."""
    z = np.array([1.5 - 0.5j, 2.0 + 1.0j], cdtype)
    others = [np.array([1, 0], d) for d in _PARTNERS]

    def f(z, others):
        return [z + o for o in others] + [o * z for o in others] + [z + 1, 2.5 * z, z - True, z * 1j, 1j - z]
    got = jit(f)(z, others)
    want = f(z, others)
    assert [g.dtype for g in got] == [w.dtype for w in want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_long_static_complex_cumprod_runs_the_loop():
    """Past 64 elements a static cumprod is the sequential loop too (doubling would make
    log2(n) passes): NumPy's values along either axis of a 2-d array."""
    w = crandn(3, 100) * 0.99
    got = jit(lambda w: (np.cumprod(w, axis=1), np.cumprod(w.T, axis=0)))(w)
    np.testing.assert_allclose(got[0], np.cumprod(w, axis=1), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(got[1], np.cumprod(w.T, axis=0), rtol=1e-12, atol=1e-300)
