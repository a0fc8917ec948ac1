"""The rejection matrix of API.md section 4, every cell: each construct under plain
``jit``, under ``vmap`` and under AD (``grad``), written directly in the function, in
a helper it calls, and in a nested lambda (or nested def for statements).

A rejected cell must raise the documented class at the offending line (``lineno``),
show that line with a caret and a hint, and print no compiler-internal frame (the
public entry point's own frame is the only one from ``compiler/``). A compiled cell
must give NumPy's value (jit, vmap: a Python loop) or the derivative of the branch
taken (AD, checked by finite differences).

The functions are generated into a real module (a temporary file) so that the
frontend reads their source like any user's; each offending line carries a
``# MARK`` comment from which the expected line number is taken.
"""
from __future__ import annotations

import importlib.util
import sys
import traceback
from dataclasses import dataclass

import numpy as np
import pytest

from compiler import grad, jit, vmap
from compiler.errors import (CompileError, DataDependentControlFlowError, DataDependentOperationError,
                             DynamicShapeError, OutParameterError, SideEffectError, UnsupportedError)
from tests.fd import derivative

OK = "compiled"


@dataclass(frozen=True)
class Construct:
    name: str
    body: str                 # statements over `x` (a float64 vector), ending in `return <scalar>`
    expr: str | None          # the offending expression alone, for the lambda placement
    jit: object               # OK or the error class under plain jit
    vmap: object              # ... under vmap (batched x)
    ad: object                # ... under grad
    hint: str | dict          # a word the hint must contain (or one per stage)


DDCF, DDOP = DataDependentControlFlowError, DataDependentOperationError

