"""Seeding sized by the schedule: Schedule.seeding_rows, state.config.seeding_rows,
SampledSeeder(size="schedule", n_candidates=...), Clusterer's default and the presets, which
seed this way."""
import math

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from clusterkit import (ByClusters, Clusterer, FullBatch, KMeansPlusPlus, MiniBatch,
                        NestedDoubling, RandomSeeder, SampledSeeder, presets)
from clusterkit._engine.contracts import Seeder
from clusterkit._engine.state import FitState
from clusterkit.schedules import schedules


def _blobs(n_samples=4000, n_features=3, n_means=30, seed=0):
    rng = np.random.RandomState(seed)
    means = rng.uniform(-20, 20, size=(n_means, n_features))
    return means[rng.randint(n_means, size=n_samples)] + rng.normal(size=(n_samples,
                                                                          n_features))


@pytest.fixture
def sample_always(monkeypatch):
    """Schedules that size the seeding also for small data (the tests' data are small)."""
    monkeypatch.setattr(schedules, "_ALL_ROWS_WORK", 0)


class _RowsSeen(Seeder):
    """Random rows, recording how many rows each call saw (in ``seen``, a test helper)."""

    seen = []

    def seed(self, X, sample_weight, n_clusters, state):
        type(self).seen.append(X.shape[0])
        return RandomSeeder().seed(X, sample_weight, n_clusters, state)


def _sized(rows):
    """Rows of a seeding: ``rows`` at most, all rows for little work (``N C D <= 2^27``)."""
    return lambda n, k, d: n if n * k * d <= 2**27 else min(n, rows(k, d))


def _full(n, k, d):
    """A full batch's seeding rows."""
    return n if n * k * d <= 2**27 else min(n, max(2**13, _full_per_centre(n, k, d) * k))


def _nested(first):
    """A nested schedule's seeding rows: its first prefix, at least a full batch's rows; a
    full batch's alone when the first prefix is all the rows."""
    return lambda n, k, d: _full(n, k, d) if first(k) >= n else _sized(
        lambda k, d: max(first(k), 2**13, _full_per_centre(n, k, d) * k))(n, k, d)


def _per_centre(d):
    """A full batch's seeding rows per centre: 64 up to 32 features, 8 from 128 on."""
    return {2: 64, 3: 64, 8: 64, 32: 64, 64: 22, 128: 8, 384: 8, 784: 8}[d]


def _full_per_centre(n, k, d):
    """A full batch's seeding rows per centre with ``n`` rows: at least 32 from 1,000 clusters
    on where the data have 32 rows per cluster (the default seeding is then k-means||)."""
    return max(_per_centre(d), 32) if k >= 1000 and n >= 32 * k else _per_centre(d)


