"""vmap's user-facing contract (API.md sections 3 and 4, torch.func.vmap docs).

Every result is compared with the torch.func mental model, a Python loop over
the uncompiled NumPy function followed by ``np.stack`` (`loop`); never with the
compiler itself. Sections: what ``func`` may be and composition with jit; in_dims
pytrees; keyword arguments; out_dims; nesting and batch sizes; errors (each
naming the argument); chunk_size; compile-time rejections at the user's line;
efficiency of the batched IR.
"""
from __future__ import annotations

import inspect
import os
import re

import numpy as np
import pytest

from compiler import jit, vmap
from compiler.errors import (CompileError, DataDependentControlFlowError, DataDependentOperationError,
                             OutParameterError, SideEffectError)

rng = np.random.default_rng(20240611)
B = 4


def rand(*shape):
    return rng.standard_normal(shape)


def loop(fn, *args, in_dims=0, out_axis=0, **kwargs):
    """The oracle: slice every mapped argument, call the NumPy function, np.stack the results."""
    dims = in_dims if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
    size = next(np.shape(a)[d] for a, d in zip(args, dims) if d is not None)
    outs = []
    for k in range(size):
        ex = [a if d is None else np.take(a, k, axis=d) for a, d in zip(args, dims)]
        outs.append(fn(*ex, **kwargs))
    if isinstance(outs[0], tuple):
        axes = out_axis if isinstance(out_axis, tuple) else (out_axis,) * len(outs[0])
        return tuple(np.stack([o[i] for o in outs], axis=ax) for i, ax in enumerate(axes))
    return np.stack(outs, axis=out_axis)


def close(got, want, rtol=1e-12, atol=1e-12):
    """Same dtype, same shape, values within a reduction-order tolerance."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, type(want)) and len(got) == len(want), (type(got), got)
        for g, w in zip(got, want):
            close(g, w, rtol, atol)
        return
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want)
        for k in want:
            close(got[k], want[k], rtol, atol)
        return
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype, f"dtype {g.dtype}, expected {w.dtype}"
    assert g.shape == w.shape, f"shape {g.shape}, expected {w.shape}"
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def line_of(fn, text):
    """The absolute line number of the first line of `fn`'s source containing `text`."""
    src, first = inspect.getsourcelines(fn)
    for k, line in enumerate(src):
        if text in line:
            return first + k
    raise AssertionError(f"{text!r} not in the source of {fn.__name__}")


# ---- plain functions used below (compiled functions need a source file) ---------------------------

def f_add(a, b):
    return a + b


def f_dot(x, y):
    return np.dot(x, y)


def f_mlp(x, w, b):
    return np.tanh(x @ w + b)


def f_two(x, y):
    return x * y, x.sum() + y.sum()


def f_scale(x, scale=4.0):
    return x * scale


def f_norm(x):
    return x / np.sqrt(np.sum(x * x))


def f_matvec(m, v):
    return m @ v


def f_softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


# ---- what func may be; composition with jit -------------------------------------------------------

def test_vmap_of_numpy_function_dot():
    x, y = rand(B, 5), rand(B, 5)
    close(vmap(np.dot)(x, y), loop(np.dot, x, y))


def test_vmap_of_numpy_ufunc_and_reduction():
    x = rand(B, 3, 2)
    close(vmap(np.sin)(x), loop(np.sin, x), rtol=1e-13)
    close(vmap(np.sum)(x), loop(np.sum, x))
    close(vmap(np.transpose, in_dims=1)(x), loop(np.transpose, x, in_dims=1))


def test_vmap_of_a_kernel():
    x, w, b = rand(B, 3), rand(3, 2), rand(2)
    k = jit(f_mlp)
    close(vmap(k, in_dims=(0, None, None))(x, w, b), loop(f_mlp, x, w, b, in_dims=(0, None, None)))
    close(k(x[0], w, b), f_mlp(x[0], w, b))      # the Kernel itself is untouched


def test_jit_of_vmap_and_vmap_returns_a_kernel():
    from compiler import Kernel
    x, y = rand(B, 5), rand(B, 5)
    v = vmap(f_dot)
    assert isinstance(v, Kernel)
    jv = jit(v)
    assert isinstance(jv, Kernel)
    close(jv(x, y), loop(f_dot, x, y))
    close(jit(jit(vmap(f_dot)))(x, y), loop(f_dot, x, y))


