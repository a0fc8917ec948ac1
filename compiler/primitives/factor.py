"""cholesky and qr: the factorizations of np.linalg.cholesky and np.linalg.qr.

``cholesky(a) -> (l, ok)``: ``a`` a stack ``[..., n, n]``; ``l`` the lower factor of the
Hermitian matrix whose lower triangle is ``a``'s (the upper triangle is not read, as in
LAPACK's potrf), ``ok`` ``bool[...]``: no pivot was <= 0 (false where NumPy raises
LinAlgError; that matrix's ``l`` is then NaN everywhere). A NaN pivot is not an error: NumPy
(with OpenBLAS's potrf) returns the NaNs it propagates, and so does this.

``qr(a) {full} -> (q, r)``: ``a`` a stack ``[..., m, n]``, k = min(m, n); ``full``: q is
``[..., m, m]`` and r ``[..., m, n]`` (NumPy's 'complete'), otherwise q ``[..., m, k]`` and r
``[..., k, n]`` ('reduced'). Householder reflections as LAPACK's geqrf and orgqr build them
(xLARFG: beta = -sign(Re alpha) * norm, no reflection where the column below the diagonal is
already zero and alpha is real), so r's diagonal has LAPACK's signs and is real for complex
input: results agree with NumPy's up to rounding.

Rules: vmap moves the batch axis to the front (``matrices.batch_rule``); jvp and vjp are
matrix-level formulas (the derivative of a factor is a formula, not the derivative of
the loop computing it):

    cholesky   dL = L Phi(L^-1 S L^-H),       S = the Hermitian matrix of dA's lower triangle
               Abar = Phi(G + G^H),           G = L^-H Phi(L^H Lbar) L^-1
    qr (m>=n)  C = Q^H dA R^-1,  w = tril(C, -1) - tril(C, -1)^H + i Im diag(C)
               dQ = Q (w - C) + dA R^-1,  dR = (C - w) R
               Abar = (Qbar + Q herm_upper(Rbar R^H - Q^H Qbar)) R^-H
    qr (m<n)   A = [X Y], R = [U V]: (Q, U) = qr(X) by the above, V = Q^H Y

(Phi: the lower triangle with the diagonal halved.) q of qr(full) with m > n is not unique
beyond its first n columns: reverse mode through r alone works, a derivative of q is refused.
Triangular solves inside the rules are private helpers here (`lower_solve`).

Code (``decomposition``): for small static sizes (UNROLL, QR_UNROLL), unrolled over the entries (each a value
shaped like the batch, so a stack of small matrices runs as fused elementwise code across the
batch); otherwise a ``for`` loop over columns on the whole stack (dynamic_slice and
dynamic_update_slice). Large matrices call LAPACK's potrf, geqrf and orgqr/ungqr
(``library_when`` and ``lower`` from factor_lapack.py), this code staying the op's region:
the fallback of a kernel without a provider.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from compiler.errors import UnsupportedError
from compiler.ir import dims
from compiler.ir.builder import Builder, new_block
from compiler.ir.core import Value
from compiler.ir.primitive import define
from compiler.ir.types import BOOL, I64, TensorType, is_complex, is_inexact
from compiler.primitives import factor_lapack, ops
from compiler.primitives import matrices as M
from compiler.primitives.base import check
from compiler.primitives.control import chunk_counts
from compiler.primitives.loops import trip_count
from compiler.primitives.lu import triangular_solve

Types = tuple[TensorType, ...]

#: static matrix sizes up to this are unrolled over the entries; larger ones loop. The
#: unrolled code's length grows as n**3 (and doubles for complex values), and with it the
#: compile time: cholesky unrolls n <= 8 (n <= 6 complex, about 2 s to compile), qr only
#: m * n * min(m, n) <= 64 (4x4; 32 complex), whose compile time grows fastest.
UNROLL = 8
UNROLL_COMPLEX = 6
QR_UNROLL = 64
QR_UNROLL_COMPLEX = 32


# ---- scalar helpers on batch-shaped (possibly complex) values -----------------------------

def _re(b: Builder, z: Value) -> Value:
    return ops.real(b, z) if is_complex(z.type.dtype) else z


def _abs2(b: Builder, z: Value) -> Value:
    """|z|**2 as a real value."""
    if not is_complex(z.type.dtype):
        return ops.mul(b, z, z)
    re, im = ops.real(b, z), ops.imag(b, z)
    return ops.add(b, ops.mul(b, re, re), ops.mul(b, im, im))


def _scale(b: Builder, z: Value, r: Value) -> Value:
    """z * r for a real r of z's precision (two real products for a complex z)."""
    if not is_complex(z.type.dtype):
        return ops.mul(b, z, r)
    return ops.complex_(b, ops.mul(b, ops.real(b, z), r), ops.mul(b, ops.imag(b, z), r))


