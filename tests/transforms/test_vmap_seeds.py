"""Every runnable vmap example of the seed documents, translated to NumPy.

Seed 001 (the torch.func ``vmap`` docstring, via tad-mctc) and seeds 000/003
(torch.func "UX Limitations"). ``torch.randn`` becomes a seeded NumPy
generator, ``torch.dot``/``Tensor.dot`` ``np.dot``, ``.relu()``
``np.maximum(., 0)``; each result is compared with the docs' mental model,
``np.stack([f(x_i) for x_i in ...])`` over the *uncompiled* function.

Examples that need a transform aotx does not have yet (``torch.autograd.grad``
inside vmap, ``vmap(jacrev(torch.sin))``) are translated with the derivative
written out by hand, which keeps the vmap part of the example. Examples whose
point is an error (side effects, in-place writes, ``out=``, data-dependent
control flow, ``.item()``, ``nonzero``) check the error aotx gives and then
the rewrite the page recommends.
"""
from __future__ import annotations

import numpy as np
import pytest

from compiler import jit, vmap
from compiler.errors import (CompileError, DataDependentControlFlowError, DataDependentOperationError,
                             DynamicShapeError, OutParameterError, SideEffectError, UnsupportedError)

rng = np.random.default_rng(3)


def randn(*shape):
    return rng.standard_normal(shape)


def stack_loop(f, *args, in_dims=0, **kwargs):
    dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
    n = next(np.shape(a)[d] for a, d in zip(args, dims) if d is not None)
    return np.stack([f(*[a if d is None else np.take(a, k, axis=d) for a, d in zip(args, dims)], **kwargs)
                     for k in range(n)])


def same(got, want, rtol=1e-12):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-13)


# ---- seed 001: the vmap docstring -----------------------------------------------------------------

def test_batched_dot():
    # torch.dot  [D], [D] -> [];  batched_dot = torch.func.vmap(torch.dot)  [N, D], [N, D] -> [N]
    batched_dot = vmap(np.dot)
    x, y = randn(2, 5), randn(2, 5)
    out = batched_dot(x, y)
    assert out.shape == (2,)
    same(out, stack_loop(np.dot, x, y))


batch_size, feature_size = 3, 5
weights = randn(feature_size)


def model(feature_vec):
    # Very simple linear model with activation
    return np.maximum(feature_vec.dot(weights), 0.0)


def test_model_with_captured_weights():
    examples = randn(batch_size, feature_size)
    result = vmap(model)(examples)
    assert result.shape == (batch_size,)
    same(result, stack_loop(model, examples))


def test_model_with_captured_weights_under_jit_and_nested():
    examples = randn(2, batch_size, feature_size)
    same(jit(vmap(vmap(model)))(examples), np.stack([stack_loop(model, e) for e in examples]))


def test_vectorized_vjp_rows_of_a_jacobian():
    # f = lambda x: x**2; y = f(x); get_vjp(v) = autograd.grad(y, x, v) = v * 2x  (written out:
    # aotx's AD transforms are a later issue); jacobian = vmap(get_vjp)(I_N)
    N = 5
    x = randn(N)

    def get_vjp(v):
        return v * (2.0 * x)
    I_N = np.eye(N)
    jacobian_rows = [get_vjp(v) for v in I_N]          # the sequential approach
    jacobian = vmap(get_vjp)(I_N)
    same(jacobian, np.stack(jacobian_rows))
    same(jacobian, np.diag(2.0 * x))


def test_batched_jacobian_of_sin():
    # vmap(jacrev(torch.sin))(x) has shape (64, 5, 5): the Jacobian of sin is diag(cos(x))
    def jac_sin(x):
        return np.eye(x.shape[0]) * np.cos(x)
    x = randn(64, 5)
    jacobian = vmap(jac_sin)(x)
    assert jacobian.shape == (64, 5, 5)
    same(jacobian, stack_loop(jac_sin, x), rtol=1e-13)


