"""Checks of the rows, weights and ranges a fit reads: NaN/inf and zero-norm rows named by
their index in all the data, weights a dtype can hold, data and centres whose distances stay
representable. Here, below the estimator, so that data in row chunks checks its blocks where
it reads them; the estimator's validation (``_estimator/validation.py``) re-exports them."""
import contextlib
import contextvars
import numbers

import numpy as np

from .sparse import kernels_for

__all__ = ["check_sample_weight", "check_range", "check_representable", "bounding_box",
           "squared_diagonal", "check_finite_centers", "check_bandwidth",
           "count_weight_problems", "check_weight_counts", "check_weight_shape", "unit_rows",
           "nonfinite_rows", "check_finite_rows", "check_unit_rows", "zero_norm_rows",
           "check_block_rows", "rows_from"]


def nonfinite_rows(X):
    """The number of rows of ``X`` (dense or CSR) with a NaN or infinite entry, and the
    index of the first of them (-1 if there is none)."""
    return kernels_for(X).nonfinite_rows(X)


#: The first row, in all the data, of the rows being checked (one row chunk of a dask array,
#: which a fitted model's lazy methods check chunk by chunk); ``None``: all the data.
_FIRST_ROW = contextvars.ContextVar("first_row", default=None)


@contextlib.contextmanager
def rows_from(first_row):
    """Within the block, the rows :func:`check_data` and :func:`unit_rows` check are one row
    chunk of the data, starting at row ``first_row``: their messages number the rows in all
    the data and say that they counted that chunk's."""
    token = _FIRST_ROW.set(int(first_row))
    try:
        yield
    finally:
        _FIRST_ROW.reset(token)


def _numbered(first):
    """Where the rows checked are (``""``, or which row chunk) and ``first`` numbered in all
    the data (see :func:`rows_from`)."""
    offset = _FIRST_ROW.get()
    if offset is None:
        return "", first
    return f" of its row chunk from row {offset}", first + offset


def check_finite_rows(X, n_bad=None, first=None):
    """Raise a ``ValueError`` naming the first row of ``X`` with a NaN or infinite entry (its
    index in ``X``), if there is one; ``n_bad`` and ``first`` as :func:`nonfinite_rows`
    returns them, when they were found elsewhere (data in row chunks)."""
    _refuse_rows(*((n_bad, first) if n_bad is not None else nonfinite_rows(X)),
                 "Input X contains NaN or infinity in {rows}{chunk} (the first is row "
                 "{first}); clustering needs finite values: remove those rows or replace "
                 "their missing values.")


def zero_norm_rows(X, norms=None):
    """The number of rows of ``X`` of norm zero and the index of the first (-1 if none);
    ``norms`` the rows' norms if they were computed already."""
    zero = np.flatnonzero((kernels_for(X).row_norms(X) if norms is None else norms) == 0)
    return zero.size, int(zero[0]) if zero.size else -1


def check_unit_rows(X, n_zero=None, first=None, name="X"):
    """Raise :func:`unit_rows`'s ``ValueError`` if rows of ``X`` have norm zero, naming the
    first (its index in ``X``); ``n_zero`` and ``first`` as :func:`zero_norm_rows` returns
    them, when they were found elsewhere (data in row chunks)."""
    _refuse_rows(*((n_zero, first) if n_zero is not None else zero_norm_rows(X)),
                 name + " has {rows} of zero norm{chunk_in} (the first is row {first}); a "
                 "spherical model needs a direction for every row: remove them.")


def _refuse_rows(count, first, message):
    """Raise ``ValueError(message)`` if ``count`` rows are bad, the first (``first``) numbered
    in all the data (``{rows}``: "3 rows", ``{chunk}``/``{chunk_in}``: where, if in a row
    chunk)."""
    if count:
        chunk, first = _numbered(first)
        raise ValueError(message.format(rows=f"{count} row{'s' if count > 1 else ''}",
                                        chunk=chunk, chunk_in=chunk.replace(" of ", " in ", 1),
                                        first=first))


