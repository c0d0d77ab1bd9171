"""vc-GMM: LWCS + AFK-MC2 + partial E-step + weighted soft M-step (Hirschberger et al.)."""
import warnings

import numpy as np
import pytest

from clusterkit import (AFKMC2, FREE_ENERGY, LWCS, Clusterer, FitState, FullEStep, HardMStep,
                        KMeansPlusPlus, PartialEStep, SoftMStep, presets)
from clusterkit.datasets import make_birch_grid
from clusterkit.metrics import quantization_error
from clusterkit.presets import lwcs_lloyd, vc_gmm

from ._helpers import fixed_iterations


def _birch(n_side=6, dtype=np.float64, seed=0):
    X, _, _ = make_birch_grid(n_side=n_side, random_state=seed, dtype=dtype)
    return X


@pytest.mark.filterwarnings("ignore:AFKMC2 chose:RuntimeWarning")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("G, n_explore", [(3, 0), (5, 1)])
@fixed_iterations
def test_merged_free_energy_never_decreases(dtype, G, n_explore):
    X = _birch(n_side=8, dtype=dtype)  # C = 64, N = 6400
    slack = 1e-5 if dtype == np.float32 else 1e-10
    for seed in range(3):
        gmm = vc_gmm(64, G=G, n_explore=n_explore, coreset_size=2000, tol=0, max_iter=25,
                     random_state=seed).fit(X)
        f = np.array([h["objective"] for h in gmm.history_])
        assert len(f) == 25
        assert np.all(np.diff(f) >= -slack * np.abs(f[1:])), (seed, np.diff(f).min())
        assert f[-1] > f[0]


def test_objective_is_the_coreset_weighted_truncated_free_energy():
    """Eq. 10: F = sum_n gamma_n log sum_{c in K(n)} p(c, y_n), with the coreset weights."""
    X = _birch(n_side=6) - 10.0
    state = FitState(n_clusters=36, n_features=2,
                     random_state=np.random.RandomState(0), n_threads=1, needs_resp=True,
                     objective=FREE_ENERGY)
    Y, gamma = LWCS(800).reduce(X, np.ones(len(X)), state)
    assert not np.allclose(gamma, gamma[0])
    centres = AFKMC2(chain_length=2).seed(Y, gamma, 36, state)
    estep, mstep = PartialEStep(G=4, n_explore=1), SoftMStep()
    state.run.estep_state = estep.init_state(Y, gamma, centres, state)
    for _ in range(3):
        sigma2 = state.run.sigma2
        assignment = estep.assign(Y, gamma, centres, state)
        if sigma2 is None:  # eq. 12 from the first E-step's best distances
            best = ((Y - centres[assignment.labels]) ** 2).sum(1)
            sigma2 = gamma @ best / (2 * gamma.sum())
            assert state.run.sigma2 == pytest.approx(sigma2, rel=1e-10)
        K = assignment.winners
        d2 = ((Y[:, None, :] - centres[K]) ** 2).sum(-1)
        log_joint = -np.log(36) - np.log(2 * np.pi * sigma2) - d2 / (2 * sigma2)
        m = log_joint.max(1)
        F = gamma @ (m + np.log(np.exp(log_joint - m[:, None]).sum(1)))
        assert assignment.objective == pytest.approx(F, rel=1e-10)
        r = np.exp(log_joint - log_joint.max(1, keepdims=True))
        np.testing.assert_allclose(assignment.resp, r / r.sum(1, keepdims=True), rtol=1e-9,
                                   atol=1e-15)
        # eq. 9: coreset-weighted means and variance with the new means
        centres_new = mstep.update(Y, gamma, assignment, centres, state)
        u = (gamma[:, None] * assignment.resp)
        sums = np.zeros_like(centres)
        weights = np.zeros(36)
        np.add.at(sums, K.ravel(), (u[..., None] * Y[:, None, :]).reshape(-1, 2))
        np.add.at(weights, K.ravel(), u.ravel())
        has = weights > 0
        np.testing.assert_allclose(centres_new[has], sums[has] / weights[has, None],
                                   rtol=1e-9)
        sse = (u * ((Y[:, None, :] - centres_new[K]) ** 2).sum(-1)).sum()
        assert state.run.sigma2 == pytest.approx(sse / (2 * gamma.sum()), rel=1e-9)
        centres = centres_new


def test_vc_gmm_preset_configuration_and_keyword_pass_through():
    gmm = vc_gmm(100, random_state=3, n_threads=1, compute_labels=False, max_iter=7, tol=1e-3)
    assert gmm.n_clusters == 100
    assert gmm.reduce == LWCS()  # its size grows with n_clusters
    assert gmm.seed == presets._coreset_seed(chain_length=2)
    assert gmm.estep == PartialEStep(G=5, neighbourhoods="estimated", n_explore=1)
    assert gmm.mstep == SoftMStep()
    assert (gmm.random_state, gmm.n_threads, gmm.compute_labels, gmm.max_iter, gmm.tol) == (
        3, 1, False, 7, 1e-3)
    assert vc_gmm(10).tol == 1e-4  # the paper's stopping threshold (Suppl. F)
    custom = vc_gmm(10, G=3, coreset_size=4096, chain_length=20, n_explore=0, n_init_esteps=2,
                    init="random")
    assert custom.reduce == LWCS(4096) and custom.seed == presets._coreset_seed(20)
    # plain AFK-MC², used above 64 features
    assert custom.seed.high.high == AFKMC2(chain_length=20, n_candidates=1)
    assert custom.estep == PartialEStep(G=3, n_explore=0, n_init_esteps=2, init="random")
    assert vc_gmm(10, seed=KMeansPlusPlus()).seed == KMeansPlusPlus()


