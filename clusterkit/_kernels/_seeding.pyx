"""Kernels of the D^2 seeders: D^2 updates, pruned greedy k-means++, AFK-MC^2 chains.

The seeders in :mod:`clusterkit._seeding` draw every random number; these kernels are
deterministic functions of their arguments and give bit-identical results for any
``n_threads``.
"""
import numpy as np

from cython cimport floating
from cython.parallel cimport parallel, prange, threadid
from libc.math cimport sqrt
from libc.stdlib cimport calloc, free, realloc

from ._dist cimport (CHUNK_SIZE, _dist2_tile, _sqdist, _sqdist_wide, _use_gemm,
                    ck_prefetch_row)


# --- k-means++: D^2 after a new centre -----------------------------------------------------

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
    cdef Py_ssize_t n_chunks = (n_samples + CHUNK_SIZE - 1) // CHUNK_SIZE
    cdef Py_ssize_t c, start, end
    if n_samples == 0:
        return 0
    n_threads = max(1, min(n_threads, n_chunks))
    with nogil, parallel(num_threads=n_threads):
        for c in prange(n_chunks, schedule="static"):
            start = c * CHUNK_SIZE
            end = min(start + CHUNK_SIZE, n_samples)
            _d2_update_chunk(&X[start, 0], end - start, n_features, &center[0],
                             &min_dist2[start])
    return n_samples


# --- distances to transposed centres (AFK-MC^2 and k-means++) --------------------------------

cdef void _center_dist2(const floating* candidate,    # IN  (n_features,)
                        Py_ssize_t n_features,
                        const floating* centers_T,    # IN  (n_features, stride)
                        Py_ssize_t stride,
                        Py_ssize_t n_centers,
                        floating* out) noexcept nogil:  # OUT (n_centers,)
    """Squared distances of ``candidate`` to the first ``n_centers`` centres (transposed, so
    that the inner loop runs over centres and vectorises; each sum runs over the features in
    order, as in ``_sqdist``)."""
    cdef Py_ssize_t j, k
    cdef floating ck, diff
    for j in range(n_centers):
        out[j] = 0
    for k in range(n_features):
        ck = candidate[k]
        for j in range(n_centers):
            diff = ck - centers_T[k * stride + j]
            out[j] += diff * diff


# --- AFK-MC^2: Metropolis-Hastings chains --------------------------------------------------

# Chain steps per parallel pass of afkmc2_chain: the serial share of the distance work is about
# AFKMC2_BLOCK / n_clusters, and there are n_clusters / AFKMC2_BLOCK thread synchronisations.
cdef enum:
    AFKMC2_BLOCK = 32

# Candidates per gemm call of the block pass (gathered into one contiguous buffer per thread):
# their distance tile to up to n_clusters centres is the pass's working memory.
cdef enum:
    AFKMC2_GATHER = 64


cdef floating _min_dist2_to_centers(const floating* x,          # IN  (n_features,)
                                    Py_ssize_t n_features,
                                    const floating* centers_T,  # IN  (n_features, stride)
                                    Py_ssize_t stride,
                                    Py_ssize_t n_centers,
                                    floating* dist) noexcept nogil:  # TMP (n_centers,)
    """Squared distance of ``x`` to the nearest of the first ``n_centers`` centres."""
    cdef Py_ssize_t j
    cdef floating best
    _center_dist2(x, n_features, centers_T, stride, n_centers, dist)
    best = dist[0]
    for j in range(1, n_centers):
        if dist[j] < best:
            best = dist[j]
    return best


cdef inline void _set_center64(const floating* center, Py_ssize_t n_features,
                               double* center64, double* sqnorm64) noexcept nogil:
    """Copy a new centre into the gemm path's float64 table, with its squared norm."""
    cdef Py_ssize_t k
    sqnorm64[0] = 0
    for k in range(n_features):
        center64[k] = center[k]
        sqnorm64[0] += center64[k] * center64[k]


