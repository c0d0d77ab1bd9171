"""The :class:`Clusterer` estimator: validation, the driver loop and the fitted attributes."""
import math
import numbers
import time
import warnings

import numpy as np
from scipy.special import logsumexp
from sklearn.base import (BaseEstimator, ClassNamePrefixFeaturesOutMixin, ClusterMixin,
                          TransformerMixin, clone)
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data
from threadpoolctl import ThreadpoolController

from . import _chunked
from ._base import FREE_ENERGY, Composition, DataReducer, EStep, MStep, Schedule, Seeder
from ._estep import ElkanEStep, FullEStep, PartialEStep, TruncatedEStep, log_joint_offset
from ._kernels import _assign
from ._kernels._dist import TILE_ROWS, center_rows
from ._kernels._openmp import effective_n_threads
from ._mstep import HardMStep, SoftMStep
from ._reduction import LWCS, NoReduction
from ._schedules import FullBatch, MiniBatch, NestedDoubling, SBEDecay
from ._seeding import AFKMC2, ByDimension, KMeansPlusPlus, RandomSeeder, SampledSeeder
from ._state import FitState, weighted_sum
from ._validation import (check_int, check_n_clusters, check_representable,
                          check_sample_weight, check_weight_counts, count_weight_problems)

__all__ = ["Clusterer"]

# The string shortcuts: every strategy with its default parameters (listed in composing.rst).
_SEEDERS = {"k-means++": KMeansPlusPlus, "afkmc2": AFKMC2, "random": RandomSeeder,
            "sampled": SampledSeeder, "by-dimension": ByDimension}
_REDUCERS = {"none": NoReduction, "lwcs": LWCS}
_ESTEPS = {"full": FullEStep, "elkan": ElkanEStep, "truncated": TruncatedEStep,
           "partial": PartialEStep}
_MSTEPS = {"hard": HardMStep, "soft": SoftMStep}
_SCHEDULES = {"full": FullBatch, "minibatch": MiniBatch, "nmbatch": NestedDoubling,
              "sbe": SBEDecay}

_blas_controller = None


def _single_threaded_blas():
    """Context limiting BLAS to one thread: the kernels call gemm from inside ``prange``.

    The controller is built once: listing the loaded libraries takes a few milliseconds, as
    long as a whole fit on a small coreset. The BLAS the kernels use, scipy's, is loaded with
    them, so it is always among the libraries listed.
    """
    global _blas_controller
    if _blas_controller is None:
        _blas_controller = ThreadpoolController()
    return _blas_controller.limit(limits=1, user_api="blas")


# Bytes of data centred at a time by the labelling passes over data in the user's coordinates.
_LABEL_BLOCK_BYTES = 8 << 20


