"""Lloyd's fit on float64 data with many features: float32 products, the labels of every
other exact E-step."""
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from clusterkit import Clusterer, ElkanEStep, FullEStep, HardMStep, YinyangEStep
from clusterkit._kernels import _assign

from .conftest import make_state


def _integer_data(n_features, seed=0):
    # integer rows and seeds: many exact ties, where float32 products cannot rank centres
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(3000, n_features)).astype(np.float64)
    return X, X[rng.choice(len(X), 40, replace=False)]


def _fit(estep, X, seed, n_threads=2):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return Clusterer(len(seed), seed=seed, estep=estep, mstep=HardMStep(), tol=0,
                         max_iter=6, n_threads=n_threads).fit(X)


@pytest.mark.parametrize("n_features", [_assign.MIXED_MIN_FEATURES, 100])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_lloyd_with_float32_products_gives_the_exact_labels(n_features, n_threads):
    X, seed = _integer_data(n_features)
    full = _fit(FullEStep(), X, seed, n_threads)
    assert full.cluster_centers_.dtype == np.float64
    for estep in (ElkanEStep(), YinyangEStep()):
        other = _fit(estep, X, seed, n_threads)
        np.testing.assert_array_equal(full.labels_, other.labels_)
        np.testing.assert_allclose(full.cluster_centers_, other.cluster_centers_, rtol=1e-12)
        np.testing.assert_allclose(full.inertia_, other.inertia_, rtol=1e-12)
    np.testing.assert_array_equal(full.predict(X), full.labels_)
    np.testing.assert_allclose(-full.score(X), full.inertia_, rtol=1e-12)


@pytest.mark.parametrize("n_features, dtype, made", [(100, np.float64, True),
                                                     (_assign.MIXED_MIN_FEATURES - 1,
                                                      np.float64, False),
                                                     (100, np.float32, False)])
def test_float32_copy_is_made_for_float64_data_with_many_features(n_features, dtype, made):
    X, seed = _integer_data(n_features)
    X = X.astype(dtype)
    state = make_state(X, len(seed))
    estep, w = FullEStep(), np.ones(len(X), dtype)
    buffers = state.run.estep_state = estep.init_state(X, w, seed.astype(dtype), state)
    assert buffers.x32 is None  # made at the first batch of contiguous rows
    state.run.rows = slice(0, len(X))
    labels = estep.assign(X, w, seed.astype(dtype), state).labels.copy()
    assert (buffers.x32 is not None) == made
    if made:
        assert buffers.x32.shape == (len(X), n_features + 1)
    # scattered rows (a mini-batch) read the float64 rows
    rows = np.arange(0, len(X), 3)
    state.run.rows = rows
    batch = estep.assign(X[rows], w[rows], seed.astype(dtype), state)
    np.testing.assert_array_equal(batch.labels, labels[rows])
