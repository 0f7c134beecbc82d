/* Where the time of the dense batched pass goes (issue 23; BENCHMARKS.md, "The
 * 64-problem dense batch against the dgemm bound").
 *
 *   OB=$(python -c "import numpy, glob, os; print(glob.glob(os.path.join(os.path.dirname(numpy.__file__) + '.libs', 'libscipy_openblas*'))[0])")
 *   cc -O3 -march=x86-64-v4 -fopenmp-simd -Idperm/_core benchmarks/batch_pass_phases.c \
 *      -o batch_pass_phases -lm "$OB" -Wl,-rpath,"$(dirname "$OB")"
 *   ./batch_pass_phases [k=64] [rounds=7]
 *
 * One thread, n = 200,000, d = 100, float64, logistic: the pass as
 * objective_pass runs it (dperm_read_rows_d, dperm_block_dots, dperm_loss_vd,
 * dperm_add_rows, dperm_block_gemm per block of dperm_rows_per_block rows, with
 * the same prefetch split), then each phase alone over the whole of X on one
 * block that stays in cache (copy of the rows, margins, loss, gradient), against
 * the two products by OpenBLAS's cblas_dgemm (numpy's copy, one thread; the
 * symbol names of scipy-openblas's 64-bit interface) and the rate of a 2000^3
 * dgemm.  The rounds interleave every measurement; each keeps its minimum
 * (thread CPU time).
 *
 * "seq-order margins" is an experiment, not the library's kernel: margins with
 * the problems in the vector lanes (4 rows x 4 vectors of problems, x_r[p]
 * broadcast, W packed transposed), each margin one FMA chain over the features in
 * order, so no horizontal sums.  It changes the summation order of every margin
 * and, since a problem's margins must not depend on the batch, it would also be
 * the k = 1 kernel, where 7 of 8 lanes are idle; the pass with it is timed too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "_rows.h"

typedef long long blasint;
void scipy_cblas_dgemm64_(int, int, int, blasint, blasint, blasint, double, const double *,
                          blasint, const double *, blasint, double, double *, blasint);
void scipy_openblas_set_num_threads64_(int);
enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* the experiment: 4 rows x J vectors of problems, one chain per margin */
#define SEQ_TILE(J)                                                               \
static void seq_4x##J(const double *x, ptrdiff_t ldx, ptrdiff_t d, const double *wt, \
                      ptrdiff_t ldw, double *z, ptrdiff_t ldz) {                  \
    dperm_v acc[4][J], wv[J];                                                     \
    for (int a = 0; a < 4; ++a)                                                   \
        for (int b = 0; b < J; ++b) acc[a][b] = dv_zero();                        \
    for (ptrdiff_t p = 0; p < d; ++p) {                                           \
        for (int b = 0; b < J; ++b) wv[b] = dv_ld(wt + p * ldw + b * DPERM_VW);   \
        for (int a = 0; a < 4; ++a) {                                             \
            const dperm_v xa = dv_set1(x[a * ldx + p]);                           \
            for (int b = 0; b < J; ++b) acc[a][b] = dv_fma(xa, wv[b], acc[a][b]); \
        }                                                                         \
    }                                                                             \
    for (int a = 0; a < 4; ++a)                                                   \
        for (int b = 0; b < J; ++b) dv_st(z + a * ldz + b * DPERM_VW, acc[a][b]); \
}
SEQ_TILE(4)
SEQ_TILE(1)

/* nr a multiple of 4; wt and z have ldw = m rounded up to DPERM_VW columns (for
 * m < DPERM_VW the pass then feeds the loss misplaced margins: same cost, timing only) */
static void seq_dots(const double *x, ptrdiff_t nr, ptrdiff_t d, ptrdiff_t ldx,
                     const double *wt, ptrdiff_t ldw, double *z) {
    for (ptrdiff_t j = 0; j < ldw; ) {
        const int four = ldw - j >= 4 * DPERM_VW;
        for (ptrdiff_t r = 0; r + 4 <= nr; r += 4) {
            if (four) seq_4x4(x + r * ldx, ldx, d, wt + j, ldw, z + r * ldw + j, ldw);
            else seq_4x1(x + r * ldx, ldx, d, wt + j, ldw, z + r * ldw + j, ldw);
        }
        j += four ? 4 * DPERM_VW : DPERM_VW;
    }
}

