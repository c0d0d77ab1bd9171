"""Per-fit state that the driver hands to every strategy call."""
import time
from contextlib import contextmanager

import numpy as np

from .assignment import QUANTIZATION_ERROR
from .progress import QUIET

__all__ = ["Channel", "FitState"]

COST_PHASES = ("seeding", "reduction", "estep", "labels")
TIME_PHASES = ("reduction", "seeding", "estep", "mstep", "labels")


class FitState:
    """Everything one fit shares between its strategies.

    Created by :class:`~clusterkit.Clusterer` at the start of ``fit``; a custom strategy reads
    the attributes below and records its work with :meth:`count`.

    Attributes
    ----------
    n_clusters : int
    n_features : int
    random_state : numpy.random.RandomState
        The only source of randomness of the fit.
    n_threads : int
        Number of OpenMP threads every kernel is called with.
    max_iter : int or None
        The estimator's ``max_iter``: the driver ends a run once ``Schedule.n_iter`` reaches
        it; a schedule whose iteration spans several steps (a pass of mini-batches) may end
        its batches before a step would cross it. ``None``: no limit.
    streaming : bool
        Whether this is a ``partial_fit`` stream: the caller chooses the batches, every
        batch's rows are new samples (``n_samples`` is the current batch's size) and the
        size of the data is unknown.
    needs_resp : bool
        Whether the M-step needs responsibilities (:attr:`MStep.needs_resp`).
    objective : Objective
        What the fit optimises (:attr:`MStep.objective`).
    center_update : str
        How the M-step combines batches (:attr:`Schedule.center_update`).
    strict_convergence : bool
        An exact E-step (:attr:`EStep.exact`) with an M-step whose centres are the means of
        the current labels under the schedule's rule (:attr:`MStep.fixed_point_rules`): a
        full batch in which no label changed is a fixed point.
    fuse_sums : bool
        Whether the M-step reads the per-cluster sums an E-step can compute in its own pass
        over the batch (``Assignment.centers_sum``); set by the M-step's ``init_state``.
    sigma2 : float or None
        Shared variance of a Gaussian-mixture fit, written by the strategies that own it
        (the first soft E-step, vc-GMM eq. 12, then the soft M-step); ``None`` otherwise. It
        means nothing else.
    sigma2_floor : float
        Smallest variance allowed: ``eps B / D`` (``eps`` float64's machine epsilon, ``B``
        the squared diagonal of the bounding box of all the given rows), at least the
        dtype's smallest normal number (see :func:`variance_floor`).
    qe_resolution : float
        Quantization error indistinguishable from zero at the fit's precision: the dtype's
        machine epsilon times the total sample weight times the mean squared norm of the
        (centred) data the fit runs on. A quantization error below it is rounding noise
        (see ``Schedule.should_stop``).
    seed_labels : ndarray of shape (n_samples,) or None
        Index of each sample's nearest seed, if the seeder computed it on the data the fit
        runs on (k-means++ does, as a by-product); E-steps may start from it.
    n_samples : int
        Rows of the (reduced) data the run works on.
    rows : slice or ndarray of int
        The rows of the current batch (what ``Schedule.batches`` yielded, or one batch of
        the list it yielded).
    inner_step, n_inner_steps : int
        Which inner step of the current step runs (0-based) and how many the step has (1
        unless the schedule yielded a list of batches, see ``Schedule.batches``).
    step_info : dict
        Entries to add to the current step's history record (e.g. a schedule's step size,
        an M-step's note that it restarted); emptied before the schedule chooses the step.
    channel : Channel
        What a schedule and its M-step's batch rule tell each other (see :class:`Channel`);
        new for every run.
    labels : ndarray of shape (n_samples,), dtype=int32
        Every sample's label from the last step that visited it, ``-1`` before its first
        visit; the driver updates it after each E-step, so during an E-step it still holds
        the previous labels.
    n_changed : int
        Samples of the last batch whose label differs from their previous visit (a first
        visit counts as a change).
    n_relocated : int
        Clusters the last M-step moved to a new position by relocating them onto a sample
        (an empty or starved cluster, see
        :func:`~clusterkit.mstep.batch_rules.relocate_empty_clusters`)
        rather than to the mean of its samples: such a step is no fixed point even if no
        label changed (the moved centres are not yet in any label). Written by the
        relocation rules, 0 before the first M-step.
    center_shift : ndarray of shape (n_clusters,), dtype=float64
        Euclidean distance each centre moved in the last M-step (zeros before the first).
    center_norm : float
        Frobenius norm of the centres before the last M-step (in the centred coordinates the
        fit runs in), the scale of ``center_shift`` (0 before the first step).
    n_samples_seen : int
        Rows visited by the run's steps so far (``n_passes = n_samples_seen / n_samples``).
    order : ndarray of shape (n_samples,), dtype=intp, or None
        The order of the rows every run of the fit works in (``Schedule.order``; the
        centred copy of the data is made in it); ``None``: the data's.
    estep_state, mstep_state, schedule_state : object or None
        What the E-step's, the M-step's and the schedule's ``init_state`` hooks returned:
        their own per-run state, read by no other strategy.
    cost : dict
        Distance evaluations per phase, keys ``"seeding"``, ``"reduction"``, ``"estep"``,
        ``"labels"``, and ``"refinement"`` once a refiner counted some.
    seconds_by_phase : dict
        Wall time per phase, keys ``"reduction"``, ``"seeding"``, ``"estep"``, ``"mstep"``,
        ``"labels"``, and any other phase :meth:`timed` measured (see there).
    refinement_log : list of dict
        The current run's refinement rounds (see :class:`~clusterkit.Refiner`).
    history : list of dict
        One entry per step (see ``Clusterer.history_``).
    display : object
        Where :meth:`timed`, :meth:`phase` and :meth:`progress` go: the driver's progress
        display of a verbose fit, a display that shows nothing otherwise. Strategies never
        print; they report through these methods.
    """

    def __init__(self, *, n_clusters, n_features, random_state, n_threads=1, max_iter=None,
                 needs_resp=False, objective=QUANTIZATION_ERROR, center_update="replace",
                 strict_convergence=False, sigma2_floor=0.0, qe_resolution=0.0):
        self.n_clusters = n_clusters
        self.n_features = n_features
        self.max_iter = max_iter
        self.streaming = False
        self.random_state = random_state
        self.n_threads = n_threads
        self.needs_resp = needs_resp
        self.objective = objective
        self.center_update = center_update
        self.strict_convergence = strict_convergence
        self.fuse_sums = False
        self.sigma2_floor = sigma2_floor
        self.qe_resolution = qe_resolution
        self.cost = dict.fromkeys(COST_PHASES, 0)
        self.seconds_by_phase = dict.fromkeys(TIME_PHASES, 0.0)
        self.display = QUIET
        self.order = None
        self._start = time.perf_counter()
        self.start_run(0)

    #: What a run's iterations leave in the state (reset by :meth:`start_iterations`): a
    #: refinement keeps these of the iterations whose centres it returns.
    ITERATION_RECORDS = ("sigma2", "seed_labels", "estep_state", "mstep_state",
                         "schedule_state", "fuse_sums", "channel", "history", "n_samples_seen",
                         "center_shift", "_centers_before", "_center_norm", "n_samples",
                         "rows", "labels", "n_changed", "n_relocated", "inner_step",
                         "n_inner_steps", "step_info")

    def start_run(self, n_samples):
        """Forget everything of the previous run (its refinement log and what
        :meth:`start_iterations` forgets); the data, costs, random stream and clock carry
        on."""
        self.refinement_log = []
        self.start_iterations(n_samples)

    def start_iterations(self, n_samples):
        """Forget the previous iterations (history, variance, labels, seeding labels, the
        strategies' states and the channel) and prepare the per-sample records of
        ``n_samples`` rows: when a run starts, and before each of a refiner's ``iterate``
        calls."""
        self.sigma2 = None
        self.seed_labels = None
        self.estep_state = self.mstep_state = self.schedule_state = None
        self.channel = Channel()
        self.history = []
        self.n_samples_seen = 0
        self.center_shift = np.zeros(self.n_clusters)
        self.center_norm = 0.0
        self.start_rows(n_samples)

    def iteration_records(self):
        """The :data:`ITERATION_RECORDS` as they are now (references, not copies: the next
        :meth:`start_iterations` replaces them rather than changing them)."""
        return {name: getattr(self, name) for name in self.ITERATION_RECORDS}

    def restore_iterations(self, records):
        """Make ``records`` (from :meth:`iteration_records`) the current iterations."""
        for name, value in records.items():
            setattr(self, name, value)

    def start_rows(self, n_samples):
        """Per-sample records for ``n_samples`` new rows (every label ``-1``): at the start of
        a run, and for each batch of a ``partial_fit`` stream, whose rows are new samples."""
        self.n_samples = n_samples
        self.rows = slice(0, n_samples)
        self.labels = np.full(n_samples, -1, dtype=np.int32)
        self.n_changed = n_samples
        self.n_relocated = 0
        self.inner_step, self.n_inner_steps = 0, 1
        self.step_info = {}

    def record_step(self, labels, centers, centers_new):
        """After a step on ``self.rows``: count and store the changed labels, measure how far
        every centre moved.

        Parameters
        ----------
        labels : ndarray of shape (n_batch,), dtype=int32
            The step's labels, in batch order.
        centers, centers_new : ndarray of shape (n_clusters, n_features)
            The centres before and after the M-step.
        """
        previous = self.labels[self.rows]
        self.n_changed = int(np.count_nonzero(previous != labels))
        self.labels[self.rows] = labels
        self.n_samples_seen += labels.shape[0]
        # only the centres that moved (a mini-batch step moves those its batch reached)
        moved = np.flatnonzero(np.any(centers_new != centers, axis=1))
        shift = centers_new[moved].astype(np.float64) - centers[moved]
        self.center_shift[:] = 0.0
        self.center_shift[moved] = np.sqrt(np.einsum("ij,ij->i", shift, shift))
        self._centers_before, self._center_norm = centers, None

    @property
    def center_norm(self):
        """Frobenius norm of the centres before the last M-step (in the centred coordinates
        the fit runs in), the scale of ``center_shift``; computed when first read."""
        if self._center_norm is None:
            self._center_norm = float(np.sqrt(np.einsum(
                "ij,ij->", self._centers_before, self._centers_before, dtype=np.float64)))
        return self._center_norm

    @center_norm.setter
    def center_norm(self, value):
        self._centers_before, self._center_norm = None, float(value)

    @contextmanager
    def timed(self, phase):
        """Add the wall time of the ``with`` block to ``seconds_by_phase[phase]``; a verbose
        fit shows that the phase runs (see :meth:`phase`)."""
        start = time.perf_counter()
        self.display.enter(phase)  # (as phase() does, without a second context manager)
        try:
            yield
        finally:
            self.display.leave(phase)
            self.seconds_by_phase[phase] = (self.seconds_by_phase.get(phase, 0.0)
                                            + time.perf_counter() - start)

    @contextmanager
    def phase(self, phase):
        """Mark the ``with`` block as the phase ``phase`` for the progress display, without
        timing it: while it runs, a verbose fit shows a line (or refreshes a bar) whenever
        nothing was shown for a while, with the phase's last :meth:`progress` report."""
        self.display.enter(phase)
        try:
            yield
        finally:
            self.display.leave(phase)

    def progress(self, phase, done, total, unit=None):
        """Report progress of a long phase (e.g. a seeder's centres chosen so far).

        The driver's display shows the last report of the running phase when ``verbose``
        is on (a line at most every few seconds, or a bar); strategies never print
        themselves. Cheap enough to call after every unit of work.

        Parameters
        ----------
        phase : str
            The name shown, usually the running phase's (``"seeding"``, ``"reduction"``,
            ``"graph"``, ...).
        done : int or ndarray of shape (1,), dtype=int64
            Work done so far, in the phase's own units; or, for work done inside one long
            kernel call, a one-element array that the kernel updates as it goes (report it
            before the call: the display reads it whenever it shows the phase).
        total : int
            Work in all, in the same units.
        unit : str or None, default=None
            The units' name, e.g. ``"centres"`` or ``"rows"``.
        """
        self.display.report(phase, done, total, unit)

    def in_data_order(self, values):
        """Per-row ``values`` of the run (in ``order``) in the order of the data."""
        if self.order is None or values is None:
            return values
        out = np.empty_like(values)
        out[self.order] = values
        return out

    @property
    def at_fixed_point(self):
        """Whether the last step was over all rows, exact and hard (``strict_convergence``)
        and either changed no label and relocated no cluster (the M-step then recomputed the
        same centres) or moved no centre at all (the next step would find the same labels, as
        scikit-learn's ``KMeans`` stops on a zero centre shift): ``labels`` are every row's
        nearest final centre. (A relocated centre moved after the E-step: rows near its old or
        new position, zero-weight rows included, may now have another nearest centre.)"""
        return (self.strict_convergence and bool(self.history)
                and ((self.n_changed == 0 and self.n_relocated == 0)
                     or not self.center_shift.any())
                and self.history[-1]["batch_size"] == self.n_samples)

    @property
    def n_passes(self):
        """Passes over the data so far: rows visited divided by ``n_samples``."""
        return self.n_samples_seen / max(self.n_samples, 1)

    def count(self, phase, n_evals):
        """Record distance evaluations.

        Parameters
        ----------
        phase : {"seeding", "reduction", "estep", "labels", "refinement"}
        n_evals : int
            Distance evaluations to add to ``cost[phase]``.
        """
        self.cost[phase] = self.cost.get(phase, 0) + int(n_evals)

    @property
    def n_distance_evals(self):
        """Total distance evaluations so far."""
        return sum(self.cost.values())

    @property
    def seconds(self):
        """Seconds since the fit started."""
        return time.perf_counter() - self._start

    def init_sigma2(self, dist2, sample_weight):
        """Set the initial variance from the first E-step's distances (vc-GMM eq. 12).

        ``sigma2 = sum_n w_n min_c d2_nc / (D sum_n w_n)``, where the minimum runs over the
        clusters the E-step evaluated for sample ``n``.

        Parameters
        ----------
        dist2 : ndarray of shape (n_samples,)
            Squared distance of each sample to the nearest cluster the E-step evaluated.
        sample_weight : ndarray of shape (n_samples,)

        Returns
        -------
        sigma2 : float
            The new ``self.sigma2`` (at least ``sigma2_floor``).
        """
        total = weighted_sum(dist2, sample_weight)
        weight = float(sample_weight.sum(dtype=np.float64))
        self.sigma2 = max(total / (self.n_features * weight), float(self.sigma2_floor))
        return self.sigma2


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


