"""``partial_fit``: a :class:`~clusterkit.Clusterer` updated batch by batch (mini-batch
k-means over a stream), as a mixin of the estimator."""
import numbers

import numpy as np

from .._data.sparse import kernels_for
from .available import available_if
from .composition import STREAM_PARAMETERS, stream_refusal
from .registry import strategy_class
from .validation import check_data, check_params, check_representable, check_sample_weight

__all__ = ["StreamingMethods"]

#: The strategy parameters whose declarations decide whether a composition can stream.
class StreamingMethods:
    """``partial_fit`` for a hard :class:`~clusterkit.Clusterer` without a refiner; the
    estimator provides the strategies, the driver and the fitted attributes."""

    def _can_stream(self):
        """Whether ``partial_fit`` applies (:func:`stream_refusal`, from the classes the
        parameters name); otherwise the ``AttributeError`` says why (a value that names no
        strategy is left to ``fit``'s checks)."""
        reason = stream_refusal(*(strategy_class(name, getattr(self, name))
                                  for name in STREAM_PARAMETERS))
        if reason:
            raise AttributeError(reason)
        return True

    @available_if(_can_stream)
    def partial_fit(self, X, y=None, sample_weight=None):
        """Update the centres with one batch of a stream (mini-batch k-means).

        Every call runs the fit's step on its batch: the E-step assigns it, and the M-step
        combines it with the centres by the batch rule of the estimator's own schedule: a
        :class:`MiniBatch` schedule streams as itself, with ``learning_rate="count"``
        adding the batch to the centres' running sums, a sample counted at every visit, as
        scikit-learn's ``MiniBatchKMeans.partial_fit``, and ``"adaptive"`` moving each
        centre towards its batch mean; its ``reassignment_ratio`` moves starved centres
        every ``100 n_clusters`` rows of the stream. Each call's rows are stepped through
        in batches of its ``batch_size``, in the given order, and after each call
        ``converged_`` says whether its ``max_no_improvement`` or ``center_tol`` rule would
        have stopped a fit (the caller decides when the stream ends); a stream visits every
        row once, so ``max_passes < 1`` is refused, as is ``sampling="weighted"`` (rows
        drawn from all the data by weight). A :class:`FullBatch` schedule (the default,
        ``schedule="full"``) streams as ``MiniBatch()``: replacing the centres by each
        batch's means would forget the stream. The stream starts from the fitted model if
        ``fit`` ran before (its centres, weighted by the training weight of their
        clusters, so that the batches refine the fit; every batch then may have any number
        of rows >= 1), else by seeding on the first batch (which needs at least
        ``n_clusters`` samples and fixes the frame the data are centred in: that batch's
        mean; later batches may be smaller). ``fit`` ends a stream.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            One batch; every call must have the model's number of features (and is converted
            to its dtype). Sparse batches (as CSR) need a stream started on sparse data (or
            a fit on them): dense data set a centred frame that sparse rows cannot take.
        y : Ignored
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : Clusterer
            With ``cluster_centers_``; ``labels_`` and ``inertia_`` of this batch for the
            updated centres (``compute_labels=True``, as scikit-learn's; one exact pass over
            the batch, counted in ``cost_["labels"]``); ``n_iter_`` (steps so far),
            ``history_``, ``cost_`` and ``n_distance_evals_`` (totals over the stream),
            ``converged_`` (see above).

        Raises
        ------
        ValueError
            For what ``fit`` refuses, a batch whose number of features differs from the
            model's, or a composition that cannot run on a stream (the message says what to
            use instead): an E-step that is not exact, a reducer, a schedule that needs
            all the data in advance, or ``MiniBatch(sampling="weighted")``.
        """
        driver = self.__dict__.get("_stream")
        fitted = driver is None and getattr(self, "cluster_centers_", None) is not None
        if fitted and self.cluster_centers_.shape[0] != self.n_clusters:
            fitted = False  # n_clusters changed since the fit: start afresh
        dtype = ([np.float64, np.float32] if driver is None and not fitted
                 else self.cluster_centers_.dtype)
        X = self._model_rows(check_data(self, X, dtype, reset=driver is None and not fitted))
        sample_weight = check_sample_weight(sample_weight, X.shape[0], X.dtype)
        check_representable(X, sample_weight=sample_weight)
        if driver is None:
            driver = self._start_stream(X, fitted)
        if not kernels_for(X).centred and np.any(driver.x_mean):
            raise ValueError("This partial_fit stream started on dense data and runs centred "
                             "on their mean; sparse batches cannot be centred. Pass "
                             "X.toarray(), or start the stream (or fit) on sparse data.")
        if fitted:
            centers = np.ascontiguousarray(self.cluster_centers_ - driver.x_mean)
            result = driver.stream(X, sample_weight, self.compute_labels, centers,
                                   self._cluster_weight)
        else:
            result = driver.stream(X, sample_weight, self.compute_labels)
        self._set_fitted(result, driver)
        self.converged_ = result.end == "converged"
        return self

    def _start_stream(self, X, fitted):
        """The driver of a stream: the fit's frame if it continues a fitted model, else the
        first batch's; the composition refused clearly if it cannot stream."""
        if not fitted:
            if isinstance(self.n_clusters, numbers.Integral) and X.shape[0] < self.n_clusters:
                raise ValueError(
                    f"The first partial_fit batch has {X.shape[0]} rows, fewer than "
                    f"n_clusters={self.n_clusters}: a stream seeds its centres on its first "
                    "batch, which needs at least n_clusters rows (later batches may have "
                    "any number of rows >= 1; so may every batch after fit).")
            check_params(self, X.shape[0])
        x_mean = self._x_mean if fitted else self._frame_mean(X)
        # (refused again: the parameters may have changed since partial_fit was looked up)
        composition = self._strategies(X, x_mean, streaming=True)
        driver = self._driver(composition, X.shape[1])
        driver.x_mean = x_mean
        self._stream = driver
        return driver
