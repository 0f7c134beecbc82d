/* The CSR side of the row-access seam: fused, batched loss + gradient and
 * Hessian-vector passes over a compressed-sparse-row matrix.
 *
 * Same contract as the dense pass in _objective.pyx (see _rows.h): for the m
 * problems idx[0..m) of a batch, one pass over the non-zeros gives
 *   F[k] = (1/n) sum_i phi(s_i x_i.w_k) + l2_k/2 ||w_k||^2 + B_k.w_k / n,  G[k] = grad,
 * or G[k] = H(w_k) v_k.  s_i is the row's signed weight (its label, +-1).  A
 * regression loss (lab non-NULL) takes the residual s_i x_i.w_k - lab_i instead.
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

/* Rows per block (0: the default rule in dperm_csr_pass): a speed knob only --
 * any value gives the same numbers.  Settable for tuning experiments. */
static int dperm_csr_block_rows = 0;

/* The pass's workspace, kept per calling thread between passes: a fresh
 * calloc of a few hundred KiB is a fresh mmap, and its page faults and zeroing
 * cost ~8% of a 64-problem pass.  Only the accumulators need zeroing. */
static _Thread_local double *dperm_csr_ws = NULL;
static _Thread_local size_t dperm_csr_ws_len = 0;

static inline double *dperm_csr_workspace(size_t len) {
    if (len > dperm_csr_ws_len) {
        free(dperm_csr_ws);
        dperm_csr_ws = (double *)malloc(len * sizeof(double));
        dperm_csr_ws_len = dperm_csr_ws == NULL ? 0 : len;
    }
    return dperm_csr_ws;
}

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

/* Software prefetch of the next block of rows while this one is scattered: the
 * margins stream X from memory, and without this the scatter (which reads the
 * block again, from cache) leaves the memory bus idle.  Row q of nq of this
 * block prefetches the q-th of nq equal slices of [base, base + len). */
static inline void dperm_csr_prefetch(const char *base, size_t len, ptrdiff_t q, ptrdiff_t nq) {
#if defined(__GNUC__) || defined(__clang__)
    if (len == 0) return;
    const size_t a = len * (size_t)q / (size_t)nq, b = len * (size_t)(q + 1) / (size_t)nq;
    for (size_t o = a & ~(size_t)63; o < b; o += 64) __builtin_prefetch(base + o, 0, 2);
#else
    (void)base; (void)len; (void)q; (void)nq;
#endif
}

/* Problems are processed in tiles of DPERM_CSR_TILE (one AVX-512 vector of
 * float64): weights and gradient accumulators are stored tile-major,
 * [tile][feature][lane], so one tile's d x 8 block stays in L1 while a block of
 * rows streams past it.  m = 1 has its own scalar path with the same
 * arithmetic.  Every margin is summed in four interleaved partial sums
 * (non-zero p goes to partial p mod 4 of its row), combined as
 * (s0 + s1) + (s2 + s3), whatever the path: this breaks the add-latency chain
 * and keeps a problem's numbers independent of the batch it is in. */
#define DPERM_CSR_TILE 8
#define DPERM_CSR_NV (DPERM_CSR_TILE / DPERM_VW)   /* vectors per tile */

/* a*b + c exactly as one lane of dv_fma computes it, so the m = 1 path and the
 * tiles agree to the bit */
#if DPERM_VW > 1
#define DPERM_FMA1(a, b, c) fma((a), (b), (c))
#else
#define DPERM_FMA1(a, b, c) ((a) * (b) + (c))
#endif

