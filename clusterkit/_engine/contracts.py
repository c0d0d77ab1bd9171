"""The strategy contracts of :class:`~clusterkit.Clusterer`.

A fit is assembled from six small strategy objects, each with one verb:

* :class:`DataReducer` -- ``reduce(X, sample_weight, state) -> (X, sample_weight)``: coreset;
* :class:`Seeder` -- ``seed(X, sample_weight, n_clusters, state) -> centers``: initial centres;
* :class:`EStep` -- ``assign(X, sample_weight, centers, state) -> Assignment``;
* :class:`MStep` -- ``update(X, sample_weight, assignment, centers, state) -> centers``;
* :class:`Schedule` -- ``batches(n_samples, state)``: which rows each step works on, and
  ``should_stop(state, tol)``: when to stop;
* :class:`Refiner` -- ``refine(X, sample_weight, run, iterate, state) -> run``: after a run
  ended on its own, leave its local minimum by restarting the iterations from changed
  centres (``iterate``), keeping only what is better.

What one strategy gives another travels through declarations and return values the driver
routes (a seeder's nearest-seed labels, an M-step's wish for the E-step's per-cluster sums,
the E-step's float32 rows for the final labelling, its state a refiner's round continues);
the rest of a run is one strategy's own (see :mod:`clusterkit._engine.strategy`).

What a strategy *is* is declared, never guessed from numbers, and one composition check
(:mod:`clusterkit._estimator.composition`) holds the declarations of the six strategies
against each other when ``fit`` starts:

* an M-step declares the :class:`Objective` of the fit (:attr:`MStep.objective`), whether it
  needs responsibilities (:attr:`MStep.needs_resp`) or the E-step's per-cluster sums
  (:meth:`MStep.reads_batch_sums`), the batch rules it implements
  (:attr:`MStep.update_rules`), those under which its centres are the means of the current
  labels (:attr:`MStep.fixed_point_rules`) and whether its model lives on the unit sphere
  (:attr:`MStep.spherical`: the estimator then gives every strategy rows of unit norm, not
  centred);
* an E-step may declare the objectives it can compute (:attr:`EStep.objectives`) and whether
  its labels are the nearest centres (:attr:`EStep.exact`);
* a schedule declares its batch rule (:attr:`Schedule.center_update`), whether every batch is
  all rows (:attr:`Schedule.full_batch`) or a prefix of an order given row by row
  (:attr:`Schedule.nested`), whether ``partial_fit`` may stream with it
  (:attr:`Schedule.streams`) and how many rows its seeding is worth
  (:meth:`Schedule.seeding_rows`).

Every strategy states the large buffers it allocates in a fit through one method,
``buffer_bytes(n_samples, n_features, n_clusters, dtype, composition)`` (defined once, on
the base all six kinds share, :class:`~clusterkit._engine.strategy._Strategy`; 0 by default):
the fit's memory estimate (:mod:`clusterkit._engine.footprint`) adds them up by phase, and
the fit is refused before any work when they exceed its budget (``memory_limit``). A
strategy that sizes its state by memory (the bounded E-steps) reads the budget left
(:func:`clusterkit._data.memory.budget`) and states what it would then allocate.

Rules between particular strategies go in their ``_validate(X, n_clusters, composition)``
hooks, which see the six resolved strategies. A schedule and its M-step's batch rule talk
through one documented channel, ``state.run.channel`` (:class:`~clusterkit.Channel`): the step
size of an implicit rule one way, the running per-cluster statistics the other.
"""
from abc import ABC, abstractmethod
from collections import namedtuple

from .assignment import QUANTIZATION_ERROR
from .far_rows import batch_far_rows
from .refining import Refiner
from .scheduling import Schedule
from .strategy import _RunStrategy, _Strategy

__all__ = ["SHARED_STATE_HOOKS", "Composition", "Seeder", "Seeding", "DataReducer", "EStep",
           "MStep", "Schedule", "Refiner"]


#: The six resolved strategies of a fit, as the ``_validate`` hooks see them.
Composition = namedtuple("Composition",
                         ["seed", "reduce", "estep", "mstep", "schedule", "refine"])


