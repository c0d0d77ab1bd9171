"""Seeders: contract (rows of X, shape, dtype, determinism), weights, warnings, cost counts."""
import math
import pickle
import re
import warnings

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from clusterkit import (AFKMC2, ByClusters, ByDimension, Clusterer, HierarchicalKMeansPlusPlus,
                        KMeansParallel, KMeansPlusPlus, RandomSeeder, SampledSeeder)
from clusterkit import _reference as ref
from clusterkit._engine.contracts import Seeder
from clusterkit._engine.progress import QuietDisplay
from clusterkit._engine.state import FitState
from clusterkit.presets import large_scale, vc_gmm

from ._helpers import composition

SEEDERS = [
    RandomSeeder(),
    KMeansPlusPlus(),
    KMeansPlusPlus(n_local_trials=1),
    AFKMC2(chain_length=20),
    AFKMC2(chain_length=20, n_candidates=1),
    AFKMC2(chain_length=3, n_candidates=3, potential_sample=50),
    SampledSeeder(size=150),
    SampledSeeder(AFKMC2(chain_length=5), size=150),
    ByDimension(),
    ByDimension(high=AFKMC2(chain_length=20), max_features=1),
    ByClusters(min_clusters=2),
    ByClusters(high=AFKMC2(chain_length=20), min_clusters=1000),
    HierarchicalKMeansPlusPlus(),
    HierarchicalKMeansPlusPlus(n_cells=2, oversampling=2.0),
    KMeansParallel(),
    KMeansParallel(HierarchicalKMeansPlusPlus(), n_rounds=2, oversampling=1.0),
]


def _state(X, n_clusters, seed=0, n_threads=1):
    return FitState(n_clusters=n_clusters, n_features=X.shape[1],
                    random_state=np.random.RandomState(seed), n_threads=n_threads, needs_resp=False)


def _seed(seeder, X, w, n_clusters, seed=0, n_threads=1):
    state = _state(X, n_clusters, seed, n_threads)
    centers = seeder.seed(X, w, n_clusters, state)
    return centers, state.meter.cost["seeding"]


def _row_indices(X, centers):
    """Row of X equal to each centre (asserting there is one)."""
    d2 = ref.sqdist(centers, X)
    idx = d2.argmin(axis=1)
    assert_array_equal(d2[np.arange(len(centers)), idx], 0)
    return idx


def _blobs(n_samples=400, n_features=3, dtype=np.float64, seed=0):
    rng = np.random.RandomState(seed)
    centers = rng.uniform(-20, 20, size=(8, n_features))
    X = centers[rng.randint(8, size=n_samples)] + rng.normal(size=(n_samples, n_features))
    return np.ascontiguousarray(X, dtype=dtype)


