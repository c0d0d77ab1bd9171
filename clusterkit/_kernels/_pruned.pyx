"""Exact nearest centres with dimension pruning: gemm over a few projected features, then
direct distances only for the centres a lower bound does not rule out.

Let ``V`` be ``p`` orthonormal directions that carry most of the variance (the leading
principal axes, found by the E-step), ``x~ = V^T x`` a row's coordinates along them and
``x_r`` the rest of the row (``||x_r||^2 = ||x||^2 - ||x~||^2``). Then, by the triangle
inequality on the rest,

    ||x - c||^2 = ||x~ - c~||^2 + ||x_r - c_r||^2 >= ||x~ - c~||^2 + (||x_r|| - ||c_r||)^2,

an exact lower bound that costs one ``p``-term product per pair (gemm, at its full rate) and a
few flops. A centre whose bound exceeds the best direct distance found so far cannot be the
nearest and is not looked at again; the others get a direct distance over all features of
the rows as they are. The result is the nearest centre by direct distances, ties to the lower
index: the labels of every exact E-step (``_assign.assign_full``, Elkan's), whatever ``V``.
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
                     _store_lower, ck_count_at_most_double, ck_count_at_most_float)


cdef extern from "_pruned.h" nogil:
    void ck_prune_bounds_double(double* row, Py_ssize_t n, double a, const double* proj_sqnorm,
                                double x_rest, const double* rest_norm, double tol,
                                double rest_tol)
    void ck_prune_bounds_float(float* row, Py_ssize_t n, float a, const float* proj_sqnorm,
                               float x_rest, const float* rest_norm, float tol, float rest_tol)


cdef inline Py_ssize_t _complete(const floating* x, const floating* centers,
                                 Py_ssize_t n_features, Py_ssize_t j, floating* best_val,
                                 Py_ssize_t* best_idx, floating* slot) noexcept nogil:
    """The direct distance to centre ``j``, kept if it beats the best (ties to the lower
    index), and written to ``slot`` unless NULL (in place of the bound: a tighter one);
    returns 1 (one distance computed)."""
    cdef floating d = _sqdist_wide(x, centers + j * n_features, n_features)
    if slot != NULL:
        slot[0] = d
    if d < best_val[0] or (d == best_val[0] and j < best_idx[0]):
        best_val[0] = d
        best_idx[0] = j
    return 1


cdef inline void _keep_bounds(const floating* row, Py_ssize_t n_block, Py_ssize_t j0,
                              float* bound, const double* group_shift, double keep,
                              floating* full) noexcept nogil:
    """A block's values of a row (squared bounds, or direct squared distances where
    computed) kept for the bounded E-steps' stored bounds: Elkan's (``full`` NULL) one per
    centre into ``bound``, ``sqrt + group_shift`` lowered by ``keep``; for Yinyang's copied
    into the row's ``full`` values, folded into group bounds at the end of the chunk (when
    the label is known)."""
    cdef Py_ssize_t j
    cdef floating v
    if full == NULL:
        for j in range(n_block):
            v = row[j]
            bound[j0 + j] = _store_lower(sqrt(<double> (v if v > 0 else 0))
                                         + group_shift[j0 + j], keep)
        return
    for j in range(n_block):
        full[j0 + j] = row[j]


cdef inline void _group_bounds(const floating* full, Py_ssize_t label, float* bound,
                               const int* group_of, const int* members,
                               const Py_ssize_t* group_starts, Py_ssize_t n_groups,
                               const double* group_shift, double keep) noexcept nogil:
    """Yinyang's stored bounds of a row from its values over all centres: per group the
    least value of its centres other than ``label``."""
    cdef Py_ssize_t g, q, c
    cdef floating m
    for g in range(n_groups):
        m = <floating> INFINITY
        for q in range(group_starts[g], group_starts[g + 1]):
            m = full[members[q]] if full[members[q]] < m else m
        if g == group_of[label]:
            m = <floating> INFINITY
            for q in range(group_starts[g], group_starts[g + 1]):
                c = members[q]
                if c != label and full[c] < m:
                    m = full[c]
        bound[g] = _store_lower(sqrt(<double> (m if m > 0 else 0)) + group_shift[g], keep)


cdef void _pruned_chunk(const _TilePlan* plan,
                        const floating* X,             # IN  (n_rows, n_features)
                        Py_ssize_t n_rows,
                        const floating* X_proj,        # IN  (n_rows, n_proj)
                        const floating* x_rest,        # IN  (n_rows,) ||x_r||
                        const floating* centers_proj,  # IN  (n_clusters, n_proj)
                        Py_ssize_t n_proj,
                        const floating* proj_sqnorm,   # IN  (n_clusters,) ||c~||^2
                        const floating* rest_norm,     # IN  (n_clusters,) ||c_r||
                        double max_proj_sqnorm,
                        double max_rest_norm,
                        double proj_tol,
                        floating rest_tol,
                        int* labels,                   # OUT (n_rows,)
                        floating* min_dist2,           # OUT (n_rows,)
                        long long* n_direct,           # OUT
                        float* lower,                  # OUT rows of (n_samples, n_groups) or NULL
                        const Py_ssize_t* rows,        # IN  (n_rows,) its rows
                        const int* group_of,           # IN  (n_clusters,) or NULL (Elkan's)
                        const int* members,            # IN  (n_clusters,) by group
                        const Py_ssize_t* group_starts,  # IN (n_groups + 1,)
                        Py_ssize_t n_groups,
                        const double* group_shift,     # IN  (n_groups,)
                        double keep) noexcept nogil:
    cdef Py_ssize_t n_features = plan.n_features, n_clusters = plan.n_clusters
    cdef const floating* centers = <const floating*> plan.centers
    cdef Py_ssize_t width = _block_width(n_clusters, sizeof(floating))
    cdef floating* tile = <floating*> _thread_scratch(plan)
    cdef floating* row
    cdef floating* slot
    cdef const floating* x
    cdef Py_ssize_t i, j, j0, k, n_block, j_min, n_below
    # with group bounds (Yinyang's): each row's values over all centres, after the tile in
    # the thread's scratch
    cdef floating* full = tile + CHUNK_SIZE * width if group_of != NULL else NULL
    cdef float* bound
    cdef Py_ssize_t best_idx[CHUNK_SIZE]
    cdef floating best_val[CHUNK_SIZE]
    cdef floating shift[CHUNK_SIZE]
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
        for k in range(n_proj):
            v = X_proj[i * n_proj + k]
            prefix = prefix + v * v
        rest = x_rest[i]
        # the gemm entries' rounding (as _settle_near_ties bounds it, over p + 8 terms to
        # cover the rounding of the projected coordinates and the bound's own few roundings)
        window = (_near_tie_window(n_proj + 8, prefix, max_proj_sqnorm, eps) + proj_tol
                  + 8.0 * eps * (rest + max_rest_norm) * (rest + max_rest_norm))
        shift[i] = <floating> (prefix - window)
        best_idx[i] = -1
        best_val[i] = INFINITY
    j0 = 0
    while j0 < n_clusters:
        n_block = min(width, n_clusters - j0)
        _gemm_nt(<int> n_rows, <int> n_block, <int> n_proj, -2.0, X_proj, <int> n_proj,
                 centers_proj + j0 * n_proj, <int> n_proj, 0.0, tile, <int> n_block)
        for i in range(n_rows):
            row = tile + i * n_block
            x = X + i * n_features
            if floating is float:
                ck_prune_bounds_float(row, n_block, shift[i], proj_sqnorm + j0, x_rest[i],
                                      rest_norm + j0, tol, rest_tol)
            else:
                ck_prune_bounds_double(row, n_block, shift[i], proj_sqnorm + j0, x_rest[i],
                                       rest_norm + j0, tol, rest_tol)
            # the centre of least bound first, so that the others meet a low threshold; then
            # every centre whose bound does not rule it out
            j_min = _argmin(row, n_block)
            slot = row + j_min if lower != NULL else NULL
            if row[j_min] <= best_val[i] * grow:
                n_evals += _complete(x, centers, n_features, j0 + j_min, &best_val[i],
                                     &best_idx[i], slot)
            limit = <floating> (best_val[i] * grow)
            if floating is float:
                n_below = ck_count_at_most_float(row, n_block, limit)
            else:
                n_below = ck_count_at_most_double(row, n_block, limit)
            if not (n_below == 0 or (n_below == 1 and row[j_min] <= limit)):
                for j in range(n_block):
                    if j != j_min and row[j] <= best_val[i] * grow:
                        n_evals += _complete(x, centers, n_features, j0 + j, &best_val[i],
                                             &best_idx[i], row + j if lower != NULL else NULL)
            if lower != NULL:  # the row's values (bounds, or direct distances) kept
                _keep_bounds(row, n_block, j0, lower + rows[i] * n_groups, group_shift, keep,
                             full + i * n_clusters if full != NULL else NULL)
        j0 += n_block
    for i in range(n_rows):
        # NaN everywhere leaves no centre found: a label inside [0, n_clusters) all the same
        labels[i] = <int> (best_idx[i] if best_idx[i] >= 0 else 0)
        min_dist2[i] = best_val[i]
        if lower == NULL:
            continue
        bound = lower + rows[i] * n_groups
        if group_of == NULL:  # Elkan's: the label's bound is its direct distance
            bound[labels[i]] = _store_lower(sqrt(<double> best_val[i]) + group_shift[labels[i]],
                                            keep)
            continue
        _group_bounds(full + i * n_clusters, labels[i], bound, group_of, members,
                      group_starts, n_groups, group_shift, keep)
    n_direct[0] = n_evals


def assign_pruned(const floating[:, ::1] X,             # IN  (n_samples, n_features)
                  const floating[:, ::1] centers,       # IN  (n_clusters, n_features)
                  const floating[:, ::1] X_proj,        # IN  (n_samples, n_proj)
                  const floating[::1] x_rest,           # IN  (n_samples,)
                  const floating[:, ::1] centers_proj,  # IN  (n_clusters, n_proj)
                  const floating[::1] centers_rest,     # IN  (n_clusters,)
                  double proj_tol,
                  double rest_tol,
                  int[::1] labels,                      # OUT (n_samples,)
                  floating[::1] min_dist2,              # OUT (n_samples,)
                  int n_threads,
                  float[:, ::1] lower=None,             # OUT rows of (n_rows, n_groups)
                  const Py_ssize_t[::1] rows=None,      # IN  (n_samples,)
                  const int[::1] group_of=None,         # IN  (n_clusters,) or None
                  const double[::1] group_shift=None,   # IN  (n_groups,)
                  double slack=0.0):
    """Assign every sample to its nearest centre, pruning centres by projected features.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), dtype=floating
    centers : ndarray of shape (n_clusters, n_features), dtype=floating
    X_proj : ndarray of shape (n_samples, n_proj), dtype=floating
        The rows' coordinates ``V^T x`` along ``n_proj`` orthonormal directions ``V``
        (rounded to the dtype: the bound allows for it).
    x_rest : ndarray of shape (n_samples,), dtype=floating
        ``||x - V V^T x||``, each within ``rest_tol`` (plus its rounding to the dtype).
    centers_proj, centers_rest : ndarrays of shape (n_clusters, n_proj) and (n_clusters,)
        The same for the centres.
    proj_tol : float
        How far ``||x~ - c~||^2`` from the given coordinates may lie from its value for the
        exact projections (the float64 rounding of ``V^T x``; their rounding to the dtype is
        allowed for here).
    rest_tol : float
        How far ``x_rest`` and ``centers_rest`` may lie from the exact norms (the
        cancellation in ``||x||^2 - ||V^T x||^2``, whose square root they are).
    labels : ndarray of shape (n_samples,), dtype=int32
        Output: the nearest centre by direct distances (``_sqdist_wide``) over all the
        features of ``X``, ties to the lowest index.
    min_dist2 : ndarray of shape (n_samples,), dtype=floating
        Output: the direct squared distance to it.
    n_threads : int
        Number of OpenMP threads.
    lower : ndarray of shape (n_rows, n_groups), dtype=float32, or None
        If given, output: the stored bounds of a bounded E-step's first visits, in its rows
        ``rows[i]``, ``(l + group_shift[g]) (1 - slack)`` with ``l`` a lower bound on the
        distance from the sample to every centre of group ``g`` (to centre ``g`` if
        ``group_of`` is None, Elkan's bounds; then the label's is its direct distance)
        other than its label (Yinyang's group bounds): each centre's pruning bound, or its
        direct distance where that was computed.
    rows : ndarray of shape (n_samples,), dtype=intp, or None
        With ``lower``: the row of ``lower`` of each sample.
    group_of : ndarray of shape (n_clusters,), dtype=int32, or None
        With ``lower``: the group of each centre, ``0 .. n_groups - 1``; ``None``: one
        group per centre.
    group_shift : ndarray of shape (n_groups,), dtype=float64, or None
        With ``lower``: the offset of each stored bound (the moves so far).
    slack : float, default=0.0
        With ``lower``: the stored bounds' relative margin (``_dist._store_lower``).

    Returns
    -------
    n_proj_pairs : int
        ``n_samples * n_clusters``: the pairs whose products over the projected features
        were computed.
    n_direct : int
        The direct distances over all features computed, at least one per sample.

    Raises
    ------
    ValueError
        If the projected arrays do not match ``X`` and ``centers``.

    Notes
    -----
    Per chunk of ``CHUNK_SIZE`` rows and per block of centres (``_block_width``, so that
    the tile stays in cache) one gemm gives ``-2 x~ . c~``, from which each pair's bound
    ``||x~ - c~||^2 + (||x_r|| - ||c_r||)^2`` is formed, lowered by the products' rounding
    window (that of ``_settle_near_ties``) and by the rounding of the norms. In each block
    a row's centre of least bound is looked at first, then every centre whose bound is at
    most the best direct distance so far times ``1 + 8 (D + 2) eps`` (the rounding of two
    direct distances): a centre skipped has a larger direct distance than the one returned,
    so the labels are exact if ``V`` is orthonormal (to the float64 rounding ``rest_tol``
    allows for). The work is ``n_samples n_clusters n_proj`` multiply-adds at the gemm
    rate plus ``n_direct`` direct distances. Every output element is written by one thread,
    so results do not depend on ``n_threads``. Assumes finite input.
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t n_clusters = centers.shape[0], n_proj = X_proj.shape[1], c
    cdef _TilePlan plan
    cdef long long n_direct = 0
    cdef long long[::1] chunk_direct
    if (X_proj.shape[0] != n_samples or x_rest.shape[0] != n_samples
            or centers_proj.shape[0] != n_clusters or centers_rest.shape[0] != n_clusters
            or centers_proj.shape[1] != n_proj or not 1 <= n_proj <= n_features):
        raise ValueError("X_proj, x_rest, centers_proj and centers_rest must give each row "
                         "and centre 1 to n_features projected coordinates and a norm.")
    cdef Py_ssize_t n_groups = n_clusters
    cdef float* lower_p = NULL
    cdef const Py_ssize_t* rows_p = NULL
    cdef const int* group_p = NULL
    cdef const double* shift_p = NULL
    cdef const int* members_p = NULL
    cdef const Py_ssize_t* starts_p = NULL
    cdef int[::1] members
    cdef Py_ssize_t[::1] group_starts
    if lower is not None:
        if group_of is not None:
            n_groups = lower.shape[1]
            if (group_of.shape[0] != n_clusters
                    or np.any(np.asarray(group_of) < 0)
                    or np.any(np.asarray(group_of) >= n_groups)):
                raise ValueError("group_of must give each centre a group of lower.")
            group_p = &group_of[0]
            members = np.argsort(group_of, kind="stable").astype(np.int32)
            group_starts = np.zeros(n_groups + 1, dtype=np.intp)
            np.cumsum(np.bincount(group_of, minlength=n_groups),
                      out=np.asarray(group_starts)[1:])
            members_p, starts_p = &members[0], &group_starts[0]
        if (rows is None or group_shift is None or rows.shape[0] != n_samples
                or lower.shape[1] != n_groups or group_shift.shape[0] != n_groups
                or (n_samples > 0 and (np.min(rows) < 0 or np.max(rows) >= lower.shape[0]))):
            raise ValueError("lower needs rows (one per sample, inside lower), group_shift "
                             "(one per group) and one column per group.")
        if n_samples > 0:
            lower_p, rows_p, shift_p = &lower[0, 0], &rows[0], &group_shift[0]
    if n_samples == 0:
        return 0, 0
    proj = np.asarray(centers_proj)
    proj_sq = np.einsum("ij,ij->i", proj.astype(np.float64), proj.astype(np.float64))
    cdef const floating[::1] proj_sqnorm = proj_sq.astype(proj.dtype)
    cdef double max_proj_sqnorm = float(proj_sq.max())
    cdef double max_rest_norm = float(np.max(centers_rest))
    keep = _prepare_tiles(&plan, centers, n_samples, CHUNK_SIZE, n_threads,
                          CHUNK_SIZE * _block_width(n_clusters, sizeof(floating))
                          * sizeof(floating) + (CHUNK_SIZE * n_clusters * sizeof(floating)
                                                if group_p != NULL else 0))
    chunk_direct = np.zeros(plan.n_chunks, dtype=np.int64)
    with nogil, parallel(num_threads=plan.n_threads):
        for c in prange(plan.n_chunks, schedule="static"):
            _pruned_chunk(&plan, &X[c * CHUNK_SIZE, 0], _chunk_len(&plan, c),
                          &X_proj[c * CHUNK_SIZE, 0], &x_rest[c * CHUNK_SIZE],
                          &centers_proj[0, 0], n_proj, &proj_sqnorm[0], &centers_rest[0],
                          max_proj_sqnorm, max_rest_norm, proj_tol, <floating> rest_tol,
                          &labels[c * CHUNK_SIZE], &min_dist2[c * CHUNK_SIZE],
                          &chunk_direct[c], lower_p,
                          rows_p + c * CHUNK_SIZE if rows_p != NULL else NULL, group_p,
                          members_p, starts_p, n_groups, shift_p, 1.0 - slack)
    for c in range(plan.n_chunks):
        n_direct += chunk_direct[c]
    return n_samples * n_clusters, n_direct
