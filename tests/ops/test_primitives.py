"""Primitive-level tests generated from the OpInfo registry (``OpInfo.prim_samples``).

A ``PrimSample`` applies one primitive directly, as an IR function of its array
arguments, below the NumPy surface (clamped out-of-bounds indices, any
``dot_general`` dimension numbers, every ``convert`` dtype pair). The oracle is
the reference interpreter, which runs the primitive's NumPy reference:

* ``test_native_matches_interpreter`` (the backend): the function compiled to
  native code equals the interpreter within the op's tolerance, for every
  sample of every dtype in ``prim_dtypes``;
* ``test_vmap_every_in_dims``: for EVERY combination of in_dims in
  {None, 0, ..., ndim} per argument, the batched function (``vmap_function``,
  verified) equals the stack of per-example interpreted runs, interpreted for
  float32 and float64 samples, and natively for the all-0 and
  first-argument-only combinations of the first float64 sample of each
  non-elementwise primitive of an op;
* ``test_jvp_and_vjp`` (``grad`` samples of differentiable primitives, float32
  and float64): the tangents of ``jvp_function`` equal the directional finite
  differences of the interpreted function in float64 (tests/fd.py; float32
  arguments widened exactly), the dot-product test ``<u, J t> == <J^T u, t>``
  links ``vjp_function`` to them, and the native vjp equals the interpreted one
  (float64).

Then ``test_every_primitive_has_samples`` checks that every primitive but the
region-carrying ones has a PrimSample, and ``test_prim_samples_belong_to_their_op``
that each PrimSample's primitive occurs in the IR of its OpInfo's own samples
(``size_of`` excepted: only the vmap rule of ``take`` makes it).
"""
from __future__ import annotations

import itertools
import zlib
from typing import Any

import numpy as np
import pytest

from tests import fd
from tests.ops import internal
from tests.ops.compare import F32_GRAD_RTOL, Tol, assert_array_same
from tests.ops.opinfo import FLOATS, OPS, SCIPY_ONLY_PRIMITIVES, OpInfo, PrimSample, _sp

F64, F32 = np.dtype(np.float64), np.dtype(np.float32)
B = 3
#: batched vs per-example runs of the same NumPy reference (sums may regroup)
VMAP_TOL = Tol((1e-6, 1e-6), (1e-12, 1e-12), ulps=4)
#: primitives whose IR carries regions or host callbacks: tests/functions and tests/custom
#: (and the Function.* OpInfos) cover them through the frontend
REGION_PRIMITIVES = {"cond", "while", "for", "chunked", "custom_function", "host_call"}
#: a fresh value per call: the interpreted and native runs cannot agree by construction;
#: tests/random/test_generator.py checks rng_key against the seed protocol instead
STATEFUL = {"rng_key"}
#: made by transform rules only, never by the frontend (size_of: the vmap rule of take)
TRANSFORM_MADE = {"chunked", "size_of"}
#: made by another primitive's decomposition only (the decompose stage runs after the
#: transforms): geev, from eig of n > 4 (tests/linalg/test_eig_lapack.py); fft_pass and
#: fft_unpack, from fft of a window of rows or a long row (tests/fft/); triangular_solve,
#: from lu_solve's and eig's generated code and the rules of lu and cholesky
DECOMPOSITION_MADE = {"geev", "fft_pass", "fft_unpack", "triangular_solve",
                      "fft_runtime",      # fft's decomposition of a symbolic length (tests/fft/test_symbolic.py)
                      "reduce_max_sumexp"}  # transforms/online.py, after the transforms (tests/backend/test_max_sumexp.py)


def _param(op: OpInfo, dtype: np.dtype, sample: PrimSample, *extra: Any) -> pytest.param:
    return pytest.param(op, dtype, sample, *extra, id=f"{op.name}-{dtype.name}-{sample.desc}")


def _out_dtypes(sample: PrimSample) -> list[np.dtype]:
    fn = internal.one_op_function(sample.prim, sample.args, sample.params)
    return [np.dtype(t.dtype) for t in fn.out_types]


def _vmap_dtypes(op: OpInfo) -> list[np.dtype]:
    return [d for d in op.prim_dtypes if d in FLOATS] or [op.prim_dtypes[0]]


def _grad_sample(op: OpInfo, sample: PrimSample) -> bool:
    return (sample.grad and (op.supports_jvp or op.supports_vjp) and internal.differentiable(sample.prim)
            and any(np.asarray(a).dtype.kind == "f" for a in sample.args)
            and all(d.kind == "f" for d in _out_dtypes(sample)))


