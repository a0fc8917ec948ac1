"""eig: eigenvalues and eigenvectors of general (non-symmetric) complex matrices.

``eig(a) {vectors}`` takes a float32/float64 or complex stack ``[..., n, n]`` and returns
complex results (complex64 for float32 and complex64 operands, complex128 otherwise):

* ``w [..., n]``: the eigenvalues, in the order the QR iteration deflates them
  (the diagonal of the Schur form, read from the top) for the unrolled code, LAPACK's
  order through geev: not sorted;
* with ``vectors=True`` also ``v [..., n, n]``, the right eigenvectors as columns,
  each of unit 2-norm with its component of largest modulus real and positive (the
  first such component in a tie), and ``vinv [..., n, n]``, the inverse of ``v``
  computed from the left eigenvectors (rows ``u_k`` with ``u_k A = w_k u_k``, scaled so
  that ``u_k v_k = 1``); the derivative rules need it;
* ``ok [...]``: false where the iteration did not converge (the frontend raises
  ``LinAlgError`` there, as NumPy does).

Code: for a static n above ``UNROLL_MAX`` or a symbolic n, `_library`: LAPACK's geev
(geev.py; its fallback without LAPACK is eig_loops.py's loops), its vectors normalized as
below and inverted by LU. Otherwise (`_decompose`, unrolled; a `for` loop over the matrices
of a stack, each computed with scalar values): the matrix is scaled by its largest entry,
balanced (`_balance`: LAPACK's gebal without permutations), reduced to Hessenberg form
by Givens rotations, then brought to complex Schur form ``A = Z T Z^H`` by single-shift QR sweeps (Wilkinson shift, exceptional shifts at sweeps
10 and 20), one ``while`` loop per deflated eigenvalue that runs until every matrix of the
batch has converged (``|h[m, m-1]| <= eps (|h[m, m]| + |h[m-1, m-1]|)``, at most
``MAX_SWEEPS``). The eigenvectors of ``T`` come from back-substitution (and forward
substitution for the left ones), with LAPACK's perturbation of a zero pivot
(ztrevc: ``max(eps |t_kk|, tiny)``). Every entry is a batch-shaped value, so the code is
elementwise across the batch when PER_MATRIX is off (faster code, five to ten times longer
to compile: the default loops); complex numbers are (re, im) pairs of real values.

Derivatives (`_jvp`, `_vjp`) are the matrix-level formulas: with ``M = vinv dA v``,
``dw = diag(M)`` and ``dv = v (E * M) + v diag(c)`` where ``E_ij = 1 / (w_j - w_i)`` off
the diagonal and ``c`` is the gauge term that keeps each column of unit norm with its
largest component real: the exact derivative of the normalized output, defined where the
eigenvalues are distinct.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from compiler.ir import dims
from compiler.ir.builder import Builder, new_block
from compiler.ir.core import Value
from compiler.ir.primitive import define
from compiler.ir.types import BOOL, I64, TensorType
from compiler.primitives import complexmath as cm
from compiler.primitives import geev as _geev  # noqa: F401  (defines geev, which _library emits)
from compiler.primitives import ops
from compiler.primitives.base import check
from compiler.primitives.lu import lu, permute_rows, triangular_solve
from compiler.primitives.matrices import batch_rule, eye, mH, matmul

Types = tuple[TensorType, ...]
Pair = tuple[Value, Value]

UNROLL_MAX = 4          # the largest static n with unrolled code; LAPACK beyond (docs/linalg.md)
MAX_SWEEPS = 30         # QR sweeps per deflated eigenvalue before giving up (LinAlgError)
EXCEPTIONAL = (10, 20)  # sweeps that use an exceptional shift instead of Wilkinson's
PER_MATRIX = True       # a loop over the stack (see the module docstring)
BALANCE_PASSES = 3      # sweeps of diagonal balancing (LAPACK's gebal without permutations)


# ---- the primitive --------------------------------------------------------------------

def _shape_rule(in_types: Types, params: dict[str, Any]) -> Types:
    (a,) = in_types
    check(a.ndim >= 2 and a.shape[-1] == a.shape[-2], f"eig: needs square matrices, got {a}")
    check(a.dtype.kind == "c" or np.dtype(a.dtype.name) in (np.float32, np.float64),
          f"eig: needs a float32/64 or complex operand, got {a}")
    batch, n = tuple(a.shape[:-2]), a.shape[-1]
    cdt = _complex_dtype(a.dtype)
    w = TensorType(cdt, batch + (n,))
    ok = TensorType(BOOL, batch)
    if params["vectors"]:
        v = TensorType(cdt, tuple(a.shape))
        return (w, v, v, ok)
    return (w, ok)


def _complex_dtype(dtype: Any) -> np.dtype:
    """The complex dtype of eig's results for an operand of `dtype`."""
    return np.result_type(np.dtype(dtype.name if hasattr(dtype, "name") else dtype), np.complex64)


