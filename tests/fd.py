"""Finite differences: the numerical oracle of every derivative test.

The function being differentiated always runs *uncompiled* (NumPy, or the IR
reference interpreter), on float64 values. One stencil is used everywhere, the
4-point central difference (error O(h^4)):

    f'(0) ~ (f(-2h) - 8 f(-h) + 8 f(h) - f(2h)) / 12h

* ``derivative(phi, h)``: d/de phi(e) at e = 0, for every output leaf of phi;
* ``directional_derivative(f, xs, ts, h)``: the derivative of every output of
  ``f(*xs)`` along the tangents ``ts`` (None: that argument does not move);
* ``second_directional_derivative(s, xs, v, w, h)``: ``<w, H v>`` of a scalar
  function s, the stencil along v applied to the stencil along w (O(h^4));
* ``stable(estimate, h, rtol, noise)`` and ``stable_directional_derivative``: an
  estimate that does not change when the step is halved (None near a kink,
  a jump or a domain boundary, where the oracle cannot judge);
* ``jacobian(f, args, argnum, h)``: d f / d args[argnum], element by element,
  for an array argument or a pytree (dict/tuple/list) of arrays; each leaf has
  the torch.func layout ``(*out, *leaf)``.

Outputs may be arrays or (nested) tuples, lists and dicts of arrays; they are
compared leaf by leaf (dict keys sorted).
"""
from __future__ import annotations

import copy
import warnings
from typing import Any, Callable, Sequence

import numpy as np

#: the default step (float64 inputs of magnitude about 1)
H = 1e-5
#: (offset, weight): f'(0) ~ sum(weight * f(offset * h)) / (12 h); integer weights keep the
#: difference of equal values exactly zero
STENCIL = ((-2, 1), (-1, -8), (1, 8), (2, -1))
DENOMINATOR = 12


def leaves(out: Any) -> list[np.ndarray]:
    """The array leaves of an output: tuples and lists in order, dicts by sorted key."""
    if isinstance(out, (tuple, list)):
        return [leaf for o in out for leaf in leaves(o)]
    if isinstance(out, dict):
        return [leaf for k in sorted(out) for leaf in leaves(out[k])]
    return [np.asarray(out)]


def like(out: Any, flat: Sequence[Any]) -> Any:
    """`flat` in the structure of `out` (tuples and lists): the inverse of `leaves`."""
    it = iter(flat)

    def go(o: Any) -> Any:
        if isinstance(o, (tuple, list)):
            return type(o)(go(e) for e in o)
        return next(it)
    return go(out)


