"""The Clusterer estimator: API, scikit-learn compatibility, paper guarantees, parity."""
import io
import pickle
import warnings
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.datasets import make_blobs
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import check_estimator
from threadpoolctl import threadpool_info

from clusterkit import (AFKMC2, LWCS, Clusterer, DataReducer, FullBatch, FullEStep, HardMStep,
                        KMeansPlusPlus, RandomSeeder, Seeder, SoftMStep)

from ._helpers import fixed_iterations


def _blobs(n=600, d=3, c=5, dtype=np.float64, seed=0):
    X, y = make_blobs(n, d, centers=c, random_state=seed)
    return X.astype(dtype), y


@pytest.mark.parametrize("mstep", ["hard", "soft"])
def test_check_estimator(mstep):
    # As for scikit-learn's KMeans, weighting is not equivalent to repeating rows *end to end*:
    # the seeding draws a different random sequence for a different number of rows. From equal
    # initial centres the fit is weight-equivalent (test_weight_two_equals_duplicating_rows).
    reason = "the random seeding depends on the number of rows, not only on the weights"
    expected = {"check_sample_weight_equivalence_on_dense_data": reason}
    if mstep == "hard":  # (the default k-means composition takes sparse data)
        expected["check_sample_weight_equivalence_on_sparse_data"] = reason
    check_estimator(Clusterer(mstep=mstep), expected_failed_checks=expected)


def test_fitted_attributes(dtype):
    X, _ = _blobs(dtype=dtype)
    km = Clusterer(5, random_state=0).fit(X)
    assert km.cluster_centers_.shape == (5, 3) and km.cluster_centers_.dtype == dtype
    assert km.labels_.dtype == np.int32 and km.labels_.shape == (600,)
    assert km.n_features_in_ == 3
    assert km.n_iter_ == len(km.history_) >= 1
    assert set(km.cost_) == {"seeding", "reduction", "estep", "labels"}
    assert km.n_distance_evals_ == sum(km.cost_.values())
    assert km.cost_["estep"] == km.n_iter_ * 600 * 5
    # a run that ends at a fixed point keeps its last labels (one distance per sample for the
    # inertia); otherwise the labels are one exact pass
    settled = km.history_[-1]["n_changed"] == 0
    assert km.cost_["labels"] == (600 if settled else 600 * 5)
    for entry in km.history_:
        assert {"objective", "distance_evals", "seconds", "qe", "batch_size", "weight",
                "n_changed", "max_center_shift", "passes"} <= set(entry)
        assert entry["batch_size"] == 600 and entry["passes"] == entry["iteration"]
    # a hard fit has no variance: only the strategy that owns one writes it
    assert "sigma2" not in km.history_[-1] and not hasattr(km, "sigma2_")
    d2 = ((X[:, None, :].astype(float) - km.cluster_centers_[None].astype(float)) ** 2).sum(-1)
    np.testing.assert_allclose(km.inertia_, d2.min(1).sum(), rtol=1e-5)
    assert km.transform(X).dtype == dtype
    np.testing.assert_allclose(km.transform(X), np.sqrt(d2), rtol=1e-3, atol=1e-3)
    np.testing.assert_array_equal(km.predict(X), km.labels_)
    assert km.score(X) == pytest.approx(-km.inertia_, rel=1e-5)


@pytest.mark.parametrize("mstep", ["hard", "soft"])
def test_float32_stays_float32(mstep):
    X, _ = _blobs(dtype=np.float32)
    model = Clusterer(4, mstep=mstep, random_state=0).fit(X)
    assert model.cluster_centers_.dtype == np.float32
    assert model.predict(X).dtype == np.int32


@pytest.mark.parametrize("seed", [KMeansPlusPlus(), AFKMC2(chain_length=20), RandomSeeder()])
@pytest.mark.parametrize("mstep", [HardMStep(), SoftMStep()])
def test_deterministic_for_fixed_random_state(seed, mstep):
    X, _ = _blobs()
    a = Clusterer(5, seed=seed, mstep=mstep, random_state=3).fit(X)
    b = Clusterer(5, seed=seed, mstep=mstep, random_state=3).fit(X)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    np.testing.assert_array_equal(a.labels_, b.labels_)


