/* Row-access seam of the dperm kernels, and the SIMD loops they are built from.
 *
 * The seam: X is read only by dperm_read_rows_{d,f}, which copy a block of rows
 * into a float64 buffer whose rows are 64-byte aligned and zero-padded to a
 * whole number of vectors.  Everything after works on that buffer:
 *   dperm_block_dots   margins of the block's rows against m weight vectors,
 *   dperm_block_gemm   the block's rows, each scaled by one coefficient per
 *                      problem, added into m gradient-like vectors,
 *   dperm_loss_vd/_d2  the margin losses and their derivatives.
 * A sparse (CSR) reader only has to fill the same buffer (or provide its own
 * dots/gemm); the kernels and the solver do not change.
 *
 * X may be float32 or float64; weights and accumulators are always float64, so
 * float32 data halves the memory traffic without losing accuracy in the sums.
 *
 * Determinism: every margin x_r.w_j is computed by the same sequence of
 * operations (a DPERM_VW-lane FMA chain over the features, then one fixed
 * horizontal sum) whichever register tile it falls in, and every gradient entry
 * adds the rows in their order.  So a result depends neither on thread
 * scheduling nor on how many problems are batched together -- only on the
 * binary (vector width) and on the thread count, which fixes the row ranges.
 */
#ifndef DPERM_ROWS_H
#define DPERM_ROWS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

static inline int dperm_openmp_enabled(void) {
#ifdef _OPENMP
    return 1;
#else
    return 0;
#endif
}

/* The largest OpenMP team a pass may start (0: no limit), set by
 * dperm._core._objective.set_team_limit.  A pass splits its rows into nt parts (a
 * function of the data's shape and n_threads only, and summed in part order, so the
 * result never depends on the team); the team that runs the parts is min(nt, limit):
 * on a busy machine fewer threads than parts run them in turn rather than waiting for
 * descheduled team mates (docs: BENCHMARKS.md, "Threads on a busy machine"). */
static int dperm_team_limit = 0;

static inline int dperm_team(ptrdiff_t nt) {
    return (dperm_team_limit > 0 && dperm_team_limit < nt) ? dperm_team_limit : (int)nt;
}

static inline int dperm_set_team_limit(int limit) {
    const int old = dperm_team_limit;
    dperm_team_limit = limit > 0 ? limit : 0;
    return old;
}

static inline int dperm_max_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* ------------------------------------------------------------------------
 * A minimal vector layer: DPERM_VW float64 lanes.  AVX-512, AVX2+FMA and AArch64
 * NEON use intrinsics (the build is ISO C, where the compiler may not fuse a*b+c on its
 * own); anything else falls back to scalar code with the same structure.
 */
#if defined(__AVX512F__)
#define DPERM_VW 8
#define DPERM_DOT_ROWS 4            /* 4x4 margin tiles: 16 of the 32 registers */
#define DPERM_GEMM_VECS 4           /* 4 problems x 4 vectors gradient tiles */
typedef __m512d dperm_v;
typedef __mmask8 dperm_m;
static inline dperm_v dv_zero(void) { return _mm512_setzero_pd(); }
static inline dperm_v dv_set1(double a) { return _mm512_set1_pd(a); }
static inline dperm_v dv_add(dperm_v a, dperm_v b) { return _mm512_add_pd(a, b); }
static inline dperm_v dv_sub(dperm_v a, dperm_v b) { return _mm512_sub_pd(a, b); }
static inline dperm_v dv_mul(dperm_v a, dperm_v b) { return _mm512_mul_pd(a, b); }
static inline dperm_v dv_fma(dperm_v a, dperm_v b, dperm_v c) { return _mm512_fmadd_pd(a, b, c); }
static inline dperm_v dv_min(dperm_v a, dperm_v b) { return _mm512_min_pd(a, b); }
static inline dperm_v dv_max(dperm_v a, dperm_v b) { return _mm512_max_pd(a, b); }
static inline dperm_v dv_abs(dperm_v a) { return _mm512_abs_pd(a); }
static inline dperm_m dv_gt(dperm_v a, dperm_v b) { return _mm512_cmp_pd_mask(a, b, _CMP_GT_OQ); }
static inline dperm_v dv_sel(dperm_m m, dperm_v a, dperm_v b) { return _mm512_mask_blend_pd(m, b, a); }
static inline dperm_v dv_ld(const double *p) { return _mm512_loadu_pd(p); }
static inline dperm_v dv_ldf(const float *p) { return _mm512_cvtps_pd(_mm256_loadu_ps(p)); }
static inline void dv_st(double *p, dperm_v v) { _mm512_storeu_pd(p, v); }
/* p * 2^k for integer-valued k with 2^k normal */
static inline dperm_v dv_ldexp(dperm_v p, dperm_v k) { return _mm512_scalef_pd(p, k); }
/* 1/x to ~1 ulp without the (slow) divider: 14-bit estimate, two Newton steps */
static inline dperm_v dv_recip(dperm_v x) {
    const dperm_v one = _mm512_set1_pd(1.0);
    dperm_v y = _mm512_rcp14_pd(x);
    y = _mm512_fmadd_pd(y, _mm512_fnmadd_pd(x, y, one), y);
    return _mm512_fmadd_pd(y, _mm512_fnmadd_pd(x, y, one), y);
}
/* sum of the 8 lanes as ((v0+v4) + (v2+v6)) + ((v1+v5) + (v3+v7)) */
static inline dperm_v dv_sqrt(dperm_v x) { return _mm512_sqrt_pd(x); }
static inline double dv_hsum(dperm_v v) {
    __m256d s = _mm256_add_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1));
    __m128d t = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
    return _mm_cvtsd_f64(_mm_add_sd(t, _mm_unpackhi_pd(t, t)));
}
/* z0[b] = hsum(r0[b]), z1[b] = hsum(r1[b]) for b < 4, with the same additions as
 * dv_hsum but eight sums at a time (a transpose-and-add tree: 22 instructions
 * instead of 48), so a tile's margins equal those of a single dot product. */