#define DPERM_CSR_DEFINE(SUF, VT, IT)                                                \
static inline double dperm_csr_dot1_##SUF(const VT *restrict data,                   \
        const IT *restrict ind, ptrdiff_t p0, ptrdiff_t p1, const double *restrict w) { \
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;                                   \
    ptrdiff_t p = p0;                                                                \
    for (; p + 4 <= p1; p += 4) {                                                    \
        s0 = DPERM_FMA1((double)data[p], w[ind[p]], s0);                             \
        s1 = DPERM_FMA1((double)data[p + 1], w[ind[p + 1]], s1);                     \
        s2 = DPERM_FMA1((double)data[p + 2], w[ind[p + 2]], s2);                     \
        s3 = DPERM_FMA1((double)data[p + 3], w[ind[p + 3]], s3);                     \
    }                                                                                \
    if (p < p1) s0 = DPERM_FMA1((double)data[p], w[ind[p]], s0);                     \
    if (p + 1 < p1) s1 = DPERM_FMA1((double)data[p + 1], w[ind[p + 1]], s1);         \
    if (p + 2 < p1) s2 = DPERM_FMA1((double)data[p + 2], w[ind[p + 2]], s2);         \
    return (s0 + s1) + (s2 + s3);                                                    \
}                                                                                    \
                                                                                     \
/* one tile: z[0..8) = s_r sum_p x_p * wt[ind_p][0..8), four partials as above */  \
static inline void dperm_csr_dot8_##SUF(const VT *restrict data,                     \
        const IT *restrict ind, ptrdiff_t p0, ptrdiff_t p1, const double *restrict wt, \
        double sr, double *restrict z, const double *wc, double icpt) {              \
    dperm_v a0[DPERM_CSR_NV], a1[DPERM_CSR_NV], a2[DPERM_CSR_NV], a3[DPERM_CSR_NV];  \
    for (int u = 0; u < DPERM_CSR_NV; ++u) a0[u] = a1[u] = a2[u] = a3[u] = dv_zero(); \
    ptrdiff_t p = p0;                                                                \
    for (; p + 4 <= p1; p += 4) {                                                    \
        const dperm_v v0 = dv_set1((double)data[p]), v1 = dv_set1((double)data[p + 1]); \
        const dperm_v v2 = dv_set1((double)data[p + 2]), v3 = dv_set1((double)data[p + 3]); \
        const double *w0 = wt + (ptrdiff_t)ind[p] * DPERM_CSR_TILE;                  \
        const double *w1 = wt + (ptrdiff_t)ind[p + 1] * DPERM_CSR_TILE;              \
        const double *w2 = wt + (ptrdiff_t)ind[p + 2] * DPERM_CSR_TILE;              \
        const double *w3 = wt + (ptrdiff_t)ind[p + 3] * DPERM_CSR_TILE;              \
        for (int u = 0; u < DPERM_CSR_NV; ++u) {                                     \
            a0[u] = dv_fma(v0, dv_ld(w0 + u * DPERM_VW), a0[u]);                     \
            a1[u] = dv_fma(v1, dv_ld(w1 + u * DPERM_VW), a1[u]);                     \
            a2[u] = dv_fma(v2, dv_ld(w2 + u * DPERM_VW), a2[u]);                     \
            a3[u] = dv_fma(v3, dv_ld(w3 + u * DPERM_VW), a3[u]);                     \
        }                                                                            \
    }                                                                                \
    if (p < p1) {                                                                    \
        const dperm_v v = dv_set1((double)data[p]);                                  \
        const double *w = wt + (ptrdiff_t)ind[p] * DPERM_CSR_TILE;                   \
        for (int u = 0; u < DPERM_CSR_NV; ++u) a0[u] = dv_fma(v, dv_ld(w + u * DPERM_VW), a0[u]); \
    }                                                                                \
    if (p + 1 < p1) {                                                                \
        const dperm_v v = dv_set1((double)data[p + 1]);                              \
        const double *w = wt + (ptrdiff_t)ind[p + 1] * DPERM_CSR_TILE;               \
        for (int u = 0; u < DPERM_CSR_NV; ++u) a1[u] = dv_fma(v, dv_ld(w + u * DPERM_VW), a1[u]); \
    }                                                                                \
    if (p + 2 < p1) {                                                                \
        const dperm_v v = dv_set1((double)data[p + 2]);                              \
        const double *w = wt + (ptrdiff_t)ind[p + 2] * DPERM_CSR_TILE;               \
        for (int u = 0; u < DPERM_CSR_NV; ++u) a2[u] = dv_fma(v, dv_ld(w + u * DPERM_VW), a2[u]); \
    }                                                                                \
    const dperm_v sv = dv_set1(sr);                                                  \
    for (int u = 0; u < DPERM_CSR_NV; ++u) {                                         \
        dperm_v t = dv_add(dv_add(a0[u], a1[u]), dv_add(a2[u], a3[u]));             \
        if (wc != NULL) t = dv_fma(dv_set1(icpt), dv_ld(wc + u * DPERM_VW), t);      \
        dv_st(z + u * DPERM_VW, dv_mul(sv, t));                                      \
    }                                                                                \
}                                                                                    \
                                                                                     \
