"""Yinyang k-means' grouped bounds (Ding et al. 2015), with bounds that survive mini-batches.

The centres are split into ``n_groups`` groups. Per sample the kernel keeps one lower bound per
group: on the distance to every centre of the group except the sample's own. The bound of group
``g`` is stored as ``l + S_g``, where ``S_g`` (``group_shift_sum``) is the sum, over the steps
so far, of the largest move of a centre of ``g`` in that step: the bound valid now is the stored
value minus today's ``S_g`` (Yinyang's update ``l - max_{c in g} delta(c)``, applied to every
sample at once), and a sample outside the last batches keeps valid bounds. Memory per sample:
``n_groups`` float32 bounds, whatever the number of centres.
"""
import numpy as np

from cython cimport floating
from cython.parallel cimport parallel, prange
from libc.float cimport DBL_EPSILON
from libc.math cimport INFINITY, sqrt

from ._accumulate cimport _add_sample, _block_rows, _n_blocks, _reduce_blocks
from ._chunks cimport _chunk_len, _TilePlan
from ._pruning cimport _counts, _pruned_away, _Pruning, _set_pruning
from ._dist cimport (CHUNK_SIZE, _chunk_tile, _first_visit, _prepare_tiles, _sqdist_wide,
                     _sqnorm, _store_lower, _tile_row, _use_gemm)


cdef inline void _keep_two(double v, double* m1, double* m2) noexcept nogil:
    """Keep ``m1 <= m2`` the two smallest values seen, with ``v``."""
    if v < m1[0]:
        m2[0] = m1[0]
        m1[0] = v
    elif v < m2[0]:
        m2[0] = v