def normalize_vectors(v: np.ndarray) -> np.ndarray:
    """Columns of `v` scaled to unit 2-norm with the first component of largest modulus
    real and positive: the convention of the generated code (NumPy's for complex input)."""
    v = v / np.linalg.norm(v, axis=-2, keepdims=True)
    p = np.argmax(np.abs(v), axis=-2)
    top = np.take_along_axis(v, p[..., None, :], axis=-2)
    return v * (np.conj(top) / np.abs(top))


def _ref(a: np.ndarray, vectors: bool) -> tuple:
    a = a.astype(_complex_dtype(a.dtype))
    batch = a.shape[:-2]
    ok = np.ones(batch, bool)
    if not np.all(np.isfinite(a)):
        nan = np.full(a.shape, np.nan, a.dtype)
        ok = np.all(np.isfinite(a), axis=(-2, -1))
        return (nan[..., 0], nan, nan, ok) if vectors else (nan[..., 0], ok)
    if not vectors:
        return np.linalg.eigvals(a).astype(a.dtype), ok
    w, v = np.linalg.eig(a)
    v = normalize_vectors(v)
    return w.astype(a.dtype), v.astype(a.dtype), np.linalg.inv(v).astype(a.dtype), ok


def eig_values(b: Builder, a: Value) -> tuple[Value, Value]:
    """(w, ok) of `a`."""
    w, ok = ops.eig(b, a, False)
    return w, ok


def eig_vectors(b: Builder, a: Value) -> tuple[Value, Value, Value, Value]:
    """(w, v, vinv, ok) of `a`."""
    w, v, vinv, ok = ops.eig(b, a, True)
    return w, v, vinv, ok


# ---- derivatives ------------------------------------------------------------------------

def _bcast(b: Builder, x: Value, like: Value, axis: int) -> Value:
    """x [..., n] broadcast to like's [..., n, n] along the given last axis (-2: x[j] in
    row j for every column; -1: x[j] in column j for every row)."""
    nb = x.type.ndim - 1
    dims_ = list(range(nb)) + [nb + (1 if axis == -1 else 0)]
    return ops.broadcast_in_dim(b, x, like.type.shape, dims_)


def _diag_embed(b: Builder, x: Value, like: Value) -> Value:
    return ops.select(b, ops.convert(b, eye(b, like), BOOL), _bcast(b, x, like, -1), ops.zeros_like(b, like))


def _gauge(b: Builder, w: Value, v: Value) -> tuple[Value, Value, Value]:
    """(E, onehot, vp): E_ij = 1 / (w_j - w_i) off the diagonal and 0 on it; onehot marks
    each column's largest component (the first one), vp is its (real, positive) value."""
    nb = w.type.ndim - 1
    on_diag = ops.convert(b, eye(b, v), BOOL)
    diff = ops.sub(b, _bcast(b, w, v, -1), _bcast(b, w, v, -2))
    one = ops.full_like(b, 1.0, v)
    e = ops.select(b, on_diag, ops.zeros_like(b, v), ops.div(b, one, ops.select(b, on_diag, one, diff)))
    vr, vi = ops.real(b, v), ops.imag(b, v)
    p = ops.argmax(b, ops.add(b, ops.mul(b, vr, vr), ops.mul(b, vi, vi)), nb)
    rows = ops.iota(b, p.type.dtype, v.type.shape, nb)
    onehot = ops.eq(b, rows, ops.broadcast_in_dim(b, p, v.type.shape, list(range(nb)) + [nb + 1]))
    vp = ops.reduce_sum(b, ops.select(b, onehot, vr, ops.zeros_like(b, vr)), [nb])
    return e, onehot, vp