def _grid(side=4, n_per_cluster=30, spacing=100.0, seed=0):
    """Well separated unit-variance blobs on a square grid."""
    rng = np.random.RandomState(seed)
    g = np.stack(np.meshgrid(np.arange(side), np.arange(side)), -1).reshape(-1, 2) * spacing
    return (g[:, None, :] + rng.normal(size=(len(g), n_per_cluster, 2))).reshape(-1, 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seeder", SEEDERS, ids=repr)
def test_centres_are_rows_of_X_with_shape_and_dtype(seeder, dtype):
    X = _blobs(dtype=dtype)
    w = np.ones(len(X), dtype=dtype)
    seeder._validate(X, 10, composition())
    centers, _ = _seed(seeder, X, w, 10)
    assert centers.shape == (10, X.shape[1])
    assert centers.dtype == dtype
    assert centers.flags.c_contiguous
    idx = _row_indices(X, centers)
    assert len(np.unique(idx)) == 10


@pytest.mark.parametrize("seeder", SEEDERS, ids=repr)
def test_deterministic_for_fixed_random_state_and_any_thread_count(seeder):
    X = _blobs()
    w = np.random.RandomState(1).uniform(0.5, 2, size=len(X))
    a, cost_a = _seed(seeder, X, w, 12, seed=3, n_threads=1)
    b, cost_b = _seed(seeder, X, w, 12, seed=3, n_threads=2)
    c, _ = _seed(seeder, X, w, 12, seed=4, n_threads=1)
    assert_array_equal(a, b)
    assert cost_a == cost_b
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("seeder", SEEDERS, ids=repr)
def test_scaling_all_weights_changes_nothing(seeder):
    # a power of two scales every sum and cumulative sum exactly
    X = _blobs()
    w = np.random.RandomState(1).uniform(0.5, 2, size=len(X))
    a, _ = _seed(seeder, X, w, 9, seed=5)
    b, _ = _seed(seeder, X, 4 * w, 9, seed=5)
    assert_array_equal(a, b)


@pytest.mark.parametrize("seeder", SEEDERS, ids=repr)
def test_zero_weight_rows_are_never_chosen_when_avoidable(seeder):
    X = _blobs(n_samples=300)
    w = np.ones(len(X))
    w[np.random.RandomState(2).permutation(len(X))[:250]] = 0  # 50 rows left
    for seed in range(5):
        centers, _ = _seed(seeder, X, w, 20, seed=seed)
        assert np.all(w[_row_indices(X, centers)] > 0)


@pytest.mark.parametrize("seeder", SEEDERS, ids=repr)
def test_every_positive_weight_row_is_chosen_when_too_few(seeder):
    X = _blobs(n_samples=300)
    w = np.zeros(len(X))
    w[[3, 70, 150]] = 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # duplicates may be reported
        centers, _ = _seed(seeder, X, w, 5)
    idx = _row_indices(X, centers)
    assert {3, 70, 150} <= set(idx.tolist())


@pytest.mark.parametrize("seeder", [KMeansPlusPlus(n_local_trials=1), KMeansPlusPlus(),
                                    AFKMC2(chain_length=20)], ids=repr)
def test_huge_weight_row_is_chosen_first(seeder):
    X = _blobs()
    w = np.ones(len(X))
    w[123] = 1e9
    for seed in range(10):
        centers, _ = _seed(seeder, X, w, 5, seed=seed)
        assert_array_equal(centers[0], X[123])


def test_random_seeder_picks_a_huge_weight_row():
    X = _blobs()
    w = np.ones(len(X))
    w[123] = 1e9
    for seed in range(10):
        centers, _ = _seed(RandomSeeder(), X, w, 5, seed=seed)
        assert 123 in _row_indices(X, centers)


def test_kmeans_plus_plus_covers_separated_blobs():
    X = _grid()
    for seeder in (KMeansPlusPlus(), KMeansPlusPlus(n_local_trials=1)):
        centers, _ = _seed(seeder, X, np.ones(len(X)), 16)
        blob = _row_indices(X, centers) // 30
        assert len(np.unique(blob)) >= 15


def test_afkmc2_quantization_error_close_to_kmeans_plus_plus():
    # Median over seeds: a seeding that misses a blob costs ~1e5 against ~2e3, so the mean over
    # a few seeds is dominated by how many misses happen to occur.
    X = _grid()
    w = np.ones(len(X))

    def median_qe(seeder):
        return np.median([ref.sqdist(X, _seed(seeder, X, w, 16, seed=s)[0]).min(1).sum()
                          for s in range(100, 115)])

    kpp = median_qe(KMeansPlusPlus(n_local_trials=1))
    afk = median_qe(AFKMC2(chain_length=200))
    assert 0.8 * kpp <= afk <= 1.2 * kpp
    assert afk < 0.01 * median_qe(RandomSeeder())


@pytest.mark.parametrize("n_clusters", [1, 2, 7])
@pytest.mark.parametrize("n_local_trials", [None, 1, 3])
def test_kmeans_plus_plus_evaluation_count(n_local_trials, n_clusters):
    """Pruning only removes work: the count is at most the unpruned one plus the centre
    distances, and it is exactly the first centre's pass when there is only one."""
    X = _blobs()
    n = len(X)
    _, cost = _seed(KMeansPlusPlus(n_local_trials), X, np.ones(n), n_clusters)
    trials = 2 + int(math.log(n_clusters)) if n_local_trials is None else n_local_trials
    per_step = n if trials == 1 else (trials + 1) * n
    if n_clusters == 1:
        assert cost == n
    else:
        assert n < cost <= n + (n_clusters - 1) * per_step + trials * n_clusters ** 2


def test_kmeans_plus_plus_gives_nearest_seed_labels():
    X = _blobs()
    state = FitState(n_clusters=7, n_features=X.shape[1],
                     random_state=np.random.RandomState(0), n_threads=2, needs_resp=False)
    centers, labels = KMeansPlusPlus().seeding(X, np.ones(len(X)), 7, state)
    assert_array_equal(labels, ((X[:, None] - centers) ** 2).sum(-1).argmin(1))
    # seed() gives the same centres from the same stream
    state = FitState(n_clusters=7, n_features=X.shape[1],
                     random_state=np.random.RandomState(0), n_threads=2, needs_resp=False)
    assert_array_equal(KMeansPlusPlus().seed(X, np.ones(len(X)), 7, state), centers)
    # a sample's labels are not the data's; a sample of all rows keeps them
    sampled = SampledSeeder(KMeansPlusPlus(), size=len(X) // 2)
    assert sampled.seeding(X, np.ones(len(X)), 7, state).labels is None
    whole = SampledSeeder(KMeansPlusPlus(), size=len(X)).seeding(X, np.ones(len(X)), 7, state)
    assert_array_equal(whole.labels, ((X[:, None] - whole.centers) ** 2).sum(-1).argmin(1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kmeans_plus_plus_in_the_principal_frame_chooses_the_same_rows(dtype, monkeypatch):
    """From ROTATE_MIN_FEATURES features greedy k-means++ runs on the rows turned to their
    principal axes: the same distances up to rounding, so the same rows (here no near-tie),
    and the centres are those rows as given, with each sample's nearest centre."""
    from clusterkit.seeding import seeders
    rng = np.random.RandomState(3)
    means = rng.normal(scale=4, size=(12, 70))
    X = (means[rng.randint(12, size=900)] + rng.normal(size=(900, 70))).astype(dtype)
    w = rng.uniform(0.5, 2, size=900).astype(dtype)
    assert X.shape[1] >= seeders.ROTATE_MIN_FEATURES

    def seeding():
        state = FitState(n_clusters=20, n_features=70, random_state=np.random.RandomState(0),
                         n_threads=2, needs_resp=False)
        return KMeansPlusPlus().seeding(X, w, 20, state), state.meter.cost["seeding"]

    (rotated, labels), cost = seeding()
    monkeypatch.setattr(seeders, "ROTATE_MIN_FEATURES", 10 ** 9)
    (plain, plain_labels), plain_cost = seeding()
    assert_array_equal(rotated, plain)
    assert rotated.dtype == dtype and set(_row_indices(X, rotated)) <= set(range(900))
    assert_array_equal(labels, plain_labels)
    assert_array_equal(labels, ((X[:, None] - rotated) ** 2).sum(-1).argmin(1))
    assert cost == plain_cost  # (a sum stopped early counts as one evaluation)


@pytest.mark.parametrize("n_clusters", [1, 2, 7])
@pytest.mark.parametrize("chain_length", [1, 20])
@pytest.mark.parametrize("n_candidates", [1, 3, "auto"])
def test_afkmc2_evaluation_count(chain_length, n_clusters, n_candidates):
    """The proposal's pass, each chain's candidates against the centres before it, and, when
    greedy, each chain's final state against the centres and at most every row of the
    potential sample (here all rows)."""
    X = _blobs()
    n = len(X)
    _, cost = _seed(AFKMC2(chain_length, n_candidates), X, np.ones(n), n_clusters)
    L = 2 + int(math.log(n_clusters)) if n_candidates == "auto" else n_candidates
    plain = 0 if n_clusters == 1 else n + L * chain_length * n_clusters * (n_clusters - 1) // 2
    if L == 1 or n_clusters == 1:
        assert cost == plain
    else:
        assert plain + L * n_clusters * (n_clusters - 1) // 2 < cost
        assert cost <= plain + L * (n_clusters * (n_clusters - 1) // 2 + n * (n_clusters - 1))


def test_random_seeder_costs_nothing():
    X = _blobs()
    assert _seed(RandomSeeder(), X, np.ones(len(X)), 5)[1] == 0


class _Recorder(Seeder):
    """Records what it is called with and returns the first rows."""

    def seed(self, X, sample_weight, n_clusters, state):
        self.X, self.sample_weight = X, sample_weight
        state.meter.count("seeding", 7)
        return np.ascontiguousarray(X[:n_clusters])


def test_sampled_seeder_sample_keeps_renormalised_weights():
    X = _blobs(n_samples=400)
    w = np.random.RandomState(0).uniform(0.5, 2, size=len(X))
    w[:100] = 0
    inner = _Recorder()
    centers, cost = _seed(SampledSeeder(inner, size=120), X, w, 4)
    assert cost == 7
    assert inner.X.shape == (120, X.shape[1])
    idx = _row_indices(X, inner.X)
    assert len(np.unique(idx)) == 120
    assert np.all(idx >= 100)  # zero-weight rows are avoidable here
    assert np.all(np.diff(idx) > 0)  # sample kept in data order
    scale = w.sum() / w[idx].sum()
    np.testing.assert_allclose(inner.sample_weight, w[idx] * scale, rtol=1e-12)
    np.testing.assert_allclose(inner.sample_weight.sum(), w.sum(), rtol=1e-12)
    assert_array_equal(centers, inner.X[:4])


def test_sampled_seeder_uses_all_positive_rows_when_fewer_than_size():
    X = _blobs(n_samples=300)
    w = np.zeros(len(X))
    w[::10] = 1  # 30 positive rows
    inner = _Recorder()
    _seed(SampledSeeder(inner, size=100), X, w, 4)
    assert_array_equal(_row_indices(X, inner.X), np.arange(0, 300, 10))


def test_sampled_seeder_default_size_and_cost():
    X = _blobs(n_samples=12_000, n_features=2)
    inner = _Recorder()
    _seed(SampledSeeder(inner), X, np.ones(len(X)), 3)
    assert len(inner.X) == 10_000  # min(n_samples, max(20 * n_clusters, 10_000))
    _seed(SampledSeeder(inner), X, np.ones(len(X)), 600)
    assert len(inner.X) == 12_000
    _, cost = _seed(SampledSeeder(AFKMC2(chain_length=3, n_candidates=1), size=500), X,
                    np.ones(len(X)), 6)
    assert cost == 500 + 3 * 6 * 5 // 2  # AFK-MC^2's count on 500 rows


def test_sampled_seeder_with_the_whole_data_is_the_inner_seeder():
    X = _blobs()
    w = np.ones(len(X))
    for size in (len(X), 10 * len(X)):
        a, cost_a = _seed(SampledSeeder(KMeansPlusPlus(), size=size), X, w, 6)
        b, cost_b = _seed(KMeansPlusPlus(), X, w, 6)
        assert_array_equal(a, b)
        assert cost_a == cost_b


def test_kmeans_plus_plus_warns_on_too_few_distinct_points():
    X = np.repeat(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 5.0]]), 10, axis=0)
    w = np.ones(len(X))
    for seeder in (KMeansPlusPlus(), KMeansPlusPlus(n_local_trials=1)):
        with pytest.warns(RuntimeWarning, match=r"remaining 2 centres are drawn uniformly") as rec:
            centers, _ = _seed(seeder, X, w, 5)
        assert len(rec) == 1
        assert rec[0].filename == __file__  # stacklevel=2: the caller of seed()
        assert len(np.unique(centers, axis=0)) == 3
        assert len(np.unique(_row_indices(X, centers))) == 3


def test_kmeans_plus_plus_fallback_prefers_positive_weight_rows():
    # rows 0-3 coincide and carry all the weight; the distinct rows 4 and 5 have zero weight
    X = np.array([[0.0, 0.0]] * 4 + [[1.0, 0.0], [2.0, 0.0]])
    w = np.array([1.0, 1.0, 1.0, 1.0, 0.0, 0.0])
    for seed in range(5):
        state = _state(X, 6, seed=seed)
        with pytest.warns(RuntimeWarning, match="KMeansPlusPlus found only 1 distinct points"):
            centers, labels = KMeansPlusPlus(n_local_trials=1).seeding(X, w, 6, state)
        # the three other copies of row 0 come before the zero-weight rows
        assert_array_equal(centers[:4], 0)
        assert_array_equal(np.sort(centers[4:, 0]), [1.0, 2.0])
        assert state.meter.cost["seeding"] == 6  # only the first centre's D^2
        # rows 4 and 5 are now centres, but the seeding never measured them: no labels
        assert labels is None
    # fallback centres with weight duplicate chosen ones: the labels stay exact
    state = _state(X, 3, seed=0)
    with pytest.warns(RuntimeWarning):
        centers, labels = KMeansPlusPlus(n_local_trials=1).seeding(X, w, 3, state)
    assert_array_equal(labels, ((X[:, None] - centers) ** 2).sum(-1).argmin(1))


def test_random_seeder_with_weights_beyond_float64s_range():
    """Normalised, the small weights underflow to 0; the draws still follow the weights."""
    X = np.arange(6.0)[:, None]
    w = np.array([1e-300, 1e300, 1e-300, 1e-300, 1e300, 1e-300])
    for seed in range(5):
        centers, _ = _seed(RandomSeeder(), X, w, 4, seed=seed)
        rows = _row_indices(X, centers)
        assert len(set(rows.tolist())) == 4
        assert set(rows[:2].tolist()) == {1, 4}  # the heavy rows first


def test_afkmc2_warns_on_duplicates():
    X = np.repeat(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 5.0]]), 10, axis=0)
    with pytest.warns(RuntimeWarning, match=r"AFKMC2 chose 2 duplicate centre\(s\)"):
        centers, _ = _seed(AFKMC2(chain_length=50), X, np.ones(len(X)), 5)
    assert len(np.unique(centers, axis=0)) == 3


