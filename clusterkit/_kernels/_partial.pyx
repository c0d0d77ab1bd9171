"""Partial variational E-step: search over cluster neighbourhoods (Forster & Lücke 2018).

Three kernels implement Algs. 1 and 2 of the paper:

* :func:`partial_search` — the data loop: for each sample the search space
  ``S(n) = union_{c in K(n)} G_c`` (plus exploratory clusters), its exact squared distances,
  and the new ``K(n)`` (the ``C'`` nearest clusters of ``S(n)``);
* :func:`neighbourhoods_estimated` — Alg. 2: new ``G_c`` from the distances just computed
  (eq. 8), without any further distance evaluation;
* :func:`neighbourhoods_exhaustive` — Alg. 1: ``G_c`` from all ``C^2`` centre distances.
"""
import numpy as np

from cython cimport floating
from cython.parallel cimport parallel, prange, threadid
from libc.math cimport sqrt

from ._chunks cimport (_chunk_len, _chunk_stop, _chunk_threads, _n_chunks, _thread_scratch,
                       _TilePlan)
from ._dist cimport CHUNK_SIZE, _prepare_tiles, _sqdist_wide, _tile_from
from ._select cimport _push


# Entries per block of the exhaustive neighbourhood selection (see _exhaustive_chunk).
cdef enum:
    SELECT_BLOCK = 64


cdef long long _search_chunk(const floating* X,           # IN    (n_rows, n_features)
                             Py_ssize_t n_rows,
                             Py_ssize_t first_row,
                             Py_ssize_t n_features,
                             const floating* centers,     # IN    (n_clusters, n_features)
                             const int* neighbourhoods,   # IN    (n_clusters, G)
                             Py_ssize_t G,
                             const int* explore,          # IN    (n_rows, n_explore)
                             Py_ssize_t n_explore,
                             int* winners,                # INOUT (n_rows, n_winners)
                             floating* win_dist2,         # OUT   (n_rows, n_winners)
                             Py_ssize_t n_winners,
                             int* cand,                   # OUT   (n_rows, max_cand)
                             floating* cand_dist2,        # OUT   (n_rows, max_cand)
                             Py_ssize_t max_cand,
                             int* n_cand,                 # OUT   (n_rows,)
                             int* stamp) noexcept nogil:  # TMP   (n_clusters,)
    cdef Py_ssize_t i, a, g, k, s, n_filled
    cdef int c, j, mark
    cdef long long n_evals = 0
    cdef const floating* x
    cdef int* row_cand
    cdef floating* row_d2
    cdef int* row_win
    cdef floating* row_wd2
    for i in range(n_rows):
        # the sample's global index marks the clusters already in S(n): unique per sample, so
        # the stamp array never needs a reset
        mark = <int> (first_row + i)
        row_cand = cand + i * max_cand
        row_d2 = cand_dist2 + i * max_cand
        row_win = winners + i * n_winners
        row_wd2 = win_dist2 + i * n_winners
        # the old K(n) first, ascending: the selection below then mostly appends and rejects
        for a in range(n_winners):
            j = row_win[a]
            row_cand[a] = j
            stamp[j] = mark
        s = n_winners
        # then the rest of the neighbourhoods and the exploratory clusters; duplicates are
        # written too but not counted (no unpredictable branch); the guard only matters once
        # S(n) holds every slot of the row
        for a in range(n_winners):
            c = row_win[a]
            for g in range(1, G):  # G_c[0] is c itself, already in S(n)
                j = neighbourhoods[c * G + g]
                if s < max_cand:
                    row_cand[s] = j
                s += stamp[j] != mark
                stamp[j] = mark
        for a in range(n_explore):
            j = explore[i * n_explore + a]
            if s < max_cand:
                row_cand[s] = j
            s += stamp[j] != mark
            stamp[j] = mark
        # all distances first: without a selection branch in between, the independent
        # evaluations overlap in the pipeline
        x = X + i * n_features
        for k in range(s):
            row_d2[k] = _sqdist_wide(x, centers + row_cand[k] * n_features, n_features)
        # K(n) was read completely above; the row is now overwritten with the new K(n)
        n_filled = 0
        for k in range(s):
            _push(row_wd2, row_win, &n_filled, n_winners, row_d2[k], row_cand[k])
        n_cand[i] = <int> s
        n_evals += s
    return n_evals


