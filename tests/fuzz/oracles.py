"""Every level of a program's transform stack against an independent oracle.

Level 0 is ``k0`` (``jit(f)`` or the signature kernel), level l is the stack's
l-th layer applied to level l-1. Each level is called and compared with:

* **NumPy** (level 0): ``f`` run uncompiled, in environment A and B;
* **the IR interpreter** (every level): the level's IR run by each primitive's
  ``numpy_ref``;
* **a Python loop** (``vmap``): the inner level called on each batch element, stacked;
* **finite differences** (``grad``, ``jacrev``, ``jacfwd``): the Jacobian of the
  inner level, element by element, with a step at which the estimate is stable
  (``tests.fd.stable``; elements where none is are not judged: kinks, jumps);
* **equivalent compositions**: ``jacrev == jacfwd``; at the top, ``jvp`` against
  finite differences and ``vjp`` by the dot-product test ``<ct, J t> == <J^T ct, t>``.

Inner levels are themselves checked before they serve as an oracle's function.

Tolerances. Integers and bools are compared exactly, nan and infinity positions
must agree. The tolerance of a float result against NumPy is estimated from the
program, a first-order estimate of how far rounding at each step can move each
output: for each step in turn (each input, each statement's value), the program is
run twice with that step's value multiplied by ``1 +- 16 eps`` elementwise (random
signs), and the deviations of the steps are added up. An element may differ by 4
times that sum plus 64 eps of its magnitude (and of the largest output: absolute
error near zero). An integer or bool element that
changes under the perturbation (a comparison or a cast at a rounding boundary)
is not judged. Compiled against compiled (vmap loop of an inner kernel, jacrev
against jacfwd) and against the interpreter of a transformed level use a fixed
bound of 1e4 eps of the output's scale. "Big" programs (sizes past the vector width,
float64 only) widen the floor to 4096 eps: a sum of up to 2048 elements may be
accumulated naively or pairwise. Derivatives against finite differences:
relative 1e-5 and 1e-6 of the scale of the Jacobian (float64 programs; 5e-3 when
the program computes in float32 anywhere, with a larger step).
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
import tempfile
import traceback
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from compiler import errors, grad, jacfwd, jacrev, jvp, vjp
from tests import fd
from tests.fuzz.generator import Program, assemble
from tests.ops.internal import stage_batched

#: documented refusals: the program uses something a transform cannot do (not a failure)
REFUSALS = (errors.DataDependentControlFlowError, errors.DataDependentOperationError, errors.DynamicShapeError,
            errors.UnsupportedError, errors.SideEffectError, errors.RandomnessError, errors.OutParameterError)

_MODULE_DIR = os.path.join(os.environ.get("AOTX_FUZZ_DIR") or tempfile.gettempdir(), f"aotx-fuzz-{os.getuid()}")
_modules: dict[str, Any] = {}


class Failure(Exception):
    """A program that aotx gets wrong: kind (mismatch, internal, false-refusal, crash), the oracle,
    the stack level and a message."""

    def __init__(self, kind: str, oracle: str, level: int, message: str, exc_type: str = "") -> None:
        super().__init__(f"[{kind}] {oracle} at level {level}: {message}")
        self.kind, self.oracle, self.level, self.message, self.exc_type = kind, oracle, level, message, exc_type

    def signature(self) -> tuple:
        return (self.kind, self.oracle, self.exc_type)

    def to_json(self) -> dict:
        return {"kind": self.kind, "oracle": self.oracle, "level": self.level, "message": self.message,
                "exc_type": self.exc_type}


class Refused(Exception):
    """A documented refusal (see REFUSALS)."""


@dataclass
class Outcome:
    status: str                  # ok | refused | fail
    detail: str = ""
    failure: Failure | None = None


# ---- loading -----------------------------------------------------------------------------------------

def load(prog: Program, source: str | None = None) -> Any:
    """Write the program's source to a module file and import it (the compiler reads the source)."""
    os.makedirs(_MODULE_DIR, exist_ok=True)
    text = source if source is not None else prog.source()
    # the file and module names depend on the text only, so that the on-disk kernel cache
    # recognises a program it compiled in an earlier run (and this process, one it loaded)
    name = f"fuzz_{prog.seed}_{hashlib.sha1(text.encode()).hexdigest()[:12]}"
    if name in _modules:
        return _modules[name]
    path = os.path.join(_MODULE_DIR, name + ".py")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _modules[name] = module
    return module