@pytest.mark.parametrize("schedule, expected", [
    (FullBatch(), _full),
    (MiniBatch(batch_size=100),
     _sized(lambda k, d: max(300, max(3, _per_centre(d) // 4) * k))),
    (NestedDoubling(), _nested(lambda k: max(5000, 20 * k))),
    (NestedDoubling(initial_batch=9000), _nested(lambda k: 9000)),
])
@pytest.mark.parametrize("n_samples, n_clusters, n_features",
                         [(1000, 10, 3), (30000, 100, 2), (10**6, 50, 8), (10**6, 4096, 32),
                          (10**6, 1000, 64), (10**6, 1000, 128), (70000, 1024, 784),
                          (10**5, 2000, 384), (70000, 4096, 784), (10**6, 999, 384),
                          (31999, 1000, 384), (32000, 1000, 384)])
def test_schedule_declares_the_rows_its_seeding_is_worth(schedule, expected, n_samples,
                                                         n_clusters, n_features):
    assert (schedule.seeding_rows(n_samples, n_clusters, n_features)
            == expected(n_samples, n_clusters, n_features))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("schedule, rows", [(MiniBatch(batch_size=100), 300),
                                            (NestedDoubling(initial_batch=700), 4000),
                                            (FullBatch(), 4000)])
def test_seeding_size_follows_the_schedule(schedule, rows, sample_always):
    X = _blobs()
    _RowsSeen.seen.clear()
    Clusterer(10, seed=SampledSeeder(_RowsSeen(), size="schedule"), schedule=schedule,
              random_state=0, max_iter=3).fit(X)
    assert _RowsSeen.seen == [rows]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_nested_batches_seed_on_their_first_prefix(sample_always):
    """The seeding's rows are the first prefix of the schedule's order, the first batch
    (here larger than 64 rows per centre)."""
    X = _blobs(n_samples=20000)
    seen = {}

    class FirstRows(Seeder):
        def seed(self, X, sample_weight, n_clusters, state):
            seen["rows"] = X.copy()
            seen["order"] = state.order
            return np.ascontiguousarray(X[:n_clusters])

    model = Clusterer(10, seed=SampledSeeder(FirstRows(), size="schedule"),
                      schedule=NestedDoubling(initial_batch=9000), random_state=0,
                      max_iter=2).fit(X)
    order = seen["order"]
    assert order is not None and seen["rows"].shape == (9000, 3)
    assert_array_equal(seen["rows"], (X - X.mean(axis=0))[order[:9000]])
    assert model.n_iter_ >= 1


def test_preset_seeding_cost_is_bounded_by_the_schedule(sample_always):
    """minibatch seeds on 3 batches' rows: at most (C - 1)(L + 1) evaluations per row of
    them, far fewer than a seeding of all rows would count."""
    X, k = _blobs(n_samples=20000, n_features=8), 20
    trials = 2 + int(math.log(k))
    model = presets.minibatch(k, batch_size=256, random_state=0).fit(X)
    assert 0 < model.cost_["seeding"] <= (k - 1) * (trials + 1) * 3 * 256 + k * k
    full = presets.minibatch(k, batch_size=256, seed=KMeansPlusPlus(), random_state=0).fit(X)
    assert model.cost_["seeding"] < full.cost_["seeding"] / 5


def test_presets_seed_on_all_rows_of_small_data():
    """For little work (N C D <= 2^27) the presets seed as before, labels included."""
    X = _blobs(n_samples=8192)
    for name in ("lloyd", "elkan", "gmm", "minibatch", "nmbatch"):
        new = getattr(presets, name)(10, random_state=0).fit(X)
        old = getattr(presets, name)(10, seed=KMeansPlusPlus(), random_state=0).fit(X)
        assert_array_equal(new.cluster_centers_, old.cluster_centers_)
        assert new.cost_ == old.cost_


def test_schedule_size_without_a_schedule_means_all_rows():
    """A state built by hand has no seeding_rows: all rows, with the inner seeder's labels."""
    X = _blobs(n_samples=500)
    state = FitState(n_clusters=5, n_features=3, random_state=np.random.RandomState(0))
    seeding = SampledSeeder(KMeansPlusPlus(), size="schedule").seeding(X, np.ones(500), 5,
                                                                       state)
    assert seeding.labels is not None and seeding.labels.shape == (500,)


def test_candidates_are_judged_on_another_sample():
    """n_candidates seedings, each judged on a sample of ``size`` rows: the judging counts
    ``size * C`` evaluations per candidate (random seeds count none themselves)."""
    X = _blobs()
    state = FitState(n_clusters=7, n_features=3, random_state=np.random.RandomState(0))
    centers = SampledSeeder(RandomSeeder(), size=200, n_candidates=3).seed(
        X, np.ones(len(X)), 7, state)
    assert centers.shape == (7, 3)
    assert state.meter.cost["seeding"] == 3 * 200 * 7


def test_best_candidate_is_kept():
    """The kept seeding's error on the judging sample is the lowest of the candidates'."""
    X = _blobs(n_samples=3000)
    w = np.ones(len(X))
    errors = {}
    for n_candidates in (1, 4):
        totals = []
        for seed in range(10):
            state = FitState(n_clusters=8, n_features=3,
                             random_state=np.random.RandomState(seed))
            c = SampledSeeder(RandomSeeder(), size=100, n_candidates=n_candidates).seed(
                X, w, 8, state)
            totals.append(((X[:, None, :] - c[None]) ** 2).sum(-1).min(1).sum())
        errors[n_candidates] = np.median(totals)
    assert errors[4] < errors[1]


def test_one_candidate_is_the_plain_sampled_seeding():
    X = _blobs()
    seeds = []
    for seeder in (SampledSeeder(KMeansPlusPlus(), size=300),
                   SampledSeeder(KMeansPlusPlus(), size=300, n_candidates=1)):
        state = FitState(n_clusters=6, n_features=3, random_state=np.random.RandomState(3))
        seeds.append(seeder.seed(X, np.ones(len(X)), 6, state))
    assert_array_equal(*seeds)


def test_schedule_size_parameters():
    with pytest.raises(ValueError, match="n_candidates"):
        Clusterer(3, seed=SampledSeeder(size="schedule", n_candidates=0)).fit(_blobs(100))
    with pytest.raises(ValueError, match="size"):
        Clusterer(3, seed=SampledSeeder(size="all")).fit(_blobs(100))


def test_float32_sample_gives_the_float64_rows_it_chose():
    """float32=True seeds on a float32 copy of the sample; the centres are the same rows of
    the float64 data, exactly."""
    X = _blobs(n_samples=3000, n_features=5)
    w = np.ones(len(X))
    state = FitState(n_clusters=12, n_features=5, random_state=np.random.RandomState(1))
    centers = SampledSeeder(KMeansPlusPlus(), size=800, float32=True).seed(X, w, 12, state)
    assert centers.dtype == np.float64
    assert all((X == c).all(axis=1).any() for c in centers)
    # the rows a seeding of the float32 sample itself chooses
    state = FitState(n_clusters=12, n_features=5, random_state=np.random.RandomState(1))
    sample = SampledSeeder(KMeansPlusPlus(), size=800).seed(X.astype(np.float32), w, 12,
                                                            state)
    assert_array_equal(centers.astype(np.float32), sample)


def test_float32_centres_that_are_no_rows_are_cast():
    class Means(Seeder):
        def seed(self, X, sample_weight, n_clusters, state):
            return np.repeat(X.mean(axis=0, keepdims=True), n_clusters, axis=0)

    X = _blobs(n_samples=1000)
    state = FitState(n_clusters=3, n_features=3, random_state=np.random.RandomState(0))
    centers = SampledSeeder(Means(), size=500, float32=True).seed(X, np.ones(1000), 3, state)
    assert centers.dtype == np.float64 and np.all(np.isfinite(centers))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_clusterer_seeds_by_the_schedule_by_default(sample_always):
    """Clusterer's default seeding (seed="auto", also None) is the presets': greedy
    k-means++ (k-means|| from 1,000 clusters on) on the schedule's seeding rows;
    seed="k-means++" seeds on all rows."""
    X, k = _blobs(n_samples=20000, n_features=8), 20
    presets_seed = SampledSeeder(ByClusters(), size="schedule", float32=True)
    for seed in ("auto", None):
        assert Clusterer(k, seed=seed)._strategies(X, X.mean(axis=0)).seed == presets_seed
    assert Clusterer().seed == "auto"
    trials = 2 + int(math.log(k))
    auto = Clusterer(k, max_iter=1, random_state=0).fit(X)
    rows = FullBatch().seeding_rows(20000, k, 8)
    assert rows < 20000
    assert 0 < auto.cost_["seeding"] <= (k - 1) * (trials + 1) * rows
    full = Clusterer(k, seed="k-means++", max_iter=1, random_state=0).fit(X)
    assert full.cost_["seeding"] > auto.cost_["seeding"] * 2


def test_clusterer_default_seeds_on_all_rows_of_small_data():
    """For little work (N C D <= 2^27) the default is greedy k-means++ on all rows."""
    X = _blobs(n_samples=8192)
    for schedule in ("full", "minibatch", "nmbatch"):
        new = Clusterer(10, schedule=schedule, random_state=0).fit(X)
        old = Clusterer(10, schedule=schedule, seed="k-means++", random_state=0).fit(X)
        assert_array_equal(new.cluster_centers_, old.cluster_centers_)
        assert new.cost_ == old.cost_
