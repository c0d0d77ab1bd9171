"""IndexTraining: Lloyd's iterations on a sample of rows per centroid, stopped when the cells
of held-out rows stop changing."""
import numpy as np
import pytest

from clusterkit import Clusterer, FullEStep, IndexTraining, SphericalMStep

from .test_pruning import _embeddings


def _fit(X, schedule, n_clusters=20, w=None, **kwargs):
    kwargs = {"tol": 0, "max_iter": 50, "random_state": 0, **kwargs}
    return Clusterer(n_clusters, schedule=schedule, **kwargs).fit(X, sample_weight=w)


def test_trains_on_points_per_centroid_rows_and_stops_on_the_held_out_rows():
    X = _embeddings(5000, 16, 20, seed=1)
    km = _fit(X, IndexTraining(points_per_centroid=50, holdout=1000, change_tol=0.01))
    assert all(entry["batch_size"] == 1000 for entry in km.history_)  # 50 x 20 rows
    changed = [entry["heldout_changed"] for entry in km.history_]
    assert changed[0] is None  # (no cells to compare with yet)
    # it stopped at the first step with at most 1 % of the held-out rows changing cell, or
    # at the training sample's fixed point
    stops = [c is not None and c <= 0.01 for c in changed]
    assert stops[-1] or km.history_[-1]["n_changed"] == 0
    assert not any(stops[:-1])
    assert km.n_iter_ < 50
    # the held-out rows' assignments are counted with the E-step's
    lloyd_like = 1000 * 20 * km.n_iter_
    assert km.cost_["estep"] >= lloyd_like + 1000 * 20 * km.n_iter_


@pytest.mark.filterwarnings("ignore:The fit did not converge")
def test_the_centroids_are_lloyds_on_the_training_sample():
    """The same centroids as Lloyd's iterations from the same centres on the sample's rows
    (the first of the run's random order, the first draw of the fit's random stream)."""
    X = _embeddings(3000, 12, 10, seed=2)
    init = X[:10].copy()
    km = _fit(X, IndexTraining(points_per_centroid=100, holdout=500, change_tol=0.0),
              n_clusters=10, max_iter=8, seed=init)
    sample = X[np.random.RandomState(0).permutation(len(X))[:1000]]
    ref = Clusterer(10, seed=init, tol=0, max_iter=km.n_iter_, estep=FullEStep()).fit(sample)
    assert ref.n_iter_ == km.n_iter_
    np.testing.assert_allclose(km.cluster_centers_, ref.cluster_centers_, rtol=1e-10,
                               atol=1e-10)


def test_all_rows_when_the_data_are_few_and_the_stop_reads_the_training_labels():
    X = _embeddings(500, 8, 5, seed=3)
    km = _fit(X, IndexTraining(points_per_centroid=256), n_clusters=5)
    assert all(entry["batch_size"] == 500 for entry in km.history_)
    changed = [entry["heldout_changed"] for entry in km.history_]
    assert changed[-1] <= 0.02 or km.history_[-1]["n_changed"] == 0
    assert changed == [entry["n_changed"] / 500 for entry in km.history_]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_weights_and_spherical_centroids(dtype):
    X = _embeddings(4000, 24, 8, dtype=dtype, seed=4)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    w = np.random.RandomState(5).uniform(0.5, 2, len(X)).astype(dtype)
    km = _fit(X, IndexTraining(points_per_centroid=100, holdout=800), n_clusters=8, w=w,
              mstep=SphericalMStep(), estep=FullEStep(prune=6))
    np.testing.assert_allclose(np.linalg.norm(km.cluster_centers_, axis=1), 1,
                               rtol=1e-5 if dtype == np.float32 else 1e-12)
    unweighted = _fit(X, IndexTraining(points_per_centroid=100, holdout=800), n_clusters=8,
                      mstep=SphericalMStep(), estep=FullEStep(prune=6))
    assert not np.allclose(km.cluster_centers_, unweighted.cluster_centers_)


@pytest.mark.parametrize("params, error", [
    ({"points_per_centroid": 0}, ValueError), ({"holdout": -1}, ValueError),
    ({"change_tol": 1.5}, ValueError), ({"change_tol": "x"}, TypeError)])
def test_refuses_bad_parameters(params, error):
    X = _embeddings(200, 4, 3, seed=6)
    with pytest.raises(error):
        _fit(X, IndexTraining(**params), n_clusters=3)
