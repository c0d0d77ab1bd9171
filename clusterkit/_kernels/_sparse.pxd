# Inline helpers for CSR rows, shared by the sparse kernels (_sparse.pyx) and Elkan's bounded
# assignment (_elkan.pyx). A CSR row is its values `data`, their column `indices` (int32) and
# their count `nnz`; centres are dense rows.
from cython cimport floating


cdef inline double _sparse_dot(const floating* data,      # IN  (nnz,)
                               const int* indices,        # IN  (nnz,)
                               Py_ssize_t nnz,
                               const floating* center) noexcept nogil:  # IN (n_features,)
    """``x . c`` for a CSR row ``x`` and a dense row ``c``, summed in float64 (few terms, and
    the difference ``||x||^2 - 2 x.c + ||c||^2`` needs them accurate)."""
    cdef double s = 0
    cdef Py_ssize_t p
    for p in range(nnz):
        s += <double> data[p] * center[indices[p]]
    return s


cdef inline floating _sparse_dist2(const floating* data, const int* indices, Py_ssize_t nnz,
                                   double x_sqnorm, const floating* center,
                                   double center_sqnorm) noexcept nogil:
    """``||x - c||^2 = ||x||^2 - 2 x.c + ||c||^2`` from the two squared norms, clipped at 0
    (rounding can make it slightly negative for a sample on its centre)."""
    cdef double d = x_sqnorm - 2.0 * _sparse_dot(data, indices, nnz, center) + center_sqnorm
    return <floating> (d if d > 0 else 0)