cdef void _gemm_min_dist2(const floating* X,           # IN  (n_samples, n_features)
                          Py_ssize_t n_features,
                          const int* candidates,        # IN  (n_candidates,) rows of X
                          Py_ssize_t n_candidates,
                          const floating* centers,      # IN  (n_centers, n_features)
                          const double* centers64,      # IN  (n_centers, n_features) the same
                          const double* sqnorm64,       # IN  (n_centers,) their squared norms
                          Py_ssize_t n_centers,
                          double* rows,                 # TMP (n_candidates, n_features)
                          double* tile,                 # TMP (n_candidates, n_centers)
                          floating* out) noexcept nogil:  # OUT (n_candidates,)
    """Squared distance of each candidate to its nearest centre, as the direct loop computes
    it. One float64 gemm over the gathered candidates finds the nearest centre
    (``||c||^2 - 2 x . c`` orders the centres like the distance); float64, because in float32
    the expansion's cancellation swaps near neighbours of samples far from the origin. The
    nearest centre's distance is then computed directly, so the value is exact (0 for a
    candidate on a centre)."""
    cdef Py_ssize_t r, j, k, nearest
    cdef const floating* x
    cdef const double* row
    for r in range(n_candidates):
        x = X + candidates[r] * n_features
        for k in range(n_features):
            rows[r * n_features + k] = x[k]
    # (the transposed centres, argument 5, are only read without gemm)
    _dist2_tile(rows, n_candidates, n_features, centers64, centers64, sqnorm64, n_centers,
                tile)
    for r in range(n_candidates):
        row = tile + r * n_centers
        nearest = 0
        for j in range(1, n_centers):
            if row[j] < row[nearest]:
                nearest = j
        out[r] = _sqdist(X + candidates[r] * n_features, centers + nearest * n_features,
                         n_features)


