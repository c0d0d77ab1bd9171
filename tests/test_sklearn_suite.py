"""scikit-learn's own k-means, mini-batch and CSR tests, run against clusterkit.

The installed scikit-learn's ``sklearn/cluster/tests/test_k_means.py`` is imported, its module
globals ``KMeans``, ``MiniBatchKMeans`` and ``k_means`` are replaced (for every test of this
module) by thin adapters built on :class:`clusterkit.Clusterer` and the presets, and the tests
that apply are imported here, with their parametrisations, so that pytest collects them. A
parameter that *is* one of scikit-learn's classes (``Estimator``, ``Klass``) is swapped for
its adapter when the test runs. Tests that do not apply are listed in :data:`LEFT_OUT` with the
reason.
"""
import functools
import inspect
import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import (BaseEstimator, ClassNamePrefixFeaturesOutMixin, ClusterMixin,
                          TransformerMixin)
from sklearn.utils import check_random_state

from clusterkit import Clusterer, MiniBatch, RandomSeeder, presets

skl = pytest.importorskip("sklearn.cluster.tests.test_k_means",
                          reason="scikit-learn's k-means tests cannot be imported")
from sklearn import cluster as _sk_cluster  # noqa: E402  (after the skip)

# --- the adapters ----------------------------------------------------------------------------

def _seed(init, X, n_clusters, random_state):
    """scikit-learn's ``init`` as clusterkit's ``seed``: a callable is called here, on the
    user's data, as scikit-learn calls it."""
    if isinstance(init, str):
        if init not in ("k-means++", "random"):
            raise ValueError(f"Unknown init={init!r}; expected 'k-means++', 'random', an "
                             "array or a callable.")
        return "k-means++" if init == "k-means++" else RandomSeeder()
    if callable(init):
        X_dense = X.toarray() if sp.issparse(X) else np.asarray(X)
        return np.asarray(init(X_dense, n_clusters, random_state=random_state))
    return np.asarray(init)


def _n_init(n_init, init, default):
    if n_init == "auto":
        return 1 if (not isinstance(init, str) or init == "k-means++") else default
    return 1 if not isinstance(init, str) else n_init


class _Adapter(ClassNamePrefixFeaturesOutMixin, TransformerMixin, ClusterMixin, BaseEstimator):
    """The scikit-learn face over a fitted :class:`Clusterer` (``self._model``)."""

    _fitted_names = ("cluster_centers_", "labels_", "inertia_", "n_iter_", "n_steps_",
                     "n_features_in_")

    def _take(self, model):
        self._model = model
        for name in self._fitted_names:
            if hasattr(model, name):
                setattr(self, name, getattr(model, name))
        self._n_features_out = self.cluster_centers_.shape[0]
        return self

    def fit(self, X, y=None, sample_weight=None):
        random_state = check_random_state(self.random_state)
        seed = _seed(self.init, X, self.n_clusters, random_state)
        model = self._clusterer(seed, random_state)
        return self._take(model.fit(X, sample_weight=sample_weight))

    def predict(self, X):
        return self._model.predict(X)

    def transform(self, X):
        return self._model.transform(X)

    def score(self, X, y=None, sample_weight=None):
        return self._model.score(X, sample_weight=sample_weight)


class KMeans(_Adapter):
    """``sklearn.cluster.KMeans``'s parameters on :func:`presets.lloyd`/:func:`presets.elkan`.
    ``copy_x`` is accepted (clusterkit centres a copy and never changes the caller's data)."""

    def __init__(self, n_clusters=8, *, init="k-means++", n_init="auto", max_iter=300,
                 tol=1e-4, verbose=0, random_state=None, copy_x=True, algorithm="lloyd"):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self.random_state = random_state
        self.copy_x = copy_x
        self.algorithm = algorithm

    def _clusterer(self, seed, random_state):
        make = {"lloyd": presets.lloyd, "elkan": presets.elkan}[self.algorithm]
        return make(self.n_clusters, seed=seed, n_init=_n_init(self.n_init, self.init, 10),
                    max_iter=self.max_iter, tol=self.tol, random_state=random_state,
                    verbose=self.verbose)


