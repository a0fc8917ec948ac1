"""A large loop body's short loops are vectorized but not unrolled (backend/loops.py).

A 4x4 LU over a large static stack runs in chunks of 64 matrices: a ``for`` whose body is
the unrolled factorization, one short loop over the chunk per entry and step. Unrolling
those hundreds of loops doubled the time LLVM took to optimize and emit the kernel and
made no faster code, so they carry ``llvm.loop.unroll.disable``; loop nests three deep (a
matrix product) and the loops of small bodies are left to LLVM (except a loop calling a vecmath
function inlined after vectorization, float64 exp, exp2, expm1, tanh, sinh, cosh and
pow on AVX-512: codegen.loop).
"""
from __future__ import annotations

import re

import numpy as np

from compiler import jit


def _det(a):
    return np.linalg.det(a)


def _scale(x):
    return np.arctan(x) * 2.0 + x


DET = jit(_det)
SCALE = jit(_scale)


def _loops(llvm: str) -> tuple[int, int]:
    """(loop IDs, loop IDs that disable unrolling) in a module's LLVM IR."""
    u = re.search(r'^(!\d+) = !\{!"llvm\.loop\.unroll\.disable"\}$', llvm, flags=re.M)
    ids = re.findall(r"^!\d+ = distinct !\{(!\d+(?:, !\d+)*)\}$", llvm, flags=re.M)
    if u is None:
        return len(ids), 0
    return len(ids), sum(u.group(1) in refs.split(", ") for refs in ids)


def test_the_short_loops_of_a_chunked_factorization_are_not_unrolled():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((130, 4, 4)) + 4 * np.eye(4)
    np.testing.assert_allclose(DET(a), np.linalg.det(a), rtol=1e-10)
    total, rolled = _loops(DET.lower(a).llvm)
    assert rolled >= 50, (total, rolled)       # dozens of entries and steps per chunk


def test_a_small_kernel_keeps_its_loops_unrollable():
    x = np.linspace(-1.0, 1.0, 1000)
    np.testing.assert_allclose(SCALE(x), np.arctan(x) * 2.0 + x, rtol=1e-14)
    _, rolled = _loops(SCALE.lower(x).llvm)
    assert rolled == 0
