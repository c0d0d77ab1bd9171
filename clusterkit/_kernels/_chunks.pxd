# Rows in chunks that a static prange hands to the threads, each thread with its own scratch:
# the set-up every chunked kernel shares. The prange loops stay in the kernels (a loop body
# cannot be passed in); these give them the same chunks, thread counts and scratch.
from ._openmp cimport omp_get_thread_num


cdef struct _TilePlan:
    # a call's chunks and threads
    Py_ssize_t n_rows
    Py_ssize_t chunk_rows
    Py_ssize_t n_chunks
    int n_threads
    # the centres and the tables the distance tiles are computed from (_dist.center_tables),
    # in the centres' dtype, and the largest ||c_j||^2 (the near-tie window)
    const void* centers         # (n_clusters, n_features)
    Py_ssize_t n_clusters
    Py_ssize_t n_features
    const void* centers_T       # (n_features, n_clusters)
    const void* centers_sqnorm  # (n_clusters,)
    double max_sqnorm
    # one scratch area per thread (a tile), scratch_bytes each
    unsigned char* scratch
    Py_ssize_t scratch_bytes


cdef inline Py_ssize_t _n_chunks(Py_ssize_t n_rows, Py_ssize_t chunk_rows) noexcept nogil:
    return (n_rows + chunk_rows - 1) // chunk_rows


cdef inline int _chunk_threads(int n_threads, Py_ssize_t n_chunks) noexcept nogil:
    """Threads for a loop over ``n_chunks`` chunks: at least one, none without a chunk."""
    return <int> max(1, min(n_threads, n_chunks))


cdef inline Py_ssize_t _chunk_stop(Py_ssize_t c, Py_ssize_t chunk_rows,
                                   Py_ssize_t n_rows) noexcept nogil:
    """End of chunk ``c`` (the last chunk may be short)."""
    return min((c + 1) * chunk_rows, n_rows)


cdef inline Py_ssize_t _chunk_len(const _TilePlan* plan, Py_ssize_t c) noexcept nogil:
    """Rows in the plan's chunk ``c``."""
    return _chunk_stop(c, plan.chunk_rows, plan.n_rows) - c * plan.chunk_rows


cdef inline void* _thread_scratch(const _TilePlan* plan) noexcept nogil:
    """The calling thread's scratch (inside the kernel's parallel region)."""
    return plan.scratch + omp_get_thread_num() * plan.scratch_bytes
