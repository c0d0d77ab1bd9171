"""The driver: the papers' pseudo-code, one strategy call per line.

A fit prepares the data once (reduce, centre), then runs ``n_init`` times: seed, create the
strategies' per-run state, and repeat one *step* -- E-step and M-step on the batch the
schedule chose -- until the schedule stops the run or ``max_iter`` iterations (steps, or the
schedule's unit: ``Schedule.n_iter``) have run; the best run is kept and the training data
are labelled with its centres. ``partial_fit`` runs the very same step on each batch of a
stream (:meth:`Driver.stream`).
"""
import math
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._data import chunked as _chunked
from .._data.checks import check_n_clusters, check_representable, squared_diagonal
from .._data.nearest import centred_copy, dist2_to_labels, in_frame, nearest, single_threaded_blas
from .assignment import Assignment
from .mapreduce import ChunkedSteps, full_data_chunks, seeding_rows_of_chunks
from .progress import QUIET, make_display
from .run import Run
from .state import FitState, variance_floor, weighted_sum
from .strategy import strategy_array
from .warn import warn

__all__ = ["Driver", "Result"]


class _CallbackStop(Exception):
    """The callback stopped the fit during a refinement round."""


@dataclass
class Result:
    """What a fit (or a stream's step) leaves for the estimator's fitted attributes.

    ``centers`` are in the fit's centred frame; ``labels``/``inertia`` are ``None`` unless the
    training data were labelled; ``cluster_weight`` is the weight of the fitted data each
    centre explains (what a ``partial_fit`` stream that continues the fit starts from);
    ``n_iter`` the run's iterations as its schedule counts them (:meth:`Schedule.n_iter`,
    rounded up), or a stream's batches so far.
    """

    centers: np.ndarray
    end: str
    history: list
    sigma2: object = None
    labels: object = None
    inertia: object = None
    cluster_weight: object = None
    n_iter: int = 0
    attributes: dict = field(default_factory=dict)