def check_block_rows(bad_rows, starts):
    """:func:`check_finite_rows` and :func:`check_unit_rows` for data read in blocks whose
    first rows are ``starts``: ``bad_rows`` holds, per block, ``(n_nonfinite,
    first_nonfinite, n_zero_norm, first_zero_norm)`` (rows counted and numbered in the
    block), and the error names the first such row of all the data."""
    bad = np.asarray(bad_rows, dtype=np.int64).reshape(-1, 2, 2)
    for kind, check in enumerate((check_finite_rows, check_unit_rows)):
        blocks = np.flatnonzero(bad[:, kind, 0])
        if blocks.size:
            check(None, int(bad[:, kind, 0].sum()),
                  int(starts[blocks[0]] + bad[blocks[0], kind, 1]))


def unit_rows(X, name="X"):
    """Validated ``X`` with every row scaled to unit Euclidean norm: a new array of ``X``'s
    dtype (CSR stays CSR, its zeros stay zeros).

    The one place where a spherical model (:attr:`MStep.spherical`) puts rows on the unit
    sphere: the norms are computed and the rows divided in float64, block by block, so that
    neither tiny nor huge float32 rows overflow.

    Raises
    ------
    ValueError
        If a row has norm zero (it has no direction; its cosine to any centre is undefined).
    """
    kind = kernels_for(X)
    norms = kind.row_norms(X)
    check_unit_rows(X, *zero_norm_rows(X, norms), name)
    return kind.scaled_rows(X, norms)


def check_sample_weight(sample_weight, n_samples, dtype):
    """Validate user weights: a finite, non-negative, not all-zero array of ``dtype``.

    ``None`` gives ones; a scalar is broadcast. Weights that ``dtype`` cannot hold (beyond its
    range, or positive but so small that they would become 0) are an error rather than
    silently changed: only the ratios of the weights matter, so they can be rescaled.
    """
    if sample_weight is None:
        return np.ones(n_samples, dtype=dtype)
    if isinstance(sample_weight, numbers.Number):
        sample_weight = np.full(n_samples, sample_weight)
    sample_weight = np.asarray(sample_weight)
    check_weight_shape(sample_weight, n_samples)
    check_weight_counts(count_weight_problems(sample_weight, dtype), dtype)
    return np.ascontiguousarray(sample_weight, dtype=dtype)


def check_weight_shape(sample_weight, n_samples):
    """Raise unless ``sample_weight`` (any array with ``dtype``, ``ndim`` and ``shape``, a
    dask array included) is numeric, 1-D and has ``n_samples`` entries."""
    if np.dtype(sample_weight.dtype).kind not in "biuf":
        raise TypeError(f"sample_weight must be numeric, got dtype {sample_weight.dtype}.")
    if sample_weight.ndim != 1:
        raise ValueError(f"sample_weight must be 1-D, got shape {sample_weight.shape}.")
    if sample_weight.shape[0] != n_samples:
        raise ValueError(f"sample_weight has {sample_weight.shape[0]} entries, but X has "
                         f"{n_samples} samples.")


def count_weight_problems(sample_weight, dtype):
    """What :func:`check_sample_weight` refuses, counted, for weights checked a block at a time.

    Parameters
    ----------
    sample_weight : ndarray of shape (n_samples,)
        Numeric weights, as given.
    dtype : dtype
        The dtype of the data the weights go with.

    Returns
    -------
    counts : ndarray of shape (5,), dtype=int64
        Entries that are non-finite, negative, positive, beyond ``dtype``'s range, and
        positive but below its smallest normal number. Counts of several blocks add up.
    """
    given = np.asarray(sample_weight).astype(np.float64, copy=False)
    finite = np.isfinite(given)
    positive = given > 0
    with np.errstate(over="ignore", invalid="ignore"):
        cast = given.astype(dtype)
    return np.array([np.count_nonzero(~finite), np.count_nonzero(given < 0),
                     np.count_nonzero(positive), np.count_nonzero(finite & ~np.isfinite(cast)),
                     np.count_nonzero(positive & (cast < np.finfo(dtype).tiny))],
                    dtype=np.int64)


