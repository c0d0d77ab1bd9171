"""Exact assignment of samples to their nearest centre (the E-step of Lloyd's k-means)."""
import numpy as np

from cython cimport floating
from cython.parallel cimport parallel, prange
from libc.float cimport DBL_MIN, FLT_MIN
from libc.math cimport exp, log

from ._accumulate cimport _add_sample, _block_rows, _blocks_fit, _n_blocks, _reduce_blocks
from ._blocked cimport CHUNK_SIZE, _block_width, _nearest_blocked
from ._chunks cimport _chunk_len, _chunk_stop, _thread_scratch, _TilePlan
from ._dist cimport _argmin, _prepare_tiles, _sqdist_wide, _sqnorm, _tile_from, _use_gemm

#: From this many features on, the fits and ``nearest`` give float64 data float32 products
#: (a float32 copy of the data, :func:`float32_products`): about twice as fast, the same
#: labels (near-ties are settled in float64). Below it the copy costs about what it saves.
MIXED_MIN_FEATURES = 64

#: Data and centres beyond this magnitude keep float64 products: float32 squares and dot
#: products of them could overflow.
MIXED_MAX_ABS = 1e15


cdef struct _Products:
    const float* X32        # float32_products of float64 data (mixed precision), or NULL
    const float* centers32
    const float* sqnorm32


def float32_products(X):
    """A float32 copy of float64 data with each row's ``||x||^2`` appended, for the
    mixed-precision products of :func:`assign_full`, or ``None`` where they do not apply
    (float32 data, few features, values beyond ``MIXED_MAX_ABS`` or not finite).

    With it, the distance tiles come from float32 gemm (about twice float64's speed) and
    the labels stay exactly those of float64 products: rows whose runner-up is within the
    float32 rounding window are settled by float64 distances. The norms (for that window)
    spare a pass over the float64 rows per call. Costs ``n_samples x (n_features + 1)``
    float32 (about half the data), made once per fit.
    """
    if X.dtype != np.float64 or X.ndim != 2 or not _use_gemm(X.shape[1]) or X.size == 0:
        return None
    X32 = np.empty((X.shape[0], X.shape[1] + 1), dtype=np.float32)
    X32[:, :-1] = X
    if not np.abs(X32[:, :-1]).max() <= MIXED_MAX_ABS:  # also refuses NaN and inf
        return None
    X32[:, -1] = np.einsum("ij,ij->i", X, X)
    return X32


cdef object _fill_products(_Products* products, const floating[:, ::1] X,
                           const floating[:, ::1] centers, centers_sqnorm, X32):
    """Set ``products`` for a call; returns the arrays its pointers point into (to keep)."""
    cdef const float[:, ::1] x32v
    cdef const float[:, ::1] c32v
    cdef const float[::1] n32v
    products.X32 = NULL
    if floating is double and X32 is not None and _use_gemm(X.shape[1]):
        if X32.shape != (X.shape[0], X.shape[1] + 1):
            raise ValueError("X32 must be float32_products(X)")
        centers32 = np.asarray(centers, dtype=np.float32)
        if np.abs(centers32).max() <= MIXED_MAX_ABS:
            sqnorm32 = np.asarray(centers_sqnorm, dtype=np.float32)
            x32v, c32v, n32v = X32, centers32, sqnorm32
            products.X32 = &x32v[0, 0]
            products.centers32, products.sqnorm32 = &c32v[0, 0], &n32v[0]
            return X32, centers32, sqnorm32
    return None


cdef Py_ssize_t _tile_bytes(Py_ssize_t n_clusters, size_t itemsize, X32):
    """Scratch per thread for ``_assign_chunk``: a tile block and one full row
    (``_nearest_blocked``), room for float32 ones too where the float32 products may be
    used."""
    cdef Py_ssize_t size = (CHUNK_SIZE * _block_width(n_clusters, itemsize) + n_clusters) * itemsize
    if X32 is None:
        return size
    return max(size, (CHUNK_SIZE * _block_width(n_clusters, 4) + n_clusters) * 4)