@pytest.mark.parametrize("mstep", ["hard", "soft"])
def test_same_result_for_one_and_two_threads(mstep, dtype):
    X, _ = _blobs(n=2000, d=10, c=12, dtype=dtype)
    a = Clusterer(12, mstep=mstep, random_state=0, n_threads=1).fit(X)
    b = Clusterer(12, mstep=mstep, random_state=0, n_threads=2).fit(X)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    assert a.history_[-1]["objective"] == b.history_[-1]["objective"]


def test_blas_is_single_threaded_during_the_fit_and_restored_after():
    # the kernels call gemm from inside prange: BLAS threads would oversubscribe the cores
    def blas_threads():
        return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]

    before = blas_threads()
    seen = []
    Clusterer(5, random_state=0, callback=lambda info: seen.append(blas_threads())).fit(
        _blobs()[0])
    assert seen and all(n == 1 for threads in seen for n in threads)
    assert blas_threads() == before


def test_kmeans_objective_never_increases(dtype):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4)).astype(dtype)  # no structure: many iterations
    km = Clusterer(40, seed="random", tol=0, max_iter=60, random_state=0).fit(X)
    qe = np.array([h["objective"] for h in km.history_])
    slack = (1e-5 if dtype == np.float32 else 1e-12) * qe[0]
    assert len(qe) > 5
    assert np.all(np.diff(qe) <= slack)


@pytest.mark.filterwarnings("ignore:Number of distinct clusters")  # duplicates on purpose
def test_kmeans_stops_at_rounding_level_with_more_clusters_than_points(dtype):
    # 59 distinct points, weighted duplicates, 64 clusters: the error falls to rounding noise,
    # whose changes can cycle between two values; the fit must stop there, not at max_iter
    rng = np.random.default_rng(3)
    points = rng.uniform(0, 45, size=(59, 2))
    X = np.repeat(points, 2, axis=0).astype(dtype)
    w = rng.uniform(0.5, 2.0, size=len(X))
    for seed in range(3):
        with pytest.warns(RuntimeWarning, match="duplicate"):
            km = Clusterer(64, seed=AFKMC2(chain_length=2), random_state=seed).fit(
                X, sample_weight=w)
        assert km.n_iter_ < 30
        assert km.inertia_ <= 1e-6 * float(np.sum(w[:, None] * (X - X.mean(0)) ** 2))


def test_kmeans_free_energy_stopping_rule():
    X, _ = _blobs(n=5000, d=8, c=30)
    tol, C, D = 1e-4, 60, 8
    paper = Clusterer(C, seed="random", tol=tol, random_state=0,
                      schedule=FullBatch(kmeans_objective="free_energy")).fit(X)
    F = np.array([-(np.log(C) + 0.5 * D * np.log(2 * np.pi * np.e * h["qe"] / (D * h["weight"])))
                  for h in paper.history_])
    rel = np.abs(np.diff(F)) / np.abs(F[1:])
    # it stops at the first iteration whose free energy changed by at most tol
    assert rel[-1] <= tol and np.all(rel[:-1] > tol)
    # |F| per unit weight exceeds D/2 here, so F changes relatively less than the QE does:
    # the paper's rule stops no later than the default one
    default = Clusterer(C, seed="random", tol=tol, random_state=0).fit(X)
    assert np.all(np.abs(F) > D / 2)
    assert paper.n_iter_ <= default.n_iter_
    # soft fits compare their own free energy either way
    a = Clusterer(5, mstep="soft", random_state=0,
                  schedule=FullBatch(kmeans_objective="free_energy")).fit(X[:500])
    b = Clusterer(5, mstep="soft", random_state=0).fit(X[:500])
    assert a.n_iter_ == b.n_iter_
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    with pytest.raises(ValueError, match="kmeans_objective"):
        Clusterer(3, schedule=FullBatch(kmeans_objective="loglik")).fit(X[:100])


