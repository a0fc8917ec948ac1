"""Shared checks for the frontend tests: stage a function, verify and print its IR,
run it with the reference interpreter and compare with NumPy (the first law:
same values, same dtypes, same shapes)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from compiler.errors import CompileError
from compiler.frontend import StagedProgram, Weak, stage
from compiler.frontend.pytrees import flatten, unflatten
from compiler.ir.interpret import interpret
from compiler.ir.printer import format_function
from compiler.ir.types import TensorType, parse_type
from compiler.ir.verify import verify

RNG = np.random.default_rng(0)


def type_of(x: Any) -> Any:
    """The argument leaf the api layer would pass for a NumPy value."""
    if isinstance(x, bool):
        return Weak(parse_type("bool"))
    if isinstance(x, int):
        return Weak(parse_type("i64"))
    if isinstance(x, float):
        return Weak(parse_type("f64"))
    a = np.asarray(x)
    return TensorType(a.dtype, tuple(a.shape))


def is_array_leaf(x: Any) -> bool:
    return isinstance(x, (np.ndarray, np.generic, float, int, bool))


def staged(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None,
           static: tuple[int, ...] = ()) -> StagedProgram:
    """Stage `fn` for these NumPy arguments (positions in `static` are compile-time constants)."""
    kwargs = kwargs or {}
    types = tuple(a if i in static else _types(a) for i, a in enumerate(args))
    prog = stage(fn, types, {k: _types(v) for k, v in kwargs.items()}, updates=True)
    verify(prog.function)
    assert format_function(prog.function, with_locs=True)
    return prog


def _types(tree: Any) -> Any:
    leaves, td = flatten(tree)
    return unflatten(td, [type_of(x) for x in leaves])


def run(prog: StagedProgram, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None,
        static: tuple[int, ...] = ()) -> Any:
    dyn_args = tuple(a for i, a in enumerate(args) if i not in static)
    leaves = flatten((dyn_args, kwargs or {}))[0]
    outs = interpret(prog.function, *leaves)
    return unflatten(prog.out_tree, outs[:len(outs) - len(prog.updates)])   # then updated arguments


def check(fn: Any, *args: Any, static: tuple[int, ...] = (), rtol: float = 1e-12,
          atol: float = 0.0, **kwargs: Any) -> StagedProgram:
    """Compiled (interpreted IR) == NumPy: values, dtypes and shapes, leaf by leaf."""
    prog = staged(fn, args, kwargs, static)
    got = run(prog, args, kwargs, static)
    with np.errstate(all="ignore"):
        expected = fn(*args, **kwargs)
    assert_same(got, expected, rtol, atol)
    return prog


def assert_same(got: Any, expected: Any, rtol: float = 1e-12, atol: float = 0.0) -> None:
    g_leaves, g_tree = flatten(got)
    e_leaves, e_tree = flatten(expected)
    assert g_tree == e_tree, f"structure {g_tree} != {e_tree}"
    for g, e in zip(g_leaves, e_leaves):
        e_arr = np.asarray(e)
        g_arr = np.asarray(g)
        assert g_arr.shape == e_arr.shape, f"shape {g_arr.shape} != {e_arr.shape}"
        assert g_arr.dtype == e_arr.dtype, f"dtype {g_arr.dtype} != {e_arr.dtype}"
        if e_arr.dtype.kind == "f":
            tol = max(rtol, 1e-5) if e_arr.dtype == np.float32 else rtol
            np.testing.assert_allclose(g_arr, e_arr, rtol=tol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(g_arr, e_arr)


def expect_error(fn: Any, cls: type, *args: Any, match: str | None = None,
                 static: tuple[int, ...] = (), line_of: str | None = None) -> CompileError:
    """Staging raises `cls` at the user's line, with the source line and a caret."""
    types = tuple(a if i in static else _types(a) for i, a in enumerate(args))
    with pytest.raises(cls) as info:
        stage(fn, types, {})
    err = info.value
    text = str(err)
    if match is not None:
        assert match in text, text
    if isinstance(err, CompileError):
        assert err.filename == __import__("inspect").getsourcefile(fn)
        assert err.lineno is not None and err.lineno > 0
        assert "^" in text and "\n    " in text, text
        if line_of is not None:
            import linecache
            assert line_of in linecache.getline(err.filename, err.lineno), \
                (line_of, linecache.getline(err.filename, err.lineno))
    return err


def rand(*shape: int, dtype: Any = np.float64, low: float = -2.0, high: float = 2.0) -> np.ndarray:
    if np.dtype(dtype) == np.bool_:
        return RNG.random(shape) > 0.5
    if np.dtype(dtype).kind == "i":
        return RNG.integers(-5, 6, size=shape).astype(dtype)
    return RNG.uniform(low, high, size=shape).astype(dtype)