def test_jit_of_vmap_with_a_symbolic_signature():
    k = jit(vmap(f_norm), signature="f64[b, 3]")
    for n in (1, 2, 7):
        x = rand(n, 3)
        close(k(x), loop(f_norm, x))
    text = vmap(f_norm).lower("f64[b, 3]").ir_optimized
    assert re.search(r"%x: f64\[b, 3\]", text), text
    assert re.search(r"-> \(f64\[b, 3\]\)", text), text


def test_vmap_of_vmap_of_kernel_and_jit_in_between():
    x, y = rand(2, 3, 5), rand(2, 3, 5)
    want = np.einsum("ijk,ijk->ij", x, y)
    close(vmap(jit(vmap(jit(f_dot))))(x, y), want)


def test_vmap_inside_a_compiled_function():
    """vmap of a module-level function, called inside compiled code, is inlined."""
    def outer(xs, w):
        return vmap(f_matvec, in_dims=(None, 0))(w, xs).sum(axis=0)
    xs, w = rand(B, 3), rand(2, 3)
    close(jit(outer)(xs, w), loop(f_matvec, w, xs, in_dims=(None, 0)).sum(axis=0))


# ---- in_dims -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("in_dims", [0, (0, 0), [0, 0], 1, (1, 0), (-1, -2), (-2, 1), (None, 0), (0, None),
                                     (-1, None)])
def test_in_dims_int_tuple_list_negative_none(in_dims):
    shape = {0: (B, 3), 1: (3, B), -1: (3, B), -2: (B, 3), None: (3,)}
    dims = in_dims if isinstance(in_dims, (tuple, list)) else (in_dims, in_dims)
    x, y = rand(*shape[dims[0]]), rand(*shape[dims[1]])
    close(vmap(f_add, in_dims=in_dims)(x, y), loop(f_add, x, y, in_dims=dims))
    close(vmap(f_dot, in_dims=in_dims)(x, y), loop(f_dot, x, y, in_dims=dims))


def test_in_dims_dict_input_with_none_leaf():
    def f(d):
        return np.dot(d["x"], d["y"])
    x, y = rand(B, 5), rand(5)
    got = vmap(f, in_dims=({"x": 0, "y": None},))({"x": x, "y": y})
    close(got, np.stack([np.dot(x[k], y) for k in range(B)]))


def test_in_dims_nested_tuple_list_dict_pytree():
    def f(p, q):
        (a, b), c = p
        return a * b[0] + c["u"] - q
    a, b0, c, q = rand(3, B), rand(3), rand(B, 3), rand(3)
    p = ((a, [b0]), {"u": c})
    got = vmap(f, in_dims=(((1, [None]), {"u": 0}), None))(p, q)
    want = np.stack([a[:, k] * b0 + c[k] - q for k in range(B)])
    close(got, want)


def test_in_dims_prefix_applies_to_a_whole_subtree():
    def f(pair):
        return pair[0] - pair[1]
    x, y = rand(B, 2), rand(B, 2)
    close(vmap(f, in_dims=(0,))((x, y)), x - y)
    close(vmap(f, in_dims=((0, 0),))((x, y)), x - y)
    close(vmap(f)([x, y]), x - y)


def test_python_float_argument_passes_unbatched():
    x = rand(B, 3)
    close(vmap(f_scale, in_dims=(0, None))(x, 2.5), x * 2.5)
    x32 = x.astype(np.float32)
    out = vmap(f_scale, in_dims=(0, None))(x32, 2.5)      # NEP 50: a Python float stays weak
    assert out.dtype == np.float32


def test_integer_and_bool_batched_arguments():
    def f(x, i, m):
        return np.where(m, x[i], 0.0)
    x, i, m = rand(B, 5), np.array([0, 4, -1, 2]), np.array([True, False, True, True])
    close(vmap(f)(x, i, m), np.stack([np.where(m[k], x[k][i[k]], 0.0) for k in range(B)]))


# ---- keyword arguments: passed through unbatched -------------------------------------------------

def test_kwargs_default_and_python_scalar():
    x = rand(2, 5)
    close(vmap(f_scale)(x), x * 4.0)
    close(vmap(f_scale)(x, scale=0.5), x * 0.5)


def test_kwargs_array_is_not_batched():
    """torch.func: 'batched_pow(x, scale=x)  # scale is not batched, output has shape [2, 2, 5]'."""
    x = rand(2, 5)
    got = vmap(f_scale)(x, scale=x)
    want = np.stack([f_scale(x[k], scale=x) for k in range(2)])
    assert want.shape == (2, 2, 5)
    close(got, want)


