"""Forward tests generated from the OpInfo registry (tests/ops/opinfo.py).

For every OpInfo x dtype x sample:

* ``test_compiled_matches_numpy``: ``jit(op.fn)(*args)`` equals ``op.fn(*args)``
  run by NumPy: same result structure, dtype and shape, values within the op's
  tolerance (exact for integers and bools, nan positions equal); the inputs are
  left untouched.
* ``test_interpreter_matches_numpy``: the IR the frontend produces, run by the
  reference interpreter, equals NumPy too; for an alias (``alias_of``: ``np.add``
  of ``add``), the IR also equals that op's IR on the same arguments, so the
  compiled test (and the vmap and derivative tests) of that op cover it and are
  not repeated.

Then ``test_every_primitive_is_covered`` checks that every primitive the
compiler defines (except ``cond``/``while``, covered by
tests/functions) occurs in the IR of some sample, and ``test_error_inputs``
that every error input raises its documented error at the user's line.

One ``Kernel`` per OpInfo is shared by all its samples (it compiles once per
signature), so each (OpInfo, signature) compiles once per worker.
"""
from __future__ import annotations

import copy
import inspect
import os
import warnings
from typing import Any

import numpy as np
import pytest

from compiler import jit
from compiler.errors import CompileError
from tests.ops import internal
from tests.ops.compare import assert_array_same, assert_same, flatten
from tests.ops.opinfo import OPS, SCIPY_ONLY_PRIMITIVES, OpInfo, SampleInput, _sp, by_name

CASES = [pytest.param(op, dtype, sample, id=f"{op.name}-{dtype.name}-{i}-{sample.desc}")
         for op in OPS for dtype in op.dtypes for i, sample in enumerate(op.samples(dtype))]
#: an alias (OpInfo.alias_of) stages to its op's IR: compiling it again would compile the same program
COMPILED_CASES = [p for p in CASES if p.values[0].alias_of is None]

_KERNELS: dict[str, Any] = {}


def kernel(op: OpInfo) -> Any:
    """The one Kernel of an OpInfo (per test worker)."""
    if op.name not in _KERNELS:
        _KERNELS[op.name] = jit(op.fn, signature=op.signature,
                                name="op_" + "".join(c if c.isalnum() else "_" for c in op.name))
    return _KERNELS[op.name]


def numpy_result(fn: Any, sample: SampleInput) -> Any:
    args, kwargs = copy.deepcopy((sample.args, sample.kwargs))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # e.g. var with ddof >= the count
        return fn(*args, **kwargs)


def dynamic_arguments(fn: Any, sample: SampleInput) -> list[np.ndarray]:
    """The kernel inputs of a call, in order: array leaves, and Python floats as float64 scalars.

    Python ints, bools, strings, None and dtypes are compile-time constants (docs: compiler/api.py).
    """
    bound = inspect.signature(fn).bind(*sample.args, **sample.kwargs)
    out = []
    for _, leaf in flatten([bound.args, dict(bound.kwargs)]):
        if isinstance(leaf, (np.ndarray, np.generic)):
            out.append(np.asarray(leaf))
        elif isinstance(leaf, float):
            out.append(np.float64(leaf))
    return out


@pytest.mark.parametrize("op, dtype, sample", COMPILED_CASES)
def test_compiled_matches_numpy(op: OpInfo, dtype: np.dtype, sample: SampleInput) -> None:
    expected = numpy_result(op.ref, sample)
    before = copy.deepcopy((sample.args, sample.kwargs))
    got = kernel(op)(*sample.args, **sample.kwargs)
    assert_same(got, expected, op.tol, what=f"{op.name}: ")
    for (path, a), (_, b) in zip(flatten(before), flatten((sample.args, sample.kwargs))):
        assert_array_same(b, a, what=f"input {path} was modified: ")


