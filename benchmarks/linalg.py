"""Linear algebra: aotx against NumPy (and JAX/torch when installed) in one run.

    python benchmarks/linalg.py [--repeat 7] [--quick]

1. matmul of 64, 256 and 1024 square matrices, float64 and float32 (and complex128 64, 256);
2. the crossover of item 4 of issue 11: the generated loop nest against the gemm call, for
   square products and matrix-vector products, in the same process (the loop nest is a kernel
   loaded without a provider, gemm one compiled with the size threshold at 1);
3. batched solve and cholesky of 10,000 4x4 and 100 64x64 systems, eigh of 256x256 and
   inv of 1024x1024; a function aotx refuses is skipped with a note.

Single-threaded by default (OPENBLAS_NUM_THREADS=1, set before NumPy loads, so NumPy and
aotx's gemm calls use one thread of the same OpenBLAS); set it yourself to compare threaded.
"""
from __future__ import annotations

import argparse
import os
from typing import Any, Callable

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from _timing import best  # noqa: E402  (benchmarks/ is the script's directory)
from compiler import jit  # noqa: E402
from compiler.errors import CompileError  # noqa: E402
from compiler.primitives import factor_lapack, gemm, spectral_lapack  # noqa: E402
from runtime import blas  # noqa: E402


def matmul(a, b):
    return a @ b


def matvec(a, x):
    return a @ x


def solve(a, b):
    return np.linalg.solve(a, b)


def cholesky(a):
    return np.linalg.cholesky(a)


def eigh(a):
    return np.linalg.eigh(a)


def svd(a):
    return np.linalg.svd(a)


def inv(a):
    return np.linalg.inv(a)


def peers(fn: Callable[..., Any], name: str) -> dict[str, Callable[..., Any]]:
    """NumPy and whichever of JAX and torch are installed, for the function `name`."""
    out: dict[str, Callable[..., Any]] = {"numpy": fn}
    try:
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
        jfn = {"matmul": jnp.matmul, "solve": jnp.linalg.solve, "cholesky": jnp.linalg.cholesky,
               "eigh": jnp.linalg.eigh, "inv": jnp.linalg.inv, "svd": jnp.linalg.svd}[name]
        jf = jax.jit(jfn)
        out["jax"] = lambda *a: jax.block_until_ready(jf(*a))
    except ImportError:
        pass
    try:
        import torch
        torch.set_num_threads(1)
        tfn = {"matmul": torch.matmul, "solve": torch.linalg.solve, "cholesky": torch.linalg.cholesky,
               "eigh": torch.linalg.eigh, "inv": torch.linalg.inv, "svd": torch.linalg.svd}[name]
        out["torch"] = lambda *a: tfn(*(torch.from_numpy(x) for x in a))
    except ImportError:
        pass
    return out


def row(label: str, times: dict[str, float]) -> None:
    base = times["aotx"]
    cells = "  ".join(f"{k} {1e3 * t:9.3f} ms ({t / base:5.2f}x)" for k, t in times.items() if k != "aotx")
    print(f"  {label:28} aotx {1e3 * base:9.3f} ms   {cells}")


def matmuls(repeat: int, quick: bool) -> None:
    print("matmul (peer time / aotx time: >1 means aotx is faster)")
    rng = np.random.default_rng(0)
    kernel = jit(matmul)
    for dtype in (np.float64, np.float32, np.complex128):
        for n in (64, 256) if quick or dtype == np.complex128 else (64, 256, 1024):
            a, b = ((rng.standard_normal((n, n)) + (1j * rng.standard_normal((n, n))
                                                    if dtype == np.complex128 else 0)).astype(dtype)
                    for _ in range(2))
            single = dtype == np.float32
            np.testing.assert_allclose(kernel(a, b), a @ b, rtol=1e-3 if single else 1e-10,
                                       atol=1e-3 if single else 1e-10)
            times = {"aotx": best(lambda: kernel(a, b), repeat)}
            times.update({k: best(lambda f=f: f(a, b), repeat) for k, f in peers(matmul, "matmul").items()})
            row(f"{np.dtype(dtype).name} {n}x{n}", times)


def _compiled(fn: Callable[..., Any], args: tuple[np.ndarray, ...], *, provider: bool) -> Callable[..., Any]:
    """`fn` compiled for `args` in this process (no disk cache) and loaded with the provider
    and the gemm thresholds at 1 (always gemm), or without a provider (the generated code a
    kernel runs without one: the loop nest; a complex product that could call zgemm keeps
    complex arithmetic, a smaller one is four real products)."""
    names = ("GEMM_MIN_DIM", "GEMM_MIN_PRODUCT", "COMPLEX_MIN_DIM", "COMPLEX_MIN_PRODUCT")
    saved, saved_env = [getattr(gemm, k) for k in names], os.environ.get("AOTX_BLAS")
    try:
        if provider:
            for k in names:
                setattr(gemm, k, 1)
        os.environ["AOTX_BLAS"] = "auto" if provider else "none"
        blas.reset()
        kernel = jit(fn, cache=False)
        kernel(*args)                       # compiles and loads with these settings
        return kernel
    finally:
        for k, v in zip(names, saved):
            setattr(gemm, k, v)
        if saved_env is None:
            os.environ.pop("AOTX_BLAS", None)
        else:
            os.environ["AOTX_BLAS"] = saved_env
        blas.reset()


