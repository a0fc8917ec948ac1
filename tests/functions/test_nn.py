"""Neural-network code written in plain NumPy: compiled vs NumPy."""
from __future__ import annotations

import math

import numpy as np

from tests import fd
from tests.functions.helpers import both_floats, check, randn, rng, uniform


def softmax(x):
    z = x - np.max(x, axis=-1, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=-1, keepdims=True)


def log_softmax(x):
    z = x - x.max(axis=-1, keepdims=True)
    return z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))


def logsumexp(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(x - m), axis=axis))


@both_floats
def test_softmax(dtype):
    r = rng(1)
    check(softmax, randn(r, 8, 10, dtype=dtype, scale=3.0))


@both_floats
def test_softmax_large_logits_is_stable(dtype):
    x = np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1000.0, -1000.0]], dtype=dtype)
    got = check(softmax, x)
    assert np.all(np.isfinite(got))


@both_floats
def test_log_softmax(dtype):
    check(log_softmax, randn(rng(2), 4, 7, dtype=dtype, scale=5.0))


@both_floats
def test_logsumexp_stable(dtype):
    x = randn(rng(3), 5, 6, dtype=dtype, scale=50.0)
    check(logsumexp, x, 1)
    check(logsumexp, x, 0)


def layer_norm(x, gamma, beta):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + 1e-5) + beta


@both_floats
def test_layer_norm(dtype):
    r = rng(4)
    check(layer_norm, randn(r, 6, 16, dtype=dtype), randn(r, 16, dtype=dtype), randn(r, 16, dtype=dtype))


def batch_norm_train(x, gamma, beta, running_mean, running_var):
    momentum, eps = 0.1, 1e-5
    mean = x.mean(axis=0)
    var = x.var(axis=0)
    y = (x - mean) / np.sqrt(var + eps) * gamma + beta
    new_mean = (1 - momentum) * running_mean + momentum * mean
    new_var = (1 - momentum) * running_var + momentum * var * x.shape[0] / (x.shape[0] - 1)
    return y, new_mean, new_var


@both_floats
def test_batch_norm_forward(dtype):
    r = rng(5)
    c = 8
    check(batch_norm_train, randn(r, 32, c, dtype=dtype, scale=2.0), randn(r, c, dtype=dtype),
          randn(r, c, dtype=dtype), np.zeros(c, dtype), np.ones(c, dtype))


def rms_norm(x, w):
    return x / np.sqrt(np.mean(np.square(x), axis=-1, keepdims=True) + 1e-6) * w


@both_floats
def test_rms_norm(dtype):
    r = rng(6)
    check(rms_norm, randn(r, 3, 5, 32, dtype=dtype), randn(r, 32, dtype=dtype))


def mlp_tanh(x, w1, b1, w2, b2):
    h = np.tanh(x @ w1 + b1)
    return h @ w2 + b2


@both_floats
def test_mlp_tanh_two_layers(dtype):
    r = rng(7)
    check(mlp_tanh, randn(r, 16, 8, dtype=dtype), randn(r, 8, 32, dtype=dtype, scale=0.3),
          randn(r, 32, dtype=dtype), randn(r, 32, 4, dtype=dtype, scale=0.3), randn(r, 4, dtype=dtype))


def relu(x):
    return np.maximum(x, 0.0)


def mlp_relu(x, params):
    for w, b in params[:-1]:
        x = relu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


@both_floats
def test_mlp_relu_three_layers_params_as_list_of_tuples(dtype):
    r = rng(8)
    sizes = [10, 64, 32, 3]
    params = [(randn(r, m, n, dtype=dtype, scale=1 / math.sqrt(m)), randn(r, n, dtype=dtype, scale=0.1))
              for m, n in zip(sizes[:-1], sizes[1:])]
    check(mlp_relu, randn(r, 20, 10, dtype=dtype), params)


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def mlp_gelu(x, params):
    h = gelu(x @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


@both_floats
def test_mlp_gelu_params_as_dict(dtype):
    r = rng(9)
    params = {"w1": randn(r, 6, 24, dtype=dtype, scale=0.4), "b1": randn(r, 24, dtype=dtype),
              "w2": randn(r, 24, 2, dtype=dtype, scale=0.2), "b2": np.zeros(2, dtype)}
    check(mlp_gelu, randn(r, 9, 6, dtype=dtype), params)


def attention(q, k, v):
    d = q.shape[-1]
    scores = q @ k.T / math.sqrt(d)
    return softmax(scores) @ v


@both_floats
def test_attention(dtype):
    r = rng(10)
    check(attention, randn(r, 7, 16, dtype=dtype), randn(r, 9, 16, dtype=dtype), randn(r, 9, 8, dtype=dtype))


def attention_np_sqrt(q, k, v):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])   # a float64 NumPy scalar: promotes f32
    return softmax(scores) @ v


