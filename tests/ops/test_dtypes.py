"""The narrow integer, unsigned and float16 dtypes on every OpInfo (``OpInfo.more_dtypes``).

The full sample grids of tests/ops/test_forward.py, test_vmap.py and test_grad.py run
in float32, float64, int32, int64 and bool; the other seven dtypes (int8, int16,
uint8, uint16, uint32, uint64, float16) reach the same lowerings with other LLVM
types, unsigned comparisons and divisions, and float16's rounding, so each OpInfo
runs a few of its samples in each of them (a rotating random one and its edge
samples; two random ones in float16), against NumPy itself:

* ``test_forward``: compiled == NumPy (dtype, shape, values: exact for integers and
  for the correctly rounded float16 ops, within the op's tolerance otherwise) and
  the interpreter == NumPy; where NumPy 2 raises (a Python int that does not fit the
  dtype: ``uint8_array // -2``), compiling raises the same exception class.
* ``test_vmap``: one in_dims combination per sample, natively, and every combination
  through the interpreter, against the Python loop over NumPy.
* ``test_float16_derivatives``: jvp in float16 against float64 finite differences at
  the same point, and the dot-product test of vjp against jvp, within float16's
  precision (``F16_GRAD_RTOL``); tangents and cotangents are float16, as in torch.
"""
from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pytest

from compiler import jit, jvp, vjp
from compiler.ir.types import DTYPES
from tests import fd
from tests.ops import internal
from tests.ops.compare import assert_array_same, assert_same, flatten
from tests.ops.opinfo import F16, OPS, OpInfo, SampleInput
from tests.ops.test_forward import dynamic_arguments, kernel, numpy_result
from tests.ops.test_grad import (check_dot_product, finite_differences, flat_function, tangents_for,
                                 unusable)
from tests.ops.test_vmap import _check_combo, all_combos, array_slots, combo_failures

#: float16 derivatives (each op rounded to 11 bits) vs float64 finite differences at the same point
F16_GRAD_RTOL = 3e-2