def _jvp(b: Builder, op: Any, primals: list[Value], tangents: list[Value | None]) -> list[Value | None]:
    (a,), (da,) = primals, tangents
    vectors = op.params["vectors"]
    if da is None:
        return [None] * len(op.results)
    w, v, vinv, _ = eig_vectors(b, a)
    nb = w.type.ndim - 1
    if da.type.dtype.kind != "c":
        da = ops.convert(b, da, w.type.dtype)
    m = matmul(b, matmul(b, vinv, da), v)
    dw = ops.diagonal(b, m, nb, nb + 1)
    if not vectors:
        return [dw, None]
    e, onehot, vp = _gauge(b, w, v)
    t1 = matmul(b, v, ops.mul(b, e, m))
    r = ops.real(b, ops.reduce_sum(b, ops.mul(b, ops.conj(b, v), t1), [nb]))
    it1 = ops.imag(b, t1)
    s = ops.div(b, ops.reduce_sum(b, ops.select(b, onehot, it1, ops.zeros_like(b, it1)), [nb]), vp)
    c = ops.complex_(b, ops.neg(b, r), ops.neg(b, s))
    dv = ops.add(b, t1, ops.mul(b, v, _bcast(b, c, v, -1)))
    dvinv = ops.neg(b, matmul(b, matmul(b, vinv, dv), vinv))
    return [dw, dv, dvinv, None]


def _vjp(b: Builder, op: Any, primals: list[Value], outs: list[Value],
         cts: list[Value | None]) -> list[Value | None]:
    (a,) = primals
    vectors = op.params["vectors"]
    gw = cts[0]
    gv = cts[1] if vectors else None
    gvinv = cts[2] if vectors else None
    if gw is None and gv is None and gvinv is None:
        return [None]
    w, v, vinv, _ = eig_vectors(b, a)
    nb = w.type.ndim - 1
    gm = None if gw is None else _diag_embed(b, gw, v)
    if gvinv is not None:
        back = ops.neg(b, matmul(b, matmul(b, mH(b, vinv), gvinv), mH(b, vinv)))
        gv = back if gv is None else ops.add(b, gv, back)
    if gv is not None:
        e, onehot, vp = _gauge(b, w, v)
        gc = ops.reduce_sum(b, ops.mul(b, ops.conj(b, v), gv), [nb])
        alpha = ops.complex_(b, ops.neg(b, ops.real(b, gc)), ops.zeros_like(b, vp))
        beta = ops.div(b, ops.neg(b, ops.imag(b, gc)), vp)
        ibeta = _bcast(b, ops.complex_(b, ops.zeros_like(b, beta), beta), v, -1)
        gt1 = ops.add(b, gv, ops.mul(b, v, _bcast(b, alpha, v, -1)))
        gt1 = ops.add(b, gt1, ops.select(b, onehot, ibeta, ops.zeros_like(b, ibeta)))
        part = ops.mul(b, ops.conj(b, e), matmul(b, mH(b, v), gt1))
        gm = part if gm is None else ops.add(b, gm, part)
    assert gm is not None
    ga = matmul(b, matmul(b, mH(b, vinv), gm), mH(b, v))
    return [ga if a.type.dtype.kind == "c" else ops.convert(b, ops.real(b, ga), a.type.dtype)]


# ---- generated code ----------------------------------------------------------------------

