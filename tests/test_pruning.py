"""FullEStep(prune=...): exact dimension pruning gives Lloyd's iterates with less work."""
import numpy as np
import pytest

from clusterkit import Clusterer, FullEStep, MiniBatch
from clusterkit.estep.pruning import PRUNE_MIN_FEATURES
from clusterkit.estep.pruning import auto_projections, principal_axes, project, tolerances

from ._helpers import assert_labels_equal_up_to_ties, fixed_iterations

RTOL = {np.float32: 1e-5, np.float64: 1e-12}


def _embeddings(n, d, c, dtype=np.float64, seed=0):
    """Clusters in a random basis whose variance decays along its directions (as in
    embeddings): the leading principal axes carry most of it."""
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.normal(size=(d, d)))[0]
    scale = np.arange(1, d + 1) ** -0.75
    means = rng.normal(size=(c, d)) * scale * 4
    X = means[rng.integers(c, size=n)] + rng.normal(size=(n, d)) * scale
    return (X @ basis.T).astype(dtype)


def _fit(X, estep, init, w=None, n_threads=2, **kwargs):
    history = []
    km = Clusterer(init.shape[0], seed=init, estep=estep, tol=0, max_iter=100,
                   n_threads=n_threads, callback=history.append, **kwargs)
    return km.fit(X, sample_weight=w)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_pruned_fit_gives_lloyds_iterates(dtype, weighted, n_threads):
    X = _embeddings(2501, 40, 30, dtype, seed=1)
    w = np.random.RandomState(2).uniform(0.5, 2, len(X)).astype(dtype) if weighted else None
    init = X[np.random.RandomState(3).choice(len(X), 30, replace=False)]
    lloyd = _fit(X, FullEStep(prune=None), init, w, n_threads)
    pruned = _fit(X, FullEStep(prune=6), init, w, n_threads)
    assert pruned.n_iter_ == lloyd.n_iter_
    assert ([h["n_changed"] for h in pruned.history_]
            == [h["n_changed"] for h in lloyd.history_])
    assert_labels_equal_up_to_ties(X, lloyd.cluster_centers_, pruned.labels_, lloyd.labels_,
                                   RTOL[dtype])
    np.testing.assert_allclose(pruned.cluster_centers_, lloyd.cluster_centers_,
                               rtol=RTOL[dtype] * 10, atol=RTOL[dtype] * 100)
    # products over 6 of 40 features, and the few direct distances the bound leaves
    assert pruned.cost_["estep"] < 0.5 * lloyd.cost_["estep"]


@fixed_iterations
def test_pruned_minibatches_give_the_same_iterates():
    """Batches of rows of the data use the projections made once per run."""
    X = _embeddings(3000, 24, 12, seed=4)
    init = X[:12].copy()
    fits = [Clusterer(12, seed=init, estep=e, schedule=MiniBatch(batch_size=512), tol=0,
                      max_iter=20, random_state=0).fit(X)
            for e in (FullEStep(prune=None), FullEStep(prune=4))]
    np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)
    np.testing.assert_allclose(fits[0].cluster_centers_, fits[1].cluster_centers_, rtol=1e-12)


def test_pruned_minibatches_of_dask_chunks_give_the_in_memory_iterates():
    """A mini-batch read from chunks has no per-run projections: it projects its own rows
    (row numbers of all the data do not index them)."""
    da = pytest.importorskip("dask.array")
    dask = pytest.importorskip("dask")
    X = _embeddings(400, 40, 2, seed=5)
    init = X[:2].copy()
    with dask.config.set(scheduler="synchronous"):
        fits = [Clusterer(2, seed=init, estep=FullEStep(prune=p),
                          schedule=MiniBatch(batch_size=64), random_state=0).fit(data)
                for p in (None, 15) for data in (X, da.from_array(X, chunks=(100, 40)))]
    labels = [np.asarray(fit.labels_) for fit in fits]
    for fit, label in zip(fits[1:], labels[1:]):
        assert fit.n_iter_ == fits[0].n_iter_
        np.testing.assert_array_equal(label, labels[0])
        np.testing.assert_allclose(fit.cluster_centers_, fits[0].cluster_centers_, rtol=1e-12)


