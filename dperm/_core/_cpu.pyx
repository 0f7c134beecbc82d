"""The instruction-set levels this CPU can run (built for the baseline: runs anywhere)."""

cdef extern from "_cpu.h" nogil:
    unsigned int dperm_cpu_levels()
    unsigned int DPERM_CPU_BASELINE, DPERM_CPU_AVX2, DPERM_CPU_AVX512


def supported_levels():
    """The kernel levels this CPU and OS support, lowest first: a tuple of names from
    ("baseline", "avx2", "avx512")."""
    cdef unsigned int bits = dperm_cpu_levels()
    names = [("baseline", DPERM_CPU_BASELINE), ("avx2", DPERM_CPU_AVX2),
             ("avx512", DPERM_CPU_AVX512)]
    return tuple(name for name, bit in names if bits & bit)