/* rows [r0, r1): margins s_r x_r.w_j into zb[(r - r0) * mp + j] */                  \
static inline void dperm_csr_margins_##SUF(const VT *restrict data,                  \
        const IT *restrict ind, const IT *restrict indptr, const double *restrict s, \
        ptrdiff_t r0, ptrdiff_t r1, const double *restrict WT, ptrdiff_t d,         \
        ptrdiff_t mp, double *restrict zb, ptrdiff_t dx, const double *icpt) {       \
    if (mp == 1) {                                                                   \
        for (ptrdiff_t r = r0; r < r1; ++r) {                                        \
            double z = dperm_csr_dot1_##SUF(data, ind, (ptrdiff_t)indptr[r],         \
                                            (ptrdiff_t)indptr[r + 1], WT);           \
            if (d > dx) z = DPERM_FMA1(icpt[r], WT[dx], z); /* the intercept column */ \
            zb[r - r0] = s[r] * z;                                                   \
        }                                                                            \
        return;                                                                      \
    }                                                                                \
    for (ptrdiff_t t = 0; t < mp; t += DPERM_CSR_TILE) {                             \
        const double *wt = WT + t * d;                                               \
        const double *wc = d > dx ? wt + dx * DPERM_CSR_TILE : NULL;                 \
        for (ptrdiff_t r = r0; r < r1; ++r)                                          \
            dperm_csr_dot8_##SUF(data, ind, (ptrdiff_t)indptr[r], (ptrdiff_t)indptr[r + 1], \
                                 wt, s[r], zb + (r - r0) * mp + t, wc,               \
                                 wc != NULL ? icpt[r] : 0.0);                        \
    }                                                                                \
}                                                                                    \
                                                                                     \
