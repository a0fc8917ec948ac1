"""Python around the arrays: calls (inlined), closures, globals, pytrees in and out,
builtins, math, comprehensions, static arguments."""
from __future__ import annotations

import functools
import math
from collections import namedtuple

import numpy as np
import pytest

from compiler.frontend import stage
from compiler.ir.types import parse_type
from tests.frontend.helpers import check, rand, staged, run, assert_same

SCALE = 3.0
WEIGHTS = np.linspace(0.0, 1.0, 4)
CONFIG = {"power": 2, "names": ("a", "b")}
Pair = namedtuple("Pair", ["first", "second"])


def helper(x, k=2):
    return x ** k + SCALE


def uses_helper(x):
    return helper(x) + helper(x, k=3) + helper(k=1, x=x)


def recursive(x, n):
    if n == 0:
        return x
    return recursive(x * 2, n - 1)


def test_inlined_calls_and_globals():
    check(uses_helper, rand(3))
    check(lambda x: recursive(x, 3), rand(3))
    check(lambda x: x @ WEIGHTS * CONFIG["power"], rand(2, 4))


def make_closure(c):
    offset = np.array([1.0, 2.0, 3.0])

    def f(x):
        return x * c + offset
    return f


def test_closures_over_constants_and_arrays():
    check(make_closure(2.5), rand(3))
    check(make_closure(np.float32(2)), rand(3).astype(np.float32))


def nested_defs(x):
    scale = 2.0

    def inner(y, power=2):
        return (y * scale) ** power

    square = lambda y: y * y  # noqa: E731
    scale = 3.0                # late binding, as Python does
    return inner(x) + square(x) + inner(x, power=1)


def test_nested_functions_and_lambdas():
    check(nested_defs, rand(4))


def varargs(*xs, **opts):
    total = sum(xs)
    return total * opts.get("scale", 1.0)


def test_varargs_and_kwargs():
    check(lambda a, b: varargs(a, b, a, scale=2.0), rand(3), rand(3))


def test_partial_and_methods():
    class Model:
        def __init__(self, w):
            self.w = w

        def forward(self, x):
            return np.tanh(x @ self.w)

    model = Model(rand(3, 2))
    check(model.forward, rand(4, 3))
    check(lambda x: functools.partial(helper, k=3)(x), rand(3))


def pytree_fn(params, batch):
    w, b = params["w"], params["b"]
    h = batch.first @ w + b
    return {"out": h, "extras": (h.sum(), [h.max(), None])}, Pair(h.mean(), batch.second)


def test_pytrees_in_and_out():
    params = {"w": rand(3, 2), "b": rand(2)}
    batch = Pair(rand(4, 3), rand(4))
    prog = check(pytree_fn, params, batch)
    assert prog.function.arg_names == ["params_0", "params_1", "batch_0", "batch_1"]
    assert str(prog.out_tree).startswith("({'extras'")


def test_lists_of_arrays():
    def f(xs):
        parts = []
        for x in xs:
            parts.append(x * 2)
        parts.extend([xs[0]])
        return np.stack(parts), len(parts)
    check(f, [rand(3), rand(3)])


def test_static_arguments():
    def f(x, n, mode, shape):
        for _ in range(n):
            x = x * 2 if mode == "double" else x + 1
        return x.reshape(shape)
    x = rand(6)
    prog = check(f, x, 3, "double", (2, 3), static=(1, 2, 3))
    other = staged(f, (x, 2, "add", (3, 2)), static=(1, 2, 3))
    assert prog.in_tree != other.in_tree
    assert hash(prog.in_tree) != hash(other.in_tree) or prog.in_tree != other.in_tree
    assert_same(run(other, (x, 2, "add", (3, 2)), static=(1, 2, 3)), f(x, 2, "add", (3, 2)))


def test_static_numpy_array_argument():
    table = np.array([1.0, 2.0, 4.0])
    check(lambda x, t: x * t + t.sum(), rand(3), table, static=(1,))


