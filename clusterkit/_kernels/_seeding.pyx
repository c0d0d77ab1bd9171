"""Kernels of the D^2 seeders: k-means++ updates, greedy candidate potentials, AFK-MC^2 chains.

The seeders in :mod:`clusterkit._seeding` draw every random number; these kernels are
deterministic functions of their arguments and give bit-identical results for any
``n_threads``.
"""
import numpy as np

from cython cimport floating
from cython.parallel cimport parallel, prange, threadid

from ._blas cimport _gemm_nt
from ._dist cimport CHUNK_SIZE, _sqdist, _sqnorm, _use_gemm


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


# --- greedy k-means++: potential of each candidate ------------------------------------------

cdef void _row_sqnorms(const floating* X,           # IN  (n_rows, n_features)
                       Py_ssize_t n_rows,
                       Py_ssize_t n_features,
                       floating* out) noexcept nogil:  # OUT (n_rows,)
    """Squared norms of the rows, four rows at a time (as in _d2_update_chunk)."""
    cdef Py_ssize_t i = 0, k
    cdef floating s0, s1, s2, s3
    cdef const floating* x0
    while i + 4 <= n_rows:
        x0 = X + i * n_features
        s0 = s1 = s2 = s3 = 0
        for k in range(n_features):
            s0 += x0[k] * x0[k]
            s1 += x0[n_features + k] * x0[n_features + k]
            s2 += x0[2 * n_features + k] * x0[2 * n_features + k]
            s3 += x0[3 * n_features + k] * x0[3 * n_features + k]
        out[i] = s0
        out[i + 1] = s1
        out[i + 2] = s2
        out[i + 3] = s3
        i += 4
    while i < n_rows:
        out[i] = _sqnorm(X + i * n_features, n_features)
        i += 1


cdef double _sum(const floating* a, Py_ssize_t n) noexcept nogil:
    """Sum in double precision by four interleaved accumulators (a fixed order)."""
    cdef Py_ssize_t i = 0
    cdef double a0 = 0, a1 = 0, a2 = 0, a3 = 0
    while i + 4 <= n:
        a0 += a[i]
        a1 += a[i + 1]
        a2 += a[i + 2]
        a3 += a[i + 3]
        i += 4
    while i < n:
        a0 += a[i]
        i += 1
    return (a0 + a1) + (a2 + a3)


cdef void _d2_candidates_chunk(const floating* X,               # IN  (n_rows, n_features)
                               const floating* sample_weight,   # IN  (n_rows,)
                               const floating* min_dist2,       # IN  (n_rows,)
                               Py_ssize_t n_rows,
                               Py_ssize_t n_features,
                               const floating* candidates,      # IN  (n_candidates, n_features)
                               const floating* cand_sqnorm,     # IN  (n_candidates,)
                               Py_ssize_t n_candidates,
                               floating* tile,                  # TMP (n_candidates, CHUNK_SIZE)
                               floating* scratch,               # TMP (n_features, CHUNK_SIZE)
                               double* partial) noexcept nogil:  # OUT (n_candidates,)
    # The tile is candidate-major (one contiguous row of n_rows values per candidate), so that
    # every pass below runs over samples with unit stride and vectorises. Each row ends up
    # holding the terms w_i min(d2(x_i, candidate), min_dist2_i), summed in double.
    cdef Py_ssize_t i, k, l
    cdef floating ck, t, v
    cdef floating* row
    cdef const floating* xk
    if _use_gemm(n_features):
        # tile = ||c||^2 - 2 c.x by gemm, then + ||x||^2, clamped at zero against rounding
        for l in range(n_candidates):
            row = tile + l * n_rows
            for i in range(n_rows):
                row[i] = cand_sqnorm[l]
        _gemm_nt(<int> n_candidates, <int> n_rows, <int> n_features, -2.0, candidates,
                 <int> n_features, X, <int> n_features, 1.0, tile, <int> n_rows)
        _row_sqnorms(X, n_rows, n_features, scratch)
        for l in range(n_candidates):
            row = tile + l * n_rows
            for i in range(n_rows):
                v = row[i] + scratch[i]
                v = v if v > 0 else 0
                v = v if v < min_dist2[i] else min_dist2[i]
                row[i] = sample_weight[i] * v
            partial[l] = _sum(row, n_rows)
        return
    # few features: exact distances from a transposed copy of the chunk, one pass per feature;
    # the last pass also applies the min and the weight
    for i in range(n_rows):
        for k in range(n_features):
            scratch[k * n_rows + i] = X[i * n_features + k]
    for l in range(n_candidates):
        row = tile + l * n_rows
        if n_features == 1:
            for i in range(n_rows):
                row[i] = 0
        else:
            ck = candidates[l * n_features]
            for i in range(n_rows):
                t = scratch[i] - ck
                row[i] = t * t
        for k in range(1, n_features - 1):
            ck = candidates[l * n_features + k]
            xk = scratch + k * n_rows
            for i in range(n_rows):
                t = xk[i] - ck
                row[i] += t * t
        ck = candidates[l * n_features + n_features - 1]
        xk = scratch + (n_features - 1) * n_rows
        for i in range(n_rows):
            t = xk[i] - ck
            v = row[i] + t * t
            v = v if v < min_dist2[i] else min_dist2[i]
            row[i] = sample_weight[i] * v
        partial[l] = _sum(row, n_rows)


