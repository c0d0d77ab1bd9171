"""Balanced clusters: :class:`BalancedEStep`, the assignment of least (weighted) squared
distance under bounds on every cluster's size, solved at each step by
:func:`~clusterkit.estep.transport.balanced_assignment` from the last step's prices.
"""
import math
from numbers import Real

import numpy as np

from .._data.moments import weighted_sum
from .._engine.assignment import QUANTIZATION_ERROR, Assignment
from .._engine.constraints import Interval, Options
from .._engine.contracts import EStep
from .transport import N_CANDIDATES, balanced_assignment, size_bounds

__all__ = ["BalancedEStep"]


class _BalancedState:
    """:class:`BalancedEStep`'s per-run state: the run's rows and weights (for the final
    labels) and the last solve's prices and candidate graph (the next solve's start)."""

    def __init__(self, X, sample_weight):
        self.X, self.sample_weight = X, sample_weight
        self.prices = self.candidates = None


class BalancedEStep(EStep):
    """Hard assignment under bounds on every cluster's size (balanced clusters).

    For the given centres each step assigns the rows so that every cluster holds between
    ``size_min`` and ``size_max`` rows (in weight, for unequal ``sample_weight``), at the
    least total weighted squared distance among all such assignments: the optimum of the
    capacitated transport problem, not a heuristic. ``labels_`` after a fit are the bounded
    assignment to the final centres (one more solve); ``predict`` gives each row's nearest
    centre, or with ``predict="bounded"`` the bounded assignment of the new batch.

    Parameters
    ----------
    size_min : float or None, default=None
        Least size of every cluster (rows, or weight); ``None``: no lower bound.
    size_max : float or None, default=None
        Largest size of every cluster; ``None``: no upper bound.
    predict : {"nearest", "bounded"}, default="nearest"
        What ``Clusterer.predict`` gives for new rows after the fit. ``"nearest"``: each
        row's nearest centre, row by row. ``"bounded"``: the bounded assignment of the
        batch to the fitted centres, under the fit's bounds scaled to the batch (see the
        Notes).

    Notes
    -----
    Bounds in rows hold exactly. The bounds are in rows when all positive weights are
    equal (in particular without ``sample_weight``), ``w`` each: a bound in weight is then
    ``ceil(size_min / w)`` to ``floor(size_max / w)`` rows.

    Unequal weights: bounds in weight. A cluster's weight made of whole rows cannot always
    meet bounds in weight (deciding whether it can is NP-hard, a partition problem), so
    the promise is this: the solver finds the optimum in which rows may be split between
    clusters (it splits at most ``C - 1`` rows), and each split row then goes whole to one
    of its clusters by shifting weight along cycles and paths of the split rows, in the
    direction that does not raise the cost. Hence (1) the labels' weighted squared distance
    is at most that optimum, so at most that of any assignment of whole rows that meets
    the bounds exactly, and (2) every cluster's weight is within the bounds up to less than
    the weight of one split row: ``size_min - w_max < W_c < size_max + w_max`` with
    ``w_max`` the largest weight of a split row (0 when the optimum splits no row; then the
    bounds hold exactly). Rows of zero weight count in no bound.

    ``predict="bounded"``: a batch of ``m`` rows gets the least total squared distance
    with every cluster between ``floor(size_min m / N)`` and ``ceil(size_max m / N)``
    rows, ``N`` the rows of the fit (its total weight for weighted data; ``predict``
    takes no weights). Rounded outwards, these bounds always hold when the fit's did. The
    batch is one transport problem: its rows must be in memory together (a dask array is
    refused; so is sparse input: the solver takes dense rows), and a row's label depends
    on the rest of the batch. A model saved with :func:`~clusterkit.save_model`
    keeps its centres, not its E-step: a loaded model predicts nearest centres.

    Infeasible bounds are refused with a ``ValueError`` naming the parameter: ``size_min``
    above ``size_max``, ``n_clusters * size_min`` above the data's size (rows or weight),
    ``n_clusters * size_max`` below it, or equal weights with no whole number of rows
    between the bounds.

    How: each row is linked to its 8 centres of least ``dist2 - price`` (one pass of the
    nearest-centres kernel, ``N C`` distance evaluations, with the prices as one more
    coordinate), and the transport problem on that graph is solved by successive shortest
    paths over the clusters (``_kernels/_balanced.pyx``). Its optimal prices, one per
    centre, certify every row against all centres with a bound on the others; a row they
    do not certify, and every row when the graph blocks the bounds, gets candidates ranked
    at the new prices (four times as many after twice). A step starts from the last step's
    prices and candidates: their distances to the moved centres (``N k`` evaluations), the
    bound loosened by the centres' and prices' moves, and a new ranking only for the rows
    it no longer certifies; so once the centres settle a step costs little more than
    ``N k`` distances and moves a few rows. The first step, and one whose start is far
    from balance, first solves nested random samples of the rows (a fixed seed) for its
    prices. Memory: the candidate graph, about ``200 N`` bytes between steps and ``500 N``
    at the peak of a solve (``float32``).

    Measured (``benchmarks/bench_balanced.py``, 20,000 x 16 float32, C = 100, clusters of
    150 to 250 rows, 2 threads, seeds 0 to 2): a fit in 1.1 to 1.3 s where
    k-means-constrained took 105 to 117 s, at 1.000 to 1.343 times its error (poor local
    minima on two seeds), and with ``refine=Breathing()`` in 3.9 to 4.6 s at 0.871 to 0.999
    times its error. Not at k-means speed on large problems: at 1,000,000 x 16 float32,
    C = 1,000, ``size_max = 1.1 N / C`` (``bench_balanced.py --part scale``), a fit took
    20.7 times the default Lloyd fit's time (556 s against 27 s) at 1.0525 times its
    error, because the sequential transport solve routes every surplus row of the first
    steps along its own shortest path (see the docs page on balanced clusters, "At scale").

    The bounds tie all rows into one problem: full batches only (no mini-batches, no
    ``partial_fit``), hard M-steps only, rows in memory only (not yet row chunks), and no
    reducer (a coreset's cluster weights are not the data's sizes). ``exact`` is
    ``False``: the labels are not the nearest centres, so a step without changes does not
    end a fit by itself. With :class:`~clusterkit.Breathing` each round's iterations keep
    the bounds and ``labels_`` holds them, and a round is judged by the error of its
    bounded labels (``constrained``). A round does not carry the last run's prices
    (:meth:`~clusterkit.EStep.carry_state`: the run carried from gives its state up, and
    the kept run's final labels need it); each starts cold.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import BalancedEStep, Clusterer
    >>> X = np.array([[0.0], [0.1], [0.2], [0.3], [10.0], [10.1]])
    >>> km = Clusterer(2, estep=BalancedEStep(size_min=3, size_max=3), random_state=0)
    >>> np.bincount(km.fit(X).labels_).tolist()
    [3, 3]
    >>> km.predict([[0.0], [0.1], [0.2], [10.0]]).tolist()  # nearest centres
    [0, 0, 0, 1]
    >>> km.set_params(estep__predict="bounded").predict([[0.0], [0.1], [0.2], [10.0]]).tolist()
    [0, 0, 1, 1]
    """

    _parameter_constraints = {"size_min": [None, Interval(Real, 0, None, finite=True)],
                              "size_max": [None, Interval(Real, 0, None, closed="neither")],
                              "predict": [Options("nearest", "bounded")]}

    exact = False  # the labels are bounded, not the nearest centres
    constrained = True  # (the cluster sizes: rows cannot move freely)
    objectives = (QUANTIZATION_ERROR,)
    chunks = False
    chunks_refusal = ("its bounds tie all the rows into one transport problem, solved with "
                      "a candidate graph of about 200 bytes per row for all the rows at "
                      "once, so it cannot run chunk by chunk; for data that fit in memory, "
                      "pass np.asarray(X) (X.compute() for a dask array)")
    per_sample_state = False  # (its state is one price per centre)

    def __init__(self, size_min=None, size_max=None, predict="nearest"):
        self.size_min = size_min
        self.size_max = size_max
        self.predict = predict

    @property
    def predicts_batches(self):
        """Whether ``predict`` labels a batch as a whole (``predict="bounded"``)."""
        return self.predict == "bounded"

    def _validate(self, X, n_clusters, composition):
        """Refuse bounds that contradict each other, and compositions in which the labels
        could not hold them.

        Raises
        ------
        ValueError
            If ``size_min > size_max``, or with a reducer, a mini-batch schedule or an
            M-step that needs responsibilities.
        """
        if (self.size_min is not None and self.size_max is not None
                and self.size_min > self.size_max):
            raise ValueError(f"size_min={self.size_min} must be <= size_max={self.size_max}.")
        name = type(self).__name__
        reducer = composition.reduce
        if reducer.reduces:
            raise ValueError(
                f"{name} bounds the sizes of the clusters of the data, but "
                f"reduce={type(reducer).__name__} replaces the data by a weighted summary "
                "whose cluster weights are not the data's sizes, so labels_ could not hold "
                "the bounds; use reduce=None.")
        schedule = composition.schedule
        if not schedule.full_batch:
            raise ValueError(
                f"{name} bounds the sizes of clusters of all the rows at once; "
                f"schedule={type(schedule).__name__} assigns batches of them, whose "
                "sizes are not the clusters'; use schedule='full'.")
        if composition.mstep.needs_resp:
            raise ValueError(f"{name} assigns each row to one cluster; "
                             f"mstep={type(composition.mstep).__name__} needs "
                             "responsibilities. Use a hard M-step (mstep='hard').")

    def buffer_bytes(self, n_samples, n_features, n_clusters, dtype, composition):
        """Per row, a solve's bytes and a ranking's (a solve renews candidates while its
        graph is alive), plus the labels and distances. A solve: the last solve's
        candidates (kept until it ends), the new graph (candidates, their distances and
        bound) and its CSR copy, the kernel's entry (row, cluster, mass, distance, three
        links), the solve's per-row arrays and temporaries (about sixteen 8-byte values)
        and the candidates it keeps. A ranking of all rows: the last candidates, the rows
        lifted by the prices' coordinate (a copy) and the ranked candidates.

        Not counted: candidates widened where the bounds block the nearer ones (every row's,
        up to all centres, in the first steps), which depends on the data. Measured at
        100,000 x 16 float32 rows from 100 Gaussians, ``C = 1,000``, ``size_max = 1.1 N /
        C``: widened to 128 centres per row, a peak of 560 MB against this estimate's 76
        MB. Each widening is checked against the fit's memory budget before it allocates
        (:class:`~clusterkit.FitMemoryError`), so such a fit is refused, not killed."""
        k = min(N_CANDIDATES, n_clusters)
        kept = k * 4 + 8
        graph = k * (4 + 8) + 8
        solve = kept + 2 * graph + 48 + 16 * 8 + kept
        ranking = kept + (n_features + 1) * dtype.itemsize + k * (4 + dtype.itemsize)
        return n_samples * (solve + ranking + 4 + dtype.itemsize)

    def init_state(self, X, sample_weight, centers, state):
        """The run's rows and weights, no prices yet; bounds that cannot hold for these
        weights are refused here, before the first step."""
        size_bounds(self.size_min, self.size_max, state.config.n_clusters,
                    np.asarray(sample_weight, dtype=np.float64))
        return _BalancedState(X, sample_weight)

    def _solve(self, X, sample_weight, centers, run_state, state):
        result = balanced_assignment(X, sample_weight, centers, self.size_min, self.size_max,
                                     run_state.prices, state.config.n_threads,
                                     candidates=run_state.candidates)
        run_state.prices, run_state.candidates = result.prices, result.candidates
        return result

    def assign(self, X, sample_weight, centers, state):
        """Return the bounded assignment of least weighted squared distance (see the class
        notes); counts the candidates' distance evaluations under ``"estep"``."""
        run_state = state.run.estep_state
        if not isinstance(run_state, _BalancedState):  # called without init_state
            run_state = self.init_state(X, sample_weight, centers, state)
        result = self._solve(X, sample_weight, centers, run_state, state)
        state.meter.count("estep", result.n_distance_evals)
        state.run.step_info.update(balanced_paths=result.n_paths,
                                   balanced_renewed=result.n_widened)
        qe = weighted_sum(result.dist2, sample_weight)
        return Assignment(labels=result.labels, dist2=result.dist2, objective=qe, qe=qe)

    def final_labels(self, state):
        """The bounded assignment to the kept run's final centres (one more solve, from
        the run's last prices; its evaluations counted under ``"labels"``)."""
        run_state = state.run.estep_state
        if not isinstance(run_state, _BalancedState):
            return None
        result = self._solve(run_state.X, run_state.sample_weight, state.run.centers,
                             run_state, state)
        state.meter.count("labels", result.n_distance_evals)
        return result.labels

    def predict_labels(self, X, centers, fit_weight, n_threads):
        """The bounded assignment of the batch ``X`` to the fitted ``centers`` with
        ``predict="bounded"``: the fit's bounds times ``m / fit_weight`` (``m`` the batch's
        rows), the lower rounded down and the upper up, so that they hold whenever the
        fit's did; ``None`` with ``predict="nearest"``."""
        if not self.predicts_batches:
            return None
        m = X.shape[0]
        # (a relative margin for the rounding of the division, as the fit's bounds have:
        # a share that is a whole number is not rounded outwards)
        lower = None if self.size_min is None else math.floor(
            self.size_min * m / fit_weight * (1 + 1e-12))
        upper = None if self.size_max is None else math.ceil(
            self.size_max * m / fit_weight * (1 - 1e-12))
        return balanced_assignment(X, np.ones(m, dtype=X.dtype), centers, lower, upper,
                                   n_threads=n_threads).labels