def test_kwargs_with_in_dims_for_positional_arguments_only():
    """in_dims has one entry per positional argument; keywords are not counted."""
    x, s = rand(3, B), rand(3)
    got = vmap(f_scale, in_dims=(1,))(x, scale=s)
    close(got, np.stack([x[:, k] * s for k in range(B)]))


def test_kwargs_of_reduction_parameters():
    def f(x, axis=0, keepdims=False):
        return np.sum(x, axis=axis, keepdims=keepdims)
    x = rand(B, 3, 2)
    close(vmap(f, in_dims=(0,))(x, axis=1, keepdims=True), np.sum(x, axis=2, keepdims=True))


# ---- out_dims ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("out_dims", [0, 1, 2, -1, -2, -3])
def test_out_dims_int(out_dims):
    x = rand(B, 3, 2)
    close(vmap(np.sin, out_dims=out_dims)(x), np.moveaxis(np.sin(x), 0, out_dims), rtol=1e-13)


def test_out_dims_tuple_per_output():
    x, y = rand(B, 3), rand(B, 3)
    got = vmap(f_two, out_dims=(1, 0))(x, y)
    close(got, loop(f_two, x, y, out_axis=(1, 0)))
    got = vmap(f_two, out_dims=(-1, -1))(x, y)
    close(got, loop(f_two, x, y, out_axis=(-1, -1)))


def test_out_dims_none_on_an_unbatched_output():
    def f(x, w):
        return x * w, w * 2.0
    x, w = rand(B, 3), rand(3)
    out, w2 = vmap(f, in_dims=(0, None), out_dims=(0, None))(x, w)
    close(out, x * w)
    close(w2, w * 2.0)


def test_out_dims_none_on_a_batched_output_is_an_error():
    with pytest.raises(ValueError, match=r"out_dims is None for output 0.*batched"):
        vmap(f_add, out_dims=None)(rand(B, 2), rand(B, 2))
    with pytest.raises(ValueError, match=r"out_dims is None for output 1"):
        vmap(f_two, out_dims=(0, None))(rand(B, 2), rand(B, 2))


def test_out_dims_out_of_range_is_an_error():
    """torch.func rejects an out_dim outside [-(r+1), r] for a batched output of rank r+1."""
    x = rand(B, 3)
    with pytest.raises(ValueError, match=r"out_dim"):
        vmap(np.sin, out_dims=2)(x)
    with pytest.raises(ValueError, match=r"out_dim"):
        vmap(np.sin, out_dims=-3)(x)


def test_out_dims_structure_mismatch_is_an_error():
    with pytest.raises(ValueError, match=r"out_dims"):
        vmap(f_two, out_dims=(0, 0, 0))(rand(B, 2), rand(B, 2))


def test_output_pytrees_dict_and_list():
    def f(x):
        return {"s": x.sum(), "parts": [x[0], x * 2.0]}
    x = rand(B, 3)
    got = vmap(f)(x)
    close(got, {"s": x.sum(axis=1), "parts": [x[:, 0], x * 2.0]})


# ---- nesting, batch sizes, ignored inputs -------------------------------------------------------

def test_nested_vmap_depth_3():
    x, y = rand(2, 3, 4, 5), rand(2, 3, 4, 5)
    got = vmap(vmap(vmap(f_dot)))(x, y)
    close(got, np.einsum("abcd,abcd->abc", x, y))


def test_nested_vmap_depth_3_mixed_in_dims():
    m, v = rand(3, 2, 5, 4), rand(4, 2)          # m: [i, j, k, 4]; v mapped at the middle level only
    inner = vmap(f_matvec, in_dims=(-2, None))   # over k (axis 0 of a [k, 4] example)
    mid = vmap(inner, in_dims=(0, 1))            # over j (v's axis 1)
    outer = vmap(mid, in_dims=(0, None))         # over i
    want = np.stack([np.stack([np.stack([m[i, j, k] @ v[:, j] for k in range(5)]) for j in range(2)])
                     for i in range(3)])
    close(outer(m, v), want)


def test_size_one_batch():
    x, y = rand(1, 5), rand(1, 5)
    close(vmap(f_dot)(x, y), loop(f_dot, x, y))
    close(vmap(vmap(f_dot))(x[None], y[None]), loop(f_dot, x, y)[None])
    close(vmap(f_dot, in_dims=(0, None))(x, y[0]), np.array([np.dot(x[0], y[0])]))