cdef Py_ssize_t _yinyang_sample(const floating* x,             # IN  (n_features,)
                                Py_ssize_t n_features,
                                const floating* centers,       # IN  (n_clusters, n_features)
                                const int* members,            # IN  (n_clusters,)
                                const Py_ssize_t* group_starts,  # IN (n_groups + 1,)
                                Py_ssize_t n_groups,
                                const int* group_of,           # IN  (n_clusters,)
                                const double* shift,           # IN  (n_clusters,)
                                const double* group_shift_sum,   # IN (n_groups,)
                                const double* group_shift_prev,  # IN (n_groups,)
                                const int* last_moved,         # IN  (n_clusters,)
                                const double* half_min,        # IN  (n_clusters,) or NULL
                                const int* neighbours,         # IN  (n_clusters, n_nb) or NULL
                                const double* neighbour_dist,  # IN  (n_clusters, n_nb)
                                Py_ssize_t n_nb,
                                int step,
                                float* lower,                  # INOUT (n_groups,)
                                int previous,
                                double slack,
                                floating* dist2,               # INOUT
                                int* visit,                    # INOUT
                                int* label,                    # OUT
                                const _Pruning* prune,         # IN  projections, or none
                                Py_ssize_t r,                  # the sample's row of them
                                Py_ssize_t* n_tests) noexcept nogil:  # OUT
    """Nearest centre of one sample (ties to the lower index); returns the distances computed.

    The exact distance ``u`` to the previous label ``a`` is the last visit's ``dist2`` if
    centre ``a`` has not moved since (``last_moved[a] <= visit``), else it is computed.
    Separation test (when ``half_min`` is given, Hamerly's): if ``u`` is below half the
    distance from centre ``a`` to its nearest other centre, the label stays. Global filter: if
    every group's bound exceeds ``u``, the label stays. Neighbour search (one group and
    ``neighbours`` given, each centre's other centres by increasing distance): the centres
    are looked at in the order of ``a``'s list until one is so far from ``a`` (``d(a, c) - u``
    above the second smallest distance so far) that no later one can be among the two
    nearest; the bound is then the exact second distance (the search runs only over the few
    centres around ``a`` at low dimension). If ``a``'s list runs out first, the search goes
    on as Yinyang's. Group filter: a group is searched only if its bound is at most the best
    distance found so far. Local filter
    (only for a sample visited in the previous E-step, whose group bounds of then are
    ``lower - group_shift_prev``): centre ``c`` of a searched group is skipped if that old
    bound minus ``c``'s move exceeds the best distance so far. All tests are strict, so a tie is
    always looked at. A first visit (``previous < 0``) computes every distance and sets every
    bound. A group's two smallest values are kept squared (a skipped centre's bound ``v > 0``
    as ``v * v``), so that a square root is taken per new best and per group only, not per
    distance: what makes the search cheap at low dimension. With pruning (``prune.X_proj``
    set), a centre the filters do not rule out is first tested on the projections (as in
    ``_elkan._elkan_sample``, counted in ``n_tests``): a bound beyond the best distance so far
    (and the rounding of two direct distances) skips it and stands for its distance in the
    group's bound.
    """
    cdef double keep = 1.0 - slack
    cdef bint first = previous < 0, local, scanned_a = False
    cdef Py_ssize_t g, p, c, n_evals = 0, a = previous, best_c = -1, best_group = -1
    cdef floating d2, d2_a = 0, best = <floating> INFINITY
    cdef double u = INFINITY, best_u, v, lb, old_lb = 0, m1, m2, best_m2 = INFINITY
    n_tests[0] = 0
    if not first:
        if last_moved[a] > visit[0]:
            d2_a = _sqdist_wide(x, centers + a * n_features, n_features)
            n_evals = 1
        else:
            d2_a = dist2[0]
        u = sqrt(<double> d2_a)
        if half_min != NULL and half_min[a] * keep > u:  # no other centre can be as near
            label[0] = <int> a
            dist2[0] = d2_a
            visit[0] = step
            return n_evals
        lb = INFINITY
        for g in range(n_groups):
            v = lower[g] - group_shift_sum[g]
            if v < lb:
                lb = v
        if lb > u:  # global filter: no other centre can be as near
            label[0] = <int> a
            dist2[0] = d2_a
            visit[0] = step
            return n_evals
        best, best_c = d2_a, a
        if neighbours != NULL and _neighbour_search(x, n_features, centers, a, d2_a, u,
                                                    neighbours + a * n_nb,
                                                    neighbour_dist + a * n_nb, n_nb,
                                                    n_nb == group_starts[1] - 1, keep,
                                                    &best, &best_c, &m2, &n_evals):
            lower[0] = _store_lower(sqrt(m2) + group_shift_sum[0], keep)
            label[0] = <int> best_c
            dist2[0] = best
            visit[0] = step
            return n_evals
        best, best_c = d2_a, a
    best_u = u
    local = not first and visit[0] == step - 1
    for g in range(n_groups):
        if not first:
            if lower[g] - group_shift_sum[g] > best_u:  # group filter
                continue
            old_lb = lower[g] - group_shift_prev[g]
            if g == group_of[a]:
                scanned_a = True
        # m1 <= m2: the two smallest squared distances (or squared bounds of skipped
        # centres) in the group; the group's new bound excludes the final label
        m1 = m2 = INFINITY
        for p in range(group_starts[g], group_starts[g + 1]):
            c = members[p]
            if c == a:
                d2 = d2_a
            else:
                if local:
                    v = old_lb - shift[c]
                    if v > best_u:  # local filter: d(x, c) >= old bound - move of c
                        _keep_two(v * v, &m1, &m2)
                        continue
                # (v a squared bound, as m1 and m2 hold)
                if prune.X_proj != NULL and _pruned_away(prune, r, c, best, &v, n_tests):
                    _keep_two(v, &m1, &m2)
                    continue
                d2 = _sqdist_wide(x, centers + c * n_features, n_features)
                n_evals += 1
            v = <double> d2
            _keep_two(v, &m1, &m2)
            if d2 < best or (d2 == best and c < best_c):
                best = d2
                best_c = c
                best_u = sqrt(v)
        lower[g] = _store_lower(sqrt(m1) + group_shift_sum[g], keep)
        if group_of[best_c] == g:
            # the best so far is this group's nearest centre: its bound is the second nearest
            best_group = g
            best_m2 = m2
    if best_group >= 0 and group_of[best_c] == best_group:
        lower[best_group] = _store_lower(sqrt(best_m2) + group_shift_sum[best_group], keep)
    if not first and best_c != a and not scanned_a:
        # the old label joins its group's other centres: their bound must not exceed u
        g = group_of[a]
        v = _store_lower(u + group_shift_sum[g], keep)
        if v < lower[g]:
            lower[g] = <float> v
    label[0] = <int> best_c
    dist2[0] = best
    visit[0] = step
    return n_evals



