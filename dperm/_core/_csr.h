/* The CSR side of the row-access seam: fused, batched loss + gradient and
 * Hessian-vector passes over a compressed-sparse-row matrix.
 *
 * Same contract as the dense pass in _objective.pyx (see _rows.h): for the m
 * problems idx[0..m) of a batch, one pass over the non-zeros gives
 *   F[k] = (1/n) sum_i phi(s_i x_i.w_k) + l2_k/2 ||w_k||^2 + B_k.w_k / n,  G[k] = grad,
 * or G[k] = H(w_k) v_k.  s_i is the row's signed weight (its label, +-1).
 *
 * Layout: the m weight vectors are packed transposed (feature-major, d x m),
 * so the work per non-zero -- m multiply-adds against the feature's m weights,
 * and later m into its gradient accumulators -- is one contiguous, vectorizable
 * loop.  Rows go in blocks: margins of a block, the losses vectorized over the
 * whole block (over rows, not only problems: with m = 1 that is what keeps the
 * exp/log polynomial vectorized), then the scatter into the gradients while the
 * block's non-zeros are still in cache.
 *
 * Threads own contiguous row ranges holding about nnz/nt non-zeros each (fixed
 * by the data and nt alone) and their own accumulators, added in thread order:
 * results depend on neither scheduling nor on which problems share a pass
 * (every margin is the same sequence of operations whatever m is; the build is
 * ISO C, so the compiler does not contract a*b+c differently per loop).
 * Indices need not be sorted, and duplicate entries add up, as in scipy.
 */
#ifndef DPERM_CSR_H
#define DPERM_CSR_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "_rows.h"

#define DPERM_CSR_BLOCK 256   /* rows per block: a speed knob only */

/* First row whose start is at or after nnz target (rows [0, n)). */
#define DPERM_CSR_SPLIT(IT)                                                          \
static inline ptrdiff_t dperm_csr_split_##IT(const IT *indptr, ptrdiff_t n, int64_t target) { \
    ptrdiff_t lo = 0, hi = n;                                                        \
    while (lo < hi) {                                                                \
        ptrdiff_t mid = lo + (hi - lo) / 2;                                          \
        if ((int64_t)indptr[mid] < target) lo = mid + 1; else hi = mid;              \
    }                                                                                \
    return lo;                                                                       \
}
DPERM_CSR_SPLIT(int32_t)
DPERM_CSR_SPLIT(int64_t)

#define DPERM_CSR_DEFINE(SUF, VT, IT)                                                \
/* rows [r0, r1): margins into zb (row-major, m per row), times s_r */              \
static inline void dperm_csr_margins_##SUF(const VT *restrict data,                  \
        const IT *restrict ind, const IT *restrict indptr, const double *restrict s, \
        ptrdiff_t r0, ptrdiff_t r1, const double *restrict WT, ptrdiff_t m,         \
        double *restrict zb) {                                                       \
    for (ptrdiff_t r = r0; r < r1; ++r) {                                            \
        double *restrict z = zb + (r - r0) * m;                                      \
        const ptrdiff_t p1 = (ptrdiff_t)indptr[r + 1];                               \
        if (m == 1) {                                                                \
            double acc = 0.0;                                                        \
            for (ptrdiff_t p = (ptrdiff_t)indptr[r]; p < p1; ++p)                    \
                acc += (double)data[p] * WT[ind[p]];                                 \
            z[0] = s[r] * acc;                                                       \
            continue;                                                                \
        }                                                                            \
        for (ptrdiff_t j = 0; j < m; ++j) z[j] = 0.0;                                \
        for (ptrdiff_t p = (ptrdiff_t)indptr[r]; p < p1; ++p) {                      \
            const double v = (double)data[p];                                        \
            const double *restrict wc = WT + (ptrdiff_t)ind[p] * m;                  \
            _Pragma("omp simd")                                                      \
            for (ptrdiff_t j = 0; j < m; ++j) z[j] += v * wc[j];                     \
        }                                                                            \
        const double sr = s[r];                                                      \
        _Pragma("omp simd")                                                          \
        for (ptrdiff_t j = 0; j < m; ++j) z[j] *= sr;                                \
    }                                                                                \
}                                                                                    \
                                                                                     \
