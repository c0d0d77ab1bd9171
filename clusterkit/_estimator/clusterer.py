"""The :class:`Clusterer` estimator: validation at the public boundary, the strategies it
assembles, and the fitted attributes; the loop itself is the driver's (:mod:`._driver`)."""
import numpy as np
from sklearn.base import (BaseEstimator, ClassNamePrefixFeaturesOutMixin, ClusterMixin,
                          TransformerMixin)
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import validate_data

from .._data import chunked as _chunked, memory
from .._data.containers import chunked_data
from .._data.moments import weighted_sum
from .._data.nearest import data_mean, dist2_blocks, single_threaded_blas
from .._engine.assignment import FREE_ENERGY
from .._engine.contracts import Composition, Seeder
from .._engine.driver import Driver
from .._engine.progress import check_verbose
from .._engine.warn import warn
from .._kernels._openmp import effective_n_threads
from ..seeding.seeders import GivenCenters
from . import lazy as _lazy
from .composition import check_composition
from .memory_plan import MemoryMethods, copies_input
from .mixture import GaussianMixtureMethods
from .prediction import PredictionMethods
from .registry import AnswersUnknownKeywords, accepts_sparse, resolve, strategy_class
from .streaming import StreamingMethods
from .validation import (check_data, check_initial_centers, check_memory_limit, check_params,
                         check_representable, check_sample_weight, unit_rows)

__all__ = ["Clusterer"]


