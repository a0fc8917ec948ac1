"""Max error in ULP of the special functions (compiler/primitives/special.py and the
compositions of compiler/frontend/special.py), compiled, against mpmath; SciPy's for
comparison when SciPy is installed.

Run: ``PYTHONPATH=. python benchmarks/special_accuracy.py [fn,fn,...] [points per set]``
(default: every function, 1500 points per set). Prints the markdown table of
docs/special.md.

Each function is compiled once per dtype (float64, float32: the float32 points are the
float64 points rounded) and evaluated on its domain's sets: uniform points over the range
where the function is interesting and log-uniform magnitudes over the whole range where the
result is finite. The reference is mpmath at 60 digits (more where the argument is within
1e-300 of a pole of the inverse functions). The error is |f~ - f| / ulp(f) in the result's
dtype, with the smaller ulp below a power of two; a reference that overflows must come out
as the same infinity, and one below the smallest normal number is measured in units of the
smallest subnormal.

A function of several arguments takes points of several columns (``domain`` returns an
[n, k] array: column i is argument i, and its reference takes k values); one that reduces a
row (``softmax``, ``logsumexp``) takes rows of ``row`` values (its reference takes the row and
returns its result's values).
"""
from __future__ import annotations

import math
import sys
from typing import Any, Callable

import mpmath as mp
import numpy as np

import compiler

try:
    import scipy.special as sp
except ImportError:               # then the SciPy columns are empty
    sp = None


def _logu(rng: np.random.Generator, lo: float, hi: float, n: int) -> np.ndarray:
    return 10.0 ** rng.uniform(lo, hi, n)


def _erfcinv_ref(q: Any) -> Any:
    with mp.workdps(60 + max(0, int(-mp.log10(q)) if q > 0 else 0)):
        return mp.erfinv(1 - q)


def _erfcx_ref(x: Any) -> Any:
    if x > 1e8:                   # the asymptotic series: its next term is below 1e-48
        return (1 - 1 / (2 * x * x) + 3 / (4 * x ** 4)) / (x * mp.sqrt(mp.pi))
    return mp.exp(x * x) * mp.erfc(x)


def _log_ndtr_ref(x: Any) -> Any:
    if x < -1e4:                  # the asymptotic series: its next term is below 1e-23
        return -x * x / 2 - mp.log(-x) - mp.log(2 * mp.pi) / 2 + mp.log1p(-1 / x ** 2 + 3 / x ** 4)
    return mp.log1p(-mp.ncdf(-x)) if x > 0 else mp.log(mp.ncdf(x))


def _besseli_e_ref(nu: int) -> Callable[[Any], Any]:
    def ref(x: Any) -> Any:
        a = abs(x)
        if a > 1e4:               # the asymptotic series: its next term is below 1e-24
            terms, c = [], mp.mpf(1)
            for k in range(6):
                terms.append((-1) ** k * c / a ** k)
                c *= (4 * nu * nu - (2 * k + 1) ** 2) / mp.mpf(8 * (k + 1))
            out = mp.fsum(terms) / mp.sqrt(2 * mp.pi * a)
        else:
            out = mp.besseli(nu, a) * mp.exp(-a)
        return -out if nu == 1 and x < 0 else out
    return ref


def _lgamma_ref(x: Any) -> Any:
    return mp.log(abs(mp.gamma(x)))


