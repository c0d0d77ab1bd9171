"""Invariants every fit keeps, on data hypothesis generates: weights are repetitions, the
objective does not depend on the order of the rows, results do not depend on the number of
threads, and the objectives the papers prove monotone are monotone."""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from clusterkit import Clusterer, PartialEStep, TruncatedEStep, presets

SETTINGS = settings(max_examples=15, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def mixtures(draw, max_samples=300, max_features=6):
    """A Gaussian mixture: ``(X, n_clusters)`` with well separated, unequal clusters."""
    seed = draw(st.integers(0, 2**31 - 1))
    n_samples = draw(st.integers(40, max_samples))
    n_features = draw(st.integers(1, max_features))
    n_clusters = draw(st.integers(2, 8))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    rng = np.random.RandomState(seed)
    means = rng.uniform(-20, 20, size=(n_clusters + 2, n_features))
    X = means[rng.randint(n_clusters + 2, size=n_samples)] + rng.normal(size=(n_samples,
                                                                              n_features))
    return X.astype(dtype), n_clusters


def _fit(estimator, X, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return estimator.fit(X, **kwargs)


COMPOSITIONS = {
    "lloyd": lambda C, init: Clusterer(C, seed=init),
    "elkan": lambda C, init: Clusterer(C, seed=init, estep="elkan"),
    "gmm": lambda C, init: Clusterer(C, seed=init, mstep="soft"),
    "truncated": lambda C, init: Clusterer(C, seed=init, estep=TruncatedEStep(2),
                                           mstep="soft"),
    "spherical": lambda C, init: Clusterer(C, seed=init, mstep="spherical"),
}


@pytest.mark.parametrize("name", sorted(COMPOSITIONS))
@SETTINGS
@given(data=mixtures(), repeats=st.integers(1, 3))
def test_integer_weights_are_repetitions(name, data, repeats):
    X, C = data
    rng = np.random.RandomState(len(X))
    counts = rng.randint(1, repeats + 1, size=len(X))
    init = X[:C].copy()
    weighted = _fit(COMPOSITIONS[name](C, init), X, sample_weight=counts.astype(X.dtype))
    repeated = _fit(COMPOSITIONS[name](C, init), np.repeat(X, counts, axis=0))
    rtol = 1e-3 if X.dtype == np.float32 else 1e-8
    np.testing.assert_allclose(weighted.cluster_centers_, repeated.cluster_centers_,
                               rtol=rtol, atol=rtol * np.abs(X).max())
    np.testing.assert_allclose(weighted.inertia_, repeated.inertia_, rtol=rtol * 10)


@pytest.mark.parametrize("name", sorted(COMPOSITIONS))
@SETTINGS
@given(data=mixtures())
def test_permuting_the_rows_permutes_the_labels_only(name, data):
    X, C = data
    order = np.random.RandomState(len(X)).permutation(len(X))
    init = X[:C].copy()
    plain = _fit(COMPOSITIONS[name](C, init), X)
    permuted = _fit(COMPOSITIONS[name](C, init), X[order])
    rtol = 1e-3 if X.dtype == np.float32 else 1e-8
    np.testing.assert_allclose(permuted.inertia_, plain.inertia_, rtol=rtol)
    np.testing.assert_allclose(permuted.cluster_centers_, plain.cluster_centers_, rtol=rtol,
                               atol=rtol * np.abs(X).max())
    agree = np.mean(permuted.labels_ == plain.labels_[order])
    assert agree >= 0.99  # up to near-ties


PRESETS_SMALL = {
    "lloyd": dict(), "elkan": dict(), "gmm": dict(), "var_kmeans_s": dict(G=3),
    "var_gmm_x": dict(G=3), "minibatch": dict(batch_size=64, max_passes=3),
    "nmbatch": dict(initial_batch=64), "sbe": dict(batch_size=64, max_iter=20),
    "lwcs_lloyd": dict(coreset_size=100), "vc_gmm": dict(G=3, coreset_size=100),
    "slk_bo": dict(), "slk_ms": dict(), "spherical_kmeans": dict(),
}


@pytest.mark.parametrize("name", sorted(PRESETS_SMALL))
@settings(max_examples=4, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=mixtures(max_samples=200))
def test_thread_count_does_not_change_a_bit(name, data):
    X, C = data
    make = getattr(presets, name)
    one = _fit(make(C, random_state=0, n_threads=1, **PRESETS_SMALL[name]), X)
    two = _fit(make(C, random_state=0, n_threads=2, **PRESETS_SMALL[name]), X)
    np.testing.assert_array_equal(one.cluster_centers_, two.cluster_centers_)
    np.testing.assert_array_equal(one.labels_, two.labels_)
    assert one.objective_ == two.objective_ and one.cost_ == two.cost_


def _slack(X, values):
    """Rounding slack of an objective's history: a few units of the dtype's epsilon."""
    return 64 * np.finfo(X.dtype).eps * np.max(np.abs(values))


@SETTINGS
@given(data=mixtures())
def test_lloyd_objective_never_increases(data):
    X, C = data
    km = _fit(presets.lloyd(C, random_state=0, tol=0), X)
    qe = np.array([h["objective"] for h in km.history_])
    assert np.all(np.diff(qe) <= _slack(X, qe))


@pytest.mark.parametrize("estep", ["full", "elkan", PartialEStep(G=3)],
                         ids=["full", "elkan", "partial"])
@SETTINGS
@given(data=mixtures())
def test_spherical_cosine_objective_never_increases(estep, data):
    """Spherical k-means: the quantization error of the unit rows (twice the cosine
    dissimilarity) never increases, and the centres stay on the unit sphere."""
    X, C = data
    km = _fit(Clusterer(C, estep=estep, mstep="spherical", random_state=0, tol=0,
                        max_iter=50), X)
    qe = np.array([h["objective"] for h in km.history_])
    assert np.all(np.diff(qe) <= _slack(X, qe))
    norms = np.linalg.norm(km.cluster_centers_.astype(np.float64), axis=1)
    np.testing.assert_allclose(norms, 1.0, rtol=1e-5)


@pytest.mark.parametrize("estep", [None, TruncatedEStep(2), PartialEStep(G=3, n_winners=2)],
                         ids=["em", "truncated", "var-gmm"])
@SETTINGS
@given(data=mixtures())
def test_em_free_energy_never_decreases(estep, data):
    """Standard, truncated and partial variational EM never lower the (truncated) free energy
    (Forster & Lücke 2018, Prop. 1; Lücke & Forster 2017)."""
    X, C = data
    km = _fit(Clusterer(C, estep=estep or "full", mstep="soft", random_state=0, tol=0,
                        max_iter=50), X)
    energy = np.array([h["objective"] for h in km.history_])
    assert np.all(np.diff(energy) >= -_slack(X, energy))


# --- the same rows on every container, and streams after a fit -----------------------------

@pytest.mark.parametrize("preset", ["lloyd", "elkan", "lwcs_lloyd", "vc_gmm", "best_quality",
                                    "large_scale", "spherical_kmeans"])
@settings(max_examples=5, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=mixtures(), weighted=st.booleans())
def test_a_memmap_fits_as_the_same_rows_in_memory(tmp_path, preset, data, weighted):
    X, C = data
    w = np.random.RandomState(len(X)).exponential(size=len(X)) if weighted else None
    path = tmp_path / "X.npy"
    np.save(path, X)
    kwargs = {"coreset_size": 64} if preset in ("lwcs_lloyd", "vc_gmm") else {}
    ours = _fit(getattr(presets, preset)(C, random_state=0, **kwargs),
                np.load(path, mmap_mode="r"), sample_weight=w)
    reference = _fit(getattr(presets, preset)(C, random_state=0, **kwargs), X,
                     sample_weight=w)
    np.testing.assert_array_equal(ours.cluster_centers_, reference.cluster_centers_)
    np.testing.assert_array_equal(np.asarray(ours.labels_), reference.labels_)


@pytest.mark.parametrize("preset", ["lloyd", "elkan", "minibatch", "spherical_kmeans"])
@SETTINGS
@given(data=mixtures())
def test_csr_rows_fit_as_their_dense_twin(preset, data):
    """From the same start, to rounding: CSR rows are not centred, so the distances differ in
    their last bits, and the error agrees to the rounding of uncentred distances."""
    import scipy.sparse as sp
    X, C = data
    X = X + np.float32(30)  # positive rows, as CSR data mostly are, away from the origin
    init = X[:C].copy()
    dense = _fit(getattr(presets, preset)(C, seed=init, random_state=0), X)
    sparse = _fit(getattr(presets, preset)(C, seed=init, random_state=0), sp.csr_matrix(X))
    eps = float(np.finfo(X.dtype).eps)
    slack = 64 * (X.shape[1] + 2) * eps * float((X.astype(np.float64) ** 2).sum())
    assert abs(dense.inertia_ - sparse.inertia_) <= slack + 1e-6 * dense.inertia_
    agree = np.mean(dense.labels_ == sparse.labels_)
    assert agree >= 0.99


@pytest.mark.parametrize("preset", ["minibatch", "lloyd", "elkan", "spherical_kmeans"])
@SETTINGS
@given(data=mixtures(), batch=st.integers(1, 7))
def test_partial_fit_after_fit_takes_batches_smaller_than_n_clusters(preset, data, batch):
    X, C = data
    model = _fit(getattr(presets, preset)(C, random_state=0), X)
    for start in range(0, min(len(X), 5 * batch), batch):
        model.partial_fit(X[start:start + batch])
        rows = X[start:start + batch]
        assert model.labels_.shape == (len(rows),)
        np.testing.assert_array_equal(model.labels_, model.predict(rows))
    assert model.cluster_centers_.shape == (C, X.shape[1])
    assert np.all(np.isfinite(model.cluster_centers_))
