"""Differentiation tests generated from the OpInfo registry (tests/ops/opinfo.py).

For every OpInfo with ``supports_jvp`` or ``supports_vjp`` and a float64 dtype,
the first ``N_SAMPLES`` (= 4) usable float64 samples, 2 for the OpInfos that
are alternative spellings of another (``thin > 1``), to keep the generated suite
under two minutes on two cores; every OpInfo still gets its own samples, so every
differentiable primitive is reached. The array arguments of a sample
are the inputs (Python scalars and keywords are bound as constants); the
float64 ones are differentiated. Oracles are NumPy only, on the *uncompiled*
function:

* ``test_jvp_and_vjp``:
  (a) ``jvp(f, primals, tangents)`` against central finite differences along the
      tangent, a 4-point stencil ``(-f(x+2ht) + 8f(x+ht) - 8f(x-ht) + f(x-2ht)) / 12h``
      (error O(h^4); h = 1e-5 scaled by the size of the inputs), rtol 1e-5;
      integer and bool outputs must have exactly zero tangents;
  (b) the dot-product test ``<u, jvp(v)> == <vjp(u), v>`` (rtol 1e-9) with a random
      output cotangent u; the cotangents of integer/bool inputs are symbolic zeros
      (None) or zeros. For ops with ``supports_jvp=False``, ``<vjp(u), v>`` is compared
      with ``<u, finite differences along v>`` (rtol 1e-5) instead.
* ``test_second_derivative`` (where ``supports_grad2`` and the output is float64):
  with ``s(x) = sum(u * f(x))``, the kernel ``jvp(grad(s, argnums=<float64 inputs>))``
  gives the gradient and the Hessian-vector product H v (for ops without forward mode,
  ``supports_jvp=False``: ``grad`` of ``<grad s, v>``); they are checked as
  ``<grad s, w>`` against a central difference of ``s`` along w, and
  ``<w, H v>`` against the mixed second difference
  ``(s(x+hv+hw) - s(x+hv-hw) - s(x-hv+hw) + s(x-hv-hw)) / 4h^2``.
* ``test_zero_derivative``: the float ops that are piecewise constant
  (``differentiable=False``: floor, ceil, round, rint, trunc, sign, //) have zero
  jvp and zero gradients (docs/autodiff.md, conventions).

Samples at non-differentiable points are skipped, not compared: samples with
nan/inf/huge/subnormal edge values (the ``edges`` samples), samples whose NumPy
output is not finite, and samples where the finite differences are not finite
(outside the domain, e.g. a negative base with a non-integral exponent). The
documented conventions at kinks (abs at 0, ties of maximum/max, clip at a bound,
...) are tested with analytic values in tests/autodiff/test_conventions.py.
Float32 inputs of mixed-dtype samples get zero tangents (their finite differences
would be dominated by float32 rounding); float32 gradients are tested in
tests/autodiff/test_float32.py. Each kernel compiles once per (OpInfo, sample).
"""
from __future__ import annotations

import copy
from typing import Any, Callable

import numpy as np
import pytest

from compiler import grad, jvp, vjp
from tests.ops.opinfo import OPS, OpInfo, SampleInput

F64, F32 = np.dtype(np.float64), np.dtype(np.float32)
N_SAMPLES = 4
N_SAMPLES_ALIAS = 2      # OpInfos that are another spelling of a sampled op (thin > 1)


# ---- sample preparation ------------------------------------------------------------------------------

def _is_array(x: Any) -> bool:
    return isinstance(x, (np.ndarray, np.generic))


def array_slots(args: tuple) -> list[tuple[int, int | None]]:
    """Positions of the array leaves among the positional arguments: (arg, element or None)."""
    slots: list[tuple[int, int | None]] = []
    for i, a in enumerate(args):
        if _is_array(a):
            slots.append((i, None))
        elif isinstance(a, (tuple, list)) and any(_is_array(e) for e in a):
            slots.extend((i, j) for j, e in enumerate(a) if _is_array(e))
    return slots


def _rebuild(template: tuple, slots: list, arrays: tuple) -> list:
    """The positional arguments with the array leaves put back (also runs inside compiled code)."""
    out = list(template)
    for k in range(len(slots)):
        i, j = slots[k]
        if j is None:
            out[i] = arrays[k]
        else:
            seq = list(out[i])
            seq[j] = arrays[k]
            out[i] = tuple(seq)
    return out


