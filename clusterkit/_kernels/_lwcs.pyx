"""Lightweight-coreset kernels: a block's weighted moments and its LWCS sampling mass.

:class:`clusterkit.LWCS` draws every random number; these kernels are deterministic functions
of their arguments and give bit-identical results for any ``n_threads``. Both sum in float64
whatever the data's dtype, so the first pass's moments and the second pass's masses agree to
float64 rounding.
"""
import numpy as np

from cython cimport floating
from cython.parallel cimport parallel, prange, threadid

from ._chunks cimport _chunk_stop, _chunk_threads, _n_chunks
from ._dist cimport CHUNK_SIZE
from ._openmp cimport _threads_for


# Bytes of data per piece of the moments: small enough that the second pass over a piece
# finds it in the L2 cache.
cdef enum:
    PIECE_BYTES = 64 << 10


cdef extern from "_lwcs.h" nogil:
    double ck_row_dist2_double(const double* x, const double* mean, Py_ssize_t n_features)
    double ck_row_dist2_float(const float* x, const double* mean, Py_ssize_t n_features)
    void ck_piece_sums_extremes_double(const double* X, const double* w, Py_ssize_t n_rows,
                                       Py_ssize_t n_features, double* acc, double* low,
                                       double* high)
    void ck_piece_sums_extremes_float(const float* X, const double* w, Py_ssize_t n_rows,
                                      Py_ssize_t n_features, double* acc, double* low,
                                      double* high)
    void ck_piece_sums_double(const double* X, const double* w, Py_ssize_t n_rows,
                              Py_ssize_t n_features, double* acc, double* low, double* high)
    void ck_piece_sums_float(const float* X, const double* w, Py_ssize_t n_rows,
                             Py_ssize_t n_features, double* acc, double* low, double* high)
    void ck_piece_squares_double(const double* X, const double* w, Py_ssize_t n_rows,
                                 Py_ssize_t n_features, const double* mean, double* acc)
    void ck_piece_squares_float(const float* X, const double* w, Py_ssize_t n_rows,
                                Py_ssize_t n_features, const double* mean, double* acc)


cdef void _piece_moments(const floating* X,          # IN    (n_rows, n_features)
                         const double* w,             # IN    (n_rows,)
                         Py_ssize_t n_rows,
                         Py_ssize_t n_features,
                         double* weight,              # OUT   scalar
                         double* mean,                # OUT   (n_features,)
                         double* m2,                  # OUT   scalar
                         double* low,                 # INOUT (n_features,)
                         double* high,                # INOUT (n_features,)
                         bint extremes,
                         double* acc) noexcept nogil:  # TMP  (n_features,)
    # Two passes over a piece that stays in cache: the mean, then the squared deviations
    # from it (no cancellation, unlike sum w x^2 - W mean^2).
    cdef Py_ssize_t i, k
    cdef double total = 0, s = 0
    for i in range(n_rows):
        total += w[i]
    weight[0] = total
    for k in range(n_features):
        acc[k] = 0
    if extremes:
        if floating is float:
            ck_piece_sums_extremes_float(X, w, n_rows, n_features, acc, low, high)
        else:
            ck_piece_sums_extremes_double(X, w, n_rows, n_features, acc, low, high)
    elif floating is float:
        ck_piece_sums_float(X, w, n_rows, n_features, acc, low, high)
    else:
        ck_piece_sums_double(X, w, n_rows, n_features, acc, low, high)
    if not total > 0:
        for k in range(n_features):
            mean[k] = 0
        m2[0] = 0
        return
    for k in range(n_features):
        mean[k] = acc[k] / total
        acc[k] = 0
    if floating is float:
        ck_piece_squares_float(X, w, n_rows, n_features, mean, acc)
    else:
        ck_piece_squares_double(X, w, n_rows, n_features, mean, acc)
    for k in range(n_features):
        s += acc[k]
    m2[0] = s


