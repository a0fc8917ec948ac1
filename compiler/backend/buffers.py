"""LLVM types of array elements and the Buffer record: what the code generator and the
lowerings (casts, control flow) share."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from llvmlite import ir as ll

from compiler.ir import dims
from compiler.ir.types import BOOL, C128, C64, F16, F32, F64, I16, I32, I64, I8, U16, U32, U64, U8

I64T = ll.IntType(64)
I8T = ll.IntType(8)
I1T = ll.IntType(1)
PTR = ll.PointerType(I8T)

_SCALAR = {F32: ll.FloatType(), F64: ll.DoubleType(), I32: ll.IntType(32), I64: I64T, BOOL: I1T}
# complex: {re, im}, interleaved in memory as NumPy stores it; the lowering pass
# (transforms/complex.py) leaves complex values only at kernel and region boundaries, where
# Codegen.load/store split them into two real loads/stores (stride 2: LLVM's interleaved
# vector accesses)
_SCALAR.update({C64: ll.LiteralStructType([_SCALAR[F32]] * 2), C128: ll.LiteralStructType([_SCALAR[F64]] * 2)})
_MEMORY = {**_SCALAR, BOOL: I8T}

# Registers hold a float16 as the float32 of the same value (NumPy's float16 loops compute in
# float32 and round each result; Codegen rounds every float16 result), memory holds `half`.
HALF = ll.HalfType()
_NARROW = {I8: I8T, I16: ll.IntType(16), U8: I8T, U16: ll.IntType(16), U32: ll.IntType(32), U64: I64T}
_SCALAR.update({**_NARROW, F16: ll.FloatType()})
_MEMORY.update({**_NARROW, F16: HALF})


def scalar_type(dtype: np.dtype) -> ll.Type:
    return _SCALAR[dtype]


def memory_type(dtype: np.dtype) -> ll.Type:
    return _MEMORY[dtype]


@dataclass
class Buffer:
    """A contiguous row-major array in memory."""

    ptr: ll.Value
    dtype: np.dtype
    shape: tuple[dims.Dim, ...]
