"""From an IR function to an LLVM module with one C-ABI entry point.

The exported ``NAME(inputs, outputs, symbols)`` (see runtime/abi.py) unpacks
its pointer arrays and calls ``NAME.impl``, whose buffer parameters are
``noalias``: that is what lets LLVM vectorize the loops without run-time
overlap checks.
"""
from __future__ import annotations

import re
from typing import Sequence

from llvmlite import ir as ll

from compiler.backend import library, parallel, vecmath
from compiler.backend.codegen import I64T, PTR, Buffer, Codegen, memory_type
from compiler.backend.inplace import plan_arguments
from compiler.backend.target import Target
from compiler.ir import dims
from compiler.ir.core import Function, Op
from compiler.primitives import ops
from compiler.primitives.checks import error_site
from compiler.primitives.random import RNG_SYMBOL
from runtime.abi import ERROR_BASE, ErrorSite


def symbols_of(fn: Function) -> list[str]:
    """The symbolic dims a kernel needs, in ABI order (sorted by name)."""
    names: set[str] = set()
    for t in fn.in_types:
        for d in t.shape:
            names |= dims.symbols(d)
    return sorted(names)


def uses_random(fn: Function) -> bool:
    """Does the kernel draw from its implicit random state? Then its caller passes the call's
    key as one more int64 after the symbols (docs/abi.md)."""
    return any(op.prim is ops.rng_key_p for op in fn.body.walk())


def check_ops(fn: Function) -> list[Op]:
    """The kernel's check ops in program order: the i-th fails with status ERROR_BASE + i."""
    return [op for op in fn.body.walk() if op.prim is ops.check_p]


def error_sites(fn: Function) -> list[ErrorSite]:
    """What each failing status of the kernel means (runtime/abi.py), in status order."""
    return [error_site(op) for op in check_ops(fn)]


def library_routines(llvm_ir: str, name: str) -> list[str]:
    """The library routines (BLAS/LAPACK) kernel `name` may call: the pointers its module
    exports for the loader to fill (backend/library.py)."""
    return library.routines(llvm_ir, name)


def in_place(fn: Function, updates: Sequence[int]) -> list[int]:
    """The updated arguments (of `updates`, the arguments whose new values are `fn`'s last
    results) that the kernel writes where they live: the caller passes each one's pointer as
    its new value's output too (backend/inplace.py)."""
    plan = plan_arguments(fn, updates)
    first = len(fn.out_types) - len(updates)
    return [i for k, i in enumerate(updates) if first + k in plan.pairs]


def build_module(fn: Function, name: str, target: Target, *, fastmath: bool = False,
                 split: parallel.Plan | None = None, updates: Sequence[int] = ()) -> str:
    """LLVM IR text for `fn`, exported as `name` (with `split`, an entry that runs slices of
    the rows on several threads: backend/parallel.py). `updates`: the arguments whose new
    values are the last results; those of ``in_place(fn, updates)`` are computed in the
    argument's buffer, and copied into their output only when the caller passed another one."""
    module = ll.Module(name)
    syms = symbols_of(fn)
    n_in, n_out = len(fn.in_types), len(fn.out_types)
    i32 = ll.IntType(32)
    n_words = len(syms) + uses_random(fn)       # the call's key follows the symbols
    impl_ty = ll.FunctionType(i32, [PTR] * (n_in + n_out) + [I64T] * n_words)
    impl = ll.Function(module, impl_ty, f"{name}.impl")
    impl.linkage = "internal"
    for arg in impl.args[:n_in + n_out]:
        arg.add_attribute("noalias")
    symbols = dict(zip(syms + [RNG_SYMBOL], impl.args[n_in + n_out:]))
    cg = Codegen(module, impl, symbols, fastmath=fastmath, has_fma=target.has_fma,
                 vector_bits=target.vector_bits, name=name)
    cg.checks = {op: ERROR_BASE + i for i, op in enumerate(check_ops(fn))}

    def buffer(arg: ll.Value, t) -> Buffer:
        return Buffer(cg.alloca_builder.bitcast(arg, ll.PointerType(memory_type(t.dtype))), t.dtype, t.shape)

    ins = [buffer(a, t) for a, t in zip(impl.args[:n_in], fn.in_types)]
    outs = [buffer(a, t) for a, t in zip(impl.args[n_in:n_in + n_out], fn.out_types)]
    plan = plan_arguments(fn, updates)
    written = list(outs)                   # where each result is computed
    for r, a in plan.pairs.items():
        written[r] = ins[a]
    cg.check_sizes(fn.body)
    cg.lower_block(fn.body, ins, written, assign={v: ins[a] for v, a in plan.assign.items()} or None,
                   force=plan.force)
    for r, a in sorted(plan.pairs.items()):   # a caller that passed another output: a copy
        other = cg.b.icmp_unsigned("!=", impl.args[n_in + r], impl.args[a])
        with cg.b.if_then(other, likely=False):
            cg.copy(ins[a], outs[r])
    cg.finish()
    if split is None or "windows" in target.triple:      # POSIX threads only
        _emit_entry(module, impl, name, n_in, n_out, n_words)
    else:
        parallel.emit_entry(module, impl, name, fn, split, syms, n_words,
                            [t.dtype.itemsize for t in list(fn.in_types) + list(fn.out_types)],
                            "linux" in target.triple)
    text = vecmath.link(_loop_ids(str(module)), module)
    # a string attribute llvmlite cannot attach: use the host's full vector width
    attrs = f'"prefer-vector-width"="{target.vector_bits}" "min-legal-vector-width"="0"'
    return re.sub(r'(define internal i32 @"[^"]*\.impl"\([^)]*\))', rf"\1 {attrs}", text, count=1)


