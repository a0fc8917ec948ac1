"""The user-facing side of differentiation: argnums, has_aux, output structure,
and Jacobians as vmaps of vjp/jvp over a one-hot basis built inside the kernel.

Each tracer stages the inner function, applies the IR passes (jvp.py, vjp.py,
vmap.py) and assembles one IR function, so every result is one kernel.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

import compiler.primitives as P
from compiler.frontend.pytrees import flatten, flatten_static, unflatten
from compiler.frontend.values import Weak
from compiler.ir import dims
from compiler.ir.builder import Builder, new_block
from compiler.ir.core import Function, Value
from compiler.ir.types import TensorType, is_float
from compiler.primitives.batching import inline_block
from compiler.transforms.jvp import jvp_function
from compiler.transforms.vjp import vjp_function
from compiler.transforms.vmap import vmap_function
from compiler.transforms.vmap_api import chunked_function


class Slot:
    """A placeholder leaf: which flat result of the assembled function goes here."""

    def __init__(self, index: int) -> None:
        self.index = index


def _is_dynamic(x: Any) -> bool:
    return isinstance(x, (TensorType, Weak))


def tree_with_slots(structure: Any) -> Any:
    """The treedef of a structure whose leaves are Slots (None stays a node)."""
    return flatten(structure, is_leaf=lambda x: isinstance(x, Slot))[1]


def leaf_ranges(args: tuple, kwargs: dict) -> list[range]:
    """For each positional argument, the range of its flat dynamic leaves."""
    out, start = [], 0
    for a in args:
        n = len(flatten_static(a, _is_dynamic)[0])
        out.append(range(start, start + n))
        start += n
    return out


def normalize_argnums(argnums: Any, n_args: int, who: str) -> tuple[tuple[int, ...], bool]:
    """(argnums as a tuple, whether results are tuples)."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums or not all(isinstance(i, int) for i in nums):
        raise TypeError(f"{who}: argnums must be an int or a non-empty tuple of ints, got {argnums!r}")
    norm = tuple(i % n_args if -n_args <= i < n_args else None for i in nums)
    if None in norm:
        raise ValueError(f"{who}: argnums={argnums!r} is out of range for a function of {n_args} "
                         f"positional arguments")
    return norm, not isinstance(argnums, int)


def split_aux(program: Any, has_aux: bool, who: str) -> tuple[list[int], Any]:
    """Indices of the differentiated outputs, and the aux part of the output tree (or None)."""
    n = len(program.function.results)
    example = unflatten(program.out_tree, [Slot(i) for i in range(n)])
    if not has_aux:
        return list(range(n)), example
    if not isinstance(example, (tuple, list)) or len(example) != 2:
        raise TypeError(f"{who}(has_aux=True): the function must return a pair (output, aux)")
    main = flatten(example[0], is_leaf=lambda x: isinstance(x, Slot))[0]
    return [s.index for s in main if isinstance(s, Slot)], example


def _assemble(name: str, args_types: list[TensorType], arg_names: list[str], build: Any) -> Function:
    block = new_block(args_types, arg_names)
    b = Builder(block)
    block.results = list(build(b, block.args))
    return Function(name, block, arg_names)


def _call(b: Builder, fn: Function, args: Sequence[Value]) -> list[Value]:
    return inline_block(b, fn.body, list(args))


def one_hot_basis(b: Builder, t: TensorType) -> Value:
    """The identity basis for values of type t: shape (size, *t.shape), built with iota."""
    n = t.size
    i = b.emit1(P.iota, [], {"dtype": np.dtype(np.int64), "shape": (n, n), "dimension": 0})
    j = b.emit1(P.iota, [], {"dtype": np.dtype(np.int64), "shape": (n, n), "dimension": 1})
    eye = b.emit1(P.convert, [b.emit1(P.eq, [i, j])], {"dtype": t.dtype})
    return b.emit1(P.reshape, [eye], {"new_sizes": (n,) + tuple(t.shape)})


