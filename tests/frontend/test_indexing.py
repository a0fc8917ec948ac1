"""Indexing and updates as Python semantics: iterating over rows, updates of local arrays
in loops, in-place operators and aliases.

Every kind of index and of functional update is an OpInfo of tests/ops/opinfo.py."""
from __future__ import annotations

import numpy as np

from tests.frontend.helpers import check, rand

X = rand(5, 4)


def test_iterate_rows():
    def f(a):
        total = 0.0
        for row in a:
            total = total + row.sum()
        return total
    check(f, X)

    def g(a):
        p, q = a[:2]
        return p - q
    check(g, X)


# ---- functional updates -------------------------------------------------------------------


def test_local_array_updates():
    def f(x):
        out = np.zeros(4)
        for i in range(4):
            out[i] = x[i].sum()
        return out
    check(f, X)

    def g(x):
        acc = np.array([0.0, 0.0])
        acc[0] = x.sum()
        acc[1] = x.max()
        return acc
    check(g, X)


def test_inplace_operators_on_local_arrays():
    def f(x):
        y = x * 1
        y += 1
        y *= 2
        z = y
        z -= 1                         # aliases see in-place updates
        return y, z
    check(f, X)

    def g(x):
        x += 1                         # in place: the caller's array too (tests/frontend/test_inplace.py)
        return x
    check(g, X.copy())
