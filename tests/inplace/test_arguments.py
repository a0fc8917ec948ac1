"""In-place updates of arguments under plain jit: the caller's array holds afterwards what
NumPy leaves in it (the uncompiled function on a copy is the oracle), and the result too.

Aliasing (one array passed twice, overlapping views), strided and read-only arguments,
dtype conversions, the cache, runtime.load of a built library, Kernel.lower, and under
every transform the SideEffectError at the user's line with the caller's array untouched.
"""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import compiler
import runtime
from compiler import grad, hessian, jacfwd, jacrev, jit, jvp, vjp, vmap
from compiler.errors import CompileError, OutParameterError, SideEffectError
from tests.fd import jacobian

RNG = np.random.default_rng(10)


# ---- the constructs: each f(args) -> result, updating some arguments -------------------------

def slice_from_neighbours(x):
    x[1:-1] = x[:-2] + x[2:]
    return x.sum()


def set_element(x, i, v):
    x[i] = v


def add_into(x, y):
    x += y
    return x


def scale(x):
    x *= 2
    return x[0]


def normalize(m, s):
    m /= s
    return m


def fill_ones(u):
    u[:] = 1.0


def through_transpose(m):
    m.T[0] = 7.0                       # the first column
    return m.T


def through_reshape(m):
    flat = m.reshape(-1)
    flat[::5] = -1.0
    return flat.sum()


def through_row(m):
    row = m[1]
    row *= 3.0
    m[2] += row                        # the row view sees the write into m
    return row


def through_flip_and_real(x):
    np.flip(x)[0] = 5.0                # the last element
    x.real[1] = 6.0
    return x


def stencil_steps(u, c):
    for _ in range(3):
        u[1:-1] += c * (u[:-2] - 2 * u[1:-1] + u[2:])
    return u[1:-1].max()


def in_a_branch(x):
    if x.sum() > 0:
        x[0] = 100.0
    else:
        x[-1] = -100.0
    return x.mean()


def pytree_argument(params):
    params["w"] -= 0.1 * params["g"]
    return params["w"].sum()


def view_then_assign(x, y):
    inner = x[1:-1, 1:-1]
    inner[...] = y
    return inner.sum()


def index_with_staged_int(x, i):
    x[i, :] = x[i, :] * 10.0
    return x


CASES = {
    "slice": (slice_from_neighbours, lambda: (RNG.normal(size=7),)),
    "element_static": (set_element, lambda: (RNG.normal(size=5), 2, 9.0)),
    "element_staged": (set_element, lambda: (RNG.normal(size=5), np.int64(-1), 9.0)),
    "add": (add_into, lambda: (RNG.normal(size=(3, 4)), RNG.normal(size=4))),
    "mul": (scale, lambda: (RNG.normal(size=6),)),
    "div": (normalize, lambda: (RNG.normal(size=(2, 3)), 4.0)),
    "fill": (fill_ones, lambda: (RNG.normal(size=(2, 3)),)),
    "transpose": (through_transpose, lambda: (RNG.normal(size=(3, 4)),)),
    "reshape": (through_reshape, lambda: (RNG.normal(size=(3, 4)),)),
    "row_view": (through_row, lambda: (RNG.normal(size=(3, 4)),)),
    "flip_real": (through_flip_and_real, lambda: (RNG.normal(size=5),)),
    "stencil": (stencil_steps, lambda: (RNG.normal(size=9), 0.2)),
    "branch": (in_a_branch, lambda: (RNG.normal(size=4) + 1.0,)),
    "branch_other": (in_a_branch, lambda: (RNG.normal(size=4) - 1.0,)),
    "pytree": (pytree_argument, lambda: ({"w": RNG.normal(size=3), "g": RNG.normal(size=3)},)),
    "view_assign": (view_then_assign, lambda: (RNG.normal(size=(4, 5)), RNG.normal(size=(2, 3)))),
    "int_rows": (index_with_staged_int, lambda: (RNG.normal(size=(3, 2)), np.int64(1))),
}


def copies(args):
    return [{k: v.copy() for k, v in a.items()} if isinstance(a, dict)
            else a.copy() if isinstance(a, np.ndarray) else a for a in args]


def assert_same_tree(got, want):
    if isinstance(want, dict):
        assert set(got) == set(want)
        for k in want:
            assert_same_tree(got[k], want[k])
    elif want is None:
        assert got is None
    else:
        got, want = np.asarray(got), np.asarray(want)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("case", sorted(CASES))
