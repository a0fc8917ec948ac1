"""jvp and vjp of every differentiable primitive (IR level).

Oracles: central finite differences (run by the reference interpreter on the
undifferentiated function) for jvp, and the dot-product identity
<u, J t> == <J^T u, t> linking vjp to jvp.
"""
from __future__ import annotations

import numpy as np
import pytest

import compiler.primitives as P
from compiler.ir.interpret import interpret
from compiler.ir.verify import verify
from compiler.transforms.jvp import jvp_function
from compiler.transforms.vjp import vjp_function
from tests.backend.prim_harness import compile_function, one_op_function

rng = np.random.default_rng(2)


def arr(shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape)


def i64(v):
    return np.array(v, np.int64)


POS = (0.3, 2.0)
CASES = [
    ("neg", [arr((4,))], {}), ("abs", [arr((4,))], {}), ("add", [arr((3,)), arr((3,))], {}),
    ("sub", [arr((3,)), arr((3,))], {}), ("mul", [arr((3,)), arr((3,))], {}),
    ("div", [arr((3,)), arr((3,), *POS)], {}), ("pow", [arr((3,), *POS), arr((3,))], {}),
    ("max", [arr((5,)), arr((5,))], {}), ("min", [arr((5,)), arr((5,))], {}),
    ("mod", [arr((4,), *POS), arr((4,), 2.5, 3.0)], {}),
    ("arctan2", [arr((4,)), arr((4,))], {}), ("hypot", [arr((4,)), arr((4,))], {}),
    ("exp", [arr((4,))], {}), ("exp2", [arr((4,))], {}), ("expm1", [arr((4,))], {}),
    ("log", [arr((4,), *POS)], {}), ("log2", [arr((4,), *POS)], {}), ("log10", [arr((4,), *POS)], {}),
    ("log1p", [arr((4,), *POS)], {}), ("sqrt", [arr((4,), *POS)], {}), ("cbrt", [arr((4,), *POS)], {}),
    ("sin", [arr((4,))], {}), ("cos", [arr((4,))], {}), ("tan", [arr((4,), -1, 1)], {}),
    ("tanh", [arr((4,))], {}), ("sinh", [arr((4,))], {}), ("cosh", [arr((4,))], {}),
    ("arcsin", [arr((4,), -0.9, 0.9)], {}), ("arccos", [arr((4,), -0.9, 0.9)], {}),
    ("arctan", [arr((4,))], {}),
    ("select", [rng.random((4,)) < 0.5, arr((4,)), arr((4,))], {}),
    ("convert", [arr((4,)).astype(np.float32)], {"dtype": np.dtype(np.float64)}),
    ("broadcast_in_dim", [arr((3, 1))], {"shape": (2, 3, 4), "broadcast_dimensions": (1, 2)}),
    ("reshape", [arr((3, 4))], {"new_sizes": (2, 6)}),
    ("transpose", [arr((2, 3, 4))], {"permutation": (2, 0, 1)}),
    ("slice", [arr((5, 4))], {"start_indices": (1, 0), "limit_indices": (5, 4), "strides": (2, 3)}),
    ("rev", [arr((3, 4))], {"dimensions": (1,)}),
    ("pad", [arr((2, 3)), np.array(1.5)], {"low": (1, 0), "high": (0, 2)}),
    ("diagonal", [arr((3, 3))], {"axis1": 0, "axis2": 1}),
    ("diagonal", [arr((2, 3, 4))], {"axis1": 2, "axis2": 0}),
    ("concatenate", [arr((2, 3)), arr((1, 3))], {"dimension": 0}),
    ("reduce_sum", [arr((3, 4, 2))], {"axes": (0, 2)}),
    ("reduce_prod", [arr((3, 4))], {"axes": (1,)}),
    ("reduce_prod", [arr((3, 4, 2))], {"axes": (0, 2)}),
    ("reduce_max", [arr((3, 4))], {"axes": (1,)}),
    ("reduce_min", [arr((3, 4))], {"axes": (0, 1)}),
    ("cumsum", [arr((3, 4))], {"axis": 1}),
    ("cumprod", [arr((3, 4), *POS)], {"axis": 0}),
    ("dot_general", [arr((3, 4)), arr((4, 2))], {"dimension_numbers": (((1,), (0,)), ((), ()))}),
    ("dot_general", [arr((2, 3, 4)), arr((2, 4))], {"dimension_numbers": (((2,), (1,)), ((0,), (0,)))}),
    ("dot_general", [arr((4, 3)), arr((2, 4))], {"dimension_numbers": (((0,), (1,)), ((), ()))}),
    ("dot_general", [arr((3,)), arr((4,))], {"dimension_numbers": (((), ()), ((), ()))}),
    ("take", [arr((5, 3)), i64([0, -1, 2, 2])], {"axis": 0}),
    ("dynamic_slice", [arr((5, 4)), i64(2), i64(1)], {"sizes": (2, 3)}),
    ("dynamic_update_slice", [arr((5, 4)), arr((2, 3)), i64(1), i64(0)], {}),
    ("update_slice", [arr((5, 4)), arr((2, 2))], {"start_indices": (0, 1), "limit_indices": (4, 4),
                                                  "strides": (2, 2)}),
    ("scatter", [arr((5, 3)), i64([1, 3, 1]), arr((3, 3))], {"axis": 0, "mode": "add"}),
    ("scatter", [arr((5, 3)), i64([1, 3]), arr((2, 3))], {"axis": 0, "mode": "set"}),
]