class _Gen:
    """Complex scalar arithmetic on (re, im) pairs of batch-shaped real values."""

    def __init__(self, b: Builder, batch: tuple, rdt: Any) -> None:
        self.b, self.batch, self.rdt = b, batch, rdt
        self.eps = float(np.finfo(rdt).eps)
        self.tiny = float(np.finfo(rdt).tiny)

    def at(self, b: Builder) -> "_Gen":
        return _Gen(b, self.batch, self.rdt)

    def c(self, x: float) -> Value:
        return ops.full(self.b, x, TensorType(self.rdt, self.batch))

    def add(self, x: Pair, y: Pair) -> Pair:
        return cm.cadd(self.b, *x, *y)

    def sub(self, x: Pair, y: Pair) -> Pair:
        return cm.csub(self.b, *x, *y)

    def mul(self, x: Pair, y: Pair) -> Pair:
        return cm.cmul(self.b, *x, *y)

    def rmul(self, r: Value, x: Pair) -> Pair:
        return ops.mul(self.b, r, x[0]), ops.mul(self.b, r, x[1])

    def conj(self, x: Pair) -> Pair:
        return x[0], ops.neg(self.b, x[1])

    def div(self, x: Pair, y: Pair) -> Pair:
        return cm.cdiv(self.b, *x, *y)

    def abs2(self, x: Pair) -> Value:
        return ops.add(self.b, ops.mul(self.b, x[0], x[0]), ops.mul(self.b, x[1], x[1]))

    def abs1(self, x: Pair) -> Value:
        return ops.add(self.b, ops.abs_(self.b, x[0]), ops.abs_(self.b, x[1]))

    def sel(self, p: Value, x: Pair, y: Pair) -> Pair:
        return ops.select(self.b, p, x[0], y[0]), ops.select(self.b, p, x[1], y[1])

    def zero(self) -> Pair:
        return self.c(0.0), self.c(0.0)

    def givens(self, f: Pair, g: Pair) -> tuple[Value, Pair]:
        """(c, s), c real, with [[c, s], [-conj(s), c]] @ [f, g] = [r, 0]."""
        b = self.b
        # sqrt of sums of squares rather than hypot (a libm call): the matrix is scaled to
        # entries of order one, so the squares neither overflow nor lose what matters
        af2 = self.abs2(f)
        af = ops.sqrt(b, af2)
        nrm = ops.sqrt(b, ops.add(b, af2, self.abs2(g)))
        fzero, nzero = ops.eq(b, af, self.c(0.0)), ops.eq(b, nrm, self.c(0.0))
        one = self.c(1.0)
        inv_af = ops.div(b, one, ops.select(b, fzero, one, af))
        alpha = (ops.select(b, fzero, one, ops.mul(b, f[0], inv_af)), ops.mul(b, f[1], inv_af))
        inv = ops.div(b, one, ops.select(b, nzero, one, nrm))
        c = ops.select(b, nzero, one, ops.mul(b, af, inv))
        s = self.rmul(inv, self.mul(alpha, self.conj(g)))
        return c, s

    def rotate_rows(self, h: list, i: int, j: int, c: Value, s: Pair, cols: range) -> None:
        """rows i, j of h <- G @ rows i, j."""
        sc = self.conj(s)
        for k in cols:
            x, y = h[i][k], h[j][k]
            h[i][k] = self.add(self.rmul(c, x), self.mul(s, y))
            h[j][k] = self.sub(self.rmul(c, y), self.mul(sc, x))

    def rotate_cols(self, h: list, i: int, j: int, c: Value, s: Pair, rows: range) -> None:
        """columns i, j of h <- columns i, j @ G^H."""
        sc = self.conj(s)
        for k in rows:
            p, q = h[k][i], h[k][j]
            h[k][i] = self.add(self.rmul(c, p), self.mul(sc, q))
            h[k][j] = self.sub(self.rmul(c, q), self.mul(s, p))


def _converged(g: _Gen, h: list, m: int) -> Value:
    scale = ops.add(g.b, g.abs1(h[m][m]), g.abs1(h[m - 1][m - 1]))
    tol = ops.maximum(g.b, ops.mul(g.b, scale, g.c(g.eps)), g.c(g.tiny))
    return ops.le(g.b, g.abs1(h[m][m - 1]), tol)


def _sweep(g: _Gen, h: list, z: list | None, m: int, n: int, it: Value) -> None:
    """One shifted QR step on the leading (m+1) x (m+1) block of h (rows 0..m), updating
    the whole Schur form and the accumulated rotations z in place (without z, for the
    eigenvalues alone: the active block only, n = m + 1)."""
    b = g.b
    a_, b_, c_, d_ = h[m - 1][m - 1], h[m - 1][m], h[m][m - 1], h[m][m]
    half = g.c(0.5)
    tr = g.rmul(half, g.add(a_, d_))
    hd = g.rmul(half, g.sub(a_, d_))
    disc = cm.csqrt(b, *g.add(g.mul(hd, hd), g.mul(b_, c_)))
    l1, l2 = g.add(tr, disc), g.sub(tr, disc)
    mu = g.sel(ops.lt(b, g.abs1(g.sub(l1, d_)), g.abs1(g.sub(l2, d_))), l1, l2)
    odd = ops.or_(b, *[ops.eq(b, it, ops.scalar(b, k, I64)) for k in EXCEPTIONAL])
    odd = ops.broadcast_in_dim(b, odd, g.batch, ())
    exceptional = (ops.add(b, d_[0], ops.mul(b, g.c(0.75), g.abs1(c_))), d_[1])
    mu = g.sel(odd, exceptional, mu)
    for k in range(m + 1):
        h[k][k] = g.sub(h[k][k], mu)
    rots = []
    for k in range(m):
        c, s = g.givens(h[k][k], h[k + 1][k])
        g.rotate_rows(h, k, k + 1, c, s, range(k, n))
        h[k + 1][k] = g.zero()
        rots.append((c, s))
    for k, (c, s) in enumerate(rots):
        g.rotate_cols(h, k, k + 1, c, s, range(min(k + 2, m) + 1))
        if z is not None:
            g.rotate_cols(z, k, k + 1, c, s, range(n))
    for k in range(m + 1):
        h[k][k] = g.add(h[k][k], mu)