#define DPERM_HAVE_HSUM_2X4 1
static inline __attribute__((always_inline)) void dv_hsum_2x4(
        __m512d r00, __m512d r01, __m512d r02, __m512d r03,
        __m512d r10, __m512d r11, __m512d r12, __m512d r13, double *z0, double *z1) {
    /* (by value, so the accumulators never leave the registers) */
    /* [A|B] 256-bit halves added: lanes i + (i+4) of A, then of B */
#define DPERM_H1(A, B) _mm512_add_pd(_mm512_shuffle_f64x2(A, B, 0x44), \
                                     _mm512_shuffle_f64x2(A, B, 0xEE))
    const __m512d a = DPERM_H1(r00, r01), b = DPERM_H1(r02, r03);
    const __m512d c = DPERM_H1(r10, r11), d = DPERM_H1(r12, r13);
#undef DPERM_H1
    /* a = [hA0 hA1 | hA2 hA3 | hB0 hB1 | hB2 hB3]: add 128-bit lanes 0+1, 2+3 */
    const __m512d p = _mm512_add_pd(_mm512_shuffle_f64x2(a, b, 0x88),
                                    _mm512_shuffle_f64x2(a, b, 0xDD));
    const __m512d q = _mm512_add_pd(_mm512_shuffle_f64x2(c, d, 0x88),
                                    _mm512_shuffle_f64x2(c, d, 0xDD));
    /* p = [qA0 qA1 | qB0 qB1 | qC0 qC1 | qD0 qD1]; pairwise with q's rows */
    const __m512d s = _mm512_add_pd(_mm512_unpacklo_pd(p, q), _mm512_unpackhi_pd(p, q));
    /* s = [A E B F C G D H] -> [A B C D E F G H] */
    const __m512d o = _mm512_permutexvar_pd(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7), s);
    _mm256_storeu_pd(z0, _mm512_castpd512_pd256(o));
    _mm256_storeu_pd(z1, _mm512_extractf64x4_pd(o, 1));
}

#elif defined(__AVX2__) && defined(__FMA__)
#define DPERM_VW 4
#define DPERM_DOT_ROWS 2            /* 2x4 margin tiles fit the 16 registers */
#define DPERM_GEMM_VECS 2
typedef __m256d dperm_v;
typedef __m256d dperm_m;
static inline dperm_v dv_zero(void) { return _mm256_setzero_pd(); }
static inline dperm_v dv_set1(double a) { return _mm256_set1_pd(a); }
static inline dperm_v dv_add(dperm_v a, dperm_v b) { return _mm256_add_pd(a, b); }
static inline dperm_v dv_sub(dperm_v a, dperm_v b) { return _mm256_sub_pd(a, b); }
static inline dperm_v dv_mul(dperm_v a, dperm_v b) { return _mm256_mul_pd(a, b); }
static inline dperm_v dv_fma(dperm_v a, dperm_v b, dperm_v c) { return _mm256_fmadd_pd(a, b, c); }
static inline dperm_v dv_min(dperm_v a, dperm_v b) { return _mm256_min_pd(a, b); }
static inline dperm_v dv_max(dperm_v a, dperm_v b) { return _mm256_max_pd(a, b); }
static inline dperm_v dv_abs(dperm_v a) { return _mm256_andnot_pd(_mm256_set1_pd(-0.0), a); }
static inline dperm_m dv_gt(dperm_v a, dperm_v b) { return _mm256_cmp_pd(a, b, _CMP_GT_OQ); }
static inline dperm_v dv_sel(dperm_m m, dperm_v a, dperm_v b) { return _mm256_blendv_pd(b, a, m); }
static inline dperm_v dv_ld(const double *p) { return _mm256_loadu_pd(p); }
static inline dperm_v dv_ldf(const float *p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }
static inline void dv_st(double *p, dperm_v v) { _mm256_storeu_pd(p, v); }
static inline dperm_v dv_ldexp(dperm_v p, dperm_v k) {
    /* k + 1.5*2^52 holds k in its low mantissa bits; move k + 1023 into the exponent */
    __m256i b = _mm256_castpd_si256(_mm256_add_pd(k, _mm256_set1_pd(6755399441055744.0)));
    b = _mm256_slli_epi64(_mm256_add_epi64(b, _mm256_set1_epi64x(1023)), 52);
    return _mm256_mul_pd(p, _mm256_castsi256_pd(b));
}
static inline dperm_v dv_recip(dperm_v x) { return _mm256_div_pd(_mm256_set1_pd(1.0), x); }
static inline dperm_v dv_sqrt(dperm_v x) { return _mm256_sqrt_pd(x); }
static inline double dv_hsum(dperm_v v) {
    __m128d t = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(t, _mm_unpackhi_pd(t, t)));
}

#elif defined(__aarch64__) && defined(__ARM_NEON)
/* AArch64 Advanced SIMD (NEON, in every ARMv8-A core): 2 lanes, 32 registers.
 * Same structure as the x86 paths; min/max/sel keep the scalar path's NaN rule. */
#include <arm_neon.h>
#define DPERM_VW 2
#define DPERM_DOT_ROWS 2
#define DPERM_GEMM_VECS 4
typedef float64x2_t dperm_v;
typedef uint64x2_t dperm_m;
static inline dperm_v dv_zero(void) { return vdupq_n_f64(0.0); }
static inline dperm_v dv_set1(double a) { return vdupq_n_f64(a); }
static inline dperm_v dv_add(dperm_v a, dperm_v b) { return vaddq_f64(a, b); }
static inline dperm_v dv_sub(dperm_v a, dperm_v b) { return vsubq_f64(a, b); }
static inline dperm_v dv_mul(dperm_v a, dperm_v b) { return vmulq_f64(a, b); }
static inline dperm_v dv_fma(dperm_v a, dperm_v b, dperm_v c) { return vfmaq_f64(c, a, b); }
static inline dperm_v dv_min(dperm_v a, dperm_v b) { return vbslq_f64(vcltq_f64(a, b), a, b); }
static inline dperm_v dv_max(dperm_v a, dperm_v b) { return vbslq_f64(vcgtq_f64(a, b), a, b); }
static inline dperm_v dv_abs(dperm_v a) { return vabsq_f64(a); }
static inline dperm_m dv_gt(dperm_v a, dperm_v b) { return vcgtq_f64(a, b); }
static inline dperm_v dv_sel(dperm_m m, dperm_v a, dperm_v b) { return vbslq_f64(m, a, b); }
static inline dperm_v dv_ld(const double *p) { return vld1q_f64(p); }
static inline dperm_v dv_ldf(const float *p) { return vcvt_f64_f32(vld1_f32(p)); }
static inline void dv_st(double *p, dperm_v v) { vst1q_f64(p, v); }
static inline dperm_v dv_ldexp(dperm_v p, dperm_v k) {
    /* as the AVX2 path: k + 1.5*2^52 holds k in its low bits; k + 1023 to the exponent */
    int64x2_t b = vreinterpretq_s64_f64(vaddq_f64(k, vdupq_n_f64(6755399441055744.0)));
    b = vshlq_n_s64(vaddq_s64(b, vdupq_n_s64(1023)), 52);
    return vmulq_f64(p, vreinterpretq_f64_s64(b));
}
static inline dperm_v dv_recip(dperm_v x) { return vdivq_f64(vdupq_n_f64(1.0), x); }
static inline dperm_v dv_sqrt(dperm_v x) { return vsqrtq_f64(x); }
static inline double dv_hsum(dperm_v v) { return vgetq_lane_f64(v, 0) + vgetq_lane_f64(v, 1); }

