"""Decomposition: ops whose primitive defines a ``decomposition`` become the
primitives it writes them with.

Runs in ``optimize_ir`` after every transform and before the complex lowering, so
that vmap and AD see one op with matrix-level rules (a factorization, a sort: the
derivative of a Cholesky factor is a formula, not the derivative of the loop that
computes it), and the backend sees only primitives it lowers. A decomposition
may emit ops that decompose again (``inv`` through ``lu``); it may also return
None to keep the op (a library call the backend makes for a large matrix), and a
primitive whose ``library_when(op)`` holds keeps the op with the decomposed code as
its region: the backend calls a LAPACK routine and lowers the region where the
kernel has none (docs/linalg.md, "BLAS and LAPACK").

    func @f(%a: f64[4, 2, 2]) -> (f64[4, 2, 2]) {
      %0 = cholesky(%a) : f64[4, 2, 2]
      return %0
    }
    ->
    func @f(%a: f64[4, 2, 2]) -> (f64[4, 2, 2]) {
      ... slices, sqrt, div, sub, concatenate over the batch of four ...
    }
"""
from __future__ import annotations

from compiler.ir.builder import Builder
from compiler.ir.core import Block, Function, Op, Value

MAX_DEPTH = 16      # decompositions inside decompositions: a cycle is a bug


def decompose(fn: Function) -> Function:
    """`fn` with every decomposable op replaced (a new function; `fn` is unchanged)."""
    if not _has_decomposable(fn.body):
        return fn
    return Function(fn.name, _decompose_block(fn.body, 0), list(fn.arg_names))


def _has_decomposable(block: Block) -> bool:
    return any(op.prim.decomposition is not None for op in block.walk())


def _decompose_block(block: Block, depth: int) -> Block:
    out = Block(args=list(block.args))
    b = Builder(out)
    env: dict[Value, Value] = {}
    for op in block.ops:
        with b.at(op.loc):
            results = _decompose_op(b, op, [env.get(v, v) for v in op.operands], depth)
        env.update(zip(op.results, results))
    out.results = [env.get(v, v) for v in block.results]
    return out


def _decompose_op(b: Builder, op: Op, args: list[Value], depth: int) -> list[Value]:
    rule = op.prim.decomposition
    if rule is not None:
        if depth > MAX_DEPTH:
            raise AssertionError(f"{op.prim.name}: decompositions nest more than {MAX_DEPTH} deep")
        inner = Block(args=[Value(a.type) for a in args])
        built = rule(Builder(inner, op.loc), op, list(inner.args))
        if built is not None:
            inner.results = list(built)
            done = _decompose_block(inner, depth + 1) if _has_decomposable(inner) else inner
            if op.prim.library_when is not None and op.prim.library_when(op):
                # a library call for this size: the generated code stays as the op's region,
                # the fallback of a kernel loaded without the routine (backend/library.py)
                return list(b.emit(op.prim, args, op.params, [done]))
            return _inline(b, done, args)
    regions = [_decompose_block(r, depth) if _has_decomposable(r) else r for r in op.regions]
    if all(a is v for a, v in zip(args, op.operands)) and all(
            r is s for r, s in zip(regions, op.regions)):
        b.block.ops.append(op)
        return list(op.results)
    return list(b.emit(op.prim, args, op.params, regions))


def _inline(b: Builder, block: Block, args: list[Value]) -> list[Value]:
    """The ops of `block` appended to `b`'s block with its arguments bound to `args`."""
    env: dict[Value, Value] = dict(zip(block.args, args))
    for op in block.ops:
        results = b.emit(op.prim, [env.get(v, v) for v in op.operands], op.params, op.regions)
        env.update(zip(op.results, results))
    return [env.get(v, v) for v in block.results]
