"""Monte Carlo pricing of European options with compiler.random, checked against the
closed-form Black-Scholes price.

The price of a call is the discounted mean payoff over simulated final spots
S_T = S_0 exp((r - vol^2 / 2) T + vol sqrt(T) Z), Z ~ N(0, 1). The draws happen inside the
compiled kernel (one fused loop: normal draw, exp, payoff, sum), from an explicit key, so
the estimate is a pure function of the key. Pricing a whole strip of strikes uses vmap with
randomness="same": every strike sees the same paths (common random numbers), so the
differences between strikes carry much less noise than independent estimates would.

# run: python examples/monte_carlo.py
# bench: python examples/monte_carlo.py   (prints draws per second and the errors)
"""
import math
import time

import numpy as np

import compiler
from compiler import jit, random, vmap

PATHS = 1_000_000


def mc_call(key, spot, strike, years, rate, vol):
    """(price, standard error) of a call from PATHS paths drawn with `key`."""
    z = random.normal(key, (PATHS,))
    final = spot * np.exp((rate - 0.5 * vol * vol) * years + vol * np.sqrt(years) * z)
    payoff = np.maximum(final - strike, 0.0) * np.exp(-rate * years)
    mean = np.mean(payoff)
    return mean, np.std(payoff) / math.sqrt(PATHS)


def mc_call_keyless(spot, strike, years, rate, vol):
    """The same estimate from the process's random state (new paths on every call)."""
    z = random.normal((PATHS,))
    final = spot * np.exp((rate - 0.5 * vol * vol) * years + vol * np.sqrt(years) * z)
    return np.mean(np.maximum(final - strike, 0.0)) * np.exp(-rate * years)


price = jit(mc_call)
price_fresh = jit(mc_call_keyless)
# one strip of strikes, every strike on the same simulated paths
price_strip = vmap(mc_call_keyless, in_dims=(None, 0, None, None, None), randomness="same")


def black_scholes_call(spot, strike, years, rate, vol):
    """The closed form, for checking."""
    d1 = (math.log(spot / strike) + (rate + 0.5 * vol * vol) * years) / (vol * math.sqrt(years))
    d2 = d1 - vol * math.sqrt(years)
    cdf = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))   # noqa: E731
    return spot * cdf(d1) - strike * math.exp(-rate * years) * cdf(d2)


def main():
    spot, strike, years, rate, vol = 100.0, 105.0, 1.0, 0.03, 0.2
    exact = black_scholes_call(spot, strike, years, rate, vol)
    est, err = price(random.key(0), spot, strike, years, rate, vol)
    print(f"closed form {exact:.4f}  Monte Carlo {est:.4f} +- {err:.4f} "
          f"({abs(est - exact) / err:.1f} standard errors)")
    random.seed(1)
    print("fresh estimates:", ", ".join(f"{price_fresh(spot, strike, years, rate, vol):.4f}"
                                        for _ in range(3)))
    strikes = np.linspace(80.0, 120.0, 9)
    strip = price_strip(spot, strikes, years, rate, vol)
    exact_strip = [black_scholes_call(spot, k, years, rate, vol) for k in strikes]
    print("strip errors:", np.round(strip - exact_strip, 4))
    start = time.perf_counter()
    price(random.key(1), spot, strike, years, rate, vol)
    elapsed = time.perf_counter() - start
    print(f"{PATHS / elapsed / 1e6:.0f} M paths per second (draw, exp, payoff, sum; one thread)")
    print(f"aotx {compiler.__version__}")


if __name__ == "__main__":
    main()
