"""The explicit vector variants of sin, cos and tan, and what a kernel's module contains.

Only the variant of the target's natural width has a body (compiler/backend/vecmath/_define.py);
the scalar function and the other widths call it, narrower ones padded with zeros, wider ones
in pieces, and the lanes of huge arguments go through one Payne-Hanek function per module.
Each variant is called directly here, on vectors mixing huge, ordinary and special lanes in
every position, and checked against the correctly rounded result (mpmath); the widths of a
smaller target (128-bit vectors: every wider variant is made of pieces) run on this host too.
"""
from __future__ import annotations

import ctypes
import functools
import re

import llvmlite.ir as ir
import numpy as np
import pytest

from compiler.backend import jit as native, passes, target, vecmath
from compiler.backend.vecmath._define import VECTOR_WIDTHS, natural_width
from tests.backend import vecmath_harness as H
from tests.lazy import lazy_jit

TOL = {"float64": 1.0, "float32": 1.0}      # docs/vecmath.md: every trig function < 1 ULP


def _pool(dtype: str) -> np.ndarray:
    """Ordinary, huge (beyond both fast-path thresholds) and special arguments."""
    if dtype == "float64":
        vals = [0.5, -2.0, 3.0, 1e5, -7e11, 2.0 ** 45, -1e22, 1e300, -1.7976931348623157e308,
                6381956970095103 * 2.0 ** 797, 0.0, -0.0, 1e-310, np.inf, -np.inf, np.nan]
    else:
        vals = [0.5, -2.0, 3.0, 1e4, -7e4, 2.0 ** 21, -1e22, 3e38, -3.4e38,
                16367173 * 2.0 ** 72, 0.0, -0.0, 1e-40, np.inf, -np.inf, np.nan]
    return np.array(vals, dtype=dtype)


def _lanes(pool: np.ndarray, n: int) -> np.ndarray:
    """Rows of n pool indices: all huge, none huge, alternating, one huge lane in each position,
    and every pool value somewhere."""
    huge = [i for i, v in enumerate(pool) if np.isfinite(v) and abs(float(v)) >= 2.0 ** 40]
    small = [i for i, v in enumerate(pool) if i not in huge]
    rows = [[huge[k % len(huge)] for k in range(n)], [small[k % len(small)] for k in range(n)],
            [(huge if k % 2 else small)[k % 3] for k in range(n)]]
    rows += [[huge[(p + k) % len(huge)] if k == p else small[(p + k) % len(small)]
              for k in range(n)] for p in range(n)]
    flat = list(range(len(pool)))
    rows += [[flat[(r * n + k) % len(flat)] for k in range(n)] for r in range(-(-len(flat) // n))]
    return np.array(rows)


@functools.cache
def _reference(name: str, dtype: str) -> np.ndarray:
    """The correctly rounded result for each pool value (nan where none is defined:
    the check below then asks for nan, which sin/cos/tan of inf and nan are)."""
    pool = _pool(dtype)
    out = []
    for v in pool:
        if v == 0:
            out.append(1.0 if name == "cos" else float(v))
            continue
        r = H.correctly_rounded(name, (v,), np.dtype(dtype))
        out.append(float("nan") if r is None else r)
    return np.array(out, dtype=dtype)


class _Variants:
    """Every variant of vecmath `name` for one type and target width, callable on arrays."""

    def __init__(self, name: str, dtype: str, has_fma: bool, vector_bits: int):
        ty = {"float64": ir.DoubleType(), "float32": ir.FloatType()}[dtype]
        module = ir.Module(name=f"variants_{name}")
        user = ir.Function(module, ir.FunctionType(ty, [ty]), "scalar_user")
        b = ir.IRBuilder(user.append_basic_block("entry"))
        b.ret(vecmath.call(b, name, [user.args[0]], has_fma=has_fma, vector_bits=vector_bits))
        self.widths = (1,) + VECTOR_WIDTHS[str(ty)]
        sym = vecmath.symbol(name, ty, fastmath=False, has_fma=has_fma)
        ptr = ir.PointerType()
        for n in self.widths:
            vty = ty if n == 1 else ir.VectorType(ty, n)
            callee = module.globals.get(sym) if n == 1 else \
                ir.Function(module, ir.FunctionType(vty, [vty]), f"{sym}_v{n}")   # defined by link
            fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr, ptr]), f"apply{n}")
            b = ir.IRBuilder(fn.append_basic_block("entry"))
            item = ty.get_abi_size(target.host().machine().target_data)     # unaligned access
            b.store(b.call(callee, [b.load(fn.args[0], typ=vty, align=item)]), fn.args[1], align=item)
            b.ret_void()
        self.module_text = vecmath.link(str(module), module)
        tgt = target.host()
        optimized = passes.optimize(passes.parse(self.module_text, tgt), tgt)
        self._obj = native.LoadedObject(passes.emit_object(optimized, tgt), tgt)
        proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
        self._fns = {n: proto(self._obj.address(f"apply{n}")) for n in self.widths}
        self.dtype = np.dtype(dtype)

    def __call__(self, n: int, x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x, dtype=self.dtype)
        out = np.full(n, 7.0, dtype=self.dtype)
        self._fns[n](x.ctypes.data, out.ctypes.data)
        return out


@functools.cache
def _variants(name: str, dtype: str, has_fma: bool, vector_bits: int) -> _Variants:
    return _Variants(name, dtype, has_fma, vector_bits)


