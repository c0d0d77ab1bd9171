"""ElkanEStep: its kernels against NumPy, its bounds, and Lloyd's iterates from the same start."""
import numpy as np
import pytest
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning

from clusterkit import LWCS, Clusterer, ElkanEStep, FullEStep, HardMStep, Schedule, Seeder, presets
from clusterkit._kernels import _elkan

from ._helpers import assert_labels_equal_up_to_ties, composition

RTOL = {np.float32: 1e-5, np.float64: 1e-12}


def _blobs(n, d, c, dtype=np.float64, seed=0, spread=20.0):
    rng = np.random.RandomState(seed)
    means = rng.uniform(-spread, spread, size=(c, d))
    return (means[rng.randint(c, size=n)] + rng.normal(size=(n, d))).astype(dtype)


def _distances(X, centers):
    X, centers = X.astype(np.float64), centers.astype(np.float64)
    return np.sqrt(np.maximum(((X[:, None, :] - centers[None]) ** 2).sum(-1), 0))


def _half_cc(centers, n_threads=1):
    C = centers.shape[0]
    half_cc, half_min = np.empty((C, C)), np.empty(C)
    n_evals = _elkan.center_half_distances(centers, half_cc, half_min, n_threads)
    return half_cc, half_min, n_evals


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_clusters,n_features", [(1, 3), (7, 1), (33, 5), (20, 17)])
def test_center_half_distances_match_numpy(dtype, n_clusters, n_features):
    centers = _blobs(n_clusters, n_features, 4, dtype)
    expected = _distances(centers, centers) / 2
    results = []
    for n_threads in (1, 2):
        half_cc, half_min, n_evals = _half_cc(centers, n_threads)
        assert n_evals == n_clusters * (n_clusters - 1) // 2
        np.testing.assert_allclose(half_cc, expected, rtol=RTOL[dtype], atol=1e-6)
        np.testing.assert_array_equal(half_cc, half_cc.T)
        off = np.where(np.eye(n_clusters, dtype=bool), np.inf, expected)
        np.testing.assert_allclose(half_min, off.min(1), rtol=RTOL[dtype], atol=1e-6)
        results.append((half_cc, half_min))
    np.testing.assert_array_equal(results[0][0], results[1][0])


def _run_kernel(X, centers, bounds, shift_sum, previous, n_threads, rows=None):
    """One call of the kernel; ``bounds`` = (lower, last_dist2, visit_shift), kept by the
    caller between calls."""
    slack = 2.0 ** -12 if X.dtype == np.float32 else 2.0 ** -20
    half_cc, half_min, _ = _half_cc(centers)
    rows = np.arange(len(X), dtype=np.intp) if rows is None else rows
    labels = np.empty(len(rows), dtype=np.int32)
    dist2 = np.empty(len(rows), dtype=X.dtype)
    lower, last_dist2, visit_shift = bounds
    n_evals = _elkan.elkan_assign(X[rows], np.ones(len(rows), X.dtype), rows, centers, half_cc,
                                  half_min, shift_sum, lower, previous[rows], last_dist2,
                                  visit_shift, labels, dist2, None, None, slack, n_threads)
    return labels, dist2, n_evals


def _new_bounds(n_samples, n_clusters, dtype):
    return (np.empty((n_samples, n_clusters), dtype=np.float32), np.empty(n_samples, dtype),
            np.empty(n_samples))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_samples,n_features,n_clusters", [(1, 2, 1), (257, 3, 9),
                                                             (1001, 17, 31), (300, 1, 40)])
