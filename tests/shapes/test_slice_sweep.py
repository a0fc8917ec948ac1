"""Every slice form (read and assigned) and every static index on a symbolic dim, against
NumPy, for n = 0..8.

One kernel per step holds every ``x[a:b:s]`` with a, b in -7..7 or None (a tuple of
results), so each form is compiled once and called for every n; a static index gets a
kernel of its own, since an out-of-bounds one raises IndexError for the whole call.
"""
from __future__ import annotations

import numpy as np
import pytest

from compiler import jit

BOUNDS = [None] + list(range(-7, 8))
STEPS = [None, 1, 2, 3, -1, -2, -3]
SIZES = range(9)


def _forms(step):
    return [slice(a, b, step) for a in BOUNDS for b in BOUNDS]


def _slicer(forms):
    def slices(x):
        return tuple(x[s] for s in forms)
    return slices


def _indexer(i):
    def index(x):
        y = x.copy()
        y[i] = -1.0
        return x[i] * 1.0, y
    return index


@pytest.fixture(scope="module")
def slice_kernels():
    return {step: jit(_slicer(_forms(step)), signature="f64[n]") for step in STEPS}


@pytest.mark.parametrize("step", STEPS, ids=lambda s: f"step{s}")
def test_every_slice_matches_numpy(slice_kernels, step):
    forms = _forms(step)
    bad = []
    for n in SIZES:
        x = np.arange(n, dtype=np.float64) * 1.5 + 1.0
        got = slice_kernels[step](x)
        assert len(got) == len(forms)
        for s, g in zip(forms, got):
            want = x[s]
            if g.shape != want.shape or not np.array_equal(g, want):
                bad.append(f"x[{s.start}:{s.stop}:{s.step}] at n={n}: {g!r} != {want!r}")
    assert not bad, f"{len(bad)} wrong slices, e.g. " + "; ".join(bad[:5])


def _writer(forms):
    def writes(x):
        out = []
        for s in forms:
            y = x.copy()
            y[s] = -1.0
            out.append(y)
        return tuple(out)
    return writes


#: assignments: fewer bounds (each form copies the array), still both signs and both ends
WRITE_BOUNDS = [None, -7, -4, -2, -1, 0, 1, 2, 4, 7]


@pytest.mark.parametrize("step", STEPS, ids=lambda s: f"step{s}")
def test_slice_assignments_match_numpy(step):
    forms = [slice(a, b, step) for a in WRITE_BOUNDS for b in WRITE_BOUNDS]
    k = jit(_writer(forms), signature="f64[n]")
    bad = []
    for n in SIZES:
        x = np.arange(n, dtype=np.float64) + 0.5
        for s, g in zip(forms, k(x)):
            want = x.copy()
            want[s] = -1.0
            if not np.array_equal(g, want):
                bad.append(f"y[{s.start}:{s.stop}:{s.step}] = -1 at n={n}: {g!r} != {want!r}")
    assert not bad, f"{len(bad)} wrong assignments, e.g. " + "; ".join(bad[:5])


INDICES = range(-9, 10)


@pytest.fixture(scope="module")
def index_kernels():
    return {i: jit(_indexer(i), signature="f64[n]") for i in INDICES}


@pytest.mark.parametrize("i", INDICES)
def test_every_static_index_matches_numpy(index_kernels, i):
    for n in SIZES:
        x = np.arange(n, dtype=np.float64) + 0.25
        if -n <= i < n:
            got, written = index_kernels[i](x)
            want = x.copy()
            want[i] = -1.0
            assert got == x[i] and np.array_equal(written, want)
        else:
            with pytest.raises(IndexError) as np_err:
                x[i]
            with pytest.raises(IndexError) as err:
                index_kernels[i](x)
            assert str(err.value).startswith(str(np_err.value))


TWO_D = [(slice(None), slice(None, None, 2)), (slice(None, None, -2), slice(1, None)),
         (slice(-3, None), slice(None, -1, 3)), (1, slice(None, None, -3)), (slice(2, -2), -1)]


@pytest.mark.parametrize("index", TWO_D, ids=str)
def test_two_dim_slices_match_numpy(index):
    f = jit(lambda x: x[index], signature="f64[m, n]")
    for m in range(5):
        for n in range(5):
            x = np.arange(m * n, dtype=np.float64).reshape(m, n)
            try:
                want = x[index]
            except IndexError as e:
                with pytest.raises(IndexError, match=str(e).split(" with")[0]):
                    f(x)
                continue
            got = f(x)
            assert got.shape == want.shape and np.array_equal(got, want), (m, n)


def test_slice_lengths_are_numpys_formula():
    """The printed output dim is a closed formula of n that evaluates to len(range(...))."""
    from runtime.abi import evaluate_dim
    for step in (2, 3, -2):
        f = jit(lambda x: (x[::step], x[1:], x[:-1], x[-3:]), signature="f64[n]")
        outs = f.lower("f64[n]").ir_optimized.splitlines()[0]
        dims = [t.split("[", 1)[1].rsplit("]", 1)[0] for t in outs.split("-> (", 1)[1][:-3].split("f64")[1:]]
        for n in SIZES:
            r = range(n)
            want = [len(r[::step]), len(r[1:]), len(r[:-1]), len(r[-3:])]
            assert [evaluate_dim(d.rstrip(", "), {"n": n}) for d in dims] == want
