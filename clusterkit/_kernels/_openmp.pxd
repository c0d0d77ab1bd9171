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


# The least work (row x feature products) for which a loop runs on several threads. Below it
# the fork and join cost more than the threads save, and on a busy machine every join may
# wait for a time slice of the other processes (benchmarks/bench_load.py).
cdef enum:
    PARALLEL_MIN_WORK = 1 << 17


cdef inline int _threads_for(Py_ssize_t work, int n_threads) noexcept nogil:
    """``n_threads`` for a loop with this much work, 1 below ``PARALLEL_MIN_WORK``."""
    return n_threads if work >= PARALLEL_MIN_WORK else 1
