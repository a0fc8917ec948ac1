"""Statistical sanity of every draw (moments, chi-square on bins, frequencies), with fixed
keys so that each test is deterministic; thresholds are far tails of the statistics
(about 1e-6 false-alarm probability for a correct generator). Then draws inside
data-dependent control flow, under AD, and the errors of the API."""
from __future__ import annotations

import math

import numpy as np
import pytest

from compiler import errors, grad, jit, jvp, random

N = 400_000
Z = 5.0            # |z| of a moment test


def chi2_ok(counts: np.ndarray, probs: np.ndarray) -> bool:
    """Pearson's chi-square against expected probabilities, accepted below the 1 - 1e-6
    quantile (Wilson-Hilferty)."""
    expected = counts.sum() * probs
    stat = float(((counts - expected) ** 2 / expected).sum())
    k = len(counts) - 1
    limit = k * (1 - 2 / (9 * k) + 4.753 * math.sqrt(2 / (9 * k))) ** 3
    return stat < limit


def norm_cdf(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def _draw_all(key):
    ks = random.split(key, 8)
    return (random.normal(ks[0], (N,)), random.uniform(ks[1], (N,)),
            random.exponential(ks[2], (N,)), random.bernoulli(ks[3], 0.3, (N,)),
            random.randint(ks[4], (N,), 3, 10), random.normal(ks[5], (N,), dtype=np.float32),
            random.uniform(ks[6], (N,), dtype=np.float32, low=-1.0, high=1.0))


@pytest.fixture(scope="module")
def draws():
    return jit(_draw_all)(random.key(2718))


def test_normal_moments_and_bins(draws):
    x = draws[0]
    assert abs(x.mean()) < Z / math.sqrt(N)
    assert abs(x.var() - 1) < Z * math.sqrt(2 / N)
    assert abs((x ** 3).mean()) < Z * math.sqrt(15 / N)
    assert abs((x ** 4).mean() - 3) < Z * math.sqrt(96 / N)
    edges = np.array([-np.inf, -2.5, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 2.5, np.inf])
    counts = np.histogram(x, edges)[0]
    assert chi2_ok(counts, np.diff(norm_cdf(edges)))
    assert np.abs(x).max() > 4                  # the tails exist


def test_normal_float32(draws):
    x = draws[5]
    assert x.dtype == np.float32
    assert abs(x.mean()) < Z / math.sqrt(N) and abs(x.var() - 1) < Z * math.sqrt(2 / N)


def test_uniform_bins_and_range(draws):
    u, u32 = draws[1], draws[6]
    assert u.min() >= 0 and u.max() < 1
    assert chi2_ok(np.histogram(u, 100, (0, 1))[0], np.full(100, 0.01))
    assert u32.dtype == np.float32 and u32.min() >= -1 and u32.max() < 1
    assert chi2_ok(np.histogram(u32, 50, (-1, 1))[0], np.full(50, 0.02))
    # consecutive draws are uncorrelated: pairs fall evenly into a 10 x 10 grid
    pairs = np.histogram2d(u[:-1:2], u[1::2], 10, [[0, 1], [0, 1]])[0].ravel()
    assert chi2_ok(pairs, np.full(100, 0.01))


def test_exponential(draws):
    e = draws[2]
    assert e.min() > 0
    assert abs(e.mean() - 1) < Z / math.sqrt(N) and abs(e.var() - 1) < Z * math.sqrt(8 / N)
    edges = np.array([0, 0.25, 0.5, 1, 1.5, 2, 3, 4, np.inf])
    assert chi2_ok(np.histogram(e, edges)[0], np.diff(1 - np.exp(-edges)))


def test_bernoulli_and_randint(draws):
    b, r = draws[3], draws[4]
    assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < Z * math.sqrt(0.21 / N)
    assert r.dtype == np.int64 and r.min() == 3 and r.max() == 9
    assert chi2_ok(np.bincount(r - 3, minlength=7), np.full(7, 1 / 7))


def _gamma(key, a):
    return random.gamma(key, a, (N // 4,) + a.shape)


@pytest.mark.parametrize("a", [0.3, 1.0, 2.5, 9.0])
def test_gamma_mean_variance_and_bins(a):
    x = jit(_gamma)(random.key(int(a * 10)), np.array([a]))[:, 0]
    n = len(x)
    assert x.min() > 0
    assert abs(x.mean() - a) < Z * math.sqrt(a / n)
    assert abs(x.var() / a - 1) < Z * math.sqrt((2 + 6 / a) / n)
    # bins at the quantiles of Gamma(a), from the regularized incomplete gamma by series
    qs = np.quantile(x, [0.1, 0.3, 0.5, 0.7, 0.9])
    cdf = np.array([_gamma_cdf(a, q) for q in qs])
    assert np.all(np.abs(cdf - [0.1, 0.3, 0.5, 0.7, 0.9]) < 5 * np.sqrt(0.25 / n))


def _gamma_cdf(a: float, x: float) -> float:
    term = total = 1.0 / a
    k = 0
    while term > 1e-17 * total:
        k += 1
        term *= x / (a + k)
        total += term
    return total * math.exp(-x + a * math.log(x) - math.lgamma(a))


def test_gamma_with_an_array_of_shapes():
    a = np.array([0.5, 2.0, 7.0])
    x = jit(lambda_gamma)(random.key(1), a)
    assert x.shape == (20_000, 3)
    assert np.all(np.abs(x.mean(axis=0) - a) < Z * np.sqrt(a / 20_000))


def lambda_gamma(key, a):
    return random.gamma(key, a, (20_000, 3))


def _categorical(key, logits):
    return random.categorical(key, np.broadcast_to(logits, (N // 4, 4)))


def test_categorical_frequencies():
    logits = np.log(np.array([0.1, 0.2, 0.3, 0.4]))
    idx = jit(_categorical)(random.key(9), logits)
    assert idx.shape == (N // 4,) and idx.dtype == np.int64
    assert chi2_ok(np.bincount(idx, minlength=4), np.array([0.1, 0.2, 0.3, 0.4]))


def _perms(key):
    keys = random.split(key, 6000)
    return keys


def test_permutations_are_uniform():
    keys = random.split(random.key(4), 6000)
    perm = jit(permute3)
    seen = {}
    for k in keys:
        p = tuple(perm(k).tolist())
        seen[p] = seen.get(p, 0) + 1
    assert sorted(seen) == sorted(tuple(p) for p in __import__("itertools").permutations(range(3)))
    assert chi2_ok(np.array(list(seen.values())), np.full(6, 1 / 6))


def permute3(key):
    return random.permutation(key, 3)


def shuffle_and_choose(key, x):
    return (random.shuffle(key, x), random.choice(key, x, (4,), replace=False),
            random.choice(key, 10, (3, 2)), random.permutation(key, x))


def test_shuffle_and_choice():
    x = np.arange(10.0) * 3
    shuffled, chosen, picks, perm = jit(shuffle_and_choose)(random.key(8), x)
    assert sorted(shuffled.tolist()) == x.tolist() and not np.array_equal(shuffled, x)
    np.testing.assert_array_equal(perm, shuffled)
    assert len(set(chosen.tolist())) == 4 and set(chosen.tolist()) <= set(x.tolist())
    assert picks.shape == (3, 2) and picks.min() >= 0 and picks.max() < 10


# ---- draws inside data-dependent control flow ---------------------------------------------------

def walk_until(limit):
    s = limit * 0.0
    steps = 0
    while s < limit:                       # a data-dependent loop: one new draw per iteration
        s = s + random.uniform(())
        steps += 1
    return s, steps


def test_draws_in_a_while_loop_differ_per_iteration():
    s, steps = jit(walk_until)(np.array(50.0))
    assert 80 < steps < 125                # mean 100 steps of mean 0.5; a repeated draw gives 50/u
    assert 50 <= s < 51


def branchy(x):
    if x > 0:
        y = random.normal(())
    else:
        y = random.normal(()) + 100.0
    return y + random.normal(())


def test_draws_in_branches_and_after():
    out_pos = [float(jit(branchy)(np.array(1.0))) for _ in range(3)]
    assert len(set(out_pos)) == 3 and all(abs(v) < 10 for v in out_pos)
    assert 90 < float(jit(branchy)(np.array(-1.0))) < 110


# ---- derivatives: zero through the draws, never blocked --------------------------------------

def scaled(key, w):
    return np.sum(w * random.normal(key, w.shape))


def shifted(key, low, high):
    return np.sum(random.uniform(key, (5,), low=low, high=high))


def test_grad_through_draws():
    k = random.key(6)
    w = np.linspace(0.0, 1.0, 7)
    np.testing.assert_allclose(grad(scaled, argnums=1)(k, w), random.normal(k, (7,)), rtol=1e-14)
    u = random.uniform(k, (5,))
    g_low, g_high = grad(shifted, argnums=(1, 2))(k, 1.0, 3.0)
    assert math.isclose(g_low, float(np.sum(1 - u)), rel_tol=1e-12)
    assert math.isclose(g_high, float(np.sum(u)), rel_tol=1e-12)
    _, t = jvp(lambda w: scaled(k, w), (w,), (np.ones(7),))
    assert math.isclose(float(t), float(random.normal(k, (7,)).sum()), rel_tol=1e-12)


# ---- errors --------------------------------------------------------------------------------

def seeds_inside(x):
    random.seed(1)
    return x


def runtime_shape(x, n):
    return random.normal((n,))


def float_randint(x):
    return random.randint((3,), 0, 5, dtype=np.float64)


def too_many(x):
    return random.choice(5, (6,), replace=False)


@pytest.mark.parametrize("fn,args,exc,match", [
    (seeds_inside, (np.ones(2),), errors.UnsupportedError, "seed"),
    (runtime_shape, (np.ones(2), np.int64(3)), errors.UnsupportedError, "known at compile time"),
    (float_randint, (np.ones(2),), errors.CompileError, "int32 or int64"),
    (too_many, (np.ones(2),), errors.CompileError, "without replacement"),
])
def test_user_errors_name_the_line(fn, args, exc, match):
    with pytest.raises(exc, match=match) as info:
        jit(fn)(*args)
    assert info.value.filename == __file__
    assert info.value.lineno == fn.__code__.co_firstlineno + 1


def test_split_and_fold_in_reject_non_keys():
    with pytest.raises(TypeError, match="key"):
        random.split(3)
    with pytest.raises(TypeError, match="key"):
        random.fold_in(np.float64(1.0), 2)


def key_from_int(n):
    return random.normal(random.key(n), (2,))


def int_as_key(x):
    return random.normal(0, (3,))


def test_run_time_key_and_int_mistaken_for_a_key():
    np.testing.assert_array_equal(jit(key_from_int)(np.int64(12)), random.normal(random.key(12), (2,)))
    with pytest.raises(errors.CompileError, match=r"random.key\(0\)") as info:
        jit(int_as_key)(np.ones(2))
    assert info.value.lineno == int_as_key.__code__.co_firstlineno + 1
    with pytest.raises(TypeError, match=r"random.key\(0\)"):
        random.normal(0, (3,))


def for_loop_draws(x):
    out = x * 0.0
    for i in range(20):                 # a Python loop: every iteration draws anew
        out[i] = random.normal(())
    return out


def test_draws_in_a_for_loop_differ_per_iteration():
    out = jit(for_loop_draws)(np.zeros(20))
    assert len(set(out.tolist())) == 20 and np.all(np.abs(out) < 7)
