"""An assignment between overlapping views of one array reads the right-hand side whole
before writing (docs/guide.md): the oracle is NumPy with the right-hand side copied first
(NumPy's own indexed assignment copies 1-d same-direction views element by element)."""
import numpy as np

from compiler import jit


def from_itself(u):
    u[1::2] = u[2:6]
    return u


def from_another(u, v):
    u[2:6] = v[1::2]


from_itself_k, from_another_k = jit(from_itself), jit(from_another)


def test_a_view_of_the_same_argument():
    u = np.arange(8.0)
    want = u.copy()
    want[1::2] = u[2:6].copy()
    np.testing.assert_array_equal(from_itself_k(u.copy()), want)


def test_the_same_array_passed_twice():
    u = np.arange(9.0)
    want = u.copy()
    want[2:6] = u[1::2].copy()
    from_another_k(u, u)
    np.testing.assert_array_equal(u, want)
