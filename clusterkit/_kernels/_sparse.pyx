"""Kernels for CSR data: distances to dense centres, the nearest centre, the hard M-step's
per-cluster sums and the k-means++ D^2 update.

A CSR matrix reaches a kernel as its three arrays: ``data`` (floating), ``indices`` and
``indptr`` (int32). Squared distances are ``||x||^2 - 2 x.c + ||c||^2``, with the rows'
squared norms computed once per fit (:func:`row_sqnorms`) and the centres' once per call,
clipped at 0.

The products ``x.c`` with every centre are formed one row at a time from the centres
transposed (``n_features x n_clusters``): each non-zero ``x_k`` adds ``x_k`` times the
contiguous row ``k`` of that table to the row's ``n_clusters`` accumulators, a vectorised
loop over contiguous memory. (The direct loop over the non-zeros for one centre at a time
reads the centres at scattered columns.) Every output element is written by one thread and
every sum runs in an order fixed by the data, so the results do not depend on ``n_threads``.
"""
import numpy as np

from cython cimport floating
from cython.parallel cimport parallel, prange, threadid

from ._accumulate cimport _counting_sort
from ._chunks cimport _chunk_stop, _chunk_threads, _n_chunks
from ._dist cimport CHUNK_SIZE
from ._sparse cimport _sparse_dist2, _sparse_dot


def _center_tables(centers):
    """The centres transposed (``n_features x n_clusters``, C-contiguous) and their squared
    norms, summed in float64 and rounded to the centres' dtype."""
    centers = np.asarray(centers)
    sqnorms = np.einsum("ij,ij->i", centers, centers, dtype=np.float64).astype(centers.dtype)
    return np.ascontiguousarray(centers.T), sqnorms


cdef inline void _row_products(const floating* data, const int* indices, Py_ssize_t nnz,
                               const floating* centers_T,    # IN  (n_features, n_clusters)
                               Py_ssize_t n_clusters,
                               floating* out) noexcept nogil:  # OUT (n_clusters,)
    """``out[j] = x . c_j`` for every centre, one non-zero of ``x`` at a time."""
    cdef Py_ssize_t p, j
    cdef floating v
    cdef const floating* column
    for j in range(n_clusters):
        out[j] = 0
    for p in range(nnz):
        v = data[p]
        column = centers_T + <Py_ssize_t> indices[p] * n_clusters
        for j in range(n_clusters):
            out[j] += v * column[j]


def row_sqnorms(const floating[::1] data,     # IN
                const int[::1] indptr,        # IN  (n_samples + 1,)
                floating[::1] out,            # OUT (n_samples,)
                int n_threads):
    """Squared norm of every CSR row, summed in float64 and rounded to ``data``'s dtype.

    Parameters
    ----------
    data : ndarray of shape (nnz,), dtype=floating
    indptr : ndarray of shape (n_samples + 1,), dtype=int32
    out : ndarray of shape (n_samples,), dtype=floating
        Output: ``||x_i||^2`` (0 for a row without non-zeros).
    n_threads : int
    """
    cdef Py_ssize_t n_samples = out.shape[0], i, p
    cdef double s
    with nogil:
        for i in prange(n_samples, schedule="static", num_threads=max(1, n_threads)):
            s = 0
            for p in range(indptr[i], indptr[i + 1]):
                s = s + <double> data[p] * data[p]
            out[i] = <floating> s


