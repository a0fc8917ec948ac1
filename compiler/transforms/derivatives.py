"""Derivative kernels as IR passes, composed from the vjp, jvp and vmap passes:
grad, jacrev, jacfwd, and the kernels behind vjp's ``vjp_fn`` and jvp/linearize.

Each pass builds one new function whose results are the values the caller asks
for, by index (``select``) into the values the pass can give, in the caller's
order; the caller (compiler/api/autodiff.py) turns that flat list back into the
user's output structure.

    func @f(%x: f64[3]) -> (f64[]) { %0 = sin(%x); %1 = reduce_sum(%0) ... }
    vfn = vjp_function(f, [True])            # (x, ct) -> (f(x), cotangent of x)
    grad_function(vfn, 1, seeds=[1.0], select=[1], name="grad_f")
    func @grad_f(%x: f64[3]) -> (f64[3]) { ...vfn inlined with ct = 1.0... return %x_ct }

A Jacobian is a batch of vjps (jacrev: for each result, over that result's basis)
or of jvps (jacfwd: for each input leaf, over that input's basis); the one-hot
basis is built inside the kernel with ``iota``, so a Jacobian is one kernel.
"""
from __future__ import annotations

from typing import Callable, Sequence


from compiler.ir.builder import Builder, new_block
from compiler.ir.core import Function, SourceLoc, Value
from compiler.ir.types import I64, TensorType, is_inexact
from compiler.primitives import ops
from compiler.primitives.batching import inline_block
from compiler.transforms.chunked import chunked_function
from compiler.transforms.jvp import jvp_function
from compiler.transforms.vmap import CURRENT_RANDOMNESS, vmap_function

Build = Callable[[Builder, list[Value]], list[Value]]


def grad_function(vfn: Function, n_primals: int, seeds: Sequence[float], select: Sequence[int],
                  name: str) -> Function:
    """A function of the primals: `vfn` (from vjp_function) called with the constant output
    cotangents `seeds` (one per float result), returning vfn's results `select`."""
    n = n_primals

    def build(b: Builder, args: list[Value]) -> list[Value]:
        cts = [ops.full(b, s, t) for s, t in zip(seeds, vfn.in_types[n:])]
        outs = _call(b, vfn, [*args, *cts])
        return [outs[i] for i in select]
    return _assemble(name, vfn.in_types[:n], vfn.arg_names[:n], _last_loc(vfn), build)


def vjp_fn_function(vfn: Function, n_primals: int, n_results: int, feeds: Sequence[int | None],
                    ct_types: Sequence[TensorType], name: str, n_consts: int = 0) -> Function:
    """The kernel behind vjp_fn: (primals, cotangents, consts) -> the cotangents of the
    active arguments. ``feeds[p]`` is the cotangent argument for vfn's p-th cotangent input
    (cast to its dtype), or None for a zero cotangent. `vfn`'s inputs are the primals, then
    `n_consts` inputs that are not differentiated (the captures of a function defined inside
    compiled code), then the cotangents."""
    n, k, c = n_primals, n_consts, len(ct_types)

    def build(b: Builder, args: list[Value]) -> list[Value]:
        given = args[n:n + c]
        cts = [ops.full(b, 0.0, t) if j is None else _cast(b, given[j], t)
               for j, t in zip(feeds, vfn.in_types[n + k:])]
        return _call(b, vfn, [*args[:n], *args[n + c:], *cts])[n_results:]
    names = list(vfn.arg_names[:n]) + [f"ct{i}" for i in range(c)] + list(vfn.arg_names[n:n + k])
    types = list(vfn.in_types[:n]) + list(ct_types) + list(vfn.in_types[n:n + k])
    return _assemble(name, types, names, _last_loc(vfn), build)


