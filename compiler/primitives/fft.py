"""The discrete Fourier transform: the ``fft`` primitive (docs/fft.md).

``fft(x) {inverse, keep}`` is the unscaled DFT of a complex (or real: a complex result)
stack ``[..., n]`` along its last axis, its first ``keep`` terms (rfft's n//2 + 1), ``X[k] = sum_j x[j] exp(-2 pi i jk/n)``, or with ``inverse`` the same sum with
``exp(+2 pi i jk/n)`` (NumPy's ``ifft`` times n). Every np.fft function is staged with it
(compiler/frontend/fft.py: the scaling of ``norm``, ``n`` by cropping or zero padding,
other axes by moving them last, real transforms by taking a half spectrum).

    %y = fft(%x) {inverse=False, keep=n} : c128[b, n]

Transform rules: vmap moves the batch axis to the front (more rows); the op is linear, so
jvp is the same transform of the tangent, and vjp the conjugate transpose, which for the
unscaled DFT is the unscaled transform in the other direction.

Code: a decomposition into real elementwise code on (re, im) pairs, for a static n:

* mixed radix, decimation in frequency: n = r * m, the row seen as ``[r, m]``; the r
  outputs of the radix-r butterflies across the r rows of length m (a product with the
  constant r x r DFT matrix, its 0 and +-1 entries skipped: radix 4 and 2 with additions
  only; odd radices up to GENERIC_MAX), the twiddles ``exp(-+2 pi i k j/n)`` multiplied
  in, then the length-m transforms of the r rows recursively (the rows grow by r). A pass
  is one concatenate of two operands (real and imaginary parts), each one loop nest over
  the rows (all batch axes as one) that reads index remaps of the previous pass's buffer
  and constants; the index permutation (digit reversal) of the result is the composition
  of the passes' transposes, read by the consumer of the result;
* batch-innermost passes for a batch of PASS_MIN_ROWS rows or more: a window of rows
  transposed so that the rows are innermost, one ``fft_pass`` op per radix (a loop nest whose
  inner loop runs across the rows: radix-8 codelets vectorized whatever the sub-row length),
  then ``fft_unpack`` (the natural order through a table of positions, rfft's half spectrum,
  the complex rows written directly);
* four steps for a long row (and a few complex rows from SMALL_FOUR_STEP_MIN): the row as a
  matrix, its columns in slabs (a ``chunked`` op over the slab numbers reading the whole
  operand at each slab's offset), the twiddles multiplied in as the second step reads its
  slabs of the first step's result;
* Bluestein (chirp z) for a length whose prime factors all exceed GENERIC_MAX: the
  transform as a circular convolution with a chirp, through two power-of-two
  transforms of length N >= 2m - 1 (the chirp's own transform is a constant).

Twiddles and chirps are computed in float64: constants up to CONST_MAX entries; longer
tables are computed by the kernel once per call (cos and sin of exactly reduced angles),
broadcast over the rows.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from compiler.ir import dims
from compiler.ir.builder import Builder, new_block
from compiler.ir.core import Value
from compiler.ir.primitive import define
from compiler.ir.types import F32, F64, I64, TensorType, is_complex
from compiler.primitives import ad, batching, ops
from compiler.primitives.base import check
from compiler.primitives.control import chunk_counts

Types = tuple[TensorType, ...]
Pair = tuple[Value, Value]

GENERIC_MAX = 13          # odd prime radices up to this use a butterfly; larger ones Bluestein
CONST_MAX = 1 << 18       # twiddle and chirp tables up to this many entries are constants
WINDOW_BYTES = 1 << 18    # a large batch is transformed in windows of about this many bytes
FOUR_STEP_MIN = 1 << 14   # longer rows are transformed as a matrix of shorter ones
FOUR_STEP_MIN_FACTOR = 16
SMALL_FOUR_STEP_MIN = 1 << 10   # fewer than PASS_MIN_ROWS rows: four steps in slabs from this length
PASS_MIN_ROWS = 8         # a batch of at least this many rows takes the batch-innermost passes
PASS_WINDOW_BYTES = 1 << 17   # ... in windows of rows of about this many bytes (half for complex rows)
PASS_RADIX = 8            # their radix (then one 4 or 2, then odd ones)
SLABS = (32, 16, 8)       # columns per slab of the four steps (the first that divides both factors)


# ---- shape rule, NumPy reference, transform rules --------------------------------------

def _rule(in_types: Types, params: dict[str, Any]) -> Types:
    (x,) = in_types
    check(x.dtype in (F32, F64) or is_complex(x.dtype),
          f"fft: a float32, float64 or complex operand is required, not {x.dtype}")
    check(x.ndim >= 1, "fft: the operand must have at least one axis")
    keep = params["keep"]
    n = x.shape[-1]
    check(keep == n or (isinstance(keep, int) and isinstance(n, int) and 1 <= keep <= n)
          or (not isinstance(n, int) and keep == dims.add(dims.floordiv(n, 2), 1)),
          f"fft: keep={keep} terms of rows of {n}")
    return (TensorType(_complex_of(x.dtype), tuple(x.shape[:-1]) + (keep,)),)


def _complex_of(dtype: Any) -> np.dtype:
    return np.dtype(np.complex64 if dtype in (np.float32, np.complex64) else np.complex128)


def _ref(x: np.ndarray, inverse: bool, keep: int) -> np.ndarray:
    y = np.fft.ifft(x, axis=-1, norm="forward") if inverse else np.fft.fft(x, axis=-1)
    return y[..., :keep].astype(_complex_of(x.dtype))


def _batch(b: Builder, op: Any, args: list[Value], size: Any) -> list[Value]:
    return batching.reemit(b, op, args)


def _transpose(b: Builder, op: Any, primals: list[Value], ct: Value) -> list[Value | None]:
    # the adjoint of the unscaled DFT matrix W is conj(W)^T = conj(W): the other direction
    # (of a real operand, its real part: the adjoint of the embedding of real into complex)
    x = primals[0]
    *batch, n = x.type.shape
    nd = x.type.ndim
    keep = op.params["keep"]
    if isinstance(n, int) and keep != n:      # the kept terms: the others have a zero cotangent
        ct = ops.pad(b, ct, ops.scalar(b, 0, ct.type.dtype), (0,) * nd, (0,) * (nd - 1) + (n - keep,))
    elif keep != n:                           # a symbolic n (pad amounts are static)
        rest = ops.full(b, 0, TensorType(ct.type.dtype, tuple(batch) + (dims.add(n, dims.mul(-1, keep)),)))
        ct = ops.concatenate(b, [ct, rest], nd - 1)
    back = ad.same_op(b, op, [ct], inverse=not op.params["inverse"], keep=n)
    return [back if is_complex(primals[0].type.dtype) else ops.real(b, back)]


# ---- generated code -------------------------------------------------------------------

class _Gen:
    """Complex arithmetic on (re, im) pairs of real values of one dtype."""

    def __init__(self, b: Builder, rdt: np.dtype) -> None:
        self.b, self.rdt = b, rdt

    def add(self, x: Pair, y: Pair) -> Pair:
        return ops.add(self.b, x[0], y[0]), ops.add(self.b, x[1], y[1])

    def sub(self, x: Pair, y: Pair) -> Pair:
        return ops.sub(self.b, x[0], y[0]), ops.sub(self.b, x[1], y[1])

    def mul(self, x: Pair, y: Pair) -> Pair:
        b = self.b
        return (ops.sub(b, ops.mul(b, x[0], y[0]), ops.mul(b, x[1], y[1])),
                ops.add(b, ops.mul(b, x[0], y[1]), ops.mul(b, x[1], y[0])))

    def scale(self, c: float, x: Pair) -> Pair:
        k = ops.full_like(self.b, c, x[0])
        return ops.mul(self.b, k, x[0]), ops.mul(self.b, k, x[1])

    def map(self, fn: Any, x: Pair) -> Pair:
        return fn(x[0]), fn(x[1])

    def table(self, angle: np.ndarray | Value, shape: tuple) -> Pair:
        """exp(i * angle) as real values of shape `shape` (a constant from a float64
        ndarray, or cos and sin of a float64 Value computed by the kernel)."""
        b = self.b
        if isinstance(angle, np.ndarray):
            return (ops.constant(b, np.cos(angle).astype(self.rdt)),
                    ops.constant(b, np.sin(angle).astype(self.rdt)))
        return (ops.convert(b, ops.cos(b, angle), self.rdt), ops.convert(b, ops.sin(b, angle), self.rdt))


def _roots(r: int, sign: int) -> tuple[np.ndarray, np.ndarray]:
    """exp(sign 2 pi i jk/r) as (real, imag) [k, j], exact where it is 0, +-1."""
    jk = np.outer(np.arange(r), np.arange(r)) % r
    w = np.exp(sign * 2j * np.pi * jk / r)
    if r % 4 == 0:
        quarter = (4 * jk) % r == 0
        exact = np.array([1, 1j, -1, -1j])[(4 * jk // r) % 4] ** (1 if sign > 0 else -1)
        w = np.where(quarter, exact, w)
    if r % 2 == 0:
        w = np.where(2 * jk == r, -1, w)
    w = np.where(jk == 0, 1, w)
    return w.real.copy(), w.imag.copy()


def _radix(n: int) -> int | None:
    for r in (4, 2):
        if n % r == 0:
            return r
    for r in range(3, GENERIC_MAX + 1, 2):
        if n % r == 0:
            return r
    return None


def _pack(b: Builder, x: Pair) -> Value:
    """(re, im) [..., n] as one real array [..., 2, n]."""
    pre = tuple(x[0].type.shape[:-1])
    n = x[0].type.shape[-1]
    return ops.concatenate(b, [ops.reshape(b, v, pre + (1, n)) for v in x], len(pre))


def _unpack(b: Builder, d: Value) -> Pair:
    *pre_, _, n = d.type.shape
    pre = tuple(pre_)
    nd = len(pre)
    return tuple(ops.reshape(b, ops.slice_(b, d, (0,) * nd + (p, 0), pre + (p + 1, n)), pre + (n,))
                 for p in (0, 1))      # type: ignore[return-value]


def dft(g: _Gen, d: Value, sign: int) -> Value:
    """The unscaled DFT (exp(sign 2 pi i jk/n)) of the rows of d [..., 2, n] (real parts,
    imaginary parts), n static; the result in the same layout.

    A pass of radix r (n = r m) is one concatenate [rows, r, 2, m] of two operands, the
    real and the imaginary parts of y_k = T[k, :] * sum_j W[k, j] x_j, with x_j the j-th
    of the r rows of length m; its r transforms of length m are rows of the next pass:
    X[r k2 + k1] = Y_k1[k2]."""
    b = g.b
    *pre_, _, n = d.type.shape
    assert isinstance(n, int)
    if n == 1:
        return d
    r = _radix(n)
    if r is None:
        return _pack(b, _bluestein(g, _unpack(b, d), n, sign))
    full = tuple(pre_)
    rows_n: Any = 1
    for dim_ in full:
        rows_n = dims.mul(rows_n, dim_)
    pre = (rows_n,)                                      # the rows as one axis: short loop nests
    d = ops.reshape(b, d, pre + (2, n))
    nd = 1
    m = n // r
    out = pre + (r, 1, m)
    rows = ops.reshape(b, d, pre + (2, r, m))

    def row(p: int, j: int) -> Value:
        v = ops.slice_(b, rows, (0,) * nd + (p, j, 0), pre + (p + 1, j + 1, m))
        return ops.broadcast_in_dim(b, ops.reshape(b, v, pre + (m,)), out, tuple(range(nd)) + (nd + 2,))

    def const(value: np.ndarray, axes: tuple[int, ...]) -> Value:
        return ops.broadcast_in_dim(b, ops.constant(b, value.astype(g.rdt)), out, axes)

    wr, wi = _roots(r, sign)
    acc: Pair | None = None
    for j in range(r):
        x = (row(0, j), row(1, j))
        if np.any(wi[:, j] != 0):
            x = g.mul(x, (const(wr[:, j], (nd,)), const(wi[:, j], (nd,))))
        elif not np.all(wr[:, j] == 1):
            c = const(wr[:, j], (nd,))
            x = (ops.mul(b, c, x[0]), ops.mul(b, c, x[1]))
        acc = x if acc is None else g.add(acc, x)
    assert acc is not None
    z = acc
    if m > 1:
        if r * m <= CONST_MAX:
            kj_c = np.outer(np.arange(r), np.arange(m))
            ang = sign * 2 * np.pi * kj_c / n
            tw = (const(np.cos(ang), (nd, nd + 2)), const(np.sin(ang), (nd, nd + 2)))
        else:
            kj = ops.mul(b, ops.iota(b, I64, (r, m), 0), ops.iota(b, I64, (r, m), 1))
            ang_v = ops.mul(b, ops.convert(b, kj, F64),
                            ops.full(b, sign * 2 * np.pi / n, TensorType(F64, (r, m))))
            tw = (ops.broadcast_in_dim(b, ops.convert(b, ops.cos(b, ang_v), g.rdt), out, (nd, nd + 2)),
                  ops.broadcast_in_dim(b, ops.convert(b, ops.sin(b, ang_v), g.rdt), out, (nd, nd + 2)))
        z = g.mul(z, tw)
    z2 = ops.concatenate(b, list(z), nd + 1)            # one buffer [..., r, 2, m] per pass
    zz = dft(g, z2, sign)                                 # [..., r, 2, m]: X[r k2 + k1]
    perm = tuple(range(nd)) + (nd + 1, nd + 2, nd)
    return ops.reshape(b, ops.transpose(b, zz, perm), full + (2, n))


def _sub_dft(g: _Gen, x: Pair, sign: int) -> Pair:
    """dft of a pair; a row longer than CONST_MAX as an fft op of its own (decomposed
    again: four steps; shorter ones stay here, which compiles much faster)."""
    b = g.b
    length = x[0].type.shape[-1]
    if isinstance(length, int) and length >= FOUR_STEP_MIN:
        y = ops.fft(b, ops.complex_(b, x[0], x[1]), sign > 0)
        return ops.real(b, y), ops.imag(b, y)
    return _unpack(b, dft(g, _pack(b, x), sign))


def good_length(target: int) -> int:
    """The least 2^a 3^b 5^c >= target (Bluestein's transform length, as pocketfft's: up to
    half the work of the next power of two, 131220 instead of 262144 for the prime 65537)."""
    best = 1 << max(target - 1, 0).bit_length()
    f5 = 1
    while f5 < best:
        f35 = f5
        while f35 < best:
            p = f35
            while p < target:
                p *= 2
            best = min(best, p)
            f35 *= 3
        f5 *= 5
    return best


def _bluestein(g: _Gen, x: Pair, m: int, sign: int) -> Pair:
    """sum_j x_j w^(jk) with jk = (k^2 + j^2 - (k-j)^2)/2: a chirp, a convolution with the
    conjugate chirp (two transforms of length N >= 2m-1, a product of 2, 3 and 5), a chirp."""
    b = g.b
    pre = tuple(x[0].type.shape[:-1])
    nd = len(pre)
    big = good_length(2 * m - 1)
    if m <= CONST_MAX:
        k = np.arange(m, dtype=np.int64)
        chirp_angle: Any = sign * np.pi * ((k * k) % (2 * m)) / m
    else:
        kv = ops.iota(b, I64, (m,), 0)
        k2 = ops.mod(b, ops.mul(b, kv, kv), ops.full(b, 2 * m, TensorType(I64, (m,))))
        chirp_angle = ops.mul(b, ops.convert(b, k2, F64), ops.full(b, sign * np.pi / m, TensorType(F64, (m,))))
    chirp = g.table(chirp_angle, (m,))
    wide = g.map(lambda v: ops.broadcast_in_dim(b, v, pre + (m,), (nd,)), chirp)
    a = g.mul(x, wide)
    zero = ops.scalar(b, 0.0, g.rdt)
    a = g.map(lambda v: ops.pad(b, v, zero, (0,) * (nd + 1), (0,) * nd + (big - m,)), a)
    spec_a = _sub_dft(g, a, -1)
    if big <= CONST_MAX:
        kk = np.arange(big, dtype=np.int64)
        kk = np.minimum(kk, big - kk)
        c = np.where(kk < m, np.exp(-sign * 1j * np.pi * ((kk * kk) % (2 * m)) / m), 0)
        spec = np.fft.fft(c) / big
        kern: Pair = (ops.constant(b, spec.real.astype(g.rdt)), ops.constant(b, spec.imag.astype(g.rdt)))
    else:
        kv = ops.iota(b, I64, (big,), 0)
        kk_v = ops.minimum(b, kv, ops.sub(b, ops.full(b, big, kv.type), kv))
        k2 = ops.mod(b, ops.mul(b, kk_v, kk_v), ops.full(b, 2 * m, kv.type))
        ang = ops.mul(b, ops.convert(b, k2, F64), ops.full(b, -sign * np.pi / m, TensorType(F64, (big,))))
        inside = ops.lt(b, kk_v, ops.full(b, m, kv.type))
        zeros = ops.full(b, 0.0, TensorType(g.rdt, (big,)))
        c_re, c_im = g.table(ang, (big,))
        c_pair = (ops.select(b, inside, c_re, zeros), ops.select(b, inside, c_im, zeros))
        kern = g.scale(1.0 / big, _sub_dft(g, c_pair, -1))
    kern = g.map(lambda v: ops.broadcast_in_dim(b, v, pre + (big,), (nd,)), kern)
    conv = _sub_dft(g, g.mul(spec_a, kern), 1)
    head = g.map(lambda v: ops.slice_(b, v, (0,) * (nd + 1), pre + (m,)), conv)
    return g.mul(head, wide)


def _decompose(b: Builder, op: Any, args: list[Value]) -> list[Value]:
    (x,) = args
    n = x.type.shape[-1]
    rdt = np.dtype(np.float32) if x.type.dtype in (np.complex64, np.float32) else F64
    sign = 1 if op.params["inverse"] else -1
    keep = op.params["keep"]
    if not isinstance(n, int):          # a plan made at run time (primitives/fft_runtime.py)
        parts = (ops.real(b, x), ops.imag(b, x)) if is_complex(x.type.dtype) else (x, ops.zeros_like(b, x))
        return [ops.fft_runtime(b, parts[0], parts[1], sign, keep, real=not is_complex(x.type.dtype) and sign < 0)]
    rows_n: Any = 1
    for d in x.type.shape[:-1]:
        rows_n = dims.mul(rows_n, d)
    split = _four_step_split(n)
    y: Value | None = None
    real_rows = not is_complex(x.type.dtype) and n % 2 == 0 and keep == n // 2 + 1
    if real_rows and isinstance(rows_n, int) and (rows_n < PASS_MIN_ROWS or split is not None):
        # real rows, few or long: the complex transform of half the length in slabs, untangled
        half = _four_step_split(n // 2, SMALL_FOUR_STEP_MIN)
        if half is not None:
            y = _real_rows_in_slabs(b, x, rows_n, half, sign, rdt)
            if y is not None:
                return [y]
    if split is not None:
        y = _four_step_slabs(b, x, split, op.params["inverse"])
        if y is None:
            y = _four_step(b, x, split, op.params["inverse"])
    elif isinstance(rows_n, int) and rows_n < PASS_MIN_ROWS and is_complex(x.type.dtype):
        # a few complex rows: the slabs of the four steps are the batch the passes vectorize
        # across (measured faster for slabs of 32 only; real rows keep the half-length trick)
        small = _four_step_split(n, SMALL_FOUR_STEP_MIN)
        if small is not None:
            y = _four_step_slabs(b, x, small, op.params["inverse"], slabs=SLABS[:1])
    if y is not None:
        return [y if keep == n else ops.slice_(b, y, (0,) * y.type.ndim, tuple(y.type.shape[:-1]) + (keep,))]

    real_half = not is_complex(x.type.dtype) and n % 2 == 0 and n >= 4 and keep == n // 2 + 1
    length = n // 2 if real_half else n
    if _pass_radices(length) is not None and not (isinstance(rows_n, int) and rows_n < PASS_MIN_ROWS):
        def by_passes(bb: Builder, rows: Value) -> list[Value]:
            batch = tuple(rows.type.shape[:-1])
            count: Any = 1
            for d in batch:
                count = dims.mul(count, d)
            y = _rows_by_passes(_Gen(bb, rdt), ops.reshape(bb, rows, (count, n)), n, sign, keep, real_half)
            return [ops.reshape(bb, y, batch + (keep,))]
        # complex rows (read and written at a stride of the row's bytes, often a multiple of
        # 4 KB: the window's rows share cache sets) take windows of half the bytes
        window = PASS_WINDOW_BYTES // (2 if is_complex(x.type.dtype) else 1)
        return _by_windows(b, x, by_passes, max(1, window // (2 * rdt.itemsize * length)), keep)

    def build(bb: Builder, rows: Value) -> list[Value]:
        g = _Gen(bb, rdt)
        if not is_complex(rows.type.dtype) and n % 2 == 0 and n >= 4 and keep == n // 2 + 1:
            return [ops.complex_(bb, *_real_half(g, rows, sign))]
        parts = (ops.real(bb, rows), ops.imag(bb, rows)) if is_complex(rows.type.dtype) else \
            (rows, ops.zeros_like(bb, rows))
        re, im = _unpack(bb, dft(g, _pack(bb, parts), sign))
        if keep != n:
            re, im = (ops.slice_(bb, v, (0,) * v.type.ndim, tuple(v.type.shape[:-1]) + (keep,)) for v in (re, im))
        return [ops.complex_(bb, re, im)]
    return _by_windows(b, x, build, max(1, WINDOW_BYTES // (2 * rdt.itemsize * n)), keep)


def _four_step_split(n: int, minimum: int = FOUR_STEP_MIN) -> tuple[int, int] | None:
    """n = n1 * n2 with n1 <= n2 as close as possible, both at least FOUR_STEP_MIN_FACTOR,
    for a row of at least `minimum`; None otherwise."""
    if n < minimum:
        return None
    n1 = int(np.sqrt(n))
    while n1 >= FOUR_STEP_MIN_FACTOR and n % n1:
        n1 -= 1
    if n1 < FOUR_STEP_MIN_FACTOR:
        return None
    return n1, n // n1


def _twiddle_split(n2: int, n1: int) -> int | None:
    """The divisor s of n2 nearest sqrt(n2) when the two tables [n2/s, n1] and [s, n1] of
    the four steps' twiddles fit in CONST_MAX entries; None otherwise."""
    divisors = [s for s in range(2, n2) if n2 % s == 0]
    if not divisors:
        return None
    step = min(divisors, key=lambda s: n2 // s + s)
    return step if n1 * (n2 // step + step) <= CONST_MAX else None


def _four_step_slabs(b: Builder, x: Value, split: tuple[int, int], inverse: bool,
                     slabs: tuple[int, ...] = SLABS) -> Value | None:
    """The four steps with both transforms batch-innermost, a slab of 32 (16, 8) columns at a time
    (a ``chunked`` op over the slab numbers, reading the whole operand at the slab's offset):
    the columns of x [n1, n2] (j1 down, j2 across), then the twiddles and the rows of the
    result (k1 down) read from the first step's slabs, each slab's columns written to one
    buffer; the last read transposes back. Only two temporaries of the size of x. None when
    the split does not suit (a factor needs Bluestein, is not a multiple of 8, or the
    twiddle tables are too long)."""
    n1, n2 = split
    w = next((s for s in slabs if n1 % s == 0 and n2 % s == 0), 0)
    if not w or _pass_radices(n1) is None or _pass_radices(n2) is None \
            or _twiddle_split(n2, n1) is None:
        return None
    n = n1 * n2
    batch = tuple(x.type.shape[:-1])
    count: Any = 1
    for d in batch:
        count = dims.mul(count, d)
    if not isinstance(count, int):
        return None
    sign = 1 if inverse else -1
    rdt = np.dtype(np.float32) if x.type.dtype in (np.complex64, np.float32) else F64
    cdt = _complex_of(x.type.dtype)
    if not is_complex(x.type.dtype):
        x = ops.complex_(b, x, ops.zeros_like(b, x))
    x3 = ops.reshape(b, x, (count, n1, n2))

    def columns(bb: Builder, bi: Value, jb: Value, src: Value) -> Value:      # [n1, w]: x[bi, :, jb w + c]
        start = ops.mul(bb, jb, ops.scalar(bb, w, I64))
        v = ops.dynamic_slice(bb, src, [bi, ops.scalar(bb, 0, I64), start], (1, n1, w))
        return ops.reshape(bb, v, (n1, w))

    y1 = _slab_op(b, count, n2 // w, x3, columns, sign, rdt)                 # [B n2/w, n1 (k1), w]
    y4 = ops.reshape(b, y1, (count, n2 // w, n1, w))
    step = _twiddle_split(n2, n1)
    assert step is not None
    k1 = np.arange(n1)
    tables = [np.exp(1j * sign * 2 * np.pi * (np.outer(js, k1) % n) / n).astype(cdt)
              for js in (np.arange(n2 // step) * step, np.arange(step))]

    def rows(bb: Builder, bi: Value, kb: Value, src: Value) -> Value:         # [n2, w]: y[j2, kb w + kd] tw
        hi_c, lo_c = (ops.constant(bb, t) for t in tables)
        zero = ops.scalar(bb, 0, I64)
        start = ops.mul(bb, kb, ops.scalar(bb, w, I64))
        v = ops.dynamic_slice(bb, src, [bi, zero, start, zero], (1, n2 // w, w, w))   # [1, jb, kd, c]
        v = ops.reshape(bb, ops.transpose(bb, ops.reshape(bb, v, (n2 // w, w, w)), (0, 2, 1)), (n2, w))
        hi = ops.dynamic_slice(bb, hi_c, [zero, start], (n2 // step, w))
        lo = ops.dynamic_slice(bb, lo_c, [zero, start], (step, w))
        tw = ops.mul(bb, ops.broadcast_in_dim(bb, hi, (n2 // step, step, w), (0, 2)),
                     ops.broadcast_in_dim(bb, lo, (n2 // step, step, w), (1, 2)))
        return ops.mul(bb, v, ops.reshape(bb, tw, (n2, w)))

    z = _slab_op(b, count, n1 // w, y4, rows, sign, rdt)                      # [B n1/w, n2 (k2), w]
    z = ops.transpose(b, ops.reshape(b, z, (count, n1 // w, n2, w)), (0, 2, 1, 3))   # [B, k2, k1/w, w]
    return ops.reshape(b, z, batch + (n,))


def _real_rows_in_slabs(b: Builder, x: Value, count: int, split: tuple[int, int], sign: int,
                        rdt: np.dtype) -> Value | None:
    """rfft of a few real rows x [..., n] through the four steps in slabs of 32 of the
    transform of length n/2 of x[0::2] + i x[1::2] (see _real_half); None when they do not suit."""
    batch = tuple(x.type.shape[:-1])
    n = x.type.shape[-1]
    assert isinstance(n, int)
    h = n // 2
    pairs = ops.reshape(b, x, (count, h, 2))
    re, im = (ops.reshape(b, ops.slice_(b, pairs, (0, 0, q), (count, h, q + 1)), (count, h)) for q in (0, 1))
    z = _four_step_slabs(b, ops.complex_(b, re, im), split, sign > 0, slabs=SLABS[:1])
    if z is None:
        return None
    out = _half_spectrum(_Gen(b, rdt), (ops.real(b, z), ops.imag(b, z)), n, sign)
    return ops.reshape(b, ops.complex_(b, *out), batch + (h + 1,))


def _slab_op(b: Builder, count: int, per: int, src: Value, read: Any, sign: int, rdt: np.dtype) -> Value:
    """[count per, n, w]: for each slab (bi, j) of count x per, the DFT down the columns of
    read(b, bi, j, src) [n, w] (complex): one ``chunked`` op over the slab numbers with src
    whole in every region, batch-innermost passes."""
    total = count * per
    ids = [ops.reshape(b, ops.iota(b, I64, (count, per), d), (total,)) for d in (0, 1)]
    regions: list[Any] = []
    for size in (1, 0):
        block = new_block([TensorType(I64, (size,)), TensorType(I64, (size,)), src.type])
        with b.inside(block):
            if size:
                bi, j = (ops.reshape(b, a, ()) for a in block.args[:2])
                v = read(b, bi, j, block.args[2])
                n, w = v.type.shape
                re, im, radices = _passes(b, ops.real(b, v), ops.imag(b, v), sign, rdt)
                block.results = [ops.fft_unpack(b, re, im, radices, sign, n, False, columns=True)]
            else:
                shape = (0,) + tuple(regions[0].results[0].type.shape[1:])
                block.results = [ops.full(b, 0, TensorType(_complex_of(rdt), shape))]
        regions.append(block)
    (out,) = b.emit(ops.chunked_p, [*ids, src], {"size": total, "chunk": 1, "batched": (True, True, False)},
                    regions)
    return out


def _four_step(b: Builder, x: Value, split: tuple[int, int], inverse: bool) -> Value:
    """A long row as a matrix [n1, n2] (x[n2 j1 + j2]): transforms of length n1 down the
    columns, twiddles exp(-+2 pi i j2 k1/n), transforms of length n2 along the rows, the
    result read transposed (X[k1 + n1 k2]). Each step is a batch of short rows, which the
    windows keep in cache (the long row would stream through memory at every pass)."""
    n1, n2 = split
    n = n1 * n2
    batch = tuple(x.type.shape[:-1])
    nb = len(batch)
    swap = tuple(range(nb)) + (nb + 1, nb)
    cols = ops.transpose(b, ops.reshape(b, x, batch + (n1, n2)), swap)           # [.., j2, j1]
    a = ops.fft(b, cols, inverse)                                                # [.., j2, k1]
    sign = 1 if inverse else -1
    tw = _four_step_twiddles(b, n1, n2, sign, a.type.dtype)
    t = ops.mul(b, a, ops.broadcast_in_dim(b, tw, a.type.shape, (nb, nb + 1)))
    c = ops.fft(b, ops.transpose(b, t, swap), inverse)                           # [.., k1, k2]
    return ops.reshape(b, ops.transpose(b, c, swap), batch + (n,))


def _four_step_twiddles(b: Builder, n1: int, n2: int, sign: int, dtype: np.dtype) -> Value:
    """exp(sign 2 pi i j2 k1/n) [n2, n1] (complex `dtype`)."""
    n = n1 * n2
    rdt = np.dtype(np.float32) if dtype == np.complex64 else F64
    if n <= CONST_MAX:
        ang = sign * 2 * np.pi * np.outer(np.arange(n2), np.arange(n1)) / n
        tw = ops.constant(b, np.exp(1j * ang).astype(dtype))
    elif _twiddle_split(n2, n1) is not None:
        # w^(j2 k1) = w^(s q k1) w^(r k1) for j2 = s q + r: two constant tables, one product
        step = _twiddle_split(n2, n1)
        assert step is not None
        k1 = np.arange(n1)

        def table(js: np.ndarray, axis: int) -> Value:
            ang = sign * 2 * np.pi * (np.outer(js, k1) % n) / n
            v = ops.constant(b, np.exp(1j * ang).astype(dtype))
            return ops.broadcast_in_dim(b, v, (n2 // step, step, n1), (axis, 2))

        hi, lo = table(np.arange(n2 // step) * step, 0), table(np.arange(step), 1)
        tw = ops.reshape(b, ops.mul(b, hi, lo), (n2, n1))
    else:
        kj = ops.mul(b, ops.iota(b, I64, (n2, n1), 0), ops.iota(b, I64, (n2, n1), 1))
        ang_v = ops.mul(b, ops.convert(b, kj, F64), ops.full(b, sign * 2 * np.pi / n, TensorType(F64, (n2, n1))))
        tw = ops.complex_(b, ops.convert(b, ops.cos(b, ang_v), rdt), ops.convert(b, ops.sin(b, ang_v), rdt))
    return tw


def _real_half(g: _Gen, rows: Value, sign: int) -> Pair:
    """The n//2 + 1 first terms of the DFT of real rows [w, n], n even, through the
    transform of length h = n/2 of z = x[0::2] + i x[1::2]: with Z[h] = Z[0],
    X[k] = (Z[k] + conj(Z[h-k]))/2 + exp(sign 2 pi i k/n) (Z[k] - conj(Z[h-k]))/(2i)."""
    b = g.b
    *batch, n = rows.type.shape
    assert isinstance(n, int)
    w: Any = 1
    for d in batch:
        w = dims.mul(w, d)
    rows = ops.reshape(b, rows, (w, n))
    h = n // 2
    packed = ops.transpose(b, ops.reshape(b, rows, (w, h, 2)), (0, 2, 1))      # [w, 2, h]: evens, odds
    z = _unpack(b, dft(g, packed, sign))
    out = _half_spectrum(g, z, n, sign)
    return g.map(lambda v: ops.reshape(b, v, tuple(batch) + (h + 1,)), out)


def _half_spectrum(g: _Gen, z: Pair, n: int, sign: int) -> Pair:
    """X[k], k <= n/2, of real rows of even length n from the transform Z [w, n/2] of
    z = x[0::2] + i x[1::2] (see _real_half)."""
    b = g.b
    w, h = z[0].type.shape
    assert isinstance(h, int)
    ext = g.map(lambda v: ops.concatenate(b, [v, ops.slice_(b, v, (0, 0), (w, 1))], 1), z)   # Z[0..h-1], Z[0]
    mr, mi = g.map(lambda v: ops.rev(b, v, [1]), ext)                                       # Z[h - k]
    total = (ops.add(b, ext[0], mr), ops.sub(b, ext[1], mi))                                # Z + conj(Z[h-k])
    diff = (ops.sub(b, ext[0], mr), ops.add(b, ext[1], mi))                                 # Z - conj(Z[h-k])
    k = np.arange(h + 1)
    tw = -0.5j * np.exp(sign * 2j * np.pi * k / n)
    wv = g.map(lambda c: ops.broadcast_in_dim(b, ops.constant(b, c.astype(g.rdt)), (w, h + 1), (1,)),
               (tw.real, tw.imag))
    return g.add(g.scale(0.5, total), g.mul(wv, diff))


def _by_windows(b: Builder, x: Value, build: Any, chunk: int, keep: int) -> list[Value]:
    """``build(b, rows)`` on windows of `chunk` rows of the flattened batch (a ``chunked``
    op), so that the passes' buffers stay in cache; on the whole batch when it is small."""
    batch = tuple(x.type.shape[:-1])
    size: Any = 1
    for d in batch:
        size = dims.mul(size, d)
    if isinstance(size, int) and size <= 2 * chunk:
        return list(build(b, x))
    n = x.type.shape[-1]
    flat = ops.reshape(b, x, (size, n))
    _, tail = chunk_counts(size, chunk)
    regions = []
    out_dtype = _complex_of(x.type.dtype)
    for count in (chunk, tail):
        block = new_block([flat.type.with_shape((count, n))])
        with b.inside(block):
            if isinstance(count, int) and count == 0:     # no tail: no code for it
                block.results = [ops.full(b, 0, TensorType(out_dtype, (0, keep)))]
            else:
                block.results = list(build(b, block.args[0]))
        regions.append(block)
    outs = b.emit(ops.chunked_p, [flat], {"size": size, "chunk": chunk, "batched": (True,)}, regions)
    return [ops.reshape(b, o, batch + (keep,)) for o in outs]


# ---- batch-innermost passes: the butterflies vectorized across rows ---------------------


def _pass_rule(in_types: Types, params: dict[str, Any]) -> Types:
    re, im, *tw = in_types
    r = params["radix"]
    check(re.ndim == 3 and re == im and re.dtype in (F32, F64), "fft_pass: re, im [p, n, w] of one real dtype")
    p, n, w = re.shape
    check(isinstance(n, int) and n % r == 0, f"fft_pass: radix {r} does not divide {n}")
    m = n // r
    check(len(tw) in (0, 2) and all(t.shape == (r, m) and t.dtype == re.dtype for t in tw),
          "fft_pass: twiddles [radix, m] of the operand's dtype")
    return (TensorType(re.dtype, (p, r, 2, m, w)),)


def _pass_ref(re: np.ndarray, im: np.ndarray, *tw: np.ndarray, radix: int, sign: int) -> np.ndarray:
    p, n, w = re.shape
    m = n // radix
    x = (re + 1j * im.astype(np.complex128)).reshape(p, radix, m, w)
    jk = np.outer(np.arange(radix), np.arange(radix))
    y = np.einsum("kj,pjmw->pkmw", np.exp(sign * 2j * np.pi * jk / radix), x)
    if tw:
        y = y * (tw[0] + 1j * tw[1].astype(np.complex128))[None, :, :, None]
    return np.stack([y.real, y.imag], axis=2).astype(re.dtype)


class _Scalars:
    """Complex arithmetic on (re, im) pairs of LLVM scalars, for the passes' codelets."""

    def __init__(self, cg: Any, dtype: np.dtype) -> None:
        self.b, self.cg, self.dtype = cg.b, cg, dtype

    def add(self, x: Any, y: Any) -> Any:
        return self.b.fadd(x[0], y[0]), self.b.fadd(x[1], y[1])

    def sub(self, x: Any, y: Any) -> Any:
        return self.b.fsub(x[0], y[0]), self.b.fsub(x[1], y[1])

    def rot(self, x: Any, s: int) -> Any:
        """x * (s i)."""
        if s > 0:
            return self.b.fneg(x[1]), x[0]
        return x[1], self.b.fneg(x[0])

    def mul(self, x: Any, y: Any) -> Any:
        b = self.b
        f = ("contract",)
        return (b.fsub(b.fmul(x[0], y[0], flags=f), b.fmul(x[1], y[1], flags=f), flags=f),
                b.fadd(b.fmul(x[0], y[1], flags=f), b.fmul(x[1], y[0], flags=f), flags=f))

    def mulc(self, x: Any, c: complex) -> Any:
        """x times the constant c (its zero, +-1 parts skipped)."""
        if c == 1:
            return x
        if c == -1:
            return self.b.fneg(x[0]), self.b.fneg(x[1])
        if c.real == 0 and abs(c.imag) == 1:
            return self.rot(x, 1 if c.imag > 0 else -1)
        k = (self.cg.const(self.dtype, c.real), self.cg.const(self.dtype, c.imag))
        if c.imag == 0:
            return self.b.fmul(x[0], k[0]), self.b.fmul(x[1], k[0])
        return self.mul(x, k)


def _butterfly(z: _Scalars, xs: list[Any], sign: int) -> list[Any]:
    """The DFT of length r = len(xs) of the pairs xs (exp(sign 2 pi i jk/r)): split radix-2
    steps down to 4, 2 or an odd length (a product with the constant matrix)."""
    r = len(xs)
    if r == 1:
        return xs
    if r == 2:
        return [z.add(xs[0], xs[1]), z.sub(xs[0], xs[1])]
    if r == 4:
        a, c = z.add(xs[0], xs[2]), z.sub(xs[0], xs[2])
        bb, d = z.add(xs[1], xs[3]), z.rot(z.sub(xs[1], xs[3]), sign)
        return [z.add(a, bb), z.add(c, d), z.sub(a, bb), z.sub(c, d)]
    if r % 2 == 0:
        h = r // 2
        ev, od = _butterfly(z, xs[0::2], sign), _butterfly(z, xs[1::2], sign)
        w = [np.exp(sign * 2j * np.pi * k / r) for k in range(h)]
        # the quarter turns exactly (0, +-1, +-i: additions only, see _Scalars.mulc)
        w = [complex(round(v.real), round(v.imag)) if abs(v.real) < 1e-15 or abs(v.imag) < 1e-15 else v
             for v in w]
        od = [z.mulc(o, complex(c)) for o, c in zip(od, w)]
        return [z.add(e, o) for e, o in zip(ev, od)] + [z.sub(e, o) for e, o in zip(ev, od)]
    wr, wi = _roots(r, sign)
    out = []
    for k in range(r):
        acc = xs[0]
        for j in range(1, r):
            acc = z.add(acc, z.mulc(xs[j], complex(wr[k, j], wi[k, j])))
        out.append(acc)
    return out


def _lower_pass(cg: Any, op: Any, outs: list[Any]) -> None:
    re, im, *tw = op.operands
    r, sign = op.params["radix"], op.params["sign"]
    p, n, w = re.type.shape
    m = n // r
    z = _Scalars(cg, re.type.dtype)
    b = cg.b
    with cg.loop(cg.dim(p), vectorize=False) as i:
        with cg.loop(cg.index(m), vectorize=False) as k2:
            tws = [(cg.read(tw[0], [cg.index(k), k2]), cg.read(tw[1], [cg.index(k), k2]))
                   for k in range(1, r)] if tw else []
            with cg.loop(cg.dim(w)) as c:
                xs = []
                for j in range(r):
                    at = [i, b.add(cg.index(j * m), k2), c]
                    xs.append((cg.read(re, at), cg.read(im, at)))
                ys = _butterfly(z, xs, sign)
                for k, y in enumerate(ys):
                    if k and tws:
                        y = z.mul(y, tws[k - 1])
                    for part in (0, 1):
                        cg.store(outs[0], [i, cg.index(k), cg.index(part), k2, c], y[part])


fft_pass = define(
    ops.fft_pass_p,
    shape_rule=_pass_rule,
    numpy_ref=_pass_ref,
    lower=_lower_pass,
    streams_operands=False,
    doc="one radix pass of the fft's decomposition on batch-innermost rows (made by fft's decomposition)",
)


def _unpack_rule(in_types: Types, params: dict[str, Any]) -> Types:
    re, im = in_types
    check(re.ndim == 2 and re == im and re.dtype in (F32, F64), "fft_unpack: re, im [n, w] of one real dtype")
    n, w = re.shape
    check(n == int(np.prod(params["radices"])), "fft_unpack: the radices' product is the length")
    check(params["keep"] == (n + 1 if params["real"] else params["keep"]) and 1 <= params["keep"] <= n + params["real"],
          "fft_unpack: keep")
    shape = (1, params["keep"], w) if params["columns"] else (w, params["keep"])
    return (TensorType(_complex_of(re.dtype), shape),)


def _unpack_tables(radices: tuple[int, ...], sign: int, keep: int, real: bool
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row of Z[k], row of Z[n - k], exp(sign 2 pi i k/2n)) for k < keep."""
    n = int(np.prod(radices))
    pos = _digit_positions(list(radices))
    k = np.arange(keep)
    return pos[k % n], pos[(n - k) % n], np.exp(sign * 1j * np.pi * k / n)


def _unpack_ref(re: np.ndarray, im: np.ndarray, radices: tuple, sign: int, keep: int, real: bool,
                columns: bool) -> np.ndarray:
    at, mirror, w = _unpack_tables(radices, sign, keep, real)
    z = re.astype(np.float64) + 1j * im
    y = z[at]
    if real:
        zm = np.conj(z[mirror])
        y = 0.5 * (y + zm) - 0.5j * w[:, None] * (y - zm)
    return (y[None] if columns else y.T).astype(_complex_of(re.dtype))


def _unpack_complex(b: Builder, op: Any, args: list[Any]) -> list[Any]:
    """Real operands, a complex result that stays complex: written by the op's own stores
    (the complex pass packs its parts back into it, no copy)."""
    y = ops.fft_unpack(b, args[0], args[1], op.params["radices"], op.params["sign"], op.params["keep"],
                       op.params["real"], op.params["columns"])
    return [(ops.real(b, y), ops.imag(b, y))]


def _lower_unpack(cg: Any, op: Any, outs: list[Any]) -> None:
    re, im = op.operands
    n, w = re.type.shape
    keep, real, columns = op.params["keep"], op.params["real"], op.params["columns"]
    at, mirror, tw = _unpack_tables(op.params["radices"], op.params["sign"], keep, real)
    dt = re.type.dtype
    b = cg.b
    z = _Scalars(cg, dt)
    half = cg.const(dt, 0.5)
    twr, twi = (0.5 * tw.imag).astype(dt), (-0.5 * tw.real).astype(dt)     # -0.5i exp(...)
    def element(k: Any, c: Any, row: Any, back: Any, t: Any) -> None:
        y = (cg.read(re, [row, c]), cg.read(im, [row, c]))
        if real:
            m = (cg.read(re, [back, c]), b.fneg(cg.read(im, [back, c])))     # conj(Z[n - k])
            s_, d_ = z.add(y, m), z.sub(y, m)
            y = z.add((b.fmul(half, s_[0]), b.fmul(half, s_[1])), z.mul(t, d_))
        cg.store(outs[0], [cg.index(0), k, c] if columns else [c, k], cg.complex_value(outs[0].dtype, *y))

    def tables(k: Any) -> tuple[Any, Any, Any]:
        row = cg.read_constant(at, [k])
        if not real:
            return row, None, None
        return row, cg.read_constant(mirror, [k]), (cg.read_constant(twr, [k]), cg.read_constant(twi, [k]))

    # the rows innermost: contiguous loads, the tables read once per term
    with cg.loop(cg.index(keep), vectorize=False) as k:
        row, back, t = tables(k)
        with cg.loop(cg.dim(w)) as c:
            element(k, c, row, back, t)


fft_unpack = define(
    ops.fft_unpack_p,
    shape_rule=_unpack_rule,
    numpy_ref=_unpack_ref,
    lower=_lower_unpack,
    complex_rule=_unpack_complex,
    streams_operands=False,
    doc="the fft passes' digit-reversed result as complex rows (made by fft's decomposition)",
)


def _pass_radices(n: int) -> list[int] | None:
    """The radices of the passes for length n (8s, then a 4 or 2, then odd ones up to
    GENERIC_MAX); None when a larger prime factor needs Bluestein."""
    out = []
    while n % PASS_RADIX == 0:
        out.append(PASS_RADIX)
        n //= PASS_RADIX
    for r in (4, 2):
        while n % r == 0:
            out.append(r)
            n //= r
    for r in range(3, GENERIC_MAX + 1, 2):
        while n % r == 0:
            out.append(r)
            n //= r
    return out if n == 1 else None


def _passes(b: Builder, re: Value, im: Value, sign: int, rdt: np.dtype) -> tuple[Value, Value, tuple[int, ...]]:
    """The DFT of the columns of re, im [n, w] (rows batch-innermost): a pass per radix,
    each one loop nest writing one buffer; the result [n, 1, w] in digit-reversed order and
    the radices (fft_unpack reads it in natural order)."""
    n, w = re.type.shape
    assert isinstance(n, int)
    radices = _pass_radices(n)
    assert radices is not None
    p, length = 1, n
    cur_re, cur_im = (ops.reshape(b, v, (1, n, w)) for v in (re, im))
    out: Value | None = None
    for r in radices:
        m = length // r
        tw = None
        if m > 1:
            ang = sign * 2 * np.pi * np.outer(np.arange(r), np.arange(m)) / length
            tw = (ops.constant(b, np.cos(ang).astype(rdt)), ops.constant(b, np.sin(ang).astype(rdt)))
        out = ops.fft_pass(b, cur_re, cur_im, r, sign, tw)            # [p, r, 2, m, w]
        p, length = p * r, m
        flat = ops.reshape(b, out, (p, 2, m, w))
        cur_re, cur_im = (ops.reshape(b, ops.slice_(b, flat, (0, q, 0, 0), (p, q + 1, m, w)), (p, m, w))
                          for q in (0, 1))
    # index p = k1_1 (n/r1) + k1_2 (n/(r1 r2)) + ...; the frequency k = k1_1 + r1 k1_2 + ...
    return ops.reshape(b, cur_re, (n, w)), ops.reshape(b, cur_im, (n, w)), tuple(radices)


def _digit_positions(radices: list[int]) -> np.ndarray:
    """pos[k]: the row of the passes' result [n, ...] that holds frequency k."""
    n = int(np.prod(radices))
    k = np.arange(n)
    pos = np.zeros(n, dtype=np.int64)
    stride = n
    for r in radices:
        stride //= r
        pos += (k % r) * stride
        k //= r
    return pos


def _rows_by_passes(g: _Gen, rows: Value, n: int, sign: int, keep: int, real_half: bool) -> Value:
    """The DFT of rows [w, n] (complex, or real: rfft's half spectrum through the half-length
    complex transform) with the rows innermost: transposed in the first pass's reads, back in
    the consumer's."""
    b = g.b
    w = rows.type.shape[0]
    if real_half:
        h = n // 2
        pairs = ops.reshape(b, rows, (w, h, 2))
        re, im = (ops.transpose(b, ops.reshape(b, ops.slice_(b, pairs, (0, 0, q), (w, h, q + 1)), (w, h)), (1, 0))
                  for q in (0, 1))
        zr, zi, radices = _passes(b, re, im, sign, g.rdt)           # Z [h, w], digit-reversed
        return ops.fft_unpack(b, zr, zi, radices, sign, h + 1, True)
    if is_complex(rows.type.dtype):
        re, im = ops.real(b, rows), ops.imag(b, rows)
    else:
        re, im = rows, ops.zeros_like(b, rows)
    yr, yi, radices = _passes(b, ops.transpose(b, re, (1, 0)), ops.transpose(b, im, (1, 0)), sign, g.rdt)
    return ops.fft_unpack(b, yr, yi, radices, sign, keep, False)


fft = define(
    ops.fft_p,
    shape_rule=_rule,
    numpy_ref=_ref,
    vmap_rule=batching.to_front_rule(_batch),
    **ad.linear(_transpose),
    decomposition=_decompose,
    doc="the unscaled discrete Fourier transform of complex or real rows (last axis), its first keep terms",
)
