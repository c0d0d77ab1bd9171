"""AFK-MC^2 seeding kernel: the Metropolis-Hastings chains of Bachem et al. (2016).

:class:`clusterkit.AFKMC2` draws every random number; the kernel is a deterministic function
of its arguments and gives bit-identical results for any ``n_threads``.
"""
import numpy as np

from cpython.exc cimport PyErr_CheckSignals
from cython cimport floating
from cython.parallel cimport parallel, prange, threadid

from ._chunks cimport _chunk_stop, _n_chunks
from ._dist cimport _center_dist2, _dist2_tile, _sqdist, _sqdist_wide, _use_gemm
from ._openmp cimport _threads_for


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


cdef inline void _set_center(const floating* row,       # IN  (n_features,)
                             Py_ssize_t i,
                             floating[:, ::1] centers,     # OUT row i
                             floating[:, ::1] centers_T,   # OUT column i
                             bint gemm,
                             double[:, ::1] centers64,     # OUT row i, with gemm
                             double[::1] sqnorm64) noexcept nogil:  # OUT entry i, with gemm
    """Centre ``i`` := ``row`` in every layout the passes read: the rows, transposed, and for
    gemm in float64 with its squared norm."""
    cdef Py_ssize_t k
    for k in range(centers.shape[1]):
        centers[i, k] = row[k]
        centers_T[k, i] = row[k]
    if gemm:
        sqnorm64[i] = 0
        for k in range(centers.shape[1]):
            centers64[i, k] = centers[i, k]
            sqnorm64[i] += centers64[i, k] * centers64[i, k]


cdef inline void _known_centers(const floating[:, ::1] X, Py_ssize_t first, Py_ssize_t begin,
                                floating[:, ::1] centers, floating[:, ::1] centers_T, bint gemm,
                                double[:, ::1] centers64, double[::1] sqnorm64,
                                int[::1] chosen) noexcept nogil:
    """The centres known when a call starts (row ``first`` at ``begin = 1``), in the layouts
    the passes read."""
    cdef Py_ssize_t i
    if begin == 1:
        _set_center(&X[first, 0], 0, centers, centers_T, gemm, centers64, sqnorm64)
        chosen[0] = <int> first
        return
    for i in range(begin):
        _set_center(&centers[i, 0], i, centers, centers_T, gemm, centers64, sqnorm64)


cdef tuple _gemm_scratch(Py_ssize_t n_clusters, Py_ssize_t n_features, int n_threads, bint gemm):
    """The gemm path's float64 copy of the centres and their squared norms, and per thread
    ``AFKMC2_GATHER`` gathered candidates and their distance tile (one element each
    without gemm)."""
    cdef Py_ssize_t n_gather = AFKMC2_GATHER if gemm else 0
    return (np.empty((n_clusters if gemm else 1, n_features)),
            np.empty(n_clusters if gemm else 1),
            np.empty((n_threads, n_gather * n_features + 1)),
            np.empty((n_threads, n_gather * n_clusters + 1)))


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


cdef inline void _chain_targets(const floating* X,           # IN  (n_samples, n_features)
                                Py_ssize_t n_features,
                                const floating* sample_weight,  # IN  (n_samples,)
                                const int* candidates,       # IN  (chain_length,) rows of X
                                const floating* known_dist2,  # IN (chain_length,)
                                Py_ssize_t chain_length,
                                const floating* new_T,       # IN  (n_features, stride)
                                Py_ssize_t stride,
                                Py_ssize_t n_new,
                                floating* dist,              # TMP (n_new,)
                                double* p) noexcept nogil:   # OUT (chain_length,)
    """A chain's targets ``p(y) = w_y D(y)^2``: each candidate's squared distance to the
    centres known when its block began (``known_dist2``, from ``_block_pass``), lowered by
    the ``n_new`` centres chosen in the block since (the columns ``new_T`` points to)."""
    cdef Py_ssize_t j, y
    cdef floating d, d_new
    for j in range(chain_length):
        y = candidates[j]
        d = known_dist2[j]
        if n_new > 0:
            d_new = _min_dist2_to_centers(X + y * n_features, n_features, new_T, stride, n_new,
                                          dist)
            if d_new < d:
                d = d_new
        p[j] = sample_weight[y] * <double> d


cdef Py_ssize_t _walk_chain(const double* p,        # IN  (chain_length,) targets
                            const double* q,        # IN  (n_samples,) the proposal
                            const int* candidates,  # IN  (chain_length,) rows of X
                            const double* uniforms, # IN  (chain_length,)
                            Py_ssize_t chain_length) noexcept nogil:
    """Position of the chain's final state among its candidates (Bachem et al. 2016,
    Alg. 1): the first is accepted unconditionally, then each replaces the state if its
    target is zero or the Metropolis-Hastings ratio beats the uniform."""
    cdef Py_ssize_t j, state = 0
    cdef double p_state, ratio
    for j in range(1, chain_length):
        p_state = p[state]
        if p_state == 0:
            state = j
            continue
        ratio = (p[j] / q[candidates[j]]) / (p_state / q[candidates[state]])
        if ratio > uniforms[j]:
            state = j
    return state