def moments_weighted(const floating[:, ::1] X,         # IN
                     const double[::1] sample_weight,  # IN
                     double[::1] mean,                 # OUT
                     double[::1] low,                  # OUT
                     double[::1] high,                 # OUT
                     bint extremes,
                     int n_threads):
    """The weight, weighted mean and sum of squared deviations of a block of rows.

    ``W = sum w_n``, ``mean = sum w_n x_n / W`` and ``M2 = sum w_n ||x_n - mean||^2``, all in
    float64, plus every feature's smallest and largest value.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), dtype=floating
    sample_weight : ndarray of shape (n_samples,), dtype=float64
    mean : ndarray of shape (n_features,), dtype=float64
        Output: the weighted mean (zeros if ``W = 0``).
    low, high : ndarray of shape (n_features,), dtype=float64
        Output: every feature's smallest and largest value (``inf`` and ``-inf`` if
        ``n_samples = 0`` or without ``extremes``).
    extremes : bool
        Whether to find the extremes (they cost about as much as the sums).
    n_threads : int
        Number of OpenMP threads.

    Returns
    -------
    weight : float
        ``W``.
    m2 : float
        ``M2``.

    Notes
    -----
    The rows are cut into pieces of 64 KiB (at least one row); each piece's mean and ``M2``
    come from two passes over it while it is in cache, and the pieces are combined in order with
    the parallel-variance formula after the parallel loop (fixed blocks: the result does not
    depend on ``n_threads``). NaN or infinite entries give non-finite results. Assumes valid
    input (shapes agree, C-contiguous).
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t piece = max(1, PIECE_BYTES // (n_features * sizeof(floating)))
    cdef Py_ssize_t n_chunks = _n_chunks(n_samples, piece)
    cdef Py_ssize_t c, k, start
    cdef int t
    cdef double total = 0, m2 = 0, new_total, ratio, delta, shift
    mean[:] = 0
    low[:] = np.inf
    high[:] = -np.inf
    if n_samples == 0:
        return 0.0, 0.0
    n_threads = _chunk_threads(_threads_for(n_samples * n_features, n_threads), n_chunks)
    piece_weight = np.empty(n_chunks)
    piece_mean = np.empty((n_chunks, n_features))
    piece_m2 = np.empty(n_chunks)
    thread_low = np.full((n_threads, n_features), np.inf)
    thread_high = np.full((n_threads, n_features), -np.inf)
    scratch = np.empty((n_threads, n_features))
    cdef double[::1] pw = piece_weight, pm2 = piece_m2
    cdef double[:, ::1] pmean = piece_mean, tlow = thread_low, thigh = thread_high
    cdef double[:, ::1] acc = scratch
    with nogil, parallel(num_threads=n_threads):
        t = threadid()
        for c in prange(n_chunks, schedule="static"):
            start = c * piece
            _piece_moments(&X[start, 0], &sample_weight[start],
                           _chunk_stop(c, piece, n_samples) - start, n_features,
                           &pw[c], &pmean[c, 0], &pm2[c], &tlow[t, 0], &thigh[t, 0],
                           extremes, &acc[t, 0])
    # min and max are exact, so the per-thread extremes combine in any order
    np.min(thread_low, axis=0, out=np.asarray(low))
    np.max(thread_high, axis=0, out=np.asarray(high))
    for c in range(n_chunks):
        if not pw[c] > 0:
            continue
        new_total = total + pw[c]
        ratio = pw[c] / new_total
        shift = 0
        for k in range(n_features):
            delta = pmean[c, k] - mean[k]
            shift += delta * delta
            mean[k] += delta * ratio
        m2 += pm2[c] + total * ratio * shift
        total = new_total
    return total, m2


cdef void _mass_chunk(const floating* X,          # IN  (n_rows, n_features)
                      const double* w,             # IN  (n_rows,)
                      Py_ssize_t n_rows,
                      Py_ssize_t n_features,
                      const double* mean,          # IN  (n_features,)
                      double a,
                      double b,
                      double* dist2,               # OUT (n_rows,)
                      double* mass) noexcept nogil:  # OUT (n_rows,)
    cdef Py_ssize_t i
    for i in range(n_rows):
        if floating is float:
            dist2[i] = ck_row_dist2_float(X + i * n_features, mean, n_features)
        else:
            dist2[i] = ck_row_dist2_double(X + i * n_features, mean, n_features)
        mass[i] = w[i] * (a + b * dist2[i])


def mass_cumulative(const floating[:, ::1] X,         # IN
                    const double[::1] sample_weight,  # IN
                    const double[::1] mean,           # IN
                    double a,
                    double b,
                    double[::1] dist2,                # OUT
                    double[::1] cumsum,               # OUT
                    int n_threads):
    """LWCS's sampling mass of every row of a block, as a cumulative sum.

    ``dist2[n] = ||x_n - mean||^2`` and ``cumsum[n] = sum_{m <= n} w_m (a + b dist2[m])``,
    in float64 (the data are converted row by row, never copied).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), dtype=floating
    sample_weight : ndarray of shape (n_samples,), dtype=float64
    mean : ndarray of shape (n_features,), dtype=float64
    a, b : float
        The coefficients of the mass, ``w (a + b d^2)``.
    dist2 : ndarray of shape (n_samples,), dtype=float64
        Output: squared distances to ``mean``.
    cumsum : ndarray of shape (n_samples,), dtype=float64
        Output: the cumulative mass, in row order.
    n_threads : int
        Number of OpenMP threads.

    Returns
    -------
    n_distance_evals : int
        ``n_samples``: one per row, to ``mean``.

    Notes
    -----
    Distances are computed directly (a row equal to ``mean`` gets exactly 0) in parallel over
    rows; the cumulative sum runs in row order after the parallel loop, so the result does not
    depend on ``n_threads``. Assumes valid input (shapes agree, C-contiguous).
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t n_chunks = _n_chunks(n_samples, CHUNK_SIZE), c, i, start
    cdef double running = 0
    if n_samples == 0:
        return 0
    n_threads = _chunk_threads(_threads_for(n_samples * n_features, n_threads), n_chunks)
    with nogil, parallel(num_threads=n_threads):
        for c in prange(n_chunks, schedule="static"):
            start = c * CHUNK_SIZE
            _mass_chunk(&X[start, 0], &sample_weight[start],
                        _chunk_stop(c, CHUNK_SIZE, n_samples) - start, n_features, &mean[0], a,
                        b, &dist2[start], &cumsum[start])
    with nogil:
        for i in range(n_samples):
            running += cumsum[i]
            cumsum[i] = running
    return n_samples
