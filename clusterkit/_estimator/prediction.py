"""Labelling new rows with a fitted :class:`~clusterkit.Clusterer`: :meth:`predict`,
:meth:`fit_predict` and the checks and frame they share with :meth:`transform` (a mixin),
and the labels of a batch as a whole, for an E-step whose label of a row depends on the
other rows of the batch (:attr:`EStep.predicts_batches
<clusterkit.EStep.predicts_batches>`, e.g. :class:`~clusterkit.BalancedEStep` with
``predict="bounded"``)."""
import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._data import chunked as _chunked
from .._data.nearest import nearest, single_threaded_blas
from .._data.sparse import kernels_for
from .._kernels._openmp import effective_n_threads
from . import lazy as _lazy
from .registry import resolve
from .validation import check_data, check_representable

__all__ = ["PredictionMethods", "batch_labels"]


class PredictionMethods:
    """:class:`~clusterkit.Clusterer`'s methods on new rows (a mixin: it reads the fitted
    centres, the training data's mean and the estimator's ``estep``)."""

    def _check_test_data(self, X):
        check_is_fitted(self)
        X = self._model_rows(check_data(self, X, reset=False))
        check_representable(X, self.cluster_centers_)
        return X

    def _centred_frame(self, dtype):
        """The training data's mean and the centres relative to it, in ``dtype``: new data are
        centred like the training data, for accurate distances far from the origin."""
        return (self._x_mean.astype(dtype),
                np.ascontiguousarray(self.cluster_centers_ - self._x_mean, dtype=dtype))

    def _labels_dist2(self, X):
        X = self._check_test_data(X)
        n_threads = effective_n_threads(self.n_threads)
        x_mean, centers = self._centred_frame(X.dtype)
        with single_threaded_blas():
            labels, dist2, _ = nearest(X, x_mean, centers, n_threads)
        return X, labels, dist2

    def predict(self, X):
        """Index of the nearest centre of each sample, or the E-step's labels of the batch.

        An E-step that declares :attr:`EStep.predicts_batches` labels the batch as a whole
        (:meth:`EStep.predict_labels`; :class:`BalancedEStep` with ``predict="bounded"``:
        the bounded assignment of the batch); any other fitted model gives each row's
        nearest centre.

        Parameters
        ----------
        X : {array-like, sparse matrix} or dask array of shape (n_samples, n_features)
            A dask array gives a dask array, computed chunk by chunk; sparse data (as CSR)
            work with any fitted model. An E-step that labels batches as a whole takes
            dense rows in memory only.

        Returns
        -------
        labels : ndarray or dask array of shape (n_samples,), dtype=int32

        Raises
        ------
        ValueError
            For a dask array when the E-step labels batches as a whole (the batch is one
            problem, which needs all its rows at once).
        TypeError
            For sparse rows when the E-step labels batches as a whole.
        """
        check_is_fitted(self)
        estep = resolve("estep", self.estep)
        if estep.predicts_batches:
            return batch_labels(self, estep, X)
        return self._nearest_labels(X)

    @_lazy.per_row_chunk(np.int32)
    def _nearest_labels(self, X):
        """Each row's nearest centre (a dask array: chunk by chunk, lazily)."""
        return self._labels_dist2(X)[1]

    def fit_predict(self, X, y=None, sample_weight=None):
        """Fit, then return the labels of the training data.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : Ignored
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        labels : ndarray or dask array of shape (n_samples,), dtype=int32
            A lazy dask array when ``X`` is one.
        """
        self.fit(X, sample_weight=sample_weight)
        return self.labels_ if self.compute_labels else self.predict(X)


def batch_labels(model, estep, X):
    """The fitted ``estep``'s labels of the batch ``X`` (:meth:`EStep.predict_labels`), in
    the fit's frame; a dask array (chunk by chunk) and sparse rows are refused."""
    if _chunked.is_dask_array(X):
        raise ValueError(
            f"predict with estep={estep!r} labels a batch as a whole, which needs all "
            "its rows at once, but X is a dask array (labelled chunk by chunk); pass "
            "X.compute(), or predict='nearest' for each row's nearest centre.")
    X = model._check_test_data(X)
    kind = kernels_for(X)
    if not kind.ndarray:
        raise TypeError(f"predict with estep={estep!r} labels a batch of dense rows as a "
                        "whole; pass X.toarray(), or predict='nearest' for sparse rows.")
    x_mean, centers = model._centred_frame(X.dtype)
    with single_threaded_blas():
        return estep.predict_labels(kind.in_frame(X, x_mean), centers, _fit_weight(model),
                                    effective_n_threads(model.n_threads))


def _fit_weight(model):
    """The total weight of the rows of the fit (their number without weights): the sum of
    the weight each centre explains, kept from the fit."""
    cluster_weight = getattr(model, "_cluster_weight", None)
    if cluster_weight is None:
        raise ValueError("This model does not know the weight of the rows it was fitted on "
                         "(it was not fitted by fit, e.g. loaded from a file); refit it to "
                         "label batches as a whole.")
    return float(np.sum(cluster_weight, dtype=np.float64))
