# cython: language_level=3
"""Batched L-BFGS under nogil.

k independent problems (the same X, y and loss; their own regularization,
linear term and start) advance in lockstep: every iteration of the outer loop
is ONE pass over X that evaluates each still-active problem at its current
trial point.  Each problem owns its history (memory m) and its backtracking
line search; a problem leaves the pass when it converges, exhausts max_iter,
or its line search fails.

Line search: Armijo backtracking with safeguarded quadratic interpolation.
Close to the optimum, f changes by less than its rounding error, so a step is
also accepted under Hager & Zhang's approximate Wolfe condition (f not above
f0 by more than a rounding-sized amount and the directional derivative reduced
in magnitude); this is what lets the solver reach gradient norms near 1e-12.
"""
import numpy as np
cimport numpy as cnp
from libc.math cimport sqrt, fabs, isfinite
from libc.string cimport memcpy

from dperm._core._objective cimport Data, data_pass, PASS_VALUE_GRAD
from dperm._core._objective import check_loss_id

cnp.import_array()

cdef enum:
    ST_ACTIVE = 0
    ST_CONVERGED = 1
    ST_MAX_ITER = 2
    ST_LINE_SEARCH = 3

# the messages of these codes: dperm.optim.status.LBFGS_STATUS

cdef double C1 = 1e-4          # Armijo constant
cdef double AW_HI = -0.8       # approximate Wolfe: (2*delta - 1) with delta = 0.1
cdef double AW_LO = 0.9        # approximate Wolfe: sigma
cdef int MAX_LS = 40


cdef inline double _dot(const double* a, const double* b, Py_ssize_t d) noexcept nogil:
    cdef double s = 0.0
    cdef Py_ssize_t p
    for p in range(d):
        s += a[p] * b[p]
    return s


cdef inline double _steepest(Py_ssize_t d, double gn, const double* w, const double* g,
                             double* p, double* wt, double* step) noexcept nogil:
    """p = -g, first trial point w + step p with a step of length at most 1; returns g.p."""
    cdef Py_ssize_t q
    step[0] = 1.0 / gn if gn > 1.0 else 1.0
    for q in range(d):
        p[q] = -g[q]
        wt[q] = w[q] + step[0] * p[q]
    return -gn * gn


cdef void _direction(Py_ssize_t d, Py_ssize_t mem, Py_ssize_t count, Py_ssize_t head,
                     const double* S, const double* Y, const double* rho,
                     const double* g, double* p, double* alpha_buf) noexcept nogil:
    """p = -H g by the two-loop recursion; history slot of age a is (head - 1 - a) mod mem."""
    cdef Py_ssize_t a, slot, q
    cdef double al, be, gamma
    for q in range(d):
        p[q] = -g[q]
    for a in range(count):
        slot = (head - 1 - a + mem) % mem
        al = rho[slot] * _dot(S + slot * d, p, d)
        alpha_buf[a] = al
        for q in range(d):
            p[q] -= al * Y[slot * d + q]
    if count > 0:
        slot = (head - 1 + mem) % mem
        gamma = 1.0 / (rho[slot] * _dot(Y + slot * d, Y + slot * d, d))
        for q in range(d):
            p[q] *= gamma
    a = count - 1
    while a >= 0:
        slot = (head - 1 - a + mem) % mem
        be = rho[slot] * _dot(Y + slot * d, p, d)
        for q in range(d):
            p[q] += (alpha_buf[a] - be) * S[slot * d + q]
        a -= 1


cdef int _call_oracle(object oracle, object W, object active, Py_ssize_t m, object F,
                      object G, list err) noexcept:
    """The oracle path's pass: F[idx], G[idx] = oracle(W[idx], idx) for idx = active[:m].
    Called with the GIL held; an exception is kept in err (returns -2)."""
    try:
        idx = np.array(active[:m], dtype=np.intp)
        Fo, Go = oracle(np.ascontiguousarray(W[idx]), idx)
        F[idx] = np.asarray(Fo, dtype=np.float64).reshape(m)
        G[idx] = np.asarray(Go, dtype=np.float64).reshape(m, G.shape[1])
        return 0
    except BaseException as exc:
        err.append(exc)
        return -2


