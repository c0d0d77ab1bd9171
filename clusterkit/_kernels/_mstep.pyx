"""Weighted M-step statistics, deterministic for any number of threads.

The reductions follow the data, never the threads: either "owner computes" (samples are
counting-sorted by cluster, then each cluster sums its own members in sample order inside
``prange`` over clusters) or fixed blocks of rows reduced in block order. Every output element
is written by one thread and the order of every floating-point sum is fixed by the data, so
results are bit-identical for any ``n_threads``.
"""
import numpy as np

from cython cimport floating
from cython.parallel cimport prange
from libc.float cimport DBL_MIN, FLT_MIN

from ._accumulate cimport (_add_sample, _block_rows, _blocks_fit, _counting_sort, _n_blocks,
                           _reduce_blocks)


def accumulate_statistics(const floating[:, ::1] X,              # IN
                          const floating[::1] sample_weight,     # IN
                          const int[:, ::1] winners,             # IN
                          const floating[:, ::1] resp,           # IN, or None (hard)
                          const double[::1] dist2,               # IN, or None
                          floating[:, ::1] centers_sum,          # OUT
                          floating[::1] weight_in_clusters,      # OUT
                          double[::1] sse,                       # OUT, or None
                          int n_threads):
    """Per-cluster weighted sums, weights and squared errors (the M-steps' statistics).

    ``S_j = sum_n w_n r_nj x_n``, ``W_j = sum_n w_n r_nj`` and ``E_j = sum_n w_n r_nj d2_n``
    over the pairs ``(n, j)`` with ``j`` among the winners of sample ``n``. A hard assignment
    is the one-winner case: pass the labels as ``labels[:, None]`` (a view) and
    ``resp=None`` (``r_nj = 1``).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), dtype=floating
    sample_weight : ndarray of shape (n_samples,), dtype=floating
    winners : ndarray of shape (n_samples, n_winners), dtype=int32
        The clusters ``K(n)`` of each sample, in ``[0, n_clusters)`` and distinct within a
        row; ``labels[:, None]`` for a hard assignment.
    resp : ndarray of shape (n_samples, n_winners), dtype=floating, or None
        Responsibilities ``r_nj`` for ``j`` in ``K(n)``; None for a hard assignment.
    dist2 : ndarray of shape (n_samples,), dtype=float64, or None
        Per-sample squared distances ``d2_n`` summed into ``sse``; None if ``sse`` is None.
    centers_sum : ndarray of shape (n_clusters, n_features), dtype=floating
        Output: ``S_j`` (Hirschberger et al., eq. 9, numerator).
    weight_in_clusters : ndarray of shape (n_clusters,), dtype=floating
        Output: ``W_j`` (``U_c`` in eq. 9).
    sse : ndarray of shape (n_clusters,), dtype=float64, or None
        Output if given: ``E_j``, summed in float64 (the mini-batch rules' per-cluster error).
    n_threads : int

    Notes
    -----
    Costs ``O(N C' D)``, no distances. Uses fixed blocks of rows (streaming the data) when
    :func:`blocks_fit`, else "owner computes" (``O(N C' + C)`` extra integers): samples are
    counting-sorted by cluster and each cluster sums its own members in sample order. Either
    way the order of every sum depends only on the data, so results are bit-identical for any
    ``n_threads``, and the fused E-step kernels
    (:func:`clusterkit._kernels._assign.assign_full_accumulate`,
    :func:`clusterkit._kernels._elkan.elkan_assign`) give the same bits. ``E_j`` follows the
    same order, so it differs at rounding level from a plain sum in sample order (it equals
    one under "owner computes"); each term is ``(double) (w_n r_nj) * d2_n`` with ``w_n r_nj``
    rounded to ``X``'s dtype, as it enters ``W_j``.

    With responsibilities, contributions with ``w_n r_nj`` below the dtype's smallest normal
    number (``1.2e-38`` for float32) are left out: truncated responsibilities often underflow
    to such subnormal values, which hardly change a sum but run at the processor's slow
    subnormal speed (they made the M-step five times slower on mnist). A cluster that only
    gets such contributions has no weight and is relocated. Hard contributions are all kept.
    Assumes valid input.
    """
    if _blocks_fit(X.shape[0], centers_sum.shape[0], X.shape[1], sizeof(floating)):
        _accumulate_blocks(X, sample_weight, winners, resp, dist2, centers_sum,
                           weight_in_clusters, sse, n_threads)
    else:
        _accumulate_owner(X, sample_weight, winners, resp, dist2, centers_sum,
                          weight_in_clusters, sse, n_threads)


