"""The max and the sum of shifted exponentials of the same rows as one op (one pass over x).

    %m = reduce_max(%x) {axes=(1,)} : f64[r]
    %k = reshape(%m) {new_sizes=(r, 1)} : f64[r, 1]
    %b = broadcast_in_dim(%k) {broadcast_dimensions=(0, 1), shape=(r, c)} : f64[r, c]
    %d = sub(%x, %b) : f64[r, c]
    %e = exp(%d) : f64[r, c]
    %s = reduce_sum(%e) {axes=(1,)} : f64[r]
    ->
    %m, %s = reduce_max_sumexp(%x) {axes=(1,)} : f64[r], f64[r]

This is logsumexp, and the first half of softmax, log_softmax and cross-entropy. Written
out, the backend walks x twice (every row's max, then every row's sum), and the first walk
waits on memory; reduce_max_sumexp walks each row once (primitives/online.py,
backend/online.py). The pattern: a float32/float64 ``reduce_sum`` over trailing axes of
``exp(x - B)``, where B is ``reduce_max(x)`` over the same axes brought back to x's shape by
reshapes and broadcasts that put each of its elements at its own row (keepdims,
``m[:, None]``). Other uses of the max and of ``exp(x - B)`` stay (softmax divides
``exp(x - B)`` by the sum): the max is the new op's first result. It runs after the
transforms (vmap and AD have made their reductions), in ``optimize_ir``; regions included.
"""
from __future__ import annotations

from compiler.ir import dims
from compiler.ir.builder import Builder
from compiler.ir.dims import Dim
from compiler.ir.core import Block, Function, Op, Value
from compiler.ir.types import F32, F64
from compiler.primitives import ops
from compiler.transforms.simplify import rebuilt, simplify


def fuse_max_sumexp(fn: Function) -> Function:
    """`fn` with each max / sum-of-shifted-exponentials pair as one reduce_max_sumexp."""
    body, changed = _rewrite(fn.body)
    if not changed:
        return fn
    return simplify(Function(fn.name, body, list(fn.arg_names)))


def _rewrite(block: Block) -> tuple[Block, bool]:
    pairs = _pairs(block)                    # reduce_max op -> its reduce_sum ops
    changed = bool(pairs)
    sums: dict[Op, Op] = {s: m for m, ss in pairs.items() for s in ss}
    env: dict[Value, Value] = {}
    out = Block(args=list(block.args))
    b = Builder(out)
    for op in block.ops:
        regions = []
        for region in op.regions:
            new_region, region_changed = _rewrite(region)
            regions.append(new_region)
            changed |= region_changed
        if op in pairs:
            with b.at(op.loc):
                m, s = ops.reduce_max_sumexp(b, env.get(op.operands[0], op.operands[0]), op.params["axes"])
            env[op.results[0]] = m
            for total in pairs[op]:
                env[total.results[0]] = s
            continue
        if op in sums:
            continue                            # its value is the pair's second result
        new = rebuilt(op, [env.get(v, v) for v in op.operands], regions)
        out.ops.append(new)
        env.update(zip(op.results, new.results))
    out.results = [env.get(v, v) for v in block.results]
    return out, changed


#: softmax reads exp(x - max) again (to divide it by the sum): after the rewrite it computes the
#: exponentials twice, once in the one pass and once in the division, in place of a pass over
#: memory. From rows of this many elements that pays everywhere measured (float32 softmax of
#: 62500 x 32: 1.21 -> 0.98 ms, float64 31250 x 64: 2.37 -> 2.12); below it, it depends on how
#: the short row vectorizes (float32 rows of 24: 1.57 -> 1.81 ms, float64 rows of 10: 4.46 ->
#: 4.13), so shorter static rows whose exponentials are read again keep the two reductions
SHARED_MIN_ROW = 32


def _pairs(block: Block) -> dict[Op, list[Op]]:
    pairs: dict[Op, list[Op]] = {}
    uses: dict[Value, int] = {}
    for v in [v for op in block.ops for v in op.operands] + list(block.results):
        uses[v] = uses.get(v, 0) + 1
    for op in block.ops:
        if op.prim is not ops.reduce_sum_p:
            continue
        m = _max_of_sumexp(op)
        if m is None:
            continue
        x = op.operands[0]
        count: Dim = 1
        for a in op.params["axes"]:
            count = dims.mul(count, x.type.shape[a])
        if uses[x] > 1 and isinstance(count, int) and count < SHARED_MIN_ROW:
            continue
        pairs.setdefault(m, []).append(op)
    return pairs


def _max_of_sumexp(total: Op) -> Op | None:
    """The reduce_max op of `total` = reduce_sum(exp(x - spread(reduce_max(x)))), or None."""
    axes = tuple(total.params["axes"])
    e = total.operands[0]
    if e.type.dtype not in (F32, F64) or not axes or axes != tuple(range(e.type.ndim - len(axes), e.type.ndim)):
        return None
    if e.op is None or e.op.prim is not ops.exp_p:
        return None
    d = e.op.operands[0]
    if d.op is None or d.op.prim is not ops.sub_p:
        return None
    x, spread = d.op.operands
    m = _spread_max(spread, x, axes)
    return m


def _spread_max(v: Value, x: Value, axes: tuple[int, ...]) -> Op | None:
    """The reduce_max(x, axes) op that `v` is, put back at its rows of x's shape, or None."""
    chain: list[Op] = []
    while v.op is not None and v.op.prim in (ops.reshape_p, ops.broadcast_in_dim_p):
        chain.append(v.op)
        v = v.op.operands[0]
    top = v.op
    if top is None or top.prim is not ops.reduce_max_p or top.operands[0] is not x \
            or tuple(top.params["axes"]) != axes:
        return None
    ndim = x.type.ndim
    # for each axis of the current value: the axis of x it runs along (None: size 1)
    tags: list[int | None] = [a for a in range(ndim) if a not in axes]
    tags = [t if v.type.shape[k] != 1 else None for k, t in enumerate(tags)]
    for op in reversed(chain):
        src, dst = op.operands[0].type.shape, op.results[0].type.shape
        new: list[int | None] = [None] * len(dst)
        if op.prim is ops.reshape_p:
            kept = [(d, t) for d, t in zip(src, tags) if d != 1]
            places = [k for k, d in enumerate(dst) if d != 1]
            if len(kept) != len(places) or any(dst[k] != d for k, (d, _) in zip(places, kept)):
                return None
            for k, (_, t) in zip(places, kept):
                new[k] = t
        else:
            for i, k in enumerate(op.params["broadcast_dimensions"]):
                if src[i] == 1:
                    continue
                if src[i] != dst[k]:
                    return None
                new[k] = tags[i]
        tags = new
    if not chain:                            # sub's operands have x's shape: a spread made it
        return None
    for a, t in enumerate(tags):
        if a in axes:
            if t is not None:
                return None
        elif t != a and x.type.shape[a] != 1:
            return None
    return top
