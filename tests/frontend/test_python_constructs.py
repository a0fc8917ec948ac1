"""The Python numerical code is written in, compiled: assert as a run-time check, index
iterators (np.ndindex, np.ndenumerate, itertools), ufunc methods (reduce, accumulate,
outer, at), the operator module and functools.reduce, builtins on static values and
pytree keys, np.r_/np.c_, einsum's sublist form, the split family, rollaxis, rot90, and
Python loops on shapes. Each is compared with NumPy or plain Python running the same
function uncompiled, with a Python loop under vmap, and with finite differences under grad."""
from __future__ import annotations

import copy
import functools
import itertools
import operator
import warnings

import numpy as np
import pytest

from compiler import grad, jit, vmap
from compiler.errors import CompileError, UnsupportedError
from tests.fd import jacobian

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 6))
V = RNG.standard_normal(5)
T = RNG.standard_normal((2, 4, 6))


def same(got, want, rtol=1e-12, atol=1e-12):
    """Values, dtypes and shapes as NumPy (leaf by leaf for tuples and lists)."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w, rtol, atol)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def compiled_equals_numpy(fn, *args, rtol=1e-12):
    """Results as NumPy's, and array arguments left as NumPy leaves them (each run gets
    its own copies: a function may write into its arguments)."""
    mine, theirs = copy.deepcopy(args), copy.deepcopy(args)
    same(jit(fn)(*mine), fn(*theirs), rtol=rtol, atol=rtol)
    for a, b in zip(mine, theirs):
        if isinstance(a, np.ndarray):
            same(a, b, rtol=rtol, atol=rtol)


# ---- assert ---------------------------------------------------------------------------------


def checked_sqrt(x):
    assert x.min() >= 0, f"x must be nonnegative, got {x.min()} in an array of {x.shape[0]}"
    return np.sqrt(x)


def checked_scalar(x):
    assert x > 0, "positive input expected"
    return np.log(x) * x


CHECKED_SQRT = jit(checked_sqrt)


def test_assert_passes_and_computes():
    x = np.abs(V)
    same(CHECKED_SQRT(x), np.sqrt(x))


def test_assert_raises_assertion_error_with_message_and_line():
    with pytest.raises(AssertionError) as info:
        CHECKED_SQRT(-np.abs(V))
    text = str(info.value)
    line = checked_sqrt.__code__.co_firstlineno + 1
    # static parts formatted, the array field kept as its source text, the user's line
    assert "x must be nonnegative, got {x.min()} in an array of 5" in text
    assert f"test_python_constructs.py:{line}" in text
    with pytest.raises(AssertionError):
        checked_sqrt(-np.abs(V))           # NumPy raises too


def test_assert_message_fills_symbolic_size_at_run_time():
    k = jit(checked_sqrt, signature="f64[n] -> f64[n]")
    same(k(np.arange(3.0)), np.sqrt(np.arange(3.0)))
    with pytest.raises(AssertionError, match="in an array of 7"):
        k(-np.ones(7))


def test_assert_under_vmap_checks_every_element():
    k = jit(vmap(checked_scalar))
    x = np.array([0.5, 1.5, 2.5])
    same(k(x), np.array([checked_scalar(e) for e in x]))
    for bad in range(3):
        y = x.copy()
        y[bad] = -1.0
        with pytest.raises(AssertionError, match="positive input expected"):
            k(y)


def test_assert_under_grad_checks_the_primal_value():
    g = grad(checked_scalar)
    for x in (0.5, 2.0):
        np.testing.assert_allclose(g(x), np.log(x) + 1.0, rtol=1e-12)
    with pytest.raises(AssertionError, match="positive input expected"):
        g(-0.5)


def guarded_branch_and_loop(x):
    y = x
    if x.sum() > 0:
        assert x[0] > 1, "first entry too small"
        y = x * 2
    for i in range(x.shape[0]):
        assert x[i] < 100, "entry too large"
    return y


def test_assert_inside_data_dependent_if_and_loop():
    k = jit(guarded_branch_and_loop)
    same(k(np.array([2.0, 3.0])), guarded_branch_and_loop(np.array([2.0, 3.0])))
    same(k(np.array([-5.0, 3.0])), guarded_branch_and_loop(np.array([-5.0, 3.0])))
    with pytest.raises(AssertionError, match="first entry too small"):
        k(np.array([0.5, 3.0]))
    with pytest.raises(AssertionError, match="entry too large"):
        k(np.array([2.0, 300.0]))


def static_assert(x):
    assert x.ndim == 2, f"expected a matrix, got {x.ndim} dimensions"
    return x.T


def test_assert_on_static_value_is_checked_at_compile_time():
    same(jit(static_assert)(X), X.T)
    with pytest.raises(CompileError, match="expected a matrix, got 1 dimensions"):
        jit(static_assert)(V)


def test_assert_on_array_of_many_elements_is_ambiguous():
    def f(x):
        assert x > 0
        return x
    with pytest.raises(CompileError, match="truth value of an array with more than one"):
        jit(f)(V)


# ---- index iterators and itertools ----------------------------------------------------------


def over_ndindex(a):
    t = 0.0
    for i, j in np.ndindex(a.shape):
        t = t + a[i, j] * (i - 2 * j)
    return t


def over_ndenumerate(a):
    t = 0.0
    for (i, j), e in np.ndenumerate(a):
        t = t + e * (i + j)
    return t


def squares_by_ndindex(a):
    out = np.zeros_like(a)
    for idx in np.ndindex(*a.shape):
        out[idx] = a[idx] ** 2
    return out


def over_product(a):
    t = 0.0
    for i, j in itertools.product(range(1, a.shape[0], 2), range(a.shape[1])):
        t = t + a[i, j] * j
    return t


BIG = RNG.standard_normal((30, 40))


@pytest.mark.parametrize("fn", [over_ndindex, over_ndenumerate, squares_by_ndindex, over_product])
@pytest.mark.parametrize("x", [X, BIG], ids=["small", "loop-op"])
def test_index_iterators(fn, x):
    compiled_equals_numpy(fn, x, rtol=1e-10)


def test_index_iterator_loop_is_a_loop_op_not_unrolled():
    ir = str(jit(over_ndenumerate).lower(BIG).ir)
    assert ir.count("take") + ir.count("dynamic_slice") < 20    # one body, not 1200


def test_ndenumerate_loop_under_vmap():
    xs = RNG.standard_normal((3, 4, 6))
    same(jit(vmap(over_ndenumerate))(xs), np.array([over_ndenumerate(x) for x in xs]),
         rtol=1e-12)


def test_ndindex_loop_gradient_matches_finite_differences():
    got = jit(grad(over_ndenumerate))(X)
    np.testing.assert_allclose(got, jacobian(over_ndenumerate, (X,)), rtol=1e-7, atol=1e-8)


def combinatorics(v):
    pairs = sum(v[i] * v[j] for i, j in itertools.combinations(range(v.shape[0]), 2))
    perms = sum(v[i] - v[j] ** 2 for i, j in itertools.permutations(range(3), 2))
    cwr = sum(v[i] * v[j] for i, j in itertools.combinations_with_replacement(range(3), 2))
    squares = sum(v[i] * v[j] for i, j in itertools.product(range(3), repeat=2))
    running = np.stack(list(itertools.accumulate(v, operator.mul)))
    chained = np.stack(list(itertools.chain(v, v[:2], itertools.repeat(v[0], 2))))
    adjacent = sum(p * q for p, q in itertools.pairwise(v))
    starred = list(itertools.starmap(operator.sub, zip(v, v[::-1])))
    return pairs, perms, cwr, squares, running, chained, adjacent, np.stack(starred)


def test_itertools_over_static_sequences():
    compiled_equals_numpy(combinatorics, V, rtol=1e-12)


def test_ndindex_of_symbolic_shape_is_refused_with_hint():
    with pytest.raises(UnsupportedError, match="symbolic size") as info:
        jit(over_ndindex, signature="f64[n, m] -> f64[]")
    assert "signature" in (info.value.hint or "")


# ---- ufunc methods ------------------------------------------------------------------------

REDUCE_UFUNCS = [np.add, np.multiply, np.maximum, np.minimum, np.logaddexp, np.logaddexp2,
                 np.fmax, np.fmin, np.hypot, np.subtract, np.divide]


@pytest.mark.parametrize("uf", REDUCE_UFUNCS, ids=lambda u: u.__name__)
def test_ufunc_reduce_accumulate_outer(uf):
    def f(a, b):
        return (uf.reduce(a), uf.reduce(a, axis=1, keepdims=True), uf.reduce(b, axis=-1),
                uf.accumulate(a), uf.accumulate(a, axis=1), uf.outer(b, a[0]))
    compiled_equals_numpy(f, X, V, rtol=1e-10)


def test_ufunc_reduce_arguments():
    def f(a, t):
        return (np.logaddexp.reduce(a, axis=None), np.logaddexp.reduce(a, axis=1, initial=0.5),
                np.add.reduce(a, axis=(0, 1), initial=0.5), np.maximum.reduce(t, axis=(0, 2)),
                np.logaddexp.reduce(a[:0], axis=0), np.multiply.reduce(a, dtype=np.float32),
                np.arctan2.reduce(a, axis=0), np.subtract.accumulate(a, axis=0))
    compiled_equals_numpy(f, X, T, rtol=1e-6)


def test_ufunc_reduce_integers_and_bools():
    def f(i, m):
        return (np.bitwise_or.reduce(i, axis=0), np.bitwise_xor.accumulate(i, axis=1),
                np.add.reduce(i), np.logical_and.reduce(m, axis=1), np.logical_or.accumulate(m),
                np.maximum.outer(i[0], i[1]))
    ints = RNG.integers(0, 50, size=(3, 4))
    compiled_equals_numpy(f, ints, ints > 20)


def test_ufunc_reduce_of_empty_without_identity_is_numpys_error():
    with pytest.raises(CompileError, match="no identity"):
        jit(lambda a: np.maximum.reduce(a[:0]))(V)
    with pytest.raises(ValueError):
        np.maximum.reduce(V[:0])


def add_at(y, idx, val):
    out = y.copy()
    np.add.at(out, idx, val)
    return out


def many_at(y, idx):
    out = y.copy()
    np.maximum.at(out, idx, 0.5)
    np.subtract.at(out, [1, 1, -1], 1.0)
    np.multiply.at(out, (idx[:2], np.array([1, 1])), 2.0)
    np.add.at(out, 2, out[0])
    return out


def test_ufunc_at_accumulates_repeated_indices():
    idx = np.array([0, 0, 2, -1, 4, 4, 4])
    compiled_equals_numpy(add_at, V, idx, np.arange(7.0))
    compiled_equals_numpy(add_at, X, np.array([0, 3, 3]), X[:3] * 2)
    compiled_equals_numpy(lambda y: add_at(y, [0, 0, 2], 1.0), V)
    compiled_equals_numpy(many_at, X, np.array([0, 0, 3]))


def add_at_rows_cols(y, r, c, v):
    out = y.copy()
    np.add.at(out, (r, c), v)
    np.subtract.at(out, (r[:2], 1), 1.0)
    np.add.at(out, (0, c[:3]), 5.0)
    np.add.at(out, [3, 3, -1], y[0])
    return out


def test_ufunc_at_on_several_axes_and_symbolic_sizes():
    r, c = np.array([0, 0, 3, 3, -1]), np.array([1, 1, 5, 5, 0])
    for v in (np.arange(5.0), 2.0):
        compiled_equals_numpy(add_at_rows_cols, X, r, c, v)
    k = jit(add_at_rows_cols, signature="f64[n, m], i64[k], i64[k], f64[k] -> f64[n, m]")
    same(k(X, r, c, np.arange(5.0)), add_at_rows_cols(X, r, c, np.arange(5.0)))


def test_ufunc_at_under_vmap_and_grad():
    idx = np.array([0, 0, 2, 4, 4])
    vals = RNG.standard_normal((3, 5))
    ys = RNG.standard_normal((3, 5))
    got = jit(vmap(add_at, in_dims=(0, None, 0)))(ys, idx, vals)
    same(got, np.stack([add_at(y, idx, v) for y, v in zip(ys, vals)]))

    def loss(y, v):
        return np.sum(np.sin(add_at(y, idx, v)))
    for argnum in (0, 1):
        g = jit(grad(loss, argnums=argnum))(V, vals[0])
        np.testing.assert_allclose(g, jacobian(loss, (V, vals[0]), argnum), rtol=1e-7, atol=1e-9)


def test_ufunc_methods_under_vmap_and_grad():
    def f(a):
        return np.sum(np.maximum.accumulate(a, axis=1) * np.arange(6.0)) \
            + np.sum(np.logaddexp.reduce(a, axis=0) ** 2) + np.sum(np.multiply.outer(a[0], a[1]))
    np.testing.assert_allclose(jit(grad(f))(X), jacobian(f, (X,)), rtol=1e-7, atol=1e-8)
    xs = RNG.standard_normal((3, 4, 6))
    same(jit(vmap(f))(xs), np.array([f(x) for x in xs]), rtol=1e-12)


def symbolic_folds(a):
    return (np.add.reduce(a), np.maximum.reduce(a), np.maximum.accumulate(a),
            np.logaddexp.accumulate(a), np.subtract.accumulate(a), np.logaddexp.reduce(a),
            np.fmax.reduce(a), np.subtract.reduce(a), np.logaddexp.reduce(a, initial=1.0))


SYMBOLIC_FOLDS = jit(symbolic_folds, signature="f64[n] -> (f64[], f64[], f64[n], f64[n], f64[n], "
                     "f64[], f64[], f64[], f64[])")


@pytest.mark.parametrize("n", [1, 2, 5, 9])
def test_ufunc_methods_on_symbolic_axis(n):
    x = RNG.standard_normal(n)
    same(SYMBOLIC_FOLDS(x), symbolic_folds(x), rtol=1e-12)


def test_ufunc_methods_on_empty_symbolic_axis():
    k = jit(lambda a: (np.logaddexp.reduce(a), np.maximum.accumulate(a)),
            signature="f64[n] -> (f64[], f64[n])")
    same(k(np.zeros(0)), (np.logaddexp.reduce(np.zeros(0)), np.zeros(0)))
    with pytest.raises(ValueError, match="which has no identity"):
        SYMBOLIC_FOLDS(np.zeros(0))
    with pytest.raises(ValueError, match="which has no identity"):
        symbolic_folds(np.zeros(0))


def test_ufunc_loop_scan_under_grad_and_vmap():
    def h(a):
        return np.sum(np.logaddexp.accumulate(a) ** 2) + np.subtract.reduce(a) ** 2
    g = jit(grad(h), signature="f64[n] -> f64[n]")
    np.testing.assert_allclose(g(V), jacobian(h, (V,)), rtol=1e-6, atol=1e-8)
    same(jit(vmap(h), signature="f64[b, n] -> f64[b]")(X), np.array([h(x) for x in X]), rtol=1e-12)


# ---- operator, functools, builtins -----------------------------------------------------------


def with_operators(a, b):
    return (operator.add(a, b), operator.sub(a, 1.0), operator.mul(a, b), operator.truediv(a, b),
            operator.neg(a), operator.pos(a), operator.pow(a, 2), operator.matmul(X, a[:6]),
            operator.getitem(a, slice(1, 3)), operator.lt(a, b), operator.abs(a),
            operator.itemgetter(1, 2)(a), operator.floordiv(a, 0.7), operator.mod(a, 0.7),
            functools.reduce(operator.add, [a, 2 * a, 3 * a]),
            functools.reduce(lambda p, q: p * q + 1.0, list(a), 1.0),
            functools.reduce(np.matmul, [X.T, X, a[:6]]))


def test_operator_and_functools_reduce():
    a = RNG.standard_normal(6) + 2.0
    compiled_equals_numpy(with_operators, a, a[::-1].copy(), rtol=1e-12)


def inplace_operators(a):
    y = a.copy()
    z = operator.iadd(y, 1.0)           # y += 1.0: z is y
    operator.imul(y, 2.0)
    return y, z, operator.iadd(3, 4) * a, operator.isub(a, 1.0)


def test_inplace_operator_functions_are_augmented_assignments():
    compiled_equals_numpy(inplace_operators, V)


def on_dict_keys(p):
    keys = sorted(p)
    total = sum(p[k].sum() for k in keys)
    widest = max(p, key=lambda k: p[k].size)
    out = [p[k].sum() * w + i for i, (k, w) in enumerate(zip(sorted(p, reverse=True),
                                                             reversed([1.0, 2.0, 3.0])))]
    return total * len(p) + len(widest) + len(min(p)), out[0] + out[1] + out[2], p[widest] * 2


def test_builtins_on_dict_keys_of_a_pytree_argument():
    p = {"w": X, "b": V, "scale": np.array(2.0)}
    compiled_equals_numpy(on_dict_keys, p)


def scalar_builtins(a, b, v):
    return (max(a, b), min(a, b, 0.25), max(v[0], v[1], v[2]), np.float64(any(v > 1.0)),
            np.float64(all([v[0] > -5, v[1] < 5])), np.float64(all(v > -10)), abs(v),
            round(2.567, 2) * v, divmod(7, 2)[0] * v, sum(sorted([3, 1, 2])) * v,
            sum(v * k for k in reversed(range(3))))


def test_builtins_on_static_values_and_arrays():
    compiled_equals_numpy(scalar_builtins, np.array(1.5), np.array(2.5), V)
    compiled_equals_numpy(scalar_builtins, np.array(3.0), np.array(-1.0), V + 1)


def test_max_of_two_arrays_is_elementwise_under_vmap():
    def f(a, b):
        return max(a, b) - min(a, b)
    xs, ys = RNG.standard_normal(6), RNG.standard_normal(6)
    same(jit(vmap(f))(xs, ys), np.array([f(x, y) for x, y in zip(xs, ys)]))


def test_sorting_array_values_is_refused_with_hint():
    with pytest.raises(UnsupportedError, match="order is only known") as info:
        jit(lambda v: sorted([v[0], v[1]])[0])(V)
    assert "np.argmax" in info.value.hint
    with pytest.raises(CompileError, match="truth value"):
        jit(lambda v: max(v, v + 1))(V)


# ---- NumPy functions ----------------------------------------------------------------------


def concatenators(v, x):
    return (np.r_[v, 0.0, v[:2], 0:3, -1:1:5j], np.r_["0,2", v, v], np.r_["1", x, x],
            np.r_["0,2,0", v, v], np.c_[v, v * 2, 0:5], np.c_[x, x])


def test_r_and_c():
    compiled_equals_numpy(concatenators, V, X)
    compiled_equals_numpy(lambda v: np.r_[v, 0.5, 2], V.astype(np.float32))


def test_r_with_symbolic_slice_bound():
    k = jit(lambda v: np.r_[0:v.shape[0]] * v + np.r_[v, v][: v.shape[0]], signature="f64[n] -> f64[n]")
    same(k(V), np.r_[0:5] * V + V)


def test_einsum_sublist_form():
    def f(a, b, t):
        return (np.einsum(a, [0, 1], b, [1, 2], [0, 2]), np.einsum(a, [0, 1]),
                np.einsum(t, [Ellipsis, 1], t, [Ellipsis, 1], [Ellipsis]),
                np.einsum(a, [1, 0], [0, 1]))
    compiled_equals_numpy(f, X, X.T.copy(), T, rtol=1e-12)


def splits(x, v, t):
    return (np.array_split(x, 4, axis=1), np.array_split(v, 3), np.array_split(v, [1, 3, 10]),
            np.array_split(v, 7), np.split(x, 2), np.hsplit(x, 3), np.hsplit(v, [2]),
            np.vsplit(x, [1, 3]), np.dsplit(t, 2))


def test_split_family():
    compiled_equals_numpy(splits, X, V, T)


def test_row_stack_matches_numpy_2():
    def f(v):
        return np.row_stack([v, v])
    with pytest.warns(DeprecationWarning, match="row_stack"):
        got = jit(f)(V)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        same(got, f(V))


def turns(t, x):
    out = [np.rollaxis(t, ax, st) for ax in range(3) for st in range(-3, 4)]
    out += [np.rot90(x, k) for k in range(-1, 5)] + [np.rot90(t, k, axes=(2, 0)) for k in (1, 3)]
    return out


def test_rollaxis_and_rot90():
    compiled_equals_numpy(turns, T, X)


def test_shape_functions_under_grad():
    def f(x):
        parts = np.array_split(x, 3, axis=1)
        return np.sum(np.rot90(x) ** 2 * np.arange(4.0)) + np.sum(np.r_[parts[0][0], parts[2][1]] ** 3)
    np.testing.assert_allclose(jit(grad(f))(X), jacobian(f, (X,)), rtol=1e-7, atol=1e-8)


# ---- Python loops on shapes ---------------------------------------------------------------


def halvings(x):
    n = x.shape[0]
    k = 0
    while n > 1:
        n //= 2
        k += 1
    if n == 1 and x.ndim == 1:
        k += 10
    return x * k


def test_while_and_if_on_shape_values():
    for n in (1, 5, 16):
        compiled_equals_numpy(halvings, np.ones(n))


def test_shape_condition_with_symbolic_size_is_a_clear_error():
    with pytest.raises(UnsupportedError, match="symbolic size") as info:
        jit(halvings, signature="f64[n] -> f64[n]")(np.ones(4))
    assert "concrete size in the signature" in info.value.hint


def parity(x):
    n = x.shape[0]
    if n % 2 == 0:          # under a signature: a run-time branch on the size
        return x * 2.0
    return x - 1.0


def test_if_on_symbolic_size_arithmetic_is_a_run_time_branch():
    k = jit(parity, signature="f64[n] -> f64[n]")
    for n in (3, 4):
        same(k(np.arange(float(n))), parity(np.arange(float(n))))


def at_then_scan(a, idx):
    y = a.copy()
    np.maximum.at(y, idx, 0.3)          # one update per index entry, in order
    np.multiply.at(y, idx[:2], 1.5)
    return np.sum(np.logaddexp.accumulate(y, axis=1) ** 2) + np.sum(np.subtract.reduce(y, axis=0) ** 2)


def test_sequential_ufunc_at_under_grad_and_vmap():
    idx = np.array([0, 0, 3])
    got = jit(grad(at_then_scan))(X, idx)
    np.testing.assert_allclose(got, jacobian(lambda a: at_then_scan(a, idx), (X,)),
                               rtol=1e-6, atol=1e-7)
    xs, ids = RNG.standard_normal((3, 4, 6)), np.array([[0, 1, 2], [3, 3, 3], [1, 0, 1]])
    same(jit(vmap(at_then_scan))(xs, ids), np.array([at_then_scan(x, i) for x, i in zip(xs, ids)]),
         rtol=1e-12)


def sized_by_max(x):
    n = x.shape[0]
    return np.zeros(max(n - 2, 1)) + 1.0, x[: min(n, 3)]


def test_min_max_of_symbolic_sizes_stay_symbolic():
    k = jit(sized_by_max, signature="f64[n]")
    for n in (1, 2, 5):
        same(k(np.arange(float(n))), sized_by_max(np.arange(float(n))))


def test_a_lambda_continued_on_the_next_line():
    """The lambda's whole body, not its first line (which parses as a lambda too)."""
    f = (lambda x: np.sin(x)
         + 100.0)
    g = [lambda y: y * 2, lambda y: (y
                                    + 3)]
    x = np.linspace(0, 1, 5)
    np.testing.assert_allclose(jit(f)(x), np.sin(x) + 100.0)
    np.testing.assert_allclose(jit(g[0])(x), x * 2)
    np.testing.assert_allclose(jit(g[1])(x), x + 3)