def _as(b: Builder, r: Value, dtype: np.dtype) -> Value:
    """A real value as `dtype` (complex with a zero imaginary part, or itself)."""
    return ops.convert(b, r, dtype) if r.type.dtype != dtype else r


def _i64(b: Builder, v: int) -> Value:
    return ops.scalar(b, v, I64)


def _bshape(x: Value, core: int = 2) -> list[Any]:
    return list(M.batch_shape(x, core))


# ---- masks of a stack's matrix positions ---------------------------------------------------

def _positions(b: Builder, x: Value) -> tuple[Value, Value]:
    """Row and column index of every element of the stack `x` (int64, x's shape)."""
    shape, nb = tuple(x.type.shape), x.type.ndim - 2
    return ops.iota(b, I64, shape, nb), ops.iota(b, I64, shape, nb + 1)


def _where_pos(b: Builder, x: Value, keep: Callable[[Value, Value], Value]) -> Value:
    i, j = _positions(b, x)
    return ops.select(b, keep(i, j), x, ops.zeros_like(b, x))


def _tril(b: Builder, x: Value, k: int = 0) -> Value:
    """x below diagonal k (k = -1: strictly lower)."""
    return _where_pos(b, x, lambda i, j: ops.le(b, j, ops.add(b, i, ops.full_like(b, k, i))))


def _triu(b: Builder, x: Value, k: int = 0) -> Value:
    return _where_pos(b, x, lambda i, j: ops.ge(b, j, ops.add(b, i, ops.full_like(b, k, i))))


def _diag_part(b: Builder, x: Value, real: bool = False) -> Value:
    """The diagonal of x as a matrix (its real part only, when `real`)."""
    d = _as(b, _re(b, x), x.type.dtype) if real else x
    return _where_pos(b, d, lambda i, j: ops.eq(b, i, j))


def _phi(b: Builder, x: Value) -> Value:
    """The lower triangle of x with its diagonal halved."""
    half = ops.mul(b, _diag_part(b, x), ops.full_like(b, 0.5, x))
    return ops.add(b, _tril(b, x, -1), half)


def _herm_lower(b: Builder, x: Value) -> Value:
    """The Hermitian matrix whose lower triangle is x's (the real part of its diagonal)."""
    low = _tril(b, x, -1)
    return ops.add(b, ops.add(b, low, M.mH(b, low)), _diag_part(b, x, real=True))


def _herm_upper(b: Builder, x: Value) -> Value:
    """The Hermitian matrix whose upper triangle is x's (the real part of its diagonal)."""
    up = _triu(b, x, 1)
    return ops.add(b, ops.add(b, up, M.mH(b, up)), _diag_part(b, x, real=True))


def _entries(b: Builder, x: Value) -> list[list[Value]]:
    """``x[..., i, j]`` for every i, j of a static stack, each batch-shaped: read from the
    stack moved to batch-last order, so that each entry is a contiguous run of memory."""
    nb = x.type.ndim - 2
    if nb == 0:
        return M.entries(b, x)
    moved = ops.transpose(b, x, [nb, nb + 1, *range(nb)])
    m, n = _static_core(x)
    batch = _bshape(x)
    return [[ops.reshape(b, ops.slice_(b, moved, [i, j] + [0] * nb, [i + 1, j + 1, *batch]),
                         tuple(batch)) for j in range(n)] for i in range(m)]


def _assemble(b: Builder, rows: list[list[Value]]) -> Value:
    """The [..., m, n] stack of batch-shaped entries. With a batch, column j is a select
    over the row index of the broadcast entries and the columns are concatenated along the
    last axis: the concatenation writes the result in place (a concatenation then a
    reshape would need a temporary the size of the result), and each entry is computed
    once (the broadcast materializes it)."""
    batch = tuple(rows[0][0].type.shape)
    nb = len(batch)
    if nb == 0:
        return M.assemble(b, rows)
    m, n = len(rows), len(rows[0])
    shape = (*batch, m, 1)
    row = ops.iota(b, I64, shape, nb)
    cols = []
    for j in range(n):
        col = ops.broadcast_in_dim(b, rows[m - 1][j], shape, list(range(nb)))
        for i in reversed(range(m - 1)):
            e = ops.broadcast_in_dim(b, rows[i][j], shape, list(range(nb)))
            col = ops.select(b, ops.eq(b, row, ops.full_like(b, i, row)), e, col)
        cols.append(col)
    return cols[0] if n == 1 else ops.concatenate(b, cols, nb + 1)


#: batch elements per window of the unrolled code (its temporaries then stay in the L1 cache)
CHUNK = 256


