"""The textual form of the IR: stable, readable, and comparable in tests.

    func @f(%x: f64[n, 3], %w: f64[3]) -> (f64[n]) {
      %0 = dot_general(%x, %w) {dimension_numbers=(((1,), (0,)), ((), ()))} : f64[n]
      return %0
    }

Values get short names (%0, %1, ...); function arguments are named by the
function's ``arg_names`` and region arguments by their hints when those are
identifiers. ``with_locs=True`` appends ``# file:line`` to each op.

The text is complete: compiler/ir/parser.py reads it back into an equal
function. Param values are written so that each has one reading:

    None True 3 -1.5 inf 'set'           None, bool, int, float, str
    n  2*n + 1  (n // 2)  min(n, 4)      symbolic dims
    f32  f32[n, 3]  f64(2.5)             dtype, tensor type, NumPy scalar
    (1, 2)  (0,)  [1, 2]  {'a': 1}       tuple, list, dict
    array([0.5, -1.0], f32, shape=(2,))  small constant (elements exact in text)
    array(base64('AACAPw=='), f32, shape=(1,))   large or not exact as decimals
    py('tests.ops.opinfo:_Cube')         a class or function, by module:qualname
    tree((*, [*]))  *  *weak  vmap(size=3, in=(0,), out=(0,))
                                         custom_function params (pytree, slots, layers)
"""
from __future__ import annotations

import base64
import types
from typing import Any

import numpy as np

from compiler.ir import core
from compiler.ir.core import Block, Function, Op, Value
from compiler.ir.dims import DimExpr
from compiler.ir.params import ArraySlot, BatchLayer, PyTreeDef
from compiler.ir.types import SHORT_NAMES, TensorType

#: constants with at most this many elements list them; larger ones are base64 bytes
ARRAY_ELEMENTS = 16


