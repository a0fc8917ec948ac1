"""The coverage table: NumPy's public functions, tried under jit, vmap, grad and jvp.

    python -m tests.coverage                 # all cases; writes docs/coverage.md
    python -m tests.coverage np.diff np.fft  # the cases whose name starts with these
    python -m tests.coverage --print         # print the table, write nothing

Every case is one function as a user calls it (``np.diff(x, n=2, axis=0)``), with sample
arguments. Each mode compares with an oracle that does not involve aotx:

* jit: the compiled function == the function run by NumPy;
* vmap: the function vmapped over a batch of three first arguments == a Python loop;
* grad: the gradient of a scalar loss of the output (in the first argument) against a
  central difference along a random direction (tests/fd.py);
* jvp: the tangent output against the same difference of the function itself.

A mode is "n/a" where it has no meaning: vmap of a function without an array argument,
grad and jvp of a function that is not differentiable in its first argument (integer, bool
or piecewise-constant results, integer inputs). A function whose result shape depends on
the input values (``np.nonzero``, plain ``np.unique``) cannot be compiled by design and is
listed with the error it raises (docs/guide.md, "Shapes").

tests/test_coverage.py reads the committed table and fails when a mode marked supported
there stops working, so the table cannot claim what the compiler does not do.
"""
from __future__ import annotations

import re
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

import compiler
from tests import fd

try:
    import scipy.special as sp
except ImportError:               # the scipy.special rows are then "not installed"
    sp = None

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "docs" / "coverage.md"
MODES = ("jit", "vmap", "grad", "jvp")
YES, NO, NA = "yes", "no", "n/a"


@dataclass
class Case:
    """One function call: ``fn(*args(rng))``; `diff`: differentiable in the first argument."""

    name: str
    family: str
    fn: Callable[..., Any]
    args: Callable[[np.random.Generator], tuple]
    diff: bool = True
    canon: Callable[[Any], Any] | None = None     # applied to both results before comparing
    needs: str = ""                              # an optional module the case needs
    rtol: float = 1e-7
    raises: type[Exception] | None = None        # NumPy raises this on the sample: so must aotx
    results: dict[str, str] = field(default_factory=dict)


# ---- sample arguments ------------------------------------------------------------------------

def x45(r: np.random.Generator) -> tuple:
    return (r.standard_normal((4, 5)),)


def pos45(r: np.random.Generator) -> tuple:
    return (r.uniform(0.5, 2.0, (4, 5)),)


def unit45(r: np.random.Generator) -> tuple:
    return (r.uniform(-0.9, 0.9, (4, 5)),)


def above1(r: np.random.Generator) -> tuple:
    return (r.uniform(1.2, 3.0, (4, 5)),)


def two45(r: np.random.Generator) -> tuple:
    return (r.standard_normal((4, 5)), r.standard_normal((4, 5)))


def vec8(r: np.random.Generator) -> tuple:
    return (r.standard_normal(8),)


def int45(r: np.random.Generator) -> tuple:
    return (r.integers(-20, 20, (4, 5)),)


def uint45(r: np.random.Generator) -> tuple:
    return (r.integers(0, 6, (4, 5)),)


def int2(r: np.random.Generator) -> tuple:
    return (r.integers(0, 64, (4, 5)), r.integers(1, 5, (4, 5)))


def bool2(r: np.random.Generator) -> tuple:
    return (r.random((4, 5)) < 0.5, r.random((4, 5)) < 0.5)


def square(r: np.random.Generator) -> tuple:
    return (r.standard_normal((4, 4)) + 4 * np.eye(4),)


def spd(r: np.random.Generator) -> tuple:
    a = r.standard_normal((4, 4))
    return (a @ a.T + 4 * np.eye(4),)


def symmetric(r: np.random.Generator) -> tuple:
    a = r.standard_normal((4, 4))
    return (a + a.T + np.diag([0.0, 3.0, 6.0, 9.0]),)


def square_rhs(r: np.random.Generator) -> tuple:
    return (r.standard_normal((4, 4)) + 4 * np.eye(4), r.standard_normal(4))


def tall(r: np.random.Generator) -> tuple:
    return (r.standard_normal((6, 4)) + np.eye(6, 4) * 3,)


def mat_mat(r: np.random.Generator) -> tuple:
    return (r.standard_normal((4, 5)), r.standard_normal((5, 3)))


def vec_vec(r: np.random.Generator) -> tuple:
    return (r.standard_normal(3), r.standard_normal(3))


def signal(r: np.random.Generator) -> tuple:
    return (r.standard_normal((3, 12)),)


def probs(r: np.random.Generator) -> tuple:
    return (r.uniform(0.05, 0.95, (4, 5)),)


def with_nans(r: np.random.Generator) -> tuple:
    x = r.standard_normal((4, 5))
    x[1, 2] = x[3, 0] = np.nan
    return (x,)


def sorted_and_values(r: np.random.Generator) -> tuple:
    return (np.sort(r.standard_normal(10)), r.standard_normal(6))


# ---- canonical forms of results that are defined up to sign or order --------------------------

def _sign_columns(v: np.ndarray) -> np.ndarray:
    """Columns of `v` with the sign that makes the largest entry of each positive."""
    idx = np.argmax(np.abs(v), axis=-2)[..., None, :]
    return v * np.sign(np.take_along_axis(v, idx, axis=-2))


def _eig_sorted(out: Any) -> Any:
    w = np.asarray(out[0] if isinstance(out, tuple) else out)
    return np.sort_complex(w)


# ---- sign-invariant spellings for AD (eigenvectors are defined up to sign) --------------------

def eigh_invariant(a):
    w, v = np.linalg.eigh(a)
    return w, v * v


def svd_invariant(a):
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    return u * u, s, vt * vt