def test_elkan_kernel_is_nearest_centre_with_valid_bounds(dtype, n_samples, n_features,
                                                          n_clusters):
    """First visits, then visits after random centre moves: the labels are the nearest centres
    (up to ties), dist2 is exact, every stored bound stays below the true distance, and the
    results do not depend on the number of threads."""
    rng = np.random.RandomState(1)
    X = _blobs(n_samples, n_features, 6, dtype)
    centers = X[rng.choice(n_samples, n_clusters, replace=n_clusters > n_samples)].copy()
    per_thread = []
    for n_threads in (1, 2):
        state_rng = np.random.RandomState(2)
        bounds = _new_bounds(n_samples, n_clusters, dtype)
        lower = bounds[0]
        shift_sum = np.zeros(n_clusters)
        previous = np.full(n_samples, -1, dtype=np.int32)
        current = centers.copy()
        outputs = []
        for visit in range(4):
            labels, dist2, n_evals = _run_kernel(X, current, bounds, shift_sum, previous,
                                                 n_threads)
            d = _distances(X, current)
            assert_labels_equal_up_to_ties(X, current, labels, d.argmin(1), RTOL[dtype])
            np.testing.assert_allclose(dist2, d[np.arange(n_samples), labels] ** 2,
                                       rtol=RTOL[dtype] * 10, atol=1e-5)
            assert np.all(lower - shift_sum[None] <= d * (1 + 1e-9)), "a bound is invalid"
            assert (n_samples if visit in (0, 1) else 0) <= n_evals <= n_samples * n_clusters
            outputs.append((labels.copy(), dist2.copy(), n_evals))
            previous = labels
            # move the centres, except one from the third visit on (its samples' distances
            # are then reused); the kernel hears of it only through shift_sum
            moved = current + state_rng.normal(scale=0.3, size=current.shape).astype(dtype)
            if visit >= 1:
                moved[0] = current[0]
            shift_sum += np.sqrt(((moved.astype(np.float64) - current) ** 2).sum(1))
            current = moved
        per_thread.append(outputs)
    for (l1, d1, n1), (l2, d2, n2) in zip(*per_thread):
        np.testing.assert_array_equal(l1, l2)
        np.testing.assert_array_equal(d1, d2)
        assert n1 == n2


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_samples,n_features,n_clusters", [(1, 9, 1), (255, 12, 9),
                                                             (257, 40, 30), (700, 17, 31)])
def test_first_visits_in_tiles_match_numpy_and_the_bounded_kernel(dtype, n_samples,
                                                                   n_features, n_clusters):
    """First visits from gemm tiles: the nearest centres (up to ties), exact distances, every
    bound below the exact distance and close to it, the same for 1 and 2 threads; the next
    visit of elkan_assign from these bounds keeps the nearest centres."""
    rng = np.random.RandomState(3)
    X = _blobs(n_samples, n_features, 5, dtype, seed=4)
    X -= X.mean(0)  # as the driver centres them
    centers = X[rng.choice(n_samples, n_clusters, replace=n_clusters > n_samples)].copy()
    d = _distances(X, centers)
    slack = 2.0 ** -12 if dtype == np.float32 else 2.0 ** -20
    shift_sum = np.full(n_clusters, 0.5)
    rows = np.arange(2, n_samples + 2, dtype=np.intp)  # rows of the state, not the batch
    per_thread = []
    for n_threads in (1, 2):
        lower, last_dist2, visit_shift = _new_bounds(n_samples + 2, n_clusters, dtype)
        labels = np.empty(n_samples, dtype=np.int32)
        dist2 = np.empty(n_samples, dtype=dtype)
        n_evals = _elkan.elkan_init_bounds(X, rows, centers, shift_sum, lower, last_dist2,
                                           visit_shift, labels, dist2, slack, n_threads)
        assert n_evals == n_samples * (n_clusters + 1)
        assert_labels_equal_up_to_ties(X, centers, labels, d.argmin(1), RTOL[dtype])
        np.testing.assert_allclose(dist2, d[np.arange(n_samples), labels] ** 2,
                                   rtol=RTOL[dtype] * 10, atol=1e-5)
        np.testing.assert_array_equal(last_dist2[rows], dist2)
        np.testing.assert_array_equal(visit_shift[rows], shift_sum[labels])
        valid = lower[rows].astype(np.float64) - shift_sum
        assert np.all(valid <= d * (1 + 1e-9)), "a bound is above the distance"
        np.testing.assert_allclose(valid, d, rtol=1e-2, atol=0.05)
        per_thread.append((labels, dist2, lower[rows].copy()))
        # a visit of the bounded kernel from these bounds (centres still): the same labels
        half_cc, half_min, _ = _half_cc(centers)
        again = np.empty(n_samples, dtype=np.int32)
        _elkan.elkan_assign(X, np.ones(n_samples, dtype), rows, centers, half_cc, half_min,
                            shift_sum, lower, labels, last_dist2, visit_shift, again,
                            np.empty(n_samples, dtype), None, None, slack, n_threads)
        np.testing.assert_array_equal(again, labels)
    for a, b in zip(*per_thread):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="too few"):
        _elkan.elkan_init_bounds(X[:, :8].copy(), rows, centers[:, :8].copy(), shift_sum,
                                 lower, last_dist2, visit_shift, labels, dist2, slack, 1)