#: the loop hints of Codegen._loop_hints: each becomes one operand of a loop's ID
_LOOP_HINTS = {
    "i": '!{!"llvm.loop.interleave.count", i32 2}',
    "f": '!{!"llvm.loop.interleave.count", i32 4}',
    "o": '!{!"llvm.loop.interleave.count", i32 1}',
    "u": '!{!"llvm.loop.unroll.disable"}',
    "v": '!{!"llvm.loop.vectorize.enable", i1 false}',
    "p": '!{!"llvm.loop.vectorize.predicate.enable", i1 false}',
    "m": '!{!"llvm.loop.vectorize.predicate.enable", i1 true}',
}


def _loop_ids(text: str) -> str:
    """Turn the codegen's ``!N = !{!"aotx.loop.K.HINTS"}`` markers into distinct loop IDs
    (llvmlite cannot build self-referential metadata): hint ``i`` asks for interleave
    count 2, ``f`` for 4, ``o`` for none, ``u`` disables unrolling, ``v`` the loop
    vectorizer, ``p`` its masked (predicated) remainder, ``m`` asks for one, ``wN`` for
    vectors of N elements."""
    start = text.find("\n!")                    # llvmlite prints the metadata last
    if start < 0 or 'aotx.loop.' not in text[start:]:
        return text
    head, text = text[:start + 1], text[start + 1:]
    marker = re.compile(r'^(!\d+) = !\{ ?!"aotx\.loop\.\d+\.([a-z0-9]+)" ?\}$', flags=re.M)
    top = max(int(m) for m in re.findall(r"^!(\d+) =", text, flags=re.M))
    nodes: dict[str, str] = {}

    def node(hint: str) -> str:
        if hint not in nodes:
            nodes[hint] = f"!{top + 1 + len(nodes)}"
        return nodes[hint]

    def loop_id(m: re.Match[str]) -> str:      # one pass over the text: linear in its size
        refs = ", ".join(node(h) for h in re.findall(r"w\d+|[a-z]", m.group(2)))
        return f"{m.group(1)} = distinct !{{{m.group(1)}, {refs}}}"
    text = head + marker.sub(loop_id, text)
    defs = "".join(f"\n{ref} = " + (_LOOP_HINTS[h] if h in _LOOP_HINTS else
                                     f'!{{!"llvm.loop.vectorize.width", i32 {h[1:]}}}')
                   for h, ref in nodes.items())
    return text + defs + "\n"


def _emit_entry(module: ll.Module, impl: ll.Function, name: str, n_in: int, n_out: int, n_sym: int) -> None:
    pp = ll.PointerType(PTR)
    entry = ll.Function(module, ll.FunctionType(ll.IntType(32), [pp, pp, ll.PointerType(I64T)]), name)
    b = ll.IRBuilder(entry.append_basic_block("entry"))
    ins, outs, syms = entry.args
    args: list[ll.Value] = []
    for base, count in ((ins, n_in), (outs, n_out)):
        for i in range(count):
            args.append(b.load(b.gep(base, [ll.Constant(I64T, i)])))
    for i in range(n_sym):
        args.append(b.load(b.gep(syms, [ll.Constant(I64T, i)])))
    b.ret(b.call(impl, args))