@fixed_iterations
def test_soft_em_log_likelihood_never_decreases(dtype):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(2000, 3)).astype(dtype)
    gmm = Clusterer(15, mstep="soft", tol=0, max_iter=40, random_state=0).fit(X)
    ll = np.array([h["objective"] for h in gmm.history_])
    slack = (1e-5 if dtype == np.float32 else 1e-10) * abs(ll[0])
    assert len(ll) > 5
    assert np.all(np.diff(ll) >= -slack)


@fixed_iterations
def test_soft_objective_is_the_log_likelihood():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(500, 2))
    snapshots = []
    Clusterer(4, mstep="soft", max_iter=3, tol=0, random_state=0,
              callback=lambda info: snapshots.append((info["centers"], info["sigma2"]))).fit(X)
    gmm = Clusterer(4, mstep="soft", max_iter=4, tol=0, random_state=0).fit(X)
    centers, sigma2 = snapshots[-1]  # parameters the 4th E-step evaluates
    d2 = ((X[:, None, :] - centers[None]) ** 2).sum(-1)
    log_p = -np.log(4) - np.log(2 * np.pi * sigma2) - d2 / (2 * sigma2)
    m = log_p.max(1, keepdims=True)
    ll = float((np.log(np.exp(log_p - m).sum(1)) + m[:, 0]).sum())
    assert gmm.history_[3]["objective"] == pytest.approx(ll, rel=1e-10)


@fixed_iterations
def test_weight_two_equals_duplicating_rows():
    X, _ = _blobs(n=300)
    w = np.ones(300)
    w[:50] = 2
    X_dup = np.vstack([X, X[:50]])
    init = X[[0, 100, 150, 200, 250]]
    for mstep in ("hard", "soft"):
        a = Clusterer(5, seed=init, mstep=mstep, tol=0, max_iter=15).fit(X, sample_weight=w)
        b = Clusterer(5, seed=init, mstep=mstep, tol=0, max_iter=15).fit(X_dup)
        np.testing.assert_allclose(a.cluster_centers_, b.cluster_centers_, rtol=1e-10)
        assert a.inertia_ == pytest.approx(b.inertia_, rel=1e-10)


def test_pickle_round_trip():
    X, _ = _blobs()
    km = Clusterer(5, seed=AFKMC2(chain_length=10), random_state=0).fit(X)
    km2 = pickle.loads(pickle.dumps(km))
    np.testing.assert_array_equal(km2.predict(X), km.predict(X))
    np.testing.assert_array_equal(km2.cluster_centers_, km.cluster_centers_)


