# OpenMP shim: every kernel compiles with or without OpenMP. Without it, prange runs serially
# and these functions report a single thread.
cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    #define CK_OPENMP_ENABLED 1
    #else
    #define CK_OPENMP_ENABLED 0
    static int omp_get_max_threads(void) { return 1; }
    static int omp_get_thread_num(void) { return 0; }
    #endif
    """
    const int CK_OPENMP_ENABLED
    int omp_get_max_threads() noexcept nogil
    int omp_get_thread_num() noexcept nogil