def test_compiled_update_equals_numpy(case):
    fn, make = CASES[case]
    args = make()
    expect_args, got_args = copies(args), copies(args)
    want = fn(*expect_args)
    got = jit(fn)(*got_args)
    assert_same_tree(got, want)
    for g, w in zip(got_args, expect_args):
        assert_same_tree(g, w)


def bump_scalars(x, n):
    x += n
    n *= 2
    return x * n


@pytest.mark.parametrize("x, n", [(np.array(1.5), np.array(3)), (np.float64(1.5), np.int64(3)),
                                  (1.5, np.array(3)), (np.array(1.5), np.int64(3))],
                         ids=["arrays", "numpy scalars", "float and array", "array and scalar"])
def test_zero_d_arguments_update_as_numpy(x, n):
    """`x += n` on a 0-d ndarray argument updates the caller's array, as NumPy does; on a
    NumPy scalar or a Python number it rebinds (they are immutable), also as NumPy does."""
    want_args, got_args, signed_args = copies([x, n]), copies([x, n]), copies([x, n])
    want = bump_scalars(*want_args)
    assert_same_tree(jit(bump_scalars)(*got_args), want)
    assert_same_tree(jit(bump_scalars, signature="f64, i64")(*signed_args), want)
    for got in (got_args, signed_args):
        for g, w in zip(got, want_args):
            assert type(g) is type(w)
            assert_same_tree(g, w)


def test_signature_kernel_updates_with_a_loop_over_a_symbolic_size():
    @jit(signature="f64[n]")
    def running_sum(x):
        for i in range(1, x.shape[0]):
            x[i] += x[i - 1]

    for n in (1, 5, 40):
        x = RNG.normal(size=n)
        want = np.cumsum(x)
        assert running_sum(x) is None
        np.testing.assert_allclose(x, want, rtol=1e-12)


def row_accumulates(x):
    row = x[0]
    for i in range(x.shape[0]):                  # a compiled loop (symbolic trip count)
        row += x[i]                              # the view, carried as the array it is
    return row * 1.0


def view_seen_after_loop(x):
    v = x[0:2]
    for _ in range(x.shape[0]):
        x += 1.0
    return v * 1.0


def doubling_while(x):
    v = x[:, 1]
    while x.max() < 1000.0:                      # a data-dependent while
        x *= 2.0
    return v + 0.0


@pytest.mark.parametrize("fn", [row_accumulates, view_seen_after_loop, doubling_while])
def test_views_and_arguments_through_compiled_loops(fn):
    kernel = jit(fn, signature="f64[n, 3]")
    for n in (1, 4):
        want_x = np.arange(3.0 * n).reshape(n, 3) + 1.0
        got_x = want_x.copy()
        want = fn(want_x)
        np.testing.assert_allclose(kernel(got_x), want, rtol=1e-14)
        np.testing.assert_allclose(got_x, want_x, rtol=1e-14)


# ---- strided, aliased, read-only, converted arguments ------------------------------------------

def test_strided_arguments_are_updated_in_place():
    base = RNG.normal(size=(6, 8))
    want = base.copy()
    slice_from_neighbours(want[::2, 1])
    through_row(want[:, 1::2].T)
    got = base.copy()
    jit(slice_from_neighbours)(got[::2, 1])
    jit(through_row)(got[:, 1::2].T)
    np.testing.assert_allclose(got, want, rtol=1e-13)


def through_unit_axes(x):
    x[None][0, 1] = 5.0                          # a reshape that only adds an axis: always a view


def test_a_write_through_a_reshape_needs_a_contiguous_argument():
    base = RNG.normal(size=(4, 6))
    numpy_copy = base.copy()
    through_reshape(numpy_copy.T)                # NumPy: the reshape of x.T is a copy
    np.testing.assert_array_equal(numpy_copy, base)
    with pytest.raises(ValueError, match="through a reshape.*not; pass np.ascontiguousarray"):
        jit(through_reshape)(base.T)             # refused rather than written
    np.testing.assert_array_equal(base, numpy_copy)
    want = base.copy()
    through_unit_axes(want[::2, 0])
    jit(through_unit_axes)(base[::2, 0])
    np.testing.assert_array_equal(base, want)


def read_after_write(x, y):
    x += y
    return y * 1.0                     # y is x when the same array is passed twice


