"""Partial E-step kernels (search, estimated and exhaustive neighbourhoods) vs NumPy twins."""
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from clusterkit import _reference as ref
from clusterkit._kernels import _partial

CHUNK = 256
RTOL = {np.float32: 1e-5, np.float64: 1e-10}


def _distinct_rows(rng, n_rows, n_values, k):
    return np.array([rng.choice(n_values, k, replace=False) for _ in range(n_rows)],
                    dtype=np.int32).reshape(n_rows, k)


def _problem(n_samples, n_clusters, n_features, n_winners, G, n_explore, dtype, seed=0):
    """Data, centres, random neighbourhoods (c first), random K(n) and exploratory draws."""
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n_samples, n_features)).astype(dtype)
    centers = rng.normal(size=(n_clusters, n_features)).astype(dtype)
    neighbourhoods = np.empty((n_clusters, G), dtype=np.int32)
    for c in range(n_clusters):
        others = np.delete(np.arange(n_clusters), c)
        neighbourhoods[c] = [c] + list(rng.choice(others, G - 1, replace=False))
    winners = _distinct_rows(rng, n_samples, n_clusters, n_winners)
    explore = rng.randint(0, n_clusters, size=(n_samples, n_explore)).astype(np.int32)
    return X, centers, neighbourhoods, explore, winners


def _search(X, centers, neighbourhoods, explore, winners, n_threads):
    n_samples, n_winners = winners.shape
    max_cand = min(centers.shape[0], n_winners * neighbourhoods.shape[1] + explore.shape[1])
    winners = winners.copy()
    win_dist2 = np.empty(winners.shape, dtype=X.dtype)
    cand = np.full((n_samples, max_cand), -7, dtype=np.int32)
    cand_dist2 = np.zeros((n_samples, max_cand), dtype=X.dtype)
    n_cand = np.empty(n_samples, dtype=np.int32)
    n_evals = _partial.partial_search(X, centers, neighbourhoods, explore, winners, win_dist2,
                                      cand, cand_dist2, n_cand, n_threads)
    return winners, win_dist2, cand, cand_dist2, n_cand, n_evals


