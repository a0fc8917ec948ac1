"""Transforms of functions defined inside compiled code (lambdas and nested defs that
close over values of the function being compiled), and kernels called there with
Python scalars and NumPy arrays.

A closed-over value is a constant for the inner transform and is differentiated (or
batched) by a transform of the enclosing function, as in JAX and torch.func. Every
result is compared with an oracle that does not use the compiler: a closed form in
NumPy, a Python loop over examples, or finite differences (tests/fd.py) of the
closed form.
"""
from __future__ import annotations

import numpy as np
import pytest

from compiler import (grad, grad_and_value, hessian, jacfwd, jacrev, jit, jvp, linearize, vjp, vmap)
from compiler.errors import CompileError, SideEffectError
from tests import fd

rng = np.random.default_rng(10)
X = rng.uniform(0.5, 1.5, 4)
M = rng.uniform(-1.0, 1.0, (3, 4))


def close(got, want, rtol=1e-9, atol=1e-12):
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=rtol, atol=atol)


# ---- one transform inside jit: the closed-over value is a constant -----------------------------
# Each function pairs with its closed form in NumPy (`*_ref`), the oracle of the compiled
# function and, through finite differences, of transforms of the compiled function.

def g_inner(x):                 # d/dy sum(sin(x*y)) at y = 0.7
    return grad(lambda y: np.sum(np.sin(x * y)))(0.7)


def g_inner_ref(x):
    return np.sum(x * np.cos(0.7 * x))


def gv_inner(x):                # (grad, value) of sum(x) * y**3 at y = 1.3
    def f(y):
        return np.sum(x) * y ** 3
    return grad_and_value(f)(1.3)


def gv_inner_ref(x):
    return (3 * np.sum(x) * 1.3 ** 2, np.sum(x) * 1.3 ** 3)


def jvp_inner(x):               # x * sin(y): value and tangent along t at y = x
    return jvp(lambda y: x * np.sin(y), (x,), (np.linspace(0.0, 1.0, 4),))


def jvp_inner_ref(x):
    return (x * np.sin(x), x * np.cos(x) * np.linspace(0.0, 1.0, 4))


def vjp_inner(x):               # cotangent c through x * exp(y) at y = x / 2
    out, back = vjp(lambda y: x * np.exp(y), x / 2)
    return out, back(np.arange(1.0, 5.0))[0]


def vjp_inner_ref(x):
    return (x * np.exp(x / 2), np.arange(1.0, 5.0) * x * np.exp(x / 2))


def linearize_inner(x):
    out, tangent = linearize(lambda y: np.tanh(x * y), x)
    return out, tangent(np.ones(4))


def linearize_inner_ref(x):
    return (np.tanh(x * x), x * (1 - np.tanh(x * x) ** 2))


def vmap_inner(x, m):           # per row r of m: r * x + sum(r)
    return vmap(lambda r: r * x + np.sum(r))(m)


def vmap_inner_ref(x, m):
    return np.stack([r * x + np.sum(r) for r in m])


def jacrev_inner(x):            # d/dy (x * sin(y)) at y = x: diag(x cos x)
    return jacrev(lambda y: x * np.sin(y))(x)


def jacfwd_inner(x):
    return jacfwd(lambda y: x * np.sin(y))(x)


def jac_ref(x):
    return np.diag(x * np.cos(x))


def hessian_inner(x):           # of sum(x * y**3) at y = x: diag(6 x y)
    return hessian(lambda y: np.sum(x * y ** 3))(x)


def hessian_ref(x):
    return np.diag(6 * x * x)


ONE_DEEP = [
    ("grad", g_inner, g_inner_ref),
    ("grad_and_value", gv_inner, gv_inner_ref),
    ("jvp", jvp_inner, jvp_inner_ref),
    ("vjp", vjp_inner, vjp_inner_ref),
    ("linearize", linearize_inner, linearize_inner_ref),
    ("jacrev", jacrev_inner, jac_ref),
    ("jacfwd", jacfwd_inner, jac_ref),
    ("hessian", hessian_inner, hessian_ref),
]


@pytest.mark.parametrize("name,f,ref", ONE_DEEP, ids=[c[0] for c in ONE_DEEP])
def test_transform_of_a_closure_inside_jit(name, f, ref):
    got, want = jit(f)(X), ref(X)
    for g, w in zip(fd.leaves(got), fd.leaves(want)):
        close(g, w)


