"""The user-facing side of vmap: in_dims/out_dims pytrees, batch sizes, errors.

:class:`VmapTracer` is what a ``vmap(...)`` Kernel stages with: given the
abstract (batched) arguments it strips the batch axes, stages the inner
function per example, and batches its IR with :func:`vmap_function`.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from compiler.frontend.pytrees import flatten, flatten_static, unflatten
from compiler.frontend.values import Weak
from compiler.ir import dims
from compiler.ir.types import TensorType
from compiler.transforms.vmap import CURRENT_RANDOMNESS, vmap_function

RANDOMNESS = ("error", "same", "different")


def _is_dynamic(x: Any) -> bool:
    return isinstance(x, (TensorType, Weak))


def _is_dims_leaf(x: Any) -> bool:
    return x is None or isinstance(x, int)


def prefix_leaves(spec: Any, tree: Any, what: str, where: str) -> list[Any]:
    """`spec` (a pytree prefix of `tree` with int/None leaves) broadcast to tree's
    dynamic leaves, in flattening order."""
    if _is_dims_leaf(spec):
        return [spec] * len(flatten_static(tree, _is_dynamic)[0])
    if isinstance(spec, (tuple, list)) and isinstance(tree, (tuple, list)) and len(spec) == len(tree):
        return [d for s, t in zip(spec, tree) for d in prefix_leaves(s, t, what, where)]
    if isinstance(spec, dict) and isinstance(tree, dict) and set(spec) == set(tree):
        return [d for k in sorted(tree, key=repr) for d in prefix_leaves(spec[k], tree[k], what, where)]
    raise ValueError(f"vmap: {what}={spec!r} does not match the structure of {where} "
                     f"({_structure(tree)}); give an int, None, or a tuple/list/dict with one entry "
                     f"per element")


def _structure(tree: Any) -> str:
    if isinstance(tree, (tuple, list)):
        inner = ", ".join(_structure(t) for t in tree)
        return f"({inner},)" if isinstance(tree, tuple) and len(tree) == 1 else (
            f"({inner})" if isinstance(tree, tuple) else f"[{inner}]")
    if isinstance(tree, dict):
        return "{" + ", ".join(f"{k!r}: {_structure(v)}" for k, v in tree.items()) + "}"
    return "array" if _is_dynamic(tree) else type(tree).__name__


class VmapTracer:
    """Stages ``vmap(inner, in_dims, out_dims)`` for given abstract arguments."""

    def __init__(self, inner: Any, in_dims: Any, out_dims: Any, randomness: str,
                 chunk_size: int | None, arg_names: Callable[[int], str]) -> None:
        if randomness not in RANDOMNESS:
            raise ValueError(f"vmap: randomness must be one of {RANDOMNESS}, got {randomness!r}")
        if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
            raise ValueError(f"vmap: chunk_size must be a positive int or None, got {chunk_size!r}")
        if not (_is_dims_leaf(in_dims) or isinstance(in_dims, (tuple, list, dict))):
            raise ValueError(f"vmap: in_dims must be an int, None, or a tuple/list/dict, got {in_dims!r}")
        self.inner, self.in_dims, self.out_dims = inner, in_dims, out_dims
        self.randomness, self.chunk_size = randomness, chunk_size
        self.arg_name = arg_names

    def per_arg_dims(self, args: tuple) -> list[Any]:
        if _is_dims_leaf(self.in_dims):
            return [self.in_dims] * len(args)
        if not isinstance(self.in_dims, (tuple, list)) or len(self.in_dims) != len(args):
            raise ValueError(f"vmap: in_dims={self.in_dims!r} must be an int, None, or a tuple with one "
                             f"entry per positional argument ({len(args)} given)")
        return list(self.in_dims)

    def __call__(self, a_args: tuple, a_kwargs: dict) -> Any:
        from compiler.frontend import StagedProgram
        per_arg = self.per_arg_dims(a_args)
        size, inner_args, flat_dims = None, [], []
        for i, (arg, spec) in enumerate(zip(a_args, per_arg)):
            name = self.arg_name(i)
            leaf_dims = prefix_leaves(spec, arg, "in_dims", f"argument '{name}'")
            leaves, tree = flatten_static(arg, _is_dynamic)
            if isinstance(spec, int) and not leaves:
                raise ValueError(f"vmap: in_dim={spec} for argument '{name}', which is a Python value "
                                 f"({type(arg).__name__}), not an array; use in_dims=None for it")
            stripped = []
            for leaf, d in zip(leaves, leaf_dims):
                new_leaf, d, n = _strip(leaf, d, name)
                if n is not None:
                    if size is not None and n != size:
                        raise ValueError(f"vmap: the inputs have different sizes in the mapped dimension: "
                                         f"argument '{name}' has {n}, an earlier one has {size}")
                    size = n
                stripped.append(new_leaf)
                flat_dims.append(d)
            inner_args.append(unflatten(tree, stripped))
        if size is None:
            raise ValueError("vmap: at least one input must be batched (every in_dim is None or "
                             "every input is a Python scalar)")
        kw_leaves = flatten_static(a_kwargs, _is_dynamic)[0]
        flat_dims += [None] * len(kw_leaves)       # keyword arguments are passed through unbatched
        program = self.inner.trace(tuple(inner_args), a_kwargs)
        out_example = unflatten(program.out_tree, [None] * len(program.function.results))
        out_dims = self._flat_out_dims(out_example, len(program.function.results))
        _check_unbatched_outputs(program.function, flat_dims, out_dims, size)
        token = CURRENT_RANDOMNESS.set(self.randomness)
        try:
            return StagedProgram(self._batch(program.function, flat_dims, out_dims, size),
                                 program.in_tree, program.out_tree)
        finally:
            CURRENT_RANDOMNESS.reset(token)

    def _batch(self, fn: Any, flat_dims: list[Any], out_dims: list[Any], size: Any) -> Any:
        if self.chunk_size is None:
            return vmap_function(fn, flat_dims, out_dims, size, name=f"vmap_{fn.name}")
        return chunked_function(fn, flat_dims, out_dims, size, self.chunk_size)

    def _flat_out_dims(self, example: Any, n: int) -> list[Any]:
        if _is_dims_leaf(self.out_dims):
            return [self.out_dims] * n
        spec = self.out_dims
        if not isinstance(example, (tuple, list)) and isinstance(spec, (tuple, list)) and len(spec) == 1:
            spec = spec[0]
        leaves = flatten(example, is_leaf=lambda x: x is None)[0]
        dims_ = _prefix_none_leaves(spec, example)
        if len(dims_) != len(leaves):
            raise ValueError(f"vmap: out_dims={self.out_dims!r} does not match the outputs")
        return dims_


def _prefix_none_leaves(spec: Any, tree: Any) -> list[Any]:
    if tree is None:
        return [spec] if _is_dims_leaf(spec) else _bad_out(spec)
    if _is_dims_leaf(spec):
        return [spec] * len(flatten(tree, is_leaf=lambda x: x is None)[0])
    if isinstance(spec, (tuple, list)) and isinstance(tree, (tuple, list)) and len(spec) == len(tree):
        return [d for s, t in zip(spec, tree) for d in _prefix_none_leaves(s, t)]
    if isinstance(spec, dict) and isinstance(tree, dict) and set(spec) == set(tree):
        return [d for k in sorted(tree, key=repr) for d in _prefix_none_leaves(spec[k], tree[k])]
    return _bad_out(spec)


def _bad_out(spec: Any) -> list[Any]:
    raise ValueError(f"vmap: out_dims={spec!r} does not match the structure of the outputs")


def _strip(leaf: Any, d: Any, name: str) -> tuple[Any, Any, Any]:
    """The per-example leaf, the normalized in_dim and the batch size (None: unbatched)."""
    if d is None or not _is_dynamic(leaf):
        if d is not None:
            raise ValueError(f"vmap: argument '{name}' is a Python scalar or static value and "
                             f"cannot be mapped over; use in_dims=None for it")
        return leaf, None, None
    if isinstance(leaf, Weak):
        raise ValueError(f"vmap: argument '{name}' is a Python scalar; use in_dims=None for it "
                         f"or pass an array")
    ndim = leaf.ndim
    if not -ndim <= d < ndim:
        raise ValueError(f"vmap: in_dim={d} is out of range for argument '{name}' of type {leaf} "
                         f"({ndim} dims): expected -{ndim} <= in_dim < {ndim}")
    d = d % ndim
    shape = list(leaf.shape)
    n = shape.pop(d)
    return leaf.with_shape(tuple(shape)), d, n


def chunked_function(fn: Any, in_dims: Sequence[Any], out_dims: Sequence[Any], size: Any,
                     chunk: int) -> Any:
    """vmap of `fn` that runs `chunk` batch elements at a time (one `chunked` op)."""
    import compiler.primitives as P
    from compiler.ir.builder import Builder, new_block
    from compiler.ir.core import Function
    from compiler.primitives.batching import move_axis
    from compiler.primitives.control import chunk_counts
    from compiler.transforms.vmap import batched_type, vmap_block
    block = new_block([batched_type(t, d, size) for t, d in zip(fn.in_types, in_dims)], fn.arg_names)
    loc = fn.body.ops[0].loc if fn.body.ops else None
    b = Builder(block)
    with b.at(loc):
        operands = [a if d is None else move_axis(b, a, d, 0) for a, d in zip(block.args, in_dims)]
        region_dims = [None if d is None else 0 for d in in_dims]
        outs0 = [0] * len(fn.results)
        _, tail = chunk_counts(size, chunk)
        regions = [vmap_block(fn.body, region_dims, n, outs0)[0] for n in (chunk, tail)]
        params = {"size": size, "chunk": chunk, "batched": tuple(d is not None for d in in_dims)}
        results = b.emit(P.chunked, operands, params, regions)
        block.results = [_place(b, r, want) for r, want in zip(results, out_dims)]
    return Function(f"vmap_{fn.name}", block, list(fn.arg_names))


def _place(b: Any, r: Any, want: Any) -> Any:
    import compiler.primitives as P
    from compiler.primitives.batching import move_axis
    if want is not None:
        return move_axis(b, r, 0, want % r.type.ndim)
    first = b.emit1(P.slice_, [r], {"start_indices": (0,) * r.type.ndim,
                                     "limit_indices": (1,) + tuple(r.type.shape[1:]),
                                     "strides": (1,) * r.type.ndim})
    return b.emit1(P.reshape, [first], {"new_sizes": tuple(r.type.shape[1:])})


def _check_unbatched_outputs(fn: Any, in_dims: Sequence[Any], out_dims: Sequence[Any], size: Any) -> None:
    from compiler.transforms.vmap import vmap_block
    if all(d is not None for d in out_dims):
        return
    _, got = vmap_block(fn.body, in_dims, size)
    for i, (want, have) in enumerate(zip(out_dims, got)):
        if want is None and have is not None:
            raise ValueError(f"vmap: out_dims is None for output {i}, but that output depends on a "
                             f"batched input; give it an out_dim")


_ = dims
