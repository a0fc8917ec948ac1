"""The IR parser (compiler/ir/parser.py): ``parse(print(f))`` is ``f``.

* every OpInfo sample's staged IR (tests/ops/opinfo.py), printed with and without
  locations, reads back structurally equal and prints the same text;
* so do vmap, jvp and vjp of samples, the optimized IR, and IR of the transform API
  (vmap, grad, jacfwd, hessian, chunk_size) on functions with data-dependent ``if`` and
  ``while``, whose ops have regions;
* param values the samples do not produce (exact floats, NaN payloads, big constants,
  dims with floordiv/min, pytrees) round-trip bit for bit;
* malformed text is rejected with a ValueError naming its line and column.
"""
from __future__ import annotations

import re
from collections import namedtuple
from typing import Any

import numpy as np
import pytest

import compiler
import compiler.primitives as P
from compiler.ir import dims
from compiler.ir.builder import Builder, new_block
from compiler.ir.core import Function, SourceLoc
from compiler.ir.parser import (IRParseError, first_difference, functions_equal, parse, parse_params,
                                parse_value)
from compiler.ir.printer import format_function
from compiler.ir.types import parse_type
from compiler.ir.verify import verify
from compiler.pipeline import optimize_ir
from compiler.signature import parse_signature
from compiler.transforms.jvp import jvp_function
from compiler.transforms.vjp import vjp_function
from compiler.transforms.vmap import vmap_function
from tests.ops.opinfo import OPS, OpInfo
from tests.ops import internal

LOC = SourceLoc("model.py", 3, 4)


def round_trip(fn: Function, with_locs: bool = False) -> Function:
    """Print `fn`, parse the text, and check the result is `fn` again."""
    text = format_function(fn, with_locs=with_locs)
    back = parse(text)
    diff = first_difference(fn, back)
    assert diff is None, f"parsed function differs: {diff}\n{text}"
    assert format_function(back, with_locs=with_locs) == text
    verify(back)
    if with_locs:
        assert _lines(back) == _lines(fn), "locations were not read back"
    return back


def _lines(fn: Function) -> list[tuple[str, int]]:
    return [(op.loc.file.rsplit("/", 1)[-1], op.loc.line) for op in fn.body.walk()]


# ---- every OpInfo sample -------------------------------------------------------------------------------

@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_round_trip_every_sample(op: OpInfo) -> None:
    count = 0
    for dtype in op.dtypes:
        for sample in op.samples(dtype):
            fn = internal.stage(op.fn, sample.args, sample.kwargs, op.signature)
            round_trip(fn)
            round_trip(fn, with_locs=True)
            count += 1
    assert count > 0


def _transformed(op: OpInfo, dtype: np.dtype, sample: Any) -> dict[str, Function]:
    """vmap (every input batched at axis 0, symbolic batch size), jvp and vjp (every input
    active) and the optimized IR of one sample; each from a fresh staging (passes may
    change their input)."""
    def fresh() -> Function:
        return internal.stage(op.fn, sample.args, sample.kwargs, op.signature)
    fn = fresh()
    out = {"optimized": optimize_ir(fresh())}
    if op.supports_vmap:
        out["vmap"] = vmap_function(fresh(), [0] * len(fn.args), [0] * len(fn.results), dims.Sym("b"))
    if dtype.kind == "f" and op.supports_jvp:
        out["jvp"] = jvp_function(fresh(), [True] * len(fn.args))
    if dtype.kind == "f" and op.supports_vjp:
        out["vjp"] = vjp_function(fresh(), [True] * len(fn.args))
    return out


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_round_trip_transformed_samples(op: OpInfo) -> None:
    """The first two samples of every dtype, after vmap, jvp, vjp and optimize_ir."""
    for dtype in op.dtypes:
        for sample in op.samples(dtype)[:2]:
            for what, fn in _transformed(op, dtype, sample).items():
                try:
                    round_trip(fn)
                except AssertionError as e:
                    raise AssertionError(f"{what} of {sample}: {e}") from None


# ---- control flow through the transform API -------------------------------------------------------------

def branchy(x, w):
    if w.sum() > 0:              # data-dependent: a cond op
        y = np.sin(x) * w
    else:
        y = np.cos(x)
    return y.sum()


def halving(x):
    while x > 1.0:               # data-dependent: a while op
        x = x * 0.5
    return x * x


def smooth(x):
    return np.tanh(x) * x.sum()


def _trace(kernel: Any, signature: str) -> Function:
    types = tuple(parse_signature(signature)[0])
    return kernel.trace(types, {}).function


