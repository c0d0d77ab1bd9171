"""One run of a fit as an object: what its iterations leave behind, from seeding to the end.

A fit makes a :class:`Run` per ``n_init`` run and per refinement round and keeps the best;
nothing of a run lives anywhere else, so keeping a run is keeping the object (see
:class:`~clusterkit.FitState` for the fit's configuration and its meter).
"""
import numpy as np

__all__ = ["Channel", "Run"]


class Run:
    """The evolving state of one run: the model, the per-sample records and the strategies'
    own states.

    Created by the driver when a run (or one of a refiner's rounds) starts; strategies reach
    it through the :class:`~clusterkit.FitState` they are given (``state.run``), a refiner
    receives one and returns one.

    Attributes
    ----------
    centers : ndarray of shape (n_clusters, n_features) or None
        The centres the run ended at (in the fit's centred frame), ``None`` while it runs.
    end : str or None
        Why its iterations ended: ``"converged"``, ``"budget"``, ``"max_iter"`` or
        ``"callback"`` (see :meth:`Driver.run <clusterkit._engine.driver.Driver.run>`).
    round : int
        0 for a run from seeding, ``r`` for the run of a refiner's ``r``-th ``iterate`` call.
    sigma2 : float or None
        The shared variance of a Gaussian mixture, a parameter of the model as the centres
        are: set by the first soft E-step (vc-GMM eq. 12, :meth:`init_sigma2`), re-estimated
        by the soft M-step; ``None`` otherwise.
    seed_labels : ndarray of shape (n_samples,) or None
        Each sample's nearest seed, if the seeding found it (:attr:`Seeding.labels
        <clusterkit.Seeding.labels>`); E-steps may start from it.
    estep_state, mstep_state, schedule_state : object or None
        What the E-step's, the M-step's and the schedule's ``init_state`` returned: each its
        own, read by no other strategy.
    channel : Channel
        What a schedule and its M-step's batch rule tell each other.
    history : list of dict
        One entry per step (``Clusterer.history_``).
    refinement_log : list of dict
        The refiner's rounds of this run (``Clusterer.refinement_log_``).
    n_samples : int
        Rows of the (reduced) data the run works on (of the current batch in a stream).
    rows : slice or ndarray of int
        The rows of the current batch.
    inner_step, n_inner_steps : int
        Which inner step of the current step runs and how many it has.
    step_info : dict
        Entries the strategies add to the current step's history record.
    labels : ndarray of shape (n_samples,), dtype=int32, or None
        Every sample's label from its last visit, ``-1`` before the first; updated after each
        E-step. ``None`` in a run on data in row chunks, whose labels stay with their chunks
        (:mod:`clusterkit._engine.mapreduce`).
    n_changed : int
        Samples of the last batch whose label changed (a first visit counts).
    n_relocated : int
        Clusters the last M-step relocated onto a sample (empty or starved clusters, see
        :func:`~clusterkit.mstep.batch_rules.relocate_empty`).
    center_shift : ndarray of shape (n_clusters,), dtype=float64
        How far each centre moved in the last M-step.
    center_norm : float
        Frobenius norm of the centres before the last M-step, the scale of ``center_shift``.
    n_samples_seen : int
        Rows the run's steps visited so far.
    cluster_weight : ndarray of shape (n_clusters,), dtype=float64, or None
        In a run on data in row chunks, the weight of the rows labelled by each cluster at
        the last step (their labels stay with the chunks); ``None`` otherwise.
    stream_key : int or None
        The key of the run's row stream (:meth:`FitState.row_integers
        <clusterkit.FitState.row_integers>`), drawn from the fit's random stream when first
        needed; ``None`` before.
    first_row : int
        The number, in all the data, of the first of the run's rows: 0, or a row chunk's
        first row in the state a chunk's task sees (the row stream's rows are numbered from
        it).
    """

    def __init__(self, n_clusters, n_samples, round=0, per_sample=True):
        self.centers = self.end = None
        self.round = round
        self.sigma2 = None
        self.seed_labels = None
        self.estep_state = self.mstep_state = self.schedule_state = None
        self.channel = Channel()
        self.history = []
        self.stream_key = None
        self.first_row = 0
        self.refinement_log = []
        self.n_samples_seen = 0
        self.cluster_weight = None
        self.center_shift = np.zeros(n_clusters)
        self.center_norm = 0.0
        self._unvisited = None
        self._rows_moved = False  # (replace_partition: the last entry is no step)
        self.start_rows(n_samples, per_sample)

    def continue_from(self, source, centers, estep_state):
        """Start from ``centers`` with ``source``'s E-step state ``estep_state`` (see
        :meth:`EStep.carry_state <clusterkit._engine.contracts.EStep.carry_state>`), which
        ``source`` then no longer holds: ``source``'s labels (a copy) and, as the centres'
        moves, their moves since ``source``'s last E-step, bounded above by its last move
        plus the distance from its final centres to ``centers``. A row counts as changed at
        its first visit, as in a fresh run, so that stopping rules decide alike. On data in
        row chunks (``source`` without labels) only the moves: the chunks continue their
        own labels and states."""
        shift = centers.astype(np.float64) - source.centers
        self.center_shift = source.center_shift + np.sqrt(np.einsum("ij,ij->i", shift, shift))
        if source.labels is None:  # (data in row chunks: the chunks hold labels and states)
            return
        self.labels, self.estep_state = source.labels.copy(), estep_state
        source.estep_state = None
        self.mark_unvisited()

    def mark_unvisited(self):
        """Count every row as changed at its next visit (:meth:`record_labels`), as in a
        fresh run: a run that continues another's labels."""
        self._unvisited = np.ones(self.labels.shape[0], dtype=bool)

    def start_rows(self, n_samples, per_sample=True):
        """Per-sample records for ``n_samples`` new rows (every label ``-1``; none without
        ``per_sample``): when the run starts, and for each batch of a ``partial_fit`` stream,
        whose rows are new samples."""
        self.n_samples = n_samples
        self.rows = slice(0, n_samples)
        self.labels = np.full(n_samples, -1, dtype=np.int32) if per_sample else None
        self.n_changed = n_samples
        self.n_relocated = 0
        self.inner_step, self.n_inner_steps = 0, 1
        self.step_info = {}

    def record_step(self, labels, centers, centers_new, n_changed=None, n_rows=None):
        """After a step on ``self.rows``: count and store the changed labels, measure how far
        every centre moved.

        Parameters
        ----------
        labels : ndarray of shape (n_batch,), dtype=int32, or None
            The step's labels, in batch order; ``None`` for a step on data in row chunks,
            which counted the ``n_changed`` labels of its ``n_rows`` rows where they are.
        centers, centers_new : ndarray of shape (n_clusters, n_features)
            The centres before and after the M-step.
        """
        if labels is None:
            self.n_changed = n_changed
            self.n_samples_seen += n_rows
        else:
            self.record_labels(labels)
        # only the centres that moved (a mini-batch step moves those its batch reached)
        moved = np.flatnonzero(np.any(centers_new != centers, axis=1))
        shift = centers_new[moved].astype(np.float64) - centers[moved]
        # a new array: a step handed to other tasks (a cluster's) keeps the shift it was given
        self.center_shift = np.zeros_like(self.center_shift)
        self.center_shift[moved] = np.sqrt(np.einsum("ij,ij->i", shift, shift))
        self._centers_before, self._center_norm = centers, None

    def record_labels(self, labels):
        """Count the labels of ``self.rows`` that ``labels`` (in batch order) change
        (:attr:`n_changed`; every row not visited since :meth:`mark_unvisited` counts) and
        store them: the one count of changed labels, of rows in memory or of one row chunk's
        step where the chunk is."""
        changed = self.labels[self.rows] != labels
        if self._unvisited is not None:  # a continued run (see continue_from)
            changed |= self._unvisited[self.rows]
            self._unvisited[self.rows] = False
        self.n_changed = int(np.count_nonzero(changed))
        self.labels[self.rows] = labels
        self.n_samples_seen += labels.shape[0]

    def replace_partition(self, centers, labels, objective, info):
        """End the run at another partition, one that a refiner reached by moving rows
        itself rather than through its ``iterate`` calls (:class:`~clusterkit.SinglePointMoves`).

        Parameters
        ----------
        centers : ndarray of shape (n_clusters, n_features)
            The weighted means of the new clusters, in the run's dtype.
        labels : ndarray of shape (n_samples,), dtype=int32
            The new partition, in the run's order of the rows.
        objective : float
            The fit's objective at ``centers`` with ``labels``.
        info : dict
            The rest of the history entry: at least ``"n_changed"`` (rows moved),
            ``"batch_size"``, ``"weight"``, ``"distance_evals"`` and ``"seconds"``, and
            what the refiner adds.

        Notes
        -----
        The history gets one entry more (``info`` with the ``"iteration"``, ``"objective"``,
        ``"qe"``, ``"max_center_shift"`` and ``"passes"`` of the run), so that
        :attr:`objective_value` is the new objective. The E-step's state described the old
        centres and labels and is dropped (a round that continues this run starts it
        afresh); the run no longer ends at a fixed point of its steps
        (:meth:`at_fixed_point`), so the fit labels its rows by the nearest final centre.
        """
        shift = centers.astype(np.float64) - self.centers
        self.center_shift = np.sqrt(np.einsum("ij,ij->i", shift, shift))
        self.centers = centers
        self.labels = np.array(labels, dtype=np.int32)
        self.estep_state = None
        self.n_changed, self.n_relocated = int(info["n_changed"]), 0
        self._rows_moved = True
        self.history.append(dict(info, iteration=len(self.history) + 1, objective=objective,
                                 qe=objective,
                                 max_center_shift=float(self.center_shift.max()),
                                 passes=self.n_passes))

    @property
    def center_norm(self):
        """Frobenius norm of the centres before the last M-step; computed when first read."""
        if self._center_norm is None:
            self._center_norm = float(np.sqrt(np.einsum(
                "ij,ij->", self._centers_before, self._centers_before, dtype=np.float64)))
        return self._center_norm

    @center_norm.setter
    def center_norm(self, value):
        self._centers_before, self._center_norm = None, float(value)

    @property
    def objective_value(self):
        """The objective of the run's last step (``history[-1]["objective"]``)."""
        return self.history[-1]["objective"]

    @property
    def n_passes(self):
        """Passes over the data so far: rows visited divided by ``n_samples``."""
        return self.n_samples_seen / max(self.n_samples, 1)

    def at_fixed_point(self, strict_convergence):
        """Whether the last step was over all rows, exact and hard (``strict_convergence``)
        and either changed no label and relocated no cluster (the M-step then recomputed the
        same centres) or moved no centre at all (the next step would find the same labels, as
        scikit-learn's ``KMeans`` stops on a zero centre shift): ``labels`` are every row's
        nearest final centre. (A relocated centre moved after the E-step: rows near its old or
        new position, zero-weight rows included, may now have another nearest centre.) A run
        whose partition a refiner replaced (:meth:`replace_partition`) is not at one."""
        return (strict_convergence and bool(self.history) and not self._rows_moved
                and ((self.n_changed == 0 and self.n_relocated == 0)
                     or not self.center_shift.any())
                and self.history[-1]["batch_size"] == self.n_samples)

    # A refiner written for the contract before runs were objects treats its run as the
    # centres: say what changed rather than fail somewhere inside NumPy.
    _NOT_CENTRES = ("A Refiner receives and returns a Run, not centres: use run.centers for "
                    "the centres and return the run (see Refiner.refine).")

    def _not_centres(self, *args, **kwargs):
        raise TypeError(self._NOT_CENTRES)

    __array__ = __getitem__ = _not_centres
    __add__ = __radd__ = __sub__ = __rsub__ = _not_centres
    __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _not_centres

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(f"'Run' object has no attribute {name!r}. {self._NOT_CENTRES}")


