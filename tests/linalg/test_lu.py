"""np.linalg.solve, inv, det, slogdet, matrix_power, multi_dot, tensorinv, tensorsolve in
compiled code (compiler/primitives/lu.py, compiler/frontend/solve.py), beyond the OpInfo
samples: complex values, broadcasting of stacks, singular and ill-conditioned inputs,
LinAlgError (also under vmap), symbolic sizes, the unrolled and the loop code at many n,
and second derivatives against finite differences.

Oracles: NumPy (LAPACK), finite differences (tests/fd.py) of the uncompiled function.
Kernels are module-level so that the parametrized cases share them.
"""
from __future__ import annotations

import numpy as np
import pytest

import compiler
from compiler import grad, hessian, jacrev, jit, vmap
from compiler.primitives.lu import CHUNK
from tests import fd
from tests.lazy import lazy_jit

RNG = np.random.default_rng(20261126)
EPS64 = np.finfo(np.float64).eps


def well(shape, dtype=np.float64, rng=RNG):
    n = shape[-1]
    a = rng.uniform(-1, 1, shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.uniform(-1, 1, shape)
    return (a + n * np.eye(n)).astype(dtype)


def rand(shape, dtype=np.float64, rng=RNG):
    a = rng.uniform(-2, 2, shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.uniform(-2, 2, shape)
    return a.astype(dtype)


def close(got, want, rtol, atol=0.0):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# ---- kernels shared by the cases ---------------------------------------------------------------

def _all(a, b):
    s, l = np.linalg.slogdet(a)
    return np.linalg.solve(a, b), np.linalg.inv(a), np.linalg.det(a), s, l


ALL = jit(_all)


def _solve(a, b):
    return np.linalg.solve(a, b)


SOLVE = jit(_solve)


def _inv(a):
    return np.linalg.inv(a)


INV = jit(_inv)


def _dets(a):
    sign, logabs = np.linalg.slogdet(a)
    return np.linalg.det(a), sign, logabs


DETS = jit(_dets)


@lazy_jit(signature="f64[n,n], f64[n]")
def solve_symbolic(a, b):
    return np.linalg.solve(a, b)


@lazy_jit(signature="f64[k,n,n], f64[k,n,m]")
def solve_symbolic_stack(a, b):
    return np.linalg.solve(a, b), np.linalg.det(a)


def _expected(a, b):
    s, l = np.linalg.slogdet(a)
    return np.linalg.solve(a, b), np.linalg.inv(a), np.linalg.det(a), s, l


# ---- values ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("n", [1, 3, 9])
def test_every_function_every_dtype(dtype, n):
    a, b = well((2, n, n), dtype), rand((2, n, 2), dtype)
    got = ALL(a, b)
    rtol = 1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12
    for g, w in zip(got, _expected(a, b)):
        assert g.dtype == w.dtype
        close(g, w, rtol, atol=rtol)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 8, 17, 64])
def test_sizes_unrolled_and_loop(n):
    a, b = well((3, n, n)), rand((3, n, 1))
    x, ai, d, s, l = ALL(a, b)
    close(x, np.linalg.solve(a, b), 1e-11, 1e-12)
    close(ai, np.linalg.inv(a), 1e-11, 1e-12)
    close(d, np.linalg.det(a), 1e-11)
    close(l, np.linalg.slogdet(a)[1], 1e-12)
    np.testing.assert_array_equal(s, np.linalg.slogdet(a)[0])


@pytest.mark.parametrize("n", [1, 2, 3, 4, 8, 17, 64])
def test_symbolic_size(n):
    a, b = well((n, n)), rand((n,))
    close(solve_symbolic(a, b), np.linalg.solve(a, b), 1e-11, 1e-12)


def test_symbolic_stack():
    for k, n, m in [(1, 1, 1), (3, 4, 2), (2, 12, 3)]:
        a, b = well((k, n, n)), rand((k, n, m))
        x, d = solve_symbolic_stack(a, b)
        close(x, np.linalg.solve(a, b), 1e-11, 1e-12)
        close(d, np.linalg.det(a), 1e-11)


@pytest.mark.parametrize("sa, sb", [((2, 1, 3, 3), (4, 3, 2)), ((3, 3), (5, 3, 2)), ((4, 3, 3), (3,)),
                                    ((1, 3, 3), (2, 3, 1)), ((2, 2, 2), (1, 2, 3))])
def test_broadcasting_of_stacks(sa, sb):
    a, b = well(sa), rand(sb)
    want = np.linalg.solve(a, b)
    got = SOLVE(a, b)
    assert got.shape == want.shape
    close(got, want, 1e-12, 1e-13)


