"""Lowering of scheduled IR to LLVM IR with llvmlite.

Each materialized value becomes a loop nest over its shape whose body reads
the value at the loop indices; :meth:`Codegen.read` computes a non-materialized
value on the spot by calling its primitive's ``lower`` (so a whole fusion
group becomes one loop body), and loads a materialized one from its buffer.
Buffers are contiguous and row-major; inner loops are unit-stride and the
function's pointers are ``noalias``, so LLVM's loop vectorizer can widen them.
"""
from __future__ import annotations

import contextlib
import heapq
from typing import Any, Collection, Iterator, Mapping, Sequence

import numpy as np
from llvmlite import ir as ll

from compiler.backend import casts, control, library, mathlib, online, pairwise
from compiler.backend.workspace import Workspace
from compiler.backend.buffers import I1T, I8T, I64T, PTR, Buffer, memory_type, scalar_type
from compiler.backend.fusion import Evaluation, Schedule, schedule
from compiler.ir import dims
from compiler.ir.core import Block, Op, Value
from compiler.ir.types import BOOL, F16, is_complex, is_float, is_unsigned, real_dtype
from compiler.ir.primitive import CONTROL, ELEMENTWISE, INDEX, OPAQUE
from compiler.primitives import ops

#: a loop of SHORT_LOOP to FULL_UNROLL_TRIPS static trips around a loop of LONG_LOOP trips or more
#: (or of a run-time count) is not unrolled. O2 unrolled such loops whole once the loops inside
#: were vectorized and unrolled, copying the inner code once a trip for no gain at run time: the
#: first compile of the W3 benchmark's per-example MLP gradients (batch 16: loops of 16 trips
#: around rows of 64) took 100 ms, 75 without. Left to LLVM, which gains run time on them:
#: loops around shorter loops (the 16 x 16 Jacobian of W4: 5% slower not unrolled; k-means'
#: distances to 8 centroids in 2-D over 100000 points: 2.4 ms, 3.5 not unrolled), loops of fewer
#: trips (a contraction of 8 around rows of 700: 2% slower) and of more (W3 at batch 1024,
#: whose loop of 128 trips around rows of 64 LLVM unrolls in part: 1-2% slower).
FULL_UNROLL_TRIPS = 64
SHORT_LOOP = 16
LONG_LOOP = 64


def _trips_below(extent: ll.Value, bound: int) -> bool:
    """A loop extent known at compile time and below `bound`."""
    return isinstance(extent, ll.Constant) and isinstance(extent.constant, int) and extent.constant < bound


#: a reduction over a contiguous last axis at most this long vectorizes within each row
SHORT_ROW = 64

