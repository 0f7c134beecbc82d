# cython: language_level=3
"""Fused, batched objective kernels.

For k weight vectors W (k, d) at once, one pass over X computes
    J_k(w) = (1/n) sum_i phi(y_i w.x_i) + (l2_k / 2) ||w||^2 + B_k.w / n
and its gradient, or Hessian-vector products H_k(w) v_k.  Rows are read in
blocks of DPERM_ROW_BLOCK while they sit in L1; each thread owns a fixed,
contiguous range of rows and its own accumulators, and the per-thread partial
sums are added in thread order, so results do not depend on scheduling.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.stdlib cimport calloc, free
from libc.string cimport memset

from dperm._core._rows cimport (
    floating, row_dot, rows_axpy, row_syr, DPERM_ROW_BLOCK,
    dperm_openmp_enabled, dperm_max_threads)
from dperm._core._losses cimport loss_value_deriv, loss_second

cnp.import_array()


def openmp_enabled():
    """True when the kernels were compiled with OpenMP."""
    return bool(dperm_openmp_enabled())


def max_threads():
    """Threads OpenMP would use by default (1 without OpenMP)."""
    return dperm_max_threads()


cdef inline Py_ssize_t _threads_for(Py_ssize_t n, int n_threads) noexcept nogil:
    # At least a few blocks of rows per thread; never more threads than asked.
    cdef Py_ssize_t t = n_threads if n_threads > 0 else 1
    cdef Py_ssize_t cap = n // (4 * DPERM_ROW_BLOCK)
    if cap < 1:
        cap = 1
    return t if t < cap else cap


cdef int objective_pass(
    int mode, const floating* X, const double* y, Py_ssize_t n, Py_ssize_t d,
    int loss, double h, const double* W, const double* V, const double* l2,
    const double* B, const Py_ssize_t* idx, Py_ssize_t m,
    double* F, double* G, int n_threads) noexcept nogil:
    """One pass over X for the m problems idx[0..m).

    mode PASS_VALUE_GRAD: F[idx[j]] = J(W[idx[j]]), G[idx[j]] = grad J.
    mode PASS_HESS_VEC:   G[idx[j]] = H(W[idx[j]]) V[idx[j]] (F untouched).
    B may be NULL (no linear term).  Returns -1 if memory runs out.
    """
    cdef Py_ssize_t nt = _threads_for(n, n_threads)
    cdef Py_ssize_t RB = DPERM_ROW_BLOCK
    # per thread: m*d gradient accumulators, m loss sums, RB*m coefficients
    cdef Py_ssize_t per = m * d + m + RB * m
    cdef double* buf = <double*> calloc(nt * per, sizeof(double))
    if buf == NULL:
        return -1
    cdef Py_ssize_t t, i0, i1, i, r, nr, j, p, kk
    cdef double* gacc
    cdef double* lacc
    cdef double* coef
    cdef const floating* xr
    cdef const double* wj
    cdef const double* vj
    cdef double z, s, dphi, acc, inv_n = 1.0 / n

    for t in prange(nt, nogil=True, schedule='static', num_threads=nt):
        gacc = buf + t * per
        lacc = gacc + m * d
        coef = lacc + m
        i0 = (t * n) // nt
        i1 = ((t + 1) * n) // nt
        i = i0
        while i < i1:
            nr = i1 - i
            if nr > RB:
                nr = RB
            # margins and loss derivatives for this block, all problems
            for r in range(nr):
                xr = X + (i + r) * d
                for j in range(m):
                    kk = idx[j]
                    wj = W + kk * d
                    z = y[i + r] * row_dot(xr, wj, d)
                    if mode == PASS_VALUE_GRAD:
                        dphi = 0.0   # assigned here so prange makes it thread-private
                        lacc[j] += loss_value_deriv(loss, z, h, &dphi)
                        coef[j * RB + r] = dphi * y[i + r]
                    else:
                        vj = V + kk * d
                        coef[j * RB + r] = loss_second(loss, z, h) * row_dot(xr, vj, d)
            # accumulate the block into each problem's gradient (block still in L1)
            for j in range(m):
                rows_axpy(X + i * d, nr, coef + j * RB, gacc + j * d, d)
            i = i + nr

    # fixed-order reduction over threads, then the regularizer and linear terms
    for j in range(m):
        kk = idx[j]
        wj = W + kk * d
        if mode == PASS_VALUE_GRAD:
            acc = 0.0
            for t in range(nt):
                acc = acc + buf[t * per + m * d + j]
            s = 0.0
            z = 0.0
            for p in range(d):
                s = s + wj[p] * wj[p]
                if B != NULL:
                    z = z + B[kk * d + p] * wj[p]
            F[kk] = acc * inv_n + 0.5 * l2[kk] * s + z * inv_n
        for p in range(d):
            acc = 0.0
            for t in range(nt):
                acc = acc + buf[t * per + j * d + p]
            if mode == PASS_VALUE_GRAD:
                acc = acc * inv_n + l2[kk] * wj[p]
                if B != NULL:
                    acc = acc + B[kk * d + p] * inv_n
            else:
                acc = acc * inv_n + l2[kk] * V[kk * d + p]
            G[kk * d + p] = acc
    free(buf)
    return 0


cdef int hessian_pass(const floating* X, const double* y, Py_ssize_t n, Py_ssize_t d,
                      int loss, double h, const double* w, double l2, double* H,
                      int n_threads) noexcept nogil:
    """Full d x d Hessian at one w (O(n d^2): meant for small d)."""
    cdef Py_ssize_t nt = _threads_for(n, n_threads)
    cdef double* buf = <double*> calloc(nt * d * d, sizeof(double))
    if buf == NULL:
        return -1
    cdef Py_ssize_t t, i, p, q
    cdef double z, acc
    cdef const floating* xr
    for t in prange(nt, nogil=True, schedule='static', num_threads=nt):
        for i in range((t * n) // nt, ((t + 1) * n) // nt):
            xr = X + i * d
            z = y[i] * row_dot(xr, w, d)
            row_syr(xr, loss_second(loss, z, h), buf + t * d * d, d)
    for p in range(d):
        for q in range(p, d):
            acc = 0.0
            for t in range(nt):
                acc = acc + buf[t * d * d + p * d + q]
            acc = acc / n
            if p == q:
                acc = acc + l2
            H[p * d + q] = acc
            H[q * d + p] = acc
    free(buf)
    return 0


# ----------------------------------------------------------------------------
# Python entry points (inputs already validated by dperm.erm / dperm.losses).

def value_grad(const floating[:, ::1] X, const double[::1] y, const double[:, ::1] W,
               const double[::1] l2, B, int loss, double h, int n_threads):
    """Objective values (k,) and gradients (k, d) for every row of W."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], k = W.shape[0]
    cdef cnp.ndarray[double, ndim=1] F = np.zeros(k)
    cdef cnp.ndarray[double, ndim=2] G = np.zeros((k, d))
    cdef Py_ssize_t[::1] idx = np.arange(k, dtype=np.intp)
    cdef const double[:, ::1] Bv
    cdef const double* Bp = NULL
    if B is not None:
        Bv = B
        Bp = &Bv[0, 0]
    cdef int rc
    with nogil:
        rc = objective_pass(PASS_VALUE_GRAD, &X[0, 0], &y[0], n, d, loss, h, &W[0, 0],
                            NULL, &l2[0], Bp, &idx[0], k, <double*> F.data,
                            <double*> G.data, n_threads)
    if rc != 0:
        raise MemoryError("objective_pass: out of memory")
    return F, G


