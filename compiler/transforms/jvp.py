"""Forward-mode differentiation as an IR-to-IR pass.

Each op is re-emitted, and its primitive's ``jvp_rule`` emits the tangent
computation next to it. Tangents are symbolic zeros (None) until an active
input reaches them, so paths that do not depend on a differentiated input
cost nothing.

    func @f(%x: f64[3]) -> (f64[3]) { %0 = sin(%x) ... }
    jvp_function(f, [True])
    func @jvp_f(%x: f64[3], %tx: f64[3]) -> (f64[3], f64[3]) {
      %0 = sin(%x); %1 = cos(%x); %2 = mul(%tx, %1) ... return %0, %2 }
"""
from __future__ import annotations

from typing import Sequence

from compiler.errors import UnsupportedError
from compiler.ir.builder import Builder, new_block
from compiler.ir.core import Block, Function, Value
from compiler.ir.types import is_inexact
from compiler.primitives import ad
from compiler.transforms.vmap import clone_block


def jvp_block(block: Block, active: Sequence[bool]) -> tuple[Block, list[bool]]:
    """A block taking (primals..., tangents of active args...) and yielding
    (primal results..., tangents of float results...). Returns it and which
    results got tangents (all float results: zeros are instantiated)."""
    types = [a.type for a in block.args]
    t_types = [t for t, on in zip(types, active) if on]
    new = new_block(types + t_types, [a.hint for a in block.args] +
                    [f"t_{a.hint}" if a.hint else "" for a, on in zip(block.args, active) if on])
    primal: dict[Value, Value] = dict(zip(block.args, new.args))
    tangent: dict[Value, Value | None] = {a: None for a in block.args}
    for a, arg in zip([a for a, on in zip(block.args, active) if on], new.args[len(types):]):
        tangent[a] = arg
    b = Builder(new)
    out_t: list[Value | None]
    results: Sequence[Value]
    for op in block.ops:
        args = [primal[v] for v in op.operands]
        ts = [tangent[v] for v in op.operands]
        with b.at(op.loc):
            if op.regions and op.prim.jvp_rule is not None and any(t is not None for t in ts):
                # control ops build primal and tangent regions together
                results, out_t = op.prim.jvp_rule(b, op, args, ts)
                primal.update(zip(op.results, results))
                for r, t in zip(op.results, out_t):
                    tangent[r] = t if is_inexact(r.dtype) else None
                continue
            results = b.emit(op.prim, args, op.params, [clone_block(r) for r in op.regions])
            primal.update(zip(op.results, results))
            if all(t is None for t in ts):
                out_t = [None] * len(op.results)
            elif op.prim.jvp_rule is not None:
                out_t = list(op.prim.jvp_rule(b, op, args, ts))
            elif not op.prim.differentiable:
                out_t = [None] * len(op.results)
            else:
                raise UnsupportedError(f"forward-mode differentiation of {op.prim.name} is not supported",
                                       op.loc)
        for r, t in zip(op.results, out_t):
            tangent[r] = t if is_inexact(r.dtype) else None
    outs = [primal[r] for r in block.results]
    with b.at(block.ops[-1].loc if block.ops else None):
        t_outs = [ad.instantiate(b, tangent[r], primal[r]) for r in block.results if is_inexact(r.dtype)]
    new.results = outs + t_outs
    return new, [is_inexact(r.dtype) for r in block.results]


def jvp_function(fn: Function, active: Sequence[bool]) -> Function:
    """`fn` with tangent inputs for the active (float) arguments and tangent outputs for
    every float result."""
    active = [on and is_inexact(t.dtype) for on, t in zip(active, fn.in_types)]
    body, _ = jvp_block(fn.body, active)
    names = list(fn.arg_names) + [f"t_{n}" for n, on in zip(fn.arg_names, active) if on]
    return Function(f"jvp_{fn.name}", body, names)