def check_weight_counts(counts, dtype):
    """Raise :func:`check_sample_weight`'s error for the first problem in
    :func:`count_weight_problems`'s ``counts`` (of all blocks together), if any."""
    n_bad, n_negative, n_positive, n_beyond, n_lost = (int(n) for n in counts)
    if n_bad:
        raise ValueError(f"sample_weight has {n_bad} non-finite entries; weights must be finite.")
    if n_negative:
        raise ValueError(f"sample_weight has {n_negative} negative entries; weights must be "
                         "non-negative.")
    if not n_positive:
        raise ValueError("sample_weight is zero everywhere; at least one weight must be positive.")
    name = np.dtype(dtype).name
    if n_beyond:
        raise ValueError(f"sample_weight has entries beyond the range of {name} "
                         f"({np.finfo(dtype).max:.3g}); rescale the weights (only their ratios "
                         "matter).")
    if n_lost:
        raise ValueError(f"sample_weight has {n_lost} positive entries below the smallest "
                         f"normal {name} ({np.finfo(dtype).tiny:.3g}); rescale the weights "
                         "(only their ratios matter) or set them to 0.")


def check_finite_centers(centers, name="cluster_centers_"):
    """Raise unless every entry of ``centers`` is finite.

    Fitted centres are finite by construction; NaN or infinite ones come from a model edited
    or loaded from a tampered file, and would make every distance NaN.
    """
    n_bad = int(np.size(centers) - np.count_nonzero(np.isfinite(centers)))
    if n_bad:
        raise ValueError(f"{name} has {n_bad} non-finite entries; the centres must be finite "
                         "(refit the model).")


#: ``check_representable`` refuses data whose total ``sum_n w_n d2_n`` could come within this
#: factor of the dtype's largest number; see its Notes.
RANGE_MARGIN = 4.0


def check_representable(X, centers=None, sample_weight=None):
    """Raise if the squared distances of ``X`` (and ``centers``), or their weighted sum over
    the samples, can overflow ``X``'s dtype, if all of them underflow it, or if weighted sums
    of ``X`` can overflow it: :func:`check_range` on the data in memory.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        The data; of a CSR matrix, its bounding box (zeros included) is read.
    centers : ndarray of shape (n_clusters, n_features), default=None
        Centres used with ``X`` (at predict time); they must be finite.
    sample_weight : ndarray of shape (n_samples,), default=None
        The weights; ``None`` means unit weights.

    Returns
    -------
    box : tuple of ndarray of shape (n_features,)
        ``(low, high)``: ``X``'s bounding box, which the fit's variance floor reads too.

    Raises
    ------
    ValueError
        As :func:`check_range`.
    """
    weights = None
    if sample_weight is not None:
        with np.errstate(over="ignore"):
            total = float(sample_weight.sum(dtype=np.float64))
        weights = (total, float(sample_weight.max()))
    box = bounding_box(X)
    check_range(*box, X.dtype, X.shape[0], weights, centers, centred=kernels_for(X).centred)
    return box


def bounding_box(X):
    """Every feature's smallest and largest value of ``X`` (dense, or CSR with its zeros),
    as two arrays of shape (n_features,) of ``X``'s dtype."""
    return kernels_for(X).bounding_box(X)


def squared_diagonal(low, high):
    """``sum_k (high_k - low_k)^2`` in float64: the squared diagonal of the bounding box
    ``[low, high]``, the largest squared distance between two of its points (``inf`` if it
    overflows)."""
    with np.errstate(over="ignore", invalid="ignore"):
        ranges = np.asarray(high, dtype=np.float64) - np.asarray(low, dtype=np.float64)
        return float(np.dot(ranges, ranges))


