"""vmap tests generated from the OpInfo registry (tests/ops/opinfo.py).

The law under test is the one of the torch.func docs: for a pure function,
``vmap(f, in_dims)(*batched)`` equals ``np.stack([f(*example_k) for k in range(B)])``.
The oracle is always that Python loop over the *uncompiled* NumPy function
(``op.ref``), never the compiler.

For every OpInfo with ``supports_vmap`` (but aliases, ``alias_of``), every sample of float64 (plus int64
or int32, and bool, where the op has them) with at least one array argument,
and the first ``N_FLOAT32`` (= 2) such samples of float32:

* ``test_vmap_ir_every_in_dims``: for EVERY combination of in_dims in
  {0, 1, -1, None} per array leaf (1 only where the batched rank allows it; the
  all-None combination skipped), the batched IR that ``vmap`` stages is
  verified and run by the reference interpreter, and equals the NumPy loop.
  This is the exhaustive, fast part (no LLVM compile per combination). Samples
  with three or more array leaves (where, clip, dynamic updates, concatenate
  of three) run it for float64 only: 64 combinations each.
* ``test_vmap_native``: the real thing, ``vmap(fn, in_dims)(*batched)``
  compiled to native code, for a deterministic subset of the combinations
  (one per float64 sample: all-0 for every third, else a combination rotating
  with the sample, so that across the samples of an op every kind of
  combination runs natively; one for every third int/bool/float32 sample and
  the first float32 one). Each kernel compiles once.
* ``test_vmap_nested``: ``vmap(vmap(fn, inner), outer)`` against a double
  loop, for two in_dims combinations per float64 sample (interpreter), and the
  mixed one natively for every eighth sample.
* ``test_vmap_out_dims``: ``out_dims=1`` / ``-1`` (interpreter for every float64
  sample, natively for a subset).
* ``test_vmap_ignored_input``: ops without array arguments (creation
  functions) under a vmap whose batched input they ignore: the result is
  broadcast to the batch.

Python scalars and other static arguments get in_dim None. Keyword arguments
of a sample (static: ``axis=``, ``keepdims=``) are bound by a wrapper so that
in_dims covers exactly the positional arguments (see the note at `_bind_kwargs`).
Per-example inputs are permutations of the sample's values (or small shifts for
one-element float arrays), so every example stays in the op's domain and index
arguments stay in bounds. Every fifth sample uses a batch of size 1.
"""
from __future__ import annotations

import copy
import itertools
import warnings
import zlib
from typing import Any, Callable

import numpy as np
import pytest

from compiler import vmap
from tests.ops import internal
from tests.ops.compare import assert_same
from tests.ops.opinfo import OPS, OpInfo, SampleInput

F64, F32, I64, I32, BOOL = (np.dtype(t) for t in (np.float64, np.float32, np.int64, np.int32, np.bool_))
#: float32 samples per op (the first ones with an array argument)
N_FLOAT32 = 2


def vmap_dtypes(op: OpInfo) -> list[np.dtype]:
    """float64, one integer dtype (int64, else int32) and bool, where the op has them, then float32."""
    out = [d for d in (F64,) if d in op.dtypes]
    out += [I64] if I64 in op.dtypes else ([I32] if I32 in op.dtypes else [])
    out += [BOOL] if BOOL in op.dtypes else []
    out = out or [op.dtypes[0]]
    return out + ([F32] if F32 in op.dtypes and F32 not in out else [])


# ---- array leaves of a sample ---------------------------------------------------------------------

def _is_array(x: Any) -> bool:
    return isinstance(x, (np.ndarray, np.generic))


def _is_array_seq(x: Any) -> bool:
    return isinstance(x, (tuple, list)) and any(_is_array(e) for e in x)


def array_slots(args: tuple) -> list[tuple[int, int | None]]:
    """Positions of the array leaves among the positional arguments: (arg, element or None)."""
    slots = []
    for i, a in enumerate(args):
        if _is_array(a):
            slots.append((i, None))
        elif _is_array_seq(a):
            slots.extend((i, j) for j, e in enumerate(a) if _is_array(e))
    return slots