def test_pruned_minibatches_relocate_the_same_starved_clusters():
    """A row on its centre gets distance 0 from the pruned E-step and a rounded one (a few
    epsilons of its squared norm) from the unpruned one: the starved clusters' relocation
    must call both "on a centre" (it once relocated 13 clusters pruned, 16 unpruned)."""
    rng = np.random.RandomState(0)
    means = rng.normal(scale=10, size=(8, 64))
    X = means[rng.randint(8, size=300)] + rng.normal(size=(300, 64))
    init = X[rng.choice(300, 256, replace=False)].copy()
    fits = [Clusterer(256, seed=init, estep=FullEStep(prune=prune),
                      schedule=MiniBatch(batch_size=64), max_iter=20, random_state=0).fit(X)
            for prune in (None, "auto")]
    relocated = [[h.get("n_relocated") for h in fit.history_] for fit in fits]
    assert relocated[0] == relocated[1] and sum(relocated[0]) > 0
    assert fits[0].n_iter_ == fits[1].n_iter_
    np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)
    np.testing.assert_allclose(fits[0].cluster_centers_, fits[1].cluster_centers_,
                               rtol=0, atol=1e-12 * np.abs(X).max())


def test_prune_auto_is_off_below_its_thresholds():
    X = _embeddings(600, 16, 10, seed=5)
    init = X[:10].copy()
    lloyd = _fit(X, FullEStep(prune=None), init)
    auto = _fit(X, FullEStep(prune="auto"), init)
    assert 16 < PRUNE_MIN_FEATURES
    assert auto.cost_ == lloyd.cost_
    np.testing.assert_array_equal(auto.labels_, lloyd.labels_)


@fixed_iterations
def test_prune_ignored_for_soft_assignments():
    X = _embeddings(400, 12, 4, seed=6)
    init = X[:4].copy()
    soft = [Clusterer(4, seed=init, estep=e, mstep="soft", max_iter=5, tol=0).fit(X)
            for e in (FullEStep(prune=None), FullEStep(prune=3))]
    np.testing.assert_allclose(soft[0].cluster_centers_, soft[1].cluster_centers_)


def test_auto_projections():
    assert [auto_projections(d) for d in (16, 64, 128, 384, 768, 784, 1024, 4096)] == \
        [32, 32, 32, 48, 96, 96, 96, 96]


def test_principal_axes_are_orthonormal_and_project_keeps_norms():
    X = _embeddings(500, 20, 5, seed=7)
    V = principal_axes(X, 5)
    np.testing.assert_allclose(V.T @ V, np.eye(5), atol=1e-12)
    X_proj, rest, max_norm = project(X, V)
    norms = np.linalg.norm(X, axis=1)
    np.testing.assert_allclose(np.hypot(np.linalg.norm(X_proj, axis=1), rest), norms)
    assert max_norm == pytest.approx(norms.max())
    # the leading axis carries more variance than any later one
    var = X_proj.var(axis=0)
    assert var[0] == var.max()
    proj_tol, rest_tol = tolerances(20, 5, max_norm, max_norm)
    assert 0 < proj_tol < rest_tol < 1e-5 * max_norm


def test_prune_refuses_more_axes_than_features():
    X = _embeddings(100, 6, 3, seed=8)
    with pytest.raises(ValueError, match=r"prune=7 must be <= n_features=6\."):
        Clusterer(3, estep=FullEStep(prune=7)).fit(X)


@pytest.mark.parametrize("prune", [0, "all", True, 2.5])
def test_prune_refuses_bad_values(prune):
    X = _embeddings(100, 6, 3, seed=8)
    with pytest.raises((ValueError, TypeError), match="prune"):
        Clusterer(3, estep=FullEStep(prune=prune)).fit(X)


@fixed_iterations
def test_prune_auto_prunes_from_its_thresholds():
    X = _embeddings(3000, 64, 40, np.float32, seed=9)
    init = X[np.random.RandomState(9).choice(len(X), 300, replace=False)]
    fits = [Clusterer(300, seed=init, estep=e, tol=0, max_iter=4).fit(X)
            for e in (FullEStep(prune=None), FullEStep(prune="auto"))]
    assert fits[1].cost_["estep"] < 0.8 * fits[0].cost_["estep"]
    assert_labels_equal_up_to_ties(X, fits[0].cluster_centers_, fits[1].labels_,
                                   fits[0].labels_, RTOL[np.float32])