/* rows [r0, r1): gacc[c, j] += x_rc * cb[r, j] (tile-major gacc) */                 \
static inline void dperm_csr_scatter_##SUF(const VT *restrict data,                  \
        const IT *restrict ind, const IT *restrict indptr, ptrdiff_t r0, ptrdiff_t r1, \
        const double *restrict cb, ptrdiff_t d, ptrdiff_t mp, double *restrict gacc, \
        ptrdiff_t dx, const double *icpt, const IT *pnext, ptrdiff_t nnext) {        \
    /* pnext: the next block's first non-zero, nnext its count (prefetched) */       \
    const char *pfv = (const char *)(data + (pnext - ind));                          \
    const size_t pfvl = (size_t)nnext * sizeof(VT), pfil = (size_t)nnext * sizeof(IT); \
    if (mp == 1) {                                                                   \
        for (ptrdiff_t r = r0; r < r1; ++r) {                                        \
            dperm_csr_prefetch(pfv, pfvl, r - r0, r1 - r0);                          \
            dperm_csr_prefetch((const char *)pnext, pfil, r - r0, r1 - r0);          \
            const double c0 = cb[r - r0];                                            \
            if (c0 == 0.0) continue;                                                 \
            if (d > dx) gacc[dx] = DPERM_FMA1(icpt[r], c0, gacc[dx]);                \
            const ptrdiff_t p1 = (ptrdiff_t)indptr[r + 1];                           \
            ptrdiff_t p = (ptrdiff_t)indptr[r];                                      \
            /* a row's indices are distinct (check_X canonicalizes), so four      */ \
            /* read-modify-writes can be in flight at once                        */ \
            for (; p + 4 <= p1; p += 4) {                                            \
                const ptrdiff_t k0 = ind[p], k1 = ind[p + 1];                        \
                const ptrdiff_t k2 = ind[p + 2], k3 = ind[p + 3];                    \
                const double g0 = DPERM_FMA1((double)data[p], c0, gacc[k0]);         \
                const double g1 = DPERM_FMA1((double)data[p + 1], c0, gacc[k1]);     \
                const double g2 = DPERM_FMA1((double)data[p + 2], c0, gacc[k2]);     \
                const double g3 = DPERM_FMA1((double)data[p + 3], c0, gacc[k3]);     \
                gacc[k0] = g0; gacc[k1] = g1; gacc[k2] = g2; gacc[k3] = g3;          \
            }                                                                        \
            for (; p < p1; ++p) gacc[ind[p]] = DPERM_FMA1((double)data[p], c0, gacc[ind[p]]); \
        }                                                                            \
        return;                                                                      \
    }                                                                                \
    for (ptrdiff_t t = 0; t < mp; t += DPERM_CSR_TILE) {                             \
        double *restrict gt = gacc + t * d;                                          \
        for (ptrdiff_t r = r0; r < r1; ++r) {                                        \
            if (t == 0) {                                                            \
                dperm_csr_prefetch(pfv, pfvl, r - r0, r1 - r0);                      \
                dperm_csr_prefetch((const char *)pnext, pfil, r - r0, r1 - r0);      \
            }                                                                        \
            const double *restrict c = cb + (r - r0) * mp + t;                       \
            dperm_v cv[DPERM_CSR_NV];                                                \
            for (int u = 0; u < DPERM_CSR_NV; ++u) cv[u] = dv_ld(c + u * DPERM_VW);  \
            if (d > dx) {                                                            \
                double *g = gt + dx * DPERM_CSR_TILE;                                \
                for (int u = 0; u < DPERM_CSR_NV; ++u)                               \
                    dv_st(g + u * DPERM_VW, dv_fma(dv_set1(icpt[r]), cv[u], dv_ld(g + u * DPERM_VW))); \
            }                                                                        \
            const ptrdiff_t p1 = (ptrdiff_t)indptr[r + 1];                           \
            for (ptrdiff_t p = (ptrdiff_t)indptr[r]; p < p1; ++p) {                  \
                const dperm_v v = dv_set1((double)data[p]);                          \
                double *restrict g = gt + (ptrdiff_t)ind[p] * DPERM_CSR_TILE;        \
                for (int u = 0; u < DPERM_CSR_NV; ++u)                               \
                    dv_st(g + u * DPERM_VW, dv_fma(v, cv[u], dv_ld(g + u * DPERM_VW))); \
            }                                                                        \
        }                                                                            \
    }                                                                                \
}                                                                                    \
                                                                                     \