#else
#define DPERM_VW 1
#define DPERM_DOT_ROWS 2
#define DPERM_GEMM_VECS 2
typedef double dperm_v;
typedef int dperm_m;
static inline dperm_v dv_zero(void) { return 0.0; }
static inline dperm_v dv_set1(double a) { return a; }
static inline dperm_v dv_add(dperm_v a, dperm_v b) { return a + b; }
static inline dperm_v dv_sub(dperm_v a, dperm_v b) { return a - b; }
static inline dperm_v dv_mul(dperm_v a, dperm_v b) { return a * b; }
static inline dperm_v dv_fma(dperm_v a, dperm_v b, dperm_v c) { return a * b + c; }
/* as minpd/maxpd: the second operand when either is NaN */
static inline dperm_v dv_min(dperm_v a, dperm_v b) { return a < b ? a : b; }
static inline dperm_v dv_max(dperm_v a, dperm_v b) { return a > b ? a : b; }
static inline dperm_v dv_abs(dperm_v a) { return fabs(a); }
static inline dperm_m dv_gt(dperm_v a, dperm_v b) { return a > b; }
static inline dperm_v dv_sel(dperm_m m, dperm_v a, dperm_v b) { return m ? a : b; }
static inline dperm_v dv_ld(const double *p) { return *p; }
static inline dperm_v dv_ldf(const float *p) { return (double)*p; }
static inline void dv_st(double *p, dperm_v v) { *p = v; }
static inline dperm_v dv_ldexp(dperm_v p, dperm_v k) { return ldexp(p, (int)k); }
static inline dperm_v dv_recip(dperm_v x) { return 1.0 / x; }
static inline dperm_v dv_sqrt(dperm_v x) { return sqrt(x); }
static inline double dv_hsum(dperm_v v) { return v; }
#endif

#ifndef DPERM_HAVE_HSUM_2X4
#define DPERM_HAVE_HSUM_2X4 0
static inline void dv_hsum_2x4(dperm_v r00, dperm_v r01, dperm_v r02, dperm_v r03,
                               dperm_v r10, dperm_v r11, dperm_v r12, dperm_v r13,
                               double *z0, double *z1) {
    (void)r00; (void)r01; (void)r02; (void)r03; (void)r10; (void)r11; (void)r12; (void)r13;
    (void)z0; (void)z1;
}
#endif

static inline int dperm_vector_width(void) { return DPERM_VW; }

/* ------------------------------------------------------------------------
 * Single-row helpers (the full Hessian, small d, uses these).
 */
#define DPERM_DEFINE_ROW_OPS(T, SUF)                                              \
static inline double dperm_dot_##SUF(const T *restrict x,                          \
                                     const double *restrict w, ptrdiff_t d) {      \
    double s = 0.0;                                                               \
    _Pragma("omp simd reduction(+:s)")                                            \
    for (ptrdiff_t p = 0; p < d; ++p) s += (double)x[p] * w[p];                   \
    return s;                                                                     \
}                                                                                 \
                                                                                  \
/* Upper triangle of H += a * x x^T (full Hessian, small d only). */              \
static inline void dperm_syr_##SUF(const T *restrict x, double a,                  \
                                   double *restrict H, ptrdiff_t d) {             \
    for (ptrdiff_t p = 0; p < d; ++p) {                                           \
        const double axp = a * (double)x[p];                                      \
        double *Hp = H + p * d;                                                   \
        _Pragma("omp simd")                                                       \
        for (ptrdiff_t q = p; q < d; ++q) Hp[q] += axp * (double)x[q];            \
    }                                                                             \
}                                                                                 \
                                                                                  \
