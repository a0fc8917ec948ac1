"""Elementwise roots that share values share one loop nest (backend/fusion.py, `_Nests`).

A second derivative built with ``jvp(grad(s))`` returns the gradient and the Hessian-vector
product: two results whose expressions share most of their values (``sqrt(1 - x**2)`` for
arcsin). They are computed in one loop nest, the shared values once per element in
registers, instead of one loop per shared value writing a buffer the others read back. The
results are checked against closed forms, in float64 and float32; the loop nests are
counted in the kernel's LLVM IR (one-dimensional arguments: one loop per nest).
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from compiler import grad, jit, jvp
from compiler.backend.fusion import schedule
from compiler.ir.parser import parse

N = 37       # not a multiple of any vector width: the loops' tails run too


def _loops(kernel, *args) -> int:
    return len(re.findall(r"^loop(?:\.\d+)?:", kernel.lower(*args).llvm, re.M))


def _arcsin_sum(x):
    return np.sum(np.arcsin(x))


def _arcsinh_sum(x):
    return np.sum(np.arcsinh(x))


def _arctanh_sum(x):
    return np.sum(np.arctanh(x))


def arcsin_hvp(x, v):
    return jvp(grad(_arcsin_sum), (x,), (v,))


def arcsinh_hvp(x, v):
    return jvp(grad(_arcsinh_sum), (x,), (v,))


def arctanh_hvp(x, v):
    return jvp(grad(_arctanh_sum), (x,), (v,))


# f' and f'' in closed form, computed in float64
CASES = {
    "arcsin": (jit(arcsin_hvp), lambda x: 1 / np.sqrt(1 - x * x), lambda x: x / (1 - x * x) ** 1.5),
    "arcsinh": (jit(arcsinh_hvp), lambda x: 1 / np.sqrt(1 + x * x), lambda x: -x / (1 + x * x) ** 1.5),
    "arctanh": (jit(arctanh_hvp), lambda x: 1 / (1 - x * x), lambda x: 2 * x / (1 - x * x) ** 2),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(CASES))
def test_second_derivative_is_one_loop_nest(name, dtype):
    kernel, d1, d2 = CASES[name]
    x = np.linspace(-0.9, 0.9, N).astype(dtype)
    v = np.cos(np.arange(N)).astype(dtype)
    g, hv = kernel(x, v)
    assert g.dtype == dtype and hv.dtype == dtype
    wide = x.astype(np.float64)
    rtol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(g, d1(wide), rtol=rtol)
    np.testing.assert_allclose(hv, d2(wide) * v, rtol=rtol, atol=rtol * np.max(np.abs(d2(wide))))
    assert _loops(kernel, x, v) == 1


def shared_then_reduced(x):
    e = np.exp(x)
    y = e * x
    return y, e * np.sum(y)


def in_place_pair(u, w):
    s = np.sqrt(u * u + 1.0)
    u += s * 0.5
    w -= s * u
    return u.sum()


def test_a_root_read_by_a_later_loop_is_not_merged_with_it():
    """y is summed and the sum scales e * sum(y): y's loop must end before the second result's
    starts, so e (read by both) is written by y's loop, which the second loop reads."""
    kernel = jit(shared_then_reduced)
    x = np.linspace(-1.0, 1.0, N)
    y, z = kernel(x)
    e = np.exp(x)
    np.testing.assert_allclose(y, e * x, rtol=1e-14)
    np.testing.assert_allclose(z, e * np.sum(e * x), rtol=1e-12)
    assert _loops(kernel, x) == 3         # {e, y}, the sum, the second result


def test_arguments_updated_in_place_with_a_shared_value():
    """Two updated arguments computed from one shared value, the second reading the first's
    new value: as NumPy runs the statements."""
    kernel = jit(in_place_pair)
    u0 = np.linspace(-2.0, 2.0, N)
    w0 = np.sin(np.arange(N, dtype=np.float64))
    u, w = u0.copy(), w0.copy()
    total = kernel(u, w)
    ru, rw = u0.copy(), w0.copy()
    rtotal = in_place_pair(ru, rw)
    np.testing.assert_allclose(u, ru, rtol=1e-14)
    np.testing.assert_allclose(w, rw, rtol=1e-14)
    np.testing.assert_allclose(total, rtotal, rtol=1e-12)


def test_schedule_of_two_results_sharing_a_value():
    fn = parse('''
func @f(%x: f64[n], %v: f64[n]) -> (f64[n], f64[n]) {
  %0 = sqrt(%x) : f64[n]
  %1 = mul(%0, %x) : f64[n]
  %2 = mul(%0, %v) : f64[n]
  %3 = add(%2, %0) : f64[n]
  return %1, %3
}''')
    body = fn.body
    sched = schedule(body)
    assert set(sched.materialized) == set(body.args) | set(body.results)
    assert list(sched.nests.values()) == [list(body.results)]
