"""Seeders that choose another seeder's work: on a sample of the rows (:class:`SampledSeeder`),
by the number of features (:class:`ByDimension`) or by the number of clusters
(:class:`ByClusters`)."""
from numbers import Integral

import numpy as np

from .._data.chunked import ChunkedData
from .._data.moments import weighted_sum
from .._data.nearest import nearest, single_threaded_blas
from .._data.sparse import kernels_for
from .._engine.constraints import InstanceOf, Interval, Options
from .._engine.contracts import Seeder, Seeding
from .afkmc2 import AFKMC2
from .many_clusters import MANY_CLUSTERS, PARALLEL_ROWS_PER_CLUSTER, KMeansParallel
from .seeders import KMeansPlusPlus, _InnerSeeder, _sample_rows

__all__ = ["SampledSeeder", "ByDimension", "ByClusters"]


class SampledSeeder(_InnerSeeder):
    """Run another seeder on a random subsample of the data, optionally the best of several.

    A uniform sample of ``size`` rows (without replacement, among rows with positive weight)
    keeps its rows' weights, rescaled so that the sample's total weight equals the data's; the
    inner seeder runs on that sample and its centres are returned. Greedy k-means++ on a
    sample of ``20 * n_clusters`` rows is a cheap, strong seeding when there are many clusters.
    With ``size="schedule"`` the fit's schedule decides how many rows the seeding is worth
    (:meth:`Schedule.seeding_rows <clusterkit.Schedule.seeding_rows>`): a few batches for
    mini-batches, the first prefix for nested mini-batches, a bounded number per centre for
    full batches (the exact and mixture presets seed this way).

    Parameters
    ----------
    seeder : Seeder or None, default=None
        The seeder run on the sample; ``None`` means ``KMeansPlusPlus()`` (greedy).
    size : int, "schedule" or None, default=None
        Rows in the sample; ``None`` means ``min(n_samples, max(20 * n_clusters, 10_000))``;
        ``"schedule"`` the schedule's ``state.config.seeding_rows`` (all rows if it is not set).
        A size of at least ``n_samples`` runs the inner seeder on all the data.
    n_candidates : int, default=1
        Seedings to choose from, each on its own sample; the one with the lowest quantization
        error on another sample of ``size`` rows is kept (scikit-learn's ``n_init`` of
        ``MiniBatchKMeans``).
    float32 : bool, default=False
        Seed on a float32 copy of a float64 sample; the centres are the float64 rows the
        inner seeder chose (when it chooses rows, as k-means++ does). The sample is copied
        anyway; in float32 it is half the bytes, and k-means++ prunes by grouped copies of
        rows up to 128 bytes (32 float32 features): about twice as fast. Its ``D^2``
        sampling needs no more precision.

    Notes
    -----
    Cost per call: whatever the inner seeder counts on ``size`` rows, e.g.
    ``(n_clusters - 1) * (L + 1) * size`` distance evaluations for greedy k-means++ with
    ``L`` candidates per step, times ``n_candidates``, plus ``size * n_clusters`` per
    candidate to judge it when there are several. Memory: a copy of the sample (none with
    ``size="schedule"`` on rows a schedule shuffled), ``O(size * n_features)``. Reads
    ``state.random_state`` (the sample is drawn first, then the inner seeder draws from the
    same stream), ``state.config.seeding_rows`` and ``state.order``; keeps no state between fits.

    Why uniform sampling with the original weights: weighted sums over the sample, rescaled
    by the total weight, are unbiased estimates of the sums over the data (k-means++ is
    invariant to scaling all weights, so the rescaling only keeps totals meaningful). Sampling
    proportionally to weight *and* keeping the weights would count every weight twice, and
    sampling without replacement proportionally to weight with unit weights is biased for
    heavy rows (each can appear at most once). With unit weights all choices coincide. Rows
    with zero weight are sampled only when fewer than ``n_clusters`` rows have positive weight.
    Rows a schedule put in a random order (:meth:`Schedule.order
    <clusterkit.Schedule.order>`, nested mini-batches) are a uniform sample in any prefix:
    ``size="schedule"`` then seeds on the first rows, the schedule's first batch, as Newling
    & Fleuret do.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import FitState, KMeansPlusPlus, SampledSeeder
    >>> X = np.arange(40.0).reshape(20, 2)
    >>> state = FitState(n_clusters=3, n_features=2, random_state=np.random.RandomState(0))
    >>> seeder = SampledSeeder(KMeansPlusPlus(n_local_trials=1), size=10)
    >>> seeder.seed(X, np.ones(20), 3, state).shape
    (3, 2)
    >>> state.meter.cost["seeding"]  # all on the 10 sampled rows
    22
    """

    accepts_sparse = True  # if its inner seeder does (see _validate)
    reads_chunks = True
    _parameter_constraints = {"seeder": [InstanceOf(Seeder), None],
                              "size": [Interval(Integral, 1), Options("schedule"), None],
                              "n_candidates": [Interval(Integral, 1)],
                              "float32": [InstanceOf(bool)]}

    def __init__(self, seeder=None, size=None, n_candidates=1, float32=False):
        self.seeder = seeder
        self.size = size
        self.n_candidates = n_candidates
        self.float32 = float32

    _sparse_seeders = "KMeansPlusPlus or RandomSeeder"

    def _validate(self, X, n_clusters, composition):
        if isinstance(self.size, Integral) and self.size < n_clusters:
            raise ValueError(f"size={self.size} must be >= n_clusters={n_clusters}.")
        super()._validate(X, n_clusters, composition)

    def _size(self, n_samples, n_clusters, state):
        """Rows of each sample (at least ``n_clusters``, at most ``n_samples``)."""
        if self.size == "schedule":
            size = n_samples if state.config.seeding_rows is None else state.config.seeding_rows
        elif self.size is None:
            size = max(20 * n_clusters, 10_000)
        else:
            size = self.size
        return min(max(int(size), n_clusters), n_samples)

    def buffer_bytes(self, n_samples, n_features, n_clusters, dtype, composition):
        """The samples (two with ``n_candidates > 1``: the seeding's and the validation's,
        in float32 too if asked) and the inner seeder's buffers on one."""
        if self.size == "schedule":
            size = composition.schedule.seeding_rows(n_samples, n_clusters, n_features)
        else:
            size = max(20 * n_clusters, 10_000) if self.size is None else self.size
        size = min(max(int(size), n_clusters), n_samples)
        inner = self._inner()
        if size >= n_samples:
            return inner.buffer_bytes(n_samples, n_features, n_clusters, dtype, composition)
        float32 = self.float32 and dtype == np.float64
        inner_dtype = np.dtype(np.float32) if float32 else dtype
        copies = 1 if self.n_candidates == 1 else 2
        return (copies * size * (n_features + 1) * dtype.itemsize
                + (size * (n_features + 1) * 4 if float32 else 0)
                + inner.buffer_bytes(size, n_features, n_clusters, inner_dtype, composition))

    def seed(self, X, sample_weight, n_clusters, state):
        """Return the inner seeder's centres on a subsample (see :meth:`Seeder.seed`)."""
        return SampledSeeder.seeding(self, X, sample_weight, n_clusters, state).centers

    def seeding(self, X, sample_weight, n_clusters, state):
        """The inner seeder's seeding, on a subsample (then without labels: the inner
        seeder's would be the sample's) unless the sample would hold every row; the best of
        ``n_candidates`` such seedings. ``X`` may be data in row chunks
        (:attr:`~clusterkit.Seeder.reads_chunks`): only the samples are read, drawn by
        ``data.sample``, the same rows and weights as in memory when all weights are
        positive."""
        size = self._size(X.shape[0], n_clusters, state)
        draws = iter(range(int(self.n_candidates) + 1))

        def draw():
            if isinstance(X, ChunkedData):
                return X.sample(size, state.random_state)
            if size >= X.shape[0]:
                return X, sample_weight
            return self._sample(X, sample_weight, size, n_clusters, state, next(draws) == 0)
        inner = self._inner()
        if size >= X.shape[0]:
            # (candidates on all rows would all see the same data: one is as good)
            return inner.seeding(*draw(), n_clusters, state)
        if self.n_candidates == 1:
            return Seeding(self._seed_sample(inner, *draw(), n_clusters, state), None)
        return self._best_candidate(draw, inner, n_clusters, state)

    def _best_candidate(self, draw, inner, n_clusters, state):
        """The best of ``n_candidates`` seedings, each on a sample ``draw()`` returns as
        ``(rows, weights)``, judged by their quantization error on one more sample (drawn
        after the first seeding, so that the stream is as with one candidate)."""
        best = best_error = None
        X_val = w_val = None
        for _ in range(int(self.n_candidates)):
            X_s, w_s = draw()
            centers = self._seed_sample(inner, X_s, w_s, n_clusters, state)
            if X_val is None:
                X_val, w_val = draw()
            with single_threaded_blas():
                _, dist2, n_evals = nearest(X_val, None, centers, state.config.n_threads)
            state.meter.count("seeding", n_evals)
            error = weighted_sum(dist2, w_val)
            if best is None or error < best_error:
                best, best_error = centers, error
        return Seeding(best, None)

    def _seed_sample(self, inner, X_s, w_s, n_clusters, state):
        """The inner seeder's centres on the sample, in float32 if asked (see ``float32``)."""
        # (a centre is found back among the rows by its float32 copy: arrays only)
        if not self.float32 or X_s.dtype != np.float64 or not kernels_for(X_s).ndarray:
            return inner.seed(X_s, w_s, n_clusters, state)
        X32 = X_s.astype(np.float32)
        centers = inner.seed(X32, w_s.astype(np.float32), n_clusters, state)
        return _rows_of(np.ascontiguousarray(centers, dtype=np.float32), X32, X_s)

    def _sample(self, X, sample_weight, size, n_clusters, state, first):
        """Rows and rescaled weights of a sample of ``size`` rows: the first rows of a
        schedule's shuffled order for the schedule's ``first`` sample, else uniform draws."""
        n_samples = X.shape[0]
        positive = int(np.count_nonzero(sample_weight > 0))
        if first and self.size == "schedule" and state.order is not None and (
                positive == n_samples):
            X_s, w_s = X[:size], sample_weight[:size]  # a view: the rows are shuffled
        else:
            if positive <= size:
                # every row with positive weight, plus zero-weight rows only if unavoidable
                size = max(positive, n_clusters)
            idx = np.sort(_sample_rows(sample_weight, size, state.random_state,
                                       proportional=False))
            X_s = kernels_for(X).take(X, idx)
            w_s = sample_weight[idx]
        total = w_s.sum(dtype=np.float64)
        if total > 0:
            w_s = (w_s * (sample_weight.sum(dtype=np.float64) / total)).astype(X.dtype)
        return X_s, w_s