class MiniBatchKMeans(_Adapter):
    """``sklearn.cluster.MiniBatchKMeans``'s parameters on :func:`presets.minibatch`:
    ``max_iter`` passes, ``batch_size``, ``max_no_improvement``, ``reassignment_ratio``;
    ``init_size`` is accepted and unused (k-means++ seeds on all rows)."""

    def __init__(self, n_clusters=8, *, init="k-means++", max_iter=100, batch_size=1024,
                 verbose=0, compute_labels=True, random_state=None, tol=0.0,
                 max_no_improvement=10, init_size=None, n_init="auto",
                 reassignment_ratio=0.01):
        self.n_clusters = n_clusters
        self.init = init
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.verbose = verbose
        self.compute_labels = compute_labels
        self.random_state = random_state
        self.tol = tol
        self.max_no_improvement = max_no_improvement
        self.init_size = init_size
        self.n_init = n_init
        self.reassignment_ratio = reassignment_ratio

    def _clusterer(self, seed, random_state):
        schedule = MiniBatch(batch_size=self.batch_size, max_passes=math.inf,
                             max_no_improvement=self.max_no_improvement,
                             reassignment_ratio=self.reassignment_ratio)
        return Clusterer(self.n_clusters, seed=seed, schedule=schedule,
                         n_init=_n_init(self.n_init, self.init, 3), max_iter=self.max_iter,
                         tol=self.tol, random_state=random_state, verbose=self.verbose,
                         compute_labels=self.compute_labels)

    def partial_fit(self, X, y=None, sample_weight=None):
        model = getattr(self, "_model", None)
        if model is None:
            random_state = check_random_state(self.random_state)
            model = self._clusterer(_seed(self.init, X, self.n_clusters, random_state),
                                    random_state)
        return self._take(model.partial_fit(X, sample_weight=sample_weight))


def k_means(X, n_clusters, *, sample_weight=None, init="k-means++", n_init="auto",
            max_iter=300, verbose=False, tol=1e-4, random_state=None, copy_x=True,
            algorithm="lloyd", return_n_iter=False):
    """``sklearn.cluster.k_means`` on the :class:`KMeans` adapter."""
    est = KMeans(n_clusters, init=init, n_init=n_init, max_iter=max_iter, verbose=verbose,
                 tol=tol, random_state=random_state, copy_x=copy_x,
                 algorithm=algorithm).fit(X, sample_weight=sample_weight)
    result = (est.cluster_centers_, est.labels_, est.inertia_)
    return result + (est.n_iter_,) if return_n_iter else result


ADAPTERS = {_sk_cluster.KMeans: KMeans, _sk_cluster.MiniBatchKMeans: MiniBatchKMeans}


# --- running scikit-learn's tests ------------------------------------------------------------

@pytest.fixture(autouse=True)
def _adapters(monkeypatch):
    monkeypatch.setattr(skl, "KMeans", KMeans)
    monkeypatch.setattr(skl, "MiniBatchKMeans", MiniBatchKMeans)
    monkeypatch.setattr(skl, "k_means", k_means)


@pytest.fixture(params=[np.float64, np.float32], ids=["float64", "float32"])
def global_dtype(request):
    """scikit-learn's ``global_dtype``, float32 included (its ``SKLEARN_RUN_FLOAT32_TESTS``)."""
    return request.param


@pytest.fixture(params=[42])
def global_random_seed(request):
    """scikit-learn's default seed (its conftest's ``global_random_seed`` without the
    ``SKLEARN_TESTS_GLOBAL_RANDOM_SEED`` variable)."""
    return request.param


def _adapted(test):
    """``test`` with scikit-learn's estimator classes among its arguments swapped for the
    adapters; its signature and marks (parametrisations) are kept."""
    @functools.wraps(test)
    def run(*args, **kwargs):
        kwargs = {name: ADAPTERS.get(value, value) if isinstance(value, type) else value
                  for name, value in kwargs.items()}
        return test(*args, **kwargs)
    run.__signature__ = inspect.signature(test)
    return run


_HELPER = "tests only scikit-learn's own helper {}, no estimator"
_PRIVATE = "reads scikit-learn's private attribute {} of the estimator"
_WORDING = ("asserts scikit-learn's wording of {}; clusterkit's own messages are tested in "
            "test_validation.py{}")

