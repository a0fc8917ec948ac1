"""compiler.Function: a NumPy routine run as a host callback (np.argsort, which would
also compile: docs/sorting.md) inside a compiled, differentiated and vmapped kernel, plus a
compiled Function with its own gradient rule. See docs/custom_functions.md.

# run: python examples/custom_function.py
"""
from __future__ import annotations

import time

import numpy as np

from compiler import Function, grad, jit, vmap


class SoftRank(Function):
    """Sort each row with NumPy (a host callback); gradients flow back through the
    inverse permutation, which the backward applies with compiled code."""

    host_callback = True

    @staticmethod
    def forward(x):
        ind = np.argsort(x, axis=-1)
        return np.take_along_axis(x, ind, -1), ind, np.argsort(ind, axis=-1)

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, ind, ind_inv = output
        ctx.mark_non_differentiable(ind, ind_inv)
        ctx.save_for_backward(ind_inv)

    @staticmethod
    def backward(ctx, g, _0, _1):
        ind_inv, = ctx.saved_tensors
        # gather g at the inverse permutation, written with compiled ops (one-hot matmul)
        n = g.shape[-1]
        onehot = (ind_inv[..., :, None] == np.arange(n)).astype(g.dtype)
        return onehot @ g

    @staticmethod
    def vmap(info, in_dims, x):
        x = np.moveaxis(x, in_dims[0], 0)
        return SoftRank.apply(x), (0, 0, 0)      # one callback for the whole batch


class StableLogSumExp(Function):
    """Compiled forward with a custom backward (softmax from the saved result); vmap
    batches the compiled forward and backward."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        m = np.max(x)
        return m + np.log(np.sum(np.exp(x - m)))

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0], output)

    @staticmethod
    def backward(ctx, g):
        x, lse = ctx.saved_tensors
        return g * np.exp(x - lse)


def trimmed_loss(x, w):
    """Weighted sum of the sorted values (an L-statistic), through a log-sum-exp."""
    s, _, _ = SoftRank.apply(x)
    return StableLogSumExp.apply(s * w)


per_row_grad = vmap(grad(trimmed_loss), in_dims=(0, None))


def reference_grad(x, w):
    """NumPy: d/dx logsumexp(sort(x) * w) = (softmax(sort(x) * w) * w)[inverse permutation]."""
    ind = np.argsort(x)
    z = x[ind] * w
    p = np.exp(z - z.max())
    p /= p.sum()
    out = np.empty_like(x)
    out[ind] = p * w
    return out


def inputs(rows: int = 256, n: int = 16):
    rng = np.random.default_rng(0)
    return rng.standard_normal((rows, n)), np.linspace(0.0, 1.0, n)


def main() -> None:
    xs, w = inputs()
    got = per_row_grad(xs, w)
    want = np.stack([reference_grad(x, w) for x in xs])
    print("max |compiled - NumPy| =", np.abs(got - want).max())
    start = time.perf_counter()
    for _ in range(100):
        per_row_grad(xs, w)
    print(f"per-row gradients of {xs.shape[0]} rows: {(time.perf_counter() - start) * 10:.3f} ms per call")
    print("value:", jit(trimmed_loss)(xs[0], w), "eager:", trimmed_loss(xs[0], w))


if __name__ == "__main__":
    main()