/* One thread's rows [i0, i1): per block, margins, losses, scatter. */              \
static void dperm_csr_rows_##SUF(int mode, const VT *data, const IT *ind,            \
        const IT *indptr, const double *s, ptrdiff_t i0, ptrdiff_t i1, int loss,     \
        double h, const double *WT, const double *VTp, ptrdiff_t d, ptrdiff_t mp,    \
        ptrdiff_t rb, double *gacc, double *lacc, double *zb, double *z2, double *vb, \
        double *cb, ptrdiff_t n, ptrdiff_t m, double *curv, ptrdiff_t dx,            \
        const double *icpt, const int64_t *cls, ptrdiff_t K, const double *lab) {    \
    for (ptrdiff_t i = i0; i < i1; i += rb) {                                        \
        const ptrdiff_t e = i + rb < i1 ? i + rb : i1;                               \
        const ptrdiff_t cnt = (e - i) * mp;                                          \
        if (mode == 2) {                                                             \
            /* softmax of the m / K problems of K classes: the block's margins packed */ \
            /* (row stride m, not mp) so the softmax runs on the whole block at once */ \
            const ptrdiff_t mm = m / K, nr = e - i;                                  \
            dperm_csr_margins_##SUF(data, ind, indptr, s, i, e, WT, d, mp, zb, dx, icpt); \
            for (ptrdiff_t r = 0; r < nr; ++r)                                       \
                memcpy(z2 + r * m, zb + r * mp, (size_t)m * sizeof(double));        \
            dperm_softmax_block(nr, mm, K, z2, cls + i, vb, cb, zb);                 \
            dperm_add_rows(vb, nr, mm, lacc);                                        \
            /* back to row stride mp in place (last row first), times s: unsigned */ \
            for (ptrdiff_t r = nr - 1; r >= 0; --r) {                                \
                const double sr = s[i + r];                                          \
                for (ptrdiff_t j = m - 1; j >= 0; --j) cb[r * mp + j] = cb[r * m + j] * sr; \
                for (ptrdiff_t j = m; j < mp; ++j) cb[r * mp + j] = 0.0;             \
            }                                                                        \
        } else if (mode == 0) {                                                      \
            dperm_csr_margins_##SUF(data, ind, indptr, s, i, e, WT, d, mp, zb, dx, icpt);      \
            if (lab != NULL) dperm_sub_labels(zb, lab + i, e - i, mp, mp);           \
            dperm_loss_vd(loss, h, cnt, zb, vb, cb);                                 \
            for (ptrdiff_t r = 0; r < e - i; ++r) {                                  \
                const double sr = s[i + r];                                          \
                for (ptrdiff_t j = 0; j < mp; ++j) {                                 \
                    lacc[j] += vb[r * mp + j];                                       \
                    cb[r * mp + j] *= sr;        /* phi'(z) s x: unsigned row */     \
                }                                                                    \
            }                                                                        \
            if (curv != NULL) {                  /* phi''(z), kept for Hv passes */  \
                dperm_loss_d2(loss, h, cnt, zb, z2);                                 \
                for (ptrdiff_t r = 0; r < e - i; ++r)                                \
                    for (ptrdiff_t j = 0; j < m; ++j) curv[j * n + i + r] = z2[r * mp + j]; \
            }                                                                        \
        } else if (curv != NULL) {                                                   \
            /* cached phi'': only the margins of V, s (x.v) */                       \
            dperm_csr_margins_##SUF(data, ind, indptr, s, i, e, VTp, d, mp, z2, dx, icpt);     \
            for (ptrdiff_t r = 0; r < e - i; ++r) {                                  \
                const double sr = s[i + r];                                          \
                for (ptrdiff_t j = 0; j < m; ++j)                                    \
                    cb[r * mp + j] = curv[j * n + i + r] * z2[r * mp + j] * sr;      \
                for (ptrdiff_t j = m; j < mp; ++j) cb[r * mp + j] = 0.0;             \
            }                                                                        \
        } else {                                                                     \
            /* phi''(z) s^2 (x.v) x, with z2 = s (x.v) */                            \
            dperm_csr_margins_##SUF(data, ind, indptr, s, i, e, WT, d, mp, zb, dx, icpt);      \
            dperm_csr_margins_##SUF(data, ind, indptr, s, i, e, VTp, d, mp, z2, dx, icpt);     \
            if (lab != NULL) dperm_sub_labels(zb, lab + i, e - i, mp, mp);           \
            dperm_loss_d2(loss, h, cnt, zb, cb);                                     \
            for (ptrdiff_t r = 0; r < e - i; ++r) {                                  \
                const double sr = s[i + r];                                          \
                for (ptrdiff_t j = 0; j < mp; ++j) cb[r * mp + j] *= z2[r * mp + j] * sr; \
            }                                                                        \
        }                                                                            \
        const ptrdiff_t en = e + rb < i1 ? e + rb : i1;  /* the next block: [e, en) */ \
        dperm_csr_scatter_##SUF(data, ind, indptr, i, e, cb, d, mp, gacc, dx, icpt,  \
                                ind + (ptrdiff_t)indptr[e],                          \
                                (ptrdiff_t)indptr[en] - (ptrdiff_t)indptr[e]);       \
    }                                                                                \
}                                                                                    \
                                                                                     \
