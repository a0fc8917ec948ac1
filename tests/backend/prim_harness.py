"""Build a one-op IR function for a primitive and run it compiled and interpreted."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from compiler import pipeline
from compiler.backend import target
from compiler.ir.builder import Builder, new_block
from compiler.ir.core import Function, SourceLoc
from compiler.ir.interpret import interpret
from compiler.ir.types import TensorType, canonical_dtype
from runtime.abi import parse_spec
from runtime.loader import NativeKernel


def one_op_function(prim: Any, args: Sequence[np.ndarray], params: dict[str, Any]) -> Function:
    types = [TensorType(canonical_dtype(a.dtype), tuple(a.shape)) for a in args]
    block = new_block(types)
    b = Builder(block, SourceLoc(__file__, 1))
    block.results = list(b.emit(prim, block.args, params))
    return Function(f"t_{prim.name}", block)


def compile_function(fn: Function) -> NativeKernel:
    art = pipeline.compile_ir(fn, fn.name, target.host())
    obj = pipeline.load(art)
    ins = [parse_spec(f"a{i}", str(t)) for i, t in enumerate(fn.in_types)]
    outs = [parse_spec(f"r{i}", str(t)) for i, t in enumerate(art.ir_optimized.out_types)]
    return NativeKernel(fn.name, obj.address(fn.name), ins, outs, art.symbols, obj)


def run_both(prim: Any, args: Sequence[np.ndarray], params: dict[str, Any]) -> tuple[list, list]:
    fn = one_op_function(prim, args, params)
    expected = interpret(fn, *args)
    got = compile_function(fn)(*args)
    return got, expected
