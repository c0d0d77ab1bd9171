"""A run's steps on the rows the fit clusters, chosen once per fit.

The driver's loop is the same wherever the rows are; what it asks of them is one
:class:`Steps` object: the seeding, the per-run state, one step, the objective that compares
``n_init`` runs, the weight each cluster explains and the training labels.
:class:`MemorySteps` serves rows in memory (an array, a CSR matrix, a coreset of any data, a
``partial_fit`` batch); :class:`~clusterkit._engine.mapreduce.ChunkedSteps` all the rows of
data in row chunks, where each step is a map over the chunks and a reduce
(:mod:`clusterkit._engine.mapreduce`). :func:`~clusterkit._engine.preparation.prepare`
picks one of them.

The rules a step applies are the strategies' own and written once: the E-step's
``assign``, the M-step's :meth:`statistics <clusterkit.MStep.statistics>` and
:meth:`update_statistics <clusterkit.MStep.update_statistics>` (the update of rows in memory
is the one of summed chunks, :meth:`MStep.update <clusterkit.MStep.update>`), the relocation
of empty clusters (:func:`~clusterkit.mstep.batch_rules.relocate_empty`) and the weighted
sums (:mod:`clusterkit._data.moments`). A batch of rows in memory, a mini-batch read from
chunks included, goes through :func:`step_batches`.
"""
import numpy as np

from .._data.chunked import ChunkedData
from .._data.moments import label_weight, weighted_sum
from .._data.nearest import dist2_to_labels, nearest
from .strategy import strategy_array

__all__ = ["MemorySteps", "Steps", "fresh_objective", "nearest_of_given", "step_batches"]


def step_batches(composition, state, centers, batches, read):
    """E-step then M-step on each of the inner ``batches`` of one step, rows in memory.

    ``read(rows)`` gives the rows ``rows`` and their weights. Returns the new centres, the
    first inner batch's assignment and its rows and weight: the step's objective is at the
    parameters it started from.
    """
    estep, mstep = composition.estep, composition.mstep
    if not batches:
        raise ValueError(f"{type(composition.schedule).__name__}.batches yielded an empty "
                         "list of batches.")
    state.run.n_inner_steps = len(batches)
    for state.run.inner_step, state.run.rows in enumerate(batches):
        X, sample_weight = read(state.run.rows)
        # E-step: assignment / (truncated) responsibilities with the current parameters.
        with state.meter.timed("estep"):
            assignment = estep.assign(X, sample_weight, centers, state)
        # M-step: new centres (and the model's other parameters) from the assignment.
        with state.meter.timed("mstep"):
            centers_new = mstep.update(X, sample_weight, assignment, centers, state)
        state.run.record_step(assignment.labels, centers, centers_new)
        centers = centers_new
        if state.run.inner_step == 0:
            first = assignment
            batch = (sample_weight.shape[0], float(sample_weight.sum(dtype=np.float64)))
    return centers, first, batch


def fresh_objective(estep, X, sample_weight, centers, state):
    """The objective ``n_init`` compares runs by, of the rows ``X`` at ``centers``: one
    E-step from a fresh per-run state (``state.run`` is a throw-away run with the compared
    run's variance). Rows in memory are one such call, data in row chunks one per chunk,
    the objectives added up."""
    state.run.estep_state = estep.init_state(X, sample_weight, centers, state)
    return estep.assign(X, sample_weight, centers, state).objective


class Steps:
    """What the driver asks of the rows a fit clusters (see the module notes).

    Parameters
    ----------
    X : ndarray, CSR matrix or ChunkedData
        The rows in the fit's frame.
    sample_weight : ndarray or None
        Their weights (``None``: the chunks hold them).
    composition : Composition
    state : FitState

    Attributes
    ----------
    per_sample : bool
        Whether a run keeps per-sample records (labels) in this process.
    """

    per_sample = True

    def __init__(self, X, sample_weight, composition, state):
        self.X, self.sample_weight = X, sample_weight
        self.composition, self.state = composition, state

    def seeding(self, n_clusters):
        """The seeder's :class:`~clusterkit.Seeding` of these rows."""
        raise NotImplementedError

    def start(self, source=None, centers=None):
        """The E-step's state of a new run, or of one that continues the run ``source``
        from ``centers`` where the E-step carries its state
        (:meth:`EStep.carry_state <clusterkit.EStep.carry_state>`)."""
        raise NotImplementedError

    def step(self, centers, rows):
        """One step from ``centers`` on the batch ``rows`` (or the list of batches of its
        inner steps): the new centres, the first inner batch's assignment, and its rows and
        weight."""
        raise NotImplementedError

    def evaluate(self, run):
        """The objective of all rows at ``run``'s centres, for ``n_init`` to compare runs."""
        raise NotImplementedError

    def cluster_weight(self, run):
        """The weight of the rows each centre explains, from ``run``'s latest labels."""
        raise NotImplementedError

    def labels(self, given, sample_weight, x_mean, run, progress):
        """``labels_`` and ``inertia_`` of the rows ``given`` (as the user gave them, with
        their weights; ``x_mean`` the fit's centring) for ``run``'s centres, the evaluations
        counted under ``"labels"``."""
        raise NotImplementedError


