"""A kernel's temporaries in one block, kept between calls (docs/performance.md, "Temporaries").

Every temporary of a call (``Codegen.allocate``, ``Codegen.scratch``) is a slice of one block
whose size, the sum of the temporaries' sizes rounded up to 64 bytes, is computed at entry
from the symbols. Blocks are cached in ``SLOTS`` module globals between calls: a call takes
the first one with an atomic exchange (all NULL: malloc a new one; too small: free it and
malloc) and gives it back to the first empty slot with a compare-and-swap (all full: it
displaces the first slot's block, freed), so that a large temporary is not a fresh ``mmap``
whose every page faults on each call, and calls from several threads at once (the slices of
a ``parallel=True`` call: backend/parallel.py) each keep a block of their own (each call owns
its block while it runs). Every exit of the kernel (success, a failed check, a host callback
that raised) gives the block back; a block larger than the kernel's limit is freed instead
of kept, and a call needing more than the limit leaves the cached block alone::

    entry:    need = round64(n0) + round64(n1) + ...         (from the symbols)
              raw = NAME.workspace_acquire(need)             (NULL: status 1)
    carve:    data = align64(raw + 64); t0 = data; t1 = data + round64(n0); ...
    body:     ...
    exits:    NAME.workspace_return(raw); ret status

Each temporary's pointer comes from ``NAME.workspace_slice(data, offset)``, a ``noinline``
function whose result is ``noalias``: to LLVM every temporary is then an object of its own.
Carved from one pointer, they were one object, and a loop that writes one temporary while it
reads another (softmax: ``exp(x - max)`` into a temporary, reading the row maxima from
another) had an "unknown data dependence" and was left scalar (softmax of 4096 x 100
float64: 1.55 ms scalar, 0.37 ms vectorized). The temporaries never overlap, so the promise holds.

A module with temporaries exports two functions (C ABI, in the built header too):
``void NAME__workspace_limit(int64_t bytes)`` sets how many bytes the kernel keeps between
calls (``DEFAULT_LIMIT`` until then; 0 keeps nothing) and frees the kept blocks;
``void NAME__workspace_release(void)`` frees the kept blocks. The loader calls the first with
``AOTX_WORKSPACE_LIMIT`` when it is set (runtime/workspace.py), and the second before the
code is unloaded.

Blocks are not advised ``MADV_HUGEPAGE``: once a block is kept, huge pages would only save
TLB misses, and none was measurable (np.sort of 1e6 float64: 10.4 ms of CPU per call either
way; per-example MLP gradients 6.0 and 5.9 ms).
"""
from __future__ import annotations

from typing import Any

from llvmlite import ir as ll

from compiler.backend.buffers import I1T, I64T, PTR
from runtime.workspace import limit_symbol, release_symbol

#: the bytes a kernel keeps between calls unless told otherwise (AOTX_WORKSPACE_LIMIT)
DEFAULT_LIMIT = 64 << 20
#: how many blocks a kernel keeps between calls: one a thread that calls it at the same time
#: (the threads of a parallel=True call, or concurrent callers), each at most the limit
SLOTS = 8
#: the block's header (its capacity) and the alignment slack before the 64-byte aligned data
HEADER = 128
#: a larger request (or an overflowing sum) fails as out of memory instead of wrapping around
MAX_BYTES = 1 << 60


