"""Elkan's bounded exact assignment (Elkan 2003), with bounds that survive mini-batches.

The lower bound of sample ``x`` and centre ``c`` is stored as ``l + S_c``, where ``S_c`` is the
total distance centre ``c`` has moved since the start of the run (``shift_sum``): the bound
valid now is the stored value minus today's ``S_c``. The moves of the centres are so applied
to every sample's bounds at once, without a pass over the ``N x C`` table, and a sample that
was not in the last batches keeps valid bounds (shifted by every move since its last visit).
"""
import numpy as np

from cython cimport floating
from cython.parallel cimport parallel, prange
from libc.math cimport INFINITY, sqrt

from ._accumulate cimport _add_sample, _block_rows, _n_blocks, _reduce_blocks
from ._chunks cimport _chunk_len, _TilePlan
from ._dist cimport (CHUNK_SIZE, _chunk_tile, _first_visit, _prepare_tiles, _sqdist_wide,
                     _sqnorm, _store_lower, _tile_row, _use_gemm)
from ._pruning cimport _counts, _pruned_away, _Pruning, _set_pruning
from ._sparse cimport _sparse_dist2


cdef inline floating _dist2_to(const floating* x, const int* x_indices, Py_ssize_t x_nnz,
                               double x_sqnorm, const floating* centers,
                               const double* centers_sqnorm, Py_ssize_t c,
                               Py_ssize_t n_features) noexcept nogil:
    """Squared distance of sample ``x`` to centre ``c``: directly for a dense row
    (``x_indices`` NULL), from the squared norms for a CSR row (``x`` its values)."""
    if x_indices == NULL:
        return _sqdist_wide(x, centers + c * n_features, n_features)
    return _sparse_dist2(x, x_indices, x_nnz, x_sqnorm, centers + c * n_features,
                         centers_sqnorm[c])


cdef Py_ssize_t _elkan_sample(const floating* x,          # IN  (n_features,) or CSR values
                              const int* x_indices,       # IN  CSR columns, or NULL (dense)
                              Py_ssize_t x_nnz,
                              double x_sqnorm,
                              const double* centers_sqnorm,  # IN (n_clusters,) for CSR rows
                              Py_ssize_t n_features,
                              const floating* centers,    # IN  (n_clusters, n_features)
                              Py_ssize_t n_clusters,
                              const double* half_cc,      # IN  (n_clusters, n_clusters)
                              const double* half_min,     # IN  (n_clusters,)
                              const double* shift_sum,    # IN  (n_clusters,)
                              float* lower,               # INOUT (n_clusters,)
                              int previous,
                              double slack,
                              floating* dist2,            # INOUT
                              double* visit_shift,        # INOUT
                              int* label,                 # OUT
                              const _Pruning* prune,      # IN  projections, or none
                              Py_ssize_t r,               # the sample's row of them
                              Py_ssize_t* n_tests) noexcept nogil:  # OUT
    """Nearest centre of one sample (ties to the lower index); returns the distances computed.

    The exact distance ``u`` to the previous label ``a`` is the last visit's ``dist2`` if
    centre ``a`` has not moved since (``shift_sum[a] == visit_shift``: its coordinates are the
    same), else it is computed. Centre ``c`` is skipped if ``d(c_a, c) / 2 > u`` or its lower
    bound exceeds ``u`` (both strict, so a tie is always looked at). A first visit
    (``previous < 0``) runs the same search from centre 0 and sets every lower bound.
    With pruning (``prune.X_proj`` set), a centre the bounds do not rule out is first tested
    on the projections (``_pruned_away``, counted in ``n_tests``): if that bound exceeds the
    best distance so far beyond the rounding of two direct distances, the centre's direct
    distance would too, and the bound becomes its stored lower bound instead.
    """
    cdef double keep = 1.0 - slack
    cdef Py_ssize_t c, a = previous if previous >= 0 else 0, n_evals = 0
    cdef floating d2, best
    cdef double u, d, b2
    n_tests[0] = 0
    if previous >= 0 and shift_sum[a] == visit_shift[0]:
        best = dist2[0]
    else:
        best = _dist2_to(x, x_indices, x_nnz, x_sqnorm, centers, centers_sqnorm, a,
                         n_features)
        n_evals = 1
    u = sqrt(<double> best)
    lower[a] = _store_lower(u + shift_sum[a], keep)
    if previous >= 0 and half_min[a] * keep > u:
        label[0] = <int> a
        dist2[0] = best
        visit_shift[0] = shift_sum[a]
        return n_evals
    for c in range(0 if previous >= 0 else 1, n_clusters):
        if c == a:
            continue
        if half_cc[a * n_clusters + c] * keep > u:
            if previous < 0:  # d(x, c) >= d(c_a, c) - d(x, c_a)
                lower[c] = _store_lower(2 * half_cc[a * n_clusters + c] - u + shift_sum[c], keep)
            continue
        if previous >= 0 and lower[c] - shift_sum[c] > u:
            continue
        if prune.X_proj != NULL and _pruned_away(prune, r, c, best, &b2, n_tests):
            lower[c] = _store_lower(sqrt(b2) + shift_sum[c], keep)
            continue
        d2 = _dist2_to(x, x_indices, x_nnz, x_sqnorm, centers, centers_sqnorm, c, n_features)
        n_evals += 1
        d = sqrt(<double> d2)
        lower[c] = _store_lower(d + shift_sum[c], keep)
        if d2 < best or (d2 == best and c < a):
            a = c
            best = d2
            u = d
    label[0] = <int> a
    dist2[0] = best
    visit_shift[0] = shift_sum[a]
    return n_evals


