"""Random NumPy programs, compiled vs NumPy (hypothesis).

A program is a small expression DAG over 1-3 array inputs whose shapes
broadcast against each other (different ranks, size-1 dims, 0-d), built from
unary and binary elementwise ops (written so that every value stays in the
domain: ``np.sqrt(np.abs(a))``, ``a / (1.0 + b * b)``), Python float
constants, optional reductions with a random axis and ``keepdims``, and
optionally reused subexpressions (a DAG, not only a tree). It is rendered as
Python source, written to a module file (so the compiler can read its source
like any user's), compiled with ``jit`` and compared with the same function
run by NumPy.
"""
from __future__ import annotations

import importlib.util
import itertools
import os
import tempfile

import numpy as np
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

from compiler import jit
from tests.ops.compare import Tol, assert_same

UNARY = ["-{a}", "np.abs({a})", "np.exp(np.tanh({a}))", "np.tanh({a})", "np.sin({a})", "np.cos({a})",
         "np.sqrt(np.abs({a}))", "np.log1p(np.abs({a}))", "np.square({a})", "np.maximum({a}, 0.0)",
         "np.floor({a})", "np.clip({a}, -1.0, 1.5)", "np.arctan({a})", "np.expm1(np.sin({a}))",
         "np.sign({a}) * {a}", "({a} * 0.5)", "np.log(1.0 + np.abs({a}))", "np.cbrt({a})"]
BINARY = ["({a} + {b})", "({a} - {b})", "({a} * {b})", "({a} / (1.0 + {b} * {b}))", "np.maximum({a}, {b})",
          "np.minimum({a}, {b})", "np.where({a} > {b}, {a}, {b})", "np.hypot({a}, {b})",
          "np.arctan2({a}, 1.0 + np.abs({b}))", "np.where({a} < 0.0, {b}, -{a})", "({a} * 2.0 - {b})"]
REDUCTIONS = ["sum", "mean", "max", "min", "prod"]

_MODULE_DIR = tempfile.mkdtemp(prefix="aotx-random-programs-")
_counter = itertools.count()


def load_function(source: str, name: str = "program"):
    """Write `source` to a module file and import it (the compiler reads the source from there)."""
    path = os.path.join(_MODULE_DIR, f"prog_{os.getpid()}_{next(_counter)}.py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


@st.composite
def shapes(draw):
    """A base shape and 1-3 input shapes that broadcast to it."""
    rank = draw(st.integers(0, 3))
    base = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    n_inputs = draw(st.integers(1, 3))
    ins = []
    for _ in range(n_inputs):
        k = draw(st.integers(0, rank))            # a suffix of the base shape ...
        dims = list(base[rank - k:])
        for i in range(len(dims)):                 # ... with some dims squeezed to 1
            if draw(st.booleans()) and draw(st.booleans()):
                dims[i] = 1
        ins.append(tuple(dims))
    return base, ins


@st.composite
def expressions(draw, names, depth):
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        if draw(st.integers(0, 5)) == 0:
            return repr(draw(st.sampled_from([0.5, -1.25, 2.0, 3.0, 0.1])))
        return draw(st.sampled_from(names))
    if draw(st.booleans()):
        return draw(st.sampled_from(UNARY)).format(a=draw(expressions(names, depth - 1)))
    a = draw(expressions(names, depth - 1))
    b = draw(expressions(names, depth - 1))
    return draw(st.sampled_from(BINARY)).format(a=a, b=b)


@st.composite
def programs(draw, reductions=False):
    """(source, argument shapes): a function `program(x0, x1, ...)`."""
    base, ins = draw(shapes())
    names = [f"x{i}" for i in range(len(ins))]
    lines = [f"def program({', '.join(names)}):"]
    # a shared subexpression, used twice below (the program is a DAG)
    t = draw(expressions(names, 2))
    lines.append(f"    t = {t}")
    body = draw(expressions(names + ["t"], 3))
    result = f"({body}) + t * 0.25" if draw(st.booleans()) else body
    # the result must depend on every input to keep the argument list honest: add 0 * x
    lines.append(f"    r = {result} + 0.0 * ({' + '.join(names)})")
    rank = max(len(s) for s in ins)     # the result's rank (inputs are suffixes of `base`)
    if reductions and rank > 0 and draw(st.integers(0, 3)) > 0:
        red = draw(st.sampled_from(REDUCTIONS))
        axis = draw(st.one_of(st.none(), st.integers(-rank, rank - 1),
                              st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True)
                              .map(tuple)))
        keepdims = draw(st.booleans())
        scale = "np.tanh(r)" if red == "prod" else "r"   # keep products in range
        lines.append(f"    r = np.{red}({scale}, axis={axis!r}, keepdims={keepdims})")
        if draw(st.booleans()):
            lines.append("    r = r - np.mean(r) * 0.5")
    lines.append("    return r")
    return "import numpy as np\n\n\n" + "\n".join(lines) + "\n", ins


