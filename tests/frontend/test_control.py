"""Control flow: static if/for/while evaluated in Python; data-dependent if, while,
conditional expressions, and/or staged as cond/while ops with SSA merges."""
from __future__ import annotations

import numpy as np
import pytest

from compiler.frontend.control import free_values
from tests.frontend.helpers import check, rand


def ops_named(prog, name):
    return [op for op in prog.function.body.walk() if op.prim.name == name]


# ---- static control flow -------------------------------------------------------------------

def static_branches(x, mode):
    if x.ndim == 2 and mode == "rows":
        return x.sum(axis=1)
    elif mode == "cols":
        return x.sum(axis=0)
    return x.sum()


@pytest.mark.parametrize("mode", ["rows", "cols", "all"])
def test_static_if(mode):
    prog = check(static_branches, rand(3, 4), mode, static=(1,))
    assert not ops_named(prog, "cond")


def static_loops(x):
    acc = x * 0
    for i in range(4):
        if i == 1:
            continue
        if i == 3:
            break
        acc = acc + x * i
    else:
        acc = acc * 100
    for j, (a, b) in enumerate(zip([1, 2], [3, 4])):
        acc = acc + a * b * j
    k = 0
    while k < 3:
        acc = acc + k
        k += 1
    return acc


def test_static_loops_with_break_continue():
    prog = check(static_loops, rand(3))
    assert not ops_named(prog, "while")


def for_else(x):
    for i in range(3):
        x = x + i
    else:
        x = x * 2
    return x


def test_for_else():
    check(for_else, rand(2))


# ---- data-dependent if --------------------------------------------------------------------

def branch_merge(x):
    y = x
    if x.sum() > 0:
        y = x * 2
        z = 1.0
    else:
        z = 2
    return y + z


@pytest.mark.parametrize("sign", [1, -1])
def test_if_merges_variables(sign):
    prog = check(branch_merge, sign * np.abs(rand(4)))
    (op,) = ops_named(prog, "cond")
    assert op.params["kind"] == "if"
    for region in op.regions:
        assert not free_values(region)         # regions are isolated


def early_return(x):
    s = x.sum()
    if s > 1:
        return x * 2
    y = x - 1
    if s < -1:
        return y * 3
    return y


@pytest.mark.parametrize("scale", [3.0, -3.0, 0.01])
def test_early_return(scale):
    check(early_return, np.ones(3) * scale)


def return_in_loop(x):
    for i in range(4):
        x = x * 2
        if x.max() > 10:
            return x, i
    return x, -1


@pytest.mark.parametrize("start", [0.1, 1.0, 3.0, 20.0])
def test_return_inside_static_loop(start):
    check(return_in_loop, np.array([start, 0.5]))


def break_on_data(x):
    total = 0.0
    for i in range(5):
        total = total + x[i]
        if total > 1.5:
            break
    return total


@pytest.mark.parametrize("values", [[0.2, 0.3, 0.4, 0.5, 0.6], [2.0, 0, 0, 0, 0], [1, 0.3, 0.3, 0, 0]])
def test_data_dependent_break(values):
    check(break_on_data, np.array(values))


def nested_if(x, y):
    if x > 0:
        if y > 0:
            r = x + y
        else:
            r = x - y
    else:
        r = -x
    return r


@pytest.mark.parametrize("x, y", [(1.0, 2.0), (1.0, -2.0), (-1.0, 5.0)])
def test_nested_if(x, y):
    check(nested_if, np.float64(x), np.float64(y))


def if_updates_array(x):
    y = x.copy()
    if x[0] > 0:
        y[0] = 100.0
    return y


@pytest.mark.parametrize("first", [1.0, -1.0])
def test_if_with_in_place_update(first):
    check(if_updates_array, np.array([first, 2.0, 3.0]))


def if_on_one_element_array(x):
    if x[:1] > 0:              # a (1,) array: truthy as NumPy allows
        return x
    return -x


def test_if_on_single_element_array():
    check(if_on_one_element_array, np.array([1.0, -2.0]))
    check(if_on_one_element_array, np.array([-1.0, -2.0]))


def weak_merge(x):
    if x.sum() > 0:
        k = 1
    else:
        k = 2.5
    return x * k


def test_merge_of_python_numbers():
    check(weak_merge, rand(3).astype(np.float32) + 3)
    check(weak_merge, -np.abs(rand(3)).astype(np.float32))


# ---- expressions -----------------------------------------------------------------------------

def ifexp(x):
    return x * 2 if x.sum() > 0 else x - 1


def and_or(x, y):
    a = (x > 0) and (y > 0)
    b = (x > 0) or (y > 0)
    c = not (x > 0)
    return a, b, c


def chained(x):
    return 0 < x < 1


