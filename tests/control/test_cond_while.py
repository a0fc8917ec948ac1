"""compiler.cond, compiler.switch and compiler.while_loop: compiled, batched, differentiated.

Oracles: the same computation written as plain Python (``if``, ``while``) on NumPy
values, a Python loop over the batch for vmap, finite differences of the uncompiled
function for derivatives, and the IR reference interpreter for the per-element cond.
"""
from __future__ import annotations

import inspect
import os

import numpy as np
import pytest

import compiler
from compiler import grad, hessian, jacfwd, jit, jvp, vmap
from compiler.errors import CompileError, DataDependentControlFlowError, SideEffectError
from tests import fd
from tests.ops import internal


def close(a, b, rtol=1e-12, atol=1e-12):
    """Leaf by leaf (tuples are pytrees; a list is one array)."""
    a, b = (np.asarray(v) if isinstance(v, list) else v for v in (a, b))
    assert len(fd.leaves(a)) == len(fd.leaves(b))
    for x, y in zip(fd.leaves(a), fd.leaves(b)):
        np.testing.assert_allclose(np.asarray(x, np.float64), np.asarray(y, np.float64), rtol=rtol, atol=atol)
        assert np.shape(x) == np.shape(y)


def line_of(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


def assert_at(e: CompileError, fn, text: str) -> None:
    assert os.path.basename(e.filename) == os.path.basename(__file__), e.filename
    assert e.lineno == line_of(fn, text), str(e)
    assert e.hint, str(e)


# ---- the functions, compiled, against the Python they stand for -----------------------------

def affine_or_swap(p, state, scale):
    """cond on pytrees: a dict and a tuple in, a tuple out."""
    def yes(s, k):
        return (s["a"] * k + s["b"], s["b"].sum())

    def no(s, k):
        return (s["b"] - s["a"], -k * s["a"].sum())
    return compiler.cond(p > 0.5, yes, no, state, scale)


def affine_or_swap_python(p, state, scale):
    if p > 0.5:
        return (state["a"] * scale + state["b"], state["b"].sum())
    return (state["b"] - state["a"], -scale * state["a"].sum())


affine_or_swap_jit = jit(affine_or_swap)


@pytest.mark.parametrize("p", [0.2, 0.9])
def test_cond_pytrees_vs_python(p):
    rng = np.random.default_rng(0)
    state = {"a": rng.normal(size=5), "b": rng.normal(size=5)}
    got = affine_or_swap_jit(np.float64(p), state, 1.5)
    close(got, affine_or_swap_python(p, state, 1.5))


def piecewise(i, x):
    return compiler.switch(i, [lambda v: v + 1.0, lambda v: v * v, lambda v: np.sin(v)], x)


def piecewise_python(i, x):
    i = min(max(int(i), 0), 2)
    return [x + 1.0, x * x, np.sin(x)][i]


piecewise_jit = jit(piecewise)


@pytest.mark.parametrize("i", [-3, 0, 1, 2, 7])
def test_switch_vs_python_with_clamping(i):
    x = np.linspace(-1.0, 2.0, 6)
    close(piecewise_jit(np.int64(i), x), piecewise_python(i, x))


def collatz_steps(n):
    """while_loop with a tuple carry: an int that changes and a counter (weak Python int)."""
    def body(c):
        m, k = c
        return compiler.cond(m % 2 == 0, lambda m: m // 2, lambda m: 3 * m + 1, m), k + 1
    return compiler.while_loop(lambda c: c[0] != 1, body, (n, 0))


def collatz_python(n):
    k = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        k += 1
    return n, k


collatz_jit = jit(collatz_steps)


@pytest.mark.parametrize("n", [1, 6, 27, 97])
def test_while_loop_vs_python(n):
    got = collatz_jit(np.int64(n))
    assert tuple(int(v) for v in got) == collatz_python(n)


def test_outside_compiled_code_they_are_python():
    assert compiler.cond(np.array([True]), lambda a: a + 1, lambda a: a - 1, 1) == 2
    assert compiler.switch(5, [lambda: "a", lambda: "b"]) == "b"
    assert compiler.while_loop(lambda c: c < 10, lambda c: c * 3, 1) == 27


def test_static_predicate_runs_one_branch():
    # the untaken branch would not even stage (a shape mismatch): Python's `if` semantics
    @jit
    def f(x):
        return compiler.cond(x.shape[0] > 2, lambda v: v[:3].sum(), lambda v: v.reshape(7), x)
    x = np.arange(5.0)
    assert f(x) == 3.0


def test_branches_may_be_kernels_and_inner_functions():
    double = jit(lambda v: 2.0 * v)

    @jit
    def f(x, y):
        def shift(v):
            return v + y
        return compiler.cond(np.sum(x) > 0, double, shift, x)
    x, y = np.array([1.0, 2.0]), np.float64(0.5)
    close(f(x, y), 2.0 * x)
    close(f(-x, y), -x + y)


def test_while_loop_widens_a_python_number_carry():
    @jit
    def f(x):
        return compiler.while_loop(lambda c: c[1] < 3, lambda c: (c[0] + x, c[1] + 1), (0, 0))
    s, k = f(np.float32(1.25))
    assert s.dtype == np.float32 and float(s) == 3.75 and int(k) == 3


# ---- vmap --------------------------------------------------------------------------------------

def relu(x):
    return compiler.cond(x > 0, lambda v: v, lambda v: 0.0 * v, x)


relu_batched = vmap(relu)


def test_vmap_cond_batched_predicate_relu():
    x = np.linspace(-3.0, 3.0, 13)
    close(relu_batched(x), np.array([v if v > 0 else 0.0 * v for v in x]))


def test_vmap_cond_of_elementwise_branches_is_the_where_loop():
    def relu_where(x):
        return np.where(x > 0, x, 0.0 * x)
    x = np.ones(64)
    body = [vmap(f).lower(x).ir_optimized.split("\n", 1)[1] for f in (relu, relu_where)]
    assert body[0] == body[1], body


def test_vmap_cond_per_element_cond_matches_interpreter():
    x = np.linspace(-3.0, 3.0, 13)
    close(internal.stage_batched(relu_batched, (x,)), relu_batched(x))


def test_vmap_cond_nested_and_chunked():
    x = np.random.default_rng(1).normal(size=(4, 5))
    want = np.where(x > 0, x, 0.0)
    close(vmap(vmap(relu))(x), want)
    close(vmap(vmap(relu), in_dims=1, out_dims=1)(x), want)
    close(vmap(relu, chunk_size=3)(x[0]), want[0])


def soft_clip(x, w):
    """An unbatched operand (w) next to a batched predicate."""
    return compiler.cond(x > w, lambda v, w: w + np.log1p(v - w), lambda v, w: v * w, x, w)


def soft_clip_python(x, w):
    return w + np.log1p(x - w) if x > w else x * w


def test_vmap_cond_with_unbatched_operand():
    x = np.linspace(-2.0, 4.0, 9)
    close(vmap(soft_clip, in_dims=(0, None))(x, 1.5), [soft_clip_python(v, 1.5) for v in x])


def test_vmap_switch_batched_index():
    i = np.array([-1, 0, 1, 2, 3, 1])
    x = np.linspace(0.0, 1.0, 6)
    close(vmap(piecewise)(i, x), [piecewise_python(a, b) for a, b in zip(i, x)])


def newton_sqrt(a):
    """Newton's iteration for sqrt(a): the trip count depends on a."""
    def body(c):
        y, k = c
        return 0.5 * (y + a / y), k + 1
    return compiler.while_loop(lambda c: np.abs(c[0] * c[0] - a) > 1e-12 * a, body, (a, 0))


def newton_python(a):
    y, k = a, 0
    while abs(y * y - a) > 1e-12 * a:
        y, k = 0.5 * (y + a / y), k + 1
    return y, k


newton_batched = vmap(newton_sqrt)


def test_vmap_while_loop_per_element_trip_counts():
    a = np.array([1.0, 4.0, 2.0, 1e-4, 100.0, 1e6, 0.3])
    y, k = newton_batched(a)
    want = [newton_python(v) for v in a]
    assert len(set(int(n) for _, n in want)) >= 4          # the elements really finish apart
    np.testing.assert_array_equal(k, [n for _, n in want])    # each stopped at its own step
    np.testing.assert_array_equal(y, [v for v, _ in want])    # and was then left alone: bit-equal
    close(internal.stage_batched(newton_batched, (a,)), (y, k))


def test_vmap_while_loop_nested_and_with_unbatched_carry():
    a = np.array([[1.0, 9.0, 1e4], [0.25, 2.0, 7.0]])
    y, k = vmap(vmap(newton_sqrt))(a)
    want = [[newton_python(v) for v in row] for row in a]
    np.testing.assert_array_equal(k, [[n for _, n in row] for row in want])
    close(y, [[v for v, _ in row] for row in want])

    def scaled(a, s):            # s is unbatched and carried unchanged
        return compiler.while_loop(lambda c: c[0] < a, lambda c: (c[0] * c[1], c[1]), (1.0, s))[0]
    close(vmap(scaled, in_dims=(0, None))(np.array([3.0, 10.0, 0.5]), 2.0), [4.0, 16.0, 1.0])


def test_vmap_while_loop_in_windows_of_the_batch():
    # more elements than one window of the masked loop, with a partial last window; the
    # slowest elements sit in different windows
    a = 10.0 ** np.linspace(-6.0, 6.0, 75)
    want = [newton_python(v) for v in a]
    y, k = newton_batched(a)
    np.testing.assert_array_equal(k, [n for _, n in want])
    np.testing.assert_array_equal(y, [v for v, _ in want])
    close(internal.stage_batched(newton_batched, (a,)), (y, k))
    symbolic = jit(lambda a: newton_batched(a), signature="f64[n]")
    np.testing.assert_array_equal(symbolic(a)[1], k)
    np.testing.assert_array_equal(symbolic(a[:7])[1], k[:7])
    Y, K = vmap(newton_batched)(np.stack([a, a[::-1]]))
    np.testing.assert_array_equal(K, np.stack([k, k[::-1]]))
    root = vmap(lambda a: newton_sqrt(a)[0])
    _, t = jvp(root, (a,), (np.ones_like(a),))
    close(t, np.where(k == 0, 1.0, 0.5 / np.sqrt(a)), rtol=1e-9)    # a = 1 runs no step: y = a
    with pytest.raises(DataDependentControlFlowError) as info:
        grad(lambda a: root(a).sum())(a)
    assert_at(info.value, newton_sqrt, "compiler.while_loop(")


def test_python_if_and_while_on_batched_values_stay_errors():
    def f(x):
        if x > 0:  # MARK-if
            return x
        return 0.0 * x

    def g(x):
        while x < 10.0:  # MARK-while
            x = x * 2.0
        return x
    for fn, mark in ((f, "MARK-if"), (g, "MARK-while")):
        with pytest.raises(DataDependentControlFlowError) as info:
            vmap(fn)(np.array([1.0, -1.0]))
        assert_at(info.value, fn, mark)
        for word in ("np.where", "compiler.cond", "compiler.while_loop"):
            assert word in info.value.hint, info.value.hint


def test_untaken_branch_checks_do_not_fire():
    x = np.arange(4.0)

    def pick(i, x):
        return compiler.cond(i < x.shape[0], lambda i: x[i] * 2.0, lambda i: -1.0, i)

    def pick_in_loop(i, x):        # the check sits in a while inside the branch
        def taken(i):
            return compiler.while_loop(lambda c: c[1] < 2, lambda c: (c[0] + x[i], c[1] + 1), (0.0, 0))[0]
        return compiler.cond(i < x.shape[0], taken, lambda i: -1.0, i)
    i = np.array([0, 3, 7, 2])
    close(jit(vmap(pick, in_dims=(0, None)), boundscheck=True)(i, x), [0.0, 6.0, -1.0, 4.0])
    close(jit(vmap(pick_in_loop, in_dims=(0, None)), boundscheck=True)(i, x), [0.0, 6.0, -1.0, 4.0])
    with pytest.raises(IndexError):      # a taken branch still checks
        jit(vmap(pick, in_dims=(0, None)), boundscheck=True)(np.array([0, -9]), x)


GRID = np.arange(4.0)


def _inner_pick(j, i):
    return compiler.cond(j < GRID.shape[0], lambda j: GRID[j] + i, lambda j: -1.0, j)


def _shifted(j, i):
    return GRID[j] + i


def test_untaken_branch_checks_inside_nested_vmaps_do_not_fire():
    # the branch itself holds a vmap: a per-element cond, or the windows of chunk_size
    def per_element(i, js):
        return compiler.cond(i >= 0, lambda i: vmap(_inner_pick, in_dims=(0, None))(js, i),
                             lambda i: 0.0 * js, i)

    def chunked(i, js):
        return compiler.cond(i >= 0, lambda i: vmap(_shifted, in_dims=(0, None), chunk_size=1)(js, i),
                             lambda i: 0.0 * js, i)
    i, js = np.array([0, -1, 2]), np.array([[0, 9], [7, 7], [3, 1]])
    close(jit(vmap(per_element), boundscheck=True)(i, js), [[0.0, -1.0], [0.0, 0.0], [5.0, 3.0]])
    k = jit(vmap(chunked), boundscheck=True)
    close(k(i, np.array([[0, 1], [7, 7], [3, 1]])), [[0.0, 1.0], [0.0, 0.0], [5.0, 3.0]])
    with pytest.raises(IndexError):
        k(i, np.array([[0, 1], [7, 7], [3, 9]]))


# ---- AD -----------------------------------------------------------------------------------------

def smooth_piece(x, w):
    return compiler.cond(np.sum(x) > 0, lambda x, w: np.sin(x) * w, lambda x, w: x * x * w[::-1], x, w)


def loss(x, w):
    return np.sum(smooth_piece(x, w))


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_grad_through_cond_vs_finite_differences(sign):
    rng = np.random.default_rng(2)
    x, w = sign * (np.abs(rng.normal(size=4)) + 0.1), rng.normal(size=4)
    gx, gw = grad(loss, argnums=(0, 1))(x, w)
    close(gx, fd.jacobian(loss, (x, w), 0), rtol=1e-7, atol=1e-9)
    close(gw, fd.jacobian(loss, (x, w), 1), rtol=1e-7, atol=1e-9)
    _, t = jvp(loss, (x, w), (np.ones(4), np.zeros(4)))
    close(t, np.sum(fd.jacobian(loss, (x, w), 0)), rtol=1e-7, atol=1e-9)


def test_jvp_through_while_loop_vs_finite_differences():
    def root(a):
        return newton_sqrt(a)[0]
    for a in (0.7, 3.0, 250.0):
        _, t = jvp(root, (a,), (1.0,))
        close(t, fd.derivative(lambda e: root(a + e))[0], rtol=1e-7)
    a = np.array([0.7, 3.0, 250.0])
    close(jacfwd(vmap(root))(a), np.diag(0.5 / np.sqrt(a)), rtol=1e-9)


def test_grad_of_while_loop_is_rejected_with_hint():
    def root(a):
        return newton_sqrt(a)[0]
    with pytest.raises(DataDependentControlFlowError) as info:
        grad(root)(2.0)
    assert_at(info.value, newton_sqrt, "compiler.while_loop(")
    assert "compiler.fori_loop" in info.value.hint and "compiler.scan" in info.value.hint


def guarded_log(x):
    """The untaken branch is NaN (sqrt and log of a negative) or infinite (log 0)."""
    return compiler.cond(x > 0, lambda v: np.sqrt(v) * np.log(v), lambda v: -v * v, x)


def guarded_log_python(x):
    return np.sqrt(x) * np.log(x) if x > 0 else -x * x


def guarded_log_derivative(x):
    return (0.5 * np.log(x) + 1.0) / np.sqrt(x) if x > 0 else -2.0 * x


def test_nan_in_untaken_branch_leaks_nowhere():
    x = np.array([-2.0, -0.5, 0.0, 0.5, 3.0])
    want = np.array([guarded_log_python(v) for v in x])
    dwant = np.array([guarded_log_derivative(v) for v in x])
    with np.errstate(all="raise"):
        close(vmap(guarded_log)(x), want)
        close(vmap(grad(guarded_log))(x), dwant)                           # vmap of grad
        close(grad(lambda x: np.sum(vmap(guarded_log)(x)))(x), dwant)      # grad of vmap
        close(jvp(vmap(guarded_log), (x,), (np.ones(5),))[1], dwant)       # forward mode
        X = np.stack([x, -x])
        close(vmap(vmap(grad(guarded_log)))(X), np.array([[guarded_log_derivative(v) for v in r] for r in X]))
        close(grad(lambda X: np.sum(vmap(vmap(guarded_log))(X)))(X),
              np.array([[guarded_log_derivative(v) for v in r] for r in X]))


def test_second_derivatives_of_per_element_cond():
    x = np.array([-2.0, -0.5, 0.5, 3.0])
    want = np.array([-0.25 * np.log(v) / v ** 1.5 if v > 0 else -2.0 for v in x])
    close(vmap(hessian(guarded_log))(x), want, rtol=1e-10)
    close(np.diag(hessian(lambda x: np.sum(vmap(guarded_log)(x)))(x)), want, rtol=1e-10)


def test_grad_of_vmap_cond_unbatched_operand_gets_summed_cotangent():
    x = np.array([-2.0, 0.5, 3.0, -0.1])

    def total(w, x):
        return np.sum(vmap(soft_clip, in_dims=(0, None))(x, w))
    g = grad(total)(1.0, x)
    assert np.isfinite(g)          # log1p(x - w) of the untaken elements is NaN
    close(g, fd.derivative(lambda e: sum(soft_clip_python(v, 1.0 + e) for v in x))[0], rtol=1e-7)


# ---- type errors -------------------------------------------------------------------------------

def test_mismatched_branch_dtypes():
    def f(x):
        return compiler.cond(x.sum() > 0, lambda v: v, lambda v: v.astype(np.float32), x)  # MARK
    with pytest.raises(CompileError) as info:
        jit(f)(np.ones(3))
    assert_at(info.value, f, "MARK")
    msg = str(info.value)
    assert "float64 in true_fn" in msg and "float32 in false_fn" in msg, msg


def test_mismatched_branch_shapes_and_structures():
    def shapes(x):
        return compiler.cond(x.sum() > 0, lambda v: v, lambda v: v[:2], x)  # MARK

    def trees(x):
        return compiler.cond(x.sum() > 0, lambda v: (v, v), lambda v: v, x)  # MARK
    with pytest.raises(CompileError, match=r"shape \(3,\) in true_fn and \(2,\) in false_fn") as info:
        jit(shapes)(np.ones(3))
    assert_at(info.value, shapes, "MARK")
    with pytest.raises(CompileError, match="true_fn and false_fn return different structures") as info:
        jit(trees)(np.ones(3))
    assert_at(info.value, trees, "MARK")


def test_switch_branch_mismatch_and_float_index():
    def f(i, x):
        return compiler.switch(i, [lambda v: v, lambda v: v.sum()], x)  # MARK
    with pytest.raises(CompileError, match=r"branches\[0\] and \(\) in branches\[1\]") as info:
        jit(f)(np.int64(0), np.ones(3))
    assert_at(info.value, f, "MARK")
    with pytest.raises(CompileError, match="integer scalar"):
        jit(f)(np.float64(0.0), np.ones(3))


def test_while_loop_carry_mismatch():
    def dtype(x):
        return compiler.while_loop(lambda c: c.sum() < 10, lambda c: (c * 2).astype(np.float32), x)  # MARK

    def structure(x):
        return compiler.while_loop(lambda c: c[0].sum() < 10, lambda c: c[0] * 2, (x, 1.0))  # MARK

    def predicate(x):
        return compiler.while_loop(lambda c: c < 10, lambda c: c * 2, x)  # MARK
    with pytest.raises(CompileError, match="init has dtype float64 before the loop and float32 after") as info:
        jit(dtype)(np.ones(3))
    assert_at(info.value, dtype, "MARK")
    with pytest.raises(CompileError, match="body_fn must return a value of the structure of init") as info:
        jit(structure)(np.ones(3))
    assert_at(info.value, structure, "MARK")
    with pytest.raises(CompileError, match="must be a scalar") as info:
        jit(predicate)(np.ones(3))
    assert_at(info.value, predicate, "MARK")


def test_functions_must_not_write_outer_arrays():
    def branch_writes(x):
        y = np.zeros(3)

        def t(v):
            y[0] = v
            return v
        return compiler.cond(x > 0, t, lambda v: v, x), y  # MARK

    def body_writes(x):
        y = np.zeros(3)

        def body(c):
            y[0] = c
            return c + 1.0
        return compiler.while_loop(lambda c: c < x, body, 0.0), y  # MARK
    for fn, what in ((branch_writes, "true_fn"), (body_writes, "body_fn")):
        with pytest.raises(SideEffectError, match=f"{what} writes into the array 'y'") as info:
            jit(fn)(np.float64(2.0))
        assert_at(info.value, fn, "MARK")