def lbfgs(X, int loss, double h,
          double[:, ::1] W0, const double[::1] l2, B, double tol, int max_iter,
          int memory, int n_threads):
    """Minimize k objectives from starts W0 (k, d).

    X is a Data (the compiled pass over local rows, without the GIL), or an
    oracle: a callable oracle(W_block (m, d), idx (m,)) -> (F (m,), G (m, d)) giving
    the whole objective (loss, l2 and linear terms: l2 and B are then ignored here),
    called with the GIL held once per pass -- a distributed objective, say.  The
    line search and the history are the same code either way.

    Returns coef (k, d), fun (k,), n_iter (k,), grad_norm (k,), status (k,)
    where status is 1 converged, 2 max_iter, 3 line search failure.
    """
    cdef Data data = X if isinstance(X, Data) else None
    if data is not None:
        check_loss_id(loss)
    oracle = None if data is not None else X
    if oracle is not None and not callable(oracle):
        raise TypeError("lbfgs: X must be a Data or an oracle callable")
    cdef bint use_oracle = oracle is not None
    cdef Py_ssize_t d = data.view.d if data is not None else W0.shape[1], k = W0.shape[0]
    cdef list err = []
    cdef Py_ssize_t mem = memory if memory > 0 else 1
    cdef cnp.ndarray[double, ndim=2] W_np = np.array(W0, dtype=np.float64, order="C", copy=True)
    cdef double[:, ::1] W = W_np
    Wt_np = np.array(W0, dtype=np.float64, order="C", copy=True)
    cdef double[:, ::1] Wt = Wt_np
    G_np = np.zeros((k, d))
    cdef double[:, ::1] G = G_np
    Gt_np = np.zeros((k, d))
    cdef double[:, ::1] Gt = Gt_np
    cdef double[:, ::1] P = np.zeros((k, d))
    cdef double[:, ::1] S = np.zeros((k, mem * d))
    cdef double[:, ::1] Yh = np.zeros((k, mem * d))
    cdef double[:, ::1] rho = np.zeros((k, mem))
    cdef double[::1] abuf = np.zeros(mem)
    cdef cnp.ndarray[double, ndim=1] F_np = np.zeros(k)
    cdef double[::1] F = F_np
    Ft_np = np.zeros(k)
    cdef double[::1] Ft = Ft_np
    cdef double[::1] step = np.ones(k)
    cdef double[::1] gp = np.zeros(k)
    cdef cnp.ndarray[cnp.intp_t, ndim=1] iters_np = np.zeros(k, dtype=np.intp)
    cdef Py_ssize_t[::1] iters = iters_np
    cdef Py_ssize_t[::1] nls = np.zeros(k, dtype=np.intp)
    cdef Py_ssize_t[::1] count = np.zeros(k, dtype=np.intp)
    cdef Py_ssize_t[::1] head = np.zeros(k, dtype=np.intp)
    cdef cnp.ndarray[cnp.intp_t, ndim=1] status_np = np.zeros(k, dtype=np.intp)
    cdef Py_ssize_t[::1] status = status_np
    cdef cnp.ndarray[double, ndim=1] gnorm_np = np.zeros(k)
    cdef double[::1] gnorm = gnorm_np
    active_np = np.arange(k, dtype=np.intp)
    cdef Py_ssize_t[::1] active = active_np
    cdef const double[:, ::1] Bv
    cdef const double* Bp = NULL
    if B is not None:
        Bv = B
        Bp = &Bv[0, 0]
    cdef Py_ssize_t m, j, kk, q, slot
    cdef double t, gtp, sy, yy, ft, f0, tnew, denom, gn, ftol
    cdef bint accept
    cdef int rc = 0

    with nogil:
        # the first pass evaluates every start
        m = k
        if use_oracle:
            with gil:
                rc = _call_oracle(oracle, W_np, active_np, m, F_np, G_np, err)
        else:
            rc = data_pass(PASS_VALUE_GRAD, &data.view, loss, h, &W[0, 0],
                           NULL, &l2[0], Bp, &active[0], m, &F[0], &G[0, 0], n_threads, NULL)
        for kk in range(k):
            gn = sqrt(_dot(&G[kk, 0], &G[kk, 0], d))
            gnorm[kk] = gn
            if gn <= tol:
                status[kk] = ST_CONVERGED
            elif max_iter <= 0:
                status[kk] = ST_MAX_ITER
            else:
                gp[kk] = _steepest(d, gn, &W[kk, 0], &G[kk, 0], &P[kk, 0], &Wt[kk, 0], &step[kk])

        while rc == 0:
            m = 0
            for kk in range(k):
                if status[kk] == ST_ACTIVE:
                    active[m] = kk
                    m += 1
            if m == 0:
                break
            if use_oracle:
                with gil:
                    rc = _call_oracle(oracle, Wt_np, active_np, m, Ft_np, Gt_np, err)
            else:
                rc = data_pass(PASS_VALUE_GRAD, &data.view, loss, h, &Wt[0, 0],
                               NULL, &l2[0], Bp, &active[0], m, &Ft[0], &Gt[0, 0], n_threads, NULL)
            for j in range(m):
                kk = active[j]
                t = step[kk]
                ft = Ft[kk]
                f0 = F[kk]
                gtp = _dot(&Gt[kk, 0], &P[kk, 0], d)
                # rounding scale of f: below it an Armijo "decrease" is noise, and
                # accepting such steps lets a problem creep along for max_iter
                ftol = 1e-13 * (fabs(f0) + 1.0)
                if -C1 * t * gp[kk] > ftol:
                    accept = isfinite(ft) and ft <= f0 + C1 * t * gp[kk]
                else:
                    # approximate Wolfe.  f's rounding error can exceed ftol (it grows
                    # with n, and with terms that cancel: b.w/n = -2.1 against f = -0.47),
                    # while the gradient stays accurate to ~1e-14; so f within ftol OR
                    # a smaller gradient norm, beside the slope conditions (which, f
                    # being convex, bound the rise f(t) - f0 <= t g(t).p anyway)
                    accept = (isfinite(ft) and AW_HI * gp[kk] >= gtp and gtp >= AW_LO * gp[kk]
                              and (ft <= f0 + ftol
                                   or _dot(&Gt[kk, 0], &Gt[kk, 0], d) < gnorm[kk] * gnorm[kk]))
                if not accept and isfinite(ft):
                    # a trial point that meets the tolerance is the answer (the
                    # objective is strongly convex): accept it whatever f's noise says
                    accept = _dot(&Gt[kk, 0], &Gt[kk, 0], d) <= tol * tol
                if not accept:
                    nls[kk] += 1
                    if nls[kk] > MAX_LS:
                        if count[kk] == 0:
                            status[kk] = ST_LINE_SEARCH
                            continue
                        # a stale history can give a poor direction: restart once
                        # from steepest descent before giving up
                        count[kk] = 0
                        nls[kk] = 0
                        gp[kk] = _steepest(d, gnorm[kk], &W[kk, 0], &G[kk, 0], &P[kk, 0],
                                           &Wt[kk, 0], &step[kk])
                        continue
                    if (-C1 * t * gp[kk] <= ftol and isfinite(ft) and ft <= f0 + ftol
                            and gtp < AW_LO * gp[kk]):
                        # below the rounding scale f cannot guide the step; the slope
                        # says it is still too short, so lengthen it
                        step[kk] = 2.0 * t
                        for q in range(d):
                            Wt[kk, q] = W[kk, q] + step[kk] * P[kk, q]
                        continue
                    # minimizer of the quadratic through f0, gp and ft, kept in [0.1t, 0.5t]
                    denom = 2.0 * (ft - f0 - gp[kk] * t)
                    tnew = 0.5 * t
                    if isfinite(ft) and denom > 0:
                        tnew = -gp[kk] * t * t / denom
                    if tnew < 0.1 * t:
                        tnew = 0.1 * t
                    if tnew > 0.5 * t:
                        tnew = 0.5 * t
                    step[kk] = tnew
                    for q in range(d):
                        Wt[kk, q] = W[kk, q] + tnew * P[kk, q]
                    continue
                # accept: s = Wt - W, y = Gt - G into the history (if curvature allows)
                nls[kk] = 0
                slot = head[kk]
                sy = 0.0
                yy = 0.0
                for q in range(d):
                    S[kk, slot * d + q] = Wt[kk, q] - W[kk, q]
                    Yh[kk, slot * d + q] = Gt[kk, q] - G[kk, q]
                    sy = sy + S[kk, slot * d + q] * Yh[kk, slot * d + q]
                    yy = yy + Yh[kk, slot * d + q] * Yh[kk, slot * d + q]
                if sy > 1e-16 * yy and yy > 0:
                    rho[kk, slot] = 1.0 / sy
                    head[kk] = (slot + 1) % mem
                    if count[kk] < mem:
                        count[kk] += 1
                memcpy(&W[kk, 0], &Wt[kk, 0], d * sizeof(double))
                memcpy(&G[kk, 0], &Gt[kk, 0], d * sizeof(double))
                F[kk] = ft
                iters[kk] += 1
                gn = sqrt(_dot(&G[kk, 0], &G[kk, 0], d))
                gnorm[kk] = gn
                if gn <= tol:
                    status[kk] = ST_CONVERGED
                    continue
                if iters[kk] >= max_iter:
                    status[kk] = ST_MAX_ITER
                    continue
                _direction(d, mem, count[kk], head[kk], &S[kk, 0], &Yh[kk, 0], &rho[kk, 0],
                           &G[kk, 0], &P[kk, 0], &abuf[0])
                gp[kk] = _dot(&G[kk, 0], &P[kk, 0], d)
                if not (gp[kk] < 0):
                    # not a descent direction: forget the history, go downhill
                    count[kk] = 0
                    for q in range(d):
                        P[kk, q] = -G[kk, q]
                    gp[kk] = -gn * gn
                step[kk] = 1.0
                for q in range(d):
                    Wt[kk, q] = W[kk, q] + P[kk, q]
    if rc == -2:
        raise err[0]
    if rc != 0:
        raise MemoryError("lbfgs: out of memory in the objective pass")
    return W_np, F_np, iters_np, gnorm_np, status_np