def flat_function(fn: Callable[..., Any], sample: SampleInput, label: str = "") -> tuple[Callable[..., Any], list[Any]]:
    """(g, leaves): ``g(*leaves) == fn(*sample.args, **sample.kwargs)``, with every array leaf a
    positional argument of g and everything else (Python scalars, keywords) bound as a constant.

    `label` (the OpInfo name) is a constant of g: OpInfo lambdas that share a source line
    (floor/ceil, round/rint) would otherwise get the same on-disk cache key (a cache bug,
    pinned by tests/autodiff/test_cache_key.py), and this file tests differentiation."""
    args = copy.deepcopy(sample.args)
    kwargs = copy.deepcopy(sample.kwargs)
    slots = array_slots(args)
    leaves = [np.asarray(args[i] if j is None else args[i][j]) for i, j in slots]
    template = tuple(None if (i, None) in slots else
                     (tuple(None for _ in a) if any(s[0] == i for s in slots) else a)
                     for i, a in enumerate(args))

    def g(*arrays):
        assert label is not None       # makes `label` part of the kernel's cache key
        return fn(*_rebuild(template, slots, arrays), **kwargs)
    return g, leaves


def out_leaves(out: Any) -> list[Any]:
    if isinstance(out, (tuple, list)):
        return [leaf for o in out for leaf in out_leaves(o)]
    return [np.asarray(out)]


def like_tree(out: Any, leaves: list[Any]) -> Any:
    """`leaves` in the structure of `out` (tuples and lists)."""
    it = iter(leaves)

    def go(o: Any) -> Any:
        if isinstance(o, (tuple, list)):
            return type(o)(go(e) for e in o)
        return next(it)
    return go(out)


def numpy_call(g: Callable[..., Any], leaves: list[Any]) -> list[np.ndarray]:
    with np.errstate(all="ignore"):
        return [np.asarray(o, dtype=np.result_type(o)) for o in out_leaves(g(*copy.deepcopy(leaves)))]


def is_edge(x: np.ndarray) -> bool:
    if x.dtype.kind != "f" or x.size == 0:
        return False
    a = np.abs(x.astype(np.float64))
    return bool(not np.all(np.isfinite(a)) or a.max() > 1e6 or np.any((a > 0) & (a < 1e-100)))


def usable_samples(op: OpInfo) -> list[tuple[int, SampleInput, str | None]]:
    """The float64 samples with their skip reason (None: tested); at most N_SAMPLES tested."""
    out, kept, limit = [], 0, (N_SAMPLES_ALIAS if op.thin > 1 else N_SAMPLES)
    for i, s in enumerate(op.samples(F64)):
        _, leaves = flat_function(op.fn, s)
        reason = None
        if not any(x.dtype == F64 for x in leaves):
            reason = "no float64 array argument"
        elif any(is_edge(x) for x in leaves):
            reason = "edge values (nan/inf/huge/subnormal): not a differentiable point"
        else:
            g, leaves = flat_function(op.fn, s, op.name)
            outs = numpy_call(g, leaves)
            if any(o.dtype.kind == "f" and not np.all(np.isfinite(o)) for o in outs):
                reason = "non-finite output"
            elif op.name.startswith("std") and any(np.any(o == 0) for o in outs):
                reason = "std of one element: sqrt at 0 is not differentiable"
        if reason is None:
            if kept >= limit:
                continue
            kept += 1
        out.append((i, s, reason))
    return out


def _grad_ops() -> list[OpInfo]:
    return [op for op in OPS if F64 in op.dtypes and (op.supports_jvp or op.supports_vjp)]


CASES = [pytest.param(op, sample, reason, id=f"{op.name}-{i}-{sample.desc}")
         for op in _grad_ops() for i, sample, reason in usable_samples(op)]
GRAD2_CASES = [p for p in CASES if p.values[0].supports_grad2]


def tangents_for(leaves: list[np.ndarray], rng: np.random.Generator) -> list[np.ndarray]:
    """Random normal tangents for float64 leaves; zeros (of the leaf's dtype) for the others."""
    return [rng.standard_normal(x.shape) if x.dtype == F64 else np.zeros_like(x) for x in leaves]


