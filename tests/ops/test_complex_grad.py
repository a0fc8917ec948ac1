"""Derivatives of the complex OpInfos (``complex.*`` in tests/ops/opinfo.py).

The convention is torch.func's (docs/complex.md): a tangent is a complex number like
its primal, ``jvp`` is the real-linear map t -> df(x; t), and ``vjp`` is its adjoint for
the real inner product ``Re<a, b> = sum(Re(conj(a) * b))``: for a real-valued loss L of
a complex z, ``grad(L)(z) = dL/dx + 1j * dL/dy``.

For the first two usable complex128 samples and the first complex64 sample of every
differentiable complex OpInfo (every inexact argument active, float partners included):

* (a) ``jvp`` against the central finite difference (4-point stencil, complex128
  arithmetic on the uncompiled NumPy function) along a tangent in the REAL direction
  (real values in the complex inputs) and one in the IMAGINARY direction (1j times real
  values), separately: a function that is not holomorphic (abs, conj, angle, real)
  differs between them;
* (b) the dot-product test ``Re<u, jvp(t)> == Re<vjp(u), t>`` for a random complex
  tangent and output cotangent, and the cotangents have their primals' dtypes;
* (c) for one-output ops, ``grad`` of the real loss ``s = Re<u, f>`` equals ``vjp(u)``.
"""
from __future__ import annotations

import copy
import warnings
import zlib
from typing import Any, Callable

import numpy as np
import pytest

from compiler import grad, jvp, vjp
from tests import fd
from tests.ops.compare import assert_array_same
from tests.ops.opinfo import C64, C128, OPS, OpInfo, SampleInput
from tests.ops.test_grad import flat_function

STENCIL = ((-2, 1), (-1, -8), (1, 8), (2, -1))
H = 1e-5


def _outputs(g: Callable[..., Any], leaves: list[np.ndarray]) -> list[np.ndarray]:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [np.asarray(o) for o in fd.leaves(g(*copy.deepcopy(leaves)))]


def _inexact(x: np.ndarray) -> bool:
    return x.dtype.kind in "fc"


def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64) if _inexact(x) else x


def directional(g: Callable[..., Any], leaves: list[np.ndarray], ts: list[np.ndarray | None],
                h: float = H) -> list[np.ndarray]:
    """d/de g(leaves + e * ts) at 0, in complex128 (float32/complex64 leaves widened exactly)."""
    xs = [_wide(x) for x in leaves]
    acc: list[np.ndarray] | None = None
    for c, w in STENCIL:
        moved = [x if t is None else x + c * h * t for x, t in zip(xs, ts)]
        outs = [np.asarray(o, np.complex128) for o in _outputs(g, moved)]
        acc = [w * o for o in outs] if acc is None else [a + w * o for a, o in zip(acc, outs)]
    assert acc is not None
    return [a / (12 * h) for a in acc]


def real_inner(a: Any, b: Any) -> float:
    """Re<a, b> = sum(Re(conj(a) b)), in float64."""
    return float(np.sum(np.real(np.conj(np.asarray(a, np.complex128)) * np.asarray(b, np.complex128))))


def _tangent(x: np.ndarray, rng: np.random.Generator, direction: str) -> np.ndarray:
    """A random tangent of x's dtype: real values, 1j times real values, or both."""
    re = rng.standard_normal(x.shape)
    if x.dtype.kind == "f":
        return re.astype(x.dtype)
    im = rng.standard_normal(x.shape)
    t = {"real": re + 0j, "imag": 1j * re, "both": re + 1j * im}[direction]
    return t.astype(x.dtype)


def _usable(op: OpInfo, sample: SampleInput) -> bool:
    g, leaves = flat_function(op.fn, sample, op.name)
    if not any(_inexact(x) and x.size for x in leaves):
        return False
    return all(np.all(np.isfinite(o)) for o in _outputs(g, leaves) if o.dtype.kind in "fc")


def _cases() -> list[Any]:
    out = []
    for op in OPS:
        if not op.name.startswith("complex.") or not op.differentiable:
            continue
        for dtype, limit in ((C128, 2), (C64, 1)):
            picked = [(i, s) for i, s in enumerate(op.samples(dtype)) if _usable(op, s)][:limit]
            out += [pytest.param(op, dtype, s, id=f"{op.name}-{dtype.name}-{i}-{s.desc}") for i, s in picked]
    return out


CASES = _cases()


