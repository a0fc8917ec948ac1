"""docs/coverage.md cannot claim what the compiler does not do: every mode the committed table
marks "yes" is run again (tests/coverage.py: against NumPy, a Python loop or central
differences) and must still pass; every function of tests/coverage.py is in the table.

A mode that the OpInfo registry already tests for the same function (``np.sin`` and the
OpInfo entry ``sin`` with ``supports_vmap``, ...) is left to tests/ops, which checks it on
more samples and dtypes than one call here; the others run here."""
from __future__ import annotations

import pytest

from tests import coverage
from tests.ops.opinfo import OPS

TABLE = coverage.committed()
CASES = {c.name: c for c in coverage.CASES}


def test_every_case_is_in_the_table():
    missing = sorted(set(CASES) - set(TABLE))
    assert not missing, f"not in docs/coverage.md (run python -m tests.coverage): {missing}"
    stale = sorted(set(TABLE) - set(CASES))
    assert not stale, f"in docs/coverage.md but not in tests/coverage.py: {stale}"


OPINFO = {op.name: op for op in OPS}


def _elsewhere(name: str, mode: str) -> bool:
    """Whether the OpInfo tests check `mode` of the function `name`."""
    op = OPINFO.get(name[3:]) if name.startswith("np.") else None
    if op is None:
        return False
    return {"jit": True, "vmap": op.supports_vmap, "grad": op.supports_vjp,
            "jvp": op.supports_jvp}[mode]


def _modes(name: str) -> tuple[str, ...]:
    return tuple(m for m in coverage.MODES
                 if TABLE[name].get(m) == coverage.YES and not _elsewhere(name, m))


SUPPORTED = sorted(n for n in TABLE if n in CASES and _modes(n))


@pytest.mark.parametrize("name", SUPPORTED)
def test_supported_modes_still_work(name):
    case = CASES[name]
    modes = _modes(name)
    if case.needs and coverage.sp is None:
        pytest.skip(f"{case.needs} is not installed")
    results = coverage.run(case, modes)
    broken = {m: r for m, r in results.items() if r != coverage.YES}
    assert not broken, f"{name}: marked supported in docs/coverage.md, now {broken}"
