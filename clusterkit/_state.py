"""Per-fit state that the driver hands to every strategy call."""
import time

import numpy as np

__all__ = ["FitState"]

COST_PHASES = ("seeding", "reduction", "estep", "labels")


class FitState:
    """Everything one fit shares between its strategies.

    Created by :class:`~clusterkit.Clusterer` at the start of ``fit``; a custom strategy reads
    the attributes below and records its work with :meth:`count`.

    Attributes
    ----------
    n_clusters : int
    n_features : int
    dtype : numpy.dtype
        The floating dtype of the fit (float32 or float64).
    random_state : numpy.random.RandomState
        The only source of randomness of the fit.
    n_threads : int
        Number of OpenMP threads every kernel is called with.
    soft : bool
        Whether the M-step needs responsibilities.
    sigma2 : float or None
        Shared variance of the isotropic GMM (soft fits); ``None`` until the first E-step.
    sigma2_floor : float
        Smallest variance allowed (``1e-12`` times the variance per dimension of the data
        the fit runs on).
    qe_resolution : float
        Quantization error indistinguishable from zero at the fit's precision: the dtype's
        machine epsilon times the total sample weight times the mean squared norm of the
        (centred) data the fit runs on. A quantization error below it is rounding noise
        (see ``Schedule.should_stop``).
    seed_labels : ndarray of shape (n_samples,) or None
        Index of each sample's nearest seed, if the seeder computed it on the data the fit
        runs on (k-means++ does, as a by-product); E-steps may start from it.
    estep_state, mstep_state, schedule_state : object or None
        What the strategies' ``init_state`` hooks returned.
    cost : dict
        Distance evaluations per phase, keys ``"seeding"``, ``"reduction"``, ``"estep"``,
        ``"labels"``.
    history : list of dict
        One entry per iteration (see ``Clusterer.history_``).
    verbose : int
    """

    def __init__(self, *, n_clusters, n_features, dtype, random_state, n_threads, soft,
                 sigma2_floor=0.0, qe_resolution=0.0, verbose=0):
        self.n_clusters = n_clusters
        self.n_features = n_features
        self.dtype = np.dtype(dtype)
        self.random_state = random_state
        self.n_threads = n_threads
        self.soft = soft
        self.sigma2_floor = sigma2_floor
        self.qe_resolution = qe_resolution
        self.verbose = verbose
        self.cost = dict.fromkeys(COST_PHASES, 0)
        self._start = time.perf_counter()
        self.start_run()

    def start_run(self):
        """Forget everything of the previous run (history, variance, seeding labels and the
        strategies' states); the data, costs, random stream and clock carry on."""
        self.sigma2 = None
        self.seed_labels = None
        self.estep_state = self.mstep_state = self.schedule_state = None
        self.history = []

    def count(self, phase, n_evals):
        """Record distance evaluations.

        Parameters
        ----------
        phase : {"seeding", "reduction", "estep", "labels"}
        n_evals : int
            Distance evaluations to add to ``cost[phase]``.
        """
        self.cost[phase] += int(n_evals)

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
        total = float(np.dot(sample_weight.astype(np.float64), dist2.astype(np.float64)))
        weight = float(sample_weight.sum(dtype=np.float64))
        self.sigma2 = max(total / (self.n_features * weight), float(self.sigma2_floor))
        return self.sigma2
