/* Row-access seam of the dperm kernels.
 *
 * Every kernel reads X only through these functions: a dot product of one row
 * with a weight vector, and the accumulation of a block of rows, each scaled by
 * its own coefficient, into a gradient-like vector.  A sparse (CSR) reader is a
 * second set of these functions; the kernels and the solver do not change.
 *
 * X may be float32 or float64; weights and accumulators are always float64, so
 * float32 data halves the memory traffic without losing accuracy in the sums.
 * `omp simd` lets the compiler vectorize the reductions; the order is fixed by
 * the binary, so results do not depend on thread scheduling.
 */
#ifndef DPERM_ROWS_H
#define DPERM_ROWS_H

#include <stddef.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Rows handled together by the block update: the gradient accumulators are
 * loaded and stored once per block instead of once per row. */
#define DPERM_ROW_BLOCK 8

static inline int dperm_openmp_enabled(void) {
#ifdef _OPENMP
    return 1;
#else
    return 0;
#endif
}

static inline int dperm_max_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

#define DPERM_DEFINE_ROW_OPS(T, SUF)                                              \
static inline double dperm_dot_##SUF(const T *restrict x,                          \
                                     const double *restrict w, ptrdiff_t d) {      \
    double s = 0.0;                                                               \
    _Pragma("omp simd reduction(+:s)")                                            \
    for (ptrdiff_t p = 0; p < d; ++p) s += (double)x[p] * w[p];                   \
    return s;                                                                     \
}                                                                                 \
                                                                                  \
/* g += sum_{r < nr} a[r] * x_r, with row r at x + r*d. */                        \
static inline void dperm_block_axpy_##SUF(const T *restrict x, ptrdiff_t nr,       \
                                          const double *restrict a,               \
                                          double *restrict g, ptrdiff_t d) {      \
    if (nr == DPERM_ROW_BLOCK) {                                                  \
        const T *x0 = x, *x1 = x + d, *x2 = x + 2 * d, *x3 = x + 3 * d;           \
        const T *x4 = x + 4 * d, *x5 = x + 5 * d, *x6 = x + 6 * d, *x7 = x + 7 * d; \
        const double a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];                  \
        const double a4 = a[4], a5 = a[5], a6 = a[6], a7 = a[7];                  \
        _Pragma("omp simd")                                                       \
        for (ptrdiff_t p = 0; p < d; ++p) {                                       \
            g[p] += ((a0 * (double)x0[p] + a1 * (double)x1[p])                    \
                   + (a2 * (double)x2[p] + a3 * (double)x3[p]))                   \
                  + ((a4 * (double)x4[p] + a5 * (double)x5[p])                    \
                   + (a6 * (double)x6[p] + a7 * (double)x7[p]));                  \
        }                                                                         \
    } else {                                                                      \
        for (ptrdiff_t r = 0; r < nr; ++r) {                                      \
            const T *xr = x + r * d;                                              \
            const double ar = a[r];                                               \
            _Pragma("omp simd")                                                   \
            for (ptrdiff_t p = 0; p < d; ++p) g[p] += ar * (double)xr[p];         \
        }                                                                         \
    }                                                                             \
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
}

DPERM_DEFINE_ROW_OPS(double, d)
DPERM_DEFINE_ROW_OPS(float, f)

#endif