def perturbed(prog: Program) -> Callable[..., Any]:
    ns: dict[str, Any] = {"np": np}
    exec(prog.function_source("f_p", perturb=True), ns)
    return ns["f_p"]


def guarded(level: int, oracle: str, thunk: Callable[[], Any]) -> Any:
    """Run compiled code; a documented refusal raises Refused, anything else unexpected a Failure."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return thunk()
    except REFUSALS as e:
        raise Refused(f"{type(e).__name__}: {e.message}") from None
    except errors.CompileError as e:
        raise Failure("false-refusal", oracle, level, f"{type(e).__name__}: {e}", type(e).__name__) from None
    except Failure:
        raise
    except Exception as e:
        tb = "".join(traceback.format_exception(e)[-6:])
        raise Failure("internal", oracle, level, f"{type(e).__name__}: {e}\n{tb}", type(e).__name__) from None


# ---- comparison ----------------------------------------------------------------------------------------

def leaves(tree: Any) -> list[Any]:
    if isinstance(tree, (tuple, list)):
        return [x for t in tree for x in leaves(t)]
    return [tree]


def structure(tree: Any) -> Any:
    if isinstance(tree, (tuple, list)):
        return tuple(structure(t) for t in tree)
    return "*"


def eps_of(dtype: np.dtype) -> float:
    return float(np.finfo(dtype).eps)


def compare(level: int, oracle: str, got: Any, expected: Any, tol: list[np.ndarray | None] | None = None,
            skip: list[np.ndarray | None] | None = None, rel: float | None = None) -> None:
    """got == expected leaf by leaf. `tol`: per-leaf elementwise allowed error (floats); `skip`:
    per-leaf masks of elements not judged; `rel`: a fixed bound (relative to the leaf's scale)."""
    if structure(got) != structure(expected):
        raise Failure("mismatch", oracle, level, f"structure {structure(got)}, expected {structure(expected)}")
    for k, (g, e) in enumerate(zip(leaves(got), leaves(expected))):
        g, e = np.asarray(g), np.asarray(e)
        where = f"result leaf {k}: " if len(leaves(expected)) > 1 else ""
        if g.dtype != e.dtype:
            raise Failure("mismatch", oracle, level, f"{where}dtype {g.dtype}, expected {e.dtype}")
        if g.shape != e.shape:
            raise Failure("mismatch", oracle, level, f"{where}shape {g.shape}, expected {e.shape}")
        mask = np.ones(e.shape, bool)
        if skip is not None and skip[k] is not None:
            mask &= ~skip[k]
        if e.dtype.kind != "f":
            bad = mask & (g != e)
        else:
            g64, e64 = g.astype(np.float64), e.astype(np.float64)
            nan_bad = np.isnan(g64) != np.isnan(e64)
            inf_bad = np.isinf(e64) & (g64 != e64) | np.isinf(g64) & (g64 != e64)
            fin = np.isfinite(e64) & np.isfinite(g64)
            scale = max(1.0, float(np.max(np.abs(e64[np.isfinite(e64)]), initial=0)))
            if tol is not None and tol[k] is not None:
                allowed = tol[k]
            else:
                r = rel if rel is not None else 1e4 * eps_of(e.dtype)
                allowed = r * (np.abs(e64) + scale)
            err = np.where(fin, np.abs(g64 - e64), 0)
            bad = mask & (nan_bad | inf_bad | (err > allowed))
        if bad.any():
            idx = [tuple(int(i) for i in ix) for ix in np.argwhere(bad)[:4]]
            sel = tuple(np.array(idx).T) if e.ndim else ()
            raise Failure("mismatch", oracle, level,
                          f"{where}{int(bad.sum())} of {e.size} elements differ at {idx}: got {g[sel]!r}, "
                          f"expected {e[sel]!r}")


def numpy_reference(prog: Program, f: Callable, fp: Callable, args: list[np.ndarray]
                    ) -> tuple[Any, list[np.ndarray | None], list[np.ndarray | None]]:
    """f(*args) and, per leaf, the elementwise tolerance and the mask of unjudgeable elements.

    The tolerance is a first-order bound of the rounding error: each step (each input and
    each statement's value) in turn is multiplied by ``1 +- 16 eps`` (random signs per
    element, two draws), and the output deviations of the steps are added up. Steps are
    perturbed one at a time, so that the errors of different steps cannot cancel each other
    as they may in a single all-steps perturbation."""
    rng = np.random.default_rng(prog.seed + 7)
    state = {"step": -1}

    def p(v: Any, step: int) -> Any:
        if step != state["step"] or not (isinstance(v, (np.ndarray, np.generic)) and v.dtype.kind == "f"):
            return v
        signs = rng.choice([-1.0, 1.0], np.shape(v))
        return (np.asarray(v, np.float64) * (1 + 16 * eps_of(v.dtype) * signs)).astype(v.dtype)

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = f(*[a.copy() for a in args])
        runs = []
        for step in range(prog.nargs + len(prog.stmts)):
            state["step"] = step
            runs.append([fp(*[a.copy() for a in args], p) for _ in range(2)])
    tols, skips = [], []
    for k, e in enumerate(leaves(ref)):
        e = np.asarray(e)
        per_step = [[np.asarray(leaves(r)[k]) for r in pair] for pair in runs]
        if any(a.shape != e.shape for pair in per_step for a in pair):
            tols.append(None)
            skips.append(np.ones(e.shape, bool))      # a perturbation changed a shape: do not judge
            continue
        if e.dtype.kind != "f":
            tols.append(None)
            skips.append(np.any([a != e for pair in per_step for a in pair], axis=0) if per_step
                         else np.zeros(e.shape, bool))
            continue
        e64 = e.astype(np.float64)
        total = np.zeros(e.shape)
        unstable = np.zeros(e.shape, bool)
        for pair in per_step:
            devs = [np.abs(a.astype(np.float64) - e64) for a in pair]
            dev = np.max(devs, axis=0)
            unstable |= ~np.isfinite(dev) & np.isfinite(e64)
            total += np.where(np.isfinite(dev), dev, 0)
        scale = max(1.0, float(np.max(np.abs(e64[np.isfinite(e64)]), initial=0)))
        # big programs reduce up to 2048 elements: room for naive against pairwise summation
        floor = (4096 if prog.big else 64) * eps_of(e.dtype)
        tols.append(4 * total + floor * (np.abs(e64) + scale))
        skips.append(unstable)
    return ref, tols, skips


# ---- finite differences --------------------------------------------------------------------------------

def fd_jacobian(prog: Program, g: Callable, args: list[np.ndarray], argnum: int) -> tuple[list[np.ndarray], list]:
    """d g(*args) / d args[argnum] per output leaf (shape out + in), and per leaf a mask of
    elements that cannot be judged: no stable estimate, or a kink (see one_sided_disagree)."""
    f32 = prog.has_f32
    h = 1e-2 if f32 else 1e-5
    eps = eps_of(np.dtype(np.float32 if f32 else np.float64))
    rtol = 1e-4 if f32 else 1e-6
    x = np.asarray(args[argnum], np.float64)
    out0 = [np.asarray(o, np.float64) for o in leaves(g(*args))]
    mag = max([1.0] + [float(np.max(np.abs(o), initial=0)) for o in out0])
    jacs = [np.zeros(o.shape + x.shape) for o in out0]
    masks = [np.zeros(o.shape + x.shape, bool) for o in out0]
    for idx in np.ndindex(*x.shape):
        def phi(e: float, idx: tuple = idx) -> Any:
            xp = x.copy()
            xp[idx] += e
            a = list(args)
            a[argnum] = xp
            return g(*a)

        found = fd.stable(lambda hh: fd.derivative(phi, hh), h, rtol, lambda hh: 100 * eps * mag / hh, halvings=4)
        kinks = one_sided_disagree(phi, out0, found[1] if found else h, eps * mag) if found else None
        for k in range(len(out0)):
            if found is None or kinks is None or kinks[k] is None:
                masks[k][(Ellipsis,) + idx] = True
                continue
            masks[k][(Ellipsis,) + idx] = kinks[k]
            jacs[k][(Ellipsis,) + idx] = found[0][k]
    return jacs, masks


def one_sided_disagree(phi: Callable[[float], Any], out0: list[np.ndarray], h: float, noise: float
                       ) -> list[np.ndarray | None] | None:
    """Per output leaf, the elements whose left and right difference quotients disagree: a kink
    (max of equal operands, clip at its bound, a branch switching at the point). There the
    central difference is the mean of the two one-sided slopes, a number that no derivative
    convention has to match, so such elements are not judged."""
    try:
        right = [np.asarray(o, np.float64) for o in fd.evaluate(phi, h)]
        left = [np.asarray(o, np.float64) for o in fd.evaluate(phi, -h)]
    except Exception:
        return None
    out = []
    for r, le, o in zip(right, left, out0):
        if r.shape != o.shape or le.shape != o.shape:
            out.append(None)
            continue
        fwd, bwd = (r - o) / h, (o - le) / h
        out.append(~np.isfinite(fwd) | ~np.isfinite(bwd) |
                   (np.abs(fwd - bwd) > 1e-2 * (1 + np.abs(fwd) + np.abs(bwd)) + 8 * noise / h))
    return out


def fd_tol(prog: Program, ref: np.ndarray) -> np.ndarray:
    r, a = (5e-3, 5e-3) if prog.has_f32 else (1e-5, 1e-6)
    scale = max(1.0, float(np.max(np.abs(ref), initial=0)))
    return r * np.abs(ref) + a * scale


# ---- the check -----------------------------------------------------------------------------------------

def level_args(prog: Program) -> list[list[np.ndarray]]:
    """The arguments of every level (level 0 first)."""
    outer_first = list(reversed(prog.layers))
    out = [[assemble(prog, i, outer_first) for i in range(prog.nargs)]]
    for layer in outer_first:
        args = out[0]
        if layer.kind == "vmap":
            args = [a if d is None else np.take(a, 0, axis=d) for a, d in zip(args, layer.in_dims)]
        out.insert(0, args)
    return out


#: a shape error naming a symbolic dim: the shapes agree only for some sizes (``min(n, 2)`` is 2
#: only when n >= 2), which a signature kernel may refuse
SYMBOLIC_SHAPE = re.compile(r"min\(|max\(|\bsize\b[^,;)]*\b[nm]\b|\b[nm] [-+] \d")


def check(prog: Program) -> Outcome:
    try:
        run_checks(prog)
    except Refused as e:
        return Outcome("refused", str(e))
    except Failure as e:
        first = e.message.splitlines()[0] if e.message else ""
        if e.kind == "false-refusal" and prog.base == "sig" and SYMBOLIC_SHAPE.search(first.split(": ", 2)[-1]):
            return Outcome("refused", f"{e.exc_type} on symbolic dims: {first[-120:]}")
        return Outcome("fail", str(e), e)
    return Outcome("ok")


def run_checks(prog: Program) -> None:
    module = guarded(0, "compile", lambda: load(prog))
    f, fp = module.f, perturbed(prog)
    kernels = [getattr(module, f"k{i}") for i in range(len(prog.layers) + 1)]
    args_by_level = level_args(prog)
    for level, args in enumerate(args_by_level):
        k = kernels[level]
        got = guarded(level, "call", lambda: k(*[a.copy() for a in args]))
        if level == 0:
            ref, tol, skip = numpy_reference(prog, f, fp, args)
            compare(0, "numpy", got, ref, tol, skip)
            args_b = [a.copy() for a in prog.data_b]
            got_b = guarded(0, "call(env B)", lambda: k(*args_b))
            ref_b, tol_b, skip_b = numpy_reference(prog, f, fp, prog.data_b)
            compare(0, "numpy(env B)", got_b, ref_b, tol_b, skip_b)
        else:
            layer = prog.layers[level - 1]
            inner = f if level == 1 else kernels[level - 1]
            if layer.kind == "vmap":
                check_vmap(prog, level, layer, inner, fp if level == 1 else None, args, got)
            elif layer.kind == "inline":
                check_inline(prog, level, layer, inner, fp, args, got)
            else:
                check_derivative(prog, level, layer, inner, kernels[level - 1], args, got)
        interp = guarded(level, "interpreter", lambda: stage_batched(k, tuple(a.copy() for a in args)))
        if level == 0:
            compare(0, "interpreter", got, interp, tol, skip)
        else:
            compare(level, "interpreter", got, interp, rel=1e4 * eps_of(np.float32 if prog.has_f32 else np.float64))
    top = len(prog.layers)
    for kind in prog.top:
        optional(lambda: check_top(prog, top, kind, kernels[top], args_by_level[top]))


def check_vmap(prog: Program, level: int, layer: Any, inner: Callable, fp: Callable | None,
               args: list[np.ndarray], got: Any) -> None:
    rows, tols, skips = [], [], []
    for b in range(layer.size):
        sl = [a if d is None else np.take(a, b, axis=d) for a, d in zip(args, layer.in_dims)]
        if fp is not None:
            r, t, s = numpy_reference(prog, inner, fp, sl)
            tols.append(t)
            skips.append(s)
        else:
            r = guarded(level - 1, "call", lambda: inner(*[a.copy() for a in sl]))
        rows.append(r)
    n_leaves = len(leaves(got))
    if structure(rows[0]) != structure(got):
        raise Failure("mismatch", "vmap-loop", level, f"structure {structure(got)}, expected {structure(rows[0])}")

    def stack(items: list) -> np.ndarray:
        return np.stack([np.asarray(x) for x in items], axis=layer.out_dims)

    expected_leaves = [stack([leaves(r)[k] for r in rows]) for k in range(n_leaves)]
    expected = fd.like(got, expected_leaves)
    if fp is not None:
        tol = [None if tols[0][k] is None else stack([t[k] for t in tols]) for k in range(n_leaves)]
        skip = [None if any(s[k] is None for s in skips) else stack([s[k] for s in skips]) for k in range(n_leaves)]
        compare(level, "vmap-loop(numpy)", got, expected, tol, skip)
    else:
        compare(level, "vmap-loop", got, expected, rel=1e4 * eps_of(np.float32 if prog.has_f32 else np.float64))


def check_inline(prog: Program, level: int, layer: Any, inner: Callable, fp: Callable,
                 args: list[np.ndarray], got: Any) -> None:
    """A jit function that calls the inner kernel (inlined) computes what the kernel does."""
    if level == 1 and layer.wrap_raw:
        ref, tol, skip = numpy_reference(prog, inner, fp, args)
        compare(level, "inline(numpy)", got, ref, tol, skip)
        return
    expected = guarded(level - 1, "call", lambda: inner(*[a.copy() for a in args]))
    compare(level, "inline==kernel", got, expected, rel=1e4 * eps_of(np.float32 if prog.has_f32 else np.float64))


def check_derivative(prog: Program, level: int, layer: Any, inner: Callable, inner_kernel: Any,
                     args: list[np.ndarray], got: Any) -> None:
    nums = layer.argnums if isinstance(layer.argnums, tuple) else (layer.argnums,)
    target = inner if level == 1 and layer.wrap_raw else inner_kernel
    kind = layer.kind
    fn = inner
    if kind == "hessian":           # the Jacobian of the (compiled) gradient
        fn = guarded(level, "grad", lambda: grad(target, argnums=layer.argnums))
        kind = "jacrev"
    out_struct = guarded(level - 1, "call", lambda: fn(*[a.copy() for a in args]))
    per_arg = {a: fd_jacobian(prog, fn, args, a) for a in nums}
    n_out = len(leaves(out_struct))
    if kind in ("grad", "grad_and_value"):
        exp_tree: Any = tuple(per_arg[j][0][0] for j in nums) if isinstance(layer.argnums, tuple) \
            else per_arg[nums[0]][0][0]
        masks = [per_arg[j][1][0] for j in nums]
        if kind == "grad_and_value":
            exp_tree = (exp_tree, out_struct)
            masks.append(None)
    else:
        exp_leaves, masks = [], []
        for k in range(n_out):
            for j in nums:
                exp_leaves.append(per_arg[j][0][k])
                masks.append(per_arg[j][1][k])
        per_out = [tuple(exp_leaves[k * len(nums):(k + 1) * len(nums)]) if isinstance(layer.argnums, tuple)
                   else exp_leaves[k] for k in range(n_out)]
        exp_tree = fd.like(out_struct, per_out) if isinstance(out_struct, (tuple, list)) else per_out[0]
    # derivatives of float64 arguments are float64 (the finite differences are float64 already)
    if structure(exp_tree) == structure(got):
        exp_tree = fd.like(exp_tree, [np.asarray(e, np.asarray(g).dtype) if np.asarray(g).dtype.kind == "f" else e
                                      for e, g in zip(leaves(exp_tree), leaves(got))])
    tols = [None if np.asarray(e).dtype.kind != "f" else fd_tol(prog, np.asarray(e, np.float64))
            for e in leaves(exp_tree)]
    if kind == "grad_and_value":     # the value is compiled-vs-compiled
        tols[-1] = None
    compare(level, f"finite-differences({layer.kind})", got, exp_tree, tols, masks)
    rel = 1e4 * eps_of(np.float32 if prog.has_f32 else np.float64)
    # the equivalent composition may be refused where the layer is not (reverse mode through a
    # while that forward mode differentiates): then there is nothing to compare
    if layer.kind in ("jacrev", "jacfwd"):
        other = jacfwd if layer.kind == "jacrev" else jacrev
        alt = optional(lambda: guarded(level, other.__name__, lambda: other(target, argnums=layer.argnums)(
            *[a.copy() for a in args])))
        if alt is not None:
            compare(level, "jacrev==jacfwd", got, alt, rel=rel)
    if layer.kind == "hessian":
        alt = optional(lambda: guarded(level, "jacfwd(jacrev)", lambda: jacfwd(
            jacrev(target, argnums=layer.argnums), argnums=layer.argnums)(*[a.copy() for a in args])))
        if alt is not None:
            compare(level, "hessian==jacfwd(jacrev)", got, alt, rel=rel)


def optional(thunk: Callable[[], Any]) -> Any:
    """The value of an extra check's computation, or None when aotx refuses it (documented)."""
    try:
        return thunk()
    except Refused:
        return None


def check_top(prog: Program, level: int, kind: str, k: Any, args: list[np.ndarray]) -> None:
    if not all(np.asarray(a).dtype == np.float64 for a in args):
        return
    out = guarded(level, "call", lambda: k(*[a.copy() for a in args]))
    if not all(np.asarray(o).dtype == np.float64 for o in leaves(out)):
        return
    rng = np.random.default_rng(prog.seed + 11)
    ts = [rng.uniform(-1, 1, np.shape(a)) for a in args]
    h, eps = (1e-2, eps_of(np.float32)) if prog.has_f32 else (1e-5, eps_of(np.float64))
    mag = max([1.0] + [float(np.max(np.abs(o), initial=0)) for o in leaves(out)])
    found = fd.stable(lambda hh: fd.directional_derivative(lambda *a: k(*a), args, ts, hh), h,
                      1e-4 if prog.has_f32 else 1e-6, lambda hh: 100 * eps * mag / hh, halvings=4)
    if kind == "jvp":
        res = guarded(level, "jvp", lambda: jvp(k, tuple(a.copy() for a in args), tuple(ts)))
        compare(level, "jvp(primal)", res[0], out, rel=1e4 * eps_of(np.float64))
        if found is not None:
            compare(level, "jvp-vs-finite-differences", res[1],
                    fd.like(out, [np.asarray(d) for d in found[0]]),
                    [fd_tol(prog, np.asarray(d)) for d in found[0]])
    else:
        cts = [rng.uniform(-1, 1, np.shape(o)) for o in leaves(out)]

        def call() -> Any:
            o, fn = vjp(k, *[a.copy() for a in args])
            return o, fn(fd.like(out, cts) if isinstance(out, (tuple, list)) else cts[0])
        o, grads = guarded(level, "vjp", call)
        compare(level, "vjp(primal)", o, out, rel=1e4 * eps_of(np.float64))
        if found is not None:
            lhs = sum(float(np.sum(c * d)) for c, d in zip(cts, found[0]))
            gl = leaves(grads)
            rhs = sum(float(np.sum(np.asarray(gv) * t)) for gv, t in zip(gl, ts))
            bound = fd_tol(prog, np.array(abs(lhs))) + 1e-6 * sum(float(np.sum(np.abs(c * d))) for c, d in zip(cts, found[0]))
            if abs(lhs - rhs) > bound:
                raise Failure("mismatch", "vjp-dot-product", level, f"<ct, J t> = {lhs!r} (finite differences), "
                              f"<vjp(ct), t> = {rhs!r}")
