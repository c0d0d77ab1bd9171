"""Single-point moves of the k-means objective (Hartigan's rule): one pass over the rows that
moves each row to the cluster that lowers the weighted error most, updating the two centres at
once; and the exact partition sums and errors around it."""
from cython cimport floating
from cython.parallel cimport prange
from libc.float cimport DBL_EPSILON, FLT_EPSILON
from libc.math cimport INFINITY, sqrt

from ._dist cimport _near_tie_window, _sqnorm


# A move must lower the objective by more than this fraction of the row's removal gain: the
# gains are computed in float64 from centres updated in place, so a move whose gain is at the
# level of their rounding could be undone by the next pass and the passes would not end.
cdef double MOVE_TOL = 1e-10


cdef inline double _sqdist_mixed(const floating* x, const double* c,
                                 Py_ssize_t n_features) noexcept nogil:
    """Squared distance of a row (of the data's dtype) to a float64 centre, in float64, in
    four partial sums (independent additions keep the pipeline full)."""
    cdef double s0 = 0, s1 = 0, s2 = 0, s3 = 0, t0, t1, t2, t3
    cdef Py_ssize_t k = 0
    while k + 4 <= n_features:
        t0 = <double> x[k] - c[k]
        t1 = <double> x[k + 1] - c[k + 1]
        t2 = <double> x[k + 2] - c[k + 2]
        t3 = <double> x[k + 3] - c[k + 3]
        s0 += t0 * t0
        s1 += t1 * t1
        s2 += t2 * t2
        s3 += t3 * t3
        k += 4
    while k < n_features:
        t0 = <double> x[k] - c[k]
        s0 += t0 * t0
        k += 1
    return (s0 + s1) + (s2 + s3)


cdef inline double _center_gap(const double* a, const double* b,
                               Py_ssize_t n_features) noexcept nogil:
    """Euclidean distance of two float64 centres."""
    cdef double s = 0, t
    cdef Py_ssize_t k
    for k in range(n_features):
        t = a[k] - b[k]
        s += t * t
    return sqrt(s)


cdef inline double _smallest(const double* values, Py_ssize_t n) noexcept nogil:
    cdef double m = INFINITY
    cdef Py_ssize_t j
    for j in range(n):
        if values[j] < m:
            m = values[j]
    return m


def partition_sums(const floating[:, ::1] X,           # IN
                   const floating[::1] sample_weight,   # IN
                   const int[::1] labels,               # IN
                   double[:, ::1] centers_sum,          # OUT
                   double[::1] weight_in_clusters,      # OUT
                   int[::1] n_members):                 # OUT
    """Weighted sums, weights and positive-weight members of every cluster of a partition.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), dtype=floating
    sample_weight : ndarray of shape (n_samples,), dtype=floating
    labels : ndarray of shape (n_samples,), dtype=int32
        Every row's cluster, in ``[0, n_clusters)``.
    centers_sum : ndarray of shape (n_clusters, n_features), dtype=float64
        Output: ``sum_{n in c} w_n x_n``.
    weight_in_clusters : ndarray of shape (n_clusters,), dtype=float64
        Output: ``sum_{n in c} w_n``.
    n_members : ndarray of shape (n_clusters,), dtype=int32
        Output: the rows of positive weight in each cluster.

    Notes
    -----
    Summed in float64 in row order, on one thread (``O(n_samples n_features)``, a small part
    of a pass of moves): the same bits on every machine. No distances. Assumes valid input.
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1], i, k
    cdef int j
    cdef double w
    centers_sum[:, :] = 0
    weight_in_clusters[:] = 0
    n_members[:] = 0
    with nogil:
        for i in range(n_samples):
            w = sample_weight[i]
            if w == 0:
                continue
            j = labels[i]
            weight_in_clusters[j] += w
            n_members[j] += 1
            for k in range(n_features):
                centers_sum[j, k] += w * X[i, k]


def labelled_dist2(const floating[:, ::1] X,       # IN
                   const int[::1] labels,           # IN
                   const double[:, ::1] centers,    # IN
                   double[::1] dist2,               # OUT
                   int n_threads):
    """Squared distance, in float64, of every row to the float64 centre its label names.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), dtype=floating
    labels : ndarray of shape (n_samples,), dtype=int32
    centers : ndarray of shape (n_clusters, n_features), dtype=float64
    dist2 : ndarray of shape (n_samples,), dtype=float64
        Output.
    n_threads : int

    Returns
    -------
    n_distance_evals : int
        ``n_samples``.

    Notes
    -----
    Each row is one thread's: the output does not depend on ``n_threads``; the caller sums
    it with the weights. Assumes valid input.
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1], i
    with nogil:
        for i in prange(n_samples, schedule="static", num_threads=max(1, n_threads)):
            dist2[i] = _sqdist_mixed(&X[i, 0], &centers[labels[i], 0], n_features)
    return n_samples


