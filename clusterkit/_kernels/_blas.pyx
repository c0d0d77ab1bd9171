"""Fused BLAS wrappers over ``scipy.linalg.cython_blas`` for row-major (C-ordered) arrays."""
from cython cimport floating
from scipy.linalg.cython_blas cimport dgemm, sgemm


cdef void _gemm_nt(int m, int n, int k, floating alpha, const floating* A, int lda,
                   const floating* B, int ldb, floating beta, floating* C, int ldc) noexcept nogil:
    """C = alpha * A @ B.T + beta * C for row-major A (m x k), B (n x k), C (m x n).

    BLAS is column-major: a row-major matrix is the column-major view of its transpose. So the
    row-major product C = A B^T is the column-major product C^T = B A^T, i.e. gemm with
    operands swapped, B transposed ('T') and A as stored ('N').
    """
    cdef char transa = b'T'
    cdef char transb = b'N'
    if floating is float:
        sgemm(&transa, &transb, &n, &m, &k, &alpha, <float*> B, &ldb, <float*> A, &lda,
              &beta, C, &ldc)
    else:
        dgemm(&transa, &transb, &n, &m, &k, &alpha, <double*> B, &ldb, <double*> A, &lda,
              &beta, C, &ldc)


def gemm_nt(const floating[:, ::1] A,    # IN
            const floating[:, ::1] B,    # IN
            floating alpha,
            floating beta,
            floating[:, ::1] C):         # INOUT
    """Compute ``C = alpha * A @ B.T + beta * C`` in place (test twin of ``_gemm_nt``).

    Parameters
    ----------
    A : ndarray of shape (m, k), dtype=floating
    B : ndarray of shape (n, k), dtype=floating
    alpha, beta : float
    C : ndarray of shape (m, n), dtype=floating
        Overwritten with the result.
    """
    cdef int m = A.shape[0], n = B.shape[0], k = A.shape[1]
    if m == 0 or n == 0:
        return
    if k == 0:
        for i in range(m):
            for j in range(n):
                C[i, j] = beta * C[i, j]
        return
    _gemm_nt(m, n, k, alpha, &A[0, 0], k, &B[0, 0], k, beta, &C[0, 0], n)