/* The whole pass; returns -1 when memory runs out.  nt: threads (>= 1). */          \
static int dperm_csr_pass_##SUF(int mode, const VT *data, const IT *ind,             \
        const IT *indptr, const double *s, ptrdiff_t n, ptrdiff_t dx, ptrdiff_t d,   \
        const double *icpt, int loss, double h, const double *W, const double *V, const double *l2,                \
        const double *B, const ptrdiff_t *idx, ptrdiff_t m, double *F, double *G,    \
        int nt, double *curv, const int64_t *cls, ptrdiff_t K, const double *lab) {  \
    /* problems padded to whole tiles (zero weights in the padding lanes) */         \
    const ptrdiff_t mp = m == 1 ? 1 : (m + DPERM_CSR_TILE - 1) / DPERM_CSR_TILE * DPERM_CSR_TILE; \
    ptrdiff_t rb = dperm_csr_block_rows > 0 ? dperm_csr_block_rows : 256;           \
    /* per thread: d*mp gradients, mp losses, 4 blocks of rb*mp; whole cache lines */ \
    const ptrdiff_t per = (d * mp + mp + 4 * rb * mp + 7) / 8 * 8;                   \
    double *buf = dperm_csr_workspace((size_t)(nt * per + 2 * d * mp + 8));           \
    if (buf == NULL) return -1;                                                      \
    for (int t = 0; t < nt; ++t)             /* gradient and loss accumulators */    \
        memset(buf + t * per, 0, (size_t)(d * mp + mp) * sizeof(double));            \
    memset(buf + nt * per, 0, (size_t)(2 * d * mp) * sizeof(double)); /* padding lanes */ \
    double *WT = buf + nt * per;                                                     \
    double *VTp = WT + d * mp;                                                       \
    /* element (c, j) of a tile-major d x mp block: tile j/8, feature c, lane j%8 */ \
    const ptrdiff_t tw = mp == 1 ? 1 : DPERM_CSR_TILE;                               \
    for (ptrdiff_t j = 0; j < m; ++j) {                                              \
        const ptrdiff_t off = (j / tw) * tw * d + j % tw;                            \
        for (ptrdiff_t c = 0; c < d; ++c) {                                          \
            WT[off + c * tw] = W[idx[j] * d + c];                                    \
            if (mode == 1) VTp[off + c * tw] = V[idx[j] * d + c];                    \
        }                                                                            \
    }                                                                                \
    const int64_t nnz = (int64_t)indptr[n];                                          \
    _Pragma("omp parallel for schedule(static) num_threads(dperm_team(nt))")         \
    for (int t = 0; t < nt; ++t) {                                                   \
        const ptrdiff_t i0 = t == 0 ? 0 : dperm_csr_split_##IT(indptr, n, nnz * t / nt); \
        const ptrdiff_t i1 = t == nt - 1 ? n                                         \
            : dperm_csr_split_##IT(indptr, n, nnz * (t + 1) / nt);                   \
        double *gacc = buf + t * per;                                                \
        double *lacc = gacc + d * mp;                                                \
        double *zb = lacc + mp;                                                      \
        dperm_csr_rows_##SUF(mode, data, ind, indptr, s, i0, i1, loss, h, WT, VTp,   \
                             d, mp, rb, gacc, lacc, zb, zb + rb * mp, zb + 2 * rb * mp, \
                             zb + 3 * rb * mp, n, m, curv, dx, icpt, cls, K, lab);   \
    }                                                                                \
    /* fixed-order reduction over threads, then the regularizer and linear terms */ \
    if (mode == 2) {       /* softmax: sums only, F (m / K,) and G (m, d) */          \
        for (ptrdiff_t j = 0; j < m / K; ++j) {                                      \
            double acc = 0.0;                                                        \
            for (int t = 0; t < nt; ++t) acc += buf[t * per + d * mp + j];           \
            F[j] = acc;                                                              \
        }                                                                            \
        for (ptrdiff_t j = 0; j < m; ++j) {                                          \
            const ptrdiff_t off = (j / tw) * tw * d + j % tw;                        \
            for (ptrdiff_t p = 0; p < d; ++p) {                                      \
                double acc = 0.0;                                                    \
                for (int t = 0; t < nt; ++t) acc += buf[t * per + off + p * tw];     \
                G[idx[j] * d + p] = acc;                                             \
            }                                                                        \
        }                                                                            \
        return 0;                                                                    \
    }                                                                                \
    const double inv_n = 1.0 / (double)n;                                            \
    for (ptrdiff_t j = 0; j < m; ++j) {                                              \
        const ptrdiff_t k = idx[j];                                                  \
        const double *wk = W + k * d;                                                \
        const ptrdiff_t off = (j / tw) * tw * d + j % tw;                            \
        if (mode == 0) {                                                             \
            double acc = 0.0, sq = 0.0, lin = 0.0;                                   \
            for (int t = 0; t < nt; ++t) acc += buf[t * per + d * mp + j];           \
            for (ptrdiff_t p = 0; p < d; ++p) {                                      \
                sq += wk[p] * wk[p];                                                 \
                if (B != NULL) lin += B[k * d + p] * wk[p];                          \
            }                                                                        \
            F[k] = acc * inv_n + 0.5 * l2[k] * sq + lin * inv_n;                     \
        }                                                                            \
        for (ptrdiff_t p = 0; p < d; ++p) {                                          \
            double acc = 0.0;                                                        \
            for (int t = 0; t < nt; ++t) acc += buf[t * per + off + p * tw];         \
            if (mode == 0) {                                                         \
                acc = acc * inv_n + l2[k] * wk[p];                                   \
                if (B != NULL) acc += B[k * d + p] * inv_n;                          \
            } else {                                                                 \
                acc = acc * inv_n + l2[k] * V[k * d + p];                            \
            }                                                                        \
            G[k * d + p] = acc;                                                      \
        }                                                                            \
    }                                                                                \
    return 0;                                                                        \
}