def qr_invariant(a):
    q, r = np.linalg.qr(a)
    return q * q, r * r


# ---- the cases -------------------------------------------------------------------------------

def _unary(family: str, names: str, args: Callable = x45, diff: bool = True) -> list[Case]:
    """Elementwise functions of one array: ``np.<name>(x)``."""
    out = []
    for name in names.split():
        f = getattr(np, name)
        out.append(Case(f"np.{name}", family, _bind1(f), args, diff))
    return out


def _binary(family: str, names: str, args: Callable = two45, diff: bool = True) -> list[Case]:
    out = []
    for name in names.split():
        f = getattr(np, name)
        out.append(Case(f"np.{name}", family, _bind2(f), args, diff))
    return out


def _bind1(f: Callable) -> Callable:
    def call(x):
        return f(x)
    call.__qualname__ = call.__name__ = getattr(f, "__name__", "call")
    return call


def _bind2(f: Callable) -> Callable:
    def call(x, y):
        return f(x, y)
    call.__qualname__ = call.__name__ = getattr(f, "__name__", "call")
    return call


def _special(names: str, args: Callable = pos45, diff: bool = True) -> list[Case]:
    out = []
    for name in names.split():
        f = getattr(sp, name) if sp is not None else None
        out.append(Case(f"scipy.special.{name}", "scipy.special", _bind1(f) if f else _missing,
                        args, diff, needs="scipy"))
    return out


def _missing(x):
    raise ImportError("scipy is not installed")


ARRAY_API = "Array API standard"
EVERYDAY = "NumPy's everyday functions"
LINALG = "numpy.linalg"
FFT = "numpy.fft"

