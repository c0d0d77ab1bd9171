"""k-means++ seeding kernels: the D^2 update after a new centre, and pruned greedy k-means++.

:class:`clusterkit.KMeansPlusPlus` draws every random number; these kernels are deterministic
functions of their arguments and give bit-identical results for any ``n_threads``.
"""
import numpy as np

from cpython.exc cimport PyErr_CheckSignals
from cython cimport floating
from cython.parallel cimport parallel, prange
from libc.math cimport sqrt
from libc.stdlib cimport calloc, free

from ._dist cimport (CHUNK_SIZE, _center_dist2, _sqdist, _sqdist_wide, _sqdist_wide_below,
                     ck_prefetch_row)
from ._kmeanspp_groups cimport (INLINE_MAX_ROW_BYTES, PREFETCH_AHEAD, SAMPLER_BLOCK, _block_mass,
                                _copy_row, _drop_neighbours, _group_entries, _invert_cumsum,
                                _may_overlap, _Neighbours, _prefix_sums, _push_neighbour,
                                _push_neighbour_within, _score_group, _sort_members)
from ._chunks cimport _chunk_stop, _chunk_threads, _n_chunks
from ._openmp cimport _threads_for


cdef void _d2_update_chunk(const floating* X,          # IN    (n_rows, n_features)
                           Py_ssize_t n_rows,
                           Py_ssize_t n_features,
                           const floating* center,     # IN    (n_features,)
                           floating* min_dist2) noexcept nogil:  # INOUT (n_rows,)
    # Four rows at a time: four independent sums hide the latency of the additions (each sum
    # still runs over the features in order, so the result equals _sqdist's).
    cdef Py_ssize_t i = 0, k
    cdef floating d0, d1, d2, d3, t0, t1, t2, t3
    cdef const floating* x0
    while i + 4 <= n_rows:
        x0 = X + i * n_features
        d0 = d1 = d2 = d3 = 0
        for k in range(n_features):
            t0 = x0[k] - center[k]
            t1 = x0[n_features + k] - center[k]
            t2 = x0[2 * n_features + k] - center[k]
            t3 = x0[3 * n_features + k] - center[k]
            d0 += t0 * t0
            d1 += t1 * t1
            d2 += t2 * t2
            d3 += t3 * t3
        if d0 < min_dist2[i]:
            min_dist2[i] = d0
        if d1 < min_dist2[i + 1]:
            min_dist2[i + 1] = d1
        if d2 < min_dist2[i + 2]:
            min_dist2[i + 2] = d2
        if d3 < min_dist2[i + 3]:
            min_dist2[i + 3] = d3
        i += 4
    while i < n_rows:
        d0 = _sqdist(X + i * n_features, center, n_features)
        if d0 < min_dist2[i]:
            min_dist2[i] = d0
        i += 1


