"""Weighted M-step accumulation, deterministic for any number of threads.

The reductions follow the data, never the threads: either "owner computes" (samples are
counting-sorted by cluster, then each cluster sums its own members in sample order inside
``prange`` over clusters) or fixed blocks of rows reduced in block order. Every output element
is written by one thread and the order of every floating-point sum is fixed by the data, so
results are bit-identical for any ``n_threads``.
"""
import numpy as np

from cython cimport floating
from libc.float cimport DBL_MIN, FLT_MIN
from cython.parallel cimport prange

from ._dist cimport _sqdist_wide
from ._accumulate cimport _add_row, _block_rows, _blocks_fit, _n_blocks, _reduce_blocks


cdef void _counting_sort(const int[::1] keys, Py_ssize_t n_keys, Py_ssize_t[::1] starts,
                         Py_ssize_t[::1] order) noexcept nogil:
    """``order`` lists positions grouped by key (ascending position inside a key);
    ``starts[j]:starts[j + 1]`` is key ``j``'s range."""
    cdef Py_ssize_t i, n = keys.shape[0]
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


def accumulate_hard(const floating[:, ::1] X,              # IN
                    const floating[::1] sample_weight,     # IN
                    const int[::1] labels,                 # IN
                    floating[:, ::1] centers_sum,          # OUT
                    floating[::1] weight_in_clusters,      # OUT
                    int n_threads):
    """Weighted sums of the samples of every cluster (the hard M-step's statistics).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), dtype=floating
    sample_weight : ndarray of shape (n_samples,), dtype=floating
    labels : ndarray of shape (n_samples,), dtype=int32
        Cluster of each sample, in ``[0, n_clusters)``.
    centers_sum : ndarray of shape (n_clusters, n_features), dtype=floating
        Output: ``sum_{n: labels_n = c} w_n x_n``.
    weight_in_clusters : ndarray of shape (n_clusters,), dtype=floating
        Output: ``sum_{n: labels_n = c} w_n``.
    n_threads : int

    Notes
    -----
    Costs ``O(N D)``; no distances. Uses fixed blocks of rows (streaming the data) when their
    partial sums fit in 64 MiB and hold no more rows than the data, else "owner computes"
    (``O(N + C)`` extra integers). Either way the order of every sum depends only on the data,
    so results are bit-identical for any ``n_threads``. Assumes valid input.
    """
    if _blocks_fit(X.shape[0], centers_sum.shape[0], X.shape[1], sizeof(floating)):
        _accumulate_hard_blocks(X, sample_weight, labels, centers_sum, weight_in_clusters,
                                n_threads)
    else:
        _accumulate_hard_owner(X, sample_weight, labels, centers_sum, weight_in_clusters,
                               n_threads)


def blocks_fit(Py_ssize_t n_samples, Py_ssize_t n_clusters, Py_ssize_t n_features,
               Py_ssize_t itemsize):
    """Whether the hard M-step's statistics are summed in fixed blocks of rows.

    Parameters
    ----------
    n_samples, n_clusters, n_features : int
    itemsize : int
        Bytes per value (4 for float32, 8 for float64).

    Returns
    -------
    fit : bool
        ``True`` when there are at least two blocks and their partial sums need at most
        64 MiB and ``n_blocks * n_clusters <= n_samples`` rows; then
        :func:`clusterkit._kernels._assign.assign_full_accumulate` can compute the same
        statistics, bit for bit, during the assignment pass.
    """
    return bool(_blocks_fit(n_samples, n_clusters, n_features, itemsize))


cdef _accumulate_hard_blocks(const floating[:, ::1] X, const floating[::1] sample_weight,
                             const int[::1] labels, floating[:, ::1] centers_sum,
                             floating[::1] weight_in_clusters, int n_threads):
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t n_clusters = centers_sum.shape[0]
    cdef Py_ssize_t n_blocks = _n_blocks(n_samples)
    cdef Py_ssize_t rows = _block_rows(n_samples, n_blocks)
    cdef Py_ssize_t b, i, j
    dtype = np.float32 if floating is float else np.float64
    cdef floating[:, :, ::1] sums = np.zeros((n_blocks, n_clusters, n_features), dtype=dtype)
    cdef floating[:, ::1] weights = np.zeros((n_blocks, n_clusters), dtype=dtype)
    with nogil:
        for b in prange(n_blocks, schedule="static", num_threads=n_threads):
            for i in range(b * rows, min((b + 1) * rows, n_samples)):
                j = labels[i]
                _add_row(&sums[b, j, 0], &weights[b, j], &X[i, 0], sample_weight[i],
                         n_features)
        _reduce_blocks(sums, weights, centers_sum, weight_in_clusters, n_threads)


