"""A fit's state as the driver hands it to every strategy call: the fit's configuration
(:class:`FitConfig`, fixed before the first run), its meter (:class:`Meter`: distance
evaluations, seconds, progress) and the current :class:`~clusterkit.Run`, each with its own
lifetime."""
import math
import time
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace

import numpy as np

from .._data.moments import weighted_sum
from .._data.nearest import dist2_to_labels
from .assignment import QUANTIZATION_ERROR
from .progress import QUIET
from .run import Run

__all__ = ["FitConfig", "FitState", "Meter", "free_energy", "log_joint_offset"]

COST_PHASES = ("seeding", "reduction", "estep", "labels")
TIME_PHASES = ("reduction", "seeding", "estep", "mstep", "labels")


@dataclass(frozen=True)
class FitConfig:
    """What a fit is, fixed before its first run (the driver derives it from the composition
    and the data; frozen, so no strategy changes it under another).

    Attributes
    ----------
    n_clusters, n_features : int
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
    constrained_labels : bool
        Whether the E-step's labels obey a constraint (:attr:`EStep.constrained`): the error
        of a set of centres is then that of the run's labels, not of the nearest centres
        (how :class:`~clusterkit.Breathing` judges its rounds).
    fuse_sums : bool
        Whether the M-step reads the per-cluster sums an E-step can compute in its own pass
        over the batch (``Assignment.centers_sum``), as it declares with
        :meth:`MStep.reads_batch_sums`.
    sigma2_floor : float
        Smallest variance allowed: ``eps B / D`` (``eps`` float64's machine epsilon, ``B``
        the squared diagonal of the bounding box of all the given rows), at least the
        dtype's smallest normal number (see :func:`variance_floor`).
    qe_resolution : float
        Quantization error indistinguishable from zero at the fit's precision: the dtype's
        machine epsilon times the total sample weight times the mean squared norm of the
        (centred) data the fit runs on. A quantization error below it is rounding noise
        (see ``Schedule.should_stop``).
    qe_resolution_per_weight : float
        The same per unit of sample weight: the resolution of a batch's mean error
        (``MiniBatch``'s early stop).
    seeding_rows : int or None
        How many of the fit's rows its seeding is worth, as the schedule declares it
        (``Schedule.seeding_rows``); ``None`` (a stream, or a state built by hand): all rows.
    """

    n_clusters: int
    n_features: int
    n_threads: int = 1
    max_iter: object = None
    streaming: bool = False
    needs_resp: bool = False
    objective: object = QUANTIZATION_ERROR
    center_update: str = "replace"
    strict_convergence: bool = False
    constrained_labels: bool = False
    fuse_sums: bool = False
    sigma2_floor: float = 0.0
    qe_resolution: float = 0.0
    qe_resolution_per_weight: float = 0.0
    seeding_rows: object = None


