"""Exact assignment and responsibility kernels against their NumPy twins."""
import numpy as np
import pytest

from clusterkit import _reference as ref
from clusterkit._kernels import _assign, _blas

from .._helpers import assert_labels_equal_up_to_ties
from ..conftest import rtol_for

CHUNK = 256
# (n_samples, n_features, n_clusters): one sample, chunk edges, several chunks plus a remainder,
# a single cluster, few features (direct loop) and many (gemm).
SHAPES = [(1, 3, 2), (CHUNK - 1, 2, 7), (CHUNK + 1, 12, 5), (3 * CHUNK + 17, 5, 33),
          (600, 16, 1), (700, 9, 40), (301, 8, 64)]


def _data(shape, dtype, seed=0):
    n, d, c = shape
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(dtype)
    centers = rng.normal(size=(c, d)).astype(dtype)
    return X, centers


@pytest.mark.parametrize("shape", SHAPES)
def test_assign_full_matches_reference(shape, dtype, n_threads):
    X, centers = _data(shape, dtype)
    labels = np.empty(len(X), np.int32)
    dist2 = np.empty(len(X), dtype)
    n_evals = _assign.assign_full(X, centers, labels, dist2, n_threads)
    labels_ref, dist2_ref, n_ref = ref.assign_full(X, centers)
    assert n_evals == n_ref
    assert_labels_equal_up_to_ties(X, centers, labels, labels_ref, rtol_for(dtype))
    d_own = ref.sqdist(X, centers)[np.arange(len(X)), labels]
    np.testing.assert_allclose(dist2, d_own, rtol=rtol_for(dtype) * 10, atol=rtol_for(dtype) * 10)
    assert (dist2 >= 0).all()


@pytest.mark.parametrize("shape", SHAPES)
def test_assign_full_same_for_one_and_two_threads(shape, dtype):
    X, centers = _data(shape, dtype, seed=1)
    out = []
    for n_threads in (1, 2):
        labels = np.empty(len(X), np.int32)
        dist2 = np.empty(len(X), dtype)
        _assign.assign_full(X, centers, labels, dist2, n_threads)
        out.append((labels, dist2))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])


def test_assign_full_ties_go_to_lowest_index(dtype):
    X = np.zeros((5, 3), dtype)
    centers = np.ones((4, 3), dtype)
    labels = np.empty(5, np.int32)
    _assign.assign_full(X, centers, labels, np.empty(5, dtype), 1)
    np.testing.assert_array_equal(labels, 0)


@pytest.mark.parametrize("n_features", [1, 2, 5, 8, 9])
@pytest.mark.parametrize("tied", [(0, 1), (5, 20, 36), (17, 33, 35)])
def test_assign_full_ties_in_different_lanes_go_to_lowest_index(n_features, tied, dtype):
    # equal nearest centres in different SIMD lanes, in full vectors and after the last one
    rng = np.random.default_rng(4)
    X = rng.normal(size=(301, n_features)).astype(dtype)
    centers = (rng.normal(size=(37, n_features)) + 100).astype(dtype)
    centers[list(tied)] = 0
    labels = np.empty(len(X), np.int32)
    dist2 = np.empty(len(X), dtype)
    _assign.assign_full(X, centers, labels, dist2, 2)
    np.testing.assert_array_equal(labels, min(tied))
    np.testing.assert_allclose(dist2, (X.astype(np.float64) ** 2).sum(axis=1),
                               rtol=rtol_for(dtype))


@pytest.mark.parametrize("n_features", range(1, 9))
def test_assign_full_four_rows_at_once_give_the_bits_of_one_at_a_time(n_features, dtype):
    # up to 8 features, rows go four per call; a single row goes alone
    X, centers = _data((103, n_features, 45), dtype, seed=n_features)
    labels = np.empty(len(X), np.int32)
    dist2 = np.empty(len(X), dtype)
    _assign.assign_full(X, centers, labels, dist2, 2)
    for i in range(len(X)):
        label, d2 = np.empty(1, np.int32), np.empty(1, dtype)
        _assign.assign_full(X[i:i + 1], centers, label, d2, 1)
        assert (labels[i], dist2[i]) == (label[0], d2[0])


def test_assign_full_empty_input(dtype):
    X = np.empty((0, 3), dtype)
    assert _assign.assign_full(X, np.ones((2, 3), dtype), np.empty(0, np.int32),
                               np.empty(0, dtype), 2) == 0


@pytest.mark.parametrize("shape", SHAPES)
def test_responsibilities_full_matches_reference(shape, dtype, n_threads):
    X, centers = _data(shape, dtype, seed=2)
    n, c = len(X), len(centers)
    sigma2 = 0.7
    resp = np.empty((n, c), dtype)
    labels = np.empty(n, np.int32)
    min_dist2 = np.empty(n, dtype)
    log_norm = np.empty(n, dtype)
    n_evals = _assign.responsibilities_full(X, centers, sigma2, resp, labels, min_dist2,
                                            log_norm, n_threads)
    resp_ref, labels_ref, min_ref, log_ref, n_ref = ref.responsibilities_full(X, centers, sigma2)
    tol = rtol_for(dtype) * 10
    assert n_evals == n_ref
    np.testing.assert_allclose(resp, resp_ref, rtol=tol, atol=tol)
    np.testing.assert_allclose(log_norm, log_ref, rtol=tol, atol=tol)
    np.testing.assert_allclose(min_dist2, min_ref, rtol=tol, atol=tol)
    assert_labels_equal_up_to_ties(X, centers, labels, labels_ref, rtol_for(dtype))


