"""examples/custom_function.py: its compiled per-row gradients equal the NumPy reference."""
from __future__ import annotations

import importlib.util
import pathlib

import numpy as np

PATH = pathlib.Path(__file__).resolve().parents[2] / "examples" / "custom_function.py"


def test_custom_function_example_matches_numpy():
    spec = importlib.util.spec_from_file_location("aotx_example_custom_function", PATH)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    xs, w = m.inputs(rows=32, n=7)
    want = np.stack([m.reference_grad(x, w) for x in xs])
    np.testing.assert_allclose(m.per_row_grad(xs, w), want, atol=1e-12)
    np.testing.assert_allclose(m.trimmed_loss(xs[0], w), np.log(np.sum(np.exp(np.sort(xs[0]) * w))))
