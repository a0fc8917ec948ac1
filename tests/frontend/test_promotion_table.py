"""NumPy 2 promotion (NEP 50) of every pair of the fourteen dtypes, and of every dtype with
Python bool, int and float scalars, compiled and compared with NumPy itself.

Many results come out of one kernel: one function computes ``x_i OP x_j`` for every pair
(one array argument per dtype), so the whole table compiles once per operator; the
scalar table is one kernel of literals and one of run-time Python floats. Each result
must have NumPy's dtype and NumPy's values (exact: the values are small integers and
halves, exactly representable in every dtype, so every dtype's arithmetic is exact).
A Python int that does not fit the array's dtype is NumPy 2's OverflowError
(IntegerOverflowError, an OverflowError), except in comparisons, where NumPy 2 compares
the values.
"""
from __future__ import annotations

import importlib.util
import itertools
import sys
import warnings

import numpy as np
import pytest

from compiler import jit
from compiler.errors import CompileError, IntegerOverflowError
from compiler.ir.types import DTYPES

NAMES = [np.dtype(d).name for d in DTYPES]
VALUES = {d: np.array([1, 0, 3, 2, 1, 1], dtype=d) for d in DTYPES}     # fits every dtype
PAIRS = list(itertools.product(range(len(DTYPES)), repeat=2))

OPS = {"add": lambda a, b: a + b, "lt": lambda a, b: a < b, "maximum": lambda a, b: np.maximum(a, b),
       "truediv": lambda a, b: a / (b + 1)}


def _table(op):
    def table(*xs):
        return tuple(op(xs[i], xs[j]) for i, j in PAIRS)
    return table


def _equal(g, w):
    w = np.asarray(w)
    return np.array_equal(g, w, equal_nan=w.dtype.kind == "f")


def _numpy(fn, *args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


@pytest.mark.parametrize("name", list(OPS))
def test_every_dtype_pair(name):
    """144 pairs in one kernel: dtype and values as NumPy."""
    fn = _table(OPS[name])
    args = [VALUES[d] for d in DTYPES]
    got, want = jit(fn)(*args), _numpy(fn, *args)
    assert len(got) == len(want) == len(PAIRS)
    bad = [f"{NAMES[i]} {name} {NAMES[j]}: {g.dtype} {g.tolist()}, NumPy {w.dtype} {w.tolist()}"
           for (i, j), g, w in zip(PAIRS, got, want)
           if g.dtype != w.dtype or not _equal(g, w)]
    assert not bad, "\n".join(bad[:20])


SCALARS = ["True", "2", "-1", "0", "-0.5", "127", "2j"]


def _scalar_kernel(literals, ops, tmp_path):
    """One function of the fourteen arrays returning x OP s and s OP x for every literal s
    (written to a module file: the compiler reads the source)."""
    lines = ["def f(" + ", ".join(f"x{i}" for i in range(len(DTYPES))) + "):", "    return ("]
    for i, s, op in _defined(literals, ops):
        lines.append(f"        x{i} {op} {s}, {s} {op} x{i},")
    lines.append("    )")
    path = tmp_path / f"promotion_literals_{abs(hash(ops))}.py"
    path.write_text("import numpy as np\n\n\n" + "\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module.f


def _defined(literals, ops):
    """(dtype index, literal, operator) for which NumPy defines both `x OP s` and `s OP x`
    (`//` of complex values is not)."""
    out = []
    for i, d in enumerate(DTYPES):
        for s in literals:
            for op in ops:
                try:
                    eval(f"x {op} {s}, {s} {op} x", {"x": VALUES[d]})
                except TypeError:
                    continue
                out.append((i, s, op))
    return out


@pytest.mark.parametrize("ops", [("+", "<"), ("*", "//")])
def test_every_dtype_with_python_scalars(ops, tmp_path):
    """Python bool, int and float literals on either side of every dtype, in one kernel
    (only the literals that fit every dtype: the others raise, below)."""
    fits = [s for s in SCALARS if s != "-1"]             # -1 does not fit the unsigned dtypes
    fn = _scalar_kernel(fits, ops, tmp_path)
    args = [VALUES[d] for d in DTYPES]
    got, want = jit(fn)(*args), _numpy(fn, *args)
    labels = [f"{NAMES[i]} {op} {s}" for i, s, op in _defined(fits, ops) for _ in (0, 1)]
    bad = [f"{lab}: {g.dtype} {g.tolist()}, NumPy {w.dtype} {np.asarray(w).tolist()}"
           for lab, g, w in zip(labels, got, want)
           if g.dtype != np.asarray(w).dtype or not _equal(g, w)]
    assert not bad, "\n".join(bad[:20])


def test_run_time_python_floats_are_weak():
    """A Python float argument (a run-time value) takes the array's float dtype, or float64
    for integers and bool: one kernel over the fourteen dtypes."""
    def fn(s, *xs):
        return tuple(x * s for x in xs) + tuple(s - x for x in xs)
    args = [VALUES[d] for d in DTYPES]
    got, want = jit(fn)(2.5, *args), _numpy(fn, 2.5, *args)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and np.array_equal(g, w), (NAMES[k % len(DTYPES)], g, w)


INT_DTYPES = [d for d in DTYPES if d.kind in "iu"]


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: d.name)
def test_python_int_out_of_range_is_numpys_overflow_error(dtype):
    info = np.iinfo(dtype)
    x = np.array([1, 2], dtype)
    for big in (info.max + 1, info.min - 1):
        if not -2**63 <= big < 2**64:
            continue
        with pytest.raises(OverflowError):
            _numpy(lambda a: a + big, x)                     # the oracle raises...
        with pytest.raises(IntegerOverflowError, match=f"Python integer {big} out of bounds for {dtype.name}") as e:
            jit(lambda a: a + big)(x)                        # ...and so does the compiler
        assert isinstance(e.value, OverflowError) and isinstance(e.value, CompileError)
        assert e.value.hint                                  # cast first (or, beyond int64, a float)
        # NumPy 2 compares an out-of-range Python int by value
        for cmp in (lambda a: a < big, lambda a: a == big, lambda a: big >= a, lambda a: a != big):
            want = _numpy(cmp, x)
            got = jit(cmp)(x)
            assert got.dtype == want.dtype and np.array_equal(got, want), (big, got, want)


def test_bool_square_is_int8_and_small_int_reductions_widen():
    b = np.array([True, False])
    assert jit(lambda b: b ** 2)(b).dtype == (b ** 2).dtype == np.int8
    for d in INT_DTYPES + [np.dtype(np.bool_), np.dtype(np.float16)]:
        x = np.array([100, 100, 100], d) if d != np.bool_ else np.array([True, True])
        fn = lambda x: (np.sum(x), np.prod(x), np.mean(x), np.cumsum(x), x.max())   # noqa: E731
        got, want = jit(fn)(x), _numpy(fn, x)
        for g, w in zip(got, want):
            w = np.asarray(w)
            assert g.dtype == w.dtype and np.array_equal(g, w), (d, g, w)
