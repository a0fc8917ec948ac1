"""Oracles of the whole-function differentiation tests: finite differences of the
*uncompiled* NumPy function, and a counter of native compilations.

``numerical_grad(f, args, argnum)`` differentiates ``f`` (run by NumPy) with
respect to one argument, which may be an array or a pytree (dict/tuple/list) of
float64 arrays, element by element with the 4-point central stencil
``(-f(x+2h) + 8f(x+h) - 8f(x-h) + f(x-2h)) / 12h`` (error O(h^4)); the result
has the structure of the argument, each leaf of shape ``(*out, *leaf)`` (the
torch.func Jacobian layout; ``()`` outputs give plain gradients).
"""
from __future__ import annotations

import contextlib
import copy
from typing import Any, Callable, Iterator

import numpy as np

from compiler import pipeline

H = 1e-5


def _leaves(tree: Any) -> list[tuple[tuple, np.ndarray]]:
    if isinstance(tree, dict):
        return [((k,) + p, v) for k in sorted(tree) for p, v in _leaves(tree[k])]
    if isinstance(tree, (tuple, list)):
        return [((i,) + p, v) for i, t in enumerate(tree) for p, v in _leaves(t)]
    return [((), tree)]


def _replace(tree: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(tree, dict):
        out = dict(tree)
        out[head] = _replace(tree[head], rest, value)
        return out
    out = list(tree)
    out[head] = _replace(tree[head], rest, value)
    return type(tree)(out)


def _map(tree: Any, fn: Callable[[tuple, Any], Any], path: tuple = ()) -> Any:
    if isinstance(tree, dict):
        return {k: _map(v, fn, path + (k,)) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return type(tree)(_map(v, fn, path + (i,)) for i, v in enumerate(tree))
    return fn(path, tree)


def numerical_jacobian_leaf(f: Callable[..., Any], args: tuple, argnum: int, path: tuple,
                            h: float = H) -> np.ndarray:
    """d f(*args) / d (leaf at `path` of argument `argnum`), shape (*out, *leaf)."""
    x = np.asarray(dict(_leaves(args[argnum]))[path], dtype=np.float64)
    out_shape = np.shape(f(*copy.deepcopy(args)))
    jac = np.zeros(out_shape + x.shape)
    for idx in np.ndindex(*x.shape):
        vals = []
        for c in (-2, -1, 1, 2):
            xp = x.copy()
            xp[idx] += c * h
            a = list(copy.deepcopy(args))
            a[argnum] = _replace(a[argnum], path, xp if np.ndim(x) else xp[()])
            with np.errstate(all="ignore"):
                vals.append(np.asarray(f(*a), dtype=np.float64))
        jac[(Ellipsis,) + idx] = (vals[0] - 8 * vals[1] + 8 * vals[2] - vals[3]) / (12 * h)
    return jac


def numerical_grad(f: Callable[..., Any], args: tuple, argnum: int = 0, h: float = H) -> Any:
    """The derivative with respect to argument `argnum`, with that argument's structure."""
    return _map(args[argnum], lambda path, leaf: numerical_jacobian_leaf(f, args, argnum, path, h))


def assert_tree_close(got: Any, want: Any, rtol: float = 1e-6, atol: float = 1e-8, what: str = "") -> None:
    """Same structure (dict keys, tuple lengths), shapes, and values within tolerance."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), f"{what}: {type(got)} keys differ"
        for k in want:
            assert_tree_close(got[k], want[k], rtol, atol, f"{what}[{k!r}]")
        return
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), \
            f"{what}: got {type(got).__name__} of {len(got) if isinstance(got, (tuple, list)) else '-'}, " \
            f"want {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_tree_close(g, w, rtol, atol, f"{what}[{i}]")
        return
    assert np.shape(got) == np.shape(want), f"{what}: shape {np.shape(got)}, want {np.shape(want)}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


@contextlib.contextmanager
def count_compilations() -> Iterator[list[str]]:
    """Records the name of every native compilation (pipeline.compile_ir) inside the block."""
    names: list[str] = []
    original = pipeline.compile_ir

    def counting(fn, *args, **kwargs):
        names.append(getattr(fn, "name", "?"))
        return original(fn, *args, **kwargs)
    pipeline.compile_ir = counting
    try:
        yield names
    finally:
        pipeline.compile_ir = original