def test_size_zero_batch():
    x = rand(0, 3)
    out = vmap(f_norm)(x)
    assert out.shape == (0, 3) and out.dtype == np.float64


def test_function_ignoring_its_batched_input_broadcasts():
    def f(x, w):
        return w * 2.0
    x, w = rand(B, 3), rand(2)
    close(vmap(f, in_dims=(0, None))(x, w), np.stack([w * 2.0] * B))
    close(vmap(f, in_dims=(0, None), out_dims=1)(x, w), np.stack([w * 2.0] * B, axis=1))

    def g(x):
        return np.ones(3), x.sum()
    ones, s = vmap(g)(x)
    close(ones, np.ones((B, 3)))
    close(s, x.sum(axis=1))


def test_a_batched_input_only_one_output_uses():
    def f(x, y):
        return x + 1.0, y.sum()
    x, y = rand(B, 2), rand(B, 3)
    close(vmap(f)(x, y), (x + 1.0, y.sum(axis=1)))


# ---- errors, each naming the argument ---------------------------------------------------------------

def test_error_batch_size_mismatch_names_the_argument():
    with pytest.raises(ValueError, match=r"argument 'b' has 3.*earlier one has 2"):
        vmap(f_add)(rand(2, 3), rand(3, 3))
    with pytest.raises(ValueError, match=r"argument 'y' has 4"):
        vmap(f_dot, in_dims=(0, 1))(rand(2, 4), rand(4, 4))


def test_error_in_dim_out_of_range_names_the_argument():
    with pytest.raises(ValueError, match=r"in_dim=2 is out of range for argument 'a'"):
        vmap(f_add, in_dims=(2, 0))(rand(2, 3), rand(2, 3))
    with pytest.raises(ValueError, match=r"in_dim=-3 is out of range for argument 'b'"):
        vmap(f_add, in_dims=(0, -3))(rand(2, 3), rand(2, 3))


def test_error_in_dims_structure_mismatch():
    with pytest.raises(ValueError, match=r"in_dims=\(0, 0, 0\).*one entry per positional argument \(2 given\)"):
        vmap(f_add, in_dims=(0, 0, 0))(rand(2, 3), rand(2, 3))

    def f(d):
        return d["x"]
    with pytest.raises(ValueError, match=r"does not match the structure of argument 'd'"):
        vmap(f, in_dims=({"y": 0},))({"x": rand(2)})

    def g(pair):
        return pair[0] + pair[1]
    with pytest.raises(ValueError, match=r"does not match the structure of argument 'pair'"):
        vmap(g, in_dims=((0, 0, 0),))((rand(2), rand(2)))


def test_error_bad_in_dims_type():
    with pytest.raises(ValueError, match=r"in_dims must be an int, None"):
        vmap(f_add, in_dims="0")


def test_error_python_float_with_an_in_dim_names_the_argument():
    with pytest.raises(ValueError, match=r"argument 'b' is a Python scalar"):
        vmap(f_add, in_dims=(0, 0))(rand(2, 3), 2.0)


def test_error_python_int_with_an_in_dim_names_the_argument():
    """torch.func: 'Got in_dim=0 for an input but the input is of type int. We cannot vmap over
    non-Tensor arguments'. A Python int is a static argument in aotx: mapping over it is an error too."""
    with pytest.raises(ValueError, match=r"argument 'b'"):
        vmap(f_add, in_dims=(0, 0))(rand(2, 3), 2)


def test_error_no_batched_input():
    with pytest.raises(ValueError, match=r"at least one input must be batched"):
        vmap(f_add, in_dims=None)(rand(2, 3), rand(2, 3))
    with pytest.raises(ValueError, match=r"at least one input must be batched"):
        vmap(f_add, in_dims=(None, None))(rand(2, 3), rand(2, 3))


@pytest.mark.parametrize("bad", ["Error", "", None, 0, "random"])
def test_error_bad_randomness(bad):
    with pytest.raises(ValueError, match=r"randomness must be one of"):
        vmap(f_add, randomness=bad)


@pytest.mark.parametrize("randomness", ["error", "same", "different"])
def test_randomness_values_accepted_for_deterministic_functions(randomness):
    x, y = rand(B, 3), rand(B, 3)
    close(vmap(f_add, randomness=randomness)(x, y), x + y)


