"""Schedules: which samples each iteration works on, and when a fit stops."""
import math
from numbers import Integral, Real

import numpy as np

from .._engine.assignment import QUANTIZATION_ERROR
from .._engine.constraints import Interval, Options
from .._engine.contracts import Schedule
from ..seeding.many_clusters import MANY_CLUSTERS, PARALLEL_ROWS_PER_CLUSTER

__all__ = ["FullBatch", "MiniBatch", "SBEDecay"]


#: ``center_tol`` of :class:`FullBatch` and :class:`MiniBatch` (or ``None``).
_CENTER_TOL = Interval(Real, 0, finite=True)

#: A full-batch fit's seeding looks at ``max(_FULL_SEEDING_ROWS, r C)`` rows at most, with
#: ``r = _full_seeding_per_centre(D)`` (:meth:`FullBatch.seeding_rows`; the defaults page has
#: the measurements).
_FULL_SEEDING_ROWS = 2**13
#: Below this ``N C D`` every schedule's seeding looks at all rows: it takes well under a
#: second, and on small data a sample loses separated clusters for nothing.
_ALL_ROWS_WORK = 2**27


def _full_seeding_per_centre(n_features):
    """Rows per centre of a full-batch seeding: 64 up to 32 features, ``64 (32 / D)^1.5``
    above, 8 from 128 on. Wide rows make a k-means++ step cost more against an iteration's
    matrix products, and on wide data the seeds decide less of the final error (8 rows per
    centre ended within 0.25 % of all rows on MNIST and on embeddings with 128 and 384
    features, where 32 features needed 64)."""
    return min(64, max(8, int(64 * (32 / max(1, n_features)) ** 1.5)))


def _seeding_rows(n_samples, n_clusters, n_features, rows):
    """``rows`` (at most ``n_samples``), or all rows for a seeding of little work."""
    if n_samples * n_clusters * n_features <= _ALL_ROWS_WORK:
        return n_samples
    return min(n_samples, rows)


class FullBatch(Schedule):
    """Every iteration uses all (reduced) samples; stop on the objective's relative change.

    The batch EM of the papers: iterate until ``|F_t - F_{t-1}| <= tol |F_t|`` (Hirschberger,
    Forster & Lücke, Suppl. F) or ``max_iter`` iterations.

    Parameters
    ----------
    kmeans_objective : {"qe", "free_energy"}, default="qe"
        What the rule compares when the objective is the quantization error (hard fits).
        ``"qe"``: the quantization error itself. ``"free_energy"``: the k-means free energy
        ``-sum_n w_n [log C + (D/2) log(2 pi e sigma2)]`` with
        ``sigma2 = QE / (D sum_n w_n)`` (Lücke & Forster 2017), the rule the vc-GMM paper
        applies to k-means. Its relative change is about that of the quantization error times
        ``(D/2) / |log C + (D/2) log(2 pi e sigma2)|``, usually much smaller, so hard fits
        stop sooner; unlike the quantization error's, it depends on the units of the data.
        Soft fits always compare their own free energy.
    center_tol : float or None, default=None
        Also stop when the centres moved by at most this fraction of their norm,
        ``||C_t - C_{t-1}||_F <= center_tol ||C_{t-1}||_F`` (in the centred coordinates the
        fit runs in): the "modes no longer change" rule of Laplacian K-modes (the SLK
        presets use ``1e-3``). ``None``: the objective's rule only.

    Notes
    -----
    Yields ``slice(0, n_samples)`` (all rows, a view), so no data are copied. Keeps no state.

    Examples
    --------
    >>> from clusterkit import FullBatch
    >>> batches = FullBatch().batches(5, state=None)
    >>> next(batches)
    slice(0, 5, None)
    """

    full_batch = True
    streams = True
    chunk_batches = True
    accepts_sparse = True  # batches are rows; it never reads X
    _parameter_constraints = {"kmeans_objective": [Options("qe", "free_energy")],
                              "center_tol": [_CENTER_TOL, None]}

    def __init__(self, kmeans_objective="qe", center_tol=None):
        self.kmeans_objective = kmeans_objective
        self.center_tol = center_tol

    def seeding_rows(self, n_samples, n_clusters, n_features):
        """``max(8192, r n_clusters)`` rows, all of them if ``N C D <= 2^27``, with ``r``
        rows per centre: 64 up to 32 features, ``64 (32 / D)^1.5`` above, 8 from 128 on; at
        least 32 from 1,000 clusters on where the data have 32 rows per cluster (the default
        seeding is then k-means||, :class:`~clusterkit.ByClusters`). Greedy k-means++ costs
        ``2 + ln C`` passes over what it seeds on, at a slower rate than an iteration's
        products, so on all rows of large data it takes longer than all the iterations; on
        64 rows per centre the iterations end within about 0.3 % of a seeding of all rows at
        32 features, on 8 within 0.25 % on MNIST and on embeddings with 128 and 384 features
        (the defaults page has the measurements)."""
        per_centre = _full_seeding_per_centre(n_features)
        if n_clusters >= MANY_CLUSTERS and n_samples >= PARALLEL_ROWS_PER_CLUSTER * n_clusters:
            # (k-means||'s passes run at a matrix product's speed, and its candidates need
            # these rows behind their weights)
            per_centre = max(per_centre, PARALLEL_ROWS_PER_CLUSTER)
        return _seeding_rows(n_samples, n_clusters, n_features,
                             max(_FULL_SEEDING_ROWS, per_centre * n_clusters))

    def stream_schedule(self):
        """A stream of full batches is mini-batch k-means: :class:`MiniBatch` with its
        defaults (Sculley's running means; each batch a full batch of the rows seen so far
        would replace the centres by that batch's means, forgetting the stream). Its own
        parameters choose when a fit stops, which a stream's caller decides."""
        return MiniBatch()

    def batches(self, n_samples, state):
        """Yield all rows, forever (``max_iter`` and :meth:`should_stop` end the run)."""
        while True:
            yield slice(0, n_samples)

    def should_stop(self, state, tol):
        """The default rule (:meth:`Schedule.should_stop`), on the k-means free energy if
        ``kmeans_objective="free_energy"``; or the centres' rule if ``center_tol`` is set."""
        history = state.run.history
        if _centers_settled(state, self.center_tol):
            return True
        if (self.kmeans_objective == "qe" or len(history) < 2
                or state.config.objective != QUANTIZATION_ERROR):
            return super().should_stop(state, tol)
        f_new = _kmeans_free_energy(history[-1], state)
        f_old = _kmeans_free_energy(history[-2], state)
        return abs(f_new - f_old) <= tol * abs(f_new)