class Meter:
    """What a fit measures over all its runs: distance evaluations and wall time per phase,
    and where progress goes.

    Attributes
    ----------
    cost : dict
        Distance evaluations per phase, keys ``"seeding"``, ``"reduction"``, ``"estep"``,
        ``"labels"``, and ``"refinement"`` once a refiner counted some.
    chunk_evals : int
        Of those, the distance evaluations whose number depends on the data's row chunks
        (:meth:`count_per_chunk`): those between centres, which the bounded and partial
        E-steps compute at each step, on data in row chunks once per chunk; and, on row
        chunks, the pass that finds every row's nearest centre before a mixture's first
        E-step (in memory the first E-step finds them).
    seconds_by_phase : dict
        Wall time per phase, keys ``"reduction"``, ``"seeding"``, ``"estep"``, ``"mstep"``,
        ``"labels"``, and any other phase :meth:`timed` measured.
    display : object
        Where :meth:`timed`, :meth:`phase` and :meth:`progress` go: the driver's progress
        display of a verbose fit, a display that shows nothing otherwise. Strategies never
        print; they report through these methods.
    """

    def __init__(self):
        self.cost = dict.fromkeys(COST_PHASES, 0)
        self.chunk_evals = 0
        self.seconds_by_phase = dict.fromkeys(TIME_PHASES, 0.0)
        self.display = QUIET
        self._start = time.perf_counter()

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


    def count(self, phase, n_evals):
        """Record distance evaluations.

        Parameters
        ----------
        phase : {"seeding", "reduction", "estep", "labels", "refinement"}
        n_evals : int
            Distance evaluations to add to ``cost[phase]``.
        """
        self.cost[phase] = self.cost.get(phase, 0) + int(n_evals)

    def count_per_chunk(self, phase, n_evals):
        """Record distance evaluations whose number depends on the row chunks (see
        :attr:`chunk_evals`), as :meth:`count` does (under ``cost[phase]``), and also in
        :attr:`chunk_evals`."""
        self.count(phase, n_evals)
        self.chunk_evals += int(n_evals)

    @property
    def n_distance_evals(self):
        """Total distance evaluations so far."""
        return sum(self.cost.values())

    @property
    def n_budget_evals(self):
        """Distance evaluations so far that budgets count: all but :attr:`chunk_evals`. The
        same whatever the data's row chunks, in memory too."""
        return self.n_distance_evals - self.chunk_evals

    @property
    def seconds(self):
        """Seconds since the fit started."""
        return time.perf_counter() - self._start


