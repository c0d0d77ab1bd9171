"""The z-update of Scalable Laplacian K-modes (Ziko, Granger & Ben Ayed 2018, eq. 8).

Every sample's soft assignment is updated from the previous assignments of its graph
neighbours only (a Jacobi step), so all rows run in parallel and the result does not depend
on the number of threads.
"""
import numpy as np

from cython cimport floating
from cython.parallel cimport prange
from libc.math cimport exp, expf, log, logf

from ._chunks cimport _chunk_stop, _n_chunks
from ._dist cimport CHUNK_SIZE


def z_update(const floating[:, ::1] a,         # IN  (n_samples, n_clusters)
             const int[::1] indptr,            # IN  (n_samples + 1,) CSR of the graph
             const int[::1] indices,           # IN  (n_edges,)
             const floating[::1] weights,      # IN  (n_edges,)
             const floating[:, ::1] z,         # IN  (n_samples, n_clusters)
             double lam,
             floating[:, ::1] z_new,           # OUT (n_samples, n_clusters)
             int n_threads):
    """``z_new_p = softmax(a_p + lam b_p)`` with ``b_p = sum_q w_pq z_q`` (eq. 8), and the
    minimum of the bound (eq. 5) it reaches.

    For each row the bound ``sum_l z_l (log z_l - a_l - lam b_l)`` is minimised over the
    simplex by the softmax, where it equals ``-logsumexp(a_p + lam b_p)``; the returned value
    is the sum of these over the rows (float64, added chunk by chunk in row order). The
    softmax subtracts the row's maximum before ``exp``.

    Parameters
    ----------
    a : ndarray of shape (n_samples, n_clusters), dtype=floating
        Unary terms ``a_pl = k(x_p, m_l)``.
    indptr, indices : ndarray of int32
        The graph ``W`` in CSR form (row ``p`` lists its neighbours ``q``).
    weights : ndarray of shape (n_edges,), dtype=floating
        ``w_pq`` of each entry (1 for the binary kNN graph).
    z : ndarray of shape (n_samples, n_clusters), dtype=floating
        The current assignments (read only: the update is a Jacobi step).
    lam : float
        ``lambda >= 0``.
    z_new : ndarray of shape (n_samples, n_clusters), dtype=floating
        Written; must not be ``z``.
    n_threads : int

    Returns
    -------
    bound : float
        ``sum_p min_{z_p} sum_l z_pl (log z_pl - a_pl - lam b_pl)``.
    """
    cdef Py_ssize_t n_samples = a.shape[0], n_clusters = a.shape[1]
    cdef Py_ssize_t n_chunks = _n_chunks(n_samples, CHUNK_SIZE)
    cdef Py_ssize_t c, p, l, e
    cdef double[::1] chunk_sums = np.zeros(max(n_chunks, 1))
    cdef double part, top, total, value, bound = 0
    cdef floating w
    with nogil:
        for c in prange(n_chunks, schedule="static", num_threads=max(1, n_threads)):
            part = 0
            for p in range(c * CHUNK_SIZE, _chunk_stop(c, CHUNK_SIZE, n_samples)):
                # s_l = a_pl + lam sum_q w_pq z_ql, kept in z_new's row
                for l in range(n_clusters):
                    z_new[p, l] = 0
                for e in range(indptr[p], indptr[p + 1]):
                    w = weights[e]
                    for l in range(n_clusters):
                        z_new[p, l] += w * z[indices[e], l]
                top = a[p, 0] + lam * z_new[p, 0]
                for l in range(n_clusters):
                    value = a[p, l] + lam * z_new[p, l]
                    z_new[p, l] = value
                    if value > top:
                        top = value
                total = 0
                for l in range(n_clusters):
                    # single precision for float32 data: the result is float32 anyway
                    if floating is float:
                        value = expf(<float>(z_new[p, l] - top))
                    else:
                        value = exp(z_new[p, l] - top)
                    z_new[p, l] = value
                    total = total + value
                for l in range(n_clusters):
                    z_new[p, l] = z_new[p, l] / total
                if floating is float:
                    part = part - (top + logf(<float>total))
                else:
                    part = part - (top + log(total))
            chunk_sums[c] = part
        for c in range(n_chunks):
            bound += chunk_sums[c]
    return bound


def graph_sqdist_sum(const floating[:, ::1] X,     # IN  (n_samples, n_features)
                     const int[::1] indptr,        # IN  (n_samples + 1,) CSR of the graph
                     const int[::1] indices,       # IN  (n_edges,)
                     int n_threads):
    """``sum_p sum_{q in row p} ||x_p - x_q||^2`` over the graph's entries (float64).

    The sum behind the kernel bandwidth of §4.2; added chunk by chunk in row order, so the
    result does not depend on the number of threads.
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t n_chunks = _n_chunks(n_samples, CHUNK_SIZE)
    cdef Py_ssize_t c, p, e, k, q
    cdef double[::1] chunk_sums = np.zeros(max(n_chunks, 1))
    cdef double part, diff, total = 0
    with nogil:
        for c in prange(n_chunks, schedule="static", num_threads=max(1, n_threads)):
            part = 0
            for p in range(c * CHUNK_SIZE, _chunk_stop(c, CHUNK_SIZE, n_samples)):
                for e in range(indptr[p], indptr[p + 1]):
                    q = indices[e]
                    for k in range(n_features):
                        diff = <double>X[p, k] - <double>X[q, k]
                        part = part + diff * diff
            chunk_sums[c] = part
        for c in range(n_chunks):
            total += chunk_sums[c]
    return total
