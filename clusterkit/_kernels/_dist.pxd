from cython cimport floating
from libc.float cimport DBL_EPSILON, FLT_EPSILON
from libc.string cimport memcpy

from ._blas cimport _gemm_nt
from ._chunks cimport _thread_scratch, _TilePlan


# Samples per chunk of the blocked kernels: a CHUNK_SIZE x n_clusters tile of distances stays
# in cache for moderate n_clusters, and gemm is efficient at this size.
cdef enum:
    CHUNK_SIZE = 256

# Below this many features a direct loop beats gemm (benchmarks/bench_lloyd.py --cutoff).
cdef enum:
    GEMM_MIN_FEATURES = 9


cdef inline floating _sqdist(const floating* a, const floating* b,
                             Py_ssize_t n_features) noexcept nogil:
    """Squared Euclidean distance between two rows."""
    cdef floating d = 0, t
    cdef Py_ssize_t k
    for k in range(n_features):
        t = a[k] - b[k]
        d += t * t
    return d


cdef extern from "_sqdist.h" nogil:
    double ck_sqdist_wide_double(const double* a, const double* b, Py_ssize_t n)
    float ck_sqdist_wide_float(const float* a, const float* b, Py_ssize_t n)
    double ck_sqnorm_wide_double(const double* a, const double* b, Py_ssize_t n)
    float ck_sqnorm_wide_float(const float* a, const float* b, Py_ssize_t n)
    double ck_sqdist_wide_below_double(const double* a, const double* b, Py_ssize_t n,
                                       double limit)
    float ck_sqdist_wide_below_float(const float* a, const float* b, Py_ssize_t n,
                                     float limit)
    void ck_prefetch_row(const void* row, Py_ssize_t n_bytes)


cdef inline float _store_lower(double value, double keep) noexcept nogil:
    """A float32 lower bound no larger than ``value`` (Elkan's and Yinyang's stored bounds):
    ``keep = 1 - slack`` absorbs the rounding of the distances and of the float32 conversion.
    ``value`` must be below float32's largest number (the E-steps scale data whose distances
    could reach it): an ``inf`` bound would skip its centres for ever. ``value = inf`` (a bound
    over no centre) stays ``inf``."""
    return <float> (value * keep)


cdef inline bint _sums_wide(Py_ssize_t n_features, size_t itemsize) noexcept nogil:
    """Whether a row fills one 64-byte vector (16 floats, 8 doubles): from there on
    _sqdist.h's vector partial sums are used, below it the single scalar sum."""
    return n_features * itemsize >= 64


cdef inline floating _sqdist_wide(const floating* a, const floating* b,
                                  Py_ssize_t n_features) noexcept nogil:
    """Squared Euclidean distance in vectors of partial sums (_sqdist.h), much faster with
    many features; rounds differently from ``_sqdist`` from 16 (float) or 8 (double) features
    on, identically below (all features then go to one scalar sum), where the inlined
    ``_sqdist`` saves the call."""
    if not _sums_wide(n_features, sizeof(floating)):
        return _sqdist(a, b, n_features)
    if floating is float:
        return ck_sqdist_wide_float(a, b, n_features)
    else:
        return ck_sqdist_wide_double(a, b, n_features)


cdef inline floating _sqdist_wide_below(const floating* a, const floating* b,
                                        Py_ssize_t n_features, floating limit) noexcept nogil:
    """``_sqdist_wide`` for a caller that only asks whether it is below ``limit``: the same
    value where it is, otherwise a value in ``[limit, the distance]``, its partial sums
    stopped where they reach ``limit`` (_sqdist.h)."""
    if not _sums_wide(n_features, sizeof(floating)):
        return _sqdist(a, b, n_features)
    if floating is float:
        return ck_sqdist_wide_below_float(a, b, n_features, limit)
    else:
        return ck_sqdist_wide_below_double(a, b, n_features, limit)


cdef inline floating _sqnorm(const floating* a, Py_ssize_t n_features) noexcept nogil:
    """Squared norm of a row, in the partial sums of ``_sqdist_wide`` from the same feature
    counts on (the plain loop's single running sum took about 4% of a D=64 Lloyd fit)."""
    cdef floating d = 0
    cdef Py_ssize_t k
    if _sums_wide(n_features, sizeof(floating)):
        if floating is float:
            return ck_sqnorm_wide_float(a, a, n_features)
        else:
            return ck_sqnorm_wide_double(a, a, n_features)
    for k in range(n_features):
        d += a[k] * a[k]
    return d


cdef inline bint _use_gemm(Py_ssize_t n_features) noexcept nogil:
    return n_features >= GEMM_MIN_FEATURES