def _kmeans_free_energy(entry, state):
    """The k-means free energy per unit of sample weight of a history entry, with the k-means
    variance ``sigma2 = QE / (D sum w)`` (clamped at ``sigma2_floor``; Lücke & Forster 2017);
    in a full batch the total weight is the same every step, so it cancels from the relative
    change."""
    config = state.config
    sigma2 = max(entry["qe"] / (config.n_features * entry["weight"]), config.sigma2_floor)
    return -(math.log(config.n_clusters)
             + 0.5 * config.n_features * math.log(2 * math.pi * math.e * sigma2))


class MiniBatch(Schedule):
    """Sculley's mini-batch k-means: random batches, running means, an early stop.

    Every step draws ``batch_size`` rows at random (with replacement, as scikit-learn's
    ``MiniBatchKMeans`` since 1.9: a duplicate is rare when the batch is much smaller than
    the data, and the draw costs ``O(batch_size)``), assigns them with the current centres
    and adds them to the centres' running sums: each centre is the mean of every sample ever
    assigned to it, a sample counted at every visit (Sculley 2010; Newling & Fleuret 2016,
    Alg. 4; the M-step rule ``center_update = "running"``).

    Parameters
    ----------
    batch_size : int, default=1024
        Rows per step (all rows if larger than the data).
    max_passes : float, default=10.0
        Budget: the run ends after this many passes over the data, ``> 0``. ``inf`` leaves
        the end to the early stop and the estimator's ``max_iter``, which counts passes too.
    max_no_improvement : int or None, default=10
        Early stop (scikit-learn's ``MiniBatchKMeans`` rule): stop when this many steps in a
        row did not lower the smoothed batch objective below its lowest value so far by more
        than the estimator's ``tol`` relative to it. The smoothed objective is an
        exponentially weighted average of the batch objective per unit of weight, weight
        ``min(1, 2 batch_size / (n_samples + 1))`` on the newest batch (the first step,
        whose objective is at the seeds, is left out); a batch objective at rounding level
        (at most ``state.config.qe_resolution_per_weight``) counts as zero. ``None`` disables it.
    center_tol : float or None, default=None
        Also stop when a step moved the centres by at most this fraction of their norm,
        ``||C_t - C_{t-1}||_F <= center_tol ||C_{t-1}||_F`` (as :class:`FullBatch`).
    reassignment_ratio : float, default=0.01
        Every ``min(100 n_clusters, n_samples)`` rows (a *window*; ``100 n_clusters`` in a
        ``partial_fit`` stream), a centre placed before the window began is *starved* if
        its cluster collected at most this ratio times an average cluster's share of the
        window's weight (0: no vote at all); it is moved onto a sample of the current batch
        drawn by D^2 sampling. See the Notes.
    sampling : {"uniform", "weighted"}, default="uniform"
        ``"uniform"``: every row equally likely, counting with its weight. ``"weighted"``:
        rows drawn with probability proportional to their weight, each then counting with
        the mean weight (scikit-learn 1.9's batches): the same expected batch statistics,
        with less variance when a few rows carry most of the weight.
    learning_rate : {"count", "adaptive"}, default="count"
        ``"count"``: Sculley's running means (rate ``1 / v(j)`` after ``v(j)`` votes).
        ``"adaptive"``: the rate ``sqrt(W_j / W)`` of the batch's share of the cluster
        (Schwartzman 2023; M-step rule ``"adaptive"``), which does not decay, so the centres
        keep following the batches.

    Notes
    -----
    Cost per step ``batch_size x C`` distance evaluations with :class:`FullEStep`; with
    :class:`ElkanEStep` the bounds of revisited samples skip some, and
    :class:`PartialEStep` searches ``G`` neighbourhoods instead of all ``C`` centres. Works
    with coresets (the batches are drawn from the coreset's rows, with its weights).

    The run's iterations are passes over the data (``n_iter_``, rounded up, and
    ``max_iter``, as scikit-learn's epochs); ``n_steps_`` counts batches. The run makes as
    many batches as fit into ``min(max_passes, max_iter)`` passes, ``floor(passes N /
    batch_size)``, as scikit-learn. The early stop and ``center_tol`` end a run as
    converged, the budget without a warning.

    Starved centres, compared with scikit-learn's ``reassignment_ratio``, which moves every
    centre whose count is below that ratio of the largest count, every ``10 C`` rows and at
    every step while some count is zero, onto uniformly drawn samples: here a centre is
    judged by the weight it collected in the last window (a centre that lost its cluster is
    found even if it had many votes before, and one moved recently is not compared with
    counts accumulated over the whole run), only once it had a whole window, long enough
    for an average cluster to expect 100 votes (so with ``C`` larger than the batch,
    centres that no batch reached yet are not moved, and a small real cluster is rarely
    taken for a starved one), against an average share (not the largest cluster's), and it
    moves to where the batch's error is large (D^2 sampling) rather than to a uniform
    sample. The documentation's mini-batch page has the measurements.

    Examples
    --------
    >>> from clusterkit import Clusterer, MiniBatch
    >>> Clusterer(8, schedule=MiniBatch(batch_size=256)).schedule  # doctest: +NORMALIZE_WHITESPACE
    MiniBatch(batch_size=256, max_passes=10.0, max_no_improvement=10, center_tol=None,
              reassignment_ratio=0.01, sampling='uniform', learning_rate='count')
    """

    streams = True
    accepts_sparse = True  # batches are rows; it never reads X
    _parameter_constraints = {
        "batch_size": [Interval(Integral, 1)],
        # inf: until the early stop or max_iter passes
        "max_passes": [Interval(Real, 0, closed="neither")],
        "max_no_improvement": [Interval(Integral, 1), None],
        "center_tol": [_CENTER_TOL, None],
        "reassignment_ratio": [Interval(Real, 0, finite=True)],
        "sampling": [Options("uniform", "weighted")],
        "learning_rate": [Options("count", "adaptive")],
    }

    def __init__(self, batch_size=1024, max_passes=10.0, max_no_improvement=10,
                 center_tol=None, reassignment_ratio=0.01, sampling="uniform",
                 learning_rate="count"):
        self.batch_size = batch_size
        self.max_passes = max_passes
        self.max_no_improvement = max_no_improvement
        self.center_tol = center_tol
        self.reassignment_ratio = reassignment_ratio
        self.sampling = sampling
        self.learning_rate = learning_rate

    @property
    def center_update(self):
        """``"running"``, or ``"adaptive"`` with ``learning_rate="adaptive"``."""
        return "adaptive" if self.learning_rate == "adaptive" else "running"

    @property
    def chunk_batches(self):
        """Uniform batches can be read from row chunks (weighted ones need all weights)."""
        return self.sampling == "uniform"

    chunks_refusal = property(lambda self: "" if self.chunk_batches else "it needs all weights")

    def stream_schedule(self):
        """Itself, every parameter honoured or refused: a ``partial_fit`` stream steps
        through each call's rows in batches of ``batch_size`` (:meth:`stream_batches`),
        combines them by ``learning_rate`` and moves starved centres by
        ``reassignment_ratio`` (windows of ``100 n_clusters`` rows); ``max_no_improvement``
        and ``center_tol`` say after each call whether a fit would have stopped
        (``converged_``), and a stream visits every row once, within any ``max_passes >=
        1``. ``ValueError`` for ``max_passes < 1`` (a fraction of a stream of unknown size)
        and ``sampling="weighted"`` (rows drawn from all the data by weight)."""
        if self.sampling == "weighted":
            raise ValueError("sampling='weighted' draws each batch's rows in proportion to "
                             "their weight from all the data; a partial_fit stream takes "
                             "the caller's rows. Use sampling='uniform' (each row counts "
                             "with its weight), or fit.")
        if self.max_passes < 1:
            raise ValueError(f"max_passes={self.max_passes!r} stops a fit within its first "
                             "pass over the data, a fraction of a stream whose size is "
                             "unknown; a partial_fit stream visits every row once. Use "
                             "max_passes >= 1, or stop calling partial_fit.")
        return self

    def seeding_rows(self, n_samples, n_clusters, n_features):
        """``max(3 batch_size, r n_clusters)`` rows (all if ``N C D <= 2^27``), ``r`` a quarter
        of :meth:`FullBatch.seeding_rows`' per centre, at least 3 (scikit-learn's
        ``init_size``): 16 up to 32 features, where 3 end about 8 % higher, 3 from 128 on,
        where wide rows cost more and decide less (the defaults page has the numbers)."""
        per_centre = max(3, _full_seeding_per_centre(n_features) // 4)
        return _seeding_rows(n_samples, n_clusters, n_features,
                             max(3 * int(self.batch_size), per_centre * n_clusters))

    def stream_batches(self, n_rows):
        """Consecutive batches of ``batch_size`` rows (the last one shorter), in the caller's
        order."""
        size = int(self.batch_size)
        return [slice(start, min(start + size, n_rows)) for start in range(0, n_rows, size)]

    def buffer_bytes(self, n_samples, n_features, n_clusters, dtype, composition):
        """The rows' cumulative weights (float64) for weighted sampling, and the batch's
        rows (indices and a copy)."""
        size = min(int(self.batch_size), n_samples)
        return ((n_samples * 8 * 2 if self.sampling == "weighted" else 0)
                + size * (8 + (n_features + 1) * dtype.itemsize))

    def init_state(self, X, sample_weight, centers, state):
        """The smoothed objective of the early stop, the starved rule's setting and, for
        weighted sampling, the rows' cumulative weights."""
        state.run.channel.reassignment_ratio = float(self.reassignment_ratio)
        # an average cluster expects 100 votes per window (or a pass's worth): few real,
        # small clusters are then mistaken for starved ones (10 C rows moved hundreds of
        # healthy centres per pass at C = 1024, each move undoing what it had learnt)
        window = 100 * state.config.n_clusters
        if not state.config.streaming:
            window = min(window, X.shape[0])
        state.run.channel.reassignment_window = window
        n_samples = X.shape[0]
        size = min(int(self.batch_size), n_samples)
        cumulative = mean_weight = None
        if self.sampling == "weighted":  # (uniform batches read no weights: data in chunks)
            weight = sample_weight.astype(np.float64)
            cumulative = np.cumsum(weight)
            cumulative /= cumulative[-1]
            mean_weight = float(weight.mean())
        return _MiniBatchRun(smoothing=min(1.0, 2.0 * size / (n_samples + 1)),
                             cumulative=cumulative, mean_weight=mean_weight)

    def batches(self, n_samples, state):
        """Random batches while one more fits into the budget, ``max_passes`` or the
        estimator's ``max_iter`` passes (at least one batch): rows drawn uniformly (or in
        proportion to their weight) with replacement, in increasing order; all rows if
        ``batch_size`` is at least the data's."""
        size = min(int(self.batch_size), n_samples)
        cumulative = state.run.schedule_state.cumulative
        draw = state.random_state
        max_iter = state.config.max_iter
        passes = min(self.max_passes, math.inf if max_iter is None else max_iter)
        while not state.run.history or state.run.n_samples_seen + size <= passes * n_samples:
            if size == n_samples and cumulative is None:
                yield slice(0, n_samples)
            elif cumulative is None:
                yield np.sort(draw.randint(n_samples, size=size))
            else:  # (the search can only pass the end by rounding of the last sum)
                rows = np.searchsorted(cumulative, draw.random_sample(size), side="right")
                yield np.sort(np.minimum(rows, n_samples - 1))

    def batch_weight(self, sample_weight, rows, state):
        """The rows' weights; the mean weight for every row with ``sampling="weighted"``."""
        if state.run.schedule_state.cumulative is None:
            return sample_weight[rows]
        return np.full(len(rows), state.run.schedule_state.mean_weight, sample_weight.dtype)

    def n_iter(self, state):
        """Passes over the data so far."""
        return state.run.n_passes

    def should_stop(self, state, tol):
        """``center_tol``, or the early stop on the smoothed batch objective (see the
        parameters)."""
        if _centers_settled(state, self.center_tol):
            return True
        run, entry = state.run.schedule_state, state.run.history[-1]
        if len(state.run.history) < 2 or self.max_no_improvement is None or entry["weight"] <= 0:
            return False  # the first step's objective is at the seeds
        value = entry["objective"] / entry["weight"]
        config = state.config
        if config.objective == QUANTIZATION_ERROR and value <= config.qe_resolution_per_weight:
            # (rounding noise, which E-steps that round distances differently make unequal:
            # it counts as zero, as in Schedule.should_stop)
            value = 0.0
        run.smoothed = (value if run.smoothed is None
                        else run.smoothed + run.smoothing * (value - run.smoothed))
        if run.lowest is None or run.smoothed < run.lowest - tol * abs(run.lowest):
            run.lowest, run.stalled = run.smoothed, 0
        else:
            run.stalled += 1
        return run.stalled >= self.max_no_improvement


class _MiniBatchRun:
    """Per-run state of :class:`MiniBatch`."""

    def __init__(self, smoothing, cumulative, mean_weight):
        self.smoothing = smoothing
        self.cumulative = cumulative  # of the rows' weights, for weighted sampling
        self.mean_weight = mean_weight
        self.smoothed = self.lowest = None
        self.stalled = 0


def _centers_settled(state, center_tol):
    """Whether the last step moved the centres by at most ``center_tol`` of their norm."""
    return (center_tol is not None and bool(state.run.history)
            and math.sqrt(float(np.dot(state.run.center_shift, state.run.center_shift)))
            <= center_tol * state.run.center_norm)


class SBEDecay(Schedule):
    """Stochastic backward Euler (SBE; Yin, Pham, Oberman & Osher 2018): implicit gradient
    steps on the k-means objective with a decaying step size.

    Each step (an *outer* step ``k``) solves the backward Euler step ``x^{k+1} = x^k - gamma
    grad f(x^{k+1})`` for ``f(x) = (1/2N) sum_i min_j ||p_i - x_j||^2`` by ``inner_iter``
    stochastic fixed-point iterations ``y <- x^k - gamma g(y)``, each on a fresh uniform batch
    of ``batch_size`` rows (``g`` the batch's gradient at ``y``), and returns the
    forward-looking average ``z <- averaging z + (1 - averaging) y`` of the iterates (``z = y
    = x^k`` at the start). Then ``gamma <- decay gamma``. The run ends after ``outer_iter``
    outer steps (the paper's fixed budget; ``max_iter`` counts outer steps too). The implicit
    update is the M-step rule ``center_update = "backward_euler"`` (:class:`HardMStep`);
    this schedule owns the batches, the step size and its decay.

    Divergence guard: the fixed-point map expands when ``gamma |C_j ∩ B| / m > 1``. If the
    mean batch objective of an inner iteration exceeds 1000 times that at the outer step's
    start (or is not finite), the M-step abandons the outer step and returns ``x^k``; the
    history entry says ``"diverged": True`` and the schedule repeats the outer step with
    ``gamma`` halved (not counted in ``outer_iter``).

    Parameters
    ----------
    batch_size : int, default=1000
        Rows per inner iteration, drawn uniformly without replacement (all rows, in order,
        if larger than the data: a noise-free backward Euler step).
    step : float or None, default=None
        The initial step size ``gamma_0 > 0``; ``None`` means ``gamma_0 = K``, about the
        inverse Lipschitz constant of ``grad f`` for balanced clusters (the paper asks for
        an aggressive first step).
    decay : float, default=0.95
        ``gamma`` is multiplied by it after each outer step, in ``(0, 1]``.
    averaging : float, default=0.75
        Weight of the previous average in the forward-looking average, in ``[0, 1)``; 0
        returns the last iterate.
    inner_iter : int, default=10
        Fixed-point iterations (batches) per outer step, ``>= 1``.
    outer_iter : int, default=100
        Outer steps, ``>= 1``.
    polish_iter : int, default=0
        Lloyd steps on all rows after the outer steps, ``>= 0``, ending early at a fixed
        point: the limit ``gamma -> inf`` of the backward Euler step for a fixed assignment
        (each centre moves to the mean of its samples). 0, the paper's setting, returns the
        raw SBE centres; the decaying step freezes them near, not at, a local minimum (on
        MNIST about 0.15 % above it, see the documentation's SBE page).

    Notes
    -----
    Each history entry is one outer step: ``"objective"`` is the weighted quantization
    error of its first batch at ``x^k`` (so ``objective / (2 weight)`` is ``f`` estimated on
    that batch; on all the data when ``batch_size >= N``), ``"step_size"`` the ``gamma`` it
    used (``inf`` for a polishing Lloyd step), ``"outer_step"`` its number (counting on
    through the polishing steps), ``"diverged"`` whether it was abandoned. The
    formulas of the paper's text are partly lost; this is the reconstruction of the
    documentation's SBE page. Cost: ``outer_iter x inner_iter x batch_size x K`` distance
    evaluations with :class:`FullEStep`.

    Examples
    --------
    >>> from clusterkit import Clusterer, SBEDecay
    >>> Clusterer(3, schedule=SBEDecay(batch_size=30)).schedule  # doctest: +NORMALIZE_WHITESPACE
    SBEDecay(batch_size=30, step=None, decay=0.95, averaging=0.75, inner_iter=10,
             outer_iter=100, polish_iter=0)
    """

    center_update = "backward_euler"
    _parameter_constraints = {
        "batch_size": [Interval(Integral, 1)],
        "step": [Interval(Real, 0, closed="neither", finite=True), None],
        "decay": [Interval(Real, 0, 1, closed="right")],
        "averaging": [Interval(Real, 0, 1, closed="left")],
        "inner_iter": [Interval(Integral, 1)],
        "outer_iter": [Interval(Integral, 1)],
        "polish_iter": [Interval(Integral, 0)],
    }

    def __init__(self, batch_size=1000, step=None, decay=0.95, averaging=0.75, inner_iter=10,
                 outer_iter=100, polish_iter=0):
        self.batch_size = batch_size
        self.step = step
        self.decay = decay
        self.averaging = averaging
        self.inner_iter = inner_iter
        self.outer_iter = outer_iter
        self.polish_iter = polish_iter

    def batches(self, n_samples, state):
        """Outer steps, each a list of ``inner_iter`` batches, with the step size in
        ``state.run.channel.step_size`` (halved and repeated after a divergence)."""
        size = min(int(self.batch_size), n_samples)
        gamma = float(state.config.n_clusters if self.step is None else self.step)
        channel = state.run.channel
        channel.averaging = float(self.averaging)
        outer = 0
        while outer < self.outer_iter:
            channel.step_size = gamma
            state.run.step_info.update(step_size=gamma, outer_step=outer + 1, diverged=False)
            yield [slice(0, n_samples) if size == n_samples
                   else np.sort(state.random_state.choice(n_samples, size, replace=False))
                   for _ in range(int(self.inner_iter))]
            if state.run.history[-1].get("diverged", False):
                gamma /= 2
            else:
                outer += 1
                gamma *= self.decay
        channel.step_size = math.inf
        for polish in range(int(self.polish_iter)):
            state.run.step_info.update(step_size=math.inf, outer_step=outer + polish + 1,
                                       diverged=False)
            yield [slice(0, n_samples)]

    def should_stop(self, state, tol):
        """At a fixed point of the polishing Lloyd steps (no label changed); the budget of
        outer steps ends the run otherwise."""
        return (state.run.channel.step_size == math.inf and len(state.run.history) >= 2
                and state.run.history[-2]["step_size"] == math.inf and state.run.n_changed == 0)
