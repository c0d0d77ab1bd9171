"""Exact top-C' search: the ``C'`` nearest centres of every sample (truncated E-step)."""
import numpy as np

from cython cimport floating
from cython.parallel cimport parallel, prange, threadid

from ._dist import center_tables
from ._dist cimport CHUNK_SIZE, _dist2_tile, _max_sqnorm, _settle_near_ties, _sqnorm, _use_gemm
from ._select cimport _select_row


cdef void _topk_chunk(const floating* X,               # IN  (n_rows, n_features)
                      Py_ssize_t n_rows,
                      Py_ssize_t n_features,
                      const floating* centers,         # IN  (n_clusters, n_features)
                      const floating* centers_T,       # IN  (n_features, n_clusters)
                      const floating* centers_sqnorm,  # IN  (n_clusters,)
                      Py_ssize_t n_clusters,
                      Py_ssize_t n_winners,
                      floating* tile,                  # TMP (CHUNK_SIZE, n_clusters)
                      int* winners,                    # OUT (n_rows, n_winners)
                      floating* win_dist2) noexcept nogil:  # OUT (n_rows, n_winners)
    cdef Py_ssize_t i, j
    cdef bint gemm = _use_gemm(n_features)
    cdef floating xn, d
    cdef floating* vals
    cdef double max_sqnorm = 0
    if gemm:
        _dist2_tile(X, n_rows, n_features, centers, centers_T, centers_sqnorm, n_clusters, tile)
        max_sqnorm = _max_sqnorm(centers_sqnorm, n_clusters)
    for i in range(n_rows):
        vals = win_dist2 + i * n_winners
        if not gemm:
            # one row at a time, so that it is scanned while still in L1
            _dist2_tile(X + i * n_features, 1, n_features, centers, centers_T, centers_sqnorm,
                        n_clusters, tile)
            _select_row(tile, n_clusters, n_winners, vals, winners + i * n_winners)
        else:
            # ||x||^2 is the same for the whole row: select first, add it to the winners only
            _select_row(tile + i * n_clusters, n_clusters, n_winners, vals,
                        winners + i * n_winners)
            xn = _sqnorm(X + i * n_features, n_features)
            if n_winners == 1:
                # the nearest centre exactly as the full E-step finds it (near-ties settled)
                winners[i] = <int> _settle_near_ties(
                    tile + i * n_clusters, n_clusters, winners[i], X + i * n_features,
                    n_features, centers, xn, max_sqnorm, vals)
                continue
            for j in range(n_winners):
                vals[j] += xn
        for j in range(n_winners):
            d = vals[j]
            vals[j] = d if d > 0 else 0


def assign_topk(const floating[:, ::1] X,        # IN
                const floating[:, ::1] centers,  # IN
                int[:, ::1] winners,             # OUT
                floating[:, ::1] win_dist2,      # OUT
                int n_threads):
    """Find the ``n_winners`` nearest centres of every sample, exactly.

    The exact truncated E-step of Lücke & Forster (2017): all ``n_samples * n_clusters``
    distances are computed (chunk by chunk) and the ``C'`` smallest of each row kept.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), dtype=floating
    centers : ndarray of shape (n_clusters, n_features), dtype=floating
    winners : ndarray of shape (n_samples, n_winners), dtype=int32
        Output: the ``n_winners`` nearest clusters of each sample, ordered by increasing
        distance; equal distances are ordered by cluster index. ``1 <= n_winners <= n_clusters``.
    win_dist2 : ndarray of shape (n_samples, n_winners), dtype=floating
        Output: the squared distances to ``winners`` (clamped at zero), ascending per row.
    n_threads : int
        Number of OpenMP threads.

    Returns
    -------
    n_distance_evals : int
        ``n_samples * n_clusters``.

    Notes
    -----
    Works by chunks of ``CHUNK_SIZE`` samples; each thread owns one ``CHUNK_SIZE x n_clusters``
    tile, so no ``n_samples x n_clusters`` array is formed. The selection keeps a max-heap of
    the current ``n_winners`` best per row (``O(C log C')`` per sample). On the gemm path the
    selection runs on ``||c||^2 - 2 x.c`` (the row's ``||x||^2`` does not change the order)
    and ``||x||^2`` is added to the winners only; with ``n_winners = 1`` the near-ties of
    that order are settled by direct distances as in :func:`~._assign.assign_full`, so the
    winner is the full E-step's label, ties to the lower index. Every output row is written by one thread,
    so results do not depend on ``n_threads``. Assumes valid input.

    References
    ----------
    .. [1] J. Lücke and D. Forster, "k-means as a variational EM approximation of Gaussian
       mixture models", Pattern Recognition Letters, 2019 (arXiv:1704.04812).
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t n_clusters = centers.shape[0], n_winners = winners.shape[1]
    cdef Py_ssize_t n_chunks = (n_samples + CHUNK_SIZE - 1) // CHUNK_SIZE
    cdef Py_ssize_t c, start, end
    if n_samples == 0:
        return 0
    n_threads = max(1, min(n_threads, n_chunks))
    dtype = np.float32 if floating is float else np.float64
    sqnorm, transposed = center_tables(centers)
    cdef floating[::1] centers_sqnorm = sqnorm
    cdef floating[:, ::1] centers_T = transposed
    cdef floating[:, :, ::1] tiles = np.empty((n_threads, CHUNK_SIZE, n_clusters), dtype=dtype)
    with nogil, parallel(num_threads=n_threads):
        for c in prange(n_chunks, schedule="static"):
            start = c * CHUNK_SIZE
            end = min(start + CHUNK_SIZE, n_samples)
            _topk_chunk(&X[start, 0], end - start, n_features, &centers[0, 0], &centers_T[0, 0],
                        &centers_sqnorm[0], n_clusters, n_winners, &tiles[threadid(), 0, 0],
                        &winners[start, 0], &win_dist2[start, 0])
    return n_samples * n_clusters
