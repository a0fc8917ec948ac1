"""Tensor types: a dtype and a shape whose dims are integers or symbols.

The dtypes are bool, the signed integers int8 ... int64, the unsigned integers
uint8 ... uint64, float16, float32, float64, and complex64 and complex128
(``c64``/``c128``; docs/complex.md: complex values exist in the IR and the
transforms, and a lowering pass splits them into real pairs before the backend).
Promotion follows NumPy 2
(NEP 50): Python scalars are "weak" and take the array's dtype, which
:func:`result_dtype` gets by asking NumPy itself. float16 computes in float32
and rounds every result to float16, as NumPy's float16 loops do.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from compiler.ir import dims
from compiler.ir.dims import Dim

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
I32, I64 = np.dtype(np.int32), np.dtype(np.int64)
BOOL = np.dtype(np.bool_)
C64, C128 = np.dtype(np.complex64), np.dtype(np.complex128)
DTYPES: tuple[np.dtype, ...] = (BOOL, I32, I64, F32, F64)
DTYPES += (C64, C128)

SHORT_NAMES: dict[np.dtype, str] = {F32: "f32", F64: "f64", I32: "i32", I64: "i64", BOOL: "bool"}
SHORT_NAMES.update({C64: "c64", C128: "c128"})
BY_SHORT_NAME: dict[str, np.dtype] = {v: k for k, v in SHORT_NAMES.items()}

# the narrow and unsigned integers and float16
I8, I16 = np.dtype(np.int8), np.dtype(np.int16)
U8, U16, U32, U64 = np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64)
F16 = np.dtype(np.float16)
DTYPES += (I8, I16, U8, U16, U32, U64, F16)
SHORT_NAMES.update({I8: "i8", I16: "i16", U8: "u8", U16: "u16", U32: "u32", U64: "u64", F16: "f16"})
BY_SHORT_NAME.update({v: k for k, v in SHORT_NAMES.items()})


def canonical_dtype(dtype: object) -> np.dtype:
    """The supported dtype for `dtype` (a NumPy dtype, a type or 'f32'-style name)."""
    if isinstance(dtype, str) and dtype in BY_SHORT_NAME:
        return BY_SHORT_NAME[dtype]
    if dtype is float:
        return F64
    if dtype is int:
        return I64
    if dtype is bool:
        return BOOL
    if dtype is complex:
        return C128
    dt = np.dtype(dtype)  # type: ignore[call-overload]
    if dt not in DTYPES:
        raise TypeError(f"dtype {dt} is not supported (supported: {SUPPORTED})")
    return dt


#: the supported dtypes, for messages
SUPPORTED = ", ".join(str(d) for d in sorted(DTYPES, key=lambda d: ("biufc".find(d.kind), d.itemsize)))


def is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f"


def is_int(dtype: np.dtype) -> bool:
    """A signed or unsigned integer dtype (not bool)."""
    return dtype.kind in "iu"


def is_unsigned(dtype: np.dtype) -> bool:
    return dtype.kind == "u"


def is_signed(dtype: np.dtype) -> bool:
    return dtype.kind == "i"


def is_complex(dtype: np.dtype) -> bool:
    return dtype.kind == "c"


def is_inexact(dtype: np.dtype) -> bool:
    """Float or complex: the dtypes that carry derivatives."""
    return dtype.kind in "fc"


def real_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype of the real and imaginary parts of a complex dtype (a real dtype itself)."""
    return F32 if dtype == C64 else F64 if dtype == C128 else dtype


def complex_dtype(dtype: np.dtype) -> np.dtype:
    """The complex dtype whose parts have the real dtype `dtype`."""
    return C64 if dtype == F32 else C128 if dtype == F64 else dtype


def result_dtype(*operands: "np.dtype | bool | int | float") -> np.dtype:
    """NumPy 2 promotion of dtypes and (weak) Python scalars."""
    return canonical_dtype(np.result_type(*operands))


@dataclass(frozen=True)
class TensorType:
    """The type of an IR value: element dtype and shape."""

    dtype: np.dtype
    shape: tuple[Dim, ...]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> Dim:
        total: Dim = 1
        for d in self.shape:
            total = dims.mul(total, d)
        return total

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)

    @property
    def static_shape(self) -> tuple[int, ...]:
        """The shape as ints (a type with symbolic sizes has none)."""
        if not self.is_static:
            raise ValueError(f"{self} has symbolic sizes")
        return tuple(d for d in self.shape if isinstance(d, int))

    def with_dtype(self, dtype: np.dtype) -> "TensorType":
        return TensorType(dtype, self.shape)

    def with_shape(self, shape: tuple[Dim, ...]) -> "TensorType":
        return TensorType(self.dtype, tuple(shape))

    def __str__(self) -> str:
        return f"{SHORT_NAMES[self.dtype]}[{', '.join(str(d) for d in self.shape)}]"

    __repr__ = __str__


def scalar(dtype: np.dtype) -> TensorType:
    return TensorType(dtype, ())


def parse_type(text: str) -> TensorType:
    """Parse 'f64[n, 3]', 'f32[]' or 'f64' (a scalar)."""
    text = text.strip()
    name, _, rest = text.partition("[")
    if name.strip() not in BY_SHORT_NAME:
        raise ValueError(f"unknown dtype {name.strip()!r} in type {text!r} "
                         f"(use one of {', '.join(BY_SHORT_NAME)})")
    if not rest:
        return TensorType(BY_SHORT_NAME[name.strip()], ())
    if not rest.endswith("]"):
        raise ValueError(f"missing ']' in type {text!r}")
    inner = rest[:-1].strip()
    shape = tuple(dims.parse_dim(p) for p in _split_top(inner)) if inner else ()
    for d in shape:
        if isinstance(d, int) and d < 0:
            raise ValueError(f"negative dimension in type {text!r}")
    return TensorType(BY_SHORT_NAME[name.strip()], shape)


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split on `sep` outside parentheses and brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "([" and 1 or 0
        depth -= ch in ")]" and 1 or 0
        if ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def split_types(text: str) -> list[str]:
    """Split a comma-separated list of types, respecting brackets."""
    return [p for p in _split_top(text) if p]