cdef bint _neighbour_search(const floating* x,            # IN  (n_features,)
                            Py_ssize_t n_features,
                            const floating* centers,      # IN  (n_clusters, n_features)
                            Py_ssize_t a,
                            floating d2_a,
                            double u,
                            const int* neighbours,        # IN  (n_nb,) a's, nearest first
                            const double* neighbour_dist,  # IN (n_nb,) d(a, c)
                            Py_ssize_t n_nb,
                            bint complete,
                            double keep,
                            floating* best,               # OUT
                            Py_ssize_t* best_c,           # OUT
                            double* second,               # OUT squared
                            Py_ssize_t* n_evals) noexcept nogil:  # INOUT
    """The two nearest centres of a sample by ``a``'s neighbour list (see
    ``_yinyang_sample``); ``False`` if the list ran out before the stop and is not
    ``complete`` (all the other centres): then the outputs are not to be used. Every centre
    not looked at is farther than ``second`` (strictly, with the bounds' margin), so ties are
    always looked at."""
    cdef Py_ssize_t k, c
    cdef floating d2
    cdef double m2 = INFINITY, stop = INFINITY, v
    best[0] = d2_a
    best_c[0] = a
    for k in range(n_nb):
        if (neighbour_dist[k] - u) * keep > stop:
            second[0] = m2
            return True
        c = neighbours[k]
        d2 = _sqdist_wide(x, centers + c * n_features, n_features)
        n_evals[0] += 1
        v = <double> d2
        if d2 < best[0] or (d2 == best[0] and c < best_c[0]):
            m2 = <double> best[0]
            best[0] = d2
            best_c[0] = c
        elif v < m2:
            m2 = v
        else:
            continue
        stop = sqrt(m2)
    second[0] = m2
    return complete

#: ``(1 - 8 eps)``: a square ``v * v`` times this that exceeds ``d2`` proves ``v`` above the
#: rounded ``sqrt(d2)`` (the products' and the square root's rounding are within it).
cdef double _SQUARE_MARGIN = 1.0 - 8.0 * DBL_EPSILON


cdef inline bint _stays(Py_ssize_t a,
                        int visit,
                        double d2_a,
                        const int* last_moved,   # IN  (n_clusters,)
                        const double* stay2,     # IN  (n_clusters,)
                        const float* lower,      # IN  (1,) the sample's bound, or NULL
                        double shift_sum) noexcept nogil:
    """Whether a sample keeps its label by the first tests of ``_yinyang_sample`` without a
    call to it: its centre ``a`` has not moved since its last visit (so ``d2_a``, the stored
    distance, is exact), and Hamerly's separation test or the one-group global filter holds,
    compared in squares (``stay2[a]`` is the squared separation threshold, within
    :data:`_SQUARE_MARGIN`), so with no square root. It implies that test's outcome, so the
    results are the same; most samples of a settled fit leave here."""
    cdef double v
    if a < 0 or last_moved[a] > visit:
        return False
    if d2_a < stay2[a]:
        return True
    if lower == NULL:
        return False
    v = lower[0] - shift_sum
    return v > 0 and v * v * _SQUARE_MARGIN > d2_a