class Driver:
    """Runs one composition on one data set: :meth:`fit`, or :meth:`stream` batch by batch.

    Parameters
    ----------
    composition : Composition
        The six resolved, validated strategies.
    n_clusters, n_features : int
    random_state : numpy.random.RandomState
    n_threads, max_iter : int
    tol : float
    verbose : int or "bar"
        ``1``: a line per phase and step, and progress of long phases; ``2``: also the
        step's detail; ``"bar"``: progress bars (see :mod:`clusterkit._engine.progress`). The
        driver and its display are the only places that print.
    callback : callable or None
        Called after every step with the history entry plus ``"centers"`` (in the user's
        coordinates); ``True`` stops the fit.
    """

    def __init__(self, composition, *, n_clusters, n_features, random_state, n_threads,
                 max_iter, tol, verbose, callback):
        estep, mstep, schedule = composition.estep, composition.mstep, composition.schedule
        self.state = FitState(
            n_clusters=n_clusters, n_features=n_features, random_state=random_state,
            n_threads=n_threads, max_iter=max_iter, needs_resp=mstep.needs_resp,
            objective=mstep.objective, center_update=schedule.center_update,
            strict_convergence=(estep.exact
                                and schedule.center_update in mstep.fixed_point_rules),
            fuse_sums=bool(mstep.reads_batch_sums(schedule.center_update)))
        self.composition = composition
        self.n_clusters = n_clusters
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self.callback = callback
        self.x_mean = None
        self.box = None  # a fit's bounding box of the given rows, (low, high)
        self.centers = None  # a stream's current centres
        self.chunked = None  # the steps of a fit on all the rows of data in chunks
        self.memory_estimate = None  # (MemoryEstimate, shown when the fit starts)
        self._stream_display = None  # kept between a stream's batches (its bar)

    def __getstate__(self):
        # a stream's display (a thread, open bars) is not part of a pickled model
        return dict(self.__dict__, _stream_display=None)

    def say(self, level, message):
        """Show a line when ``verbose >= level``."""
        self.state.display.line(level, message)

    @contextmanager
    def _showing_progress(self):
        """The display of one ``fit`` or stream batch: its heartbeat runs until the block
        ends, whatever ends it (an exception or Ctrl-C included). A stream keeps its
        display, and the bar of its steps, for its next batch."""
        display = self._stream_display or make_display(self.verbose)
        self.state.display = display
        display.open()
        try:
            yield
        finally:
            display.close(final=not self.state.streaming)
            self.state.display = QUIET
            if self.state.streaming:
                self._stream_display = display

    # -- a fit -------------------------------------------------------------------------------

    def fit(self, X, sample_weight, x_mean, n_init, compute_labels, box=None):
        """Reduce and centre once, run ``n_init`` times, keep the best run, label the data.

        ``X`` is an ndarray (validated; ``box`` is the bounding box its range check found,
        ``(low, high)``) or :class:`~clusterkit._data.chunked.ChunkedData` (then
        ``sample_weight``, ``x_mean`` and ``box`` are ``None``: the first pass over the chunks
        gives the mean and the box). Returns a :class:`Result`.
        """
        with self._showing_progress():
            return self._fit(X, sample_weight, x_mean, n_init, compute_labels, box)

    def _fit(self, X, sample_weight, x_mean, n_init, compute_labels, box):
        if self.memory_estimate is not None:
            self.say(1, f"Memory: {self.memory_estimate}")
        if isinstance(X, _chunked.ChunkedData):
            x_mean, box = self._scan(X)  # (moves given initial centres into the data's frame)
        self.x_mean, self.box = x_mean, box
        state, strategies = self.state, self.composition
        X_fit, w_fit, reduced = self.prepare(X, sample_weight)
        best = best_objective = None
        for number in range(1, n_init + 1):
            if n_init > 1:
                self.say(1, f"Run {number} of {n_init}")
            state.display.start_run(number, n_init)
            run = self.run(X_fit, w_fit)
            state.display.end_run()
            # runs compete on one objective of all the (reduced) data
            objective = run.objective_value
            if n_init > 1 and run.history[-1]["batch_size"] < X_fit.shape[0]:
                objective = self.evaluate(X_fit, w_fit, run)
            if best is None or strategies.mstep.objective.better(objective, best_objective):
                best, best_objective = run, objective
            if run.end == "callback":  # the callback ends the whole fit
                break
        state.run = best
        result = Result(best.centers, best.end, best.history, best.sigma2,
                        cluster_weight=self._cluster_weight(best, w_fit),
                        n_iter=math.ceil(strategies.schedule.n_iter(state)))
        if result.end == "max_iter":
            warn(
                f"The fit did not converge: the objective still changed by more than "
                f"tol={self.tol} after max_iter={self.max_iter} iterations. Increase max_iter "
                "or tol, or start closer to a solution.", ConvergenceWarning)
        if compute_labels:
            with state.timed("labels"):
                result.labels, result.inertia = self.label(X, sample_weight, X_fit, reduced,
                                                           best)
            self.say(1, f"Labels: {X.shape[0]} samples, {state.cost['labels']} distance "
                        f"evaluations, {state.seconds_by_phase['labels']:.3g} s")
        result.attributes = {name: value for strategy in strategies
                             for name, value in strategy.fitted_attributes(state).items()}
        self.say(1, f"Done: {len(result.history)} iterations ({result.end}), "
                    f"{strategies.mstep.objective.name} {result.history[-1]['objective']:.6g}, "
                    f"{state.n_distance_evals} distance evaluations "
                    f"({', '.join(f'{k} {v}' for k, v in state.cost.items())}), "
                    f"{state.seconds:.3g} s")
        return result

    def _scan(self, data):
        """The first pass over data in row chunks (``ChunkedData.scan``): validates them and
        returns their mean as the fit's centring, in their dtype (the unweighted mean, as for
        data in memory: the same rows give the same fit on every container), and their
        bounding box; given initial centres move into that frame."""
        state = self.state
        with state.timed("scan"):
            moments = data.scan(
                progress=lambda done, total: state.progress("scan", done, total, "rows"))
        # (a spherical model's frame is the origin, as in memory)
        x_mean = np.zeros_like(moments.row_mean) if data.unit_rows else moments.row_mean
        self.say(1, f"Scan: {data.shape[0]} samples in {data.n_chunks} chunks, "
                    f"{state.seconds_by_phase['scan']:.3g} s")
        self.composition = self.composition._replace(seed=self.composition.seed.in_frame(x_mean))
        return x_mean, (moments.low, moments.high)

    def prepare(self, X, sample_weight):
        """The data every run clusters: reduced (once), then centred (a copy), in the
        schedule's order of the rows if it has one (``state.order``).

        Returns the centred data, its weights and whether the reducer changed the data, and
        sets the fit's precision limits (``state.sigma2_floor``, ``state.qe_resolution``).
        """
        state, reducer, schedule = self.state, self.composition.reduce, self.composition.schedule
        X_given = X
        chunked = isinstance(X, _chunked.ChunkedData)
        if full_data_chunks(X, reducer):  # every step reads all the rows, where they are
            return self._prepare_chunks(X), None, False
        # Coreset construction (Hirschberger et al., Alg. 1 line 1); identity by default.
        with state.timed("reduction"):
            if chunked:  # only the reduced set reaches this process
                X, sample_weight = reducer.reduce_chunked(X, state)
            else:
                X, sample_weight = reducer.reduce(X, sample_weight, state)
        reduced = X is not X_given
        if reduced:
            X = strategy_array(X, reducer, "data", (None, X_given.shape[1]), X_given.dtype)
            sample_weight = strategy_array(sample_weight, reducer, "weights", (X.shape[0],),
                                           X.dtype)
            if np.any(sample_weight < 0) or not np.any(sample_weight > 0):
                raise ValueError(f"{type(reducer).__name__} returned negative or all-zero "
                                 "weights.")
            if chunked:  # the fit's weighted sums run over the reduced set only
                check_representable(X, sample_weight=sample_weight)
            self.say(1, f"Reduction: {X_given.shape[0]} samples to {X.shape[0]} weighted "
                        f"samples, {state.cost['reduction']} distance evaluations, "
                        f"{state.seconds_by_phase['reduction']:.3g} s")
        check_n_clusters(self.n_clusters, X.shape[0])
        # the schedule sizes the seeding: what a seeding is worth depends on the iterations
        n_samples, n_features = X.shape
        state.configure(seeding_rows=int(schedule.seeding_rows(n_samples, self.n_clusters,
                                                               n_features)))
        # Only the data the fit runs on is centred (a copy), so a coreset fit never copies the
        # full data; centring keeps float32 distances accurate far from the origin. The same
        # pass puts the rows in the schedule's order (nested prefixes become views).
        state.order = schedule.order(X.shape[0], state)
        if state.order is not None:
            state.order = strategy_array(state.order, schedule, "order", (X.shape[0],),
                                         np.intp)
            if not np.array_equal(np.sort(state.order), np.arange(X.shape[0])):
                raise ValueError(f"{type(schedule).__name__}.order returned no permutation "
                                 "of the rows.")
            sample_weight = sample_weight[state.order]
        # (sparse data are not centred: their frame's mean is zero, see data_mean)
        centred, sum_of_squares = centred_copy(X, self.x_mean, state.n_threads, state.order)
        # the bounding box of all the given rows (zero weights included), as the range
        # check found it
        self.set_precision(centred, float(sample_weight.sum(dtype=np.float64)), sum_of_squares,
                           squared_diagonal(*self.box))
        return centred, sample_weight, reduced

    def _prepare_chunks(self, data):
        """:meth:`prepare` for a fit on all the rows of data in chunks: the data in the fit's
        frame, the seeding's rows (a sample: :func:`seeding_rows_of_chunks`), the precision
        limits from the first pass, and the map-reduce that runs the steps."""
        state, schedule = self.state, self.composition.schedule
        check_n_clusters(self.n_clusters, data.shape[0])
        n_samples, n_features = data.shape
        state.configure(seeding_rows=seeding_rows_of_chunks(
            int(schedule.seeding_rows(n_samples, self.n_clusters, n_features)), data))
        moments = data.scan()
        framed = data.in_frame(self.x_mean)
        # (the first pass's weighted spread about the weighted mean stands for the centred
        # rows' sum of squares: the same for unit weights, up to rounding)
        self.set_precision(framed, moments.total_weight,
                           moments.spread * n_samples / moments.total_weight,
                           squared_diagonal(*self.box))
        self.chunked = ChunkedSteps(framed, self.composition, state)
        return framed

    def set_precision(self, X, total_weight, sum_of_squares, diagonal2):
        """The fit's precision limits from the centred data it runs on (their total weight
        and sum of squares) and the squared diagonal ``diagonal2`` of the given data's
        bounding box (see :func:`variance_floor`)."""
        n_samples, n_features = X.shape
        variance = sum_of_squares / (n_samples * n_features)  # mean per-feature variance
        per_weight = float(np.finfo(X.dtype).eps) * variance * n_features
        self.state.configure(sigma2_floor=variance_floor(diagonal2, n_features, X.dtype),
                             qe_resolution=per_weight * total_weight,
                             qe_resolution_per_weight=per_weight)

    def seed(self, X, sample_weight):
        """Seeding: k-means++ / AFK-MC2 / given centres (Forster & Lücke, Alg. 1 line 1); the
        seeds' nearest-seed labels, if the seeder found them, go to the run."""
        state, seeder = self.state, self.composition.seed
        evals, seconds = state.cost["seeding"], state.seconds_by_phase["seeding"]
        with state.timed("seeding"):
            if self.chunked is not None:  # (a sample of the rows, read where they are)
                seeding = seeder.seeding_chunked(X, self.n_clusters, state)
            else:
                seeding = seeder.seeding(X, sample_weight, self.n_clusters, state)
        centers = strategy_array(seeding.centers, seeder, "centres",
                                 (self.n_clusters, X.shape[1]), X.dtype)
        if seeding.labels is not None:
            state.run.seed_labels = strategy_array(seeding.labels, seeder, "labels",
                                                   (X.shape[0],), np.int32)
        self.say(1, f"Seeding: {self.n_clusters} centres on {X.shape[0]} samples, "
                    f"{state.cost['seeding'] - evals} distance evaluations, "
                    f"{state.seconds_by_phase['seeding'] - seconds:.3g} s")
        return centers

    def start(self, X, sample_weight, centers, source=None):
        """The strategies' per-run state (winners, neighbourhoods, bounds, running sums, the
        schedule's stopping rule); the E-step's continues ``source``'s if it says so."""
        state, strategies, run = self.state, self.composition, self.state.run
        carried = (None if source is None else
                   strategies.estep.carry_state(source.estep_state, state))
        with state.phase("init"):
            if self.chunked is not None:  # (kept by each chunk, or made for each mini-batch)
                self.chunked.start(source, centers)
            elif source is not None and carried is not None:
                run.continue_from(source, centers, carried)
            else:
                run.estep_state = strategies.estep.init_state(X, sample_weight, centers, state)
            run.mstep_state = strategies.mstep.init_state(X, sample_weight, centers, state)
            run.schedule_state = strategies.schedule.init_state(X, sample_weight, centers,
                                                                state)

    def run(self, X, sample_weight):
        """One run on the centred data: seeding, the iterations, the refinement. Returns the
        :class:`~clusterkit.Run` whose centres the fit keeps; its ``end`` says why the
        iterations ended: ``"converged"`` (the schedule's stopping rule held), ``"budget"``
        (the schedule's batches ran out), ``"max_iter"`` or ``"callback"``. Only a run that
        ended on its own (the first two) is refined."""
        run = self.state.new_run(X.shape[0], per_sample=not (self.chunked and self.chunked.mapped))
        self.iterate(X, sample_weight, self.seed(X, sample_weight))
        # (a fit without a refiner has no refinement phase, as one without chunks no scan)
        if run.end in ("converged", "budget") and self.composition.refine.refines:
            run = self.refine(X, sample_weight, run)
        return run

    def iterate(self, X, sample_weight, centers, source=None, tol=None):
        """The strategies' per-run states (see :meth:`start`), then steps from ``centers``
        until the schedule (at ``tol``, the fit's when ``None``) or ``max_iter`` stops them;
        sets the current run's ``centers`` and ``end``."""
        tol = self.tol if tol is None else tol
        state, schedule, run = self.state, self.composition.schedule, self.state.run
        self.start(X, sample_weight, centers, source)
        batches = schedule.batches(X.shape[0], state)
        run.end = "max_iter"
        # max_iter counts the schedule's iterations (steps, or passes for mini-batches)
        while schedule.n_iter(state) < self.max_iter:
            run.step_info = {}
            rows = next(batches, None)
            if rows is None:
                if not run.history:
                    raise ValueError(f"{type(schedule).__name__}.batches yielded no batch: a "
                                     "fit needs at least one iteration.")
                run.end = "budget"
                break
            centers, first, batch = self.step(X, sample_weight, rows, centers)
            run.centers = centers  # (the step's new centres, which should_stop may read)
            if self.record(len(run.history) + 1, first, batch, centers):
                run.end = "callback"
                break
            if schedule.should_stop(state, tol):
                run.end = "converged"
                break
        run.centers = centers

    def evaluate(self, X, sample_weight, run):
        """The objective of all rows at ``run``'s centres, for ``n_init`` to compare runs: one
        E-step of a throw-away run (with ``run``'s variance), so that no kept run changes."""
        state, estep = self.state, self.composition.estep
        if self.chunked is not None:
            return self.chunked.evaluate(run)
        scratch = state.new_run(X.shape[0])
        scratch.sigma2 = run.sigma2
        try:
            with state.phase("objective"):  # a pass over all rows: show it
                scratch.estep_state = estep.init_state(X, sample_weight, run.centers, state)
                return estep.assign(X, sample_weight, run.centers, state).objective
        finally:
            state.run = run

    def refine(self, X, sample_weight, run):
        """The refiner's run: ``run`` or the run of one of its ``iterate`` calls, with the
        history of ``run``'s steps followed by the kept rounds' (their entries carry
        ``"refinement_round"``) and ``run``'s refinement log. Each ``iterate`` call starts a
        fresh run from its centres; a callback that stops one ends the refinement (and the
        fit) with ``run`` itself. ``iterate(centers, carry=True)`` lets the E-step continue
        the last call's run (or ``run``): :meth:`EStep.carry_state`."""
        state, refiner = self.state, self.composition.refine
        rounds, last = [], [run]  # each iterate call's steps; the run a round may continue

        def iterate(start, carry=False, tol=None):
            start = strategy_array(start, refiner, "centres to iterate from",
                                   (self.n_clusters, X.shape[1]), X.dtype)
            new = state.new_run(X.shape[0], round=len(rounds) + 1)
            try:
                self.iterate(X, sample_weight, start, last[0] if carry else None, tol)
            finally:
                state.run = run  # the refiner's own calls see the run it refines
            last[0] = new
            if new.end == "callback":
                raise _CallbackStop
            rounds.append(new.history)
            for info in new.history:
                info["refinement_round"] = new.round
            return new

        with state.timed("refinement"):
            try:
                refined = refiner.refine(X, sample_weight, run, iterate, state)
            except _CallbackStop:
                run.end = "callback"
                return run
        if refined is not run and not (isinstance(refined, Run) and refined.round > 0
                                       and rounds[refined.round - 1] is refined.history):
            raise ValueError(f"{type(refiner).__name__}.refine returned neither the run it "
                             "was given nor one that its iterate calls returned.")
        kept = [entry.get("kept", False) for entry in run.refinement_log]
        refined.history = run.history + [
            info for round_, steps in enumerate(rounds[:refined.round], 1)
            if round_ == refined.round or (round_ <= len(kept) and kept[round_ - 1])
            for info in steps]
        refined.refinement_log = run.refinement_log
        if rounds:
            self.say(1, f"Refinement: {len(rounds)} rounds, {sum(kept)} kept, "
                        f"{state.cost.get('refinement', 0)} distance evaluations, "
                        f"{state.seconds_by_phase['refinement']:.3g} s")
        return refined

    def step(self, X, sample_weight, rows, centers):
        """One step on the batch ``rows`` (or the list of batches of its inner steps).

        Returns the new centres, and the first inner batch's assignment and its rows and
        weight: the step's objective is at the parameters it started from. On data in row
        chunks the step is a map-reduce over the chunks (:class:`ChunkedSteps`).
        """
        if self.chunked is not None and self.chunked.mapped:
            centers, assignment, n_rows, weight = self.chunked.step(centers, rows)
            return centers, assignment, (n_rows, weight)
        state, strategies = self.state, self.composition
        estep, mstep, schedule = strategies.estep, strategies.mstep, strategies.schedule
        inner = rows if isinstance(rows, list) else [rows]
        if not inner:
            raise ValueError(f"{type(schedule).__name__}.batches yielded an empty list of "
                             "batches.")
        state.n_inner_steps = len(inner)
        for state.inner_step, state.rows in enumerate(inner):
            if self.chunked is not None:  # a mini-batch of data in chunks: read its rows
                Xb, wb = self.chunked.batch(state.rows)
            else:
                Xb = X[state.rows]
                wb = strategy_array(schedule.batch_weight(sample_weight, state.rows, state),
                                    schedule, "batch weights", (Xb.shape[0],), X.dtype)
            # E-step: assignment / (truncated) responsibilities with the current parameters.
            with state.timed("estep"):
                assignment = estep.assign(Xb, wb, centers, state)
            # M-step: new centres (and the model's other parameters) from the assignment.
            with state.timed("mstep"):
                centers_new = mstep.update(Xb, wb, assignment, centers, state)
            state.record_step(assignment.labels, centers, centers_new)
            centers = centers_new
            if state.inner_step == 0:
                first, batch = assignment, (wb.shape[0], float(wb.sum(dtype=np.float64)))
        return centers, first, batch

    def record(self, iteration, assignment, batch, centers):
        """Append the step to the history and report it; ``True`` if the callback stops.
        ``batch`` is the step's number of rows and their weight."""
        state = self.state
        info = {"iteration": iteration, "objective": assignment.objective, "qe": assignment.qe,
                "batch_size": batch[0], "weight": batch[1],
                "n_changed": state.n_changed,
                "max_center_shift": float(state.center_shift.max()),
                "passes": state.n_passes,
                "distance_evals": state.n_distance_evals, "seconds": state.seconds}
        if state.sigma2 is not None:
            info["sigma2"] = state.sigma2
        info.update(state.step_info)
        state.history.append(info)
        state.display.step(info, f"Iteration {iteration:4d}: objective="
                                 f"{info['objective']:.6g} changed={info['n_changed']} "
                                 f"({info['seconds']:.3g} s)")
        phases = state.seconds_by_phase
        self.say(2, f"    qe={info['qe']:.6g} batch={info['batch_size']} max shift="
                    f"{info['max_center_shift']:.3g}; so far: E-steps {state.cost['estep']} "
                    f"distance evaluations, {phases['estep']:.3g} s; M-steps "
                    f"{phases['mstep']:.3g} s")
        if self.callback is not None:  # centres in the user's coordinates
            stop = self.callback(dict(info, centers=centers + self.x_mean))
            return stop is True or stop is np.True_
        return False

    def _cluster_weight(self, run, sample_weight):
        """Weight of the fit data each centre explains, from ``run``'s latest labels."""
        if self.chunked is not None:
            return self.chunked.cluster_weight(run)
        seen = run.labels >= 0
        return np.bincount(run.labels[seen], sample_weight[seen].astype(np.float64),
                           minlength=self.n_clusters)

    def label(self, X, sample_weight, X_fit, reduced, run):
        """``labels_`` and ``inertia_`` for ``run``'s centres: the E-step's own final labels
        of the fitted rows if it defines them, or the run's last labels if it ended at a fixed
        point (as scikit-learn's ``KMeans``), else every training sample's nearest final
        centre (one exact pass, on the fit's centred copy when it ran on all the data, else
        block by block). Rows of the fit's copy are in the run's order (``state.order``) and
        are mapped back. Data in row chunks are labelled chunk by chunk: lazily for a dask
        array (a dask array of labels and a 0-d one of the inertia; nothing is counted),
        block by block for a memmap; a run on all their rows that ended at a fixed point
        keeps the labels its chunks hold (:meth:`ChunkedSteps.last_labels`)."""
        state, centers = self.state, run.centers

        def progress(done, total):
            state.progress("labels", done, total, "rows")
        if isinstance(X, _chunked.ChunkedData):
            kept = self.chunked and self.chunked.last_labels(run)  # (as for a fixed point)
            if kept:
                return kept
            labels, inertia, n_evals = X.nearest(self.x_mean, centers, progress)
            state.count("labels", n_evals)
            return labels, inertia
        if reduced:
            labels, dist2, n_evals = nearest(X, self.x_mean, centers, state.n_threads,
                                             progress)
        else:
            labels = self.composition.estep.final_labels(state)
            if labels is None and run.at_fixed_point(state.strict_convergence):
                labels = run.labels
            if labels is None:
                labels, dist2, n_evals = nearest(
                    X_fit, None, centers, state.n_threads, progress,
                    self.composition.estep.labelling_rows(X_fit, state))
            else:
                labels = np.ascontiguousarray(labels, dtype=np.int32)
                dist2, n_evals = dist2_to_labels(X_fit, centers, labels, state.n_threads)
            labels, dist2 = state.in_data_order(labels), state.in_data_order(dist2)
        state.count("labels", n_evals)
        return labels, weighted_sum(dist2, sample_weight)

    # -- a stream ----------------------------------------------------------------------------

    def stream(self, X, sample_weight, compute_labels, centers=None, cluster_weight=None):
        """One batch of a ``partial_fit`` stream: the driver's :meth:`step` on the batch.

        ``X`` is the batch in the user's coordinates (centred here on ``self.x_mean``). The
        stream's first batch seeds the centres (``centers=None``), or the stream continues a
        fitted model: ``centers`` (in the fit's frame) then enter the M-step's running sums
        as pseudo-samples weighted by the training weight of their clusters
        (``cluster_weight``), so that the batches refine the fit instead of replacing it
        (scikit-learn's ``MiniBatchKMeans`` keeps its counts in the same way). Every batch's
        rows are new samples: per-sample state starts afresh. Returns a :class:`Result`;
        with ``compute_labels`` it has the batch's labels and inertia for the updated centres
        (one exact pass over the batch, counted under ``"labels"``, as scikit-learn's
        ``MiniBatchKMeans.partial_fit`` computes them).
        """
        self.state.configure(streaming=True)
        with self._showing_progress():
            return self._stream(X, sample_weight, compute_labels, centers, cluster_weight)

    def _stream(self, X, sample_weight, compute_labels, centers, cluster_weight):
        state = self.state
        Xc = in_frame(X, self.x_mean)
        with single_threaded_blas():
            if self.centers is None:  # the stream's first batch
                if centers is None:
                    centers = self.seed(Xc, sample_weight)
                state.mstep_state = self.composition.mstep.init_state(Xc, sample_weight,
                                                                      centers, state)
                state.schedule_state = self.composition.schedule.init_state(
                    Xc, sample_weight, centers, state)
                if cluster_weight is not None:
                    self._absorb(centers, cluster_weight)
                self.centers = centers
            state.start_rows(X.shape[0])
            state.estep_state = self.composition.estep.init_state(Xc, sample_weight,
                                                                  self.centers, state)
            schedule, end = self.composition.schedule, "batch"
            # the schedule's own batches of the caller's rows, in the caller's order
            for rows in schedule.stream_batches(X.shape[0]):
                state.step_info = {}
                self.centers, assignment, batch = self.step(Xc, sample_weight, rows,
                                                            self.centers)
                self.record(len(state.history) + 1, assignment, batch, self.centers)
                end = "converged" if schedule.should_stop(state, self.tol) else "batch"
            result = Result(self.centers, end, state.history, n_iter=len(state.history))
            if compute_labels:
                with state.timed("labels"):
                    result.labels, dist2, n_evals = nearest(Xc, None, self.centers,
                                                            state.n_threads)
                state.count("labels", n_evals)
                result.inertia = weighted_sum(dist2, sample_weight)
        return result

    def _absorb(self, centers, cluster_weight):
        """Put a fitted model's centres into the M-step's running sums, each as one sample
        weighted by its cluster's training weight (clusters without weight are left out)."""
        held = np.flatnonzero(cluster_weight > 0)
        rows = np.ascontiguousarray(centers[held])
        weight = cluster_weight[held].astype(centers.dtype)
        own = Assignment(labels=held.astype(np.int32), dist2=np.zeros(held.size, rows.dtype),
                         objective=0.0, qe=0.0)
        self.state.start_rows(held.size)
        self.composition.mstep.update(rows, weight, own, centers, self.state)
