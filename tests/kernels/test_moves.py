"""The single-point-moves kernels (_moves.pyx) against their NumPy twins: the same moves in
the same order, the same centres, weights, counts and change of the objective."""
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from clusterkit import _reference as ref
from clusterkit._kernels import _moves, _topk

RTOL = {np.float32: 1e-5, np.float64: 1e-10}


def _problem(n_samples, n_clusters, n_features, dtype, seed=0, zero_weights=False):
    """Rows near ``n_clusters`` points, labelled by a noisy nearest centre (so that many rows
    can gain by moving), and a partition's exact sums."""
    rng = np.random.RandomState(seed)
    means = rng.normal(scale=3.0, size=(n_clusters, n_features))
    X = (means[rng.randint(n_clusters, size=n_samples)]
         + rng.normal(size=(n_samples, n_features))).astype(dtype)
    w = rng.uniform(0.5, 2.0, n_samples).astype(dtype)
    if zero_weights:
        w[::7] = 0
    d2 = ref.sqdist(X, means)
    labels = (d2 + rng.exponential(3.0, size=d2.shape)).argmin(1).astype(np.int32)
    first = min(n_samples, n_clusters)
    labels[:first] = np.arange(first)  # (no cluster empty, if there are rows enough)
    w[:first] = 1
    return X, w, labels


def _partition(X, w, labels, n_clusters):
    sums, weight, members = ref.partition_sums(X, w, labels, n_clusters)
    centers = np.zeros_like(sums)
    held = weight > 0
    centers[held] = sums[held] / weight[held, None]
    return centers, weight, members


def _ranking(X, centers, n_cand, n_threads=1):
    ranked = centers.astype(X.dtype)
    cand = np.empty((X.shape[0], n_cand), dtype=np.int32)
    dist2 = np.empty((X.shape[0], n_cand), dtype=X.dtype)
    _topk.assign_topk(X, ranked, cand, dist2, n_threads)
    ranked = ranked.astype(np.float64)
    far = np.full(X.shape[0], np.inf)
    if n_cand < centers.shape[0]:
        _moves.far_bounds(X, np.ascontiguousarray(dist2[:, -1]),
                          float((ranked ** 2).sum(1).max()), far, n_threads)
    return cand, far, ranked


