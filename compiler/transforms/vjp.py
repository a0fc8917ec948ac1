"""Reverse-mode differentiation as an IR-to-IR pass, with per-primitive vjp rules.

The result recomputes the function (forward ops copied) and then walks the
ops backwards, calling each primitive's ``vjp_rule`` and summing cotangents
per value. Only ops on a path from a differentiated input to an output are
visited; cotangents of other values stay symbolic zeros.

    func @f(%x: f64[3]) -> (f64[]) { %0 = sin(%x); %1 = reduce_sum(%0) ... }
    vjp_function(f, [True])
    func @vjp_f(%x: f64[3], %ct: f64[]) -> (f64[], f64[3]) {
      %0 = sin(%x); %1 = reduce_sum(%0); %2 = broadcast_in_dim(%ct); %3 = cos(%x);
      %4 = mul(%2, %3); return %1, %4 }
"""
from __future__ import annotations

from typing import Sequence

from compiler.errors import DataDependentOperationError, UnsupportedError
from compiler.ir.builder import Builder, new_block
from compiler.ir.core import Block, Function, Op, Value
from compiler.ir.types import is_inexact
from compiler.primitives import ad
from compiler.transforms.vmap import clone_block


def _active_values(block: Block, active: Sequence[bool]) -> set[Value]:
    """Float values that depend on an active argument."""
    live = {a for a, on in zip(block.args, active) if on and is_inexact(a.dtype)}
    for op in block.ops:
        if any(v in live for v in op.operands):
            marker = op.params.get("data_dependent")
            if marker:
                raise DataDependentOperationError(
                    f"{marker} of a value that depends on a differentiated input: the derivative "
                    f"would silently stop here", op.loc,
                    "keep it an array (x.reshape(()) or x[0]); use np.where for choices")
            live.update(r for r in op.results if is_inexact(r.dtype))
    return live


def vjp_block(block: Block, active: Sequence[bool], with_primals: bool = True) -> Block:
    """A block taking (primals..., cotangents of float results...) and yielding
    (primal results..., cotangents of the active arguments...); without the primal
    results when `with_primals` is False."""
    out_ct_types = [r.type for r in block.results if is_inexact(r.dtype)]
    new = new_block([a.type for a in block.args] + out_ct_types,
                    [a.hint for a in block.args] + ["ct"] * len(out_ct_types))
    live = _active_values(block, active)
    primal: dict[Value, Value] = dict(zip(block.args, new.args))
    b = Builder(new)
    for op in block.ops:
        with b.at(op.loc):
            results = b.emit(op.prim, [primal[v] for v in op.operands], op.params,
                             [clone_block(r) for r in op.regions])
        primal.update(zip(op.results, results))
    ct: dict[Value, Value | None] = {}
    float_results = [r for r in block.results if is_inexact(r.dtype)]
    for r, c in zip(float_results, new.args[len(block.args):]):
        if r in live:
            ct[r] = ad.add_any(b, ct.get(r), c)
    for op in reversed(block.ops):
        _backward(b, op, primal, ct, live)
    with b.at(block.ops[-1].loc if block.ops else None):
        arg_cts = [ad.instantiate(b, ct.get(a), primal[a]) for a, on in zip(block.args, active) if on]
    new.results = ([primal[r] for r in block.results] if with_primals else []) + arg_cts
    return new


def _backward(b: Builder, op: Op, primal: dict[Value, Value], ct: dict[Value, Value | None],
              live: set[Value]) -> None:
    out_cts = [ct.get(r) for r in op.results]
    if all(c is None for c in out_cts) or not any(v in live for v in op.operands):
        return
    if op.prim.vjp_rule is None:
        if not op.prim.differentiable:
            return
        raise UnsupportedError(f"reverse-mode differentiation of {op.prim.name} is not supported", op.loc)
    with b.at(op.loc):
        in_cts = op.prim.vjp_rule(b, op, [primal[v] for v in op.operands],
                                  [primal[r] for r in op.results], out_cts)
        for v, c in zip(op.operands, in_cts):
            if c is not None and v in live:
                ct[v] = ad.add_any(b, ct.get(v), c)


def vjp_function(fn: Function, active: Sequence[bool]) -> Function:
    """`fn` extended with output-cotangent inputs and input-cotangent outputs."""
    active = [on and is_inexact(t.dtype) for on, t in zip(active, fn.in_types)]
    body = vjp_block(fn.body, active)
    names = list(fn.arg_names) + [f"ct{i}" for i, r in enumerate(fn.results) if is_inexact(r.dtype)]
    return Function(f"vjp_{fn.name}", body, names)
