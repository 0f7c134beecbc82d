# The row-access seam (see _rows.h): the only place the kernels touch X.
from libc.stdint cimport int64_t

cdef extern from "_rows.h" nogil:
    # the kernel ids of the losses (declared once in dperm/losses.py, checked against it
    # by tests/test_losses.py); any other id gives NaN, never another loss
    enum:
        DPERM_LOSS_LOGISTIC
        DPERM_LOSS_HUBER
        DPERM_LOSS_SMOOTH_HINGE
        DPERM_LOSS_PSEUDO_HUBER
        DPERM_N_LOSSES
    int dperm_loss_known(int loss)
    int dperm_openmp_enabled()
    int dperm_max_threads()
    int dperm_team(Py_ssize_t nt)
    int dperm_set_team_limit(int limit)
    double dperm_dot_d(const double* x, const double* w, Py_ssize_t d)
    double dperm_dot_f(const float* x, const double* w, Py_ssize_t d)
    void dperm_syr_d(const double* x, double a, double* H, Py_ssize_t d)
    void dperm_syr_f(const float* x, double a, double* H, Py_ssize_t d)
    # block kernels of the fused pass: rows are read (times their labels) into an
    # aligned float64 buffer once, and every product works from that buffer
    int dperm_vector_width()
    Py_ssize_t dperm_padded_dim(Py_ssize_t d)
    Py_ssize_t dperm_rows_per_block(Py_ssize_t d, Py_ssize_t m)
    void dperm_read_rows_d(const double* x, const double* y, Py_ssize_t nr, Py_ssize_t d,
                           double* buf, Py_ssize_t ldx)
    void dperm_read_rows_f(const float* x, const double* y, Py_ssize_t nr, Py_ssize_t d,
                           double* buf, Py_ssize_t ldx)
    void dperm_block_dots(const double* x, Py_ssize_t nr, Py_ssize_t d, Py_ssize_t ldx,
                          const double* w, Py_ssize_t m, double* z, const void* pf,
                          Py_ssize_t pf_bytes)
    void dperm_block_gemm(const double* x, Py_ssize_t nr, Py_ssize_t d, Py_ssize_t ldx,
                          const double* c, Py_ssize_t m, double* g, const void* pf,
                          Py_ssize_t pf_bytes)
    void dperm_loss_vd(int loss, double h, Py_ssize_t cnt, const double* z, double* val,
                       double* d1)
    void dperm_loss_d2(int loss, double h, Py_ssize_t cnt, const double* z, double* d2)
    void dperm_add_rows(const double* v, Py_ssize_t nr, Py_ssize_t m, double* acc)
    void dperm_softmax_block(Py_ssize_t nr, Py_ssize_t m, Py_ssize_t K, const double* z,
                             const int64_t* y, double* val, double* c, double* tmp)
    void dperm_mul(double* c, const double* s, Py_ssize_t cnt)
    void dperm_sub_labels(double* z, const double* lab, Py_ssize_t nr, Py_ssize_t m,
                          Py_ssize_t ld)


ctypedef fused floating:
    float
    double


cdef inline double row_dot(const floating* x, const double* w, Py_ssize_t d) noexcept nogil:
    if floating is float:
        return dperm_dot_f(x, w, d)
    else:
        return dperm_dot_d(x, w, d)


cdef inline void read_rows(const floating* x, const double* y, Py_ssize_t nr, Py_ssize_t d,
                           double* buf, Py_ssize_t ldx) noexcept nogil:
    if floating is float:
        dperm_read_rows_f(x, y, nr, d, buf, ldx)
    else:
        dperm_read_rows_d(x, y, nr, d, buf, ldx)


cdef inline void row_syr(const floating* x, double a, double* H, Py_ssize_t d) noexcept nogil:
    if floating is float:
        dperm_syr_f(x, a, H, d)
    else:
        dperm_syr_d(x, a, H, d)
