/* Alternatives for the two sweeps of the CSR pass (dperm/_core/_csr.h), timed side by side
 * on one-hot rows (30 non-zeros a row out of 400 columns, int32 indices, float64 values).
 *
 *   cc -O3 -march=x86-64-v4 -std=c11 -fopenmp -Idperm/_core benchmarks/csr_kernel_probe.c \
 *      -o /tmp/csr_kernel_probe -lm && /tmp/csr_kernel_probe 4096 && /tmp/csr_kernel_probe 200000
 *
 * (needs AVX-512; the argument is the number of rows: 4096 keeps everything in L2, so
 * the numbers are the instruction cost; 200000 rows read X from memory).  Best of 30,
 * nanoseconds per stored entry.  Reported in BENCHMARKS.md ("The CSR pass against the
 * read bandwidth").
 *
 * margins (x_r.w for every row):
 *   scalar4   the kernel's k = 1 path: four interleaved scalar partial sums
 *   gather4   AVX2 4-lane hardware gather, lane q = partial q: the same bits as scalar4
 *   gather8   AVX-512 8-lane gather, eight partials (different rounding, for scale)
 * scatter (g += c_r x_r for every row):
 *   csr       the kernel's k = 1 path: scalar read-modify-write, 4 rows of RMW in flight
 *   simd      AVX-512 gather, FMA, scatter of 8 entries of a row (same bits as csr)
 *   csc       a transposed (CSC) copy built once: per column, a gather of c over its rows
 *             (no read-modify-write; but a second copy of X to read from memory)
 */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>
#include "_csr.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static double gather4(const double *x, const int32_t *ind, ptrdiff_t p, ptrdiff_t p1, const double *w) {
    __m256d a = _mm256_setzero_pd();
    for (; p + 4 <= p1; p += 4)
        a = _mm256_fmadd_pd(_mm256_loadu_pd(x + p),
                            _mm256_i32gather_pd(w, _mm_loadu_si128((const __m128i *)(ind + p)), 8), a);
    double l[4];
    _mm256_storeu_pd(l, a);
    if (p < p1) l[0] = fma(x[p], w[ind[p]], l[0]);
    if (p + 1 < p1) l[1] = fma(x[p + 1], w[ind[p + 1]], l[1]);
    if (p + 2 < p1) l[2] = fma(x[p + 2], w[ind[p + 2]], l[2]);
    return (l[0] + l[1]) + (l[2] + l[3]);
}

static double gather8(const double *x, const int32_t *ind, ptrdiff_t p, ptrdiff_t p1, const double *w) {
    __m512d a = _mm512_setzero_pd();
    for (; p + 8 <= p1; p += 8)
        a = _mm512_fmadd_pd(_mm512_loadu_pd(x + p),
                            _mm512_i32gather_pd(_mm256_loadu_si256((const __m256i *)(ind + p)), w, 8), a);
    if (p < p1) {
        const __mmask8 m = (__mmask8)((1u << (p1 - p)) - 1);
        a = _mm512_mask3_fmadd_pd(_mm512_maskz_loadu_pd(m, x + p),
                                  _mm512_mask_i32gather_pd(_mm512_setzero_pd(), m,
                                                           _mm256_maskz_loadu_epi32(m, ind + p), w, 8),
                                  a, m);
    }
    return _mm512_reduce_add_pd(a);
}

static void scatter_simd(const double *x, const int32_t *ind, const int32_t *ptr, ptrdiff_t r0,
                         ptrdiff_t r1, const double *c, double *g) {
    for (ptrdiff_t r = r0; r < r1; ++r) {
        const __m512d cv = _mm512_set1_pd(c[r]);
        ptrdiff_t p = ptr[r];
        const ptrdiff_t p1 = ptr[r + 1];
        for (; p + 8 <= p1; p += 8) {   /* a row's indices are distinct: no conflicts */
            const __m256i k = _mm256_loadu_si256((const __m256i *)(ind + p));
            const __m512d gv = _mm512_i32gather_pd(k, g, 8);
            _mm512_i32scatter_pd(g, k, _mm512_fmadd_pd(_mm512_loadu_pd(x + p), cv, gv), 8);
        }
        if (p < p1) {
            const __mmask8 m = (__mmask8)((1u << (p1 - p)) - 1);
            const __m256i k = _mm256_maskz_loadu_epi32(m, ind + p);
            const __m512d gv = _mm512_mask_i32gather_pd(_mm512_setzero_pd(), m, k, g, 8);
            _mm512_mask_i32scatter_pd(g, m, k, _mm512_fmadd_pd(_mm512_maskz_loadu_pd(m, x + p), cv, gv), 8);
        }
    }
}

