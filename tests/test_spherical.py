"""Spherical k-means: unit rows, unit centres, a cosine objective that never increases, the
same iterates with every E-step that finds the nearest centre, and faiss's spherical
k-means from the same start."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from clusterkit import (LWCS, Clusterer, ElkanEStep, FullEStep, IndexTraining, MiniBatch,
                        NestedDoubling, PartialEStep, SBEDecay, Seeder, SphericalMStep,
                        TruncatedEStep, presets)
from clusterkit.metrics import nmi

from ._helpers import fixed_iterations


def directions(n_samples=400, n_features=5, n_clusters=4, spread=0.25, seed=0,
               dtype=np.float64):
    """Rows around ``n_clusters`` random directions, with norms between 0.1 and 10 (so that
    only their directions cluster), and the true labels."""
    rng = np.random.RandomState(seed)
    axes = rng.normal(size=(n_clusters, n_features))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    labels = rng.randint(n_clusters, size=n_samples)
    X = axes[labels] + spread * rng.normal(size=(n_samples, n_features))
    X *= rng.uniform(0.1, 10.0, size=(n_samples, 1))
    return X.astype(dtype), labels


def unit(X):
    X = np.asarray(X, dtype=np.float64)
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def cosine_dissimilarity(X, centers, sample_weight=None):
    """``sum_n w_n (1 - max_c cos(x_n, mu_c))``, in float64 from plain NumPy."""
    w = np.ones(len(X)) if sample_weight is None else sample_weight
    return float(w @ (1.0 - (unit(X) @ unit(centers).T).max(axis=1)))


def rtol(dtype):
    return 1e-4 if dtype == np.float32 else 1e-10


@fixed_iterations
def test_cosine_objective_never_increases_and_is_what_history_reports(dtype):
    X, _ = directions(n_samples=601, n_features=7, n_clusters=6, spread=0.6, dtype=dtype)
    seen = []
    km = Clusterer(9, mstep="spherical", tol=0, max_iter=25, random_state=1,
                   callback=lambda info: seen.append(info["centers"])).fit(X)
    objectives = np.array([h["objective"] for h in km.history_])
    slack = 10 * float(np.finfo(dtype).eps) * len(X)  # pytest.approx takes Python numbers
    assert np.all(np.diff(objectives) <= slack)
    assert objectives[-1] < objectives[0]
    # each step's objective is at the centres the step started from: twice the cosine
    # dissimilarity of the (unit) rows to the previous step's centres
    for info, centers in zip(km.history_[1:], seen[:-1]):
        assert info["objective"] == pytest.approx(2 * cosine_dissimilarity(X, centers),
                                                  rel=rtol(dtype) * 10, abs=slack)
    assert km.inertia_ == pytest.approx(2 * cosine_dissimilarity(X, km.cluster_centers_),
                                        rel=rtol(dtype) * 10, abs=slack)


@fixed_iterations
@pytest.mark.parametrize("n_threads", [1, 2])
def test_centres_are_normalised_sums_and_dtype_is_kept(dtype, n_threads):
    X, _ = directions(n_samples=333, dtype=dtype)
    km = Clusterer(4, mstep=SphericalMStep(), random_state=0, n_threads=n_threads).fit(X)
    assert km.cluster_centers_.dtype == dtype and km.transform(X).dtype == dtype
    norms = np.linalg.norm(km.cluster_centers_.astype(np.float64), axis=1)
    np.testing.assert_allclose(norms, 1.0, rtol=rtol(dtype) * 10)
    # a fixed point: each centre is the normalised sum of its cluster's unit rows
    U = unit(X)
    sums = np.stack([U[km.labels_ == j].sum(axis=0) for j in range(4)])
    np.testing.assert_allclose(km.cluster_centers_, unit(sums), atol=rtol(dtype) * 10)
    # only directions count: rescaling rows changes nothing
    again = Clusterer(4, mstep="spherical", random_state=0, n_threads=n_threads).fit(
        X * np.linspace(0.5, 3.0, len(X), dtype=dtype)[:, None])
    np.testing.assert_array_equal(again.labels_, km.labels_)
    np.testing.assert_allclose(again.cluster_centers_, km.cluster_centers_,
                               atol=rtol(dtype) * 10)


def test_predict_transform_score_normalise_new_rows(dtype):
    X, _ = directions(dtype=dtype)
    km = presets.spherical_kmeans(4, random_state=0).fit(X)
    np.testing.assert_array_equal(km.predict(X * 7), km.labels_)
    cos = unit(X) @ km.cluster_centers_.T.astype(np.float64)
    np.testing.assert_allclose(km.transform(3 * X), np.sqrt(np.maximum(2 - 2 * cos, 0)),
                               atol=1e-3 if dtype == np.float32 else 1e-7)
    assert km.score(X * 0.1) == pytest.approx(-km.inertia_, rel=rtol(dtype) * 10)


@fixed_iterations
@pytest.mark.parametrize("estep", [ElkanEStep(), TruncatedEStep(n_winners=4),
                                   PartialEStep(G=4, n_explore=0)],
                         ids=["elkan", "truncated-all", "partial-all"])
def test_exact_and_bounded_esteps_give_lloyd_iterates(dtype, estep):
    X, _ = directions(n_samples=500, n_features=6, n_clusters=4, spread=0.5, dtype=dtype)
    init = X[[0, 1, 2, 3]]
    full = Clusterer(4, seed=init, mstep="spherical", tol=0, max_iter=15).fit(X)
    other = Clusterer(4, seed=init, estep=estep, mstep="spherical", tol=0,
                      max_iter=15).fit(X)
    np.testing.assert_array_equal(other.labels_, full.labels_)
    np.testing.assert_allclose(other.cluster_centers_, full.cluster_centers_,
                               atol=rtol(dtype) * 10)
    assert other.n_iter_ == full.n_iter_
    if isinstance(estep, ElkanEStep):
        assert other.cost_["estep"] < full.cost_["estep"]


@fixed_iterations
@pytest.mark.parametrize("name", ["partial", "lwcs", "minibatch", "adaptive", "nmbatch"])
def test_compositions_keep_unit_centres_and_find_the_clusters(dtype, name):
    X, truth = directions(n_samples=2000, n_features=8, n_clusters=5, spread=0.2, seed=3,
                          dtype=dtype)
    kwargs = {"partial": dict(estep=PartialEStep(G=3)),
              "lwcs": dict(reduce=LWCS(size=600)),
              "minibatch": dict(schedule=MiniBatch(batch_size=128)),
              "adaptive": dict(schedule=MiniBatch(batch_size=128, learning_rate="adaptive")),
              "nmbatch": dict(estep="elkan", schedule=NestedDoubling())}[name]
    km = Clusterer(5, mstep="spherical", random_state=0, n_init=3, **kwargs).fit(X)
    assert km.cluster_centers_.dtype == dtype
    np.testing.assert_allclose(np.linalg.norm(km.cluster_centers_.astype(np.float64), axis=1),
                               1.0, rtol=1e-5)
    assert nmi(truth, km.labels_) > 0.95
    exact = Clusterer(5, mstep="spherical", random_state=0, n_init=3).fit(X)
    assert km.inertia_ <= 1.05 * exact.inertia_


def test_partial_fit_streams_unit_centres(dtype):
    X, truth = directions(n_samples=1200, n_clusters=3, spread=0.2, seed=5, dtype=dtype)
    km = Clusterer(3, mstep="spherical", random_state=0)
    for start in range(0, len(X), 200):
        km.partial_fit(X[start:start + 200] * 4)
    np.testing.assert_allclose(np.linalg.norm(km.cluster_centers_.astype(np.float64), axis=1),
                               1.0, rtol=1e-5)
    assert nmi(truth, km.predict(X)) > 0.95


@fixed_iterations
def test_sample_weight_equals_repetition(dtype):
    X, _ = directions(n_samples=150, dtype=dtype)
    counts = np.random.RandomState(0).randint(1, 4, size=len(X))
    init = X[:4]
    weighted = Clusterer(4, seed=init, mstep="spherical", tol=0, max_iter=10).fit(
        X, sample_weight=counts.astype(dtype))
    repeated = Clusterer(4, seed=init, mstep="spherical", tol=0, max_iter=10).fit(
        np.repeat(X, counts, axis=0))
    np.testing.assert_allclose(weighted.cluster_centers_, repeated.cluster_centers_,
                               atol=rtol(dtype) * 10)
    assert weighted.inertia_ == pytest.approx(repeated.inertia_, rel=rtol(dtype) * 100)


def test_sparse_rows_match_dense(dtype):
    X, _ = directions(n_samples=300, n_features=12, dtype=dtype)
    X[np.abs(X) < 1.0] = 0.0
    X = X[np.any(X != 0, axis=1)]
    init = X[:4]
    dense = Clusterer(4, seed=init, mstep="spherical").fit(X)
    sparse = Clusterer(4, seed=init, mstep="spherical").fit(sp.csr_matrix(X))
    np.testing.assert_array_equal(sparse.labels_, dense.labels_)
    np.testing.assert_allclose(sparse.cluster_centers_, dense.cluster_centers_,
                               atol=rtol(dtype) * 10)


def test_cluster_without_direction_is_relocated_never_nan():
    # rows 0 and 1 are opposite and tie between the two seeds (both orthogonal), so both go
    # to centre 0, whose sum is zero: it moves onto the farthest row, as an empty cluster
    X = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        km = Clusterer(2, seed=[[0.0, -1.0], [0.0, 1.0]], mstep="spherical", tol=0,
                       max_iter=1).fit(X)
    np.testing.assert_array_equal(km.cluster_centers_, [[1.0, 0.0], [0.0, 1.0]])


def test_given_initial_centres_are_scaled():
    X, _ = directions()
    init = X[:4]
    a = Clusterer(4, seed=init, mstep="spherical").fit(X)
    b = Clusterer(4, seed=5 * init, mstep="spherical").fit(X)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)


class _Origin(Seeder):
    """Centres that are not on the sphere."""

    def seed(self, X, sample_weight, n_clusters, state):
        return 0.5 * X[:n_clusters]


def test_bad_input_is_refused_clearly():
    X, _ = directions(n_samples=50)
    bad = X.copy()
    bad[[7, 9]] = 0.0
    with pytest.raises(ValueError, match=r"X has 2 rows of zero norm \(the first is row 7\)"):
        Clusterer(3, mstep="spherical").fit(bad)
    with pytest.raises(ValueError, match="X has 2 rows of zero norm"):
        Clusterer(3, mstep="spherical").fit(sp.csr_matrix(bad))
    bad[7, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        Clusterer(3, mstep="spherical").fit(bad)
    km = presets.spherical_kmeans(3, random_state=0).fit(X)
    with pytest.raises(ValueError, match="X has 1 row of zero norm"):
        km.predict(np.vstack([X[:3], np.zeros(X.shape[1])]))
    with pytest.raises(ValueError, match="seed has 1 row of zero norm"):
        Clusterer(2, seed=np.vstack([X[:1], np.zeros((1, X.shape[1]))]),
                  mstep="spherical").fit(X)
    with pytest.raises(ValueError, match="SphericalMStep needs initial centres of unit norm"):
        Clusterer(3, seed=_Origin(), mstep="spherical").fit(X)
    with pytest.raises(ValueError, match="'backward_euler', which SphericalMStep does not"):
        Clusterer(3, mstep="spherical", schedule=SBEDecay()).fit(X)


def test_fits_dask_arrays_on_all_rows_not_on_a_coreset_and_predicts_them():
    da = pytest.importorskip("dask.array")
    X, _ = directions(n_samples=50)
    with pytest.raises(ValueError, match=r"spherical M-step .* not on a coreset of them; use "
                                         r"reduce=None .* or pass X.compute\(\)"):
        Clusterer(3, mstep="spherical", reduce="lwcs").fit(da.from_array(X, chunks=20))
    km = presets.spherical_kmeans(3, random_state=0).fit(X)
    lazy = da.from_array(5 * X, chunks=20)
    np.testing.assert_array_equal(km.predict(lazy).compute(), km.labels_)
    assert float(km.score(lazy)) == pytest.approx(-km.inertia_)


def test_memmap_with_a_coreset_is_read_in_memory(tmp_path):
    X, truth = directions(n_samples=500, n_clusters=3, spread=0.2)
    mapped = np.memmap(tmp_path / "x.dat", dtype=X.dtype, mode="w+", shape=X.shape)
    mapped[:] = X
    mapped.flush()
    km = Clusterer(3, mstep="spherical", reduce=LWCS(size=200), random_state=0).fit(mapped)
    assert nmi(truth, km.labels_) > 0.95
    np.testing.assert_allclose(np.linalg.norm(km.cluster_centers_, axis=1), 1.0, rtol=1e-10)


def test_check_estimator():
    from sklearn.utils.estimator_checks import check_estimator
    zero_rows = ("scikit-learn's test data have rows of zero norm, which a spherical model "
                 "refuses with a ValueError")
    seeding = "the random seeding depends on the number of rows, not only on the weights"
    expected = {"check_estimators_dtypes": zero_rows,
                "check_estimator_sparse_tag": zero_rows,
                "check_estimator_sparse_array": zero_rows,
                "check_estimator_sparse_matrix": zero_rows,
                "check_sample_weight_equivalence_on_dense_data": seeding,
                "check_sample_weight_equivalence_on_sparse_data": seeding}
    check_estimator(Clusterer(mstep="spherical"), expected_failed_checks=expected)


def test_preset_and_shortcut():
    km = presets.spherical_kmeans(5, random_state=0)
    assert isinstance(km.mstep, SphericalMStep) and isinstance(km.estep, FullEStep)
    assert "spherical_kmeans" in presets.PRESETS and "spherical_kmeans" in presets.GUIDE
    with pytest.raises(TypeError, match="sets mstep itself"):
        presets.spherical_kmeans(5, mstep="hard")
    assert Clusterer(mstep="spherical").set_params(mstep=SphericalMStep()).mstep == \
        SphericalMStep()


@pytest.mark.parametrize("niter", [1, 10])
def test_same_clusters_as_faiss_spherical_from_the_same_start(niter):
    faiss = pytest.importorskip("faiss")
    X, _ = directions(n_samples=3000, n_features=16, n_clusters=8, spread=0.6, seed=11,
                      dtype=np.float32)
    X = np.ascontiguousarray(unit(X), dtype=np.float32)
    init = np.ascontiguousarray(X[np.random.RandomState(0).choice(len(X), 8,
                                                                  replace=False)])
    # faiss renormalises the centroids after each update when spherical=True; no subsampling
    fk = faiss.Kmeans(X.shape[1], 8, niter=niter, spherical=True,
                      max_points_per_centroid=len(X), seed=0)
    fk.train(X, init_centroids=init)
    _, faiss_labels = fk.index.search(X, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        km = Clusterer(8, seed=init, mstep="spherical", tol=0, max_iter=niter,
                       n_threads=1).fit(X)
    np.testing.assert_allclose(km.cluster_centers_, fk.centroids, atol=1e-5)
    np.testing.assert_array_equal(km.labels_, faiss_labels.ravel())
    # no empty cluster (faiss splits a large one instead of relocating), and faiss's
    # objective, the summed cosine similarity at each iteration's start, is N - qe / 2
    assert sum(stats["nsplit"] for stats in fk.iteration_stats) == 0
    cosine = len(X) - np.array([h["objective"] for h in km.history_]) / 2
    np.testing.assert_allclose(cosine, fk.obj[:len(cosine)], rtol=1e-5)


def test_ablation_measures_the_error_of_the_unit_rows():
    from clusterkit import ablate
    X, _ = directions(n_samples=300)
    table = ablate(X, 4, {"spherical": "spherical_kmeans",
                          "elkan": Clusterer(4, estep="elkan", mstep="spherical")},
                   seeds=[0], verbose=0)
    rows = table.to_dict("records") if hasattr(table, "to_dict") else table
    km = presets.spherical_kmeans(4, random_state=0).fit(X)
    assert rows[0]["qe"] == pytest.approx(km.inertia_, rel=1e-9)
    assert abs(rows[1]["eta"]) < 1e-9  # Elkan follows the same iterates


@pytest.mark.parametrize("schedule", ["full", "index"])
def test_huge_weights_give_unit_centres_equal_to_those_of_weights_about_one(schedule):
    """Accepted weights of 2**520 (about 3e156) once made a cluster's weighted sum overflow
    in its squared norm, and its centre 0; a power-of-two rescaling gives the same centres."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(300, 3))
    w = rng.uniform(0.5, 2.0, size=len(X))

    def fit(weights):
        if schedule == "full":
            return presets.spherical_kmeans(5, random_state=0).fit(X, sample_weight=weights)
        return Clusterer(5, schedule=IndexTraining(), mstep="spherical",
                         random_state=0).fit(X, sample_weight=weights)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = fit(w)
        for power in (520, 660):
            huge = fit(w * 2.0 ** power)
            np.testing.assert_allclose(np.linalg.norm(huge.cluster_centers_, axis=1), 1.0)
            np.testing.assert_array_equal(huge.cluster_centers_, reference.cluster_centers_)


def test_zero_norm_row_on_dask_chunks_is_named_by_its_row_in_X():
    """The first row of zero norm and the count over all the chunks, as in memory (the row
    was numbered in its chunk, of whichever chunk failed first)."""
    dask = pytest.importorskip("dask")
    import dask.array as da
    X = np.random.RandomState(0).normal(size=(100, 3))
    X[[42, 77]] = 0.0
    message = (r"^X has 2 rows of zero norm \(the first is row 42\); a spherical model needs "
               r"a direction for every row")
    with pytest.raises(ValueError, match=message):
        presets.spherical_kmeans(4, random_state=0).fit(X)
    with dask.config.set(scheduler="synchronous"), pytest.raises(ValueError, match=message):
        presets.spherical_kmeans(4, random_state=0).fit(da.from_array(X, chunks=(30, 3)))