def test_every_differentiable_complex_op_has_cases() -> None:
    ops = {op.name for op in OPS if op.name.startswith("complex.") and op.differentiable}
    assert len(ops) >= 20 and ops == {p.values[0].name for p in CASES}


@pytest.mark.parametrize("op, dtype, sample", CASES)
def test_complex_derivatives(op: OpInfo, dtype: np.dtype, sample: SampleInput) -> None:
    rng = np.random.default_rng(zlib.crc32(f"cgrad/{op.name}/{sample.desc}/{dtype.name}".encode()))
    g, leaves = flat_function(op.fn, sample, op.name)
    expected = _outputs(g, leaves)
    single = dtype == C64 or any(x.dtype in (np.float32, C64) for x in leaves + expected)
    rtol, atol = (2e-3, 2e-4) if single else (1e-6, 1e-8)
    # an output rounded to single precision: a wider step (the ops cast linearly there)
    h = 1e-2 if any(e.dtype in (np.float32, C64) for e in expected) else H

    # (a) real and imaginary directions, each against finite differences
    tans_by_dir = {}
    for direction in ("real", "imag", "both"):
        ts = [_tangent(x, rng, direction) if _inexact(x) else np.zeros_like(x) for x in leaves]
        out, tan = jvp(g, tuple(leaves), tuple(ts))
        for o, e in zip(fd.leaves(out), expected):
            assert_array_same(o, e, op.tol, what="jvp primal vs NumPy: ")
        found = directional(g, leaves, [t if _inexact(x) else None for x, t in zip(leaves, ts)], h)
        for t, d, e in zip(fd.leaves(tan), found, expected):
            assert t.shape == e.shape
            if e.dtype.kind not in "fc":
                assert np.all(t == 0), "an integer/bool output has a zero tangent"
                continue
            assert t.dtype == e.dtype, f"tangent dtype {t.dtype}, primal {e.dtype}"
            scale = max(1.0, float(np.max(np.abs(d), initial=0.0)))
            np.testing.assert_allclose(np.asarray(t, np.complex128), d, rtol=rtol, atol=atol * scale,
                                       err_msg=f"(a) jvp vs finite differences, {direction} direction")
        tans_by_dir[direction] = (ts, fd.leaves(tan))

    # (b) Re<u, J t> == Re<J* u, t>
    ts, tans = tans_by_dir["both"]
    cts = [_tangent(e, rng, "both") if e.dtype.kind in "fc" else np.zeros_like(e) for e in expected]
    primal, vjp_fn = vjp(g, *leaves)
    back = vjp_fn(fd.like(primal, [c.reshape(np.shape(o)) for c, o in zip(cts, fd.leaves(primal))]))
    assert isinstance(back, tuple) and len(back) == len(leaves)
    for c, x in zip(back, leaves):
        if _inexact(x):
            assert np.shape(c) == x.shape and np.asarray(c).dtype == x.dtype, \
                f"cotangent {np.shape(c)} {np.asarray(c).dtype} for a primal {x.shape} {x.dtype}"
    lhs = sum(real_inner(u, t) for u, t, e in zip(cts, tans, expected) if e.dtype.kind in "fc")
    rhs = sum(real_inner(c, t) for c, t, x in zip(back, ts, leaves) if _inexact(x))
    mag = sum(float(np.sum(np.abs(np.asarray(a, np.complex128)))) for a in list(tans) + list(back)
              if a is not None)
    np.testing.assert_allclose(lhs, rhs, rtol=rtol, atol=atol * (1 + mag),
                               err_msg="(b) Re<u, jvp(t)> != Re<vjp(u), t>")

    # (c) grad of the real loss Re<u, f> is vjp(u) (torch.func: dL/dx + 1j dL/dy)
    if len(expected) == 1 and expected[0].dtype.kind in "fc":
        u = cts[0]
        active = tuple(k for k, x in enumerate(leaves) if _inexact(x))

        def loss(*arrays: Any) -> Any:
            return np.sum(np.real(np.conj(u) * g(*arrays)))
        grads = grad(loss, argnums=active)(*leaves)
        grads = grads if isinstance(grads, tuple) else (grads,)
        for gk, k in zip(grads, active):
            np.testing.assert_allclose(np.asarray(gk, np.complex128), np.asarray(back[k], np.complex128),
                                       rtol=rtol, atol=atol, err_msg="(c) grad(Re<u, f>) != vjp(u)")
