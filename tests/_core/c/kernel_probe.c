/* Prints the outputs of the C kernels of _rows.h and _csr.h on fixed inputs, one
 * number per line as a C99 hex float (exact), so that builds for different vector
 * layers (x86-64 scalar / AVX2 / AVX-512, AArch64 scalar / NEON) can be compared.
 * Used by tests/test_kernels_c.py; needs no Python, so a cross-compiled copy runs
 * under an emulator (qemu-aarch64) to test the NEON layer on an x86 machine. */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include "_csr.h"

static uint64_t state = 0x9E3779B97F4A7C15ull;
static double uniform(void) {          /* splitmix64: same numbers on every platform */
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53 * 2.0 - 1.0;   /* [-1, 1) */
}

static void put(const char *what, const double *v, ptrdiff_t cnt) {
    for (ptrdiff_t i = 0; i < cnt; ++i) printf("%s %td %a\n", what, i, v[i]);
}

enum { NR = 23, D = 37, LDX = 40, M = 9, N = 211, NNZ_MAX = N * D };

int main(void) {
    printf("vector_width %d\n", dperm_vector_width());
    /* dense block kernels: margins and gradient updates, m = 1, 4 and 9 */
    static double x[NR * LDX], w[M * LDX], z[NR * M], c[NR * M], g[M * LDX];
    for (int r = 0; r < NR; ++r)
        for (int p = 0; p < D; ++p) x[r * LDX + p] = uniform();
    for (int j = 0; j < M; ++j)
        for (int p = 0; p < D; ++p) w[j * LDX + p] = uniform();
    const ptrdiff_t ms[3] = {1, 4, M};
    for (int t = 0; t < 3; ++t) {
        const ptrdiff_t m = ms[t];
        dperm_block_dots(x, NR, D, LDX, w, m, z, NULL, 0);
        put("dots", z, NR * m);
        for (ptrdiff_t q = 0; q < NR * m; ++q) c[q] = uniform();
        for (ptrdiff_t q = 0; q < M * LDX; ++q) g[q] = 0.0;
        dperm_block_gemm(x, NR, D, LDX, c, m, g, NULL, 0);
        put("gemm", g, m * LDX);
    }
    /* softmax cross-entropy of a block: 23 rows, 3 problems of K = 3 classes */
    {
        static double zs[NR * M], vs[NR * 3], cs[NR * M], ts[NR * M];
        static int64_t ys[NR];
        for (int r = 0; r < NR; ++r) ys[r] = r % 3;
        dperm_block_dots(x, NR, D, LDX, w, M, zs, NULL, 0);
        for (int q = 0; q < NR * M; ++q) zs[q] *= 20.0;
        dperm_softmax_block(NR, 3, 3, zs, ys, vs, cs, ts);
        put("softmax_val", vs, NR * 3);
        put("softmax_c", cs, NR * M);
    }
    /* the losses and their derivatives, vectorized polynomials included */
    enum { CNT = 203 };
    static double zz[CNT], val[CNT], d1[CNT], d2[CNT];
    for (int q = 0; q < CNT; ++q) zz[q] = 40.0 * uniform();
    zz[0] = 0.0; zz[1] = 1.0; zz[2] = -750.0; zz[3] = 750.0; zz[4] = 1.5; zz[5] = 0.5;
    /* 0 logistic, 1 huber, 2 smooth hinge, 3 pseudo-Huber (of the residual) */
    for (int loss = 0; loss < 4; ++loss) {
        dperm_loss_vd(loss, 0.5, CNT, zz, val, d1);
        dperm_loss_d2(loss, 0.5, CNT, zz, d2);
        put("val", val, CNT); put("d1", d1, CNT); put("d2", d2, CNT);
    }
    /* a CSR pass (value + gradient, then Hessian-vector), float64 and float32 values */
    static double lab[N];
    static double data[NNZ_MAX], s[N], W[M * D], V[M * D], l2[M], B[M * D], F[M], G[M * D];
    static float dataf[NNZ_MAX];
    static int32_t ind[NNZ_MAX], indptr[N + 1];
    ptrdiff_t nnz = 0, idx[M];
    for (int i = 0; i < N; ++i) {
        indptr[i] = (int32_t)nnz;
        for (int p = 0; p < D; ++p)
            if (uniform() > 0.4) { ind[nnz] = p; data[nnz] = 0.3 * uniform(); dataf[nnz] = (float)data[nnz]; ++nnz; }
        s[i] = uniform() > 0 ? 1.0 : -1.0;
        lab[i] = 3.0 * uniform();
    }
    indptr[N] = (int32_t)nnz;
    for (int q = 0; q < M * D; ++q) { W[q] = 2.0 * uniform(); V[q] = uniform(); B[q] = uniform(); }
    for (int j = 0; j < M; ++j) { l2[j] = 1e-3 * (j + 1); idx[j] = j; }
    for (int f32 = 0; f32 < 2; ++f32)
        for (int loss = 0; loss < 4; ++loss)
            for (int t = 0; t < 3; ++t) {
                const void *vals = f32 ? (const void *)dataf : (const void *)data;
                /* the regression loss reads the labels (residuals), the others do not */
                const double *lb = loss == 3 ? lab : NULL;
                if (dperm_csr_pass(f32, 0, 0, vals, ind, indptr, s, N, D, D, NULL, loss, 0.5,
                                   W, NULL, l2, B, idx, ms[t], F, G, 1, NULL, NULL, 0, lb) != 0) return 1;
                put("csrF", F, ms[t]); put("csrG", G, ms[t] * D);
                if (dperm_csr_pass(f32, 0, 1, vals, ind, indptr, s, N, D, D, NULL, loss, 0.5,
                                   W, V, l2, NULL, idx, ms[t], F, G, 1, NULL, NULL, 0, lb) != 0) return 1;
                put("csrHv", G, ms[t] * D);
            }
    /* the CSR softmax mode: 3 problems of K = 3 classes (9 weight vectors) */
    {
        static int64_t cls[N];
        for (int i = 0; i < N; ++i) cls[i] = i % 3;
        for (int f32 = 0; f32 < 2; ++f32) {
            const void *vals = f32 ? (const void *)dataf : (const void *)data;
            if (dperm_csr_pass(f32, 0, 2, vals, ind, indptr, s, N, D, D, NULL, 0, 0.0, W, NULL,
                               l2, NULL, idx, M, F, G, 1, NULL, cls, 3, NULL) != 0) return 1;
            put("csrSoftF", F, 3); put("csrSoftG", G, M * D);
        }
    }
    return 0;
}
