"""Loop-carried values: passed through, updated in place, or copied (backend/carries.py).

Every kernel is checked against the same Python function run by NumPy (the loops below are
data-dependent ``while`` loops on 0-d arrays, which NumPy runs as ordinary Python loops).
The plans are checked too: the cheap paths are taken where the module docstring says they
are safe, and not taken where an in-place update would read an overwritten value.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from compiler import jit
from compiler.backend.carries import COPY, IN_PLACE, PASS, plan_carries
from compiler.ir.parser import parse
from compiler.primitives import ops

RNG = np.random.default_rng(13)


# ---- the loops ----------------------------------------------------------------------------

def scale_rows(a, n):
    """One row per iteration, the row read and written (the in-place case of the issue)."""
    a = a.copy()
    i = n * 0
    while i < n:
        a[i] = a[i] * 0.5 + 1.0
        i = i + 1
    return a


def reverse_rows(a, n):
    """The row written is read reversed: each element reads another one of the window."""
    a = a.copy()
    i = n * 0
    while i < n:
        a[i] = a[i][::-1] * 2.0
        i = i + 1
    return a


def power_iteration(m, v, n):
    """m is read every iteration and never written: a pass-through carried value."""
    i = n * 0
    while i < n:
        v = m @ v
        v = v / np.sqrt(np.sum(v * v))
        i = i + 1
    return v


def invariant_returned(m, v, n):
    """A passed-through value used after the loop (its result is copied out once)."""
    i = n * 0
    while i < n:
        v = np.tanh(m @ v)
        i = i + 1
    return v, m, m.sum()


def prefix_rows(a, n):
    """Row i from row i - 1 (reads another window of the array it updates)."""
    a = a.copy()
    i = n * 0 + 1
    while i < n:
        a[i] = a[i - 1] * 0.9 + a[i]
        i = i + 1
    return a


def dp_table(c, zero):
    """D[i, j] = min(D[i-1, j], D[i, j-1]) + c[i, j]: element updates of a table (the
    first row and column are filled by loops of their own)."""
    n, m = c.shape
    d = np.zeros((n, m))
    d[0, 0] = c[0, 0]
    i = zero + 1
    while i < n:
        d[i, 0] = d[i - 1, 0] + c[i, 0]
        i = i + 1
    j = zero + 1
    while j < m:
        d[0, j] = d[0, j - 1] + c[0, j]
        j = j + 1
    i = zero + 1
    while i < n:
        j = zero + 1
        while j < m:
            d[i, j] = min(d[i - 1, j], d[i, j - 1]) + c[i, j]
            j = j + 1
        i = i + 1
    return d


def nested_reads_old_table(d, zero):
    """An inner loop updates the table the outer loop carries; the outer body reads the
    table from before the inner loop after it has run."""
    d = d.copy()
    n, m = d.shape
    acc = np.sum(d) * 0.0
    i = zero
    while i < n:
        before = d.copy()
        j = zero
        while j < m:
            d[i, j] = d[i, j] * 2.0 + 1.0
            j = j + 1
        acc = acc + np.sum(before * before)
        i = i + 1
    return d, acc


def old_row_after_write(a, n):
    """The row is read before the write and used after it: it must keep the old values."""
    a = a.copy()
    acc = a[0] * 0.0
    i = n * 0 + 1
    while i < n:
        old = a[i] * 3.0                # used only after the write: fused, it would be late
        a[i] = a[i - 1] + 1.0
        acc = acc + old
        i = i + 1
    return a, acc


def reads_old_array_after_update(a, n):
    """The old array is read after the update (a second name for it): copied, not in place."""
    a = a.copy()
    acc = a[0, 0] * 0.0
    i = n * 0
    while i < n:
        before = a
        a = a.copy()
        a[i] = -a[i]
        acc = acc + np.sum(before) - a[i, 0]   # the whole old array, after the update
        i = i + 1
    return a, acc


def yielded_twice(a, n):
    """The updated array is carried under two names."""
    a = a.copy()
    b = a.copy()
    i = n * 0
    while i < n:
        a[i] = a[i] + 1.0
        b = a
        i = i + 1
    return a, b


def swap_and_update(a, b, n):
    """Two carried arrays exchange places every iteration, one updated on the way."""
    a, b = a.copy(), b.copy()
    i = n * 0
    while i < n:
        a[i] = a[i] + b[i]
        a, b = b, a
        i = i + 1
    return a, b


def cond_reads_array(a, limit):
    """The loop's condition reads the array the body updates in place."""
    a = a.copy()
    i = np.int64(0)
    while np.sum(a) < limit:
        a[i % a.shape[0]] = a[i % a.shape[0]] + 1.0
        i = i + 1
    return a, i


