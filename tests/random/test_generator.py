"""The generator and the keys: Philox-4x32-10 against the published known-answer vectors,
and every derivation (key, split, fold_in, the per-call keys of seed, the implicit state
of a kernel, the maps from words to numbers) against the independent reference of
tests/random/reference.py."""
from __future__ import annotations

import re

import numpy as np
import pytest

import runtime
from compiler import jit, pipeline, random
from compiler.backend import target
from compiler.ir.builder import Builder, new_block
from compiler.ir.core import Function
from compiler.ir.types import I32, TensorType
from compiler.primitives import ops
from runtime import rng
from runtime.abi import parse_spec
from runtime.loader import NativeKernel
from tests.random import reference as R

#: Random123 v1.14.0, tests/kat_vectors, the "philox4x32 10" lines: counter, key, output
KAT = [
    ("00000000 00000000 00000000 00000000", "00000000 00000000", "6627e8d5 e169c58d bc57ac4c 9b00dbd8"),
    ("ffffffff ffffffff ffffffff ffffffff", "ffffffff ffffffff", "408f276d 41c83b0e a20bc7c6 6d5451fd"),
    ("243f6a88 85a308d3 13198a2e 03707344", "a4093822 299f31d0", "d16cfe09 94fdcceb 5001e420 24126ea1"),
]


def words(text: str) -> list[int]:
    return [int(w, 16) for w in text.split()]


def as_i32(ws: list[int]) -> np.ndarray:
    return np.array(ws, dtype=np.uint32).view(np.int32)


def compile_native(fn: Function) -> NativeKernel:
    art = pipeline.compile_ir(fn, fn.name, target.host())
    obj = pipeline.load(art)
    ins = [parse_spec(f"a{i}", str(t)) for i, t in enumerate(fn.in_types)]
    outs = [parse_spec(f"r{i}", str(t)) for i, t in enumerate(art.ir_optimized.out_types)]
    return NativeKernel(fn.name, obj.address(fn.name), ins, outs, art.symbols, obj, random=art.random)


def philox_function(n: int) -> Function:
    """The four lanes of the philox primitive on six int32[n] operands."""
    block = new_block([TensorType(I32, (n,))] * 6)
    b = Builder(block)
    block.results = [ops.philox(b, block.args, lane) for lane in range(4)]
    return Function("t_philox", block)


@pytest.mark.parametrize("counter,key,expected", KAT)
def test_reference_matches_known_answers(counter, key, expected):
    assert list(R.philox4x32_10(tuple(words(counter)), tuple(words(key)))) == words(expected)


@pytest.mark.parametrize("counter,key,expected", KAT)
def test_runtime_philox_matches_known_answers(counter, key, expected):
    out = rng.philox(*words(key), *words(counter))
    assert [int(w) for w in out] == words(expected)


def test_compiled_philox_matches_known_answers():
    kernel = compile_native(philox_function(len(KAT)))
    columns = [as_i32([words(k)[i] for _, k, _ in KAT]) for i in range(2)] + \
              [as_i32([words(c)[i] for c, _, _ in KAT]) for i in range(4)]
    lanes = kernel(*columns)
    for row, (_, _, expected) in enumerate(KAT):
        got = [int(np.int32(lane[row]).view(np.uint32)) for lane in lanes]
        assert got == words(expected)


def test_compiled_philox_matches_reference_on_many_counters():
    """1000 counters and keys, odd length: the vector loop and its remainder."""
    gen = np.random.default_rng(7)
    cols = [gen.integers(0, 1 << 32, 1001, dtype=np.uint64) for _ in range(6)]
    lanes = compile_native(philox_function(1001))(*[c.astype(np.uint32).view(np.int32) for c in cols])
    for j in range(0, 1001, 97):
        want = R.philox4x32_10(tuple(int(c[j]) for c in cols[2:]), (int(cols[0][j]), int(cols[1][j])))
        assert [int(np.int32(lane[j]).view(np.uint32)) for lane in lanes] == list(want)


def test_keys_split_fold_in_match_reference():
    for n in (0, 1, 42, -1, 2**63 - 1, 2**64 + 5):
        assert int(random.key(n)) == R.key(n)
        assert random.key(n).dtype == np.int64
    k = random.key(2024)
    assert [int(x) for x in random.split(k, 5)] == R.split(R.key(2024), 5)
    assert int(random.fold_in(k, 17)) == R.fold_in(R.key(2024), 17)
    assert int(random.fold_in(k, -3)) == R.fold_in(R.key(2024), -3)


def _split_fold(key, d):
    return random.split(key, 4), random.fold_in(key, d), random.key(9)