class Channel:
    """What a schedule and its M-step's batch rule tell each other during a run.

    The one documented place where a :class:`~clusterkit.Schedule` and an
    :class:`~clusterkit.MStep` exchange values (every other piece of per-run state belongs to
    one strategy). ``None`` until written.

    Attributes
    ----------
    step_size : float or None
        Written by a schedule whose rule takes a step (``"backward_euler"``: the step size
        gamma of the current step, ``inf`` for Lloyd's limit), read by the M-step.
    averaging : float or None
        Written with it: the weight of the previous iterate in the forward-looking average.
    cluster_weight, cluster_sse : ndarray of shape (n_clusters,), dtype=float64, or None
        Written by an M-step that keeps running sums (a mini-batch rule): the weight of the
        samples each centre averages and their weighted squared distances at assignment. A
        schedule may read them (the nested mini-batch doubling rule does).
    reassignment_ratio, reassignment_window : float, int or None
        Written by a mini-batch schedule, read by the M-step's running sums: when a cluster
        that collects too little weight counts as starved and is moved (see
        :class:`~clusterkit.MiniBatch`). ``None``: only a cluster without votes for a whole
        pass is.
    """

    def __init__(self):
        self.step_size = self.averaging = None
        self.cluster_weight = self.cluster_sse = None
        self.reassignment_ratio = self.reassignment_window = None