def check_range(low, high, dtype, n_samples, weights=None, centers=None, centred=True):
    """The one range policy of clusterkit, on the data's summary: raise if the squared
    distances of samples in the bounding box ``[low, high]`` (and ``centers``), or their
    weighted sum over the samples, can overflow ``dtype``, if all of them underflow it, or if
    weighted sums of the samples can overflow it.

    Data in memory are summarised by :func:`check_representable`, data in row chunks (a
    memmap, a dask array) by the first pass over their chunks
    (:meth:`~clusterkit._data.chunked.ChunkedData.scan`), which finds the same bounding box and
    weights: the same rows are accepted or refused with the same message on every container.

    Parameters
    ----------
    low, high : ndarray of shape (n_features,)
        Every feature's smallest and largest value (values of ``dtype``).
    dtype : dtype
        float32 or float64: the dtype the data are clustered in.
    n_samples : int
        Number of samples (rows).
    weights : tuple of float or None, default=None
        ``(total, heaviest)``: the sum of the weights (float64) and the largest weight, or
        ``None`` for unit weights.
    centers : ndarray of shape (n_clusters, n_features), default=None
        Centres used with the data (at predict time); they must be finite.
    centred : bool, default=True
        Whether the kernels see the rows centred on their mean (dense data) or as they are
        (sparse data, whose zeros centring would fill).

    Raises
    ------
    ValueError
        If ``centers`` has non-finite entries, or any of the limits in the Notes is exceeded.

    Notes
    -----
    Centres are weighted means of samples, so samples and centres stay in the data's
    bounding box and every squared distance is at most its squared diagonal
    ``B = sum_k (max_k - min_k)^2``. The gemm-based kernels form
    ``||x||^2 - 2 x.c + ||c||^2`` on mean-centred data, whose terms are each at most ``B``
    in magnitude (at most ``4 B`` in all), and the objectives (inertia, the variance of a
    mixture, the seeding's potential ``sum w D^2``) add ``w_n d2_n`` over the samples, at
    most ``W B`` with ``W`` the total weight. The data are therefore refused unless
    ``RANGE_MARGIN * B`` (``RANGE_MARGIN`` = 4) and each ``w_n B`` are below the dtype's
    largest number, and ``RANGE_MARGIN * max(W, 1) * B`` below float64's (the sums over the
    samples are float64): for float64 and 1,000 unit-weight samples in 4 features,
    coordinates spread over more than about ``1e151``. Two things widen ``B``: centring
    is exact only to the dtype's rounding of the coordinates (``eps * max |x_k|`` per
    feature, so that rows equal to the last bit may still differ by that much after it),
    and sparse rows are not centred at all (their squared norms, up to
    ``sum_k max |x_k|^2``, enter the distances). Below the smallest normal number
    every distance would be 0, and the kernels also accumulate ``sum_n w_n`` and
    ``sum_n w_n x_n`` (the M-step's and the coreset's sums) in the data's dtype, with every
    coordinate, centred or not, below ``max |x|`` or ``max - min``.
    """
    dtype = np.dtype(dtype)
    info = np.finfo(dtype)
    largest, name = float(info.max), dtype.name
    low = np.asarray(low, dtype=np.float64)
    high = np.asarray(high, dtype=np.float64)
    # of the samples alone: centres within rounding of equal rows do not make them "close"
    extent = float(high.max()) - float(low.min())
    if centers is not None:
        check_finite_centers(centers)
        high = np.maximum(high, centers.max(axis=0))
        low = np.minimum(low, centers.min(axis=0))
    high_value, low_value = float(high.max()), float(low.min())
    magnitude = np.maximum(np.abs(low), np.abs(high))
    with np.errstate(over="ignore", invalid="ignore"):
        # what the kernels' terms can reach per feature: the spread of the centred rows
        # (at least their rounding), or the coordinates themselves where rows stay uncentred
        ranges = np.maximum(high - low, 2 * float(info.eps) * magnitude if centred
                            else magnitude)
        diagonal2 = float(np.dot(ranges, ranges))
    advice = "Rescale X" + (" or pass it as float64" if dtype == np.float32 else "")
    rows = "" if centred else " (sparse rows, not centred)"
    what = "squared distances between samples" + rows
    if not diagonal2 <= largest:
        raise ValueError(f"X's values are too large for {name}: {what} "
                         f"can reach {diagonal2:.3g}, beyond the largest {name} "
                         f"({largest:.3g}). {advice}.")
    if not RANGE_MARGIN * diagonal2 <= largest:
        raise ValueError(f"X's values are too large for {name}: {what} "
                         f"can reach {diagonal2:.3g}, within a factor "
                         f"{RANGE_MARGIN:g} of the largest {name} ({largest:.3g}), where their "
                         f"computation overflows. {advice}.")
    total, heaviest = (float(n_samples), 1.0) if weights is None else weights
    # the sums of w d2 over the samples are float64 (each w d2 is checked below); with
    # weights above 1 on average the weights are to blame
    summed = RANGE_MARGIN * max(total, 1.0) * diagonal2
    if not summed <= float(np.finfo(np.float64).max) and total <= n_samples:
        raise ValueError(f"X's values are too large: {what} (up "
                         f"to {diagonal2:.3g}) summed over a total weight of {total:.3g} can "
                         "overflow the largest float64 (1.8e+308). Rescale X.")
    if 0 < extent and extent * extent < float(info.tiny):
        raise ValueError(f"X's values are too close together for {name}: squared distances "
                         f"between samples are below its smallest normal number "
                         f"({float(info.tiny):.3g}). Rescale X.")
    if weights is None:
        return
    weighted = max(heaviest * diagonal2,
                   total * max(extent, abs(high_value), abs(low_value), 1.0))
    if not (weighted <= largest and summed <= float(np.finfo(np.float64).max)):
        advice = " or pass X as float64" if dtype == np.float32 else ""
        raise ValueError(f"sample_weight is too large for X in {name}{rows}: weighted sums "
                         f"over the samples can reach {weighted:.3g}, beyond the largest {name} "
                         f"({largest:.3g}). Rescale the weights (only their ratios "
                         f"matter){advice}.")