def elkan_assign(const floating[:, ::1] X,           # IN  (n_batch, n_features)
                 const floating[::1] sample_weight,   # IN  (n_batch,)
                 const Py_ssize_t[::1] rows,          # IN  (n_batch,) rows of `lower`
                 const floating[:, ::1] centers,      # IN
                 const double[:, ::1] half_cc,        # IN
                 const double[::1] half_min,          # IN
                 const double[::1] shift_sum,         # IN
                 float[:, ::1] lower,                 # INOUT (n_samples, n_clusters)
                 const int[::1] previous,             # IN  (n_batch,)
                 floating[::1] last_dist2,            # INOUT (n_samples,)
                 double[::1] visit_shift,             # INOUT (n_samples,)
                 int[::1] labels,                     # OUT (n_batch,)
                 floating[::1] min_dist2,             # OUT (n_batch,)
                 floating[:, ::1] centers_sum,        # OUT (n_clusters, n_features) or None
                 floating[::1] weight_in_clusters,    # OUT (n_clusters,) or None
                 double slack,
                 int n_threads,
                 double[::1] sse=None,                # OUT (n_clusters,) or None
                 const floating[:, ::1] X_proj=None,  # IN  (n_samples, n_proj) or None
                 const floating[::1] x_rest=None,     # IN  (n_samples,)
                 const floating[:, ::1] centers_proj=None,  # IN (n_clusters, n_proj)
                 const floating[::1] centers_rest=None,     # IN (n_clusters,)
                 const double[::1] prune_tol=None):   # IN  (5,)
    """Assign a batch to the nearest centres with Elkan's triangle-inequality bounds.

    Parameters
    ----------
    X : ndarray of shape (n_batch, n_features), dtype=floating
    sample_weight : ndarray of shape (n_batch,), dtype=floating
    rows : ndarray of shape (n_batch,), dtype=intp
        Row of ``lower`` that holds each sample's bounds.
    centers : ndarray of shape (n_clusters, n_features), dtype=floating
    half_cc : ndarray of shape (n_clusters, n_clusters), dtype=float64
        Half the distance between every two centres (:func:`center_half_distances`).
    half_min : ndarray of shape (n_clusters,), dtype=float64
        Half the distance of each centre to its nearest other centre.
    shift_sum : ndarray of shape (n_clusters,), dtype=float64
        How far each centre has moved in total since the bounds were first set.
    lower : ndarray of shape (n_samples, n_clusters), dtype=float32
        Stored lower bounds ``l(x, c) + shift_sum[c]`` at the sample's last visit; updated
        for the distances computed now. Rows of first visits need no initial value.
    previous : ndarray of shape (n_batch,), dtype=int32
        Each sample's label at its last visit, ``-1`` for a first visit.
    last_dist2, visit_shift : ndarrays of shape (n_samples,), dtype=floating and float64
        Per row of ``lower``: the squared distance to its label at its last visit, and
        ``shift_sum`` of that centre then; updated. While the centre stays put the distance is
        reused instead of computed.
    labels : ndarray of shape (n_batch,), dtype=int32
        Output: the nearest centre (ties to the lowest index among the distances computed).
    min_dist2 : ndarray of shape (n_batch,), dtype=floating
        Output: the squared distance to it, computed directly (exact, never negative).
    centers_sum, weight_in_clusters : ndarrays of shape (n_clusters, n_features) and \
            (n_clusters,), or None
        If given (the fixed-block layout must fit, see ``_mstep.blocks_fit``): output, the
        hard M-step's ``sum w x`` and ``sum w`` per cluster, summed in the same pass and in
        the same order as ``_mstep.accumulate_statistics`` (so bit-identical to it).
    slack : float
        Relative margin by which a bound must beat ``u`` (covers rounding; see ElkanEStep).
    n_threads : int
        Number of OpenMP threads.
    sse : ndarray of shape (n_clusters,), dtype=float64, or None
        Output if given (with ``centers_sum``): ``sum_{n: labels_n = c} w_n min_dist2_n``,
        summed in float64 in the same order as ``_mstep.accumulate_statistics``.
    X_proj, x_rest, centers_proj, centers_rest : ndarrays, or None
        Exact dimension pruning (all four, or none): the coordinates of every row of
        ``lower`` (indexed by ``rows``) and of the centres along ``n_proj`` orthonormal
        directions, and the norms of the rest (as for ``_pruned.assign_pruned``).
    prune_tol : ndarray of shape (5,), dtype=float64, or None
        With pruning: ``shrink, tol_abs, rest_tol, rest_rel, grow`` (``_pruning._PruneTol``,
        from ``clusterkit.estep.pruning.pair_tolerances``).

    Returns
    -------
    n_distance_evals : int
        One per sample whose centre moved since its last visit (the distance to it), plus
        those the bounds did not rule out (and, with pruning, its test did not).
    n_tests : int
        Only with pruning: the tests on the projections (``n_proj`` multiply-adds each).

    Notes
    -----
    Each sample is handled by one thread and touches only its own row of ``lower``; with
    sums, rows go in fixed blocks (the layout depends on ``n_batch`` only) whose partial
    sums are added in block order. So the result does not depend on ``n_threads``. The
    distance to the previous label reads every row, so summing in the same pass saves the
    M-step its own pass over the data. Assumes valid input.
    """
    cdef Py_ssize_t n_batch = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t n_clusters = centers.shape[0], i, b
    cdef Py_ssize_t n_blocks = _n_blocks(n_batch)
    cdef Py_ssize_t n_evals = 0, n_tests = 0, t
    cdef bint fused = centers_sum is not None
    cdef bint with_sse = fused and sse is not None
    cdef double* block_sse
    cdef _Pruning prune
    cdef bint pruned = _set_pruning(&prune, lower.shape[0], n_clusters, X_proj, x_rest,
                                    centers_proj, centers_rest, prune_tol)
    n_threads = max(1, n_threads)
    if n_batch == 0:
        return _counts(0, 0, pruned)
    # Without sums, pieces of 64 rows balance the uneven per-sample work; with sums, the
    # fixed blocks of the M-step's layout keep the result independent of n_threads.
    cdef Py_ssize_t piece_rows = _block_rows(n_batch, n_blocks) if fused else 64
    cdef Py_ssize_t n_pieces = (n_batch + piece_rows - 1) // piece_rows
    dtype = np.float32 if floating is float else np.float64
    # the blocks' partial sums (a placeholder without sums)
    cdef Py_ssize_t n_parts = n_blocks if fused else 1, n_cols = n_clusters if fused else 1
    cdef floating[:, :, ::1] sums = np.zeros((n_parts, n_cols, n_features if fused else 1),
                                             dtype=dtype)
    cdef floating[:, ::1] weights = np.zeros((n_parts, n_cols), dtype=dtype)
    cdef double[:, ::1] sse_parts = np.zeros((n_parts, n_cols if with_sse else 1))
    with nogil:
        for b in prange(n_pieces, schedule="dynamic", num_threads=min(n_threads, n_pieces)):
            block_sse = &sse_parts[b, 0] if with_sse else NULL
            for i in range(b * piece_rows, min((b + 1) * piece_rows, n_batch)):
                t = 0
                n_evals += _elkan_sample(&X[i, 0], NULL, 0, 0, NULL, n_features,
                                         &centers[0, 0], n_clusters,
                                         &half_cc[0, 0], &half_min[0], &shift_sum[0],
                                         &lower[rows[i], 0], previous[i], slack,
                                         &last_dist2[rows[i]], &visit_shift[rows[i]],
                                         &labels[i], &prune, rows[i], &t)
                n_tests += t
                min_dist2[i] = last_dist2[rows[i]]
                if fused:
                    _add_sample(&sums[b, 0, 0], &weights[b, 0], block_sse, labels[i],
                                &X[i, 0], sample_weight[i], min_dist2[i], n_features)
        if fused:
            _reduce_blocks(sums, weights, &sse_parts[0, 0], centers_sum, weight_in_clusters,
                           &sse[0] if with_sse else NULL, min(n_threads, n_clusters))
    return _counts(n_evals, n_tests, pruned)