class Seeding(namedtuple("Seeding", ["centers", "labels"])):
    """What a seeding found (:meth:`Seeder.seeding`): the initial ``centers``, and ``labels``
    (int32, each sample's nearest centre) if found as a by-product, else ``None``; the driver
    keeps them in the run (``Run.seed_labels``) for the E-step."""

    __slots__ = ()


class Seeder(_Strategy, ABC):
    """Chooses the initial centres.

    Subclasses implement :meth:`seed`. Example: the first ``n_clusters`` rows::

        class FirstRows(Seeder):
            def seed(self, X, sample_weight, n_clusters, state):
                return X[:n_clusters].copy()

    A seeder that returns centres the user gave declares ``given = True`` (``n_init`` then
    runs once) and moves them into the fit's frame with :meth:`in_frame`. A seeder may size
    its work by ``state.config.seeding_rows`` (:meth:`Schedule.seeding_rows`).
    """

    #: Whether the centres are the user's, the same for every run (see the class notes).
    given = False
    #: Whether :meth:`seeding` also takes data in row chunks for ``X`` (a
    #: :class:`~clusterkit._data.chunked.ChunkedData` in the fit's frame, with
    #: ``sample_weight=None``) and reads only the rows it needs where they are. Other seeders
    #: seed data in row chunks on a uniform sample of their rows
    #: (:meth:`~clusterkit._engine.mapreduce.ChunkedSteps.seeding`).
    reads_chunks = False

    def in_frame(self, x_mean):
        """This seeder for data centred on ``x_mean`` (the fit subtracts it from dense rows):
        itself, unless its centres are given in the user's coordinates."""
        return self

    @abstractmethod
    def seed(self, X, sample_weight, n_clusters, state):
        """Return initial centres.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            Data (possibly a weighted coreset).
        sample_weight : ndarray of shape (n_samples,)
            Non-negative weights, same dtype as ``X``.
        n_clusters : int
            Number of centres to choose.
        state : FitState
            Reads ``random_state`` and ``n_threads``; add distance evaluations with
            ``state.meter.count("seeding", n)`` and report the centres chosen so far with
            ``state.meter.progress("seeding", done, n_clusters, "centres")``.

        Returns
        -------
        centers : ndarray of shape (n_clusters, n_features)
            C-contiguous, same dtype as ``X``.
        """

    def seeding(self, X, sample_weight, n_clusters, state):
        """The :class:`Seeding` the driver runs (parameters as :meth:`seed`): the default is
        ``Seeding(self.seed(...), None)``; a seeder that finds each sample's nearest centre as
        a by-product overrides it (its :meth:`seed` returns ``seeding(...).centers``)."""
        return Seeding(self.seed(X, sample_weight, n_clusters, state), None)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # a subclass redefining seed() alone has its own centres: the default seeding
        if "seed" in cls.__dict__ and "seeding" not in cls.__dict__:
            cls.seeding = Seeder.seeding