# name -> (compiled function, mpmath reference, SciPy function or None, domain(rng, n))
def _cases() -> dict[str, tuple[Callable[..., Any], Callable[[Any], Any], Any, Callable[..., np.ndarray]]]:
    s = sp
    both = lambda a: np.concatenate([a, -a])                              # noqa: E731
    return {
        "erf": (lambda x: s.erf(x), mp.erf, s and s.erf, lambda r, n: np.concatenate([
            r.uniform(-6, 6, n), both(_logu(r, -300, 0.8, n // 2))])),
        "erfc": (lambda x: s.erfc(x), mp.erfc, s and s.erfc, lambda r, n: np.concatenate([
            r.uniform(-6, 27, n), both(_logu(r, -300, 1.4, n // 2))])),
        "erfcx": (lambda x: s.erfcx(x), _erfcx_ref, s and s.erfcx,
                  lambda r, n: np.concatenate([r.uniform(-26, 30, n), _logu(r, -300, 300, n),
                                               -_logu(r, -300, 1.4, n // 2)])),
        "erfinv": (lambda x: s.erfinv(x), mp.erfinv, s and s.erfinv, lambda r, n: np.concatenate([
            r.uniform(-1, 1, n), both(1 - _logu(r, -16, -0.3, n // 2)), both(_logu(r, -300, -0.3, n // 2))])),
        "erfcinv": (lambda x: s.erfcinv(x), _erfcinv_ref, s and s.erfcinv, lambda r, n: np.concatenate([
            r.uniform(0, 2, n), _logu(r, -300, 0, n), 2 - _logu(r, -16, 0, n // 2)])),
        "ndtr": (lambda x: s.ndtr(x), mp.ncdf, s and s.ndtr, lambda r, n: np.concatenate([
            r.uniform(-37, 9, n), both(_logu(r, -300, 1.5, n // 2))])),
        "log_ndtr": (lambda x: s.log_ndtr(x), _log_ndtr_ref, s and s.log_ndtr,
                     lambda r, n: np.concatenate([r.uniform(-40, 10, n), -_logu(r, 1, 150, n // 2),
                                                  _logu(r, -300, 1.5, n // 2)])),
        "ndtri": (lambda x: s.ndtri(x), lambda p: -mp.sqrt(2) * _erfcinv_ref(2 * p), s and s.ndtri,
                  lambda r, n: np.concatenate([r.uniform(0, 1, n), _logu(r, -300, -0.3, n),
                                               1 - _logu(r, -16, -0.3, n // 2)])),
        "gammaln (x > 0)": (lambda x: s.gammaln(x), _lgamma_ref, s and s.gammaln,
                            lambda r, n: np.concatenate([r.uniform(0, 10, n), _logu(r, -300, 300, n)])),
        "gammaln (x < 0)": (lambda x: s.gammaln(x), _lgamma_ref, s and s.gammaln,
                            lambda r, n: -r.uniform(0, 50, n)),
        "gamma (x > 0)": (lambda x: s.gamma(x), mp.gamma, s and s.gamma,
                          lambda r, n: np.concatenate([r.uniform(0, 171.6, n), _logu(r, -300, 2.2, n)])),
        "gamma (x < 0)": (lambda x: s.gamma(x), mp.gamma, s and s.gamma,
                          lambda r, n: -r.uniform(0, 170, n)),
        "digamma (x > 0)": (lambda x: s.digamma(x), mp.digamma, s and s.digamma,
                            lambda r, n: np.concatenate([r.uniform(0, 10, n), _logu(r, -300, 300, n)])),
        "digamma (x < 0)": (lambda x: s.digamma(x), mp.digamma, s and s.digamma,
                            lambda r, n: -r.uniform(0, 50, n)),
        "polygamma(n=1)": (lambda x: s.polygamma(1, x), lambda x: mp.polygamma(1, x),
                            s and (lambda x: s.polygamma(1, x)),
                            lambda r, n: np.concatenate([r.uniform(0, 10, n), _logu(r, -150, 300, n)])),
        "polygamma(n=1) (x < 0)": (lambda x: s.polygamma(1, x), lambda x: mp.polygamma(1, x),
                                   s and (lambda x: s.polygamma(1, x)), lambda r, n: -r.uniform(0, 30, n)),
        "polygamma(n=2) (x < 0)": (lambda x: s.polygamma(2, x), lambda x: mp.polygamma(2, x),
                                   s and (lambda x: s.polygamma(2, x)), lambda r, n: -r.uniform(0, 30, n)),
        "polygamma(n=3)": (lambda x: s.polygamma(3, x), lambda x: mp.polygamma(3, x),
                            s and (lambda x: s.polygamma(3, x)),
                            lambda r, n: np.concatenate([r.uniform(0, 10, n), _logu(r, -70, 100, n)])),
        "i0e": (lambda x: s.i0e(x), _besseli_e_ref(0), s and s.i0e,
                lambda r, n: np.concatenate([r.uniform(-50, 50, n), both(_logu(r, -300, 300, n // 2))])),
        "i1e": (lambda x: s.i1e(x), _besseli_e_ref(1), s and s.i1e,
                lambda r, n: np.concatenate([r.uniform(-50, 50, n), both(_logu(r, -300, 300, n // 2))])),
        "i0": (lambda x: s.i0(x), lambda x: mp.besseli(0, x), s and s.i0,
               lambda r, n: np.concatenate([r.uniform(-700, 700, n), both(_logu(r, -300, 2.8, n // 2))])),
        "i1": (lambda x: s.i1(x), lambda x: mp.besseli(1, x), s and s.i1,
               lambda r, n: np.concatenate([r.uniform(-700, 700, n), both(_logu(r, -300, 2.8, n // 2))])),
        "expit": (lambda x: s.expit(x), lambda x: 1 / (1 + mp.exp(-x)), s and s.expit,
                  lambda r, n: np.concatenate([r.uniform(-40, 40, n), both(_logu(r, -300, 2.8, n // 2))])),
        "log_expit": (lambda x: s.log_expit(x), lambda x: -mp.log1p(mp.exp(-x)), s and s.log_expit,
                      lambda r, n: np.concatenate([r.uniform(-40, 40, n), both(_logu(r, -300, 2.8, n // 2))])),
        "logit": (lambda x: s.logit(x), lambda p: mp.log(p / (1 - p)), s and s.logit,
                  lambda r, n: np.concatenate([r.uniform(0, 1, n), _logu(r, -300, -0.3, n),
                                               1 - _logu(r, -16, -0.3, n // 2)])),
        "np.sinc": (lambda x: np.sinc(x), lambda x: mp.sinc(mp.pi * x), np.sinc,
                    lambda r, n: np.concatenate([r.uniform(-10, 10, n), both(_logu(r, -300, 1, n // 2))])),
        "np.i0": (lambda x: np.i0(x), lambda x: mp.besseli(0, x), np.i0,
                  lambda r, n: np.concatenate([r.uniform(-700, 700, n), both(_logu(r, -300, 2.8, n // 2))])),
        "np.arcsinh": (lambda x: np.arcsinh(x), mp.asinh, np.arcsinh, lambda r, n: np.concatenate([
            r.uniform(-10, 10, n), both(_logu(r, -300, 300, n // 2))])),
        "np.arccosh": (lambda x: np.arccosh(x), mp.acosh, np.arccosh, lambda r, n: np.concatenate([
            r.uniform(1, 10, n), 1 + _logu(r, -16, 0, n), _logu(r, 0, 300, n)])),
        "np.arctanh": (lambda x: np.arctanh(x), mp.atanh, np.arctanh, lambda r, n: np.concatenate([
            r.uniform(-1, 1, n), both(1 - _logu(r, -16, -0.3, n // 2)), both(_logu(r, -300, -0.3, n // 2))])),
        # -- issue 12's other special functions: several arguments, rows, exact ones
        "np.logaddexp2": (lambda x, y: np.logaddexp2(x, y), lambda a, b: mp.log(2 ** a + 2 ** b, 2),
                          np.logaddexp2, lambda r, n: _pairs(r.uniform(-60, 60, (n, 2)),
                                                             r.uniform(-1000, 1000, (n, 2)))),
        "np.float_power": (lambda x, y: np.float_power(x, y), lambda a, b: a ** b, np.float_power,
                           lambda r, n: _pairs(np.stack([r.uniform(0, 10, n), r.uniform(-20, 20, n)], 1),
                                               np.stack([_logu(r, -30, 30, n), r.uniform(-5, 5, n)], 1))),
        "np.copysign": (lambda x, y: np.copysign(x, y), lambda a, b: abs(a) if b >= 0 else -abs(a),
                        np.copysign, lambda r, n: _both2(_logu(r, -30, 30, (n, 2)))),
        "np.ldexp": (lambda x: np.ldexp(x, 7), lambda a: mp.ldexp(a, 7), lambda x: np.ldexp(x, 7),
                     lambda r, n: np.concatenate([r.uniform(-10, 10, n), both(_logu(r, -300, 30, n // 2))])),
        "np.frexp": (lambda x: np.frexp(x)[0], lambda a: mp.frexp(a)[0], lambda x: np.frexp(x)[0],
                     lambda r, n: np.concatenate([r.uniform(-10, 10, n), both(_logu(r, -300, 300, n // 2))])),
        "np.modf": (lambda x: np.stack(np.modf(x), 1), lambda a: [a - int(a), mp.mpf(int(a))],
                    lambda x: np.stack(np.modf(x), 1),
                    lambda r, n: np.concatenate([r.uniform(-10, 10, n), both(_logu(r, -300, 15, n // 2))])),
        "np.heaviside": (lambda x: np.heaviside(x, 0.5), lambda a: mp.mpf(0.5) if a == 0 else mp.mpf(a > 0),
                         lambda x: np.heaviside(x, 0.5),
                         lambda r, n: np.concatenate([r.uniform(-10, 10, n), [0.0, -0.0]])),
        "loggamma (x > 0)": (lambda x: s.loggamma(x), _lgamma_ref, s and s.loggamma,
                             lambda r, n: np.concatenate([r.uniform(0, 10, n), _logu(r, -300, 300, n)])),
        "beta": (lambda x, y: s.beta(x, y), mp.beta, s and s.beta,
                 lambda r, n: _pairs(r.uniform(0, 30, (n, 2)), _logu(r, -3, 2, (n, 2)))),
        "betaln": (lambda x, y: s.betaln(x, y), lambda a, b: mp.log(mp.beta(a, b)), s and s.betaln,
                   lambda r, n: _pairs(r.uniform(0, 30, (n, 2)), _logu(r, -3, 5, (n, 2)))),
        "xlogy": (lambda x, y: s.xlogy(x, y), lambda a, b: 0 if a == 0 else a * mp.log(b), s and s.xlogy,
                  lambda r, n: np.stack([r.uniform(-5, 5, 2 * n), _logu(r, -300, 300, 2 * n)], 1)),
        "xlog1py": (lambda x, y: s.xlog1py(x, y), lambda a, b: 0 if a == 0 else a * mp.log1p(b),
                    s and s.xlog1py, lambda r, n: np.stack([r.uniform(-5, 5, 3 * n), np.concatenate([
                        r.uniform(-1, 10, n), _logu(r, -300, 300, n), -1 + _logu(r, -16, -0.3, n)])], 1)),
        "entr": (lambda x: s.entr(x), lambda a: -a * mp.log(a) if a > 0 else mp.mpf(0), s and s.entr,
                 lambda r, n: np.concatenate([r.uniform(0, 10, n), _logu(r, -300, 300, n)])),
        "rel_entr": (lambda x, y: s.rel_entr(x, y), lambda a, b: a * mp.log(a / b), s and s.rel_entr,
                     lambda r, n: _pairs(r.uniform(0, 10, (n, 2)), _logu(r, -100, 100, (n, 2)))),
        "kl_div": (lambda x, y: s.kl_div(x, y), lambda a, b: a * mp.log(a / b) - a + b, s and s.kl_div,
                   lambda r, n: _pairs(r.uniform(0, 10, (n, 2)), _logu(r, -100, 100, (n, 2)))),
        "softmax (rows of 4)": (lambda x: s.softmax(x, axis=1), _softmax_ref,
                                s and (lambda x: s.softmax(x, axis=1)), _rows),
        "log_softmax (rows of 4)": (lambda x: s.log_softmax(x, axis=1),
                                    lambda *a: [v - _lse(a) for v in a],
                                    s and (lambda x: s.log_softmax(x, axis=1)), _rows),
        "logsumexp (rows of 4)": (lambda x: s.logsumexp(x, axis=1), lambda *a: _lse(a),
                                  s and (lambda x: s.logsumexp(x, axis=1)), _rows),
    }


#: the functions of _cases that reduce rows
ROWS = {"softmax (rows of 4)", "log_softmax (rows of 4)", "logsumexp (rows of 4)"}


def _pairs(*parts: np.ndarray) -> np.ndarray:
    return np.concatenate(parts, 0)


def _both2(a: np.ndarray) -> np.ndarray:
    """The pairs `a` with every sign combination."""
    return np.concatenate([a * s for s in ([1, 1], [1, -1], [-1, 1], [-1, -1])], 0)


def _rows(r: np.random.Generator, n: int) -> np.ndarray:
    return np.concatenate([r.uniform(-30, 30, (n, 4)), r.standard_normal((n, 4))], 0)


def _lse(a: Any) -> Any:
    return mp.log(mp.fsum(mp.exp(v) for v in a))


def _softmax_ref(*a: Any) -> list[Any]:
    total = mp.fsum(mp.exp(v) for v in a)
    return [mp.exp(v) / total for v in a]


def ulp_errors(got: np.ndarray, exact: list[Any], dtype: Any) -> np.ndarray:
    """|got - exact| / ulp(exact) per point, in `dtype`'s units (see the module docstring)."""
    dtype = np.dtype(dtype)
    info = np.finfo(dtype)
    out = np.zeros(len(exact))
    for i, (g, e) in enumerate(zip(got.astype(np.float64), exact)):
        if mp.isnan(e):
            out[i] = 0.0 if math.isnan(g) else math.inf
            continue
        rounded = dtype.type(float(e)) if abs(e) < 1e308 else dtype.type(math.copysign(math.inf, e))
        if np.isinf(rounded):
            out[i] = 0.0 if g == rounded else math.inf
            continue
        if math.isnan(g) or math.isinf(g):
            out[i] = math.inf
            continue
        mag = abs(float(rounded))
        if mag < info.smallest_normal:
            unit = float(info.smallest_subnormal)
        else:
            unit = float(np.spacing(dtype.type(mag)))
            if mag == 2.0 ** math.floor(math.log2(mag)):
                unit /= 2
        out[i] = float(abs(mp.mpf(float(g)) - e)) / unit
    return out


def _safe(ref: Callable[..., Any], v: Any) -> Any:
    try:
        if np.ndim(v):
            out = ref(*[mp.mpf(float(a)) for a in v])
        else:
            out = ref(mp.mpf(float(v)))
        return list(out) if isinstance(out, (list, tuple)) else out
    except (ValueError, ZeroDivisionError):
        return None


def _call(fn: Callable[..., Any], x: np.ndarray, row: bool) -> np.ndarray:
    """fn on the points `x`: one argument per column, or (row) the whole [n, k] array."""
    out = fn(x) if x.ndim == 1 or row else fn(*x.T)
    return np.asarray(out).reshape(-1)


def measure(name: str, n: int, seed: int = 0) -> dict[str, float]:
    fn, ref, scipy_fn, domain = _cases()[name]
    row = name in ROWS
    x64 = domain(np.random.default_rng(seed), n)
    kernel = compiler.jit(fn)
    result: dict[str, float] = {}
    for dtype in (np.float64, np.float32):
        with np.errstate(over="ignore"):
            x = x64.astype(dtype)
        finite = np.isfinite(x) == np.isfinite(x64)
        x = x[finite if x.ndim == 1 else finite.all(axis=1)]    # float32 overflows left out
        with mp.workdps(60):
            exact = [_safe(ref, v) for v in x]
        keep = np.array([e is not None for e in exact])       # poles (a float32 0) left out
        x, exact = x[keep], [e for e in exact if e is not None]
        flat = [v for e in exact for v in (e if isinstance(e, list) else [e])]
        got = _call(kernel, x, row)
        result[np.dtype(dtype).name] = float(np.max(ulp_errors(got, flat, got.dtype)))
        if scipy_fn is not None:
            with np.errstate(all="ignore"):
                theirs = _call(scipy_fn, x, row)
            result["ref " + np.dtype(dtype).name] = float(np.max(ulp_errors(theirs, flat, theirs.dtype)))
    return result


def main(argv: list[str]) -> None:
    names = argv[0].split(",") if argv and argv[0] else list(_cases())
    n = int(argv[1]) if len(argv) > 1 else 1500
    print("| function | max ULP f64 | max ULP f32 | SciPy f64 | SciPy f32 |")
    print("|---|---|---|---|---|")
    for name in names:
        r = measure(name, n)
        cols = [r.get(k, float("nan")) for k in ("float64", "float32", "ref float64", "ref float32")]
        print(f"| {name} | " + " | ".join(f"{c:.3g}" for c in cols) + " |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