/* The seam: rows [0, nr) of X (row length d), times their labels y = +-1,   */ \
/* into buf (row stride ldx >= d, padding columns kept at zero by the caller). */ \
/* The losses depend on y x only, so the signs never need handling again;     */ \
/* multiplying by +-1 is exact.                                               */ \
static inline void dperm_read_rows_##SUF(const T *restrict x, const double *restrict y, \
                                         ptrdiff_t nr, ptrdiff_t d,               \
                                         double *restrict buf, ptrdiff_t ldx) {   \
    const ptrdiff_t pf = d - d % DPERM_VW;                                        \
    for (ptrdiff_t r = 0; r < nr; ++r) {                                          \
        const T *xr = x + r * d;                                                  \
        double *br = buf + r * ldx;                                               \
        const double yr = y[r];                                                   \
        const dperm_v yv = dv_set1(yr);                                           \
        ptrdiff_t p = 0;                                                          \
        for (; p < pf; p += DPERM_VW) dv_st(br + p, dv_mul(yv, DPERM_LD_##SUF(xr + p))); \
        for (; p < d; ++p) br[p] = yr * (double)xr[p];                            \
    }                                                                             \
}

#define DPERM_LD_d dv_ld
#define DPERM_LD_f dv_ldf
DPERM_DEFINE_ROW_OPS(double, d)
DPERM_DEFINE_ROW_OPS(float, f)

/* Row stride of the block buffer, the packed weights and the gradient
 * accumulators: d rounded up to 8 doubles (one cache line). */
static inline ptrdiff_t dperm_padded_dim(ptrdiff_t d) { return (d + 7) / 8 * 8; }

/* Rows per block: the block is read twice (margins, then gradient) and should
 * still be close (L1/L2) the second time; with many problems, more rows per
 * block spread the load and store of the gradient tiles over more FMAs.  The
 * scratch (rows x m) stays small.  Any value gives the same numbers, so this
 * is a pure speed knob (tuned on AVX-512: d in 20..500, m in 1..64). */
static inline ptrdiff_t dperm_rows_per_block(ptrdiff_t d, ptrdiff_t m) {
    ptrdiff_t rb = 2048 / dperm_padded_dim(d);      /* 16 KiB of rows */
    ptrdiff_t cap = 4096 / (m > 0 ? m : 1);
    if (m >= 16 && rb < 48) rb = 48;
    if (rb > cap) rb = cap;
    if (rb > 64) rb = 64;
    rb -= rb % 4;           /* whole row tiles */
    if (rb < 4) rb = 4;
    return rb;
}

/* ------------------------------------------------------------------------
 * Block kernels on the padded buffer (rows of ldx doubles, nv = ceil(d / VW)
 * vectors of them hold data, the rest of a vector is zero).  Register tiles are
 * small fixed-size arrays of vectors; with constant bounds the compiler unrolls
 * them and keeps them in registers.
 *
 * Margins:  z[r*ldz + j] = x_r . w_j.  Tile R rows x J problems: each step loads
 * R row vectors and J weight vectors for R*J FMAs, so a row is read once per J
 * problems (the "dot4") and a weight vector once per R rows.
 */
#define DPERM_DOTS_TILE(R, J)                                                     \
static inline void dperm_dots_##R##x##J(                                          \
        const double *restrict x, ptrdiff_t ldx, ptrdiff_t nv,                    \
        const double *restrict w, double *restrict z, ptrdiff_t ldz) {            \
    dperm_v acc[R][J], xv[R], wv[J];                                              \
    for (int a = 0; a < R; ++a)                                                   \
        for (int b = 0; b < J; ++b) acc[a][b] = dv_zero();                        \
    for (ptrdiff_t p = 0; p < nv * DPERM_VW; p += DPERM_VW) {                     \
        for (int a = 0; a < R; ++a) xv[a] = dv_ld(x + a * ldx + p);               \
        for (int b = 0; b < J; ++b) wv[b] = dv_ld(w + b * ldx + p);               \
        for (int a = 0; a < R; ++a)                                               \
            for (int b = 0; b < J; ++b) acc[a][b] = dv_fma(xv[a], wv[b], acc[a][b]); \
    }                                                                             \
    if (DPERM_HAVE_HSUM_2X4 && J == 4 && R % 2 == 0) {                            \
        for (int a = 0; a < R; a += 2)                                            \
            /* (indices mod J only keep the untaken J == 1 instance in bounds) */ \
            dv_hsum_2x4(acc[a][0], acc[a][1 % J], acc[a][2 % J], acc[a][3 % J],   \
                        acc[a + 1][0], acc[a + 1][1 % J], acc[a + 1][2 % J],      \
                        acc[a + 1][3 % J], z + a * ldz, z + (a + 1) * ldz);       \
    } else {                                                                      \
        for (int a = 0; a < R; ++a)                                               \
            for (int b = 0; b < J; ++b) z[a * ldz + b] = dv_hsum(acc[a][b]);      \
    }                                                                             \
}

/* Gradient update:  g_j[p] += sum_r c[r*ldc + j] * x_r[p]  (rows in order).
 * Tile J problems x P vectors of features, kept in registers over the block. */
#define DPERM_GEMM_TILE(J, P)                                                     \
static inline void dperm_gemm_##J##x##P(                                          \
        const double *restrict x, ptrdiff_t nr, ptrdiff_t ldx,                    \
        const double *restrict c, ptrdiff_t ldc, double *restrict g) {            \
    dperm_v acc[J][P], xv[P];                                                     \
    for (int b = 0; b < J; ++b)                                                   \
        for (int v = 0; v < P; ++v) acc[b][v] = dv_ld(g + b * ldx + v * DPERM_VW); \
    for (ptrdiff_t r = 0; r < nr; ++r) {                                          \
        for (int v = 0; v < P; ++v) xv[v] = dv_ld(x + r * ldx + v * DPERM_VW);    \
        for (int b = 0; b < J; ++b) {                                             \
            const dperm_v cb = dv_set1(c[r * ldc + b]);                           \
            for (int v = 0; v < P; ++v) acc[b][v] = dv_fma(cb, xv[v], acc[b][v]); \
        }                                                                         \
    }                                                                             \
    for (int b = 0; b < J; ++b)                                                   \
        for (int v = 0; v < P; ++v) dv_st(g + b * ldx + v * DPERM_VW, acc[b][v]); \
}

#define DPERM_DOTS_TILE_X(R, J) DPERM_DOTS_TILE(R, J)
#define DPERM_CAT4(a, b, c, d) a##b##c##d
#define DPERM_CAT4_X(a, b, c, d) DPERM_CAT4(a, b, c, d)
#define DPERM_DOTS_RX4 DPERM_CAT4_X(dperm_dots_, DPERM_DOT_ROWS, x, 4)
#define DPERM_DOTS_RX1 DPERM_CAT4_X(dperm_dots_, DPERM_DOT_ROWS, x, 1)

DPERM_DOTS_TILE_X(DPERM_DOT_ROWS, 4)
DPERM_DOTS_TILE_X(DPERM_DOT_ROWS, 1)
DPERM_DOTS_TILE(1, 4)
DPERM_DOTS_TILE(1, 1)
DPERM_GEMM_TILE(4, 1)
DPERM_GEMM_TILE(4, 2)
DPERM_GEMM_TILE(4, 3)
DPERM_GEMM_TILE(4, 4)
DPERM_GEMM_TILE(4, 5)
DPERM_GEMM_TILE(1, 1)
DPERM_GEMM_TILE(1, 2)
DPERM_GEMM_TILE(1, 3)
DPERM_GEMM_TILE(1, 4)
DPERM_GEMM_TILE(1, 5)

/* z[r*m + j] = x_r . w_j for r < nr, j < m (W: m rows of stride ldx, padded
 * with zeros like the block).
 * pf, pf_bytes: memory to prefetch (the next block of X) while this runs.  When
 * the pass is compute-bound (many problems) the hardware prefetcher alone
 * leaves the next block's read exposed; prefetches spread over the tiles hide
 * it (a burst of them at once does not: it stalls on the fill buffers). */