def yinyang_assign(const floating[:, ::1] X,           # IN  (n_batch, n_features)
                   const floating[::1] sample_weight,   # IN  (n_batch,)
                   const Py_ssize_t[::1] rows,          # IN  (n_batch,) rows of `lower`
                   const floating[:, ::1] centers,      # IN  (n_clusters, n_features)
                   const int[::1] members,              # IN  (n_clusters,)
                   const Py_ssize_t[::1] group_starts,  # IN  (n_groups + 1,)
                   const int[::1] group_of,             # IN  (n_clusters,)
                   const double[::1] shift,             # IN  (n_clusters,)
                   const double[::1] group_shift_sum,   # IN  (n_groups,)
                   const double[::1] group_shift_prev,  # IN  (n_groups,)
                   const int[::1] last_moved,           # IN  (n_clusters,)
                   int step,
                   float[:, ::1] lower,                 # INOUT (n_samples, n_groups)
                   const int[::1] previous,             # IN  (n_batch,)
                   floating[::1] last_dist2,            # INOUT (n_samples,)
                   int[::1] visit,                      # INOUT (n_samples,)
                   int[::1] labels,                     # OUT (n_batch,)
                   floating[::1] min_dist2,             # OUT (n_batch,)
                   floating[:, ::1] centers_sum,        # OUT (n_clusters, n_features) or None
                   floating[::1] weight_in_clusters,    # OUT (n_clusters,) or None
                   double slack,
                   int n_threads,
                   const double[::1] half_min=None,   # IN  (n_clusters,) or None
                   const int[:, ::1] neighbours=None,       # IN  (n_clusters, n_nb) or None
                   const double[:, ::1] neighbour_dist=None,  # IN  (n_clusters, n_nb)
                   const floating[:, ::1] X_proj=None,  # IN  (n_samples, n_proj) or None
                   const floating[::1] x_rest=None,     # IN  (n_samples,)
                   const floating[:, ::1] centers_proj=None,  # IN (n_clusters, n_proj)
                   const floating[::1] centers_rest=None,     # IN (n_clusters,)
                   const double[::1] prune_tol=None):   # IN  (5,)
    """Assign a batch to the nearest centres with Yinyang's grouped bounds.

    Parameters
    ----------
    X : ndarray of shape (n_batch, n_features), dtype=floating
    sample_weight : ndarray of shape (n_batch,), dtype=floating
    rows : ndarray of shape (n_batch,), dtype=intp
        Row of ``lower`` (and of ``last_dist2``, ``visit``) that holds each sample's state.
    centers : ndarray of shape (n_clusters, n_features), dtype=floating
    members : ndarray of shape (n_clusters,), dtype=int32
        The centres ordered by group, ascending inside a group.
    group_starts : ndarray of shape (n_groups + 1,), dtype=intp
        Group ``g`` is ``members[group_starts[g]:group_starts[g + 1]]`` (never empty).
    group_of : ndarray of shape (n_clusters,), dtype=int32
        The group of each centre.
    shift : ndarray of shape (n_clusters,), dtype=float64
        How far each centre moved since the last call (the local filter's ``delta(c)``).
    group_shift_sum, group_shift_prev : ndarrays of shape (n_groups,), dtype=float64
        Per group, the sum over the calls so far of its largest move (``S_g``), now and as it
        was at the last call.
    last_moved : ndarray of shape (n_clusters,), dtype=int32
        The call (``step``) at which each centre last moved.
    step : int
        The number of this call, from 1; stored as each sample's visit.
    lower : ndarray of shape (n_samples, n_groups), dtype=float32
        Stored group bounds ``l(x, g) + S_g``, ``l(x, g)`` a lower bound on the distance to
        every centre of group ``g`` except the sample's label; updated. Rows of first visits
        need no initial value.
    last_dist2, visit : ndarrays of shape (n_samples,), dtype=floating and int32
        Per row of ``lower``: the squared distance to its label and the call at its last
        visit; updated. While the centre stays put the distance is reused.
    previous, labels, min_dist2, centers_sum, weight_in_clusters, n_threads
        As for :func:`~clusterkit._kernels._elkan.elkan_assign` (labels: ties to the lowest
        index).
    slack : float
        Relative margin by which a bound must beat a distance (covers rounding).
    half_min : ndarray of shape (n_clusters,), dtype=float64, or None
        Half the distance from each centre to its nearest other one
        (``_elkan.center_half_distances``): a sample nearer than that to its own centre
        keeps it without a look at its bounds (Hamerly's test; strong at low dimension).
        ``None``: no such test.
    neighbours, neighbour_dist : ndarrays of shape (n_clusters, n_nb), dtype=int32 and \
float64, or None
        With one group only: each centre's ``n_nb`` nearest other centres, nearest first, and
        their distances to it (``_centers.center_neighbours``); a sample whose filters fail then
        searches its centre's list (see ``_yinyang_sample``). ``None``: Yinyang's search.
    X_proj, x_rest, centers_proj, centers_rest, prune_tol : ndarrays, or None
        Exact dimension pruning, as for :func:`~clusterkit._kernels._elkan.elkan_assign`
        (rows of ``X_proj`` and ``x_rest`` indexed by ``rows``).

    Returns
    -------
    n_distance_evals : int
        One per sample whose centre moved since its last visit (the distance to it), plus
        those the filters did not rule out (all ``n_clusters`` at a first visit).
    n_tests : int
        Only with pruning: the tests on the projections (``n_proj`` multiply-adds each).

    Notes
    -----
    Each sample is handled by one thread and touches only its own rows of the state; with
    sums, rows go in fixed blocks (the layout depends on ``n_batch`` only) whose partial sums
    are added in block order. So the result does not depend on ``n_threads``. Assumes valid
    input.
    """
    cdef Py_ssize_t n_batch = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t n_clusters = centers.shape[0], n_groups = lower.shape[1], i, b
    cdef Py_ssize_t n_blocks = _n_blocks(n_batch)
    cdef Py_ssize_t n_evals = 0, n_tests = 0, t
    cdef _Pruning prune
    cdef const double* separation = NULL
    cdef const int* nb = NULL
    cdef const double* nb_dist = NULL
    cdef Py_ssize_t n_nb = 0, r, a
    cdef double keep = 1.0 - slack, hk, shift_sum0 = group_shift_sum[0]
    cdef bint one_group = n_groups == 1
    # per centre, the square of the separation test's threshold (see _stays)
    cdef double[::1] stay2 = np.full(n_clusters, -INFINITY)
    if half_min is not None:
        separation = &half_min[0]
        for a in range(n_clusters):
            hk = half_min[a] * keep
            stay2[a] = hk * hk * _SQUARE_MARGIN
    if neighbours is not None and neighbours.shape[1] > 0:
        if n_groups != 1:
            raise ValueError("neighbours need a single group.")
        nb, nb_dist, n_nb = &neighbours[0, 0], &neighbour_dist[0, 0], neighbours.shape[1]
    n_threads = max(1, n_threads)
    cdef bint pruned = _set_pruning(&prune, lower.shape[0], n_clusters, X_proj, x_rest,
                                    centers_proj, centers_rest, prune_tol)
    if n_batch == 0:
        return _counts(0, 0, pruned)
    # Without sums, pieces of 64 rows balance the uneven per-sample work; with sums, the
    # fixed blocks of the M-step's layout keep the result independent of n_threads.
    cdef bint with_sums = centers_sum is not None
    cdef Py_ssize_t piece_rows = _block_rows(n_batch, n_blocks) if with_sums else 64
    cdef Py_ssize_t n_pieces = (n_batch + piece_rows - 1) // piece_rows
    dtype = np.float32 if floating is float else np.float64
    cdef floating[:, :, ::1] sums = np.zeros((n_blocks if with_sums else 1, n_clusters,
                                              n_features), dtype=dtype)
    cdef floating[:, ::1] weights = np.zeros((n_blocks if with_sums else 1, n_clusters),
                                             dtype=dtype)
    with nogil:
        for b in prange(n_pieces, schedule="dynamic", num_threads=min(n_threads, n_pieces)):
            for i in range(b * piece_rows, min((b + 1) * piece_rows, n_batch)):
                r, a = rows[i], previous[i]
                if _stays(a, visit[r], <double> last_dist2[r], &last_moved[0], &stay2[0],
                          &lower[r, 0] if one_group else NULL, shift_sum0):
                    labels[i] = <int> a
                    visit[r] = step
                else:
                    t = 0
                    n_evals += _yinyang_sample(
                        &X[i, 0], n_features, &centers[0, 0], &members[0], &group_starts[0],
                        n_groups, &group_of[0], &shift[0], &group_shift_sum[0],
                        &group_shift_prev[0], &last_moved[0], separation, nb, nb_dist, n_nb,
                        step, &lower[r, 0], <int> a, slack, &last_dist2[r], &visit[r],
                        &labels[i], &prune, r, &t)
                    n_tests += t
                min_dist2[i] = last_dist2[r]
                if with_sums:
                    _add_sample(&sums[b, 0, 0], &weights[b, 0], NULL, labels[i], &X[i, 0],
                                sample_weight[i], min_dist2[i], n_features)
    if with_sums:
        with nogil:
            _reduce_blocks(sums, weights, NULL, centers_sum, weight_in_clusters,
                           NULL, min(n_threads, n_clusters))
    return _counts(n_evals, n_tests, pruned)


