"""Python loops that stay loops, compiler.fori_loop and compiler.scan.

Every compiled result is compared with the same Python run by NumPy (the oracle), every
derivative with central finite differences, every vmap with a Python loop over the batch.
"""
from __future__ import annotations

import numpy as np
import pytest

import compiler
from compiler import grad, hessian, jacfwd, jacrev, jit, jvp, vjp, vmap
from compiler.errors import CompileError, UnsupportedError
from tests.frontend.helpers import expect_error

RNG = np.random.default_rng(7)


def ops_of(kernel, *args, stage="ir_optimized"):
    """The primitive names of a kernel's IR at `stage` (one list entry per op, regions included)."""
    text = getattr(kernel.lower(*args), stage)
    return [line.split("=", 1)[1].split("(", 1)[0].strip() for line in text.splitlines()
            if " = " in line and "(" in line.split("=", 1)[1]]


def fd_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


# ---- loop forms compiled == the same Python --------------------------------------------------------

def range_static(x):
    acc = 0.0
    for i in range(x.shape[0]):
        acc = acc + x[i] * i
    return acc


def range_start_step(x):
    acc = np.zeros(())
    for i in range(1, x.shape[0], 3):
        acc = acc * 0.5 + x[i]
    return acc


def range_negative_step(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0] - 1, -1, -1):
        out[i] = x[i] + (out[i + 1] if False else 0.0) + i
    return out


def range_runtime(x, n):
    acc = x
    for i in range(n):
        acc = acc * 0.5 + i
    return acc


def range_runtime_start(x, a, b):
    acc = 0.0
    for i in range(a, b):
        acc = acc + x[i]
    return acc


def rows(x):
    s = np.zeros(x.shape[1])
    for row in x:
        s = s + row * row
    return s


def rows_with_if(x):
    s = np.zeros(x.shape[1])
    for row in x:
        if row.sum() > 0:
            s = s + row
        else:
            s = s - 0.5 * row
    return s


def enumerate_rows(x):
    s = np.zeros(x.shape[1])
    for i, row in enumerate(x, start=2):
        s = s + row * i
    return s


def zip_rows(x, y):
    t = 0.0
    for a, b in zip(x, y):
        t = t + np.dot(a, b)
    return t


def nested_write(a):
    n = a.shape[0]
    d = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            d[i, j] = np.sum((a[i] - a[j]) ** 2)
    return d


def min_cost_path(c):
    """A dynamic programme whose loops reuse the names i and j."""
    n, m = c.shape
    d = np.zeros((n, m))
    d[0, 0] = c[0, 0]
    for i in range(1, n):
        d[i, 0] = d[i - 1, 0] + c[i, 0]
    for j in range(1, m):
        d[0, j] = d[0, j - 1] + c[0, j]
    for i in range(1, n):
        for j in range(1, m):
            d[i, j] = min(d[i - 1, j], d[i, j - 1]) + c[i, j]
    return d


def recurrence(x):
    out = np.zeros_like(x)
    out[0] = x[0]
    for i in range(1, x.shape[0]):
        out[i] = 0.5 * out[i - 1] + x[i]
    return out


def for_else(x):
    acc = x
    for i in range(20):
        acc = acc + 1.0
    else:
        acc = acc * 2.0
    return acc


def static_index_needed(x):
    weights = [float(k) for k in range(12)]
    acc = 0.0
    for i in range(12):
        acc = acc + weights[i] * x[i]          # a list element: the loop unrolls
    return acc


def python_counter(x):
    n = 0
    for i in range(15):
        n += 2                                   # a Python value the body changes: unrolls
    return x[:n].sum()


X = RNG.standard_normal((13, 4))
V = RNG.standard_normal(20)

CASES = [
    (range_static, (V,)),
    (range_start_step, (V,)),
    (range_negative_step, (V,)),
    (range_runtime, (V, np.int64(37))),
    (range_runtime, (V, np.int64(0))),
    (range_runtime, (V, np.int64(-3))),
    (range_runtime_start, (V, np.int64(4), np.int64(17))),
    (rows, (X,)),
    (rows_with_if, (X,)),
    (enumerate_rows, (X,)),
    (zip_rows, (X, X[::-1].copy())),
    (zip_rows, (X, X[:7].copy())),
    (nested_write, (X,)),
    (min_cost_path, (X,)),
    (recurrence, (V,)),
    (for_else, (V,)),
    (static_index_needed, (V,)),
    (python_counter, (V,)),
]


