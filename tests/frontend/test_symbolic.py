"""Symbolic dimensions (signature types like f64[n, 3]) flowing through shape arithmetic."""
from __future__ import annotations

import numpy as np
import pytest

from compiler.errors import ShapeMismatchError, UnsupportedError
from compiler.frontend import stage
from compiler.ir import dims
from compiler.ir.interpret import interpret
from compiler.ir.types import parse_type as T
from tests.frontend.helpers import assert_same, expect_error

N = dims.Sym("n")


def sym_check(fn, types, *args):
    prog = stage(fn, tuple(T(t) for t in types), {})
    got = interpret(prog.function, *args)
    from compiler.frontend.pytrees import unflatten
    assert_same(unflatten(prog.out_tree, got), fn(*args))
    return prog


SYMBOLIC_CASES = {
    "elementwise": lambda x, w: np.tanh(x * w) + 1,
    "matvec": lambda x, w: x @ w,
    "slice": lambda x, w: x[1:],
    "slice-neg": lambda x, w: x[:-1] * 2,
    "step": lambda x, w: x[::2],
    "reverse": lambda x, w: x[::-1],
    "reshape-1": lambda x, w: x.reshape(-1),
    "reshape-back": lambda x, w: x.reshape(-1).reshape(-1, 3),
    "reshape-shape": lambda x, w: x.reshape(x.shape[0], 3, 1),
    "mean": lambda x, w: x.mean(axis=0) + x.mean(),
    "var": lambda x, w: x.var(axis=0, ddof=1),
    "sum-keepdims": lambda x, w: x - x.sum(axis=0, keepdims=True),
    "concat": lambda x, w: np.concatenate([x, x[:1]]),
    "len": lambda x, w: x * len(x),
    "shape-div": lambda x, w: x.sum() / x.shape[0],
    "zeros": lambda x, w: np.zeros(x.shape) + x,
    "arange": lambda x, w: np.arange(x.shape[0]) * 2,
    "eye": lambda x, w: np.eye(x.shape[0]) @ x,
    "transpose": lambda x, w: (x.T @ x) / len(x),
    "int-index": lambda x, w: x[0] + x[-1],
    "argmax": lambda x, w: x.argmax(axis=0),
    "cumsum": lambda x, w: np.cumsum(x, axis=0),
    "take": lambda x, w: x[[0, 0]],
    "tile": lambda x, w: np.tile(x, (2, 1)),
    "where": lambda x, w: np.where(x > 0, x, w),
}


@pytest.mark.parametrize("name", sorted(SYMBOLIC_CASES))
@pytest.mark.parametrize("n", [1, 4])
def test_symbolic_programs(name, n):
    x = np.arange(n * 3, dtype=np.float64).reshape(n, 3) - 2
    sym_check(SYMBOLIC_CASES[name], ["f64[n, 3]", "f64[3]"], x, np.array([1.0, -2.0, 0.5]))


def test_symbolic_shapes_in_the_ir():
    prog = stage(lambda x: x[1:], (T("f64[n, 3]"),), {})
    assert prog.function.out_types[0].shape == (dims.clamp0(N - 1), 3)     # 0 at n = 0, as NumPy
    assert str(prog.function.out_types[0]) == "f64[max(0, n - 1), 3]"
    prog = stage(lambda x: x.reshape(-1), (T("f64[n, 3]"),), {})
    assert prog.function.out_types[0].shape == (3 * N,)
    prog = stage(lambda x, y: np.concatenate([x, y]), (T("f64[n]"), T("f64[m]")), {})
    assert str(prog.function.out_types[0]) == "f64[m + n]"


def test_shared_symbols_broadcast():
    sym_check(lambda x, y: x + y, ["f64[n]", "f64[n]"], np.ones(3), np.arange(3.0))
    sym_check(lambda x, y: x[:, None] * y, ["f64[n]", "f64[m]"], np.ones(3), np.arange(2.0))


def two_symbols(x, y):
    return x + y


def range_over_symbol(x):
    total = 0.0
    for i in range(x.shape[0]):
        total = total + x[i]
    return total


def compare_symbol(x):
    if x.shape[0] > 2:
        return x
    return -x


def test_loop_over_a_symbolic_size():
    # a loop over range(n) of a symbolic n is a loop op: one kernel for every n
    for n in (0, 1, 5):
        sym_check(range_over_symbol, ["f64[n]"], np.arange(float(n)))


def test_symbolic_rejections():
    expect_error(two_symbols, ShapeMismatchError, T("f64[n]"), T("f64[m]"), static=(0, 1),
                 match="could not be broadcast", line_of="return x + y")
    expect_error(compare_symbol, UnsupportedError, T("f64[n]"), static=(0,),
                 match="cannot decide", line_of="x.shape[0] > 2")
