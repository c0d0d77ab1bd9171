"""Exact dimension pruning in the bounded E-steps (ElkanEStep, YinyangEStep, BoundedEStep
with ``prune``): the iterates of the same E-step without pruning, bit for bit, with less
work counted."""
import numpy as np
import pytest

from clusterkit import (BoundedEStep, Clusterer, ElkanEStep, FullEStep, MiniBatch,
                        YinyangEStep)

from ._helpers import fixed_iterations
from .test_pruning import _embeddings

ESTEPS = {"elkan": lambda prune: ElkanEStep(prune=prune),
          "yinyang": lambda prune: YinyangEStep(n_groups=4, prune=prune),
          "hamerly": lambda prune: YinyangEStep(n_groups=1, prune=prune)}


def _fit(X, estep, init, w=None, n_threads=2, **kwargs):
    kwargs = {"tol": 0, "max_iter": 100, **kwargs}
    return Clusterer(init.shape[0], seed=init, estep=estep, n_threads=n_threads,
                     **kwargs).fit(X, sample_weight=w)


def _assert_same_fit(a, b):
    assert a.n_iter_ == b.n_iter_
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    assert a.inertia_ == b.inertia_


@pytest.mark.parametrize("name", sorted(ESTEPS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_pruned_bounded_fit_gives_the_same_iterates(name, dtype, weighted, n_threads):
    X = _embeddings(2501, 40, 30, dtype, seed=1)
    w = np.random.RandomState(2).uniform(0.5, 2, len(X)).astype(dtype) if weighted else None
    init = X[np.random.RandomState(3).choice(len(X), 30, replace=False)]
    plain = _fit(X, ESTEPS[name](None), init, w, n_threads)
    pruned = _fit(X, ESTEPS[name](6), init, w, n_threads)
    _assert_same_fit(plain, pruned)
    # Lloyd's fixed point as well (the labels of every exact E-step)
    lloyd = _fit(X, FullEStep(), init, w, n_threads)
    assert pruned.n_iter_ == lloyd.n_iter_
    np.testing.assert_array_equal(pruned.labels_, lloyd.labels_)
    # the first visits bound most pairs over 6 of 40 features; revisits test the rest
    assert pruned.cost_["estep"] < plain.cost_["estep"]


@pytest.mark.parametrize("name", sorted(ESTEPS))
def test_pruned_bounded_spherical_fit_gives_the_same_iterates(name):
    X = _embeddings(1500, 48, 20, seed=5)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    init = X[:20].copy()
    fits = [_fit(X, ESTEPS[name](prune), init, mstep="spherical") for prune in (None, 8)]
    _assert_same_fit(*fits)


@fixed_iterations
@pytest.mark.parametrize("name", sorted(ESTEPS))
def test_pruned_bounded_minibatches_give_the_same_iterates(name):
    """Batches of rows keep their bounds and use the projections made once per run."""
    X = _embeddings(3000, 24, 12, seed=4)
    init = X[:12].copy()
    fits = [Clusterer(12, seed=init, estep=ESTEPS[name](prune),
                      schedule=MiniBatch(batch_size=512), tol=0, max_iter=15,
                      random_state=0).fit(X)
            for prune in (None, 4)]
    np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)
    np.testing.assert_array_equal(fits[0].cluster_centers_, fits[1].cluster_centers_)


def test_bounded_estep_passes_prune_to_its_choice():
    assert BoundedEStep(prune="auto").chosen(1000, 300).prune == "auto"
    assert BoundedEStep(prune=8, max_bounds_bytes=10**6).chosen(10**5, 100).prune == 8
    # sparse data go to Elkan's kernel for CSR rows, which does not prune
    assert BoundedEStep(prune=8).chosen(1000, 10, sparse=True).prune is None
    X = _embeddings(1200, 32, 12, seed=6)
    init = X[:12].copy()
    fits = [_fit(X, BoundedEStep(prune=prune), init) for prune in (None, 6)]
    _assert_same_fit(*fits)


@pytest.mark.parametrize("name", sorted(ESTEPS))
def test_pruned_bounded_auto_is_off_below_its_thresholds(name):
    X = _embeddings(600, 32, 10, seed=7)
    init = X[:10].copy()
    auto, plain = _fit(X, ESTEPS[name]("auto"), init), _fit(X, ESTEPS[name](None), init)
    _assert_same_fit(auto, plain)
    assert auto.cost_ == plain.cost_


@pytest.mark.parametrize("name", sorted(ESTEPS))
def test_pruned_bounded_refuses_more_axes_than_features(name):
    X = _embeddings(100, 8, 5, seed=8)
    with pytest.raises(ValueError, match="prune=9 must be <= n_features=8"):
        _fit(X, ESTEPS[name](9), X[:5].copy())


@pytest.mark.parametrize("prune", [0, -1, "always", 2.5])
def test_pruned_bounded_refuses_bad_values(prune):
    X = _embeddings(100, 8, 3, seed=8)
    with pytest.raises((TypeError, ValueError)):
        _fit(X, ElkanEStep(prune=prune), X[:3].copy())


@pytest.mark.filterwarnings("ignore:The fit did not converge")
def test_pruned_bounded_counts_dimension_weighted_work():
    """A first visit with pruning counts its products over p of D features (N C p / D) and
    its direct distances, as FullEStep(prune=p) does on the same centres."""
    X = _embeddings(2000, 64, 40, seed=9)
    init = X[:40].copy()
    one_step = dict(max_iter=1)
    full = _fit(X, FullEStep(prune=8), init, **one_step)
    elkan = _fit(X, ElkanEStep(prune=8), init, **one_step)
    plain = _fit(X, ElkanEStep(), init, **one_step)
    n, c = X.shape[0], init.shape[0]
    # Elkan adds its C (C - 1) / 2 centre distances; both count N C p / D for the products
    assert elkan.cost_["estep"] - c * (c - 1) // 2 == full.cost_["estep"]
    assert plain.cost_["estep"] - c * (c - 1) // 2 == n * (c + 1)


@pytest.mark.filterwarnings("ignore:The fit did not converge")
@pytest.mark.parametrize("name", sorted(ESTEPS))
def test_prune_auto_follows_each_estep_measured_threshold(name):
    """``"auto"`` prunes from the E-step's own ``auto_prune_min_features`` (and 256
    clusters), never for an E-step where pruning was not measured to pay (``inf``)."""
    estep = ESTEPS[name]("auto")
    threshold = type(estep).auto_prune_min_features
    n_features = 64 if np.isinf(threshold) else int(threshold)
    X = _embeddings(1200, n_features, 30, dtype=np.float32, seed=10)
    init = X[:256].copy()
    auto = _fit(X, estep, init, max_iter=2)
    plain = _fit(X, ESTEPS[name](None), init, max_iter=2)
    _assert_same_fit(auto, plain)
    if np.isinf(threshold):
        assert auto.cost_ == plain.cost_
    else:
        assert auto.cost_["estep"] < plain.cost_["estep"]