@pytest.mark.parametrize("fn, args", CASES, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_loop_forms_match_python(fn, args):
    got = jit(fn)(*args)
    np.testing.assert_allclose(got, fn(*args), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fn, args, loop", [
    (range_static, (V,), True), (rows, (X,), True), (nested_write, (X,), True),
    (static_index_needed, (V,), False), (python_counter, (V,), False),
])
def test_which_loops_stay_loops(fn, args, loop):
    """A loop op unless the body needs a static index (then the loop is unrolled)."""
    assert ("for" in ops_of(jit(fn), *args)) == loop


def test_small_static_trip_counts_unroll():
    def f(x):
        for i in range(3):
            x = x * 2.0 + i
        return x
    assert "for" not in ops_of(jit(f), V)
    np.testing.assert_allclose(jit(f)(V), f(V))


def test_symbolic_trip_count_one_kernel_for_every_size():
    k = jit(rows, signature="f64[n, 4]")
    for n in (0, 1, 5, 40):
        x = RNG.standard_normal((n, 4))
        np.testing.assert_allclose(k(x), rows(x), rtol=1e-12, atol=1e-12)


def test_compile_size_does_not_grow_with_the_trip_count():
    """The body is staged once: a 1e6-iteration loop is as many ops as a 10-iteration one."""
    def make(n):
        def f(x):
            acc = x
            for i in range(n):
                acc = acc * 0.999999 + 1e-6
            return acc
        return f
    small, big = make(10), make(1_000_000)
    assert len(ops_of(jit(small), V, stage="ir")) == len(ops_of(jit(big), V, stage="ir"))
    assert "for" in ops_of(jit(big), V)          # too long to unroll (compiler/transforms/windows.py)
    expected = V.copy()
    a, c = 0.999999, 1e-6
    expected = V * a ** 1_000_000 + c * (1 - a ** 1_000_000) / (1 - a)
    np.testing.assert_allclose(jit(big)(V), expected, rtol=1e-9)


def test_long_loop_of_rolls():
    """The 330-step relaxation that used to die with a RecursionError."""
    def relax(u):
        for _ in range(330):
            u = 0.5 * (np.roll(u, 1) + np.roll(u, -1))
        return u
    u = RNG.random(64)
    np.testing.assert_allclose(jit(relax)(u), relax(u), rtol=1e-12)


def last_square(x):
    for i in range(x.shape[0]):
        t = x[i] * x[i]
        k = i
    return t + k


def last_square_n(x, n):
    for i in range(n):
        t = x[i] * x[i]
    return t


def test_variable_first_assigned_in_a_loop_op_keeps_its_last_value():
    np.testing.assert_allclose(jit(last_square)(V), last_square(V))
    np.testing.assert_allclose(jit(last_square_n)(V, np.int64(7)), last_square_n(V, 7))
    k = jit(last_square, signature="f64[n]")
    np.testing.assert_allclose(k(V[:3]), last_square(V[:3]))
    with pytest.raises(UnboundLocalError, match="cannot access local variable '[tk]'"):
        k(V[:0])
    with pytest.raises(UnboundLocalError, match="cannot access local variable 't'"):
        jit(last_square_n)(V, np.int64(0))


def test_variable_first_assigned_in_a_loop_op_and_unused_after_is_not_carried():
    def f(x):
        acc = 0.0
        for i in range(x.shape[0]):
            t = x[i] * 2.0
            acc = acc + t
        return acc
    (line,) = [ln for ln in jit(f).lower(V).ir.splitlines() if "= for(" in ln]
    assert line.split("=")[0].count("%") == 2        # acc and x (an invariant): not t
    np.testing.assert_allclose(jit(f)(V), f(V))


def test_break_with_a_runtime_trip_count():
    def f(x, n):
        acc = x
        for i in range(n):
            if i > 3:
                break
            acc = acc + 1.0
        return acc
    for n in (0, 2, 9):
        np.testing.assert_allclose(jit(f)(V, np.int64(n)), f(V, n))


def test_break_with_a_static_trip_count_unrolls():
    def f(x):
        acc = x
        for i in range(20):
            if i > 3:
                break
            acc = acc + 1.0
        return acc
    np.testing.assert_allclose(jit(f)(V), f(V))


