"""Array dimensions: integers or symbolic expressions over named sizes.

A signature like ``f64[n, 3]`` makes ``n`` a symbol: one kernel serves every
size. Shape rules then produce expressions (``n - 1`` for ``x[1:]``, ``3*n``
for a reshape to ``(-1,)``, ``n + m`` for a concatenation), which are kept in
a canonical polynomial form so that equal expressions compare equal.

>>> n = Sym("n")
>>> str(3 * n + n - 1)
'4*n - 1'
>>> (n + 1) - 1 == n
True
>>> evaluate(floordiv(n + 1, 2), {"n": 7})
4
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterable, Mapping, Union

# A monomial is a sorted tuple of atom names; the empty tuple is the constant term.
Monomial = tuple[str, ...]


@dataclass(frozen=True)
class Atom:
    """A non-polynomial sub-expression: floordiv, min or max of dims."""

    kind: str  # "floordiv" | "min" | "max"
    args: tuple["Dim", ...]

    def __str__(self) -> str:
        a, b = (str(x) for x in self.args)
        if self.kind == "floordiv":
            # a sum is parenthesized: (n + 1) // 2 is not n + (1 // 2)
            return f"(({a}) // {b})" if " " in a else f"({a} // {b})"
        return f"{self.kind}({a}, {b})"


_ATOMS: dict[str, Atom] = {}


@dataclass(frozen=True)
class DimExpr:
    """A polynomial with integer coefficients over symbols and atoms."""

    terms: tuple[tuple[Monomial, int], ...]

    @staticmethod
    def make(terms: Mapping[Monomial, int]) -> "Dim":
        items = tuple(sorted((m, c) for m, c in terms.items() if c != 0))
        if not items:
            return 0
        if len(items) == 1 and items[0][0] == ():
            return items[0][1]
        return DimExpr(items)

    def _terms(self) -> dict[Monomial, int]:
        return dict(self.terms)

    def __add__(self, other: "Dim") -> "Dim":
        return add(self, other)

    __radd__ = __add__

    def __sub__(self, other: "Dim") -> "Dim":
        return add(self, mul(other, -1))

    def __rsub__(self, other: "Dim") -> "Dim":
        return add(other, mul(self, -1))

    def __mul__(self, other: "Dim") -> "Dim":
        return mul(self, other)

    __rmul__ = __mul__

    def __neg__(self) -> "Dim":
        return mul(self, -1)

    @property
    def symbols(self) -> frozenset[str]:
        out: set[str] = set()
        for mono, _ in self.terms:
            for name in mono:
                atom = _ATOMS.get(name)
                if atom is None:
                    out.add(name)
                else:
                    for a in atom.args:
                        out |= symbols(a)
        return frozenset(out)

    def __str__(self) -> str:
        parts = []
        for mono, coef in sorted(self.terms, key=lambda t: (-len(t[0]), t[0])):
            body = "*".join(str(_ATOMS.get(a, a)) for a in mono)
            if not body:
                parts.append(str(coef))
            elif coef == 1:
                parts.append(body)
            elif coef == -1:
                parts.append("-" + body)
            else:
                parts.append(f"{coef}*{body}")
        text = parts[0]
        for p in parts[1:]:
            text += f" - {p[1:]}" if p.startswith("-") else f" + {p}"
        return text

    __repr__ = __str__


Dim = Union[int, DimExpr]


def Sym(name: str) -> DimExpr:  # noqa: N802 - reads like a constructor
    """The symbolic dimension called `name`."""
    if not name.isidentifier():
        raise ValueError(f"symbolic dimension must be an identifier, got {name!r}")
    return DimExpr(((((name,)), 1),))


def _as_terms(d: Dim) -> dict[Monomial, int]:
    return {(): d} if isinstance(d, int) else d._terms()


def add(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    terms = _as_terms(a)
    for m, c in _as_terms(b).items():
        terms[m] = terms.get(m, 0) + c
    return DimExpr.make(terms)


def mul(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    out: dict[Monomial, int] = {}
    for ma, ca in _as_terms(a).items():
        for mb, cb in _as_terms(b).items():
            m = tuple(sorted(ma + mb))
            out[m] = out.get(m, 0) + ca * cb
    return DimExpr.make(out)


def product(shape: Iterable[Dim]) -> Dim:
    """The number of elements of an array of `shape` (1 for a 0-d one)."""
    total: Dim = 1
    for d in shape:
        total = mul(total, d)
    return total


def _atom(kind: str, *args: Dim) -> DimExpr:
    atom = Atom(kind, args)
    name = str(atom)
    _ATOMS[name] = atom
    return DimExpr((((name,), 1),))


def floordiv(a: Dim, b: int) -> Dim:
    """a // b for a positive integer b (Python floor semantics)."""
    if b <= 0:
        raise ValueError("floordiv of a dimension by a non-positive integer")
    if isinstance(a, int):
        return a // b
    if b == 1:
        return a
    terms = _as_terms(a)
    if all(c % b == 0 for c in terms.values()):
        return DimExpr.make({m: c // b for m, c in terms.items()})
    return _atom("floordiv", a, b)


def minimum(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return min(a, b)
    if a == b:
        return a
    diff = add(a, mul(b, -1))
    if nonnegative(diff):
        return b
    if nonnegative(mul(diff, -1)):
        return a
    return _atom("min", *sorted((a, b), key=str))


def maximum(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b)
    if a == b:
        return a
    diff = add(a, mul(b, -1))
    if nonnegative(diff):
        return a
    if nonnegative(mul(diff, -1)):
        return b
    if b == 0 or a == 0:
        x = a if b == 0 else b
        inner = _clamped(x)
        if inner is not None:          # max(max(e, 0) + c, 0) = max(e + c, 0) for c <= 0
            return maximum(inner, 0)
    return _atom("max", *sorted((a, b), key=str))


def _clamped(x: Dim) -> Dim | None:
    """e + c when x is max(e, 0) + c with a constant c <= 0, else None."""
    if isinstance(x, int):
        return None
    terms = x._terms()
    const = terms.pop((), 0)
    if const > 0 or len(terms) != 1:
        return None
    ((mono, coef),) = terms.items()
    atom = _ATOMS.get(mono[0]) if len(mono) == 1 else None
    if coef != 1 or atom is None or atom.kind != "max" or 0 not in atom.args:
        return None
    e = atom.args[1] if atom.args[0] == 0 else atom.args[0]
    return add(e, const)


def clamp0(d: Dim) -> Dim:
    """max(d, 0): a length that a formula may compute as negative."""
    return maximum(d, 0)


def nonnegative(d: Dim) -> bool:
    """Is `d` >= 0 for every value of its symbols (all sizes are >= 0)? False when unknown."""
    if isinstance(d, int):
        return d >= 0
    for mono, coef in d.terms:
        if coef < 0:
            return False
        for name in mono:
            atom = _ATOMS.get(name)
            if atom is None:
                continue
            a, b = atom.args
            if atom.kind == "max":
                if not (nonnegative(a) or nonnegative(b)):
                    return False
            elif not (nonnegative(a) and nonnegative(b)):
                return False
    return True


def symbols(d: Dim) -> frozenset[str]:
    return frozenset() if isinstance(d, int) else d.symbols


def evaluate(d: Dim, env: Mapping[str, int]) -> int:
    """The value of `d` once every symbol has a size."""
    if isinstance(d, int):
        return d
    total = 0
    for mono, coef in d.terms:
        value = coef
        for name in mono:
            atom = _ATOMS.get(name)
            value *= env[name] if atom is None else _eval_atom(atom, env)
        total += value
    return total


def _eval_atom(atom: Atom, env: Mapping[str, int]) -> int:
    a, b = (evaluate(x, env) for x in atom.args)
    return {"floordiv": lambda: a // b, "min": lambda: min(a, b), "max": lambda: max(a, b)}[atom.kind]()


def atom_of(name: str) -> Atom | None:
    """The Atom a monomial factor names, or None for a plain symbol."""
    return _ATOMS.get(name)


def is_static(d: Dim) -> bool:
    return isinstance(d, int)


def parse_dim(text: str) -> Dim:
    """Parse a printed dim ('3', 'n', '2*n + 1', '(n // 2)', 'min(n, 4)')."""
    return _parse(ast.parse(text.strip(), mode="eval").body)


def _parse(node: ast.expr) -> Dim:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name):
        return Sym(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return mul(_parse(node.operand), -1)
    if isinstance(node, ast.BinOp):
        a, b = _parse(node.left), _parse(node.right)
        ops = {ast.Add: add, ast.Mult: mul, ast.Sub: lambda x, y: add(x, mul(y, -1))}
        if isinstance(node.op, ast.FloorDiv):
            assert isinstance(b, int)
            return floordiv(a, b)
        return ops[type(node.op)](a, b)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        fn = {"min": minimum, "max": maximum}[node.func.id]
        return fn(*(_parse(a) for a in node.args))
    raise ValueError(f"cannot parse dimension {ast.unparse(node)!r}")