def _get(args: tuple, slot: tuple[int, int | None]) -> Any:
    i, j = slot
    return args[i] if j is None else args[i][j]


def _replace(args: tuple, values: dict) -> tuple:
    """`args` with the array leaves at the slots of `values` replaced."""
    out = list(args)
    for i, a in enumerate(args):
        if (i, None) in values:
            out[i] = values[(i, None)]
        elif _is_array_seq(a):
            out[i] = type(a)(values.get((i, j), e) for j, e in enumerate(a))
    return tuple(out)


def in_dims_tree(args: tuple, dims: dict) -> tuple:
    """The in_dims pytree for positional `args`: an int/None per array leaf, None elsewhere."""
    out = []
    for i, a in enumerate(args):
        if _is_array(a):
            out.append(dims[(i, None)])
        elif _is_array_seq(a):
            out.append(type(a)(dims.get((i, j)) for j in range(len(a))))
        else:
            out.append(None)
    return tuple(out)


def dim_choices(ndim: int) -> list[int | None]:
    """in_dims for a leaf whose per-example rank is `ndim`: 0, 1 (if the batched rank allows), -1, None."""
    return [0] + ([1] if ndim + 1 > 1 and ndim >= 1 else []) + [-1, None]


def all_combos(args: tuple) -> list[dict]:
    slots = array_slots(args)
    choices = [dim_choices(np.ndim(_get(args, s))) for s in slots]
    return [dict(zip(slots, c)) for c in itertools.product(*choices) if any(d is not None for d in c)]


# ---- per-example inputs ----------------------------------------------------------------------------

def variant(a: Any, v: int, salt: int) -> np.ndarray:
    """The v-th example made from array `a` (v = 0: `a` itself), inside the op's domain."""
    a = np.asarray(a)
    if v == 0 or a.size == 0:
        return a.copy()
    if a.size >= 2:                      # a permutation of the values: same domain, same index bounds
        rng = np.random.default_rng(salt * 1000 + v)
        flat = a.ravel().copy()
        perm = rng.permutation(flat.size)
        if np.array_equal(perm, np.arange(flat.size)):
            perm = np.roll(perm, 1)
        return flat[perm].reshape(a.shape)
    if a.dtype.kind in "fc":
        return (a + 0.25 * v).astype(a.dtype)
    if a.dtype == BOOL:
        return a ^ bool(v % 2)
    x = int(a.reshape(()))                # an integer scalar may be an index: stay in [min(x,0), max(x,-1)]
    if x >= 1:
        y = x - v % (x + 1)
    elif x <= -1:
        y = x + v % (-x)
    else:
        y = 0
    return np.array(y, a.dtype).reshape(a.shape)


def _batch_axis(d: int, ndim: int) -> int:
    return d % (ndim + 1)


def build_batch(args: tuple, dims: dict, size: int, salt: int) -> tuple[tuple, list[tuple]]:
    """(batched positional args, per-example positional args) for one in_dims combination."""
    batched, examples = {}, [dict() for _ in range(size)]
    for slot, d in dims.items():
        a = _get(args, slot)
        if d is None:
            for ex in examples:
                ex[slot] = a
            continue
        vs = [variant(a, k, salt + 7 * slot[0] + (slot[1] or 0)) for k in range(size)]
        batched[slot] = np.stack(vs, axis=_batch_axis(d, np.ndim(a)))
        for ex, v in zip(examples, vs):
            ex[slot] = v
    return _replace(args, batched), [_replace(args, ex) for ex in examples]


# ---- oracle and the two ways of running vmap -------------------------------------------------------