def test_no_warning_with_enough_distinct_points():
    X = _blobs()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for seeder in SEEDERS:
            _seed(seeder, X, np.ones(len(X)), 10)


TRIALS = "KMeansPlusPlus: n_local_trials must be an integer >= 1 or None; got "
CHAIN = "AFKMC2: chain_length must be an integer >= 1 or 'auto'; got "
CANDIDATES = "AFKMC2: n_candidates must be an integer >= 1 or 'auto'; got "
POTENTIAL = ("AFKMC2: potential_sample must be an integer in [1, 9223372036854775807], 'auto' "
             "or 'all'; got ")


@pytest.mark.parametrize("seeder, error, match", [
    (KMeansPlusPlus(n_local_trials=0), ValueError, "^" + re.escape(TRIALS + "0.") + "$"),
    (KMeansPlusPlus(n_local_trials=1.5), TypeError, "^" + re.escape(TRIALS + "1.5.") + "$"),
    (KMeansPlusPlus(n_local_trials=True), TypeError, "^" + re.escape(TRIALS + "True.") + "$"),
    (AFKMC2(chain_length=0), ValueError, "^" + re.escape(CHAIN + "0.") + "$"),
    (AFKMC2(chain_length=None), TypeError, "^" + re.escape(CHAIN + "None.") + "$"),
    (AFKMC2(chain_length="long"), ValueError, "^" + re.escape(CHAIN + "'long'.") + "$"),
    (AFKMC2(n_candidates=0), ValueError, "^" + re.escape(CANDIDATES + "0.") + "$"),
    (AFKMC2(n_candidates="greedy"), ValueError, "^" + re.escape(CANDIDATES + "'greedy'.") + "$"),
    (AFKMC2(n_candidates=2.0), TypeError, "^" + re.escape(CANDIDATES + "2.0.") + "$"),
    (AFKMC2(potential_sample=0), ValueError, "^" + re.escape(POTENTIAL + "0.") + "$"),
    (AFKMC2(potential_sample="some"), ValueError, "^" + re.escape(POTENTIAL + "'some'.") + "$"),
    (AFKMC2(potential_sample=None), TypeError, "^" + re.escape(POTENTIAL + "None.") + "$"),
    (AFKMC2(potential_sample=2**63), ValueError, "^" + re.escape(POTENTIAL + f"{2**63}.") + "$"),
    (SampledSeeder(size=5), ValueError, r"size=5 must be >= n_clusters=10\."),
    (SampledSeeder(size=0), ValueError,
     r"^SampledSeeder: size must be an integer >= 1, 'schedule' or None; got 0\.$"),
    (SampledSeeder(size="big"), ValueError,
     r"^SampledSeeder: size must be an integer >= 1, 'schedule' or None; got 'big'\.$"),
    (SampledSeeder(seeder="kmeans++"), TypeError,
     r"^SampledSeeder: seeder must be a Seeder or None; got 'kmeans\+\+'\.$"),
    (SampledSeeder(AFKMC2(chain_length=-1)), ValueError, "^" + re.escape(CHAIN + "-1.") + "$"),
    (ByDimension(max_features=0), ValueError,
     r"^ByDimension: max_features must be an integer >= 1; got 0\.$"),
    (ByDimension(low="kmeans++"), TypeError,
     r"^ByDimension: low must be a Seeder or None; got 'kmeans\+\+'\.$"),
    (ByDimension(high=3), TypeError, r"^ByDimension: high must be a Seeder or None; got 3\.$"),
    (ByDimension(low=AFKMC2(chain_length=0)), ValueError, "^" + re.escape(CHAIN + "0.") + "$"),
    # the branch the 3 features do not choose, and one nested in it, are checked as well
    (ByDimension(high=AFKMC2(chain_length=0)), ValueError, "^" + re.escape(CHAIN + "0.") + "$"),
    (ByDimension(low=AFKMC2(chain_length="x"), max_features=2), ValueError,
     "^" + re.escape(CHAIN + "'x'.") + "$"),
    (ByDimension(high=ByDimension(low=SampledSeeder(KMeansPlusPlus(n_local_trials=0)))),
     ValueError, "^" + re.escape(TRIALS + "0.") + "$"),
    (ByClusters(min_clusters=0), ValueError,
     r"^ByClusters: min_clusters must be an integer >= 1; got 0\.$"),
    (ByClusters(min_rows_per_cluster=-1), ValueError,
     r"^ByClusters: min_rows_per_cluster must be an integer >= 0; got -1\.$"),
    (ByClusters(high="kmeans||"), TypeError,
     r"^ByClusters: high must be a Seeder or None; got 'kmeans\|\|'\.$"),
    # (10 clusters run low; high is checked all the same)
    (ByClusters(high=KMeansPlusPlus(n_local_trials=0)), ValueError,
     "^" + re.escape(TRIALS + "0.") + "$"),
])
def test_validation_messages(seeder, error, match):
    with pytest.raises(error, match=match):
        seeder._validate(_blobs(), 10, composition())


