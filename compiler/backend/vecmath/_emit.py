"""Type-generic floating-point emission helpers shared by every vecmath kernel.

An :class:`Em` wraps an ``llvmlite.ir.IRBuilder`` together with one floating type -- a scalar
``double``/``float`` or a vector of them -- and offers the vocabulary the kernels are written
in: constants, arithmetic, comparisons and selects, bit casts, exact products and sums
(Dekker/Knuth error-free transformations), Horner polynomials and power-of-two scaling.
Kernels written against it are branch-free, so the same code is emitted into a scalar
``alwaysinline`` function (vectorized later by LoopVectorize) or directly into an explicit
``<N x double>`` vector function.

Error-free transformations follow Muller et al., "Handbook of Floating-Point Arithmetic",
2nd ed., ch. 4 (Fast2Sum, 2Sum, 2MultFMA, Veltkamp splitting + Dekker's product).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

import llvmlite.ir as ir

F64, F32 = ir.DoubleType(), ir.FloatType()
_h = float.fromhex  # exact constants are written as C99 hex literals


@dataclass(frozen=True)
class Fmt:
    """Layout of an IEEE binary format: precision and exponent field."""

    name: str
    bits: int
    mant: int  # explicit mantissa bits
    bias: int

    @property
    def emax(self) -> int:
        return self.bias


FMT = {"double": Fmt("f64", 64, 52, 1023), "float": Fmt("f32", 32, 23, 127)}


def scalar_of(ty: ir.Type) -> ir.Type:
    return ty.element if isinstance(ty, ir.VectorType) else ty


def lanes(ty: ir.Type) -> int | None:
    return ty.count if isinstance(ty, ir.VectorType) else None


def _suffix(ty: ir.Type) -> str:
    base = {"double": "f64", "float": "f32", "i64": "i64", "i32": "i32", "i1": "i1"}
    sc = scalar_of(ty)
    n = lanes(ty)
    return f"v{n}{base[str(sc)]}" if n else base[str(sc)]


def intrinsic(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    """Declare (once) the overloaded intrinsic `name` for the given types."""
    full = f"{name}.{_suffix(ret if ret != ir.IntType(1) else args[0])}"
    fn = module.globals.get(full)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, args), full)
    return fn


class Em:
    """Emitter for one floating type (scalar or vector) at a builder position."""

    def __init__(self, builder: ir.IRBuilder, ty: ir.Type, *, has_fma: bool = True):
        self.b = builder
        self.ty = ty
        self.sty = scalar_of(ty)
        self.n = lanes(ty)
        self.fmt = FMT[str(self.sty)]
        self.has_fma = has_fma
        self.ity = self._vec(ir.IntType(self.fmt.bits))
        self.i32ty = self._vec(ir.IntType(32))

    def _vec(self, sc: ir.Type) -> ir.Type:
        return ir.VectorType(sc, self.n) if self.n else sc

    def like(self, sty: ir.Type) -> "Em":
        """An emitter at the same position for another scalar type, same lane count."""
        return Em(self.b, self._vec(sty), has_fma=self.has_fma)

    # -- constants ---------------------------------------------------------------------------
    def c(self, v: float) -> ir.Constant:
        if self.sty == F32:
            v = struct.unpack("f", struct.pack("f", v))[0]
        k = ir.Constant(self.sty, v)
        return ir.Constant(self.ty, [k] * self.n) if self.n else k

    def ci(self, v: int, ty: ir.Type | None = None) -> ir.Constant:
        ty = ty or self.ity
        sc = scalar_of(ty)
        k = ir.Constant(sc, v & ((1 << sc.width) - 1))
        return ir.Constant(ty, [k] * ty.count) if isinstance(ty, ir.VectorType) else k

    # -- arithmetic --------------------------------------------------------------------------
    def add(self, a, b):
        return self.b.fadd(a, b)

    def sub(self, a, b):
        return self.b.fsub(a, b)

    def mul(self, a, b):
        return self.b.fmul(a, b)

    def div(self, a, b):
        return self.b.fdiv(a, b)

    def neg(self, a):
        return self.b.fneg(a)

    def _call(self, name: str, *args, ret=None):
        ret = ret or self.ty
        fn = intrinsic(self.b.module, name, ret, [a.type for a in args])
        return self.b.call(fn, list(args))

    def fma(self, a, b, c):
        """Fused a*b+c with a single rounding (only use when has_fma or exactness is moot)."""
        return self._call("llvm.fma", a, b, c)

    def mla(self, a, b, c):
        """a*b+c, fused when the target can (polynomial evaluation)."""
        return self._call("llvm.fmuladd", a, b, c)

    def fabs(self, a):
        return self._call("llvm.fabs", a)

    def copysign(self, mag, sgn):
        return self._call("llvm.copysign", mag, sgn)

    def rint(self, a):
        return self._call("llvm.rint", a)

    def floor(self, a):
        return self._call("llvm.floor", a)

    def sqrt(self, a):
        return self._call("llvm.sqrt", a)

    def fpext(self, a, to: "Em"):
        return self.b.fpext(a, to.ty)

    def fptrunc(self, a, to: "Em"):
        return self.b.fptrunc(a, to.ty)

    # -- comparisons and selects -------------------------------------------------------------
    def cmp(self, op: str, a, b):
        """Ordered comparison (false when either side is nan); op in <,<=,>,>=,==."""
        return self.b.fcmp_ordered(op, a, b)

    def cmpu(self, op: str, a, b):
        """Unordered comparison (true when either side is nan); op in <,<=,>,>=,==,!=."""
        return self.b.fcmp_unordered(op, a, b)

    def isnan(self, a):
        return self.b.fcmp_unordered("uno", a, a)

    def sel(self, cond, a, b):
        return self.b.select(cond, a, b)

    def and_(self, a, b):
        return self.b.and_(a, b)

    def or_(self, a, b):
        return self.b.or_(a, b)

    def not_(self, a):
        return self.b.not_(a)

    # -- bits ----------------------------------------------------------------------------------
    def bits(self, a):
        return self.b.bitcast(a, self.ity)

    def from_bits(self, i):
        return self.b.bitcast(i, self.ty)

    def pow2(self, k):
        """2**k for an integer k (of self.ity) with emin <= k <= emax (a normal number)."""
        e = self.b.add(k, self.ci(self.fmt.bias))
        return self.from_bits(self.b.shl(e, self.ci(self.fmt.mant)))

    def scale(self, a, k):
        """a * 2**k, rounded once, with gradual underflow and overflow to inf.

        The factor is split in two halves so each is a normal power of two for
        |k| <= 2*emax; the first product is exact for |a| in [0.5, 2).
        """
        k1 = self.b.ashr(k, self.ci(1))
        k2 = self.b.sub(k, k1)
        return self.mul(self.mul(a, self.pow2(k1)), self.pow2(k2))

    def round_to_int(self, a):
        """(n, n_int): a rounded to nearest as float and as integer of self.ity.

        Uses the 1.5*2^p shifter trick, valid for |a| < 2^(p-2); avoids fptosi, whose
        result is poison on nan/inf input.
        """
        shifter = self.c(1.5 * 2.0 ** self.fmt.mant)
        t = self.add(a, shifter)
        n = self.sub(t, shifter)
        n_int = self.b.sub(self.bits(t), self.bits(shifter))
        return n, n_int

    def round_mul_to_int(self, a, c: float):
        """(n, n_int) for a*c rounded to nearest: as round_to_int(a*c), but the product and
        the shifter addition are one fmuladd (one rounding, 3 cycles less latency with FMA)."""
        shifter = self.c(1.5 * 2.0 ** self.fmt.mant)
        t = self.mla(a, self.c(c), shifter)
        n = self.sub(t, shifter)
        return n, self.b.sub(self.bits(t), self.bits(shifter))

    def iand(self, a, m: int):
        return self.b.and_(a, self.ci(m, a.type))

    # -- polynomials -------------------------------------------------------------------------
    def horner(self, x, coeffs):
        """sum(coeffs[i] * x**i) by Horner's rule with fmuladd."""
        acc = self.c(coeffs[-1])
        for c in reversed(coeffs[:-1]):
            acc = self.mla(acc, x, self.c(c))
        return acc

    def estrin(self, x, coeffs, x2=None):
        """sum(coeffs[i] * x**i) by Estrin's scheme: dependency depth ~log2(n) instead of n.

        The loops are throughput-bound only when several iterations overlap; long Horner
        chains make them latency-bound (measured 1.3x slower for the degree-12 exp).
        """
        x2 = x2 if x2 is not None else self.mul(x, x)
        terms = [self.mla(self.c(coeffs[i + 1]), x, self.c(coeffs[i])) if i + 1 < len(coeffs)
                 else self.c(coeffs[i]) for i in range(0, len(coeffs), 2)]
        power = x2
        while len(terms) > 1:
            terms = [self.mla(terms[i + 1], power, terms[i]) if i + 1 < len(terms) else terms[i]
                     for i in range(0, len(terms), 2)]
            if len(terms) > 1:
                power = self.mul(power, power)
        return terms[0]

    # -- error-free transformations ----------------------------------------------------------
    def fast_two_sum(self, a, b):
        """(s, e) with s + e == a + b exactly, given |a| >= |b| (or a == 0)."""
        s = self.add(a, b)
        return s, self.add(self.sub(a, s), b)

    def two_sum(self, a, b):
        """(s, e) with s + e == a + b exactly, any magnitudes (Knuth)."""
        s = self.add(a, b)
        bb = self.sub(s, a)
        e = self.add(self.sub(a, self.sub(s, bb)), self.sub(b, bb))
        return s, e

    def split(self, a):
        """Veltkamp split: a == hi + lo with hi holding the top half of the mantissa."""
        factor = self.c(2.0 ** ((self.fmt.mant + 2) // 2) + 1.0)
        t = self.mul(a, factor)
        hi = self.sub(t, self.sub(t, a))
        return hi, self.sub(a, hi)

    def two_prod(self, a, b):
        """(p, e) with p + e == a * b exactly (barring over/underflow)."""
        p = self.mul(a, b)
        if self.has_fma:
            return p, self.fma(a, b, self.neg(p))
        ah, al = self.split(a)
        bh, bl = self.split(b)
        e = self.add(self.sub(self.mul(ah, bh), p), self.mul(ah, bl))
        e = self.add(self.add(e, self.mul(al, bh)), self.mul(al, bl))
        return p, e

    def exact_fms(self, a, b, c):
        """c - a*b with the product error included: used for Newton/division residuals,
        where c ~= a*b so the result is exactly representable."""
        if self.has_fma:
            return self.fma(self.neg(a), b, c)
        p, e = self.two_prod(a, b)
        return self.sub(self.sub(c, p), e)

    # -- double-double helpers -----------------------------------------------------------------
    def dd_mul_d(self, hi, lo, b):
        """(hi + lo) * b as an unnormalised pair."""
        p, e = self.two_prod(hi, b)
        return p, self.mla(lo, b, e)

    def dd_mul(self, ahi, alo, bhi, blo):
        """(ahi + alo) * (bhi + blo) as an unnormalised pair (error ~ 2^-100 relative)."""
        p, e = self.two_prod(ahi, bhi)
        e = self.mla(ahi, blo, e)
        return p, self.mla(alo, bhi, e)

    def dd_div(self, nhi, nlo, dhi, dlo):
        """(nhi + nlo) / (dhi + dlo) as a pair, with one division."""
        r = self.div(self.c(1.0), dhi)
        q = self.mul(nhi, r)
        rem = self.exact_fms(q, dhi, nhi)
        rem = self.add(rem, self.sub(nlo, self.mul(q, dlo)))
        q2 = self.mul(rem, r)
        return self.fast_two_sum(q, q2)
