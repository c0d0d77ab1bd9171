"""M-step accumulation kernels against their NumPy twins."""
import numpy as np
import pytest

from clusterkit import _reference as ref
from clusterkit._kernels import _mstep

from ..conftest import rtol_for

CHUNK = 256
# (n_samples, n_features, n_clusters): one sample, chunk edges, several chunks plus a
# remainder, a single cluster; from 9000 rows on the fixed-block layout (2, 3 and 9 blocks).
SHAPES = [(1, 3, 2), (CHUNK - 1, 2, 7), (CHUNK + 1, 12, 5), (3 * CHUNK + 17, 5, 33),
          (600, 16, 1), (9000, 12, 5), (20_001, 3, 17), (70_001, 2, 3)]
# hard labels, one winner with responsibilities, three winners
KINDS = ["hard", "soft1", "soft3"]


def _data(shape, dtype, kind="hard", seed=0):
    """X, weights (some zero), winners (labels[:, None] for hard), resp (None for hard, with
    zero and subnormal entries otherwise) and float64 per-sample squared distances."""
    n, d, c = shape
    rng = np.random.default_rng(seed)
    X = (rng.normal(size=(n, d)) * 10 + 3).astype(dtype)
    w = (rng.random(n) + 0.1).astype(dtype)
    w[::11] = 0
    dist2 = rng.random(n) * 5
    if kind == "hard":
        return X, w, rng.integers(0, c, n).astype(np.int32)[:, None], None, dist2
    m = 1 if kind == "soft1" else min(3, c)
    winners = np.argsort(rng.random((n, c)), axis=1)[:, :m].astype(np.int32)
    resp = rng.random((n, m)).astype(dtype)
    resp /= resp.sum(1, keepdims=True)
    resp[::7, m - 1] = np.finfo(dtype).tiny / 8
    resp[::13, 0] = 0
    return X, w, winners, resp, dist2


def _accumulate(X, w, winners, resp, dist2, n_clusters, n_threads):
    sums = np.full((n_clusters, X.shape[1]), np.nan, X.dtype)
    weight = np.full(n_clusters, np.nan, X.dtype)
    sse = None if dist2 is None else np.full(n_clusters, np.nan)
    _mstep.accumulate_statistics(X, w, winners, resp, dist2, sums, weight, sse, n_threads)
    return sums, weight, sse


@pytest.mark.parametrize("with_sse", [False, True], ids=["no_sse", "sse"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", SHAPES)
def test_accumulate_statistics_is_its_reference_bit_for_bit(shape, kind, with_sse, dtype):
    """Both layouts sum in the reference's order, so S, W and E are the same bits for 1 and 2
    threads. (This order is that of the two kernels the one replaced, accumulate_hard and
    accumulate_soft: checked bit for bit on both layouts when they were merged.)"""
    X, w, winners, resp, dist2 = _data(shape, dtype, kind)
    dist2 = dist2 if with_sse else None
    n, d, c = shape
    blocks = _mstep.blocks_fit(n, c, d, X.itemsize)
    assert blocks == (n >= 9000)
    expected = ref.accumulate_statistics(X, w, winners, resp, dist2, c, blocks)
    for n_threads in (1, 2):
        for got, want in zip(_accumulate(X, w, winners, resp, dist2, c, n_threads), expected):
            np.testing.assert_array_equal(got, want)
    # and the reference is the sum it claims to be (in float64, up to rounding)
    wr = (w[:, None] if resp is None else w[:, None] * resp).astype(np.float64)
    wr[wr < (0 if resp is None else np.finfo(dtype).tiny)] = 0
    sums64 = np.zeros((c, d))
    np.add.at(sums64, winners.ravel(), (wr[:, :, None] * X[:, None, :]).reshape(-1, d))
    tol = rtol_for(dtype) * 10
    np.testing.assert_allclose(expected[0], sums64, rtol=tol, atol=tol * np.abs(sums64).max())
    np.testing.assert_allclose(expected[1], np.bincount(winners.ravel(), wr.ravel(), c),
                               rtol=tol)
    if with_sse:
        np.testing.assert_allclose(
            expected[2], np.bincount(winners.ravel(), (wr * dist2[:, None]).ravel(), c),
            rtol=1e-12)


def test_sse_of_owner_computes_is_the_sample_order_sum(dtype, n_threads):
    """Under "owner computes" each cluster sums in sample order: E equals np.bincount's
    float64 sum exactly (the fixed blocks differ from it at rounding level only)."""
    X, w, winners, _, dist2 = _data((3 * CHUNK + 17, 5, 33), dtype, seed=3)
    _, _, sse = _accumulate(X, w, winners, None, dist2, 33, n_threads)
    np.testing.assert_array_equal(
        sse, np.bincount(winners[:, 0], w.astype(np.float64) * dist2, minlength=33))


def test_accumulate_statistics_takes_labels_as_a_view(dtype):
    labels = np.array([1, 0, 1, 1], np.int32)
    X = np.arange(8, dtype=dtype).reshape(4, 2)
    assert np.shares_memory(labels[:, None], labels)
    sums, weight, sse = _accumulate(X, np.ones(4, dtype), labels[:, None], None,
                                    np.array([1.0, 2.0, 3.0, 4.0]), 2, 2)
    np.testing.assert_array_equal(sums, [[2, 3], [10, 13]])
    np.testing.assert_array_equal(weight, [1, 3])
    np.testing.assert_array_equal(sse, [2, 8])


def test_empty_clusters_and_empty_input_give_zeros(dtype):
    sums, weight, sse = _accumulate(np.ones((4, 2), dtype), np.ones(4, dtype),
                                    np.zeros((4, 1), np.int32), None, np.ones(4), 3, 2)
    np.testing.assert_array_equal(weight, [4, 0, 0])
    np.testing.assert_array_equal(sums[1:], 0)
    np.testing.assert_array_equal(sse, [4, 0, 0])
    for resp in (None, np.empty((0, 2), dtype)):
        winners = np.empty((0, 1 if resp is None else 2), np.int32)
        out = _accumulate(np.empty((0, 2), dtype), np.empty(0, dtype), winners, resp,
                          np.empty(0), 3, 2)
        for a in out:
            np.testing.assert_array_equal(a, 0)


def test_soft_leaves_out_subnormal_contributions_hard_keeps_them(dtype, n_threads):
    """Responsibilities that underflowed to subnormal values add nothing, zero ones neither;
    the smallest normal one still counts. A hard assignment keeps every sample's weight."""
    tiny = np.finfo(dtype).tiny
    X = np.arange(12, dtype=dtype).reshape(4, 3) + 1
    w = np.ones(4, dtype)
    winners = np.array([[0, 1], [0, 2], [1, 3], [1, 2]], np.int32)
    resp = np.array([[1, tiny / 4], [1, 0], [1, tiny], [1, tiny / 2]], dtype)
    sums, weight, sse = _accumulate(X, w, winners, resp, np.full(4, 2.0), 4, n_threads)
    # cluster 2 only got 0 or subnormal responsibilities: no weight, so it will be relocated
    assert weight[2] == 0 and not sums[2].any() and sse[2] == 0
    assert weight[3] == tiny and np.array_equal(sums[3], tiny * X[2]) and sse[3] == 2 * tiny
    np.testing.assert_array_equal(weight[:2], [2, 2])
    w_hard = np.array([1, tiny / 4, 0, 1], dtype)
    _, weight, _ = _accumulate(X, w_hard, winners[:, :1].copy(), None, None, 4, n_threads)
    np.testing.assert_array_equal(weight, [1 + tiny / 4, 1, 0, 0])