@both_floats
def test_attention_batched_numpy_scalar_promotion(dtype):
    r = rng(11)
    # float32 matmul first (in NumPy's and our summation order), then float64: float32-level agreement
    got = check(attention_np_sqrt, randn(r, 2, 5, 4, dtype=dtype), randn(r, 2, 6, 4, dtype=dtype),
                randn(r, 2, 6, 3, dtype=dtype), rtol=1e-5 if dtype == np.float32 else 1e-10, atol=1e-6)
    assert got.dtype == np.float64


def multi_head_attention(x, wq, wk, wv, wo):
    n, d = x.shape
    h = 4
    dh = d // h

    def split(t):
        return t.reshape(n, h, dh).transpose(1, 0, 2)

    q, k, v = split(x @ wq), split(x @ wk), split(x @ wv)
    scores = np.einsum("hqd,hkd->hqk", q, k) / math.sqrt(dh)
    mask = np.arange(n)[:, None] >= np.arange(n)[None, :]
    scores = np.where(mask, scores, -1e9)
    out = softmax(scores) @ v
    return out.transpose(1, 0, 2).reshape(n, d) @ wo


@both_floats
def test_multi_head_causal_attention(dtype):
    r = rng(12)
    d = 16
    ws = [randn(r, d, d, dtype=dtype, scale=0.25) for _ in range(4)]
    check(multi_head_attention, randn(r, 6, d, dtype=dtype), *ws)


def logistic_loss(w, x, y):
    z = x @ w
    return np.mean(np.log1p(np.exp(-y * z))) + 1e-3 * np.sum(w * w)


def logistic_grad(w, x, y):
    z = x @ w
    s = 1.0 / (1.0 + np.exp(y * z))
    return -(x.T @ (y * s)) / x.shape[0] + 2e-3 * w


@both_floats
def test_logistic_regression_loss_and_gradient(dtype):
    r = rng(13)
    x = randn(r, 50, 5, dtype=dtype)
    y = np.where(r.random(50) < 0.5, -1.0, 1.0).astype(dtype)
    w = randn(r, 5, dtype=dtype)
    check(logistic_loss, w, x, y)
    check(logistic_grad, w, x, y)


def test_logistic_gradient_matches_central_differences():
    """The hand-written gradient, compiled, agrees with differences of the NumPy loss."""
    from compiler import jit
    r = rng(14)
    x, y, w = randn(r, 30, 4), np.sign(randn(r, 30)), randn(r, 4)
    numeric = fd.jacobian(logistic_loss, (w, x, y))
    np.testing.assert_allclose(jit(logistic_grad)(w, x, y), numeric, rtol=1e-6, atol=1e-8)


def cross_entropy(logits, labels):
    n, c = logits.shape
    onehot = labels[:, None] == np.arange(c)[None, :]
    logp = log_softmax(logits)
    return -np.sum(np.where(onehot, logp, 0.0)) / n


@both_floats
def test_cross_entropy_with_integer_labels(dtype):
    r = rng(15)
    check(cross_entropy, randn(r, 12, 5, dtype=dtype, scale=2.0), r.integers(0, 5, 12))


def cross_entropy_take(logits, labels):
    logp = log_softmax(logits)
    picked = logp[np.arange(logits.shape[0]), labels]
    return -picked.mean()


@both_floats
def test_cross_entropy_label_gather(dtype):
    r = rng(16)
    check(cross_entropy_take, randn(r, 12, 5, dtype=dtype), r.integers(0, 5, 12))


def huber(pred, target, delta):
    err = pred - target
    a = np.abs(err)
    return np.mean(np.where(a <= delta, 0.5 * err ** 2, delta * (a - 0.5 * delta)))


@both_floats
def test_huber_loss(dtype):
    r = rng(17)
    check(huber, randn(r, 100, dtype=dtype, scale=2.0), randn(r, 100, dtype=dtype), 1.0)


def activations(x):
    leaky = np.where(x > 0, x, 0.01 * x)
    elu = np.where(x > 0, x, np.expm1(x))
    softplus = np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)
    silu = x / (1 + np.exp(-x))
    hard_sigmoid = np.clip(0.2 * x + 0.5, 0.0, 1.0)
    relu6 = np.clip(x, 0, 6)
    return leaky, elu, softplus, silu, hard_sigmoid, relu6


@both_floats
def test_clip_where_activation_functions(dtype):
    x = np.concatenate([randn(rng(18), 50, dtype=dtype, scale=4.0),
                        np.array([0.0, -0.0, 30.0, -30.0, 6.0, 7.5], dtype)])
    check(activations, x)


def conv1d_valid(x, w):
    k = w.shape[0]
    n = x.shape[0] - k + 1
    out = np.zeros(n, dtype=x.dtype)
    for j in range(k):
        out = out + w[j] * x[j:j + n]
    return out