@pytest.mark.parametrize("seeder", SEEDERS + [SampledSeeder()], ids=repr)
def test_valid_parameters_pass_validation(seeder):
    seeder._validate(_blobs(), 10, composition())


def test_constructor_stores_arguments_unchanged_and_pickles():
    inner = AFKMC2(chain_length="long")
    assert KMeansPlusPlus(n_local_trials=-3).n_local_trials == -3
    assert AFKMC2(chain_length="x").chain_length == "x"
    sampled = SampledSeeder(seeder=inner, size=2.5)
    assert sampled.seeder is inner and sampled.size == 2.5
    assert SampledSeeder().seeder is None and SampledSeeder().size is None
    for seeder in SEEDERS:
        assert pickle.loads(pickle.dumps(seeder)) == seeder
    assert repr(AFKMC2()) == ("AFKMC2(chain_length='auto', n_candidates='auto', "
                              "potential_sample='auto')")


def test_afkmc2_reports_progress_and_slices_do_not_change_the_centres():
    from clusterkit._kernels import _afkmc2
    rng = np.random.RandomState(0)
    X = rng.normal(size=(3000, 12))
    w = np.ones(len(X))
    C, m = 150, 5
    q = np.full(len(X), 1 / len(X))
    candidates = rng.randint(len(X), size=(C - 1, m)).astype(np.int32)
    uniforms = rng.uniform(size=(C - 1, m))
    whole = np.empty((C, 12)), np.empty(C, dtype=np.int32)
    n_whole = _afkmc2.afkmc2_chain(X, w, q, 7, candidates, uniforms, *whole, 2)
    sliced = np.empty((C, 12)), np.empty(C, dtype=np.int32)
    n_sliced = sum(_afkmc2.afkmc2_chain(X, w, q, 7, candidates, uniforms, *sliced, 2, b, e)
                   for b, e in [(1, 33), (33, 97), (97, C)])
    np.testing.assert_array_equal(whole[0], sliced[0])
    np.testing.assert_array_equal(whole[1], sliced[1])
    assert n_whole == n_sliced == m * C * (C - 1) // 2
    reports = []
    state = FitState(n_clusters=C, n_features=12, random_state=np.random.RandomState(0))
    state.meter.display = QuietDisplay()
    state.meter.display.report = lambda *args: reports.append(args)
    AFKMC2(chain_length=m).seed(X, w, C, state)
    assert reports[-1] == ("seeding", C, C, "centres")
    assert [done for _, done, *_ in reports] == sorted({done for _, done, *_ in reports})


