"""Exact nearest centres with dimension pruning: gemm over a prefix of the features, then
direct distances only for the centres a lower bound does not rule out.

For rows and centres in a basis whose first features carry most of the variance (a PCA
rotation, made by the E-step), split every vector into its first ``p`` features and the rest
``r``. Then, by the triangle inequality on the rest,

    ||x - c||^2 = ||x_p - c_p||^2 + ||x_r - c_r||^2 >= ||x_p - c_p||^2 + (||x_r|| - ||c_r||)^2,

an exact lower bound that costs one ``p``-term product per pair (gemm, at its full rate) and a
few flops. A centre whose bound exceeds the best direct distance found so far cannot be the
nearest and is not looked at again; the others get a direct distance over all features. The
result is the nearest centre by direct distances, ties to the lower index: the labels of
every exact E-step (``_assign.assign_full``, Elkan's), whatever the prefix.
"""
import numpy as np

from cython cimport floating
from cython.parallel cimport parallel, prange
from libc.float cimport DBL_EPSILON, FLT_EPSILON
from libc.math cimport INFINITY, sqrt

from ._blas cimport _gemm_nt
from ._blocked cimport _block_width
from ._chunks cimport _chunk_len, _thread_scratch, _TilePlan
from ._dist cimport (CHUNK_SIZE, _argmin, _near_tie_window, _prepare_tiles, _sqdist_wide,
                     ck_count_at_most_double, ck_count_at_most_float)


cdef extern from "_pruned.h" nogil:
    void ck_prune_bounds_double(double* row, Py_ssize_t n, double a, const double* prefix_sqnorm,
                                double x_rest, const double* rest_norm, double tol)
    void ck_prune_bounds_float(float* row, Py_ssize_t n, float a, const float* prefix_sqnorm,
                               float x_rest, const float* rest_norm, float tol)


cdef inline Py_ssize_t _complete(const floating* x, const floating* centers,
                                 Py_ssize_t n_features, Py_ssize_t j, floating* best_val,
                                 Py_ssize_t* best_idx) noexcept nogil:
    """The direct distance to centre ``j``, kept if it beats the best (ties to the lower
    index); returns 1 (one distance computed)."""
    cdef floating d = _sqdist_wide(x, centers + j * n_features, n_features)
    if d < best_val[0] or (d == best_val[0] and j < best_idx[0]):
        best_val[0] = d
        best_idx[0] = j
    return 1


cdef void _pruned_chunk(const _TilePlan* plan,
                        const floating* X,             # IN  (n_rows, n_features)
                        Py_ssize_t n_rows,
                        Py_ssize_t n_prefix,
                        const floating* prefix_sqnorm, # IN  (n_clusters,) ||c_p||^2
                        const floating* rest_norm,     # IN  (n_clusters,) ||c_r||
                        double max_prefix_sqnorm,
                        double max_rest_norm,
                        int* labels,                   # OUT (n_rows,)
                        floating* min_dist2,           # OUT (n_rows,)
                        long long* n_direct) noexcept nogil:  # OUT
    cdef Py_ssize_t n_features = plan.n_features, n_clusters = plan.n_clusters
    cdef const floating* centers = <const floating*> plan.centers
    cdef Py_ssize_t width = _block_width(n_clusters, sizeof(floating))
    cdef floating* tile = <floating*> _thread_scratch(plan)
    cdef floating* row
    cdef const floating* x
    cdef Py_ssize_t i, j, j0, k, n_block, j_min, n_below
    cdef Py_ssize_t best_idx[CHUNK_SIZE]
    cdef floating best_val[CHUNK_SIZE]
    cdef floating shift[CHUNK_SIZE]
    cdef floating x_rest[CHUNK_SIZE]
    cdef double eps = FLT_EPSILON if floating is float else DBL_EPSILON
    # A direct distance (_sqdist_wide: a sum of D positive rounded terms) lies within a
    # factor 1 +- delta of the exact one. A centre is skipped only if its bound exceeds the
    # best direct distance times (1 + 2 delta): its own direct distance is then larger,
    # strictly, so it could neither win nor tie.
    cdef double grow = 1.0 + 8.0 * (n_features + 2) * eps
    # the norms of the rest, each rounded to the data's dtype, and their difference
    cdef floating tol = <floating> (8.0 * eps)
    cdef double v, prefix, rest, window
    cdef floating limit
    cdef long long n_evals = 0
    for i in range(n_rows):
        prefix = 0
        for k in range(n_prefix):
            v = X[i * n_features + k]
            prefix = prefix + v * v
        rest = 0
        for k in range(n_prefix, n_features):
            v = X[i * n_features + k]
            rest = rest + v * v
        rest = sqrt(rest)
        # the gemm entries' rounding (as _settle_near_ties bounds it, over p + 8 terms to
        # cover the bound's own few roundings in the data's dtype)
        window = (_near_tie_window(n_prefix + 8, prefix, max_prefix_sqnorm, eps)
                  + 8.0 * eps * (rest + max_rest_norm) * (rest + max_rest_norm))
        shift[i] = <floating> (prefix - window)
        x_rest[i] = <floating> rest
        best_idx[i] = -1
        best_val[i] = INFINITY
    j0 = 0
    while j0 < n_clusters:
        n_block = min(width, n_clusters - j0)
        _gemm_nt(<int> n_rows, <int> n_block, <int> n_prefix, -2.0, X, <int> n_features,
                 centers + j0 * n_features, <int> n_features, 0.0, tile, <int> n_block)
        for i in range(n_rows):
            row = tile + i * n_block
            x = X + i * n_features
            if floating is float:
                ck_prune_bounds_float(row, n_block, shift[i], prefix_sqnorm + j0, x_rest[i],
                                      rest_norm + j0, tol)
            else:
                ck_prune_bounds_double(row, n_block, shift[i], prefix_sqnorm + j0, x_rest[i],
                                       rest_norm + j0, tol)
            # the centre of least bound first, so that the others meet a low threshold; then
            # every centre whose bound does not rule it out
            j_min = _argmin(row, n_block)
            if row[j_min] <= best_val[i] * grow:
                n_evals += _complete(x, centers, n_features, j0 + j_min, &best_val[i],
                                     &best_idx[i])
            limit = <floating> (best_val[i] * grow)
            if floating is float:
                n_below = ck_count_at_most_float(row, n_block, limit)
            else:
                n_below = ck_count_at_most_double(row, n_block, limit)
            if n_below <= 1 and row[j_min] <= limit:  # the one below is j_min: done
                continue
            for j in range(n_block):
                if j != j_min and row[j] <= best_val[i] * grow:
                    n_evals += _complete(x, centers, n_features, j0 + j, &best_val[i],
                                         &best_idx[i])
        j0 += n_block
    for i in range(n_rows):
        # NaN everywhere leaves no centre found: a label inside [0, n_clusters) all the same
        labels[i] = <int> (best_idx[i] if best_idx[i] >= 0 else 0)
        min_dist2[i] = best_val[i]
    n_direct[0] = n_evals