static void dperm_block_dots(const double *restrict x, ptrdiff_t nr, ptrdiff_t d,
                             ptrdiff_t ldx, const double *restrict w, ptrdiff_t m,
                             double *restrict z, const void *pf, ptrdiff_t pf_bytes) {
    const ptrdiff_t nv = (d + DPERM_VW - 1) / DPERM_VW;
    const ptrdiff_t nrt = nr - nr % DPERM_DOT_ROWS;
    ptrdiff_t r, j = 0;
    /* prefetch only with enough tiles to spread over (else: the hardware's job) */
    const ptrdiff_t tiles = (m / 4) * (nrt / DPERM_DOT_ROWS);
    const char *pfc = (const char *)pf;
    const char *const pfe = (pf != NULL && tiles >= 4) ? pfc + pf_bytes : pfc;
    const ptrdiff_t per = tiles > 0 ? (pf_bytes / 64 + tiles - 1) / tiles : 0;
    /* problems outer: four weight vectors stay in L1 while the block's rows pass */
    for (; j + 4 <= m; j += 4) {
        for (r = 0; r < nrt; r += DPERM_DOT_ROWS) {
            DPERM_DOTS_RX4(x + r * ldx, ldx, nv, w + j * ldx, z + r * m + j, m);
            for (ptrdiff_t q = 0; q < per && pfc < pfe; ++q, pfc += 64)
                __builtin_prefetch(pfc, 0, 3);
        }
        for (; r < nr; ++r)
            dperm_dots_1x4(x + r * ldx, ldx, nv, w + j * ldx, z + r * m + j, m);
    }
    for (; j < m; ++j) {
        for (r = 0; r < nrt; r += DPERM_DOT_ROWS)
            DPERM_DOTS_RX1(x + r * ldx, ldx, nv, w + j * ldx, z + r * m + j, m);
        for (; r < nr; ++r)
            dperm_dots_1x1(x + r * ldx, ldx, nv, w + j * ldx, z + r * m + j, m);
    }
}

/* g[j*ldx + p] += sum_{r<nr} c[r*m + j] x_r[p] (G: m rows of stride ldx).
 * pf, pf_bytes: as in dperm_block_dots (the caller splits the next block
 * between the two: spread thinner, the prefetches hide more of the read). */
static void dperm_block_gemm(const double *restrict x, ptrdiff_t nr, ptrdiff_t d,
                             ptrdiff_t ldx, const double *restrict c, ptrdiff_t m,
                             double *restrict g, const void *pf, ptrdiff_t pf_bytes) {
    const ptrdiff_t nv = (d + DPERM_VW - 1) / DPERM_VW;
    const ptrdiff_t C = DPERM_GEMM_VECS;
    /* prefetch as in dperm_block_dots, spread over the tiles */
    const ptrdiff_t tiles = ((m + 3) / 4) * ((nv + C - 1) / C);
    const char *pfc = (const char *)pf;
    const char *const pfe = (pf != NULL && m >= 4) ? pfc + pf_bytes : pfc;
    const ptrdiff_t per = tiles > 0 ? (pf_bytes / 64 + tiles - 1) / tiles : 0;
    ptrdiff_t j = 0;
    for (; j < m; ) {
        const int four = j + 4 <= m;
        ptrdiff_t v = 0;
        while (v < nv) {
            /* chunks of C vectors; a lone leftover vector joins the last chunk */
            ptrdiff_t P = nv - v;
            if (P > C) P = (P == C + 1) ? C + 1 : C;
            const double *xv = x + v * DPERM_VW;
            double *gv = g + j * ldx + v * DPERM_VW;
            if (four) {
                switch (P) {
                case 1: dperm_gemm_4x1(xv, nr, ldx, c + j, m, gv); break;
                case 2: dperm_gemm_4x2(xv, nr, ldx, c + j, m, gv); break;
                case 3: dperm_gemm_4x3(xv, nr, ldx, c + j, m, gv); break;
                case 4: dperm_gemm_4x4(xv, nr, ldx, c + j, m, gv); break;
                default: dperm_gemm_4x5(xv, nr, ldx, c + j, m, gv); break;
                }
            } else {
                switch (P) {
                case 1: dperm_gemm_1x1(xv, nr, ldx, c + j, m, gv); break;
                case 2: dperm_gemm_1x2(xv, nr, ldx, c + j, m, gv); break;
                case 3: dperm_gemm_1x3(xv, nr, ldx, c + j, m, gv); break;
                case 4: dperm_gemm_1x4(xv, nr, ldx, c + j, m, gv); break;
                default: dperm_gemm_1x5(xv, nr, ldx, c + j, m, gv); break;
                }
            }
            v += P;
            for (ptrdiff_t q = 0; q < per && pfc < pfe; ++q, pfc += 64)
                __builtin_prefetch(pfc, 0, 3);
        }
        j += four ? 4 : 1;
    }
}

/* ------------------------------------------------------------------------
 * Margin losses over a block of margins z (already multiplied by y), vectorized.
 * Same definitions as _losses.pxd; the ids are the enum below; pseudo-Huber is a
 * regression loss of the residual (the pass subtracts the labels from the scores
 * first, dperm_sub_labels).
 * exp and log1p are evaluated here with polynomials (libm has no vector
 * versions in an ISO build), accurate to a few ulp, for any finite z.
 * Each step works on NU independent vectors (a compile-time constant after
 * inlining): one vector's polynomial chains (~160 cycles deep) are latency-
 * bound, eight interleaved keep the FMA ports busy.
 */
/* The kernel ids of the losses.  Each loss is declared once, in dperm/losses.py (its id,
 * name, gradient and curvature bounds); these ids are checked against that table by
 * tests/test_losses.py (through dperm._core._objective.KERNEL_LOSS_IDS).  An id outside
 * them is no loss: the dispatchers below write NaN for it, never another loss's values,
 * and the Python entry points refuse it (dperm_loss_known). */
enum {
    DPERM_LOSS_LOGISTIC = 0,
    DPERM_LOSS_HUBER = 1,
    DPERM_LOSS_SMOOTH_HINGE = 2,
    DPERM_LOSS_PSEUDO_HUBER = 3,
    DPERM_N_LOSSES = 4
};

static inline int dperm_loss_known(int loss) {
    return loss >= 0 && loss < DPERM_N_LOSSES;
}

#if DPERM_VW == 8
#define DPERM_LU 8
#else
#define DPERM_LU 4
#endif
#define DPERM_EACH(u) for (int u = 0; u < NU; ++u)