cdef void _init_chunk(const _TilePlan* plan,
                      const floating* X,               # IN  (n_rows, n_features)
                      Py_ssize_t n_rows,
                      const Py_ssize_t* rows,          # IN  (n_rows,)
                      const double* shift_sum,         # IN  (n_clusters,)
                      double slack,
                      float* lower,                    # INOUT (n_samples, n_clusters)
                      floating* last_dist2,            # INOUT (n_samples,)
                      double* visit_shift,             # INOUT (n_samples,)
                      int* labels,                     # OUT (n_rows,)
                      floating* min_dist2) noexcept nogil:  # OUT (n_rows,)
    cdef double keep = 1.0 - slack, xn, window, v
    cdef Py_ssize_t n_features = plan.n_features, n_clusters = plan.n_clusters, i, c, best
    cdef const floating* x
    cdef const floating* row
    cdef floating d2
    cdef float* bound
    cdef floating* tile = _chunk_tile(plan, X, n_rows)
    for i in range(n_rows):
        x = X + i * n_features
        row = _tile_row(plan, X, i, tile)
        xn = _sqnorm(x, n_features)
        best = _first_visit(plan, row, x, xn, &d2, &window)
        # each bound: the entry lowered by the window, so below the exact distance
        bound = lower + rows[i] * n_clusters
        for c in range(n_clusters):
            v = row[c] + xn - window
            bound[c] = _store_lower((sqrt(v) if v > 0 else 0.0) + shift_sum[c], keep)
        bound[best] = _store_lower(sqrt(<double> d2) + shift_sum[best], keep)
        labels[i] = <int> best
        min_dist2[i] = d2
        last_dist2[rows[i]] = d2
        visit_shift[rows[i]] = shift_sum[best]


