"""AFK-MC^2 seeding kernel: the Metropolis-Hastings chains of Bachem et al. (2016).

:class:`clusterkit.AFKMC2` draws every random number; the kernel is a deterministic function
of its arguments and gives bit-identical results for any ``n_threads``.
"""
import numpy as np

from cpython.exc cimport PyErr_CheckSignals
from cython cimport floating
from cython.parallel cimport parallel, prange, threadid

from ._dist cimport _center_dist2, _dist2_tile, _sqdist, _use_gemm


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
                 int n_threads,
                 Py_ssize_t begin=1,
                 Py_ssize_t end=-1):
    """Run the AFK-MC^2 Markov chains for centres ``begin .. end - 1`` (by default all).

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
    begin, end : int, default=1, -1
        The centres to choose (``end=-1``: up to ``n_clusters``). With ``begin > 1`` the
        centres ``0 .. begin - 1`` (and ``chosen``) are those of an earlier call: a caller
        can so report progress between calls. ``begin - 1`` should be a multiple of
        ``AFKMC2_BLOCK`` (32) so that the blocks, and so the results, are those of one call.

    Returns
    -------
    n_distance_evals : int
        ``chain_length * sum(i for i in range(begin, end))`` (each candidate for centre ``i``
        is compared with the ``i`` centres before it): ``chain_length * n_clusters *
        (n_clusters - 1) / 2`` for all.

    Notes
    -----
    The centres are fixed one after the other, but the candidates are known in advance. So
    the steps are taken in blocks of ``AFKMC2_BLOCK``: one parallel pass computes the distances
    of all the block's candidates to the centres known when the block starts (the bulk of the
    work; each candidate is handled by one thread, so results do not depend on ``n_threads``),
    then the block's steps run serially, each adding the distances to the few centres chosen
    within the block before running its chain. Every candidate of step ``i`` is still compared
    with exactly ``i`` centres; blocking only cuts the number of thread synchronisations by
    ``AFKMC2_BLOCK``; pending signals are handled between blocks (Ctrl-C raises
    ``KeyboardInterrupt``). With many features (``GEMM_MIN_FEATURES``) the parallel pass gathers
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
    end = n_clusters if end < 0 else min(end, n_clusters)
    begin = max(begin, 1)
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
        if begin == 1:
            for k in range(n_features):
                centers[0, k] = X[first, k]
            chosen[0] = <int> first
        for i in range(begin):  # the centres known so far, in the layouts the passes read
            for k in range(n_features):
                centers_T[k, i] = centers[i, k]
            if gemm:
                _set_center64(&centers[i, 0], n_features, &centers64[i, 0], &sqnorm64[i])
        i_start = begin
        while i_start < end:
            with gil:  # Ctrl-C between blocks of centres
                PyErr_CheckSignals()
            i_end = min(i_start + AFKMC2_BLOCK, end)
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
    return chain_length * (end * (end - 1) - begin * (begin - 1)) // 2 if end > begin else 0
