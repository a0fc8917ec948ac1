"""Products through BLAS gemm (runtime/blas.py, backend/library.py, primitives/gemm.py).

Oracles: NumPy's einsum without `optimize` (its own C loops, not BLAS) for values; a counting
provider (a ctypes callback in front of the real routine) proves the kernel called gemm, and
a provider of None (AOTX_BLAS=none) that the generated fallback gives the same results.
"""
from __future__ import annotations

import ctypes
import textwrap

import numpy as np
import pytest
from llvmlite import ir as ll

import compiler
from compiler import grad, jit, pipeline, vmap
from compiler.backend import target as targets
from compiler.backend.buffers import I64T, PTR, Buffer, memory_type
from compiler.backend.codegen import Codegen
from compiler.backend.jit import LoadedObject
from compiler.backend.kernel import library_routines
from compiler.build import build
from compiler.ir.dims import Sym
from compiler.ir.parser import parse
from compiler.ir.primitive import OPAQUE, REGISTRY, declare, define
from compiler.ir.types import F64, I64
from compiler.primitives import ops
from compiler.primitives import gemm
from runtime import blas
from runtime.abi import parse_spec
from runtime.loader import NativeKernel
from tests.runtime.subproc import run_python

pytestmark = pytest.mark.skipif(blas.provider() is None, reason="NumPy ships no BLAS here")

_ARGS = [ctypes.c_void_p] * 13 + [ctypes.c_int64] * 2
_GEMM = ctypes.CFUNCTYPE(None, *_ARGS)


class Counting:
    """A provider whose gemm routines count their calls and forward to the real ones."""

    def __init__(self, real: blas.Provider) -> None:
        self.real = real
        self.calls: dict[str, int] = {}
        self._callbacks: dict[str, object] = {}
        self.path, self.pattern = real.path, real.pattern

    def address(self, routine: str) -> int:
        if routine not in self._callbacks:
            forward = _GEMM(self.real.address(routine))

            def counted(*args: object, routine: str = routine) -> None:
                self.calls[routine] = self.calls.get(routine, 0) + 1
                forward(*args)
            self._callbacks[routine] = _GEMM(counted)
        return ctypes.cast(self._callbacks[routine], ctypes.c_void_p).value or 0


_COUNTING: list[Counting] = []     # one for the session: loaded kernels keep its callbacks


@pytest.fixture
def counting(monkeypatch):
    if not _COUNTING:
        real = blas.provider()
        assert real is not None
        _COUNTING.append(Counting(real))
    fake = _COUNTING[0]
    fake.calls.clear()
    monkeypatch.setattr(blas, "_cached", [fake])
    return fake


def oracle(spec: str, *xs: np.ndarray) -> np.ndarray:
    """einsum in its own loops (no BLAS), in long double for accuracy."""
    wide = [x.astype(np.clongdouble if np.iscomplexobj(x) else np.longdouble) for x in xs]
    return np.einsum(spec, *wide, optimize=False)


def check(got: np.ndarray, want: np.ndarray, dtype: np.dtype) -> None:
    tol = 2e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got.astype(want.dtype), want, rtol=0, atol=tol * scale)
    assert got.dtype == dtype


