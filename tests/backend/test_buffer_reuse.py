"""Temporaries are reused (codegen._Temporaries): a value's buffer goes to a later value of
the same dtype and shape once its last reader has been evaluated. Each program below has
a value whose last read is easy to get wrong (read through a cheap view, inside a loop, by a
reduction fused into a later loop); compiled == NumPy is the oracle."""
from __future__ import annotations

import re

import numpy as np
import pytest

from compiler import jit


def cheap_view_read_last(x):
    a = np.exp(x) + 1.0
    s = np.sum(a)
    b = a[::-1]                 # a view of a, read only by the last statement
    c = np.sin(x) * s
    d = np.cumsum(c)
    e = np.cumsum(d * 2.0)
    return e + b


def read_by_a_later_reduction(x):
    a = np.cos(x) * 3.0
    b = np.cumsum(a)
    c = np.cumsum(b + 1.0)
    d = np.cumsum(c * 0.5)
    return d + np.max(a)        # a read again, at the end, by a reduction


def read_inside_a_loop(x, n):
    a = np.tanh(x) * 2.0
    b = np.cumsum(a)
    i = n * 0
    acc = x * 0.0
    while i < n:                # a is an operand of the loop: read while it runs
        acc = acc + a * 0.5
        i = i + 1
    c = np.cumsum(b * 3.0)
    return acc + c


CASES = [
    (cheap_view_read_last, lambda: (np.linspace(-1, 1, 41),)),
    (read_by_a_later_reduction, lambda: (np.linspace(-2, 3, 57),)),
    (read_inside_a_loop, lambda: (np.linspace(-1, 2, 45), np.array(7))),
]


@pytest.mark.parametrize("fn, make", CASES, ids=[f.__name__ for f, _ in CASES])
def test_reused_buffers_keep_values_alive(fn, make):
    args = make()
    np.testing.assert_allclose(jit(fn)(*args), fn(*args), rtol=1e-12, atol=1e-12)


def test_a_cut_chain_needs_few_buffers(tmp_path):
    # 1,000 statements are cut into loops of fusion.MAX_GROUP_OPS ops: two buffers alternate
    body = "".join("    x = x * 1.0001 + 0.5\n" for _ in range(1000))
    path = tmp_path / "chain_reuse.py"
    path.write_text(f"def f(x):\n{body}    return x\n")
    ns: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    x = np.linspace(0.0, 1.0, 1000)
    kernel = jit(ns["f"], cache=False)
    np.testing.assert_allclose(kernel(x), ns["f"](x), rtol=1e-10)
    mallocs = len(re.findall(r'call i8\* @"malloc"', kernel.lower(x).llvm))
    assert mallocs <= 3
