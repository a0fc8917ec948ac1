"""vmap of every primitive (IR level): batched == stack of per-example runs.

The oracle is the reference interpreter run once per batch element on the
unbatched function; the batched function runs in the interpreter and natively.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import compiler.primitives as P
from compiler.ir.interpret import interpret
from compiler.ir.verify import verify
from compiler.transforms.vmap import vmap_function
from tests.backend.prim_harness import compile_function, one_op_function

rng = np.random.default_rng(1)
B = 3


def arr(shape, dtype=np.float64):
    if np.dtype(dtype).kind == "f":
        return rng.uniform(-2, 2, shape).astype(dtype)
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) < 0.5
    return rng.integers(-4, 4, shape).astype(dtype)


def i64(v):
    return np.array(v, np.int64)


CASES = [
    ("add", [arr((4, 3)), arr((4, 3))], {}),
    ("exp", [arr((5,))], {}),
    ("select", [arr((2, 3), np.bool_), arr((2, 3)), arr((2, 3))], {}),
    ("convert", [arr((4,))], {"dtype": np.dtype(np.int32)}),
    ("broadcast_in_dim", [arr((3, 1))], {"shape": (2, 3, 4), "broadcast_dimensions": (1, 2)}),
    ("reshape", [arr((3, 4))], {"new_sizes": (2, 6)}),
    ("transpose", [arr((2, 3, 4))], {"permutation": (2, 0, 1)}),
    ("slice", [arr((5, 4))], {"start_indices": (1, 0), "limit_indices": (4, 4), "strides": (2, 1)}),
    ("rev", [arr((3, 4))], {"dimensions": (1,)}),
    ("pad", [arr((2, 3)), np.array(1.5)], {"low": (1, 0), "high": (0, 2)}),
    ("diagonal", [arr((3, 4))], {"axis1": 0, "axis2": 1}),
    ("concatenate", [arr((2, 3)), arr((1, 3))], {"dimension": 0}),
    ("reduce_sum", [arr((3, 4, 2))], {"axes": (0, 2)}),
    ("reduce_max", [arr((3, 4))], {"axes": (1,)}),
    ("argmax", [arr((3, 4))], {"axis": 1}),
    ("cumsum", [arr((3, 4))], {"axis": 0}),
    ("dot_general", [arr((3, 4)), arr((4, 2))], {"dimension_numbers": (((1,), (0,)), ((), ()))}),
    ("dot_general", [arr((2, 3, 4)), arr((2, 4))], {"dimension_numbers": (((2,), (1,)), ((0,), (0,)))}),
    ("take", [arr((5, 3)), i64([0, -1, 7, 2])], {"axis": 0}),
    ("take", [arr((2, 5, 3)), i64([[1, 4], [0, -2]])], {"axis": 1}),
    ("dynamic_slice", [arr((5, 4)), i64(2), i64(-1)], {"sizes": (2, 3)}),
    ("dynamic_update_slice", [arr((5, 4)), arr((2, 3)), i64(4), i64(1)], {}),
    ("update_slice", [arr((5, 4)), arr((2, 2))], {"start_indices": (0, 1), "limit_indices": (4, 4),
                                                  "strides": (2, 2)}),
    ("scatter", [arr((5, 3)), i64([1, 3, 1]), arr((3, 3))], {"axis": 0, "mode": "add"}),
    ("scatter", [arr((4, 5)), i64([0, 4]), arr((4, 2))], {"axis": 1, "mode": "set"}),
]


def _batch(a, d):
    if d is None:
        return a
    return np.moveaxis(np.stack([_perturb(a, k) for k in range(B)]), 0, d)


def _perturb(a, k):
    if a.dtype == np.int64 and a.ndim == 0:
        return a + k
    if a.dtype.kind == "f":
        return a + k
    return np.roll(a, k)


@pytest.mark.parametrize("name,args,params", CASES, ids=[f"{c[0]}{i}" for i, c in enumerate(CASES)])
def test_vmap_primitive_all_in_dims(name, args, params):
    fn = one_op_function(P.REGISTRY[name], args, params)
    choices = [[None] + list(range(a.ndim + 1)) for a in args]
    for in_dims in itertools.product(*choices):
        if all(d is None for d in in_dims):
            continue
        batched_args = [np.array(_batch(a, d), order="C") for a, d in zip(args, in_dims)]
        vfn = vmap_function(fn, list(in_dims), [0] * len(fn.results), B)
        verify(vfn)
        expected = [np.stack(outs) for outs in zip(*[
            interpret(fn, *[a if d is None else np.take(a, k, axis=d) for a, d in zip(batched_args, in_dims)])
            for k in range(B)])]
        got = interpret(vfn, *batched_args)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-12, err_msg=f"in_dims={in_dims}")
        if in_dims == tuple(0 for _ in args) or in_dims[1:] == (None,) * (len(args) - 1):
            native = compile_function(vfn)(*batched_args)
            for g, e in zip(native, expected):
                np.testing.assert_allclose(g, e, rtol=1e-12, err_msg=f"native, in_dims={in_dims}")
