from dperm._core._rows cimport floating

cdef enum:
    PASS_VALUE_GRAD = 0
    PASS_HESS_VEC = 1

cdef int objective_pass(
    int mode, const floating* X, const double* y, Py_ssize_t n, Py_ssize_t d,
    int loss, double h, const double* W, const double* V, const double* l2,
    const double* B, const Py_ssize_t* idx, Py_ssize_t m,
    double* F, double* G, int n_threads) noexcept nogil
