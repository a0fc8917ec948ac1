"""Offline generator of the polynomial coefficients used by vecmath (not imported at runtime).

Every kernel approximates a smooth "tail" function g on a small interval by a polynomial P
(for example sin(x) = x + x^3 * P(x^2), so g(z) = (sin(sqrt z) - sqrt z) / z^1.5).  The
coefficients are the discrete minimax (Remez exchange) fit of g with *relative* error weight,
computed in 60-digit mpmath arithmetic and then rounded to the target format (binary64 or
binary32).  Run ``python -m compiler.backend.vecmath._minimax`` to regenerate every table:
it prints the coefficients as hex literals together with the achieved relative error of g
(before rounding to the target format), which is what the modules paste in.

Reference: E. Remez's second algorithm as described in J.-M. Muller, "Elementary Functions:
Algorithms and Implementation", 3rd ed., ch. 3.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import mpmath as mp

mp.mp.dps = 60


def remez(g: Callable, lo: float, hi: float, degree: int, *, iters: int = 40,
          grid: int = 3000) -> tuple[list, float]:
    """Minimax polynomial of `degree` for g on [lo, hi] with relative weight 1/g."""
    lo, hi = mp.mpf(lo), mp.mpf(hi)
    xs = [lo + (hi - lo) * (1 - mp.cos(mp.pi * i / (grid - 1))) / 2 for i in range(grid)]
    gs = [g(x) for x in xs]
    n = degree + 1
    ref = [int(round((grid - 1) * (1 - math.cos(math.pi * j / n)) / 2)) for j in range(n + 1)]
    best: tuple[list[Any], Any] | None = None
    for _ in range(iters):
        rows = [[xs[i] ** k for k in range(n)] + [(-1) ** j * gs[i]] for j, i in enumerate(ref)]
        sol = mp.lu_solve(mp.matrix(rows), mp.matrix([gs[i] for i in ref]))
        coeffs = [sol[k] for k in range(n)]
        err = [(gs[i] - mp.polyval(coeffs[::-1], xs[i])) / gs[i] for i in range(grid)]
        emax = max(abs(e) for e in err)
        if best is None or emax < best[1]:
            best = (coeffs, emax)
        new_ref = _exchange(err, n + 1)
        if new_ref is None or new_ref == ref:
            break
        ref = new_ref
    assert best is not None
    return best[0], float(best[1])


def _exchange(err: list, m: int) -> list | None:
    """Pick m alternating-sign local extrema of the error curve (largest first)."""
    ext = []
    i = 0
    while i < len(err):
        j = i
        while j + 1 < len(err) and mp.sign(err[j + 1]) == mp.sign(err[i]):
            j += 1
        k = max(range(i, j + 1), key=lambda t: abs(err[t]))
        ext.append(k)
        i = j + 1
    while len(ext) > m:
        # drop the smaller end, or merge the smallest adjacent pair
        if abs(err[ext[0]]) < abs(err[ext[-1]]):
            ext.pop(0)
        else:
            ext.pop()
    return ext if len(ext) == m else None


def _rnd(c, fmt: str) -> float:
    v = float(c)
    if fmt == "f32":
        import numpy as np
        v = float(np.float32(v))
    return v


def _tail(f: Callable, lead: Callable, power: float) -> Callable:
    """g(z) = (f(z) - lead(z)) / z**power, evaluated without catastrophic loss."""
    return lambda z: (f(z) - lead(z)) / z ** power


TABLES = {
    # name: (g, lo, hi, degree, fmt)
    # exp: e^r = 1 + r + r^2 (1/2 + r q(r)); the 1/2 is kept exact (expm1 relies on it)
    "EXP_F64": (_tail(mp.exp, lambda r: 1 + r + r * r / 2, 3), -0.3466, 0.3466, 9, "f64"),
    "EXPM1_F64": (_tail(mp.exp, lambda r: 1 + r + r * r / 2, 3), -0.3466, 0.3466, 10, "f64"),
    "EXPM1_F32": (_tail(mp.exp, lambda r: 1 + r + r * r / 2, 3), -0.3466, 0.3466, 4, "f32"),
    "EXP_FAST": (_tail(mp.exp, lambda r: 1 + r + r * r / 2, 3), -0.3466, 0.3466, 4, "f64"),
    "EXP_F32": (_tail(mp.exp, lambda r: 1 + r + r * r / 2, 3), -0.3466, 0.3466, 3, "f32"),
    "LOG_F64": (lambda z: (2 * mp.atanh(mp.sqrt(z)) - 2 * mp.sqrt(z)) / (mp.sqrt(z) * z),
                1e-14, 0.02944, 6, "f64"),
    "LOG_FAST": (lambda z: (2 * mp.atanh(mp.sqrt(z)) - 2 * mp.sqrt(z)) / (mp.sqrt(z) * z),
                 1e-14, 0.02944, 3, "f64"),
    "LOG_F32": (lambda z: (2 * mp.atanh(mp.sqrt(z)) - 2 * mp.sqrt(z)) / (mp.sqrt(z) * z),
                1e-14, 0.02944, 2, "f32"),
    "LOG5_F64": (lambda z: (2 * mp.atanh(mp.sqrt(z)) - 2 * mp.sqrt(z) - 2 * mp.sqrt(z) * z / 3)
                 / (mp.sqrt(z) * z * z), 1e-10, 0.02944, 5, "f64"),
    "SIN_F64": (lambda z: (mp.sin(mp.sqrt(z)) - mp.sqrt(z)) / (mp.sqrt(z) * z),
                1e-14, 0.6169, 5, "f64"),
    "COS_F64": (lambda z: (mp.cos(mp.sqrt(z)) - 1 + z / 2) / (z * z), 1e-10, 0.6169, 5, "f64"),
    "SIN_FAST": (lambda z: (mp.sin(mp.sqrt(z)) - mp.sqrt(z)) / (mp.sqrt(z) * z),
                 1e-14, 0.6169, 3, "f64"),
    "COS_FAST": (lambda z: (mp.cos(mp.sqrt(z)) - 1 + z / 2) / (z * z), 1e-10, 0.6169, 3, "f64"),
    "SINH_F64": (lambda z: (mp.sinh(mp.sqrt(z)) - mp.sqrt(z)) / (mp.sqrt(z) * z),
                 1e-14, 1.0, 6, "f64"),
    "COSH_F64": (lambda z: (mp.cosh(mp.sqrt(z)) - 1 - z / 2) / (z * z), 1e-10, 0.25, 5, "f64"),
    "ATAN_F64": (lambda z: (mp.atan(mp.sqrt(z)) - mp.sqrt(z)) / (mp.sqrt(z) * z),
                 1e-14, 0.1915, 10, "f64"),
    "ASIN_F64": (lambda z: (mp.asin(mp.sqrt(z)) - mp.sqrt(z)) / (mp.sqrt(z) * z),
                 1e-14, 0.25, 12, "f64"),
    "SIN_F32": (lambda z: (mp.sin(mp.sqrt(z)) - mp.sqrt(z)) / (mp.sqrt(z) * z),
                1e-10, 0.6169, 3, "f32"),
    "COS_F32": (lambda z: (mp.cos(mp.sqrt(z)) - 1 + z / 2) / (z * z), 1e-10, 0.6169, 3, "f32"),
    "SINH_F32": (lambda z: (mp.sinh(mp.sqrt(z)) - mp.sqrt(z)) / (mp.sqrt(z) * z),
                 1e-10, 1.0, 3, "f32"),
    "COSH_F32": (lambda z: (mp.cosh(mp.sqrt(z)) - 1 - z / 2) / (z * z), 1e-10, 0.25, 2, "f32"),
    "TANH_F64": (lambda z: (mp.tanh(mp.sqrt(z)) - mp.sqrt(z)) / (mp.sqrt(z) * z),
                 1e-12, 0.125 ** 2, 5, "f64"),
    "TANH_F32": (lambda z: (mp.tanh(mp.sqrt(z)) - mp.sqrt(z)) / (mp.sqrt(z) * z),
                 1e-12, 0.3 ** 2, 3, "f32"),
    "CBRT_SEED": (mp.cbrt, 1.0, 2.0, 4, "f64"),
}


def main() -> None:
    for name, (g, lo, hi, deg, fmt) in TABLES.items():
        coeffs, err = remez(g, lo, hi, deg)
        vals = ", ".join(float.hex(_rnd(c, fmt)) for c in coeffs)
        if name.startswith("EXP"):
            vals = "0.5, " + vals
        print(f"{name} = ({vals})  # rel err 2^{math.log2(err):.1f}")


if __name__ == "__main__":
    main()
