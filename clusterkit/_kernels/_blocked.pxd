# The exact nearest centre of a chunk of rows from gemm tiles blocked over the centres, with
# the products optionally in float32 for float64 data (mixed precision).
from cython cimport floating
from libc.float cimport DBL_EPSILON, FLT_EPSILON
from libc.math cimport INFINITY, ldexp

from ._blas cimport _gemm_nt
from ._dist cimport CHUNK_SIZE, _argmin, _settle_exactly, _sqdist_wide, _sqnorm, tile_t


# Bytes of one thread's tile of CHUNK_SIZE rows x a block of centres. Wide blocks keep gemm
# efficient where its dot products are short: blocks of 256 centres (a 512 KiB tile, for
# the L2 cache) took Lloyd 1.7x as long at 16 features and C = 1000, and were no faster at
# 64 to 784 features (C = 500 to 16,384) than blocks of up to 4096 (float32) or 2048
# (float64) centres. The blocks keep the scratch memory bounded at many centres.
cdef enum:
    TILE_BYTES = 4096 * 1024

# Near-ties kept per row (centres within the window of the row's smallest entry); a row with
# more has its tile entries computed again (``_settle_row``).
cdef enum:
    MAX_NEAR = 16


cdef extern from "_nearest.h" nogil:
    Py_ssize_t ck_best_two_double(const double* row, const double* add, Py_ssize_t n,
                                  double* best, double* second)
    Py_ssize_t ck_best_two_float(const float* row, const float* add, Py_ssize_t n,
                                 float* best, float* second)


