"""C entry points of other shapes for native callbacks (docs/interop.md, "SciPy callbacks").

A kernel's own entry is ``int32_t f(void **inputs, void **outputs, const int64_t *symbols)``
(docs/abi.md). Libraries that take native callbacks want other prototypes:
``double f(double)`` or ``double f(int n, double *x)`` (``scipy.integrate.quad``),
``int f(double *buffer, npy_intp size, double *result, void *data)``
(``scipy.ndimage.generic_filter``). :func:`adapter` compiles a small function with the
asked prototype that packs its arguments into the kernel's arrays and calls the kernel's
entry: no copy, no Python.

A prototype is read parameter by parameter:

* a pointer next to an integer (``int n, double *x`` or ``double *x, npy_intp n``) is an
  array input ``T[n]`` whose symbolic length is that integer;
* a scalar (``double x``) is a scalar input; ``void *`` (SciPy's user data) is ignored;
* a pointer with no integer next to it is where the kernel's scalar result is written,
  and the function then returns an ``int``: 1 on success and 0 on failure (SciPy's
  convention); otherwise the function returns the result itself (NaN if the kernel
  failed, for a floating result).
"""
from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass
from typing import Any, Sequence

import llvmlite.binding as llvm

from compiler.backend.target import Target, _initialize
from compiler.errors import PrototypeError

#: C type name -> (dtype of the kernel's signature, LLVM type, ctypes type)
C_TYPES: dict[str, tuple[str, str, Any]] = {
    "double": ("f64", "double", ctypes.c_double),
    "float": ("f32", "float", ctypes.c_float),
    "int": ("i32", "i32", ctypes.c_int),
    "int32_t": ("i32", "i32", ctypes.c_int32),
    "long": ("i64", "i64", ctypes.c_long),
    "int64_t": ("i64", "i64", ctypes.c_int64),
    "intptr_t": ("i64", "i64", ctypes.c_ssize_t),
    "npy_intp": ("i64", "i64", ctypes.c_ssize_t),
    "ssize_t": ("i64", "i64", ctypes.c_ssize_t),
}
_INTEGER = ("i32", "i64")


@dataclass(frozen=True)
class Param:
    ctype: str        # a key of C_TYPES, or "void"
    pointer: bool


def parse_prototype(text: str) -> tuple[str, list[Param]]:
    """``"double (int, double *)"`` -> ("double", [Param("int", False), Param("double", True)])."""
    m = re.fullmatch(r"\s*(\w+)\s*\(([^()]*)\)\s*", text)
    if m is None:
        raise PrototypeError(f"prototype {text!r}: expected 'RESULT (TYPE, TYPE *, ...)', e.g. "
                             f"'double (double)'")
    result, body = m.group(1), m.group(2).strip()
    params = []
    for part in ([] if body in ("", "void") else body.split(",")):
        p = re.fullmatch(r"\s*(?:const\s+)?(\w+)\s*(\*?)\s*\w*\s*", part)
        if p is None or (p.group(1) not in C_TYPES and not (p.group(1) == "void" and p.group(2))):
            raise PrototypeError(f"prototype {text!r}: parameter {part.strip()!r} is not one of "
                                 f"{', '.join(C_TYPES)} (or a pointer to one), or void *")
        params.append(Param(p.group(1), bool(p.group(2))))
    if result not in C_TYPES:
        raise PrototypeError(f"prototype {text!r}: the result must be one of {', '.join(C_TYPES)}")
    return result, params


@dataclass(frozen=True)
class Plan:
    """How each C parameter feeds the kernel: ("array", input), ("count", symbol),
    ("scalar", input), ("result",), ("ignore",)."""

    roles: tuple[tuple[Any, ...], ...]
    status_result: bool