class DataReducer(_Strategy, ABC):
    """Replaces the data by a smaller weighted set that the rest of the fit works on.

    Attributes
    ----------
    chunked : bool
        Class attribute: ``True`` if the reducer can also reduce data held in row chunks (a
        dask array, or a NumPy memmap) with :meth:`reduce_chunked`. A dask array needs such a
        reducer; a memmap is read like an ordinary array by any other. ``False`` by default.
    reduces : bool
        Class attribute: whether :meth:`reduce` replaces the data (``True`` by default);
        :class:`~clusterkit.NoReduction` declares ``False``, so that compositions that need
        the samples themselves (a stream, a graph over them) can run with it.
    """

    chunked = False
    reduces = True

    @abstractmethod
    def reduce(self, X, sample_weight, state):
        """Return the (possibly reduced) data and its weights.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            The training data as given (the driver centres only what the reducer returns,
            so that a reduced fit never copies the full data).
        sample_weight : ndarray of shape (n_samples,)
        state : FitState
            Reads ``random_state``; add distance evaluations with
            ``state.meter.count("reduction", n)`` and report the rows done with
            ``state.meter.progress("reduction", done, total, "rows")``.

        Returns
        -------
        X_reduced : ndarray of shape (n_reduced, n_features)
        sample_weight_reduced : ndarray of shape (n_reduced,)
            Weights such that weighted sums over the reduced set estimate the sums over the
            input (user weights included). Returning ``X`` itself means "no reduction".
        """

    def reduce_chunked(self, data, state):
        """Return a reduced set, in memory, of data held in row chunks (``chunked`` reducers).

        Called instead of :meth:`reduce` when ``fit`` gets a dask array or a memmap and
        :attr:`chunked` is ``True``. The data are never loaded as a whole: ``data`` runs
        functions on one chunk of rows at a time (on the workers of a dask cluster, or block
        by block in this process for a memmap) and returns only their results, so only the
        reduced set (and a few numbers per chunk) ever reaches the process that fits.

        Parameters
        ----------
        data : ChunkedData
            The training data. Attributes: ``shape``, ``dtype`` (float32 or float64, the dtype
            of the fit), ``n_chunks``, ``chunk_rows`` (rows per chunk), ``chunk_starts``,
            ``weighted`` and ``n_threads`` (for kernels called inside block functions).
            Methods: ``scan()``, the validated first pass, already run by the driver, giving
            each chunk's weight ``W_c``, weighted mean ``mu_c`` and ``M2_c = sum w ||x -
            mu_c||^2`` (combined exactly: ``total_weight``, ``global_mean``,
            ``chunk_spread``, ``spread``); ``map_chunks(func, args, chunks)``, which returns
            ``[func(X_c, w_c, *args_c) ...]`` for the chosen chunks, ``X_c`` a C-contiguous
            block of ``dtype`` and ``w_c`` its float64 weights or ``None`` (``func`` must be
            a module-level function: it is pickled for the workers); and ``gather()``, all
            rows in memory.
        state : FitState
            As for :meth:`reduce`. A reducer whose draws must not depend on the number of
            workers draws from ``state.random_state`` in this process only, and seeds any
            randomness inside the chunks from it and the chunk's index.

        Returns
        -------
        X_reduced : ndarray of shape (n_reduced, n_features)
        sample_weight_reduced : ndarray of shape (n_reduced,)
            As for :meth:`reduce`; the driver validates them like user data.

        Raises
        ------
        NotImplementedError
            Unless the reducer is :attr:`chunked`.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot reduce chunked data.")

    def max_rows(self, n_samples, n_clusters):
        """The most rows :meth:`reduce` can return for ``n_samples`` input rows, for strategies
        that check their per-sample memory when ``fit`` starts (:class:`~clusterkit.ElkanEStep`'s
        bounds). The default, ``n_samples``, is right for any reducer."""
        return n_samples

    def expected_rows(self, n_samples, n_clusters):
        """The rows :meth:`reduce` returns for ``n_samples`` input rows, as the memory
        estimate (``Clusterer.estimate_memory``) counts them: at most :meth:`max_rows`. The
        default is :meth:`max_rows`; a reducer whose draws coincide says how many remain."""
        return self.max_rows(n_samples, n_clusters)


#: The hooks of :attr:`EStep.shares_state`, which an E-step implements all or none of.
SHARED_STATE_HOOKS = ("chunk_summary", "combine_summaries", "shared_state", "use_shared")


class EStep(_RunStrategy, ABC):
    """Assigns samples to clusters (hard) or computes responsibilities.

    Attributes
    ----------
    exact : bool
        Class attribute: ``True`` if every label is the sample's nearest centre (ties to the
        lower index), as in Lloyd's E-step. With an M-step whose centres are the means of the
        current labels (:attr:`MStep.fixed_point_rules`) and a full batch, a step in which no
        label changed then ends the fit (strict convergence, as scikit-learn's ``KMeans``):
        the M-step has just recomputed the same centres.
    objectives : tuple of Objective or None
        Class attribute: the objectives :meth:`assign` can compute; the driver refuses an
        M-step whose :attr:`MStep.objective` is not among them. ``None`` (the default)
        declares nothing and is not checked: an E-step written for one M-step computes that
        M-step's objective. The built-in E-steps declare theirs.
    chunks : bool
        Class attribute: ``True`` if :meth:`assign` may run on each row chunk of data held in
        chunks with a state of its own per chunk (:meth:`init_state` called on the chunk,
        kept with it between steps), as a fit on all the rows of a dask array or a memmap
        runs it (:mod:`clusterkit._engine.mapreduce`). ``False`` by default.
    per_sample_state : bool
        Class attribute: whether :meth:`init_state` keeps something per sample that later
        calls read (bounds, winners); ``True`` by default. An E-step without it (its state
        only its output buffers) can also assign mini-batches read from row chunks.
    row_stream : bool
        Class attribute: whether :meth:`assign` draws from the run's row stream
        (:meth:`FitState.row_integers`, the same numbers for a row in memory and in any row
        chunk), not from ``state.random_state``, which a chunk's task does not have; its key
        is then drawn here before the first step on chunks. ``False`` by default.
    constrained : bool
        Class attribute: whether its labels obey a constraint besides the distances (the
        cluster sizes of :class:`~clusterkit.BalancedEStep`), so that moving a row to a
        cluster that lowers the error may break it; a refiner that moves rows itself
        (:class:`~clusterkit.SinglePointMoves`) refuses such an E-step. ``False`` by default.
    shares_state : bool
        Class attribute: whether the chunks' E-steps share a state that all chunks' rows
        make (:class:`~clusterkit.PartialEStep`'s estimated neighbourhoods). One capability
        of four hooks that only work together: an E-step that declares it implements all of
        :meth:`chunk_summary`, :meth:`combine_summaries`, :meth:`shared_state` and
        :meth:`use_shared`, and one that does not implements none; the composition check
        refuses anything else (:data:`SHARED_STATE_HOOKS`). ``False`` by default.
    predicts_batches : bool
        Whether the E-step labels new rows after the fit itself, a batch as a whole
        (:meth:`predict_labels`: a row's label may depend on the other rows of the batch,
        as under bounds on the clusters' sizes). ``Clusterer.predict`` then gives those
        labels, and refuses input it cannot hand over whole: a dask array, sparse rows.
        ``False`` by default: ``predict`` gives each row's nearest centre, row by row (a
        class attribute, or a property of the E-step's parameters).

    Notes
    -----
    The E-step computes the objective the M-step declares (``state.config.objective``),
    responsibilities if it needs them (``state.config.needs_resp``) and per-cluster sums if it
    reads them (``state.config.fuse_sums``). A soft E-step's first call sets the run's variance
    (``state.run.sigma2`` is ``None`` before: :meth:`FitState.init_sigma2`, vc-GMM eq. 12).
    ``state.run.rows``, ``state.run.labels`` and ``state.run.center_shift`` let per-sample
    state (bounds, winners) follow mini-batches and moving centres.
    """

    exact = False
    objectives = None
    chunks = False
    per_sample_state = True
    row_stream = False
    constrained = False
    shares_state = False
    predicts_batches = False

    def winners_per_sample(self, n_clusters, composition):
        """``C'``, the clusters per sample its assignments carry (``winners`` with their
        responsibilities) in a fit of ``composition``, or ``None`` (the default) if they
        carry none. A soft M-step's scratch follows from it (its
        :meth:`~clusterkit._engine.strategy._Strategy.buffer_bytes`)."""
        return None

    @abstractmethod
    def assign(self, X, sample_weight, centers, state):
        """Return an :class:`Assignment` of the batch ``X`` to ``centers``.

        Parameters
        ----------
        X : ndarray of shape (n_batch, n_features)
            The rows ``state.run.rows`` of the fit data.
        sample_weight : ndarray of shape (n_batch,)
        centers : ndarray of shape (n_clusters, n_features)
        state : FitState
            Add distance evaluations with ``state.meter.count("estep", n)``.

        Returns
        -------
        assignment : Assignment
        """

    def chunk_summary(self, estep_state):
        """On row chunks, in a chunk's task after :meth:`assign`: what its rows add to a state
        all chunks share (eq. 8's sums of :class:`~clusterkit.PartialEStep`; see
        :attr:`shares_state`); ``None`` here."""

    def combine_summaries(self, summaries):
        """The summary of neighbouring chunks, from theirs in chunk order (two, not ``None``;
        added where the chunks ran, in a tree fixed by the chunking)."""

    def shared_state(self, summary):
        """The state all chunks share, from all chunks' summary (made where it was added)."""

    def use_shared(self, estep_state, shared):
        """In a chunk's task before :meth:`assign`: adopt the shared state
        (:meth:`shared_state` of the last step, ``None`` before). Does nothing here."""

    def carry_state(self, estep_state, state):
        """The per-run state a refiner's round (``iterate(centers, carry=True)``) keeps from
        the last run, or ``None`` (the default: :meth:`init_state` afresh). The new run then
        has the old run's labels and, as ``state.run.center_shift``, each centre's move since the
        old run's last E-step (an upper bound); a row counts as changed at its first visit."""
        return None

    def final_labels(self, state):
        """Labels of the fitted rows when they are not the nearest final centre.

        Called once after the kept run when ``compute_labels=True``. The default returns
        ``None``: ``labels_`` is then each training sample's nearest final centre (one exact
        pass). An E-step whose model labels differently (e.g. by the argmax of its soft
        assignments) returns those labels for the rows of the fit data.

        Parameters
        ----------
        state : FitState
            The kept run's state (``state.run.estep_state`` as the last E-step left it).

        Returns
        -------
        labels : ndarray of shape (n_samples,), dtype=int32, or None
        """
        return None

    def predict_labels(self, X, centers, fit_weight, n_threads):
        """Labels of a batch of new rows, for an E-step that declares
        :attr:`predicts_batches`; ``None`` (the default): each row's nearest centre.

        Called by ``Clusterer.predict`` (and by ``fit_predict`` when ``compute_labels`` is
        ``False``) on a fitted model, with the whole batch. The E-step keeps nothing from
        its fit: what the labels may depend on is passed in.

        Parameters
        ----------
        X : ndarray of shape (n_batch, n_features)
            The batch, validated, dense and C-contiguous, in the fit's frame (centred on the
            fit's mean, as the fit's rows were; distances do not change).
        centers : ndarray of shape (n_clusters, n_features)
            The fitted centres in the same frame and dtype.
        fit_weight : float
            The total weight of the rows the model was fitted on (their number, without
            ``sample_weight``): what bounds in rows or weight are relative to.
        n_threads : int

        Returns
        -------
        labels : ndarray of shape (n_batch,), dtype=int32, or None
        """
        return None

    def labelling_rows(self, X, state):
        """What the final nearest-centre pass over the fitted rows ``X`` may reuse of this
        E-step's per-run state: a float32 copy of ``X`` for its products (the gemm kernels'
        mixed precision), or ``None`` (the default: the pass makes what it needs).

        Called once after the kept run, when :meth:`final_labels` returned ``None``; it lends
        and changes nothing.

        Returns
        -------
        X32 : ndarray of shape (n_samples, n_features), dtype=float32, or None
            The rows of ``X`` in float32, in the same order.
        """
        return None


class MStep(_RunStrategy, ABC):
    """Re-estimates the centres (and any other model parameter) from an assignment.

    Attributes
    ----------
    needs_resp : bool
        Class attribute: ``True`` if :meth:`update` needs responsibilities
        (``assignment.resp``), ``False`` for hard assignments.
    objective : Objective
        Class attribute: what the fit optimises; the E-steps report it in
        ``assignment.objective``. :data:`QUANTIZATION_ERROR` (minimised) by default.
    update_rules : tuple of str
        Class attribute: the batch rules (:attr:`Schedule.center_update`) :meth:`update`
        implements; the driver refuses a schedule whose rule is not among them. ``("replace",)``
        by default: the centres are re-estimated from each batch alone.
    fixed_point_rules : tuple of str
        Class attribute: the rules under which the new centres are the (weighted) means of the
        samples' current labels, so that with an exact E-step a step over all rows that changed
        no label has reproduced the same centres: a fixed point, where the fit stops (and the
        last labels are the final ones). Empty by default.
    spherical : bool
        Class attribute: ``True`` if the model lives on the unit sphere (spherical k-means,
        :class:`~clusterkit.SphericalMStep`). The estimator then scales every row it is given
        (``fit``, ``partial_fit``, ``predict``, ``transform``, ``score``) and given initial
        centres to unit Euclidean norm, refusing rows of zero norm, and does not centre them:
        the strategies see unit rows in the frame of the origin, and the M-step must return
        unit-norm centres. ``False`` by default.
    chunk_rules : tuple of str
        Class attribute: the batch rules under which the M-step can update from sufficient
        statistics summed over row chunks (:meth:`statistics`, :meth:`update_statistics`),
        as a fit on all the rows of data in chunks needs. Empty by default.

    A new M-step implements :meth:`statistics` and :meth:`update_statistics` (then
    :meth:`update` follows, and with ``chunk_rules = ("replace",)`` it runs on row chunks
    too), or :meth:`update` alone.
    """

    needs_resp = False
    objective = QUANTIZATION_ERROR
    update_rules = ("replace",)
    fixed_point_rules = ()
    spherical = False
    chunk_rules = ()

    def reads_batch_sums(self, center_update):
        """Whether :meth:`update` under the batch rule ``center_update`` reads the per-cluster
        sums an E-step can compute in its pass (``Assignment.centers_sum``); the driver asks
        once per fit and tells the E-step (``state.config.fuse_sums``). ``False`` by default."""
        return False

    def update(self, X, sample_weight, assignment, centers, state):
        """Return new centres.

        By default the batch's :meth:`statistics` turned into centres by
        :meth:`update_statistics` (empty clusters move onto the batch's farthest rows,
        :func:`~clusterkit._engine.far_rows.batch_far_rows`): the one update of an M-step
        whose centres are a function of sums over the rows, which steps in memory, on
        mini-batches, on row chunks and in refinement alike. An M-step that keeps running
        state between batches (a mini-batch rule) overrides it.

        Parameters
        ----------
        X : ndarray of shape (n_batch, n_features)
            The rows ``state.run.rows`` of the fit data.
        sample_weight : ndarray of shape (n_batch,)
        assignment : Assignment
        centers : ndarray of shape (n_clusters, n_features)
            The centres the assignment was computed with (read-only).
        state : FitState
            A Gaussian-mixture M-step owns ``state.run.sigma2`` and writes it here.

        Returns
        -------
        centers_new : ndarray of shape (n_clusters, n_features)
            A new array (not ``centers``). Never NaN: clusters without weight are relocated
            (see the M-step's Notes).
        """
        return self.update_statistics(
            self.statistics(X, sample_weight, assignment, centers, state), centers,
            batch_far_rows(X, sample_weight, assignment, state.config.n_threads), state)

    def statistics(self, X, sample_weight, assignment, centers, state):
        """The sufficient statistics of a batch or a row chunk, parameters as :meth:`update`:
        a dict of arrays, each a sum over the rows, so that the statistics of all the data are
        the chunks' added up (in float64, :attr:`chunk_rules`)."""
        raise NotImplementedError(f"{type(self).__name__} defines neither update nor "
                                  "statistics.")

    def update_statistics(self, statistics, centers, far_rows, state):
        """New centres from the :meth:`statistics` of a batch or of all the data (the
        chunks' added up in a tree fixed by the chunking); ``far_rows(k)`` gives the ``k``
        rows an empty cluster may move to (:class:`~clusterkit._engine.far_rows.FarRows`:
        of the batch, or one more pass over the chunks)."""
        raise NotImplementedError(f"{type(self).__name__} defines neither update nor "
                                  "update_statistics.")
