from dperm._core._rows cimport floating

cdef enum:
    PASS_VALUE_GRAD = 0
    PASS_HESS_VEC = 1

# What the kernels read X through (the row-access seam): a dense C-contiguous
# matrix or a CSR matrix, float32 or float64 values, int32 or int64 indices.
cdef enum:
    DATA_DENSE = 0
    DATA_CSR = 1

ctypedef struct DataView:
    int kind
    int values_f32          # values are float32 (else float64)
    int index_i64           # CSR indices / indptr are int64 (else int32)
    const void* values      # dense X (n, d) or CSR data (nnz,)
    const void* indices     # CSR only
    const void* indptr      # CSR only
    const double* s         # signed row weights (labels, +-1), (n,)
    Py_ssize_t n
    Py_ssize_t d            # the model's dimension: dx, or dx + 1 with an intercept column
    Py_ssize_t dx           # columns of X
    const double* icpt      # (n,) values of the virtual last column (d == dx + 1), else NULL
    Py_ssize_t nnz          # n*dx for dense
    const double* lab       # (n,) labels of a regression loss (residual = score - lab), else NULL

cdef class Data:
    cdef DataView view
    cdef readonly object values, indices, indptr, s, intercept, labels

cdef int objective_pass(
    int mode, const floating* X, const double* y, Py_ssize_t n, Py_ssize_t dx, Py_ssize_t d,
    const double* icpt, int loss, double h, const double* W, const double* V, const double* l2,
    const double* B, const Py_ssize_t* idx, Py_ssize_t m,
    double* F, double* G, int n_threads, double* curv, const double* lab) noexcept nogil

cdef int data_pass(
    int mode, const DataView* X, int loss, double h, const double* W, const double* V,
    const double* l2, const double* B, const Py_ssize_t* idx, Py_ssize_t m,
    double* F, double* G, int n_threads, double* curv) noexcept nogil