def test_integer_operands_compute_in_float64():
    a = np.array([[2, 1], [1, 3]])
    b = np.array([1, 2])
    assert SOLVE(a, b).dtype == np.float64
    close(SOLVE(a, b), np.linalg.solve(a, b), 1e-15)
    f32 = SOLVE(a.astype(np.float32), b.astype(np.float32))
    assert f32.dtype == np.float32


def test_ill_conditioned_within_cond_times_eps():
    """A Hilbert matrix (cond ~ 1e10 at n = 8): the error relative to NumPy's answer is
    bounded by a small multiple of cond * eps, as for any backward-stable solver."""
    for n in (5, 8, 10):
        i = np.arange(n)
        h = 1.0 / (i[:, None] + i[None, :] + 1)
        b = np.ones((n, 1))
        cond = np.linalg.cond(h)
        x, want = SOLVE(h, b), np.linalg.solve(h, b)
        assert np.linalg.norm(x - want) / np.linalg.norm(want) < 50 * cond * EPS64
        assert np.linalg.norm(h @ x - b) / np.linalg.norm(b) < 1e3 * EPS64 * np.linalg.norm(h) * np.linalg.norm(x)
        close(DETS(h)[0], np.linalg.det(h), 50 * cond * EPS64)


def test_pivoting_on_a_zero_leading_entry():
    a = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 3.0], [4.0, -3.0, 8.0]])
    b = np.array([1.0, 2.0, 3.0])
    close(SOLVE(a, b), np.linalg.solve(a, b), 1e-14, 1e-15)
    close(DETS(a)[0], np.linalg.det(a), 1e-14)
    big = np.zeros((12, 12))
    big[np.arange(12), (np.arange(12) + 5) % 12] = np.arange(1.0, 13.0)     # a permutation, scaled
    close(SOLVE(big, np.ones(12)), np.linalg.solve(big, np.ones(12)), 1e-15)
    close(DETS(big)[0], np.linalg.det(big), 1e-14)


# ---- singular matrices -------------------------------------------------------------------------

SINGULAR = [np.array([[1.0, 2.0], [2.0, 4.0]]), np.zeros((3, 3)), np.array([[0.0]]),
            np.diag([1.0, 0.0, 1.0]), np.ones((9, 9))]


@pytest.mark.parametrize("a", SINGULAR, ids=lambda a: f"{a.shape}")
def test_singular_raises_linalgerror(a):
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        np.linalg.solve(a, np.ones(a.shape[0]))
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix") as info:
        SOLVE(a, np.ones(a.shape[0]))
    assert "test_lu.py" in str(info.value)                 # the user's line
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        INV(a)


@pytest.mark.parametrize("a", SINGULAR, ids=lambda a: f"{a.shape}")
def test_det_of_singular_is_zero(a):
    d, s, l = DETS(a)
    nd, (ns, nl) = np.linalg.det(a), np.linalg.slogdet(a)
    assert d == nd == 0.0 and not np.signbit(d)
    assert s == ns == 0.0 and not np.signbit(s)
    assert l == nl == -np.inf


def test_singular_element_of_a_stack_and_under_vmap():
    a = well((4, 3, 3))
    a[2] = SINGULAR[3]
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        SOLVE(a, np.ones(3))
    solve_each = vmap(_solve, in_dims=(0, None))
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        solve_each(a, np.ones(3))
    ok = well((4, 3, 3))
    close(solve_each(ok, np.ones(3)), np.linalg.solve(ok, np.ones(3)), 1e-13)
    d = vmap(_dets)(a)[0]
    close(d, np.linalg.det(a), 1e-13, 1e-15)


def _power(a):
    return np.linalg.matrix_power(a, -2)


POWER = jit(_power)


def test_matrix_power_negative_of_singular_raises():
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        POWER(SINGULAR[0])
    a = well((3, 3))
    close(POWER(a), np.linalg.matrix_power(a, -2), 1e-12)


def test_matrix_power_keeps_integers():
    f = jit(lambda a: (np.linalg.matrix_power(a, 0), np.linalg.matrix_power(a, 3),
                       np.linalg.matrix_power(a, 11)))
    a = np.array([[1, 1], [1, 0]])
    for got, want in zip(f(a), (np.linalg.matrix_power(a, k) for k in (0, 3, 11))):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_multi_dot_symbolic_and_vectors():
    f = jit(lambda a, b, c: np.linalg.multi_dot([a, b, c]), signature="f64[n], f64[n,m], f64[m]")
    a, b, c = rand((4,)), rand((4, 6)), rand((6,))
    close(f(a, b, c), np.linalg.multi_dot([a, b, c]), 1e-13)


