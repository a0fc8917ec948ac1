"""Item 5 and the messages of item 12 of the reliability issue, as regression tests:
ndarray subclasses refused naming the argument, and messages that name what went wrong
(argument, value, function) the way NumPy and torch.func do."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import grad, hessian, jacfwd, jacrev, jit, vmap
from compiler.errors import CompileError

pytestmark = pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")   # np.matrix


def product(a, b):
    return a * b


def total(x):
    return np.sum(x)


@pytest.mark.parametrize("make", [lambda: jit(product), lambda: jit(product, signature="f64[n, m], f64[n, m]"),
                                  lambda: vmap(product), lambda: grad(lambda a, b: np.sum(a * b))],
                         ids=["jit", "signature", "vmap", "grad"])
def test_matrix_arguments_are_refused(make):
    m = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    assert not np.array_equal(np.asarray(m * m), np.asarray(m) * np.asarray(m))  # what would go wrong
    with pytest.raises(TypeError, match=r"argument 'a': np.matrix .* pass np.asarray\(a\)"):
        make()(m, m)
    np.testing.assert_array_equal(jit(product)(np.asarray(m), np.asarray(m)), np.asarray(m) * np.asarray(m))


@pytest.mark.parametrize("make", [lambda: jit(total), lambda: jit(total, signature="f64[n]")], ids=["jit", "signature"])
def test_masked_arguments_are_refused(make):
    x = np.ma.array([1.0, 100.0, 2.0], mask=[0, 1, 0])
    assert total(x) == 3.0                         # NumPy skips the masked value; a kernel would not
    with pytest.raises(TypeError, match=r"argument 'x': np.ma.MaskedArray .*x.filled"):
        make()(x)
    assert make()(x.filled(0.0)) == 3.0


def test_memmap_arguments_are_accepted(tmp_path):
    m = np.memmap(tmp_path / "m.dat", dtype=np.float64, mode="w+", shape=(4,))
    m[:] = [1.0, 2.0, 3.0, 4.0]
    assert jit(total)(m) == 10.0 and jit(total, signature="f64[n]")(m) == 10.0


def test_subclass_inside_a_pytree_is_named():
    with pytest.raises(TypeError, match=r"argument 'p\['b'\]': np.matrix"):
        jit(lambda p: p["a"] + p["b"])({"a": np.ones((1, 2)), "b": np.matrix([[1.0, 2.0]])})


def test_lazy_dtype_errors_name_the_argument():
    with pytest.raises(TypeError, match=r"argument 'b': arrays of dtype object are not supported"):
        jit(product)(np.ones(2), np.ones(2, object))
    with pytest.raises(TypeError, match=r"argument 'a\[1\]': arrays of dtype float128 .* a\[1\].astype\(np.float64\)"):
        jit(lambda a: a[0] + a[1])((np.ones(2), np.ones(2, np.longdouble)))


def big_int_result(x, n):
    return n


def big_int_sum(x, n):
    return x + n


def test_python_int_beyond_int64_is_reported_at_its_use():
    with pytest.raises(CompileError) as info:
        jit(big_int_result)(np.ones(2), 2**70)
    assert "Python integer 1180591620717411303424 out of bounds for int64" in str(info.value)
    assert "dtype object" not in str(info.value) and "float(1180591620717411303424)" in info.value.hint
    assert info.value.lineno == big_int_result.__code__.co_firstlineno + 1   # the return, not the def
    with pytest.raises(CompileError, match="out of bounds for int64") as info:
        jit(big_int_sum)(np.ones(2, np.int64), 2**70)
    assert info.value.lineno == big_int_sum.__code__.co_firstlineno + 1
    np.testing.assert_array_equal(jit(big_int_sum)(np.ones(2), 2**70), np.ones(2) + 2**70)  # float: fine


def test_vmap_of_a_zero_d_input():
    with pytest.raises(ValueError) as info:
        vmap(np.sin)(np.array(1.0))
    text = str(info.value)
    assert "-0" not in text and "0-d" in text and "in_dims=None" in text and "'x'" in text


@pytest.mark.parametrize("transform, who", [(hessian, "hessian"), (jacrev, "jacrev"), (jacfwd, "jacfwd"),
                                            (vmap, "vmap")])
@pytest.mark.parametrize("chunk", [-2, 0, 1.5])
def test_chunk_size_errors_name_the_transform(transform, who, chunk):
    with pytest.raises(ValueError, match=rf"^{who}: chunk_size must be a positive int"):
        transform(np.sin, chunk_size=chunk)


def test_grad_of_a_static_argument():
    with pytest.raises(TypeError, match=r"grad: argument 'a' \(argnums=0\) is int 2, a compile-time constant"):
        grad(lambda a, b: np.sum(a * b))(2, np.ones(3))
    with pytest.raises(TypeError, match=r"grad: argument 'b' \(argnums=1\) has dtype int64"):
        grad(lambda a, b: np.sum(a * b), argnums=1)(np.ones(3), np.arange(3))


def test_big_endian_arrays_on_the_lazy_fast_path():
    k = jit(product)
    a, b = np.arange(4.0).astype(">f8"), np.linspace(0, 1, 4).astype(">f8")
    for _ in range(3):                      # the second call takes the fast path's key
        got = k(a, b)
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, a * b)
