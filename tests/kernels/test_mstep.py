"""M-step accumulation kernels against their NumPy twins."""
import numpy as np
import pytest

from clusterkit import _reference as ref
from clusterkit._kernels import _mstep

from ..conftest import rtol_for

# (20_001, 3, 17) exceeds 8192 rows, so the hard M-step takes its fixed-block path.
SHAPES = [(1, 3, 2), (255, 2, 7), (257, 12, 5), (3 * 256 + 17, 5, 33), (20_001, 3, 17),
          (600, 16, 1)]


def _data(shape, dtype, seed=0):
    n, d, c = shape
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(dtype)
    w = rng.random(n).astype(dtype) + 0.1
    labels = rng.integers(0, c, n).astype(np.int32)
    return X, w, labels


@pytest.mark.parametrize("shape", SHAPES)
def test_accumulate_hard_matches_reference(shape, dtype, n_threads):
    X, w, labels = _data(shape, dtype)
    c = shape[2]
    sums = np.empty((c, X.shape[1]), dtype)
    weight = np.empty(c, dtype)
    _mstep.accumulate_hard(X, w, labels, sums, weight, n_threads)
    sums_ref, weight_ref = ref.accumulate_hard(X, w, labels, c)
    tol = rtol_for(dtype) * 10
    np.testing.assert_allclose(sums, sums_ref, rtol=tol, atol=tol * len(X))
    np.testing.assert_allclose(weight, weight_ref, rtol=tol)


def _winners(n, c, m, rng):
    return np.argsort(rng.random((n, c)), axis=1)[:, :m].astype(np.int32)


@pytest.mark.parametrize("shape", SHAPES[:-1])
def test_accumulate_soft_and_sse_match_reference(shape, dtype, n_threads):
    X, w, _ = _data(shape, dtype, seed=1)
    n, d, c = shape
    rng = np.random.default_rng(2)
    m = min(3, c)
    winners = _winners(n, c, m, rng)
    resp = rng.random((n, m)).astype(dtype)
    resp /= resp.sum(1, keepdims=True)
    sums = np.empty((c, d), dtype)
    weight = np.empty(c, dtype)
    _mstep.accumulate_soft(X, w, winners, resp, sums, weight, n_threads)
    sums_ref, weight_ref = ref.accumulate_soft(X, w, winners, resp, c)
    tol = rtol_for(dtype) * 10
    np.testing.assert_allclose(sums, sums_ref, rtol=tol, atol=tol * n)
    np.testing.assert_allclose(weight, weight_ref, rtol=tol, atol=tol)
    centers = rng.normal(size=(c, d)).astype(dtype)
    sse = np.empty(n, dtype)
    assert _mstep.soft_sse(X, winners, resp, centers, sse, n_threads) == 0
    np.testing.assert_allclose(sse, ref.soft_sse(X, winners, resp, centers), rtol=tol)


@pytest.mark.parametrize("shape", SHAPES)
def test_accumulation_bit_identical_across_threads(shape, dtype):
    X, w, labels = _data(shape, dtype, seed=3)
    c = shape[2]
    out = []
    for n_threads in (1, 2):
        sums = np.empty((c, X.shape[1]), dtype)
        weight = np.empty(c, dtype)
        _mstep.accumulate_hard(X, w, labels, sums, weight, n_threads)
        out.append((sums, weight))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])


def test_empty_clusters_get_zero_weight(dtype):
    X = np.ones((4, 2), dtype)
    sums = np.full((3, 2), np.nan, dtype)
    weight = np.full(3, np.nan, dtype)
    _mstep.accumulate_hard(X, np.ones(4, dtype), np.zeros(4, np.int32), sums, weight, 2)
    np.testing.assert_array_equal(weight, [4, 0, 0])
    np.testing.assert_array_equal(sums[1:], 0)


def test_accumulate_soft_leaves_out_subnormal_contributions(dtype, n_threads):
    """Responsibilities that underflowed to subnormal values add nothing, zero ones neither;
    the smallest normal one still counts."""
    tiny = np.finfo(dtype).tiny
    X = np.arange(12, dtype=dtype).reshape(4, 3) + 1
    w = np.ones(4, dtype)
    winners = np.array([[0, 1], [0, 2], [1, 3], [1, 2]], np.int32)
    resp = np.array([[1, tiny / 4], [1, 0], [1, tiny], [1, tiny / 2]], dtype)
    sums = np.empty((4, 3), dtype)
    weight = np.empty(4, dtype)
    _mstep.accumulate_soft(X, w, winners, resp, sums, weight, n_threads)
    sums_ref, weight_ref = ref.accumulate_soft(X, w, winners, resp, 4)
    np.testing.assert_allclose(sums, sums_ref, rtol=rtol_for(dtype))
    np.testing.assert_allclose(weight, weight_ref, rtol=rtol_for(dtype))
    # cluster 2 only got 0 or subnormal responsibilities: no weight, so it will be relocated
    assert weight[2] == 0 and not sums[2].any()
    assert weight[3] == tiny and np.array_equal(sums[3], tiny * X[2])


@pytest.mark.parametrize("n_samples", [700, 20_001])  # owner computes, fixed blocks
def test_accumulate_soft_is_thread_invariant_and_skips_subnormals(n_samples, dtype):
    X, w, _ = _data((n_samples, 3, 17), dtype, seed=4)
    rng = np.random.default_rng(5)
    winners = _winners(n_samples, 17, 3, rng)
    resp = rng.random((n_samples, 3)).astype(dtype)
    resp /= resp.sum(1, keepdims=True)
    resp[::7, 2] = np.finfo(dtype).tiny / 8  # subnormal
    out = []
    for n_threads in (1, 2):
        sums, weight = np.empty((17, 3), dtype), np.empty(17, dtype)
        _mstep.accumulate_soft(X, w, winners, resp, sums, weight, n_threads)
        out.append((sums, weight))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])
    sums_ref, weight_ref = ref.accumulate_soft(X, w, winners, resp, 17)
    tol = rtol_for(dtype) * 10
    np.testing.assert_allclose(out[0][0], sums_ref, rtol=tol, atol=tol * n_samples)
    np.testing.assert_allclose(out[0][1], weight_ref, rtol=tol)
