"""The reference interpreter: runs any IR function with NumPy.

Each op is evaluated by its primitive's ``numpy_ref`` (control ops by their
``interpret`` rule). It is the living definition of the IR and the oracle
that the backend and every transform are tested against.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from compiler.ir import dims
from compiler.ir.core import Block, Function, Value
from compiler.ir.types import TensorType


def bind_symbols(types: Sequence[Any], arrays: Sequence[np.ndarray]) -> dict[str, int]:
    """Sizes of the symbolic dims, read off the argument shapes."""
    env: dict[str, int] = {}
    for t, a in zip(types, arrays):
        for d, n in zip(t.shape, np.shape(a)):
            if isinstance(d, dims.DimExpr) and len(d.terms) == 1 and d.terms[0][1] == 1 \
                    and len(d.terms[0][0]) == 1 and dims.atom_of(d.terms[0][0][0]) is None:
                env.setdefault(d.terms[0][0][0], n)
    return env


def concretize(value: Any, env: dict[str, int]) -> Any:
    """Replace symbolic dims inside op params by their sizes."""
    if isinstance(value, dims.DimExpr):
        return dims.evaluate(value, env)
    if isinstance(value, tuple):
        return tuple(concretize(v, env) for v in value)
    if isinstance(value, list):
        return [concretize(v, env) for v in value]
    return value


class Interpreter:
    def __init__(self, env: dict[str, int]) -> None:
        self.env = env

    def run_block(self, block: Block, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        values: dict[Value, np.ndarray] = dict(zip(block.args, args))
        for op in block.ops:
            operands = [values[v] for v in op.operands]
            if op.prim.interpret is not None:
                outs = op.prim.interpret(self, op, operands)
            else:
                assert op.prim.numpy_ref is not None, f"{op.prim.name} has no NumPy reference"
                params = {k: concretize(v, self.env) for k, v in op.params.items()}
                with np.errstate(all="ignore"):
                    outs = op.prim.numpy_ref(*operands, **params)
            outs = normalize_ref(outs, tuple(r.type for r in op.results))
            values.update(zip(op.results, outs))
        return [values[r] for r in block.results]


def interpret(fn: Function, *args: Any) -> list[np.ndarray]:
    """Run `fn` on NumPy arrays; returns the list of outputs."""
    arrays = [np.asarray(a, dtype=t.dtype) for a, t in zip(args, fn.in_types)]
    env = bind_symbols(fn.in_types, arrays)
    return Interpreter(env).run_block(fn.body, arrays)


def normalize_ref(result: Any, types: tuple[TensorType, ...]) -> tuple[np.ndarray, ...]:
    """Turn a NumPy reference's output into arrays of exactly the declared dtypes."""
    outs = result if isinstance(result, (tuple, list)) else (result,)
    return tuple(np.asarray(o).astype(t.dtype, copy=False) for o, t in zip(outs, types))