CONSTRUCTS = [
    Construct("if_stmt", "if x.sum() > 0:  # MARK\n    return np.sum(x * 2.0)\nreturn np.sum(x)", None,
              OK, DDCF, OK, "np.where"),
    Construct("while_stmt", "s = x.sum()\nwhile s < 100.0:  # MARK\n    s = s * 2.0\nreturn s", None,
              OK, DDCF, DDCF, {"vmap": "compiler.while_loop", "grad": "compiler.fori_loop"}),
    Construct("if_expr", "return np.sum(x) * (2.0 if x.sum() > 0 else 3.0)  # MARK",
              "np.sum(v) * (2.0 if v.sum() > 0 else 3.0)", OK, DDCF, OK, "np.where"),
    Construct("and_or", "return np.sum(x) * ((x.sum() > 0) and (x.max() < 10.0))  # MARK",
              "np.sum(v) * ((v.sum() > 0) and (v.max() < 10.0))", OK, DDCF, OK, "np.where"),
    Construct("item", "return np.sum(x) * x.sum().item()  # MARK", "np.sum(v) * v.sum().item()",
              OK, DDOP, DDOP, "np.where"),
    Construct("float_of", "return np.sum(x) * float(x.sum())  # MARK", "np.sum(v) * float(v.sum())",
              OK, DDOP, DDOP, "np.where"),
    Construct("int_of", "return np.sum(x) * int(x.sum())  # MARK", "np.sum(v) * int(v.sum())",
              OK, DDOP, DDOP, "np.where"),
    Construct("bool_of", "return np.sum(x) * bool(x.sum() > 0)  # MARK",
              "np.sum(v) * bool(v.sum() > 0)", OK, DDOP, OK, "np.where"),
    Construct("nonzero", "return np.sum(x) + np.nonzero(x > 0)[0].sum()  # MARK",
              "np.sum(v) + np.nonzero(v > 0)[0].sum()", DynamicShapeError, DynamicShapeError,
              DynamicShapeError, "np.where"),
    Construct("argwhere", "return np.sum(x) + np.argwhere(x > 0).sum()  # MARK",
              "np.sum(v) + np.argwhere(v > 0).sum()", DynamicShapeError, DynamicShapeError,
              DynamicShapeError, "np.where"),
    Construct("flatnonzero", "return np.sum(x) + np.flatnonzero(x).sum()  # MARK",
              "np.sum(v) + np.flatnonzero(v).sum()", DynamicShapeError, DynamicShapeError,
              DynamicShapeError, "np.where"),
    Construct("unique", "return np.unique(x).sum()  # MARK", "np.unique(v).sum()",
              DynamicShapeError, DynamicShapeError, DynamicShapeError, "size="),
    Construct("bool_mask", "return np.sum(x) + x[x > 0].cumsum().sum()  # MARK",
              "np.sum(v) + v[v > 0].cumsum().sum()",
              DynamicShapeError, DynamicShapeError, DynamicShapeError, "np.where"),
    Construct("masked_sum", "return x[x > 0].sum() + (x[x > 1.0] ** 2).mean()  # MARK",
              "v[v > 0].sum() + (v[v > 1.0] ** 2).mean()", OK, OK, OK, "np.where"),
    Construct("out_param", "y = np.zeros_like(x)\nnp.multiply(x, 2.0, out=y)  # MARK\nreturn y.sum()",
              "np.multiply(v, 2.0, out=np.zeros_like(v)).sum()", OutParameterError,
              OutParameterError, OutParameterError, "return"),
    Construct("global_write", "global RESULT  # MARK\nRESULT = x\nreturn np.sum(x)", None,
              SideEffectError, SideEffectError, SideEffectError, "return"),
    Construct("list_pop", "LIST.pop()  # MARK\nreturn np.sum(x)", "LIST.pop() + np.sum(v)",
              SideEffectError, SideEffectError, SideEffectError, "return"),
    Construct("list_append", "LIST.append(x)  # MARK\nreturn np.sum(x)", "LIST.append(v) or np.sum(v)",
              SideEffectError, SideEffectError, SideEffectError, "return"),
    Construct("attr_write", "BOX.value = x  # MARK\nreturn np.sum(x)", None,
              SideEffectError, SideEffectError, SideEffectError, "return"),
    Construct("arg_write", "x[0] = 1.0  # MARK\nreturn np.sum(x)", None,
              OK, SideEffectError, SideEffectError, "copy"),
    Construct("arg_slice_write", "x[:] = 0.0  # MARK\nreturn np.sum(x)", None,
              OK, SideEffectError, SideEffectError, "copy"),
    Construct("unknown_call", "return np.sum(x) * os.getpid()  # MARK", "np.sum(v) * os.getpid()",
              UnsupportedError, UnsupportedError, UnsupportedError, "compiler.Function"),
    Construct("np_random", "return np.sum(x + np.random.normal(size=3))  # MARK",
              "np.sum(v + np.random.normal(size=3))", UnsupportedError, UnsupportedError,
              UnsupportedError, "compiler.random"),
]
# arg_write and arg_slice_write under plain jit: NumPy's in-place semantics, compiled (the
# caller's array after the call: tests/inplace/test_arguments.py). bool() of a comparison under AD is compiled: a comparison carries no
# derivative, so nothing is cut.

PLACEMENTS = ("direct", "helper", "lambda")
STAGES = ("jit", "vmap", "grad")


def _indent(text: str, n: int) -> str:
    return "\n".join(" " * n + line for line in text.splitlines())


