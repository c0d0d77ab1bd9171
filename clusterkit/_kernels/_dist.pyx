"""Tables of the centres that the chunked distance kernels share, and the data's centring."""
import numpy as np

from cython cimport floating
from cython.parallel cimport prange

from ._chunks cimport _chunk_stop, _chunk_threads, _n_chunks, _TilePlan
from ._dist cimport CHUNK_SIZE, _max_sqnorm, _use_gemm

#: Rows per tile of the chunked kernels; callers that split the data themselves cut at
#: multiples of it, so that every tile (and so every result) stays the same.
TILE_ROWS = CHUNK_SIZE


def uses_gemm(Py_ssize_t n_features):
    """Whether distance tiles of rows of ``n_features`` features come from gemm (``_dist2_tile``;
    Lloyd's E-step and the bounded E-steps' first visits).

    Parameters
    ----------
    n_features : int

    Returns
    -------
    gemm : bool
        ``True`` from ``GEMM_MIN_FEATURES`` features on; below, the tiles hold direct
        distances, computed centre-vectorised.
    """
    return bool(_use_gemm(n_features))


def center_tables(centers):
    """Squared norms and a transposed copy of the centres, as ``_dist2_tile`` needs them.

    Parameters
    ----------
    centers : ndarray of shape (n_clusters, n_features), dtype=floating

    Returns
    -------
    centers_sqnorm : ndarray of shape (n_clusters,)
        ``||c_j||^2`` in the centres' dtype.
    centers_T : ndarray of shape (n_features, n_clusters)
        C-contiguous transpose (the direct loops run over clusters for each feature).
    """
    centers = np.asarray(centers)
    return (np.einsum("ij,ij->i", centers, centers).astype(centers.dtype, copy=False),
            np.ascontiguousarray(centers.T))


def center_rows(const floating[:, ::1] X,       # IN
                const floating[::1] mean,       # IN
                floating[:, ::1] out,           # OUT
                int n_threads,
                const Py_ssize_t[::1] order=None):  # IN
    """``out = X[order] - mean`` (the same values as NumPy's), and the float64 sum of its
    squares.

    In parallel over chunks of rows, so that the pages of a fresh ``out`` are first touched
    by all threads (at 60,000 x 784 float64, NumPy's single-threaded subtraction spends most
    of its 0.37 s there). With an ``order``, the same pass gathers the rows in it, so that a
    run in a schedule's order needs no second copy. The sum is added chunk by chunk in row
    order: it does not depend on ``n_threads``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), dtype=floating
    mean : ndarray of shape (n_features,), dtype=floating
    out : ndarray of shape (n_samples, n_features), dtype=floating
    n_threads : int
    order : ndarray of shape (n_samples,), dtype=intp, or None
        A permutation of the rows (not checked); ``None``: the rows as they are.

    Returns
    -------
    sum_of_squares : float
        ``sum(out ** 2)``, accumulated in float64.
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t n_chunks = _n_chunks(n_samples, CHUNK_SIZE)
    cdef Py_ssize_t c, i, k, source
    cdef double[::1] chunk_sums = np.zeros(max(n_chunks, 1))
    cdef double total = 0, part
    cdef floating v
    cdef bint ordered = order is not None
    if ordered and order.shape[0] != n_samples:
        raise ValueError("order must have one entry per row")
    with nogil:
        for c in prange(n_chunks, schedule="static", num_threads=max(1, n_threads)):
            part = 0
            for i in range(c * CHUNK_SIZE, _chunk_stop(c, CHUNK_SIZE, n_samples)):
                source = order[i] if ordered else i
                for k in range(n_features):
                    v = X[source, k] - mean[k]
                    out[i, k] = v
                    part = part + <double> v * v
            chunk_sums[c] = part
        for c in range(n_chunks):
            total += chunk_sums[c]
    return total


cdef const void* _address(array):
    """Address of the first element of a C-contiguous array, NULL if it has none."""
    cdef const unsigned char[::1] data
    if array.size == 0:
        return NULL
    data = array.reshape(-1).view(np.uint8)
    return &data[0]


cdef object _prepare_tiles(_TilePlan* plan, centers, Py_ssize_t n_rows, Py_ssize_t chunk_rows,
                           int n_threads, Py_ssize_t scratch_bytes):
    """Fill ``plan`` for a call on ``n_rows`` rows: chunks of ``chunk_rows``, the threads for
    them, the tables of ``centers`` (C-contiguous) and ``scratch_bytes`` of scratch per
    thread. Returns ``(centers_sqnorm, centers_T, scratch)``, the arrays the plan points into."""
    centers = np.asarray(centers)
    sqnorm, centers_T = center_tables(centers)
    plan.n_rows = n_rows
    plan.chunk_rows = chunk_rows
    plan.n_chunks = _n_chunks(n_rows, chunk_rows)
    plan.n_threads = _chunk_threads(n_threads, plan.n_chunks)
    plan.centers = _address(centers)
    plan.n_clusters, plan.n_features = centers.shape[0], centers.shape[1]
    plan.centers_T = _address(centers_T)
    plan.centers_sqnorm = _address(sqnorm)
    if plan.n_clusters == 0:
        plan.max_sqnorm = 0
    elif centers.dtype == np.float32:
        plan.max_sqnorm = _max_sqnorm(<const float*> plan.centers_sqnorm, plan.n_clusters)
    else:
        plan.max_sqnorm = _max_sqnorm(<const double*> plan.centers_sqnorm, plan.n_clusters)
    scratch = np.empty((plan.n_threads, scratch_bytes), dtype=np.uint8)
    plan.scratch = <unsigned char*> _address(scratch)
    plan.scratch_bytes = scratch_bytes
    return sqnorm, centers_T, scratch