class Workspace:
    """The block of one kernel's temporaries: `take` hands out slices while the kernel is
    generated; `acquire` and `give_back` emit the code at entry and at the exits."""

    def __init__(self, cg: Any) -> None:
        self.cg = cg
        entry = cg.alloca_builder
        self.raw_slot = entry.alloca(PTR)            # the call's block; NULL until acquired
        entry.store(ll.Constant(PTR, None), self.raw_slot)
        self.size: ll.Value = ll.Constant(I64T, 0)   # running sum, in the entry block
        self.over: ll.Value = ll.Constant(I1T, 0)
        self.block = cg.fn.append_basic_block("workspace")
        self.carve = ll.IRBuilder(self.block)
        raw = self.carve.load(self.raw_slot)
        start = self.carve.ptrtoint(raw, I64T)
        addr = self.carve.and_(self.carve.add(start, ll.Constant(I64T, HEADER - 1)), ll.Constant(I64T, -64))
        # an offset from the block, not inttoptr: LLVM then knows every temporary is in it
        # and can bound each one's accesses (inttoptr hid that, and loops writing one
        # temporary while reading another were left scalar)
        self.data = self.carve.gep(raw, [self.carve.sub(addr, start)], inbounds=True)
        self._acquire, self._return = _helpers(cg.module, cg.name)
        self._slice = _slice_function(cg.module, cg.name)

    def take(self, nbytes: ll.Value) -> ll.Value:
        """An i8* to `nbytes` (computed in the entry block) bytes of the call's block, aligned
        to 64 bytes, valid from the body on."""
        entry = self.cg.alloca_builder
        offset = self.size
        rounded = entry.and_(entry.add(nbytes, ll.Constant(I64T, 63)), ll.Constant(I64T, -64))
        add = _declare(self.cg.module, "llvm.uadd.with.overflow.i64",
                       ll.FunctionType(ll.LiteralStructType([I64T, I1T]), [I64T, I64T]))
        pair = entry.call(add, [self.size, rounded])
        self.size = entry.extract_value(pair, 0)
        negative = entry.icmp_signed("<", nbytes, ll.Constant(I64T, 0))   # an overflowed count
        self.over = entry.or_(self.over, entry.or_(entry.extract_value(pair, 1), negative))
        return self.carve.call(self._slice, [self.data, offset])

    def acquire(self, entry: ll.IRBuilder, body: ll.Block, out_of_memory: ll.Block) -> None:
        """At the end of the entry block: take a block of the summed size, then run the carve
        block and go on to `body` (`out_of_memory` if the block could not be had)."""
        need = entry.select(self.over, ll.Constant(I64T, -1), self.size)
        raw = entry.call(self._acquire, [need])
        entry.store(raw, self.raw_slot)
        entry.cbranch(entry.icmp_unsigned("==", raw, ll.Constant(PTR, None)), out_of_memory, self.block)
        self.carve.branch(body)

    def give_back(self, builder: ll.IRBuilder) -> None:
        """At an exit: return the call's block (nothing if it was never acquired)."""
        builder.call(self._return, [builder.load(self.raw_slot)])


def has_workspace(llvm_ir: str, kernel_symbol: str) -> bool:
    """Does the module of kernel `kernel_symbol` keep a workspace (export its functions)?"""
    return f'define void @"{release_symbol(kernel_symbol)}"' in llvm_ir \
        or f"define void @{release_symbol(kernel_symbol)}(" in llvm_ir


