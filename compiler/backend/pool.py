"""The persistent thread pool of ``jit(parallel=True)`` kernels (backend/parallel.py).

One pool per process for kernels loaded in memory (a small module compiled once, the first
time a kernel that uses it is loaded: :func:`ensure_loaded`), one per shared library for
``aotx build`` (the same module as one more object of the link, its symbols hidden: a
library stays self-contained, with only libc and pthreads). Its one function is::

    void aotx_pool_run(void (*task)(void *ctx, int64_t i), void *ctx, int64_t tasks,
                       int64_t threads)

which runs ``task(ctx, i)`` for every ``i < tasks`` on at most ``threads`` threads, the
caller's included, and returns when all have run.

* Workers are created on demand (at most ``MAX_WORKERS``, never more than a call asks for),
  detached, and parked between calls: a worker spins for a short while (``SPIN`` rounds of
  ``pause``) on the generation counter, then sleeps on a condition variable; a call
  publishes its job under the mutex, bumps the generation and broadcasts.
* Tasks are claimed with a compare-and-swap on one word holding the job's generation (low
  32 bits) above the next task's index: the caller claims tasks too, and a worker that
  wakes after its job is over finds another generation and claims nothing. The caller
  waits (spinning, then on a second condition variable) only for tasks that a worker has
  claimed and not finished, never for a worker to wake up: when the machine's cores are
  busy, a call runs its slices itself rather than wait for a thread to be scheduled.
* One job at a time: a caller that finds the pool busy (another thread's call, or a kernel
  called from inside a task) runs its tasks itself, serially. It never waits for the pool,
  so concurrent and nested calls cannot deadlock.
* Fork: the pool records the pid that created its workers; in a child (another pid) it
  forgets them and initializes its mutex and condition variables again before creating
  new workers. A child forked while another thread of the parent was inside
  ``aotx_pool_run`` finds the pool busy for good and runs serially.
* The code of the pool is never unloaded while workers may run it: the in-memory module
  lives as long as the process, and ``runtime.load`` never closes a library.
"""
from __future__ import annotations

import functools
import threading
from typing import Any

import llvmlite.binding as llvm
from llvmlite import ir as ll

from compiler.backend.target import Target

#: the pool's entry point (a hidden symbol in built libraries)
SYMBOL = "aotx_pool_run"
#: the most workers (threads besides the caller's) the pool creates
MAX_WORKERS = 63
#: rounds of ``pause`` a worker spins on the generation counter before it sleeps, and a
#: caller on the finish count before it waits: about 10 us (AMD Zen), longer than the gap
#: between back-to-back calls from Python. Measured on 2 cores at a load average of 12, W1 split
#: in two at 4e4 and 1e5 elements: the CPU time of a call (all threads) was 1.11-1.24 and
#: 1.04-1.15 times the serial kernel's with 500 rounds, 1.40 and 1.23 with 4000
SPIN = 500
#: bytes reserved for each pthread_mutex_t / pthread_cond_t (40 and 48 on Linux x86-64, 64
#: and 48 on macOS)
SYNC_BYTES = 128

I8, I32, I64 = ll.IntType(8), ll.IntType(32), ll.IntType(64)
I8P = I8.as_pointer()
TASK = ll.FunctionType(ll.VoidType(), [I8P, I64])


def _declare(module: ll.Module, name: str, ret: ll.Type, args: list[ll.Type]) -> ll.Function:
    existing = module.globals.get(name)
    if isinstance(existing, ll.Function):
        return existing
    return ll.Function(module, ll.FunctionType(ret, args), name)


def declare_run(module: ll.Module) -> ll.Function:
    """``aotx_pool_run`` declared in a kernel's module."""
    return _declare(module, SYMBOL, ll.VoidType(), [TASK.as_pointer(), I8P, I64, I64])


