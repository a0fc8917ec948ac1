"""A seeded generator of random well-typed NumPy programs and transform stacks.

A program is a function ``f(x0, x1, ...)`` in SSA form: every statement assigns
one new variable from one NumPy operation (or one small control-flow block), so
that a statement is also the unit of minimization. Types are decided by NumPy
itself: the inputs are drawn first (every example set the program will see: the
elements of every ``vmap`` batch, and a second size for every symbolic dim), and
a candidate statement is kept only when NumPy evaluates it on every example set
without a floating-point warning, with finite values of bounded magnitude
(|float| <= 1e5, |int| <= 2**24: no overflow, no precision cliff in casts) and
a small size. Inputs outside an operation's domain are avoided by construction
as well (``np.log(np.abs(a) + 0.5)``, ``a // (np.abs(b) + 1)``).

Dims: every dim is a pair (size in environment A, size in environment B).
Equal sizes are a static dim; different ones are symbolic (``n``: 3 and 5,
``m``: 2 and 3, or an expression of them such as ``n - 1``). Signature kernels
declare the inputs' symbolic dims by name and are called in both environments.

Not generated (see ``KNOWN``): ``squeeze`` without ``axis`` of a symbolic dim (refused
by design), ``bool ** k`` (int8, refused), ``std`` at a kink under AD.
"""
from __future__ import annotations

import random
import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

DTYPES = {"f64": np.dtype(np.float64), "f32": np.dtype(np.float32), "i32": np.dtype(np.int32),
          "i64": np.dtype(np.int64), "bool": np.dtype(np.bool_)}
SIG_NAME = {v: k for k, v in DTYPES.items()}
NP_NAME = {"f64": "np.float64", "f32": "np.float32", "i32": "np.int32", "i64": "np.int64", "bool": "np.bool_"}
#: the sizes of the symbolic dims in the two environments (different differences, so that an
#: output dim's environment pair tells which symbol it follows)
ENV_A = {"n": 3, "m": 2}
ENV_B = {"n": 5, "m": 3}
#: "big" programs (no AD, no float32): sizes past the vector width, with remainder loops
BIG_ENV_A = {"n": 17, "m": 8}
BIG_ENV_B = {"n": 19, "m": 9}
BIG_DIMS = ["1", "3", "5", "7", "16", "n", "n", "m"]
BIG_MAX_SIZE = 2048
FLOAT_BOUND = 1e5
INT_BOUND = 2 ** 24
MAX_SIZE = 48

KNOWN = """\
Not generated:
- np.squeeze without axis= of a symbolic dim (refused by design: the result's rank would depend
  on the size)
- bool ** k (NumPy gives int8, which aotx refuses with a hint)
- std/var and the 2-norm at a kink (all values equal) under AD: finite differences do not apply
"""

Dim = tuple[int, int]          # (size in env A, size in env B)
AD_KINDS = ("grad", "grad_and_value", "hessian", "jacrev", "jacfwd")


@dataclass
class Var:
    name: str
    dtype: np.dtype
    shape: tuple[Dim, ...]
    deps: frozenset[int]       # the argument indices the value depends on

    @property
    def key(self) -> tuple:
        return (self.dtype, self.shape)

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass
class Stmt:
    target: str
    lines: list[str]           # source lines of the statement, unindented
    uses: tuple[str, ...]
    alts: tuple[str, ...] = ()  # operands with the target's dtype and shape (minimization)


@dataclass
class Layer:
    kind: str                  # vmap | inline | one of AD_KINDS
    in_dims: tuple[int | None, ...] = ()
    size: int = 0
    out_dims: int = 0
    argnums: int | tuple[int, ...] = 0
    wrap_raw: bool = False     # the innermost layer transforms `f` itself instead of `k0`
    chunk_size: int | None = None

    def render(self, inner: str) -> str:
        chunk = f", chunk_size={self.chunk_size}" if self.chunk_size else ""
        if self.kind == "vmap":
            extra = f", out_dims={self.out_dims}" if self.out_dims else ""
            return f"vmap({inner}, in_dims={self.in_dims!r}{extra}{chunk})"
        return f"{self.kind}({inner}, argnums={self.argnums!r}{chunk})"