cdef void _init_chunk(const _TilePlan* plan,
                      const floating* X,               # IN  (n_rows, n_features)
                      Py_ssize_t n_rows,
                      const Py_ssize_t* rows,          # IN  (n_rows,)
                      const int* group_of,             # IN  (n_clusters,)
                      const int* members,              # IN  (n_clusters,)
                      const Py_ssize_t* group_starts,  # IN  (n_groups + 1,)
                      const double* group_shift_sum,   # IN  (n_groups,)
                      Py_ssize_t n_groups,
                      int step,
                      double slack,
                      float* lower,                    # INOUT (n_samples, n_groups)
                      floating* last_dist2,            # INOUT (n_samples,)
                      int* visit,                      # INOUT (n_samples,)
                      int* labels,                     # OUT (n_rows,)
                      floating* min_dist2) noexcept nogil:  # OUT (n_rows,)
    cdef double keep = 1.0 - slack
    cdef double xn, window, v
    cdef Py_ssize_t n_features = plan.n_features, n_clusters = plan.n_clusters
    cdef Py_ssize_t i, c, g, p, best
    cdef floating m
    cdef const floating* x
    cdef floating* row
    cdef floating d2
    cdef float* bound
    cdef floating* tile = _chunk_tile(plan, X, n_rows)
    # after the tile in the thread's scratch (its bytes are a multiple of 8, CHUNK_SIZE being)
    cdef double* group_min = <double*> (tile + CHUNK_SIZE * n_clusters)
    for i in range(n_rows):
        x = X + i * n_features
        row = _tile_row(plan, X, i, tile)
        xn = _sqnorm(x, n_features)
        best = _first_visit(plan, row, x, xn, &d2, &window)
        # gemm entries leave out ||x||^2, direct ones (few features) are whole distances
        if not _use_gemm(n_features):
            xn = 0.0
        # each group's smallest entry (branch-free), then the label's group again without it
        for g in range(n_groups):
            m = <floating> INFINITY
            for p in range(group_starts[g], group_starts[g + 1]):
                m = row[members[p]] if row[members[p]] < m else m
            group_min[g] = m
        g = group_of[best]
        m = <floating> INFINITY
        for p in range(group_starts[g], group_starts[g + 1]):
            c = members[p]
            if c != best and row[c] < m:
                m = row[c]
        group_min[g] = m
        bound = lower + rows[i] * n_groups
        for g in range(n_groups):
            v = group_min[g] + xn - window
            bound[g] = _store_lower((sqrt(v) if v > 0 else 0.0) + group_shift_sum[g], keep)
        labels[i] = <int> best
        min_dist2[i] = d2
        last_dist2[rows[i]] = d2
        visit[rows[i]] = step


