"""The boundary of every kind of kernel, table-driven: whatever Python passes in, the
result is NumPy's (same values, dtype and shape), or a TypeError/ValueError that names
the argument (or NumPy's own exception where NumPy raises one), never a crash or garbage.

Kinds: a lazy ``jit`` kernel, a signature kernel (symbolic dims), ``vmap`` and ``grad``
of the same function, and the kernel of a library built by ``aotx build`` and loaded with
``runtime.load`` (one build per module, shared by the tests). Oracles: the uncompiled
function (NumPy), a Python loop for vmap, finite differences for grad. The cases that
could crash the process run in a subprocess whose exit status is checked.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import runtime
from compiler import grad, jit, vmap
from compiler.errors import CompileError
from tests.boundary import kernels as K
from tests.runtime.subproc import REPO, env_for

KINDS = ("jit", "signature", "load", "vmap", "grad")
KERNELS = Path(K.__file__)


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    """tests/boundary/kernels.py built by `aotx build` into a temporary directory."""
    out = tmp_path_factory.mktemp("boundary-build")
    proc = subprocess.run([sys.executable, "-m", "compiler", "build", str(KERNELS), "-o", str(out)],
                          capture_output=True, text=True, env=env_for(tmp_path_factory.mktemp("cache")),
                          timeout=600)
    if proc.returncode != 0 and "cc" in proc.stderr and "not found" in proc.stderr:
        pytest.skip("no C compiler to link the library")
    assert proc.returncode == 0, proc.stderr
    return runtime.load(out / "kernels")


# ---- expectations ---------------------------------------------------------------------------

N = "numpy"


@dataclass(frozen=True)
class Err:
    """An exception of class `cls` whose message names argument `arg` (or matches `match`)."""

    cls: type
    arg: str | None = None
    match: str | None = None


@dataclass
class Case:
    name: str
    make: Callable[[Path], tuple]          # tmp_path -> the arguments
    expect: dict[str, Any] = field(default_factory=dict)   # kind -> N or Err; missing: N

    def expected(self, kind: str) -> Any:
        if kind in self.expect:
            return self.expect[kind]
        if kind in ("signature", "load") and "native" in self.expect:
            return self.expect["native"]
        return self.expect.get("all", N)


X = np.array([0.5, -1.0, 2.0])
W = np.array([1.5, 2.0, -0.25])


class Sub(np.ndarray):
    """A user's ndarray subclass: it may redefine any operation, so kernels refuse it."""


def _memmap(tmp: Path) -> np.memmap:
    m = np.memmap(tmp / "x.dat", dtype=np.float64, mode="w+", shape=(3,))
    m[:] = X
    return m


def _readonly(a: np.ndarray) -> np.ndarray:
    a = a.copy()
    a.flags.writeable = False
    return a


TE, VE = TypeError, ValueError
NOT_FLOAT = Err(TE, "x", "only floating-point")        # grad of an integer input