CASES: list[Case] = [
    # -- the Array API standard: elementwise
    *_unary(ARRAY_API, "abs negative positive square exp expm1 sin cos tan sinh cosh tanh "
                       "arctan arcsinh sign sqrt cbrt"),
    *_unary(ARRAY_API, "acos asin atanh", unit45),
    *_unary(ARRAY_API, "log log1p log2 log10", pos45),
    *_unary(ARRAY_API, "acosh", above1),
    *_unary(ARRAY_API, "ceil floor trunc rint round signbit isfinite isinf isnan", diff=False),
    *_unary(ARRAY_API, "logical_not", lambda r: bool2(r)[:1], diff=False),
    *_unary(ARRAY_API, "bitwise_invert", int45, diff=False),
    *_binary(ARRAY_API, "add subtract multiply divide maximum minimum hypot logaddexp atan2 "
                        "copysign"),
    *_binary(ARRAY_API, "equal not_equal less less_equal greater greater_equal", diff=False),
    *_binary(ARRAY_API, "logical_and logical_or logical_xor", bool2, diff=False),
    *_binary(ARRAY_API, "bitwise_and bitwise_or bitwise_xor bitwise_left_shift bitwise_right_shift "
                        "floor_divide remainder", int2, diff=False),
    Case("np.pow", ARRAY_API, lambda x: np.pow(x, 2.5), pos45),
    Case("np.conj", ARRAY_API, lambda x: np.conj(x * (1 + 2j)), x45),
    Case("np.real", ARRAY_API, lambda x: np.real(x * (1 + 2j)), x45),
    Case("np.imag", ARRAY_API, lambda x: np.imag(x * (1 + 2j)), x45),
    Case("np.clip", ARRAY_API, lambda x: np.clip(x, -0.5, 0.7), x45),
    Case("np.nextafter", ARRAY_API, lambda x: np.nextafter(x, 0.0), x45, diff=False),
    # -- the Array API standard: creation, manipulation, searching, statistics
    Case("np.arange", ARRAY_API, lambda x: np.arange(5) * x[0, :5], x45),
    Case("np.linspace", ARRAY_API, lambda x: np.linspace(0.0, 1.0, 5) * x, x45),
    Case("np.eye", ARRAY_API, lambda x: np.eye(4, 5, k=1) * x, x45),
    Case("np.zeros", ARRAY_API, lambda x: np.zeros((4, 5)) + x, x45),
    Case("np.ones", ARRAY_API, lambda x: np.ones(x.shape) * x, x45),
    Case("np.empty", ARRAY_API, lambda x: np.empty(x.shape).shape[0] * x, x45),
    Case("np.full", ARRAY_API, lambda x: np.full(x.shape, 2.5) * x, x45),
    Case("np.zeros_like", ARRAY_API, lambda x: np.zeros_like(x) + x, x45),
    Case("np.ones_like", ARRAY_API, lambda x: np.ones_like(x) * x, x45),
    Case("np.empty_like", ARRAY_API, lambda x: np.empty_like(x).ndim * x, x45),
    Case("np.full_like", ARRAY_API, lambda x: np.full_like(x, 3.0) * x, x45),
    Case("np.asarray", ARRAY_API, lambda x: np.asarray(x, dtype=np.float64), int45, diff=False),
    Case("np.tril", ARRAY_API, lambda x: np.tril(x, k=1), x45),
    Case("np.triu", ARRAY_API, lambda x: np.triu(x, k=-1), x45),
    Case("np.meshgrid", ARRAY_API, lambda x, y: np.meshgrid(x, y, indexing="ij"), vec_vec),
    Case("np.astype", ARRAY_API, lambda x: np.astype(x, np.float64) * np.astype(x > 0, x.dtype), x45),
    Case("np.finfo", ARRAY_API, lambda x: x + np.finfo(x.dtype).eps, x45),
    Case("np.iinfo", ARRAY_API, lambda x: np.minimum(x, np.iinfo(np.int32).max), int45, diff=False),
    Case("np.result_type", ARRAY_API, lambda x: x.astype(np.result_type(x, np.float32)), x45),
    Case("np.take", ARRAY_API, lambda x: np.take(x, np.array([3, 0, 2]), axis=1), x45),
    Case("np.take_along_axis", ARRAY_API,
         lambda x: np.take_along_axis(x, np.argsort(x, axis=1), axis=1), x45),
    Case("np.matmul", ARRAY_API, lambda a, b: np.matmul(a, b), mat_mat),
    Case("np.matrix_transpose", ARRAY_API, lambda x: np.matrix_transpose(x), x45),
    Case("np.tensordot", ARRAY_API, lambda a, b: np.tensordot(a, b, axes=1), mat_mat),
    Case("np.vecdot", ARRAY_API, lambda x, y: np.vecdot(x, y), two45),
    Case("np.broadcast_arrays", ARRAY_API, lambda x, y: np.broadcast_arrays(x[:, :1], y), two45),
    Case("np.broadcast_to", ARRAY_API, lambda x: np.broadcast_to(x[:1], (3, 4, 5)), x45),
    Case("np.concat", ARRAY_API, lambda x, y: np.concat([x, y], axis=1), two45),
    Case("np.expand_dims", ARRAY_API, lambda x: np.expand_dims(x, axis=1), x45),
    Case("np.flip", ARRAY_API, lambda x: np.flip(x, axis=(0, 1)), x45),
    Case("np.moveaxis", ARRAY_API, lambda x: np.moveaxis(x[None], 0, 2), x45),
    Case("np.permute_dims", ARRAY_API, lambda x: np.permute_dims(x, (1, 0)), x45),
    Case("np.repeat", ARRAY_API, lambda x: np.repeat(x, 2, axis=0), x45),
    Case("np.reshape", ARRAY_API, lambda x: np.reshape(x, (2, 10)), x45),
    Case("np.roll", ARRAY_API, lambda x: np.roll(x, (1, -2), axis=(0, 1)), x45),
    Case("np.squeeze", ARRAY_API, lambda x: np.squeeze(x[:, :1], axis=1), x45),
    Case("np.stack", ARRAY_API, lambda x, y: np.stack([x, y], axis=1), two45),
    Case("np.tile", ARRAY_API, lambda x: np.tile(x, (2, 1)), x45),
    Case("np.unstack", ARRAY_API, lambda x: np.unstack(x, axis=1), x45),
    Case("np.argmax", ARRAY_API, lambda x: np.argmax(x, axis=1), x45, diff=False),
    Case("np.argmin", ARRAY_API, lambda x: np.argmin(x, axis=0), x45, diff=False),
    Case("np.nonzero", ARRAY_API, lambda x: np.nonzero(x > 0), x45, diff=False),
    Case("np.searchsorted", ARRAY_API, lambda a, v: np.searchsorted(a, v), sorted_and_values,
         diff=False),
    Case("np.where", ARRAY_API, lambda x, y: np.where(x > 0, x, y), two45),
    Case("np.count_nonzero", ARRAY_API, lambda x: np.count_nonzero(x > 0, axis=1), x45, diff=False),
    Case("np.unique_values", ARRAY_API, lambda x: np.unique_values(x), int45, diff=False),
    Case("np.unique_counts", ARRAY_API, lambda x: np.unique_counts(x), int45, diff=False),
    Case("np.unique_inverse", ARRAY_API, lambda x: np.unique_inverse(x), int45, diff=False),
    Case("np.unique_all", ARRAY_API, lambda x: np.unique_all(x), int45, diff=False),
    Case("np.sort", ARRAY_API, lambda x: np.sort(x, axis=1), x45),
    Case("np.argsort", ARRAY_API, lambda x: np.argsort(x, axis=0, stable=True), x45, diff=False),
    Case("np.cumulative_sum", ARRAY_API, lambda x: np.cumulative_sum(x, axis=1), x45),
    Case("np.cumulative_prod", ARRAY_API, lambda x: np.cumulative_prod(x, axis=0), x45),
    Case("np.max", ARRAY_API, lambda x: np.max(x, axis=1), x45),
    Case("np.min", ARRAY_API, lambda x: np.min(x, axis=0, keepdims=True), x45),
    Case("np.mean", ARRAY_API, lambda x: np.mean(x, axis=1), x45),
    Case("np.prod", ARRAY_API, lambda x: np.prod(x, axis=1), x45),
    Case("np.std", ARRAY_API, lambda x: np.std(x, axis=0, ddof=1), x45),
    Case("np.sum", ARRAY_API, lambda x: np.sum(x, axis=(0, 1)), x45),
    Case("np.var", ARRAY_API, lambda x: np.var(x, axis=1), x45),
    Case("np.all", ARRAY_API, lambda x: np.all(x > -1, axis=1), x45, diff=False),
    Case("np.any", ARRAY_API, lambda x: np.any(x > 1, axis=0), x45, diff=False),
    Case("np.diff", ARRAY_API, lambda x: np.diff(x, n=2, axis=1), x45),
    # -- numpy.linalg (and the Array API's linalg extension)
    Case("np.linalg.solve", LINALG, lambda a, b: np.linalg.solve(a, b), square_rhs),
    Case("np.linalg.inv", LINALG, lambda a: np.linalg.inv(a), square),
    Case("np.linalg.det", LINALG, lambda a: np.linalg.det(a), square),
    Case("np.linalg.slogdet", LINALG, lambda a: np.linalg.slogdet(a)[1], square),
    Case("np.linalg.cholesky", LINALG, lambda a: np.linalg.cholesky(a), spd),
    Case("np.linalg.qr", LINALG, qr_invariant, square),
    Case("np.linalg.eigh", LINALG, eigh_invariant, symmetric),
    Case("np.linalg.eigvalsh", LINALG, lambda a: np.linalg.eigvalsh(a), symmetric),
    Case("np.linalg.eig", LINALG, lambda a: np.linalg.eig(a).eigenvalues, symmetric, diff=False,
         canon=_eig_sorted),
    Case("np.linalg.eigvals", LINALG, lambda a: np.linalg.eigvals(a), symmetric, diff=False,
         canon=_eig_sorted),
    Case("np.linalg.svd", LINALG, svd_invariant, tall),
    Case("np.linalg.svdvals", LINALG, lambda a: np.linalg.svdvals(a), tall),
    Case("np.linalg.lstsq", LINALG, lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0],
         lambda r: (r.standard_normal((6, 4)), r.standard_normal(6))),
    Case("np.linalg.pinv", LINALG, lambda a: np.linalg.pinv(a), tall),
    Case("np.linalg.matrix_rank", LINALG, lambda a: np.linalg.matrix_rank(a), tall, diff=False),
    Case("np.linalg.matrix_power", LINALG, lambda a: np.linalg.matrix_power(a, 3), square),
    Case("np.linalg.multi_dot", LINALG, lambda a, b: np.linalg.multi_dot([a, b, b.T]), mat_mat),
    Case("np.linalg.cond", LINALG, lambda a: np.linalg.cond(a), square),
    Case("np.linalg.norm", LINALG, lambda a: np.linalg.norm(a, ord="nuc"), square),
    Case("np.linalg.matrix_norm", LINALG, lambda a: np.linalg.matrix_norm(a, ord=2), square),
    Case("np.linalg.vector_norm", LINALG, lambda x: np.linalg.vector_norm(x, ord=3, axis=1), x45),
    Case("np.linalg.trace", LINALG, lambda a: np.linalg.trace(a), square),
    Case("np.linalg.diagonal", LINALG, lambda a: np.linalg.diagonal(a), square),
    Case("np.linalg.outer", LINALG, lambda x, y: np.linalg.outer(x, y), vec_vec),
    Case("np.linalg.cross", LINALG, lambda x, y: np.linalg.cross(x, y), vec_vec),
    Case("np.linalg.tensorinv", LINALG, lambda a: np.linalg.tensorinv(a.reshape(4, 2, 2), ind=1),
         square),
    Case("np.linalg.tensorsolve", LINALG,
         lambda a, b: np.linalg.tensorsolve(a.reshape(2, 2, 4), b.reshape(2, 2)), square_rhs),
    # -- numpy.fft
    Case("np.fft.fft", FFT, lambda x: np.fft.fft(x, axis=1), signal),
    Case("np.fft.ifft", FFT, lambda x: np.fft.ifft(x, n=10), signal),
    Case("np.fft.rfft", FFT, lambda x: np.fft.rfft(x, norm="ortho"), signal),
    Case("np.fft.irfft", FFT, lambda x: np.fft.irfft(x), signal),
    Case("np.fft.hfft", FFT, lambda x: np.fft.hfft(x), signal),
    Case("np.fft.ihfft", FFT, lambda x: np.fft.ihfft(x), signal),
    Case("np.fft.fft2", FFT, lambda x: np.fft.fft2(x), signal),
    Case("np.fft.ifft2", FFT, lambda x: np.fft.ifft2(x), signal),
    Case("np.fft.rfft2", FFT, lambda x: np.fft.rfft2(x), signal),
    Case("np.fft.irfft2", FFT, lambda x: np.fft.irfft2(x), signal),
    Case("np.fft.fftn", FFT, lambda x: np.fft.fftn(x, axes=(0, 1)), signal),
    Case("np.fft.ifftn", FFT, lambda x: np.fft.ifftn(x), signal),
    Case("np.fft.rfftn", FFT, lambda x: np.fft.rfftn(x), signal),
    Case("np.fft.irfftn", FFT, lambda x: np.fft.irfftn(x, s=(3, 12)), signal),
    Case("np.fft.fftfreq", FFT, lambda x: np.fft.fftfreq(12, d=0.5) * x, signal),
    Case("np.fft.rfftfreq", FFT, lambda x: np.fft.rfftfreq(22) * x, signal),
    Case("np.fft.fftshift", FFT, lambda x: np.fft.fftshift(x), signal),
    Case("np.fft.ifftshift", FFT, lambda x: np.fft.ifftshift(x, axes=1), signal),
    # -- the everyday tail (issue 12, item 3) and the elementwise specials of NumPy
    *_unary(EVERYDAY, "sinc i0 spacing fix", x45),
    *_unary(EVERYDAY, "arccosh", above1),
    *_unary(EVERYDAY, "arctanh", unit45),
    Case("np.logaddexp2", EVERYDAY, lambda x, y: np.logaddexp2(x, y), two45),
    Case("np.heaviside", EVERYDAY, lambda x: np.heaviside(x, 0.5), x45, diff=False),
    Case("np.frexp", EVERYDAY, lambda x: np.frexp(x), x45, diff=False),
    Case("np.ldexp", EVERYDAY, lambda x: np.ldexp(x, 3), x45),
    Case("np.modf", EVERYDAY, lambda x: np.modf(x), x45),
    Case("np.float_power", EVERYDAY, lambda x: np.float_power(x, 1.5), pos45),
    Case("np.ediff1d", EVERYDAY, lambda x: np.ediff1d(x), vec8),
    Case("np.gradient", EVERYDAY, lambda x: np.gradient(x, axis=1), x45),
    Case("np.interp", EVERYDAY, lambda x: np.interp(x, np.array([-1.0, 0.0, 2.0]),
                                                    np.array([0.0, 1.0, 5.0])), x45),
    Case("np.convolve", EVERYDAY, lambda x: np.convolve(x, np.array([1.0, -2.0, 0.5]), mode="same"),
         vec8),
    Case("np.correlate", EVERYDAY, lambda x: np.correlate(x, np.array([1.0, 2.0]), mode="valid"),
         vec8),
    Case("np.cross", EVERYDAY, lambda x, y: np.cross(x, y), vec_vec),
    Case("np.kron", EVERYDAY, lambda x: np.kron(x, np.eye(2)), square),
    Case("np.mgrid", EVERYDAY, lambda x: np.mgrid[0:4, 0:5][0] * x, x45),
    Case("np.ogrid", EVERYDAY, lambda x: np.ogrid[0:4, 0:5][1] * x, x45),
    Case("np.indices", EVERYDAY, lambda x: np.indices((4, 5))[0] * x, x45),
    Case("np.isclose", EVERYDAY, lambda x, y: np.isclose(x, y, atol=0.5), two45, diff=False),
    Case("np.allclose", EVERYDAY, lambda x, y: np.allclose(x, y, atol=0.5), two45, diff=False),
    Case("np.array_equal", EVERYDAY, lambda x, y: np.array_equal(x, y), two45, diff=False),
    Case("np.nan_to_num", EVERYDAY, lambda x: np.nan_to_num(x, nan=0.5), with_nans),
    *[Case(f"np.{n}", EVERYDAY, _bind1(getattr(np, n)), with_nans)
      for n in "nansum nanmean nanmax nanmin nanprod nanstd nanvar nancumsum nanmedian".split()],
    *[Case(f"np.{n}", EVERYDAY, _bind1(getattr(np, n)), with_nans, diff=False)
      for n in "nanargmax nanargmin".split()],
    Case("np.nanpercentile", EVERYDAY, lambda x: np.nanpercentile(x, 30.0, axis=1), with_nans),
    Case("np.median", EVERYDAY, lambda x: np.median(x, axis=1), x45),
    Case("np.percentile", EVERYDAY, lambda x: np.percentile(x, 75.0, axis=0), x45),
    Case("np.quantile", EVERYDAY, lambda x: np.quantile(x, 0.3, method="midpoint"), x45),
    Case("np.select", EVERYDAY, lambda x: np.select([x < -0.5, x > 0.5], [x * 2, x ** 2], 0.1), x45),
    Case("np.piecewise", EVERYDAY,
         lambda x: np.piecewise(x, [x < 0, x >= 0], [lambda t: -t, lambda t: t * t]), x45),
    Case("np.clip (array bounds)", EVERYDAY, lambda x, y: np.clip(x, y - 1, y + 1), two45),
    Case("np.digitize", EVERYDAY, lambda x: np.digitize(x, np.array([-1.0, 0.0, 1.0])), x45,
         diff=False),
    Case("np.histogram", EVERYDAY, lambda x: np.histogram(x, bins=5, range=(-2.0, 2.0))[0], vec8,
         diff=False),
    Case("np.histogram2d", EVERYDAY,
         lambda x, y: np.histogram2d(x.ravel(), y.ravel(), bins=3, range=[[-2, 2], [-2, 2]])[0],
         two45, diff=False),
    Case("np.bincount", EVERYDAY, lambda x: np.bincount(x.ravel(), minlength=8), uint45, diff=False),
    Case("np.average", EVERYDAY, lambda x: np.average(x, axis=1, weights=np.arange(1.0, 6.0)), x45),
    Case("np.cov", EVERYDAY, lambda x: np.cov(x), x45),
    Case("np.corrcoef", EVERYDAY, lambda x: np.corrcoef(x), x45),
    Case("np.polyval", EVERYDAY, lambda x: np.polyval(np.array([1.0, -2.0, 0.5]), x), x45),
    Case("np.polyder", EVERYDAY, lambda x: np.polyder(x[0], m=2), x45),
    Case("np.polyint", EVERYDAY, lambda x: np.polyint(x[0]), x45),
    Case("np.trapezoid", EVERYDAY, lambda x: np.trapezoid(x, dx=0.5, axis=1), x45),
    Case("np.unwrap", EVERYDAY, lambda x: np.unwrap(x * 3.0, axis=1), x45),
    Case("np.ptp", EVERYDAY, lambda x: np.ptp(x, axis=1), x45),
    Case("np.around", EVERYDAY, lambda x: np.around(x, decimals=2), x45, diff=False),
    Case("np.tril_indices", EVERYDAY, lambda x: x[np.tril_indices(4)], square),
    Case("np.triu_indices", EVERYDAY, lambda x: x[np.triu_indices(4, k=1)], square),
    Case("np.diag_indices", EVERYDAY, lambda x: x[np.diag_indices(4)], square),
    Case("np.compress", EVERYDAY, lambda x: np.compress([True, False, True, True], x, axis=0), x45),
    Case("np.resize", EVERYDAY, lambda x: np.resize(x, (3, 7)), x45),
    Case("np.append", EVERYDAY, lambda x, y: np.append(x, y, axis=0), two45),
    Case("np.insert", EVERYDAY, lambda x: np.insert(x, 2, 7.0, axis=1), x45),
    Case("np.delete", EVERYDAY, lambda x: np.delete(x, [0, 2], axis=1), x45),
    Case("np.rot90", EVERYDAY, lambda x: np.rot90(x, k=3), x45),
    Case("np.tensordot (axes pairs)", EVERYDAY, lambda x, y: np.tensordot(x, y, axes=([0, 1], [0, 1])),
         two45),
    Case("np.vdot", EVERYDAY, lambda x, y: np.vdot(x, y), two45),
    Case("np.block", EVERYDAY, lambda x, y: np.block([[x, y], [y, x]]), two45),
    Case("np.column_stack", EVERYDAY, lambda x, y: np.column_stack([x[0], y[0]]), two45),
    Case("np.dstack", EVERYDAY, lambda x, y: np.dstack([x, y]), two45),
    Case("np.atleast_1d", EVERYDAY, lambda x: np.atleast_1d(x[0, 0]), x45),
    Case("np.atleast_2d", EVERYDAY, lambda x: np.atleast_2d(x[0]), x45),
    Case("np.atleast_3d", EVERYDAY, lambda x: np.atleast_3d(x), x45),
    Case("np.ravel_multi_index", EVERYDAY,
         lambda x: np.ravel_multi_index((x % 4, x % 5), (4, 5)), uint45, diff=False),
    Case("np.unravel_index", EVERYDAY, lambda x: np.unravel_index(x, (2, 3)), uint45, diff=False),
    Case("np.any (where=)", EVERYDAY, lambda x: np.any(x > 0, axis=1, where=x < 1), x45, diff=False),
    Case("np.sum (where=, initial=)", EVERYDAY,
         lambda x: np.sum(x, axis=1, where=x > 0, initial=1.0), x45),
    Case("np.max (initial=)", EVERYDAY, lambda x: np.max(x, axis=0, initial=0.5), x45),
    Case("np.unique", EVERYDAY, lambda x: np.unique(x), int45, diff=False),
    Case("np.errstate", EVERYDAY, lambda x: _errstate(x), pos45),
    Case("np.pad (edge, reflect, symmetric, wrap)", EVERYDAY,
         lambda x: tuple(np.pad(x, ((1, 2), (3, 0)), mode=m) for m in ("edge", "reflect", "symmetric", "wrap")),
         x45),
    Case("np.vander", EVERYDAY, lambda x: np.vander(x[0], 3), x45),
    Case("np.lib.stride_tricks.sliding_window_view", EVERYDAY,
         lambda x: np.lib.stride_tricks.sliding_window_view(x, 3, axis=1).mean(axis=-1), x45),
    # the forms issue 12 (item 3) asks for beyond the calls above
    Case("np.diff (prepend, append)", EVERYDAY,
         lambda x: np.diff(x, axis=1, prepend=0.5, append=x[:, :2]), x45),
    Case("np.interp (left, right, period)", EVERYDAY,
         lambda x: (np.interp(x, np.array([-1.0, 0.0, 2.0]), np.array([0.0, 1.0, 5.0]), left=-3.0,
                              right=7.0),
                    np.interp(x, np.array([0.0, 1.0, 2.5, 4.0]), np.array([1.0, -1.0, 2.0, 0.5]),
                              period=5.0)), x45),
    Case("np.convolve (full, same, valid)", EVERYDAY,
         lambda x: tuple(np.convolve(x, np.array([1.0, -2.0, 0.5]), mode=m)
                         for m in ("full", "same", "valid")), vec8),
    Case("np.correlate (full, same, valid)", EVERYDAY,
         lambda x: tuple(np.correlate(x, np.array([1.0, 2.0, -1.0]), mode=m)
                         for m in ("full", "same", "valid")), vec8),
    Case("np.meshgrid (sparse)", EVERYDAY,
         lambda x, y: np.meshgrid(x, y, x, sparse=True), vec_vec),
    Case("np.bincount (negative value: ValueError)", EVERYDAY,
         lambda x: np.bincount(x, minlength=6), lambda r: (np.array([0, 3, -1, 2]),), diff=False,
         raises=ValueError),
    Case("np.round (decimals)", EVERYDAY, lambda x: np.round(x * 10, decimals=-1), x45, diff=False),
    Case("np.tensordot (axes=0, 2, (1, 0))", EVERYDAY,
         lambda x, y: (np.tensordot(x[0], y[1], axes=0), np.tensordot(x, y, axes=2),
                       np.tensordot(x, y.T, axes=(1, 0))), two45),
    Case("np.all (where=)", EVERYDAY, lambda x: np.all(x > -1, axis=0, where=x < 1), x45, diff=False),
    Case("np.prod, np.min, np.mean (where=, initial=)", EVERYDAY,
         lambda x: (np.prod(x, axis=1, where=x > -1, initial=2.0),
                    np.min(x, axis=0, where=x > -0.5, initial=0.25), np.mean(x, axis=1, where=x < 1)),
         x45),
    Case("np.insert, np.delete (index lists)", EVERYDAY,
         lambda x: (np.insert(x, [1, 3, 3], [7.0, 8.0, 9.0], axis=1), np.delete(x, slice(1, 4, 2), axis=1),
                    np.delete(x, [0, -1], axis=0)), x45),
    Case("np.newaxis, np.pi, np.e, np.inf, np.nan", EVERYDAY,
         lambda x: (x[:, np.newaxis] * np.pi + np.e, np.minimum(x, np.inf),
                    np.nan_to_num(np.where(x > 0, x, np.nan), nan=0.5)), x45),
    # -- scipy.special
    *_special("erf erfc erfcx gammaln gamma digamma loggamma expit log_expit ndtr "
              "log_ndtr i0e i1 i1e sinc entr", pos45),
    *_special("erfinv ndtri logit", probs),
    *_special("erfcinv", lambda r: (r.uniform(0.1, 1.9, (4, 5)),)),
    Case("scipy.special.polygamma", "scipy.special", lambda x: sp.polygamma(1, x), pos45,
         needs="scipy"),
    Case("scipy.special.beta", "scipy.special", lambda x: sp.beta(x, 2.5), pos45, needs="scipy"),
    Case("scipy.special.betaln", "scipy.special", lambda x: sp.betaln(x, 2.5), pos45, needs="scipy"),
    Case("scipy.special.xlogy", "scipy.special", lambda x, y: sp.xlogy(x, y * y + 0.1), two45,
         needs="scipy"),
    Case("scipy.special.xlog1py", "scipy.special", lambda x, y: sp.xlog1py(x, y * y), two45,
         needs="scipy"),
    Case("scipy.special.rel_entr", "scipy.special", lambda x: sp.rel_entr(x, 1.0 / x), pos45,
         needs="scipy"),
    Case("scipy.special.kl_div", "scipy.special", lambda x: sp.kl_div(x, 1.0 / x), pos45,
         needs="scipy"),
    Case("scipy.special.softmax", "scipy.special", lambda x: sp.softmax(x, axis=1), x45,
         needs="scipy"),
    Case("scipy.special.log_softmax", "scipy.special", lambda x: sp.log_softmax(x, axis=1), x45,
         needs="scipy"),
    Case("scipy.special.logsumexp", "scipy.special", lambda x: sp.logsumexp(x, axis=1), x45,
         needs="scipy"),
    Case("scipy.special.logsumexp (keepdims, b, return_sign)", "scipy.special",
         lambda x: sp.logsumexp(x, axis=1, keepdims=True, b=_SIGNS, return_sign=True), x45,
         needs="scipy"),
]


