"""What the first pass over data in row chunks finds in every chunk (:class:`ChunkMoments`),
the weights a block of rows gets in a fit (:func:`fit_weights`), and the weighted sums every
path of a fit adds up the same way (:func:`weighted_sum`, :func:`label_weight`)."""
from dataclasses import dataclass

import numpy as np

from .._kernels._lwcs import moments_weighted
from .checks import count_weight_problems, nonfinite_rows, unit_rows, zero_norm_rows
from .sparse import mean_of_row_sums

__all__ = ["ChunkMoments", "fit_weights", "label_weight", "weighted_sum"]


@dataclass(frozen=True)
class ChunkMoments:
    """What the first pass knows about each chunk of rows (float64 throughout).

    Attributes
    ----------
    n_rows : ndarray of shape (n_chunks,), dtype=int64
    weight : ndarray of shape (n_chunks,)
        ``W_c = sum_{n in c} w_n``.
    mean : ndarray of shape (n_chunks, n_features)
        The chunk's weighted mean ``mu_c`` (zeros where ``W_c = 0``).
    m2 : ndarray of shape (n_chunks,)
        ``M2_c = sum_{n in c} w_n ||x_n - mu_c||^2``.
    low, high : ndarray of shape (n_features,)
        Smallest and largest value of every feature over all rows (``inf`` and ``-inf`` for
        data validated already, which are not searched for them).
    heaviest : float
        The largest weight the fit uses (1 without ``sample_weight``; 0 for data validated
        already, whose weights are not searched).
    row_sum : ndarray of shape (n_chunks, n_features)
        Every chunk's unweighted sum of rows, in the data's dtype (what :attr:`row_mean`
        adds up).
    """

    n_rows: np.ndarray
    weight: np.ndarray
    mean: np.ndarray
    m2: np.ndarray
    low: np.ndarray
    high: np.ndarray
    heaviest: float = 0.0
    row_sum: np.ndarray = None

    @property
    def total_weight(self):
        """``W = sum_c W_c``."""
        return float(self.weight.sum())

    @property
    def global_mean(self):
        """The weighted mean of all rows, ``mu = sum_c W_c mu_c / W``."""
        return (self.weight @ self.mean) / self.total_weight

    @property
    def row_mean(self):
        """The unweighted mean of all rows, in the data's dtype
        (:func:`~clusterkit._data.sparse.mean_of_row_sums` of the chunks' sums, as
        :func:`~clusterkit._data.nearest.data_mean` of an array in memory, one block): the
        centring of a fit, the same for the same rows on every container."""
        return mean_of_row_sums(self.row_sum, int(self.n_rows.sum()))

    @property
    def chunk_spread(self):
        """``S_c = sum_{n in c} w_n ||x_n - mu||^2 = M2_c + W_c ||mu_c - mu||^2`` (exact: the
        parallel-variance formula), of shape (n_chunks,)."""
        shift = self.mean - self.global_mean
        return self.m2 + self.weight * np.einsum("ij,ij->i", shift, shift)

    @property
    def spread(self):
        """``S = sum_n w_n ||x_n - mu||^2 = sum_c S_c``."""
        return float(self.chunk_spread.sum())


def weighted_sum(values, sample_weight):
    """``sum_n w_n values_n`` accumulated in float64 (the one place this is written; no
    weights: the plain sum)."""
    if sample_weight is None:
        return float(values.astype(np.float64, copy=False).sum())
    return float(np.dot(sample_weight.astype(np.float64, copy=False),
                        values.astype(np.float64, copy=False)))


def label_weight(labels, sample_weight, n_clusters):
    """The weight of the rows of each label, in float64 (rows never labelled, ``-1``, left
    out; no weights: the counts)."""
    seen = labels >= 0
    if sample_weight is None:
        return np.bincount(labels[seen], minlength=n_clusters).astype(np.float64)
    return np.bincount(labels[seen], sample_weight[seen].astype(np.float64),
                       minlength=n_clusters)


def fit_weights(sample_weight, n_rows, dtype):
    """A block's weights as the fit sees them: rounded to the data's ``dtype`` (as
    ``check_sample_weight`` rounds in-memory weights), held in float64; ones for ``None``."""
    if sample_weight is None:
        return np.ones(n_rows)
    return np.asarray(sample_weight).astype(dtype).astype(np.float64)


def _block_moments(X, sample_weight, n_threads, check, unit=False):
    """Pass 1 on one block: validity counts and the block's moments.

    Returns a tuple ``(n_nonfinite, weight_counts, n_rows, W, mean, M2, low, high, heaviest,
    row_sum, bad_rows)``; the moments are zeros when the block has invalid entries (the
    caller raises). ``bad_rows`` is ``(n_rows_nonfinite, first_nonfinite, n_zero_norm,
    first_zero_norm)``: the block's rows with a NaN or infinite entry and, with ``unit`` (a
    spherical model's rows, given as read and scaled here), its rows of zero norm, each with
    the index of the first in the block (-1 if none). The sums run in float64 in the
    ``moments_weighted`` kernel, with the weights the fit uses (:func:`fit_weights`), so
    that a block gives the same numbers whatever holds it; ``low``, ``high`` and the largest
    weight ``heaviest`` are what the range check
    (:func:`~clusterkit._estimator.validation.check_range`) reads, found in the same pass.
    Without ``check`` (data validated already) the weights are not counted
    (``weight_counts`` is ``None``, ``heaviest`` 0).
    """
    n_rows, n_features = X.shape
    weight_counts = (None if not check
                     else np.array([0, 0, n_rows, 0, 0], dtype=np.int64) if sample_weight is None
                     else count_weight_problems(sample_weight, X.dtype))
    zeros = (0.0, np.zeros(n_features), 0.0, np.full(n_features, np.inf),
             np.full(n_features, -np.inf), 0.0, np.zeros(n_features, dtype=X.dtype))
    if n_rows == 0 or check and (weight_counts[0] or weight_counts[1]):
        return (int(np.count_nonzero(~np.isfinite(X))), weight_counts, n_rows, *zeros,
                (*nonfinite_rows(X), 0, -1))
    bad_rows = (0, -1, 0, -1)
    if unit:  # (a row with NaN has a NaN norm: found with the moments below)
        bad_rows = (0, -1, *zero_norm_rows(X))
        if bad_rows[2]:
            return (0, weight_counts, n_rows, *zeros, bad_rows)
        X = unit_rows(X)
    mean, low, high = np.empty(n_features), np.empty(n_features), np.empty(n_features)
    weights = fit_weights(sample_weight, n_rows, X.dtype)
    total, m2 = moments_weighted(X, weights, mean, low, high, check, n_threads)
    # NaN or infinity in X make the sums non-finite: count them only then (finite data whose
    # sums overflow are left to the caller's range check)
    if check and not np.isfinite([total, m2, *mean, *low, *high]).all():
        bad_rows = (*nonfinite_rows(X), 0, -1)
        if bad_rows[0]:
            return (int(np.count_nonzero(~np.isfinite(X))), weight_counts, n_rows, *zeros,
                    bad_rows)
    heaviest = float(weights.max()) if check else 0.0
    # the centring's sum in the data's dtype, as NumPy's mean of an array in memory sums
    row_sum = X.sum(axis=0)
    return (0, weight_counts, n_rows, total, mean, m2, low, high, heaviest, row_sum,
            bad_rows)