def test_tensorsolve_axes_and_tensorinv():
    a = well((6, 6)).reshape(2, 3, 6)
    f = jit(lambda a: np.linalg.tensorinv(a, ind=2))
    close(f(a), np.linalg.tensorinv(a, ind=2), 1e-12, 1e-14)
    t = np.moveaxis(well((6, 6)).reshape(2, 3, 6), 2, 0)          # axes=(0,) moves it back
    b = rand((2, 3))
    g = jit(lambda t, b: np.linalg.tensorsolve(t, b, axes=(0,)))
    close(g(t, b), np.linalg.tensorsolve(t, b, axes=(0,)), 1e-12, 1e-14)


def test_user_errors():
    with pytest.raises(compiler.errors.ShapeMismatchError, match="must be square"):
        INV(np.ones((2, 3)))
    with pytest.raises(compiler.errors.ShapeMismatchError, match="at least two-dimensional"):
        INV(np.ones(3))
    with pytest.raises(compiler.errors.CompileError, match="integer known when compiling"):
        jit(lambda a, k: np.linalg.matrix_power(a, k))(np.eye(2), np.int64(2))
    with pytest.raises(compiler.errors.ShapeMismatchError, match="prod"):
        jit(lambda a: np.linalg.tensorinv(a, ind=1))(np.ones((2, 3)))


# ---- derivatives -------------------------------------------------------------------------------

def _scalar_of_solve(a, b):
    return np.sum(np.linalg.solve(a, b) ** 2) + np.linalg.det(a) + np.sum(np.linalg.inv(a)[0])


def _logdet(a):
    return np.linalg.slogdet(a)[1]


@pytest.mark.parametrize("n", [3, 9])
def test_grad_and_hessian_vs_finite_differences(n):
    a, b = well((n, n)), rand((n,))
    g = grad(_scalar_of_solve)(a, b)
    want = fd.jacobian(_scalar_of_solve, (a, b), 0)
    close(g, want, 1e-6, 1e-8 * np.abs(want).max())      # det(a) ~ n**n: the FD noise scales
    h = hessian(_logdet)(a)
    v, w = rand((n, n)), rand((n, n))
    hv = np.tensordot(h, v, axes=2)
    close(np.sum(w * hv), fd.second_directional_derivative(_logdet, (a,), (v,), (w,)), 1e-5, 1e-7)


def test_jacrev_and_vmap_of_grad():
    a, b = well((4, 3, 3)), rand((4, 3))
    jac = jacrev(_solve)(a[0], b[0])
    close(jac, fd.jacobian(_solve, (a[0], b[0]), 0), 1e-6, 1e-8)
    per = vmap(grad(_scalar_of_solve))(a, b)
    want = np.stack([fd.jacobian(_scalar_of_solve, (a[i], b[i]), 0) for i in range(4)])
    close(per, want, 1e-6, 1e-8 * np.abs(want).max())


def test_complex_gradient_convention():
    """The gradient of a real function of complex a is conj of d/da (torch's convention):
    compared with finite differences along the real and imaginary parts."""
    def f(a):
        return np.abs(np.linalg.det(a)) ** 2 + np.real(np.sum(np.linalg.inv(a)))
    a = well((3, 3), np.complex128)
    g = grad(f)(a)
    re = fd.jacobian(lambda x: f(x + 1j * a.imag), (a.real,), 0)
    im = fd.jacobian(lambda y: f(a.real + 1j * y), (a.imag,), 0)
    close(g, re + 1j * im, 1e-6, 1e-8)


def test_large_stack_in_chunks_with_a_rest():
    """A static stack of more than 2 * CHUNK small matrices runs in chunks, then the rest."""
    k = 2 * CHUNK + 7
    a, b = well((k, 3, 3)), rand((k, 3, 2))
    a[CHUNK + 1] = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 3.0], [4.0, -3.0, 8.0]])   # pivots
    x, ai, d, s, l = ALL(a, b)
    close(x, np.linalg.solve(a, b), 1e-12, 1e-13)
    close(d, np.linalg.det(a), 1e-12)
    a[-1] = SINGULAR[3]
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        SOLVE(a, b)


@pytest.mark.parametrize("sa, sb", [((0, 3, 3), (0, 3, 1)), ((2, 0, 0), (2, 0, 1)), ((0, 0), (0, 2))])
def test_empty(sa, sb):
    a, b = np.zeros(sa), np.zeros(sb)
    for got, want in zip(ALL(a, b), _expected(a, b)):
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("sb", [(3, 40), (50, 3, 2), (2, 25, 3, 1)])
def test_one_matrix_many_right_hand_sides(sb):
    """One factorization for a stack of right-hand sides (their columns side by side); more
    columns than the unrolled solve takes at once make each column a system of the stack."""
    a = well((3, 3))
    a[[0, 2]] = a[[2, 0]]                     # a row swap for the pivoting
    b = rand(sb)
    close(SOLVE(a, b), np.linalg.solve(a, b), 1e-13, 1e-14)
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        SOLVE(SINGULAR[3], b)
