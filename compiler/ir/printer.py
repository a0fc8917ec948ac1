"""The textual form of the IR: stable, readable, and comparable in tests.

    func @f(%x: f64[n, 3], %w: f64[3]) -> (f64[n]) {
      %0 = dot_general(%x, %w) {dimension_numbers=(((1,), (0,)), ((), ()))} : f64[n]
      return %0
    }

Values get short names (%0, %1, ...; block arguments keep the user's names
when known). ``with_locs=True`` appends ``# file:line`` to each op.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from compiler.ir import core
from compiler.ir.core import Block, Function, Op, Value
from compiler.ir.types import SHORT_NAMES


def format_param(v: Any) -> str:
    if isinstance(v, np.ndarray):
        if v.size <= 8:
            body = np.array2string(v.reshape(-1), separator=", ", max_line_width=10**6)
            return f"array({body}, {SHORT_NAMES.get(v.dtype, v.dtype)}, shape={tuple(v.shape)})"
        return f"array(<{v.size} x {SHORT_NAMES.get(v.dtype, v.dtype)}>, shape={tuple(v.shape)})"
    if isinstance(v, np.dtype):
        return SHORT_NAMES.get(v, str(v))
    if isinstance(v, tuple):
        inner = ", ".join(format_param(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    return str(v)


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

    def declare_args(self, block: Block) -> str:
        used = set(self.names.values())
        parts = []
        for a in block.args:
            base = f"%{a.hint}" if a.hint and a.hint.isidentifier() else None
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
        types = ", ".join(str(r.type) for r in op.results)
        text = f"{indent}{results} = {op.prim.name}({operands})"
        if params:
            text += f" {{{params}}}"
        text += f" : {types}"
        if self.with_locs:
            text += f"  # {op.loc.file.rsplit('/', 1)[-1]}:{op.loc.line}"
        if not op.regions:
            self.lines.append(text)
            return
        self.lines.append(text + " {")
        for i, region in enumerate(op.regions):
            if i:
                self.lines.append(f"{indent}}} {{")
            self.lines.append(f"{indent}  ^({self.declare_args(region)}):")
            self.block(region, indent + "    ")
        self.lines.append(f"{indent}}}")

    def block(self, block: Block, indent: str, keyword: str = "yield") -> None:
        for op in block.ops:
            self.op(op, indent)
        self.lines.append(f"{indent}{keyword} {', '.join(self.name(r) for r in block.results)}")


def format_function(fn: Function, with_locs: bool = False) -> str:
    p = _Printer(with_locs)
    args = p.declare_args(fn.body)
    outs = ", ".join(str(t) for t in fn.out_types)
    p.lines.append(f"func @{fn.name}({args}) -> ({outs}) {{")
    p.block(fn.body, "  ", "return")
    p.lines.append("}")
    return "\n".join(p.lines)


core.FORMAT[0] = format_function   # str(fn) prints this text