def assign_sparse(const floating[::1] data,        # IN
                  const int[::1] indices,          # IN
                  const int[::1] indptr,           # IN  (n_samples + 1,)
                  const floating[::1] x_sqnorms,   # IN  (n_samples,)
                  const floating[:, ::1] centers,  # IN  (n_clusters, n_features)
                  int[::1] labels,                 # OUT (n_samples,)
                  floating[::1] min_dist2,         # OUT (n_samples,)
                  int n_threads):
    """Nearest centre of every CSR row (Lloyd's E-step) and the squared distance to it.

    Parameters
    ----------
    data, indices, indptr : ndarrays, dtype=floating, int32, int32
        The CSR arrays of ``X`` of shape (n_samples, n_features).
    x_sqnorms : ndarray of shape (n_samples,), dtype=floating
        ``||x_i||^2`` (:func:`row_sqnorms`).
    centers : ndarray of shape (n_clusters, n_features), dtype=floating
    labels : ndarray of shape (n_samples,), dtype=int32
        Output: the nearest centre; ties go to the lower index.
    min_dist2 : ndarray of shape (n_samples,), dtype=floating
        Output: ``||x_i||^2 - 2 x_i.c + ||c||^2`` for that centre, clipped at 0.
    n_threads : int

    Returns
    -------
    n_distance_evals : int
        ``n_samples * n_clusters`` expanded distances.

    Notes
    -----
    Rows in chunks of ``CHUNK_SIZE``, one ``n_clusters`` accumulator per thread; the argmin
    needs only ``||c||^2 - 2 x.c``. Costs ``O(nnz C)`` multiply-adds. Assumes valid input.
    """
    cdef Py_ssize_t n_samples = labels.shape[0], n_clusters = centers.shape[0]
    cdef Py_ssize_t n_chunks = _n_chunks(n_samples, CHUNK_SIZE)
    cdef Py_ssize_t c, i, j, best_j
    cdef floating best, v
    cdef floating* acc
    if n_samples == 0:
        return 0
    n_threads = _chunk_threads(n_threads, n_chunks)
    tables = _center_tables(centers)
    cdef const floating[:, ::1] centers_T = tables[0]
    cdef const floating[::1] c_sqnorms = tables[1]
    cdef floating[:, ::1] scratch = np.empty((n_threads, n_clusters), dtype=tables[1].dtype)
    cdef const floating* dp = &data[0] if data.shape[0] > 0 else NULL
    cdef const int* ip = &indices[0] if indices.shape[0] > 0 else NULL
    with nogil, parallel(num_threads=n_threads):
        acc = &scratch[threadid(), 0]
        for c in prange(n_chunks, schedule="static"):
            for i in range(c * CHUNK_SIZE, _chunk_stop(c, CHUNK_SIZE, n_samples)):
                _row_products(dp + indptr[i], ip + indptr[i], indptr[i + 1] - indptr[i],
                              &centers_T[0, 0], n_clusters, acc)
                best_j = 0
                # (x + x, not 2 * x: Cython would promote floats to double)
                best = c_sqnorms[0] - (acc[0] + acc[0])
                for j in range(1, n_clusters):
                    v = c_sqnorms[j] - (acc[j] + acc[j])
                    if v < best:
                        best, best_j = v, j
                labels[i] = <int> best_j
                v = x_sqnorms[i] + best
                min_dist2[i] = v if v > 0 else 0
    return n_samples * n_clusters


def dist2_sparse(const floating[::1] data,        # IN
                 const int[::1] indices,          # IN
                 const int[::1] indptr,           # IN  (n_samples + 1,)
                 const floating[::1] x_sqnorms,   # IN  (n_samples,)
                 const floating[:, ::1] centers,  # IN  (n_clusters, n_features)
                 floating[:, ::1] dist2,          # OUT (n_samples, n_clusters)
                 int n_threads):
    """Squared distances of every CSR row to every centre (``transform``).

    Parameters
    ----------
    data, indices, indptr, x_sqnorms, centers, n_threads
        As for :func:`assign_sparse`.
    dist2 : ndarray of shape (n_samples, n_clusters), dtype=floating
        Output: ``||x_i||^2 - 2 x_i.c_j + ||c_j||^2``, clipped at 0; the smallest of a row is
        the one :func:`assign_sparse` picks.

    Returns
    -------
    n_distance_evals : int
        ``n_samples * n_clusters``.
    """
    cdef Py_ssize_t n_samples = dist2.shape[0], n_clusters = centers.shape[0]
    cdef Py_ssize_t n_chunks = _n_chunks(n_samples, CHUNK_SIZE)
    cdef Py_ssize_t c, i, j
    cdef floating v
    cdef floating* row
    if n_samples == 0:
        return 0
    n_threads = _chunk_threads(n_threads, n_chunks)
    tables = _center_tables(centers)
    cdef const floating[:, ::1] centers_T = tables[0]
    cdef const floating[::1] c_sqnorms = tables[1]
    cdef const floating* dp = &data[0] if data.shape[0] > 0 else NULL
    cdef const int* ip = &indices[0] if indices.shape[0] > 0 else NULL
    with nogil:
        for c in prange(n_chunks, schedule="static", num_threads=n_threads):
            for i in range(c * CHUNK_SIZE, _chunk_stop(c, CHUNK_SIZE, n_samples)):
                row = &dist2[i, 0]
                _row_products(dp + indptr[i], ip + indptr[i], indptr[i + 1] - indptr[i],
                              &centers_T[0, 0], n_clusters, row)
                for j in range(n_clusters):
                    # assign_sparse's two roundings, so its minimum is this row's
                    v = c_sqnorms[j] - (row[j] + row[j])
                    v = x_sqnorms[i] + v
                    row[j] = v if v > 0 else 0
    return n_samples * n_clusters