AXPY_CASES = [
    Case("float64", lambda t: (X, W)),
    Case("float32", lambda t: (X.astype(np.float32), W)),
    Case("int64", lambda t: (np.array([1, -2, 3]), W), {"grad": NOT_FLOAT}),
    Case("int32", lambda t: (np.array([1, -2, 3], np.int32), W), {"grad": NOT_FLOAT}),
    Case("bool", lambda t: (np.array([True, False, True]), W), {"grad": NOT_FLOAT}),
    Case("float16", lambda t: (X.astype(np.float16), W)),
    Case("uint8", lambda t: (np.array([1, 2, 3], np.uint8), W), {"grad": NOT_FLOAT}),
    Case("int16", lambda t: (np.array([1, -2, 3], np.int16), W), {"grad": NOT_FLOAT}),
    Case("uint64", lambda t: (np.array([1, 2, 3], np.uint64), W), {"grad": NOT_FLOAT}),
    # complex: lazy kernels take it (docs/complex.md); an f64[n] parameter does not (not a safe
    # cast), and grad of the complex sum is the error of a complex-valued output
    Case("complex128", lambda t: (X + 1j, W), {"native": Err(TE, "x"), "grad": Err(TE, None, "real-valued")}),
    Case("complex64", lambda t: ((X + 1j).astype(np.complex64), W),
         {"native": Err(TE, "x"), "grad": Err(TE, None, "real-valued")}),
    Case("object", lambda t: (X.astype(object), W), {"all": Err(TE, "x")}),
    Case("str", lambda t: (np.array(["a", "b", "c"]), W), {"all": Err(TE, "x")}),
    Case("bytes", lambda t: (np.array([b"a", b"b", b"c"]), W), {"all": Err(TE, "x")}),
    Case("datetime64", lambda t: (np.array(["2020-01-01"] * 3, "M8[D]"), W), {"all": Err(TE, "x")}),
    Case("timedelta64", lambda t: (np.array([1, 2, 3], "m8[s]"), W), {"all": Err(TE, "x")}),
    Case("structured", lambda t: (np.zeros(3, [("a", "f8")]), W), {"all": Err(TE, "x")}),
    Case("big-endian f8", lambda t: (X.astype(">f8"), W.astype(">f8"))),
    Case("big-endian i4", lambda t: (np.array([1, -2, 3], ">i4"), W), {"grad": NOT_FLOAT}),
    Case("np.matrix", lambda t: (np.matrix(X), np.matrix(W)), {"all": Err(TE, "x", "np.matrix")}),
    Case("masked", lambda t: (np.ma.array(X, mask=[0, 1, 0]), W), {"all": Err(TE, "x", "Masked")}),
    Case("masked w", lambda t: (X, np.ma.array(W, mask=[1, 0, 0])), {"all": Err(TE, "w", "Masked")}),
    Case("subclass", lambda t: (X.view(Sub), W), {"all": Err(TE, "x", "Sub")}),
    Case("recarray", lambda t: (np.rec.array(X), W), {"all": Err(TE, "x")}),
    Case("memmap", lambda t: (_memmap(t), W)),
    Case("rank 2", lambda t: (X.reshape(3, 1), W), {"native": Err(VE, "x", "1-d")}),
    Case("rank 0", lambda t: (np.array(0.5), W),
         {"native": Err(VE, "x", "1-d"), "vmap": Err(VE, "x", "0-d")}),
    Case("numpy scalar", lambda t: (np.float64(0.5), W),
         {"native": Err(VE, "x", "1-d"), "vmap": Err(VE, "x", "0-d")}),
    Case("python float", lambda t: (0.5, W),
         {"native": Err(VE, "x", "1-d"), "vmap": Err(VE, "x", "Python scalar")}),
    Case("python int", lambda t: (2, W),
         {"native": Err(VE, "x", "1-d"), "vmap": Err(VE, "x", "Python value"),
          "grad": Err(TE, "x", "compile-time constant")}),
    Case("python bool", lambda t: (True, W),
         {"native": Err(VE, "x", "1-d"), "vmap": Err(VE, "x", "Python value"),
          "grad": Err(TE, "x", "compile-time constant")}),
    Case("list", lambda t: ([0.5, -1.0, 2.0], W), {"vmap": Err(VE, "x", "Python scalar")}),
    Case("list of str", lambda t: (["a", "b", "c"], W),
         {"native": Err(TE, "x"), "jit": Err(CompileError, None, "did not contain a loop"),
          "vmap": Err(VE, "x"), "grad": Err(CompileError, None, "did not contain a loop")}),
    Case("ragged list", lambda t: ([[0.5], [1.0, 2.0]], W),
         {"native": Err(VE, "x", "inhomogeneous"), "jit": Err(CompileError, None, "same shape"),
          "vmap": Err(VE, "x"), "grad": Err(CompileError, None, "same shape")}),
    Case("None", lambda t: (None, W),
         {"native": Err(TE, "x", "None"), "jit": Err(CompileError, None, "NoneType"),
          "vmap": Err(VE, "x", "NoneType"), "grad": Err(CompileError, None, "NoneType")}),
    Case("mismatched n", lambda t: (X, np.ones(4)),
         {"native": Err(VE, "w", "symbol 'n'"), "jit": Err(CompileError, None, "broadcast"),
          "vmap": Err(VE, None, "different sizes"), "grad": Err(CompileError, None, "broadcast")}),
    Case("zero-size", lambda t: (np.ones(0), np.ones(0))),
    Case("strided view", lambda t: (np.arange(6.0)[::2], W)),
    Case("negative stride", lambda t: (X[::-1], W[::-1])),
    Case("negative stride step 2", lambda t: (np.arange(6.0)[::-2], W)),
    Case("read-only", lambda t: (_readonly(X), _readonly(W))),
    Case("broadcast view", lambda t: (np.broadcast_to(np.array(0.5), (3,)), W)),
    Case("nan and inf", lambda t: (np.array([np.nan, np.inf, -np.inf]), np.array([1.0, 0.0, -0.0]))),
    Case("extremes", lambda t: (np.array([1e308, 5e-324, -0.0]), np.array([10.0, 0.5, 2.0]))),
]