@pytest.mark.parametrize("n_features", [3, 4, 5])
def test_by_dimension_runs_low_up_to_max_features_and_high_above(n_features):
    X = _blobs(n_features=n_features)
    w = np.ones(len(X))
    seeder = ByDimension(low=KMeansPlusPlus(n_local_trials=1), high=AFKMC2(chain_length=3),
                         max_features=4)
    chosen = seeder.low if n_features <= 4 else seeder.high
    state = _state(X, 10)
    centers = seeder.seed(X, w, 10, state)
    expected_state = _state(X, 10)
    assert_array_equal(centers, chosen.seed(X, w, 10, expected_state))
    assert state.meter.cost == expected_state.meter.cost
    # the chosen seeder's nearest-seed labels come with it (k-means++ has them, AFK-MC² not)
    seeding = seeder.seeding(X, w, 10, _state(X, 10))
    assert_array_equal(seeding.centers, centers)
    assert (seeding.labels is None) == (n_features > 4)


@pytest.mark.parametrize("make", [
    lambda: large_scale(3, chain_length="bogus"),
    lambda: vc_gmm(3, chain_length=-1),
    lambda: Clusterer(3, seed=ByDimension(low=KMeansPlusPlus(), high=AFKMC2(chain_length=0))),
])
def test_by_dimension_refuses_a_bad_value_in_the_seeder_it_does_not_run(make):
    """On 3 features the presets' ByDimension runs k-means++; their AFK-MC² for many
    features is checked all the same, before any work."""
    with pytest.raises(ValueError, match="^" + re.escape(CHAIN)):
        make().fit(_blobs(200, 3))