def shift(a, n):
    """x[1:] = x[:-1]: the update reads an overlapping window of the old value."""
    a = a.copy()
    i = n * 0
    while i < n:
        a[1:] = a[:-1] * 1.5
        i = i + 1
    return a


def scatter_add(a, idx, n):
    """a[idx] += 1 with repeated indices: a scatter-add chain on the carried array."""
    a = a.copy()
    i = n * 0
    while i < n:
        a[idx] += 1.0
        a[i] = a[i] * 0.5
        i = i + 1
    return a


def branch_after_update(a, n):
    """A data-dependent if inside the body reads the array after the update."""
    a = a.copy()
    i = n * 0
    total = np.sum(a) * 0.0
    while i < n:
        a[i] = a[i] * 3.0
        if a[i, 0] > 0:
            total = total + np.sum(a)
        i = i + 1
    return a, total


def conditional_rows(a, n):
    """A data-dependent if updates the row: the cond is a link of the in-place chain."""
    a = a.copy()
    i = n * 0
    while i < n:
        if a[i, 0] > 0:
            a[i] = a[i] * 2.0
        else:
            a[i, 1] = -1.0
        i = i + 1
    return a


def dp_with_branches(c, zero):
    """The table filled in one nest, the boundary handled by data-dependent branches."""
    n, m = c.shape
    d = np.zeros((n, m))
    i = zero
    while i < n:
        j = zero
        while j < m:
            if i > 0 and j > 0:
                d[i, j] = min(d[i - 1, j], d[i, j - 1]) + c[i, j]
            elif i > 0:
                d[i, j] = d[i - 1, j] + c[i, j]
            elif j > 0:
                d[i, j] = d[i, j - 1] + c[i, j]
            else:
                d[i, j] = c[i, j]
            j = j + 1
        i = i + 1
    return d


def branch_reads_old_array(a, n):
    """A branch updates the array and then reads its old value: not in place."""
    a = a.copy()
    acc = a[0, 0] * 0.0
    i = n * 0
    while i < n:
        if a[i, 0] > 0:
            old = a.copy()
            a[i] = a[i] * 0.0
            acc = acc + np.sum(old)
        i = i + 1
    return a, acc


def _n(k):
    return np.array(k, dtype=np.int64)


CASES = {
    "scale_rows": (scale_rows, lambda: (RNG.standard_normal((50, 33)), _n(50))),
    "reverse_rows": (reverse_rows, lambda: (RNG.standard_normal((8, 9)), _n(8))),
    "conditional_rows": (conditional_rows, lambda: (RNG.standard_normal((30, 6)), _n(30))),
    "dp_with_branches": (dp_with_branches, lambda: (RNG.random((7, 11)), _n(0))),
    "branch_reads_old_array": (branch_reads_old_array, lambda: (RNG.standard_normal((12, 5)), _n(12))),
    "power_iteration": (power_iteration, lambda: (RNG.standard_normal((40, 40)),
                                                  RNG.standard_normal(40), _n(25))),
    "invariant_returned": (invariant_returned, lambda: (RNG.standard_normal((6, 6)),
                                                        RNG.standard_normal(6), _n(4))),
    "prefix_rows": (prefix_rows, lambda: (RNG.standard_normal((30, 17)), _n(30))),
    "dp_table": (dp_table, lambda: (RNG.random((9, 13)), _n(0))),
    "nested_reads_old_table": (nested_reads_old_table, lambda: (RNG.standard_normal((6, 5)), _n(0))),
    "old_row_after_write": (old_row_after_write, lambda: (RNG.standard_normal((20, 11)), _n(20))),
    "reads_old_array_after_update": (reads_old_array_after_update,
                                     lambda: (RNG.standard_normal((20, 11)), _n(20))),
    "yielded_twice": (yielded_twice, lambda: (RNG.standard_normal((20, 7)), _n(20))),
    "swap_and_update": (swap_and_update, lambda: (RNG.standard_normal((12, 5)),
                                                  RNG.standard_normal((12, 5)), _n(12))),
    "cond_reads_array": (cond_reads_array, lambda: (np.zeros(7), np.float64(30.0))),
    "shift": (shift, lambda: (RNG.standard_normal(19), _n(6))),
    "scatter_add": (scatter_add, lambda: (RNG.standard_normal((10, 3)),
                                          np.array([1, 4, 1, 9, 1]), _n(10))),
    "branch_after_update": (branch_after_update, lambda: (RNG.standard_normal((15, 4)), _n(15))),
}

