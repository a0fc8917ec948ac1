"""The seed document's two examples, run as written there (NumPy in place of torch)."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import grad, hessian, jacfwd, jacrev, jit, vmap
from compiler.errors import UnsupportedError
from tests import fd
from tests.custom.seed_functions import (CALLS, MyCube, MyCubeGen, NumpySort, NumpyTake, my_cube,
                                         my_cube_gen, numpy_sort)

rng = np.random.default_rng(0)


# ---- Example 1 ------------------------------------------------------------------------------

def test_numpy_sort_eager_is_numpy():
    x = rng.standard_normal((2, 3))
    np.testing.assert_array_equal(numpy_sort(x), np.sort(x))


def test_numpy_sort_compiled_runs_a_host_callback():
    x = rng.standard_normal((2, 3))
    f = jit(numpy_sort)
    np.testing.assert_array_equal(f(x), np.sort(x))
    assert "host_call" in f.lower(x).ir_optimized


def test_seed_sanity_check_grad_is_ones():
    # x = torch.randn(2, 3); grad_x = grad(lambda x: numpy_sort(x).sum())(x)
    x = rng.standard_normal((2, 3))
    grad_x = grad(lambda x: numpy_sort(x).sum())(x)
    np.testing.assert_allclose(grad_x, np.ones_like(x))


def test_seed_vmap_check():
    # result = vmap(numpy_sort)(x); assert allclose(result, numpy_sort(result, 1))
    x = rng.standard_normal((2, 3))
    result = vmap(numpy_sort)(x)
    np.testing.assert_allclose(result, numpy_sort(result, 1))
    np.testing.assert_array_equal(result, np.sort(x, axis=1))


def test_weighted_sort_gradient_against_finite_differences():
    w = rng.standard_normal(5)
    x = rng.standard_normal(5)
    f = lambda x: (numpy_sort(x) * w).sum()          # noqa: E731
    np.testing.assert_allclose(grad(f)(x), fd.jacobian(f, (x,)), atol=1e-6)


def test_jacrev_over_a_function_whose_backward_calls_another_function():
    x = rng.standard_normal(4)
    jac = jacrev(numpy_sort)(x)
    np.testing.assert_allclose(jac, fd.jacobian(numpy_sort, (x,)), atol=1e-6)
    # a permutation matrix
    np.testing.assert_array_equal(jac, np.eye(4)[np.argsort(x)])


def test_jacrev_along_another_axis():
    x = rng.standard_normal((3, 2))
    f = lambda x: numpy_sort(x, 0)                     # noqa: E731
    np.testing.assert_allclose(jacrev(f)(x), fd.jacobian(f, (x,)), atol=1e-6)


W4 = rng.standard_normal(4)


def _weighted_square_sort(x):
    return (numpy_sort(x) ** 2 * W4).sum()


def test_second_order_through_numpy_take():
    # NumpySort's backward calls NumpyTake, whose backward calls NumpyTake again: the
    # Hessian (jacrev of grad) needs all of it, plus NumpyTake's vmap rule
    x = rng.standard_normal(4)
    hess = jacrev(grad(_weighted_square_sort))(x)
    analytic_grad = lambda x: (2 * np.sort(x) * W4)[np.argsort(np.argsort(x))]   # noqa: E731
    np.testing.assert_allclose(grad(_weighted_square_sort)(x), analytic_grad(x), atol=1e-12)
    np.testing.assert_allclose(hess, fd.jacobian(analytic_grad, (x,)), atol=1e-6)


def test_vmap_over_grad_and_grad_over_vmap():
    xs = rng.standard_normal((3, 4))
    w = rng.standard_normal(4)
    per_row = vmap(grad(lambda x: (numpy_sort(x) * w).sum()))(xs)
    want = np.stack([fd.jacobian(lambda x: (np.sort(x) * w).sum(), (x,)) for x in xs])
    np.testing.assert_allclose(per_row, want, atol=1e-6)
    total = grad(lambda xs: (vmap(numpy_sort)(xs) * w).sum())(xs)
    np.testing.assert_allclose(total, want, atol=1e-6)


def test_vmap_with_in_dims_1_and_nested_vmap():
    x = rng.standard_normal((3, 4, 5))
    np.testing.assert_array_equal(vmap(numpy_sort, in_dims=1)(x), np.sort(np.moveaxis(x, 1, 0), -1))
    np.testing.assert_array_equal(vmap(vmap(numpy_sort))(x), np.sort(x, -1))


def test_custom_vmap_rule_calls_the_callback_once_per_batch():
    x = rng.standard_normal((7, 3))
    f = vmap(numpy_sort)
    f(x)                                   # compile (the compile-time zeros run counts too)
    before = CALLS["sort"]
    np.testing.assert_array_equal(f(x), np.sort(x, 1))
    assert CALLS["sort"] - before == 1     # one call for the whole batch of 7
    jac = jacrev(numpy_sort)
    jac(x[0])
    before = CALLS["take"]
    jac(x[0])
    assert CALLS["take"] - before == 1     # the backward's NumpyTake, vmapped over the basis once


def test_host_callbacks_cannot_generate_a_vmap_rule():
    class GenSort(NumpySort):
        generate_vmap_rule = True
        vmap = None

    with pytest.raises(UnsupportedError, match="generate_vmap_rule = True needs a compilable forward"):
        vmap(lambda x: GenSort.apply(x, -1)[0])(rng.standard_normal((2, 3)))


# ---- Example 2 ------------------------------------------------------------------------------

@pytest.mark.parametrize("x", [0.7, -1.3, 2.0])
def test_my_cube_second_order_gradient_is_6x(x):
    ggx = grad(grad(my_cube))(np.float64(x))
    np.testing.assert_allclose(ggx, 6 * x)


def test_my_cube_first_gradient_and_value():
    x = np.float64(1.5)
    np.testing.assert_allclose(jit(my_cube)(x), x ** 3)
    np.testing.assert_allclose(grad(my_cube)(x), 3 * x ** 2)


def test_my_cube_forward_compiles_into_the_kernel():
    text = jit(my_cube).lower(np.float64(1.0)).ir_optimized
    assert "host_call" not in text


def test_custom_backward_replaces_the_derived_one():
    class Clipped(MyCube):
        @staticmethod
        def backward(ctx, grad_output, grad_dx):
            return np.clip(grad_output, -1.0, 1.0)        # gradient clipping, not 3 x**2

    f = lambda x: Clipped.apply(x)[0].sum()               # noqa: E731
    x = rng.standard_normal(4)
    np.testing.assert_allclose(grad(f)(x), np.ones(4))


def test_generate_vmap_rule():
    x = rng.standard_normal(3)
    result = vmap(my_cube_gen)(x)
    np.testing.assert_allclose(result, x ** 3)


def test_generate_vmap_rule_composes_with_grad_both_ways():
    xs = rng.standard_normal(5)
    np.testing.assert_allclose(vmap(grad(my_cube_gen))(xs), 3 * xs ** 2)
    np.testing.assert_allclose(vmap(grad(grad(my_cube_gen)))(xs), 6 * xs)
    np.testing.assert_allclose(grad(lambda x: vmap(my_cube_gen)(x).sum())(xs), 3 * xs ** 2)
    np.testing.assert_allclose(jacrev(vmap(my_cube_gen))(xs), np.diag(3 * xs ** 2))


def test_generate_vmap_rule_with_an_unbatched_input_sums_its_gradient():
    class Scale(Function_ := MyCubeGen.__mro__[1]):       # compiler.Function
        generate_vmap_rule = True

        @staticmethod
        def forward(x, w):
            return x * w

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return g * w, g * x

    xs = rng.standard_normal((4, 3))
    w = rng.standard_normal(3)
    f = lambda xs, w: vmap(Scale.apply, in_dims=(0, None))(xs, w).sum()   # noqa: E731
    gx, gw = grad(f, argnums=(0, 1))(xs, w)
    np.testing.assert_allclose(gx, np.broadcast_to(w, xs.shape))
    np.testing.assert_allclose(gw, xs.sum(0))
    assert Function_.__name__ == "Function"


def test_vmap_without_a_rule_names_the_missing_staticmethod():
    with pytest.raises(UnsupportedError, match=r"vmap of MyCube needs a `vmap` staticmethod"):
        vmap(my_cube)(rng.standard_normal(3))


def test_hessian_needs_jvp():
    with pytest.raises(UnsupportedError, match=r"needs a `jvp` staticmethod"):
        hessian(my_cube)(np.float64(1.0))
    with pytest.raises(UnsupportedError, match=r"needs a `jvp` staticmethod"):
        jacfwd(my_cube)(np.float64(1.0))


def test_take_is_usable_on_its_own():
    x = rng.standard_normal((2, 5))
    ind = np.argsort(x, 1)
    got = jit(lambda x, i, j: NumpyTake.apply(x, i, j, 1))(x, ind, np.argsort(ind, 1))
    np.testing.assert_array_equal(got, np.take_along_axis(x, ind, 1))
    assert MyCube.generate_vmap_rule is False and MyCubeGen.generate_vmap_rule is True