def _row_blocks(n_samples, row_bytes, block_bytes=_LABEL_BLOCK_BYTES):
    """Slices of about ``block_bytes`` of rows, in whole tiles of the distance kernels, so
    that a pass block by block gives the same result as one pass over all rows."""
    block = max(1, block_bytes // (row_bytes * TILE_ROWS)) * TILE_ROWS
    return [slice(start, min(start + block, n_samples)) for start in range(0, n_samples, block)]


def _nearest(X, x_mean, centers, n_threads):
    """Exact nearest centre of each row of ``X``: labels, squared distances, evaluations.

    ``centers`` live in the frame centred on ``x_mean``; ``X`` is centred a block of rows at
    a time, so that no centred copy of the whole data exists. ``x_mean=None``: ``X`` is
    centred already and is read in place.
    """
    labels = np.empty(X.shape[0], dtype=np.int32)
    dist2 = np.empty(X.shape[0], dtype=X.dtype)
    n_evals = 0
    for rows in _row_blocks(X.shape[0], X.shape[1] * X.itemsize):
        block = X[rows] if x_mean is None else X[rows] - x_mean
        n_evals += _assign.assign_full(block, centers, labels[rows], dist2[rows], n_threads)
    return labels, dist2, n_evals


def _dist2_blocks(X, x_mean, centers, n_threads):
    """Row blocks of the squared distances of ``X`` (centred on ``x_mean`` block by block)
    to every centre, as ``(rows, dist2)``: the distances the nearest-centre kernel compares,
    so that the smallest of each row is the centre :func:`_nearest` picks."""
    n_clusters = centers.shape[0]
    for rows in _row_blocks(X.shape[0], n_clusters * X.itemsize):
        block = X[rows] - x_mean
        dist2 = np.empty((block.shape[0], n_clusters), dtype=X.dtype)
        labels = np.empty(block.shape[0], dtype=np.int32)
        nearest = np.empty(block.shape[0], dtype=X.dtype)
        # a variance <= 0 leaves the squared distances in the output
        _assign.responsibilities_full(block, centers, -1.0, dist2, labels, nearest, nearest,
                                      n_threads)
        yield rows, dist2


def _model_on_chunk(X, model, method):
    """``model.<method>(X)`` on one chunk of a dask array (run by the workers); ``"dist2"``
    gives the squared distances to the nearest centres, as :meth:`Clusterer.score` uses."""
    if method == "dist2":
        return model._labels_dist2(X)[2].astype(np.float64)
    return getattr(model, method)(X)


def _checked_weights(sample_weight):
    """One chunk of ``score``'s weights, checked as :func:`check_sample_weight` does (a chunk
    may be zero everywhere)."""
    counts = count_weight_problems(sample_weight, np.float64)
    counts[2] = max(counts[2], 1)
    check_weight_counts(counts, np.float64)
    return sample_weight


def _resolve(value, name, base, aliases, default):
    """A strategy object from an instance, a string alias or ``None`` (the default)."""
    if value is None:
        return default()
    if isinstance(value, base):
        return value
    if isinstance(value, str):
        if value in aliases:
            return aliases[value]()
        expected = ", ".join(repr(a) for a in aliases)
        raise ValueError(f"Unknown {name}={value!r}; expected one of {expected} or an "
                         f"instance of {base.__name__}.")
    raise TypeError(f"{name} must be an instance of {base.__name__} or a string, got "
                    f"{type(value).__name__}.")


def _strategy_array(value, strategy, what, shape, dtype):
    """What a strategy returned, as a C-contiguous ``dtype`` array of ``shape`` (``None``
    matches any length); ``TypeError``/``ValueError`` naming the strategy otherwise.

    User-written strategies plug into the driver, so their results are checked like user
    input: a wrong shape or a NaN would otherwise surface far away, or not at all.
    """
    name = f"{type(strategy).__name__} returned {what}"
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "biuf":
        raise TypeError(f"{name} as {type(value).__name__}; expected a numeric ndarray.")
    if value.ndim != len(shape) or any(n is not None and n != m
                                       for n, m in zip(shape, value.shape)):
        expected = tuple("any" if n is None else n for n in shape)
        raise ValueError(f"{name} of shape {value.shape}; expected {expected}.")
    if not np.all(np.isfinite(value)):
        raise ValueError(f"{name} with NaN or infinite entries.")
    return np.ascontiguousarray(value, dtype=dtype)


#: The M-step rules under which centres are the means of the samples' current labels, so that
#: a full batch without a label change is a fixed point (``FitState.strict_convergence``).
_MEAN_RULES = ("replace", "latest")


class _GivenCenters(Seeder):
    """Seeder returning user-supplied (already shifted) initial centres."""

    def __init__(self, centers):
        self.centers = centers

    def seed(self, X, sample_weight, n_clusters, state):
        return self.centers


class Clusterer(ClassNamePrefixFeaturesOutMixin, ClusterMixin, TransformerMixin, BaseEstimator):
    """k-means and isotropic Gaussian mixtures assembled from swappable strategies.

    A fit runs the pseudo-code shared by the papers clusterkit implements: reduce the data
    (``reduce``), choose initial centres (``seed``), then alternate E-steps (``estep``) and
    M-steps (``mstep``) on the batches the ``schedule`` yields, until the relative change of the
    objective is at most ``tol`` or ``max_iter`` iterations have run.

    Parameters
    ----------
    n_clusters : int, default=8
        Number of clusters ``C``.
    seed : str, Seeder or array-like of shape (n_clusters, n_features), default="k-means++"
        How to choose the initial centres: a string shortcut (``"k-means++"``
        :class:`KMeansPlusPlus`, ``"afkmc2"`` :class:`AFKMC2`, ``"random"``
        :class:`RandomSeeder`, ``"sampled"`` :class:`SampledSeeder`, ``"by-dimension"``
        :class:`ByDimension`, all with default parameters), any :class:`Seeder`, or the
        initial centres themselves.
    reduce : None, str or DataReducer, default=None
        Data reduction before clustering: ``None`` or ``"none"`` :class:`NoReduction`,
        ``"lwcs"`` :class:`LWCS` (its default size grows with ``n_clusters``).
    estep : str or EStep, default="full"
        The E-step: ``"full"`` :class:`FullEStep`, ``"elkan"`` :class:`ElkanEStep`,
        ``"truncated"`` :class:`TruncatedEStep`, ``"partial"`` :class:`PartialEStep`.
    mstep : {"hard", "soft"} or MStep, default="hard"
        ``"hard"`` is :class:`HardMStep` (k-means), ``"soft"`` :class:`SoftMStep`
        (isotropic GMM with one shared variance).
    schedule : str or Schedule, default="full"
        Which samples each step uses: ``"full"`` :class:`FullBatch`, ``"minibatch"``
        :class:`MiniBatch`, ``"nmbatch"`` :class:`NestedDoubling`, ``"sbe"``
        :class:`SBEDecay`.
    n_init : int, default=1
        Number of runs, each from new seeds, on the same (reduced) data; the run with the best
        final objective is kept (lowest quantization error for hard M-steps, highest free
        energy for soft ones). ``cost_`` counts the work of all runs. With initial centres
        given in ``seed`` there is one run (with a warning), as in scikit-learn.
    max_iter : int, default=200
        Maximum number of iterations (E-step plus M-step) per run (the budget Forster & Lücke
        used for BIRCH and KDD).
    tol : float, default=1e-4
        Stop when the objective changes by at most ``tol`` relative to its value (a hard
        fit's quantization error counts as at least its rounding level, so a fit with more
        clusters than distinct points stops). ``tol=0`` runs until the objective stops
        changing or ``max_iter``.
    random_state : int, RandomState instance or None, default=None
        Seeds every random choice of the fit (seeding, reduction, exploration).
    n_threads : int or None, default=None
        OpenMP threads of the kernels; ``None`` uses all available cores.
    compute_labels : bool, default=True
        After fitting, assign the whole training data to the final centres (one exact pass,
        counted in ``cost_["labels"]``) to set ``labels_`` and ``inertia_``. When ``False``
        those two attributes are not set.
    verbose : int, default=0
        ``1``: one line per phase (reduction, seeding with progress on long seedings, each
        iteration, the final labels) and a closing summary; ``2``: also per-iteration detail
        (quantization error, batch, largest centre shift, E- and M-step seconds and distance
        evaluations so far).
    callback : callable or None, default=None
        Called after every iteration as ``callback(info)`` with the dictionary appended to
        ``history_`` plus ``"centers"`` (the current centres); a return value of ``True``
        (Python's or NumPy's) stops the fit, including the runs ``n_init`` has not started yet.

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        Final centres, in the dtype of the training data.
    labels_ : ndarray or dask array of shape (n_samples,), dtype=int32
        Nearest final centre of each training sample (``compute_labels=True``); after a fit
        on a dask array a lazy dask array, computed chunk by chunk when needed.
    inertia_ : float or 0-d dask array
        Weighted sum of squared distances of the training samples to their nearest final
        centre (``compute_labels=True``); after a fit on a dask array a lazy 0-d dask array
        (``float(inertia_)`` computes it).
    n_iter_ : int
        Iterations of the kept run.
    converged_ : bool
        Whether the kept run ended by the schedule's stopping rule (the relative change of the
        objective at most ``tol``) or its last batch, rather than by ``max_iter`` or the
        callback. A fit whose kept run reached ``max_iter`` emits a
        :class:`~sklearn.exceptions.ConvergenceWarning`.
    objective_ : float
        Objective of the kept run's last iteration (what the M-step declares in
        :attr:`MStep.objective`): the weighted quantization error for hard M-steps
        (non-increasing), the truncated free energy / log-likelihood for soft ones
        (non-decreasing).
    sigma2_ : float
        Shared variance of the fitted Gaussian mixture; only set when the model has one
        (soft M-steps).
    history_ : list of dict
        One entry per iteration of the kept run with ``"iteration"``, ``"objective"``,
        ``"qe"`` (weighted quantization error of the batch, on the fitted, possibly reduced,
        data), ``"batch_size"`` and ``"weight"`` (rows and total weight of the batch),
        ``"passes"`` (rows visited / rows of the data), ``"n_changed"`` (labels of the batch
        that changed since the sample's previous visit; a first visit counts),
        ``"max_center_shift"`` (largest centre move of the M-step), ``"sigma2"`` (mixtures
        only), ``"distance_evals"`` (total of the fit so far, earlier runs, seeding and
        reduction included) and ``"seconds"`` (since the start of ``fit``).
    n_distance_evals_ : int
        Distance evaluations of the whole fit (the sum of ``cost_``), including the final
        ``"labels"`` pass; the papers' counts leave that pass out (coreset, seeding and
        iterations only), i.e. ``n_distance_evals_ - cost_["labels"]``.
    cost_ : dict
        Distance evaluations per phase: ``"seeding"``, ``"reduction"``, ``"estep"``,
        ``"labels"``.
    seconds_ : dict
        Wall time per phase: ``"reduction"``, ``"seeding"``, ``"estep"``, ``"mstep"``,
        ``"labels"``, and the ``"total"`` of ``fit``; a fit on data in row chunks also has
        ``"scan"``, the first pass over them (``"reduction"`` is then the second).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string column names.

    See Also
    --------
    clusterkit.presets : ready-made configurations of the papers' algorithms.

    Notes
    -----
    The data are mean-centred (a copy) before fitting and the mean is added back to the
    centres, which keeps float32 distances accurate. float32 input stays float32 throughout.
    BLAS is limited to one thread during ``fit``; parallelism comes from the OpenMP kernels,
    whose results do not depend on ``n_threads``. With a soft M-step the fitted model is an
    isotropic Gaussian mixture: :meth:`predict_proba` and :meth:`score_samples` give its exact
    posteriors and log-likelihoods (hard fits do not have these methods).

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import Clusterer
    >>> X = np.array([[1, 2], [1, 4], [1, 0], [10, 2], [10, 4], [10, 0]], dtype=float)
    >>> km = Clusterer(n_clusters=2, random_state=0).fit(X)
    >>> np.sort(km.cluster_centers_[:, 0])
    array([ 1., 10.])
    >>> km.predict([[0, 0], [12, 3]]) == km.predict([[1, 2], [10, 2]])
    array([ True,  True])
    """

    def __init__(self, n_clusters=8, *, seed="k-means++", reduce=None, estep="full",
                 mstep="hard", schedule="full", n_init=1, max_iter=200, tol=1e-4,
                 random_state=None, n_threads=None, compute_labels=True, verbose=0,
                 callback=None):
        self.n_clusters = n_clusters
        self.seed = seed
        self.reduce = reduce
        self.estep = estep
        self.mstep = mstep
        self.schedule = schedule
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.n_threads = n_threads
        self.compute_labels = compute_labels
        self.verbose = verbose
        self.callback = callback

    # -- validation --------------------------------------------------------------------------

    def _check_params(self, X):
        check_n_clusters(self.n_clusters, X.shape[0])
        check_int(self.n_init, "n_init", minimum=1)
        check_int(self.max_iter, "max_iter", minimum=1)
        if not isinstance(self.tol, numbers.Real) or not self.tol >= 0:
            raise ValueError(f"tol={self.tol!r} must be a non-negative number.")
        effective_n_threads(self.n_threads)  # raises for invalid values
        if self.callback is not None and not callable(self.callback):
            raise TypeError(f"callback must be callable, got {type(self.callback).__name__}.")

    def _strategies(self, X, x_mean):
        """Resolve the five strategies; user-given centres become a seeder."""
        if isinstance(self.seed, (str, Seeder)) or self.seed is None:
            seeder = _resolve(self.seed, "seed", Seeder, _SEEDERS, KMeansPlusPlus)
        else:
            centers = np.asarray(self.seed)
            if centers.dtype.kind not in "biuf":
                raise TypeError(f"seed must be a string, a Seeder or an array of centres, got "
                                f"{type(self.seed).__name__}.")
            expected = (self.n_clusters, X.shape[1])
            if centers.shape != expected:
                raise ValueError(f"seed has shape {centers.shape}, but initial centres must have "
                                 f"shape (n_clusters, n_features)={expected}.")
            if not np.all(np.isfinite(centers)):
                raise ValueError("seed contains NaN or infinity; initial centres must be finite.")
            with np.errstate(over="ignore"):
                centers = np.ascontiguousarray(centers, dtype=X.dtype)
            if not np.all(np.isfinite(centers)):
                raise ValueError(f"seed has values beyond the range of {X.dtype.name}, the "
                                 "data's dtype.")
            # (data in row chunks are centred after their first pass, see _scan)
            seeder = _GivenCenters(centers if x_mean is None else centers - x_mean)
        reducer = _resolve(self.reduce, "reduce", DataReducer, _REDUCERS, NoReduction)
        estep = _resolve(self.estep, "estep", EStep, _ESTEPS, FullEStep)
        mstep = _resolve(self.mstep, "mstep", MStep, _MSTEPS, HardMStep)
        schedule = _resolve(self.schedule, "schedule", Schedule, _SCHEDULES, FullBatch)
        composition = Composition(seeder, reducer, estep, mstep, schedule)
        for strategy in composition:
            strategy._validate(X, self.n_clusters, composition)
        return composition

    def _chunked_data(self, X, sample_weight):
        """``X`` as :class:`~clusterkit._chunked.ChunkedData` if it is to be read in row
        chunks, else ``None``.

        A dask array always is, and needs a chunked reducer (``ValueError`` naming LWCS
        otherwise, before any work); a memmap is when the reducer is chunked (otherwise it is
        read like any array). Sets ``n_features_in_`` without reading the data.
        """
        dask_input = _chunked.is_dask_array(X)
        if not (dask_input or isinstance(X, np.memmap)):
            return None
        reducer = _resolve(self.reduce, "reduce", DataReducer, _REDUCERS, NoReduction)
        if not reducer.chunked:
            if not dask_input:
                return None
            raise ValueError(f"Clusterer.fit on a dask array needs a reducer that works on "
                             f"row chunks, reduce=LWCS(...) (as in presets.vc_gmm and "
                             f"presets.lwcs_lloyd); reduce={type(reducer).__name__} needs all "
                             "the data in memory.")
        data = _chunked.chunked_data(X, sample_weight, effective_n_threads(self.n_threads))
        validate_data(self, X, skip_check_array=True)  # n_features_in_, no feature names
        return data

    def _scan(self, data, seeder, state):
        """The first pass over data in row chunks (``ChunkedData.scan``): validates them and
        returns their weighted mean as the fit's centring, in their dtype, and the seeder
        with given initial centres moved into it."""
        state.seconds_by_phase.setdefault("scan", 0.0)
        with state.timed("scan"):
            moments = data.scan()
        x_mean = moments.global_mean.astype(data.dtype)
        self._say(1, f"Scan: {data.shape[0]} samples in {data.n_chunks} chunks, "
                     f"{state.seconds_by_phase['scan']:.3g} s")
        if isinstance(seeder, _GivenCenters):
            seeder = _GivenCenters(seeder.centers - x_mean)
        return x_mean, seeder

    # -- fitting -----------------------------------------------------------------------------

    def fit(self, X, y=None, sample_weight=None):
        """Cluster ``X``.

        Parameters
        ----------
        X : array-like, dask array or numpy.memmap of shape (n_samples, n_features)
            Training data; float32 is kept, everything else becomes float64. A row-chunked
            dask array (with a chunked reducer, :class:`LWCS`) or a memmap (when the reducer
            is chunked) is never loaded as a whole: the reducer builds its coreset in passes
            over the chunks, the fit runs on the coreset, and after a dask fit ``labels_``
            and ``inertia_`` are lazy dask arrays (see the Dask page of the documentation).
        y : Ignored
        sample_weight : array-like or dask array of shape (n_samples,), default=None
            Non-negative weights; a weight of 2 counts a sample twice.

        Returns
        -------
        self : Clusterer
            The fitted estimator.

        Raises
        ------
        ValueError
            If ``X`` is empty, not 2-D or not finite, has values so large (or so close
            together) that squared distances overflow (or all underflow) its dtype, has fewer
            samples than ``n_clusters``, if ``sample_weight`` is negative, non-finite, all
            zero, does not fit ``X``'s dtype or makes weighted sums overflow it, or a
            strategy's parameters do not fit the data or its results have the wrong shape;
            if ``X`` is a dask array and the reducer cannot read row chunks (anything but
            :class:`LWCS`).
        ImportError
            If ``X`` is a dask array and dask is not installed (``pip install
            'clusterkit[dask]'``).
        """
        self.__dict__.pop("_stream", None)  # a fit ends any partial_fit stream
        chunked = self._chunked_data(X, sample_weight)
        if chunked is None:
            X = validate_data(self, X, dtype=[np.float64, np.float32], order="C",
                              ensure_min_samples=1)
            self._check_params(X)
            sample_weight = check_sample_weight(sample_weight, X.shape[0], X.dtype)
            check_representable(X, sample_weight=sample_weight)
            # Centring in X's own dtype rounds exactly as scikit-learn's KMeans does, so that
            # both start from bit-identical data (the mean's own rounding is a translation).
            x_mean = X.mean(axis=0)
        else:
            # Data in row chunks: the composition is checked before the first pass over them,
            # which validates them and gives their mean (see _scan).
            X, sample_weight, x_mean = chunked, None, None
            self._check_params(X)
        seeder, reducer, estep, mstep, schedule = self._strategies(X, x_mean)
        n_init = self.n_init
        if isinstance(seeder, _GivenCenters) and n_init > 1:
            warnings.warn(f"seed gives the initial centres: running once instead of "
                          f"n_init={n_init} times.", RuntimeWarning, stacklevel=2)
            n_init = 1
        state = FitState(
            n_clusters=self.n_clusters, n_features=X.shape[1],
            random_state=check_random_state(self.random_state),
            n_threads=effective_n_threads(self.n_threads), needs_resp=mstep.needs_resp,
            objective=mstep.objective, center_update=schedule.center_update,
            strict_convergence=(estep.exact and not mstep.needs_resp
                                and schedule.center_update in _MEAN_RULES))
        if self.verbose:
            state.on_progress = self._progress_printer()
        if chunked is not None:
            x_mean, seeder = self._scan(chunked, seeder, state)
        with _single_threaded_blas():
            X_fit, w_fit, reduced = self._reduce_and_centre(X, sample_weight, reducer,
                                                            schedule, state, x_mean)
            best = None
            for run in range(1, n_init + 1):
                if n_init > 1:
                    self._say(1, f"Run {run} of {n_init}")
                centers, end = self._run(X_fit, w_fit, seeder, estep, mstep, schedule, state,
                                         x_mean)
                # runs compete on one objective of all the (reduced) data
                objective = state.history[-1]["objective"]
                if n_init > 1 and state.history[-1]["batch_size"] < X_fit.shape[0]:
                    state.rows = slice(0, X_fit.shape[0])
                    objective = estep.assign(X_fit, w_fit, centers, state).objective
                if best is None or mstep.objective.better(objective, best[0]):
                    settled = state.labels.copy() if state.at_fixed_point else None
                    best = (objective, centers, end, state.history, state.sigma2,
                            state.estep_state, state.mstep_state, settled)
                if end == "callback":  # the callback ends the whole fit
                    break
            (_, centers, end, history, sigma2, state.estep_state, state.mstep_state,
             settled) = best
            if end == "max_iter":
                warnings.warn(
                    f"The fit did not converge: the objective still changed by more than "
                    f"tol={self.tol} after max_iter={self.max_iter} iterations. Increase "
                    "max_iter or tol, or start closer to a solution (for PartialEStep, not "
                    "init='random').",
                    ConvergenceWarning, stacklevel=2)
            if self.compute_labels:
                with state.timed("labels"):
                    self._label_training_data(X, sample_weight, X_fit, reduced, x_mean,
                                              centers, estep, state, settled)
                n_distinct = (self.n_clusters if _chunked.is_dask_array(self.labels_) else
                              np.count_nonzero(np.bincount(self.labels_,
                                                           minlength=self.n_clusters)))
                if n_distinct < self.n_clusters:
                    warnings.warn(f"Number of distinct clusters ({n_distinct}) found smaller "
                                  f"than n_clusters ({self.n_clusters}). Possibly due to "
                                  "duplicate points in X.", ConvergenceWarning, stacklevel=2)
                self._say(1, f"Labels: {X.shape[0]} samples, {state.cost['labels']} distance "
                             f"evaluations, {state.seconds_by_phase['labels']:.3g} s")
        for name in self.__dict__.pop("_strategy_attributes", ()):
            self.__dict__.pop(name, None)
        extra = {name: value for strategy in (seeder, reducer, estep, mstep, schedule)
                 for name, value in strategy.fitted_attributes(state).items()}
        self.__dict__.update(extra)
        self._strategy_attributes = tuple(extra)
        self.cluster_centers_ = centers + x_mean
        self._x_mean = x_mean
        self.cost_ = dict(state.cost)
        self.n_distance_evals_ = state.n_distance_evals
        self.history_ = history
        self.n_iter_ = len(history)
        self.converged_ = end in ("converged", "budget")
        self.objective_ = history[-1]["objective"]
        self.seconds_ = dict(state.seconds_by_phase, total=state.seconds)
        if sigma2 is not None:
            self.sigma2_ = sigma2
        elif hasattr(self, "sigma2_"):
            del self.sigma2_
        self._say(1, f"Done: {self.n_iter_} iterations ({end}), {mstep.objective.name} "
                     f"{self.objective_:.6g}, {self.n_distance_evals_} distance evaluations "
                     f"({', '.join(f'{k} {v}' for k, v in self.cost_.items())}), "
                     f"{self.seconds_['total']:.3g} s")
        return self

    def _say(self, level, message):
        """Print a progress line when ``verbose >= level`` (the only place that prints)."""
        if self.verbose >= level:
            print(message, flush=True)

    def _progress_printer(self):
        """``state.on_progress`` for verbose fits: a line at most every second, so that only
        long phases report progress (and their end)."""
        last = {"time": time.perf_counter(), "printed": False}

        def report(phase, done, total):
            now = time.perf_counter()
            if now - last["time"] >= 1.0 or (done == total and last["printed"]):
                self._say(1, f"  {phase}: {done}/{total}")
                last.update(time=now, printed=done < total)
        return report

    def _label_training_data(self, X, sample_weight, X_fit, reduced, x_mean, centers, estep,
                             state, settled):
        """``labels_`` and ``inertia_``: the E-step's own final labels of the fitted rows if it
        defines them, or the last step's labels if the run ended at a fixed point
        (``settled``, as scikit-learn's ``KMeans``), else every training sample's nearest
        final centre (one exact pass, on the fit's centred copy when it ran on all the data,
        else block by block). Rows of the fit's copy are in the run's order
        (``state.order``) and are mapped back. Data in row chunks are labelled chunk by
        chunk: lazily for a dask array (a dask array of labels and a 0-d one of the inertia;
        nothing is counted), block by block for a memmap."""
        if isinstance(X, _chunked.ChunkedData):
            self.labels_, self.inertia_, n_evals = X.nearest(x_mean, centers)
            state.count("labels", n_evals)
            return
        if reduced:
            labels, dist2, n_evals = _nearest(X, x_mean, centers, state.n_threads)
        else:
            labels = estep.final_labels(state)
            if labels is None:
                labels = settled
            if labels is None:
                labels, dist2, n_evals = _nearest(X_fit, None, centers, state.n_threads)
            else:
                labels = np.ascontiguousarray(labels, dtype=np.int32)
                dist2 = np.empty(X_fit.shape[0], dtype=X_fit.dtype)
                n_evals = _assign.dist2_to_labels(X_fit, centers, labels, dist2,
                                                  state.n_threads)
            labels, dist2 = state.in_data_order(labels), state.in_data_order(dist2)
        state.count("labels", n_evals)
        self.labels_ = labels
        self.inertia_ = weighted_sum(dist2, sample_weight)

    def _reduce_and_centre(self, X, sample_weight, reducer, schedule, state, x_mean):
        """The data every run clusters: reduced (once), then centred (a copy), in the
        schedule's order of the rows if it has one (``state.order``).

        Returns the centred data, its weights and whether the reducer changed the data, and
        sets the fit's precision limits (``state.sigma2_floor``, ``state.qe_resolution``).
        """
        # Coreset construction (Hirschberger et al., Alg. 1 line 1) on the data as given;
        # identity by default.
        X_given = X
        chunked = isinstance(X, _chunked.ChunkedData)
        with state.timed("reduction"):
            if chunked:  # only the reduced set reaches this process
                X, sample_weight = reducer.reduce_chunked(X, state)
            else:
                X, sample_weight = reducer.reduce(X, sample_weight, state)
        reduced = X is not X_given
        if reduced:
            X = _strategy_array(X, reducer, "data", (None, X_given.shape[1]), X_given.dtype)
            sample_weight = _strategy_array(sample_weight, reducer, "weights", (X.shape[0],),
                                            X.dtype)
            if np.any(sample_weight < 0) or not np.any(sample_weight > 0):
                raise ValueError(f"{type(reducer).__name__} returned negative or all-zero "
                                 "weights.")
            if chunked:  # the fit's weighted sums run over the reduced set only
                check_representable(X, sample_weight=sample_weight)
            self._say(1, f"Reduction: {X_given.shape[0]} samples to {X.shape[0]} weighted "
                         f"samples, {state.cost['reduction']} distance evaluations, "
                         f"{state.seconds_by_phase['reduction']:.3g} s")
        check_n_clusters(self.n_clusters, X.shape[0])
        # Only the data the fit runs on is centred (a copy), so a coreset fit never copies the
        # full data; centring keeps float32 distances accurate far from the origin. The same
        # pass puts the rows in the schedule's order (nested prefixes become views).
        # (the sum of squares in float64: in float32 it can overflow where no distance does)
        state.order = schedule.order(X.shape[0], state)
        if state.order is not None:
            state.order = _strategy_array(state.order, schedule, "order", (X.shape[0],),
                                          np.intp)
            if not np.array_equal(np.sort(state.order), np.arange(X.shape[0])):
                raise ValueError(f"{type(schedule).__name__}.order returned no permutation "
                                 "of the rows.")
            sample_weight = sample_weight[state.order]
        centred = np.empty_like(X)
        sum_of_squares = center_rows(X, x_mean, centred, state.n_threads, state.order)
        X = centred
        variance = sum_of_squares / X.size  # mean per-feature variance
        # a normal number even for constant data, so that 1 / sigma2 stays finite
        state.sigma2_floor = max(1e-12 * variance, float(np.finfo(X.dtype).tiny))
        state.qe_resolution = (float(np.finfo(X.dtype).eps) * variance * X.shape[1]
                               * float(sample_weight.sum(dtype=np.float64)))
        return X, sample_weight, reduced

    def _run(self, X, sample_weight, seeder, estep, mstep, schedule, state, x_mean):
        """One run of the driver loop on the centred data: the papers' pseudo-code, one
        strategy call per step.

        Returns the (centred) centres and why the run ended: ``"converged"`` (the schedule's
        stopping rule held), ``"budget"`` (the schedule's batches ran out), ``"max_iter"`` or
        ``"callback"``.
        """
        state.start_run(X.shape[0])
        evals, seconds = state.cost["seeding"], state.seconds_by_phase["seeding"]
        # Seeding: k-means++ / AFK-MC2 / given centres (Forster & Lücke, Alg. 1 line 1).
        with state.timed("seeding"):
            centers = seeder.seed(X, sample_weight, self.n_clusters, state)
        centers = _strategy_array(centers, seeder, "centres", (self.n_clusters, X.shape[1]),
                                  X.dtype)
        self._say(1, f"Seeding: {self.n_clusters} centres on {X.shape[0]} samples, "
                     f"{state.cost['seeding'] - evals} distance evaluations, "
                     f"{state.seconds_by_phase['seeding'] - seconds:.3g} s")
        # Per-fit state of the strategies (winners, neighbourhoods, bounds, running sums).
        state.estep_state = estep.init_state(X, sample_weight, centers, state)
        state.mstep_state = mstep.init_state(X, sample_weight, centers, state)
        state.schedule_state = schedule.init_state(X.shape[0], state)
        batches = schedule.batches(X.shape[0], state)
        for iteration in range(1, self.max_iter + 1):
            state.step_info = {}
            rows = next(batches, None)
            if rows is None:
                if not state.history:
                    raise ValueError(f"{type(schedule).__name__}.batches yielded no batch: a "
                                     "fit needs at least one iteration.")
                return centers, "budget"
            # one batch, or the batches of the step's inner steps
            inner = rows if isinstance(rows, list) else [rows]
            if not inner:
                raise ValueError(f"{type(schedule).__name__}.batches yielded an empty list of "
                                 "batches.")
            state.n_inner_steps = len(inner)
            for state.inner_step, state.rows in enumerate(inner):
                Xb, wb = X[state.rows], sample_weight[state.rows]
                # E-step: assignment / (truncated) responsibilities with the current
                # parameters.
                with state.timed("estep"):
                    assignment = estep.assign(Xb, wb, centers, state)
                # M-step: new centres (and the model's other parameters) from the assignment.
                with state.timed("mstep"):
                    centers_new = mstep.update(Xb, wb, assignment, centers, state)
                state.record_step(assignment.labels, centers, centers_new)
                centers = centers_new
                if state.inner_step == 0:  # the step's objective: at its start
                    first, first_weight = assignment, wb
            if self._record(iteration, first, first_weight, centers + x_mean, state):
                return centers, "callback"
            if schedule.should_stop(state, self.tol):
                return centers, "converged"
        return centers, "max_iter"

    def _record(self, iteration, assignment, sample_weight, centers, state):
        """Append the step to the history, report it; ``True`` if the callback stops."""
        info = {"iteration": iteration, "objective": assignment.objective, "qe": assignment.qe,
                "batch_size": sample_weight.shape[0],
                "weight": float(sample_weight.sum(dtype=np.float64)),
                "n_changed": state.n_changed,
                "max_center_shift": float(state.center_shift.max()),
                "passes": state.n_passes,
                "distance_evals": state.n_distance_evals, "seconds": state.seconds}
        if state.sigma2 is not None:
            info["sigma2"] = state.sigma2
        info.update(state.step_info)
        state.history.append(info)
        self._say(1, f"Iteration {iteration:4d}: objective={info['objective']:.6g} "
                     f"changed={info['n_changed']} ({info['seconds']:.3g} s)")
        phases = state.seconds_by_phase
        self._say(2, f"    qe={info['qe']:.6g} batch={info['batch_size']} max shift="
                     f"{info['max_center_shift']:.3g}; so far: E-steps {state.cost['estep']} "
                     f"distance evaluations, {phases['estep']:.3g} s; M-steps "
                     f"{phases['mstep']:.3g} s")
        if self.callback is not None:  # centres in the user's coordinates
            stop = self.callback(dict(info, centers=centers))
            return stop is True or stop is np.True_
        return False

    # -- using a fitted model ----------------------------------------------------------------

    def _check_test_data(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=[np.float64, np.float32], order="C", reset=False)
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
        with _single_threaded_blas():
            labels, dist2, _ = _nearest(X, x_mean, centers, n_threads)
        return X, labels, dist2

    def _map_dask(self, X, method, dtype, n_columns=None):
        """``method`` of the fitted model on every row chunk of the dask array ``X``, as a
        lazy dask array (the chunks' tasks validate their rows as ``method`` does).

        The model goes to the workers once: a copy with the centres and the variance but
        without the per-sample attributes (``labels_`` may itself be a dask array), running
        its kernels on one OpenMP thread per task, since dask runs the tasks in parallel.
        """
        check_is_fitted(self)
        if X.ndim != 2:
            raise ValueError(f"Expected a 2-D array, got X of shape {X.shape}.")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input.")
        model = clone(self).set_params(n_threads=1, callback=None, verbose=0)
        for name in ("cluster_centers_", "_x_mean", "sigma2_", "n_features_in_"):
            if hasattr(self, name):
                setattr(model, name, getattr(self, name))
        return _chunked.map_rows(X, _model_on_chunk, (model, method), dtype, n_columns)

    def _dask_out_dtype(self, X):
        """The floating dtype results for the dask array ``X`` have: ``predict``'s rule."""
        return np.float32 if X.dtype == np.float32 else np.float64

    def predict(self, X):
        """Index of the nearest centre of each sample.

        Parameters
        ----------
        X : array-like or dask array of shape (n_samples, n_features)
            A dask array gives a dask array, computed chunk by chunk.

        Returns
        -------
        labels : ndarray or dask array of shape (n_samples,), dtype=int32
        """
        if _chunked.is_dask_array(X):
            return self._map_dask(X, "predict", np.int32)
        return self._labels_dist2(X)[1]

    def _can_stream(self):
        """Whether ``partial_fit`` applies (a hard M-step); otherwise the ``AttributeError``
        says why."""
        mstep = _MSTEPS.get(self.mstep, self.mstep) if isinstance(self.mstep, str) else self.mstep
        if mstep is None or (isinstance(mstep, (MStep, type)) and not mstep.needs_resp):
            return True
        raise AttributeError("partial_fit keeps running means of hard assignments; this "
                             "Clusterer's M-step needs responsibilities (a Gaussian mixture).")

    @available_if(_can_stream)
    def partial_fit(self, X, y=None, sample_weight=None):
        """Update the centres with one batch of a stream (mini-batch k-means).

        The first call seeds the centres on its batch (which needs at least ``n_clusters``
        samples) and fixes the frame the data are centred in (that batch's mean); every call
        assigns its batch with the E-step and adds it to the centres' running sums, a sample
        counted at every visit (:class:`MiniBatch`'s ``"running"`` rule), as scikit-learn's
        ``MiniBatchKMeans.partial_fit``. ``fit`` starts afresh.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            One batch; every call must have the first call's number of features (and is
            converted to its dtype).
        y : Ignored
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : Clusterer
            With ``cluster_centers_``, ``labels_`` and ``inertia_`` of this batch,
            ``n_iter_`` (batches so far), ``history_``, ``cost_`` and ``n_distance_evals_``
            (totals over the stream).

        Raises
        ------
        ValueError
            For what ``fit`` refuses, a batch whose number of features differs from the
            first one's, or a composition that cannot run on a stream (a soft M-step, or an
            E-step that is not exact).
        """
        stream = getattr(self, "_stream", None)
        first = stream is None
        X = validate_data(self, X, dtype=[np.float64, np.float32] if first else
                          self.cluster_centers_.dtype, order="C", ensure_min_samples=1,
                          reset=first)
        sample_weight = check_sample_weight(sample_weight, X.shape[0], X.dtype)
        check_representable(X, sample_weight=sample_weight)
        if first:
            self._check_params(X)
            stream = self._start_stream(X, sample_weight)
        state, estep, mstep = stream["state"], stream["estep"], stream["mstep"]
        Xc = X - self._x_mean
        n_batch = X.shape[0]
        with _single_threaded_blas():
            if first:
                with state.timed("seeding"):
                    centers = stream["seeder"].seed(Xc, sample_weight, self.n_clusters, state)
                centers = _strategy_array(centers, stream["seeder"], "centres",
                                          (self.n_clusters, X.shape[1]), X.dtype)
                state.mstep_state = mstep.init_state(Xc, sample_weight, centers, state)
            else:
                centers = self.cluster_centers_ - self._x_mean
            # the batch's rows are new samples: per-sample state starts afresh
            state.n_samples, state.rows = n_batch, slice(0, n_batch)
            state.labels = np.full(n_batch, -1, dtype=np.int32)
            state.estep_state = estep.init_state(Xc, sample_weight, centers, state)
            with state.timed("estep"):
                assignment = estep.assign(Xc, sample_weight, centers, state)
            with state.timed("mstep"):
                centers_new = mstep.update(Xc, sample_weight, assignment, centers, state)
            state.record_step(assignment.labels, centers, centers_new)
        self._record(len(state.history) + 1, assignment, sample_weight,
                     centers_new + self._x_mean, state)
        self.cluster_centers_ = centers_new + self._x_mean
        self.labels_ = assignment.labels.copy()
        self.inertia_ = assignment.qe
        self.history_ = state.history
        self.n_iter_ = len(state.history)
        self.objective_ = assignment.objective
        self.cost_ = dict(state.cost)
        self.n_distance_evals_ = state.n_distance_evals
        self.seconds_ = dict(state.seconds_by_phase, total=state.seconds)
        return self

    def _start_stream(self, X, sample_weight):
        """The strategies and state of a stream, from its first batch."""
        self._x_mean = X.mean(axis=0)
        seeder, _, estep, mstep, _ = self._strategies(X, self._x_mean)
        if mstep.needs_resp or "running" not in getattr(mstep, "_rules", ()):
            raise ValueError(f"partial_fit adds batches to running means: it needs a hard "
                             f"M-step that keeps them (HardMStep), not {type(mstep).__name__}.")
        if not estep.exact:
            raise ValueError(f"partial_fit needs an exact E-step (FullEStep, ElkanEStep or "
                             f"TruncatedEStep), not {type(estep).__name__}.")
        state = FitState(
            n_clusters=self.n_clusters, n_features=X.shape[1],
            random_state=check_random_state(self.random_state),
            n_threads=effective_n_threads(self.n_threads), needs_resp=False,
            objective=mstep.objective, center_update="running")
        self._stream = {"state": state, "seeder": seeder, "estep": estep, "mstep": mstep}
        return self._stream

    def fit_predict(self, X, y=None, sample_weight=None):
        """Fit, then return the labels of the training data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : Ignored
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        labels : ndarray or dask array of shape (n_samples,), dtype=int32
            A lazy dask array when ``X`` is one.
        """
        self.fit(X, sample_weight=sample_weight)
        return self.labels_ if self.compute_labels else self.predict(X)

    def transform(self, X):
        """Euclidean distances of each sample to every centre.

        Parameters
        ----------
        X : array-like or dask array of shape (n_samples, n_features)
            A dask array gives a dask array, computed chunk by chunk.

        Returns
        -------
        distances : ndarray or dask array of shape (n_samples, n_clusters)
        """
        if _chunked.is_dask_array(X):
            return self._map_dask(X, "transform", self._dask_out_dtype(X),
                                  self.cluster_centers_.shape[0])
        X = self._check_test_data(X)
        distances = np.empty((X.shape[0], self.cluster_centers_.shape[0]), dtype=X.dtype)
        for rows, dist2 in self._dist2_blocks(X):
            np.sqrt(dist2, out=distances[rows])
        return distances

    def _dist2_blocks(self, X):
        """Row blocks ``(rows, dist2)`` of the squared distances of validated ``X`` to the
        centres, computed like :meth:`predict`'s (see :func:`_dist2_blocks`)."""
        x_mean, centers = self._centred_frame(X.dtype)
        with _single_threaded_blas():
            yield from _dist2_blocks(X, x_mean, centers, effective_n_threads(self.n_threads))

    def _is_gmm(self):
        """Whether the model is a Gaussian mixture (its M-step maximises the free energy);
        otherwise the ``AttributeError`` says how to get one."""
        mstep = _MSTEPS.get(self.mstep, self.mstep) if isinstance(self.mstep, str) else self.mstep
        if isinstance(mstep, (MStep, type)) and mstep.objective == FREE_ENERGY:
            return True
        raise AttributeError("This Clusterer is not a Gaussian mixture, so it has no "
                             "probabilities; fit with mstep='soft' (or presets.gmm, var_gmm_s, "
                             "vc_gmm) for predict_proba and score_samples.")

    def _scaled_dist2_blocks(self, X):
        """Row blocks of the log-joint ``log p(c, x)`` of the fitted mixture for validated
        ``X``, in float64, as ``(rows, best, shifted)``:
        ``-d2(x, mu_c) / (2 sigma2)`` is ``best + shifted`` with ``best`` its row maximum, up
        to the constant ``log C + (D/2) log(2 pi sigma2)``.

        The shift keeps the nearest centre at 0 even where the scaled distances overflow to
        ``-inf`` (tiny variances, far samples), so that probabilities never become ``nan``.
        """
        for rows, d2 in self._dist2_blocks(X):
            d2 = d2.astype(np.float64)
            nearest = d2.min(axis=1, keepdims=True)
            with np.errstate(over="ignore"):
                best = nearest[:, 0] / (-2.0 * self.sigma2_)
                shifted = (d2 - nearest) / (-2.0 * self.sigma2_)
            yield rows, best, shifted

    @available_if(_is_gmm)
    def predict_proba(self, X):
        """Posterior probability of every cluster for each sample (soft M-steps only).

        The exact responsibilities of the fitted isotropic Gaussian mixture (equal weights
        ``1/C``, shared variance ``sigma2_``) over all clusters, whatever E-step the fit used.

        Parameters
        ----------
        X : array-like or dask array of shape (n_samples, n_features)
            A dask array gives a dask array, computed chunk by chunk.

        Returns
        -------
        proba : ndarray or dask array of shape (n_samples, n_clusters)
            Rows sum to one; the most probable cluster is the nearest centre.
        """
        if _chunked.is_dask_array(X):
            return self._map_dask(X, "predict_proba", self._dask_out_dtype(X),
                                  self.cluster_centers_.shape[0])
        X = self._check_test_data(X)
        proba = np.empty((X.shape[0], self.cluster_centers_.shape[0]), dtype=X.dtype)
        for rows, _, shifted in self._scaled_dist2_blocks(X):
            proba[rows] = np.exp(shifted - logsumexp(shifted, axis=1, keepdims=True))
        return proba

    @available_if(_is_gmm)
    def score_samples(self, X):
        """Log-likelihood of each sample under the fitted mixture (soft M-steps only).

        ``log p(x) = log sum_c (1/C) N(x; mu_c, sigma2_ I)`` over all clusters.

        Parameters
        ----------
        X : array-like or dask array of shape (n_samples, n_features)
            A dask array gives a dask array, computed chunk by chunk.

        Returns
        -------
        log_likelihood : ndarray or dask array of shape (n_samples,), dtype=float64
        """
        if _chunked.is_dask_array(X):
            return self._map_dask(X, "score_samples", np.float64)
        X = self._check_test_data(X)
        const = log_joint_offset(self.sigma2_, *self.cluster_centers_.shape)
        log_likelihood = np.empty(X.shape[0])
        for rows, best, shifted in self._scaled_dist2_blocks(X):
            log_likelihood[rows] = best + logsumexp(shifted, axis=1) - const
        return log_likelihood

    @property
    def _n_features_out(self):
        """Number of columns of :meth:`transform`, named ``clusterer0``, ``clusterer1``, ... by
        ``get_feature_names_out``."""
        return self.cluster_centers_.shape[0]

    def score(self, X, y=None, sample_weight=None):
        """How well the fitted model explains ``X`` (higher is better).

        For k-means (and every model that is not a Gaussian mixture) minus the weighted
        quantization error, as scikit-learn's ``KMeans.score``; for a Gaussian mixture
        (``mstep="soft"``) the (weighted) mean log-likelihood, as
        ``GaussianMixture.score``.

        Parameters
        ----------
        X : array-like or dask array of shape (n_samples, n_features)
        y : Ignored
        sample_weight : array-like or dask array of shape (n_samples,), default=None

        Returns
        -------
        score : float or 0-d dask array
            ``-sum_n w_n min_c ||x_n - mu_c||^2``, or
            ``sum_n w_n log p(x_n) / sum_n w_n`` for a Gaussian mixture. For a dask array
            ``X``, a lazy 0-d dask array (``float(score)`` computes it); its weights are
            checked by the tasks.
        """
        if _chunked.is_dask_array(X):
            return self._score_dask(X, sample_weight)
        if self._gmm_fitted():
            log_likelihood = self.score_samples(X)
            sample_weight = check_sample_weight(sample_weight, log_likelihood.shape[0],
                                                np.float64)
            return weighted_sum(log_likelihood, sample_weight) / float(sample_weight.sum())
        X, _, dist2 = self._labels_dist2(X)
        sample_weight = check_sample_weight(sample_weight, X.shape[0], X.dtype)
        return -weighted_sum(dist2, sample_weight)

    def _score_dask(self, X, sample_weight):
        """:meth:`score` of a dask array, lazily: one pass over the chunks."""
        gmm = self._gmm_fitted()
        values = (self._map_dask(X, "score_samples", np.float64) if gmm else
                  self._map_dask(X, "dist2", np.float64))
        weights = _chunked.row_weights(sample_weight, X)
        if weights is not None:
            weights = weights.map_blocks(_checked_weights, dtype=np.float64)
        if gmm:
            return (values.mean() if weights is None else
                    (values * weights).sum() / weights.sum())
        return -(values.sum() if weights is None else (values * weights).sum())

    def _gmm_fitted(self):
        try:
            return self._is_gmm()
        except AttributeError:
            return False

    def _n_parameters(self):
        """Free parameters of the isotropic mixture: the means and one shared variance (the
        mixing weights are fixed at ``1/C``)."""
        return self.cluster_centers_.size + 1

    @available_if(_is_gmm)
    def bic(self, X):
        """Bayesian information criterion of the fitted mixture on ``X`` (lower is better).

        ``-2 log L + p log N`` with ``p = C D + 1`` free parameters (``C`` means, one shared
        variance; the weights are fixed), as ``GaussianMixture.bic``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        bic : float
        """
        log_likelihood = self.score_samples(X)
        n_samples = log_likelihood.shape[0]
        return -2.0 * float(log_likelihood.sum()) + self._n_parameters() * math.log(n_samples)

    @available_if(_is_gmm)
    def aic(self, X):
        """Akaike information criterion of the fitted mixture on ``X`` (lower is better).

        ``-2 log L + 2 p`` with ``p = C D + 1`` free parameters, as ``GaussianMixture.aic``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        aic : float
        """
        log_likelihood = self.score_samples(X)
        return -2.0 * float(log_likelihood.sum()) + 2.0 * self._n_parameters()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
