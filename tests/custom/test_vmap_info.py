"""The ``info`` given to a Function's vmap staticmethod carries the batch size and the
randomness flag of the vmap being applied (both static while staging)."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import Function, vmap


class Tagged(Function):
    """Its vmap rule encodes what it was told in the result, so the test can read it back."""

    @staticmethod
    def forward(x):
        return x * 2.0

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def vmap(info, in_dims, x):
        code = {"error": 1.0, "same": 2.0, "different": 3.0}[info.randomness]
        return Tagged.apply(x) + 0.0 * x + code * 100.0 + info.batch_size * 1000.0, in_dims[0]


def tagged(x):
    return Tagged.apply(x)


@pytest.mark.parametrize("randomness,code", [("error", 1.0), ("same", 2.0), ("different", 3.0)])
def test_vmap_info_has_batch_size_and_randomness(randomness, code):
    x = np.arange(6.0).reshape(3, 2)
    out = vmap(tagged, randomness=randomness)(x)
    np.testing.assert_allclose(out, 2.0 * x + code * 100.0 + 3 * 1000.0)