cdef _accumulate_hard_owner(const floating[:, ::1] X, const floating[::1] sample_weight,
                            const int[::1] labels, floating[:, ::1] centers_sum,
                            floating[::1] weight_in_clusters, int n_threads):
    cdef Py_ssize_t n_features = X.shape[1], n_clusters = centers_sum.shape[0]
    cdef Py_ssize_t j, p, i, k
    cdef floating w, wsum
    cdef Py_ssize_t[::1] starts = np.empty(n_clusters + 1, dtype=np.intp)
    cdef Py_ssize_t[::1] order = np.empty(X.shape[0], dtype=np.intp)
    with nogil:
        _counting_sort(labels, n_clusters, starts, order)
        for j in prange(n_clusters, schedule="static", num_threads=n_threads):
            wsum = 0
            for k in range(n_features):
                centers_sum[j, k] = 0
            for p in range(starts[j], starts[j + 1]):
                i = order[p]
                w = sample_weight[i]
                wsum = wsum + w
                for k in range(n_features):
                    centers_sum[j, k] += w * X[i, k]
            weight_in_clusters[j] = wsum


def accumulate_soft(const floating[:, ::1] X,              # IN
                    const floating[::1] sample_weight,     # IN
                    const int[:, ::1] winners,             # IN
                    const floating[:, ::1] resp,           # IN
                    floating[:, ::1] centers_sum,          # OUT
                    floating[::1] weight_in_clusters,      # OUT
                    int n_threads):
    """Weighted, responsibility-weighted sums for a truncated (sparse) soft M-step.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), dtype=floating
    sample_weight : ndarray of shape (n_samples,), dtype=floating
    winners : ndarray of shape (n_samples, n_winners), dtype=int32
        The clusters ``K(n)`` of each sample (distinct within a row).
    resp : ndarray of shape (n_samples, n_winners), dtype=floating
        Responsibilities ``r_nc`` for ``c`` in ``K(n)``.
    centers_sum : ndarray of shape (n_clusters, n_features), dtype=floating
        Output: ``sum_n w_n r_nc x_n`` (Hirschberger et al., eq. 9, numerator).
    weight_in_clusters : ndarray of shape (n_clusters,), dtype=floating
        Output: ``U_c = sum_n w_n r_nc``.
    n_threads : int

    Notes
    -----
    Costs ``O(N C' D)``. Uses fixed blocks of rows or "owner computes" (``O(N C' + C)`` extra
    integers) by the same rule as :func:`accumulate_hard`, so results are bit-identical for any
    ``n_threads``. Contributions with ``w_n r_nc`` below the dtype's smallest normal number
    (``1.2e-38`` for float32) are left out: truncated responsibilities often underflow to such
    subnormal values, which hardly change a sum but run at the processor's slow subnormal
    speed (they made the M-step five times slower on mnist). A cluster that only gets such
    contributions has no weight and is relocated. Assumes valid input.
    """
    if _blocks_fit(X.shape[0], centers_sum.shape[0], X.shape[1], sizeof(floating)):
        _accumulate_soft_blocks(X, sample_weight, winners, resp, centers_sum,
                                weight_in_clusters, n_threads)
    else:
        _accumulate_soft_owner(X, sample_weight, winners, resp, centers_sum,
                               weight_in_clusters, n_threads)


