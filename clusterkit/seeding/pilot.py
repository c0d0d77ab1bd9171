"""Seeding by a pilot fit: the centres another clustering estimator fits on the same data."""
from sklearn.base import clone

from .._data.memory import budget
from .._engine.constraints import Satisfies
from .._engine.contracts import Seeder

__all__ = ["FittedSeeder"]


def _is_clustering_estimator(value):
    # a class has fit and get_params too, but its get_params needs an instance
    return (not isinstance(value, type) and hasattr(value, "fit")
            and "n_clusters" in getattr(value, "get_params", dict)())


class FittedSeeder(Seeder):
    """Seed with the centres a pilot estimator fits on the same data.

    A cheap fit of good quality (a coreset with a refinement, say) is a strong start for an
    exact fit on all the data: the exact iterations then only polish. The pilot is cloned,
    given the fit's number of clusters, threads and a seed drawn from the fit's random stream,
    and fitted on the data the seeder receives (with their weights).

    Parameters
    ----------
    estimator : estimator
        An unfitted clustering estimator with an ``n_clusters`` parameter and a
        ``cluster_centers_`` attribute after ``fit`` (a :class:`~clusterkit.Clusterer`, a
        preset, or e.g. scikit-learn's ``KMeans``). Its ``n_clusters`` is replaced by the
        fit's; its ``random_state`` (if it has one) by a seed from the fit's stream.

    Notes
    -----
    Cost: the pilot's. A :class:`~clusterkit.Clusterer` pilot's distance evaluations
    (``n_distance_evals_``, without its labelling pass: it is fitted with
    ``compute_labels=False``) are counted under ``cost_["seeding"]``; another estimator's
    work is not counted. Memory: the pilot's.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import Breathing, Clusterer, FittedSeeder, presets
    >>> rng = np.random.RandomState(0)
    >>> X = np.concatenate([rng.normal(c, 0.1, (100, 2)) for c in range(5)])
    >>> pilot = presets.lwcs_lloyd(1, coreset_size=256, refine=Breathing(m=1))
    >>> model = Clusterer(5, seed=FittedSeeder(pilot), random_state=0).fit(X)
    >>> bool(model.cost_["seeding"] > 0)
    True
    """

    _parameter_constraints = {"estimator": [Satisfies(
        _is_clustering_estimator, "an estimator with an n_clusters parameter (a Clusterer, "
        "a preset, KMeans)")]}

    def __init__(self, estimator):
        self.estimator = estimator

    def buffer_bytes(self, n_samples, n_features, n_clusters, dtype, composition):
        """The pilot fit's peak (its ``estimate_memory``, when it has one: its own copy of
        the rows included), else 0."""
        if not hasattr(self.estimator, "estimate_memory"):
            return 0
        pilot = clone(self.estimator)
        known = pilot.get_params()
        pilot.set_params(n_clusters=n_clusters,
                         **({"compute_labels": False} if "compute_labels" in known else {}))
        return int(pilot.estimate_memory((n_samples, n_features), dtype))

    def seed(self, X, sample_weight, n_clusters, state):
        pilot = clone(self.estimator)
        known = pilot.get_params()
        params = {"n_clusters": n_clusters}
        if "random_state" in known:
            params["random_state"] = state.random_state.randint(2**31 - 1)
        if "callback" in known:  # a Clusterer: the fit's threads, quiet, only its centres
            params.update(n_threads=state.config.n_threads, compute_labels=False, verbose=0,
                          callback=None)
        if "memory_limit" in known:  # within what the fit's budget leaves
            left = budget()
            params["memory_limit"] = None if left is None else max(1, left)
        pilot.set_params(**params)
        pilot.fit(X, sample_weight=sample_weight)
        # the pilot's distance evaluations are seeding work, where it counts them
        state.meter.count("seeding", getattr(pilot, "n_distance_evals_", 0))
        return pilot.cluster_centers_
