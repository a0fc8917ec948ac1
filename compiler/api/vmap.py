"""vmap for users: in_dims/out_dims pytrees, batch sizes, and their errors.

``vmap(f, ...)`` is a Kernel whose tracer (:class:`VmapTracer`) strips the batch
axes from the abstract arguments, traces the inner Kernel per example, and hands
one ``vmap`` pass to the pipeline: :func:`vmap_function` (or, with
``chunk_size``, :func:`chunked_function`) over the flat arguments and results.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from compiler import pipeline
from compiler.api.kernel import Kernel, as_kernel
from compiler.errors import TransformArgumentError
from compiler.frontend.pytrees import flatten, flatten_static, unflatten
from compiler.frontend.values import Weak
from compiler.ir.core import Function
from compiler.ir.dims import Dim
from compiler.ir.types import TensorType
from compiler.transforms.chunked import chunked_function
from compiler.transforms.vmap import CURRENT_RANDOMNESS, vmap_block, vmap_function

RANDOMNESS = ("error", "same", "different")


def vmap(func: Callable[..., Any], in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error",
         *, chunk_size: int | None = None) -> Kernel:
    """Vectorize `func` over a batch axis of its inputs (torch.func.vmap semantics)."""
    inner = as_kernel(func)
    tracer = VmapTracer(inner, in_dims, out_dims, randomness, chunk_size)
    return Kernel(inner.fn, tracer=tracer, name=f"vmap_{inner.__name__}")


def check_chunk_size(who: str, chunk_size: Any) -> None:
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"{who}: chunk_size must be a positive int or None, got {chunk_size!r}")


def check_randomness(who: str, randomness: Any) -> None:
    if randomness not in RANDOMNESS:
        raise ValueError(f"{who}: randomness must be one of {RANDOMNESS}, got {randomness!r}")


def _is_dynamic(x: Any) -> bool:
    return isinstance(x, (TensorType, Weak))


def _is_dims_leaf(x: Any) -> bool:
    return x is None or isinstance(x, int)


class VmapTracer:
    """Traces ``vmap(inner, in_dims, out_dims)`` for given abstract arguments."""

    def __init__(self, inner: Kernel, in_dims: Any, out_dims: Any, randomness: str,
                 chunk_size: int | None) -> None:
        check_randomness("vmap", randomness)
        check_chunk_size("vmap", chunk_size)
        if not (_is_dims_leaf(in_dims) or isinstance(in_dims, (tuple, list, dict))):
            raise ValueError(f"vmap: in_dims must be an int, None, or a tuple/list/dict, got {in_dims!r}")
        self.inner, self.in_dims, self.out_dims = inner, in_dims, out_dims
        self.randomness, self.chunk_size = randomness, chunk_size

    def __aotx_cache_key__(self) -> tuple[Any, ...]:
        return (self.inner, self.in_dims, self.out_dims, self.randomness, self.chunk_size)

    def __call__(self, a_args: tuple[Any, ...], a_kwargs: dict[str, Any]) -> pipeline.Program:
        inner_args, flat_dims, size = self._per_example(a_args)
        kw_leaves = flatten_static(a_kwargs, _is_dynamic)[0]
        flat_dims += [None] * len(kw_leaves)       # keyword arguments are passed through unbatched
        program = self.inner.trace(tuple(inner_args), a_kwargs)
        n_out = len(program.function.results)
        out_dims = self._flat_out_dims(unflatten(program.out_tree, [None] * n_out), n_out)
        batch = functools.partial(batch_function, in_dims=flat_dims, out_dims=out_dims, size=size,
                                  chunk=self.chunk_size, randomness=self.randomness)
        return pipeline.transform(program, [pipeline.Pass("vmap", batch)])

    def _per_example(self, a_args: tuple[Any, ...]) -> tuple[list[Any], list[Any], Any]:
        """The per-example arguments, the in_dim of each flat leaf, and the batch size."""
        size, inner_args, flat_dims = None, [], []
        for i, (arg, spec) in enumerate(zip(a_args, self._per_arg_dims(a_args))):
            name = self.inner.arg_name(i)
            leaf_dims = prefix_leaves(spec, arg, "in_dims", f"argument '{name}'")
            leaves, tree = flatten_static(arg, _is_dynamic)
            if isinstance(spec, int) and not leaves:
                raise ValueError(f"vmap: in_dim={spec} for argument '{name}', which is a Python value "
                                 f"({type(arg).__name__}), not an array; use in_dims=None for it")
            stripped = []
            for leaf, d in zip(leaves, leaf_dims):
                new_leaf, d, n = _strip(leaf, d, name)
                if n is not None and size is not None and n != size:
                    raise ValueError(f"vmap: the inputs have different sizes in the mapped dimension: "
                                     f"argument '{name}' has {n}, an earlier one has {size}")
                size = n if n is not None else size
                stripped.append(new_leaf)
                flat_dims.append(d)
            inner_args.append(unflatten(tree, stripped))
        if size is None:
            raise ValueError("vmap: at least one input must be batched (every in_dim is None or "
                             "every input is a Python scalar)")
        return inner_args, flat_dims, size

    def _per_arg_dims(self, args: tuple[Any, ...]) -> list[Any]:
        if _is_dims_leaf(self.in_dims):
            return [self.in_dims] * len(args)
        if not isinstance(self.in_dims, (tuple, list)) or len(self.in_dims) != len(args):
            raise ValueError(f"vmap: in_dims={self.in_dims!r} must be an int, None, or a tuple with one "
                             f"entry per positional argument ({len(args)} given)")
        return list(self.in_dims)

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


def batch_function(fn: Function, in_dims: Sequence[int | None], out_dims: Sequence[int | None],
                   size: Dim, chunk: int | None, randomness: str = "error") -> Function:
    """The vmap pass: `fn` batched (in chunks of `chunk` when given), with the randomness
    flag set for the rules that call user code."""
    token = CURRENT_RANDOMNESS.set(randomness)
    try:
        _check_unbatched_outputs(fn, in_dims, out_dims, size)
        if chunk is None:
            return vmap_function(fn, in_dims, out_dims, size, name=f"vmap_{fn.name}")
        return chunked_function(fn, in_dims, out_dims, size, chunk)
    finally:
        CURRENT_RANDOMNESS.reset(token)


def _check_unbatched_outputs(fn: Function, in_dims: Sequence[Any], out_dims: Sequence[Any],
                             size: Dim) -> None:
    if all(d is not None for d in out_dims):
        return
    _, got = vmap_block(fn.body, in_dims, size)
    for i, (want, have) in enumerate(zip(out_dims, got)):
        if want is None and have is not None:
            raise TransformArgumentError(f"vmap: out_dims is None for output {i}, but that output "
                                         f"depends on a batched input; give it an out_dim")


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
    if ndim == 0:
        raise ValueError(f"vmap: in_dim={d} for argument '{name}', but it is 0-d (type {leaf}): "
                         f"a 0-d array has no dimension to map over; use in_dims=None for it "
                         f"(the same value for every batch element) or pass a batch of values")
    if not -ndim <= d < ndim:
        raise ValueError(f"vmap: in_dim={d} is out of range for argument '{name}' of type {leaf} "
                         f"({ndim}-d): expected {-ndim} <= in_dim < {ndim}")
    d = d % ndim
    shape = list(leaf.shape)
    n = shape.pop(d)
    return leaf.with_shape(tuple(shape)), d, n
