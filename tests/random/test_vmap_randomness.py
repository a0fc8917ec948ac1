"""The ``randomness`` flag of vmap (API.md sections 3, 4 and 7): the seed's add_noise examples
for the three flags, nested vmap, chunk_size (which must not change the draws), explicit
keys under vmap (data: a batched key gives per-element draws), and custom Functions'
``info.randomness``."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import Function, errors, jit, random, vmap
from tests.random import reference as R


# ---- the seed's examples (torch.func's UX limitations page, "Randomness") -------------------------

def add_noise(x):
    y = random.normal(())          # torch.randn(()): one number per call of add_noise
    return x + y


def test_add_noise_error_is_the_default_and_names_the_line():
    with pytest.raises(errors.RandomnessError) as info:
        vmap(add_noise)(np.ones(3))
    e = info.value
    assert e.filename == __file__ and e.lineno == add_noise.__code__.co_firstlineno + 1
    assert "randomness='different'" in str(e) and "randomness='same'" in str(e)
    assert "random.normal(())" in str(e)                   # the source line is shown


def test_add_noise_different_gives_three_different_values():
    result = vmap(add_noise, randomness="different")(np.ones(3))
    assert result.shape == (3,) and len(set(result.tolist())) == 3


def test_add_noise_same_gives_one_value_repeated():
    result = vmap(add_noise, randomness="same")(np.ones(3))
    assert result.shape == (3,) and result[0] == result[1] == result[2]


def test_different_and_same_follow_the_seed_protocol():
    """"different": element i draws with key fold_in(call key, i); "same": with the call key."""
    x = np.zeros(4)
    diff, same = vmap(add_noise, randomness="different"), vmap(add_noise, randomness="same")
    diff(x), same(x)                       # compile first: compiling takes no keys, but be explicit
    random.seed(5)
    d, s = diff(x), same(x)
    call0, call1 = R.call_key(5, 0), R.call_key(5, 1)
    want_d = [R.normal(R.draw_keys(R.fold_in(call0, i), 1)[0], ())[()] for i in range(4)]
    np.testing.assert_allclose(d, want_d, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(s, [R.normal(R.draw_keys(call1, 1)[0], ())[()]] * 4, rtol=1e-13)


# ---- chunk_size and nesting ------------------------------------------------------------------

def noise_rows(x):
    return x + random.normal(x.shape) + random.uniform(())


@pytest.mark.parametrize("randomness", ["different", "same"])
@pytest.mark.parametrize("chunk", [1, 3, 4, 7, 50])
def test_chunk_size_does_not_change_the_draws(randomness, chunk):
    x = np.zeros((7, 5))
    whole, chunked = vmap(noise_rows, randomness=randomness), vmap(noise_rows, randomness=randomness,
                                                                    chunk_size=chunk)
    whole(x), chunked(x)
    random.seed(11)
    a = whole(x)
    random.seed(11)
    b = chunked(x)
    np.testing.assert_array_equal(a, b)


def test_nested_vmap_different_inside_different():
    x = np.zeros((3, 4))
    out = vmap(vmap(add_noise, randomness="different"), randomness="different")(x)
    assert len(set(out.ravel().tolist())) == 12


def test_nested_vmap_same_inside_different():
    out = vmap(vmap(add_noise, randomness="same"), randomness="different")(np.zeros((3, 4)))
    assert all(len(set(row.tolist())) == 1 for row in out)       # the inner batch shares a draw
    assert len(set(out[:, 0].tolist())) == 3                      # the outer one does not


def test_nested_vmap_different_inside_same():
    out = vmap(vmap(add_noise, randomness="different"), randomness="same")(np.zeros((3, 4)))
    assert len(set(out[0].tolist())) == 4
    assert all((row == out[0]).all() for row in out)


def test_nested_vmap_error_outside_rejects():
    with pytest.raises(errors.RandomnessError):
        vmap(vmap(add_noise, randomness="different"))(np.zeros((3, 4)))


def test_nested_chunked_matches_unchunked():
    x = np.zeros((5, 3))
    plain = vmap(vmap(add_noise, randomness="different"), randomness="different")
    chunked = vmap(vmap(add_noise, randomness="different", chunk_size=2), randomness="different",
                   chunk_size=2)
    plain(x), chunked(x)
    random.seed(4)
    a = plain(x)
    random.seed(4)
    np.testing.assert_array_equal(chunked(x), a)


def test_jacfwd_randomness_flag():
    from compiler import jacfwd

    def f(x):
        return x * random.uniform(())
    with pytest.raises(errors.RandomnessError):
        jacfwd(f)(np.ones(3))
    jac = jacfwd(f, randomness="same")(np.ones(3))
    assert np.allclose(jac, np.diag(np.diag(jac))) and np.all(np.diag(jac) == jac[0, 0])


# ---- independence across batch elements -------------------------------------------------------

def many(x):
    return x + random.normal((2000,))


def test_batch_elements_are_independent_under_different():
    random.seed(8)
    out = vmap(many, randomness="different")(np.zeros((6, 1)))
    corr = np.corrcoef(out)
    off = corr[~np.eye(6, dtype=bool)]
    assert np.abs(off).max() < 5 / np.sqrt(2000)          # 5 sigma of a zero correlation
    assert np.allclose(out.mean(axis=1), 0, atol=5 / np.sqrt(2000))


# ---- explicit keys are data ----------------------------------------------------------------------

def keyed(key, x):
    return x + random.normal(key, ())


def test_batched_keys_give_per_element_draws_under_any_flag():
    keys = random.split(random.key(3), 4)
    out = vmap(keyed)(keys, np.zeros(4))                  # no key-less draw: "error" is fine
    want = [keyed(k, 0.0) for k in keys]
    np.testing.assert_array_equal(out, want)
    np.testing.assert_allclose(out, [R.normal(int(k), ())[()] for k in keys], rtol=1e-13)


def test_unbatched_key_gives_the_same_draw():
    out = vmap(keyed, in_dims=(None, 0))(random.key(3), np.zeros(4))
    assert len(set(out.tolist())) == 1


# ---- custom Functions see the flag ----------------------------------------------------------------

class Noisy(Function):
    @staticmethod
    def forward(x):
        return x * 2.0

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def vmap(info, in_dims, x):
        code = {"error": 1.0, "same": 2.0, "different": 3.0}[info.randomness]
        return x * 2.0 + code, in_dims[0]


def with_function(x):
    return Noisy.apply(x) + random.normal(())


@pytest.mark.parametrize("randomness,code", [("same", 2.0), ("different", 3.0)])
def test_custom_function_sees_the_flag_next_to_draws(randomness, code):
    x = np.zeros(3)
    out = vmap(with_function, randomness=randomness)(x)
    noise = out - code
    assert (len(set(noise.tolist())) == 1) == (randomness == "same")


# ---- inside jit: kernels called from compiled code --------------------------------------------------

@jit
def inner(x):
    return x + random.normal(())


def outer(x):
    return inner(x), inner(x), random.normal(())


def test_inlined_kernels_draw_from_the_callers_state():
    a, b, c = jit(outer)(np.zeros(()))
    assert len({float(a), float(b), float(c)}) == 3


def noisy_square(w):
    return np.sum((w + 0.1 * random.normal(w.shape)) ** 2)


def test_jacrev_and_grad_of_keyless_draws_use_one_evaluation():
    """grad/jacrev need no flag: the Jacobian is of one evaluation, its draws shared by the rows
    of the basis (jacrev's vmap is "same"); the result is 2 (w + 0.1 e) for one draw e."""
    from compiler import grad, jacrev

    def swap(w):
        e = random.normal(())
        return np.stack([e * w[1], e * w[0]])   # J = [[0, e], [e, 0]]: rows from two cotangents
    w = np.linspace(-1.0, 1.0, 4)
    g = grad(noisy_square)(w)
    e = (g / 2 - w) / 0.1
    assert np.all(np.abs(e) < 6) and len(set(e.round(12).tolist())) == 4
    jac = jacrev(swap)(np.array([1.0, 2.0]))
    assert jac[0, 1] == jac[1, 0] != 0 and jac[0, 0] == jac[1, 1] == 0


def test_hessian_of_keyless_draws_is_of_one_evaluation():
    """f = e0 * w0 * w1 + e1 * w1 * w2: H[0, 1] = H[1, 0] = e0 comes from two different rows of
    the basis; equal only if every row sees the same draw."""
    from compiler import hessian

    def f(w):
        e = random.normal((2,))
        return e[0] * w[0] * w[1] + e[1] * w[1] * w[2]
    h = hessian(f)(np.array([1.0, 2.0, 3.0]))
    assert h[0, 1] == h[1, 0] != 0 and h[1, 2] == h[2, 1] != 0 and h[0, 1] != h[1, 2]
    assert h[0, 0] == h[1, 1] == h[2, 2] == h[0, 2] == 0


@pytest.mark.parametrize("inner,outer", [("same", "different"), ("different", "same"),
                                         ("same", "same")])
def test_nested_chunked_mixed_flags_match_unchunked(inner, outer):
    x = np.zeros((5, 3))
    plain = vmap(vmap(add_noise, randomness=inner), randomness=outer)
    chunked = vmap(vmap(add_noise, randomness=inner, chunk_size=2), randomness=outer, chunk_size=3)
    plain(x), chunked(x)
    random.seed(6)
    a = plain(x)
    random.seed(6)
    np.testing.assert_array_equal(chunked(x), a)


class KeylessForward(Function):
    @staticmethod
    def forward(x):
        return x + random.normal(())

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return g


class KeyedForward(Function):
    @staticmethod
    def forward(x, key):
        return x + random.normal(key, ())

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return g, None


def uses_keyless_function(x):
    return KeylessForward.apply(x)


def uses_keyed_function(x, key):
    return KeyedForward.apply(x, key)


def test_function_forward_draws_need_a_key():
    with pytest.raises(errors.UnsupportedError, match="without a key") as info:
        jit(uses_keyless_function)(np.zeros(()))
    assert info.value.lineno == uses_keyless_function.__code__.co_firstlineno + 1
    k = random.key(21)
    assert jit(uses_keyed_function)(np.zeros(()), k) == random.normal(k, ())