cdef int _block_pass(const floating[:, ::1] X,      # IN  (n_samples, n_features)
                     const int* candidates,             # IN  (n_block,) rows of X
                     Py_ssize_t n_block,
                     const floating[:, ::1] centers,    # IN  (n_known, n_features)
                     const floating[:, ::1] centers_T,  # IN  (n_features, n_clusters)
                     Py_ssize_t n_known,
                     bint gemm,
                     const double[:, ::1] centers64,    # IN  (n_known, n_features) with gemm
                     const double[::1] sqnorm64,        # IN  (n_known,) with gemm
                     double[:, ::1] gathered,           # TMP (n_threads, ...)
                     double[:, ::1] tiles,              # TMP (n_threads, ...)
                     floating[:, ::1] dist,             # TMP (n_threads, n_clusters)
                     floating* out,                     # OUT (n_block,)
                     int n_threads) except -1 nogil:
    """Squared distance of each candidate to the nearest of the first ``n_known`` centres,
    each candidate computed by one thread (or, with gemm, in fixed groups of
    ``AFKMC2_GATHER``), so the values do not depend on ``n_threads``."""
    cdef Py_ssize_t n_features = X.shape[1], stride = centers_T.shape[1], j, g, g_end
    with gil:  # Ctrl-C between blocks of centres
        PyErr_CheckSignals()
    with parallel(num_threads=n_threads):
        if gemm:
            for g in prange(0, n_block, AFKMC2_GATHER, schedule="static"):
                g_end = min(g + AFKMC2_GATHER, n_block)
                _gemm_min_dist2(&X[0, 0], n_features, candidates + g, g_end - g,
                                &centers[0, 0], &centers64[0, 0], &sqnorm64[0], n_known,
                                &gathered[threadid(), 0], &tiles[threadid(), 0], out + g)
        else:
            for j in prange(n_block, schedule="static"):
                out[j] = _min_dist2_to_centers(&X[candidates[j], 0], n_features,
                                               &centers_T[0, 0], stride, n_known,
                                               &dist[threadid(), 0])
    return 0


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
    cdef Py_ssize_t b, i, i_start, i_end, y, state
    cdef bint gemm = _use_gemm(n_features)
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
    scratch = _gemm_scratch(n_clusters, n_features, n_threads, gemm)
    cdef double[:, ::1] centers64 = scratch[0], gathered = scratch[2], tiles = scratch[3]
    cdef double[::1] sqnorm64 = scratch[1]
    with nogil:
        _known_centers(X, first, begin, centers, centers_T, gemm, centers64, sqnorm64, chosen)
        for b in range(_n_chunks(end - begin, AFKMC2_BLOCK)):  # blocks of centres
            i_start = begin + b * AFKMC2_BLOCK
            i_end = begin + _chunk_stop(b, AFKMC2_BLOCK, end - begin)
            # the block's candidate rows are contiguous: one flat list
            _block_pass(X, &candidates[i_start - 1, 0], (i_end - i_start) * chain_length,
                        centers, centers_T, i_start, gemm, centers64, sqnorm64, gathered,
                        tiles, dist, &block_dist2[0], n_threads)
            for i in range(i_start, i_end):
                _chain_targets(&X[0, 0], n_features, &sample_weight[0], &candidates[i - 1, 0],
                               &block_dist2[(i - i_start) * chain_length], chain_length,
                               &centers_T[0, i_start], n_clusters, i - i_start, &dist[0, 0],
                               &p[0])
                state = _walk_chain(&p[0], &q[0], &candidates[i - 1, 0], &uniforms[i - 1, 0],
                                    chain_length)
                y = candidates[i - 1, state]
                _set_center(&X[y, 0], i, centers, centers_T, gemm, centers64, sqnorm64)
                chosen[i] = <int> y
    return chain_length * (end * (end - 1) - begin * (begin - 1)) // 2 if end > begin else 0