def batch_over(fn: Function, batched: Sequence[bool], size: Any, chunk: int | None) -> Function:
    in_dims = [0 if on else None for on in batched]
    outs = [0] * len(fn.results)
    if chunk is None:
        return vmap_function(fn, in_dims, outs, size)
    return chunked_function(fn, in_dims, outs, size, chunk)


def to_jacobian_layout(b: Builder, v: Value, lead: tuple, trail: tuple, basis_first: bool) -> Value:
    """A batch of basis results as a Jacobian of shape (*out_shape, *in_shape)."""
    if basis_first:     # (in_size, *out) from jvp over inputs -> (*out, *in)
        n_out = len(v.type.shape) - 1
        perm = tuple(range(1, n_out + 1)) + (0,)
        v = b.emit1(P.transpose, [v], {"permutation": perm}) if n_out else v
    shape = tuple(lead) + tuple(trail)
    return b.emit1(P.reshape, [v], {"new_sizes": shape}) if tuple(v.type.shape) != shape else v


def _size(t: TensorType) -> Any:
    return t.size if t.ndim else 1


_ = (dims, is_float)


def finish(structure: Any, results: list[Value]) -> tuple[list[Value], Any]:
    """Results in the flattening order of `structure` (whose leaves are Slots), and its treedef."""
    slots, tree = flatten(structure, is_leaf=lambda x: isinstance(x, Slot))
    return [results[s.index] for s in slots if isinstance(s, Slot)], tree


class _Results:
    def __init__(self) -> None:
        self.values: list[Value] = []

    def slot(self, v: Value) -> Slot:
        self.values.append(v)
        return Slot(len(self.values) - 1)


class ADTracer:
    """Common argument handling of grad/jacrev/jacfwd tracers."""

    who = "grad"

    def __init__(self, inner: Any, argnums: Any, has_aux: bool, chunk_size: int | None = None) -> None:
        if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
            raise ValueError(f"{self.who}: chunk_size must be a positive int or None, got {chunk_size!r}")
        self.inner, self.argnums, self.has_aux, self.chunk_size = inner, argnums, has_aux, chunk_size

    def prepare(self, a_args: tuple, a_kwargs: dict) -> Any:
        program = self.inner.trace(a_args, a_kwargs)
        fn = program.function
        argnums, tupled = normalize_argnums(self.argnums, len(a_args), self.who)
        ranges = leaf_ranges(a_args, a_kwargs)
        active = [False] * len(fn.in_types)
        for k in argnums:
            for i in ranges[k]:
                if not is_float(fn.in_types[i].dtype):
                    raise TypeError(f"{self.who}: argument {k} has dtype {fn.in_types[i].dtype}; only "
                                    f"floating-point inputs can be differentiated")
                active[i] = True
        main, example = split_aux(program, self.has_aux, self.who)
        return program, fn, argnums, tupled, ranges, active, main, example

    def arg_structure(self, a_args: tuple, k: int, leaves: list[Any]) -> Any:
        _, tree = flatten_static(a_args[k], _is_dynamic)
        return unflatten(tree, leaves)

    def with_aux(self, res: _Results, out: Any, example: Any, outs: list[Value]) -> Any:
        if not self.has_aux:
            return out
        aux = unflatten(flatten(example[1], is_leaf=lambda x: isinstance(x, Slot))[1],
                        [res.slot(outs[s.index]) if isinstance(s, Slot) else s
                         for s in flatten(example[1], is_leaf=lambda x: isinstance(x, Slot))[0]])
        return (out, aux)


