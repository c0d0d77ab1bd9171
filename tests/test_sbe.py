"""Stochastic backward Euler: the SBEDecay schedule and HardMStep's "backward_euler" rule."""
import numpy as np
import pytest
from sklearn.datasets import load_iris, make_blobs

from clusterkit import Clusterer, ElkanEStep, SBEDecay, presets
from clusterkit.metrics import quantization_error


@pytest.fixture(scope="module")
def blobs():
    X, _ = make_blobs(600, 3, centers=6, cluster_std=1.5, random_state=0)
    return X


def _explicit_step(X, w, centers, step):
    """One explicit gradient step of f = sum_n w_n min_j ||x_n - c_j||^2 / (2 sum w)."""
    labels = ((X[:, None] - centers) ** 2).sum(-1).argmin(1)
    gradient = np.zeros_like(centers)
    for j in range(len(centers)):
        mine = labels == j
        gradient[j] = (w[mine, None] * (centers[j] - X[mine])).sum(0) / w.sum()
    return centers - step * gradient


def test_full_batch_small_steps_lower_the_objective_every_outer_step(blobs):
    km = Clusterer(6, seed=blobs[:6], schedule=SBEDecay(batch_size=len(blobs), step=0.5,
                                                         outer_iter=40)).fit(blobs)
    f = np.array([h["objective"] for h in km.history_])
    assert len(f) == 40 and f[-1] < 0.9 * f[0]
    assert np.all(np.diff(f) <= 1e-12 * f[:-1])


@pytest.mark.parametrize("weighted", [False, True])
def test_one_inner_step_without_averaging_is_the_explicit_step(blobs, weighted):
    w = np.random.RandomState(0).uniform(0.5, 2, len(blobs)) if weighted else np.ones(len(blobs))
    init = blobs[[0, 100, 200, 300, 400, 500]]
    schedule = SBEDecay(batch_size=len(blobs), step=0.7, averaging=0.0, inner_iter=1,
                        outer_iter=1)
    km = Clusterer(6, seed=init, schedule=schedule).fit(blobs, sample_weight=w)
    np.testing.assert_allclose(km.cluster_centers_, _explicit_step(blobs, w, init, 0.7),
                               rtol=1e-12, atol=1e-12)


def test_a_weight_of_two_is_a_duplicated_sample(blobs):
    doubled = np.arange(0, len(blobs), 3)
    w = np.ones(len(blobs))
    w[doubled] = 2
    X_dup = np.vstack([blobs, blobs[doubled]])
    schedule = SBEDecay(batch_size=10**6, step=2.0, outer_iter=15)
    weighted = Clusterer(6, seed=blobs[:6], schedule=schedule).fit(blobs, sample_weight=w)
    duplicated = Clusterer(6, seed=blobs[:6], schedule=schedule).fit(X_dup)
    np.testing.assert_allclose(weighted.cluster_centers_, duplicated.cluster_centers_,
                               rtol=1e-10)
    np.testing.assert_allclose(weighted.inertia_, duplicated.inertia_, rtol=1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_results_do_not_depend_on_threads(blobs, dtype):
    X = blobs.astype(dtype)
    fits = [presets.sbe(6, batch_size=50, n_threads=n, random_state=0).set_params(
        schedule__outer_iter=20).fit(X) for n in (1, 2)]
    assert fits[0].cluster_centers_.dtype == dtype
    np.testing.assert_array_equal(fits[0].cluster_centers_, fits[1].cluster_centers_)
    np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)


def test_history_has_one_entry_per_outer_step_with_the_decaying_step(blobs):
    km = presets.sbe(6, batch_size=40, random_state=0).set_params(
        schedule__outer_iter=25, schedule__inner_iter=4, schedule__decay=0.9).fit(blobs)
    steps = np.array([h["step_size"] for h in km.history_])
    assert len(km.history_) == km.n_iter_ == 25 and km.converged_
    np.testing.assert_allclose(steps, 6 * 0.9 ** np.arange(25))
    assert [h["outer_step"] for h in km.history_] == list(range(1, 26))
    assert not any(h["diverged"] for h in km.history_)
    assert all(h["batch_size"] == 40 for h in km.history_)
    # 4 inner batches of 40 rows, 6 distances each, per outer step, then the final labels
    assert km.cost_["estep"] == 25 * 4 * 40 * 6