def test_transform_output_names_and_pandas_output():
    X, _ = make_blobs(200, n_features=3, centers=4, random_state=0)
    X = pd.DataFrame(X, columns=list("abc"))
    km = Clusterer(4, random_state=0).fit(X)
    names = km.get_feature_names_out()
    assert names.tolist() == [f"clusterer{c}" for c in range(4)]
    frame = km.set_output(transform="pandas").transform(X)
    assert frame.columns.tolist() == names.tolist()
    np.testing.assert_allclose(frame.to_numpy(), km.set_output(transform="default").transform(X))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gmm_posteriors_and_log_likelihood(dtype):
    from scipy.special import logsumexp
    from scipy.stats import multivariate_normal

    X, _ = _blobs(n=601, c=6, dtype=dtype)
    gmm = Clusterer(6, mstep="soft", random_state=0).fit(X)
    proba = gmm.predict_proba(X)
    assert proba.dtype == dtype and proba.shape == (601, 6)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(proba.argmax(axis=1), gmm.predict(X))
    X64, centers = X.astype(np.float64), gmm.cluster_centers_.astype(np.float64)
    log_joint = np.array([multivariate_normal(mu, gmm.sigma2_ * np.eye(3)).logpdf(X64)
                          for mu in centers]).T - np.log(6)
    log_likelihood = gmm.score_samples(X)
    np.testing.assert_allclose(log_likelihood, logsumexp(log_joint, axis=1), rtol=1e-5)
    np.testing.assert_allclose(proba, np.exp(log_joint - log_likelihood[:, None]), atol=1e-5)
    # EM: the final parameters are at least as likely as those of the last E-step
    assert log_likelihood.sum() >= gmm.objective_ - 1e-5 * abs(gmm.objective_)
    # k-means is not a mixture model, and the error says how to get one
    assert not hasattr(Clusterer(6).fit(X), "predict_proba")
    assert not hasattr(Clusterer(6), "score_samples")
    with pytest.raises(AttributeError, match="no attribute 'predict_proba'") as error:
        Clusterer(6).fit(X).predict_proba(X)
    assert "fit with mstep='soft'" in str(error.value.__cause__)  # shown in the traceback


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gmm_score_bic_aic_are_those_of_the_isotropic_mixture(dtype):
    from scipy.special import logsumexp

    X, _ = _blobs(n=501, c=5, dtype=dtype)
    gmm = Clusterer(5, mstep="soft", random_state=1).fit(X)
    X64, mu, s2 = X.astype(np.float64), gmm.cluster_centers_.astype(np.float64), gmm.sigma2_
    d2 = ((X64[:, None, :] - mu[None]) ** 2).sum(-1)
    log_p = logsumexp(-d2 / (2 * s2), axis=1) - np.log(5) - 1.5 * np.log(2 * np.pi * s2)
    w = np.random.default_rng(0).uniform(0.5, 2.0, len(X))
    rtol = 1e-5 if dtype == np.float32 else 1e-10
    assert gmm.score(X) == pytest.approx(log_p.mean(), rel=rtol)
    assert gmm.score(X, sample_weight=w) == pytest.approx(w @ log_p / w.sum(), rel=rtol)
    n_params = 5 * 3 + 1  # means and one shared variance; the weights are fixed
    assert gmm.bic(X) == pytest.approx(-2 * log_p.sum() + n_params * np.log(501), rel=rtol)
    assert gmm.aic(X) == pytest.approx(-2 * log_p.sum() + 2 * n_params, rel=rtol)
    # k-means keeps scikit-learn's KMeans.score and has no information criteria
    km = Clusterer(5, random_state=1).fit(X)
    assert km.score(X) == pytest.approx(-km.inertia_, rel=1e-5)
    assert not hasattr(km, "bic") and not hasattr(km, "aic")


@pytest.mark.parametrize("mstep", ["hard", "soft"])
def test_n_init_keeps_the_best_of_consecutive_runs(mstep):
    """n_init runs draw their seeds one after another from the random stream, so they are
    the fits of n_init=1 estimators sharing one RandomState; the best objective is kept."""
    X, _ = _blobs(n=500, c=12, seed=3)
    params = dict(seed="random", mstep=mstep, compute_labels=False)
    stream = np.random.RandomState(7)
    runs = [Clusterer(12, random_state=stream, **params).fit(X) for _ in range(5)]
    best = Clusterer(12, n_init=5, random_state=7, **params).fit(X)
    objectives = [run.objective_ for run in runs]
    kept = runs[int(np.argmax(objectives) if mstep == "soft" else np.argmin(objectives))]
    assert len(set(objectives)) > 1  # the runs differ, so the choice matters
    np.testing.assert_array_equal(best.cluster_centers_, kept.cluster_centers_)
    assert best.objective_ == kept.objective_ and best.n_iter_ == kept.n_iter_
    assert best.history_ == [dict(h, distance_evals=best.history_[i]["distance_evals"],
                                  seconds=best.history_[i]["seconds"])
                             for i, h in enumerate(kept.history_)]
    assert best.n_distance_evals_ == sum(run.n_distance_evals_ for run in runs)