# (n_samples, n_clusters, n_winners, G, n_explore)
SEARCH_CASES = [
    (1, 12, 1, 3, 1),
    (CHUNK - 1, 12, 1, 3, 0),
    (CHUNK + 1, 20, 3, 4, 1),
    (3 * CHUNK + 17, 40, 2, 5, 2),
    (3 * CHUNK + 17, 40, 1, 1, 1),   # G = 1: S(n) = K(n) + exploration only
    (CHUNK + 1, 1, 1, 1, 0),         # one cluster
    (100, 6, 2, 3, 1),               # S(n) may be all clusters
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_features", [2, 12])
@pytest.mark.parametrize("n_samples, n_clusters, n_winners, G, n_explore", SEARCH_CASES)
def test_partial_search_matches_reference(dtype, n_features, n_samples, n_clusters, n_winners,
                                          G, n_explore):
    X, centers, neighbourhoods, explore, winners = _problem(
        n_samples, n_clusters, n_features, n_winners, G, n_explore, dtype)
    out = _search(X, centers, neighbourhoods, explore, winners, 1)
    new_winners, win_dist2, cand, cand_dist2, n_cand, n_evals = out
    r_winners, r_dist2, r_cand, r_cand_dist2, r_n_cand, r_evals = ref.partial_search(
        X, centers, neighbourhoods, explore, winners)
    rtol = RTOL[dtype]
    assert win_dist2.dtype == cand_dist2.dtype == dtype
    assert n_evals == r_evals == int(n_cand.sum())
    assert_array_equal(n_cand, r_n_cand)
    for n in range(n_samples):
        k = n_cand[n]
        assert_array_equal(cand[n, :k], r_cand[n, :k])
        assert np.all(np.isin(cand[n, k:], [-7, *cand[n, :k]]))  # scratch: S(n) or untouched
        assert_allclose(cand_dist2[n, :k], r_cand_dist2[n, :k], rtol=rtol, atol=rtol)
    # the new K(n): distinct, ascending, the C' smallest of S(n) (ties up to the tolerance)
    for row in new_winners:
        assert len(set(row.tolist())) == n_winners
    assert np.all(np.diff(win_dist2, axis=1) >= 0)
    assert_allclose(win_dist2, r_dist2, rtol=rtol, atol=rtol)
    exact = ref.sqdist(X, centers)
    assert_allclose(win_dist2, np.take_along_axis(exact, new_winners, axis=1), rtol=rtol,
                    atol=rtol)
    if dtype is np.float64:
        assert_array_equal(new_winners, r_winners)
    # bit-identical for two threads
    for a, b in zip(out, _search(X, centers, neighbourhoods, explore, winners, 2)):
        if isinstance(a, np.ndarray):
            assert_array_equal(a, b)
        else:
            assert a == b


def test_partial_search_ties_go_to_lower_index():
    # duplicated centres tie exactly; the candidates are met in neighbourhood order, not index
    # order, so the result must not depend on that order
    rng = np.random.RandomState(3)
    centers = np.repeat(rng.randint(-2, 3, size=(3, 2)).astype(np.float64), 3, axis=0)
    X = rng.randint(-2, 3, size=(40, 2)).astype(np.float64)
    neighbourhoods = np.array([[c] + [j for j in range(8, -1, -1) if j != c][:4]
                               for c in range(9)], dtype=np.int32)
    winners = _distinct_rows(rng, 40, 9, 2)
    explore = np.zeros((40, 0), dtype=np.int32)
    new_winners, win_dist2, *_ = _search(X, centers, neighbourhoods, explore, winners, 2)
    r_winners, r_dist2, *_ = ref.partial_search(X, centers, neighbourhoods, explore, winners)
    assert_array_equal(new_winners, r_winners)
    assert_array_equal(win_dist2, r_dist2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_features", [2, 12])
def test_partial_search_never_increases_distances(dtype, n_features):
    """Prop. 1: for fixed centres each sorted winner distance is non-increasing."""
    X, centers, neighbourhoods, _, winners = _problem(2 * CHUNK + 9, 50, n_features, 3, 3, 1,
                                                      dtype, seed=4)
    rng = np.random.RandomState(5)
    previous = None
    for _ in range(5):
        explore = rng.randint(0, 50, size=(X.shape[0], 1)).astype(np.int32)
        winners, win_dist2, *_ = _search(X, centers, neighbourhoods, explore, winners, 2)
        if previous is not None:
            assert np.all(win_dist2 <= previous)
        previous = win_dist2


def _estimation_problem(n_samples, n_clusters, n_features, n_winners, G, n_explore, dtype,
                        seed=0):
    X, centers, neighbourhoods, explore, winners = _problem(
        n_samples, n_clusters, n_features, n_winners, G, n_explore, dtype, seed)
    winners, _, cand, cand_dist2, n_cand, _ = _search(X, centers, neighbourhoods, explore,
                                                      winners, 1)
    return np.ascontiguousarray(winners[:, 0]), cand, cand_dist2, n_cand, neighbourhoods


# (n_samples, n_clusters, n_winners, G, n_explore)
ESTIMATE_CASES = [
    (1, 12, 1, 3, 1),                # one sample: all but one cluster keep their G_c
    (CHUNK + 1, 20, 3, 4, 1),
    (3 * CHUNK + 17, 60, 1, 5, 1),
    (3 * CHUNK + 17, 60, 1, 8, 0),   # few co-evaluated clusters: old entries fill up
    (50, 300, 2, 3, 1),              # most I_c empty
    (CHUNK - 1, 1, 1, 1, 0),         # one cluster, G = 1
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("use_dist", [False, True])
@pytest.mark.parametrize("unlabelled", [False, True])
@pytest.mark.parametrize("n_samples, n_clusters, n_winners, G, n_explore", ESTIMATE_CASES)
def test_neighbourhoods_estimated_matches_reference(dtype, use_dist, unlabelled, n_samples,
                                                    n_clusters, n_winners, G, n_explore):
    labels, cand, cand_dist2, n_cand, neighbourhoods = _estimation_problem(
        n_samples, n_clusters, 3, n_winners, G, n_explore, dtype)
    if unlabelled:  # every third sample in no I_c (label -1), as zero-weight samples are
        labels[::3] = -1
    expected = ref.neighbourhoods_estimated(labels, cand, cand_dist2, n_cand, neighbourhoods,
                                            use_dist)
    n_entries = int(n_cand.sum())
    # scratch: none (allocated), long enough, too short (must be replaced, not overrun)
    for n_scratch in (None, n_entries, n_entries // 2):
        scratch = () if n_scratch is None else (np.empty(n_scratch, dtype=np.int32),
                                                np.empty(n_scratch, dtype=dtype))
        for n_threads in (1, 2):
            result = neighbourhoods.copy()
            assert _partial.neighbourhoods_estimated(labels, cand, cand_dist2, n_cand, result,
                                                     use_dist, n_threads, *scratch) == 0
            assert_array_equal(result, expected)  # same float64 sums in the same order
    assert_array_equal(result[:, 0], np.arange(n_clusters))
    for row in result:
        assert len(set(row.tolist())) == G
    empty = np.setdiff1d(np.arange(n_clusters), labels)
    assert_array_equal(result[empty], neighbourhoods[empty])


def test_neighbourhoods_estimated_uses_only_the_clusters_members():
    # samples 0, 1 have best cluster 0; cluster 3 is nearer to them on average than cluster 2;
    # sample 3 evaluated only its own cluster 4 (junk after n_cand must not be read)
    labels = np.array([0, 0, 1, 4], dtype=np.int32)
    cand = np.array([[0, 2, 3], [0, 3, 2], [1, 2, 3], [4, 1, 2]], dtype=np.int32)
    cand_dist2 = np.array([[0.0, 5.0, 4.0], [1.0, 3.0, 4.0], [0.0, 0.1, 9.0], [0.0, 0.0, 0.0]])
    n_cand = np.array([3, 3, 3, 1], dtype=np.int32)
    neighbourhoods = np.array([[0, 1, 4], [1, 0, 4], [2, 0, 1], [3, 0, 1], [4, 0, 1]],
                              dtype=np.int32)
    _partial.neighbourhoods_estimated(labels, cand, cand_dist2, n_cand, neighbourhoods, False, 1)
    assert_array_equal(neighbourhoods[0], [0, 3, 2])   # means 3.5 (cluster 3) < 4.5 (cluster 2)
    assert_array_equal(neighbourhoods[1], [1, 2, 3])
    assert_array_equal(neighbourhoods[2:], [[2, 0, 1], [3, 0, 1], [4, 0, 1]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_features", [2, 12])
@pytest.mark.parametrize("n_clusters, G", [(1, 1), (5, 3), (CHUNK - 1, 4), (CHUNK + 1, 6),
                                           (2 * CHUNK + 3, 2), (7, 7)])
def test_neighbourhoods_exhaustive_matches_reference(dtype, n_features, n_clusters, G):
    rng = np.random.RandomState(6)
    centers = rng.normal(size=(n_clusters, n_features)).astype(dtype)
    result = np.empty((n_clusters, G), dtype=np.int32)
    n_evals = _partial.neighbourhoods_exhaustive(centers, result, 1)
    expected, r_evals = ref.neighbourhoods_exhaustive(centers, G)
    assert n_evals == r_evals == n_clusters ** 2
    assert_array_equal(result[:, 0], np.arange(n_clusters))
    d2 = ref.sqdist(centers, centers)
    rtol = RTOL[dtype]
    atol = rtol * max(float(d2.max()), 1.0)
    # the chosen neighbours are the nearest ones, in order (ties up to the tolerance)
    assert_allclose(np.take_along_axis(d2, result, axis=1),
                    np.take_along_axis(d2, expected, axis=1), rtol=rtol, atol=atol)
    if dtype is np.float64:
        assert_array_equal(result, expected)
    again = np.empty_like(result)
    _partial.neighbourhoods_exhaustive(centers, again, 2)
    assert_array_equal(again, result)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_features", [2, 12])
def test_neighbourhoods_exhaustive_ties_go_to_the_lower_index(dtype, n_features):
    # small integer coordinates: distances are exact and tie often, also across the blocks
    # the selection skips
    rng = np.random.RandomState(7)
    centers = rng.randint(0, 3, size=(701, n_features)).astype(dtype)
    result = np.empty((701, 5), dtype=np.int32)
    _partial.neighbourhoods_exhaustive(centers, result, 2)
    expected, _ = ref.neighbourhoods_exhaustive(centers.astype(np.float64), 5)
    assert_array_equal(result, expected)


def test_neighbourhoods_exhaustive_duplicated_centres_keep_c_first():
    centers = np.zeros((4, 2))
    result = np.empty((4, 3), dtype=np.int32)
    _partial.neighbourhoods_exhaustive(centers, result, 2)
    assert_array_equal(result, [[0, 1, 2], [1, 0, 2], [2, 0, 1], [3, 0, 1]])


def test_kernels_accept_empty_input():
    X = np.empty((0, 2))
    centers = np.zeros((3, 2))
    neighbourhoods = np.array([[0, 1], [1, 2], [2, 0]], dtype=np.int32)
    empty = np.empty((0, 1), dtype=np.int32)
    assert _partial.partial_search(X, centers, neighbourhoods, empty, empty.copy(),
                                   np.empty((0, 1)), np.empty((0, 3), dtype=np.int32),
                                   np.empty((0, 3)), np.empty(0, dtype=np.int32), 2) == 0
    assert _partial.neighbourhoods_estimated(np.empty(0, dtype=np.int32),
                                             np.empty((0, 3), dtype=np.int32), np.empty((0, 3)),
                                             np.empty(0, dtype=np.int32), neighbourhoods,
                                             False, 2) == 0
    assert_array_equal(neighbourhoods, [[0, 1], [1, 2], [2, 0]])
