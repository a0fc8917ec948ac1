"""Arrays of other libraries as inputs (runtime/interop.py; docs/interop.md).

Oracles: the same functions run by NumPy on the tensors' values. Zero-copy is
measured: the ndarray a tensor becomes has the tensor's data pointer, and a kernel
that updates its argument in place changes the tensor itself (as the uncompiled
function's `x += y` does on a torch tensor). Skipped where a library is missing.
"""
from __future__ import annotations

import numpy as np
import pytest

import runtime
from compiler import grad, jit, vmap
from compiler.build import build
from runtime import interop

torch = pytest.importorskip("torch")


@jit
def combine(x, y):
    return np.sin(x) * y + np.sum(x, axis=-1, keepdims=True)


@jit(signature="f64[n] -> f64[n]")
def soft(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0.0)


def bump(x, y):
    x += 2.0 * y


bump_kernel = jit(bump)


def energy(w):
    return np.sum(np.tanh(w) ** 2)


per_row = vmap(combine, in_dims=(0, None))
energy_grad = grad(energy)


def _combine(x, y):
    return np.sin(x) * y + np.sum(x, axis=-1, keepdims=True)


@pytest.mark.parametrize("dtype, rtol", [(torch.float32, 2e-6), (torch.float64, 1e-13)])
def test_torch_tensors_are_inputs(dtype, rtol):
    x = torch.linspace(-2.0, 2.0, 15, dtype=dtype).reshape(3, 5)
    y = torch.cos(torch.arange(5, dtype=dtype))
    xn, yn = x.numpy(), y.numpy()
    got = combine(x, y)
    assert type(got) is np.ndarray and got.dtype == xn.dtype
    np.testing.assert_allclose(got, _combine(xn, yn), rtol=rtol, atol=rtol)
    np.testing.assert_allclose(per_row(x, y), _combine(xn, yn), rtol=rtol, atol=rtol)
    np.testing.assert_allclose(energy_grad(x), 2 * np.tanh(xn) / np.cosh(xn) ** 2, rtol=rtol, atol=rtol)
    t = x.T                                    # strided: copied as NumPy would
    np.testing.assert_allclose(combine(t, y[:3]), _combine(xn.T, yn[:3]), rtol=rtol, atol=rtol)


def test_torch_inputs_of_a_signature_kernel_and_a_mixed_call():
    x = torch.linspace(-3.0, 3.0, 11, dtype=torch.float64)
    np.testing.assert_allclose(soft(x), np.logaddexp(0.0, x.numpy()), rtol=1e-14)
    np.testing.assert_allclose(soft(torch.arange(4, dtype=torch.int32)),   # int32 -> f64: a copy
                               np.logaddexp(0.0, np.arange(4.0)), rtol=1e-14)
    xn = np.linspace(0.0, 1.0, 5)
    np.testing.assert_allclose(combine(xn, torch.ones(5, dtype=torch.float64)), _combine(xn, np.ones(5)),
                               rtol=1e-14)


def test_torch_tensors_are_read_in_place():
    x = torch.arange(12, dtype=torch.float64).reshape(3, 4)
    a = interop.to_numpy("x", x)
    assert a.ctypes.data == x.data_ptr() and np.shares_memory(a, x.numpy())
    strided = interop.to_numpy("x", x.T)
    assert strided.ctypes.data == x.data_ptr() and strided.strides == (8, 32)
    # the kernel writes into the tensor's memory, as `x += 2 * y` on the tensor would
    y = torch.full((3, 4), 0.5, dtype=torch.float64)
    expected = x.numpy() + 1.0
    bump_kernel(x, y)
    np.testing.assert_array_equal(x.numpy(), expected)
    column = x[:, 1]                           # a strided view: updated in place too
    before = x.numpy().copy()
    bump_kernel(column, torch.ones(3, dtype=torch.float64))
    before[:, 1] += 2.0
    np.testing.assert_array_equal(x.numpy(), before)


def test_tensors_that_export_nothing_are_clear_errors():
    with pytest.raises(TypeError, match=r"argument 'x'.*requires? grad.*\.detach\(\)"):
        combine(torch.ones(5, requires_grad=True), np.ones(5, dtype=np.float32))
    with pytest.raises(TypeError, match=r"argument 'x'.*bfloat16"):
        soft(torch.ones(3, dtype=torch.bfloat16))


def test_jax_arrays_are_inputs():
    jnp = pytest.importorskip("jax.numpy")
    x = jnp.linspace(-2.0, 2.0, 15, dtype=jnp.float32).reshape(3, 5)
    y = jnp.cos(jnp.arange(5, dtype=jnp.float32))
    xn, yn = np.asarray(x), np.asarray(y)
    np.testing.assert_allclose(combine(x, y), _combine(xn, yn), rtol=2e-6, atol=2e-6)
    a = interop.to_numpy("x", x)
    assert a.ctypes.data == x.unsafe_buffer_pointer()
    with pytest.raises(ValueError, match="read-only"):       # JAX arrays are immutable
        bump_kernel(jnp.ones(3), jnp.ones(3))


def test_library_kernels_take_tensors(tmp_path):
    src = tmp_path / "tiny.py"
    src.write_text("import numpy as np\nfrom compiler import jit\n\n\n"
                   "@jit(signature='f64[n] -> f64[n]')\ndef twice(x):\n    return 2.0 * x\n")
    build(src, tmp_path / "out", progress=lambda line: None)
    lib = runtime.load(tmp_path / "out" / "tiny")
    x = torch.linspace(0.0, 1.0, 6, dtype=torch.float64)
    np.testing.assert_allclose(lib.twice(x), 2.0 * x.numpy(), rtol=1e-15)