@dataclass
class Program:
    seed: int
    arg_types: list[tuple[str, tuple[str, ...]]]      # (dtype name, dims as text: "3", "n")
    stmts: list[Stmt]
    results: list[str]
    base: str                                      # jit | sig
    layers: list[Layer]                            # innermost first
    top: list[str] = field(default_factory=list)   # extra checks on the whole stack: jvp, vjp
    data: list[np.ndarray] = field(default_factory=list)    # per argument: batch axes + shape, env A
    data_b: list[np.ndarray] = field(default_factory=list)  # per argument, env B (no batch)
    has_f32: bool = False
    big: bool = False                              # sizes past the vector width (see BIG_ENV_A)

    # ---- source ------------------------------------------------------------------------------

    @property
    def nargs(self) -> int:
        return len(self.arg_types)

    def signature(self) -> str:
        return ", ".join(f"{d}[{', '.join(s)}]" for d, s in self.arg_types)

    def body_lines(self, perturb: bool = False) -> list[str]:
        out = []
        if perturb:
            out += [f"x{i} = _p(x{i}, {i})" for i in range(self.nargs)]
        for k, s in enumerate(self.stmts):
            out += s.lines
            if perturb:
                out.append(f"{s.target} = _p({s.target}, {self.nargs + k})")
        ret = self.results[0] if len(self.results) == 1 else "(" + ", ".join(self.results) + ")"
        out.append(f"return {ret}")
        return out

    def function_source(self, name: str = "f", perturb: bool = False) -> str:
        params = ", ".join(f"x{i}" for i in range(self.nargs)) + (", _p" if perturb else "")
        return f"def {name}({params}):\n" + "".join(f"    {line}\n" for line in self.body_lines(perturb))

    def kernel_lines(self) -> list[str]:
        if self.base == "sig":
            lines = [f'k0 = jit(f, signature="{self.signature()}")']
        else:
            lines = ["k0 = jit(f)"]
        params = ", ".join(f"x{i}" for i in range(self.nargs))
        for i, layer in enumerate(self.layers):
            inner = "f" if i == 0 and layer.wrap_raw else f"k{i}"
            if layer.kind == "inline":          # a kernel called from compiled code is inlined
                lines += ["", "", f"def g{i + 1}({params}):", f"    return {inner}({params})", "", "",
                          f"k{i + 1} = jit(g{i + 1})"]
            else:
                lines.append(f"k{i + 1} = {layer.render(inner)}")
        return lines

    def source(self) -> str:
        return ("import numpy as np\n\nfrom compiler import grad, grad_and_value, hessian, jacfwd, jacrev, jit, vmap\n\n\n"
                + self.function_source() + "\n\n" + "\n".join(self.kernel_lines()) + "\n")

    def describe(self) -> str:
        stack = "k0" if not self.layers else self.kernel_lines()[-1].split(" = ", 1)[1]
        return f"seed {self.seed}: base {self.base}, stack {stack}" + (f", top checks {self.top}" if self.top else "")


# ---- inputs ------------------------------------------------------------------------------------------