def step(leaves: list[np.ndarray], base: float) -> float:
    """The finite-difference step: `base`, larger for inputs of large magnitude (up to 10x)."""
    scale = max([1.0] + [float(np.max(np.abs(x))) for x in leaves if x.dtype == F64 and x.size])
    return base * min(scale, 10.0)


def shifted(leaves: list[np.ndarray], *moves: tuple[float, list[np.ndarray]]) -> list[np.ndarray]:
    """leaves + sum(c * d) over the moves, on the float64 leaves only."""
    out = []
    for k, x in enumerate(leaves):
        if x.dtype == F64:
            y = x.copy()
            for c, d in moves:
                y = y + c * d[k]
            out.append(y)
        else:
            out.append(x)
    return out


def stable(estimate: Callable[[float], list[np.ndarray] | None], h: float, rtol: float,
           noise: Callable[[float], float]) -> tuple[list[np.ndarray], float] | None:
    """A finite-difference estimate that does not change when the step is halved.

    Near a kink or a jump (mod, clip, a domain boundary) the difference quotient over the
    step is not the derivative at the point; then the step is halved (down to h/64).
    Returns the estimate and its step, or None when no step gives a stable, finite estimate: the function is not smooth
    at the scale of the finite differences there (the oracle cannot judge that point)."""
    prev = estimate(h)
    for k in range(1, 7):
        cur = estimate(h / 2 ** k)
        if prev is not None and cur is not None and all(
                np.allclose(a, b, rtol=rtol, atol=noise(h / 2 ** k) + rtol * float(np.max(np.abs(b), initial=0)))
                for a, b in zip(prev, cur)):
            return cur, h / 2 ** k
        prev = cur
    return None


def central_difference(g: Callable[..., Any], leaves: list[np.ndarray], t: list[np.ndarray],
                       h: float, rtol: float) -> list[np.ndarray] | None:
    """Directional derivative of every output along t (4-point stencil, stable step)."""
    def estimate(hh: float) -> list[np.ndarray] | None:
        f = {c: numpy_call(g, shifted(leaves, (c * hh, t))) for c in (-2, -1, 1, 2)}
        fd = [(-p2.astype(np.float64) + 8 * p1 - 8 * m1 + m2) / (12 * hh)
              for p2, p1, m1, m2 in zip(f[2], f[1], f[-1], f[-2])]
        return fd if all(np.all(np.isfinite(d)) for d in fd) else None
    mag = max([1.0] + [float(np.max(np.abs(o), initial=0)) for o in numpy_call(g, leaves)])
    found = stable(estimate, h, rtol, lambda hh: 100 * np.finfo(np.float32 if rtol > 1e-5 else np.float64).eps
                   * mag / hh)
    return None if found is None else found[0]


def _rng(op: OpInfo, sample: SampleInput) -> np.random.Generator:
    import zlib
    return np.random.default_rng(zlib.crc32(f"grad/{op.name}/{sample.desc}".encode()))


# ---- (a) jvp vs finite differences, (b) vjp vs jvp -----------------------------------------------------

