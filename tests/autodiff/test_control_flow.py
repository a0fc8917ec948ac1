"""Differentiation through data-dependent control flow, and what AD rejects.

* a data-dependent ``if`` is differentiated through the branch taken, in both modes;
* a data-dependent ``while`` in forward mode (jvp, jacfwd): Newton's iteration for a
  cube root, compared with finite differences of the uncompiled solver and with the
  implicit-function derivative;
* reverse mode through that ``while``: DataDependentControlFlowError at the loop's line;
* ``.item()`` / ``float()`` of a value depending on a differentiated input:
  DataDependentOperationError at that line.

Every rejection is checked for its class, its ``lineno`` (the user's line, found with
inspect), the source line and a caret in the message, and a hint.
"""
from __future__ import annotations

import inspect
import os

import numpy as np
import pytest

from compiler import grad, hessian, jacfwd, jacrev, jvp, vjp
from compiler.errors import CompileError, DataDependentControlFlowError, DataDependentOperationError
from tests import fd


def line_of(fn, text: str) -> int:
    """The absolute line number of the first line of `fn` containing `text`."""
    lines, first = inspect.getsourcelines(fn)
    for k, line in enumerate(lines):
        if text in line:
            return first + k
    raise AssertionError(f"{text!r} not in {fn.__name__}")


def assert_points_at(e: CompileError, fn, text: str) -> None:
    assert isinstance(e, CompileError)
    assert os.path.basename(e.filename) == os.path.basename(__file__), e.filename
    assert e.lineno == line_of(fn, text), f"error at line {e.lineno}, expected the line of {text!r}"
    msg = str(e)
    assert text.strip() in msg, f"the message does not show the source line:\n{msg}"
    assert "^" in msg, f"no caret in the message:\n{msg}"
    assert e.hint, "no hint"


# ---- if ---------------------------------------------------------------------------------------------------

def branchy(x, y):
    if np.sum(x * y) > 0.0:
        z = np.sin(x) * y
    else:
        z = np.exp(x) - y ** 2
    return z


def branchy_scalar(x, y):
    return np.sum(branchy(x, y))


@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["true", "false"])
def test_if_reverse_and_forward_mode_follow_the_branch_taken(sign):
    r = np.random.default_rng(4)
    x, y = np.abs(r.standard_normal(3)) * sign, np.abs(r.standard_normal(3)) + 0.5
    gx, gy = grad(branchy_scalar, argnums=(0, 1))(x, y)
    if sign > 0:
        want_x, want_y = np.cos(x) * y, np.sin(x)
    else:
        want_x, want_y = np.exp(x), -2 * y
    np.testing.assert_allclose(gx, want_x, rtol=1e-13)
    np.testing.assert_allclose(gy, want_y, rtol=1e-13)
    np.testing.assert_allclose(gx, fd.jacobian(branchy_scalar, (x, y), 0), rtol=1e-7, atol=1e-9)
    tx, ty = r.standard_normal(3), r.standard_normal(3)
    out, t = jvp(branchy, (x, y), (tx, ty))
    np.testing.assert_allclose(out, branchy(x, y), rtol=1e-13)
    np.testing.assert_allclose(t, want_x * tx + want_y * ty, rtol=1e-12)
    np.testing.assert_allclose(jacfwd(branchy)(x, y), jacrev(branchy)(x, y), rtol=1e-13, atol=1e-15)


def ifexp_and_or(x):
    s = np.sum(x)
    a = x ** 2 if s > 0 else x ** 3
    return np.sum(a) * (2.0 if (s > -1 and s < 1) else 1.0)


@pytest.mark.parametrize("scale", [0.1, 2.0, -2.0])
def test_conditional_expression_and_boolean_operators(scale):
    x = scale * np.array([0.5, 1.0, 1.5])
    g = grad(ifexp_and_or)(x)
    np.testing.assert_allclose(g, fd.jacobian(ifexp_and_or, (x,)), rtol=1e-7, atol=1e-9)


def test_second_order_through_if():
    x = np.array([0.3, 0.4, 0.5])
    np.testing.assert_allclose(hessian(branchy_scalar)(x, np.ones(3)), np.diag(-np.sin(x)), rtol=1e-12,
                               atol=1e-15)


# ---- while --------------------------------------------------------------------------------------------------

def newton_cbrt(a):
    """The cube root of a (a > 0) by Newton's method, iterating until converged."""
    x = a * 0.5 + 0.5
    step = (x ** 3 - a) / (3 * x ** 2)
    while np.max(np.abs(step)) > 1e-14:
        x = x - step
        step = (x ** 3 - a) / (3 * x ** 2)
    return x - step


def test_jvp_through_data_dependent_while():
    a = np.array([0.5, 2.0, 8.0, 27.0])
    t = np.array([1.0, -0.5, 2.0, 0.25])
    out, tan = jvp(newton_cbrt, (a,), (t,))
    np.testing.assert_allclose(out, np.cbrt(a), rtol=1e-14)
    # the iterate's own derivative converges to the implicit-function derivative 1 / (3 x^2)
    np.testing.assert_allclose(tan, t / (3 * np.cbrt(a) ** 2), rtol=1e-10)
    along_t, = fd.directional_derivative(newton_cbrt, [a], [t], h=1e-6)
    np.testing.assert_allclose(tan, along_t, rtol=1e-6)


