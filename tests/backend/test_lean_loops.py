"""Loop nests LLVM spends little time on (backend/codegen.py: FULL_UNROLL_TRIPS, loop_nest).

A static axis of length 1 is no loop, and a loop of 16 to 64 trips around a loop of 64 trips
or more is not unrolled whole (the batch loop of per-example gradients at batch 16: copying
the inner code once a trip took a quarter of the compile). Loops around shorter loops, and
loops of fewer or more trips, are left to LLVM. Results against NumPy; the hints are read
from the LLVM IR the code generator emits.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from compiler import grad, jit, vmap


def _mlp_loss(W1, w2, x, y):
    return (np.tanh(x @ W1) @ w2 - y) ** 2


def _mlp_grads_numpy(W1, w2, X, y):
    """The per-example gradients written out by hand."""
    h = np.tanh(X @ W1)
    r = 2.0 * (h @ w2 - y)
    dz = (r[:, None] * w2[None, :]) * (1.0 - h * h)
    return X[:, :, None] * dz[:, None, :], r[:, None] * h


def _scaled_arctan(x, w):
    # arctan: an inline vecmath kernel on every target (tanh on AVX-512 is inlined only after
    # vectorization, and codegen.loop keeps loops calling such functions rolled)
    return np.arctan(x) * w


MLP_GRADS = vmap(grad(_mlp_loss, argnums=(0, 1)), in_dims=(None, None, 0, 0))
SCALED_ARCTAN = jit(_scaled_arctan)


def _unroll_disabled(llvm: str) -> dict[str, bool]:
    """Loop header -> whether its back edge's loop ID disables unrolling."""
    u = re.search(r'^(!\d+) = !\{!"llvm\.loop\.unroll\.disable"\}$', llvm, flags=re.M)
    ids = dict(re.findall(r"^(!\d+) = distinct !\{(!\d+(?:, !\d+)*)\}$", llvm, flags=re.M))
    return {header: u is not None and u.group(1) in ids[node].split(", ")
            for header, node in re.findall(r'br label %"(loop[.\d]*)", !llvm\.loop (!\d+)', llvm)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_per_example_gradients_at_batch_16_match_numpy_and_have_no_trip_one_loops(dtype):
    rng = np.random.default_rng(14)
    args = (rng.standard_normal((12, 8)).astype(dtype), rng.standard_normal(8).astype(dtype),
            rng.standard_normal((16, 12)).astype(dtype), rng.standard_normal(16).astype(dtype))
    rtol = 1e-4 if dtype == np.float32 else 1e-12
    for got, want in zip(MLP_GRADS(*args), _mlp_grads_numpy(*(a.astype(np.float64) for a in args))):
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
    llvm = MLP_GRADS.lower(*args).llvm
    # the (16, 1, 8) products of the vmap: a loop of 1 trip would compare its index with 1
    assert re.search(r'icmp slt i64 %"[^"]+", 1\n', llvm) is None


@pytest.mark.parametrize("rows, cols, batch_loop_rolled", [
    (16, 64, True),      # a few trips around a long row loop: not unrolled whole
    (64, 100, True),
    (8, 64, False),      # fewer trips: left to LLVM
    (200, 64, False),    # more: LLVM unrolls it in part
    (16, 16, False),     # around a shorter loop (a 16 x 16 Jacobian): unrolled whole, faster
    (64, 4, False),
])
def test_the_batch_loop_is_rolled_only_around_a_real_loop(rows, cols, batch_loop_rolled):
    rng = np.random.default_rng(rows * cols)
    x, w = rng.standard_normal((rows, cols)), rng.standard_normal(cols)
    np.testing.assert_allclose(SCALED_ARCTAN(x, w), np.arctan(x) * w, rtol=1e-14, atol=1e-15)
    hints = _unroll_disabled(SCALED_ARCTAN.lower(x, w).llvm)
    assert hints == {"loop": batch_loop_rolled, "loop.1": False}
