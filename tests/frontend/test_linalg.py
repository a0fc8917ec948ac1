"""dot, matmul/@, inner, outer, tensordot, vdot, trace and einsum (all via dot_general)."""
from __future__ import annotations

import numpy as np
import pytest

from tests.frontend.helpers import check, rand

MATMUL_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                 ((5, 2, 3), (3, 4)), ((5, 2, 3), (5, 3, 4)), ((2, 3), (5, 3, 4)),
                 ((1, 2, 3), (4, 3, 2)), ((3,), (5, 3, 2)), ((5, 2, 3), (3,))]


@pytest.mark.parametrize("sa, sb", MATMUL_SHAPES)
def test_matmul(sa, sb):
    a, b = rand(*sa), rand(*sb)
    check(lambda x, y: x @ y, a, b)
    check(np.matmul, a, b)


DOT_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
              ((2, 2, 3), (3,)), ((2, 2, 3), (4, 3, 5)), ((), (3,)), ((2, 3), ())]


@pytest.mark.parametrize("sa, sb", DOT_SHAPES)
def test_dot(sa, sb):
    a, b = rand(*sa), rand(*sb)
    check(np.dot, a, b)
    if sa:
        check(lambda x, y: x.dot(y), a, b)


@pytest.mark.parametrize("da, db", [(np.float32, np.float32), (np.int32, np.int32),
                                    (np.int32, np.float64), (np.float32, np.float64)])
def test_matmul_dtypes(da, db):
    check(lambda x, y: x @ y, rand(2, 3, dtype=da), rand(3, 2, dtype=db), rtol=1e-6)


@pytest.mark.parametrize("sa, sb", [((3,), (3,)), ((2, 3), (4, 3)), ((2, 2, 3), (3,)),
                                    ((), (2,))])
def test_inner(sa, sb):
    check(np.inner, rand(*sa), rand(*sb))


def test_outer_vdot_trace():
    check(np.outer, rand(3), rand(4))
    check(np.outer, rand(2, 2), rand(3))
    check(np.vdot, rand(2, 3), rand(6))
    check(np.trace, rand(3, 3))
    check(lambda a: np.trace(a, 1), rand(3, 4))
    check(lambda a: a.trace(), rand(4, 4, dtype=np.int32))
    check(lambda a: np.trace(a, axis1=1, axis2=2), rand(2, 3, 3))


@pytest.mark.parametrize("axes", [0, 1, 2, ([1], [0]), ((0, 1), (1, 0)), ([2, 1], [0, 1])])
def test_tensordot(axes):
    check(lambda x, y: np.tensordot(x, y, axes), rand(3, 3, 3), rand(3, 3, 2))


EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("i,i->", [(3,), (3,)]),
    ("i,i", [(3,), (3,)]), ("i,j->ij", [(2,), (3,)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]),
    ("ij->ji", [(2, 3)]), ("ij->", [(2, 3)]), ("ij->j", [(2, 3)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]), ("ij,kj->ik", [(2, 3), (4, 3)]), ("ijk->kji", [(2, 3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("i,ij,j->", [(2,), (2, 3), (3,)]),
    ("iij->j", [(3, 3, 2)]), ("ba,ab->", [(2, 3), (3, 2)]), ("ij,j->i", [(2, 3), (3,)]),
    ("ijk,ikl->ijl", [(2, 3, 2), (2, 2, 3)]),
]


@pytest.mark.parametrize("spec, shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum(spec, shapes):
    arrays = [rand(*s) for s in shapes]
    check(lambda *xs: np.einsum(spec, *xs), *arrays)


def test_einsum_dtypes():
    check(lambda x, y: np.einsum("ij,jk->ik", x, y), rand(2, 3, dtype=np.int32),
          rand(3, 2, dtype=np.int32))
    check(lambda x, y: np.einsum("i,i->", x, y), rand(3, dtype=np.float32), rand(3))


@pytest.mark.parametrize("spec, shapes", [("...i->...", [(2, 3)]), ("...ij,...jk->...ik", [(2, 2, 3), (3, 4)]),
                                          ("i...,i...", [(3, 2), (3, 1)]), ("...i,...i", [(2, 3), (3,)])])
def test_einsum_ellipsis(spec, shapes):
    check(lambda *xs: np.einsum(spec, *xs), *[rand(*s) for s in shapes])