int main(int argc, char **argv) {
    const ptrdiff_t n = 200000, d = 100;
    const ptrdiff_t m = argc > 1 ? atoi(argv[1]) : 64;
    const int rounds = argc > 2 ? atoi(argv[2]) : 7;
    const ptrdiff_t ldx = dperm_padded_dim(d), rb = dperm_rows_per_block(d, m);
    const ptrdiff_t ldw = (m + DPERM_VW - 1) / DPERM_VW * DPERM_VW;
    const int seq_ok = rb % 4 == 0 && (n % rb) % 4 == 0;
    double *X = malloc(sizeof(double) * n * d), *y = malloc(sizeof(double) * n);
    double *xb = aligned_alloc(64, sizeof(double) * rb * ldx);
    double *W = aligned_alloc(64, sizeof(double) * m * ldx);
    double *WT = aligned_alloc(64, sizeof(double) * d * ldw);
    double *Wd = malloc(sizeof(double) * m * d), *Gd = malloc(sizeof(double) * m * d);
    double *G = aligned_alloc(64, sizeof(double) * m * ldx), *lacc = calloc(m, sizeof(double));
    double *zb = aligned_alloc(64, sizeof(double) * rb * ldw), *vb = aligned_alloc(64, sizeof(double) * rb * m);
    double *cb = aligned_alloc(64, sizeof(double) * rb * m), *Z = malloc(sizeof(double) * n * m);
    double *A = malloc(sizeof(double) * 2000 * 2000), *C = malloc(sizeof(double) * 2000 * 2000);
    if (!X || !y || !xb || !W || !WT || !Wd || !Gd || !G || !lacc || !zb || !vb || !cb || !Z || !A || !C)
        return 1;
    srand(1);
    for (ptrdiff_t i = 0; i < n * d; i++) X[i] = ((double)rand() / RAND_MAX - 0.5) / 7.5;
    for (ptrdiff_t i = 0; i < n; i++) y[i] = (rand() & 1) ? 1.0 : -1.0;
    for (ptrdiff_t i = 0; i < 2000 * 2000; i++) A[i] = (double)rand() / RAND_MAX;
    memset(xb, 0, sizeof(double) * rb * ldx);
    memset(W, 0, sizeof(double) * m * ldx);
    memset(WT, 0, sizeof(double) * d * ldw);
    for (ptrdiff_t j = 0; j < m; j++)
        for (ptrdiff_t p = 0; p < d; p++)
            W[j * ldx + p] = Wd[j * d + p] = WT[p * ldw + j] = ((double)rand() / RAND_MAX - 0.5) * 0.1;
    memset(G, 0, sizeof(double) * m * ldx);
    scipy_openblas_set_num_threads64_(1);

    enum { PASS, SEQ_PASS, READ, DOTS, SEQ_DOTS, LOSS, GEMM, BLAS_PAIR, SQUARE, NT };
    double best[NT];
    for (int q = 0; q < NT; q++) best[q] = 1e30;
    const ptrdiff_t nb = n / rb;
    for (int round = 0; round < rounds; round++) {
        for (int seq = 0; seq < 1 + seq_ok; seq++) {
            double t0 = now();
            for (ptrdiff_t i = 0; i < n; i += rb) {
                const ptrdiff_t nr = n - i < rb ? n - i : rb;
                dperm_read_rows_d(X + i * d, y + i, nr, d, xb, ldx);
                const ptrdiff_t nxt = n - i - nr < rb ? n - i - nr : rb;
                const ptrdiff_t pfb = nxt * d * (ptrdiff_t)sizeof(double), pfh = pfb / 128 * 64;
                const char *pfp = (const char *)(X + (i + nr) * d);
                if (seq) seq_dots(xb, nr, d, ldx, WT, ldw, zb);
                else dperm_block_dots(xb, nr, d, ldx, W, m, zb, pfp, pfh);
                dperm_loss_vd(0, 0.5, nr * m, zb, vb, cb);
                dperm_add_rows(vb, nr, m, lacc);
                dperm_block_gemm(xb, nr, d, ldx, cb, m, G, pfp + pfh, pfb - pfh);
            }
            const double t = now() - t0;
            if (t < best[seq ? SEQ_PASS : PASS]) best[seq ? SEQ_PASS : PASS] = t;
        }
        double t0 = now();
        for (ptrdiff_t b = 0; b < nb; b++) dperm_read_rows_d(X + b * rb * d, y + b * rb, rb, d, xb, ldx);
        double t1 = now();
        if (t1 - t0 < best[READ]) best[READ] = t1 - t0;
        t0 = now();
        for (ptrdiff_t b = 0; b < nb; b++) dperm_block_dots(xb, rb, d, ldx, W, m, zb, NULL, 0);
        t1 = now();
        if (t1 - t0 < best[DOTS]) best[DOTS] = t1 - t0;
        if (seq_ok) {
            t0 = now();
            for (ptrdiff_t b = 0; b < nb; b++) seq_dots(xb, rb, d, ldx, WT, ldw, zb);
            t1 = now();
            if (t1 - t0 < best[SEQ_DOTS]) best[SEQ_DOTS] = t1 - t0;
        }
        t0 = now();
        for (ptrdiff_t b = 0; b < nb; b++) {
            dperm_loss_vd(0, 0.5, rb * m, zb, vb, cb);
            dperm_add_rows(vb, rb, m, lacc);
        }
        t1 = now();
        if (t1 - t0 < best[LOSS]) best[LOSS] = t1 - t0;
        t0 = now();
        for (ptrdiff_t b = 0; b < nb; b++) dperm_block_gemm(xb, rb, d, ldx, cb, m, G, NULL, 0);
        t1 = now();
        if (t1 - t0 < best[GEMM]) best[GEMM] = t1 - t0;
        t0 = now();
        scipy_cblas_dgemm64_(ROW_MAJOR, NO_TRANS, TRANS, n, m, d, 1.0, X, d, Wd, d, 0.0, Z, m);
        scipy_cblas_dgemm64_(ROW_MAJOR, TRANS, NO_TRANS, m, d, n, 1.0, Z, m, X, d, 0.0, Gd, d);
        t1 = now();
        if (t1 - t0 < best[BLAS_PAIR]) best[BLAS_PAIR] = t1 - t0;
        t0 = now();
        scipy_cblas_dgemm64_(ROW_MAJOR, NO_TRANS, NO_TRANS, 2000, 2000, 2000, 1.0, A, 2000, A, 2000,
                             0.0, C, 2000);
        t1 = now();
        if (t1 - t0 < best[SQUARE]) best[SQUARE] = t1 - t0;
    }
    const double fmas = 2.0 * (double)n * (double)d * (double)m;
    const double rate = 8e9 / best[SQUARE], floor_t = fmas / rate;
    const double ms = 1e3;
    printf("k = %td, rows per block %td, %d rounds, thread CPU time, min per measurement\n", m, rb, rounds);
    printf("square dgemm %.1f G FMA/s: floor 2 n d k / rate = %.2f ms\n", rate / 1e9, floor_t * ms);
    printf("cblas pair X W^T + U^T X (same shapes): %.2f ms\n", best[BLAS_PAIR] * ms);
    printf("pass %.2f ms = %.3f x floor, %.3f x cblas pair\n", best[PASS] * ms,
           best[PASS] / floor_t, best[PASS] / best[BLAS_PAIR]);
    printf("phases alone (block in cache): copy %.2f, margins %.2f (%.1f G FMA/s), loss %.2f, "
           "gradient %.2f (%.1f G FMA/s) ms\n", best[READ] * ms, best[DOTS] * ms,
           fmas / 2 / best[DOTS] / 1e9, best[LOSS] * ms, best[GEMM] * ms, fmas / 2 / best[GEMM] / 1e9);
    if (seq_ok)
        printf("experiment, seq-order margins: alone %.2f ms (%.1f G FMA/s); pass %.2f ms = %.3f x floor\n",
               best[SEQ_DOTS] * ms, fmas / 2 / best[SEQ_DOTS] / 1e9, best[SEQ_PASS] * ms,
               best[SEQ_PASS] / floor_t);
    printf("(check %g)\n", G[3] + lacc[1] + Gd[2] + C[5]);
    return 0;
}