cdef double _gain(const floating* X_pot,         # IN  (n_pot, n_features)
                  Py_ssize_t n_pot,
                  Py_ssize_t n_features,
                  const floating* w_pot,         # IN  (n_pot,)
                  const floating* pot_dist2,     # IN  (n_pot,)
                  const int* pot_labels,         # IN  (n_pot,)
                  const floating* y,             # IN  (n_features,) the candidate
                  const floating* center_dist2,  # IN  (n_centers,) its distances to them
                  floating* tile,                # OUT (n_pot,)
                  Py_ssize_t* n_evals) noexcept nogil:  # OUT
    """How much the candidate ``y`` lowers the sample's potential ``sum w D^2``, summed in
    row order in float64. ``tile`` gets the sample rows' new ``D^2`` if ``y`` is chosen.

    A row ``x`` whose nearest centre ``c`` has ``d(y, c) >= 2 D(x)`` is skipped: by the
    triangle inequality ``d(x, y) >= d(y, c) - D(x) >= D(x)``, so ``y`` cannot lower it.
    """
    cdef Py_ssize_t n, count = 0
    cdef floating d
    cdef double gain = 0
    for n in range(n_pot):
        if center_dist2[pot_labels[n]] >= 4 * pot_dist2[n]:
            tile[n] = pot_dist2[n]
            continue
        d = _sqdist_wide(X_pot + n * n_features, y, n_features)
        count += 1
        tile[n] = d
        if d < pot_dist2[n]:
            gain += <double> w_pot[n] * (<double> pot_dist2[n] - <double> d)
    n_evals[0] = count
    return gain


