"""Custom functions (``compiler.Function``): ``custom_function`` and ``host_call``.

``custom_function(*arrays)`` is a CONTROL op with one region, the forward:
either the user's compiled ``forward`` or a single ``host_call``. Its params:

* ``fn``: the Function subclass, whose staticmethods are its transform rules;
* ``template``: the apply() arguments, with an ``ArraySlot`` where an operand goes
  and the static (non-array) arguments as themselves;
* ``out_tree``: the structure of forward's output (the results are its leaves);
* ``base``: (operand types, result types) of the op before any batching;
* ``layers``: the :class:`BatchLayer` s applied by ``generate_vmap_rule = True``
  (innermost first); the AD rules stage backward/jvp at the ``base`` types and
  batch them through the same layers.

The rules never derive anything from the region: vmap runs the Function's
``vmap`` staticmethod (or batches the region when ``generate_vmap_rule``),
jvp runs ``setup_context`` + ``jvp``, vjp runs ``setup_context`` + ``backward``.
Each is staged by the frontend and inlined here, so it is transformable again.

``host_call(*arrays)`` (OPAQUE, effect ``host``) calls ``fn.forward`` in Python
when the kernel runs (see compiler/function/trampoline.py); kernels containing it
are neither cacheable nor buildable ahead of time.
"""
from __future__ import annotations

import types
from typing import Any, Sequence

import numpy as np

from compiler.errors import (CompileError, DynamicShapeError, OutParameterError, SideEffectError,
                             UnsupportedError)
from compiler.frontend import stage
from compiler.frontend.pytrees import flatten, unflatten
from compiler.frontend.source import SOURCE_READS
from compiler.frontend.values import Weak
from compiler.function.context import (ArraySlot, FunctionCtx, ShapeDtype, VmapInfo, _Sink,
                                       _backward_program, _jvp_program, _vmap_program, fill)
from compiler.function.trampoline import call_forward, lower_host_call
from compiler.ir.builder import Builder, new_block
from compiler.ir.core import Value
from compiler.ir.params import BatchLayer
from compiler.ir.primitive import CONTROL, OPAQUE, declare, define
from compiler.ir.types import BOOL, F64, I64, TensorType, canonical_dtype, is_float
from compiler.primitives import ad, ops
from compiler.primitives.base import check
from compiler.primitives.batching import batched_at, inline_block
from compiler.transforms.vmap import CURRENT_RANDOMNESS, batched_type, clone_block, vmap_block

Types = tuple[TensorType, ...]


# ---- custom_function ------------------------------------------------------------------------

def _custom_rule(in_types: Types, params: dict[str, Any], regions: tuple[Any, ...]) -> Types:
    check(len(regions) == 1, "custom_function: needs one region (the forward)")
    (region,) = regions
    got = [a.type for a in region.args]
    check(got == list(in_types), f"custom_function: region arguments {got} do not match the "
                                 f"operands {list(in_types)}")
    return tuple(r.type for r in region.results)


def _interpret_custom(interp: Any, op: Any, args: list[np.ndarray]) -> list[np.ndarray]:
    return interp.run_block(op.regions[0], args)


def _lower_custom(cg: Any, op: Any) -> None:
    args = [cg.buffers[v] for v in op.operands]
    outs = [cg.buffers[r] for r in op.results]
    cg._cache.append({})
    cg.lower_block(op.regions[0], args, outs)
    cg._cache.pop()


custom_function = define(
    declare("custom_function", CONTROL), shape_rule=_custom_rule, lower=_lower_custom,
    interpret=_interpret_custom,
    doc="a compiler.Function: runs its forward region; transform rules come from the Function")


# ---- host_call ------------------------------------------------------------------------------

def _host_rule(in_types: Types, params: dict[str, Any]) -> Types:
    return tuple(params["out_types"])


def _host_ref(*arrays: np.ndarray, fn: Any, template: tuple, out_tree: Any, out_types: Types) -> Any:
    return call_forward(fn, template, out_tree, list(arrays),
                        [(t.dtype, tuple(t.shape) if t.is_static else None) for t in out_types])


def _lower_host(cg: Any, op: Any, outs: list[Any]) -> None:
    lower_host_call(cg, op, outs)


def _vmap_host(b: Any, op: Any, args: list[Any], bdims: list[Any], size: Any) -> tuple:
    name = op.params["fn"].__name__
    raise UnsupportedError(f"vmap of {name}: its forward runs as a host callback (Python code), which "
                           "cannot be batched automatically", op.loc,
                           f"give {name} a vmap staticmethod that calls {name}.apply once on the "
                           "whole batch")