def check_bandwidth(sigma2, dtype, name="sigma"):
    """Raise unless ``2 sigma2`` is a positive normal number of ``dtype``.

    A Gaussian kernel ``exp(-d2 / (2 sigma2))`` is computed in the data's dtype: a bandwidth
    whose ``2 sigma2`` underflows to 0 there (``sigma=1e-30`` in float32) gives ``0 / 0`` for
    the samples at a mode, NaN affinities and a NaN objective, and one that overflows makes
    every affinity 1.

    Parameters
    ----------
    sigma2 : float
        The squared bandwidth.
    dtype : dtype
        The data's dtype.
    name : str, default="sigma"
        The parameter named in the message.

    Raises
    ------
    ValueError
        If ``2 sigma2`` is not within the normal range of ``dtype``.
    """
    info = np.finfo(dtype)
    two_sigma2 = 2.0 * float(sigma2)
    if not float(info.tiny) <= two_sigma2 <= float(info.max):
        raise ValueError(f"{name}={float(sigma2) ** 0.5:.3g} is outside the range of "
                         f"{np.dtype(dtype).name}: 2 {name}^2 = {two_sigma2:.3g} must lie "
                         f"between {float(info.tiny):.3g} and {float(info.max):.3g}. Rescale X "
                         f"and {name} together" + (" or pass X as float64"
                                                    if np.dtype(dtype) == np.float32 else "")
                         + ".")


def check_int(value, name, minimum=None, allow_none=False):
    """Return ``value`` as an int (or None, if allowed); ``TypeError`` for non-integers,
    ``ValueError`` if too small."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer{' or None' if allow_none else ''}, "
                        f"got {value!r}.")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name}={value} must be >= {minimum}.")
    return int(value)


def check_n_clusters(n_clusters, n_samples):
    """Check ``1 <= n_clusters <= n_samples``."""
    check_int(n_clusters, "n_clusters", minimum=1)
    if n_clusters > n_samples:
        raise ValueError(f"n_clusters={n_clusters} must be <= n_samples={n_samples}.")
