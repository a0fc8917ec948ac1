"""The type checker (mypy, pinned in the test extra; configured in pyproject.toml) reports
no error in compiler/ and runtime/."""
import subprocess
import sys

from tests.architecture.imports import ROOT


def test_mypy_reports_no_errors():
    done = subprocess.run([sys.executable, "-m", "mypy", "compiler", "runtime"], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