def test_jacfwd_through_data_dependent_while():
    a = np.array([1.5, 3.0, 10.0])
    j = jacfwd(newton_cbrt)(a)
    np.testing.assert_allclose(j, np.diag(1 / (3 * np.cbrt(a) ** 2)), rtol=1e-10, atol=1e-15)


def test_grad_through_data_dependent_while_is_rejected_at_the_loop():
    with pytest.raises(DataDependentControlFlowError) as info:
        grad(lambda a: np.sum(newton_cbrt(a)))(np.array([2.0, 3.0]))
    assert_points_at(info.value, newton_cbrt, "while np.max(np.abs(step)) > 1e-14:")


@pytest.mark.parametrize("transform", ["vjp", "jacrev", "hessian"])
def test_every_reverse_mode_rejects_the_while(transform):
    a = np.array([2.0, 3.0])
    with pytest.raises(DataDependentControlFlowError) as info:
        if transform == "vjp":
            vjp(newton_cbrt, a)[1](np.ones(2))
        elif transform == "jacrev":
            jacrev(newton_cbrt)(a)
        else:
            hessian(lambda v: np.sum(newton_cbrt(v)))(a)
    assert_points_at(info.value, newton_cbrt, "while np.max(np.abs(step)) > 1e-14:")


def counted_loop(x, n):
    i = 0
    while i < n:          # the trip count depends on the integer input n only: not differentiated
        x = np.sin(x)
        i += 1
    return np.sum(x)


def test_while_on_a_non_differentiated_value_is_not_the_rejected_case():
    """torch/JAX semantics: only loops whose state depends on a differentiated input matter;
    here the state x does, so reverse mode is rejected; forward mode works."""
    x = np.array([0.3, 0.7])
    n = np.int64(3)
    out, t = jvp(counted_loop, (x, n), (np.ones(2), np.zeros((), np.int64)))
    want = fd.jacobian(lambda v: counted_loop(v, 3), (x,)) @ np.ones(2)
    np.testing.assert_allclose(t, want, rtol=1e-7)
    with pytest.raises(DataDependentControlFlowError) as info:
        grad(counted_loop)(x, n)
    assert_points_at(info.value, counted_loop, "while i < n:")


def loop_beside_the_derivative(x, n):
    c = np.abs(n) + 1
    while np.sum(c) < 40:     # the trip count depends on n; x is only carried through unchanged
        c = c * 3
    return np.sum(x * x * c)


def test_grad_of_a_value_a_while_only_carries_through():
    """Regions are isolated, so the loop carries x although its body never touches it: the
    derivative does not run through the loop, and reverse mode agrees with finite differences
    (and with forward mode)."""
    x, n = np.array([0.3, -0.7, 1.1]), np.array([1, 2, 3])
    want = fd.jacobian(lambda v: loop_beside_the_derivative(v, n), (x,))
    np.testing.assert_allclose(grad(loop_beside_the_derivative)(x, n), want, rtol=1e-7)
    np.testing.assert_allclose(jacrev(loop_beside_the_derivative)(x, n), want, rtol=1e-7)
    np.testing.assert_allclose(jacfwd(loop_beside_the_derivative)(x, n), want, rtol=1e-7)
    _, vjp_fn = vjp(loop_beside_the_derivative, x, n)
    np.testing.assert_allclose(vjp_fn(np.float64(1.0))[0], want, rtol=1e-7)


# ---- item / float ---------------------------------------------------------------------------------------------

def uses_float(x):
    s = np.sum(x)
    scale = float(s)
    return scale * np.sum(x ** 2)


def uses_item(x):
    m = x.max().item()
    return np.sum(x) * m


def float_of_constant(x, c):
    k = float(np.sum(c))        # c is not differentiated: allowed
    return k * np.sum(x)


@pytest.mark.parametrize("fn, text", [(uses_float, "scale = float(s)"), (uses_item, "m = x.max().item()")],
                         ids=["float", "item"])
@pytest.mark.parametrize("transform", ["grad", "jvp", "jacfwd"])
def test_item_and_float_of_a_differentiated_value_are_rejected(fn, text, transform):
    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises(DataDependentOperationError) as info:
        if transform == "grad":
            grad(fn)(x)
        elif transform == "jvp":
            jvp(fn, (x,), (np.ones(3),))
        else:
            jacfwd(fn)(x)
    assert_points_at(info.value, fn, text)


def test_float_of_a_non_differentiated_input_is_allowed():
    x, c = np.array([1.0, 2.0]), np.array([0.5, 1.0])
    np.testing.assert_allclose(grad(float_of_constant)(x, c), [1.5, 1.5], rtol=1e-15)