def _flat(h: list, z: list | None, m: int, n: int) -> list[Value]:
    zs = [] if z is None else [x for i in range(n) for j in range(n) for x in z[i][j]]
    return [x for i in range(m + 1) for j in range(n) for x in h[i][j]] + zs


def _unflat(vals: list[Value], h: list, z: list | None, m: int, n: int) -> None:
    it = iter(vals)
    for i in range(m + 1):
        for j in range(n):
            h[i][j] = (next(it), next(it))
    if z is None:
        return
    for i in range(n):
        for j in range(n):
            z[i][j] = (next(it), next(it))


def _any(b: Builder, x: Value) -> Value:
    return ops.reduce(ops.reduce_or_p, b, x, list(range(x.type.ndim))) if x.type.ndim else x


def _deflate(g: _Gen, h: list, z: list | None, m: int, n: int) -> Value:
    """QR sweeps until h[m, m-1] is negligible in every matrix of the batch (a `while`
    loop); returns the batch-shaped bool of convergence. Without z (the eigenvalues alone)
    only the leading (m+1) x (m+1) block is carried and updated."""
    b = g.b
    if z is None:
        n = m + 1
    carried = _flat(h, z, m, n)
    types = [TensorType(I64, ())] + [v.type for v in carried]
    test = new_block(types)
    tb = Builder(test, b.loc)
    th = [row[:] for row in h]
    tz = None if z is None else [row[:] for row in z]
    _unflat(list(test.args[1:]), th, tz, m, n)
    todo = _any(tb, ops.not_(tb, _converged(g.at(tb), th, m)))
    test.results = [ops.and_(tb, ops.lt(tb, test.args[0], ops.scalar(tb, MAX_SWEEPS, I64)), todo)]
    body = new_block(types)
    bb = Builder(body, b.loc)
    gb = g.at(bb)
    bh = [row[:] for row in h]
    bz = None if z is None else [row[:] for row in z]
    _unflat(list(body.args[1:]), bh, bz, m, n)
    _sweep(gb, bh, bz, m, n, body.args[0])
    # a converged subdiagonal is flushed to zero: no subnormal arithmetic in later sweeps
    done = _converged(gb, bh, m)
    bh[m][m - 1] = gb.sel(done, gb.zero(), bh[m][m - 1])
    body.results = [ops.add(bb, body.args[0], ops.scalar(bb, 1, I64))] + _flat(bh, bz, m, n)
    out = b.emit(ops.while_p, [ops.scalar(b, 0, I64)] + carried, {"kind": "while_loop"}, [test, body])
    _unflat(list(out[1:]), h, z, m, n)
    ok = _converged(g, h, m)
    h[m][m - 1] = g.zero()
    return ok


def _vector(g: _Gen, cols: list[Pair]) -> list[Pair]:
    """`cols` scaled to unit norm with its first largest component real and positive."""
    b = g.b
    sq = [ops.add(b, ops.mul(b, x[0], x[0]), ops.mul(b, x[1], x[1])) for x in cols]
    best, top = sq[0], cols[0]
    for q, x in zip(sq[1:], cols[1:]):
        bigger = ops.gt(b, q, best)
        best, top = ops.select(b, bigger, q, best), g.sel(bigger, x, top)
    nrm = ops.sqrt(b, sq[0]) if len(sq) == 1 else ops.sqrt(b, _sum(b, sq))
    inv = ops.div(b, g.c(1.0), ops.mul(b, nrm, ops.sqrt(b, best)))
    phase = g.rmul(inv, g.conj(top))
    return [g.mul(x, phase) for x in cols]


def _sum(b: Builder, xs: list[Value]) -> Value:
    total = xs[0]
    for x in xs[1:]:
        total = ops.add(b, total, x)
    return total


def _csum(g: _Gen, xs: list[Pair]) -> Pair:
    return _sum(g.b, [x[0] for x in xs]), _sum(g.b, [x[1] for x in xs])