def crossover(repeat: int, quick: bool) -> None:
    print(f"crossover, float64 unless named (generated code time / gemm time: >1 means gemm wins); "
          f"aotx calls gemm when m, n, k >= {gemm.GEMM_MIN_DIM} and m*n*k >= {gemm.GEMM_MIN_PRODUCT:,} "
          f"(complex: {gemm.COMPLEX_MIN_DIM}, {gemm.COMPLEX_MIN_PRODUCT:,})")
    rng = np.random.default_rng(1)
    for name, fn, sizes, shape in (
            ("square: n x n @ n x n", matmul, (16, 64, 128, 256) if quick else (8, 16, 32, 64, 96, 128, 160, 192, 256, 512),
             lambda n: ((n, n), (n, n))),
            ("matrix-vector: n x n @ n", matvec, (16, 64, 256, 1024) if quick else (16, 64, 256, 512, 1024, 2048),
             lambda n: ((n, n), (n,))),
            ("vector-matrix: 1 x n @ n x n", matmul, (64, 256, 1024), lambda n: ((1, n), (n, n))),
            ("tall: 16n x 16 @ 16 x 16", matmul, (64, 256, 1024), lambda n: ((16 * n, 16), (16, 16))),
            ("long k: 16 x 16n @ 16n x 16", matmul, (64, 256, 1024), lambda n: ((16, 16 * n), (16 * n, 16))),
            ("skinny: n x n @ n x 4", matmul, (64, 256, 1024), lambda n: ((n, n), (n, 4))),
            ("complex128 square: n x n @ n x n", matmul, (8, 16, 32, 64, 128), lambda n: ((n, n), (n, n))),
            ("complex128 tall: 16n x 16 @ 16 x 16", matmul, (16, 64, 1024), lambda n: ((16 * n, 16), (16, 16)))):
        print(f"  {name}")
        for n in sizes:
            x, y = (rng.standard_normal(s) + (1j * rng.standard_normal(s) if "complex" in name else 0)
                    for s in shape(n))
            loops = _compiled(fn, (x, y), provider=False)
            calls = _compiled(fn, (x, y), provider=True)
            np.testing.assert_allclose(loops(x, y), calls(x, y), rtol=1e-9, atol=1e-9)
            t_loops, t_gemm = best(lambda: loops(x, y), repeat), best(lambda: calls(x, y), repeat)
            m_n_k = x.size * (y.size // x.shape[-1])
            print(f"    n={n:5}  m*n*k={m_n_k:>12,}  loops {1e3 * t_loops:9.4f} ms  "
                  f"gemm {1e3 * t_gemm:9.4f} ms  ({t_loops / t_gemm:5.2f}x)")


def spd(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    m = rng.standard_normal(shape)
    n = shape[-1]
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def decompositions(repeat: int) -> None:
    print("np.linalg (peer time / aotx time)")
    rng = np.random.default_rng(2)
    cases: list[tuple[str, Callable[..., Any], str, tuple[np.ndarray, ...]]] = []
    for batch, n in ((10_000, 4), (100, 64)):
        a = spd(rng, (batch, n, n))
        cases.append((f"solve {batch} x {n}x{n}", solve, "solve", (a, rng.standard_normal((batch, n, 1)))))
        cases.append((f"cholesky {batch} x {n}x{n}", cholesky, "cholesky", (a,)))
    cases.append(("eigh 256x256", eigh, "eigh", (spd(rng, (256, 256)),)))
    cases.append(("inv 1024x1024", inv, "inv", (spd(rng, (1024, 1024)),)))
    cases.append(("svd 256x256", svd, "svd", (rng.standard_normal((256, 256)),)))
    cases.append(("eigh 100 x 32x32", eigh, "eigh", (spd(rng, (100, 32, 32)),)))
    for label, fn, name, args in cases:
        kernel = jit(fn)
        try:
            kernel(*args)
        except CompileError as e:
            reason = str(e).splitlines()[0].split("Error: ", 1)[-1]
            print(f"  {label:28} skipped: aotx refuses it ({reason})")
            continue
        times = {"aotx": best(lambda: kernel(*args), repeat)}
        times.update({k: best(lambda f=f: f(*args), repeat) for k, f in peers(fn, name).items()})
        row(label, times)


def spectral_crossover(repeat: int, quick: bool) -> None:
    """eigh and svd: the generated Jacobi code (a kernel loaded without a provider) against
    LAPACK (xsyevd, xgesdd: the thresholds at 1), float64."""
    print(f"crossover of eigh and svd (generated code time / LAPACK time: >1 means LAPACK wins); "
          f"aotx calls LAPACK for eigh from n = {spectral_lapack.EIGH_MIN}, for svd from "
          f"min(m, n) = {spectral_lapack.SVD_MIN}")
    rng = np.random.default_rng(3)
    saved = spectral_lapack.EIGH_MIN, spectral_lapack.SVD_MIN
    sizes = ((10_000, 3), (10_000, 4), (1000, 6), (1000, 8), (1, 8), (1, 16), (1, 32))
    for name, fn, make in (("eigh", eigh, lambda s: spd(rng, s)), ("svd", svd_thin, rng.standard_normal)):
        for batch, n in sizes[:4] if quick else sizes:
            x = make((batch, n, n))
            try:
                loops = _compiled(fn, (x,), provider=False)
                spectral_lapack.EIGH_MIN = spectral_lapack.SVD_MIN = 1
                calls = _compiled(fn, (x,), provider=True)
            finally:
                spectral_lapack.EIGH_MIN, spectral_lapack.SVD_MIN = saved
            t_loops, t_lapack = best(lambda: loops(x), repeat), best(lambda: calls(x), repeat)
            print(f"    {name} {batch:6} x {n:3}x{n:<3}  generated {1e3 * t_loops:9.3f} ms  "
                  f"LAPACK {1e3 * t_lapack:9.3f} ms  ({t_loops / t_lapack:6.2f}x)")


def svd_thin(a):
    return np.linalg.svd(a, full_matrices=False)


def qr(a):
    return np.linalg.qr(a)


def _factor_compiled(fn: Callable[..., Any], args: tuple[np.ndarray, ...], *, provider: bool) -> Callable[..., Any]:
    """`fn` compiled in this process with LAPACK at every size (the factorization thresholds
    at 1) and loaded with the provider, or loaded without one (the generated code)."""
    names = ("LU_MIN", "TRSM_MIN", "TRSM_MIN_RHS", "CHOLESKY_MIN", "QR_MIN")
    saved, saved_env = [getattr(factor_lapack, k) for k in names], os.environ.get("AOTX_BLAS")
    try:
        for k in names:
            setattr(factor_lapack, k, 1 if provider else 1 << 40)
        os.environ["AOTX_BLAS"] = "auto" if provider else "none"
        blas.reset()
        kernel = jit(fn, cache=False)
        kernel(*args)
        return kernel
    finally:
        for k, v in zip(names, saved):
            setattr(factor_lapack, k, v)
        if saved_env is None:
            os.environ.pop("AOTX_BLAS", None)
        else:
            os.environ["AOTX_BLAS"] = saved_env
        blas.reset()


def factor_crossover(repeat: int, quick: bool) -> None:
    print("crossover of the factorizations, float64 (generated code time / LAPACK time: >1 means "
          f"LAPACK wins); aotx calls LAPACK from n = {factor_lapack.LU_MIN} (lu), "
          f"{factor_lapack.TRSM_MIN} (trsm), {factor_lapack.CHOLESKY_MIN} (cholesky), "
          f"{factor_lapack.QR_MIN} (qr)")
    rng = np.random.default_rng(3)
    sizes = (16, 24, 32, 64, 128) if quick else (8, 12, 16, 24, 32, 48, 64, 128, 256)
    for name, fn, make in (
            ("solve n x n, 1 rhs", solve, lambda n, t: (spd(rng, (t, n, n)), rng.standard_normal((t, n, 1)))),
            ("cholesky n x n", cholesky, lambda n, t: (spd(rng, (t, n, n)),)),
            ("qr n x n", qr, lambda n, t: (rng.standard_normal((t, n, n)),))):
        print(f"  {name}")
        for n in sizes:
            for t in (1, 100):
                args = make(n, t)
                loops = _factor_compiled(fn, args, provider=False)
                calls = _factor_compiled(fn, args, provider=True)
                want, got = loops(*args), calls(*args)
                for w, g in zip(want if isinstance(want, tuple) else (want,), got if isinstance(got, tuple) else (got,)):
                    np.testing.assert_allclose(np.abs(w), np.abs(g), rtol=1e-7, atol=1e-7)
                t_loops, t_lib = best(lambda: loops(*args), repeat), best(lambda: calls(*args), repeat)
                print(f"    n={n:4}  batch {t:4}  generated {1e3 * t_loops:9.4f} ms  "
                      f"LAPACK {1e3 * t_lib:9.4f} ms  ({t_loops / t_lib:5.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="smaller sizes only")
    parser.add_argument("--factorizations", action="store_true",
                        help="only the factorizations' crossover and the np.linalg table")
    args = parser.parse_args()
    if args.factorizations:
        print(f"BLAS provider: {blas.describe()}; OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}")
        factor_crossover(args.repeat, args.quick)
        decompositions(args.repeat)
        return
    print(f"BLAS provider: {blas.describe()}; OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}")
    matmuls(args.repeat, args.quick)
    crossover(args.repeat, args.quick)
    decompositions(args.repeat)
    spectral_crossover(args.repeat, args.quick)


if __name__ == "__main__":
    main()
