"""The one-pass lowering of reduce_max_sumexp (primitives/online.py): for each output element,
m = max(x) and s = sum(exp(x - m)) over the reduced positions, each position read from memory
once, by one vectorized loop per chunk.

The reduced positions are walked in the chunks of blocked pairwise summation (pairwise.py: at
most chunk_size() positions of the innermost reduced axis). The partial sums are relative to a
*shift*, which must be near the max (the terms exp(x - shift) then neither overflow nor lose the
largest one to the subnormals). It is not the max, which is known only at the end:

1. every row starts with the shift 0, where x - shift is exact, and keeps it while the chunks'
   maxima stay within ZERO_LEAD of 0: nothing in a row waits for its own elements to choose a
   shift, and a row's results depend on that row alone;
2. one loop over the chunk adds exp(x - shift) and takes the chunk's max, a plain vector max
   under "no nan, no signed zero" (llvm.maximum's NaN and signed-zero handling costs six
   instructions a vector on the loop's dependency chain), read only when the chunk's sum is a
   number (a nan among the positions makes the max poison and the sum nan): the chunk's loads
   overlap its exponentials;
3. the chunk is kept when its max is at most the lead (ZERO_LEAD, then LEAD) above the shift
   (and, until a chunk of the row anchored the shift, at most the lead below it); else (a larger
   max, +inf, nan) the partials are multiplied by exp(shift - max) <= 1 and the chunk is redone
   relative to its max, once;
4. after the row, s = total * exp(shift - m) for every output in one vectorized loop
   (:func:`finish`), not a scalar exponential per row.

Accuracy: the pairwise sums of exp(x - shift), each partial multiplied by the few rescale factors
after it (1 ulp each), then by exp(shift - m), computed in float64 (float32 partials are float64
as in pairwise.py); the shift's distance to the max costs at most ulp(LEAD) / 2 in the terms near
the max after a shift from the data, none with the shift 0.

Special values, as NumPy's two passes give them: a -inf term is exp(-inf) = 0; a row of -inf has
total 0 and exp(shift + inf) = inf: s = nan (NumPy: exp(-inf - -inf)); a +inf max redoes the
chunk relative to +inf, whose terms are 0 or nan (inf - inf): s = nan; a nan makes its term and
s nan. When s is nan, or the max is zero (of either sign), the max is recomputed with
llvm.maximum (a nan wins, -0 < +0), as reduce_max computes it.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from llvmlite import ir as ll

from compiler.backend import pairwise
from compiler.ir import dims

Element = Callable[[list[Any]], Any]
FAST = ("nnan", "nsz")      # the chunk max: a vector max instruction

#: every row starts with the shift 0, where x - shift is exact: a chunk is kept while its max
#: is within ZERO_LEAD of 0 (float64: terms up to exp(500) = 1e217, float32: exp(50) = 5e21, far
#: from overflow, and the largest one far from the subnormals), so that the rows of most data
#: never redo a chunk, and a row's results depend on that row alone (chunked vmap, parallel=True)
ZERO_LEAD = {8: 500.0, 4: 50.0}
#: after a chunk was redone relative to its max, the max of a later chunk may be this far from
#: that shift before the chunk is redone again: the terms near the max are exp(fl(x - shift)),
#: whose rounding (at most ulp(LEAD) / 2: 4 eps) NumPy's exp(x - max) does not have
LEAD = {8: 8.0, 4: 4.0}


def max_sumexp(cg: Any, shape: Sequence[dims.Dim], axes: Sequence[int], out_idx: Sequence[Any],
               elem: ll.Type, element: Element) -> tuple[Any, Any, Any]:
    """(max, total, gap) of element(full index) over `axes` of `shape`, the other axes fixed
    by out_idx (`elem`: the LLVM type of an element, float or double): the sum of exp(x - max)
    is finish(total, gap) (total and gap are float64)."""
    b = cg.b
    block = pairwise.chunk_size(cg, elem)
    nbits = 64 if isinstance(elem, ll.DoubleType) else 32
    bits, wide = ll.IntType(nbits), ll.DoubleType()
    widen = not isinstance(elem, ll.DoubleType)
    ninf, inf, zero, nan = (ll.Constant(elem, v) for v in (float("-inf"), float("inf"), 0.0, float("nan")))
    wzero = ll.Constant(wide, 0.0)

    def wide_(v: Any) -> Any:
        return b.fpext(v, wide) if widen else v

    def key(v: Any) -> Any:
        """The float's bits as an integer ordered as the floats are (-0 < +0): the max of the
        chunks' maxima is an integer max."""
        i = b.bitcast(v, bits)
        return b.xor(i, b.lshr(b.ashr(i, ll.Constant(bits, nbits - 1)), ll.Constant(bits, 1)))

    def unkey(k: Any) -> Any:
        return b.bitcast(key(b.bitcast(k, elem)), elem)

    def smax(a: Any, v: Any) -> Any:
        fn = cg.module.declare_intrinsic("llvm.smax", [bits], ll.FunctionType(bits, [bits, bits]))
        return b.call(fn, [a, v])

    stack = pairwise._Stack(cg, wzero, lambda a, v: b.fadd(a, v))
    leaf, filled = pairwise._slot(cg, wzero), pairwise._slot(cg, cg.index(0))
    acc, tries = pairwise._slot(cg, zero), pairwise._slot(cg, cg.index(0))
    cmax, row_key = pairwise._slot(cg, key(ninf)), pairwise._slot(cg, key(ninf))
    fmax = pairwise._slot(cg, ninf)
    anchored = pairwise._slot(cg, ll.Constant(ll.IntType(1), 0))
    shift = pairwise._slot(cg, zero)
    lead = pairwise._slot(cg, ll.Constant(elem, ZERO_LEAD[nbits // 8]))

    def rescale(factor: Any) -> None:
        """The leaf and every level below the stack's count times `factor`."""
        b.store(b.fmul(b.load(leaf), factor), leaf)
        k, lvl = pairwise._slot(cg, b.load(stack.count)), pairwise._slot(cg, cg.index(0))
        with pairwise._while(cg, lambda: b.icmp_unsigned("!=", b.load(k), cg.index(0))):
            at = b.gep(stack.levels, [b.load(lvl)])
            b.store(b.fmul(b.load(at), factor), at)
            pairwise._shift(cg, k, lvl)

    def chunk(full: Callable[[Any], list[Any]], n: Any) -> None:
        b.store(cg.index(0), tries)
        with pairwise._while(cg, lambda: b.icmp_signed("<", b.load(tries), cg.index(2))):
            at = b.load(shift)
            b.store(zero, acc)
            b.store(ninf, fmax)
            with cg.loop(n, interleave4=True) as t:      # one pass: the max and the sum
                v = element(full(t))
                best = b.load(fmax)
                b.store(b.select(b.fcmp_ordered(">", v, best, flags=FAST), v, best, flags=FAST), fmax)
                term = cg.vecmath("exp", [b.fsub(v, at)])
                b.store(cg.reassoc(b.fadd(b.load(acc), term)), acc)
            # the max under "no nan" is poison when a nan was among the positions, and then
            # the sum is nan: the max is read only when the sum is a number
            total = b.load(acc)
            top = b.select(b.fcmp_unordered("uno", total, total), nan, b.load(fmax))
            b.store(key(top), cmax)
            near = b.fcmp_ordered("oge", top, b.fsub(at, b.load(lead)))
            fits = b.and_(b.fcmp_ordered("ole", top, b.fadd(at, b.load(lead))), b.or_(b.load(anchored), near))
            ok = b.or_(b.or_(fits, b.fcmp_ordered("oeq", top, ninf)),      # -inf: terms are 0
                       b.icmp_signed("!=", b.load(tries), cg.index(0)))
            with b.if_else(ok, likely=True) as (then, otherwise):
                with then:
                    b.store(b.or_(b.load(anchored), near), anchored)
                    b.store(cg.index(2), tries)
                with otherwise:
                    # a max more than LEAD above the shift (or +inf, nan), or far below it
                    # before a chunk anchored it: redo the chunk relative to its max. The
                    # partials (zero until anchored) scale by exp(shift - max) <= 1 (or nan)
                    with b.if_then(b.load(anchored)):
                        rescale(cg.vecmath("exp", [b.fsub(wide_(at), wide_(top))]))
                    b.store(top, shift)
                    b.store(ll.Constant(elem, LEAD[nbits // 8]), lead)
                    b.store(cg.index(1), tries)
        b.store(smax(b.load(row_key), b.load(cmax)), row_key)
        pairwise.into_leaf(cg, stack, leaf, filled, b.fadd(b.load(leaf), wide_(b.load(acc))), n,
                           block, wzero)

    pairwise.over_axes(cg, shape, axes, out_idx, block, chunk)
    m = unkey(b.load(row_key))
    total = stack.total(b.load(leaf))
    # a nan sum (a nan, or +inf, in the rows) or a zero max (the chunk max ignores the sign of
    # zero): the max as reduce_max computes it (a nan wins, -0 < +0)
    exact = pairwise._slot(cg, m)
    odd = b.or_(b.fcmp_unordered("uno", total, total), b.fcmp_ordered("==", m, zero))
    with b.if_then(odd, likely=False):
        b.store(ninf, exact)

        def walk(full: Callable[[Any], list[Any]], n: Any) -> None:
            with cg.loop(n) as t:
                b.store(cg.intrinsic("llvm.maximum", [b.load(exact), element(full(t))]), exact)
        pairwise.over_axes(cg, shape, axes, out_idx, block, walk)
    # the partials are relative to the shift, within LEAD of m: s = total * exp(shift - m), in
    # a vectorized loop over the outputs afterwards (finish). Every position -inf:
    # 0 * exp(shift + inf) is nan, as NumPy's exp(-inf - -inf)
    return b.load(exact), total, b.fsub(wide_(b.load(shift)), wide_(m))


def finish(cg: Any, total: Any, gap: Any) -> Any:
    """The sum of exp(x - max) from max_sumexp's `total` and `gap` (float64 values)."""
    b = cg.b
    factor = cg.vecmath("exp", [gap])
    return b.select(b.fcmp_ordered("oeq", gap, ll.Constant(gap.type, 0.0)), total, b.fmul(total, factor))