def partial_search(const floating[:, ::1] X,              # IN
                   const floating[:, ::1] centers,        # IN
                   const int[:, ::1] neighbourhoods,      # IN
                   const int[:, ::1] explore,             # IN
                   int[:, ::1] winners,                   # INOUT
                   floating[:, ::1] win_dist2,            # OUT
                   int[:, ::1] cand,                      # OUT
                   floating[:, ::1] cand_dist2,           # OUT
                   int[::1] n_cand,                       # OUT
                   int n_threads):
    """Search each sample's neighbourhood for closer clusters (Forster & Lücke 2018, Alg. 1/2).

    For every sample ``n`` the search space is ``S(n) = union_{c in K(n)} G_c`` plus the
    sample's exploratory clusters (duplicates removed); the exact squared distance to every
    cluster of ``S(n)`` is computed and the ``C'`` nearest become the new ``K(n)``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), dtype=floating
    centers : ndarray of shape (n_clusters, n_features), dtype=floating
    neighbourhoods : ndarray of shape (n_clusters, G), dtype=int32
        ``G_c``: ``G`` distinct clusters per cluster, ``c`` itself first.
    explore : ndarray of shape (n_samples, n_explore), dtype=int32
        Exploratory clusters added to each ``S(n)`` (drawn by the caller; ``n_explore`` may
        be 0).
    winners : ndarray of shape (n_samples, n_winners), dtype=int32
        Input: the current ``K(n)`` (``C'`` distinct clusters per row). Output: the ``C'``
        nearest clusters of ``S(n)``, ordered by increasing distance, equal distances by
        cluster index.
    win_dist2 : ndarray of shape (n_samples, n_winners), dtype=floating
        Output: squared distances to the new ``winners``, ascending per row.
    cand : ndarray of shape (n_samples, max_cand), dtype=int32
        Output: ``S(n)`` in the order it was built (the old ``K(n)`` in row order, the other
        clusters of ``G_c`` for ``c`` in the old ``K(n)`` in row order, then the exploratory
        ones) in ``cand[n, :n_cand[n]]``; later entries are scratch. ``max_cand`` must be at
        least ``min(n_clusters, n_winners * G + n_explore)``.
    cand_dist2 : ndarray of shape (n_samples, max_cand), dtype=floating
        Output: squared distances to ``cand`` (same layout).
    n_cand : ndarray of shape (n_samples,), dtype=int32
        Output: ``|S(n)|``.
    n_threads : int
        Number of OpenMP threads.

    Returns
    -------
    n_distance_evals : int
        ``sum_n |S(n)|``.

    Notes
    -----
    Every old member of ``K(n)`` is in ``S(n)`` (``c in G_c``) and its distance is
    recomputed, so for fixed centres no sample's best distance (nor any of its ``C'`` sorted
    winner distances) can increase: the truncated free energy (eq. 10) never decreases
    (Prop. 1). Duplicates are removed in ``O(1)`` per candidate with a per-thread
    ``n_clusters``-sized stamp array, so the work per sample is ``O(|S(n)| D)`` and no
    ``n_samples x n_clusters`` array exists anywhere. Distances are computed directly (the
    candidates differ from sample to sample, so there is no common block for gemm). The old
    ``K(n)`` is offered to the new one first, in its ascending order: with centres that moved
    little, the selection then mostly appends and rejects (few mispredicted branches). Every
    output row is written by one thread: results do not depend on ``n_threads``. Assumes valid
    input.

    References
    ----------
    .. [1] D. Forster and J. Lücke, "Can clustering scale sublinearly with its clusters? A
       variational EM acceleration of GMMs and k-means", AISTATS 2018, Algs. 1 and 2.
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t n_clusters = centers.shape[0], G = neighbourhoods.shape[1]
    cdef Py_ssize_t n_explore = explore.shape[1], n_winners = winners.shape[1]
    cdef Py_ssize_t max_cand = cand.shape[1]
    cdef Py_ssize_t n_chunks = _n_chunks(n_samples, CHUNK_SIZE), c, start
    cdef long long n_evals = 0
    cdef const int* explore_ptr
    if n_samples == 0:
        return 0
    n_threads = _chunk_threads(n_threads, n_chunks)
    cdef int[:, ::1] stamps = np.full((n_threads, n_clusters), -1, dtype=np.int32)
    # a (n_samples, 0) array has no element to take the address of
    cdef int[::1] no_explore = np.zeros(1, dtype=np.int32)
    explore_ptr = &explore[0, 0] if n_explore > 0 else &no_explore[0]
    with nogil, parallel(num_threads=n_threads):
        for c in prange(n_chunks, schedule="static"):
            start = c * CHUNK_SIZE
            n_evals += _search_chunk(
                &X[start, 0], _chunk_stop(c, CHUNK_SIZE, n_samples) - start, start, n_features,
                &centers[0, 0],
                &neighbourhoods[0, 0], G, explore_ptr + start * n_explore, n_explore,
                &winners[start, 0], &win_dist2[start, 0], n_winners, &cand[start, 0],
                &cand_dist2[start, 0], max_cand, &n_cand[start], &stamps[threadid(), 0])
    return n_evals


cdef void _count_entries(const int* labels,       # IN  (n_samples,)
                         const int* n_cand,       # IN  (n_samples,)
                         Py_ssize_t first,
                         Py_ssize_t stop,
                         Py_ssize_t* counts) noexcept nogil:  # INOUT (n_clusters,)
    cdef Py_ssize_t i
    for i in range(first, stop):
        if labels[i] >= 0:
            counts[labels[i]] += n_cand[i]


cdef void _scatter_entries(const int* labels,          # IN    (n_samples,)
                           const int* cand,            # IN    (n_samples, max_cand)
                           const floating* cand_dist2, # IN    (n_samples, max_cand)
                           Py_ssize_t max_cand,
                           const int* n_cand,          # IN    (n_samples,)
                           Py_ssize_t first,
                           Py_ssize_t stop,
                           Py_ssize_t* cursor,         # INOUT (n_clusters,) next free entry
                           int* entry_cluster,         # OUT   (n_entries,)
                           floating* entry_dist2) noexcept nogil:  # OUT (n_entries,)
    cdef Py_ssize_t i, k, p
    cdef int c
    for i in range(first, stop):
        c = labels[i]
        if c < 0:
            continue
        p = cursor[c]
        for k in range(n_cand[i]):
            entry_cluster[p + k] = cand[i * max_cand + k]
            entry_dist2[p + k] = cand_dist2[i * max_cand + k]
        cursor[c] = p + n_cand[i]


cdef void _estimate_cluster(int c,
                            const int* entry_cluster,       # IN  (n_entries,) I_c's S(n)
                            const floating* entry_dist2,    # IN  (n_entries,)
                            Py_ssize_t n_entries,
                            bint use_dist,
                            double* acc,                    # TMP (n_clusters,) zero on entry/exit
                            int* cnt,                       # TMP (n_clusters,) zero on entry/exit
                            int* touched,                   # TMP (n_clusters,)
                            double* best_est,               # TMP (G,)
                            int* best_idx,                  # TMP (G,)
                            int* old,                       # TMP (G,)
                            int* neighbourhood,             # INOUT (G,) row c
                            Py_ssize_t G) noexcept nogil:
    cdef Py_ssize_t e, t, g, p, n_touched = 0, n_filled = 0
    cdef int j
    cdef bint taken
    cdef double d
    for e in range(n_entries):
        j = entry_cluster[e]
        if j == c:
            continue
        if cnt[j] == 0:
            touched[n_touched] = j
            n_touched += 1
        d = <double> entry_dist2[e]
        acc[j] += sqrt(d) if use_dist else d
        cnt[j] += 1
    for t in range(n_touched):
        j = touched[t]
        _push(best_est, best_idx, &n_filled, G - 1, acc[j] / cnt[j], j)
        acc[j] = 0
        cnt[j] = 0
    for g in range(G):
        old[g] = neighbourhood[g]
    neighbourhood[0] = c
    for g in range(n_filled):
        neighbourhood[1 + g] = best_idx[g]
    # fewer than G - 1 co-evaluated clusters: keep old neighbours (never a duplicate)
    p = 1 + n_filled
    g = 1
    while p < G and g < G:
        j = old[g]
        g += 1
        taken = j == c
        for t in range(n_filled):
            if best_idx[t] == j:
                taken = True
        if not taken:
            neighbourhood[p] = j
            p += 1


def neighbourhoods_estimated(const int[::1] labels,                # IN
                             const int[:, ::1] cand,               # IN
                             const floating[:, ::1] cand_dist2,    # IN
                             const int[::1] n_cand,                # IN
                             int[:, ::1] neighbourhoods,           # INOUT
                             bint use_dist,
                             int n_threads,
                             entry_cluster=None,                   # TMP
                             entry_dist2=None):                    # TMP
    """Estimate cluster neighbourhoods from computed distances (Forster & Lücke 2018, eq. 8).

    Let ``I_c`` be the samples whose best cluster is ``c``. For every ``c`` with ``I_c``
    non-empty and every ``j != c`` evaluated for at least one ``n in I_c``, the estimate is
    the mean of ``d2(x_n, mu_j)`` (or of ``d(x_n, mu_j)`` with ``use_dist``) over the
    ``n in I_c`` whose search space contained ``j``; the new ``G_c`` is ``c`` followed by the
    ``G - 1`` clusters with the smallest estimates (ties to the lower index). Clusters never
    evaluated together with ``c`` count as infinitely far.

    Parameters
    ----------
    labels : ndarray of shape (n_samples,), dtype=int32
        Best cluster of each sample (the first winner after :func:`partial_search`), or -1
        for a sample that is to be in no ``I_c`` (the caller's zero-weight samples).
    cand : ndarray of shape (n_samples, max_cand), dtype=int32
        Search spaces ``S(n)`` as written by :func:`partial_search`.
    cand_dist2 : ndarray of shape (n_samples, max_cand), dtype=floating
        Squared distances to ``cand``.
    n_cand : ndarray of shape (n_samples,), dtype=int32
        ``|S(n)|``.
    neighbourhoods : ndarray of shape (n_clusters, G), dtype=int32
        ``G_c``, updated in place. Rows of clusters with ``I_c`` empty are kept; when fewer
        than ``G - 1`` clusters were co-evaluated with ``c`` the remaining places keep old
        entries of ``G_c`` (in their order, skipping ones already chosen).
    use_dist : bool
        Average the plain distance (the paper's eq. 8) instead of the squared distance.
    n_threads : int
        Number of OpenMP threads.
    entry_cluster, entry_dist2 : ndarray of shape (n_entries,), dtype=int32 and floating, optional
        Scratch space for the entries sorted by label, ``n_entries >= n_cand.sum()`` (at most
        ``n_samples * max_cand``). Allocated when not given; a caller that estimates
        repeatedly passes the same arrays, so that fresh memory is not paged in on every
        call.

    Returns
    -------
    n_distance_evals : int
        Always 0: only distances computed by :func:`partial_search` are used.

    Notes
    -----
    Cost ``O(N |S(n)| + C)``, never ``O(C^2)``. Gathering each cluster's members from the
    ``N x max_cand`` rows would read them in random order, one cache miss after another;
    instead the entries ``(j, d2)`` of the labelled rows are first copied, in sample order,
    into one contiguous segment per cluster (a counting sort of the entries by label), and
    each cluster (one thread per cluster, ``prange`` over clusters) then sums its own segment
    into a per-thread ``n_clusters``-long accumulator that only resets the entries it touched.
    The counting and the copying pass split the samples into contiguous parts, one per
    thread, whose entries are placed part after part within each segment, so every segment
    holds its members in sample order: each sum has a fixed order and the result is
    bit-identical for any ``n_threads``. Sums are accumulated in float64. Assumes valid input.

    References
    ----------
    .. [1] D. Forster and J. Lücke, "Can clustering scale sublinearly with its clusters? A
       variational EM acceleration of GMMs and k-means", AISTATS 2018, eq. 8 and Alg. 2.
    """
    cdef Py_ssize_t n_samples = labels.shape[0], n_clusters = neighbourhoods.shape[0]
    cdef Py_ssize_t G = neighbourhoods.shape[1], max_cand = cand.shape[1]
    cdef Py_ssize_t c, p, t, n_parts, part, count, total = 0
    if n_samples == 0 or n_clusters == 0:
        return 0
    n_parts = max(1, min(n_threads, n_samples))
    part = (n_samples + n_parts - 1) // n_parts
    # cursor[p, c]: where part p writes its next entry of cluster c
    cdef Py_ssize_t[:, ::1] cursor = np.zeros((n_parts, n_clusters), dtype=np.intp)
    cdef Py_ssize_t[::1] segment = np.empty(n_clusters + 1, dtype=np.intp)
    with nogil, parallel(num_threads=n_parts):
        for p in prange(n_parts, schedule="static"):
            _count_entries(&labels[0], &n_cand[0], p * part, min((p + 1) * part, n_samples),
                           &cursor[p, 0])
    for c in range(n_clusters):  # counts -> start offsets: cluster by cluster, part by part
        segment[c] = total
        for p in range(n_parts):
            count = cursor[p, c]
            cursor[p, c] = total
            total += count
    segment[n_clusters] = total
    dtype = np.float32 if floating is float else np.float64
    total = max(total, 1)  # so that &entry_c[0] exists
    if entry_cluster is None or entry_cluster.shape[0] < total:
        entry_cluster = np.empty(total, dtype=np.int32)
    if entry_dist2 is None or entry_dist2.shape[0] < total:
        entry_dist2 = np.empty(total, dtype=dtype)
    cdef int[::1] entry_c = entry_cluster
    cdef floating[::1] entry_d2 = entry_dist2
    n_threads = max(1, min(n_threads, n_clusters))
    cdef double[:, ::1] acc = np.zeros((n_threads, n_clusters), dtype=np.float64)
    cdef int[:, ::1] cnt = np.zeros((n_threads, n_clusters), dtype=np.int32)
    cdef int[:, ::1] touched = np.empty((n_threads, n_clusters), dtype=np.int32)
    cdef double[:, ::1] best_est = np.empty((n_threads, G), dtype=np.float64)
    cdef int[:, ::1] best_idx = np.empty((n_threads, G), dtype=np.int32)
    cdef int[:, ::1] old = np.empty((n_threads, G), dtype=np.int32)
    with nogil:
        with parallel(num_threads=n_parts):
            for p in prange(n_parts, schedule="static"):
                _scatter_entries(&labels[0], &cand[0, 0], &cand_dist2[0, 0], max_cand,
                                 &n_cand[0], p * part, min((p + 1) * part, n_samples),
                                 &cursor[p, 0], &entry_c[0], &entry_d2[0])
        with parallel(num_threads=n_threads):
            for c in prange(n_clusters, schedule="dynamic", chunksize=16):
                if segment[c + 1] > segment[c]:
                    t = threadid()
                    _estimate_cluster(<int> c, &entry_c[segment[c]],
                                      &entry_d2[segment[c]], segment[c + 1] - segment[c],
                                      use_dist, &acc[t, 0], &cnt[t, 0], &touched[t, 0],
                                      &best_est[t, 0], &best_idx[t, 0], &old[t, 0],
                                      &neighbourhoods[c, 0], G)
    return 0


cdef inline void _nearest_others(const floating* row,  # IN  (n_clusters,) orders like d2(mu_c, .)
                                 Py_ssize_t n_clusters,
                                 Py_ssize_t c,
                                 Py_ssize_t n_keep,
                                 floating* vals,        # TMP (n_keep,)
                                 int* idx) noexcept nogil:  # OUT (n_keep,)
    """The ``n_keep`` smallest entries of ``row`` other than ``c``, ascending, ties to the lower
    index (``1 <= n_keep < n_clusters``)."""
    cdef Py_ssize_t block, b, b_end, j, n_filled = 0
    cdef floating worst
    cdef int n_below
    for block in range((n_clusters + SELECT_BLOCK - 1) // SELECT_BLOCK):
        b = block * SELECT_BLOCK
        b_end = min(b + SELECT_BLOCK, n_clusters)
        # Once n_keep are kept, a block with no entry strictly below the worst kept cannot
        # change them (its indices are all larger): one vectorised count skips it.
        if n_filled == n_keep:
            worst = vals[n_keep - 1]
            n_below = 0
            for j in range(b, b_end):
                n_below += row[j] < worst
            if n_below == 0:
                continue
        for j in range(b, b_end):
            if j != c:
                _push(vals, idx, &n_filled, n_keep, row[j], <int> j)


cdef void _exhaustive_chunk(const _TilePlan* plan,
                            const floating* centers,         # IN  (n_clusters, n_features)
                            Py_ssize_t first_row,
                            Py_ssize_t n_rows,
                            int* neighbourhoods,             # OUT (n_rows, G)
                            Py_ssize_t G) noexcept nogil:
    cdef Py_ssize_t n_clusters = plan.n_clusters, r, c
    # the thread's scratch: a (chunk_rows, n_clusters) tile, then G values
    cdef floating* tile = <floating*> _thread_scratch(plan)
    cdef floating* vals = tile + plan.chunk_rows * n_clusters
    # gemm path: rows hold ||mu_j||^2 - 2 mu_c.mu_j, which orders j exactly like d2(mu_c, mu_j)
    _tile_from(plan, centers + first_row * plan.n_features, n_rows, tile)
    for r in range(n_rows):
        c = first_row + r
        neighbourhoods[r * G] = <int> c
        if G > 1:
            _nearest_others(tile + r * n_clusters, n_clusters, c, G - 1, vals,
                            neighbourhoods + r * G + 1)


def neighbourhoods_exhaustive(const floating[:, ::1] centers,  # IN
                              int[:, ::1] neighbourhoods,      # OUT
                              int n_threads):
    """Exact cluster neighbourhoods from all centre distances (Forster & Lücke 2018, Alg. 1).

    Parameters
    ----------
    centers : ndarray of shape (n_clusters, n_features), dtype=floating
    neighbourhoods : ndarray of shape (n_clusters, G), dtype=int32
        Output: ``G_c`` = ``c`` followed by its ``G - 1`` nearest other centres in order of
        increasing distance (ties to the lower index). ``1 <= G <= n_clusters``.
    n_threads : int
        Number of OpenMP threads.

    Returns
    -------
    n_distance_evals : int
        ``n_clusters ** 2``, the count of Alg. 1 (symmetry and the diagonal are not exploited
        in the count, as in the paper's complexity analysis).

    Notes
    -----
    Chunks of centres against all centres, like
    :func:`clusterkit._kernels._assign.assign_full`, but with at most 256 KiB of distances
    per chunk (one tile per thread), so that every row is still in cache when its
    ``G - 1`` nearest are selected; the selection skips, with one vectorised count, each block
    of 64 entries that holds nothing below the worst kept so far. ``c`` is put first
    explicitly, so duplicated centres cannot push a cluster out of its own neighbourhood.
    Results do not depend on ``n_threads``. Assumes valid input.

    References
    ----------
    .. [1] D. Forster and J. Lücke, "Can clustering scale sublinearly with its clusters? A
       variational EM acceleration of GMMs and k-means", AISTATS 2018, Alg. 1 (first block).
    """
    cdef Py_ssize_t n_clusters = centers.shape[0], G = neighbourhoods.shape[1], c
    # tiles of at most 256 KiB, so that each row is still in cache when it is searched
    cdef Py_ssize_t rows = max(1, min(<Py_ssize_t> CHUNK_SIZE,
                                      (1 << 18) // (max(n_clusters, 1) * sizeof(floating))))
    cdef _TilePlan plan
    if n_clusters == 0:
        return 0
    keep = _prepare_tiles(&plan, centers, n_clusters, rows, n_threads,
                          (rows * n_clusters + G) * sizeof(floating))
    with nogil, parallel(num_threads=plan.n_threads):
        for c in prange(plan.n_chunks, schedule="static"):
            _exhaustive_chunk(&plan, &centers[0, 0], c * rows, _chunk_len(&plan, c),
                              &neighbourhoods[c * rows, 0], G)
    return n_clusters * n_clusters