host_call = define(
    declare("host_call", OPAQUE), shape_rule=_host_rule, numpy_ref=_host_ref, lower=_lower_host,
    vmap_rule=_vmap_host, streams_operands=False, effects=frozenset({"host"}),
    doc="call fn.forward in Python on NumPy views of the operands (a host callback)")


def has_host_call(block: Any) -> bool:
    return any(op.prim is host_call for op in block.walk())


# ---- staging apply() ------------------------------------------------------------------------

def _abstract(t: TensorType, slot: Any) -> Any:
    if getattr(slot, "weak", False) and t.shape == () and t.dtype in (F64, I64, BOOL):
        return Weak(t)
    return t


def _not_in_subset() -> tuple[type[BaseException], ...]:
    return (UnsupportedError, SideEffectError, DynamicShapeError, OutParameterError)


def emit_custom_function(b: Any, cls: Any, template: tuple, values: Sequence[Any]) -> tuple[list[Any], Any]:
    """Emit ``cls.apply`` on `values` (the array arguments, in template order)."""
    in_types = [v.type for v in values]
    slots = [t for t in template if isinstance(t, ArraySlot)]
    region = out_tree = None
    if cls.host_callback is not True:
        try:
            prog = stage(cls.forward, fill(template, [_abstract(t, s) for t, s in zip(in_types, slots)]),
                         {}, name=f"{cls.__name__}_forward")
            region, out_tree = prog.function.body, prog.out_tree
        except _not_in_subset():
            if cls.host_callback is False:
                raise
        if region is not None and any(op.prim is ops.rng_key_p for op in region.walk()):
            # its own staging would start from the call's key too: the same numbers as the caller's
            raise UnsupportedError(f"{cls.__name__}.forward draws random numbers without a key, "
                                   "which a compiler.Function does not support",
                                   b.loc, "pass a key as an argument of apply (random.split(...) "
                                   "in the caller) and draw with it: random.normal(key, shape)")
    if region is None:
        region, out_tree = _host_region(b, cls, template, in_types)
        _not_cacheable(cls)
    params = {"fn": cls, "template": template, "out_tree": out_tree,
              "base": (tuple(in_types), tuple(r.type for r in region.results)), "layers": ()}
    return list(b.emit(custom_function, list(values), params, [region])), out_tree


def _not_cacheable(cls: Any) -> None:
    """Safety net for the on-disk cache (compiler/cache.py): a kernel with a host callback
    refers to this process's callback registry, so it must never be stored. The cache
    refuses kernels whose staging read a function it cannot name; record one."""
    reads = SOURCE_READS.get()
    if reads is not None:
        marker = types.FunctionType(_marker_code, {}, "host_callback")
        marker.__qualname__ = f"<host callback {cls.__qualname__}.forward>"
        marker.__module__ = "aotx.host_callback"
        reads.append(marker)


def _marker() -> None:
    """Stands for a host callback in the cache's list of staged functions."""


_marker_code = _marker.__code__


def _host_region(b: Any, cls: Any, template: tuple, in_types: list[TensorType]) -> tuple[Any, Any]:
    out_types, out_tree = host_output_types(cls, template, in_types, b.loc)
    region = new_block(in_types)
    rb = Builder(region, b.loc)
    params = {"fn": cls, "template": template, "out_tree": out_tree, "out_types": tuple(out_types)}
    region.results = list(rb.emit(host_call, region.args, params))
    return region, out_tree


