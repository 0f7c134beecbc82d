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
import numpy as np

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


def trust_region_newton(value_grad, hess_vec, W0, tol, max_iter, *, hess_diag=None,  # noqa: C901
                        cg_max_iter=None):
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
    k, d = W.shape
    if cg_max_iter is None:
        cg_max_iter = max(d, 10)
    if isinstance(cg_max_iter, bool) or not isinstance(cg_max_iter, (int, np.integer)) or cg_max_iter < 1:
        raise ValueError(f"trust_region_newton: cg_max_iter must be an integer >= 1, got {cg_max_iter!r}")

    def call_vg(Wb, idx):
        Fb, Gb = value_grad(np.ascontiguousarray(Wb), idx)
        m = idx.size
        Fb = _check_block(Fb, (m,), "value_grad (F)")
        Gb = _check_block(Gb, (m, d), "value_grad (G)")
        return Fb, Gb

    def call_diag(Wb, idx):
        Db = _check_block(hess_diag(np.ascontiguousarray(Wb), idx), (idx.size, d), "hess_diag")
        return _preconditioner(Db)

    all_idx = np.arange(k, dtype=np.intp)
    F, G = call_vg(W, all_idx)
    F = F.copy()
    G = np.array(G, dtype=np.float64, order="C", copy=True)
    gnorm = np.sqrt(_rowdot(G, G))
    n_iter = np.zeros(k, dtype=np.intp)
    status = np.zeros(k, dtype=np.intp)
    finite = np.isfinite(F) & np.isfinite(gnorm)
    status[~finite] = 3
    status[finite & (gnorm <= tol)] = 1
    if max_iter == 0:
        status[status == 0] = 2

    delta = np.full(k, np.inf)          # first step: the truncated Newton step itself
    first = np.ones(k, dtype=bool)      # liblinear: delta = min(delta, ||s_1||) after step 1
    n_reject = np.zeros(k, dtype=np.intp)
    by_grad = np.zeros(k, dtype=bool)   # steps judged by the gradient norm from now on
    stall_ref = gnorm.copy()
    n_stall = np.zeros(k, dtype=np.intp)
    L = int(min(_QN_MEM, _QN_BUDGET // d))
    pairs = _PairStore(k, L, d) if L >= 2 else None
    M = None
    if hess_diag is not None:
        M = np.ones((k, d))
        act = np.flatnonzero(status == 0)
        if act.size:
            M[act] = call_diag(W[act], act)

    while True:
        act = np.flatnonzero(status == 0)
        m = act.size
        if m == 0:
            break
        Wa = W[act]
        g = G[act]
        gn = gnorm[act]
        Ma = None if M is None else M[act]
        dl = delta[act].copy()

        # ---------------------------------------------------------- Steihaug CG
        s = np.zeros((m, d))
        Ms = np.zeros((m, d))
        r = -g
        if pairs is not None:
            h0 = (1.0 / Ma) if Ma is not None else pairs.gamma[act][:, None]

            def precond(R, rows):
                return pairs.apply(R, act[rows], h0[rows])  # noqa: B023 (used in this iteration)
        elif Ma is not None:
            def precond(R, rows):
                return R / Ma[rows]  # noqa: B023 (used in this iteration)
        else:
            def precond(R, rows):
                return R.copy()
        z = precond(r, np.arange(m))
        p = z.copy()
        rz = _rowdot(r, z)
        cg_tol = np.minimum(_ETA_CG, np.sqrt(gn)) * gn
        # close to tol: solve for tol / 2 at once (a few more CG iterations now are
        # cheaper than another Newton iteration that rebuilds the Krylov space)
        cg_tol = np.where(cg_tol <= _CG_FINISH * tol, _CG_TOL_FLOOR * tol, cg_tol)
        incg = np.ones(m, dtype=bool)
        boundary = np.zeros(m, dtype=bool)
        broken = np.zeros(m, dtype=bool)
        cg_it = np.zeros(m, dtype=np.intp)
        while True:
            rows = np.flatnonzero(incg)
            if rows.size == 0:
                break
            pr = p[rows]
            Hp = _check_block(hess_vec(np.ascontiguousarray(Wa[rows]), np.ascontiguousarray(pr), act[rows]),
                              (rows.size, d), "hess_vec")
            cg_it[rows] += 1
            pHp = _rowdot(pr, Hp)
            if pairs is not None:
                okc = np.isfinite(pHp) & (pHp > 0)
                if okc.any():
                    pairs.record(act[rows[okc]], pr[okc], Hp[okc], pHp[okc])
            bad = ~(np.isfinite(pHp) & np.all(np.isfinite(Hp), axis=1))
            if bad.any():
                broken[rows[bad]] = True
                incg[rows[bad]] = False
            negc = ~bad & (pHp <= 0)
            good = ~bad & ~negc
            Mpr = pr if Ma is None else Ma[rows] * pr
            # negative curvature and no radius yet (first step): the radius becomes
            # ||g||_{M^-1} (||g|| without hess_diag: liblinear's first radius) and
            # the step goes to the boundary; later CG iterations stop where they are
            nr = negc & ~np.isfinite(dl[rows])
            if nr.any():
                first_cg = nr & (cg_it[rows] == 1)
                fr = rows[first_cg]
                if fr.size:
                    gM = g[fr] if Ma is None else g[fr] / Ma[fr]
                    dl[fr] = np.sqrt(_rowdot(g[fr], gM))
                    delta[act[fr]] = dl[fr]
                stop_here = rows[nr & ~first_cg]
                incg[stop_here] = False
                negc = negc & ~(nr & ~first_cg)
            # tentative CG step for positive curvature
            with np.errstate(divide="ignore", invalid="ignore"):
                a_cg = np.where(good, rz[rows] / np.where(good, pHp, 1.0), 0.0)
            s_try = s[rows] + a_cg[:, None] * pr
            Ms_try = s_try if Ma is None else Ma[rows] * s_try
            cross = good & (_rowdot(s_try, Ms_try) >= dl[rows] ** 2)
            to_bd = negc | cross
            if to_bd.any():
                b = rows[to_bd]
                tau = _to_boundary(s[b], pr[to_bd], Mpr[to_bd], Ms[b], dl[b])
                s[b] += tau[:, None] * pr[to_bd]
                Ms[b] = s[b] if Ma is None else Ma[b] * s[b]
                r[b] -= tau[:, None] * Hp[to_bd]
                boundary[b] = True
                incg[b] = False
            inner = good & ~cross
            if inner.any():
                ii = rows[inner]
                s[ii] = s_try[inner]
                Ms[ii] = Ms_try[inner]
                r[ii] -= a_cg[inner][:, None] * Hp[inner]
                rn = np.sqrt(_rowdot(r[ii], r[ii]))
                done = (rn <= cg_tol[ii]) | (cg_it[ii] >= cg_max_iter)
                incg[ii[done]] = False
                cont = ii[~done]
                if cont.size:
                    zc = precond(r[cont], cont)
                    rz_new = _rowdot(r[cont], zc)
                    beta = rz_new / rz[cont]
                    p[cont] = zc + beta[:, None] * p[cont]
                    rz[cont] = rz_new

        if pairs is not None:
            pairs.commit(act)
        # ------------------------------------------------------- the trial point
        gs = _rowdot(g, s)
        prered = -0.5 * (gs - _rowdot(s, r))       # q(0) - q(s), q the quadratic model
        snorm = np.sqrt(_rowdot(s, Ms))
        rnorm = np.sqrt(_rowdot(r, r))
        Wt = Wa + s
        same = np.all(Wt == Wa, axis=1)
        status[act[broken | same]] = 3
        ev = np.flatnonzero(~(broken | same))
        if ev.size == 0:
            continue
        Ft, Gt = call_vg(Wt[ev], act[ev])
        gtn = np.sqrt(_rowdot(Gt, Gt))

        moved = []
        for e, j in enumerate(ev):
            kk = act[j]
            f, fn, gnew, g0 = F[kk], Ft[e], gtn[e], gn[j]
            sn, pr_j, gs_j, dlt = snorm[j], prered[j], gs[j], dl[j]
            if first[kk]:
                dlt = min(dlt, sn)
                first[kk] = False
            judged_by_f = True
            if not (np.isfinite(fn) and np.isfinite(gnew)):
                accept = False
                dlt = _SIGMA1 * min(dlt, sn)
            elif not by_grad[kk] and pr_j > _ROUND_REGIME * _F_ROUND * (abs(f) + 1.0):
                # TRON's ratio test, with liblinear's interpolated step factor
                actred = f - fn
                curv = fn - f - gs_j
                a = _SIGMA3 if curv <= 0 else max(_SIGMA1, -0.5 * (gs_j / curv))
                if actred < _ETA0 * pr_j:
                    # rejected; after rejections in a row, shrink faster (a step far too
                    # long, e.g. the first Newton step of a loss with no curvature at
                    # w = 0, otherwise costs a dozen trial points)
                    dlt = min(a * sn, _SIGMA2 * dlt) * _SIGMA1 ** min(int(n_reject[kk]), 2)
                elif actred < _ETA1 * pr_j:
                    dlt = max(_SIGMA1 * dlt, min(a * sn, _SIGMA2 * dlt))
                elif actred < _ETA2 * pr_j:
                    dlt = max(_SIGMA1 * dlt, min(a * sn, _SIGMA3 * dlt))
                elif boundary[j]:
                    dlt = _SIGMA3 * dlt
                else:
                    dlt = max(dlt, min(a * sn, _SIGMA3 * dlt))
                accept = actred > _ETA0 * pr_j
            else:
                # f cannot tell: judge the step by the gradient norm, from now on
                # (a problem this close to its minimizer stays there; switching back
                # to f as the radius grows again would let f's noise reject good steps)
                judged_by_f = False
                by_grad[kk] = True
                pred_g = g0 - rnorm[j]         # decrease of ||g|| the linear model predicts
                if gnew <= 0.5 * g0 or (gnew < g0 and g0 - gnew >= _ETA2 * pred_g > 0):
                    accept = True
                    dlt = _SIGMA3 * dlt if boundary[j] else max(dlt, sn)
                elif gnew < g0:
                    accept = True
                    dlt = max(_SIGMA1 * dlt, min(sn, dlt))
                else:
                    accept = False
                    dlt = _SIGMA2 * min(dlt, sn)
            if not accept and np.isfinite(gnew) and np.isfinite(fn) and gnew <= tol:
                accept = True          # meets tol: the answer, whatever f's noise says
            delta[kk] = dlt
            if accept:
                n_reject[kk] = 0
                W[kk] = Wt[j]
                F[kk] = fn
                G[kk] = Gt[e]
                gnorm[kk] = gnew
                n_iter[kk] += 1
                if gnew <= tol:
                    status[kk] = 1
                    continue
                if n_iter[kk] >= max_iter:
                    status[kk] = 2
                    continue
                moved.append(kk)
            else:
                n_reject[kk] += 1
                if n_reject[kk] >= _MAX_REJECT:
                    status[kk] = 3
                    continue
            # stall watch in the gradient-judged regime
            if judged_by_f:
                stall_ref[kk] = gnorm[kk]
                n_stall[kk] = 0
            elif gnorm[kk] <= 0.5 * stall_ref[kk]:
                stall_ref[kk] = gnorm[kk]
                n_stall[kk] = 0
            elif dlt <= dl[j]:              # (a growing radius is progress too)
                n_stall[kk] += 1
                if n_stall[kk] >= _MAX_STALL:
                    status[kk] = 3
                    continue
        if M is not None and moved:
            mv = np.asarray(moved, dtype=np.intp)
            M[mv] = call_diag(W[mv], mv)

    return W, F, n_iter, gnorm, status