def test_keys_inside_compiled_code_match_reference():
    split4, folded, nine = jit(_split_fold)(random.key(11), np.int64(123))
    assert [int(x) for x in split4] == R.split(R.key(11), 4)
    assert int(folded) == R.fold_in(R.key(11), 123)
    assert int(nine) == R.key(9)


def _draws(key):
    return (random.normal(key, (3, 4)), random.uniform(key, (5,), low=-2.0, high=3.0),
            random.exponential(key, (6,)), random.permutation(key, 7),
            random.normal(key, (2, 3), dtype=np.float32))


def test_explicit_key_draws_match_reference():
    k = random.key(31337)
    normal, uniform, expo, perm, normal32 = jit(_draws)(k)
    rk = R.key(31337)
    np.testing.assert_allclose(normal, R.normal(rk, (3, 4)), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(uniform, R.uniform(rk, (5,), -2.0, 3.0), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(expo, R.exponential(rk, (6,)), rtol=1e-13)
    np.testing.assert_array_equal(perm, R.permutation(rk, 7))
    assert normal32.dtype == np.float32
    np.testing.assert_array_equal(normal32, R.normal(rk, (2, 3)).astype(np.float32))


def test_eager_draws_equal_compiled_draws():
    k = random.key(5)
    normal, uniform, expo, perm, _ = jit(_draws)(k)
    np.testing.assert_array_equal(random.normal(k, (3, 4)), normal)
    np.testing.assert_array_equal(random.exponential(k, (6,)), expo)
    np.testing.assert_array_equal(random.permutation(k, 7), perm)


def _one_normal(x):
    return x + random.normal(x.shape)


def _two_draws(x):
    return random.uniform(x.shape), random.normal(x.shape)


ONE_NORMAL = jit(_one_normal)
TWO_DRAWS = jit(_two_draws)


def test_keyless_draws_follow_the_seed_protocol():
    """seed(s): call c of a drawing kernel gets key K = fold_in(key(s), c); its i-th key-less
    draw uses the key fold_in(K, i)."""
    x = np.zeros(5)
    ONE_NORMAL(x)                                  # compiled (and its key taken) before seeding
    random.seed(77)
    first, second = ONE_NORMAL(x), ONE_NORMAL(x)
    for call, got in enumerate((first, second)):
        (k,) = R.draw_keys(R.call_key(77, call), 1)
        np.testing.assert_allclose(got, R.normal(k, (5,)), rtol=1e-13, atol=1e-14)
    u, n = TWO_DRAWS(x)
    k1, k2 = R.draw_keys(R.call_key(77, 2), 2)
    np.testing.assert_allclose(u, R.uniform(k1, (5,)), rtol=1e-14)
    np.testing.assert_allclose(n, R.normal(k2, (5,)), rtol=1e-13, atol=1e-14)


def test_runtime_seed_is_the_same_state():
    x = np.zeros(4)
    runtime.seed(3)
    a = ONE_NORMAL(x)
    random.seed(3)
    np.testing.assert_array_equal(ONE_NORMAL(x), a)


def test_successive_calls_draw_new_numbers_and_seed_repeats_them():
    x = np.zeros(1000)
    random.seed(1)
    a, b = ONE_NORMAL(x), ONE_NORMAL(x)
    assert not np.any(a == b)
    random.seed(1)
    np.testing.assert_array_equal(ONE_NORMAL(x), a)
    random.seed(2)
    assert not np.any(ONE_NORMAL(x) == a)


def test_rng_key_primitive_reads_the_callers_key():
    block = new_block([])
    b = Builder(block)
    block.results = [ops.rng_key(b)]
    kernel = compile_native(Function("t_rng_key", block))
    assert kernel.random
    rng.seed(12)
    assert [int(kernel()[0]) for _ in range(3)] == [R.call_key(12, c) for c in range(3)]


def _plain(x):
    if x[0] > 0:                     # a data-dependent branch: the state is looked at, not used
        x = x + 1.0
    return x * 2.0


def _impl_params(llvm: str) -> str:
    return re.search(r'define internal i32 @"[^"]*\.impl"\(([^)]*)\)', llvm).group(1)


def test_kernels_without_draws_take_no_key():
    plain = jit(_plain).lower(np.zeros(2))
    assert "rng_key" not in plain.ir
    assert "i64" not in _impl_params(plain.llvm)           # two buffers, no key word
    drawing = ONE_NORMAL.lower(np.zeros(2))
    assert "rng_key" in drawing.ir
    assert _impl_params(drawing.llvm).count("i64") == 1    # the call's key