def test_methods_of_numpy_scalars_known_at_compile_time():
    def f(x):
        total = np.sum(np.arange(3))            # a NumPy int64 computed at compile time
        any_ = np.any(np.arange(3), axis=-1)    # a NumPy bool
        return x * total.astype(np.float32) + any_.astype(np.int32) + np.float64(2.0).max()
    check(f, rand(3))


BUILTIN_CASES = {
    "len": lambda x: x * len(x),
    "range-sum": lambda x: sum(x[i] for i in range(len(x))),
    "enumerate": lambda x: [v * i for i, v in enumerate(x)],
    "zip": lambda x: [a - b for a, b in zip(x, x[::-1])],
    "min-max-static": lambda x: x * min(3, 4) + max([1, 2]),
    "min-max-staged": lambda x: max(x[0], x[1]) - min(x[0], x[2]),
    "abs": lambda x: abs(x) + abs(-2),
    "isinstance": lambda x: x * 2 if isinstance(x, np.ndarray) else x,
    "tuple-list": lambda x: tuple(list(x))[0],
    "dict": lambda x: dict(a=x)["a"],
    "float": lambda x: float(x.sum()) * x,
    "int": lambda x: int(x[0] * 10) + x,
    "bool": lambda x: bool(x[0] > 0),
    "item": lambda x: x.max().item() * 2 + x,
    "item-int": lambda x: x.astype(np.int32)[1].item(),
    "round": lambda x: round(2.567, 1) * x,
    "pow-divmod": lambda x: pow(x, 2) + divmod(7, 2)[0],
    "sum-array": lambda x: sum(x),
    "reversed": lambda x: np.stack(list(reversed(list(x)))),
    "map": lambda x: sum(map(lambda v: v * 2, x)),
    "comprehensions": lambda x: {k: v for k, v in zip("ab", x)}["b"] + len({1, 2, 2}),
    "fstring": lambda x: x * len(f"{x.shape}-{x.dtype}"),
    "walrus": lambda x: (y := x * 2) + y,
    "math": lambda x: x * math.sqrt(2) + math.floor(2.5) + math.log(8, 2),
    "math-staged": lambda x: math.sqrt(float(x[0] ** 2)) + math.exp(x[1].item()),
    "slice-builtin": lambda x: x[slice(1, None)],
    "getattr": lambda x: getattr(x, "T") + getattr(np, "pi"),
    "starred": lambda x: np.stack([*x, *x[:1]]),
}


@pytest.mark.parametrize("name", sorted(BUILTIN_CASES))
def test_builtins(name):
    check(BUILTIN_CASES[name], np.array([0.5, -1.25, 2.0]))


def test_data_dependent_conversions_are_marked():
    prog = check(lambda x: float(x.sum()) + int(x[0]) + x.max().item() + bool(x[1]),
                 np.array([1.5, 2.0]))
    markers = [op.params.get("data_dependent") for op in prog.function.body.walk()
               if op.prim.name == "convert"]
    assert {"float()", "int()", ".item()", "bool()"} <= set(markers)


def test_weak_results_promote_like_python_scalars():
    check(lambda x: x * float(x[0]), rand(3).astype(np.float32))
    check(lambda x: x + int(x[0]), rand(3, dtype=np.int32))


def test_numpy_function_as_the_compiled_function():
    prog = stage(np.dot, (parse_type("f64[3]"), parse_type("f64[3]")), {})
    assert [op.prim.name for op in prog.function.body.ops] == ["dot_general"]
    prog = stage(np.sin, (parse_type("f32[2]"),), {})
    assert prog.function.out_types[0].dtype == np.float32


def test_ir_prints_with_locations():
    prog = staged(uses_helper, (rand(3),))
    text = prog.function.__str__()
    assert "func @uses_helper" in text
    from compiler.ir.printer import format_function
    assert "test_python.py:" in format_function(prog.function, with_locs=True)
    lines = {op.loc.line for op in prog.function.body.walk()}
    import inspect
    start = inspect.getsourcelines(helper)[1]
    assert start + 1 in lines                       # ops of the inlined helper point at it