def _axpy_kernel(kind: str, lib: Any) -> Callable[..., Any]:
    if kind == "jit":
        return jit(K.axpy.fn)
    if kind == "signature":
        return K.axpy
    if kind == "load":
        return lib.axpy
    if kind == "vmap":
        return vmap(K.axpy.fn)
    return grad(lambda x, w: np.sum(K.axpy.fn(x, w)))


def _oracle(kind: str, fn: Callable[..., Any], args: tuple) -> Any:
    with np.errstate(all="ignore"):
        if kind == "vmap":
            return np.stack([fn(*[a[i] for a in args]) for i in range(len(args[0]))]) if len(args[0]) \
                else fn(*args)
        if kind == "grad":                     # d/dx sum(x * w + 1) = w, summed over broadcasting
            x, w = np.asarray(args[0], np.float64), np.asarray(args[1], np.float64)
            g = np.broadcast_to(w, np.broadcast_shapes(x.shape, w.shape))
            while g.ndim > x.ndim:
                g = g.sum(axis=0)
            return g.sum(axis=tuple(i for i, n in enumerate(x.shape) if n == 1 and g.shape[i] != 1),
                         keepdims=True) if x.ndim else g
        return fn(*args)


def _check(kind: str, kernel: Callable[..., Any], fn: Callable[..., Any], args: tuple, expected: Any) -> None:
    before = [np.array(a, copy=True) if isinstance(a, np.ndarray) else None for a in args]
    if expected == N:
        got = kernel(*args)
        want = _oracle(kind, fn, args)
        if kind == "grad":
            if isinstance(args[0], list):
                got = np.array(got)
            np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-6, atol=1e-9)
            assert np.shape(got) == np.shape(args[0])
        else:
            assert type(got) is type(want) or (isinstance(got, np.ndarray) and isinstance(want, np.ndarray)), \
                (type(got), type(want))
            assert np.asarray(got).dtype == np.asarray(want).dtype
            assert np.shape(got) == np.shape(want)
            np.testing.assert_allclose(got, want, rtol=1e-15, atol=0, equal_nan=True)
    else:
        with pytest.raises(expected.cls) as info:
            kernel(*args)
        text = str(info.value)
        if expected.arg is not None:
            assert f"'{expected.arg}'" in text, text
        if expected.match is not None:
            assert expected.match in text, text
        assert isinstance(info.value, (TypeError, ValueError, OverflowError, MemoryError)), type(info.value)
    for a, b in zip(args, before):            # the caller's arrays are never written
        if b is not None:
            np.testing.assert_array_equal(np.asarray(a), b)