cdef extern from "_nearest.h" nogil:
    ctypedef Py_ssize_t (*ck_nearest_double_fn)(const double*, const double*, Py_ssize_t,
                                                Py_ssize_t, double*, double*) noexcept nogil
    ctypedef Py_ssize_t (*ck_nearest_float_fn)(const float*, const float*, Py_ssize_t,
                                               Py_ssize_t, float*, float*) noexcept nogil
    ck_nearest_double_fn ck_nearest_double_for(Py_ssize_t n_features)
    ck_nearest_float_fn ck_nearest_float_for(Py_ssize_t n_features)
    ctypedef void (*ck_nearest4_double_fn)(const double*, const double*, Py_ssize_t, int*,
                                           double*) noexcept nogil
    ctypedef void (*ck_nearest4_float_fn)(const float*, const float*, Py_ssize_t, int*,
                                          float*) noexcept nogil
    ck_nearest4_double_fn ck_nearest4_double_for(Py_ssize_t n_features)
    ck_nearest4_float_fn ck_nearest4_float_for(Py_ssize_t n_features)


cdef void _assign_chunk(const _TilePlan* plan,
                        const _Products* products,       # IN  (mixed precision)
                        const floating* X,               # IN  (n_rows, n_features)
                        Py_ssize_t n_rows,
                        Py_ssize_t start,                # the chunk's first row (mixed data)
                        int* labels,                     # OUT (n_rows,)
                        floating* min_dist2) noexcept nogil:  # OUT (n_rows,)
    cdef Py_ssize_t n_features = plan.n_features, n_clusters = plan.n_clusters, i, best
    cdef const floating* centers = <const floating*> plan.centers
    cdef const floating* centers_T = <const floating*> plan.centers_T
    cdef void* tile = _thread_scratch(plan)
    cdef bint four
    cdef ck_nearest_double_fn nearest_double = ck_nearest_double_for(n_features)
    cdef ck_nearest_float_fn nearest_float = ck_nearest_float_for(n_features)
    cdef ck_nearest4_double_fn nearest4_double = ck_nearest4_double_for(n_features)
    cdef ck_nearest4_float_fn nearest4_float = ck_nearest4_float_for(n_features)
    if not _use_gemm(n_features):
        # four samples per call where a variant for this feature count exists
        if floating is float:
            four = nearest4_float != NULL
        else:
            four = nearest4_double != NULL
        i = 0
        if four:
            while i + 4 <= n_rows:
                if floating is float:
                    nearest4_float(X + i * n_features, centers_T, n_clusters, labels + i,
                                   min_dist2 + i)
                else:
                    nearest4_double(X + i * n_features, centers_T, n_clusters, labels + i,
                                    min_dist2 + i)
                i += 4
        while i < n_rows:
            if floating is float:
                best = nearest_float(X + i * n_features, centers_T, n_clusters, n_features,
                                     <float*> tile, min_dist2 + i)
            else:
                best = nearest_double(X + i * n_features, centers_T, n_clusters, n_features,
                                      <double*> tile, min_dist2 + i)
            labels[i] = <int> best
            i += 1
        return
    if floating is double and products.X32 != NULL:
        _nearest_blocked(X, n_rows, n_features, centers, n_clusters,
                         products.X32 + start * (n_features + 1), n_features + 1,
                         products.centers32, products.sqnorm32, plan.max_sqnorm,
                         <float*> tile, labels, min_dist2)
    else:
        _nearest_blocked(X, n_rows, n_features, centers, n_clusters, X, n_features, centers,
                         <const floating*> plan.centers_sqnorm, plan.max_sqnorm,
                         <floating*> tile, labels, min_dist2)