def test_nested_batched_dot():
    # [N1, N0, D], [N1, N0, D] -> [N1, N0]
    batched_dot = vmap(vmap(np.dot))
    x, y = randn(2, 3, 5), randn(2, 3, 5)
    out = batched_dot(x, y)
    assert out.shape == (2, 3)
    same(out, np.stack([stack_loop(np.dot, a, b) for a, b in zip(x, y)]))


def test_in_dims_1():
    # [N, D], [N, D] -> [D]: "output is [5] instead of [2] if batched along the 0th dimension"
    batched_dot = vmap(np.dot, in_dims=1)
    x, y = randn(2, 5), randn(2, 5)
    out = batched_dot(x, y)
    assert out.shape == (5,)
    same(out, stack_loop(np.dot, x, y, in_dims=1))


def test_in_dims_0_none():
    # [N, D], [D] -> [N]: "second arg doesn't have a batch dim because in_dim[1] was None"
    batched_dot = vmap(np.dot, in_dims=(0, None))
    x, y = randn(2, 5), randn(5)
    out = batched_dot(x, y)
    assert out.shape == (2,)
    same(out, stack_loop(np.dot, x, y, in_dims=(0, None)))


def test_dict_input():
    def f(d):
        return np.dot(d["x"], d["y"])
    x, y = randn(2, 5), randn(5)
    input = {"x": x, "y": y}
    batched_dot = vmap(f, in_dims=({"x": 0, "y": None},))
    out = batched_dot(input)
    same(out, np.stack([f({"x": x[k], "y": y}) for k in range(2)]))


def test_out_dims_1():
    def f(x):
        return x ** 2
    x = randn(2, 5)
    batched_pow = vmap(f, out_dims=1)
    out = batched_pow(x)
    assert out.shape == (5, 2)
    same(out, np.stack([f(xi) for xi in x], axis=1))


def fn(x, scale=4.0):
    return x * scale


def test_kwargs_default():
    x = randn(2, 5)
    batched_pow = vmap(fn)
    same(batched_pow(x), x * 4)


def test_kwargs_are_not_batched():
    # batched_pow(x, scale=x)  # scale is not batched, output has shape [2, 2, 5]
    x = randn(2, 5)
    out = vmap(fn)(x, scale=x)
    assert out.shape == (2, 2, 5)
    same(out, np.stack([fn(xi, scale=x) for xi in x]))


def test_chunk_size_1_is_a_for_loop():
    # "chunk_size=1 is equivalent to computing the vmap with a for-loop"
    x, y = randn(7, 5), randn(7, 5)
    for chunk in (1, 2, 3, 7, 8, None):
        same(vmap(np.dot, chunk_size=chunk)(x, y), stack_loop(np.dot, x, y))


@pytest.mark.parametrize("randomness", ["error", "same", "different"])
def test_randomness_flag_accepted(randomness):
    x, y = randn(2, 5), randn(2, 5)
    same(vmap(np.dot, randomness=randomness)(x, y), stack_loop(np.dot, x, y))


def test_randomness_flag_validated():
    with pytest.raises(ValueError, match="randomness"):
        vmap(np.dot, randomness="sometimes")


# ---- seeds 000/003: UX Limitations ---------------------------------------------------------------

intermediate = None


def f_global(x):
    global intermediate
    intermediate = np.sin(x)
    z = np.sin(intermediate)
    return z


def f_returns_intermediate(x):
    intermediate = np.sin(x)
    z = np.sin(intermediate)
    return z, intermediate


def test_global_write_rejected_and_the_rewrite_returns_it():
    x = randn(3)
    with pytest.raises(SideEffectError):
        vmap(f_global)(x)
    assert intermediate is None
    z, inter = vmap(f_returns_intermediate)(x)
    same(z, np.sin(np.sin(x)), rtol=1e-13)
    same(inter, np.sin(x), rtol=1e-13)


def f_pops(x, lst):
    lst.pop()
    print("hello!")
    return x.sum(0)