def test_the_same_array_twice_is_one_array():
    kernel = jit(read_after_write)
    a = np.arange(4.0)
    want_a = a.copy()
    want = read_after_write(want_a, want_a)
    got = kernel(a, a)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(a, want_a)
    b, c = np.arange(4.0), np.ones(4)          # distinct arrays: their own specialization
    np.testing.assert_array_equal(kernel(b, c), np.ones(4))
    np.testing.assert_array_equal(b, np.arange(4.0) + 1)
    d = np.arange(4.0)                          # the fast path must not serve the aliased call
    kernel(d, d)
    np.testing.assert_array_equal(d, np.arange(4.0) * 2)


def write_then_read(x, y):
    x[1:] = y[:-1] * 2.0
    y += 1.0
    return x.sum(), y * 1.0


OVERLAPS = {
    "shifted": lambda a: (a[1:], a[:-1]),
    "strided": lambda a: (a[::2], a[:5]),
    "reversed": lambda a: (a[2:7], a[:5][::-1]),
    "column_and_row": lambda a: (a.reshape(2, 5).T[:, 1], a[3:8]),
}


@pytest.mark.parametrize("layout", sorted(OVERLAPS))
@pytest.mark.parametrize("fn", [read_after_write, write_then_read])
def test_overlapping_views_behave_as_in_numpy(fn, layout):
    want_a, got_a = np.arange(10.0), np.arange(10.0)
    want = fn(*OVERLAPS[layout](want_a))
    got = jit(fn)(*OVERLAPS[layout](got_a))
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        assert_same_tree(g, w)
    np.testing.assert_array_equal(got_a, want_a)


def test_overlapping_arguments_of_a_signature_kernel_are_a_clear_error():
    a = np.arange(6.0)
    with pytest.raises(ValueError, match="'x' and 'y' share memory"):
        jit(read_after_write, signature="f64[n], f64[n]")(a[1:], a[:-1])
    np.testing.assert_array_equal(a, np.arange(6.0))


def test_read_only_argument_is_a_value_error_naming_it():
    x = np.arange(5.0)
    x.setflags(write=False)
    with pytest.raises(ValueError, match="argument 'x' is read-only"):
        jit(slice_from_neighbours)(x)
    np.testing.assert_array_equal(x, np.arange(5.0))
    with pytest.raises(ValueError):             # NumPy agrees
        slice_from_neighbours(x)


def bump(x):
    x += 1.5


def test_casting_error_as_numpy():
    x = np.arange(3)
    with pytest.raises(TypeError) as numpy_error:
        bump(x)
    with pytest.raises(CompileError, match="Cannot cast ufunc 'add' output") as ours:
        jit(bump)(x)
    assert isinstance(ours.value, TypeError) and isinstance(numpy_error.value, TypeError)
    np.testing.assert_array_equal(x, np.arange(3))
    fixed = jit(bump, signature="f64[n]")          # an int array for an f64 kernel: refused
    with pytest.raises(TypeError, match="updated in place by the kernel as float64"):
        fixed(np.arange(3, dtype=np.int32))
    y = np.arange(3.0)
    fixed(y)
    np.testing.assert_array_equal(y, np.arange(3.0) + 1.5)


def test_a_kernel_inlined_in_compiled_code_writes_into_its_callers_array():
    inner = jit(add_into)

    def outer(a, b):
        c = b * 2.0
        inner(c, a)                    # a local
        inner(a, c)                    # an argument of outer
        return c

    a, b = RNG.normal(size=3), RNG.normal(size=3)
    want_a = a.copy()
    want = outer(want_a, b.copy())
    got = jit(outer)(a, b)
    np.testing.assert_allclose(got, want, rtol=1e-14)
    np.testing.assert_allclose(a, want_a, rtol=1e-14)


def test_lower_shows_the_written_argument_as_a_result():
    low = jit(slice_from_neighbours).lower(np.zeros(5))
    assert "update_slice" in low.ir
    header = low.ir_optimized.splitlines()[0]
    assert header.endswith("-> (f64[], f64[5]) {"), header     # the sum, then x's new value


# ---- the cache and built libraries ------------------------------------------------------------

def test_a_cached_kernel_writes_back_too():
    first = jit(stencil_steps)
    x = RNG.normal(size=12)
    want = x.copy()
    stencil_steps(want, 0.1)
    a = x.copy()
    first(a, 0.1)
    hits = compiler.diagnostics()["cache_hits"]
    second = jit(stencil_steps)              # a new Kernel: loaded from the disk cache
    b = x.copy()
    second(b, 0.1)
    assert compiler.diagnostics()["cache_hits"] == hits + 1
    np.testing.assert_allclose(a, want, rtol=1e-13)
    np.testing.assert_allclose(b, want, rtol=1e-13)