#: logsumexp's b: a negative row (a result of sign -1), the others positive
_SIGNS = np.array([[1.0, 0.5, 2.0, 1.5, 0.7]]).repeat(4, axis=0) * np.array([[1.0], [1.0], [-1.0], [1.0]])


def _errstate(x):
    with np.errstate(divide="ignore"):
        return np.log(x)


# ---- running the modes -----------------------------------------------------------------------

def _leaves(out: Any) -> list[np.ndarray]:
    return [np.asarray(leaf) for leaf in fd.leaves(out)]


def _same(got: Any, want: Any, rtol: float, canon: Callable | None = None) -> None:
    if canon is not None:
        got, want = canon(got), canon(want)
    g, w = _leaves(got), _leaves(want)
    if len(g) != len(w):
        raise AssertionError(f"{len(g)} results, NumPy gives {len(w)}")
    for a, b in zip(g, w):
        if a.shape != b.shape:
            raise AssertionError(f"shape {a.shape}, NumPy gives {b.shape}")
        if a.dtype != b.dtype:
            raise AssertionError(f"dtype {a.dtype}, NumPy gives {b.dtype}")
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol, equal_nan=True)


def _loss(fn: Callable) -> Callable:
    """A scalar function of `fn`'s result: a weighted sum of every float leaf (complex: both
    parts), with weights that no identity of the output cancels."""
    def loss(*args):
        total = 0.0
        for k, leaf in enumerate(fd.leaves(fn(*args))):
            leaf = np.asarray(leaf)
            if leaf.dtype.kind in "fc":
                w = np.cos(np.arange(leaf.size) * 0.7 + k).reshape(leaf.shape)
                total = total + np.sum(np.real(leaf) * w) + np.sum(np.imag(leaf) * w * 0.5)
        return total
    return loss