class FitState:
    """What the driver hands to every strategy call: the fit's :attr:`config`, its
    :attr:`meter`, its random stream, and the current :attr:`run`.

    A strategy reads what the fit is from ``state.config`` (``state.config.n_threads``),
    reports work and progress to ``state.meter`` (``state.meter.count("estep", n)``) and keeps
    what belongs to the current run in ``state.run`` (``state.run.labels``,
    ``state.run.estep_state``): three parts with their own lifetimes, and no name that stands
    for another.

    To unit-test a strategy, build the state its calls would get:
    ``FitState(n_clusters=3, n_features=2, random_state=np.random.RandomState(0),
    n_samples=100)`` gives a fit's configuration (the keywords of :class:`FitConfig`), a
    fresh meter and a run over 100 rows (``n_samples=0``: none yet; :meth:`new_run` starts
    another). ``FitState(config=config, ...)`` takes a configuration already made (a chunk's
    part of a step gets its fit's).

    Attributes
    ----------
    config : FitConfig
        Fixed before the fit's first run (:meth:`configure` is the driver's, while it
        prepares the data).
    meter : Meter
    run : Run
        The current run (a refiner's round while it iterates).
    random_state : numpy.random.RandomState
        The only source of randomness of the fit.
    order : ndarray of shape (n_samples,), dtype=intp, or None
        The order of the rows every run of the fit works in (``Schedule.order``; the
        centred copy of the data is made in it); ``None``: the data's.
    """

    __slots__ = ("config", "meter", "random_state", "order", "run")

    def __init__(self, *, random_state, n_samples=0, config=None, **fields):
        if config is None:
            config = FitConfig(**fields)
        elif fields:
            raise TypeError("FitState takes a FitConfig or its fields, not both.")
        self.config = config
        self.meter = Meter()
        self.random_state = random_state
        self.order = None
        self.run = Run(config.n_clusters, n_samples)

    def __getattr__(self, name):
        # (only for names FitState lacks: a strategy written for the flat names of an
        # earlier contract learns where the name is now)
        part = _part_of(name)
        raise AttributeError(f"'FitState' object has no attribute {name!r}"
                             + (f"; use state.{part}.{name}" if part else ""))

    def __setattr__(self, name, value):
        if name not in FitState.__slots__:
            part = _part_of(name)
            hint = {"config": " (the fit's configuration, fixed before its first run"
                              + _CONFIG_HINTS.get(name, "") + ")",
                    "run": f"; set state.run.{name}",
                    "meter": f"; use state.meter.{name}"}.get(part, "")
            raise AttributeError(f"FitState has no attribute {name!r} to set{hint}.")
        object.__setattr__(self, name, value)

    def new_run(self, n_samples, round=0, per_sample=True):
        """Make a fresh :class:`~clusterkit.Run` over ``n_samples`` rows (without per-sample
        records unless ``per_sample``) the current run and return it (the previous one lives
        on wherever it is held)."""
        self.run = Run(self.config.n_clusters, n_samples, round, per_sample)
        return self.run

    def configure(self, **changes):
        """Change fields of the configuration (the driver's, before the first run)."""
        self.config = replace(self.config, **changes)

    @property
    def at_fixed_point(self):
        """Whether the current run's last step reached a fixed point
        (:meth:`Run.at_fixed_point <clusterkit.Run.at_fixed_point>`)."""
        return self.run.at_fixed_point(self.config.strict_convergence)

    def in_data_order(self, values):
        """Per-row ``values`` of the run (in ``order``) in the order of the data."""
        if self.order is None or values is None:
            return values
        out = np.empty_like(values)
        out[self.order] = values
        return out

    def stream_key(self):
        """The key of the run's row stream (``run.stream_key``; see :meth:`row_integers`),
        drawn from :attr:`random_state` at the first call of a run."""
        if self.run.stream_key is None:
            if self.random_state is None:
                raise ValueError("The run's row stream needs the fit's random_state (or "
                                 "run.stream_key).")
            self.run.stream_key = int(self.random_state.randint(0, 2**63 - 1, dtype=np.int64))
        return self.run.stream_key

    def row_integers(self, rows, n_draws, high, call):
        """Uniform integers in ``[0, high)``, ``n_draws`` for every row of ``rows``, from the
        run's row stream: a function of the run's key (``run.stream_key``, drawn from
        :attr:`random_state` at the first call of a run), the rows' numbers in all the data
        (``run.first_row`` plus their numbers in the run's rows) and ``call`` (the caller's
        count of its calls), and of nothing else. A row draws the same numbers whoever
        holds it: in memory, or in any row chunk of any worker, in any order. Draws of
        different rows, calls or runs are independent (a counter-based stream: the
        splitmix64 finaliser of the counter, then Lemire's multiply-shift to ``[0, high)``,
        whose bias is below ``high / 2^32``).

        Parameters
        ----------
        rows : ndarray of int
            The rows' numbers in the run's data.
        n_draws : int
        high : int
            At most ``2^31 - 1``.
        call : int

        Returns
        -------
        draws : ndarray of shape (n_rows, n_draws), dtype=int32
        """
        run = self.run
        ids = np.asarray(rows).astype(np.uint64) + np.uint64(run.first_row)
        base = _mix64(np.array([self.stream_key(), call], dtype=np.uint64) * _GOLDEN)
        counter = ((ids * np.uint64(n_draws))[:, None]
                   + np.arange(n_draws, dtype=np.uint64)[None, :])
        bits = _mix64(_mix64(counter ^ base[0]) + base[1]) >> np.uint64(32)
        return ((bits * np.uint64(high)) >> np.uint64(32)).astype(np.int32)

    def init_sigma2(self, X, sample_weight, centers, labels):
        """Set the run's initial variance from the first E-step's nearest centres (vc-GMM
        eq. 12).

        ``sigma2 = sum_n w_n ||x_n - c_{l_n}||^2 / (D sum_n w_n)``, with ``l_n`` the nearest
        of the clusters the E-step evaluated for sample ``n`` and the distances computed
        directly (``N`` evaluations, counted under ``"estep"``): the numbers a fit on row
        chunks adds up in its pass before the first E-step (:func:`first_variance_sums`).

        Parameters
        ----------
        X : ndarray or CSR matrix of shape (n_samples, n_features)
            The rows in the fit's frame.
        sample_weight : ndarray of shape (n_samples,)
        centers : ndarray of shape (n_clusters, n_features)
        labels : ndarray of shape (n_samples,), dtype=int32

        Returns
        -------
        sigma2 : float
            The new ``run.sigma2`` (at least ``config.sigma2_floor``).
        """
        total, n_evals, weight = first_variance_sums(X, sample_weight, centers, labels,
                                                     self.config.n_threads)
        self.meter.count("estep", n_evals)
        return self.first_variance(total, weight)

    def first_variance(self, total, weight):
        """Set the run's initial variance from the sums of :meth:`init_sigma2` (of the rows
        in memory, or added up over row chunks).

        Parameters
        ----------
        total : float
            ``sum_n w_n min_c d2_nc``.
        weight : float
            ``sum_n w_n``.

        Returns
        -------
        sigma2 : float
            The new ``run.sigma2``, ``total / (D weight)`` (at least
            ``config.sigma2_floor``).
        """
        self.run.sigma2 = max(total / (self.config.n_features * weight),
                              float(self.config.sigma2_floor))
        return self.run.sigma2


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)

