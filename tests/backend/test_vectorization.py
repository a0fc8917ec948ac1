"""The generated code uses the host's widest vector registers."""
from __future__ import annotations

import re

import numpy as np

import compiler.primitives as P
from compiler import pipeline
from compiler.backend import target
from compiler.ir.builder import Builder, new_block
from compiler.ir.core import Function, SourceLoc
from compiler.ir.types import parse_type

REGISTER = {512: "zmm", 256: "ymm", 128: "xmm"}


def _large_elementwise(dtype: str) -> Function:
    """A long fused float chain over a symbolic-size array."""
    block = new_block([parse_type(f"{dtype}[n]"), parse_type(f"{dtype}[n]")])
    b = Builder(block, SourceLoc(__file__, 1))
    x, y = block.args
    acc = x
    for prim in (P.mul, P.add, P.sub, P.mul, P.maximum, P.add, P.div, P.minimum):
        acc = b.emit1(prim, [acc, y])
    block.results = [b.emit1(P.sqrt, [b.emit1(P.abs_, [acc])])]
    return Function("wide", block)


def _packed_ops(asm: str, reg: str) -> int:
    return len(re.findall(rf"\bv\w+p[sd]\s[^\n]*%{reg}\d+", asm))


def test_widest_registers_float64():
    host = target.host()
    art = pipeline.compile_ir(_large_elementwise("f64"), "wide", host)
    reg = REGISTER[host.vector_bits]
    assert _packed_ops(art.asm, reg) >= 8, f"no packed double ops on %{reg} registers:\n{art.asm[:3000]}"


def test_widest_registers_float32():
    host = target.host()
    art = pipeline.compile_ir(_large_elementwise("f32"), "wide", host)
    assert _packed_ops(art.asm, REGISTER[host.vector_bits]) >= 8


def test_no_scalar_fallback_in_reduction():
    block = new_block([parse_type("f64[n]")])
    b = Builder(block, SourceLoc(__file__, 1))
    (x,) = block.args
    block.results = [b.emit1(P.reduce_sum, [b.emit1(P.mul, [x, x])], {"axes": (0,)})]
    art = pipeline.compile_ir(Function("dot", block), "dot", target.host())
    assert "<4 x double>" in art.llvm_optimized or "<8 x double>" in art.llvm_optimized
    assert np.isfinite(1.0)
