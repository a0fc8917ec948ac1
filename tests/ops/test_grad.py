"""Differentiation tests generated from the OpInfo registry (tests/ops/opinfo.py).

For every OpInfo with ``supports_jvp`` or ``supports_vjp`` (but aliases,
``alias_of``, which stage to their op's IR): the first ``N_SAMPLES`` (= 4) usable
float64 samples (2 for the thinly sampled OpInfos, ``thin > 1``), and the first
usable float32 sample; every OpInfo gets its own samples, so every differentiable
primitive is reached in both precisions.
The array arguments of a sample are the inputs (Python scalars and keywords are
bound as constants); the arrays of the sample's dtype are differentiated, the
others (integer indices, the float64 partner of a float32 sample, ...) get zero
tangents. Oracles are NumPy only, on the *uncompiled* function, with the finite
differences of tests/fd.py (4-point central stencil, the step halved until the
estimate is stable: up to 10 times, for piecewise linear ops such as mod):

* ``test_derivatives``:
  (a) ``jvp(f, primals, tangents)`` against the directional finite difference along
      the tangent, computed in float64 (float32 inputs are widened exactly: the
      derivative of the float32 function at that point), rtol 1e-5 in float64 and
      ``F32_GRAD_RTOL`` in float32; the primal output equals NumPy within the op's
      forward tolerance; integer and bool outputs have exactly zero tangents;
  (b) the dot-product test ``<u, jvp(v)> == <vjp(u), v>`` with a random output
      cotangent u (rtol 1e-9 in float64, 1e-5 in float32); the cotangents of
      integer/bool inputs are symbolic zeros (None) or zeros. For ops with
      ``supports_jvp=False``, ``<vjp(u), v>`` is compared with ``<u, finite
      differences along v>`` instead;
  (c) for float64 samples with one float64 output of ops with ``supports_grad2``:
      with ``s(x) = sum(u * f(x))``, one kernel ``jvp(grad(s, argnums=<float64
      inputs>))`` gives ``grad s`` (the vjp of u, used in (b) instead of ``vjp``)
      and the Hessian-vector product H v (for ops without forward mode: ``grad``
      of ``<grad s, v>``); ``<grad s, w>`` is checked against a central
      difference of s along w, and ``<w, H v>`` against the mixed second
      difference.
* ``test_zero_derivative``: the float ops that are piecewise constant
  (``differentiable=False``: floor, ceil, round, rint, trunc, sign, //) have zero
  jvp and zero gradients (docs/autodiff.md, conventions).

Only differentiable points are generated: samples with nan/inf/huge/subnormal
values (the ``edges`` samples), samples whose NumPy output is not finite, and
samples without an array of the tested dtype are left out at collection. The
documented conventions at kinks (abs at 0, ties of maximum/max, clip at a bound,
...) are tested with analytic values in tests/autodiff/test_conventions.py.
Each kernel compiles once per (OpInfo, sample, dtype).
"""
from __future__ import annotations

import copy
import zlib
from typing import Any, Callable

import numpy as np
import pytest

from compiler import grad, jvp, vjp
from tests import fd
from tests.ops.compare import F32_GRAD_RTOL, assert_array_same
from tests.ops.opinfo import OPS, OpInfo, SampleInput

F64, F32 = np.dtype(np.float64), np.dtype(np.float32)
N_SAMPLES = 4
N_SAMPLES_ALIAS = 2      # OpInfos that are another spelling of a sampled op (thin > 1)
N_SAMPLES_F32 = 1


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


def is_edge(x: np.ndarray) -> bool:
    """nan, inf, huge or (nearly) subnormal values: not a point where derivatives are compared."""
    if x.dtype.kind != "f" or x.size == 0:
        return False
    a = np.abs(x.astype(np.float64))
    tiny = float(np.finfo(x.dtype).tiny) ** (1 / 3)
    return bool(not np.all(np.isfinite(a)) or a.max() > 1e6 or np.any((a > 0) & (a < tiny)))




