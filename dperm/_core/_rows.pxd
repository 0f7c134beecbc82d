# The row-access seam (see _rows.h): the only place the kernels touch X.
cdef extern from "_rows.h" nogil:
    const int DPERM_ROW_BLOCK
    int dperm_openmp_enabled()
    int dperm_max_threads()
    double dperm_dot_d(const double* x, const double* w, Py_ssize_t d)
    double dperm_dot_f(const float* x, const double* w, Py_ssize_t d)
    void dperm_block_axpy_d(const double* x, Py_ssize_t nr, const double* a, double* g, Py_ssize_t d)
    void dperm_block_axpy_f(const float* x, Py_ssize_t nr, const double* a, double* g, Py_ssize_t d)
    void dperm_syr_d(const double* x, double a, double* H, Py_ssize_t d)
    void dperm_syr_f(const float* x, double a, double* H, Py_ssize_t d)


ctypedef fused floating:
    float
    double


cdef inline double row_dot(const floating* x, const double* w, Py_ssize_t d) noexcept nogil:
    if floating is float:
        return dperm_dot_f(x, w, d)
    else:
        return dperm_dot_d(x, w, d)


cdef inline void rows_axpy(const floating* x, Py_ssize_t nr, const double* a,
                           double* g, Py_ssize_t d) noexcept nogil:
    if floating is float:
        dperm_block_axpy_f(x, nr, a, g, d)
    else:
        dperm_block_axpy_d(x, nr, a, g, d)


cdef inline void row_syr(const floating* x, double a, double* H, Py_ssize_t d) noexcept nogil:
    if floating is float:
        dperm_syr_f(x, a, H, d)
    else:
        dperm_syr_d(x, a, H, d)
