"""Rejections (API.md section 4) and NumPy's own errors, raised at compile time at the
user's line, with the source line, a caret and a hint."""
from __future__ import annotations

import os

import numpy as np
import pytest

from compiler.errors import (AxisError, CompileError, DynamicShapeError, IndexOutOfBoundsError,
                             InternalCompilerError, OutParameterError, ShapeMismatchError,
                             SideEffectError, TruthValueError, UnsupportedError)
from tests.frontend.helpers import expect_error, rand

X = rand(3, 4)
V = rand(3)
COUNTER = [0]
STATE = {"calls": 0}


class Box:
    value = 1.0


BOX = Box()


# each case: function, error class, text in the message, text of the offending line

def out_param(x):
    y = np.zeros_like(x)
    np.add(x, 1, out=y)
    return y


def out_param_method(x):
    return x.sum(axis=0, out=None) + np.sum(x, out=np.zeros(()))


def nonzero(x):
    return np.nonzero(x > 0)


def argwhere(x):
    return np.argwhere(x)


def flatnonzero(x):
    return np.flatnonzero(x)


def unique(x):
    return np.unique(x)


def bool_mask(x):
    return x[x > 0]


def where_one_arg(x):
    return np.where(x > 0)


def set_mask_with_array(x):
    y = x.copy()
    y[x > 0] = x[:2]
    return y


def global_write(x):
    global COUNTER
    COUNTER = x
    return x


def nonlocal_write_outer():
    total = 0

    def inner(x):
        nonlocal total
        total = x
        return x
    return inner


def append_outer(x):
    COUNTER.append(x)
    return x


def dict_write_outer(x):
    STATE["calls"] = x
    return x


def attr_write(x):
    BOX.value = x
    return x


def arg_write(x):
    x[0] = 1.0
    return x


def arg_view_write(x):
    v = x[1:]
    v[0] = 1.0
    return x


def arg_aug_subscript(x):
    x[0] += 1.0
    return x


def do_print(x):
    print(x)
    return x


def random_call(x):
    return x + np.random.normal(size=x.shape)


def random_rng(x):
    rng = np.random.default_rng(0)
    return x + rng.normal()


def unknown_numpy(x):
    return np.busday_count(x, x)


def misspelled(x):
    return np.cumsom(x)


def unknown_c_function(x):
    import_free = os.getpid
    return x * import_free()


def fmod_call(x):
    return np.fmod(x, 2.0)


def save_io(x):
    np.save("f.npy", x)
    return x


def ambiguous_if(x):
    if x > 0:
        return x
    return -x


def ambiguous_while(x):
    while x > 0:
        x = x - 1
    return x


def ambiguous_and(x):
    return (x > 0) and (x < 1)


def break_in_while(x):
    while x.sum() > 0:
        x = x - 1
        if x.max() > 5:
            break
    return x


def return_in_while(x):
    while x.sum() > 0:
        return x
    return x


def dtype_changes_in_while(x):
    s = x.sum().astype(np.float32)
    while s > 0:
        s = s - 1.0 * np.float64(1)
    return s


def shape_changes_in_while(x):
    while x.sum() > 0:
        x = x[1:]
    return x


def branch_dtype_mismatch(x):
    if x.sum() > 0:
        y = x.astype(np.float32)
    else:
        y = x
    return y


def branch_only_one(x):
    if x.sum() > 0:
        y = x
    return y


def broadcast_mismatch(x, v):
    return x + v


def index_out_of_range(x):
    return x[5]


def too_many_indices(x):
    return x[0, 0, 0]


def bad_axis(x):
    return x.sum(axis=2)


def bad_reshape(x):
    return x.reshape(5, -1)


def bad_matmul(x):
    return x @ x


def bad_concat(x, v):
    return np.concatenate([x, v])


def bad_unpack(x):
    a, b = x
    return a + b


def try_statement(x):
    try:
        return x
    except ValueError:
        return x


def class_def(x):
    class A:
        pass
    return x


def undefined_name(x):
    return x + not_defined_anywhere  # noqa: F821


def item_of_vector(x):
    return float(x)


def bool_subtract(x):
    return (x > 0) - (x > 1)


def staged_range(x):
    for i in range(x.sum()):           # a float bound: Python's range refuses it too
        x = x + i
    return x


def static_assert(x):
    assert x.ndim == 1, "need a vector"
    return x