cdef inline Py_ssize_t _block_width(Py_ssize_t n_clusters, size_t itemsize) noexcept nogil:
    """Centres per tile block: the block that fills TILE_BYTES, or all the centres when they
    are at most half as many again (one block rather than a full and a short one)."""
    cdef Py_ssize_t width = <Py_ssize_t> (TILE_BYTES // (CHUNK_SIZE * itemsize))
    width = max(<Py_ssize_t> 16, width)
    return n_clusters if n_clusters <= width + width // 2 else width


cdef inline double _tie_window(Py_ssize_t n_features, double xn, double max_sqnorm,
                               size_t tile_itemsize) noexcept nogil:
    """How far above a row's smallest tile entry the true nearest centre may lie.

    A tile entry ``||c||^2 - 2 x.c`` differs from its exact value by at most about
    ``(D + 5) u (||x||^2 + ||c||^2)`` (``u`` the unit roundoff of the products' dtype: the
    rounding of ``x`` and ``c`` to it, the ``D``-term dot product, the norm and the sum); for
    two entries, twice that. The window is the generous ``4 (D + 2) eps (2 ||x||^2 + 2 max
    ||c||^2)`` (``eps = 2u``) of ``_settle_near_ties``, plus an absolute term for values in
    float32's subnormal range.
    """
    cdef double eps = FLT_EPSILON if tile_itemsize == 4 else DBL_EPSILON
    return ((4.0 * (n_features + 2)) * eps * (2.0 * xn + 2.0 * max_sqnorm)
            + (n_features + 2) * ldexp(2.0 + xn + max_sqnorm, -138))


cdef inline Py_ssize_t _settle_row(const tile_t* x_t, const tile_t* centers_t,
                                   const tile_t* sqnorm_t, Py_ssize_t n_clusters,
                                   const floating* x, const floating* centers,
                                   Py_ssize_t n_features, double window, tile_t* row,
                                   floating* dist2) noexcept nogil:
    """A row with a near-tie: its tile entries to all centres again (one gemm row), then
    every centre within ``window`` of the smallest ranked by ``_sqdist_wide`` on the data's
    dtype, ties to the lower index, as the direct-distance E-steps rank them."""
    cdef Py_ssize_t j, best
    _gemm_nt(1, <int> n_clusters, <int> n_features, -2.0, x_t, <int> n_features, centers_t,
             <int> n_features, 0.0, row, <int> n_clusters)
    for j in range(n_clusters):
        row[j] = row[j] + sqnorm_t[j]
    best = _argmin(row, n_clusters)
    return _settle_exactly(row, n_clusters, best, x, n_features, centers, row[best] + window,
                           dist2)


cdef inline void _nearest_blocked(const floating* X,          # IN  (n_rows, n_features)
                                  Py_ssize_t n_rows,
                                  Py_ssize_t n_features,
                                  const floating* centers,    # IN  (n_clusters, n_features)
                                  Py_ssize_t n_clusters,
                                  const tile_t* X_t,          # IN  X in the products' dtype
                                  Py_ssize_t ld_t,            # its row stride: n_features,
                                                              # or + 1 with ||x||^2 appended
                                  const tile_t* centers_t,    # IN  centres in it
                                  const tile_t* sqnorm_t,     # IN  (n_clusters,) ||c_j||^2
                                  double max_sqnorm,
                                  tile_t* tile,               # TMP (_tile_size)
                                  int* labels,                # OUT (n_rows,)
                                  floating* min_dist2) noexcept nogil:  # OUT (n_rows,)
    """Nearest centres of a chunk of at most CHUNK_SIZE rows, exactly (ties to the lower
    index, as every exact E-step).

    The centres go in blocks of ``_block_width``: gemm writes ``-2 x.c`` for one block into a
    tile that stays in cache, and one pass over each tile row adds ``||c||^2`` and finds the
    block's two smallest entries. Across blocks each row keeps its smallest entry and the
    centres within ``_tie_window`` of it (its near-ties, up to MAX_NEAR). A row without
    near-ties has its label; the others (rare) are ranked by direct distances, as
    ``_settle_near_ties`` ranks them. The distance written is the direct one to the label
    (``_sqdist_wide``, ``D`` flops a row), as the pruned and bounded E-steps write it: a
    tile entry plus ``||x||^2`` errs by up to the window, which is all of the distance of a
    row on its centre.
    """
    cdef Py_ssize_t width = _block_width(n_clusters, sizeof(tile_t))
    cdef Py_ssize_t i, j, j0, n_block, k, m, n_keep
    cdef tile_t b, s, v
    cdef tile_t* block_row
    cdef double limit
    cdef double best_val[CHUNK_SIZE]
    cdef double window[CHUNK_SIZE]
    cdef Py_ssize_t best_idx[CHUNK_SIZE]
    cdef Py_ssize_t n_near[CHUNK_SIZE]                 # -1: more than MAX_NEAR
    cdef Py_ssize_t near_idx[CHUNK_SIZE][MAX_NEAR]
    cdef double near_val[CHUNK_SIZE][MAX_NEAR]
    cdef floating d, d_best
    cdef double xn
    for i in range(n_rows):
        best_val[i] = INFINITY
        best_idx[i] = 0
        n_near[i] = 0
        if ld_t > n_features:  # the stored norm, rounded to float32: 2^-20 covers it
            xn = X_t[i * ld_t + n_features] * (1.0 + ldexp(1.0, -20))
        else:
            xn = _sqnorm(X + i * n_features, n_features)
        window[i] = _tie_window(n_features, xn, max_sqnorm, sizeof(tile_t))
    j0 = 0
    while j0 < n_clusters:
        n_block = min(width, n_clusters - j0)
        _gemm_nt(<int> n_rows, <int> n_block, <int> n_features, -2.0, X_t, <int> ld_t,
                 centers_t + j0 * n_features, <int> n_features, 0.0, tile, <int> n_block)
        for i in range(n_rows):
            block_row = tile + i * n_block
            if tile_t is float:
                k = ck_best_two_float(block_row, sqnorm_t + j0, n_block, &b, &s)
            else:
                k = ck_best_two_double(block_row, sqnorm_t + j0, n_block, &b, &s)
            if b < best_val[i]:
                # a new smallest entry: drop the near-ties now beyond its window, keep the
                # old smallest as one if it is within
                limit = b + window[i]
                if n_near[i] >= 0:
                    n_keep = 0
                    for m in range(n_near[i]):
                        if near_val[i][m] <= limit:
                            near_idx[i][n_keep] = near_idx[i][m]
                            near_val[i][n_keep] = near_val[i][m]
                            n_keep += 1
                    n_near[i] = n_keep
                if best_val[i] <= limit and n_near[i] >= 0:
                    if n_near[i] == MAX_NEAR:
                        n_near[i] = -1
                    else:
                        near_idx[i][n_near[i]] = best_idx[i]
                        near_val[i][n_near[i]] = best_val[i]
                        n_near[i] += 1
                best_val[i] = b
                best_idx[i] = j0 + k
                if s > limit:
                    continue
            else:
                limit = best_val[i] + window[i]
                if b > limit:
                    continue
            # this block holds near-ties of the row's smallest entry: keep them
            for j in range(n_block):
                if n_near[i] < 0:
                    break
                v = block_row[j] + sqnorm_t[j0 + j]
                if v <= limit and j0 + j != best_idx[i]:
                    if n_near[i] == MAX_NEAR:
                        n_near[i] = -1
                    else:
                        near_idx[i][n_near[i]] = j0 + j
                        near_val[i][n_near[i]] = v
                        n_near[i] += 1
        j0 += n_block
    for i in range(n_rows):
        if n_near[i] < 0:
            labels[i] = <int> _settle_row(X_t + i * ld_t, centers_t, sqnorm_t,
                                          n_clusters, X + i * n_features, centers,
                                          n_features, window[i], tile + CHUNK_SIZE * width,
                                          min_dist2 + i)
            continue
        k = best_idx[i]
        limit = best_val[i] + window[i]
        # the direct distance, as the pruned and bounded E-steps report it (an entry plus
        # ||x||^2 errs by up to the window: all of the distance of a row on its centre); the
        # near-ties ranked by direct distances on the data's dtype, ties to the lower index
        d_best = _sqdist_wide(X + i * n_features, centers + k * n_features, n_features)
        for m in range(n_near[i]):
            if near_val[i][m] <= limit:
                j = near_idx[i][m]
                d = _sqdist_wide(X + i * n_features, centers + j * n_features, n_features)
                if d < d_best or (d == d_best and j < k):
                    k = j
                    d_best = d
        min_dist2[i] = d_best
        labels[i] = <int> k
