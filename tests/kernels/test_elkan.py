"""The accumulation part of Elkan's fused assignment kernel (its bounds: tests/test_elkan.py)."""
import numpy as np
import pytest

from clusterkit._kernels import _elkan, _mstep


@pytest.mark.parametrize("n_samples,n_features,n_clusters", [(9001, 3, 10), (20_001, 5, 17)])
def test_fused_statistics_equal_the_accumulation_kernels(n_samples, n_features, n_clusters,
                                                         dtype, n_threads):
    """With sums and sse requested, a first visit gives the bits of accumulate_statistics on
    the labels and distances it returns; without sse, the same sums."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n_samples, n_features)).astype(dtype)
    w = rng.uniform(0.5, 2, n_samples).astype(dtype)
    centers = X[:n_clusters].copy()
    assert _mstep.blocks_fit(n_samples, n_clusters, n_features, X.itemsize)
    half_cc, half_min = np.empty((n_clusters, n_clusters)), np.empty(n_clusters)
    _elkan.center_half_distances(centers, half_cc, half_min, 1)
    out = []
    for with_sse in (True, False):
        labels, dist2 = np.empty(n_samples, np.int32), np.empty(n_samples, dtype)
        sums, weight = np.empty_like(centers), np.empty(n_clusters, dtype)
        sse = np.empty(n_clusters) if with_sse else None
        _elkan.elkan_assign(X, w, np.arange(n_samples, dtype=np.intp), centers, half_cc,
                            half_min, np.zeros(n_clusters),
                            np.empty((n_samples, n_clusters), np.float32),
                            np.full(n_samples, -1, np.int32), np.empty(n_samples, dtype),
                            np.empty(n_samples), labels, dist2, sums, weight, 2.0 ** -20,
                            n_threads, sse)
        out.append((labels, dist2, sums, weight))
        if with_sse:
            expected = (np.empty_like(centers), np.empty(n_clusters, dtype),
                        np.empty(n_clusters))
            _mstep.accumulate_statistics(X, w, labels[:, None], None, dist2.astype(np.float64),
                                         *expected, 1)
            for got, want in zip((sums, weight, sse), expected):
                np.testing.assert_array_equal(got, want)
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)