@pytest.mark.parametrize("bad", [0, -1, 2.5, "2"])
def test_error_bad_chunk_size(bad):
    with pytest.raises(ValueError, match=r"chunk_size must be a positive int or None"):
        vmap(f_add, chunk_size=bad)


def test_errors_are_raised_when_vmap_is_called_not_later_per_kernel():
    """An error leaves the Kernel usable for correct arguments."""
    k = vmap(f_add)
    with pytest.raises(ValueError):
        k(rand(2, 3), rand(3, 3))
    x = rand(2, 3)
    close(k(x, x), x + x)


# ---- chunk_size ---------------------------------------------------------------------------------------

CHUNK_FUNCS = {
    "elementwise": (f_add, 0, 0, lambda: (rand(B + 1, 3), rand(B + 1, 3))),
    "reduction": (f_norm, 0, 0, lambda: (rand(B + 1, 6),)),
    "softmax": (f_softmax, 0, 0, lambda: (rand(B + 1, 7),)),
    "matmul_unbatched_weight": (f_mlp, (0, None, None), 0, lambda: (rand(B + 1, 3), rand(3, 2), rand(2))),
    "in_dims_1_out_dims_1": (f_matvec, (None, 1), 1, lambda: (rand(2, 3), rand(3, B + 1))),
    "two_outputs": (f_two, 0, (1, 0), lambda: (rand(B + 1, 3), rand(B + 1, 3))),
}


@pytest.mark.parametrize("chunk", [1, 2, 3, B + 1, 100])
@pytest.mark.parametrize("name", list(CHUNK_FUNCS))
def test_chunk_size_equals_unchunked(name, chunk):
    fn, in_dims, out_dims, make = CHUNK_FUNCS[name]
    args = make()
    want = vmap(fn, in_dims=in_dims, out_dims=out_dims)(*args)
    got = vmap(fn, in_dims=in_dims, out_dims=out_dims, chunk_size=chunk)(*args)
    close(got, want, rtol=0, atol=0)          # the same per-element computation
    dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
    close(got, loop(fn, *args, in_dims=dims, out_axis=out_dims))


@pytest.mark.parametrize("chunk", [1, 2, 5])
def test_chunk_size_with_symbolic_batch(chunk):
    k = jit(vmap(f_norm, chunk_size=chunk), signature="f64[b, 4]")
    for n in (0, 1, 4, 5, 11):
        x = rand(n, 4)
        close(k(x), vmap(f_norm)(x) if n else np.zeros((0, 4)))


def test_chunk_size_nested_and_out_dims_none():
    x = rand(3, 5, 2)
    got = vmap(vmap(f_norm, chunk_size=2), chunk_size=2)(x)
    close(got, x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True)))

    def f(x, w):
        return x * w, w + 1.0
    x, w = rand(5, 3), rand(3)
    got = vmap(f, in_dims=(0, None), out_dims=(0, None), chunk_size=2)(x, w)
    close(got, (x * w, w + 1.0))


def test_chunked_ir_uses_one_chunked_op():
    text = vmap(f_norm, chunk_size=2).lower(rand(5, 3)).ir_optimized
    assert text.count("chunked(") == 1, text


# ---- rejections at compile time, at the user's line ----------------------------------------------

def relu_if(x):
    if x > 0:
        return x
    return 0.0 * x


def halve_while(x):
    while x > 1.0:
        x = x / 2.0
    return x


def abs_ifexp(x):
    return x if x > 0 else -x


def both_and(x, y):
    return (x > 0) and (y > 0)


def either_or(x, y):
    return (x > 0) or (y > 0)


def guarded_by_threshold(x, t):
    if t > 0:
        return x * t
    return -x


def sum_then_if(x):
    s = x.sum()
    if s > 0:
        return x / s
    return x


CONTROL_CASES = [
    (relu_if, "if x > 0", "if", lambda: (rand(B),)),
    (halve_while, "while x > 1.0", "while", lambda: (rand(B) * 8,)),
    (abs_ifexp, "x if x > 0 else -x", "conditional expression", lambda: (rand(B),)),
    (both_and, "(x > 0) and (y > 0)", "and", lambda: (rand(B), rand(B))),
    (either_or, "(x > 0) or (y > 0)", "or", lambda: (rand(B), rand(B))),
    (sum_then_if, "if s > 0", "if", lambda: (rand(B, 3),)),
]


