"""The steps on data in row chunks (:class:`ChunkedSteps`, one
:class:`~clusterkit._engine.steps.Steps`), for compositions that read every row at every
step: a map over the chunks and a reduce.

A fit on a dask array or a memmap without a reducer (:attr:`DataReducer.chunked
<clusterkit.DataReducer.chunked>`) runs its iterations on all the rows, chunk by chunk, where
the chunks are (on the workers of a dask cluster; one after the other in this process for a
memmap), and only a few numbers per cluster come back:

* **map** (:func:`_step_chunk`, one task per chunk): the chunk, centred on the fit's mean as
  the centred copy of data in memory is (:meth:`ChunkedData.in_frame
  <clusterkit._data.chunked.ChunkedData.in_frame>`), goes through the E-step with the
  per-sample state the chunk keeps between steps (its labels and distances, the E-step's
  own state), then through :meth:`MStep.statistics <clusterkit.MStep.statistics>`: the
  chunk's sufficient statistics (weighted sums and weights per cluster, and what else the
  M-step needs), plus the chunk's objective, quantization error, weight, distance
  evaluations, changed labels and weight per label;
* **reduce** (:func:`_add_results`): the numbers of neighbouring chunks are added up in
  float64, then those of neighbouring pairs, and so on
  (:func:`~clusterkit._data.chunked.tree_reduce`), a tree fixed by the chunking alone, so
  that the result does not depend on which worker ran which chunk or when it finished; in
  this process where all chunks' results are small, else by tasks on the workers, so that
  only one chunk's worth of numbers reaches this process (``result_bytes`` of
  :meth:`ChunkedData.map_chunks_with_state
  <clusterkit._data.chunked.ChunkedData.map_chunks_with_state>`);
* **shared E-step state**: what the chunks' E-steps must agree on (the estimated
  neighbourhoods of :class:`~clusterkit.PartialEStep`) is added up in the same tree from the
  chunks' summaries (:meth:`EStep.chunk_summary <clusterkit.EStep.chunk_summary>`,
  :meth:`EStep.combine_summaries <clusterkit.EStep.combine_summaries>`), made at the root
  (:meth:`EStep.shared_state <clusterkit.EStep.shared_state>`) and goes to the next step's
  tasks (:meth:`EStep.use_shared <clusterkit.EStep.use_shared>`);
* **M-step** (in this process): :meth:`MStep.update_statistics
  <clusterkit.MStep.update_statistics>` turns the combined statistics into the new centres
  (``O(C D)``); a cluster left without weight asks for the rows farthest from their centres
  (:meth:`ChunkedSteps.far_rows`, one more pass, only then; the relocation rule is the
  one of memory, :func:`~clusterkit.mstep.batch_rules.relocate_empty`).

The per-chunk state stays with its chunk: a future held on the worker that computed it (a
``dask.distributed`` cluster), or an object in this process (a memmap, or another dask
scheduler). The driver's loop is the same as in memory; only its steps go through here.
On a cluster every chunk's steps run on one worker, chosen once (the one holding the chunk
where that keeps the workers' shares even), and a step is one round trip: the client sends
one graph and waits for its result.

On a cluster a chunk's state may be computed again: a worker that is lost takes the states
it held with it, and the scheduler recomputes them from their lineage (the chunk's tasks
from its first step on, which it keeps as long as the last state is wanted). A step's task
must then be a pure function of its inputs: it gives the E-step a copy of the state it
reads (:attr:`ChunkedData.recomputes_states
<clusterkit._data.chunked.ChunkedData.recomputes_states>`, the E-step's state copied with
:func:`copy.deepcopy`), so that the state it was given, which a recomputation may read
again, is never changed; in this process (nothing is recomputed) the E-step updates the
chunk's state in place, as in memory.

A nested schedule (:attr:`Schedule.nested <clusterkit.Schedule.nested>`, nmbatch) steps in
the same way on the prefix ``slice(0, b)`` of its order of the rows: the order is given row
by row (:meth:`Schedule.row_order <clusterkit.Schedule.row_order>`, drawn once per fit in
this process, a few numbers), each chunk finds its rows' positions at its first step and
keeps them, and each step's task visits the chunk's rows of position below ``b`` (in the
chunk's order; the E-step's state covers all its rows, and the rows not visited yet keep
the label ``-1``) and returns the statistics of those rows. No order of all the rows is
made here.

A mini-batch schedule (:attr:`Schedule.chunk_batches <clusterkit.Schedule.chunk_batches>`)
draws its batches' row numbers from the fit's random stream in this process, as in memory;
:meth:`ChunkedSteps.batch` reads those rows from the chunks that hold them, and the step runs
on them here, as in memory (one round trip to the chunks per batch).
"""
import copy
from dataclasses import dataclass, replace
from functools import partial