cdef _accumulate_soft_blocks(const floating[:, ::1] X, const floating[::1] sample_weight,
                             const int[:, ::1] winners, const floating[:, ::1] resp,
                             floating[:, ::1] centers_sum, floating[::1] weight_in_clusters,
                             int n_threads):
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t n_clusters = centers_sum.shape[0], n_winners = winners.shape[1]
    cdef Py_ssize_t n_blocks = _n_blocks(n_samples)
    cdef Py_ssize_t rows = _block_rows(n_samples, n_blocks)
    cdef Py_ssize_t b, i, j, m
    cdef floating w
    cdef floating tiny = FLT_MIN if floating is float else DBL_MIN
    dtype = np.float32 if floating is float else np.float64
    cdef floating[:, :, ::1] sums = np.zeros((n_blocks, n_clusters, n_features), dtype=dtype)
    cdef floating[:, ::1] weights = np.zeros((n_blocks, n_clusters), dtype=dtype)
    with nogil:
        for b in prange(n_blocks, schedule="static", num_threads=n_threads):
            for i in range(b * rows, min((b + 1) * rows, n_samples)):
                for m in range(n_winners):
                    w = sample_weight[i] * resp[i, m]
                    if w >= tiny:  # see accumulate_soft's Notes
                        j = winners[i, m]
                        _add_row(&sums[b, j, 0], &weights[b, j], &X[i, 0], w, n_features)
        _reduce_blocks(sums, weights, centers_sum, weight_in_clusters, n_threads)


cdef _accumulate_soft_owner(const floating[:, ::1] X, const floating[::1] sample_weight,
                            const int[:, ::1] winners, const floating[:, ::1] resp,
                            floating[:, ::1] centers_sum, floating[::1] weight_in_clusters,
                            int n_threads):
    cdef Py_ssize_t n_winners = winners.shape[1], n_features = X.shape[1]
    cdef Py_ssize_t n_clusters = centers_sum.shape[0]
    cdef Py_ssize_t n_samples = X.shape[0]
    cdef Py_ssize_t j, p, e, i, k, m
    cdef floating w, wsum
    cdef floating tiny = FLT_MIN if floating is float else DBL_MIN
    # entries left out (accumulate_soft's Notes) go to an extra key that no cluster reads
    cdef int[::1] keys = np.empty(n_samples * n_winners, dtype=np.int32)
    cdef Py_ssize_t[::1] starts = np.empty(n_clusters + 2, dtype=np.intp)
    cdef Py_ssize_t[::1] order = np.empty(n_samples * n_winners, dtype=np.intp)
    with nogil:
        for i in range(n_samples):
            for m in range(n_winners):
                w = sample_weight[i] * resp[i, m]
                keys[i * n_winners + m] = winners[i, m] if w >= tiny else <int> n_clusters
        _counting_sort(keys, n_clusters + 1, starts, order)
        for j in prange(n_clusters, schedule="static", num_threads=n_threads):
            wsum = 0
            for k in range(n_features):
                centers_sum[j, k] = 0
            for p in range(starts[j], starts[j + 1]):
                e = order[p]
                i = e // n_winners
                w = sample_weight[i] * resp[i, e - i * n_winners]
                wsum = wsum + w
                for k in range(n_features):
                    centers_sum[j, k] += w * X[i, k]
            weight_in_clusters[j] = wsum


def soft_sse(const floating[:, ::1] X,              # IN
             const int[:, ::1] winners,             # IN
             const floating[:, ::1] resp,           # IN
             const floating[:, ::1] centers,        # IN
             floating[::1] sse,                     # OUT
             int n_threads):
    """Per-sample ``sum_{c in K(n)} r_nc ||x_n - mu_c||^2`` for the variance update.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), dtype=floating
    winners : ndarray of shape (n_samples, n_winners), dtype=int32
    resp : ndarray of shape (n_samples, n_winners), dtype=floating
    centers : ndarray of shape (n_clusters, n_features), dtype=floating
        The NEW means (Forster & Lücke 2018, eq. 4 uses the updated means).
    sse : ndarray of shape (n_samples,), dtype=floating
        Output, per sample (unweighted; the caller weights and sums it).
    n_threads : int

    Returns
    -------
    n_distance_evals : int
        Always 0: like the papers, M-step distances are not counted as evaluations.
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_winners = winners.shape[1]
    cdef Py_ssize_t n_features = X.shape[1]
    cdef Py_ssize_t i, m
    cdef floating s
    with nogil:
        for i in prange(n_samples, schedule="static", num_threads=n_threads):
            s = 0
            for m in range(n_winners):
                if resp[i, m] != 0:
                    s = s + resp[i, m] * _sqdist_wide(&X[i, 0], &centers[winners[i, m], 0],
                                                      n_features)
            sse[i] = s
    return 0