class GradTracer(ADTracer):
    """grad / grad_and_value: the vjp of a scalar output with cotangent 1."""

    def __init__(self, inner: Any, argnums: Any, has_aux: bool, with_value: bool) -> None:
        super().__init__(inner, argnums, has_aux)
        self.with_value = with_value
        self.who = "grad_and_value" if with_value else "grad"

    def __call__(self, a_args: tuple, a_kwargs: dict) -> Any:
        from compiler.frontend import StagedProgram
        program, fn, argnums, tupled, ranges, active, main, example = self.prepare(a_args, a_kwargs)
        if len(main) != 1 or not is_float(fn.out_types[main[0]].dtype) \
                or any(d != 1 for d in fn.out_types[main[0]].shape):
            got = ", ".join(str(fn.out_types[i]) for i in main)
            raise TypeError(f"{self.who}: the function must return one floating-point scalar "
                            f"(use jacrev for other outputs), got {got or 'nothing'}")
        vfn = vjp_function(fn, active)
        float_outs = [i for i, t in enumerate(fn.out_types) if is_float(t.dtype)]
        res = _Results()

        def build(b: Builder, args: list[Value]) -> list[Value]:
            with b.at(fn.body.ops[-1].loc if fn.body.ops else None):
                cts = [_const(b, 1.0 if i == main[0] else 0.0, fn.out_types[i]) for i in float_outs]
                outs = _call(b, vfn, [*args, *cts])
            n = len(fn.results)
            grads = dict(zip([i for i, on in enumerate(active) if on], outs[n:]))   # per active leaf
            per_arg = [self.arg_structure(a_args, k, [res.slot(grads[i]) for i in ranges[k]])
                       for k in argnums]
            out: Any = tuple(per_arg) if tupled else per_arg[0]
            if not self.with_value:
                self.structure = self.with_aux(res, out, example, outs[:n])
            elif self.has_aux:          # torch.func: (grad, (value, aux))
                value = res.slot(outs[main[0]])
                self.structure = (out, (value, self.with_aux(res, None, example, outs[:n])[1]))
            else:
                self.structure = (out, res.slot(outs[main[0]]))
            return []

        assembled = _assemble(f"{self.who}_{fn.name}", list(fn.in_types), list(fn.arg_names), build)
        assembled.body.results, tree = finish(self.structure, res.values)
        return StagedProgram(assembled, program.in_tree, tree)


def _const(b: Builder, value: float, t: TensorType) -> Value:
    c = b.emit1(P.constant, [], {"value": np.array(value, t.dtype)})
    return c if t.ndim == 0 else b.emit1(P.broadcast_in_dim, [c], {"shape": t.shape, "broadcast_dimensions": ()})


