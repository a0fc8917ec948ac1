"""The C ABI of an aotx kernel, shared by the JIT and by built libraries.

A kernel is ``int32_t NAME(void *const *inputs, void *const *outputs,
const int64_t *symbols)``: pointers to contiguous row-major input and output
buffers (allocated by the caller), and the values of the symbolic dims in the
order of ``KernelSpec.symbols``. It returns 0 on success; see ``ERRORS``. A
status of ``ERROR_BASE + i`` means the kernel's i-th check failed (an
``IndexError``, ``ValueError``, ... that NumPy would raise): ``ErrorSite``
records it next to the kernel (in the cache entry and the library manifest),
and :func:`kernel_error` builds the exception.
Types travel as text (``f64[n, 3]``) so that this module needs only NumPy.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any, Mapping, Union

import numpy as np

ABI_VERSION = 3
#: versions whose kernels this runtime calls: version 3 added the random key after the symbols
#: of kernels that draw (manifest "random": true); version 2 libraries have no such kernels
COMPATIBLE_ABI_VERSIONS = (2, 3)

DTYPES: dict[str, np.dtype] = {"f32": np.dtype(np.float32), "f64": np.dtype(np.float64), "i32": np.dtype(np.int32),
          "i64": np.dtype(np.int64), "bool": np.dtype(np.bool_)}
DTYPES.update({"c64": np.dtype(np.complex64), "c128": np.dtype(np.complex128)})
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}
#: the narrow and unsigned integers and float16
DTYPES.update({"i8": np.dtype(np.int8), "i16": np.dtype(np.int16), "u8": np.dtype(np.uint8),
               "u16": np.dtype(np.uint16), "u32": np.dtype(np.uint32), "u64": np.dtype(np.uint64),
               "f16": np.dtype(np.float16)})
DTYPE_NAMES.update({v: k for k, v in DTYPES.items()})

ERRORS = {1: (MemoryError, "the kernel could not allocate its temporaries"),
          2: (RuntimeError, "a host callback raised an exception"),
          3: (ValueError, "array is too big; `arr.size * arr.dtype.itemsize` is larger than the "
                          "maximum possible size (an array of the computation, for these argument "
                          "sizes)")}

#: statuses from ERROR_BASE up name a kernel's error sites (ErrorSite), in order
ERROR_BASE = 16

#: the exceptions a kernel can raise, by the class name an ErrorSite records
EXCEPTIONS: dict[str, type[BaseException]] = {
    "IndexError": IndexError, "ValueError": ValueError, "AssertionError": AssertionError,
    "ZeroDivisionError": ZeroDivisionError, "OverflowError": OverflowError,
    "FloatingPointError": FloatingPointError, "ArithmeticError": ArithmeticError,
    "TypeError": TypeError, "RuntimeError": RuntimeError,
    "LinAlgError": np.linalg.LinAlgError, "UnboundLocalError": UnboundLocalError,
}

DimSpec = Union[int, str]


@dataclass(frozen=True)
class ErrorSite:
    """One check of a kernel: the exception it raises when its condition fails.

    ``message`` may name the run-time values of ``dims`` (dim expressions over the
    kernel's symbols) as ``{0}``, ``{1}``, ...; ``where`` is the user's ``file:line``.
    """

    error: str
    message: str
    dims: tuple[str, ...] = ()
    where: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"error": self.error, "message": self.message, "dims": list(self.dims), "where": self.where}

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> "ErrorSite":
        return ErrorSite(str(obj["error"]), str(obj["message"]), tuple(str(d) for d in obj.get("dims", ())),
                         str(obj.get("where", "")))

    def format(self, env: Mapping[str, int]) -> str:
        """The message with the dims' values for these symbols, and the user's line."""
        values: list[Any]
        try:
            values = [evaluate_dim(_dim_spec(d), env) for d in self.dims]
        except (KeyError, ValueError, SyntaxError, TypeError, ZeroDivisionError):
            values = list(self.dims)
        text = fill_message(self.message, values)
        return f"{text} (at {self.where})" if self.where else text

    def exception(self, env: Mapping[str, int]) -> BaseException:
        return EXCEPTIONS.get(self.error, RuntimeError)(self.format(env))


def fill_message(message: str, values: "list[Any] | tuple[Any, ...]") -> str:
    """``message`` with ``{i}`` replaced by ``values[i]`` (no other formatting: the text may
    come from a manifest)."""
    def value(m: "re.Match[str]") -> str:
        i = int(m.group(1))
        return str(values[i]) if i < len(values) else m.group(0)
    return re.sub(r"\{(\d+)\}", value, message)


def _dim_spec(text: str) -> DimSpec:
    return int(text) if text.lstrip("-").isdigit() else text


def kernel_error(name: str, status: int, sites: "list[ErrorSite] | tuple[ErrorSite, ...]",
                 env: Mapping[str, int]) -> BaseException:
    """The exception for a kernel's non-zero `status`."""
    if ERROR_BASE <= status < ERROR_BASE + len(sites):
        return sites[status - ERROR_BASE].exception(env)
    exc, message = ERRORS.get(status, (RuntimeError, f"kernel failed with status {status}"))
    return exc(f"{name}: {message}")


@dataclass(frozen=True)
class ArgSpec:
    """dtype and dims of one argument or result; a str dim is a symbol or an expression."""

    name: str
    dtype: np.dtype
    dims: tuple[DimSpec, ...]

    @property
    def type_text(self) -> str:
        return f"{DTYPE_NAMES[self.dtype]}[{', '.join(str(d) for d in self.dims)}]"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type_text}

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> "ArgSpec":
        return parse_spec(obj["name"], obj["type"])


def parse_spec(name: str, text: str) -> ArgSpec:
    head, _, rest = text.partition("[")
    dims: tuple[DimSpec, ...] = ()
    if rest:
        inner = rest.rstrip()[:-1].strip()
        parts = _split(inner) if inner else []
        dims = tuple(int(p) if p.lstrip("-").isdigit() else p for p in parts)
    return ArgSpec(name, DTYPES[head.strip()], dims)


def _split(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    parts.append(cur.strip())
    return parts


_ALLOWED = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Name, ast.Constant, ast.Call, ast.Load,
            ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.USub)


def evaluate_dim(dim: DimSpec, env: Mapping[str, int]) -> int:
    """The size of a dim given the symbol values (expressions: + - * // min max)."""
    if isinstance(dim, int):
        return dim
    if dim in env:
        return env[dim]
    tree = ast.parse(dim, mode="eval")
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise ValueError(f"invalid dimension expression {dim!r}")
    return int(eval(compile(tree, "<dim>", "eval"), {"__builtins__": {}, "min": min, "max": max}, dict(env)))


def is_symbol(dim: DimSpec) -> bool:
    return isinstance(dim, str) and dim.isidentifier()