cdef inline void _dist2_tile(const floating* X,              # IN  (n_rows, n_features)
                             Py_ssize_t n_rows,
                             Py_ssize_t n_features,
                             const floating* centers,        # IN  (n_clusters, n_features)
                             const floating* centers_T,      # IN  (n_features, n_clusters)
                             const floating* centers_sqnorm, # IN  (n_clusters,)
                             Py_ssize_t n_clusters,
                             floating* tile) noexcept nogil: # OUT (n_rows, n_clusters)
    """Distances of a chunk of rows to all centres.

    With gemm (``_use_gemm(n_features)``) the tile holds ``||c_j||^2 - 2 x_i . c_j``: the
    ``||x_i||^2`` term is left out because the argmin does not need it and adding it first
    would cost float32 precision; callers that need the value add it and clamp at zero.
    Without gemm (few features) the tile holds the exact ``||x_i - c_j||^2``, computed from the
    transposed centres so that the inner loop over clusters vectorises.
    """
    cdef Py_ssize_t i, j, k
    cdef floating xk
    cdef floating* row
    if _use_gemm(n_features):
        # memcpy uses the widest stores the CPU has; a loop here is compiled for the baseline
        # instruction set (16-byte stores), which took about 9% of a D=64 Lloyd fit
        for i in range(n_rows):
            memcpy(tile + i * n_clusters, centers_sqnorm, n_clusters * sizeof(floating))
        _gemm_nt(<int> n_rows, <int> n_clusters, <int> n_features, -2.0, X, <int> n_features,
                 centers, <int> n_features, 1.0, tile, <int> n_clusters)
    else:
        for i in range(n_rows):
            row = tile + i * n_clusters
            for j in range(n_clusters):
                row[j] = 0
            for k in range(n_features):
                xk = X[i * n_features + k]
                for j in range(n_clusters):
                    row[j] += (xk - centers_T[k * n_clusters + j]) * (xk - centers_T[k * n_clusters + j])


cdef extern from "_nearest.h" nogil:
    Py_ssize_t ck_count_at_most_double(const double* row, Py_ssize_t n, double limit)
    Py_ssize_t ck_count_at_most_float(const float* row, Py_ssize_t n, float limit)
    Py_ssize_t ck_argmin_double(const double* row, Py_ssize_t n)
    Py_ssize_t ck_argmin_float(const float* row, Py_ssize_t n)


cdef inline Py_ssize_t _argmin(const floating* row, Py_ssize_t n) noexcept nogil:
    """Index of the smallest entry of ``row``, the first of equal ones (_nearest.h)."""
    if floating is float:
        return ck_argmin_float(row, n)
    else:
        return ck_argmin_double(row, n)


# Set-up of a call of a chunked tile kernel (_dist.pyx): returns the arrays the plan points
# into, for the caller to keep until the call ends.
cdef object _prepare_tiles(_TilePlan* plan, centers, Py_ssize_t n_rows, Py_ssize_t chunk_rows,
                           int n_threads, Py_ssize_t scratch_bytes)


cdef inline void _tile_from(const _TilePlan* plan, const floating* X, Py_ssize_t n_rows,
                            floating* tile) noexcept nogil:
    """``_dist2_tile`` of rows of ``X`` against the plan's centres."""
    _dist2_tile(X, n_rows, plan.n_features, <const floating*> plan.centers,
                <const floating*> plan.centers_T, <const floating*> plan.centers_sqnorm,
                plan.n_clusters, tile)


cdef inline floating* _chunk_tile(const _TilePlan* plan, const floating* X,
                                  Py_ssize_t n_rows) noexcept nogil:
    """The calling thread's tile, holding the chunk's distances where they come from gemm;
    without gemm ``_tile_row`` computes each row when it is needed, so that it is still in
    the L1 cache for the passes over it."""
    cdef floating* tile = <floating*> _thread_scratch(plan)
    if _use_gemm(plan.n_features):
        _tile_from(plan, X, n_rows, tile)
    return tile


cdef inline floating* _tile_row(const _TilePlan* plan, const floating* X, Py_ssize_t i,
                                floating* tile) noexcept nogil:
    """Row ``i`` of the chunk's tile (after ``_chunk_tile``): with gemm ``||c||^2 - 2 x.c``,
    without it the whole squared distances (see ``_dist2_tile``)."""
    if _use_gemm(plan.n_features):
        return tile + i * plan.n_clusters
    _tile_from(plan, X + i * plan.n_features, 1, tile)
    return tile


# The dtype of a row of gemm products: the data's, or float32 for float64 data (_blocked.pxd).
ctypedef fused tile_t:
    float
    double