@pytest.mark.parametrize("fn, text, what, make", CONTROL_CASES, ids=[c[0].__name__ for c in CONTROL_CASES])
def test_data_dependent_control_flow_is_rejected_at_the_users_line(fn, text, what, make):
    jit(fn)(*[a[0] for a in make()])                 # plain jit compiles it
    with pytest.raises(DataDependentControlFlowError) as info:
        vmap(fn)(*make())
    e = info.value
    assert isinstance(e, CompileError) and isinstance(e, TypeError)
    assert os.path.basename(e.filename) == os.path.basename(__file__)
    assert e.lineno == line_of(fn, text), (e.lineno, str(e))
    msg = str(e)
    assert what in msg and "batched" in msg, msg
    lines = msg.splitlines()
    src = next(i for i, ln in enumerate(lines) if text.split()[0] in ln and "Error" not in ln)
    assert "^" in lines[src + 1], msg                # a caret under the expression
    assert "np.where" in e.hint, e.hint


def test_control_flow_on_the_batched_value_caret_points_at_the_predicate():
    with pytest.raises(DataDependentControlFlowError) as info:
        vmap(relu_if)(rand(B))
    e = info.value
    src_line = inspect.getsourcelines(relu_if)[0][1]
    assert e.col_offset == src_line.index("x > 0"), (e.col_offset, src_line)


def test_same_if_on_an_unbatched_argument_compiles_and_is_correct():
    x = rand(B, 3)
    for t in (np.float64(2.0), np.float64(-1.5)):
        got = vmap(guarded_by_threshold, in_dims=(0, None))(x, t)
        close(got, loop(guarded_by_threshold, x, t, in_dims=(0, None)))


def test_while_on_an_unbatched_counter_compiles_and_is_correct():
    def f(x, n):
        i = np.int64(0)
        while i < n:
            x = x * 0.5 + 1.0
            i = i + 1
        return x
    x = rand(B, 2)
    got = vmap(f, in_dims=(0, None))(x, np.int64(3))
    close(got, loop(f, x, np.int64(3), in_dims=(0, None)))


def test_static_control_flow_is_never_an_error():
    """UX Limitations: control flow not dependent on the mapped values works (custom_dot)."""
    def custom_dot(x):
        if x.ndim == 1:
            return np.dot(x, x)
        return (x * x).sum()
    x = rand(B, 3)
    close(vmap(custom_dot)(x), loop(custom_dot, x))
    close(vmap(custom_dot)(rand(B, 2, 3)).shape, (B,))


def item_of(x):
    return x.item() * 2.0


def float_of(x):
    return float(x) * 2.0


def int_of(x):
    return np.float64(int(x)) * 2.0


def bool_of(x):
    return np.where(bool(x), 1.0, 2.0)


OPERATION_CASES = [(item_of, ".item()", "x.item()"), (float_of, "float()", "float(x)"),
                   (int_of, "int()", "int(x)"), (bool_of, "bool()", "bool(x)")]


@pytest.mark.parametrize("fn, what, text", OPERATION_CASES, ids=[c[0].__name__ for c in OPERATION_CASES])
def test_data_dependent_operation_is_rejected_at_the_users_line(fn, what, text):
    x = np.array([1.5, -2.0, 3.0])
    jit(fn)(x[0])                                    # plain jit compiles it
    with pytest.raises(DataDependentOperationError) as info:
        vmap(fn)(x)
    e = info.value
    assert e.lineno == line_of(fn, text), (e.lineno, str(e))
    assert os.path.basename(e.filename) == os.path.basename(__file__)
    assert what in str(e) and "batched" in str(e)
    assert "^" in str(e) and e.hint


def test_item_of_an_unbatched_value_is_allowed():
    def f(x, t):
        return x * t.item()
    x, t = rand(B, 2), np.float64(3.0)
    close(vmap(f, in_dims=(0, None))(x, t), x * 3.0)


def out_param(x):
    y = np.zeros(3)
    np.add(x, x, out=y)
    return y


def write_argument(x):
    x[0] = 1.0
    return x


def test_frontend_rejections_hold_under_vmap():
    with pytest.raises(OutParameterError) as info:
        vmap(out_param)(rand(B, 3))
    assert info.value.lineno == line_of(out_param, "out=y")
    with pytest.raises(SideEffectError) as info:
        vmap(write_argument)(rand(B, 3))
    assert info.value.lineno == line_of(write_argument, "x[0] = 1.0")