class JacTracer(ADTracer):
    """jacrev (vmap of vjp over output basis) and jacfwd (vmap of jvp over input basis)."""

    def __init__(self, inner: Any, argnums: Any, has_aux: bool, chunk_size: int | None, mode: str) -> None:
        self.who = "jacrev" if mode == "rev" else "jacfwd"
        super().__init__(inner, argnums, has_aux, chunk_size)
        self.mode = mode

    def __call__(self, a_args: tuple, a_kwargs: dict) -> Any:
        from compiler.frontend import StagedProgram
        program, fn, argnums, tupled, ranges, active, main, example = self.prepare(a_args, a_kwargs)
        for i in main:
            if not is_float(fn.out_types[i].dtype):
                raise TypeError(f"{self.who}: output {i} has dtype {fn.out_types[i].dtype}; only "
                                f"floating-point outputs have a Jacobian")
        res = _Results()
        leaves = [i for k in argnums for i in ranges[k]]

        def build(b: Builder, args: list[Value]) -> list[Value]:
            with b.at(fn.body.ops[-1].loc if fn.body.ops else None):
                jac = (self._rev if self.mode == "rev" else self._fwd)(b, fn, args, active, main, leaves)
                outs = _call(b, fn, args) if self.has_aux else []
            per_out = []
            for o in main:
                per_arg = [self.arg_structure(a_args, k, [res.slot(jac[o, i]) for i in ranges[k]])
                           for k in argnums]
                per_out.append(tuple(per_arg) if tupled else per_arg[0])
            main_example = example[0] if self.has_aux else example
            out_struct = unflatten(flatten(main_example, is_leaf=lambda x: isinstance(x, Slot))[1],
                                   per_out) if len(main) != 1 or isinstance(main_example, (tuple, list, dict)) \
                else per_out[0]
            self.structure = self.with_aux(res, out_struct, example, outs)
            return []

        assembled = _assemble(f"{self.who}_{fn.name}", list(fn.in_types), list(fn.arg_names), build)
        assembled.body.results, tree = finish(self.structure, res.values)
        return StagedProgram(assembled, program.in_tree, tree)

    def _rev(self, b: Builder, fn: Function, args: list[Value], active: list[bool], main: list[int],
             leaves: list[int]) -> dict:
        vfn = vjp_function(fn, active)
        float_outs = [i for i, t in enumerate(fn.out_types) if is_float(t.dtype)]
        jac = {}
        for o in main:
            t = fn.out_types[o]
            # H(primals..., ct_o) = input cotangents, the other outputs' cotangents zero
            h = _assemble("row", list(fn.in_types) + [t], list(fn.arg_names) + ["ct"],
                          lambda hb, hargs: _call(hb, vfn, [*hargs[:-1], *[
                              hargs[-1] if i == o else _const(hb, 0.0, fn.out_types[i]) for i in float_outs]])
                          [len(fn.results):])
            batched = batch_over(h, [False] * len(fn.in_types) + [True], _size(t), self.chunk_size)
            rows = _call(b, batched, [*args, one_hot_basis(b, t)])
            for leaf, r in zip([i for i, on in enumerate(active) if on], rows):
                jac[o, leaf] = to_jacobian_layout(b, r, t.shape, fn.in_types[leaf].shape, basis_first=False)
        return jac

    def _fwd(self, b: Builder, fn: Function, args: list[Value], active: list[bool], main: list[int],
             leaves: list[int]) -> dict:
        jac = {}
        float_outs = [i for i, t in enumerate(fn.out_types) if is_float(t.dtype)]
        for leaf in leaves:
            one = [i == leaf for i in range(len(fn.in_types))]
            jfn = jvp_function(fn, one)
            t = fn.in_types[leaf]
            cols_fn = _assemble("col", list(fn.in_types) + [t], list(fn.arg_names) + ["t"],
                                lambda hb, hargs: _call(hb, jfn, hargs)[len(fn.results):])
            batched = batch_over(cols_fn, [False] * len(fn.in_types) + [True], _size(t), self.chunk_size)
            cols = _call(b, batched, [*args, one_hot_basis(b, t)])
            for o, c in zip(float_outs, cols):
                if o in main:
                    jac[o, leaf] = to_jacobian_layout(b, c, fn.out_types[o].shape, t.shape, basis_first=True)
        return jac


class VjpTracer(ADTracer):
    """Stages ``(primals, cotangents) -> input cotangents`` for vjp's vjp_fn."""

    who = "vjp"

    def __call__(self, a_args: tuple, a_kwargs: dict) -> Any:
        from compiler.frontend import StagedProgram
        primals, cotangents = a_args
        program = self.inner.trace(tuple(primals), {})
        fn = program.function
        active = [is_float(t.dtype) for t in fn.in_types]
        main, example = split_aux(program, self.has_aux, self.who)
        ct_leaves = flatten_static(cotangents, _is_dynamic)[0]
        if len(ct_leaves) != len(main):
            raise ValueError(f"vjp_fn: expected cotangents with the structure of the output "
                             f"({len(main)} arrays), got {len(ct_leaves)}")
        for i, t in zip(main, ct_leaves):
            if isinstance(t, TensorType) and t.shape != fn.out_types[i].shape:
                raise ValueError(f"vjp_fn: cotangent of shape {t.shape} for an output of shape "
                                 f"{fn.out_types[i].shape}")
        vfn = vjp_function(fn, active)
        float_outs = [i for i, t in enumerate(fn.out_types) if is_float(t.dtype)]
        n_primal = len(fn.in_types)
        res = _Results()

        def build(b: Builder, args: list[Value]) -> list[Value]:
            given = dict(zip(main, args[n_primal:]))
            with b.at(fn.body.ops[-1].loc if fn.body.ops else None):
                cts = [_cast(b, given[i], fn.out_types[i]) if i in given else _const(b, 0.0, fn.out_types[i])
                       for i in float_outs]
                outs = _call(b, vfn, [*args[:n_primal], *cts])[len(fn.results):]
            it = iter(outs)
            per = []
            for k, r in enumerate(leaf_ranges(tuple(primals), {})):
                per.append(self.arg_structure(tuple(primals), k, [
                    res.slot(next(it)) if active[i] else None for i in r]))
            self.structure = tuple(per)
            return []

        ct_types = [t if isinstance(t, TensorType) else t.type for t in ct_leaves]
        assembled = _assemble(f"vjp_{fn.name}", list(fn.in_types) + ct_types,
                              list(fn.arg_names) + [f"ct{i}" for i in range(len(ct_types))], build)
        assembled.body.results, tree = finish(self.structure, res.values)
        return StagedProgram(assembled, program.in_tree, tree)


