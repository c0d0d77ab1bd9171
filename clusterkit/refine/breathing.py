"""Refiners: leave a converged run's local minimum (:class:`Breathing`), or not
(:class:`NoRefinement`, the default).

The contract is :class:`~clusterkit._engine.contracts.Refiner`: after a run ended on its own,
the driver hands the refiner the run and a callable that runs the composition's iterations
(the same E-step, M-step and schedule) from other centres as a new run; the refiner returns
the run it keeps, never worse on the fit's data than the one it got.
"""
import itertools
from numbers import Integral, Real

import numpy as np

from .._engine.assignment import FREE_ENERGY, QUANTIZATION_ERROR
from .._engine.constraints import InstanceOf, Interval
from .._data.chunked import sum_of_rows
from .._data.nearest import single_threaded_blas
from .._engine.contracts import EStep, Refiner
from .._data.moments import weighted_sum
from .._kernels import _assign, _topk

__all__ = ["NoRefinement", "Breathing", "cluster_statistics"]


def _judged(X, sample_weight, run, nearest_error, state):
    """The error a round is judged by: the nearest centres' (``nearest_error``) or, when the
    labels obey a constraint (``state.config.constrained_labels``), that of the run's
    labels at its centres, which hold the constraint (``N`` evaluations, counted)."""
    if not state.config.constrained_labels:
        return nearest_error
    dist2 = np.empty(X.shape[0], dtype=X.dtype)
    _assign.dist2_to_labels(X, run.centers, run.labels, dist2, state.config.n_threads)
    state.meter.count("refinement", X.shape[0])
    return float(weighted_sum(dist2, sample_weight))


class NoRefinement(Refiner):
    """No refinement: the run's centres are the fit's (the default).

    Examples
    --------
    >>> from clusterkit import Clusterer, NoRefinement
    >>> model = Clusterer(2, refine=NoRefinement(), random_state=0).fit([[0.], [1.], [9.]])
    >>> hasattr(model, "refinement_log_")
    False
    """

    accepts_sparse = True
    objectives = None
    refines = False

    def fitted_attributes(self, state):
        return {}

    def refine(self, X, sample_weight, run, iterate, state):
        return run


def cluster_statistics(X, sample_weight, centers, state):
    """One exact pass for breathing: per cluster its error (weighted squared distances of its
    members to it), utility (how much the error grows if it is removed and its members move to
    their second-nearest centre) and weight, and the quantization error of all rows.

    ``n_samples * n_clusters`` distance evaluations, counted under ``"refinement"``. On
    data in row chunks (``X`` a :class:`~clusterkit._data.chunked.ChunkedData`,
    ``sample_weight`` ``None``) each chunk sums its rows where it is, and the sums are added
    in chunk order.

    Returns
    -------
    error, utility, weight : ndarray of shape (n_clusters,), float64
    objective : float
    """
    error, utility, weight, n_evals = sum_of_rows(
        X, sample_weight, _cluster_sums, (centers,), state.config.n_threads,
        progress=lambda done, total: state.meter.progress("refinement", done, total, "rows"))
    state.meter.count("refinement", int(n_evals))
    return error, utility, weight, float(error.sum())


def _cluster_sums(X, sample_weight, centers, n_threads):
    """:func:`cluster_statistics` of rows in memory or of one row chunk (in the fit's
    frame): error, utility and weight per cluster from the rows' two nearest centres, and
    the distance evaluations."""
    n_clusters = centers.shape[0]
    winners = np.empty((X.shape[0], 2), dtype=np.int32)
    win_dist2 = np.empty((X.shape[0], 2), dtype=X.dtype)
    with single_threaded_blas():  # (the kernel calls gemm inside its parallel loop)
        n_evals = _topk.assign_topk(X, centers, winners, win_dist2, n_threads)
    nearest = winners[:, 0]
    d1 = win_dist2[:, 0].astype(np.float64)
    w = sample_weight.astype(np.float64)
    error = np.bincount(nearest, w * d1, minlength=n_clusters)
    utility = np.bincount(nearest, w * (win_dist2[:, 1] - d1), minlength=n_clusters)
    weight = np.bincount(nearest, w, minlength=n_clusters)
    return error, utility, weight, n_evals