def numpy_call(fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    args, kwargs = copy.deepcopy((args, kwargs))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # e.g. var with ddof >= n: nan, as compiled
        return fn(*args, **kwargs)


def stack_results(results: list[Any], axis: int = 0) -> Any:
    """np.stack leaf by leaf over a list of equally structured results."""
    first = results[0]
    if isinstance(first, (tuple, list)):
        return type(first)(stack_results([r[i] for r in results], axis) for i in range(len(first)))
    if isinstance(first, dict):
        return {k: stack_results([r[k] for r in results], axis) for k in first}
    return np.stack([np.asarray(r) for r in results], axis=axis)


def _bind_kwargs(fn: Callable[..., Any], kwargs: dict) -> Callable[..., Any]:
    """A function of the positional arguments only, with the sample's (static) keywords bound.

    torch.func passes keyword arguments through unbatched and applies in_dims to the
    positional ones only; we bind them here so that this file tests the ops, whatever
    the keyword handling of vmap (tested in tests/transforms/test_vmap_api.py).
    functools.partial is not used because jit compiles plain functions only.
    """
    if not kwargs:
        return fn

    def call(*args):
        return fn(*args, **kwargs)
    return call


def _salt(op: OpInfo, dtype: np.dtype, index: int) -> int:
    return zlib.crc32(f"{op.name}/{dtype.name}/{index}".encode()) % 10007


def batch_size(index: int) -> int:
    return 1 if index % 5 == 4 else 3


def _dims_id(args: tuple, dims: dict) -> str:
    return repr(in_dims_tree(args, dims)).replace(" ", "")


# ---- the cases -------------------------------------------------------------------------------------

#: aliases (OpInfo.alias_of) stage to their op's IR: that op's tests cover them
VMAP_OPS = [op for op in OPS if op.supports_vmap and op.alias_of is None]


def _cases() -> tuple[list, list, list, list, list, list]:
    every, native, nested_ir, nested_native, outd_ir, outd_native = [], [], [], [], [], []
    for op in VMAP_OPS:
        for dtype in vmap_dtypes(op):
            with_arrays = [(i, s) for i, s in enumerate(op.samples(dtype)) if array_slots(s.args)]
            if dtype == F32:
                with_arrays = with_arrays[:N_FLOAT32]
            for k, (i, s) in enumerate(with_arrays):
                base = f"{op.name}-{dtype.name}-{i}-{s.desc}"
                if dtype == F64 or dtype.kind == "c" or len(array_slots(s.args)) <= 2:
                    every.append(pytest.param(op, dtype, i, s, id=base))
                combos = all_combos(s.args)
                zero = {slot: 0 for slot in array_slots(s.args)}
                rot = combos[(_salt(op, dtype, i) + i) % len(combos)]
                if dtype == F64:
                    picks = [zero if i % 3 == 0 else rot]
                elif i % 3 == 0 or (dtype == F32 and k == 0):
                    picks = [rot]
                else:
                    picks = []
                for dims in picks:
                    pid = f"{base}-{_dims_id(s.args, dims)}"
                    native.append(pytest.param(op, dtype, i, s, dims, id=pid))
                if dtype == F64:
                    nested_ir.append(pytest.param(op, dtype, i, s, id=base))
                    if i % 8 == 0:
                        nested_native.append(pytest.param(op, dtype, i, s, id=base))
                    outd_ir.append(pytest.param(op, dtype, i, s, id=base))
                    if i % 12 == 1:
                        outd_native.append(pytest.param(op, dtype, i, s, id=base))
    return every, native, nested_ir, nested_native, outd_ir, outd_native


EVERY, NATIVE, NESTED_IR, NESTED_NATIVE, OUTD_IR, OUTD_NATIVE = _cases()


def _check_combo(op: OpInfo, dtype: np.dtype, index: int, sample: SampleInput, dims: dict,
                 native: bool, out_dims: int = 0) -> None:
    size = batch_size(index)
    batched, examples = build_batch(sample.args, dims, size, _salt(op, dtype, index))
    per_example = [numpy_call(op.ref, ex, sample.kwargs) for ex in examples]
    fn = _bind_kwargs(op.fn, sample.kwargs)
    kernel = vmap(fn, in_dims=in_dims_tree(sample.args, dims), out_dims=out_dims)
    got = kernel(*batched) if native else internal.stage_batched(kernel, batched)
    expected = stack_results(per_example, axis=out_dims)
    assert_same(got, expected, op.tol,
                what=f"{op.name} in_dims={in_dims_tree(sample.args, dims)} out_dims={out_dims}: ")


@pytest.mark.parametrize("op, dtype, index, sample", EVERY)
def test_vmap_ir_every_in_dims(op: OpInfo, dtype: np.dtype, index: int, sample: SampleInput) -> None:
    """Every in_dims combination: batched IR (interpreted) == loop over NumPy + np.stack."""
    combos = all_combos(sample.args)
    failures = combo_failures(op, dtype, index, sample, combos)
    assert not failures, (f"{len(failures)} of {len(combos)} in_dims combinations fail:\n  "
                          + "\n  ".join(failures[:12]))


def combo_failures(op: OpInfo, dtype: np.dtype, index: int, sample: SampleInput,
                   combos: list[Any]) -> list[str]:
    """The in_dims combinations whose batched IR (interpreted) differs from the loop, each
    with its first error line (every combination is tried before a test fails)."""
    failures = []
    for dims in combos:
        try:
            _check_combo(op, dtype, index, sample, dims, native=False)
        except Exception as e:   # noqa: BLE001  (collect every failing combination, then fail)
            failures.append(f"in_dims={in_dims_tree(sample.args, dims)}: {type(e).__name__}: "
                            f"{str(e).splitlines()[0] if str(e) else ''}")
    return failures


@pytest.mark.parametrize("op, dtype, index, sample, dims", NATIVE)
def test_vmap_native(op: OpInfo, dtype: np.dtype, index: int, sample: SampleInput, dims: dict) -> None:
    """vmap(fn, in_dims)(*batched), compiled natively, == loop over NumPy + np.stack."""
    _check_combo(op, dtype, index, sample, dims, native=True)


# ---- two nesting levels ----------------------------------------------------------------------------

def _nested_pairs(args: tuple, index: int, salt: int) -> list[tuple[dict, dict]]:
    """Two (inner dims, outer dims) pairs: all 0/0, and a rotating mixed one (an argument
    may be mapped by one level only; outer dims refer to the rank after the inner batch)."""
    slots = array_slots(args)
    pairs = [({s: 0 for s in slots}, {s: 0 for s in slots})]
    options = []
    for inner in all_combos(args):
        outer_choices = []
        for s in slots:
            nd = np.ndim(_get(args, s)) + (inner[s] is not None)
            outer_choices.append(dim_choices(nd))
        for outer in itertools.product(*outer_choices):
            if any(d is not None for d in outer):
                options.append((inner, dict(zip(slots, outer))))
    mixed = [p for p in options if p != pairs[0]]
    if mixed:
        pairs.append(mixed[(salt + index) % len(mixed)])
    return pairs


def _nested_check(op: OpInfo, dtype: np.dtype, index: int, sample: SampleInput, inner: dict, outer: dict,
                  native: bool) -> None:
    n_out, n_in = 2, (1 if index % 5 == 4 else 3)
    salt = _salt(op, dtype, index)
    args = sample.args
    batched_vals, examples = {}, [[dict() for _ in range(n_in)] for _ in range(n_out)]
    for slot in array_slots(args):
        a = _get(args, slot)
        di, do = inner[slot], outer[slot]
        seed = salt + 7 * slot[0] + (slot[1] or 0)

        def ex(i: int, j: int) -> np.ndarray:
            v = (i if do is not None else 0) * n_in + (j if di is not None else 0)
            return variant(a, v, seed)
        rows = []
        for i in range(n_out):
            for j in range(n_in):
                examples[i][j][slot] = ex(i, j)
            rows.append(ex(i, 0) if di is None else np.stack([ex(i, j) for j in range(n_in)],
                                                             axis=_batch_axis(di, np.ndim(a))))
        nd = np.ndim(rows[0])
        batched_vals[slot] = rows[0] if do is None else np.stack(rows, axis=_batch_axis(do, nd))
    batched = _replace(args, batched_vals)
    expected = stack_results([stack_results([numpy_call(op.ref, _replace(args, examples[i][j]), sample.kwargs)
                                             for j in range(n_in)]) for i in range(n_out)])
    fn = _bind_kwargs(op.fn, sample.kwargs)
    kernel = vmap(vmap(fn, in_dims=in_dims_tree(args, inner)), in_dims=in_dims_tree(args, outer))
    got = kernel(*batched) if native else internal.stage_batched(kernel, batched)
    assert_same(got, expected, op.tol, what=f"{op.name} inner in_dims={in_dims_tree(args, inner)} "
                                            f"outer in_dims={in_dims_tree(args, outer)}: ")


@pytest.mark.parametrize("op, dtype, index, sample", NESTED_IR)
def test_vmap_nested(op: OpInfo, dtype: np.dtype, index: int, sample: SampleInput) -> None:
    """vmap(vmap(fn)) == double loop + np.stack (interpreted batched IR)."""
    for inner, outer in _nested_pairs(sample.args, index, _salt(op, dtype, index)):
        _nested_check(op, dtype, index, sample, inner, outer, native=False)


@pytest.mark.parametrize("op, dtype, index, sample", NESTED_NATIVE)
def test_vmap_nested_native(op: OpInfo, dtype: np.dtype, index: int, sample: SampleInput) -> None:
    """vmap(vmap(fn)) compiled natively, for the mixed in_dims pair."""
    inner, outer = _nested_pairs(sample.args, index, _salt(op, dtype, index))[-1]
    _nested_check(op, dtype, index, sample, inner, outer, native=True)


# ---- out_dims --------------------------------------------------------------------------------------

def _out_dims_for(op: OpInfo, sample: SampleInput) -> list[int]:
    result = numpy_call(op.ref, sample.args, sample.kwargs)
    leaves = result if isinstance(result, (tuple, list)) else [result]
    rank = min(np.ndim(r) for r in leaves)
    return [1, -1] if rank >= 1 else [-1]


@pytest.mark.parametrize("op, dtype, index, sample", OUTD_IR)
def test_vmap_out_dims(op: OpInfo, dtype: np.dtype, index: int, sample: SampleInput) -> None:
    """out_dims=1 and -1: the batch axis of the result where asked (interpreted)."""
    zero = {slot: 0 for slot in array_slots(sample.args)}
    for od in _out_dims_for(op, sample):
        _check_combo(op, dtype, index, sample, zero, native=False, out_dims=od)


@pytest.mark.parametrize("op, dtype, index, sample", OUTD_NATIVE)
def test_vmap_out_dims_native(op: OpInfo, dtype: np.dtype, index: int, sample: SampleInput) -> None:
    combos = all_combos(sample.args)
    dims = combos[_salt(op, dtype, index) % len(combos)]
    _check_combo(op, dtype, index, sample, dims, native=True, out_dims=_out_dims_for(op, sample)[-1])


# ---- ops without array arguments: a batched input the function ignores ------------------------------

IGNORED = [pytest.param(op, s, id=f"{op.name}-{i}-{s.desc}") for op in VMAP_OPS
           for i, s in enumerate(op.samples(vmap_dtypes(op)[0])) if not array_slots(s.args)]


@pytest.mark.parametrize("op, sample", IGNORED)
def test_vmap_ignored_input(op: OpInfo, sample: SampleInput) -> None:
    """f(batch_element) = op(static args) ignores its batched input: the result is broadcast."""
    args, kwargs, fn = sample.args, sample.kwargs, op.fn

    def ignores_x(x):
        return fn(*args, **kwargs)
    xs = np.arange(6.0).reshape(3, 2)
    expected = stack_results([numpy_call(op.ref, args, kwargs) for _ in range(3)])
    assert_same(vmap(ignores_x)(xs), expected, op.tol, what=f"{op.name}: ")
    expected1 = stack_results([numpy_call(op.ref, args, kwargs) for _ in range(2)], axis=-1)
    assert_same(vmap(ignores_x, in_dims=1, out_dims=-1)(xs), expected1, op.tol, what=f"{op.name} out_dims=-1: ")


def test_generated_case_counts() -> None:
    """The generator covers every vmap-capable OpInfo (a guard against silently empty lists)."""
    covered = {p.values[0].name for p in EVERY} | {p.values[0].name for p in IGNORED}
    wanted = {op.name for op in VMAP_OPS}
    assert covered == wanted, f"OpInfos without a vmap test: {sorted(wanted - covered)}"
    assert len(NATIVE) > 500 and len(NESTED_IR) > 200