def format_param(v: Any) -> str:
    """The text of one param value (see the module docstring for every form)."""
    if v is None or isinstance(v, (bool, int, DimExpr, TensorType)):
        return str(v)
    if isinstance(v, np.generic):          # before float: np.float64 is a float
        return f"{SHORT_NAMES.get(v.dtype, v.dtype)}({_element(v)})"
    if isinstance(v, (float, str)):
        return repr(v)
    if isinstance(v, np.ndarray):
        return format_array(v)
    if isinstance(v, np.dtype):
        return SHORT_NAMES.get(v, str(v))
    if isinstance(v, tuple) and type(v) is tuple:
        inner = ", ".join(format_param(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    if isinstance(v, list):
        return f"[{', '.join(format_param(x) for x in v)}]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{format_param(k)}: {format_param(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (type, types.FunctionType, types.BuiltinFunctionType)):
        return f"py({v.__module__ + ':' + v.__qualname__!r})"
    return _format_custom(v)


def format_array(a: np.ndarray) -> str:
    """``array([elements], dtype, shape=...)``, or base64 of the little-endian bytes when
    the array is large or an element has no exact decimal text (a NaN payload, -nan)."""
    dtype = SHORT_NAMES.get(a.dtype, str(a.dtype))
    shape = format_param(tuple(int(d) for d in a.shape))
    items = [_element(x) for x in a.reshape(-1)] if a.size <= ARRAY_ELEMENTS else None
    if items is not None and all(_reads_back(t, x) for t, x in zip(items, a.reshape(-1))):
        return f"array([{', '.join(items)}], {dtype}, shape={shape})"
    data = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes()
    return f"array(base64({base64.b64encode(data).decode('ascii')!r}), {dtype}, shape={shape})"


def _element(x: np.generic) -> str:
    if x.dtype.kind == "b":
        return str(bool(x))
    if x.dtype.kind in "iu":
        return str(int(x))
    if x.dtype.kind == "c":     # complex(re, im), each part as its float's text
        return f"complex({_element(x.real)}, {_element(x.imag)})"
    # a float32's str is its shortest decimal that reads back as the same float32
    return str(x) if x.dtype.itemsize < 8 else repr(float(x))


def _reads_back(text: str, x: np.generic) -> bool:
    if x.dtype.kind == "c":
        re, im = text[len("complex("):-1].split(", ")
        return _reads_back(re, x.real) and _reads_back(im, x.imag)
    if x.dtype.kind != "f":
        return True
    return bool(np.array(float(text), x.dtype).tobytes() == x.tobytes())


def _format_custom(v: Any) -> str:
    """The params of custom_function and host_call (compiler/function/primitive.py)."""
    if isinstance(v, ArraySlot):
        return "*weak" if v.weak else "*"
    if isinstance(v, BatchLayer):
        return (f"vmap(size={format_param(v.size)}, in={format_param(v.in_bdims)}, "
                f"out={format_param(v.out_bdims)})")
    if isinstance(v, PyTreeDef):
        return f"tree({_format_tree(v)})"
    return str(v)      # not readable back: the parser reports it


def _format_tree(td: Any) -> str:
    kids = [_format_tree(c) for c in td.children]
    if td.kind == "leaf":
        return "*"
    if td.kind == "none":
        return "None"
    if td.kind == "static":
        return f"static({format_param(td.aux.value)})"
    if td.kind == "tuple":
        return f"({kids[0]},)" if len(kids) == 1 else f"({', '.join(kids)})"
    if td.kind == "list":
        return f"[{', '.join(kids)}]"
    if td.kind == "dict":
        return "{" + ", ".join(f"{format_param(k)}: {c}" for k, c in zip(td.aux, kids)) + "}"
    return f"{format_param(td.aux)}({', '.join(kids)})"     # namedtuple: its class


class _Printer:
    def __init__(self, with_locs: bool) -> None:
        self.names: dict[Value, str] = {}
        self.with_locs = with_locs
        self.lines: list[str] = []
        self.counter = 0

    def name(self, v: Value) -> str:
        if v not in self.names:
            self.names[v] = f"%{self.counter}"
            self.counter += 1
        return self.names[v]

    def declare_args(self, block: Block, names: list[str] | None = None) -> str:
        used = set(self.names.values())
        parts = []
        for i, a in enumerate(block.args):
            hint = names[i] if names is not None else a.hint
            base = f"%{hint}" if hint and hint.isidentifier() else None
            if base is None or base in used:
                base = f"%{self.counter}"
                self.counter += 1
            used.add(base)
            self.names[a] = base
            parts.append(f"{base}: {a.type}")
        return ", ".join(parts)

    def op(self, op: Op, indent: str) -> None:
        results = ", ".join(self.name(r) for r in op.results)
        operands = ", ".join(self.name(v) for v in op.operands)
        params = ", ".join(f"{k}={format_param(v)}" for k, v in sorted(op.params.items()))
        types = ", ".join(str(r.type) for r in op.results) or "()"
        text = f"{indent}{results} = {op.prim.name}({operands})" if results else \
            f"{indent}{op.prim.name}({operands})"
        if params:
            text += f" {{{params}}}"
        text += f" : {types}"
        if op.regions:
            text += " {"
        if self.with_locs:
            text += f"  # {op.loc.file.rsplit('/', 1)[-1]}:{op.loc.line}"
        self.lines.append(text)
        if not op.regions:
            return
        for i, region in enumerate(op.regions):
            if i:
                self.lines.append(f"{indent}}} {{")
            self.lines.append(f"{indent}  ^({self.declare_args(region)}):")
            self.block(region, indent + "    ")
        self.lines.append(f"{indent}}}")

    def block(self, block: Block, indent: str, keyword: str = "yield") -> None:
        for op in block.ops:
            self.op(op, indent)
        results = ", ".join(self.name(r) for r in block.results)
        self.lines.append(f"{indent}{keyword} {results}" if results else f"{indent}{keyword}")


def format_function(fn: Function, with_locs: bool = False) -> str:
    p = _Printer(with_locs)
    # the arguments carry the function's argument names (hints when it has none)
    names = list(fn.arg_names) if len(fn.arg_names) == len(fn.args) else None
    args = p.declare_args(fn.body, names)
    outs = ", ".join(str(t) for t in fn.out_types)
    p.lines.append(f"func @{fn.name}({args}) -> ({outs}) {{")
    p.block(fn.body, "  ", "return")
    p.lines.append("}")
    return "\n".join(p.lines)


core.FORMAT[0] = format_function   # str(fn) prints this text
