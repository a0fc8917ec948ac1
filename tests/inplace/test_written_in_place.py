"""Updated arguments written where they live (compiler/backend/inplace.py): when the new value
of an argument can be computed in the argument's own buffer, the kernel writes it there and
nothing is copied back; when it cannot (a shifted, reversed, transposed or reduced read of the
old value), it keeps the copy. Oracle: NumPy doing the same update on a copy."""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import runtime
from compiler import grad, jit, vmap
from runtime.loader import NativeKernel

RNG = np.random.default_rng(14)


def axpy(a, b, c, s):
    a[:] = b + s * c


def step(u, dt):
    u += dt * np.sin(u)


def scale_shift(x, y):
    x *= 2
    x += y                     # y broadcasts along the rows of x


def rows(x):
    for i in range(x.shape[0]):
        x[i] = x[i] * 2 + 1


def rows_from_previous(x):
    for i in range(1, x.shape[0]):
        x[i] = x[i] + x[i - 1]


def plus_roll(u):
    u += np.roll(u, 1)


def plus_transpose(m):
    m += m.T


def reversed_twice(u):
    u[:] = u[::-1] * 2


def minus_sum(u):
    u -= u.sum()


def minus_first(u):
    u -= u[0]


def stencil(u, c):
    u[1:-1] += c * (u[:-2] - 2 * u[1:-1] + u[2:])


def shift_right(u):
    u[1:] = u[:-1]


def zero_the_max(u):
    u[np.argmax(u)] = 0.0
    u[::3] *= 2


def update_and_return_old(u):
    old = u.copy()
    u += 1
    return old


KERNELS = {f.__name__: jit(f) for f in (axpy, step, scale_shift, rows, rows_from_previous, plus_roll,
                                         plus_transpose, reversed_twice, minus_sum, minus_first,
                                         update_and_return_old, stencil, shift_right, zero_the_max)}


def in_place(kernel) -> set[tuple[int, ...]]:
    """The in-place arguments of each specialization the kernel compiled (an internal, read to
    check that the safe cases do take the fast path)."""
    return {tuple(spec.native.in_place) for spec in kernel._specializations.values()
            if isinstance(spec.native, NativeKernel)}


def run_both(name, *args):
    """The compiled kernel and NumPy on copies of `args`, twice (the checked path, then the
    native entry); the arguments after the compiled calls and NumPy's, and the results."""
    kernel = KERNELS[name]
    fn = kernel.__wrapped__
    want = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    want_result = fn(*want)
    for _ in range(2):
        got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        result = kernel(*got)
        for g, w in zip(got, want):
            if isinstance(w, np.ndarray):
                np.testing.assert_allclose(g, w, rtol=1e-6 if g.dtype == np.float32 else 1e-13)
        if want_result is not None:
            np.testing.assert_allclose(result, want_result, rtol=1e-13)
    return kernel


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_elementwise_updates_are_written_in_place(dtype):
    n = 37
    a, b, c = (RNG.normal(size=n).astype(dtype) for _ in range(3))
    assert in_place(run_both("axpy", a, b, c, 1.5)) == {(0,)}
    assert in_place(run_both("step", a, 0.25)) == {(0,)}
    x, y = RNG.normal(size=(5, 7)).astype(dtype), RNG.normal(size=7).astype(dtype)
    assert (0,) in in_place(run_both("scale_shift", x, y))


def test_integer_updates_and_the_row_loop_are_written_in_place():
    x, y = RNG.integers(-9, 9, size=(4, 6)), RNG.integers(-9, 9, size=6)
    assert (0,) in in_place(run_both("scale_shift", x, y))
    assert (0,) in in_place(run_both("rows", RNG.normal(size=(6, 5))))
    assert (0,) in in_place(run_both("rows", RNG.integers(-9, 9, size=(40, 3))))


@pytest.mark.parametrize("name", ["rows_from_previous", "plus_roll", "reversed_twice",
                                  "minus_sum", "minus_first", "update_and_return_old",
                                  "shift_right", "zero_the_max"])
def test_reads_of_other_elements_of_the_old_value_give_numpys_result(name):
    run_both(name, RNG.normal(size=(9, 4)) if name == "rows_from_previous" else RNG.normal(size=11))


def test_slice_updates_reading_shifted_windows_are_written_in_place():
    """``u[1:-1] += ...u[:-2]...u[2:]``: the new window is computed first, then written where
    u lives (no output, no copy back)."""
    for dtype in (np.float64, np.float32):
        assert in_place(run_both("stencil", RNG.normal(size=23).astype(dtype), 0.25)) == {(0,)}


def test_a_transposed_read_keeps_the_copy():
    kernel = run_both("plus_transpose", RNG.normal(size=(6, 6)))
    assert in_place(kernel) == {()}               # writing m in place would read updated m.T


def test_arguments_that_alias_each_other_give_numpys_result():
    x, c = RNG.normal(size=12), RNG.normal(size=12)
    for slots in [(0, 0, 1), (0, 1, 0), (0, 0, 0)]:    # x passed twice or thrice
        mine, ref = x.copy(), x.copy()
        KERNELS["axpy"](*[(mine, c)[k] for k in slots], 0.5)
        axpy(*[(ref, c)[k] for k in slots], 0.5)
        np.testing.assert_allclose(mine, ref, rtol=1e-13)
    mine, ref = x.copy(), x.copy()
    KERNELS["axpy"](mine[1:], mine[:-1], c[1:], 0.5)     # overlapping views of one array
    axpy(ref[1:], ref[:-1], c[1:], 0.5)
    np.testing.assert_allclose(mine, ref, rtol=1e-13)
    mine, ref = x.copy(), x.copy()
    KERNELS["axpy"](mine[:-1], mine[1:], c[1:], 0.5)
    axpy(ref[:-1], ref[1:], c[1:], 0.5)
    np.testing.assert_allclose(mine, ref, rtol=1e-13)