/* rows [r0, r1): gacc[c, :] += x_rc * cb[r, :] */                                   \
static inline void dperm_csr_scatter_##SUF(const VT *restrict data,                  \
        const IT *restrict ind, const IT *restrict indptr, ptrdiff_t r0, ptrdiff_t r1, \
        const double *restrict cb, ptrdiff_t m, double *restrict gacc) {             \
    for (ptrdiff_t r = r0; r < r1; ++r) {                                            \
        const double *restrict c = cb + (r - r0) * m;                                \
        const ptrdiff_t p1 = (ptrdiff_t)indptr[r + 1];                               \
        if (m == 1) {                                                                \
            const double c0 = c[0];                                                  \
            if (c0 == 0.0) continue;                                                 \
            for (ptrdiff_t p = (ptrdiff_t)indptr[r]; p < p1; ++p)                    \
                gacc[ind[p]] += (double)data[p] * c0;                                \
            continue;                                                                \
        }                                                                            \
        for (ptrdiff_t p = (ptrdiff_t)indptr[r]; p < p1; ++p) {                      \
            const double v = (double)data[p];                                        \
            double *restrict g = gacc + (ptrdiff_t)ind[p] * m;                       \
            _Pragma("omp simd")                                                      \
            for (ptrdiff_t j = 0; j < m; ++j) g[j] += v * c[j];                      \
        }                                                                            \
    }                                                                                \
}                                                                                    \
                                                                                     \
/* One thread's rows [i0, i1): per block, margins, losses, scatter. */              \
static void dperm_csr_rows_##SUF(int mode, const VT *data, const IT *ind,            \
        const IT *indptr, const double *s, ptrdiff_t i0, ptrdiff_t i1, int loss,     \
        double h, const double *WT, const double *VTp, ptrdiff_t m, ptrdiff_t rb,    \
        double *gacc, double *lacc, double *zb, double *z2, double *vb, double *cb) { \
    for (ptrdiff_t i = i0; i < i1; i += rb) {                                        \
        const ptrdiff_t e = i + rb < i1 ? i + rb : i1;                               \
        const ptrdiff_t cnt = (e - i) * m;                                           \
        dperm_csr_margins_##SUF(data, ind, indptr, s, i, e, WT, m, zb);              \
        if (mode == 0) {                                                             \
            dperm_loss_vd(loss, h, cnt, zb, vb, cb);                                 \
            for (ptrdiff_t r = 0; r < e - i; ++r) {                                  \
                const double sr = s[i + r];                                          \
                for (ptrdiff_t j = 0; j < m; ++j) {                                  \
                    lacc[j] += vb[r * m + j];                                        \
                    cb[r * m + j] *= sr;         /* phi'(z) s x: unsigned row */     \
                }                                                                    \
            }                                                                        \
        } else {                                                                     \
            /* phi''(z) s^2 (x.v) x, with z2 = s (x.v) */                            \
            dperm_csr_margins_##SUF(data, ind, indptr, s, i, e, VTp, m, z2);         \
            dperm_loss_d2(loss, h, cnt, zb, cb);                                     \
            for (ptrdiff_t r = 0; r < e - i; ++r) {                                  \
                const double sr = s[i + r];                                          \
                for (ptrdiff_t j = 0; j < m; ++j) cb[r * m + j] *= z2[r * m + j] * sr; \
            }                                                                        \
        }                                                                            \
        dperm_csr_scatter_##SUF(data, ind, indptr, i, e, cb, m, gacc);               \
    }                                                                                \
}                                                                                    \
                                                                                     \