def _params(cases: list[Case], kinds: tuple[str, ...]) -> list[Any]:
    return [pytest.param(c, k, id=f"{c.name}-{k}") for c in cases for k in kinds]


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")   # np.matrix
@pytest.mark.parametrize("case, kind", _params(AXPY_CASES, KINDS))
def test_axpy(case, kind, request, tmp_path):
    lib = request.getfixturevalue("lib") if kind == "load" else None
    _check(kind, _axpy_kernel(kind, lib), K.axpy.fn, case.make(tmp_path), case.expected(kind))


# ---- a kernel with a fixed dim: f64[n, 3] ---------------------------------------------------

A = np.arange(12.0).reshape(4, 3)

ROWSUM_CASES = [
    Case("C order", lambda t: (A,)),
    Case("Fortran order", lambda t: (np.asfortranarray(A),)),
    Case("transposed view", lambda t: (np.ascontiguousarray(A.T).T,)),
    Case("negative strides", lambda t: (A[::-1, ::-1],)),
    Case("column slice", lambda t: (np.arange(20.0).reshape(4, 5)[:, 1:4],)),
    Case("zero rows", lambda t: (np.ones((0, 3)),)),
    Case("wrong fixed dim", lambda t: (np.ones((4, 4)),), {"native": Err(VE, "a", "dimension 1 must be 3")}),
    Case("zero fixed dim", lambda t: (np.ones((4, 0)),), {"native": Err(VE, "a", "dimension 1 must be 3")}),
    Case("rank 1", lambda t: (np.ones(3),), {"native": Err(VE, "a", "2-d"), "jit": Err(CompileError, None, "axis 1")}),
    Case("rank 3", lambda t: (np.ones((2, 4, 3)),), {"native": Err(VE, "a", "2-d")}),
    Case("int32", lambda t: (A.astype(np.int32),)),
    Case("float32", lambda t: (A.astype(np.float32),)),
]


@pytest.mark.parametrize("case, kind", _params(ROWSUM_CASES, ("jit", "signature", "load")))
def test_rowsum(case, kind, request, tmp_path):
    kernel = {"jit": lambda: jit(K.rowsum.fn), "signature": lambda: K.rowsum,
              "load": lambda: request.getfixturevalue("lib").rowsum}[kind]()
    fn = K.rowsum.fn if kind == "jit" else (lambda a: K.rowsum.fn(np.asarray(a, np.float64)))
    _check(kind, kernel, fn, case.make(tmp_path), case.expected(kind))


# ---- integer and float32 kernels: casting rules and Python ints -----------------------------

KI = np.array([1, -2, 2**62])

SHIFT_CASES = [
    Case("int64", lambda t: (3, KI)),
    Case("int32 array", lambda t: (3, KI[:2].astype(np.int32))),
    Case("numpy int64 scalar", lambda t: (np.int64(-7), KI)),
    Case("python int beyond int64", lambda t: (2**70, KI), {"native": Err(OverflowError, "s", "out of bounds"),
                                                             "jit": Err(CompileError, None, "out of bounds")}),
    Case("wrapping add", lambda t: (2**62, KI)),        # int64 wraps around, as in NumPy
    Case("python float", lambda t: (0.5, KI), {"native": Err(TE, "s", "float64")}),
    Case("float64 array", lambda t: (3, KI.astype(np.float64)), {"native": Err(TE, "k", "float64")}),
    Case("uint64 array", lambda t: (3, np.array([1, 2], np.uint64)), {"native": Err(TE, "k", "uint64")}),
    Case("uint8 array", lambda t: (3, np.array([1, 250], np.uint8))),   # safe to int64: converted
    Case("uint8 array, int beyond it", lambda t: (300, np.array([1, 250], np.uint8)),
         {"jit": Err(OverflowError, None, "out of bounds for uint8")}),
    Case("list with big int", lambda t: (3, [1, 2**70]),       # a list + an int: Python's TypeError
         {"native": Err(TE, "k", "object"), "jit": Err(CompileError, None, "can only concatenate")}),
]