def elkan_init_bounds(const floating[:, ::1] X,           # IN  (n_batch, n_features)
                      const Py_ssize_t[::1] rows,          # IN  (n_batch,)
                      const floating[:, ::1] centers,      # IN  (n_clusters, n_features)
                      const double[::1] shift_sum,         # IN  (n_clusters,)
                      float[:, ::1] lower,                 # OUT rows of (n_samples, n_clusters)
                      floating[::1] last_dist2,            # OUT rows of (n_samples,)
                      double[::1] visit_shift,             # OUT rows of (n_samples,)
                      int[::1] labels,                     # OUT (n_batch,)
                      floating[::1] min_dist2,             # OUT (n_batch,)
                      double slack,
                      int n_threads):
    """First visits of a batch with many features: labels and all bounds from gemm tiles.

    The first visit of :func:`elkan_assign` looks at every centre the centre distances do
    not rule out, one direct distance each; with many features the same ``C`` distances cost
    several times less as ``CHUNK_SIZE x n_clusters`` gemm tiles (as in Lloyd's E-step,
    ``_assign.assign_full``). The label is ranked with the near-ties settled by direct
    distances (``_settle_near_ties``), so it is Lloyd's and :func:`elkan_assign`'s; the
    distance to it is then computed directly (exact: later visits reuse it). Every other
    bound is the tile's distance lowered by the rounding window of ``_settle_near_ties``, so
    it stays below the exact distance.

    Parameters
    ----------
    X : ndarray of shape (n_batch, n_features), dtype=floating
        Samples at their first visit; at least ``GEMM_MIN_FEATURES`` features
        (``_dist.uses_gemm``).
    rows, centers, shift_sum, lower, last_dist2, visit_shift, labels, min_dist2, slack, \
n_threads
        As for :func:`elkan_assign`.

    Returns
    -------
    n_distance_evals : int
        ``n_batch * (n_clusters + 1)``: the gemm distances and the direct one to the label.

    Notes
    -----
    Each thread owns one tile; every output element is written by one thread, so the result
    does not depend on ``n_threads``. Assumes valid input.
    """
    cdef Py_ssize_t n_batch = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t n_clusters = centers.shape[0], c
    cdef _TilePlan plan
    if n_batch == 0:
        return 0
    if not _use_gemm(n_features):
        raise ValueError(f"elkan_init_bounds needs gemm tiles; {n_features} features are "
                         "too few (see _dist.uses_gemm)")
    keep = _prepare_tiles(&plan, centers, n_batch, CHUNK_SIZE, n_threads,
                          CHUNK_SIZE * n_clusters * sizeof(floating))
    with nogil, parallel(num_threads=plan.n_threads):
        for c in prange(plan.n_chunks, schedule="static"):
            _init_chunk(&plan, &X[c * CHUNK_SIZE, 0], _chunk_len(&plan, c), &rows[c * CHUNK_SIZE],
                        &shift_sum[0], slack, &lower[0, 0], &last_dist2[0], &visit_shift[0],
                        &labels[c * CHUNK_SIZE], &min_dist2[c * CHUNK_SIZE])
    return n_batch * (n_clusters + 1)