def test_n_init_reduces_the_data_once():
    X, _ = _blobs(n=3000, c=8)
    one = Clusterer(8, reduce=LWCS(500), random_state=0).fit(X)
    three = Clusterer(8, reduce=LWCS(500), n_init=3, random_state=0).fit(X)
    assert three.cost_["reduction"] == one.cost_["reduction"] == 3000
    assert three.cost_["labels"] == one.cost_["labels"] == 3000 * 8  # one pass
    assert three.objective_ <= one.objective_  # the first run is n_init=1's


def test_verbose_and_callback():
    X, _ = _blobs()
    seen = []
    buf = io.StringIO()
    with redirect_stdout(buf):
        km = Clusterer(5, verbose=1, random_state=0, callback=seen.append).fit(X)
    lines = buf.getvalue().splitlines()
    assert sum(line.startswith("Iteration") for line in lines) == km.n_iter_
    assert lines[0].startswith("Memory: ") and "at the peak" in lines[0]  # (the estimate)
    assert lines[1].startswith("Seeding: 5 centres on 600 samples")
    assert lines[-2] == f"Labels: 600 samples, {km.cost_['labels']} distance evaluations, " + \
        f"{km.seconds_['labels']:.3g} s"
    assert lines[-1].startswith(f"Done: {km.n_iter_} iterations (converged), quantization "
                                f"error {km.objective_:.6g}, {km.n_distance_evals_} distance")
    assert [s["iteration"] for s in seen] == list(range(1, km.n_iter_ + 1))
    assert seen[0]["centers"].shape == (5, 3)
    stopped = Clusterer(5, tol=0, random_state=0, callback=lambda info: True).fit(X)
    assert stopped.n_iter_ == 1
    # with several runs the callback ends the fit, not only its run
    calls = []
    Clusterer(5, n_init=3, random_state=0, callback=lambda info: calls.append(1) or True).fit(X)
    assert len(calls) == 1
    buf = io.StringIO()
    with redirect_stdout(buf):
        km = Clusterer(5, n_init=2, verbose=1, reduce=LWCS(300), random_state=0).fit(X)
    lines = buf.getvalue().splitlines()
    assert lines[1].startswith("Reduction: 600 samples to ")  # (distinct draws: random)
    assert "weighted samples, 600 distance evaluations" in lines[1]
    assert lines[2] == "Run 1 of 2"
    # each run reports its own seeding, not a running total
    seeded = [int(line.split(", ")[1].split()[0]) for line in lines
              if line.startswith("Seeding")]
    assert len(seeded) == 2 and sum(seeded) == km.cost_["seeding"]
    # verbose=2 adds one detail line per iteration
    buf = io.StringIO()
    with redirect_stdout(buf):
        km = Clusterer(5, verbose=2, random_state=0).fit(X)
    lines = buf.getvalue().splitlines()
    detail = [line for line in lines if line.startswith("    qe=")]
    assert len(detail) == km.n_iter_ and "E-steps" in detail[-1] and "M-steps" in detail[-1]
    assert f"E-steps {km.cost_['estep']} distance evaluations" in detail[-1]
    assert set(km.seconds_) == {"reduction", "seeding", "estep", "mstep", "labels", "total"}
    assert sum(v for k, v in km.seconds_.items() if k != "total") <= km.seconds_["total"]
    # NumPy's True stops the fit as Python's does
    stopped = Clusterer(5, tol=0, random_state=0,
                        callback=lambda info: np.int64(info["iteration"]) >= 2).fit(X)
    assert stopped.n_iter_ == 2