def host_output_types(cls: Any, template: tuple, in_types: list[TensorType], loc: Any) -> tuple[list, Any]:
    """Result types of a host-callback forward: from ``cls.abstract`` or from running
    ``cls.forward`` on zeros of the input shapes (at compile time)."""
    name = cls.__name__
    abstract = getattr(cls, "abstract", None)
    if abstract is not None:
        what = f"{name}.abstract"
        try:
            out = abstract(*fill(template, [ShapeDtype(tuple(t.shape), t.dtype) for t in in_types]))
        except Exception as e:  # noqa: BLE001 - the user's method failed: report it at the apply()
            raise CompileError(f"{what} raised {type(e).__name__}: {e}", loc) from e
    else:
        what = f"{name}.forward (run once on zeros at compile time to learn its output shapes)"
        if not all(t.is_static for t in in_types):
            raise CompileError(f"{name}.forward runs as a host callback and its inputs have symbolic "
                               f"sizes ({', '.join(map(str, in_types))}), so its output shapes cannot "
                               "be found by running it", loc,
                               f"give {name} an abstract(*args) staticmethod returning objects with "
                               ".shape and .dtype (compiler.function.ShapeDtype)")
        zeros = [np.zeros(t.static_shape, t.dtype) for t in in_types]
        for z in zeros:
            z.flags.writeable = False          # as the kernel's views are
        try:
            out = cls.forward(*fill(template, zeros))
        except Exception as e:  # noqa: BLE001
            raise CompileError(f"{what} raised {type(e).__name__}: {e}", loc,
                               f"give {name} an abstract(*args) staticmethod returning the output "
                               "shapes and dtypes") from e
    leaves, tree = flatten(out)
    types = []
    for leaf in leaves:
        shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
        if shape is None or dtype is None:
            arr = np.asarray(leaf)
            shape, dtype = arr.shape, arr.dtype
        try:
            dt = canonical_dtype(np.dtype(dtype))
        except (TypeError, ValueError) as e:
            raise CompileError(f"{what} gives an output of dtype {dtype}: {e}", loc) from None
        types.append(TensorType(dt, tuple(shape)))
    return types, tree


# ---- transform rules ------------------------------------------------------------------------

def _name(op: Any) -> str:
    return op.params["fn"].__name__


def _missing(op: Any, method: str, needed_by: str, hint: str) -> Exception:
    name = _name(op)
    return UnsupportedError(f"{needed_by} of {name} needs a `{method}` staticmethod, which {name} "
                            "does not define", op.loc, hint)


def _arg_dims(template: tuple, bdims: Sequence[Any]) -> tuple:
    it = iter(bdims)
    return tuple(next(it) if isinstance(t, ArraySlot) else None for t in template)


def _vmap_custom(b: Any, op: Any, args: list[Any], bdims: list[Any], size: Any) -> tuple:
    cls = op.params["fn"]
    user_vmap = getattr(cls, "vmap", None)
    if user_vmap is not None and cls.generate_vmap_rule:
        raise UnsupportedError(f"vmap of {cls.__name__}: it has both generate_vmap_rule = True and a "
                               "vmap staticmethod", op.loc,
                               "set generate_vmap_rule = False or delete the vmap staticmethod")
    if user_vmap is not None:
        return _vmap_staticmethod(b, op, args, bdims, size, user_vmap)
    if not cls.generate_vmap_rule:
        raise _missing(op, "vmap", "vmap", "define @staticmethod vmap(info, in_dims, *args) returning "
                       "(output, out_dims), or set generate_vmap_rule = True (forward, backward and "
                       "jvp must then be compilable)")
    if has_host_call(op.regions[0]):
        raise UnsupportedError(f"vmap of {cls.__name__}: generate_vmap_rule = True needs a compilable "
                               f"forward, but {cls.__name__}.forward runs as a host callback "
                               "(it calls code outside the supported subset)", op.loc,
                               f"define a vmap staticmethod for {cls.__name__} that calls "
                               f"{cls.__name__}.apply once on the whole batch")
    n = len(op.results)
    region, _ = vmap_block(op.regions[0], bdims, size, [0] * n)
    layer = BatchLayer(size, tuple(bdims), (0,) * n)
    params = {**op.params, "layers": tuple(op.params["layers"]) + (layer,)}
    return list(b.emit(custom_function, args, params, [region])), [0] * n


def _vmap_staticmethod(b: Any, op: Any, args: list[Any], bdims: list[Any], size: Any,
                       user_vmap: Any) -> tuple:
    cls, template = op.params["fn"], op.params["template"]
    slots = [t for t in template if isinstance(t, ArraySlot)]
    sink = _Sink()
    filled = fill(template, [_abstract(a.type, s) for a, s in zip(args, slots)])
    prog = stage(_vmap_program, (user_vmap, sink, VmapInfo(size, _vmap_randomness()), _arg_dims(template, bdims), *filled),
                 {}, name=f"{cls.__name__}_vmap")
    with b.at(op.loc):
        outs = inline_block(b, prog.function.body, args)
    output = unflatten(prog.out_tree, outs)
    dims = _out_dims(sink.out_dims, output, op, cls)
    if len(outs) != len(op.results):
        raise CompileError(f"{cls.__name__}.vmap returned {len(outs)} arrays, but "
                           f"{cls.__name__}.forward returns {len(op.results)}", op.loc)
    norm = []
    for i, (v, d, r) in enumerate(zip(outs, dims, op.results)):
        if d is not None:
            if not -v.type.ndim <= d < v.type.ndim:
                raise CompileError(f"{cls.__name__}.vmap: out_dim {d} is out of range for output {i} "
                                   f"of type {v.type}", op.loc)
            d %= v.type.ndim
        want = batched_type(r.type, d, size)
        if v.type != want:
            raise CompileError(f"{cls.__name__}.vmap: output {i} has type {v.type}, but with out_dim "
                               f"{d} and batch size {size} it must be {want}", op.loc)
        norm.append(d)
    return outs, norm