/* The whole pass; returns -1 when memory runs out.  nt: threads (>= 1). */          \
static int dperm_csr_pass_##SUF(int mode, const VT *data, const IT *ind,             \
        const IT *indptr, const double *s, ptrdiff_t n, ptrdiff_t d, int loss,       \
        double h, const double *W, const double *V, const double *l2,                \
        const double *B, const ptrdiff_t *idx, ptrdiff_t m, double *F, double *G,    \
        int nt) {                                                                    \
    const ptrdiff_t rb = DPERM_CSR_BLOCK;                                            \
    /* per thread: d*m gradients, m losses, 4 blocks of rb*m; whole cache lines */   \
    const ptrdiff_t per = (d * m + m + 4 * rb * m + 7) / 8 * 8;                      \
    double *buf = (double *)calloc((size_t)(nt * per + 2 * d * m + 8), sizeof(double)); \
    if (buf == NULL) return -1;                                                      \
    double *WT = buf + nt * per;                                                     \
    double *VTp = WT + d * m;                                                        \
    for (ptrdiff_t j = 0; j < m; ++j)                                                \
        for (ptrdiff_t c = 0; c < d; ++c) {                                          \
            WT[c * m + j] = W[idx[j] * d + c];                                       \
            if (mode == 1) VTp[c * m + j] = V[idx[j] * d + c];                       \
        }                                                                            \
    const int64_t nnz = (int64_t)indptr[n];                                          \
    _Pragma("omp parallel for schedule(static) num_threads(nt)")                     \
    for (int t = 0; t < nt; ++t) {                                                   \
        const ptrdiff_t i0 = t == 0 ? 0 : dperm_csr_split_##IT(indptr, n, nnz * t / nt); \
        const ptrdiff_t i1 = t == nt - 1 ? n                                         \
            : dperm_csr_split_##IT(indptr, n, nnz * (t + 1) / nt);                   \
        double *gacc = buf + t * per;                                                \
        double *lacc = gacc + d * m;                                                 \
        double *zb = lacc + m;                                                       \
        dperm_csr_rows_##SUF(mode, data, ind, indptr, s, i0, i1, loss, h, WT, VTp,   \
                             m, rb, gacc, lacc, zb, zb + rb * m, zb + 2 * rb * m,    \
                             zb + 3 * rb * m);                                       \
    }                                                                                \
    /* fixed-order reduction over threads, then the regularizer and linear terms */ \
    const double inv_n = 1.0 / (double)n;                                            \
    for (ptrdiff_t j = 0; j < m; ++j) {                                              \
        const ptrdiff_t k = idx[j];                                                  \
        const double *wk = W + k * d;                                                \
        if (mode == 0) {                                                             \
            double acc = 0.0, sq = 0.0, lin = 0.0;                                   \
            for (int t = 0; t < nt; ++t) acc += buf[t * per + d * m + j];            \
            for (ptrdiff_t p = 0; p < d; ++p) {                                      \
                sq += wk[p] * wk[p];                                                 \
                if (B != NULL) lin += B[k * d + p] * wk[p];                          \
            }                                                                        \
            F[k] = acc * inv_n + 0.5 * l2[k] * sq + lin * inv_n;                     \
        }                                                                            \
        for (ptrdiff_t p = 0; p < d; ++p) {                                          \
            double acc = 0.0;                                                        \
            for (int t = 0; t < nt; ++t) acc += buf[t * per + p * m + j];            \
            if (mode == 0) {                                                         \
                acc = acc * inv_n + l2[k] * wk[p];                                   \
                if (B != NULL) acc += B[k * d + p] * inv_n;                          \
            } else {                                                                 \
                acc = acc * inv_n + l2[k] * V[k * d + p];                            \
            }                                                                        \
            G[k * d + p] = acc;                                                      \
        }                                                                            \
    }                                                                                \
    free(buf);                                                                       \
    return 0;                                                                        \
}

DPERM_CSR_DEFINE(d32, double, int32_t)
DPERM_CSR_DEFINE(f32, float, int32_t)
DPERM_CSR_DEFINE(d64, double, int64_t)
DPERM_CSR_DEFINE(f64, float, int64_t)

#endif
