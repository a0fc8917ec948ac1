"""IR core: dims, types, builder, printer, verifier and interpreter."""
from __future__ import annotations

import numpy as np
import pytest

import compiler.primitives as P
from compiler.ir import dims
from compiler.ir.builder import Builder, new_block
from compiler.ir.core import Function, SourceLoc
from compiler.ir.interpret import interpret
from compiler.ir.printer import format_function
from compiler.ir.types import TensorType, parse_type, result_dtype
from compiler.ir.verify import VerifyError, verify
from compiler.primitives.base import ShapeError

LOC = SourceLoc("model.py", 3, 4)


def test_dims_canonical_form():
    n, m = dims.Sym("n"), dims.Sym("m")
    assert (n + 1) - 1 == n
    assert str(3 * n + n - 1) == "4*n - 1"
    assert n * m == m * n
    assert dims.evaluate(dims.floordiv(n + 1, 2), {"n": 8}) == 4
    assert dims.evaluate(dims.minimum(n, 5), {"n": 3}) == 3
    assert dims.parse_dim(str(2 * n * m - 3)) == 2 * n * m - 3


@pytest.mark.parametrize("text", ["f64[n, 3]", "f32[]", "i64[2, n, m]", "bool[1]", "i8[n]", "i16[2]",
                                  "u8[n, 3]", "u16[]", "u32[4]", "u64[n]", "f16[n, m]"])
def test_type_round_trip(text):
    assert str(parse_type(text)) == text


def test_type_errors():
    with pytest.raises(ValueError, match="unknown dtype"):
        parse_type("f128[3]")
    with pytest.raises(ValueError, match="negative"):
        parse_type("f64[-1]")


def test_nep50_promotion():
    f32, i32 = np.dtype(np.float32), np.dtype(np.int32)
    assert result_dtype(f32, 2.0) == f32
    assert result_dtype(i32, 1) == i32
    assert result_dtype(i32, 1.5) == np.float64
    assert result_dtype(f32, np.dtype(np.float64)) == np.float64


def _function():
    block = new_block([parse_type("f64[n, 3]"), parse_type("f64[3]")], ["x", "w"])
    b = Builder(block, LOC)
    x, w = block.args
    wb = b.emit1(P.broadcast_in_dim, [w], {"shape": x.shape, "broadcast_dimensions": (1,)})
    y = b.emit1(P.mul, [x, wb])
    block.results = [b.emit1(P.reduce_sum, [b.emit1(P.exp, [y])], {"axes": (1,)})]
    return Function("f", block, ["x", "w"])


def test_printer_golden():
    assert format_function(_function()) == """\
func @f(%x: f64[n, 3], %w: f64[3]) -> (f64[n]) {
  %0 = broadcast_in_dim(%w) {broadcast_dimensions=(1,), shape=(n, 3)} : f64[n, 3]
  %1 = mul(%x, %0) : f64[n, 3]
  %2 = exp(%1) : f64[n, 3]
  %3 = reduce_sum(%2) {axes=(1,)} : f64[n]
  return %3
}"""


def test_printer_locations():
    assert "# model.py:3" in format_function(_function(), with_locs=True)


def test_interpreter_matches_numpy():
    x, w = np.random.rand(5, 3), np.random.rand(3)
    (out,) = interpret(_function(), x, w)
    np.testing.assert_allclose(out, np.exp(x * w).sum(axis=1))


def test_builder_rejects_bad_shapes():
    block = new_block([parse_type("f64[3]"), parse_type("f64[4]")])
    with pytest.raises(ShapeError, match="equal shapes"):
        Builder(block, LOC).emit1(P.add, block.args)


def test_verifier_catches_use_before_def():
    fn = _function()
    fn.body.ops.reverse()
    with pytest.raises(VerifyError, match="used before"):
        verify(fn)


def test_verifier_catches_wrong_result_type():
    fn = _function()
    fn.body.ops[1].results[0].type = TensorType(np.dtype(np.float32), fn.body.ops[1].results[0].shape)
    with pytest.raises(VerifyError, match="differ from the shape rule"):
        verify(fn)


def test_verifier_requires_isolated_regions():
    block = new_block([parse_type("f64[]"), parse_type("bool[]")])
    b = Builder(block, LOC)
    x, p = block.args
    true, false = new_block([]), new_block([])
    true.results, false.results = [x], [x]       # captures x: not allowed
    block.results = list(b.emit(P.cond, [p], {}, [true, false]))
    with pytest.raises(VerifyError, match="not defined in its block"):
        verify(Function("g", block))


def test_cond_and_while_interpretation():
    block = new_block([parse_type("f64[]")], ["x"])
    b = Builder(block, LOC)
    (x,) = block.args
    cond_b, body_b = new_block([x.type]), new_block([x.type])
    with b.inside(cond_b):
        limit = b.emit1(P.constant, [], {"value": np.array(100.0)})
        cond_b.results = [b.emit1(P.lt, [cond_b.args[0], limit])]
    with b.inside(body_b):
        body_b.results = [b.emit1(P.mul, [body_b.args[0], body_b.args[0]])]
    block.results = list(b.emit(P.while_, [x], {}, [cond_b, body_b]))
    fn = Function("square_until", block)
    verify(fn)
    assert interpret(fn, 2.0)[0] == 256.0