def _rows_of(centers32, X32, X):
    """The rows of ``X`` whose float32 copies (``X32``) are ``centers32``; a centre that is
    no such row is cast to ``X``'s dtype (an inner seeder that does not choose rows)."""
    n_features = X32.shape[1]
    whole = np.dtype((np.void, X32.itemsize * n_features))  # a row as one comparable value
    rows = X32.view(whole).ravel()
    wanted = centers32.view(whole).ravel()
    order = np.argsort(rows, kind="stable")
    at = np.minimum(np.searchsorted(rows[order], wanted), len(rows) - 1)
    found = rows[order[at]] == wanted
    centers = centers32.astype(X.dtype)
    centers[found] = X[order[at[found]]]
    return centers


class _Switch(Seeder):
    """One of two seeders, ``low`` or ``high``, chosen by the data's shape and the number of
    clusters (:meth:`_chosen`); everything else is the chosen seeder's."""

    def _chosen(self, n_samples, n_features, n_clusters):
        raise NotImplementedError

    def _validate(self, X, n_clusters, composition):
        chosen = self._chosen(*X.shape, n_clusters)
        if kernels_for(X).refuses(chosen):
            raise TypeError(f"{type(self).__name__} chose {type(chosen).__name__}, which "
                            "cannot take sparse X; pass X.toarray().")
        chosen._validate(X, n_clusters, composition)

    def buffer_bytes(self, n_samples, n_features, n_clusters, dtype, composition):
        """The chosen seeder's."""
        return self._chosen(n_samples, n_features, n_clusters).buffer_bytes(
            n_samples, n_features, n_clusters, dtype, composition)

    def seed(self, X, sample_weight, n_clusters, state):
        """Return the chosen seeder's centres (see :meth:`Seeder.seed`)."""
        return self._chosen(*X.shape, n_clusters).seed(X, sample_weight, n_clusters, state)

    def seeding(self, X, sample_weight, n_clusters, state):
        """The chosen seeder's seeding, labels included (see :meth:`Seeder.seeding`)."""
        return self._chosen(*X.shape, n_clusters).seeding(X, sample_weight, n_clusters, state)