def f_sum0(x, lst):
    return x.sum(0)


def test_mutating_a_python_list_is_rejected():
    x = randn(3, 1)
    lst = [0, 1, 2, 3]
    with pytest.raises(CompileError) as info:
        vmap(f_pops, in_dims=(0, None))(x, lst)
    assert isinstance(info.value, (SideEffectError, UnsupportedError))
    assert lst == [0, 1, 2, 3]                 # nothing ran, not even once
    same(vmap(f_sum0, in_dims=(0, None))(x, lst), stack_loop(lambda a: f_sum0(a, lst), x))


def add_inplace(x, y):
    x += y                                    # x.add_(y): a write into the caller's array
    return x


def add_into_argument(x, y):
    x[:] += y                                 # a real write into the caller's array
    return x


def add_pure(x, y):
    return x + y


def test_inplace_write_into_an_argument():
    """torch: x.add_(y) with x unbatched and y batched is an error (3 elements into 1). aotx
    rejects writes into arguments under vmap outright (SideEffectError, whatever the in_dims),
    `x += y` included (under plain jit it writes into the caller's array, as NumPy does); the
    caller's x is intact."""
    x, y = randn(1), randn(3, 1)
    x3 = randn(3, 1)
    x_before = x.copy()
    for fn, text in ((add_into_argument, "x[:] += y"), (add_inplace, "x += y")):
        for args, dims in (((x, y), (None, 0)), ((x3, y), (0, 0))):
            with pytest.raises(SideEffectError) as info:
                vmap(fn, in_dims=dims)(*args)
            assert text in str(info.value)
    same(x, x_before)
    same(vmap(add_pure, in_dims=(0, 0))(x3, y), x3 + y)


def diag_embed(vec):
    assert vec.ndim == 1
    result = np.zeros((vec.shape[0], vec.shape[0]))
    for i in range(vec.shape[0]):
        result[i, i] = vec[i]
    return result


def test_diag_embed_factory_then_functional_update():
    """torch needs Tensor.new_zeros here; aotx's functional update of a fresh array batches."""
    vecs = np.array([[0.0, 1, 2], [3.0, 4, 5]])
    out = vmap(diag_embed)(vecs)
    same(out, np.stack([np.diag(v) for v in vecs]))


def add_with_out(x, y):
    z = np.empty_like(x)
    np.add(x, y, out=z)
    return z


def test_out_parameter_rejected():
    with pytest.raises(OutParameterError):
        vmap(add_with_out)(randn(3, 2), randn(3, 2))


def relu(x):
    if x > 0:
        return x
    return 0.0 * x


def relu_where(x):
    return np.where(x > 0, x, 0.0)


def custom_dot(x):
    if x.ndim == 1:
        return np.dot(x, x)
    return (x * x).sum()


def test_data_dependent_control_flow():
    x = randn(3)
    with pytest.raises(DataDependentControlFlowError):
        vmap(relu)(x)
    same(vmap(relu_where)(x), np.stack([relu(xi) for xi in x]))   # the rewrite == the loop
    same(vmap(custom_dot)(x), stack_loop(custom_dot, x))          # control flow on ndim: fine


def item_of(x):
    return x.item()


def test_item_rejected():
    x = randn(3)
    with pytest.raises(DataDependentOperationError):
        vmap(item_of)(x)


def test_nonzero_rejected():
    xs = np.array([[0, 1, 2], [0, 0, 3]])
    with pytest.raises(DynamicShapeError):
        vmap(np.nonzero)(xs)


def add_noise(x):
    y = np.random.randn()                     # torch.randn(()): NumPy randomness is not compilable
    return x + y


@pytest.mark.parametrize("randomness", ["different", "same"])
def test_numpy_randomness_is_unsupported_under_any_flag(randomness):
    with pytest.raises(UnsupportedError):
        vmap(add_noise, randomness=randomness)(np.ones(3))