def dist2_to_labels_sparse(const floating[::1] data,        # IN
                           const int[::1] indices,          # IN
                           const int[::1] indptr,           # IN  (n_samples + 1,)
                           const floating[::1] x_sqnorms,   # IN  (n_samples,)
                           const floating[:, ::1] centers,  # IN  (n_clusters, n_features)
                           const int[::1] labels,           # IN  (n_samples,)
                           floating[::1] dist2,             # OUT (n_samples,)
                           int n_threads):
    """Squared distance of every CSR row to the centre its label names.

    Parameters
    ----------
    data, indices, indptr : ndarrays, dtype=floating, int32, int32
    x_sqnorms : ndarray of shape (n_samples,), dtype=floating
    centers : ndarray of shape (n_clusters, n_features), dtype=floating
    labels : ndarray of shape (n_samples,), dtype=int32
        Valid cluster indices.
    dist2 : ndarray of shape (n_samples,), dtype=floating
        Output: ``||x_i||^2 - 2 x_i.c + ||c||^2`` (the dot in float64), clipped at 0.
    n_threads : int

    Returns
    -------
    n_distance_evals : int
        ``n_samples``.
    """
    cdef Py_ssize_t n_samples = labels.shape[0], i
    if n_samples == 0:
        return 0
    cdef const floating[::1] c_sqnorms = _center_tables(centers)[1]
    cdef const floating* dp = &data[0] if data.shape[0] > 0 else NULL
    cdef const int* ip = &indices[0] if indices.shape[0] > 0 else NULL
    with nogil:
        for i in prange(n_samples, schedule="static", num_threads=max(1, n_threads)):
            dist2[i] = _sparse_dist2(dp + indptr[i], ip + indptr[i], indptr[i + 1] - indptr[i],
                                     x_sqnorms[i], &centers[labels[i], 0],
                                     c_sqnorms[labels[i]])
    return n_samples


def accumulate_sparse(const floating[::1] data,            # IN
                      const int[::1] indices,              # IN
                      const int[::1] indptr,               # IN  (n_samples + 1,)
                      const floating[::1] sample_weight,   # IN  (n_samples,)
                      const int[::1] labels,               # IN  (n_samples,)
                      const double[::1] dist2,             # IN  (n_samples,), or None
                      floating[:, ::1] centers_sum,        # OUT (n_clusters, n_features)
                      floating[::1] weight_in_clusters,    # OUT (n_clusters,)
                      double[::1] sse,                     # OUT (n_clusters,), or None
                      int n_threads):
    """Per-cluster weighted sums of CSR rows, their weights and squared errors (hard M-step).

    ``S_j = sum_{l_n = j} w_n x_n``, ``W_j = sum_{l_n = j} w_n`` and
    ``E_j = sum_{l_n = j} w_n d2_n``.

    Parameters
    ----------
    data, indices, indptr : ndarrays, dtype=floating, int32, int32
    sample_weight : ndarray of shape (n_samples,), dtype=floating
    labels : ndarray of shape (n_samples,), dtype=int32
    dist2 : ndarray of shape (n_samples,), dtype=float64, or None
        Per-sample squared distances summed into ``sse``; None if ``sse`` is None.
    centers_sum : ndarray of shape (n_clusters, n_features), dtype=floating
        Output: ``S_j`` (dense).
    weight_in_clusters : ndarray of shape (n_clusters,), dtype=floating
        Output: ``W_j``.
    sse : ndarray of shape (n_clusters,), dtype=float64, or None
        Output if given: ``E_j``.
    n_threads : int

    Notes
    -----
    "Owner computes": the samples are counting-sorted by label, then each cluster, in
    ``prange`` over the clusters, sums its members in sample order into its own row. The
    sums are therefore bit-identical for any ``n_threads``, and equal to those of the dense
    kernel's owner layout (``_mstep.accumulate_statistics``) on the same data, whose zeros
    add nothing. Costs ``O(nnz + C D)`` and ``O(N + C)`` extra integers. Assumes valid input.
    """
    cdef Py_ssize_t n_samples = labels.shape[0], n_features = centers_sum.shape[1]
    cdef Py_ssize_t n_clusters = centers_sum.shape[0]
    cdef Py_ssize_t j, q, i, k, p
    cdef bint with_sse = sse is not None
    cdef floating w, wsum
    cdef floating* row
    cdef double esum
    cdef Py_ssize_t[::1] starts = np.empty(n_clusters + 2, dtype=np.intp)
    cdef Py_ssize_t[::1] order = np.empty(max(n_samples, 1), dtype=np.intp)
    cdef const int* label_ptr = &labels[0] if n_samples > 0 else NULL
    with nogil:
        _counting_sort(label_ptr, n_samples, n_clusters, starts, order)
        for j in prange(n_clusters, schedule="static", num_threads=max(1, n_threads)):
            row = &centers_sum[j, 0]
            for k in range(n_features):
                row[k] = 0
            wsum = 0
            esum = 0
            for q in range(starts[j], starts[j + 1]):
                i = order[q]
                w = sample_weight[i]
                wsum = wsum + w
                if with_sse:
                    esum = esum + w * dist2[i]
                for p in range(indptr[i], indptr[i + 1]):
                    row[indices[p]] += w * data[p]
            weight_in_clusters[j] = wsum
            if with_sse:
                sse[j] = esum


