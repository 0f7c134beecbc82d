"""Batched trust-region Newton-CG (TRON) for k smooth, strongly convex problems.

The method is liblinear's trust-region Newton method: Lin, Weng & Keerthi
(2008), "Trust region Newton method for large-scale logistic regression" (JMLR
9), with the optional diagonal preconditioner of Hsia, Chiang & Lin (2018),
"Preconditioned conjugate gradient methods in truncated Newton frameworks for
large-scale linear classification" (ACML).  Each outer iteration solves the
Newton system H s = -g approximately by conjugate gradient (CG), truncated at
the trust-region boundary ||s|| <= delta (Steihaug), evaluates the trial point
w + s once, accepts or rejects it and updates delta.

The solver never sees the data; it only calls an oracle

* ``value_grad(W, idx) -> (F, G)``: objective values and gradients,
* ``hess_vec(W, V, idx) -> HV``: Hessian-vector products,
* ``hess_diag(W, idx) -> D`` (optional): Hessian diagonals, for the preconditioner,

with ``W`` (and ``V``) float64 ``(m, d)`` C-contiguous blocks whose row ``j``
belongs to problem ``idx[j]``.  Each call is meant to be one pass over a large
data set, so the k problems advance in lockstep and share calls: every CG
iteration is ONE ``hess_vec`` call for the problems still inside their CG loop,
every trust-region step ONE ``value_grad`` call for the problems evaluating a
trial point (and, with ``hess_diag``, ONE call for the problems that moved).
Nothing mixes problems (all arithmetic is row-wise, and every size and limit
depends on d only, never on k), so the result of a problem does not depend on
which others share its batch.

Cutting the passes
------------------
* The CG forcing term is eta = min(0.1, sqrt(||g||)): ||r|| <= eta ||g||, loose
  far from the optimum, superlinear convergence at the end.  Once eta ||g|| is
  within 10 tol the target becomes tol / 2, so the last Newton step finishes
  the job instead of leaving a sliver for another outer iteration.
* CG is preconditioned with a limited-memory BFGS matrix built from the CG
  pairs (p, Hp) of the previous Newton steps (Morales & Nocedal 2000,
  "Automatic preconditioning by limited memory quasi-Newton updating", SIAM J.
  Optim. 10): the Hessian changes little between the last Newton steps, so
  their CG runs need far fewer iterations (Adult, alpha = 1e-6: 270 -> 153
  passes).  Its initial matrix is the diagonal preconditioner when
  ``hess_diag`` is given, else the usual scalar s'y / y'y.  The pairs of a CG
  run enter the preconditioner only after the run (PCG needs a fixed one).

Accepting steps and the radius
------------------------------
TRON's rules (liblinear): ratio rho = actual / predicted reduction of f;
reject below 1e-4, and the radius moves by liblinear's interpolated factors
(0.25 ... 4; x4 on the boundary when rho >= 0.75).  The first radius is
infinite (the first step is the truncated Newton step), then clamped to the
first step's length, as liblinear does.  Additions for this package, where the
privacy analysis needs gradient norms near 1e-10 while f near the optimum
changes by less than its rounding error (about 1e-13 (|f| + 1)):

* a trial point whose gradient norm meets ``tol`` is accepted whatever f says
  (the objectives are strongly convex: that point is the answer);
* once the predicted reduction falls below 1e-11 (|f| + 1) (100 times f's
  rounding level) the ratio is noise, and from then on the problem's steps are
  judged by the gradient norm: accepted when ||g|| decreases; the radius grows
  (x4 on the boundary) when ||g|| at least halves or falls by >= 0.75 of the
  decrease the linear model predicts (||g|| - ||g + H s||), is kept when ||g||
  merely decreases, halves when it does not.  This keeps the radius from
  collapsing on a problem that is merely at f's rounding floor (even an oracle
  whose f is constant converges);
* after rejections in a row the radius shrinks faster (an extra x0.25, then
  x0.0625): a first step far too long (a loss with no curvature at the start,
  Huber at w = 0) otherwise costs a dozen trial points.

A problem fails (status 3) only when it is truly stuck: the oracle returned
non-finite values at the start or in CG, the step no longer changes w in
floating point, 40 trial points in a row were rejected, or 20 gradient-judged
steps in a row neither halved the gradient norm nor grew the radius.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

#: the oracle's callables (see the module docstring): (W, idx) -> (F, G); (W, V, idx) -> HV;
#: (W, idx) -> D
ValueGrad = Callable[[np.ndarray, np.ndarray], "tuple[ArrayLike, ArrayLike]"]
HessVec = Callable[[np.ndarray, np.ndarray, np.ndarray], ArrayLike]
HessDiag = Callable[[np.ndarray, np.ndarray], ArrayLike]

__all__ = ["trust_region_newton"]

# acceptance / radius constants of TRON (liblinear's tron.cpp)
_ETA0, _ETA1, _ETA2 = 1e-4, 0.25, 0.75
_SIGMA1, _SIGMA2, _SIGMA3 = 0.25, 0.5, 4.0
#: weight of the Hessian diagonal in the preconditioner M = (1 - a) c + a diag(H)
_ALPHA_PCG = 0.01
#: relative rounding level of f, and the multiple of it below which the predicted
#: reduction is not trusted (the step is judged by the gradient norm instead)
_F_ROUND = 1e-13
_ROUND_REGIME = 100.0
#: CG forcing term cap; once eta ||g|| <= _CG_FINISH tol, CG aims at _CG_TOL_FLOOR tol
_ETA_CG = 0.1
_CG_FINISH = 10.0
_CG_TOL_FLOOR = 0.5
#: "truly stuck": so many trial points rejected in a row / so many gradient-judged
#: steps in a row that neither halved the gradient norm nor grew the radius
_MAX_REJECT = 40
_MAX_STALL = 20
#: quasi-Newton preconditioner: at most _QN_MEM pairs per problem, and at most
#: _QN_BUDGET / d (4 arrays of _QN_BUDGET doubles = 2 MiB per problem; a function
#: of d only, so that results do not depend on the batch size)
_QN_MEM = 100
_QN_BUDGET = 2**16


def _rowdot(a, b):
    """Row-wise dot products of two (m, d) arrays -> (m,) (no mixing of rows)."""
    return np.add.reduce(a * b, axis=1)


def _check_block(arr, shape, what):
    out = np.asarray(arr, dtype=np.float64)
    if out.shape != shape:
        raise ValueError(f"trust_region_newton: {what} returned shape {out.shape}, expected {shape}")
    return out


def _preconditioner(D):
    """M = (1 - a) c + a D per row (a = 0.01), c = the median of the row's diagonal.

    Hsia, Chiang & Lin mix the diagonal with the identity, which in liblinear's
    scaling (f = ||w||^2 / 2 + C sum loss) is the regularizer's curvature.  The
    oracle here does not tell the regularization strength; c is the row's typical
    curvature instead, so M corrects only the coordinates whose curvature is far
    above the typical one.  Measured with the quasi-Newton preconditioner on top
    (Adult, logistic, alpha = 1e-6): 118 passes with this c, 181 with c = min D
    (liblinear-like, close to alpha), 158 without ``hess_diag``.  Non-finite or
    non-positive entries are replaced by c.
    """
    ok = np.isfinite(D) & (D > 0)
    Ds = np.sort(np.where(ok, D, np.inf), axis=1)          # valid entries first
    nv = ok.sum(axis=1)
    rows = np.arange(D.shape[0])
    lo, hi = np.maximum(nv - 1, 0) // 2, np.maximum(nv, 1) // 2
    c = np.where(nv > 0, 0.5 * (Ds[rows, lo] + Ds[rows, np.minimum(hi, D.shape[1] - 1)]), 1.0)[:, None]
    return (1.0 - _ALPHA_PCG) * c + _ALPHA_PCG * np.where(ok, D, c)


class _PairStore:
    """Limited-memory BFGS preconditioner from CG pairs (p, Hp), one per problem.

    ``S, Y`` (k, L, d), ``rho`` (k, L): each problem's pairs in chronological
    order, ``cnt`` (k,) how many; ``gamma`` (k,) the scalar initial inverse
    s'y / y'y of the newest pair.  Pairs recorded during a CG run go to a
    separate ring buffer and join the preconditioner in `commit` (after the
    run), the oldest dropped beyond L.
    """

    def __init__(self, k, L, d):
        self.L = L
        self.S, self.Y, self.rho = np.zeros((k, L, d)), np.zeros((k, L, d)), np.zeros((k, L))
        self.cnt, self.gamma = np.zeros(k, dtype=np.intp), np.ones(k)
        self.nS, self.nY, self.nrho = np.zeros((k, L, d)), np.zeros((k, L, d)), np.zeros((k, L))
        self.ncnt = np.zeros(k, dtype=np.intp)

    def record(self, probs, P, HP, pHp):
        """Record the pairs (P[j], HP[j]) (pHp[j] = P[j].HP[j] > 0) of problems probs."""
        pos = self.ncnt[probs] % self.L
        self.nS[probs, pos] = P
        self.nY[probs, pos] = HP
        self.nrho[probs, pos] = 1.0 / pHp
        self.ncnt[probs] += 1

    def commit(self, probs):
        """Append the pairs recorded since the last commit (the newest L) for probs."""
        L = self.L
        for kk in probs:
            c = int(self.ncnt[kk])
            if c == 0:
                continue
            self.ncnt[kk] = 0
            nn = min(c, L)
            ring = np.arange(c - nn, c) % L
            old = int(self.cnt[kk])
            keep = min(old, L - nn)
            for buf, new in ((self.S, self.nS), (self.Y, self.nY), (self.rho, self.nrho)):
                buf[kk, :keep + nn] = np.concatenate([buf[kk, old - keep:old], new[kk, ring]])
            self.cnt[kk] = keep + nn
            y = self.Y[kk, keep + nn - 1]
            self.gamma[kk] = 1.0 / (self.rho[kk, keep + nn - 1] * (y @ y))

    def apply(self, R, probs, h0):
        """Z = B^-1 R row-wise for the problems probs (the two-loop recursion), with
        initial inverse h0 ((m, d) or (m, 1)); rows with fewer pairs are masked,
        so a row's result does not depend on the others."""
        cnt = self.cnt[probs]
        top = int(cnt.max()) if probs.size else 0
        S, Y, rho = self.S, self.Y, self.rho
        q = R.copy()
        a = np.zeros((probs.size, top))
        for i in range(top - 1, -1, -1):
            ai = np.where(cnt > i, rho[probs, i] * _rowdot(S[probs, i], q), 0.0)
            a[:, i] = ai
            q -= ai[:, None] * Y[probs, i]
        z = h0 * q
        for i in range(top):
            b = rho[probs, i] * _rowdot(Y[probs, i], z)
            z += np.where(cnt > i, a[:, i] - b, 0.0)[:, None] * S[probs, i]
        return z