class ByDimension(_Switch):
    """One seeder for data with few features, another for data with many.

    Greedy k-means++ prunes most of its distances by the triangle inequality when the data
    have few features, so there it is cheap, and on such data its seeds matter most; as the
    features grow the pruning fails and each of its ``C`` steps reads all the data, while
    AFK-MC² costs ``m C^2 / 2`` distances whatever the data. This seeder runs ``low`` when
    ``X`` has at most ``max_features`` columns and ``high`` otherwise; the presets nest it
    to get greedy seeds where they are affordable (see :mod:`clusterkit.presets`).

    Parameters
    ----------
    low : Seeder or None, default=None
        Seeder for at most ``max_features`` features; ``None`` means ``KMeansPlusPlus()``.
    high : Seeder or None, default=None
        Seeder for more features; ``None`` means ``AFKMC2(chain_length=2, n_candidates=1)``
        (plain AFK-MC²).
    max_features : int, default=16
        The largest number of features ``low`` is used for.

    Notes
    -----
    Cost, memory and state are those of the seeder that runs (its labels too, see
    :meth:`seeding`). When ``fit`` starts, the declared constraints of both seeders'
    parameters are checked whatever the data (a bad value is refused also in the seeder the
    data do not choose); the checks against the data only for the one that runs.
    The documentation's page on the defaults has the measurements behind the presets' split
    at 16 and 64 features.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import ByDimension, Clusterer
    >>> wide = np.random.RandomState(0).normal(size=(200, 20))
    >>> Clusterer(3, seed=ByDimension(), random_state=0).fit(wide[:, :2]).cost_["seeding"]
    1371
    >>> Clusterer(3, seed=ByDimension(), random_state=0).fit(wide).cost_["seeding"]  # AFK-MC²
    206
    """

    _parameter_constraints = {"low": [InstanceOf(Seeder), None],
                              "high": [InstanceOf(Seeder), None],
                              "max_features": [Interval(Integral, 1)]}

    def __init__(self, low=None, high=None, max_features=16):
        self.low = low
        self.high = high
        self.max_features = max_features

    def _chosen(self, n_samples, n_features, n_clusters):
        if n_features <= self.max_features:
            return KMeansPlusPlus() if self.low is None else self.low
        return AFKMC2(chain_length=2, n_candidates=1) if self.high is None else self.high