def run(source, arg_shapes, dtype, seed, tol):
    note(source)
    note(f"shapes: {arg_shapes}, dtype: {np.dtype(dtype).name}")
    fn = load_function(source)
    r = np.random.default_rng(seed)
    args = [np.asarray(r.uniform(-3, 3, s), dtype=dtype) for s in arg_shapes]
    with np.errstate(all="ignore"):
        expected = fn(*args)
    assume(np.all(np.isfinite(expected)))
    got = jit(fn)(*args)
    assert_same(got, expected, tol)


PROPERTY_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
                         print_blob=True)

F64_TOL = Tol((1e-4, 1e-5), (1e-9, 1e-9), ulps=16)
#: float32 inputs: the program computes in float32 even where a NumPy float64 scalar (such as
#: `np.abs(0.5)`) promotes the result to float64, so float32 tolerances apply to both
F32_TOL = Tol((2e-3, 2e-4), (2e-3, 2e-4), ulps=16)


@settings(max_examples=120, **PROPERTY_SETTINGS)
@given(programs(), st.integers(0, 2 ** 32 - 1))
def test_random_elementwise_broadcast_programs_float64(program, seed):
    source, arg_shapes = program
    run(source, arg_shapes, np.float64, seed, F64_TOL)


@settings(max_examples=60, **PROPERTY_SETTINGS)
@given(programs(), st.integers(0, 2 ** 32 - 1))
def test_random_elementwise_broadcast_programs_float32(program, seed):
    source, arg_shapes = program
    run(source, arg_shapes, np.float32, seed, F32_TOL)


@settings(max_examples=120, **PROPERTY_SETTINGS)
@given(programs(reductions=True), st.integers(0, 2 ** 32 - 1), st.sampled_from([np.float64, np.float32]))
def test_random_programs_with_reductions(program, seed, dtype):
    source, arg_shapes = program
    run(source, arg_shapes, dtype, seed, F64_TOL if dtype == np.float64 else F32_TOL.widen(5))


@st.composite
def promotion_programs(draw):
    """Binary ops between inputs of different dtypes and Python scalars (NEP 50 promotion)."""
    dtypes = draw(st.lists(st.sampled_from(["float32", "float64", "int32", "int64", "bool"]), min_size=2, max_size=2))
    op = draw(st.sampled_from(["a + b", "a * b", "a - b", "np.maximum(a, b)", "np.where(a > b, a, b)",
                               "a / (1 + np.abs(b))", "a + 2.5", "3 * a + b", "(a > 0) & (b > 0)",
                               "a + b * 1.5", "np.minimum(a, 7)"]))
    if "-" in op and "bool" in dtypes:
        op = op.replace("a - b", "a + b")
    sa = draw(st.sampled_from([(), (3,), (2, 3), (1, 3)]))
    sb = draw(st.sampled_from([(), (3,), (2, 1)]))
    return f"import numpy as np\n\n\ndef program(a, b):\n    return {op}\n", dtypes, (sa, sb)


@settings(max_examples=80, **PROPERTY_SETTINGS)
@given(promotion_programs(), st.integers(0, 2 ** 32 - 1))
def test_random_mixed_dtype_promotion(program, seed):
    source, dtypes, arg_shapes = program
    note(source)
    note(f"dtypes {dtypes}, shapes {arg_shapes}")
    fn = load_function(source)
    r = np.random.default_rng(seed)
    args = [np.asarray(r.uniform(-5, 5, s)).astype(d) for s, d in zip(arg_shapes, dtypes)]
    with np.errstate(all="ignore"):
        expected = fn(*args)
    got = jit(fn)(*args)
    assert_same(got, expected, Tol((1e-6, 1e-6), (1e-12, 1e-12)))