def rand(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


# one kernel per spelling, shared by every dtype and size (compiled once per signature)
def _matmul(a, b):
    return a @ b


def _at_b(a, b):
    return a.T @ b


def _a_bt(a, b):
    return a @ b.T


def _batched(a, b):
    return np.einsum("bij,bkj->bik", a, b)


def _middle(a, b):
    return np.einsum("ibj,bjk->bik", a, b)


def _broadcast(a, b):
    return np.matmul(a, b)


def _tensordot(a, b):
    return np.tensordot(a, b, axes=([1, 2], [0, 1]))


def _strided(a, b):
    return a[::2] @ b[:, 1:]


def _cast(a, b):
    return a.astype(np.float64) @ b


matmul, at_b, a_bt, batched, middle, broadcast, tensordot, strided, cast = (
    jit(f) for f in (_matmul, _at_b, _a_bt, _batched, _middle, _broadcast, _tensordot, _strided, _cast))


DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_through_gemm_and_without_a_provider(dtype, counting, monkeypatch):
    rng = np.random.default_rng(0)
    a, b = rand(rng, (130, 129), dtype), rand(rng, (129, 131), dtype)
    want = oracle("ij,jk->ik", a, b)
    check(matmul(a, b), want, dtype)
    routine = {np.float32: "sgemm", np.float64: "dgemm", np.complex64: "cgemm", np.complex128: "zgemm"}[dtype]
    assert counting.calls == {routine: 1}
    monkeypatch.setattr(blas, "_cached", [None])
    fallback = jit(_matmul)                              # loaded now: its pointers stay NULL
    check(fallback(a, b), want, dtype)
    assert counting.calls == {routine: 1}


@pytest.mark.parametrize("kernel, spec, shapes", [
    (at_b, "ji,jk->ik", [(129, 130), (129, 131)]),
    (a_bt, "ij,kj->ik", [(130, 129), (131, 129)]),
    (batched, "bij,bkj->bik", [(3, 130, 129), (3, 131, 129)]),
    (middle, "ibj,bjk->bik", [(130, 2, 129), (2, 129, 131)]),
    (broadcast, "bij,jk->bik", [(3, 130, 129), (129, 131)]),
    (tensordot, "ijk,jkl->il", [(130, 8, 17), (8, 17, 131)]),
    (strided, "ij,jk->ik", None),
    (cast, "ij,jk->ik", None),
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_transposed_batched_broadcast_strided_operands(kernel, spec, shapes, dtype, counting):
    rng = np.random.default_rng(1)
    if kernel is strided:
        a, b = rand(rng, (260, 129), dtype), rand(rng, (129, 132), dtype)
        want = oracle(spec, a[::2], b[:, 1:])
    elif kernel is cast:
        real = dtype if np.dtype(dtype).kind == "f" else np.float32
        a, b = rand(rng, (130, 129), real), rand(rng, (129, 131), np.float64)
        want = oracle(spec, a, b)          # a float32 operand is converted while packed
        dtype = np.float64
    else:
        a, b = (rand(rng, s, dtype) for s in shapes)
        want = oracle(spec, a, b)
    check(kernel(a, b), want, dtype)
    batch = a.shape[0] if kernel in (batched, broadcast) else b.shape[0] if kernel is middle else 1
    assert sum(counting.calls.values()) == batch


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_symbolic_sizes_on_both_sides_of_the_threshold(dtype, counting):
    name = np.dtype(dtype).name.replace("float", "f").replace("complex", "c")
    kernel = jit(_matmul, signature=f"{name}[n, k], {name}[k, m]")
    rng = np.random.default_rng(2)
    least, product = gemm.thresholds(np.dtype(dtype))
    big = round(product ** (1 / 3)) + 1
    for shape in ((3, 5, 4), (1, 200, 200), (least - 1, big, big), (big, big, big), (big, 2 * big, least),
                  (big, least, least), (0, big, big), (least, least, big), (big, big, 1),
                  (4, 65536, 4), (3, 131072, 4), (4, 512, 512), (4, 511, 600)):
        counting.calls.clear()
        n, k, m = shape                                   # the documented rules
        calls = int(min(shape) >= least and np.prod(shape) >= product
                    or dtype == np.float64 and k >= gemm.LONG_K and min(n, m) >= gemm.LONG_K_MIN_DIM
                    and np.prod(shape) >= gemm.LONG_K_PRODUCT)
        a, b = rand(rng, shape[:2], dtype), rand(rng, shape[1:], dtype)
        want = oracle("ij,jk->ik", a, b)
        if want.size:
            check(kernel(a, b), want, dtype)
        else:
            assert kernel(a, b).shape == want.shape
        assert sum(counting.calls.values()) == calls, shape


def _loss(w, x):
    return np.tanh(x @ w).sum()


loss_grad = jit(grad(_loss))
loss_grad_x = jit(grad(_loss, argnums=1))
per_example = jit(vmap(lambda w, x: np.tanh(x @ w), in_dims=(None, 0)))


def test_grad_and_vmap_of_large_products(counting):
    rng = np.random.default_rng(3)
    w, x = rng.standard_normal((130, 129)) / 10, rng.standard_normal((131, 130)) / 10
    t = np.tanh(oracle("ij,jk->ik", x, w))
    want = oracle("ji,jk->ik", x, 1 - t * t)              # d/dw sum(tanh(x w)) = x^T (1 - t^2)
    check(loss_grad(w, x), want, np.float64)             # one pass over x (primitives/glm.py)
    counting.calls.clear()
    want_x = oracle("ij,kj->ik", 1 - t * t, w)            # d/dx = (1 - t^2) w^T
    check(loss_grad_x(w, x), want_x, np.float64)
    assert counting.calls.get("dgemm", 0) >= 2            # forward and backward products
    xs = rng.standard_normal((2, 131, 130)) / 10
    counting.calls.clear()
    got = per_example(w, xs)
    for i in range(2):
        check(got[i], np.tanh(oracle("ij,jk->ik", xs[i], w)), np.float64)
    assert counting.calls.get("dgemm", 0) >= 1


def test_small_products_keep_the_loop_nest(counting):
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((40, 40)), rng.standard_normal((40, 40))
    check(matmul(a, b), oracle("ij,jk->ik", a, b), np.float64)
    assert counting.calls == {}
    assert "__dgemm" not in matmul.lower(a, b).llvm


def test_cache_hit_fills_the_pointers(tmp_path, monkeypatch, counting):
    monkeypatch.setenv("AOTX_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((130, 129)), rng.standard_normal((129, 131))
    jit(_matmul)(a, b)                                     # compiled and stored
    before = compiler.diagnostics()
    again = jit(_matmul)                                   # a new Kernel: loaded from the disk
    counting.calls.clear()
    check(again(a, b), oracle("ij,jk->ik", a, b), np.float64)
    after = compiler.diagnostics()
    assert after["cache_hits"] == before["cache_hits"] + 1
    assert after["llvm_compilations"] == before["llvm_compilations"]
    assert counting.calls == {"dgemm": 1}


BUILT = textwrap.dedent('''
    import numpy as np
    from compiler import jit

    @jit(signature="f64[n, k], f64[k, m]")
    def prod(a, b):
        return a @ b

    @jit(signature="c64[n, k], c64[m, k]")
    def prod_h(a, b):
        return a @ b.conj().T
''')

LOAD = textwrap.dedent('''
    import numpy as np
    import runtime
    lib = runtime.load("build/blaslib")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((130, 129)), rng.standard_normal((129, 131))
    c = (rng.standard_normal((130, 129)) + 1j * rng.standard_normal((130, 129))).astype(np.complex64)
    d = (rng.standard_normal((131, 129)) + 1j * rng.standard_normal((131, 129))).astype(np.complex64)
    want = np.einsum("ij,jk->ik", a.astype(np.longdouble), b, optimize=False)
    assert np.abs(lib.prod(a, b) - want).max() < 1e-12 * np.abs(want).max()
    want = np.einsum("ij,kj->ik", c.astype(np.clongdouble), d.conj(), optimize=False)
    assert np.abs(lib.prod_h(c, d) - want).max() < 2e-5 * np.abs(want).max()
    small = lib.prod(a[:3, :4], b[:4, :2])
    assert np.abs(small - a[:3, :4] @ b[:4, :2]).max() < 1e-14
    print(lib.prod.library_filled, lib.prod_h.library_filled, lib.manifest["kernels"][0]["routines"])
''')


def test_built_library_uses_the_provider_and_works_without(tmp_path):
    (tmp_path / "blaslib.py").write_text(BUILT)
    build(tmp_path / "blaslib.py", tmp_path / "build", progress=lambda line: None)
    header = (tmp_path / "build" / "blaslib.h").read_text()
    assert "extern void *blaslib_prod__dgemm;" in header
    assert "extern void *blaslib_prod_h__cgemm;" in header
    out = run_python(LOAD, tmp_path).stdout.split()
    assert out == ["1", "1", "['dgemm']"]
    out = run_python(LOAD, tmp_path, AOTX_BLAS="none").stdout.split()
    assert out == ["0", "0", "['dgemm']"]


def test_provider_knob(monkeypatch, tmp_path):
    monkeypatch.setenv("AOTX_BLAS", "none")
    blas.reset()
    try:
        assert blas.provider() is None and blas.describe().startswith("none")
        monkeypatch.setenv("AOTX_BLAS", str(tmp_path / "missing.so"))
        blas.reset()
        assert blas.provider() is None
        lib = blas.numpy_libraries()[0]
        monkeypatch.setenv("AOTX_BLAS", str(lib))
        monkeypatch.setenv("AOTX_BLAS_SYMBOLS", "scipy_{}_64_")
        blas.reset()
        p = blas.provider()
        assert p is not None and p.address("dgemm") and p.address("dgetrf") and not p.address("nope")
        assert not p.address("bad name")
    finally:
        monkeypatch.undo()
        blas.reset()


# ---- a LAPACK call through the same mechanism: the example a factorization's lowering copies --

def _getrf_module(name: str) -> str:
    """LLVM IR of ``int32 NAME(f64 *a, int64 *ipiv, int64 *info, int64 n)``: LU of the n x n
    row-major `a` in place with dgetrf (LAPACK sees a^T), or info = -999 without a provider."""
    module = ll.Module(name)
    fn = ll.Function(module, ll.FunctionType(ll.IntType(32), [PTR, PTR, PTR, I64T]), name)
    cg = Codegen(module, fn, {"n": fn.args[3]}, fastmath=False, has_fma=False, name=name)

    def buffer(arg: object, dtype: np.dtype, shape: tuple) -> Buffer:
        return Buffer(cg.alloca_builder.bitcast(arg, ll.PointerType(memory_type(dtype))), dtype, shape)
    n = Sym("n")
    a, ipiv, info = buffer(fn.args[0], F64, (n, n)), buffer(fn.args[1], I64, (n,)), buffer(fn.args[2], I64, ())

    def lapack(invoke):                  # the library branch: one call, scalars by reference
        size = cg.dim(n)
        invoke([size, size, cg.pointer(a), size, cg.pointer(ipiv), cg.pointer(info)])

    def generated():                     # a real lowering emits its generated LU here
        cg.store(info, [], cg.const(I64, -999))
    cg.library_call("dgetrf", lapack, generated)
    cg.finish()
    return str(module)


@pytest.mark.parametrize("provider", [True, False])
def test_lapack_call_path(provider, monkeypatch):
    if not provider:
        monkeypatch.setattr(blas, "_cached", [None])
    name = "aotx_test_getrf"
    text = _getrf_module(name)
    assert library_routines(text, name) == ["dgetrf"]
    code = pipeline.compile_llvm(text, targets.host())
    loaded = LoadedObject(code.object, targets.host(), name, ["dgetrf"])
    assert loaded.library_filled == int(provider)
    call = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                            ctypes.c_int64)(loaded.address(name))
    rng = np.random.default_rng(6)
    a0 = rng.standard_normal((5, 5))
    a, ipiv, info = a0.copy(), np.zeros(5, np.int64), np.zeros((), np.int64)
    assert call(a.ctypes.data, ipiv.ctypes.data, info.ctypes.data, 5) == 0
    if not provider:
        assert int(info) == -999 and np.array_equal(a, a0)
        return
    assert int(info) == 0
    lu = a.T                                # column-major factors of a0^T: P a0^T = L U
    lower, upper = np.tril(lu, -1) + np.eye(5), np.triu(lu)
    rows = np.arange(5)
    for i, p in enumerate(ipiv - 1):        # 1-based row interchanges, in order
        rows[[i, p]] = rows[[p, i]]
    np.testing.assert_allclose((lower @ upper), a0.T[rows], atol=1e-12)


# ---- a primitive kept for a library call, its decomposition as the fallback --------------------

LIBRARY_MATMUL = """
func @f(%a: f64[n, n], %b: f64[n, n]) -> (f64[n, n]) {
  %0 = test_library_matmul(%a, %b) : f64[n, n]
  %1 = mul(%0, %0) : f64[n, n]
  return %1
}"""


def _lower_library_matmul(cg, op, outs):
    """The OPAQUE lowering of a primitive with `library_when`: the routine where the kernel
    has it, the op's region (its decomposition, already lowered to primitives) elsewhere."""
    a, b = (cg.buffers[v] for v in op.operands)
    n = cg.dim(op.operands[0].type.shape[0])

    def call(invoke):
        one, zero = cg.const(op.results[0].dtype, 1.0), cg.const(op.results[0].dtype, 0.0)
        invoke([cg.char("N"), cg.char("N"), n, n, n, one, cg.pointer(b), n, cg.pointer(a), n,
                zero, cg.pointer(outs[0]), n])
    cg.library_call("dgemm", call, fallback=lambda: cg.lower_fallback(op, outs), strings=2)


@pytest.fixture
def library_matmul():
    prim = declare("test_library_matmul", OPAQUE)
    try:
        define(prim, shape_rule=lambda types, params: (types[0],),
               numpy_ref=lambda a, b: a @ b, lower=_lower_library_matmul, streams_operands=False,
               decomposition=lambda b, op, args: [ops.dot_general(b, args[0], args[1], (((1,), (0,)), ((), ())))],
               library_when=lambda op: True, doc="a matrix product kept for dgemm (test only)")
        yield prim
    finally:
        REGISTRY.pop(prim.name)


@pytest.mark.parametrize("provider", [True, False])
def test_a_primitive_kept_for_a_library_call(provider, library_matmul, counting, monkeypatch):
    if not provider:
        monkeypatch.setattr(blas, "_cached", [None])
    fn = parse(LIBRARY_MATMUL)
    decomposed = pipeline.optimize_ir(fn)
    (kept,) = [op for op in decomposed.body.ops if op.prim is library_matmul]
    assert [op.prim for op in kept.regions[0].ops] == [ops.dot_general_p]
    artifacts = pipeline.compile_ir(fn, "aotx_test_library_matmul", targets.host())
    assert artifacts.library == ["dgemm"]
    loaded = pipeline.load(artifacts)
    assert loaded.library_filled == int(provider)
    kernel = NativeKernel("f", loaded.address(artifacts.name),
                          [parse_spec("a", "f64[n, n]"), parse_spec("b", "f64[n, n]")],
                          [parse_spec("result0", "f64[n, n]")], artifacts.symbols, keepalive=loaded)
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((9, 9)), rng.standard_normal((9, 9))
    (got,) = kernel(a, b)
    check(got, oracle("ij,jk->ik", a, b) ** 2, np.float64)
    assert counting.calls == ({"dgemm": 1} if provider else {})