class Codegen:
    """The lowering context handed to every primitive's ``lower``."""

    def __init__(self, module: ll.Module, fn: ll.Function, symbols: dict[str, ll.Value],
                 *, fastmath: bool, has_fma: bool, vector_bits: int = 256, name: str = "kernel") -> None:
        self.module = module
        self.name = name                 # the kernel's exported symbol (names its library slots)
        self.library_slots: dict[str, ll.GlobalVariable] = {}   # routine -> pointer (library.py)
        self.fn = fn
        self.symbols = symbols
        self.fastmath = fastmath
        self.has_fma = has_fma
        self.vector_bits = vector_bits   # the widest vector register: sizes pairwise chunks
        self.entry = fn.append_basic_block("entry")
        self.alloca_builder = ll.IRBuilder(self.entry)
        self.body = fn.append_basic_block("body")
        self.b = ll.IRBuilder(self.body)
        self.buffers: dict[Value, Buffer] = {}
        self.sched: Schedule | None = None
        self.top_sched: Schedule | None = None     # the function body's (lower_block)
        self.top_gathers = False                   # does it read with run-time indices
        self._cache: list[dict[Any, Any]] = [{}]
        self._constants: dict[int, ll.GlobalVariable] = {}
        self.workspace: Workspace | None = None     # the call's temporaries (workspace.py)
        self.error_exits: dict[int, ll.Block] = {}   # status -> exit block (see error_exit)
        self.checks: dict[Op, int] = {}              # check op -> its status (kernel.error_sites)
        self.too_big: ll.Value | None = None           # i1: an array's byte count overflows
        self.math_calls = 0          # vector-math calls emitted so far (see loop())
        self.late_math_calls = 0     # those of them inlined after vectorization (see loop())
        self._loop_ids = 0
        self.scalar_loops = False    # loops left scalar and not unrolled (see scalar_code)
        self.rolled_depth: int | None = None   # loop depth of rolled_code's region, else None
        self._loop_depth = 0         # loops open around the builder's position
        self._nest_heights: list[int] = [0]   # per open loop: the height of its tallest inner nest
        self._nest_long: list[bool] = [False]  # per open loop: a long loop below it (loop())
        # products computed with an earlier product in one pass over their shared matrix
        # (primitives/glm.py): op -> where its result waits
        self.fused_products: dict[Op, Any] = {}
        self.written_ahead: set[Value] = set()   # materialized values such a lowering wrote

    # ---- scalars -------------------------------------------------------------------
    def index(self, value: int) -> ll.Constant:
        return ll.Constant(I64T, value)

    def dim(self, d: dims.Dim) -> ll.Value:
        if isinstance(d, int):
            return self.index(d)
        total: ll.Value = self.index(0)
        for mono, coef in d.terms:
            term: ll.Value = self.index(coef)
            for name in mono:
                term = self.b.mul(term, self._atom(name))
            total = self.b.add(total, term)
        return total

    def _atom(self, name: str) -> ll.Value:
        atom = dims.atom_of(name)
        if atom is None:
            return self.symbols[name]
        a, b = (self.dim(x) for x in atom.args)
        if atom.kind == "floordiv":     # Python's floor division (b > 0): sdiv rounds toward 0
            q, r = self.b.sdiv(a, b), self.b.srem(a, b)
            return self.b.sub(q, self.b.zext(self.b.icmp_signed("<", r, self.index(0)), I64T))
        pred = "<" if atom.kind == "min" else ">"
        return self.b.select(self.b.icmp_signed(pred, a, b), a, b)

    def const(self, dtype: np.dtype, value: Any) -> ll.Constant:
        t = scalar_type(dtype)
        if is_complex(dtype):
            part = real_dtype(dtype)
            return ll.Constant(t, [self.const(part, complex(value).real), self.const(part, complex(value).imag)])
        if dtype == BOOL:
            return ll.Constant(t, int(bool(value)))
        if dtype == F16:
            return ll.Constant(t, float(np.float16(value)))
        if is_float(dtype):
            return ll.Constant(t, float(value))
        bits = t.width
        v = int(value) % (1 << bits)                        # the bits; uint64 max is -1
        return ll.Constant(t, v - (1 << bits) if v >= 1 << (bits - 1) else v)

    def opaque_infinity(self, value: ll.Value) -> ll.Value:
        """An infinite float constant loaded from a global LLVM may not assume unchanged
        (``linkonce_odr``, never written), any other value as it is: the load is hoisted out
        of loops, but InstCombine cannot see through it. ``max(acc, where(m, x, -inf))`` with
        the -inf known folds into ``m ? max(acc, x) : acc``, a conditional reduction LLVM
        leaves scalar (np.nanmax of 2000 rows of 1000: 10.5 ms, against 0.3 vectorized)."""
        if not (isinstance(value, ll.Constant) and isinstance(value.type, (ll.DoubleType, ll.FloatType))
                and isinstance(value.constant, float) and np.isinf(value.constant)):
            return value
        name = f"aotx.opaque.{value.type}.{'pos' if value.constant > 0 else 'neg'}inf"
        gv = self.module.globals.get(name)
        if gv is None:
            gv = ll.GlobalVariable(self.module, value.type, name=name)
            gv.linkage = "linkonce_odr"
            gv.initializer = value
        return self.b.load(gv)

    def icmp(self, dtype: np.dtype, pred: str, a: ll.Value, b: ll.Value) -> ll.Value:
        """An integer (or bool) comparison, unsigned for bool and the unsigned dtypes."""
        unsigned = dtype == BOOL or is_unsigned(dtype)
        return (self.b.icmp_unsigned if unsigned else self.b.icmp_signed)(pred, a, b)

    def round_half(self, value: ll.Value) -> ll.Value:
        """A float16 result computed in float32, rounded to float16 (as NumPy's float16 loops)."""
        return casts.round_half(self, value)

    def add(self, dtype: np.dtype, a: ll.Value, b: ll.Value) -> ll.Value:
        if is_complex(dtype):     # the loop nest of a complex product (primitives/gemm.py)
            part = real_dtype(dtype)
            return self.complex_value(dtype, *(self.add(part, self.b.extract_value(a, i),
                                                        self.b.extract_value(b, i)) for i in (0, 1)))
        if dtype == BOOL:
            return self.b.or_(a, b)       # NumPy's boolean sum of products is "any"
        return self.b.fadd(a, b) if is_float(dtype) else self.b.add(a, b)

    def mul(self, dtype: np.dtype, a: ll.Value, b: ll.Value) -> ll.Value:
        if is_complex(dtype):
            part = real_dtype(dtype)
            ar, ai, br, bi = (self.b.extract_value(v, i) for v in (a, b) for i in (0, 1))
            re = self.b.fsub(self.mul(part, ar, br), self.mul(part, ai, bi), flags=("contract",))
            im = self.b.fadd(self.mul(part, ar, bi), self.mul(part, ai, br), flags=("contract",))
            return self.complex_value(dtype, re, im)
        if is_float(dtype):
            return self.b.fmul(a, b, flags=("contract",))
        return self.b.and_(a, b) if dtype == BOOL else self.b.mul(a, b)

    def reassoc(self, value: ll.Value) -> ll.Value:
        """Allow reassociation so a reduction loop vectorizes (sums differ by rounding)."""
        if getattr(value, "opname", "") in ("fadd", "fmul") and "reassoc" not in value.flags:
            value.flags.append("reassoc")
        return value

    def intrinsic(self, name: str, args: Sequence[ll.Value]) -> ll.Value:
        t = args[0].type
        fn = self.module.declare_intrinsic(name, [t], ll.FunctionType(t, [t] * len(args)))
        return self.b.call(fn, list(args))

    def constant_power(self, x: ll.Value, y: ll.Value) -> ll.Value | None:
        """x ** y without pow when y is one of the constants mathlib.constant_power handles."""
        return mathlib.constant_power(self, x, y)

    def vecmath(self, name: str, args: Sequence[ll.Value]) -> ll.Value:
        self.math_calls += 1
        result = mathlib.call(self, name, list(args))
        if mathlib.is_late(result):
            self.late_math_calls += 1
        return result

    def cast(self, v: ll.Value, src: np.dtype, dst: np.dtype) -> ll.Value:
        return casts.cast(self, v, src, dst)

    def int_pow(self, x: ll.Value, y: ll.Value, signed: bool = True) -> ll.Value:
        return casts.int_pow(self, x, y, signed)

    def alloca_scalar(self, dtype: np.dtype, init: ll.Value | None = None) -> ll.Value:
        slot = self.alloca_builder.alloca(scalar_type(dtype))
        if init is not None:
            self.b.store(init, slot)
        return slot

    # ---- library calls (BLAS/LAPACK through a pointer the loader fills: library.py) -------
    def library_call(self, routine: str, emit: Any, fallback: Any, *,
                     when: ll.Value | None = None, strings: int = 0) -> None:
        """Where the kernel's pointer to `routine` (``"dgemm"``, ``"dgetrf"``) is set and
        `when` (an i1) holds, run ``emit(invoke)``, which emits the library branch and
        ``invoke(args)`` for each call (Fortran ABI: scalars are passed by reference for you,
        int64 integers); a list of args is one call. Elsewhere run `fallback()`, which emits
        the generated code. See backend/library.py."""
        library.call(self, routine, emit, fallback, when=when, strings=strings)

    def lower_fallback(self, op: Op, outs: Sequence[Buffer]) -> None:
        """The generated code of an op kept for a library call (Primitive.library_when): its
        region (the decomposition) on its operands' buffers, writing `outs`."""
        args = []
        for v in op.operands:
            buf = self.buffers.get(v)
            if buf is None:                   # a value fusion computes in place: materialize it
                buf = self.scratch_buffer(v.type.dtype, v.type.shape)
                self.compute_into(v, buf)
            args.append(buf)
        self._cache.append({})
        try:
            self.lower_block(op.regions[0], args, outs)
        finally:
            self._cache.pop()

    def char(self, value: str) -> ll.Constant:
        """A Fortran CHARACTER*1 argument (``cg.char("N")``)."""
        return library.char(value)

    def pointer(self, buf: Buffer, offset: ll.Value | None = None) -> ll.Value:
        """The address of element `offset` (flat, in elements) of `buf`."""
        if offset is None:
            return buf.ptr
        return self.b.gep(buf.ptr, [offset], inbounds=True)

    # ---- memory ----------------------------------------------------------------------
    def linearize(self, idx: Sequence[ll.Value], shape: Sequence[dims.Dim]) -> ll.Value:
        flat: ll.Value = self.index(0)
        for i, d in zip(idx, shape):
            flat = self.b.add(self.b.mul(flat, self.dim(d)), i)
        return flat

    def delinearize(self, flat: ll.Value, shape: Sequence[dims.Dim]) -> list[ll.Value]:
        out: list[ll.Value] = []
        for d in reversed(shape):
            n = self.dim(d)
            out.append(self.b.urem(flat, n))
            flat = self.b.udiv(flat, n)
        return out[::-1]

    def _address(self, buf: Buffer, idx: Sequence[ll.Value]) -> ll.Value:
        flat = self.linearize(idx, buf.shape)
        return self.b.gep(buf.ptr, [flat], inbounds=True)

    def load(self, buf: Buffer, idx: Sequence[ll.Value]) -> ll.Value:
        if is_complex(buf.dtype):
            return self._load_complex(buf, idx)
        v = self.b.load(self._address(buf, idx))
        if buf.dtype == F16:
            return self.b.fpext(v, scalar_type(F16))
        return self.b.trunc(v, I1T) if buf.dtype == BOOL else v

    def store(self, buf: Buffer, idx: Sequence[ll.Value], value: ll.Value) -> None:
        if is_complex(buf.dtype):
            return self._store_complex(buf, idx, value)
        if buf.dtype == BOOL:
            value = self.b.zext(value, I8T)
        elif buf.dtype == F16:
            value = self.b.fptrunc(value, memory_type(F16))
        self.b.store(value, self._address(buf, idx))

    def complex_value(self, dtype: np.dtype, re: ll.Value, im: ll.Value) -> ll.Value:
        """The backend's complex scalar ({re, im}) of two real scalars."""
        pair = ll.Constant(scalar_type(dtype), None)
        return self.b.insert_value(self.b.insert_value(pair, re, 0), im, 1)

    def _parts(self, buf: Buffer, idx: Sequence[ll.Value]) -> tuple[ll.Value, ll.Value]:
        """Pointers to the real and imaginary part of an element of a complex buffer: a
        real-typed base with index 2k and 2k+1, the form LLVM vectorizes as interleaved."""
        part = scalar_type(buf.dtype).elements[0]
        base = self.b.bitcast(buf.ptr, ll.PointerType(part))
        k = self.b.mul(self.linearize(idx, buf.shape), self.index(2))
        return (self.b.gep(base, [k], inbounds=True),
                self.b.gep(base, [self.b.add(k, self.index(1))], inbounds=True))

    def _load_complex(self, buf: Buffer, idx: Sequence[ll.Value]) -> ll.Value:
        re, im = (self.b.load(p) for p in self._parts(buf, idx))
        return self.complex_value(buf.dtype, re, im)

    def _store_complex(self, buf: Buffer, idx: Sequence[ll.Value], value: ll.Value) -> None:
        re, im = self._parts(buf, idx)
        self.b.store(self.b.extract_value(value, 0), re)
        self.b.store(self.b.extract_value(value, 1), im)

    def read_constant(self, array: np.ndarray, idx: Sequence[ll.Value]) -> ll.Value:
        dtype = array.dtype
        if array.size == 1:
            return self.const(dtype, array.reshape(-1)[0])
        gv = self._constants.get(id(array))
        if gv is None:
            flat = array.reshape(-1).astype(np.uint8 if dtype == BOOL else dtype)
            raw = flat.tobytes()
            t = ll.ArrayType(I8T, len(raw))
            init = ll.Constant(t, bytearray(raw))
            gv = ll.GlobalVariable(self.module, t, name=f"const.{len(self._constants)}")
            gv.global_constant, gv.linkage, gv.initializer = True, "internal", init
            gv.align = 64
            self._constants[id(array)] = gv
        ptr = self.b.bitcast(gv, ll.PointerType(memory_type(dtype)))
        buf = Buffer(ptr, dtype, tuple(array.shape))
        return self.load(buf, idx)

    # ---- loops -----------------------------------------------------------------------
    @contextlib.contextmanager
    def loop(self, extent: ll.Value, *, unroll: bool = True, interleave4: bool = False,
             vectorize: bool = True, row: int = 0, row_masked: int = 0
             ) -> Iterator[ll.Value]:
        """for (i = 0; i < extent; i++) { body }; the builder ends after the loop.
        unroll=False keeps LLVM from unrolling it (so that one copy of an inner loop
        sees the whole address stream); interleave4 asks for 4 interleaved vector
        iterations (the accumulators of a pairwise chunk) unless the body calls vector
        math, which always asks for 2; vectorize=False keeps LLVM's loop vectorizer off
        this loop (its inner loops, or their unrolled bodies, are vectorized instead);
        row=N (the elements of a vector register) makes it a short row of a static length
        that is not a whole number of vectors (loop_nest's rolled_rows): without vector
        math in the body, vectors of N and a scalar remainder (for the unroller and the SLP
        vectorizer to shape); with it, `row_masked` (2 or 4) asks for one masked trip of
        that many interleaved vectors of N (the default, two interleaved vectors a step,
        leaves up to 15 elements of a row to scalar math), otherwise (0) the hints of any
        loop calling vector math."""
        b = self.b
        pre = b.block
        header = self.fn.append_basic_block("loop")
        body = self.fn.append_basic_block("loop.body")
        exit_ = self.fn.append_basic_block("loop.exit")
        b.branch(header)
        b.position_at_end(header)
        i = b.phi(I64T)
        i.add_incoming(self.index(0), pre)
        b.cbranch(b.icmp_signed("<", i, extent), body, exit_)
        b.position_at_end(body)
        self._cache.append({})
        calls_before, late_before = self.math_calls, self.late_math_calls
        self._loop_depth += 1
        self._nest_heights.append(0)
        self._nest_long.append(False)
        try:
            yield i
        finally:
            self._cache.pop()
            self._loop_depth -= 1
            height = 1 + self._nest_heights.pop()
            self._nest_heights[-1] = max(self._nest_heights[-1], height)
            long_inside = self._nest_long.pop()
            self._nest_long[-1] = self._nest_long[-1] or long_inside or not _trips_below(extent, LONG_LOOP)
        # rolled_code: a loop of a nest at most two deep (an elementwise group over a stack,
        # not the three loops of a matrix product)
        rolled = self.rolled_depth is not None and self._loop_depth - self.rolled_depth + height <= 2
        nxt = b.add(i, self.index(1), flags=("nsw", "nuw"))
        i.add_incoming(nxt, b.block)
        back = b.branch(header)
        math = self.math_calls > calls_before
        hints = ("i" if math else "f" if interleave4 else "") + ("" if unroll else "u") \
            + ("" if vectorize else "v")
        if row and vectorize and not math:
            hints = f"w{row}p"
        elif row and vectorize and row_masked:
            hints = f"w{row}m" + ("i" if row_masked == 2 else "f")
        if self.scalar_loops:
            hints = "uv"
        elif rolled and "u" not in hints:
            hints += "u"
        elif long_inside and _trips_below(extent, FULL_UNROLL_TRIPS + 1) \
                and not _trips_below(extent, SHORT_LOOP) and "u" not in hints:
            hints += "u"        # a few trips around a real loop: see FULL_UNROLL_TRIPS
        if self.late_math_calls > late_before and not row and "u" not in hints:
            # a call inlined only after vectorization (vecmath.is_late) looks cheap to the
            # unroller: a short static reduction loop was unrolled whole, and the SLP vectorizer
            # left its calls one lane each (rows of 20: 2.5x slower). An elementwise short row
            # is still unrolled: there the SLP vectorizer calls the vector variants.
            hints += "u"
        if hints:
            self._loop_hints(back, hints)
        b.position_at_end(exit_)

    def _loop_hints(self, back_edge: Any, hints: str) -> None:
        """Loop metadata: "i" asks for two interleaved vector iterations in loops calling
        vector math (their long dependency chains otherwise leave the FP units idle), "f"
        for four, "u" disables unrolling, "v" vectorization. The node is made a distinct, self-referential loop ID when the
        module is printed (kernel.py)."""
        self._loop_ids += 1
        marker = ll.MetaDataString(self.module, f"aotx.loop.{self._loop_ids}.{hints}")
        back_edge.set_metadata("llvm.loop", self.module.add_metadata([marker]))

    @contextlib.contextmanager
    def scalar_code(self) -> Iterator[None]:
        """The loops emitted inside are neither vectorized nor unrolled: for a large, rarely
        run fallback (a library call's generated code), whose vectorized loops would cost
        more compile time than they save."""
        saved, self.scalar_loops = self.scalar_loops, True
        try:
            yield
        finally:
            self.scalar_loops = saved

    @contextlib.contextmanager
    def rolled_code(self) -> Iterator[None]:
        """The loops of nests at most two deep emitted inside (elementwise groups over a stack)
        are vectorized but not unrolled: for the many short loops of a large loop body
        (backend/loops.py), whose unrolled copies would multiply the code LLVM optimizes and
        emits. Deeper nests (a matrix product's three loops) are left to LLVM's unroller."""
        saved, self.rolled_depth = self.rolled_depth, self._loop_depth
        try:
            yield
        finally:
            self.rolled_depth = saved

    @contextlib.contextmanager
    def loop_nest(self, shape: Sequence[dims.Dim], row_bytes: int = 0, *, vectorize: bool = True,
                  rolled_rows: bool = False) -> Iterator[list[ll.Value]]:
        """Loops over `shape`, the last innermost. row_bytes (the element size of an
        elementwise loop nest writing a row-major buffer) keeps LLVM's loop vectorizer off the
        outer loops when the last axis is static and fills at least one vector register: LLVM
        unrolls such a short inner loop completely and then vectorized the loop around it,
        across rows, with a gather or a scatter per element (a [256, 16, 16] float64 product:
        19 us; along the rows: 4.4 us). Shorter rows are left to LLVM (float32 rows of 8 are
        twice as fast vectorized across rows, as interleaved groups). `vectorize=False`: no
        loop of the nest is vectorized (a reduction over short rows inside it: across rows
        it would gather, and the size-1 axes of ``keepdims`` are loops too);
        `rolled_rows`: the innermost loop is a short row that is not a whole number of
        vectors (`loop`'s row): its whole vectors, then a scalar remainder that the unroller
        and the SLP vectorizer shape (a row of 10 float64 is one 8-wide and one 2-wide
        multiply; LLVM's own choice, two masked 8-wide iterations, was 2.9x slower on
        300000 x 10). A static axis of length 1 is no loop, its index 0 (the size-1 axes of
        a vmap's products and keepdims reductions: LLVM deletes such loops, but at a cost:
        3 ms of the 75 of W3's compile)."""
        n = len(shape)
        last = shape[-1] if shape else 1
        across = not (row_bytes and n >= 2 and isinstance(last, int)
                      and last * row_bytes * 8 >= self.vector_bits) and not rolled_rows
        lanes = self.vector_bits // (8 * max(row_bytes, 4)) if row_bytes else 0
        # a row of vector math shorter than 4 vectors is one trip of a masked loop whose
        # interleaved vectors cover it (2 or 4 of them): their long dependency chains overlap.
        # Measured on AVX-512, tanh(a * w + b) of 3e6 float64 elements: rows of 20 8.3 ->
        # 2.9 ms, of 31 8.6 -> 3.3 (NumPy 6-7 ms); the default, two interleaved vectors and
        # a scalar remainder, or a masked loop of several trips, were up to 5x slower
        masked = (2 if last <= 2 * lanes else 4) if isinstance(last, int) and last < 4 * lanes else 0
        with contextlib.ExitStack() as stack:
            yield [self.index(0) if isinstance(d, int) and d == 1 else stack.enter_context(self.loop(
                self.dim(d), vectorize=(across or k == n - 1) and vectorize,
                row=lanes if rolled_rows and k == n - 1 else 0, row_masked=masked))
                for k, d in enumerate(shape)]

    def reduce(self, shape: Sequence[dims.Dim], axes: Sequence[int], out_idx: Sequence[ll.Value],
               inits: Sequence[ll.Value], body: Any) -> list[ll.Value]:
        """Loop over `axes` of `shape` (the others fixed by out_idx), folding with `body`."""
        slots = [self.alloca_builder.alloca(v.type) for v in inits]
        for s, v in zip(slots, inits):
            self.b.store(v, s)
        with self.loop_nest([shape[a] for a in axes]) as red:
            rest, loops = iter(out_idx), iter(red)
            full = [next(loops) if a in axes else next(rest) for a in range(len(shape))]
            new = body([self.b.load(s) for s in slots], full)
            for s, v in zip(slots, new):
                self.b.store(v, s)
        return [self.b.load(s) for s in slots]

    def reduce_pairwise(self, shape: Sequence[dims.Dim], axes: Sequence[int],
                        out_idx: Sequence[ll.Value], init: ll.Value, combine: Any,
                        element: Any) -> ll.Value:
        """Like `reduce` for one associative float op (``combine(a, b)``) of
        ``element(full_idx)``, with blocked pairwise summation (pairwise.py): the rounding
        error grows with log2 of the count."""
        if not pairwise.needed(shape, axes, pairwise.chunk_size(self, init.type)):
            return self.reduce(shape, axes, out_idx, [init], lambda acc, full: [
                self.reassoc(combine(acc[0], element(full)))])[0]
        return pairwise.reduce(self, shape, axes, out_idx, init, combine, element)

    def accumulate_pairwise(self, shape: Sequence[dims.Dim], axes: Sequence[int], out: Buffer,
                            init: ll.Value, combine: Any, element: Any) -> bool:
        """Whole output rows (the last axis kept) with blocked pairwise summation; False
        (nothing emitted) when the reduction is statically one leaf: a plain walk is as exact."""
        if not pairwise.needed(shape, axes, pairwise.ROWS):
            return False
        pairwise.accumulate(self, shape, axes, out, init, combine, element)
        return True

    def scan_pairwise(self, n: ll.Value, init: ll.Value, combine: Any, element: Any,
                      emit: Any) -> None:
        """A running fold of element(k) for k < n, emit(k, prefix): blocked, with the
        previous blocks combined pairwise (pairwise.py)."""
        pairwise.scan(self, n, init, combine, element, emit)

    def max_sumexp(self, shape: Sequence[dims.Dim], axes: Sequence[int], out_idx: Sequence[ll.Value],
                   dtype: np.dtype, element: Any) -> tuple[ll.Value, ll.Value, ll.Value]:
        """(max, total, gap) of element(full_idx) over `axes`, one pass in chunks: the sum of
        exp(x - max) is ``max_sumexp_finish(total, gap)`` (reduce_max_sumexp: backend/online.py)."""
        return online.max_sumexp(self, shape, axes, out_idx, scalar_type(dtype), element)

    def max_sumexp_finish(self, total: ll.Value, gap: ll.Value) -> ll.Value:
        return online.finish(self, total, gap)

    # ---- values -------------------------------------------------------------------------
    def read(self, v: Value, idx: Sequence[ll.Value]) -> ll.Value:
        """The element of `v` at `idx`: loaded if materialized, else computed here."""
        assert len(idx) == v.type.ndim, (v, len(idx))
        key = (v, tuple(id(i) for i in idx))
        hit = self._cached(key)
        if hit is not None:
            return hit
        if v in self.buffers and v not in self._computing:
            result = self.load(self.buffers[v], idx)
        elif self._fused_elementwise(v):
            result = self._compute_elementwise(v, idx, key[1])
        else:
            result = self._compute(v, idx)
        self._cache[-1][key] = (result, tuple(idx))   # keeps idx alive: ids stay unique
        return result

    _computing: tuple[Value, ...] = ()      # the values the current loop nest writes

    @contextlib.contextmanager
    def computing(self, values: Sequence[Value]) -> Iterator[None]:
        """Inside, `read` computes `values` on the spot even where they have buffers (a
        lowering that evaluates them ahead of their own loop nest: primitives/glm.py)."""
        saved, self._computing = self._computing, self._computing + tuple(values)
        try:
            yield
        finally:
            self._computing = saved

    def _cached(self, key: tuple[Value, tuple[int, ...]]) -> ll.Value | None:
        for scope in reversed(self._cache):
            if key in scope:
                return scope[key][0]
        return None

    def _fused_elementwise(self, v: Value) -> bool:
        """Is `v` an elementwise result computed on the spot (not loaded from a buffer)?"""
        op = v.op
        return (op is not None and op.prim.kind == ELEMENTWISE and op.prim.lower is not None
                and (v not in self.buffers or v in self._computing))

    def _compute_elementwise(self, v: Value, idx: Sequence[ll.Value], ids: tuple[int, ...]) -> ll.Value:
        """`v` at `idx` with the elementwise expression below it evaluated in post-order from
        an explicit stack, not by recursion: a chain of thousands of fused elementwise ops
        (``x = x * a + b`` written out a thousand times) needs no Python stack depth. Each
        operand is computed once per index (the read cache), so a DAG costs its size."""
        assert v.op is not None
        stack: list[Value] = [v]
        while stack:
            u = stack[-1]
            op = u.op
            assert op is not None
            pending = [a for a in op.operands if a is not u and self._fused_elementwise(a)
                       and self._cached((a, ids)) is None]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            if u is v:
                break
            if self._cached((u, ids)) is not None:    # pushed twice (a shared operand)
                continue
            lower = op.prim.lower
            assert lower is not None
            value = self._rounded(u, lower(self, op, [self.read(a, idx) for a in op.operands]))
            self._cache[-1][(u, ids)] = (value, tuple(idx))
        op = v.op
        lower = op.prim.lower
        assert lower is not None
        return self._rounded(v, lower(self, op, [self.read(a, idx) for a in op.operands]))

    def _rounded(self, v: Value, value: ll.Value) -> ll.Value:
        """Every float16 result is a float16 value (computed in float32, rounded once)."""
        return self.round_half(value) if v.type.dtype == F16 else value

    def _compute(self, v: Value, idx: Sequence[ll.Value]) -> ll.Value:
        op = v.op
        assert op is not None, f"block argument {v!r} without a buffer"
        lower = op.prim.lower
        if op.prim.kind == ELEMENTWISE and lower is not None:
            return self._rounded(v, lower(self, op, [self.read(a, idx) for a in op.operands]))
        if op.prim.kind == INDEX and lower is not None:
            return self._rounded(v, lower(self, op, list(idx)))
        raise AssertionError(f"{op.prim.name} result {v!r} must be materialized")

    def compute_into(self, v: Value, buf: Buffer) -> None:
        """A loop nest writing every element of `v` to `buf`."""
        saved, self._computing = self._computing, (v,)
        op = v.op
        try:
            if op is not None and op.prim.lower_root is not None and op.prim.lower_root(self, op, buf):
                return
            with self._flat_nest([v]) or self.loop_nest(
                    v.type.shape, row_bytes=_itemsize(v.type.dtype),
                    vectorize=not self._reduces_short_rows(v),
                    rolled_rows=self._short_rows(v)) as idx:
                self.store(buf, idx, self.read(v, idx))
        finally:
            self._computing = saved

    def compute_nest(self, roots: Sequence[Value]) -> None:
        """One loop nest writing every element of each of `roots` (elementwise values of one
        shape: a nest of fusion.Schedule) to its buffer; a value their expressions share is
        computed once per element (the read cache)."""
        saved, self._computing = self._computing, tuple(roots)
        try:
            with self._flat_nest(roots) or self.loop_nest(
                    roots[0].type.shape, row_bytes=_itemsize(roots[0].type.dtype),
                    rolled_rows=self._short_rows(roots[0])) as idx:
                for r in roots:
                    self.store(self.buffers[r], idx, self.read(r, idx))
        finally:
            self._computing = saved

    def _flat_nest(self, roots: Sequence[Value]) -> contextlib.AbstractContextManager[list[ll.Value]] | None:
        """One loop over all the elements of `roots` (elementwise values of one shape of two
        or more axes), when every element they read is at the position it is written to: each
        leaf of their expressions is a buffer of that same shape (buffers are row-major, so
        the index (0, ..., 0, k) is the k-th element of each) or a broadcast scalar, with no
        other broadcast, view or index-dependent op between. Else None. A nest of short rows
        is a short loop per row with a remainder each (np.exp of 100000 x 31 float64: 4.2 ms
        in rows, 1.0 to 1.3 ms flat)."""
        shape = roots[0].type.shape
        if len(shape) < 2:
            return None
        todo, seen = list(roots), set()
        while todo:
            u = todo.pop()
            if u in seen:
                continue
            seen.add(u)
            if u in self.buffers and u not in self._computing:
                if u.type.shape != shape:
                    return None
                continue
            op = u.op
            if op is not None and op.prim is ops.broadcast_in_dim_p and op.operands[0].type.ndim == 0:
                continue                    # a scalar (a constant): the same for every index
            if op is None or op.prim.kind != ELEMENTWISE or op.prim.lower is None \
                    or op.prim.lower_root is not None:
                return None
            todo.extend(op.operands)
        return self._flat_loop(shape)

    @contextlib.contextmanager
    def _flat_loop(self, shape: Sequence[dims.Dim]) -> Iterator[list[ll.Value]]:
        total = self.dim(shape[0])
        for d in shape[1:]:
            total = self.b.mul(total, self.dim(d), flags=("nsw", "nuw"))
        with self.loop(total) as k:
            yield [self.index(0)] * (len(shape) - 1) + [k]

    def _short_rows(self, v: Value) -> bool:
        """Is `v` made of many short rows: a static last axis longer than LLVM's widest
        interleaved access (8), at most SHORT_ROW and not a multiple of 8? Vectorized across
        rows, each access would be a gather or scatter striding over them (x * s[:, None] of
        300000 x 10: 7.7 ms); each row is vectorized instead (2.5 ms). Rows of a multiple of
        8 are vectorized whole already, and faster so (50000 x 64: 0.88 ms against 1.4)."""
        t = v.type
        n = t.shape[-1] if t.ndim >= 2 else None
        return isinstance(n, int) and 8 < n <= SHORT_ROW and n % 8 != 0

    def _reduces_short_rows(self, v: Value) -> bool:
        """Does computing `v` reduce short rows: a reduction (computed here, not stored) over
        the contiguous last axis of its operand, of a static length from 8 to SHORT_ROW? LLVM
        unrolls such a reduction whole, and would then vectorize the loop over the rows,
        with gathers striding over them ((a * b).sum(axis=1) of 100000 x 16: 5.4 ms); with
        that loop left alone each row's few elements are vector loads (0.46 ms). Rows of
        fewer than 8 LLVM vectorizes across rows as interleaved groups, which is faster
        (norms of 1e6 3-vectors: 0.63 ms, against 1.9 ms row by row)."""
        todo, seen = [v], set()
        while todo:
            u = todo.pop()
            op = u.op
            if op is None or u in seen or (u is not v and u in self.buffers):
                continue
            seen.add(u)
            if op.prim.name.startswith("reduce_") or op.prim.name in ("argmax", "argmin"):
                x = op.operands[0]
                axes = op.params["axes"] if "axes" in op.params else (op.params["axis"],)
                last = x.type.ndim - 1
                length = x.type.shape[last] if x.type.ndim >= 2 else None
                if last in axes and isinstance(length, int) and 8 <= length <= SHORT_ROW:
                    return True
            if op.prim.kind in (ELEMENTWISE, INDEX):
                todo.extend(op.operands)
        return False

    # ---- blocks -------------------------------------------------------------------------
    def allocate(self, v: Value) -> Buffer:
        t = v.type
        elem = memory_type(t.dtype)
        if t.ndim == 0 or (t.is_static and _static_size(t.shape) * _itemsize(t.dtype) <= 256):
            count = 1 if t.ndim == 0 else _static_size(t.shape)
            slot = self.alloca_builder.alloca(elem, count)
            slot.align = 32
            return Buffer(slot, t.dtype, t.shape)
        return Buffer(self._temporary(self._byte_count(t.shape, t.dtype), elem), t.dtype, t.shape)

    def _temporary(self, nbytes: ll.Value, elem: ll.Type) -> ll.Value:
        """A pointer to `nbytes` (computed in the entry block) bytes of the call's workspace
        (backend/workspace.py): one block for every temporary, kept between calls."""
        if self.workspace is None:
            self.workspace = Workspace(self)
        workspace = self.workspace
        return workspace.carve.bitcast(workspace.take(nbytes), ll.PointerType(elem))

    def _byte_count(self, shape: Sequence[dims.Dim], dtype: np.dtype) -> ll.Value:
        """64 + the byte count of an array of `shape`, or all ones (the workspace then fails
        as out of memory) when it overflows int64: a size must never wrap around to a small
        allocation."""
        if all(isinstance(d, int) for d in shape):
            n = _static_size(shape) * _itemsize(dtype) + 64
            return ll.Constant(I64T, n if n < 2**63 else -1)
        total, over = self._checked_product(shape, _itemsize(dtype))
        total = self.alloca_builder.add(total, ll.Constant(I64T, 64))
        return self.alloca_builder.select(over, ll.Constant(I64T, -1), total)

    def _checked_product(self, shape: Sequence[dims.Dim], itemsize: int) -> tuple[ll.Value, ll.Value]:
        """(itemsize * prod(shape), whether it exceeds INT64_MAX), in the entry block. A
        negative dim counts as 0 here (it is not a size overflow)."""
        b = self.alloca_builder
        mul = _declare(self.module, "llvm.umul.with.overflow.i64",
                       ll.FunctionType(ll.LiteralStructType([I64T, I1T]), [I64T, I64T]))
        total: ll.Value = ll.Constant(I64T, itemsize)
        over: ll.Value = ll.Constant(I1T, 0)
        zero = ll.Constant(I64T, 0)
        for d in shape:
            v = self._entry_dim(d)
            v = b.select(b.icmp_signed("<", v, zero), zero, v)
            pair = b.call(mul, [total, v])
            total = b.extract_value(pair, 0)
            over = b.or_(over, b.extract_value(pair, 1))
        return total, b.or_(over, b.icmp_signed("<", total, zero))

    def check_sizes(self, block: Block) -> None:
        """At entry: the status 3 exit (NumPy's "array is too big") when the byte count of any
        array of `block` (nested regions included) overflows int64 for these symbol values.
        Without it such a size would wrap around in allocations and loop bounds."""
        shapes: dict[tuple[Any, ...], int] = {}
        values = list(block.args) + [r for op in block.walk() for r in op.results] + \
            [a for op in block.walk() for region in op.regions for a in region.args]
        for v in values:
            key = tuple(v.type.shape)
            shapes[key] = max(shapes.get(key, 0), _itemsize(v.type.dtype))
        flags: list[ll.Value] = []
        for shape, itemsize in shapes.items():
            if all(isinstance(d, int) for d in shape):
                if _static_size(shape) * itemsize >= 2**63:
                    flags.append(ll.Constant(I1T, 1))
            else:
                flags.append(self._checked_product(shape, itemsize)[1])
        if flags:
            flag = flags[0]
            for f in flags[1:]:
                flag = self.alloca_builder.or_(flag, f)
            self.too_big = flag

    def scratch_buffer(self, dtype: np.dtype, shape: Sequence[dims.Dim]) -> Buffer:
        """A row-major temporary of `shape` (see scratch)."""
        count: dims.Dim = 1
        for d in shape:
            count = dims.mul(count, d)
        return Buffer(self.scratch(dtype, self.entry_dim(count)), dtype, tuple(shape))

    def scratch(self, dtype: np.dtype, count: ll.Value) -> ll.Value:
        """A pointer to `count` (computed in the entry block) elements of `dtype`, a slice of
        the call's workspace taken at entry and given back at exit with the other temporaries.
        A count whose byte size overflows int64 fails the call as out of memory."""
        mul = _declare(self.module, "llvm.smul.with.overflow.i64",
                       ll.FunctionType(ll.LiteralStructType([I64T, I1T]), [I64T, I64T]))
        pair = self.alloca_builder.call(mul, [count, ll.Constant(I64T, _itemsize(dtype))])
        nbytes = self.alloca_builder.add(self.alloca_builder.extract_value(pair, 0), ll.Constant(I64T, 64))
        nbytes = self.alloca_builder.select(self.alloca_builder.extract_value(pair, 1), ll.Constant(I64T, -1), nbytes)
        return self._temporary(nbytes, memory_type(dtype))

    def entry_dim(self, d: dims.Dim) -> ll.Value:
        """The value of `d` computed in the entry block (for sizes of temporaries)."""
        return self._entry_dim(d)

    def _entry_dim(self, d: dims.Dim) -> ll.Value:
        saved = self.b
        self.b = self.alloca_builder
        try:
            return self.dim(d)
        finally:
            self.b = saved

    def lower_block(self, block: Block, args: Sequence[Buffer], outs: Sequence[Buffer], *,
                    assign: Mapping[Value, Buffer] | None = None, force: Collection[Value] = ()
                    ) -> None:
        """Emit `block` reading its arguments from `args` and writing results to `outs`.
        `assign` gives chosen values their buffer (a carried array updated in place), `force`
        materializes values fusion would compute inside their consumers (fusion.schedule)."""
        sched = schedule(block, force)
        saved_sched, self.sched = self.sched, sched
        if saved_sched is None:
            self.top_sched = sched
            self.top_gathers = any(op.prim in (ops.take_p, ops.dynamic_slice_p) for op in block.ops)
        for a, buf in zip(block.args, args):
            self.buffers[a] = buf
        result_bufs: dict[Value, Buffer] = {}
        copies: list[tuple[Value, Buffer]] = []
        for r, buf in zip(block.results, outs):
            if r in result_bufs or r in block.args or (assign is not None and r in assign
                                                       and assign[r] is not buf):
                copies.append((r, buf))
            else:
                result_bufs[r] = buf
        evaluation = Evaluation(sched)
        temporaries = _Temporaries(self, evaluation)
        shared = _update_chains(block, sched, assign)
        views = _result_views(block, sched, result_bufs, assign, shared) if saved_sched is None else {}
        viewed = set(views.values())
        for r, v in views.items():          # v is written where the result r lives
            self.buffers[v] = Buffer(result_bufs[r].ptr, v.dtype, v.shape)
            self.buffers[r] = result_bufs[r]
        # in the order they are written (a root of a nest: at its nest's place)
        for v in sorted(sched.materialized, key=evaluation.written):
            if v in shared or v in views or v in viewed:
                continue                            # given its chain's buffer below, or a view
            if assign is not None and v in assign:
                self.buffers[v] = assign[v]
            elif v in result_bufs and v not in block.args:
                self.buffers[v] = result_bufs[v]
            elif v not in self.buffers and any(shared.get(x) is v for x in shared):
                self.buffers[v] = self.allocate(v)  # the end of an update chain: its own buffer
            elif v not in self.buffers:
                self.buffers[v] = temporaries.take(v)
        for x in reversed(list(shared)):            # from the chain's end back to its start
            self.buffers[x] = self.buffers[shared[x]]
        for op in block.ops:
            if not (op.results and op.results[0] in views):
                self._lower_op(op, sched)
        for r, buf in copies:
            if self.buffers[r] is not buf:          # a loop invariant yielded into its own buffer
                self.copy(self.buffers[r], buf)
        self.sched = saved_sched

    def _lower_op(self, op: Op, sched: Schedule) -> None:
        kind, lower = op.prim.kind, op.prim.lower
        if kind == OPAQUE:
            assert lower is not None, f"{op.prim.name} has no lowering"
            lower(self, op, [self.buffers[r] for r in op.results])
        elif kind == CONTROL and lower is not None:     # a control op with its own lowering
            lower(self, op)                             # (custom_function)
        elif kind == CONTROL:
            control.lower(self, op)
        else:
            for r in op.results:
                if sched.is_materialized(r) and r not in self.written_ahead:
                    anchor = sched.anchor.get(r)
                    if anchor is None:
                        self.compute_into(r, self.buffers[r])
                    elif anchor is r:
                        self.compute_nest(sched.nests[r])
                    else:
                        continue                # written by its nest's loop, at the anchor
                    if sched is self.top_sched and self.top_gathers:
                        # a compiler-only barrier between the function body's loop nests (no
                        # instruction) when that body reads with run-time indices: LLVM 22's
                        # SLP vectorizer moved stores of a small temporary below a masked
                        # gather reading it (tests/backend/test_memory_order.py). Not in
                        # regions, where it would stop the vectorization of per-element loops
                        # (vmap of while_loop), nor without gathers, where it would keep LLVM
                        # from merging a fill and a copy.
                        self.b.fence("seq_cst", "singlethread")

    def copy(self, src: Buffer, dst: Buffer) -> None:
        with self.loop_nest(src.shape) as idx:
            self.store(dst, idx, self.load(src, idx))

    # ---- error exits (host callbacks, checks) --------------------------------------------
    def check_status(self, op: Op) -> int:
        """The status a failing check op returns (its place in kernel.error_sites)."""
        return self.checks[op]

    def error_exit(self, status: int) -> ll.Block:
        """A block that frees every temporary and returns `status` (filled in by finish):
        branch there when a host callback fails."""
        if status not in self.error_exits:
            self.error_exits[status] = self.fn.append_basic_block(f"error.{status}")
        return self.error_exits[status]

    def finish(self) -> None:
        """Give the workspace back and return 0; the error exits give it back and return
        their status; status 3 when a size overflows, 1 when the workspace could not be had."""
        workspace = self.workspace
        if self.too_big is not None:
            self.error_exit(3)
        for status, block in self.error_exits.items():
            eb = ll.IRBuilder(block)
            if workspace is not None:
                workspace.give_back(eb)       # nothing when the exit is taken before entry's end
            eb.ret(ll.Constant(ll.IntType(32), status))
        if workspace is not None:
            workspace.give_back(self.b)
        self.b.ret(ll.Constant(ll.IntType(32), 0))
        entry = self.alloca_builder
        if self.too_big is not None:
            sizes_ok = self.fn.append_basic_block("sizes_ok")
            entry.cbranch(self.too_big, self.error_exits[3], sizes_ok)
            entry = ll.IRBuilder(sizes_ok)
        if workspace is None:
            entry.branch(self.body)
            return
        fail = self.fn.append_basic_block("out_of_memory")
        ll.IRBuilder(fail).ret(ll.Constant(ll.IntType(32), 1))
        workspace.acquire(entry, self.body, fail)