def blocks_fit(Py_ssize_t n_samples, Py_ssize_t n_clusters, Py_ssize_t n_features,
               Py_ssize_t itemsize):
    """Whether the M-steps' statistics are summed in fixed blocks of rows.

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


cdef _accumulate_blocks(const floating[:, ::1] X, const floating[::1] sample_weight,
                        const int[:, ::1] winners, const floating[:, ::1] resp,
                        const double[::1] dist2, floating[:, ::1] centers_sum,
                        floating[::1] weight_in_clusters, double[::1] sse, int n_threads):
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t n_clusters = centers_sum.shape[0], n_winners = winners.shape[1]
    cdef Py_ssize_t n_blocks = _n_blocks(n_samples)
    cdef Py_ssize_t rows = _block_rows(n_samples, n_blocks)
    cdef Py_ssize_t b, i, m, start, end
    cdef bint hard = resp is None, with_sse = sse is not None
    cdef floating w
    cdef floating* block_sums
    cdef floating* block_weights
    cdef double* block_sse
    cdef floating tiny = FLT_MIN if floating is float else DBL_MIN
    dtype = np.float32 if floating is float else np.float64
    cdef floating[:, :, ::1] sums = np.zeros((n_blocks, n_clusters, n_features), dtype=dtype)
    cdef floating[:, ::1] weights = np.zeros((n_blocks, n_clusters), dtype=dtype)
    cdef double[:, ::1] sse_parts = np.zeros((n_blocks, n_clusters if with_sse else 1))
    with nogil:
        for b in prange(n_blocks, schedule="static", num_threads=n_threads):
            # per-block pointers and one loop per case: nothing is re-tested per sample that
            # could be tested per block (the hard case with few features is cheap per sample)
            block_sums = &sums[b, 0, 0]
            block_weights = &weights[b, 0]
            block_sse = &sse_parts[b, 0] if with_sse else NULL
            start = b * rows
            end = min(start + rows, n_samples)
            if hard:
                for i in range(start, end):
                    _add_sample(block_sums, block_weights, block_sse, winners[i, 0], &X[i, 0],
                                sample_weight[i], dist2[i] if block_sse != NULL else 0,
                                n_features)
            else:
                for i in range(start, end):
                    for m in range(n_winners):
                        w = sample_weight[i] * resp[i, m]
                        if w >= tiny:  # see the Notes of accumulate_statistics
                            _add_sample(block_sums, block_weights, block_sse, winners[i, m],
                                        &X[i, 0], w, dist2[i] if block_sse != NULL else 0,
                                        n_features)
        _reduce_blocks(sums, weights, &sse_parts[0, 0], centers_sum, weight_in_clusters,
                       &sse[0] if with_sse else NULL, n_threads)


cdef _accumulate_owner(const floating[:, ::1] X, const floating[::1] sample_weight,
                       const int[:, ::1] winners, const floating[:, ::1] resp,
                       const double[::1] dist2, floating[:, ::1] centers_sum,
                       floating[::1] weight_in_clusters, double[::1] sse, int n_threads):
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t n_clusters = centers_sum.shape[0], n_winners = winners.shape[1]
    cdef Py_ssize_t n_entries = n_samples * n_winners
    cdef Py_ssize_t j, p, e, i, k, m
    cdef bint hard = resp is None, with_sse = sse is not None
    cdef floating w, wsum
    cdef double esum
    cdef floating tiny = FLT_MIN if floating is float else DBL_MIN
    cdef Py_ssize_t[::1] starts = np.empty(n_clusters + 2, dtype=np.intp)
    cdef Py_ssize_t[::1] order = np.empty(n_entries, dtype=np.intp)
    # the winners are the sort keys; with responsibilities, entries left out (see the Notes
    # of accumulate_statistics) go to an extra key that no cluster reads
    cdef int[::1] keys = np.empty(0 if hard else n_entries, dtype=np.int32)
    cdef const int* key_ptr = NULL
    if n_entries > 0:
        key_ptr = &winners[0, 0] if hard else &keys[0]
    with nogil:
        if not hard:
            for i in range(n_samples):
                for m in range(n_winners):
                    w = sample_weight[i] * resp[i, m]
                    keys[i * n_winners + m] = winners[i, m] if w >= tiny else <int> n_clusters
        _counting_sort(key_ptr, n_entries, n_clusters + 1, starts, order)
        for j in prange(n_clusters, schedule="static", num_threads=n_threads):
            wsum = 0
            esum = 0
            for k in range(n_features):
                centers_sum[j, k] = 0
            for p in range(starts[j], starts[j + 1]):
                e = order[p]
                if hard:  # one winner per sample: entry e is sample e (no division)
                    i = e
                    w = sample_weight[i]
                else:
                    i = e // n_winners
                    w = sample_weight[i] * resp[i, e - i * n_winners]
                wsum = wsum + w
                if with_sse:
                    esum = esum + w * dist2[i]
                for k in range(n_features):
                    centers_sum[j, k] += w * X[i, k]
            weight_in_clusters[j] = wsum
            if with_sse:
                sse[j] = esum