def elkan_assign_sparse(const floating[::1] data,           # IN  CSR values of the batch
                        const int[::1] indices,             # IN  their columns
                        const int[::1] indptr,              # IN  (n_batch + 1,)
                        const floating[::1] x_sqnorms,      # IN  (n_batch,)
                        const Py_ssize_t[::1] rows,         # IN  (n_batch,) rows of `lower`
                        const floating[:, ::1] centers,     # IN
                        const double[:, ::1] half_cc,       # IN
                        const double[::1] half_min,         # IN
                        const double[::1] shift_sum,        # IN
                        float[:, ::1] lower,                # INOUT (n_samples, n_clusters)
                        const int[::1] previous,            # IN  (n_batch,)
                        floating[::1] last_dist2,           # INOUT (n_samples,)
                        double[::1] visit_shift,            # INOUT (n_samples,)
                        int[::1] labels,                    # OUT (n_batch,)
                        floating[::1] min_dist2,            # OUT (n_batch,)
                        double slack,
                        int n_threads):
    """:func:`elkan_assign` for a batch of CSR rows (without the fused sums).

    The same bounds and search; a distance is ``||x||^2 - 2 x.c + ||c||^2`` from the rows'
    squared norms ``x_sqnorms`` and the centres' (computed here), with the dot in float64,
    clipped at 0.

    Parameters
    ----------
    data, indices, indptr : ndarrays, dtype=floating, int32, int32
        The CSR arrays of the batch, of shape (n_batch, n_features).
    x_sqnorms : ndarray of shape (n_batch,), dtype=floating
    rows, centers, half_cc, half_min, shift_sum, lower, previous, last_dist2, visit_shift, \
labels, min_dist2, slack, n_threads
        As for :func:`elkan_assign`.

    Returns
    -------
    n_distance_evals : int

    Notes
    -----
    Rounding of the expanded distances is relative to ``||x||^2 + ||c||^2``, not to the
    distance: near ties within that rounding the label may differ from Lloyd's. Each sample is
    handled by one thread, so the result does not depend on ``n_threads``. Assumes valid
    input.
    """
    cdef Py_ssize_t n_batch = labels.shape[0], n_features = centers.shape[1]
    cdef Py_ssize_t n_clusters = centers.shape[0], i, t
    cdef Py_ssize_t n_evals = 0
    cdef _Pruning prune  # (no pruning of CSR rows)
    prune.X_proj = NULL
    if n_batch == 0:
        return 0
    cdef const double[::1] c_sqnorms = np.einsum("ij,ij->i", centers, centers,
                                                 dtype=np.float64)
    # (never NULL, even without non-zeros: NULL indices mean a dense row to _elkan_sample)
    cdef int no_index = 0
    cdef floating no_value = 0
    cdef const floating* dp = &data[0] if data.shape[0] > 0 else &no_value
    cdef const int* ip = &indices[0] if indices.shape[0] > 0 else &no_index
    with nogil:
        for i in prange(n_batch, schedule="dynamic", chunksize=64,
                        num_threads=max(1, n_threads)):
            t = 0
            n_evals += _elkan_sample(dp + indptr[i], ip + indptr[i], indptr[i + 1] - indptr[i],
                                     x_sqnorms[i], &c_sqnorms[0], n_features, &centers[0, 0],
                                     n_clusters, &half_cc[0, 0], &half_min[0], &shift_sum[0],
                                     &lower[rows[i], 0], previous[i], slack,
                                     &last_dist2[rows[i]], &visit_shift[rows[i]], &labels[i],
                                     &prune, rows[i], &t)
            min_dist2[i] = last_dist2[rows[i]]
    return n_evals