def far_bounds(const floating[:, ::1] X,          # IN
               const floating[::1] last_dist2,     # IN
               double max_sqnorm,
               double[::1] far,                    # OUT
               int n_threads):
    """A lower bound on every row's distance to the centres outside its ranked candidates.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), dtype=floating
    last_dist2 : ndarray of shape (n_samples,), dtype=floating
        The squared distance of each row's last (farthest) candidate as the ranking
        (:func:`~._topk.assign_topk`) computed it: every other centre was no nearer.
    max_sqnorm : float
        The largest squared norm of the ranked centres.
    far : ndarray of shape (n_samples,), dtype=float64
        Output: ``sqrt(max(0, last_dist2 - window))``, a distance no centre outside the
        candidates is nearer than.

    Notes
    -----
    The ranking rounds its distances (gemm, ``||x||^2 - 2 x.c + ||c||^2``); ``window`` is the
    generous bound of that rounding the exact E-steps use to settle near-ties,
    ``4 (D + 2) eps (2 ||x||^2 + 2 max_j ||c_j||^2)``, so that ``far`` is a bound on the
    exact distances, not on the rounded ones. No distances. Assumes valid input.
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1], i
    cdef double eps = FLT_EPSILON if floating is float else DBL_EPSILON, d, xn
    with nogil:
        for i in prange(n_samples, schedule="static", num_threads=max(1, n_threads)):
            xn = _sqnorm(&X[i, 0], n_features)
            d = last_dist2[i] - _near_tie_window(n_features, xn, max_sqnorm, eps)
            far[i] = sqrt(d) if d > 0 else 0.0


def moves_pass(const floating[:, ::1] X,              # IN
               const floating[::1] sample_weight,      # IN
               int[::1] labels,                        # INOUT
               double[:, ::1] centers,                 # INOUT
               double[::1] weight_in_clusters,         # INOUT
               int[::1] n_members,                     # INOUT
               const int[:, ::1] candidates,           # IN
               const double[::1] far,                  # IN
               const double[:, ::1] ranked_centers,    # IN
               double[::1] drift,                      # INOUT
               double max_drift):
    """One pass of single-point moves (Hartigan's rule) over the rows, in row order.

    Row ``x`` (weight ``w > 0``) of cluster ``a`` moves to the cluster ``b`` that minimises
    ``add(b) = w W_b / (W_b + w) ||x - c_b||^2`` if ``add(b) < rem = w W_a / (W_a - w)
    ||x - c_a||^2`` (by more than a ``1e-10`` fraction of ``rem``): the k-means objective then
    drops by exactly ``rem - add(b)``, and the two centres and weights are updated at once,
    ``c_a += w / (W_a - w) (c_a - x)``, ``c_b += w / (W_b + w) (x - c_b)``. A row that is
    the last of positive weight in its cluster stays.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), dtype=floating
    sample_weight : ndarray of shape (n_samples,), dtype=floating
        Rows of weight zero are skipped: they change neither the objective nor a centre.
    labels : ndarray of shape (n_samples,), dtype=int32
        Input and output: the partition.
    centers : ndarray of shape (n_clusters, n_features), dtype=float64
        Input and output: the weighted means of the partition's clusters (a cluster without
        weight keeps its centre, which a move into it replaces by the row).
    weight_in_clusters : ndarray of shape (n_clusters,), dtype=float64
        Input and output: ``W``.
    n_members : ndarray of shape (n_clusters,), dtype=int32
        Input and output: the rows of positive weight of each cluster.
    candidates : ndarray of shape (n_samples, n_candidates), dtype=int32
        Each row's ``n_candidates`` nearest centres at the last ranking (``ranked_centers``).
    far : ndarray of shape (n_samples,), dtype=float64
        A lower bound on each row's distance to every ranked centre that is not among its
        candidates (:func:`far_bounds`); unused when ``n_candidates == n_clusters``.
    ranked_centers : ndarray of shape (n_clusters, n_features), dtype=float64
        The centres the candidates were ranked against.
    drift : ndarray of shape (n_clusters,), dtype=float64
        Input and output: ``||centers - ranked_centers||`` per cluster.
    max_drift : float
        At least the largest ``drift`` (a running maximum since the ranking).

    Returns
    -------
    n_moved : int
        Rows moved.
    n_full : int
        Rows whose bound did not rule out the centres outside their candidates together,
        and whose other centres were therefore bounded one by one.
    n_distance_evals : int
        Row-to-centre distances (the own centre, the candidates, and for the ``n_full``
        rows the other centres their own bounds did not rule out) plus the two
        centre-to-ranked-centre distances of each move.
    delta : float
        The change of the objective, the sum of the moves' ``add(b) - rem``.
    max_drift : float
        The running maximum of ``drift`` after the pass.

    Notes
    -----
    The best target is found exactly, among all clusters, without comparing every row with
    every centre: for a cluster ``b`` outside the candidates, ``||x - c_b|| >= far -
    max_drift`` (the triangle inequality through ``c_b``'s ranked position) and ``W_b / (W_b +
    w) >= W_min / (W_min + w)`` (increasing in ``W_b``; ``W_min`` the smallest current
    weight), so ``add(b)`` is at least ``w W_min / (W_min + w) max(0, far - max_drift)^2``. A
    row whose bound is below both its best candidate's ``add`` and ``rem`` bounds every other
    centre by its own drift and weight, ``add(b) >= w W_b / (W_b + w) max(0, far -
    drift_b)^2``, and computes the distances of those whose bound is below the best
    ``add`` found so far (or ``rem``). Ties go to the lower cluster index. Sequential by nature (every move changes
    what the next row sees), on one thread. Assumes valid input: ``labels`` in range,
    ``centers``, ``weight_in_clusters`` and ``n_members`` those of the partition.
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t n_clusters = centers.shape[0], n_cand = candidates.shape[1]
    cdef Py_ssize_t i, t, k
    cdef int a, b, best, j
    cdef bint listed
    cdef double w, wa, wb, rem, add, best_add, lower, r, w_min, step_a, step_b, xk
    cdef long long n_evals = 0, n_moved = 0, n_full = 0
    cdef double delta = 0
    cdef const floating* x
    with nogil:
        w_min = _smallest(&weight_in_clusters[0], n_clusters)
        for i in range(n_samples):
            w = sample_weight[i]
            if w <= 0:
                continue
            a = labels[i]
            if n_members[a] <= 1:  # (moving it would empty its cluster)
                continue
            x = &X[i, 0]
            wa = weight_in_clusters[a]
            rem = w * wa / (wa - w) * _sqdist_mixed(x, &centers[a, 0], n_features)
            n_evals += 1
            if rem <= 0:  # (the row sits on its centre: no move can gain)
                continue
            best, best_add = -1, INFINITY
            for t in range(n_cand):
                b = candidates[i, t]
                if b == a:
                    continue
                wb = weight_in_clusters[b]
                add = w * wb / (wb + w) * _sqdist_mixed(x, &centers[b, 0], n_features)
                n_evals += 1
                if add < best_add or (add == best_add and b < best):
                    best, best_add = b, add
            if n_cand < n_clusters:
                r = far[i] - max_drift
                lower = w * w_min / (w_min + w) * (r * r if r > 0 else 0.0)
                if lower < best_add and lower < rem:
                    # the bound does not rule out the other centres together: bound each
                    # by its own drift (no distance), and compute the distances of those
                    # it does not rule out
                    n_full += 1
                    for j in range(n_clusters):
                        if j == a:
                            continue
                        listed = False
                        for t in range(n_cand):
                            if candidates[i, t] == j:
                                listed = True
                                break
                        if listed:
                            continue
                        wb = weight_in_clusters[j]
                        r = far[i] - drift[j]
                        if r > 0 and w * wb / (wb + w) * r * r >= (
                                best_add if best_add < rem else rem):
                            continue
                        add = w * wb / (wb + w) * _sqdist_mixed(x, &centers[j, 0],
                                                                  n_features)
                        n_evals += 1
                        if add < best_add or (add == best_add and j < best):
                            best, best_add = j, add
            if best < 0 or not best_add < rem * (1.0 - MOVE_TOL):
                continue
            # the move: both centres and weights at once, the exact change of the objective
            b = best
            wb = weight_in_clusters[b]
            step_a = w / (wa - w)
            step_b = w / (wb + w)
            for k in range(n_features):
                xk = x[k]
                centers[a, k] += step_a * (centers[a, k] - xk)
                centers[b, k] += step_b * (xk - centers[b, k])
            weight_in_clusters[a] = wa - w
            weight_in_clusters[b] = wb + w
            n_members[a] -= 1
            n_members[b] += 1
            labels[i] = b
            delta += best_add - rem
            n_moved += 1
            drift[a] = _center_gap(&centers[a, 0], &ranked_centers[a, 0], n_features)
            drift[b] = _center_gap(&centers[b, 0], &ranked_centers[b, 0], n_features)
            n_evals += 2
            if drift[a] > max_drift:
                max_drift = drift[a]
            if drift[b] > max_drift:
                max_drift = drift[b]
            w_min = _smallest(&weight_in_clusters[0], n_clusters)
    return n_moved, n_full, n_evals, delta, max_drift