def _raises(case: Case, call: Callable[[], Any]) -> None:
    """`call` raises case.raises, as NumPy does on the same values."""
    assert case.raises is not None
    try:
        call()
    except case.raises:
        return
    raise AssertionError(f"no {case.raises.__name__}, where NumPy raises one")


def run_jit(case: Case, args: tuple) -> None:
    if case.raises is not None:
        _raises(case, lambda: case.fn(*args))
        _raises(case, lambda: compiler.jit(case.fn)(*args))
        return
    _same(compiler.jit(case.fn)(*args), case.fn(*args), case.rtol, case.canon)


def run_vmap(case: Case, args: tuple, rng: np.random.Generator) -> None:
    x = args[0]
    batch = np.stack([x, *(case.args(rng)[0] for _ in range(2))])
    if case.raises is not None:               # the failing example among good ones
        batch = np.stack([*(case.args(rng)[0] for _ in range(2)), x])
        _raises(case, lambda: [case.fn(b, *args[1:]) for b in batch])
        _raises(case, lambda: compiler.vmap(case.fn, in_dims=(0,) + (None,) * (len(args) - 1))(batch, *args[1:]))
        return
    got = compiler.vmap(case.fn, in_dims=(0,) + (None,) * (len(args) - 1))(batch, *args[1:])
    want = [case.fn(b, *args[1:]) for b in batch]
    stacked = [np.stack(ls) for ls in zip(*[_leaves(w) for w in want])]
    canon = case.canon
    if canon is not None:
        got = [canon(tuple(leaf[i] for leaf in _leaves(got))) for i in range(len(batch))]
        stacked = [canon(w) for w in want]
    _same(got, stacked, case.rtol)


