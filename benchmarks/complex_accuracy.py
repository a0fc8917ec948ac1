"""Max error in ULP of the complex decompositions (compiler/primitives/complexmath.py),
compiled through the backend, and of NumPy's complex ufuncs, against mpmath.

Run: ``PYTHONPATH=. python benchmarks/complex_accuracy.py [fn,fn,...] [points per set]``
(default: every function, 2000 points per set). Prints the markdown table of
docs/vecmath.md ("Complex functions").

Point sets, for complex128 and complex64 (the complex64 points are the complex128 points
rounded): uniform in [-10, 10]^2; log-uniform magnitudes 1e-300..1e300 (1e-37..1e37 for
complex64) at uniform angles; 1e-6 around the branch cuts (both sides) and the unit circle;
and near the zeros, poles and branch points (0, +-1, +-i, multiples of pi/2 for the
trigonometric functions). exp-like functions use |Re z| < 700 (80 for complex64) and the
trigonometric ones |Im z| < 700 / 80, where the result is finite.

Two measures, both in units of the last place of the result dtype:
* normwise: |f~ - f| / ulp(|f|), the error relative to the magnitude of the result;
* componentwise: max over the real and imaginary parts of |f~_k - f_k| / ulp(f_k), where
  parts below 2^-40 |f| (for complex64 2^-20 |f|) are skipped: a part that small is the
  rounding noise of the other one's computation in any formula (exp(x + i pi/2)).
The reference is mpmath with enough bits for the smaller input part, rounded to complex128.
"""
from __future__ import annotations

import sys

import mpmath
import numpy as np

from tests.complexmath import harness as H

MP = {
    "exp": mpmath.exp, "exp2": lambda z: mpmath.power(2, z), "expm1": mpmath.expm1,
    "log": mpmath.log, "log2": lambda z: mpmath.log(z, 2), "log10": mpmath.log10,
    "log1p": mpmath.log1p, "sqrt": mpmath.sqrt, "sin": mpmath.sin, "cos": mpmath.cos,
    "tan": mpmath.tan, "sinh": mpmath.sinh, "cosh": mpmath.cosh, "tanh": mpmath.tanh,
    "arcsin": mpmath.asin, "arccos": mpmath.acos, "arctan": mpmath.atan,
    "arcsinh": mpmath.asinh, "arccosh": mpmath.acosh, "arctanh": mpmath.atanh,
    "square": lambda z: z * z, "reciprocal": lambda z: 1 / z, "sign": lambda z: z / abs(z),
}
EXP_LIKE = {"exp", "exp2", "expm1", "sinh", "cosh", "tanh"}
TRIG = {"sin", "cos", "tan"}


