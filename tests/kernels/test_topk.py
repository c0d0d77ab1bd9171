"""assign_topk (exact C' nearest centres) against its NumPy twin."""
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from clusterkit import _reference as ref
from clusterkit._kernels import _assign, _topk

CHUNK = 256
RTOL = {np.float32: 1e-5, np.float64: 1e-10}

# (n_samples, n_clusters, n_winners): one sample, chunk edges, several chunks + remainder,
# one cluster, C' = C
SIZES = [(1, 5, 2), (CHUNK - 1, 7, 1), (CHUNK + 1, 7, 3), (3 * CHUNK + 17, 40, 5),
         (3 * CHUNK + 17, 1, 1), (50, 9, 9)]


def _data(n_samples, n_clusters, n_features, dtype, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n_samples, n_features)).astype(dtype)
    centers = rng.normal(size=(n_clusters, n_features)).astype(dtype)
    return X, centers


def _run(X, centers, n_winners, n_threads):
    winners = np.empty((X.shape[0], n_winners), dtype=np.int32)
    win_dist2 = np.empty((X.shape[0], n_winners), dtype=X.dtype)
    n_evals = _topk.assign_topk(X, centers, winners, win_dist2, n_threads)
    return winners, win_dist2, n_evals


def assert_topk_up_to_ties(X, centers, winners, win_dist2, rtol):
    """The winners are distinct, their distances are right and are the C' smallest."""
    d2 = ref.sqdist(X, centers)
    atol = rtol * max(float(d2.max()), 1.0)
    n_winners = winners.shape[1]
    for row in winners:
        assert len(set(row.tolist())) == n_winners
    assert_allclose(win_dist2, np.take_along_axis(d2, winners, axis=1), rtol=rtol, atol=atol)
    assert_allclose(win_dist2, np.sort(d2, axis=1)[:, :n_winners], rtol=rtol, atol=atol)
    assert np.all(np.diff(win_dist2, axis=1) >= 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_features", [2, 12])
@pytest.mark.parametrize("n_samples, n_clusters, n_winners", SIZES)
def test_assign_topk_matches_reference(dtype, n_features, n_samples, n_clusters, n_winners):
    X, centers = _data(n_samples, n_clusters, n_features, dtype)
    winners, win_dist2, n_evals = _run(X, centers, n_winners, 1)
    assert win_dist2.dtype == dtype
    ref_winners, ref_dist2, ref_evals = ref.assign_topk(X, centers, n_winners)
    assert n_evals == ref_evals == n_samples * n_clusters
    assert_topk_up_to_ties(X, centers, winners, win_dist2, RTOL[dtype])
    if dtype is np.float64:  # no near-ties at this precision: indices equal exactly
        assert_array_equal(winners, ref_winners)
        assert_allclose(win_dist2, ref_dist2, rtol=1e-10, atol=1e-12)
    w2, d2, _ = _run(X, centers, n_winners, 2)
    assert_array_equal(w2, winners)
    assert_array_equal(d2, win_dist2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_features", [2, 12])
def test_assign_topk_one_winner_is_assign_full(dtype, n_features):
    X, centers = _data(3 * CHUNK + 5, 30, n_features, dtype, seed=1)
    winners, win_dist2, _ = _run(X, centers, 1, 2)
    labels = np.empty(X.shape[0], dtype=np.int32)
    min_dist2 = np.empty(X.shape[0], dtype=dtype)
    _assign.assign_full(X, centers, labels, min_dist2, 2)
    assert_array_equal(winners[:, 0], labels)
    assert_array_equal(win_dist2[:, 0], min_dist2)


@pytest.mark.parametrize("n_features", [2, 12])
def test_assign_topk_ties_go_to_lower_index(n_features):
    # integer coordinates: every distance is exact, so duplicated centres tie exactly
    rng = np.random.RandomState(2)
    base = rng.randint(-3, 4, size=(6, n_features)).astype(np.float64)
    centers = np.ascontiguousarray(base[[0, 1, 0, 2, 1, 3, 4, 5, 0]])
    X = rng.randint(-3, 4, size=(CHUNK + 3, n_features)).astype(np.float64)
    for n_winners in (1, 4, 9):
        winners, win_dist2, _ = _run(X, centers, n_winners, 2)
        ref_winners, ref_dist2, _ = ref.assign_topk(X, centers, n_winners)
        assert_array_equal(winners, ref_winners)
        assert_array_equal(win_dist2, ref_dist2)


def test_assign_topk_empty_input():
    X = np.empty((0, 3))
    centers = np.zeros((2, 3))
    winners, win_dist2, n_evals = _run(X, centers, 1, 2)
    assert n_evals == 0 and winners.shape == (0, 1)