def module_ir(triple: str, *, hidden: bool) -> str:
    """The pool as LLVM IR text for `triple` (`hidden`: for a shared library)."""
    m = ll.Module("aotx_pool")
    m.triple = triple

    def glob(name: str, ty: ll.Type, align: int = 8) -> ll.GlobalVariable:
        g = ll.GlobalVariable(m, ty, f"aotx_pool.{name}")
        g.linkage, g.align = "internal", align
        g.initializer = ll.Constant(ty, None)
        return g

    sync = glob("sync", ll.ArrayType(I8, 3 * SYNC_BYTES), 64)   # mutex, wake, done
    ready = glob("ready", I32)            # the sync objects are initialized for `pid`
    pid = glob("pid", I32)
    busy = glob("busy", I32, 64)
    workers = glob("workers", I64)
    seen = glob("seen", ll.ArrayType(I64, MAX_WORKERS))        # per worker: the last generation
    gen = glob("gen", I64, 64)
    task_fn = glob("task", TASK.as_pointer())
    ctx = glob("ctx", I8P)
    ntasks = glob("tasks", I64)
    part = glob("participants", I64)
    nxt = glob("next", I64, 64)
    fin = glob("finished", I64, 64)        # tasks of the job run

    lock = _declare(m, "pthread_mutex_lock", I32, [I8P])
    unlock = _declare(m, "pthread_mutex_unlock", I32, [I8P])
    mutex_init = _declare(m, "pthread_mutex_init", I32, [I8P, I8P])
    cond_init = _declare(m, "pthread_cond_init", I32, [I8P, I8P])
    cond_wait = _declare(m, "pthread_cond_wait", I32, [I8P, I8P])
    broadcast = _declare(m, "pthread_cond_broadcast", I32, [I8P])
    worker_ty = ll.FunctionType(I8P, [I8P])
    create = _declare(m, "pthread_create", I32, [I64.as_pointer(), I8P, worker_ty.as_pointer(), I8P])
    detach = _declare(m, "pthread_detach", I32, [I64])
    getpid = _declare(m, "getpid", I32, [])
    x86 = triple.startswith(("x86_64", "i686", "i386"))
    pause = _declare(m, "llvm.x86.sse2.pause", ll.VoidType(), []) if x86 else None
    null = ll.Constant(I8P, None)

    def at(b: ll.IRBuilder, k: int) -> ll.Value:
        return b.gep(sync, [ll.Constant(I32, 0), ll.Constant(I32, k * SYNC_BYTES)])

    def c64(v: int) -> ll.Constant:
        return ll.Constant(I64, v)

    def spin_until(fn: ll.Function, b: ll.IRBuilder, k: ll.Value, done: Any, tag: str) -> None:
        """Spin at most SPIN rounds while `done(b)` is false (then fall through); `k`: an
        i64 slot of the entry block, the round count."""
        b.store(c64(0), k)
        head, body, out = (fn.append_basic_block(f"{tag}.{s}") for s in ("head", "body", "out"))
        b.branch(head)
        b.position_at_end(head)
        more = b.and_(b.icmp_signed("<", b.load(k), c64(SPIN)), b.not_(done(b)))
        b.cbranch(more, body, out)
        b.position_at_end(body)
        if pause is not None:
            b.call(pause, [])
        b.store(b.add(b.load(k), c64(1)), k)
        b.branch(head)
        b.position_at_end(out)

    def wait_locked(fn: ll.Function, b: ll.IRBuilder, ready: Any, cv: int, tag: str) -> None:
        """Take the pool's mutex and wait on condition variable `cv` until `ready(b)`; the
        builder ends with the mutex held."""
        b.call(lock, [at(b, 0)])
        check, sleep, done = (fn.append_basic_block(f"{tag}.{s}") for s in ("check", "sleep", "done"))
        b.branch(check)
        b.position_at_end(check)
        b.cbranch(ready(b), done, sleep)
        b.position_at_end(sleep)
        b.call(cond_wait, [at(b, cv), at(b, 0)])
        b.branch(check)
        b.position_at_end(done)

    def run_tasks(fn: ll.Function, b: ll.IRBuilder, g: ll.Value, f: ll.Value, c: ll.Value, n: ll.Value,
                  tag: str, signal: bool) -> None:
        """Claim and run tasks of the job of generation `g` until none is left: `next` holds
        the generation's low 32 bits above the next task's index, so that a worker that
        wakes after its job is over claims nothing (and never touches a later job's tasks)."""
        head, claim, body, out = (fn.append_basic_block(f"{tag}.{s}") for s in ("head", "claim", "body", "out"))
        b.branch(head)
        b.position_at_end(head)
        w = b.load_atomic(nxt, "seq_cst", 8)
        idx = b.and_(w, c64(0xFFFFFFFF))
        ok = b.and_(b.icmp_unsigned("==", b.lshr(w, c64(32)), b.and_(g, c64(0xFFFFFFFF))),
                    b.icmp_signed("<", idx, n))
        b.cbranch(ok, claim, out)
        b.position_at_end(claim)
        won = b.extract_value(b.cmpxchg(nxt, w, b.add(w, c64(1)), "seq_cst", "seq_cst"), 1)
        b.cbranch(won, body, head)
        b.position_at_end(body)
        b.call(f, [c, idx])
        last = b.icmp_signed("==", b.add(b.atomic_rmw("add", fin, c64(1), "seq_cst"), c64(1)), n)
        if signal:                                  # the last task: wake the caller
            wake = fn.append_basic_block(f"{tag}.wake")
            b.cbranch(last, wake, head)
            b.position_at_end(wake)
            b.call(lock, [at(b, 0)])
            b.call(broadcast, [at(b, 2)])
            b.call(unlock, [at(b, 0)])
        b.branch(head)
        b.position_at_end(out)

    # ---- the worker: void *aotx_pool.worker(void *id) ----
    worker = ll.Function(m, worker_ty, "aotx_pool.worker")
    worker.linkage = "internal"
    b = ll.IRBuilder(worker.append_basic_block("entry"))
    wid = b.ptrtoint(worker.args[0], I64)
    rounds = b.alloca(I64)
    slot = b.gep(seen, [ll.Constant(I32, 0), wid])
    wait = worker.append_basic_block("wait")
    b.branch(wait)
    b.position_at_end(wait)
    mine = b.load(slot)
    def moved(b: ll.IRBuilder) -> ll.Value:         # a new job was published
        return b.icmp_unsigned("!=", b.load_atomic(gen, "acquire", 8), mine)
    spin_until(worker, b, rounds, moved, "spin")
    wait_locked(worker, b, moved, 1, "sleep")
    g = b.load_atomic(gen, "acquire", 8)
    p, f, c, n = b.load(part), b.load(task_fn), b.load(ctx), b.load(ntasks)
    b.call(unlock, [at(b, 0)])
    b.store(g, slot)
    join = worker.append_basic_block("join")
    b.cbranch(b.icmp_signed("<", wid, p), join, wait)
    b.position_at_end(join)
    run_tasks(worker, b, g, f, c, n, "tasks", signal=True)
    b.branch(wait)

    # ---- void aotx_pool_run(task, ctx, tasks, threads) ----
    run = declare_run(m)
    f, c, n, t = run.args
    b = ll.IRBuilder(run.append_basic_block("entry"))
    serial, take, setup = (run.append_basic_block(s) for s in ("serial", "take", "setup"))
    tid = b.alloca(I64)
    k = b.alloca(I64)
    b.cbranch(b.or_(b.icmp_signed("<=", n, c64(1)), b.icmp_signed("<=", t, c64(1))), serial, take)

    b.position_at_end(serial)                           # every task here, in order
    b.store(c64(0), k)
    s_head, s_body, s_out = (run.append_basic_block(f"serial.{s}") for s in ("head", "body", "out"))
    b.branch(s_head)
    b.position_at_end(s_head)
    b.cbranch(b.icmp_signed("<", b.load(k), n), s_body, s_out)
    b.position_at_end(s_body)
    b.call(f, [c, b.load(k)])
    b.store(b.add(b.load(k), c64(1)), k)
    b.branch(s_head)
    b.position_at_end(s_out)
    b.ret_void()

    b.position_at_end(take)
    got = b.extract_value(b.cmpxchg(busy, ll.Constant(I32, 0), ll.Constant(I32, 1), "acquire", "monotonic"), 1)
    b.cbranch(got, setup, serial)

    b.position_at_end(setup)
    me = b.call(getpid, [])
    fresh = b.or_(b.icmp_signed("==", b.load(ready), ll.Constant(I32, 0)), b.icmp_signed("!=", b.load(pid), me))
    init, grow = run.append_basic_block("init"), run.append_basic_block("grow")
    b.cbranch(fresh, init, grow)
    b.position_at_end(init)                             # first use, or a forked child
    b.call(mutex_init, [at(b, 0), null])
    b.call(cond_init, [at(b, 1), null])
    b.call(cond_init, [at(b, 2), null])
    b.store(c64(0), workers)
    b.store(me, pid)
    b.store(ll.Constant(I32, 1), ready)
    b.branch(grow)

    b.position_at_end(grow)
    want = b.sub(b.select(b.icmp_signed("<", t, n), t, n), c64(1))
    want = b.select(b.icmp_signed("<", want, c64(MAX_WORKERS)), want, c64(MAX_WORKERS))
    g_head, g_body, g_ok, g_out = (run.append_basic_block(f"grow.{s}") for s in ("head", "body", "ok", "out"))
    b.branch(g_head)
    b.position_at_end(g_head)
    have = b.load(workers)
    b.cbranch(b.icmp_signed("<", have, want), g_body, g_out)
    b.position_at_end(g_body)
    b.store(b.load_atomic(gen, "monotonic", 8), b.gep(seen, [ll.Constant(I32, 0), have]))
    rc = b.call(create, [tid, null, worker, b.inttoptr(have, I8P)])
    b.cbranch(b.icmp_signed("==", rc, ll.Constant(I32, 0)), g_ok, g_out)
    b.position_at_end(g_ok)
    b.call(detach, [b.load(tid)])
    b.store(b.add(have, c64(1)), workers)
    b.branch(g_head)

    b.position_at_end(g_out)
    have = b.load(workers)
    p = b.select(b.icmp_signed("<", want, have), want, have)
    publish, release_serial = run.append_basic_block("publish"), run.append_basic_block("none")
    b.cbranch(b.icmp_signed("<=", p, c64(0)), release_serial, publish)
    b.position_at_end(release_serial)                   # no thread could be created
    b.store_atomic(ll.Constant(I32, 0), busy, "release", 4)
    b.branch(serial)

    b.position_at_end(publish)
    b.call(lock, [at(b, 0)])
    b.store(f, task_fn)
    b.store(c, ctx)
    b.store(n, ntasks)
    b.store(p, part)
    g = b.add(b.load_atomic(gen, "monotonic", 8), c64(1))
    b.store_atomic(c64(0), fin, "seq_cst", 8)
    b.store_atomic(b.shl(g, c64(32)), nxt, "seq_cst", 8)
    b.store_atomic(g, gen, "release", 8)
    b.call(broadcast, [at(b, 1)])
    b.call(unlock, [at(b, 0)])
    run_tasks(run, b, g, f, c, n, "own", signal=False)
    def finished(b: ll.IRBuilder) -> ll.Value:      # every task of the job has run
        return b.icmp_signed(">=", b.load_atomic(fin, "acquire", 8), n)
    spin_until(run, b, k, finished, "await")
    w_done, checked = (run.append_basic_block(f"await.{s}") for s in ("done", "lock"))
    b.cbranch(finished(b), w_done, checked)
    b.position_at_end(checked)
    wait_locked(run, b, finished, 2, "await")
    b.call(unlock, [at(b, 0)])
    b.branch(w_done)
    b.position_at_end(w_done)
    b.store_atomic(ll.Constant(I32, 0), busy, "release", 4)
    b.ret_void()
    text = str(m)
    return text.replace(f'define void @"{SYMBOL}"', f'define hidden void @"{SYMBOL}"') if hidden else text