def draw_array(rng: np.random.Generator, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    if dtype.kind == "f":
        return rng.uniform(-2.0, 2.0, shape).astype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    return rng.integers(-4, 5, shape).astype(dtype)


def example_sets(prog: Program) -> list[list[np.ndarray]]:
    """Every argument tuple `f` is called with: each combination of batch indices (env A),
    then the env-B arguments."""
    vmaps = [layer for layer in reversed(prog.layers) if layer.kind == "vmap"]   # outermost first
    sets = []
    for idx in np.ndindex(*[layer.size for layer in vmaps]):
        args = []
        for i, d in enumerate(prog.data):
            take = tuple(b for layer, b in zip(vmaps, idx) if layer.in_dims[i] is not None)
            args.append(d[take])
        sets.append(args)
    return sets + [list(prog.data_b)]


def assemble(prog: Program, i: int, layers: list[Layer], prefix: tuple = ()) -> np.ndarray:
    """Argument i as the stack of `layers` (outermost first) receives it: each vmap layer's
    batch axis at its in_dim."""
    vm = [layer for layer in layers if layer.kind == "vmap"]
    if not vm:
        return prog.data[i][prefix]
    first, rest = vm[0], vm[1:]
    if first.in_dims[i] is None:
        return assemble(prog, i, rest, prefix)
    return np.stack([assemble(prog, i, rest, prefix + (b,)) for b in range(first.size)], axis=first.in_dims[i])


# ---- the statement generator -------------------------------------------------------------------------

F_UNARY = ["np.sin({a})", "np.cos({a})", "np.tanh({a})", "np.arctan({a})", "np.exp({a})",
           "np.log(np.abs({a}) + 0.5)", "np.sqrt(np.abs({a}) + 0.25)", "np.log1p(np.abs({a}))",
           "np.expm1(np.tanh({a}))", "np.cbrt({a})", "np.sinh(np.tanh({a}))", "np.cosh(np.tanh({a}))",
           "np.arcsin(np.tanh({a}) * 0.9)", "np.arccos(np.tanh({a}) * 0.9)", "np.reciprocal(1.0 + {a} * {a})",
           "np.floor({a})", "np.ceil({a})", "np.rint({a})", "np.trunc({a})", "np.exp2(np.tanh({a}))",
           "np.log2(np.abs({a}) + 1.0)", "np.log10(np.abs({a}) + 1.0)", "np.tan(np.tanh({a}))",
           "np.degrees({a})", "np.fabs({a})", "{a} / 3.0"]
N_UNARY = ["np.abs({a})", "-{a}", "np.square({a})", "np.sign({a})", "{a} * 2", "{a} + 1", "3 - {a}",
           "{a} * 0.5", "{a} ** 2", "{a} ** 3", "np.clip({a}, -1, 2)", "np.maximum({a}, 0)", "np.positive({a})"]
I_UNARY = ["{a} // 3", "{a} % 4", "~{a}", "{a} & 3", "np.floor_divide({a}, -2)", "{a} ** 2"]
B_UNARY = ["~{a}", "np.logical_not({a})", "{a} & True", "{a} == False"]
ANY_TO_BOOL = ["{a} > 0", "{a} != 0", "{a} <= 1", "np.isfinite({a})"]
CASTS = ["{a}.astype(np.float32)", "{a}.astype(np.float64)", "{a}.astype(np.int32)", "{a}.astype(np.int64)",
         "{a}.astype(bool)", "np.float64({a})" ]
N_BINARY = ["{a} + {b}", "{a} - {b}", "{a} * {b}", "np.maximum({a}, {b})", "np.minimum({a}, {b})",
            "np.where({a} > {b}, {a}, {b})", "{a} / (1 + {b} * {b})", "np.add({a}, {b})",
            "({a} - {b}) * 0.25"]
F_BINARY = ["np.hypot({a}, {b})", "np.arctan2({a}, {b})", "np.logaddexp({a}, {b})",
            "np.power(np.abs({a}) + 0.5, np.tanh({b} * 1.0))", 
            "np.fmax({a}, {b})", "np.fmin({a}, {b})"]
I_BINARY = ["{a} // (np.abs({b}) + 1)", "{a} % (np.abs({b}) + 1)", "{a} & {b}", "{a} | {b}", "{a} ^ {b}"]
B_BINARY = ["{a} & {b}", "{a} | {b}", "{a} ^ {b}", "np.logical_and({a}, {b})", "np.logical_or({a}, {b})",
            "{a} == {b}", "{a} != {b}"]
COMPARE = ["{a} < {b}", "{a} <= {b}", "{a} == {b}", "{a} != {b}", "{a} >= {b}", "np.greater({a}, {b})"]
REDUCTIONS = ["sum", "mean", "max", "min", "prod", "var", "std", "any", "all", "argmax", "argmin",
              "cumsum", "cumprod", "ptp", "count_nonzero", "amax"]


class Generator:
    """Draws one program from a seed (see the module docstring)."""

    def __init__(self, seed: int, *, ad: bool | None = None) -> None:
        self.seed = seed
        self.r = random.Random(seed)
        self.np_rng = np.random.default_rng(seed)
        self.ad = ad

    # -- helpers ----------------------------------------------------------------------------------

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def pick(self, pred: Callable[[Var], bool] = lambda v: True, recent: bool = True) -> Var | None:
        cands = [v for v in self.vars if pred(v)]
        if not cands:
            return None
        if recent and self.chance(0.6):
            cands = cands[-4:]
        return self.r.choice(cands)

    def evaluate(self, lines: list[str], target: str) -> list[np.ndarray] | None:
        """The target's value on every example set, or None when NumPy rejects the statement or
        it leaves the safe range."""
        code = "\n".join(lines)
        outs = []
        for env in self.envs:
            ns = dict(env)
            ns["np"] = np
            try:
                with np.errstate(all="raise"), warnings.catch_warnings():
                    warnings.simplefilter("error")
                    exec(code, ns)
            except Exception:
                return None
            v = ns.get(target)
            if not isinstance(v, (np.ndarray, np.generic)):
                return None
            v = np.asarray(v)
            if v.dtype not in SIG_NAME.keys() or v.size > self.max_size or v.ndim > 4:
                return None
            if v.dtype.kind == "f" and (not np.all(np.isfinite(v)) or np.max(np.abs(v), initial=0) > FLOAT_BOUND):
                return None
            if v.dtype.kind in "iu" and np.max(np.abs(v.astype(np.int64)), initial=0) > INT_BOUND:
                return None
            outs.append(v)
        return outs

    def new_name(self) -> str:
        self.counter += 1
        return f"v{self.counter - 1}"

    def add(self, lines: list[str], target: str, operands: list[Var]) -> bool:
        vals = self.evaluate(lines, target)
        if vals is None:
            return False
        if self.ad_active and self.singular(lines, operands, vals):
            return False
        a, b = vals[0], vals[-1]
        if any(v.dtype != a.dtype for v in vals):
            return False
        shape = tuple(zip(a.shape, b.shape))
        if a.ndim != b.ndim or any(np.shape(v) != a.shape for v in vals[:-1]):
            return False
        if not self.shape_ok(shape):
            return False
        deps = frozenset().union(*[o.deps for o in operands]) if operands else frozenset()
        var = Var(target, a.dtype, shape, deps)
        alts = tuple(dict.fromkeys(o.name for o in operands if o.key == var.key))
        self.stmts.append(Stmt(target, lines, tuple(dict.fromkeys(o.name for o in operands)), alts))
        self.vars.append(var)
        for env, v in zip(self.envs, vals):
            env[target] = v
        if a.dtype == np.float32:
            self.has_f32 = True
        return True

    def singular(self, lines: list[str], operands: list[Var], vals: list[np.ndarray]) -> bool:
        """Under AD: a function whose derivative is infinite or undefined at a point the program
        reaches exactly (cbrt, hypot and arctan2 at 0, std of a constant): the chain rule gives
        inf * 0 = nan where the composition may be smooth; NumPy, JAX and torch agree on nan,
        and finite differences cannot judge it. Also prod and cumprod of exact zeros: cumprod's
        derivative divides by x there (documented), and so do prod's second derivatives
        (found by this fuzzer, reported, owned by the derivative rules)."""
        text = "\n".join(lines)
        if any(f in text for f in ("np.cbrt(", "np.hypot(", "np.arctan2(", "prod(", "cumprod(")):
            for o in operands:
                if any(np.any(env[o.name] == 0) for env in self.envs):
                    return True
        if "std(" in text and any(np.any(v == 0) for v in vals):
            return True
        return False

    @staticmethod
    def shape_ok(shape: tuple[Dim, ...]) -> bool:
        """Symbolic dims must follow n or m with an offset (anything else would be a shape that
        is a product or a difference we could not write in a signature)."""
        for da, db in shape:
            if da != db and (db - da) not in (1, 2):
                return False
        return True

    # -- index expressions ------------------------------------------------------------------------

    def slice_text(self, dim: Dim) -> str:
        da, db = dim
        lo = min(da, db)
        if da == db:                            # static: anything NumPy accepts
            step = self.r.choice([1, 1, 1, 2, 3, -1, -2])
            start = self.r.choice([None, None, self.r.randint(-da - 1, da + 1)])
            stop = self.r.choice([None, None, self.r.randint(-da - 1, da + 1)])
        else:                                   # symbolic: any step and bounds (NumPy's length formula)
            step = self.r.choice([1, 1, 1, 2, 3, -1, -2])
            start = self.r.choice([None, None, self.r.randint(-lo - 2, lo + 1)])
            stop = self.r.choice([None, None, self.r.randint(-lo - 2, lo + 1)])
        text = ("" if start is None else str(start)) + ":" + ("" if stop is None else str(stop))
        return text + ("" if step == 1 else f":{step}")

    def index_text(self, dim: Dim) -> str:
        da, db = dim
        if min(da, db) == 0:
            return ":"
        if da == db:
            return str(self.r.randint(-da, da - 1))
        return str(self.r.randint(-min(da, db), min(da, db) - 1))

    def subscript(self, v: Var) -> str:
        """A static subscript of v: integers, slices, None, Ellipsis."""
        parts = []
        for k, dim in enumerate(v.shape):
            c = self.r.random()
            if c < 0.35:
                parts.append(":")
            elif c < 0.7:
                parts.append(self.slice_text(dim))
            else:
                parts.append(self.index_text(dim))
            if self.chance(0.1):
                parts.append("None")
        while parts and parts[-1] == ":" and self.chance(0.7):
            parts.pop()
        if self.chance(0.15) and parts:
            parts = ["..."] + parts[len(parts) // 2:]
        if not parts:
            parts = ["None"]
        return ", ".join(parts)

    # -- statement kinds --------------------------------------------------------------------------

    def st_unary(self) -> bool:
        a = self.pick()
        if a is None:
            return False
        kind = a.dtype.kind
        pool = N_UNARY + ANY_TO_BOOL + CASTS
        if kind == "f":
            pool = pool + F_UNARY * 2
        elif kind in "iu":
            pool = pool + I_UNARY
        else:
            pool = [t for t in pool if "**" not in t and "clip" not in t] + B_UNARY
        t = self.r.choice(pool)
        name = self.new_name()
        return self.add([f"{name} = " + t.format(a=a.name)], name, [a])

    def st_binary(self) -> bool:
        a = self.pick()
        if a is None:
            return False
        b = self.pick(lambda v: v is not a and self.broadcastable(a, v)) or a
        kinds = a.dtype.kind + b.dtype.kind
        pool = list(N_BINARY) + COMPARE
        if "f" in kinds:
            pool += F_BINARY
        if set(kinds) <= set("iu"):
            pool += I_BINARY
        if kinds == "bb":
            pool = B_BINARY + COMPARE + ["{a} + {b}", "{a} * {b}", "np.maximum({a}, {b})"]
        t = self.r.choice(pool)
        if self.chance(0.15):                   # a Python scalar operand (NEP 50 weak types)
            b_text = self.r.choice(["2", "0.5", "-1.5", "3", "True"])
            name = self.new_name()
            return self.add([f"{name} = " + t.format(a=a.name, b=b_text)], name, [a])
        name = self.new_name()
        if self.chance(0.5):
            a, b = b, a
        return self.add([f"{name} = " + t.format(a=a.name, b=b.name)], name, [a, b])

    def broadcastable(self, a: Var, b: Var) -> bool:
        for x, y in zip(reversed(a.shape), reversed(b.shape)):
            if x != y and x != (1, 1) and y != (1, 1):
                return False
        return True

    def st_where(self) -> bool:
        c = self.pick(lambda v: v.dtype.kind == "b")
        a = self.pick()
        if c is None or a is None:
            return False
        b = self.pick(lambda v: self.broadcastable(a, v)) or a
        name = self.new_name()
        return self.add([f"{name} = np.where({c.name}, {a.name}, {b.name})"], name, [c, a, b])

    def st_clip(self) -> bool:
        a = self.pick(lambda v: v.dtype.kind in "fi")
        if a is None:
            return False
        name = self.new_name()
        lo, hi = self.r.choice([("-1", "1"), ("0", "2.5"), ("None", "1"), ("-0.5", "None")])
        return self.add([f"{name} = np.clip({a.name}, {lo}, {hi})"], name, [a])

    def st_reduce(self) -> bool:
        a = self.pick(lambda v: v.rank > 0)
        if a is None:
            return False
        red = self.r.choice(REDUCTIONS)
        axis_choices: list[Any] = [None] + list(range(-a.rank, a.rank))
        if a.rank >= 2:
            axis_choices.append(tuple(sorted(self.r.sample(range(a.rank), 2))))
        axis = self.r.choice(axis_choices)
        if red in ("cumsum", "cumprod", "argmax", "argmin") and isinstance(axis, tuple):
            axis = 0
        if red in ("var", "std") and self.ad_active:
            reduced = [a.shape[k] for k in range(a.rank)] if axis is None else \
                [a.shape[k] for k in (axis if isinstance(axis, tuple) else (axis,))]
            if int(np.prod([min(d) for d in reduced])) < 2:
                return False
        kw = f"axis={axis!r}"
        if red not in ("cumsum", "cumprod", "count_nonzero") and self.chance(0.3):
            kw += ", keepdims=True"
        if red in ("var", "std") and self.chance(0.3):
            kw += ", ddof=1"
        src = a.name if red != "cumprod" else f"np.tanh({a.name})" if a.dtype.kind == "f" else a.name
        name = self.new_name()
        if self.chance(0.25) and red in ("sum", "mean", "max", "min", "prod", "var", "std", "any", "all",
                                          "argmax", "argmin", "cumsum"):
            return self.add([f"{name} = {src}.{red}({kw})"], name, [a])
        return self.add([f"{name} = np.{red}({src}, {kw})"], name, [a])

    def st_matmul(self) -> bool:
        a = self.pick(lambda v: 1 <= v.rank <= 3 and v.dtype.kind != "b")
        if a is None:
            return False
        k = a.shape[-1]
        b = self.pick(lambda v: v.rank >= 1 and v.dtype.kind != "b"
                      and (v.shape[0] == k if v.rank == 1 else v.shape[-2] == k), recent=False)
        name = self.new_name()
        forms = []
        if b is not None:
            forms += [f"{a.name} @ {b.name}", f"np.matmul({a.name}, {b.name})"]
            if a.rank <= 2 and b.rank <= 2:
                forms.append(f"np.dot({a.name}, {b.name})")
            if a.rank == 2 and b.rank == 2:
                forms.append(f"np.einsum('ij,jk->ik', {a.name}, {b.name})")
            if a.rank == 1 and b.rank == 1:
                forms += [f"np.inner({a.name}, {b.name})", f"np.einsum('i,i->', {a.name}, {b.name})"]
        if a.rank == 2:
            forms += [f"{a.name} @ {a.name}.T", f"{a.name}.T @ {a.name}", f"np.einsum('ij->ji', {a.name})",
                      f"np.trace({a.name})", f"np.diagonal({a.name})", f"np.einsum('ij,ij->i', {a.name}, {a.name})"]
        if a.rank == 1:
            forms += [f"{a.name} @ {a.name}", f"np.outer({a.name}, {a.name})", f"np.dot({a.name}, {a.name})"]
        if not forms:
            return False
        ops = [a] + ([b] if b is not None else [])
        return self.add([f"{name} = {self.r.choice(forms)}"], name, ops)

    def st_shape(self) -> bool:
        a = self.pick()
        if a is None:
            return False
        r = a.rank
        forms = [f"np.expand_dims({a.name}, {self.r.randint(-r - 1, r)})", f"{a.name}[None]",
                 f"{a.name}[..., None]"]
        static = all(da == db for da, db in a.shape)
        if r >= 2:
            perm = list(range(r))
            self.r.shuffle(perm)
            forms += [f"{a.name}.T", f"np.transpose({a.name}, {tuple(perm)!r})",
                      f"np.swapaxes({a.name}, 0, -1)", f"np.moveaxis({a.name}, 0, -1)"]
        if r >= 1:
            ax = self.r.randint(-r, r - 1)
            forms += [f"np.flip({a.name}, {ax})", f"{a.name}.ravel()",
                      f"np.concatenate([{a.name}, {a.name}], axis={ax})", f"np.stack([{a.name}, {a.name}], axis={ax})",
                      f"np.cumsum({a.name}, axis={ax})"]
            if static:          # on symbolic dims these are refused ("needs a static size")
                forms += [f"np.roll({a.name}, {self.r.randint(-3, 3)}, axis={ax})", f"np.repeat({a.name}, 2, axis={ax})",
                          f"np.pad({a.name}, 1)", f"np.tile({a.name}, 2)"]
            ones = [k for k, d in enumerate(a.shape) if d == (1, 1)]
            if ones:
                forms.append(f"np.squeeze({a.name}, axis={self.r.choice(ones)})")
            other = self.pick(lambda v: v is not a and v.rank == r and v.dtype == a.dtype
                              and all(x == y for k, (x, y) in enumerate(zip(v.shape, a.shape)) if k != ax % r))
            if other is not None:
                forms.append(f"np.concatenate([{a.name}, {other.name}], axis={ax})")
        if static and a.rank >= 1:
            size = int(np.prod([d[0] for d in a.shape]))
            forms += [f"{a.name}.reshape(-1)", f"{a.name}.reshape(1, {size})", f"np.reshape({a.name}, ({size}, 1))",
                      f"np.broadcast_to({a.name}, (2,) + {a.name}.shape)"]
            if r == 2:
                forms += [f"np.tril({a.name})", f"np.triu({a.name}, 1)"]
        if r == 1:
            forms += [f"np.diag({a.name})"]
        name = self.new_name()
        return self.add([f"{name} = {self.r.choice(forms)}"], name, [a])

    def st_index(self) -> bool:
        a = self.pick(lambda v: v.rank >= 1)
        if a is None:
            return False
        name = self.new_name()
        c = self.r.random()
        d0 = a.shape[0]
        if min(d0) == 0:
            c = 0.0
        if c < 0.55:
            expr = f"{a.name}[{self.subscript(a)}]"
            ops = [a]
        elif c < 0.7:
            lo = min(d0)
            idx = [self.r.randint(0, lo - 1) for _ in range(self.r.randint(1, 3))]
            expr = f"{a.name}[{idx!r}]"
            ops = [a]
        else:                                   # a run-time index (dynamic slice or gather)
            i = self.pick(lambda v: v.dtype.kind == "i" and v.rank <= 1)
            if i is None:
                return False
            expr = f"{a.name}[np.abs({i.name}) % {a.name}.shape[0]]"
            ops = [a, i]
        return self.add([f"{name} = {expr}"], name, ops)

    def st_update(self) -> bool:
        a = self.pick(lambda v: v.rank >= 1)
        if a is None:
            return False
        name = self.new_name()
        c = self.r.random()
        i = None
        if min(a.shape[0]) == 0:
            c = 0.0
        if c < 0.4:
            idx = self.slice_text(a.shape[0])
        elif c < 0.7:
            idx = self.index_text(a.shape[0])
        else:
            i = self.pick(lambda v: v.dtype.kind == "i" and v.rank == 0)
            idx = "0" if i is None else f"np.abs({i.name}) % {name}.shape[0]"
        b = self.pick(lambda v: v.rank <= max(a.rank - 1, 0) and self.broadcastable(Var("", a.dtype, a.shape[1:], frozenset()), v))
        rhs = self.r.choice(["1", "0.5", f"{name}[{idx}] * 2", f"-{name}[{idx}]"] + ([b.name] * 2 if b else []))
        op = self.r.choice(["=", "=", "+="])
        lines = [f"{name} = {a.name}.copy()", f"{name}[{idx}] {op} {rhs}"]
        ops = [a] + ([b] if b is not None and b.name in rhs else []) + ([i] if i is not None else [])
        return self.add(lines, name, ops)

    def st_create(self) -> bool:
        a = self.pick()
        name = self.new_name()
        forms = [f"np.arange({self.r.randint(1, 4)}, dtype={self.r.choice(list(NP_NAME.values())[:4])})",
                 f"np.linspace(-1.0, 1.0, {self.r.randint(1, 4)})", f"np.eye({self.r.randint(1, 3)})",
                 f"np.ones(({self.r.randint(1, 3)}, {self.r.randint(1, 3)}), dtype=np.float32)",
                 f"np.full(({self.r.randint(1, 3)},), 2.5)"]
        ops = []
        if a is not None:
            ops = [a]
            forms += [f"np.zeros_like({a.name})", f"np.ones_like({a.name}, dtype=np.float64)",
                      f"np.full_like({a.name}, 3)", f"np.zeros({a.name}.shape)", f"{a.name} * 0 + 1"]
            if a.rank >= 1:
                forms.append(f"np.ones({a.name}.shape[0])")
        expr = self.r.choice(forms)
        if a is not None and a.name not in expr:
            ops = []
        return self.add([f"{name} = {expr}"], name, ops)

    def predicate(self) -> Var | None:
        """A predicate operand: under vmap or AD only values the transform accepts."""
        return self.pick(lambda v: not (v.deps & self.batched_args))

    def st_cond(self) -> bool:
        p = self.predicate()
        a = self.pick()
        if p is None or a is None:
            return False
        kind = a.dtype.kind
        pool = (F_UNARY if kind == "f" else N_UNARY if kind in "iu" else B_UNARY) + ["{a}"]
        e1, e2 = (self.r.choice(pool).format(a=a.name) for _ in range(2))
        red = self.r.choice(["np.sum", "np.max", "np.mean", "np.min"])
        c = self.r.choice(["0", "0.5", "-1", "1"])
        name = self.new_name()
        if self.chance(0.4):
            lines = [f"{name} = {e1} if {red}({p.name}) > {c} else {e2}"]
        else:
            lines = [f"if {red}({p.name}) > {c}:", f"    {name} = {e1}", "else:", f"    {name} = {e2}"]
        # both branches must have the same type
        t1 = self.evaluate([f"{name} = {e1}"], name)
        t2 = self.evaluate([f"{name} = {e2}"], name)
        if t1 is None or t2 is None or any(x.dtype != y.dtype or x.shape != y.shape for x, y in zip(t1, t2)):
            return False
        return self.add(lines, name, [p, a])

    def st_while(self) -> bool:
        # reverse mode refuses a loop that changes a differentiated value (documented); forward
        # mode differentiates through it
        avoid = self.batched_args | (self.diff_args if self.reverse else frozenset())
        # non-empty: the sum of an empty array never grows, and the loop would never end
        a = self.pick(lambda v: v.dtype.kind in "fi" and not (v.deps & avoid) and all(min(d) > 0 for d in v.shape))
        if a is None:
            return False
        name = self.new_name()
        one = "1.0" if a.dtype.kind == "f" else "1"
        grow = self.r.choice(["2", "3"]) if a.dtype.kind == "i" else self.r.choice(["1.5", "2.0"])
        bound = self.r.choice(["10", "40", "100"])
        red = self.r.choice(["np.sum", "np.max", "np.mean"])
        lines = [f"{name} = np.abs({a.name}) + {one}", f"while {red}({name}) < {bound}:",
                 f"    {name} = {name} * {grow}"]
        return self.add(lines, name, [a])

    def st_for(self) -> bool:
        a = self.pick(lambda v: v.dtype.kind == "f")
        if a is None:
            return False
        b = self.pick(lambda v: v.dtype.kind in "fi" and self.broadcastable(a, v) and len(v.shape) <= a.rank) or a
        name = self.new_name()
        k = self.r.randint(1, 4)
        body = self.r.choice([f"{name} = np.tanh({name} * 0.5 + {b.name})", f"{name} = {name} * 0.5 + {b.name} * i",
                              f"{name} = np.sin({name}) + {b.name}", f"{name} = {name} - 0.1 * {name} * {name}"])
        lines = [f"{name} = {a.name}", f"for i in range({k}):", f"    {body}"]
        return self.add(lines, name, [a, b])

    def st_item(self) -> bool:
        a = self.pick(lambda v: v.dtype.kind in "fi" and not (v.deps & (self.batched_args | self.diff_args)))
        b = self.pick(lambda v: v.dtype.kind == "f")
        if a is None or b is None:
            return False
        name = self.new_name()
        conv = self.r.choice(["float(np.sum({a}))", "np.max({a}).item()", "int(np.min({a}))"]).format(a=a.name)
        return self.add([f"{name} = {b.name} * {conv}"], name, [a, b])

    KINDS = [("unary", 10), ("binary", 10), ("where", 2), ("clip", 1), ("reduce", 5), ("matmul", 3),
             ("shape", 4), ("index", 5), ("update", 2), ("create", 1), ("cond", 2), ("while", 1), ("for", 1),
             ("item", 1)]

    # -- the program ------------------------------------------------------------------------------

    def stack(self) -> tuple[str, list[Layer]]:
        r = self.r
        base = r.choice(["jit", "sig", "sig"])
        ad = self.ad if self.ad is not None else r.random() < 0.45
        depth = r.choice([0, 1, 1, 2, 2, 3]) if not ad else r.choice([1, 1, 2, 2, 3])
        layers: list[Layer] = []
        for k in range(depth):
            if ad and k == 0:
                kind = r.choice(["grad", "grad", "grad_and_value", "hessian", "jacrev", "jacfwd"])
            elif ad:
                kind = r.choice(["vmap", "vmap", "jacrev", "jacfwd"])
            else:
                kind = "vmap"
            layers.append(Layer(kind))
        if ad and layers[0].kind in ("jacrev", "jacfwd") and r.random() < 0.3:
            layers.insert(0, Layer("vmap"))
            layers = layers[:3]
        layers[0:1] = [replace(layers[0], wrap_raw=r.random() < 0.5)] if layers else []
        # at most third derivatives: a fourth (hessian under jacrev under jacfwd) takes minutes to
        # build its IR, which grows with every nested basis
        while sum(2 if lay.kind == "hessian" else lay.kind in AD_KINDS for lay in layers) > 3:
            layers.pop()
        if r.random() < 0.15:
            pos = r.randint(0, len(layers))
            if pos == 0 and layers:
                layers[0] = replace(layers[0], wrap_raw=False)
            layers.insert(pos, Layer("inline", wrap_raw=pos == 0 and r.random() < 0.5))
        for k, layer in enumerate(layers):
            reverse_above = any(lay.kind in AD_KINDS for lay in layers[k + 1:])   # refused: documented
            if layer.kind in ("vmap", "jacrev", "jacfwd", "hessian") and r.random() < 0.2 and not reverse_above:
                layer.chunk_size = r.choice([1, 2])
            if layer.kind == "vmap" and r.random() < 0.2:
                layer.out_dims = -1
        return base, layers

    def generate(self) -> Program:
        r = self.r
        base, layers = self.stack()
        nargs = r.randint(1, 3)
        ad = any(layer.kind in AD_KINDS for layer in layers)
        big = not ad and r.random() < 0.35
        env_a, env_b = (BIG_ENV_A, BIG_ENV_B) if big else (ENV_A, ENV_B)
        self.max_size = BIG_MAX_SIZE if big else MAX_SIZE
        arg_types = []
        for i in range(nargs):
            if ad and i == 0:
                dt = "f64"
            else:
                dt = r.choice(["f64", "f64", "f64", "f32", "f32", "i32", "i64", "bool"] if not (ad or big) else
                              ["f64", "f64", "f64", "i32", "i64", "bool"])
            rank = r.choice([0, 1, 1, 2, 2, 3] if not big else [1, 1, 2, 2, 3])
            dims = tuple(r.choice(BIG_DIMS if big else ["1", "2", "3", "n", "n", "m"]) for _ in range(rank))
            arg_types.append((dt, dims))
        float_args = [i for i, (dt, _) in enumerate(arg_types) if dt == "f64"]
        # batch layers: in_dims per argument of the stack's input
        for layer in layers:
            if layer.kind == "vmap":
                layer.size = r.choice([1, 2, 2, 3])
                layer.in_dims = tuple(r.choice([None, 0, 0]) for _ in range(nargs))
                if all(d is None for d in layer.in_dims):
                    layer.in_dims = (0,) + layer.in_dims[1:]
            elif layer.kind in AD_KINDS:
                k = r.randint(1, len(float_args))
                nums = tuple(r.sample(float_args, k))          # in any order
                layer.argnums = nums[0] if len(nums) == 1 and r.random() < 0.6 else nums
        # the vmap in_dims can be any axis of the batched argument: draw them from the outermost
        # layer inwards, knowing the rank each layer sees
        ranks = [len(d) for _, d in arg_types]
        vm = [layer for layer in layers if layer.kind == "vmap"]
        for layer in vm:                          # innermost first: the rank grows outwards
            layer.in_dims = tuple(None if d is None else r.randint(-ranks[i] - 1, ranks[i])
                                  for i, d in enumerate(layer.in_dims))
            for i, d in enumerate(layer.in_dims):
                if d is not None:
                    ranks[i] += 1
        # data: batch axes (outermost vmap first) + the per-example shape in env A; env B
        outer_first = list(reversed(vm))
        self.data, self.data_b = [], []
        for i, (dt, dims) in enumerate(arg_types):
            batch = tuple(layer.size for layer in outer_first if layer.in_dims[i] is not None)
            sa = tuple(env_a[d] if d in env_a else int(d) for d in dims)
            sb = tuple(env_b[d] if d in env_b else int(d) for d in dims)
            self.data.append(draw_array(self.np_rng, DTYPES[dt], batch + sa))
            self.data_b.append(draw_array(self.np_rng, DTYPES[dt], sb))
        self.batched_args = frozenset(i for layer in vm for i, d in enumerate(layer.in_dims) if d is not None)
        self.diff_args = frozenset(a for layer in layers if layer.kind in AD_KINDS
                                   for a in (layer.argnums if isinstance(layer.argnums, tuple) else (layer.argnums,)))
        self.ad_active = ad
        self.reverse = any(layer.kind in ("grad", "grad_and_value", "jacrev", "hessian") for layer in layers)
        prog = Program(self.seed, arg_types, [], [], base, layers)
        prog.data, prog.data_b = self.data, self.data_b
        self.envs = []
        for args in example_sets(prog):
            self.envs.append({f"x{i}": a for i, a in enumerate(args)})
        self.vars = [Var(f"x{i}", DTYPES[dt], tuple(zip(self.envs[0][f"x{i}"].shape, self.data_b[i].shape)),
                         frozenset([i])) for i, (dt, _) in enumerate(arg_types)]
        self.stmts: list[Stmt] = []
        self.counter = 0
        self.has_f32 = any(dt == "f32" for dt, _ in arg_types)
        n_stmts = r.randint(1, 12)
        kinds, weights = zip(*self.KINDS)
        tries = 0
        while len(self.stmts) < n_stmts and tries < 200:
            tries += 1
            kind = r.choices(kinds, weights)[0]
            getattr(self, f"st_{kind}")()
        self.finish(prog, layers)
        prog.stmts, prog.has_f32, prog.big = self.stmts, self.has_f32, big
        chunked = any(layer.chunk_size for layer in layers)     # reverse mode refuses chunked vmap
        tops = ["jvp"] if chunked else ["jvp", "vjp"]
        if ad and r.random() < 0.3:
            prog.top.append(r.choice(tops if self.reverse else ["jvp"]))
        elif not ad and all(dt == "f64" for dt, _ in arg_types) and r.random() < 0.25:
            prog.top.append(r.choice(tops))
        return prog

    def finish(self, prog: Program, layers: list[Layer]) -> None:
        """The result: a scalar float64 for grad, a small float64 array for the Jacobians and the
        top-level jvp/vjp checks, one or two values otherwise."""
        first_ad = next((layer.kind for layer in layers if layer.kind in AD_KINDS), None)
        floats = [v for v in self.vars if v.dtype == np.float64]
        if first_ad is None:
            outs = [self.vars[-1]]
            if len(self.vars) > 2 and self.chance(0.3):
                outs.insert(0, self.r.choice(self.vars[:-1]))
            prog.results = [v.name for v in outs]
            return
        v = floats[-1] if floats else None
        if v is None:
            v = self.vars[-1]
            name = self.new_name()
            self.add([f"{name} = {v.name}.astype(np.float64)"], name, [v])
            v = self.vars[-1]
        scalar = first_ad in ("grad", "grad_and_value", "hessian")
        if scalar or int(np.prod([max(d) for d in v.shape])) > 6:
            name = self.new_name()
            red = self.r.choice(["np.sum({a})", "np.sum({a} * {a})", "np.mean(np.sin({a}))"])
            if not scalar and v.rank >= 1:
                red = self.r.choice(["np.sum({a}, axis=0)", "np.sum({a})"])
            if not self.add([f"{name} = " + red.format(a=v.name)], name, [v]):
                self.add([f"{name} = np.sum({v.name})"], name, [v])
            v = self.vars[-1]
            if scalar and v.rank > 0:
                name = self.new_name()
                self.add([f"{name} = np.sum({v.name})"], name, [v])
                v = self.vars[-1]
        prog.results = [v.name]


def generate(seed: int, *, ad: bool | None = None) -> Program:
    return Generator(seed, ad=ad).generate()


def dead_code_eliminate(prog: Program) -> Program:
    """Drop the statements no result depends on."""
    live = set(prog.results)
    keep = []
    for s in reversed(prog.stmts):
        if s.target in live:
            keep.append(s)
            live |= set(s.uses)
    return replace(prog, stmts=list(reversed(keep)))
