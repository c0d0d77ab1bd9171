"""Seeding kernels (D^2 update, pruned greedy k-means++, AFK-MC^2 chains) vs NumPy twins."""
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from clusterkit import _reference as ref
from clusterkit._kernels import _afkmc2, _kmeanspp

from .._helpers import assert_labels_equal_up_to_ties

CHUNK = 256  # CHUNK_SIZE of _dist.pxd
RTOL = {np.float32: 1e-5, np.float64: 1e-10}
SIZES = [1, CHUNK - 1, CHUNK + 1, 3 * CHUNK + 17]
# 1 and 3 features take the direct loop (1: no intermediate feature pass), 12 the gemm path
FEATURES = [1, 3, 12]


def _data(n_samples, n_features, dtype, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n_samples, n_features)).astype(dtype)
    w = rng.uniform(0.5, 2.0, size=n_samples).astype(dtype)
    w[rng.uniform(size=n_samples) < 0.1] = 0
    w[0] = 1
    return rng, X, w


def _min_dist2(rng, X, n_centers=3):
    """D^2 to a few random centres (some samples are centres: D^2 = 0)."""
    centers = X[rng.randint(len(X), size=n_centers)]
    return ref.sqdist(X, centers).min(axis=1).astype(X.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_features", FEATURES)
@pytest.mark.parametrize("n_samples", SIZES)
def test_d2_update_matches_reference(dtype, n_features, n_samples):
    rng, X, _ = _data(n_samples, n_features, dtype)
    start = _min_dist2(rng, X)
    start[rng.uniform(size=n_samples) < 0.2] = np.inf
    center = X[rng.randint(n_samples)] + dtype(0.25)
    expected, expected_evals = ref.d2_update(X, center, start)
    results = []
    for n_threads in (1, 2):
        min_dist2 = start.copy()
        n_evals = _kmeanspp.d2_update(X, center, min_dist2, n_threads)
        assert n_evals == expected_evals == n_samples
        assert min_dist2.dtype == dtype
        assert_allclose(min_dist2, expected, rtol=RTOL[dtype])
        results.append(min_dist2)
    assert_array_equal(results[0], results[1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_d2_update_first_centre_and_exact_zero(dtype):
    _, X, _ = _data(CHUNK + 1, 12, dtype)
    min_dist2 = np.full(len(X), np.inf, dtype=dtype)
    _kmeanspp.d2_update(X, X[5], min_dist2, 2)
    assert min_dist2[5] == 0
    assert np.all(np.isfinite(min_dist2))


def run_kmeanspp(X, w, first, uniforms, n_threads, report=True, max_neighbours=-1):
    n_clusters = uniforms.shape[0] + 1
    centers = np.empty((n_clusters, X.shape[1]), dtype=X.dtype)
    chosen = np.full(n_clusters, -1, dtype=np.int32)
    labels = np.empty(len(X), dtype=np.int32)
    min_dist2 = np.empty(len(X), dtype=X.dtype)
    progress = np.full(1, -1, dtype=np.int64) if report else None
    n_chosen, n_evals = _kmeanspp.kmeanspp(X, w, first, uniforms, centers, chosen, labels,
                                          min_dist2, n_threads, progress,
                                          max_neighbours=max_neighbours)
    if report:  # the centres the kernel counted as it went
        assert progress[0] == n_chosen
    return centers[:n_chosen], chosen[:n_chosen], labels, min_dist2, n_chosen, n_evals


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_kmeanspp_progress_counter_changes_no_result(dtype, n_threads):
    rng, X, w = _data(CHUNK + 3, 5, dtype)
    uniforms = rng.uniform(size=(12, 3))
    with_counter = run_kmeanspp(X, w, 0, uniforms, n_threads)
    without = run_kmeanspp(X, w, 0, uniforms, n_threads, report=False)
    for a, b in zip(with_counter, without):
        assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("spread", [1.0, 50.0])  # overlapping groups, separated clusters
@pytest.mark.parametrize("n_features", [4, 40])  # rows copied whole, or their first bytes
def test_kmeanspp_neighbour_cap_changes_no_result(dtype, n_threads, spread, n_features):
    # lists dropped at once (0), part-way (40 entries) or never (-1): the same seeding; a
    # dropped list stands for every centre, whose quarter distances are counted
    rng, X, w = _data(3 * CHUNK + 17, n_features, dtype)
    X += spread * rng.randint(0, 30, size=(X.shape[0], 1)).astype(dtype)
    uniforms = rng.uniform(size=(60, 4))
    free = run_kmeanspp(X, w, 3, uniforms, n_threads)
    for cap in (0, 40):
        capped = run_kmeanspp(X, w, 3, uniforms, n_threads, max_neighbours=cap)
        for a, b in zip(free[:5], capped[:5]):
            assert_array_equal(a, b)
        assert capped[5] >= free[5]
        if spread > 1:  # (separated clusters keep short lists)
            assert capped[5] > free[5]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_trials", [1, 5])
# rows of up to 128 bytes are copied in group order (20 features: float32 only), 40 features
# read X in both dtypes; 12 uses the 4-sum distance; 130 features stop sums early (after 1,
# 2, 4 and 8 pairs of 64-byte vectors) and end with a scalar tail
@pytest.mark.parametrize("n_features", FEATURES + [20, 40, 130])
@pytest.mark.parametrize("n_samples, n_clusters", [(1, 1), (CHUNK - 1, 7), (CHUNK + 1, 40),
                                                   (3 * CHUNK + 17, 25)])
def test_kmeanspp_matches_unpruned_reference(dtype, n_trials, n_features, n_samples,
                                             n_clusters):
    rng, X, w = _data(n_samples, n_features, dtype)
    X[: n_samples // 2] *= 4  # clusters of different spread, so that groups get pruned
    uniforms = rng.uniform(size=(n_clusters - 1, n_trials))
    first = int(np.flatnonzero(w > 0)[-1])
    exp_centers, exp_chosen, exp_labels, exp_d2, exp_n, unpruned = ref.kmeanspp(
        X, w, first, uniforms)
    results = []
    for n_threads in (1, 2):
        centers, chosen, labels, min_dist2, n_chosen, n_evals = run_kmeanspp(
            X, w, first, uniforms, n_threads)
        assert n_chosen == exp_n == min(n_clusters, np.count_nonzero(w > 0) + 1)
        assert_array_equal(chosen, exp_chosen)
        assert_array_equal(centers, exp_centers)
        assert_labels_equal_up_to_ties(X, centers, labels, exp_labels, RTOL[dtype])
        assert_allclose(min_dist2, exp_d2, rtol=RTOL[dtype], atol=1e-30)
        # every sample distance is counted, pruned ones are not computed
        n_center_evals = (n_trials if n_trials > 1 else 1) * n_clusters * (n_clusters - 1) // 2
        assert n_evals <= unpruned + n_center_evals
        results.append((chosen, labels, min_dist2, n_evals))
    for a, b in zip(*results):
        assert_array_equal(a, b)


def test_kmeanspp_prunes_most_distances_on_separated_clusters():
    rng = np.random.RandomState(0)
    means = 20.0 * rng.normal(size=(50, 2))
    X = np.repeat(means, 40, axis=0) + rng.normal(size=(2000, 2))
    uniforms = rng.uniform(size=(49, 5))
    w = np.ones(len(X))
    centers, chosen, labels, min_dist2, n_chosen, n_evals = run_kmeanspp(X, w, 0, uniforms, 2)
    *_, unpruned = ref.kmeanspp(X, w, 0, uniforms)
    assert_array_equal(chosen, ref.kmeanspp(X, w, 0, uniforms)[1])
    assert n_evals < 0.2 * unpruned
    assert_array_equal(labels, ref.sqdist(X, centers).argmin(axis=1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kmeanspp_stops_when_every_distance_is_zero(dtype):
    X = np.repeat(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 5.0]], dtype=dtype), 30, axis=0)
    uniforms = np.random.RandomState(0).uniform(size=(5, 3))
    centers, chosen, labels, min_dist2, n_chosen, _ = run_kmeanspp(
        X, np.ones(len(X), dtype=dtype), 0, uniforms, 2)
    assert n_chosen == 3
    assert len(np.unique(centers, axis=0)) == 3
    assert np.all(min_dist2 == 0)
    assert_array_equal(centers[labels], X)


def test_kmeanspp_plain_draws_proportionally_to_weighted_d2():
    """L = 1: the second centre is row n with probability w_n D_n^2 / sum w D^2."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(300, 2))  # several sampler blocks
    w = rng.uniform(size=300)
    w[100:200] = 0  # whole blocks without mass
    d2 = ref.sqdist(X, X[[0]])[:, 0]
    counts = np.zeros(300)
    for u in rng.uniform(size=(20000, 1, 1)):
        _, chosen, *_ = run_kmeanspp(X, w, 0, u, 1)
        counts[chosen[1]] += 1
    assert counts[w == 0].sum() == 0
    expected = w * d2 / (w @ d2) * counts.sum()
    assert np.all(np.abs(counts - expected) <= 5 * np.sqrt(expected) + 1)


def _chain_problem(n_samples, n_features, n_clusters, chain_length, dtype, seed=0):
    """Inputs of afkmc2_chain drawn the way AFKMC2 draws them."""
    rng, X, w = _data(n_samples, n_features, dtype, seed)
    w64 = w.astype(np.float64)
    first = int(np.flatnonzero(w > 0)[0])
    d2 = ref.sqdist(X, X[[first]])[:, 0]
    q = 0.5 * w64 / w64.sum()
    q += 0.5 * w64 * d2 / (w64 @ d2) if w64 @ d2 > 0 else q
    candidates = rng.choice(n_samples, size=(n_clusters - 1, chain_length), p=q / q.sum())
    uniforms = rng.uniform(size=(n_clusters - 1, chain_length))
    return X, w, q, first, candidates.astype(np.int32), uniforms


CHAIN_CASES = [  # (n_samples, n_clusters, chain_length)
    (1, 1, 5),
    (CHUNK - 1, 2, 1),
    (CHUNK + 1, 7, 30),
    (3 * CHUNK + 17, 12, 5),
    (CHUNK + 1, 70, 4),  # several blocks of AFKMC2_BLOCK = 32 steps
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_features", FEATURES)
@pytest.mark.parametrize("n_samples, n_clusters, chain_length", CHAIN_CASES)
def test_afkmc2_chain_matches_reference(dtype, n_features, n_samples, n_clusters,
                                        chain_length):
    X, w, q, first, candidates, uniforms = _chain_problem(
        n_samples, n_features, n_clusters, chain_length, dtype)
    expected_centers, expected_chosen, expected_evals = ref.afkmc2_chain(
        X, w, q, first, candidates, uniforms)
    results = []
    for n_threads in (1, 2):
        centers = np.empty((n_clusters, n_features), dtype=dtype)
        chosen = np.full(n_clusters, -1, dtype=np.int32)
        n_evals = _afkmc2.afkmc2_chain(X, w, q, first, candidates, uniforms, centers, chosen,
                                        n_threads)
        assert n_evals == expected_evals == chain_length * n_clusters * (n_clusters - 1) // 2
        assert_array_equal(chosen, expected_chosen)
        assert_array_equal(centers, expected_centers)
        results.append(centers)
    assert_array_equal(results[0], results[1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_afkmc2_chain_exact_for_near_points_far_from_the_origin(dtype):
    """Integer-valued rows, many repeated, far from the origin: the gemm's expansion
    ||x||^2 + ||c||^2 - 2 x.c loses the small distances there (in float32), so the chains
    would drift from the reference; the kernel recomputes the nearest centre's distance."""
    rng = np.random.RandomState(3)
    X = (rng.randint(0, 4, size=(2000, 12)) + 3000).astype(dtype)
    w = np.ones(2000, dtype=dtype)
    q = np.full(2000, 1 / 2000)
    candidates = rng.randint(2000, size=(199, 2)).astype(np.int32)
    uniforms = rng.uniform(size=(199, 2))
    expected_centers, expected_chosen, _ = ref.afkmc2_chain(X, w, q, 0, candidates, uniforms)
    centers = np.empty((200, 12), dtype=dtype)
    chosen = np.empty(200, dtype=np.int32)
    _afkmc2.afkmc2_chain(X, w, q, 0, candidates, uniforms, centers, chosen, 2)
    assert_array_equal(chosen, expected_chosen)
    assert_array_equal(centers, expected_centers)


def test_afkmc2_chain_rejects_existing_centres():
    # candidate 0 is the first centre (p = 0): the chain moves on whatever the uniforms say,
    # and never leaves a state with p > 0 for a candidate with p = 0
    X = np.array([[0.0], [1.0], [5.0]])
    w = np.ones(3)
    q = np.full(3, 1 / 3)
    candidates = np.array([[0, 2, 0, 0]], dtype=np.int32)
    uniforms = np.full((1, 4), 0.999)
    centers = np.empty((2, 1))
    chosen = np.empty(2, dtype=np.int32)
    _afkmc2.afkmc2_chain(X, w, q, 0, candidates, uniforms, centers, chosen, 1)
    assert_array_equal(chosen, [0, 2])
    assert_array_equal(centers, [[0.0], [5.0]])


def test_afkmc2_chain_acceptance_ratio():
    # from state 1 (p = 1) to candidate 2 (p = 25): ratio 25 accepts even for u close to 1;
    # back from 2 to 1 has ratio 1/25 = 0.04: rejected for u = 0.05, accepted for u = 0.03
    X = np.array([[0.0], [1.0], [5.0]])
    w, q = np.ones(3), np.full(3, 1 / 3)
    candidates = np.array([[1, 2, 1]], dtype=np.int32)
    for u, expected in [(0.05, 2), (0.03, 1)]:
        uniforms = np.array([[0.0, 0.999, u]])
        centers, chosen = np.empty((2, 1)), np.empty(2, dtype=np.int32)
        _afkmc2.afkmc2_chain(X, w, q, 0, candidates, uniforms, centers, chosen, 2)
        assert chosen[1] == expected


def _greedy_problem(n_samples, n_features, n_clusters, chain_length, n_chains, n_pot, dtype,
                    seed=0):
    """Inputs of afkmc2_greedy: the chains' draws, and a potential sample of ``n_pot`` rows
    with integer weights (``None``: all rows with their weights)."""
    rng, X, w = _data(n_samples, n_features, dtype, seed)
    w64 = w.astype(np.float64)
    first = int(np.flatnonzero(w > 0)[0])
    d2 = ref.sqdist(X, X[[first]])[:, 0]
    q = 0.5 * w64 / w64.sum()
    q += 0.5 * w64 * d2 / (w64 @ d2) if w64 @ d2 > 0 else q
    shape = (n_clusters - 1, n_chains * chain_length)
    candidates = rng.choice(n_samples, size=shape, p=q / q.sum()).astype(np.int32)
    uniforms = rng.uniform(size=shape)
    if n_pot is None:
        rows, w_pot = np.arange(n_samples), w
    else:
        rows = np.sort(rng.choice(n_samples, size=min(n_pot, n_samples), replace=False))
        w_pot = rng.randint(1, 4, size=len(rows)).astype(dtype)
    X_pot = np.ascontiguousarray(X[rows])
    return X, w, q, first, candidates, uniforms, X_pot, w_pot, d2[rows].astype(dtype)


def run_greedy(X, w, q, first, candidates, uniforms, n_chains, X_pot, w_pot, pot_dist2,
               n_threads, bounds=None):
    n_clusters = candidates.shape[0] + 1
    centers = np.empty((n_clusters, X.shape[1]), dtype=X.dtype)
    chosen = np.full(n_clusters, -1, dtype=np.int32)
    pot_dist2 = pot_dist2.copy()
    pot_labels = np.zeros(len(X_pot), dtype=np.int32)
    bounds = bounds or [(1, -1)]
    n_evals = sum(_afkmc2.afkmc2_greedy(X, w, q, first, candidates, uniforms, n_chains, X_pot,
                                        w_pot, pot_dist2, pot_labels, centers, chosen,
                                        n_threads, b, e)
                  for b, e in bounds)
    assert_array_equal(pot_labels, ref.sqdist(X_pot, centers).argmin(axis=1))
    return centers, chosen, pot_dist2, n_evals


GREEDY_CASES = [  # (n_samples, n_clusters, chain_length, n_chains, n_pot)
    (1, 1, 5, 2, None),
    (CHUNK - 1, 2, 1, 3, None),
    (CHUNK + 1, 7, 30, 2, 40),
    (3 * CHUNK + 17, 12, 5, 4, None),
    (CHUNK + 1, 70, 4, 3, 101),  # several blocks of AFKMC2_BLOCK = 32 steps
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
# 40 features: the sample's distances in vector partial sums for both dtypes
@pytest.mark.parametrize("n_features", FEATURES + [40])
@pytest.mark.parametrize("n_samples, n_clusters, chain_length, n_chains, n_pot", GREEDY_CASES)
def test_afkmc2_greedy_matches_reference(dtype, n_features, n_samples, n_clusters,
                                         chain_length, n_chains, n_pot):
    problem = _greedy_problem(n_samples, n_features, n_clusters, chain_length, n_chains,
                              n_pot, dtype)
    X, w, q, first, candidates, uniforms, X_pot, w_pot, pot_dist2 = problem
    exp_centers, exp_chosen, exp_pot_dist2, _, exp_evals = ref.afkmc2_greedy(
        X, w, q, first, candidates, uniforms, n_chains, X_pot, w_pot, pot_dist2)
    results = []
    for n_threads in (1, 2):
        centers, chosen, out_dist2, n_evals = run_greedy(
            X, w, q, first, candidates, uniforms, n_chains, X_pot, w_pot, pot_dist2, n_threads)
        # the chains, each final state against the centres, the sample rows not ruled out
        assert n_evals == exp_evals <= (
            n_chains * chain_length * n_clusters * (n_clusters - 1) // 2
            + n_chains * (n_clusters * (n_clusters - 1) // 2 + len(X_pot) * (n_clusters - 1)))
        assert_array_equal(chosen, exp_chosen)
        assert_array_equal(centers, exp_centers)
        assert out_dist2.dtype == dtype
        assert_allclose(out_dist2, exp_pot_dist2, rtol=RTOL[dtype], atol=1e-30)
        results.append((centers, chosen, out_dist2))
    for a, b in zip(*results):
        assert_array_equal(a, b)


def test_afkmc2_greedy_slices_give_the_whole_call():
    X, w, q, first, candidates, uniforms, X_pot, w_pot, pot_dist2 = _greedy_problem(
        3000, 12, 150, 5, 3, 500, np.float64)
    args = X, w, q, first, candidates, uniforms, 3, X_pot, w_pot, pot_dist2, 2
    whole = run_greedy(*args)
    sliced = run_greedy(*args, bounds=[(1, 33), (33, 97), (97, 150)])
    for a, b in zip(whole, sliced):
        assert_array_equal(a, b)


def test_afkmc2_greedy_rules_out_rows_by_the_triangle_inequality():
    """On separated blobs most sample rows are never compared with a final state."""
    rng = np.random.RandomState(0)
    means = 50.0 * rng.normal(size=(40, 2))
    X = np.repeat(means, 50, axis=0) + rng.normal(size=(2000, 2))
    w = np.ones(len(X))
    q = np.full(len(X), 1 / len(X))
    candidates = rng.randint(len(X), size=(39, 3 * 2)).astype(np.int32)
    uniforms = rng.uniform(size=(39, 6))
    args = X, w, q, 0, candidates, uniforms, 3, X, w, ref.sqdist(X, X[[0]])[:, 0]
    *_, expected_evals = ref.afkmc2_greedy(*args)
    centers, chosen, _, n_evals = run_greedy(*args, 2)
    assert_array_equal(chosen, ref.afkmc2_greedy(*args)[1])
    assert n_evals == expected_evals
    chains = 6 * 40 * 39 // 2
    assert n_evals - chains < 0.3 * 3 * (len(X) + 40 // 2) * 39


def test_afkmc2_greedy_keeps_the_chain_that_lowers_the_potential_most():
    """Two chains of one candidate each (no Metropolis-Hastings step): the candidate that
    covers the heavy, uncovered far point wins over the one next to the first centre,
    whichever chain it is in."""
    X = np.array([[0.0], [1.0], [10.0], [11.0]])
    w = np.array([1.0, 1.0, 5.0, 1.0])
    q = np.full(4, 0.25)
    for candidates, expected in [([[1, 3]], 3), ([[3, 1]], 3), ([[1, 2]], 2)]:
        centers = np.empty((2, 1))
        chosen = np.empty(2, dtype=np.int32)
        candidates = np.array(candidates, dtype=np.int32)
        pot_dist2 = ref.sqdist(X, X[[0]])[:, 0]
        pot_labels = np.zeros(4, dtype=np.int32)
        n_evals = _afkmc2.afkmc2_greedy(X, w, q, 0, candidates, np.zeros((1, 2)), 2, X, w,
                                        pot_dist2, pot_labels, centers, chosen, 1)
        assert chosen[1] == expected
        assert_array_equal(pot_labels, [0, 0, 1, 1])
        # per chain: its candidate and final state against the first centre, and the rows
        # x not ruled out by d(y, c_1) >= 2 D(x): rows 1-3 for y = 1, rows 2-3 for y = 3
        ruled_in = {1: 3, 2: 2, 3: 2}
        assert n_evals == 2 + 2 + sum(ruled_in[y] for y in candidates[0])
        assert n_evals == ref.afkmc2_greedy(X, w, q, 0, candidates, np.zeros((1, 2)), 2, X, w,
                                            ref.sqdist(X, X[[0]])[:, 0])[-1]
        assert_array_equal(pot_dist2, ref.sqdist(X, X[[0, expected]]).min(axis=1))