def _to_boundary(s, p, Mp, Ms, delta):
    """tau >= 0 with ||s + tau p||_M = delta, row-wise (liblinear's stable formula)."""
    std = _rowdot(s, Mp)
    sts = _rowdot(s, Ms)
    dtd = _rowdot(p, Mp)
    dsq = delta * delta
    gap = np.maximum(dsq - sts, 0.0)
    rad = np.sqrt(std * std + dtd * gap)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = np.where(std >= 0, gap / (std + rad), (rad - std) / dtd)
    return np.where(np.isfinite(tau), tau, 0.0)


class _Oracle:
    """The caller's callables, their outputs' shapes checked (d: the problems' dimension)."""

    def __init__(self, value_grad, hess_vec, hess_diag, d):
        self._vg, self._hv, self._diag, self.d = value_grad, hess_vec, hess_diag, d

    @property
    def has_diag(self):
        return self._diag is not None

    def value_grad(self, Wb, idx):
        Fb, Gb = self._vg(np.ascontiguousarray(Wb), idx)
        m = idx.size
        Fb = _check_block(Fb, (m,), "value_grad (F)")
        Gb = _check_block(Gb, (m, self.d), "value_grad (G)")
        return Fb, Gb

    def hess_vec(self, Wb, Vb, idx):
        out = self._hv(np.ascontiguousarray(Wb), np.ascontiguousarray(Vb), idx)
        return _check_block(out, (idx.size, self.d), "hess_vec")

    def preconditioner(self, Wb, idx):
        """M of the trust region's norm (see `_preconditioner`) at the rows Wb."""
        Db = _check_block(self._diag(np.ascontiguousarray(Wb), idx), (idx.size, self.d), "hess_diag")
        return _preconditioner(Db)