def _difference(fn: Callable, args: tuple, v: np.ndarray, h: float = fd.H) -> list[np.ndarray]:
    """The derivative of every result leaf of `fn` along `v` in its first argument: the
    4-point central difference of tests/fd.py, keeping complex results complex."""
    total: list[np.ndarray] = []
    for offset, weight in fd.STENCIL:
        out = _leaves(fn(args[0] + offset * h * v, *args[1:]))
        out = [o.astype(np.complex128 if o.dtype.kind == "c" else np.float64) for o in out]
        total = [weight * o for o in out] if not total else [t + weight * o for t, o in zip(total, out)]
    return [t / (fd.DENOMINATOR * h) for t in total]


def run_grad(case: Case, args: tuple, rng: np.random.Generator) -> None:
    loss = _loss(case.fn)
    g = np.asarray(compiler.grad(loss)(*args))
    v = rng.standard_normal(args[0].shape)
    np.testing.assert_allclose(np.sum(g * v), _difference(loss, args, v)[0], rtol=1e-5, atol=1e-6)


def run_jvp(case: Case, args: tuple, rng: np.random.Generator) -> None:
    v = rng.standard_normal(args[0].shape)
    tangents = (v,) + tuple(np.zeros_like(a) for a in args[1:])
    _, got = compiler.jvp(case.fn, args, tangents)
    want = _difference(case.fn, args, v)
    if len(_leaves(got)) != len(want):
        raise AssertionError(f"{len(_leaves(got))} tangent results for {len(want)} results")
    for a, b in zip(_leaves(got), want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _brief(e: BaseException) -> str:
    """One line: the exception's class and the first line of its message."""
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    first = re.sub(r"^\S+:\d+:\d+: ", "", first)           # the location: this file's line
    first = re.sub(r"^\w+Error: ", "", first)
    first = re.sub(r"\s+", " ", first)
    return f"{type(e).__name__}: {first}"[:110]


def run(case: Case, modes: tuple[str, ...] = MODES) -> dict[str, str]:
    """{mode: "yes" | "n/a" | "no: <why>"} for `case`."""
    rng = np.random.default_rng(20261126)
    results: dict[str, str] = {}
    if case.needs and sp is None:
        return {m: f"{NO}: {case.needs} is not installed" for m in modes}
    args = case.args(rng)
    floating = np.asarray(args[0]).dtype.kind == "f"
    for mode in modes:
        if mode in ("grad", "jvp") and not (case.diff and floating):
            results[mode] = NA
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if mode == "jit":
                    run_jit(case, args)
                elif mode == "vmap":
                    run_vmap(case, args, np.random.default_rng(1))
                elif mode == "grad":
                    run_grad(case, args, np.random.default_rng(2))
                else:
                    run_jvp(case, args, np.random.default_rng(3))
            results[mode] = YES
        except Exception as e:        # any failure is a "no" with its reason in the table
            results[mode] = f"{NO}: {_brief(e)}"
    return results


# ---- the table -------------------------------------------------------------------------------

def _cell(result: str) -> str:
    return {YES: "yes", NA: "n/a"}.get(result, "**no**")


def _note(results: dict[str, str]) -> str:
    notes = []
    for mode in MODES:
        r = results.get(mode, "")
        if r.startswith(NO):
            why = r.split(": ", 1)[1].replace("|", "\\|")
            if why not in notes:
                notes.append(why)
    return "; ".join(f"{n}" for n in notes)


def render(cases: list[Case], seconds: float) -> str:
    families: dict[str, list[Case]] = {}
    for c in cases:
        families.setdefault(c.family, []).append(c)
    lines = ["# Coverage", "",
             "Which of NumPy's (and `scipy.special`'s) public functions compile, and under which",
             "transforms. Generated by `python -m tests.coverage` (tests/coverage.py), which runs each",
             "function on sample inputs and compares with NumPy (jit), a Python loop (vmap) and",
             "central differences (grad, jvp); `tests/test_coverage.py` fails when a mode marked",
             "`yes` here stops working. Do not edit by hand.", "",
             "\"n/a\": not differentiable in its first argument (integer, boolean or piecewise-constant",
             "results); a **no** gives the error the compiler raises.", "",
             "| family | functions | jit | vmap | grad | jvp |", "|---|---|---|---|---|---|"]
    for fam, cs in families.items():
        counts = []
        for mode in MODES:
            applicable = [c for c in cs if c.results.get(mode) != NA]
            ok = sum(c.results.get(mode) == YES for c in applicable)
            counts.append(f"{ok} / {len(applicable)}")
        lines.append(f"| {fam} | {len(cs)} | " + " | ".join(counts) + " |")
    lines.append("")
    dynamic = [c.name for c in cases if c.results.get("jit", "").startswith(f"{NO}: DynamicShapeError")]
    if dynamic:
        lines += [f"Of the functions that do not compile, {len(dynamic)} return arrays whose length depends "
                  "on the values (" + ", ".join(f"`{n}`" for n in dynamic) + "): a compiled kernel's "
                  "shapes depend on its input shapes only, so they raise `DynamicShapeError` by design, "
                  "with `np.unique(x, size=k)` as the escape hatch (docs/sorting.md).", ""]
    for fam, cs in families.items():
        lines += [f"## {fam}", "", "| function | jit | vmap | grad | jvp | note |",
                  "|---|---|---|---|---|---|"]
        for c in cs:
            cells = " | ".join(_cell(c.results.get(m, "")) for m in MODES)
            lines.append(f"| `{c.name}` | {cells} | {_note(c.results)} |")
        lines.append("")
    lines.append(f"<!-- {len(cases)} functions; {seconds:.0f} s on one core -->")
    return "\n".join(lines) + "\n"


def committed() -> dict[str, dict[str, str]]:
    """{function: {mode: "yes" | "n/a" | "no"}} as docs/coverage.md records it."""
    table: dict[str, dict[str, str]] = {}
    row = re.compile(r"^\| `(?P<name>[^`]+)` \| (?P<cells>[^|]+(?:\|[^|]+){3}) \|")
    for line in TABLE.read_text().splitlines() if TABLE.exists() else []:
        m = row.match(line)
        if m:
            cells = [c.strip().strip("*") for c in m.group("cells").split("|")]
            table[m.group("name")] = dict(zip(MODES, cells))
    return table


def main(argv: list[str]) -> int:
    show_only = "--print" in argv
    prefixes = [a for a in argv if not a.startswith("--")]
    cases = [c for c in CASES if not prefixes or any(c.name.startswith(p) for p in prefixes)]
    start = time.perf_counter()
    for c in cases:
        t = time.perf_counter()
        c.results = run(c)
        print(f"{c.name:34s} " + "  ".join(f"{m}={c.results[m][:60]}" for m in MODES)
              + f"  ({time.perf_counter() - t:.1f} s)", flush=True)
    text = render(cases, time.perf_counter() - start)
    if show_only or prefixes:
        print(text)
    else:
        TABLE.write_text(text)
        print(f"wrote {TABLE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