@pytest.mark.parametrize("mstep", ["hard", "soft"])
def test_converged_and_the_warning_when_max_iter_ends_the_fit(mstep):
    X, _ = _blobs()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        done = Clusterer(5, mstep=mstep, random_state=0).fit(X)
    assert done.converged_ and done.n_iter_ < done.max_iter
    with pytest.warns(ConvergenceWarning, match="max_iter=2 iterations"):
        cut = Clusterer(5, mstep=mstep, seed="random", tol=0, max_iter=2, random_state=0).fit(X)
    assert not cut.converged_ and cut.n_iter_ == 2
    # the kept run decides: the best of several runs that all reach max_iter warns once
    with pytest.warns(ConvergenceWarning) as record:
        Clusterer(5, mstep=mstep, seed="random", tol=0, max_iter=2, n_init=3,
                  random_state=0).fit(X)
    assert len(record) == 1
    # a fit the callback stops did what the user asked: no warning, but not converged
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stopped = Clusterer(5, mstep=mstep, random_state=0, callback=lambda info: True).fit(X)
    assert not stopped.converged_


class _FirstRowsMissingOne(Seeder):
    def seed(self, X, sample_weight, n_clusters, state):
        return X[:n_clusters - 1].copy()


class _ListReducer(DataReducer):
    def reduce(self, X, sample_weight, state):
        return list(X[:100]), sample_weight[:100]


class _NoBatches(FullBatch):
    def batches(self, n_samples, state):
        return iter(())


@pytest.mark.parametrize("params,error,match", [
    ({"seed": _FirstRowsMissingOne()}, ValueError,
     r"^_FirstRowsMissingOne returned centres of shape \(4, 3\); expected \(5, 3\)\.$"),
    ({"reduce": _ListReducer()}, TypeError,
     r"^_ListReducer returned data as list; expected a numeric ndarray\.$"),
    ({"schedule": _NoBatches()}, ValueError,
     r"^_NoBatches\.batches yielded no batch: a fit needs at least one iteration\.$"),
])
def test_user_strategies_results_are_checked(params, error, match):
    X, _ = _blobs()
    with pytest.raises(error, match=match):
        Clusterer(5, random_state=0, **params).fit(X)


def test_given_centres_run_once_whatever_n_init():
    X, _ = _blobs()
    once = Clusterer(5, seed=X[:5]).fit(X)
    with pytest.warns(RuntimeWarning, match=r"^seed gives the initial centres: running once "
                                            r"instead of n_init=4 times\.$"):
        four = Clusterer(5, seed=X[:5], n_init=4).fit(X)
    assert four.cost_ == once.cost_
    np.testing.assert_array_equal(four.cluster_centers_, once.cluster_centers_)


def test_transform_is_accurate_far_from_the_origin():
    X, _ = _blobs(c=8)
    X = X + 1e7
    km = Clusterer(8, random_state=0).fit(X)
    distances = km.transform(X)
    assert (distances.min(axis=1) ** 2).sum() == pytest.approx(km.inertia_, rel=1e-9)
    np.testing.assert_array_equal(distances.argmin(axis=1), km.labels_)


@pytest.mark.filterwarnings("ignore:Number of distinct clusters")  # duplicates on purpose
def test_constant_data_gives_a_normal_variance_and_finite_probabilities():
    gmm = Clusterer(3, mstep="soft", random_state=0).fit(np.ones((20, 2)))
    assert gmm.sigma2_ >= np.finfo(np.float64).tiny
    np.testing.assert_allclose(gmm.predict_proba([[1.0, 2.0], [1e3, -1e3]]), 1 / 3)
    assert np.all(np.isfinite(gmm.score_samples([[1.0, 2.0]])))
    one = Clusterer(1, mstep="soft").fit(np.ones((1, 2)))
    np.testing.assert_array_equal(one.predict_proba([[5.0, 5.0]]), [[1.0]])


def test_compute_labels_false_skips_the_labels_pass():
    X, _ = _blobs()
    km = Clusterer(5, compute_labels=False, random_state=0).fit(X)
    assert not hasattr(km, "labels_") and km.cost_["labels"] == 0
    np.testing.assert_array_equal(km.fit_predict(X), km.predict(X))