def assign_pruned(const floating[:, ::1] X,        # IN  (n_samples, n_features)
                  const floating[:, ::1] centers,  # IN  (n_clusters, n_features)
                  Py_ssize_t n_prefix,
                  int[::1] labels,                 # OUT (n_samples,)
                  floating[::1] min_dist2,         # OUT (n_samples,)
                  int n_threads):
    """Assign every sample to its nearest centre, pruning centres by a prefix of features.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), dtype=floating
        Rows in a basis whose first features carry most of the variance (the pruning is
        exact in any basis; it only saves work in such a one).
    centers : ndarray of shape (n_clusters, n_features), dtype=floating
        Centres in the same basis.
    n_prefix : int
        ``p``, the features the gemm products run over, ``1 <= p <= n_features``.
    labels : ndarray of shape (n_samples,), dtype=int32
        Output: the nearest centre by direct distances (``_sqdist_wide``), ties to the lowest
        index.
    min_dist2 : ndarray of shape (n_samples,), dtype=floating
        Output: the direct squared distance to it.
    n_threads : int
        Number of OpenMP threads.

    Returns
    -------
    n_prefix_pairs : int
        ``n_samples * n_clusters``: the pairs whose products over the prefix were computed.
    n_direct : int
        The direct distances over all features computed, at least one per sample.

    Raises
    ------
    ValueError
        If ``n_prefix`` is not within ``[1, n_features]``.

    Notes
    -----
    Per chunk of ``CHUNK_SIZE`` rows and per block of centres (``_block_width``, so that
    the tile stays in cache) one gemm gives ``-2 x_p . c_p``, from which each pair's bound
    ``||x_p - c_p||^2 + (||x_r|| - ||c_r||)^2`` is formed, lowered by the products'
    rounding window (that of ``_settle_near_ties``) and by the rounding of the norms. In each
    block a row's centre of least bound is looked at first, then every centre whose bound is
    at most the best direct distance so far (times ``1 + 2 delta``, ``delta`` the rounding of
    a direct distance): a centre skipped has a larger direct distance than the one returned,
    so the labels are exact. The work is ``n_samples n_clusters p`` multiply-adds at the gemm
    rate plus ``n_direct`` direct distances. Every output element is written by one thread,
    so results do not depend on ``n_threads``. Assumes valid (finite) input otherwise.
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t n_clusters = centers.shape[0], c
    cdef _TilePlan plan
    cdef long long n_direct = 0
    cdef long long[::1] chunk_direct
    if not 1 <= n_prefix <= n_features:
        raise ValueError(f"n_prefix={n_prefix} must be within [1, n_features={n_features}].")
    if n_samples == 0:
        return 0, 0
    c64 = np.asarray(centers, dtype=np.float64)
    prefix_sq = np.einsum("ij,ij->i", c64[:, :n_prefix], c64[:, :n_prefix])
    rest = np.sqrt(np.einsum("ij,ij->i", c64[:, n_prefix:], c64[:, n_prefix:]))
    dtype = np.float32 if floating is float else np.float64
    cdef const floating[::1] prefix_sqnorm = prefix_sq.astype(dtype)
    cdef const floating[::1] rest_norm = rest.astype(dtype)
    cdef double max_prefix_sqnorm = float(prefix_sq.max()) if n_clusters else 0.0
    cdef double max_rest_norm = float(rest.max()) if n_clusters else 0.0
    keep = _prepare_tiles(&plan, centers, n_samples, CHUNK_SIZE, n_threads,
                          CHUNK_SIZE * _block_width(n_clusters, sizeof(floating))
                          * sizeof(floating))
    chunk_direct = np.zeros(plan.n_chunks, dtype=np.int64)
    with nogil, parallel(num_threads=plan.n_threads):
        for c in prange(plan.n_chunks, schedule="static"):
            _pruned_chunk(&plan, &X[c * CHUNK_SIZE, 0], _chunk_len(&plan, c), n_prefix,
                          &prefix_sqnorm[0], &rest_norm[0], max_prefix_sqnorm, max_rest_norm,
                          &labels[c * CHUNK_SIZE], &min_dist2[c * CHUNK_SIZE],
                          &chunk_direct[c])
    for c in range(plan.n_chunks):
        n_direct += chunk_direct[c]
    return n_samples * n_clusters, n_direct
