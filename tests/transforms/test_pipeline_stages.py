"""The transforms run as named pipeline stages: AOTX_DEBUG timing, AOTX_PRINT_AFTER and
AOTX_VERIFY apply to them as to every other stage, and `Kernel.lower(...).ir` of a
transformed kernel is the frontend's IR of the function it transforms."""
from __future__ import annotations

import re

import numpy as np
import pytest

from compiler import config, grad, hessian, jvp, pipeline, vjp, vmap
from compiler.frontend import stage
from compiler.ir.builder import new_block
from compiler.ir.core import Function
from compiler.ir.printer import format_function
from compiler.ir.types import parse_type
from compiler.ir.verify import VerifyError
from compiler.transforms.simplify import simplify
from compiler.transforms.vjp import vjp_function
from compiler.transforms.vmap import vmap_function


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch):
    monkeypatch.setenv("AOTX_DISABLE_CACHE", "1")


def energy(x):
    return np.sum(np.sin(x) * x)


def stages_run(capsys, call) -> list[str]:
    """The names of the stages `call` runs, in order (from the AOTX_DEBUG=1 timings)."""
    capsys.readouterr()
    with config.options(AOTX_DEBUG="1"):
        call()
    return re.findall(r"^\[aotx\] (\w+): [\d.]+ ms$", capsys.readouterr().err, re.MULTILINE)


def test_every_stage_of_a_hessian_is_timed_by_name(capsys):
    names = stages_run(capsys, lambda: hessian(energy)(np.ones(3)))
    assert names == ["frontend", "vjp", "jacrev", "jacfwd", "canonicalize", "decompose", "complex", "simplify", "max_sumexp", "windows", "codegen",
                     "parse", "optimize", "emit"]


@pytest.mark.parametrize("call, transforms", [
    (lambda: vmap(energy, chunk_size=2)(np.ones((5, 3))), ["vmap"]),
    (lambda: grad(energy)(np.ones(3)), ["vjp", "grad"]),
    (lambda: vjp(np.sin, np.ones(3))[1](np.ones(3)), ["vjp", "vjp_fn"]),
    (lambda: jvp(energy, (np.ones(3),), (np.ones(3),)), ["jvp", "jvp_fn"]),
])
def test_transform_stages(capsys, call, transforms):
    names = stages_run(capsys, call)
    last = len(names) - 1 - names[::-1].index("frontend")      # vjp compiles the function first
    assert names[last + 1:names.index("canonicalize", last)] == transforms


def test_print_after_a_transform_stage(capsys):
    capsys.readouterr()
    with config.options(AOTX_PRINT_AFTER="vmap"):
        vmap(energy)(np.ones((2, 3)))
    err = capsys.readouterr().err
    assert "[aotx] after vmap:\nfunc @vmap_energy(%x: f64[2, 3]) -> (f64[2])" in err
    assert "after frontend" not in err and "after simplify" not in err


def test_verify_runs_after_a_transform_stage():
    program = pipeline.stage(energy, (parse_type("f64[3]"),), {}, name="energy")

    def breaks_ssa(fn: Function) -> Function:
        block = new_block(fn.in_types, fn.arg_names)
        block.results = list(fn.results)          # values defined in another function
        return Function("broken", block, list(fn.arg_names))
    with config.options(AOTX_VERIFY="1"), pytest.raises(VerifyError):
        pipeline.transform(program, [pipeline.Pass("broken", breaks_ssa)])


def test_lower_ir_of_a_transformed_kernel_is_the_frontend_ir():
    per_example = format_function(stage(energy, (parse_type("f64[3]"),), {}).function, with_locs=True)
    for kernel, arg in ((vmap(energy), np.ones((4, 3))), (grad(energy), np.ones(3)),
                        (hessian(energy), np.ones(3))):
        low = kernel.lower(arg)
        assert low.ir == per_example
        assert low.ir_optimized != low.ir


def test_a_transform_leaves_the_traced_ir_as_it_was():
    program = pipeline.stage(energy, (parse_type("f64[3]"),), {}, name="energy")
    before = format_function(program.function, with_locs=True)
    transformed = pipeline.transform(program, [
        pipeline.Pass("vjp", lambda fn: vjp_function(fn, [True])),
        pipeline.Pass("vmap", lambda fn: vmap_function(fn, [0, 0], [0, 0], 2)),
        pipeline.Pass("simplify", simplify)])
    assert format_function(program.function, with_locs=True) == before
    assert transformed.frontend_ir is program.function
    assert transformed.function.in_types == [parse_type("f64[2, 3]"), parse_type("f64[2]")]