@both_floats
def test_conv1d_via_slicing(dtype):
    r = rng(19)
    check(conv1d_valid, randn(r, 40, dtype=dtype), randn(r, 5, dtype=dtype))


def conv2d(img, kernel):
    kh, kw = kernel.shape
    h, w = img.shape[0] - kh + 1, img.shape[1] - kw + 1
    out = np.zeros((h, w), dtype=img.dtype)
    for i in range(kh):
        for j in range(kw):
            out += kernel[i, j] * img[i:i + h, j:j + w]
    return out


@both_floats
def test_conv2d_via_slicing_sums(dtype):
    r = rng(20)
    check(conv2d, randn(r, 12, 15, dtype=dtype), randn(r, 3, 3, dtype=dtype))


def max_pool_2x2(x):
    h, w = x.shape
    return x.reshape(h // 2, 2, w // 2, 2).max(axis=(1, 3))


@both_floats
def test_max_pool_via_reshape(dtype):
    check(max_pool_2x2, randn(rng(21), 8, 6, dtype=dtype))


def adam_step(params, grads, state, lr):
    b1, b2, eps = 0.9, 0.999, 1e-8
    t = state["t"] + 1
    new_params, new_m, new_v = {}, {}, {}
    for name in params:
        m = b1 * state["m"][name] + (1 - b1) * grads[name]
        v = b2 * state["v"][name] + (1 - b2) * grads[name] ** 2
        mhat = m / (1 - b1 ** t)
        vhat = v / (1 - b2 ** t)
        new_params[name] = params[name] - lr * mhat / (np.sqrt(vhat) + eps)
        new_m[name], new_v[name] = m, v
    return new_params, {"m": new_m, "v": new_v, "t": t}


@both_floats
def test_adam_step_pytrees_in_and_out(dtype):
    r = rng(22)
    shapes = {"w": (3, 4), "b": (4,)}
    params = {k: randn(r, *s, dtype=dtype) for k, s in shapes.items()}
    grads = {k: randn(r, *s, dtype=dtype) for k, s in shapes.items()}
    state = {"m": {k: np.zeros(s, dtype) for k, s in shapes.items()},
             "v": {k: np.zeros(s, dtype) for k, s in shapes.items()}, "t": np.array(3, dtype)}
    check(adam_step, params, grads, state, 1e-3)


def sgd_momentum(w, g, v, lr, mu):
    v = mu * v - lr * g
    return w + v, v


@both_floats
def test_sgd_momentum_step_tuple_out(dtype):
    r = rng(23)
    check(sgd_momentum, randn(r, 10, dtype=dtype), randn(r, 10, dtype=dtype), randn(r, 10, dtype=dtype), 0.1, 0.9)


def embedding_mean(table, ids):
    return table[ids].mean(axis=1)


@both_floats
def test_embedding_lookup_and_mean(dtype):
    r = rng(24)
    check(embedding_mean, randn(r, 20, 8, dtype=dtype), r.integers(0, 20, size=(4, 3)))


def mse_with_l2(w, x, y):
    resid = x @ w - y
    return 0.5 * np.dot(resid, resid) / y.size + 0.01 * np.sqrt(np.sum(w * w)) ** 2


@both_floats
def test_mse_with_l2_norm(dtype):
    r = rng(25)
    check(mse_with_l2, randn(r, 6, dtype=dtype), randn(r, 30, 6, dtype=dtype), randn(r, 30, dtype=dtype))


def gamma_correct(img, gamma):
    img = np.clip(img, 0.0, 1.0)
    out = img ** (1.0 / gamma)
    return (out * 255.0).round().astype(np.int32)


@both_floats
def test_image_gamma_correction(dtype):
    r = rng(26)
    check(gamma_correct, uniform(r, -0.1, 1.1, 16, 16, 3, dtype=dtype), 2.2)


def grayscale_normalize(img):
    gray = img @ np.array([0.299, 0.587, 0.114])
    lo, hi = gray.min(), gray.max()
    return (gray - lo) / (hi - lo)


@both_floats
def test_grayscale_closure_constant_weights(dtype):
    check(grayscale_normalize, uniform(rng(27), 0, 1, 10, 12, 3, dtype=dtype))


def sobel_magnitude(img):
    gx = (img[:-2, 2:] + 2 * img[1:-1, 2:] + img[2:, 2:]) - (img[:-2, :-2] + 2 * img[1:-1, :-2] + img[2:, :-2])
    gy = (img[2:, :-2] + 2 * img[2:, 1:-1] + img[2:, 2:]) - (img[:-2, :-2] + 2 * img[:-2, 1:-1] + img[:-2, 2:])
    return np.hypot(gx, gy)


@both_floats
def test_sobel_edge_magnitude(dtype):
    check(sobel_magnitude, uniform(rng(28), 0, 1, 14, 11, dtype=dtype))
