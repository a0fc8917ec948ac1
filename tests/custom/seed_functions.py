"""The two examples of the seed document ("Extending torch.func with
autograd.Function"), translated to NumPy arrays line by line: torch.tensor(...)
and .cpu().numpy() disappear, x.movedim -> np.moveaxis, x.expand ->
np.broadcast_to, x.dim() -> x.ndim. Shared by the tests of this directory."""
from __future__ import annotations

import numpy as np

from compiler import Function

CALLS = {"sort": 0, "take": 0}       # how often each host forward ran (vmap-per-batch tests)


# ---- Example 1: a Function calling into another system (NumPy), as host callbacks ------------

class NumpySort(Function):
    # Note that forward does not take ctx
    @staticmethod
    def forward(x, dim):
        CALLS["sort"] += 1
        ind = np.argsort(x, axis=dim)
        ind_inv = np.argsort(ind, axis=dim)
        result = np.take_along_axis(x, ind, axis=dim)
        # Any intermediates to be saved in backward must be returned as outputs.
        return result, ind, ind_inv

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, dim = inputs
        _, ind, ind_inv = output
        ctx.mark_non_differentiable(ind, ind_inv)
        ctx.save_for_backward(ind, ind_inv)
        ctx.dim = dim

    @staticmethod
    def backward(ctx, grad_output, _0, _1):
        ind, ind_inv = ctx.saved_tensors
        return NumpyTake.apply(grad_output, ind_inv, ind, ctx.dim), None

    @staticmethod
    def vmap(info, in_dims, x, dim):
        x_bdim, _ = in_dims
        x = np.moveaxis(x, x_bdim, 0)
        # Handle negative dims correctly
        dim = dim if dim >= 0 else dim + x.ndim - 1
        return NumpySort.apply(x, dim + 1), (0, 0, 0)


class NumpyTake(Function):
    @staticmethod
    def forward(x, ind, ind_inv, dim):
        CALLS["take"] += 1
        return np.take_along_axis(x, ind, dim)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, ind, ind_inv, dim = inputs
        ctx.save_for_backward(ind, ind_inv)
        ctx.dim = dim

    @staticmethod
    def backward(ctx, grad_output):
        ind, ind_inv = ctx.saved_tensors
        result = NumpyTake.apply(grad_output, ind_inv, ind, ctx.dim)
        return result, None, None, None

    @staticmethod
    def vmap(info, in_dims, x, ind, ind_inv, dim):
        x_bdim, ind_bdim, ind_inv_bdim, _ = in_dims
        # Handle negative dims by wrapping them to be positive
        logical_dim = x.ndim if x_bdim is None else x.ndim - 1
        dim = dim if dim >= 0 else dim + logical_dim

        def maybe_expand_bdim_at_front(x, x_bdim):
            if x_bdim is None:
                return np.broadcast_to(x, (info.batch_size, *x.shape))
            return np.moveaxis(x, x_bdim, 0)

        x = maybe_expand_bdim_at_front(x, x_bdim)
        ind = maybe_expand_bdim_at_front(ind, ind_bdim)
        ind_inv = maybe_expand_bdim_at_front(ind_inv, ind_inv_bdim)
        return NumpyTake.apply(x, ind, ind_inv, dim + 1), 0


def numpy_sort(x, dim=-1):
    result, _, _ = NumpySort.apply(x, dim)
    return result


# ---- Example 2: custom gradient rules for compilable code ---------------------------------------

class MyCube(Function):
    @staticmethod
    def forward(x):
        result = x ** 3
        # the backward's dx = 3 * x ** 2 is computed here, in the forward pass
        dx = 3 * x ** 2
        return result, dx

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        result, dx = output
        ctx.save_for_backward(x, dx)

    @staticmethod
    def backward(ctx, grad_output, grad_dx):
        x, dx = ctx.saved_tensors
        # For higher-order gradients we must add the gradient contribution of `dx`.
        result = grad_output * dx + grad_dx * 6 * x
        return result


def my_cube(x):
    result, _ = MyCube.apply(x)
    return result


class MyCubeGen(Function):
    # Set generate_vmap_rule to True to ask for an automatically generated vmap rule.
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        result = x ** 3
        dx = 3 * x ** 2
        return result, dx

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        result, dx = output
        ctx.save_for_backward(x, dx)

    @staticmethod
    def backward(ctx, grad_output, grad_dx):
        x, dx = ctx.saved_tensors
        result = grad_output * dx + grad_dx * 6 * x
        return result


def my_cube_gen(x):
    result, dx = MyCubeGen.apply(x)
    return result
