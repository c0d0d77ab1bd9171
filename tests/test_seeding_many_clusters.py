"""Seeders for many clusters: two-level k-means++ and k-means|| (their contract beyond the
shared seeder tests of ``test_seeding.py``: edge sizes, duplicates, the work saved, quality on
separated blobs, threads, progress, dask, validation)."""
import re
import warnings

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from clusterkit import (ByClusters, Clusterer, FitState, HierarchicalKMeansPlusPlus,
                        KMeansParallel, KMeansPlusPlus, RandomSeeder, SampledSeeder)
from clusterkit._engine.progress import QuietDisplay
from clusterkit.metrics import quantization_error

from ._helpers import composition

NEW = [HierarchicalKMeansPlusPlus(), HierarchicalKMeansPlusPlus(oversampling=2.0),
       KMeansParallel(), KMeansParallel(HierarchicalKMeansPlusPlus(), oversampling=1.0)]


def _state(n_clusters, n_features, seed=0, n_threads=1):
    return FitState(n_clusters=n_clusters, n_features=n_features,
                    random_state=np.random.RandomState(seed), n_threads=n_threads)


def _seed(seeder, X, w, n_clusters, seed=0, n_threads=1):
    state = _state(n_clusters, X.shape[1], seed, n_threads)
    return seeder.seed(X, w, n_clusters, state), state


def _separated_blobs(n_blobs=40, n_features=8, n_per_blob=15, seed=0):
    """Unit-variance blobs at random places in a box 2,000 wide: far apart."""
    rng = np.random.RandomState(seed)
    means = rng.uniform(-1000, 1000, size=(n_blobs, n_features))
    X = means[:, None, :] + rng.normal(size=(n_blobs, n_per_blob, n_features))
    return X.reshape(-1, n_features), means


def _rows_of(X, centers):
    """Index of the row of ``X`` equal to each centre (asserting there is one)."""
    hits = [np.flatnonzero((X == c).all(axis=1)) for c in centers]
    assert all(len(h) for h in hits)
    return np.array([h[0] for h in hits])


@pytest.mark.parametrize("seeder", NEW, ids=repr)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_cluster_and_every_row(seeder, dtype):
    X = np.random.RandomState(0).normal(size=(60, 3)).astype(dtype)
    w = np.ones(60, dtype=dtype)
    one, _ = _seed(seeder, X, w, 1)
    assert one.shape == (1, 3) and one.dtype == dtype
    every, _ = _seed(seeder, X, w, 60)
    assert every.dtype == dtype and every.flags.c_contiguous
    assert sorted(_rows_of(X, every)) == list(range(60))