def _module_source() -> str:
    parts = ["import os", "import numpy as np", "", "RESULT = None", "LIST = [1.0, 2.0, 3.0]", "",
             "class Box:", "    value = 0.0", "", "BOX = Box()", ""]
    for c in CONSTRUCTS:
        parts += [f"def {c.name}_direct(x):", _indent(c.body, 4), ""]
        parts += [f"def {c.name}_helper_impl(x):", _indent(c.body, 4), "",
                  f"def {c.name}_helper(x):", f"    return {c.name}_helper_impl(x) + 0.0", ""]
        if c.expr is not None:
            parts += [f"def {c.name}_lambda(x):", f"    g = lambda v: {c.expr}  # MARK",
                      "    return g(x)", ""]
        else:
            body = c.body.replace("x", "v")
            parts += [f"def {c.name}_lambda(x):", "    def inner(v):", _indent(body, 8),
                      "    return inner(x)", ""]
    return "\n".join(parts) + "\n"


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    path = tmp_path_factory.mktemp("matrix") / "matrix_functions.py"
    path.write_text(_module_source())
    spec = importlib.util.spec_from_file_location("matrix_functions", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["matrix_functions"] = module
    spec.loader.exec_module(module)
    yield module, path
    sys.modules.pop("matrix_functions", None)


def _marked_line(path, fn_name: str) -> tuple[int, str]:
    """(line number, text) of the MARK line inside the function(s) reached by `fn_name`."""
    lines = path.read_text().splitlines()
    target = {"helper": fn_name.replace("_helper", "_helper_impl")}.get(fn_name.rsplit("_", 1)[-1],
                                                                        fn_name)
    start = next(i for i, line in enumerate(lines) if line.startswith(f"def {target}("))
    for i in range(start + 1, len(lines)):
        if lines[i].startswith("def "):
            break
        if "# MARK" in lines[i]:
            return i + 1, lines[i].strip()
    raise AssertionError(f"no MARK in {target}")


X = np.array([0.5, 1.5, 2.0])
XS = np.array([[0.5, 1.5, 2.0], [-1.0, 0.25, -3.0], [2.0, 2.0, 2.0], [-0.5, -0.5, 4.0]])


def _call(stage: str, fn):
    if stage == "jit":
        return jit(fn)(X.copy())
    if stage == "vmap":
        return vmap(fn)(XS.copy())
    return grad(fn)(X.copy())


def _cells():
    for c in CONSTRUCTS:
        for stage in STAGES:
            expected = getattr(c, "ad" if stage == "grad" else stage)
            if expected is None:
                continue
            for placement in PLACEMENTS:
                yield pytest.param(c, stage, placement, id=f"{c.name}-{stage}-{placement}")


def _compiler_frames(err: BaseException) -> list[str]:
    text = "".join(traceback.format_exception(err))
    return [line for line in text.splitlines()
            if line.lstrip().startswith("File ") and "/compiler/" in line]


@pytest.mark.parametrize("c, stage, placement", list(_cells()))
def test_matrix_cell(mod, c, stage, placement):
    module, path = mod
    fn = getattr(module, f"{c.name}_{placement}")
    expected = getattr(c, "ad" if stage == "grad" else stage)
    if expected == OK:
        _check_compiled(fn, stage)
        return
    module.LIST[:] = [1.0, 2.0, 3.0]
    with pytest.raises(CompileError) as info:
        _call(stage, fn)
    err = info.value
    assert type(err) is expected, f"{type(err).__name__}: {err}"
    line, text = _marked_line(path, fn.__name__)
    assert err.filename == str(path) and err.lineno == line, str(err)
    message = str(err).splitlines()
    assert message[0].startswith(f"{path}:{line}:"), message[0]
    assert message[1].strip() == text, message
    caret = message[2]
    assert caret.strip().startswith("^"), message
    col = len(caret) - len(caret.lstrip()) - (len(message[1]) - len(message[1].lstrip()))
    assert col == err.col_offset - (len(_source_line(path, line)) - len(_source_line(path, line).lstrip()))
    word = c.hint[stage] if isinstance(c.hint, dict) else c.hint
    assert err.hint and word in err.hint, err.hint
    assert f"hint: {err.hint}" in str(err)
    frames = _compiler_frames(err)
    assert len(frames) <= 1 and all("/compiler/api/" in f for f in frames), frames
    assert module.LIST == [1.0, 2.0, 3.0]          # nothing ran: the outer list is untouched


def _source_line(path, line: int) -> str:
    return path.read_text().splitlines()[line - 1]


def _check_compiled(fn, stage: str) -> None:
    if stage == "jit":
        np.testing.assert_allclose(_call("jit", fn), fn(X.copy()), rtol=1e-13)
    elif stage == "vmap":
        np.testing.assert_allclose(_call("vmap", fn), [fn(row.copy()) for row in XS], rtol=1e-13)
    else:
        got = _call("grad", fn)
        fd = [derivative(lambda t, e=e: fn(X + t * e))[0] for e in np.eye(len(X))]
        np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)