@fixed_iterations
def test_empty_cluster_is_relocated_never_nan():
    X = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.1, 5.0], [20.0, 0.0]])
    init = np.array([[0.0, 0.0], [5.0, 5.0], [100.0, 100.0]])  # the third centre wins nothing
    km = Clusterer(3, seed=init, max_iter=1).fit(X)
    assert np.isfinite(km.cluster_centers_).all()
    np.testing.assert_array_equal(km.cluster_centers_[2], [20.0, 0.0])  # the farthest sample
    gmm = Clusterer(3, seed=init, mstep="soft", max_iter=3).fit(X)
    assert np.isfinite(gmm.cluster_centers_).all()


@fixed_iterations
def test_given_centres_are_used_as_is():
    X, _ = _blobs()
    init = X[:5]
    km = Clusterer(5, seed=init, max_iter=1, tol=0).fit(X)
    manual = KMeans(5, init=init, n_init=1, max_iter=1, algorithm="lloyd").fit(X)
    np.testing.assert_allclose(km.cluster_centers_, manual.cluster_centers_, rtol=1e-10)
    assert km.cost_["seeding"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-6), (np.float32, 1e-4)])
@fixed_iterations
def test_lloyd_parity_with_scikit_learn(dtype, rtol):
    # The foundation's acceptance test: 20 Lloyd iterations from identical centres.
    X, _ = make_blobs(200_000, 64, centers=256, cluster_std=2.0, random_state=0)
    X = X.astype(dtype)
    init, _ = kmeans_plusplus(X, 256, random_state=0)
    ours = Clusterer(256, seed=init, estep=FullEStep(), mstep=HardMStep(), max_iter=20,
                     tol=0).fit(X)
    theirs = KMeans(256, init=init, n_init=1, max_iter=20, tol=0, algorithm="lloyd").fit(X)
    assert ours.n_iter_ == theirs.n_iter_ == 20
    assert abs(ours.inertia_ - theirs.inertia_) <= rtol * theirs.inertia_
    assert np.mean(ours.labels_ == theirs.labels_) >= 0.9999


def test_every_string_shortcut_is_its_strategy_with_default_parameters():
    from clusterkit._estimator.registry import SHORTCUTS
    X, _ = _blobs(n=300, c=4)
    composing = (Path(__file__).resolve().parent.parent / "docs" / "composing.rst").read_text()
    for param, (_, _, table) in SHORTCUTS.items():
        for name, cls in table.items():
            km = Clusterer(4, random_state=0, **{param: name})
            resolved = km._strategies(X, X.mean(axis=0))._asdict()[param]
            assert resolved == cls(), (param, name)
            assert f'``{param}="{name}"``' in composing, f"{param}={name!r} is not documented"
            km.fit(X)
            assert np.all(np.isfinite(km.cluster_centers_))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_strict_convergence_stops_like_scikit_learn(dtype):
    X, _ = make_blobs(3000, 4, centers=12, cluster_std=1.5, random_state=3)
    X = X.astype(dtype)
    init = X[np.random.RandomState(1).choice(len(X), 12, replace=False)]
    ours = Clusterer(12, seed=init, tol=0, max_iter=300).fit(X)
    theirs = KMeans(12, init=init, n_init=1, max_iter=300, tol=0, algorithm="lloyd").fit(X)
    # it stopped at the first step that changed no label, as scikit-learn does
    assert ours.history_[-1]["n_changed"] == 0 and ours.converged_
    assert all(h["n_changed"] > 0 for h in ours.history_[:-1])
    assert ours.n_iter_ == theirs.n_iter_ < 300
    np.testing.assert_array_equal(ours.labels_, theirs.labels_)
    # the objective rule may stop sooner, never later
    assert Clusterer(12, seed=init, tol=1e-4, max_iter=300).fit(X).n_iter_ <= ours.n_iter_


def test_fewer_distinct_points_than_clusters_warns_like_scikit_learn():
    X = np.repeat(np.array([[0.0, 0.0], [5.0, 5.0], [9.0, 0.0]]), 10, axis=0)
    with pytest.warns(ConvergenceWarning, match=r"Number of distinct clusters \(3\) found "
                                                 r"smaller than n_clusters \(4\)"):
        Clusterer(4, random_state=0).fit(X)