@dataclass
class _State:
    """Every problem's iterate and its trust-region bookkeeping, arrays over the k problems."""

    W: np.ndarray           # (k, d) the last accepted points
    F: np.ndarray           # (k,) objective values there
    G: np.ndarray           # (k, d) gradients there
    gnorm: np.ndarray       # (k,) ||G||
    n_iter: np.ndarray      # accepted Newton steps
    status: np.ndarray      # 0 running, else the final status
    delta: np.ndarray       # trust-region radii (inf: not set yet, the first step)
    first: np.ndarray       # liblinear: delta = min(delta, ||s_1||) after step 1
    n_reject: np.ndarray    # trial points rejected in a row
    by_grad: np.ndarray     # steps judged by the gradient norm from now on
    stall_ref: np.ndarray   # gradient norm of the last progress (stall watch)
    n_stall: np.ndarray     # gradient-judged steps in a row without progress
    pairs: "_PairStore | None"   # the quasi-Newton preconditioner's CG pairs
    M: "np.ndarray | None"       # (k, d) trust-region metric, with hess_diag


def _check_args(W0, tol, max_iter, cg_max_iter):
    """(W, tol, cg_max_iter): the start (a float64 copy) and the limits, checked."""
    W = np.array(W0, dtype=np.float64, order="C", copy=True)
    if W.ndim != 2 or W.shape[0] == 0 or W.shape[1] == 0:
        raise ValueError(f"trust_region_newton: W0 must be a non-empty (k, d) array, got shape {W.shape}")
    if not np.all(np.isfinite(W)):
        raise ValueError("trust_region_newton: W0 contains NaN or infinity")
    tol = float(tol)
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"trust_region_newton: tol must be positive and finite, got {tol!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 0:
        raise ValueError(f"trust_region_newton: max_iter must be an integer >= 0, got {max_iter!r}")
    if cg_max_iter is None:
        cg_max_iter = max(W.shape[1], 10)
    if isinstance(cg_max_iter, bool) or not isinstance(cg_max_iter, (int, np.integer)) or cg_max_iter < 1:
        raise ValueError(f"trust_region_newton: cg_max_iter must be an integer >= 1, got {cg_max_iter!r}")
    return W, tol, cg_max_iter