@pytest.mark.parametrize("x, y", [(1.0, 1.0), (1.0, -1.0), (-1.0, 1.0), (-1.0, -1.0)])
def test_and_or_not(x, y):
    prog = check(and_or, np.float64(x), np.float64(y))
    kinds = {op.params["kind"] for op in ops_named(prog, "cond")}
    assert kinds == {"and", "or"}


@pytest.mark.parametrize("v", [0.5, 2.0, -1.0])
def test_chained_comparison(v):
    check(chained, np.float64(v))


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_ifexp(sign):
    prog = check(ifexp, sign * np.ones(3))
    assert ops_named(prog, "cond")[0].params["kind"] == "ifexp"


def test_static_conditions_in_expressions():
    check(lambda x: x if x.ndim == 1 else x.ravel(), rand(2, 2))
    check(lambda x: (x.ndim > 1 and x.shape[0] == 2) or x.size > 100, rand(2, 2))


# ---- data-dependent while -----------------------------------------------------------------------

def newton_sqrt(a):
    x = a
    while np.abs(x * x - a) > 1e-12 * a:
        x = 0.5 * (x + a / x)
    return x


@pytest.mark.parametrize("a", [2.0, 10.0, 0.25, 1e6])
def test_newton_while(a):
    prog = check(newton_sqrt, np.float64(a))
    (op,) = ops_named(prog, "while")
    assert op.params["kind"] == "while"
    for region in op.regions:
        assert not free_values(region)


def count_steps(x):
    i = 0
    while x > 1:
        x = x / 2
        i += 1
    return x, i


@pytest.mark.parametrize("x", [0.5, 3.0, 1000.0])
def test_while_with_counter(x):
    check(count_steps, np.float64(x))


def while_updates_array(x):
    y = np.zeros(4)
    i = 0
    while i < 4 and x[0] > 0:
        y[i] = x[0] * i
        i += 1
    return y


def test_while_with_in_place_update():
    check(while_updates_array, np.array([2.0, 1.0]))
    check(while_updates_array, np.array([-2.0, 1.0]))


def view_taken_before_a_while(x, s):
    rev = x[::-1]                 # views of arrays the loop never writes stay valid
    row = x[0]
    c = np.abs(s) + 1.0
    while np.max(c) < 10.0:
        c = c * 2.0
    return rev * c + row


def test_views_taken_before_a_while_that_does_not_write_them():
    check(view_taken_before_a_while, rand(3, 2), np.float64(0.5))


def while_weak_widens(x):
    total = 0
    n = 0
    while n < 3:
        total = total + x[n]
        n = n + 1
    return total


def test_while_static_condition_becomes_loop():
    check(while_weak_widens, rand(4).astype(np.float32))


def collatz(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


@pytest.mark.parametrize("n", [1, 6, 27])
def test_collatz(n):
    check(collatz, np.int64(n))


def while_else(x):
    while x < 10:
        x = x * 2
    else:
        x = x + 1
    return x


def test_while_else():
    check(while_else, np.float64(3.0))


def gradient_descent(x0, lr):
    x = x0
    step = 0
    while np.linalg.norm(2 * x) > 1e-6 and step < 1000:
        x = x - lr * 2 * x
        step = step + 1
    return x, step


def test_gradient_descent_loop():
    check(gradient_descent, rand(3), 0.1)


def test_while_inside_if_and_if_inside_while():
    def f(x):
        if x.sum() > 0:
            while x.sum() < 100:
                x = x * 2
        return x
    check(f, np.ones(2))
    check(f, -np.ones(2))

    def g(x):
        while x.max() < 10:
            if x[0] > x[1]:
                x = x + np.array([1.0, 2.0])
            else:
                x = x + np.array([2.0, 1.0])
        return x
    check(g, np.array([0.5, 0.25]))


def break_inside_staged_if(x):
    if x.sum() > 0:
        for i in range(3):
            if x[i] > 1:
                break
            x = x + 1
    return x


def test_data_dependent_break_inside_data_dependent_if():
    # the break is rewritten into a flag (compiler/frontend/loops.py), so it may sit under
    # any number of data-dependent ifs
    for x in (np.ones(3), np.array([0.5, 1.5, 0.2]), np.array([0.1, 0.2, 0.3]), -np.ones(3)):
        check(break_inside_staged_if, x)


def locals_after_while(x):
    while x.sum() < 10:
        fresh = x * 2
        x = fresh
    return fresh


def test_name_first_defined_in_while_is_undefined_after():
    from compiler.errors import CompileError
    from tests.frontend.helpers import expect_error
    expect_error(locals_after_while, CompileError, np.ones(2), match="'fresh' may be undefined",
                 line_of="return fresh")


def static_loop_with_break_in_while(x):
    while x.sum() < 20:
        for i in range(3):
            if i == 2:
                break
            x = x + i + 1
    return x


def test_static_break_inside_data_dependent_while():
    check(static_loop_with_break_in_while, np.ones(2))
