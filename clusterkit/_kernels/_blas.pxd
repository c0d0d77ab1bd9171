from cython cimport floating


cdef void _gemm_nt(int m, int n, int k, floating alpha, const floating* A, int lda,
                   const floating* B, int ldb, floating beta, floating* C, int ldc) noexcept nogil
