"""What a compile logs through the logger "aotx" (compiler/progress.py, docs/debugging.md).

With AOTX_DEBUG=1: a record when a compile starts, one per stage (the stage names of
docs/debugging.md, in pipeline order) and an INFO summary. Without it: nothing, unless the
compile takes longer than `progress.SLOW_SECONDS`; the tests lower that threshold to zero
rather than waiting for a slow compile (no assertion depends on how long anything takes).
"""
from __future__ import annotations

import logging
import sys

import numpy as np

from compiler import jit, progress

STAGES = ["frontend", "canonicalize", "decompose", "complex", "simplify", "max_sumexp", "windows", "codegen", "parse", "optimize", "emit"]


def wave(x):
    return np.exp(-x * x) * np.sin(3.0 * x)


def aotx_records(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "aotx"]


def test_aotx_debug_logs_the_start_every_stage_and_a_summary(monkeypatch, caplog):
    monkeypatch.setenv("AOTX_DEBUG", "1")
    x = np.linspace(-1.0, 1.0, 7)
    np.testing.assert_allclose(jit(wave, cache=False)(x), wave(x), rtol=1e-14, atol=1e-15)
    records = aotx_records(caplog)
    messages = [r.getMessage() for r in records]
    assert messages[0] == "compiling wave(x: f64[7])" and records[0].levelno == logging.DEBUG
    stages = [m.split(":")[0] for m, r in zip(messages, records) if r.levelno == logging.DEBUG][1:]
    assert stages == STAGES
    assert all(m.endswith(" ms") for m in messages[1:-1])
    summary = records[-1]
    assert summary.levelno == logging.INFO and summary.getMessage().startswith("compiled wave(x: f64[7]) in ")
    assert all(f"{s} " in summary.getMessage() for s in STAGES)


def test_aotx_debug_lines_reach_stderr_without_logging_configured(monkeypatch, capfd):
    monkeypatch.setenv("AOTX_DEBUG", "1")
    jit(wave, cache=False)(np.ones(5))
    err = capfd.readouterr().err
    assert "[aotx] compiling wave(x: f64[5])\n" in err and "[aotx] optimize: " in err
    assert "[aotx] compiled wave(x: f64[5]) in " in err
    assert err.count("[aotx] compiling wave") == 1           # once, not once per handler


def test_aotx_debug_lines_appear_once_in_the_applications_format(monkeypatch, capfd):
    monkeypatch.setenv("AOTX_DEBUG", "1")
    handler = logging.StreamHandler(sys.stderr)            # what logging.basicConfig() installs
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s| %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        jit(wave, cache=False)(np.ones(4))
    finally:
        root.removeHandler(handler)
    err = capfd.readouterr().err
    assert err.count("DEBUG aotx| compiling wave(x: f64[4])\n") == 1 and "[aotx]" not in err
    assert "INFO aotx| compiled wave(x: f64[4]) in " in err


def test_a_slow_compile_logs_one_info_line_without_aotx_debug(monkeypatch, caplog):
    monkeypatch.delenv("AOTX_DEBUG", raising=False)
    monkeypatch.setattr(progress, "SLOW_SECONDS", 0.0)      # every compile counts as slow
    caplog.set_level(logging.DEBUG, logger="aotx")
    jit(wave, cache=False)(np.ones(6))
    records = aotx_records(caplog)
    assert [r.levelno for r in records] == [logging.INFO]
    assert records[0].getMessage().startswith("compiled wave(x: f64[6]) in ")


def test_a_fast_compile_logs_nothing_and_nothing_reaches_stderr_by_default(monkeypatch, caplog, capfd):
    monkeypatch.delenv("AOTX_DEBUG", raising=False)
    monkeypatch.setattr(progress, "SLOW_SECONDS", float("inf"))
    caplog.set_level(logging.DEBUG, logger="aotx")
    jit(wave, cache=False)(np.ones(8))
    assert aotx_records(caplog) == []
    caplog.set_level(logging.WARNING, logger="aotx")        # the default level: a slow one is quiet too
    monkeypatch.setattr(progress, "SLOW_SECONDS", 0.0)
    jit(wave, cache=False)(np.ones(9))
    assert aotx_records(caplog) == [] and "aotx" not in capfd.readouterr().err


def test_summary_adds_up_repeated_stages():
    record = progress.Compile("f(x: f64[3])", stages=[("frontend", 0.002), ("vmap", 0.004), ("frontend", 0.003)],
                              seconds=1.5)
    assert record.summary() == "compiled f(x: f64[3]) in 1.50 s: frontend 5 ms (2x), vmap 4 ms"


def test_a_cache_hit_is_noted(monkeypatch, caplog):
    def cubed(x):
        return x * x * x
    jit(cubed)(np.ones(4))                                    # stored in the test session's cache
    monkeypatch.setenv("AOTX_DEBUG", "1")
    jit(cubed)(np.ones(4))
    assert [r.getMessage() for r in aotx_records(caplog)] == ["cubed(x: f64[4]): loaded from the disk cache"]