def _int_oracle(s: Any, k: Any) -> Any:
    return K.shift.fn(s, k)


@pytest.mark.parametrize("case, kind", _params(SHIFT_CASES, ("jit", "signature", "load")))
def test_shift(case, kind, request, tmp_path):
    kernel = {"jit": lambda: jit(K.shift.fn), "signature": lambda: K.shift,
              "load": lambda: request.getfixturevalue("lib").shift}[kind]()
    args = case.make(tmp_path)
    expected = case.expected(kind)
    if expected == N and kind != "jit" and isinstance(args[0], int) and np.asarray(args[1]).dtype != np.int64:
        expected = N                                    # signature: int32 -> int64 like NumPy's promotion
    with np.errstate(over="ignore"):
        _check(kind, kernel, _int_oracle if kind == "jit" else _as_int64(K.shift.fn), args, expected)


def _as_int64(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The signature kernel takes int64: NumPy's result for the arguments converted as documented."""
    return lambda s, k: fn(np.int64(s), np.asarray(k, np.int64))


HALF_CASES = [
    Case("float32", lambda t: (np.array([1.0, -3.0, np.inf], np.float32),)),
    Case("float16", lambda t: (np.array([1.0, -3.0], np.float16),)),
    Case("float64", lambda t: (np.array([1.0, -3.0]),), {"native": Err(TE, "x", "float64")}),
    Case("int64", lambda t: (np.array([1, -3]),), {"native": Err(TE, "x", "int64")}),
    Case("int32 (not safe to float32)", lambda t: (np.array([1, -3], np.int32),),
         {"native": Err(TE, "x", "int32")}),
    Case("bool", lambda t: (np.array([True, False]),)),
]


@pytest.mark.parametrize("case, kind", _params(HALF_CASES, ("jit", "signature", "load")))
def test_half(case, kind, request, tmp_path):
    kernel = {"jit": lambda: jit(K.half.fn), "signature": lambda: K.half,
              "load": lambda: request.getfixturevalue("lib").half}[kind]()
    args = case.make(tmp_path)
    fn = K.half.fn if kind == "jit" else (lambda x: K.half.fn(np.asarray(x, np.float32)))
    _check(kind, kernel, fn, args, case.expected(kind))


# ---- uint8 and float16 arguments: f(c: u8[n], h: f16[n]) ---------------------------------------

C8 = np.array([0, 7, 200, 255], np.uint8)
H16 = np.array([0.5, -2.0, 3.25, 1000.0], np.float16)

SMALL_CASES = [
    Case("uint8 and float16", lambda t: (C8, H16)),
    Case("bool for uint8", lambda t: (C8 > 100, H16)),                  # safe casts: converted
    Case("int8 for uint8", lambda t: (C8.astype(np.int8), H16), {"native": Err(TE, "c", "int8")}),
    Case("uint16 for uint8", lambda t: (C8.astype(np.uint16), H16), {"native": Err(TE, "c", "uint16")}),
    Case("float32 for float16", lambda t: (C8, H16.astype(np.float32)), {"native": Err(TE, "h", "float32")}),
    Case("int8 for float16", lambda t: (C8, np.array([1, -2, 3, 4], np.int8))),   # int8 -> f16 is safe
    Case("rank 2 float16", lambda t: (C8, H16.reshape(2, 2)), {"native": Err(VE, "h", "1-d"),
                                                               "jit": Err(CompileError, None, "broadcast")}),
]


@pytest.mark.parametrize("case, kind", _params(SMALL_CASES, ("jit", "signature", "load")))
def test_small_dtypes(case, kind, request, tmp_path):
    kernel = {"jit": lambda: jit(K.small.fn), "signature": lambda: K.small,
              "load": lambda: request.getfixturevalue("lib").small}[kind]()
    args = case.make(tmp_path)
    fn = K.small.fn if kind == "jit" else \
        (lambda c, h: K.small.fn(np.asarray(c).astype(np.uint8), np.asarray(h).astype(np.float16)))
    expected = case.expected(kind)
    if expected != N:
        _check(kind, kernel, fn, args, expected)
        return
    got, want = kernel(*args), fn(*args)
    assert len(got) == len(want)
    for g, w in zip(got, want):                 # exact: float16 rounds every result as NumPy does
        np.testing.assert_array_equal(g, w, strict=True)


def test_built_library_manifest_and_header_name_the_small_dtypes(lib):
    entry = next(k for k in lib.manifest["kernels"] if k["name"] == "small")
    assert entry["inputs"] == [{"name": "c", "type": "u8[n]"}, {"name": "h", "type": "f16[n]"}]
    assert [o["type"] for o in entry["outputs"]] == ["u8[n]", "f16[n]", "bool[n]", "f16[n]"]
    assert [a.dtype for a in lib.small.native.inputs] == [np.dtype(np.uint8), np.dtype(np.float16)]
    header = lib.path.with_suffix(".h").read_text()
    assert "uint8_t" in header and "_Float16" in header


# ---- the crash-prone cases, in a subprocess ---------------------------------------------------

CRASH_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import runtime
    from compiler import jit
    from tests.boundary import kernels as K
    lib = runtime.load(sys.argv[1])
    huge = np.lib.stride_tricks.as_strided(np.ones(1), shape=(2**40,), strides=(0,))

    def n5(x):
        n = x.shape[0]
        return np.zeros((n, n, n, n, n), np.float32).sum() + x.sum()

    cases = {
        "temporary of 2**64 elements (signature)": lambda: K.quartic(np.ones(65536)),
        "temporary of 2**64 elements (library)": lambda: lib.quartic(np.ones(65536)),
        "temporary of 2**64 elements (jit)": lambda: jit(K.quartic.fn)(np.ones(65536)),
        "temporary of 1e20 elements (jit)": lambda: jit(n5)(np.ones(10**4)),
        "8 TiB broadcast input (signature)": lambda: K.axpy(huge, huge),
        "8 TiB broadcast input (library)": lambda: lib.axpy(huge, huge),
        "8 TiB broadcast input (jit)": lambda: jit(K.axpy.fn)(huge, huge),
        "quartic, small n (library)": lambda: float(lib.quartic(np.ones(3))),
    }
    out = {}
    for name, thunk in cases.items():
        try:
            out[name] = ["ok", repr(thunk())]
        except Exception as e:
            out[name] = [type(e).__name__, str(e)]
    print(json.dumps(out))
""")


def test_crash_prone_cases_in_a_subprocess(lib, tmp_path):
    script = tmp_path / "crash_prone.py"
    script.write_text(CRASH_SCRIPT)
    proc = subprocess.run([sys.executable, str(script), str(Path(lib.path).with_suffix(""))],
                          capture_output=True, text=True, cwd=REPO, env=env_for(None), timeout=300)
    assert proc.returncode == 0, f"exit status {proc.returncode}\n{proc.stderr[-3000:]}"
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    for name, (cls, message) in out.items():
        if name.startswith("temporary"):                # NumPy: ValueError: array is too big
            assert cls == "ValueError" and "array is too big" in message, (name, cls, message)
        elif name.startswith("8 TiB"):                  # NumPy: MemoryError: Unable to allocate
            assert cls == "MemoryError", (name, cls, message)
    assert out["quartic, small n (library)"] == ["ok", repr(float(np.ones((3,) * 4).sum() + 3))]


def test_boundary_case_count():
    """The size of the tables above (reported in the closing note of the reliability issue)."""
    n = len(AXPY_CASES) * len(KINDS) + (len(ROWSUM_CASES) + len(SHIFT_CASES) + len(HALF_CASES)) * 3
    assert n >= 250
