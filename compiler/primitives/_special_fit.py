"""The coefficients of compiler/primitives/special.py, computed with mpmath (60 digits).

    python -m compiler.primitives._special_fit      # prints the tables special.py holds

* ERFCX_CHEB: Chebyshev coefficients of (1 + 2x) erfcx(x) in t = (x - K)/(x + K), K = 3.75,
  at 32 Chebyshev nodes of [-1, 1] (the change of variable of Shepherd and Laframboise,
  1981; the coefficients fall below 1e-19).
* ERFINV_SMALL, ERFINV_LARGE: least-squares starting values of erfinv(p)/p in
  w = -log((1 - p)(1 + p)) (w < 5) and in sqrt(w) (w >= 5), good to about 1e-7; two
  Halley steps on erf/erfc finish them.

* DIGAMMA_ROOT, DIGAMMA_ROOT_TAYLOR: the positive root x0 of digamma (as hi + lo) and the
  Taylor coefficients psi^(k)(x0) / k! up to degree 41 (|x - x0| <= 0.54 covers [1, 2]).
* LGAMMA2_TAYLOR: the Taylor coefficients of lgamma(2 + t): 1 - euler, then
  (-1)^k (zeta(k) - 1) / k (exact formulas evaluated to 60 digits).

Not imported by the compiler (mpmath is a tool here, not a dependency).
"""
from __future__ import annotations

import mpmath as mp
import numpy as np

K = 3.75


def erfcx_cheb(n: int = 32) -> list[float]:
    mp.mp.dps = 60

    def g(t: mp.mpf) -> mp.mpf:
        x = K * (1 + t) / (1 - t)
        return (1 + 2 * x) * mp.exp(x * x) * mp.erfc(x)

    nodes = [mp.cos(mp.pi * (k + mp.mpf(0.5)) / n) for k in range(n)]
    vals = [g(t) for t in nodes]
    c = [2 * mp.fsum(vals[k] * mp.cos(mp.pi * j * (k + mp.mpf(0.5)) / n) for k in range(n)) / n
         for j in range(n)]
    c[0] /= 2
    return [float(v) for v in c]


def erfinv_start(deg: int = 9) -> tuple[list[float], list[float]]:
    mp.mp.dps = 340                    # 1 - q for q down to 1e-300
    p = np.linspace(1e-6, 0.999, 3000)
    q = np.logspace(-3, -300, 1500)
    w = np.concatenate([-np.log1p(-p) - np.log1p(p), -np.log(q) - np.log(2 - q)])
    y = np.array([float(mp.erfinv(mp.mpf(v)) / mp.mpf(v)) for v in p]
                 + [float(mp.erfinv(1 - mp.mpf(v)) / (1 - mp.mpf(v))) for v in q])
    small, large = w < 5, w >= 5
    c_small = np.polynomial.polynomial.polyfit(w[small] - 2.5, y[small], deg)
    c_large = np.polynomial.polynomial.polyfit(np.sqrt(w[large]) - 3.0, y[large], deg)
    for name, c, x, sel in (("small", c_small, w - 2.5, small),
                            ("large", c_large, np.sqrt(w) - 3.0, large)):
        err = np.max(np.abs(np.polynomial.polynomial.polyval(x[sel], c) / y[sel] - 1))
        print(f"# erfinv start ({name}): max relative error {err:.1e}")
    return [float(v) for v in c_small], [float(v) for v in c_large]


def lgamma2_taylor(n: int = 30) -> list[float]:
    mp.mp.dps = 60
    return [0.0, float(1 - mp.euler)] + [float((-1) ** k * (mp.zeta(k) - 1) / k)
                                         for k in range(2, n + 1)]


def digamma_root(n: int = 42) -> tuple[float, float, list[float]]:
    """The positive root x0 of digamma as hi + lo, and the Taylor coefficients of digamma
    there: psi^(k)(x0) / k!."""
    mp.mp.dps = 60
    x0 = mp.findroot(mp.digamma, 1.46)
    hi = float(x0)
    lo = float(x0 - hi)
    return hi, lo, [0.0] + [float(mp.polygamma(k - 1, x0) / mp.factorial(k - 1)) for k in range(2, n + 1)]


if __name__ == "__main__":
    hi, lo, taylor = digamma_root()
    print("DIGAMMA_ROOT =", (hi, lo))
    print("DIGAMMA_ROOT_TAYLOR =", tuple(taylor))
    print("LGAMMA2_TAYLOR =", tuple(lgamma2_taylor()))
    print("ERFCX_CHEB =", tuple(erfcx_cheb()))
    s, g = erfinv_start()
    print("ERFINV_SMALL =", tuple(s))
    print("ERFINV_LARGE =", tuple(g))
