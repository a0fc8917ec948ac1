"""Python exceptions raised from compiled code (the ``check`` primitive): shape conditions
that depend on a symbol's run-time value, and run-time indices with boundscheck on.

Every expected exception and message comes from running the same function in NumPy."""
from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest

import compiler
import runtime
from compiler import cli, config, grad, jit, vmap
from compiler.errors import DynamicShapeError
from compiler.frontend import stage
from compiler.ir.interpret import interpret
from compiler.ir.parser import functions_equal, parse
from compiler.ir.printer import format_function
from compiler.ir.types import parse_type as T
from tests.fd import jacobian


def numpy_error(fn, *args):
    """The exception NumPy raises for fn(*args) (the oracle), or None."""
    try:
        fn(*args)
    except (IndexError, ValueError) as e:
        return e
    return None


def assert_same_outcome(kernel, fn, *args, runtime_index=False):
    """kernel(*args) equals fn(*args) run by NumPy, or raises the same class and message
    (for an index known only at run time, the message without the index's value)."""
    err = numpy_error(fn, *args)
    if err is None:
        want, got = fn(*args), kernel(*args)
        assert np.shape(got) == np.shape(want) and np.array_equal(got, want), (got, want)
        return
    with pytest.raises(type(err)) as got_err:
        kernel(*args)
    want = re.sub(r"^index -?\d+ is", "index is", str(err)) if runtime_index else str(err)
    assert str(got_err.value).startswith(want), (str(got_err.value), want)
    assert __file__.rsplit("/", 1)[-1] in str(got_err.value)      # the user's file:line


# ---- zero-size reductions over symbolic dims ----------------------------------------------

def rmax(x):
    return np.max(x)


def rmin(x):
    return x.min()


def rargmax(x):
    return np.argmax(x)


def rargmin(x):
    return np.argmin(x)


def rmax_axis1(x):
    return np.max(x, axis=1)


def rargmin_axis0(x):
    return np.argmin(x, axis=0)


@pytest.mark.parametrize("fn", [rmax, rmin, rargmax, rargmin], ids=lambda f: f.__name__)
def test_zero_size_reductions_raise_as_numpy(fn):
    k = jit(fn, signature="f64[n]")
    for n in (0, 1, 4):
        assert_same_outcome(k, fn, np.linspace(-1.0, 2.0, n) ** 2)


@pytest.mark.parametrize("fn", [rmax_axis1, rargmin_axis0], ids=lambda f: f.__name__)
def test_zero_size_reductions_along_an_axis(fn):
    k = jit(fn, signature="f64[n, m]")
    for shape in [(0, 0), (0, 3), (3, 0), (2, 3)]:
        assert_same_outcome(k, fn, np.arange(np.prod(shape), dtype=np.float64).reshape(shape) % 5)


# ---- np.squeeze on symbolic dims ------------------------------------------------------------

def squeeze0(x):
    return np.squeeze(x, axis=0)


def squeeze_all(x):
    return np.squeeze(x)


def test_squeeze_with_axis_checks_the_symbolic_dim():
    k = jit(squeeze0, signature="f64[n, 3]")
    for n in (1, 2, 0):
        assert_same_outcome(k, squeeze0, np.arange(3.0 * n).reshape(n, 3))


def test_squeeze_without_axis_on_a_symbolic_dim_is_refused():
    with pytest.raises(DynamicShapeError) as e:
        jit(squeeze_all, signature="f64[n, 3]")
    assert e.value.lineno == squeeze_all.__code__.co_firstlineno + 1 and "axis=" in e.value.hint
    k = jit(squeeze_all, signature="f64[4, 1]")         # static sizes decide at compile time
    assert_same_outcome(k, squeeze_all, np.ones((4, 1)))


def rows_of_three(x):
    return x.reshape(-1, 3) * 2.0


def test_reshape_with_minus_one_checks_divisibility():
    k = jit(rows_of_three, signature="f64[n]")
    for n in range(8):
        err = numpy_error(rows_of_three, np.arange(float(n)))
        if err is None:
            assert np.array_equal(k(np.arange(float(n))), rows_of_three(np.arange(float(n))))
        else:
            with pytest.raises(ValueError, match=f"cannot reshape array of size {n} into shape"):
                k(np.arange(float(n)))


# ---- symbolic dims that would go negative ---------------------------------------------------

def diffs(x):
    return x[1:] - x[:-1], x[2:-1], x[1:][1:]


def test_negative_lengths_clamp_to_empty():
    k = jit(diffs, signature="f64[n]")
    for n in range(5):
        x = np.arange(n, dtype=np.float64) ** 2
        for got, want in zip(k(x), diffs(x)):
            assert got.shape == want.shape and np.array_equal(got, want)


