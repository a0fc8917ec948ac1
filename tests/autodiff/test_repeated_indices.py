"""Assigning through an index array that repeats an element: NumPy keeps the last write, so
only the last of the repeated updates has a derivative (reverse mode agreed with forward mode
and finite differences only after the scatter's transpose learnt it)."""
import numpy as np
import pytest

from compiler import jacfwd, jacrev
from tests import fd

IDX = np.array([1, 1, 2, -1, 4])       # 1 twice; -1 and 4 name the same element of a length-5 axis


def set_repeated(x, v):
    y = x.copy()
    y[IDX] = v * v
    return y * x


def set_repeated_rows(x, v):
    y = x.copy()
    y[:, IDX] = np.sin(v)
    return y


@pytest.mark.parametrize("fn, shapes", [(set_repeated, ((5,), (5,))),
                                        (set_repeated_rows, ((3, 5), (3, 5)))])
@pytest.mark.parametrize("argnum", [0, 1])
def test_jacobians_of_repeated_writes_match_finite_differences(fn, shapes, argnum):
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s) for s in shapes]
    expected = fd.jacobian(fn, args, argnum)
    np.testing.assert_allclose(jacrev(fn, argnums=argnum)(*args), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jacfwd(fn, argnums=argnum)(*args), expected, rtol=1e-6, atol=1e-8)


def test_only_the_last_of_repeated_updates_gets_a_gradient():
    x, v = np.arange(5.0), np.ones(5)
    dv = jacrev(set_repeated, argnums=1)(x, v)
    assert dv[1, 0] == 0 and dv[1, 1] != 0          # v[0] is overwritten by v[1]
    assert dv[4, 3] == 0 and dv[4, 4] != 0          # v[3] (index -1) is overwritten by v[4]
