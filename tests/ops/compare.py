"""Comparison of a compiled result with its oracle (NumPy or the interpreter).

`assert_same(got, expected, tol)` checks, leaf by leaf over tuples, lists and
dicts: the same structure, the same dtype, the same shape, then the values:

* bool and integer leaves exactly;
* complex leaves: the real and the imaginary parts, each as a float leaf;
* float leaves: nan at the same positions, infinities at the same positions
  with the same sign, and finite values within ``tol`` (``rtol``/``atol`` or,
  ULP-aware, within ``ulps`` spacings of the expected value); ``tol.signed_zeros``
  also requires the sign of zero results to agree.

It is independent of the compiler (its own tree walk) so that it can judge it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Tol:
    """Per-dtype tolerance of one op: (rtol, atol) for float32 and float64, plus ULPs."""

    f32: tuple[float, float] = (0.0, 0.0)
    f64: tuple[float, float] = (0.0, 0.0)
    ulps: int = 0
    signed_zeros: bool = False

    def for_dtype(self, dtype: np.dtype) -> tuple[float, float]:
        if np.dtype(dtype) == np.float16:    # float32's tolerance, widened (not ulps: those scale)
            return self.f32[0] * F16_WIDEN, self.f32[1] * F16_WIDEN
        return self.f32 if np.dtype(dtype) == np.float32 else self.f64

    def widen(self, factor: float) -> "Tol":
        return Tol((self.f32[0] * factor, self.f32[1] * factor),
                   (self.f64[0] * factor, self.f64[1] * factor), self.ulps, self.signed_zeros)


#: float16 results (computed in float32, rounded to float16 as NumPy does) get float32's rtol and
#: atol times this factor (float16's epsilon is 8192 float32 epsilons)
F16_WIDEN = 1000.0

EXACT = Tol()
#: correctly rounded IEEE ops agree bit for bit, including the sign of zero
IEEE = Tol(signed_zeros=True)
#: transcendental functions: rtol 1e-5 (float32) / 1e-13 (float64), or within 4 ULP
TRANSCENDENTAL = Tol((1e-5, 0.0), (1e-13, 0.0), ulps=4)
#: sums and contractions in another order than NumPy's pairwise/BLAS order
REDUCTION = Tol((1e-5, 1e-5), (1e-12, 1e-12), ulps=4)
#: float32 derivatives (jvp, vjp) vs the float64 finite differences at the same point
F32_GRAD_RTOL = 2e-4


def flatten(tree: Any, path: str = "") -> list[tuple[str, Any]]:
    """Leaves of nested tuples/lists/dicts with their paths (dict keys sorted, as jit does)."""
    if isinstance(tree, (tuple, list)):
        return [leaf for i, t in enumerate(tree) for leaf in flatten(t, f"{path}[{i}]")]
    if isinstance(tree, dict):
        return [leaf for k in sorted(tree) for leaf in flatten(tree[k], f"{path}[{k!r}]")]
    if tree is None:
        return []
    return [(path or "result", tree)]


def structure(tree: Any) -> Any:
    if isinstance(tree, (tuple, list)):
        return (type(tree).__name__, tuple(structure(t) for t in tree))
    if isinstance(tree, dict):
        return ("dict", tuple((k, structure(tree[k])) for k in sorted(tree)))
    if tree is None:
        return None
    return "*"


def assert_same(got: Any, expected: Any, tol: Tol = EXACT, *, check_structure: bool = True,
                what: str = "") -> None:
    """Assert that `got` equals `expected` (see the module docstring)."""
    if check_structure:
        assert structure(got) == structure(expected), \
            f"{what}result structure differs: got {structure(got)}, expected {structure(expected)}"
    g_leaves, e_leaves = flatten(got), flatten(expected)
    assert len(g_leaves) == len(e_leaves), f"{what}{len(g_leaves)} results, expected {len(e_leaves)}"
    for (path, g), (_, e) in zip(g_leaves, e_leaves):
        assert_array_same(g, e, tol, what=f"{what}{path}: ")


def assert_array_same(got: Any, expected: Any, tol: Tol = EXACT, *, what: str = "") -> None:
    g, e = np.asarray(got), np.asarray(expected)
    assert g.dtype == e.dtype, f"{what}dtype {g.dtype}, expected {e.dtype}"
    assert g.shape == e.shape, f"{what}shape {g.shape}, expected {e.shape}"
    if e.dtype.kind == "c":     # complex: the real and the imaginary parts, each as a float
        assert_array_same(g.real, e.real, tol, what=f"{what}(real part) ")
        assert_array_same(g.imag, e.imag, tol, what=f"{what}(imaginary part) ")
        return
    if e.dtype.kind != "f":
        np.testing.assert_array_equal(g, e, err_msg=what, strict=True)
        return
    g_nan, e_nan = np.isnan(g), np.isnan(e)
    if not np.array_equal(g_nan, e_nan):
        bad = np.argwhere(g_nan != e_nan)[:5].tolist()
        raise AssertionError(f"{what}nan positions differ at {bad}: got {g[tuple(np.array(bad).T)]}, "
                             f"expected {e[tuple(np.array(bad).T)]}")
    g_inf, e_inf = np.isinf(g) & ~g_nan, np.isinf(e) & ~e_nan
    inf_bad = (g_inf != e_inf) | (e_inf & (np.sign(np.where(g_inf, g, 0)) != np.sign(np.where(e_inf, e, 0))))
    if inf_bad.any():
        bad = np.argwhere(inf_bad)[:5].tolist()
        idx = tuple(np.array(bad).T)
        raise AssertionError(f"{what}infinities differ at {bad}: got {g[idx]}, expected {e[idx]}")
    finite = np.isfinite(e)
    rtol, atol = tol.for_dtype(e.dtype)
    gf, ef = g[finite].astype(np.float64), e[finite].astype(np.float64)
    err = np.abs(gf - ef)
    allowed = atol + rtol * np.abs(ef)
    if tol.ulps:
        spacing = np.spacing(np.abs(e[finite])).astype(np.float64)
        allowed = np.maximum(allowed, tol.ulps * spacing)
    bad = err > allowed
    if bad.any():
        where = np.argwhere(finite)[bad][:5]
        idx = tuple(where.T)
        ulp = err[bad] / np.spacing(np.abs(e[finite][bad])).astype(np.float64)
        raise AssertionError(
            f"{what}{int(bad.sum())} of {ef.size} values differ beyond rtol={rtol}, atol={atol}, "
            f"ulps={tol.ulps}; at {where.tolist()}: got {g[idx]!r}, expected {e[idx]!r} "
            f"(max error {err[bad].max():.3g}, {ulp.max():.3g} ULP)")
    if tol.signed_zeros:
        zeros = finite & (e == 0)
        sign_bad = zeros & (np.signbit(g) != np.signbit(e))
        if sign_bad.any():
            where = np.argwhere(sign_bad)[:5]
            raise AssertionError(f"{what}sign of zero differs at {where.tolist()}: "
                                 f"got {g[tuple(where.T)]!r}, expected {e[tuple(where.T)]!r}")
