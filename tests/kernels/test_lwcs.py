"""Lightweight-coreset kernels (block moments, cumulative sampling mass) vs NumPy twins."""
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from clusterkit import _reference as ref
from clusterkit._kernels import _lwcs

CHUNK = 256  # CHUNK_SIZE of _dist.pxd (the mass); the moments use pieces of 64 KiB
# the last size: many pieces with a remainder, and enough work for two threads
SIZES = [1, CHUNK - 1, CHUNK + 1, 3 * CHUNK + 17, 12_007]
FEATURES = [1, 3, 4, 13]  # below, at and above the four partial sums of the distances


def _data(n_samples, n_features, dtype, seed=0):
    rng = np.random.RandomState(seed)
    # far from the origin: the moments must not cancel
    X = (rng.normal(size=(n_samples, n_features)) + 1e3).astype(dtype)
    w = rng.uniform(0.5, 2.0, size=n_samples)
    w[rng.uniform(size=n_samples) < 0.1] = 0
    w[0] = 1
    return X, w


def _moments(X, w, n_threads, extremes=True):
    mean, low, high = (np.full(X.shape[1], np.nan) for _ in range(3))
    total, m2 = _lwcs.moments_weighted(X, w, mean, low, high, extremes, n_threads)
    return total, mean, m2, low, high


@pytest.mark.parametrize("n_samples", SIZES)
@pytest.mark.parametrize("n_features", FEATURES)
def test_moments_weighted_matches_reference(dtype, n_threads, n_features, n_samples):
    X, w = _data(n_samples, n_features, dtype)
    total, mean, m2, low, high = _moments(X, w, n_threads)
    total_ref, mean_ref, m2_ref, low_ref, high_ref = ref.moments_weighted(X, w)
    assert_allclose(total, total_ref, rtol=1e-12)
    assert_allclose(mean, mean_ref, rtol=1e-12)
    # M2 is a sum of squared deviations of ~1 around 1e3: relative to the data's scale
    assert_allclose(m2, m2_ref, rtol=1e-9, atol=1e-9 * n_samples)
    assert_array_equal(low, low_ref)
    assert_array_equal(high, high_ref)
    # bit-identical for any thread count, and the sums without the extremes
    other = _moments(X, w, 3 - n_threads)
    for got, expected in zip(other, (total, mean, m2, low, high)):
        assert_array_equal(got, expected)
    total_only, mean_only, m2_only, low_only, high_only = _moments(X, w, n_threads, False)
    assert (total_only, m2_only) == (total, m2)
    assert_array_equal(mean_only, mean)
    assert np.all(low_only == np.inf) and np.all(high_only == -np.inf)


def test_moments_weighted_zero_weights_and_no_rows():
    X, w = _data(CHUNK + 1, 3, np.float64)
    total, mean, m2, low, high = _moments(X, np.zeros(len(X)), 2)
    assert total == 0 and m2 == 0 and np.all(mean == 0)
    assert_array_equal(low, X.min(axis=0))
    total, mean, m2, low, high = _moments(X[:0], w[:0], 1)
    assert total == 0 and m2 == 0 and np.all(low == np.inf) and np.all(high == -np.inf)


def test_moments_weighted_non_finite_data_give_non_finite_sums():
    X, w = _data(CHUNK + 1, 3, np.float64)
    X[CHUNK, 1] = np.nan
    assert not np.isfinite(_moments(X, w, 2)[1][1])


@pytest.mark.parametrize("n_samples", SIZES)
@pytest.mark.parametrize("n_features", FEATURES)
def test_mass_cumulative_matches_reference(dtype, n_threads, n_features, n_samples):
    X, w = _data(n_samples, n_features, dtype)
    mean = ref.moments_weighted(X, w)[1]
    a, b = 0.3, 0.7
    dist2, cumsum = np.empty(n_samples), np.empty(n_samples)
    n_evals = _lwcs.mass_cumulative(X, w, mean, a, b, dist2, cumsum, n_threads)
    dist2_ref, cumsum_ref, n_evals_ref = ref.mass_cumulative(X, w, mean, a, b)
    assert n_evals == n_evals_ref == n_samples
    assert_allclose(dist2, dist2_ref, rtol=1e-12)
    assert_allclose(cumsum, cumsum_ref, rtol=1e-12)
    # a row on the mean is at distance 0 exactly
    on_mean = X[:1].astype(np.float64)
    _lwcs.mass_cumulative(X[:1], w[:1], on_mean[0], a, b, dist2[:1], cumsum[:1], 1)
    assert dist2[0] == 0
    # bit-identical for any thread count
    dist2_other, cumsum_other = np.empty(n_samples), np.empty(n_samples)
    _lwcs.mass_cumulative(X, w, mean, a, b, dist2_other, cumsum_other, 3 - n_threads)
    _lwcs.mass_cumulative(X, w, mean, a, b, dist2, cumsum, n_threads)
    assert_array_equal(dist2_other, dist2)
    assert_array_equal(cumsum_other, cumsum)
