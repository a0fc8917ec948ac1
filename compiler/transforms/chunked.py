"""vmap in chunks: the batched function as one ``chunked`` op over batch slices.

``vmap(f, chunk_size=c)`` bounds the memory of intermediates: the function is
batched for `c` examples (and once more for the tail) and the ``chunked`` op
runs those regions over consecutive slices of axis 0.

    func @f(%x: f64[3]) -> (f64[]) { %0 = reduce_sum(%x) {axes=(0,)} ... }
    chunked_function(f, in_dims=[0], out_dims=[0], size=b, chunk=4)
    func @vmap_f(%x: f64[b, 3]) -> (f64[b]) {
      %0 = chunked(%x) {batched=(True,), chunk=4, size=b} : f64[b] {
        ^(%1: f64[4, 3]): %2 = reduce_sum(%1) {axes=(1,)} : f64[4]; yield %2
      } {
        ^(%3: f64[-4*(b // 4) + b, 3]): ...the same for the tail...
      }
      return %0 }
"""
from __future__ import annotations

from typing import Sequence

from compiler.ir.builder import Builder, new_block
from compiler.ir.core import Function, Value
from compiler.ir.dims import Dim
from compiler.ir.types import I64
from compiler.primitives import ops
from compiler.primitives import random as R
from compiler.primitives.batching import move_axis
from compiler.primitives.control import chunk_counts
from compiler.transforms.vmap import CURRENT_RANDOMNESS, batched_type, vmap_block


def chunked_function(fn: Function, in_dims: Sequence[int | None], out_dims: Sequence[int | None],
                     size: Dim, chunk: int) -> Function:
    """vmap of `fn` that runs `chunk` batch elements at a time (one `chunked` op)."""
    block = new_block([batched_type(t, d, size) for t, d in zip(fn.in_types, in_dims)], fn.arg_names)
    loc = fn.body.ops[0].loc if fn.body.ops else None
    b = Builder(block)
    body = fn.body
    with b.at(loc):
        operands = [a if d is None else move_axis(b, a, d, 0) for a, d in zip(block.args, in_dims)]
        region_dims = [None if d is None else 0 for d in in_dims]
        randomness = CURRENT_RANDOMNESS.get()
        keyed = randomness != "error" and any(op.prim is ops.rng_key_p for op in body.ops)
        if keyed:      # the call's key stays outside the regions (rng_key only at the top level);
            body = R.key_as_argument(body)      # "different": element i's is fold_in(key, i)
            key = ops.rng_key(b)                # for the whole batch, as without chunks
            batched = randomness == "different"
            operands.append(R.fold_in(b, key, ops.iota(b, I64, (size,), 0)) if batched else key)
            region_dims.append(0 if batched else None)
        outs0 = [0] * len(fn.results)
        _, tail = chunk_counts(size, chunk)
        regions = [vmap_block(body, region_dims, n, outs0)[0] for n in (chunk, tail)]
        params = {"size": size, "chunk": chunk,
                  "batched": tuple(d is not None for d in in_dims) + ((batched,) if keyed else ())}
        results = b.emit(ops.chunked_p, operands, params, regions)
        block.results = [_place(b, r, want) for r, want in zip(results, out_dims)]
    return Function(f"vmap_{fn.name}", block, list(fn.arg_names))


def _place(b: Builder, r: Value, want: int | None) -> Value:
    """A result batched on axis 0, moved to `want` (None: the batch is unused, take one)."""
    if want is not None:
        return move_axis(b, r, 0, want % r.type.ndim)
    first = ops.slice_(b, r, (0,) * r.type.ndim, (1,) + tuple(r.type.shape[1:]))
    return ops.reshape(b, first, tuple(r.type.shape[1:]))
