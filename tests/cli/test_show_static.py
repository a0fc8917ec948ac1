"""`aotx show --static NAME=VALUE`: a parameter with a compile-time value, the signature
giving the types of the others; and the static_argnums hint of a size that is a run-time
argument."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import cli
from compiler.ir.parser import parse
from compiler.ir.interpret import interpret

SOURCE = '''
import numpy as np

def grid(a, b, n, reps):
    return np.tile(np.linspace(a, b, n), reps) * 2.0
'''


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    path = tmp_path_factory.mktemp("show") / "grid_mod.py"
    path.write_text(SOURCE)
    return path


def show(capsys, *argv):
    code = cli.main(["show", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("signature", ["f64, f64", "f64, f64, i64, i64"])
def test_static_parameters_by_name_and_position(module, capsys, signature):
    code, out, err = show(capsys, f"{module}:grid", "--signature", signature, "--static", "n=5",
                          "--static", "3=2", "--stage", "ir_optimized")
    assert code == 0, err
    fn = parse(out)
    assert [str(t) for t in fn.in_types] == ["f64[]", "f64[]"]
    got = interpret(fn, np.float64(-1.0), np.float64(3.0))[0]
    np.testing.assert_allclose(got, np.tile(np.linspace(-1.0, 3.0, 5), 2) * 2.0, rtol=1e-15)


def test_a_run_time_size_names_static_argnums_and_the_option(module, capsys):
    code, _, err = show(capsys, f"{module}:grid", "--signature", "f64, f64, i64, i64")
    assert code == 1
    assert "static_argnums=(2,)" in err and "`n` (argument 2 of grid)" in err
    assert "--static NAME=VALUE" in err


@pytest.mark.parametrize("item,message", [
    ("m=5", "no positional parameter 'm'"),
    ("n", "expects NAME=VALUE"),
    ("n=five", "not a Python literal"),
])
def test_bad_static_options(module, capsys, item, message):
    with pytest.raises(SystemExit, match=message):
        cli.main(["show", f"{module}:grid", "--signature", "f64, f64, i64", "--static", item])


def test_wrong_number_of_types(module, capsys):
    with pytest.raises(SystemExit, match="has 3 types for the 2 parameters"):
        cli.main(["show", f"{module}:grid", "--signature", "f64, f64, i64", "--static", "n=5",
                  "--static", "reps=2"])