_UPDATES = (ops.update_slice_p, ops.dynamic_update_slice_p, ops.scatter_p)


def _result_views(block: Block, sched: Schedule, result_bufs: Mapping[Value, Buffer],
                  assign: Mapping[Value, Buffer] | None, shared: Mapping[Value, Value]
                  ) -> dict[Value, Value]:
    """{r: v} for each result ``r = reshape(v)`` of the kernel's body whose operand v is a
    materialized value (not an argument, a result, an assigned buffer or the start of an
    update chain) and whose output is a fresh array (not an argument updated in place): v is
    written straight into r's output buffer, which holds the same
    elements in the same row-major order, instead of into a temporary copied out at the end
    (``out = np.zeros((n, k)); out[np.arange(n), y] = 1`` scatters into a flat view of
    ``out``: 1.75 -> 0.9 ms for 100000 x 10)."""
    views: dict[Value, Value] = {}
    taken: set[Value] = set()
    for r in result_bufs:
        op = r.op
        if op is None or op.prim is not ops.reshape_p or (assign is not None and r in assign):
            continue
        v = op.operands[0]
        if (v.op is not None and sched.is_materialized(v) and v not in result_bufs
                and v not in block.args and v not in shared and v not in taken
                and (assign is None or v not in assign) and v.dtype == r.dtype):
            views[r] = v
            taken.add(v)
    return views