def _pivot(g: _Gen, d: Pair, tkk: Pair) -> Pair:
    """d, or a tiny real number where |d| is below LAPACK's ztrevc threshold."""
    smin = ops.maximum(g.b, ops.mul(g.b, g.abs1(tkk), g.c(g.eps)), g.c(g.tiny))
    small = ops.lt(g.b, g.abs1(d), smin)
    return g.sel(small, (smin, g.c(0.0)), d)


def _balance(g: _Gen, h: list, n: int) -> list[Value]:
    """Diagonal balancing as LAPACK's gebal (without its permutations): h <- D^-1 h D with
    powers of two D_ii that make the off-diagonal 1-norms of row i and column i nearly
    equal, in BALANCE_PASSES sweeps over i (the exact powers of two round nothing). Returns
    D's diagonal. Eigenvalues are unchanged; a graded matrix keeps its small ones."""
    b = g.b
    d = [g.c(1.0) for _ in range(n)]
    if n < 2:
        return d
    limit = 60.0 if np.dtype(g.rdt).itemsize == 8 else 20.0
    for _ in range(BALANCE_PASSES):
        for i in range(n):
            c = _sum(b, [g.abs1(h[j][i]) for j in range(n) if j != i])
            r = _sum(b, [g.abs1(h[i][j]) for j in range(n) if j != i])
            both = ops.and_(b, ops.gt(b, c, g.c(0.0)), ops.gt(b, r, g.c(0.0)))
            ratio = ops.div(b, ops.select(b, both, r, g.c(1.0)), ops.select(b, both, c, g.c(1.0)))
            e = ops.round_(b, ops.mul(b, g.c(0.5), ops.log2(b, ratio)))
            e = ops.maximum(b, ops.minimum(b, e, g.c(limit)), g.c(-limit))
            f = ops.exp2(b, e)
            better = ops.lt(b, ops.add(b, ops.mul(b, c, f), ops.div(b, r, f)),
                            ops.mul(b, g.c(0.95), ops.add(b, c, r)))
            f = ops.select(b, ops.and_(b, both, better), f, g.c(1.0))
            inv = ops.div(b, g.c(1.0), f)
            for j in range(n):
                if j != i:
                    h[j][i] = g.rmul(f, h[j][i])
                    h[i][j] = g.rmul(inv, h[i][j])
            d[i] = ops.mul(b, d[i], f)
    return d


def _eigenvectors(g: _Gen, t: list, z: list, n: int, dd: list[Value]) -> tuple[list, list]:
    """(V, Vinv) as n x n lists of pairs from the Schur form Z T Z^H of the balanced
    matrix D^-1 A D (D's diagonal `dd`)."""
    x = [[g.zero() for _ in range(n)] for _ in range(n)]     # T x_k = t_kk x_k, column k
    for k in range(n):
        x[k][k] = (g.c(1.0), g.c(0.0))
        for i in range(k - 1, -1, -1):
            num = _csum(g, [t[i][k]] + [g.mul(t[i][j], x[j][k]) for j in range(i + 1, k)])
            x[i][k] = g.div((ops.neg(g.b, num[0]), ops.neg(g.b, num[1])),
                            _pivot(g, g.sub(t[i][i], t[k][k]), t[k][k]))
    v_cols = []
    for k in range(n):
        col = [g.rmul(dd[r], _csum(g, [g.mul(z[r][j], x[j][k]) for j in range(k + 1)])) for r in range(n)]
        v_cols.append(_vector(g, col))
    v = [[v_cols[k][r] for k in range(n)] for r in range(n)]
    y = [[g.zero() for _ in range(n)] for _ in range(n)]     # y_k T = t_kk y_k, row k
    for k in range(n):
        y[k][k] = (g.c(1.0), g.c(0.0))
        for j in range(k + 1, n):
            num = _csum(g, [g.mul(y[k][i], t[i][j]) for i in range(k, j)])
            y[k][j] = g.div((ops.neg(g.b, num[0]), ops.neg(g.b, num[1])),
                            _pivot(g, g.sub(t[j][j], t[k][k]), t[k][k]))
    vinv = []
    for k in range(n):
        row = [g.rmul(ops.div(g.b, g.c(1.0), dd[c]), _csum(g, [g.mul(y[k][j], g.conj(z[c][j]))
                                                              for j in range(k, n)]))
               for c in range(n)]
        d = _csum(g, [g.mul(row[c], v[c][k]) for c in range(n)])
        vinv.append([g.div(r, d) for r in row])
    return v, vinv


