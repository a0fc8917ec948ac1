"""eigh and svd: the symmetric (Hermitian) eigenproblem and the singular value
decomposition of stacks ``[..., m, n]``, with matrix-level rules and generated code.

``eigh(a) -> (w, v)``: the eigenvalues (real, ascending, as LAPACK) and orthonormal
eigenvectors of the Hermitian part ``(a + aᴴ)/2`` of each matrix (the frontend builds the
Hermitian matrix NumPy reads from one triangle, so the part is the matrix itself).
``svd(a, full_matrices, compute_uv) -> (s, u, vh)`` or ``(s,)``: singular values descending.

Rules: vmap moves the batch axis to the front (`matrices.batch_rule`); the jvp is the
classical perturbation formula (``dw = diag(Vᴴ dA V)``, ``dV = V (F ∘ Vᴴ dA V)`` with
``F[i, j] = 1 / (w[j] - w[i])``; for the SVD the formula with ``1 / (s[j]² - s[i]²)``
and the projections onto the complements for non-square matrices), and the vjp is that
linear map transposed by the vjp driver (`_transpose`), so the two agree by construction.

Code (the decompositions): Jacobi methods, which are accurate (small relative errors in
the eigenvalues), simple and elementwise across a batch.

* eigh of a small static matrix (n <= UNROLL), and the SVD of one up to SVD_SMALL: cyclic
  Jacobi (one-sided for the SVD) unrolled over the entries (batch-shaped values: elementwise
  code across the batch), a fixed number of sweeps in a ``for`` loop, then a
  compare-exchange network sorts the values.
* otherwise: parallel (round-robin) Jacobi: each step applies n/2 disjoint rotations to
  whole matrices with two gathers, in a ``for`` loop (symbolic sizes too); the SVD is
  one-sided Jacobi (Hestenes) on the columns, the same steps. A rank sort orders the
  results.

Large matrices call LAPACK (xsyevd/xheevd, xgesdd: `spectral_lapack.py`), the
decompositions staying as the op's region: the code of a kernel loaded without the routine.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from compiler.errors import UnsupportedError
from compiler.ir import dims
from compiler.ir.builder import Builder
from compiler.ir.core import Block, Op, Value
from compiler.ir.primitive import define
from compiler.ir.types import TensorType
from compiler.primitives import ad, ops, regions
from compiler.primitives.base import ShapeError, check
from compiler.primitives.matrices import assemble, batch_rule, entries, eye, mH, matmul
from compiler.primitives.spectral_lapack import eigh_library_when, lower_eigh, lower_svd, svd_library_when

Types = tuple[TensorType, ...]
I64 = np.dtype(np.int64)

#: the largest static n whose eigh is unrolled over the entries
UNROLL = 4
#: the largest static n whose sweeps are unrolled too (one fused loop over the batch); larger n
#: run the sweeps in a ``for`` loop whose body is one unrolled sweep. Up to n = CARRY_ENTRIES
#: the loop carries the n² entries of a and v as batch-shaped values, above it the stacked
#: matrices (entries taken and assembled again in each sweep). Measured for eigh of 10,000
#: 3x3 (NumPy's stacked eigh: 14-25 ms): all sweeps unrolled, 3.4 ms, compiled in 23 s;
#: entries carried, 1.8 ms, 3.5 s; matrices carried, 11 ms, 1.5 s. For 10,000 4x4 (NumPy
#: 22 ms): entries carried, about 3 ms but compiled in 25 s; matrices carried, 16 ms, 6 s;
#: round-robin steps, 84 ms.
UNROLL_SWEEPS = 2
CARRY_ENTRIES = 3


def real_dtype(dtype: Any) -> np.dtype:
    return np.finfo(np.dtype(dtype)).dtype


def eigh_sweeps(n: Any, dtype: Any) -> int:
    """Cyclic Jacobi sweeps for an n x n matrix (quadratic convergence: enough for the
    dtype's precision on any input, measured in tests/linalg/test_spectral.py)."""
    single = real_dtype(dtype) == np.float32
    if isinstance(n, int) and n <= 2:
        return 1
    if isinstance(n, int) and n <= 4:
        return 5 if single else 6
    if isinstance(n, int):             # random 128 x 128: 9 sweeps converge, 256 x 256: 10
        for limit, sweeps in ((16, 9), (64, 10), (256, 11), (1024, 12)):
            if n <= limit:
                return sweeps
    return 14


# ---- shape rules and NumPy references -------------------------------------------------------

def _square(t: TensorType, name: str) -> None:
    check(t.ndim >= 2, f"{name}: expected a stack of matrices, got {t}")
    check(t.dtype.kind in "fc", f"{name}: expected floating or complex values, got {t.dtype}")


def _eigh_rule(in_types: Types, params: dict[str, Any]) -> Types:
    (a,) = in_types
    _square(a, "eigh")
    check(a.shape[-1] == a.shape[-2], f"eigh: matrices must be square, got {a}")
    return (TensorType(real_dtype(a.dtype), tuple(a.shape[:-1])), a)


def ref_phases(v: np.ndarray) -> np.ndarray:
    """The convention of the eigen- and singular vectors: each column of v is scaled so that
    its entry of largest magnitude (the first of equal ones) is real and positive; the
    factors ([..., n]) are returned."""
    if v.shape[-1] == 0 or v.shape[-2] == 0:
        return np.ones(v.shape[:-2] + v.shape[-1:], v.dtype)
    i = np.argmax(np.abs(v), axis=-2)[..., None, :]
    top = np.take_along_axis(v, i, axis=-2)[..., 0, :]
    mag = np.abs(top)
    return np.where(mag == 0, 1, np.conj(top) / np.where(mag == 0, 1, mag)).astype(v.dtype)


def _ref_eigh(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    h = (a + np.conj(np.swapaxes(a, -1, -2))) / 2
    w, v = np.linalg.eigh(h)
    v = v * ref_phases(v)[..., None, :]
    return w.astype(real_dtype(a.dtype)), v.astype(a.dtype)


def _svd_shapes(a: TensorType, full: bool, uv: bool) -> Types:
    *batch, m, n = a.shape
    k = dims.minimum(m, n)
    s = TensorType(real_dtype(a.dtype), tuple(batch) + (k,))
    if not uv:
        return (s,)
    u = TensorType(a.dtype, tuple(batch) + (m, m if full else k))
    vh = TensorType(a.dtype, tuple(batch) + (n if full else k, n))
    return (s, u, vh)


def _svd_rule(in_types: Types, params: dict[str, Any]) -> Types:
    (a,) = in_types
    _square(a, "svd")
    return _svd_shapes(a, params["full_matrices"], params["compute_uv"])


def _ref_svd(a: np.ndarray, full_matrices: bool, compute_uv: bool) -> tuple:
    rd = real_dtype(a.dtype)
    if not compute_uv:
        return (np.linalg.svd(a, compute_uv=False).astype(rd),)
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    k = s.shape[-1]
    ph = ref_phases(np.conj(np.swapaxes(vh[..., :k, :], -1, -2)))
    vh = vh.copy()
    u = u.copy()
    vh[..., :k, :] *= np.conj(ph)[..., :, None]
    u[..., :, :k] *= ph[..., None, :]
    return s.astype(rd), u.astype(a.dtype), vh.astype(a.dtype)


# ---- small helpers ----------------------------------------------------------------------------

def _static(d: Any) -> int:
    if not isinstance(d, int):
        raise AssertionError(f"a static size was expected, got {d}")
    return d


def _t(dtype: Any, shape: Sequence[Any]) -> TensorType:
    return TensorType(np.dtype(dtype), tuple(shape))


def _re(b: Builder, x: Value) -> Value:
    return ops.real(b, x) if x.type.dtype.kind == "c" else x


def _as(b: Builder, x: Value, dtype: Any) -> Value:
    return x if x.type.dtype == np.dtype(dtype) else ops.convert(b, x, dtype)


def _c(b: Builder, value: float, like: Value) -> Value:
    return ops.full_like(b, value, like)


def _rows(b: Builder, v: Value, shape: Sequence[Any]) -> Value:
    """v [..., n] as v[..., :, None] broadcast to [..., n, k]."""
    nb = v.type.ndim - 1
    return ops.broadcast_in_dim(b, v, shape, tuple(range(nb)) + (nb,))


def _cols(b: Builder, v: Value, shape: Sequence[Any]) -> Value:
    """v [..., n] as v[..., None, :] broadcast to [..., k, n]."""
    nb = v.type.ndim - 1
    return ops.broadcast_in_dim(b, v, shape, tuple(range(nb)) + (nb + 1,))


def _diag(b: Builder, x: Value) -> Value:
    n = x.type.ndim
    return ops.diagonal(b, x, n - 2, n - 1)


def _diag_matrix(b: Builder, v: Value) -> Value:
    """[..., n] -> [..., n, n] with v on the diagonal."""
    n = v.type.shape[-1]
    shape = tuple(v.type.shape) + (n,)
    e = _as(b, _eye(b, v.type.dtype, shape), v.type.dtype)
    return ops.mul(b, _rows(b, v, shape), e)


def _eye(b: Builder, dtype: Any, shape: Sequence[Any]) -> Value:
    return eye(b, ops.full(b, 0, _t(dtype, shape)))


def _abs(b: Builder, x: Value) -> Value:
    if x.type.dtype.kind == "c":
        return ops.hypot(b, ops.real(b, x), ops.imag(b, x))
    return ops.abs_(b, x)


def _sqr_abs(b: Builder, x: Value) -> Value:
    if x.type.dtype.kind == "c":
        re, im = ops.real(b, x), ops.imag(b, x)
        return ops.add(b, ops.mul(b, re, re), ops.mul(b, im, im))
    return ops.mul(b, x, x)


def _rotation(b: Builder, app: Value, aqq: Value, apq: Value, skip: Value | None = None
              ) -> tuple[Value, Value, Value, Value]:
    """The Jacobi rotation that zeroes apq of the Hermitian 2 x 2 [[app, apq], [apq*, aqq]]
    (app, aqq real): (c, s, phase, t) with the new diagonal app - t|apq|, aqq + t|apq|;
    columns p, q become c col_p - s conj(phase) col_q and c col_q + s phase col_p."""
    mag = _abs(b, apq)
    zero = ops.eq(b, mag, _c(b, 0, mag))
    if skip is not None:
        zero = ops.or_(b, zero, skip)
    one = _c(b, 1, mag)
    safe = ops.select(b, zero, one, mag)
    theta = ops.div(b, ops.sub(b, aqq, app), ops.add(b, safe, safe))
    sgn = ops.select(b, ops.ge(b, theta, _c(b, 0, theta)), one, _c(b, -1, mag))
    t = ops.div(b, sgn, ops.add(b, ops.abs_(b, theta), ops.hypot(b, one, theta)))
    t = ops.select(b, zero, _c(b, 0, t), t)
    c = ops.div(b, one, ops.hypot(b, one, t))
    s = ops.mul(b, t, c)
    if apq.type.dtype.kind == "c":
        re = ops.select(b, zero, one, ops.div(b, ops.real(b, apq), safe))
        phase = ops.complex_(b, re, ops.div(b, ops.imag(b, apq), safe))
    else:
        phase = ops.select(b, zero, one, ops.div(b, apq, safe))
    return c, s, phase, ops.mul(b, t, mag)


def _phases(b: Builder, v: Value) -> Value:
    """`ref_phases` in IR: per column of v [..., m, n], conj(top) / |top| for its entry top of
    largest magnitude (the first of equal ones), 1 for a zero column."""
    nb = v.type.ndim - 2
    shape = tuple(v.type.shape)
    mags = _sqr_abs(b, v)
    best = ops.argmax(b, mags, nb)                                         # [..., n]
    onehot = ops.eq(b, ops.iota(b, I64, shape, nb),
                    ops.broadcast_in_dim(b, best, shape, tuple(range(nb)) + (nb + 1,)))
    top = ops.reduce_sum(b, ops.select(b, onehot, v, ops.zeros_like(b, v)), [nb])
    mag = _abs(b, top)
    zero = ops.eq(b, mag, _c(b, 0, mag))
    safe = ops.select(b, zero, _c(b, 1, mag), mag)
    if v.type.dtype.kind == "c":
        re = ops.select(b, zero, _c(b, 1, mag), ops.div(b, ops.real(b, top), safe))
        im = ops.select(b, zero, _c(b, 0, mag), ops.neg(b, ops.div(b, ops.imag(b, top), safe)))
        return ops.complex_(b, re, im)
    return ops.select(b, zero, _c(b, 1, mag), ops.div(b, top, safe))


# ---- eigh: unrolled cyclic Jacobi for small static n -----------------------------------------

def _eigh_sweep(b: Builder, e: list[list[Value]], v_: list[list[Value]]
                ) -> tuple[list[list[Value]], list[list[Value]]]:
    """One cyclic Jacobi sweep over the entries e (batch-shaped values) of a small static
    Hermitian matrix, the entries v_ of the eigenvectors alongside."""
    n = len(e)
    dtype = e[0][0].type.dtype
    cplx = dtype.kind == "c"
    v_ = [list(row) for row in v_]
    d = [_re(b, e[i][i]) for i in range(n)]
    up = {(i, j): e[i][j] for i in range(n) for j in range(i + 1, n)}
    zero = ops.zeros_like(b, e[0][0])

    def get(i: int, j: int) -> Value:
        return up[i, j] if i < j else ops.conj_if_complex(b, up[j, i])

    def put(i: int, j: int, x: Value) -> None:
        if i < j:
            up[i, j] = x
        else:
            up[j, i] = ops.conj_if_complex(b, x)

    for p in range(n):
        for q in range(p + 1, n):
            c, s, phase, tm = _rotation(b, d[p], d[q], up[p, q])
            cc = _as(b, c, dtype)
            sp = ops.mul(b, _as(b, s, dtype), phase)          # s phase
            spc = ops.conj(b, sp) if cplx else sp              # s conj(phase)
            d[p], d[q] = ops.sub(b, d[p], tm), ops.add(b, d[q], tm)
            up[p, q] = zero
            for k in range(n):
                if k in (p, q):
                    continue
                akp, akq = get(k, p), get(k, q)
                put(k, p, ops.sub(b, ops.mul(b, cc, akp), ops.mul(b, spc, akq)))
                put(k, q, ops.add(b, ops.mul(b, cc, akq), ops.mul(b, sp, akp)))
            for k in range(n):
                vkp, vkq = v_[k][p], v_[k][q]
                v_[k][p] = ops.sub(b, ops.mul(b, cc, vkp), ops.mul(b, spc, vkq))
                v_[k][q] = ops.add(b, ops.mul(b, cc, vkq), ops.mul(b, sp, vkp))
    rows = [[_as(b, d[i], dtype) if i == j else get(i, j) for j in range(n)] for i in range(n)]
    return rows, v_


def _eigh_small(b: Builder, a: Value) -> tuple[Value, Value]:
    """Cyclic Jacobi unrolled over the entries of a small static matrix: one sweep is the body
    of a ``for`` loop over the sweeps whose carries are the entries (batch-shaped values:
    elementwise across the batch), then an odd-even transposition network sorts the
    eigenvalues, the columns of v alongside."""
    dtype, n = a.type.dtype, _static(a.type.shape[-1])
    batch = tuple(a.type.shape[:-2])
    e = entries(b, a)
    one, zero = ops.full(b, 1, _t(dtype, batch)), ops.full(b, 0, _t(dtype, batch))
    vv = [[one if i == j else zero for j in range(n)] for i in range(n)]
    sweeps = eigh_sweeps(n, dtype)
    if n <= UNROLL_SWEEPS:
        for _ in range(sweeps):
            e, vv = _eigh_sweep(b, e, vv)
    elif n > CARRY_ENTRIES:
        body = Block()
        k = Value(_t(I64, ()), None, 0, "k")
        ab, vb = Value(a.type, None, 1, ""), Value(a.type, None, 2, "")
        body.args.extend([k, ab, vb])
        with b.inside(body):
            eo, vo = _eigh_sweep(b, entries(b, ab), entries(b, vb))
            body.results = [assemble(b, eo), assemble(b, vo)]
        v0 = _as(b, eye(b, ops.full_like(b, 0, a)), dtype)
        a, v = ops.for_loop(b, ops.scalar(b, 0, I64), ops.scalar(b, sweeps, I64), [a, v0], body, 1, sweeps)
        e, vv = entries(b, a), entries(b, v)
    else:
        body = Block()
        k = Value(_t(I64, ()), None, 0, "k")
        flat = [Value(_t(dtype, batch), None, 1 + i, "") for i in range(2 * n * n)]
        body.args.extend([k, *flat])
        with b.inside(body):
            ein = [flat[i * n:(i + 1) * n] for i in range(n)]
            vin = [flat[n * n + i * n:n * n + (i + 1) * n] for i in range(n)]
            eo, vo = _eigh_sweep(b, ein, vin)
            body.results = [x for row in eo + vo for x in row]
        init = [x for row in e + vv for x in row]
        out = ops.for_loop(b, ops.scalar(b, 0, I64), ops.scalar(b, sweeps, I64), init, body, 1, sweeps)
        e = [list(out[i * n:(i + 1) * n]) for i in range(n)]
        vv = [list(out[n * n + i * n:n * n + (i + 1) * n]) for i in range(n)]
    d = [_re(b, e[i][i]) for i in range(n)]
    for r in range(n):
        for i in range(r % 2, n - 1, 2):
            swap = ops.gt(b, d[i], d[i + 1])
            d[i], d[i + 1] = ops.select(b, swap, d[i + 1], d[i]), ops.select(b, swap, d[i], d[i + 1])
            for row in range(n):
                x, y = vv[row][i], vv[row][i + 1]
                vv[row][i], vv[row][i + 1] = ops.select(b, swap, y, x), ops.select(b, swap, x, y)
    w = assemble(b, [[x] for x in d])
    return ops.reshape(b, w, batch + (n,)), assemble(b, vv)


# ---- parallel (round-robin) Jacobi steps on whole matrices ----------------------------------

def _partners(b: Builder, r: Value, n: Any) -> Value:
    """The round-robin pairing of round r (int64 [n]): every index meets every other once in
    M rounds (M = n - 1 for even n, n for odd n, where the index paired with the missing
    player sits out: its own partner)."""
    i = ops.iota(b, I64, (n,), 0)
    nn = ops.size_of(b, n, I64) if not isinstance(n, int) else ops.scalar(b, n, I64)
    two, one = ops.scalar(b, 2, I64), ops.scalar(b, 1, I64)
    m = ops.add(b, ops.sub(b, nn, one), ops.mod(b, nn, two))
    mv = ops.broadcast_in_dim(b, m, (n,), ())
    rv = ops.broadcast_in_dim(b, ops.mod(b, r, m), (n,), ())
    j = ops.mod(b, ops.sub(b, ops.mul(b, ops.broadcast_in_dim(b, two, (n,), ()), rv), i), mv)
    fixed = ops.select(b, ops.lt(b, mv, ops.broadcast_in_dim(b, nn, (n,), ())), mv, i)
    j = ops.select(b, ops.eq(b, j, i), fixed, j)
    return ops.select(b, ops.eq(b, i, mv), rv, j)


def _step_coefficients(b: Builder, d: Value, o: Value, pi: Value) -> tuple[Value, Value]:
    """Per index i of a round: the column coefficients (c_i, sigma_i) of new col_i =
    c_i col_i + sigma_i col_pi(i), from the diagonal d (real) and o_i = G[pi(i), i]."""
    nb = d.type.ndim - 1
    shape = tuple(d.type.shape)
    idx = ops.broadcast_in_dim(b, ops.iota(b, I64, shape[-1:], 0), shape, (nb,))
    pv = ops.broadcast_in_dim(b, pi, shape, (nb,))
    is_p = ops.lt(b, idx, pv)
    dp = ops.take(b, d, pi, nb)
    app, aqq = ops.select(b, is_p, d, dp), ops.select(b, is_p, dp, d)
    c, s, phase, _ = _rotation(b, app, aqq, o, skip=ops.eq(b, idx, pv))
    signed = ops.select(b, is_p, ops.neg(b, s), s)
    return c, ops.mul(b, _as(b, signed, o.type.dtype), phase)


def _rotate_columns(b: Builder, x: Value, pi: Value, c: Value, sigma: Value) -> Value:
    shape = tuple(x.type.shape)
    cc = _cols(b, _as(b, c, x.type.dtype), shape)
    xp = ops.take(b, x, pi, x.type.ndim - 1)
    return ops.add(b, ops.mul(b, x, cc), ops.mul(b, xp, _cols(b, sigma, shape)))


def _eigh_step(b: Builder, r: Value, a: Value, v: Value) -> tuple[Value, Value]:
    n, nd = a.type.shape[-1], a.type.ndim
    pi = _partners(b, r, n)
    d = _re(b, _diag(b, a))
    # o_i = a[pi(i), i] read from the upper triangle for both indices of a pair (a is Hermitian
    # up to rounding: reading both triangles would give the two a rotation each)
    low, up = _diag(b, ops.take(b, a, pi, nd - 2)), _diag(b, ops.take(b, a, pi, nd - 1))
    nb = nd - 2
    shape = tuple(d.type.shape)
    is_p = ops.lt(b, ops.broadcast_in_dim(b, ops.iota(b, I64, shape[-1:], 0), shape, (nb,)),
                  ops.broadcast_in_dim(b, pi, shape, (nb,)))
    o = ops.select(b, is_p, ops.conj_if_complex(b, up), low)
    c, sigma = _step_coefficients(b, d, o, pi)
    a1 = _rotate_columns(b, a, pi, c, sigma)
    shape = tuple(a.type.shape)
    cr = _rows(b, _as(b, c, a.type.dtype), shape)
    sr = _rows(b, ops.conj_if_complex(b, sigma), shape)
    a2 = ops.add(b, ops.mul(b, cr, a1), ops.mul(b, sr, ops.take(b, a1, pi, nd - 2)))
    return a2, _rotate_columns(b, v, pi, c, sigma)


def _svd_step(b: Builder, r: Value, a: Value, v: Value) -> tuple[Value, Value]:
    """One round of one-sided Jacobi on the columns of a tall a (and of v alongside)."""
    n, nd = a.type.shape[-1], a.type.ndim
    pi = _partners(b, r, n)
    d = ops.reduce_sum(b, _sqr_abs(b, a), [nd - 2])
    ap = ops.take(b, a, pi, nd - 1)
    o = ops.reduce_sum(b, ops.mul(b, ops.conj_if_complex(b, ap), a), [nd - 2])
    c, sigma = _step_coefficients(b, d, o, pi)
    return _rotate_columns(b, a, pi, c, sigma), _rotate_columns(b, v, pi, c, sigma)


def _rounds(b: Builder, n: Any) -> tuple[Value, Any]:
    """M, the rounds of one sweep, as an int64 scalar value and (if static) an int."""
    if isinstance(n, int):
        m = n - 1 + n % 2
        return ops.scalar(b, m, I64), m
    nn = ops.size_of(b, n, I64)
    return ops.add(b, ops.sub(b, nn, ops.scalar(b, 1, I64)), ops.mod(b, nn, ops.scalar(b, 2, I64))), None


def _jacobi(b: Builder, step: Callable[..., tuple[Value, Value]], a: Value, v: Value, n: Any,
            sweeps: int) -> tuple[Value, Value]:
    """`sweeps` sweeps of round-robin steps: unrolled when few, a ``for`` loop otherwise."""
    mval, m = _rounds(b, n)
    if m is not None and m * sweeps <= 1:
        for r in range(m * sweeps):
            a, v = step(b, ops.scalar(b, r, I64), a, v)
        return a, v
    body = Block()
    k = Value(_t(I64, ()), None, 0, "k")
    ab = Value(a.type, None, 1, "")
    vb = Value(v.type, None, 2, "")
    body.args.extend([k, ab, vb])
    with b.inside(body):
        body.results = list(step(b, k, ab, vb))
    stop = ops.mul(b, mval, ops.scalar(b, sweeps, I64))
    trip = m * sweeps if m is not None else None
    a, v = ops.for_loop(b, ops.scalar(b, 0, I64), stop, [a, v], body, 1, trip)
    return a, v


def _rank_sort(b: Builder, w: Value, mats: Sequence[Value], descending: bool) -> tuple[Value, list[Value]]:
    """w [..., n] sorted (stable), and the columns of each [..., m, n] in `mats` alongside:
    rank_i = #{j: w_j before w_i}, then a one-hot permutation matrix."""
    nb = w.type.ndim - 1
    n = w.type.shape[-1]
    sq = tuple(w.type.shape) + (n,)
    wi, wj = _rows(b, w, sq), _cols(b, w, sq)          # [.., i, j] = w_i, w_j
    ii = ops.iota(b, I64, sq, nb)
    jj = ops.iota(b, I64, sq, nb + 1)
    before = ops.gt(b, wj, wi) if descending else ops.lt(b, wj, wi)
    before = ops.or_(b, before, ops.and_(b, ops.eq(b, wj, wi), ops.lt(b, jj, ii)))
    rank = ops.reduce_sum(b, ops.convert(b, before, I64), [nb + 1])       # [..., n]
    perm = ops.eq(b, _rows(b, rank, sq), jj)           # perm[.., i, k] = rank_i == k
    pw = ops.convert(b, perm, w.type.dtype)
    ws = ops.reduce_sum(b, ops.mul(b, wi, pw), [nb])  # sum_i w_i perm[i, k]
    out = []
    for x in mats:
        px = ops.convert(b, perm, x.type.dtype)
        out.append(matmul(b, x, px))
    return ws, out


def _decompose_eigh(b: Builder, op: Op, args: list[Value]) -> list[Value] | None:
    (a,) = args
    a = ops.div(b, ops.add(b, a, mH(b, a)), _c(b, 2, a))
    n = a.type.shape[-1]
    if isinstance(n, int) and n <= UNROLL:
        w, v = _eigh_small(b, a)
    else:
        v0 = _as(b, eye(b, ops.full_like(b, 0, a)), a.type.dtype)
        a, v = _jacobi(b, _eigh_step, a, v0, n, eigh_sweeps(n, a.type.dtype))
        w, (v,) = _rank_sort(b, _re(b, _diag(b, a)), [v], descending=False)
    return [w, _scale(b, v, _phases(b, v))]


def _scale(b: Builder, x: Value, ph: Value) -> Value:
    """The columns of x times ph [..., n]."""
    return ops.mul(b, x, _cols(b, ph, tuple(x.type.shape)))


# ---- svd -----------------------------------------------------------------------------------

def _complete(b: Builder, q: Value, missing: Value) -> Value:
    """q [..., m, k] with orthonormal columns except where `missing` [..., k]: those become
    unit vectors orthogonal to all others, in a ``for`` loop over the columns. Each is the
    standard basis vector e_i with the largest residual, ``|(I - Q Qᴴ) e_i|² = 1 - |Q[i, :]|²``
    (the row of least norm), with Q's components taken out twice (Gram-Schmidt, "twice is
    enough"): O(m k) memory and O(m k) work a column, where the residual projector
    I - Q Qᴴ was m x m (3.2 GB of temporaries for the thin SVD of a 10000 x 4 matrix)."""
    dtype = q.type.dtype
    *batch, m, k = q.type.shape
    nb = len(batch)
    keep = ops.convert(b, ops.not_(b, missing), dtype)
    qk = ops.mul(b, q, _cols(b, keep, q.type.shape))     # a missing column is zero until made
    body = Block()
    j = Value(_t(I64, ()), None, 0, "j")
    qb = Value(q.type, None, 1, "")
    mb = Value(missing.type, None, 2, "")
    body.args.extend([j, qb, mb])
    with b.inside(body):
        zero = ops.scalar(b, 0, I64)
        zeros = [zero] * nb
        miss = ops.reshape(b, ops.dynamic_slice(b, mb, [*zeros, j], tuple(batch) + (1,)),
                           tuple(batch))
        col = ops.dynamic_slice(b, qb, [*zeros, zero, j], tuple(batch) + (m, 1))
        rows = ops.reduce_sum(b, _sqr_abs(b, qb), [nb + 1])          # [..., m]
        best = ops.argmin(b, rows, nb)                                 # [...]
        onehot = ops.eq(b, ops.iota(b, I64, tuple(batch) + (m, 1), nb),
                        ops.broadcast_in_dim(b, best, tuple(batch) + (m, 1), tuple(range(nb))))
        u = ops.convert(b, onehot, dtype)                              # [..., m, 1]
        for _ in range(2):
            u = ops.sub(b, u, matmul(b, qb, matmul(b, mH(b, qb), u)))
        un = ops.sqrt(b, ops.reduce_sum(b, _sqr_abs(b, u), [nb, nb + 1]))
        un = _as(b, ops.broadcast_in_dim(b, un, tuple(batch) + (m, 1), tuple(range(nb))), dtype)
        u = ops.div(b, u, un)
        mcol = ops.broadcast_in_dim(b, miss, tuple(batch) + (m, 1), tuple(range(nb)))
        new = ops.select(b, mcol, u, col)
        body.results = [ops.dynamic_update_slice(b, qb, new, [*zeros, zero, j]), mb]
    kk = ops.size_of(b, k, I64) if not isinstance(k, int) else ops.scalar(b, k, I64)
    out, _ = ops.for_loop(b, ops.scalar(b, 0, I64), kk, [qk, missing], body, 1, k)
    return out


#: the largest static (m, n) whose one-sided Jacobi is unrolled over the entries
SVD_SMALL = (4, 3)


def _svd_sweep(b: Builder, e: list[list[Value]], v_: list[list[Value]]
               ) -> tuple[list[list[Value]], list[list[Value]]]:
    """One cyclic one-sided Jacobi sweep over the columns of the entries e (m x n, batch-shaped
    values), the entries of v alongside."""
    m, n = len(e), len(e[0])
    dtype = e[0][0].type.dtype
    cplx = dtype.kind == "c"
    e, v_ = [list(r) for r in e], [list(r) for r in v_]

    def column_sums(f: Callable[[int], Value]) -> Value:
        total = f(0)
        for k in range(1, m):
            total = ops.add(b, total, f(k))
        return total

    for p in range(n):
        for q in range(p + 1, n):
            alpha = column_sums(lambda k: _sqr_abs(b, e[k][p]))
            beta = column_sums(lambda k: _sqr_abs(b, e[k][q]))
            gamma = column_sums(lambda k: ops.mul(b, ops.conj_if_complex(b, e[k][p]), e[k][q]))
            c, s, phase, _ = _rotation(b, alpha, beta, gamma)
            cc = _as(b, c, dtype)
            sp = ops.mul(b, _as(b, s, dtype), phase)
            spc = ops.conj(b, sp) if cplx else sp
            for rows in (e, v_):
                for k in range(len(rows)):
                    xp, xq = rows[k][p], rows[k][q]
                    rows[k][p] = ops.sub(b, ops.mul(b, cc, xp), ops.mul(b, spc, xq))
                    rows[k][q] = ops.add(b, ops.mul(b, cc, xq), ops.mul(b, sp, xp))
    return e, v_


def _svd_small(b: Builder, a: Value) -> tuple[Value, Value, Value]:
    """One-sided Jacobi unrolled over the entries of a small static tall matrix, the sweeps in
    a ``for`` loop carrying the entries (batch-shaped values), then a compare-exchange network
    sorts the singular values descending: (s, a v, v)."""
    dtype = a.type.dtype
    *batch_, m_, n_ = a.type.shape
    m, n, batch = _static(m_), _static(n_), tuple(batch_)
    e = entries(b, a)
    one, zero = ops.full(b, 1, _t(dtype, batch)), ops.full(b, 0, _t(dtype, batch))
    vv = [[one if i == j else zero for j in range(n)] for i in range(n)]
    sweeps = eigh_sweeps(n, dtype)
    if n >= 2:
        body = Block()
        k = Value(_t(I64, ()), None, 0, "k")
        flat = [Value(_t(dtype, batch), None, 1 + i, "") for i in range(m * n + n * n)]
        body.args.extend([k, *flat])
        with b.inside(body):
            ein = [flat[i * n:(i + 1) * n] for i in range(m)]
            vin = [flat[m * n + i * n:m * n + (i + 1) * n] for i in range(n)]
            eo, vo = _svd_sweep(b, ein, vin)
            body.results = [x for row in eo + vo for x in row]
        init = [x for row in e + vv for x in row]
        out = ops.for_loop(b, ops.scalar(b, 0, I64), ops.scalar(b, sweeps, I64), init, body, 1, sweeps)
        e = [list(out[i * n:(i + 1) * n]) for i in range(m)]
        vv = [list(out[m * n + i * n:m * n + (i + 1) * n]) for i in range(n)]
    sv = []
    for j in range(n):
        total = _sqr_abs(b, e[0][j])
        for row in range(1, m):
            total = ops.add(b, total, _sqr_abs(b, e[row][j]))
        sv.append(ops.sqrt(b, total))
    for r in range(n):
        for i in range(r % 2, n - 1, 2):
            swap = ops.lt(b, sv[i], sv[i + 1])
            sv[i], sv[i + 1] = ops.select(b, swap, sv[i + 1], sv[i]), ops.select(b, swap, sv[i], sv[i + 1])
            for rows in (e, vv):
                for row in range(len(rows)):
                    x, y = rows[row][i], rows[row][i + 1]
                    rows[row][i], rows[row][i + 1] = ops.select(b, swap, y, x), ops.select(b, swap, x, y)
    svals = ops.reshape(b, assemble(b, [[x] for x in sv]), batch + (n,))
    return svals, assemble(b, e), assemble(b, vv)


def _svd_tall(b: Builder, a: Value, full: bool, uv: bool) -> list[Value]:
    """The SVD of a [..., m, n] with m >= n (static) or any sizes treated as tall."""
    dtype = a.type.dtype
    *batch, m, n = a.type.shape
    nb = len(batch)
    if isinstance(m, int) and isinstance(n, int) and n <= SVD_SMALL[1] and m <= SVD_SMALL[0]:
        s, w, v = _svd_small(b, a)
    else:
        v0 = _as(b, eye(b, ops.full(b, 0, _t(dtype, tuple(batch) + (n, n)))), dtype)
        w, v = _jacobi(b, _svd_step, a, v0, n, eigh_sweeps(n, dtype))
        s = ops.sqrt(b, ops.reduce_sum(b, _sqr_abs(b, w), [nb]))
        s, (w, v) = _rank_sort(b, s, [w, v], descending=True)
    if not uv:
        return [s]
    rd = real_dtype(dtype)
    smax = ops.reduce_max(b, s, [nb]) if n != 0 else ops.full(b, 0, _t(rd, batch))
    tiny = ops.full(b, float(np.finfo(rd).tiny) / float(np.finfo(rd).eps), _t(rd, batch))
    thr = ops.maximum(b, ops.mul(b, smax, ops.full(b, float(np.finfo(rd).eps) ** 2, _t(rd, batch))), tiny)
    missing = ops.le(b, s, ops.broadcast_in_dim(b, thr, tuple(s.type.shape), tuple(range(nb))))
    safe = ops.select(b, missing, ops.full_like(b, 1, s), s)
    u = ops.div(b, w, _cols(b, _as(b, safe, dtype), tuple(w.type.shape)))
    if full and m != n:
        pad = ops.full(b, 0, _t(dtype, tuple(batch) + (m, dims.add(m, dims.mul(n, -1)))))
        u = ops.concatenate(b, [u, pad], nb + 1)
        missing = ops.concatenate(b, [missing, ops.full(b, True, _t(np.bool_, tuple(batch) + (
            dims.add(m, dims.mul(n, -1)),)))], nb)
    u = _complete(b, u, missing)
    return [s, u, mH(b, v)]


def _at_least(x: Any, y: Any) -> bool:
    """x >= y for every value of the symbols?"""
    return dims.nonnegative(dims.add(x, dims.mul(y, -1)))


def wide(m: Any, n: Any) -> bool:
    """Is a [..., m, n] known to be wider than tall (then its SVD is computed on aᴴ)?"""
    if isinstance(m, int) and isinstance(n, int):
        return m < n
    return not _at_least(m, n) and _at_least(n, m)


def svd_sizes_known(m: Any, n: Any) -> bool:
    """Does the generated SVD know which of m, n is the larger (its one-sided Jacobi runs on
    the columns of the tall one)?"""
    return _at_least(m, n) or _at_least(n, m)


def _decompose_svd(b: Builder, op: Op, args: list[Value]) -> list[Value] | None:
    (a,) = args
    full, uv = op.params["full_matrices"], op.params["compute_uv"]
    m, n = a.type.shape[-2:]
    if wide(m, n):
        res = _svd_tall(b, mH(b, a), full, uv)
        if not uv:
            return res
        s, u, vh = res[0], mH(b, res[2]), mH(b, res[1])
    else:
        if not svd_sizes_known(m, n):
            raise ShapeError(f"svd: the generated code needs m >= n or m <= n known at compile time, "
                             f"got {a.type}")
        res = _svd_tall(b, a, full, uv)
        if not uv:
            return res
        s, u, vh = res
    # the phase convention (ref_phases) on the columns of V that go with singular values
    k = s.type.shape[-1]
    nb = s.type.ndim - 1
    v = mH(b, vh)
    vk = v if v.type.shape[-1] == k else ops.slice_(b, v, [0] * (nb + 2), list(v.type.shape[:-1]) + [k])
    ph = _phases(b, vk)

    def padded(size: Any) -> Value:
        if size == k:
            return ph
        return ops.pad(b, ph, ops.scalar(b, 1, ph.type.dtype), [0] * (nb + 1),
                       [0] * nb + [dims.add(size, dims.mul(k, -1))])
    u = _scale(b, u, padded(u.type.shape[-1]))
    vh = mH(b, _scale(b, v, padded(v.type.shape[-1])))
    return [s, u, vh]


# ---- derivatives ------------------------------------------------------------------------------

def _transpose(b: Builder, tangent: Callable[..., list[Value]], primals: list[Value],
               cts: list[Value | None], like: Value) -> Value:
    """The cotangent of the input of a linear map ``tangent(b, *primals, dx) -> outputs``:
    the map's own vjp, built by the vjp driver (so the vjp is the jvp's exact transpose)."""
    block = Block(args=[Value(p.type, None, i, "") for i, p in enumerate(primals)]
                  + [Value(like.type, None, len(primals), "dx")])
    with b.inside(block):
        block.results = list(tangent(b, *block.args))
    back = regions.drivers().vjp_block(block, [False] * len(primals) + [True], with_primals=False)
    env: dict[Value, Value] = dict(zip(back.args, list(primals) + [ops.zeros_like(b, like)]
                                       + [ad.instantiate(b, c, r) for c, r in
                                          zip(cts, block.results)]))
    for o in back.ops:
        with b.at(o.loc):
            res = b.emit(o.prim, [env[x] for x in o.operands], o.params, o.regions)
        env.update(zip(o.results, res))
    (out,) = [env.get(x, x) for x in back.results]
    return out


def _offdiag_inverse(b: Builder, diff: Value) -> Value:
    """1 / diff off the diagonal and where diff != 0 (the degenerate-spectrum convention:
    0 where two values are equal), 0 elsewhere."""
    nb = diff.type.ndim - 2
    shape = tuple(diff.type.shape)
    offd = ops.ne(b, ops.iota(b, I64, shape, nb), ops.iota(b, I64, shape, nb + 1))
    ok = ops.and_(b, offd, ops.ne(b, diff, _c(b, 0, diff)))
    safe = ops.select(b, ok, diff, _c(b, 1, diff))
    return ops.select(b, ok, ops.div(b, _c(b, 1, diff), safe), _c(b, 0, diff))


def _eigh_tangent(b: Builder, w: Value, v: Value, da: Value) -> list[Value]:
    dtype = v.type.dtype
    dah = ops.div(b, ops.add(b, da, mH(b, da)), _c(b, 2, da))
    m = matmul(b, mH(b, v), matmul(b, dah, v))
    dw = _re(b, _diag(b, m))
    sq = tuple(v.type.shape)
    f = _offdiag_inverse(b, ops.sub(b, _cols(b, w, sq), _rows(b, w, sq)))  # 1/(w_j - w_i)
    dv = matmul(b, v, ops.mul(b, _as(b, f, dtype), m))
    return [dw, dv]


def _jvp_eigh(b: Builder, op: Op, primals: list[Value], tangents: list[Value | None]) -> Sequence[Value | None]:
    (da,) = tangents
    if da is None:
        return [None, None]
    w, v = b.emit(op.prim, primals, op.params)      # CSE merges it with the primal op
    return _eigh_tangent(b, w, v, da)


def _vjp_eigh(b: Builder, op: Op, primals: list[Value], outs: list[Value], cts: list[Value | None]) -> list[Value | None]:
    if all(c is None for c in cts):
        return [None]
    w, v = outs
    return [_transpose(b, _eigh_tangent, [w, v], cts, primals[0])]


def _svd_tangent_full(b: Builder, a: Value, s: Value, u: Value, vh: Value, da: Value) -> list[Value]:
    """(ds, du, dvh) of the thin SVD a = u diag(s) vh."""
    dtype = a.type.dtype
    *batch, m, n = a.type.shape
    v = mH(b, vh)
    ds_mat = matmul(b, mH(b, u), matmul(b, da, v))                   # Uᴴ dA V  [.., k, k]
    ds = _re(b, _diag(b, ds_mat))
    k = s.type.shape[-1]
    sq = tuple(batch) + (k, k)
    sj, si = _cols(b, s, sq), _rows(b, s, sq)
    f = _as(b, _offdiag_inverse(b, ops.mul(b, ops.add(b, sj, si), ops.sub(b, sj, si))), dtype)
    sjc, sic = _as(b, sj, dtype), _as(b, si, dtype)
    p1 = ops.mul(b, ds_mat, sjc)                                        # Uᴴ dA V diag(s)
    p2 = ops.mul(b, sic, ds_mat)                                        # diag(s) Uᴴ dA V
    om_u = ops.mul(b, f, ops.add(b, p1, mH(b, p1)))
    om_v = ops.mul(b, f, ops.add(b, p2, mH(b, p2)))
    zero_s = ops.eq(b, s, _c(b, 0, s))
    sinv = ops.select(b, zero_s, _c(b, 0, s), ops.div(b, _c(b, 1, s), ops.select(b, zero_s, _c(b, 1, s), s)))
    if dtype.kind == "c":
        # the imaginary diagonal of Uᴴ dA V (a phase gauge): put on U, (X - Xᴴ)/2 / s
        anti = ops.div(b, ops.sub(b, ds_mat, mH(b, ds_mat)), _c(b, 2, ds_mat))
        om_u = ops.add(b, om_u, ops.mul(b, anti, _as(b, _diag_matrix(b, sinv), dtype)))
    du = matmul(b, u, om_u)
    dv = matmul(b, v, om_v)
    sinv_all = _as(b, sinv, dtype)
    if not (isinstance(m, int) and isinstance(n, int) and m == n):
        if isinstance(m, int) and isinstance(n, int) and m > n or not isinstance(m, int):
            dav = matmul(b, da, v)                                         # [.., m, k]
            rest = ops.sub(b, dav, matmul(b, u, matmul(b, mH(b, u), dav)))
            du = ops.add(b, du, ops.mul(b, rest, _cols(b, sinv_all, tuple(rest.type.shape))))
        if isinstance(m, int) and isinstance(n, int) and n > m:
            dahu = matmul(b, mH(b, da), u)                                 # [.., n, k]
            rest = ops.sub(b, dahu, matmul(b, v, matmul(b, vh, dahu)))
            dv = ops.add(b, dv, ops.mul(b, rest, _cols(b, sinv_all, tuple(rest.type.shape))))
    return [ds, du, mH(b, dv)]


def _svd_tangent_values(b: Builder, s: Value, u: Value, vh: Value, da: Value) -> list[Value]:
    m = matmul(b, mH(b, u), matmul(b, da, mH(b, vh)))
    return [_re(b, _diag(b, m))]


def _thin(b: Builder, op: Op, a: Value) -> list[Value]:
    return list(ops.svd(b, a, full_matrices=False, compute_uv=True))


def _ad_check(op: Op, a: Value) -> None:
    m, n = a.type.shape[-2:]
    if op.params["full_matrices"] and op.params["compute_uv"] and m != n:
        raise UnsupportedError("derivatives of np.linalg.svd(full_matrices=True) of non-square "
                               "matrices are not defined (the extra columns are not unique)", op.loc,
                               "use full_matrices=False")


def _jvp_svd(b: Builder, op: Op, primals: list[Value], tangents: list[Value | None]) -> Sequence[Value | None]:
    (a,), (da,) = primals, tangents
    _ad_check(op, a)
    if da is None:
        return [None] * len(op.results)
    s, u, vh = _thin(b, op, a)
    if not op.params["compute_uv"]:
        return _svd_tangent_values(b, s, u, vh, da)
    return _svd_tangent_full(b, a, s, u, vh, da)


def _vjp_svd(b: Builder, op: Op, primals: list[Value], outs: list[Value], cts: list[Value | None]) -> list[Value | None]:
    (a,) = primals
    _ad_check(op, a)
    if all(c is None for c in cts):
        return [None]
    if not op.params["compute_uv"]:
        s, u, vh = _thin(b, op, a)
        return [_transpose(b, _svd_tangent_values, [s, u, vh], cts, a)]
    s, u, vh = outs
    return [_transpose(b, lambda b, a_, s, u, vh, da: _svd_tangent_full(b, a_, s, u, vh, da),
                       [a, s, u, vh], cts, a)]


def _vmap(b: Builder, op: Op, args: list[Value], bdims: list[int | None], size: Any) -> tuple:
    return batch_rule(b, op, args, bdims, size)


def _lower_eigh(cg: Any, op: Op, outs: Sequence[Any]) -> None:
    """Large matrices: LAPACK, the decomposition (the op's region) as the fallback."""
    lower_eigh(cg, op, outs)


def _lower_svd(cg: Any, op: Op, outs: Sequence[Any]) -> None:
    lower_svd(cg, op, outs)


eigh = define(ops.eigh_p, shape_rule=_eigh_rule, numpy_ref=_ref_eigh, decomposition=_decompose_eigh,
              vmap_rule=_vmap, jvp_rule=_jvp_eigh, vjp_rule=_vjp_eigh, streams_operands=False,
              library_when=eigh_library_when, lower=_lower_eigh,
              doc="eigenvalues (ascending) and eigenvectors of the Hermitian part of each matrix")
svd = define(ops.svd_p, shape_rule=_svd_rule, numpy_ref=_ref_svd, decomposition=_decompose_svd,
             vmap_rule=_vmap, jvp_rule=_jvp_svd, vjp_rule=_vjp_svd, streams_operands=False,
             library_when=svd_library_when, lower=_lower_svd,
             doc="singular values (descending) and singular vectors of each matrix")
