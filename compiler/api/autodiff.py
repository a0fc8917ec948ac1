"""Differentiation for users: grad, grad_and_value, jacrev, jacfwd, hessian, vjp, jvp
and linearize, with argnums, has_aux and the torch.func output structures.

Each entry point is a Kernel whose tracer traces the inner Kernel, works out
which results the user gets and in which structure (a tree of :class:`Slot`
leaves), and hands the passes to the pipeline as named stages: ``vjp`` then
``grad``/``grad_and_value``/``jacrev``/``vjp_fn``, ``jacfwd``, or ``jvp`` then
``jvp_fn`` (compiler/transforms/derivatives.py builds their IR).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

from compiler import pipeline
from compiler.api.kernel import Kernel, as_kernel
from compiler.api.vmap import check_chunk_size, check_randomness
from compiler.frontend.pytrees import PyTreeDef, flatten, flatten_static, unflatten
from compiler.frontend.values import Staged, Weak
from compiler.ir.core import Function
from compiler.ir.types import TensorType, is_complex, is_float, is_inexact
from compiler.transforms.derivatives import (grad_function, jacfwd_function, jacrev_function,
                                             jvp_fn_function, vjp_fn_function)
from compiler.transforms.jvp import jvp_function
from compiler.transforms.vjp import vjp_function

# ---- entry points ------------------------------------------------------------------------------


def grad(func: Callable[..., Any], argnums: Any = 0, has_aux: bool = False) -> Kernel:
    """The gradient of a scalar-valued `func` with respect to the arguments `argnums`."""
    inner = as_kernel(func)
    return Kernel(inner.fn, tracer=GradTracer(inner, argnums, has_aux, with_value=False),
                  name=f"grad_{inner.__name__}")


def grad_and_value(func: Callable[..., Any], argnums: Any = 0, has_aux: bool = False) -> Kernel:
    """Like grad, returning ``(gradient, value)`` (``(gradient, (value, aux))`` with has_aux)."""
    inner = as_kernel(func)
    return Kernel(inner.fn, tracer=GradTracer(inner, argnums, has_aux, with_value=True),
                  name=f"grad_and_value_{inner.__name__}")


def jacrev(func: Callable[..., Any], argnums: Any = 0, *, has_aux: bool = False,
           chunk_size: int | None = None) -> Kernel:
    """The Jacobian by reverse mode: a vmap of vjp over the output basis."""
    inner = as_kernel(func)
    return Kernel(inner.fn, tracer=JacTracer(inner, argnums, has_aux, chunk_size, "rev"),
                  name=f"jacrev_{inner.__name__}")


def jacfwd(func: Callable[..., Any], argnums: Any = 0, has_aux: bool = False, *,
           randomness: str = "error", chunk_size: int | None = None) -> Kernel:
    """The Jacobian by forward mode: a vmap of jvp over the input basis."""
    check_randomness("jacfwd", randomness)
    inner = as_kernel(func)
    return Kernel(inner.fn, tracer=JacTracer(inner, argnums, has_aux, chunk_size, "fwd", randomness),
                  name=f"jacfwd_{inner.__name__}")


def hessian(func: Callable[..., Any], argnums: Any = 0, *, chunk_size: int | None = None) -> Kernel:
    """jacfwd(jacrev(func)): the Hessian of a scalar function. It is the Hessian of one
    evaluation: key-less random draws are shared by the basis (jacfwd's randomness="same")."""
    check_chunk_size("hessian", chunk_size)
    return jacfwd(jacrev(func, argnums, chunk_size=chunk_size), argnums, randomness="same",
                  chunk_size=chunk_size)


def vjp(func: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """``(output, vjp_fn)`` (``(output, vjp_fn, aux)`` with has_aux); vjp_fn(cotangents)
    returns a tuple with the cotangent of each primal and runs compiled code."""
    k = kernel_for(func)
    out = forward_kernel(k)(*primals)
    fn = VjpFn(ad_kernel("vjp", k, has_aux), primals)
    if has_aux:
        return out[0], fn, out[1]
    return out, fn


def jvp(func: Callable[..., Any], primals: Any, tangents: Any, *, has_aux: bool = False) -> tuple[Any, ...]:
    """``(output, jvp_out)`` (``(output, jvp_out, aux)`` with has_aux)."""
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise TypeError("jvp: primals and tangents must be tuples (one entry per argument)")
    result: tuple[Any, ...] = ad_kernel("jvp", kernel_for(func), has_aux)(primals, tangents)
    return result


def linearize(func: Callable[..., Any], *primals: Any) -> tuple[Any, ...]:
    """``(output, jvp_fn)``: jvp_fn(*tangents) evaluates the derivative at `primals`."""
    k = ad_kernel("jvp", kernel_for(func), False)
    return forward_kernel(kernel_for(func))(*primals), LinearizedFn(k, primals)


class VjpFn:
    """The vjp_fn returned by :func:`vjp`: a compiled kernel with the primals bound."""

    def __init__(self, kernel: Kernel, primals: tuple[Any, ...]) -> None:
        self.kernel, self.primals = kernel, primals

    def __call__(self, cotangents: Any) -> tuple[Any, ...]:
        result: tuple[Any, ...] = self.kernel(self.primals, cotangents)
        return result

    def __aotx_stage_call__(self, stager: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """Called inside compiled code: inline the vjp kernel."""
        return stager._call_kernel(self.kernel, [self.primals, *args], kwargs, arrays=True)

    def __aotx_captures__(self) -> list[Any]:
        """Staged values it holds (made inside compiled code: frontend/closures.py)."""
        return self.kernel.__aotx_captures__() + staged_leaves(self.primals)

    def __aotx_translate__(self, translate: Callable[[Any], Any]) -> "VjpFn":
        return VjpFn(self.kernel.__aotx_translate__(translate), translate(self.primals))


class LinearizedFn:
    """The jvp_fn returned by :func:`linearize`: tangents -> tangent of the output."""

    def __init__(self, kernel: Kernel, primals: tuple[Any, ...]) -> None:
        self.kernel, self.primals = kernel, primals

    def __call__(self, *tangents: Any) -> Any:
        return self.kernel(self.primals, tangents)[1]

    def __aotx_stage_call__(self, stager: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """Called inside compiled code: inline the jvp kernel, keep the tangent."""
        return stager._call_kernel(self.kernel, [self.primals, tuple(args)], kwargs, arrays=True)[1]

    def __aotx_captures__(self) -> list[Any]:
        """Staged values it holds (made inside compiled code: frontend/closures.py)."""
        return self.kernel.__aotx_captures__() + staged_leaves(self.primals)

    def __aotx_translate__(self, translate: Callable[[Any], Any]) -> "LinearizedFn":
        return LinearizedFn(self.kernel.__aotx_translate__(translate), translate(self.primals))


def staged_leaves(tree: Any) -> list[Any]:
    """The staged values among the leaves of `tree`."""
    return [x for x in flatten(tree)[0] if isinstance(x, Staged)]


def _vjp_call(primals: tuple[Any, ...], cotangents: Any) -> Any:
    """(primals, cotangents) -> cotangents of the primals (the kernel behind vjp_fn)."""


def _jvp_call(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> Any:
    """(primals, tangents) -> (output, tangent of the output)."""


@functools.lru_cache(maxsize=256)
def ad_kernel(kind: str, kernel: Kernel, has_aux: bool) -> Kernel:
    """The Kernel behind vjp's vjp_fn (kind "vjp") or jvp and linearize (kind "jvp")."""
    if kind == "vjp":
        return Kernel(_vjp_call, tracer=VjpTracer(kernel, 0, has_aux), name=f"vjp_{kernel.__name__}")
    return Kernel(_jvp_call, tracer=JvpTracer(kernel, 0, has_aux), name=f"jvp_{kernel.__name__}")


def kernel_for(func: Any) -> Kernel:
    """`func` as a Kernel, the same one for repeated vjp/jvp/linearize calls."""
    return func if isinstance(func, Kernel) else _cached_kernel(func)


@functools.lru_cache(maxsize=256)
def _cached_kernel(func: Any) -> Kernel:
    return Kernel(func)


class _Pure:
    """The tracer of a kernel's forward pass under vjp/linearize: the kernel staged without
    writes into its arguments (they are a SideEffectError there, as under every transform)."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    def __call__(self, abstract_args: tuple[Any, ...], abstract_kwargs: dict[str, Any]) -> Any:
        return self.kernel.trace(abstract_args, abstract_kwargs)

    def __aotx_cache_key__(self) -> tuple[Any, ...]:
        return ("forward", self.kernel)


@functools.lru_cache(maxsize=256)
def forward_kernel(kernel: Kernel) -> Kernel:
    """`kernel` computing the primal output of vjp and linearize."""
    return Kernel(kernel.fn, tracer=_Pure(kernel), name=kernel.__name__,
                  static_argnums=kernel.static_argnums, fastmath=kernel.fastmath,
                  cache=kernel.cache, boundscheck=kernel.boundscheck)


# ---- output structures: trees of Slots --------------------------------------------------------

class Slot:
    """A placeholder leaf: which value of a derivative pass goes here (its `select` index)."""

    def __init__(self, index: int) -> None:
        self.index = index


def _is_slot(x: Any) -> bool:
    return isinstance(x, Slot)


def _is_dynamic(x: Any) -> bool:
    return isinstance(x, (TensorType, Weak))


def finish(structure: Any) -> tuple[list[int], PyTreeDef]:
    """The `select` list of a structure whose leaves are Slots, and its treedef."""
    slots, tree = flatten(structure, is_leaf=_is_slot)
    return [s.index for s in slots if isinstance(s, Slot)], tree


def shifted(structure: Any, offset: int) -> Any:
    """`structure` with every Slot moved by `offset`."""
    slots, tree = flatten(structure, is_leaf=_is_slot)
    return unflatten(tree, [Slot(s.index + offset) if isinstance(s, Slot) else s for s in slots])


def leaf_ranges(args: tuple[Any, ...]) -> list[range]:
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
                         f"positional argument{'' if n_args == 1 else 's'}")
    return norm, not isinstance(argnums, int)  # type: ignore[return-value]


def split_aux(program: pipeline.Program, has_aux: bool, who: str) -> tuple[list[int], Any]:
    """Indices of the differentiated results, and the output structure with Slot(i) for
    result i (a pair (output, aux) with has_aux)."""
    n = len(program.function.results)
    example = unflatten(program.out_tree, [Slot(i) for i in range(n)])
    if not has_aux:
        return list(range(n)), example
    if not isinstance(example, (tuple, list)) or len(example) != 2:
        raise TypeError(f"{who}(has_aux=True): the function must return a pair (output, aux)")
    main = flatten(example[0], is_leaf=_is_slot)[0]
    return [s.index for s in main if isinstance(s, Slot)], example


def _float_results(fn: Function) -> list[int]:
    return [i for i, t in enumerate(fn.out_types) if is_inexact(t.dtype)]


# ---- tracers ------------------------------------------------------------------------------------

@dataclass
class Traced:
    """The inner function traced for a derivative with respect to `argnums`."""

    program: pipeline.Program
    argnums: tuple[int, ...]
    tupled: bool                  # argnums was a tuple: one result per argnum
    ranges: list[range]           # flat leaves of each positional argument
    active: list[bool]            # per flat leaf: differentiated
    main: list[int]               # the differentiated results
    example: Any                  # the output structure, Slot(i) for result i

    @property
    def fn(self) -> Function:
        return self.program.function

    @property
    def active_leaves(self) -> list[int]:
        return [i for i, on in enumerate(self.active) if on]


class ADTracer:
    """Common argument handling of the grad/jacrev/jacfwd tracers."""

    who = "grad"

    def __init__(self, inner: Kernel, argnums: Any, has_aux: bool, chunk_size: int | None = None) -> None:
        check_chunk_size(self.who, chunk_size)
        self.inner, self.argnums, self.has_aux, self.chunk_size = inner, argnums, has_aux, chunk_size

    def __aotx_cache_key__(self) -> tuple[Any, ...]:
        return (self.who, self.inner, self.argnums, self.has_aux, self.chunk_size,
                getattr(self, "randomness", "error"))

    def prepare(self, a_args: tuple[Any, ...], a_kwargs: dict[str, Any]) -> Traced:
        program = self.inner.trace(a_args, a_kwargs)
        fn = program.function
        argnums, tupled = normalize_argnums(self.argnums, len(a_args), self.who)
        ranges = leaf_ranges(a_args)
        active = [False] * len(fn.in_types)
        for k in argnums:
            name = self.inner.arg_name(k)
            if not ranges[k]:
                raise TypeError(f"{self.who}: argument '{name}' (argnums={k}) is "
                                f"{type(a_args[k]).__name__} {a_args[k]!r:.40}, a compile-time constant "
                                f"with nothing to differentiate; pass a float or a float array")
            for i in ranges[k]:
                if not is_inexact(fn.in_types[i].dtype):
                    raise TypeError(f"{self.who}: argument '{name}' (argnums={k}) has dtype "
                                    f"{fn.in_types[i].dtype}; only floating-point and complex inputs "
                                    f"can be differentiated")
                active[i] = True
        main, example = split_aux(program, self.has_aux, self.who)
        return Traced(program, argnums, tupled, ranges, active, main, example)

    def per_argnum(self, a_args: tuple[Any, ...], t: Traced, slot_of: Callable[[int], Slot]) -> Any:
        """One value per argnum, each in the structure of its argument (Slots as leaves)."""
        per_arg = [arg_structure(a_args[k], [slot_of(i) for i in t.ranges[k]]) for k in t.argnums]
        return tuple(per_arg) if t.tupled else per_arg[0]


def arg_structure(arg: Any, leaves: list[Any]) -> Any:
    """`leaves` in the structure of the argument `arg`."""
    _, tree = flatten_static(arg, _is_dynamic)
    return unflatten(tree, leaves)


class GradTracer(ADTracer):
    """grad / grad_and_value: the vjp of a scalar output with cotangent 1."""

    def __init__(self, inner: Kernel, argnums: Any, has_aux: bool, with_value: bool) -> None:
        self.who = "grad_and_value" if with_value else "grad"
        super().__init__(inner, argnums, has_aux)

    def __call__(self, a_args: tuple[Any, ...], a_kwargs: dict[str, Any]) -> pipeline.Program:
        t = self.prepare(a_args, a_kwargs)
        fn, (o,) = t.fn, self._scalar_output(t)
        cotangent = {leaf: len(fn.results) + j for j, leaf in enumerate(t.active_leaves)}
        grads = self.per_argnum(a_args, t, lambda leaf: Slot(cotangent[leaf]))
        aux = t.example[1] if self.has_aux else None
        if self.who == "grad":
            structure = (grads, aux) if self.has_aux else grads
        else:                           # torch.func: (grad, (value, aux))
            structure = (grads, (Slot(o), aux) if self.has_aux else Slot(o))
        select, tree = finish(structure)
        seeds = [1.0 if i == o else 0.0 for i in _float_results(fn)]
        stages = [pipeline.Pass("vjp", functools.partial(vjp_function, active=t.active)),
                  pipeline.Pass(self.who, functools.partial(
                      grad_function, n_primals=len(fn.in_types), seeds=seeds, select=select,
                      name=f"{self.who}_{fn.name}"))]
        return pipeline.transform(t.program, stages, tree)

    def _scalar_output(self, t: Traced) -> list[int]:
        types = t.fn.out_types
        if len(t.main) == 1 and is_complex(types[t.main[0]].dtype):
            raise TypeError(f"{self.who} requires real-valued outputs (the function returned "
                            f"{types[t.main[0]]}); take .real, abs(...) or a real loss of it "
                            f"(docs/complex.md)")
        if len(t.main) != 1 or not is_float(types[t.main[0]].dtype) or any(d != 1 for d in types[t.main[0]].shape):
            got = ", ".join(str(types[i]) for i in t.main)
            raise TypeError(f"{self.who}: the function must return one floating-point scalar "
                            f"(use jacrev for other outputs), got {got or 'nothing'}")
        return t.main


class JacTracer(ADTracer):
    """jacrev (vmap of vjp over the output basis) and jacfwd (vmap of jvp over the input basis)."""

    def __init__(self, inner: Kernel, argnums: Any, has_aux: bool, chunk_size: int | None, mode: str,
                 randomness: str = "error") -> None:
        self.who = "jacrev" if mode == "rev" else "jacfwd"
        self.randomness = randomness
        super().__init__(inner, argnums, has_aux, chunk_size)

    def __call__(self, a_args: tuple[Any, ...], a_kwargs: dict[str, Any]) -> pipeline.Program:
        t = self.prepare(a_args, a_kwargs)
        self._check_dtypes(t)
        select, tree = finish(self._structure(a_args, t))
        options: dict[str, Any] = dict(active=t.active, rows=t.main, chunk=self.chunk_size, select=select,
                       name=f"{self.who}_{t.fn.name}")
        if self.who == "jacfwd":
            stages = [pipeline.Pass("jacfwd", functools.partial(jacfwd_function, randomness=self.randomness,
                                                                **options))]
        else:
            stages = [pipeline.Pass("vjp", functools.partial(vjp_function, active=t.active)),
                      pipeline.Pass("jacrev", functools.partial(jacrev_function, primal=t.fn, **options))]
        return pipeline.transform(t.program, stages, tree)

    def _check_dtypes(self, t: Traced) -> None:
        """A Jacobian is a real basis pushed forward (jacfwd) or pulled back (jacrev), as in
        JAX: jacfwd of real inputs (real or complex outputs), jacrev of real outputs (real or
        complex inputs: each row is the gradient of one output, in grad's convention)."""
        outs = [t.fn.out_types[i].dtype for i in t.main]
        for i, dt in zip(t.main, outs):
            if not is_inexact(dt):
                raise TypeError(f"{self.who}: output {i} has dtype {dt}; only floating-point and "
                                f"complex outputs have a Jacobian")
        complex_in = any(is_complex(ty.dtype) for ty, on in zip(t.fn.in_types, t.active) if on)
        complex_out = any(is_complex(dt) for dt in outs)
        if self.who == "jacfwd" and complex_in:
            raise TypeError("jacfwd (and hessian, jacfwd of jacrev): the inputs are complex: a complex function of a complex "
                            "variable has no Jacobian matrix unless it is holomorphic. Use jacrev "
                            "for a real-valued function (rows are gradients, as grad), or jvp with "
                            "the tangent 1 for the derivative of a holomorphic function "
                            "(docs/complex.md)")
        if self.who == "jacrev" and complex_out and complex_in:
            raise TypeError("jacrev: the outputs and the inputs are complex: such a function has "
                            "no Jacobian matrix unless it is holomorphic. Use jvp with the tangent "
                            "1 for the derivative of a holomorphic function, or jacrev of a real "
                            "loss of the output (docs/complex.md)")
        if self.who == "jacrev" and complex_out:
            raise TypeError("jacrev: the outputs are complex; use jacfwd for a function of real "
                            "inputs with complex outputs (docs/complex.md)")

    def _structure(self, a_args: tuple[Any, ...], t: Traced) -> Any:
        """Per differentiated result, its Jacobian per argnum; the passes give J[o, leaf] for
        o in main and each active leaf, in that order, then the results (for aux)."""
        leaves = t.active_leaves

        def entry(o: int) -> Callable[[int], Slot]:
            return lambda leaf: Slot(t.main.index(o) * len(leaves) + leaves.index(leaf))
        per_out = [self.per_argnum(a_args, t, entry(o)) for o in t.main]
        main_example = t.example[0] if self.has_aux else t.example
        if len(t.main) != 1 or isinstance(main_example, (tuple, list, dict)):
            out = unflatten(flatten(main_example, is_leaf=_is_slot)[1], per_out)
        else:
            out = per_out[0]
        if not self.has_aux:
            return out
        return (out, shifted(t.example[1], len(t.main) * len(leaves)))


class VjpTracer(ADTracer):
    """Traces ``(primals, cotangents) -> input cotangents`` for vjp's vjp_fn."""

    who = "vjp"

    def __call__(self, a_args: tuple[Any, ...], a_kwargs: dict[str, Any]) -> pipeline.Program:
        primals, cotangents = a_args
        program = self.inner.trace(tuple(primals), a_kwargs)
        fn = program.function
        n = len(flatten_static(tuple(primals), _is_dynamic)[0])   # then keyword leaves: constants
        active = [is_inexact(t.dtype) and i < n for i, t in enumerate(fn.in_types)]
        main, _ = split_aux(program, self.has_aux, self.who)
        ct_types = self._cotangent_types(fn, main, cotangents)
        given = {o: j for j, o in enumerate(main)}
        counter = iter(range(sum(active)))         # vjp_fn_function gives the active leaves in order
        structure = tuple(arg_structure(primals[k], [Slot(next(counter)) if active[i] else None for i in r])
                          for k, r in enumerate(leaf_ranges(tuple(primals))))
        _, tree = finish(structure)
        stages = [pipeline.Pass("vjp", functools.partial(vjp_function, active=active)),
                  pipeline.Pass("vjp_fn", functools.partial(
                      vjp_fn_function, n_primals=n, n_results=len(fn.results),
                      feeds=[given.get(i) for i in _float_results(fn)], ct_types=ct_types,
                      name=f"vjp_{fn.name}", n_consts=len(fn.in_types) - n))]
        return pipeline.transform(program, stages, tree)

    def _cotangent_types(self, fn: Function, main: list[int], cotangents: Any) -> list[TensorType]:
        ct_leaves = flatten_static(cotangents, _is_dynamic)[0]
        if len(ct_leaves) != len(main):
            raise ValueError(f"vjp_fn: expected cotangents with the structure of the output "
                             f"({len(main)} arrays), got {len(ct_leaves)}")
        for i, t in zip(main, ct_leaves):
            if isinstance(t, TensorType) and t.shape != fn.out_types[i].shape:
                raise ValueError(f"vjp_fn: cotangent of shape {t.shape} for an output of shape "
                                 f"{fn.out_types[i].shape}")
        return [t if isinstance(t, TensorType) else t.type for t in ct_leaves]


class JvpTracer(ADTracer):
    """Traces ``(primals, tangents) -> (output, tangent of the output[, aux])``."""

    who = "jvp"

    def __call__(self, a_args: tuple[Any, ...], a_kwargs: dict[str, Any]) -> pipeline.Program:
        primals, tangents = a_args
        program = self.inner.trace(tuple(primals), a_kwargs)
        fn = program.function
        n = len(flatten_static(tuple(primals), _is_dynamic)[0])   # then keyword leaves: constants
        t_types = self._tangent_types(fn, primals, tangents, n)
        active = [is_inexact(t.dtype) and i < n for i, t in enumerate(fn.in_types)]
        _, example = split_aux(program, self.has_aux, self.who)
        main_example = example[0] if self.has_aux else example
        # jvp_fn_function gives the results, then a tangent per result
        structure = (main_example, shifted(main_example, len(fn.results)))
        select, tree = finish(structure + ((example[1],) if self.has_aux else ()))
        stages = [pipeline.Pass("jvp", functools.partial(jvp_function, active=active)),
                  pipeline.Pass("jvp_fn", functools.partial(
                      jvp_fn_function, n_primals=n, n_results=len(fn.results), active=active[:n],
                      t_types=t_types, select=select, name=f"jvp_{fn.name}",
                      n_consts=len(fn.in_types) - n))]
        return pipeline.transform(program, stages, tree)

    def _tangent_types(self, fn: Function, primals: Any, tangents: Any, n: int) -> list[TensorType]:
        t_leaves, t_tree = flatten_static(tuple(tangents), _is_dynamic)
        p_tree = flatten_static(tuple(primals), _is_dynamic)[1]
        if t_tree != p_tree or len(t_leaves) != n:
            raise ValueError("jvp: tangents must have the same structure as primals")
        types = [t if isinstance(t, TensorType) else t.type for t in t_leaves]
        for p, tt in zip(fn.in_types[:n], types):
            if tt.shape != p.shape:
                raise ValueError(f"jvp: a tangent of shape {tt.shape} for a primal of shape {p.shape}")
        return types