def test_by_dimension_defaults():
    assert ByDimension().max_features == 16
    assert ByDimension()._chosen(100, 16, 5) == KMeansPlusPlus()
    assert ByDimension()._chosen(100, 17, 5) == AFKMC2(chain_length=2, n_candidates=1)


def test_by_clusters_defaults():
    assert (ByClusters().min_clusters, ByClusters().min_rows_per_cluster) == (1000, 32)
    assert ByClusters()._chosen(10**6, 784, 999) == KMeansPlusPlus()
    assert ByClusters()._chosen(32000, 2, 1000) == KMeansParallel(oversampling=0.5)
    # (too few rows per cluster behind k-means||'s candidates)
    assert ByClusters()._chosen(31999, 2, 1000) == KMeansPlusPlus()


def test_by_clusters_is_the_chosen_seeder():
    """Below min_clusters (or min_rows_per_cluster) the low seeder's seeding (labels too),
    else the high one's, with the same draws and counts."""
    X = _blobs(600, 3)
    switch = ByClusters(low=KMeansPlusPlus(), high=KMeansParallel(), min_clusters=8,
                        min_rows_per_cluster=60)
    for n_clusters, alone in ((7, KMeansPlusPlus()), (8, KMeansParallel()),
                              (11, KMeansPlusPlus())):
        state, state_alone = _state(X, n_clusters), _state(X, n_clusters)
        got = switch.seeding(X, np.ones(600), n_clusters, state)
        want = alone.seeding(X, np.ones(600), n_clusters, state_alone)
        assert_array_equal(got.centers, want.centers)
        assert (got.labels is None) == (want.labels is None)
        assert state.meter.cost == state_alone.meter.cost


