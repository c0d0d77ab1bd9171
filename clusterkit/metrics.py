"""Clustering quality measures: quantization error, NMI and clustering accuracy."""
import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import normalized_mutual_info_score
from sklearn.utils.validation import check_array

from ._data.moments import weighted_sum
from ._data.nearest import data_mean, nearest, single_threaded_blas
from ._estimator.validation import check_representable, check_sample_weight
from ._kernels import _openmp

__all__ = ["quantization_error", "nmi", "clustering_accuracy"]


def quantization_error(X, centers, sample_weight=None, *, n_threads=None):
    """Weighted sum of squared distances from each sample to its nearest centre.

    ``QE = sum_n w_n min_c ||x_n - mu_c||^2``: a sum, not a mean, as in Forster & Lücke (2018)
    and Hirschberger et al. (2022). For a fitted :class:`~clusterkit.Clusterer` on its training
    data this is ``inertia_``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Samples. Integer input is converted to float64; float32 is kept.
    centers : array-like of shape (n_clusters, n_features)
        Centres, cast to the dtype of ``X``.
    sample_weight : array-like of shape (n_samples,), float or None, default=None
        Non-negative weight of each sample (not all zero); ``None`` weighs every sample 1, a
        scalar weighs every sample by it.
    n_threads : int or None, default=None
        Number of OpenMP threads; ``None`` uses all available cores. The result does not
        depend on it.

    Returns
    -------
    error : float
        The weighted quantization error. The per-sample distances are computed in the dtype
        of ``X``; their weighted sum in float64.

    Raises
    ------
    ValueError
        If ``X`` or ``centers`` is empty or not finite, their numbers of features differ,
        squared distances between them overflow (or all underflow) the dtype of ``X``,
        ``sample_weight`` has the wrong shape, non-finite or negative entries, is zero
        everywhere or does not fit the dtype, or ``n_threads`` is 0.
    TypeError
        If ``sample_weight`` is not numeric or ``n_threads`` not an integer.

    Notes
    -----
    Costs ``n_samples * n_clusters`` distance evaluations and no ``n_samples x n_clusters``
    memory. ``X`` and ``centers`` are shifted by the mean of ``X`` first (block by block, as
    the estimator's ``predict`` does), which leaves the distances unchanged but avoids
    cancellation in ``||x||^2 - 2 x.c + ||c||^2`` for data far from the origin.

    Examples
    --------
    >>> from clusterkit.metrics import quantization_error
    >>> X = [[0.0, 0.0], [1.0, 0.0], [10.0, 0.0]]
    >>> quantization_error(X, [[0.0, 0.0], [10.0, 0.0]])
    1.0
    >>> quantization_error(X, [[0.0, 0.0], [10.0, 0.0]], sample_weight=[1.0, 3.0, 1.0])
    3.0
    """
    X = check_array(X, dtype=[np.float64, np.float32], order="C", input_name="X")
    centers = check_array(centers, dtype=X.dtype, order="C", input_name="centers")
    if centers.shape[1] != X.shape[1]:
        raise ValueError(f"centers has {centers.shape[1]} features, but X has "
                         f"{X.shape[1]}.")
    check_representable(X, centers)
    sample_weight = check_sample_weight(sample_weight, X.shape[0], X.dtype)
    n_threads = _openmp.effective_n_threads(n_threads)

    x_mean = data_mean(X)
    with single_threaded_blas():
        _, dist2, _ = nearest(X, x_mean, np.ascontiguousarray(centers - x_mean), n_threads)
    return weighted_sum(dist2, sample_weight)


def _check_labels(labels_true, labels_pred):
    """Return both labelings as 1-d arrays of equal, non-zero length."""
    labels_true = np.asarray(labels_true)
    labels_pred = np.asarray(labels_pred)
    for name, labels in (("labels_true", labels_true), ("labels_pred", labels_pred)):
        if labels.ndim != 1:
            raise ValueError(f"{name} has shape {labels.shape}; expected a 1-d array of "
                             "labels.")
        if labels.shape[0] == 0:
            raise ValueError(f"{name} is empty; expected at least one label.")
        if labels.dtype.kind == "f" and np.isnan(labels).any():
            raise ValueError(f"{name} contains NaN, which is not a label.")
        if labels.dtype.kind == "O":
            try:
                np.unique(labels)
            except TypeError:
                raise TypeError(f"{name} mixes values that cannot be compared with each "
                                "other (e.g. None and numbers); use one type.") from None
    if labels_true.shape[0] != labels_pred.shape[0]:
        raise ValueError(f"labels_true has {labels_true.shape[0]} entries, but labels_pred "
                         f"has {labels_pred.shape[0]}; they must label the same samples.")
    return labels_true, labels_pred


def nmi(labels_true, labels_pred):
    """Normalized mutual information between two labelings.

    ``NMI = I(T; P) / ((H(T) + H(P)) / 2)`` (arithmetic normalisation), computed by
    :func:`sklearn.metrics.normalized_mutual_info_score`. It is 1 for identical partitions
    (whatever the label values), close to 0 for independent ones, and symmetric.

    Parameters
    ----------
    labels_true : array-like of shape (n_samples,)
        Reference labels: numbers or strings, of one comparable type.
    labels_pred : array-like of shape (n_samples,)
        Labels to evaluate.

    Returns
    -------
    score : float
        Between 0 and 1.

    Raises
    ------
    ValueError
        If a labeling is not 1-d, empty or contains NaN, or their lengths differ.
    TypeError
        If a labeling mixes values that cannot be compared.

    Examples
    --------
    >>> from clusterkit.metrics import nmi
    >>> nmi([0, 0, 1, 1], [1, 1, 0, 0])
    1.0
    """
    labels_true, labels_pred = _check_labels(labels_true, labels_pred)
    return float(normalized_mutual_info_score(labels_true, labels_pred,
                                              average_method="arithmetic"))


def clustering_accuracy(labels_true, labels_pred):
    """Fraction of samples labelled correctly under the best one-to-one matching of clusters.

    Predicted clusters are matched to true classes by the Hungarian algorithm
    (:func:`scipy.optimize.linear_sum_assignment`) on the contingency table, maximising the
    number of samples on matched pairs; that number divided by ``n_samples`` is the accuracy.
    When the two labelings have different numbers of clusters, samples in unmatched clusters
    count as errors.

    Parameters
    ----------
    labels_true, labels_pred
        As for :func:`nmi`.

    Returns
    -------
    accuracy : float
        Between 0 and 1; 1 exactly when the labelings are equal up to renaming the clusters.

    Raises
    ------
    ValueError, TypeError
        As :func:`nmi` (the labelings are checked alike).

    Notes
    -----
    The contingency table is dense, ``n_classes x n_clusters`` int64, and the matching costs
    ``O(n^3)`` for ``n = max(n_classes, n_clusters)``.

    Examples
    --------
    >>> from clusterkit.metrics import clustering_accuracy
    >>> clustering_accuracy([0, 0, 1, 1, 2], [2, 2, 0, 0, 0])
    0.8
    """
    labels_true, labels_pred = _check_labels(labels_true, labels_pred)
    classes, true_idx = np.unique(labels_true, return_inverse=True)
    clusters, pred_idx = np.unique(labels_pred, return_inverse=True)
    n_classes, n_clusters = classes.shape[0], clusters.shape[0]
    contingency = np.bincount(true_idx.ravel() * n_clusters + pred_idx.ravel(),
                              minlength=n_classes * n_clusters).reshape(n_classes, n_clusters)
    rows, cols = linear_sum_assignment(contingency, maximize=True)
    return float(contingency[rows, cols].sum() / labels_true.shape[0])