EPS = 1e-6


def _float_mask(args):
    return [a.dtype.kind == "f" for a in args]


@pytest.mark.parametrize("name,args,params", CASES, ids=[f"{c[0]}{i}" for i, c in enumerate(CASES)])
def test_jvp_matches_finite_differences_and_vjp_is_its_transpose(name, args, params):
    fn = one_op_function(P.REGISTRY[name], args, params)
    active = _float_mask(args)
    tangents = [rng.standard_normal(a.shape) for a, on in zip(args, active) if on]
    jfn = jvp_function(fn, active)
    verify(jfn)
    n_out = len(fn.results)
    got = interpret(jfn, *args, *tangents)
    primal_out, tangent_out = got[:n_out], got[n_out:]

    single = any(a.dtype == np.float32 for a in args)
    eps, rtol = (1e-2, 1e-3) if single else (EPS, 1e-5)   # float32 rounding needs a wider step

    def shifted(sign):
        it = iter(tangents)
        return [a + sign * eps * next(it) if on else a for a, on in zip(args, active)]
    plus, minus = interpret(fn, *shifted(+1)), interpret(fn, *shifted(-1))
    fd = [(p.astype(np.float64) - m) / (2 * eps) for p, m in zip(plus, minus)]
    for t, f in zip(tangent_out, fd):
        np.testing.assert_allclose(t, f, rtol=rtol, atol=1e-6, err_msg="jvp vs finite differences")
    for g, e in zip(primal_out, interpret(fn, *args)):
        np.testing.assert_allclose(g, e)

    vfn = vjp_function(fn, active)
    verify(vfn)
    cts = [rng.standard_normal(o.shape).astype(o.dtype) for o in primal_out]
    back = interpret(vfn, *args, *cts)[n_out:]
    lhs = sum(np.sum(u * t) for u, t in zip(cts, tangent_out))
    rhs = sum(np.sum(c * t) for c, t in zip(back, tangents))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-5 if single else 1e-9, atol=1e-12,
                               err_msg="<u, J t> != <J^T u, t>")

    native = compile_function(vfn)(*args, *cts)
    for g, e in zip(native[n_out:], back):
        np.testing.assert_allclose(g, e, rtol=1e-11, atol=1e-13, err_msg="native vjp vs interpreter")