def test_float_range_bound_is_refused():
    def f(x):
        for i in range(x.sum()):
            x = x + 1.0
        return x
    expect_error(f, CompileError, V, match="range() stop must be an integer", line_of="range(")


# ---- transforms of loops -------------------------------------------------------------------------

def energy(x):
    e = 0.0
    for i in range(x.shape[0]):
        e = e + np.sin(x[i]) * x[i] + 0.1 * i * x[i] ** 2
    return e


def chain(x):
    out = np.zeros_like(x)
    out[0] = x[0]
    for i in range(1, x.shape[0]):
        out[i] = np.tanh(out[i - 1]) * x[i] + x[i - 1]
    return (out ** 2).sum()


@pytest.mark.parametrize("f", [energy, chain, lambda x: recurrence(x).sum() ** 2])
def test_grad_through_python_loops_vs_finite_differences(f):
    x = RNG.standard_normal(11)
    np.testing.assert_allclose(jit(grad(f))(x), fd_grad(f, x), rtol=1e-6, atol=1e-7)


def test_jvp_and_vjp_of_a_loop_are_transposes():
    x, t = RNG.standard_normal(11), RNG.standard_normal(11)
    f = recurrence
    _, tangent = jit(lambda x, t: jvp(f, (x,), (t,)))(x, t)
    ct = RNG.standard_normal(11)
    (cotangent,) = jit(lambda x, ct: vjp(f, x)[1](ct))(x, ct)
    np.testing.assert_allclose(np.dot(tangent, ct), np.dot(t, cotangent), rtol=1e-12)
    fd = (f(x + 1e-6 * t) - f(x - 1e-6 * t)) / 2e-6
    np.testing.assert_allclose(tangent, fd, rtol=1e-6, atol=1e-8)


def test_jacobians_and_hessian_through_loops():
    x = RNG.standard_normal(9)
    J = jit(jacrev(recurrence))(x)
    np.testing.assert_allclose(J, jit(jacfwd(recurrence))(x), rtol=1e-12, atol=1e-14)
    fd = np.stack([(recurrence(x + 1e-6 * e) - recurrence(x - 1e-6 * e)) / 2e-6 for e in np.eye(9)], 1)
    np.testing.assert_allclose(J, fd, rtol=1e-6, atol=1e-8)
    H = jit(hessian(energy))(x)
    np.testing.assert_allclose(H, np.diag(2 * np.cos(x) - x * np.sin(x) + 0.2 * np.arange(9)),
                               rtol=1e-12, atol=1e-12)


def damped_steps(x, n):
    acc = x
    for i in range(n):
        acc = np.sin(acc) * 0.9 + x * 0.1 + 0.01 * i
    return (acc ** 2).sum()


def damped_5000(x):
    acc = x
    for i in range(5000):
        acc = np.sin(acc) * 0.9 + x * 0.1 + 0.01 * i
    return (acc ** 2).sum()


@pytest.mark.parametrize("n", [0, 1, 7, 200, 5000])
def test_reverse_mode_with_a_runtime_trip_count(n):
    """Checkpoints per segment, two levels deep: the gradient of any trip count."""
    x = RNG.random(5)
    g = jit(grad(damped_steps))(x, np.int64(n))
    np.testing.assert_allclose(g, fd_grad(lambda x: damped_steps(x, n), x), rtol=1e-6, atol=1e-9)
    if n == 5000:      # the same arithmetic as the static loop's tape
        np.testing.assert_array_equal(g, jit(grad(damped_5000))(x))


@pytest.mark.parametrize("a, b", [(0, 10), (2, 300), (5, 4)])
def test_reverse_mode_with_runtime_bounds_and_a_step(a, b):
    x = RNG.random(5)
    np.testing.assert_allclose(jit(grad(range_runtime_start_step))(x, np.int64(a), np.int64(b)),
                               fd_grad(lambda x: range_runtime_start_step(x, a, b), x),
                               rtol=1e-6, atol=1e-9)


def range_runtime_start_step(x, a, b):
    s = 0.0
    for i in range(a, b, 3):
        s = s + x[i % 5] * np.cos(s)
    return s