def test_elkan_kernel_bounds_survive_samples_outside_the_batch():
    """Rows not in a batch keep their bounds; after more centre moves they are still valid."""
    X = _blobs(500, 4, 8)
    centers = X[:12].copy()
    bounds = _new_bounds(500, 12, X.dtype)
    lower = bounds[0]
    shift_sum = np.zeros(12)
    previous = np.full(500, -1, dtype=np.int32)
    rng = np.random.RandomState(0)
    for _ in range(6):
        rows = np.sort(rng.choice(500, 120, replace=False)).astype(np.intp)
        labels, dist2, _ = _run_kernel(X, centers, bounds, shift_sum, previous, 2, rows)
        np.testing.assert_allclose(dist2, _distances(X[rows], centers).min(1) ** 2, rtol=1e-12)
        np.testing.assert_array_equal(labels, _distances(X[rows], centers).argmin(1))
        previous[rows] = labels
        seen = previous >= 0
        assert np.all(lower[seen] - shift_sum <= _distances(X[seen], centers) * (1 + 1e-9))
        moved = centers + rng.normal(scale=0.5, size=centers.shape)
        shift_sum += np.sqrt(((moved - centers) ** 2).sum(1))
        centers = moved


class _Given(Seeder):
    def __init__(self, centers=None):
        self.centers = centers

    def seed(self, X, sample_weight, n_clusters, state):
        return np.array(self.centers, dtype=X.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("n_features", [5, 20])  # first visits by pruned search, by gemm tiles
def test_elkan_gives_lloyds_iterates(dtype, weighted, n_threads, n_features):
    X = _blobs(3001, n_features, 25, dtype, seed=3)
    w = np.random.RandomState(4).uniform(0.5, 2, len(X)).astype(dtype) if weighted else None
    init = X[np.random.RandomState(5).choice(len(X), 30, replace=False)]
    fits = {}
    for estep in (FullEStep(), ElkanEStep()):
        history = []
        km = Clusterer(30, seed=init, estep=estep, tol=0, max_iter=200, n_threads=n_threads,
                       callback=history.append).fit(X, sample_weight=w)
        fits[type(estep).__name__] = km
    lloyd, elkan = fits["FullEStep"], fits["ElkanEStep"]
    assert elkan.n_iter_ == lloyd.n_iter_
    assert [h["n_changed"] for h in elkan.history_] == [h["n_changed"] for h in lloyd.history_]
    assert_labels_equal_up_to_ties(X, lloyd.cluster_centers_, elkan.labels_, lloyd.labels_,
                                   RTOL[dtype])
    np.testing.assert_allclose(elkan.cluster_centers_, lloyd.cluster_centers_,
                               rtol=RTOL[dtype] * 10, atol=RTOL[dtype] * 100)
    assert elkan.cost_["estep"] < 0.5 * lloyd.cost_["estep"]


def test_elkan_relocates_empty_clusters_like_lloyd():
    X = _blobs(800, 2, 5, seed=7)
    init = np.vstack([X[:6], X[:2]])  # two duplicated centres: empty clusters at once
    fits = [Clusterer(8, seed=init, estep=e, tol=0, max_iter=100).fit(X)
            for e in (FullEStep(), ElkanEStep())]
    assert fits[0].n_iter_ == fits[1].n_iter_
    np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)
    np.testing.assert_allclose(fits[0].cluster_centers_, fits[1].cluster_centers_, rtol=1e-12)
    assert np.all(np.bincount(fits[1].labels_, minlength=8) > 0)