def center_half_distances(const floating[:, ::1] centers,   # IN
                          double[:, ::1] half_cc,           # OUT (n_clusters, n_clusters)
                          double[::1] half_min,             # OUT (n_clusters,)
                          int n_threads):
    """Half the distance between every two centres, and to each centre's nearest other one.

    Parameters
    ----------
    centers : ndarray of shape (n_clusters, n_features), dtype=floating
    half_cc : ndarray of shape (n_clusters, n_clusters), dtype=float64
        Output: ``d(c_i, c_j) / 2`` (0 on the diagonal), symmetric.
    half_min : ndarray of shape (n_clusters,), dtype=float64
        Output: ``min_{j != i} d(c_i, c_j) / 2`` (``inf`` for a single centre).
    n_threads : int

    Returns
    -------
    n_distance_evals : int
        ``n_clusters (n_clusters - 1) / 2``.

    Notes
    -----
    Each pair's distance is computed once, directly (like the samples' distances), by the
    thread of its lower index; results do not depend on ``n_threads``.
    """
    cdef Py_ssize_t n_clusters = centers.shape[0], n_features = centers.shape[1], i, j
    cdef double d, best
    with nogil:
        for i in prange(n_clusters, schedule="dynamic", num_threads=max(1, n_threads)):
            half_cc[i, i] = 0
            for j in range(i + 1, n_clusters):
                half_cc[i, j] = 0.5 * sqrt(<double> _sqdist_wide(&centers[i, 0], &centers[j, 0],
                                                                  n_features))
        for i in range(n_clusters):
            best = INFINITY
            for j in range(n_clusters):
                if j < i:
                    half_cc[i, j] = half_cc[j, i]
                if j != i and half_cc[i, j] < best:
                    best = half_cc[i, j]
            half_min[i] = best
    return n_clusters * (n_clusters - 1) // 2
