"""Helpers of the whole-function differentiation tests: a tree comparison, and a
counter of native compilations. The finite-difference oracle is tests/fd.py.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np

from compiler import pipeline


def assert_tree_close(got: Any, want: Any, rtol: float = 1e-6, atol: float = 1e-8, what: str = "") -> None:
    """Same structure (dict keys, tuple lengths), shapes, and values within tolerance."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), f"{what}: {type(got)} keys differ"
        for k in want:
            assert_tree_close(got[k], want[k], rtol, atol, f"{what}[{k!r}]")
        return
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), \
            f"{what}: got {type(got).__name__} of {len(got) if isinstance(got, (tuple, list)) else '-'}, " \
            f"want {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_tree_close(g, w, rtol, atol, f"{what}[{i}]")
        return
    assert np.shape(got) == np.shape(want), f"{what}: shape {np.shape(got)}, want {np.shape(want)}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


@contextlib.contextmanager
def count_compilations() -> Iterator[list[str]]:
    """Records the name of every native compilation (pipeline.compile_ir) inside the block."""
    names: list[str] = []
    original = pipeline.compile_ir

    def counting(fn, *args, **kwargs):
        names.append(getattr(fn, "name", "?"))
        return original(fn, *args, **kwargs)
    pipeline.compile_ir = counting
    try:
        yield names
    finally:
        pipeline.compile_ir = original