DPERM_CSR_DEFINE(d32, double, int32_t)
DPERM_CSR_DEFINE(f32, float, int32_t)
DPERM_CSR_DEFINE(d64, double, int64_t)
DPERM_CSR_DEFINE(f64, float, int64_t)

/* One read of a CSR matrix for its validation (the policy is the caller's):
 * out[0] counts non-finite values, out[1] column indices outside [0, d), out[2]
 * in-row neighbours whose indices do not strictly increase (unsorted or
 * duplicate entries: not canonical).  indptr must already be known to start at
 * 0, never decrease and stay within the arrays.  (Row norms stay with numpy's
 * blockwise sums: an in-order sum differs from them in the last bit, which
 * could move a row across a clipping bound.) */
#define DPERM_CSR_SCAN(SUF, VT, IT)                                                  \
static void dperm_csr_scan_##SUF(const VT *data, const IT *ind, const IT *indptr,    \
        ptrdiff_t n, int64_t d, int64_t *out, int nt) {                              \
    /* one flat, vectorizable loop over the entries (a pair (p - 1, p) that      */ \
    /* decreases is counted, then the pairs that straddle a row start are taken  */ \
    /* back out: a new row may start anywhere)                                   */ \
    const ptrdiff_t nnz = (ptrdiff_t)indptr[n];                                      \
    int64_t nf = 0, oor = 0, dec = 0;                                                \
    _Pragma("omp parallel for simd schedule(static) num_threads(nt) reduction(+:nf, oor, dec)") \
    for (ptrdiff_t p = 1; p < nnz; ++p) {                                            \
        const double v = (double)data[p];                                            \
        nf += !(v - v == 0.0);                  /* NaN and +-inf */                  \
        oor += ind[p] < 0 || ind[p] >= d;       /* outside [0, d) */                 \
        dec += ind[p] <= ind[p - 1];                                                 \
    }                                                                                \
    if (nnz > 0) {                                                                   \
        const double v = (double)data[0];                                            \
        nf += !(v - v == 0.0);                                                       \
        oor += ind[0] < 0 || ind[0] >= d;                                            \
    }                                                                                \
    for (ptrdiff_t r = 1; r < n; ++r) {                                              \
        const ptrdiff_t p = (ptrdiff_t)indptr[r];                                    \
        if (p > 0 && p < (ptrdiff_t)indptr[r + 1])   /* row r is not empty */        \
            dec -= (int64_t)ind[p] <= (int64_t)ind[p - 1];                           \
    }                                                                                \
    out[0] = nf; out[1] = oor; out[2] = dec;                                         \
}
DPERM_CSR_SCAN(d32, double, int32_t)
DPERM_CSR_SCAN(f32, float, int32_t)
DPERM_CSR_SCAN(d64, double, int64_t)
DPERM_CSR_SCAN(f64, float, int64_t)