BUILT = '''
import numpy as np
from compiler import jit


@jit(signature="f64[n], f64")
def diffuse(u, c):
    u[1:-1] += c * (u[:-2] - 2 * u[1:-1] + u[2:])
    return u.sum()


@jit(signature="f64[n, m]")
def center(m):
    m -= m.mean(axis=0)
'''


def test_built_library_updates_the_callers_array(tmp_path):
    from compiler import cli
    (tmp_path / "stencils.py").write_text(BUILT)
    assert cli.main(["build", str(tmp_path / "stencils.py"), "-o", str(tmp_path / "o")]) == 0
    manifest = json.loads((tmp_path / "o" / "stencils.json").read_text())
    kernels = {k["name"]: k for k in manifest["kernels"]}
    assert kernels["diffuse"]["updates"] == [0] and kernels["center"]["updates"] == [0]
    assert kernels["diffuse"]["outputs"][-1]["name"] == "u_updated"
    header = (tmp_path / "o" / "stencils.h").read_text()
    assert "DIFFUSE_NUM_UPDATES 1" in header and "CENTER_NUM_UPDATES 1" in header
    assert "the new value of inputs[0] (u)" in header
    sys.modules.pop("stencils", None)
    lib = runtime.load(tmp_path / "o" / "stencils")
    u = RNG.normal(size=10)
    want_u = u.copy()
    want_u[1:-1] += 0.2 * (want_u[:-2] - 2 * want_u[1:-1] + want_u[2:])
    total = lib.diffuse(u[::1], 0.2)
    np.testing.assert_allclose(u, want_u, rtol=1e-13)
    np.testing.assert_allclose(total, want_u.sum(), rtol=1e-13)
    m = RNG.normal(size=(4, 6))
    strided = m[:, ::2]
    want_m = m.copy()
    want_m[:, ::2] -= want_m[:, ::2].mean(axis=0)
    assert lib.center(strided) is None
    np.testing.assert_allclose(m, want_m, rtol=1e-13, atol=1e-15)
    ro = np.ones(3)
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="'u' is read-only"):
        lib.diffuse(ro, 0.1)


# ---- the transforms: a write into an argument is a SideEffectError at the line ----------------

def writes_argument(x):
    x[1:] += x[:-1]
    return (x * x).sum()


def writes_local_copy(x):
    y = x.copy()
    y[1:] += x[:-1]
    y *= 2
    return (y * y).sum()


TRANSFORMS = {
    "vmap": lambda f, x: vmap(f)(np.stack([x, x])),
    "grad": lambda f, x: grad(f)(x),
    "jacrev": lambda f, x: jacrev(f)(x),
    "jacfwd": lambda f, x: jacfwd(f)(x),
    "hessian": lambda f, x: hessian(f)(x),
    "jvp": lambda f, x: jvp(f, (x,), (np.ones_like(x),)),
    "vjp": lambda f, x: vjp(f, x)[1](1.0),
    "jit_of_vmap": lambda f, x: jit(vmap(f))(np.stack([x, x])),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transforms_refuse_writes_into_arguments(name):
    x = RNG.normal(size=4)
    before = x.copy()
    with pytest.raises(SideEffectError) as info:
        TRANSFORMS[name](writes_argument, x)
    err = info.value
    assert err.lineno == writes_argument.__code__.co_firstlineno + 1
    assert "y = x.copy()" in err.hint
    np.testing.assert_array_equal(x, before)


def test_functional_updates_of_local_copies_work_under_every_transform():
    x = RNG.normal(size=4)
    g = grad(writes_local_copy)(x)
    np.testing.assert_allclose(g, jacobian(writes_local_copy, (x,)), rtol=1e-7)
    xs = RNG.normal(size=(3, 4))
    np.testing.assert_allclose(vmap(writes_local_copy)(xs), [writes_local_copy(r) for r in xs],
                               rtol=1e-13)
    t = RNG.normal(size=4)
    _, tangent = jvp(writes_local_copy, (x,), (t,))
    np.testing.assert_allclose(tangent, jacobian(writes_local_copy, (x,)) @ t, rtol=1e-7)


def takes_out(x, y):
    np.add(x, 1.0, out=y)
    return y


@pytest.mark.parametrize("transform", [jit, vmap, grad])
def test_out_parameter_stays_refused(transform):
    with pytest.raises(OutParameterError):
        transform(lambda x: takes_out(x, np.zeros(3)).sum())(np.ones(3) if transform is not vmap
                                                                else np.ones((2, 3)))