import numpy as np

from .._data.chunked import ChunkedData
from .._data.memory import memory_share
from .._data.moments import label_weight
from .._data.nearest import nearest, single_threaded_blas
from .assignment import Assignment
from .contracts import Seeding
from .far_rows import FarRows, far_scores
from .state import FitState, first_variance_sums
from .steps import Steps, fresh_objective, nearest_of_given, step_batches

__all__ = ["ChunkedSteps", "SEEDING_BYTES", "full_data_chunks",
           "seeding_rows_of_chunks"]

#: The most bytes of rows a seeding of data in row chunks reads into this process: the
#: schedule's seeding rows (:meth:`Schedule.seeding_rows <clusterkit.Schedule.seeding_rows>`)
#: are capped at this many bytes' worth, since its rule of "all rows for little work" would
#: gather small-``C`` data whole.
SEEDING_BYTES = 64 << 20


def full_data_chunks(X, reducer):
    """Whether the fit's iterations read the data ``X`` in row chunks (no chunked reducer
    makes a coreset of them first)."""
    return isinstance(X, ChunkedData) and not reducer.chunked


def seeding_rows_of_chunks(rows, data):
    """The seeding rows ``rows`` a schedule asked for, capped at :data:`SEEDING_BYTES` of
    ``data``'s rows (at least one row)."""
    return min(rows, max(1, SEEDING_BYTES // (data.shape[1] * data.dtype.itemsize)))


@dataclass
class _ChunkResult:
    """What one chunk's task of a step returns (float64 sums; a few numbers per cluster)."""

    statistics: dict
    objective: float
    qe: float
    weight: float
    n_rows: int
    n_evals: int
    n_chunk_evals: int  # (of n_evals, those that depend on the chunks: Meter.chunk_evals)
    n_changed: int
    label_weight: np.ndarray
    summary: object = None  # (what the chunk adds to its E-step's shared state)
    shared: object = None  # (that state, made from all chunks' summaries)


def _add_results(estep, first, second):
    """The results of two neighbouring chunks (or groups of them) as one, ``first`` before
    ``second``: float64 sums, and their E-step summaries combined."""
    summaries = [r.summary for r in (first, second) if r.summary is not None]
    return _ChunkResult(
        statistics={name: value + second.statistics[name]
                    for name, value in first.statistics.items()},
        objective=first.objective + second.objective, qe=first.qe + second.qe,
        weight=first.weight + second.weight, n_rows=first.n_rows + second.n_rows,
        n_evals=first.n_evals + second.n_evals,
        n_chunk_evals=first.n_chunk_evals + second.n_chunk_evals,
        n_changed=first.n_changed + second.n_changed,
        label_weight=first.label_weight + second.label_weight,
        summary=(estep.combine_summaries(summaries) if len(summaries) == 2
                 else next(iter(summaries), None)))


def _share(estep, result):
    """All chunks' result with the E-step's shared state made from their summary."""
    if result.summary is not None:
        result = replace(result, summary=None, shared=estep.shared_state(result.summary))
    return result


class _ChunkState:
    """What a chunk keeps between steps, where it runs: its rows' labels and squared
    distances from the last E-step (``-1`` and 0 for rows not visited yet), the E-step's own
    per-run state for the chunk, the number of its first row in all the data and, under a
    nested schedule, its rows' positions in the schedule's order. Before the run's first
    step only the first row."""

    def __init__(self, labels, dist2, estep_state, first_row, positions=None):
        self.labels, self.dist2, self.estep_state = labels, dist2, estep_state
        self.first_row, self.positions = first_row, positions


@dataclass
class _Plan:
    """The step as every chunk's task sees it: the strategies, the fit's configuration
    (``n_threads`` those of a task), the run's variance, how far each centre moved in the
    last M-step (which bounded E-steps add to their bounds), the rows each process holds (a
    chunk's state may take its share of its process' memory), whether the task must leave
    the chunk's state it reads unchanged (``pure``: it may be read again, see the module
    notes), the key of the run's row stream (:attr:`EStep.row_stream
    <clusterkit.EStep.row_stream>`), the state the chunks' E-steps share
    (:meth:`EStep.combine_summaries <clusterkit.EStep.combine_summaries>`) and, for a
    nested schedule (:attr:`Schedule.nested <clusterkit.Schedule.nested>`), its order of
    the rows (:meth:`Schedule.row_order <clusterkit.Schedule.row_order>`) and the end of
    the step's prefix (``None``: all rows), and whether the step is the first of a run that
    continues the last run's per-chunk states (``carry``, :meth:`ChunkedSteps.start`)."""

    estep: object
    mstep: object
    config: object
    sigma2: object
    center_shift: object
    rows_per_process: float
    pure: bool = False
    stream_key: object = None
    shared: object = None
    order: object = None
    prefix: object = None
    carry: bool = False


def _chunk_fit_state(plan, n_rows):
    """A :class:`FitState` for one chunk's part of a step (no random stream: a chunk's work
    is a deterministic function of its rows and the centres)."""
    state = FitState(config=plan.config, random_state=None, n_samples=n_rows)
    state.run.sigma2 = plan.sigma2
    state.run.center_shift = plan.center_shift
    state.run.stream_key = plan.stream_key
    return state


def _step_chunk(X, sample_weight, chunk, centers, plan):
    """The map of a step on one chunk (its rows in the fit's frame): E-step, then the
    M-step's sufficient statistics, on all its rows or, under a nested schedule, on its rows
    in the step's prefix (in the chunk's order; the E-step's state covers all its rows).
    Returns ``(_ChunkResult, _ChunkState)``, a new state: ``chunk`` is left as it was when
    ``plan.pure`` (the E-step updates a copy of its state; the labels and distances are new
    arrays in any case)."""
    n_rows = X.shape[0]
    state = _chunk_fit_state(plan, n_rows)
    state.run.first_row = chunk.first_row
    # (the kernels call gemm inside their parallel loops; state sized to the memory
    # available, such as bounds, takes the chunk's share)
    with single_threaded_blas(), memory_share(n_rows / plan.rows_per_process):
        if chunk.labels is None:  # the run's first step on this chunk
            chunk = _ChunkState(np.full(n_rows, -1, dtype=np.int32), None,
                                plan.estep.init_state(X, sample_weight, centers, state),
                                chunk.first_row, None if plan.order is None else
                                plan.order.positions(chunk.first_row + np.arange(n_rows)))
        elif plan.pure:  # (the E-step writes into its bounds, winners, ...)
            chunk = _ChunkState(chunk.labels, chunk.dist2, copy.deepcopy(chunk.estep_state),
                                chunk.first_row, chunk.positions)
        if plan.carry:  # the first step of a continued run (EStep.carry_state)
            carried = plan.estep.carry_state(chunk.estep_state, state)
            if carried is None:  # afresh, as a new run's first step
                chunk = _ChunkState(np.full(n_rows, -1, dtype=np.int32), None,
                                    plan.estep.init_state(X, sample_weight, centers, state),
                                    chunk.first_row, chunk.positions)
            else:
                chunk = _ChunkState(chunk.labels, chunk.dist2, carried, chunk.first_row,
                                    chunk.positions)
        rows = _prefix_rows(chunk, plan.prefix)
        if rows is not None:  # (every chunk steps: bounds follow every centre move)
            X, sample_weight = X[rows], sample_weight[rows]
            state.run.rows = rows
        state.run.labels = chunk.labels.copy()  # (the chunk's are kept as they were)
        if plan.carry:  # (a row counts as changed at its first visit, as in a fresh run)
            state.run.mark_unvisited()
        state.run.estep_state = chunk.estep_state
        plan.estep.use_shared(chunk.estep_state, plan.shared)
        assignment = plan.estep.assign(X, sample_weight, centers, state)
        statistics = plan.mstep.statistics(X, sample_weight, assignment, centers, state)
    labels = assignment.labels
    state.run.record_labels(labels)
    result = _ChunkResult(
        statistics={name: np.asarray(value, dtype=np.float64)
                    for name, value in statistics.items()},
        objective=float(assignment.objective), qe=float(assignment.qe),
        weight=float(sample_weight.sum(dtype=np.float64)), n_rows=X.shape[0],
        n_evals=state.meter.cost["estep"], n_chunk_evals=state.meter.chunk_evals,
        n_changed=state.run.n_changed,
        label_weight=label_weight(labels, sample_weight, centers.shape[0]),
        summary=plan.estep.chunk_summary(state.run.estep_state))
    if rows is None:
        dist2 = assignment.dist2.copy()
    else:  # (rows not visited yet: label -1, distance 0, never a far row)
        dist2 = (np.zeros(n_rows, assignment.dist2.dtype) if chunk.dist2 is None
                 else chunk.dist2.copy())
        dist2[rows] = assignment.dist2
    return result, _ChunkState(state.run.labels, dist2, state.run.estep_state,
                               chunk.first_row, chunk.positions)


def _prefix_rows(chunk, prefix):
    """The chunk's rows in the prefix of positions below ``prefix`` (increasing), or
    ``None`` for all its rows."""
    if prefix is None or chunk.positions is None:
        return None
    inside = chunk.positions < prefix
    return None if inside.all() else np.flatnonzero(inside)


def _chunk_labels(chunk):
    """A chunk's labels from its last step."""
    return chunk.labels


def _chunk_label_weight(X, sample_weight, labels, n_clusters):
    """The chunk's weight per label (:func:`~clusterkit._data.moments.label_weight`)."""
    return label_weight(labels, sample_weight, n_clusters)


def _first_variance_chunk(X, sample_weight, chunk, centers, n_threads):
    """The chunk's rows at their nearest centres: the sums of the first variance as the fit
    in memory takes them (:func:`~clusterkit._engine.state.first_variance_sums`: the
    weighted direct distances, their evaluations, the chunk's weight), and the evaluations
    that found the nearest centres (in memory a mixture's first E-step finds them). The state
    passes through."""
    with single_threaded_blas():
        labels, _, n_search = nearest(X, None, centers, n_threads)
    total, n_direct, weight = first_variance_sums(X, sample_weight, centers, labels, n_threads)
    return (total, n_direct, weight, n_search), chunk


def _objective_chunk(X, sample_weight, centers, plan):
    """A chunk's part of the objective ``n_init`` compares
    (:func:`~clusterkit._engine.steps.fresh_objective`), and its evaluations: those counted
    and, of them, those that depend on the chunks."""
    state = _chunk_fit_state(plan, X.shape[0])
    with single_threaded_blas(), memory_share(X.shape[0] / plan.rows_per_process):
        objective = fresh_objective(plan.estep, X, sample_weight, centers, state)
    return float(objective), state.meter.cost["estep"], state.meter.chunk_evals


def _far_chunk(X, sample_weight, chunk, k, n_threads):
    """The chunk's ``k`` rows of largest relocation score (of the last E-step's distances),
    largest first, and their row numbers in the chunk."""
    score = far_scores(X, sample_weight, chunk.dist2, n_threads)
    return FarRows.top(score, X, sample_weight, chunk.labels, k), chunk


class ChunkedSteps(Steps):
    """A run's steps on data in row chunks (see the module notes and
    :class:`~clusterkit._engine.steps.Steps`).

    Parameters
    ----------
    data : ChunkedData
        The data in the fit's frame (:meth:`ChunkedData.in_frame`).
    composition : Composition
    state : FitState
        The fit's state in this process (its configuration, meter and current run).
    """

    def __init__(self, data, composition, state):
        super().__init__(data, None, composition, state)
        self.chunks = self._first_states()
        self.shared = None
        self.run = None  # the run the chunks' states belong to
        self.carry = False  # whether the next step is the first of a continued run
        schedule = composition.schedule
        #: Whether every step is a map-reduce over the chunks (all their rows, or their rows
        #: in a nested schedule's prefix), else one on a mini-batch's rows read from them.
        self.mapped = schedule.full_batch or schedule.nested
        self.per_sample = not self.mapped  # (else the chunks hold the labels)
        #: A nested schedule's order of the rows, each chunk's positions found in its task
        #: (drawn once per fit, as the order of data in memory).
        self.order = (schedule.row_order(data.shape[0], state) if schedule.nested
                      else None)

    @property
    def data(self):
        """The chunks in the fit's frame (the steps' ``X``)."""
        return self.X

    @property
    def _result_bytes(self):
        """About the bytes of a chunk's step result (its float64 sums: a few per centre and
        feature), or ``None`` where it holds an E-step summary of unknown size."""
        if self.composition.estep.shares_state:
            return None
        return 8 * self.state.config.n_clusters * (self.state.config.n_features + 4)

    def _first_states(self):
        return [_ChunkState(None, None, None, int(start)) for start in self.data.chunk_starts]

    def start(self, source=None, centers=None):
        """A new run: every chunk's state starts afresh; or, given the run ``source`` whose
        states the chunks hold (a refiner's round, ``iterate(centers, carry=True)``) and a
        composition that steps on all the rows of every chunk, the new run starting at
        ``centers`` continues them where the E-step carries its state
        (:meth:`EStep.carry_state <clusterkit.EStep.carry_state>`, asked in each chunk's
        first step), as :meth:`Run.continue_from <clusterkit.Run.continue_from>` does in
        memory."""
        self.carry = (source is not None and source is self.run and self.mapped
                      and self.order is None)
        if self.carry:
            self.state.run.continue_from(source, centers, None)
        else:
            self.chunks = self._first_states()
        self.shared = None  # what the chunks' E-steps share (EStep.combine_summaries)
        self.run = self.state.run

    def last_labels(self, run):
        """``labels_`` and ``inertia_`` of ``run`` from the chunks' last labels and the last
        step's quantization error, if ``run`` is the last run of full batches and ended at a
        fixed point: they are then the rows' nearest final centres, as the fit in memory
        keeps its run's last labels. ``None`` otherwise."""
        if not (self.mapped and run is self.run
                and run.at_fixed_point(self.state.config.strict_convergence)):
            return None
        return self.data.per_row(_chunk_labels, self.chunks, np.int32,
                                 run.history[-1]["qe"])

    def _map(self, func, *args, progress=None, combine=None, finish=None, result_bytes=None):
        # the chunks' last states are handed over: each is let go as soon as its chunk's new
        # one is there (on a cluster its worker then frees it)
        states, self.chunks = self.chunks, None
        results, self.chunks = self.data.map_chunks_with_state(func, args, states, progress,
                                                               combine, finish, result_bytes)
        return results

    def _plan(self, sigma2, center_shift, **fields):
        """The :class:`_Plan` of a pass over the chunks with the run's variance ``sigma2``
        and the centres' last moves ``center_shift`` (the chunks' thread count, their share
        of the rows per process)."""
        data = self.data
        return _Plan(self.composition.estep, self.composition.mstep,
                     replace(self.state.config, n_threads=data.n_threads), sigma2,
                     center_shift, data.shape[0] / data.n_processes, **fields)

    def _progress(self, phase):
        state = self.state
        return lambda done, total: state.meter.progress(phase, done, total, "rows")

    def _prefix(self, rows):
        """The end ``b`` of the batch ``rows``, ``slice(0, b)`` of the rows in the nested
        schedule's order, or ``None`` for all rows."""
        n_samples = self.data.shape[0]
        if isinstance(rows, slice):
            start, stop, stride = rows.indices(n_samples)
            if start == 0 and stride == 1 and (stop == n_samples or self.order is not None):
                return None if stop == n_samples else stop
        raise ValueError(f"{type(self.composition.schedule).__name__}.batches yielded "
                         f"{rows!r}; a step on data in row chunks visits all rows "
                         "(slice(0, n_samples)) or, for a nested schedule, a prefix "
                         "slice(0, b) of its order.")

    def seeding(self, n_clusters):
        """The seeder's seeding of the chunks' rows, without labels: of the chunks
        themselves if it reads them (:attr:`Seeder.reads_chunks
        <clusterkit.Seeder.reads_chunks>`), else of all rows up to :data:`SEEDING_BYTES` of
        them, as in memory, a uniform sample of that size above (``data.sample`` by the
        fit's ``random_state``; only the sample is read)."""
        seed, data, state = self.composition.seed, self.data, self.state
        if seed.reads_chunks:
            X, sample_weight = data, None
        else:
            X, sample_weight = data.sample(seeding_rows_of_chunks(data.shape[0], data),
                                           state.random_state)
        return Seeding(seed.seeding(X, sample_weight, n_clusters, state).centers, None)

    def step(self, centers, rows):
        """One step from ``centers`` on the batch ``rows``: a map-reduce over the chunks
        (:meth:`mapped`), or the step in memory on a mini-batch's rows read from them
        (:meth:`batch`)."""
        if not self.mapped:
            return step_batches(self.composition, self.state, centers,
                                rows if isinstance(rows, list) else [rows], self.batch)
        return self._map_step(centers, rows)

    def _map_step(self, centers, rows):
        """The map-reduce step on all rows or a nested schedule's prefix (:meth:`_prefix`):
        returns the new centres, the step's :class:`~clusterkit._engine.assignment.Assignment`
        (its objective and quantization error; no per-row arrays), and the rows and their
        weight."""
        state, estep, mstep = self.state, self.composition.estep, self.composition.mstep
        prefix = self._prefix(rows)
        config = state.config
        if state.run.sigma2 is None and (config.needs_resp or config.objective.maximize):
            self._init_sigma2(centers)
        with state.meter.timed("estep"):
            total = self._map(_step_chunk, centers,
                              self._plan(state.run.sigma2, state.run.center_shift,
                                         pure=self.data.recomputes_states,
                                         stream_key=state.stream_key() if estep.row_stream
                                         else None, shared=self.shared, order=self.order,
                                         prefix=prefix, carry=self.carry),
                              progress=self._progress("estep"),
                              combine=partial(_add_results, estep), finish=partial(_share, estep),
                              result_bytes=self._result_bytes)
            if total.shared is not None:  # (else the last step's stays)
                self.shared = total.shared
        self.carry = False
        state.meter.count("estep", total.n_evals - total.n_chunk_evals)
        state.meter.count_per_chunk("estep", total.n_chunk_evals)
        state.run.cluster_weight = total.label_weight
        state.run.rows = rows  # (the M-step's rule may ask whether they are all rows)
        assignment = Assignment(labels=None, dist2=None, objective=total.objective, qe=total.qe)
        with state.meter.timed("mstep"):
            centers_new = mstep.update_statistics(total.statistics, centers, self.far_rows,
                                                  state)
        state.run.record_step(None, centers, centers_new, n_changed=total.n_changed,
                              n_rows=total.n_rows)
        return centers_new, assignment, (total.n_rows, total.weight)

    def _init_sigma2(self, centers):
        """A soft fit's first variance from all rows' nearest distances (vc-GMM eq. 12),
        one pass before the first E-step (in memory the first E-step finds it): the chunks'
        weighted distances and weights, each chunk's summed as in memory, added up (on one
        chunk the variance in memory, bit for bit)."""
        state = self.state
        with state.meter.timed("estep"):
            results = self._map(_first_variance_chunk, centers, self.data.n_threads,
                                progress=self._progress("estep"))
        state.meter.count("estep", sum(r[1] for r in results))
        # (the search for the nearest centres is the chunks' own: budgets leave it out)
        state.meter.count_per_chunk("estep", sum(r[3] for r in results))
        state.first_variance(sum(r[0] for r in results), sum(r[2] for r in results))

    def batch(self, rows):
        """The rows of a mini-batch (a slice or increasing row numbers, repeats allowed), in
        the fit's frame, and their weights: read from the chunks that hold them."""
        rows = np.arange(self.data.shape[0])[rows]
        unique, inverse = np.unique(rows, return_inverse=True)
        X, sample_weight = self.data.rows(unique)
        return np.ascontiguousarray(X[inverse]), sample_weight[inverse]

    def evaluate(self, run):
        """:func:`~clusterkit._engine.steps.fresh_objective` of every chunk at ``run``'s
        centres (with its variance), added up in chunk order: one pass, counted under
        ``"estep"``."""
        state, data = self.state, self.data
        plan = self._plan(run.sigma2, np.zeros(state.config.n_clusters))
        with state.meter.phase("objective"):
            results = data.map_chunks(_objective_chunk, [(run.centers, plan)] * data.n_chunks,
                                      progress=self._progress("objective"))
        state.meter.count("estep", sum(r[1] - r[2] for r in results))
        state.meter.count_per_chunk("estep", sum(r[2] for r in results))
        return sum(r[0] for r in results)

    def cluster_weight(self, run):
        """The weight of the rows whose last label is each cluster: summed by the chunks at
        the last step of a map-reduce run (:attr:`mapped`); from the run's labels for
        mini-batches (the weights read in one pass if the data have any)."""
        if run.labels is None:
            return run.cluster_weight
        n_clusters = self.state.config.n_clusters
        if not self.data.weighted:
            return label_weight(run.labels, None, n_clusters)
        starts, rows = self.data.chunk_starts, self.data.chunk_rows
        parts = self.data.map_chunks(_chunk_label_weight,
                                     [(run.labels[s:s + n], n_clusters)
                                      for s, n in zip(starts, rows)])
        return np.sum(parts, axis=0)

    def labels(self, given, sample_weight, x_mean, run, progress):
        """The chunks' last labels if ``run`` ended at a fixed point
        (:meth:`last_labels`), else every row's nearest final centre, chunk by chunk:
        lazily for a dask array (a dask array of labels and a 0-d one of the inertia;
        nothing is counted), block by block for a memmap."""
        kept = self.last_labels(run)
        if kept:
            return kept
        labels, inertia, n_evals = nearest_of_given(given, None, x_mean, run.centers,
                                                    self.data.n_threads, progress)
        self.state.meter.count("labels", n_evals)
        return labels, inertia

    def far_rows(self, k):
        """The ``k`` rows of largest relocation score over all the data (:class:`FarRows`),
        from the last E-step's distances; one pass over the chunks."""
        results = self._map(_far_chunk, k, self.data.n_threads)
        score = np.concatenate([far.score for far, _ in results])
        index = np.concatenate([start + top for start, (_, top) in zip(self.data.chunk_starts,
                                                                       results)])
        order = np.lexsort((index, -score))[:k]

        def joined(name):
            return np.concatenate([getattr(far, name) for far, _ in results])[order]
        return FarRows(score[order], joined("rows"), joined("labels"), joined("sample_weight"),
                       sum(far.n_positive for far, _ in results))