@pytest.mark.parametrize("op, sample, skip", CASES)
def test_jvp_and_vjp(op: OpInfo, sample: SampleInput, skip: str | None) -> None:
    if skip:
        pytest.skip(skip)
    rng = _rng(op, sample)
    g, leaves = flat_function(op.fn, sample, op.name)
    expected = numpy_call(g, leaves)
    tangents = tangents_for(leaves, rng)

    single = any(e.dtype == F32 for e in expected)
    fd = central_difference(g, leaves, tangents, step(leaves, 1e-2 if single else 1e-5),
                            1e-4 if single else 1e-6)
    if fd is None:
        pytest.skip("not smooth at the scale of the finite differences (a kink, jump or domain boundary)")
    if op.supports_jvp:
        out, tan = jvp(g, tuple(leaves), tuple(tangents))
        outs, tans = out_leaves(out), out_leaves(tan)
        assert len(outs) == len(expected) and len(tans) == len(expected)
        for o, e, t in zip(outs, expected, tans):
            assert o.shape == e.shape and t.shape == e.shape, f"shapes {o.shape}, {t.shape}, expected {e.shape}"
            np.testing.assert_allclose(o, e, rtol=1e-6 if e.dtype == F32 else 1e-12, atol=1e-12,
                                       err_msg="jvp primal output vs NumPy")
        for t, d, e in zip(tans, fd, expected):
            if e.dtype.kind != "f":
                assert np.all(t == 0), "an integer/bool output must have a zero tangent"
                continue
            scale = max(1.0, float(np.max(np.abs(d))) if d.size else 0.0)
            np.testing.assert_allclose(t, d, rtol=1e-4 if single else 1e-5,
                                       atol=(1e-4 if single else 1e-6) * scale,
                                       err_msg="(a) jvp vs central finite differences")
    else:       # no forward mode: vjp is compared with the finite differences directly
        tans = [np.asarray(d) for d in fd]

    if not op.supports_vjp:
        return
    cts = [rng.standard_normal(e.shape).astype(e.dtype) if e.dtype.kind == "f" else np.zeros_like(e)
           for e in expected]
    primal_out, vjp_fn = vjp(g, *leaves)
    for o, e in zip(out_leaves(primal_out), expected):
        np.testing.assert_allclose(o, e, rtol=1e-6 if e.dtype == F32 else 1e-12, atol=1e-12)
    back = vjp_fn(like_tree(primal_out, [c.reshape(np.shape(o)) for c, o in zip(cts, out_leaves(primal_out))]))
    assert isinstance(back, tuple) and len(back) == len(leaves), "vjp_fn returns one cotangent per primal"
    for c, x in zip(back, leaves):
        if x.dtype.kind != "f":
            assert c is None or np.all(np.asarray(c) == 0), "an integer/bool input has a zero cotangent"
        else:
            assert np.shape(c) == x.shape and np.asarray(c).dtype == x.dtype, \
                f"cotangent {np.shape(c)} {np.asarray(c).dtype} for a primal {x.shape} {x.dtype}"
    terms_l = [np.asarray(u, np.float64) * t for u, t, e in zip(cts, tans, expected) if e.dtype.kind == "f"]
    terms_r = [np.asarray(c, np.float64) * v for c, v, x in zip(back, tangents, leaves) if x.dtype == F64]
    lhs = sum(float(np.sum(a)) for a in terms_l)
    rhs = sum(float(np.sum(a)) for a in terms_r)
    scale = sum(float(np.sum(np.abs(a))) for a in terms_l + terms_r)
    np.testing.assert_allclose(lhs, rhs, rtol=(1e-6 if single else 1e-9) if op.supports_jvp else 1e-5,
                               atol=(1e-12 if op.supports_jvp else 1e-7) * (1 + scale),
                               err_msg="(b) <u, jvp(v)> != <vjp(u), v>" if op.supports_jvp else
                               "<u, finite differences(v)> != <vjp(u), v>")


# ---- (c) second derivatives ------------------------------------------------------------------------------

