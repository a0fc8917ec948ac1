"""Compile and run vecmath loop kernels; measure ULP errors against high-precision references.

``compile_kernel(name, dtype, fastmath)`` builds ``void f(const T* x, [const T* y,] T* out,
i64 n)`` (the loop shape the backend emits: scalar body, noalias pointers) through the real
pipeline (``passes.parse`` -> ``passes.optimize`` -> ``emit_object`` -> ``jit.LoadedObject``)
and returns a NumPy-callable.  ``ulp_error`` compares against a reference computed in
``np.longdouble`` (x87 80-bit, 64-bit mantissa) or float64 for float32 results.
"""
from __future__ import annotations

import ctypes
import functools

import llvmlite.ir as ir
import mpmath
import numpy as np

from compiler.backend import jit, passes, target, vecmath

_TY = {np.float64: ir.DoubleType(), np.float32: ir.FloatType()}
NARGS = {"arctan2": 2, "pow": 2, "hypot": 2}


def kernel_ir(name: str, dtype, fastmath: bool = False, has_fma: bool | None = None) -> str:
    """LLVM IR text of the loop kernel ``kernel`` applying vecmath `name` elementwise."""
    if has_fma is None:
        has_fma = target.host().has_fma
    ty = _TY[np.dtype(dtype).type]
    nargs = NARGS.get(name, 1)
    ptr = ir.PointerType()
    module = ir.Module(name=f"vm_{name}")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr] * (nargs + 1) + [ir.IntType(64)]),
                     "kernel")
    for a in fn.args[:-1]:
        a.add_attribute("noalias")
    entry, loop, done = (fn.append_basic_block(n) for n in ("entry", "loop", "done"))
    b = ir.IRBuilder(entry)
    n = fn.args[-1]
    b.cbranch(b.icmp_signed(">", n, ir.Constant(n.type, 0)), loop, done)
    b.position_at_end(loop)
    i = b.phi(n.type)
    i.add_incoming(ir.Constant(n.type, 0), entry)
    vals = [b.load(b.gep(p, [i], source_etype=ty), typ=ty) for p in fn.args[:nargs]]
    res = vecmath.call(b, name, vals, fastmath=fastmath, has_fma=has_fma,
                       vector_bits=target.host().vector_bits)
    b.store(res, b.gep(fn.args[nargs], [i], source_etype=ty))
    i1 = b.add(i, ir.Constant(n.type, 1))
    i.add_incoming(i1, loop)
    b.cbranch(b.icmp_signed("<", i1, n), loop, done)
    b.position_at_end(done)
    b.ret_void()
    return vecmath.link(str(module), module)


class Kernel:
    """A compiled elementwise kernel callable on NumPy arrays."""

    def __init__(self, name: str, dtype, fastmath: bool = False, has_fma: bool | None = None):
        tgt = target.host()
        ir_text = kernel_ir(name, dtype, fastmath, has_fma)
        module = passes.optimize(passes.parse(ir_text, tgt), tgt)
        self.asm = passes.emit_assembly(module, tgt)
        self.optimized_ir = str(module)
        self._obj = jit.LoadedObject(passes.emit_object(module, tgt), tgt)
        self.nargs = NARGS.get(name, 1)
        self.dtype = np.dtype(dtype)
        proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * (self.nargs + 1)), ctypes.c_int64)
        self._fn = proto(self._obj.address("kernel"))

    def __call__(self, *args: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        arrs = [np.ascontiguousarray(a, dtype=self.dtype) for a in args]
        arrs = np.broadcast_arrays(*arrs)
        arrs = [np.ascontiguousarray(a) for a in arrs]
        if out is None:
            out = np.empty_like(arrs[0])
        self._fn(*[a.ctypes.data for a in arrs], out.ctypes.data, out.size)
        return out


@functools.cache
def compile_kernel(name: str, dtype: str, fastmath: bool = False,
                   has_fma: bool | None = None) -> Kernel:
    """Cached per process: each (function, dtype, mode) is compiled once.

    has_fma=False emits the code for targets without FMA (Dekker products, 32-bit pi/2
    chunks); it still runs here, which is how that path is tested."""
    return Kernel(name, dtype, fastmath, has_fma)


# -- references and ULP error ---------------------------------------------------------------
_LD = np.longdouble
_REF = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log10": np.log10, "log1p": np.log1p, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "tanh": np.tanh, "sinh": np.sinh, "cosh": np.cosh, "arcsin": np.arcsin,
    "arccos": np.arccos, "arctan": np.arctan, "arctan2": np.arctan2, "pow": np.power,
    "hypot": np.hypot, "cbrt": np.cbrt,
    "arcsinh": np.arcsinh, "arccosh": np.arccosh, "arctanh": np.arctanh,
}


