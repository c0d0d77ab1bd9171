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

from .._data.moments import weighted_sum
from .._data.nearest import in_frame, nearest, single_threaded_blas
from .assignment import Assignment
from .preparation import prepare
from .progress import QUIET, make_display
from .run import Run
from .state import FitState
from .steps import MemorySteps
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
            constrained_labels=estep.constrained,
            fuse_sums=bool(mstep.reads_batch_sums(schedule.center_update)))
        self.composition = composition
        self.n_clusters = n_clusters
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self.callback = callback
        self.x_mean = None
        self.centers = None  # a stream's current centres
        self.steps = None  # the steps on the fit's rows (Steps), chosen once per fit
        self.memory_estimate = None  # (MemoryEstimate, shown when the fit starts)
        self._stream_display = None  # kept between a stream's batches (its bar)

    def __getstate__(self):
        # a stream's display (a thread, open bars) and its last batch's rows are not part of
        # a pickled model
        return dict(self.__dict__, _stream_display=None, steps=None)

    def say(self, level, message):
        """Show a line when ``verbose >= level``."""
        self.state.meter.display.line(level, message)

    @contextmanager
    def _showing_progress(self):
        """The display of one ``fit`` or stream batch: its heartbeat runs until the block
        ends, whatever ends it (an exception or Ctrl-C included). A stream keeps its
        display, and the bar of its steps, for its next batch."""
        display = self._stream_display or make_display(self.verbose)
        self.state.meter.display = display
        display.open()
        try:
            yield
        finally:
            display.close(final=not self.state.config.streaming)
            self.state.meter.display = QUIET
            if self.state.config.streaming:
                self._stream_display = display

    # -- a fit -------------------------------------------------------------------------------

    def fit(self, X, sample_weight, x_mean, n_init, compute_labels, box=None):
        """Reduce and centre once, run ``n_init`` times, keep the best run, label the data.

        ``X`` is an ndarray (validated; ``box`` is the bounding box its range check found,
        ``(low, high)``) or data in row chunks (then ``sample_weight``, ``x_mean`` and ``box``
        are ``None``: a first pass gives them, see
        :func:`~clusterkit._engine.preparation.prepare`). Returns a :class:`Result`.
        """
        with self._showing_progress():
            return self._fit(X, sample_weight, x_mean, n_init, compute_labels, box)

    def _fit(self, X, sample_weight, x_mean, n_init, compute_labels, box):
        if self.memory_estimate is not None:
            self.say(1, f"Memory: {self.memory_estimate}")
        # reduce and centre once; the steps on the result (the given centres in its frame)
        prepared = prepare(X, sample_weight, x_mean, box, self.composition, self.state,
                           self.n_clusters, self.say)
        self.composition, self.x_mean = prepared.composition, prepared.x_mean
        self.steps = prepared.steps
        state, strategies = self.state, self.composition
        X_fit, w_fit = self.steps.X, self.steps.sample_weight
        best = best_objective = None
        for number in range(1, n_init + 1):
            if n_init > 1:
                self.say(1, f"Run {number} of {n_init}")
            state.meter.display.start_run(number, n_init)
            run = self.run(X_fit, w_fit)
            state.meter.display.end_run()
            # runs compete on one objective of all the (reduced) data
            objective = run.objective_value
            if n_init > 1 and run.history[-1]["batch_size"] < X_fit.shape[0]:
                objective = self.steps.evaluate(run)
            if best is None or strategies.mstep.objective.better(objective, best_objective):
                best, best_objective = run, objective
            if run.end == "callback":  # the callback ends the whole fit
                break
        state.run = best
        result = Result(best.centers, best.end, best.history, best.sigma2,
                        cluster_weight=self.steps.cluster_weight(best),
                        n_iter=math.ceil(strategies.schedule.n_iter(state)))
        if result.end == "max_iter":
            warn(
                f"The fit did not converge: the objective still changed by more than "
                f"tol={self.tol} after max_iter={self.max_iter} iterations. Increase max_iter "
                "or tol, or start closer to a solution.", ConvergenceWarning)
        if compute_labels:
            with state.meter.timed("labels"):
                result.labels, result.inertia = self.steps.labels(
                    X, sample_weight, self.x_mean, best,
                    lambda done, total: state.meter.progress("labels", done, total, "rows"))
            self.say(1, f"Labels: {X.shape[0]} samples, {state.meter.cost['labels']} distance "
                        f"evaluations, {state.meter.seconds_by_phase['labels']:.3g} s")
        result.attributes = {name: value for strategy in strategies
                             for name, value in strategy.fitted_attributes(state).items()}
        self.say(1, f"Done: {len(result.history)} iterations ({result.end}), "
                    f"{strategies.mstep.objective.name} {result.history[-1]['objective']:.6g}, "
                    f"{state.meter.n_distance_evals} distance evaluations "
                    f"({', '.join(f'{k} {v}' for k, v in state.meter.cost.items())}), "
                    f"{state.meter.seconds:.3g} s")
        return result

    def seed(self, X):
        """Seeding: k-means++ / AFK-MC2 / given centres (Forster & Lücke, Alg. 1 line 1); the
        seeds' nearest-seed labels, if the seeder found them, go to the run."""
        state, seeder = self.state, self.composition.seed
        evals, seconds = state.meter.cost["seeding"], state.meter.seconds_by_phase["seeding"]
        with state.meter.timed("seeding"):
            seeding = self.steps.seeding(self.n_clusters)
        centers = strategy_array(seeding.centers, seeder, "centres",
                                 (self.n_clusters, X.shape[1]), X.dtype)
        if seeding.labels is not None:
            state.run.seed_labels = strategy_array(seeding.labels, seeder, "labels",
                                                   (X.shape[0],), np.int32)
        self.say(1, f"Seeding: {self.n_clusters} centres on {X.shape[0]} samples, "
                    f"{state.meter.cost['seeding'] - evals} distance evaluations, "
                    f"{state.meter.seconds_by_phase['seeding'] - seconds:.3g} s")
        return centers

    def start(self, X, sample_weight, centers, source=None):
        """The strategies' per-run state (winners, neighbourhoods, bounds, running sums, the
        schedule's stopping rule); the E-step's continues ``source``'s if it says so."""
        state, strategies, run = self.state, self.composition, self.state.run
        with state.meter.phase("init"):
            self.steps.start(source, centers)
            run.mstep_state = strategies.mstep.init_state(X, sample_weight, centers, state)
            run.schedule_state = strategies.schedule.init_state(X, sample_weight, centers,
                                                                state)

    def run(self, X, sample_weight):
        """One run on the centred data: seeding, the iterations, the refinement. Returns the
        :class:`~clusterkit.Run` whose centres the fit keeps; its ``end`` says why the
        iterations ended: ``"converged"`` (the schedule's stopping rule held), ``"budget"``
        (the schedule's batches ran out), ``"max_iter"`` or ``"callback"``. Only a run that
        ended on its own (the first two) is refined."""
        run = self.state.new_run(X.shape[0], per_sample=self.steps.per_sample)
        self.iterate(X, sample_weight, self.seed(X))
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
            centers, first, batch = self.steps.step(centers, rows)
            run.centers = centers  # (the step's new centres, which should_stop may read)
            if self.record(len(run.history) + 1, first, batch, centers):
                run.end = "callback"
                break
            if schedule.should_stop(state, tol):
                run.end = "converged"
                break
        run.centers = centers

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

        with state.meter.timed("refinement"):
            try:
                refined = refiner.refine(X, sample_weight, run, iterate, state)
            except _CallbackStop:
                run.end = "callback"
                return run
        if refined is not run and not (isinstance(refined, Run) and refined.round > 0
                                       and rounds[refined.round - 1] is refined.history):
            raise ValueError(f"{type(refiner).__name__}.refine returned neither the run it "
                             "was given nor one that its iterate calls returned.")
        # the entries with a "round" judge the rounds in order; a refiner's own moves
        # (SinglePointMoves' passes) log none
        kept = [entry.get("kept", False) for entry in run.refinement_log if "round" in entry]
        refined.history = run.history + [
            info for round_, steps in enumerate(rounds[:refined.round], 1)
            if round_ == refined.round or (round_ <= len(kept) and kept[round_ - 1])
            for info in steps]
        refined.refinement_log = run.refinement_log
        if rounds:
            self.say(1, f"Refinement: {len(rounds)} rounds, {sum(kept)} kept, "
                        f"{state.meter.cost.get('refinement', 0)} distance evaluations, "
                        f"{state.meter.seconds_by_phase['refinement']:.3g} s")
        return refined

    def record(self, iteration, assignment, batch, centers):
        """Append the step to the history and report it; ``True`` if the callback stops.
        ``batch`` is the step's number of rows and their weight."""
        state = self.state
        info = {"iteration": iteration, "objective": assignment.objective, "qe": assignment.qe,
                "batch_size": batch[0], "weight": batch[1],
                "n_changed": state.run.n_changed,
                "max_center_shift": float(state.run.center_shift.max()),
                "passes": state.run.n_passes,
                "distance_evals": state.meter.n_distance_evals, "seconds": state.meter.seconds}
        if state.run.sigma2 is not None:
            info["sigma2"] = state.run.sigma2
        info.update(state.run.step_info)
        state.run.history.append(info)
        state.meter.display.step(info, f"Iteration {iteration:4d}: objective="
                                 f"{info['objective']:.6g} changed={info['n_changed']} "
                                 f"({info['seconds']:.3g} s)")
        phases = state.meter.seconds_by_phase
        self.say(2, f"    qe={info['qe']:.6g} batch={info['batch_size']} max shift="
                    f"{info['max_center_shift']:.3g}; so far: E-steps {state.meter.cost['estep']} "
                    f"distance evaluations, {phases['estep']:.3g} s; M-steps "
                    f"{phases['mstep']:.3g} s")
        if self.callback is not None:  # centres in the user's coordinates
            stop = self.callback(dict(info, centers=centers + self.x_mean))
            return stop is True or stop is np.True_
        return False

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
            self.steps = MemorySteps(Xc, sample_weight, self.composition, state)
            if self.centers is None:  # the stream's first batch
                if centers is None:
                    centers = self.seed(Xc)
                state.run.mstep_state = self.composition.mstep.init_state(Xc, sample_weight,
                                                                          centers, state)
                state.run.schedule_state = self.composition.schedule.init_state(
                    Xc, sample_weight, centers, state)
                if cluster_weight is not None:
                    self._absorb(centers, cluster_weight)
                self.centers = centers
            state.run.start_rows(X.shape[0])
            state.run.estep_state = self.composition.estep.init_state(Xc, sample_weight,
                                                                      self.centers, state)
            schedule, end = self.composition.schedule, "batch"
            # the schedule's own batches of the caller's rows, in the caller's order
            for rows in schedule.stream_batches(X.shape[0]):
                state.run.step_info = {}
                self.centers, assignment, batch = self.steps.step(self.centers, rows)
                self.record(len(state.run.history) + 1, assignment, batch, self.centers)
                end = "converged" if schedule.should_stop(state, self.tol) else "batch"
            result = Result(self.centers, end, state.run.history, n_iter=len(state.run.history))
            if compute_labels:
                with state.meter.timed("labels"):
                    result.labels, dist2, n_evals = nearest(Xc, None, self.centers,
                                                            state.config.n_threads)
                state.meter.count("labels", n_evals)
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
        self.state.run.start_rows(held.size)
        self.composition.mstep.update(rows, weight, own, centers, self.state)