def _update_chains(block: Block, sched: Schedule, assign: Mapping[Value, Buffer] | None
                   ) -> dict[Value, Value]:
    """{x: r} for each update ``r = U(x, ...)`` (a slice assignment, a scatter) of `block`
    that may write into x's buffer: x is a materialized value of the block (not an argument,
    a result or an assigned buffer) and U's operand 0 is its only use, so nothing reads x
    once U has started. Then x lives in r's buffer and U writes only its window instead of
    copying x first: ``z = np.zeros(...); z[:, 0] = a; z[:, 1] = b`` fills z once and
    writes each column where it lives. In program order, so a chain x0 -> x1 -> x2 maps
    each link to the next one. (Loop-carried chains: backend/carries.py.)"""
    uses: dict[Value, int] = {}
    for op in block.ops:
        for v in op.operands:
            uses[v] = uses.get(v, 0) + 1
    results = set(block.results)
    args = set(block.args)
    shared: dict[Value, Value] = {}
    for op in block.ops:
        if op.prim not in _UPDATES or not op.results:
            continue
        x, r = op.operands[0], op.results[0]
        if (uses.get(x) == 1 and x not in results and x not in args and x.op is not None
                and sched.is_materialized(x) and sched.is_materialized(r)
                and (assign is None or x not in assign) and x.type == r.type):
            shared[x] = r
    return shared