def reference(name: str, *args: np.ndarray) -> np.ndarray:
    """High-precision reference: longdouble for float64 inputs, float64 for float32."""
    wide = _LD if args[0].dtype == np.float64 else np.float64
    with np.errstate(all="ignore"):
        return _REF[name](*[a.astype(wide) for a in args])


_MP = {
    "exp": lambda x: mpmath.exp(x), "exp2": lambda x: mpmath.power(2, x),
    "expm1": lambda x: mpmath.expm1(x), "log": lambda x: mpmath.log(x),
    "log2": lambda x: mpmath.log(x, 2), "log10": lambda x: mpmath.log10(x),
    "log1p": lambda x: mpmath.log1p(x), "sin": lambda x: mpmath.sin(x),
    "cos": lambda x: mpmath.cos(x), "tan": lambda x: mpmath.tan(x), "tanh": lambda x: mpmath.tanh(x),
    "sinh": lambda x: mpmath.sinh(x), "cosh": lambda x: mpmath.cosh(x),
    "arcsin": lambda x: mpmath.asin(x), "arccos": lambda x: mpmath.acos(x),
    "arctan": lambda x: mpmath.atan(x), "arctan2": lambda y, x: mpmath.atan2(y, x),
    "pow": lambda x, y: mpmath.power(x, y), "hypot": lambda x, y: mpmath.hypot(x, y),
    "cbrt": lambda x: mpmath.cbrt(x) if x >= 0 else -mpmath.cbrt(-x),
    "arcsinh": lambda x: mpmath.asinh(x), "arccosh": lambda x: mpmath.acosh(x),
    "arctanh": lambda x: mpmath.atanh(x),
}


def correctly_rounded(name: str, args: tuple, dtype) -> float | None:
    """``name(*args)`` computed with mpmath (300 bits) and rounded once, to nearest even, to
    `dtype`, subnormals and overflow included: the answer a correctly rounded library gives.

    None where there is no such independent answer: non-finite arguments, or an exact zero
    (IEEE fixes its sign case by case); nan for a result outside the real domain."""
    if not all(np.isfinite(a) for a in args):
        return None
    fi = np.finfo(dtype)
    with mpmath.workprec(300):
        try:
            v = _MP[name](*[mpmath.mpf(float(a)) for a in args])
        except (ValueError, ZeroDivisionError):
            return float("nan")
        if isinstance(v, mpmath.mpc):
            if v.imag != 0:
                return float("nan")
            v = v.real
        if v == 0 or not mpmath.isfinite(v):
            return None
        e = int(mpmath.floor(mpmath.log(abs(v), 2)))
        quantum = mpmath.ldexp(1, max(e, fi.minexp) - fi.nmant)     # the spacing at |v|
        r = mpmath.nint(v / quantum) * quantum                       # ties to even
        if abs(r) > mpmath.mpf(float(fi.max)):
            return float("inf") if v > 0 else float("-inf")
        out = float(r)
        return out if out != 0 else (-0.0 if v < 0 else 0.0)


def ulp_error(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|got - exact| / ulp(exact) in got's dtype; 0 where both agree on nan/inf/equal.

    ulp(y) is the spacing of got's dtype at |y| rounded to that dtype (np.spacing), with
    subnormal spacing at the bottom; a finite result where inf is expected (or vice versa)
    counts as inf.
    """
    dt = got.dtype
    with np.errstate(all="ignore"):
        ex_r = exact.astype(dt)
        mag = np.abs(ex_r)
        below = np.spacing(np.nextafter(mag, dt.type(0)))
        # exact just below a power of two that rounds up to it: the spacing below applies
        spacing = np.where(np.abs(exact) < mag, below, np.spacing(mag)).astype(exact.dtype)
        err = np.abs(got.astype(exact.dtype) - exact) / spacing
    same = ((got == ex_r) & ~np.isfinite(ex_r)) | (np.isnan(got) & np.isnan(exact))
    err = np.where(same, 0.0, err)
    err = np.where(np.isnan(err), np.inf, err)
    return err.astype(np.float64)


def log_spaced(dtype, n: int, lo_exp: float, hi_exp: float, signs: bool = True,
               seed: int = 0) -> np.ndarray:
    """n values with log-uniform magnitudes in [2^lo_exp, 2^hi_exp] (both signs)."""
    rng = np.random.default_rng(seed)
    mag = np.exp2(rng.uniform(lo_exp, hi_exp, n))
    if signs:
        mag *= rng.choice([-1.0, 1.0], n)
    return mag.astype(dtype)


def uniform(dtype, n: int, lo: float, hi: float, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).uniform(lo, hi, n).astype(dtype)