def test_vmap_of_a_closure_inside_jit():
    close(jit(vmap_inner)(X, M), vmap_inner_ref(X, M))


# ---- perturbation confusion: the outer transform differentiates the closed-over value ---------

def test_nested_grad_of_lambdas():
    assert grad(lambda x: x * grad(lambda y: x * y)(2.0))(1.5) == 3.0
    # the inner derivative holds x constant: d/dy (x*y) = x, not d/dy (y*y) = 2y
    assert jit(lambda x: grad(lambda y: x * y)(2.0))(1.5) == 1.5


@pytest.mark.parametrize("name,f,ref", ONE_DEEP, ids=[c[0] for c in ONE_DEEP])
def test_outer_grad_through_an_inner_transform(name, f, ref):
    """jacrev of the whole function (which transforms a closure over x) against finite
    differences of its closed form: the closed-over x is differentiated by the outer one."""
    got = fd.leaves(jacrev(f)(X))
    for k, w in enumerate(fd.leaves(ref(X))):
        want = np.stack([fd.directional_derivative(ref, [X], [e])[k] for e in np.eye(4)], axis=-1)
        close(got[k], want, rtol=1e-6, atol=1e-8)


def test_outer_vmap_over_an_inner_transform():
    batch = rng.uniform(0.5, 1.5, (3, 4))
    for name, f, ref in ONE_DEEP:
        got = fd.leaves(vmap(f)(batch))
        for k in range(len(got)):
            close(got[k], np.stack([fd.leaves(ref(b))[k] for b in batch]), rtol=1e-9)


def test_outer_jvp_and_vmap_of_vmap_inner():
    t = rng.uniform(-1, 1, 4)
    _, tangent = jvp(vmap_inner, (X, M), (t, np.zeros_like(M)))
    close(tangent, fd.directional_derivative(vmap_inner_ref, [X, M], [t, None])[0], rtol=1e-6)
    batch = rng.uniform(0.5, 1.5, (2, 4))
    close(vmap(vmap_inner, in_dims=(0, None))(batch, M), np.stack([vmap_inner_ref(b, M) for b in batch]))


# ---- two deep ---------------------------------------------------------------------------------

def two_deep(x):
    """sum over y in a grid of d/dy [ y * d/dz (x * y * z**2) at z = y ] = d/dy (2 x y**3)."""
    def middle(y):
        return y * grad(lambda z: np.sum(x) * y * z ** 2)(y)
    return grad(middle)(1.3)


def two_deep_ref(x):
    return 6 * np.sum(x) * 1.3 ** 2


def test_two_deep_inside_jit_and_under_grad_and_vmap():
    close(jit(two_deep)(X), two_deep_ref(X))
    close(grad(two_deep)(X), [fd.directional_derivative(two_deep_ref, [X], [e])[0] for e in np.eye(4)],
          rtol=1e-6)
    batch = rng.uniform(0.5, 1.5, (3, 4))
    close(vmap(two_deep)(batch), [two_deep_ref(b) for b in batch])


def first(out):
    return out[0] if isinstance(out, tuple) else out


@pytest.mark.parametrize("name,f,ref", ONE_DEEP, ids=[c[0] for c in ONE_DEEP])
def test_every_transform_two_deep(name, f, ref):
    """grad of a lambda (closing over x) that calls a function transforming a lambda closing
    over x * s: d/ds sum(f(x * s)) at s = 1, against finite differences of the closed form."""
    def outer(x):
        return grad(lambda s: np.sum(first(f(x * s))))(1.0)
    want = fd.derivative(lambda e: np.sum(first(ref(X * (1.0 + e)))))[0]
    close(jit(outer)(X), want, rtol=1e-6)


def test_three_lambdas_deep():
    f = grad(lambda a: grad(lambda b: grad(lambda c: a * a * b * b * c * c)(1.5))(2.0))
    # d/dc = 2 a^2 b^2 c; d/db at c=1.5 = 6 a^2 b; at b=2: 12 a^2; d/da = 24 a
    assert f(3.0) == pytest.approx(72.0, rel=1e-12)


def test_hessian_of_a_closure_under_an_outer_transform():
    def f(x):
        return np.sum(hessian(lambda y: np.sum(x * np.sin(y)))(x))   # sum(-x sin x)
    close(grad(f)(X), -np.sin(X) - X * np.cos(X), rtol=1e-9)