def test_every_documented_cell_is_covered():
    """Every row of API.md section 4 that aotx implements has all three stages here (or the
    reason it is left out, above)."""
    cells = list(_cells())
    assert len(cells) == sum(3 * sum(getattr(c, s) is not None for s in ("jit", "vmap", "ad"))
                             for c in CONSTRUCTS)
    assert {type(x) for c in CONSTRUCTS for x in (c.vmap, c.ad) if x != OK} == {type}


# ---- an unexpected failure inside the compiler --------------------------------------------------

def _ice_victim(x):
    return np.sin(x) * 2.0


def _broken(*args, **kwargs):
    raise KeyError("injected failure")


@pytest.mark.parametrize("where, stage", [("simplify", "simplify"), ("canonicalize", "canonicalize")])
def test_internal_error_says_bug_and_where_the_dump_is(monkeypatch, tmp_path, where, stage):
    from compiler import pipeline
    from compiler.errors import InternalCompilerError
    monkeypatch.setattr(pipeline, where, _broken)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    with pytest.raises(InternalCompilerError) as info:
        jit(_ice_victim, cache=False)(np.arange(3.0))
    err = info.value
    text = str(err)
    assert f"internal compiler error in stage '{stage}'" in text and "KeyError" in text
    assert "bug in aotx" in text and err.stage == stage
    assert err.dump_path and err.dump_path.startswith(str(tmp_path)) and err.dump_path in text
    dump = open(err.dump_path).read()
    assert "sin(" in dump and "_ice_victim" in dump        # the stage's input, as IR
    assert "injected failure" in dump and "Traceback" in dump
    frames = _compiler_frames(err)
    assert len(frames) <= 1 and all("/compiler/api/" in f for f in frames), frames
    monkeypatch.setenv("AOTX_FRONTEND_DEBUG", "1")           # the original, for the developer
    with pytest.raises(KeyError, match="injected failure"):
        jit(_ice_victim, cache=False)(np.arange(3.0))


def test_internal_error_in_a_transform_and_in_codegen(monkeypatch, tmp_path):
    from compiler import pipeline
    vmap_api = sys.modules["compiler.api.vmap"]
    from compiler.errors import InternalCompilerError
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    monkeypatch.setattr(vmap_api, "vmap_function", _broken)
    with pytest.raises(InternalCompilerError, match="stage 'vmap'") as info:
        vmap(_ice_victim)(np.ones((2, 3)))
    assert "sin(" in open(info.value.dump_path).read()
    monkeypatch.undo()
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    monkeypatch.setattr(pipeline.kernel, "build_module", _broken)
    with pytest.raises(InternalCompilerError, match="stage 'codegen'") as info:
        jit(_ice_victim, cache=False)(np.ones(4))
    assert "sin(" in open(info.value.dump_path).read()


def test_user_errors_from_transform_options_are_not_internal():
    with pytest.raises(ValueError, match="out_dim=5 is out of range"):
        vmap(_ice_victim, out_dims=5)(np.ones((2, 3)))


def test_internal_error_in_the_frontend_names_its_dump(monkeypatch, tmp_path):
    from compiler.errors import InternalCompilerError
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    monkeypatch.setattr(sys.modules["compiler.frontend.ufuncs"], "binary", _broken)
    with pytest.raises(InternalCompilerError) as info:
        jit(_ice_victim, cache=False)(np.ones(3))
    text = str(info.value)
    assert "internal compiler error" in text and "report" in text and "np.sin(x) * 2.0" in text
    assert info.value.stage == "frontend" and info.value.dump_path in text
    dump = open(info.value.dump_path).read()
    assert "def _ice_victim" in dump and "injected failure" in dump
    assert len(_compiler_frames(info.value)) <= 1