def _start(oracle, W, tol, max_iter):
    """The state at the starts W: one value_grad call (and one hess_diag call)."""
    k, d = W.shape
    all_idx = np.arange(k, dtype=np.intp)
    F, G = oracle.value_grad(W, all_idx)
    F = F.copy()
    G = np.array(G, dtype=np.float64, order="C", copy=True)
    gnorm = np.sqrt(_rowdot(G, G))
    status = np.zeros(k, dtype=np.intp)
    finite = np.isfinite(F) & np.isfinite(gnorm)
    status[~finite] = 3
    status[finite & (gnorm <= tol)] = 1
    if max_iter == 0:
        status[status == 0] = 2
    L = int(min(_QN_MEM, _QN_BUDGET // d))
    st = _State(W=W, F=F, G=G, gnorm=gnorm, n_iter=np.zeros(k, dtype=np.intp), status=status,
                delta=np.full(k, np.inf), first=np.ones(k, dtype=bool),
                n_reject=np.zeros(k, dtype=np.intp), by_grad=np.zeros(k, dtype=bool),
                stall_ref=gnorm.copy(), n_stall=np.zeros(k, dtype=np.intp),
                pairs=_PairStore(k, L, d) if L >= 2 else None, M=None)
    if oracle.has_diag:
        st.M = np.ones((k, d))
        act = np.flatnonzero(status == 0)
        if act.size:
            st.M[act] = oracle.preconditioner(W[act], act)
    return st


# ------------------------------------------------------------------ truncated CG
class _Precond:
    """z = P^-1 r for rows of the active block: the quasi-Newton preconditioner (initial
    matrix M^-1, or the scalar s'y / y'y), else M^-1, else the identity."""

    def __init__(self, pairs, act, Ma):
        self.pairs, self.act, self.Ma = pairs, act, Ma
        if pairs is not None:
            self.h0 = (1.0 / Ma) if Ma is not None else pairs.gamma[act][:, None]

    def __call__(self, R, rows):
        if self.pairs is not None:
            return self.pairs.apply(R, self.act[rows], self.h0[rows])
        if self.Ma is not None:
            return R / self.Ma[rows]
        return R.copy()


class _CG:
    """One outer iteration's Steihaug CG over the active problems (rows of the block):
    the step s (and M s), the residual r = -g - H s, the direction p, and per row
    whether CG still runs, stopped on the boundary, or broke (non-finite H p)."""

    def __init__(self, st, act, tol):
        m, d = act.size, st.W.shape[1]
        self.act, self.Wa, self.g = act, st.W[act], st.G[act]
        self.Ma = None if st.M is None else st.M[act]
        self.dl = st.delta[act].copy()
        self.s, self.Ms, self.r = np.zeros((m, d)), np.zeros((m, d)), -self.g
        self.precond = _Precond(st.pairs, act, self.Ma)
        z = self.precond(self.r, np.arange(m))
        self.p = z.copy()
        self.rz = _rowdot(self.r, z)
        gn = st.gnorm[act]
        cg_tol = np.minimum(_ETA_CG, np.sqrt(gn)) * gn
        # close to tol: solve for tol / 2 at once (a few more CG iterations now are
        # cheaper than another Newton iteration that rebuilds the Krylov space)
        self.cg_tol = np.where(cg_tol <= _CG_FINISH * tol, _CG_TOL_FLOOR * tol, cg_tol)
        self.incg = np.ones(m, dtype=bool)
        self.boundary = np.zeros(m, dtype=bool)
        self.broken = np.zeros(m, dtype=bool)
        self.cg_it = np.zeros(m, dtype=np.intp)

    def metric(self, v, rows):
        """M v for the rows (v itself without hess_diag: the Euclidean trust region)."""
        return v if self.Ma is None else self.Ma[rows] * v


def _pcg(oracle, st, act, tol, cg_max_iter):
    """Steihaug's truncated, preconditioned CG for H s = -g of the active problems, all
    in lockstep: one hess_vec call per CG iteration for the rows still in CG."""
    cg = _CG(st, act, tol)
    while True:
        rows = np.flatnonzero(cg.incg)
        if rows.size == 0:
            return cg
        pr = cg.p[rows]
        Hp = oracle.hess_vec(cg.Wa[rows], pr, act[rows])
        cg.cg_it[rows] += 1
        pHp = _rowdot(pr, Hp)
        if st.pairs is not None:
            okc = np.isfinite(pHp) & (pHp > 0)
            if okc.any():
                st.pairs.record(act[rows[okc]], pr[okc], Hp[okc], pHp[okc])
        bad = ~(np.isfinite(pHp) & np.all(np.isfinite(Hp), axis=1))
        if bad.any():
            cg.broken[rows[bad]] = True
            cg.incg[rows[bad]] = False
        negc = _negative_curvature(cg, st, rows, ~bad & (pHp <= 0))
        _cg_advance(cg, rows, pr, Hp, pHp, negc, ~bad & (pHp > 0), cg_max_iter)


def _negative_curvature(cg, st, rows, negc):
    """Rows with p'Hp <= 0 that go to the boundary.  With no radius yet (the first
    step) the radius becomes ||g||_{M^-1} (||g|| without hess_diag: liblinear's first
    radius) and a first CG iteration's step goes to the boundary; a later CG
    iteration stops where it is."""
    nr = negc & ~np.isfinite(cg.dl[rows])
    if nr.any():
        first_cg = nr & (cg.cg_it[rows] == 1)
        fr = rows[first_cg]
        if fr.size:
            gM = cg.g[fr] if cg.Ma is None else cg.g[fr] / cg.Ma[fr]
            cg.dl[fr] = np.sqrt(_rowdot(cg.g[fr], gM))
            st.delta[cg.act[fr]] = cg.dl[fr]
        cg.incg[rows[nr & ~first_cg]] = False
        negc = negc & ~(nr & ~first_cg)
    return negc


def _cg_advance(cg, rows, pr, Hp, pHp, negc, good, cg_max_iter):
    """The CG step along p for the rows: to the boundary (negative curvature, or a step
    that would leave the region), else the full step, and the next direction."""
    with np.errstate(divide="ignore", invalid="ignore"):
        a_cg = np.where(good, cg.rz[rows] / np.where(good, pHp, 1.0), 0.0)
    s_try = cg.s[rows] + a_cg[:, None] * pr
    Ms_try = cg.metric(s_try, rows)
    cross = good & (_rowdot(s_try, Ms_try) >= cg.dl[rows] ** 2)
    to_bd = negc | cross
    if to_bd.any():
        b = rows[to_bd]
        tau = _to_boundary(cg.s[b], pr[to_bd], cg.metric(pr, rows)[to_bd], cg.Ms[b], cg.dl[b])
        cg.s[b] += tau[:, None] * pr[to_bd]
        cg.Ms[b] = cg.metric(cg.s[b], b)
        cg.r[b] -= tau[:, None] * Hp[to_bd]
        cg.boundary[b] = True
        cg.incg[b] = False
    inner = good & ~cross
    if not inner.any():
        return
    ii = rows[inner]
    cg.s[ii] = s_try[inner]
    cg.Ms[ii] = Ms_try[inner]
    cg.r[ii] -= a_cg[inner][:, None] * Hp[inner]
    rn = np.sqrt(_rowdot(cg.r[ii], cg.r[ii]))
    done = (rn <= cg.cg_tol[ii]) | (cg.cg_it[ii] >= cg_max_iter)
    cg.incg[ii[done]] = False
    cont = ii[~done]
    if cont.size:
        zc = cg.precond(cg.r[cont], cont)
        rz_new = _rowdot(cg.r[cont], zc)
        beta = rz_new / cg.rz[cont]
        cg.p[cont] = zc + beta[:, None] * cg.p[cont]
        cg.rz[cont] = rz_new


# ------------------------------------------------------------- the trust-region step
def _ratio_test(f, fn, gs, prered, sn, dlt, on_boundary, n_reject):
    """TRON's test (liblinear): accept when the actual reduction f - fn is > 1e-4 of the
    predicted one; the radius moves by liblinear's interpolated factors.  -> (accept, dlt)"""
    actred = f - fn
    curv = fn - f - gs
    a = _SIGMA3 if curv <= 0 else max(_SIGMA1, -0.5 * (gs / curv))
    if actred < _ETA0 * prered:
        # rejected; after rejections in a row, shrink faster (a step far too long, e.g.
        # the first Newton step of a loss with no curvature at w = 0, otherwise costs a
        # dozen trial points)
        dlt = min(a * sn, _SIGMA2 * dlt) * _SIGMA1 ** min(int(n_reject), 2)
    elif actred < _ETA1 * prered:
        dlt = max(_SIGMA1 * dlt, min(a * sn, _SIGMA2 * dlt))
    elif actred < _ETA2 * prered:
        dlt = max(_SIGMA1 * dlt, min(a * sn, _SIGMA3 * dlt))
    elif on_boundary:
        dlt = _SIGMA3 * dlt
    else:
        dlt = max(dlt, min(a * sn, _SIGMA3 * dlt))
    return actred > _ETA0 * prered, dlt


def _gradient_test(g0, gnew, rnorm, sn, dlt, on_boundary):
    """f cannot tell: the step is judged by the gradient norm (see the module's notes).
    -> (accept, dlt)"""
    pred_g = g0 - rnorm         # decrease of ||g|| the linear model predicts
    if gnew <= 0.5 * g0 or (gnew < g0 and g0 - gnew >= _ETA2 * pred_g > 0):
        return True, (_SIGMA3 * dlt if on_boundary else max(dlt, sn))
    if gnew < g0:
        return True, max(_SIGMA1 * dlt, min(sn, dlt))
    return False, _SIGMA2 * min(dlt, sn)


def _judge(st, kk, trial, tol):
    """Accept or reject problem kk's trial point and update its radius: (accept, dlt,
    judged_by_f).  trial: (f at the trial point, its gradient norm, g's norm, ||s||,
    the predicted reduction, g.s, ||r||, the radius, whether s is on the boundary)."""
    fn, gnew, g0, sn, prered, gs, rnorm, dlt, on_boundary = trial
    f = st.F[kk]
    if st.first[kk]:
        dlt = min(dlt, sn)
        st.first[kk] = False
    judged_by_f = True
    if not (np.isfinite(fn) and np.isfinite(gnew)):
        accept = False
        dlt = _SIGMA1 * min(dlt, sn)
    elif not st.by_grad[kk] and prered > _ROUND_REGIME * _F_ROUND * (abs(f) + 1.0):
        accept, dlt = _ratio_test(f, fn, gs, prered, sn, dlt, on_boundary, st.n_reject[kk])
    else:
        # f cannot tell: judge the step by the gradient norm, from now on (a problem
        # this close to its minimizer stays there; switching back to f as the radius
        # grows again would let f's noise reject good steps)
        judged_by_f = False
        st.by_grad[kk] = True
        accept, dlt = _gradient_test(g0, gnew, rnorm, sn, dlt, on_boundary)
    if not accept and np.isfinite(gnew) and np.isfinite(fn) and gnew <= tol:
        accept = True          # meets tol: the answer, whatever f's noise says
    return accept, dlt, judged_by_f


def _stall_watch(st, kk, judged_by_f, dlt, dl_before):
    """Status 3 after _MAX_STALL gradient-judged steps in a row that neither halved the
    gradient norm nor grew the radius."""
    if judged_by_f:
        st.stall_ref[kk] = st.gnorm[kk]
        st.n_stall[kk] = 0
    elif st.gnorm[kk] <= 0.5 * st.stall_ref[kk]:
        st.stall_ref[kk] = st.gnorm[kk]
        st.n_stall[kk] = 0
    elif dlt <= dl_before:              # (a growing radius is progress too)
        st.n_stall[kk] += 1
        if st.n_stall[kk] >= _MAX_STALL:
            st.status[kk] = 3


def _record(st, kk, accept, Wt, Ft, Gt, gnew, tol, max_iter):
    """Take problem kk's trial point (or count the rejection); True when kk moved and
    goes on (its stall watch and preconditioner follow), False when it stopped or was
    rejected for the last time."""
    if not accept:
        st.n_reject[kk] += 1
        if st.n_reject[kk] >= _MAX_REJECT:
            st.status[kk] = 3
        return False
    st.n_reject[kk] = 0
    st.W[kk], st.F[kk], st.G[kk], st.gnorm[kk] = Wt, Ft, Gt, gnew
    st.n_iter[kk] += 1
    if gnew <= tol:
        st.status[kk] = 1
    elif st.n_iter[kk] >= max_iter:
        st.status[kk] = 2
    return True


def _step(oracle, st, act, cg, tol, max_iter):
    """Evaluate the trial points w + s (one value_grad call), accept or reject each and
    update the radii; one hess_diag call for the problems that moved."""
    gs = _rowdot(cg.g, cg.s)
    prered = -0.5 * (gs - _rowdot(cg.s, cg.r))       # q(0) - q(s), q the quadratic model
    snorm = np.sqrt(_rowdot(cg.s, cg.Ms))
    rnorm = np.sqrt(_rowdot(cg.r, cg.r))
    Wt = cg.Wa + cg.s
    same = np.all(Wt == cg.Wa, axis=1)
    st.status[act[cg.broken | same]] = 3
    ev = np.flatnonzero(~(cg.broken | same))
    if ev.size == 0:
        return
    Ft, Gt = oracle.value_grad(Wt[ev], act[ev])
    gtn = np.sqrt(_rowdot(Gt, Gt))
    gn = st.gnorm[act]
    moved = []
    for e, j in enumerate(ev):
        kk = act[j]
        trial = (Ft[e], gtn[e], gn[j], snorm[j], prered[j], gs[j], rnorm[j], cg.dl[j],
                 cg.boundary[j])
        accept, dlt, judged_by_f = _judge(st, kk, trial, tol)
        st.delta[kk] = dlt
        took = _record(st, kk, accept, Wt[j], Ft[e], Gt[e], gtn[e], tol, max_iter)
        if st.status[kk] != 0:
            continue
        if took:
            moved.append(kk)
        _stall_watch(st, kk, judged_by_f, dlt, cg.dl[j])
    if st.M is not None and moved:
        mv = np.asarray(moved, dtype=np.intp)
        st.M[mv] = oracle.preconditioner(st.W[mv], mv)


def trust_region_newton(value_grad: ValueGrad, hess_vec: HessVec, W0: ArrayLike, tol: float,
                        max_iter: int, *, hess_diag: HessDiag | None = None,
                        cg_max_iter: int | None = None
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Minimize k smooth strongly convex objectives at once.

    Parameters
    ----------
    value_grad : callable ``(W, idx) -> (F, G)``
        ``W`` float64 (m, d) C-contiguous, ``idx`` int array (m,) of problem
        indices (which of the k problems the rows of ``W`` belong to); returns
        the objective values ``F`` (m,) and gradients ``G`` (m, d).
    hess_vec : callable ``(W, V, idx) -> HV``
        ``HV[j]`` = Hessian of problem ``idx[j]`` at ``W[j]`` times ``V[j]``, (m, d).
    W0 : array (k, d)
        Starting points (copied; float64).
    tol : float
        Stop a problem when the Euclidean norm of its gradient is <= tol.
    max_iter : int
        Cap on the accepted Newton steps per problem (>= 0; 0 evaluates the start
        only).  Rejected trial points do not count; at most 40 in a row.
    hess_diag : None or callable ``(W, idx) -> D``
        Diagonals of the Hessians (m, d).  If given, the trust region is
        ||s||_M <= delta with M = 0.99 c + 0.01 D (Hsia, Chiang & Lin 2018; c
        the row's median of D, see `_preconditioner`), and M is the initial
        matrix of the quasi-Newton CG preconditioner.  Costs one extra oracle
        call per outer iteration in which some problem moved.  Without it the
        trust region is Euclidean.
    cg_max_iter : None or int
        Cap on CG iterations per Newton step (default max(d, 10)).

    Returns
    -------
    W : float64 (k, d)
        Solutions (the last accepted points).
    F : float64 (k,)
        Objective values at W (from the oracle).
    n_iter : intp (k,)
        Accepted Newton steps.
    grad_norm : float64 (k,)
        ||gradient||_2 at W (from the oracle).
    status : intp (k,)
        1 converged (grad_norm <= tol), 2 max_iter reached, 3 failure (trust
        region collapsed / stuck at the rounding floor / non-finite oracle
        output); the messages are dperm.optim.status.NEWTON_STATUS.

    Oracle calls pass only the rows that need them, in increasing problem order,
    with ``idx`` an ``np.intp`` array: one ``value_grad`` call for all k starts,
    then per outer iteration one ``hess_vec`` call per CG iteration (the problems
    still in CG), one ``value_grad`` call (the problems with a trial point) and,
    with ``hess_diag``, one ``hess_diag`` call (the problems that moved).  A
    problem's iterates depend only on its own oracle values.
    """
    W, tol, cg_max_iter = _check_args(W0, tol, max_iter, cg_max_iter)
    oracle = _Oracle(value_grad, hess_vec, hess_diag, W.shape[1])
    st = _start(oracle, W, tol, max_iter)
    while True:
        act = np.flatnonzero(st.status == 0)
        if act.size == 0:
            break
        cg = _pcg(oracle, st, act, tol, cg_max_iter)
        if st.pairs is not None:
            st.pairs.commit(act)
        _step(oracle, st, act, cg, tol, max_iter)
    return st.W, st.F, st.n_iter, st.gnorm, st.status
