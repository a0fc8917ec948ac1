"""Read the printer's text (compiler/ir/printer.py) back into a :class:`Function`.

Round trips are exact: ``parse(format_function(fn))`` is structurally equal to
``fn`` (:func:`functions_equal`), and printing it again gives the same text. Pass
tests are therefore written as IR text in, IR text out (tests/transforms/passes/).
Ops are rebuilt through the :class:`Builder`, so every shape rule runs; a result
type that differs from the printed one is an error, as is an unknown primitive.
Errors are :class:`IRParseError` (a ``ValueError``) with the line and column.

Grammar (``#`` starts a comment; ``# file.py:12`` after an op is its location)::

    function := 'func' '@'NAME '(' args? ')' '->' '(' types? ')' '{' block('return') '}'
    args     := VALUE ':' type (',' VALUE ':' type)*
    block(k) := op* k (VALUE (',' VALUE)*)?
    op       := (VALUE (',' VALUE)* '=')? PRIM '(' (VALUE (',' VALUE)*)? ')'
                ('{' (NAME '=' value (',' NAME '=' value)*)? '}')? ':' results region*
    results  := '(' ')' | type (',' type)*
    region   := '{' '^' '(' args? ')' ':' block('yield') '}'
    type     := DTYPE '[' (dim (',' dim)*)? ']'           f64[n, 3], bool[]
    VALUE    := '%' NAME | '%' DIGITS
    value    := value ('+' | '-') value | value '*' value | '-' value | INT | FLOAT
              | STRING | None | True | False | inf | nan | SYMBOL | '(' value '//' INT ')'
              | ('min' | 'max') '(' value ',' value ')' | DTYPE | type | DTYPE '(' value ')'
              | '(' ')' | '(' value ',' ')' | '(' value (',' value)+ ')' | '[' values ']'
              | '{' value ':' value, ... '}' | 'array' '(' ... ')' | 'py' '(' STRING ')'
              | 'tree' '(' ... ')' | '*' | '*weak' | 'vmap' '(' 'size' '=' ... ')'

The printer's docstring shows each param form; arithmetic (``*`` binds tighter
than ``+``/``-``), floor division and min/max apply to integers and symbols only
and give the same canonical dims as compiler/ir/dims.py.
A region sees only its own arguments (regions are isolated), so a name may be
reused in another region. ``py('module:qualname')`` imports the module (or looks
the name up in ``objects``): read only text you trust.

>>> fn = parse('''
... func @f(%x: f64[n]) -> (f64[]) {
...   %0 = exp(%x) : f64[n]
...   %1 = reduce_sum(%0) {axes=(0,)} : f64[]
...   return %1
... }''')
>>> [op.prim.name for op in fn.body.ops]
['exp', 'reduce_sum']
>>> fn.results[0].type
f64[]
>>> parse_value("(2*n + 1, (m // 2))")
(2*n + 1, (m // 2))
"""
from __future__ import annotations

import ast
import base64
import binascii
import difflib
import importlib
import math
import re
from dataclasses import fields, is_dataclass
from typing import Any, Callable, Mapping, NamedTuple, NoReturn

import numpy as np

from compiler.ir import dims
from compiler.ir.builder import Builder, new_block
from compiler.ir.core import Block, Function, SourceLoc, Value
from compiler.ir import params as pt
from compiler.ir.dims import Dim, DimExpr
from compiler.ir.params import ArraySlot, BatchLayer, StaticLeaf
from compiler.ir.types import BY_SHORT_NAME, TensorType
from compiler.ir.primitive import REGISTRY, Primitive

__all__ = ["IRParseError", "parse", "parse_params", "parse_value",
           "functions_equal", "first_difference"]


class IRParseError(ValueError):
    """Malformed IR text: the message starts with ``line L, column C:`` and quotes the line."""

    def __init__(self, message: str, line: int, col: int, source_line: str = "") -> None:
        text = f"line {line}, column {col}: {message}"
        if source_line:
            text += f"\n    {source_line}\n    {' ' * (col - 1)}^"
        super().__init__(text)
        self.line, self.col = line, col


# ---- tokens ----------------------------------------------------------------------------------

class Token(NamedTuple):
    """One token and where it starts."""

    kind: str      # value | func | string | number | ident | punct | end
    text: str
    line: int
    col: int       # 1-based