def plan(prototype: str, inputs: Sequence[tuple[str, list[Any]]], outputs: Sequence[tuple[str, list[Any]]],
         symbols: Sequence[str], who: str) -> Plan:
    """Match the prototype to the kernel's inputs and outputs ((dtype, dims) each)."""
    result, params = parse_prototype(prototype)
    if len(outputs) != 1 or outputs[0][1]:
        raise PrototypeError(f"{who}: a callback returns one scalar; the kernel returns "
                             f"{', '.join(_describe(outputs, j) for j in range(len(outputs))) or 'nothing'}")

    def integer(j: int) -> bool:
        return 0 <= j < len(params) and not params[j].pointer and params[j].ctype != "void" \
            and C_TYPES[params[j].ctype][0] in _INTEGER

    length: dict[int, int] = {}                       # pointer -> the integer next to it
    taken: set[int] = set()
    for i, q in enumerate(params):
        if q.pointer and q.ctype != "void":
            for j in (i + 1, i - 1):
                if integer(j) and j not in taken:
                    length[i] = j
                    taken.add(j)
                    break
    roles: list[tuple[Any, ...]] = [("ignore",)] * len(params)
    k, status_result = 0, False
    for i, q in enumerate(params):
        if q.ctype == "void" or i in taken:
            continue
        if q.pointer and i not in length:              # where the result goes
            if status_result or result not in ("int", "int32_t"):
                raise PrototypeError(f"{who}: in {prototype!r}, pointer parameter {i + 1} has no "
                                     f"length next to it, so it receives the result: the function "
                                     f"must then return int (1 on success, 0 on failure)")
            _expect(who, prototype, i, q.ctype, outputs[0][0], "result")
            roles[i], status_result = ("result",), True
            continue
        if k >= len(inputs):
            raise PrototypeError(f"{who}: {prototype!r} has more inputs than the kernel's {len(inputs)}")
        dtype, dims = inputs[k]
        if q.pointer:
            if len(dims) != 1 or dims[0] not in symbols:
                raise PrototypeError(f"{who}: in {prototype!r}, parameters {i + 1} and "
                                     f"{length[i] + 1} are an array and its length, so kernel input "
                                     f"{k + 1} must be a 1-d array of symbolic length (f64[n]); it is "
                                     f"{_describe(inputs, k)}")
            roles[i], roles[length[i]] = ("array", k), ("count", dims[0])
        else:
            if dims:
                raise PrototypeError(f"{who}: in {prototype!r}, parameter {i + 1} ({q.ctype}) is a "
                                     f"scalar, but kernel input {k + 1} is {_describe(inputs, k)}")
            roles[i] = ("scalar", k)
        _expect(who, prototype, i, q.ctype, dtype, f"input {k + 1}")
        k += 1
    if k != len(inputs):
        raise PrototypeError(f"{who}: {prototype!r} passes {k} of the kernel's {len(inputs)} inputs")
    if not status_result:
        _expect(who, prototype, -1, result, outputs[0][0], "result")
    missing = set(symbols) - {r[1] for r in roles if r[0] == "count"}
    if missing:
        raise PrototypeError(f"{who}: {prototype!r} gives no value to the symbolic dim(s) "
                             f"{', '.join(sorted(missing))}")
    return Plan(tuple(roles), status_result)


def _describe(specs: Sequence[tuple[str, list[Any]]], k: int) -> str:
    dtype, dims = specs[k]
    return f"{dtype}[{', '.join(map(str, dims))}]"


def _expect(who: str, prototype: str, i: int, ctype: str, dtype: str, what: str) -> None:
    if C_TYPES[ctype][0] != dtype:
        where = "the result type" if i < 0 else f"parameter {i + 1}"
        raise PrototypeError(f"{who}: in {prototype!r}, {where} is {ctype} but the kernel's {what} "
                             f"is {dtype}")


