"""A size that comes from a run-time argument (a NumPy integer, a 0-d array, an ``i64``
of a signature, under jit, vmap or grad): the CompileError's hint names static_argnums
and the argument, and following the hint compiles the function (checked against NumPy)."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import grad, jit, vmap
from compiler.errors import CompileError


def lin(a, b, n):
    return np.linspace(a, b, n)


def zeros(x, n):
    return np.zeros(n) + x


def arange(x, n):
    return np.arange(n) * x


def rows(x, n):
    return x.reshape(n, -1)


def full(x, n):
    return np.full((n, 2), x)


def helper(k):
    return np.ones(k)


def through_helper(x, n):
    return helper(n) * x


def total(x, n):
    return np.sum(np.zeros(n) + x * x)


def padded(x, n):
    return np.pad(x, (1, n))


def pieces(x, n):
    return np.array_split(x, n)[0]


N = np.int64(3)
CASES = [
    ("pad", padded, (np.arange(4.0), N), 1, "n", "f64[4], i64"),
    ("array_split", pieces, (np.arange(7.0), N), 1, "n", "f64[7], i64"),
    ("linspace", lin, (0.0, 1.0, N), 2, "n", "f64, f64, i64"),
    ("zeros", zeros, (1.5, np.array(3)), 1, "n", "f64, i64"),
    ("arange", arange, (2.0, N), 1, "n", "f64, i64"),
    ("reshape", rows, (np.arange(6.0), N), 1, "n", "f64[6], i64"),
    ("full", full, (1.5, N), 1, "n", "f64, i64"),
    ("helper", through_helper, (1.5, N), 1, "n", "f64, i64"),
]


@pytest.mark.parametrize("name,f,args,pos,arg,sig", CASES, ids=[c[0] for c in CASES])
def test_hint_names_static_argnums_and_the_argument(name, f, args, pos, arg, sig):
    want = f"`{arg}` (argument {pos} of {f.__name__}) is a run-time value here: pass static_argnums=({pos},)"
    with pytest.raises(CompileError) as lazy:
        jit(f)(*args)
    assert want in str(lazy.value.hint), lazy.value
    with pytest.raises(CompileError) as signed:
        jit(f, signature=sig)
    assert want in str(signed.value.hint), signed.value
    np.testing.assert_allclose(jit(f, static_argnums=(pos,))(*args), f(*args), rtol=1e-15)


def test_hint_under_vmap_and_grad():
    with pytest.raises(CompileError) as e:
        vmap(zeros, in_dims=(0, None))(np.ones(2), N)
    assert "static_argnums=(1,)" in str(e.value.hint)
    np.testing.assert_allclose(jit(vmap(zeros, in_dims=(0, None)), static_argnums=(1,))(np.ones(2), N),
                               np.ones((2, 3)))
    with pytest.raises(CompileError) as e:
        grad(total)(1.5, N)
    assert "`n` (argument 1 of total)" in str(e.value.hint)
    assert jit(grad(total), static_argnums=(1,))(1.5, N) == pytest.approx(2 * 1.5 * 3)


def test_no_static_hint_for_a_data_dependent_shape_or_a_float_fill():
    def masked(x, t):
        return x[x > t]
    with pytest.raises(CompileError) as e:
        jit(masked)(np.ones(3), N)
    assert "static_argnums" not in str(e.value.hint)

    def two(a, n):
        return np.full((n, 2), a)
    with pytest.raises(CompileError) as e:
        jit(two)(1.5, N)
    assert "`n` (argument 1 of two)" in str(e.value.hint) and "`a`" not in str(e.value.hint)


def test_pad_widths_that_are_not_static_integers():
    """A symbolic width and a float width: one clear error each (NumPy's TypeError for the
    float), never an internal one."""
    with pytest.raises(CompileError, match="np.pad by the symbolic size n"):
        jit(lambda x: np.pad(x, (1, x.shape[0])), signature="f64[n]")
    with pytest.raises(CompileError, match="must be of integral type"):
        jit(lambda x: np.pad(x, 1.5))(np.ones(3))