def _numpy_outputs(g: Callable[..., Any], leaves: list[np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(o, dtype=np.result_type(o)) for o in fd.evaluate(g, *leaves)]


def unusable(op: OpInfo, sample: SampleInput, dtype: np.dtype) -> str | None:
    """Why a sample is not a point to compare derivatives at (None: it is)."""
    _, leaves = flat_function(op.fn, sample)
    if not any(x.dtype == dtype for x in leaves):
        return f"no {dtype.name} array argument"
    if any(is_edge(x) for x in leaves):
        return "edge values (nan/inf/huge/subnormal)"
    g, leaves = flat_function(op.fn, sample, op.name)
    outs = _numpy_outputs(g, leaves)
    if any(o.dtype.kind == "f" and not np.all(np.isfinite(o)) for o in outs):
        return "non-finite output"
    return None


def usable_samples(op: OpInfo, dtype: np.dtype) -> list[tuple[int, SampleInput]]:
    """The first usable samples of `dtype` (N_SAMPLES, N_SAMPLES_ALIAS or N_SAMPLES_F32)."""
    limit = N_SAMPLES_F32 if dtype == F32 else N_SAMPLES_ALIAS if op.thin > 1 else N_SAMPLES
    out = []
    for i, s in enumerate(op.samples(dtype)):
        if len(out) == limit:
            break
        if unusable(op, s, dtype) is None:
            out.append((i, s))
    return out


def _grad_ops() -> list[OpInfo]:
    """The differentiable OpInfos (aliases, ``alias_of``, stage to their op's IR: that op's tests cover them)."""
    return [op for op in OPS if (op.supports_jvp or op.supports_vjp) and op.alias_of is None]


def mode(op: OpInfo, sample: SampleInput, dtype: np.dtype) -> str:
    """How the reverse mode is taken: "grad2" (the gradient of s = sum(u * f) with the
    Hessian-vector product, one float64 output), "grad" (the gradient of s, one output of the
    sample's dtype), else "vjp" (the vjp function, any outputs)."""
    g, leaves = flat_function(op.fn, sample, op.name)
    outs = _numpy_outputs(g, leaves)
    single = len(outs) == 1 and outs[0].dtype == dtype
    if not op.supports_vjp or not single:
        return "vjp"
    return "grad2" if dtype == F64 and op.supports_grad2 else "grad"


CASES = [pytest.param(op, sample, dtype, m, id=f"{op.name}-{dtype.name}-{i}-{sample.desc}")
         for op in _grad_ops() for dtype in (F64, F32) if dtype in op.dtypes
         for i, sample in usable_samples(op, dtype) for m in [mode(op, sample, dtype)]]



def tangents_for(leaves: list[np.ndarray], dtype: np.dtype, rng: np.random.Generator) -> list[np.ndarray]:
    """Random normal tangents for the leaves of `dtype`; zeros (of the leaf's dtype) for the others."""
    return [rng.standard_normal(x.shape).astype(dtype) if x.dtype == dtype else np.zeros_like(x)
            for x in leaves]


def step(leaves: list[np.ndarray], base: float) -> float:
    """The finite-difference step: `base`, larger for inputs of large magnitude (up to 10x)."""
    scale = max([1.0] + [float(np.max(np.abs(x))) for x in leaves if x.dtype.kind == "f" and x.size])
    return base * min(scale, 10.0)


def finite_differences(g: Callable[..., Any], leaves: list[np.ndarray], tangents: list[np.ndarray],
                       dtype: np.dtype) -> list[np.ndarray] | None:
    """The derivative of every output of g along the tangents of the `dtype` leaves, in float64
    (float32 leaves widened exactly); None where no step gives a stable estimate."""
    xs = [x.astype(F64) if x.dtype == dtype else x for x in leaves]
    ts = [t.astype(F64) if x.dtype == dtype else None for x, t in zip(leaves, tangents)]
    # an output computed in float32 whatever the inputs (astype(np.float32)): a wider step
    single = any(o.dtype == F32 for o in _numpy_outputs(g, xs))
    eps = np.finfo(F32 if single else F64).eps
    return fd.stable_directional_derivative(g, xs, ts, step(xs, 1e-2 if single else 1e-5),
                                            rtol=1e-4 if single else 1e-6, eps=float(eps))


def _rng(op: OpInfo, sample: SampleInput, dtype: np.dtype) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(f"grad/{op.name}/{sample.desc}/{dtype.name}".encode()))


# ---- first and second derivatives -----------------------------------------------------------------------

def check_jvp(op: OpInfo, g: Callable[..., Any], leaves: list[np.ndarray], tangents: list[np.ndarray],
              expected: list[np.ndarray], found: list[np.ndarray], dtype: np.dtype) -> list[np.ndarray]:
    """(a): jvp's primal output equals NumPy, its tangents the finite differences; returns the tangents."""
    single = dtype == F32 or any(e.dtype == F32 for e in expected)
    out, tan = jvp(g, tuple(leaves), tuple(tangents))
    outs, tans = fd.leaves(out), fd.leaves(tan)
    assert len(outs) == len(expected) and len(tans) == len(expected)
    for o, e, t in zip(outs, expected, tans):
        assert t.shape == e.shape, f"tangent shape {t.shape}, expected {e.shape}"
        assert_array_same(o, e, op.tol, what="jvp primal output vs NumPy: ")
    for t, d, e in zip(tans, found, expected):
        if e.dtype.kind != "f":
            assert np.all(t == 0), "an integer/bool output must have a zero tangent"
            continue
        assert t.dtype == e.dtype, f"tangent dtype {t.dtype}, primal {e.dtype}"
        rtol = F32_GRAD_RTOL if dtype == F32 else 1e-4 if single else 1e-5
        scale = max(1.0, float(np.max(np.abs(d))) if d.size else 0.0)
        np.testing.assert_allclose(t, d, rtol=rtol, atol=(rtol if single else 1e-6) * scale,
                                   err_msg="(a) jvp vs central finite differences")
    return tans