def assign_full(const floating[:, ::1] X,        # IN
                const floating[:, ::1] centers,  # IN
                int[::1] labels,                 # OUT
                floating[::1] min_dist2,         # OUT
                int n_threads,
                X32=None):                       # IN  float32_products(X), or None
    """Assign every sample to its nearest centre.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), dtype=floating
    centers : ndarray of shape (n_clusters, n_features), dtype=floating
    labels : ndarray of shape (n_samples,), dtype=int32
        Output: index of the nearest centre (ties go to the lowest index).
    min_dist2 : ndarray of shape (n_samples,), dtype=floating
        Output: the direct squared distance to the nearest centre, as every exact E-step
        reports it.
    n_threads : int
        Number of OpenMP threads.
    X32 : ndarray of shape (n_samples, n_features + 1), dtype=float32, or None
        For float64 data, ``float32_products(X)``: the distance tiles then come from float32
        gemm, the labels are the same and ``min_dist2`` is a direct float64 distance.
        Ignored for float32 data, below ``GEMM_MIN_FEATURES`` and for centres beyond
        ``MIXED_MAX_ABS``.

    Returns
    -------
    n_distance_evals : int
        ``n_samples * n_clusters``.

    Notes
    -----
    Works by chunks of ``CHUNK_SIZE`` samples; from ``GEMM_MIN_FEATURES`` on the centres are
    ranked by gemm in blocks that keep each thread's ``CHUNK_SIZE x block`` tile in cache
    (``_blocked.pxd``), so no ``n_samples x n_clusters`` array is formed. The centres within
    the products' rounding of the nearest are ranked again by direct distances: an exact tie
    goes to the lowest index, as in Elkan's E-step. Every output element is written by
    exactly one thread, so results do not depend on ``n_threads``. Assumes valid input; NaN
    centres give labels inside ``[0, n_clusters)`` all the same.
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_clusters = centers.shape[0], c
    cdef _TilePlan plan
    cdef _Products products
    if n_samples == 0:
        return 0
    keep = _prepare_tiles(&plan, centers, n_samples, CHUNK_SIZE, n_threads,
                          _tile_bytes(n_clusters, sizeof(floating), X32))
    keep32 = _fill_products(&products, X, centers, keep[0], X32)
    with nogil, parallel(num_threads=plan.n_threads):
        for c in prange(plan.n_chunks, schedule="static"):
            _assign_chunk(&plan, &products, &X[c * CHUNK_SIZE, 0], _chunk_len(&plan, c),
                          c * CHUNK_SIZE, &labels[c * CHUNK_SIZE], &min_dist2[c * CHUNK_SIZE])
    return n_samples * n_clusters


def assign_full_accumulate(const floating[:, ::1] X,              # IN
                           const floating[::1] sample_weight,     # IN
                           const floating[:, ::1] centers,        # IN
                           int[::1] labels,                       # OUT
                           floating[::1] min_dist2,               # OUT
                           floating[:, ::1] centers_sum,          # OUT
                           floating[::1] weight_in_clusters,      # OUT
                           int n_threads,
                           double[::1] sse=None,                  # OUT, or None
                           X32=None):                             # IN  float32_products(X)
    """Assign every sample to its nearest centre and sum the clusters in the same pass.

    Equals :func:`assign_full` followed by
    :func:`clusterkit._kernels._mstep.accumulate_statistics` with the labels (and
    ``min_dist2`` for ``sse``), bit for bit, but reads the data once (Lloyd's E- and M-step
    statistics in one pass, as scikit-learn's Lloyd does).

    Parameters
    ----------
    X, centers, labels, min_dist2, n_threads, X32
        As for :func:`assign_full`.
    sample_weight : ndarray of shape (n_samples,), dtype=floating
    centers_sum : ndarray of shape (n_clusters, n_features), dtype=floating
        Output: ``sum_{n: labels_n = c} w_n x_n``.
    weight_in_clusters : ndarray of shape (n_clusters,), dtype=floating
        Output: ``sum_{n: labels_n = c} w_n``.
    sse : ndarray of shape (n_clusters,), dtype=float64, or None
        Output if given: ``sum_{n: labels_n = c} w_n min_dist2_n``, summed in float64.

    Returns
    -------
    n_distance_evals : int
        As for :func:`assign_full`.

    Notes
    -----
    Requires ``_mstep.blocks_fit(n_samples, n_clusters, n_features, itemsize)``: the sums
    use the M-step's fixed blocks of rows (``_accumulate.pxd``), each block assigned and
    summed by one thread in row order, then the blocks added in block order, so the results
    do not depend on ``n_threads``. Assumes valid input.
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t n_clusters = centers.shape[0]
    cdef Py_ssize_t n_blocks = _n_blocks(n_samples)
    cdef Py_ssize_t chunks_per_block = _block_rows(n_samples, n_blocks) // CHUNK_SIZE
    cdef Py_ssize_t b, c, start, i
    cdef bint with_sse = sse is not None
    cdef double* block_sse
    cdef _TilePlan plan
    cdef _Products products
    if not _blocks_fit(n_samples, n_clusters, n_features, sizeof(floating)):
        raise ValueError("assign_full_accumulate needs the fixed-block layout; check "
                         "_mstep.blocks_fit first.")
    # a thread per block at most
    keep = _prepare_tiles(&plan, centers, n_samples, CHUNK_SIZE, min(n_threads, n_blocks),
                          _tile_bytes(n_clusters, sizeof(floating), X32))
    keep32 = _fill_products(&products, X, centers, keep[0], X32)
    dtype = np.float32 if floating is float else np.float64
    cdef floating[:, :, ::1] sums = np.zeros((n_blocks, n_clusters, n_features), dtype=dtype)
    cdef floating[:, ::1] weights = np.zeros((n_blocks, n_clusters), dtype=dtype)
    cdef double[:, ::1] sse_parts = np.zeros((n_blocks, n_clusters if with_sse else 1))
    with nogil:
        with parallel(num_threads=plan.n_threads):
            for b in prange(n_blocks, schedule="static"):
                block_sse = &sse_parts[b, 0] if with_sse else NULL
                for c in range(b * chunks_per_block, _chunk_stop(b, chunks_per_block,
                                                                 plan.n_chunks)):
                    start = c * CHUNK_SIZE
                    _assign_chunk(&plan, &products, &X[start, 0], _chunk_len(&plan, c), start,
                                  &labels[start], &min_dist2[start])
                    for i in range(start, start + _chunk_len(&plan, c)):
                        _add_sample(&sums[b, 0, 0], &weights[b, 0], block_sse, labels[i],
                                    &X[i, 0], sample_weight[i], min_dist2[i], n_features)
        _reduce_blocks(sums, weights, &sse_parts[0, 0], centers_sum, weight_in_clusters,
                       &sse[0] if with_sse else NULL, plan.n_threads)
    return n_samples * n_clusters


cdef inline floating _softmax_row(floating* row, Py_ssize_t n,
                                  double inv_two_sigma2) noexcept nogil:
    """Turn squared distances into responsibilities in place; return the log normaliser.

    ``r_j = exp(-d2_j / (2 s2)) / sum_l exp(-d2_l / (2 s2))``, computed with the smallest
    distance subtracted first (log-sum-exp shift). Responsibilities below the dtype's smallest
    normal number become 0: as subnormal numbers they would slow every later sum over them
    (the M-step's) many times over for no visible change. The return value is
    ``log sum_l exp(-d2_l / (2 s2))``.
    """
    cdef Py_ssize_t j
    cdef floating d_min = row[0]
    cdef double total = 0, e, r, a
    cdef double tiny = FLT_MIN if floating is float else DBL_MIN
    # beyond a_max, exp(-a) < tiny / 2: its responsibility becomes 0 and, next to the best
    # term (exp(0) = 1), it cannot change the total either, so exp is not even called
    cdef double a_max = 88.5 if floating is float else 709.5
    for j in range(1, n):
        if row[j] < d_min:
            d_min = row[j]
    for j in range(n):
        a = (row[j] - d_min) * inv_two_sigma2
        # the nearest cluster (first in sorted rows) needs no exp: exp(-0) is exactly 1
        e = 1.0 if a == 0 else (exp(-a) if a <= a_max else 0)
        row[j] = <floating> e
        total += e
    for j in range(n):
        r = row[j] / total
        row[j] = <floating> r if r >= tiny else 0
    return <floating> (log(total) - d_min * inv_two_sigma2)


cdef void _resp_chunk(const _TilePlan* plan,
                      const floating* X,         # IN  (n_rows, n_features)
                      Py_ssize_t n_rows,
                      double inv_two_sigma2,
                      floating* resp,            # OUT (n_rows, n_clusters)
                      int* labels,               # OUT (n_rows,)
                      floating* min_dist2,       # OUT (n_rows,)
                      floating* log_norm) noexcept nogil:  # OUT (n_rows,)
    cdef Py_ssize_t n_features = plan.n_features, n_clusters = plan.n_clusters, i, j, best
    cdef bint gemm = _use_gemm(n_features)
    cdef floating xn, d
    cdef floating* row
    _tile_from(plan, X, n_rows, resp)
    for i in range(n_rows):
        row = resp + i * n_clusters
        if gemm:
            xn = _sqnorm(X + i * n_features, n_features)
            for j in range(n_clusters):
                d = row[j] + xn
                row[j] = d if d > 0 else 0
        best = _argmin(row, n_clusters)
        labels[i] = <int> best
        min_dist2[i] = row[best]
        if inv_two_sigma2 > 0:
            log_norm[i] = _softmax_row(row, n_clusters, inv_two_sigma2)


def responsibilities_full(const floating[:, ::1] X,        # IN
                          const floating[:, ::1] centers,  # IN
                          double sigma2,
                          floating[:, ::1] resp,           # OUT
                          int[::1] labels,                 # OUT
                          floating[::1] min_dist2,         # OUT
                          floating[::1] log_norm,          # OUT
                          int n_threads):
    """Exact responsibilities of an isotropic, equal-weight GMM over all clusters.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), dtype=floating
    centers : ndarray of shape (n_clusters, n_features), dtype=floating
    sigma2 : float
        Shared variance. ``sigma2 <= 0`` skips the softmax: ``resp`` then holds the squared
        distances and ``log_norm`` is left untouched (used when the variance is only known
        after the distances, vc-GMM eq. 12).
    resp : ndarray of shape (n_samples, n_clusters), dtype=floating
        Output: ``r_nc = exp(-d2_nc / (2 sigma2)) / sum_c' exp(-d2_nc' / (2 sigma2))``;
        values below the dtype's smallest normal number are 0.
    labels : ndarray of shape (n_samples,), dtype=int32
        Output: nearest cluster (ties to the lowest index).
    min_dist2 : ndarray of shape (n_samples,), dtype=floating
        Output: squared distance to the nearest cluster.
    log_norm : ndarray of shape (n_samples,), dtype=floating
        Output: ``log sum_c exp(-d2_nc / (2 sigma2))``; the log-likelihood of ``x_n`` is this
        minus ``log C + (D/2) log(2 pi sigma2)``.
    n_threads : int

    Returns
    -------
    n_distance_evals : int
        ``n_samples * n_clusters``: every distance, as in :func:`assign_full`.

    Notes
    -----
    The distances are written straight into ``resp`` (chunk by chunk) and turned into
    responsibilities in place, so the only ``n_samples x n_clusters`` array is the output the
    full soft M-step needs anyway. Assumes valid input.
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_clusters = centers.shape[0], c
    cdef double inv_two_sigma2 = 0.5 / sigma2 if sigma2 > 0 else 0.0
    cdef _TilePlan plan
    if n_samples == 0:
        return 0
    keep = _prepare_tiles(&plan, centers, n_samples, CHUNK_SIZE, n_threads, 0)
    with nogil, parallel(num_threads=plan.n_threads):
        for c in prange(plan.n_chunks, schedule="static"):
            _resp_chunk(&plan, &X[c * CHUNK_SIZE, 0], _chunk_len(&plan, c), inv_two_sigma2,
                        &resp[c * CHUNK_SIZE, 0], &labels[c * CHUNK_SIZE],
                        &min_dist2[c * CHUNK_SIZE], &log_norm[c * CHUNK_SIZE])
    return n_samples * n_clusters


def responsibilities_truncated(const floating[:, ::1] dist2,  # IN
                               double sigma2,
                               floating[:, ::1] resp,         # OUT
                               floating[::1] log_norm,        # OUT
                               int n_threads):
    """Truncated responsibilities from given squared distances (Forster & Lücke 2018, eq. 5).

    Parameters
    ----------
    dist2 : ndarray of shape (n_samples, n_winners), dtype=floating
        Squared distances of each sample to the clusters of its set ``K(n)``.
    sigma2 : float
        Shared variance (> 0).
    resp : ndarray of shape (n_samples, n_winners), dtype=floating
        Output: the softmax of ``-dist2 / (2 sigma2)`` over each row, values below the dtype's
        smallest normal number set to 0. May be ``dist2`` itself.
    log_norm : ndarray of shape (n_samples,), dtype=floating
        Output: ``log sum_{c in K(n)} exp(-d2_nc / (2 sigma2))``.
    n_threads : int

    Returns
    -------
    n_distance_evals : int
        Always 0: the distances were computed (and counted) by the caller.
    """
    cdef Py_ssize_t n_samples = dist2.shape[0], n_winners = dist2.shape[1]
    cdef Py_ssize_t i, j
    cdef double inv_two_sigma2 = 0.5 / sigma2
    if n_samples == 0:
        return 0
    with nogil:
        for i in prange(n_samples, schedule="static", num_threads=n_threads):
            if &resp[i, 0] != &dist2[i, 0]:
                for j in range(n_winners):
                    resp[i, j] = dist2[i, j]
            log_norm[i] = _softmax_row(&resp[i, 0], n_winners, inv_two_sigma2)
    return 0


def dist2_to_labels(const floating[:, ::1] X,        # IN
                    const floating[:, ::1] centers,  # IN
                    const int[::1] labels,           # IN
                    floating[::1] dist2,             # OUT
                    int n_threads):
    """Squared distance of every sample to the centre its label names.

    Parameters
    ----------
    X, centers, n_threads
        As for :func:`assign_full`.
    labels : ndarray of shape (n_samples,), dtype=int32
        Valid cluster indices.
    dist2 : ndarray of shape (n_samples,), dtype=floating
        Output: ``||X[i] - centers[labels[i]]||^2``, computed directly (never negative).

    Returns
    -------
    n_distance_evals : int
        ``n_samples``.
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1], i
    with nogil:
        for i in prange(n_samples, schedule="static", num_threads=max(1, n_threads)):
            dist2[i] = _sqdist_wide(&X[i, 0], &centers[labels[i], 0], n_features)
    return n_samples