def _stack(b: Builder, parts: list[Pair], batch: tuple) -> Value:
    """complex [..., len(parts)] from batch-shaped pairs."""
    def join(xs: list[Value]) -> Value:
        flat = [ops.reshape(b, x, batch + (1,)) for x in xs]
        return flat[0] if len(flat) == 1 else ops.concatenate(b, flat, len(batch))
    return ops.complex_(b, join([p[0] for p in parts]), join([p[1] for p in parts]))


def _matrix(b: Builder, rows: list, batch: tuple) -> Value:
    n = len(rows)
    flat = _stack(b, [x for row in rows for x in row], batch)
    return ops.reshape(b, flat, batch + (n, n))


def _decompose(b: Builder, op: Any, args: list[Value]) -> list[Value] | None:
    (a,) = args
    *batch_, n, _ = a.type.shape
    batch = tuple(batch_)
    if not isinstance(n, int) or n > UNROLL_MAX:
        return _library(b, a, op.params["vectors"])
    if not batch or not PER_MATRIX:
        return _compute(b, a, op.params["vectors"])
    return _per_matrix(b, a, op.params["vectors"])


def _library(b: Builder, a: Value, vectors: bool) -> list[Value]:
    """eig of matrices too large for the unrolled code, or of a symbolic size: LAPACK's geev
    (compiler/primitives/geev.py: a kernel without the routine raises LinAlgError), its
    eigenvectors assembled into complex columns and brought to the normalization of the
    generated code, their inverse by LU (dead code unless a derivative asks for it)."""
    nb = a.type.ndim - 2
    outs = ops.geev(b, a, vectors)
    info = outs[-1]
    ok = ops.eq(b, info, ops.zeros_like(b, info))
    w, rows = outs[0], (outs[1] if vectors else None)
    if rows is None:
        return [w, ok]
    v = _unit_columns(b, ops.transpose(b, rows, list(range(nb)) + [nb + 1, nb]))
    return [w, v, _inverse(b, v), ok]


def _unit_columns(b: Builder, v: Value) -> Value:
    """The columns of `v` scaled to unit norm with their first component of largest modulus
    real and positive (the normalization of the generated code, `normalize_vectors`)."""
    nb = v.type.ndim - 2
    shape = tuple(v.type.shape)
    vr, vi = ops.real(b, v), ops.imag(b, v)
    sq = ops.add(b, ops.mul(b, vr, vr), ops.mul(b, vi, vi))
    p = ops.argmax(b, sq, nb)
    rows = ops.iota(b, p.type.dtype, shape, nb)
    onehot = ops.eq(b, rows, ops.broadcast_in_dim(b, p, shape, list(range(nb)) + [nb + 1]))
    zero = ops.zeros_like(b, vr)
    top_r = ops.reduce_sum(b, ops.select(b, onehot, vr, zero), [nb])
    top_i = ops.reduce_sum(b, ops.select(b, onehot, vi, zero), [nb])
    top2 = ops.add(b, ops.mul(b, top_r, top_r), ops.mul(b, top_i, top_i))
    norm2 = ops.reduce_sum(b, sq, [nb])
    scale = ops.div(b, ops.full_like(b, 1.0, top2), ops.sqrt(b, ops.mul(b, norm2, top2)))
    phase = ops.complex_(b, ops.mul(b, top_r, scale), ops.neg(b, ops.mul(b, top_i, scale)))
    return ops.mul(b, v, ops.broadcast_in_dim(b, phase, shape, list(range(nb)) + [nb + 1]))


def _inverse(b: Builder, v: Value) -> Value:
    """inv(v) by LU with partial pivoting."""
    packed, _, perm = lu(b, v)
    y = triangular_solve(b, packed, permute_rows(b, eye(b, v), perm), lower=True, unit_diagonal=True)
    return triangular_solve(b, packed, y, lower=False)