def test_lwcs_lloyd_preset_configuration():
    km = lwcs_lloyd(50, coreset_size=4096, random_state=0, verbose=0)
    assert km.reduce == LWCS(4096)
    assert km.seed == presets._coreset_seed()
    assert km.estep == FullEStep() and km.mstep == HardMStep()
    assert lwcs_lloyd(5).reduce == LWCS()
    assert lwcs_lloyd(5, seed=AFKMC2(chain_length=2)).seed == AFKMC2(chain_length=2)
    assert lwcs_lloyd(5).tol == 1e-3 and lwcs_lloyd(5, tol=1e-4).tol == 1e-4


def test_design_composition_runs_as_written():
    """Coreset var-k-means: a hard M-step on the vc-GMM composition, the default 8 clusters."""
    X = _birch(n_side=20)  # N = 40,000 > 2**15
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        km = Clusterer(seed=AFKMC2(), reduce=LWCS(2**15), estep=PartialEStep(G=5),
                       random_state=0).fit(X)
    assert km.cluster_centers_.shape == (8, 2)
    assert km.labels_.shape == (40_000,)
    assert km.cost_["reduction"] == 40_000 and km.cost_["labels"] == 8 * 40_000
    assert km.inertia_ == pytest.approx(quantization_error(X, km.cluster_centers_), rel=1e-10)
    f = [h["objective"] for h in km.history_]  # hard: the coreset QE, non-increasing
    assert np.all(np.diff(f) <= 1e-10 * f[0])


def test_vc_gmm_fit_refers_to_full_data_and_predicts_exactly():
    X = _birch(n_side=8)
    gmm = vc_gmm(64, G=3, coreset_size=1500, random_state=0).fit(X)
    assert gmm.labels_.shape == (6400,)
    assert gmm.cost_["labels"] == 6400 * 64
    assert gmm.inertia_ == pytest.approx(quantization_error(X, gmm.cluster_centers_), rel=1e-10)
    np.testing.assert_array_equal(gmm.predict(X), gmm.labels_)
    new = X[::7] + 0.3
    d2 = ((new[:, None, :] - gmm.cluster_centers_[None]) ** 2).sum(-1)
    np.testing.assert_array_equal(gmm.predict(new), d2.argmin(1))
    # distance work: N for the coreset, then per-iteration work on at most 1500 rows
    assert gmm.cost_["reduction"] == 6400
    assert gmm.cost_["estep"] <= gmm.n_iter_ * 1500 * (3 * 3 + 1)
    # greedy k-means++ on the (2-D) coreset: at most (L + 1) N' per step, L = 2 + ln 64
    assert gmm.cost_["seeding"] <= 1500 + 63 * 7 * 1500


def test_vc_gmm_error_below_kmeans_on_the_same_coreset():
    """The paper's trend (i): at equal coreset size and seeding, vc-GMM's error is lower."""
    X = _birch(n_side=10)  # N = 10,000, C = 100
    seed = AFKMC2(chain_length=2, n_candidates=1)  # the paper's
    vc = [vc_gmm(100, coreset_size=2500, random_state=s).fit(X).inertia_ for s in range(3)]
    km = [lwcs_lloyd(100, coreset_size=2500, seed=seed, random_state=s).fit(X).inertia_
          for s in range(3)]
    assert np.mean(vc) < np.mean(km), (vc, km)


def test_bad_coreset_sizes():
    X = _birch(n_side=4)
    with pytest.raises(ValueError, match=r"^LWCS size=10 must be >= n_clusters=16\.$"):
        vc_gmm(16, coreset_size=10).fit(X)
    with pytest.raises(ValueError, match=r"^presets.vc_gmm: coreset_size must be an integer "
                                         r">= 1 or None; got 0\.$"):
        vc_gmm(16, coreset_size=0).fit(X)
    with pytest.warns(RuntimeWarning, match=r"LWCS size=5000 >= n_samples=1600; clustering "
                                            r"the full data instead\."):
        gmm = vc_gmm(16, coreset_size=5000, random_state=0).fit(X)
    assert gmm.cost_["reduction"] == 0


def test_default_coreset_size_grows_with_the_clusters():
    from clusterkit.presets import default_coreset_size
    assert default_coreset_size(10) == default_coreset_size(1024) == 2**15
    assert default_coreset_size(4096) == 32 * 4096
    X = _birch(n_side=20)  # N = 40,000
    # C = 1500 asks for 48,000 draws: more than the data, so the fit clusters all of it
    km = lwcs_lloyd(1500, random_state=0, max_iter=2, compute_labels=False).fit(X)
    assert km.cost_["reduction"] == 0 and km.history_[0]["batch_size"] == len(X)
    km = lwcs_lloyd(400, random_state=0, max_iter=2, compute_labels=False).fit(X)
    assert km.cost_["reduction"] == len(X) and km.history_[0]["batch_size"] <= 2**15