#: Why a configuration field cannot be set by a strategy, where one used to set it.
_CONFIG_HINTS = {"fuse_sums": "; an M-step declares it with "
                              "MStep.reads_batch_sums(center_update)"}


def _part_of(name):
    """The part of a :class:`FitState` that has the public attribute ``name`` (``"config"``,
    ``"meter"`` or ``"run"``), or ``None``."""
    if name.startswith("_"):
        return None
    if name in {field.name for field in fields(FitConfig)}:
        return "config"
    if hasattr(Meter, name) or name in vars(Meter()):
        return "meter"
    if hasattr(Run, name) or name in vars(Run(1, 0)):
        return "run"
    return None


def _mix64(z):
    """The splitmix64 finaliser of an array of uint64 (wrapping arithmetic)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


#: The smallest variance of a mixture relative to ``B / D``, the squared diagonal of the
#: data's bounding box per dimension: float64's machine epsilon (see :func:`variance_floor`).
VARIANCE_FLOOR = float(np.finfo(np.float64).eps)


def variance_floor(diagonal2, n_features, dtype):
    """The smallest variance a mixture fit allows (``FitConfig.sigma2_floor``).

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


def first_variance_sums(X, sample_weight, centers, labels, n_threads):
    """The sums of the first variance (:meth:`FitState.init_sigma2`) over the rows ``X``:
    ``sum_n w_n ||x_n - c_{l_n}||^2`` (direct distances, summed as :func:`weighted_sum`
    does), the evaluations and ``sum_n w_n``; one chunk's, or all rows' in memory."""
    dist2, n_evals = dist2_to_labels(X, centers, labels, n_threads)
    return (weighted_sum(dist2, sample_weight), n_evals,
            float(sample_weight.sum(dtype=np.float64)))


def free_energy(log_norm, sample_weight, sigma2, n_clusters, n_features):
    """Truncated free energy of an isotropic, equal-weight GMM (Forster & Lücke 2018, eq. 10).

    ``F = sum_n w_n log sum_{c in K(n)} p(c, x_n)`` with
    ``log p(c, x) = -log C - (D/2) log(2 pi sigma2) - d2(x, mu_c) / (2 sigma2)``; ``log_norm``
    holds ``log sum_{c in K(n)} exp(-d2_nc / (2 sigma2))`` per sample. With ``K(n)`` all clusters
    this is the weighted log-likelihood.
    """
    w = sample_weight.astype(np.float64, copy=False)
    const = log_joint_offset(sigma2, n_clusters, n_features)
    return weighted_sum(log_norm, w) - const * float(w.sum())


def log_joint_offset(sigma2, n_clusters, n_features):
    """``log C + (D/2) log(2 pi sigma2)``: ``log p(c, x) = -d2(x, mu_c) / (2 sigma2)`` minus
    this, for the isotropic, equal-weight GMM."""
    return math.log(n_clusters) + 0.5 * n_features * math.log(2.0 * math.pi * sigma2)
