/* Which x86-64 instruction-set levels this CPU and OS can run (CPUID + XGETBV).
 *
 * Compiled at the baseline level: it runs on every x86-64 CPU and is what the
 * import-time dispatch (dperm/_core/__init__.py) asks before it loads a kernel
 * level.  A level needs the CPU's feature bits AND the OS's consent to save the
 * wider registers (XCR0), or its first vector instruction faults.
 * The levels are the psABI's x86-64-v3 (AVX2, FMA, BMI1/2, F16C, LZCNT, MOVBE)
 * and x86-64-v4 (v3 + AVX-512 F/BW/CD/DQ/VL), the -march targets the kernels
 * are built with; elsewhere (aarch64, ...) only the baseline is reported.
 */
#ifndef DPERM_CPU_H
#define DPERM_CPU_H

#define DPERM_CPU_BASELINE 1u
#define DPERM_CPU_AVX2 2u       /* x86-64-v3 */
#define DPERM_CPU_AVX512 4u     /* x86-64-v4 */

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>

static inline unsigned long long dperm_xgetbv0(void) {
    unsigned int lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

#define DPERM_BIT(reg, k) (((reg) >> (k)) & 1u)

static inline unsigned int dperm_cpu_levels(void) {
    unsigned int a, b, c, d, levels = DPERM_CPU_BASELINE;
    unsigned int c1, b7, c81 = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return levels;
    c1 = c;
    if (__get_cpuid_max(0, 0) < 7)
        return levels;
    __cpuid_count(7, 0, a, b, c, d);
    b7 = b;
    if (__get_cpuid_max(0x80000000u, 0) >= 0x80000001u) {
        __cpuid(0x80000001u, a, b, c, d);
        c81 = c;
    }
    /* x86-64-v2 and v3 feature bits: SSE3 0, SSSE3 9, FMA 12, CX16 13, SSE4.1 19,
     * SSE4.2 20, MOVBE 22, POPCNT 23, OSXSAVE 27, AVX 28, F16C 29 (leaf 1 ecx);
     * BMI1 3, AVX2 5, BMI2 8 (leaf 7 ebx); LAHF 0, LZCNT 5 (leaf 0x80000001 ecx) */
    int v3 = DPERM_BIT(c1, 0) && DPERM_BIT(c1, 9) && DPERM_BIT(c1, 12) && DPERM_BIT(c1, 13)
          && DPERM_BIT(c1, 19) && DPERM_BIT(c1, 20) && DPERM_BIT(c1, 22) && DPERM_BIT(c1, 23)
          && DPERM_BIT(c1, 27) && DPERM_BIT(c1, 28) && DPERM_BIT(c1, 29)
          && DPERM_BIT(b7, 3) && DPERM_BIT(b7, 5) && DPERM_BIT(b7, 8)
          && DPERM_BIT(c81, 0) && DPERM_BIT(c81, 5);
    if (!v3)
        return levels;
    unsigned long long xcr0 = dperm_xgetbv0();
    if ((xcr0 & 0x6u) != 0x6u)          /* XMM and YMM state */
        return levels;
    levels |= DPERM_CPU_AVX2;
    /* AVX-512 F 16, DQ 17, CD 28, BW 30, VL 31 (leaf 7 ebx); opmask, ZMM_Hi256 and
     * Hi16_ZMM state (XCR0 bits 5-7) */
    if (DPERM_BIT(b7, 16) && DPERM_BIT(b7, 17) && DPERM_BIT(b7, 28) && DPERM_BIT(b7, 30)
            && DPERM_BIT(b7, 31) && (xcr0 & 0xE0u) == 0xE0u)
        levels |= DPERM_CPU_AVX512;
    return levels;
}
#undef DPERM_BIT
#else
static inline unsigned int dperm_cpu_levels(void) { return DPERM_CPU_BASELINE; }
#endif

#endif
