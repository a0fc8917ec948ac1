"""The C ABI of an aotx kernel, shared by the JIT and by built libraries.

A kernel is ``int32_t NAME(void *const *inputs, void *const *outputs,
const int64_t *symbols)``: pointers to contiguous row-major input and output
buffers (allocated by the caller), and the values of the symbolic dims in the
order of ``KernelSpec.symbols``. It returns 0 on success; see ``ERRORS``.
Types travel as text (``f64[n, 3]``) so that this module needs only NumPy.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Mapping, Union

import numpy as np

ABI_VERSION = 1

DTYPES: dict[str, np.dtype] = {"f32": np.dtype(np.float32), "f64": np.dtype(np.float64), "i32": np.dtype(np.int32),
          "i64": np.dtype(np.int64), "bool": np.dtype(np.bool_)}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}

ERRORS = {1: (MemoryError, "the kernel could not allocate its temporaries"),
          2: (RuntimeError, "a host callback raised an exception"),
          3: (ValueError, "array is too big; `arr.size * arr.dtype.itemsize` is larger than the "
                          "maximum possible size (an array of the computation, for these argument "
                          "sizes)")}

DimSpec = Union[int, str]


@dataclass(frozen=True)
class ArgSpec:
    """dtype and dims of one argument or result; a str dim is a symbol or an expression."""

    name: str
    dtype: np.dtype
    dims: tuple[DimSpec, ...]

    @property
    def type_text(self) -> str:
        return f"{DTYPE_NAMES[self.dtype]}[{', '.join(str(d) for d in self.dims)}]"

    def to_json(self) -> dict:
        return {"name": self.name, "type": self.type_text}

    @staticmethod
    def from_json(obj: Mapping) -> "ArgSpec":
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