def test_strided_byteswapped_and_zero_d_arguments_take_the_copy_path():
    base = RNG.normal(size=(6, 8))
    ref = base.copy()
    KERNELS["step"](base[:, 2], 0.5)              # a column: non-contiguous
    step(ref[:, 2], 0.5)
    np.testing.assert_allclose(base, ref, rtol=1e-13)
    swapped = RNG.normal(size=8).astype(">f8")
    want = swapped.astype(np.float64)
    KERNELS["step"](swapped, 0.5)
    step(want, 0.5)
    np.testing.assert_allclose(swapped, want, rtol=1e-13)
    zero_d, want0 = np.array(0.75), np.array(0.75)
    for _ in range(2):
        KERNELS["step"](zero_d, 0.5)
        step(want0, 0.5)
    np.testing.assert_allclose(zero_d, want0, rtol=1e-13)
    KERNELS["step"](0.75, 0.5)                    # a Python float: rebound, nothing to update


def test_a_caller_passing_another_output_gets_the_new_value_there():
    """The ABI's promise to callers that do not know about "in_place": a separate output
    buffer receives the new value (copied at the end of the call)."""
    x = RNG.normal(size=10)
    KERNELS["step"](x.copy(), 0.5)
    (spec,) = [s for s in KERNELS["step"]._specializations.values()
               if isinstance(s.native, NativeKernel) and s.native.inputs[0].dims == (10,)]
    native = spec.native
    assert native.in_place == (0,)
    unaware = NativeKernel(native.name, native.address, native.inputs, native.outputs, native.symbols,
                           keepalive=native._keepalive, updates=native.updates)
    got, want = x.copy(), x.copy()
    unaware(got, 0.5)
    step(want, 0.5)
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_transforms_are_untouched():
    def local(u, dt):
        v = u.copy()
        v += dt * np.sin(v)
        return v.sum()
    x = RNG.normal(size=(3, 5))
    np.testing.assert_allclose(vmap(jit(local), in_dims=(0, None))(x, 0.5),
                               [local(r, 0.5) for r in x], rtol=1e-13)
    np.testing.assert_allclose(grad(local)(x[0], 0.5), 1 + 0.5 * np.cos(x[0]), rtol=1e-13)


BUILT = '''
import numpy as np
from compiler import jit


@jit(signature="f64[n], f64[n], f64[n], f64")
def axpy(a, b, c, s):
    a[:] = b + s * c


@jit(signature="f64[n, n]")
def plus_transpose(m):
    m += m.T
'''


def test_built_library_writes_in_place(tmp_path):
    from compiler import cli
    (tmp_path / "updating.py").write_text(BUILT)
    assert cli.main(["build", str(tmp_path / "updating.py"), "-o", str(tmp_path / "o")]) == 0
    manifest = json.loads((tmp_path / "o" / "updating.json").read_text())
    kernels = {k["name"]: k for k in manifest["kernels"]}
    assert kernels["axpy"]["in_place"] == [0] and kernels["plus_transpose"]["in_place"] == []
    assert "written where it lives: pass inputs[0] here too" in (tmp_path / "o" / "updating.h").read_text()
    sys.modules.pop("updating", None)
    lib = runtime.load(tmp_path / "o" / "updating")
    a, b, c = (RNG.normal(size=9) for _ in range(3))
    for view in (lambda v: v, lambda v: v, lambda v: v[::2]):   # checked path, entry, strided
        got, want = a.copy(), a.copy()
        lib.axpy(view(got), b[:view(got).size], c[:view(got).size], 2.0)
        axpy(view(want), b[:view(want).size], c[:view(want).size], 2.0)
        np.testing.assert_allclose(got, want, rtol=1e-13)
    native = lib.axpy.native                     # a caller passing its own output buffer
    unaware = NativeKernel(native.name, native.address, native.inputs, native.outputs, native.symbols,
                           keepalive=native._keepalive, updates=native.updates)
    got, want = a.copy(), a.copy()
    unaware(got, b, c, 2.0)
    axpy(want, b, c, 2.0)
    np.testing.assert_allclose(got, want, rtol=1e-13)
    m = RNG.normal(size=(5, 5))
    want = m.copy()
    lib.plus_transpose(m)
    plus_transpose(want)
    np.testing.assert_allclose(m, want, rtol=1e-13)
    with pytest.raises(ValueError, match="share memory"):
        lib.axpy(a[1:], a[:-1], c[1:], 2.0)


def bump_and_return(u, v):
    u += v
    return u


def test_an_update_that_is_also_returned_is_written_in_place():
    kernel = jit(bump_and_return)
    u, v = RNG.normal(size=(3, 4)), RNG.normal(size=4)
    for _ in range(2):                            # the checked path, then the native entry
        got, want = u.copy(), u.copy()
        result = kernel(got, v)
        want_result = bump_and_return(want, v)
        np.testing.assert_allclose(got, want, rtol=1e-13)
        np.testing.assert_allclose(result, want_result, rtol=1e-13)
        assert not np.shares_memory(result, got)  # a new array, as every kernel result
    assert in_place(kernel) == {(0,)}