def _by_chunks(b: Builder, a: Value, build: Callable[[Builder, Value], list[Value]],
               chunk: int = CHUNK) -> list[Value]:
    """``build(b, a)`` (results leading with a's batch axes) run on windows of CHUNK matrices
    of the flattened batch (a ``chunked`` op): unrolled code keeps one buffer per entry, which
    for a large batch would stream through memory once per entry."""
    batch = _bshape(a)
    size: Any = 1
    for d in batch:
        size = dims.mul(size, d)
    if not batch or (isinstance(size, int) and size <= chunk):
        return build(b, a)
    core = tuple(a.type.shape[-2:])
    flat = ops.reshape(b, a, (size, *core))
    _, tail = chunk_counts(size, chunk)
    regions = []
    for count in (chunk, tail):
        block = new_block([flat.type.with_shape((count, *core))])
        with b.inside(block):
            block.results = build(b, block.args[0])
        regions.append(block)
    outs = b.emit(ops.chunked_p, [flat], {"size": size, "chunk": chunk, "batched": (True,)}, regions)
    return [ops.reshape(b, o, (*batch, *o.type.shape[1:])) for o in outs]


def _static_core(x: Value) -> tuple[int, int]:
    """The static matrix sizes of a stack (the unrolled code's)."""
    m, n = x.type.shape[-2:]
    assert isinstance(m, int) and isinstance(n, int), x.type
    return m, n


