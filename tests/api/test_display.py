"""Kernels and lowered stages in a REPL and a notebook: readable reprs, highlighted HTML.

The reprs are checked against what the test knows independently (the line of a `def` found
in this file's text, the dtypes and shapes it passed, the transforms it applied); the HTML by
parsing it back with the standard library's HTMLParser: its text must be the stage's text
exactly, and nothing in it may be markup that the text did not ask for.
"""
from __future__ import annotations

import html.parser
import pathlib
import pickle
import re

import numpy as np
import pytest

from compiler import grad, jit, vmap
from compiler.api.display import highlight_html

HERE = pathlib.Path(__file__)


def scaled_sum(x, n):
    return np.sum(np.sin(x) * n)


def line_of(text: str) -> int:
    return next(i for i, line in enumerate(HERE.read_text().splitlines(), 1) if line.startswith(text))


@pytest.fixture(scope="module")
def kernel():
    k = jit(scaled_sum, static_argnums=1, cache=False)
    k(np.zeros(3), 2)
    k(np.zeros((2, 2), np.float32), 3)
    return k


def test_kernel_repr_names_the_function_its_source_line_and_each_variant(kernel):
    text = repr(kernel)
    head = text.splitlines()[0]
    assert head.startswith("<aotx.Kernel scaled_sum from ") and text.endswith(">")
    assert f"test_display.py:{line_of('def scaled_sum(')}" in head and "2 variants" in head
    lines = text.splitlines()[1:]
    assert len(lines) == 2
    assert re.search(r"scaled_sum\(x: f64\[3\], n=2\) -> f64\[\]  compiled in \d+ m?s", lines[0]), lines[0]
    assert re.search(r"scaled_sum\(x: f32\[2, 2\], n=3\) -> f32\[\]  compiled in", lines[1]), lines[1]


def test_an_unpickled_kernel_says_where_its_variants_came_from(kernel):
    again = pickle.loads(pickle.dumps(kernel))
    assert "scaled_sum(x: f64[3], n=2) -> f64[]  unpickled" in repr(again)
    x = np.linspace(0.0, 1.0, 3)
    np.testing.assert_allclose(again(x, 2), 2 * np.sum(np.sin(x)), rtol=1e-14)


def test_kernel_repr_before_any_call_and_with_a_signature():
    assert repr(jit(scaled_sum)).endswith(", not compiled yet>")
    k = jit(lambda x: x * 2.0, signature="f64[n]", cache=False)
    text = repr(k)
    assert "<aotx.Kernel <lambda> from " in text and "signature='f64[n]', 1 variant" in text
    assert "<lambda>(x: f64[n]) -> f64[n]  compiled in" in text


def test_kernel_repr_shows_the_transforms_and_a_disk_cache_hit():
    def energy(x, scale):
        return scale * np.sum(np.cos(x) ** 2)
    first = jit(vmap(grad(energy), in_dims=(0, None)))
    x = np.ones((4, 3))
    np.testing.assert_allclose(first(x, 2.0), -2.0 * np.sin(2 * x), rtol=1e-13)
    assert "<aotx.Kernel vmap(grad(energy)) from " in repr(first)
    assert "vmap(grad(energy))(x: f64[4, 3], scale: float) -> f64[4, 3]  compiled in" in repr(first)
    again = jit(vmap(grad(energy), in_dims=(0, None)))     # a new Kernel: its code from the disk cache
    again(x, 2.0)
    assert "-> f64[4, 3]  loaded from the disk cache" in repr(again)


def write_first(x, y):
    x[0] = 1.0
    return x + y