def points(name: str, n: int, dtype: np.dtype, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    lim = 300 if dtype == np.float64 else 37
    ang = lambda k: np.exp(1j * rng.uniform(-np.pi, np.pi, k))            # noqa: E731
    box = rng.uniform(-10, 10, n) + 1j * rng.uniform(-10, 10, n)
    mag = 10.0 ** rng.uniform(-lim, lim, n) * ang(n)
    # branch cuts: the real axis beyond +-1 and the imaginary axis beyond +-i, both sides
    t = rng.choice([-1, 1], n) * 10.0 ** rng.uniform(0, 3, n)
    eps = rng.choice([-1, 1], n) * 10.0 ** rng.uniform(-30, -6, n)
    cuts = np.concatenate([t[: n // 2] + 1j * eps[: n // 2], eps[n // 2:] + 1j * t[n // 2:]])
    circle = (1 + rng.normal(0, 1e-6, n // 2)) * ang(n // 2)
    special = np.array([0, 1, -1, 1j, -1j, np.pi / 2, np.pi, -np.pi / 2, 1j * np.pi / 2, 1j * np.pi])
    near = rng.choice(special, n // 2) + 10.0 ** rng.uniform(-12, -3, n // 2) * ang(n // 2)
    z = np.concatenate([box, mag, cuts, circle, near])
    big = 700 if dtype == np.float64 else 80
    if name in EXP_LIKE:
        z = z[np.abs(z.real) < big]
    if name in TRIG:
        z = z[np.abs(z.imag) < big]
    return z.astype(H.complex_dtype(dtype)).astype(np.complex128)


def reference(name: str, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """f(z) as a complex128 pair (hi, lo) with hi + lo exact to about 2^-106."""
    hi, lo = np.empty(z.shape, np.complex128), np.empty(z.shape, np.complex128)
    for i, v in enumerate(z):
        parts = [abs(p) for p in (v.real, v.imag) if p != 0] or [1.0]
        prec = 160 + 2 * int(max(abs(np.log2(p)) for p in parts))
        with mpmath.workprec(min(prec, 5000)):
            w = MP[name](mpmath.mpc(float(v.real), float(v.imag)))
            hr, hi_ = float(w.real), float(w.imag)
            lr = float(w.real - hr) if np.isfinite(hr) else 0.0
            li = float(w.imag - hi_) if np.isfinite(hi_) else 0.0
            hi[i], lo[i] = complex(hr, hi_), complex(lr, li)
    return hi, lo


def errors(got: np.ndarray, exact: tuple[np.ndarray, np.ndarray], dtype: np.dtype) -> tuple[float, float]:
    hi, lo = exact
    ok = np.isfinite(hi) & (np.abs(hi) > np.finfo(dtype).tiny) & (np.abs(hi) < np.finfo(dtype).max)
    got, hi, lo = got[ok].astype(np.complex128), hi[ok], lo[ok]
    ulp = lambda v: np.spacing(np.abs(v).astype(dtype)).astype(np.float64)  # noqa: E731
    with np.errstate(all="ignore"):
        dr = (got.real - hi.real) - lo.real
        di = (got.imag - hi.imag) - lo.imag
    mag = np.abs(hi)
    norm = np.hypot(dr, di) / ulp(mag)
    floor = mag * (2.0 ** -40 if dtype == np.float64 else 2.0 ** -20)
    comp = np.zeros_like(norm)
    for part, d in ((np.real, dr), (np.imag, di)):
        keep = np.abs(part(hi)) > np.maximum(floor, np.finfo(dtype).tiny)
        e = np.abs(d) / ulp(part(hi))
        comp = np.maximum(comp, np.where(keep, e, 0))
    bad = ~np.isfinite(norm)
    norm[bad] = np.inf
    return float(norm.max(initial=0)), float(comp.max(initial=0))


def main(names: list[str], n: int) -> None:
    rows = []
    for dtype in (np.dtype(np.float64), np.dtype(np.float32)):
        kernel = H.Compiled(names, dtype)
        for name in names:
            z = points(name, n, dtype)
            exact = reference(name, z)
            zc = z.astype(H.complex_dtype(dtype))
            ours = kernel(zc)[name]
            with np.errstate(all="ignore"):
                theirs = H.NUMPY_UNARY[name](zc)
            rows.append((name, dtype, len(z), errors(ours, exact, dtype), errors(theirs, exact, dtype)))
            print(name, dtype, rows[-1][2:], file=sys.stderr)
    print("| function | c128 aotx norm / comp | c128 NumPy norm / comp "
          "| c64 aotx norm / comp | c64 NumPy norm / comp |")
    print("|---|---|---|---|---|")
    fmt = lambda e: f"{e[0]:.2f} / {e[1]:.3g}"                                 # noqa: E731
    for name in names:
        r = {row[1]: row for row in rows if row[0] == name}
        a, b = r[np.dtype(np.float64)], r[np.dtype(np.float32)]
        print(f"| {name} | {fmt(a[3])} | {fmt(a[4])} | {fmt(b[3])} | {fmt(b[4])} |")


if __name__ == "__main__":
    main(sys.argv[1].split(",") if len(sys.argv) > 1 and sys.argv[1] else list(MP),
         int(sys.argv[2]) if len(sys.argv) > 2 else 2000)