def afkmc2_chain(const floating[:, ::1] X,              # IN
                 const floating[::1] sample_weight,     # IN
                 const double[::1] q,                   # IN
                 Py_ssize_t first,
                 const int[:, ::1] candidates,          # IN
                 const double[:, ::1] uniforms,         # IN
                 floating[:, ::1] centers,              # OUT
                 int[::1] chosen,                       # OUT
                 int n_threads):
    """Run the AFK-MC^2 Markov chains for centres ``1 .. n_clusters - 1``.

    For centre ``i`` the chain visits the pre-drawn candidates ``y_1 .. y_m`` (row ``i - 1``
    of ``candidates``) with target ``p(y) = w_y min_{l < i} ||x_y - c_l||^2``: ``y_1`` is always
    accepted, and ``y_j`` replaces the current state ``s`` if ``p(s) == 0`` or
    ``(p(y_j) / q(y_j)) / (p(s) / q(s)) > uniforms[i - 1, j]`` (Bachem et al. 2016, Alg. 1).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), dtype=floating
    sample_weight : ndarray of shape (n_samples,), dtype=floating
    q : ndarray of shape (n_samples,), dtype=float64
        The proposal distribution the candidates were drawn from (positive at every candidate).
    first : int
        Row of ``X`` chosen as the first centre.
    candidates : ndarray of shape (n_clusters - 1, chain_length), dtype=int32
        Candidate rows, drawn i.i.d. from ``q``.
    uniforms : ndarray of shape (n_clusters - 1, chain_length), dtype=float64
        Uniform numbers in [0, 1) for the acceptance tests (column 0 is not used).
    centers : ndarray of shape (n_clusters, n_features), dtype=floating
        Output: the chosen centres, ``centers[i] = X[chosen[i]]``.
    chosen : ndarray of shape (n_clusters,), dtype=int32
        Output: row of ``X`` of each centre (``chosen[0] = first``).
    n_threads : int
        Number of OpenMP threads.

    Returns
    -------
    n_distance_evals : int
        ``chain_length * n_clusters * (n_clusters - 1) / 2`` (each candidate for centre ``i``
        is compared with the ``i`` centres before it).

    Notes
    -----
    The centres are fixed one after the other, but the candidates are known in advance. So
    the steps are taken in blocks of ``AFKMC2_BLOCK``: one parallel pass computes the distances
    of all the block's candidates to the centres known when the block starts (the bulk of the
    work; each candidate is handled by one thread, so results do not depend on ``n_threads``),
    then the block's steps run serially, each adding the distances to the few centres chosen
    within the block before running its chain. Every candidate of step ``i`` is still compared
    with exactly ``i`` centres; blocking only cuts the number of thread synchronisations by
    ``AFKMC2_BLOCK``. With many features (``GEMM_MIN_FEATURES``) the parallel pass gathers
    fixed groups of ``AFKMC2_GATHER`` candidates and finds their nearest centres with one
    float64 gemm each, then computes those distances directly: 2-3 times faster than the
    direct loop from 64 features on (benchmarks/bench_lloyd.py, seeding), with the same
    values unless two centres are equally near within the float64 gemm's rounding. Memory: a
    transposed copy of the centres, the block's candidate distances, one ``n_clusters`` row
    per thread and, with gemm, a float64 copy of the centres and ``AFKMC2_GATHER`` gathered
    rows and their distance tile per thread. Assumes valid input.
    """
    cdef Py_ssize_t n_features = X.shape[1]
    cdef Py_ssize_t n_clusters = centers.shape[0]
    cdef Py_ssize_t chain_length = candidates.shape[1]
    cdef Py_ssize_t i, i_start, i_end, j, k, y, state, n_block, g, g_end
    cdef bint gemm = _use_gemm(n_features)
    cdef floating d, d_new
    cdef double p_state, ratio
    if n_clusters == 0:
        return 0
    n_threads = max(1, min(n_threads, AFKMC2_BLOCK * chain_length))
    dtype = np.float32 if floating is float else np.float64
    cdef floating[:, ::1] centers_T = np.empty((n_features, n_clusters), dtype=dtype)
    cdef floating[:, ::1] dist = np.empty((n_threads, n_clusters), dtype=dtype)
    cdef floating[::1] block_dist2 = np.empty(max(AFKMC2_BLOCK * chain_length, 1), dtype=dtype)
    cdef double[::1] p = np.empty(max(chain_length, 1), dtype=np.float64)
    # the gemm path's float64 copy of the centres, and per-thread candidates and tile
    cdef Py_ssize_t n_gather = AFKMC2_GATHER if gemm else 0
    cdef double[:, ::1] centers64 = np.empty((n_clusters if gemm else 1, n_features))
    cdef double[::1] sqnorm64 = np.empty(n_clusters if gemm else 1)
    cdef double[:, ::1] gathered = np.empty((n_threads, n_gather * n_features + 1))
    cdef double[:, ::1] tiles = np.empty((n_threads, n_gather * n_clusters + 1))
    with nogil:
        for k in range(n_features):
            centers[0, k] = X[first, k]
            centers_T[k, 0] = X[first, k]
        if gemm:
            _set_center64(&centers[0, 0], n_features, &centers64[0, 0], &sqnorm64[0])
        chosen[0] = <int> first
        i_start = 1
        while i_start < n_clusters:
            i_end = min(i_start + AFKMC2_BLOCK, n_clusters)
            n_block = (i_end - i_start) * chain_length
            with parallel(num_threads=n_threads):
                if gemm:
                    # fixed groups of candidates, so results do not depend on n_threads
                    for g in prange(0, n_block, n_gather, schedule="static"):
                        g_end = min(g + n_gather, n_block)
                        # the block's candidate rows are contiguous: g indexes them flat
                        _gemm_min_dist2(&X[0, 0], n_features, &candidates[i_start - 1, 0] + g,
                                        g_end - g, &centers[0, 0], &centers64[0, 0],
                                        &sqnorm64[0], i_start, &gathered[threadid(), 0],
                                        &tiles[threadid(), 0], &block_dist2[g])
                else:
                    for j in prange(n_block, schedule="static"):
                        block_dist2[j] = _min_dist2_to_centers(
                            &X[candidates[i_start - 1 + j // chain_length, j % chain_length],
                               0],
                            n_features, &centers_T[0, 0], n_clusters, i_start,
                            &dist[threadid(), 0])
            for i in range(i_start, i_end):
                for j in range(chain_length):
                    y = candidates[i - 1, j]
                    d = block_dist2[(i - i_start) * chain_length + j]
                    if i > i_start:
                        d_new = _min_dist2_to_centers(&X[y, 0], n_features,
                                                      &centers_T[0, i_start], n_clusters,
                                                      i - i_start, &dist[0, 0])
                        if d_new < d:
                            d = d_new
                    p[j] = sample_weight[y] * <double> d
                state = 0
                for j in range(1, chain_length):
                    p_state = p[state]
                    if p_state == 0:
                        state = j
                        continue
                    ratio = ((p[j] / q[candidates[i - 1, j]])
                             / (p_state / q[candidates[i - 1, state]]))
                    if ratio > uniforms[i - 1, j]:
                        state = j
                y = candidates[i - 1, state]
                for k in range(n_features):
                    centers[i, k] = X[y, k]
                    centers_T[k, i] = X[y, k]
                if gemm:
                    _set_center64(&centers[i, 0], n_features, &centers64[i, 0], &sqnorm64[i])
                chosen[i] = <int> y
            i_start = i_end
    return chain_length * n_clusters * (n_clusters - 1) // 2


# --- greedy k-means++ with triangle-inequality pruning ---------------------------------------

# Rows per block of the two-level D^2 sampler: the block sums are kept up to date as D^2
# changes, so a draw costs n_samples / SAMPLER_BLOCK + SAMPLER_BLOCK additions.
cdef enum:
    SAMPLER_BLOCK = 64


# Rows ahead whose cache lines are requested while scanning a group's members in X.
cdef enum:
    PREFETCH_AHEAD = 4


# Rows of up to this many bytes (32 float32 or 16 float64 features) kmeanspp keeps in group
# order next to the members: streaming that copy beats gathering such short rows from X
# (float32 with 20-32 features: seeding 1.6-2 times faster), while longer rows are scored
# faster group by group from X (64 float64 features: 1.7 times).
cdef enum:
    INLINE_MAX_ROW_BYTES = 128


cdef inline void _copy_row(const floating* src, floating* dst,
                           Py_ssize_t n_features) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(n_features):
        dst[k] = src[k]


cdef Py_ssize_t _invert_cumsum(const double* cumsum, Py_ssize_t n,
                               double value) noexcept nogil:
    """``searchsorted(cumsum, value, 'right')``, clamped to the last entry with positive mass
    (the first index whose cumulative sum reaches the total)."""
    cdef Py_ssize_t lo = 0, hi = n, mid, last_lo = 0, last_hi = n
    cdef double total = cumsum[n - 1]
    while lo < hi:
        mid = (lo + hi) // 2
        if cumsum[mid] <= value:
            lo = mid + 1
        else:
            hi = mid
    while last_lo < last_hi:
        mid = (last_lo + last_hi) // 2
        if cumsum[mid] < total:
            last_lo = mid + 1
        else:
            last_hi = mid
    return lo if lo < last_lo else last_lo


cdef void _prefix_sums(const double* values, double* out, Py_ssize_t n) noexcept nogil:
    cdef double total = 0
    cdef Py_ssize_t i
    for i in range(n):
        total = total + values[i]
        out[i] = total


cdef double _block_mass(const floating* sample_weight, const floating* min_dist2,
                        Py_ssize_t start, Py_ssize_t end, double* cumsum) noexcept nogil:
    """Cumulative ``w D^2`` of rows ``start .. end - 1`` in double (the product is rounded to
    the data's dtype first); writes it to ``cumsum`` if given, returns the block's total."""
    cdef double total = 0
    cdef Py_ssize_t r
    cdef floating mass
    for r in range(start, end):
        mass = sample_weight[r] * min_dist2[r]
        total = total + <double> mass
        if cumsum != NULL:
            cumsum[r - start] = total
    return total


cdef inline bint _before(floating d2_a, int row_a, floating d2_b, int row_b) noexcept nogil:
    """Order of group members: decreasing D^2, then increasing row (a strict total order)."""
    return d2_a > d2_b or (d2_a == d2_b and row_a < row_b)


cdef void _sort_members(int* rows, floating* d2, Py_ssize_t n) noexcept nogil:
    """Sort the parallel arrays in place by ``_before``: quicksort with a median-of-three
    pivot, recursing into the smaller part (depth ``O(log n)``), insertion sort below 16."""
    cdef Py_ssize_t lo, hi, i, j, mid
    cdef floating pd, td
    cdef int pr, tr
    while n > 16:
        mid = n // 2
        # median of three to position 0 (the pivot)
        if _before(d2[mid], rows[mid], d2[0], rows[0]):
            d2[0], d2[mid] = d2[mid], d2[0]
            rows[0], rows[mid] = rows[mid], rows[0]
        if _before(d2[n - 1], rows[n - 1], d2[0], rows[0]):
            d2[0], d2[n - 1] = d2[n - 1], d2[0]
            rows[0], rows[n - 1] = rows[n - 1], rows[0]
        if _before(d2[n - 1], rows[n - 1], d2[mid], rows[mid]):
            d2[mid], d2[n - 1] = d2[n - 1], d2[mid]
            rows[mid], rows[n - 1] = rows[n - 1], rows[mid]
        d2[0], d2[mid] = d2[mid], d2[0]
        rows[0], rows[mid] = rows[mid], rows[0]
        pd, pr = d2[0], rows[0]
        i, j = 1, n - 1
        while True:
            while i <= j and _before(d2[i], rows[i], pd, pr):
                i += 1
            while i <= j and _before(pd, pr, d2[j], rows[j]):
                j -= 1
            if i >= j:
                break
            d2[i], d2[j] = d2[j], d2[i]
            rows[i], rows[j] = rows[j], rows[i]
            i += 1
            j -= 1
        # the pivot goes between the parts: [0, j) before it, [j + 1, n) after it
        d2[0], d2[j] = d2[j], d2[0]
        rows[0], rows[j] = rows[j], rows[0]
        if j < n - 1 - j:
            _sort_members(rows, d2, j)
            rows += j + 1
            d2 += j + 1
            n -= j + 1
        else:
            _sort_members(rows + j + 1, d2 + j + 1, n - j - 1)
            n = j
    for i in range(1, n):
        td, tr = d2[i], rows[i]
        j = i
        while j > 0 and _before(td, tr, d2[j - 1], rows[j - 1]):
            d2[j] = d2[j - 1]
            rows[j] = rows[j - 1]
            j -= 1
        d2[j], rows[j] = td, tr


cdef struct _Neighbours:
    # centres whose group may hold samples a point of this group's ball can take over
    int* index
    double* dist2    # squared distance between the two centres
    Py_ssize_t size
    Py_ssize_t capacity


cdef bint _push_neighbour(_Neighbours* nb, int j, double dist2) noexcept nogil:
    """Append ``(j, dist2)``; returns False if memory ran out."""
    cdef Py_ssize_t capacity
    cdef int* index
    cdef double* dists
    if nb.size == nb.capacity:
        capacity = max(8, 2 * nb.capacity)
        index = <int*> realloc(nb.index, capacity * sizeof(int))
        if index == NULL:
            return False
        nb.index = index
        dists = <double*> realloc(nb.dist2, capacity * sizeof(double))
        if dists == NULL:
            return False
        nb.dist2 = dists
        nb.capacity = capacity
    nb.index[nb.size] = j
    nb.dist2[nb.size] = dist2
    nb.size += 1
    return True


cdef inline bint _may_overlap(double dist2, double r_a, double r_b) noexcept nogil:
    """Whether two groups with these largest ``D``, whose centres are ``sqrt(dist2)`` apart,
    can exchange samples: ``d < 2 (r_a + r_b)``, with a margin against rounding."""
    cdef double reach = 2 * (r_a + r_b) * (1 + 1e-6)
    return dist2 < reach * reach


cdef double _group_gain(const floating* X,            # IN  (n_samples, n_features)
                        Py_ssize_t n_features,
                        const floating* candidate,    # IN  (n_features,)
                        floating quarter,             # d(candidate, centre)^2 / 4
                        Py_ssize_t start,
                        Py_ssize_t stop,
                        const int* members,           # IN
                        const floating* member_d2,    # IN
                        const floating* member_w,     # IN
                        const floating* member_x,     # IN  (rows in member order, or NULL)
                        Py_ssize_t* n_evals) noexcept nogil:
    """Decrease of ``sum w D^2`` over one group's members if ``candidate`` became a centre.

    A member ``x`` of the group of centre ``c_j`` can only come closer to ``c`` than to ``c_j``
    if ``d(c, c_j)^2 / 4 < D^2(x)`` (triangle inequality); members are sorted by decreasing
    ``D^2``, so the scan stops at the first one that fails the test.
    """
    cdef Py_ssize_t t = start, end = start, k
    cdef floating d0, d1, d2, d3, t0, t1, t2, t3, ck
    cdef const floating* x0
    cdef double delta, g0 = 0, g1 = 0, g2 = 0, g3 = 0
    while end < stop and quarter < member_d2[end]:
        end += 1
    n_evals[0] += end - start
    if member_x != NULL:
        # four members at a time: independent sums hide the latency of the additions
        while t + 4 <= end:
            x0 = member_x + t * n_features
            d0 = d1 = d2 = d3 = 0
            for k in range(n_features):
                ck = candidate[k]
                t0 = x0[k] - ck
                t1 = x0[n_features + k] - ck
                t2 = x0[2 * n_features + k] - ck
                t3 = x0[3 * n_features + k] - ck
                d0 += t0 * t0
                d1 += t1 * t1
                d2 += t2 * t2
                d3 += t3 * t3
            delta = <double> member_d2[t] - <double> d0
            g0 += <double> member_w[t] * (delta if delta > 0 else 0)
            delta = <double> member_d2[t + 1] - <double> d1
            g1 += <double> member_w[t + 1] * (delta if delta > 0 else 0)
            delta = <double> member_d2[t + 2] - <double> d2
            g2 += <double> member_w[t + 2] * (delta if delta > 0 else 0)
            delta = <double> member_d2[t + 3] - <double> d3
            g3 += <double> member_w[t + 3] * (delta if delta > 0 else 0)
            t += 4
    while t < end:
        if member_x != NULL:
            d0 = _sqdist_wide(member_x + t * n_features, candidate, n_features)
        else:
            d0 = _sqdist_wide(X + members[t] * n_features, candidate, n_features)
        delta = <double> member_d2[t] - <double> d0
        g0 += <double> member_w[t] * (delta if delta > 0 else 0)
        t += 1
    return (g0 + g1) + (g2 + g3)


cdef double _candidate_gain(const floating* X,               # IN  (n_samples, n_features)
                            Py_ssize_t n_features,
                            Py_ssize_t row,                  # the candidate: X[row]
                            const floating* centers,         # IN  (n_centers, n_features)
                            Py_ssize_t g,                    # the candidate's group
                            const _Neighbours* nb,           # IN  group g's neighbours
                            const floating* radius2,         # IN  (n_centers,)
                            const Py_ssize_t* group_start,   # IN  (n_centers,)
                            const Py_ssize_t* group_size,    # IN  (n_centers,)
                            const int* members,              # IN
                            const floating* member_d2,       # IN
                            const floating* member_w,        # IN
                            const floating* member_x,        # IN  (or NULL)
                            Py_ssize_t* n_evals) noexcept nogil:
    """Decrease of the weighted potential if ``X[row]`` became a centre: the gains over its
    own group ``g`` and the groups on ``g``'s neighbour list (no other group can lose a
    sample to it)."""
    cdef const floating* candidate = X + row * n_features
    cdef Py_ssize_t t, j
    cdef floating quarter
    cdef double gain = 0
    n_evals[0] = nb.size + 1
    for t in range(-1, nb.size):
        j = g if t < 0 else nb.index[t]
        quarter = <floating> 0.25 * _sqdist_wide(candidate, centers + j * n_features,
                                                 n_features)
        if quarter < radius2[j]:
            gain += _group_gain(X, n_features, candidate, quarter, group_start[j],
                                group_start[j] + group_size[j], members, member_d2, member_w,
                                member_x, n_evals)
    return gain


cdef Py_ssize_t _group_entries(Py_ssize_t step,
                               const Py_ssize_t[::1] cand,
                               const int[::1] labels,
                               const _Neighbours* neighbours,
                               const floating* quarters,          # IN  (n_trials, stride)
                               Py_ssize_t stride,
                               const floating[::1] radius2,
                               int[::1] slot_stamp,               # TMP (n_clusters,)
                               Py_ssize_t[::1] slot_of_group,     # TMP (n_clusters,)
                               Py_ssize_t[::1] touched,           # OUT group of each slot
                               Py_ssize_t[::1] slot_start,        # OUT (n_touched + 1,)
                               Py_ssize_t[::1] slot_entries,      # OUT entries by slot
                               Py_ssize_t[::1] entry_cand,        # OUT
                               floating[::1] entry_q,             # OUT
                               Py_ssize_t[::1] trial_evals,       # OUT centre distances
                               Py_ssize_t* n_touched) noexcept nogil:
    """List the (group, candidate) pairs that pruning cannot rule out, grouped by group.

    Entry ``e`` is candidate ``entry_cand[e]`` with quarter squared distance ``entry_q[e]``
    to the group's centre; the entries of slot ``b`` (group ``touched[b]``) are
    ``slot_entries[slot_start[b]:slot_start[b + 1]]``. Returns the number of entries.
    """
    cdef Py_ssize_t l, t, j, g, b, e, n_entries = 0, n_slots = 0
    cdef const _Neighbours* nb
    for l in range(cand.shape[0]):
        g = labels[cand[l]]
        nb = &neighbours[g]
        trial_evals[l] = nb.size + 1
        for t in range(-1, nb.size):
            j = g if t < 0 else nb.index[t]
            if quarters[l * stride + t + 1] < radius2[j]:
                if slot_stamp[j] != step:
                    slot_stamp[j] = <int> step
                    slot_of_group[j] = n_slots
                    touched[n_slots] = j
                    slot_start[n_slots + 1] = 0
                    n_slots += 1
                slot_start[slot_of_group[j] + 1] += 1
                entry_cand[n_entries] = l
                entry_q[n_entries] = quarters[l * stride + t + 1]
                n_entries += 1
    slot_start[0] = 0
    for b in range(n_slots):
        slot_start[b + 1] += slot_start[b]
    # place the entries by slot, in entry order (the cursor of slot b is slot_start[b] plus
    # the entries placed so far, kept in slot_of_group of its group)
    for b in range(n_slots):
        slot_of_group[touched[b]] = slot_start[b]
    e = 0
    for l in range(cand.shape[0]):
        g = labels[cand[l]]
        nb = &neighbours[g]
        for t in range(-1, nb.size):
            j = g if t < 0 else nb.index[t]
            if quarters[l * stride + t + 1] < radius2[j]:
                slot_entries[slot_of_group[j]] = e
                slot_of_group[j] += 1
                e += 1
    n_touched[0] = n_slots
    return n_entries


cdef void _score_group(const floating* X,             # IN  (n_samples, n_features)
                       Py_ssize_t n_features,
                       const Py_ssize_t[::1] cand,    # IN  candidate rows
                       Py_ssize_t start,
                       Py_ssize_t stop,
                       const int* members,
                       const floating* member_d2,
                       const floating* member_w,
                       const Py_ssize_t* entries,     # IN  this group's entries
                       Py_ssize_t n_group_entries,
                       const Py_ssize_t* entry_cand,
                       const floating* entry_q,
                       double* entry_gain,            # OUT
                       Py_ssize_t* entry_evals) noexcept nogil:  # OUT
    """Gains of several candidates over one group, one candidate after the other: the
    group's leading rows, read for the first candidate, are still in cache for the next (each
    candidate stops at its first member with ``entry_q >= D^2``)."""
    cdef Py_ssize_t t, a, e, n_evals
    cdef floating d, q
    cdef double delta, gain
    cdef const floating* c
    for a in range(n_group_entries):
        e = entries[a]
        q = entry_q[e]
        c = X + cand[entry_cand[e]] * n_features
        gain = 0
        t = start
        while t < stop and q < member_d2[t]:
            if t + PREFETCH_AHEAD < stop:
                ck_prefetch_row(X + members[t + PREFETCH_AHEAD] * n_features,
                                n_features * sizeof(floating))
            d = _sqdist_wide(X + members[t] * n_features, c, n_features)
            delta = <double> member_d2[t] - <double> d
            gain += <double> member_w[t] * (delta if delta > 0 else 0)
            t += 1
        entry_gain[e] = gain
        entry_evals[e] = t - start


def kmeanspp(const floating[:, ::1] X,             # IN
             const floating[::1] sample_weight,    # IN
             Py_ssize_t first,
             const double[:, ::1] uniforms,        # IN
             floating[:, ::1] centers,             # OUT
             int[::1] chosen,                      # OUT
             int[::1] labels,                      # OUT
             floating[::1] min_dist2,              # OUT
             int n_threads):
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

    With short rows (``n_features * itemsize <= INLINE_MAX_ROW_BYTES``, 128 bytes) the rows
    are kept in group order next to the members, and the candidates are scored in parallel,
    each streaming through its groups. Longer rows stay in ``X``, and the scoring runs group
    by group in parallel, all of a group's candidates one after the other while its leading
    rows are in cache. The chosen centre's distances are computed in parallel, too; the
    sampling and the moves run on one thread. Results do not depend on ``n_threads``. Memory
    ``O(n_samples + L n_clusters + sum of list lengths)``, plus, with short rows, room for
    three copies of them (the group-ordered rows with space to append, and a buffer to
    compact them). Assumes valid input.
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t n_clusters = centers.shape[0], n_trials = uniforms.shape[1]
    cdef Py_ssize_t n_blocks = (n_samples + SAMPLER_BLOCK - 1) // SAMPLER_BLOCK
    cdef Py_ssize_t capacity = 2 * n_samples
    cdef Py_ssize_t i, j, k, l, t, m, b, g, row, best, end, pos, stop, n_scan, n_chosen = 1
    cdef Py_ssize_t n_evals = n_samples
    cdef floating d, mass_old, mass_new
    cdef double target, best_gain, dist2
    cdef bint out_of_memory = False
    cdef _Neighbours* nb
    cdef _Neighbours* neighbours
    dtype = np.float32 if floating is float else np.float64
    cdef floating[:, ::1] centers_T = np.empty((n_features, n_clusters), dtype=dtype)
    cdef floating[::1] new_center_dist2 = np.empty(n_clusters, dtype=dtype)
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
    # group-major scoring (many features): per candidate, the quarter squared distances to
    # the centres of its scan list; per (group, candidate) pair an entry with its partial
    # gain; the touched groups ("slots") list their entries contiguously
    cdef Py_ssize_t n_entries = 0, n_touched = 0
    cdef Py_ssize_t max_entries = 0 if inline_rows else n_trials * n_clusters
    cdef floating[:, ::1] quarters = np.empty(
        (max(n_trials, 1), 1 if inline_rows else n_clusters), dtype=dtype)
    cdef int[::1] slot_stamp = np.full(n_clusters, -1, dtype=np.int32)
    cdef Py_ssize_t[::1] slot_of_group = np.zeros(n_clusters, dtype=np.intp)
    cdef Py_ssize_t[::1] touched = np.zeros(n_clusters, dtype=np.intp)
    cdef Py_ssize_t[::1] slot_start = np.zeros(n_clusters + 1, dtype=np.intp)
    cdef Py_ssize_t[::1] slot_entries = np.zeros(max(max_entries, 1), dtype=np.intp)
    cdef Py_ssize_t[::1] entry_cand = np.zeros(max(max_entries, 1), dtype=np.intp)
    cdef floating[::1] entry_q = np.zeros(max(max_entries, 1), dtype=dtype)
    cdef double[::1] entry_gain = np.zeros(max(max_entries, 1), dtype=np.float64)
    cdef Py_ssize_t[::1] entry_evals = np.zeros(max(max_entries, 1), dtype=np.intp)
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
            for i in range(1, n_clusters):
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
                        pos = 0
                        for t in range(nb.size):
                            if _may_overlap(nb.dist2[t], radius[g], radius[nb.index[t]]):
                                nb.index[pos] = nb.index[t]
                                nb.dist2[pos] = nb.dist2[t]
                                pos += 1
                        nb.size = pos
                best = 0
                if n_trials > 1 and inline_rows:
                    with parallel(num_threads=n_threads):
                        for l in prange(n_trials, schedule="dynamic"):
                            gains[l] = _candidate_gain(
                                &X[0, 0], n_features, cand[l], &centers[0, 0], labels[cand[l]],
                                &neighbours[labels[cand[l]]], &radius2[0], &group_start[0],
                                &group_size[0], &members[0], &member_d2[0], &member_w[0],
                                member_x_ptr, &trial_evals[l])
                elif n_trials > 1:
                    # many features: score group by group, so that a group's leading rows,
                    # once in cache, serve every candidate that needs them
                    with parallel(num_threads=n_threads):
                        for l in prange(n_trials, schedule="dynamic"):
                            g = labels[cand[l]]
                            for t in range(-1, neighbours[g].size):
                                j = g if t < 0 else neighbours[g].index[t]
                                quarters[l, t + 1] = <floating> 0.25 * _sqdist_wide(
                                    &X[cand[l], 0], &centers[j, 0], n_features)
                    n_entries = _group_entries(
                        i, cand, labels, neighbours, &quarters[0, 0], n_clusters, radius2,
                        slot_stamp, slot_of_group, touched, slot_start, slot_entries, entry_cand,
                        entry_q, trial_evals, &n_touched)
                    with parallel(num_threads=n_threads):
                        for b in prange(n_touched, schedule="dynamic"):
                            _score_group(&X[0, 0], n_features, cand, group_start[touched[b]],
                                         group_start[touched[b]] + group_size[touched[b]],
                                         &members[0], &member_d2[0], &member_w[0],
                                         &slot_entries[slot_start[b]],
                                         slot_start[b + 1] - slot_start[b], &entry_cand[0],
                                         &entry_q[0], &entry_gain[0], &entry_evals[0])
                    for l in range(n_trials):
                        gains[l] = 0
                    for b in range(n_entries):
                        gains[entry_cand[b]] += entry_gain[b]
                        trial_evals[entry_cand[b]] += entry_evals[b]
                if n_trials > 1:
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
                with parallel(num_threads=n_threads):
                    for t in prange(-1, nb.size, schedule="dynamic"):
                        j = g if t < 0 else nb.index[t]
                        for k in range(group_start[j], scan_end[j]):
                            if not inline_rows and k + PREFETCH_AHEAD < scan_end[j]:
                                ck_prefetch_row(&X[members[k + PREFETCH_AHEAD], 0],
                                                n_features * sizeof(floating))
                            if inline_rows:
                                member_new_d2[k] = _sqdist_wide(
                                    &member_x[k, 0], &centers[i, 0], n_features)
                            else:
                                member_new_d2[k] = _sqdist_wide(
                                    &X[members[k], 0], &centers[i, 0], n_features)
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
                # the new group's neighbour lists, both ways
                for j in range(i):
                    dist2 = new_center_dist2[j]
                    if _may_overlap(dist2, radius[i], radius[j]):
                        if not (_push_neighbour(&neighbours[i], <int> j, dist2)
                                and _push_neighbour(&neighbours[j], <int> i, dist2)):
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