def check_dot_product(lhs_terms: list[np.ndarray], rhs_terms: list[np.ndarray], rtol: float, atol: float,
                      what: str) -> None:
    """sum(lhs_terms) == sum(rhs_terms), the tolerance scaled by the sum of their magnitudes."""
    lhs = sum(float(np.sum(a)) for a in lhs_terms)
    rhs = sum(float(np.sum(a)) for a in rhs_terms)
    scale = sum(float(np.sum(np.abs(a))) for a in lhs_terms + rhs_terms)
    np.testing.assert_allclose(lhs, rhs, rtol=rtol, atol=atol * (1 + scale), err_msg=what)


def check_second_order(g: Callable[..., Any], leaves: list[np.ndarray], u: np.ndarray, grads: tuple, hv: tuple,
                       active: tuple[int, ...], v: list[np.ndarray], w: list[np.ndarray]) -> None:
    """(c): with s = sum(u * g), <grad s, w> and <w, H v> against finite differences of s."""
    def s(*arrays):
        return np.sum(u * g(*arrays))
    assert isinstance(grads, tuple) and len(grads) == len(active) and len(hv) == len(active)
    eps = np.finfo(np.float64).eps
    mag = 1.0 + abs(float(fd.evaluate(s, *leaves)[0])) + float(np.sum(np.abs(u * fd.evaluate(g, *leaves)[0])))
    v = [t if x.dtype == F64 else None for t, x in zip(v, leaves)]
    w = [t if x.dtype == F64 else None for t, x in zip(w, leaves)]
    d1 = fd.stable(lambda h: fd.directional_derivative(s, leaves, w, h), step(leaves, 1e-5), 1e-7,
                   lambda h: 20 * eps * mag / h)
    d2 = fd.stable(lambda h: [np.asarray(fd.second_directional_derivative(s, leaves, v, w, h))],
                   step(leaves, 1e-3), 1e-6, lambda h: 20 * eps * mag / h ** 2)
    assert d1 is not None and d2 is not None, \
        "the finite differences are not stable at this sample: choose another point"
    (d1, _), (d2, h2) = d1, d2
    got1 = sum(float(np.sum(gk * w[k])) for gk, k in zip(grads, active))
    got2 = sum(float(np.sum(hk * w[k])) for hk, k in zip(hv, active))
    np.testing.assert_allclose(got1, d1[0], rtol=1e-6, atol=1e-9 * mag,
                               err_msg="<grad s, w> vs central finite differences")
    np.testing.assert_allclose(got2, d2[0], rtol=1e-4, atol=50 * eps * mag / h2 ** 2,
                               err_msg="<w, H v> vs the mixed second difference")


