"""jvp staticmethods, ctx semantics, and missing staticmethods under each transform."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import Function, grad, hessian, jacfwd, jacrev, jit, jvp, vjp, vmap
from compiler.errors import CompileError, UnsupportedError
from tests import fd

rng = np.random.default_rng(1)


class Sin(Function):
    """sin with jvp and backward: save_for_forward / save_for_backward."""
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return np.sin(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        ctx.save_for_forward(x)
        ctx.save_for_backward(x)

    @staticmethod
    def jvp(ctx, x_t):
        x, = ctx.saved_tensors
        return np.cos(x) * x_t

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * np.cos(x)


class HostExp(Function):
    """exp through a host callback (NumPy), with a jvp that calls it again."""
    host_callback = True

    @staticmethod
    def forward(x, scale):
        return np.exp(x) * scale

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_forward(output)
        ctx.save_for_backward(output)
        ctx.scale = inputs[1]

    @staticmethod
    def jvp(ctx, x_t, scale_t):
        y, = ctx.saved_tensors
        assert scale_t is None
        return y * x_t

    @staticmethod
    def backward(ctx, g):
        y, = ctx.saved_tensors
        return g * y, None

    @staticmethod
    def vmap(info, in_dims, x, scale):
        return HostExp.apply(x, scale), in_dims[0]


def test_jvp_staticmethod_under_jvp():
    x, t = rng.standard_normal(4), rng.standard_normal(4)
    out, tan = jvp(Sin.apply, (x,), (t,))
    np.testing.assert_allclose(out, np.sin(x))
    np.testing.assert_allclose(tan, np.cos(x) * t)


def test_jvp_staticmethod_under_jacfwd_and_hessian():
    x = rng.standard_normal(3)
    np.testing.assert_allclose(jacfwd(Sin.apply)(x), np.diag(np.cos(x)), atol=1e-12)
    np.testing.assert_allclose(jacfwd(Sin.apply)(x), fd.jacobian(np.sin, (x,)), atol=1e-6)
    f = lambda x: Sin.apply(x).sum()                           # noqa: E731
    np.testing.assert_allclose(hessian(f)(x), np.diag(-np.sin(x)), atol=1e-12)


def test_jvp_and_backward_of_a_host_callback():
    x = rng.standard_normal(5)
    f = lambda x: HostExp.apply(x, 2.0)                        # noqa: E731
    out, tan = jvp(f, (x,), (np.ones(5),))
    np.testing.assert_allclose(out, 2 * np.exp(x))
    np.testing.assert_allclose(tan, 2 * np.exp(x))
    np.testing.assert_allclose(jacfwd(f)(x), np.diag(2 * np.exp(x)))
    np.testing.assert_allclose(jacrev(f)(x), np.diag(2 * np.exp(x)))
    np.testing.assert_allclose(vmap(jacfwd(f))(x[:, None]), (2 * np.exp(x))[:, None, None])


def test_jvp_over_generated_vmap():
    xs, ts = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    out, tan = jvp(vmap(Sin.apply), (xs,), (ts,))
    np.testing.assert_allclose(out, np.sin(xs))
    np.testing.assert_allclose(tan, np.cos(xs) * ts)
    np.testing.assert_allclose(vmap(jacfwd(Sin.apply))(xs), np.stack([np.diag(np.cos(r)) for r in xs]))


class Pair(Function):
    """Two outputs; the second is marked non-differentiable."""

    @staticmethod
    def forward(x):
        return x * 2.0, x * 3.0

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(output[1])
        ctx.seen = ctx.needs_input_grad

    @staticmethod
    def backward(ctx, g0, g1):
        # g1 is always zeros: the output was marked non-differentiable
        return g0 * 2.0 + g1 * 1000.0

    @staticmethod
    def jvp(ctx, t):
        return t * 2.0, t * 1000.0


def test_marked_outputs_get_zero_cotangents_and_no_tangent():
    x = rng.standard_normal(3)
    g = grad(lambda x: (Pair.apply(x)[0] + Pair.apply(x)[1]).sum())(x)
    np.testing.assert_allclose(g, 2 * np.ones(3))
    (_, _), (t0, t1) = jvp(Pair.apply, (x,), (np.ones(3),))
    np.testing.assert_allclose(t0, 2 * np.ones(3))
    np.testing.assert_allclose(t1, np.zeros(3))


class WithStatic(Function):
    @staticmethod
    def forward(x, power, label):
        return x ** power

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, power, label = inputs
        ctx.save_for_backward(x)
        ctx.power = power
        ctx.power += 0            # augmented assignment on ctx works too

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * ctx.power * x ** (ctx.power - 1), None, None


def test_non_array_inputs_get_none_gradients_and_ctx_attributes():
    x = rng.standard_normal(3)
    f = lambda x: WithStatic.apply(x, 3, "cube").sum()           # noqa: E731
    np.testing.assert_allclose(grad(f)(x), 3 * x ** 2)
    out, vjp_fn = vjp(lambda x: WithStatic.apply(x, 2, "sq"), x)
    np.testing.assert_allclose(vjp_fn(np.ones(3))[0], 2 * x)


def test_gradients_flow_to_several_array_inputs():
    class Mul(Function):
        @staticmethod
        def forward(a, b):
            return a * b

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b, g * a

    a, b = rng.standard_normal(3), rng.standard_normal(3)
    ga, gb = grad(lambda a, b: Mul.apply(a, b).sum(), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga, b)
    np.testing.assert_allclose(gb, a)


class NoRules(Function):
    @staticmethod
    def forward(x):
        return x * 2.0


@pytest.mark.parametrize("transform, needs", [
    (lambda f: grad(lambda x: f(x).sum()), "backward"),
    (lambda f: jacrev(f), "backward"),
    (lambda f: (lambda x: vjp(f, x)[1](np.ones(3))), "backward"),
    (lambda f: (lambda x: jvp(f, (x,), (np.ones(3),))), "jvp"),
    (lambda f: jacfwd(f), "jvp"),
    (lambda f: hessian(lambda x: f(x).sum()), "backward"),
    (lambda f: vmap(f), "vmap"),
])
def test_missing_staticmethod_is_named(transform, needs):
    with pytest.raises(UnsupportedError, match=rf"needs a `{needs}` staticmethod") as info:
        transform(NoRules.apply)(rng.standard_normal(3))
    assert "NoRules" in str(info.value)


def test_missing_staticmethods_of_a_host_callback_are_named_too():
    class HostNoRules(NoRules):
        host_callback = True

    with pytest.raises(UnsupportedError, match=r"needs a `backward` staticmethod"):
        grad(lambda x: HostNoRules.apply(x).sum())(rng.standard_normal(3))
    with pytest.raises(UnsupportedError, match=r"needs a `vmap` staticmethod"):
        vmap(HostNoRules.apply)(rng.standard_normal((2, 3)))


def test_plain_jit_needs_no_rules():
    x = rng.standard_normal(3)
    np.testing.assert_allclose(jit(NoRules.apply)(x), 2 * x)
    np.testing.assert_allclose(NoRules.apply(x), 2 * x)


def test_backward_returning_the_wrong_number_of_gradients():
    class Bad(NoRules):
        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(CompileError, match=r"Bad.backward returned 2 values, expected 1"):
        grad(lambda x: Bad.apply(x).sum())(rng.standard_normal(3))


def test_backward_returning_a_wrong_shape():
    class Bad(NoRules):
        @staticmethod
        def backward(ctx, g):
            return g[:2]

    with pytest.raises(CompileError, match=r"has shape \(2,\), expected \(3,\)"):
        grad(lambda x: Bad.apply(x).sum())(rng.standard_normal(3))


def test_both_vmap_and_generate_vmap_rule_is_an_error():
    class Both(NoRules):
        generate_vmap_rule = True

        @staticmethod
        def vmap(info, in_dims, x):
            return x * 2.0, in_dims[0]

    with pytest.raises(UnsupportedError, match="both generate_vmap_rule = True and a vmap staticmethod"):
        vmap(Both.apply)(rng.standard_normal((2, 3)))


def test_custom_vmap_out_dims_and_info():
    class Rowsum(Function):
        @staticmethod
        def forward(x):
            return x.sum(-1)

        @staticmethod
        def vmap(info, in_dims, x):
            assert info.randomness == "error"
            (d,) = in_dims
            out = np.moveaxis(x, d, -1).sum(-2) * 1.0      # batch axis ends up last
            return out, -1

    x = rng.standard_normal((4, 5))
    np.testing.assert_allclose(vmap(Rowsum.apply, in_dims=1)(x), x.sum(0))


def test_vmap_staticmethod_wrong_out_dims_is_an_error():
    class Bad(NoRules):
        @staticmethod
        def vmap(info, in_dims, x):
            return x * 2.0, None

    with pytest.raises(CompileError, match=r"Bad.vmap: output 0 has type"):
        vmap(Bad.apply)(rng.standard_normal((2, 3)))


def test_kwargs_to_apply_are_rejected():
    with pytest.raises(CompileError, match="positional arguments only"):
        jit(lambda x: NoRules.apply(x=x))(np.ones(2))


def test_reference_interpreter_runs_custom_ops():
    from compiler.ir.interpret import interpret
    from tests.custom.seed_functions import numpy_sort
    x = rng.standard_normal((2, 3))
    for f in (numpy_sort, lambda x: Sin.apply(x) * 2.0):
        kernel = jit(f)
        prog = kernel.trace((kernel._abstract((x,), {})[1][0],), {})
        (got,) = interpret(prog.function, x)
        np.testing.assert_allclose(got, kernel(x))
