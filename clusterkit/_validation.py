"""Input checks shared by the public entry points (a thin layer over scikit-learn's)."""
import numbers

import numpy as np

__all__ = ["check_sample_weight", "check_n_clusters", "check_int"]


def check_int(value, name, minimum=None):
    """Return ``value`` as an int; ``TypeError`` for non-integers, ``ValueError`` if too small."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}.")
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

    ``None`` gives ones; a scalar is broadcast.
    """
    if sample_weight is None:
        return np.ones(n_samples, dtype=dtype)
    if isinstance(sample_weight, numbers.Number):
        sample_weight = np.full(n_samples, sample_weight, dtype=dtype)
    sample_weight = np.asarray(sample_weight)
    if sample_weight.dtype.kind not in "biuf":
        raise TypeError(f"sample_weight must be numeric, got dtype {sample_weight.dtype}.")
    sample_weight = np.ascontiguousarray(sample_weight, dtype=dtype)
    if sample_weight.ndim != 1:
        raise ValueError(f"sample_weight must be 1-D, got shape {sample_weight.shape}.")
    if sample_weight.shape[0] != n_samples:
        raise ValueError(f"sample_weight has {sample_weight.shape[0]} entries, but X has "
                         f"{n_samples} samples.")
    n_bad = int(np.count_nonzero(~np.isfinite(sample_weight)))
    if n_bad:
        raise ValueError(f"sample_weight has {n_bad} non-finite entries; weights must be finite.")
    n_negative = int(np.count_nonzero(sample_weight < 0))
    if n_negative:
        raise ValueError(f"sample_weight has {n_negative} negative entries; weights must be "
                         "non-negative.")
    if not np.any(sample_weight > 0):
        raise ValueError("sample_weight is zero everywhere; at least one weight must be positive.")
    return sample_weight