def _out_dims(spec: Any, output: Any, op: Any, cls: Any) -> list[Any]:

    def count(x: Any) -> int:
        if isinstance(x, Value):
            return 1
        if isinstance(x, (tuple, list)):
            return sum(count(e) for e in x)
        if isinstance(x, dict):
            return sum(count(e) for e in x.values())
        return 0

    def walk(s: Any, x: Any) -> list[Any]:
        if s is None or (isinstance(s, int) and not isinstance(s, bool)):
            return [s] * count(x)
        if isinstance(s, (tuple, list)) and isinstance(x, (tuple, list)) and len(s) == len(x):
            return [d for a, e in zip(s, x) for d in walk(a, e)]
        if isinstance(s, dict) and isinstance(x, dict) and set(s) == set(x):
            return [d for k in sorted(x, key=repr) for d in walk(s[k], x[k])]
        raise CompileError(f"{cls.__name__}.vmap: out_dims={spec!r} does not match the structure of "
                           "its output", op.loc, "give one int or None per output (or one for all)")
    return walk(spec, output)


def _needs_grad(template: tuple, in_types: Sequence[TensorType]) -> tuple[bool, ...]:
    it = iter(in_types)
    return tuple(isinstance(t, ArraySlot) and is_float(next(it).dtype) for t in template)


def _stage_rule(op: Any, program: Any, method: Any, mode: str, extra: tuple) -> tuple[Any, Any]:
    """Stage ``program(setup_context, method, ctx, inputs, output, *extra)`` at the base types."""
    cls, template = op.params["fn"], op.params["template"]
    in_types, out_types = op.params["base"]
    slots = [t for t in template if isinstance(t, ArraySlot)]
    ctx = FunctionCtx(mode, _needs_grad(template, in_types))
    inputs = fill(template, [_abstract(t, s) for t, s in zip(in_types, slots)])
    output = unflatten(op.params["out_tree"], list(out_types))
    prog = stage(program, (cls.setup_context, method, ctx, inputs, output, *extra), {},
                 name=f"{cls.__name__}_{mode}")
    return prog, ctx


def _per_entry(result: Any, n: int, single: bool, what: str, op: Any) -> list[Any]:
    """A rule's return value as one entry (Value or None) per input/output."""
    if single and not isinstance(result, (tuple, list)):
        return [result]
    if not isinstance(result, (tuple, list)):
        raise CompileError(f"{what} must return a tuple with {n} entries, got one value", op.loc)
    entries = flatten(result, is_leaf=lambda x: x is None or isinstance(x, Value))[0]
    if len(entries) != n:
        raise CompileError(f"{what} returned {len(entries)} values, expected {n}", op.loc,
                           "return one entry per input for backward (None for non-arrays), one per "
                           "output for jvp")
    return entries


def _conform(b: Any, v: Any, t: TensorType, what: str, op: Any) -> Any:
    """`v` with exactly type `t` (a 0-d value is broadcast; float dtypes are cast)."""
    if v.type.shape != t.shape:
        if v.type.ndim != 0:
            raise CompileError(f"{what} has shape {tuple(v.type.shape)}, expected "
                               f"{tuple(t.shape)}", op.loc)
        if v.dtype != t.dtype:
            v = ops.convert(b, v, t.dtype)
        return ops.broadcast_in_dim(b, v, t.shape, ())
    if v.dtype != t.dtype:
        v = ops.convert(b, v, t.dtype)
    return v