def yinyang_init_bounds(const floating[:, ::1] X,           # IN  (n_batch, n_features)
                        const Py_ssize_t[::1] rows,          # IN  (n_batch,)
                        const floating[:, ::1] centers,      # IN  (n_clusters, n_features)
                        const int[::1] group_of,             # IN  (n_clusters,)
                        const double[::1] group_shift_sum,   # IN  (n_groups,)
                        int step,
                        float[:, ::1] lower,                 # OUT rows of (n_samples, n_groups)
                        floating[::1] last_dist2,            # OUT rows of (n_samples,)
                        int[::1] visit,                      # OUT rows of (n_samples,)
                        int[::1] labels,                     # OUT (n_batch,)
                        floating[::1] min_dist2,             # OUT (n_batch,)
                        double slack,
                        int n_threads):
    """First visits of a batch: labels and group bounds from all distances, in tiles.

    The first visit of :func:`yinyang_assign`: the distances to all centres come in
    ``CHUNK_SIZE x n_clusters`` tiles (gemm from ``GEMM_MIN_FEATURES`` features on, as in
    Lloyd's E-step ``_assign.assign_full``; below, direct distances vectorised over the
    centres), and the label is ranked with the near-ties settled by direct distances
    (``_settle_near_ties``), so it is Lloyd's. The distance to it is then computed directly
    (``min_dist2``, exact: later visits reuse it). Each group bound is the smallest tile
    value of the group's other centres, lowered by the rounding window of
    ``_settle_near_ties`` so that it stays below the exact distance.

    Parameters
    ----------
    X : ndarray of shape (n_batch, n_features), dtype=floating
        Samples at their first visit.
    rows, centers, group_of, group_shift_sum, step, lower, last_dist2, visit, labels, \
min_dist2, slack, n_threads
        As for :func:`yinyang_assign`.

    Returns
    -------
    n_distance_evals : int
        ``n_batch * (n_clusters + 1)``: the gemm distances and the direct one to the label.

    Notes
    -----
    Each thread owns one tile and one row of group minima; every output element is written
    by one thread, so the result does not depend on ``n_threads``. Assumes valid input.
    """
    cdef Py_ssize_t n_batch = X.shape[0], n_clusters = centers.shape[0]
    cdef Py_ssize_t n_groups = lower.shape[1], c
    cdef _TilePlan plan
    if n_batch == 0:
        return 0
    cdef int[::1] members = np.argsort(group_of, kind="stable").astype(np.int32)
    cdef Py_ssize_t[::1] group_starts = np.zeros(n_groups + 1, dtype=np.intp)
    np.cumsum(np.bincount(group_of, minlength=n_groups), out=np.asarray(group_starts)[1:])
    keep = _prepare_tiles(&plan, centers, n_batch, CHUNK_SIZE, n_threads,
                          CHUNK_SIZE * n_clusters * sizeof(floating) + n_groups * sizeof(double))
    with nogil, parallel(num_threads=plan.n_threads):
        for c in prange(plan.n_chunks, schedule="static"):
            _init_chunk(&plan, &X[c * CHUNK_SIZE, 0], _chunk_len(&plan, c), &rows[c * CHUNK_SIZE],
                        &group_of[0], &members[0], &group_starts[0],
                        &group_shift_sum[0], n_groups, step, slack, &lower[0, 0],
                        &last_dist2[0], &visit[0], &labels[c * CHUNK_SIZE],
                        &min_dist2[c * CHUNK_SIZE])
    return n_batch * (n_clusters + 1)
