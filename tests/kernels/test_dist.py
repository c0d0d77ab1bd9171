"""The centring kernel against NumPy."""
import numpy as np
import pytest

from clusterkit._kernels import _dist


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_samples,n_features", [(1, 1), (255, 3), (1001, 17)])
def test_center_rows_matches_numpy(dtype, n_samples, n_features):
    X = (np.random.RandomState(0).normal(size=(n_samples, n_features)) * 100 + 7).astype(dtype)
    mean = X.mean(axis=0)
    sums = []
    for n_threads in (1, 2):
        out = np.empty_like(X)
        total = _dist.center_rows(X, mean, out, n_threads)
        np.testing.assert_array_equal(out, X - mean)  # the same rounding as NumPy
        np.testing.assert_allclose(total, ((X - mean).astype(np.float64) ** 2).sum(),
                                   rtol=1e-6 if dtype == np.float32 else 1e-12)
        sums.append(total)
    assert sums[0] == sums[1]