# ---- efficiency of the batched IR --------------------------------------------------------------------

def _ops(text):
    return re.findall(r"= (\w+)\(", text)


def test_batched_matmul_is_one_dot_general_with_batch_dims():
    a, b = rand(B, 2, 3), rand(B, 3, 5)
    k = vmap(lambda x, y: x @ y)
    text = k.lower(a, b).ir_optimized
    assert _ops(text).count("dot_general") == 1, text
    assert re.search(r"dot_general\(.*\) \{dimension_numbers=\(\(\(\d+,\), \(\d+,\)\), \(\(0,\), \(0,\)\)\)\}",
                     text), text
    assert "while" not in text and "chunked" not in text, text
    close(k(a, b), loop(np.matmul, a, b), rtol=1e-12)


def test_batched_dot_with_unbatched_matrix_has_no_batch_dims_and_no_copy_of_the_matrix():
    x, w = rand(B, 3), rand(3, 5)
    k = vmap(lambda xx, ww: xx @ ww, in_dims=(0, None))
    text = k.lower(x, w).ir_optimized
    assert _ops(text).count("dot_general") == 1, text
    assert re.search(r"dot_general\(%\w+, %ww\) \{dimension_numbers=\(\(\(\d+,\), \(0,\)\), \(\(\), \(\)\)\)\}",
                     text), text                        # w read as is: no batch dims, no broadcast copy
    assert set(_ops(text)) <= {"dot_general", "reshape", "transpose"}, text
    close(k(x, w), x @ w)


def _schedule(kernel, *args):
    from compiler.backend.fusion import schedule
    fn = kernel.specialize(*args).artifacts.ir_optimized
    return fn, schedule(fn.body)


def test_vmap_of_a_fused_function_is_still_one_fused_loop():
    def f(x):
        return np.exp(-x ** 2) * np.sin(3.0 * x) + 1.0
    x = rand(B, 8)
    fn1, s1 = _schedule(jit(f), x[0])
    fnb, sb = _schedule(vmap(f), x)
    inner = lambda s, fn: [v for v in s.materialized if v not in fn.body.args and v not in fn.body.results]  # noqa: E731
    assert inner(s1, fn1) == [] and inner(sb, fnb) == [], "an intermediate got a buffer"
    close(vmap(f)(x), loop(f, x), rtol=1e-13)


def test_unbatched_operand_is_never_materialized_at_batch_size():
    def f(x, w):
        return np.tanh(x * w + 1.0) * w
    x, w = rand(B, 3), rand(3)
    k = vmap(f, in_dims=(0, None))
    fn, sched = _schedule(k, x, w)
    w_arg = fn.body.args[1]
    for op in fn.body.walk():
        if w_arg in op.operands:
            assert op.prim.name == "broadcast_in_dim", f"w is used by {op.prim.name}"
            (r,) = op.results
            assert not sched.is_materialized(r), "the broadcast of w is materialized"
            for user in fn.body.walk():
                if r in user.operands:
                    assert user.prim.kind == "elementwise", user.prim.name
    extra = [v for v in sched.materialized if v not in fn.body.args and v not in fn.body.results]
    assert extra == [], f"buffers for intermediates: {[str(v.type) for v in extra]}"
    close(k(x, w), loop(f, x, w, in_dims=(0, None)), rtol=1e-13)


def test_work_on_unbatched_operands_stays_unbatched():
    """w.sum() and np.exp(w) do not depend on the batch: they keep w's shape."""
    def f(x, w):
        return x * np.exp(w) / w.sum()
    x, w = rand(B, 5), rand(5)
    text = vmap(f, in_dims=(0, None)).lower(x, w).ir_optimized
    exp_line = next(ln for ln in text.splitlines() if " exp(" in ln)
    sum_line = next(ln for ln in text.splitlines() if "reduce_sum(" in ln)
    assert exp_line.rstrip().endswith(": f64[5]"), exp_line
    assert sum_line.rstrip().endswith(": f64[]"), sum_line
    close(vmap(f, in_dims=(0, None))(x, w), loop(f, x, w, in_dims=(0, None)), rtol=1e-13)


def test_batched_reduction_reduces_the_shifted_axis_without_transposes():
    x = rand(B, 3, 4)
    text = vmap(lambda a: a.sum(axis=0)).lower(x).ir_optimized
    assert "reduce_sum" in text and "axes=(1,)" in text and "transpose" not in text, text