# (n_samples, n_clusters, n_features, n_candidates): one row, few clusters, candidates
# that are all clusters, one candidate (every row checked in full), many features (the
# four-sum distance's tail), many moves with some rows checked in full
CASES = [(1, 2, 3, 1), (37, 2, 2, 1), (255, 7, 5, 3), (257, 7, 5, 7), (600, 25, 13, 4),
         (600, 25, 13, 1), (301, 9, 33, 2), (900, 40, 3, 2)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("zero_weights", [False, True])
@pytest.mark.parametrize("n_samples, n_clusters, n_features, n_cand", CASES)
def test_moves_pass_matches_reference(dtype, zero_weights, n_samples, n_clusters, n_features,
                                      n_cand):
    X, w, labels = _problem(n_samples, n_clusters, n_features, dtype,
                            zero_weights=zero_weights)
    centers, weight, members = _partition(X, w, labels, n_clusters)
    cand, far, ranked = _ranking(X, centers, n_cand)
    drift = np.sqrt(((centers - ranked) ** 2).sum(1))
    expected = ref.moves_pass(X, w, labels, centers, weight, members, cand, far, ranked,
                              drift, float(drift.max()))
    got_labels, got_centers = labels.copy(), centers.copy()
    got_weight, got_members, got_drift = weight.copy(), members.copy(), drift.copy()
    n_moved, n_full, n_evals, delta, max_drift = _moves.moves_pass(
        X, w, got_labels, got_centers, got_weight, got_members, cand, far, ranked, got_drift,
        float(drift.max()))
    assert_array_equal(got_labels, expected[0])
    assert_allclose(got_centers, expected[1], rtol=1e-10, atol=1e-10)
    assert_allclose(got_weight, expected[2], rtol=1e-12)
    assert_array_equal(got_members, expected[3])
    assert_allclose(got_drift, expected[4], rtol=1e-9, atol=1e-12)
    assert (n_moved, n_full, n_evals) == expected[5:8]
    assert_allclose(delta, expected[8], rtol=1e-9, atol=1e-9)
    assert_allclose(max_drift, expected[9], rtol=1e-9)
    if n_samples > n_clusters:
        assert n_moved > 0 and delta < 0  # (the noisy labels leave rows to move)
    # the change is exact: the objective of the new partition at its means
    before = (w * ((X.astype(np.float64) - centers[labels]) ** 2).sum(1)).sum()
    new_centers = _partition(X, w, got_labels, n_clusters)[0]
    after = (w * ((X.astype(np.float64) - new_centers[got_labels]) ** 2).sum(1)).sum()
    assert_allclose(after - before, delta, rtol=1e-8, atol=1e-8 * before)
    # the centres updated in place are the means of the new partition
    assert_allclose(got_centers, new_centers, rtol=1e-9, atol=1e-9)


def test_moves_pass_never_empties_a_cluster_and_skips_zero_weights():
    X = np.array([[0.0], [1.0], [10.0], [4.0]])
    w = np.array([1.0, 1.0, 1.0, 0.0])
    labels = np.array([0, 0, 1, 1], dtype=np.int32)  # cluster 1: one row of weight, one of none
    centers, weight, members = _partition(X, w, labels, 2)
    assert members.tolist() == [2, 1]
    cand, far, ranked = _ranking(X, centers, 2)
    out = labels.copy()
    n_moved, _, _, _, _ = _moves.moves_pass(X, w, out, centers, weight, members, cand, far,
                                             ranked, np.zeros(2), 0.0)
    # row 3 sits nearer cluster 0 but weighs nothing; row 2 is the last of its cluster
    assert n_moved == 0 and out.tolist() == [0, 0, 1, 1]


def test_a_row_moves_into_an_empty_cluster():
    """A cluster without weight costs nothing to join: the first row that can leave its
    cluster and is not on its centre moves there (its centre becomes the row)."""
    X = np.array([[0.0], [1.0], [2.0], [50.0]])
    w = np.ones(4)
    labels = np.array([0, 0, 0, 0], dtype=np.int32)
    centers, weight, members = _partition(X, w, labels, 2)
    centers[1] = [100.0]
    cand, far, ranked = _ranking(X, centers, 1)
    drift = np.zeros(2)
    n_moved, n_full, _, delta, _ = _moves.moves_pass(X, w, labels, centers, weight, members,
                                                      cand, far, ranked, drift, 0.0)
    assert labels[0] == 1 and n_moved >= 1 and n_full >= 1 and delta < 0
    assert members.sum() == 4 and weight.tolist() == np.bincount(labels, w, 2).tolist()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_partition_sums_dist2_and_far_bounds_match_reference(dtype, n_threads):
    X, w, labels = _problem(517, 11, 19, dtype, zero_weights=True)
    sums = np.empty((11, 19))
    weight, members = np.empty(11), np.empty(11, dtype=np.int32)
    _moves.partition_sums(X, w, labels, sums, weight, members)
    ref_sums, ref_weight, ref_members = ref.partition_sums(X, w, labels, 11)
    assert_allclose(sums, ref_sums, rtol=1e-12, atol=1e-9)
    assert_allclose(weight, ref_weight, rtol=1e-12)
    assert_array_equal(members, ref_members)
    centers = sums / weight[:, None]
    dist2 = np.empty(517)
    assert _moves.labelled_dist2(X, labels, centers, dist2, n_threads) == 517
    assert_allclose(dist2, ref.labelled_dist2(X, labels, centers)[0], rtol=1e-12)
    cand, far, ranked = _ranking(X, centers, 3, n_threads)
    max_sqnorm = float((ranked ** 2).sum(1).max())
    ref_far = ref.far_bounds(X, _ranking_last(X, ranked, 3), max_sqnorm)
    assert_allclose(far, ref_far, rtol=RTOL[dtype], atol=1e-6)
    # a bound on the exact distances of the centres outside the candidates
    d2 = ref.sqdist(X, ranked)
    np.put_along_axis(d2, cand.astype(np.intp), np.inf, axis=1)
    assert np.all(far <= np.sqrt(d2.min(1)))


def _ranking_last(X, ranked, n_cand):
    cand = np.empty((X.shape[0], n_cand), dtype=np.int32)
    dist2 = np.empty((X.shape[0], n_cand), dtype=X.dtype)
    _topk.assign_topk(X, ranked.astype(X.dtype), cand, dist2, 1)
    return dist2[:, -1]


def test_far_bounds_hold_against_the_rounding_of_the_ranking():
    """Rows far from the origin (gemm's cancellation) and centres at nearly the same distance:
    the bound stays below every exact distance outside the candidates, in float32."""
    rng = np.random.RandomState(3)
    X = (1e3 + rng.normal(scale=1e-2, size=(400, 16))).astype(np.float32)
    centers = (1e3 + rng.normal(scale=1e-2, size=(30, 16))).astype(np.float64)
    cand, far, ranked = _ranking(X, centers, 4)
    d2 = ref.sqdist(X, ranked)
    np.put_along_axis(d2, cand.astype(np.intp), np.inf, axis=1)
    assert np.all(far <= np.sqrt(d2.min(1)))