@fixed_iterations
def test_pruned_spherical_fit_gives_the_same_iterates():
    X = _embeddings(1500, 32, 20, seed=10)
    init = X[:20].copy()
    fits = [Clusterer(20, seed=init, estep=e, mstep="spherical", tol=0, max_iter=15).fit(X)
            for e in (FullEStep(prune=None), FullEStep(prune=8))]
    assert fits[0].n_iter_ == fits[1].n_iter_
    np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)
    np.testing.assert_allclose(fits[0].cluster_centers_, fits[1].cluster_centers_,
                               rtol=1e-10, atol=1e-12)


def test_subclass_with_its_own_init_does_not_prune():
    """A FullEStep subclass written before ``prune`` existed (its ``__init__`` does not call
    FullEStep's) still fits, as Lloyd's E-step."""

    class Tagged(FullEStep):
        def __init__(self, tag="a"):
            self.tag = tag

    X = _embeddings(300, 8, 3, seed=11)
    km = Clusterer(3, estep=Tagged(), random_state=0).fit(X)
    ref = Clusterer(3, estep=FullEStep(), random_state=0).fit(X)
    np.testing.assert_array_equal(km.labels_, ref.labels_)
    assert km.cost_ == ref.cost_


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (duplicates, empty clusters)
def test_pruning_stops_where_lloyd_does_at_rounding_level():
    # More clusters than distinct points: every row sits on a centre, and the error is
    # rounding, whichever way an E-step rounds its distances. Both are below the fit's
    # resolution, so both fits stop at the same step.
    rng = np.random.default_rng(0)
    X = np.repeat(rng.normal(size=(40, 16)), 3, axis=0)
    w = rng.integers(0, 4, size=len(X)).astype(np.float64)
    fits = [Clusterer(48, estep=FullEStep(prune=prune), random_state=0).fit(X, sample_weight=w)
            for prune in (4, None)]
    pruned, plain = ([h["objective"] for h in km.history_] for km in fits)
    assert pruned[-1] < 1e-20 and plain[-1] < 1e-9  # (rounding level)
    assert fits[0].n_iter_ == fits[1].n_iter_
    assert [h["n_changed"] for h in fits[0].history_] == [h["n_changed"] for h in fits[1].history_]
    np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)
    np.testing.assert_allclose(fits[0].cluster_centers_, fits[1].cluster_centers_,
                               rtol=0, atol=1e-12)


def test_pruned_minibatches_stop_where_unpruned_ones_do_at_rounding_level():
    """With more clusters than distinct rows every batch error is rounding noise, 0 by the
    pruned E-step's direct distances and a few eps by the expanded ones: the mini-batch
    early stop counts both as zero, so both fits stop at the same step."""
    rng = np.random.RandomState(3)
    X = np.repeat(rng.normal(size=(40, 64)), 3, axis=0)
    weights = rng.randint(1, 4, size=len(X)).astype(float)
    fits = [Clusterer(60, estep=FullEStep(prune=prune), schedule=MiniBatch(batch_size=32),
                      random_state=0).fit(X, sample_weight=weights)
            for prune in (None, 8)]
    assert fits[0].n_steps_ == fits[1].n_steps_
    assert fits[0].n_steps_ < 10 * len(X) // 32  # the early stop ended both


def test_pruned_mini_batch_on_duplicates_stops_with_lloyd():
    """Rows on their centres (duplicates, more clusters than distinct rows): both E-steps
    report the direct distances, so the early stop reads the same batch objectives and both
    fits take the same steps."""
    rng = np.random.RandomState(0)
    X = rng.standard_normal((150, 64)).astype(np.float32)[rng.randint(150, size=600)]
    fits = [Clusterer(260, estep=FullEStep(prune=p), mstep="spherical",
                      schedule=MiniBatch(batch_size=64), random_state=0).fit(X)
            for p in ("auto", None)]
    assert [h["objective"] for h in fits[0].history_] == \
        [h["objective"] for h in fits[1].history_]
    assert fits[0].n_steps_ == fits[1].n_steps_ < 20  # stopped early, at the same step
    np.testing.assert_array_equal(fits[0].cluster_centers_, fits[1].cluster_centers_)
    np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)