@pytest.mark.parametrize("seeder", NEW, ids=repr)
def test_duplicates_give_distinct_centres_while_there_are_enough(seeder):
    rng = np.random.RandomState(1)
    distinct = rng.normal(size=(30, 4))
    X = np.repeat(distinct, 7, axis=0)[rng.permutation(210)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 30 distinct rows: no fallback, no warning
        centers, _ = _seed(seeder, X, np.ones(210), 30)
    assert len(np.unique(centers, axis=0)) == 30
    with pytest.warns(RuntimeWarning, match="found only 30 distinct points"):
        centers, _ = _seed(seeder, X, np.ones(210), 33)
    assert len(np.unique(centers, axis=0)) == 30


@pytest.mark.parametrize("seeder", NEW, ids=repr)
def test_separated_blobs_each_get_a_centre(seeder):
    X, means = _separated_blobs()
    for seed in range(5):
        centers, _ = _seed(seeder, X, np.ones(len(X)), len(means), seed=seed)
        nearest_mean = ((centers[:, None, :] - means[None]) ** 2).sum(-1).argmin(axis=1)
        assert len(np.unique(nearest_mean)) == len(means)


@pytest.mark.parametrize("seeder", [HierarchicalKMeansPlusPlus(oversampling=2.0),
                                    KMeansParallel()], ids=repr)
def test_a_heavy_blob_is_seeded_like_its_repetition(seeder):
    # a blob of 5 rows with weight 40 each weighs as much as 200 rows: it gets a centre
    X, means = _separated_blobs(n_blobs=20, n_features=4, seed=3)
    w = np.full(len(X), 1e-3)
    w[:15] = 40.0  # the first blob is heavy, the others nearly weightless
    for seed in range(3):
        centers, _ = _seed(seeder, X, w, 20, seed=seed)
        assert np.min(((centers - means[0]) ** 2).sum(-1)) < 50


def test_two_levels_save_most_of_the_distances_flat_greedy_computes():
    X = np.random.RandomState(2).normal(size=(3000, 16))  # little structure: weak pruning
    w = np.ones(len(X))
    _, flat = _seed(KMeansPlusPlus(), X, w, 300)
    _, two_levels = _seed(HierarchicalKMeansPlusPlus(), X, w, 300)
    assert two_levels.meter.cost["seeding"] < flat.meter.cost["seeding"] / 3


class _Candidates(RandomSeeder):
    """Random rows (no distances), recording how many candidates it chose among."""

    seen = []

    def seed(self, X, sample_weight, n_clusters, state):
        self.seen.append((X.shape[0], float(sample_weight.sum())))
        return super().seed(X, sample_weight, n_clusters, state)


def test_kmeans_parallel_counts_one_pass_per_candidate_batch_and_keeps_the_weight():
    X = np.random.RandomState(3).normal(size=(3000, 6))
    w = np.random.RandomState(4).uniform(0.5, 1.5, size=len(X))
    _Candidates.seen = []
    _, state = _seed(KMeansParallel(_Candidates(), n_rounds=3), X, w, 50)
    (n_candidates, weight), = _Candidates.seen
    # the first candidate's pass, then every row against each round's new candidates
    assert state.meter.cost["seeding"] == 3000 * n_candidates
    assert 50 <= n_candidates <= 1 + 3 * 2 * 50 * 2  # about 2 C per round
    np.testing.assert_allclose(weight, w.sum())  # the candidates carry all the weight


@pytest.mark.parametrize("seeder", NEW, ids=repr)
def test_same_fit_with_one_and_two_threads(seeder):
    X, _ = _separated_blobs(n_blobs=30, n_features=6, n_per_blob=20, seed=4)
    X = X.astype(np.float32)
    fits = [Clusterer(30, seed=SampledSeeder(seeder, size=400), n_threads=n, random_state=5,
                      max_iter=5).fit(X) for n in (1, 2)]
    assert_array_equal(fits[0].cluster_centers_, fits[1].cluster_centers_)
    assert fits[0].cost_["seeding"] == fits[1].cost_["seeding"]


def test_progress_reports_coarse_centres_then_cells():
    X = np.random.RandomState(6).normal(size=(2000, 5))
    state = _state(64, 5)
    reports = []
    state.meter.display = QuietDisplay()
    state.meter.display.report = lambda *args: reports.append(args)
    HierarchicalKMeansPlusPlus().seed(X, np.ones(len(X)), 64, state)
    units = [unit for *_, unit in reports]
    assert units[0] == "coarse centres" and units[-1] == "cells"
    assert all(total == 8 for _, _, total, _ in reports)  # 8 cells for 64 centres


def test_kmeans_parallel_reports_rounds():
    X = np.random.RandomState(7).normal(size=(1000, 5))
    state = _state(30, 5)
    reports = []
    state.meter.display = QuietDisplay()
    state.meter.display.report = lambda *args: reports.append(args)
    KMeansParallel(n_rounds=4).seed(X, np.ones(len(X)), 30, state)
    rounds = [r for r in reports if r[3] == "rounds"]
    assert rounds[0][1:3] == (0, 4) and rounds[-1][1:3] == (4, 4)


def test_final_error_close_to_flat_greedy_seeds():
    X, _ = _separated_blobs(n_blobs=60, n_features=16, n_per_blob=25, seed=8)
    errors = {}
    for name, seeder in [("flat", KMeansPlusPlus()), ("two", HierarchicalKMeansPlusPlus()),
                         ("par", KMeansParallel())]:
        fit = Clusterer(60, seed=seeder, random_state=9).fit(X)
        errors[name] = quantization_error(X, fit.cluster_centers_)
    assert errors["two"] <= 1.05 * errors["flat"]
    assert errors["par"] <= 1.05 * errors["flat"]


@pytest.mark.parametrize("seeder", [HierarchicalKMeansPlusPlus(), KMeansParallel()], ids=repr)
def test_on_dask_chunks_as_in_memory(seeder):
    da = pytest.importorskip("dask.array")
    rng = np.random.RandomState(10)
    X = (rng.normal(size=(3000, 4)) + 20 * rng.randint(4, size=(3000, 1))).astype(np.float32)
    in_memory = Clusterer(12, seed=seeder, random_state=11).fit(X)
    chunked = Clusterer(12, seed=seeder, random_state=11).fit(da.from_array(X, chunks=(700, 4)))
    assert chunked.cost_["seeding"] == in_memory.cost_["seeding"]
    np.testing.assert_allclose(chunked.cluster_centers_, in_memory.cluster_centers_,
                               rtol=1e-5, atol=1e-4)


OVERSAMPLING = "HierarchicalKMeansPlusPlus: oversampling must be a finite number >= 1; got "


@pytest.mark.parametrize("seeder, error, match", [
    (HierarchicalKMeansPlusPlus(n_cells=0), ValueError,
     r"^HierarchicalKMeansPlusPlus: n_cells must be an integer >= 1 or None; got 0\.$"),
    (HierarchicalKMeansPlusPlus(oversampling=0.5), ValueError,
     "^" + re.escape(OVERSAMPLING + "0.5.") + "$"),
    (HierarchicalKMeansPlusPlus(oversampling="x"), TypeError,
     "^" + re.escape(OVERSAMPLING + "'x'.") + "$"),
    (KMeansParallel(n_rounds=0), ValueError,
     r"^KMeansParallel: n_rounds must be an integer >= 1; got 0\.$"),
    (KMeansParallel(oversampling=0), ValueError,
     r"^KMeansParallel: oversampling must be a finite number > 0; got 0\.$"),
    (KMeansParallel(oversampling=float("inf")), ValueError,
     r"^KMeansParallel: oversampling must be a finite number > 0; got inf\.$"),
    (KMeansParallel(seeder="greedy"), TypeError,
     r"^KMeansParallel: seeder must be a Seeder or None; got 'greedy'\.$"),
    (KMeansParallel(HierarchicalKMeansPlusPlus(n_cells=0)), ValueError,
     r"^HierarchicalKMeansPlusPlus: n_cells must be an integer >= 1 or None; got 0\.$"),
])
def test_validation_messages(seeder, error, match):
    with pytest.raises(error, match=match):
        seeder._validate(np.zeros((50, 2)), 10, composition())


def test_kmeans_parallel_on_csr_chooses_the_dense_rows_choice():
    """On CSR rows k-means|| draws the same candidates (the rounds' distances by the sparse
    kernel) and greedy k-means++ on them chooses the same rows; a composition that reaches it
    through the default seeder's ByClusters fits CSR data."""
    sparse = pytest.importorskip("scipy.sparse")
    X, _ = _separated_blobs(n_blobs=30, n_features=6, n_per_blob=40)
    X = np.maximum(X, 0)  # (a third of the entries zero)
    dense, _ = _seed(KMeansParallel(oversampling=0.5), X, np.ones(len(X)), 30)
    rows, _ = _seed(KMeansParallel(oversampling=0.5), sparse.csr_matrix(X), np.ones(len(X)), 30)
    assert_array_equal(rows, dense)
    model = Clusterer(30, seed=ByClusters(min_clusters=2), random_state=0)
    assert model.fit(sparse.csr_matrix(X)).cluster_centers_.shape == (30, 6)


def test_by_clusters_refuses_csr_for_a_dense_only_choice():
    sparse = pytest.importorskip("scipy.sparse")
    X = sparse.csr_matrix(np.eye(200, 3))
    seeder = ByClusters(high=KMeansParallel(HierarchicalKMeansPlusPlus()), min_clusters=2,
                        min_rows_per_cluster=1)
    with pytest.raises(TypeError, match=r"^KMeansParallel's seeder HierarchicalKMeansPlusPlus "
                                        r"cannot take sparse X"):
        seeder._validate(X, 3, composition())