def afkmc2_greedy(const floating[:, ::1] X,              # IN
                  const floating[::1] sample_weight,     # IN
                  const double[::1] q,                   # IN
                  Py_ssize_t first,
                  const int[:, ::1] candidates,          # IN
                  const double[:, ::1] uniforms,         # IN
                  Py_ssize_t n_chains,
                  const floating[:, ::1] X_pot,          # IN
                  const floating[::1] w_pot,             # IN
                  floating[::1] pot_dist2,               # INOUT
                  int[::1] pot_labels,                   # INOUT
                  floating[:, ::1] centers,              # OUT
                  int[::1] chosen,                       # OUT
                  int n_threads,
                  Py_ssize_t begin=1,
                  Py_ssize_t end=-1):
    """Greedy AFK-MC^2 for centres ``begin .. end - 1``: the best of ``n_chains`` chains.

    For centre ``i`` each of the ``n_chains`` chains runs as in :func:`afkmc2_chain` on its
    own ``chain_length`` pre-drawn candidates (chain ``l`` on columns ``l * chain_length ..
    (l + 1) * chain_length - 1`` of row ``i - 1``); of the chains' final states the one that
    lowers the potential of the sample ``X_pot``, ``sum_n w_pot[n] pot_dist2[n]``, most
    becomes the centre (the first chain on ties), and ``pot_dist2`` and ``pot_labels`` are
    updated.

    Parameters
    ----------
    X, sample_weight, q, first
        As for :func:`afkmc2_chain`.
    candidates : ndarray of shape (n_clusters - 1, n_chains * chain_length), dtype=int32
        Candidate rows, drawn i.i.d. from ``q``.
    uniforms : ndarray of shape (n_clusters - 1, n_chains * chain_length), dtype=float64
        Uniform numbers in [0, 1) for the acceptance tests (each chain's first is not used).
    n_chains : int
        Chains per centre (``>= 1``; it divides the width of ``candidates``).
    X_pot : ndarray of shape (n_pot, n_features), dtype=floating
        The rows on which the potential is estimated.
    w_pot : ndarray of shape (n_pot,), dtype=floating
        Their weights.
    pot_dist2 : ndarray of shape (n_pot,), dtype=floating
        In: squared distance of each sample row to its nearest centre among ``0 .. begin -
        1``. Out: the same for all centres up to ``end - 1``.
    pot_labels : ndarray of shape (n_pot,), dtype=int32
        In and out: the index of that nearest centre (the first on ties).
    centers, chosen, n_threads, begin, end
        As for :func:`afkmc2_chain` (progress between calls; ``begin - 1`` a multiple of
        ``AFKMC2_BLOCK``).

    Returns
    -------
    n_distance_evals : int
        ``n_chains * chain_length * sum(i for i in range(begin, end))`` for the chains, plus
        for the potentials, per centre ``i``, each final state's distances to the ``i``
        centres and to the sample rows not ruled out (at most ``n_pot``); the chosen
        state's distances are reused for the update.

    Notes
    -----
    The chains' distances to the centres known when a block of ``AFKMC2_BLOCK`` steps
    starts are computed in one parallel pass, as in :func:`afkmc2_chain`; then each step
    runs its chains in parallel, one thread per chain: the distances to the centres chosen
    within the block, the walk, and the gain on the sample, summed in row order. So the
    result does not depend on ``n_threads``. The gain skips the sample rows that the final
    state cannot come closer to, by the triangle inequality with the rows' nearest centres
    (as greedy k-means++ prunes, Raff 2021); on clustered data that is most of them.
    Memory: that of :func:`afkmc2_chain` for ``n_chains * chain_length`` candidates per
    step, plus ``n_chains * (n_pot + n_clusters)`` distances.
    Assumes valid input.
    """
    cdef Py_ssize_t n_features = X.shape[1]
    cdef Py_ssize_t n_clusters = centers.shape[0]
    cdef Py_ssize_t width = candidates.shape[1], n_pot = X_pot.shape[0]
    cdef Py_ssize_t chain_length = width // max(n_chains, 1)
    cdef Py_ssize_t b, i, i_start, i_end, l, n, y, t, best, n_block, offset
    cdef bint gemm = _use_gemm(n_features)
    end = n_clusters if end < 0 else min(end, n_clusters)
    begin = max(begin, 1)
    if n_clusters == 0 or n_chains < 1:
        return 0
    n_threads = max(1, n_threads)
    dtype = np.float32 if floating is float else np.float64
    cdef floating[:, ::1] centers_T = np.empty((n_features, n_clusters), dtype=dtype)
    cdef floating[:, ::1] dist = np.empty((n_threads, n_clusters), dtype=dtype)
    cdef floating[::1] block_dist2 = np.empty(max(AFKMC2_BLOCK * width, 1), dtype=dtype)
    cdef double[:, ::1] p = np.empty((n_chains, max(chain_length, 1)), dtype=np.float64)
    cdef double[::1] gains = np.empty(n_chains, dtype=np.float64)
    cdef Py_ssize_t[::1] finals = np.empty(n_chains, dtype=np.intp)
    cdef floating[:, ::1] tile = np.empty((n_chains, max(n_pot, 1)), dtype=dtype)
    cdef floating[:, ::1] final_dist2 = np.empty((n_chains, n_clusters), dtype=dtype)
    cdef Py_ssize_t[::1] pot_evals = np.zeros(n_chains, dtype=np.intp)
    cdef Py_ssize_t n_evals = 0
    scratch = _gemm_scratch(n_clusters, n_features, n_threads, gemm)
    cdef double[:, ::1] centers64 = scratch[0], gathered = scratch[2], tiles = scratch[3]
    cdef double[::1] sqnorm64 = scratch[1]
    with nogil:
        _known_centers(X, first, begin, centers, centers_T, gemm, centers64, sqnorm64, chosen)
        for b in range(_n_chunks(end - begin, AFKMC2_BLOCK)):  # blocks of centres
            i_start = begin + b * AFKMC2_BLOCK
            i_end = begin + _chunk_stop(b, AFKMC2_BLOCK, end - begin)
            n_block = (i_end - i_start) * width
            _block_pass(X, &candidates[i_start - 1, 0], n_block, centers, centers_T, i_start,
                        gemm, centers64, sqnorm64, gathered, tiles, dist, &block_dist2[0],
                        _threads_for(n_block * i_start * n_features, n_threads))
            for i in range(i_start, i_end):
                with parallel(num_threads=_threads_for(
                        n_chains * (chain_length * (i - i_start) + n_pot) * n_features,
                        min(n_threads, <int> n_chains))):
                    for l in prange(n_chains, schedule="static"):
                        offset = l * chain_length
                        _chain_targets(&X[0, 0], n_features, &sample_weight[0],
                                       &candidates[i - 1, offset],
                                       &block_dist2[(i - i_start) * width + offset],
                                       chain_length, &centers_T[0, i_start], n_clusters,
                                       i - i_start, &dist[threadid(), 0], &p[l, 0])
                        t = _walk_chain(&p[l, 0], &q[0], &candidates[i - 1, offset],
                                        &uniforms[i - 1, offset], chain_length)
                        finals[l] = candidates[i - 1, offset + t]
                        _center_dist2(&X[finals[l], 0], n_features, &centers_T[0, 0],
                                      n_clusters, i, &final_dist2[l, 0])
                        gains[l] = _gain(&X_pot[0, 0], n_pot, n_features, &w_pot[0],
                                         &pot_dist2[0], &pot_labels[0], &X[finals[l], 0],
                                         &final_dist2[l, 0], &tile[l, 0], &pot_evals[l])
                best = 0
                for l in range(n_chains):
                    n_evals += i + pot_evals[l]
                for l in range(1, n_chains):
                    if gains[l] > gains[best]:
                        best = l
                for n in range(n_pot):
                    if tile[best, n] < pot_dist2[n]:
                        pot_dist2[n] = tile[best, n]
                        pot_labels[n] = <int> i
                y = finals[best]
                _set_center(&X[y, 0], i, centers, centers_T, gemm, centers64, sqnorm64)
                chosen[i] = <int> y
    if end <= begin:
        return 0
    return width * (end * (end - 1) - begin * (begin - 1)) // 2 + n_evals
