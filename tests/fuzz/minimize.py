"""Delta debugging of a failing program: the smallest stack and body that fail the same way.

"The same way" is the failure's signature: its kind, its oracle and (for an
exception) the exception's class. The passes, repeated to a fixpoint:

1. cut the stack above the failing level, drop the top-level checks that did not fail;
2. remove one transform layer (a removed ``vmap`` keeps batch element 0 of its arguments);
3. replace a statement by one of its operands of the same type (``v3 = np.sin(v1)``
   becomes ``v3 = v1``; a control-flow block becomes a plain assignment), then remove
   the statements nothing depends on; keep one of two results;
4. switch the base between ``jit`` and a signature kernel, and a raw ``f`` inner layer to ``k0``.

Statements are single operations, so removing statements is removing
sub-expressions.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable

import numpy as np

from tests.fuzz.generator import Program, Stmt, dead_code_eliminate
from tests.fuzz.oracles import Failure, check


def same_failure(prog: Program, sig: tuple) -> bool:
    out = check(prog)
    return out.status == "fail" and out.failure is not None and out.failure.signature() == sig


def drop_layer(prog: Program, k: int) -> Program:
    layers = list(prog.layers)
    layer = layers.pop(k)
    if layers and k == 0 and layer.wrap_raw:
        layers[0] = replace(layers[0], wrap_raw=True)
    data = list(prog.data)
    if layer.kind == "vmap":
        outer_first = [lay for lay in reversed(prog.layers) if lay.kind == "vmap"]
        for i in range(prog.nargs):
            if layer.in_dims[i] is None:
                continue
            batched = [lay for lay in outer_first if lay.in_dims[i] is not None]
            pos = next(p for p, lay in enumerate(batched) if lay is layer)
            data[i] = np.take(data[i], 0, axis=pos)
    return replace(prog, layers=layers, data=data, top=[])


def candidates(prog: Program) -> list[Program]:
    out = []
    for k in range(len(prog.layers)):
        out.append(drop_layer(prog, k))
    for idx in reversed(range(len(prog.stmts))):
        s = prog.stmts[idx]
        for alt in s.alts:
            stmts = list(prog.stmts)
            stmts[idx] = Stmt(s.target, [f"{s.target} = {alt}"], (alt,), ())
            out.append(dead_code_eliminate(replace(prog, stmts=stmts)))
    for idx, s in enumerate(prog.stmts):      # an alias `v3 = v1`: use v1 instead
        if len(s.lines) == 1 and s.lines[0] == f"{s.target} = {s.uses[0] if s.uses else ''}" and s.uses:
            out.append(inline_alias(prog, idx))
    if len(prog.results) > 1:
        for r in prog.results:
            out.append(dead_code_eliminate(replace(prog, results=[r])))
    out.append(replace(prog, base="jit" if prog.base == "sig" else "sig"))
    if prog.layers and prog.layers[0].wrap_raw:
        out.append(replace(prog, layers=[replace(prog.layers[0], wrap_raw=False)] + prog.layers[1:]))
    return out


def inline_alias(prog: Program, idx: int) -> Program:
    s = prog.stmts[idx]
    old, new = s.target, s.uses[0]
    pat = re.compile(rf"\b{old}\b")
    stmts = [Stmt(t.target, [pat.sub(new, line) for line in t.lines],
                  tuple(new if u == old else u for u in t.uses), tuple(new if a == old else a for a in t.alts))
             for t in prog.stmts[idx + 1:]]
    results = [new if r == old else r for r in prog.results]
    return replace(prog, stmts=prog.stmts[:idx] + stmts, results=results)


def size(prog: Program) -> tuple[int, int, int, int]:
    return (len(prog.layers), len(prog.stmts), sum(len(s.lines) for s in prog.stmts),
            sum(len(line) for s in prog.stmts for line in s.lines) + (prog.base == "sig"))


def minimize(prog: Program, failure: Failure, budget: int = 150,
             test: Callable[[Program, tuple], bool] = same_failure) -> Program:
    """The smallest program found (within `budget` checks) that fails like `failure`."""
    sig = failure.signature()
    best = dead_code_eliminate(prog)
    top = best.top if failure.level == len(prog.layers) and failure.oracle.startswith(("jvp", "vjp")) else []
    while len(best.layers) > max(failure.level, 0):
        best = drop_layer(best, len(best.layers) - 1)
    best = replace(best, top=top)
    if not test(best, sig):
        best = prog
    tried = 0
    improved = True
    while improved and tried < budget:
        improved = False
        for cand in candidates(best):
            if size(cand) >= size(best):
                continue
            tried += 1
            if test(cand, sig):
                best, improved = cand, True
                break
            if tried >= budget:
                break
    return best