class _Temporaries:
    """The buffers of a block's materialized values, reused: a value whose last reader has
    been evaluated (fusion.Evaluation) gives its buffer to a later value of the same dtype
    and shape. A chain of a thousand statements cut into loops (fusion.MAX_GROUP_OPS), or a
    long sequence of reductions, then needs two buffers, not one per loop."""

    def __init__(self, cg: Codegen, evaluation: Evaluation) -> None:
        self.cg, self.evaluation = cg, evaluation
        self.free: dict[tuple[Any, ...], list[Buffer]] = {}
        self.busy: list[tuple[int, int, tuple[Any, ...], Buffer]] = []    # a heap by last read
        self.count = 0

    def take(self, v: Value) -> Buffer:
        assert v.op is not None, v
        at = self.evaluation.written(v)
        while self.busy and self.busy[0][0] < at:       # read for the last time before v
            _, _, key, buf = heapq.heappop(self.busy)
            self.free.setdefault(key, []).append(buf)
        key = (v.type.dtype, tuple(v.type.shape))
        pool = self.free.get(key)
        buf = pool.pop() if pool else self.cg.allocate(v)
        self.count += 1
        heapq.heappush(self.busy, (self.evaluation.last_read(v), self.count, key, buf))
        return buf


def _declare(module: ll.Module, name: str, fnty: ll.FunctionType) -> ll.Function:
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    return ll.Function(module, fnty, name)


def _static_size(shape: Sequence[dims.Dim]) -> int:
    total = 1
    for d in shape:
        assert isinstance(d, int), f"symbolic size {d} where a static one is needed"
        total *= d
    return total


def _itemsize(dtype: np.dtype) -> int:
    return 1 if dtype == BOOL else dtype.itemsize