class _CheckedElkan(ElkanEStep):
    """Checks after every E-step that every stored bound is below the exact distance."""

    def __init__(self, max_bounds_bytes=None, checks=None):
        super().__init__(max_bounds_bytes)
        self.checks = checks

    def assign(self, X, sample_weight, centers, state):
        assignment = super().assign(X, sample_weight, centers, state)
        bounds = state.run.estep_state
        rows = np.arange(state.run.n_samples)[state.run.rows]
        d = _distances(X, centers)
        assert np.all(bounds.lower[rows] - bounds.shift_sum <= d * (1 + 1e-9))
        self.checks.append(len(rows))
        return assignment


class _RandomBatches(Schedule):
    def __init__(self, batch_size=200, n_steps=15):
        self.batch_size = batch_size
        self.n_steps = n_steps

    def batches(self, n_samples, state):
        for _ in range(self.n_steps):
            yield np.sort(state.random_state.choice(n_samples, self.batch_size, replace=False))

    def should_stop(self, state, tol):
        return False


@pytest.mark.parametrize("schedule", ["full", _RandomBatches()])
@pytest.mark.parametrize("n_features", [3, 12])  # first visits by pruned search, by gemm tiles
def test_bounds_are_never_violated_during_a_fit(schedule, n_features):
    X = _blobs(1500, n_features, 12, np.float32, seed=2)
    checks = []
    Clusterer(20, estep=_CheckedElkan(checks=checks), schedule=schedule, random_state=0,
              tol=0, max_iter=40).fit(X)
    assert len(checks) >= 2


def test_elkan_stops_and_labels_like_scikit_learn():
    from sklearn.datasets import make_blobs
    X, _ = make_blobs(3000, 4, centers=12, cluster_std=1.5, random_state=3)
    init = X[np.random.RandomState(1).choice(len(X), 12, replace=False)]
    ours = presets.elkan(12, seed=init, tol=0, max_iter=300).fit(X)
    theirs = KMeans(12, init=init, n_init=1, max_iter=300, tol=0, algorithm="elkan").fit(X)
    assert ours.history_[-1]["n_changed"] == 0 and ours.converged_
    assert ours.n_iter_ == theirs.n_iter_
    np.testing.assert_array_equal(ours.labels_, theirs.labels_)
    # the labels of the fixed point are kept: one distance per sample for the inertia
    assert ours.cost_["labels"] == len(X)
    np.testing.assert_allclose(ours.inertia_, theirs.inertia_, rtol=1e-10)


@pytest.mark.filterwarnings("ignore:KMeansPlusPlus found only:RuntimeWarning")
def test_duplicates_warn_like_scikit_learn():
    X = np.repeat(np.array([[0.0, 0.0], [5.0, 5.0], [9.0, 0.0]]), 10, axis=0)
    with pytest.warns(ConvergenceWarning, match=r"Number of distinct clusters \(3\) found"):
        presets.elkan(4, random_state=0).fit(X)


class _Exploding(Seeder):
    def seed(self, X, sample_weight, n_clusters, state):
        raise AssertionError("seeding ran before the bounds were checked")


