"""Passes return new functions: the frontend's IR stays what the frontend built.

`Kernel.lower(...).ir` is the frontend's IR and `.ir_optimized` the result of
the passes, so on a function that simplification changes the two differ, and
compiling (or running a pass) leaves its input printing exactly as before.
"""
from __future__ import annotations

import numpy as np

from compiler import jit, pipeline
from compiler.backend import target
from compiler.frontend import stage
from compiler.ir.printer import format_function
from compiler.ir.types import parse_type
from compiler.transforms.canonicalize import canonicalize
from compiler.transforms.simplify import simplify


def _exp(x):
    return np.exp(x)


def repeated_and_dead(x):
    """Twice the same exp (CSE merges them) and an update nobody reads (DCE drops it)."""
    y = x.copy()
    y[0] = 1.0
    return _exp(x) * _exp(x) + np.sum(x)


def moves_unit_axes(x):
    """A transpose that only moves a size-1 axis, then a reshape of a reshape
    (canonicalize turns both into one reshape)."""
    return np.transpose(x.reshape(4, 1, 3), (1, 0, 2)).reshape(12).reshape(3, 4)


def _frontend_ir(fn, signature):
    return stage(fn, (parse_type(signature),), {}).function


def test_lower_gives_the_frontend_ir_and_the_simplified_ir():
    low = jit(repeated_and_dead).lower("f64[5]")
    frontend = format_function(_frontend_ir(repeated_and_dead, "f64[5]"), with_locs=True)
    assert low.ir == frontend
    assert low.ir != low.ir_optimized
    assert low.ir.count("= exp(") == 2 and low.ir_optimized.count("= exp(") == 1
    assert "update_slice" in low.ir and "update_slice" not in low.ir_optimized


def test_compiling_leaves_the_frontend_ir_as_it_was():
    for fn, sig in ((repeated_and_dead, "f64[5]"), (moves_unit_axes, "f64[12]")):
        ir = _frontend_ir(fn, sig)
        before = format_function(ir, with_locs=True)
        artifacts = pipeline.compile_ir(ir, fn.__name__, target.host())
        assert format_function(ir, with_locs=True) == before
        assert artifacts.ir is ir and format_function(artifacts.ir_optimized) != format_function(ir)


def test_simplify_returns_a_new_function_and_keeps_its_input():
    ir = _frontend_ir(repeated_and_dead, "f64[5]")
    before = format_function(ir)
    out = simplify(ir)
    assert out is not ir and out.body is not ir.body
    assert format_function(ir) == before
    assert format_function(out).count("= exp(") == 1


def test_canonicalize_returns_a_new_function_and_keeps_its_input():
    ir = _frontend_ir(moves_unit_axes, "f64[12]")
    before = format_function(ir)
    out = canonicalize(ir)
    assert out is not ir and format_function(ir) == before
    assert "transpose" in before and "transpose" not in format_function(out)