#: scikit-learn's tests that do not apply to clusterkit, with the reason.
LEFT_OUT = {
    "test_relocate_empty_clusters": _HELPER.format(
        "_relocate_empty_clusters_dense/_sparse (the same case through the estimator, and "
        "scikit-learn's expected centres, is test_sparse.py's test_relocate_empty_clusters)"),
    "test_minibatch_update_consistency": _HELPER.format("_mini_batch_step"),
    "test_minibatch_reassign": _HELPER.format("_mini_batch_step"),
    "test_euclidean_distance": _HELPER.format("_euclidean_dense_dense_wrapper"),
    "test_inertia": _HELPER.format("_inertia_dense/_inertia_sparse"),
    "test_is_same_clustering": _HELPER.format("_is_same_clustering"),
    "test_kmeans_plusplus_output": _HELPER.format("kmeans_plusplus"),
    "test_kmeans_plusplus_norms": _HELPER.format("kmeans_plusplus"),
    "test_kmeans_plusplus_dataorder": _HELPER.format("kmeans_plusplus"),
    "test_kmeans_plusplus_wrong_params": _HELPER.format("kmeans_plusplus"),
    "test_kmeans_init_auto_with_initial_centroids": _PRIVATE.format("_n_init"),
    "test_n_init_auto": _PRIVATE.format("_n_init"),
    "test_sample_weight_init": _PRIVATE.format("_init_centroids (a private method)"),
    "test_sample_weight_zero": _PRIVATE.format("_init_centroids (a private method)"),
    "test_minibatch_kmeans_init_size": _PRIVATE.format("_init_size"),
    "test_minibatch_kmeans_warning_init_size": (
        "init_size (k-means++ on a sample) has no clusterkit counterpart: the seeding uses "
        "all rows, so there is nothing to warn about"),
    "test_kmeans_verbose": ("asserts scikit-learn's verbose lines ('Converged at iteration', "
                            "'strict convergence'); clusterkit prints its own "
                            "(test_clusterer.py, test_progress.py)"),
    "test_minibatch_declared_convergence": (
        "asserts scikit-learn's verbose line 'Converged (lack of improvement in inertia)'; "
        "clusterkit reports the stop in converged_ and history_"),
    "test_warning_elkan_1_cluster": (
        "scikit-learn switches to Lloyd with a warning; clusterkit's Elkan E-step is exact "
        "with one cluster too and runs without a warning"),
    "test_warning_n_init_precomputed_centers": _WORDING.format(
        "the n_init warning ('Explicit initial center position passed')",
        " (clusterkit warns 'seed gives the initial centres: running once')"),
    "test_wrong_params": _WORDING.format(
        "the errors for n_clusters > n_samples and initial centres of the wrong shape",
        "; the same wrong parameters are checked below, "
        "test_wrong_params_are_refused"),
}

#: scikit-learn's tests that apply: imported below.
APPLIED = []

for _name in sorted(vars(skl)):
    if _name.startswith("test_") and callable(getattr(skl, _name)) and _name not in LEFT_OUT:
        globals()[_name] = _adapted(getattr(skl, _name))
        APPLIED.append(_name)


@pytest.mark.parametrize("Estimator", [KMeans, MiniBatchKMeans])
@pytest.mark.parametrize("param, match", [
    ({"n_clusters": skl.n_samples + 1}, r"n_clusters=101 must be <= n_samples=100"),
    ({"init": skl.X[:2]}, r"seed has shape \(2, 5\), but initial centres must have shape"),
    ({"init": lambda X_, k, random_state: X_[:2]}, r"seed has shape \(2, 5\)"),
    ({"init": skl.X[:8, :2]}, r"seed has shape \(8, 2\), but initial centres must have "
                              r"shape \(n_clusters, n_features\)=\(8, 5\)"),
])
def test_wrong_params_are_refused(Estimator, param, match):
    """scikit-learn's test_wrong_params, with clusterkit's messages."""
    with pytest.raises(ValueError, match=match):
        Estimator(n_init=1).set_params(**param).fit(skl.X)


def test_every_test_is_applied_or_left_out_with_a_reason():
    tests = {name for name in vars(skl) if name.startswith("test_")}
    assert set(LEFT_OUT) <= tests and set(APPLIED) == tests - set(LEFT_OUT)
    # the cases that once failed through the adapter (empty-cluster relocation, duplicates,
    # partial_fit with fewer rows than clusters after fit)
    assert {"test_relocating_with_duplicates", "test_kmeans_relocated_clusters",
            "test_float_precision", "test_minibatch_kmeans_partial_fit_init"} <= set(APPLIED)