def _pick(op: OpInfo, dtype: np.dtype) -> list[tuple[int, SampleInput]]:
    samples = op.samples(dtype)
    if not samples:
        return []
    k = zlib.crc32(f"{op.name}/{dtype.name}".encode())
    chosen = {k % len(samples)}
    if dtype == F16:
        chosen.add((k // 7) % len(samples))
    chosen.update(i for i, s in enumerate(samples) if "edges" in s.desc)
    return [(i, samples[i]) for i in sorted(chosen)]


MORE_OPS = [op for op in OPS if op.alias_of is None and op.more_dtypes]
CASES = [pytest.param(op, dtype, sample, id=f"{op.name}-{dtype.name}-{i}-{sample.desc}")
         for op in MORE_OPS for dtype in op.more_dtypes for i, sample in _pick(op, dtype)]


def _numpy_error(op: OpInfo, sample: SampleInput) -> BaseException | None:
    try:
        numpy_result(op.ref, sample)
    except (TypeError, ValueError, OverflowError) as e:
        return e
    return None


@pytest.mark.parametrize("op, dtype, sample", CASES)
def test_forward(op: OpInfo, dtype: np.dtype, sample: SampleInput) -> None:
    error = _numpy_error(op, sample)
    if error is not None:       # NumPy 2 refuses the call: so does the compiler, with its class
        with pytest.raises(type(error)):
            kernel(op)(*sample.args, **sample.kwargs)
        return
    expected = numpy_result(op.ref, sample)
    got = kernel(op)(*sample.args, **sample.kwargs)
    assert_same(got, expected, op.tol, what=f"{op.name}: ")
    fn_ir = internal.stage(op.fn, sample.args, sample.kwargs, op.signature)
    outs = internal.interpret(fn_ir, *dynamic_arguments(op.fn, sample))
    for out, (path, want) in zip(outs, flatten(expected)):
        assert_array_same(out, want, op.tol, what=f"{op.name} (interpreted) {path}: ")


VMAP_CASES = [pytest.param(op, dtype, i, sample, id=f"{op.name}-{dtype.name}-{i}-{sample.desc}")
              for op in MORE_OPS if op.supports_vmap for dtype in op.more_dtypes
              for i, sample in _pick(op, dtype)[:1]
              if array_slots(sample.args) and len(array_slots(sample.args)) <= 2
              and _numpy_error(op, sample) is None]


@pytest.mark.parametrize("op, dtype, index, sample", VMAP_CASES)
def test_vmap(op: OpInfo, dtype: np.dtype, index: int, sample: SampleInput) -> None:
    combos = all_combos(sample.args)
    native = combos[zlib.crc32(f"{op.name}/{dtype.name}".encode()) % len(combos)]
    _check_combo(op, dtype, index, sample, native, native=True)
    failures = combo_failures(op, dtype, index, sample, combos)
    assert not failures, f"{len(failures)} of {len(combos)} combinations fail:\n  " + "\n  ".join(failures[:8])


def _grad_cases() -> list[Any]:
    out = []
    for op in MORE_OPS:
        if F16 not in op.more_dtypes or not (op.supports_jvp and op.supports_vjp):
            continue
        for i, sample in enumerate(op.samples(F16)):
            if unusable(op, sample, F16) is None:
                out.append(pytest.param(op, sample, id=f"{op.name}-{i}-{sample.desc}"))
                break
    return out


@pytest.mark.parametrize("op, sample", _grad_cases())
def test_float16_derivatives(op: OpInfo, sample: SampleInput) -> None:
    rng = np.random.default_rng(zlib.crc32(f"f16grad/{op.name}".encode()))
    g, leaves = flat_function(op.fn, sample, op.name)
    expected = [np.asarray(o) for o in fd.evaluate(g, *leaves)]
    tangents = tangents_for(leaves, F16, rng)
    found = finite_differences(g, leaves, tangents, F16)
    assert found is not None, "the finite differences are not stable at this sample"
    out, tan = jvp(g, tuple(leaves), tuple(tangents))
    tans = fd.leaves(tan)
    for o, e in zip(fd.leaves(out), expected):
        assert_array_same(o, e, op.tol, what="jvp primal output vs NumPy: ")
    for t, d, e in zip(tans, found, expected):
        if e.dtype.kind != "f":
            assert np.all(t == 0), "an integer/bool output has a zero tangent"
            continue
        assert t.dtype == e.dtype, f"tangent dtype {t.dtype}, primal {e.dtype}"
        scale = max(1.0, float(np.max(np.abs(d))) if d.size else 0.0)
        np.testing.assert_allclose(np.asarray(t, np.float64), d, rtol=F16_GRAD_RTOL,
                                   atol=F16_GRAD_RTOL * scale, err_msg="float16 jvp vs finite differences")
    primal_out, vjp_fn = vjp(g, *leaves)
    cts = [rng.standard_normal(e.shape).astype(e.dtype) if e.dtype.kind == "f" else np.zeros_like(e)
           for e in expected]
    back = vjp_fn(fd.like(primal_out, [c.reshape(np.shape(o)) for c, o in zip(cts, fd.leaves(primal_out))]))
    for c, x in zip(back, leaves):
        if x.dtype == F16:
            assert np.asarray(c).dtype == F16 and np.shape(c) == x.shape, "a float16 input's cotangent is float16"
    check_dot_product([np.asarray(u, np.float64) * np.asarray(t, np.float64)
                       for u, t, e in zip(cts, tans, expected) if e.dtype.kind == "f"],
                      [np.asarray(c, np.float64) * np.asarray(t, np.float64)
                       for c, t, x in zip(back, tangents, leaves) if x.dtype == F16],
                      F16_GRAD_RTOL, F16_GRAD_RTOL, "<u, jvp(v)> != <vjp(u), v> in float16")


# ---- every cast between the fourteen dtypes: one kernel --------------------------------------------

_CAST_VALUES = {"b": [True, False, True, True, False, True],
                "i": [-128, -3, 0, 5, 100, 127],
                "u": [0, 3, 5, 100, 200, 255],
                "f": [0.0, 0.5, 1.5, 2.7, 100.25, 127.9],     # in range of every integer dtype
                "c": [0.5 + 1j, 0j, 1.5 - 2j, 2.7 + 0.25j, 100.25 - 1j, 127.9 + 3j]}


def _cast_sources() -> list[np.ndarray]:
    out = [np.array(_CAST_VALUES[d.kind], d) for d in DTYPES]
    wide = {np.dtype(np.int64): -2**40 - 1, np.dtype(np.uint64): 2**63 + 5, np.dtype(np.uint32): 2**32 - 1,
            np.dtype(np.int32): -2**31, np.dtype(np.float64): 65519.0, np.dtype(np.float32): 1e-7}
    for x in out:           # one value each that only the wide dtypes hold (rounding, wrapping)
        if x.dtype in wide:
            x[1] = wide[x.dtype]
    return out


def _casts(*xs):
    return tuple(x.astype(d) for x in xs for d in DTYPES)


def test_every_cast_between_the_dtypes():
    """144 conversions (int -> narrower int wraps, int -> float and float -> float16 round
    to nearest even, uint64 -> float, bool both ways) in one kernel, against NumPy; a float
    out of an integer dtype's range saturates (docs/guide.md), against NumPy's clip."""
    xs = _cast_sources()
    with np.errstate(all="ignore"):
        want = list(_casts(*xs))
    for k, (x, d) in enumerate((x, d) for x in xs for d in DTYPES):
        if x.dtype.kind == "f" and d.kind in "iu":   # out of range: saturates (NumPy: platform-defined)
            info = np.iinfo(d)
            want[k] = np.clip(x.astype(np.float64), info.min, info.max).astype(d)
    got = jit(_casts)(*xs)
    labels = [f"{x.dtype} -> {d}" for x in xs for d in DTYPES]
    bad = [f"{lab}: {g.tolist()}, NumPy {w.tolist()}" for lab, g, w in zip(labels, got, want)
           if g.dtype != w.dtype or not np.array_equal(g, w)]
    assert not bad, "\n".join(bad[:20])