_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<comment>\#[^\n]*)
  | (?P<value>%\w+)
  | (?P<func>@[^\s(]+)
  | (?P<string>'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")
  | (?P<number>\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+)
  | (?P<ident>[^\W\d]\w*)
  | (?P<punct>->|//|[()\[\]{},:=*+\-^])
  | (?P<other>.)
""", re.VERBOSE)

_LOC_COMMENT = re.compile(r"#\s*(?P<file>\S.*):(?P<line>\d+)\s*$")


def _tokenize(text: str, lines: list[str]) -> tuple[list[Token], dict[int, str]]:
    """The tokens, and the comment text per line (a comment may be an op's location)."""
    tokens: list[Token] = []
    comments: dict[int, str] = {}
    line, line_start = 1, 0
    for m in _TOKEN.finditer(text):
        kind, word = m.lastgroup or "", m.group()
        if kind == "space":
            if "\n" in word:
                line += word.count("\n")
                line_start = m.start() + word.rfind("\n") + 1
            continue
        col = m.start() - line_start + 1
        if kind == "other":
            raise IRParseError(f"unexpected character {word!r}", line, col, lines[line - 1])
        if kind == "comment":
            comments[line] = word
        else:
            tokens.append(Token(kind, word, line, col))
    # the end of the text is reported just after its last character
    body = text.rstrip()
    last_line = body.count("\n") + 1
    tokens.append(Token("end", "", last_line, len(body) - (body.rfind("\n") + 1) + 1))
    return tokens, comments


# ---- the parser ------------------------------------------------------------------------------

#: the dtypes by their short names (types.BY_SHORT_NAME, typed)
_DTYPES: dict[str, np.dtype[Any]] = BY_SHORT_NAME
_DIM_FUNCS: dict[str, Callable[[Dim, Dim], Dim]] = {"min": dims.minimum, "max": dims.maximum}
_CONSTANTS: dict[str, Any] = {"None": None, "True": True, "False": False,
                              "inf": math.inf, "nan": math.nan}


class _Parser:
    """Recursive descent over the token list; one instance per text."""

    def __init__(self, text: str, filename: str, objects: Mapping[str, Any]) -> None:
        self.lines = text.splitlines() or [""]
        self.tokens, self.comments = _tokenize(text, self.lines)
        self.pos = 0
        self.filename = filename
        self.objects = objects
        self.builder = Builder()

    # -- token helpers --
    def peek(self) -> Token:
        return self.tokens[self.pos]

    def next(self) -> Token:
        tok = self.tokens[self.pos]
        if tok.kind != "end":         # the end token stays put
            self.pos += 1
        return tok

    def at(self, text: str) -> bool:
        tok = self.peek()
        return tok.text == text and tok.kind in ("punct", "ident")

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.next()
            return True
        return False

    def expect(self, text: str, what: str = "") -> Token:
        if not self.at(text):
            self.fail(f"expected {text!r}{' ' + what if what else ''}, found {self.describe(self.peek())}")
        return self.next()

    def expect_kind(self, kind: str, what: str) -> Token:
        if self.peek().kind != kind:
            self.fail(f"expected {what}, found {self.describe(self.peek())}")
        return self.next()

    @staticmethod
    def describe(tok: Token) -> str:
        return "the end of the text" if tok.kind == "end" else repr(tok.text)

    def fail(self, message: str, tok: Token | None = None) -> NoReturn:
        tok = tok or self.peek()
        source = self.lines[tok.line - 1] if tok.line <= len(self.lines) else ""
        raise IRParseError(message, tok.line, tok.col, source)

    def comma_list(self, item: Callable[[], Any], close: str) -> list[Any]:
        """``item (',' item)*`` up to `close` (consumed); a trailing comma is allowed."""
        out: list[Any] = []
        while not self.accept(close):
            out.append(item())
            if not self.accept(","):
                self.expect(close)
                break
        return out

    # -- functions, blocks, ops --
    def function(self) -> Function:
        self.expect("func", "at the start of a function")
        name = self.expect_kind("func", "a function name like @f").text[1:]
        self.expect("(")
        scope: dict[str, Value] = {}
        block = self.block_args(scope)
        self.expect("->")
        self.expect("(")
        out_tok = self.peek()
        out_types = self.comma_list(self.type_, ")")
        self.expect("{")
        self.block_body(block, scope, "return")
        self.expect("}", "closing the function")
        got = [r.type for r in block.results]
        if got != out_types:
            self.fail(f"@{name} returns {_types(got)} but its signature says {_types(out_types)}", out_tok)
        hints = [a.hint for a in block.args]
        return Function(name, block, hints if any(hints) else [])

    def block_args(self, scope: dict[str, Value]) -> Block:
        """``(%a: type, ...)`` after the opening parenthesis: a block with those arguments."""
        def arg() -> tuple[Token, TensorType]:
            tok = self.expect_kind("value", "an argument name like %x")
            self.expect(":")
            return tok, self.type_()
        decls = self.comma_list(arg, ")")
        block = new_block([t for _, t in decls], [_hint(tok.text) for tok, _ in decls])
        for (tok, _), value in zip(decls, block.args):
            self.define(scope, tok, value)
        return block

    def define(self, scope: dict[str, Value], tok: Token, value: Value) -> None:
        if tok.text in scope:
            self.fail(f"{tok.text} is defined twice", tok)
        scope[tok.text] = value

    def use(self, scope: dict[str, Value], outer: list[dict[str, Value]]) -> Value:
        tok = self.expect_kind("value", "a value like %0")
        if tok.text in scope:
            return scope[tok.text]
        if any(tok.text in s for s in outer):
            self.fail(f"{tok.text} is defined outside this region; regions are isolated "
                      f"(pass it as an operand and use the region's argument)", tok)
        return self.fail(f"{tok.text} is not defined (values must be defined before they are used)", tok)

    def block_body(self, block: Block, scope: dict[str, Value], keyword: str,
                   outer: list[dict[str, Value]] | None = None) -> None:
        outer = outer or []
        while not self.at(keyword):
            if self.peek().kind == "end" or self.at("}"):
                self.fail(f"expected an op or {keyword!r}, found {self.describe(self.peek())}")
            self.op(block, scope, outer)
        self.next()
        if self.peek().kind == "value":
            block.results = [self.use(scope, outer)]
            while self.accept(","):
                block.results.append(self.use(scope, outer))

    def op(self, block: Block, scope: dict[str, Value], outer: list[dict[str, Value]]) -> None:
        first = self.peek()
        names: list[Token] = []
        if first.kind == "value":
            names.append(self.next())
            while self.accept(","):
                names.append(self.expect_kind("value", "a result name like %1"))
            self.expect("=")
        prim_tok = self.expect_kind("ident", "a primitive name")
        prim = self.primitive(prim_tok)
        self.expect("(")
        operands = self.comma_list(lambda: self.use(scope, outer), ")")
        params = self.params() if self.at("{") else {}
        self.expect(":", "before the result types")
        types_tok = self.peek()
        result_types = self.result_types()
        header_end = self.tokens[self.pos - 1].line
        loc = self.location(header_end if not self.at("{") else self.peek().line, first)
        regions = []
        while self.at("{"):
            regions.append(self.region(outer + [scope]))
        with self.builder.inside(block), self.builder.at(loc):
            try:
                results = self.builder.emit(prim, operands, params, regions)
            except Exception as e:  # noqa: BLE001  (any rejection of the rule is a text error)
                self.fail(f"{prim.name}: the shape rule rejects this op: {type(e).__name__}: {e}", prim_tok)
        got = [r.type for r in results]
        if got != result_types:
            self.fail(f"{prim.name} gives {_types(got)} but the text says {_types(result_types)}", types_tok)
        if len(names) != len(results):
            self.fail(f"{prim.name} has {len(results)} result(s) but {len(names)} name(s) are given", first)
        for tok, value in zip(names, results):
            value.hint = _hint(tok.text)
            self.define(scope, tok, value)

    def primitive(self, tok: Token) -> Primitive:
        if tok.text not in REGISTRY:
            # the primitives register themselves when compiler.primitives is imported, which
            # `import compiler` defers to the first compile (a cached kernel needs none)
            importlib.import_module("compiler.primitives")
        try:
            return REGISTRY[tok.text]
        except KeyError:
            close = difflib.get_close_matches(tok.text, list(REGISTRY), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            return self.fail(f"unknown primitive {tok.text!r}{hint}", tok)

    def location(self, line: int, first: Token) -> SourceLoc:
        m = _LOC_COMMENT.match(self.comments.get(line, ""))
        if m is not None:
            return SourceLoc(m.group("file").strip(), int(m.group("line")))
        return SourceLoc(self.filename, first.line, first.col - 1)

    def region(self, outer: list[dict[str, Value]]) -> Block:
        self.expect("{", "opening a region")
        self.expect("^", "before the region's arguments")
        self.expect("(")
        scope: dict[str, Value] = {}
        block = self.block_args(scope)
        self.expect(":")
        self.block_body(block, scope, "yield", outer)
        self.expect("}", "closing the region")
        return block

    def result_types(self) -> list[TensorType]:
        if self.accept("("):
            self.expect(")", "(an op without results is written ': ()')")
            return []
        types_ = [self.type_()]
        while self.accept(","):
            types_.append(self.type_())
        return types_

    def type_(self) -> TensorType:
        tok = self.expect_kind("ident", "a type like f64[n, 3]")
        if tok.text not in _DTYPES:
            self.fail(f"unknown dtype {tok.text!r} (use one of {', '.join(_DTYPES)})", tok)
        self.expect("[", "after the dtype (a scalar is written f64[])")
        return TensorType(_DTYPES[tok.text], tuple(self.comma_list(self.dim, "]")))

    def dim(self) -> Dim:
        tok = self.peek()
        d = self.value()
        if isinstance(d, bool) or not isinstance(d, (int, DimExpr)):
            self.fail(f"expected a dimension, found {d!r}", tok)
        if isinstance(d, int) and d < 0:
            self.fail(f"negative dimension {d}", tok)
        return d

    # -- param values --
    def params(self) -> dict[str, Any]:
        self.expect("{")

        def entry() -> tuple[str, Any]:
            key = self.expect_kind("ident", "a param name")
            self.expect("=")
            return key.text, self.value()
        out: dict[str, Any] = {}
        for key, value in self.comma_list(entry, "}"):
            if key in out:
                self.fail(f"param {key!r} is given twice")
            out[key] = value
        return out

    def value(self) -> Any:
        """sum := product (('+' | '-') product)*: arithmetic applies to dims only."""
        v = self.product()
        while self.at("+") or self.at("-"):
            tok = self.next()
            rhs = self.product()
            v = self.arith(tok, v, rhs if tok.text == "+" else self.negate(tok, rhs), dims.add)
        return v

    def product(self) -> Any:
        v = self.unary()
        while self.at("*"):
            tok = self.next()
            v = self.arith(tok, v, self.unary(), dims.mul)
        return v

    def unary(self) -> Any:
        if self.at("-"):
            tok = self.next()
            return self.negate(tok, self.unary())
        return self.primary()

    def arith(self, tok: Token, a: Any, b: Any, op: Callable[[Dim, Dim], Dim]) -> Dim:
        if not (_is_dim(a) and _is_dim(b)):
            self.fail(f"{tok.text!r} applies to integers and dimensions, not {a!r} and {b!r}", tok)
        return op(a, b)

    def negate(self, tok: Token, v: Any) -> Any:
        if isinstance(v, float):
            return -v
        if not _is_dim(v):
            self.fail(f"cannot negate {v!r}", tok)
        return dims.mul(v, -1)

    def primary(self) -> Any:
        tok = self.peek()
        if tok.kind == "number":
            self.next()
            return int(tok.text) if tok.text.isdigit() else float(tok.text)
        if tok.kind == "string":
            return self.string()
        if tok.kind == "ident":
            return self.named(tok)
        if self.accept("("):
            return self.parenthesized()
        if self.accept("["):
            return self.comma_list(self.value, "]")
        if self.accept("{"):
            return dict(self.comma_list(self.dict_entry, "}"))
        if self.accept("*"):
            return self.array_slot(tok)
        return self.fail(f"expected a param value, found {self.describe(tok)}", tok)

    def string(self) -> str:
        tok = self.expect_kind("string", "a quoted string")
        try:
            text = ast.literal_eval(tok.text)
        except (ValueError, SyntaxError) as e:
            self.fail(f"invalid string: {e}", tok)
        assert isinstance(text, str)
        return text

    def parenthesized(self) -> Any:
        """A tuple, ``(x)``, or a floor division ``(a // k)``."""
        if self.accept(")"):
            return ()
        first = self.value()
        if self.at("//"):
            tok = self.next()
            k = self.value()
            if not _is_dim(first) or not isinstance(k, int) or k <= 0:
                self.fail(f"'//' needs a dimension and a positive integer, not {first!r} and {k!r}", tok)
            self.expect(")")
            return dims.floordiv(first, k)
        if self.accept(")"):
            return first
        self.expect(",", "or ')'")
        return tuple([first] + self.comma_list(self.value, ")"))

    def dict_entry(self) -> tuple[Any, Any]:
        key = self.value()
        self.expect(":")
        return key, self.value()

    def named(self, tok: Token) -> Any:
        self.next()
        name = tok.text
        calls: dict[str, Callable[[Token], Any]] = {
            "array": self.array, "py": self.python_object, "tree": self.tree, "vmap": self.batch_layer,
            "complex": self.complex_number}
        if name in _CONSTANTS:
            return _CONSTANTS[name]
        if name in _DTYPES:
            return self.dtype_form(tok)
        if name in calls and self.at("("):
            return calls[name](tok)
        if name in _DIM_FUNCS and self.accept("("):
            a = self.value()
            self.expect(",")
            b = self.value()
            self.expect(")")
            return self.arith(tok, a, b, _DIM_FUNCS[name])
        return dims.Sym(name)

    def dtype_form(self, tok: Token) -> Any:
        """``f32`` (a dtype), ``f32[n, 3]`` (a type) or ``f32(1.5)`` (a NumPy scalar)."""
        dtype = _DTYPES[tok.text]
        if self.accept("["):
            return TensorType(dtype, tuple(self.comma_list(self.dim, "]")))
        if self.accept("("):
            v_tok = self.peek()
            v = self.value()
            self.expect(")")
            try:
                return np.array(v, dtype)[()]
            except (TypeError, ValueError, OverflowError) as e:
                self.fail(f"not a {tok.text} value: {e}", v_tok)
        return dtype

    def complex_number(self, tok: Token) -> complex:
        """``complex(re, im)``: an element of a complex array or scalar."""
        self.expect("(")
        re_tok = self.peek()
        re = self.value()
        self.expect(",")
        im = self.value()
        self.expect(")")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (re, im)):
            self.fail(f"complex(re, im) takes two numbers, not {re!r}, {im!r}", re_tok)
        return complex(re, im)

    def array(self, tok: Token) -> np.ndarray:
        """``array([elements], dtype, shape=(...))`` or ``array(base64('...'), dtype, shape=...)``."""
        self.expect("(")
        data_tok = self.peek()
        if self.accept("base64"):
            self.expect("(")
            raw: list[Any] | bytes = self.base64_bytes()
            self.expect(")")
        else:
            self.expect("[", "(the elements) or base64('...')")
            raw = self.comma_list(self.value, "]")
        self.expect(",")
        dtype_tok = self.peek()
        dtype = self.value()
        if not isinstance(dtype, np.dtype):
            self.fail(f"expected the array's dtype, found {dtype!r}", dtype_tok)
        self.expect(",")
        self.expect("shape")
        self.expect("=")
        shape_tok = self.peek()
        shape = self.value()
        self.expect(")")
        if not isinstance(shape, tuple) or not all(_is_dim(d) and isinstance(d, int) and d >= 0
                                                   for d in shape):
            self.fail(f"an array's shape is a tuple of integers, not {shape!r}", shape_tok)
        size = math.prod(shape)
        if isinstance(raw, bytes):
            if len(raw) != size * dtype.itemsize:
                self.fail(f"{len(raw)} bytes for {size} elements of {dtype}", data_tok)
            return np.frombuffer(raw, dtype.newbyteorder("<")).astype(dtype).reshape(shape)
        if len(raw) != size:
            self.fail(f"{len(raw)} elements for shape {shape}", data_tok)
        try:
            return np.array(raw, dtype).reshape(shape)
        except (TypeError, ValueError, OverflowError) as e:
            self.fail(f"array elements are not {dtype}: {e}", data_tok)

    def base64_bytes(self) -> bytes:
        tok = self.peek()
        try:
            return base64.b64decode(self.string(), validate=True)
        except (binascii.Error, ValueError):
            self.fail("invalid base64 data", tok)

    def python_object(self, tok: Token) -> Any:
        """``py('module:qualname')``: a class or function, from `objects` or by import."""
        self.expect("(")
        ref = self.peek()
        path = self.string()
        self.expect(")")
        if path in self.objects:
            return self.objects[path]
        module, _, qualname = path.partition(":")
        try:
            obj: Any = importlib.import_module(module)
            for part in qualname.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError, ValueError) as e:
            return self.fail(f"cannot find the Python object {path!r} ({e}); pass it in "
                             f"parse(..., objects={{{path!r}: obj}})", ref)
        return obj

    def array_slot(self, tok: Token) -> Any:
        """``*`` or ``*weak``: where an array argument goes in a custom_function template."""
        nxt = self.peek()
        weak = nxt.text == "weak" and nxt.line == tok.line and nxt.col == tok.col + 1
        if weak:
            self.next()
        return ArraySlot(weak)

    def batch_layer(self, tok: Token) -> Any:
        """``vmap(size=n, in=(0, None), out=(0,))``: a layer of a custom_function."""
        self.expect("(")
        parts = []
        for i, key in enumerate(("size", "in", "out")):
            if i:
                self.expect(",")
            self.expect(key)
            self.expect("=")
            parts.append(self.value())
        self.expect(")")
        return BatchLayer(*parts)

    def tree(self, tok: Token) -> Any:
        self.expect("(")
        td = self.treedef()
        self.expect(")")
        return td

    def treedef(self) -> Any:
        """``*`` leaf, ``None``, ``static(v)``, ``(..)``, ``[..]``, ``{k: ..}``, ``py(..)(..)``."""
        tok = self.peek()
        if self.accept("*"):
            return pt.LEAF_DEF
        if self.accept("None"):
            return pt.PyTreeDef(pt.NONE)
        if self.accept("static"):
            self.expect("(")
            v = self.value()
            self.expect(")")
            return pt.PyTreeDef(pt.STATIC, pt.StaticLeaf(v))
        if self.accept("("):
            kids = self.tree_tuple()
            return pt.PyTreeDef(pt.TUPLE, None, tuple(kids))
        if self.accept("["):
            return pt.PyTreeDef(pt.LIST, None, tuple(self.comma_list(self.treedef, "]")))
        if self.accept("{"):
            items = self.comma_list(self.tree_entry, "}")
            return pt.PyTreeDef(pt.DICT, tuple(k for k, _ in items), tuple(c for _, c in items))
        if tok.text == "py":
            cls = self.named(tok)
            self.expect("(")
            return pt.PyTreeDef(pt.NAMEDTUPLE, cls, tuple(self.comma_list(self.treedef, ")")))
        return self.fail(f"expected a pytree (*, None, static(..), (..), [..], {{..}} or "
                         f"py(..)(..)), found {self.describe(tok)}", tok)

    def tree_tuple(self) -> list[Any]:
        kids: list[Any] = []
        while not self.accept(")"):
            kids.append(self.treedef())
            if not self.accept(","):
                self.expect(")")
                if len(kids) == 1:
                    self.fail("a one-element pytree tuple is written (x,)", self.tokens[self.pos - 1])
                break
        return kids

    def tree_entry(self) -> tuple[Any, Any]:
        key = self.value()
        self.expect(":")
        return key, self.treedef()


def _hint(name: str) -> str:
    """The readable name of `%name`; printer-made numbers are not names."""
    return "" if name[1:].isdigit() else name[1:]


def _is_dim(v: Any) -> bool:
    return isinstance(v, DimExpr) or (isinstance(v, int) and not isinstance(v, bool))


def _types(ts: list[TensorType]) -> str:
    return "(" + ", ".join(str(t) for t in ts) + ")"


# ---- entry points ----------------------------------------------------------------------------

def parse(text: str, *, filename: str = "<ir>", objects: Mapping[str, Any] | None = None) -> Function:
    """The function printed in `text` (exactly one). Ops without a ``# file:line`` comment
    get the location of their text (`filename`, line, column)."""
    p = _Parser(text, filename, objects or {})
    fn = p.function()
    if p.peek().kind != "end":
        p.fail(f"unexpected {p.describe(p.peek())} after the function")
    return fn



def parse_value(text: str) -> Any:
    """One param value, e.g. ``(0, None)``, ``2*n + 1``, ``f32`` or ``array([1, 2], i64, shape=(2,))``."""
    p = _Parser(text, "<value>", {})
    v = p.value()
    if p.peek().kind != "end":
        p.fail(f"unexpected {p.describe(p.peek())} after the value")
    return v


def parse_params(text: str) -> dict[str, Any]:
    """A param dict as printed after an op: ``{axes=(0,), dtype=f32}``."""
    p = _Parser(text, "<params>", {})
    params = p.params()
    if p.peek().kind != "end":
        p.fail(f"unexpected {p.describe(p.peek())} after the params")
    return params


# ---- structural equality ---------------------------------------------------------------------

def functions_equal(a: Function, b: Function) -> bool:
    """Same name, argument names, types, ops, params (exactly: dtypes, bits of floats and
    arrays, bool vs int) and dataflow, regions included. Value hints and locations are
    not compared (the printer shows neither in full)."""
    return first_difference(a, b) is None


def first_difference(a: Function, b: Function) -> str | None:
    """Where `a` and `b` first differ structurally (None when they are equal)."""
    if a.name != b.name:
        return f"names differ: {a.name!r} vs {b.name!r}"
    if _arg_names(a) != _arg_names(b):
        return f"argument names differ: {_arg_names(a)} vs {_arg_names(b)}"
    return _block_difference(a.body, b.body, {}, "body")


def _arg_names(fn: Function) -> list[str]:
    """The function's argument names: `arg_names`, or the arguments' hints when it has none."""
    return list(fn.arg_names) if fn.arg_names else [a.hint for a in fn.args]


def _block_difference(a: Block, b: Block, env: dict[Value, Value], where: str) -> str | None:
    if [v.type for v in a.args] != [v.type for v in b.args]:
        return f"{where}: argument types differ: {_types([v.type for v in a.args])} vs " \
               f"{_types([v.type for v in b.args])}"
    env.update(zip(a.args, b.args))
    if len(a.ops) != len(b.ops):
        return f"{where}: {len(a.ops)} ops vs {len(b.ops)}"
    for i, (x, y) in enumerate(zip(a.ops, b.ops)):
        at = f"{where}, op {i} ({x.prim.name})"
        if x.prim is not y.prim:
            return f"{at}: primitive differs: {y.prim.name}"
        if [env.get(v) for v in x.operands] != list(y.operands):
            return f"{at}: operands differ"
        if sorted(x.params) != sorted(y.params):
            return f"{at}: param names differ: {sorted(x.params)} vs {sorted(y.params)}"
        for key in x.params:
            if not params_equal(x.params[key], y.params[key]):
                return f"{at}: param {key} differs: {x.params[key]!r} vs {y.params[key]!r}"
        if [r.type for r in x.results] != [r.type for r in y.results]:
            return f"{at}: result types differ"
        if len(x.regions) != len(y.regions):
            return f"{at}: {len(x.regions)} regions vs {len(y.regions)}"
        for j, (rx, ry) in enumerate(zip(x.regions, y.regions)):
            diff = _block_difference(rx, ry, env, f"{at}, region {j}")
            if diff is not None:
                return diff
        env.update(zip(x.results, y.results))
    if [env.get(v) for v in a.results] != list(b.results):
        return f"{where}: yielded values differ"
    return None


def params_equal(a: Any, b: Any) -> bool:
    """Exact equality of param values: same types, float bits, array dtype/shape/bytes."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return bool(a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes())
    if isinstance(a, (float, np.generic)):
        return np.asarray(a).tobytes() == np.asarray(b).tobytes()
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(params_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(params_equal(a[k], b[k]) for k in a)
    if is_dataclass(a) and not isinstance(a, type) and not isinstance(a, TensorType):
        return all(params_equal(getattr(a, f.name), getattr(b, f.name)) for f in fields(a))
    if isinstance(a, StaticLeaf):
        return params_equal(a.value, b.value)
    return bool(a == b)
