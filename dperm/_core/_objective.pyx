# cython: language_level=3
"""Fused, batched objective kernels.

For k weight vectors W (k, d) at once, one pass over X computes
    J_k(w) = (1/n) sum_i phi(y_i w.x_i) + (l2_k / 2) ||w||^2 + B_k.w / n
and its gradient, or Hessian-vector products H_k(w) v_k.  Rows are read in
blocks that stay in L1 between the margins and the gradient update; each
thread owns a fixed, contiguous range of rows and its own accumulators, and
the per-thread partial sums are added in thread order, so results do not
depend on scheduling (nor, see _rows.h, on which problems share a pass).
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy

from dperm._core._rows cimport (
    floating, row_dot, row_syr, read_rows, dperm_openmp_enabled, dperm_max_threads,
    dperm_team, dperm_set_team_limit,
    dperm_vector_width, dperm_padded_dim, dperm_rows_per_block, dperm_block_dots,
    dperm_block_gemm, dperm_loss_vd, dperm_loss_d2, dperm_add_rows, dperm_mul,
    dperm_softmax_block, dperm_sub_labels, dperm_loss_known, DPERM_LOSS_LOGISTIC,
    DPERM_LOSS_HUBER, DPERM_LOSS_SMOOTH_HINGE, DPERM_LOSS_PSEUDO_HUBER, DPERM_N_LOSSES)
from dperm._core._losses cimport loss_second, residual
from libc.stdint cimport int32_t, int64_t

cdef extern from "_csr.h" nogil:
    int dperm_csr_block_rows
    int dperm_csr_pass(int values_f32, int index_i64, int mode, const void* data,
                       const void* ind, const void* indptr, const double* s, Py_ssize_t n,
                       Py_ssize_t dx, Py_ssize_t d, const double* icpt, int loss, double h,
                       const double* W, const double* V, const double* l2, const double* B,
                       const Py_ssize_t* idx, Py_ssize_t m, double* F, double* G, int nt,
                       double* curv, const int64_t* cls, Py_ssize_t K, const double* lab)
    void dperm_csr_scan(int values_f32, int index_i64, const void* data, const void* ind,
                        const void* indptr, Py_ssize_t n, int64_t d, int64_t* out,
                        int nt)

# The block kernels of the row-access seam (declared here; _rows.pxd holds the
# single-row helpers used by the full Hessian).
cnp.import_array()


#: the loss ids as compiled into these kernels (_rows.h's enum), by the name dperm/losses.py
#: declares each loss under; tests/test_losses.py checks the two tables agree
KERNEL_LOSS_IDS = {
    "logistic": DPERM_LOSS_LOGISTIC,
    "huber": DPERM_LOSS_HUBER,
    "smooth_hinge": DPERM_LOSS_SMOOTH_HINGE,
    "pseudo_huber": DPERM_LOSS_PSEUDO_HUBER,
}
#: how many loss ids the kernels know (0 .. N_KERNEL_LOSSES - 1)
N_KERNEL_LOSSES = DPERM_N_LOSSES


def check_loss_id(int loss):
    """ValueError unless `loss` is a kernel loss id (the C dispatchers would give NaN)."""
    if not dperm_loss_known(loss):
        raise ValueError(f"loss: {loss} is not a kernel loss id; the kernels know "
                         f"{sorted(KERNEL_LOSS_IDS.items(), key=lambda kv: kv[1])} "
                         f"(dperm.losses.LOSSES)")


def set_team_limit(int limit):
    """The largest OpenMP team a pass starts from now on (0: no limit); returns the
    previous limit.  Results do not depend on it (a pass's parts are set by n_threads
    and the data's shape, and summed in order): it only keeps a busy machine's
    descheduled threads from being waited for (dperm.data.validation.team_limit)."""
    return dperm_set_team_limit(limit)


def openmp_enabled():
    """True when the kernels were compiled with OpenMP."""
    return bool(dperm_openmp_enabled())


def max_threads():
    """Threads OpenMP would use by default (1 without OpenMP)."""
    return dperm_max_threads()


def _set_csr_block_rows(int rows):
    """Tuning knob for benchmarks: rows per block of the CSR pass (0: default).
    Any value gives bit-identical results; returns the previous value."""
    global dperm_csr_block_rows
    old = dperm_csr_block_rows
    dperm_csr_block_rows = rows if rows > 0 else 0
    return old


def vector_width():
    """float64 lanes of the block kernels in this build (8 AVX-512, 4 AVX2, 1 scalar)."""
    return dperm_vector_width()


cdef enum:
    # Per-thread work below this many entries of X costs more in fork/join (and,
    # on a busy machine, in waiting for a descheduled thread) than it saves.
    MIN_ENTRIES_PER_THREAD = 65536


cdef inline Py_ssize_t _threads_for(Py_ssize_t n, Py_ssize_t d, int n_threads) noexcept nogil:
    # Depends on the data's shape and n_threads only (never on the batch), so a
    # problem's result does not depend on which other problems share its pass.
    cdef Py_ssize_t t = n_threads if n_threads > 0 else 1
    cdef Py_ssize_t cap = (n * d) // MIN_ENTRIES_PER_THREAD
    if cap > n // 4:
        cap = n // 4
    if cap < 1:
        cap = 1
    return t if t < cap else cap


cdef inline Py_ssize_t _read_block(const floating* X, const double* s, const double* icpt,
                                   Py_ssize_t i, Py_ssize_t nr, Py_ssize_t i1, Py_ssize_t rb,
                                   Py_ssize_t dx, Py_ssize_t d, double* xb,
                                   Py_ssize_t ldx) noexcept nogil:
    """Rows i .. i+nr of X, each times its weight s (a label, or a scale), into the block
    buffer xb, with the intercept column's s icpt when d > dx.  Returns the bytes of
    this thread's next block (rows up to i1, at most rb of them): what to prefetch."""
    cdef Py_ssize_t r, nxt
    # rows times their labels: margins y w.x come out of the dots directly
    read_rows(X + i * dx, s + i, nr, dx, xb, ldx)
    if d > dx:
        for r in range(nr):
            xb[r * ldx + dx] = s[i + r] * icpt[i + r]
    nxt = i1 - i - nr
    if nxt > rb:
        nxt = rb
    return nxt * dx * <Py_ssize_t> sizeof(floating)


cdef int objective_pass(
        int mode, const floating* X, const double* y, Py_ssize_t n, Py_ssize_t dx, Py_ssize_t d,
        const double* icpt, int loss, double h, const double* W, const double* V, const double* l2,
        const double* B, const Py_ssize_t* idx, Py_ssize_t m,
        double* F, double* G, int n_threads, double* curv, const double* lab) noexcept nogil:
    """One pass over X for the m problems idx[0..m).

    mode PASS_VALUE_GRAD: F[idx[j]] = J(W[idx[j]]), G[idx[j]] = grad J; with curv
        non-NULL also curv[j*n + i] = phi''(margin of row i under problem j), the
        curvature a later Hessian-vector pass at the same point can reuse.
    mode PASS_HESS_VEC:   G[idx[j]] = H(W[idx[j]]) V[idx[j]] (F untouched); with curv
        non-NULL the curvatures are read from it (W is then not read at all), which
        saves the margins and the loss derivatives: what a Newton-CG inner loop needs.
    B may be NULL (no linear term).  lab: NULL for a margin loss; for a regression
    loss the (n,) labels, and the loss is taken of the residual s x.w - lab (s = 1, or
    the row's scale).  Returns -1 if memory runs out.
    X has dx columns; the model has d = dx (or dx + 1: row i then ends with the
    value icpt[i], the intercept's column, which exists only in the row buffer).

    Per block of rb rows: margins Z = X_blk W^T for all problems (register
    tiles, see _rows.h), the losses and their derivatives vectorized over the
    block, then the gradient update from the same rows while they are in L1.
    """
    cdef Py_ssize_t nt = _threads_for(n, d, n_threads)
    cdef Py_ssize_t rb = dperm_rows_per_block(d, m)
    cdef Py_ssize_t ldx = dperm_padded_dim(d)
    # per thread: the row block (rb*ldx), m*ldx gradient accumulators, m loss sums
    # and 4 scratch blocks of rb*m; a multiple of 8 doubles so every thread's
    # arrays start on a cache line (and no two threads write to one line)
    cdef Py_ssize_t per = ((rb * ldx + m * ldx + m + 4 * rb * m) + 7) // 8 * 8
    # calloc: the padding columns of the row block and weights must be zero
    cdef double* raw = <double*> calloc(nt * per + 8 + 2 * m * ldx, sizeof(double))
    if raw == NULL:
        return -1
    cdef double* buf = <double*> ((<size_t> raw + 63) & ~(<size_t> 63))
    # the active weight (and direction) vectors, packed with the block's row stride
    cdef double* Wp = buf + nt * per
    cdef double* Vp = Wp + m * ldx
    cdef Py_ssize_t t, i0, i1, i, r, nr, j, p, kk, cnt, pfb, pfh
    cdef const char* pfp
    cdef double* xb
    cdef double* gacc
    cdef double* lacc
    cdef double* zb
    cdef double* z2
    cdef double* vb
    cdef double* cb
    cdef const double* wj
    cdef double s, z, acc, inv_n = 1.0 / n

    for j in range(m):
        memcpy(Wp + j * ldx, W + idx[j] * d, d * sizeof(double))
        if mode == PASS_HESS_VEC:
            memcpy(Vp + j * ldx, V + idx[j] * d, d * sizeof(double))

    for t in prange(nt, nogil=True, schedule='static', num_threads=dperm_team(nt)):
        xb = buf + t * per
        gacc = xb + rb * ldx
        lacc = gacc + m * ldx
        zb = lacc + m
        z2 = zb + rb * m
        vb = z2 + rb * m
        cb = vb + rb * m
        i0 = (t * n) // nt
        i1 = ((t + 1) * n) // nt
        i = i0
        while i < i1:
            nr = i1 - i
            if nr > rb:
                nr = rb
            cnt = nr * m
            pfb = _read_block(X, y, icpt, i, nr, i1, rb, dx, d, xb, ldx)
            # the next block of this thread's rows is prefetched, half during the
            # margins and half during the gradient update
            pfh = pfb // 128 * 64
            pfp = <const char*> (X + (i + nr) * dx)
            if mode == PASS_VALUE_GRAD:
                dperm_block_dots(xb, nr, d, ldx, Wp, m, zb, pfp, pfh)
                if lab != NULL:
                    dperm_sub_labels(zb, lab + i, nr, m, m)
                # grad of phi(y w.x) is phi' y x: the coefficient of the signed row
                dperm_loss_vd(loss, h, cnt, zb, vb, cb)
                dperm_add_rows(vb, nr, m, lacc)
                if curv != NULL:
                    dperm_loss_d2(loss, h, cnt, zb, z2)
                    for r in range(nr):
                        for j in range(m):
                            curv[j * n + i + r] = z2[r * m + j]
            elif curv != NULL:
                # cached curvature: phi'' (yx.v) (yx), no margins of W needed
                dperm_block_dots(xb, nr, d, ldx, Vp, m, z2, pfp, pfh)
                for r in range(nr):
                    for j in range(m):
                        cb[r * m + j] = curv[j * n + i + r] * z2[r * m + j]
            else:
                dperm_block_dots(xb, nr, d, ldx, Wp, m, zb, pfp, pfh)
                if lab != NULL:
                    dperm_sub_labels(zb, lab + i, nr, m, m)
                # phi'' (x.v) x = phi'' (yx.v) (yx)
                dperm_block_dots(xb, nr, d, ldx, Vp, m, z2, NULL, 0)
                dperm_loss_d2(loss, h, cnt, zb, cb)
                dperm_mul(cb, z2, cnt)
            dperm_block_gemm(xb, nr, d, ldx, cb, m, gacc, pfp + pfh, pfb - pfh)
            i = i + nr

    # fixed-order reduction over threads, then the regularizer and linear terms
    for j in range(m):
        kk = idx[j]
        wj = W + kk * d
        if mode == PASS_VALUE_GRAD:
            acc = 0.0
            for t in range(nt):
                acc = acc + buf[t * per + rb * ldx + m * ldx + j]
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
                acc = acc + buf[t * per + rb * ldx + j * ldx + p]
            if mode == PASS_VALUE_GRAD:
                acc = acc * inv_n + l2[kk] * wj[p]
                if B != NULL:
                    acc = acc + B[kk * d + p] * inv_n
            else:
                acc = acc * inv_n + l2[kk] * V[kk * d + p]
            G[kk * d + p] = acc
    free(raw)
    return 0


cdef int softmax_pass(const floating* X, const double* s, const int64_t* cls, Py_ssize_t n,
                      Py_ssize_t dx, Py_ssize_t d, const double* icpt, const double* W,
                      Py_ssize_t m, Py_ssize_t K, double* F, double* G,
                      int n_threads) noexcept nogil:
    """The data term of the multinomial (softmax) objective for m problems of K classes,
    as SUMS over rows (no 1/n, no penalty): for W (m, K, d) and row weights s,
        F[j] = sum_i [log sum_k e^{w_jk.x_i} - w_{j y_i}.x_i],
        G[j K + k] = sum_i (softmax_k - [k == y_i]) x_i,   x_i = s_i [X_i, icpt_i].
    The same blocks as objective_pass with m K weight vectors: margins by the register
    tiles, the softmax of a block at once (dperm_softmax_block), the gradient update
    from the rows while they are in L1; threads own fixed row ranges and are added
    in order, so results depend on neither scheduling nor the batch.
    Returns -1 if memory runs out."""
    cdef Py_ssize_t mK = m * K
    cdef Py_ssize_t nt = _threads_for(n, d, n_threads)
    cdef Py_ssize_t rb = dperm_rows_per_block(d, mK)
    cdef Py_ssize_t ldx = dperm_padded_dim(d)
    # per thread: rows, mK gradient accumulators, m loss sums, margins / coefficients /
    # scratch (rb mK each) and losses (rb m); whole cache lines per thread
    cdef Py_ssize_t per = ((rb * ldx + mK * ldx + m + 3 * rb * mK + rb * m) + 7) // 8 * 8
    cdef double* raw = <double*> calloc(nt * per + 8 + mK * ldx, sizeof(double))
    if raw == NULL:
        return -1
    cdef double* buf = <double*> ((<size_t> raw + 63) & ~(<size_t> 63))
    cdef double* Wp = buf + nt * per
    cdef Py_ssize_t t, i0, i1, i, nr, j, p, pfb, pfh
    cdef const char* pfp
    cdef double* xb
    cdef double* gacc
    cdef double* lacc
    cdef double* zb
    cdef double* cb
    cdef double* tb
    cdef double* vb
    cdef double acc
    for j in range(mK):
        memcpy(Wp + j * ldx, W + j * d, d * sizeof(double))
    for t in prange(nt, nogil=True, schedule='static', num_threads=dperm_team(nt)):
        xb = buf + t * per
        gacc = xb + rb * ldx
        lacc = gacc + mK * ldx
        zb = lacc + m
        cb = zb + rb * mK
        tb = cb + rb * mK
        vb = tb + rb * mK
        i0 = (t * n) // nt
        i1 = ((t + 1) * n) // nt
        i = i0
        while i < i1:
            nr = i1 - i
            if nr > rb:
                nr = rb
            pfb = _read_block(X, s, icpt, i, nr, i1, rb, dx, d, xb, ldx)
            pfh = pfb // 128 * 64
            pfp = <const char*> (X + (i + nr) * dx)
            dperm_block_dots(xb, nr, d, ldx, Wp, mK, zb, pfp, pfh)
            dperm_softmax_block(nr, m, K, zb, cls + i, vb, cb, tb)
            dperm_add_rows(vb, nr, m, lacc)
            dperm_block_gemm(xb, nr, d, ldx, cb, mK, gacc, pfp + pfh, pfb - pfh)
            i = i + nr
    for j in range(m):
        acc = 0.0
        for t in range(nt):
            acc = acc + buf[t * per + rb * ldx + mK * ldx + j]
        F[j] = acc
    for j in range(mK):
        for p in range(d):
            acc = 0.0
            for t in range(nt):
                acc = acc + buf[t * per + rb * ldx + j * ldx + p]
            G[j * d + p] = acc
    free(raw)
    return 0


cdef int hessian_pass(const floating* X, const double* y, Py_ssize_t n, Py_ssize_t d,
                      int loss, double h, const double* w, double l2, double* H,
                      int n_threads, const double* lab) noexcept nogil:
    """Full d x d Hessian at one w (O(n d^2): meant for small d); lab as in
    objective_pass (NULL: a margin loss)."""
    cdef Py_ssize_t nt = _threads_for(n, d, n_threads)
    cdef double* buf = <double*> calloc(nt * d * d, sizeof(double))
    if buf == NULL:
        return -1
    cdef Py_ssize_t t, i, p, q
    cdef double z, acc
    cdef const floating* xr
    for t in prange(nt, nogil=True, schedule='static', num_threads=dperm_team(nt)):
        for i in range((t * n) // nt, ((t + 1) * n) // nt):
            xr = X + i * d
            z = y[i] * row_dot(xr, w, d)
            if lab != NULL:
                z = residual(z, lab[i])
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


cdef class Data:
    """X (dense or CSR) and the signed row weights s (labels, +-1), as the kernels read them.

    Data(X, s, intercept=0): X a C-contiguous float32/float64 ndarray (numpy.memmap included:
    read in place), or a scipy.sparse CSR matrix/array with float32/float64 data
    and int32/int64 indices (indices and indptr of one dtype); s float64 (n,).
    Inputs must already be validated (dperm.data.validation.check_X): this class only
    holds references (so the buffers outlive every pass) and the raw pointers.
    intercept: None, or a float64 (n,) array: row i gains a last column of value
    intercept[i], virtually (the kernels add it as they read a row); the model then
    has d + 1 weights, and X -- a memory map, say -- is never copied for it.
    labels: None (a margin loss), or a float64 (n,) array: the labels of a regression
    loss, whose argument is then the residual s_i x_i.w - labels[i].
    """

    def __cinit__(self, X, s, intercept=None, labels=None):
        cdef const double[::1] sv = s
        cdef const double[:, ::1] xd
        cdef const float[:, ::1] xf
        cdef const double[::1] vd
        cdef const float[::1] vf
        cdef const int32_t[::1] i32, p32
        cdef const int64_t[::1] i64, p64
        self.s = s
        self.view.s = &sv[0]
        if isinstance(X, np.ndarray):
            self.values = X
            self.indices = None
            self.indptr = None
            self.view.kind = DATA_DENSE
            self.view.n = X.shape[0]
            self.view.d = X.shape[1]
            self.view.nnz = X.shape[0] * X.shape[1]
            self.view.index_i64 = 0
            if X.dtype == np.float32:
                xf = X
                self.view.values_f32 = 1
                self.view.values = &xf[0, 0]
            else:
                xd = X
                self.view.values_f32 = 0
                self.view.values = &xd[0, 0]
        else:
            n, d = X.shape
            self.values = X.data
            self.indices = X.indices
            self.indptr = X.indptr
            self.view.kind = DATA_CSR
            self.view.n = n
            self.view.d = d
            self.view.nnz = X.indptr[n]
            if X.data.dtype == np.float32:
                vf = X.data
                self.view.values_f32 = 1
                self.view.values = &vf[0] if vf.shape[0] > 0 else NULL
            else:
                vd = X.data
                self.view.values_f32 = 0
                self.view.values = &vd[0] if vd.shape[0] > 0 else NULL
            if X.indices.dtype == np.int64:
                i64 = X.indices
                p64 = X.indptr
                self.view.index_i64 = 1
                self.view.indices = &i64[0] if i64.shape[0] > 0 else NULL
                self.view.indptr = &p64[0]
            else:
                i32 = X.indices
                p32 = X.indptr
                self.view.index_i64 = 0
                self.view.indices = &i32[0] if i32.shape[0] > 0 else NULL
                self.view.indptr = &p32[0]
        if sv.shape[0] != self.view.n:
            raise ValueError("Data: s must have one entry per row of X")
        cdef const double[::1] iv
        self.view.dx = self.view.d
        self.view.icpt = NULL
        self.intercept = intercept
        if intercept is not None:
            iv = intercept
            if iv.shape[0] != self.view.n:
                raise ValueError("Data: intercept must have one entry per row of X")
            self.view.icpt = &iv[0]
            self.view.d = self.view.d + 1
        cdef const double[::1] lv
        self.view.lab = NULL
        self.labels = labels
        if labels is not None:
            lv = labels
            if lv.shape[0] != self.view.n:
                raise ValueError("Data: labels must have one entry per row of X")
            self.view.lab = &lv[0]

    @property
    def shape(self):
        """(n, d): d counts the virtual intercept column."""
        return (self.view.n, self.view.d)

    @property
    def nnz(self):
        """Stored entries (n*d for dense X)."""
        return self.view.nnz

    @property
    def is_sparse(self):
        return self.view.kind == DATA_CSR


cdef inline Py_ssize_t _csr_threads(const DataView* X, int n_threads) noexcept nogil:
    # CSR: threads by non-zeros, the same rule as the dense pass uses for entries
    cdef Py_ssize_t nt = n_threads if n_threads > 0 else 1
    if nt > X.nnz // MIN_ENTRIES_PER_THREAD:
        nt = X.nnz // MIN_ENTRIES_PER_THREAD
    if nt > X.n // 4:
        nt = X.n // 4
    if nt < 1:
        nt = 1
    return nt


cdef int data_pass(
        int mode, const DataView* X, int loss, double h, const double* W, const double* V,
        const double* l2, const double* B, const Py_ssize_t* idx, Py_ssize_t m,
        double* F, double* G, int n_threads, double* curv) noexcept nogil:
    """objective_pass on whatever X is: the one place that dispatches on storage."""
    cdef Py_ssize_t nt
    if X.kind == DATA_DENSE:
        if X.values_f32:
            return objective_pass(mode, <const float*> X.values, X.s, X.n, X.dx, X.d, X.icpt,
                                  loss, h, W, V, l2, B, idx, m, F, G, n_threads, curv, X.lab)
        return objective_pass(mode, <const double*> X.values, X.s, X.n, X.dx, X.d, X.icpt,
                              loss, h, W, V, l2, B, idx, m, F, G, n_threads, curv, X.lab)
    nt = _csr_threads(X, n_threads)
    return dperm_csr_pass(X.values_f32, X.index_i64, mode, X.values, X.indices, X.indptr, X.s,
                          X.n, X.dx, X.d, X.icpt, loss, h, W, V, l2, B, idx, m, F, G,
                          <int> nt, curv, NULL, 0, X.lab)


# ----------------------------------------------------------------------------
# Python entry points (inputs already validated by dperm.optim.erm / dperm.losses).

def value_grad(Data X, const double[:, ::1] W, const double[::1] l2, B, int loss, double h,
               int n_threads, double[:, ::1] curv=None):
    """Objective values (k,) and gradients (k, d) for every row of W, one pass over X.

    curv: None, or a (k, n) float64 array that receives phi''(margins) for a later
    hess_vec(..., curv=curv) at the same W (Newton-CG's inner loop)."""
    check_loss_id(loss)
    cdef Py_ssize_t d = X.view.d, k = W.shape[0]
    if W.shape[1] != d:
        raise ValueError("value_grad: W must have X's number of columns")
    cdef cnp.ndarray[double, ndim=1] F = np.zeros(k)
    cdef cnp.ndarray[double, ndim=2] G = np.zeros((k, d))
    cdef Py_ssize_t[::1] idx = np.arange(k, dtype=np.intp)
    cdef const double[:, ::1] Bv
    cdef const double* Bp = NULL
    if B is not None:
        Bv = B
        Bp = &Bv[0, 0]
    cdef double* cp = NULL
    if curv is not None:
        if curv.shape[0] != k or curv.shape[1] != X.view.n:
            raise ValueError("value_grad: curv must be (k, n)")
        cp = &curv[0, 0]
    cdef int rc
    with nogil:
        rc = data_pass(PASS_VALUE_GRAD, &X.view, loss, h, &W[0, 0], NULL, &l2[0], Bp,
                       &idx[0], k, <double*> F.data, <double*> G.data, n_threads, cp)
    if rc != 0:
        raise MemoryError("objective pass: out of memory")
    return F, G


def hess_vec(Data X, const double[:, ::1] W, const double[:, ::1] V, const double[::1] l2,
             int loss, double h, int n_threads, double[:, ::1] curv=None):
    """Hessian-vector products H(W[k]) V[k], shape (k, d), in one pass over X.

    curv: None, or the (k, n) curvatures value_grad wrote at these same W (then W
    is not read: the pass skips the margins and the loss derivatives)."""
    check_loss_id(loss)
    cdef Py_ssize_t d = X.view.d, k = W.shape[0]
    if W.shape[1] != d or V.shape[0] != k or V.shape[1] != d:
        raise ValueError("hess_vec: W and V must be (k, d) with X's d")
    cdef cnp.ndarray[double, ndim=2] G = np.zeros((k, d))
    cdef double dummy = 0.0
    cdef Py_ssize_t[::1] idx = np.arange(k, dtype=np.intp)
    cdef double* cp = NULL
    if curv is not None:
        if curv.shape[0] != k or curv.shape[1] != X.view.n:
            raise ValueError("hess_vec: curv must be (k, n)")
        cp = &curv[0, 0]
    cdef int rc
    with nogil:
        rc = data_pass(PASS_HESS_VEC, &X.view, loss, h, &W[0, 0], &V[0, 0], &l2[0], NULL,
                       &idx[0], k, &dummy, <double*> G.data, n_threads, cp)
    if rc != 0:
        raise MemoryError("objective pass: out of memory")
    return G


def softmax_sums(Data X, const int64_t[::1] y, const double[:, ::1] W, Py_ssize_t K,
                 int n_threads):
    """Multinomial data term as sums over the rows of X: W is (m K, d), problem j's
    class k in row j K + k; y (n,) class indices in [0, K).  Returns F (m,) and
    G (m K, d).  Dense X: softmax_pass; CSR: the CSR pass's softmax mode."""
    cdef Py_ssize_t d = X.view.d, mK = W.shape[0]
    if W.shape[1] != d or K < 2 or mK % K != 0 or mK == 0:
        raise ValueError("softmax_sums: W must be (m K, d) with X's d and K >= 2")
    if y.shape[0] != X.view.n:
        raise ValueError("softmax_sums: y must have one entry per row of X")
    cdef Py_ssize_t m = mK // K
    cdef cnp.ndarray[double, ndim=1] F = np.zeros(m)
    cdef cnp.ndarray[double, ndim=2] G = np.zeros((mK, d))
    cdef int rc
    cdef Py_ssize_t[::1] idx = np.arange(mK, dtype=np.intp)
    cdef double dummy = 0.0
    with nogil:
        if X.view.kind == DATA_CSR:
            rc = dperm_csr_pass(X.view.values_f32, X.view.index_i64, 2, X.view.values,
                                X.view.indices, X.view.indptr, X.view.s, X.view.n, X.view.dx,
                                d, X.view.icpt, 0, 0.0, &W[0, 0], NULL, &dummy, NULL, &idx[0],
                                mK, <double*> F.data, <double*> G.data,
                                <int> _csr_threads(&X.view, n_threads), NULL, &y[0], K,
                                NULL)
        elif X.view.values_f32:
            rc = softmax_pass(<const float*> X.view.values, X.view.s, &y[0], X.view.n,
                              X.view.dx, d, X.view.icpt, &W[0, 0], m, K, <double*> F.data,
                              <double*> G.data, n_threads)
        else:
            rc = softmax_pass(<const double*> X.view.values, X.view.s, &y[0], X.view.n,
                              X.view.dx, d, X.view.icpt, &W[0, 0], m, K, <double*> F.data,
                              <double*> G.data, n_threads)
    if rc != 0:
        raise MemoryError("softmax pass: out of memory")
    return F, G


def hessian(const floating[:, ::1] X, const double[::1] y, const double[:, ::1] W,
            const double[::1] l2, int loss, double h, int n_threads, labels=None):
    """Full Hessians, shape (k, d, d); labels as for Data (a regression loss)."""
    check_loss_id(loss)
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], k = W.shape[0], j
    cdef cnp.ndarray[double, ndim=3] H = np.zeros((k, d, d))
    cdef int rc = 0
    cdef const double[::1] lv
    cdef const double* lp = NULL
    if labels is not None:
        lv = labels
        if lv.shape[0] != n:
            raise ValueError("hessian: labels must have one entry per row of X")
        lp = &lv[0]
    for j in range(k):
        with nogil:
            rc = hessian_pass(&X[0, 0], &y[0], n, d, loss, h, &W[j, 0], l2[j],
                              (<double*> H.data) + j * d * d, n_threads, lp)
        if rc != 0:
            raise MemoryError("hessian_pass: out of memory")
    return H


def per_sample(int loss, const double[::1] z, double h):
    """phi(z), phi'(z), phi''(z) elementwise, by the same vectorized code the
    objective kernels use (for tests and audits)."""
    check_loss_id(loss)
    cdef Py_ssize_t n = z.shape[0]
    cdef cnp.ndarray[double, ndim=1] v = np.empty(n)
    cdef cnp.ndarray[double, ndim=1] d1 = np.empty(n)
    cdef cnp.ndarray[double, ndim=1] d2 = np.empty(n)
    if n > 0:
        with nogil:
            dperm_loss_vd(loss, h, n, &z[0], <double*> v.data, <double*> d1.data)
            dperm_loss_d2(loss, h, n, &z[0], <double*> d2.data)
    return v, d1, d2


def _per_sample_unchecked(int loss, const double[::1] z, double h):
    """per_sample without the id check, and phi'' also from _losses.pxd's scalar
    loss_second (the full Hessian's): what the C and Cython dispatchers themselves do
    with an id (tests only: an unknown id must give NaN, not another loss)."""
    cdef Py_ssize_t n = z.shape[0], i
    cdef cnp.ndarray[double, ndim=1] v = np.empty(n)
    cdef cnp.ndarray[double, ndim=1] d1 = np.empty(n)
    cdef cnp.ndarray[double, ndim=1] d2 = np.empty(n)
    cdef cnp.ndarray[double, ndim=1] s2 = np.empty(n)
    if n > 0:
        with nogil:
            dperm_loss_vd(loss, h, n, &z[0], <double*> v.data, <double*> d1.data)
            dperm_loss_d2(loss, h, n, &z[0], <double*> d2.data)
            for i in range(n):
                s2[i] = loss_second(loss, z[i], h)
    return v, d1, d2, s2


def csr_scan(data, indices, indptr, Py_ssize_t d, int n_threads=1):
    """One read of a CSR matrix's stored entries, for its validation (arithmetic only:
    the caller decides what is an error).  data float32/float64, indices and indptr
    int32/int64 of one dtype, all C-contiguous, indptr already checked (starts at 0,
    never decreases, indptr[-1] <= len(data), len(indices)).  Returns the counts
    (non-finite values, column indices outside [0, d), in-row neighbours whose
    indices do not strictly increase)."""
    cdef Py_ssize_t n = indptr.shape[0] - 1
    cdef const double[::1] vd
    cdef const float[::1] vf
    cdef const int32_t[::1] i32, p32
    cdef const int64_t[::1] i64, p64
    cdef const void* vp = NULL
    cdef const void* ip = NULL
    cdef const void* pp = NULL
    cdef int f32 = data.dtype == np.float32
    cdef int i64f = indices.dtype == np.int64
    cdef int64_t out[3]
    if n < 0:
        raise ValueError("csr_scan: indptr is empty")
    if f32:
        vf = data
        vp = &vf[0] if vf.shape[0] > 0 else NULL
    else:
        vd = data
        vp = &vd[0] if vd.shape[0] > 0 else NULL
    if i64f:
        i64 = indices
        p64 = indptr
        ip = &i64[0] if i64.shape[0] > 0 else NULL
        pp = &p64[0]
    else:
        i32 = indices
        p32 = indptr
        ip = &i32[0] if i32.shape[0] > 0 else NULL
        pp = &p32[0]
    with nogil:
        dperm_csr_scan(f32, i64f, vp, ip, pp, n, d, out, n_threads if n_threads > 0 else 1)
    return int(out[0]), int(out[1]), int(out[2])