API_CASES = [
    ("jit branchy", lambda: compiler.jit(branchy), "f64[n], f64[n]", "cond"),
    ("vmap branchy", lambda: compiler.vmap(branchy, in_dims=(0, None)), "f64[b, n], f64[n]", "cond"),
    ("grad branchy", lambda: compiler.grad(branchy), "f64[3], f64[3]", "cond"),
    ("jacfwd branchy", lambda: compiler.jacfwd(branchy), "f64[3], f64[3]", "cond"),
    ("jit halving", lambda: compiler.jit(halving), "f64[]", "while"),
    ("jacfwd halving", lambda: compiler.jacfwd(halving), "f64[]", "while"),
    ("vmap chunked", lambda: compiler.vmap(smooth, chunk_size=2), "f64[5, 3]", "chunked"),
    ("hessian", lambda: compiler.hessian(smooth), "f64[4]", "iota"),
    ("jacrev chunked", lambda: compiler.jacrev(smooth, chunk_size=3), "f64[4]", "chunked"),
]


@pytest.mark.parametrize("make, signature, expected_prim", [c[1:] for c in API_CASES],
                         ids=[c[0] for c in API_CASES])
def test_round_trip_transform_api(make: Any, signature: str, expected_prim: str) -> None:
    fn = _trace(make(), signature)
    assert expected_prim in {op.prim.name for op in fn.body.walk()}, format_function(fn)
    round_trip(fn)
    round_trip(fn, with_locs=True)
    round_trip(optimize_ir(_trace(make(), signature)))


def test_round_trip_lowered_text() -> None:
    """The text of ``Kernel.lower``: the IR (with locations) and the optimized IR."""
    lowered = compiler.jit(branchy).lower(np.ones(4), np.ones(4))
    assert "  # test_parser.py:" in lowered.ir and "cond(" in lowered.ir_optimized
    assert format_function(parse(lowered.ir), with_locs=True) == lowered.ir
    assert format_function(parse(lowered.ir_optimized)) == lowered.ir_optimized


# ---- param values and printer forms ---------------------------------------------------------------------

def _constant_function(value: np.ndarray) -> Function:
    block = new_block([])
    block.results = [Builder(block, LOC).emit1(P.constant, [], {"value": value})]
    return Function("c", block, [])


NEG_NAN64 = np.frombuffer(bytes.fromhex("010000000000f8ff"), np.float64).reshape(())
CONSTANTS = {
    "f32 shortest": np.array([0.1, 1 / 3, 16777217.0, 1e-45, 3.4e38], np.float32),
    "f64 exact": np.array([0.1, 1 / 3, 2.0 ** -1074, 1.7976931348623157e308], np.float64),
    "zeros and specials": np.array([0.0, -0.0, np.inf, -np.inf, np.nan], np.float64),
    "nan payload (no decimal form)": NEG_NAN64,
    "large (base64)": np.arange(40, dtype=np.float32).reshape(5, 8) / 7,
    "int extremes": np.array([np.iinfo(np.int64).min, -1, 0, np.iinfo(np.int64).max], np.int64),
    "i32 matrix": np.array([[1, -2], [3, 4]], np.int32),
    "bools": np.array([True, False, True]),
    "empty": np.zeros((0, 3)),
    "0-d": np.array(2.5, np.float32),
}


@pytest.mark.parametrize("value", CONSTANTS.values(), ids=CONSTANTS.keys())
def test_constants_round_trip_bit_exactly(value: np.ndarray) -> None:
    back = round_trip(_constant_function(value))
    got = back.body.ops[0].params["value"]
    assert got.dtype == value.dtype and got.shape == value.shape and got.tobytes() == value.tobytes()


def test_constant_forms_are_readable_when_exact() -> None:
    text = format_function(_constant_function(np.array([0.1, -0.0], np.float32)))
    assert "value=array([0.1, -0.0], f32, shape=(2,))" in text
    assert "base64(" in format_function(_constant_function(NEG_NAN64))
    assert "base64(" in format_function(_constant_function(CONSTANTS["large (base64)"]))