def d2_update_sparse(const floating[::1] data,           # IN
                     const int[::1] indices,             # IN
                     const int[::1] indptr,              # IN  (n_samples + 1,)
                     const floating[::1] x_sqnorms,      # IN  (n_samples,)
                     const floating[:, ::1] candidates,  # IN  (n_candidates, n_features)
                     const floating[::1] min_dist2,      # IN  (n_samples,)
                     floating[:, ::1] out,               # OUT (n_candidates, n_samples)
                     int n_threads):
    """The k-means++ D^2 update for each of a few candidate centres.

    ``out[t, i] = min(min_dist2[i], ||x_i - candidates[t]||^2)``: the squared distance of each
    row to its nearest centre if candidate ``t`` became one.

    Parameters
    ----------
    data, indices, indptr : ndarrays, dtype=floating, int32, int32
    x_sqnorms : ndarray of shape (n_samples,), dtype=floating
    candidates : ndarray of shape (n_candidates, n_features), dtype=floating
        Dense candidate centres (rows of ``X``).
    min_dist2 : ndarray of shape (n_samples,), dtype=floating
        Squared distance of each row to its nearest centre so far (``inf`` before the first).
    out : ndarray of shape (n_candidates, n_samples), dtype=floating
        Output; may be ``min_dist2[None]`` itself for a single candidate.
    n_threads : int

    Returns
    -------
    n_distance_evals : int
        ``n_candidates * n_samples``: one per row and candidate.

    Notes
    -----
    Each distance is ``||x||^2 - 2 x.c + ||c||^2`` with the dot in float64 (a sample equal to
    the candidate gets 0 up to rounding, clipped at 0). Assumes valid input.
    """
    cdef Py_ssize_t n_samples = min_dist2.shape[0], n_candidates = candidates.shape[0]
    cdef Py_ssize_t n_chunks = _n_chunks(n_samples, CHUNK_SIZE)
    cdef Py_ssize_t c, i, t
    cdef floating d, current
    if n_samples == 0 or n_candidates == 0:
        return 0
    cdef const floating[::1] c_sqnorms = _center_tables(candidates)[1]
    cdef const floating* dp = &data[0] if data.shape[0] > 0 else NULL
    cdef const int* ip = &indices[0] if indices.shape[0] > 0 else NULL
    with nogil:
        for c in prange(n_chunks, schedule="static",
                        num_threads=_chunk_threads(n_threads, n_chunks)):
            for i in range(c * CHUNK_SIZE, _chunk_stop(c, CHUNK_SIZE, n_samples)):
                current = min_dist2[i]
                for t in range(n_candidates):
                    d = _sparse_dist2(dp + indptr[i], ip + indptr[i], indptr[i + 1] - indptr[i],
                                      x_sqnorms[i], &candidates[t, 0], c_sqnorms[t])
                    out[t, i] = d if d < current else current
    return n_candidates * n_samples