class Clusterer(PredictionMethods, MemoryMethods, GaussianMixtureMethods, StreamingMethods,
                ClassNamePrefixFeaturesOutMixin, ClusterMixin, TransformerMixin, BaseEstimator,
                AnswersUnknownKeywords):
    """k-means and isotropic Gaussian mixtures assembled from swappable strategies.

    A fit runs the pseudo-code shared by the papers clusterkit implements: reduce the data
    (``reduce``), choose initial centres (``seed``), then alternate E-steps (``estep``) and
    M-steps (``mstep``) on the batches the ``schedule`` yields, until the relative change of the
    objective is at most ``tol`` or ``max_iter`` iterations have run.

    Parameters
    ----------
    n_clusters : int, default=8
        Number of clusters ``C``.
    seed : str, Seeder or array-like of shape (n_clusters, n_features), default="auto"
        How to choose the initial centres: a string shortcut, any :class:`Seeder`, or the
        initial centres themselves. ``"auto"`` (or ``None``): greedy k-means++ (k-means||
        from 1,000 clusters on where the data have 32 rows per cluster) on as many rows as
        the schedule says a seeding is worth (:meth:`Schedule.seeding_rows`: all rows when
        ``N C D <= 2^27``, else about ``8 C`` to ``64 C`` rows for full batches),
        ``SampledSeeder(ByClusters(), size="schedule", float32=True)``, as the presets seed;
        ``"k-means++"``: :class:`KMeansPlusPlus`, greedy k-means++ on all rows (as
        scikit-learn's ``KMeans``); ``"afkmc2"`` :class:`AFKMC2`, ``"random"``
        :class:`RandomSeeder`, ``"sampled"`` :class:`SampledSeeder`, ``"by-dimension"``
        :class:`ByDimension`, ``"by-clusters"`` :class:`ByClusters`, each with its default
        parameters.
    reduce : None, str or DataReducer, default=None
        Data reduction before clustering: ``None`` or ``"none"`` :class:`NoReduction`,
        ``"lwcs"`` :class:`LWCS` (its default size grows with ``n_clusters``).
    estep : str or EStep, default="full"
        The E-step: ``"full"`` :class:`FullEStep`, ``"elkan"`` :class:`ElkanEStep`,
        ``"yinyang"`` :class:`YinyangEStep`, ``"bounded"`` :class:`BoundedEStep`,
        ``"truncated"`` :class:`TruncatedEStep`, ``"partial"`` :class:`PartialEStep`.
    mstep : {"hard", "soft", "spherical"} or MStep, default="hard"
        ``"hard"`` is :class:`HardMStep` (k-means), ``"soft"`` :class:`SoftMStep`
        (isotropic GMM with one shared variance), ``"spherical"`` :class:`SphericalMStep`
        (spherical k-means: every row is scaled to unit norm, see Notes).
    schedule : str or Schedule, default="full"
        Which samples each step uses: ``"full"`` :class:`FullBatch`, ``"minibatch"``
        :class:`MiniBatch`, ``"nmbatch"`` :class:`NestedDoubling`, ``"sbe"``
        :class:`SBEDecay`.
    refine : None, str, Refiner or tuple of them, default=None
        What happens after a run ended on its own: ``None``/``"none"``
        :class:`NoRefinement` (nothing), ``"breathing"`` :class:`Breathing` (move the least
        useful centres to where the error is largest, iterate again, keep what is better;
        see the quality page of the documentation), :class:`SinglePointMoves` (move single
        rows between clusters while that lowers the error). A tuple runs its refiners in
        turn, each on the run the one before kept (:class:`RefinerSequence`), e.g.
        ``refine=(Breathing(), SinglePointMoves())``.
    n_init : int, default=1
        Number of runs, each from new seeds, on the same (reduced) data; the run with the best
        final objective is kept (lowest quantization error for hard M-steps, highest free
        energy for soft ones). ``cost_`` counts the work of all runs. With initial centres
        given in ``seed`` there is one run (with a warning), as in scikit-learn. With a
        refiner each run is refined before the runs compete; its rounds draw from the fit's
        ``random_state``, so the runs after the first start from other seeds than without it.
    max_iter : int, default=200
        Maximum number of iterations (E-step plus M-step) per run (the budget Forster & Lücke
        used for BIRCH and KDD); for a mini-batch schedule (:class:`MiniBatch`) passes over
        the data, as scikit-learn's ``MiniBatchKMeans`` counts it (see ``n_iter_``).
    tol : float, default=1e-4
        Stop when the objective changes by at most ``tol`` relative to its value (a hard
        fit's quantization error counts as at least its rounding level, so a fit with more
        clusters than distinct points stops). ``tol=0`` runs until the objective stops
        changing or ``max_iter``. A mini-batch schedule applies it to its smoothed batch
        objective (see :class:`MiniBatch`).
    random_state : int, RandomState instance or None, default=None
        Seeds every random choice of the fit (seeding, reduction, exploration).
    n_threads : int or None, default=None
        OpenMP threads of the kernels; ``None`` uses all available cores.
    compute_labels : bool, default=True
        After fitting, assign the whole training data to the final centres (one exact pass,
        counted in ``cost_["labels"]``) to set ``labels_`` and ``inertia_``. When ``False``
        those two attributes are not set.
    verbose : int or "bar", default=0
        What the fit shows while it runs. ``0``: nothing. ``1``: one line per phase (scan,
        reduction, seeding, each iteration, the final labels) and a closing summary, and,
        while any phase runs, a line whenever nothing was printed for 2 seconds (the
        phase, its progress in its own units where it counts them, e.g.
        ``seeding: 412/1000 centres, 6.0 s``, and its seconds); ``2``: also per-iteration
        detail (quantization error, batch, largest centre shift, E- and M-step seconds and
        distance evaluations so far). ``"bar"``: the same progress as tqdm bars, in a
        terminal or a Jupyter notebook (needs the ``progress`` extra: ``pip install
        "clusterkit[progress]"``). See the quick start's section on ``verbose``.
    callback : callable or None, default=None
        Called after every iteration as ``callback(info)`` with the dictionary appended to
        ``history_`` plus ``"centers"`` (the current centres); a return value of ``True``
        (Python's or NumPy's) stops the fit, including the runs ``n_init`` has not started yet.
    memory_limit : int or None, default=None
        The fit's memory budget in bytes: what it may allocate beyond the data the caller
        holds, its own copies of the data (validated, centred) included. ``None``: half the
        memory available when ``fit`` starts. When ``fit`` starts, before any large
        allocation, the fit's estimate (:meth:`estimate_memory`) is checked against it:
        strategies that size their state by memory choose within it (:class:`BoundedEStep`
        falls back from Elkan's to Yinyang's bounds), a numpy.memmap whose copy would
        exceed it is read in row blocks instead of copied, and a fit that still does not
        fit is refused with a :class:`FitMemoryError` that says what would (fewer clusters,
        a lighter composition, data in row chunks, a larger limit). See the Memory page of
        the documentation.

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
        (``float(inertia_)`` computes it). For a spherical model, of the unit-norm rows:
        ``2 sum_n w_n (1 - cos(x_n, mu_n))``, twice the cosine dissimilarity.
    n_iter_ : int
        Iterations of the kept run, in the unit of ``max_iter``: steps, except for mini-batch
        schedules (:class:`MiniBatch`), which count passes over the data, rounded up, as
        scikit-learn's ``MiniBatchKMeans`` counts epochs; stochastic backward Euler counts
        outer steps. After ``partial_fit``: the stream's batches so far.
    n_steps_ : int
        Steps of the kept run (entries of ``history_``): batches for a mini-batch schedule,
        iterations otherwise.
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
        (soft M-steps). At least the floor ``eps B / D`` (``eps = 2.2e-16``, float64's
        machine epsilon; ``B`` the squared diagonal of the training data's bounding box,
        zero-weight rows included; at least the dtype's smallest normal number), so that
        ``score`` and ``score_samples`` of the training data stay finite (see
        :class:`SoftMStep`).
    history_ : list of dict
        One entry per iteration of the kept run with ``"iteration"``, ``"objective"``,
        ``"qe"`` (weighted quantization error of the batch, on the fitted, possibly reduced,
        data), ``"batch_size"`` and ``"weight"`` (rows and total weight of the batch),
        ``"passes"`` (rows visited / rows of the data), ``"n_changed"`` (labels of the batch
        that changed since the sample's previous visit; a first visit counts),
        ``"max_center_shift"`` (largest centre move of the M-step), ``"sigma2"`` (mixtures
        only), ``"distance_evals"`` (total of the fit so far, earlier runs, seeding and
        reduction included) and ``"seconds"`` (since the start of ``fit``); strategies add
        their own (a mini-batch M-step ``"n_relocated"``, the starved clusters it moved).
        After a refinement: the run's iterations, then those of each kept round, marked
        with their ``"refinement_round"``; a kept polish by :class:`SinglePointMoves` adds
        one entry (``"polish_passes"``).
    n_distance_evals_ : int
        Distance evaluations of the whole fit (the sum of ``cost_``), including the final
        ``"labels"`` pass; the papers' counts leave that pass out (coreset, seeding and
        iterations only), i.e. ``n_distance_evals_ - cost_["labels"]``.
    cost_ : dict
        Distance evaluations per phase: ``"seeding"``, ``"reduction"``, ``"estep"``,
        ``"labels"``, and after a refined run ``"refinement"`` (the refiner's own passes;
        its rounds' iterations count as ``"estep"``).
    seconds_ : dict
        Wall time per phase: ``"reduction"``, ``"seeding"``, ``"estep"``, ``"mstep"``,
        ``"labels"``, and the ``"total"`` of ``fit``; a fit on data in row chunks also has
        ``"scan"``, the first pass over them (``"reduction"`` is then the second), an
        SLK fit that builds its kNN graph ``"graph"``, and a refined fit ``"refinement"``
        (its rounds' E- and M-steps included, which also count in ``"estep"`` and
        ``"mstep"``).
    refinement_log_ : list of dict
        Only with a refiner: the kept run's refinement rounds, each with ``"round"``,
        ``"moved"`` (centres moved), ``"objective_before"``, ``"objective"`` (quantization
        error of the fit's data after the round's iterations) and ``"kept"``; the passes of
        :class:`SinglePointMoves` (``"pass"``, ``"rows_moved"``, ...). After refiners in turn
        each entry names its refiner (``"refiner"``).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string column names.

    See Also
    --------
    clusterkit.presets : ready-made configurations of the papers' algorithms.

    Notes
    -----
    The data are mean-centred (a copy) before fitting and the mean is added back to the
    centres, which keeps float32 distances accurate; sparse data are not centred (as in
    scikit-learn: centring would fill in their zeros). An M-step that declares
    :attr:`MStep.spherical` (:class:`SphericalMStep`) makes a spherical model instead: every
    row given to ``fit``, ``partial_fit``, ``predict``, ``transform`` and ``score``, and given
    initial centres, is scaled to unit Euclidean norm (a copy; a row of zero norm raises a
    ``ValueError``) and not centred; distances, ``inertia_`` and ``score`` are then those of
    the unit rows (``||x - mu||^2 = 2 - 2 cos(x, mu)``). Data in row chunks (a dask array)
    are refused with such a model. float32 input stays float32 throughout.
    BLAS is limited to one thread during ``fit``; parallelism comes from the OpenMP kernels,
    whose results do not depend on ``n_threads``. With a soft M-step the fitted model is an
    isotropic Gaussian mixture: :meth:`predict_proba` and :meth:`score_samples` give its exact
    posteriors and log-likelihoods (hard fits do not have these methods).

    scikit-learn's keywords that have another name here raise a ``TypeError`` that names
    clusterkit's: ``init`` is ``seed``, ``algorithm="elkan"`` is ``estep="elkan"`` (or
    ``"bounded"``, or :func:`presets.elkan <clusterkit.presets.elkan>`), ``n_jobs`` is
    ``n_threads``, the mini-batch settings are :class:`MiniBatch`'s; ``n_init="auto"`` is
    refused by ``fit`` with the integer to pass. A misspelt keyword gets the closest
    parameter's name.

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

    def __init__(self, n_clusters=8, *, seed="auto", reduce=None, estep="full",
                 mstep="hard", schedule="full", refine=None, n_init=1, max_iter=200, tol=1e-4,
                 random_state=None, n_threads=None, compute_labels=True, verbose=0,
                 callback=None, memory_limit=None):
        self.n_clusters = n_clusters
        self.seed = seed
        self.reduce = reduce
        self.estep = estep
        self.mstep = mstep
        self.schedule = schedule
        self.refine = refine
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.n_threads = n_threads
        self.compute_labels = compute_labels
        self.verbose = verbose
        self.callback = callback
        self.memory_limit = memory_limit

    # -- validation --------------------------------------------------------------------------

    def _strategies(self, X, x_mean, streaming=False):
        """The six strategies, resolved and checked against the data, the stream and each
        other (:func:`~clusterkit._estimator.composition.check_composition`); given initial
        centres become a seeder (moved into the frame centred on ``x_mean``; data in row
        chunks move them after their first pass)."""
        if self.seed is None or isinstance(self.seed, (str, Seeder)):
            seeder = resolve("seed", self.seed)
        else:
            centers = check_initial_centers(self.seed, self.n_clusters, X)
            if self._is_spherical():
                centers = unit_rows(centers, "seed")
            seeder = GivenCenters(centers).in_frame(x_mean)
        composition = Composition(seeder, *(resolve(name, getattr(self, name)) for name in
                                            ("reduce", "estep", "mstep", "schedule",
                                             "refine")))
        return check_composition(composition, X, self.n_clusters, streaming)

    def _chunked_data(self, X, sample_weight, fitting=True):
        """``X`` as :class:`~clusterkit._data.chunked.ChunkedData` if it is to be read in row
        chunks, else ``None`` (``fitting=False``: for an estimate, nothing set).

        A dask array always is (the composition check refuses it, before any work, for a
        composition that cannot read row chunks; one warning if its graph carries a large
        in-memory array, :func:`~clusterkit._estimator.lazy.check_graph_data`); a memmap is
        when the reducer is chunked and the model is not spherical, or when a fit's copy of
        it would exceed the fit's memory budget
        (:func:`~clusterkit._data.chunked.exceeds_budget`); otherwise it is read like any
        array, scaled to unit rows in memory if the model is spherical. Sets
        ``n_features_in_`` without reading the data.
        """
        if not (_chunked.is_dask_array(X) or (isinstance(X, np.memmap) and (
                (resolve("reduce", self.reduce).chunked and not self._is_spherical())
                or _chunked.exceeds_budget(X)))):
            return None
        if fitting and _chunked.is_dask_array(X):
            _lazy.check_graph_data(X)
        data = chunked_data(X, sample_weight, effective_n_threads(self.n_threads),
                            unit_rows=self._is_spherical())
        if fitting:
            validate_data(self, X, skip_check_array=True)  # n_features_in_, no feature names
        return data

    def _driver(self, composition, n_features):
        """A driver for the composition, with this estimator's settings."""
        return Driver(composition, n_clusters=self.n_clusters, n_features=n_features,
                      random_state=check_random_state(self.random_state),
                      n_threads=effective_n_threads(self.n_threads), max_iter=self.max_iter,
                      tol=self.tol, verbose=check_verbose(self.verbose),
                      callback=self.callback)

    # -- fitting -----------------------------------------------------------------------------

    def fit(self, X, y=None, sample_weight=None):
        """Cluster ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix}, dask array or numpy.memmap of shape \
(n_samples, n_features)
            Training data; float32 is kept, everything else becomes float64. A scipy.sparse
            matrix (converted to CSR) is taken by the exact k-means compositions
            (:func:`presets.lloyd <clusterkit.presets.lloyd>`, :func:`presets.elkan
            <clusterkit.presets.elkan>`, :func:`presets.minibatch
            <clusterkit.presets.minibatch>`, :func:`presets.spherical_kmeans
            <clusterkit.presets.spherical_kmeans>`: every strategy declares
            ``accepts_sparse``) and is not centred; the centres are dense. A row-chunked
            dask array, or a memmap when the reducer is chunked or its copy would exceed
            ``memory_limit`` (or the default budget), is never loaded as a whole: either the iterations run on all the rows
            where they are (a map-reduce over the chunks per full batch, a mini-batch read
            from them; the compositions whose strategies declare it, as ``presets.lloyd``,
            ``elkan``, ``gmm``, ``spherical_kmeans``, ``minibatch``), or a chunked reducer
            (:class:`LWCS`) builds its coreset in passes over the chunks and the fit runs on
            the coreset; after a dask fit ``labels_`` and ``inertia_`` are lazy dask arrays
            (see the Dask page of the documentation).
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
            strategy's parameters do not fit the data or its results have the wrong shape,
            or the strategies do not fit together (an E-step that cannot compute the
            M-step's objective, an M-step without the schedule's batch rule); if ``X`` is a
            dask array and the composition can neither run chunk by chunk nor reduce the
            chunks (the message says which can).
        FitMemoryError
            Before any large allocation, if the fit's memory estimate
            (:meth:`estimate_memory`) exceeds its budget (``memory_limit``, or half the
            memory available); the message says what would fit. It is also a
            ``ValueError``.
        TypeError
            If ``X`` is sparse and a strategy of the composition does not take sparse data
            (the message names the compositions that do), or ``memory_limit`` is not an
            integer.
        ImportError
            If ``X`` is a dask array and dask is not installed (``pip install
            'clusterkit[dask]'``), or ``verbose="bar"`` and tqdm is not (``pip install
            'clusterkit[progress]'``).
        """
        self.__dict__.pop("_stream", None)  # a fit ends any partial_fit stream
        check_memory_limit(self)
        with memory.fit_budget(self.memory_limit):
            chunked = self._chunked_data(X, sample_weight)
            if chunked is None:
                copies = copies_input(X)
                X = self._model_rows(check_data(self, X))
                check_params(self, X.shape[0])
                sample_weight = check_sample_weight(sample_weight, X.shape[0], X.dtype)
                box = check_representable(X, sample_weight=sample_weight)
                x_mean = self._frame_mean(X)
            else:
                # Data in row chunks: the composition is checked before the first pass over
                # them, which validates them and gives their mean and bounding box.
                X, sample_weight, x_mean, box, copies = chunked, None, None, None, False
                check_params(self, X.shape[0])
            composition = self._strategies(X, x_mean)
            n_init = self.n_init
            if composition.seed.given and n_init > 1:
                warn(f"seed gives the initial centres: running once instead of "
                     f"n_init={n_init} times.", RuntimeWarning)
                n_init = 1
            estimate = self._memory_plan(composition, X, copies, n_init)
            driver = self._driver(composition, X.shape[1])
            driver.memory_estimate = estimate
            # (what the strategies size by memory while they run is what the rest leaves)
            with memory.reserve(estimate.reserved), single_threaded_blas():
                result = driver.fit(X, sample_weight, x_mean, n_init, self.compute_labels,
                                    box)
        if self.compute_labels and not _chunked.is_dask_array(result.labels):
            n_distinct = np.count_nonzero(np.bincount(result.labels,
                                                      minlength=self.n_clusters))
            if n_distinct < self.n_clusters:
                warn(f"Number of distinct clusters ({n_distinct}) found smaller "
                     f"than n_clusters ({self.n_clusters}). Possibly due to "
                     "duplicate points in X.", ConvergenceWarning)
        self._set_fitted(result, driver)
        self.converged_ = result.end in ("converged", "budget")
        self._cluster_weight = result.cluster_weight
        return self

    def _set_fitted(self, result, driver):
        """The fitted attributes from a driver's result (a fit, or a stream's batch)."""
        state = driver.state
        for name in self.__dict__.pop("_strategy_attributes", ()):
            self.__dict__.pop(name, None)
        self.__dict__.update(result.attributes)
        self._strategy_attributes = tuple(result.attributes)
        self.cluster_centers_ = result.centers + driver.x_mean
        self._x_mean = driver.x_mean
        if result.labels is not None:
            self.labels_, self.inertia_ = result.labels, result.inertia
        self.cost_ = dict(state.meter.cost)
        self.n_distance_evals_ = state.meter.n_distance_evals
        self.history_ = result.history
        self.n_iter_ = result.n_iter
        self.n_steps_ = len(result.history)
        self.objective_ = result.history[-1]["objective"]
        self.seconds_ = dict(state.meter.seconds_by_phase, total=state.meter.seconds)
        if result.sigma2 is not None:
            self.sigma2_ = result.sigma2
        elif hasattr(self, "sigma2_"):
            del self.sigma2_

    # -- using a fitted model ----------------------------------------------------------------

    # (defined here, not in a mixin: scikit-learn's set_output wraps the class's own)
    @_lazy.per_row_chunk(None, per_cluster=True)
    def transform(self, X):
        """Euclidean distances of each sample to every centre.

        Parameters
        ----------
        X : {array-like, sparse matrix} or dask array of shape (n_samples, n_features)
            As for :meth:`predict`.

        Returns
        -------
        distances : ndarray or dask array of shape (n_samples, n_clusters)
        """
        X = self._check_test_data(X)
        distances = np.empty((X.shape[0], self.cluster_centers_.shape[0]), dtype=X.dtype)
        for rows, dist2 in self._dist2_blocks(X):
            np.sqrt(dist2, out=distances[rows])
        return distances

    def _is_spherical(self):
        """Whether the model lives on the unit sphere: its M-step declares
        :attr:`MStep.spherical` (spherical k-means)."""
        mstep = strategy_class("mstep", self.mstep)
        return mstep is not None and mstep.spherical

    def _model_rows(self, X):
        """Validated rows as the model sees them: scaled to unit norm for a spherical model
        (:func:`~clusterkit._estimator.validation.unit_rows`, ``ValueError`` for a row of zero
        norm),
        as given otherwise. Every entry point that takes rows passes them through here."""
        return unit_rows(X) if self._is_spherical() else X

    def _frame_mean(self, X):
        """The centring of a fit: the data's mean (:func:`~clusterkit._data.nearest.data_mean`),
        or the origin for a spherical model, whose unit-norm constraint is about the origin
        (and whose unit rows need no centring for accurate distances)."""
        if self._is_spherical():
            return np.zeros(X.shape[1], dtype=X.dtype)
        return data_mean(X)

    def _is_mixture(self):
        """Whether the model is a Gaussian mixture: its M-step maximises the mixture's free
        energy (:data:`~clusterkit.FREE_ENERGY`)."""
        mstep = strategy_class("mstep", self.mstep)
        return mstep is not None and mstep.objective == FREE_ENERGY

    def _dist2_blocks(self, X):
        """Row blocks ``(rows, dist2)`` of the squared distances of validated ``X`` to the
        centres, computed like :meth:`predict`'s (see
        :func:`~clusterkit._data.nearest.dist2_blocks`)."""
        x_mean, centers = self._centred_frame(X.dtype)
        with single_threaded_blas():
            yield from dist2_blocks(X, x_mean, centers, effective_n_threads(self.n_threads))

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
        X : {array-like, sparse matrix} or dask array of shape (n_samples, n_features)
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
            return _lazy.score_model(self, X, sample_weight)
        if self._is_mixture():
            log_likelihood = self.score_samples(X)
            sample_weight = check_sample_weight(sample_weight, log_likelihood.shape[0],
                                                np.float64)
            return weighted_sum(log_likelihood, sample_weight) / float(sample_weight.sum())
        X, _, dist2 = self._labels_dist2(X)
        sample_weight = check_sample_weight(sample_weight, X.shape[0], X.dtype)
        return -weighted_sum(dist2, sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        tags.input_tags.sparse = accepts_sparse(self)
        return tags