def _per_matrix(b: Builder, a: Value, vectors: bool) -> list[Value]:
    """A `for` loop over the matrices of the stack, each computed with scalar values. The
    loop carries the real and imaginary parts of the results as real arrays, which each
    iteration updates in place (a complex carried array would be copied: the complex
    lowering splits its update)."""
    *batch_, n, _ = a.type.shape
    batch = tuple(batch_)
    size: Any = 1
    for d in batch:
        size = dims.mul(size, d)
    flat = ops.reshape(b, a, (size, n, n))
    types = [TensorType(t.dtype, (size,) + tuple(t.shape[len(batch):]))
             for t in ops.eig_p.abstract_eval((a.type,), {"vectors": vectors})]
    parts = [TensorType(np.dtype(t.dtype.name).type(0).real.dtype, t.shape)
             for t in types[:-1] for _ in range(2)] + [types[-1]]
    init = [ops.full(b, 0, t) for t in parts]
    body = new_block([TensorType(I64, ()), flat.type] + parts)     # regions are isolated:
    bb = Builder(body, b.loc)                                       # the stack is carried
    i, src = body.args[0], body.args[1]
    zero = ops.scalar(bb, 0, I64)
    one = ops.dynamic_slice(bb, src, [i, zero, zero], (1, n, n))
    outs = _compute(bb, ops.reshape(bb, one, (n, n)), vectors)
    split = [p for o in outs[:-1] for p in (ops.real(bb, o), ops.imag(bb, o))] + [outs[-1]]
    body.results = [src] + [
        ops.dynamic_update_slice(bb, acc, ops.reshape(bb, o, (1,) + tuple(o.type.shape)),
                                 [i] + [zero] * o.type.ndim)
        for acc, o in zip(body.args[2:], split)]
    res = ops.for_loop(b, ops.scalar(b, 0, I64), ops.size_of(b, size, I64), [flat] + init, body,
                       trip=size)[1:]
    joined = [ops.complex_(b, res[2 * k], res[2 * k + 1]) for k in range(len(types) - 1)] + [res[-1]]
    return [ops.reshape(b, r, batch + tuple(r.type.shape[1:])) for r in joined]


def _compute(b: Builder, a: Value, vectors: bool) -> list[Value]:
    *batch_, n_, _ = a.type.shape
    batch = tuple(batch_)
    assert isinstance(n_, int)      # static: _decompose keeps the op otherwise
    n = n_
    rdt = np.dtype(a.type.dtype.name).type(0).real.dtype
    g = _Gen(b, batch, rdt)
    nb = len(batch)
    if a.type.dtype.kind == "c":
        re, im = ops.real(b, a), ops.imag(b, a)
    else:
        re, im = a, ops.zeros_like(b, a)

    def entry(x: Value, i: int, j: int) -> Value:
        s = ops.slice_(b, x, [0] * nb + [i, j], list(batch) + [i + 1, j + 1])
        return ops.reshape(b, s, batch)
    h = [[(entry(re, i, j), entry(im, i, j)) for j in range(n)] for i in range(n)]
    scale = _sum_max(b, [g.abs1(x) for row in h for x in row])
    scale = ops.select(b, ops.eq(b, scale, g.c(0.0)), g.c(1.0), scale)
    inv_scale = ops.div(b, g.c(1.0), scale)
    h = [[g.rmul(inv_scale, x) for x in row] for row in h]
    d = _balance(g, h, n)
    z = [[(g.c(1.0 if i == j else 0.0), g.c(0.0)) for j in range(n)] for i in range(n)]
    for j in range(n - 2):                                  # Hessenberg form
        for i in range(n - 1, j + 1, -1):
            c, s = g.givens(h[i - 1][j], h[i][j])
            g.rotate_rows(h, i - 1, i, c, s, range(j, n))
            h[i][j] = g.zero()
            g.rotate_cols(h, i - 1, i, c, s, range(n))
            g.rotate_cols(z, i - 1, i, c, s, range(n))
    ok = ops.full(b, True, TensorType(BOOL, batch))
    for m in range(n - 1, 0, -1):                           # Schur form
        ok = ops.and_(b, ok, _deflate(g, h, z if vectors else None, m, n))
    w = _stack(b, [g.rmul(scale, h[k][k]) for k in range(n)], batch)
    if not vectors:
        return [w, ok]
    v, vinv = _eigenvectors(g, h, z, n, d)
    return [w, _matrix(b, v, batch), _matrix(b, vinv, batch), ok]


def _sum_max(b: Builder, xs: list[Value]) -> Value:
    top = xs[0]
    for x in xs[1:]:
        top = ops.maximum(b, top, x)
    return top


eig = define(
    ops.eig_p,
    shape_rule=_shape_rule,
    numpy_ref=_ref,
    vmap_rule=batch_rule,
    jvp_rule=_jvp,
    vjp_rule=_vjp,
    decomposition=_decompose,
    doc="eigenvalues (and right eigenvectors with their inverse) of general complex matrices",
)