def test_symbolic_dims_in_types_and_params() -> None:
    n, m = dims.Sym("n"), dims.Sym("m")
    block = new_block([parse_type("f64[n, m]")], ["x"])
    b = Builder(block, LOC)
    half = dims.floordiv(n, 2)
    size = b.emit1(P.size_of, [], {"dim": dims.minimum(n, 4) + 2 * m - 1, "dtype": np.dtype(np.int64)})
    ramp = b.emit1(P.iota, [], {"shape": (half, dims.maximum(m, 3)), "dimension": 0,
                                "dtype": np.dtype(np.float64)})
    block.results = [size, ramp]
    text = format_function(Function("f", block, ["x"]))
    # min and max order their arguments by their text (a canonical form)
    assert "dim=2*m + min(4, n) - 1" in text and "shape=((n // 2), max(3, m))" in text, text
    round_trip(Function("f", block, ["x"]))


Point = namedtuple("Point", "x y")


def test_custom_function_params_round_trip() -> None:
    """custom_function's params: a class by reference, a pytree with every node kind,
    slots, static values, and batching layers."""
    text = """\
func @f(%x: f64[3], %y: f64[3]) -> (f64[3], f64[3], f64[3]) {
  %0, %1, %2 = custom_function(%x, %y) {base=((f64[3], f64[3]), (f64[3], f64[3], f64[3])), \
fn=py('tests.ir.test_parser:Point'), kwargs={'k': True}, layers=(vmap(size=n, in=(0, None), out=(0,)),), \
out_tree=tree({'a': (*, None), 'b': [*, static(2.5)], \
'c': py('tests.ir.test_parser:Point')(*, static('s'))}), \
template=(*, 'mode', *weak, 3, f64(0.5), None, (1, [2, 3]))} : f64[3], f64[3], f64[3] {
    ^(%a: f64[3], %b: f64[3]):
      %3 = add(%a, %b) : f64[3]
      yield %3, %a, %b
  }
  return %0, %1, %2
}"""
    fn = parse(text)
    assert format_function(fn) == text
    params = fn.body.ops[0].params
    assert params["fn"] is Point
    from compiler.frontend.pytrees import unflatten
    assert unflatten(params["out_tree"], [1, 2, 3]) == {"a": (1, None), "b": [2, 2.5], "c": Point(3, "s")}
    assert type(params["template"][4]) is np.float64
    assert functions_equal(fn, parse(text))


def test_locations_default_to_the_text() -> None:
    fn = parse("func @f(%x: f64[]) -> (f64[]) {\n  %0 = exp(%x) : f64[]\n  return %0\n}",
               filename="case.ir")
    assert fn.body.ops[0].loc == SourceLoc("case.ir", 2, 2)
    fn = parse("func @f(%x: f64[]) -> (f64[]) {\n  %0 = exp(%x) : f64[]  # model.py:12\n  return %0\n}")
    assert fn.body.ops[0].loc == SourceLoc("model.py", 12)


def test_python_objects_can_be_passed_in() -> None:
    text = ("func @f(%x: f64[]) -> (f64[]) {\n  %0 = custom_function(%x) {fn=py('nowhere:Thing')} : f64[] {\n"
            "    ^(%a: f64[]):\n      yield %a\n  }\n  return %0\n}")
    with pytest.raises(IRParseError, match="cannot find the Python object 'nowhere:Thing'"):
        parse(text)
    sentinel = object()
    assert parse(text, objects={"nowhere:Thing": sentinel}).body.ops[0].params["fn"] is sentinel


def test_parse_value_and_params() -> None:
    n = dims.Sym("n")
    assert parse_value("(2*n + 1, (n // 2), -3, 1.5e-3, 'a\\'b', None, True)") == \
        (2 * n + 1, dims.floordiv(n, 2), -3, 1.5e-3, "a'b", None, True)
    assert parse_value("f32[n, 3]") == parse_type("f32[n, 3]")
    assert parse_value("-inf") == -np.inf and np.isnan(parse_value("nan"))
    assert parse_params("{in_dims=(0, None), size=b}") == {"in_dims": (0, None), "size": dims.Sym("b")}
    assert type(parse_value("True")) is bool and type(parse_value("1")) is int


# ---- structural equality can fail ---------------------------------------------------------------------

BASE = """\
func @f(%x: f64[2, 3], %y: f64[2, 3]) -> (f64[3]) {
  %0 = sub(%x, %y) : f64[2, 3]
  %1 = constant() {value=array([0.0], f64, shape=())} : f64[]
  %2 = reduce_sum(%0) {axes=(0,)} : f64[3]
  return %2
}"""