def _loop_chunk(a: Value) -> int:
    """Matrices per window of the loop code: about 256 KB of them (the L2 cache), since each
    step of the loop reads the whole window."""
    m, n = a.type.shape[-2:]
    per = (m if isinstance(m, int) else 64) * (n if isinstance(n, int) else 64) * a.type.dtype.itemsize
    return max(1, (256 * 1024) // per)


def _small(*sizes: Any) -> bool:
    return all(isinstance(s, int) and s <= UNROLL for s in sizes)


# ---- triangular solves: the triangular_solve primitive (compiler/primitives/lu.py) --------------

def lower_solve(b: Builder, low: Value, rhs: Value) -> Value:
    """low^-1 rhs for lower-triangular stacks ``low [..., n, n]`` and ``rhs [..., n, k]``."""
    return triangular_solve(b, low, rhs, lower=True)


def upper_solve(b: Builder, up: Value, rhs: Value) -> Value:
    """up^-1 rhs for upper-triangular `up`."""
    return triangular_solve(b, up, rhs, lower=False)


def _right_upper_solve(b: Builder, x: Value, up: Value) -> Value:
    """x up^-1 = (up^-H x^H)^H."""
    return M.mH(b, triangular_solve(b, up, M.mH(b, x), lower=False, transpose_a="C"))


def _right_upper_h_solve(b: Builder, x: Value, up: Value) -> Value:
    """x up^-H = (up^-1 x^H)^H."""
    return M.mH(b, upper_solve(b, up, M.mH(b, x)))


# ---- cholesky ------------------------------------------------------------------------------

def _square_core(a: TensorType, name: str) -> None:
    check(a.ndim >= 2, f"{name}: needs a stack of matrices [..., n, n], got {a}")
    check(a.shape[-1] == a.shape[-2], f"{name}: matrices must be square, got {a}")
    check(is_inexact(a.dtype), f"{name}: needs a float or complex operand, got {a}")


def _chol_rule(in_types: Types, params: dict[str, Any]) -> Types:
    (a,) = in_types
    _square_core(a, "cholesky")
    return (a, TensorType(BOOL, tuple(a.shape[:-2])))


def _ref_cholesky(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    batch = a.shape[:-2]
    flat = a.reshape((-1,) + a.shape[-2:])
    out = np.full(flat.shape, np.nan, a.dtype)
    ok = np.ones(len(flat), bool)
    for t, m in enumerate(flat):
        try:
            out[t] = np.linalg.cholesky(m)
        except np.linalg.LinAlgError:
            ok[t] = False
    return out.reshape(a.shape), ok.reshape(batch)


def _chol_decompose(b: Builder, op: Any, args: list[Value]) -> list[Value]:
    (a,) = args
    n = a.type.shape[-1]
    if n == 0:
        return [a, ops.full(b, True, TensorType(BOOL, tuple(_bshape(a))))]
    if not isinstance(n, int):
        return _by_chunks(b, a, _chol_loop, _loop_chunk(a))
    if n <= (UNROLL_COMPLEX if is_complex(a.type.dtype) else UNROLL):
        return _by_chunks(b, a, _chol_unrolled)
    if n <= BLOCKED_MAX:
        return _by_chunks(b, a, _chol_blocked, _loop_chunk(a))
    return _by_chunks(b, a, _chol_loop, _loop_chunk(a))


#: static sizes up to this factor by halves (cholesky ops on the diagonal blocks, which
#: decompose again; a triangular solve and a product for the rest): most of the work is then
#: contractions, and the flops are n**3 / 3 rather than the loop's n**3
BLOCKED_MAX = 256


def _chol_blocked(b: Builder, a: Value) -> list[Value]:
    """[[L11, 0], [L21, L22]]: L11 = chol(A11), L21 = A21 L11^-H, L22 = chol(A22 - L21 L21^H)."""
    nb = a.type.ndim - 2
    batch = _bshape(a)
    n = _static_core(a)[1]
    h = max(UNROLL, (n // 2 + 7) // 8 * 8) if n > 2 * UNROLL else n // 2
    z = [0] * nb
    a11 = ops.slice_(b, a, [*z, 0, 0], [*batch, h, h])
    a21 = ops.slice_(b, a, [*z, h, 0], [*batch, n, h])
    a22 = ops.slice_(b, a, [*z, h, h], [*batch, n, n])
    l11, ok1 = ops.cholesky(b, a11)
    l21 = M.mH(b, lower_solve(b, l11, M.mH(b, a21)))
    l22, ok2 = ops.cholesky(b, ops.sub(b, a22, M.matmul(b, l21, M.mH(b, l21))))
    top = ops.concatenate(b, [l11, ops.full(b, 0, a.type.with_shape((*batch, h, n - h)))], nb + 1)
    low = ops.concatenate(b, [top, ops.concatenate(b, [l21, l22], nb + 1)], nb)
    ok = ops.and_(b, ok1, ok2)
    spread = ops.broadcast_in_dim(b, ok, a.type.shape, list(range(nb)))
    return [ops.select(b, spread, low, ops.full_like(b, np.nan, low)), ok]


def _chol_unrolled(b: Builder, a: Value) -> list[Value]:
    A = _entries(b, a)
    n, dtype = len(A), a.type.dtype
    L: list[list[Value | None]] = [[None] * n for _ in range(n)]
    ok: Value | None = None
    zero = ops.full_like(b, 0, A[0][0])
    for j in range(n):
        s = _re(b, A[j][j])
        for k in range(j):
            s = ops.sub(b, s, _abs2(b, L[j][k]))     # type: ignore[arg-type]
        good = ops.not_(b, ops.le(b, s, ops.full_like(b, 0, s)))   # a NaN pivot passes (NumPy)
        ok = good if ok is None else ops.and_(b, ok, good)
        d = ops.sqrt(b, s)
        r = ops.div(b, ops.full_like(b, 1, d), d)     # LAPACK scales the column by 1 / l_jj
        L[j][j] = _as(b, d, dtype)
        for i in range(j + 1, n):
            t = A[i][j]
            for k in range(j):
                t = ops.sub(b, t, ops.mul(b, L[i][k], ops.conj_if_complex(b, L[j][k])))  # type: ignore[arg-type]
            L[i][j] = _scale(b, t, r)
    assert ok is not None
    nan = ops.full_like(b, np.nan, zero)
    rows = [[ops.select(b, ok, v if v is not None else zero, nan) for v in row] for row in L]
    return [_assemble(b, rows), ok]


def _chol_loop(b: Builder, a: Value) -> list[Value]:
    """Column j: c = A[:, j] - L conj(L[j, :]) (L's columns >= j are still zero), l_jj =
    sqrt(Re c_j), the rows below scaled by 1 / l_jj."""
    batch = _bshape(a)
    nb, n, dtype = len(batch), a.type.shape[-1], a.type.dtype
    okt = TensorType(BOOL, tuple(batch))
    body = new_block([TensorType(I64, ()), a.type, a.type, okt], ["j", "a", "l", "ok"])
    j, A, L, ok = body.args
    with b.inside(body):
        z = [_i64(b, 0) for _ in batch]
        bd = list(range(nb))
        acol = ops.reshape(b, ops.dynamic_slice(b, A, [*z, _i64(b, 0), j], [*batch, n, 1]),
                           (*batch, n))
        lrow = ops.reshape(b, ops.dynamic_slice(b, L, [*z, j, _i64(b, 0)], [*batch, 1, n]),
                           (*batch, n))
        s = ops.dot_general(b, L, ops.conj_if_complex(b, lrow), (((nb + 1,), (nb,)), (bd, bd)))
        c = ops.sub(b, acol, s)
        cjj = ops.reshape(b, ops.dynamic_slice(b, c, [*z, j], [*batch, 1]), tuple(batch))
        ajj = _re(b, cjj)
        ok2 = ops.and_(b, ok, ops.not_(b, ops.le(b, ajj, ops.full_like(b, 0, ajj))))
        d = ops.sqrt(b, ajj)
        r = ops.div(b, ops.full_like(b, 1, d), d)
        col = _scale(b, c, ops.broadcast_in_dim(b, r, (*batch, n), bd))
        idx = ops.iota(b, I64, (*batch, n), nb)
        jb = ops.broadcast_in_dim(b, j, (*batch, n), ())
        diag = ops.broadcast_in_dim(b, _as(b, d, dtype), (*batch, n), bd)
        col = ops.select(b, ops.gt(b, idx, jb), col,
                         ops.select(b, ops.eq(b, idx, jb), diag, ops.zeros_like(b, col)))
        L2 = ops.dynamic_update_slice(b, L, ops.reshape(b, col, (*batch, n, 1)),
                                      [*z, _i64(b, 0), j])
        body.results = [A, L2, ok2]
    _, l, ok_out = ops.for_loop(b, _i64(b, 0), ops.size_of(b, n, I64),
                                [a, ops.zeros_like(b, a), ops.full(b, True, okt)], body, 1,
                                trip_count(0, n, 1))
    spread = ops.broadcast_in_dim(b, ok_out, a.type.shape, list(range(nb)))
    return [ops.select(b, spread, l, ops.full_like(b, np.nan, l)), ok_out]


def _chol_jvp(b: Builder, op: Any, primals: list[Value], tangents: list[Value | None]) -> list:
    (a,), (da,) = primals, tangents
    l, _ = b.emit(op.prim, [a], op.params)
    if da is None:
        return [None, None]
    s = _herm_lower(b, da)
    y = lower_solve(b, l, s)                                # L^-1 S
    x = lower_solve(b, l, M.mH(b, y))                       # L^-1 S L^-H (S Hermitian)
    return [M.matmul(b, l, _phi(b, x)), None]


def _chol_vjp(b: Builder, op: Any, primals: list[Value], outs: list[Value],
              cts: list[Value | None]) -> list:
    ct = cts[0]
    if ct is None:
        return [None]
    l = outs[0]
    p = _phi(b, M.matmul(b, M.mH(b, l), ct))               # Phi(L^H Lbar)
    lh = M.mH(b, l)
    zt = upper_solve(b, lh, M.mH(b, p))                     # L^-H P^H
    g = upper_solve(b, lh, M.mH(b, zt))                     # L^-H P L^-1
    return [_phi(b, ops.add(b, g, M.mH(b, g)))]


cholesky = define(
    ops.cholesky_p,
    shape_rule=_chol_rule,
    numpy_ref=_ref_cholesky,
    decomposition=_chol_decompose,
    library_when=factor_lapack.cholesky_when,
    lower=factor_lapack.lower_cholesky,
    streams_operands=False,
    vmap_rule=M.batch_rule,
    jvp_rule=_chol_jvp,
    vjp_rule=_chol_vjp,
    doc="lower Cholesky factor of each matrix of a stack (lower triangle read), and ok flags",
)


# ---- qr ------------------------------------------------------------------------------------

def _qr_rule(in_types: Types, params: dict[str, Any]) -> Types:
    (a,) = in_types
    check(a.ndim >= 2, f"qr: needs a stack of matrices [..., m, n], got {a}")
    check(is_inexact(a.dtype), f"qr: needs a float or complex operand, got {a}")
    *batch, m, n = a.shape
    if params["full"]:
        return (a.with_shape((*batch, m, m)), a)
    k = dims.minimum(m, n)
    return (a.with_shape((*batch, m, k)), a.with_shape((*batch, k, n)))


def _ref_qr(a: np.ndarray, full: bool) -> tuple[np.ndarray, np.ndarray]:
    q, r = np.linalg.qr(a, mode="complete" if full else "reduced")
    return q.astype(a.dtype), r.astype(a.dtype)


def _householder(b: Builder, alpha: Value, xnorm2: Value) -> tuple[Value, Value, Value, Value]:
    """LAPACK's xLARFG for (alpha, x) with |x|**2 = xnorm2: (beta, tau, scal, trivial), where
    H = I - tau v v^H, v = (1, x * scal), H^H (alpha, x) = (beta, 0), and `trivial` where no
    reflection is needed (x = 0 and alpha real: tau = 0, beta = alpha)."""
    dtype = alpha.type.dtype
    ar = _re(b, alpha)
    zero = ops.full_like(b, 0, ar)
    norm2 = ops.add(b, _abs2(b, alpha), xnorm2)
    trivial = ops.eq(b, xnorm2, zero)
    if is_complex(dtype):
        trivial = ops.and_(b, trivial, ops.eq(b, ops.imag(b, alpha), zero))
    norm = ops.sqrt(b, norm2)
    beta = ops.select(b, ops.ge(b, ar, zero), ops.neg(b, norm), norm)
    one = ops.full_like(b, 1, ar)
    safe = ops.select(b, trivial, one, beta)               # no division by zero where trivial
    if is_complex(dtype):
        tau = ops.complex_(b, ops.div(b, ops.sub(b, safe, ar), safe),
                           ops.div(b, ops.neg(b, ops.imag(b, alpha)), safe))
    else:
        tau = ops.div(b, ops.sub(b, safe, ar), safe)
    tau = ops.select(b, trivial, ops.zeros_like(b, tau), tau)
    diff = ops.sub(b, alpha, _as(b, safe, dtype))
    diff = ops.select(b, trivial, ops.full_like(b, 1, diff), diff)
    scal = ops.div(b, ops.full_like(b, 1, diff), diff)
    beta = ops.select(b, trivial, ar, beta)
    return _as(b, beta, dtype), tau, scal, trivial


def _qr_decompose(b: Builder, op: Any, args: list[Value]) -> list[Value]:
    (a,) = args
    *_, m, n = a.type.shape
    budget = QR_UNROLL_COMPLEX if is_complex(a.type.dtype) else QR_UNROLL
    if isinstance(m, int) and isinstance(n, int) and m * n * min(m, n) <= budget:
        return _by_chunks(b, a, lambda b, a: _qr_unrolled(b, a, op.params["full"]))
    return _by_chunks(b, a, lambda b, a: _qr_loop(b, a, op.params["full"]), _loop_chunk(a))


def _qr_unrolled(b: Builder, a: Value, full: bool) -> list[Value]:
    dtype = a.type.dtype
    A = _entries(b, a)
    m, n = _static_core(a)
    k_max = min(m, n)
    scalar_type = TensorType(dtype, tuple(_bshape(a)))
    zero, one = ops.full(b, 0, scalar_type), ops.full(b, 1, scalar_type)
    refl: list[tuple[Value, list[Value]]] = []               # (tau, v below the diagonal)
    for k in range(k_max):
        alpha, xs = A[k][k], [A[i][k] for i in range(k + 1, m)]
        xnorm2 = ops.full_like(b, 0, _re(b, alpha))
        for x in xs:
            xnorm2 = ops.add(b, xnorm2, _abs2(b, x))
        beta, tau, scal, trivial = _householder(b, alpha, xnorm2)
        v = [ops.select(b, trivial, zero, ops.mul(b, x, scal)) for x in xs]
        ctau = ops.conj_if_complex(b, tau)
        for j in range(k + 1, n):                          # A[k:, j] -= conj(tau) v (v^H A[k:, j])
            w = A[k][j]
            for i, vi in enumerate(v):
                w = ops.add(b, w, ops.mul(b, ops.conj_if_complex(b, vi), A[k + 1 + i][j]))
            tw = ops.mul(b, ctau, w)
            A[k][j] = ops.sub(b, A[k][j], tw)
            for i, vi in enumerate(v):
                A[k + 1 + i][j] = ops.sub(b, A[k + 1 + i][j], ops.mul(b, vi, tw))
        A[k][k] = beta
        for i in range(k + 1, m):
            A[i][k] = zero
        refl.append((tau, v))
    cols = m if full else k_max
    if m == 0 or cols == 0:
        q = ops.full(b, 0, a.type.with_shape((*_bshape(a), m, cols)))
    else:                                                  # (n = 0, full: the identity)
        Q = [[one if i == j else zero for j in range(cols)] for i in range(m)]
        for k in reversed(range(k_max)):                   # Q = H_0 ... H_{k-1} I
            tau, v = refl[k]
            for j in range(k, cols):
                w = Q[k][j]
                for i, vi in enumerate(v):
                    w = ops.add(b, w, ops.mul(b, ops.conj_if_complex(b, vi), Q[k + 1 + i][j]))
                tw = ops.mul(b, tau, w)
                Q[k][j] = ops.sub(b, Q[k][j], tw)
                for i, vi in enumerate(v):
                    Q[k + 1 + i][j] = ops.sub(b, Q[k + 1 + i][j], ops.mul(b, vi, tw))
        q = _assemble(b, Q)
    rows = m if full else k_max
    if rows == 0 or n == 0:
        r = ops.full(b, 0, a.type.with_shape((*_bshape(a), rows, n)))
    else:
        r = _assemble(b, A[:rows])
    return [q, r]


def _qr_loop(b: Builder, a: Value, full: bool) -> list[Value]:
    """The Householder steps on the whole stack in a ``for`` loop (reflectors kept in V and
    taus), then Q accumulated backwards from the identity in a second loop."""
    batch = _bshape(a)
    nb, dtype = len(batch), a.type.dtype
    m, n = a.type.shape[-2:]
    kk = dims.minimum(m, n)
    bd = list(range(nb))
    vt = a.type.with_shape((*batch, m, kk))
    taut = a.type.with_shape((*batch, kk))
    body = new_block([TensorType(I64, ()), a.type, vt, taut], ["k", "a", "v", "tau"])
    k, A, V, T = body.args
    with b.inside(body):
        z = [_i64(b, 0) for _ in batch]
        zero_i = _i64(b, 0)
        col = ops.reshape(b, ops.dynamic_slice(b, A, [*z, zero_i, k], [*batch, m, 1]), (*batch, m))
        idx = ops.iota(b, I64, (*batch, m), nb)
        kb = ops.broadcast_in_dim(b, k, (*batch, m), ())
        below, at = ops.gt(b, idx, kb), ops.eq(b, idx, kb)
        zcol = ops.zeros_like(b, col)
        x = ops.select(b, below, col, zcol)
        alpha = ops.reduce_sum(b, ops.select(b, at, col, zcol), [nb])
        xnorm2 = ops.reduce_sum(b, _abs2(b, x), [nb])
        beta, tau, scal, trivial = _householder(b, alpha, xnorm2)
        scal_b = ops.broadcast_in_dim(b, scal, (*batch, m), bd)
        triv_b = ops.broadcast_in_dim(b, trivial, (*batch, m), bd)
        v = ops.select(b, ops.and_(b, below, ops.not_(b, triv_b)), ops.mul(b, x, scal_b), zcol)
        v = ops.select(b, at, ops.full_like(b, 1, v), v)
        w = ops.dot_general(b, ops.conj_if_complex(b, v), A, (((nb,), (nb,)), (bd, bd)))
        tw = ops.mul(b, ops.broadcast_in_dim(b, ops.conj_if_complex(b, tau), (*batch, n), bd), w)
        outer = ops.mul(b, ops.broadcast_in_dim(b, v, (*batch, m, n), [*bd, nb]),
                        ops.broadcast_in_dim(b, tw, (*batch, m, n), [*bd, nb + 1]))
        A2 = ops.sub(b, A, outer)
        betab = ops.broadcast_in_dim(b, beta, (*batch, m), bd)
        newcol = ops.select(b, ops.lt(b, idx, kb), col, ops.select(b, at, betab, zcol))
        A2 = ops.dynamic_update_slice(b, A2, ops.reshape(b, newcol, (*batch, m, 1)), [*z, zero_i, k])
        V2 = ops.dynamic_update_slice(b, V, ops.reshape(b, v, (*batch, m, 1)), [*z, zero_i, k])
        T2 = ops.dynamic_update_slice(b, T, ops.reshape(b, tau, (*batch, 1)), [*z, k])
        body.results = [A2, V2, T2]
    kstop = ops.size_of(b, kk, I64)
    r, vs, taus = ops.for_loop(b, _i64(b, 0), kstop, [a, ops.full(b, 0, vt), ops.full(b, 0, taut)],
                               body, 1, trip_count(0, kk, 1))
    cols = m if full else kk
    qt = a.type.with_shape((*batch, m, cols))
    eye = ops.convert(b, ops.eq(b, ops.iota(b, I64, qt.shape, nb), ops.iota(b, I64, qt.shape, nb + 1)),
                      dtype)
    qbody = new_block([TensorType(I64, ()), qt, vt, taut], ["t", "q", "v", "tau"])
    t, Q, V, T = qbody.args
    with b.inside(qbody):
        z = [_i64(b, 0) for _ in batch]
        v = ops.reshape(b, ops.dynamic_slice(b, V, [*z, _i64(b, 0), t], [*batch, m, 1]), (*batch, m))
        tau = ops.reshape(b, ops.dynamic_slice(b, T, [*z, t], [*batch, 1]), tuple(batch))
        w = ops.dot_general(b, ops.conj_if_complex(b, v), Q, (((nb,), (nb,)), (bd, bd)))
        tw = ops.mul(b, ops.broadcast_in_dim(b, tau, (*batch, cols), bd), w)
        outer = ops.mul(b, ops.broadcast_in_dim(b, v, qt.shape, [*bd, nb]),
                        ops.broadcast_in_dim(b, tw, qt.shape, [*bd, nb + 1]))
        qbody.results = [ops.sub(b, Q, outer), V, T]
    last = ops.sub(b, kstop, _i64(b, 1))
    q, _, _ = ops.for_loop(b, last, _i64(b, -1), [eye, vs, taus], qbody, -1, kk)
    if not full:
        r = ops.slice_(b, r, [0] * (nb + 2), [*batch, kk, n])
    return [q, r]


def _tall(op: Any, a: Value) -> bool:
    """m >= n for the rules (refused where symbolic sizes leave it open)."""
    m, n = a.type.shape[-2:]
    if m == n:
        return True
    if isinstance(m, int) and isinstance(n, int):
        return m >= n
    raise UnsupportedError("the derivative of np.linalg.qr needs to know whether the matrices "
                           f"are tall (m >= n) or wide: got symbolic sizes {m} x {n}", op.loc,
                           "give the matrices static sizes, or equal ones")


def _refuse_full_q(op: Any) -> None:
    raise UnsupportedError("np.linalg.qr(mode='complete') of matrices with more rows than "
                           "columns: Q's last m - n columns are not unique, so Q has no "
                           "derivative", op.loc, "use mode='reduced' (or differentiate R only)")


def _qr_jvp_tall(b: Builder, q: Value, r: Value, da: Value) -> tuple[Value, Value]:
    d = _right_upper_solve(b, da, r)                        # dA R^-1
    c = M.matmul(b, M.mH(b, q), d)
    low = _tril(b, c, -1)
    w = ops.sub(b, low, M.mH(b, low))
    if is_complex(c.type.dtype):
        im = ops.imag(b, c)
        w = ops.add(b, w, _diag_part(b, ops.complex_(b, ops.zeros_like(b, im), im)))
    dq = ops.add(b, M.matmul(b, q, ops.sub(b, w, c)), d)
    dr = M.matmul(b, ops.sub(b, c, w), r)
    return dq, dr


def _split_wide(b: Builder, x: Value, m: Any) -> tuple[Value, Value]:
    nb = x.type.ndim - 2
    *batch, rows, n = x.type.shape
    return (ops.slice_(b, x, [0] * (nb + 2), [*batch, rows, m]),
            ops.slice_(b, x, [0] * (nb + 1) + [m], [*batch, rows, n]))


def _qr_jvp(b: Builder, op: Any, primals: list[Value], tangents: list[Value | None]) -> list:
    (a,), (da,) = primals, tangents
    q, r = b.emit(op.prim, [a], op.params)
    if da is None:
        return [None, None]
    m, n = a.type.shape[-2:]
    if _tall(op, a):
        if op.params["full"] and m != n:
            _refuse_full_q(op)
        return list(_qr_jvp_tall(b, q, r, da))
    nb = a.type.ndim - 2
    (_, y), (dx, dy) = _split_wide(b, a, m), _split_wide(b, da, m)
    u, _ = _split_wide(b, r, m)
    dq, du = _qr_jvp_tall(b, q, u, dx)
    dv = ops.add(b, M.matmul(b, M.mH(b, dq), y), M.matmul(b, M.mH(b, q), dy))
    return [dq, ops.concatenate(b, [du, dv], nb + 1)]


def _qr_vjp_tall(b: Builder, q: Value, r: Value, cq: Value | None, cr: Value | None) -> Value:
    w = None
    if cr is not None:
        w = M.matmul(b, cr, M.mH(b, r))
    if cq is not None:
        qq = M.matmul(b, M.mH(b, q), cq)
        w = ops.neg(b, qq) if w is None else ops.sub(b, w, qq)
    assert w is not None
    total = M.matmul(b, q, _herm_upper(b, w))
    if cq is not None:
        total = ops.add(b, total, cq)
    return _right_upper_h_solve(b, total, r)                # (...) R^-H


def _qr_vjp(b: Builder, op: Any, primals: list[Value], outs: list[Value],
            cts: list[Value | None]) -> list:
    (a,), (q, r), (cq, cr) = primals, outs, cts
    if cq is None and cr is None:
        return [None]
    nb = a.type.ndim - 2
    *batch, m, n = a.type.shape
    if _tall(op, a):
        if op.params["full"] and m != n:
            if cq is not None:
                _refuse_full_q(op)
            q = ops.slice_(b, q, [0] * (nb + 2), [*batch, m, n])
            r = ops.slice_(b, r, [0] * (nb + 2), [*batch, n, n])
            cr = ops.slice_(b, cr, [0] * (nb + 2), [*batch, n, n])    # type: ignore[arg-type]
        return [_qr_vjp_tall(b, q, r, cq, cr)]
    (_, y) = _split_wide(b, a, m)
    u, _ = _split_wide(b, r, m)
    cu, cv = _split_wide(b, cr, m) if cr is not None else (None, None)
    if cv is not None:
        extra = M.matmul(b, y, M.mH(b, cv))                  # V = Q^H Y: Qbar += Y Vbar^H
        cq = extra if cq is None else ops.add(b, cq, extra)
    cx = _qr_vjp_tall(b, q, u, cq, cu)
    cy = M.matmul(b, q, cv) if cv is not None else ops.full(b, 0, y.type)
    return [ops.concatenate(b, [cx, cy], nb + 1)]


qr = define(
    ops.qr_p,
    shape_rule=_qr_rule,
    numpy_ref=_ref_qr,
    decomposition=_qr_decompose,
    library_when=factor_lapack.qr_when,
    lower=factor_lapack.lower_qr,
    streams_operands=False,
    vmap_rule=M.batch_rule,
    jvp_rule=_qr_jvp,
    vjp_rule=_qr_vjp,
    doc="Householder QR of each matrix of a stack (LAPACK's signs): q, r",
)