#: The smallest variance of a mixture relative to ``B / D``, the squared diagonal of the
#: data's bounding box per dimension: float64's machine epsilon (see :func:`variance_floor`).
VARIANCE_FLOOR = float(np.finfo(np.float64).eps)


def variance_floor(diagonal2, n_features, dtype):
    """The smallest variance a mixture fit allows (``FitState.sigma2_floor``).

    ``VARIANCE_FLOOR * B / D`` with ``B = diagonal2`` the squared diagonal of the bounding box
    of all the given rows (zero weights included), at least ``dtype``'s smallest normal number
    (constant data). Relative to the data's scale, it means the same for data scaled by
    1e-30 or 1e150 (an absolute floor, as scikit-learn's ``reg_covar=1e-6``, would swamp the
    one and vanish for the other). At the floor every training sample has
    ``d2 / (2 sigma2) <= D / (2 VARIANCE_FLOOR)``, about ``2e15 D``, so its float64
    log-likelihood stays finite (the former floor, relative to the rows the fit ran on,
    reached ``2.2e-308`` on a coreset of one distinct row and gave ``score = -inf``). float64's
    epsilon whatever the dtype: the soft M-step sums in float64 and resolves much smaller
    variances of tight float32 clusters than float32's epsilon would allow.
    """
    return max(VARIANCE_FLOOR * float(diagonal2) / n_features, float(np.finfo(dtype).tiny))


def weighted_sum(values, sample_weight):
    """``sum_n w_n values_n`` accumulated in float64 (the one place this is written)."""
    return float(np.dot(sample_weight.astype(np.float64, copy=False),
                        values.astype(np.float64, copy=False)))