@pytest.mark.parametrize("old, new, why", [
    ("sub(%x, %y)", "sub(%y, %x)", r"op 0 \(sub\): operands differ"),
    ("@f(", "@g(", r"names differ: 'f' vs 'g'"),
    ("%y", "%z", r"argument names differ: \['x', 'y'\] vs \['x', 'z'\]"),
    ("array([0.0]", "array([-0.0]", r"op 1 \(constant\): param value differs"),
    ("axes=(0,)} : f64[3]", "axes=(0,)} : f64[3]\n  %3 = neg(%2) : f64[3]", r"body: 3 ops vs 4"),
    ("sub(", "add(", r"op 0 \(sub\): primitive differs: add"),
])
def test_first_difference_finds_changes(old: str, new: str, why: str) -> None:
    a, b = parse(BASE), parse(BASE.replace(old, new))
    assert functions_equal(a, parse(BASE))
    diff = first_difference(a, b)
    assert diff is not None and re.search(why, diff), diff
    assert not functions_equal(a, b)


def test_param_equality_is_exact() -> None:
    from compiler.ir.parser import params_equal
    assert not params_equal(1, True) and not params_equal((1,), (1.0,))
    assert params_equal(float("nan"), float("nan")) and not params_equal(0.0, -0.0)
    assert not params_equal(np.zeros(2, np.float32), np.zeros(2, np.float64))


# ---- malformed text ---------------------------------------------------------------------------------

GOOD = "func @f(%x: f64[3]) -> (f64[3]) {\n  %0 = exp(%x) : f64[3]\n  return %0\n}"

ERRORS = [
    ("unknown primitive", GOOD.replace("exp(", "expp("), r"line 2, column 8: unknown primitive 'expp' "
                                                          r"\(did you mean exp"),
    ("undefined value", GOOD.replace("exp(%x)", "exp(%y)"), r"line 2, column 12: %y is not defined"),
    ("type mismatch", GOOD.replace("exp(%x) : f64[3]", "exp(%x) : f32[3]"),
     r"line 2, column 18: exp gives \(f64\[3\]\) but the text says \(f32\[3\]\)"),
    ("shape rule", GOOD.replace("exp(%x) : f64[3]", "reduce_sum(%x) {axes=(4,)} : f64[]"),
     r"line 2, column 8: reduce_sum: the shape rule rejects this op"),
    ("unknown dtype", GOOD.replace("%x: f64[3]", "%x: f128[3]"), r"line 1, column 13: unknown dtype 'f128'"),
    ("missing brace", GOOD[:-1], r"line 3, column 12: expected '}' closing the function, found the end"),
    ("return type", GOOD.replace("-> (f64[3])", "-> (f64[4])"),
     r"line 1, column 25: @f returns \(f64\[3\]\) but its signature says \(f64\[4\]\)"),
    ("redefinition", GOOD.replace("  return %0", "  %0 = exp(%x) : f64[3]\n  return %0"),
     r"line 3, column 3: %0 is defined twice"),
    ("result names", GOOD.replace("%0 = exp", "%0, %1 = exp"), r"line 2, column 3: exp has 1 result"),
    ("bad character", GOOD.replace("exp(%x)", "exp(%x) $"), r"line 2, column 16: unexpected character '\$'"),
    ("trailing text", GOOD + "\nfunc", r"line 5, column 1: unexpected 'func' after the function"),
    ("bad param", GOOD.replace("exp(%x)", "exp(%x) {a=(1, }"),
     r"line 2, column 23: expected a param value, found '}'"),
    ("arith on strings", GOOD.replace("exp(%x)", "exp(%x) {a='s' + 1}"),
     r"line 2, column 23: '\+' applies to integers and dimensions"),
    ("array size", GOOD.replace("%0 = exp(%x) : f64[3]",
                                "%0 = constant() {value=array([1.0], f64, shape=(3,))} : f64[3]"), r"line 2, column 32: 1 elements for shape \(3,\)"),
    ("bad base64", GOOD.replace("%0 = exp(%x) : f64[3]",
                                "%0 = constant() {value=array(base64('!!'), f64, shape=())} : f64[]"),
     r"line 2, column 39: invalid base64 data"),
    ("isolated region", """\
func @f(%x: f64[], %p: bool[]) -> (f64[]) {
  %0 = cond(%p) : f64[] {
    ^():
      yield %x
  } {
    ^():
      yield %x
  }
  return %0
}""", r"line 4, column 13: %x is defined outside this region; regions are isolated"),
]


@pytest.mark.parametrize("text, message", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_malformed_text_is_rejected(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        parse(text)
    assert isinstance(info.value, IRParseError)
    assert "^" in str(info.value).splitlines()[-1], "the message points at the column"