def jvp_fn_function(jfn: Function, n_primals: int, n_results: int, active: Sequence[bool],
                    t_types: Sequence[TensorType], select: Sequence[int], name: str,
                    n_consts: int = 0) -> Function:
    """The kernel behind jvp and linearize: (primals, a tangent per primal, consts) ->
    `jfn`'s (from jvp_function) primal results, then a tangent per result (zero for the
    results that are not float), picked by `select`. `jfn`'s inputs are the primals, then
    `n_consts` inputs without tangents, then the tangents of the active primals."""
    n, m, k = n_primals, n_results, n_consts

    def build(b: Builder, args: list[Value]) -> list[Value]:
        primals, tangents, consts = args[:n], args[n:2 * n], args[2 * n:]
        ts = [_cast(b, t, p.type) for t, p, on in zip(tangents, primals, active) if on]
        outs = _call(b, jfn, [*primals, *consts, *ts])
        float_tangents = iter(outs[m:])
        t_outs = [next(float_tangents) if is_inexact(r.dtype) else ops.full(b, 0.0, r.type) for r in outs[:m]]
        available = outs[:m] + t_outs
        return [available[i] for i in select]
    names = list(jfn.arg_names[:n]) + [f"t_{a}" for a in jfn.arg_names[:n]] + list(jfn.arg_names[n:n + k])
    types = list(jfn.in_types[:n]) + list(t_types) + list(jfn.in_types[n:n + k])
    return _assemble(name, types, names, _last_loc(jfn), build)


def jacrev_function(vfn: Function, primal: Function, active: Sequence[bool], rows: Sequence[int],
                    chunk: int | None, select: Sequence[int], name: str) -> Function:
    """Jacobians of `primal` by reverse mode, `vfn` being ``vjp_function(primal, active)``.
    Gives J[o, leaf] (shape ``(*out, *in)``) for o in `rows` and each active leaf, in
    that order, then `primal`'s results; returns those picked by `select`. The rows are the
    cotangents of one evaluation of `primal`: its key-less draws are the same for every row
    (the vmap over the basis uses randomness="same")."""
    leaves = [i for i, on in enumerate(active) if on]

    def build(b: Builder, args: list[Value]) -> list[Value]:
        jac = [j for o in rows for j in _vjp_rows(b, vfn, primal, o, leaves, args, chunk)]
        return _pick(b, jac, primal, args, select)
    token = CURRENT_RANDOMNESS.set("same")
    try:
        return _assemble(name, primal.in_types, primal.arg_names, _last_loc(primal), build)
    finally:
        CURRENT_RANDOMNESS.reset(token)


def jacfwd_function(primal: Function, active: Sequence[bool], rows: Sequence[int], chunk: int | None,
                    select: Sequence[int], name: str, randomness: str = "error") -> Function:
    """Jacobians of `primal` by forward mode: one jvp per active leaf, batched over the
    leaf's basis. Gives what :func:`jacrev_function` gives, in the same order. The batch
    runs `primal` once per basis vector: `randomness` is that vmap's flag (torch.func's)."""
    leaves = [i for i, on in enumerate(active) if on]

    def build(b: Builder, args: list[Value]) -> list[Value]:
        columns = {leaf: _jvp_columns(b, primal, leaf, args, chunk) for leaf in leaves}
        jac = [columns[leaf][o] for o in rows for leaf in leaves]
        return _pick(b, jac, primal, args, select)
    token = CURRENT_RANDOMNESS.set(randomness)
    try:
        return _assemble(name, primal.in_types, primal.arg_names, _last_loc(primal), build)
    finally:
        CURRENT_RANDOMNESS.reset(token)


def _pick(b: Builder, jac: list[Value], primal: Function, args: list[Value],
          select: Sequence[int]) -> list[Value]:
    """`select` among the Jacobian entries followed by the primal results (computed only
    when one is selected)."""
    wants_primal = any(i >= len(jac) for i in select)
    available = jac + (_call(b, primal, args) if wants_primal else [])
    return [available[i] for i in select]