/* e^-a for a >= 0 (0 beyond a = 708, where e^-a leaves the normal range). */
static inline __attribute__((always_inline)) void dv_exp_neg(const int NU, const dperm_v *a,
                                                             dperm_v *out) {
    const dperm_v lim = dv_set1(708.0), shift = dv_set1(6755399441055744.0); /* 1.5*2^52 */
    dperm_v k[DPERM_LU], r[DPERM_LU], p[DPERM_LU];
    DPERM_EACH(u) {
        /* -min(a, 708), keeping NaN; k = round(t / ln 2), r = t - k ln 2 (Cody & Waite) */
        const dperm_v t = dv_sub(dv_zero(), dv_min(lim, a[u]));
        k[u] = dv_sub(dv_add(dv_mul(t, dv_set1(1.4426950408889634)), shift), shift);
        r[u] = dv_fma(k[u], dv_set1(-6.93147180369123816490e-01), t);
        r[u] = dv_fma(k[u], dv_set1(-1.90821492927058770002e-10), r[u]);
        p[u] = dv_set1(2.5114879796112015e-08);
    }
    /* e^r, |r| <= ln(2)/2: degree 11, the Taylor series economized with
     * Chebyshev polynomials (truncation < 4e-18; c0 = c1 = 1 exactly) */
    static const double c[11] = {
        2.763265216957956e-07, 2.7557224927351573e-06, 2.480148544815057e-05,
        0.00019841269909250933, 0.001388888895234707, 0.00833333333330951,
        0.041666666666487974, 0.16666666666666702, 0.5000000000000019, 1.0, 1.0};
    for (int i = 0; i < 11; ++i) {
        const dperm_v ci = dv_set1(c[i]);
        DPERM_EACH(u) p[u] = dv_fma(p[u], r[u], ci);
    }
    DPERM_EACH(u) out[u] = dv_sel(dv_gt(a[u], lim), dv_zero(), dv_ldexp(p[u], k[u]));
}

/* log1p(e) for e in [0, 1] given s = e / (2 + e) in [0, 1/3]: 2 atanh(s) =
 * 2 s f(s^2), f(t) = sum_k t^k / (2k + 1) on [0, 1/9]; f is its series
 * economized with Chebyshev polynomials to degree 10 (truncation < 2e-18). */
static inline __attribute__((always_inline)) void dv_log1p_from_s(const int NU, const dperm_v *s,
                                                                  dperm_v *out) {
    dperm_v s2[DPERM_LU], p[DPERM_LU];
    DPERM_EACH(u) {
        s2[u] = dv_mul(s[u], s[u]);
        p[u] = dv_set1(0.08528287251473514);
    }
    static const double c[10] = {
        0.041588104702145766, 0.060558960079100006, 0.06650081100282697,
        0.07693315371624586, 0.09090870008906127, 0.11111112052466518,
        0.14285714272520955, 0.20000000000094656, 0.3333333333333307, 1.0};
    for (int i = 0; i < 10; ++i) {
        const dperm_v ci = dv_set1(c[i]);
        DPERM_EACH(u) p[u] = dv_fma(p[u], s2[u], ci);
    }
    DPERM_EACH(u) out[u] = dv_mul(dv_add(s[u], s[u]), p[u]);
}

/* phi and phi' (want_val) or phi'' of NU vectors of margins.  Derivatives
 * are clamped to their exact ranges ([-1, 0], [0, c]) so rounding never crosses
 * the bounds the privacy analysis uses; min/max take the computed value as
 * their second operand so a NaN margin still gives NaN (the line search must
 * see it). */
static inline __attribute__((always_inline)) void dv_loss(
        const int NU, int loss, double h, int want_val, const dperm_v *z,
        dperm_v *val, dperm_v *d1, dperm_v *d2) {
    const dperm_v zero = dv_zero(), one = dv_set1(1.0), mone = dv_set1(-1.0);
    if (loss == DPERM_LOSS_LOGISTIC) {
        /* log(1 + e^-z) = max(-z, 0) + log1p(e), e = e^-|z|; one reciprocal */
        dperm_v a[DPERM_LU], e[DPERM_LU], q[DPERM_LU], s[DPERM_LU], lp[DPERM_LU];
        DPERM_EACH(u) a[u] = dv_abs(z[u]);
        dv_exp_neg(NU, a, e);
        DPERM_EACH(u) {
            const dperm_v u1 = dv_add(one, e[u]), u2 = dv_add(dv_set1(2.0), e[u]);
            const dperm_v inv = dv_recip(dv_mul(u1, u2));
            q[u] = dv_min(one, dv_mul(u2, inv));                 /* 1 / (1 + e) */
            s[u] = dv_mul(dv_mul(e[u], u1), inv);                /* e / (2 + e) */
        }
        if (want_val) {
            dv_log1p_from_s(NU, s, lp);
            DPERM_EACH(u) {
                val[u] = dv_add(dv_max(zero, dv_sub(zero, z[u])), lp[u]);
                d1[u] = dv_sub(zero, dv_sel(dv_gt(z[u], zero), dv_mul(e[u], q[u]), q[u]));
            }
        } else {
            DPERM_EACH(u) d2[u] = dv_min(dv_set1(0.25), dv_mul(dv_mul(e[u], q[u]), q[u]));
        }
        return;
    }
    if (loss == DPERM_LOSS_PSEUDO_HUBER) {
        /* pseudo-Huber of the residual r = z: rho = h^2 (sqrt(1 + t^2) - 1), t = r / h,
         * written h |r| |t| / (s + 1), s = sqrt(1 + t^2) (no cancellation at small r);
         * rho' = h t / s in [-h, h], rho'' = 1 / s^3 in [0, 1].  t is clamped to
         * +-1e150 before squaring (the ratios are then exact to rounding: no overflow). */
        const dperm_v hv = dv_set1(h), ih = dv_set1(1.0 / h), lim = dv_set1(1e150);
        const dperm_v mlim = dv_set1(-1e150), mh = dv_set1(-h);
        DPERM_EACH(u) {
            const dperm_v t = dv_max(mlim, dv_min(lim, dv_mul(z[u], ih)));
            const dperm_v s = dv_sqrt(dv_fma(t, t, one));
            if (want_val) {
                const dperm_v ratio = dv_mul(dv_abs(t), dv_recip(dv_add(s, one)));
                val[u] = dv_mul(dv_mul(hv, dv_abs(z[u])), ratio);
                d1[u] = dv_max(mh, dv_min(hv, dv_mul(hv, dv_mul(t, dv_recip(s)))));
            } else {
                const dperm_v is = dv_recip(s);
                d2[u] = dv_max(zero, dv_min(one, dv_mul(dv_mul(is, is), is)));
            }
        }
        return;
    }
    const dperm_v hv = dv_set1(h);
    const double h3 = h * h * h;
    DPERM_EACH(u) {
        const dperm_v uu = dv_sub(one, z[u]), a = dv_add(uu, hv);
        const dperm_m hi = dv_gt(uu, hv);                     /* z < 1 - h: linear */
        const dperm_m lo = dv_gt(dv_sub(zero, hv), uu);       /* z > 1 + h: zero */
        dperm_v vm = zero, gm = zero, cm;
        if (loss == DPERM_LOSS_HUBER) {
            /* (1 + h - z)^2 / (4h) */
            if (want_val) {
                vm = dv_mul(dv_mul(a, a), dv_set1(1.0 / (4.0 * h)));
                gm = dv_mul(a, dv_set1(-1.0 / (2.0 * h)));
            }
            cm = dv_set1(1.0 / (2.0 * h));
        } else {            /* DPERM_LOSS_SMOOTH_HINGE (only known ids get here) */
            /* the quartic of eq. 38 factored: (u + h)^3 (3h - u) / (16 h^3); the
             * factored form is >= 0 and exactly 0 at u = -h (no cancellation) */
            if (want_val) {
                const dperm_v a2 = dv_mul(a, a);
                vm = dv_mul(dv_mul(dv_mul(a2, a), dv_sub(dv_set1(3.0 * h), uu)),
                            dv_set1(1.0 / (16.0 * h3)));
                gm = dv_mul(dv_mul(a2, dv_sub(dv_set1(2.0 * h), uu)),
                            dv_set1(-1.0 / (4.0 * h3)));
            }
            cm = dv_min(dv_set1(3.0 / (4.0 * h)),
                        dv_mul(dv_mul(a, dv_sub(hv, uu)), dv_set1(3.0 / (4.0 * h3))));
        }
        if (want_val) {
            val[u] = dv_sel(hi, uu, dv_sel(lo, zero, vm));
            d1[u] = dv_max(mone, dv_sel(hi, mone, dv_sel(lo, zero, gm)));
        } else {
            d2[u] = dv_sel(hi, zero, dv_sel(lo, zero, dv_max(zero, cm)));
        }
    }
}

