"""`python -m benchmarks --tiny` runs every workload in both threading modes, checks each peer
against NumPy before timing it, and writes the JSON the docs describe. Times are never looked at:
this only keeps the suite from rotting."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "benchmarks")]

from registry import WORKLOADS  # noqa: E402

PEERS = "numpy,torch"           # cheap to build; numba and torch.compile cost seconds per kernel


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("bench") / "results.json"
    proc = subprocess.run([sys.executable, "-m", "benchmarks", "--tiny", "--peers", PEERS, "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT), "AOTX_VERIFY": "0"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ratio = aotx / fastest peer" in proc.stdout
    return json.loads(out.read_text())


def test_every_workload_runs_in_both_modes(results: dict) -> None:
    assert results["config"]["tiny"] is True
    assert set(results["modes"]) == {"1", "default"}
    for mode, workloads in results["modes"].items():
        assert list(workloads) == list(WORKLOADS)
        for name, w in workloads.items():
            assert "error" not in w, (mode, name, w.get("error"))
            if mode == "1" or name != "W6":            # W6 (compile, load, import) runs single-threaded only
                assert w["cases"], (mode, name)


def test_aotx_and_peers_checked_against_numpy(results: dict) -> None:
    for mode, workloads in results["modes"].items():
        for name, w in workloads.items():
            for case in w["cases"]:
                peers = case["peers"]
                assert set(peers) >= {"aotx"}, case["name"]
                assert peers["aotx"]["status"] == "ok", (mode, name, case["name"], peers["aotx"])
                for peer, r in peers.items():
                    assert r["status"] in ("ok", "skipped", "error", "wrong"), r
                    assert r["status"] != "wrong", (mode, name, case["name"], peer, r)
                    if r["status"] != "ok":
                        assert r["reason"], (peer, r)
                        continue
                    assert r["min"] <= r["median"] and r["samples"] >= 1
                    if case["kind"] == "call" and peer != case["reference"]:
                        assert r["validated"] is True, (case["name"], peer)
                if case["kind"] == "call":
                    assert peers["numpy"]["status"] == "ok", case["name"]
                    assert case["best_peer"] is not None and case["ratio"] > 0


def test_peers_outside_the_selection_are_skipped_with_a_reason(results: dict) -> None:
    w1 = results["modes"]["1"]["W1"]["cases"][0]["peers"]
    assert w1["numba"] == {"status": "skipped", "reason": "not selected (--peers)"}
    assert w1["torch"]["status"] in ("ok", "skipped")      # skipped: torch not installed
    if w1["torch"]["status"] == "ok":
        assert w1["torch"]["validated"] is True


def test_machine_line_and_scaling(results: dict) -> None:
    m = results["machine"]
    assert m["cores"] >= 1 and len(m["load"]) == 3 and isinstance(m["features"], list)
    assert m["versions"]["numpy"]
    cases_w7 = {c["name"] for c in results["modes"]["1"]["W7"]["cases"]}
    assert {row["case"] for row in results["scaling"]} == cases_w7
    for row in results["scaling"]:
        assert row["speedup"]["aotx"] > 0


def test_unknown_workload_is_one_clear_message() -> None:
    proc = subprocess.run([sys.executable, "-m", "benchmarks", "W9"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2
    assert "unknown workload W9; the workloads are W0, W1" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_plot_without_matplotlib_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location("bench_main", ROOT / "benchmarks" / "__main__.py")
    main = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(main)
    monkeypatch.setitem(sys.modules, "matplotlib", None)          # import matplotlib raises ImportError
    with pytest.raises(SystemExit, match=r"--plot needs matplotlib: pip install 'aotx\[bench\]'"):
        main.plot({"modes": {}}, "unused.png")