KERNELS = {name: jit(fn) for name, (fn, _) in CASES.items()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_loop_matches_numpy(name):
    fn, make = CASES[name]
    args = make()
    expected = fn(*(a.copy() for a in args))
    got = KERNELS[name](*args)
    if not isinstance(expected, tuple):
        expected, got = (expected,), (got,)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


# ---- the plans ----------------------------------------------------------------------------

def _while_plans(name):
    """[(body, plan)] of every while op in the kernel's optimized IR, outermost first."""
    fn, make = CASES[name]
    ir = parse(KERNELS[name].lower(*make()).ir_optimized)
    found = []
    for op in ir.body.walk():
        if op.prim is ops.while_p:
            body = op.regions[1]
            found.append((body, plan_carries(body)))
    return found


def _mode_of_shape(name, shape):
    """The modes of the carried values of the given shape in the first while op."""
    body, plan = _while_plans(name)[0]
    return [m for a, m in zip(body.args, plan.modes) if tuple(a.type.shape) == shape]


def test_row_updates_are_in_place():
    assert _mode_of_shape("scale_rows", (50, 33)) == [IN_PLACE]
    assert _mode_of_shape("prefix_rows", (30, 17)) == [IN_PLACE]
    assert _mode_of_shape("old_row_after_write", (20, 11)) == [IN_PLACE]
    assert _mode_of_shape("scatter_add", (10, 3)) == [IN_PLACE]
    assert _mode_of_shape("shift", (19,)) == [IN_PLACE]
    assert _mode_of_shape("cond_reads_array", (7,)) == [IN_PLACE]


def test_branches_update_in_place():
    assert _mode_of_shape("conditional_rows", (30, 6)) == [IN_PLACE]
    for body, plan in _while_plans("dp_with_branches"):
        assert sorted(m for a, m in zip(body.args, plan.modes)
                      if tuple(a.type.shape) == (7, 11)) == sorted([PASS, IN_PLACE])
    assert _mode_of_shape("branch_reads_old_array", (12, 5)) == [COPY]


def test_invariants_pass_through():
    body, plan = _while_plans("power_iteration")[0]
    modes = {tuple(a.type.shape): m for a, m in zip(body.args, plan.modes)}
    assert modes[(40, 40)] == PASS
    assert modes[(40,)] == COPY


def test_dp_table_updates_elements_in_place():
    plans = _while_plans("dp_table")
    assert len(plans) == 4          # first column, first row, the two nested loops
    for body, plan in plans:
        # the table is updated in place (the outer loop of the nest: through the inner
        # loop's result, copied), the costs pass through
        modes = sorted(m for a, m in zip(body.args, plan.modes) if tuple(a.type.shape) == (9, 13))
        assert PASS in modes
    for body, plan in plans:       # the nest's outer loop too: the inner loop is its update
        assert sorted(m for a, m in zip(body.args, plan.modes)
                      if tuple(a.type.shape) == (9, 13)) == sorted([PASS, IN_PLACE])


def test_nested_loop_is_not_in_place_when_the_old_table_is_read_after_it():
    outer_body, outer = _while_plans("nested_reads_old_table")[0]
    assert [m for a, m in zip(outer_body.args, outer.modes) if tuple(a.type.shape) == (6, 5)] == [COPY]


def test_unsafe_aliasing_is_copied():
    assert _mode_of_shape("reads_old_array_after_update", (20, 11)) == [COPY]
    assert sorted(_mode_of_shape("yielded_twice", (20, 7))) == sorted([IN_PLACE, COPY])
    assert _mode_of_shape("swap_and_update", (12, 5)) == [COPY, COPY]


def test_reading_the_window_being_written_needs_no_temporary():
    body, plan = _while_plans("scale_rows")[0]
    assert not plan.force                      # a[i] = a[i] * 0.5 + 1.0: no row copy
    body, plan = _while_plans("old_row_after_write")[0]
    assert plan.force                          # the old row, used after the write, is kept


# ---- rows read with a run-time index: no copy of the array, vectorized row operations -------

def row_norms(x, n):
    out = np.zeros(x.shape[0])
    i = n * 0
    while i < n:
        r = x[i]
        out[i] = np.sqrt(np.sum(r * r))
        i = i + 1
    return out


ROW_NORMS = jit(row_norms, signature="f64[m, k], i64[]")


def test_row_reads_in_a_loop_match_numpy():
    x = RNG.standard_normal((37, 45))
    np.testing.assert_allclose(ROW_NORMS(x, _n(37)), np.sqrt(np.sum(x * x, axis=1)), rtol=1e-13)


def test_row_reads_in_a_loop_are_vectorized():
    lowered = ROW_NORMS.lower(RNG.standard_normal((4, 4)), _n(4))
    body = lowered.llvm_optimized
    # the row x[i] is read where it is used, and x (passed through the loop) stays in the
    # argument's buffer: nothing is copied
    assert "dynamic_slice" in lowered.ir_optimized
    assert "memcpy" not in body
    # the reduction over the row is widened (no division by the row length left in it)
    assert re.search(r"fmul (fast |contract |reassoc )*<\d+ x double>", body), body[:4000]
    assert re.search(r"fadd (fast |contract |reassoc )*<\d+ x double>", body)