def test_hessian_with_a_runtime_trip_count():
    x = RNG.random(5)
    H = jit(hessian(damped_steps))(x, np.int64(50))
    g = jit(grad(damped_steps))
    fd = np.stack([(g(x + 1e-5 * e, np.int64(50)) - g(x - 1e-5 * e, np.int64(50))) / 2e-5
                   for e in np.eye(5)], 1)
    np.testing.assert_allclose(H, fd, rtol=1e-5, atol=1e-8)


def sin_steps(x, n):
    acc = x
    for i in range(n):
        acc = np.sin(acc) + x
    return acc.sum()


def test_forward_mode_with_a_runtime_trip_count():
    x, t = RNG.standard_normal(5), RNG.standard_normal(5)
    g = jit(jacfwd(sin_steps))(x, np.int64(6))
    fd = (sin_steps(x + 1e-6 * t, 6) - sin_steps(x - 1e-6 * t, 6)) / 2e-6
    np.testing.assert_allclose(np.dot(g, t), fd, rtol=1e-6)


@pytest.mark.parametrize("fn, args, in_dims", [
    (rows, (X,), 0),
    (recurrence, (V,), 0),
    (nested_write, (X,), 0),
    (range_runtime, (V, np.int64(5)), (0, None)),
])
def test_vmap_of_loops_vs_a_python_loop(fn, args, in_dims):
    batch = tuple(np.stack([a * (k + 1) for k in range(3)]) if d == 0 else a
                  for a, d in zip(args, in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)))
    got = jit(vmap(fn, in_dims=in_dims))(*batch)
    expected = np.stack([fn(*[b[k] if (in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args))[j] == 0
                              else b for j, b in enumerate(batch)]) for k in range(3)])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_vmap_with_batched_trip_counts():
    """Each batch element runs its own number of iterations (the loop becomes a masked while)."""
    ns = np.array([0, 3, 7], dtype=np.int64)
    got = jit(vmap(range_runtime, in_dims=(None, 0)))(V, ns)
    np.testing.assert_allclose(got, np.stack([range_runtime(V, int(n)) for n in ns]), rtol=1e-12)


# ---- compiler.fori_loop and compiler.scan ------------------------------------------------------

def test_fori_loop_matches_python():
    def f(x):
        return compiler.fori_loop(2, 40, lambda i, c: (c[0] * 0.9 + x[i % 5] * i, c[1] + 1),
                                  (np.zeros(()), 0))
    x = RNG.standard_normal(5)
    got = jit(f)(x)
    expected = f(x)                         # outside compiled code: the Python loop
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-12)
    assert int(got[1]) == expected[1] == 38


def test_fori_loop_runtime_bounds_and_pytrees():
    def f(x, n):
        return compiler.fori_loop(0, n, lambda i, c: {"a": c["a"] + x, "b": c["b"] * 2.0},
                                  {"a": np.zeros(3), "b": np.ones(())})
    x = RNG.standard_normal(3)
    got = jit(f)(x, np.int64(4))
    np.testing.assert_allclose(got["a"], 4 * x)
    np.testing.assert_allclose(got["b"], 16.0)


def test_fori_loop_carry_type_errors():
    def f(x):
        return compiler.fori_loop(0, 10, lambda i, c: c[:2], x)
    expect_error(f, CompileError, V, match="carry has shape", line_of="compiler.fori_loop")

    def g(x):
        return compiler.fori_loop(0, 10, lambda i, c: (c, c), x)
    expect_error(g, CompileError, V, match="same structure", line_of="compiler.fori_loop")


def rnn(w, xs):
    def step(h, x):
        h = np.tanh(w @ h + x)
        return h, h.sum()
    h, ys = compiler.scan(step, np.zeros(w.shape[0]), xs)
    return ys.sum() + h.sum()


def test_scan_matches_python_and_reverse():
    xs = RNG.standard_normal((9, 3))

    def f(xs):
        return compiler.scan(lambda c, x: (c + x, c * x), np.zeros(3), xs, reverse=True)
    got_c, got_ys = jit(f)(xs)
    c, ys = f(xs)
    np.testing.assert_allclose(got_c, c)
    np.testing.assert_allclose(got_ys, ys)
    np.testing.assert_allclose(ys[-1], 0.0)      # reverse: the last row sees the initial carry

    def g(x):
        return compiler.scan(lambda c, _: (c * 2.0, c), x, None, length=6)
    np.testing.assert_allclose(jit(g)(V[:2])[1], g(V[:2])[1])