def d2_update(const floating[:, ::1] X,       # IN
              const floating[::1] center,     # IN
              floating[::1] min_dist2,        # INOUT
              int n_threads):
    """Lower the squared distances to the nearest centre by one new centre.

    ``min_dist2[i] = min(min_dist2[i], ||X[i] - center||^2)`` for every sample.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), dtype=floating
    center : ndarray of shape (n_features,), dtype=floating
        The new centre.
    min_dist2 : ndarray of shape (n_samples,), dtype=floating
        In: squared distance of each sample to its nearest centre so far (``inf`` before the
        first centre). Out: the same, with ``center`` included.
    n_threads : int
        Number of OpenMP threads.

    Returns
    -------
    n_distance_evals : int
        ``n_samples``.

    Notes
    -----
    Distances are computed directly (no gemm, so no cancellation: a sample equal to the centre
    gets exactly 0). Memory-bound; each sample is written by one thread, so the result does not
    depend on ``n_threads``. Assumes valid input (shapes agree, C-contiguous).
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t n_chunks = _n_chunks(n_samples, CHUNK_SIZE), c, start
    if n_samples == 0:
        return 0
    with nogil, parallel(num_threads=_chunk_threads(n_threads, n_chunks)):
        for c in prange(n_chunks, schedule="static"):
            start = c * CHUNK_SIZE
            _d2_update_chunk(&X[start, 0], _chunk_stop(c, CHUNK_SIZE, n_samples) - start,
                             n_features, &center[0], &min_dist2[start])
    return n_samples



def kmeanspp(const floating[:, ::1] X,             # IN
             const floating[::1] sample_weight,    # IN
             Py_ssize_t first,
             const double[:, ::1] uniforms,        # IN
             floating[:, ::1] centers,             # OUT
             int[::1] chosen,                      # OUT
             int[::1] labels,                      # OUT
             floating[::1] min_dist2,              # OUT
             int n_threads,
             long long[::1] progress=None,         # OUT
             Py_ssize_t max_neighbours=-1):
    """Greedy k-means++ seeding, pruned by the triangle inequality.

    Centre 0 is row ``first``. For centre ``i`` (``1 <= i < n_clusters``), ``L`` candidate rows
    are drawn with probability proportional to ``w D^2`` from the uniforms ``uniforms[i - 1]``
    (a block of ``SAMPLER_BLOCK`` rows first, then a row in the block, both by the inverse
    cumulative sum in row order); the candidate that lowers the weighted potential
    ``sum w D^2`` most becomes the centre (the first one on ties). ``L = 1`` is plain
    k-means++.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), dtype=floating
    sample_weight : ndarray of shape (n_samples,), dtype=floating
    first : int
        Row of the first centre.
    uniforms : ndarray of shape (n_clusters - 1, L), dtype=float64
        Uniform numbers in [0, 1), one per candidate draw.
    centers : ndarray of shape (n_clusters, n_features), dtype=floating
        Output: the centres, ``centers[i] = X[chosen[i]]``, for ``i < n_chosen``.
    chosen : ndarray of shape (n_clusters,), dtype=int32
        Output: the row of each centre.
    labels : ndarray of shape (n_samples,), dtype=int32
        Output: each sample's nearest centre among the first ``n_chosen`` (the earliest on
        ties).
    min_dist2 : ndarray of shape (n_samples,), dtype=floating
        Output: each sample's squared distance to that centre, ``D^2``.
    n_threads : int
        Number of OpenMP threads.
    progress : ndarray of shape (1,), dtype=int64, or None, default=None
        Output, written while the kernel runs: the centres chosen so far, for another
        thread to read (a progress display); ``n_chosen`` at the end.
    max_neighbours : int, default=-1
        The most entries the groups' neighbour lists may hold together (12 bytes each; no
        limit if negative). Where they would need more, they are dropped, and from then on
        a candidate's group lists every centre chosen so far while the candidate is scored
        (freed after the step): the scoring's quarter test rules out the groups the kept
        list would not have had, so the result is the same, in memory ``O(L n_clusters)``
        instead of up to ``O(n_clusters^2)``, for ``i`` quarter distances per candidate at
        step ``i`` (their sums stop at ``4 r_j^2``).

    Returns
    -------
    n_chosen : int
        Centres chosen: ``n_clusters``, or fewer if every ``w D^2`` became zero first (the
        caller chooses the rest).
    n_distance_evals : int
        Distances computed: ``n_samples`` for the first centre; then, per step, each scored
        candidate's distances to the centres of the groups it may take samples from, the
        chosen centre's distances to all earlier centres, and the sample distances that
        pruning could not rule out (for every scored candidate and again for the chosen one).
        Unpruned greedy k-means++ computes ``(L + 1) n_samples`` per step.

    Notes
    -----
    The samples are kept in groups by nearest centre, sorted by decreasing ``D^2``; ``r_j``
    is the largest ``D`` in group ``j``. Two prunings, both by the triangle inequality (Raff,
    2021, applies them to k-means++), leave the result equal to unpruned greedy k-means++ with
    the same draws, except where a skipped distance ties ``D`` to within rounding:

    * a sample ``x`` of group ``j`` can only come closer to a new point ``c`` if
      ``d(c, c_j) < 2 D(x)``, so only the leading members of a group are looked at;
    * a candidate is a member of some group ``g``, so it can only take samples from groups
      ``j`` with ``d(c_g, c_j) < 2 (r_g + r_j)``. Each group keeps the list of such ``j``,
      built from the chosen centre's distances to all earlier ones when it is created (the
      radii only shrink, so lists stay valid) and thinned before it is used.

    The candidates are scored group by group in parallel: each group's candidates one after
    the other, while its leading rows are in cache. Short rows (``n_features * itemsize <=
    INLINE_MAX_ROW_BYTES``, 128 bytes) are kept in group order next to the members, so that
    scoring streams through them; longer rows are read from ``X``. The chosen centre's
    distances are computed in parallel, too; the sampling and the moves run on one thread.
    Results do not depend on ``n_threads``. Memory ``O(n_samples + L n_clusters + sum of list
    lengths)`` (the lists' total capped by ``max_neighbours``), plus, with short rows, room for three copies of them (the group-ordered rows
    with space to append, and a buffer to
    compact them). Pending signals are handled between centres (Ctrl-C raises
    ``KeyboardInterrupt`` within one step), without changing the result. Assumes valid
    input.
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t n_clusters = centers.shape[0], n_trials = uniforms.shape[1]
    cdef Py_ssize_t n_blocks = (n_samples + SAMPLER_BLOCK - 1) // SAMPLER_BLOCK
    cdef Py_ssize_t capacity = 2 * n_samples
    cdef Py_ssize_t i, j, k, l, t, m, b, g, row, best, end, pos, stop, n_scan, n_chosen = 1
    cdef Py_ssize_t n_evals = n_samples, work
    cdef floating d, mass_old, mass_new
    cdef double target, best_gain, dist2
    cdef bint out_of_memory = False, dropped = False
    cdef int status
    cdef Py_ssize_t n_capacity = 0, n_rebuilt = 0
    cdef _Neighbours* nb
    cdef _Neighbours* neighbours
    cdef long long unused_progress = 0
    # volatile: each store is made, for a reader in another thread
    cdef volatile long long* n_done = &unused_progress
    dtype = np.float32 if floating is float else np.float64
    cdef floating[:, ::1] centers_T = np.empty((n_features, n_clusters), dtype=dtype)
    cdef floating[::1] new_center_dist2 = np.empty(n_clusters, dtype=dtype)
    cdef Py_ssize_t[::1] rebuilt = np.empty(max(n_trials, 1), dtype=np.intp)
    cdef floating[::1] radius2 = np.zeros(n_clusters, dtype=dtype)  # r_j^2
    cdef double[::1] radius = np.zeros(n_clusters, dtype=np.float64)  # r_j
    cdef Py_ssize_t[::1] group_start = np.zeros(n_clusters, dtype=np.intp)
    cdef Py_ssize_t[::1] group_size = np.zeros(n_clusters, dtype=np.intp)
    cdef Py_ssize_t[::1] scan_end = np.zeros(n_clusters, dtype=np.intp)
    cdef int[::1] thinned = np.full(n_clusters, -1, dtype=np.int32)
    # the groups' members, their D^2 and weights, each group a contiguous run; new groups
    # are appended after the last one, and all are moved to the front when space runs out
    cdef int[::1] members = np.empty(max(capacity, 1), dtype=np.int32)
    cdef floating[::1] member_d2 = np.empty(max(capacity, 1), dtype=dtype)
    cdef floating[::1] member_w = np.empty(max(capacity, 1), dtype=dtype)
    cdef int[::1] members_tmp = np.empty(max(n_samples, 1), dtype=np.int32)
    cdef floating[::1] member_d2_tmp = np.empty(max(n_samples, 1), dtype=dtype)
    cdef floating[::1] member_w_tmp = np.empty(max(n_samples, 1), dtype=dtype)
    # short rows are kept in the members' order, so that scoring a candidate streams through
    # memory instead of gathering rows of X
    cdef bint inline_rows = n_features * sizeof(floating) <= INLINE_MAX_ROW_BYTES
    cdef floating[:, ::1] member_x = np.empty(
        (capacity if inline_rows else 1, n_features), dtype=dtype)
    cdef floating[:, ::1] member_x_tmp = np.empty(
        (n_samples if inline_rows else 1, n_features), dtype=dtype)
    cdef floating* member_x_ptr = &member_x[0, 0] if inline_rows else NULL
    cdef double[::1] block_cumsum = np.empty(n_blocks, dtype=np.float64)
    cdef double[::1] block_sum = np.empty(n_blocks, dtype=np.float64)
    cdef double[::1] row_cumsum = np.empty(SAMPLER_BLOCK, dtype=np.float64)
    cdef double[::1] gains = np.empty(max(n_trials, 1), dtype=np.float64)
    cdef Py_ssize_t[::1] trial_evals = np.empty(max(n_trials, 1), dtype=np.intp)
    cdef Py_ssize_t[::1] cand = np.empty(max(n_trials, 1), dtype=np.intp)
    # the chosen centre's distances to the scanned members, in member order
    cdef floating[::1] member_new_d2 = np.empty(max(capacity, 1), dtype=dtype)
    # scoring, group by group: per candidate, the quarter squared distances to the centres of
    # its scan list; per (group, candidate) pair an entry with its partial
    # gain; the touched groups ("slots") list their entries contiguously
    cdef Py_ssize_t n_entries = 0, n_touched = 0
    cdef Py_ssize_t max_entries = n_trials * n_clusters
    cdef floating[:, ::1] quarters = np.empty(
        (max(n_trials, 1), n_clusters), dtype=dtype)
    cdef int[::1] slot_stamp = np.full(n_clusters, -1, dtype=np.int32)
    cdef Py_ssize_t[::1] slot_of_group = np.zeros(n_clusters, dtype=np.intp)
    cdef Py_ssize_t[::1] touched = np.zeros(n_clusters, dtype=np.intp)
    cdef Py_ssize_t[::1] slot_start = np.zeros(n_clusters + 1, dtype=np.intp)
    cdef Py_ssize_t[::1] slot_entries = np.zeros(max(max_entries, 1), dtype=np.intp)
    cdef Py_ssize_t[::1] entry_cand = np.zeros(max(max_entries, 1), dtype=np.intp)
    cdef floating[::1] entry_q = np.zeros(max(max_entries, 1), dtype=dtype)
    cdef double[::1] entry_gain = np.zeros(max(max_entries, 1), dtype=np.float64)
    cdef Py_ssize_t[::1] entry_evals = np.zeros(max(max_entries, 1), dtype=np.intp)
    if progress is not None:
        n_done = &progress[0]
    n_done[0] = 0
    if n_samples == 0 or n_clusters == 0:
        return 0, 0
    n_threads = max(1, n_threads)
    neighbours = <_Neighbours*> calloc(n_clusters, sizeof(_Neighbours))
    if neighbours == NULL:
        raise MemoryError()
    try:
        with nogil:
            # centre 0: every sample in its group
            for k in range(n_features):
                centers[0, k] = X[first, k]
                centers_T[k, 0] = X[first, k]
            chosen[0] = <int> first
            for m in range(n_samples):
                min_dist2[m] = _sqdist_wide(&X[m, 0], &centers[0, 0], n_features)
                labels[m] = 0
                members[m] = <int> m
                member_d2[m] = min_dist2[m]
            _sort_members(&members[0], &member_d2[0], n_samples)
            radius2[0] = member_d2[0]
            radius[0] = sqrt(<double> radius2[0])
            for t in range(n_samples):
                member_w[t] = sample_weight[members[t]]
                if inline_rows:
                    _copy_row(&X[members[t], 0], &member_x[t, 0], n_features)
            group_size[0] = n_samples
            end = n_samples
            for b in range(n_blocks):
                block_sum[b] = _block_mass(&sample_weight[0], &min_dist2[0], b * SAMPLER_BLOCK,
                                           min((b + 1) * SAMPLER_BLOCK, n_samples), NULL)
            n_done[0] = 1
            for i in range(1, n_clusters):
                # Ctrl-C between centres (the Python handlers run here; the exception leaves
                # through the finally below), as the driver checks between iterations
                with gil:
                    PyErr_CheckSignals()
                _prefix_sums(&block_sum[0], &block_cumsum[0], n_blocks)
                # draw the candidates: a block by its mass, then a row within it. The block
                # sums are updated by differences as samples move, so the drawn block's sum
                # is replaced by its exact value; a block found empty is redrawn.
                l = 0
                while l < n_trials and block_cumsum[n_blocks - 1] > 0:
                    target = uniforms[i - 1, l] * block_cumsum[n_blocks - 1]
                    b = _invert_cumsum(&block_cumsum[0], n_blocks, target)
                    if b > 0:
                        target = target - block_cumsum[b - 1]
                    row = min((b + 1) * SAMPLER_BLOCK, n_samples) - b * SAMPLER_BLOCK
                    block_sum[b] = _block_mass(&sample_weight[0], &min_dist2[0],
                                               b * SAMPLER_BLOCK, b * SAMPLER_BLOCK + row,
                                               &row_cumsum[0])
                    if not block_sum[b] > 0:
                        _prefix_sums(&block_sum[0], &block_cumsum[0], n_blocks)
                        continue
                    cand[l] = b * SAMPLER_BLOCK + _invert_cumsum(&row_cumsum[0], row, target)
                    l += 1
                if l < n_trials:
                    break  # every w D^2 is zero
                for l in range(n_trials):
                    g = labels[cand[l]]
                    if thinned[g] != i:
                        thinned[g] = <int> i
                        nb = &neighbours[g]
                        if dropped:
                            # every earlier centre, in centre order: a candidate of group g
                            # can only take samples from group j if its quarter distance to
                            # centre j is below r_j^2, and then d(c_g, c_j) < r_g + 2 r_j,
                            # so j is on the list the group would have kept; the scoring
                            # tests those quarters anyway (its sums stop at 4 r_j^2), and
                            # computing the list's distances first would double the work
                            rebuilt[n_rebuilt] = g
                            n_rebuilt += 1
                            for j in range(i):
                                if j != g and not _push_neighbour(nb, <int> j, 0):
                                    out_of_memory = True
                                    break
                            if out_of_memory:
                                break
                            continue
                        pos = 0
                        for t in range(nb.size):
                            if _may_overlap(nb.dist2[t], radius[g], radius[nb.index[t]]):
                                nb.index[pos] = nb.index[t]
                                nb.dist2[pos] = nb.dist2[t]
                                pos += 1
                        nb.size = pos
                if out_of_memory:
                    break
                best = 0
                if n_trials > 1:
                    # score group by group, so that a group's leading rows, once in cache,
                    # serve every candidate that needs them; each loop runs on several
                    # threads only when it has the work for them
                    work = 0
                    for l in range(n_trials):
                        work += neighbours[labels[cand[l]]].size + 1
                    with parallel(num_threads=_threads_for(work * n_features, n_threads)):
                        for l in prange(n_trials, schedule="dynamic"):
                            g = labels[cand[l]]
                            for t in range(-1, neighbours[g].size):
                                j = g if t < 0 else neighbours[g].index[t]
                                # (a group is scanned only if its quarter is below r_j^2:
                                # the sum may stop at 4 r_j^2, both scalings exact)
                                quarters[l, t + 1] = <floating> 0.25 * _sqdist_wide_below(
                                    &X[cand[l], 0], &centers[j, 0], n_features,
                                    <floating> 4 * radius2[j])
                    n_entries = _group_entries(
                        i, cand, labels, neighbours, &quarters[0, 0], n_clusters, radius2,
                        slot_stamp, slot_of_group, touched, slot_start, slot_entries, entry_cand,
                        entry_q, trial_evals, &n_touched)
                    work = 0  # at most every member of a touched group, per entry
                    for b in range(n_touched):
                        work += group_size[touched[b]] * (slot_start[b + 1] - slot_start[b])
                    with parallel(num_threads=_threads_for(work * n_features, n_threads)):
                        for b in prange(n_touched, schedule="dynamic"):
                            _score_group(&X[0, 0], n_features, &cand[0], group_start[touched[b]],
                                         group_start[touched[b]] + group_size[touched[b]],
                                         &members[0], &member_d2[0], &member_w[0], member_x_ptr,
                                         &slot_entries[slot_start[b]],
                                         slot_start[b + 1] - slot_start[b], &entry_cand[0],
                                         &entry_q[0], &entry_gain[0], &entry_evals[0])
                    for l in range(n_trials):
                        gains[l] = 0
                    for b in range(n_entries):
                        gains[entry_cand[b]] += entry_gain[b]
                        trial_evals[entry_cand[b]] += entry_evals[b]
                    best_gain = gains[0]
                    for l in range(n_trials):
                        n_evals += trial_evals[l]
                        if gains[l] > best_gain:
                            best_gain = gains[l]
                            best = l
                row = cand[best]
                g = labels[row]
                for k in range(n_features):
                    centers[i, k] = X[row, k]
                    centers_T[k, i] = X[row, k]
                chosen[i] = <int> row
                n_chosen = i + 1
                n_done[0] = n_chosen
                # the new centre's distances to all earlier ones (for its neighbour list)
                _center_dist2(&centers[i, 0], n_features, &centers_T[0, 0], n_clusters, i,
                              &new_center_dist2[0])
                n_evals += i
                # the scanned leading members of the groups it may take samples from
                n_scan = 0
                nb = &neighbours[g]
                for t in range(-1, nb.size):
                    j = g if t < 0 else nb.index[t]
                    stop = group_start[j]
                    while (stop < group_start[j] + group_size[j]
                           and <floating> 0.25 * new_center_dist2[j] < member_d2[stop]):
                        stop += 1
                    scan_end[j] = stop
                    n_scan += stop - group_start[j]
                n_evals += n_scan
                if end + n_scan > capacity:
                    pos = 0
                    for j in range(i):
                        for t in range(group_start[j], group_start[j] + group_size[j]):
                            members_tmp[pos] = members[t]
                            member_d2_tmp[pos] = member_d2[t]
                            member_w_tmp[pos] = member_w[t]
                            if inline_rows:
                                _copy_row(&member_x[t, 0], &member_x_tmp[pos, 0], n_features)
                            pos += 1
                        scan_end[j] += pos - group_size[j] - group_start[j]
                        group_start[j] = pos - group_size[j]
                    for t in range(pos):
                        members[t] = members_tmp[t]
                        member_d2[t] = member_d2_tmp[t]
                        member_w[t] = member_w_tmp[t]
                        if inline_rows:
                            _copy_row(&member_x_tmp[t, 0], &member_x[t, 0], n_features)
                    end = pos
                # move the samples the new centre is nearer to into its group; each group's
                # scanned members are walked backwards, so that those kept close up in order
                # against the unscanned rest
                group_start[i] = end
                with parallel(num_threads=_threads_for(n_scan * n_features, n_threads)):
                    for t in prange(-1, nb.size, schedule="dynamic"):
                        j = g if t < 0 else nb.index[t]
                        for k in range(group_start[j], scan_end[j]):
                            if not inline_rows and k + PREFETCH_AHEAD < scan_end[j]:
                                ck_prefetch_row(&X[members[k + PREFETCH_AHEAD], 0],
                                                n_features * sizeof(floating))
                            # (only a distance below D^2 moves the sample: the sums may
                            # stop there)
                            if inline_rows:
                                member_new_d2[k] = _sqdist_wide_below(
                                    &member_x[k, 0], &centers[i, 0], n_features, member_d2[k])
                            else:
                                member_new_d2[k] = _sqdist_wide_below(
                                    &X[members[k], 0], &centers[i, 0], n_features,
                                    member_d2[k])
                for t in range(-1, nb.size):
                    j = g if t < 0 else nb.index[t]
                    pos = scan_end[j]
                    k = pos - 1
                    while k >= group_start[j]:
                        m = members[k]
                        d = member_new_d2[k]
                        if d < member_d2[k]:
                            mass_old = member_w[k] * member_d2[k]
                            mass_new = member_w[k] * d
                            block_sum[m // SAMPLER_BLOCK] += (<double> mass_new
                                                              - <double> mass_old)
                            min_dist2[m] = d
                            labels[m] = <int> i
                            members[end] = <int> m
                            member_d2[end] = d
                            end += 1
                        else:
                            pos -= 1
                            members[pos] = <int> m
                            member_d2[pos] = member_d2[k]
                            member_w[pos] = member_w[k]
                            if inline_rows and pos != k:
                                _copy_row(&member_x[k, 0], &member_x[pos, 0], n_features)
                        k -= 1
                    group_size[j] -= pos - group_start[j]
                    group_start[j] = pos
                    radius2[j] = member_d2[pos] if group_size[j] > 0 else 0
                    radius[j] = sqrt(<double> radius2[j])
                group_size[i] = end - group_start[i]
                _sort_members(&members[group_start[i]], &member_d2[group_start[i]],
                              group_size[i])
                radius2[i] = member_d2[group_start[i]] if group_size[i] > 0 else 0
                radius[i] = sqrt(<double> radius2[i])
                for t in range(group_start[i], end):
                    member_w[t] = sample_weight[members[t]]
                    if inline_rows:
                        _copy_row(&X[members[t], 0], &member_x[t, 0], n_features)
                # the new group's neighbour lists, both ways, while they fit in
                # max_neighbours; the lists rebuilt for this step are freed
                for b in range(n_rebuilt):
                    _drop_neighbours(&neighbours[rebuilt[b]])
                n_rebuilt = 0
                if not dropped:
                    for j in range(i):
                        dist2 = new_center_dist2[j]
                        if _may_overlap(dist2, radius[i], radius[j]):
                            status = _push_neighbour_within(&neighbours[i], <int> j, dist2,
                                                            &n_capacity, max_neighbours)
                            if status == 0:
                                status = _push_neighbour_within(
                                    &neighbours[j], <int> i, dist2, &n_capacity,
                                    max_neighbours)
                            if status == 1:
                                dropped = True
                                for t in range(i + 1):
                                    _drop_neighbours(&neighbours[t])
                                break
                            if status == 2:
                                out_of_memory = True
                                break
                if out_of_memory:
                    break
    finally:
        for j in range(n_clusters):
            free(neighbours[j].index)
            free(neighbours[j].dist2)
        free(neighbours)
    if out_of_memory:
        raise MemoryError()
    return n_chosen, n_evals
