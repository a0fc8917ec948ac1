"""Elementwise loops in windows: a counted loop whose body works element by element runs
all its steps on one window of the elements before it moves to the next.

    Z = np.zeros_like(C)                       %z, %c = for(%lo, %hi, %z0, %C) {trip=40} {
    for _ in range(40):                          ^(%i, %z: c128[300, 400], %c: ...):
        Z = np.where(abs(Z) < 2, Z*Z + C, Z)       ...elementwise ops on %z, %c...

Step by step, each of the 40 steps reads and writes every element of Z (two arrays of
120,000 complex numbers: memory traffic, 40 times). In windows, the loop becomes one
``chunked`` op over the flattened elements whose regions run the same loop on windows of
`window_size` elements: a window's carried values stay in the L1 cache for all its steps,
and each step over a window is one vectorized pass (Mandelbrot escape counts, 300x400 x 40
steps: docs/control_flow.md, "Elementwise loops").

A loop qualifies when every op of its body is elementwise over one shape S, or computes
0-d values from 0-d values only, or broadcasts a 0-d value to S: then element k of every
carried array at the end depends on element k of the carried arrays at the start and on
0-d values alone, which is exactly what running the elements in separate windows needs.
Carried 0-d values must pass through unchanged (a 0-d value the loop updates would be
computed once per window; the loop is left as it is). The pass runs after the transforms
(vmap and AD see the loop as written) and changes neither values nor their order of
evaluation per element, so results are bitwise those of the loop run step by step.

A qualifying loop with a static trip count whose steps add up to at most `UNROLL_OPS` ops is
unrolled instead, whatever the number of elements: its steps become one elementwise
expression, which fusion computes in one pass with the carried values in registers. Run in
windows, each step would load and store every carried element of the window (32 steps of
``y = y * x + 0.5`` on 65536 float64: 228 µs in windows, 127 µs unrolled, as fast as numba's loop).
"""
from __future__ import annotations

import math
from typing import Sequence

from compiler.ir import dims
from compiler.ir.builder import Builder, new_block
from compiler.ir.core import Block, Function, Op, Value
from compiler.ir.dims import Dim
from compiler.ir.primitive import ELEMENTWISE
from compiler.primitives import ops
from compiler.primitives.batching import inline_block
from compiler.primitives.control import chunk_counts
from compiler.transforms.simplify import rebuilt

#: bytes of carried elements a window keeps (L1-sized with room for the step's temporaries)
WINDOW_BYTES = 16 * 1024
#: elements per window: at least and at most (a multiple of the widest vector)
MIN_WINDOW, MAX_WINDOW = 64, 1024
#: a qualifying loop of a static trip count is unrolled when trip x body ops is at most this
UNROLL_OPS = 256


def window_loops(fn: Function) -> Function:
    """`fn` with every qualifying elementwise ``for`` loop run in windows (a new function)."""
    return Function(fn.name, _block(fn.body), list(fn.arg_names))


def _block(block: Block) -> Block:
    out = Block(list(block.args))
    b = Builder(out)
    env: dict[Value, Value] = {}
    for op in block.ops:
        operands = [env.get(v, v) for v in op.operands]
        regions = tuple(_block(r) for r in op.regions)
        with b.at(op.loc):
            shape = _elementwise_shape(op) if op.prim is ops.for_p else None
            if shape is not None and _unrolls(op):
                results: Sequence[Value] = _unrolled(b, op, operands)
            elif shape is not None and _windows(shape, op):
                results = _windowed(b, op, operands, shape)
            else:
                new = rebuilt(op, operands, regions)      # the op itself when nothing changed
                out.ops.append(new)
                results = new.results
        env.update(zip(op.results, results))
    out.results = [env.get(v, v) for v in block.results]
    return out


def _elementwise_shape(op: Op) -> tuple[Dim, ...] | None:
    """The shape S the loop's body works on element by element, or None when it does not
    qualify (or gains nothing: one step)."""
    (body,) = op.regions
    carried = body.args[1:]
    shapes = {tuple(v.type.shape) for v in carried if v.type.ndim}
    if len(shapes) != 1:
        return None
    (shape,) = shapes
    through = [r is a for a, r in zip(carried, body.results)]
    if any(not a.type.ndim and not t for a, t in zip(carried, through)) or all(through):
        return None
    trip = op.params.get("trip")
    if isinstance(trip, int) and trip < 2:
        return None
    for inner in body.ops:
        if not _elementwise_op(inner, shape):
            return None
    return shape