class JvpTracer(ADTracer):
    """Stages ``(primals, tangents) -> (output, tangent of the output[, aux])``."""

    who = "jvp"

    def __call__(self, a_args: tuple, a_kwargs: dict) -> Any:
        from compiler.frontend import StagedProgram
        primals, tangents = a_args
        program = self.inner.trace(tuple(primals), {})
        fn = program.function
        t_leaves, t_tree = flatten_static(tuple(tangents), _is_dynamic)
        p_tree = flatten_static(tuple(primals), _is_dynamic)[1]
        if t_tree != p_tree or len(t_leaves) != len(fn.in_types):
            raise ValueError("jvp: tangents must have the same structure as primals")
        for p, t in zip(fn.in_types, t_leaves):
            tt = t if isinstance(t, TensorType) else t.type
            if tt.shape != p.shape:
                raise ValueError(f"jvp: a tangent of shape {tt.shape} for a primal of shape {p.shape}")
        active = [is_float(t.dtype) for t in fn.in_types]
        jfn = jvp_function(fn, active)
        main, example = split_aux(program, self.has_aux, self.who)
        res = _Results()
        n = len(fn.in_types)

        def build(b: Builder, args: list[Value]) -> list[Value]:
            with b.at(fn.body.ops[-1].loc if fn.body.ops else None):
                ts = [_cast(b, t, p.type) for t, p, on in zip(args[n:], args[:n], active) if on]
                outs = _call(b, jfn, [*args[:n], *ts])
                n_out = len(fn.results)
                primal_outs, t_iter = outs[:n_out], iter(outs[n_out:])
                t_outs = [next(t_iter) if is_float(t.dtype) else _const(b, 0.0, t) for t in fn.out_types]
            main_example = example[0] if self.has_aux else example
            leaves, tree = flatten(main_example, is_leaf=lambda x: isinstance(x, Slot))
            out = unflatten(tree, [res.slot(primal_outs[s.index]) if isinstance(s, Slot) else s for s in leaves])
            tan = unflatten(tree, [res.slot(t_outs[s.index]) if isinstance(s, Slot) else s for s in leaves])
            self.structure = (out, tan) + ((self.with_aux(res, None, example, primal_outs)[1],)
                                           if self.has_aux else ())
            return []

        t_types = [t if isinstance(t, TensorType) else t.type for t in t_leaves]
        assembled = _assemble(f"jvp_{fn.name}", list(fn.in_types) + t_types,
                              list(fn.arg_names) + [f"t_{a}" for a in fn.arg_names], build)
        assembled.body.results, tree = finish(self.structure, res.values)
        return StagedProgram(assembled, program.in_tree, tree)


def _cast(b: Builder, v: Value, t: TensorType) -> Value:
    return v if v.dtype == t.dtype else b.emit1(P.convert, [v], {"dtype": t.dtype})