@pytest.mark.parametrize("n_candidates", [1, 2])
def test_afkmc2_redraws_centres_its_short_chains_repeat(n_candidates):
    """With chains of one candidate nearly every draw among 50 rows for 40 centres repeats a
    chosen row; those centres are redrawn from the rows not chosen yet, quietly, and the
    extra chains are counted."""
    X = _blobs(n_samples=50)
    w = np.random.RandomState(1).uniform(0.5, 2.0, size=len(X))
    for seed in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            centers, cost = _seed(AFKMC2(chain_length=1, n_candidates=n_candidates), X, w,
                                  40, seed=seed)
        rows = _row_indices(X, centers)
        assert len(set(rows.tolist())) == 40
        assert cost > len(X) + 40 * 39 // 2 * n_candidates  # the chains, then the redraws


def test_afkmc2_vc_gmm_seeding_of_many_clusters_is_quiet():
    """The reported case in small: plain AFK-MC^2 with chains of 2 on a weighted coreset,
    many centres: no duplicate is left and nothing is reported."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(3000, 100))
    w = rng.randint(1, 4, size=len(X)).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        centers, _ = _seed(AFKMC2(chain_length=2, n_candidates=1), X, w, 1000)
    assert len(np.unique(centers, axis=0)) == 1000


def test_a_subclass_that_redefines_seed_is_the_one_that_seeds():
    """A subclass of a seeder whose seeding() comes first (k-means++, by sample) that redefines
    seed() alone gets the default seeding around its own seed(): its centres, no labels."""
    X = _blobs()
    state = _state(X, 7)

    class FirstRows(KMeansPlusPlus):
        def seed(self, X, sample_weight, n_clusters, state):
            return X[:n_clusters].copy()

    class Wrapped(SampledSeeder):
        def seed(self, X, sample_weight, n_clusters, state):
            return super().seed(X, sample_weight, n_clusters, state) + 1.0

    seeding = FirstRows().seeding(X, np.ones(len(X)), 7, state)
    assert_array_equal(seeding.centers, X[:7]) and seeding.labels is None
    wrapped = Wrapped(FirstRows(), size=len(X)).seeding(X, np.ones(len(X)), 7, state)
    assert_array_equal(wrapped.centers, X[:7] + 1.0) and wrapped.labels is None
    model = Clusterer(7, seed=FirstRows(), max_iter=1, random_state=0).fit(X)
    assert model.cost_["seeding"] == 0  # its seed() ran, not k-means++