def test_responsibilities_full_without_variance_returns_distances(dtype):
    X, centers = _data((300, 4, 6), dtype)
    resp = np.empty((300, 6), dtype)
    log_norm = np.full(300, 7, dtype)
    _assign.responsibilities_full(X, centers, -1.0, resp, np.empty(300, np.int32),
                                  np.empty(300, dtype), log_norm, 2)
    np.testing.assert_allclose(resp, ref.sqdist(X, centers), rtol=rtol_for(dtype) * 10)
    assert (log_norm == 7).all()


@pytest.mark.parametrize("n_winners", [1, 3, 8])
def test_responsibilities_truncated_matches_reference(n_winners, dtype, n_threads):
    rng = np.random.default_rng(3)
    dist2 = (rng.random((CHUNK + 3, n_winners)) * 50).astype(dtype)
    resp = np.empty_like(dist2)
    log_norm = np.empty(len(dist2), dtype)
    assert _assign.responsibilities_truncated(dist2, 2.5, resp, log_norm, n_threads) == 0
    resp_ref, log_ref = ref.softmax_neg(dist2, 2.5)
    np.testing.assert_allclose(resp, resp_ref, rtol=rtol_for(dtype) * 10, atol=1e-30)
    np.testing.assert_allclose(log_norm, log_ref, rtol=rtol_for(dtype) * 10)
    in_place = dist2.copy()
    _assign.responsibilities_truncated(in_place, 2.5, in_place, log_norm, n_threads)
    np.testing.assert_array_equal(in_place, resp)


def test_responsibilities_are_never_subnormal(dtype, n_threads):
    """Responsibilities that would be subnormal are 0; the smallest normal ones are kept."""
    tiny = float(np.finfo(dtype).tiny)
    two_sigma2 = 2 * 2.5
    # exp(-d2 / (2 sigma2)) relative to the best one: tiny / 4 and 4 * tiny
    dist2 = np.array([[0, -two_sigma2 * np.log(tiny / 4)],
                      [0, -two_sigma2 * np.log(4 * tiny)]], dtype)
    resp = np.empty_like(dist2)
    _assign.responsibilities_truncated(dist2, 2.5, resp, np.empty(2, dtype), n_threads)
    assert resp[0, 0] == 1 and resp[0, 1] == 0
    assert resp[1, 1] >= tiny


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (7, 5, 3), (300, 257, 65), (4, 3, 0)])
def test_gemm_nt_matches_reference(m, n, k, dtype):
    rng = np.random.default_rng(4)
    A = rng.normal(size=(m, k)).astype(dtype)
    B = rng.normal(size=(n, k)).astype(dtype)
    C = rng.normal(size=(m, n)).astype(dtype)
    expected = ref.gemm_nt(A, B, -2.0, 0.5, C)
    _blas.gemm_nt(A, B, -2.0, 0.5, C)
    np.testing.assert_allclose(C, expected, rtol=rtol_for(dtype) * 100, atol=rtol_for(dtype) * 100)


@pytest.mark.parametrize("with_sse", [False, True], ids=["no_sse", "sse"])
@pytest.mark.parametrize("shape", [(20_001, 3, 17), (9000, 12, 5)])
def test_assign_full_accumulate_equals_assign_then_accumulate(shape, with_sse, dtype,
                                                              n_threads):
    from clusterkit._kernels import _mstep
    X, centers = _data(shape, dtype, seed=5)
    n, c = len(X), len(centers)
    w = np.random.default_rng(6).random(n).astype(dtype)
    assert _mstep.blocks_fit(n, c, X.shape[1], X.itemsize)
    out = {}
    for fused in (True, False):
        labels, dist2 = np.empty(n, np.int32), np.empty(n, dtype)
        sums, weight = np.empty((c, X.shape[1]), dtype), np.empty(c, dtype)
        sse = np.empty(c) if with_sse else None
        if fused:
            n_evals = _assign.assign_full_accumulate(X, w, centers, labels, dist2, sums, weight,
                                                     n_threads, sse)
        else:
            n_evals = _assign.assign_full(X, centers, labels, dist2, n_threads)
            _mstep.accumulate_statistics(X, w, labels[:, None], None,
                                         dist2.astype(np.float64) if with_sse else None,
                                         sums, weight, sse, 1)
        out[fused] = (labels, dist2, sums, weight, sse, n_evals)
    for a, b in zip(out[True], out[False]):
        np.testing.assert_array_equal(a, b)


def test_assign_full_accumulate_refuses_small_inputs(dtype):
    X, centers = _data((300, 3, 4), dtype)
    with pytest.raises(ValueError, match="fixed-block layout"):
        _assign.assign_full_accumulate(X, np.ones(300, dtype), centers, np.empty(300, np.int32),
                                       np.empty(300, dtype), np.empty((4, 3), dtype),
                                       np.empty(4, dtype), 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_samples,n_features", [(1, 1), (257, 3), (1001, 37)])
def test_dist2_to_labels_matches_reference(dtype, n_samples, n_features):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(n_samples, n_features)).astype(dtype)
    centers = rng.normal(size=(7, n_features)).astype(dtype)
    labels = rng.randint(7, size=n_samples).astype(np.int32)
    expected = ((X.astype(np.float64) - centers[labels]) ** 2).sum(1)
    results = []
    for n_threads in (1, 2):
        dist2 = np.empty(n_samples, dtype=dtype)
        assert _assign.dist2_to_labels(X, centers, labels, dist2, n_threads) == n_samples
        np.testing.assert_allclose(dist2, expected, rtol=1e-5 if dtype == np.float32 else 1e-12)
        results.append(dist2)
    np.testing.assert_array_equal(results[0], results[1])
