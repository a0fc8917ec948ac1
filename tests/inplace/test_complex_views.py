"""`.real` and `.imag` of a complex array are views, as in NumPy: writes through them reach
the array (a local one, or the caller's under plain jit), and views read after a write see
it. `.imag` of a real array is read-only. The uncompiled function on a copy is the oracle."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import jit, vmap
from compiler.errors import CompileError, SideEffectError

RNG = np.random.default_rng(7)


def crandn(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def conj_in_place(z):
    z.imag *= -1
    return z.sum()


def shift_real_parts(z):
    z.real[1:] += z.real[:-1]
    return z


def set_through_np_imag(z):
    im = np.imag(z)
    im[0] = 5.0
    return z.copy()


def local_then_view(x):
    w = x * 2.0 + 0j
    re = w.real
    w.imag[:] = x
    re[-1] = 0.0
    return w, re * 1.0


def views_see_writes(z):
    im = z.imag
    z[0] = 3 + 4j
    return im * 1.0


def set_parts(z):
    z.real = 1.0
    z.imag += z.real * 2
    return z


def write_rows(z):
    z.real[0] = z.imag[1]
    z.T.imag[:, 1] = 0.0
    return z


CASES = [conj_in_place, shift_real_parts, set_through_np_imag, local_then_view,
         views_see_writes, set_parts, write_rows]


@pytest.mark.parametrize("fn", CASES, ids=[f.__name__ for f in CASES])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_writes_through_real_and_imag_match_numpy(fn, dtype):
    z = (crandn(2, 4) if fn is write_rows else crandn(5)).astype(dtype)
    arg = z.real.copy() if fn is local_then_view else z
    want_arg, got_arg = arg.copy(), arg.copy()
    want, got = fn(want_arg), jit(fn)(got_arg)
    for g, w in zip(got if isinstance(got, tuple) else [got], want if isinstance(want, tuple) else [want]):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        if fn is conj_in_place:      # a sum: NumPy's order of additions is not the compiled one
            np.testing.assert_allclose(g, w, rtol=2e-6 if dtype == np.complex64 else 1e-15)
        else:
            np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(got_arg, want_arg)


def imag_of_real(x):
    y = x.imag
    y[0] = 5.0
    return y


def test_imag_of_a_real_array_is_read_only():
    with pytest.raises(ValueError, match="read-only"):
        imag_of_real(np.ones(3))
    with pytest.raises(CompileError, match="read-only"):
        jit(imag_of_real)(np.ones(3))


def test_writes_into_an_arguments_parts_under_vmap_are_refused():
    with pytest.raises(SideEffectError):
        vmap(conj_in_place)(crandn(3, 4))


def local_parts_under_vmap(z):
    w = z.copy()
    w.imag *= -1
    w.real[0] = 2.0
    return w


def real_of_real(x):
    x.real = 5.0
    return x


def test_parts_of_local_copies_under_vmap_and_real_of_a_real_array():
    zs = crandn(3, 4)
    np.testing.assert_array_equal(vmap(local_parts_under_vmap)(zs),
                                  np.stack([local_parts_under_vmap(z) for z in zs]))
    want, got = np.ones(3), np.ones(3)
    np.testing.assert_array_equal(jit(real_of_real)(got), real_of_real(want))
    np.testing.assert_array_equal(got, want)