CASES = [
    (out_param, OutParameterError, "out=", "out=y", (X,)),
    (out_param_method, OutParameterError, "out=", "np.sum(x, out=", (X,)),
    (nonzero, DynamicShapeError, "np.nonzero", "np.nonzero", (X,)),
    (argwhere, DynamicShapeError, "np.argwhere", "np.argwhere", (X,)),
    (flatnonzero, DynamicShapeError, "np.flatnonzero", "np.flatnonzero", (X,)),
    (unique, DynamicShapeError, "np.unique", "np.unique", (X,)),
    (bool_mask, DynamicShapeError, "boolean mask", "x[x > 0]", (X,)),
    (where_one_arg, DynamicShapeError, "np.nonzero", "np.where(x > 0)", (X,)),
    (set_mask_with_array, DynamicShapeError, "mask", "y[x > 0] = x[:2]", (X,)),
    (global_write, SideEffectError, "global variable 'COUNTER'", "global COUNTER", (X,)),
    (nonlocal_write_outer(), SideEffectError, "nonlocal variable 'total'", "nonlocal total", (X,)),
    (append_outer, SideEffectError, "list.append()", "COUNTER.append", (X,)),
    (dict_write_outer, SideEffectError, "dict", 'STATE["calls"] = x', (X,)),
    (attr_write, SideEffectError, ".value", "BOX.value = x", (X,)),
    (arg_write, SideEffectError, "argument 'x'", "x[0] = 1.0", (X,)),
    (arg_view_write, SideEffectError, "argument 'x'", "v[0] = 1.0", (X,)),
    (arg_aug_subscript, SideEffectError, "argument 'x'", "x[0] += 1.0", (X,)),
    (do_print, SideEffectError, "print", "print(x)", (X,)),
    (random_call, UnsupportedError, "np.random", "np.random.normal", (X,)),
    (random_rng, UnsupportedError, "np.random", "default_rng", (X,)),
    (unknown_numpy, UnsupportedError, "np.busday_count", "np.busday_count(x, x)", (X,)),
    (misspelled, UnsupportedError, "np.cumsom", "np.cumsom", (X,)),
    (unknown_c_function, UnsupportedError, "getpid", "import_free()", (X,)),
    (fmod_call, UnsupportedError, "np.fmod", "np.fmod", (X,)),
    (save_io, UnsupportedError, "I/O", "np.save", (X,)),
    (ambiguous_if, TruthValueError, "more than one element is ambiguous", "if x > 0", (X,)),
    (ambiguous_while, TruthValueError, "ambiguous", "while x > 0", (X,)),
    (ambiguous_and, TruthValueError, "ambiguous", "(x > 0) and (x < 1)", (X,)),
    (break_in_while, UnsupportedError, "`break` inside a data-dependent while", "while x.sum()",
     (X,)),
    (return_in_while, UnsupportedError, "`return`", "while x.sum()", (X,)),
    (dtype_changes_in_while, CompileError, "variable 's' has dtype float32", "while s > 0", (X,)),
    (shape_changes_in_while, CompileError, "variable 'x' has shape", "while x.sum()", (X,)),
    (branch_dtype_mismatch, CompileError, "variable 'y' has dtype", "if x.sum() > 0", (X,)),
    (branch_only_one, CompileError, "'y' may be undefined", "return y", (X,)),
    (broadcast_mismatch, ShapeMismatchError, "operands could not be broadcast together with "
     "shapes (3,4) (3,)", "return x + v", (X, V)),
    (index_out_of_range, IndexOutOfBoundsError, "index 5 is out of bounds for axis 0 with size 3",
     "x[5]", (X,)),
    (too_many_indices, IndexOutOfBoundsError, "too many indices", "x[0, 0, 0]", (X,)),
    (bad_axis, AxisError, "axis 2 is out of bounds for array of dimension 2", "axis=2", (X,)),
    (bad_reshape, ShapeMismatchError, "cannot reshape array of size 12 into shape (5,-1)",
     "reshape", (X,)),
    (bad_matmul, ShapeMismatchError, "matmul: Input operand 1 has a mismatch", "x @ x", (X,)),
    (bad_concat, ShapeMismatchError, "same number of dimensions", "np.concatenate", (X, V)),
    (bad_unpack, CompileError, "too many values to unpack", "a, b = x", (X,)),
    (try_statement, UnsupportedError, "`try`", "try:", (X,)),
    (class_def, UnsupportedError, "class definition", "class A", (X,)),
    (undefined_name, CompileError, "name 'not_defined_anywhere' is not defined", "not_defined",
     (X,)),
    (item_of_vector, CompileError, "only 0-dimensional arrays", "float(x)", (X,)),
    (bool_subtract, CompileError, "boolean subtract", "(x > 0) - (x > 1)", (X,)),
    (staged_range, CompileError, "range() stop must be an integer scalar", "range(", (X,)),
    (static_assert, CompileError, "need a vector", "assert", (X,)),
]


@pytest.mark.parametrize("fn, cls, message, line, args", CASES, ids=[c[0].__name__ for c in CASES])
def test_rejections(fn, cls, message, line, args):
    err = expect_error(fn, cls, *args, match=message, line_of=line)
    assert err.hint is None or len(err.hint) > 5
    if cls in (DynamicShapeError, SideEffectError, OutParameterError):
        assert err.hint, "rejections of API.md section 4 carry a hint"


def test_specific_hints():
    assert "np.where" in expect_error(nonzero, DynamicShapeError, X).hint
    assert "compiler.random" in expect_error(random_call, UnsupportedError, X).hint
    assert "compiler.Function" in expect_error(unknown_c_function, UnsupportedError, X).hint
    assert "np.cumsum" in expect_error(misspelled, UnsupportedError, X).hint
    assert "copy" in expect_error(arg_write, SideEffectError, X).hint
    assert "np.where" in expect_error(ambiguous_if, TruthValueError, X).hint


def test_error_message_format():
    err = expect_error(index_out_of_range, IndexOutOfBoundsError, X)
    text = str(err)
    first, source, caret, *rest = text.splitlines()
    assert first.startswith(f"{err.filename}:{err.lineno}:")
    assert source.strip() == "return x[5]"
    assert caret.strip().startswith("^~~")
    assert isinstance(err, IndexError) and isinstance(err, TypeError)
    frames = []
    tb = err.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    assert sum("compiler/frontend" in f for f in frames) <= 1     # compiler frames are hidden


def internal_bug(x):
    return x + 1


def test_internal_errors_are_wrapped(monkeypatch):
    import compiler.frontend.ufuncs as U

    def broken(*a, **k):
        raise KeyError("boom")
    monkeypatch.setattr(U, "binary", broken)
    from compiler.frontend import stage
    from tests.frontend.helpers import type_of
    with pytest.raises(InternalCompilerError, match="internal compiler error") as info:
        stage(internal_bug, (type_of(X),), {})
    assert "return x + 1" in str(info.value)
    monkeypatch.setenv("AOTX_FRONTEND_DEBUG", "1")
    with pytest.raises(KeyError):
        stage(internal_bug, (type_of(X),), {})