def d2_candidates(const floating[:, ::1] X,              # IN
                  const floating[::1] sample_weight,     # IN
                  const floating[:, ::1] candidates,     # IN
                  const floating[::1] min_dist2,         # IN
                  double[::1] potentials,                # OUT
                  int n_threads):
    """Potential of the centres so far plus each candidate, for greedy k-means++.

    ``potentials[l] = sum_i w_i min(min_dist2[i], ||X[i] - candidates[l]||^2)``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), dtype=floating
    sample_weight : ndarray of shape (n_samples,), dtype=floating
    candidates : ndarray of shape (n_candidates, n_features), dtype=floating
        Candidate centres (rows of ``X`` in k-means++).
    min_dist2 : ndarray of shape (n_samples,), dtype=floating
        Squared distance of each sample to its nearest centre so far.
    potentials : ndarray of shape (n_candidates,), dtype=float64
        Output: the weighted potential if the candidate were added. Accumulated in double
        precision for both dtypes.
    n_threads : int
        Number of OpenMP threads.

    Returns
    -------
    n_distance_evals : int
        ``n_samples * n_candidates``.

    Notes
    -----
    Samples are processed by chunks of ``CHUNK_SIZE``, all candidates per chunk. With
    ``n_features >= GEMM_MIN_FEATURES`` the distances come from one gemm per chunk (as
    ``||x||^2 + ||c||^2 - 2 x.c``, clamped at zero), below that from a direct loop. Every chunk
    writes its own row of partial potentials, and the rows are added in chunk order after the
    parallel region, so the sums are bit-identical for any ``n_threads``. When gemm runs,
    BLAS must be limited to one thread (``threadpoolctl``). Assumes valid input.
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t n_candidates = candidates.shape[0]
    cdef Py_ssize_t n_chunks = (n_samples + CHUNK_SIZE - 1) // CHUNK_SIZE
    cdef Py_ssize_t c, l, start, end
    cdef double total
    for l in range(n_candidates):
        potentials[l] = 0
    if n_samples == 0 or n_candidates == 0:
        return 0
    n_threads = max(1, min(n_threads, n_chunks))
    dtype = np.float32 if floating is float else np.float64
    cdef floating[::1] cand_sqnorm = np.einsum("ij,ij->i", candidates, candidates).astype(dtype)
    cdef floating[:, :, ::1] tiles = np.empty((n_threads, n_candidates, CHUNK_SIZE), dtype=dtype)
    cdef floating[:, :, ::1] scratch = np.empty((n_threads, max(n_features, 1), CHUNK_SIZE),
                                                dtype=dtype)
    cdef double[:, ::1] partials = np.empty((n_chunks, n_candidates), dtype=np.float64)
    with nogil:
        with parallel(num_threads=n_threads):
            for c in prange(n_chunks, schedule="static"):
                start = c * CHUNK_SIZE
                end = min(start + CHUNK_SIZE, n_samples)
                _d2_candidates_chunk(&X[start, 0], &sample_weight[start], &min_dist2[start],
                                     end - start, n_features, &candidates[0, 0],
                                     &cand_sqnorm[0], n_candidates, &tiles[threadid(), 0, 0],
                                     &scratch[threadid(), 0, 0], &partials[c, 0])
        for l in range(n_candidates):
            total = 0
            for c in range(n_chunks):
                total = total + partials[c, l]
            potentials[l] = total
    return n_samples * n_candidates


# --- AFK-MC^2: Metropolis-Hastings chains --------------------------------------------------

# Chain steps per parallel pass of afkmc2_chain: the serial share of the distance work is about
# AFKMC2_BLOCK / n_clusters, and there are n_clusters / AFKMC2_BLOCK thread synchronisations.
cdef enum:
    AFKMC2_BLOCK = 32


cdef floating _min_dist2_to_centers(const floating* x,          # IN  (n_features,)
                                    Py_ssize_t n_features,
                                    const floating* centers_T,  # IN  (n_features, stride)
                                    Py_ssize_t stride,
                                    Py_ssize_t n_centers,
                                    floating* dist) noexcept nogil:  # TMP (n_centers,)
    """Squared distance of ``x`` to the nearest of the first ``n_centers`` centres.

    Centres are stored transposed so that the inner loop runs over centres and vectorises.
    """
    cdef Py_ssize_t j, k
    cdef floating xk, t, best
    for j in range(n_centers):
        dist[j] = 0
    for k in range(n_features):
        xk = x[k]
        for j in range(n_centers):
            t = xk - centers_T[k * stride + j]
            dist[j] += t * t
    best = dist[0]
    for j in range(1, n_centers):
        if dist[j] < best:
            best = dist[j]
    return best


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
    ``AFKMC2_BLOCK``. Memory: a transposed copy of the centres, the block's candidate
    distances and one ``n_clusters`` row per thread. Assumes valid input.
    """
    cdef Py_ssize_t n_features = X.shape[1]
    cdef Py_ssize_t n_clusters = centers.shape[0]
    cdef Py_ssize_t chain_length = candidates.shape[1]
    cdef Py_ssize_t i, i_start, i_end, j, k, y, state, n_block
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
    with nogil:
        for k in range(n_features):
            centers[0, k] = X[first, k]
            centers_T[k, 0] = X[first, k]
        chosen[0] = <int> first
        i_start = 1
        while i_start < n_clusters:
            i_end = min(i_start + AFKMC2_BLOCK, n_clusters)
            n_block = (i_end - i_start) * chain_length
            with parallel(num_threads=n_threads):
                for j in prange(n_block, schedule="static"):
                    block_dist2[j] = _min_dist2_to_centers(
                        &X[candidates[i_start - 1 + j // chain_length, j % chain_length], 0],
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
                chosen[i] = <int> y
            i_start = i_end
    return chain_length * n_clusters * (n_clusters - 1) // 2