@pytest.mark.parametrize("op, dtype, sample", CASES)
def test_interpreter_matches_numpy(op: OpInfo, dtype: np.dtype, sample: SampleInput) -> None:
    expected = numpy_result(op.ref, sample)
    fn_ir = internal.stage(op.fn, sample.args, sample.kwargs, op.signature)
    dynamic = dynamic_arguments(op.fn, sample)
    assert len(dynamic) == len(fn_ir.in_types), \
        f"the IR takes {len(fn_ir.in_types)} inputs, the call has {len(dynamic)} dynamic arguments"
    outs = internal.interpret(fn_ir, *dynamic)
    leaves = flatten(expected)
    assert len(outs) == len(leaves), f"{len(outs)} results, expected {len(leaves)}"
    for got, (path, want) in zip(outs, leaves):
        assert_array_same(got, want, op.tol, what=f"{op.name} (interpreted) {path}: ")
    if op.alias_of is not None:
        base = by_name(op.alias_of)
        assert internal.ir_text(fn_ir) == internal.ir_text(internal.stage(base.fn, sample.args, sample.kwargs)), \
            f"{op.name} does not stage to the IR of {base.name}"


#: not reachable from a plain NumPy spelling: data-dependent control flow (tests/functions covers
#: cond and while); `chunked` is made only by vmap(chunk_size=...) and `size_of` only by the
#: transform rules of the indexing primitives, so the transform tests cover those two
EXEMPT = {"cond", "while", "chunked", "size_of", "rng_key", "geev", "fft_pass", "fft_unpack",
          "triangular_solve",
          "fft_runtime",      # fft's decomposition of a symbolic length: its PrimSamples and tests/fft/
          "reduce_max_sumexp"}  # made by transforms/online.py after the transforms: its PrimSamples
#: rng_key (the key of the call) takes a fresh key per call, so no NumPy run can equal a compiled
#: one: tests/random checks it against the seed protocol (test_generator.py, test_processes.py);
#: geev is made by eig's decomposition only (after staging): its PrimSamples and
#: tests/linalg/test_eig_lapack.py cover it; fft_pass and fft_unpack likewise (fft's decomposition;
#: their PrimSamples and tests/fft/); triangular_solve is made by lu_solve's and eig's
#: decompositions and by AD rules (its PrimSamples, tests/linalg/test_lu.py and the jvp/vjp tests)


def test_every_primitive_is_covered() -> None:
    """Every primitive (but EXEMPT) appears in the IR of at least one OpInfo sample."""
    wanted = internal.primitive_names() - EXEMPT - (SCIPY_ONLY_PRIMITIVES if _sp is None else set())
    seen: set[str] = set()
    failures = 0
    for op in OPS:
        for dtype in op.dtypes:
            for sample in op.samples(dtype):
                if wanted <= seen:
                    break
                try:
                    fn_ir = internal.stage(op.fn, sample.args, sample.kwargs, op.signature)
                except Exception:   # noqa: BLE001  (reported by the tests above)
                    failures += 1
                    continue
                seen.update(internal.primitives_in(fn_ir))
    uncovered = sorted(wanted - seen)
    print(f"primitives covered: {len(wanted & seen)}/{len(wanted)}; uncovered: {uncovered}"
          f" ({failures} samples failed to stage)")
    assert not uncovered, f"primitives without an OpInfo sample: {uncovered} (add an OpInfo to tests/ops/opinfo.py)"


ERROR_CASES = [pytest.param(op, err, id=f"{op.name}-{i}-{err.exc.__name__}")
               for op in OPS for i, err in enumerate(op.errors())]


@pytest.mark.parametrize("op, err", ERROR_CASES)
def test_error_inputs(op: OpInfo, err: Any) -> None:
    """A user error is rejected at compile time with the documented class, at the user's line."""
    fn = err.fn or op.fn
    with pytest.raises(err.exc, match=err.match) as info:
        jit(fn)(*err.sample.args, **err.sample.kwargs)
    e = info.value
    assert isinstance(e, CompileError), f"{type(e).__name__} is not a CompileError"
    assert e.filename and os.path.basename(e.filename) == "opinfo.py", \
        f"the error points at {e.filename}:{e.lineno}, not at the user's code in opinfo.py"
    lines, first = inspect.getsourcelines(fn)
    assert first <= e.lineno < first + len(lines), \
        f"the error points at line {e.lineno}, outside the function (lines {first}-{first + len(lines) - 1})"