_ENGINE: list[Any] = []      # the in-memory pool's engine: kept for the life of the process
_LOADING = threading.Lock()


def ensure_loaded() -> int:
    """Compile the in-memory pool once per process and make ``aotx_pool_run`` resolvable by
    the kernels loaded after it; its address."""
    with _LOADING:
        return _load()


@functools.cache
def _load() -> int:
    triple = llvm.get_process_triple()
    module = llvm.parse_assembly(module_ir(triple, hidden=False))
    module.verify()
    target = llvm.Target.from_triple(triple).create_target_machine(opt=2, codemodel="jitdefault")
    engine = llvm.create_mcjit_compiler(module, target)
    engine.finalize_object()
    _ENGINE.append(engine)
    address: int = engine.get_function_address(SYMBOL)
    llvm.add_symbol(SYMBOL, address)
    return address


def object_code(target: Target) -> bytes:
    """The pool as object code for `target`, its symbol hidden: one more object of a built
    library whose kernels call it (backend/aot.py)."""
    from compiler.backend import passes       # DEFERRED_IMPORTS: only `aotx build` needs it
    module = passes.parse(module_ir(target.triple, hidden=True), target)
    return passes.emit_object(passes.optimize(module, target), target)


def uses_pool(obj: bytes) -> bool:
    """Does this object code call the pool?"""
    return SYMBOL.encode() in obj