def test_nested_defs_and_what_they_capture():
    def f(x):
        scale = [x, 2.0 * x]               # captured through a list, a dict and a bound method
        table = {"w": np.cos(x)}
        total = x.sum

        def inner(y):
            def inner2(z):
                return np.sum(scale[1] * table["w"]) * y * z + total() * z
            return grad(inner2)(y)
        return grad(inner)(0.5), grad(lambda y, s=x: np.sum(s) * y * y)(2.0)
    got = jit(f)(X)
    close(got[0], np.sum(2 * X * np.cos(X)), rtol=1e-12)
    close(got[1], 4 * np.sum(X), rtol=1e-12)


def test_a_transformed_closure_used_in_another_closure():
    def f(x):
        g = grad(lambda y: np.sum(x) * y * y)
        out, back = vjp(lambda y: x * np.sin(y), x)
        return vmap(lambda z: g(z))(x), vmap(lambda c: back(c)[0])(np.eye(4))
    got = jit(f)(X)
    close(got[0], 2 * np.sum(X) * X)
    close(got[1], np.diag(X * np.cos(X)))


# ---- kernels and NumPy functions called with Python scalars inside compiled code -------------

def scaled_sin(a, x):
    return a * np.sin(x)


def square(y):
    return y * y


CAPTURED = np.array([1.0, 2.0, 3.0])


def test_kernels_with_python_scalars_and_numpy_arrays():
    close(jit(lambda x: grad(scaled_sin)(0.3, x))(1.2), np.sin(1.2))
    close(jit(lambda x: grad(scaled_sin, argnums=1)(0.3, x))(1.2), 0.3 * np.cos(1.2))
    value, tangent = jit(lambda y: jvp(np.sin, (y,), (1.0,)))(0.5)
    close(value, np.sin(0.5))
    close(tangent, np.cos(0.5))
    close(jit(lambda x: vmap(square, in_dims=0)(CAPTURED) * x)(2.0), 2.0 * CAPTURED ** 2)
    close(jit(lambda x: vmap(lambda c: c * x, in_dims=0)(CAPTURED))(2.0), 2.0 * CAPTURED)
    close(vmap(lambda a: jvp(lambda x: x * x, (a,), (np.ones_like(a),))[1])(np.array([1.0, 4.0])),
          [2.0, 8.0])


def test_symbolic_sizes_captured():
    def f(x):
        n = x.shape[0]
        return vmap(lambda r: r * n)(x), grad(lambda a: a * n)(1.0)
    k = jit(f, signature="f64[n, 2]")
    for n in (1, 3):
        rows, d = k(np.ones((n, 2)))
        close(rows, np.full((n, 2), float(n)))
        close(d, float(n))


# ---- mistakes ---------------------------------------------------------------------------------

def test_mistakes_are_compile_errors_at_the_line():
    with pytest.raises(CompileError, match="one floating-point scalar") as e:
        jit(lambda x: grad(lambda y: y * np.ones(3))(x))(2.0)
    assert "test_closures.py" in str(e.value)

    def appends(x):
        seen = [x]

        def h(y):
            seen.append(y)
            return y
        return grad(h)(1.0)
    with pytest.raises(SideEffectError, match="append"):
        jit(appends)(X)


# ---- inside data-dependent branches and loops ---------------------------------------------------

def in_branches_and_loops(x, n):
    if x.sum() > 0:                                 # a cond: the closure reads x inside a region
        y = grad(lambda t: np.sum(x) * t * t)(2.0)
    else:
        y = 0.0 * x.sum()
    acc = 0.0
    for i in range(n):                              # a loop with a run-time trip count
        acc = acc + grad(lambda t: np.sum(x) * t * t + acc * t)(float(i))
    return y + acc + jit(lambda t: t * x[0])(3.0)


def in_branches_and_loops_ref(x, n):
    acc = 0.0
    for i in range(n):
        acc = acc + 2 * np.sum(x) * i + acc
    return (4 * np.sum(x) if x.sum() > 0 else 0.0) + acc + 3.0 * x[0]


def test_closures_inside_branches_and_loops():
    k = jit(in_branches_and_loops)
    for x in (X, -X):
        for n in (0, 3):
            close(k(x, np.array(n)), in_branches_and_loops_ref(x, n), rtol=1e-12)
    t = rng.uniform(-1, 1, 4)
    close(jvp(lambda x: in_branches_and_loops(x, 3), (X,), (t,))[1],
          fd.directional_derivative(lambda x: in_branches_and_loops_ref(x, 3), [X], [t])[0], rtol=1e-6)
