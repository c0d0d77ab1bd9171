# Fixed-block accumulation of the M-steps' statistics, shared by the M-step kernel and the
# fused assignment kernels so that all of them sum in exactly the same order.
#
# Rows are cut into blocks of whole CHUNK_SIZE chunks; the layout depends on n_samples only.
# Each block is summed in row order into its own partial arrays, and the partials are added in
# block order, so the result does not depend on the number of threads. Streaming the data this
# way is much faster than gathering each cluster's rows ("owner computes"), but needs
# n_blocks x n_clusters x (n_features + 1) scratch: it is used only while that stays small.
from cython cimport floating
from cython.parallel cimport prange

from ._dist cimport CHUNK_SIZE


cdef enum:
    BLOCK_CHUNKS = 32          # chunks per block when there are at most MAX_BLOCKS of them
    MAX_BLOCKS = 32
    MAX_PARTIAL_MB = 64


cdef inline Py_ssize_t _n_blocks(Py_ssize_t n_samples) noexcept nogil:
    cdef Py_ssize_t n_chunks = (n_samples + CHUNK_SIZE - 1) // CHUNK_SIZE
    return min((n_chunks + BLOCK_CHUNKS - 1) // BLOCK_CHUNKS, MAX_BLOCKS)


cdef inline Py_ssize_t _block_rows(Py_ssize_t n_samples, Py_ssize_t n_blocks) noexcept nogil:
    """Rows per block: a whole number of chunks."""
    cdef Py_ssize_t n_chunks = (n_samples + CHUNK_SIZE - 1) // CHUNK_SIZE
    return CHUNK_SIZE * ((n_chunks + n_blocks - 1) // n_blocks)


cdef inline bint _blocks_fit(Py_ssize_t n_samples, Py_ssize_t n_clusters, Py_ssize_t n_features,
                             Py_ssize_t itemsize) noexcept nogil:
    """Whether the fixed-block layout applies: at least two blocks, and partials that are
    small in bytes and no larger than the data (else clearing and adding them up costs more
    than the sums themselves, as with many clusters)."""
    cdef Py_ssize_t n_blocks = _n_blocks(n_samples)
    return n_blocks >= 2 and n_blocks * n_clusters <= n_samples and (
        n_blocks * n_clusters * (n_features + 1) * itemsize <= MAX_PARTIAL_MB * 1024 * 1024)


cdef inline void _add_sample(floating* block_sums,       # INOUT (n_clusters, n_features)
                             floating* block_weights,    # INOUT (n_clusters,)
                             double* block_sse,          # INOUT (n_clusters,) or NULL
                             Py_ssize_t j, const floating* x, floating w, double dist2,
                             Py_ssize_t n_features) noexcept nogil:
    """Add ``w x``, ``w`` and (unless ``block_sse`` is NULL) ``w dist2`` to cluster ``j``'s
    entries of one block's partial statistics. The sse is a float64 sum."""
    cdef Py_ssize_t k
    cdef floating* row = block_sums + j * n_features
    block_weights[j] += w
    if block_sse != NULL:
        block_sse[j] += w * dist2
    for k in range(n_features):
        row[k] += w * x[k]


cdef inline void _reduce_blocks(floating[:, :, ::1] sums,         # IN  (n_blocks, C, D)
                                floating[:, ::1] weights,         # IN  (n_blocks, C)
                                const double* sse_parts,          # IN  (n_blocks, C) or NULL
                                floating[:, ::1] centers_sum,     # OUT (C, D)
                                floating[::1] weight_in_clusters, # OUT (C,)
                                double* sse,                      # OUT (C,) or NULL
                                int n_threads) noexcept nogil:
    """Add the blocks' partial statistics in block order."""
    cdef Py_ssize_t n_blocks = sums.shape[0], n_clusters = sums.shape[1]
    cdef Py_ssize_t n_features = sums.shape[2]
    cdef Py_ssize_t b, j, k
    for j in prange(n_clusters, schedule="static", num_threads=n_threads):
        weight_in_clusters[j] = weights[0, j]
        for k in range(n_features):
            centers_sum[j, k] = sums[0, j, k]
        for b in range(1, n_blocks):
            weight_in_clusters[j] += weights[b, j]
            for k in range(n_features):
                centers_sum[j, k] += sums[b, j, k]
        if sse != NULL:
            sse[j] = sse_parts[j]
            for b in range(1, n_blocks):
                sse[j] += sse_parts[b * n_clusters + j]


cdef inline void _counting_sort(const int* keys, Py_ssize_t n, Py_ssize_t n_keys,
                                Py_ssize_t[::1] starts, Py_ssize_t[::1] order) noexcept nogil:
    """``order`` lists the positions of ``keys[:n]`` grouped by key (ascending position inside
    a key); ``starts[j]:starts[j + 1]`` is key ``j``'s range."""
    cdef Py_ssize_t i
    for i in range(n_keys + 1):
        starts[i] = 0
    for i in range(n):
        starts[keys[i] + 1] += 1
    for i in range(n_keys):
        starts[i + 1] += starts[i]
    for i in range(n):
        order[starts[keys[i]]] = i
        starts[keys[i]] += 1
    for i in range(n_keys, 0, -1):  # shift back: each start was advanced to the next one
        starts[i] = starts[i - 1]
    starts[0] = 0