NATIVE = [_param(op, d, s) for op in OPS for d in op.prim_dtypes for s in op.prims(d)]
def _vmap_cases() -> list[pytest.param]:
    """(op, dtype, sample, native): native for the first float64 sample of each (op, primitive)
    that is not elementwise (elementwise batching runs natively in tests/ops/test_vmap.py for
    every elementwise op; the shape, indexing, reduction and contraction rules here get batch
    dimensions NumPy-level code cannot give them)."""
    out, seen = [], set()
    for op in OPS:
        if not op.supports_vmap:
            continue
        for d in _vmap_dtypes(op):
            for s in op.prims(d):
                if s.args:
                    native = d == F64 and (op.name, s.prim) not in seen and not internal.elementwise(s.prim)
                    seen |= {(op.name, s.prim)} if d == F64 else set()
                    out.append(_param(op, d, s, native))
    return out


VMAP = _vmap_cases()
GRAD = [_param(op, d, s) for op in OPS for d in op.prim_dtypes if d in FLOATS for s in op.prims(d)
        if _grad_sample(op, s)]


def _rng(sample: PrimSample, dtype: np.dtype, what: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(f"{what}/{dtype.name}/{sample.desc}".encode()))


# ---- the backend: native == interpreter ---------------------------------------------------------------

@pytest.mark.parametrize("op, dtype, sample", NATIVE)
def test_native_matches_interpreter(op: OpInfo, dtype: np.dtype, sample: PrimSample) -> None:
    fn = internal.one_op_function(sample.prim, sample.args, sample.params)
    internal.verify(fn)
    expected = internal.interpret(fn, *sample.args)
    got = internal.compile_function(fn)(*sample.args)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert_array_same(g, e, op.tol, what=f"{sample.prim} native vs interpreter: ")


# ---- vmap: every in_dims combination ------------------------------------------------------------------

def _example(a: np.ndarray, k: int) -> np.ndarray:
    """The k-th batch element made from `a`: shifted floats and 0-d integer indices, rolled arrays."""
    a = np.asarray(a)
    if a.dtype.kind == "f" or (a.dtype.kind == "i" and a.ndim == 0):
        return a + np.array(k, a.dtype)
    return np.roll(a, k)


