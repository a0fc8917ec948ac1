"""The Mandelbrot set as NumPy users write it: complex arrays, a fixed number of
iterations, a uint8 image.

`escape_counts` iterates z -> z**2 + c on a grid of complex points and counts, per
point, the iterations during which |z| stayed at most 2; `render` maps the counts
to an 8-bit grey image. Compiled, the 64 iterations run on one window of a few hundred
points at a time, in complex128 SIMD code, with the window's values in the L1 cache
(docs/control_flow.md, "Elementwise loops"), where NumPy makes a temporary array per
operation and reads every array once per iteration.

signature: escape_counts(c: c128[h, w], iterations: int) -> u8[h, w]
# run: python examples/mandelbrot.py
"""
import time

import numpy as np

from compiler import jit


def grid(height=600, width=900, center=-0.6 + 0.0j, scale=3.0):
    """The complex points of an image `width` pixels wide covering `scale` units."""
    x = np.linspace(-scale / 2, scale / 2, width)
    y = np.linspace(-scale / 2, scale / 2, height) * height / width
    return center + x[None, :] + 1j * y[:, None]


def escape_counts(c, iterations):
    """How many of `iterations` steps of z -> z**2 + c keep |z| <= 2, per point (uint8)."""
    z = np.zeros_like(c)
    counts = np.zeros(c.shape, dtype=np.uint8)
    for _ in range(iterations):
        inside = z.real ** 2 + z.imag ** 2 <= 4.0
        z = np.where(inside, z * z + c, z)       # points that escaped stop moving
        counts += inside
    return counts


def render(counts, iterations):
    """An 8-bit grey image: black inside the set, brighter for points that escape later."""
    level = np.sqrt(counts / iterations)
    return np.where(counts == iterations, 0, 255 * level).astype(np.uint8)


fast_escape_counts = jit(escape_counts, static_argnums=1)
fast_render = jit(render, static_argnums=1)


def main():
    c = grid()
    iterations = 64
    start = time.perf_counter()
    want = render(escape_counts(c, iterations), iterations)
    t_numpy = time.perf_counter() - start
    fast_render(fast_escape_counts(c, iterations), iterations)     # compile
    start = time.perf_counter()
    got = fast_render(fast_escape_counts(c, iterations), iterations)
    t_aotx = time.perf_counter() - start
    differ = np.count_nonzero(got != want)
    print(f"{c.shape[0]}x{c.shape[1]} points, {iterations} iterations: "
          f"numpy {1e3 * t_numpy:.1f} ms, aotx {1e3 * t_aotx:.1f} ms ({t_numpy / t_aotx:.1f}x)")
    print(f"pixels that differ from NumPy's image: {differ} of {got.size}; "
          f"inside the set: {np.count_nonzero(got == 0)}")


if __name__ == "__main__":
    main()
