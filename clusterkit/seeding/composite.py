"""Seeders that choose another seeder's work: on a sample of the rows (:class:`SampledSeeder`),
or by the number of features (:class:`ByDimension`)."""
from numbers import Integral

import numpy as np

from .._engine.constraints import InstanceOf, Interval
from .._engine.contracts import Seeder, Seeding
from .afkmc2 import AFKMC2
from .seeders import KMeansPlusPlus, _sample_rows

__all__ = ["SampledSeeder", "ByDimension"]


class SampledSeeder(Seeder):
    """Run another seeder on a random subsample of the data.

    A uniform sample of ``size`` rows (without replacement, among rows with positive weight)
    keeps its rows' weights, rescaled so that the sample's total weight equals the data's; the
    inner seeder runs on that sample and its centres are returned. Greedy k-means++ on a
    sample of ``20 * n_clusters`` rows is a cheap, strong seeding when there are many clusters.

    Parameters
    ----------
    seeder : Seeder or None, default=None
        The seeder run on the sample; ``None`` means ``KMeansPlusPlus()`` (greedy).
    size : int or None, default=None
        Rows in the sample; ``None`` means ``min(n_samples, max(20 * n_clusters, 10_000))``.
        A size of at least ``n_samples`` runs the inner seeder on all the data.

    Notes
    -----
    Cost per call: whatever the inner seeder counts on ``size`` rows, e.g.
    ``(n_clusters - 1) * (L + 1) * size`` distance evaluations for greedy k-means++ with
    ``L`` candidates per step. Memory: a copy of the sample, ``O(size * n_features)``.
    Reads ``state.random_state`` (the sample is drawn first, then the inner seeder draws from
    the same stream); keeps no state between fits.

    Why uniform sampling with the original weights: weighted sums over the sample, rescaled
    by the total weight, are unbiased estimates of the sums over the data (k-means++ is
    invariant to scaling all weights, so the rescaling only keeps totals meaningful). Sampling
    proportionally to weight *and* keeping the weights would count every weight twice, and
    sampling without replacement proportionally to weight with unit weights is biased for
    heavy rows (each can appear at most once). With unit weights all choices coincide. Rows
    with zero weight are sampled only when fewer than ``n_clusters`` rows have positive weight.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import FitState, KMeansPlusPlus, SampledSeeder
    >>> X = np.arange(40.0).reshape(20, 2)
    >>> state = FitState(n_clusters=3, n_features=2, random_state=np.random.RandomState(0))
    >>> seeder = SampledSeeder(KMeansPlusPlus(n_local_trials=1), size=10)
    >>> seeder.seed(X, np.ones(20), 3, state).shape
    (3, 2)
    >>> state.cost["seeding"]  # all on the 10 sampled rows
    22
    """

    _parameter_constraints = {"seeder": [InstanceOf(Seeder), None],
                              "size": [Interval(Integral, 1), None]}

    def __init__(self, seeder=None, size=None):
        self.seeder = seeder
        self.size = size

    def _inner(self):
        return KMeansPlusPlus() if self.seeder is None else self.seeder

    def _validate(self, X, n_clusters, composition):
        if self.size is not None and self.size < n_clusters:
            raise ValueError(f"size={self.size} must be >= n_clusters={n_clusters}.")
        self._inner()._validate(X, n_clusters, composition)

    def seed(self, X, sample_weight, n_clusters, state):
        """Return the inner seeder's centres on a subsample (see :meth:`Seeder.seed`)."""
        return SampledSeeder.seeding(self, X, sample_weight, n_clusters, state).centers

    def seeding(self, X, sample_weight, n_clusters, state):
        """The inner seeder's seeding, on a subsample (then without labels: the inner
        seeder's would be the sample's) unless the sample would hold every row."""
        n_samples = X.shape[0]
        size = self.size if self.size is not None else max(20 * n_clusters, 10_000)
        size = min(int(size), n_samples)
        inner = self._inner()
        if size >= n_samples:
            return inner.seeding(X, sample_weight, n_clusters, state)
        positive = int(np.count_nonzero(sample_weight > 0))
        if positive <= size:
            # every row with positive weight, plus zero-weight rows only if unavoidable
            size = max(positive, n_clusters)
        idx = np.sort(_sample_rows(sample_weight, size, state.random_state, proportional=False))
        X_sample = np.ascontiguousarray(X[idx])
        w_sample = sample_weight[idx]
        total_sample = w_sample.sum(dtype=np.float64)
        if total_sample > 0:
            scale = sample_weight.sum(dtype=np.float64) / total_sample
            w_sample = (w_sample * scale).astype(X.dtype)
        return Seeding(inner.seed(X_sample, w_sample, n_clusters, state), None)


class ByDimension(Seeder):
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
    :meth:`seeding`).
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

    def _chosen(self, n_features):
        if n_features <= self.max_features:
            return KMeansPlusPlus() if self.low is None else self.low
        return AFKMC2(chain_length=2, n_candidates=1) if self.high is None else self.high

    def _validate(self, X, n_clusters, composition):
        self._chosen(X.shape[1])._validate(X, n_clusters, composition)

    def seed(self, X, sample_weight, n_clusters, state):
        """Return the chosen seeder's centres (see :meth:`Seeder.seed`)."""
        return self._chosen(X.shape[1]).seed(X, sample_weight, n_clusters, state)

    def seeding(self, X, sample_weight, n_clusters, state):
        """The chosen seeder's seeding, labels included (see :meth:`Seeder.seeding`)."""
        return self._chosen(X.shape[1]).seeding(X, sample_weight, n_clusters, state)