@pytest.mark.parametrize("op, dtype, sample, native", VMAP)
def test_vmap_every_in_dims(op: OpInfo, dtype: np.dtype, sample: PrimSample, native: bool) -> None:
    """vmap_function(fn, in_dims) == np.stack of interpreted per-example runs, for every in_dims."""
    fn = internal.one_op_function(sample.prim, sample.args, sample.params)
    args = [np.asarray(a) for a in sample.args]
    choices = [[None] + list(range(a.ndim + 1)) for a in args]
    failures, combos = [], 0
    for in_dims in itertools.product(*choices):
        if all(d is None for d in in_dims):
            continue
        combos += 1
        batched = [a if d is None else np.ascontiguousarray(np.stack([_example(a, k) for k in range(B)], axis=d))
                   for a, d in zip(args, in_dims)]
        per_example = [internal.interpret(fn, *[a if d is None else np.take(a, k, axis=d)
                                                for a, d in zip(batched, in_dims)]) for k in range(B)]
        expected = [np.stack(outs) for outs in zip(*per_example)]
        try:
            vfn = internal.vmap_function(fn, in_dims, B)
            internal.verify(vfn)
            runs = [("interpreted", internal.interpret(vfn, *batched))]
            if native and (all(d == 0 for d in in_dims) or all(d is None for d in in_dims[1:])):
                runs.append(("native", internal.compile_function(vfn)(*batched)))
            for how, got in runs:
                for g, e in zip(got, expected):
                    assert_array_same(g, e, VMAP_TOL, what=f"{how}: ")
        except Exception as e:   # noqa: BLE001  (collect every failing combination, then fail)
            failures.append(f"in_dims={in_dims}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    assert not failures, f"{len(failures)} of {combos} in_dims combinations fail:\n  " + "\n  ".join(failures[:12])


# ---- jvp and vjp -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("op, dtype, sample", GRAD)
def test_jvp_and_vjp(op: OpInfo, dtype: np.dtype, sample: PrimSample) -> None:
    """jvp == finite differences of the interpreted primitive; <u, J t> == <J^T u, t>; native vjp."""
    rng = _rng(sample, dtype, "grad")
    args = [np.asarray(a) for a in sample.args]
    active = [a.dtype.kind == "f" for a in args]
    fn = internal.one_op_function(sample.prim, args, sample.params)
    n_out = len(fn.results)
    tangents = [rng.standard_normal(a.shape).astype(a.dtype) for a, on in zip(args, active) if on]

    jfn = internal.jvp_function(fn, active)
    internal.verify(jfn)
    got = internal.interpret(jfn, *args, *tangents)
    primal_out, tangent_out = got[:n_out], got[n_out:]
    for g, e in zip(primal_out, internal.interpret(fn, *args)):
        assert_array_same(g, e, what="jvp primal output vs the primitive: ")
    assert len(tangent_out) == n_out

    # finite differences of the float64 version of the primitive (float32 arguments widened
    # exactly, a float32 dtype parameter such as convert's target made float64)
    args64 = [a.astype(F64) if on else a for a, on in zip(args, active)]
    it = iter(tangents)
    ts64 = [next(it).astype(F64) if on else None for on in active]
    params64 = {k: F64 if isinstance(v, np.dtype) and v == F32 else v for k, v in sample.params.items()}
    fn64 = internal.one_op_function(sample.prim, args64, params64)
    found = fd.stable_directional_derivative(lambda *xs: internal.interpret(fn64, *xs), args64, ts64,
                                             1e-5, rtol=1e-6)
    assert found is not None, "the finite differences are not stable at this sample: choose another point"
    single = dtype == F32 or any(o.dtype == F32 for o in primal_out)
    rtol = F32_GRAD_RTOL if single else 1e-5
    for t, d in zip(tangent_out, found):
        scale = max(1.0, float(np.max(np.abs(d), initial=0)))
        np.testing.assert_allclose(t, d, rtol=rtol, atol=(rtol if single else 1e-6) * scale,
                                   err_msg="jvp vs finite differences")

    vfn = internal.vjp_function(fn, active)
    internal.verify(vfn)
    cts = [rng.standard_normal(o.shape).astype(o.dtype) for o in primal_out]
    back = internal.interpret(vfn, *args, *cts)[n_out:]
    assert [b.shape for b in back] == [a.shape for a, on in zip(args, active) if on]
    terms_l = [np.asarray(u, F64) * np.asarray(t, F64) for u, t in zip(cts, tangent_out)]
    terms_r = [np.asarray(c, F64) * np.asarray(t, F64) for c, t in zip(back, tangents)]
    lhs, rhs = sum(float(np.sum(a)) for a in terms_l), sum(float(np.sum(a)) for a in terms_r)
    scale = sum(float(np.sum(np.abs(a))) for a in terms_l + terms_r)
    np.testing.assert_allclose(lhs, rhs, rtol=1e-5 if single else 1e-9, atol=(1e-6 if single else 1e-12) * (1 + scale),
                               err_msg="<u, J t> != <J^T u, t>")

    if dtype == F64:
        native = internal.compile_function(vfn)(*args, *cts)
        for g, e in zip(native[n_out:], back):
            assert_array_same(g, e, Tol(f64=(1e-11, 1e-13), ulps=4), what="native vjp vs interpreter: ")


# ---- the registry covers every primitive ----------------------------------------------------------------

def test_every_primitive_has_samples() -> None:
    """Every primitive (but the region-carrying ones) has a PrimSample in some OpInfo."""
    sampled = {s.prim for op in OPS for d in op.prim_dtypes for s in op.prims(d)}
    missing = sorted(internal.primitive_names() - REGION_PRIMITIVES - STATEFUL - sampled
                     - (SCIPY_ONLY_PRIMITIVES if _sp is None else set()))
    assert not missing, f"primitives without a PrimSample: {missing} (add prim samples in tests/ops/opinfo.py)"
    unknown = sorted(sampled - internal.primitive_names())
    assert not unknown, f"unknown primitives: {unknown}"


def test_prim_samples_belong_to_their_op() -> None:
    """A PrimSample's primitive occurs in the IR of its OpInfo's own (NumPy-level) samples."""
    wrong = []
    for op in OPS:
        wanted = {s.prim for d in op.prim_dtypes for s in op.prims(d)} - TRANSFORM_MADE - DECOMPOSITION_MADE
        seen: set[str] = set()
        for dtype in op.dtypes:
            for sample in op.samples(dtype):
                if wanted <= seen:
                    break
                seen |= internal.primitives_in(internal.stage(op.fn, sample.args, sample.kwargs, op.signature))
        if not wanted <= seen:
            wrong.append(f"{op.name}: {sorted(wanted - seen)}")
    assert not wrong, "primitive samples attached to an OpInfo that does not lower to them: " + "; ".join(wrong)
