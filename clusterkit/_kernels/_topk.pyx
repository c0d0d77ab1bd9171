"""Exact top-C' search: the ``C'`` nearest centres of every sample (truncated E-step)."""
from cython cimport floating
from cython.parallel cimport parallel, prange

from ._chunks cimport _chunk_len, _TilePlan
from ._dist cimport (CHUNK_SIZE, _chunk_tile, _prepare_tiles, _settle_near_ties, _sqdist_wide,
                     _sqnorm, _tile_row, _use_gemm)
from ._select cimport _select_row


cdef void _topk_chunk(const _TilePlan* plan,
                      const floating* X,               # IN  (n_rows, n_features)
                      Py_ssize_t n_rows,
                      Py_ssize_t n_winners,
                      int* winners,                    # OUT (n_rows, n_winners)
                      floating* win_dist2) noexcept nogil:  # OUT (n_rows, n_winners)
    cdef Py_ssize_t n_features = plan.n_features, i, j
    cdef bint gemm = _use_gemm(n_features)
    cdef floating xn, d
    cdef floating* vals
    cdef floating* row
    cdef floating* tile = _chunk_tile(plan, X, n_rows)
    for i in range(n_rows):
        vals = win_dist2 + i * n_winners
        row = _tile_row(plan, X, i, tile)
        # with gemm ||x||^2 is the same for the whole row: select first, add it to the
        # winners only
        _select_row(row, plan.n_clusters, n_winners, vals, winners + i * n_winners)
        if gemm:
            xn = _sqnorm(X + i * n_features, n_features)
            if n_winners == 1:
                # the nearest centre exactly as the full E-step finds it (near-ties settled),
                # and the direct distance to it, which the full E-step reports
                winners[i] = <int> _settle_near_ties(
                    row, plan.n_clusters, winners[i], X + i * n_features, n_features,
                    <const floating*> plan.centers, xn, plan.max_sqnorm, vals)
                vals[0] = _sqdist_wide(X + i * n_features,
                                       <const floating*> plan.centers + winners[i] * n_features,
                                       n_features)
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
    X, centers, n_threads
        As for :func:`~._assign.assign_full`.
    winners : ndarray of shape (n_samples, n_winners), dtype=int32
        Output: the ``n_winners`` nearest clusters of each sample, ordered by increasing
        distance; equal distances are ordered by cluster index. ``1 <= n_winners <= n_clusters``.
    win_dist2 : ndarray of shape (n_samples, n_winners), dtype=floating
        Output: the squared distances to ``winners`` (clamped at zero), ascending per row.

    Returns
    -------
    n_distance_evals : int
        All of them, ``n_samples * n_clusters``.

    Notes
    -----
    Works by chunks of ``CHUNK_SIZE`` samples; each thread owns one ``CHUNK_SIZE x n_clusters``
    tile, so no ``n_samples x n_clusters`` array is formed. The selection keeps a max-heap of
    the current ``n_winners`` best per row (``O(C log C')`` per sample). On the gemm path the
    selection runs on ``||c||^2 - 2 x.c`` (the row's ``||x||^2`` does not change the order)
    and ``||x||^2`` is added to the winners only; with ``n_winners = 1`` the near-ties of
    that order are settled by direct distances as in :func:`~._assign.assign_full`, so the
    winner is the full E-step's label, ties to the lower index, and its distance the direct
    one that E-step reports. Every output row is written by one thread,
    so results do not depend on ``n_threads``. Assumes valid input.

    References
    ----------
    .. [1] J. Lücke and D. Forster, "k-means as a variational EM approximation of Gaussian
       mixture models", Pattern Recognition Letters, 2019 (arXiv:1704.04812).
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_winners = winners.shape[1], c
    cdef _TilePlan plan
    if n_samples == 0:
        return 0
    keep = _prepare_tiles(&plan, centers, n_samples, CHUNK_SIZE, n_threads,
                          CHUNK_SIZE * centers.shape[0] * sizeof(floating))
    with nogil, parallel(num_threads=plan.n_threads):
        for c in prange(plan.n_chunks, schedule="static"):
            _topk_chunk(&plan, &X[c * CHUNK_SIZE, 0], _chunk_len(&plan, c), n_winners,
                        &winners[c * CHUNK_SIZE, 0], &win_dist2[c * CHUNK_SIZE, 0])
    return n_samples * centers.shape[0]
