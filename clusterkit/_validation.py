"""Input checks shared by the public entry points (a thin layer over scikit-learn's)."""
import numbers

import numpy as np

__all__ = ["check_sample_weight", "check_n_clusters", "check_int", "check_representable",
           "count_weight_problems", "check_weight_counts"]


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


def check_representable(X, centers=None, sample_weight=None):
    """Raise if squared distances between samples of ``X`` (and ``centers``) overflow or all
    underflow ``X``'s dtype, or, given ``sample_weight``, if weighted sums over ``X`` can
    overflow it.

    Centres are weighted means of samples, so all points stay in the data's bounding box,
    whose squared diagonal is at most ``D (max - min)^2``; past the dtype's range every
    distance would be ``inf`` and the result meaningless, and below its smallest normal
    number every distance would be 0. The kernels also form each sample's ``w_n d2_n`` (the
    seeding masses) and accumulate ``sum_n w_n`` and ``sum_n w_n x_n`` (the M-step's and the
    coreset's sums) in the data's dtype, with every coordinate, centred or not, below
    ``max |x|`` or ``max - min``.
    """
    info = np.finfo(X.dtype)
    largest, name = float(info.max), X.dtype.name
    high, low = float(X.max()), float(X.min())
    if centers is not None:
        high, low = max(high, float(centers.max())), min(low, float(centers.min()))
    extent = high - low
    bound = X.shape[1] * extent * extent  # a product overflows to inf, where ** would raise
    if not bound <= largest:
        raise ValueError(f"X's values are too large for {name}: squared distances between "
                         f"samples can reach {bound:.3g}, beyond the largest {name} "
                         f"({largest:.3g}). Rescale X or pass it as float64.")
    if 0 < extent and extent * extent < float(info.tiny):
        raise ValueError(f"X's values are too close together for {name}: squared distances "
                         f"between samples are below its smallest normal number "
                         f"({float(info.tiny):.3g}). Rescale X.")
    if sample_weight is None:
        return
    with np.errstate(over="ignore"):
        total = float(sample_weight.sum(dtype=np.float64))
    weighted = max(float(sample_weight.max()) * bound,
                   total * max(extent, abs(high), abs(low), 1.0))
    if not weighted <= largest:
        advice = " or pass X as float64" if X.dtype == np.float32 else ""
        raise ValueError(f"sample_weight is too large for X in {name}: weighted sums over "
                         f"the samples can reach {weighted:.3g}, beyond the largest {name} "
                         f"({largest:.3g}). Rescale the weights (only their ratios "
                         f"matter){advice}.")


def available_memory():
    """Bytes of memory the system can still give this process (``MemAvailable`` of
    ``/proc/meminfo``), or ``None`` where that is not known."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def check_memory(need, what, instead):
    """``ValueError`` when ``fit`` starts, before any work, if ``what`` needs more than the
    memory available (the allocation would otherwise fail only after the seeding).

    Parameters
    ----------
    need : int
        Bytes ``what`` allocates.
    what : str
        E.g. ``"ElkanEStep's bounds for 10000000 samples and n_clusters=4096"``.
    instead : str
        What to use instead, one sentence.
    """
    available = available_memory()
    if available is not None and need > available:
        raise ValueError(f"{what} need {need / 2**30:.2f} GiB, but only "
                         f"{available / 2**30:.2f} GiB of memory are available. {instead}")