/* The loop over a block for one (compile-time) loss, so the compiler keeps the
 * polynomial constants out of the loop: groups of DPERM_LU vectors, then single
 * vectors, the last one through a zero-padded copy. */
static inline __attribute__((always_inline)) void dperm_loss_loop(
        int loss, int want_val, double h, ptrdiff_t cnt, const double *restrict z,
        double *restrict val, double *restrict d1, double *restrict d2) {
    dperm_v zz[DPERM_LU], vv[DPERM_LU], gg[DPERM_LU], cc[DPERM_LU];
    ptrdiff_t q = 0;
    for (; q + DPERM_LU * DPERM_VW <= cnt; q += DPERM_LU * DPERM_VW) {
        for (int u = 0; u < DPERM_LU; ++u) zz[u] = dv_ld(z + q + u * DPERM_VW);
        dv_loss(DPERM_LU, loss, h, want_val, zz, vv, gg, cc);
        for (int u = 0; u < DPERM_LU; ++u) {
            if (want_val) {
                dv_st(val + q + u * DPERM_VW, vv[u]);
                dv_st(d1 + q + u * DPERM_VW, gg[u]);
            } else {
                dv_st(d2 + q + u * DPERM_VW, cc[u]);
            }
        }
    }
    /* leftover whole vectors (few problems, small blocks): 4, 2 at a time */
#define DPERM_LOSS_PART(NUP)                                                      \
    if (DPERM_LU > NUP && q + NUP * DPERM_VW <= cnt) {                            \
        for (int u = 0; u < NUP; ++u) zz[u] = dv_ld(z + q + u * DPERM_VW);        \
        dv_loss(NUP, loss, h, want_val, zz, vv, gg, cc);                          \
        for (int u = 0; u < NUP; ++u) {                                           \
            if (want_val) {                                                       \
                dv_st(val + q + u * DPERM_VW, vv[u]);                             \
                dv_st(d1 + q + u * DPERM_VW, gg[u]);                              \
            } else {                                                              \
                dv_st(d2 + q + u * DPERM_VW, cc[u]);                              \
            }                                                                     \
        }                                                                         \
        q += NUP * DPERM_VW;                                                      \
    }
    DPERM_LOSS_PART(4)
    DPERM_LOSS_PART(2)
#undef DPERM_LOSS_PART
    for (; q < cnt; q += DPERM_VW) {
        double tz[DPERM_VW] = {0.0}, t1[DPERM_VW], t2[DPERM_VW];
        const ptrdiff_t n = cnt - q < DPERM_VW ? cnt - q : DPERM_VW;
        const size_t bytes = (size_t)n * sizeof(double);
        memcpy(tz, z + q, bytes);
        zz[0] = dv_ld(tz);
        dv_loss(1, loss, h, want_val, zz, vv, gg, cc);
        if (want_val) {
            dv_st(t1, vv[0]);
            dv_st(t2, gg[0]);
            memcpy(val + q, t1, bytes);
            memcpy(d1 + q, t2, bytes);
        } else {
            dv_st(t2, cc[0]);
            memcpy(d2 + q, t2, bytes);
        }
    }
}

/* out[q] = e^-a[q] for q < cnt (a >= 0): the vector exp in groups, the last vector
 * through a zero-padded copy, so each value depends on its own a[q] alone. */
static void dperm_exp_neg_array(ptrdiff_t cnt, const double *restrict a,
                                double *restrict out) {
    dperm_v av[DPERM_LU], ev[DPERM_LU];
    ptrdiff_t q = 0;
    for (; q + DPERM_LU * DPERM_VW <= cnt; q += DPERM_LU * DPERM_VW) {
        for (int u = 0; u < DPERM_LU; ++u) av[u] = dv_ld(a + q + u * DPERM_VW);
        dv_exp_neg(DPERM_LU, av, ev);
        for (int u = 0; u < DPERM_LU; ++u) dv_st(out + q + u * DPERM_VW, ev[u]);
    }
    for (; q < cnt; q += DPERM_VW) {
        double ta[DPERM_VW] = {0.0}, te[DPERM_VW];
        const ptrdiff_t nq = cnt - q < DPERM_VW ? cnt - q : DPERM_VW;
        memcpy(ta, a + q, (size_t)nq * sizeof(double));
        av[0] = dv_ld(ta);
        dv_exp_neg(1, av, ev);
        dv_st(te, ev[0]);
        memcpy(out + q, te, (size_t)nq * sizeof(double));
    }
}

