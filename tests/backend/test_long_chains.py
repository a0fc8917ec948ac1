"""Long chains of statements compile (no RecursionError, no quadratic blow-up) and compute
what NumPy computes.

The functions are written out statement by statement into a module file (a Python loop would
compile to a loop op): ``x = x * 1.0001 + 0.5`` a thousand times is one fused chain a
thousand ops deep, which the code generator evaluates from an explicit stack and fusion cuts
into loops of at most ``MAX_GROUP_OPS`` ops; chains through index ops (``x[::-1]``) are
materialized every ``MAX_NESTING`` levels.
"""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from compiler import jit
from compiler.backend.fusion import MAX_GROUP_OPS, MAX_NESTING, schedule
from compiler.ir.parser import parse
from compiler.ir.primitive import ELEMENTWISE

N = 37       # not a multiple of any vector width: the loops' tails run too


def _statements(kind: str, n: int) -> list[str]:
    if kind == "affine":
        return ["x = x * 1.0001 + 0.5"] * n
    if kind == "sin":
        return ["x = np.sin(x) + y"] * n
    if kind == "reductions":      # a reduction every 10 statements, elementwise in between
        return ["x = x * 0.999 + 0.001 * np.sum(x)" if k % 10 == 0 else "x = x * 1.0001 + y"
                for k in range(n)]
    if kind == "flips":           # index ops in the chain: x[::-1] reads at a remapped index
        return ["x = x[::-1] * 1.0001 + y" if k % 2 else "x = np.flip(x)" for k in range(n)]
    if kind == "reverses":        # cheap index remaps only
        return ["x = x[::-1]"] * n
    raise AssertionError(kind)


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    """chain(kind, n) -> (the Python function, its jitted Kernel), one file per chain."""
    root = tmp_path_factory.mktemp("chains")
    made = {}

    def make(kind: str, n: int):
        if (kind, n) not in made:
            path = root / f"chain_{kind}_{n}.py"
            body = "".join(f"    {s}\n" for s in _statements(kind, n))
            path.write_text(f"import numpy as np\n\n\ndef f(x, y):\n{body}    return x\n")
            spec = importlib.util.spec_from_file_location(f"chain_{kind}_{n}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            made[kind, n] = (module.f, jit(module.f, cache=False))
        return made[kind, n]
    return make


def _args():
    x = np.linspace(-1.0, 1.0, N)
    y = np.cos(np.arange(N)) * 1e-3
    return x, y


@pytest.mark.parametrize("kind, n", [("affine", 1000), ("affine", 5000), ("sin", 1000),
                                     ("reductions", 1000), ("flips", 1000), ("reverses", 1001)])
def test_long_chain_compiles_and_matches_numpy(chain, kind, n):
    f, kernel = chain(kind, n)
    x, y = _args()
    expected = f(x, y)
    np.testing.assert_allclose(kernel(x, y), expected, rtol=1e-10, atol=1e-12)


def test_long_chain_float32(chain):
    f, kernel = chain("sin", 1000)
    x, y = (a.astype(np.float32) for a in _args())
    expected = f(x, y)
    assert expected.dtype == np.float32
    np.testing.assert_allclose(kernel(x, y), expected, rtol=1e-4, atol=1e-6)


def _groups(block):
    sched = schedule(block)
    sizes: dict = {}
    for v, root in sched.groups.items():
        if root is not None and root != "cheap":
            sizes[root] = sizes.get(root, 0) + 1
    return sched, sizes


def test_fusion_cuts_a_long_chain_into_bounded_groups(chain):
    f, kernel = chain("affine", 1000)
    ir = _optimized_ir(kernel)
    sched, sizes = _groups(ir.body)
    assert max(sizes.values()) <= MAX_GROUP_OPS
    # every op is in some group, and the chain is not cut more often than the limit needs
    ops = len(ir.body.ops)
    assert len(sizes) <= 2 * (ops // MAX_GROUP_OPS + 2)


def test_fusion_keeps_a_short_chain_in_one_loop(chain):
    f, kernel = chain("affine", 40)           # 80 ops: under the limit
    ir = _optimized_ir(kernel)
    sched = schedule(ir.body)
    assert set(sched.materialized) == set(ir.body.args) | set(ir.body.results)


def test_index_chain_nesting_is_bounded(chain):
    f, kernel = chain("flips", 1000)
    ir = _optimized_ir(kernel)
    sched = schedule(ir.body)
    # walking down from any value to a materialized (or cheap) one crosses at most
    # MAX_NESTING index ops of its group
    depth: dict = {}
    for op in ir.body.ops:
        for r in op.results:
            below = [depth.get(a, 0) for a in op.operands
                     if not sched.is_materialized(a) and sched.groups.get(a) not in (None, "cheap")]
            depth[r] = max(below, default=0) + (op.prim.kind != ELEMENTWISE)
    assert max(depth.values()) <= MAX_NESTING + 1


def _optimized_ir(kernel):
    """The IR the backend receives (after canonicalize and simplify)."""
    return parse(kernel.lower(*_args()).ir_optimized)
