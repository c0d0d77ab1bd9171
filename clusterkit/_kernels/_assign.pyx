"""Exact assignment of samples to their nearest centre (the E-step of Lloyd's k-means)."""
import numpy as np

from cython cimport floating
from cython.parallel cimport parallel, prange, threadid

from ._dist cimport CHUNK_SIZE, _dist2_tile, _sqnorm, _use_gemm
from ._select cimport _argmin


cdef void _assign_chunk(const floating* X,               # IN  (n_rows, n_features)
                        Py_ssize_t n_rows,
                        Py_ssize_t n_features,
                        const floating* centers,         # IN
                        const floating* centers_T,       # IN
                        const floating* centers_sqnorm,  # IN
                        Py_ssize_t n_clusters,
                        floating* tile,                  # TMP (CHUNK_SIZE, n_clusters)
                        int* labels,                     # OUT (n_rows,)
                        floating* min_dist2) noexcept nogil:  # OUT (n_rows,)
    cdef Py_ssize_t i, best
    cdef bint gemm = _use_gemm(n_features)
    cdef floating d
    if gemm:
        _dist2_tile(X, n_rows, n_features, centers, centers_T, centers_sqnorm, n_clusters, tile)
    for i in range(n_rows):
        if not gemm:
            # one row at a time, so that it is scanned while still in L1
            _dist2_tile(X + i * n_features, 1, n_features, centers, centers_T, centers_sqnorm,
                        n_clusters, tile)
            best = _argmin(tile, n_clusters)
            d = tile[best]
        else:
            best = _argmin(tile + i * n_clusters, n_clusters)
            d = tile[i * n_clusters + best] + _sqnorm(X + i * n_features, n_features)
        labels[i] = <int> best
        min_dist2[i] = d if d > 0 else 0


def assign_full(const floating[:, ::1] X,        # IN
                const floating[:, ::1] centers,  # IN
                int[::1] labels,                 # OUT
                floating[::1] min_dist2,         # OUT
                int n_threads):
    """Assign every sample to its nearest centre.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), dtype=floating
    centers : ndarray of shape (n_clusters, n_features), dtype=floating
    labels : ndarray of shape (n_samples,), dtype=int32
        Output: index of the nearest centre (ties go to the lowest index).
    min_dist2 : ndarray of shape (n_samples,), dtype=floating
        Output: squared distance to the nearest centre, clamped at zero.
    n_threads : int
        Number of OpenMP threads.

    Returns
    -------
    n_distance_evals : int
        ``n_samples * n_clusters``.

    Notes
    -----
    Works by chunks of ``CHUNK_SIZE`` samples; each thread owns one ``CHUNK_SIZE x n_clusters``
    tile, so no ``n_samples x n_clusters`` array is formed. Every output element is written by
    exactly one thread, so results do not depend on ``n_threads``. Assumes valid input.
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t n_clusters = centers.shape[0]
    cdef Py_ssize_t n_chunks = (n_samples + CHUNK_SIZE - 1) // CHUNK_SIZE
    cdef Py_ssize_t c, start, end
    if n_samples == 0:
        return 0
    n_threads = max(1, min(n_threads, n_chunks))
    dtype = np.float32 if floating is float else np.float64
    cdef floating[::1] centers_sqnorm = np.einsum("ij,ij->i", centers, centers).astype(dtype)
    cdef floating[:, ::1] centers_T = np.ascontiguousarray(np.asarray(centers).T)
    cdef floating[:, :, ::1] tiles = np.empty((n_threads, CHUNK_SIZE, n_clusters), dtype=dtype)
    with nogil, parallel(num_threads=n_threads):
        for c in prange(n_chunks, schedule="static"):
            start = c * CHUNK_SIZE
            end = min(start + CHUNK_SIZE, n_samples)
            _assign_chunk(&X[start, 0], end - start, n_features, &centers[0, 0],
                          &centers_T[0, 0], &centers_sqnorm[0], n_clusters,
                          &tiles[threadid(), 0, 0], &labels[start], &min_dist2[start])
    return n_samples * n_clusters