class Adapter:
    """A compiled adapter: `address` calls the kernel at `kernel_address`; `cfunc` is it as
    a ctypes function (argtypes and restype set, as scipy.LowLevelCallable reads them).
    Keep it, and the kernel's code, alive while the address is used."""

    def __init__(self, prototype: str, p: Plan, kernel_address: int, symbols: Sequence[str],
                 n_inputs: int, target: Target) -> None:
        result, params = parse_prototype(prototype)
        _initialize()
        ir = _llvm_ir(result, params, p, kernel_address, list(symbols), n_inputs)
        module = llvm.parse_assembly(ir)
        module.verify()
        self._engine = llvm.create_mcjit_compiler(module, target.machine(jit=True))
        self._engine.finalize_object()
        self.address = self._engine.get_function_address("aotx_callback")
        restype = C_TYPES[result][2]
        argtypes = [ctypes.c_void_p if q.ctype == "void" else
                    (ctypes.POINTER(C_TYPES[q.ctype][2]) if q.pointer else C_TYPES[q.ctype][2])
                    for q in params]
        self.cfunc = ctypes.CFUNCTYPE(restype, *argtypes)(self.address)
        self.prototype = prototype


def _llvm_ir(result: str, params: list[Param], p: Plan, kernel: int, symbols: list[str],
             n_inputs: int) -> str:
    def lty(q: Param) -> str:
        return "ptr" if q.pointer or q.ctype == "void" else C_TYPES[q.ctype][1]
    rty = C_TYPES[result][1]
    args = ", ".join(f"{lty(q)} %a{i}" for i, q in enumerate(params))
    lines = [f"define {rty} @aotx_callback({args}) {{",
             f"  %ins = alloca [{max(n_inputs, 1)} x ptr]",
             "  %outs = alloca [1 x ptr]",
             f"  %syms = alloca [{max(len(symbols), 1)} x i64]"]
    out_ty = rty if not p.status_result else None
    for i, (q, role) in enumerate(zip(params, p.roles)):
        if role[0] == "array":
            lines.append(f"  %in{role[1]} = getelementptr [{max(n_inputs, 1)} x ptr], ptr %ins, i64 0, i64 {role[1]}")
            lines.append(f"  store ptr %a{i}, ptr %in{role[1]}")
        elif role[0] == "scalar":
            t = lty(q)
            lines += [f"  %box{i} = alloca {t}", f"  store {t} %a{i}, ptr %box{i}",
                      f"  %in{role[1]} = getelementptr [{max(n_inputs, 1)} x ptr], ptr %ins, i64 0, i64 {role[1]}",
                      f"  store ptr %box{i}, ptr %in{role[1]}"]
        elif role[0] == "count":
            j = symbols.index(role[1])
            value = f"%a{i}"
            if lty(q) == "i32":
                lines.append(f"  %n{i} = sext i32 %a{i} to i64")
                value = f"%n{i}"
            lines += [f"  %sym{i} = getelementptr [{max(len(symbols), 1)} x i64], ptr %syms, i64 0, i64 {j}",
                      f"  store i64 {value}, ptr %sym{i}"]
        elif role[0] == "result":
            lines.append(f"  store ptr %a{i}, ptr %outs")
    if out_ty is not None:
        lines += [f"  %res = alloca {out_ty}", "  store ptr %res, ptr %outs"]
    lines += [f"  %fn = inttoptr i64 {kernel} to ptr",
              "  %status = call i32 %fn(ptr %ins, ptr %outs, ptr %syms)",
              "  %ok = icmp eq i32 %status, 0"]
    if p.status_result:
        lines += [f"  %ret = zext i1 %ok to {rty}", f"  ret {rty} %ret", "}"]
    else:
        lines.append(f"  %value = load {out_ty}, ptr %res")
        if rty in ("double", "float"):
            nan = "0x7FF8000000000000"
            lines += [f"  %ret = select i1 %ok, {rty} %value, {rty} {nan}", f"  ret {rty} %ret", "}"]
        else:
            lines += [f"  ret {rty} %value", "}"]
    return "\n".join(lines) + "\n"