def hess_vec(const floating[:, ::1] X, const double[::1] y, const double[:, ::1] W,
             const double[:, ::1] V, const double[::1] l2, int loss, double h, int n_threads):
    """Hessian-vector products H(W[k]) V[k], shape (k, d), in one pass over X."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], k = W.shape[0]
    cdef cnp.ndarray[double, ndim=2] G = np.zeros((k, d))
    cdef double dummy = 0.0
    cdef Py_ssize_t[::1] idx = np.arange(k, dtype=np.intp)
    cdef int rc
    with nogil:
        rc = objective_pass(PASS_HESS_VEC, &X[0, 0], &y[0], n, d, loss, h, &W[0, 0],
                            &V[0, 0], &l2[0], NULL, &idx[0], k, &dummy,
                            <double*> G.data, n_threads)
    if rc != 0:
        raise MemoryError("objective_pass: out of memory")
    return G


def hessian(const floating[:, ::1] X, const double[::1] y, const double[:, ::1] W,
            const double[::1] l2, int loss, double h, int n_threads):
    """Full Hessians, shape (k, d, d)."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], k = W.shape[0], j
    cdef cnp.ndarray[double, ndim=3] H = np.zeros((k, d, d))
    cdef int rc = 0
    for j in range(k):
        with nogil:
            rc = hessian_pass(&X[0, 0], &y[0], n, d, loss, h, &W[j, 0], l2[j],
                              (<double*> H.data) + j * d * d, n_threads)
        if rc != 0:
            raise MemoryError("hessian_pass: out of memory")
    return H


def per_sample(int loss, const double[::1] z, double h):
    """phi(z), phi'(z), phi''(z) elementwise (for tests and audits)."""
    cdef Py_ssize_t i, n = z.shape[0]
    cdef cnp.ndarray[double, ndim=1] v = np.empty(n)
    cdef cnp.ndarray[double, ndim=1] d1 = np.empty(n)
    cdef cnp.ndarray[double, ndim=1] d2 = np.empty(n)
    cdef double dphi
    for i in range(n):
        v[i] = loss_value_deriv(loss, z[i], h, &dphi)
        d1[i] = dphi
        d2[i] = loss_second(loss, z[i], h)
    return v, d1, d2
