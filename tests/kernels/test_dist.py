"""The centring kernel against NumPy."""
import numpy as np
import pytest

from clusterkit._kernels import _dist


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_samples,n_features", [(1, 1), (255, 3), (1001, 17)])
@pytest.mark.parametrize("ordered", [False, True])
def test_center_rows_matches_numpy(dtype, n_samples, n_features, ordered):
    rng = np.random.RandomState(0)
    X = (rng.normal(size=(n_samples, n_features)) * 100 + 7).astype(dtype)
    mean = X.mean(axis=0)
    order = rng.permutation(n_samples) if ordered else None
    expected = X[order] - mean if ordered else X - mean
    sums = []
    for n_threads in (1, 2):
        out = np.empty_like(X)
        total = _dist.center_rows(X, mean, out, n_threads, order)
        np.testing.assert_array_equal(out, expected)  # the same rounding as NumPy
        np.testing.assert_allclose(total, (expected.astype(np.float64) ** 2).sum(),
                                   rtol=1e-6 if dtype == np.float32 else 1e-12)
        sums.append(total)
    assert sums[0] == sums[1]


def test_center_rows_rejects_an_order_of_the_wrong_length():
    X = np.ones((4, 2))
    with pytest.raises(ValueError, match="one entry per row"):
        _dist.center_rows(X, X.mean(axis=0), np.empty_like(X), 1, np.arange(3))