def test_the_divergence_guard_halves_the_step_and_the_fit_ends_finite(blobs):
    km = presets.sbe(6, batch_size=100, random_state=0).set_params(
        schedule__step=1e9, schedule__outer_iter=10).fit(blobs)
    diverged = [h for h in km.history_ if h["diverged"]]
    assert diverged and len(km.history_) == 10 + len(diverged)
    steps = [h["step_size"] for h in km.history_]
    assert steps[1] == steps[0] / 2  # the first outer step is retried with half the step
    assert np.all(np.isfinite(km.cluster_centers_))
    assert quantization_error(blobs, km.cluster_centers_) < 2 * Clusterer(6, random_state=0).fit(
        blobs).inertia_


def test_an_exact_bounded_estep_gives_the_same_fit(blobs):
    runs = [Clusterer(6, estep=estep, schedule=SBEDecay(batch_size=80, outer_iter=15),
                      random_state=0).fit(blobs) for estep in ("full", ElkanEStep())]
    np.testing.assert_allclose(runs[0].cluster_centers_, runs[1].cluster_centers_, rtol=1e-9)


def test_sbe_leaves_lloyds_bad_minimum_on_iris():
    """From starts where Lloyd's fixed point is the bad ~0.48 (f = QE / 2N), SBE reaches the
    global ~0.263 (Yin et al. 2018, Iris experiment)."""
    X = load_iris().data
    rng = np.random.RandomState(0)
    bad = []
    while len(bad) < 3:
        init = X[rng.choice(len(X), 3, replace=False)]
        lloyd = presets.lloyd(3, seed=init, tol=0).fit(X)
        if lloyd.inertia_ / (2 * len(X)) > 0.4:
            bad.append(init)
    for run, init in enumerate(bad):
        km = presets.sbe(3, batch_size=30, seed=init, random_state=run).fit(X)
        assert quantization_error(X, km.cluster_centers_) / (2 * len(X)) < 0.2629 * 1.01


@pytest.mark.parametrize("params,match", [
    (dict(batch_size=0), r"^SBEDecay: batch_size must be an integer >= 1; got 0\.$"),
    (dict(step=0.0), r"^SBEDecay: step must be a finite number > 0 or None; got 0\.0\.$"),
    (dict(step=-1), r"^SBEDecay: step must be a finite number > 0 or None; got -1\.$"),
    (dict(decay=0.0), r"^SBEDecay: decay must be a number in \(0, 1\]; got 0\.0\.$"),
    (dict(decay=1.5), r"^SBEDecay: decay must be a number in \(0, 1\]; got 1\.5\.$"),
    (dict(averaging=1.0), r"^SBEDecay: averaging must be a number in \[0, 1\); got 1\.0\.$"),
    (dict(averaging=-0.1),
     r"^SBEDecay: averaging must be a number in \[0, 1\); got -0\.1\.$"),
    (dict(inner_iter=0), r"^SBEDecay: inner_iter must be an integer >= 1; got 0\.$"),
    (dict(outer_iter=0), r"^SBEDecay: outer_iter must be an integer >= 1; got 0\.$"),
    (dict(polish_iter=-1), r"^SBEDecay: polish_iter must be an integer >= 0; got -1\.$"),
])
def test_bad_parameters(blobs, params, match):
    with pytest.raises(ValueError, match=match):
        Clusterer(3, schedule=SBEDecay(**params)).fit(blobs)


def test_soft_mstep_is_refused(blobs):
    with pytest.raises(ValueError, match="SoftMStep re-estimates the model from whole passes "
                                         "over the data only, but SBEDecay updates it"):
        Clusterer(3, mstep="soft", schedule="sbe").fit(blobs)


@pytest.mark.filterwarnings("ignore:The fit did not converge")
def test_polishing_ends_at_a_fixed_point_of_lloyds_algorithm(blobs):
    km = presets.sbe(6, batch_size=50, random_state=0).set_params(
        schedule__outer_iter=20, schedule__polish_iter=100).fit(blobs)
    polish = [h for h in km.history_ if h["step_size"] == np.inf]
    assert 2 <= len(polish) < 100 and km.converged_ and km.history_[-1]["n_changed"] == 0
    lloyd = Clusterer(6, seed=km.cluster_centers_, tol=0, max_iter=1).fit(blobs)
    np.testing.assert_array_equal(lloyd.labels_, km.labels_)
    np.testing.assert_allclose(lloyd.cluster_centers_, km.cluster_centers_, rtol=1e-12)


def test_sbe_on_a_coreset(blobs):
    from clusterkit import LWCS
    km = Clusterer(6, reduce=LWCS(300), schedule=SBEDecay(batch_size=50, outer_iter=30),
                   random_state=0).fit(blobs)
    assert km.history_[-1]["batch_size"] == 50 and km.n_iter_ == 30
    assert km.inertia_ < 1.2 * Clusterer(6, random_state=0).fit(blobs).inertia_