def ranges(x):
    return np.arange(1, x.shape[0]), np.arange(x.shape[0] - 2) * 2.0, np.arange(2, x.shape[0], 3)


def zeros_short(x):
    return np.zeros(x.shape[0] - 2) + 1.0, np.eye(x.shape[0] - 1)


def test_symbolic_arange_is_empty_where_numpy_is():
    k = jit(ranges, signature="f64[n]")
    for n in range(6):
        x = np.zeros(n)
        for got, want in zip(k(x), ranges(x)):
            assert got.shape == want.shape and np.array_equal(got, want)


def test_negative_symbolic_shapes_raise_as_numpy():
    k = jit(zeros_short, signature="f64[n]")
    for n in range(5):
        err = numpy_error(zeros_short, np.zeros(n))
        if err is None:
            for got, want in zip(k(np.zeros(n)), zeros_short(np.zeros(n))):
                assert got.shape == want.shape and np.array_equal(got, want)
        else:
            with pytest.raises(type(err), match=str(err)):
                k(np.zeros(n))


def size_bounds(x, y):
    k = y.shape[0]
    return x[:k], x[k:], x[:x.shape[0] - 1], x[1:k:2], x[x.shape[0] // 2:]


def short_by_three(x):
    return x[:x.shape[0] - 3]


def test_slices_with_symbolic_bounds():
    k = jit(size_bounds, signature="f64[n], f64[m]")
    for n in range(6):
        for m in range(7):
            x, y = np.arange(float(n)), np.zeros(m)
            for got, want in zip(k(x, y), size_bounds(x, y)):
                assert got.shape == want.shape and np.array_equal(got, want), (n, m)


def test_a_symbolic_bound_counting_from_the_end_raises():
    k = jit(short_by_three, signature="f64[n]")
    for n in (0, 1, 3, 5):                # NumPy clamps to the same slice: same result
        assert np.array_equal(k(np.arange(float(n))), short_by_three(np.arange(float(n))))
    with pytest.raises(ValueError, match="slice bound -1 is negative at run time"):
        k(np.arange(2.0))                 # NumPy: x[:-1], one element


# ---- static indices and index arrays against symbolic sizes ---------------------------------

def write_far(x):
    y = x.copy()
    y[200_000] = 1.0
    return y


def take_static(x):
    return x[[0, -1, 2, 1, -4]]


@pytest.mark.parametrize("fn", [write_far, take_static], ids=lambda f: f.__name__)
def test_static_indices_on_symbolic_sizes(fn):
    k = jit(fn, signature="f64[n]")
    for n in range(6):
        assert_same_outcome(k, fn, np.arange(n, dtype=np.float64))


def at(x, i):
    return x[i]


def test_runtime_index_into_an_empty_symbolic_axis_raises():
    k = jit(at, signature="f64[n], i64[]")
    assert_same_outcome(k, at, np.zeros(0), np.int64(0), runtime_index=True)
    assert k(np.arange(3.0), np.int64(1)) == 1.0


# ---- boundscheck ----------------------------------------------------------------------------

def put(x, i):
    y = x.copy()
    y[i] = -1.0
    return y


def gather(x, idx):
    return x[idx] * 2.0


CASES = [(at, (np.arange(5.0), np.int64(5))), (at, (np.arange(5.0), np.int64(-6))),
         (put, (np.arange(4.0), np.int64(4))), (gather, (np.arange(5.0), np.array([0, 9, -1])))]


@pytest.mark.parametrize("fn,args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_boundscheck_raises_index_error(fn, args):
    with pytest.raises(IndexError):
        fn(*args)                                        # NumPy raises: the oracle
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size"):
        jit(fn, boundscheck=True)(*args)
    ok = (args[0], np.int64(-1) if isinstance(args[1], np.int64) else np.array([0, 4, -1]))
    assert np.array_equal(jit(fn, boundscheck=True)(*ok), fn(*ok))


def test_without_boundscheck_runtime_indices_clamp():
    assert jit(at)(np.arange(5.0), np.int64(7)) == 4.0    # documented in docs/guide.md


def test_boundscheck_environment_variable_and_cache_key():
    """The same function compiled with checks on and off: two cache entries, never one."""
    x, i = np.arange(5.0), np.int64(7)
    assert jit(at)(x, i) == 4.0                           # stored in the on-disk cache
    with config.options(AOTX_BOUNDSCHECK="1"):
        with pytest.raises(IndexError):
            jit(at)(x, i)
        assert jit(at, boundscheck=False)(x, i) == 4.0
    assert jit(at)(x, i) == 4.0
    with pytest.raises(IndexError):
        jit(at, boundscheck=True)(x, i)


def test_boundscheck_under_vmap_checks_every_element():
    k = jit(vmap(at, in_dims=(None, 0)), boundscheck=True)
    x = np.arange(5.0)
    assert np.array_equal(k(x, np.array([0, 4, -5])), x[[0, 4, -5]])
    with pytest.raises(IndexError):
        k(x, np.array([0, 4, 5]))


def test_checks_pass_through_derivatives():
    def f(x):
        return np.max(x[2:] * x[5])

    g = jit(grad(f), signature="f64[n]")
    x = np.linspace(0.5, 2.0, 7)
    np.testing.assert_allclose(g(x), jacobian(f, (x,), 0), rtol=1e-6, atol=1e-8)
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 4"):
        g(x[:4])
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        jit(grad(lambda x: np.max(x[6:])), signature="f64[n]")(x[:5])


def test_checks_in_vmap_of_a_symbolic_kernel():
    k = jit(vmap(rmax), signature="f64[b, n]")
    assert np.array_equal(k(np.arange(6.0).reshape(2, 3)), [2.0, 5.0])
    with pytest.raises(ValueError, match="zero-size array"):
        k(np.zeros((2, 0)))


# ---- the IR: text round trip and the reference interpreter ----------------------------------

def test_check_in_the_ir_round_trips_and_interprets():
    fn = stage(lambda x: x[3], (T("f64[n]"),), {}).function
    text = format_function(fn)
    assert "check(" in text and "error='IndexError'" in text
    assert functions_equal(parse(text), fn)
    assert interpret(fn, np.arange(5.0))[0] == 3.0
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 2"):
        interpret(fn, np.arange(2.0))


# ---- the same errors from the on-disk cache and from runtime.load ---------------------------

def test_cache_hit_raises_the_same_error():
    def peek(x):
        return x[4] + np.min(x)

    jit(peek, signature="f64[n]")
    before = compiler.diagnostics()["llvm_compilations"]
    k = jit(peek, signature="f64[n]")                    # a cache hit: no LLVM
    assert compiler.diagnostics()["llvm_compilations"] == before
    assert_same_outcome(k, peek, np.arange(3.0))
    assert k(np.arange(6.0)) == 4.0


MODULE = '''import numpy as np
from compiler import jit


@jit(signature="f64[n]")
def edge(x):
    return x[5] + np.max(x)


@jit(signature="f64[n, 3]")
def squeezed(x):
    return np.squeeze(x, axis=0)
'''


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc)")
def test_built_library_raises_the_same_errors(tmp_path):
    (tmp_path / "edges.py").write_text(MODULE)
    assert cli.main(["build", str(tmp_path / "edges.py"), "-o", str(tmp_path / "out")]) == 0
    manifest = json.loads((tmp_path / "out" / "edges.json").read_text())
    assert [e["error"] for e in manifest["kernels"][0]["errors"]] == ["IndexError", "ValueError"]
    lib = runtime.load(tmp_path / "out" / "edges")
    assert lib.edge(np.arange(7.0)) == 11.0
    with pytest.raises(IndexError, match=r"index 5 is out of bounds for axis 0 with size 3 \(at .*edges.py:7\)"):
        lib.edge(np.arange(3.0))
    with pytest.raises(IndexError, match="with size 0"):
        lib.edge(np.zeros(0))
    assert lib.squeezed(np.ones((1, 3))).shape == (3,)
    with pytest.raises(ValueError, match="cannot select an axis to squeeze out"):
        lib.squeezed(np.ones((2, 3)))


def test_error_messages_from_a_manifest_are_filled_not_formatted():
    site = runtime.abi.ErrorSite.from_json({"error": "IndexError", "message": "index {0} {0:>99999} {1.x}",
                                            "dims": ["max(0, n - 1)"], "where": "k.py:3"})
    err = runtime.abi.kernel_error("k", runtime.abi.ERROR_BASE, [site], {"n": 0})
    assert isinstance(err, IndexError) and str(err) == "index 0 {0:>99999} {1.x} (at k.py:3)"
    unknown = runtime.abi.ErrorSite.from_json({"error": "SystemExit", "message": "m"})
    assert type(runtime.abi.kernel_error("k", runtime.abi.ERROR_BASE, [unknown], {})) is RuntimeError
    assert isinstance(runtime.abi.kernel_error("k", 99, [], {}), RuntimeError)