def _unrolls(op: Op) -> bool:
    trip = op.params.get("trip")
    return isinstance(trip, int) and trip * len(op.regions[0].ops) <= UNROLL_OPS


def _windows(shape: tuple[Dim, ...], op: Op) -> bool:
    """Whether windows gain anything: at least two windows' worth of elements."""
    size = dims.product(shape)
    return not isinstance(size, int) or size >= 2 * _window(op.regions[0].args[1:])


def _unrolled(b: Builder, op: Op, operands: list[Value]) -> list[Value]:
    """The loop's steps one after the other (index `start + k * step` at step k)."""
    (body,) = op.regions
    start, _, *carried = operands
    used = any(body.args[0] in inner.operands for inner in body.ops)
    for k in range(op.params["trip"]):
        index = start
        if used and k:
            index = ops.add(b, start, ops.scalar(b, k * op.params["step"], start.type.dtype))
        carried = inline_block(b, body, [index, *carried])
    return carried


def _elementwise_op(op: Op, shape: tuple[Dim, ...]) -> bool:
    if op.regions:
        return False
    ins = [tuple(v.type.shape) for v in op.operands]
    outs = [tuple(v.type.shape) for v in op.results]
    if all(s == () for s in ins + outs):          # 0-d from 0-d: the same in every window
        return op.prim.kind == ELEMENTWISE or op.prim is ops.constant_p
    if op.prim is ops.broadcast_in_dim_p:
        return ins == [()] and outs == [shape]
    return op.prim.kind == ELEMENTWISE and all(s == shape for s in ins + outs)


def _window(carried: Sequence[Value]) -> int:
    """Elements per window: the carried arrays of a window fill about WINDOW_BYTES."""
    per = sum(v.type.dtype.itemsize for v in carried if v.type.ndim) or 1
    n = WINDOW_BYTES // per
    return max(MIN_WINDOW, min(MAX_WINDOW, 1 << int(math.log2(max(n, 1)))))


def _divisor(size: Dim, window: int) -> int:
    """A window of `window` elements or a little less (a multiple of 16) that divides a static
    `size`: then no tail region is generated (half the code to compile)."""
    if isinstance(size, int):
        for n in range(window, window // 2 - 1, -16):
            if size % n == 0:
                return n
    return window


def _windowed(b: Builder, op: Op, operands: list[Value], shape: tuple[Dim, ...]) -> list[Value]:
    """The loop as a ``chunked`` op over the flattened elements (results in `op`'s order)."""
    (body,) = op.regions
    start, stop, *init = operands
    carried = body.args[1:]
    through = [r is a for a, r in zip(carried, body.results)]
    batched = [bool(v.type.ndim) for v in init]
    size = dims.product(shape)
    chunk = _divisor(size, _window(carried))
    flat = [ops.reshape(b, v, (size,)) if bt else v for v, bt in zip(init, batched)]
    changed = [k for k, (bt, t) in enumerate(zip(batched, through)) if bt and not t]
    _, tail = chunk_counts(size, chunk)
    regions = [_region(op, [start, stop, *flat], [False, False, *batched], n, changed)
               for n in (chunk, tail)]
    params = {"size": size, "chunk": chunk, "batched": (False, False, *batched)}
    outs = b.emit(ops.chunked_p, [start, stop, *flat], params, regions)
    results = list(init)                          # values the loop passes through
    for k, out in zip(changed, outs):
        results[k] = ops.reshape(b, out, shape)
    return results


def _region(op: Op, operands: list[Value], batched: list[bool], n: Dim, changed: list[int]) -> Block:
    """The loop on a window of `n` elements; it yields the carried arrays the body changes."""
    region = new_block([v.type.with_shape((n,)) if bt else v.type for v, bt in zip(operands, batched)])
    rb = Builder(region, op.loc)
    results = rb.emit(ops.for_p, region.args, op.params, [_body(op.regions[0], n)])
    region.results = [results[k] for k in changed]
    return region


def _body(body: Block, n: Dim) -> Block:
    """`body` with every array of shape S made a window of `n` elements."""
    new = new_block([v.type.with_shape((n,)) if v.type.ndim else v.type for v in body.args])
    b = Builder(new)
    env = dict(zip(body.args, new.args))
    for op in body.ops:
        operands = [env[v] for v in op.operands]
        with b.at(op.loc):
            if op.prim is ops.broadcast_in_dim_p:
                results: Sequence[Value] = (ops.broadcast_in_dim(b, operands[0], (n,), ()),)
            else:
                results = b.emit(op.prim, operands, op.params)
        env.update(zip(op.results, results))
    new.results = [env[v] for v in body.results]
    return new