cdef inline Py_ssize_t _settle_exactly(const tile_t* row, Py_ssize_t n_clusters, Py_ssize_t best,
                                       const floating* x, Py_ssize_t n_features,
                                       const floating* centers, double limit,
                                       floating* dist2) noexcept nogil:
    """The near-ties of a row of products (entries at most ``limit``) ranked by direct
    distances on the data's dtype, ties to the lower index, as the direct-distance E-steps
    rank them; ``best`` is the row's argmin. Writes its squared distance to ``dist2``."""
    cdef Py_ssize_t j
    cdef floating d, d_best = _sqdist_wide(x, centers + best * n_features, n_features)
    for j in range(n_clusters):
        if j != best and row[j] <= limit:
            d = _sqdist_wide(x, centers + j * n_features, n_features)
            if d < d_best or (d == d_best and j < best):
                best = j
                d_best = d
    dist2[0] = d_best
    return best


cdef inline double _near_tie_window(Py_ssize_t n_features, double xn, double max_sqnorm,
                                   double eps) noexcept nogil:
    """How far a gemm tile entry plus ``||x||^2`` may lie from the exact squared distance:
    the generous ``4 (D + 2) eps (2 ||x||^2 + 2 max_j ||c_j||^2)``."""
    return 4.0 * (n_features + 2) * eps * (2.0 * xn + 2.0 * max_sqnorm)


cdef inline Py_ssize_t _settle_near_ties(const floating* row,            # IN  (n_clusters,)
                                        Py_ssize_t n_clusters,
                                        Py_ssize_t best,
                                        const floating* x,              # IN  (n_features,)
                                        Py_ssize_t n_features,
                                        const floating* centers,        # IN  (n_clusters, n_features)
                                        floating xn,
                                        double max_sqnorm,
                                        floating* dist2) noexcept nogil:  # OUT
    """The nearest centre from a gemm row of ``_dist2_tile`` (``||c||^2 - 2 x.c``), with the
    near-ties settled exactly as the direct-distance E-steps settle them.

    ``best`` is the row's argmin. gemm rounds each entry differently from a direct sum, so
    two centres at the same distance (integer data, a point between two centres) may come
    out in either order. Every entry within the rounding of both sums of the minimum (at
    most ``4 (D + 2) eps (2 ||x||^2 + 2 max_j ||c_j||^2)``, a generous bound) is therefore
    compared again by ``_sqdist_wide``, the distance Elkan's E-step uses, ties to the lower
    index: all exact E-steps then give the same label. Rows without a near-tie (nearly all)
    cost one vectorised pass over the row. Writes the squared distance to the result
    (clamped at 0) to ``dist2``; ``xn`` is ``||x||^2``, ``max_sqnorm`` the largest
    ``||c_j||^2``. With NaN entries the result is ``best``.
    """
    cdef floating limit = <floating> (row[best] + _near_tie_window(
        n_features, xn, max_sqnorm, FLT_EPSILON if floating is float else DBL_EPSILON))
    cdef Py_ssize_t n_near
    cdef floating d
    if floating is float:
        n_near = ck_count_at_most_float(row, n_clusters, limit)
    else:
        n_near = ck_count_at_most_double(row, n_clusters, limit)
    if n_near <= 1:
        d = row[best] + xn
        dist2[0] = d if d > 0 else 0
        return best
    return _settle_exactly(row, n_clusters, best, x, n_features, centers, limit, dist2)


cdef inline double _max_sqnorm(const floating* centers_sqnorm, Py_ssize_t n_clusters) noexcept nogil:
    """The largest ``||c_j||^2`` (``_settle_near_ties``'s window)."""
    cdef double m = 0
    cdef Py_ssize_t j
    for j in range(n_clusters):
        if centers_sqnorm[j] > m:
            m = centers_sqnorm[j]
    return m


cdef inline Py_ssize_t _first_visit(const _TilePlan* plan,
                                    const floating* row,          # IN  (n_clusters,)
                                    const floating* x,            # IN  (n_features,)
                                    double xn,
                                    floating* dist2,              # OUT
                                    double* window) noexcept nogil:  # OUT
    """A bounded E-step's first visit of a sample from its tile row (``_dist2_tile``): the
    label as Lloyd's E-step ranks it (near-ties by direct distances, ``_settle_near_ties``),
    the direct squared distance to it in ``dist2`` (exact: later visits reuse it), and in
    ``window`` how far an entry plus ``||x||^2`` may lie from the exact squared distance (a
    bound from an entry lowered by it stays valid). ``xn`` is ``||x||^2``."""
    cdef Py_ssize_t n_features = plan.n_features, n_clusters = plan.n_clusters
    cdef const floating* centers = <const floating*> plan.centers
    cdef Py_ssize_t best = _settle_near_ties(row, n_clusters, _argmin(row, n_clusters), x,
                                             n_features, centers, <floating> xn,
                                             plan.max_sqnorm, dist2)
    dist2[0] = _sqdist_wide(x, centers + best * n_features, n_features)
    window[0] = _near_tie_window(n_features, xn, plan.max_sqnorm,
                                 FLT_EPSILON if floating is float else DBL_EPSILON)
    return best


cdef inline void _center_dist2(const floating* candidate,    # IN  (n_features,)
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