def test_memory_budget_is_checked_before_any_work():
    X = _blobs(1000, 2, 4)
    need = 4 * 1000 * 10 + 16 * 1000 + 8 * 10 * 10
    with pytest.raises(ValueError, match=r"ElkanEStep needs .* GiB of bounds for 1000 samples"
                                         r" and n_clusters=10, above max_bounds_bytes=1000 .*"
                                         r"FullEStep .*PartialEStep"):
        Clusterer(10, seed=_Exploding(), estep=ElkanEStep(max_bounds_bytes=1000)).fit(X)
    Clusterer(10, estep=ElkanEStep(max_bounds_bytes=need), random_state=0).fit(X)
    # a coreset's size, not the data's, is what the bounds need
    ElkanEStep(max_bounds_bytes=4 * 300 * 10 + 16 * 300 + 800)._validate(
        X, 10, composition(reduce=LWCS(300), estep=ElkanEStep()))


@pytest.mark.parametrize("params,error,match", [
    ({"max_bounds_bytes": -1}, ValueError,
     r"^ElkanEStep: max_bounds_bytes must be an integer >= 0 or None; got -1\.$"),
    ({"max_bounds_bytes": 1.5}, TypeError,
     r"^ElkanEStep: max_bounds_bytes must be an integer >= 0 or None; got 1\.5\.$"),
])
def test_bad_parameters(params, error, match):
    with pytest.raises(error, match=match):
        Clusterer(3, estep=ElkanEStep(**params)).fit(_blobs(50, 2, 3))


def test_soft_mstep_is_refused():
    with pytest.raises(ValueError, match="ElkanEStep assigns hard labels; SoftMStep needs"):
        Clusterer(3, estep="elkan", mstep="soft").fit(_blobs(50, 2, 3))
    assert ElkanEStep.exact and not HardMStep.needs_resp


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_sums_equal_the_hard_msteps(dtype):
    """With the fixed-block layout the kernel sums the clusters in the M-step's order: the
    same bits as _mstep.accumulate_statistics, for 1 and 2 threads."""
    from clusterkit._kernels import _mstep
    X = _blobs(9001, 3, 10, dtype)
    w = np.random.RandomState(0).uniform(0.5, 2, len(X)).astype(dtype)
    centers = X[:10].copy()
    assert _mstep.blocks_fit(*X.shape[:1], 10, 3, X.itemsize)
    half_cc, half_min, _ = _half_cc(centers)
    for n_threads in (1, 2):
        labels = np.empty(len(X), dtype=np.int32)
        dist2 = np.empty(len(X), dtype=dtype)
        sums, weight = np.empty_like(centers), np.empty(10, dtype=dtype)
        _elkan.elkan_assign(X, w, np.arange(len(X), dtype=np.intp), centers, half_cc, half_min,
                            np.zeros(10), *_new_bounds(len(X), 10, dtype)[:1],
                            np.full(len(X), -1, np.int32), *_new_bounds(len(X), 10, dtype)[1:],
                            labels, dist2, sums, weight, 2.0 ** -20, n_threads)
        expected_sums, expected_weight = np.empty_like(centers), np.empty(10, dtype=dtype)
        _mstep.accumulate_statistics(X, w, labels[:, None], None, None, expected_sums,
                                     expected_weight, None, n_threads)
        np.testing.assert_array_equal(sums, expected_sums)
        np.testing.assert_array_equal(weight, expected_weight)


def test_fused_fit_has_lloyds_centres_bit_for_bit():
    X = _blobs(9001, 3, 10, seed=6)
    init = X[np.random.RandomState(2).choice(len(X), 12, replace=False)]
    lloyd, elkan = [Clusterer(12, seed=init, estep=e, tol=0, max_iter=100).fit(X)
                    for e in (FullEStep(), ElkanEStep())]
    assert lloyd.n_iter_ == elkan.n_iter_
    np.testing.assert_array_equal(lloyd.labels_, elkan.labels_)
    np.testing.assert_array_equal(lloyd.cluster_centers_, elkan.cluster_centers_)