def _jvp_custom(b: Any, op: Any, primals: list[Any], tangents: list[Any]) -> tuple:
    cls, template = op.params["fn"], op.params["template"]
    jvp_fn = getattr(cls, "jvp", None)
    if jvp_fn is None:
        raise _missing(op, "jvp", "forward-mode differentiation (jvp, jacfwd, hessian)",
                       "define @staticmethod jvp(ctx, *tangents) returning one tangent per output "
                       "(save what it needs in setup_context with ctx.save_for_forward)")
    results = list(b.emit(op.prim, primals, op.params, [clone_block(r) for r in op.regions]))
    in_types, out_types = op.params["base"]
    active = [is_float(t.dtype) for t in in_types]
    it = iter(zip(in_types, active))
    t_abstract = []
    for slot in template:
        if isinstance(slot, ArraySlot):
            t, on = next(it)
            t_abstract.append(t if on else None)
        else:
            t_abstract.append(None)
    prog, ctx = _stage_rule(op, _jvp_program, jvp_fn, "jvp", (tuple(t_abstract),))
    block = prog.function.body
    n_out = len(out_types)
    entries = _per_entry(unflatten(prog.out_tree, list(block.results)), n_out,
                         op.params["out_tree"].kind == "leaf", f"{cls.__name__}.jvp", op)
    marked = getattr(ctx, "_marked", (False,) * n_out)
    bb = Builder(block, op.loc)
    new_results, which = [], []
    for j, (v, t) in enumerate(zip(entries, out_types)):
        if v is None or marked[j] or not is_float(t.dtype):
            continue
        new_results.append(_conform(bb, v, t, f"the tangent {cls.__name__}.jvp returns for output {j}", op))
        which.append(j)
    block.results = new_results
    for layer in op.params["layers"]:
        in_b = list(layer.in_bdims)
        bd = in_b + list(layer.out_bdims) + [d for d, on in zip(in_b, active) if on]
        block, _ = vmap_block(block, bd, layer.size, [layer.out_bdims[j] for j in which])
    ts = [ad.instantiate(b, t, p) for t, p, on in zip(tangents, primals, active) if on]
    with b.at(op.loc):
        outs = inline_block(b, block, [*primals, *results, *ts])
    out_t: list[Any] = [None] * len(op.results)
    for j, v in zip(which, outs):
        out_t[j] = v
    return results, out_t


def _vjp_custom(b: Any, op: Any, primals: list[Any], outs: list[Any], cts: list[Any]) -> list[Any]:
    cls, template = op.params["fn"], op.params["template"]
    backward = getattr(cls, "backward", None)
    if backward is None:
        raise _missing(op, "backward", "reverse-mode differentiation (grad, vjp, jacrev, hessian)",
                       "define @staticmethod backward(ctx, *grad_outputs) returning one gradient per "
                       "input (None for non-arrays)")
    in_types, out_types = op.params["base"]
    zero_mask = tuple(c is None for c in cts)
    prog, _ = _stage_rule(op, _backward_program, backward, "backward", (tuple(out_types), zero_mask))
    block = prog.function.body
    entries = _per_entry(unflatten(prog.out_tree, list(block.results)), len(template), len(template) == 1,
                         f"{cls.__name__}.backward", op)
    bb = Builder(block, op.loc)
    new_results, which = [], []
    k = 0
    for i, (slot, v) in enumerate(zip(template, entries)):
        if not isinstance(slot, ArraySlot):
            if v is not None:
                raise CompileError(f"{cls.__name__}.backward returned a gradient for input {i}, which "
                                   f"is not an array ({type(slot).__name__})", op.loc,
                                   "return None for non-array inputs")
            continue
        t = in_types[k]
        if v is not None and is_float(t.dtype):
            new_results.append(_conform(bb, v, t, f"the gradient {cls.__name__}.backward returns for "
                                                  f"input {i}", op))
            which.append(k)
        k += 1
    block.results = new_results
    for layer in op.params["layers"]:
        in_b = list(layer.in_bdims)
        block, rdims = vmap_block(block, in_b + list(layer.out_bdims) * 2, layer.size)
        lb = Builder(block, op.loc)
        fixed = []
        for v, d, idx in zip(block.results, rdims, which):
            want = in_b[idx]
            if want is None and d is not None:       # a shared input: sum over the batch
                v = ops.reduce_sum(lb, v, (d,))
            elif want is not None:
                v = batched_at(lb, v, d, want, layer.size)
            fixed.append(v)
        block.results = fixed
    grads = [ad.instantiate(b, c, o) for c, o in zip(cts, outs)]
    with b.at(op.loc):
        res = inline_block(b, block, [*primals, *outs, *grads])
    in_cts: list[Any] = [None] * len(primals)
    for k, v in zip(which, res):
        in_cts[k] = v
    return in_cts



define(custom_function, vmap_rule=_vmap_custom, jvp_rule=_jvp_custom, vjp_rule=_vjp_custom)


def _vmap_randomness() -> str:
    return CURRENT_RANDOMNESS.get()