def _vjp_rows(b: Builder, vfn: Function, primal: Function, o: int, leaves: list[int],
              args: list[Value], chunk: int | None) -> list[Value]:
    """J[o, leaf] for each leaf: vfn with result o's cotangent batched over its basis and
    the other results' cotangents zero."""
    t = primal.out_types[o]
    float_outs = [i for i, r in enumerate(primal.out_types) if is_inexact(r.dtype)]   # vjp's cotangents
    n_results = len(primal.results)

    def row(hb: Builder, hargs: list[Value]) -> list[Value]:
        cts = [hargs[-1] if i == o else ops.full(hb, 0.0, primal.out_types[i]) for i in float_outs]
        return _call(hb, vfn, [*hargs[:-1], *cts])[n_results:]
    h = _assemble("row", primal.in_types + [t], primal.arg_names + ["ct"], _last_loc(primal), row)
    rows = _call(b, _batch_last(h, t, chunk), [*args, one_hot_basis(b, t)])
    return [to_jacobian_layout(b, r, t.shape, primal.in_types[leaf].shape, basis_first=False)
            for leaf, r in zip(leaves, rows)]


def _jvp_columns(b: Builder, primal: Function, leaf: int, args: list[Value],
                 chunk: int | None) -> dict[int, Value]:
    """J[o, leaf] for each float result o: the jvp in `leaf` batched over its basis."""
    jfn = jvp_function(primal, [i == leaf for i in range(len(primal.in_types))])
    t = primal.in_types[leaf]
    n_results = len(primal.results)
    col = _assemble("col", primal.in_types + [t], primal.arg_names + ["t"], _last_loc(primal),
                    lambda hb, hargs: _call(hb, jfn, hargs)[n_results:])
    cols = _call(b, _batch_last(col, t, chunk), [*args, one_hot_basis(b, t)])
    float_outs = [i for i, r in enumerate(primal.out_types) if is_inexact(r.dtype)]
    return {o: to_jacobian_layout(b, c, primal.out_types[o].shape, t.shape, basis_first=True)
            for o, c in zip(float_outs, cols)}


def _batch_last(fn: Function, t: TensorType, chunk: int | None) -> Function:
    """`fn` batched over its last argument (a basis of values of type t) on axis 0."""
    in_dims = [None] * (len(fn.in_types) - 1) + [0]
    out_dims = [0] * len(fn.results)
    size = t.size if t.ndim else 1
    if chunk is None:
        return vmap_function(fn, in_dims, out_dims, size)
    return chunked_function(fn, in_dims, out_dims, size, chunk)


def one_hot_basis(b: Builder, t: TensorType) -> Value:
    """The identity basis for values of type t: shape (size, *t.shape), built with iota."""
    n = t.size
    eye = ops.convert(b, ops.eq(b, ops.iota(b, I64, (n, n), 0), ops.iota(b, I64, (n, n), 1)), t.dtype)
    return ops.reshape(b, eye, (n,) + tuple(t.shape))


def to_jacobian_layout(b: Builder, v: Value, lead: tuple, trail: tuple, basis_first: bool) -> Value:
    """A batch of basis results as a Jacobian of shape (*out_shape, *in_shape)."""
    if basis_first:     # (in_size, *out) from jvp over inputs -> (*out, *in)
        n_out = len(v.type.shape) - 1
        perm = tuple(range(1, n_out + 1)) + (0,)
        v = ops.transpose(b, v, perm)
    return ops.reshape(b, v, tuple(lead) + tuple(trail))


def _assemble(name: str, types: Sequence[TensorType], arg_names: Sequence[str], loc: SourceLoc | None,
              build: Build) -> Function:
    block = new_block(list(types), list(arg_names))
    b = Builder(block)
    with b.at(loc):
        block.results = list(build(b, list(block.args)))
    return Function(name, block, list(arg_names))


def _last_loc(fn: Function) -> SourceLoc | None:
    return fn.body.ops[-1].loc if fn.body.ops else None


def _call(b: Builder, fn: Function, args: Sequence[Value]) -> list[Value]:
    return inline_block(b, fn.body, list(args))


def _cast(b: Builder, v: Value, t: TensorType) -> Value:
    return v if v.dtype == t.dtype else ops.convert(b, v, t.dtype)