class Breathing(Refiner):
    """Breathing k-means with a constant number of centres (after Fritzke, arXiv 2006.15666).

    Each round moves the ``m`` centres of least *utility* (the error their removal would add)
    next to the ``m`` centres of largest *error*, runs the composition's iterations from there
    once, and keeps the result if it lowered the quantization error on the fit's data by more
    than ``tol`` (relative); otherwise the next round moves fewer centres (half as many while
    that leaves at least five, then one fewer). A centre whose nearest other centre was
    already chosen for a move in the same round is not moved (Fritzke's freezing: two
    neighbouring weak centres are not both taken from one region).

    When ``m`` reaches zero, the rounds end, unless a budget (``budget``, ``time_budget``) is
    set: then a new cycle starts at ``m`` again, with randomised choices (the moved centres
    in a random order of the ``2 m`` least useful, their partners drawn in proportion to
    their cluster's error), so that a budget keeps buying rounds that may lower the error
    instead of ending where the first cycle's deterministic choices do. The rounds end
    when the next round would exceed a budget or after ``max_rounds`` rounds.

    Parameters
    ----------
    m : int, default=5
        Centres moved in the first round (at most half of ``n_clusters``).
    tol : float, default=1e-4
        Relative drop of the quantization error a round must bring to be kept.
    max_rounds : int or None, default=30
        Most rounds (each is one run of the composition's iterations). ``None``: no such
        limit (the budgets end the rounds, or, without one, the first cycle's end).
    budget : float or None, default=None
        Most distance evaluations of the refinement, as a multiple of those the fit made
        before it started (seeding, reduction, the run's iterations; with ``n_init > 1`` the
        earlier runs' too). A round is not started if the last round's evaluations would
        take the refinement past it (zero: no round). Counted, not timed: the same on every
        machine. A larger budget runs the same rounds and then more, so its error is never
        higher. Distances whose number depends on the data's row chunks do not count
        (:attr:`Meter.chunk_evals <clusterkit._engine.state.Meter.chunk_evals>`: those
        between centres, which the bounded and partial E-steps compute at every step, on
        row chunks every chunk its own), so the same budget buys the same rounds in memory
        and on any row chunks (with bounded E-steps, to the few evaluations by which their
        counts differ where the centres differ by rounding; see the Dask page).
        ``None``: no such limit.
    time_budget : float or None, default=None
        Most seconds of the refinement, judged the same way with the last round's seconds.
        ``None``: no such limit.
    carry : bool, default=True
        Whether a round continues the E-step's per-run state of the last round's run
        (``iterate(centers, carry=True)``, :meth:`EStep.carry_state
        <clusterkit._engine.contracts.EStep.carry_state>`) rather than starting it afresh.
        The bounded E-steps (:class:`~clusterkit.ElkanEStep`, :class:`~clusterkit.YinyangEStep`,
        :class:`~clusterkit.BoundedEStep`) keep their bounds, adding each centre's move: the
        same iterates, with distances only for the rows the moved centres may win or lose
        (a *local* round). Other E-steps start afresh either way.
    polish_tol : float or None, default=None
        After the rounds, run the kept centres' iterations once more until the objective
        changes by at most this (relative; ``iterate(centers, tol=polish_tol)``), and keep
        the result if it is not worse: the rounds decide at the fit's ``tol``, the final
        centres end closer to their fixed point. Outside the budgets; logged as a round
        that moved no centre. ``None``: no polish.

    Notes
    -----
    Fritzke's breathing k-means adds ``m`` centres, iterates, removes ``m`` and iterates again:
    two inner runs per round, with a changing number of centres. Here a round moves ``m``
    centres and runs once with ``n_clusters`` centres, so the strategies' per-run state (Elkan
    bounds, neighbourhoods, buffers) keeps its size; both reach the same error on the
    benchmarks of the quality page at about two thirds of the time. A moved centre is placed
    at a random offset of scale ``0.01 * sqrt(e / (w d))`` around its partner (``e`` and ``w``
    the partner's cluster error and weight, ``d`` the number of features), as Fritzke's.

    The rounds are judged by the quantization error whatever the M-step optimises, so for a
    Gaussian mixture (``mstep="soft"``) breathing moves the means where the k-means error is
    largest and keeps what lowers it. With labels under a constraint
    (:attr:`EStep.constrained <clusterkit.EStep.constrained>`: the sizes of
    :class:`~clusterkit.BalancedEStep`) a round is judged by the error of its run's labels at
    their centres, which hold the constraint, not by the nearest centres' error.

    Reproducibility: with ``max_rounds`` and ``budget`` alone, the rounds (and the result)
    depend only on the data and ``random_state``. A ``time_budget`` may end the refinement
    earlier on a slower or busier machine, so the same ``random_state`` can then return the
    centres of an earlier round (never worse ones); set it only where a wall-clock limit
    matters more than reproducibility. ``refinement_log_`` records per round the fit's
    seconds and distance evaluations so far (``"seconds"``, ``"distance_evals"``), the
    error against time.

    Cost per round: one pass over the fit's (reduced) data for the errors and utilities
    (``n_samples * n_clusters`` distance evaluations, ``cost_["refinement"]``) and one run of
    the composition (counted in its own phases). The first round adds one such pass. With a
    bounded E-step and ``carry=True`` the run's E-steps are local: on the quality page's
    200-Gaussian mixture a round's E-steps computed 0.4 M distances instead of 12.4 M (Lloyd's:
    108 M), the same rounds and centres bit for bit; the pass for the statistics (12 M) is
    then most of a round.
    Memory: ``O(n_samples)`` beyond the run's.

    Examples
    --------
    >>> from clusterkit import Breathing, Clusterer
    >>> from clusterkit.datasets import make_birch_grid
    >>> X, _, _ = make_birch_grid(n_side=4, n_per_cluster=50, random_state=0)
    >>> model = Clusterer(16, seed="random", refine=Breathing(m=2), random_state=0).fit(X)
    >>> log = model.refinement_log_
    >>> all(r["objective"] <= r["objective_before"] for r in log if r["kept"])
    True
    """

    objectives = (QUANTIZATION_ERROR, FREE_ENERGY)
    chunks = True  # (its pass is a sum per cluster over the rows, see cluster_statistics)
    _parameter_constraints = {"m": [Interval(Integral, 1)],
                              "tol": [Interval(Real, 0, 1, closed="left")],
                              "max_rounds": [None, Interval(Integral, 1)],
                              "budget": [None, Interval(Real, 0, None, closed="left")],
                              "time_budget": [None, Interval(Real, 0, None, closed="left")],
                              "carry": [InstanceOf(bool)],
                              "polish_tol": [None, Interval(Real, 0, 1, closed="left")]}

    def __init__(self, m=5, tol=1e-4, max_rounds=30, budget=None, time_budget=None,
                 carry=True, polish_tol=None):
        self.m = m
        self.tol = tol
        self.max_rounds = max_rounds
        self.budget = budget
        self.time_budget = time_budget
        self.carry = carry
        self.polish_tol = polish_tol

    def _validate(self, X, n_clusters, composition):
        if composition.mstep.spherical:
            raise ValueError("Breathing places moved centres off the unit sphere, which "
                             f"{type(composition.mstep).__name__} refuses; use refine=None "
                             "for spherical k-means.")

    def buffer_bytes(self, n_samples, n_features, n_clusters, dtype, composition):
        """Each row's two nearest centres and their distances, and float64 copies of the
        nearest distances and the weights; and a round's run's E-step state beside the
        refined run's, unless the round carries it over (``carry`` with an E-step that
        implements :meth:`~clusterkit.EStep.carry_state`)."""
        estep = composition.estep
        carried = self.carry and type(estep).carry_state is not EStep.carry_state
        return n_samples * (2 * (4 + dtype.itemsize) + 16) + (
            0 if carried else estep.buffer_bytes(n_samples, n_features, n_clusters, dtype,
                                                 composition))

    def refine(self, X, sample_weight, run, iterate, state):
        centers = run.centers
        m = min(self.m, centers.shape[0] // 2)
        if m == 0:
            return run
        rng = state.random_state
        limits = _Limits(self, state)
        error, utility, weight, objective = cluster_statistics(X, sample_weight, centers, state)
        objective = _judged(X, sample_weight, run, objective, state)
        first_m, cycle = m, 1
        for round_ in itertools.count(1):
            if m == 0 and limits.bounded:  # (a budget is left: a new, randomised cycle)
                m, cycle = first_m, cycle + 1
            if (m == 0 or limits.reached()
                    or (self.max_rounds is not None and round_ > self.max_rounds)):
                break
            moved, partners = self._pairs(centers, error, utility, m,
                                          rng if cycle > 1 else None)
            # (a partner without weight has no error either: it gets no spread)
            spread = np.divide(error[partners], weight[partners],
                               out=np.zeros(len(partners)), where=weight[partners] > 0)
            scale = 0.01 * np.sqrt(spread / centers.shape[1])
            candidate = centers.copy()
            candidate[moved] = centers[partners] + scale[:, None] * rng.standard_normal(
                (len(moved), centers.shape[1]))
            new = iterate(candidate, carry=self.carry)
            stats = cluster_statistics(X, sample_weight, new.centers, state)
            stats = stats[:3] + (_judged(X, sample_weight, new, stats[3], state),)
            kept = stats[3] < objective * (1.0 - self.tol)
            limits.round_ended()
            state.run.refinement_log.append({"round": round_, "moved": len(moved),
                                             "objective_before": objective,
                                             "objective": stats[3], "kept": bool(kept),
                                             "seconds": state.meter.seconds,
                                             "distance_evals": state.meter.n_distance_evals})
            if kept:
                run, centers, (error, utility, weight, objective) = new, new.centers, stats
            else:
                m = fewer_moves(m)
        if self.polish_tol is not None:
            new = iterate(centers, carry=self.carry, tol=self.polish_tol)
            polished = _judged(X, sample_weight, new,
                               cluster_statistics(X, sample_weight, new.centers, state)[3],
                               state)
            kept = polished <= objective
            state.run.refinement_log.append({"round": len(state.run.refinement_log) + 1, "moved": 0,
                                             "objective_before": objective,
                                             "objective": polished, "kept": bool(kept),
                                             "seconds": state.meter.seconds,
                                             "distance_evals": state.meter.n_distance_evals})
            if kept:
                run = new
        return run

    @staticmethod
    def _pairs(centers, error, utility, m, rng=None):
        """The centres a round moves and their partners. Without ``rng``: the ``m`` of least
        utility (with freezing, :meth:`_least_useful`) next to the ``m`` others of largest
        error. With ``rng`` (the cycles after the first): the moved centres in a random order
        of the ``2 m`` least useful, the partners drawn in proportion to their error, so a
        cycle does not repeat the moves its predecessor rejected."""
        if rng is None:
            moved = Breathing._least_useful(centers, utility, m)
            partners = np.setdiff1d(np.argsort(-error, kind="stable"), moved,
                                    assume_unique=True)[:len(moved)]
            return moved, partners
        pool = np.argsort(utility, kind="stable")[:2 * m]
        moved = Breathing._least_useful(centers, utility, m, order=rng.permutation(pool))
        others = np.setdiff1d(np.arange(len(error)), moved, assume_unique=True)
        p = error[others] / error[others].sum() if error[others].sum() > 0 else None
        partners = rng.choice(others, size=len(moved), replace=False,
                              p=None if p is None or np.count_nonzero(p) < len(moved) else p)
        return moved, partners

    @staticmethod
    def _least_useful(centers, utility, m, order=None):
        """The ``m`` centres of least utility (or the first ``m`` of ``order``), skipping a
        centre whose nearest other centre was already chosen (freezing)."""
        sqnorms = np.einsum("ij,ij->i", centers, centers, dtype=np.float64)
        chosen, frozen = [], set()
        for j in (np.argsort(utility, kind="stable") if order is None else order):
            if len(chosen) == m:
                break
            if j in frozen:
                continue
            chosen.append(j)
            dist2 = sqnorms + sqnorms[j] - 2.0 * (centers @ centers[j]).astype(np.float64)
            dist2[j] = np.inf
            frozen.add(int(np.argmin(dist2)))
        return np.asarray(chosen, dtype=np.intp)


def fewer_moves(m):
    """The centres the round after a rejected one moves: half as many while that leaves at
    least five, then one fewer.

    A large ``m`` (``best_quality`` moves ``C / 10``) that the data reject is thus left in a
    few rounds instead of ``m - 5`` (on cod_rna with C = 500, every round moving 42 to 50
    centres was rejected and the budget was spent before ``m`` came down to the twelve that
    gain); from five on, every count gets its chance, as in Fritzke's breathing k-means.
    """
    return m // 2 if m >= 10 else m - 1


class _Limits:
    """Breathing's budgets: whether the next round, costing what the last one did, would take
    the refinement past ``budget`` (times the fit's distance evaluations before it) or
    ``time_budget`` (seconds). Distance evaluations whose number depends on the row chunks
    (between centres: every chunk computes its own) are not counted
    (:attr:`Meter.n_budget_evals <clusterkit._engine.state.Meter.n_budget_evals>`)."""

    def __init__(self, refiner, state):
        self.state = state
        self.evals = (None if refiner.budget is None
                      else refiner.budget * state.meter.n_budget_evals)
        self.seconds = refiner.time_budget
        self.start = (state.meter.n_budget_evals, state.meter.seconds)
        self.last = self.start
        self.round_cost = (0, 0.0)
        #: whether a budget ends the rounds (then a cycle whose ``m`` reached zero restarts)
        self.bounded = self.evals is not None or self.seconds is not None

    def round_ended(self):
        now = (self.state.meter.n_budget_evals, self.state.meter.seconds)
        self.round_cost = (now[0] - self.last[0], now[1] - self.last[1])
        self.last = now

    def reached(self):
        spent = (self.last[0] - self.start[0], self.last[1] - self.start[1])
        # (>=: a budget of zero starts no round)
        return ((self.evals is not None and spent[0] + self.round_cost[0] >= self.evals)
                or (self.seconds is not None and spent[1] + self.round_cost[1] >= self.seconds))