def test_kernel_repr_shows_pytree_arguments_and_an_array_passed_twice():
    k = jit(write_first, cache=False)
    a, b = np.arange(4.0), np.arange(4.0)
    np.testing.assert_array_equal(k(a, a), write_first(b, b))     # NumPy on a copy: the same writes
    np.testing.assert_array_equal(a, b)
    assert "write_first(x: f64[4], y: f64[4] (same array as an earlier argument)) -> f64[4]" in repr(k)
    g = jit(grad(lambda p, x: np.sum(p["w"] * np.sin(x)) + p["b"]), cache=False)
    g({"w": np.ones(3), "b": 1.0}, np.ones(3))
    assert "grad(<lambda>)(p: {'b': float, 'w': f64[3]}, x: f64[3]) -> (f64[], f64[3])" in repr(g)


@pytest.fixture(scope="module")
def lowered():
    return jit(lambda x: np.sum(np.sin(x) * 2.5), cache=False).lower(np.zeros(3))


def test_lowered_repr_is_one_summary_line_not_the_ir(lowered):
    text = repr(lowered)
    assert "\n" not in text and len(text) < 400 and "func @" not in text
    ops = sum(" = " in line for line in lowered.ir.splitlines())           # sin, constant, broadcast, mul, sum
    assert ops == 5 and text.startswith(f"<aotx.Lowered <lambda>(x: f64[3]) -> f64[]: IR {ops} ops")
    assert f"asm {len(lowered.asm.splitlines())} lines" in text
    assert "print(low.ir)" in text and ".asm" in text
    for stage in (lowered.ir, lowered.ir_optimized, lowered.llvm, lowered.llvm_optimized, lowered.asm):
        assert isinstance(stage, str) and len(stage) > 0      # still plain text to print or search
    assert "sin(%x)" in lowered.ir and str(lowered) == lowered.ir_optimized


class _Text(html.parser.HTMLParser):
    """The text of an HTML fragment (style sheets left out) and the tags it opens."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.tags: list[str] = []
        self._style = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self._style = tag == "style"

    def handle_endtag(self, tag):
        self._style = False

    def handle_data(self, data):
        if not self._style:
            self.parts.append(data)


def parsed(fragment: str) -> _Text:
    p = _Text()
    p.feed(fragment)
    p.close()
    return p


HOSTILE = {
    "ir": 'func @<lambda>(%x: f64[3]) -> (f64[]) {\n  %0 = sin(%x) : f64[3]  # <script>alert("&")</script>.py:3\n  return %0\n}',
    "llvm": 'define i32 @"<b>name</b>"(ptr %"<i>") {\n  %".1" = fadd double 1.0, 2.0 ; <img src=x> & co\n  ret i32 0\n}',
    "asm": '<b>label</b>:\n\tmovq\t$1, %rax  # </div><script>\n\tretq\n',
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_highlighted_html_is_the_text_escaped(kind):
    text = HOSTILE[kind]
    fragment = highlight_html(text, kind)
    p = parsed(fragment)
    assert "".join(p.parts) == text                       # every character, once, in order
    assert set(p.tags) <= {"style", "div", "span"}        # no markup from the text
    assert "<script" not in fragment and "<b>" not in fragment and "<img" not in fragment
    assert "<span class='c'>" in fragment                 # comments are highlighted


def test_stage_and_lowered_html_escape_the_kernel_name(lowered):
    for stage in (lowered.ir, lowered.ir_optimized, lowered.llvm, lowered.asm):
        assert "".join(parsed(stage._repr_html_()).parts) == stage
    assert "@&lt;lambda&gt;" in lowered.ir._repr_html_() and "@<lambda>" not in lowered.ir._repr_html_()
    whole = lowered._repr_html_()
    p = parsed(whole)
    assert set(p.tags) <= {"style", "div", "span", "details", "summary", "code", "b"}
    assert "aotx.Lowered <lambda>(x: f64[3]) -> f64[]" in "".join(p.parts)
    assert lowered.ir_optimized in "".join(p.parts)


def test_highlighting_marks_values_types_and_ops(lowered):
    fragment = lowered.ir._repr_html_()
    assert "<span class='v'>%x</span>" in fragment and "<span class='t'>f64[3]</span>" in fragment
    assert "<span class='o'>sin</span>" in fragment and "<span class='k'>return</span>" in fragment