def _check(name: str, dtype: str, got: np.ndarray, idx: np.ndarray, what: str) -> None:
    exact = _reference(name, dtype)[idx]
    nan = np.isnan(exact)
    assert np.array_equal(np.isnan(got), nan), f"{what}: nan lanes {got} for {_pool(dtype)[idx]}"
    err = H.ulp_error(got[~nan], exact[~nan].astype(np.float64))
    assert err.size == 0 or err.max() <= TOL[dtype], \
        f"{what}: {err.max():.3f} ULP at {_pool(dtype)[idx][~nan][np.argmax(err)]!r}"


@pytest.mark.parametrize("vector_bits", [512, 128])
@pytest.mark.parametrize("has_fma", [True, False], ids=["fma", "no-fma"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", ["sin", "cos", "tan"])
def test_every_variant_on_mixed_lanes(name: str, dtype: str, has_fma: bool, vector_bits: int) -> None:
    v = _variants(name, dtype, has_fma, vector_bits)
    pool = _pool(dtype)
    for n in v.widths:
        for row in _lanes(pool, n):
            _check(name, dtype, v(n, pool[row]), row, f"{name}[{dtype}] width {n} lanes {row}")


def test_only_the_natural_width_has_a_body() -> None:
    """One vector body per function, whose slow lanes go through one scalar slow path and one
    Payne-Hanek function per module: the scalar function and the other widths are calls of
    the natural-width variant."""
    for bits in (512, 256, 128):
        text = _variants("sin", "float64", True, bits).module_text
        natural = natural_width(ir.DoubleType(), bits)
        assert natural == bits // 64
        bodies = {m.group(1): m.group(2) for m in re.finditer(
            r'define internal [^@]*@"(aotx_vm_[\w.]+)"\([^)]*\)[^{]*\{(.*?)\n\}', text, flags=re.S)}
        main = f"aotx_vm_sin_f64_v{natural}"
        lanes = f"aotx_vm_sin_f64_lanes_v{natural}"
        assert set(bodies) == {"aotx_vm_sin_f64", "aotx_vm_sin_f64_slow", "aotx_vm_pio2_huge",
                               lanes} | {f"aotx_vm_sin_f64_v{n}" for n in (2, 4, 8)}
        assert f'@"{lanes}"' in bodies[main]
        assert '@"aotx_vm_sin_f64_slow"' in bodies[lanes]
        assert '@"aotx_vm_pio2_huge"' in bodies["aotx_vm_sin_f64_slow"]
        for fn in {"aotx_vm_sin_f64"} | {f"aotx_vm_sin_f64_v{n}" for n in (2, 4, 8)} - {main}:
            assert f'@"{main}"' in bodies[fn] and "slow" not in bodies[fn], fn
            assert bodies[fn].count("\n") < 16, f"{fn} is more than a few shuffles around a call"


_sin_and_cos = lazy_jit(lambda x: np.sin(x) + np.cos(2.0 * x), signature="f64[n]")
_exp_only = lazy_jit(lambda x: np.exp(-x * x), signature="f64[n]")


def test_kernel_modules_hold_only_what_they_call() -> None:
    """A kernel without trig has no trig code; sin and cos share one huge-argument reduction."""
    x = np.linspace(-4, 4, 16)
    exp_ir = _exp_only.lower(x).llvm
    assert "aotx_vm_exp_f64" in exp_ir
    assert not re.search(r"aotx_vm_(sin|cos|tan|pio2)", exp_ir)
    trig_ir = _sin_and_cos.lower(x).llvm
    assert len(re.findall(r'define internal [^@]*@"aotx_vm_pio2_huge"', trig_ir)) == 1
    for fn in ("sin", "cos"):
        defined = re.findall(rf'define internal [^@]*@"aotx_vm_{fn}_f64(_v\d+)?"', trig_ir)
        assert sorted(defined) == ["", "_v2", "_v4", "_v8"]


def test_kernel_on_every_length_with_huge_lanes() -> None:
    """The compiled loop (main vector loop, vector epilogue, scalar remainder: whichever
    variants LLVM picks for each length) against mpmath, huge lanes anywhere."""
    keep = [0, 1, 2, 3, 4, 5, 6, 7, 9]                  # finite, nonzero, 2x finite
    pool, sin_exact = _pool("float64")[keep], _reference("sin", "float64")[keep]
    cos2_exact = np.array([H.correctly_rounded("cos", (2.0 * v,), np.dtype("float64")) for v in pool])
    for n in range(1, 35):
        idx = (np.arange(n) * 7 + n) % len(pool)
        got = _sin_and_cos(pool[idx])
        want = sin_exact[idx].astype(np.longdouble) + cos2_exact[idx].astype(np.longdouble)
        # each term within 1 ULP (<= 2^-52 below 1), the sum rounded once (<= 2^-52 below 2)
        assert np.all(np.abs(got - want) <= 3 * 2.0 ** -52), (n, got, want)


def _shared(x):
    return np.abs(x) * np.tanh(x) + np.sqrt(np.abs(x)) * np.arcsinh(np.sin(x))


_shared_intrinsics = lazy_jit(_shared, signature="f64[n]")


def test_linked_functions_share_the_kernels_declarations() -> None:
    """llvm.fabs and llvm.sqrt, declared by the kernel's own code (abs, sqrt) and by the vecmath
    bodies linked into its text (tanh, arcsinh), are declared once (LLVM rejects a second
    declaration)."""
    x = np.concatenate([np.linspace(-6, 6, 37), [1e22, -3e300]])
    text = _shared_intrinsics.lower(x).llvm
    for fn in ("llvm.fabs.f64", "llvm.sqrt.f64"):
        assert len(re.findall(rf'^declare [^\n]*@"{re.escape(fn)}"\(', text, flags=re.M)) == 1, fn
    np.testing.assert_allclose(_shared_intrinsics(x), _shared(x), rtol=1e-13, atol=1e-300)
