"""Compile the decompositions of compiler/primitives/complexmath.py into native kernels of
real arrays: one kernel per dtype takes (re, im) (or (ar, ai, br, bi)) as f64[n]/f32[n] and
returns every requested function's parts, so the tests and benchmarks/complex_accuracy.py
exercise the backend's fused, vectorized loops. NumPy's complex functions are the oracle."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from compiler import pipeline
from compiler.backend import target
from compiler.ir.builder import Builder, new_block
from compiler.ir.core import Function, SourceLoc
from compiler.ir.types import parse_type
from compiler.primitives import complexmath as C
from runtime.abi import parse_spec
from runtime.loader import NativeKernel

SHORT = {np.dtype(np.float64): "f64", np.dtype(np.float32): "f32"}

#: name -> the decomposition
UNARY: dict[str, Callable[..., Any]] = {
    **C.COMPLEX_UNARY,
    "absolute": C.cabs, "angle": C.cangle, "isfinite": C.cisfinite, "isnan": C.cisnan, "isinf": C.cisinf,
}
BINARY: dict[str, Callable[..., Any]] = dict(C.COMPLEX_BINARY)

NUMPY_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    name: getattr(np, name) for name in UNARY if hasattr(np, name)}
NUMPY_UNARY["negative"] = np.negative
NUMPY_BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
                "divide": np.divide, "power": np.power}


class Compiled:
    """A kernel computing `names` (keys of UNARY, or of BINARY with ``binary=True``; with
    ``powers`` the names label ``cpow_scalar(z, p)`` for each p); call(*zs) -> {name: complex
    array, or a real/bool array}."""

    def __init__(self, names: Sequence[str], dtype: Any, binary: bool = False,
                 powers: Sequence[float | complex] = ()) -> None:
        self.names, self.dtype = list(names), np.dtype(dtype)
        nin = 4 if binary else 2
        t = parse_type(f"{SHORT[self.dtype]}[n]")
        block = new_block([t] * nin)
        b = Builder(block, SourceLoc(__file__, 1))
        results, self.layout = [], []
        for k, name in enumerate(self.names):
            if powers:
                out = C.cpow_scalar(b, *block.args, powers[k])
            else:
                out = (BINARY if binary else UNARY)[name](b, *block.args)
            out = out if isinstance(out, tuple) else (out,)
            self.layout.append(len(out))
            results.extend(out)
        block.results = results
        fn = Function("cm_" + "_".join(self.names)[:40].replace(".", "_").replace("-", "m"), block)
        self.art = pipeline.compile_ir(fn, fn.name, target.host())
        obj = pipeline.load(self.art)
        ins = [parse_spec(f"a{i}", str(ty)) for i, ty in enumerate(fn.in_types)]
        outs = [parse_spec(f"r{i}", str(ty)) for i, ty in enumerate(self.art.ir_optimized.out_types)]
        self.kernel = NativeKernel(fn.name, obj.address(fn.name), ins, outs, self.art.symbols, obj)

    def __call__(self, *zs: np.ndarray) -> dict[str, np.ndarray]:
        parts = []
        for z in zs:
            z = np.asarray(z)
            parts += [np.ascontiguousarray(z.real, self.dtype), np.ascontiguousarray(z.imag, self.dtype)]
        flat = self.kernel(*parts)
        flat = flat if isinstance(flat, (list, tuple)) else [flat]
        out, k = {}, 0
        for name, n in zip(self.names, self.layout):
            if n == 2:
                ctype = np.complex128 if self.dtype == np.float64 else np.complex64
                v = np.empty(flat[k].shape, ctype)
                v.real, v.imag = flat[k], flat[k + 1]
                out[name] = v
            else:
                out[name] = flat[k]
            k += n
        return out


def complex_dtype(dtype: Any) -> np.dtype:
    return np.dtype(np.complex128 if np.dtype(dtype) == np.float64 else np.complex64)


def special_values(dtype: Any) -> np.ndarray:
    """Every pair of re, im from the edge values: zeros of both signs, +-1, +-inf, nan,
    the smallest subnormal, the largest finite value and a few ordinary numbers."""
    fi = np.finfo(dtype)
    v = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, np.inf, -np.inf, np.nan,
         float(fi.tiny), float(fi.smallest_subnormal), -float(fi.smallest_subnormal),
         float(fi.max), -float(fi.max), 1e-300 if np.dtype(dtype) == np.float64 else 1e-40,
         float(fi.max) / 4, 700.0, 710.0, -710.0, 88.0, 89.0, 1e10, -1e10]
    v = np.array(v, dtype)
    re, im = np.meshgrid(v, v)
    z = np.empty(re.size, complex_dtype(dtype))
    z.real, z.imag = re.ravel(), im.ravel()
    return z