/* Softmax cross-entropy of a block of nr rows for m problems of K classes: the
 * margins of row r, problem j are z[(r*m + j)*K + k], k < K (the layout of
 * dperm_block_dots with the m*K weight vectors of W (m, K, d)).  Writes
 *   val[r*m + j] = log sum_k e^{z_k} - z_{y_r}        (>= 0)
 *   c[(r*m + j)*K + k] = softmax_k - [k == y_r]        (the gradient coefficients)
 * with tmp (nr*m*K doubles) for mx - z_k >= 0, whose exponentials go through
 * the vector exp on the whole block at once. */
static void dperm_softmax_block(ptrdiff_t nr, ptrdiff_t m, ptrdiff_t K,
                                const double *restrict z, const int64_t *restrict y,
                                double *restrict val, double *restrict c,
                                double *restrict tmp) {
    const ptrdiff_t groups = nr * m;
    for (ptrdiff_t g = 0; g < groups; ++g) {
        const double *zg = z + g * K;
        double mx = zg[0];
        for (ptrdiff_t k = 1; k < K; ++k) mx = zg[k] > mx ? zg[k] : mx;
        for (ptrdiff_t k = 0; k < K; ++k) tmp[g * K + k] = mx - zg[k];
    }
    dperm_exp_neg_array(groups * K, tmp, c);
    for (ptrdiff_t g = 0; g < groups; ++g) {
        double *cg = c + g * K;
        const ptrdiff_t yr = (ptrdiff_t)y[g / m];
        double sum = 0.0;
        for (ptrdiff_t k = 0; k < K; ++k) sum += cg[k];      /* >= 1: e^0 is in it */
        val[g] = log(sum) + tmp[g * K + yr];                 /* + (mx - z_y) */
        const double inv = 1.0 / sum;
        for (ptrdiff_t k = 0; k < K; ++k) cg[k] *= inv;
        cg[yr] -= 1.0;
    }
}

/* acc[j] += sum_r v[r*m + j], rows in order (loss sums of a block). */
static void dperm_add_rows(const double *restrict v, ptrdiff_t nr, ptrdiff_t m,
                           double *restrict acc) {
    for (ptrdiff_t r = 0; r < nr; ++r) {
        const double *vr = v + r * m;
        _Pragma("omp simd")
        for (ptrdiff_t j = 0; j < m; ++j) acc[j] += vr[j];
    }
}

/* Residuals of a regression loss: z[r*ld + j] -= lab[r] for r < nr, j < m (the scores
 * of row r under the m problems, minus the row's label). */
static void dperm_sub_labels(double *restrict z, const double *restrict lab, ptrdiff_t nr,
                             ptrdiff_t m, ptrdiff_t ld) {
    for (ptrdiff_t r = 0; r < nr; ++r) {
        double *zr = z + r * ld;
        const double yr = lab[r];
        _Pragma("omp simd")
        for (ptrdiff_t j = 0; j < m; ++j) zr[j] -= yr;
    }
}

/* c[q] *= s[q] for q < cnt. */
static void dperm_mul(double *restrict c, const double *restrict s, ptrdiff_t cnt) {
    _Pragma("omp simd")
    for (ptrdiff_t q = 0; q < cnt; ++q) c[q] *= s[q];
}

/* q < cnt: NaN (an unknown loss id: no loss's values stand in for it). */
static void dperm_fill_nan(double *restrict v, ptrdiff_t cnt) {
    for (ptrdiff_t q = 0; q < cnt; ++q) v[q] = NAN;
}

/* val[q] = phi(z[q]) and d1[q] = phi'(z[q]) for q < cnt (NaN for an unknown id).  The
 * switch runs once per block; each case is the loop compiled for that one loss. */
static void dperm_loss_vd(int loss, double h, ptrdiff_t cnt, const double *restrict z,
                          double *restrict val, double *restrict d1) {
    switch (loss) {
    case DPERM_LOSS_LOGISTIC:
        dperm_loss_loop(DPERM_LOSS_LOGISTIC, 1, h, cnt, z, val, d1, NULL);
        break;
    case DPERM_LOSS_PSEUDO_HUBER:
        dperm_loss_loop(DPERM_LOSS_PSEUDO_HUBER, 1, h, cnt, z, val, d1, NULL);
        break;
    case DPERM_LOSS_HUBER:
        dperm_loss_loop(DPERM_LOSS_HUBER, 1, h, cnt, z, val, d1, NULL);
        break;
    case DPERM_LOSS_SMOOTH_HINGE:
        dperm_loss_loop(DPERM_LOSS_SMOOTH_HINGE, 1, h, cnt, z, val, d1, NULL);
        break;
    default:
        dperm_fill_nan(val, cnt);
        dperm_fill_nan(d1, cnt);
    }
}

/* d2[q] = phi''(z[q]) for q < cnt (NaN for an unknown id). */
static void dperm_loss_d2(int loss, double h, ptrdiff_t cnt, const double *restrict z,
                          double *restrict d2) {
    switch (loss) {
    case DPERM_LOSS_LOGISTIC:
        dperm_loss_loop(DPERM_LOSS_LOGISTIC, 0, h, cnt, z, NULL, NULL, d2);
        break;
    case DPERM_LOSS_PSEUDO_HUBER:
        dperm_loss_loop(DPERM_LOSS_PSEUDO_HUBER, 0, h, cnt, z, NULL, NULL, d2);
        break;
    case DPERM_LOSS_HUBER:
        dperm_loss_loop(DPERM_LOSS_HUBER, 0, h, cnt, z, NULL, NULL, d2);
        break;
    case DPERM_LOSS_SMOOTH_HINGE:
        dperm_loss_loop(DPERM_LOSS_SMOOTH_HINGE, 0, h, cnt, z, NULL, NULL, d2);
        break;
    default:
        dperm_fill_nan(d2, cnt);
    }
}

#endif
