"""Symbolic dim expressions: printing, parsing and evaluation agree with Python's integers."""
from __future__ import annotations

import itertools

import pytest

from compiler.ir import dims
from compiler.ir.parser import functions_equal, parse
from compiler.ir.printer import format_function
from runtime.abi import evaluate_dim

N, M = dims.Sym("n"), dims.Sym("m")

EXPRS = {
    "floordiv of a sum": (dims.floordiv(N + 1, 2), lambda n, m: (n + 1) // 2),
    "floordiv of a difference": (dims.floordiv(N - 1, 3), lambda n, m: (n - 1) // 3),
    "scaled floordiv": (3 * dims.floordiv(N + M + 2, 3) - 1, lambda n, m: 3 * ((n + m + 2) // 3) - 1),
    "clamp": (dims.clamp0(N - 3), lambda n, m: max(n - 3, 0)),
    "nested clamp": (dims.clamp0(dims.clamp0(N - 1) - 2), lambda n, m: max(max(n - 1, 0) - 2, 0)),
    "min of floordiv": (dims.minimum(dims.floordiv(N + 2, 3), M), lambda n, m: min((n + 2) // 3, m)),
    "floordiv of a min": (dims.floordiv(dims.minimum(N, 5) + 1, 2), lambda n, m: (min(n, 5) + 1) // 2),
}


@pytest.mark.parametrize("name", sorted(EXPRS))
def test_print_parse_evaluate(name):
    d, ref = EXPRS[name]
    text = str(d)
    assert dims.parse_dim(text) == d
    for n, m in itertools.product(range(7), range(4)):
        env = {"n": n, "m": m}
        assert dims.evaluate(d, env) == ref(n, m) == evaluate_dim(text, env), (text, env)


def test_ir_round_trip_of_a_step_slice():
    fn = parse('''
func @f(%x: f64[n]) -> (f64[((n + 1) // 2)]) {
  %0 = slice(%x) {limit_indices=(n,), start_indices=(0,), strides=(2,)} : f64[((n + 1) // 2)]
  return %0
}''')
    assert fn.out_types[0].shape == (dims.floordiv(N + 1, 2),)
    assert functions_equal(parse(format_function(fn)), fn)


def test_min_max_simplify_with_nonnegative_sizes():
    assert dims.clamp0(N) == N
    assert dims.maximum(N + 2, 1) == N + 2
    assert dims.minimum(N, 0) == 0
    assert not dims.nonnegative(N - 1)
    assert dims.nonnegative(dims.clamp0(N - 1) + dims.floordiv(N, 2))