def test_grad_and_hessian_through_scan():
    w = RNG.standard_normal((4, 4)) * 0.4
    xs = RNG.standard_normal((10, 4))
    np.testing.assert_allclose(jit(grad(rnn))(w, xs), fd_grad(lambda w: rnn(w, xs), w), rtol=1e-6, atol=1e-8)
    flat = xs.ravel()

    def h_of(v):
        return rnn(w, v.reshape(10, 4))
    H = jit(hessian(h_of))(flat)
    g = jit(grad(h_of))
    fd = np.stack([(g(flat + 1e-5 * e) - g(flat - 1e-5 * e)) / 2e-5 for e in np.eye(40)], 1)
    np.testing.assert_allclose(H, fd, rtol=1e-5, atol=1e-7)


def test_vmap_of_scan_vs_a_python_loop():
    w = RNG.standard_normal((4, 4)) * 0.4
    batch = RNG.standard_normal((5, 10, 4))
    got = jit(vmap(rnn, in_dims=(None, 0)))(w, batch)
    np.testing.assert_allclose(got, [rnn(w, b) for b in batch], rtol=1e-12)


def test_scan_reverse_mode_tapes_the_carry_not_the_outputs():
    """ys are written a row per iteration: reverse mode must not tape the whole ys per step."""
    def f(xs):
        return compiler.scan(lambda c, x: (c * x, c), np.ones(()), xs)[1].sum()
    text = jit(grad(f)).lower(np.ones(50)).ir_optimized
    assert "f64[50, 50]" not in text
    xs = RNG.uniform(0.5, 1.5, 50)
    np.testing.assert_allclose(jit(grad(f))(xs), fd_grad(f, xs), rtol=1e-6, atol=1e-9)


# ---- windows of static width at a run-time start -------------------------------------------------

def convolve_valid(x, w):
    k = w.shape[0]
    out = np.zeros(x.shape[0] - k + 1)
    for i in range(x.shape[0] - k + 1):
        out[i] = np.dot(x[i:i + k], w)
    return out


def windows(x, i):
    return x[2 * i:2 * i + 2].sum() + x[i:i + 3, 1:].sum() + x[i + 1:4 + i].sum()


def test_window_of_static_width_in_a_loop():
    x, w = RNG.standard_normal(40), RNG.standard_normal(5)
    np.testing.assert_allclose(jit(convolve_valid)(x, w), np.convolve(x, w[::-1], "valid"), rtol=1e-12)
    f = lambda x, w: convolve_valid(x, w).sum() ** 2  # noqa: E731
    np.testing.assert_allclose(jit(grad(f))(x, w), fd_grad(lambda x: f(x, w), x), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("i", [0, 1, 3])
def test_windows_at_a_runtime_start(i):
    x = RNG.standard_normal((10, 3))
    np.testing.assert_allclose(jit(windows)(x, np.int64(i)), windows(x, i), rtol=1e-12)


def test_window_that_does_not_fit_raises_with_boundscheck():
    def f(x, i):
        return x[i:i + 3]
    k = jit(f, boundscheck=True)
    np.testing.assert_array_equal(k(V, np.int64(17)), V[17:20])
    with pytest.raises(IndexError, match="window of 3 elements"):
        k(V, np.int64(18))


def test_window_of_a_nonstatic_width_is_refused():
    from compiler.errors import DynamicShapeError

    def f(x, i, j):
        return x[i:j]
    expect_error(f, DynamicShapeError, V, np.int64(1), np.int64(4), match="run-time bounds",
                 line_of="x[i:j]")


# ---- checkpointing: reverse mode with less memory ------------------------------------------------

def rnn_checkpointed(w, xs, checkpoint):
    def step(h, x):
        h = np.tanh(w @ h + x)
        return h, h.sum()
    h, ys = compiler.scan(step, np.zeros(w.shape[0]), xs, checkpoint=checkpoint)
    return ys.sum() + (h ** 2).sum()


@pytest.mark.parametrize("checkpoint", [True, 1, 7, 200])
def test_checkpointed_scan_gradient(checkpoint):
    w = RNG.standard_normal((4, 4)) * 0.4
    xs = RNG.standard_normal((103, 4))
    k = jit(grad(lambda w, xs: rnn_checkpointed(w, xs, checkpoint)))
    np.testing.assert_allclose(k(w, xs), fd_grad(lambda w: rnn_checkpointed(w, xs, None), w),
                               rtol=1e-6, atol=1e-8)
    text = k.lower(w, xs).ir_optimized
    if checkpoint is True:       # 11 iterations per stored carry: 10 checkpoints, an 11-row tape
        assert "f64[10, 4]" in text and "f64[11, 4]" in text


def test_checkpointed_fori_loop_hessian():
    def f(x):
        return compiler.fori_loop(0, 50, lambda i, c: np.sin(c) * x + 0.1, x, checkpoint=True).sum()
    x = RNG.random(3)
    H = jit(hessian(f))(x)
    g = jit(grad(f))
    fd = np.stack([(g(x + 1e-5 * e) - g(x - 1e-5 * e)) / 2e-5 for e in np.eye(3)], 1)
    np.testing.assert_allclose(H, fd, rtol=1e-5, atol=1e-7)


def test_checkpoint_option_is_checked():
    def f(x):
        return compiler.fori_loop(0, 5, lambda i, c: c * 2.0, x, checkpoint=-3)
    expect_error(f, CompileError, V, match="checkpoint must be", line_of="compiler.fori_loop")


def reversed_loops(x, n):
    acc = np.zeros(x.shape[1])
    for row in reversed(x):
        acc = acc * 0.5 + row
    total = 0.0
    for i in reversed(range(1, n)):
        total = total * 0.9 + i
    for i, row in enumerate(reversed(x)):
        acc = acc + i * row
    return acc, total


@pytest.mark.parametrize("n", [0, 1, 12])
def test_reversed_loops(n):
    x = RNG.standard_normal((11, 3))
    got, expected = jit(reversed_loops)(x, np.int64(n)), reversed_loops(x, n)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-12)
    k = jit(reversed_loops, signature="f64[m, 3], i64")
    np.testing.assert_allclose(k(x[:4], np.int64(n))[0], reversed_loops(x[:4], n)[0], rtol=1e-12)