class MemorySteps(Steps):
    """The steps of a fit on rows in memory (see :class:`Steps`); ``reduced`` says whether
    they are a reducer's weighted set rather than the given rows (in the schedule's order of
    the rows, ``state.order``)."""

    def __init__(self, X, sample_weight, composition, state, reduced=False):
        super().__init__(X, sample_weight, composition, state)
        self.reduced = reduced

    def seeding(self, n_clusters):
        return self.composition.seed.seeding(self.X, self.sample_weight, n_clusters,
                                             self.state)

    def start(self, source=None, centers=None):
        state, estep, run = self.state, self.composition.estep, self.state.run
        carried = None if source is None else estep.carry_state(source.estep_state, state)
        if carried is not None:
            run.continue_from(source, centers, carried)
        else:
            run.estep_state = estep.init_state(self.X, self.sample_weight, centers, state)

    def step(self, centers, rows):
        X, sample_weight, schedule = self.X, self.sample_weight, self.composition.schedule

        def read(batch):
            X_batch = X[batch]
            weight = strategy_array(schedule.batch_weight(sample_weight, batch, self.state),
                                    schedule, "batch weights", (X_batch.shape[0],), X.dtype)
            return X_batch, weight
        return step_batches(self.composition, self.state, centers,
                            rows if isinstance(rows, list) else [rows], read)

    def evaluate(self, run):
        """:func:`fresh_objective` of all rows, in a throw-away run (with ``run``'s
        variance), so that no kept run changes."""
        state = self.state
        scratch = state.new_run(self.X.shape[0])
        scratch.sigma2 = run.sigma2
        try:
            with state.meter.phase("objective"):  # a pass over all rows: show it
                return fresh_objective(self.composition.estep, self.X, self.sample_weight,
                                       run.centers, state)
        finally:
            state.run = run

    def cluster_weight(self, run):
        return label_weight(run.labels, self.sample_weight, self.state.config.n_clusters)

    def labels(self, given, sample_weight, x_mean, run, progress):
        """The E-step's own final labels of the fitted rows if it defines them, or the run's
        last labels if it ended at a fixed point (as scikit-learn's ``KMeans``), else every
        row's nearest final centre (one exact pass, on the fit's centred rows when it ran on
        all the given rows, else on the given rows block by block). The fit's rows are in the
        run's order (``state.order``) and are mapped back."""
        state, estep, centers = self.state, self.composition.estep, run.centers
        if self.reduced:
            labels, inertia, n_evals = nearest_of_given(given, sample_weight, x_mean, centers,
                                                        state.config.n_threads, progress)
            state.meter.count("labels", n_evals)
            return labels, inertia
        labels = estep.final_labels(state)
        if labels is None and run.at_fixed_point(state.config.strict_convergence):
            labels = run.labels
        if labels is None:
            labels, dist2, n_evals = nearest(self.X, None, centers, state.config.n_threads,
                                             progress, estep.labelling_rows(self.X, state))
        else:
            labels = np.ascontiguousarray(labels, dtype=np.int32)
            dist2, n_evals = dist2_to_labels(self.X, centers, labels, state.config.n_threads)
        state.meter.count("labels", n_evals)
        labels, dist2 = state.in_data_order(labels), state.in_data_order(dist2)
        return labels, weighted_sum(dist2, sample_weight)


def nearest_of_given(X, sample_weight, x_mean, centers, n_threads, progress):
    """Every given row's nearest centre, the weighted quantization error and the
    evaluations: rows in memory block by block, data in row chunks chunk by chunk (lazily
    for a dask array: nothing is counted, see :meth:`ChunkedData.nearest
    <clusterkit._data.chunked.ChunkedData.nearest>`)."""
    if isinstance(X, ChunkedData):
        return X.nearest(x_mean, centers, progress)
    labels, dist2, n_evals = nearest(X, x_mean, centers, n_threads, progress)
    return labels, weighted_sum(dist2, sample_weight), n_evals
