"""``jit(parallel=True)``: one call split into slices of rows run on several threads.

A kernel whose results are computed row by row along the leading axis of a symbolic dim
(the *row symbol*: :func:`row_symbol`) gives the same results when it is called on T
slices of the rows, each call writing its slice of the outputs. The
proof is on the optimized IR (:func:`analyze`): every value is either *row-independent*
(no dim holds the row symbol) or *row-mapped* with one row axis whose dim is exactly the
symbol, and every op keeps the rows apart:

* elementwise ops of row-mapped operands (all have the same row axis);
* ``broadcast_in_dim`` of a row-independent value to a row-mapped shape, or of a row-mapped
  one keeping its row axis; ``iota`` and ``constant`` with the rows on an axis they do not
  count along;
* reductions, ``argmax``/``argmin``, ``cumsum``/``cumprod``, ``rev`` over other axes;
  ``transpose`` (the row axis moves), ``reshape`` that keeps the elements before and after
  the row axis, ``slice``/``pad`` that keep the whole row axis, ``concatenate`` along
  another axis;
* ``dot_general`` with the row axis a free axis of one operand and the other
  row-independent, or a batch axis of both;
* ``take`` along another axis with row-independent indices (``x[:, idx]``), or from a
  row-independent table with row-mapped indices (``table[codes]``);
* ``check`` (a run-time IndexError, ...) whose condition and message do not count the rows:
  each slice checks its own rows.

Anything else that touches a row-mapped value (random draws, gathers across rows, control
flow, host callbacks, reductions or scans along the rows) is refused with a reason; so is a
result that is not row-mapped on axis 0, an argument with the rows elsewhere than axis 0,
and a row dim anywhere but where its value is row-mapped. A refused kernel is compiled as
usual and runs serially (the reason is logged with ``AOTX_DEBUG=1``).

The exported entry of an accepted kernel (:func:`emit_entry`) has the usual C ABI
(docs/abi.md). It reads the row count from the symbols; below ``2 * min_rows`` rows (a
work estimate of the IR: :func:`row_cost`, against ``WORK_PER_THREAD``) it calls the
serial code directly. Above, it cuts the rows into T slices (T: ``AOTX_NUM_THREADS``, else
the size of the process's CPU affinity mask, at most ``MAX_THREADS`` and at most
``rows / min_rows``; ``TASKS_PER_THREAD`` slices a thread when the rows allow, the rows of
the last slice of each thread cut again in halving levels: ``TAIL_LEVELS``), and hands
them to the thread pool (backend/pool.py: ``aotx_pool_run``), which runs ``NAME.task`` on
each: the serial code on its slice, the pointers of split arguments and results advanced
by ``start * row_bytes``, the row symbol replaced by the slice's row count, the first
non-zero status kept. The pool's workers are created once and parked between calls, so a
split costs the wake-up of a parked thread (microseconds), and the calling thread takes
any slice no worker has taken yet: on a machine whose cores are busy the call degrades to
serial rather than waiting (docs/performance.md, "Multithreading").
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from llvmlite import ir as ll

from compiler.backend import pool
from compiler.ir import dims
from compiler.ir.core import Function, Op, Value
from compiler.ir.primitive import ELEMENTWISE
from compiler.ir.types import TensorType

#: the least work a thread is given, in :func:`row_cost` units (a transcendental function of one
#: element 8, another elementwise op 0.5, a multiply-add of a product 1): W1's expression is 28
#: units an element and takes about 2 ns of vectorized float64 code (AVX-512), so a unit is about
#: 0.07 ns and this about 35 us; handing a slice to a parked worker of the pool (backend/pool.py)
#: costs a few us, where starting and joining a thread per call cost 15 to 20 us
#: (docs/performance.md, "Multithreading")
WORK_PER_THREAD = 500_000
#: the most threads a call uses
MAX_THREADS = 64
#: slices start at multiples of this many rows when they are larger (whole cache lines for
#: 1-d float arrays, the same vector loop alignment as the serial kernel)
ALIGN_ROWS = 64
#: a split call is cut into this many tasks a thread (when each keeps at least the least work):
#: a thread that a busy machine slows down leaves its last tasks to the others
TASKS_PER_THREAD = 4
#: the most levels of a call's tail: the rows of the last ``threads`` slices of the equal cut are
#: cut again in levels of half the rest each (``threads`` slices a level, each at least the
#: least work), so that the threads finish within a small slice of each other
TAIL_LEVELS = 12
#: a slice of the tail does at least this many times the fixed work of a slice (``slice_cost``)
TAIL_SHARE = 16
#: the symbolic dim of the rows of a parallel kernel compiled lazily for fixed shapes
ROWS = "rows"
#: the environment variable that sets the thread count (read on every split call)
ENV = "AOTX_NUM_THREADS"

_EXPENSIVE = frozenset({"exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan",
                        "sinh", "cosh", "tanh", "arcsin", "arccos", "arctan", "arctan2", "arcsinh",
                        "arccosh", "arctanh", "pow", "erf", "erfc", "erfcx", "erfinv", "erfcinv",
                        "lgamma", "gamma", "digamma", "polygamma", "i0e", "i1e", "cbrt", "hypot",
                        "div", "sqrt", "mod", "floordiv"})
_RANDOM = frozenset({"philox", "rng_key"})


@dataclass(frozen=True)
class Plan:
    """How the entry splits a call: the row symbol (its index among the kernel's symbols),
    which arguments and results are split, and the least rows per thread."""

    symbol: str
    symbol_index: int
    split_inputs: tuple[bool, ...]
    min_rows: int
    cost_per_row: float
    #: the least rows of a slice of the tail (the last slices of a call): at least `min_rows`,
    #: more when each slice has a fixed cost (:func:`slice_cost`)
    tail_rows: int = 1


class _Refused(Exception):
    pass


def row_symbol(fn: Function) -> str | None:
    """The rows: ``ROWS`` when an argument leads with it (a lazily compiled kernel, staged
    with its rows symbolic by compiler/api/kernel.py), else the first argument's leading dim
    that is a plain symbol."""
    leading = []
    for t in fn.in_types:
        if t.shape and not isinstance(t.shape[0], int):
            names = dims.symbols(t.shape[0])
            if len(names) == 1 and t.shape[0] == dims.Sym(next(iter(names))):
                leading.append(next(iter(names)))
    if ROWS in leading:
        return ROWS
    return leading[0] if leading else None


def analyze(fn: Function, symbols: list[str]) -> Plan | str:
    """The split of `fn`'s calls over the rows, or why it has none (see the module doc)."""
    name = row_symbol(fn)
    if name is None:
        return "no argument has a symbolic leading dim (the rows)"
    try:
        return _analyze(fn, name, symbols)
    except _Refused as e:
        return str(e)


def _row_axis(t: TensorType, row: dims.Dim, sym: str, what: str) -> int | None:
    """The axis of `t` whose dim is the row symbol (None: none holds it); refused when the
    symbol is in another dim or in more than one."""
    axes = [k for k, d in enumerate(t.shape) if not isinstance(d, int) and sym in dims.symbols(d)]
    if not axes:
        return None
    if len(axes) > 1 or t.shape[axes[0]] != row:
        raise _Refused(f"{what} has the rows '{sym}' in more than one dim or in an expression ({t})")
    return axes[0]


def _symbols(t: TensorType) -> set[str]:
    return {name for d in t.shape if not isinstance(d, int) for name in dims.symbols(d)}


def _mentions(value: Any, sym: str) -> bool:
    if isinstance(value, dims.DimExpr):
        return sym in dims.symbols(value)
    if isinstance(value, (tuple, list)):
        return any(_mentions(v, sym) for v in value)
    if isinstance(value, dict):
        return any(_mentions(v, sym) for v in value.values())
    return False


def _analyze(fn: Function, sym: str, symbols: list[str]) -> Plan:
    row = dims.Sym(sym)
    for op in fn.body.walk():
        if op.prim.name in _RANDOM:
            raise _Refused(f"{op.prim.name} at {op.loc}: the kernel draws random numbers (each "
                           "slice would draw its own)")
        if op.prim.name == "host_call":
            raise _Refused(f"host_call at {op.loc}: the kernel calls back into Python (each slice "
                           "would call it, from a thread without the GIL)")
    axis: dict[Value, int | None] = {}       # row-mapped values: their row axis; None: independent
    split = []
    for k, (a, t) in enumerate(zip(fn.body.args, fn.in_types)):
        r = _row_axis(t, row, sym, f"argument {k}")
        if r not in (None, 0):
            raise _Refused(f"argument {k} has the rows on axis {r}, not 0 ({t})")
        axis[a] = r
        split.append(r == 0)
    cost, fixed = 0.0, 0.0
    for op in fn.body.ops:
        rs = _op_rows(op, [axis[v] for v in op.operands], row, sym)
        ins = [axis[v] for v in op.operands]
        if any(r is not None for r in rs):
            fixed += slice_cost(op, ins)
        for v, r in zip(op.results, rs):
            axis[v] = r
            if r is not None:
                cost += row_cost(op, v.type, r, ins)
    for k, v in enumerate(fn.body.results):
        if axis.get(v) != 0:
            raise _Refused(f"result {k} is not computed row by row along axis 0 ({v.type})")
    cost = max(cost, 1.0)
    min_rows = max(1, math.ceil(WORK_PER_THREAD / cost))
    return Plan(sym, symbols.index(sym), tuple(split), min_rows, cost,
                max(min_rows, math.ceil(TAIL_SHARE * fixed / cost)))


def slice_cost(op: Op, ins: list[int | None]) -> float:
    """The work a slice repeats whatever its rows, in :func:`row_cost` units: a matrix product
    of the rows by an operand without them packs that operand on every call (BLAS), about 8
    units an element (W of 256 x 256 float64: about 38 us a slice, measured as the CPU time
    that 12 more slices added to a split tanh(x @ W + b) of 4096 rows)."""
    if op.prim.name != "dot_general" or all(r is not None for r in ins):
        return 0.0
    return sum(8.0 * math.prod(d if isinstance(d, int) else 16 for d in v.type.shape)
               for v, r in zip(op.operands, ins) if r is None)


def _per_row(t: TensorType, r: int) -> float:
    n = 1.0
    for k, d in enumerate(t.shape):
        if k != r:
            n *= d if isinstance(d, int) else 16
    return n


def row_cost(op: Op, t: TensorType, r: int, ins: list[int | None]) -> float:
    """About the nanoseconds per row of `op`'s row-mapped result `t` (row axis `r`)."""
    name = op.prim.name
    if op.prim.kind == ELEMENTWISE:
        return _per_row(t, r) * (8.0 if name in _EXPENSIVE else 0.5)
    if name == "dot_general":
        (lc, _), _ = op.params["dimension_numbers"]
        lhs = op.operands[0].type.shape
        k = math.prod(lhs[i] if isinstance(lhs[i], int) else 16 for i in lc)
        return _per_row(t, r) * max(k, 1)
    if name == "reduce_max_sumexp" and ins and ins[0] is not None:   # an exp and a max per element,
        return _per_row(op.operands[0].type, ins[0]) * 4.5                # counted once per result
    if op.prim.kind != ELEMENTWISE and ins and ins[0] is not None and op.prim.loops:
        return _per_row(op.operands[0].type, ins[0]) * 0.5     # reductions: per element read
    return _per_row(t, r) * 0.25


def _op_rows(op: Op, ins: list[int | None], row: dims.Dim, sym: str) -> list[int | None]:
    """The row axes of `op`'s results, given its operands'."""
    name, p = op.prim.name, op.params
    outs = [_row_axis(v.type, row, sym, f"the result of {name}") for v in op.results]
    mapped = [r for r in ins if r is not None]
    where = f"{name} at {op.loc}" if op.loc is not None else name
    if name in _RANDOM and (mapped or any(r is not None for r in outs)):
        raise _Refused(f"{where} draws random numbers for the rows")
    if not mapped and all(r is None for r in outs):
        inner = [o for region in op.regions for o in region.walk()]
        if _mentions(p, sym) or any(_mentions(o.params, sym) or any(
                sym in _symbols(v.type) for v in list(o.results) + list(o.operands)) for o in inner) \
                or any(sym in _symbols(a.type) for region in op.regions for a in region.args):
            raise _Refused(f"{where} reads the number of rows")
        return outs                                  # row-independent
    if op.regions or op.prim.kind == "control":
        raise _Refused(f"{where} (control flow) on the rows")
    if name == "check" and not op.results:
        if _mentions(p, sym):                       # its message or condition counts the rows
            raise _Refused(f"{where} checks a condition on the number of rows")
        return []                                   # each slice checks its rows
    if op.prim.kind == ELEMENTWISE:
        if any(r != outs[0] for r in ins + outs if r is not None) or len(mapped) != len(ins):
            raise _Refused(f"{where} mixes the rows with other values")
        return outs
    if name == "reduce_max_sumexp":     # (max, sum of exp(x - max)) over trailing axes
        row_axis = mapped[0]
        if row_axis not in p["axes"] and all(o == row_axis for o in outs):
            return outs
        raise _Refused(f"{where} reduces along the rows")
    out = outs[0] if len(outs) == 1 else None
    if len(outs) != 1 or out is None:
        if name.startswith("reduce_") or name in ("argmax", "argmin"):
            raise _Refused(f"{where} reduces along the rows")
        raise _Refused(f"{where} gives results that are not row by row")
    r = mapped[0] if mapped else None
    if name == "broadcast_in_dim":
        bd = p["broadcast_dimensions"]
        if r is None:
            if out in bd:
                raise _Refused(f"{where} stretches a value along the rows")
            return outs
        if bd[r] == out:
            return outs
    elif name in ("iota", "constant"):
        if name == "iota" and p["dimension"] == out:
            raise _Refused(f"{where} counts along the rows (the row index)")
        return outs
    elif name.startswith("reduce_"):
        axes = p["axes"]
        if r is not None and r not in axes and out == r - sum(1 for a in axes if a < r):
            return outs
        raise _Refused(f"{where} reduces along the rows")
    elif name in ("argmax", "argmin"):
        if r is not None and p["axis"] != r and out == r - (1 if p["axis"] < r else 0):
            return outs
        raise _Refused(f"{where} reduces along the rows")
    elif name in ("cumsum", "cumprod"):
        if p["axis"] != r and out == r:
            return outs
        raise _Refused(f"{where} accumulates along the rows")
    elif name == "rev":
        if r not in p["dimensions"] and out == r:
            return outs
        raise _Refused(f"{where} reverses the rows")
    elif name == "transpose":
        if r is not None and p["permutation"].index(r) == out:
            return outs
    elif name == "reshape":
        src = op.operands[0].type.shape
        dst = op.results[0].type.shape
        if r is not None and dims.product(src[:r]) == dims.product(dst[:out]) and dims.product(src[r + 1:]) == dims.product(dst[out + 1:]):
            return outs
        raise _Refused(f"{where} mixes the rows with another axis")
    elif name == "slice":
        if r is not None and p["start_indices"][r] == 0 and p["limit_indices"][r] == row \
                and p["strides"][r] == 1 and out == r:
            return outs
        raise _Refused(f"{where} slices the rows")
    elif name == "pad":
        if ins[1] is None and r is not None and p["low"][r] == 0 and p["high"][r] == 0 and out == r:
            return outs
        raise _Refused(f"{where} pads the rows")
    elif name == "concatenate":
        if len(mapped) == len(ins) and all(x == out for x in mapped) and p["dimension"] != out:
            return outs
        raise _Refused(f"{where} joins along the rows")
    elif name == "take":                # x[:, idx] of constant idx, or table[idx] of row-mapped idx
        axis, (xr, ir) = p["axis"], ins
        if xr is not None and ir is None and xr != axis and \
                out == (xr if xr < axis else xr - 1 + len(op.operands[1].type.shape)):
            return outs
        if xr is None and ir is not None and out == axis + ir:
            return outs
        raise _Refused(f"{where} gathers across the rows")
    elif name == "dot_general":
        return [_dot_rows(op, ins, out, where)]
    raise _Refused(f"{where} on the rows is not known to keep them apart")


def _dot_rows(op: Op, ins: list[int | None], out: int, where: str) -> int:
    (lc, rc), (lb, rb) = op.params["dimension_numbers"]
    nl, nr = (len(v.type.shape) for v in op.operands)
    lfree = [a for a in range(nl) if a not in lc and a not in lb]
    rfree = [a for a in range(nr) if a not in rc and a not in rb]
    lr, rr = ins
    if lr is not None and rr is not None:
        if lr in lb and rr in rb and lb.index(lr) == rb.index(rr) and out == lb.index(lr):
            return out
    elif lr is not None and lr in lfree and out == len(lb) + lfree.index(lr):
        return out
    elif rr is not None and rr in rfree and out == len(lb) + len(lfree) + rfree.index(rr):
        return out
    raise _Refused(f"{where} contracts along the rows")


# ---- the exported entry ---------------------------------------------------------------------

I32, I64 = ll.IntType(32), ll.IntType(64)
I8P = ll.IntType(8).as_pointer()


def _row_bytes(b: ll.IRBuilder, t: TensorType, itemsize: int, syms: ll.Value, symbols: list[str]) -> ll.Value:
    size: ll.Value = ll.Constant(I64, itemsize)
    for d in t.shape[1:]:
        if isinstance(d, int):
            size = b.mul(size, ll.Constant(I64, d))
        else:
            names = dims.symbols(d)
            if len(names) != 1 or d != dims.Sym(next(iter(names))):
                raise _Refused(f"a dim after the rows is an expression ({t})")
            k = symbols.index(next(iter(names)))
            size = b.mul(size, b.load(b.gep(syms, [ll.Constant(I64, k)])))
    return size


def refuse_layout(fn: Function, symbols: list[str]) -> str | None:
    """Why the entry cannot compute the row sizes of `fn`'s arrays (None: it can)."""
    module = ll.Module()
    f = ll.Function(module, ll.FunctionType(I64, [I64.as_pointer()]), "probe")
    b = ll.IRBuilder(f.append_basic_block())
    try:
        for t in list(fn.in_types) + list(fn.out_types):
            _row_bytes(b, t, 1, f.args[0], symbols)
    except _Refused as e:
        return str(e)
    return None


def emit_entry(module: ll.Module, impl: ll.Function, name: str, fn: Function, plan: Plan,
               symbols: list[str], n_words: int, itemsizes: list[int], linux: bool) -> None:
    """The exported C-ABI entry `name` of a kernel split by `plan` (module doc)."""
    n_in, n_out = len(fn.in_types), len(fn.out_types)
    pp = ll.PointerType(I8P)
    i64p = I64.as_pointer()
    chunk = ll.Function(module, ll.FunctionType(I32, [pp, pp, i64p, I64, I64]), f"{name}.chunk")
    chunk.linkage = "internal"
    b = ll.IRBuilder(chunk.append_basic_block("entry"))
    ins, outs, syms, start, count = chunk.args
    args: list[ll.Value] = []
    types = list(fn.in_types) + list(fn.out_types)
    splits = list(plan.split_inputs) + [True] * n_out
    for k in range(n_in + n_out):
        base, i = (ins, k) if k < n_in else (outs, k - n_in)
        ptr = b.load(b.gep(base, [ll.Constant(I64, i)]))
        if splits[k]:
            offset = b.mul(start, _row_bytes(b, types[k], itemsizes[k], syms, symbols))
            ptr = b.gep(ptr, [offset])
        args.append(b.bitcast(ptr, impl.args[k].type))
    for k in range(n_words):
        args.append(count if k == plan.symbol_index else b.load(b.gep(syms, [ll.Constant(I64, k)])))
    b.ret(b.call(impl, args))

    # a job: the call's pointers, the rows of a head task, all the rows, the first failing
    # status, the head tasks, the threads, the tail's levels (the schedule: :func:`schedule`)
    job_t = ll.LiteralStructType([pp, pp, i64p, I64, I64, I32, I64, I64, I64])
    task = ll.Function(module, pool.TASK, f"{name}.task")
    task.linkage = "internal"
    b = ll.IRBuilder(task.append_basic_block("entry"))
    job = b.bitcast(task.args[0], job_t.as_pointer())

    def field(j: int) -> ll.Value:
        return b.load(b.gep(job, [ll.Constant(I32, 0), ll.Constant(I32, j)]))
    per, rows, head, c, levels = field(3), field(4), field(6), field(7), field(8)
    i = task.args[1]
    in_head = b.icmp_signed("<", i, head)
    j = b.sub(i, head)
    first, count = _tail_slice(b, rows, b.mul(head, per), c, levels, b.sdiv(j, c), b.srem(j, c))
    first = b.select(in_head, b.mul(i, per), first)
    count = b.select(in_head, per, count)
    run_it = task.append_basic_block("run")
    done = task.append_basic_block("done")
    b.cbranch(b.icmp_signed(">", count, ll.Constant(I64, 0)), run_it, done)
    b.position_at_end(run_it)
    status = b.call(chunk, [field(0), field(1), field(2), first, count])
    with b.if_then(b.icmp_signed("!=", status, ll.Constant(I32, 0)), likely=False):
        b.cmpxchg(b.gep(job, [ll.Constant(I32, 0), ll.Constant(I32, 5)]), ll.Constant(I32, 0), status,
                  "monotonic", "monotonic")
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()

    threads = _emit_threads(module, name, linux)
    run = pool.declare_run(module)

    entry = ll.Function(module, ll.FunctionType(I32, [pp, pp, i64p]), name)
    ins, outs, syms = entry.args
    b = ll.IRBuilder(entry.append_basic_block("entry"))
    rows = b.load(b.gep(syms, [ll.Constant(I64, plan.symbol_index)]))
    serial = entry.append_basic_block("serial")
    split = entry.append_basic_block("split")
    b.cbranch(b.icmp_signed("<", rows, ll.Constant(I64, 2 * plan.min_rows)), serial, split)
    b.position_at_end(serial)
    b.ret(b.call(chunk, [ins, outs, syms, ll.Constant(I64, 0), rows]))

    b.position_at_end(split)
    t = b.call(threads, [])
    most = b.sdiv(rows, ll.Constant(I64, plan.min_rows))
    c = b.select(b.icmp_signed("<", t, most), t, most)
    many = entry.append_basic_block("many")
    b.cbranch(b.icmp_signed("<=", c, ll.Constant(I64, 1)), serial, many)
    b.position_at_end(many)
    # TASKS_PER_THREAD tasks a thread when the rows allow (each at least min_rows)
    pieces = b.mul(c, ll.Constant(I64, TASKS_PER_THREAD))
    pieces = b.select(b.icmp_signed("<", pieces, most), pieces, most)
    per = b.sdiv(b.add(rows, b.sub(pieces, ll.Constant(I64, 1))), pieces)        # ceil(rows / pieces)
    aligned = b.mul(b.sdiv(b.add(per, ll.Constant(I64, ALIGN_ROWS - 1)), ll.Constant(I64, ALIGN_ROWS)),
                    ll.Constant(I64, ALIGN_ROWS))
    per = b.select(b.icmp_signed(">", per, ll.Constant(I64, 4 * ALIGN_ROWS)), aligned, per)
    count = b.sdiv(b.add(rows, b.sub(per, ll.Constant(I64, 1))), per)
    # the last c slices' rows become the tail, cut in halving levels of c tasks each
    head = b.sub(count, c)
    head = b.select(b.icmp_signed("<", head, ll.Constant(I64, 0)), ll.Constant(I64, 0), head)
    levels = _tail_levels(entry, b, b.sub(rows, b.mul(head, per)), c, plan.tail_rows)
    job = b.alloca(job_t)
    for j, v in enumerate([ins, outs, syms, per, rows, ll.Constant(I32, 0), head, c, levels]):
        b.store(v, b.gep(job, [ll.Constant(I32, 0), ll.Constant(I32, j)]))
    b.call(run, [task, b.bitcast(job, I8P), b.add(head, b.mul(levels, c)), c])
    b.ret(b.load(b.gep(job, [ll.Constant(I32, 0), ll.Constant(I32, 5)])))


def _align_down(b: ll.IRBuilder, v: ll.Value) -> ll.Value:
    return b.mul(b.sdiv(v, ll.Constant(I64, ALIGN_ROWS)), ll.Constant(I64, ALIGN_ROWS))


def _tail_levels(fn: ll.Function, b: ll.IRBuilder, tail: ll.Value, c: ll.Value, min_rows: int) -> ll.Value:
    """The levels of a tail of `tail` rows on `c` threads: 1, and one more while the last
    level (``tail >> (levels - 1)`` rows) still gives each thread `min_rows` (the plan's
    ``tail_rows``; at most ``TAIL_LEVELS``)."""
    k = b.alloca(I64)
    b.store(ll.Constant(I64, 1), k)
    head, body, out = (fn.append_basic_block(f"levels.{s}") for s in ("head", "body", "out"))
    b.branch(head)
    b.position_at_end(head)
    n = b.load(k)
    more = b.and_(b.icmp_signed("<", n, ll.Constant(I64, TAIL_LEVELS)),
                  b.icmp_signed(">=", b.ashr(tail, n), b.mul(c, ll.Constant(I64, min_rows))))
    b.cbranch(more, body, out)
    b.position_at_end(body)
    b.store(b.add(n, ll.Constant(I64, 1)), k)
    b.branch(head)
    b.position_at_end(out)
    return b.load(k)


def _tail_slice(b: ll.IRBuilder, rows: ll.Value, start: ll.Value, c: ll.Value, levels: ll.Value,
                level: ll.Value, m: ll.Value) -> tuple[ll.Value, ll.Value]:
    """The first row and the row count (<= 0: none) of task `m` of tail level `level`: the
    tail (rows `start` to `rows`) is cut in levels of half the rest each (the last level takes
    all that is left), each level in `c` slices, its bounds at multiples of ALIGN_ROWS."""
    one = ll.Constant(I64, 1)
    tail = b.sub(rows, start)
    lo = b.add(start, _align_down(b, b.sub(tail, b.ashr(tail, level))))
    last = b.icmp_signed(">=", b.add(level, one), levels)
    nxt = b.add(level, one)
    hi = b.select(last, rows, b.add(start, _align_down(b, b.sub(tail, b.ashr(tail, nxt)))))
    q = b.sdiv(b.add(b.sub(hi, lo), b.sub(c, one)), c)                            # ceil(size / c)
    aligned = b.mul(b.sdiv(b.add(q, ll.Constant(I64, ALIGN_ROWS - 1)), ll.Constant(I64, ALIGN_ROWS)),
                    ll.Constant(I64, ALIGN_ROWS))
    q = b.select(b.icmp_signed(">", q, ll.Constant(I64, 4 * ALIGN_ROWS)), aligned, q)
    first = b.add(lo, b.mul(m, q))
    left = b.sub(hi, first)
    return first, b.select(b.icmp_signed("<", q, left), q, left)


def _declare(module: ll.Module, name: str, ret: ll.Type, args: list[ll.Type]) -> ll.Function:
    existing = module.globals.get(name)
    if isinstance(existing, ll.Function):
        return existing
    return ll.Function(module, ll.FunctionType(ret, args), name)


def _emit_threads(module: ll.Module, name: str, linux: bool) -> ll.Function:
    """``int64 NAME.threads()``: AOTX_NUM_THREADS when set to a positive number, else the
    size of the CPU affinity mask (Linux), else 1; at most MAX_THREADS."""
    fn = ll.Function(module, ll.FunctionType(I64, []), f"{name}.threads")
    fn.linkage = "internal"
    text = bytearray(ENV.encode() + b"\0")
    var = ll.GlobalVariable(module, ll.ArrayType(ll.IntType(8), len(text)), f"{name}.env")
    var.linkage, var.global_constant = "internal", True
    var.initializer = ll.Constant(ll.ArrayType(ll.IntType(8), len(text)), text)
    getenv = _declare(module, "getenv", I8P, [I8P])
    atol = _declare(module, "atol", I64, [I8P])
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    cap = ll.Constant(I64, MAX_THREADS)
    value = b.call(getenv, [b.bitcast(var, I8P)])
    env_set = fn.append_basic_block("env")
    mask = fn.append_basic_block("mask")
    b.cbranch(b.icmp_unsigned("==", value, ll.Constant(I8P, None)), mask, env_set)
    b.position_at_end(env_set)
    n = b.call(atol, [value])
    positive = fn.append_basic_block("positive")
    b.cbranch(b.icmp_signed(">", n, ll.Constant(I64, 0)), positive, mask)
    b.position_at_end(positive)
    b.ret(b.select(b.icmp_signed("<", n, cap), n, cap))
    b.position_at_end(mask)
    if not linux:
        b.ret(ll.Constant(I64, 1))
        return fn
    words = 16                                      # a cpu_set_t: 1024 CPUs
    getaffinity = _declare(module, "sched_getaffinity", I32, [I32, I64, I64.as_pointer()])
    ctpop = module.declare_intrinsic("llvm.ctpop", [I64])
    buf = b.alloca(I64, ll.Constant(I64, words))
    for k in range(words):
        b.store(ll.Constant(I64, 0), b.gep(buf, [ll.Constant(I64, k)]))
    rc = b.call(getaffinity, [ll.Constant(I32, 0), ll.Constant(I64, 8 * words), buf])
    total: ll.Value = ll.Constant(I64, 0)
    for k in range(words):
        total = b.add(total, b.call(ctpop, [b.load(b.gep(buf, [ll.Constant(I64, k)]))]))
    total = b.select(b.icmp_signed("==", rc, ll.Constant(I32, 0)), total, ll.Constant(I64, 1))
    total = b.select(b.icmp_signed("<", total, ll.Constant(I64, 1)), ll.Constant(I64, 1), total)
    b.ret(b.select(b.icmp_signed("<", total, cap), total, cap))
    return fn