@pytest.mark.parametrize("op, sample, skip", GRAD2_CASES)
def test_second_derivative(op: OpInfo, sample: SampleInput, skip: str | None) -> None:
    if skip:
        pytest.skip(skip)
    rng = np.random.default_rng(_rng(op, sample).integers(1 << 30) + 1)
    g, leaves = flat_function(op.fn, sample, op.name)
    expected = numpy_call(g, leaves)
    if len(expected) != 1 or expected[0].dtype != F64:
        pytest.skip("second derivatives are checked on float64 outputs")
    u = rng.standard_normal(expected[0].shape)
    active = tuple(k for k, x in enumerate(leaves) if x.dtype == F64)

    def s(*arrays):
        return np.sum(u * g(*arrays))

    def s_np(xs: list[np.ndarray]) -> float:
        with np.errstate(all="ignore"):
            return float(np.sum(u * np.asarray(g(*copy.deepcopy(xs)))))

    v, w = tangents_for(leaves, rng), tangents_for(leaves, rng)
    if op.supports_jvp:       # forward over reverse
        grads, hv = jvp(grad(s, argnums=active), tuple(leaves), tuple(v))
    else:                     # reverse over reverse: H v = grad of <grad s, v> (H is symmetric)
        grad_s = grad(s, argnums=active)

        def gv(*arrays):
            gs = grad_s(*arrays)
            return sum(np.sum(gs[i] * v[k]) for i, k in enumerate(active))
        grads, hv = grad_s(*leaves), grad(gv, argnums=active)(*leaves)
    assert isinstance(grads, tuple) and len(grads) == len(active) and len(hv) == len(active)

    eps = np.finfo(np.float64).eps
    mag = 1.0 + abs(s_np(leaves)) + float(np.sum(np.abs(u * expected[0])))

    def first(h: float) -> list[np.ndarray] | None:
        d = (-s_np(shifted(leaves, (2 * h, w))) + 8 * s_np(shifted(leaves, (h, w)))
             - 8 * s_np(shifted(leaves, (-h, w))) + s_np(shifted(leaves, (-2 * h, w)))) / (12 * h)
        return [np.asarray(d)] if np.isfinite(d) else None

    stencil = ((-2, 1 / 12), (-1, -8 / 12), (1, 8 / 12), (2, -1 / 12))

    def second(h: float) -> list[np.ndarray] | None:
        # the 4-point first-derivative stencil along v applied to the one along w: O(h^4)
        d = sum(ca * cb * s_np(shifted(leaves, (a * h, v), (b * h, w)))
                for a, ca in stencil for b, cb in stencil) / (h * h)
        return [np.asarray(d)] if np.isfinite(d) else None

    d1 = stable(first, step(leaves, 1e-5), 1e-7, lambda h: 20 * eps * mag / h)
    d2 = stable(second, step(leaves, 1e-3), 1e-6, lambda h: 20 * eps * mag / h ** 2)
    if d1 is None or d2 is None:
        pytest.skip("not smooth at the scale of the finite differences (a kink, jump or domain boundary)")
    (d1, _), (d2, h2) = d1, d2
    got1 = sum(float(np.sum(gk * w[k])) for gk, k in zip(grads, active))
    got2 = sum(float(np.sum(hk * w[k])) for hk, k in zip(hv, active))
    np.testing.assert_allclose(got1, d1[0], rtol=1e-6, atol=1e-9 * mag,
                               err_msg="<grad s, w> vs central finite differences")
    np.testing.assert_allclose(got2, d2[0], rtol=1e-4, atol=50 * eps * mag / h2 ** 2,
                               err_msg="<w, H v> vs the mixed second difference")


# ---- piecewise-constant float ops: zero derivatives ------------------------------------------------------

ZERO_OPS = ["floor", "ceil", "round", "rint", "trunc", "sign", "floordiv", "round.decimals"]
ZERO_CASES = [pytest.param(op, sample, id=f"{op.name}-{i}-{sample.desc}")
              for op in OPS if op.name in ZERO_OPS
              for i, sample in enumerate([s for s in op.samples(F64)
                                          if not any(is_edge(x) for x in flat_function(op.fn, s)[1])][:2])]


def test_zero_ops_exist() -> None:
    names = {op.name for op in OPS}
    assert set(ZERO_OPS) <= names and len(ZERO_CASES) >= len(ZERO_OPS)


@pytest.mark.parametrize("op, sample", ZERO_CASES)
def test_zero_derivative(op: OpInfo, sample: SampleInput) -> None:
    rng = _rng(op, sample)
    g, leaves = flat_function(op.fn, sample, op.name)
    expected = numpy_call(g, leaves)
    tangents = tangents_for(leaves, rng)
    out, tan = jvp(g, tuple(leaves), tuple(tangents))
    for o, e, t in zip(out_leaves(out), expected, out_leaves(tan)):
        np.testing.assert_array_equal(o, e)
        assert t.shape == e.shape and np.all(t == 0), f"nonzero tangent of {op.name}: {t}"
    active = tuple(k for k, x in enumerate(leaves) if x.dtype == F64)
    u = rng.standard_normal(expected[0].shape)

    def s(*arrays):
        return np.sum(u * g(*arrays))
    gs = grad(s, argnums=active)(*leaves)
    for gk, k in zip(gs, active):
        assert gk.shape == leaves[k].shape and np.all(gk == 0), f"nonzero gradient of {op.name}: {gk}"