@pytest.mark.parametrize("op, sample, dtype, mode", CASES)
def test_derivatives(op: OpInfo, sample: SampleInput, dtype: np.dtype, mode: str) -> None:
    """(a) jvp vs finite differences; (b) vjp vs jvp (dot-product test), the vjp taken as the
    gradient of s = sum(u * f) where f has one output (`mode` "grad"), and then, in float64,
    together with the Hessian-vector product (by one kernel, jvp(grad(s)), where the op has
    forward mode: `mode` "grad2"), for (c)."""
    rng = _rng(op, sample, dtype)
    g, leaves = flat_function(op.fn, sample, op.name)
    expected = _numpy_outputs(g, leaves)
    tangents = tangents_for(leaves, dtype, rng)
    found = finite_differences(g, leaves, tangents, dtype)
    assert found is not None, "the finite differences are not stable at this sample: choose another point"
    single = dtype == F32 or any(e.dtype == F32 for e in expected)
    tans = check_jvp(op, g, leaves, tangents, expected, found, dtype) if op.supports_jvp else found

    if mode in ("grad", "grad2"):  # grad s = vjp(u) (and H v)
        u = rng.standard_normal(expected[0].shape).astype(dtype)
        active = tuple(k for k, x in enumerate(leaves) if x.dtype == dtype)
        v, w = tangents_for(leaves, F64, rng), tangents_for(leaves, F64, rng)

        def s(*arrays):
            return np.sum(u * g(*arrays))
        if mode == "grad":
            grads = grad(s, argnums=active)(*leaves)
            grads = grads if isinstance(grads, tuple) else (grads,)
            for gk, k in zip(grads, active):
                assert gk.shape == leaves[k].shape and gk.dtype == dtype, f"gradient {gk.shape} {gk.dtype}"
            rtol, atol = ((1e-5, 1e-6) if single else (1e-9, 1e-12)) if op.supports_jvp else \
                ((F32_GRAD_RTOL, F32_GRAD_RTOL) if single else (1e-5, 1e-7))
            check_dot_product([np.asarray(u, F64) * np.asarray(tans[0], F64)],
                              [np.asarray(gk, F64) * np.asarray(tangents[k], F64) for gk, k in zip(grads, active)],
                              rtol, atol, "(b) <u, f'(x) v> != <grad <u, f>, v>")
            return
        if op.supports_jvp:    # forward over reverse: one kernel
            grads, hv = jvp(grad(s, argnums=active), tuple(leaves), tuple(v))
        else:                  # reverse over reverse: H v = grad of <grad s, v> (H is symmetric)
            grad_s = grad(s, argnums=active)

            def gv(*arrays):
                gs = grad_s(*arrays)
                return sum(np.sum(gs[i] * v[k]) for i, k in enumerate(active))
            grads, hv = grad_s(*leaves), grad(gv, argnums=active)(*leaves)
        for gk, k in zip(grads, active):
            assert gk.shape == leaves[k].shape and gk.dtype == F64, f"gradient {gk.shape} {gk.dtype}"
        check_dot_product([u * tans[0]], [gk * tangents[k] for gk, k in zip(grads, active)],
                          *((1e-9, 1e-12) if op.supports_jvp else (1e-5, 1e-7)), "(b) <u, f'(x) v> != <grad <u, f>, v>")
        check_second_order(g, leaves, u, grads, hv, active, v, w)
        return

    if not op.supports_vjp:
        return
    cts = [rng.standard_normal(e.shape).astype(e.dtype) if e.dtype.kind == "f" else np.zeros_like(e)
           for e in expected]
    primal_out, vjp_fn = vjp(g, *leaves)
    for o, e in zip(fd.leaves(primal_out), expected):
        assert_array_same(o, e, op.tol, what="vjp primal output vs NumPy: ")
    back = vjp_fn(fd.like(primal_out, [c.reshape(np.shape(o)) for c, o in zip(cts, fd.leaves(primal_out))]))
    assert isinstance(back, tuple) and len(back) == len(leaves), "vjp_fn returns one cotangent per primal"
    for c, x in zip(back, leaves):
        if x.dtype.kind != "f":
            assert c is None or np.all(np.asarray(c) == 0), "an integer/bool input has a zero cotangent"
        else:
            assert np.shape(c) == x.shape and np.asarray(c).dtype == x.dtype, \
                f"cotangent {np.shape(c)} {np.asarray(c).dtype} for a primal {x.shape} {x.dtype}"
    if op.supports_jvp:
        rtol, atol = (1e-5, 1e-6) if single else (1e-9, 1e-12)
    else:
        rtol, atol = (F32_GRAD_RTOL, F32_GRAD_RTOL) if single else (1e-5, 1e-7)
    check_dot_product([np.asarray(u, F64) * np.asarray(t, F64) for u, t, e in zip(cts, tans, expected)
                       if e.dtype.kind == "f"],
                      [np.asarray(c, F64) * np.asarray(t, F64) for c, t, x in zip(back, tangents, leaves)
                       if x.dtype == dtype], rtol, atol,
                      "(b) <u, jvp(v)> != <vjp(u), v>" if op.supports_jvp else
                      "<u, finite differences(v)> != <vjp(u), v>")


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
    rng = _rng(op, sample, F64)
    g, leaves = flat_function(op.fn, sample, op.name)
    expected = _numpy_outputs(g, leaves)
    tangents = tangents_for(leaves, F64, rng)
    out, tan = jvp(g, tuple(leaves), tuple(tangents))
    for o, e, t in zip(fd.leaves(out), expected, fd.leaves(tan)):
        np.testing.assert_array_equal(o, e)
        assert t.shape == e.shape and np.all(t == 0), f"nonzero tangent of {op.name}: {t}"
    active = tuple(k for k, x in enumerate(leaves) if x.dtype == F64)
    u = rng.standard_normal(expected[0].shape)

    def s(*arrays):
        return np.sum(u * g(*arrays))
    gs = grad(s, argnums=active)(*leaves)
    for gk, k in zip(gs, active):
        assert gk.shape == leaves[k].shape and np.all(gk == 0), f"nonzero gradient of {op.name}: {gk}"