int main(int argc, char **argv) {
    const ptrdiff_t n = argc > 1 ? atol(argv[1]) : 4096, F = 30, d = 400, nnz = n * F;
    int32_t *ptr = malloc((n + 1) * sizeof *ptr), *ind = malloc(nnz * sizeof *ind);
    double *x = malloc(nnz * sizeof *x), *c = malloc(n * sizeof *c), *w = malloc(d * sizeof *w);
    double *z = malloc(n * sizeof *z), *s = malloc(n * sizeof *s);
    srand(1);
    ptr[0] = 0;
    for (ptrdiff_t r = 0; r < n; ++r) {       /* 3 dense numeric columns, 27 one-hot fields */
        for (ptrdiff_t f = 0; f < F; ++f) {
            ind[r * F + f] = (int32_t)(10 + f * 13 + (f < 3 ? 0 : rand() % 13));
            x[r * F + f] = f < 3 ? (rand() % 1000) / 1000.0 + 0.1 : 1.0;
        }
        ptr[r + 1] = (int32_t)((r + 1) * F);
        c[r] = 0.001 * (double)(r % 17) - 0.008;
        s[r] = 1.0;
    }
    for (ptrdiff_t j = 0; j < d; ++j) w[j] = 0.01 * (double)(j % 13 - 6);
    /* the CSC copy */
    int32_t *cp = calloc(d + 1, sizeof *cp), *ri = malloc(nnz * sizeof *ri), *pos = malloc(d * sizeof *pos);
    double *cv = malloc(nnz * sizeof *cv);
    for (ptrdiff_t p = 0; p < nnz; ++p) cp[ind[p] + 1]++;
    for (ptrdiff_t j = 0; j < d; ++j) { cp[j + 1] += cp[j]; pos[j] = cp[j]; }
    for (ptrdiff_t r = 0; r < n; ++r)
        for (ptrdiff_t p = ptr[r]; p < ptr[r + 1]; ++p) { const int32_t q = pos[ind[p]]++; ri[q] = (int32_t)r; cv[q] = x[p]; }

    double t[6] = {1e9, 1e9, 1e9, 1e9, 1e9, 1e9}, chk = 0.0;
    double *g = calloc(d, sizeof *g);
    for (int it = 0; it < 30; ++it) {
        double t0 = now();
        dperm_csr_margins_d32(x, ind, ptr, s, 0, n, w, d, 1, z, d, NULL);
        double t1 = now(); if (t1 - t0 < t[0]) t[0] = t1 - t0; chk += z[n / 2];
        t0 = now();
        for (ptrdiff_t r = 0; r < n; ++r) z[r] = gather4(x, ind, ptr[r], ptr[r + 1], w);
        t1 = now(); if (t1 - t0 < t[1]) t[1] = t1 - t0; chk += z[n / 2];
        t0 = now();
        for (ptrdiff_t r = 0; r < n; ++r) z[r] = gather8(x, ind, ptr[r], ptr[r + 1], w);
        t1 = now(); if (t1 - t0 < t[2]) t[2] = t1 - t0; chk += z[n / 2];
        t0 = now();
        for (ptrdiff_t i = 0; i < n; i += 256) {
            const ptrdiff_t e = i + 256 < n ? i + 256 : n;
            dperm_csr_scatter_d32(x, ind, ptr, i, e, c + i, d, 1, g, d, NULL, ind + ptr[e], 0);
        }
        t1 = now(); if (t1 - t0 < t[3]) t[3] = t1 - t0;
        t0 = now();
        scatter_simd(x, ind, ptr, 0, n, c, g);
        t1 = now(); if (t1 - t0 < t[4]) t[4] = t1 - t0;
        t0 = now();
        for (ptrdiff_t j = 0; j < d; ++j) {
            double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
            ptrdiff_t p = cp[j];
            const ptrdiff_t p1 = cp[j + 1];
            for (; p + 4 <= p1; p += 4) {
                a0 = fma(cv[p], c[ri[p]], a0); a1 = fma(cv[p + 1], c[ri[p + 1]], a1);
                a2 = fma(cv[p + 2], c[ri[p + 2]], a2); a3 = fma(cv[p + 3], c[ri[p + 3]], a3);
            }
            for (; p < p1; ++p) a0 = fma(cv[p], c[ri[p]], a0);
            g[j] += (a0 + a1) + (a2 + a3);
        }
        t1 = now(); if (t1 - t0 < t[5]) t[5] = t1 - t0;
    }
    const char *name[6] = {"margins scalar4", "margins gather4", "margins gather8",
                           "scatter csr", "scatter simd", "scatter csc"};
    printf("%ld rows, %ld non-zeros (%.1f MB of values + indices)\n", (long)n, (long)nnz, nnz * 12e-6);
    for (int i = 0; i < 6; ++i) printf("  %-16s %.3f ns per non-zero\n", name[i], t[i] / (double)nnz * 1e9);
    printf("  (checksum %g %g)\n", chk, g[20]);
    return 0;
}
