"""Generated code for geev's results at any n: the fallback of a kernel without LAPACK.

``geev_loops(b, a, vectors)`` returns what the ``geev`` primitive returns (``w``, with
``vectors`` the unit right eigenvectors as rows, ``info``) for a stack ``a [..., n, n]`` of
any size, static or symbolic, written with ``for`` and ``while`` loops over arrays rather
than unrolled over entries (compare eig.py's ``_compute``): a ``for`` loop over the
matrices of the stack, each matrix

1. converted to complex (real and imaginary parts carried as real arrays, which the loops
   update a row or a column pair at a time in place) and scaled by its largest entry;
2. reduced to Hessenberg form by Givens rotations (column j, rows n-1 down to j+2),
   accumulated into Z;
3. brought to complex Schur form ``T`` by single-shift QR sweeps (Wilkinson shift,
   exceptional shifts at sweeps 10 and 20) on the leading (m+1) x (m+1) block, one
   ``while`` loop per deflated eigenvalue m = n-1 ... 1 (at most ``MAX_SWEEPS`` sweeps).
   A rotation is applied to whole rows and columns: the entries outside the active block
   that it mixes are exact zeros (the Hessenberg zeros and the deflated subdiagonal, which
   is set to zero), so the result is the one of the restricted update;
4. the eigenvectors of T by back-substitution (LAPACK's ztrevc perturbation of a zero
   pivot), times Z, scaled to unit norm.

No balancing (eig.py's unrolled code balances): badly scaled matrices lose accuracy in
their small eigenvalues. ``info`` is 1 where a sweep limit was hit (eig raises NumPy's
LinAlgError there), else 0. Cost: O(n^3) per matrix, a few times LAPACK's time at
n = 16-64 and more beyond (docs/linalg.md, "General eigenproblems").
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from compiler.ir import dims
from compiler.ir.builder import Builder, new_block
from compiler.ir.core import Value
from compiler.ir.types import BOOL, I64, TensorType
from compiler.primitives import complexmath as cm
from compiler.primitives import ops

Pair = tuple[Value, Value]

MAX_SWEEPS = 30         # QR sweeps per deflated eigenvalue before giving up (info = 1)
EXCEPTIONAL = (10, 20)  # sweeps that use an exceptional shift instead of Wilkinson's


def _i64(b: Builder, v: int) -> Value:
    return ops.scalar(b, v, I64)


def _loop(b: Builder, start: Value, stop: Value, carried: Sequence[Value],
          fn: Callable[..., list[Value]], trip: Any = None) -> list[Value]:
    """for i in range(start, stop): carried = fn(builder, i, *carried)."""
    body = new_block([TensorType(I64, ())] + [v.type for v in carried])
    bb = Builder(body, b.loc)
    body.results = list(fn(bb, *body.args))
    return list(ops.for_loop(b, start, stop, list(carried), body, trip=trip))


def _while(b: Builder, carried: Sequence[Value], test: Callable[..., Value],
           fn: Callable[..., list[Value]]) -> list[Value]:
    """while test(builder, *carried): carried = fn(builder, *carried)."""
    types = [v.type for v in carried]
    tblock, body = new_block(types), new_block(types)
    tblock.results = [test(Builder(tblock, b.loc), *tblock.args)]
    body.results = list(fn(Builder(body, b.loc), *body.args))
    return list(b.emit(ops.while_p, list(carried), {"kind": "while_loop"}, [tblock, body]))


class _M:
    """One complex n x n matrix as real and imaginary parts, with the few operations the
    algorithm needs (scalars are 0-d pairs)."""

    def __init__(self, b: Builder, n: Any, rdt: Any) -> None:
        self.b, self.n, self.rdt = b, n, rdt
        self.eps, self.tiny = float(np.finfo(rdt).eps), float(np.finfo(rdt).tiny)

    def at(self, b: Builder) -> "_M":
        return _M(b, self.n, self.rdt)

    def c(self, x: float) -> Value:
        return ops.scalar(self.b, x, self.rdt)

    def entry(self, h: Pair, i: Value, j: Value) -> Pair:
        b = self.b
        re, im = (ops.reshape(b, ops.dynamic_slice(b, x, [i, j], (1, 1)), ()) for x in h)
        return re, im

    def set_entry(self, h: Pair, i: Value, j: Value, v: Pair) -> Pair:
        b = self.b
        re, im = (ops.dynamic_update_slice(b, x, ops.reshape(b, y, (1, 1)), [i, j]) for x, y in zip(h, v))
        return re, im

    def abs1(self, x: Pair) -> Value:
        return ops.add(self.b, ops.abs_(self.b, x[0]), ops.abs_(self.b, x[1]))

    def bc(self, x: Value, shape: tuple) -> Value:
        return ops.broadcast_in_dim(self.b, x, shape, [])

    def givens(self, f: Pair, g: Pair) -> tuple[Value, Pair]:
        """(c, s), c real, with [[c, s], [-conj(s), c]] @ [f, g] = [r, 0] (eig.py's)."""
        b = self.b
        af2 = ops.add(b, ops.mul(b, f[0], f[0]), ops.mul(b, f[1], f[1]))
        g2 = ops.add(b, ops.mul(b, g[0], g[0]), ops.mul(b, g[1], g[1]))
        af, nrm = ops.sqrt(b, af2), ops.sqrt(b, ops.add(b, af2, g2))
        zero, one = self.c(0.0), self.c(1.0)
        fzero, nzero = ops.eq(b, af, zero), ops.eq(b, nrm, zero)
        inv_af = ops.div(b, one, ops.select(b, fzero, one, af))
        alpha = (ops.select(b, fzero, one, ops.mul(b, f[0], inv_af)), ops.mul(b, f[1], inv_af))
        inv = ops.div(b, one, ops.select(b, nzero, one, nrm))
        c = ops.select(b, nzero, one, ops.mul(b, af, inv))
        sr, si = cm.cmul(b, alpha[0], alpha[1], g[0], ops.neg(b, g[1]))
        return c, (ops.mul(b, sr, inv), ops.mul(b, si, inv))

    def _mix(self, x: Pair, y: Pair, c: Value, s: Pair, conj_first: bool) -> tuple[Pair, Pair]:
        """(c x + s' y, c y - s'' x) elementwise, s' = conj(s) if conj_first else s and
        s'' the other one."""
        b = self.b
        shape = tuple(x[0].type.shape)
        cb = self.bc(c, shape)
        sr, si = self.bc(s[0], shape), self.bc(s[1], shape)
        s1 = (sr, ops.neg(b, si)) if conj_first else (sr, si)
        s2 = (sr, si) if conj_first else (sr, ops.neg(b, si))
        p1 = cm.cmul(b, s1[0], s1[1], y[0], y[1])
        p2 = cm.cmul(b, s2[0], s2[1], x[0], x[1])
        nx = (ops.add(b, ops.mul(b, cb, x[0]), p1[0]), ops.add(b, ops.mul(b, cb, x[1]), p1[1]))
        ny = (ops.sub(b, ops.mul(b, cb, y[0]), p2[0]), ops.sub(b, ops.mul(b, cb, y[1]), p2[1]))
        return nx, ny

    def rotate_rows(self, h: Pair, p: Value, c: Value, s: Pair) -> Pair:
        """rows p, p+1 of h <- G @ rows p, p+1."""
        b, n = self.b, self.n
        zero = _i64(b, 0)
        two = [ops.dynamic_slice(b, x, [p, zero], (2, n)) for x in h]
        row = [[ops.reshape(b, ops.slice_(b, t, [r, 0], [r + 1, n]), (n,)) for t in two] for r in (0, 1)]
        nx, ny = self._mix((row[0][0], row[0][1]), (row[1][0], row[1][1]), c, s, False)
        out = []
        for k in range(2):
            both = ops.concatenate(b, [ops.reshape(b, nx[k], (1, n)), ops.reshape(b, ny[k], (1, n))], 0)
            out.append(ops.dynamic_update_slice(b, h[k], both, [p, zero]))
        return out[0], out[1]

    def rotate_cols(self, h: Pair, p: Value, c: Value, s: Pair) -> Pair:
        """columns p, p+1 of h <- columns p, p+1 @ G^H."""
        b, n = self.b, self.n
        zero = _i64(b, 0)
        two = [ops.dynamic_slice(b, x, [zero, p], (n, 2)) for x in h]
        col = [[ops.reshape(b, ops.slice_(b, t, [0, r], [n, r + 1]), (n,)) for t in two] for r in (0, 1)]
        nx, ny = self._mix((col[0][0], col[0][1]), (col[1][0], col[1][1]), c, s, True)
        out = []
        for k in range(2):
            both = ops.concatenate(b, [ops.reshape(b, nx[k], (n, 1)), ops.reshape(b, ny[k], (n, 1))], 1)
            out.append(ops.dynamic_update_slice(b, h[k], both, [zero, p]))
        return out[0], out[1]

    def converged(self, h: Pair, m: Value) -> Value:
        b = self.b
        m1 = ops.sub(b, m, _i64(b, 1))
        scale = ops.add(b, self.abs1(self.entry(h, m, m)), self.abs1(self.entry(h, m1, m1)))
        tol = ops.maximum(b, ops.mul(b, scale, self.c(self.eps)), self.c(self.tiny))
        return ops.le(b, self.abs1(self.entry(h, m, m1)), tol)

    def shift_diagonal(self, h: Pair, m: Value, mu: Pair, sign: float) -> Pair:
        """h + sign * mu on the diagonal of the leading (m+1) x (m+1) block."""
        b, n = self.b, self.n
        shape = (n, n)
        r, c = ops.iota(b, I64, shape, 0), ops.iota(b, I64, shape, 1)
        mask = ops.and_(b, ops.eq(b, r, c), ops.le(b, r, self.bc(m, shape)))
        out = []
        for x, y in zip(h, mu):
            d = ops.select(b, mask, self.bc(ops.mul(b, self.c(sign), y), shape), ops.zeros_like(b, x))
            out.append(ops.add(b, x, d))
        return out[0], out[1]


def _hessenberg(g: _M, h: Pair, z: Pair) -> tuple[Pair, Pair]:
    b, n = g.b, g.n
    nv = ops.size_of(b, n, I64)

    def column(bb: Builder, j: Value, hr: Value, hi: Value, zr: Value, zi: Value) -> list[Value]:
        gj = g.at(bb)
        top = ops.sub(bb, ops.sub(bb, ops.size_of(bb, n, I64), j), _i64(bb, 2))   # rows n-1 .. j+2

        def rotation(bi: Builder, t: Value, hr: Value, hi: Value, zr: Value, zi: Value,
                     j: Value) -> list[Value]:
            gi = g.at(bi)
            i = ops.sub(bi, ops.size_of(bi, n, I64), ops.add(bi, t, _i64(bi, 1)))   # n-1-t
            i1 = ops.sub(bi, i, _i64(bi, 1))
            h2: Pair = (hr, hi)
            c, s = gi.givens(gi.entry(h2, i1, j), gi.entry(h2, i, j))
            h2 = gi.rotate_rows(h2, i1, c, s)
            h2 = gi.set_entry(h2, i, j, (gi.c(0.0), gi.c(0.0)))
            h2 = gi.rotate_cols(h2, i1, c, s)
            z2 = gi.rotate_cols((zr, zi), i1, c, s)
            return [h2[0], h2[1], z2[0], z2[1], j]
        return _loop(bb, _i64(bb, 0), top, [hr, hi, zr, zi, j], rotation)[:4]   # regions are isolated
    cols = ops.maximum(b, ops.sub(b, nv, _i64(b, 2)), _i64(b, 0))
    hr, hi, zr, zi = _loop(b, _i64(b, 0), cols, [h[0], h[1], z[0], z[1]], column)
    return (hr, hi), (zr, zi)


def _sweep(g: _M, h: Pair, z: Pair, m: Value, it: Value) -> tuple[Pair, Pair]:
    """One shifted QR step on the leading (m+1) x (m+1) block (rows and columns 0..m)."""
    b, n = g.b, g.n
    m1 = ops.sub(b, m, _i64(b, 1))
    a_, b_, c_, d_ = g.entry(h, m1, m1), g.entry(h, m1, m), g.entry(h, m, m1), g.entry(h, m, m)
    half = g.c(0.5)
    tr = (ops.mul(b, half, ops.add(b, a_[0], d_[0])), ops.mul(b, half, ops.add(b, a_[1], d_[1])))
    hd = (ops.mul(b, half, ops.sub(b, a_[0], d_[0])), ops.mul(b, half, ops.sub(b, a_[1], d_[1])))
    sq = cm.cadd(b, *cm.cmul(b, *hd, *hd), *cm.cmul(b, *b_, *c_))
    disc = cm.csqrt(b, *sq)
    l1, l2 = cm.cadd(b, *tr, *disc), cm.csub(b, *tr, *disc)
    pick = ops.lt(b, g.abs1(cm.csub(b, *l1, *d_)), g.abs1(cm.csub(b, *l2, *d_)))
    mu = (ops.select(b, pick, l1[0], l2[0]), ops.select(b, pick, l1[1], l2[1]))
    odd = ops.or_(b, *[ops.eq(b, it, _i64(b, k)) for k in EXCEPTIONAL])
    exceptional = ops.add(b, d_[0], ops.mul(b, g.c(0.75), g.abs1(c_)))
    mu = (ops.select(b, odd, exceptional, mu[0]), ops.select(b, odd, d_[1], mu[1]))
    h = g.shift_diagonal(h, m, mu, -1.0)
    rdt = g.rdt
    cs0 = [ops.full(b, 0.0, TensorType(rdt, (n,))) for _ in range(3)]

    def rows(bb: Builder, k: Value, hr: Value, hi: Value, cc: Value, sr: Value, si: Value) -> list[Value]:
        gk = g.at(bb)
        k1 = ops.add(bb, k, _i64(bb, 1))
        h2: Pair = (hr, hi)
        c, s = gk.givens(gk.entry(h2, k, k), gk.entry(h2, k1, k))
        h2 = gk.rotate_rows(h2, k, c, s)
        h2 = gk.set_entry(h2, k1, k, (gk.c(0.0), gk.c(0.0)))
        put = [ops.dynamic_update_slice(bb, arr, ops.reshape(bb, x, (1,)), [k])
               for arr, x in zip((cc, sr, si), (c, s[0], s[1]))]
        return [h2[0], h2[1]] + put
    hr, hi, cc, sr, si = _loop(b, _i64(b, 0), m, [h[0], h[1]] + cs0, rows)

    def cols(bb: Builder, k: Value, hr: Value, hi: Value, zr: Value, zi: Value,
             cc: Value, sr: Value, si: Value) -> list[Value]:
        gk = g.at(bb)

        def at(x: Value) -> Value:
            return ops.reshape(bb, ops.dynamic_slice(bb, x, [k], (1,)), ())
        c, s = at(cc), (at(sr), at(si))
        h2 = gk.rotate_cols((hr, hi), k, c, s)
        z2 = gk.rotate_cols((zr, zi), k, c, s)
        return [h2[0], h2[1], z2[0], z2[1], cc, sr, si]
    hr, hi, zr, zi = _loop(b, _i64(b, 0), m, [hr, hi, z[0], z[1], cc, sr, si], cols)[:4]
    h = g.shift_diagonal((hr, hi), m, mu, 1.0)
    done = g.converged(h, m)
    m1 = ops.sub(b, m, _i64(b, 1))
    sub = g.entry(h, m, m1)
    h = g.set_entry(h, m, m1, (ops.select(b, done, g.c(0.0), sub[0]), ops.select(b, done, g.c(0.0), sub[1])))
    return h, (zr, zi)


def _schur(g: _M, h: Pair, z: Pair) -> tuple[Pair, Pair, Value]:
    b, n = g.b, g.n

    def deflate(bb: Builder, t: Value, hr: Value, hi: Value, zr: Value, zi: Value, ok: Value) -> list[Value]:
        gt = g.at(bb)
        m = ops.sub(bb, ops.sub(bb, ops.size_of(bb, n, I64), t), _i64(bb, 1))     # n-1-t

        def test(bw: Builder, it: Value, m: Value, hr: Value, hi: Value, zr: Value, zi: Value) -> Value:
            gw = g.at(bw)
            todo = ops.not_(bw, gw.converged((hr, hi), m))
            return ops.and_(bw, ops.lt(bw, it, _i64(bw, MAX_SWEEPS)), todo)

        def sweep(bw: Builder, it: Value, m: Value, hr: Value, hi: Value, zr: Value,
                  zi: Value) -> list[Value]:
            h2, z2 = _sweep(g.at(bw), (hr, hi), (zr, zi), m, it)
            return [ops.add(bw, it, _i64(bw, 1)), m, h2[0], h2[1], z2[0], z2[1]]
        _, _, hr, hi, zr, zi = _while(bb, [_i64(bb, 0), m, hr, hi, zr, zi], test, sweep)
        h2: Pair = (hr, hi)
        ok = ops.and_(bb, ok, gt.converged(h2, m))
        h2 = gt.set_entry(h2, m, ops.sub(bb, m, _i64(bb, 1)), (gt.c(0.0), gt.c(0.0)))
        return [h2[0], h2[1], zr, zi, ok]
    steps = ops.maximum(b, ops.sub(b, ops.size_of(b, n, I64), _i64(b, 1)), _i64(b, 0))
    hr, hi, zr, zi, ok = _loop(b, _i64(b, 0), steps, [h[0], h[1], z[0], z[1], ops.scalar(b, True, BOOL)],
                               deflate)
    return (hr, hi), (zr, zi), ok


def _vectors(g: _M, t: Pair, z: Pair) -> Pair:
    """The unit eigenvectors as rows: row k = Z x_k, T x_k = t_kk x_k by back-substitution."""
    b, n, rdt = g.b, g.n, g.rdt

    def vector(bb: Builder, k: Value, xr: Value, xi: Value, tr: Value, ti: Value) -> list[Value]:
        gk = g.at(bb)
        tkk = gk.entry((tr, ti), k, k)
        x0 = [ops.dynamic_update_slice(bb, ops.full(bb, 0.0, TensorType(rdt, (n,))),
                                       ops.reshape(bb, gk.c(1.0), (1,)), [k]),
              ops.full(bb, 0.0, TensorType(rdt, (n,)))]

        def substitute(bi: Builder, s: Value, vr: Value, vi: Value, tr: Value, ti: Value,
                       tkr: Value, tki: Value, k: Value) -> list[Value]:
            gi = g.at(bi)
            i = ops.sub(bi, ops.sub(bi, k, s), _i64(bi, 1))                        # k-1-s
            zero = _i64(bi, 0)
            row = [ops.reshape(bi, ops.dynamic_slice(bi, x, [i, zero], (1, n)), (n,)) for x in (tr, ti)]
            pr, pi = cm.cmul(bi, row[0], row[1], vr, vi)
            num = (ops.reduce_sum(bi, pr, [0]), ops.reduce_sum(bi, pi, [0]))
            d = cm.csub(bi, *gi.entry((tr, ti), i, i), tkr, tki)
            smin = ops.maximum(bi, ops.mul(bi, gi.abs1((tkr, tki)), gi.c(gi.eps)), gi.c(gi.tiny))
            small = ops.lt(bi, gi.abs1(d), smin)
            d = (ops.select(bi, small, smin, d[0]), ops.select(bi, small, gi.c(0.0), d[1]))
            xr, xi = cm.cdiv(bi, ops.neg(bi, num[0]), ops.neg(bi, num[1]), *d)
            return [ops.dynamic_update_slice(bi, v, ops.reshape(bi, x, (1,)), [i])
                    for v, x in ((vr, xr), (vi, xi))] + [tr, ti, tkr, tki, k]
        vr, vi = _loop(bb, _i64(bb, 0), k, [x0[0], x0[1], tr, ti, tkk[0], tkk[1], k], substitute)[:2]
        return [ops.dynamic_update_slice(bb, xr, ops.reshape(bb, vr, (1, n)), [k, _i64(bb, 0)]),
                ops.dynamic_update_slice(bb, xi, ops.reshape(bb, vi, (1, n)), [k, _i64(bb, 0)]), tr, ti]
    x0 = [ops.full(b, 0.0, TensorType(rdt, (n, n))) for _ in range(2)]
    xr, xi = _loop(b, _i64(b, 0), ops.size_of(b, n, I64), x0 + list(t), vector, trip=n)[:2]
    x = ops.complex_(b, xr, xi)
    zt = ops.transpose(b, ops.complex_(b, *z), [1, 0])
    rows = ops.dot_general(b, x, zt, (((1,), (0,)), ((), ())))     # row k: sum_j x_k[j] Z[:, j]
    rr, ri = ops.real(b, rows), ops.imag(b, rows)
    norm = ops.sqrt(b, ops.reduce_sum(b, ops.add(b, ops.mul(b, rr, rr), ops.mul(b, ri, ri)), [1]))
    inv = ops.broadcast_in_dim(b, ops.div(b, ops.full_like(b, 1.0, norm), norm), (n, n), [0])
    return ops.mul(b, rr, inv), ops.mul(b, ri, inv)


def _one(b: Builder, a: Value, vectors: bool) -> list[Value]:
    """(w_re, w_im [n], [v_re, v_im [n, n] rows,] info) of one matrix a [n, n]."""
    n = a.type.shape[-1]
    rdt = np.dtype(np.finfo(np.dtype(a.type.dtype.name)).dtype)
    g = _M(b, n, rdt)
    if a.type.dtype.kind == "c":
        h: Pair = (ops.real(b, a), ops.imag(b, a))
    else:
        h = (a, ops.zeros_like(b, a))
    mag = ops.add(b, ops.abs_(b, h[0]), ops.abs_(b, h[1]))
    scale = ops.reduce(ops.reduce_max_p, b, mag, [0, 1])
    scale = ops.select(b, ops.gt(b, scale, g.c(0.0)), scale, g.c(1.0))
    inv = ops.broadcast_in_dim(b, ops.div(b, g.c(1.0), scale), (n, n), [])
    h = (ops.mul(b, h[0], inv), ops.mul(b, h[1], inv))
    eye = ops.convert(b, ops.eq(b, ops.iota(b, I64, (n, n), 0), ops.iota(b, I64, (n, n), 1)), rdt)
    z: Pair = (eye, ops.zeros_like(b, eye))
    h, z = _hessenberg(g, h, z)
    h, z, ok = _schur(g, h, z)
    sc = ops.broadcast_in_dim(b, scale, (n,), [])
    w = [ops.mul(b, ops.diagonal(b, x, 0, 1), sc) for x in h]
    info = ops.select(b, ok, _i64(b, 0), _i64(b, 1))
    if not vectors:
        return w + [info]
    return w + list(_vectors(g, h, z)) + [info]


def geev_loops(b: Builder, a: Value, vectors: bool) -> list[Value]:
    """geev's results (w, [vr,] info) for a stack a [..., n, n]: a loop over the matrices."""
    *batch_, n, _ = a.type.shape
    batch = tuple(batch_)
    size: Any = 1
    for d in batch:
        size = dims.mul(size, d)
    flat = ops.reshape(b, a, (size, n, n))
    rdt = np.dtype(np.finfo(np.dtype(a.type.dtype.name)).dtype)
    cdt = np.result_type(rdt, np.complex64)
    parts = [TensorType(rdt, (size, n))] * 2 + ([TensorType(rdt, (size, n, n))] * 2 if vectors else []) \
        + [TensorType(I64, (size,))]
    init = [ops.full(b, 0, t) for t in parts]

    def matrix(bb: Builder, i: Value, src: Value, *acc: Value) -> list[Value]:
        zero = _i64(bb, 0)
        one = ops.reshape(bb, ops.dynamic_slice(bb, src, [i, zero, zero], (1, n, n)), (n, n))
        outs = _one(bb, one, vectors)
        return [src] + [ops.dynamic_update_slice(bb, x, ops.reshape(bb, o, (1,) + tuple(o.type.shape)),
                                                 [i] + [zero] * o.type.ndim)
                        for x, o in zip(acc, outs)]
    res = _loop(b, _i64(b, 0), ops.size_of(b, size, I64), [flat] + init, matrix, trip=size)[1:]
    w = ops.reshape(b, ops.complex_(b, res[0], res[1]), batch + (n,))
    info = ops.reshape(b, res[-1], batch)
    if not vectors:
        return [w, info]
    v = ops.reshape(b, ops.complex_(b, res[2], res[3]), batch + (n, n))
    assert v.type.dtype == cdt
    return [w, v, info]
