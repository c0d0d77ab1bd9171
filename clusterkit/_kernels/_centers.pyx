"""Distances between the centres that the low-dimension tests of ``_yinyang.pyx`` read: half
the distance from each centre to its nearest other one, and each centre's nearest others."""
from cython cimport floating
from cython.parallel cimport prange
from libc.math cimport INFINITY, sqrt

from ._dist cimport _sqdist_wide


def center_half_min(const floating[:, ::1] centers,  # IN  (n_clusters, n_features)
                    double[::1] half_min,             # OUT (n_clusters,)
                    int n_threads):
    """Half the distance from each centre to its nearest other one, without the pair table.

    Parameters
    ----------
    centers : ndarray of shape (n_clusters, n_features), dtype=floating
    half_min : ndarray of shape (n_clusters,), dtype=float64
        Output: ``min_{j != i} d(c_i, c_j) / 2`` (``inf`` for a single centre), the distances
        computed directly as the samples' are.
    n_threads : int

    Returns
    -------
    n_distance_evals : int
        ``n_clusters (n_clusters - 1)``: each pair is computed from both ends, so that every
        centre's row is one thread's and no ``C x C`` table is kept.

    Notes
    -----
    Results do not depend on ``n_threads``. Assumes valid input.
    """
    cdef Py_ssize_t n_clusters = centers.shape[0], n_features = centers.shape[1], i, j
    cdef double d, best
    with nogil:
        for i in prange(n_clusters, schedule="static", num_threads=max(1, n_threads)):
            best = INFINITY
            for j in range(n_clusters):
                if j != i:
                    d = _sqdist_wide(&centers[i, 0], &centers[j, 0], n_features)
                    if d < best:
                        best = d
            half_min[i] = 0.5 * sqrt(best)
    return n_clusters * (n_clusters - 1)


def center_neighbours(const floating[:, ::1] centers,  # IN  (n_clusters, n_features)
                      int[:, ::1] neighbours,           # OUT (n_clusters, n_nb)
                      double[:, ::1] neighbour_dist,    # OUT (n_clusters, n_nb)
                      int n_threads):
    """Each centre's ``n_nb`` nearest other centres, nearest first (ties to the lower index).

    Parameters
    ----------
    centers : ndarray of shape (n_clusters, n_features), dtype=floating
    neighbours : ndarray of shape (n_clusters, n_nb), dtype=int32
        Output: ``n_nb <= n_clusters - 1``.
    neighbour_dist : ndarray of shape (n_clusters, n_nb), dtype=float64
        Output: their distances, computed directly as the samples' are.
    n_threads : int

    Returns
    -------
    n_distance_evals : int
        ``n_clusters (n_clusters - 1)`` (each pair from both ends: one thread per centre).

    Notes
    -----
    The list is kept sorted by insertion while the row is scanned (``O(C n_nb)`` at worst per
    centre, about ``O(C)`` in practice). Results do not depend on ``n_threads``. Assumes valid
    input.
    """
    cdef Py_ssize_t n_clusters = centers.shape[0], n_features = centers.shape[1]
    cdef Py_ssize_t n_nb = neighbours.shape[1], i, j, k, size
    cdef double d
    if n_nb == 0:
        return n_clusters * (n_clusters - 1)
    with nogil:
        for i in prange(n_clusters, schedule="static", num_threads=max(1, n_threads)):
            size = 0
            for j in range(n_clusters):
                if j == i:
                    continue
                d = sqrt(<double> _sqdist_wide(&centers[i, 0], &centers[j, 0], n_features))
                if size == n_nb and d >= neighbour_dist[i, n_nb - 1]:
                    continue
                # insert after every entry <= d (so equal distances keep index order)
                k = size if size < n_nb else n_nb - 1
                while k > 0 and neighbour_dist[i, k - 1] > d:
                    neighbour_dist[i, k] = neighbour_dist[i, k - 1]
                    neighbours[i, k] = neighbours[i, k - 1]
                    k = k - 1
                neighbour_dist[i, k] = d
                neighbours[i, k] = <int> j
                if size < n_nb:
                    size = size + 1
    return n_clusters * (n_clusters - 1)