class ByClusters(_Switch):
    """One seeder for a few clusters, another for many.

    Greedy k-means++ takes ``C`` steps, each a pass over the rows it seeds on, so its work
    grows as ``C^2`` times the rows per centre, and from about a thousand clusters on it is
    most of a default fit. k-means|| (:class:`KMeansParallel`) finds its candidates in a few
    passes at the speed of a matrix product and leaves greedy k-means++ only the weighted
    candidates, about ``2.5 C`` of them; with few rows per cluster those weights stand for
    too few rows and its seeds end worse. This seeder runs ``high`` from ``min_clusters``
    clusters on where it seeds at least ``min_rows_per_cluster`` rows per cluster, and
    ``low`` otherwise; ``Clusterer``'s default seeding (``seed="auto"``) nests it in a
    :class:`SampledSeeder`, whose schedule gives the rows.

    Parameters
    ----------
    low : Seeder or None, default=None
        Seeder for fewer than ``min_clusters`` clusters or ``min_rows_per_cluster`` rows per
        cluster; ``None`` means ``KMeansPlusPlus()``.
    high : Seeder or None, default=None
        Seeder for the others; ``None`` means
        ``KMeansParallel(oversampling=0.5)`` (five rounds of ``C / 2`` expected candidates,
        then greedy k-means++ on the weighted candidates).
    min_clusters : int, default=1000
        The fewest clusters ``high`` is used for.
    min_rows_per_cluster : int, default=32
        The fewest rows per cluster ``high`` is used for.

    Notes
    -----
    Cost, memory and state are those of the seeder that runs (its labels too: k-means||
    gives none). When ``fit`` starts, the declared constraints of both seeders' parameters
    are checked whatever the number of clusters; the checks against the data only for the
    one that runs. The documentation's page on the defaults has the measurements behind the
    split at a thousand clusters and 32 rows per cluster.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import ByClusters, FitState
    >>> X = np.random.RandomState(0).normal(size=(300, 2))
    >>> seeder = ByClusters(min_clusters=5)
    >>> [type(seeder._chosen(300, 2, c)).__name__ for c in (4, 5, 10)]
    ['KMeansPlusPlus', 'KMeansParallel', 'KMeansPlusPlus']
    >>> state = FitState(n_clusters=5, n_features=2, random_state=np.random.RandomState(0))
    >>> seeder.seed(X, np.ones(300), 5, state).shape
    (5, 2)
    """

    accepts_sparse = True  # if the seeder the data choose does (see _validate)
    _parameter_constraints = {"low": [InstanceOf(Seeder), None],
                              "high": [InstanceOf(Seeder), None],
                              "min_clusters": [Interval(Integral, 1)],
                              "min_rows_per_cluster": [Interval(Integral, 0)]}

    def __init__(self, low=None, high=None, min_clusters=MANY_CLUSTERS,
                 min_rows_per_cluster=PARALLEL_ROWS_PER_CLUSTER):
        self.low = low
        self.high = high
        self.min_clusters = min_clusters
        self.min_rows_per_cluster = min_rows_per_cluster

    def _chosen(self, n_samples, n_features, n_clusters):
        if (n_clusters < self.min_clusters
                or n_samples < self.min_rows_per_cluster * n_clusters):
            return KMeansPlusPlus() if self.low is None else self.low
        return KMeansParallel(oversampling=0.5) if self.high is None else self.high