def _helpers(module: ll.Module, name: str) -> tuple[ll.Function, ll.Function]:
    """The module's cached-block global, its limit, the exported release/limit functions and
    the internal acquire/return functions (built once per module)."""
    acquire_name = f"{name}.workspace_acquire"
    existing = module.globals.get(acquire_name)
    if existing is not None:
        return existing, module.globals[f"{name}.workspace_return"]
    i64p = ll.PointerType(I64T)
    kept_t = ll.ArrayType(PTR, SLOTS)
    kept = ll.GlobalVariable(module, kept_t, name=f"{name}.workspace")
    kept.initializer, kept.linkage, kept.align = ll.Constant(kept_t, None), "internal", 64
    limit = ll.GlobalVariable(module, I64T, name=f"{name}.workspace_limit")
    limit.initializer, limit.linkage, limit.align = ll.Constant(I64T, DEFAULT_LIMIT), "internal", 8
    malloc = _declare(module, "malloc", ll.FunctionType(PTR, [I64T]))
    free = _declare(module, "free", ll.FunctionType(ll.VoidType(), [PTR]))
    null = ll.Constant(PTR, None)

    def slot(b: ll.IRBuilder, k: int) -> ll.Value:
        return b.gep(kept, [ll.Constant(ll.IntType(32), 0), ll.Constant(ll.IntType(32), k)])

    def capacity(b: ll.IRBuilder, raw: ll.Value) -> ll.Value:
        return b.load(b.bitcast(raw, i64p), align=8)

    def free_all(b: ll.IRBuilder) -> None:
        for k in range(SLOTS):
            b.call(free, [b.atomic_rmw("xchg", slot(b, k), null, "acq_rel")])

    # void NAME__workspace_release(void): free the kept blocks
    release = ll.Function(module, ll.FunctionType(ll.VoidType(), []), release_symbol(name))
    b = ll.IRBuilder(release.append_basic_block("entry"))
    free_all(b)
    b.ret_void()

    # void NAME__workspace_limit(int64_t bytes): keep at most `bytes`; frees the kept blocks
    set_limit = ll.Function(module, ll.FunctionType(ll.VoidType(), [I64T]), limit_symbol(name))
    b = ll.IRBuilder(set_limit.append_basic_block("entry"))
    bytes_ = set_limit.args[0]
    b.store_atomic(b.select(b.icmp_signed("<", bytes_, ll.Constant(I64T, 0)), ll.Constant(I64T, 0), bytes_),
                   limit, "monotonic", 8)
    free_all(b)
    b.ret_void()

    # i8* NAME.workspace_acquire(i64 need): a kept block if one is large enough, else a new one
    acquire = ll.Function(module, ll.FunctionType(PTR, [I64T]), acquire_name)
    acquire.linkage = "internal"
    need = acquire.args[0]
    blocks = {k: acquire.append_basic_block(k) for k in
              ("entry", "limited", "discard", "fresh", "init", "fail")}
    b = ll.IRBuilder(blocks["entry"])
    b.cbranch(b.icmp_unsigned(">", need, ll.Constant(I64T, MAX_BYTES)), blocks["fail"], blocks["limited"])
    b.position_at_end(blocks["limited"])
    small = b.icmp_unsigned("<=", need, b.load_atomic(limit, "monotonic", 8))
    first = acquire.append_basic_block("slot0")
    b.cbranch(small, first, blocks["fresh"])        # too large to keep: leave them alone
    got_phi = []
    for k in range(SLOTS):                          # the first kept block found (one a thread)
        b.position_at_end(first)
        got = b.atomic_rmw("xchg", slot(b, k), null, "acq_rel")
        check = acquire.append_basic_block(f"check{k}")
        first = acquire.append_basic_block(f"slot{k + 1}") if k + 1 < SLOTS else blocks["fresh"]
        b.cbranch(b.icmp_unsigned("==", got, null), first, check)
        b.position_at_end(check)
        reuse = acquire.append_basic_block(f"reuse{k}")
        b.cbranch(b.icmp_unsigned(">=", capacity(b, got), need), reuse, blocks["discard"])
        got_phi.append((got, check))
        b.position_at_end(reuse)
        b.ret(got)
    b.position_at_end(blocks["discard"])             # too small: a new one
    small_block = b.phi(PTR)
    for v, blk in got_phi:
        small_block.add_incoming(v, blk)
    b.call(free, [small_block])
    b.branch(blocks["fresh"])
    b.position_at_end(blocks["fresh"])
    raw = b.call(malloc, [b.add(need, ll.Constant(I64T, HEADER))])
    b.cbranch(b.icmp_unsigned("==", raw, null), blocks["fail"], blocks["init"])
    b.position_at_end(blocks["init"])
    b.store(need, b.bitcast(raw, i64p), align=8)
    b.ret(raw)
    b.position_at_end(blocks["fail"])
    b.ret(null)

    # void NAME.workspace_return(i8* raw): keep it in an empty slot (else in the first one,
    # freeing the block it displaces) or free it when it is larger than the limit
    give = ll.Function(module, ll.FunctionType(ll.VoidType(), [PTR]), f"{name}.workspace_return")
    give.linkage = "internal"
    raw = give.args[0]
    entry, have, keep, drop, done = (give.append_basic_block(k) for k in ("entry", "have", "keep", "drop", "done"))
    b = ll.IRBuilder(entry)
    b.cbranch(b.icmp_unsigned("==", raw, null), done, have)
    b.position_at_end(have)
    fits = b.icmp_unsigned("<=", capacity(b, raw), b.load_atomic(limit, "monotonic", 8))
    b.cbranch(fits, keep, drop)
    b.position_at_end(keep)
    for k in range(SLOTS):
        stored = b.extract_value(b.cmpxchg(slot(b, k), null, raw, "acq_rel", "monotonic"), 1)
        nxt = give.append_basic_block(f"keep{k + 1}")
        b.cbranch(stored, done, nxt)
        b.position_at_end(nxt)
    b.call(free, [b.atomic_rmw("xchg", slot(b, 0), raw, "acq_rel")])      # every slot full
    b.branch(done)
    b.position_at_end(drop)
    b.call(free, [raw])
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return acquire, give


def _slice_function(module: ll.Module, name: str) -> ll.Function:
    """``noalias i8* NAME.workspace_slice(i8* data, i64 offset)``: data + offset, never inlined
    (inlined, the ``noalias`` result would be lost: module docstring)."""
    existing = module.globals.get(f"{name}.workspace_slice")
    if existing is not None:
        return existing
    fn = ll.Function(module, ll.FunctionType(PTR, [PTR, I64T]), f"{name}.workspace_slice")
    # linkonce_odr, not internal: LLVM may then not assume this body is the one that runs,
    # so it does not fold a call whose offset is the same everywhere (a kernel with a single
    # temporary, at offset 0) into its argument, which dropped the noalias result and left
    # a / a.sum(axis=1, keepdims=True) scalar. Every definition is the same two
    # instructions, so whichever a built library's loader picks is right.
    fn.linkage = "linkonce_odr"
    fn.attributes.add("noinline")
    fn.attributes.add("nounwind")
    fn.return_value.add_attribute("noalias")
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    b.ret(b.gep(fn.args[0], [fn.args[1]], inbounds=True))
    return fn


def _declare(module: ll.Module, name: str, fnty: ll.FunctionType) -> ll.Function:
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    return ll.Function(module, fnty, name)