static void dperm_csr_scan(int values_f32, int index_i64, const void *data, const void *ind,
        const void *indptr, ptrdiff_t n, int64_t d, int64_t *out, int nt) {
    if (index_i64) {
        if (values_f32) dperm_csr_scan_f64((const float *)data, (const int64_t *)ind,
                                           (const int64_t *)indptr, n, d, out, nt);
        else dperm_csr_scan_d64((const double *)data, (const int64_t *)ind,
                                (const int64_t *)indptr, n, d, out, nt);
    } else {
        if (values_f32) dperm_csr_scan_f32((const float *)data, (const int32_t *)ind,
                                           (const int32_t *)indptr, n, d, out, nt);
        else dperm_csr_scan_d32((const double *)data, (const int32_t *)ind,
                                (const int32_t *)indptr, n, d, out, nt);
    }
}

/* The one entry point: picks the variant for the value and index types.
 * mode 0: value + gradient, 1: Hessian-vector (as the dense pass); 2: the softmax
 * (multinomial) data term as sums: the m weight vectors are m / K problems of K
 * classes (problem j's class k at j K + k), cls (n,) the class of each row, F gets
 * the m / K loss sums and G the m gradient sums (no 1/n, l2 or B; idx = 0..m-1). */
static int dperm_csr_pass(int values_f32, int index_i64, int mode, const void *data,
        const void *ind, const void *indptr, const double *s, ptrdiff_t n, ptrdiff_t dx,
        ptrdiff_t d, const double *icpt, int loss, double h, const double *W,
        const double *V, const double *l2, const double *B, const ptrdiff_t *idx,
        ptrdiff_t m, double *F, double *G, int nt, double *curv, const int64_t *cls,
        ptrdiff_t K, const double *lab) {
#define DPERM_CSR_CALL(SUF, VT, IT)                                                  \
    return dperm_csr_pass_##SUF(mode, (const VT *)data, (const IT *)ind,             \
                                (const IT *)indptr, s, n, dx, d, icpt, loss, h, W, V, \
                                l2, B, idx, m, F, G, nt, curv, cls, K, lab)
    if (index_i64) {
        if (values_f32) DPERM_CSR_CALL(f64, float, int64_t);
        DPERM_CSR_CALL(d64, double, int64_t);
    }
    if (values_f32) DPERM_CSR_CALL(f32, float, int32_t);
    DPERM_CSR_CALL(d32, double, int32_t);
#undef DPERM_CSR_CALL
}

#endif