def evaluate(f: Callable[..., Any], *args: Any) -> list[np.ndarray]:
    """The output leaves of ``f(*args)`` (arguments copied, floating-point warnings off)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # e.g. var with ddof >= the count
        return leaves(f(*copy.deepcopy(args)))


def derivative(phi: Callable[[float], Any], h: float = H) -> list[np.ndarray]:
    """d/de phi(e) at e = 0 for every output leaf of phi, as float64 arrays."""
    values = [(w, evaluate(phi, c * h)) for c, w in STENCIL]
    return [sum(w * np.asarray(vs[k], np.float64) for w, vs in values) / (DENOMINATOR * h)
            for k in range(len(values[0][1]))]


def moved(xs: Sequence[Any], *moves: tuple[float, Sequence[Any]]) -> list[Any]:
    """``xs + sum(c * t)`` over the moves (c, ts); a None tangent leaves its argument alone."""
    out = list(xs)
    for c, ts in moves:
        out = [x if t is None else x + c * np.asarray(t) for x, t in zip(out, ts)]
    return out


def directional_derivative(f: Callable[..., Any], xs: Sequence[Any], ts: Sequence[Any],
                           h: float = H) -> list[np.ndarray]:
    """The derivative of every output leaf of ``f(*xs)`` along the tangents ``ts``."""
    return derivative(lambda e: f(*copy.deepcopy(moved(xs, (e, ts)))), h)


def second_directional_derivative(s: Callable[..., Any], xs: Sequence[Any], v: Sequence[Any],
                                  w: Sequence[Any], h: float = 1e-3) -> float:
    """``<w, H v>`` of the scalar function s at xs: the stencil along v applied to the one along w."""
    total = 0.0
    for a, ca in STENCIL:
        for b, cb in STENCIL:
            total += ca * cb * float(evaluate(s, *moved(xs, (a * h, v), (b * h, w)))[0])
    return total / (DENOMINATOR * h) ** 2


def stable(estimate: Callable[[float], list[np.ndarray] | None], h: float, rtol: float,
           noise: Callable[[float], float], halvings: int = 10) -> tuple[list[np.ndarray], float] | None:
    """A finite-difference estimate that does not change when the step is halved.

    Near a kink or a jump (mod, clip, a domain boundary) the difference quotient over
    the step is not the derivative at the point; then the step is halved (at most
    `halvings` times: piecewise linear functions such as mod may jump close by).
    `estimate(h)` returns the estimate (or None when it is not finite); `noise(h)` is
    the rounding error expected at step h. Returns the estimate and its step, or None
    when no step gives a stable, finite estimate: the function is not smooth at the
    scale of the finite differences there."""
    def finite(e: list[np.ndarray] | None) -> list[np.ndarray] | None:
        return e if e is not None and all(np.all(np.isfinite(d)) for d in e) else None

    prev = finite(estimate(h))
    for k in range(1, halvings + 1):
        hk = h / 2 ** k
        cur = finite(estimate(hk))
        if prev is not None and cur is not None and all(
                np.allclose(a, b, rtol=rtol, atol=noise(hk) + rtol * float(np.max(np.abs(b), initial=0)))
                for a, b in zip(prev, cur)):
            return cur, hk
        prev = cur
    return None


def stable_directional_derivative(f: Callable[..., Any], xs: Sequence[Any], ts: Sequence[Any], h: float,
                                  rtol: float, eps: float = float(np.finfo(np.float64).eps)
                                  ) -> list[np.ndarray] | None:
    """`directional_derivative` at a step where it is stable (see `stable`), or None.

    `eps` is the precision of f's arithmetic: the rounding noise of the quotient is
    taken as ``100 * eps * max|f| / h``."""
    mag = max([1.0] + [float(np.max(np.abs(o), initial=0)) for o in evaluate(f, *xs)])
    found = stable(lambda hh: directional_derivative(f, xs, ts, hh), h, rtol, lambda hh: 100 * eps * mag / hh)
    return None if found is None else found[0]


# ---- Jacobians --------------------------------------------------------------------------------------

def _tree_leaves(tree: Any) -> list[tuple[tuple, Any]]:
    if isinstance(tree, dict):
        return [((k,) + p, v) for k in sorted(tree) for p, v in _tree_leaves(tree[k])]
    if isinstance(tree, (tuple, list)):
        return [((i,) + p, v) for i, t in enumerate(tree) for p, v in _tree_leaves(t)]
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


def jacobian_leaf(f: Callable[..., Any], args: Sequence[Any], argnum: int, path: tuple = (),
                  h: float = H) -> np.ndarray:
    """d f(*args) / d (the leaf at `path` of argument `argnum`), shape ``(*out, *leaf)``."""
    x = np.asarray(dict(_tree_leaves(args[argnum]))[path], dtype=np.float64)
    out_shape = np.shape(evaluate(f, *args)[0])
    jac = np.zeros(out_shape + x.shape)
    for idx in np.ndindex(*x.shape):
        def phi(e: float, idx: tuple = idx) -> Any:
            xp = x.copy()
            xp[idx] += e
            a = copy.deepcopy(list(args))
            a[argnum] = _replace(a[argnum], path, xp if np.ndim(x) else xp[()])
            return f(*a)
        jac[(Ellipsis,) + idx] = derivative(phi, h)[0]
    return jac


def jacobian(f: Callable[..., Any], args: Sequence[Any], argnum: int = 0, h: float = H) -> Any:
    """d f(*args) / d args[argnum], with that argument's structure (one array per leaf)."""
    return _map(args[argnum], lambda path, _: jacobian_leaf(f, args, argnum, path, h))