# ---- key-less draws inside loops and branches: the random state is carried -----------------------

def no_draws(x):
    y = compiler.fori_loop(0, 3, lambda i, c: c * 0.5, x)
    z = compiler.scan(lambda c, r: (c + r, c), 0.0, x)[0]
    return y + z


def draws_in_scan(x):
    return compiler.scan(lambda c, _: (c, compiler.random.uniform(())), x, None, length=6)[1]


def draws_in_fori_then_after(x):
    y = compiler.fori_loop(0, 5, lambda i, c: c + compiler.random.normal(()), x)
    return y, compiler.random.normal(())


def draws_in_cond(x):
    return compiler.cond(x > 0, lambda: compiler.random.uniform(()), lambda: x - 1.0), \
        compiler.random.uniform(())


def draws_in_while_loop(x):
    def body(c):
        i, acc = c
        return i + 1, acc + compiler.random.uniform((4,)) * (np.arange(4) == i)
    return compiler.while_loop(lambda c: c[0] < 4, body, (0, x))[1]


def test_draws_differ_per_iteration_in_scan_and_fori_loop():
    compiler.random.seed(3)
    ys = jit(draws_in_scan)(np.float64(0.0))
    assert len(set(ys.tolist())) == 6 and ((ys >= 0) & (ys < 1)).all()
    (y, after), (y2, after2) = jit(draws_in_fori_then_after)(np.float64(0.0)), \
        jit(draws_in_fori_then_after)(np.float64(0.0))
    assert y != y2 and after != after2            # fresh draws per call
    compiler.random.seed(3)
    again = jit(draws_in_scan)(np.float64(0.0))
    np.testing.assert_array_equal(again, ys)      # reproducible from the seed


def test_draws_in_cond_and_while_loop():
    (a, b) = jit(draws_in_cond)(np.float64(1.0))
    assert 0 <= a < 1 and 0 <= b < 1 and a != b    # the draw after the cond is another one
    (c, _) = jit(draws_in_cond)(np.float64(-1.0))
    assert c == -2.0
    w = jit(draws_in_while_loop)(np.zeros(4))
    assert len(set(w.tolist())) == 4 and ((w >= 0) & (w < 1)).all()


def test_loops_without_draws_take_no_key():
    k = jit(no_draws)
    np.testing.assert_allclose(k(V), no_draws(V), rtol=1e-12)
    assert "rng_key" not in k.lower(V).ir
